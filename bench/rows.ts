/** One result row of a benchmark suite, as `bench/run.ts` prints it and writes it to bench-results.json. */
import type { Task } from 'tinybench';

export interface BenchRow {
  readonly name: string;
  readonly medianMs: number;
  /** Megapixels per second (output pixels / median latency: this machine's speed drifts, the median resists it). */
  readonly mpxPerSec: number;
  readonly meanMs: number;
  readonly p99Ms: number;
  readonly samples: number;
  /** Mpx/s of the plain typed-array loop doing the same math, measured in the same run. */
  readonly reference?: number;
  /** mpxPerSec / reference (1 = as fast as the plain loop). */
  readonly ratio?: number;
}

interface Timing {
  readonly meanMs: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly samples: number;
}

function timing(task: Task | undefined): Timing | undefined {
  const r = task?.result;
  if (r === undefined || !('latency' in r)) return undefined;
  return { meanMs: r.latency.mean, medianMs: r.latency.p50, p99Ms: r.latency.p99, samples: r.latency.samplesCount };
}

/** Rows for `pairs` of (our task, its plain-loop reference), `pixels` output pixels per call. */
export function rowsOf(
  tasks: readonly Task[],
  pairs: readonly { readonly ours: string; readonly reference?: string; readonly pixels: number }[],
): BenchRow[] {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const rows: BenchRow[] = [];
  for (const p of pairs) {
    const task = byName.get(p.ours);
    const t = timing(task);
    if (t === undefined) {
      const r = task?.result;
      throw new Error(`benchmark ${p.ours} did not complete${r && r.state === 'errored' ? `: ${r.error.message}` : ''}`);
    }
    const mpxPerSec = p.pixels / 1e6 / (t.medianMs / 1000);
    const ref = p.reference === undefined ? undefined : timing(byName.get(p.reference));
    const reference = ref === undefined ? undefined : p.pixels / 1e6 / (ref.medianMs / 1000);
    rows.push({ name: p.ours, mpxPerSec, ...t, ...(reference === undefined ? {} : { reference, ratio: mpxPerSec / reference }) });
  }
  return rows;
}

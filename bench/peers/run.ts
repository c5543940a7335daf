/**
 * rasterflow's kernels beside their native peers, in one session on the same inputs:
 *   npm run bench:peers [-- [--only family[,family]] [--runs N] [size] [repeats]]
 * (defaults: every family, 1 run, 4096, 5). Each family is a `bench/peers/<family>.peers.ts` module
 * (common.ts says what it exports): rasterflow's TypeScript and WebAssembly paths and the peers
 * (GDAL, NumPy, SciPy, OpenCV through /usr/bin/python3) one thread each, median of `repeats` timed
 * runs, the sides of each ratio taking turns in the same seconds (common.ts, `alternating`; the
 * whole-process rows alternate the processes). A peer that is missing is skipped with a message. With `--runs N` the whole
 * set runs N times and every figure is printed as its min-max range over the runs.
 */
import { readdirSync } from 'node:fs';
import { wasmStatus } from '../../src/wasm/module.js';
import type { PeerFamily, PeerRow } from './common.js';

function parseArgs(argv: readonly string[]): { only?: Set<string>; runs: number; size: number; repeats: number } {
  let only: Set<string> | undefined;
  let runs = 1;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--only') only = new Set((argv[++i] ?? '').split(','));
    else if (a === '--runs') runs = Math.max(1, Number(argv[++i] ?? 1));
    else rest.push(a);
  }
  return { only, runs, size: Number(rest[0] ?? 4096), repeats: Number(rest[1] ?? 5) };
}

const fmt = (v: number, d: number): string => v.toFixed(d);
/** One figure, or its range over the runs. */
function range(values: readonly (number | undefined)[], d: number): string {
  const v = values.filter((x): x is number => x !== undefined && Number.isFinite(x));
  if (v.length === 0) return '';
  const lo = Math.min(...v);
  const hi = Math.max(...v);
  return fmt(lo, d) === fmt(hi, d) ? fmt(lo, d) : `${fmt(lo, d)}-${fmt(hi, d)}`;
}

function table(runs: readonly PeerRow[][]): Record<string, string>[] {
  return runs[0]!.map((first, i) => {
    const same = runs.map((r) => r[i]!);
    const unit = first.unit ?? 'Mpx/s';
    const out: Record<string, string> = { op: first.op };
    for (const engine of Object.keys(first.measures))
      out[`${engine} ${unit}`] = range(
        same.map((r) => r.measures[engine]),
        1,
      );
    for (const [a, b] of first.ratios) {
      out[`${a}/${b}`] = range(
        same.map((r) => {
          const x = r.measures[a];
          const y = r.measures[b];
          return x !== undefined && y !== undefined ? x / y : undefined;
        }),
        2,
      );
    }
    return out;
  });
}

async function main(): Promise<void> {
  const { only, runs, size, repeats } = parseArgs(process.argv.slice(2));
  const files = readdirSync(import.meta.dirname)
    .filter((f) => f.endsWith('.peers.ts'))
    .sort();
  const families: PeerFamily[] = [];
  for (const f of files) {
    const { family } = (await import(`./${f}`)) as { family: PeerFamily };
    if (only === undefined || only.has(family.name)) families.push(family);
  }
  const wasm = wasmStatus();
  if (!wasm.enabled) console.log(`no wasm figures: ${wasm.detail}`);
  const said = new Set<string>();
  const say = (line: string): void => {
    if (!said.has(line)) console.log(line);
    said.add(line);
  };
  for (const family of families) {
    const results: PeerRow[][] = [];
    for (let r = 0; r < runs; r++) results.push(await family.run(size, repeats, say));
    console.log(
      `${family.name}, ${size}x${size}, one thread, median of ${repeats}${runs > 1 ? `, range over ${runs} runs` : ''}; node ${process.version}`,
    );
    console.table(table(results));
  }
}

await main();

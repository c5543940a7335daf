/**
 * What every family of `npm run bench:peers` shares: a family module (`bench/peers/<family>.peers.ts`,
 * found by run.ts) exports `family: PeerFamily`; its `run` measures each operation for rasterflow's
 * paths and the native peers on the same input in this session and answers one `PeerRow` per
 * operation. run.ts prints them, with min-max ranges when the whole run is repeated (`--runs N`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const PYTHON = '/usr/bin/python3';

export interface PeerRow {
  readonly op: string;
  /** Throughput per engine (e.g. `TS`, `wasm`, `gdaldem`, `SciPy`, `OpenCV`), in `unit`; undefined: not measured. */
  readonly measures: Readonly<Record<string, number | undefined>>;
  /** Ratios to print: [engine, peer] gives `engine/peer`. */
  readonly ratios: readonly (readonly [string, string])[];
  /** What the measures count (default `Mpx/s`). */
  readonly unit?: string;
}

export interface PeerFamily {
  readonly name: string;
  /** Measure at `size` (pixels per side; families with a fixed input may ignore it), `repeats` timed runs after a warm-up. */
  run(size: number, repeats: number, say: (line: string) => void): Promise<PeerRow[]>;
}

/** A peer's line from a Python script: one JSON object per line. */
export interface PeerLine {
  readonly peer: string;
  readonly op?: string;
  readonly mpxPerSec?: number;
  readonly skipped?: string;
}

/** Median wall time of `task` (ms) over `repeats` runs after one warm-up run. */
export function medianMs(task: () => void, repeats: number): number {
  task();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    task();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

/** Async `medianMs`. */
export async function medianMsAsync(task: () => Promise<unknown>, repeats: number): Promise<number> {
  await task();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    await task();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

/**
 * Run a peer script with /usr/bin/python3 and parse its lines; a missing interpreter or a failed
 * script becomes one `skipped` line (the family's rows then lack that peer and say why).
 */
export function runPython(script: string, args: readonly string[], ops?: readonly string[]): PeerLine[] {
  if (!existsSync(PYTHON)) return [{ peer: 'python', skipped: `${PYTHON} not found: no native peers` }];
  const env = ops === undefined ? process.env : { ...process.env, RASTERFLOW_PEER_OPS: JSON.stringify(ops) };
  const r = spawnSync(PYTHON, [script, ...args], { encoding: 'utf8', maxBuffer: 1 << 24, timeout: 30 * 60_000, env });
  if (r.status !== 0) return [{ peer: 'python', skipped: `the peer script failed: ${(r.stderr || String(r.error)).trim().slice(-500)}` }];
  return r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as PeerLine);
}

/** The throughput a peer reported for `op`, if it did. */
export const peerValue = (lines: readonly PeerLine[], peer: string, op: string): number | undefined =>
  lines.find((l) => l.peer === peer && l.op === op)?.mpxPerSec;

/** Say each skipped peer once. */
export function saySkipped(lines: readonly PeerLine[], say: (line: string) => void): void {
  const said = new Set<string>();
  for (const l of lines) {
    const line = `skipped ${l.peer}: ${l.skipped}`;
    if (l.skipped !== undefined && !said.has(line)) say(line);
    said.add(line);
  }
}

/**
 * A family's peer script run once per op (RASTERFLOW_PEER_OPS, peers_common.py), just before the
 * family times rasterflow on that op: both sides of each ratio are timed back to back, seconds
 * apart, so a load that drifts over the minutes of a run (this machine's other tenant) weighs on
 * both alike, where one run of the script for every op timed the peers and rasterflow minutes apart.
 */
export class PeersPerOp {
  private readonly all: PeerLine[] = [];
  constructor(
    private readonly script: string,
    private readonly args: readonly string[],
  ) {}

  /** The peers' lines for `op` (the script run now for it alone). */
  lines(op: string): PeerLine[] {
    const lines = runPython(this.script, this.args, [op]);
    this.all.push(...lines);
    return lines;
  }

  /** Say each peer skipped in any of the runs, once. */
  saySkipped(say: (line: string) => void): void {
    saySkipped(this.all, say);
  }
}

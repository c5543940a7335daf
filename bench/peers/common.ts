/**
 * What every family of `npm run bench:peers` shares: a family module (`bench/peers/<family>.peers.ts`,
 * found by run.ts) exports `family: PeerFamily`; its `run` measures each operation for rasterflow's
 * paths and the native peers on the same input in this session and answers one `PeerRow` per
 * operation. run.ts prints them, with min-max ranges when the whole run is repeated (`--runs N`).
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

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

/** One side of a ratio: does the work once and answers its time in ms. */
export type Timer = () => number | Promise<number>;

/** A Timer over planes placed in wasm memory, and what gives them back. */
export interface PlacedTimer {
  readonly run: Timer;
  readonly dispose: () => void;
}

/** `task` as a Timer of its wall time. */
export const wallMs =
  (task: () => void): Timer =>
  () => {
    const t = performance.now();
    task();
    return performance.now() - t;
  };

/**
 * Median time (ms) of each timer over `repeats` rounds. A round runs every timer twice and times
 * the second run (the first round's untimed runs are the warm-up), starting one further along the
 * list each round (no side always follows the same other): all sides of a ratio are timed in the
 * same seconds, so a load that comes and goes on the machine weighs on them alike, and each timed
 * run follows a run of the same work, as in a loop of it. (Timed straight after another side's run, gdaldem's Hillshade
 * read 94 Mpx/s where it reads 120-150 in a loop, and the wasm kernels lost 10-30% too.)
 * Undefined timers are left out (and answer undefined).
 *
 * The families time rasterflow's TypeScript path (the reference; no target) on its own, after the
 * others: some of its kernels take scratch planes of the whole raster (hundreds of MB at 4096^2),
 * and the collection of that garbage lands in the next timer's run. Alternated with it, the
 * resident a+b read 1,600-1,800 Mpx/s; alternated with anything else, or alone, 2,130-2,230.
 */
export async function alternating<K extends string>(
  timers: Readonly<Record<K, Timer | undefined>>,
  repeats: number,
): Promise<Record<K, number | undefined>> {
  const names = (Object.keys(timers) as K[]).filter((k) => timers[k] !== undefined);
  const times = new Map<K, number[]>(names.map((k) => [k, []]));
  for (let r = 0; r < repeats; r++)
    for (let i = 0; i < names.length; i++) {
      const k = names[(r + i) % names.length]!;
      await timers[k]!(); // untimed: the timed run follows a run of its own, as in a loop of it
      times.get(k)!.push(await timers[k]!());
    }
  const out = {} as Record<K, number | undefined>;
  for (const k of Object.keys(timers) as K[]) {
    const ts = times.get(k)?.sort((a, b) => a - b);
    out[k] = ts === undefined ? undefined : ts[ts.length >> 1];
  }
  return out;
}

/** Mpx/s of each median time (ms) for `px` megapixels. */
export function rates<K extends string>(px: number, ms: Readonly<Record<K, number | undefined>>): Record<K, number | undefined> {
  const out = {} as Record<K, number | undefined>;
  for (const k of Object.keys(ms) as K[]) out[k] = ms[k] === undefined ? undefined : px / (ms[k]! / 1000);
  return out;
}

/**
 * Run a peer script with /usr/bin/python3 and parse its lines; a missing interpreter or a failed
 * script becomes one `skipped` line (the family's rows then lack that peer and say why).
 */
export function runPython(script: string, args: readonly string[]): PeerLine[] {
  if (!existsSync(PYTHON)) return [{ peer: 'python', skipped: `${PYTHON} not found: no native peers` }];
  const r = spawnSync(PYTHON, [script, ...args], { encoding: 'utf8', maxBuffer: 1 << 24, timeout: 30 * 60_000 });
  if (r.status !== 0) return [{ peer: 'python', skipped: `the peer script failed: ${(r.stderr || String(r.error)).trim().slice(-500)}` }];
  return r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as PeerLine);
}

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
 * A family's peer script (bench/peers/*_peers.py), running for the whole family: it registers its
 * peers' operations and then runs one when asked (peers_common.py), so its runs can take turns with
 * rasterflow's in `alternating`. A missing interpreter or a script that fails to start becomes a
 * `skipped` line, and that family's rows lack the peers.
 */
export class PeerServer {
  private readonly pending: { resolve: (line: string) => void; reject: (e: Error) => void }[] = [];
  private readonly ready: Set<string>;

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams | undefined,
    ready: readonly (readonly [string, string])[],
    private readonly lines: PeerLine[],
  ) {
    this.ready = new Set(ready.map(([peer, op]) => `${peer}\n${op}`));
  }

  static async start(script: string, args: readonly string[]): Promise<PeerServer> {
    if (!existsSync(PYTHON)) return new PeerServer(undefined, [], [{ peer: 'python', skipped: `${PYTHON} not found: no native peers` }]);
    const child = spawn(PYTHON, [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2000)));
    const out = createInterface({ input: child.stdout });
    const lines: PeerLine[] = [];
    let server: PeerServer | undefined;
    return new Promise<PeerServer>((resolve) => {
      const failed = (why: string): void => {
        const e = new Error(`the peer script ${script} ${why}: ${stderr.trim().slice(-500)}`);
        if (server === undefined) resolve(new PeerServer(undefined, [], [...lines, { peer: 'python', skipped: e.message }]));
        else for (const p of server.pending.splice(0)) p.reject(e);
      };
      child.on('error', (e) => failed(`could not start (${e.message})`));
      child.on('exit', (code) => failed(`stopped (exit ${code})`));
      out.on('line', (line) => {
        if (line.trim() === '') return;
        if (server !== undefined) {
          server.pending.shift()?.resolve(line);
          return;
        }
        const msg = JSON.parse(line) as PeerLine & { ready?: [string, string][] };
        if (msg.ready === undefined) lines.push(msg);
        else resolve((server = new PeerServer(child, msg.ready, lines)));
      });
    });
  }

  /** A Timer of one run of `peer`'s `op` (the time the script measured, without the request's); undefined when it has none. */
  timer(peer: string, op: string): Timer | undefined {
    const child = this.child;
    if (child === undefined || !this.ready.has(`${peer}\n${op}`)) return undefined;
    return async () => {
      const line = await new Promise<string>((resolve, reject) => {
        this.pending.push({ resolve, reject });
        child.stdin.write(`${JSON.stringify({ peer, op })}\n`);
      });
      const answer = JSON.parse(line) as { ms?: number; error?: string };
      if (answer.ms === undefined) throw new Error(`${peer} ${op}: ${answer.error ?? line}`);
      return answer.ms;
    };
  }

  /** Say each peer the script skipped, once. */
  saySkipped(say: (line: string) => void): void {
    saySkipped(this.lines, say);
  }

  /** Stop the script (it ends when its input closes). */
  close(): void {
    this.child?.removeAllListeners('exit');
    this.child?.stdin.end();
  }
}

/**
 * The whole process, as a user runs it: `rasterflow render` of Hillshade (the built CLI,
 * `node dist/cli/rasterflow.js`, as `npm run build` makes it) on the 4096 x 4096 DEFLATE-tiled F32
 * DEM (bench/make-big-dem.sh) to a DEFLATE-tiled GeoTIFF, beside `gdaldem hillshade -co TILED=YES
 * -co COMPRESS=DEFLATE` (GDAL_NUM_THREADS=1) on the same input: wall time of each process,
 * alternating, median of `repeats` after a warm-up pair; Mpx/s = 16.8 Mpx / wall time.
 *
 * Rows: the machine as it is (rasterflow's codec threads may use the second core); the same
 * without NODE_EXTRA_CA_CERTS when the environment sets it (Node then parses that certificate file
 * at every start, tens of milliseconds before any rasterflow code runs); and one core (both
 * processes pinned to CPU 0 with taskset, rasterflow with RASTERFLOW_CODEC_THREADS=0).
 * The machine is shared: the CPU time (user + system, every thread) of both is said too.
 *
 * Then where rasterflow's time goes: one run with --cpu-prof, everything on the main thread
 * (RASTERFLOW_CODEC_THREADS=0, so the profile sees every inflate and deflate), its samples put in
 * categories by the source file of the nearest bundled frame (esbuild marks each module with a
 * `// src/...` line) or by the zlib call above them: startup (module loading), read, inflate,
 * kernel, encode (tiling, predictor), statistics, deflate, write, engine (blocks, evaluation), GC.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { PeerFamily, PeerRow } from './common.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = resolve(ROOT, 'dist/cli/rasterflow.js');
const DATA = resolve(ROOT, 'bench/data');
const DEM = resolve(DATA, 'dem4096-deflate.tif');
const PX = (4096 * 4096) / 1e6;
const RULE = '{"rasterFunction":"Hillshade"}';

interface Timed {
  readonly ms: number;
  readonly cpuMs: number;
}

/** Wall and CPU time of one process (through /usr/bin/time), pinned to CPU 0 when `oneCore`. */
function timed(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, oneCore: boolean): Timed {
  const argv = oneCore ? ['taskset', '-c', '0', cmd, ...args] : [cmd, ...args];
  const t = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S', ...argv], { encoding: 'utf8', env });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.stderr.slice(-500)}`);
  const [user, sys] = r.stderr.trim().split('\n').at(-1)!.split(' ').map(Number) as [number, number];
  return { ms, cpuMs: (user + sys) * 1000 };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const rfArgs = (out: string): string[] => [
  CLI,
  'render',
  '--rule',
  RULE,
  '--input',
  DEM,
  '--output',
  out,
  '--co',
  'TILED=YES',
  '--co',
  'COMPRESS=DEFLATE',
];
const gdalArgs = (out: string): string[] => ['hillshade', '-q', '-co', 'TILED=YES', '-co', 'COMPRESS=DEFLATE', DEM, out];

/** This environment without NODE_EXTRA_CA_CERTS (see nodeStart). */
function withoutExtraCerts(): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _extra, ...without } = process.env;
  return without;
}

/**
 * Alternating runs of both processes; medians. `bareNode`: both run without NODE_EXTRA_CA_CERTS
 * (a certificate file Node parses at every start, before any rasterflow code; GDAL ignores it).
 */
function race(dir: string, repeats: number, oneCore: boolean, bareNode = false): { rf: Timed; gdal: Timed } {
  const base = bareNode ? withoutExtraCerts() : process.env;
  const rfEnv = oneCore ? { ...base, RASTERFLOW_CODEC_THREADS: '0' } : base;
  const gdalEnv = { ...base, GDAL_NUM_THREADS: '1', GDAL_PAM_ENABLED: 'NO' };
  const rf: Timed[] = [];
  const gdal: Timed[] = [];
  for (let i = 0; i <= repeats; i++) {
    const a = timed(process.execPath, rfArgs(join(dir, 'rf.tif')), rfEnv, oneCore);
    const g = timed('gdaldem', gdalArgs(join(dir, 'gdal.tif')), gdalEnv, oneCore);
    if (i === 0) continue; // warm-up pair (page cache, first compilation)
    rf.push(a);
    gdal.push(g);
  }
  const med = (ts: Timed[]): Timed => ({ ms: median(ts.map((t) => t.ms)), cpuMs: median(ts.map((t) => t.cpuMs)) });
  return { rf: med(rf), gdal: med(gdal) };
}

// ---- The breakdown from a CPU profile

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Category of a source file of the bundle. */
function categoryOfSource(src: string): string {
  if (/^src\/(functions|wasm)\//.test(src)) return 'kernel';
  if (/^src\/io\/(geotiff-source|tiff-reader|decoders|tile-cache|source|tiff-predictors-decode)/.test(src)) return 'read/decode';
  if (/^src\/io\/(tiff-stream-writer|tiff-predictors|tiff-ifd|tiff-options)/.test(src)) return 'encode (tiling, predictor)';
  if (src === 'src/io/pixel-statistics.ts') return 'statistics';
  if (src === 'src/io/codec-pool.ts') return 'codec dispatch';
  if (/^src\/cli\//.test(src)) return 'cli';
  return 'engine (blocks, evaluation)';
}

/** Source file of each line of a bundle chunk (esbuild's `// src/...` module markers). */
function sourceMap(url: string, cache: Map<string, string[]>): string[] {
  let lines = cache.get(url);
  if (lines) return lines;
  lines = [];
  try {
    const text = readFileSync(new URL(url), 'utf8').split('\n');
    let current = '';
    for (const l of text) {
      const m = /^\/\/ (src\/\S+\.ts)$/.exec(l);
      if (m) current = m[1]!;
      lines.push(current);
    }
  } catch {
    // not a file: no sources
  }
  cache.set(url, lines);
  return lines;
}

/** Milliseconds of the profile per category. */
export function breakdown(profile: Profile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sources = new Map<string, string[]>();
  const memo = new Map<number, string>();
  const classify = (leaf: number): string => {
    const n = byId.get(leaf)!;
    const name = n.callFrame.functionName;
    if (name === '(garbage collector)') return 'GC';
    if (name === '(idle)') return 'idle (waiting)';
    if (name === '(program)') return 'other (native)';
    // zlib's frames carry no hint of the direction (node:zlib's convenience methods are all
    // `syncBufferWrapper`): the codec-pool call above them (inline here) or the module that called
    // zlib says which.
    let zlib = false;
    let wasm = false;
    let first: string | undefined;
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (f.functionName === 'readSync') return 'read';
      if (f.functionName === 'inflateBlock' || f.functionName === 'inflateFileBlock') return 'inflate';
      // libdeflate's compressor is WebAssembly too (vendor/libdeflate): deflateZlib above it says it is the deflate.
      if (f.functionName === 'deflateBlock' || f.functionName === 'deflateZlib') return 'deflate';
      if (f.functionName === 'writeAll' || f.functionName === 'writeAllv') return 'write';
      if (f.url === 'node:zlib') zlib = true;
      if (f.url.startsWith('wasm://')) wasm = true;
      if (first === undefined && /\/dist\/cli\/rasterflow[^/]*\.js$/.test(f.url)) {
        const src = sourceMap(f.url, sources)[f.lineNumber] ?? '';
        if (src !== '') first = categoryOfSource(src);
      }
    }
    if (zlib && first !== undefined) return first.startsWith('encode') ? 'deflate' : first === 'read/decode' ? 'inflate' : first;
    if (wasm) return 'kernel';
    if (first !== undefined) return first;
    return 'startup (module loading) and other';
  };
  const out = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    let c = memo.get(id);
    if (c === undefined) memo.set(id, (c = classify(id)));
    out.set(c, (out.get(c) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return out;
}

function profiledRun(dir: string): Map<string, number> | undefined {
  const profDir = join(dir, 'prof');
  const r = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, ...rfArgs(join(dir, 'rf-prof.tif'))], {
    encoding: 'utf8',
    env: { ...process.env, RASTERFLOW_CODEC_THREADS: '0' },
  });
  if (r.status !== 0) return undefined;
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  return file ? breakdown(JSON.parse(readFileSync(join(profDir, file), 'utf8')) as Profile) : undefined;
}

/**
 * CPU time of the threads of one rasterflow run (Linux: /proc/self/task/<tid>/schedstat, read as
 * the process exits by a module preloaded with --import): the main thread, the codec thread, and
 * V8's and libuv's helpers (background compilation, concurrent marking). Whether the main thread
 * is the critical path: its CPU time beside the wall time. Undefined where /proc has no schedstat.
 */
function threadTimes(dir: string): string | undefined {
  if (!existsSync('/proc/self/schedstat')) return undefined;
  const hook = join(dir, 'threads.mjs');
  writeFileSync(
    hook,
    `import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
process.on('exit', () => {
  const rows = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const comm = readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim();
      const ns = Number(readFileSync('/proc/self/task/' + tid + '/schedstat', 'utf8').split(' ')[0]);
      rows.push({ main: Number(tid) === process.pid, comm, ms: ns / 1e6 });
    } catch {}
  }
  writeFileSync(${JSON.stringify(join(dir, 'threads.json'))}, JSON.stringify({ wall: performance.now(), rows }));
});
`,
  );
  const r = spawnSync(process.execPath, ['--import', hook, ...rfArgs(join(dir, 'rf-threads.tif'))], {
    encoding: 'utf8',
    env: withoutExtraCerts(),
  });
  if (r.status !== 0 || !existsSync(join(dir, 'threads.json'))) return undefined;
  const { wall, rows } = JSON.parse(readFileSync(join(dir, 'threads.json'), 'utf8')) as {
    wall: number;
    rows: { main: boolean; comm: string; ms: number }[];
  };
  const main = rows.find((t) => t.main)?.ms ?? 0;
  // Node 20 does not name its threads: the codec thread is the busiest of the others (V8's helpers
  // compile and mark in the background: tens of milliseconds each; libuv's pool: a few).
  const others = rows
    .filter((t) => !t.main)
    .map((t) => t.ms)
    .sort((a, b) => b - a);
  const rest = others.slice(1).reduce((a, b) => a + b, 0);
  return `main thread ${main.toFixed(0)} ms CPU of ${wall.toFixed(0)} ms wall (from the process's start); the busiest other (the codec thread) ${(others[0] ?? 0).toFixed(0)} ms; the ${others.length - 1} others (V8's and libuv's helpers) ${rest.toFixed(0)} ms`;
}

/**
 * What Node itself costs each rasterflow run before any of its code: a bare `node -e 0` (median
 * wall of 5), and without NODE_EXTRA_CA_CERTS when the environment sets it (Node 20 then parses
 * the certificate file and its own root store at every start: about 55 ms of CPU on the machine
 * measured here, none of it rasterflow's).
 */
function nodeStart(): string {
  const bare = (env: NodeJS.ProcessEnv): number => {
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      spawnSync(process.execPath, ['-e', '0'], { env });
      ms.push(performance.now() - t);
    }
    return median(ms);
  };
  const asIs = bare(process.env);
  if (process.env.NODE_EXTRA_CA_CERTS === undefined) return `a bare node start takes ${asIs.toFixed(0)} ms wall`;
  return `a bare node start takes ${asIs.toFixed(0)} ms wall with NODE_EXTRA_CA_CERTS set as here, ${bare(withoutExtraCerts()).toFixed(0)} ms without it`;
}

export const family: PeerFamily = {
  name: 'render',
  async run(_size, repeats, say) {
    if (!existsSync(CLI)) {
      say(`render: ${CLI} not built (npm run build): no whole-process row`);
      return [];
    }
    if (spawnSync('gdalinfo', ['--version']).status !== 0 || spawnSync('gdaldem', ['--help'], { stdio: 'ignore' }).error !== undefined) {
      say('render: gdaldem not found: no whole-process row');
      return [];
    }
    if (!existsSync(DEM)) spawnSync(resolve(ROOT, 'bench/make-big-dem.sh'), [DATA], { stdio: 'ignore' });
    if (!existsSync(DEM)) {
      say(`render: ${DEM} could not be made (bench/make-big-dem.sh)`);
      return [];
    }
    const dir = mkdtempSync(join(tmpdir(), 'rasterflow-render-peers-'));
    try {
      const rows: PeerRow[] = [];
      const pinned = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
      const runs: { oneCore: boolean; bareNode: boolean }[] = [{ oneCore: false, bareNode: false }];
      if (process.env.NODE_EXTRA_CA_CERTS !== undefined) runs.push({ oneCore: false, bareNode: true });
      if (pinned) runs.push({ oneCore: true, bareNode: false });
      for (const { oneCore, bareNode } of runs) {
        const { rf, gdal } = race(dir, repeats, oneCore, bareNode);
        const op = `render Hillshade 4096² DEFLATE -> DEFLATE tiles${oneCore ? ', one core' : ''}${bareNode ? ', no NODE_EXTRA_CA_CERTS' : ''}`;
        say(
          `${op}: rasterflow ${rf.ms.toFixed(0)} ms wall, ${rf.cpuMs.toFixed(0)} ms CPU; gdaldem ${gdal.ms.toFixed(0)} ms wall, ${gdal.cpuMs.toFixed(0)} ms CPU`,
        );
        rows.push({
          op,
          measures: { rasterflow: PX / (rf.ms / 1000), gdaldem: PX / (gdal.ms / 1000) },
          ratios: [['rasterflow', 'gdaldem']],
        });
      }
      if (!pinned) say('render: taskset not found: no one-core row');
      say(`render: ${nodeStart()}`);
      const threads = threadTimes(dir);
      if (threads) say(`render: one run without NODE_EXTRA_CA_CERTS, CPU per thread: ${threads}`);
      const parts = profiledRun(dir);
      if (parts) {
        const total = [...parts.values()].reduce((a, b) => a + b, 0);
        const list = [...parts].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v.toFixed(0)}`);
        say(`render: where rasterflow's main thread goes, all inline (ms of ${total.toFixed(0)}): ${list.join(', ')}`);
      }
      return rows;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

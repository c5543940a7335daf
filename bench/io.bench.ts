/**
 * Issue 9: whole requests against GDAL, on files made by bench/make-big-dem.sh (run here when
 * they are missing; needs GDAL, else the suite prints why and returns no rows).
 *
 * 1. Whole process, alternating in one run: `rasterflow render` (the built CLI bundle, as
 *    `npm run build` makes it, into bench/data/dist) of a Hillshade of the 4096 x 4096 DEFLATE-tiled F32 DEM to a DEFLATE-tiled
 *    GeoTIFF (`--co TILED=YES --co COMPRESS=DEFLATE`) versus `gdaldem hillshade -co TILED=YES
 *    -co COMPRESS=DEFLATE` on the same input; medians of RUNS each; ratio = gdaldem time / ours
 *    (>= 1: we are at least as fast). The CPU time of both (user + system, all threads) is printed
 *    too: on a busy machine our thread-pool parallelism cannot show in the wall time.
 * 2. Decoding throughput of the whole 4096 x 4096 raster (raw, DEFLATE, DEFLATE + predictor 3):
 *    openGeoTiff(...).read() with a cold tile cache, beside GDAL's ReadAsArray timed by
 *    /usr/bin/python3 in the same run; medians of DECODE_RUNS after one untimed run each;
 *    ratio = ours / GDAL. Each also into a reused output (readInto; GDAL ReadAsArray(buf_obj=)):
 *    decoding without the allocation of the output. A fresh 64 MB output costs us the first touch
 *    of 16384 pages of 4 KiB (about 30 ms here: V8 cannot ask for huge pages, numpy does), which
 *    dominates the whole-raster read of uncompressed data. Then the same raster read as 256 x 256
 *    windows (4 reads in flight; GDAL one ReadAsArray per window), fresh blocks and reused ones:
 *    the reused ones are the engine's access pattern (evaluateTile recycles source blocks).
 * 3. Bounded memory: `rasterflow render` of the 16384 x 16384 DEM (Hillshade, DEFLATE tiles),
 *    peak RSS from /usr/bin/time -f %M, reported in the row name (target under 400 MB).
 * The machine is shared (2 cores): numbers are indicative. IO_BENCH_PARTS=whole,decode,big (a
 * comma list; default all three) runs only some parts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { allocateBlock } from '../src/core/pixel-block.js';
import { type GeoTiffSource, openGeoTiff } from '../src/io/geotiff-source.js';
import { tileCache } from '../src/io/tile-cache.js';
import type { Rect } from '../src/core/rect.js';
import type { BenchRow } from './rows.js';

const ROOT = resolve(import.meta.dirname, '..');
const DATA = resolve(ROOT, 'bench/data');
const DIST = resolve(DATA, 'dist');
const RUNS = 5;
/** Decoding runs are short: more of them, after one untimed run on each side. */
const DECODE_RUNS = 9;
/**
 * Window size and reads in flight of the windowed decode. 4 in flight: DEFLATE decodes as fast as
 * with 16 (the CLI's render concurrency), raw reads faster (fewer scratch buffers out of the CPU cache).
 */
const TILE = 256;
const TILES_IN_FLIGHT = 4;
const PYTHON = '/usr/bin/python3';
const PX4096 = 4096 * 4096;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const p99 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(0.99 * xs.length))]!;

function row(name: string, ms: number[], pixels: number, reference?: number[]): BenchRow {
  const mpxPerSec = pixels / 1e6 / (median(ms) / 1000);
  const ref = reference && pixels / 1e6 / (median(reference) / 1000);
  return {
    name,
    medianMs: median(ms),
    mpxPerSec,
    meanMs: mean(ms),
    p99Ms: p99(ms),
    samples: ms.length,
    ...(ref ? { reference: ref, ratio: mpxPerSec / ref } : {}),
  };
}

/** Wall time, CPU time (user + system, every thread) and peak RSS of one process. */
function timed(cmd: string, args: string[]): { ms: number; cpuMs: number; rssMb: number } {
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', cmd, ...args], {
    encoding: 'utf8',
    cwd: DATA,
    env: { ...process.env, GDAL_PAM_ENABLED: 'NO' },
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  const [user, sys, kb] = r.stderr.trim().split('\n').at(-1)!.split(' ').map(Number) as [number, number, number];
  return { ms, cpuMs: (user + sys) * 1000, rssMb: kb / 1024 };
}

export async function ioBench(): Promise<BenchRow[]> {
  const gdal = spawnSync('gdalinfo', ['--version'], { encoding: 'utf8' }).status === 0 && existsSync(PYTHON);
  if (!gdal) {
    console.warn('io bench: GDAL (gdaldem, /usr/bin/python3 osgeo) not found; SKIPPED');
    return [];
  }
  mkdirSync(DATA, { recursive: true });
  execFileSync(resolve(ROOT, 'bench/make-big-dem.sh'), [DATA], { stdio: 'ignore' });
  // The CLI as users run it (package.json "build"): tsc (type errors elsewhere do not stop the
  // emit; the tile workers load these modules), then the esbuild bundle the `rasterflow` bin runs.
  spawnSync(process.execPath, [resolve(ROOT, 'node_modules/typescript/bin/tsc'), '-p', resolve(ROOT, 'tsconfig.json'), '--outDir', DIST], {
    stdio: 'ignore',
  });
  const cli = resolve(DIST, 'cli/rasterflow.js');
  const bundle = [
    'src/cli/main.ts',
    '--bundle',
    '--platform=node',
    '--format=esm',
    '--target=node20',
    '--packages=external',
    // As package.json's "bundle": split, so a command loads only the packages it uses.
    '--splitting',
    `--outdir=${resolve(DIST, 'cli')}`,
    '--entry-names=rasterflow',
    '--chunk-names=rasterflow-[hash]',
    '--log-level=warning',
  ];
  spawnSync(resolve(ROOT, 'node_modules/.bin/esbuild'), bundle, { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(cli)) throw new Error('io bench: the CLI did not compile');
  const rows: BenchRow[] = [];
  const parts = new Set((process.env.IO_BENCH_PARTS ?? 'whole,decode,big').split(','));

  // 1. Whole process, alternating.
  if (parts.has('whole')) await wholeProcess(cli, rows);
  if (parts.has('decode')) await decoding(rows);
  if (parts.has('big')) bigRender(cli, rows);
  return rows;
}

async function wholeProcess(cli: string, rows: BenchRow[]): Promise<void> {
  const dem = resolve(DATA, 'dem4096-deflate.tif');
  const ours: number[] = [];
  const theirs: number[] = [];
  const rss: number[] = [];
  const oursCpu: number[] = [];
  const theirsCpu: number[] = [];
  const rule = '{"rasterFunction":"Hillshade"}';
  for (let i = 0; i < RUNS; i++) {
    const a = timed(process.execPath, [
      cli,
      'render',
      '--rule',
      rule,
      '--input',
      dem,
      '--output',
      resolve(DATA, 'hs-ours.tif'),
      '--co',
      'TILED=YES',
      '--co',
      'COMPRESS=DEFLATE',
    ]);
    ours.push(a.ms);
    oursCpu.push(a.cpuMs);
    rss.push(a.rssMb);
    const g = timed('gdaldem', ['hillshade', '-q', '-co', 'TILED=YES', '-co', 'COMPRESS=DEFLATE', dem, resolve(DATA, 'hs-gdal.tif')]);
    theirs.push(g.ms);
    theirsCpu.push(g.cpuMs);
  }
  rows.push(
    row(
      `whole process: rasterflow render Hillshade 4096x4096 DEFLATE -> DEFLATE tiles (peak RSS ${Math.max(...rss).toFixed(0)} MB)`,
      ours,
      PX4096,
      theirs,
    ),
  );
  rows.push(row('whole process: gdaldem hillshade -co TILED=YES -co COMPRESS=DEFLATE, same input', theirs, PX4096));
  console.log(
    `io bench: whole-process medians: rasterflow ${median(ours).toFixed(0)} ms, gdaldem ${median(theirs).toFixed(0)} ms (gdaldem/ours ${(median(theirs) / median(ours)).toFixed(2)})`,
  );
  // CPU time (all threads): on a busy machine the wall-time ratio hides how much work each does.
  console.log(
    `io bench: whole-process CPU medians: rasterflow ${median(oursCpu).toFixed(0)} ms, gdaldem ${median(theirsCpu).toFixed(0)} ms`,
  );
}

/** 2. Decoding throughput beside GDAL's. */
async function decoding(rows: BenchRow[]): Promise<void> {
  const files = [
    ['raw', 'dem4096-raw.tif'],
    ['DEFLATE', 'dem4096-deflate.tif'],
    ['DEFLATE + predictor 3', 'dem4096-deflate-pred3.tif'],
  ] as const;
  // GDAL: the whole band in one ReadAsArray, the same into a reused numpy array (buf_obj=), then
  // the same raster as 256 x 256 windows, one ReadAsArray each (the access pattern of a tiled
  // render), fresh arrays and one reused array. Each pass opens the file afresh, as ours do.
  const py = `
import sys, time, json
import numpy as np
from osgeo import gdal
out = {}
def timed(f, fill):
    ds = gdal.Open(f)
    t = time.perf_counter(); fill(ds.GetRasterBand(1)); ms = (time.perf_counter() - t) * 1000
    ds = None
    return ms
def windows(b, buf):
    for y in range(0, 4096, ${TILE}):
        for x in range(0, 4096, ${TILE}):
            b.ReadAsArray(x, y, ${TILE}, ${TILE}, buf_obj=buf)
for f in sys.argv[1:]:
    r = {'whole': [], 'wholeInto': [], 'tiled': [], 'tiledInto': []}
    whole = np.empty((4096, 4096), dtype=np.float32)
    tile = np.empty((${TILE}, ${TILE}), dtype=np.float32)
    for i in range(${DECODE_RUNS} + 1):
        ms = [timed(f, lambda b: b.ReadAsArray()), timed(f, lambda b: b.ReadAsArray(buf_obj=whole)),
              timed(f, lambda b: windows(b, None)), timed(f, lambda b: windows(b, tile))]
        if i > 0:
            for k, v in zip(r, ms): r[k].append(v)
    out[f] = r
print(json.dumps(out))`;
  const windows: Rect[] = [];
  for (let y = 0; y < 4096; y += TILE) for (let x = 0; x < 4096; x += TILE) windows.push({ x, y, width: TILE, height: TILE });
  for (const [label, f] of files) {
    const path = resolve(DATA, f);
    const whole: Rect = { x: 0, y: 0, width: 4096, height: 4096 };
    const block = allocateBlock(whole, 'F32', 1);
    const tileBlocks = Array.from({ length: TILES_IN_FLIGHT }, () => allocateBlock(windows[0]!, 'F32', 1));
    const ms: Record<'whole' | 'wholeInto' | 'tiled' | 'tiledInto', number[]> = { whole: [], wholeInto: [], tiled: [], tiledInto: [] };
    /** One cold-cache pass of `body` over a freshly opened source, timed. */
    const pass = async (body: (s: GeoTiffSource) => Promise<unknown>): Promise<number> => {
      tileCache.clear();
      const s = await openGeoTiff(path);
      const t0 = performance.now();
      await body(s);
      const t = performance.now() - t0;
      await s.close();
      return t;
    };
    /** The windows, TILES_IN_FLIGHT reads at a time; `into`: each reader reuses its own block. */
    const windowed = async (s: GeoTiffSource, into: boolean): Promise<void> => {
      let next = 0;
      await Promise.all(
        tileBlocks.map(async (b) => {
          while (next < windows.length) {
            const w = windows[next++]!;
            await (into ? s.readInto!({ ...b, rect: w }) : s.read(w));
          }
        }),
      );
    };
    // One untimed run first on both sides (our JIT warms up; GDAL opens its drivers).
    for (let i = 0; i <= DECODE_RUNS; i++) {
      const t = [
        await pass((s) => s.read(whole)),
        await pass((s) => s.readInto!(block)),
        await pass((s) => windowed(s, false)),
        await pass((s) => windowed(s, true)),
      ];
      if (i > 0) [ms.whole, ms.wholeInto, ms.tiled, ms.tiledInto].forEach((list, k) => list.push(t[k]!));
    }
    const g = JSON.parse(
      execFileSync(PYTHON, ['-c', py, path], { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } }),
    ) as Record<string, typeof ms>;
    const ref = g[path]!;
    rows.push(row(`decode 4096x4096 F32 ${label}: openGeoTiff read vs GDAL ReadAsArray`, ms.whole, PX4096, ref.whole));
    rows.push(
      row(`decode 4096x4096 F32 ${label} into a reused block: readInto vs GDAL ReadAsArray(buf_obj=)`, ms.wholeInto, PX4096, ref.wholeInto),
    );
    rows.push(
      row(
        `decode 4096x4096 F32 ${label}, ${TILE}x${TILE} windows (${TILES_IN_FLIGHT} in flight) vs GDAL ReadAsArray per window`,
        ms.tiled,
        PX4096,
        ref.tiled,
      ),
    );
    rows.push(
      row(
        `decode 4096x4096 F32 ${label}, ${TILE}x${TILE} windows into reused blocks vs GDAL ReadAsArray(buf_obj=) per window`,
        ms.tiledInto,
        PX4096,
        ref.tiledInto,
      ),
    );
  }
  tileCache.clear();
}

/** 3. Bounded memory on the 16384 x 16384 DEM. */
function bigRender(cli: string, rows: BenchRow[]): void {
  const rule = '{"rasterFunction":"Hillshade"}';
  const big = timed(process.execPath, [
    cli,
    'render',
    '--rule',
    rule,
    '--input',
    resolve(DATA, 'dem16384-deflate.tif'),
    '--output',
    resolve(DATA, 'hs16384.tif'),
    '--co',
    'COMPRESS=DEFLATE',
  ]);
  rows.push(
    row(
      `whole process: rasterflow render Hillshade 16384x16384 (peak RSS ${big.rssMb.toFixed(0)} MB, target < 400)`,
      [big.ms],
      16384 * 16384,
    ),
  );
  console.log(`io bench: 16384x16384 render peak RSS ${big.rssMb.toFixed(0)} MB in ${(big.ms / 1000).toFixed(1)} s`);
}

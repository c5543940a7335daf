/**
 * A 3-node wasm chain through the evaluator, 4096 x 4096 in 256-px tiles: Slope -> Hillshade (of
 * the slope surface, F32) -> Aspect, every node a wasm terrain kernel. Two paths of the same
 * kernels, alternating in one process (A/B, so the machine's load hits both alike):
 *
 *   - copy: planes are ordinary JS memory (`setResidentPlanes(false)`): every kernel call copies
 *     its input into wasm memory and its output back (per node, per tile), as before;
 *   - resident: the evaluator allocates the source read and every output in wasm memory: the
 *     kernels bind them in place, nothing is copied.
 *
 * Also the TypeScript path (wasm off) for reference. The source reads its tile into the
 * evaluator's block (`readInto`, as the GeoTIFF source does) from an in-memory DEM, so decoding
 * does not hide the difference; tiles are consumed where they are (`transient`), as the
 * streaming writer does. Rows: Mpx/s of output; the resident row's `reference` is the copy
 * path's, so `ratio` is resident / copy.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { PixelBlock } from '../src/core/pixel-block.js';
import { intersect, type Rect } from '../src/core/rect.js';
import { aspect } from '../src/functions/terrain/aspect.js';
import { hillshade } from '../src/functions/terrain/hillshade.js';
import { slope } from '../src/functions/terrain/slope.js';
import { renderTiles } from '../src/graph/render.js';
import type { RasterNode, SourceNode } from '../src/graph/types.js';
import { setWasmEnabled, wasmKernels, wasmStatus } from '../src/wasm/module.js';
import { setResidentPlanes, wasmCopiedBytes } from '../src/wasm/planes.js';
import { applyFunction } from '../test/helpers.js';
import type { BenchRow } from './rows.js';
import { demOf, syntheticDem, type Dem } from './terrain.bench.js';

const SIZE = Number(process.env.CHAIN_BENCH_SIZE ?? 4096);
const ROUNDS = Number(process.env.CHAIN_BENCH_ROUNDS ?? 7);

/** A source over an in-memory DEM that reads into the evaluator's block (rows copied, mask 0 outside). */
function readIntoSource(dem: Dem): SourceNode {
  const { width, height } = dem.info;
  const into = (block: PixelBlock): Promise<PixelBlock> => {
    const r = block.rect;
    const band = block.bands[0] as Float32Array;
    block.mask.fill(0);
    band.fill(0);
    const w = intersect(r, { x: 0, y: 0, width, height });
    if (w) {
      for (let y = w.y; y < w.y + w.height; y++) {
        const s = y * width + w.x;
        const d = (y - r.y) * r.width + (w.x - r.x);
        band.set(dem.z.subarray(s, s + w.width), d);
        block.mask.fill(1, d, d + w.width);
      }
    }
    return Promise.resolve(block);
  };
  return {
    kind: 'source',
    id: `chain-bench:${dem.name}`,
    info: dem.info,
    read: (r: Rect) =>
      into({ rect: r, pixelType: 'F32', bands: [new Float32Array(r.width * r.height)], mask: new Uint8Array(r.width * r.height) }),
    readInto: into,
  };
}

function chainOf(dem: Dem): RasterNode {
  const s = applyFunction(slope, { ZFactor: 3 }, [readIntoSource(dem)]);
  const h = applyFunction(hillshade, { Azimuth: 135 }, [s], 'F32');
  return applyFunction(aspect, {}, [h]);
}

/** Wall and CPU milliseconds of one render (CPU: this process, every thread; inline, so mostly this one). */
async function once(root: RasterNode): Promise<{ ms: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let sink = 0;
  for await (const t of renderTiles(root, { tileSize: 256, transient: true })) sink += t.bands[0]![0]!;
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (Number.isNaN(sink)) throw new Error('unreachable');
  return { ms, cpuMs: (c.user + c.system) / 1000 };
}

const median = (a: readonly number[]): number => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function row(name: string, ms: readonly number[], ref?: readonly number[]): BenchRow {
  const mpx = (m: number): number => (SIZE * SIZE) / 1e6 / (m / 1000);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  const reference = ref === undefined ? undefined : mpx(median(ref));
  return {
    name,
    medianMs: median(ms),
    mpxPerSec: mpx(median(ms)),
    meanMs: mean,
    p99Ms: Math.max(...ms),
    samples: ms.length,
    ...(reference === undefined ? {} : { reference, ratio: mpx(median(ms)) / reference }),
  };
}

export async function chainBench(): Promise<BenchRow[]> {
  if (!wasmStatus().enabled || wasmKernels() === undefined) {
    console.warn(`chain bench: wasm is off (${wasmStatus().detail}); SKIPPED`);
    return [];
  }
  const dem = demOf(`synthetic ${SIZE}x${SIZE}`, syntheticDem(SIZE), SIZE, SIZE, 30);
  const root = chainOf(dem);
  const ts: number[] = [];
  const copy: number[] = [];
  const resident: number[] = [];
  const cpu = { ts: [] as number[], copy: [] as number[], resident: [] as number[] };
  let copiedPerRender = 0;
  const run = async (mode: 'ts' | 'copy' | 'resident', into: number[] | undefined): Promise<void> => {
    setWasmEnabled(mode !== 'ts');
    setResidentPlanes(mode === 'resident');
    const c0 = wasmCopiedBytes();
    try {
      const { ms, cpuMs } = await once(root);
      if (into) {
        into.push(ms);
        cpu[mode].push(cpuMs);
      }
      if (mode === 'copy') copiedPerRender = wasmCopiedBytes() - c0;
      else if (mode === 'resident' && wasmCopiedBytes() !== c0) throw new Error('chain bench: the resident path copied planes');
    } finally {
      setWasmEnabled(true);
      setResidentPlanes(true);
    }
  };
  // Warm-up of every path, then A/B alternating (the order flips each round).
  for (const m of ['ts', 'copy', 'resident'] as const) await run(m, undefined);
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? (['copy', 'resident'] as const) : (['resident', 'copy'] as const);
    for (const m of order) await run(m, m === 'copy' ? copy : resident);
    if (i % 3 === 0) await run('ts', ts);
  }
  const label = `chain Slope->Hillshade->Aspect ${SIZE}x${SIZE} (256-px tiles)`;
  console.log(
    `chain bench: copy path moves ${(copiedPerRender / 2 ** 20).toFixed(0)} MiB per render; resident vs copy: ` +
      `wall ${(median(copy) / median(resident)).toFixed(2)}x, CPU ${(median(cpu.copy) / median(cpu.resident)).toFixed(2)}x ` +
      `(CPU medians ms: TypeScript ${median(cpu.ts).toFixed(0)}, copy ${median(cpu.copy).toFixed(0)}, resident ${median(cpu.resident).toFixed(0)}; load ${loadavg()[0]!.toFixed(1)})`,
  );
  // On a shared machine wall time follows the load; CPU time of the (inline) render resists it.
  return [
    row(`${label}, TypeScript`, ts),
    row(`${label}, wasm, per-node copies`, copy),
    row(`${label}, wasm, resident planes (ratio: vs copies)`, resident, copy),
    row(`${label}, TypeScript, CPU time`, cpu.ts),
    row(`${label}, wasm, per-node copies, CPU time`, cpu.copy),
    row(`${label}, wasm, resident planes, CPU time (ratio: vs copies)`, cpu.resident, cpu.copy),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await chainBench());
}

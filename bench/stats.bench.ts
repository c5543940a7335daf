/**
 * The byte statistics and the byte predictor-2 decode, TypeScript and wasm rows side by side
 * (src/wasm/stats.ts; `setStatsWasmEnabled` switches this family alone, the rows alternate in one
 * run). The wasm rows include binding the planes (a copy in for planes in JS memory, as the
 * chipper's chips are; none for the render's planes in wasm memory). Each wasm row's `reference`
 * is its TypeScript row (ratio = wasm speed / TypeScript speed). Inputs: seeded 256 x 256 chip
 * bands with runs of equal values (nearest-neighbour upscaled imagery, as the chipper bench's
 * raster) and a 4096 x 256 strip of a render's U8 output. No wasm rows when RASTERFLOW_SIMD=0 or
 * the kernels are not built.
 */
import { Bench } from 'tinybench';
import { momentsOfBands } from '../src/chipper/metadata.js';
import { horizontalPredictor } from '../src/io/decoders.js';
import { byteHistogram, PixelStatistics } from '../src/io/pixel-statistics.js';
import { wasmKernels } from '../src/wasm/module.js';
import { tileBlocks } from '../src/wasm/planes.js';
import { setStatsWasmEnabled } from '../src/wasm/stats.js';
import { prng } from '../test/helpers.js';
import { type BenchRow, rowsOf } from './rows.js';

/** Seeded bytes with runs of about `run` equal values along rows and down columns, plus a little noise. */
function upscaledBytes(width: number, height: number, run: number, seed: number): Uint8Array {
  const r = prng(seed);
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      out[y * width + x] = ((Math.floor(x / run) * 37 + Math.floor(y / run) * 11 + seed) % 180) + Math.floor(r() * 3);
  return out;
}

export async function statsBench(opts: { time?: number; iterations?: number } = {}): Promise<BenchRow[]> {
  const wasm = wasmKernels() !== undefined;
  const bench = new Bench({ name: 'stats', time: opts.time ?? 400, iterations: opts.iterations ?? 20 });
  const C = 256;
  const chip = [0, 1, 2].map((b) => upscaledBytes(C, C, 23, b + 1));
  const full = new Uint8Array(C * C).fill(1);
  const hist = new Uint32Array(1024);
  const given = chip.map((b) => byteHistogram(b, full, true));
  const diffs = upscaledBytes(C, C, 23, 9);
  const block = new Uint8Array(C * C);
  const W = 4096;
  const R = 256;
  const strip = upscaledBytes(W, R, 5, 4);
  const stripMask = new Uint8Array(W * R).fill(1);
  const blocks = wasm ? tileBlocks() : undefined;
  const resident = blocks?.allocate({ x: 0, y: 0, width: W, height: R }, 'U8', 1);
  (resident?.bands[0] as Uint8Array | undefined)?.set(strip);

  const cases: { name: string; pixels: number; run: () => void; residentRun?: () => void }[] = [
    { name: 'byteHistogram 256^2 chip band', pixels: C * C, run: () => void byteHistogram(chip[0]!, full, true, hist) },
    { name: 'momentsOfBands 3 x 256^2 (histograms given)', pixels: C * C, run: () => void momentsOfBands(chip, full, given, true) },
    {
      name: 'predictor 2 undone, 256^2 bytes',
      pixels: C * C,
      run: () => {
        block.set(diffs);
        horizontalPredictor(block, C, C, 1, 1);
      },
    },
    {
      name: 'PixelStatistics 4096 x 256 U8 strip',
      pixels: W * R,
      run: () => new PixelStatistics(1, 'U8', undefined).add([strip], stripMask, 0, W, R, W),
      ...(resident ? { residentRun: () => new PixelStatistics(1, 'U8', undefined).add(resident.bands, resident.mask, 0, W, R, W) } : {}),
    },
  ];
  const pairs: { ours: string; reference?: string; pixels: number }[] = [];
  for (const c of cases) {
    const ts = `${c.name} (TypeScript)`;
    bench.add(ts, () => {
      setStatsWasmEnabled(false);
      c.run();
    });
    pairs.push({ ours: ts, pixels: c.pixels });
    if (!wasm) continue;
    const w = `${c.name} (wasm)`;
    bench.add(w, () => {
      setStatsWasmEnabled(true);
      c.run();
    });
    pairs.push({ ours: w, reference: ts, pixels: c.pixels });
    if (c.residentRun) {
      const wr = `${c.name} (wasm, planes in wasm memory)`;
      bench.add(wr, () => {
        setStatsWasmEnabled(true);
        c.residentRun!();
      });
      pairs.push({ ours: wr, reference: ts, pixels: c.pixels });
    }
  }
  try {
    await bench.run();
  } finally {
    setStatsWasmEnabled(true);
    blocks?.release();
  }
  return rowsOf(bench.tasks, pairs);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await statsBench();
  console.table(
    rows.map((r) => ({
      name: r.name,
      'Mpx/s': r.mpxPerSec.toFixed(0),
      'median ms': r.medianMs.toFixed(3),
      ratio: r.ratio?.toFixed(2) ?? '',
    })),
  );
}

/**
 * Spectral and expression kernels on one full 4096 x 4096 block, beside plain typed-array loops
 * doing the same math in the same run: NDVI (scaled U8 and scientific F32; target >= 170 Mpx/s for
 * the scaled form), BandArithmetic NDVI (method 1), the UserDefined NDVI (one fused pass in wasm)
 * and a UserDefined formula through the expression engine, a RasterCalculator expression, and a Local cell statistic.
 * Level 1: the kernel alone, no evaluator, no tiling. Inputs: seeded U8 bands (red, NIR, SWIR), and
 * for Arithmetic seeded F32 bands.
 *
 * The "kernel" rows run the TypeScript path only; the "kernel wasm" rows the WebAssembly SIMD128
 * path (src/wasm/local.ts) of the same call, planes copied into wasm memory and the results out
 * (NDVI, BandArithmetic, RasterCalculator and Arithmetic have one; Local Mean has none). No wasm
 * rows when RASTERFLOW_SIMD=0 or the kernels are not built.
 */
import { Bench } from 'tinybench';
import { allocateBlock, type PixelBlock, type RasterInfo } from '../src/core/pixel-block.js';
import { rect } from '../src/core/rect.js';
import { local } from '../src/functions/local/local.js';
import { rasterCalculator } from '../src/functions/local/raster-calculator.js';
import { bandArithmetic } from '../src/functions/spectral/band-arithmetic.js';
import { ndvi } from '../src/functions/spectral/ndvi.js';
import { memorySource } from '../src/graph/memory-source.js';
import type { RasterFunction, RasterNode } from '../src/graph/types.js';
import { arithmetic } from '../src/functions/local/arithmetic.js';
import { setWasmEnabled, wasmStatus } from '../src/wasm/module.js';
import { applyFunction, prng } from '../test/helpers.js';
import { type BenchRow, rowsOf } from './rows.js';

function info(size: number, bandCount: number, pixelType: 'U8' | 'F32' = 'U8'): RasterInfo {
  return {
    width: size,
    height: size,
    bandCount,
    pixelType,
    extent: { xmin: 0, ymin: 0, xmax: size * 30, ymax: size * 30 },
    cellSize: { x: 30, y: 30 },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
  };
}

/**
 * A kernel call over the whole block (inputs read once, output allocated once). `wasm`: whether
 * the kernel may take its WebAssembly path (false: the TypeScript kernel, the reference).
 */
export async function kernelTask(
  fn: RasterFunction,
  args: Record<string, unknown>,
  sources: readonly RasterNode[],
  size: number,
  wasm = false,
): Promise<() => void> {
  const node = applyFunction(fn, args, sources);
  const out = allocateBlock(rect(0, 0, size, size), node.info.pixelType, node.info.bandCount);
  const blocks: PixelBlock[] = [];
  for (const s of node.inputs) blocks.push(await (s as Extract<RasterNode, { kind: 'source' }>).read(out.rect));
  const params = node.plan.params;
  return () => {
    setWasmEnabled(wasm);
    try {
      fn.kernel(params, blocks, out);
    } finally {
      setWasmEnabled(true);
    }
  };
}

export function plainNdviU8(vis: Uint8Array, ir: Uint8Array, out: Uint8Array): void {
  for (let i = 0; i < out.length; i++) {
    const s = ir[i]! + vis[i]!;
    out[i] = s === 0 ? 0 : ((ir[i]! - vis[i]!) / s) * 100 + 100.5;
  }
}

export function plainNdviF32(vis: Uint8Array, ir: Uint8Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) {
    const s = ir[i]! + vis[i]!;
    out[i] = s === 0 ? 0 : (ir[i]! - vis[i]!) / s;
  }
}

export interface SpectralBenchOptions {
  readonly time?: number;
  readonly iterations?: number;
  readonly size?: number;
}

export async function spectralBench(opts: SpectralBenchOptions = {}): Promise<BenchRow[]> {
  const size = opts.size ?? 4096;
  const n = size * size;
  const rnd = prng(7);
  const red = new Uint8Array(n);
  const nir = new Uint8Array(n);
  const swir = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    red[i] = 20 + rnd() * 120;
    nir[i] = 30 + rnd() * 200;
    swir[i] = 10 + rnd() * 150;
  }
  const stack = memorySource('bench:spectral', info(size, 3), [red, nir, swir]);
  const redSrc = memorySource('bench:red', info(size, 1), [red]);
  const nirSrc = memorySource('bench:nir', info(size, 1), [nir]);
  const swirSrc = memorySource('bench:swir', info(size, 1), [swir]);
  const u8 = new Uint8Array(n);
  const f32 = new Float32Array(n);

  const bench = new Bench({ name: 'spectral', time: opts.time ?? 500, iterations: opts.iterations ?? 8 });
  const pairs: { ours: string; reference?: string; pixels: number }[] = [];
  const add = async (ours: string, task: () => void, reference?: string, plain?: () => void): Promise<void> => {
    bench.add(ours, task);
    if (reference !== undefined && plain !== undefined && !bench.tasks.some((t) => t.name === reference)) bench.add(reference, plain);
    pairs.push({ ours, reference, pixels: n });
  };
  const wasm = wasmStatus().enabled;
  /** The TypeScript row, and the wasm row of the same call (when wasm is on), beside the same reference. */
  const both = async (
    name: string,
    fn: RasterFunction,
    args: Record<string, unknown>,
    sources: readonly RasterNode[],
    reference?: string,
    plain?: () => void,
  ): Promise<void> => {
    const [head, tail] = name.split('|') as [string, string];
    await add(`${head} kernel${tail}`, await kernelTask(fn, args, sources, size), reference, plain);
    if (wasm) await add(`${head} kernel wasm${tail}`, await kernelTask(fn, args, sources, size, true), reference, plain);
  };
  const tag = `${size}x${size} U8`;
  await both(`NDVI scaled|, ${tag}`, ndvi, { VisibleBandID: 0, InfraredBandID: 1 }, [stack], `NDVI scaled plain loop, ${tag}`, () =>
    plainNdviU8(red, nir, u8),
  );
  await both(
    `NDVI scientific|, ${tag}`,
    ndvi,
    { VisibleBandID: 0, InfraredBandID: 1, ScientificOutput: true },
    [stack],
    `NDVI scientific plain loop, ${tag}`,
    () => plainNdviF32(red, nir, f32),
  );
  await both(
    `BandArithmetic NDVI (engine)|, ${tag}`,
    bandArithmetic,
    { Method: 1, BandIndexes: '2 1' },
    [stack],
    `NDVI scientific plain loop, ${tag}`,
    () => plainNdviF32(red, nir, f32),
  );
  await both(
    `BandArithmetic UserDefined (B2-B1)/(B2+B1)|, ${tag}`,
    bandArithmetic,
    { Method: 0, BandIndexes: '(B2 - B1) / (B2 + B1)' },
    [stack],
    `NDVI scientific plain loop, ${tag}`,
    () => plainNdviF32(red, nir, f32),
  );
  await both(
    `BandArithmetic UserDefined (B2-B1)/(B2+B1)*B3|, ${tag}`,
    bandArithmetic,
    { Method: 0, BandIndexes: '(B2 - B1) / (B2 + B1) * B3' },
    [stack],
  );
  await both(
    `RasterCalculator Con(ndvi > 0.2, nir, -swir)|, ${tag}`,
    rasterCalculator,
    { InputNames: ['red', 'nir', 'swir'], Expression: 'Con((nir - red) / (nir + red) > 0.2, nir, -swir)' },
    [redSrc, nirSrc, swirSrc],
  );
  await add(`Local Mean of 3 kernel, ${tag}`, await kernelTask(local, { Operation: 40 }, [redSrc, nirSrc, swirSrc], size));
  // Arithmetic on F32 rasters (the engine's float math), beside a plain loop.
  const a32 = Float32Array.from(nir, (v, i) => v * 1.5 + (i & 7));
  const b32 = Float32Array.from(red, (v) => v + 0.25);
  const aSrc = memorySource('bench:a32', info(size, 1, 'F32'), [a32]);
  const bSrc = memorySource('bench:b32', info(size, 1, 'F32'), [b32]);
  const tag32 = `${size}x${size} F32`;
  const plainLoops: Record<string, () => void> = {
    Plus: () => {
      for (let i = 0; i < n; i++) f32[i] = a32[i]! + b32[i]!;
    },
    Multiply: () => {
      for (let i = 0; i < n; i++) f32[i] = a32[i]! * b32[i]!;
    },
    Divide: () => {
      for (let i = 0; i < n; i++) f32[i] = a32[i]! / b32[i]!;
    },
  };
  for (const [op, name] of [
    [1, 'Plus'],
    [3, 'Multiply'],
    [4, 'Divide'],
  ] as const) {
    await both(
      `Arithmetic ${name}|, ${tag32}`,
      arithmetic,
      { Operation: op },
      [aSrc, bSrc],
      `Arithmetic ${name} plain loop, ${tag32}`,
      plainLoops[name],
    );
  }
  await bench.run();
  return rowsOf(bench.tasks, pairs);
}

/**
 * Radiometric functions on a 4096 x 4096 input: Stretch PercentClip with DRA (U8 and U16) and
 * Threshold (Otsu, U8), each measured (a) end to end through `render` (the request-statistics
 * pre-pass over the whole raster, then 256 x 256 tiles assembled into one block: what a client
 * request costs) and (b) the kernel alone on bound parameters; beside a plain typed-array loop
 * doing the same job in the same run (histogram, cut-offs, then the mapping; the reference).
 * Targets (issue 4): percent clip >= 130 Mpx/s, Otsu >= 400 Mpx/s end to end.
 *
 * Float pixels: Stretch MinMax of an F32 raster (the linear closed form, no lookup table) and the
 * engine's cast of F32 to U8 (castPlane: round half away from zero, saturate, NaN -> NoData), each
 * as a TypeScript row and a WebAssembly SIMD128 row (src/wasm/local.ts: planes copied into wasm
 * memory and the results out), beside a plain loop. No wasm rows when RASTERFLOW_SIMD=0 or the
 * kernels are not built.
 */
import { Bench } from 'tinybench';
import { allocateBlock, type PixelBlock, type RasterInfo } from '../src/core/pixel-block.js';
import { rect } from '../src/core/rect.js';
import { stretch } from '../src/functions/radiometric/stretch.js';
import { threshold } from '../src/functions/radiometric/threshold.js';
import { memorySource } from '../src/graph/memory-source.js';
import { render } from '../src/graph/render.js';
import { bindRequestStatistics } from '../src/graph/request-statistics.js';
import type { FunctionNode, RasterFunction } from '../src/graph/types.js';
import { castPlane } from '../src/graph/cast.js';
import { setWasmEnabled, wasmStatus } from '../src/wasm/module.js';
import { applyFunction, prng } from '../test/helpers.js';
import { type BenchRow, rowsOf } from './rows.js';

/** A seeded bimodal image (dark water, bright land) with smooth variation and noise. */
function image(size: number, max: number, seed = 7): Float64Array {
  const rnd = prng(seed);
  const v = new Float64Array(size * size);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const land = Math.sin(x / 300) + Math.cos(y / 250) > 0.3;
      const base = land ? 0.62 + 0.15 * Math.sin((x + y) / 90) : 0.18 + 0.05 * Math.cos(x / 70);
      v[y * size + x] = Math.min(max, Math.max(0, Math.round((base + 0.08 * (rnd() - 0.5)) * max)));
    }
  }
  return v;
}

function info(size: number, pixelType: 'U8' | 'U16' | 'F32'): RasterInfo {
  return {
    width: size,
    height: size,
    bandCount: 1,
    pixelType,
    extent: { xmin: 0, ymin: 0, xmax: size * 30, ymax: size * 30 },
    cellSize: { x: 30, y: 30 },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
  };
}

// ---- Plain loops: the same jobs written directly (no mask, no engine).

function plainPercentClip(src: Uint8Array | Uint16Array, out: Uint8Array, levels: number, minPct: number, maxPct: number): void {
  const counts = new Float64Array(levels);
  for (let i = 0; i < src.length; i++) counts[src[i]!]!++;
  const lo = Math.min(levels, 3);
  for (let i = 0; i < lo; i++) counts[i] = 0;
  counts[levels - 1] = counts[levels - 2] = 0;
  let total = 0;
  for (let i = 0; i < levels; i++) total += counts[i]!;
  let run = 0;
  let minCut = 0;
  for (let i = 0; i < levels; i++)
    if ((run += counts[i]!) > (minPct * total) / 100) {
      minCut = i;
      break;
    }
  run = total;
  let maxCut = levels - 1;
  for (let i = levels - 1; i > 0; i--)
    if ((run -= counts[i]!) < (1 - maxPct / 100) * total) {
      maxCut = i;
      break;
    }
  const lut = new Uint8Array(levels);
  for (let v = 0; v < levels; v++)
    lut[v] = v <= minCut ? 0 : v >= maxCut ? 255 : Math.floor(((v - minCut) / (maxCut - minCut)) * 255 + 0.5);
  for (let i = 0; i < src.length; i++) out[i] = lut[src[i]!]!;
}

function plainOtsu(src: Uint8Array, out: Uint8Array): void {
  const h = new Float64Array(256);
  for (let i = 0; i < src.length; i++) h[src[i]!]!++;
  let total = 0;
  let sum = 0;
  for (let i = 0; i < 256; i++) {
    total += h[i]!;
    sum += i * h[i]!;
  }
  let w0 = 0;
  let s0 = 0;
  let best = -1;
  let t = 0;
  for (let k = 0; k < 255; k++) {
    w0 += h[k]!;
    s0 += k * h[k]!;
    const w1 = total - w0;
    if (w0 === 0 || w1 === 0) continue;
    const d = s0 / w0 - (sum - s0) / w1;
    const v = w0 * w1 * d * d;
    if (v > best) {
      best = v;
      t = k;
    }
  }
  for (let i = 0; i < src.length; i++) out[i] = src[i]! > t ? 1 : 0;
}

export interface RadiometricBenchOptions {
  readonly time?: number;
  readonly iterations?: number;
  readonly size?: number;
}

export async function radiometricBench(opts: RadiometricBenchOptions = {}): Promise<BenchRow[]> {
  const size = opts.size ?? 4096;
  const n = size * size;
  const bench = new Bench({ name: 'radiometric', time: opts.time ?? 500, iterations: opts.iterations ?? 5 });
  const pairs: { ours: string; reference?: string; pixels: number }[] = [];
  const area = rect(0, 0, size, size);
  const u8 = Uint8Array.from(image(size, 255));
  const u16 = Uint16Array.from(image(size, 4095, 11));
  const sources = { U8: memorySource('bench:u8', info(size, 'U8'), [u8]), U16: memorySource('bench:u16', info(size, 'U16'), [u16]) };
  const out8 = new Uint8Array(n);

  const add = async (
    label: string,
    fn: RasterFunction,
    args: Record<string, unknown>,
    type: 'U8' | 'U16',
    plain: () => void,
  ): Promise<void> => {
    const node = applyFunction(fn, args, [sources[type]]);
    const ours = `${label} render (pre-pass + 256 tiles), ${type} ${size}x${size}`;
    const kernel = `${label} kernel (bound), ${type} ${size}x${size}`;
    const reference = `${label} plain loop, ${type} ${size}x${size}`;
    bench.add(ours, async () => {
      await render(node, { tileSize: 256 });
    });
    const bound = (await bindRequestStatistics(node, area)).root as FunctionNode;
    const input: PixelBlock = await sources[type].read(area);
    const out = allocateBlock(area, bound.info.pixelType, 1);
    bench.add(kernel, () => bound.fn.kernel(bound.plan.params, [input], out));
    bench.add(reference, plain);
    pairs.push({ ours, reference, pixels: n }, { ours: kernel, reference, pixels: n });
  };

  const pc = { StretchType: 6, MinPercent: 0.5, MaxPercent: 0.5, DRA: true };
  await add('Stretch PercentClip DRA', stretch, pc, 'U8', () => plainPercentClip(u8, out8, 256, 0.5, 0.5));
  await add('Stretch PercentClip DRA', stretch, pc, 'U16', () => plainPercentClip(u16, out8, 65536, 0.5, 0.5));
  await add('Threshold Otsu', threshold, {}, 'U8', () => plainOtsu(u8, out8));

  // Float pixels: the linear stretch and the cast, TypeScript and wasm paths.
  const f32 = Float32Array.from(image(size, 4095, 13), (v, i) => v * 0.37 + (i % 5) * 0.1 - 20);
  const f32Src = memorySource('bench:f32', info(size, 'F32'), [f32]);
  const f32Block: PixelBlock = await f32Src.read(area);
  const lo = 100;
  const hi = 1400;
  const stretchNode = applyFunction(stretch, { StretchType: 5, Statistics: [[lo, hi, 700, 300]] }, [f32Src]);
  const stretchOut = allocateBlock(area, stretchNode.info.pixelType, 1);
  const withWasm = (on: boolean, f: () => void) => () => {
    setWasmEnabled(on);
    try {
      f();
    } finally {
      setWasmEnabled(true);
    }
  };
  const wasm = wasmStatus().enabled;
  const tagF = `F32 ${size}x${size}`;
  const stretchRef = `Stretch MinMax plain loop, ${tagF}`;
  bench.add(stretchRef, () => {
    for (let i = 0; i < n; i++) {
      const v = f32[i]!;
      out8[i] = v <= lo ? 0 : v >= hi ? 255 : Math.floor(((v - lo) / (hi - lo)) * 255 + 0.5);
    }
  });
  for (const on of wasm ? [false, true] : [false]) {
    const name = `Stretch MinMax kernel${on ? ' wasm' : ''}, ${tagF}`;
    bench.add(
      name,
      withWasm(on, () => stretchNode.fn.kernel(stretchNode.plan.params, [f32Block], stretchOut)),
    );
    pairs.push({ ours: name, reference: stretchRef, pixels: n });
  }
  const castRef = `cast F32 to U8 plain loop, ${tagF}`;
  bench.add(castRef, () => {
    for (let i = 0; i < n; i++) {
      const v = f32[i]!;
      const r = v < 0 ? -Math.floor(0.5 - v) : Math.floor(v + 0.5);
      out8[i] = r < 0 ? 0 : r > 255 ? 255 : r;
    }
  });
  const castMask = new Uint8Array(n);
  for (const on of wasm ? [false, true] : [false]) {
    const name = `cast F32 to U8 (castPlane)${on ? ' wasm' : ''}, ${tagF}`;
    bench.add(
      name,
      withWasm(on, () => {
        castMask.fill(1);
        castPlane(f32, 'F32', 'U8', castMask);
      }),
    );
    pairs.push({ ours: name, reference: castRef, pixels: n });
  }
  await bench.run();
  return rowsOf(bench.tasks, pairs);
}

/**
 * The wasm focal kernels against their TypeScript kernels (the reference), over the focal goldens'
 * inputs and seeded random rasters with NaN and Infinity values, NoData masks, raster and tile
 * edges and widths that are not a multiple of the lane count:
 *   - Statistics (3x3 Mean, StandardDeviation, Min, Max): the same output bit for bit (a NaN is
 *     compared as NaN) and the same mask.
 *   - Convolution: the same mask; pixels the TypeScript path computes in both runs (mirrored edges,
 *     windows holding NoData) bit for bit; the interior pixels, computed in f32 lanes by the wasm
 *     path and in float64 by the TypeScript one, within
 *         |wasm - ts| <= (taps + 2) * 2^-24 * sum_i |w_i x_i|
 *     over the pixel's window (taps = rows x columns; normalised weights): the bound of a recursive
 *     f32 sum of `taps` products (gamma_taps), plus the rounding of the weights to f32 and of the
 *     float64 result to the F32 band. An absolute bound: edge detectors cancel, so a result near 0
 *     may be many ULPs off while its error is tiny against its terms. Non-finite results must be
 *     equal.
 * Each comparison also checks that the wasm path ran (it falls back silently otherwise).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fromFile } from 'geotiff';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RasterInfo } from '../core/pixel-block.js';
import type { PixelType, Plane } from '../core/pixel-type.js';
import { convolution } from '../functions/focal/convolution.js';
import { normalise, parseKernel, PREDEFINED_KERNELS } from '../functions/focal/convolution-kernels.js';
import { statistics } from '../functions/focal/statistics.js';
import { memorySource } from '../graph/memory-source.js';
import { render } from '../graph/render.js';
import type { RasterFunction } from '../graph/types.js';
import { applyFunction, gridInfo, prng } from '../../test/helpers.js';
import { focalWasmCallCount } from './focal.js';
import { setWasmEnabled, wasmStatus } from './module.js';

const ROOT = resolve(import.meta.dirname, '../..');

afterEach(() => {
  setWasmEnabled(true);
});

interface Result {
  readonly band: Plane;
  readonly mask: Uint8Array;
}

interface Input {
  readonly info: RasterInfo;
  readonly z: Float32Array;
  readonly mask?: Uint8Array;
}

async function run(
  fn: RasterFunction,
  args: Record<string, unknown>,
  input: Input,
  tileSize: number,
  wasm: boolean,
  to?: PixelType,
): Promise<Result> {
  setWasmEnabled(wasm);
  try {
    const node = applyFunction(fn, args, [memorySource('in', input.info, [input.z], input.mask)], to);
    const out = await render(node, { tileSize });
    return { band: out.bands[0]!, mask: out.mask };
  } finally {
    setWasmEnabled(true);
  }
}

/** The kernel's weights as Convolution normalises them (rows x columns, row-major). */
function kernelOf(args: Record<string, unknown>): { w: Float64Array; cols: number; rows: number } {
  if (typeof args.Type === 'number' && args.Type >= 0) {
    const k = PREDEFINED_KERNELS[args.Type]!;
    return { w: normalise(k.weights), cols: k.cols, rows: k.rows };
  }
  const k = parseKernel(args.Kernel, args.Columns as number | undefined, args.Rows as number | undefined);
  if ('error' in k) throw new Error(k.error);
  return { w: normalise(k.weights), cols: k.cols, rows: k.rows };
}

/** sum |w_i x_i| over the window of pixel (x, y), or undefined when the window leaves the raster. */
function magnitude(input: Input, k: { w: Float64Array; cols: number; rows: number }, x: number, y: number): number | undefined {
  const { width, height } = input.info;
  const left = k.cols >> 1;
  const top = k.rows >> 1;
  if (x - left < 0 || y - top < 0 || x - left + k.cols > width || y - top + k.rows > height) return undefined;
  let s = 0;
  for (let r = 0; r < k.rows; r++)
    for (let c = 0; c < k.cols; c++) s += Math.abs(k.w[r * k.cols + c]! * input.z[(y - top + r) * width + x - left + c]!);
  return s;
}

/**
 * Both paths; the first difference beyond what the function allows (bit for bit, or the
 * convolution bound above), or undefined. Throws when the wasm path did not run.
 */
async function compare(
  fn: RasterFunction,
  args: Record<string, unknown>,
  input: Input,
  tileSize: number,
  to?: PixelType,
): Promise<string | undefined> {
  const ts = await run(fn, args, input, tileSize, false, to);
  const before = focalWasmCallCount();
  const wa = await run(fn, args, input, tileSize, true, to);
  const conv = fn === convolution ? kernelOf(args) : undefined;
  // Convolution takes wasm where a tile has interior pixels (a raster at least the kernel's size).
  if (!conv || (input.info.width >= conv.cols && input.info.height >= conv.rows)) {
    expect(focalWasmCallCount(), `${fn.name} ${JSON.stringify(args)} ran in wasm`).toBeGreaterThan(before);
  }
  expect(wa.band.constructor).toBe(ts.band.constructor);
  const width = input.info.width;
  const what = `${fn.name} ${JSON.stringify(args).slice(0, 120)} ${input.info.width}x${input.info.height} tile ${tileSize}`;
  for (let i = 0; i < ts.band.length; i++) {
    if (ts.mask[i] !== wa.mask[i]) return `${what}: mask differs at ${i} (TS ${ts.mask[i]}, wasm ${wa.mask[i]})`;
    const a = ts.band[i]!;
    const b = wa.band[i]!;
    if (Object.is(a, b)) continue;
    const m = conv ? magnitude(input, conv, i % width, Math.floor(i / width)) : undefined;
    if (m === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return `${what}: at ${i} TS ${a}, wasm ${b}`;
    const bound = (conv!.cols * conv!.rows + 2) * 2 ** -24 * m;
    if (Math.abs(a - b) > bound) return `${what}: at ${i} TS ${a}, wasm ${b}, |diff| ${Math.abs(a - b)} > bound ${bound}`;
  }
  return undefined;
}

// With RASTERFLOW_SIMD=0 (the suite's TypeScript-only run) there is no wasm path to compare.
const off = process.env.RASTERFLOW_SIMD === '0';

describe.skipIf(off)('wasm focal kernels', () => {
  it('are loaded (the test script builds them)', () => {
    expect(wasmStatus()).toMatchObject({ enabled: true });
  });

  describe('equal the TypeScript kernels on the golden inputs', () => {
    interface Case {
      readonly id: string;
      readonly rule: { readonly rasterFunction: string; readonly rasterFunctionArguments: Record<string, unknown> };
      readonly inputs: readonly string[];
    }
    const FUNCTIONS: Record<string, RasterFunction> = { convolution, statistics };
    const cases = (JSON.parse(readFileSync(resolve(ROOT, 'golden/focal/cases.json'), 'utf8')) as Case[]).filter((c) => {
      const fn = FUNCTIONS[c.rule.rasterFunction.toLowerCase()];
      if (fn !== statistics) return fn !== undefined;
      // Statistics runs in wasm for 3x3 Min, Max, Mean and StandardDeviation without FillNoDataOnly.
      const a = c.rule.rasterFunctionArguments;
      const type = typeof a.Type === 'string' ? { Min: 1, Max: 2, Mean: 3, StandardDeviation: 4 }[a.Type] : a.Type;
      return (type as number) <= 4 && (a.Columns ?? a.KernelColumns ?? 3) === 3 && (a.Rows ?? a.KernelRows ?? 3) === 3 && !a.FillNoDataOnly;
    });
    it('has cases', () => expect(cases.length).toBeGreaterThan(25));
    for (const c of cases) {
      it(c.id, async () => {
        const tiff = await fromFile(resolve(ROOT, c.inputs[0]!));
        const image = await tiff.getImage();
        const [band] = (await image.readRasters()) as unknown as Plane[];
        const width = image.getWidth();
        const height = image.getHeight();
        const noData = image.getGDALNoData() ?? undefined;
        // The wasm path takes F32 values: integer inputs are compared as F32 (the same values).
        const info = gridInfo({ width, height, cellSize: 30, noData });
        const fn = FUNCTIONS[c.rule.rasterFunction.toLowerCase()]!;
        const input: Input = { info, z: Float32Array.from(band!) };
        const holes = noData !== undefined && input.z.includes(noData);
        for (const tile of [128, 61]) {
          if (holes && fn === statistics) {
            // With NoData inside the raster Statistics keeps its TypeScript path: the same output.
            const before = focalWasmCallCount();
            const ts = await run(fn, c.rule.rasterFunctionArguments, input, tile, false);
            const wa = await run(fn, c.rule.rasterFunctionArguments, input, tile, true);
            expect(focalWasmCallCount() - before).toBeLessThan(4);
            expect(wa.mask).toEqual(ts.mask);
            expect(wa.band).toEqual(ts.band);
            continue;
          }
          expect(await compare(fn, c.rule.rasterFunctionArguments, input, tile)).toBeUndefined();
        }
      });
    }
  });

  it('equal the TypeScript kernels on random rasters (NaN, Infinity, NoData, edges, odd widths, every kernel path)', async () => {
    const rnd = prng(2200);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    let compared = 0;
    for (let trial = 0; trial < 60; trial++) {
      const width = 1 + Math.floor(rnd() * 70);
      const height = 1 + Math.floor(rnd() * 50);
      const n = width * height;
      // 0 smooth, 1 small integers (ties, flat windows), 2 NoData, 3 NaN/Infinity and NoData, 4 magnitudes
      // from 1e-2 to 1e12 (float64 sums of such F32 values depend on their order).
      const style = trial % 5;
      const scale = pick([1, 1000, 1e-3, 5e6]);
      const offset = pick([0, 0, 1e4, -300]);
      const z = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        const x = i % width;
        const y = Math.floor(i / width);
        z[i] =
          style === 1
            ? Math.round(rnd() * 3) - 1
            : style === 4
              ? (rnd() < 0.5 ? -1 : 1) * 10 ** (14 * rnd() - 2)
              : offset + scale * (Math.sin(x / 7) + Math.cos(y / 5) + 0.1 * (rnd() - 0.5));
      }
      let mask: Uint8Array | undefined;
      if (style === 2 || style === 3) {
        mask = new Uint8Array(n).fill(1);
        const holes = 1 + Math.floor(rnd() * 4);
        for (let k = 0; k < holes; k++) mask[Math.floor(rnd() * n)] = 0;
      }
      if (style === 3) for (let k = 0; k < 3; k++) z[Math.floor(rnd() * n)] = pick([Number.NaN, Infinity, -Infinity]);
      const input: Input = { info: gridInfo({ width, height, cellSize: 10 }), z, ...(mask ? { mask } : {}) };
      const tile = pick([16, 23, 64, 256]);
      const user = Array.from({ length: 12 }, () => Math.round(rnd() * 8) - 4);
      const cases: [RasterFunction, Record<string, unknown>][] = [
        [convolution, { Type: pick([0, 4, 10, 11, 13, 15, 19, 21]) }],
        [convolution, { Type: pick([12, 14, 16]) }],
        // Separable (rank one), the taps path (4x3) and a 7x5 dense one through taps.
        [convolution, { Columns: 9, Rows: 7, Kernel: Array.from({ length: 63 }, (_, i) => (1 + (i % 9)) * (1 + Math.floor(i / 9))) }],
        [convolution, { Columns: 4, Rows: 3, Kernel: user }],
        [statistics, { Type: pick([1, 2, 3, 4]) }],
        [statistics, { Type: pick([1, 2, 3, 4]) }],
      ];
      for (const [fn, args] of cases) {
        // Statistics with NoData inside the raster keeps the TypeScript path (the golden test compares
        // it): its NaN/Infinity rasters run without their mask.
        if (fn === statistics && style === 2) continue;
        const given = fn === statistics ? { info: input.info, z } : input;
        expect(await compare(fn, args, given, tile)).toBeUndefined();
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(200);
  });

  it('Statistics: NaN results, flat windows (two-pass variance) and large offsets come out as in TypeScript', async () => {
    const width = 37;
    const height = 11;
    const z = Float32Array.from({ length: width * height }, (_, i) => (i % 7 < 3 ? 5000 : 5000 + (i % 5) * 1e-3));
    z[40] = Number.NaN;
    z[100] = Infinity;
    const input: Input = { info: gridInfo({ width, height, cellSize: 1 }), z };
    for (const Type of [1, 2, 3, 4]) for (const tile of [16, 64]) expect(await compare(statistics, { Type }, input, tile)).toBeUndefined();
  });

  it('fall back to TypeScript for what they do not take (a U8 input, an F64 or integer output, 5x5 statistics, a kernel of zeros)', async () => {
    const info = gridInfo({ width: 20, height: 20, pixelType: 'U8' });
    const z = Uint8Array.from({ length: 400 }, (_, i) => (i * 37) % 101);
    const f32 = gridInfo({ width: 20, height: 20 });
    const before = focalWasmCallCount();
    await render(applyFunction(convolution, { Type: 11 }, [memorySource('u8', info, [z])]), { tileSize: 64 });
    await render(applyFunction(convolution, { Type: 11 }, [memorySource('f', f32, [Float32Array.from(z)])], 'F64'), { tileSize: 64 });
    await render(applyFunction(convolution, { Type: 11 }, [memorySource('f', f32, [Float32Array.from(z)])], 'S16'), { tileSize: 64 });
    await render(applyFunction(statistics, { Type: 3, Columns: 5, Rows: 5 }, [memorySource('f', f32, [Float32Array.from(z)])]), {
      tileSize: 64,
    });
    // A user kernel of zeros (no taps) stays in TypeScript; its result is 0.
    const zeros = await render(
      applyFunction(convolution, { Columns: 4, Rows: 3, Kernel: Array(12).fill(0) }, [memorySource('f', f32, [Float32Array.from(z)])]),
      { tileSize: 64 },
    );
    expect(zeros.bands[0]![10 * 20 + 10]).toBe(0);
    expect(focalWasmCallCount()).toBe(before);
  });

  it('are switched off by RASTERFLOW_SIMD=0 (the TypeScript path runs)', async () => {
    vi.stubEnv('RASTERFLOW_SIMD', '0');
    vi.resetModules();
    try {
      const m = await import('./module.js');
      const f = await import('./focal.js');
      const c = await import('../functions/focal/convolution.js');
      expect(m.wasmStatus()).toEqual({ enabled: false, detail: 'switched off (RASTERFLOW_SIMD=0)' });
      const info = gridInfo({ width: 40, height: 30 });
      const z = Float32Array.from({ length: 1200 }, (_, i) => Math.sin(i / 9) * 50);
      const out = await render(applyFunction(c.convolution, { Type: 11 }, [memorySource('off', info, [z])]), { tileSize: 64 });
      expect(f.focalWasmCallCount()).toBe(0);
      expect(out.mask.some((v) => v === 1)).toBe(true);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

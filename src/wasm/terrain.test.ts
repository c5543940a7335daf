/**
 * The wasm terrain kernels against their TypeScript kernels (the reference), over the terrain
 * goldens' DEMs and seeded random rasters with NaN values, NoData masks, raster and tile edges,
 * odd widths (tails of 1, 2 and 3 cells after the four-cell steps), terraces (flat cells,
 * axis-aligned gradients), geographic grids, every DEM plane type and every parameter family.
 * Each comparison also checks that the wasm path ran (it falls back silently otherwise).
 *
 * Equality (wasm/terrain.ts says which kernels compute what in which precision):
 *   - Aspect, Slope percent rise, Curvature: bit for bit (NaN payloads aside: a NaN is compared as NaN);
 *   - Hillshade (traditional and multidirectional), F32 output: |wasm - TS| <= HILLSHADE_ABS. Why that
 *     bound: the gradients are rounded to f32 (relative 2^-24 each), the numerator k0 + k1 gx + k2 gy
 *     sums terms of at most 255 (1 + sqrt 2) |g| with f32 roundings (a few 2^-24 of that sum, which
 *     the division by sqrt(1 + g^2) brings back below 255 (1 + sqrt 2)), and the square root and the
 *     division add a few 2^-24 of the shade (<= 255): in all under 4000 * 2^-24 = 2.4e-4 of a grey
 *     level. ULPs would say nothing here: a shade near 0 comes from a cancelling numerator;
 *   - Hillshade, U8 output (the shade truncated): equal, except where the TypeScript F32 shade lies
 *     within HILLSHADE_ABS of an integer, where the two may be 1 apart;
 *   - Slope in degrees: |wasm - TS| <= SLOPE_REL * |TS| (2^-19: 32 f32 roundings of the angle). The
 *     rise sqrt(gx^2 + gy^2) keeps a relative error of about 3 * 2^-24 in f32 (no cancellation),
 *     atan's relative sensitivity is at most 1, the f32 polynomial (coefficients rounded to f32,
 *     Estrin's scheme) adds less than 8 * 2^-24 relative, and 90 - p above 45 degrees less again.
 * A test on a large surface checks that the worst differences seen stay well inside these (measured:
 * 6.1e-5 grey levels, 2.6e-7 relative in degrees).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fromFile } from 'geotiff';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RasterInfo } from '../core/pixel-block.js';
import type { PixelType, Plane } from '../core/pixel-type.js';
import { aspect } from '../functions/terrain/aspect.js';
import { curvature } from '../functions/terrain/curvature.js';
import { hillshade } from '../functions/terrain/hillshade.js';
import { slope } from '../functions/terrain/slope.js';
import { memorySource } from '../graph/memory-source.js';
import { render } from '../graph/render.js';
import type { RasterFunction } from '../graph/types.js';
import { applyFunction, gridInfo, prng } from '../../test/helpers.js';
import { setWasmEnabled, wasmKernels, wasmStatus } from './module.js';
import { type TerrainExports, wasmCallCount, wasmSpanCallCount } from './terrain.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** Hillshade: absolute bound, grey levels (see the file comment). */
const HILLSHADE_ABS = 2.5e-4;
/** Slope in degrees: relative bound (see the file comment). */
const SLOPE_REL = 2 ** -19;

afterEach(() => {
  setWasmEnabled(true);
});

interface Result {
  readonly band: Plane;
  readonly mask: Uint8Array;
}

async function run(
  fn: RasterFunction,
  args: Record<string, unknown>,
  info: RasterInfo,
  z: Plane,
  mask: Uint8Array | undefined,
  tileSize: number,
  wasm: boolean,
  to?: PixelType,
): Promise<Result> {
  setWasmEnabled(wasm);
  try {
    const node = applyFunction(fn, args, [memorySource('dem', info, [z], mask)], to);
    const out = await render(node, { tileSize });
    return { band: out.bands[0]!, mask: out.mask };
  } finally {
    setWasmEnabled(true);
  }
}

type Equality = 'exact' | 'hillshade' | 'slope';

/** Which equality a function and its arguments get. */
function equalityOf(fn: RasterFunction, args: Record<string, unknown>): Equality {
  if (fn === hillshade) return 'hillshade';
  if (fn === slope && args.SlopeType !== 2) return 'slope';
  return 'exact';
}

/** The worst differences seen, per equality (checked against the bounds at the end of the file). */
const worst = { hillshade: 0, slope: 0, u8Off: 0, cells: 0 };

/** Both paths; the first difference beyond the bound, or undefined. Throws when the wasm path did not run. */
async function compare(
  fn: RasterFunction,
  args: Record<string, unknown>,
  info: RasterInfo,
  z: Plane,
  mask: Uint8Array | undefined,
  tileSize: number,
  to?: PixelType,
): Promise<string | undefined> {
  const ts = await run(fn, args, info, z, mask, tileSize, false, to);
  const before = wasmCallCount();
  const wa = await run(fn, args, info, z, mask, tileSize, true, to);
  expect(wasmCallCount(), `${fn.name} ran in wasm`).toBeGreaterThan(before);
  expect(wa.band.constructor).toBe(ts.band.constructor);
  const eq = equalityOf(fn, args);
  // U8 hillshade: the unrounded TypeScript shade tells where a truncation may fall either side.
  const shade =
    eq === 'hillshade' && ts.band instanceof Uint8Array ? (await run(fn, args, info, z, mask, tileSize, false, 'F32')).band : undefined;
  const at = (i: number, why: string): string =>
    `${fn.name} ${JSON.stringify(args)}: at ${i} TS ${ts.band[i]}, wasm ${wa.band[i]} (${why})`;
  for (let i = 0; i < ts.band.length; i++) {
    if (ts.mask[i] !== wa.mask[i]) return `${fn.name} ${JSON.stringify(args)}: mask differs at ${i}`;
    const a = ts.band[i]!;
    const b = wa.band[i]!;
    if (Object.is(a, b)) continue;
    if (eq === 'exact' || Number.isNaN(a) || Number.isNaN(b)) return at(i, 'not the same bits');
    const d = Math.abs(a - b);
    worst.cells++;
    if (eq === 'slope') {
      worst.slope = Math.max(worst.slope, d / Math.abs(a));
      if (d > SLOPE_REL * Math.abs(a)) return at(i, `beyond ${SLOPE_REL} relative`);
    } else if (shade === undefined) {
      worst.hillshade = Math.max(worst.hillshade, d);
      if (d > HILLSHADE_ABS) return at(i, `beyond ${HILLSHADE_ABS}`);
    } else {
      const s = shade[i]!;
      const nearInteger = Math.abs(s - Math.round(s)) <= HILLSHADE_ABS;
      worst.u8Off++;
      if (d !== 1 || !nearInteger) return at(i, `U8 off where the shade ${s} is not within ${HILLSHADE_ABS} of an integer`);
    }
  }
  return undefined;
}

const FUNCTIONS: Record<string, RasterFunction> = { slope, hillshade, aspect, curvature };

/** The suite also runs with RASTERFLOW_SIMD=0 (every golden both ways): then only the switch itself is tested here. */
const off = process.env.RASTERFLOW_SIMD === '0';

describe.skipIf(off)('wasm terrain kernels', () => {
  it('are loaded (the test script builds them)', () => {
    expect(wasmStatus()).toMatchObject({ enabled: true });
  });

  describe('equal the TypeScript kernels on the golden DEMs (in their own pixel types)', () => {
    interface Case {
      readonly id: string;
      readonly rule: { readonly rasterFunction: string; readonly rasterFunctionArguments: Record<string, unknown> };
      readonly inputs: readonly string[];
    }
    const cases = (JSON.parse(readFileSync(resolve(ROOT, 'golden/terrain/cases.json'), 'utf8')) as Case[]).filter(
      (c) => FUNCTIONS[c.rule.rasterFunction.toLowerCase()] !== undefined,
    );
    it('has cases, curvature among them', () => {
      expect(cases.length).toBeGreaterThan(10);
      expect(cases.some((c) => c.rule.rasterFunction.toLowerCase() === 'curvature')).toBe(true);
    });
    for (const c of cases) {
      it(c.id, async () => {
        const tiff = await fromFile(resolve(ROOT, c.inputs[0]!));
        const image = await tiff.getImage();
        const [band] = (await image.readRasters()) as unknown as Plane[];
        const width = image.getWidth();
        const height = image.getHeight();
        const [xmin, ymin, xmax, ymax] = image.getBoundingBox() as [number, number, number, number];
        const keys = image.getGeoKeys() as Record<string, number> | null;
        const geographic = keys?.GTModelTypeGeoKey === 2;
        const noData = image.getGDALNoData() ?? undefined;
        const pixelType: PixelType =
          band instanceof Float32Array ? 'F32' : band instanceof Int16Array ? 'S16' : band instanceof Uint8Array ? 'U8' : 'F64';
        const info: RasterInfo = {
          width,
          height,
          bandCount: 1,
          pixelType,
          ...(noData === undefined ? {} : { noData }),
          extent: { xmin, ymin, xmax, ymax },
          cellSize: { x: (xmax - xmin) / width, y: (ymax - ymin) / height },
          spatialReference: geographic ? { wkid: 4326, geographic: true } : { wkid: 32616, metersPerUnit: 1 },
        };
        const fn = FUNCTIONS[c.rule.rasterFunction.toLowerCase()]!;
        for (const tile of [128, 61]) {
          expect(await compare(fn, c.rule.rasterFunctionArguments, info, band!, undefined, tile)).toBeUndefined();
        }
      });
    }
  });

  it('equal the TypeScript kernels on outputs reaching past the raster on every side (pixels outside are NoData)', async () => {
    const width = 53;
    const height = 41;
    const rnd = prng(2611);
    const z = new Float32Array(width * height).map((_, i) => 100 + 30 * Math.sin(i / 7) + rnd());
    const info = gridInfo({ width, height, cellSize: 30, origin: { x: 500000, y: 4000000 } });
    const rects = [
      { x: -20, y: 0, width: 40, height: 30 },
      { x: 30, y: 5, width: 40, height: 30 },
      { x: 5, y: -15, width: 30, height: 30 },
      { x: 5, y: 30, width: 30, height: 30 },
      { x: -7, y: -7, width: 70, height: 60 },
    ];
    for (const [fn, args] of [
      [hillshade, {}],
      [slope, { SlopeType: 2 }],
      [aspect, {}],
      [curvature, { CurvatureType: 'standard' }],
    ] as const) {
      for (const rect of rects) {
        const outOf = async (wasm: boolean): Promise<{ band: Plane; mask: Uint8Array }> => {
          setWasmEnabled(wasm);
          try {
            const out = await render(applyFunction(fn, args, [memorySource('dem', info, [z], undefined)]), { tileSize: 16, rect });
            return { band: out.bands[0]!, mask: out.mask };
          } finally {
            setWasmEnabled(true);
          }
        };
        const ts = await outOf(false);
        const wa = await outOf(true);
        const where = `${fn.name} over ${JSON.stringify(rect)}`;
        expect(Array.from(wa.mask), where).toEqual(Array.from(ts.mask));
        expect(
          ts.mask.some((m) => m === 0),
          `${where}: cells outside the raster are NoData`,
        ).toBe(true);
        for (let i = 0; i < ts.band.length; i++) {
          if (ts.mask[i] === 0) continue;
          const d = Math.abs(ts.band[i]! - wa.band[i]!);
          expect(fn === hillshade ? d <= HILLSHADE_ABS : d === 0, `${where} at ${i}`).toBe(true);
        }
      }
    }
  });

  it('compute a run of plain rows in one call, stopping at NoData rows and cells; per row where each row has factors of its own', async () => {
    const width = 300;
    const height = 200;
    const rnd = prng(2127);
    const z = new Float32Array(width * height).map((_, i) => 500 + 40 * Math.sin(i / 9) + 25 * Math.cos(i / 301) + rnd());
    const mask = new Uint8Array(width * height).fill(1);
    mask.fill(0, 50 * width, 52 * width); // two whole rows
    mask[120 * width + 150] = 0; // one cell, in the first tile only
    for (const geographic of [false, true]) {
      const info = gridInfo({
        width,
        height,
        cellSize: geographic ? 1 / 1200 : 30,
        geographic,
        origin: geographic ? { x: -84, y: 45 } : { x: 500000, y: 4000000 },
      });
      for (const [fn, args] of [
        [hillshade, {}],
        [hillshade, { HillshadeType: 1 }],
        [slope, { SlopeType: 1 }],
        [slope, { SlopeType: 2 }],
        [aspect, {}],
      ] as const) {
        const before = wasmSpanCallCount();
        expect(await compare(fn, args, info, z, mask, 256)).toBeUndefined();
        const spans = wasmSpanCallCount() - before;
        // Two tiles of 200 rows: per row, about 400 calls; in runs, one per stretch of plain rows
        // and one per other row (the raster's first and last, the rows around the NoData).
        if (geographic)
          expect(spans, `${fn.name} geographic`).toBeGreaterThan(350); // rows by NoData may have no span
        else expect(spans, fn.name).toBeLessThan(30);
      }
    }
  });

  it('equal the TypeScript kernels on random rasters (NaN, NoData, edges, terraces, every parameter family)', async () => {
    const rnd = prng(2100);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    let compared = 0;
    for (let trial = 0; trial < 60; trial++) {
      const width = 1 + Math.floor(rnd() * 70);
      const height = 1 + Math.floor(rnd() * 50);
      const n = width * height;
      const style = trial % 4; // 0 smooth, 1 terraces, 2 sparse NoData, 3 NaN/Infinity values and NoData
      const z = new Float32Array(n);
      const scale = pick([1, 1000, 1e-3, 5e6, 1e30]);
      for (let i = 0; i < n; i++) {
        const x = i % width;
        const y = Math.floor(i / width);
        z[i] = style === 1 ? Math.round(rnd() * 2) : scale * (Math.sin(x / 7) + Math.cos(y / 5) + 0.1 * rnd());
      }
      let mask: Uint8Array | undefined;
      if (style >= 2) {
        mask = new Uint8Array(n).fill(1);
        const holes = 1 + Math.floor(rnd() * 4);
        for (let k = 0; k < holes; k++) mask[Math.floor(rnd() * n)] = 0;
      }
      if (style === 3) for (let k = 0; k < 3; k++) z[Math.floor(rnd() * n)] = pick([Number.NaN, Infinity, -Infinity]);
      const geographic = rnd() < 0.3;
      const info = gridInfo({
        width,
        height,
        cellSize: geographic ? 1 / 1200 : pick([1, 10, 30.5]),
        geographic,
        origin: geographic ? { x: -84, y: pick([37, 70, -45]) } : { x: 0, y: 0 },
      });
      const common = {
        RemoveEdgeEffect: rnd() < 0.5,
        ZFactor: pick([1, 0.3048, 2.5, 0.00001]),
        GeographicCellSize: pick(['Geodesic', 'Vendor111000']),
      };
      const tile = pick([16, 23, 64, 256]);
      const cases: [RasterFunction, Record<string, unknown>, PixelType?][] = [
        [slope, { ...common, SlopeType: pick([1, 2, 3]) }],
        [slope, { ...common, SlopeType: 2 }, 'F64'],
        [aspect, { ...common }, pick([undefined, 'F64'] as const)],
        [
          hillshade,
          { ...common, HillshadeType: 0, Azimuth: pick([315, 0, 90, 200.5]), Altitude: pick([45, 0, 90, 12]), SlopeType: pick([1, 3]) },
          pick([undefined, 'F32'] as const),
        ],
        [hillshade, { ...common, HillshadeType: 1 }, pick([undefined, 'F32'] as const)],
        [
          curvature,
          { RemoveEdgeEffect: common.RemoveEdgeEffect, ZFactor: common.ZFactor, Type: pick([0, 1, 2]) },
          pick([undefined, 'F64'] as const),
        ],
      ];
      for (const [fn, args, to] of cases) {
        expect(await compare(fn, args, info, z, mask, tile, to)).toBeUndefined();
        compared++;
      }
    }
    expect(compared).toBe(360);
  });

  it('equal the TypeScript kernels on every DEM plane type (the lanes converted in wasm)', async () => {
    const rnd = prng(2201);
    const types: [PixelType, number, number][] = [
      ['U8', 0, 255],
      ['S8', -128, 127],
      ['U16', 0, 65535],
      ['S16', -32768, 32767],
      ['U32', 0, 4294967295],
      ['S32', -2147483648, 2147483647],
      ['F64', -1e6, 1e6],
      ['F32', -9000, 9000],
    ];
    for (const [pixelType, lo, hi] of types) {
      for (const width of [5, 6, 7, 8, 37]) {
        const height = 9;
        const n = width * height;
        const info = gridInfo({ width, height, pixelType, cellSize: 30 });
        const array = {
          U8: Uint8Array,
          S8: Int8Array,
          U16: Uint16Array,
          S16: Int16Array,
          U32: Uint32Array,
          S32: Int32Array,
          F64: Float64Array,
          F32: Float32Array,
        }[pixelType as 'U8'];
        const z = new array(n);
        // Extremes, a smooth surface across the whole range and plateaus (flat cells).
        for (let i = 0; i < n; i++) {
          const x = i % width;
          const y = Math.floor(i / width);
          const t = 0.5 + 0.5 * Math.sin(x / 3 + y / 4);
          z[i] = i % 17 === 0 ? (rnd() < 0.5 ? lo : hi) : x > width - 3 ? lo + 7 : Math.round(lo + (hi - lo) * t);
        }
        const mask = Uint8Array.from({ length: n }, () => (rnd() < 0.05 ? 0 : 1));
        for (const [fn, args, to] of [
          [slope, { SlopeType: 1 }],
          [slope, { SlopeType: 2 }],
          [aspect, {}],
          [hillshade, {}],
          [hillshade, { HillshadeType: 1 }, 'F32'],
          [curvature, { Type: 1 }],
          [curvature, { Type: 2 }, 'F64'],
        ] as [RasterFunction, Record<string, unknown>, PixelType?][]) {
          expect(await compare(fn, args, info, z as Plane, mask, 16, to), `${pixelType} ${width}`).toBeUndefined();
        }
      }
    }
  });

  it('stay within the stated bounds on a large surface; the worst differences seen are well inside them', async () => {
    // Gentle and steep slopes, every aspect: Gaussian bumps on a plane (the bench's kind of DEM).
    const W = 301;
    const H = 203;
    const z = new Float32Array(W * H);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const r2 = ((x - 150) ** 2 + (y - 100) ** 2) / 900;
        z[y * W + x] = 200 + 0.01 * x + 0.02 * y + 600 * Math.exp(-r2) - 300 * Math.exp(-(((x - 60) ** 2 + (y - 50) ** 2) / 200));
      }
    }
    const info = gridInfo({ width: W, height: H, cellSize: 10 });
    for (const [fn, args, to] of [
      [hillshade, {}, 'F32'],
      [hillshade, {}],
      [hillshade, { HillshadeType: 1 }, 'F32'],
      [hillshade, { Altitude: 5, Azimuth: 100 }, 'F32'],
      [slope, {}],
      [slope, { ZFactor: 1000 }],
    ] as [RasterFunction, Record<string, unknown>, PixelType?][]) {
      expect(await compare(fn, args, info, z, undefined, 256, to)).toBeUndefined();
    }
    expect(worst.cells).toBeGreaterThan(0); // the f32 stage did differ somewhere: the bounds were exercised
    expect(worst.hillshade).toBeLessThan(HILLSHADE_ABS / 2);
    expect(worst.slope).toBeLessThan(SLOPE_REL / 4);
  });

  it('compute a gradient beyond the f32 range exactly (|g| > 1.8e19: the f64 formula)', async () => {
    const W = 11;
    const H = 7;
    const z = Float32Array.from({ length: W * H }, (_, i) => (i % W) * 3e36 + Math.floor(i / W) * 1e35);
    const info = gridInfo({ width: W, height: H, cellSize: 1 });
    for (const [fn, args] of [
      [hillshade, {}],
      [hillshade, { HillshadeType: 1 }],
      [slope, {}],
    ] as [RasterFunction, Record<string, unknown>][]) {
      const ts = await run(fn, args, info, z, undefined, 64, false, 'F32');
      const wa = await run(fn, args, info, z, undefined, 64, true, 'F32');
      expect(Array.from(wa.band)).toEqual(Array.from(ts.band));
      expect(Array.from(ts.band).some((v) => v > 0)).toBe(true);
    }
    // An S16 DEM (the integer lanes) with a z-factor that takes its gradients there.
    const W16 = 23;
    const z16 = Int16Array.from({ length: W16 * H }, (_, i) => ((i % W16) * 1400 - 16000 + Math.floor(i / W16) * 300) | 0);
    const info16 = gridInfo({ width: W16, height: H, cellSize: 1, pixelType: 'S16' });
    for (const ZFactor of [1e17, 1]) {
      const ts = await run(slope, { ZFactor }, info16, z16, undefined, 64, false);
      const before = wasmCallCount();
      const wa = await run(slope, { ZFactor }, info16, z16, undefined, 64, true);
      expect(wasmCallCount()).toBeGreaterThan(before);
      if (ZFactor > 1) expect(Array.from(wa.band)).toEqual(Array.from(ts.band));
      else expect(await compare(slope, { ZFactor }, info16, z16, undefined, 64)).toBeUndefined();
    }
  });

  it('fall back to TypeScript for what they do not take (F64 Hillshade and Slope in degrees, U16 Hillshade)', async () => {
    const f32 = gridInfo({ width: 20, height: 20, cellSize: 10 });
    const z = Float32Array.from({ length: 400 }, (_, i) => (i * 37) % 101);
    const before = wasmCallCount();
    await render(applyFunction(slope, {}, [memorySource('f32', f32, [z])], 'F64'), { tileSize: 64 });
    await render(applyFunction(hillshade, {}, [memorySource('f32', f32, [z])], 'F64'), { tileSize: 64 });
    await render(applyFunction(hillshade, {}, [memorySource('f32', f32, [z])], 'U16'), { tileSize: 64 });
    expect(wasmCallCount()).toBe(before);
  });

  it('give the raster edge the inner neighbour bit for bit (vendor rule: edge columns and rows copy the inner ones)', async () => {
    const rnd = prng(2303);
    let checked = 0;
    for (let trial = 0; trial < 24; trial++) {
      const width = 3 + Math.floor(rnd() * 60);
      const height = 3 + Math.floor(rnd() * 40);
      const n = width * height;
      const scale = [1, 1000, 1e-3, 5e6][trial % 4]!;
      const z = Float32Array.from({ length: n }, (_, i) => scale * (Math.sin((i % width) / 7) + Math.cos(i / width / 5) + 0.3 * rnd()));
      const mask = trial % 3 === 0 ? undefined : new Uint8Array(n).fill(1);
      if (mask) for (let k = 0; k < 3; k++) mask[Math.floor(rnd() * n)] = 0;
      const geographic = trial % 5 === 0;
      const info = gridInfo({
        width,
        height,
        cellSize: geographic ? 1 / 1200 : 10,
        geographic,
        origin: { x: -84, y: geographic ? 50 : 0 },
      });
      const cases: [RasterFunction, Record<string, unknown>, PixelType?][] = [
        [hillshade, { Azimuth: 200.5, Altitude: 30 }],
        [hillshade, {}, 'F32'],
        [hillshade, { HillshadeType: 1 }, 'F32'],
        [slope, {}],
        [slope, { SlopeType: 2 }],
        [aspect, {}],
        [curvature, { Type: 1 }],
      ];
      for (const [fn, args, to] of cases) {
        const before = wasmCallCount();
        const { band, mask: m } = await run(fn, args, info, z, mask, [16, 64][trial % 2]!, true, to);
        expect(wasmCallCount()).toBeGreaterThan(before);
        const same = (i: number, j: number, what: string): void => {
          if (m[i] === 0 || m[j] === 0) return;
          expect(Object.is(band[i], band[j]) || (Number.isNaN(band[i]) && Number.isNaN(band[j])), `${fn.name} ${what}`).toBe(true);
          checked++;
        };
        for (let y = 0; y < height; y++) {
          same(y * width, y * width + 1, `row ${y} column 0`);
          same(y * width + width - 1, y * width + width - 2, `row ${y} last column`);
        }
        for (let x = 0; x < width; x++) {
          same(x, width + x, `column ${x} row 0`);
          same((height - 1) * width + x, (height - 2) * width + x, `column ${x} last row`);
        }
      }
    }
    expect(checked).toBeGreaterThan(10000);
  });

  it("scan mask rows as the window reader's TypeScript scan does (terrainMaskRows: any zero byte in the range, any offset and tail)", () => {
    const k = wasmKernels()!;
    const x = k.exports as unknown as TerrainExports;
    const rnd = prng(2302);
    for (let trial = 0; trial < 300; trial++) {
      const stride = 1 + Math.floor(rnd() * 90);
      const rows = 1 + Math.floor(rnd() * 12);
      const from = Math.floor(rnd() * stride);
      const n = Math.floor(rnd() * (stride - from + 1));
      const at = k.arena.alloc(stride * rows + 1)!;
      const flagsAt = k.arena.alloc(rows)!;
      try {
        // Nonzero bytes of any value are valid (a mask byte is 0 or not); zeros at random places, in or out of the range.
        const mask = new Uint8Array(k.arena.buffer, at, stride * rows);
        for (let i = 0; i < mask.length; i++) mask[i] = rnd() < 0.02 ? 0 : 1 + Math.floor(rnd() * 255);
        new Uint8Array(k.arena.buffer, flagsAt, rows).fill(7);
        x.terrainMaskRows(at, stride, rows, from, n, flagsAt);
        const flags = new Uint8Array(k.arena.buffer, flagsAt, rows);
        for (let r = 0; r < rows; r++) {
          const row = mask.subarray(r * stride + from, r * stride + from + n);
          expect(flags[r], `trial ${trial} row ${r}`).toBe(row.includes(0) ? 0 : 1);
        }
      } finally {
        k.arena.release(at);
        k.arena.release(flagsAt);
      }
    }
  });
});

describe('RASTERFLOW_SIMD=0', () => {
  it('switches the wasm terrain kernels off (the TypeScript path runs)', async () => {
    vi.stubEnv('RASTERFLOW_SIMD', '0');
    vi.resetModules();
    try {
      const m = await import('./module.js');
      const t = await import('./terrain.js');
      const s = await import('../functions/terrain/slope.js');
      expect(m.wasmStatus()).toEqual({ enabled: false, detail: 'switched off (RASTERFLOW_SIMD=0)' });
      const info = gridInfo({ width: 40, height: 30, cellSize: 10 });
      const z = Float32Array.from({ length: 1200 }, (_, i) => Math.sin(i / 9) * 50);
      const out = await render(applyFunction(s.slope, {}, [memorySource('off', info, [z])]), { tileSize: 64 });
      expect(t.wasmCallCount()).toBe(0);
      expect(out.mask.some((v) => v === 1)).toBe(true);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

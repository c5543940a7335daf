// Expected values derived by hand from the formula (r1 op r2, band-wise, stored as F32), not from our output.
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import { render } from '../../graph/render.js';
import { createRegistry, type RasterNode, type SourceNode } from '../../graph/types.js';
import { buildGraph } from '../../rule/build.js';
import {
  applyFunction,
  catchError,
  constant,
  gridInfo,
  rasterOf,
  runFunction,
  tiledVersusWhole,
  type Result,
} from '../../../test/helpers.js';
import { arithmetic } from './arithmetic.js';
import { timeSeriesMultidim } from '../../core/multidim.js';

const W = 3;
const H = 2;
//                 (0,0) (1,0) (2,0) (0,1) (1,1) (2,1)
const A = [4, -7, 0, 9, 2.5, -8];
const B = [2, 3, 0, -2, 0.5, 3];
const r1 = () => rasterOf({ width: W, height: H }, (x, y) => A[y * W + x]!);
const r2 = () => rasterOf({ width: W, height: H }, (x, y) => B[y * W + x]!);

/** Band `b` of a result, row-major, with null for NoData. */
function pixels(res: Result, b = 0): (number | null)[] {
  const out: (number | null)[] = [];
  for (let y = 0; y < res.info.height; y++) {
    for (let x = 0; x < res.info.width; x++) out.push(res.valid(x, y) ? res.value(x, y, b) : null);
  }
  return out;
}

// The raw arguments name Raster2 (it is required); the helpers bind the inputs in schema order.
const run = (raw: Record<string, unknown>, inputs: readonly RasterNode[]) => runFunction(arithmetic, { Raster2: '$2', ...raw }, inputs);
const apply = (raw: Record<string, unknown>, inputs: readonly RasterNode[]) => applyFunction(arithmetic, { Raster2: '$2', ...raw }, inputs);

const f32 = (v: (number | null)[]): (number | null)[] => v.map((x) => (x === null ? null : Math.fround(x)));

describe('Arithmetic', () => {
  // 0 op 0 at pixel 2 is NoData for Divide (0/0) and Mode (0 mod 0), so it is NoData in the
  // whole pixel; 0^0 = 1.
  const cases: [string, number, (number | null)[]][] = [
    ['Plus', 1, [6, -4, 0, 7, 3, -5]],
    ['Minus', 2, [2, -10, 0, 11, 2, -11]],
    ['Multiply', 3, [8, -21, 0, -18, 1.25, -24]],
    ['Divide', 4, [2, -7 / 3, null, -4.5, 5, -8 / 3]],
    ['Power', 5, [16, -343, 1, 1 / 81, Math.sqrt(2.5), -512]],
    // -7 - 3*trunc(-7/3) = -7 + 6 = -1; 9 - (-2)*trunc(-4.5) = 9 - 8 = 1; -8 - 3*trunc(-8/3) = -2.
    ['Mode', 6, [0, -1, null, 1, 0, -2]],
  ];

  it.each(cases)('%s (Operation %i) on two rasters', async (_name, op, expected) => {
    const res = await run({ Operation: op }, [r1(), r2()]);
    expect(pixels(res)).toEqual(f32(expected));
  });

  it('accepts the operation by name', async () => {
    const res = await run({ Operation: 'multiply' }, [r1(), r2()]);
    expect(pixels(res)).toEqual([8, -21, 0, -18, 1.25, -24]);
  });

  it('defaults to Plus', async () => {
    const res = await run({}, [r1(), r2()]);
    expect(pixels(res)).toEqual([6, -4, 0, 7, 3, -5]);
  });

  it('output is F32 with NoData NaN, the first raster grid, and no statistics', async () => {
    const info: RasterInfo = {
      ...gridInfo({ width: W, height: H, pixelType: 'U8', noData: 255 }),
      bandNames: ['a'],
      statistics: [{ min: 0, max: 9 }],
    };
    const src = memorySource('u8', info, [Uint8Array.from([1, 2, 3, 4, 5, 6])]);
    const res = await run({ Operation: 3 }, [src, constant([2])]);
    expect(res.info.pixelType).toBe('F32');
    expect(res.block.bands[0]).toBeInstanceOf(Float32Array);
    expect(res.info.noData).toBeNaN();
    expect(res.info.extent).toEqual(info.extent);
    expect(res.info.bandNames).toEqual(['a']);
    expect(res.info.statistics).toBeUndefined();
    expect(res.info.constant).toBeUndefined();
    expect(pixels(res)).toEqual([2, 4, 6, 8, 10, 12]);
  });

  describe('edge cases', () => {
    const pair = (a: number[], b: number[]) => [
      rasterOf({ width: a.length, height: 1 }, (x) => a[x]!),
      rasterOf({ width: b.length, height: 1 }, (x) => b[x]!),
    ];

    it('divide by zero and 0/0 are NoData (NaN written), other pixels unaffected', async () => {
      const res = await run({ Operation: 4 }, pair([5, -5, 0, 6], [0, 0, 0, 4]));
      expect(pixels(res)).toEqual([null, null, null, 1.5]);
      expect(Array.from(res.block.bands[0]!.subarray(0, 3))).toEqual([NaN, NaN, NaN]);
    });

    it('a negative base with a non-integer power is NoData; with an integer power it is not', async () => {
      const res = await run({ Operation: 5 }, pair([-8, -8, -2, 0, 0, 4], [1 / 3, 2, -1, -1, 0, 0.5]));
      // (-8)^(1/3) NaN; (-8)^2 = 64; (-2)^-1 = -0.5; 0^-1 = Infinity; 0^0 = 1; 4^0.5 = 2.
      expect(pixels(res)).toEqual([null, 64, -0.5, null, 1, 2]);
    });

    it('Mode follows the sign of r1 and is NoData when r2 is 0', async () => {
      const res = await run({ Operation: 6 }, pair([5.5, -5.5, 5.5, -5.5, 7, 3, -4], [2, 2, -2, -2, 0, 7, 2]));
      // 5.5 - 2*trunc(2.75) = 1.5; -5.5 - 2*trunc(-2.75) = -1.5; 5.5 - (-2)*trunc(-2.75) = 1.5;
      // -5.5 - (-2)*trunc(2.75) = -1.5; 7 mod 0 NoData; 3 - 7*trunc(3/7) = 3; -4 - 2*(-2) = 0 (not -0).
      const got = pixels(res);
      expect(got).toEqual([1.5, -1.5, 1.5, -1.5, null, 3, 0]);
      expect(Object.is(got[6], 0)).toBe(true);
    });

    it('results past the F32 range are NoData', async () => {
      const res = await run({ Operation: 3 }, pair([1e30, -1e30, 1e19], [1e30, 1e30, 1e19]));
      expect(pixels(res)).toEqual([null, null, Math.fround(1e38)]);
    });

    it('NaN input pixels are NoData even without a NoData value (NaN^0 would be 1)', async () => {
      const res = await run({ Operation: 5 }, pair([NaN, 2], [0, 0]));
      expect(pixels(res)).toEqual([null, 1]);
    });
    it('a block of several scratch strips (4096 pixels each) gives the formula at every pixel, NaN and NoData in each strip', async () => {
      const w = 150;
      const h = 70; // 10,500 pixels: three strips, the last one partial
      const mask = new Uint8Array(w * h).fill(1);
      for (const i of [5, 4100, 9000]) mask[i] = 0;
      const nanAt = new Set([17, 4096, 10_499]);
      const a = (x: number, y: number) => (nanAt.has(y * w + x) ? NaN : ((x * 7 + y * 3) % 23) - 9.5);
      const b = (x: number, y: number) => ((x + 2 * y) % 5) - 1;
      const ra = rasterOf({ width: w, height: h, pixelType: 'F32' }, a, mask);
      const rb = rasterOf({ width: w, height: h, pixelType: 'F32' }, b);
      const ops: [number, (x: number, y: number) => number][] = [
        [1, (x, y) => x + y],
        [4, (x, y) => x / y],
        [5, (x, y) => Math.pow(x, y)],
        [6, (x, y) => (x % y) + 0],
      ];
      for (const [op, f] of ops) {
        const res = await run({ Operation: op }, [ra, rb]);
        const want: (number | null)[] = [];
        for (let y = 0; y < h; y++)
          for (let x = 0; x < w; x++) {
            const v = Math.fround(f(Math.fround(a(x, y)), b(x, y)));
            want.push(mask[y * w + x] === 0 || !Number.isFinite(v) ? null : v);
          }
        expect(pixels(res), `Operation ${op}`).toEqual(want);
      }
      // A NaN constant makes every pixel NoData, in every strip.
      const res = await run({ Operation: 3 }, [ra, constant([NaN])]);
      expect(pixels(res).every((v) => v === null)).toBe(true);
    });
  });

  describe('scalar operands', () => {
    it('a one-value constant as Raster2 applies to every band', async () => {
      const three = rasterOf({ width: 2, height: 1, bandCount: 3 }, (x, _y, b) => 10 * b + x);
      const res = await run({ Operation: 2 }, [three, constant([1])]);
      expect(res.info.bandCount).toBe(3);
      expect([0, 1, 2].map((b) => pixels(res, b))).toEqual([
        [-1, 0],
        [9, 10],
        [19, 20],
      ]);
    });

    it('a constant with one value per band applies band by band', async () => {
      const three = rasterOf({ width: 2, height: 1, bandCount: 3 }, (x, _y, b) => 10 * b + x);
      const res = await run({ Operation: 3 }, [three, constant([1, 2, 3])]);
      expect([0, 1, 2].map((b) => pixels(res, b))).toEqual([
        [0, 1],
        [20, 22],
        [60, 63],
      ]);
    });

    it('a constant as the first operand takes the grid from Raster2', async () => {
      const r = rasterOf({ width: 2, height: 1, cellSize: 30, origin: { x: 500, y: 900 } }, (x) => x + 1);
      const res = await run({ Operation: 4 }, [constant([6]), r]);
      expect(pixels(res)).toEqual([6, 3]);
      expect(res.info.width).toBe(2);
      expect(res.info.cellSize).toEqual({ x: 30, y: 30 });
      expect(res.info.extent.xmin).toBe(500);
    });

    it('a single-band raster and a 3-value constant give 3 bands', async () => {
      const one = rasterOf({ width: 2, height: 1 }, (x) => x + 1);
      const res = await run({ Operation: 1 }, [one, constant([10, 20, 30])]);
      expect(res.info.bandCount).toBe(3);
      expect([0, 1, 2].map((b) => pixels(res, b))).toEqual([
        [11, 12],
        [21, 22],
        [31, 32],
      ]);
    });

    // The builder (src/rule/build.ts) turns wire numbers, arrays and space-delimited strings into
    // constant sources; these run the whole path from rule JSON.
    const registry = createRegistry([arithmetic]);
    const three = () => rasterOf({ width: 2, height: 1, bandCount: 3 }, (x, _y, b) => 10 * b + x);
    const build = async (raster2: unknown, op = 1) => {
      const src = three() as SourceNode; // rasterOf builds a memory source
      const { root } = await buildGraph(
        { rasterFunction: 'Arithmetic', rasterFunctionArguments: { Raster: '$$', Raster2: raster2, Operation: op } },
        { registry, resolveSource: () => Promise.resolve(src) },
      );
      const block = await render(root);
      return [0, 1, 2].map((b) => Array.from(block.bands[b]!));
    };

    it.each([
      [
        'a number',
        5,
        [
          [5, 6],
          [15, 16],
          [25, 26],
        ],
      ],
      [
        'a numeric string',
        '5',
        [
          [5, 6],
          [15, 16],
          [25, 26],
        ],
      ],
      [
        'an array',
        [1, 2, 3],
        [
          [1, 2],
          [12, 13],
          [23, 24],
        ],
      ],
      [
        'a space-delimited string',
        '1 2 3',
        [
          [1, 2],
          [12, 13],
          [23, 24],
        ],
      ],
      [
        'a one-element array',
        [100],
        [
          [100, 101],
          [110, 111],
          [120, 121],
        ],
      ],
    ])('Raster2 as %s, through the rule builder', async (_what, raster2, expected) => {
      expect(await build(raster2)).toEqual(expected);
    });

    it('a constant of the wrong length is rejected through the builder with the argument path', async () => {
      const err = await build('1 2').then(
        () => undefined,
        (e: unknown) => e as { code: string; path: string },
      );
      expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Raster2' });
    });
  });

  describe('broadcasting', () => {
    const three = () => rasterOf({ width: 2, height: 1, bandCount: 3 }, (x, _y, b) => 10 * (b + 1) + x);
    const one = () => rasterOf({ width: 2, height: 1 }, (x) => x + 1);

    it('a single-band Raster2 is broadcast to every band of Raster', async () => {
      const res = await run({ Operation: 2 }, [three(), one()]);
      expect(res.info.bandCount).toBe(3);
      // band b: (10(b+1) + x) - (x + 1)
      expect([0, 1, 2].map((b) => pixels(res, b))).toEqual([
        [9, 9],
        [19, 19],
        [29, 29],
      ]);
    });

    it('a single-band Raster is broadcast to every band of Raster2', async () => {
      const res = await run({ Operation: 2 }, [one(), three()]);
      expect([0, 1, 2].map((b) => pixels(res, b))).toEqual([
        [-9, -9],
        [-19, -19],
        [-29, -29],
      ]);
    });

    it('equal band counts pair band by band', async () => {
      const res = await run({ Operation: 1 }, [three(), three()]);
      expect([0, 1, 2].map((b) => pixels(res, b))).toEqual([
        [20, 22],
        [40, 42],
        [60, 62],
      ]);
    });
  });

  describe('NoData', () => {
    it('a pixel NoData in either raster is NoData in every output band, written as NaN', async () => {
      const a = rasterOf({ width: 3, height: 1, bandCount: 2 }, (x) => x + 1, Uint8Array.from([1, 0, 1]));
      const b = rasterOf({ width: 3, height: 1, noData: 30 }, (x) => 10 * (x + 1));
      const res = await run({ Operation: 1 }, [a, b]);
      expect(pixels(res, 0)).toEqual([11, null, null]);
      expect(pixels(res, 1)).toEqual([11, null, null]);
      expect(Array.from(res.block.bands[1]!)).toEqual([11, NaN, NaN]);
    });

    it('a bad result in one band makes the pixel NoData in all bands (one mask per block)', async () => {
      const a = rasterOf({ width: 2, height: 1, bandCount: 2 }, () => 6);
      const res = await run({ Operation: 4 }, [a, constant([2, 0])]);
      expect(pixels(res, 0)).toEqual([null, null]);
      expect(pixels(res, 1)).toEqual([null, null]);
    });
  });

  describe('grid options', () => {
    it.each([0, 1, 2, 3])('ExtentType %i gives the same result on a shared grid', async (t) => {
      const res = await run({ ExtentType: t, Operation: 1 }, [r1(), r2()]);
      expect(pixels(res)).toEqual([6, -4, 0, 7, 3, -5]);
    });

    it.each([0, 1, 2, 3, 4])('CellsizeType %i gives the same result on a shared grid', async (t) => {
      const res = await run({ CellsizeType: t, MatchVariable: false, UnionDimension: false }, [r1(), r2()]);
      expect(pixels(res)).toEqual([6, -4, 0, 7, 3, -5]);
    });
  });

  describe('across grids (ExtentType, CellsizeType; inputs aligned by the engine)', () => {
    // r1: 3 x 2 cells of 1 at x 0..3, y -2..0. other(x, y) = 10 (x + 1) + y, F32 (bilinear).
    const shifted = () => rasterOf({ width: W, height: H, origin: { x: 1, y: 0 } }, (x, y) => 10 * (x + 1) + y);

    it('FirstOf: the first grid; the other operand is NoData outside its extent', async () => {
      const res = await run({}, [r1(), shifted()]);
      expect(res.node.inputs[0]!.id.startsWith('Align(')).toBe(false);
      expect(res.node.inputs[1]!.id.startsWith('Align(')).toBe(true);
      // column 0 lies west of the shifted raster; columns 1, 2 see its columns 0, 1 (exact centres).
      expect(pixels(res)).toEqual(f32([null, -7 + 10, 0 + 20, null, 2.5 + 11, -8 + 21]));
    });

    it('UnionOf: 4 columns, each operand NoData where it does not reach', async () => {
      const res = await run({ ExtentType: 'UnionOf' }, [r1(), shifted()]);
      expect([res.info.width, res.info.height, res.info.extent.xmax]).toEqual([4, 2, 4]);
      expect(pixels(res)).toEqual(f32([null, 3, 20, null, null, 13.5, 13, null]));
    });

    it('IntersectionOf and LastOf: the overlap, and the second raster’s extent', async () => {
      const inter = await run({ ExtentType: 1 }, [r1(), shifted()]);
      expect([inter.info.width, inter.info.extent.xmin]).toEqual([2, 1]);
      expect(pixels(inter)).toEqual(f32([3, 20, 13.5, 13]));
      const last = await run({ ExtentType: 3 }, [r1(), shifted()]);
      expect([last.info.width, last.info.extent.xmin, last.info.extent.xmax]).toEqual([3, 1, 4]);
      expect(pixels(last)).toEqual(f32([3, 20, null, 13.5, 13, null]));
    });

    it('MinOf cell size: bilinear upsampling of the coarser operand, renormalised at its edges', async () => {
      // coarse: 3 x 2 cells of 2 from (0, 0): value c(x, y) = 100 x + 10 y.
      const coarse = rasterOf({ width: 3, height: 2, cellSize: 2 }, (x, y) => 100 * x + 10 * y);
      const zero = rasterOf({ width: W, height: H }, () => 0);
      const res = await run({ CellsizeType: 'MinOf' }, [zero, coarse]);
      expect([res.info.width, res.info.height]).toEqual([3, 2]);
      // Centres (i + 0.5, j + 0.5) of 1-cells are at (i + 0.5) / 2 in coarse pixels: 0.25, 0.75, 1.25.
      // Column 0: 0.25 - 0.5 = -0.25, the west neighbour is outside: weight renormalised to column 0.
      // Column 1: 0.25 between columns 0 and 1: 0.75 * 0 + 0.25 * 100 = 25; column 2: 75. Rows alike (x 10).
      expect(pixels(res)).toEqual([0, 25, 75, 2.5, 27.5, 77.5]);
    });

    it('MaxOf cell size: the first operand is averaged bilinearly at the coarse centres', async () => {
      const coarse = rasterOf({ width: 3, height: 2, cellSize: 2 }, () => 0);
      const res = await run({ CellsizeType: 2 }, [r1(), coarse]);
      // FirstOf extent (3 x 2 cells of 1) in cells of 2: round(1.5) = 2 columns, 1 row.
      expect([res.info.width, res.info.height]).toEqual([2, 1]);
      // Centre (1, -1) is r1 pixel position (1, 1): the mean of its 4 top-left pixels.
      expect(res.value(0, 0)).toBeCloseTo((4 - 7 + 9 + 2.5) / 4, 6);
      // Centre (3, -1) = r1 position (3, 1): on the east edge, in no pixel of r1, so NoData.
      expect(res.valid(1, 0)).toBe(false);
    });

    it('MeanOf cell size, and nearest neighbour for integer operands', async () => {
      const ints = rasterOf({ width: 4, height: 4, cellSize: 0.5, pixelType: 'S16' }, (x, y) => 10 * y + x);
      const res = await run({ CellsizeType: 3 }, [r1(), ints]);
      expect(res.info.cellSize).toEqual({ x: 0.75, y: 0.75 });
      expect([res.info.width, res.info.height]).toEqual([4, 3]);
      // Pixel (1, 0): centre (1.125, -0.375) -> ints pixel (2.25, 0.75) -> nearest (2, 0) = 2;
      // r1 (bilinear) at (1.125, 0.375): renormalised between columns 0 and 1 of row 0 only:
      // x 1.125 - 0.5 = 0.625 -> 0.375 * 4 + 0.625 * -7 = -2.875.
      expect(res.value(1, 0)).toBeCloseTo(2 - 2.875, 6);
    });

    it('another spatial reference is reprojected (bilinear of a linear field is exact up to the 0.125 px approximation)', async () => {
      // UTM 16N raster near (-87, 36.14) and a geographic raster whose value is linear in lon/lat.
      const utm = rasterOf({ width: 20, height: 15, cellSize: 30, origin: { x: 500000, y: 4000000 } }, () => 0);
      const geo = rasterOf(
        { width: 40, height: 30, cellSize: 1 / 1200, geographic: true, origin: { x: -87.01, y: 36.15 } },
        (x, y) => 1000 * x + 7 * y,
      );
      const res = await run({}, [utm, geo]);
      const proj4 = (await import('proj4')).default;
      const c = proj4('+proj=utm +zone=16 +datum=WGS84 +units=m +no_defs', '+proj=longlat +datum=WGS84 +no_defs');
      for (const [i, j] of [
        [0, 0],
        [7, 3],
        [19, 14],
        [10, 10],
      ] as const) {
        const [lon, lat] = c.forward([500000 + (i + 0.5) * 30, 4000000 - (j + 0.5) * 30]) as [number, number];
        const px = (lon + 87.01) * 1200 - 0.5;
        const py = (36.15 - lat) * 1200 - 0.5;
        // Value gradient is 1000 per pixel in x, 7 in y: 0.125 px of position is at most 126.
        expect(Math.abs(res.value(i, j) - (1000 * px + 7 * py))).toBeLessThan(1);
      }
    });
  });

  describe('argument errors', () => {
    const at = (f: () => unknown) => {
      const e = catchError(f);
      return e && { code: e.code, path: e.path };
    };

    it('Raster2 is required', () => {
      expect(at(() => applyFunction(arithmetic, {}, [r1()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Raster2',
      });
    });

    it('an unknown Operation is rejected', () => {
      expect(at(() => apply({ Operation: 7 }, [r1(), r2()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Operation',
      });
    });

    it('ExtentType and CellsizeType outside their enums are rejected', () => {
      expect(at(() => apply({ ExtentType: 4 }, [r1(), r2()]))?.path).toBe('rasterFunctionArguments.ExtentType');
      expect(at(() => apply({ CellsizeType: 5 }, [r1(), r2()]))?.path).toBe('rasterFunctionArguments.CellsizeType');
    });

    it('two constants are rejected: at least one operand must be a raster', () => {
      expect(at(() => apply({}, [constant([1]), constant([2])]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Raster',
      });
    });

    it('a constant whose length is neither 1 nor the band count is rejected', () => {
      const three = rasterOf({ width: 2, height: 1, bandCount: 3 }, () => 1);
      expect(at(() => apply({}, [three, constant([1, 2])]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Raster2',
      });
      expect(at(() => apply({}, [constant([1, 2]), three]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Raster',
      });
    });

    it('rasters with different band counts, neither single-band, are rejected', () => {
      const two = rasterOf({ width: 2, height: 1, bandCount: 2 }, () => 1);
      const three = rasterOf({ width: 2, height: 1, bandCount: 3 }, () => 1);
      expect(at(() => apply({}, [two, three]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Raster2',
      });
    });

    it('rasters that do not overlap are rejected at the raster that misses, with any ExtentType', () => {
      const far = rasterOf({ width: W, height: H, origin: { x: 100, y: 0 } }, () => 1);
      for (const ExtentType of [0, 1, 2, 3]) {
        expect(at(() => apply({ ExtentType }, [r1(), far]))).toEqual({
          code: 'INVALID_ARGUMENT',
          path: 'rasterFunctionArguments.Raster2',
        });
      }
    });

    it('a spatial reference without a known proj4 definition cannot be reprojected', () => {
      const info = { ...gridInfo({ width: W, height: H }), spatialReference: { wkid: 999999 } };
      const odd = memorySource('odd', info, [new Float32Array(W * H)]);
      expect(at(() => apply({}, [r1(), odd]))?.code).toBe('UNSUPPORTED_INPUT');
    });

    it('complex rasters are unsupported', () => {
      const info = gridInfo({ width: 2, height: 1, pixelType: 'C64' });
      const c = memorySource('c64', info, [new Float32Array(4)]);
      expect(at(() => apply({}, [c, constant([1])]))).toEqual({
        code: 'UNSUPPORTED_INPUT',
        path: 'rasterFunctionArguments.Raster',
      });
    });
  });

  describe('tiled equals whole', () => {
    const big = (seed: number, bands = 1) =>
      rasterOf(
        { width: 100, height: 80, bandCount: bands, pixelType: 'F32' },
        (x, y, b) => Math.sin(seed * (x + 1) * 0.37 + y * 0.11 + b) * 10 - (x % 7 === 0 ? 10 : 0),
        Uint8Array.from({ length: 8000 }, (_, i) => (i % 13 === 0 ? 0 : 1)),
      );
    it.each([1, 2, 3, 4, 5, 6])('Operation %i', async (op) => {
      const node = apply({ Operation: op }, [big(1, 3), big(2)]);
      expect(await tiledVersusWhole(node, [37, 53])).toBeUndefined();
    });
    it('with a constant operand', async () => {
      const node = apply({ Operation: 5 }, [big(3, 2), constant([2, 0.5])]);
      expect(await tiledVersusWhole(node, [37, 53])).toBeUndefined();
    });
  });

  it('pairs multidimensional slices by time (MatchVariable, UnionDimension), broadcasting a plain raster', async () => {
    // A: temperature at 2001, 2002, 2003 (bands 0..2 = 10, 20, 30); B: temperature at 2002, 2003, 2004 (1, 2, 3).
    const md = (times: string[]) => ({ multidimensional: timeSeriesMultidim('temperature', times) });
    const a = memorySource(
      'mdA',
      { ...gridInfo({ width: 1, height: 1, bandCount: 3 }), ...md(['2001', '2002', '2003']) },
      [10, 20, 30].map((v) => Float32Array.of(v)),
    );
    const b = memorySource(
      'mdB',
      { ...gridInfo({ width: 1, height: 1, bandCount: 3 }), ...md(['2002', '2003', '2004']) },
      [1, 2, 3].map((v) => Float32Array.of(v)),
    );
    const res = await run({ Operation: 1 }, [a, b]);
    // Common slices 2002 and 2003: 20 + 1, 30 + 2; 2001 and 2004 are left out with a warning.
    expect([res.info.bandCount, res.block.bands[0]![0], res.block.bands[1]![0]]).toEqual([2, 21, 32]);
    expect(res.node.plan.warnings?.length).toBeGreaterThan(0);
    const plain = await run({ Operation: 3 }, [a, rasterOf({ width: 1, height: 1 }, () => 2)]);
    expect([0, 1, 2].map((k) => plain.block.bands[k]![0])).toEqual([20, 40, 60]);
    const other = memorySource(
      'mdC',
      { ...gridInfo({ width: 1, height: 1, bandCount: 3 }), multidimensional: timeSeriesMultidim('salinity', ['2002', '2003', '2004']) },
      [1, 2, 3].map((v) => Float32Array.of(v)),
    );
    expect(catchError(() => apply({}, [a, other]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.MatchVariable',
    });
  });
});

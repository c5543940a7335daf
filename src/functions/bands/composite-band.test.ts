// Expected values derived by hand from the formula: output bands = input 1's bands, then input 2's, ...,
// values unchanged in the promoted type, masks ANDed.
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import type { PixelType } from '../../core/pixel-type.js';
import { memorySource } from '../../graph/memory-source.js';
import type { RasterNode } from '../../graph/types.js';
import { applyFunction, catchError, gridInfo, mdRasterOf, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { compositeBand } from './composite-band.js';

const grid = { width: 3, height: 1 } as const;
const planes = (res: { block: { bands: ArrayLike<number>[] } }) => res.block.bands.map((b) => Array.from(b));

// The raw arguments name one element per input (the helpers bind the inputs to Rasters in order).
const refs = (inputs: readonly RasterNode[]) => inputs.map((_, i) => `$${i + 1}`);
const run = (raw: Record<string, unknown>, inputs: readonly RasterNode[]) =>
  runFunction(compositeBand, { Rasters: refs(inputs), ...raw }, inputs);
const apply = (raw: Record<string, unknown>, inputs: readonly RasterNode[]) =>
  applyFunction(compositeBand, { Rasters: refs(inputs), ...raw }, inputs);

const at = (f: () => unknown) => {
  const e = catchError(f);
  return e && { code: e.code, path: e.path };
};

describe('CompositeBand', () => {
  it('stacks the bands of every input, in order', async () => {
    const a = rasterOf({ ...grid, bandCount: 2, pixelType: 'U8' }, (x, _y, b) => 10 * b + x);
    const b = rasterOf({ ...grid, pixelType: 'U8' }, (x) => 100 + x);
    const c = rasterOf({ ...grid, bandCount: 2, pixelType: 'U8' }, (x, _y, k) => 200 + 10 * k + x);
    const res = await run({}, [a, b, c]);
    expect(res.info.bandCount).toBe(5);
    expect(planes(res)).toEqual([
      [0, 1, 2],
      [10, 11, 12],
      [100, 101, 102],
      [200, 201, 202],
      [210, 211, 212],
    ]);
  });

  describe('pixel type: the smallest type that holds every input type', () => {
    const cases: [PixelType[], PixelType, new (n: number) => ArrayLike<number>][] = [
      [['U8', 'U8'], 'U8', Uint8Array],
      [['U8', 'S16'], 'S16', Int16Array],
      [['U8', 'F32'], 'F32', Float32Array],
      [['S8', 'U8'], 'S16', Int16Array],
      [['U16', 'F32', 'U8'], 'F32', Float32Array],
      [['S32', 'F32'], 'F64', Float64Array],
    ];
    it.each(cases)('%j -> %s', async (types, expected, array) => {
      const inputs = types.map((t) => rasterOf({ ...grid, pixelType: t }, (x) => x + 1));
      const res = await run({}, inputs);
      expect(res.info.pixelType).toBe(expected);
      for (const band of res.block.bands) expect(band).toBeInstanceOf(array);
    });

    it('values keep their exact value in the promoted type (U8 255 and S16 -300 in S16)', async () => {
      const u8 = rasterOf({ ...grid, pixelType: 'U8' }, (x) => [0, 128, 255][x]!);
      const s16 = rasterOf({ ...grid, pixelType: 'S16' }, (x) => [-300, 0, 32767][x]!);
      const res = await run({}, [u8, s16]);
      expect(planes(res)).toEqual([
        [0, 128, 255],
        [-300, 0, 32767],
      ]);
    });

    it('U8 and F32 give F32 with the float values unchanged', async () => {
      const u8 = rasterOf({ ...grid, pixelType: 'U8' }, (x) => [1, 2, 250][x]!);
      const f32 = rasterOf({ ...grid, pixelType: 'F32' }, (x) => [0.5, -1.25, 1e20][x]!);
      const res = await run({}, [u8, f32]);
      expect(planes(res)).toEqual([
        [1, 2, 250],
        [0.5, -1.25, Math.fround(1e20)],
      ]);
    });

    it('a real input in a complex output becomes the real part', async () => {
      const f32 = rasterOf({ ...grid, pixelType: 'F32' }, (x) => x + 0.5);
      const c64 = memorySource('c64', gridInfo({ ...grid, pixelType: 'C64' }), [Float32Array.from([1, -1, 2, -2, 3, -3])]);
      const res = await run({}, [f32, c64]);
      expect(res.info.pixelType).toBe('C64');
      expect(planes(res)).toEqual([
        [0.5, 0, 1.5, 0, 2.5, 0],
        [1, -1, 2, -2, 3, -3],
      ]);
    });
  });

  it('NoData: masks are ANDed, a pixel NoData in any input is NoData in every band', async () => {
    const a = rasterOf({ ...grid, bandCount: 2 }, (x) => x, Uint8Array.from([1, 0, 1]));
    const b = rasterOf({ ...grid, noData: 2 }, (x) => x); // pixel 2 equals the NoData value
    const res = await run({}, [a, b]);
    expect(Array.from(res.block.mask)).toEqual([1, 0, 0]);
    expect(res.valid(0, 0)).toBe(true);
  });

  describe('metadata', () => {
    const withMeta = (id: string, pixelType: PixelType, extra: Partial<RasterInfo>, bandCount = 1) =>
      memorySource(
        id,
        { ...gridInfo({ ...grid, pixelType, bandCount }), ...extra },
        Array.from({ length: bandCount }, () => (pixelType === 'U8' ? new Uint8Array(3) : new Float32Array(3))),
      );

    it('concatenates band names, statistics and histograms when every input has them', async () => {
      const a = withMeta(
        'a',
        'U8',
        {
          bandNames: ['r', 'g'],
          statistics: [
            { min: 0, max: 1 },
            { min: 2, max: 3 },
          ],
          histograms: [
            { size: 1, min: 0, max: 1, counts: [1] },
            { size: 1, min: 2, max: 3, counts: [2] },
          ],
        },
        2,
      );
      const b = withMeta('b', 'U8', {
        bandNames: ['nir'],
        statistics: [{ min: 4, max: 5 }],
        histograms: [{ size: 1, min: 4, max: 5, counts: [3] }],
      });
      const res = await run({}, [a, b]);
      expect(res.info.bandNames).toEqual(['r', 'g', 'nir']);
      expect(res.info.statistics).toEqual([
        { min: 0, max: 1 },
        { min: 2, max: 3 },
        { min: 4, max: 5 },
      ]);
      expect(res.info.histograms?.map((h) => h.counts[0])).toEqual([1, 2, 3]);
    });

    it('drops them when some input lacks them', async () => {
      const a = withMeta('a2', 'U8', { bandNames: ['r'], statistics: [{ min: 0, max: 1 }] });
      const b = withMeta('b2', 'U8', {});
      const res = await run({}, [a, b]);
      expect(res.info.bandNames).toBeUndefined();
      expect(res.info.statistics).toBeUndefined();
      expect(res.info.histograms).toBeUndefined();
    });

    it('takes the first NoData value the promoted type can hold', async () => {
      const a = withMeta('a3', 'U8', {});
      const b = withMeta('b3', 'F32', { noData: -3.5 });
      const c = withMeta('c3', 'U8', { noData: 0 });
      expect((await run({}, [a, b, c])).info.noData).toBe(-3.5);
      expect((await run({}, [a, c])).info.noData).toBe(0);
      expect((await run({}, [a, a])).info.noData).toBeUndefined();
    });

    it('the grid and spatial reference come from the first input', async () => {
      const a = rasterOf({ ...grid, cellSize: 10, origin: { x: 100, y: 200 } }, () => 1);
      const b = rasterOf({ ...grid, cellSize: 10, origin: { x: 100, y: 200 } }, () => 2);
      const res = await run({}, [a, b]);
      expect(res.info.extent).toEqual(a.info.extent);
      expect(res.info.spatialReference).toEqual(a.info.spatialReference);
    });
  });

  describe('arguments', () => {
    it.each([0, 1, 2, 3, 4])('CellsizeType %i is accepted and changes nothing on a shared grid', async (t) => {
      const a = rasterOf({ ...grid, pixelType: 'U8' }, (x) => x);
      const b = rasterOf({ ...grid, pixelType: 'U8' }, (x) => 5 + x);
      const res = await run({ CellsizeType: t }, [a, b]);
      expect(planes(res)).toEqual([
        [0, 1, 2],
        [5, 6, 7],
      ]);
    });

    it('CellsizeType outside 0..4 is rejected', () => {
      const a = rasterOf(grid, () => 1);
      expect(at(() => apply({ CellsizeType: 5 }, [a]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.CellsizeType',
      });
    });

    it('an empty Rasters list is rejected', () => {
      expect(at(() => applyFunction(compositeBand, { Rasters: [] }, []))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Rasters',
      });
    });

    it('inputs on other grids are resampled onto the chosen grid (hand-derived)', async () => {
      const a = rasterOf({ width: 4, height: 2 }, (x) => x + 1);
      // Cell 2, covering the same ground: 2 x 1 pixels of 10 and 20 (S16: nearest neighbour).
      const coarse = rasterOf({ width: 2, height: 1, cellSize: 2, pixelType: 'S16' }, (x) => 10 * (x + 1));
      const min = await runFunction(compositeBand, { Rasters: ['$1', '$2'], CellsizeType: 'MinOf' }, [a, coarse]);
      expect([min.info.width, min.info.cellSize.x]).toEqual([4, 1]);
      expect(Array.from(min.block.bands[1]!)).toEqual([10, 10, 20, 20, 10, 10, 20, 20]);
      // Default MaxOf: the 2-unit grid; the float raster is averaged bilinearly at the new centres.
      const max = await runFunction(compositeBand, { Rasters: ['$1', '$2'] }, [a, coarse]);
      expect([max.info.width, max.info.cellSize.x]).toEqual([2, 2]);
      expect(Array.from(max.block.bands[0]!)).toEqual([1.5, 3.5]);
      // A shifted input: pixels outside it are NoData.
      const shifted = rasterOf({ width: 4, height: 2, origin: { x: 1, y: 0 } }, () => 7);
      const sh = await runFunction(compositeBand, { Rasters: ['$1', '$2'], CellsizeType: 0 }, [a, shifted]);
      expect(Array.from(sh.block.mask)).toEqual([0, 1, 1, 1, 0, 1, 1, 1]);
    });
  });

  it('tiled equals whole', async () => {
    const n = 100 * 80;
    const a = rasterOf(
      { width: 100, height: 80, bandCount: 2, pixelType: 'U8' },
      (x, y, b) => (x * 7 + y * 3 + b) % 256,
      Uint8Array.from({ length: n }, (_, i) => (i % 13 === 0 ? 0 : 1)),
    );
    const b = rasterOf(
      { width: 100, height: 80, pixelType: 'S16' },
      (x, y) => x * y - 3000,
      Uint8Array.from({ length: n }, (_, i) => (i % 19 === 0 ? 0 : 1)),
    );
    const node = apply({}, [a, b]);
    expect(node.info.pixelType).toBe('S16');
    expect(await tiledVersusWhole(node, [37, 53])).toBeUndefined();
  });
});

// Multidimensional inputs: expected values derived by hand from "composite slice by slice" (slices
// paired by MatchVariable / UnionDimension as Arithmetic pairs them; output slice = input 1's slice
// bands, then input 2's), per-slice NoData as core/multidim.ts defines it.
describe('CompositeBand of multidimensional rasters', () => {
  const T = (y: number) => Date.UTC(y, 0, 1);
  // A: sst 2001..2003, 2-band slices, band (k, j) = 100(k+1) + 10j + x. B: sst 2002..2004, 1 band, 1000(k+1) + x.
  const A = (f = (x: number, b: number) => 100 * ((b >> 1) + 1) + 10 * (b & 1) + x, o: Partial<Parameters<typeof mdRasterOf>[0]> = {}) =>
    mdRasterOf({ ...grid, ...o }, [{ name: 'sst', values: [2001, 2002, 2003], bandsPerSlice: 2 }], (x, _y, b) => f(x, b));
  const B = (f = (x: number, b: number) => 1000 * (b + 1) + x, o: Partial<Parameters<typeof mdRasterOf>[0]> = {}) =>
    mdRasterOf({ ...grid, ...o }, [{ name: 'sst', values: [2002, 2003, 2004] }], (x, _y, b) => f(x, b));

  it('pairs the common time slices and stacks 2-band and 1-band slices into 3-band slices', async () => {
    const res = await run({}, [A(), B()]);
    // 2002: A slice 1 (200, 210) + B slice 0 (1000); 2003: A slice 2 (300, 310) + B slice 1 (2000).
    expect(planes(res)).toEqual([
      [200, 201, 202],
      [210, 211, 212],
      [1000, 1001, 1002],
      [300, 301, 302],
      [310, 311, 312],
      [2000, 2001, 2002],
    ]);
    const v = res.info.multidimensional!.variables;
    expect(v.map((w) => [w.name, w.bandsPerSlice, w.slices.map((s) => [s.values[0], s.band])])).toEqual([
      [
        'sst',
        3,
        [
          [T(2002), 0],
          [T(2003), 3],
        ],
      ],
    ]);
    expect(res.info.bandNames?.[0]).toBe('sst_StdTime=2002-01-01T00:00:00_Band_1');
    expect(res.info.bandNames?.[5]).toBe('sst_StdTime=2003-01-01T00:00:00_Band_3');
    expect(res.node.plan.warnings?.length).toBe(1); // 2001 and 2004 are left out
  });

  it('a missing slice value is NoData in that output slice only; every slice missing -> pixel NoData', async () => {
    // A: pixel 0 lacks 2002 (NaN, as sources fill), pixel 2 lacks every date; B: pixel 1 lacks 2003.
    const a = A((x, b) => ((x === 0 && b >> 1 === 1) || x === 2 ? Number.NaN : 100 * ((b >> 1) + 1) + 10 * (b & 1) + x));
    const b = B((x, k) => (x === 1 && k === 1 ? Number.NaN : 1000 * (k + 1) + x));
    const res = await run({}, [a, b]);
    expect(res.info.pixelType).toBe('F32');
    expect(Array.from(res.block.mask)).toEqual([1, 1, 0]);
    const p = planes(res).map((band) => band.slice(0, 2));
    expect(p).toEqual([
      [NaN, 201],
      [NaN, 211],
      [NaN, 1001],
      [300, NaN],
      [310, NaN],
      [2000, NaN],
    ]);
  });

  it('integer slices keep their type with a shared NoData value, else become F32 with NaN', async () => {
    const u8 = (nd: number, first: number) =>
      mdRasterOf({ ...grid, pixelType: 'U8', noData: nd }, [{ name: 'c', values: [2001, 2002] }], (x, _y, k) =>
        x === 0 && k === 0 ? nd : first + 10 * k + x,
      );
    const same = await run({}, [u8(0, 1), u8(0, 50)]);
    expect([same.info.pixelType, same.info.noData]).toEqual(['U8', 0]);
    // Pixel 0 lacks 2001 in both inputs: the slice holds the NoData value 0, 2002 is kept.
    expect(planes(same)).toEqual([
      [0, 2, 3],
      [0, 51, 52],
      [11, 12, 13],
      [60, 61, 62],
    ]);
    expect(Array.from(same.block.mask)).toEqual([1, 1, 1]);
    const mixed = await run({}, [u8(0, 1), u8(255, 50)]);
    expect([mixed.info.pixelType, mixed.info.noData]).toEqual(['F32', NaN]);
    expect(planes(mixed)[0]).toEqual([NaN, 2, 3]);
  });

  it('two variables are paired by name whatever their order; MatchVariable false pairs by position', async () => {
    const two = (names: [string, string], base: number) =>
      mdRasterOf(
        grid,
        [
          { name: names[0], values: [2001, 2002] },
          { name: names[1], values: [2001, 2002] },
        ],
        (x, _y, b) => base + 10 * b + x,
      );
    // A: temp bands 0,1 and sal 2,3; B: sal bands 0,1 and temp 2,3.
    const res = await run({}, [two(['temp', 'sal'], 0), two(['sal', 'temp'], 100)]);
    expect(res.info.multidimensional!.variables.map((v) => [v.name, v.bandsPerSlice, v.slices.length])).toEqual([
      ['temp', 2, 2],
      ['sal', 2, 2],
    ]);
    // temp 2001: A band 0 + B band 2; temp 2002: A 1 + B 3; sal 2001: A 2 + B 0; sal 2002: A 3 + B 1.
    expect(planes(res).map((b) => b[0])).toEqual([0, 120, 10, 130, 20, 100, 30, 110]);
    // Different names: MatchVariable (default true) refuses; false pairs temp with u by position.
    const u = mdRasterOf(grid, [{ name: 'u', values: [2001, 2002] }], (x, _y, b) => 500 + b);
    const temp = mdRasterOf(grid, [{ name: 'temp', values: [2001, 2002] }], (x, _y, b) => b);
    expect(at(() => apply({}, [temp, u]))).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.MatchVariable' });
    const pos = await run({ MatchVariable: false }, [temp, u]);
    expect(pos.info.multidimensional!.variables[0]!.name).toBe('temp');
    expect(planes(pos).map((b) => b[0])).toEqual([0, 500, 1, 501]);
  });

  it('UnionDimension false: the union of a time series and a depth profile (every time x depth)', async () => {
    const time = mdRasterOf(grid, [{ name: 'temp', values: [2001, 2002] }], (x, _y, b) => 10 * (b + 1) + x);
    const depth = mdRasterOf(grid, [{ name: 'temp', values: [-5, -10], dimension: 'StdZ' }], (x, _y, b) => 100 * (b + 1) + x);
    expect(at(() => apply({}, [time, depth]))).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.UnionDimension' });
    const res = await run({ UnionDimension: false }, [time, depth]);
    const v = res.info.multidimensional!.variables[0]!;
    expect(v.dimensions.map((d) => d.name)).toEqual(['StdTime', 'StdZ']);
    expect(v.slices.map((s) => s.values)).toEqual([
      [T(2001), -5],
      [T(2001), -10],
      [T(2002), -5],
      [T(2002), -10],
    ]);
    expect(planes(res).map((b) => b[0])).toEqual([10, 100, 10, 200, 20, 100, 20, 200]);
  });

  it('a plain raster gives its bands to every slice', async () => {
    const plain = rasterOf({ ...grid, bandCount: 2 }, (x, _y, b) => -(b + 1));
    const res = await run({}, [A(), plain]);
    expect(res.info.multidimensional!.variables[0]!.bandsPerSlice).toBe(4);
    expect(planes(res).map((b) => b[0])).toEqual([100, 110, -1, -2, 200, 210, -1, -2, 300, 310, -1, -2]);
    // A plain raster's NoData pixel is in every slice: the pixel is NoData.
    const holed = rasterOf(grid, () => 7, Uint8Array.from([1, 0, 1]));
    expect(Array.from((await run({}, [A(), holed])).block.mask)).toEqual([1, 0, 1]);
  });

  it('slices with no dimension value in common are rejected at the second raster', () => {
    const far = mdRasterOf(grid, [{ name: 'sst', values: [1990] }], () => 1);
    expect(at(() => apply({}, [A(), far]))).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Rasters[1]' });
    expect(at(() => apply({ MatchVariable: 'maybe' }, [A(), B()]))?.path).toBe('rasterFunctionArguments.MatchVariable');
  });

  it('tiled equals whole (NaN slices, holes, 2-band + 1-band slices)', async () => {
    const W = 100;
    const H = 80;
    const holes = Uint8Array.from({ length: W * H }, (_, i) => (i % 13 === 0 ? 0 : 1));
    const a = mdRasterOf(
      { width: W, height: H },
      [{ name: 'v', values: [2001, 2002, 2003], bandsPerSlice: 2 }],
      (x, y, b) => ((x + y + (b >> 1)) % 7 === 0 ? NaN : x * y + b),
      holes,
    );
    const b = mdRasterOf({ width: W, height: H, pixelType: 'S16' }, [{ name: 'v', values: [2002, 2003] }], (x, y, k) => x - y + k);
    expect(await tiledVersusWhole(apply({}, [a, b]), [37, 53])).toBeUndefined();
  });
});

// Expected values derived by hand from the ArgStatistics definitions (0-based band indexes across
// inputs, ties -> UndefinedClass, lower median, longest run), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, mdRasterOf, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { argStatistics } from './arg-statistics.js';

// Pixel x holds the values below across 4 bands (3 in input 1, 1 in input 2).
const PIX = [
  [5, 1, 3, 4],
  [2, 9, 9, 1],
  [1, 2, 3, 4],
  [7, 7, 7, 7],
];
const first = () => rasterOf({ width: 4, height: 1, bandCount: 3 }, (x, _y, b) => PIX[x]![b]!);
const second = () => rasterOf({ width: 4, height: 1 }, (x) => PIX[x]![3]!, Uint8Array.from([1, 1, 0, 1]));
const run = async (args: Record<string, unknown>) => {
  const r = await runFunction(argStatistics, args, [first(), second()]);
  return Array.from({ length: 4 }, (_, x) => (r.valid(x, 0) ? r.value(x, 0) : null));
};

describe('ArgStatistics', () => {
  it('ArgumentMax / ArgumentMin with ties -> UndefinedClass', async () => {
    expect(await run({ ArgStatisticsType: 0 })).toEqual([0, 100, 2, 100]);
    expect(await run({ ArgStatisticsType: 'ArgumentMin', UndefinedClass: 50 })).toEqual([1, 3, 0, 50]);
  });

  it('ArgumentMedian: lower median of the valid values (pixel 2 lacks band 3)', async () => {
    // px0 sorted 1 3 4 5 -> 3 (band 2); px1 1 2 9 9 -> 2 (band 0); px2 1 2 3 -> 2 (band 1); px3 tie.
    expect(await run({ ArgStatisticsType: 2 })).toEqual([2, 0, 1, 100]);
  });

  it('Duration: longest run of consecutive bands within [MinValue, MaxValue], NoData breaks runs', async () => {
    // px0 5 | 1 breaks | 3 4 -> 2; px1 none; px2 1 2 3 (band 3 NoData) -> 1; px3 all -> 4.
    expect(await run({ ArgStatisticsType: 3, MinValue: 3, MaxValue: 7 })).toEqual([2, 0, 1, 4]);
  });

  it('output type holds the band indexes and UndefinedClass', async () => {
    const node = applyFunction(argStatistics, { UndefinedClass: -1 }, [first(), second()]);
    expect(node.info.pixelType).toBe('S16');
    expect(applyFunction(argStatistics, {}, [first()]).info.pixelType).toBe('U8');
  });

  it('rejects malformed arguments with the argument path', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ArgStatisticsType: 3, MaxValue: 1 }, 'MinValue'],
      [{ ArgStatisticsType: 3, MinValue: 1 }, 'MaxValue'],
      [{ ArgStatisticsType: 3, MinValue: 2, MaxValue: 1 }, 'MaxValue'],
      [{ ArgStatisticsType: 7 }, 'ArgStatisticsType'],
    ];
    for (const [args, field] of cases) {
      const e = catchError(() => applyFunction(argStatistics, args, [first(), second()]));
      expect(e?.code, JSON.stringify(args)).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
  });
});

// Multidimensional rasters: expected values derived by hand from the ArgStatistics definitions
// applied slice by slice (slices paired by MatchVariable / UnionDimension as Arithmetic pairs them;
// within a slice, index 0 = A's slice band, 1 and 2 = B's two slice bands).
describe('ArgStatistics of multidimensional rasters', () => {
  const T = (y: number) => Date.UTC(y, 0, 1);
  const g = { width: 4, height: 1 };
  // A: ndvi 2001, 2002, 2003 (1 band); B: ndvi 2002, 2003, 2004 (2-band slices).
  const AV = [
    [50, 50, 50, 50],
    [5, 1, 7, 3],
    [0, 9, 2, 2],
  ];
  const BV = [
    [1, 4, 7, 8],
    [2, 6, 0, 1],
    [3, 3, 9, 2],
    [1, 0, 4, 2],
    [77, 77, 77, 77],
    [77, 77, 77, 77],
  ];
  const A = (miss: (x: number, k: number) => boolean = () => false) =>
    mdRasterOf(g, [{ name: 'ndvi', values: [2001, 2002, 2003] }], (x, _y, k) => (miss(x, k) ? NaN : AV[k]![x]!));
  const B = (miss: (x: number, b: number) => boolean = () => false) =>
    mdRasterOf(g, [{ name: 'ndvi', values: [2002, 2003, 2004], bandsPerSlice: 2 }], (x, _y, b) => (miss(x, b) ? NaN : BV[b]![x]!));
  const run = async (args: Record<string, unknown>, inputs = [A(), B()]) => {
    const r = await runFunction(argStatistics, args, inputs);
    const slices = Array.from({ length: r.info.bandCount }, (_, b) => Array.from({ length: 4 }, (_, x) => r.value(x, 0, b)));
    return { r, slices, mask: Array.from(r.block.mask) };
  };

  it('per common slice: ArgumentMax / ArgumentMin over the paired slice bands; multidimensional output', async () => {
    // 2002: [5,1,2] [1,4,6] [7,7,0] [3,8,1]; 2003: [0,3,1] [9,3,0] [2,9,4] [2,2,2].
    const max = await run({ ArgStatisticsType: 0 });
    expect(max.slices).toEqual([
      [0, 2, 100, 1],
      [1, 0, 1, 100],
    ]);
    const v = max.r.info.multidimensional!.variables;
    expect(v.map((w) => [w.name, w.bandsPerSlice, w.slices.map((s) => [s.values[0], s.band])])).toEqual([
      [
        'ndvi',
        1,
        [
          [T(2002), 0],
          [T(2003), 1],
        ],
      ],
    ]);
    expect(max.r.info.bandNames).toEqual(['ndvi_StdTime=2002-01-01T00:00:00', 'ndvi_StdTime=2003-01-01T00:00:00']);
    expect([max.r.info.pixelType, max.r.info.noData]).toEqual(['U8', 255]);
    expect(max.r.node.plan.warnings?.length).toBe(1); // 2001 and 2004 are left out
    expect((await run({ ArgStatisticsType: 1 })).slices).toEqual([
      [1, 0, 2, 2],
      [0, 2, 0, 100],
    ]);
  });

  it('ArgumentMedian and Duration per slice', async () => {
    // Lower median of 3 values = the middle one: 2002 [5,1,2] -> 2 (idx 2), [1,4,6] -> 4 (1), [7,7,0] tie, [3,8,1] -> 3 (0).
    expect((await run({ ArgStatisticsType: 2 })).slices[0]).toEqual([2, 1, 100, 0]);
    // Runs within [2, 7]: 2002 [5 | 1 | 2] -> 1, [1 | 4 6] -> 2, [7 7 | 0] -> 2, [3 | 8 | 1] -> 1.
    expect((await run({ ArgStatisticsType: 3, MinValue: 2, MaxValue: 7 })).slices[0]).toEqual([1, 2, 2, 1]);
  });

  it('a missing slice: skipped values keep their index; a slice with no value is NoData (255), the pixel stays', async () => {
    // Pixel 0 lacks A's 2002 value: 2002 over B's [1, 2] -> max 2 at index 2. Pixel 3 lacks 2003 in A and B.
    const res = await run({}, [A((x, k) => (x === 0 && k === 1) || (x === 3 && k === 2)), B((x, b) => x === 3 && (b === 2 || b === 3))]);
    expect(res.slices).toEqual([
      [2, 2, 100, 1],
      [1, 0, 1, 255],
    ]);
    expect(res.mask).toEqual([1, 1, 1, 1]);
    // Every slice missing at pixel 1 -> the pixel is NoData.
    const gone = await run({}, [A((x) => x === 1), B((x) => x === 1)]);
    expect(gone.mask).toEqual([1, 0, 1, 1]);
  });

  it('two variables are paired by name; a plain raster joins every slice', async () => {
    const two = (base: number, names: [string, string]) =>
      mdRasterOf(
        g,
        [
          { name: names[0], values: [2001, 2002] },
          { name: names[1], values: [2001, 2002] },
        ],
        (x, _y, b) => base + b * 10 + x,
      );
    // A: temp 0..3 in bands 0,1 (0,10), sal bands 2,3 (20,30); B reversed: sal bands 0,1 (5,15), temp 2,3 (25,35).
    const res = await run({}, [two(0, ['temp', 'sal']), two(5, ['sal', 'temp'])]);
    expect(res.r.info.multidimensional!.variables.map((v) => v.name)).toEqual(['temp', 'sal']);
    // temp 2001: A 0 vs B 25 -> 1; temp 2002: 10 vs 35 -> 1; sal 2001: 20 vs 5 -> 0; sal 2002: 30 vs 15 -> 0.
    expect(res.slices.map((s) => s[0])).toEqual([1, 1, 0, 0]);
    const plain = rasterOf(g, (x) => [4, 0, 8, 0][x]!);
    // A's 2001 [50,50,50,50], 2002 [5,1,7,3] and 2003 [0,9,2,2] against the plain [4,0,8,0] (index 1).
    expect((await run({}, [A(), plain])).slices).toEqual([
      [0, 0, 0, 0],
      [0, 0, 1, 0],
      [1, 0, 1, 0],
    ]);
  });

  it('UnionDimension false: every (time, depth); a single raster keeps the spec band numbering', async () => {
    const depth = mdRasterOf(g, [{ name: 'ndvi', values: [-5, -10], dimension: 'StdZ' }], (x, _y, b) => (b === 0 ? 3 : 6));
    expect(catchError(() => applyFunction(argStatistics, {}, [A(), depth]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.UnionDimension',
    });
    const u = await run({ UnionDimension: false }, [A(), depth]);
    expect(u.r.info.multidimensional!.variables[0]!.slices.map((s) => s.values)).toEqual([
      [T(2001), -5],
      [T(2001), -10],
      [T(2002), -5],
      [T(2002), -10],
      [T(2003), -5],
      [T(2003), -10],
    ]);
    // Pixel 1: A 50 | 1 | 9 against 3 and 6.
    expect(u.slices.map((s) => s[1])).toEqual([0, 0, 1, 1, 0, 0]);
    // One raster (U8, NoData 0 marks missing slices): band indexes over all its slices, 0 skipped.
    const series = mdRasterOf(
      { ...g, pixelType: 'U8', noData: 0 },
      [{ name: 'n', values: [2001, 2002, 2003] }],
      (x, _y, k) =>
        [
          [0, 2, 9, 1],
          [5, 3, 0, 1],
          [3, 1, 0, 0],
        ][k]![x]!,
    );
    const one = await run({}, [series]);
    expect([one.r.info.bandCount, one.r.info.multidimensional]).toEqual([1, undefined]);
    expect(one.slices[0]).toEqual([1, 1, 0, 100]);
  });

  it('rejects variables with different names at MatchVariable and no common slice at the second raster', () => {
    const other = mdRasterOf(g, [{ name: 'lst', values: [2002] }], () => 1);
    expect(catchError(() => applyFunction(argStatistics, {}, [A(), other]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.MatchVariable',
    });
    const far = mdRasterOf(g, [{ name: 'ndvi', values: [1990] }], () => 1);
    expect(catchError(() => applyFunction(argStatistics, {}, [A(), far]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Rasters[1]',
    });
  });

  it('tiled equals whole (per-slice NoData)', async () => {
    const W = 90;
    const H = 70;
    const a = mdRasterOf({ width: W, height: H }, [{ name: 'v', values: [2001, 2002, 2003] }], (x, y, k) =>
      (x + 2 * y + k) % 11 === 0 ? NaN : (x * 7 + y * 3 + k * 5) % 17,
    );
    const b = mdRasterOf({ width: W, height: H }, [{ name: 'v', values: [2001, 2002, 2003], bandsPerSlice: 2 }], (x, y, b) =>
      (x * 3 + y + b) % 13 === 0 ? NaN : (x + y * 5 + b) % 17,
    );
    for (const args of [{}, { ArgStatisticsType: 2 }, { ArgStatisticsType: 3, MinValue: 3, MaxValue: 12 }]) {
      expect(await tiledVersusWhole(applyFunction(argStatistics, args, [a, b]), [37, 53])).toBeUndefined();
    }
  });
});

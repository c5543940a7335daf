// Expected values derived by hand from the weighted-overlay rule (remap to the scale, Σ v·influence,
// round half away; RESTRICTED = EvalFrom - 1 wins; NODATA), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, mdRasterOf, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { weightedOverlay } from './weighted-overlay.js';

const a = () => rasterOf({ width: 5, height: 1, pixelType: 'U8' }, (x) => [1, 2, 3, 4, 9][x]!, Uint8Array.from([1, 1, 1, 1, 0]));
const b = () => rasterOf({ width: 5, height: 1, pixelType: 'U8' }, (x) => [10, 20, 30, 40, 10][x]!);

describe('WeightedOverlay', () => {
  it('remaps, weighs by normalised influence and rounds; RESTRICTED and NODATA classes', async () => {
    const r = await runFunction(
      weightedOverlay,
      { Influences: [75, 25], Remaps: ['1 1, 2 3 5, 4 RESTRICTED, NODATA 9', '0 15 2; 15 25 9; 30 NODATA'], EvalFrom: 1, EvalTo: 9 },
      [a(), b()],
    );
    // px0: 1*0.75 + 2*0.25 = 1.25 -> 1; px1: 5*.75 + 9*.25 = 6; px2: b = 30 NODATA; px3: restricted = 0;
    // px4: a NoData -> NODATA entry 9; b 10 -> 2: 6.75 + 0.5 = 7.25 -> 7.
    expect(r.info.pixelType).toBe('S16');
    expect([0, 1, 3, 4].map((x) => r.value(x, 0))).toEqual([1, 6, 0, 7]);
    expect(r.valid(2, 0)).toBe(false);
    expect(r.valid(3, 0)).toBe(true);
  });

  it('a value with no entry is NoData; ranges include both bounds, the first entry wins', async () => {
    const r = await runFunction(weightedOverlay, { Influences: [1], Remaps: ['1 2 3, 2 3 7'], EvalFrom: 1, EvalTo: 9 }, [a()]);
    expect([r.value(0, 0), r.value(1, 0), r.value(2, 0)]).toEqual([3, 3, 7]);
    expect(r.valid(3, 0)).toBe(false);
  });

  it('rejects malformed arguments with the argument path', () => {
    const ok = { Influences: [50, 50], Remaps: ['1 1', '10 2'], EvalFrom: 1, EvalTo: 9 };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...ok, EvalFrom: undefined }, 'EvalFrom'],
      [{ ...ok, EvalTo: 1 }, 'EvalTo'],
      [{ ...ok, Influences: [1] }, 'Influences'],
      [{ ...ok, Influences: [-1, 2] }, 'Influences'],
      [{ ...ok, Remaps: ['1 1'] }, 'Remaps'],
      [{ ...ok, Remaps: ['1 12', '10 2'] }, 'Remaps[0]'],
      [{ ...ok, Remaps: ['1 1', 'a b'] }, 'Remaps[1]'],
      [{ ...ok, Remaps: ['1 1', '1 2 3 4'] }, 'Remaps[1]'],
    ];
    for (const [args, field] of cases) {
      const e = catchError(() => applyFunction(weightedOverlay, args, [a(), b()]));
      expect(e?.code, JSON.stringify(args)).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
  });
});

// Multidimensional rasters: expected values derived by hand from the overlay rule applied slice by
// slice (slices paired by MatchVariable / UnionDimension as WeightedSum pairs them); a NoData slice
// holds -32768 (S16 minimum) and the pixel stays valid while another slice is.
describe('WeightedOverlay of multidimensional rasters', () => {
  const T = (y: number) => Date.UTC(y, 0, 1);
  const g = { width: 4, height: 1 };
  const args = {
    Influences: [50, 50],
    Remaps: ['1 1, 2 5, 3 9, 4 RESTRICTED, NODATA 3', '1 9, 2 5, 3 1, 4 NODATA'],
    EvalFrom: 1,
    EvalTo: 9,
  };
  // A: lc 2001..2003; B: lc 2002..2004 (NaN = missing slice value).
  const AV = [
    [1, 1, 1, 1],
    [1, 2, 4, NaN],
    [2, 3, 1, 1],
  ];
  const BV = [
    [3, 2, 1, 1],
    [4, NaN, 2, 3],
    [1, 1, 1, 1],
  ];
  const A = (v = AV, name = 'lc') => mdRasterOf(g, [{ name, values: [2001, 2002, 2003] }], (x, _y, k) => v[k]![x]!);
  const B = (v = BV, name = 'lc') => mdRasterOf(g, [{ name, values: [2002, 2003, 2004] }], (x, _y, k) => v[k]![x]!);
  const run = async (extra: Record<string, unknown>, inputs: Parameters<typeof runFunction>[2]) => {
    const r = await runFunction(weightedOverlay, { ...args, ...extra }, inputs);
    return {
      r,
      slices: Array.from({ length: r.info.bandCount }, (_, b) => Array.from({ length: 4 }, (_, x) => r.value(x, 0, b))),
      mask: Array.from(r.block.mask),
    };
  };

  it('one overlay per common slice; a missing slice value takes the NODATA entry or makes the slice NoData', async () => {
    const { r, slices, mask } = await run({}, [A(), B()]);
    // 2002: (1,3) -> 1*.5 + 1*.5 = 1; (2,2) -> 5; A 4 RESTRICTED -> 0; A missing -> NODATA 3 -> 3*.5 + 9*.5 = 6.
    // 2003: B 4 -> NODATA; B missing, no NODATA entry -> NoData; (1,2) -> .5 + 2.5 = 3; (1,3) -> 1.
    expect(slices).toEqual([
      [1, 5, 0, 6],
      [-32768, -32768, 3, 1],
    ]);
    expect(mask).toEqual([1, 1, 1, 1]);
    expect([r.info.pixelType, r.info.noData, r.info.bandCount]).toEqual(['S16', -32768, 2]);
    const v = r.info.multidimensional!.variables;
    expect(v.map((w) => [w.name, w.slices.map((s) => [s.values[0], s.band])])).toEqual([
      [
        'lc',
        [
          [T(2002), 0],
          [T(2003), 1],
        ],
      ],
    ]);
    expect(r.info.statistics).toEqual([
      { min: 0, max: 9 },
      { min: 0, max: 9 },
    ]);
    expect(r.node.plan.warnings?.length).toBe(1); // 2001 and 2004 left out
  });

  it('a pixel NoData in every slice is NoData', async () => {
    const { mask } = await run({}, [
      A(),
      B([
        [4, 4, 1, 1],
        [4, 4, 1, 1],
        [1, 1, 1, 1],
      ]),
    ]);
    expect(mask).toEqual([0, 0, 1, 1]);
  });

  it('variables by name or (MatchVariable false) by position; a plain raster is used for every slice', async () => {
    expect(catchError(() => applyFunction(weightedOverlay, args, [A(), B(BV, 'soil')]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.MatchVariable',
    });
    const pos = await run({ MatchVariable: false }, [A(), B(BV, 'soil')]);
    expect(pos.slices[0]).toEqual([1, 5, 0, 6]);
    expect(pos.r.info.multidimensional!.variables[0]!.name).toBe('lc');
    // A plain raster of 2s (-> 5) with each of A's slices: 2001 (1 -> 1): 3; 2002: 3, 5, 0, NaN -> NODATA 3 -> 4; 2003: 5, 7, 3, 3.
    const plain = rasterOf(g, () => 2);
    expect((await run({ Remaps: [args.Remaps[0], '2 5'] }, [A(), plain])).slices).toEqual([
      [3, 3, 3, 3],
      [3, 5, 0, 4],
      [5, 7, 3, 3],
    ]);
  });

  it('UnionDimension false: every (time, depth); true rejects different dimensions', async () => {
    const depth = mdRasterOf(g, [{ name: 'lc', values: [-5, -10], dimension: 'StdZ' }], (_x, _y, k) => k + 1);
    expect(catchError(() => applyFunction(weightedOverlay, args, [A(), depth]))).toMatchObject({
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
    // Pixel 0: A 1 (-> 1), 1, 2 (-> 5) with depth 1 (-> 9) and 2 (-> 5): 5, 3, 5, 3, 7, 5.
    expect(u.slices.map((s) => s[0])).toEqual([5, 3, 5, 3, 7, 5]);
  });

  it('tiled equals whole (per-slice NoData and RESTRICTED)', async () => {
    const W = 90;
    const H = 70;
    const a = mdRasterOf({ width: W, height: H }, [{ name: 'v', values: [2001, 2002, 2003] }], (x, y, k) =>
      (x + y + k) % 9 === 0 ? NaN : 1 + ((x * 3 + y + k) % 4),
    );
    const b = mdRasterOf({ width: W, height: H }, [{ name: 'v', values: [2001, 2002, 2003] }], (x, y, k) =>
      (x * 2 + y + k) % 7 === 0 ? NaN : 1 + ((x + y * 5 + k) % 4),
    );
    expect(await tiledVersusWhole(applyFunction(weightedOverlay, args, [a, b]), [37, 53])).toBeUndefined();
  });
});

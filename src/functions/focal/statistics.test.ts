/**
 * Statistics (focal) unit tests. Hand-derived values from the spec (raster-functions.md
 * "Statistics (focal)": valid pixels only, population standard deviation, median of an even count
 * = mean of the two middle values, ties to the smallest value, clipped windows, FillNoDataOnly) on
 * small arrays, and a brute-force reference (plain loops over every window, from the same rules)
 * against every code path and window shape.
 */
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, prng, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { mean, variance, windowOf } from '../../../test/focal-reference.js';
import { statistics } from './statistics.js';

// ---- Brute-force reference.

/** Statistics (focal) types 1..7 of a list of valid values. */
function statisticOf(type: number, v: readonly number[]): number {
  if (v.length === 0) return Number.NaN;
  const s = [...v].sort((a, b) => a - b);
  switch (type) {
    case 1:
      return s[0]!;
    case 2:
      return s[s.length - 1]!;
    case 3:
      return mean(v);
    case 4:
      return Math.sqrt(variance(v));
    case 5:
      return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
    default: {
      const counts = new Map<number, number>();
      for (const x of s) counts.set(x, (counts.get(x) ?? 0) + 1);
      let best = s[0]!;
      let bestN = type === 6 ? -1 : Infinity;
      for (const [value, n] of counts) {
        if (type === 6 ? n > bestN : n < bestN) {
          best = value;
          bestN = n;
        }
      }
      return best;
    }
  }
}

describe('Statistics: hand-derived values on a 3x3 raster of 1..9', () => {
  const z = rasterOf({ width: 3, height: 3 }, (x, y) => 3 * y + x + 1);
  const at = async (args: Record<string, unknown>, x: number, y: number) => (await runFunction(statistics, args, [z])).value(x, y);

  it('centre window: min 1, max 9, mean 5, std sqrt(60/9), median 5', async () => {
    expect(await at({ Type: 1 }, 1, 1)).toBe(1);
    expect(await at({ Type: 2 }, 1, 1)).toBe(9);
    expect(await at({ Type: 3 }, 1, 1)).toBe(5);
    expect(await at({ Type: 4 }, 1, 1)).toBeCloseTo(Math.sqrt(60 / 9), 6);
    expect(await at({ Type: 5 }, 1, 1)).toBe(5);
  });

  it('corner windows are clipped: (0, 0) sees 1, 2, 4, 5 -> mean 3, median 3, std sqrt(2.5)', async () => {
    expect(await at({}, 0, 0)).toBe(3);
    expect(await at({ Type: 'Median' }, 0, 0)).toBe(3);
    expect(await at({ Type: 'StandardDeviation' }, 0, 0)).toBeCloseTo(Math.sqrt(2.5), 6);
    expect(await at({ Type: 'max' }, 0, 0)).toBe(5);
  });

  it('form 1 (string Type, KernelColumns/KernelRows) equals form 2', async () => {
    const a = await runFunction(statistics, { Type: 'Mean', KernelColumns: 3, KernelRows: 1 }, [z]);
    expect(a.value(1, 1)).toBe(5); // 4, 5, 6
    expect(a.value(0, 2)).toBe(7.5); // 7, 8
  });

  it('output types: F32 for Mean/Std, the input type otherwise', async () => {
    const u8 = rasterOf({ width: 4, height: 4, pixelType: 'U8' }, (x, y) => x + 4 * y);
    expect((await runFunction(statistics, { Type: 3 }, [u8])).info.pixelType).toBe('F32');
    expect((await runFunction(statistics, { Type: 4 }, [u8])).info.pixelType).toBe('F32');
    for (const Type of [1, 2, 5, 6, 7]) expect((await runFunction(statistics, { Type }, [u8])).info.pixelType).toBe('U8');
    // An even count of integers: median (5 + 6) / 2 = 5.5 rounds half away to 6.
    const even = await runFunction(statistics, { Type: 5, Columns: 2, Rows: 1 }, [u8]);
    expect(even.value(2, 1)).toBe(6);
  });
});

describe('Statistics: Majority, Minority, NoData, FillNoDataOnly', () => {
  it('Majority is the most frequent value, Minority the least; ties take the smallest', async () => {
    // Row 0: 5 5 7 7 7 ; row 1: 1 2 2 9 9.
    const v = [5, 5, 7, 7, 7, 1, 2, 2, 9, 9];
    const z = rasterOf({ width: 5, height: 2, pixelType: 'S16' }, (x, y) => v[y * 5 + x]!);
    const maj = await runFunction(statistics, { Type: 6, Columns: 5, Rows: 2 }, [z]);
    // At (2, 1) (rows 0..1: an even window has its extra row above): the whole raster:
    // 7 x3, 5 x2, 2 x2, 9 x2, 1 x1 -> majority 7, minority 1. At (2, 0) only row 0: minority 5.
    expect(maj.value(2, 1)).toBe(7);
    expect((await runFunction(statistics, { Type: 7, Columns: 5, Rows: 2 }, [z])).value(2, 1)).toBe(1);
    expect((await runFunction(statistics, { Type: 7, Columns: 5, Rows: 2 }, [z])).value(2, 0)).toBe(5);
    // At (0, 1), window cols -2..2 -> 0..2, rows 0..1: 5 5 7 / 1 2 2: 5 and 2 tie twice -> 2; minority 1 and 7 tie -> 1.
    expect(maj.value(0, 1)).toBe(2);
    expect((await runFunction(statistics, { Type: 7, Columns: 5, Rows: 2 }, [z])).value(0, 1)).toBe(1);
  });

  it('NoData pixels are left out; a NoData centre stays NoData unless FillNoDataOnly', async () => {
    const mask = new Uint8Array(9).fill(1);
    mask[4] = 0;
    mask[0] = 0;
    const z = rasterOf({ width: 3, height: 3 }, (x, y) => 3 * y + x + 1, mask);
    const mean = await runFunction(statistics, {}, [z]);
    expect(mean.valid(1, 1)).toBe(false);
    expect(mean.value(1, 0)).toBe((2 + 3 + 4 + 6) / 4);
    const fill = await runFunction(statistics, { FillNoDataOnly: true }, [z]);
    expect(fill.value(1, 1)).toBeCloseTo((2 + 3 + 4 + 6 + 7 + 8 + 9) / 7, 6);
    expect(fill.value(0, 0)).toBe((2 + 4) / 2);
    expect(fill.value(2, 2)).toBe(9); // valid pixels keep their value
    expect(fill.value(1, 0)).toBe(2);
  });

  it('FillNoDataOnly leaves NoData where the window has no valid pixel', async () => {
    const mask = new Uint8Array(25).fill(1);
    for (const i of [0, 1, 5, 6, 12]) mask[i] = 0;
    const z = rasterOf({ width: 5, height: 5 }, () => 4, mask);
    const r = await runFunction(statistics, { Type: 'Min', FillNoDataOnly: true, Columns: 1, Rows: 1 }, [z]);
    expect(r.valid(0, 0)).toBe(false);
    const r3 = await runFunction(statistics, { Type: 'Min', FillNoDataOnly: true }, [z]);
    expect(r3.valid(0, 0)).toBe(false); // window (0..1, 0..1) all NoData
    expect(r3.value(2, 2)).toBe(4);
    expect(r3.valid(1, 1)).toBe(true);
  });

  it('StandardDeviation stays accurate on large offsets (running sums fall back to two passes)', async () => {
    const rnd = prng(3);
    const v = Array.from({ length: 100 }, () => 123456.75 + Math.round(rnd() * 8) / 1024);
    const z = rasterOf({ width: 10, height: 10, pixelType: 'F64' }, (x, y) => v[y * 10 + x]!);
    const r = await runFunction(statistics, { Type: 4 }, [z]);
    const g = { w: 10, h: 10, v, m: new Uint8Array(100).fill(1) };
    for (let y = 0; y < 10; y++) {
      for (let x = 0; x < 10; x++) {
        expect(Math.abs(r.value(x, y) - statisticOf(4, windowOf(g, x, y, 3, 3).v))).toBeLessThan(1e-7);
      }
    }
    const flat = await runFunction(statistics, { Type: 4 }, [rasterOf({ width: 6, height: 6 }, () => 1074.3540039062)]);
    expect(Array.from(flat.block.bands[0]!).every((s) => s === 0)).toBe(true);
  });
});

describe('Statistics: every type and window shape against the brute-force reference', () => {
  const W = 21;
  const H = 17;
  const rnd = prng(11);
  const v = Array.from({ length: W * H }, () => Math.round(rnd() * 40) / 4);
  const holes = Uint8Array.from({ length: W * H }, (_, i) => (i % 29 === 3 || (i >= 150 && i < 156) || (i % W === 7 && i < 120) ? 0 : 1));
  const src = rasterOf({ width: W, height: H }, (x, y) => v[y * W + x]!, holes);
  const g = { w: W, h: H, v: Float32Array.from(v), m: holes };
  const shapes: [number, number][] = [
    [3, 3],
    [5, 5],
    [4, 2],
    [1, 7],
    [9, 3],
    [11, 11],
  ];
  for (const type of [1, 2, 3, 4, 5, 6, 7]) {
    for (const fill of [false, true]) {
      it(`Type ${type}${fill ? ', FillNoDataOnly' : ''}: windows ${shapes.map((s) => s.join('x')).join(', ')}`, async () => {
        for (const [cols, rows] of shapes) {
          const r = await runFunction(statistics, { Type: type, Columns: cols, Rows: rows, FillNoDataOnly: fill }, [src]);
          for (let y = 0; y < H; y++) {
            for (let x = 0; x < W; x++) {
              const valid = holes[y * W + x] === 1;
              let e: number;
              if (fill && valid) e = g.v[y * W + x]!;
              else if (!fill && !valid) e = Number.NaN;
              else e = statisticOf(type, windowOf(g, x, y, cols, rows).v);
              const where = `${cols}x${rows} (${x}, ${y})`;
              if (Number.isNaN(e)) {
                expect(r.valid(x, y), where).toBe(false);
                continue;
              }
              expect(r.valid(x, y), where).toBe(true);
              expect(Math.abs(r.value(x, y) - e), `${where}: ${r.value(x, y)} vs ${e}`).toBeLessThanOrEqual(
                1e-5 * Math.max(1, Math.abs(e)),
              );
            }
          }
          expect(await tiledVersusWhole(r.node, [6, 5]), `${cols}x${rows} tiled`).toBeUndefined();
        }
      });
    }
  }
});

describe('Statistics: Mean and StdDev without NoData (the fused paths)', () => {
  it('equal the brute-force values, and the general (NoData-aware) path bit for bit away from a hole', async () => {
    const W = 23;
    const H = 19;
    const rnd = prng(5);
    const v = Array.from({ length: W * H }, () => rnd() * 1000 - 300);
    const all = new Uint8Array(W * H).fill(1);
    const oneHole = Uint8Array.from(all, (_, i) => (i === 0 ? 0 : 1));
    const g = { w: W, h: H, v: Float64Array.from(v), m: all };
    for (const [type, cols, rows] of [
      [3, 3, 3],
      [4, 3, 3],
      [3, 5, 4],
      [4, 7, 5],
    ] as const) {
      const args = { Type: type, Columns: cols, Rows: rows };
      // F64: full mantissas in and out, so any difference between the two paths would show.
      const full = await runFunction(statistics, args, [rasterOf({ width: W, height: H, pixelType: 'F64' }, (x, y) => v[y * W + x]!, all)]);
      const holed = await runFunction(statistics, args, [
        rasterOf({ width: W, height: H, pixelType: 'F64' }, (x, y) => v[y * W + x]!, oneHole),
      ]);
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const where = `Type ${type} ${cols}x${rows} (${x}, ${y})`;
          expect(full.valid(x, y), where).toBe(true);
          const win = windowOf(g, x, y, cols, rows).v;
          const e = type === 3 ? mean(win) : Math.sqrt(variance(win));
          expect(Math.abs(full.value(x, y) - e), where).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(e)));
          // Windows that do not reach the hole at (0, 0) see the same values through both paths.
          if (x > cols || y > rows) expect(Object.is(full.value(x, y), holed.value(x, y)), where).toBe(true);
        }
      }
      expect(await tiledVersusWhole(full.node, [6, 5]), `Type ${type} ${cols}x${rows} tiled`).toBeUndefined();
    }
  });
});

describe('Statistics: bad arguments', () => {
  const z = rasterOf({ width: 4, height: 4 }, () => 1);
  const fail = (args: Record<string, unknown>) => catchError(() => applyFunction(statistics, args, [z]));
  it('names the offending field', () => {
    expect(fail({ Type: 8 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Type' });
    expect(fail({ Type: 'Range' })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Type' });
    expect(fail({ Columns: 0 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Columns' });
    expect(fail({ KernelRows: 2.5 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.KernelRows' });
    expect(fail({ FillNoDataOnly: 'maybe' })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.FillNoDataOnly' });
    expect(fail({ Type: 5, Columns: 200, Rows: 200 })).toMatchObject({ code: 'LIMIT_EXCEEDED', path: 'rasterFunctionArguments.Columns' });
  });
});

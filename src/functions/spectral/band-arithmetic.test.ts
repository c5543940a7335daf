/**
 * BandArithmetic: every method against the spec table's formula written out independently here in
 * plain JavaScript (hand-derived reference, per pixel), on a small 6-band U8 raster with pixels that
 * make denominators zero; UserDefined expressions; defaults; NoData; bad arguments (code and path).
 */
import { describe, expect, it } from 'vitest';
import { memorySource } from '../../graph/memory-source.js';
import { applyFunction, catchError, complexOf, gridInfo, rasterOf, runFunction } from '../../../test/helpers.js';
import { bandArithmetic, METHODS } from './band-arithmetic.js';

// 6 bands (1 blue, 2 green, 3 red, 4 NIR, 5 SWIR1, 6 SWIR2), 8 x 4 pixels, U8. Column 0 is all
// zeros (every denominator 0), column 1 has red = 1 (GEMI), the rest are varied.
const W = 8;
const H = 4;
const value = (x: number, y: number, b: number): number =>
  x === 0 ? 0 : x === 1 && b === 2 ? 1 : (x * 37 + y * 11 + b * 53 + x * y * b) % 256;
const l7 = rasterOf({ width: W, height: H, bandCount: 6, pixelType: 'U8' }, value);
const px = (x: number, y: number): number[] => [0, 1, 2, 3, 4, 5].map((b) => value(x, y, b));

const dz = (n: number, d: number): number => (d === 0 ? 0 : n / d); // the vendor client's zero rule
const nd = (a: number, b: number): number => dz(a - b, a + b);

/** The spec table's formulas, per pixel, with the default band numbers of the spec (1-based). */
const REFERENCE: Record<number, { bands: string; f: (v: number[]) => number | number[] }> = {
  1: { bands: '4 3', f: ([, , r, n]) => nd(n!, r!) },
  2: { bands: '4 3 0.33', f: ([, , r, n]) => dz(n! - r!, n! + r! + 0.33) * 1.33 },
  3: {
    bands: '4 3 0.33 0.5 1.5',
    f: ([, , r, n]) => dz(0.33 * (n! - 0.33 * r! - 0.5), 0.5 * n! + r! - 0.5 * 0.33 + 1.5 * (1 + 0.33 ** 2)),
  },
  4: { bands: '4 3', f: ([, , r, n]) => 0.5 * (2 * (n! + 1) - Math.sqrt((2 * n! + 1) ** 2 - 8 * (n! - r!))) },
  5: {
    bands: '4 3',
    f: ([, , r, n]) => {
      const den = n! + r! + 0.5;
      if (r === 1 || den === 0) return 0;
      const eta = (2 * (n! ** 2 - r! ** 2) + 1.5 * n! + 0.5 * r!) / den;
      return eta * (1 - 0.25 * eta) - (r! - 0.125) / (1 - r!);
    },
  },
  6: { bands: '4 3 0.3 0.5', f: ([, , r, n]) => (n! - 0.3 * r! - 0.5) / Math.sqrt(1 + 0.09) },
  7: {
    bands: '1 2 3 4 5 6',
    f: ([b1, b2, b3, b4, b5, b7]) => -0.2848 * b1! - 0.2435 * b2! - 0.5436 * b3! + 0.7243 * b4! + 0.084 * b5! - 1.18 * b7!,
  },
  8: { bands: '1 2 3 4 5 6', f: ([b1, , b3, b4, b5, b6]) => [dz(b5!, b6!) * 100, dz(b5!, b1!) * 100, dz(b3!, b4!) * dz(b5!, b4!) * 100] },
  9: { bands: '3 2 1', f: ([bl, g, r]) => dz(g! - r!, g! + r! - bl!) },
  10: { bands: '4 2', f: ([, g, , n]) => nd(n!, g!) },
  11: { bands: '4 3', f: ([, , r, n]) => dz(n!, r!) },
  12: { bands: '4 5', f: ([, , , n, re]) => nd(n!, re!) },
  13: { bands: '4 5', f: ([, , , n, re]) => dz(n!, re!) },
  14: {
    bands: '4 3 2',
    f: ([, g, r, n]) => dz(1.5 * (1.2 * (n! - g!) - 2.5 * (r! - g!)), Math.sqrt((2 * n! + 1) ** 2 - (6 * n! - 5 * Math.sqrt(r!)) - 0.5)),
  },
  15: { bands: '4 5 2', f: ([, g, , n, re]) => 100 * (n! - re!) - 10 * (n! - g!) },
  16: { bands: '4 5', f: ([, , , n, re]) => (re === 0 ? 0 : n! / re! - 1) },
  17: { bands: '4 2', f: ([, g, , n]) => (g === 0 ? 0 : n! / g! - 1) },
  18: { bands: '5 3', f: ([, , g, , n]) => nd(g!, n!) },
  19: { bands: '5 4 2', f: ([, bl, , r, n]) => dz(2.5 * (n! - r!), n! + 6 * r! - 7.5 * bl! + 1) },
  20: { bands: '3 1', f: ([bl, , r]) => dz(r!, bl!) },
  21: { bands: '5 4', f: ([, , , n, s]) => dz(s!, n!) },
  22: { bands: '5 6', f: ([, , , , s1, s2]) => dz(s1!, s2!) },
  23: { bands: '2 5 6 0.5', f: ([, g, , , n, s]) => dz(g! - 0.5 * n! - 0.5 * s!, g! + 0.5 * n! + 0.5 * s!) },
  24: { bands: '3 4', f: ([, , r, n]) => dz(1, (0.1 - r!) ** 2 + (0.06 - n!) ** 2) },
  25: { bands: '4 6', f: ([, , , n, , s]) => nd(n!, s!) },
  26: { bands: '6 5', f: ([, , , , n, s]) => nd(s!, n!) },
  27: { bands: '4 5', f: ([, , , n, s]) => nd(n!, s!) },
  28: { bands: '2 5', f: ([, g, , , s]) => nd(g!, s!) },
  29: { bands: '2 6', f: ([, g, , , , s]) => nd(g!, s!) },
};

describe('BandArithmetic methods (spec table formulas, hand-written references)', () => {
  it('covers every method of the spec table', () => {
    expect(Object.keys(REFERENCE).map(Number)).toEqual(Object.keys(METHODS).map(Number));
  });

  for (const [code, ref] of Object.entries(REFERENCE)) {
    it(`Method ${code} ${METHODS[Number(code)]!.name}`, async () => {
      const r = await runFunction(bandArithmetic, { Method: Number(code), BandIndexes: ref.bands }, [l7]);
      expect(r.info.pixelType).toBe('F32');
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const want = ref.f(px(x, y));
          const list = Array.isArray(want) ? want : [want];
          expect(r.info.bandCount).toBe(list.length);
          const valid = list.every((v) => Number.isFinite(Math.fround(v)));
          expect(r.valid(x, y), `(${x}, ${y}) valid`).toBe(valid);
          if (valid) list.forEach((v, b) => expect(r.value(x, y, b), `(${x}, ${y}) band ${b}`).toBeCloseTo(Math.fround(v), 4));
        }
      }
    });
  }

  it('uses the documented default BandIndexes and default constants', async () => {
    for (const [method, given] of [
      [1, '4 3'],
      [2, '4 3'],
      [3, '4 3'],
      [6, '4 3 0.3'],
      [9, '3 2 1'],
      [19, '5 4 2'],
      [26, '6 5'],
    ] as const) {
      const a = await runFunction(bandArithmetic, { Method: method }, [l7]);
      const b = await runFunction(bandArithmetic, { Method: method, BandIndexes: given }, [l7]);
      expect(Array.from(a.block.bands[0]!), `method ${method}`).toEqual(Array.from(b.block.bands[0]!));
    }
  });

  it('NDVI: appendix-C style value, zero denominator is 0 (not NoData)', async () => {
    const r = rasterOf({ width: 2, height: 1, bandCount: 2, pixelType: 'U8' }, (x, _y, b) => (x === 0 ? [100, 200][b]! : 0));
    const out = await runFunction(bandArithmetic, { Method: 1, BandIndexes: '2 1' }, [r]);
    expect(out.value(0, 0)).toBeCloseTo(1 / 3, 6);
    expect(out.valid(1, 0)).toBe(true);
    expect(out.value(1, 0)).toBe(0);
  });

  it('promotes integer inputs before arithmetic (no 8-bit wrap-around)', async () => {
    const r = rasterOf({ width: 1, height: 1, bandCount: 2, pixelType: 'U8' }, (_x, _y, b) => [250, 200][b]!);
    const out = await runFunction(bandArithmetic, { Method: 0, BandIndexes: 'B1 + B2 * 2' }, [r]);
    expect(out.value(0, 0)).toBe(650);
  });
});

describe('BandArithmetic UserDefined (Method 0)', () => {
  it('evaluates + - * / with precedence, unary minus, b/B references', async () => {
    const r = await runFunction(bandArithmetic, { BandIndexes: '(b4 - B3) / (B4 + b3) * -2 + 1' }, [l7]);
    const [, , red, nir] = px(5, 2);
    expect(r.value(5, 2)).toBeCloseTo(Math.fround(((nir! - red!) / (nir! + red!)) * -2 + 1), 5);
  });

  it('division by zero gives 0 inside the expression; NoData inputs give NoData', async () => {
    const mask = new Uint8Array(W * H).fill(1);
    mask[3] = 0;
    const masked = rasterOf({ width: W, height: H, bandCount: 6, pixelType: 'U8' }, value, mask);
    const r = await runFunction(bandArithmetic, { BandIndexes: 'B1 / B2 + 5' }, [masked]);
    expect(r.value(0, 0)).toBe(5); // 0/0 -> 0
    expect(r.valid(3, 0)).toBe(false);
    expect(Number.isNaN(r.block.bands[0]![3])).toBe(true);
  });

  it('accepts multi-digit band numbers', async () => {
    const many = rasterOf({ width: 2, height: 1, bandCount: 12 }, (x, _y, b) => x + b);
    const r = await runFunction(bandArithmetic, { BandIndexes: 'B12 - B10' }, [many]);
    expect(r.value(1, 0)).toBe(2);
  });
});

describe('BandArithmetic bad arguments', () => {
  const P = 'rasterFunctionArguments.BandIndexes';
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['UserDefined without an expression', { Method: 0 }, /needs an expression/],
    ['unknown band in the expression', { BandIndexes: 'B4 - B9' }, /unknown name B9.*at position 5/],
    ['band 0', { BandIndexes: 'B0 + 1' }, /unknown name B0/],
    ['power operator', { BandIndexes: 'B4 ** 2' }, /not allowed.*at position 3/],
    ['caret', { BandIndexes: 'B4 ^ 2' }, /not allowed/],
    ['function call', { BandIndexes: 'sqrt(B4)' }, /not allowed/],
    ['property access', { BandIndexes: 'B4.constructor' }, /unexpected character '\.'/],
    ['unbalanced', { BandIndexes: '(B4 - B3' }, /expected '\)'/],
    ['too few band numbers', { Method: 2, BandIndexes: '4' }, /needs 2 band numbers/],
    ['band out of range', { Method: 1, BandIndexes: '7 3' }, /1-based, 1\.\.6/],
    ['0-based band number', { Method: 1, BandIndexes: '0 3' }, /1-based/],
    ['not a number', { Method: 1, BandIndexes: '4 red' }, /not a number/],
    ['no default for the method', { Method: 10 }, /needs BandIndexes/],
    ['not a string', { Method: 1, BandIndexes: { nir: 4 } }, /expected a string/],
  ];
  for (const [what, args, message] of cases) {
    it(what, () => {
      const e = catchError(() => applyFunction(bandArithmetic, args, [l7]));
      expect(e?.code).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(P);
      expect(e?.message).toMatch(message);
    });
  }

  it('an unknown method', () => {
    const e = catchError(() => applyFunction(bandArithmetic, { Method: 30 }, [l7]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.Method']);
  });

  it('warns about extra numbers, accepts method names', () => {
    const node = applyFunction(bandArithmetic, { Method: 'NDVI', BandIndexes: '4 3 9 9' }, [l7]);
    expect(node.plan.warnings?.[0]).toMatch(/ignored/);
  });

  it('rejects complex rasters', () => {
    const c = complexOf({ width: 2, height: 2, bandCount: 2 }, () => [1, 2]);
    const e = catchError(() => applyFunction(bandArithmetic, { Method: 1, BandIndexes: '1 2' }, [c]));
    expect([e?.code, e?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
  });

  it('keeps the grid and spatial reference of the input', () => {
    const src = memorySource(
      'ba-grid',
      { ...gridInfo({ width: 3, height: 2, bandCount: 4, cellSize: 30 }), statistics: [{ min: 0, max: 1 }] },
      [new Float32Array(6), new Float32Array(6), new Float32Array(6), new Float32Array(6)],
    );
    const node = applyFunction(bandArithmetic, { Method: 1 }, [src]);
    expect(node.info.cellSize).toEqual({ x: 30, y: 30 });
    expect(node.info.statistics).toBeUndefined();
  });
});

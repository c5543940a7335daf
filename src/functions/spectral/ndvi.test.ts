/**
 * NDVI: the spec's appendix C vector (IR 200, VIS 100 -> 133), both output forms derived by hand
 * from the spec formula, the zero-denominator rule, NoData, advertised statistics, bad arguments.
 */
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, complexOf, rasterOf, runFunction } from '../../../test/helpers.js';
import { ndvi } from './ndvi.js';

// Band 0 visible, band 1 infrared; pixels: (100, 200), (50, 50), (0, 0), (200, 0), (30, 90), masked.
const PAIRS = [
  [100, 200],
  [50, 50],
  [0, 0],
  [200, 0],
  [30, 90],
  [10, 20],
] as const;
const mask = Uint8Array.from(PAIRS, (_, i) => (i === 5 ? 0 : 1));
const src = rasterOf({ width: PAIRS.length, height: 1, bandCount: 2, pixelType: 'U8' }, (x, _y, b) => PAIRS[x]![b]!, mask);

describe('NDVI', () => {
  it('scaled U8: trunc(100*ndvi + 100.5) (appendix C: 133), zero denominator 0, NoData kept', async () => {
    const r = await runFunction(ndvi, {}, [src]);
    expect(r.info.pixelType).toBe('U8');
    expect(r.info.statistics).toEqual([{ min: 0, max: 200, mean: 100, stdDev: 10 }]);
    // (200-100)/300*100+100.5 = 133.83 -> 133; 0 -> 100; 0/0 -> 0; -1 -> 0; 0.5 -> 150.
    expect([0, 1, 2, 3, 4].map((x) => r.value(x, 0))).toEqual([133, 100, 0, 0, 150]);
    expect([0, 1, 2, 3, 4, 5].map((x) => r.valid(x, 0))).toEqual([true, true, true, true, true, false]);
  });

  it('scientific F32 in -1..1 (any case of the argument name)', async () => {
    const r = await runFunction(ndvi, { scientificOutput: true }, [src]);
    expect(r.info.pixelType).toBe('F32');
    expect(r.info.statistics).toEqual([{ min: -1, max: 1, mean: 0, stdDev: 0.1 }]);
    expect(r.value(0, 0)).toBeCloseTo(1 / 3, 7);
    expect([1, 2, 3, 4].map((x) => r.value(x, 0))).toEqual([0, 0, -1, 0.5]);
    expect(r.valid(5, 0)).toBe(false);
    expect(r.value(5, 0)).toBeNaN();
  });

  it('takes 0-based band ids', async () => {
    const r = await runFunction(ndvi, { VisibleBandID: 1, InfraredBandID: 0, ScientificOutput: true }, [src]);
    expect(r.value(0, 0)).toBeCloseTo(-1 / 3, 7);
  });

  it('clamps scaled values of signed inputs to 0..255', async () => {
    const s = rasterOf({ width: 1, height: 1, bandCount: 2, pixelType: 'S16' }, (_x, _y, b) => [5, -10][b]!);
    // (-10 - 5) / (-5) = 3 -> 400.5 -> 255
    expect((await runFunction(ndvi, {}, [s])).value(0, 0)).toBe(255);
  });

  it('rejects bands that do not exist (code and path) and complex rasters', () => {
    for (const [name, args] of [
      ['InfraredBandID', { InfraredBandID: 2 }],
      ['VisibleBandID', { VisibleBandID: 5 }],
    ] as const) {
      const e = catchError(() => applyFunction(ndvi, args, [src]));
      expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', `rasterFunctionArguments.${name}`]);
      expect(e?.message).toMatch(/0-based/);
    }
    const neg = catchError(() => applyFunction(ndvi, { VisibleBandID: -1 }, [src]));
    expect([neg?.code, neg?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.VisibleBandID']);
    const c = complexOf({ width: 2, height: 2, bandCount: 2 }, () => [1, 1]);
    expect(catchError(() => applyFunction(ndvi, {}, [c]))?.code).toBe('UNSUPPORTED_INPUT');
  });
});

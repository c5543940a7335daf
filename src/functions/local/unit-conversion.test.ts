// Expected values derived by hand from the published definitions (NIST SP 811, appendix B.8/B.9:
// 1 in = 0.0254 m, 1 ft = 0.3048 m, 1 yd = 0.9144 m, 1 mi = 1609.344 m, 1 nmi = 1852 m,
// 1 point = 1/72 in, 1 km/h = 1/3.6 m/s, 1 knot = 1852/3600 m/s, 1 mph = 0.44704 m/s;
// t/°F = t/°C × 9/5 + 32, T/K = t/°C + 273.15), then rounded to F32 as the output type is.
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { conversion, unitConversion, UNITS } from './unit-conversion.js';

const one = (v: number, pixelType: 'F32' | 'F64' | 'S16' = 'F64') => rasterOf({ width: 1, height: 1, pixelType }, () => v);
async function convert(v: number, from: number | string, to: number | string): Promise<number> {
  return (await runFunction(unitConversion, { FromUnit: from, ToUnit: to }, [one(v)])).value(0, 0);
}

describe('UnitConversion', () => {
  it('distance: every code against the published metre factors', async () => {
    const metres: Record<number, number> = {
      1: 0.0254,
      2: 0.0254 / 72,
      3: 0.3048,
      4: 0.9144,
      5: 1609.344,
      6: 1852,
      7: 0.001,
      8: 0.01,
      9: 1,
      10: 1000,
      11: 111319.490793,
      12: 0.1,
    };
    for (const [code, m] of Object.entries(metres)) {
      // one unit in metres, and one metre in the unit
      expect(await convert(1, Number(code), 9), `code ${code} -> m`).toBe(Math.fround(m));
      expect(await convert(1, 9, Number(code)), `m -> code ${code}`).toBe(Math.fround(1 / m));
    }
    expect(await convert(1, 5, 3)).toBe(5280); // 1 mile = 5280 ft
    expect(await convert(1, 4, 1)).toBe(36); // 1 yard = 36 in
    expect(await convert(1, 1, 2)).toBe(72); // 1 in = 72 points
    expect(await convert(1, 6, 10)).toBe(Math.fround(1.852));
    expect(await convert(100, 3, 9)).toBe(Math.fround(30.48));
  });

  it('speed: km/h, knots, ft/s, mph', async () => {
    expect(await convert(36, 101, 100)).toBe(10);
    expect(await convert(1, 102, 101)).toBe(Math.fround(1.852));
    expect(await convert(1, 104, 101)).toBe(Math.fround(1.609344));
    expect(await convert(1, 103, 100)).toBe(Math.fround(0.3048));
    expect(await convert(60, 104, 103)).toBe(88); // 60 mph = 88 ft/s
    expect(await convert(10, 100, 102)).toBe(Math.fround(36000 / 1852));
  });

  it('temperature through Celsius', async () => {
    expect(await convert(100, 200, 201)).toBe(212);
    expect(await convert(-40, 201, 200)).toBe(-40);
    expect(await convert(0, 202, 200)).toBe(Math.fround(-273.15));
    expect(await convert(32, 201, 202)).toBe(Math.fround(273.15));
    expect(await convert(300, 202, 201)).toBe(Math.fround(80.33));
    expect(await convert(37, 200, 200)).toBe(37);
  });

  it('accepts names and geo-prefixed names for the codes', async () => {
    expect(await convert(1, 'Feet', 'geoInches')).toBe(12);
    expect(await convert(1, 'geoKilometers', 'meters')).toBe(1000);
  });

  it('every conversion in the table is linear with a positive scale', () => {
    for (const from of Object.keys(UNITS).map(Number)) {
      for (const to of Object.keys(UNITS).map(Number)) {
        if (UNITS[from]!.category === UNITS[to]!.category) expect(conversion(from, to).scale).toBeGreaterThan(0);
      }
    }
  });

  it('F32 output, NoData NaN, mask passed, statistics mapped, S16 input', async () => {
    const info: RasterInfo = {
      ...gridInfo({ width: 3, height: 1, pixelType: 'S16', noData: -9999 }),
      statistics: [{ min: -10, max: 100, mean: 20, stdDev: 5 }],
    };
    const src = memorySource('s16', info, [Int16Array.from([-10, -9999, 100])]);
    const r = await runFunction(unitConversion, { FromUnit: 200, ToUnit: 201 }, [src]);
    expect(r.info.pixelType).toBe('F32');
    expect(Number.isNaN(r.info.noData)).toBe(true);
    expect(Array.from(r.block.mask)).toEqual([1, 0, 1]);
    expect([r.value(0, 0), r.value(2, 0)]).toEqual([14, 212]);
    expect(r.info.statistics?.[0]).toMatchObject({ min: 14, max: 212, mean: 68, stdDev: 9 });
  });

  it('values beyond the F32 range and NaN become NoData', async () => {
    const src = rasterOf({ width: 2, height: 1, pixelType: 'F64' }, (x) => (x === 0 ? 1e36 : Number.NaN));
    const r = await runFunction(unitConversion, { FromUnit: 10, ToUnit: 2 }, [src]);
    expect(Array.from(r.block.mask)).toEqual([0, 0]);
  });

  it('mixing categories is INVALID_ARGUMENT at ToUnit; unknown or missing codes at their argument', () => {
    const mix = catchError(() => applyFunction(unitConversion, { FromUnit: 100, ToUnit: 9 }, [one(1)]));
    expect(mix).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.ToUnit' });
    expect(mix?.message).toMatch(/speed.*distance/);
    const temp = catchError(() => applyFunction(unitConversion, { FromUnit: 3, ToUnit: 202 }, [one(1)]));
    expect(temp).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.ToUnit' });
    expect(catchError(() => applyFunction(unitConversion, { FromUnit: 13, ToUnit: 9 }, [one(1)]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.FromUnit',
    });
    expect(catchError(() => applyFunction(unitConversion, { FromUnit: 9 }, [one(1)]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.ToUnit',
    });
  });

  it('tiled equals whole', async () => {
    const src = rasterOf(
      { width: 60, height: 40, bandCount: 2, pixelType: 'F32' },
      (x, y, b) => x * 3.7 - y * 11.1 + b,
      Uint8Array.from({ length: 2400 }, (_, i) => (i % 7 ? 1 : 0)),
    );
    expect(await tiledVersusWhole(applyFunction(unitConversion, { FromUnit: 201, ToUnit: 202 }, [src]), [13, 11])).toBeUndefined();
  });
});

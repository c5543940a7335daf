// Expected values derived by hand from the spec formula |z| = sqrt(re² + im²) (Pythagorean
// triples give exact magnitudes); overflow and NaN cases from the F32 range and §1.2 rule 3.
import { describe, expect, it } from 'vitest';
import { memorySource } from '../../graph/memory-source.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { complex } from './complex.js';

describe('Complex', () => {
  it('C64 -> F32 magnitude per band, mask passed through', async () => {
    const info = { ...gridInfo({ width: 3, height: 1, bandCount: 2, pixelType: 'C64' }), bandNames: ['hh', 'hv'] };
    // band 1: (3,4) (-5,12) (0,0); band 2: (8,-15) (-7,-24) (1,0)
    const src = memorySource(
      'c64',
      info,
      [Float32Array.from([3, 4, -5, 12, 0, 0]), Float32Array.from([8, -15, -7, -24, 1, 0])],
      Uint8Array.from([1, 0, 1]),
    );
    const r = await runFunction(complex, {}, [src]);
    expect(r.info).toMatchObject({ pixelType: 'F32', bandCount: 2, bandNames: ['hh', 'hv'] });
    expect(Number.isNaN(r.info.noData)).toBe(true);
    expect(r.block.bands[0]).toBeInstanceOf(Float32Array);
    expect([r.value(0, 0), r.value(2, 0)]).toEqual([5, 0]);
    expect([r.value(0, 0, 1), r.value(2, 0, 1)]).toEqual([17, 1]);
    expect(Array.from(r.block.mask)).toEqual([1, 0, 1]);
  });

  it('C128 -> F64, exact in double, no overflow for huge parts (hypot)', async () => {
    const info = gridInfo({ width: 3, height: 1, pixelType: 'C128' });
    const src = memorySource('c128', info, [Float64Array.from([0.1, 0.2, 3e200, 4e200, -1e-200, 0])]);
    const r = await runFunction(complex, {}, [src]);
    expect(r.info.pixelType).toBe('F64');
    expect(r.block.bands[0]).toBeInstanceOf(Float64Array);
    expect(r.value(0, 0)).toBe(Math.sqrt(0.1 * 0.1 + 0.2 * 0.2));
    // 3-4-5 at 1e200: the squares overflow float64, the magnitude does not.
    expect(Math.abs(r.value(1, 0) / 5e200 - 1)).toBeLessThan(1e-15);
    // and at 1e-200 the squares underflow to 0, the magnitude does not.
    expect(r.value(2, 0)).toBe(1e-200);
    expect(Array.from(r.block.mask)).toEqual([1, 1, 1]);
  });

  it('a magnitude beyond the F32 range, or a NaN part, is NoData', async () => {
    const info = gridInfo({ width: 3, height: 1, pixelType: 'C64' });
    const src = memorySource('c64-big', info, [Float32Array.from([3e38, 3e38, Number.NaN, 1, 2e38, 0])]);
    const r = await runFunction(complex, {}, [src]);
    expect(Array.from(r.block.mask)).toEqual([0, 0, 1]);
    expect(r.value(2, 0)).toBe(Math.fround(2e38));
  });

  it('a real (non-complex) input is UNSUPPORTED_INPUT at Raster', () => {
    const e = catchError(() => applyFunction(complex, {}, [rasterOf({ width: 2, height: 2, pixelType: 'F32' }, () => 1)]));
    expect(e?.code).toBe('UNSUPPORTED_INPUT');
    expect(e?.path).toBe('rasterFunctionArguments.Raster');
    expect(e?.message).toMatch(/C64 or C128.*F32/);
  });

  it('tiled equals whole', async () => {
    const w = 70;
    const h = 50;
    const z = new Float32Array(2 * w * h).map((_, i) => Math.sin(i * 0.37) * 1000);
    const src = memorySource(
      'c64-tiles',
      gridInfo({ width: w, height: h, pixelType: 'C64' }),
      [z],
      Uint8Array.from({ length: w * h }, (_, i) => (i % 13 ? 1 : 0)),
    );
    expect(await tiledVersusWhole(applyFunction(complex, {}, [src]), [17, 9])).toBeUndefined();
  });
});

// Expected values derived by hand from out_k = Σ_j M[k][j] in_j, not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { spectralConversion } from './spectral-conversion.js';

const src = () =>
  rasterOf(
    { width: 2, height: 1, bandCount: 2, pixelType: 'U8' },
    (x, _y, b) =>
      [
        [10, 20],
        [3, 4],
      ][x]![b]!,
    Uint8Array.from([1, 0]),
  );

describe('SpectralConversion', () => {
  it('applies the row-major matrix (row k -> output band k) in F32', async () => {
    const r = await runFunction(spectralConversion, { conversionMatrix: '0.5 0.25 -1 2' }, [src()]);
    expect(r.info.pixelType).toBe('F32');
    expect([r.value(0, 0, 0), r.value(0, 0, 1)]).toEqual([10, 30]);
    expect(r.valid(1, 0)).toBe(false);
  });

  it('rejects a matrix that is not N x N', () => {
    for (const m of [[1, 2, 3], undefined]) {
      const e = catchError(() => applyFunction(spectralConversion, m ? { ConversionMatrix: m } : {}, [src()]));
      expect(e?.code).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe('rasterFunctionArguments.ConversionMatrix');
    }
  });
});

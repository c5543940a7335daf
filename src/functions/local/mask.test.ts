// Expected masks derived by hand from the spec's Mask rule (per-band NoData values and inclusive
// ranges; MatchAny / MatchAll), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction, type Result } from '../../../test/helpers.js';
import { mask } from './mask.js';

// Band 0: 0 1 2 3 4; band 1: 10 11 12 13 14.
const src = (pixelType: 'U8' | 'F32' = 'U8') => rasterOf({ width: 5, height: 1, bandCount: 2, pixelType }, (x, _y, b) => x + 10 * b);
const valid = (r: Result): boolean[] => Array.from({ length: 5 }, (_, x) => r.valid(x, 0));

describe('Mask', () => {
  it('MatchAny: NoData values per band (space-separated) and included ranges', async () => {
    const r = await runFunction(mask, { NoDataValues: ['0 4', '12'], IncludedRanges: [0, 3] }, [src()]);
    // band 0 NoData at 0, 4 (values) and 4 (outside [0, 3]); band 1 NoData at 12.
    expect(valid(r)).toEqual([false, true, false, true, false]);
    expect(r.value(1, 0, 1)).toBe(11); // values unchanged
    expect(r.info.pixelType).toBe('U8');
  });

  it('MatchAll: NoData only where every band is NoData', async () => {
    const r = await runFunction(mask, { NoDataValues: ['0 2', '12 13'], NoDataInterpretation: 'MatchAll' }, [src()]);
    expect(valid(r)).toEqual([true, true, false, true, true]);
  });

  it('ExcludedRanges (extension) and F32 rounding of NoData values', async () => {
    const f = rasterOf({ width: 3, height: 1, pixelType: 'F32' }, (x) => [0.1, 0.2, 0.3][x]!);
    const r = await runFunction(mask, { NoDataValues: ['0.1'], ExcludedRanges: [0.25, 1] }, [f]);
    expect(Array.from({ length: 3 }, (_, x) => r.valid(x, 0))).toEqual([false, true, false]);
  });

  it('rejects malformed arguments with the argument path', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ NoDataValues: ['0', '1', '2'] }, 'NoDataValues'],
      [{ NoDataValues: ['x'] }, 'NoDataValues[0]'],
      [{ IncludedRanges: [0, 1, 2] }, 'IncludedRanges'],
      [{ IncludedRanges: [5, 1] }, 'IncludedRanges'],
      [{ ExcludedRanges: [0, 1, 0, 1, 0, 1] }, 'ExcludedRanges'],
    ];
    for (const [args, field] of cases) {
      const e = catchError(() => applyFunction(mask, args, [src()]));
      expect(e?.code, JSON.stringify(args)).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
  });
});

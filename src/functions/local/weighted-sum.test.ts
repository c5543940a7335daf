// Expected values derived by hand from Σ value_i × weight_i (F32), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, constant, rasterOf, runFunction } from '../../../test/helpers.js';
import { weightedSum } from './weighted-sum.js';

const a = () => rasterOf({ width: 3, height: 1 }, (x) => [1, 2, 3][x]!, Uint8Array.from([1, 1, 0]));
const b = () => rasterOf({ width: 3, height: 1, pixelType: 'S16' }, (x) => [10, -20, 30][x]!);

describe('WeightedSum', () => {
  it('sums weighted values; NoData in any input is NoData', async () => {
    const r = await runFunction(weightedSum, { Weights: [2, -0.5], Fields: ['Value', 'value'] }, [a(), b()]);
    expect(r.info.pixelType).toBe('F32');
    expect([r.value(0, 0), r.value(1, 0)]).toEqual([2 - 5, 4 + 10]);
    expect(r.valid(2, 0)).toBe(false);
  });

  it('defaults every weight to 1 and resamples other grids onto the first', async () => {
    const coarse = rasterOf({ width: 2, height: 1, cellSize: 2 }, (x) => [100, 200][x]!);
    const r = await runFunction(weightedSum, {}, [rasterOf({ width: 4, height: 1, pixelType: 'U8' }, () => 1), coarse]);
    expect(r.info.width).toBe(4);
    // nearest/bilinear at centres 0.25, 0.75 (coarse pixels): bilinear with edge renormalisation.
    expect(r.value(0, 0)).toBe(101);
    expect(r.value(3, 0)).toBe(201);
  });

  it('rejects malformed arguments with the argument path', () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ Weights: [1] }, 'Weights', 'INVALID_ARGUMENT'],
      [{ Fields: ['Value'] }, 'Fields', 'INVALID_ARGUMENT'],
      [{ Fields: ['Value', 'Area'] }, 'Fields[1]', 'UNSUPPORTED_INPUT'],
    ];
    for (const [args, field, code] of cases) {
      const e = catchError(() => applyFunction(weightedSum, args, [a(), b()]));
      expect(e?.code, JSON.stringify(args)).toBe(code);
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
    expect(catchError(() => applyFunction(weightedSum, {}, [a(), constant([2])]))?.path).toBe('rasterFunctionArguments.Rasters[1]');
  });
});

// Expected values derived by hand from the ArgStatistics definitions (0-based band indexes across
// inputs, ties -> UndefinedClass, lower median, longest run), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
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

// Pass-through pixels and published statistics checked by hand; downstream use through Stretch.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { statisticsHistogram } from './statistics-histogram.js';
import { stretch } from './stretch.js';

const src = () =>
  rasterOf({ width: 3, height: 1, bandCount: 2, pixelType: 'S16' }, (x, _y, b) => (b + 1) * (x - 1) * 100, Uint8Array.from([1, 1, 0]));

describe('StatisticsHistogram', () => {
  it('publishes the given statistics and histograms; pixels and mask pass through', async () => {
    const stats = [{ min: -100, max: 100, mean: 0, standardDeviation: 81.6, count: 2, median: 0, mode: -100 }, [-200, 200, 0, 163]];
    const r = await runFunction(
      statisticsHistogram,
      { Statistics: stats, Histograms: [{ size: 2, min: -100, max: 100, counts: [1, 1] }] },
      [src()],
    );
    expect(r.info.statistics).toEqual([
      { min: -100, max: 100, mean: 0, stdDev: 81.6, count: 2, median: 0, mode: -100 },
      { min: -200, max: 200, mean: 0, stdDev: 163 },
    ]);
    expect(r.info.histograms).toEqual([
      { size: 2, min: -100, max: 100, counts: [1, 1] },
      { size: 2, min: -100, max: 100, counts: [1, 1] },
    ]);
    expect(r.info.pixelType).toBe('S16');
    expect([r.value(0, 0, 0), r.value(1, 0, 1), r.valid(2, 0)]).toEqual([-100, 0, false]);
  });

  it('feeds a Stretch without DRA (StandardDeviation from the published mean and deviation)', async () => {
    // Band 1: mean 0, std 25, n 2 -> [-50, 50] within [-100, 100]; v = 0 -> 127.5 -> 128, -100 -> 0.
    const node = applyFunction(statisticsHistogram, { Statistics: [{ min: -100, max: 100, mean: 0, standardDeviation: 25 }] }, [src()]);
    const r = await runFunction(stretch, { StretchType: 3 }, [node]);
    expect([r.value(0, 0, 0), r.value(1, 0, 0), r.value(1, 0, 1)]).toEqual([0, 128, 128]);
  });

  it('rejects a call without Statistics and Histograms, and malformed entries', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'rasterFunctionArguments.Statistics'],
      [{ Statistics: [{ max: 1 }] }, 'rasterFunctionArguments.Statistics[0]'],
      [{ Statistics: [{ min: 0, max: 1, mean: 'x' }] }, 'rasterFunctionArguments.Statistics[0].mean'],
      [
        {
          Statistics: [
            [0, 1],
            [0, 1],
            [0, 1],
          ],
        },
        'rasterFunctionArguments.Statistics',
      ],
      [{ Histograms: [{ min: 0, max: 1, counts: [1, -2] }] }, 'rasterFunctionArguments.Histograms[0].counts'],
      [{ Histograms: [{ min: 2, max: 1, counts: [1] }] }, 'rasterFunctionArguments.Histograms[0].max'],
      [{ Histograms: {} }, 'rasterFunctionArguments.Histograms'],
    ];
    for (const [args, path] of cases) {
      const e = catchError(() => applyFunction(statisticsHistogram, args, [src()]));
      expect([e?.code, e?.path], JSON.stringify(args)).toEqual(['INVALID_ARGUMENT', path]);
    }
  });
});

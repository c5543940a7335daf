// Colours derived by hand from the documented mapping (no independent tool draws trend rasters).
// Request histograms have 1024 bins: a value v at the top of the range has bin centre v - w/2.
import { describe, expect, it } from 'vitest';
import { timeSeriesMultidim } from '../../core/multidim.js';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { trendAnalysis } from './trend-analysis.js';
import { trendToRgb } from './trend-to-rgb.js';

const rgb = (r: Awaited<ReturnType<typeof runFunction>>, x: number) => [0, 1, 2].map((b) => r.value(x, 0, b));

describe('TrendToRGB', () => {
  it('linear: red for falling, green for rising, brightness |slope| / p98(|slope|)', async () => {
    const slopes = [-4, -2, 0, 2, 4];
    const src = rasterOf({ width: 5, height: 1, bandCount: 2 }, (x, _y, b) => (b === 0 ? slopes[x]! : 10));
    const r = await runFunction(trendToRgb, {}, [src]);
    const s = 4 - 8 / 1024 / 2; // p98 of |slope|: the top bin's centre
    const byte = (v: number) => Math.floor(255 * Math.min(1, v / s) + 0.5);
    expect([0, 1, 2, 3, 4].map((x) => rgb(r, x))).toEqual([
      [255, 0, 0],
      [byte(2), 0, 0],
      [0, 0, 0],
      [0, byte(2), 0],
      [0, 255, 0],
    ]);
    expect(r.node.plan.warnings?.[0]).toMatch(/no TrendAnalysis metadata/);
  });

  it('harmonic: hue = phase, saturation = amplitude / A, value = intercept stretched', async () => {
    // bands: slope, intercept, cos_1, sin_1
    const px = [
      [0, 0, 1, 0],
      [0, 10, 0, 1],
    ];
    const src = rasterOf({ width: 2, height: 1, bandCount: 4 }, (x, _y, b) => px[x]![b]!);
    const r = await runFunction(trendToRgb, { ModelType: 1 }, [src]);
    const top = 1 - 1 / 1024 / 2;
    const sat = 1 / Math.hypot(top, top);
    expect(rgb(r, 0)).toEqual([0, 0, 0]); // intercept at the minimum: value 0
    // hue 90: r = V(1 - S/2), g = V, b = V(1 - S)
    expect(rgb(r, 1)).toEqual([Math.round(255 * (1 - sat / 2)), 255, Math.round(255 * (1 - sat))]);
  });

  it('checks the trend model', () => {
    const times = Array.from({ length: 4 }, (_, k) => Date.UTC(2001, 0, 1 + 40 * k));
    const series = rasterOf(
      { width: 1, height: 1, bandCount: 4, extra: { multidimensional: timeSeriesMultidim('v', times) } },
      (_x, _y, b) => b,
    );
    const linear = applyFunction(trendAnalysis, {}, [series]);
    const e1 = catchError(() => applyFunction(trendToRgb, { ModelType: 1 }, [linear]));
    expect([e1?.code, e1?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.ModelType']);
    const poly = applyFunction(trendAnalysis, { RegressionType: 2 }, [series]);
    expect(catchError(() => applyFunction(trendToRgb, {}, [poly]))?.code).toBe('UNSUPPORTED_INPUT');
    const e3 = catchError(() => applyFunction(trendToRgb, {}, [rasterOf({ width: 1, height: 1 }, () => 1)]));
    expect([e3?.code, e3?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
  });
});

// Expected coefficients derived by hand from the model formulas (series built from known
// coefficients, and one 4-point OLS worked out on paper), not from our output.
import { describe, expect, it } from 'vitest';
import { timeSeriesMultidim, type Multidimensional } from '../../core/multidim.js';
import type { RasterNode } from '../../graph/types.js';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { trendAnalysis } from './trend-analysis.js';
import { trend } from './trend.js';
import { trendToRgb } from './trend-to-rgb.js';

const DAY = 86400000;
/** A 1-row raster with one single-band series per pixel: `series[x][k]` at `times[k]`. */
export function seriesRaster(times: readonly number[], series: readonly (readonly number[])[], md?: Multidimensional): RasterNode {
  return rasterOf(
    {
      width: series.length,
      height: 1,
      bandCount: times.length,
      pixelType: 'F64',
      extra: { multidimensional: md ?? timeSeriesMultidim('v', times) },
    },
    (x, _y, b) => series[x]![b]!,
  );
}

const T0 = Date.UTC(2001, 0, 1);
const times = Array.from({ length: 8 }, (_, k) => T0 + k * 97 * DAY);
const td = times.map((t) => t / DAY);
const W = (t: number) => (2 * Math.PI * t) / 365.25;
const lin = td.map((t) => 2 + 0.5 * t);
const linGap = lin.map((v, k) => (k === 2 ? Number.NaN : v));
const quad = td.map((t) => 1e-4 * t * t - 3 * t + 7);
const harm = td.map((t) => 3 + 0.01 * t + 2 * Math.cos(W(t)) - Math.sin(W(t)));

describe('TrendAnalysis', () => {
  it('linear: slope, intercept, RMSE; NoData slices skipped (IgnoreNoData true) or fatal (false)', async () => {
    const src = seriesRaster(times, [lin, linGap]);
    const r = await runFunction(trendAnalysis, {}, [src]);
    expect(r.info.bandCount).toBe(3);
    expect(r.info.pixelType).toBe('F64');
    expect(r.info.bandNames).toEqual(['v_Slope', 'v_Intercept', 'v_RMSE']);
    for (const x of [0, 1]) {
      expect(r.value(x, 0, 0)).toBeCloseTo(0.5, 10);
      expect(r.value(x, 0, 1)).toBeCloseTo(2, 5);
      expect(r.value(x, 0, 2)).toBeCloseTo(0, 6);
    }
    const strict = await runFunction(trendAnalysis, { IgnoreNoData: false }, [src]);
    expect(strict.valid(0, 0)).toBe(true);
    expect(strict.valid(1, 0)).toBe(false);
    expect(r.info.multidimensional?.model).toMatchObject({ kind: 'trend', regression: 0, coefficients: 2, bandsPerFit: 3 });
  });

  it('a 4-point OLS by hand: slope 0.6, intercept 1.1, RMSE sqrt(0.05), R2 0.9, p 0.05132', async () => {
    const t4 = [0, 1, 2, 3].map((k) => k * DAY);
    const r = await runFunction(trendAnalysis, { R2: true, SlopePValue: true }, [seriesRaster(t4, [[1, 2, 2, 3]])]);
    const v = [0, 1, 2, 3, 4].map((b) => r.value(0, 0, b));
    expect(v[0]).toBeCloseTo(0.6, 12);
    expect(v[1]).toBeCloseTo(1.1, 12);
    expect(v[2]).toBeCloseTo(Math.sqrt(0.05), 12);
    expect(v[3]).toBeCloseTo(0.9, 12);
    // t = 0.6 / sqrt(0.1 / 5) = 4.2426; df 2: p = 1 - t / sqrt(t^2 + 2).
    const t = 0.6 / Math.sqrt(0.02);
    expect(v[4]).toBeCloseTo(1 - t / Math.sqrt(t * t + 2), 9);
  });

  it('polynomial order 2: coefficients from the highest power (numpy.polyfit order)', async () => {
    const r = await runFunction(trendAnalysis, { RegressionType: 2 }, [seriesRaster(times, [quad])]);
    expect(r.info.bandCount).toBe(4);
    expect(r.value(0, 0, 0) / 1e-4).toBeCloseTo(1, 8);
    expect(r.value(0, 0, 1) / -3).toBeCloseTo(1, 8);
    expect(r.value(0, 0, 2) / 7).toBeCloseTo(1, 4);
  });

  it('harmonic frequency 1: slope, intercept, cos, sin, RMSE', async () => {
    const r = await runFunction(trendAnalysis, { RegressionType: 'Harmonic', Frequency: 1 }, [seriesRaster(times, [harm])]);
    expect([0, 1, 2, 3].map((b) => r.value(0, 0, b))).toEqual([
      expect.closeTo(0.01, 10),
      expect.closeTo(3, 6),
      expect.closeTo(2, 8),
      expect.closeTo(-1, 8),
    ]);
    expect(r.info.bandNames).toEqual(['v_Slope', 'v_Intercept', 'v_Cos_1', 'v_Sin_1', 'v_RMSE']);
  });

  it('fits along the named dimension once per value of the others', async () => {
    const md: Multidimensional = {
      variables: [
        {
          name: 'temp',
          dimensions: [
            { name: 'StdTime', time: true },
            { name: 'StdZ', time: false },
          ],
          bandsPerSlice: 1,
          slices: [0, 1, 2, 3].flatMap((k) => [-5, -10].map((z, j) => ({ values: [times[k]!, z], band: 2 * k + j }))),
        },
      ],
    };
    const src = rasterOf({ width: 1, height: 1, bandCount: 8, pixelType: 'F64', extra: { multidimensional: md } }, (_x, _y, b) =>
      b % 2 === 0 ? lin[b >> 1]! : 2 * lin[b >> 1]!,
    );
    const r = await runFunction(trendAnalysis, { DimensionName: 'StdTime', RMSE: false }, [src]);
    expect(r.info.bandCount).toBe(4);
    expect(r.value(0, 0, 0)).toBeCloseTo(0.5, 10);
    expect(r.value(0, 0, 2)).toBeCloseTo(1, 10);
    expect(r.info.multidimensional!.variables[0]!.dimensions.map((d) => d.name)).toEqual(['StdZ']);
  });

  it('rejects bad inputs and arguments with their paths', () => {
    const plain = rasterOf({ width: 1, height: 1, bandCount: 3 }, () => 1);
    const e1 = catchError(() => applyFunction(trendAnalysis, {}, [plain]));
    expect([e1?.code, e1?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
    const src = seriesRaster(times, [lin]);
    const e2 = catchError(() => applyFunction(trendAnalysis, { DimensionName: 'depth' }, [src]));
    expect([e2?.code, e2?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.DimensionName']);
    const e3 = catchError(() => applyFunction(trendAnalysis, { RegressionType: 2, Order: 8 }, [src]));
    expect([e3?.code, e3?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.Order']);
    const e4 = catchError(() => applyFunction(trendAnalysis, { RegressionType: 2, SlopePValue: true }, [src]));
    expect(e4?.path).toBe('rasterFunctionArguments.SlopePValue');
    const e5 = catchError(() => applyFunction(trendAnalysis, { RegressionType: 5 }, [src]));
    expect([e5?.code, e5?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.RegressionType']);
  });
});

describe('Trend', () => {
  const fitted = (args: Record<string, unknown>) => applyFunction(trendAnalysis, args, [seriesRaster(times, [lin, harm])]);

  it('predicts the linear model at given dates', async () => {
    const r = await runFunction(trend, { DimensionValues: '2010-01-01T00:00:00; 2020-01-01' }, [fitted({})]);
    expect(r.info.bandCount).toBe(2);
    const t1 = Date.UTC(2010, 0, 1) / DAY;
    expect(r.value(0, 0, 0)).toBeCloseTo(Math.fround(2 + 0.5 * t1), 1);
    expect(r.info.bandNames).toEqual(['v_StdTime=2010-01-01T00:00:00', 'v_StdTime=2020-01-01T00:00:00']);
  });

  it('predicts the harmonic model by interval (calendar months)', async () => {
    const r = await runFunction(
      trend,
      {
        DimensionDefinitionType: 1,
        DimensionStart: '2002-01-31',
        DimensionEnd: '2002-04-30',
        DimensionInterval: 1,
        DimensionUnit: 'MONTHS',
      },
      [fitted({ RegressionType: 1 })],
    );
    const dates = [Date.UTC(2002, 0, 31), Date.UTC(2002, 1, 28), Date.UTC(2002, 2, 31), Date.UTC(2002, 3, 30)];
    expect(r.info.multidimensional!.variables[0]!.slices.map((s) => s.values[0])).toEqual(dates);
    dates.forEach((d, k) => {
      const t = d / DAY;
      expect(r.value(1, 0, k)).toBeCloseTo(3 + 0.01 * t + 2 * Math.cos(W(t)) - Math.sin(W(t)), 3);
    });
  });

  it('rejects a raster without a trend model and bad values', () => {
    const e1 = catchError(() => applyFunction(trend, { DimensionValues: '2010-01-01' }, [seriesRaster(times, [lin])]));
    expect([e1?.code, e1?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
    const e2 = catchError(() => applyFunction(trend, {}, [fitted({})]));
    expect([e2?.code, e2?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.DimensionValues']);
    const e3 = catchError(() => applyFunction(trend, { DimensionValues: 'next year' }, [fitted({})]));
    expect(e3?.path).toBe('rasterFunctionArguments.DimensionValues');
    const e4 = catchError(() =>
      applyFunction(trend, { DimensionDefinitionType: 1, DimensionStart: '2002-01-01', DimensionEnd: '2001-01-01' }, [fitted({})]),
    );
    expect(e4?.path).toBe('rasterFunctionArguments.DimensionEnd');
  });
});

// Mann-Kendall / Seasonal-Kendall through the function: values derived by hand from the formulas
// (kendall.ts header) on tiny series, t in days since 1970-01-01 (slopes per day).
describe('TrendAnalysis Mann-Kendall / Seasonal-Kendall', () => {
  const t5 = [0, 1, 2, 3, 4].map((k) => T0 + k * DAY);

  it('Mann-Kendall: Sen slope, p, S, Var(S), z; NoData slices skipped or fatal', async () => {
    // px 0: 1 3 2 2 5 -> S 5, Var (300 − 18)/18, z 4/sd, p 0.31222 (normal table), Sen 7/12 per day.
    // px 1: 1 NaN 2 3 3 -> valid t 0,2,3,4: S 5, Var (156 − 18)/18, z 4/sd, slopes 1/2 2/3 1/2 1 1/2 0 -> 1/2.
    // px 2: one valid value -> no pair: NoData.
    const N = Number.NaN;
    const src = seriesRaster(t5, [
      [1, 3, 2, 2, 5],
      [1, N, 2, 3, 3],
      [N, N, 4, N, N],
    ]);
    const r = await runFunction(trendAnalysis, { RegressionType: 'Mann-Kendall' }, [src]);
    expect(r.info.bandCount).toBe(5);
    expect(r.info.pixelType).toBe('F64');
    expect(r.info.bandNames).toEqual(['v_SensSlope', 'v_PValue', 'v_MannKendallScore', 'v_SVariance', 'v_ZScore']);
    expect(r.info.multidimensional?.model).toMatchObject({ kind: 'trend', regression: 3, coefficients: 1, bandsPerFit: 5 });
    const v = (x: number) => [0, 1, 2, 3, 4].map((b) => r.value(x, 0, b));
    const [s0, p0, S0, var0, z0] = v(0);
    expect(s0).toBeCloseTo(7 / 12, 14);
    expect(p0).toBeCloseTo(2 * (1 - (0.84375 + 0.058 * 0.00239)), 4);
    expect([S0, var0]).toEqual([5, 282 / 18]);
    expect(z0).toBeCloseTo(4 / Math.sqrt(282 / 18), 12);
    const [s1, , S1, var1, z1] = v(1);
    expect([s1, S1, var1]).toEqual([0.5, 5, 138 / 18]);
    expect(z1).toBeCloseTo(4 / Math.sqrt(138 / 18), 12);
    expect(r.valid(2, 0)).toBe(false);
    const strict = await runFunction(trendAnalysis, { RegressionType: 3, IgnoreNoData: false }, [src]);
    expect([strict.valid(0, 0), strict.valid(1, 0), strict.valid(2, 0)]).toEqual([true, false, false]);
    expect(strict.value(0, 0, 0)).toBeCloseTo(7 / 12, 14);
  });

  it('Seasonal-Kendall by month: S and Var summed over seasons, Sen = median within-season slope', async () => {
    // January 2000/01/02: 1 2 4 (S 3, Var 66/18; slopes 1/366, 3/731, 2/365);
    // July: 10 9 9 (S −2, Var 48/18; slopes −1/365, −1/730, 0). S 1 -> z 0, p 1; Sen (0 + 1/366)/2.
    const dates = [2000, 2001, 2002].flatMap((y) => [Date.UTC(y, 0, 15), Date.UTC(y, 6, 15)]);
    const src = seriesRaster(dates, [[1, 10, 2, 9, 4, 9]]);
    const r = await runFunction(trendAnalysis, { RegressionType: 4, SeasonalPeriod: 'MONTHS' }, [src]);
    expect([0, 1, 2, 4].map((b) => r.value(0, 0, b))).toEqual([1 / 732, 1, 1, 0]);
    expect(r.value(0, 0, 3)).toBeCloseTo(114 / 18, 12);
    expect(r.info.multidimensional?.model).toMatchObject({ regression: 4 });
    // the same data as one Mann-Kendall series: 1 10 2 9 4 9 -> S 4, Var (510 − 18)/18
    const mk = await runFunction(trendAnalysis, { RegressionType: 3 }, [src]);
    expect([mk.value(0, 0, 2), mk.value(0, 0, 3)]).toEqual([4, 492 / 18]);
  });

  it('Seasonal-Kendall by calendar day: 1 March is one season in leap years, 29 February another', async () => {
    // 1 March 2003, 2004, 2005: 1 2 3 (2003-03-01 -> 2004-03-01 is 366 days): S 3, Var 66/18,
    // slopes 1/366, 2/731, 1/365 -> Sen 2/731; 29 Feb 2004 and 2 Mar 2004 are seasons of one value.
    const dates = [Date.UTC(2003, 2, 1), Date.UTC(2004, 1, 29), Date.UTC(2004, 2, 1), Date.UTC(2004, 2, 2), Date.UTC(2005, 2, 1)];
    const r = await runFunction(trendAnalysis, { RegressionType: 'SeasonalKendall' }, [seriesRaster(dates, [[1, 100, 2, 50, 3]])]);
    expect([0, 2, 3].map((b) => r.value(0, 0, b))).toEqual([2 / 731, 3, 66 / 18]);
    expect(r.value(0, 0, 4)).toBeCloseTo(2 / Math.sqrt(66 / 18), 12);
  });

  it('rejects what the tests cannot do, with their paths', () => {
    const src = seriesRaster(t5, [[1, 3, 2, 2, 5]]);
    const err = (args: Record<string, unknown>, s: RasterNode = src) => {
      const e = catchError(() => applyFunction(trendAnalysis, args, [s]));
      return [e?.code, e?.path];
    };
    // five consecutive days: no calendar day twice
    expect(err({ RegressionType: 4 })).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.SeasonalPeriod']);
    expect(err({ RegressionType: 4, SeasonalPeriod: 'WEEKS' })).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.SeasonalPeriod']);
    expect(err({ RegressionType: 3, R2: true })).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.R2']);
    expect(err({ RegressionType: 3, SlopePValue: true })).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.SlopePValue']);
    expect(err({ RegressionType: 3 }, seriesRaster([T0], [[1]]))).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.Raster']);
    const depth = seriesRaster([5, 10, 20], [[1, 2, 3]], timeSeriesMultidim('v', [5, 10, 20], 1, { name: 'StdZ', time: false }));
    expect(err({ RegressionType: 4, SeasonalPeriod: 'MONTHS' }, depth)).toEqual([
      'INVALID_ARGUMENT',
      'rasterFunctionArguments.RegressionType',
    ]);
  });

  it('Mann-Kendall along a non-time dimension uses the dimension value as t', async () => {
    // depth 5, 10, 20: values 1 2 3 -> slopes 1/5, 2/15, 1/10 -> Sen 2/15 per unit of depth.
    const depth = seriesRaster([5, 10, 20], [[1, 2, 3]], timeSeriesMultidim('v', [5, 10, 20], 1, { name: 'StdZ', time: false }));
    const r = await runFunction(trendAnalysis, { RegressionType: 3 }, [depth]);
    expect([r.value(0, 0, 0), r.value(0, 0, 2)]).toEqual([2 / 15, 3]);
  });

  it('Trend rejects a Kendall raster (no intercept); TrendToRGB colours Sen slope', async () => {
    const mk = applyFunction(trendAnalysis, { RegressionType: 3 }, [
      seriesRaster(t5, [
        [1, 3, 2, 2, 5],
        [5, 4, 3, 3, 1],
        [2, 2, 2, 2, 2],
      ]),
    ]);
    const e1 = catchError(() => applyFunction(trend, { DimensionValues: '2010-01-01' }, [mk]));
    expect([e1?.code, e1?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
    expect(e1?.message).toMatch(/no intercept/);
    const e2 = catchError(() => applyFunction(trendToRgb, { ModelType: 1 }, [mk]));
    expect([e2?.code, e2?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.ModelType']);
    // Sen slopes 7/12, −1 (slopes −1 −1 −2/3 −1 −1/2 −2/3 −2 0 −1 −2 -> −1), 0: green, red, black.
    const r = await runFunction(trendToRgb, {}, [mk]);
    const rgb = (x: number) => [0, 1, 2].map((b) => r.value(x, 0, b));
    expect(rgb(0)[1]).toBeGreaterThan(0);
    expect([rgb(0)[0], rgb(0)[2]]).toEqual([0, 0]);
    expect(rgb(1)).toEqual([255, 0, 0]);
    expect(rgb(2)).toEqual([0, 0, 0]);
  });
});

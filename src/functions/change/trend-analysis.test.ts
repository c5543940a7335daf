// Expected coefficients derived by hand from the model formulas (series built from known
// coefficients, and one 4-point OLS worked out on paper), not from our output.
import { describe, expect, it } from 'vitest';
import { timeSeriesMultidim, type Multidimensional } from '../../core/multidim.js';
import type { RasterNode } from '../../graph/types.js';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { trendAnalysis } from './trend-analysis.js';
import { trend } from './trend.js';

const DAY = 86400000;
/** A 1-row raster with one single-band series per pixel: `series[x][k]` at `times[k]`. */
export function seriesRaster(times: readonly number[], series: readonly (readonly number[])[], md?: Multidimensional): RasterNode {
  return rasterOf(
    { width: series.length, height: 1, bandCount: times.length, pixelType: 'F64', extra: { multidimensional: md ?? timeSeriesMultidim('v', times) } },
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
    expect([0, 1, 2, 3].map((b) => r.value(0, 0, b))).toEqual([expect.closeTo(0.01, 10), expect.closeTo(3, 6), expect.closeTo(2, 8), expect.closeTo(-1, 8)]);
    expect(r.info.bandNames).toEqual(['v_Slope', 'v_Intercept', 'v_Cos_1', 'v_Sin_1', 'v_RMSE']);
  });

  it('fits along the named dimension once per value of the others', async () => {
    const md: Multidimensional = {
      variables: [
        {
          name: 'temp',
          dimensions: [{ name: 'StdTime', time: true }, { name: 'StdZ', time: false }],
          bandsPerSlice: 1,
          slices: [0, 1, 2, 3].flatMap((k) => [-5, -10].map((z, j) => ({ values: [times[k]!, z], band: 2 * k + j }))),
        },
      ],
    };
    const src = rasterOf({ width: 1, height: 1, bandCount: 8, pixelType: 'F64', extra: { multidimensional: md } }, (_x, _y, b) => (b % 2 === 0 ? lin[b >> 1]! : 2 * lin[b >> 1]!));
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
    const e5 = catchError(() => applyFunction(trendAnalysis, { RegressionType: 3 }, [src]));
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
    const r = await runFunction(trend, { DimensionDefinitionType: 1, DimensionStart: '2002-01-31', DimensionEnd: '2002-04-30', DimensionInterval: 1, DimensionUnit: 'MONTHS' }, [
      fitted({ RegressionType: 1 }),
    ]);
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
    const e4 = catchError(() => applyFunction(trend, { DimensionDefinitionType: 1, DimensionStart: '2002-01-01', DimensionEnd: '2001-01-01' }, [fitted({})]));
    expect(e4?.path).toBe('rasterFunctionArguments.DimensionEnd');
  });
});

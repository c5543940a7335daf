/**
 * Trend ("Predict Using Trend") — evaluate the per-pixel model of a TrendAnalysis raster at new
 * dimension values (spec raster-functions.md §2 "Trend"; seed section 8).
 *
 * Input: a trend raster (TrendAnalysis output: `multidimensional.model.kind === 'trend'`, which
 * carries the regression type, harmonics/order, the dimension and the cycle). Values:
 * DimensionDefinitionType 0 (by value): `DimensionValues`, separated by `;` (ISO 8601 dates for a
 * time dimension, e.g. `2050-01-01T00:00:00;2100-01-01T00:00:00`, numbers otherwise);
 * 1 (by interval): from `DimensionStart` to `DimensionEnd` (inclusive) every `DimensionInterval`
 * `DimensionUnit` (HOURS, DAYS, WEEKS, MONTHS, YEARS; months and years are calendar steps from
 * the start, a day past the month's end clamped to its last day [ours]); for a non-time dimension
 * start/end/interval are numbers and the unit is ignored. At most 10000 values.
 * Math: the model of TrendAnalysis with the same t (days since 1970-01-01 for time dimensions):
 * linear slope·t + intercept; harmonic + Σ cos/sin terms with the stored cycle; polynomial by
 * Horner from the highest power, in float64.
 * Output: a multidimensional raster, per variable the trend dimension (first) plus the trend
 * raster's remaining dimensions, one slice per (group, value), one band per fitted input band;
 * F32 [spec], NoData NaN (a fit that is NaN predicts NaN; the pixel is NoData when every
 * prediction is).
 * Mann-Kendall / Seasonal-Kendall trend rasters (RegressionType 3, 4) are rejected
 * (UNSUPPORTED_INPUT, rasterFunctionArguments.Raster) [ours]: their five bands (Sen's slope,
 * p-value, S, Var(S), z, as the vendor lists them) hold no intercept, so a prediction would need
 * an invented one; Sen's intercept is not part of the output.
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import {
  formatDimensionValue,
  multidimOf,
  parseDimensionValue,
  type MultidimSlice,
  type MultidimVariable,
  type Multidimensional,
  type TrendModel,
} from '../../core/multidim.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { regressionT } from './trend-analysis.js';

const UNITS = ['HOURS', 'DAYS', 'WEEKS', 'MONTHS', 'YEARS'] as const;

const args = {
  DimensionDefinitionType: {
    kind: 'enum',
    values: [0, 1],
    names: { ByValue: 0, ByInterval: 1 },
    default: 0,
    doc: '0 by value (DimensionValues), 1 by interval (DimensionStart, DimensionEnd, DimensionInterval, DimensionUnit).',
  },
  DimensionValues: { kind: 'string', doc: 'Values separated by ";" (ISO 8601 dates for a time dimension).' },
  DimensionStart: { kind: 'string', doc: 'First value (by interval).' },
  DimensionEnd: { kind: 'string', doc: 'Last value, inclusive (by interval).' },
  DimensionInterval: { kind: 'number', min: 0, default: 1, doc: 'Step between values, in DimensionUnit (by interval).' },
  DimensionUnit: {
    kind: 'string',
    values: UNITS,
    default: 'HOURS',
    doc: 'Unit of the step for a time dimension: HOURS, DAYS, WEEKS, MONTHS, YEARS.',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'A trend raster (TrendAnalysis output).' },
} as const satisfies ArgSchema;

interface TrendParams {
  readonly input: number;
  readonly model: TrendModel;
  /** Regression t of each requested value. */
  readonly t: Float64Array;
  /** First input band of each fit, and the output band of its first prediction. */
  readonly fitBands: Int32Array;
  readonly outBands: Int32Array;
  /** Stride between a fit's predictions in the output bands. */
  readonly outStride: Int32Array;
}

const at = argPaths(args);
const MAX_VALUES = 10000;

const STEP_MS: Record<string, number> = { HOURS: 3600000, DAYS: 86400000, WEEKS: 7 * 86400000 };

/** `start` plus `k` calendar months (UTC), the day clamped to the month's length. */
function addMonths(start: number, k: number): number {
  const d = new Date(start);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + k;
  const ty = y + Math.floor(m / 12);
  const tm = ((m % 12) + 12) % 12;
  const last = new Date(Date.UTC(ty, tm + 1, 0)).getUTCDate();
  const day = Math.min(d.getUTCDate(), last);
  const r = new Date(Date.UTC(2000, tm, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()));
  r.setUTCFullYear(ty);
  return r.getTime();
}

export const trend = defineFunction<typeof args, TrendParams>({
  name: 'Trend',
  aliases: ['PredictUsingTrend'],
  summary: 'Predict values at new dimension values from a TrendAnalysis raster.',
  variableName: 'Raster',
  family: 'change',
  verification: 'reference: numpy.polyval / least-squares model values (goldens); hand: interval rules',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const md = multidimOf(src);
    const model = md?.model;
    if (!md || model?.kind !== 'trend') throw unsupportedInput(at('Raster'), 'Trend needs a trend raster (the output of TrendAnalysis)');
    if (model.regression === 3 || model.regression === 4) {
      throw unsupportedInput(
        at('Raster'),
        `the trend raster holds ${model.regression === 3 ? 'Mann-Kendall' : 'Seasonal-Kendall'} test results (Sen's slope, p-value, S, Var(S), z) and no intercept, so there is no model to predict with; generate it with RegressionType 0 (linear), 1 (harmonic) or 2 (polynomial)`,
      );
    }
    const time = model.dimension.time;
    const values = requestedValues(a, time);
    if (values.length === 0)
      throw invalidArgument(at(a.DimensionDefinitionType === 0 ? 'DimensionValues' : 'DimensionEnd'), 'no dimension values to predict at');
    const t = Float64Array.from(values, (v) => regressionT(v, time));

    const fitBands: number[] = [];
    const outBands: number[] = [];
    const outStride: number[] = [];
    const variables: MultidimVariable[] = [];
    const bandNames: string[] = [];
    let out = 0;
    for (const v of md.variables) {
      const k = v.bandsPerSlice / model.bandsPerFit;
      if (!Number.isInteger(k) || k < 1)
        throw unsupportedInput(at('Raster'), `variable ${v.name} does not hold whole fits of ${model.bandsPerFit} bands`);
      const slices: MultidimSlice[] = [];
      for (const s of v.slices) {
        const group = v.dimensions.map((d, i) => `${d.name}=${formatDimensionValue(s.values[i]!, d.time)}`).join('_');
        for (let j = 0; j < k; j++) {
          fitBands.push(s.band + j * model.bandsPerFit);
          outBands.push(out + j);
          outStride.push(k);
        }
        for (const value of values) {
          slices.push({ values: [value, ...s.values], band: out });
          for (let j = 0; j < k; j++) {
            bandNames.push(
              `${v.name}_${model.dimension.name}=${formatDimensionValue(value, time)}${group ? `_${group}` : ''}${k > 1 ? `_Band_${j + 1}` : ''}`,
            );
          }
          out += k;
        }
      }
      variables.push({
        name: v.name,
        ...(v.description ? { description: v.description } : {}),
        dimensions: [model.dimension, ...v.dimensions],
        bandsPerSlice: k,
        slices,
      });
    }
    const multidimensional: Multidimensional = { variables };
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: out,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      bandNames,
      multidimensional,
    };
    return {
      info,
      halo: 0,
      params: {
        input: a.Raster,
        model,
        t,
        fitBands: Int32Array.from(fitBands),
        outBands: Int32Array.from(outBands),
        outStride: Int32Array.from(outStride),
      },
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const n = out.mask.length;
    const m = p.model;
    const nt = p.t.length;
    const pc = m.coefficients;
    const w = (2 * Math.PI) / m.cycle;
    const c = new Float64Array(pc);
    for (let i = 0; i < n; i++) {
      let any = false;
      const inside = src.mask[i] === 1;
      for (let f = 0; f < p.fitBands.length; f++) {
        const b0 = p.fitBands[f]!;
        const o0 = p.outBands[f]!;
        const stride = p.outStride[f]!;
        let ok = inside;
        for (let k = 0; k < pc; k++) {
          const v = src.bands[b0 + k]![i]!;
          c[k] = v;
          if (v !== v) ok = false;
        }
        for (let q = 0; q < nt; q++) {
          const dst = out.bands[o0 + q * stride]!;
          if (!ok) {
            dst[i] = Number.NaN;
            continue;
          }
          const t = p.t[q]!;
          let y: number;
          if (m.regression === 2) {
            y = 0;
            for (let k = 0; k < pc; k++) y = y * t + c[k]!;
          } else {
            y = c[0]! * t + c[1]!;
            for (let h = 1; h <= (pc - 2) / 2; h++) y += c[2 * h]! * Math.cos(h * w * t) + c[2 * h + 1]! * Math.sin(h * w * t);
          }
          dst[i] = y;
          if (y === y) any = true;
        }
      }
      out.mask[i] = any ? 1 : 0;
      if (!any) for (const b of out.bands) b[i] = Number.NaN;
    }
  },
});

/** The requested dimension values (epoch ms for time dimensions). */
function requestedValues(
  a: {
    DimensionDefinitionType: number;
    DimensionValues?: string | undefined;
    DimensionStart?: string | undefined;
    DimensionEnd?: string | undefined;
    DimensionInterval: number;
    DimensionUnit: string;
  },
  time: boolean,
): number[] {
  const what = time ? 'an ISO 8601 date (e.g. 2050-01-01T00:00:00)' : 'a number';
  if (a.DimensionDefinitionType === 0) {
    if (a.DimensionValues === undefined || a.DimensionValues.trim() === '')
      throw invalidArgument(at('DimensionValues'), 'DimensionDefinitionType 0 (by value) needs DimensionValues');
    const parts = a.DimensionValues.split(';')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    if (parts.length > MAX_VALUES) throw invalidArgument(at('DimensionValues'), `at most ${MAX_VALUES} values`);
    return parts.map((s) => {
      const v = parseDimensionValue(s, time);
      if (Number.isNaN(v)) throw invalidArgument(at('DimensionValues'), `"${s}" is not ${what}`);
      return v;
    });
  }
  const parse = (name: 'DimensionStart' | 'DimensionEnd'): number => {
    const s = a[name];
    if (s === undefined || s.trim() === '') throw invalidArgument(at(name), `DimensionDefinitionType 1 (by interval) needs ${name}`);
    const v = parseDimensionValue(s, time);
    if (Number.isNaN(v)) throw invalidArgument(at(name), `"${s}" is not ${what}`);
    return v;
  };
  const start = parse('DimensionStart');
  const end = parse('DimensionEnd');
  if (end < start) throw invalidArgument(at('DimensionEnd'), 'DimensionEnd is before DimensionStart');
  const step = a.DimensionInterval;
  if (!(step > 0)) throw invalidArgument(at('DimensionInterval'), 'DimensionInterval must be greater than 0');
  const out: number[] = [];
  const months = a.DimensionUnit === 'MONTHS' ? step : a.DimensionUnit === 'YEARS' ? 12 * step : 0;
  if (time && months > 0 && !Number.isInteger(months))
    throw invalidArgument(at('DimensionInterval'), 'MONTHS and YEARS steps must be whole months');
  for (let k = 0; ; k++) {
    const v = !time ? start + k * step : months > 0 ? addMonths(start, k * months) : start + k * step * STEP_MS[a.DimensionUnit]!;
    if (v > end + 1e-9 * Math.abs(end)) break;
    out.push(v);
    if (out.length > MAX_VALUES) throw invalidArgument(at('DimensionInterval'), `the interval gives more than ${MAX_VALUES} values`);
  }
  return out;
}

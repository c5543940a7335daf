/**
 * TrendAnalysis ("Generate Trend") — per-pixel regression or trend test of a multidimensional
 * raster along one dimension (spec raster-functions.md §2 "TrendAnalysis"; seed section 8).
 *
 * Input: a multidimensional raster (core/multidim.ts). For every variable that has the dimension
 * `DimensionName`, every combination of its other dimensions' values (a time series per depth,
 * say) and every band of a slice, one least-squares fit per pixel of
 *   0 Linear      y = slope·t + intercept
 *   1 Harmonic    y = intercept + slope·t + Σ_{i=1..F} [a_i cos(2π i t / T) + b_i sin(2π i t / T)]
 *   2 Polynomial  y = c_k t^k + ... + c_1 t + c_0            (k = Order)
 * or one nonparametric trend test (functions/change/kendall.ts has the formulas):
 *   3 Mann-Kendall      S, Var(S) with the ties correction, z with continuity correction,
 *                       two-sided normal p, Sen's slope = median pairwise slope
 *   4 Seasonal-Kendall  the same per season, S and Var(S) summed over the seasons, z and p from
 *                       the sums, Sen's slope = median of the within-season pairwise slopes
 *                       (Hirsch, Slack & Smith 1982)
 * Variable t [ours, as the spec recommends]: for a time dimension, days since
 * 1970-01-01T00:00:00Z (fractional); for other dimensions, the dimension value itself. Cycle T:
 * CycleLength x 365.25 days (CycleUnit YEARS) or CycleLength days (DAYS); for a non-time dimension
 * CycleLength in the dimension's units.
 * Output bands of one fit, in order [spec]: Linear slope, intercept; Harmonic slope, intercept,
 * then (cos, sin) per harmonic 1..F [cos-then-sin: spec's choice]; Polynomial coefficients from
 * the highest power down to the constant (numpy.polyfit order); then RMSE (when `RMSE`, default
 * true) = sqrt(Σ residual² / n) over the n slices used [ours: population form], R² (when `R2`)
 * = 1 − SSR/SST, and the two-sided p-value of the slope's t statistic with n − p degrees of
 * freedom (when `SlopePValue`; linear and harmonic only).
 * Kendall tests: five bands per fit, in the spec's order — Sen's slope, p-value, Mann-Kendall
 * score S, the variance of S, z-score. Band 4 is Var(S), not its standard deviation as the spec
 * (marked "from memory, unsure") says: the vendor's Generate Trend pages (Pro 2.7/3.0, ArcGIS
 * Online) list "Band 4 = S Variance"; √band 4 is the standard deviation used in z. Sen's slope is
 * in value per unit of t, i.e. PER DAY for a time dimension [ours]: the same unit as the linear
 * and harmonic slope bands of this function (so the Kendall slope can be compared with, or used
 * to mask, a linear trend of the same data, as the vendor suggests) and as the t that Trend and
 * TrendToRGB read; multiply by 365.25 for a per-year rate. No intercept is output (the vendor's
 * five bands have none), so Trend rejects these rasters; TrendToRGB ModelType 0 colours Sen's
 * slope. Seasons (`SeasonalPeriod`, Seasonal-Kendall only; time dimensions only) [ours, the
 * vendor says only "the unit of the seasonal period"]: MONTHS = calendar month (12 seasons, for
 * monthly or coarser data), DAYS (the vendor's default) = calendar day, month and day of month
 * (1 March is the same season in leap years; 29 February is its own), UTC. RMSE is ignored and
 * R2 / SlopePValue are rejected for the tests. A series needs at least 2 slices, and for
 * Seasonal-Kendall at least one season with 2 slices (else INVALID_ARGUMENT at SeasonalPeriod).
 * Output layout: a multidimensional raster with the same variables, each with the remaining
 * dimensions (none for a plain time series: one slice), slices of (bands per input slice) x
 * (bands per fit) bands, band names `<variable>_<group>_Slope` etc., and the model (kind, t
 * convention, cycle) in `multidimensional.model` so Trend and TrendToRGB can use it. Natural type
 * F64 [ours: coefficients of t in days need it; Trend reads them], NoData NaN.
 * NoData: a slice value is missing when the pixel is NoData, the value NaN or the NoData value
 * (per-slice NoData, core/multidim.ts). IgnoreNoData true (default): fit the valid slices only;
 * false: a fit with any missing slice is NoData. A fit with fewer valid slices than coefficients
 * (or a degenerate set) is NaN; a Kendall test with no pair of valid slices (in any season) is
 * NaN in all five bands. The pixel is NoData when no fit is valid.
 * Solver (functions/change/regression.ts): when every slice is valid the fit is a product with
 * (XᵀX)⁻¹Xᵀ, factored once per plan; otherwise normal equations of the valid rows by Cholesky in
 * preallocated buffers. Kendall tests: O(n²) pair loops per pixel in preallocated scratch, the
 * median by in-place quickselect.
 * outputPixelType: computed in floating point; a float type is computed into directly (F32 rounds
 * the float64 result once), an integer type is the float result through the engine's cast (round
 * half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component type, then
 * that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import {
  daysSinceEpoch,
  formatDimensionValue,
  isTimeDimensionName,
  multidimOf,
  sliceValueMissing,
  STD_TIME,
  type MultidimDimension,
  type MultidimSlice,
  type MultidimVariable,
  type Multidimensional,
  type TrendModel,
} from '../../core/multidim.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import {
  KENDALL_OUTPUTS,
  KendallScratch,
  kendallLayout,
  kendallTest,
  largestSeason,
  seasonOf,
  type KendallLayout,
  type SeasonalPeriod,
} from './kendall.js';
import {
  coefficientCount,
  design,
  inverseDiagonal,
  predictRow,
  pseudoInverse,
  solveSubset,
  toRawCoefficients,
  twoSidedP,
  Workspace,
  type Design,
  type ModelSpec,
  type RegressionKind,
} from './regression.js';

const args = {
  DimensionName: { kind: 'string', doc: 'Dimension to fit along (default: StdTime, else the only dimension of the variables).' },
  RegressionType: {
    kind: 'enum',
    values: [0, 1, 2, 3, 4],
    names: { Linear: 0, Harmonic: 1, Polynomial: 2, MannKendall: 3, 'Mann-Kendall': 3, SeasonalKendall: 4, 'Seasonal-Kendall': 4 },
    default: 0,
    doc: '0 Linear, 1 Harmonic (Frequency), 2 Polynomial (Order), 3 Mann-Kendall, 4 Seasonal-Kendall (SeasonalPeriod).',
  },
  Frequency: { kind: 'int', min: 1, default: 1, doc: 'Harmonic: number of harmonics (frequency) in the model.' },
  Order: { kind: 'int', min: 1, default: 2, doc: 'Polynomial: order of the polynomial.' },
  IgnoreNoData: { kind: 'boolean', default: true, doc: 'true: fit the valid slices only; false: NoData where any slice is NoData.' },
  CycleLength: { kind: 'number', min: 0, default: 1, doc: 'Harmonic: length of one cycle, in CycleUnit.' },
  CycleUnit: {
    kind: 'string',
    values: ['YEARS', 'DAYS'],
    default: 'YEARS',
    doc: 'Unit of CycleLength for a time dimension: YEARS (365.25 days) or DAYS.',
  },
  RMSE: {
    kind: 'boolean',
    default: true,
    doc: 'Append the root mean square error band (least-squares models; ignored by the Kendall tests).',
  },
  R2: { kind: 'boolean', default: false, doc: 'Append the R-squared band.' },
  SlopePValue: { kind: 'boolean', default: false, doc: 'Append the p-value of the slope (linear and harmonic).' },
  SeasonalPeriod: {
    kind: 'string',
    values: ['DAYS', 'MONTHS'],
    default: 'DAYS',
    doc: 'Seasonal-Kendall: the season of an observation, its calendar day (DAYS) or its calendar month (MONTHS).',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Multidimensional input raster.' },
} as const satisfies ArgSchema;

/** One fit: the input bands of its series and the design (or Kendall layout) it uses. */
interface Fit {
  /** Index into `solvers` (least squares) or `layouts` (Kendall tests). */
  readonly design: number;
  /** Input band of each row of the design. */
  readonly bands: Int32Array;
  /** First output band. */
  readonly out: number;
}

interface Solver {
  readonly d: Design;
  /** (XᵀX)⁻¹Xᵀ for all-valid series, or undefined when singular. */
  readonly pinv: Float64Array | undefined;
  /** (XᵀX)⁻¹ diagonal element of the slope (p-values). */
  readonly ginv11: number;
}

interface TrendAnalysisParams {
  readonly input: number;
  /** Least-squares model (RegressionType 0..2), undefined for the Kendall tests. */
  readonly model: ModelSpec | undefined;
  readonly solvers: readonly Solver[];
  /** Kendall tests (RegressionType 3, 4): row layouts of the series, seasons grouped. */
  readonly layouts: readonly KendallLayout[];
  readonly fits: readonly Fit[];
  readonly bandsPerFit: number;
  readonly ignoreNoData: boolean;
  readonly rmse: boolean;
  readonly r2: boolean;
  readonly pValue: boolean;
  readonly noData: number | undefined;
}

const at = argPaths(args);

/** Names of a fit's coefficient bands, in output order. */
function coefficientNames(m: ModelSpec): string[] {
  if (m.kind === 0) return ['Slope', 'Intercept'];
  if (m.kind === 1)
    return ['Slope', 'Intercept', ...Array.from({ length: m.frequency }, (_, i) => [`Cos_${i + 1}`, `Sin_${i + 1}`]).flat()];
  return Array.from({ length: m.order + 1 }, (_, i) => `Coef_t${m.order - i}`);
}

/** Band names of one Mann-Kendall / Seasonal-Kendall result, in output order. */
const KENDALL_NAMES = ['SensSlope', 'PValue', 'MannKendallScore', 'SVariance', 'ZScore'] as const;

/** The regression variable of a dimension value. */
export const regressionT = (v: number, time: boolean): number => (time ? daysSinceEpoch(v) : v);

export const trendAnalysis = defineFunction<typeof args, TrendAnalysisParams>({
  name: 'TrendAnalysis',
  aliases: ['GenerateTrend'],
  summary:
    'Per-pixel linear, harmonic or polynomial trend, or Mann-Kendall / Seasonal-Kendall test, of a multidimensional raster along a dimension.',
  variableName: 'Raster',
  family: 'change',
  verification:
    'reference: numpy.polyfit / numpy.linalg.lstsq, scipy.stats.theilslopes + norm and NumPy S/Var(S) per pixel (goldens); hand: small series',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const md = multidimOf(src);
    if (!md)
      throw unsupportedInput(at('Raster'), 'TrendAnalysis needs a multidimensional raster (variables with a dimension such as StdTime)');
    const dimName = chooseDimension(md, a.DimensionName);
    const dimensionOf = (v: MultidimVariable): number => v.dimensions.findIndex((d) => d.name.toLowerCase() === dimName.toLowerCase());
    const used = md.variables.filter((v) => dimensionOf(v) >= 0);
    if (used.length === 0) {
      throw invalidArgument(
        at('DimensionName'),
        `no variable has a dimension ${dimName} (dimensions: ${[...new Set(md.variables.flatMap((v) => v.dimensions.map((d) => d.name)))].join(', ') || 'none'})`,
      );
    }
    const warnings: string[] = [];
    if (used.length < md.variables.length)
      warnings.push(
        `variables without dimension ${dimName} are left out: ${md.variables
          .filter((v) => dimensionOf(v) < 0)
          .map((v) => v.name)
          .join(', ')}`,
      );
    const dim = used[0]!.dimensions[dimensionOf(used[0]!)]!;
    if (a.RegressionType !== 1 && a.CycleLength !== 1) warnings.push('CycleLength only applies to the harmonic model');
    if (!(a.CycleLength > 0)) throw invalidArgument(at('CycleLength'), 'CycleLength must be greater than 0');
    const cycle = dim.time ? (a.CycleUnit === 'DAYS' ? a.CycleLength : 365.25 * a.CycleLength) : a.CycleLength;
    const kendall = a.RegressionType >= 3;
    const seasonal = a.RegressionType === 4;
    const period = a.SeasonalPeriod as SeasonalPeriod;
    if (seasonal && !dim.time) {
      throw invalidArgument(
        at('RegressionType'),
        `Seasonal-Kendall (4) needs a time dimension to find the seasons; ${dim.name} is not one (use Mann-Kendall, 3)`,
      );
    }
    if (kendall && a.R2)
      throw invalidArgument(
        at('R2'),
        'R2 applies to the linear, harmonic and polynomial models, not to the Mann-Kendall / Seasonal-Kendall tests',
      );
    if (kendall && a.SlopePValue)
      throw invalidArgument(
        at('SlopePValue'),
        'SlopePValue applies to the linear and harmonic models; the Mann-Kendall / Seasonal-Kendall output has its own p-value band',
      );
    const model: ModelSpec | undefined = kendall
      ? undefined
      : { kind: a.RegressionType as RegressionKind, frequency: a.Frequency, order: a.Order, cycle };
    const p = model ? coefficientCount(model) : 1;
    if (a.SlopePValue && model?.kind === 2)
      throw invalidArgument(at('SlopePValue'), 'SlopePValue applies to the linear and harmonic models only');
    const extras = (a.RMSE ? 1 : 0) + (a.R2 ? 1 : 0) + (a.SlopePValue ? 1 : 0);
    const bandsPerFit = model ? p + extras : KENDALL_OUTPUTS;
    const names = model
      ? [...coefficientNames(model), ...(a.RMSE ? ['RMSE'] : []), ...(a.R2 ? ['R2'] : []), ...(a.SlopePValue ? ['SlopePValue'] : [])]
      : [...KENDALL_NAMES];
    const layouts: KendallLayout[] = [];

    const solvers: Solver[] = [];
    const solverKeys = new Map<string, number>();
    const fits: Fit[] = [];
    const variables: MultidimVariable[] = [];
    const bandNames: string[] = [];
    let out = 0;
    for (const v of used) {
      const k = dimensionOf(v);
      const others = v.dimensions.filter((_, i) => i !== k);
      // Group the slices by their other dimensions' values.
      const groups = new Map<string, { values: number[]; slices: MultidimSlice[] }>();
      for (const s of v.slices) {
        const values = s.values.filter((_, i) => i !== k);
        const key = values.join('|');
        if (!groups.has(key)) groups.set(key, { values, slices: [] });
        groups.get(key)!.slices.push(s);
      }
      const slicesOut: MultidimSlice[] = [];
      for (const g of groups.values()) {
        const series = [...g.slices].sort((x, y) => x.values[k]! - y.values[k]!);
        const t = series.map((s) => regressionT(s.values[k]!, dim.time));
        const fitName = `variable ${v.name}${g.values.length ? ` (${others.map((d, i) => `${d.name}=${formatDimensionValue(g.values[i]!, d.time)}`).join(', ')})` : ''}`;
        let di: number | undefined;
        if (!model) {
          if (series.length < 2)
            throw invalidArgument(
              at('Raster'),
              `${fitName} has ${series.length} slice along ${dimName}; the Kendall tests need at least 2`,
            );
          const season = seasonal ? series.map((s) => seasonOf(s.values[k]!, period)) : undefined;
          const key = `${t.join(',')}|${season?.join(',') ?? ''}`;
          di = solverKeys.get(key);
          if (di === undefined) {
            const layout = kendallLayout(t, season);
            if (largestSeason(layout) < 2) {
              throw invalidArgument(
                at('SeasonalPeriod'),
                `${fitName}: no season (${period === 'DAYS' ? 'calendar day' : 'calendar month'}) holds two slices, so the Seasonal-Kendall test has no pair to compare${period === 'DAYS' ? ' (try SeasonalPeriod MONTHS)' : ''}`,
              );
            }
            di = layouts.length;
            layouts.push(layout);
            solverKeys.set(key, di);
          }
        } else if (series.length < p) {
          throw invalidArgument(
            at(model.kind === 2 ? 'Order' : model.kind === 1 ? 'Frequency' : 'Raster'),
            `variable ${v.name} has ${series.length} slice(s) along ${dimName}, fewer than the ${p} coefficients of the model`,
          );
        }
        const key = t.join(',');
        if (model) di = solverKeys.get(key);
        if (model && di === undefined) {
          const d = design(model, t);
          const pinv = pseudoInverse(d);
          let ginv11 = Number.NaN;
          if (pinv) {
            // (XᵀX)⁻¹ = pinv · pinvᵀ; element (1, 1).
            let s = 0;
            for (let i = 0; i < d.n; i++) s += pinv[d.n + i]! * pinv[d.n + i]!;
            ginv11 = s;
          }
          di = solvers.length;
          solvers.push({ d, pinv, ginv11 });
          solverKeys.set(key, di);
        }
        const groupName = others.map((d, i) => `${d.name}=${formatDimensionValue(g.values[i]!, d.time)}`).join('_');
        slicesOut.push({ values: g.values, band: out });
        for (let j = 0; j < v.bandsPerSlice; j++) {
          const bands = Int32Array.from(series, (s) => s.band + j);
          fits.push({ design: di!, bands, out });
          for (const n of names)
            bandNames.push(`${v.name}${groupName ? `_${groupName}` : ''}${v.bandsPerSlice > 1 ? `_Band_${j + 1}` : ''}_${n}`);
          out += bandsPerFit;
        }
      }
      variables.push({
        name: v.name,
        ...(v.description ? { description: v.description } : {}),
        dimensions: others,
        bandsPerSlice: v.bandsPerSlice * bandsPerFit,
        slices: slicesOut,
      });
    }
    const trend: TrendModel = {
      kind: 'trend',
      regression: a.RegressionType,
      frequency: a.Frequency,
      order: a.Order,
      dimension: { name: dim.name, time: dim.time, ...(dim.unit ? { unit: dim.unit } : {}) },
      cycle,
      coefficients: p,
      bandsPerFit,
    };
    const multidimensional: Multidimensional = { variables, model: trend };
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: out,
      pixelType: floatOutputType(to, 'F64'),
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
        solvers,
        layouts,
        fits,
        bandsPerFit,
        ignoreNoData: a.IgnoreNoData,
        rmse: a.RMSE,
        r2: a.R2,
        pValue: a.SlopePValue,
        noData: src.noData,
      },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    if (!p.model) {
      kendallKernel(p, src, out);
      return;
    }
    const n = out.mask.length;
    const m = p.model;
    const pc = coefficientCount(m);
    const maxRows = Math.max(...p.solvers.map((s) => s.d.n));
    const y = new Float64Array(maxRows);
    const use = new Uint8Array(maxRows);
    const coef = new Float64Array(pc);
    const raw = new Float64Array(pc);
    const w = new Workspace(pc);
    const nd = p.noData;
    const obands = out.bands;
    for (let i = 0; i < n; i++) {
      let any = false;
      const inside = src.mask[i] === 1;
      for (const f of p.fits) {
        const s = p.solvers[f.design]!;
        const d = s.d;
        const rows = d.n;
        let valid = 0;
        if (inside) {
          for (let r = 0; r < rows; r++) {
            const v = src.bands[f.bands[r]!]![i]!;
            const ok = !sliceValueMissing(v, nd);
            y[r] = ok ? v : 0;
            use[r] = ok ? 1 : 0;
            if (ok) valid++;
          }
        }
        let used = -1;
        if (!inside || valid === 0 || (!p.ignoreNoData && valid < rows)) used = -1;
        else if (valid === rows && s.pinv) {
          const pinv = s.pinv;
          for (let a = 0; a < pc; a++) {
            let acc = 0;
            const row = a * rows;
            for (let r = 0; r < rows; r++) acc += pinv[row + r]! * y[r]!;
            coef[a] = acc;
          }
          used = rows;
        } else used = solveSubset(d, pc, y, use, 0, rows, w, coef);
        if (used < 0) {
          for (let b = 0; b < p.bandsPerFit; b++) obands[f.out + b]![i] = Number.NaN;
          continue;
        }
        any = true;
        let ssr = 0;
        let sum = 0;
        for (let r = 0; r < rows; r++) {
          if (use[r] === 0) continue;
          const e = y[r]! - predictRow(d, pc, r, coef);
          ssr += e * e;
          sum += y[r]!;
        }
        toRawCoefficients(m, coef, d.tc, d.ts, raw);
        let o = f.out;
        if (m.kind === 2) for (let k = pc - 1; k >= 0; k--) obands[o++]![i] = raw[k]!;
        else {
          obands[o++]![i] = raw[1]!;
          obands[o++]![i] = raw[0]!;
          for (let k = 2; k < pc; k++) obands[o++]![i] = raw[k]!;
        }
        if (p.rmse) obands[o++]![i] = Math.sqrt(ssr / used);
        if (p.r2) {
          const mean = sum / used;
          let sst = 0;
          for (let r = 0; r < rows; r++) if (use[r] === 1) sst += (y[r]! - mean) * (y[r]! - mean);
          obands[o++]![i] = sst > 0 ? 1 - ssr / sst : Number.NaN;
        }
        if (p.pValue) {
          const df = used - pc;
          const g11 = used === rows && s.pinv ? s.ginv11 : inverseDiagonal(w, pc, 1);
          const se = Math.sqrt((ssr / df) * g11);
          obands[o++]![i] = df > 0 ? (se > 0 ? twoSidedP(coef[1]! / se, df) : coef[1] === 0 ? 1 : 0) : Number.NaN;
        }
      }
      out.mask[i] = any ? 1 : 0;
      if (!any) for (const b of obands) b[i] = Number.NaN;
    }
  },
});

/** RegressionType 3 / 4: the Kendall tests of every fit, per pixel, in preallocated buffers. */
function kendallKernel(p: TrendAnalysisParams, src: PixelBlock, out: PixelBlock): void {
  const n = out.mask.length;
  let maxRows = 0;
  for (const l of p.layouts) maxRows = Math.max(maxRows, l.order.length);
  const s = new KendallScratch(maxRows);
  const res = new Float64Array(KENDALL_OUTPUTS);
  const nd = p.noData;
  const obands = out.bands;
  const ignore = p.ignoreNoData;
  const fits = p.fits;
  for (let i = 0; i < n; i++) {
    let any = false;
    const inside = src.mask[i] === 1;
    for (let f = 0; f < fits.length; f++) {
      const fit = fits[f]!;
      const l = p.layouts[fit.design]!;
      const order = l.order;
      const ends = l.ends;
      const seasons = ends.length;
      let ok = inside;
      if (ok) {
        // Compact the valid observations, season after season (each in t order).
        let q = 0;
        let c = 0;
        for (let k = 0; k < seasons; k++) {
          const e = ends[k]!;
          for (; q < e; q++) {
            const r = order[q]!;
            const v = src.bands[fit.bands[r]!]![i]!;
            if (sliceValueMissing(v, nd)) {
              if (!ignore) ok = false;
              continue;
            }
            s.y[c] = v;
            s.t[c] = l.t[r]!;
            c++;
          }
          s.ends[k] = c;
        }
        ok = ok && kendallTest(s, seasons, res, 0);
      }
      for (let b = 0; b < KENDALL_OUTPUTS; b++) obands[fit.out + b]![i] = ok ? res[b]! : Number.NaN;
      if (ok) any = true;
    }
    out.mask[i] = any ? 1 : 0;
  }
}

/** The dimension to fit along: the argument, else StdTime / a time dimension, else the only dimension. */
function chooseDimension(md: Multidimensional, name: string | undefined): string {
  if (name !== undefined && name.trim() !== '') return name.trim();
  const all: MultidimDimension[] = md.variables.flatMap((v) => v.dimensions);
  const time = all.find((d) => d.name === STD_TIME) ?? all.find((d) => d.time || isTimeDimensionName(d.name));
  if (time) return time.name;
  const names = [...new Set(all.map((d) => d.name))];
  if (names.length === 1) return names[0]!;
  throw invalidArgument(
    at('DimensionName'),
    `the raster has several dimensions (${names.join(', ')}) and no time dimension: name one in DimensionName`,
  );
}

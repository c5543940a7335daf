/**
 * CCDC — Continuous Change Detection and Classification (spec raster-functions.md §2 "CCDC";
 * Zhu & Woodcock 2014, "Continuous change detection and classification of land cover using all
 * available Landsat data"). The vendor's exact choices are undocumented; this is the published
 * algorithm with the choices below [ours], each as in the paper unless said.
 *
 * Input: a multidimensional time series (core/multidim.ts `timeSeriesOf`: one variable with a
 * StdTime dimension and multi-band slices, or several single-band variables with the same dates).
 * BandIDs / TmaskBandIDs are 0-based band indexes within a slice (the wire convention of
 * ExtractBand); empty BandIDs = all bands; TmaskBandIDs = [green, SWIR] or empty (no Tmask).
 * Per pixel, on the clear observations (every change and Tmask band valid in that slice):
 * - Model: y(t) = a0 + a1·t + Σ_{k=1..3} [b_k cos(2πkt/T) + c_k sin(2πkt/T)], T = 365.25 days,
 *   t in days since 1970-01-01, fitted by OLS per change band with 4 coefficients (fewer than 18
 *   observations), 6 (fewer than 24) or 8 [paper].
 * - RMSE floor [COLD's adjusted RMSE]: a band's RMSE is at least the median absolute difference of
 *   its consecutive clear observations over the whole series.
 * - Initialisation [paper]: a window of at least 12 clear observations spanning at least one year.
 *   With Tmask bands, a robust 4-coefficient fit (iteratively reweighted least squares with
 *   Tukey's bisquare, as CCDC's Tmask) of the green and SWIR bands over the window flags
 *   observations whose green residual exceeds +4σ (cloud) or whose SWIR residual is below −4σ
 *   (shadow), σ = max(1.4826·median|residual|, the band's RMSE floor below) (the paper's fixed
 *   reflectance thresholds do not suit unscaled data). The fit also uses the next MinNumberAnomaly clear observations (as CCDC does),
 *   but only observations inside the window are dropped, and the window is rebuilt. The window is
 *   stable when mean over change bands of (|a1·Δt| + |first residual| + |last residual|) / (3·RMSE)
 *   is at most 1; otherwise it moves forward by one observation [paper].
 * - Monitoring [paper]: for the next `MinNumberAnomaly` observations, the statistic
 *   Σ_b (residual_b / RMSE_b)² over the change bands is compared with the χ² quantile at
 *   `ChiSquareProb` with (number of change bands) degrees of freedom. All of them above it: a
 *   break at the first one; the segment ends at the previous observation and a new one is
 *   initialised from the break. Only the first above it: an outlier when above the 1 − 1e-6
 *   quantile (dropped), else it joins the model. The model is refitted with all its observations
 *   when `UpdatingFrequency` years have passed since the last fit's last observation, or when
 *   the coefficient count grows (18 and 24 observations), and at the segment's end.
 *   Not done: the paper's backward look at observations before an initialised window.
 * - Change probability of a segment: 1 at a break; at the series' end, the share of
 *   MinNumberAnomaly that the trailing run of anomalies reached (0 without one).
 * Output: the change analysis raster [ours], a multidimensional raster with one variable `CCDC`,
 * dimension `Segment` (1..S, S = floor(slices / 12), at least 1) and per segment the bands
 *   StartTime, EndTime, BreakTime (decimal years; BreakTime 0 = no break), ChangeProbability,
 *   NumObservations, then per change band: Intercept, Slope (per day), Cos1, Sin1, Cos2, Sin2,
 *   Cos3, Sin3 (unused harmonics 0), RMSE, Magnitude (median residual of the anomalies that made
 *   the break; 0 without a break).
 * Unused segment slots are 0. F64; NoData where not one segment could be fitted. DetectChange
 * reads it (`multidimensional.model.kind === 'ccdc'`).
 * outputPixelType: computed in floating point; a float type is computed into directly (F32 rounds
 * the float64 result once), an integer type is the float result through the engine's cast (round
 * half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component type, then
 * that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import {
  daysSinceEpoch,
  decimalYear,
  multidimOf,
  sliceValueMissing,
  timeSeriesOf,
  type CcdcModel,
  type MultidimSlice,
  type Multidimensional,
} from '../../core/multidim.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { chiSquareQuantile, cholesky, choleskySolve, design, type Design } from './regression.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Multidimensional time series (StdTime).' },
  BandIDs: { kind: 'numbers', integer: true, default: [], doc: '0-based bands (within a slice) used for change detection; empty = all.' },
  TmaskBandIDs: {
    kind: 'numbers',
    integer: true,
    default: [],
    doc: '0-based [green, SWIR] bands for the Tmask cloud/shadow screening; empty = none.',
  },
  ChiSquareProb: { kind: 'number', default: 0.99, doc: 'Chi-square probability of the change threshold (0..1).' },
  MinNumberAnomaly: { kind: 'int', min: 1, default: 6, doc: 'Consecutive anomalous observations that make a break.' },
  UpdatingFrequency: { kind: 'number', default: 1, doc: 'Years between model refits while monitoring.' },
} as const satisfies ArgSchema;

interface CcdcParams {
  readonly input: number;
  /** Days since epoch of each time step. */
  readonly t: Float64Array;
  readonly d: Design;
  /** `band[s * bandsPerStep + j]`: input band of step s, slice band j. */
  readonly band: Int32Array;
  readonly bandsPerStep: number;
  readonly changeBands: readonly number[];
  /** [green, swir] within a slice, or empty. */
  readonly tmask: readonly number[];
  readonly threshold: number;
  readonly outlier: number;
  readonly conse: number;
  readonly updateDays: number;
  readonly maxSegments: number;
  readonly bandsPerSegment: number;
  readonly noData: number | undefined;
  readonly decimalYears: Float64Array;
}

const at = argPaths(args);
const CCDC_MIN_OBS = 12;
const YEAR = 365.25;
/** Per-segment bands before the per-band ones, and per change band. */
export const CCDC_SEGMENT_BANDS = ['StartTime', 'EndTime', 'BreakTime', 'ChangeProbability', 'NumObservations'] as const;
export const CCDC_BAND_FIELDS = ['Intercept', 'Slope', 'Cos1', 'Sin1', 'Cos2', 'Sin2', 'Cos3', 'Sin3', 'RMSE', 'Magnitude'] as const;

export const ccdc = defineFunction<typeof args, CcdcParams>({
  name: 'CCDC',
  aliases: ['AnalyzeChangesUsingCCDC'],
  summary: 'Continuous change detection: per-pixel harmonic models and breaks of a time series (change analysis raster).',
  variableName: 'Raster',
  family: 'change',
  verification:
    'reference: breaks inserted at known pixels and dates into a series built from L7_ETMs.tif (goldens via DetectChange); hand: small series',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const md = multidimOf(src);
    if (!md) throw unsupportedInput(at('Raster'), 'CCDC needs a multidimensional time series (a variable with a StdTime dimension)');
    const ts = timeSeriesOf(md);
    if (typeof ts === 'string') throw unsupportedInput(at('Raster'), `CCDC needs a time series: ${ts}`);
    const nb = ts.bandsPerStep;
    const check = (ids: readonly number[], arg: 'BandIDs' | 'TmaskBandIDs'): void => {
      for (const id of ids)
        if (id < 0 || id >= nb)
          throw invalidArgument(at(arg), `band id ${id} is out of range: slices have ${nb} band(s), ids 0..${nb - 1}`);
    };
    check(a.BandIDs, 'BandIDs');
    check(a.TmaskBandIDs, 'TmaskBandIDs');
    if (a.TmaskBandIDs.length !== 0 && a.TmaskBandIDs.length !== 2)
      throw invalidArgument(at('TmaskBandIDs'), 'TmaskBandIDs takes two bands (green and SWIR) or none');
    if (!(a.ChiSquareProb > 0 && a.ChiSquareProb < 1))
      throw invalidArgument(at('ChiSquareProb'), 'ChiSquareProb must be between 0 and 1 (exclusive)');
    if (!(a.UpdatingFrequency > 0)) throw invalidArgument(at('UpdatingFrequency'), 'UpdatingFrequency must be greater than 0 (years)');
    const changeBands = a.BandIDs.length ? [...new Set(a.BandIDs)] : Array.from({ length: nb }, (_, j) => j);
    const n = ts.times.length;
    if (n < CCDC_MIN_OBS) throw unsupportedInput(at('Raster'), `CCDC needs at least ${CCDC_MIN_OBS} time slices; the raster has ${n}`);
    const t = Float64Array.from(ts.times, daysSinceEpoch);
    const d = design({ kind: 1, frequency: 3, order: 0, cycle: YEAR }, t);
    const maxSegments = Math.max(1, Math.floor(n / CCDC_MIN_OBS));
    const bandsPerSegment = CCDC_SEGMENT_BANDS.length + CCDC_BAND_FIELDS.length * changeBands.length;
    const slices: MultidimSlice[] = Array.from({ length: maxSegments }, (_, s) => ({ values: [s + 1], band: s * bandsPerSegment }));
    const model: CcdcModel = { kind: 'ccdc', changeBands, maxSegments, bandsPerSegment };
    const multidimensional: Multidimensional = {
      variables: [
        {
          name: 'CCDC',
          description: 'CCDC model segments',
          dimensions: [{ name: 'Segment', time: false }],
          bandsPerSlice: bandsPerSegment,
          slices,
        },
      ],
      model,
    };
    const names: string[] = [];
    for (let s = 1; s <= maxSegments; s++) {
      for (const f of CCDC_SEGMENT_BANDS) names.push(`Segment${s}_${f}`);
      for (const b of changeBands) for (const f of CCDC_BAND_FIELDS) names.push(`Segment${s}_Band${b + 1}_${f}`);
    }
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: maxSegments * bandsPerSegment,
      pixelType: floatOutputType(to, 'F64'),
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      bandNames: names,
      multidimensional,
    };
    return {
      info,
      halo: 0,
      params: {
        input: a.Raster,
        t,
        d,
        band: ts.band,
        bandsPerStep: nb,
        changeBands,
        tmask: a.TmaskBandIDs,
        threshold: chiSquareQuantile(a.ChiSquareProb, changeBands.length),
        outlier: chiSquareQuantile(1 - 1e-6, changeBands.length),
        conse: a.MinNumberAnomaly,
        updateDays: a.UpdatingFrequency * YEAR,
        maxSegments,
        bandsPerSegment,
        noData: src.noData,
        decimalYears: Float64Array.from(ts.times, decimalYear),
      },
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const n = out.mask.length;
    const N = p.t.length;
    const nb = p.changeBands.length;
    const nt = p.tmask.length;
    const P8 = p.d.p;
    const x = p.d.x;
    // Per-pixel buffers (allocated once per tile).
    const idx = new Int32Array(N); // clear observation -> time step
    const y = new Float64Array(nb * N); // change band values per time step
    const ym = new Float64Array(2 * N); // Tmask band values
    const use = new Uint8Array(N); // 1: observation in the current model
    const gone = new Uint8Array(N); // 1: dropped (Tmask or outlier)
    const floor = new Float64Array(nb);
    const tfloor = new Float64Array(2);
    const coef = new Float64Array(nb * P8);
    const rmse = new Float64Array(nb);
    const g = new Float64Array(P8 * P8);
    const rhs = new Float64Array(P8);
    const work = new Float64Array(N);
    const wts = new Float64Array(N);
    const res = new Float64Array(N);
    const obands = out.bands;
    const K = p.bandsPerSegment;
    const S0 = CCDC_SEGMENT_BANDS.length;
    const F = CCDC_BAND_FIELDS.length;

    /** Fit `np` coefficients per band over time steps s in [from, to) with use[s]; false when singular. */
    const fit = (
      from: number,
      to: number,
      np: number,
      values: Float64Array,
      bands: number,
      out: Float64Array,
      rm: Float64Array | undefined,
    ): boolean => {
      g.fill(0);
      let m = 0;
      for (let s = from; s < to; s++) {
        if (use[s] === 0) continue;
        m++;
        const row = s * P8;
        for (let a = 0; a < np; a++) {
          const xa = x[row + a]!;
          for (let b = 0; b <= a; b++) g[a * np + b]! += xa * x[row + b]!;
        }
      }
      if (m < np || !cholesky(g, np)) return false;
      for (let b = 0; b < bands; b++) {
        rhs.fill(0);
        for (let s = from; s < to; s++) {
          if (use[s] === 0) continue;
          const v = values[b * N + s]!;
          const row = s * P8;
          for (let a = 0; a < np; a++) rhs[a]! += x[row + a]! * v;
        }
        choleskySolve(g, np, rhs);
        for (let a = 0; a < P8; a++) out[b * P8 + a] = a < np ? rhs[a]! : 0;
        if (rm) {
          let ss = 0;
          for (let s = from; s < to; s++) {
            if (use[s] === 0) continue;
            const e = values[b * N + s]! - predict(out, b, s);
            ss += e * e;
          }
          rm[b] = Math.max(Math.sqrt(ss / m), floor[b]!);
        }
      }
      return true;
    };
    const predict = (c: Float64Array, b: number, s: number): number => {
      let v = 0;
      const row = s * P8;
      for (let a = 0; a < P8; a++) v += x[row + a]! * c[b * P8 + a]!;
      return v;
    };
    const statistic = (s: number): number => {
      let q = 0;
      for (let b = 0; b < nb; b++) {
        const e = (y[b * N + s]! - predict(coef, b, s)) / rmse[b]!;
        q += e * e;
      }
      return q;
    };
    const coefCount = (m: number): number => (m < 18 ? 4 : m < 24 ? 6 : 8);
    /**
     * Tmask: a robust fit (IRLS, Tukey bisquare, scale 1.4826·MAD) of the 4-coefficient model to
     * the green and SWIR bands over the rows [from, to) with use[s]; observations before `dropTo`
     * with a green residual above +4σ or a SWIR residual below −4σ are dropped (gone). True when
     * any was.
     */
    const tmask = (from: number, to: number, dropTo: number): boolean => {
      let dropped = false;
      for (let k = 0; k < 2; k++) {
        for (let s = from; s < to; s++) wts[s] = use[s]!;
        let sigma = 0;
        for (let it = 0; it < 10; it++) {
          // Weighted normal equations, 4 coefficients.
          g.fill(0);
          rhs.fill(0);
          for (let s = from; s < to; s++) {
            const w = wts[s]!;
            if (w === 0) continue;
            const row = s * P8;
            const v = ym[k * N + s]!;
            for (let a = 0; a < 4; a++) {
              const xa = x[row + a]! * w;
              rhs[a]! += xa * v;
              for (let b = 0; b <= a; b++) g[a * 4 + b]! += xa * x[row + b]!;
            }
          }
          if (!cholesky(g, 4)) return dropped;
          choleskySolve(g, 4, rhs);
          let c = 0;
          for (let s = from; s < to; s++) {
            if (!use[s]) continue;
            let pr = 0;
            for (let a = 0; a < 4; a++) pr += x[s * P8 + a]! * rhs[a]!;
            res[s] = ym[k * N + s]! - pr;
            work[c++] = Math.abs(res[s]!);
          }
          sigma = 1.4826 * median(work, c);
          if (!(sigma > 0)) break;
          for (let s = from; s < to; s++) {
            if (!use[s]) continue;
            const u = res[s]! / (4.685 * sigma);
            wts[s] = Math.abs(u) < 1 ? (1 - u * u) * (1 - u * u) : 0;
          }
        }
        if (!(sigma > 0)) continue;
        sigma = Math.max(sigma, tfloor[k]!);
        for (let s = from; s < dropTo; s++) {
          if (!use[s]) continue;
          const r = res[s]!;
          if ((k === 0 && r > 4 * sigma) || (k === 1 && r < -4 * sigma)) {
            gone[s] = 1;
            dropped = true;
          }
        }
      }
      return dropped;
    };

    for (let i = 0; i < n; i++) {
      for (const band of obands) band[i] = 0;
      out.mask[i] = 0;
      if (src.mask[i] === 0) continue;
      // Clear observations.
      let m = 0;
      for (let s = 0; s < N; s++) {
        let ok = true;
        for (let b = 0; b < nb && ok; b++) {
          const v = src.bands[p.band[s * p.bandsPerStep + p.changeBands[b]!]!]![i]!;
          if (sliceValueMissing(v, p.noData)) ok = false;
          else y[b * N + s] = v;
        }
        for (let k = 0; k < nt && ok; k++) {
          const v = src.bands[p.band[s * p.bandsPerStep + p.tmask[k]!]!]![i]!;
          if (sliceValueMissing(v, p.noData)) ok = false;
          else ym[k * N + s] = v;
        }
        gone[s] = ok ? 0 : 1;
        use[s] = 0;
        if (ok) idx[m++] = s;
      }
      if (m < CCDC_MIN_OBS) continue;
      // RMSE floors: median |difference| of consecutive clear observations.
      for (let b = 0; b < nb; b++) {
        for (let k = 1; k < m; k++) work[k - 1] = Math.abs(y[b * N + idx[k]!]! - y[b * N + idx[k - 1]!]!);
        floor[b] = Math.max(median(work, m - 1), 1e-9);
      }
      for (let k = 0; k < nt; k++) {
        for (let q = 1; q < m; q++) work[q - 1] = Math.abs(ym[k * N + idx[q]!]! - ym[k * N + idx[q - 1]!]!);
        tfloor[k] = median(work, m - 1);
      }

      let segments = 0;
      let first = 0; // index into idx of the window start
      while (segments < p.maxSegments) {
        // ---- Initialise a stable model from `first`.
        let stable = false;
        let start = 0;
        let end = 0; // exclusive, index into idx
        while (!stable) {
          while (first < m && gone[idx[first]!]) first++;
          // Window: >= 12 observations over >= 1 year.
          let count = 0;
          let j = first;
          for (; j < m; j++) {
            if (gone[idx[j]!]) continue;
            count++;
            if (count >= CCDC_MIN_OBS && p.t[idx[j]!]! - p.t[idx[first]!]! >= YEAR) break;
          }
          if (j >= m) break;
          start = first;
          end = j + 1;
          const from = idx[start]!;
          const to = idx[end - 1]! + 1;
          for (let s = from; s < to; s++) use[s] = gone[s] ? 0 : 1;
          if (nt === 2) {
            // Tmask over the window and the next MinNumberAnomaly clear observations (as CCDC).
            let tEnd = to;
            for (let q = end, c = 0; q < m && c < p.conse; q++) {
              if (gone[idx[q]!]) continue;
              c++;
              tEnd = idx[q]! + 1;
            }
            for (let s = to; s < tEnd; s++) use[s] = gone[s] ? 0 : 1;
            const dropped = tmask(from, tEnd, to);
            for (let s = to; s < tEnd; s++) use[s] = 0;
            if (dropped) {
              for (let s = from; s < to; s++) use[s] = 0;
              continue;
            }
          }
          if (!fit(from, to, coefCount(count), y, nb, coef, rmse)) break;
          let test = 0;
          const dt = p.t[to - 1]! - p.t[from]!;
          for (let b = 0; b < nb; b++) {
            const slope = coef[b * P8 + 1]! / p.d.ts;
            test +=
              (Math.abs(slope * dt) +
                Math.abs(y[b * N + from]! - predict(coef, b, from)) +
                Math.abs(y[b * N + to - 1]! - predict(coef, b, to - 1))) /
              (3 * rmse[b]!);
          }
          if (test / nb <= 1) stable = true;
          else {
            for (let s = from; s < to; s++) use[s] = 0;
            first++;
          }
        }
        if (!stable) break;

        // ---- Monitor.
        let count = 0;
        for (let k = start; k < end; k++) if (use[idx[k]!]) count++;
        let lastFitTime = p.t[idx[end - 1]!]!;
        let np = coefCount(count);
        let k = end;
        let breakAt = -1;
        let prob = 0;
        while (k < m) {
          const s = idx[k]!;
          if (gone[s]) {
            k++;
            continue;
          }
          const q = statistic(s);
          if (q > p.threshold) {
            // Run of anomalies among the next `conse` observations.
            let run = 0;
            let calm = false;
            for (let kk = k; kk < m && run < p.conse; kk++) {
              const ss = idx[kk]!;
              if (gone[ss]) continue;
              if (statistic(ss) > p.threshold) run++;
              else {
                calm = true;
                break;
              }
            }
            if (run >= p.conse) {
              breakAt = k;
              break;
            }
            if (!calm) {
              // Every remaining observation is anomalous but there are too few: change probability.
              prob = run / p.conse;
              break;
            }
            if (q > p.outlier) {
              gone[s] = 1;
              k++;
              continue;
            }
          }
          use[s] = 1;
          count++;
          const from = idx[start]!;
          if (p.t[s]! - lastFitTime >= p.updateDays || coefCount(count) !== np) {
            np = coefCount(count);
            fit(from, s + 1, np, y, nb, coef, rmse);
            lastFitTime = p.t[s]!;
          }
          k++;
        }
        // ---- Record the segment (final fit over all its observations).
        let lastUsed = -1;
        let firstUsed = -1;
        let used = 0;
        for (let s = idx[start]!; s < N; s++) {
          if (!use[s]) continue;
          if (breakAt >= 0 && s >= idx[breakAt]!) break;
          if (firstUsed < 0) firstUsed = s;
          lastUsed = s;
          used++;
        }
        // Magnitudes: median residual of the anomalies, from the model that found them.
        const base = segments * K;
        if (breakAt >= 0) {
          for (let b = 0; b < nb; b++) {
            let c = 0;
            for (let kk = breakAt; kk < m && c < p.conse; kk++) {
              const ss = idx[kk]!;
              if (gone[ss]) continue;
              work[c++] = y[b * N + ss]! - predict(coef, b, ss);
            }
            obands[base + S0 + b * F + 9]![i] = signedMedian(work, c);
          }
        }
        fit(firstUsed, lastUsed + 1, coefCount(used), y, nb, coef, rmse);
        obands[base]![i] = p.decimalYears[firstUsed]!;
        obands[base + 1]![i] = p.decimalYears[lastUsed]!;
        obands[base + 2]![i] = breakAt >= 0 ? p.decimalYears[idx[breakAt]!]! : 0;
        obands[base + 3]![i] = breakAt >= 0 ? 1 : prob;
        obands[base + 4]![i] = used;
        const { tc, ts } = p.d;
        for (let b = 0; b < nb; b++) {
          const o = base + S0 + b * F;
          const c0 = coef[b * P8]!;
          const c1 = coef[b * P8 + 1]!;
          obands[o]![i] = c0 - (c1 * tc) / ts;
          obands[o + 1]![i] = c1 / ts;
          for (let a = 2; a < 8; a++) obands[o + a]![i] = coef[b * P8 + a]!;
          obands[o + 8]![i] = rmse[b]!;
        }
        segments++;
        out.mask[i] = 1;
        for (let s = 0; s < N; s++) use[s] = 0;
        if (breakAt < 0) break;
        first = breakAt;
      }
    }
  },
});

/** Median of the first n values of `a` (reorders them); 0 for n = 0. */
export function median(a: Float64Array, n: number): number {
  if (n <= 0) return 0;
  const k = n >> 1;
  const hi = select(a, n, k);
  if (n & 1) return hi;
  let lo = -Infinity;
  for (let i = 0; i < k; i++) if (a[i]! > lo) lo = a[i]!;
  return (lo + hi) / 2;
}

/** Median of signed values (same as median; named for readability at the call site). */
const signedMedian = median;

/** Quickselect: the k-th smallest of the first n values; afterwards a[0..k) <= a[k]. */
function select(a: Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k]!;
}

/**
 * Mann-Kendall and Seasonal-Kendall trend tests with Sen's slope, per pixel, for TrendAnalysis
 * RegressionType 3 and 4 (functions/change/trend-analysis.ts).
 *
 * Definitions (Mann 1945, Kendall 1975; Hirsch, Slack & Smith 1982; Gilbert 1987 ch. 16-17), for
 * the n valid observations x_1..x_n of one season ordered by t (one season holding everything
 * for Mann-Kendall):
 *   S       = Σ_{i<j} sign(x_j − x_i)
 *   Var(S)  = [n(n−1)(2n+5) − Σ_g t_g(t_g−1)(2t_g+5)] / 18   (t_g: size of a group of equal x)
 *   Seasonal-Kendall: S and Var(S) are the sums of the per-season S_k and Var(S_k) (seasons are
 *   assumed independent: no covariance term, as Hirsch et al. 1982 eq. 3).
 *   z       = (S − 1)/√Var(S) if S > 0, (S + 1)/√Var(S) if S < 0, 0 if S = 0 (continuity correction)
 *   p       = 2·(1 − Φ(|z|)) = erfc(|z|/√2)                   (two-sided, normal approximation)
 *   Sen's slope = median of (x_j − x_i)/(t_j − t_i) over the pairs i < j with t_j > t_i
 *   (within a season for Seasonal-Kendall: the seasonal Kendall slope estimator of Hirsch et al.);
 *   an even count takes the mean of the two middle slopes (numpy.median).
 * Ties in x are exact equality of the values. No pair at all (fewer than two valid observations
 * in every season) gives no result.
 *
 * Work per pixel is O(n²) in preallocated scratch buffers (`KendallScratch`); the median is an
 * in-place quickselect (median-of-three pivot, three-way partition), no sorting, no allocation.
 */
import { gammaContinuedFraction } from './regression.js';

/** Buffers for `kendallTest`, sized for at most `maxRows` observations. */
export class KendallScratch {
  /** Compacted valid values and their t, season after season. */
  readonly y: Float64Array;
  readonly t: Float64Array;
  /** End (exclusive) of each season's run in `y`/`t`. */
  readonly ends: Int32Array;
  /** Pairwise slopes. */
  readonly slopes: Float64Array;
  /** Tie-group bookkeeping. */
  readonly seen: Uint8Array;
  constructor(readonly maxRows: number) {
    this.y = new Float64Array(maxRows);
    this.t = new Float64Array(maxRows);
    this.ends = new Int32Array(maxRows + 1);
    this.slopes = new Float64Array(Math.max(1, (maxRows * (maxRows - 1)) / 2));
    this.seen = new Uint8Array(maxRows);
  }
}

/** Output slots of `kendallTest` [Sen's slope, p-value, S, Var(S), z]. */
export const KENDALL_OUTPUTS = 5;

/**
 * The test over `seasons` runs of `s.y`/`s.t` (run k ends at `s.ends[k]`, the first starts at 0;
 * each run ordered by t). Writes [Sen's slope, p, S, Var(S), z] into `out` at `o` and returns
 * true, or returns false when no run has two observations.
 */
export function kendallTest(s: KendallScratch, seasons: number, out: Float64Array, o: number): boolean {
  const y = s.y;
  const t = s.t;
  const slopes = s.slopes;
  const seen = s.seen;
  let S = 0;
  let v18 = 0;
  let m = 0;
  let start = 0;
  let pairs = false;
  for (let k = 0; k < seasons; k++) {
    const end = s.ends[k]!;
    const n = end - start;
    if (n >= 2) {
      pairs = true;
      for (let i = start; i < end; i++) {
        const yi = y[i]!;
        const ti = t[i]!;
        for (let j = i + 1; j < end; j++) {
          const d = y[j]! - yi;
          if (d > 0) S++;
          else if (d < 0) S--;
          const dt = t[j]! - ti;
          if (dt > 0) slopes[m++] = d / dt;
        }
      }
      // Tie groups: each value's group is counted once, from its first member.
      let ties = 0;
      seen.fill(0, start, end);
      for (let i = start; i < end; i++) {
        if (seen[i] === 1) continue;
        const yi = y[i]!;
        let g = 1;
        for (let j = i + 1; j < end; j++) {
          if (y[j] === yi) {
            seen[j] = 1;
            g++;
          }
        }
        if (g > 1) ties += g * (g - 1) * (2 * g + 5);
      }
      v18 += n * (n - 1) * (2 * n + 5) - ties;
    }
    start = end;
  }
  if (!pairs) return false;
  const variance = v18 / 18;
  const sd = Math.sqrt(variance);
  const z = S === 0 || !(sd > 0) ? 0 : S > 0 ? (S - 1) / sd : (S + 1) / sd;
  out[o] = m > 0 ? median(slopes, m) : Number.NaN;
  out[o + 1] = erfc(Math.abs(z) / Math.SQRT2);
  out[o + 2] = S;
  out[o + 3] = variance;
  out[o + 4] = z;
  return true;
}

/**
 * The k-th smallest (0-based) of a[lo..hi] (inclusive), reordering a in place so that every
 * element left of k is <= a[k] and every element right of it >= a[k]. Quickselect with a
 * median-of-three pivot and a three-way partition (ties, common in Sen's slopes, are settled in
 * one pass).
 */
export function selectKth(a: Float64Array, lo: number, hi: number, k: number): number {
  while (lo < hi) {
    const x = a[lo]!;
    const y = a[(lo + hi) >>> 1]!;
    const z = a[hi]!;
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    // [lo, lt) < pivot, [lt, i) == pivot, (gt, hi] > pivot.
    let lt = lo;
    let gt = hi;
    let i = lo;
    while (i <= gt) {
      const v = a[i]!;
      if (v < pivot) {
        a[i] = a[lt]!;
        a[lt] = v;
        lt++;
        i++;
      } else if (v > pivot) {
        a[i] = a[gt]!;
        a[gt] = v;
        gt--;
      } else i++;
    }
    if (k < lt) hi = lt - 1;
    else if (k > gt) lo = gt + 1;
    else return a[k]!;
  }
  return a[k]!;
}

/** Median of a[0..m) (m ≥ 1), mean of the two middle values when m is even; reorders a. */
export function median(a: Float64Array, m: number): number {
  const k = (m - 1) >> 1;
  const lower = selectKth(a, 0, m - 1, k);
  if (m % 2 === 1) return lower;
  // After the selection every element right of k is >= a[k]: the upper middle is their minimum.
  let upper = a[k + 1]!;
  for (let i = k + 2; i < m; i++) if (a[i]! < upper) upper = a[i]!;
  return (lower + upper) / 2;
}

const SQRT_PI = 1.7724538509055160273;

/**
 * Complementary error function for x ≥ 0 (negative x by symmetry): erfc(x) = Q(1/2, x²), the
 * regularised upper incomplete gamma function; the series of P(1/2, x²) below x² = 1.5, the
 * continued fraction of Q (modified Lentz) above. Relative error ~1e-15.
 */
export function erfc(x: number): number {
  if (x !== x) return Number.NaN;
  if (x < 0) return 2 - erfc(-x);
  const x2 = x * x;
  if (x2 < 1.5) {
    // P(a, x2) = e^{-x2} x2^a / Γ(a+1) · Σ x2^n / ((a+1)...(a+n)), a = 1/2; Γ(3/2) = √π/2.
    let ap = 0.5;
    let del = 2;
    let sum = del;
    for (let n = 0; n < 200; n++) {
      del *= x2 / ++ap;
      sum += del;
      if (Math.abs(del) < Math.abs(sum) * 1e-17) break;
    }
    return 1 - (sum * Math.exp(-x2) * x) / SQRT_PI;
  }
  if (x > 27) return 0;
  // Q(1/2, x2) = e^{-x2} x2^{1/2} / Γ(1/2) · (the continued fraction), Γ(1/2) = √π.
  return (Math.exp(-x2) * x * gammaContinuedFraction(0.5, x2)) / SQRT_PI;
}

/** Seasonal period units of the Seasonal-Kendall test. */
export type SeasonalPeriod = 'DAYS' | 'MONTHS';

/**
 * Season of an epoch-ms instant (UTC calendar): MONTHS → the month (0..11); DAYS → the calendar
 * day (month, day of month) as month·31 + day − 1 (0..371), so 1 March is one season in leap and
 * common years alike and 29 February is a season of its own.
 */
export function seasonOf(ms: number, period: SeasonalPeriod): number {
  const d = new Date(ms);
  const month = d.getUTCMonth();
  return period === 'MONTHS' ? month : month * 31 + d.getUTCDate() - 1;
}

/**
 * Row layout of one series for the tests: `order` lists the rows (indexes into the series,
 * ordered by t) season after season, each season's rows in t order; `ends[k]` is the end of
 * season k's run in `order`. Mann-Kendall: one season.
 */
export interface KendallLayout {
  readonly t: Float64Array;
  readonly order: Int32Array;
  readonly ends: Int32Array;
}

/** The layout of a series with regression variable `t` (ordered) and per-row season keys (undefined: one season). */
export function kendallLayout(t: readonly number[], season?: readonly number[]): KendallLayout {
  const rows = t.map((_, r) => r);
  if (!season) return { t: Float64Array.from(t), order: Int32Array.from(rows), ends: Int32Array.of(t.length) };
  const keys = [...new Set(season)].sort((a, b) => a - b);
  const order: number[] = [];
  const ends: number[] = [];
  for (const k of keys) {
    for (const r of rows) if (season[r] === k) order.push(r);
    ends.push(order.length);
  }
  return { t: Float64Array.from(t), order: Int32Array.from(order), ends: Int32Array.from(ends) };
}

/** Largest number of observations in one season of a layout. */
export function largestSeason(l: KendallLayout): number {
  let best = 0;
  let start = 0;
  for (const e of l.ends) {
    best = Math.max(best, e - start);
    start = e;
  }
  return best;
}

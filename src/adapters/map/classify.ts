/**
 * Data classification for class-breaks renderers (GenerateDataClasses, seed §7): equal interval,
 * quantile, natural breaks (Fisher-Jenks, optimal), standard deviation and geometrical interval.
 * Pure functions on Float64Array; non-finite values are ignored. Every method answers the
 * classification's minimum and each class's upper bound (ascending; the last is the maximum), the
 * vendor's ClassBreaksRenderer shape (MinimumValue, ClassMaximumValue per class).
 */

export type ClassifyMethod = 'equalInterval' | 'quantile' | 'naturalBreaks' | 'standardDeviation' | 'geometricalInterval';

export interface Classification {
  /** The lowest value (lower bound of the first class). */
  readonly minimum: number;
  /** Each class's upper bound, ascending; the last is the data's maximum. */
  readonly breaks: number[];
}

/** Standard deviation classes: each class's position in standard deviations from the mean (labels). */
export interface StdDevClassification extends Classification {
  readonly mean: number;
  readonly stdDev: number;
  /** Per class: [from, to] in standard deviations from the mean (-Infinity/Infinity for the open end classes). */
  readonly sigmas: [number, number][];
}

/** The finite values, sorted ascending (a new array). */
export function sortedFinite(values: Float64Array): Float64Array {
  let n = 0;
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i]!)) n++;
  const out = new Float64Array(n);
  let j = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (Number.isFinite(v)) out[j++] = v;
  }
  return out.sort();
}

/** Breaks without repeats (equal breaks make empty classes), the last forced to `max`. */
function tidy(breaks: number[], max: number): number[] {
  const out: number[] = [];
  for (const b of breaks) {
    const v = Math.min(b, max);
    if (out.length === 0 || v > out[out.length - 1]!) out.push(v);
  }
  if (out.length === 0 || out[out.length - 1]! < max) out.push(max);
  return out;
}

function checkCount(count: number): void {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`the class count must be a positive whole number, got ${count}`);
}

/** `count` classes of equal width between the minimum and the maximum. */
export function equalIntervalBreaks(values: Float64Array, count: number): Classification {
  checkCount(count);
  const s = sortedFinite(values);
  if (s.length === 0) return { minimum: Number.NaN, breaks: [] };
  const min = s[0]!;
  const max = s[s.length - 1]!;
  if (min === max) return { minimum: min, breaks: [max] };
  const w = (max - min) / count;
  const breaks: number[] = [];
  for (let i = 1; i < count; i++) breaks.push(min + i * w);
  breaks.push(max);
  return { minimum: min, breaks: tidy(breaks, max) };
}

/**
 * `count` classes holding as equal a number of values as the data allows. The i-th break is the
 * smallest value with at least i/count of the values at or below it (numpy's `quantile(...,
 * method='inverted_cdf')`): breaks are data values, and repeated values never straddle a break.
 */
export function quantileBreaks(values: Float64Array, count: number): Classification {
  checkCount(count);
  const s = sortedFinite(values);
  const n = s.length;
  if (n === 0) return { minimum: Number.NaN, breaks: [] };
  const breaks: number[] = [];
  for (let i = 1; i <= count; i++) {
    const k = Math.max(1, Math.ceil((n * i) / count - 1e-9));
    breaks.push(s[Math.min(n, k) - 1]!);
  }
  return { minimum: s[0]!, breaks: tidy(breaks, s[n - 1]!) };
}

/** Most distinct values the exact natural-breaks search runs on (O(count x m²)); larger data is sampled. */
export const JENKS_MAX_VALUES = 3000;

/**
 * Natural breaks: the partition of the sorted values into `count` classes that minimises the sum
 * of squared deviations from the class means (Fisher's exact dynamic programme, as Jenks' method
 * approximates). Runs on the distinct values weighted by their counts; beyond JENKS_MAX_VALUES
 * distinct values on an evenly spaced sample of the sorted data (the vendor samples too).
 */
export function naturalBreaks(values: Float64Array, count: number): Classification {
  checkCount(count);
  let s = sortedFinite(values);
  if (s.length === 0) return { minimum: Number.NaN, breaks: [] };
  const min = s[0]!;
  const max = s[s.length - 1]!;
  // Distinct values and their weights.
  let { u, w } = distinct(s);
  if (u.length > JENKS_MAX_VALUES) {
    // Decision: an evenly spaced sample of the sorted values (deterministic), plus the extremes.
    const m = JENKS_MAX_VALUES;
    const sample = new Float64Array(m);
    for (let i = 0; i < m; i++) sample[i] = s[Math.round((i * (s.length - 1)) / (m - 1))]!;
    s = sample;
    ({ u, w } = distinct(s));
  }
  const m = u.length;
  const k = Math.min(count, m);
  if (k === 1) return { minimum: min, breaks: [max] };
  // Prefix sums of weight, weighted value and weighted square.
  const W = new Float64Array(m + 1);
  const S1 = new Float64Array(m + 1);
  const S2 = new Float64Array(m + 1);
  for (let i = 0; i < m; i++) {
    const v = u[i]!;
    const c = w[i]!;
    W[i + 1] = W[i]! + c;
    S1[i + 1] = S1[i]! + c * v;
    S2[i + 1] = S2[i]! + c * v * v;
  }
  // Sum of squared deviations of distinct values a..b (inclusive, 0-based).
  const ssd = (a: number, b: number): number => {
    const ww = W[b + 1]! - W[a]!;
    const s1 = S1[b + 1]! - S1[a]!;
    const d = S2[b + 1]! - S2[a]! - (s1 * s1) / ww;
    return d > 0 ? d : 0;
  };
  // cost[j]: best cost of values 0..j in c classes; from[c][j]: start of the last class.
  let prev = new Float64Array(m);
  for (let j = 0; j < m; j++) prev[j] = ssd(0, j);
  const from: Int32Array[] = [new Int32Array(m)];
  for (let c = 2; c <= k; c++) {
    const cur = new Float64Array(m).fill(Infinity);
    const start = new Int32Array(m);
    for (let j = c - 1; j < m; j++) {
      let best = Infinity;
      let at = j;
      // The last class is i..j; the first c-1 classes cover 0..i-1.
      for (let i = j; i >= c - 1; i--) {
        const v = prev[i - 1]! + ssd(i, j);
        if (v < best) {
          best = v;
          at = i;
        }
      }
      cur[j] = best;
      start[j] = at;
    }
    from.push(start);
    prev = cur;
  }
  const breaks: number[] = new Array<number>(k);
  let j = m - 1;
  for (let c = k; c >= 1; c--) {
    breaks[c - 1] = u[j]!;
    if (c > 1) j = from[c - 1]![j]! - 1;
  }
  breaks[k - 1] = max;
  return { minimum: min, breaks: tidy(breaks, max) };
}

function distinct(s: Float64Array): { u: Float64Array; w: Float64Array } {
  const u: number[] = [];
  const w: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const v = s[i]!;
    if (u.length > 0 && u[u.length - 1] === v) w[w.length - 1]!++;
    else {
      u.push(v);
      w.push(1);
    }
  }
  return { u: Float64Array.from(u), w: Float64Array.from(w) };
}

/** Mean and population standard deviation (numpy's `std`, ddof 0) of the finite values. */
export function meanAndStdDev(values: Float64Array): { mean: number; stdDev: number; count: number } {
  let n = 0;
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (Number.isFinite(v)) {
      n++;
      sum += v;
    }
  }
  if (n === 0) return { mean: Number.NaN, stdDev: Number.NaN, count: 0 };
  const mean = sum / n;
  let ss = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (Number.isFinite(v)) ss += (v - mean) * (v - mean);
  }
  return { mean, stdDev: Math.sqrt(ss / n), count: n };
}

/**
 * Standard deviation classes `interval` standard deviations wide (1, 1/2, 1/3, 1/4 in the vendor's
 * tools). Decision: as the vendor's maps do, the middle class is centred on the mean (from -interval/2
 * to +interval/2 deviations); classes extend outwards until they hold the minimum and the maximum, the
 * end classes open (their bounds the data's extremes).
 */
export function standardDeviationBreaks(values: Float64Array, interval = 1): StdDevClassification {
  if (!(interval > 0) || !Number.isFinite(interval))
    throw new RangeError(`the standard deviation interval must be positive, got ${interval}`);
  const s = sortedFinite(values);
  const { mean, stdDev } = meanAndStdDev(s);
  if (s.length === 0) return { minimum: Number.NaN, breaks: [], mean, stdDev, sigmas: [] };
  const min = s[0]!;
  const max = s[s.length - 1]!;
  if (!(stdDev > 0)) return { minimum: min, breaks: [max], mean, stdDev, sigmas: [[-Infinity, Infinity]] };
  // Break positions in deviations: ±interval/2, ±3 interval/2, ... inside (min, max).
  const lowest = Math.ceil(((min - mean) / stdDev / interval - 0.5) * (1 - 1e-12));
  const breaks: number[] = [];
  const sigmas: [number, number][] = [];
  let lo = -Infinity;
  for (let j = lowest; ; j++) {
    const sigma = (j + 0.5) * interval;
    const b = mean + sigma * stdDev;
    if (b >= max) break;
    if (b > min) {
      breaks.push(b);
      sigmas.push([lo, sigma]);
      lo = sigma;
    }
  }
  breaks.push(max);
  sigmas.push([lo, Infinity]);
  return { minimum: min, breaks, mean, stdDev, sigmas };
}

/**
 * Geometrical interval: class widths in a geometric series between the minimum and the maximum.
 * Decision: the ratio is 2 when the data is skewed towards its low end (mean below the mid-range:
 * narrow classes where the values crowd, wider ones along the tail) and 1/2 when skewed towards
 * its high end; data whose mean is the mid-range gets equal intervals.
 */
export function geometricalIntervalBreaks(values: Float64Array, count: number): Classification {
  checkCount(count);
  const s = sortedFinite(values);
  if (s.length === 0) return { minimum: Number.NaN, breaks: [] };
  const min = s[0]!;
  const max = s[s.length - 1]!;
  if (min === max || count === 1) return { minimum: min, breaks: [max] };
  const { mean } = meanAndStdDev(s);
  const mid = (min + max) / 2;
  const range = max - min;
  const skew = (mean - mid) / range;
  if (Math.abs(skew) < 1e-9) return equalIntervalBreaks(s, count);
  const r = skew < 0 ? 2 : 0.5;
  // Widths w, w r, ..., w r^(count-1), summing to the range.
  const total = (r ** count - 1) / (r - 1);
  const w = range / total;
  const breaks: number[] = [];
  let b = min;
  for (let i = 0; i < count - 1; i++) {
    b += w * r ** i;
    breaks.push(b);
  }
  breaks.push(max);
  return { minimum: min, breaks: tidy(breaks, max) };
}

/** Sum of squared deviations from the class means of `sorted` values split at `breaks` (upper bounds). */
export function withinClassDeviation(sorted: Float64Array, breaks: readonly number[]): number {
  let total = 0;
  let i = 0;
  for (const b of breaks) {
    let n = 0;
    let s = 0;
    let s2 = 0;
    while (i < sorted.length && sorted[i]! <= b) {
      const v = sorted[i++]!;
      n++;
      s += v;
      s2 += v * v;
    }
    if (n > 0) total += Math.max(0, s2 - (s * s) / n);
  }
  return total;
}

/** The class (0-based) of `v` for upper bounds `breaks`, or -1 above the last. */
export function classOf(v: number, breaks: readonly number[]): number {
  let lo = 0;
  let hi = breaks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (v <= breaks[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo < breaks.length ? lo : -1;
}

/** The breaks of `method`. */
export function classify(
  values: Float64Array,
  method: ClassifyMethod,
  count: number,
  options: { stdDevInterval?: number } = {},
): Classification | StdDevClassification {
  switch (method) {
    case 'equalInterval':
      return equalIntervalBreaks(values, count);
    case 'quantile':
      return quantileBreaks(values, count);
    case 'naturalBreaks':
      return naturalBreaks(values, count);
    case 'standardDeviation':
      return standardDeviationBreaks(values, options.stdDevInterval ?? 1);
    case 'geometricalInterval':
      return geometricalIntervalBreaks(values, count);
  }
}

/**
 * Parsing of the `Statistics` and `Histograms` arguments shared by Stretch and StatisticsHistogram,
 * and the histogram conventions of the family.
 *
 * Statistics, one entry per band: an array `[min, max, mean, standardDeviation]` (Stretch's wire
 * form, VPY/VJS; mean and standard deviation optional) or an object `{ min, max, mean,
 * standardDeviation, count, median, mode }` (StatisticsHistogram's form; `avg` for mean and
 * `stddev`/`stdDev` for the deviation are accepted, keys case-insensitive). Numeric strings are
 * accepted. Histograms, one per band: `{ size, min, max, counts }` with `size` = counts.length
 * (size may be left out), min < max (or min == max for a single value), counts >= 0.
 * A list of one entry applies to every band [ours]; otherwise it must have one entry per band.
 * Errors are at `path`, the argument's path from the caller's `argPaths(args)`, and below it.
 */
import { invalidArgument } from '../../core/errors.js';
import type { BandStatistics, Histogram } from '../../core/pixel-block.js';

function num(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v.trim());
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

function field(o: Record<string, unknown>, names: readonly string[]): unknown {
  for (const [k, v] of Object.entries(o)) if (names.includes(k.toLowerCase())) return v;
  return undefined;
}

/** One entry per band from a list of one (broadcast) or `bands` entries. */
function perBand<T>(list: readonly T[], bands: number, path: string, what: string): T[] {
  if (list.length === bands) return [...list];
  if (list.length === 1) return Array.from({ length: bands }, () => list[0]!);
  throw invalidArgument(
    path,
    `${what} has ${list.length} entries but the raster has ${bands} band(s): give one entry per band, or one for all`,
  );
}

export function parseStatistics(raw: unknown, bands: number, path: string, name = 'Statistics'): BandStatistics[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw invalidArgument(
      path,
      `${name} must be a non-empty array with one entry per band ([min, max, mean, standardDeviation] or {min, max, ...})`,
    );
  }
  const list = raw.map((e, i): BandStatistics => {
    const at = `${path}[${i}]`;
    let s: { min?: number; max?: number; mean?: number; stdDev?: number; count?: number; median?: number; mode?: number };
    if (Array.isArray(e)) {
      const vals = e.map(num);
      if (e.length < 2 || vals.some((v) => v === undefined)) {
        throw invalidArgument(at, `expected [min, max, mean, standardDeviation] of numbers, got ${JSON.stringify(e).slice(0, 80)}`);
      }
      s = { min: vals[0], max: vals[1], mean: vals[2], stdDev: vals[3] };
    } else if (e !== null && typeof e === 'object') {
      const o = e as Record<string, unknown>;
      const get = (names: readonly string[], key: string): number | undefined => {
        const v = field(o, names);
        if (v === undefined || v === null) return undefined;
        const n = num(v);
        if (n === undefined) throw invalidArgument(`${at}.${key}`, `${key} must be a number, got ${JSON.stringify(v)}`);
        return n;
      };
      s = {
        min: get(['min', 'minimum'], 'min'),
        max: get(['max', 'maximum'], 'max'),
        mean: get(['mean', 'avg', 'average'], 'mean'),
        stdDev: get(['standarddeviation', 'stddev', 'std'], 'standardDeviation'),
        count: get(['count'], 'count'),
        median: get(['median'], 'median'),
        mode: get(['mode'], 'mode'),
      };
    } else {
      throw invalidArgument(
        at,
        `expected [min, max, mean, standardDeviation] or {min, max, mean, standardDeviation}, got ${JSON.stringify(e)}`,
      );
    }
    if (s.min === undefined || s.max === undefined) throw invalidArgument(at, 'statistics need at least min and max');
    if (s.min > s.max) throw invalidArgument(at, `min ${s.min} is above max ${s.max}`);
    if (s.stdDev !== undefined && s.stdDev < 0) throw invalidArgument(at, `standard deviation ${s.stdDev} is negative`);
    const out: { -readonly [K in keyof BandStatistics]: BandStatistics[K] } = { min: s.min, max: s.max };
    if (s.mean !== undefined) out.mean = s.mean;
    if (s.stdDev !== undefined) out.stdDev = s.stdDev;
    if (s.count !== undefined) out.count = s.count;
    if (s.median !== undefined) out.median = s.median;
    if (s.mode !== undefined) out.mode = s.mode;
    return out;
  });
  return perBand(list, bands, path, name);
}

export function parseHistograms(raw: unknown, bands: number, path: string, name = 'Histograms'): Histogram[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw invalidArgument(path, `${name} must be a non-empty array of {size, min, max, counts}, one per band`);
  }
  const list = raw.map((e, i): Histogram => {
    const at = `${path}[${i}]`;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) throw invalidArgument(at, 'expected {size, min, max, counts}');
    const o = e as Record<string, unknown>;
    const countsRaw = field(o, ['counts']);
    if (!Array.isArray(countsRaw) || countsRaw.length === 0)
      throw invalidArgument(`${at}.counts`, 'counts must be a non-empty array of numbers');
    const counts = countsRaw.map(num);
    if (counts.some((c) => c === undefined || c < 0)) throw invalidArgument(`${at}.counts`, 'counts must be numbers >= 0');
    const min = num(field(o, ['min']));
    const max = num(field(o, ['max']));
    if (min === undefined) throw invalidArgument(`${at}.min`, 'min must be a number');
    if (max === undefined) throw invalidArgument(`${at}.max`, 'max must be a number');
    if (max < min) throw invalidArgument(`${at}.max`, `max ${max} is below min ${min}`);
    const sizeRaw = field(o, ['size']);
    const size = sizeRaw === undefined || sizeRaw === null ? counts.length : num(sizeRaw);
    if (size !== counts.length)
      throw invalidArgument(`${at}.size`, `size ${JSON.stringify(sizeRaw)} does not match the ${counts.length} counts`);
    return { size, min, max, counts: counts as number[] };
  });
  return perBand(list, bands, path, name);
}

/** Per-band lists given as one value for all bands or one per band (Gamma). */
export function perBandNumbers(list: readonly number[], bands: number, path: string, name: string): number[] {
  return perBand(list, bands, path, name);
}

/**
 * Stretch: map each band's values onto the output range Min..Max through cut-offs taken from
 * statistics or a histogram, optionally with a gamma curve.
 *
 * Spec: raster-functions.md "Stretch" (VJS stretchUtils: getStretchCutoff, stretch,
 * createHistogramEqualizationLUT, computeGammaValues) and the seed spec §8 Stretch line.
 *
 * StretchType: 0 None (cut-offs = the input type's range), 3 StandardDeviation (mean -+ n*std,
 * clipped to [min, max]), 4 HistogramEqualization, 5 MinMax, 6 PercentClip, 9 Sigmoid.
 *
 * WHERE STATISTICS COME FROM (the rule, reconciling the seed's per-type needs with the vendor
 * client's fallbacks):
 *  1. `DRA: true` (or our `DRAExtent`): from the pixels of the request (engine pre-pass,
 *     graph/request-statistics.ts): per band min/max/mean/stdDev and a histogram (U8: one bin per
 *     value over -0.5..255.5; other types 256 bins over [min, max]; the POPULATION standard
 *     deviation, as GDAL and NumPy, where the vendor client uses n - 1). `Statistics` and `Histograms`
 *     are then ignored (warning). Statistics are only requested when the type (or ComputeGamma)
 *     uses them.
 *  2. Otherwise statistics = the `Statistics` argument, else the input's advertised statistics
 *     (`RasterInfo.statistics`: file metadata, StatisticsHistogram, or what an upstream function
 *     advertises such as Slope 0..90, Aspect 0..360, Hillshade 0..255); when those are missing or
 *     lack what the type needs (3: mean and stdDev, 5: min and max, ComputeGamma: mean), the
 *     builder computes the input's statistics before planning (`needsStatistics`;
 *     graph/input-statistics.ts: approximately from a file as `gdalinfo -approx_stats`, exactly
 *     over a function's grid). Histograms = the `Histograms` argument, else the input's
 *     advertised histograms (not computed).
 *  3. Needs, per the seed: 3 needs every band's mean AND standard deviation; 5 needs min and max;
 *     4 and 6 need a histogram; 6 also needs MinPercent and MaxPercent; ComputeGamma needs the
 *     mean (and min/max unless the input is U8). When a need is not met the plan fails with
 *     INVALID_ARGUMENT naming `Statistics` (3, 5, ComputeGamma), `Histograms` (4, 6) or the
 *     missing `MinPercent`/`MaxPercent`. The vendor client's silent fallbacks (full type range,
 *     StandardDeviation -> MinMax, PercentClip -> MinMax) are NOT used: they hide a missing DRA.
 *     0 needs nothing; 9 (Sigmoid) uses min/max when available, else the input type's range.
 *  4. With DRA, a band without any valid pixel in the statistics rectangle gets the input type's
 *     range as cut-offs (and gamma 1 when computed).
 *
 * Cut-offs: PercentClip follows the vendor client: when the histogram has >= 20 bins, the first 3
 * and the last 2 bins are zeroed (fill values) before accumulating; C = cumulative counts, T = total;
 * minCut = lower edge of the first bin z with C[z] > MinPercent*T/100; scanning z down from size-2,
 * the first z with C[z] < (1 - MaxPercent/100)*T gives maxCut = upper edge of bin z+1 (z = -1 when
 * none). Histograms whose bins are unit-wide and centred on integers (U8 -0.5..255.5, S8) use bin
 * centres instead of edges (the vendor's half-bin offset). Inverted cut-offs are swapped.
 * HistogramEqualization: N = 256 levels; bin u of the histogram gets level
 * L(u) = min(N - 1, #{k >= 1 : k*T/N < C(u)}) = min(N-1, ceil(N*C(u)/T) - 1) (0 when C(u) = 0),
 * which is what the vendor's walk computes; a pixel takes its bin's level, mapped onto Min..Max as
 * Min + L*(Max - Min)/(N - 1) [ours; the vendor client outputs the level itself, = Min 0 Max 255].
 *
 * Mapping (O = Max - Min): v <= minCut -> Min, v >= maxCut -> Max (v >= maxCut wins when the cuts
 * are equal), otherwise m = (v - minCut)/(maxCut - minCut) and out = Min + O*y(m) where
 *  - y = m, or the Sigmoid curve [ours, spec proposal]: k = 2*level + 2, s(u) = 1/(1 + e^-u),
 *    y = (s(k(m - 0.5)) - s(-k/2)) / (s(k/2) - s(-k/2)); SigmoidStrengthLevel default 2 [ours];
 *  - then with UseGamma: y' = S*y^(1/g), S = 1 for g <= 1, else 1 - (1/|O|)^(y*k'),
 *    k' = 6.5 + 100(2 - g)^4 for 1 < g <= 2, 6.5 + (g - 2)^2.5 for g > 2 (the vendor's damping;
 *    S = 1 when |O| <= 1). Gamma: one value per band or one for all; ComputeGamma (with UseGamma)
 *    derives it per band from the mean (vendor's empirical model, spec "ComputeGamma").
 *    UseGamma without Gamma and without ComputeGamma: INVALID_ARGUMENT naming Gamma. Gamma or
 *    ComputeGamma without UseGamma: ignored (warning).
 * Integer outputs round half up (floor(x + 0.5)) and saturate; float outputs are not rounded.
 *
 * Output: same band count. Natural type U8 when Min..Max fits 0..255 (the default); otherwise the
 * smallest integer type holding Min..Max when both are integers, else F32 [ours: a U8 would clip a
 * requested 0..1000]. The rule's `outputPixelType` replaces the natural type and the stretch is
 * computed into it (spec 1.2: Stretch clamps): a float type holds the unrounded Min + O*y, an
 * integer type rounds half up and saturates at its range; a complex type stretches into its real
 * component type, then the engine's cast makes the values real parts.
 * Advertised statistics: min/max = the output range, per band. NoData: masked pixels stay NoData,
 * NaN inputs become NoData; statistics ignore both.
 *
 * OUR EXTENSION "DRA from extent": `DRAExtent` = {xmin, ymin, xmax, ymax} in the raster's
 * coordinates (its spatial reference), or a pixel rectangle {x, y, width, height} of the raster's
 * grid. Statistics come from that fixed extent instead of the request, so a tiled client that
 * requests tile by tile gets one consistent stretch without seams. Implies DRA.
 * `EstimateStatsHistogram` is accepted and has no effect (statistics are always computed exactly).
 *
 * Hot loop: 8- and 16-bit integer inputs go through a lookup table over every input value (built
 * once per band and cached); floats and 32-bit integers use the linear closed form (per-pixel
 * curve evaluation only with gamma, sigmoid or equalization).
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { BandStatistics, Histogram, RasterInfo } from '../../core/pixel-block.js';
import { allocatePlane, castValue, PIXEL_TYPE_INFO, type PixelType, type Plane } from '../../core/pixel-type.js';
import type { Rect } from '../../core/rect.js';
import { argPaths } from '../../graph/args.js';
import { realTypeOf } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema, type RequestBandStatistics } from '../../graph/types.js';
import { parseHistograms, parseStatistics, perBandNumbers } from './statistics-args.js';
import { stretchLinearViaWasm } from '../../wasm/local.js';

export const StretchType = { None: 0, StandardDeviation: 3, HistogramEqualization: 4, MinMax: 5, PercentClip: 6, Sigmoid: 9 } as const;

const args = {
  StretchType: {
    kind: 'enum',
    values: [0, 3, 4, 5, 6, 9],
    names: {
      none: 0,
      standardDeviation: 3,
      histogramEqualization: 4,
      minMax: 5,
      percentClip: 6,
      sigmoid: 9,
      // The desktop enumeration's names (esriRasterStretch...).
      MinimumMaximum: 5,
      PercentMinimumMaximum: 6,
    },
    default: 0,
    doc: '0 None, 3 StandardDeviation, 4 HistogramEqualization, 5 MinMax, 6 PercentClip, 9 Sigmoid.',
  },
  Min: { kind: 'number', default: 0, doc: 'Output value of the low cut-off (output range start).' },
  Max: { kind: 'number', default: 255, doc: 'Output value of the high cut-off (output range end; may be below Min to invert).' },
  NumberOfStandardDeviations: {
    kind: 'number',
    min: 0,
    aliases: ['NumberOfStandardDeviation'],
    doc: 'StandardDeviation: cut-offs at mean -+ n standard deviations (default 2).',
  },
  Statistics: {
    kind: 'json',
    optional: true,
    doc: 'Per band [min, max, mean, standardDeviation] (or {min, max, mean, standardDeviation}); ignored with DRA.',
  },
  Histograms: {
    kind: 'json',
    optional: true,
    doc: 'Per band {size, min, max, counts} for PercentClip and HistogramEqualization; ignored with DRA.',
  },
  DRA: { kind: 'boolean', default: false, doc: 'Dynamic range adjustment: statistics from the pixels of the current request.' },
  DRAExtent: {
    kind: 'json',
    optional: true,
    doc: 'rasterflow extension: take DRA statistics from this fixed extent ({xmin, ymin, xmax, ymax} in raster coordinates, or {x, y, width, height} in pixels) so tiles agree; implies DRA.',
  },
  MinPercent: { kind: 'number', min: 0, max: 100, doc: 'PercentClip: percentage clipped at the low end.' },
  MaxPercent: { kind: 'number', min: 0, max: 100, doc: 'PercentClip: percentage clipped at the high end.' },
  UseGamma: { kind: 'boolean', default: false, doc: 'Apply a gamma curve inside the cut-offs.' },
  Gamma: { kind: 'numbers', doc: 'Gamma per band (or one for all), > 0; used with UseGamma.' },
  ComputeGamma: { kind: 'boolean', default: false, doc: "With UseGamma: derive each band's gamma from its mean." },
  SigmoidStrengthLevel: { kind: 'int', min: 1, max: 6, doc: 'Sigmoid: steepness 1..6 (default 2).' },
  EstimateStatsHistogram: { kind: 'boolean', doc: 'Accepted for compatibility; statistics are always computed exactly.' },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

const at = argPaths(args);

/** How one band's values become output values. */
export interface Transfer {
  readonly minCut: number;
  readonly maxCut: number;
  /** 1 = no gamma curve. */
  readonly gamma: number;
  /** 0 = linear, 1..6 = sigmoid strength. */
  readonly sigmoid: number;
  /** HistogramEqualization: the histogram's bins and each bin's level (0..LEVELS-1). */
  readonly equalize?: { readonly min: number; readonly width: number; readonly levels: readonly number[] };
}

/** What binding needs to turn request statistics into transfers. */
interface Config {
  readonly type: number;
  readonly nStd: number;
  readonly minPercent: number;
  readonly maxPercent: number;
  /** Per band explicit gammas, 'compute', or undefined (no gamma). */
  readonly gamma: readonly number[] | 'compute' | undefined;
  readonly sigmoid: number;
  readonly inType: PixelType;
}

export interface StretchParams {
  readonly input: number;
  readonly inType: PixelType;
  readonly outType: PixelType;
  readonly outMin: number;
  readonly outMax: number;
  readonly config: Config;
  /** One per band; undefined until request statistics are bound. */
  readonly transfers: readonly Transfer[] | undefined;
}

const LEVELS = 256;

export const stretch = defineFunction<typeof args, StretchParams>({
  name: 'Stretch',
  summary: 'Contrast stretch per band: None, StandardDeviation, HistogramEqualization, MinMax, PercentClip, Sigmoid; gamma; DRA.',
  variableName: 'Raster',
  family: 'radiometric',
  verification: 'reference: NumPy formulations of the documented math on Landsat (golden); hand-derived vectors',
  args,

  needsStatistics(a, inputs) {
    const src = inputs[a.Raster];
    if (src === undefined || a.DRA || a.DRAExtent !== undefined || a.Statistics !== undefined || PIXEL_TYPE_INFO[src.pixelType].complex)
      return [];
    const type = a.StretchType;
    const gamma = a.UseGamma && a.ComputeGamma;
    if (type !== StretchType.StandardDeviation && type !== StretchType.MinMax && !gamma) return [];
    const stats = advertised(src.statistics, src.bandCount);
    const enough =
      stats !== undefined &&
      stats.every(
        (s) =>
          Number.isFinite(s.min) &&
          Number.isFinite(s.max) &&
          (type !== StretchType.StandardDeviation || (s.mean !== undefined && s.stdDev !== undefined)) &&
          (!gamma || s.mean !== undefined),
      );
    return enough ? [] : [a.Raster];
  },

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (PIXEL_TYPE_INFO[src.pixelType].complex) {
      throw unsupportedInput(at('Raster'), `Stretch needs real pixels, got ${src.pixelType}: apply Complex first`);
    }
    const bands = src.bandCount;
    const type = a.StretchType;
    const warnings: string[] = [];
    const dra = a.DRA || a.DRAExtent !== undefined;
    const draRect = a.DRAExtent === undefined ? undefined : parseExtent(a.DRAExtent, src);

    // Gamma.
    let gamma: Config['gamma'];
    if (a.UseGamma) {
      if (a.ComputeGamma) {
        gamma = 'compute';
        if (a.Gamma !== undefined) warnings.push('ComputeGamma is true: Gamma is ignored');
      } else {
        if (a.Gamma === undefined || a.Gamma.length === 0) {
          throw invalidArgument(at('Gamma'), 'UseGamma is true: give Gamma (one value per band, or one for all), or set ComputeGamma true');
        }
        gamma = perBandNumbers(a.Gamma, bands, at('Gamma'), 'Gamma');
        gamma.forEach((g, i) => {
          if (!(g > 0)) throw invalidArgument(at('Gamma', i), `gamma must be > 0, got ${g}`);
        });
      }
    } else if (a.Gamma !== undefined || a.ComputeGamma) {
      warnings.push('UseGamma is false: Gamma and ComputeGamma are ignored');
    }

    if (type === StretchType.PercentClip) {
      if (a.MinPercent === undefined)
        throw invalidArgument(at('MinPercent'), 'StretchType 6 (PercentClip) needs MinPercent (percent clipped at the low end)');
      if (a.MaxPercent === undefined)
        throw invalidArgument(at('MaxPercent'), 'StretchType 6 (PercentClip) needs MaxPercent (percent clipped at the high end)');
      if (a.MinPercent + a.MaxPercent >= 100) {
        throw invalidArgument(at('MaxPercent'), `MinPercent + MaxPercent must stay below 100, got ${a.MinPercent} + ${a.MaxPercent}`);
      }
    } else if (a.MinPercent !== undefined || a.MaxPercent !== undefined) {
      warnings.push('MinPercent/MaxPercent only apply to StretchType 6 (PercentClip) and are ignored');
    }
    if (a.NumberOfStandardDeviations !== undefined && type !== StretchType.StandardDeviation) {
      warnings.push('NumberOfStandardDeviations only applies to StretchType 3 (StandardDeviation) and is ignored');
    }
    if (a.SigmoidStrengthLevel !== undefined && type !== StretchType.Sigmoid) {
      warnings.push('SigmoidStrengthLevel only applies to StretchType 9 (Sigmoid) and is ignored');
    }
    if (a.EstimateStatsHistogram !== undefined)
      warnings.push('EstimateStatsHistogram has no effect: statistics are always computed exactly');

    const config: Config = {
      type,
      nStd: a.NumberOfStandardDeviations ?? 2,
      minPercent: a.MinPercent ?? 0,
      maxPercent: a.MaxPercent ?? 0,
      gamma,
      sigmoid: a.SigmoidStrengthLevel ?? 2,
      inType: src.pixelType,
    };

    // Parse Statistics/Histograms even when DRA ignores them, so a malformed rule is reported.
    const argStats = a.Statistics === undefined ? undefined : parseStatistics(a.Statistics, bands, at('Statistics'));
    const argHists = a.Histograms === undefined ? undefined : parseHistograms(a.Histograms, bands, at('Histograms'));

    const outMin = a.Min;
    const outMax = a.Max;
    const outType = to === undefined ? naturalType(outMin, outMax) : realTypeOf(to);
    // Advertised range: Min..Max, saturated to a requested type.
    const held = (v: number): number => (to === undefined ? v : castValue(v, outType));
    const lo = held(Math.min(outMin, outMax));
    const hi = held(Math.max(outMin, outMax));
    const { statistics: _s, histograms: _h, colormap: _c, constant: _k, ...rest } = src;
    const info: RasterInfo = {
      ...rest,
      pixelType: outType,
      noData: PIXEL_TYPE_INFO[outType].integer ? undefined : Number.NaN,
      statistics: Array.from({ length: bands }, () => ({ min: lo, max: hi })),
    };
    const base = { input: a.Raster, inType: src.pixelType, outType, outMin, outMax, config };

    const usesStats = type !== StretchType.None || gamma === 'compute';
    if (dra) {
      if (argStats !== undefined) warnings.push('DRA is true: Statistics is ignored');
      if (argHists !== undefined) warnings.push('DRA is true: Histograms is ignored');
      if (!usesStats) {
        if (a.DRAExtent !== undefined) warnings.push('StretchType 0 (None) uses no statistics: DRAExtent is ignored');
        return plan(info, { ...base, transfers: transfersFor(config, bands, [], []) }, warnings);
      }
      return {
        ...plan(info, { ...base, transfers: undefined }, warnings),
        requestStatistics: { inputs: [a.Raster], bins: 256, ...(draRect ? { rect: draRect } : {}) },
      };
    }

    const stats = argStats ?? advertised(src.statistics, bands);
    const hists = argHists ?? advertised(src.histograms, bands);
    const fromWhere = argStats !== undefined ? 'the Statistics argument' : stats !== undefined ? "the input's statistics" : undefined;
    const how =
      'give Statistics ([min, max, mean, standardDeviation] per band), set DRA true, or give the input statistics (StatisticsHistogram)';
    if (type === StretchType.StandardDeviation && !(stats?.every((s) => s.mean !== undefined && s.stdDev !== undefined) ?? false)) {
      throw invalidArgument(
        at('Statistics'),
        `StretchType 3 (StandardDeviation) needs each band's mean and standard deviation${fromWhere ? ` (${fromWhere} lack them)` : ''}: ${how}`,
      );
    }
    if (type === StretchType.MinMax && stats === undefined) {
      throw invalidArgument(at('Statistics'), `StretchType 5 (MinMax) needs each band's min and max: ${how}`);
    }
    if ((type === StretchType.PercentClip || type === StretchType.HistogramEqualization) && hists === undefined) {
      const name = type === StretchType.PercentClip ? '6 (PercentClip)' : '4 (HistogramEqualization)';
      throw invalidArgument(
        at('Histograms'),
        `StretchType ${name} needs a histogram per band: give Histograms ({size, min, max, counts} per band), set DRA true, or give the input histograms (StatisticsHistogram)`,
      );
    }
    if (gamma === 'compute' && !(stats?.every((s) => s.mean !== undefined) ?? false)) {
      throw invalidArgument(at('Statistics'), `ComputeGamma needs each band's mean${fromWhere ? ` (${fromWhere} lack it)` : ''}: ${how}`);
    }
    const transfers = transfersFor(config, bands, stats ?? [], hists ?? []);
    return plan(info, { ...base, transfers }, warnings);
  },

  bindStatistics(p, [request]) {
    const bands = p.transfers?.length ?? request?.length ?? 0;
    const stats = (request ?? []).map((s: RequestBandStatistics | undefined) => s?.statistics);
    const hists = (request ?? []).map((s: RequestBandStatistics | undefined) => s?.histogram);
    return { ...p, transfers: transfersFor(p.config, Math.max(bands, stats.length), stats, hists) };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const transfers = p.transfers!;
    const n = out.mask.length;
    const mask = out.mask;
    mask.set(src.mask);
    const info = PIXEL_TYPE_INFO[p.inType];
    const lutable = info.integer && info.bits <= 16;
    for (let b = 0; b < transfers.length; b++) {
      const t = transfers[b]!;
      const s = src.bands[b]!;
      const d = out.bands[b]!;
      if (lutable) {
        const { lut, offset } = lutFor(p, t);
        for (let i = 0; i < n; i++) d[i] = lut[s[i]! + offset]!;
      } else if (t.gamma === 1 && t.sigmoid === 0 && t.equalize === undefined) {
        const o = PIXEL_TYPE_INFO[p.outType];
        // The wasm path (src/wasm/local.ts) computes the same values when it takes the case.
        if (!stretchLinearViaWasm(s, d, mask, t.minCut, t.maxCut, p.outMin, p.outMax, o.integer, o.min, o.max)) {
          linearFloat(t, s, d, mask, n, p.outMin, p.outMax, o.integer, o.min, o.max);
        }
      } else {
        const round = PIXEL_TYPE_INFO[p.outType].integer;
        for (let i = 0; i < n; i++) {
          const v = s[i]!;
          if (v !== v) {
            mask[i] = 0;
            continue;
          }
          const x = curve(t, v, p.outMin, p.outMax);
          d[i] = round ? Math.floor(x + 0.5) : x;
        }
      }
    }
  },
});

function plan(info: RasterInfo, params: StretchParams, warnings: string[]) {
  return { info, halo: 0, params, ...(warnings.length ? { warnings } : {}) };
}

/** Statistics/histograms the input advertises, when there is one per band (or one for all). */
function advertised<T>(list: readonly T[] | undefined, bands: number): T[] | undefined {
  if (list === undefined || list.length === 0) return undefined;
  if (list.length === bands) return [...list];
  if (list.length === 1) return Array.from({ length: bands }, () => list[0]!);
  return undefined;
}

/** Natural output type: U8 for a 0..255 range, else the smallest integer type, else F32. */
export function naturalType(min: number, max: number): PixelType {
  const lo = Math.min(min, max);
  const hi = Math.max(min, max);
  if (Number.isInteger(lo) && Number.isInteger(hi)) {
    for (const t of ['U8', 'S8', 'U16', 'S16', 'U32', 'S32'] as const) {
      if (lo >= PIXEL_TYPE_INFO[t].min && hi <= PIXEL_TYPE_INFO[t].max) return t;
    }
  }
  return Math.abs(lo) > PIXEL_TYPE_INFO.F32.max || Math.abs(hi) > PIXEL_TYPE_INFO.F32.max ? 'F64' : 'F32';
}

/** DRAExtent as a pixel rectangle of the raster's grid (clipped; INVALID_ARGUMENT when outside). */
function parseExtent(raw: unknown, src: RasterInfo): Rect {
  const path = at('DRAExtent');
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw invalidArgument(path, 'DRAExtent must be {xmin, ymin, xmax, ymax} (raster coordinates) or {x, y, width, height} (pixels)');
  }
  const o = Object.fromEntries(
    Object.entries(raw).map(([k, v]) => [k.toLowerCase(), typeof v === 'string' && v.trim() !== '' ? Number(v) : v]),
  );
  const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  let x0: number;
  let y0: number;
  let x1: number;
  let y1: number;
  if ([o.xmin, o.ymin, o.xmax, o.ymax].every(isNum)) {
    const { xmin, ymin, xmax, ymax } = o as Record<string, number>;
    if (!(xmax! > xmin! && ymax! > ymin!)) throw invalidArgument(path, 'DRAExtent needs xmax > xmin and ymax > ymin');
    const eps = 1e-9;
    x0 = Math.floor((xmin! - src.extent.xmin) / src.cellSize.x + eps);
    x1 = Math.ceil((xmax! - src.extent.xmin) / src.cellSize.x - eps);
    y0 = Math.floor((src.extent.ymax - ymax!) / src.cellSize.y + eps);
    y1 = Math.ceil((src.extent.ymax - ymin!) / src.cellSize.y - eps);
  } else if ([o.x, o.y, o.width, o.height].every((v) => isNum(v) && Number.isInteger(v))) {
    const { x, y, width, height } = o as Record<string, number>;
    if (!(width! > 0 && height! > 0)) throw invalidArgument(path, 'DRAExtent width and height must be > 0');
    [x0, y0, x1, y1] = [x!, y!, x! + width!, y! + height!];
  } else {
    throw invalidArgument(
      path,
      'DRAExtent must be {xmin, ymin, xmax, ymax} (numbers, raster coordinates) or {x, y, width, height} (whole pixels)',
    );
  }
  x0 = Math.max(0, x0);
  y0 = Math.max(0, y0);
  x1 = Math.min(src.width, x1);
  y1 = Math.min(src.height, y1);
  if (x1 <= x0 || y1 <= y0) throw invalidArgument(path, 'DRAExtent does not overlap the raster');
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

// ---- Cut-offs.

function typeRange(t: PixelType): [number, number] {
  const info = PIXEL_TYPE_INFO[t];
  return [info.min, info.max];
}

/** Per band transfers from statistics and histograms (entries may be undefined: type range). */
function transfersFor(
  c: Config,
  bands: number,
  stats: readonly (BandStatistics | undefined)[],
  hists: readonly (Histogram | undefined)[],
): Transfer[] {
  const out: Transfer[] = [];
  for (let b = 0; b < bands; b++) {
    const s = stats[b];
    const h = hists[b];
    let [minCut, maxCut] = typeRange(c.inType);
    let equalize: Transfer['equalize'];
    switch (c.type) {
      case StretchType.None:
        break;
      case StretchType.MinMax:
      case StretchType.Sigmoid:
        if (s !== undefined) [minCut, maxCut] = [s.min, s.max];
        break;
      case StretchType.StandardDeviation:
        if (s?.mean !== undefined && s.stdDev !== undefined) {
          minCut = Math.max(s.mean - c.nStd * s.stdDev, s.min);
          maxCut = Math.min(s.mean + c.nStd * s.stdDev, s.max);
        }
        break;
      case StretchType.PercentClip:
        if (h !== undefined) [minCut, maxCut] = percentClip(h, c.minPercent, c.maxPercent);
        break;
      case StretchType.HistogramEqualization:
        if (h !== undefined) {
          [minCut, maxCut] = [h.min, h.max];
          equalize = { min: h.min, width: (h.max - h.min) / h.size, levels: equalizationLevels(h.counts) };
        }
        break;
    }
    let gamma = 1;
    if (c.gamma === 'compute') gamma = s?.mean === undefined ? 1 : computeGamma(s, c.inType);
    else if (c.gamma !== undefined) gamma = c.gamma[b]!;
    out.push({ minCut, maxCut, gamma, sigmoid: c.type === StretchType.Sigmoid ? c.sigmoid : 0, ...(equalize ? { equalize } : {}) });
  }
  return out;
}

/** PercentClip cut-offs from a histogram (vendor client details, see the header). */
export function percentClip(h: Histogram, minPercent: number, maxPercent: number): [number, number] {
  const size = h.size;
  const counts = Float64Array.from(h.counts);
  if (size >= 20) counts[0] = counts[1] = counts[2] = counts[size - 1] = counts[size - 2] = 0;
  const cum = new Float64Array(size);
  let total = 0;
  for (let i = 0; i < size; i++) cum[i] = total += counts[i]!;
  const w = (h.max - h.min) / size;
  // Unit bins centred on integers (U8 -0.5..255.5, S8 -128.5..127.5): cut at bin centres.
  const half = w === 1 && Number.isInteger(h.min + 0.5) ? 0.5 : 0;
  let minCut = h.min + w * half;
  const low = (minPercent * total) / 100;
  for (let z = 0; z < size; z++) {
    if (cum[z]! > low) {
      minCut = h.min + w * (z + half);
      break;
    }
  }
  const high = (1 - maxPercent / 100) * total;
  let z = size - 2;
  while (z >= 0 && !(cum[z]! < high)) z--;
  let maxCut = total === 0 ? h.max - w * half : h.min + w * (z + 2 - half);
  if (minCut > maxCut) [minCut, maxCut] = [maxCut, minCut];
  return [minCut, maxCut];
}

/** Level (0..LEVELS-1) of each histogram bin: min(N-1, ceil(N*C(u)/T) - 1), 0 when C(u) = 0. */
export function equalizationLevels(counts: readonly number[]): number[] {
  let total = 0;
  for (const c of counts) total += c;
  const levels: number[] = [];
  let cum = 0;
  for (const c of counts) {
    cum += c;
    levels.push(total === 0 || cum === 0 ? 0 : Math.min(LEVELS - 1, Math.max(0, Math.ceil((LEVELS * cum) / total) - 1)));
  }
  return levels;
}

/** The vendor client's empirical gamma from a band's mean (spec "ComputeGamma"). */
function computeGamma(s: BandStatistics, inType: PixelType): number {
  const t = inType === 'U8' ? s.mean! : s.max > s.min ? (255 * (s.mean! - s.min)) / (s.max - s.min) : 0;
  if (!(t > 0 && t < 255)) return 1;
  const e = t === 150 ? 0 : t <= 150 ? 45 * Math.cos(0.01047 * t) : 17 * Math.sin(0.021 * t);
  const den = Math.log((t + e) / 255);
  if (den === 0) return 1;
  const g = Math.log(t / 255) / den;
  return Number.isNaN(g) ? 1 : Math.min(9.9, Math.max(0.01, g));
}

// ---- Mapping.

const sig = (u: number): number => 1 / (1 + Math.exp(-u));

/** The output value (unrounded) of input value v. */
function curve(t: Transfer, v: number, outMin: number, outMax: number): number {
  const range = outMax - outMin;
  let m: number;
  if (t.equalize !== undefined) {
    const { min, width, levels } = t.equalize;
    let j = width > 0 ? Math.floor((v - min) / width) : 0;
    j = j < 0 ? 0 : j >= levels.length ? levels.length - 1 : j;
    m = levels[j]! / (LEVELS - 1);
    if (m <= 0) return outMin;
    if (m >= 1) return outMax;
  } else {
    if (!(v < t.maxCut && v > t.minCut)) return v >= t.maxCut ? outMax : outMin;
    m = (v - t.minCut) / (t.maxCut - t.minCut);
  }
  if (t.sigmoid > 0) {
    const k = 2 * t.sigmoid + 2;
    const lo = sig(-k / 2);
    m = (sig(k * (m - 0.5)) - lo) / (1 - 2 * lo); // s(k/2) = 1 - s(-k/2): exact symmetry
  }
  if (t.gamma !== 1) {
    const g = t.gamma;
    const o = Math.abs(range);
    let s = 1;
    if (g > 1 && o > 1) s = 1 - (1 / o) ** (m * (g > 2 ? 6.5 + (g - 2) ** 2.5 : 6.5 + 100 * (2 - g) ** 4));
    m = s * m ** (1 / g);
  }
  return outMin + range * m;
}

/** Linear mapping of float (or 32-bit integer) pixels: the closed form, no per-pixel calls. */
function linearFloat(
  t: Transfer,
  s: Plane,
  d: Plane,
  mask: Uint8Array,
  n: number,
  outMin: number,
  outMax: number,
  round: boolean,
  tlo: number,
  thi: number,
): void {
  const lo = t.minCut;
  const hi = t.maxCut;
  const span = hi - lo;
  const range = outMax - outMin;
  // m = (v - lo) / span, divided rather than multiplied by a reciprocal so that exact ratios stay
  // exact (50 of [0, 200] is 0.5, 127.5 rounds up to 128). Integer outputs round half up and
  // saturate at the type's range [tlo, thi] (as the lookup tables do; a U8 asked for 0..1000 holds 255).
  const sat = (x: number): number => Math.min(thi, Math.max(tlo, Math.floor(x + 0.5)));
  const top = round ? sat(outMax) : outMax;
  const bottom = round ? sat(outMin) : outMin;
  for (let i = 0; i < n; i++) {
    const v = s[i]!;
    if (v < hi && v > lo) {
      const x = outMin + range * ((v - lo) / span);
      d[i] = round ? Math.min(thi, Math.max(tlo, Math.floor(x + 0.5))) : x;
    } else if (v >= hi) d[i] = top;
    else if (v <= lo) d[i] = bottom;
    else mask[i] = 0; // NaN
  }
}

// ---- Lookup tables for 8- and 16-bit inputs, one per transfer object (cached).

const luts = new WeakMap<Transfer, { lut: Plane; offset: number }>();

function lutFor(p: StretchParams, t: Transfer): { lut: Plane; offset: number } {
  let hit = luts.get(t);
  if (hit === undefined) {
    const [lo, hi] = typeRange(p.inType);
    const size = hi - lo + 1;
    const lut = allocatePlane(p.outType, size);
    const info = PIXEL_TYPE_INFO[p.outType];
    for (let i = 0; i < size; i++) {
      const x = curve(t, i + lo, p.outMin, p.outMax);
      lut[i] = info.integer ? Math.min(info.max, Math.max(info.min, Math.floor(x + 0.5))) : x;
    }
    hit = { lut, offset: -lo };
    luts.set(t, hit);
  }
  return hit;
}

/**
 * TrendToRGB — a 3-band U8 picture of a trend raster (spec raster-functions.md §2 "TrendToRGB";
 * the vendor does not document the colours, so the mapping is the spec's proposal [ours]).
 *
 * Input: a trend raster. With TrendAnalysis metadata (`multidimensional.model`), the first fit
 * (first variable, first slice, first band) is drawn; without it, band 0 is taken as the slope,
 * band 1 as the intercept and bands 2, 3 as the first cos/sin pair (TrendAnalysis' band order).
 * - ModelType 0 (linear; needs a linear, harmonic, Mann-Kendall or Seasonal-Kendall trend; for
 *   the Kendall tests the slope is Sen's slope, band 1 of the fit, in the same per-day unit as
 *   the linear slope): red for a negative slope, green for a positive one, brightness v = min(1, |slope| / S) with S the 98th percentile of |slope| over
 *   the request: (255·v, 0, 0) or (0, 255·v, 0), rounded half up. S = 0 (a flat raster) gives
 *   black.
 * - ModelType 1 (harmonic; needs a harmonic trend): HSV with hue = phase atan2(sin_1, cos_1) in
 *   degrees (0..360), saturation = min(1, sqrt(cos_1² + sin_1²) / A) with
 *   A = sqrt(p98(|cos_1|)² + p98(|sin_1|)²) over the request (the spec's p98 of the amplitude,
 *   taken per band because request statistics are per band), value = intercept stretched linearly
 *   from its request minimum (0) to maximum (1); hexcone HSV -> RGB (color/ramps.ts `hsvToRgb`).
 * Percentiles come from 1024-bin request histograms (graph/request-statistics.ts; |x| folded from
 * the signed histogram, the bin centre where 98% of the valid pixels are reached), so they do not
 * depend on the tile size. NoData: where the bands used are NoData or NaN.
 * outputPixelType: the colours 0..255 through the engine's cast to any real type that holds them
 * (values unchanged); complex, S8 and sub-byte types are refused when the rule is built.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import { multidimOf } from '../../core/multidim.js';
import type { Histogram } from '../../core/pixel-block.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { hsvToRgb } from '../color/ramps.js';
import { rgbInfo } from '../color/rgb.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'A trend raster (TrendAnalysis output).' },
  ModelType: {
    kind: 'enum',
    values: [0, 1],
    names: { Linear: 0, Harmonic: 1 },
    default: 0,
    doc: '0 linear (slope colours), 1 harmonic (phase, amplitude, intercept as HSV).',
  },
} as const satisfies ArgSchema;

interface TrendToRgbParams {
  readonly input: number;
  readonly harmonic: boolean;
  readonly slope: number;
  readonly intercept: number;
  readonly cos: number;
  readonly sin: number;
  /** Bound from the request statistics. */
  readonly slopeScale: number;
  readonly amplitudeScale: number;
  readonly interceptMin: number;
  readonly interceptMax: number;
}

const at = argPaths(args);

/** The value below which `q` of the |x| of a signed histogram fall (bin centres), 0 when empty. */
function absQuantile(h: Histogram | undefined, q: number): number {
  if (!h) return 0;
  const w = (h.max - h.min) / h.size;
  const pairs: [number, number][] = [];
  let total = 0;
  for (let k = 0; k < h.size; k++) {
    const c = h.counts[k]!;
    if (c === 0) continue;
    const centre = h.size === 1 || w === 0 ? h.min : h.min + (k + 0.5) * w;
    pairs.push([Math.abs(centre), c]);
    total += c;
  }
  pairs.sort((a, b) => a[0] - b[0]);
  let acc = 0;
  for (const [v, c] of pairs) {
    acc += c;
    if (acc >= q * total) return v;
  }
  return pairs.length ? pairs[pairs.length - 1]![0] : 0;
}

export const trendToRgb = defineFunction<typeof args, TrendToRgbParams>({
  name: 'TrendToRGB',
  summary: "Colour a trend raster: slope (linear, or Sen's slope of a Kendall test) or phase/amplitude/intercept (harmonic) as RGB.",
  variableName: 'Raster',
  family: 'change',
  codes: 'colour channels',
  verification: 'hand: colours of hand-made trend rasters (no independent tool exists)',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    const harmonic = a.ModelType === 1;
    const model = multidimOf(src)?.model;
    const warnings: string[] = [];
    let first = 0;
    if (model?.kind === 'trend') {
      if (model.regression === 2)
        throw unsupportedInput(at('Raster'), "TrendToRGB draws linear, harmonic and Kendall (Sen's slope) trends; this one is polynomial");
      if (harmonic && model.regression !== 1) {
        const kind = model.regression === 0 ? 'linear' : model.regression === 3 ? 'a Mann-Kendall test' : 'a Seasonal-Kendall test';
        throw invalidArgument(
          at('ModelType'),
          `ModelType 1 (harmonic) needs a harmonic trend raster; this one is ${kind} (use ModelType 0)`,
        );
      }
      first = multidimOf(src)!.variables[0]!.slices[0]!.band;
      if (src.bandCount > model.bandsPerFit) warnings.push('the trend raster holds several fits; the first is drawn');
    } else {
      if (src.bandCount < (harmonic ? 4 : 2)) {
        throw unsupportedInput(
          at('Raster'),
          `TrendToRGB needs a trend raster (slope, intercept${harmonic ? ', cos, sin' : ''} bands); this one has ${src.bandCount} band(s)`,
        );
      }
      warnings.push('the raster has no TrendAnalysis metadata; bands are read as slope, intercept, cos_1, sin_1');
    }
    const info = rgbInfo(src);
    return {
      info,
      halo: 0,
      params: {
        input: a.Raster,
        harmonic,
        slope: first,
        intercept: first + 1,
        cos: first + 2,
        sin: first + 3,
        slopeScale: 0,
        amplitudeScale: 0,
        interceptMin: 0,
        interceptMax: 0,
      },
      requestStatistics: { inputs: [a.Raster], bins: 1024 },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  bindStatistics(p, [bands]) {
    const h = (b: number): Histogram | undefined => bands?.[b]?.histogram;
    const ci = absQuantile(h(p.cos), 0.98);
    const si = absQuantile(h(p.sin), 0.98);
    const s = bands?.[p.intercept]?.statistics;
    return {
      ...p,
      slopeScale: absQuantile(h(p.slope), 0.98),
      amplitudeScale: Math.sqrt(ci * ci + si * si),
      interceptMin: s?.min ?? 0,
      interceptMax: s?.max ?? 0,
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const n = out.mask.length;
    const [r, g, b] = out.bands as [Uint8Array, Uint8Array, Uint8Array];
    const rgb = new Uint8Array(3);
    const range = p.interceptMax - p.interceptMin;
    for (let i = 0; i < n; i++) {
      const slope = src.bands[p.slope]![i]!;
      let ok = src.mask[i] === 1 && slope === slope;
      if (!p.harmonic) {
        out.mask[i] = ok ? 1 : 0;
        if (!ok) {
          r[i] = g[i] = b[i] = 0;
          continue;
        }
        const v = p.slopeScale > 0 ? Math.min(1, Math.abs(slope) / p.slopeScale) : 0;
        const byte = Math.floor(255 * v + 0.5);
        r[i] = slope < 0 ? byte : 0;
        g[i] = slope > 0 ? byte : 0;
        b[i] = 0;
        continue;
      }
      const c = src.bands[p.cos]![i]!;
      const s = src.bands[p.sin]![i]!;
      const icpt = src.bands[p.intercept]![i]!;
      ok = ok && c === c && s === s && icpt === icpt;
      out.mask[i] = ok ? 1 : 0;
      if (!ok) {
        r[i] = g[i] = b[i] = 0;
        continue;
      }
      let hue = (Math.atan2(s, c) * 180) / Math.PI;
      if (hue < 0) hue += 360;
      const amp = Math.sqrt(c * c + s * s);
      const sat = p.amplitudeScale > 0 ? Math.min(1, amp / p.amplitudeScale) : 0;
      const val = range > 0 ? Math.min(1, Math.max(0, (icpt - p.interceptMin) / range)) : 1;
      hsvToRgb(hue >= 360 ? 0 : hue, 100 * sat, 100 * val, rgb, 0);
      r[i] = rgb[0]!;
      g[i] = rgb[1]!;
      b[i] = rgb[2]!;
    }
  },
});

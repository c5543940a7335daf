/**
 * Threshold: a binary image from Otsu's threshold (ThresholdType 1, the only type) of each band.
 *
 * Spec: raster-functions.md "Threshold" [V Otsu; LIT Otsu 1979], seed §8. Per band, the histogram
 * of the request's valid pixels (engine pre-pass, graph/request-statistics.ts): integer 8-bit data
 * one bin per value; every other type 256 bins over [min, max] of the valid pixels. With c_i the
 * counts and x_i the bin centres, for each split k (classes: bins 0..k and k+1..last, both
 * non-empty) the between-class variance is w0*w1*(mu0 - mu1)^2 (w = counts, mu = count-weighted
 * mean centre of each class); the first k with the largest variance wins (ties: the lowest k, as
 * numpy.argmax in scikit-image's threshold_otsu). Output 1 where v > t, 0 elsewhere, where t is the
 * boundary between bins k and k+1 (the spec's "bin boundary"): for one-bin-per-value data that is
 * the same binary image as scikit-image's `image > threshold_otsu(image)` (whose t is the centre of
 * bin k, an integer); for float data scikit-image compares with the bin centre instead, which moves
 * the pixels of bin k whose value is above its centre.
 * A band with a single distinct value (no split) or no valid pixel: every valid pixel is 0 [ours].
 * Statistics come from the whole request, so tiled and whole renders agree.
 * Output: U8 0/1 [ours: the vendor says "binary image"], same band count, advertised statistics
 * 0..1; NoData preserved, NaN inputs become NoData.
 * outputPixelType: the 0/1 values through the engine's cast to any real type (U1 included; values
 * unchanged); complex types are refused when the rule is built.
 */
import { unsupportedInput } from '../../core/errors.js';
import type { Histogram, RasterInfo } from '../../core/pixel-block.js';
import { PIXEL_TYPE_INFO } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  ThresholdType: { kind: 'enum', values: [1], names: { otsu: 1 }, default: 1, doc: '1 Otsu (the only type).' },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

const at = argPaths(args);

export interface ThresholdParams {
  readonly input: number;
  /** Per band: 1 where v > t. Infinity until bound (and for a band without a split). */
  readonly thresholds: readonly number[];
}

/** Otsu's split of a histogram: the boundary value between the two classes, or Infinity. */
export function otsuThreshold(h: Histogram): number {
  const size = h.size;
  const w = (h.max - h.min) / size;
  const centre = (i: number): number => h.min + (i + 0.5) * w;
  // Cumulative weights and weighted sums from both ends (as scikit-image's threshold_otsu).
  const w0 = new Float64Array(size);
  const s0 = new Float64Array(size);
  const w1 = new Float64Array(size);
  const s1 = new Float64Array(size);
  let a = 0;
  let b = 0;
  for (let i = 0; i < size; i++) {
    a += h.counts[i]!;
    b += h.counts[i]! * centre(i);
    w0[i] = a;
    s0[i] = b;
  }
  a = 0;
  b = 0;
  for (let i = size - 1; i >= 0; i--) {
    a += h.counts[i]!;
    b += h.counts[i]! * centre(i);
    w1[i] = a;
    s1[i] = b;
  }
  let best = -1;
  let split = -1;
  for (let k = 0; k < size - 1; k++) {
    const n0 = w0[k]!;
    const n1 = w1[k + 1]!;
    if (n0 === 0 || n1 === 0) continue;
    const d = s0[k]! / n0 - s1[k + 1]! / n1;
    const v = n0 * n1 * d * d;
    if (v > best) {
      best = v;
      split = k;
    }
  }
  return split < 0 ? Infinity : h.min + (split + 1) * w;
}

export const threshold = defineFunction<typeof args, ThresholdParams>({
  name: 'Threshold',
  summary: "Binary 0/1 image from Otsu's threshold of each band's histogram over the request.",
  variableName: 'Raster',
  family: 'radiometric',
  codes: 'binary values',
  verification: 'reference: scikit-image threshold_otsu on Landsat NIR (golden); hand-derived histograms',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (PIXEL_TYPE_INFO[src.pixelType].complex) {
      throw unsupportedInput(at('Raster'), `Threshold needs real pixels, got ${src.pixelType}: apply Complex first`);
    }
    const bands = src.bandCount;
    const { histograms: _h, colormap: _c, constant: _k, noData: _n, ...rest } = src;
    const info: RasterInfo = { ...rest, pixelType: 'U8', statistics: Array.from({ length: bands }, () => ({ min: 0, max: 1 })) };
    return {
      info,
      halo: 0,
      params: { input: a.Raster, thresholds: new Array<number>(bands).fill(Infinity) },
      requestStatistics: { inputs: [a.Raster], bins: 256 },
    };
  },

  bindStatistics(p, [bands]) {
    return { ...p, thresholds: p.thresholds.map((_, b) => (bands?.[b] === undefined ? Infinity : otsuThreshold(bands[b].histogram))) };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const mask = out.mask;
    mask.set(src.mask);
    const n = mask.length;
    for (let b = 0; b < out.bands.length; b++) {
      const s = src.bands[b]!;
      const d = out.bands[b]!;
      const t = p.thresholds[b]!;
      for (let i = 0; i < n; i++) {
        const v = s[i]!;
        d[i] = v > t ? 1 : 0;
        if (v !== v) mask[i] = 0;
      }
    }
  },
});

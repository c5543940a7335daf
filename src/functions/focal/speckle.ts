/**
 * Speckle: adaptive despeckling filters for radar images (Lee, Enhanced Lee, Frost, Kuan) over a
 * square window of 3x3 to 11x11 pixels, per band.
 *
 * Spec: raster-functions.md "Speckle (10.6)"; spec section 8. Notation, over the window: Ic the
 * centre pixel, Im the mean, V the population variance (divide by n) [ours], S = sqrt(V),
 * Ci = S / Im, Cu = 1 / sqrt(NLooks), Cmax = sqrt(1 + 2 / NLooks), M = MultiplicativeNoiseMean,
 * A = AdditiveNoiseMean, AV = NoiseVar, MV = 1 / NLooks.
 *  - Lee, NoiseModel 0 Multiplicative: K = M V / (Im^2 MV + M^2 V);       out = Im + K (Ic - M Im)
 *         NoiseModel 1 Additive:       K = V / (V + AV);                    out = Im + K (Ic - Im)
 *         NoiseModel 2 Additive and Multiplicative:
 *                                      K = M V / (Im^2 MV + M^2 V + AV);    out = Im + K (Ic - M Im - A)
 *    (the spec's reading of the `+ AV` term; a zero denominator means a flat, zero window: out = Ic).
 *  - Enhanced Lee: Ci <= Cu: Im; Cu < Ci < Cmax: W = exp(-DampFactor (Ci - Cu) / (Cmax - Ci)),
 *    out = Im W + Ic (1 - W); Ci >= Cmax: Ic.
 *  - Frost: out = sum_j K_j P_j / sum_j K_j, K_j = exp(-B d_j), B = DampFactor V / Im^2, d_j the
 *    distance in pixels from the centre to window pixel j.
 *  - Kuan: W = (1 - Cu^2 / Ci^2) / (1 + Cu^2) clamped to [0, 1] (W < 0 when Ci < Cu) [ours];
 *    out = Ic W + Im (1 - W).
 *  - Im = 0 (Enhanced Lee, Frost, Kuan: Ci undefined): out = Ic [ours].
 *  - NoData pixels are left out of the window statistics and of Frost's sum; a NoData centre stays
 *    NoData; windows are clipped at the raster's edges (shrunk to the pixels inside) [ours].
 *  - Output: the input's bands; the rule's outputPixelType, else the input's pixel type (natural).
 *    The filter is computed in float64 and stored once into that type (integer types round half
 *    away from zero and clamp), so a U8 image asked for F32 keeps the filtered fractions; a
 *    complex type computes into its real component type, then the engine's cast. NoData: the
 *    input's, or NaN for a float output of an integer input.
 * Arguments that do not apply to the chosen filter (NoiseModel and the noise moments outside Lee,
 * DampFactor outside Enhanced Lee and Frost, NLooks for Frost) are accepted and reported as
 * warnings when they differ from their defaults.
 * Window mean and variance come from `WindowReducer` sums (cost independent of the window size),
 * with the two-pass fallback of `directVariance` where the sums cancel (`CANCELLATION`); each filter then runs as one
 * loop over the row. Frost sums its window by distance class (one exp per square-free squared
 * distance, the others as powers of it: exp(-B t d) = exp(-B d)^t, within a few ulps).
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { computedNoData, realTypeOf } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import {
  bandValues,
  CANCELLATION,
  directVariance,
  exactSquares,
  type FocalWindow,
  focalWindow,
  copyCentreMask,
  geometryOf,
  insideCounts,
  maskedInside,
  maskValues,
  ReduceMode,
  type Store,
  storeFor,
  storeRow,
  type Values,
  windowHalo,
  WindowMoments,
  WindowReducer,
} from './window.js';

const SpeckleFilter = { Lee: 0, EnhancedLee: 1, Frost: 2, Kuan: 3 } as const;
export const NoiseModel = { Multiplicative: 0, Additive: 1, AdditiveAndMultiplicative: 2 } as const;
type FilterCode = (typeof SpeckleFilter)[keyof typeof SpeckleFilter];
type NoiseModelCode = (typeof NoiseModel)[keyof typeof NoiseModel];

const args = {
  FilterType: {
    kind: 'enum',
    values: [0, 1, 2, 3],
    names: { Lee: 0, EnhancedLee: 1, 'Enhanced Lee': 1, Frost: 2, Kuan: 3 },
    default: SpeckleFilter.Lee,
    doc: '0 Lee (default), 1 Enhanced Lee, 2 Frost, 3 Kuan; or the names.',
  },
  FilterSize: {
    kind: 'enum',
    values: [0, 1, 2, 3, 4],
    names: { '3x3': 0, '5x5': 1, '7x7': 2, '9x9': 3, '11x11': 4 },
    default: 0,
    doc: 'Window: 0 3x3 (default), 1 5x5, 2 7x7, 3 9x9, 4 11x11.',
  },
  NoiseModel: {
    kind: 'enum',
    values: [0, 1, 2],
    names: { Multiplicative: 0, Additive: 1, AdditiveAndMultiplicative: 2, 'Additive and Multiplicative': 2 },
    default: NoiseModel.Multiplicative,
    doc: 'Lee only: 0 Multiplicative (default), 1 Additive, 2 Additive and Multiplicative.',
  },
  NoiseVar: {
    kind: 'number',
    min: 0,
    default: 0.25,
    aliases: ['NoiseVariance'],
    doc: 'Lee with NoiseModel 1 or 2: variance of the additive noise (default 0.25).',
  },
  AdditiveNoiseMean: { kind: 'number', default: 0, doc: 'Lee with NoiseModel 2: mean of the additive noise (default 0).' },
  MultiplicativeNoiseMean: {
    kind: 'number',
    default: 1,
    doc: 'Lee with NoiseModel 0 or 2: mean of the multiplicative noise (default 1).',
  },
  NLooks: {
    kind: 'number',
    default: 1,
    aliases: ['NumberOfLooks'],
    doc: 'Lee, Enhanced Lee, Kuan: number of looks of the image (default 1; noise variance 1/NLooks).',
  },
  DampFactor: { kind: 'number', min: 0, default: 1, doc: 'Enhanced Lee and Frost: damping factor (default 1).' },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

export interface SpeckleParams {
  readonly input: number;
  readonly filter: FilterCode;
  readonly model: NoiseModelCode;
  readonly win: FocalWindow;
  readonly noiseVar: number;
  readonly addMean: number;
  readonly mulMean: number;
  readonly looks: number;
  readonly damp: number;
  readonly store: Store;
  /** Raster size (windows are clipped to it). */
  readonly width: number;
  readonly height: number;
  readonly exact: boolean;
}

const at = argPaths(args);

export const speckle = defineFunction<typeof args, SpeckleParams>({
  name: 'Speckle',
  summary: 'Radar speckle filters: Lee (three noise models), Enhanced Lee, Frost and Kuan over 3x3 to 11x11 windows.',
  variableName: 'Raster',
  family: 'focal',
  verification:
    'reference: Orfeo Toolbox 8.1 otbcli_Despeckle (Frost; Lee/Kuan harness check) and NumPy of the spec formulas (golden); hand: small windows',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const outType = to === undefined ? src.pixelType : realTypeOf(to);
    const noData = computedNoData(src.noData, src.pixelType, outType);
    if (isComplex(src.pixelType)) {
      throw unsupportedInput(at('Raster'), `Speckle needs a real-valued raster, got ${src.pixelType}; use Complex first`);
    }
    if (!(a.NLooks > 0)) throw invalidArgument(at('NLooks'), `NLooks must be positive, got ${a.NLooks}`);
    const filter = a.FilterType;
    const warnings: string[] = [];
    const ignored = (name: string, value: number, dflt: number, why: string): void => {
      if (value !== dflt) warnings.push(`${name} is ignored: ${why}`);
    };
    if (filter !== SpeckleFilter.Lee) {
      ignored('NoiseModel', a.NoiseModel, 0, 'only Lee uses a noise model');
      ignored('NoiseVar', a.NoiseVar, 0.25, 'only Lee uses it');
      ignored('AdditiveNoiseMean', a.AdditiveNoiseMean, 0, 'only Lee uses it');
      ignored('MultiplicativeNoiseMean', a.MultiplicativeNoiseMean, 1, 'only Lee uses it');
    } else {
      if (a.NoiseModel === NoiseModel.Multiplicative) ignored('NoiseVar', a.NoiseVar, 0.25, 'NoiseModel 0 has no additive noise');
      if (a.NoiseModel !== NoiseModel.AdditiveAndMultiplicative)
        ignored('AdditiveNoiseMean', a.AdditiveNoiseMean, 0, 'only NoiseModel 2 uses it');
      if (a.NoiseModel === NoiseModel.Additive)
        ignored('MultiplicativeNoiseMean', a.MultiplicativeNoiseMean, 1, 'NoiseModel 1 has no multiplicative noise');
    }
    if (filter !== SpeckleFilter.EnhancedLee && filter !== SpeckleFilter.Frost)
      ignored('DampFactor', a.DampFactor, 1, 'only Enhanced Lee and Frost use it');
    if (filter === SpeckleFilter.Frost) ignored('NLooks', a.NLooks, 1, 'Frost does not use it');
    const size = 3 + 2 * a.FilterSize;
    const win = focalWindow(size, size);
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: src.bandCount,
      pixelType: outType,
      ...(noData !== undefined ? { noData } : {}),
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      ...(src.bandNames ? { bandNames: src.bandNames } : {}),
    };
    return {
      info,
      halo: windowHalo(win),
      params: {
        input: a.Raster,
        filter,
        model: a.NoiseModel,
        win,
        noiseVar: a.NoiseVar,
        addMean: a.AdditiveNoiseMean,
        mulMean: a.MultiplicativeNoiseMean,
        looks: a.NLooks,
        damp: a.DampFactor,
        width: src.width,
        height: src.height,
        store: storeFor(outType, noData),
        exact: exactSquares(src.pixelType, size * size),
      },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const g = geometryOf(src, out);
    const { inW, outW, outH, ox, oy } = g;
    const win = p.win;
    const mask = src.mask;
    const outMask = out.mask;
    // Without NoData inside the raster, counts are the window's rows x columns inside the raster.
    const full = !maskedInside(mask, g, p.width, p.height);
    const inside = insideCounts(g, win, p.width, p.height);
    const rowBuf = new Float64Array(outW);
    const means = new Float64Array(outW);
    const variances = new Float64Array(outW);
    copyCentreMask(g, mask, outMask);
    const cu2 = 1 / p.looks;
    const cu = Math.sqrt(cu2);
    const cmax = Math.sqrt(1 + 2 / p.looks);
    const exact = p.exact;
    const frost = p.filter === SpeckleFilter.Frost ? frostTaps(win, inW) : undefined;
    for (let b = 0; b < out.bands.length; b++) {
      const values = bandValues(src, b, 0);
      const moments = new WindowMoments(values, g, win);
      const counts = full ? undefined : new WindowReducer(maskValues(mask), g, win, ReduceMode.Sum);
      for (let y = 0; y < outH; y++) {
        moments.next();
        const { sums: s, squares: q } = moments;
        const nn = counts?.next();
        const o = y * outW;
        const cy = oy + y;
        const c0 = cy * inW + ox;
        const ry = inside.rows[y]!;
        // Window mean and population variance of the valid pixels (two-pass where the sums cancel).
        for (let x = 0; x < outW; x++) {
          if (outMask[o + x] === 0) continue;
          const n = nn ? nn[x]! : ry * inside.cols[x]!;
          const sx = s[x]!;
          const nq = n * q[x]!;
          const d = nq - sx * sx;
          means[x] = sx / n;
          variances[x] = exact || d > CANCELLATION * nq ? (d > 0 ? d / (n * n) : 0) : directVariance(values, mask, inW, win, ox + x, cy);
        }
        filterRow(p, rowBuf, means, variances, values, c0, outMask, o, outW, cu, cu2, cmax, frost, mask);
        storeRow(out.bands[b]!, o, rowBuf, outW, outMask, p.store);
      }
    }
  },
});

/**
 * Frost's window, by distinct distance from the centre (classes in ascending distance): the taps
 * of class k are off[start[k]] .. off[start[k + 1] - 1] (input-index offsets from the centre).
 * A class whose distance is `power` times that of class `base` gets its weight as
 * weight[base]^power (exp(-B t d) = exp(-B d)^t), so only the classes of square-free squared
 * distance call exp.
 */
interface FrostTaps {
  readonly off: Int32Array;
  readonly start: Int32Array;
  readonly dist: Float64Array;
  readonly base: Int32Array;
  readonly power: Int32Array;
  /** Weight per class (scratch). */
  readonly weight: Float64Array;
}

function frostTaps(win: FocalWindow, inW: number): FrostTaps {
  const byD2 = new Map<number, number[]>();
  for (let r = -win.top; r <= win.bottom; r++) {
    for (let c = -win.left; c <= win.right; c++) {
      const d2 = r * r + c * c;
      const list = byD2.get(d2) ?? [];
      list.push(r * inW + c);
      byD2.set(d2, list);
    }
  }
  const d2s = [...byD2.keys()].sort((u, v) => u - v);
  const off: number[] = [];
  const start: number[] = [];
  const base: number[] = [];
  const power: number[] = [];
  for (const [k, d2] of d2s.entries()) {
    start.push(off.length);
    off.push(...byD2.get(d2)!);
    // Largest t with d2 = s t^2 and s a class too: weight = weight[class of s]^t.
    let t = 1;
    for (let u = 2; u * u <= d2; u++) if (d2 % (u * u) === 0 && byD2.has(d2 / (u * u))) t = u;
    base.push(t === 1 ? k : d2s.indexOf(d2 / (t * t)));
    power.push(d2 === 0 ? 0 : t);
  }
  start.push(off.length);
  return {
    off: Int32Array.from(off),
    start: Int32Array.from(start),
    dist: Float64Array.from(d2s, Math.sqrt),
    base: Int32Array.from(base),
    power: Int32Array.from(power),
    weight: new Float64Array(d2s.length),
  };
}

/** One row of filter results from the window means and variances (pixels with outMask 0 skipped). */
function filterRow(
  p: SpeckleParams,
  dst: Float64Array,
  means: Float64Array,
  variances: Float64Array,
  values: Values,
  c0: number,
  outMask: Uint8Array,
  o: number,
  n: number,
  cu: number,
  cu2: number,
  cmax: number,
  frost: FrostTaps | undefined,
  mask: Uint8Array,
): void {
  switch (p.filter) {
    case SpeckleFilter.Lee: {
      const m = p.mulMean;
      const av = p.noiseVar;
      if (p.model === NoiseModel.Additive) {
        for (let x = 0; x < n; x++) {
          if (outMask[o + x] === 0) continue;
          const ic = values[c0 + x]!;
          const im = means[x]!;
          const v = variances[x]!;
          const den = v + av;
          dst[x] = den > 0 ? im + (v / den) * (ic - im) : ic;
        }
        return;
      }
      // Multiplicative: the additive terms are 0 (adding or subtracting 0 is exact).
      const both = p.model === NoiseModel.AdditiveAndMultiplicative;
      const av2 = both ? av : 0;
      const a = both ? p.addMean : 0;
      for (let x = 0; x < n; x++) {
        if (outMask[o + x] === 0) continue;
        const ic = values[c0 + x]!;
        const im = means[x]!;
        const v = variances[x]!;
        const den = im * im * cu2 + m * m * v + av2;
        dst[x] = den > 0 ? im + ((m * v) / den) * (ic - m * im - a) : ic;
      }
      return;
    }
    case SpeckleFilter.EnhancedLee: {
      const damp = p.damp;
      for (let x = 0; x < n; x++) {
        if (outMask[o + x] === 0) continue;
        const ic = values[c0 + x]!;
        const im = means[x]!;
        if (im === 0) {
          dst[x] = ic;
          continue;
        }
        const ci = Math.sqrt(variances[x]!) / im;
        if (ci <= cu) dst[x] = im;
        else if (ci >= cmax) dst[x] = ic;
        else {
          const w = Math.exp((-damp * (ci - cu)) / (cmax - ci));
          dst[x] = im * w + ic * (1 - w);
        }
      }
      return;
    }
    case SpeckleFilter.Kuan: {
      for (let x = 0; x < n; x++) {
        if (outMask[o + x] === 0) continue;
        const ic = values[c0 + x]!;
        const im = means[x]!;
        if (im === 0) {
          dst[x] = ic;
          continue;
        }
        const c2 = variances[x]! / (im * im);
        let w = c2 > 0 ? (1 - cu2 / c2) / (1 + cu2) : 0;
        w = w < 0 ? 0 : w > 1 ? 1 : w;
        dst[x] = ic * w + im * (1 - w);
      }
      return;
    }
    default: {
      const { off, start, dist, base, power, weight } = frost!;
      const classes = dist.length;
      const damp = p.damp;
      for (let x = 0; x < n; x++) {
        if (outMask[o + x] === 0) continue;
        const ci = c0 + x;
        const ic = values[ci]!;
        const im = means[x]!;
        if (im === 0) {
          dst[x] = ic;
          continue;
        }
        const beta = (damp * variances[x]!) / (im * im);
        for (let k = 0; k < classes; k++) {
          const t = power[k]!;
          let w = 1;
          if (t === 1) w = Math.exp(-beta * dist[k]!);
          else if (t > 1) {
            const e = weight[base[k]!]!;
            w = e;
            for (let i = 1; i < t; i++) w *= e;
          }
          weight[k] = w;
        }
        // Per class: the sum and count of its valid pixels, then weighted.
        let num = 0;
        let den = 0;
        for (let k = 0; k < classes; k++) {
          let sum = 0;
          let count = 0;
          for (let j = start[k]!, end = start[k + 1]!; j < end; j++) {
            const i = ci + off[j]!;
            if (mask[i] !== 0) {
              sum += values[i]!;
              count++;
            }
          }
          const w = weight[k]!;
          num += w * sum;
          den += w * count;
        }
        dst[x] = num / den;
      }
    }
  }
}

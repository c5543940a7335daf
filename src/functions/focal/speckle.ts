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
 *  - Output: the input's bands and pixel type (integer types round half away from zero and clamp).
 * Arguments that do not apply to the chosen filter (NoiseModel and the noise moments outside Lee,
 * DampFactor outside Enhanced Lee and Frost, NLooks for Frost) are accepted and reported as
 * warnings when they differ from their defaults.
 * Window mean and variance come from `WindowReducer` sums (cost independent of the window size),
 * with the two-pass fallback of `varianceOf` where the sums cancel.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import {
  bandValues,
  exactSquares,
  type FocalWindow,
  focalWindow,
  geometryOf,
  insideCounts,
  maskedInside,
  maskValues,
  ReduceMode,
  type Store,
  storeFor,
  storeRow,
  type Values,
  varianceOf,
  windowHalo,
  WindowReducer,
} from './window.js';

export const SpeckleFilter = { Lee: 0, EnhancedLee: 1, Frost: 2, Kuan: 3 } as const;
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

const P = 'rasterFunctionArguments.';

export const speckle = defineFunction<typeof args, SpeckleParams>({
  name: 'Speckle',
  summary: 'Radar speckle filters: Lee (three noise models), Enhanced Lee, Frost and Kuan over 3x3 to 11x11 windows.',
  variableName: 'Raster',
  family: 'focal',
  verification:
    'reference: Orfeo Toolbox 8.1 otbcli_Despeckle (Frost; Lee/Kuan harness check) and NumPy of the spec formulas (golden); hand: small windows',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) {
      throw unsupportedInput(`${P}Raster`, `Speckle needs a real-valued raster, got ${src.pixelType}; use Complex first`);
    }
    if (!(a.NLooks > 0)) throw invalidArgument(`${P}NLooks`, `NLooks must be positive, got ${a.NLooks}`);
    const filter = a.FilterType as FilterCode;
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
      if (a.NoiseModel !== NoiseModel.AdditiveAndMultiplicative) ignored('AdditiveNoiseMean', a.AdditiveNoiseMean, 0, 'only NoiseModel 2 uses it');
      if (a.NoiseModel === NoiseModel.Additive) ignored('MultiplicativeNoiseMean', a.MultiplicativeNoiseMean, 1, 'NoiseModel 1 has no multiplicative noise');
    }
    if (filter !== SpeckleFilter.EnhancedLee && filter !== SpeckleFilter.Frost) ignored('DampFactor', a.DampFactor, 1, 'only Enhanced Lee and Frost use it');
    if (filter === SpeckleFilter.Frost) ignored('NLooks', a.NLooks, 1, 'Frost does not use it');
    const size = 3 + 2 * a.FilterSize;
    const win = focalWindow(size, size);
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: src.bandCount,
      pixelType: src.pixelType,
      ...(src.noData !== undefined ? { noData: src.noData } : {}),
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
        model: a.NoiseModel as NoiseModelCode,
        win,
        noiseVar: a.NoiseVar,
        addMean: a.AdditiveNoiseMean,
        mulMean: a.MultiplicativeNoiseMean,
        looks: a.NLooks,
        damp: a.DampFactor,
        width: src.width,
        height: src.height,
        store: storeFor(src.pixelType, src.noData),
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
    for (let y = 0; y < outH; y++) outMask.set(mask.subarray((oy + y) * inW + ox, (oy + y) * inW + ox + outW), y * outW);
    const cu2 = 1 / p.looks;
    const cu = Math.sqrt(cu2);
    const cmax = Math.sqrt(1 + 2 / p.looks);
    const frost = p.filter === SpeckleFilter.Frost ? frostTaps(win, inW) : undefined;
    for (let b = 0; b < out.bands.length; b++) {
      const values = bandValues(src, b, 0);
      const sums = new WindowReducer(values, g, win, ReduceMode.Sum);
      const squares = new WindowReducer(values, g, win, ReduceMode.SumOfSquares);
      const counts = full ? undefined : new WindowReducer(maskValues(mask), g, win, ReduceMode.Sum);
      for (let y = 0; y < outH; y++) {
        const s = sums.next();
        const q = squares.next();
        const nn = counts?.next();
        const o = y * outW;
        const cy = oy + y;
        for (let x = 0; x < outW; x++) {
          if (outMask[o + x] === 0) continue;
          const cx = ox + x;
          const n = nn ? nn[x]! : inside.rows[y]! * inside.cols[x]!;
          const im = s[x]! / n;
          const v = varianceOf(n, s[x]!, q[x]!, p.exact, values, mask, inW, win, cx, cy);
          const ic = values[cy * inW + cx]!;
          rowBuf[x] = filterPixel(p, ic, im, v, cu, cu2, cmax, frost, values, mask, inW, cy * inW + cx);
        }
        storeRow(out.bands[b]!, o, rowBuf, outW, outMask, p.store);
      }
    }
  },
});

interface FrostTaps {
  /** Input-index offsets of the window pixels from the centre. */
  readonly off: Int32Array;
  /** Index of each pixel's distance in `dist`. */
  readonly which: Uint16Array;
  /** The distinct centre distances. */
  readonly dist: Float64Array;
  /** exp(-B d) per distinct distance (scratch). */
  readonly weight: Float64Array;
}

function frostTaps(win: FocalWindow, inW: number): FrostTaps {
  const d2s: number[] = [];
  const off: number[] = [];
  const which: number[] = [];
  for (let r = -win.top; r <= win.bottom; r++) {
    for (let c = -win.left; c <= win.right; c++) {
      const d2 = r * r + c * c;
      let k = d2s.indexOf(d2);
      if (k < 0) k = d2s.push(d2) - 1;
      off.push(r * inW + c);
      which.push(k);
    }
  }
  return {
    off: Int32Array.from(off),
    which: Uint16Array.from(which),
    dist: Float64Array.from(d2s, Math.sqrt),
    weight: new Float64Array(d2s.length),
  };
}

function filterPixel(
  p: SpeckleParams,
  ic: number,
  im: number,
  v: number,
  cu: number,
  cu2: number,
  cmax: number,
  frost: FrostTaps | undefined,
  values: Values,
  mask: Uint8Array,
  inW: number,
  ci: number,
): number {
  switch (p.filter) {
    case SpeckleFilter.Lee: {
      const m = p.mulMean;
      if (p.model === NoiseModel.Additive) {
        const den = v + p.noiseVar;
        return den > 0 ? im + (v / den) * (ic - im) : ic;
      }
      const den = im * im * cu2 + m * m * v + (p.model === NoiseModel.AdditiveAndMultiplicative ? p.noiseVar : 0);
      if (!(den > 0)) return ic;
      const k = (m * v) / den;
      return p.model === NoiseModel.AdditiveAndMultiplicative ? im + k * (ic - m * im - p.addMean) : im + k * (ic - m * im);
    }
    case SpeckleFilter.EnhancedLee: {
      if (im === 0) return ic;
      const ci2 = Math.sqrt(v) / im;
      if (ci2 <= cu) return im;
      if (ci2 >= cmax) return ic;
      const w = Math.exp((-p.damp * (ci2 - cu)) / (cmax - ci2));
      return im * w + ic * (1 - w);
    }
    case SpeckleFilter.Kuan: {
      if (im === 0) return ic;
      const c2 = v / (im * im);
      let w = c2 > 0 ? (1 - cu2 / c2) / (1 + cu2) : 0;
      w = w < 0 ? 0 : w > 1 ? 1 : w;
      return ic * w + im * (1 - w);
    }
    default: {
      if (im === 0) return ic;
      const f = frost!;
      const beta = (p.damp * v) / (im * im);
      const { off, which, dist, weight } = f;
      for (let k = 0; k < dist.length; k++) weight[k] = Math.exp(-beta * dist[k]!);
      let num = 0;
      let den = 0;
      for (let t = 0; t < off.length; t++) {
        const j = ci + off[t]!;
        if (mask[j] === 0) continue;
        const kw = weight[which[t]!]!;
        num += kw * values[j]!;
        den += kw;
      }
      return num / den;
    }
  }
}

/**
 * Pansharpening — fuse a high-resolution panchromatic band with a lower-resolution multispectral
 * image: Brovey, IHS, Esri, Simple Mean or Gram-Schmidt.
 *
 * Spec: raster-functions.md §2 "Pansharpening" (vendor "PansharpeningType" and "Fundamentals of
 * pan sharpening"; VPY `pansharpen`). Model: the pan value is a weighted average of the MS bands,
 * P = R·wR + G·wG + B·wB + I·wI (`Weights` = [wR, wG, wB, wI], default [0.166, 0.167, 0.167, 0.5]).
 * Bands [ours, VPY has no band selection]: the MS bands are taken in the order red, green, blue,
 * (NIR); MSImage must have 3 or 4 bands. The infrared band I is band 1 of `InfraredImage` when
 * given, else the 4th MS band when `UseFourthBandOfMSAsIR` (default true) and the MS image has 4
 * bands, else there is none (wI and the I terms drop out).
 * Grid: the output is on the pan grid (pan cell size) over the intersection of the pan and MS
 * extents, snapped to the pan's pixels; the MS (and IR) images are resampled onto it bilinearly by
 * the engine (Plan.align, gdalwarp conventions; integer MS types are stored rounded after
 * resampling), the pan with nearest neighbour (an exact window copy).
 * Methods, per pixel (b = each MS band):
 * - 1 Brovey: DNF = (P − wI·I) / (wR·R + wG·G + wB·B); out_b = b·DNF. A zero denominator gives
 *   DNF 0 (as GDAL's pansharpening), not NoData.
 * - 0 IHS [ours for the details]: the linear IHS transform, intensity I0 = (R + G + B) / 3,
 *   replaced by the pan minus the infrared part rescaled to the same scale,
 *   I' = (P − wI·I) / (wR + wG + wB); inverting the transform adds I' − I0 to each band, the NIR
 *   band included (generalised IHS). The literal "replace I by P − wI·I" would darken the image
 *   by the factor wR + wG + wB with weights summing to 1.
 * - 2 Esri (default): WA = (wR·R + wG·G + wB·B + wI·I) / (wR + wG + wB + wI); out_b = b + P − WA.
 * - 3 SimpleMean: out_b = (b + P) / 2.
 * - 4 Gram-Schmidt (Laben & Brower 2000, in its component-substitution form, Aiazzi et al. 2007):
 *   simulated pan S = Σ w·band / Σ w over R, G, B (and I); the pan is matched to S's mean and
 *   standard deviation, P' = (P − μP)·σS/σP + μS; out_b = b + g_b·(P' − S) with
 *   g_b = cov(b, S) / var(S). Statistics are over every pixel of the output grid valid in all
 *   inputs, so that tiles agree: each tile reads the whole (aligned) inputs (declared with
 *   `inputRect`, like ElevationVoidFill without a width limit). σP = 0 gives P' = μS; var(S) = 0
 *   gives g_b = 0.
 * `Sensor` selects sensor-specific default weights on the vendor side; that table is not
 * published, so it is accepted and reported as ignored (pass `Weights`).
 * Output: the MS band count, the MS pixel type (integer results rounded half away from zero and
 * clamped), MS band names, NoData where the pan, MS or IR pixel is NoData (or a result is not
 * finite). Weights must be >= 0; a warning says when they do not sum to 1.
 * outputPixelType: replaces the natural type (the multispectral input's) and the sharpened values
 * are stored once into it (integer types rounded half away from zero and clamped; a U8 image asked
 * for F32 keeps the fractions); a complex type computes into its component type, then the engine's
 * cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, PIXEL_TYPE_INFO, representable, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { realTypeOf } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { CellsizeType, ExtentType, outputGrid } from '../local/grid.js';

export const PansharpeningType = { IHS: 0, Brovey: 1, Esri: 2, SimpleMean: 3, GramSchmidt: 4 } as const;

const args = {
  PanImage: { kind: 'raster', doc: 'Panchromatic raster (its first band).' },
  MSImage: { kind: 'raster', doc: 'Multispectral raster: 3 or 4 bands in the order red, green, blue, (NIR).' },
  InfraredImage: { kind: 'raster', optional: true, doc: 'Optional infrared raster (its first band).' },
  UseFourthBandOfMSAsIR: {
    kind: 'boolean',
    default: true,
    doc: 'Use the 4th MS band as the infrared band when no InfraredImage is given.',
  },
  Weights: {
    kind: 'numbers',
    default: [0.166, 0.167, 0.167, 0.5],
    doc: 'Weights of red, green, blue and infrared in the pan (should sum to 1); 3 values when there is no infrared.',
  },
  PansharpeningType: {
    kind: 'enum',
    values: [0, 1, 2, 3, 4],
    names: { IHS: 0, Brovey: 1, Esri: 2, SimpleMean: 3, Mean: 3, GramSchmidt: 4, 'Gram-Schmidt': 4 },
    default: PansharpeningType.Esri,
    aliases: ['Type', 'Method'],
    doc: '0 IHS, 1 Brovey, 2 Esri (default), 3 SimpleMean, 4 Gram-Schmidt.',
  },
  Sensor: { kind: 'string', doc: 'Sensor name (vendor sensor-specific default weights; not published, ignored: give Weights).' },
} as const satisfies ArgSchema;

interface PansharpenParams {
  readonly type: 0 | 1 | 2 | 3 | 4;
  readonly pan: number;
  readonly ms: number;
  /** Input index and band of the infrared, or input -1 for none. */
  readonly irInput: number;
  readonly irBand: number;
  readonly msBands: number;
  readonly w: readonly [number, number, number, number];
  readonly outType: PixelType;
}

const at = argPaths(args);

export const pansharpening = defineFunction<typeof args, PansharpenParams>({
  name: 'Pansharpening',
  aliases: ['Pansharpen'],
  summary: 'Fuse a panchromatic band with a multispectral image (Brovey, IHS, Esri, Simple Mean, Gram-Schmidt).',
  variableName: 'MSImage',
  family: 'spectral',
  verification:
    'reference: gdal_pansharpen.py (weighted Brovey) golden; NumPy goldens for Esri, IHS, Simple Mean, Gram-Schmidt; hand: formulas',
  args,

  plan(a, inputs, to) {
    const pan = inputs[a.PanImage]!;
    const ms = inputs[a.MSImage]!;
    const warnings: string[] = [];
    for (const [name, info] of [
      ['PanImage', pan],
      ['MSImage', ms],
    ] as const) {
      if (info.constant !== undefined) throw invalidArgument(at(name), `${name} must be a raster, not a constant`);
      if (isComplex(info.pixelType)) throw unsupportedInput(at(name), `Pansharpening does not take complex (${info.pixelType}) rasters`);
    }
    if (pan.bandCount > 1) warnings.push(`PanImage has ${pan.bandCount} bands: the first is the pan`);
    if (ms.bandCount !== 3 && ms.bandCount !== 4) {
      throw unsupportedInput(at('MSImage'), `MSImage needs 3 or 4 bands (red, green, blue, NIR), got ${ms.bandCount}`);
    }
    let irInput = -1;
    let irBand = 0;
    if (a.InfraredImage !== undefined) {
      const ir = inputs[a.InfraredImage]!;
      if (ir.constant !== undefined || isComplex(ir.pixelType))
        throw invalidArgument(at('InfraredImage'), 'InfraredImage must be a real-valued raster');
      irInput = a.InfraredImage;
      if (ir.bandCount > 1) warnings.push(`InfraredImage has ${ir.bandCount} bands: the first is used`);
    } else if (a.UseFourthBandOfMSAsIR && ms.bandCount === 4) {
      irInput = a.MSImage;
      irBand = 3;
    }
    const wl = a.Weights;
    if (wl.length !== 4 && !(wl.length === 3 && irInput < 0)) {
      throw invalidArgument(
        at('Weights'),
        `Weights needs 4 values (red, green, blue, infrared)${irInput < 0 ? ' or 3 without infrared' : ''}, got ${wl.length}`,
      );
    }
    if (wl.some((w) => w < 0)) throw invalidArgument(at('Weights'), 'Weights must not be negative');
    const w: [number, number, number, number] = [wl[0]!, wl[1]!, wl[2]!, irInput >= 0 ? (wl[3] ?? 0) : 0];
    if (w[0] + w[1] + w[2] <= 0) throw invalidArgument(at('Weights'), 'the red, green and blue weights sum to 0');
    const sum = w[0] + w[1] + w[2] + w[3];
    if (Math.abs(sum - 1) > 0.01) warnings.push(`Weights sum to ${sum}, not 1 (the pan model P = wR·R + wG·G + wB·B + wI·I assumes 1)`);
    if (a.Sensor !== undefined) warnings.push(`Sensor "${a.Sensor}": sensor-specific default weights are not published; Weights are used`);

    const grid = outputGrid([pan, ms], ExtentType.IntersectionOf, CellsizeType.FirstOf, { paths: [at('PanImage'), at('MSImage')] })!;
    const outType = to === undefined ? ms.pixelType : realTypeOf(to);
    const info: RasterInfo = {
      ...grid,
      bandCount: ms.bandCount,
      pixelType: outType,
      ...(ms.noData !== undefined && representable(ms.noData, outType)
        ? { noData: ms.noData }
        : !PIXEL_TYPE_INFO[outType].integer
          ? { noData: Number.NaN }
          : {}),
      ...(ms.bandNames ? { bandNames: ms.bandNames } : {}),
    };
    const align = inputs.map((_, i) =>
      i === a.PanImage
        ? { method: 'nearest' as const }
        : i === a.MSImage || i === a.InfraredImage
          ? { method: 'bilinear' as const }
          : undefined,
    );
    const gs = a.PansharpeningType === PansharpeningType.GramSchmidt;
    return {
      info,
      halo: 0,
      align,
      ...(gs ? { inputRect: () => ({ x: 0, y: 0, width: grid.width, height: grid.height }) } : {}),
      params: { type: a.PansharpeningType, pan: a.PanImage, ms: a.MSImage, irInput, irBand, msBands: ms.bandCount, w, outType },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const pan = inputs[p.pan]!;
    const ms = inputs[p.ms]!;
    const ir = p.irInput >= 0 ? inputs[p.irInput]! : undefined;
    const irPlane = ir?.bands[p.irBand];
    // Inputs cover out.rect (or, for Gram-Schmidt, the whole grid): index of out pixel (0, 0) in them.
    const iw = pan.rect.width;
    const ox = out.rect.x - pan.rect.x;
    const oy = out.rect.y - pan.rect.y;
    const [wR, wG, wB, wI] = p.w;
    const nb = p.msBands;
    const R = ms.bands[0]!;
    const G = ms.bands[1]!;
    const B = ms.bands[2]!;
    const validAt = (j: number): boolean => pan.mask[j] !== 0 && ms.mask[j] !== 0 && (ir === undefined || ir.mask[j] !== 0);

    // Gram-Schmidt statistics over the whole input blocks.
    let gain = new Float64Array(nb);
    let a = 0; // P' = a·P + c
    let c = 0;
    const wsum = wR + wG + wB + wI;
    if (p.type === 4) {
      const n = pan.mask.length;
      let cnt = 0;
      let sP = 0;
      let sS = 0;
      let sPP = 0;
      let sSS = 0;
      const sB = new Float64Array(nb);
      const sBS = new Float64Array(nb);
      const P0 = pan.bands[0]!;
      for (let j = 0; j < n; j++) {
        if (!validAt(j)) continue;
        const s = (wR * R[j]! + wG * G[j]! + wB * B[j]! + (irPlane ? wI * irPlane[j]! : 0)) / wsum;
        const pv = P0[j]!;
        cnt++;
        sP += pv;
        sPP += pv * pv;
        sS += s;
        sSS += s * s;
        for (let b = 0; b < nb; b++) {
          const v = ms.bands[b]![j]!;
          sB[b]! += v;
          sBS[b]! += v * s;
        }
      }
      if (cnt > 0) {
        const mP = sP / cnt;
        const mS = sS / cnt;
        const vP = Math.max(0, sPP / cnt - mP * mP);
        const vS = Math.max(0, sSS / cnt - mS * mS);
        a = vP > 0 ? Math.sqrt(vS / vP) : 0;
        c = mS - a * mP;
        gain = Float64Array.from({ length: nb }, (_, b) => (vS > 0 ? (sBS[b]! / cnt - (sB[b]! / cnt) * mS) / vS : 0));
      }
    }

    const { width, height } = out.rect;
    const m = out.mask;
    const integer = PIXEL_TYPE_INFO[p.outType].integer;
    const lo = PIXEL_TYPE_INFO[p.outType].min;
    const hi = PIXEL_TYPE_INFO[p.outType].max;
    const rgbSum = wR + wG + wB;
    const Pp = pan.bands[0]!;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = y * width + x;
        const j = (y + oy) * iw + (x + ox);
        if (!validAt(j)) {
          m[i] = 0;
          continue;
        }
        const pv = Pp[j]!;
        const iv = irPlane ? irPlane[j]! : 0;
        const r = R[j]!;
        const g = G[j]!;
        const bl = B[j]!;
        // Each method as out_b = mul·b + add.
        let mul = 1;
        let add = 0;
        let s = 0;
        switch (p.type) {
          case 1: {
            const den = wR * r + wG * g + wB * bl;
            mul = den !== 0 ? (pv - wI * iv) / den : 0;
            break;
          }
          case 0:
            add = (pv - wI * iv) / rgbSum - (r + g + bl) / 3;
            break;
          case 2:
            add = pv - (wR * r + wG * g + wB * bl + wI * iv) / wsum;
            break;
          case 3:
            mul = 0.5;
            add = 0.5 * pv;
            break;
          case 4:
            s = (wR * r + wG * g + wB * bl + wI * iv) / wsum;
            add = a * pv + c - s; // multiplied by the band's gain below
            break;
        }
        let bad = false;
        for (let b = 0; b < nb; b++) {
          const v = ms.bands[b]![j]!;
          let o = p.type === 4 ? v + gain[b]! * add : mul * v + add;
          if (o - o !== 0) {
            bad = true;
            break;
          }
          if (integer) {
            o = o < 0 ? -Math.floor(0.5 - o) : Math.floor(o + 0.5);
            o = o < lo ? lo : o > hi ? hi : o;
          }
          out.bands[b]![i] = o;
        }
        if (bad) m[i] = 0;
      }
    }
  },
});

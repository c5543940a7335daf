/**
 * Grayscale (alias Greyscale) — one band from a weighted mean of all bands [spec file §8
 * Grayscale: "weighted sum of bands divided by the sum of weights"; raster-functions.md
 * "Grayscale"; V "weights applied to each band, then normalised"].
 *
 *     gray = (w_1 v_1 + ... + w_N v_N) / (w_1 + ... + w_N)
 *
 * computed in float64 in that order (numerator first, one division), so integer weights give
 * exact halves where the formula does.
 * - `ConversionParameters` (the spec also writes `conversionParameters`; names match
 *   case-insensitively): N weights, N = the input's band count, as an array or a space/comma
 *   separated string. Absent: equal weights [ours], i.e. the mean of the bands. A wrong count is
 *   an error naming both counts.
 * - Sum of weights 0 [ours]: every pixel is NoData (the formula is undefined); the plan warns.
 * - NoData: a pixel NoData in the input (the mask is shared by all bands) is NoData; NaN results
 *   (NaN input values) are NoData.
 * Output: one band, natural type = the input type [ours]; integer types are rounded half away
 * from zero and saturated at the type's range (negative weights can leave it), as
 * `outputPixelType` casts do. The input's NoData value is kept. No statistics are advertised.
 * The rule's outputPixelType replaces the natural type and the mean is stored once into it (a U8
 * RGB asked for F32 keeps the fractions); complex: its real component type, then the engine's cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, PIXEL_TYPE_INFO, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { realTypeOf, retypedInfo } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  ConversionParameters: {
    kind: 'numbers',
    doc: 'One weight per band (array or space-delimited string); the result is the weighted sum divided by the sum of weights. Default: equal weights.',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

export interface GrayscaleParams {
  readonly input: number;
  readonly weights: readonly number[];
  readonly total: number;
  readonly pixelType: PixelType;
}

const at = argPaths(args);

export const grayscale = defineFunction<typeof args, GrayscaleParams>({
  name: 'Grayscale',
  aliases: ['Greyscale'],
  summary: 'One band from the weighted mean of all bands (weights normalised by their sum).',
  variableName: 'Raster',
  family: 'spectral',
  verification: 'reference: gdal_calc.py (NumPy) on Landsat bands (golden); hand: weights, rounding, NoData',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `Grayscale needs real pixel values, got ${src.pixelType}`);
    const weights = a.ConversionParameters ?? new Array<number>(src.bandCount).fill(1);
    if (weights.length !== src.bandCount) {
      throw invalidArgument(
        at('ConversionParameters'),
        `needs one weight per band: the raster has ${src.bandCount} band(s), got ${weights.length} weight(s)`,
      );
    }
    const total = weights.reduce((s, w) => s + w, 0);
    const warnings = total === 0 ? ['the weights sum to 0: every pixel is NoData'] : [];
    const natural: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: 1,
      pixelType: src.pixelType,
      ...(src.noData !== undefined ? { noData: src.noData } : {}),
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      bandNames: ['Gray'],
    };
    const info = retypedInfo(natural, to === undefined ? undefined : realTypeOf(to));
    return {
      info,
      halo: 0,
      params: { input: a.Raster, weights, total, pixelType: info.pixelType },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const mask = out.mask;
    mask.set(src.mask);
    const n = mask.length;
    if (p.total === 0) {
      mask.fill(0);
      return;
    }
    const acc = new Float64Array(n);
    for (let b = 0; b < p.weights.length; b++) {
      const w = p.weights[b]!;
      const band = src.bands[b]!;
      for (let i = 0; i < n; i++) acc[i]! += w * band[i]!;
    }
    const dst = out.bands[0]!;
    const total = p.total;
    const info = PIXEL_TYPE_INFO[p.pixelType];
    if (!info.integer) {
      for (let i = 0; i < n; i++) {
        const v = acc[i]! / total;
        if (v !== v) mask[i] = 0;
        else dst[i] = v;
      }
      return;
    }
    const lo = info.min;
    const hi = info.max;
    for (let i = 0; i < n; i++) {
      const v = acc[i]! / total;
      if (v !== v) {
        mask[i] = 0;
        continue;
      }
      const r = v < 0 ? -Math.floor(0.5 - v) : Math.floor(v + 0.5); // half away from zero
      dst[i] = r < lo ? lo : r > hi ? hi : r;
    }
  },
});

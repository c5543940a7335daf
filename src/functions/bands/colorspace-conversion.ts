/**
 * ColorspaceConversion — RGB <-> HSV [spec file §8 ColorspaceConversion; raster-functions.md
 * "ColorspaceConversion"; standard hexcone model, VJS `core/colorUtils.js`].
 *
 * `ConversionType` 0 (default [VPY]) RGB -> HSV, 1 HSV -> RGB. Input: three bands (R, G, B or
 * H, S, V in band order); a pixel NoData in the input is NoData in the output.
 *
 * RGB -> HSV, input U8 (spec: "three-band unsigned 8-bit"; other types are refused, with a hint to
 * Stretch or cast to U8 first). With max = max(r, g, b) and d = max - min(r, g, b):
 *     H = 0 if d = 0; else 60 x ((g - b)/d mod 6 | (b - r)/d + 2 | (r - g)/d + 4) for max = r | g | b
 *     S = 0 if max = 0 else d / max;   V = max / 255
 * Output encodings (the vendor page does not state one; spec recommendation [ours]):
 * - natural: F32, H in degrees [0, 360), S and V in [0, 1]; band names Hue, Saturation, Value;
 *   advertised statistics 0..360, 0..1, 0..1.
 * - `outputPixelType` U8: H x 255/360, S x 255, V x 255, rounded half up, computed exactly in
 *   integers (H x 255/360 = 85 num / 2d with H = 60 num / d; S x 255 = 510 d / 2 max; V x 255 =
 *   max), so exact halves (frequent: d = 5 gives H x 255/360 = 8.5 k) always round up. The plan
 *   receives the rule's outputPixelType (a plain cast after the function would clamp degrees at
 *   255 and round S and V to 0 or 1). Other types get the engine's cast of the natural values
 *   (degrees and fractions; integer types rounded).
 * - HSV -> RGB with an outputPixelType: colours 0..255 in any real type that holds them (the
 *   engine's cast); complex and sub-byte types are refused when the rule is built.
 *
 * HSV -> RGB: output U8, channels rounded half up (the sextant formula, as `ramps.ts` `hsvToRgb`;
 * values within 1e-9 of a half count as the half, see `byte`).
 * Which encoding the input holds is told by its pixel type: U8 input is the 0..255 encoding
 * above (H = h x 360/255, S = s/255, V = v/255); any other real type holds H in degrees and S, V
 * as fractions (F32 from RGB -> HSV, or an integer cast of it). ASSUMPTION (spec silent on
 * out-of-range HSV): H is taken modulo 360, S and V are clamped to [0, 1], and a NaN component
 * makes the pixel NoData. Band names Red, Green, Blue; statistics 0..255.
 *
 * Per pixel, no neighbourhood: tiles are independent.
 */
import { unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { checkColourType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema, type ArgValues, type Plan } from '../../graph/types.js';

export const ConversionType = { RgbToHsv: 0, HsvToRgb: 1 } as const;

const args = {
  ConversionType: {
    kind: 'enum',
    values: [0, 1],
    names: { RGBToHSV: 0, RGB_HSV: 0, HSVToRGB: 1, HSV_RGB: 1 },
    default: ConversionType.RgbToHsv,
    doc: '0 RGB to HSV (F32: H degrees [0, 360), S and V [0, 1]; U8 0..255 with outputPixelType U8), 1 HSV to RGB (U8).',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Three-band input (R, G, B as U8, or H, S, V); defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

export interface ColorspaceParams {
  readonly input: number;
  readonly conversion: 0 | 1;
  /** RGB -> HSV: write the 0..255 encoding (U8) instead of degrees and fractions (F32). */
  readonly bytes: boolean;
  /** HSV -> RGB: the input is the 0..255 encoding. */
  readonly byteInput: boolean;
}

const at = argPaths(args);

function planFor(a: ArgValues<typeof args>, inputs: readonly RasterInfo[], to: PixelType | undefined): Plan<ColorspaceParams> {
  const src = inputs[a.Raster]!;
  const toHsv = a.ConversionType === ConversionType.RgbToHsv;
  if (src.bandCount !== 3) {
    throw unsupportedInput(
      at('Raster'),
      `ColorspaceConversion needs a three-band raster (${toHsv ? 'R, G, B' : 'H, S, V'}), got ${src.bandCount} band(s)`,
    );
  }
  if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `ColorspaceConversion needs real pixel values, got ${src.pixelType}`);
  if (toHsv && src.pixelType !== 'U8') {
    throw unsupportedInput(
      at('Raster'),
      `RGB to HSV needs three unsigned 8-bit bands, got ${src.pixelType}: apply a Stretch (outputPixelType U8) or set outputPixelType U8 on the input first`,
    );
  }
  const bytes = toHsv && to === 'U8';
  const range = (max: number) => ({ min: 0, max });
  const info: RasterInfo = {
    width: src.width,
    height: src.height,
    bandCount: 3,
    pixelType: toHsv && !bytes ? 'F32' : 'U8',
    ...(toHsv && !bytes ? { noData: Number.NaN } : {}),
    extent: src.extent,
    cellSize: src.cellSize,
    ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    bandNames: toHsv ? ['Hue', 'Saturation', 'Value'] : ['Red', 'Green', 'Blue'],
    statistics: toHsv && !bytes ? [range(360), range(1), range(1)] : [range(255), range(255), range(255)],
  };
  return { info, halo: 0, params: { input: a.Raster, conversion: a.ConversionType, bytes, byteInput: !toHsv && src.pixelType === 'U8' } };
}

/**
 * Round half up and clamp to a byte. Values within TIE of a half count as the half: an exact tie
 * of 8-bit HSV input (H = h x 360/255) lands a few ulps either side of it in floating point.
 */
const TIE = 1e-9;
const byte = (v: number): number => {
  const r = Math.floor(v + 0.5 + TIE);
  return r < 0 ? 0 : r > 255 ? 255 : r;
};

export const colorspaceConversion = defineFunction<typeof args, ColorspaceParams>({
  name: 'ColorspaceConversion',
  summary: 'Convert RGB to HSV (F32 degrees and fractions, or 0..255 with outputPixelType U8) and back to U8 RGB.',
  variableName: 'Raster',
  family: 'bands',
  verification: 'reference: skimage.color.rgb2hsv / hsv2rgb (golden, L7 bands 3,2,1); hand: hexcone values',
  args,

  plan(a, inputs, to) {
    // HSV -> RGB gives colours: types that cannot hold 0..255 are refused, wider ones cast.
    if (a.ConversionType !== ConversionType.RgbToHsv) checkColourType('ColorspaceConversion', to);
    return planFor(a, inputs, to);
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const b0 = src.bands[0]!;
    const b1 = src.bands[1]!;
    const b2 = src.bands[2]!;
    const o0 = out.bands[0]!;
    const o1 = out.bands[1]!;
    const o2 = out.bands[2]!;
    const mask = out.mask;
    mask.set(src.mask);
    const n = mask.length;
    if (p.conversion === ConversionType.RgbToHsv) {
      for (let i = 0; i < n; i++) {
        if (mask[i] === 0) continue;
        const r = b0[i]!;
        const g = b1[i]!;
        const b = b2[i]!;
        const max = r > g ? (r > b ? r : b) : g > b ? g : b;
        const min = r < g ? (r < b ? r : b) : g < b ? g : b;
        const d = max - min;
        // Hue in sextants is num / d with an integer num in [0, 6d).
        let num = 0;
        if (d !== 0) {
          if (max === r) {
            num = g - b;
            if (num < 0) num += 6 * d;
          } else if (max === g) num = b - r + 2 * d;
          else num = r - g + 4 * d;
        }
        if (p.bytes) {
          // Exact integer rounding half up: H x 255/360 = 85 num / (2d), S x 255 = 510 d / (2 max).
          o0[i] = d === 0 ? 0 : Math.floor((85 * num + d) / (2 * d));
          o1[i] = max === 0 ? 0 : Math.floor((510 * d + max) / (2 * max));
          o2[i] = max;
        } else {
          o0[i] = d === 0 ? 0 : (60 * num) / d;
          o1[i] = max === 0 ? 0 : d / max;
          o2[i] = max / 255;
        }
      }
      return;
    }
    // HSV -> RGB
    const hUnit = p.byteInput ? 360 / 255 : 1;
    const svUnit = p.byteInput ? 1 / 255 : 1;
    for (let i = 0; i < n; i++) {
      if (mask[i] === 0) continue;
      let h = (b0[i]! * hUnit) % 360;
      let s = b1[i]! * svUnit;
      let v = b2[i]! * svUnit;
      if (h !== h || s !== s || v !== v) {
        mask[i] = 0;
        continue;
      }
      if (h < 0) h += 360;
      s = s < 0 ? 0 : s > 1 ? 1 : s;
      v = v < 0 ? 0 : v > 1 ? 1 : v;
      const c = v * s;
      const hp = h / 60;
      const x = c * (1 - Math.abs((hp % 2) - 1));
      const m = v - c;
      let r = 0;
      let g = 0;
      let b = 0;
      switch (Math.floor(hp)) {
        case 0:
          r = c;
          g = x;
          break;
        case 1:
          r = x;
          g = c;
          break;
        case 2:
          g = c;
          b = x;
          break;
        case 3:
          g = x;
          b = c;
          break;
        case 4:
          r = x;
          b = c;
          break;
        default:
          r = c;
          b = x;
          break; // 5
      }
      o0[i] = byte((r + m) * 255);
      o1[i] = byte((g + m) * 255);
      o2[i] = byte((b + m) * 255);
    }
  },
});

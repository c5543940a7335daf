/**
 * ContrastBrightness: adjust the contrast and brightness of 8-bit imagery through a 256-entry
 * lookup table, per band.
 *
 * Spec: raster-functions.md "ContrastBrightness" (VJS createContrastBrightnessLUT), seed §8
 * ("8-bit input only", offsets -100..100). With C = ContrastOffset, B = BrightnessOffset and
 * k = 200*v - 100*255 + 2*255*B for input value v:
 *   0 < C < 100:     out = k / (2*(100 - C)) + 128
 *   -100 < C <= 0:   out = k * (100 + C) / 20000 + 128
 *   C = 100:         out = k > 0 ? 255 : 0
 *   C = -100:        out = 128
 * then clamped to 0..255 and truncated (the vendor stores the table in a byte array). C = B = 0 is
 * the identity.
 * Defaults: 0 and 0 (the identity) [ours: the vendor's Python API defaults to 2 and 1, the server's
 * defaults are not published; an argument left out should not change pixels]. Offsets outside
 * -100..100 are rejected (seed §8 range).
 * Input: U8 only (any band count); anything else is UNSUPPORTED_INPUT (apply a Stretch first).
 * Output: U8, same bands; NoData passes through (the mask is copied); advertised statistics 0..255.
 * outputPixelType: the function is 8-bit by definition (a 256-entry byte table); its values go
 * through the engine's cast to any real type that holds 0..255 (values unchanged); complex, S8 and
 * sub-byte types are refused when the rule is built.
 */
import { unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  ContrastOffset: { kind: 'number', min: -100, max: 100, default: 0, doc: 'Contrast change, -100..100 (0 = unchanged).' },
  BrightnessOffset: { kind: 'number', min: -100, max: 100, default: 0, doc: 'Brightness change, -100..100 (0 = unchanged).' },
  Raster: { kind: 'raster', default: '$$', doc: 'Input 8-bit raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

const at = argPaths(args);

export interface ContrastBrightnessParams {
  readonly input: number;
  readonly lut: Uint8Array;
}

/** The vendor's 256-entry contrast/brightness table (spec formula). */
export function contrastBrightnessLut(contrast: number, brightness: number): Uint8Array {
  const c = Math.min(Math.max(contrast, -100), 100);
  const b = Math.min(Math.max(brightness, -100), 100);
  const lut = new Uint8Array(256);
  for (let v = 0; v < 256; v++) {
    const k = 200 * v - 100 * 255 + 2 * 255 * b;
    let out: number;
    if (c === 100) out = k > 0 ? 255 : 0;
    else if (c === -100) out = 128;
    else if (c > 0) out = k / (2 * (100 - c)) + 128;
    else out = (k * (100 + c)) / 20000 + 128;
    lut[v] = out > 255 ? 255 : out < 0 ? 0 : Math.trunc(out);
  }
  return lut;
}

export const contrastBrightness = defineFunction<typeof args, ContrastBrightnessParams>({
  name: 'ContrastBrightness',
  summary: 'Contrast and brightness of 8-bit imagery through the vendor lookup table.',
  variableName: 'Raster',
  family: 'radiometric',
  codes: '8-bit values',
  verification: "hand: lookup-table values derived from the vendor's formula (no independent tool implements this table)",
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (src.pixelType !== 'U8') {
      throw unsupportedInput(
        at('Raster'),
        `ContrastBrightness works on 8-bit unsigned (U8) input only, got ${src.pixelType}: apply a Stretch (or outputPixelType U8) first`,
      );
    }
    const { histograms: _h, colormap: _c, ...rest } = src;
    const info: RasterInfo = { ...rest, statistics: Array.from({ length: src.bandCount }, () => ({ min: 0, max: 255 })) };
    return { info, halo: 0, params: { input: a.Raster, lut: contrastBrightnessLut(a.ContrastOffset, a.BrightnessOffset) } };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    out.mask.set(src.mask);
    const lut = p.lut;
    for (let b = 0; b < out.bands.length; b++) {
      const s = src.bands[b]!;
      const d = out.bands[b]!;
      for (let i = 0; i < d.length; i++) d[i] = lut[s[i]!]!;
    }
  },
});

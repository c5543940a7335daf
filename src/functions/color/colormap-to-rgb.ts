/**
 * ColormapToRGB — turn a single-band raster with a colormap into three U8 bands (R, G, B)
 * [spec file §8 ColormapToRGB; raster-functions.md "ColormapToRGB"; VJS `pixelUtils`
 * `createColormapLUT`, `colorize`].
 *
 * The colormap is the input's `info.colormap`: a palette GeoTIFF's colour table (geotiff-source)
 * or the one a preceding Colormap function attached. Without one the plan fails (UNSUPPORTED_INPUT
 * at `Raster`), naming both ways to get one.
 *
 * Lookup: a pixel's value v picks the entry whose value equals v; float pixels are truncated
 * toward zero first [spec Colormap: "floating input is truncated toward zero [ours]"]. Negative
 * entry values work: the dense lookup table is offset by the smallest value [VJS
 * createColormapLUT]; colormaps spanning more than 2^20 values are searched instead.
 * - An entry's colour goes to the three bands.
 * - A fifth (alpha) column goes into the mask [VJS colorize, `maskIsAlpha`]. ASSUMPTION: the
 *   engine's mask is valid/NoData, so alpha 0 is NoData and any other alpha is valid (the
 *   PNG encoder, which can store alpha, keeps partial alpha).
 * - A value without an entry (NaN included) is NoData, or with `UnmappedAsRandomColor` a random
 *   colour [spec]. ASSUMPTION (spec: "a random RGB colour"): the colour is a hash of the
 *   truncated value, so one value always gets the same colour, in every tile and on every run
 *   (a random stream would differ between tiles). NaN stays NoData.
 * - NoData input pixels stay NoData (masked pixels hold 0, 0, 0).
 * Output: 3 bands U8, band names Red, Green, Blue, no NoData value (mask only); advertised
 * statistics: each channel's range over the colormap's entries (0..255 with random colours).
 *
 * `colormapLut` and `colorize` are shared with the PNG and JPEG encoders, which expand a
 * single-band raster with a colormap the same way (spec: applied automatically for JPG/PNG).
 * outputPixelType: the colours 0..255 through the engine's cast to any real type that holds them
 * (values unchanged); complex, S8 and sub-byte types are refused when the rule is built.
 */
import { unsupportedInput } from '../../core/errors.js';
import type { BandStatistics, Colormap } from '../../core/pixel-block.js';
import type { Plane } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { colormapIndex, denseColormapIndex } from './ramps.js';
import { rgbInfo } from './rgb.js';

/** A colormap ready for per-pixel lookup (structured-cloneable: kernel parameters). */
export interface ColormapLut {
  /** Sorted entry values (for the search when there is no dense index). */
  readonly values: Float64Array;
  /** r, g, b, a per entry (a = 255 without an alpha column). */
  readonly rgba: Uint8Array;
  /** Dense index: entry of value v at `index[v - min]`, -1 for none; undefined when the span is too wide. */
  readonly min: number;
  readonly index?: Int32Array;
}

export function colormapLut(cm: Colormap): ColormapLut {
  const n = cm.values.length;
  const rgba = new Uint8Array(4 * n);
  for (let i = 0; i < n; i++) {
    rgba[4 * i] = cm.rgb[3 * i]!;
    rgba[4 * i + 1] = cm.rgb[3 * i + 1]!;
    rgba[4 * i + 2] = cm.rgb[3 * i + 2]!;
    rgba[4 * i + 3] = cm.alpha === undefined ? 255 : cm.alpha[i]!;
  }
  const dense = denseColormapIndex(cm.values);
  return dense === undefined ? { values: cm.values, rgba, min: 0 } : { values: cm.values, rgba, min: dense.min, index: dense.index };
}

/** The colour of an unmapped value: a hash of the truncated value (see header), into r, g, b at `o`. */
function hashColor(k: number, r: Uint8Array, g: Uint8Array, b: Uint8Array, o: number): void {
  let h = Math.imul((k | 0) ^ ((k / 4294967296) | 0) ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  r[o] = h & 255;
  g[o] = (h >>> 8) & 255;
  b[o] = (h >>> 16) & 255;
}

/**
 * Colour `n` pixels of `plane` into `r`, `g`, `b` and `alpha` (0 where the pixel is masked or
 * unmapped, else the entry's alpha; 255 for random colours of unmapped values when
 * `randomUnmapped`). Masked and unmapped pixels get colour 0, 0, 0.
 */
export function colorize(
  plane: Plane,
  mask: Uint8Array,
  n: number,
  lut: ColormapLut,
  r: Uint8Array,
  g: Uint8Array,
  b: Uint8Array,
  alpha: Uint8Array,
  randomUnmapped: boolean,
): void {
  const { values, rgba, min, index } = lut;
  const span = index === undefined ? 0 : index.length;
  for (let i = 0; i < n; i++) {
    if (mask[i] === 0) {
      r[i] = g[i] = b[i] = alpha[i] = 0;
      continue;
    }
    const v = Math.trunc(plane[i]!);
    let e = -1;
    if (index !== undefined) {
      const k = v - min;
      if (k >= 0 && k < span) e = index[k]!;
    } else {
      e = colormapIndex(values, v);
    }
    if (e >= 0) {
      r[i] = rgba[4 * e]!;
      g[i] = rgba[4 * e + 1]!;
      b[i] = rgba[4 * e + 2]!;
      alpha[i] = rgba[4 * e + 3]!;
    } else if (randomUnmapped && v === v) {
      hashColor(v, r, g, b, i);
      alpha[i] = 255;
    } else {
      r[i] = g[i] = b[i] = alpha[i] = 0;
    }
  }
}

const args = {
  UnmappedAsRandomColor: {
    kind: 'boolean',
    default: false,
    doc: 'Give values without a colormap entry a random colour (the same for a value everywhere) instead of NoData.',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Single-band raster with a colormap; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

export interface ColormapToRgbParams {
  readonly input: number;
  readonly lut: ColormapLut;
  readonly random: boolean;
}

const at = argPaths(args);

/** Each channel's range over the entries (alpha-0 entries never show). */
function channelStatistics(cm: Colormap, random: boolean): BandStatistics[] {
  if (random) return [0, 1, 2].map(() => ({ min: 0, max: 255 }));
  return [0, 1, 2].map((c) => {
    let min = 255;
    let max = 0;
    for (let i = 0; i < cm.values.length; i++) {
      if (cm.alpha !== undefined && cm.alpha[i] === 0) continue;
      const v = cm.rgb[3 * i + c]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    return min <= max ? { min, max } : { min: 0, max: 0 };
  });
}

export const colormapToRgb = defineFunction<typeof args, ColormapToRgbParams>({
  name: 'ColormapToRGB',
  summary: 'Expand a single-band raster with a colormap to three U8 bands (R, G, B); alpha 0 and unmapped values become NoData.',
  variableName: 'Raster',
  family: 'color',
  codes: 'colour channels',
  verification:
    'reference: gdal_translate -expand rgb (palette GeoTIFF), gdaldem color-relief -exact_color_entry; hand: alpha, negative values, random colours',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (src.bandCount !== 1) {
      throw unsupportedInput(at('Raster'), `ColormapToRGB needs a single-band raster with a colormap, got ${src.bandCount} bands`);
    }
    if (src.colormap === undefined || src.colormap.values.length === 0) {
      throw unsupportedInput(
        at('Raster'),
        'ColormapToRGB needs a raster with a colormap: a palette GeoTIFF, or the output of a Colormap function (e.g. {"rasterFunction": "Colormap", "rasterFunctionArguments": {"ColormapName": "Random"}})',
      );
    }
    const info = rgbInfo(src, channelStatistics(src.colormap, a.UnmappedAsRandomColor));
    return { info, halo: 0, params: { input: a.Raster, lut: colormapLut(src.colormap), random: a.UnmappedAsRandomColor } };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const n = out.mask.length;
    const alpha = new Uint8Array(n);
    colorize(
      src.bands[0]!,
      src.mask,
      n,
      p.lut,
      out.bands[0] as Uint8Array,
      out.bands[1] as Uint8Array,
      out.bands[2] as Uint8Array,
      alpha,
      p.random,
    );
    for (let i = 0; i < n; i++) out.mask[i] = alpha[i] === 0 ? 0 : 1;
  },
});

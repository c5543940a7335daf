/**
 * ShadedRelief: the hillshade tinted with an elevation colour ("elevation-coded colour merged with
 * hillshade") [spec file §8 ShadedRelief; raster-functions.md "ShadedRelief"; VJS `tintHillshade`].
 *
 * 1. Hillshade A (0..255 bytes, truncated) exactly as the Hillshade function: this function plans
 *    `hillshade` with its own arguments (HillshadeType, Azimuth, Altitude, ZFactor, SlopeType,
 *    PSPower, PSZFactor, RemoveEdgeEffect, with `DEM` = our `Raster`) and runs its kernel on a
 *    scratch block per tile, so both share the family's gradient, edge and NoData rules
 *    (`gradient.ts`) and can never disagree. Same halo.
 * 2. A colour per cell from its elevation z:
 *    - `Colorramp` (a predefined name or a ramp object, `color/ramps.ts`): 256 colours (spec B.1);
 *      index k = floor((z - zmin) * 255.00001 / (zmax - zmin)) clamped to 0..255 [spec, VJS
 *      `tintHillshade`]. zmin/zmax: see RANGE below.
 *    - `Colormap` ([[value, r, g, b], ...]): the entry whose value equals trunc(z) [spec: "use the
 *      colour of the pixel's elevation value directly [ours]"; Colormap: floating input is
 *      truncated toward zero]. ASSUMPTION (spec silent for ShadedRelief): a cell whose value has
 *      no entry is NoData, as unmapped values are in Colormap [VJS colorize sets mask 0]; no
 *      interpolation between entries (gdaldem color-relief would interpolate).
 *    Precedence as in the vendor's Colormap function: an explicit Colormap, else Colorramp.
 * 3. Blend [spec step 3; VJS `tintHillshade`, certain for the client]: the colour's hue h (in
 *    sextants, 0..6) and saturation S (0..1) are kept and the hillshade replaces its brightness:
 *
 *        C = A S,  X = C (1 - |h mod 2 - 1|),  m = A - C
 *        floor(h) = 0..5 picks (C,X,0) (X,C,0) (0,C,X) (0,X,C) (X,0,C) (C,0,X); add m to each
 *
 *    i.e. HSV -> RGB with value A / 255, in 0..255 units. Grey colours (S = 0) give (A, A, A): the
 *    plain hillshade. Each channel is stored rounded to nearest, ties to even.
 *    ASSUMPTION (spec: "store as U8"): the vendor client stores into a Uint8ClampedArray, whose
 *    conversion rounds to nearest with ties to even; rasterflow does the same.
 *
 * RANGE (zmin, zmax for a ramp). A kernel sees only its tile and tiled must equal whole, so the
 * range must be fixed at plan time, never taken from the pixels of a request. The rule, honest and
 * tile-independent, is the vendor client's [spec step 2, VJS]: the input's band statistics (min,
 * max): GeoTIFF STATISTICS_MINIMUM/MAXIMUM metadata, or the statistics a preceding function
 * advertises; when it has none, the builder computes them before planning (`needsStatistics`;
 * graph/input-statistics.ts: approximately from a file, as `gdalinfo -approx_stats`) [ours: the
 * vendor's client falls back to 0..8000, which on a 236..1074 m DEM uses 13 % of the ramp]. The
 * fallback 0..8000 remains only for a DEM without any valid pixel.
 * ASSUMPTION (spec silent): zmax <= zmin (a constant raster's statistics) puts every cell at
 * index 0 (the vendor's formula would divide by zero).
 *
 * ASSUMPTION (spec silent on a default): with neither Colormap nor Colorramp, the predefined ramp
 * `Elevation #1` is used (the vendor's old SOAP page only says "use either Colormap or ColorRamp").
 * ASSUMPTION: alpha (a fifth colormap column, four-element ramp colours) is ignored: the output is
 * RGB and the vendor's tint reads only hue and saturation.
 *
 * Output: 3 bands U8 (R, G, B); NoData as Hillshade (mask only, no sentinel; masked pixels hold
 * 0, 0, 0), plus colormap cells without an entry. Advertised statistics 0..255 per band.
 *
 * Speed: everything about colours is settled in `plan`. The blend depends only on the colour
 * index and the hillshade byte, so for tables of up to LUT_MAX_COLORS colours (every ramp) it is
 * tabulated once (256 x 256 x 3 bytes for a ramp) and a cell costs an index, three loads and three
 * stores; larger colormaps blend per cell with the same function. Colormap values are found
 * through a dense index table (a binary search when they span more than 2^20).
 * outputPixelType: the colours 0..255 through the engine's cast to any real type that holds them
 * (values unchanged); complex, S8 and sub-byte types are refused when the rule is built.
 */
import { EngineError, invalidArgument } from '../../core/errors.js';
import { allocateBlock } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction } from '../../graph/types.js';
import {
  colormapIndex,
  denseColormapIndex,
  hueSaturation,
  parseColorRamp,
  parseColormap,
  predefinedRamp,
  rampColors,
} from '../color/ramps.js';
import { hillshade, type HillshadeParams } from './hillshade.js';
import { rgbInfo } from '../color/rgb.js';

/** The vendor client's elevation range when the DEM advertises no statistics [spec ShadedRelief step 2, VJS]. */
export const FALLBACK_ELEVATION_RANGE = { min: 0, max: 8000 } as const;

/** The ramp used when neither Colormap nor Colorramp is given (ASSUMPTION above). */
const DEFAULT_SHADED_RELIEF_RAMP = 'Elevation #1';

/** Index scale of the ramp lookup: k = floor((z - zmin) * 255.00001 / (zmax - zmin)) [spec, VJS]. */
const RAMP_SCALE = 255.00001;

/** Colour tables up to this size get the blend tabulated for every hillshade value (3 MB at most). */
export const LUT_MAX_COLORS = 4096;

// Hillshade's arguments, less its DEM raster (ShadedRelief names its raster `Raster`).
const { DEM: _dem, ...shadeArgs } = hillshade.args;

const args = {
  ...shadeArgs,
  Colormap: {
    kind: 'json',
    optional: true,
    doc: 'Colours by elevation value, [[value, red, green, blue], ...] (integer values; a cell takes the entry of trunc(z), none: NoData). Wins over Colorramp.',
  },
  Colorramp: {
    kind: 'json',
    optional: true,
    doc: 'Colour ramp stretched over the DEM statistics (else 0..8000): a predefined name (e.g. "Elevation #1") or an algorithmic/multipart ramp object; default Elevation #1.',
  },
  Raster: { kind: 'raster', default: '$$', aliases: ['DEM'], doc: 'Elevation raster; defaults to the service raster ($$).' },
} as const;

export interface ShadedReliefParams {
  readonly dem: number;
  readonly shade: HillshadeParams;
  /**
   * The colour table in the form the blend reads, one entry per colour: saturation S (0..1), the
   * hue's sector floor(h) (0..5) and its spread 1 - |h mod 2 - 1|, so X = A S spread.
   */
  readonly saturation: Float64Array;
  readonly sector: Uint8Array;
  readonly spread: Float64Array;
  /**
   * The blend tabulated, when the table has at most LUT_MAX_COLORS colours: entry k at hillshade
   * a is lut[3 (256 k + a) + 0..2]. Without it the kernel blends per cell (same function).
   */
  readonly lut: Uint8Array | undefined;
  /** Ramp mode: k = floor((z - zmin) * scale), clamped to the table. */
  readonly zmin: number;
  readonly scale: number;
  /**
   * Colormap mode (undefined in ramp mode): the entry of trunc(z) is `dense[trunc(z) - denseMin]`
   * (-1: none) when the values span at most DENSE_COLORMAP_SPAN, else found by binary search in
   * the sorted `values`.
   */
  readonly values: Float64Array | undefined;
  readonly dense: Int32Array | undefined;
  readonly denseMin: number;
}

const at = argPaths(args);

export const shadedRelief = defineFunction<typeof args, ShadedReliefParams>({
  name: 'ShadedRelief',
  summary: 'Hillshade tinted by elevation through a colour ramp or colormap (3-band RGB, 0..255).',
  variableName: 'Raster',
  family: 'terrain',
  codes: 'colour channels',
  verification: "reference: gdaldem hillshade + color-relief with the vendor's blend in NumPy (golden); hand-derived ramps and blends",
  args,

  needsStatistics(a, inputs) {
    if (a.Colormap !== undefined) return [];
    const s = inputs[a.Raster]?.statistics?.[0];
    return s !== undefined && Number.isFinite(s.min) && Number.isFinite(s.max) ? [] : [a.Raster];
  },

  plan(a, inputs) {
    const { Colormap, Colorramp, Raster, ...shading } = a;
    const dem = inputs[Raster];
    if (dem === undefined) throw invalidArgument(at('Raster'), 'ShadedRelief needs an elevation raster');
    if (dem.bandCount !== 1) throw invalidArgument(at('Raster'), `ShadedRelief needs a single-band DEM, got ${dem.bandCount} bands`);
    if (isComplex(dem.pixelType)) throw invalidArgument(at('Raster'), `ShadedRelief needs a real-valued DEM, got ${dem.pixelType}`);

    let shadePlan;
    try {
      shadePlan = hillshade.plan({ ...shading, DEM: Raster }, inputs);
    } catch (e) {
      // Hillshade names its raster DEM; ours is Raster.
      if (e instanceof EngineError && e.path === argPaths(hillshade.args)('DEM'))
        throw new EngineError(e.code, e.message, { path: at('Raster'), cause: e });
      throw e;
    }

    const warnings = [...(shadePlan.warnings ?? [])];
    let table: Uint8Array;
    let values: Float64Array | undefined;
    let dense: { readonly min: number; readonly index: Int32Array } | undefined;
    let zmin = 0;
    let scale = 0;
    if (Colormap !== undefined) {
      const cm = parseColormap(Colormap, at('Colormap'));
      table = cm.rgb;
      values = cm.values;
      dense = denseColormapIndex(values);
      if (Colorramp !== undefined) warnings.push('Colorramp is ignored: Colormap is given and takes precedence');
    } else {
      const ramp = Colorramp === undefined ? predefinedRamp(DEFAULT_SHADED_RELIEF_RAMP)! : parseColorRamp(Colorramp, at('Colorramp'));
      table = rampColors(ramp, 256).rgb;
      const s = dem.statistics?.[0];
      const range = s !== undefined && Number.isFinite(s.min) && Number.isFinite(s.max) ? s : FALLBACK_ELEVATION_RANGE;
      zmin = range.min;
      scale = range.max > range.min ? RAMP_SCALE / (range.max - range.min) : 0;
    }
    const { hue, saturation } = hueSaturation(table);
    const sector = Uint8Array.from(hue, (h) => Math.min(5, Math.floor(h)));
    const spread = hue.map((h) => 1 - Math.abs((h % 2) - 1));
    let lut: Uint8Array | undefined;
    if (saturation.length <= LUT_MAX_COLORS) {
      lut = new Uint8Array(3 * 256 * saturation.length);
      const view = new Uint8ClampedArray(lut.buffer);
      for (let k = 0, i = 0; k < saturation.length; k++) {
        for (let a = 0; a < 256; a++, i += 3) tint(a, saturation[k]!, spread[k]!, sector[k]!, view, i);
      }
    }

    const info = rgbInfo(dem);
    return {
      info,
      halo: shadePlan.halo,
      params: {
        dem: Raster,
        shade: shadePlan.params,
        saturation,
        sector,
        spread,
        lut,
        zmin,
        scale,
        values,
        dense: dense?.index,
        denseMin: dense?.min ?? 0,
      },
      ...(warnings.length > 0 ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    // The hillshade of this tile, on a scratch block (one per call; same input block and halo).
    const shade = allocateBlock(out.rect, 'U8', 1);
    hillshade.kernel(p.shade, inputs, shade);

    const dem = inputs[p.dem]!;
    const z = dem.bands[0]!;
    const A = shade.bands[0]!;
    const sMask = shade.mask;
    const [R, G, B] = out.bands as [Uint8Array, Uint8Array, Uint8Array];
    const mask = out.mask;
    const { saturation, sector, spread, lut, zmin, scale, values, dense, denseMin } = p;
    const denseLen = dense === undefined ? 0 : dense.length;
    const last = saturation.length - 1;
    const rgb = new Uint8ClampedArray(3); // the blend of one cell when there is no lookup table
    const { width, height } = out.rect;
    const bw = dem.rect.width;
    const dx = out.rect.x - dem.rect.x;
    const dy = out.rect.y - dem.rect.y;

    for (let y = 0; y < height; y++) {
      const zRow = (y + dy) * bw + dx;
      for (let x = 0, o = y * width; x < width; x++, o++) {
        if (sMask[o] === 0) {
          mask[o] = 0; // the hillshade's NoData (bands stay 0)
          continue;
        }
        const v = z[zRow + x]!;
        let k: number;
        if (values === undefined) {
          k = Math.floor((v - zmin) * scale);
          if (!(k > 0))
            k = 0; // also NaN
          else if (k > last) k = last;
        } else {
          const t = Math.trunc(v) - denseMin;
          k = dense !== undefined ? (t >= 0 && t < denseLen ? dense[t]! : -1) : colormapIndex(values, Math.trunc(v));
          if (k < 0) {
            mask[o] = 0; // no colormap entry for this value
            continue;
          }
        }
        if (lut !== undefined) {
          const i = 3 * ((k << 8) | A[o]!);
          R[o] = lut[i]!;
          G[o] = lut[i + 1]!;
          B[o] = lut[i + 2]!;
        } else {
          tint(A[o]!, saturation[k]!, spread[k]!, sector[k]!, rgb, 0);
          R[o] = rgb[0]!;
          G[o] = rgb[1]!;
          B[o] = rgb[2]!;
        }
      }
    }
  },
});

/**
 * The blend of spec step 3 for hillshade a (0..255) and a colour of saturation s, hue sector
 * `sector` and hue spread 1 - |h mod 2 - 1|, into dst[i..i+2]:
 *
 *     C = a s, X = C spread, m = a - C; sector 0..5: (C,X,0) (X,C,0) (0,C,X) (0,X,C) (X,0,C) (C,0,X), + m
 *
 * `dst` is a Uint8ClampedArray: its stores round to nearest with ties to even and clamp to 0..255,
 * exactly the vendor client's store (ASSUMPTION in the header).
 */
function tint(a: number, s: number, spread: number, sector: number, dst: Uint8ClampedArray, i: number): void {
  const c = a * s;
  const m = a - c;
  const hi = c + m;
  const mid = c * spread + m;
  switch (sector) {
    case 0:
      dst[i] = hi;
      dst[i + 1] = mid;
      dst[i + 2] = m;
      break;
    case 1:
      dst[i] = mid;
      dst[i + 1] = hi;
      dst[i + 2] = m;
      break;
    case 2:
      dst[i] = m;
      dst[i + 1] = hi;
      dst[i + 2] = mid;
      break;
    case 3:
      dst[i] = m;
      dst[i + 1] = mid;
      dst[i + 2] = hi;
      break;
    case 4:
      dst[i] = mid;
      dst[i + 1] = m;
      dst[i + 2] = hi;
      break;
    default:
      dst[i] = hi;
      dst[i + 1] = m;
      dst[i + 2] = mid;
      break; // 5
  }
}

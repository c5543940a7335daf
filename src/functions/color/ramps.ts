/**
 * The colour family's one colour-ramp module (ARCHITECTURE "Families share one helper each"):
 * Colormap, Stretch with a colour ramp and ShadedRelief turn ramps into colour tables only here,
 * so they cannot disagree.
 *
 * - Ramps: a predefined name (spec Appendix B.2), an `algorithmic` object (`fromColor`, `toColor`,
 *   `algorithm`) or a `multipart` object (`colorRamps`) [spec file §8 "Color ramp object";
 *   raster-functions.md "Colormap"]. `parseColorRamp` validates the JSON with paths.
 * - `rampColors(ramp, n)`: the ramp as n colours, exactly as spec Appendix B.1 describes
 *   [VJS `colorRampUtils.js`, `core/colorUtils.js`; certain for the client]:
 *     algorithmic: colour i (0 <= i < n - 1) sits at fraction i / (n - 1) between the ends,
 *       interpolated in HSV (short way round the hue circle; a grey end takes the other end's
 *       hue), CIELab (L, a, b linear) or LCh (L, C linear, hue the shorter signed arc); the last
 *       colour is exactly toColor. Channels round half up and clamp to 0..255; alpha is linear when
 *       the ramp has alpha (four-element colours), else 255.
 *     multipart: part weights (default equal) normalised to sum 1; with step D = 1 / (n - 1) and a
 *       carried offset o (0 at the start: how far past the part's start its first colour falls),
 *       part i makes ceil((w_i - o) / D) colours (the last part whatever is left to reach n - 1)
 *       at local fractions o / w_i + j D / w_i (B.1's distanceOffset and distanceInterval);
 *       finally the last part's toColor is appended as colour n - 1. So the colours are evenly
 *       spaced over the whole ramp whatever the part boundaries.
 *   Predefined names expand every part with CIELab and equal weights [B.2].
 * - Colour conversions (sRGB D65, B.1): RGB -> XYZ with the 4-digit matrices of the spec, XYZ ->
 *   Lab with white (95.047, 100, 108.883); RGB <-> HSV as in ColorspaceConversion (H 0..360,
 *   S and V 0..100).
 * - Colormaps `[[value, r, g, b(, a)], ...]` [spec file §8 Colormap]: `parseColormap` validates
 *   with JSON paths and builds a sorted lookup (`colormapIndex`).
 *
 * Colour tables are typed arrays: `rgb` holds 3 n bytes (r, g, b per colour), `alpha` n bytes.
 * Everything here is pure and runs at plan time; kernels only index the tables.
 */
import { EngineError, invalidArgument } from '../../core/errors.js';
import { closestSpelling } from '../../graph/args.js';
import type { Colormap } from '../../core/pixel-block.js';

// ---- Types

/** Interpolation spaces of an algorithmic ramp (wire names, spec file §8 and raster-functions.md Colormap). */
const RAMP_ALGORITHMS = ['geoHSVAlgorithm', 'geoCIELabAlgorithm', 'geoLabLChAlgorithm'] as const;
export type RampAlgorithm = (typeof RAMP_ALGORITHMS)[number];

export interface AlgorithmicRamp {
  readonly type: 'algorithmic';
  /** [r, g, b] or [r, g, b, a], 0..255. */
  readonly fromColor: readonly number[];
  readonly toColor: readonly number[];
  readonly algorithm: RampAlgorithm;
}

export interface MultipartRamp {
  readonly type: 'multipart';
  readonly colorRamps: readonly AlgorithmicRamp[];
  /** Part weights (normalised to sum 1); equal when absent. Wire ramps never carry them. */
  readonly weights?: readonly number[];
}

export type ColorRamp = AlgorithmicRamp | MultipartRamp;

/** n colours: rgb[3i..3i+2]; alpha[i] only when the ramp has alpha. */
export interface ColorTable {
  readonly size: number;
  readonly rgb: Uint8Array;
  readonly alpha?: Uint8Array;
}

// ---- Predefined ramps (spec Appendix B.2, names and colours as listed by the vendor client [VJS])

/** Parts as [r1, g1, b1, r2, g2, b2] (from -> to); one part = a single algorithmic ramp. */
type Part = readonly [number, number, number, number, number, number];

const PREDEFINED: readonly (readonly [string, readonly Part[]])[] = [
  [
    'Aspect',
    [
      [190, 190, 190, 255, 45, 8],
      [255, 45, 8, 255, 181, 61],
      [255, 181, 61, 255, 254, 52],
      [255, 254, 52, 0, 251, 50],
      [0, 251, 50, 255, 254, 52],
      [0, 253, 255, 0, 181, 255],
      [0, 181, 255, 26, 35, 253],
      [26, 35, 253, 255, 57, 251],
      [255, 57, 251, 255, 45, 8],
    ],
  ],
  ['Black to White', [[0, 0, 0, 255, 255, 255]]],
  ['Blue Bright', [[204, 204, 255, 0, 0, 224]]],
  ['Blue Light to Dark', [[211, 229, 232, 46, 100, 140]]],
  ['Blue-Green Bright', [[203, 245, 234, 48, 207, 146]]],
  ['Blue-Green Light to Dark', [[216, 242, 237, 21, 79, 74]]],
  ['Brown Light to Dark', [[240, 236, 170, 102, 72, 48]]],
  [
    'Brown to Blue Green Diverging, Bright',
    [
      [156, 85, 31, 255, 255, 191],
      [255, 255, 191, 33, 130, 145],
    ],
  ],
  [
    'Brown to Blue Green Diverging, Dark',
    [
      [110, 70, 45, 204, 204, 102],
      [204, 204, 102, 48, 100, 102],
    ],
  ],
  ['Coefficient Bias', [[214, 214, 255, 0, 57, 148]]],
  [
    'Cold to Hot Diverging',
    [
      [69, 117, 181, 255, 255, 191],
      [255, 255, 191, 214, 47, 39],
    ],
  ],
  [
    'Condition Number',
    [
      [0, 97, 0, 255, 255, 0],
      [255, 255, 0, 255, 34, 0],
    ],
  ],
  [
    'Cyan to Purple',
    [
      [0, 245, 245, 0, 0, 245],
      [0, 0, 245, 245, 0, 245],
    ],
  ],
  [
    'Cyan-Light to Blue-Dark',
    [
      [182, 237, 240, 31, 131, 224],
      [31, 131, 224, 9, 9, 145],
    ],
  ],
  ['Distance', [[255, 200, 0, 0, 0, 255]]],
  [
    'Elevation #1',
    [
      [175, 240, 233, 255, 255, 179],
      [255, 255, 179, 0, 128, 64],
      [0, 128, 64, 252, 186, 3],
      [252, 186, 3, 128, 0, 0],
      [120, 0, 0, 105, 48, 13],
      [105, 48, 13, 171, 171, 171],
      [171, 171, 171, 255, 252, 255],
    ],
  ],
  [
    'Elevation #2',
    [
      [118, 219, 211, 255, 255, 199],
      [255, 255, 199, 255, 255, 128],
      [255, 255, 128, 217, 194, 121],
      [217, 194, 121, 135, 96, 38],
      [135, 96, 38, 150, 150, 181],
      [150, 150, 181, 181, 150, 181],
      [181, 150, 181, 255, 252, 255],
    ],
  ],
  ['Errors', [[255, 235, 214, 196, 10, 10]]],
  ['Gray Light to Dark', [[219, 219, 219, 69, 69, 69]]],
  ['Green Bright', [[204, 255, 204, 14, 204, 14]]],
  ['Green Light to Dark', [[220, 245, 233, 34, 102, 51]]],
  [
    'Green to Blue',
    [
      [32, 204, 16, 0, 242, 242],
      [0, 242, 242, 2, 33, 227],
    ],
  ],
  ['Orange Bright', [[255, 235, 204, 240, 118, 5]]],
  ['Orange Light to Dark', [[250, 233, 212, 171, 65, 36]]],
  [
    'Partial Spectrum',
    [
      [242, 241, 162, 255, 255, 0],
      [255, 255, 0, 255, 0, 0],
      [252, 3, 69, 176, 7, 237],
      [176, 7, 237, 2, 29, 173],
    ],
  ],
  [
    'Partial Spectrum 1 Diverging',
    [
      [135, 38, 38, 240, 149, 12],
      [240, 149, 12, 255, 255, 191],
      [255, 255, 191, 74, 80, 181],
      [74, 80, 181, 39, 32, 122],
    ],
  ],
  [
    'Partial Spectrum 2 Diverging',
    [
      [115, 77, 42, 201, 137, 52],
      [201, 137, 52, 255, 255, 191],
      [255, 255, 191, 91, 63, 176],
      [91, 63, 176, 81, 13, 97],
    ],
  ],
  [
    'Pink to YellowGreen Diverging, Bright',
    [
      [158, 30, 113, 255, 255, 191],
      [255, 255, 191, 99, 110, 45],
    ],
  ],
  [
    'Pink to YellowGreen Diverging, Dark',
    [
      [97, 47, 73, 204, 204, 102],
      [204, 204, 102, 22, 59, 15],
    ],
  ],
  [
    'Precipitation',
    [
      [194, 82, 60, 237, 161, 19],
      [237, 161, 19, 255, 255, 0],
      [255, 255, 0, 0, 219, 0],
      [0, 219, 0, 32, 153, 143],
      [32, 153, 143, 11, 44, 122],
    ],
  ],
  [
    'Prediction',
    [
      [40, 146, 199, 250, 250, 100],
      [250, 250, 100, 232, 16, 20],
    ],
  ],
  ['Purple Bright', [[255, 204, 255, 199, 0, 199]]],
  [
    'Purple to Green Diverging, Bright',
    [
      [77, 32, 150, 255, 255, 191],
      [255, 255, 191, 20, 122, 11],
    ],
  ],
  [
    'Purple to Green Diverging, Dark',
    [
      [67, 14, 89, 204, 204, 102],
      [204, 204, 102, 24, 79, 15],
    ],
  ],
  ['Purple-Blue Bright', [[223, 184, 230, 112, 12, 242]]],
  ['Purple-Blue Light to Dark', [[229, 213, 242, 93, 44, 112]]],
  ['Purple-Red Bright', [[255, 204, 225, 199, 0, 99]]],
  ['Purple-Red Light to Dark', [[250, 215, 246, 143, 17, 57]]],
  ['Red Bright', [[255, 204, 204, 219, 0, 0]]],
  ['Red Light to Dark', [[255, 224, 224, 143, 10, 10]]],
  [
    'Red to Blue Diverging, Bright',
    [
      [196, 69, 57, 255, 255, 191],
      [255, 255, 191, 48, 95, 207],
    ],
  ],
  [
    'Red to Blue Diverging, Dark',
    [
      [107, 13, 13, 204, 204, 102],
      [204, 204, 102, 13, 53, 97],
    ],
  ],
  [
    'Red to Green',
    [
      [245, 0, 0, 245, 245, 0],
      [245, 245, 0, 0, 245, 0],
    ],
  ],
  [
    'Red to Green Diverging, Bright',
    [
      [186, 20, 20, 255, 255, 191],
      [255, 255, 191, 54, 145, 33],
    ],
  ],
  [
    'Red to Green Diverging, Dark',
    [
      [97, 21, 13, 204, 204, 102],
      [204, 204, 102, 16, 69, 16],
    ],
  ],
  [
    'Slope',
    [
      [56, 168, 0, 255, 255, 0],
      [255, 255, 0, 255, 0, 0],
    ],
  ],
  [
    'Spectrum-Full Bright',
    [
      [255, 0, 0, 255, 255, 0],
      [255, 255, 0, 0, 255, 255],
      [0, 255, 255, 0, 0, 255],
    ],
  ],
  [
    'Spectrum-Full Dark',
    [
      [153, 0, 0, 153, 153, 0],
      [153, 153, 0, 0, 153, 153],
      [0, 153, 153, 0, 0, 153],
    ],
  ],
  [
    'Spectrum-Full Light',
    [
      [255, 153, 153, 255, 255, 153],
      [255, 255, 153, 153, 255, 255],
      [153, 255, 255, 153, 153, 255],
    ],
  ],
  [
    'Surface',
    [
      [112, 153, 89, 242, 238, 162],
      [242, 238, 162, 242, 206, 133],
      [242, 206, 133, 194, 140, 124],
      [194, 140, 124, 255, 242, 255],
    ],
  ],
  [
    'Temperature',
    [
      [255, 252, 255, 255, 0, 255],
      [255, 0, 255, 0, 0, 255],
      [0, 0, 255, 0, 255, 255],
      [0, 255, 255, 0, 255, 0],
      [0, 255, 0, 255, 255, 0],
      [255, 255, 0, 255, 128, 0],
      [255, 128, 0, 128, 0, 0],
    ],
  ],
  ['White to Black', [[255, 255, 255, 0, 0, 0]]],
  [
    'Yellow to Dark Red',
    [
      [255, 255, 128, 242, 167, 46],
      [242, 167, 46, 107, 0, 0],
    ],
  ],
  [
    'Yellow to Green to Dark Blue',
    [
      [255, 255, 128, 56, 224, 9],
      [56, 224, 9, 26, 147, 171],
      [26, 147, 171, 12, 16, 120],
    ],
  ],
  ['Yellow to Red', [[245, 245, 0, 255, 0, 0]]],
  ['Yellow-Green Bright', [[236, 252, 204, 157, 204, 16]]],
  ['Yellow-Green Light to Dark', [[215, 240, 175, 96, 107, 45]]],
];

const partRamp = (p: Part): AlgorithmicRamp => ({
  type: 'algorithmic',
  fromColor: [p[0], p[1], p[2]],
  toColor: [p[3], p[4], p[5]],
  algorithm: 'geoCIELabAlgorithm', // B.2: a ramp referenced by name expands with CIELab
});

/** Every predefined ramp (spec B.2), by its listed name: one part = algorithmic, more = multipart (equal weights). */
export const PREDEFINED_RAMPS: ReadonlyMap<string, ColorRamp> = new Map(
  PREDEFINED.map(([name, parts]): [string, ColorRamp] => [
    name,
    parts.length === 1 ? partRamp(parts[0]!) : { type: 'multipart', colorRamps: parts.map(partRamp) },
  ]),
);

/** The listed names, in the order of spec B.2. */
export const PREDEFINED_RAMP_NAMES: readonly string[] = PREDEFINED.map(([name]) => name);

const BY_KEY = new Map(PREDEFINED_RAMP_NAMES.map((n) => [n.toLowerCase(), n]));

/**
 * A predefined ramp by name, matched case-insensitively (`Black To White` = `Black to White`,
 * B.2 note). ASSUMPTION: surrounding blanks are ignored. undefined when unknown.
 */
export function predefinedRamp(name: string): ColorRamp | undefined {
  const key = BY_KEY.get(name.trim().toLowerCase());
  return key === undefined ? undefined : PREDEFINED_RAMPS.get(key);
}

// ---- Colour conversions (spec B.1, sRGB D65)

const M_RGB_XYZ = [0.4124, 0.3576, 0.1805, 0.2126, 0.7152, 0.0722, 0.0193, 0.1192, 0.9505] as const;
const M_XYZ_RGB = [3.2406, -1.5372, -0.4986, -0.9689, 1.8758, 0.0415, 0.0557, -0.204, 1.057] as const;
const WHITE = [95.047, 100, 108.883] as const;
const D = 6 / 29;

const linearise = (c: number): number => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
const gamma = (c: number): number => (c <= 0.0031308 ? 12.92 * c : 1.055 * c ** (1 / 2.4) - 0.055);
const f = (t: number): number => (t > D * D * D ? Math.cbrt(t) : t / (3 * D * D) + 4 / 29);
const fInverse = (u: number): number => (u > D ? u * u * u : 3 * D * D * (u - 4 / 29));
/** Round half up, clamp to 0..255 (B.1 "rounding half up and clamping"). */
const byte = (v: number): number => {
  const r = Math.floor(v + 0.5);
  return r < 0 ? 0 : r > 255 ? 255 : r;
};

/** sRGB bytes -> CIELab (L 0..100) into `out` [L, a, b]. */
export function rgbToLab(r: number, g: number, b: number, out: Float64Array | number[] = new Float64Array(3)): Float64Array | number[] {
  const R = linearise(r / 255);
  const G = linearise(g / 255);
  const B = linearise(b / 255);
  const X = (M_RGB_XYZ[0] * R + M_RGB_XYZ[1] * G + M_RGB_XYZ[2] * B) * 100;
  const Y = (M_RGB_XYZ[3] * R + M_RGB_XYZ[4] * G + M_RGB_XYZ[5] * B) * 100;
  const Z = (M_RGB_XYZ[6] * R + M_RGB_XYZ[7] * G + M_RGB_XYZ[8] * B) * 100;
  const fx = f(X / WHITE[0]);
  const fy = f(Y / WHITE[1]);
  const fz = f(Z / WHITE[2]);
  out[0] = 116 * fy - 16;
  out[1] = 500 * (fx - fy);
  out[2] = 200 * (fy - fz);
  return out;
}

/** CIELab -> sRGB bytes (gamma, clamp 0..1, x 255, round half up) into `out` at `o`. */
export function labToRgb(L: number, a: number, b: number, out: Uint8Array | number[], o = 0): void {
  const fy = (L + 16) / 116;
  const X = (WHITE[0] * fInverse(fy + a / 500)) / 100;
  const Y = (WHITE[1] * fInverse(fy)) / 100;
  const Z = (WHITE[2] * fInverse(fy - b / 200)) / 100;
  for (let k = 0; k < 3; k++) {
    const c = gamma(M_XYZ_RGB[3 * k]! * X + M_XYZ_RGB[3 * k + 1]! * Y + M_XYZ_RGB[3 * k + 2]! * Z);
    out[o + k] = byte((c < 0 ? 0 : c > 1 ? 1 : c) * 255);
  }
}

/**
 * sRGB bytes -> HSV as in ColorspaceConversion (spec): H 0..360 (0 for greys), S 0..100,
 * V = max * 100 / 255, into `out` [H, S, V].
 */
export function rgbToHsv(r: number, g: number, b: number, out: Float64Array | number[] = new Float64Array(3)): Float64Array | number[] {
  const max = Math.max(r, g, b);
  const d = max - Math.min(r, g, b);
  out[0] = d === 0 ? 0 : 60 * hueSextant(r, g, b, max, d);
  out[1] = max === 0 ? 0 : (100 * d) / max;
  out[2] = (max * 100) / 255;
  return out;
}

/** Hue in sextants [0, 6) of a non-grey colour (ColorspaceConversion: max = r, g, b in that order). */
function hueSextant(r: number, g: number, b: number, max: number, d: number): number {
  if (max === r) {
    const h = (g - b) / d;
    return h < 0 ? h + 6 : h; // (g - b) / d mod 6
  }
  return max === g ? (b - r) / d + 2 : (r - g) / d + 4;
}

/** HSV (H degrees, S and V 0..100) -> sRGB bytes (standard sextant formula, channels rounded half up) into `out` at `o`. */
export function hsvToRgb(H: number, S: number, V: number, out: Uint8Array | number[], o = 0): void {
  const v = V / 100;
  const c = v * (S / 100);
  const h = H / 60;
  const x = c * (1 - Math.abs((h % 2) - 1));
  const m = v - c;
  let r = 0;
  let g = 0;
  let b = 0;
  switch (Math.floor(h)) {
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
      break; // 5 (and 6 = 360 degrees)
  }
  out[o] = byte((r + m) * 255);
  out[o + 1] = byte((g + m) * 255);
  out[o + 2] = byte((b + m) * 255);
}

/**
 * Hue (sextants, [0, 6)) and saturation (0..1) of every colour of a table, the form the
 * ShadedRelief tint reads [VJS `tintHillshade`: colour table entries as (h, s)].
 */
export function hueSaturation(rgb: Uint8Array): { readonly hue: Float64Array; readonly saturation: Float64Array } {
  const n = rgb.length / 3;
  const hue = new Float64Array(n);
  const saturation = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = rgb[3 * i]!;
    const g = rgb[3 * i + 1]!;
    const b = rgb[3 * i + 2]!;
    const max = Math.max(r, g, b);
    const d = max - Math.min(r, g, b);
    hue[i] = d === 0 ? 0 : hueSextant(r, g, b, max, d);
    saturation[i] = max === 0 ? 0 : d / max;
  }
  return { hue, saturation };
}

// ---- Ramps to colours (spec B.1)

const hasAlpha = (r: AlgorithmicRamp): boolean => r.fromColor.length > 3 || r.toColor.length > 3;
const alphaOf = (c: readonly number[]): number => (c.length > 3 ? c[3]! : 255);

/**
 * Write `count` colours of one algorithmic ramp at local fractions `offset + j * interval`
 * (j = 0..count-1) into `rgb`/`alpha` from colour index `start`.
 */
function algorithmicColors(
  ramp: AlgorithmicRamp,
  count: number,
  interval: number,
  offset: number,
  rgb: Uint8Array,
  alpha: Uint8Array | undefined,
  start: number,
): void {
  const [r1, g1, b1] = ramp.fromColor as [number, number, number];
  const [r2, g2, b2] = ramp.toColor as [number, number, number];
  const a1 = alphaOf(ramp.fromColor);
  const a2 = alphaOf(ramp.toColor);
  const p = new Float64Array(3);
  const q = new Float64Array(3);
  if (ramp.algorithm === 'geoHSVAlgorithm') {
    rgbToHsv(r1, g1, b1, p);
    rgbToHsv(r2, g2, b2, q);
    // B.1: exactly one grey end (S = 0) takes the other end's hue.
    if (p[1] === 0 && q[1] !== 0) p[0] = q[0]!;
    else if (q[1] === 0 && p[1] !== 0) q[0] = p[0]!;
    // B.1: the hue goes the short way round: |dh| < 180 as is, else 360 - |dh|, positive when H1 > H2.
    const dh = q[0]! - p[0]!;
    const hueSpan = Math.abs(dh) < 180 ? dh : (360 - Math.abs(dh)) * (p[0]! > q[0]! ? 1 : -1);
    for (let j = 0; j < count; j++) {
      const t = offset + j * interval;
      let h = (p[0]! + hueSpan * t) % 360;
      if (h < 0) h += 360; // hue kept in [0, 360)
      hsvToRgb(h, p[1]! + (q[1]! - p[1]!) * t, p[2]! + (q[2]! - p[2]!) * t, rgb, 3 * (start + j));
    }
  } else {
    rgbToLab(r1, g1, b1, p);
    rgbToLab(r2, g2, b2, q);
    const lch = ramp.algorithm === 'geoLabLChAlgorithm';
    // LCh: chroma and hue (radians) of both ends; the hue takes the shorter signed arc (B.1 step 4).
    // ASSUMPTION (spec silent): no grey-end hue rule for LCh (only HSV has one in B.1).
    const c1 = Math.hypot(p[1]!, p[2]!);
    const c2 = Math.hypot(q[1]!, q[2]!);
    const h1 = Math.atan2(p[2]!, p[1]!);
    let dh = Math.atan2(q[2]!, q[1]!) - h1;
    if (dh > Math.PI) dh -= 2 * Math.PI;
    else if (dh < -Math.PI) dh += 2 * Math.PI;
    for (let j = 0; j < count; j++) {
      const t = offset + j * interval;
      const L = p[0]! + (q[0]! - p[0]!) * t;
      if (lch) {
        const c = c1 + (c2 - c1) * t;
        const h = h1 + dh * t;
        labToRgb(L, c * Math.cos(h), c * Math.sin(h), rgb, 3 * (start + j));
      } else {
        labToRgb(L, p[1]! + (q[1]! - p[1]!) * t, p[2]! + (q[2]! - p[2]!) * t, rgb, 3 * (start + j));
      }
    }
  }
  if (alpha !== undefined) {
    for (let j = 0; j < count; j++) alpha[start + j] = byte(a1 + (a2 - a1) * (offset + j * interval));
  }
}

/** Put colour `i` = the ramp end `c` exactly (B.1: the last colour is exactly toColor). */
function putColor(c: readonly number[], rgb: Uint8Array, alpha: Uint8Array | undefined, i: number): void {
  rgb[3 * i] = c[0]!;
  rgb[3 * i + 1] = c[1]!;
  rgb[3 * i + 2] = c[2]!;
  if (alpha !== undefined) alpha[i] = alphaOf(c);
}

/** The ramp as `n` colours (n >= 2; 256 for a colormap), spec B.1. */
export function rampColors(ramp: ColorRamp, n = 256): ColorTable {
  if (!Number.isInteger(n) || n < 2) throw new EngineError('INTERNAL', `rampColors: n must be an integer >= 2, got ${n}`);
  const parts = ramp.type === 'algorithmic' ? [ramp] : ramp.colorRamps;
  if (parts.length === 0) throw new EngineError('INTERNAL', 'rampColors: a multipart ramp without parts');
  const rgb = new Uint8Array(3 * n);
  const alpha = parts.some(hasAlpha) ? new Uint8Array(n) : undefined;
  const step = 1 / (n - 1);
  if (ramp.type === 'algorithmic') {
    algorithmicColors(ramp, n - 1, step, 0, rgb, alpha, 0);
  } else {
    const raw = ramp.weights ?? parts.map(() => 1);
    if (raw.length !== parts.length || raw.some((w) => !(w > 0))) {
      throw new EngineError('INTERNAL', 'rampColors: a multipart ramp needs one positive weight per part');
    }
    const total = raw.reduce((s, w) => s + w, 0);
    let made = 0; // colours written so far
    let start = 0; // where the current part starts on the whole ramp, 0..1
    for (let i = 0; i < parts.length; i++) {
      const w = raw[i]! / total;
      // The carried offset o: where this part's first colour falls past the part's start. Taken as
      // made * step - start rather than summed part by part: the same number with less rounding
      // error (it reproduces the spec's NDVI2 check value [100] = (149,147,144), a half-up tie).
      const offset = made * step - start;
      const last = i === parts.length - 1;
      let count = last ? n - 1 - made : Math.ceil((w - offset) / step);
      count = Math.max(0, Math.min(count, n - 1 - made));
      algorithmicColors(parts[i]!, count, step / w, offset / w, rgb, alpha, made);
      made += count;
      start += w;
    }
  }
  putColor(parts[parts.length - 1]!.toColor, rgb, alpha, n - 1);
  return alpha === undefined ? { size: n, rgb } : { size: n, rgb, alpha };
}

// ---- Parsing ramps and colormaps from rule JSON (errors carry the JSON path)

/**
 * A member of a JSON object by name. ASSUMPTION (spec silent on ramp objects): matched
 * case-insensitively, like argument names (spec §1.4), the exact spelling first.
 */
function member(o: Record<string, unknown>, name: string): { key: string; value: unknown } | undefined {
  if (name in o) return { key: name, value: o[name] };
  const want = name.toLowerCase();
  for (const [k, v] of Object.entries(o)) if (k.toLowerCase() === want) return { key: k, value: v };
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown): string => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
};

/** A JSON number or numeric string (spec §1.4 accepts numeric strings), else undefined. */
function num(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v.trim());
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

/** A colour `[r, g, b]` or `[r, g, b, a]` of integers 0..255. */
function parseColor(v: unknown, path: string): number[] {
  if (!Array.isArray(v) || v.length < 3 || v.length > 4) {
    throw invalidArgument(path, `a colour must be [red, green, blue] or [red, green, blue, alpha], got ${show(v)}`);
  }
  return v.map((c, i) => component(c, `${path}[${i}]`));
}

function component(c: unknown, path: string): number {
  const n = num(c);
  if (n === undefined || !Number.isInteger(n) || n < 0 || n > 255) {
    throw invalidArgument(path, `a colour component must be an integer 0..255, got ${show(c)}`);
  }
  return n;
}

/**
 * ASSUMPTION (spec: "default HSV when absent in the vendor's template reader, CIELab in the ramp
 * converter"): a rule is read like a template, so an algorithmic ramp without `algorithm` is HSV.
 */
const DEFAULT_RAMP_ALGORITHM: RampAlgorithm = 'geoHSVAlgorithm';

function parseAlgorithmic(o: Record<string, unknown>, path: string): AlgorithmicRamp {
  const type = member(o, 'type');
  if (type !== undefined && (typeof type.value !== 'string' || type.value.toLowerCase() !== 'algorithmic')) {
    throw invalidArgument(`${path}.${type.key}`, `a part of a multipart ramp must be "algorithmic", got ${show(type.value)}`);
  }
  const from = member(o, 'fromColor');
  const to = member(o, 'toColor');
  if (from === undefined) throw invalidArgument(`${path}.fromColor`, 'an algorithmic ramp needs fromColor');
  if (to === undefined) throw invalidArgument(`${path}.toColor`, 'an algorithmic ramp needs toColor');
  const fromColor = parseColor(from.value, `${path}.${from.key}`);
  const toColor = parseColor(to.value, `${path}.${to.key}`);
  const alg = member(o, 'algorithm');
  let algorithm = DEFAULT_RAMP_ALGORITHM;
  if (alg !== undefined && alg.value !== null) {
    const hit =
      typeof alg.value === 'string'
        ? RAMP_ALGORITHMS.find((a) => a.toLowerCase() === (alg.value as string).trim().toLowerCase())
        : undefined;
    if (hit === undefined) {
      throw invalidArgument(`${path}.${alg.key}`, `algorithm must be one of ${RAMP_ALGORITHMS.join(', ')}, got ${show(alg.value)}`);
    }
    algorithm = hit;
  }
  return { type: 'algorithmic', fromColor, toColor, algorithm };
}

/**
 * A colour ramp from rule JSON: a predefined name (B.2, case-insensitive) or a ramp object
 * `{ type: "algorithmic", fromColor, toColor, algorithm }` / `{ type: "multipart", colorRamps: [...] }`
 * (member names matched case-insensitively). Throws INVALID_ARGUMENT with the JSON path.
 */
export function parseColorRamp(value: unknown, path: string): ColorRamp {
  if (typeof value === 'string') {
    const ramp = predefinedRamp(value);
    if (ramp === undefined) {
      const near = closestSpelling(value.trim(), PREDEFINED_RAMP_NAMES);
      throw invalidArgument(
        path,
        `unknown colour ramp ${show(value)}${near ? ` (did you mean ${near}?)` : ''}; names: ${PREDEFINED_RAMP_NAMES.join(', ')}`,
      );
    }
    return ramp;
  }
  if (!isObject(value)) throw invalidArgument(path, `expected a colour ramp name or a ramp object, got ${show(value)}`);
  const type = member(value, 'type');
  const kind = typeof type?.value === 'string' ? type.value.toLowerCase() : undefined;
  if (kind === 'multipart') {
    const parts = member(value, 'colorRamps');
    const pPath = `${path}.${parts?.key ?? 'colorRamps'}`;
    if (parts === undefined || !Array.isArray(parts.value) || parts.value.length === 0) {
      throw invalidArgument(pPath, 'a multipart ramp needs a non-empty colorRamps array');
    }
    const colorRamps = parts.value.map((p, i) => {
      if (!isObject(p)) throw invalidArgument(`${pPath}[${i}]`, `expected an algorithmic ramp object, got ${show(p)}`);
      return parseAlgorithmic(p, `${pPath}[${i}]`);
    });
    return { type: 'multipart', colorRamps };
  }
  if (kind === 'algorithmic') return parseAlgorithmic(value, path);
  throw invalidArgument(
    `${path}.${type?.key ?? 'type'}`,
    `a colour ramp type must be "algorithmic" or "multipart", got ${show(type?.value)}`,
  );
}

export type { Colormap } from '../../core/pixel-block.js';

/**
 * `[[value, r, g, b], ...]` (optionally `[value, r, g, b, a]`) from rule JSON [spec file §8 Colormap:
 * "array of [value, red, green, blue] ints"]. Values must be integers (they are looked up with
 * truncated pixel values); colour components integers 0..255. Numeric strings are accepted (§1.4).
 * ASSUMPTION (spec silent): a value listed twice keeps its last colour, as filling a lookup table
 * in order does. Throws INVALID_ARGUMENT with the JSON path of the first bad element.
 */
export function parseColormap(value: unknown, path: string): Colormap {
  if (!Array.isArray(value) || value.length === 0) {
    throw invalidArgument(path, `expected a non-empty array of [value, red, green, blue] entries, got ${show(value)}`);
  }
  const byValue = new Map<number, number[]>();
  let anyAlpha = false;
  value.forEach((entry, i) => {
    const p = `${path}[${i}]`;
    if (!Array.isArray(entry) || entry.length < 4 || entry.length > 5) {
      throw invalidArgument(
        p,
        `a colormap entry must be [value, red, green, blue] or [value, red, green, blue, alpha], got ${show(entry)}`,
      );
    }
    const v = num(entry[0]);
    if (v === undefined || !Number.isInteger(v))
      throw invalidArgument(`${p}[0]`, `a colormap value must be an integer, got ${show(entry[0])}`);
    const color = entry.slice(1).map((c, k) => component(c, `${p}[${k + 1}]`));
    if (entry.length === 5) anyAlpha = true;
    byValue.delete(v);
    byValue.set(v, color);
  });
  const values = Float64Array.from(byValue.keys()).sort();
  const rgb = new Uint8Array(3 * values.length);
  const alpha = anyAlpha ? new Uint8Array(values.length) : undefined;
  values.forEach((v, i) => {
    const c = byValue.get(v)!;
    rgb.set(c.slice(0, 3), 3 * i);
    if (alpha !== undefined) alpha[i] = c.length > 3 ? c[3]! : 255;
  });
  return alpha === undefined ? { values, rgb } : { values, rgb, alpha };
}

/** Largest value span (max - min + 1) `denseColormapIndex` tabulates (4 MB of Int32). */
export const DENSE_COLORMAP_SPAN = 1 << 20;

/**
 * A direct lookup table for integer colormap values: `index[v - min]` is the entry of value v or
 * -1. undefined when the values span more than `maxSpan` (use `colormapIndex` then).
 */
export function denseColormapIndex(
  values: Float64Array,
  maxSpan = DENSE_COLORMAP_SPAN,
): { readonly min: number; readonly index: Int32Array } | undefined {
  const n = values.length;
  if (n === 0) return undefined;
  const min = values[0]!;
  const span = values[n - 1]! - min + 1;
  if (!(span <= maxSpan)) return undefined;
  const index = new Int32Array(span).fill(-1);
  for (let i = 0; i < n; i++) index[values[i]! - min] = i;
  return { min, index };
}

/** Index of `v` in a sorted `values` array (binary search), or -1. No allocation. */
export function colormapIndex(values: Float64Array, v: number): number {
  if (v !== v) return -1; // NaN
  let lo = 0;
  let hi = values.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const m = values[mid]!;
    if (m < v) lo = mid + 1;
    else if (m > v) hi = mid - 1;
    else return mid;
  }
  return -1;
}

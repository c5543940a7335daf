/**
 * Colormap — attach a colour table (palette) to a single-band raster [spec file §8 Colormap;
 * raster-functions.md "Colormap", appendices A and B]. The pixels pass through; the output's
 * `info.colormap` carries the table, which ColormapToRGB and the PNG/JPEG encoders turn into RGB.
 *
 * Which table, in the vendor client's precedence [VJS, certain]: an explicit `Colormap`
 * ([[value, r, g, b(, a)], ...]), else `Colorramp` (a ramp object, or a predefined name), else
 * `ColorrampName` (a predefined ramp, appendix B.2, expanded with CIELab), else `ColormapName`.
 * Lower-precedence arguments given alongside are ignored with a warning. None of them: an error.
 * Ramps become 256 colours for indexes 0..255 (appendix B.1, `ramps.ts`).
 *
 * Named colormaps (index = pixel value 0..255) [VJS `colormaps.js`; spec check values in tests]:
 * - `Gray`: HSV ramp black -> white, entry i = (i, i, i).
 * - `Elevation`, `NDVI2`, `Hillshade`: multipart HSV ramps through the spec's stops, part weights
 *   the stop gaps (Elevation, NDVI2) or explicit (Hillshade: 0.268, 0.238, 0.495); NDVI2 has 201
 *   colours and entries 201..255 repeat its last colour (6, 27, 7).
 * - `NDVI`, `NDVI3`: the fixed tables of appendix A.
 * - `Random`: 256 colours, each channel round(255 random()). ASSUMPTION (spec: "not reproducible,
 *   seed it [ours]"): a fixed seed (mulberry32, seed RANDOM_COLORMAP_SEED), so the same rule gives
 *   the same colours on every run, tile and worker.
 * Names match case-insensitively (`Grey` = `Gray`).
 *
 * Input: one band (the vendor client fails otherwise [VJS]); complex rasters are refused.
 * Output pixels and type:
 * - explicit `Colormap`: pixels, type, NoData and statistics unchanged. Float pixels are looked
 *   up truncated toward zero later (ColormapToRGB, encoders) [spec: "floating input is truncated
 *   toward zero [ours]"].
 * - a ramp or a named colormap: natural type U8 [spec: "natural type U8 when produced from a ramp
 *   or name"]. U8 input passes through unchanged (statistics kept). ASSUMPTION (spec silent on
 *   other input types): other types become U8 by the same lookup rule, truncated toward zero;
 *   values outside 0..255 (and NaN) have no entry in a 256-colour table and become NoData here,
 *   as they would when coloured [VJS colorize: unmapped -> mask 0]. The only visible difference
 *   is that ColormapToRGB's UnmappedAsRandomColor cannot colour them.
 * NoData: the input mask passes through (plus the values above).
 * outputPixelType: the pixels are colormap indexes (or passed through); the engine's cast converts
 * them and the colormap stays attached (a type narrower than the indexes saturates them).
 */
import { EngineError, invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { Colormap, RasterInfo } from '../../core/pixel-block.js';
import { isComplex, representable, type PixelType } from '../../core/pixel-type.js';
import { argPaths, closestSpelling } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { parseColorRamp, parseColormap, rampColors, type AlgorithmicRamp, type ColorRamp, type ColorTable } from './ramps.js';

// ---- Named colormaps

/** The wire names of `ColormapName` [spec file §8 Colormap]. */
export const COLORMAP_NAMES = ['Random', 'NDVI', 'NDVI2', 'NDVI3', 'Elevation', 'Gray', 'Hillshade'] as const;
export type ColormapName = (typeof COLORMAP_NAMES)[number];

/** Seed of the `Random` colormap (ASSUMPTION in the header). */
export const RANDOM_COLORMAP_SEED = 0x5eed;

// Appendix A tables, `index:R,G,B` or `first-last:R,G,B` runs [VJS colormaps.js].
const NDVI_RUNS = [
  '0-3:36,0,255 4:112,75,3 5:113,76,3 6:114,77,3 7:115,77,3 8:116,78,3 9:117,79,3 10:118,79,3',
  '11:119,80,3 12:121,81,4 13:122,82,4 14:123,82,4 15:124,83,4 16:125,84,4 17:126,84,4 18:127,85,4',
  '19:128,86,4 20:129,86,4 21:130,87,4 22:131,88,4 23:132,89,4 24:133,89,4 25:134,90,4 26:135,91,4',
  '27:136,91,4 28:137,92,4 29:138,93,4 30:139,94,4 31:140,94,4 32:142,95,5 33:143,96,5 34:144,96,5',
  '35:145,97,5 36:146,98,5 37:147,99,5 38:148,99,5 39:149,100,5 40:150,101,5 41:151,101,5 42:152,102,5',
  '43:153,103,5 44:154,104,5 45:155,104,5 46:156,105,5 47:157,106,5 48:158,106,5 49:159,107,5',
  '50:160,108,5 51:161,108,5 52:162,109,5 53:164,110,6 54:165,111,6 55:166,111,6 56:167,112,6',
  '57:168,113,6 58:169,113,6 59:170,114,6 60:171,115,6 61:172,116,6 62:173,116,6 63:174,117,6',
  '64:245,0,0 65:245,5,0 66:245,10,0 67:246,15,0 68:246,20,0 69:246,25,0 70:246,30,0 71:247,35,0',
  '72:247,40,0 73:247,45,0 74:247,50,0 75:247,55,0 76:248,60,0 77:248,65,0 78:248,70,0 79:248,75,0',
  '80:249,81,0 81:249,86,0 82:249,91,0 83:249,96,0 84:250,101,0 85:250,106,0 86:250,111,0 87:250,116,0',
  '88:250,121,0 89:251,126,0 90:251,131,0 91:251,136,0 92:251,141,0 93:252,146,0 94:252,151,0',
  '95-96:252,156,0 97:251,159,0 98:250,162,0 99:249,165,0 100:248,168,0 101:247,171,0 102:246,174,0',
  '103:245,177,0 104:245,179,0 105:244,182,0 106:243,185,0 107:242,188,0 108:241,191,0 109:240,194,0',
  '110:239,197,0 111:238,200,0 112:237,203,0 113:236,206,0 114:235,209,0 115:234,212,0 116:233,215,0',
  '117:232,218,0 118:231,221,0 119:230,224,0 120:230,226,0 121:229,229,0 122:228,232,0 123:227,235,0',
  '124:226,238,0 125:225,241,0 126:224,244,0 127:223,247,0 128:165,247,0 129:163,244,0 130:161,240,0',
  '131:158,237,0 132:156,233,1 133:154,230,1 134:152,227,1 135:149,223,1 136:147,220,1 137:145,216,1',
  '138:143,213,1 139:140,210,2 140:138,206,2 141:136,203,2 142:134,200,2 143:132,196,2 144:129,193,2',
  '145:127,189,2 146:125,186,3 147:123,183,3 148:120,179,3 149:118,176,3 150:116,172,3 151:114,169,3',
  '152:111,166,3 153:109,162,4 154:107,159,4 155:105,155,4 156:103,152,4 157:100,149,4 158:98,145,4',
  '159:96,142,4 160:94,138,5 161:91,135,5 162:89,132,5 163:87,128,5 164:85,125,5 165:82,121,5',
  '166:80,118,5 167:78,115,6 168:76,111,6 169:73,108,6 170:71,105,6 171:69,101,6 172:67,98,6',
  '173:65,94,6 174:62,91,7 175:60,88,7 176:58,84,7 177:56,81,7 178:53,77,7 179:51,74,7 180:49,71,7',
  '181:47,67,8 182:44,64,8 183:42,60,8 184-255:40,57,8',
].join(' ');
const NDVI3_RUNS = [
  '0-3:36,0,255 4:245,20,0 5:245,24,0 6:245,29,0 7:245,31,0 8-9:247,33,0 10:247,37,0 11-13:247,41,0',
  '14-15:247,45,0 16:247,47,0 17-18:247,49,0 19-20:247,54,0 21:247,56,0 22-23:247,58,0 24-26:250,62,0',
  '27-29:250,67,0 30:250,69,0 31-32:250,71,0 33-34:250,75,0 35:250,78,0 36-38:250,79,0 39:250,81,0',
  '40-41:250,83,0 42-43:250,87,0 44:250,90,0 45:250,92,0 46-47:252,93,0 48-51:252,97,0 52-55:252,101,0',
  '56-57:252,105,0 58:252,107,0 59-60:252,109,0 61:252,113,13 62:255,118,20 63:255,119,23 64:255,121,25',
  '65:255,126,33 66:255,132,38 67:255,133,40 68:255,135,43 69:255,141,48 70:255,144,54 71:255,150,59',
  '72:255,152,61 73:255,153,64 74:255,159,69 75:255,163,77 76:255,165,79 77:255,168,82 78:255,174,87',
  '79:255,176,92 80:255,181,97 81:255,183,99 82:255,186,102 83:255,191,107 84:255,197,115',
  '85:255,201,120 86:255,203,123 87:255,205,125 88:255,209,130 89:255,214,138 90:255,216,141',
  '91:255,218,143 92:255,224,150 93:255,228,156 94:255,234,163 95:255,236,165 96:255,238,168',
  '97:255,243,173 98:255,248,181 99:255,252,186 100:253,252,186 101:250,252,187 102:244,250,180',
  '103:238,247,176 104:234,246,173 105:231,245,169 106:223,240,163 107:217,237,157 108:211,235,150',
  '109:205,233,146 110:200,230,142 111:195,227,136 112:189,224,132 113:184,222,126 114:180,220,123',
  '115:174,217,119 116:169,214,114 117:163,212,108 118:160,210,105 119:154,207,101 120:148,204,96',
  '121:143,201,93 122:138,199,88 123:134,197,84 124:130,194,81 125:126,191,77 126:117,189,70',
  '127:115,186,68 128:112,184,64 129:106,181,60 130:100,179,55 131:94,176,49 132:92,174,47',
  '133:90,173,45 134:81,168,37 135:75,166,33 136:71,163,28 137:66,160,24 138:62,158,21 139:56,156,14',
  '140-142:51,153,0 143-146:50,150,0 147-149:49,148,0 150-153:48,145,0 154-157:48,143,0',
  '158-161:47,140,0 162-165:46,138,0 166-169:45,135,0 170-172:44,133,0 173-178:43,130,0',
  '179-181:42,128,0 182-185:42,125,0 186-189:41,122,0 190-194:40,120,0 195-198:39,117,0',
  '199-255:38,115,0',
].join(' ');
/** A 256-colour table from appendix A run notation. */
function runTable(text: string): Uint8Array {
  const rgb = new Uint8Array(3 * 256);
  for (const run of text.split(' ')) {
    const m = /^(\d+)(?:-(\d+))?:(\d+),(\d+),(\d+)$/.exec(run);
    if (m === null) throw new EngineError('INTERNAL', `built-in colormap table: bad run ${JSON.stringify(run)}`, { path: 'Colormap' });
    const last = Number(m[2] ?? m[1]);
    for (let i = Number(m[1]); i <= last; i++) rgb.set([Number(m[3]), Number(m[4]), Number(m[5])], 3 * i);
  }
  return rgb;
}

type Stop = readonly [index: number, r: number, g: number, b: number];

/** A multipart HSV ramp through `stops`, part weights the stop gaps unless given. */
function hsvStops(stops: readonly Stop[], weights?: readonly number[]): ColorRamp {
  const colorRamps: AlgorithmicRamp[] = stops.slice(1).map((s, i) => ({
    type: 'algorithmic',
    fromColor: stops[i]!.slice(1),
    toColor: s.slice(1),
    algorithm: 'geoHSVAlgorithm',
  }));
  return { type: 'multipart', colorRamps, weights: weights ?? stops.slice(1).map((s, i) => s[0] - stops[i]![0]) };
}

/** mulberry32: a small seeded PRNG, the same numbers everywhere. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function namedTable(name: ColormapName): Uint8Array {
  switch (name) {
    case 'Gray':
      return rampColors({ type: 'algorithmic', fromColor: [0, 0, 0], toColor: [255, 255, 255], algorithm: 'geoHSVAlgorithm' }).rgb;
    case 'Random': {
      const random = mulberry32(RANDOM_COLORMAP_SEED);
      return Uint8Array.from({ length: 3 * 256 }, () => Math.round(255 * random()));
    }
    case 'Elevation':
      return rampColors(
        hsvStops([
          [0, 0, 191, 191],
          [51, 0, 255, 0],
          [102, 255, 255, 0],
          [153, 255, 127, 0],
          [204, 191, 127, 63],
          [256, 20, 20, 20],
        ]),
      ).rgb;
    case 'NDVI2': {
      const ramp = hsvStops([
        [0, 255, 255, 255],
        [70, 0, 0, 255],
        [80, 205, 193, 173],
        [100, 150, 150, 150],
        [110, 120, 100, 51],
        [130, 120, 200, 100],
        [140, 28, 144, 3],
        [160, 6, 55, 0],
        [180, 10, 30, 25],
        [201, 6, 27, 7],
      ]);
      const rgb = new Uint8Array(3 * 256);
      rgb.set(rampColors(ramp, 201).rgb);
      for (let i = 201; i < 256; i++) rgb.set([6, 27, 7], 3 * i);
      return rgb;
    }
    case 'Hillshade':
      return rampColors(
        hsvStops(
          [
            [0, 38, 54, 41],
            [69, 79, 90, 82],
            [131, 156, 156, 156],
            [256, 253, 241, 253],
          ],
          [0.268, 0.238, 0.495],
        ),
      ).rgb;
    case 'NDVI':
      return runTable(NDVI_RUNS);
    case 'NDVI3':
      return runTable(NDVI3_RUNS);
  }
}

const INDEXES = Float64Array.from({ length: 256 }, (_, i) => i);

/** A colour table of n <= 256 colours as a colormap for values 0..n-1. */
function tableColormap(t: ColorTable): Colormap {
  const values = t.size === 256 ? INDEXES.slice() : Float64Array.from({ length: t.size }, (_, i) => i);
  return t.alpha === undefined ? { values, rgb: t.rgb } : { values, rgb: t.rgb, alpha: t.alpha };
}

/** The named colormap (256 entries, values 0..255); name matched case-insensitively (`Grey` = `Gray`), else undefined. */
export function namedColormap(name: string): Colormap | undefined {
  const key = name.trim().toLowerCase();
  const hit = key === 'grey' ? 'Gray' : COLORMAP_NAMES.find((n) => n.toLowerCase() === key);
  return hit === undefined ? undefined : tableColormap({ size: 256, rgb: namedTable(hit) });
}

// ---- The function

const args = {
  Colormap: {
    kind: 'json',
    optional: true,
    doc: 'Explicit colours, [[value, red, green, blue(, alpha)], ...] with integer values (negative allowed). Wins over every other choice.',
  },
  Colorramp: {
    kind: 'json',
    optional: true,
    doc: 'A colour ramp object ({type: "algorithmic", fromColor, toColor, algorithm} or {type: "multipart", colorRamps}) or a predefined ramp name; 256 colours for values 0..255. Wins over ColorrampName and ColormapName.',
  },
  ColorrampName: {
    kind: 'string',
    doc: 'A predefined ramp name (appendix B.2, e.g. "Black To White", "Slope"), expanded with CIELab into 256 colours. Wins over ColormapName.',
  },
  ColormapName: {
    kind: 'string',
    doc: `A named colormap for values 0..255: ${COLORMAP_NAMES.join(', ')}.`,
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Single-band input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

export interface ColormapParams {
  readonly input: number;
  /** Convert to U8 (truncate toward zero, outside 0..255 or NaN -> NoData) from this type; undefined: copy. */
  readonly toU8From?: PixelType;
}

const at = argPaths(args);

export const colormap = defineFunction<typeof args, ColormapParams>({
  name: 'Colormap',
  summary: 'Attach a colormap (explicit, from a colour ramp or named) to a single-band raster; pixels pass through.',
  variableName: 'Raster',
  family: 'color',
  verification:
    'reference: gdaldem color-relief -exact_color_entry (explicit colormap, via ColormapToRGB); hand: documented check values of the named colormaps',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (src.bandCount !== 1) {
      throw unsupportedInput(
        at('Raster'),
        `Colormap needs a single-band raster, got ${src.bandCount} bands: pick one band with ExtractBand first`,
      );
    }
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `Colormap needs real pixel values, got ${src.pixelType}`);

    const given = (['Colormap', 'Colorramp', 'ColorrampName', 'ColormapName'] as const).filter((k) => a[k] !== undefined);
    const used: (typeof given)[number] | undefined = given[0];
    const warnings = given.slice(1).map((k) => `${used} given: ${k} is ignored`);
    let table: Colormap;
    switch (used) {
      case undefined:
        throw invalidArgument(at('Colormap'), 'Colormap needs one of Colormap, Colorramp, ColorrampName or ColormapName');
      case 'Colormap':
        table = parseColormap(a.Colormap, at('Colormap'));
        break;
      case 'Colorramp':
        table = tableColormap(rampColors(parseColorRamp(a.Colorramp, at('Colorramp'))));
        break;
      case 'ColorrampName':
        table = tableColormap(rampColors(parseColorRamp(a.ColorrampName!, at('ColorrampName'))));
        break;
      case 'ColormapName': {
        const named = namedColormap(a.ColormapName!);
        if (named === undefined) {
          const near = closestSpelling(a.ColormapName!.trim(), COLORMAP_NAMES);
          throw invalidArgument(
            at('ColormapName'),
            `unknown colormap name ${JSON.stringify(a.ColormapName)}${near ? ` (did you mean ${near}?)` : ''}; names: ${COLORMAP_NAMES.join(', ')}`,
          );
        }
        table = named;
        break;
      }
    }

    const convert = used !== 'Colormap' && src.pixelType !== 'U8';
    const { statistics, histograms, ...rest } = src;
    const info: RasterInfo = convert
      ? {
          ...rest,
          pixelType: 'U8',
          noData: src.noData !== undefined && representable(src.noData, 'U8') ? src.noData : undefined,
          colormap: table,
        }
      : { ...src, colormap: table };
    return {
      info,
      halo: 0,
      params: convert ? { input: a.Raster, toU8From: src.pixelType } : { input: a.Raster },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const mask = out.mask;
    mask.set(src.mask);
    if (p.toU8From === undefined) {
      out.bands[0]!.set(src.bands[0]!);
      return;
    }
    const from = src.bands[0]!;
    const to = out.bands[0]!;
    for (let i = 0; i < mask.length; i++) {
      const v = Math.trunc(from[i]!);
      if (v >= 0 && v <= 255) to[i] = v;
      else mask[i] = 0; // NaN and values without an entry
    }
  },
});

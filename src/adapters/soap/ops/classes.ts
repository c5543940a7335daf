/**
 * Renderers and data classes of the SOAP map service: a layer's configured renderer (Esri JSON) as
 * the SOAP FeatureRenderer types (SimpleRenderer, ClassBreaksRenderer, UniqueValueRenderer with
 * SimpleMarker/Line/FillSymbol and RgbColor), and GenerateDataClasses (seed §7): a ClassBreaksDef
 * (equal interval, quantile, natural breaks, standard deviation, geometrical interval; normalised by
 * a field, the log, the percent of total or the area) or a UniqueValuesDef classified over a layer's
 * or table's rows, coloured along the request's colour ramp.
 */
import { EngineError, invalidArgument } from '../../../core/errors.js';
import { classify, type ClassifyMethod, type StdDevClassification } from '../../map/classify.js';
import type { AttributeValue, FeatureQuery, FeatureTable, FieldInfo, Geometry, MapLayer, StandaloneTable } from '../../map/model.js';
import { isObject } from '../display.js';
import { signedArea2 } from '../geometry.js';
import { result, type SoapHandler, type SoapObject, type SoapValue } from '../operation.js';
import { colorOfSoap } from './draw.js';
import { checkMapName, isNumericField, mapTableOfDescription, rgbColor } from './info.js';

type Rgba = [number, number, number, number];
type Json = Readonly<Record<string, unknown>>;

const isJson = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const numOr = (v: unknown, d: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : d);
const strOf = (v: unknown): string => (typeof v === 'string' ? v : '');

/** An Esri JSON enumeration value (`esriSMSCircle`) in the SOAP schema's spelling (`geoSMSCircle`). */
export const geoEnum = (v: string): string => (v.startsWith('esri') ? `geo${v.slice(4)}` : v);

// ---------------------------------------------------------------------------------------------
// Esri JSON renderer -> SOAP

function jsonColor(v: unknown): SoapObject | undefined {
  if (!Array.isArray(v) || v.length < 3) return undefined;
  const c = v.map((x) => Math.max(0, Math.min(255, Math.round(numOr(x, 0)))));
  return rgbColor([c[0]!, c[1]!, c[2]!, c[3] ?? 255]);
}

const MARKER_STYLES = new Set(['geoSMSCircle', 'geoSMSSquare', 'geoSMSCross', 'geoSMSX', 'geoSMSDiamond']);

/**
 * Esri JSON styles the SOAP enumerations lack, as their nearest SOAP style. Decision: the short and
 * long dash variants are their plain dash patterns; a hollow fill is the null fill (no fill).
 */
const STYLE_OF: Readonly<Record<string, string>> = {
  geoSLSShortDash: 'geoSLSDash',
  geoSLSLongDash: 'geoSLSDash',
  geoSLSShortDot: 'geoSLSDot',
  geoSLSShortDashDot: 'geoSLSDashDot',
  geoSLSLongDashDot: 'geoSLSDashDot',
  geoSLSShortDashDotDot: 'geoSLSDashDotDot',
  geoSFSHollow: 'geoSFSNull',
};
const soapStyle = (esri: string): string => {
  const g = geoEnum(esri);
  return STYLE_OF[g] ?? g;
};

function soapLineSymbol(j: Json): SoapObject {
  const color = jsonColor(j['color']);
  return {
    $type: 'SimpleLineSymbol',
    ...(color ? { Color: color } : {}),
    Width: numOr(j['width'], 1),
    Style: soapStyle(strOf(j['style']) || 'esriSLSSolid'),
  };
}

/** An Esri JSON symbol (esriSMS, esriSLS, esriSFS) as its SOAP symbol. */
export function soapSymbolOf(j: unknown, path: string): SoapObject {
  if (!isJson(j)) throw invalidArgument(path, `${path} must be a symbol`);
  const color = jsonColor(j['color']);
  switch (j['type']) {
    case 'esriSMS': {
      const outline = isJson(j['outline']) ? j['outline'] : undefined;
      let style = geoEnum(strOf(j['style']) || 'esriSMSCircle');
      // Decision: the SOAP marker styles have no triangle; a triangle marker is described as a diamond.
      if (!MARKER_STYLES.has(style)) style = 'geoSMSDiamond';
      return {
        $type: 'SimpleMarkerSymbol',
        Angle: numOr(j['angle'], 0),
        ...(color ? { Color: color } : {}),
        Size: numOr(j['size'], 8),
        XOffset: numOr(j['xoffset'], 0),
        YOffset: numOr(j['yoffset'], 0),
        Outline: outline !== undefined && numOr(outline['width'], 0) > 0,
        OutlineSize: outline ? numOr(outline['width'], 0) : 0,
        OutlineColor: (outline && jsonColor(outline['color'])) ?? rgbColor([0, 0, 0]),
        Style: style,
      };
    }
    case 'esriSLS':
      return soapLineSymbol(j);
    case 'esriSFS': {
      const outline = isJson(j['outline']) ? soapLineSymbol(j['outline']) : undefined;
      return {
        $type: 'SimpleFillSymbol',
        ...(color ? { Color: color } : {}),
        ...(outline ? { Outline: outline } : {}),
        Style: soapStyle(strOf(j['style']) || 'esriSFSSolid'),
      };
    }
    default:
      throw new EngineError(
        'INVALID_ARGUMENT',
        `${path}: symbol type '${String(j['type'])}' cannot be described (esriSMS, esriSLS, esriSFS)`,
        {
          path,
        },
      );
  }
}

/** A layer's renderer (Esri JSON: simple, classBreaks, uniqueValue) as its SOAP FeatureRenderer. */
export function soapRendererOf(r: Json, path: string): SoapObject {
  const rotation = strOf(r['rotationExpression']) || strOf(r['rotationField']);
  const rotationPart = rotation
    ? {
        RotationField: rotation.replace(/^\[|\]$/g, ''),
        RotationType: r['rotationType'] === 'arithmetic' ? 'geoRotateSymbolArithmetic' : 'geoRotateSymbolGeographic',
      }
    : {};
  switch (r['type']) {
    case 'simple':
      return {
        $type: 'SimpleRenderer',
        Symbol: soapSymbolOf(r['symbol'], `${path}.symbol`),
        Label: strOf(r['label']),
        Description: strOf(r['description']),
        ...rotationPart,
      };
    case 'classBreaks': {
      const infos = Array.isArray(r['classBreakInfos']) ? (r['classBreakInfos'] as unknown[]) : [];
      const min = numOr(r['minValue'], 0);
      let lower = min;
      const normType = strOf(r['normalizationType']);
      return {
        $type: 'ClassBreaksRenderer',
        Field: strOf(r['field']),
        MinimumValue: min,
        ClassBreakInfos: infos.map((i, k) => {
          const j = isJson(i) ? i : {};
          const max = numOr(j['classMaxValue'], lower);
          const from = numOr(j['classMinValue'], lower);
          lower = max;
          return {
            $type: 'ClassBreakInfo',
            ClassMaximumValue: max,
            Label: strOf(j['label']),
            Description: strOf(j['description']),
            Symbol: soapSymbolOf(j['symbol'], `${path}.classBreakInfos[${k}].symbol`),
            ClassMinimumValue: from,
          };
        }),
        ...(isJson(r['backgroundFillSymbol'])
          ? { BackgroundSymbol: soapSymbolOf(r['backgroundFillSymbol'], `${path}.backgroundFillSymbol`) }
          : {}),
        ...(strOf(r['normalizationField']) ? { NormalizationField: strOf(r['normalizationField']) } : {}),
        ...(normType ? { NormalizationType: geoEnum(normType) } : {}),
        ...(typeof r['normalizationTotal'] === 'number' ? { NormalizationTotal: r['normalizationTotal'] } : {}),
        ...rotationPart,
      };
    }
    case 'uniqueValue': {
      const infos = Array.isArray(r['uniqueValueInfos']) ? (r['uniqueValueInfos'] as unknown[]) : [];
      return {
        $type: 'UniqueValueRenderer',
        Field1: strOf(r['field1']),
        ...(strOf(r['field2']) ? { Field2: strOf(r['field2']) } : {}),
        ...(strOf(r['field3']) ? { Field3: strOf(r['field3']) } : {}),
        ...(strOf(r['fieldDelimiter']) ? { FieldDelimiter: strOf(r['fieldDelimiter']) } : {}),
        ...(isJson(r['defaultSymbol']) ? { DefaultSymbol: soapSymbolOf(r['defaultSymbol'], `${path}.defaultSymbol`) } : {}),
        ...(r['defaultLabel'] !== undefined ? { DefaultLabel: strOf(r['defaultLabel']) } : {}),
        UniqueValueInfos: infos.map((i, k) => {
          const j = isJson(i) ? i : {};
          return {
            $type: 'UniqueValueInfo',
            Value:
              typeof j['value'] === 'string' || typeof j['value'] === 'number' || typeof j['value'] === 'boolean' ? String(j['value']) : '',
            Label: strOf(j['label']),
            Description: strOf(j['description']),
            ...(isJson(j['symbol']) ? { Symbol: soapSymbolOf(j['symbol'], `${path}.uniqueValueInfos[${k}].symbol`) } : {}),
          };
        }),
        ...rotationPart,
      };
    }
    default:
      throw new EngineError('INVALID_ARGUMENT', `${path}: renderer type '${String(r['type'])}' cannot be described`, { path });
  }
}

// ---------------------------------------------------------------------------------------------
// Colours and colour ramps

const clampByte = (v: number): number => Math.max(0, Math.min(255, Math.round(v)));

function hsvToRgb(h: number, s: number, v: number): [number, number, number] {
  const hh = ((((h % 360) + 360) % 360) / 60) as number;
  const c = v * s;
  const x = c * (1 - Math.abs((hh % 2) - 1));
  const [r, g, b] = hh < 1 ? [c, x, 0] : hh < 2 ? [x, c, 0] : hh < 3 ? [0, c, x] : hh < 4 ? [0, x, c] : hh < 5 ? [x, 0, c] : [c, 0, x];
  const m = v - c;
  return [clampByte((r + m) * 255), clampByte((g + m) * 255), clampByte((b + m) * 255)];
}

function rgbToHsv(r: number, g: number, b: number): [number, number, number] {
  const [R, G, B] = [r / 255, g / 255, b / 255];
  const max = Math.max(R, G, B);
  const min = Math.min(R, G, B);
  const d = max - min;
  let h = 0;
  if (d > 0) {
    if (max === R) h = 60 * (((G - B) / d) % 6);
    else if (max === G) h = 60 * ((B - R) / d + 2);
    else h = 60 * ((R - G) / d + 4);
  }
  return [(h + 360) % 360, max === 0 ? 0 : d / max, max];
}

/**
 * A SOAP Color as RGBA 0..255 (RgbColor, GrayColor, HsvColor, HlsColor, CmykColor; the vendor's
 * ranges), or a fault naming `path`.
 */
export function rgbaOfSoapColor(c: SoapValue, path: string): Rgba {
  // The drawing operations' reading of colours, so a ramp colour means what a symbol colour means.
  const rgba = colorOfSoap(c, path);
  if (!rgba) throw invalidArgument(path, `${path} must be a color`);
  return [rgba[0], rgba[1], rgba[2], rgba[3]];
}

// CIE L*a*b* (D65) for the vendor's default CIELab ramps.
const D65 = [0.95047, 1, 1.08883] as const;
const lin = (u: number): number => (u <= 0.04045 ? u / 12.92 : ((u + 0.055) / 1.055) ** 2.4);
const gam = (u: number): number => (u <= 0.0031308 ? 12.92 * u : 1.055 * u ** (1 / 2.4) - 0.055);
const fLab = (t: number): number => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
const fInv = (t: number): number => (t ** 3 > 216 / 24389 ? t ** 3 : (116 * t - 16) / (24389 / 27));

export function rgbToLab(r: number, g: number, b: number): [number, number, number] {
  const [R, G, B] = [lin(r / 255), lin(g / 255), lin(b / 255)];
  const x = (0.4124564 * R + 0.3575761 * G + 0.1804375 * B) / D65[0];
  const y = (0.2126729 * R + 0.7151522 * G + 0.072175 * B) / D65[1];
  const z = (0.0193339 * R + 0.119192 * G + 0.9503041 * B) / D65[2];
  const [fx, fy, fz] = [fLab(x), fLab(y), fLab(z)];
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

export function labToRgb(L: number, a: number, b: number): [number, number, number] {
  const fy = (L + 16) / 116;
  const fx = fy + a / 500;
  const fz = fy - b / 200;
  const [x, y, z] = [fInv(fx) * D65[0], fInv(fy) * D65[1], fInv(fz) * D65[2]];
  const R = 3.2404542 * x - 1.5371385 * y - 0.4985314 * z;
  const G = -0.969266 * x + 1.8760108 * y + 0.041556 * z;
  const B = 0.0556434 * x - 0.2040259 * y + 1.0572252 * z;
  return [clampByte(gam(R) * 255), clampByte(gam(G) * 255), clampByte(gam(B) * 255)];
}

const lerp = (a: number, b: number, t: number): number => a + (b - a) * t;
const lerpHue = (a: number, b: number, t: number): number => {
  let d = b - a;
  if (d > 180) d -= 360;
  if (d < -180) d += 360;
  return (a + d * t + 360) % 360;
};

/** The colour at `t` (0..1) between two colours along an algorithm (HSV, CIELab, LabLCh). */
function between(from: Rgba, to: Rgba, t: number, algorithm: 'hsv' | 'lab' | 'lch'): Rgba {
  const alpha = clampByte(lerp(from[3], to[3], t));
  if (algorithm === 'hsv') {
    const a = rgbToHsv(from[0], from[1], from[2]);
    const b = rgbToHsv(to[0], to[1], to[2]);
    // A grey end takes the other end's hue (no hue sweep through unrelated colours).
    const ha = a[1] === 0 ? b[0] : a[0];
    const hb = b[1] === 0 ? a[0] : b[0];
    return [...hsvToRgb(lerp(ha, hb, t), lerp(a[1], b[1], t), lerp(a[2], b[2], t)), alpha];
  }
  const a = rgbToLab(from[0], from[1], from[2]);
  const b = rgbToLab(to[0], to[1], to[2]);
  if (algorithm === 'lab') return [...labToRgb(lerp(a[0], b[0], t), lerp(a[1], b[1], t), lerp(a[2], b[2], t)), alpha];
  const ca = Math.hypot(a[1], a[2]);
  const cb = Math.hypot(b[1], b[2]);
  const ha = (Math.atan2(a[2], a[1]) * 180) / Math.PI;
  const hb = (Math.atan2(b[2], b[1]) * 180) / Math.PI;
  const h = (lerpHue(ha, hb, t) * Math.PI) / 180;
  const c = lerp(ca, cb, t);
  return [...labToRgb(lerp(a[0], b[0], t), c * Math.cos(h), c * Math.sin(h)), alpha];
}

function algorithmOf(v: SoapValue, path: string): 'hsv' | 'lab' | 'lch' {
  const s = (typeof v === 'string' ? v : '')
    .toLowerCase()
    .replace(/^(geo|esri)/, '')
    .replace(/algorithm$/, '');
  if (s === '' || s === 'cielab' || s === 'lab') return 'lab';
  if (s === 'hsv') return 'hsv';
  if (s === 'lablch' || s === 'lch') return 'lch';
  throw invalidArgument(path, `${path}: unknown algorithm '${typeof v === 'string' ? v : ''}' (HSV, CIELab or LabLCh)`);
}

/** A deterministic generator (mulberry32): random ramps answer the same colours for the same seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Default seed of random ramps without UseSeed (Decision: fixed, so the same request answers the same colours). */
const DEFAULT_SEED = 19;

/** `n` colours along a SOAP ColorRamp (Algorithmic, Preset, Random, MultiPart). */
export function rampColors(ramp: SoapValue, n: number, path: string): Rgba[] {
  if (n <= 0) return [];
  if (!isObject(ramp)) throw invalidArgument(path, `${path} must be a color ramp`);
  const num = (k: string, d: number): number => (typeof ramp[k] === 'number' ? (ramp[k] as number) : d);
  const ts = Array.from({ length: n }, (_, i) => (n === 1 ? 0 : i / (n - 1)));
  switch (ramp.$type) {
    case 'AlgorithmicColorRamp': {
      const from =
        ramp['FromColor'] !== undefined ? rgbaOfSoapColor(ramp['FromColor'], `${path}/FromColor`) : ([255, 255, 190, 255] as Rgba);
      const to = ramp['ToColor'] !== undefined ? rgbaOfSoapColor(ramp['ToColor'], `${path}/ToColor`) : ([168, 0, 0, 255] as Rgba);
      const alg = algorithmOf(ramp['Algorithm'], `${path}/Algorithm`);
      return ts.map((t) => between(from, to, t, alg));
    }
    case 'PresetColorRamp': {
      const colors = Array.isArray(ramp['Colors'])
        ? (ramp['Colors'] as SoapValue[]).map((c, i) => rgbaOfSoapColor(c, `${path}/Colors[${i}]`))
        : [];
      if (colors.length === 0) throw invalidArgument(`${path}/Colors`, `${path}/Colors must hold at least one color`);
      if (colors.length === 1) return ts.map(() => colors[0]!);
      // Evenly along the preset's colours, interpolated in RGB between neighbours.
      return ts.map((t) => {
        const p = t * (colors.length - 1);
        const i = Math.min(colors.length - 2, Math.floor(p));
        const a = colors[i]!;
        const b = colors[i + 1]!;
        const u = p - i;
        return [
          clampByte(lerp(a[0], b[0], u)),
          clampByte(lerp(a[1], b[1], u)),
          clampByte(lerp(a[2], b[2], u)),
          clampByte(lerp(a[3], b[3], u)),
        ];
      });
    }
    case 'RandomColorRamp': {
      const rnd = seeded(ramp['UseSeed'] === true ? num('Seed', DEFAULT_SEED) : DEFAULT_SEED);
      const [vmin, vmax] = [num('MinValue', 70), num('MaxValue', 95)];
      const [smin, smax] = [num('MinSaturation', 30), num('MaxSaturation', 60)];
      const [h0, h1] = [num('StartHue', 0), num('EndHue', 360)];
      return ts.map(() => [...hsvToRgb(lerp(h0, h1, rnd()), lerp(smin, smax, rnd()) / 100, lerp(vmin, vmax, rnd()) / 100), 255] as Rgba);
    }
    case 'MultiPartColorRamp': {
      const parts = Array.isArray(ramp['ColorRamps']) ? (ramp['ColorRamps'] as SoapValue[]) : [];
      if (parts.length === 0) throw invalidArgument(`${path}/ColorRamps`, `${path}/ColorRamps must hold at least one color ramp`);
      // The parts follow each other along the ramp: each contributes an equal share of positions.
      const dense = parts.map((p, i) => rampColors(p, 256, `${path}/ColorRamps[${i}]`));
      return ts.map((t) => {
        const p = Math.min(parts.length - 1, Math.floor(t * parts.length));
        const local = t * parts.length - p;
        return dense[p]![Math.min(255, Math.round(local * 255))]!;
      });
    }
    default:
      throw invalidArgument(path, `${path}: unknown color ramp type '${String(ramp.$type)}'`);
  }
}

// ---------------------------------------------------------------------------------------------
// GenerateDataClasses

const geometryKind = (t: FeatureTable): 'marker' | 'line' | 'fill' =>
  t.geometryType === 'point' || t.geometryType === 'multipoint' ? 'marker' : t.geometryType === 'polyline' ? 'line' : 'fill';

/** The symbol of a class: the request's BaseSymbol coloured, else a plain symbol for the geometry type. */
function classSymbol(base: SoapValue, kind: 'marker' | 'line' | 'fill', color: Rgba): SoapObject {
  const Color = rgbColor(color);
  if (isObject(base)) {
    const { $type } = base;
    // Symbols with a Color slot take the class colour (the encoder writes elements in schema order).
    if (
      $type === 'SimpleMarkerSymbol' ||
      $type === 'SimpleLineSymbol' ||
      $type === 'SimpleFillSymbol' ||
      $type === 'CharacterMarkerSymbol'
    ) {
      return { ...base, Color };
    }
    return base;
  }
  switch (kind) {
    case 'marker':
      return {
        $type: 'SimpleMarkerSymbol',
        Angle: 0,
        Color,
        Size: 8,
        XOffset: 0,
        YOffset: 0,
        Outline: true,
        OutlineSize: 0.7,
        OutlineColor: rgbColor([110, 110, 110]),
        Style: 'geoSMSCircle',
      };
    case 'line':
      return { $type: 'SimpleLineSymbol', Color, Width: 1.5, Style: 'geoSLSSolid' };
    case 'fill':
      return {
        $type: 'SimpleFillSymbol',
        Color,
        Outline: { $type: 'SimpleLineSymbol', Color: rgbColor([110, 110, 110]), Width: 0.4, Style: 'geoSLSSolid' },
        Style: 'geoSFSSolid',
      };
  }
}

const METHODS: Readonly<Record<string, ClassifyMethod>> = {
  geoClassifyNaturalBreaks: 'naturalBreaks',
  geoClassifyEqualInterval: 'equalInterval',
  geoClassifyQuantile: 'quantile',
  geoClassifyStandardDeviation: 'standardDeviation',
  geoClassifyGeometricalInterval: 'geometricalInterval',
};

/** Most classes a ClassBreaksDef may ask for (the vendor's classification tools stop at 32). */
export const MAX_BREAK_COUNT = 32;
/** Most unique values a UniqueValuesDef classifies. */
export const MAX_UNIQUE_VALUES = 10_000;

function fieldOf(table: FeatureTable, name: string, path: string): FieldInfo {
  const f = table.fields.find((x) => x.name.toLowerCase() === name.trim().toLowerCase());
  if (!f) throw invalidArgument(path, `Field '${name}' does not exist.`);
  return f;
}

/** Area of a polygon geometry in map units² (0 for others). */
function areaOf(g: Geometry | null | undefined): number {
  if (!g) return 0;
  const polys = g.type === 'Polygon' ? [g.coordinates] : g.type === 'MultiPolygon' ? g.coordinates : [];
  let a = 0;
  for (const p of polys) p.forEach((r, i) => (a += ((i === 0 ? 1 : -1) * Math.abs(signedArea2(r))) / 2));
  return a;
}

const fmt = (v: number): string => {
  if (!Number.isFinite(v)) return String(v);
  const r = Number(v.toPrecision(6));
  return String(Object.is(r, -0) ? 0 : r);
};

const sigmaText = (s: number): string => (Number.isInteger(s) ? String(s) : s.toFixed(2).replace(/0$/, ''));

/** Labels of standard deviation classes, as the vendor writes them. */
function stdDevLabels(c: StdDevClassification): string[] {
  return c.sigmas.map(([lo, hi]) => {
    if (lo === -Infinity && hi === Infinity) return 'Mean';
    if (lo === -Infinity) return `< ${sigmaText(hi)} Std. Dev.`;
    if (hi === Infinity) return `> ${sigmaText(lo)} Std. Dev.`;
    return `${sigmaText(lo)} - ${sigmaText(hi)} Std. Dev.${lo < 0 && hi > 0 ? ' (Mean)' : ''}`;
  });
}

interface Target {
  readonly table: FeatureTable;
  readonly where: string | undefined;
}

function targetOf(t: MapLayer | StandaloneTable, desc: SoapObject): Target {
  if (t.kind === 'raster') {
    throw invalidArgument(
      'MapTableDescription',
      `Layer ${t.id} ('${t.name}') is a raster layer: data classes are generated from the fields of feature layers and tables.`,
    );
  }
  const def = typeof desc['DefinitionExpression'] === 'string' ? desc['DefinitionExpression'].trim() : '';
  return { table: t.table, where: def === '' ? undefined : def };
}

const query = (t: Target, q: Omit<FeatureQuery, 'where' | 'path'>): FeatureQuery => ({
  ...q,
  ...(t.where ? { where: t.where } : {}),
  path: 'MapTableDescription',
});

/** Every row of the target (the record limit does not apply to a classification). */
async function allRows(t: Target, outFields: string[], returnGeometry: boolean) {
  const n = await t.table.count(query(t, {}));
  if (n === 0) return [];
  return t.table.query(query(t, { outFields, returnGeometry, limit: n }));
}

async function classBreaks(target: Target, def: SoapObject, path: string): Promise<SoapObject> {
  const table = target.table;
  const fieldName = typeof def['ClassificationField'] === 'string' ? def['ClassificationField'] : '';
  const field = fieldOf(table, fieldName, `${path}/ClassificationField`);
  if (!isNumericField(field)) {
    throw invalidArgument(`${path}/ClassificationField`, `Field '${field.name}' is not numeric: class breaks classify numbers.`);
  }
  const methodName = typeof def['ClassificationMethod'] === 'string' ? def['ClassificationMethod'] : '';
  const method = METHODS[methodName];
  if (!method) throw invalidArgument(`${path}/ClassificationMethod`, `Classification method '${methodName}' is not known.`);
  const count = def['BreakCount'] === undefined ? 5 : (def['BreakCount'] as number);
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_BREAK_COUNT) {
    throw invalidArgument(`${path}/BreakCount`, `BreakCount must be a whole number from 1 to ${MAX_BREAK_COUNT}.`);
  }
  const normName = typeof def['NormalizationField'] === 'string' ? def['NormalizationField'].trim() : '';
  let normType = typeof def['NormalizationType'] === 'string' ? def['NormalizationType'] : '';
  // Decision: a NormalizationField without a NormalizationType normalises by that field.
  if (normType === '') normType = normName !== '' ? 'geoNormalizeByField' : 'geoNormalizeByNothing';
  const normField = normType === 'geoNormalizeByField' ? fieldOf(table, normName, `${path}/NormalizationField`) : undefined;
  if (normField && !isNumericField(normField)) {
    throw invalidArgument(`${path}/NormalizationField`, `Field '${normField.name}' is not numeric: it cannot normalise values.`);
  }
  if (normType === 'geoNormalizeByArea' && table.geometryType !== 'polygon') {
    throw invalidArgument(`${path}/NormalizationType`, 'Normalising by area needs a polygon layer.');
  }

  let values: Float64Array;
  let total: number | undefined;
  if (normType === 'geoNormalizeByNothing' || normType === 'geoNormalizeByLog' || normType === 'geoNormalizeByPercentOfTotal') {
    const d = await table.distinct(field.name, query(target, {}));
    const n = d.reduce((s, x) => s + (typeof x.value === 'number' ? x.count : 0), 0);
    values = new Float64Array(n);
    let i = 0;
    for (const x of d) if (typeof x.value === 'number') for (let k = 0; k < x.count; k++) values[i++] = x.value;
    if (normType === 'geoNormalizeByLog') {
      // Values at or below zero have no logarithm and are left out.
      for (let k = 0; k < values.length; k++) values[k] = values[k]! > 0 ? Math.log10(values[k]!) : Number.NaN;
    } else if (normType === 'geoNormalizeByPercentOfTotal') {
      total = values.reduce((s, v) => s + v, 0);
      for (let k = 0; k < values.length; k++) values[k] = total !== 0 ? (values[k]! / total) * 100 : Number.NaN;
    }
  } else if (normType === 'geoNormalizeByField' || normType === 'geoNormalizeByArea') {
    const rows = await allRows(target, normField ? [field.name, normField.name] : [field.name], normType === 'geoNormalizeByArea');
    values = new Float64Array(rows.length);
    rows.forEach((r, k) => {
      const v = r.attributes[field.name];
      const d = normField ? r.attributes[normField.name] : areaOf(r.geometry);
      // Rows with no value or a zero denominator are left out (the vendor does the same).
      values[k] = typeof v === 'number' && typeof d === 'number' && d !== 0 ? v / d : Number.NaN;
    });
  } else {
    throw invalidArgument(`${path}/NormalizationType`, `Normalization type '${normType}' is not known.`);
  }

  const interval =
    typeof def['StandardDeviationInterval'] === 'number' && def['StandardDeviationInterval'] > 0 ? def['StandardDeviationInterval'] : 1;
  const c = classify(values, method, count, { stdDevInterval: interval });
  if (c.breaks.length === 0) {
    throw invalidArgument(
      `${path}/ClassificationField`,
      `Field '${field.name}' has no values to classify${target.where ? ' among the rows the definition expression selects' : ''}.`,
    );
  }
  const colors =
    def['ColorRamp'] !== undefined ? rampColors(def['ColorRamp'], c.breaks.length, `${path}/ColorRamp`) : defaultRamp(c.breaks.length);
  const kind = geometryKind(table);
  const labels = method === 'standardDeviation' ? stdDevLabels(c as StdDevClassification) : undefined;
  let lower = c.minimum;
  const infos = c.breaks.map((b, i) => {
    const info: SoapObject = {
      $type: 'ClassBreakInfo',
      ClassMaximumValue: b,
      Label: labels?.[i] ?? `${fmt(lower)} - ${fmt(b)}`,
      Description: '',
      Symbol: classSymbol(def['BaseSymbol'], kind, colors[i]!),
      ClassMinimumValue: lower,
    };
    lower = b;
    return info;
  });
  return {
    $type: 'ClassBreaksRenderer',
    Field: field.name,
    MinimumValue: c.minimum,
    ClassBreakInfos: infos,
    ...(normField ? { NormalizationField: normField.name } : {}),
    ...(normType !== 'geoNormalizeByNothing' ? { NormalizationType: normType } : {}),
    ...(total !== undefined ? { NormalizationTotal: total } : {}),
  };
}

/** Decision: without a ColorRamp, class breaks run from light yellow to dark red in CIELab (the vendor's default ramp). */
function defaultRamp(n: number): Rgba[] {
  const ts = Array.from({ length: n }, (_, i) => (n === 1 ? 0 : i / (n - 1)));
  return ts.map((t) => between([255, 255, 190, 255], [168, 0, 0, 255], t, 'lab'));
}

const valueText = (v: AttributeValue): string => (v instanceof Date ? v.toISOString() : String(v));

async function uniqueValues(target: Target, def: SoapObject, path: string): Promise<SoapObject> {
  const table = target.table;
  const names = Array.isArray(def['Fields']) ? (def['Fields'] as SoapValue[]).map((v) => (typeof v === 'string' ? v : '')) : [];
  if (names.length < 1 || names.length > 3) throw invalidArgument(`${path}/Fields`, 'Fields must name one to three fields.');
  const fields = names.map((n, i) => fieldOf(table, n, `${path}/Fields[${i}]`));
  // Decision: the vendor's default delimiter between the values of several fields.
  const delimiter = typeof def['FieldDelimiter'] === 'string' && def['FieldDelimiter'] !== '' ? def['FieldDelimiter'] : ', ';
  let values: { text: string; sortKey: number | string }[];
  if (fields.length === 1) {
    const f = fields[0]!;
    const d = await table.distinct(f.name, query(target, {}));
    // Null values have no class of their own: they take the default symbol.
    values = d
      .filter((x) => x.value !== null)
      .map((x) => ({ text: valueText(x.value), sortKey: typeof x.value === 'number' ? x.value : valueText(x.value) }));
  } else {
    const rows = await allRows(
      target,
      fields.map((f) => f.name),
      false,
    );
    const seen = new Set<string>();
    values = [];
    for (const r of rows) {
      const parts = fields.map((f) => r.attributes[f.name]);
      if (parts.some((p) => p === null || p === undefined)) continue;
      const text = parts.map((p) => valueText(p!)).join(delimiter);
      if (!seen.has(text)) {
        seen.add(text);
        values.push({ text, sortKey: text });
      }
    }
  }
  if (values.length > MAX_UNIQUE_VALUES) {
    throw new EngineError('LIMIT_EXCEEDED', `There are more than ${MAX_UNIQUE_VALUES} unique values to classify.`, {
      path: `${path}/Fields`,
    });
  }
  values.sort((a, b) =>
    typeof a.sortKey === 'number' && typeof b.sortKey === 'number'
      ? a.sortKey - b.sortKey
      : String(a.sortKey).localeCompare(String(b.sortKey)),
  );
  const ramp = def['ColorRamp'] ?? { $type: 'RandomColorRamp' };
  const colors = rampColors(ramp, values.length, `${path}/ColorRamp`);
  const kind = geometryKind(table);
  return {
    $type: 'UniqueValueRenderer',
    Field1: fields[0]!.name,
    ...(fields[1] ? { Field2: fields[1].name } : {}),
    ...(fields[2] ? { Field3: fields[2].name } : {}),
    ...(fields.length > 1 ? { FieldDelimiter: delimiter } : {}),
    DefaultSymbol: classSymbol(def['BaseSymbol'], kind, [190, 190, 190, 255]),
    DefaultLabel: '<all other values>',
    UniqueValueInfos: values.map((v, i) => ({
      $type: 'UniqueValueInfo',
      Value: v.text,
      Label: v.text,
      Description: '',
      Symbol: classSymbol(def['BaseSymbol'], kind, colors[i]!),
    })),
  };
}

const generateDataClasses: SoapHandler = async (ctx, args) => {
  const s = ctx.service;
  checkMapName(s, args['MapName']);
  const desc = args['MapTableDescription'];
  const t = mapTableOfDescription(s, desc);
  const target = targetOf(t, desc as SoapObject);
  const def = args['DataClassificationDef'];
  const path = 'DataClassificationDef';
  if (!isObject(def)) throw invalidArgument(path, `${path} is required`);
  if (def.$type === 'ClassBreaksDef') return result(await classBreaks(target, def, path));
  if (def.$type === 'UniqueValuesDef') return result(await uniqueValues(target, def, path));
  throw invalidArgument(path, `${path}: send a ClassBreaksDef or a UniqueValuesDef (got ${String(def.$type)})`);
};

export const classHandlers: Record<string, SoapHandler> = {
  GenerateDataClasses: generateDataClasses,
};

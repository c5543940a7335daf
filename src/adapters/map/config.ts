/**
 * The configuration of a MapServer service: the `properties` of its service record (as admin
 * `createService`/`edit` and `--config` take them), checked and given their defaults. Pure: no file
 * is opened here (a missing GeoJSON or raster is an IO_ERROR when the service opens); everything a
 * record can get wrong by its shape is an INVALID_ARGUMENT whose `path` is the JSON path of the
 * culprit (`service.properties.layers[1].path`) and whose message says what to write instead.
 *
 * Also here: the default renderers and the tile scheme (`tileSchemeOf`), which need only numbers.
 */
import { isAbsolute, resolve } from 'node:path';
import { EngineError } from '../../core/errors.js';
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import { registry } from '../../functions/index.js';
import { parseRule } from '../../rule/parse.js';
import type { ServiceRecord } from '../site.js';
import type { Domain, LevelOfDetail, MapBookmark, RendererJson, Subtypes, TileScheme } from './model.js';
import { resolutionOf, scaleOf } from './view.js';

// ---------------------------------------------------------------------------------------------
// Defaults

/** The vendor's defaults for a map service. */
export const DEFAULT_MAP_NAME = 'Layers';
export const DEFAULT_MAP_MAX_RECORD_COUNT = 1000;
export const DEFAULT_MAP_MAX_IMAGE_WIDTH = 4096;
export const DEFAULT_MAP_MAX_IMAGE_HEIGHT = 4096;
/** Decision: an opaque white background (the vendor's default map background). */
export const DEFAULT_BACKGROUND_COLOR: readonly [number, number, number, number] = [255, 255, 255, 255];

/** Web Mercator (3857/102100) standard tiling: origin and level 0 as the vendor publishes them. */
export const WEB_MERCATOR_ORIGIN = { x: -20037508.342787, y: 20037508.342787 } as const;
export const WEB_MERCATOR_LEVEL0 = { scale: 591657527.591555, resolution: 156543.03392800014 } as const;
export const WEB_MERCATOR_LEVELS = 20;

// ---------------------------------------------------------------------------------------------
// Settings

export interface FieldSettings {
  readonly alias?: string;
  readonly domain?: Domain;
  readonly length?: number;
}

export interface AttachmentSettings {
  /** The object id of the row the file belongs to. */
  readonly featureId: number;
  /** Absolute when a base folder was given. */
  readonly path: string;
  readonly name: string;
  readonly contentType: string;
}

interface TableSettingsBase {
  readonly name: string;
  /** GeoJSON (feature layers, tables) or a JSON array of objects (tables). Absolute when a base folder was given. */
  readonly path: string;
  readonly description: string;
  readonly displayField?: string;
  readonly popup?: string;
  /** Keyed by field name as configured (matched case-insensitively at import). */
  readonly fields: Readonly<Record<string, FieldSettings>>;
  readonly subtypes?: Subtypes;
  readonly attachments: readonly AttachmentSettings[];
  /**
   * The object id field: a property of that name holding unique positive integers is used as the
   * ids, else a column of this name numbered 1..n in file order is added (default `OBJECTID`).
   */
  readonly objectIdField: string;
  /** JSON path of this entry (`service.properties.layers[2]`), for errors found when the service opens. */
  readonly at: string;
}

export interface FeatureLayerSettings extends TableSettingsBase {
  readonly type: 'feature';
  /** As configured; undefined = the default simple renderer of the layer's geometry type. */
  readonly renderer?: RendererJson;
  readonly hyperlinkField?: string;
  readonly minScale: number;
  readonly maxScale: number;
  readonly visible: boolean;
  readonly copyrightText: string;
}

export interface RasterLayerSettings {
  readonly type: 'raster';
  readonly name: string;
  readonly path: string;
  readonly renderingRule?: unknown;
  readonly description: string;
  readonly copyrightText: string;
  readonly minScale: number;
  readonly maxScale: number;
  readonly visible: boolean;
  readonly at: string;
}

export type LayerSettings = FeatureLayerSettings | RasterLayerSettings;

export type TableSettings = TableSettingsBase;

export interface RelationshipSettings {
  readonly name: string;
  /** Layer/table ids (layers 0..n-1, tables n..). */
  readonly origin: number;
  readonly destination: number;
  readonly originKey: string;
  readonly destinationKey: string;
  readonly cardinality: 'oneToOne' | 'oneToMany';
  readonly at: string;
}

export interface TilingSettings {
  readonly dpi: number;
  readonly tileSize: number;
  readonly format: 'PNG' | 'JPEG' | 'MIXED';
  readonly quality: number;
  /** Levels of the default scheme (a count), or explicit levels. */
  readonly levels?: number | readonly LevelOfDetail[];
  readonly origin?: { readonly x: number; readonly y: number };
  readonly clientCachingAllowed: boolean;
}

export interface MapServiceSettings {
  readonly layers: readonly LayerSettings[];
  readonly tables: readonly TableSettings[];
  readonly relationships: readonly RelationshipSettings[];
  readonly mapName: string;
  readonly description: string;
  readonly copyrightText: string;
  readonly anonymous: boolean;
  readonly maxRecordCount: number;
  readonly maxImageWidth: number;
  readonly maxImageHeight: number;
  readonly backgroundColor: readonly [number, number, number, number];
  readonly bookmarks: readonly MapBookmark[];
  readonly tiling: TilingSettings;
}

// ---------------------------------------------------------------------------------------------
// Checks

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** INVALID_ARGUMENT at `path` with `message` (also the only detail). */
export function invalidConfig(path: string, message: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', message, { path, details: [message] });
}

function text(o: Record<string, unknown>, key: string, at: string, fallback = ''): string {
  const v = o[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'string') throw invalidConfig(`${at}.${key}`, `'${key}' must be a string.`);
  return v;
}

function optionalText(o: Record<string, unknown>, key: string, at: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw invalidConfig(`${at}.${key}`, `'${key}' must be a non-empty string.`);
  return v;
}

function bool(o: Record<string, unknown>, key: string, at: string, fallback: boolean): boolean {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw invalidConfig(`${at}.${key}`, `'${key}' must be true or false.`);
  return v;
}

function wholeNumber(
  o: Record<string, unknown>,
  key: string,
  at: string,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalidConfig(`${at}.${key}`, `'${key}' must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}.`);
  }
  return v;
}

function scale(o: Record<string, unknown>, key: string, at: string): number {
  const v = o[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw invalidConfig(`${at}.${key}`, `'${key}' must be a scale denominator (a number, 0 for no limit).`);
  }
  return v;
}

function finite(v: unknown, path: string, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidConfig(path, `${what} must be a number.`);
  return v;
}

/** A file path: relative ones are resolved against `baseDir` when given; URLs stay as they are. */
function filePath(o: Record<string, unknown>, key: string, at: string, what: string, baseDir?: string): string {
  const v = o[key];
  if (typeof v !== 'string' || v.trim() === '') throw invalidConfig(`${at}.${key}`, `'${key}' is required: ${what}.`);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v) || isAbsolute(v) || baseDir === undefined) return v;
  return resolve(baseDir, v);
}

function rgba(v: unknown, path: string): [number, number, number, number] {
  if (
    !Array.isArray(v) ||
    (v.length !== 3 && v.length !== 4) ||
    !v.every((c) => typeof c === 'number' && Number.isInteger(c) && c >= 0 && c <= 255)
  ) {
    throw invalidConfig(path, `A color must be [red, green, blue] or [red, green, blue, alpha] with whole numbers from 0 to 255.`);
  }
  const c = v as number[];
  return [c[0]!, c[1]!, c[2]!, c[3] ?? 255];
}

function extentOf(v: unknown, path: string): Extent {
  if (!isObject(v)) throw invalidConfig(path, `An extent must be an object {xmin, ymin, xmax, ymax}.`);
  const e = {
    xmin: finite(v['xmin'], `${path}.xmin`, `'xmin'`),
    ymin: finite(v['ymin'], `${path}.ymin`, `'ymin'`),
    xmax: finite(v['xmax'], `${path}.xmax`, `'xmax'`),
    ymax: finite(v['ymax'], `${path}.ymax`, `'ymax'`),
  };
  if (e.xmin > e.xmax || e.ymin > e.ymax) throw invalidConfig(path, `The extent's xmin/ymin must not be greater than its xmax/ymax.`);
  return e;
}

/** A coded-value or range domain, Esri JSON style: `{type: 'codedValue', name, codedValues: [{name, code}]}` | `{type: 'range', name, range: [min, max]}`. */
export function parseDomain(v: unknown, path: string): Domain {
  if (!isObject(v)) throw invalidConfig(path, `A domain must be an object with 'type' 'codedValue' or 'range'.`);
  const name = v['name'];
  if (typeof name !== 'string' || name.trim() === '') throw invalidConfig(`${path}.name`, `A domain needs a 'name'.`);
  if (v['type'] === 'codedValue') {
    const values = v['codedValues'];
    if (!Array.isArray(values) || values.length === 0) {
      throw invalidConfig(`${path}.codedValues`, `A coded-value domain needs 'codedValues': [{name, code}, ...].`);
    }
    const seen = new Set<string>();
    const codedValues = values.map((cv: unknown, i) => {
      const at = `${path}.codedValues[${i}]`;
      if (!isObject(cv) || typeof cv['name'] !== 'string') throw invalidConfig(at, `Each coded value must be {name, code}.`);
      const code = cv['code'];
      if (typeof code !== 'string' && (typeof code !== 'number' || !Number.isFinite(code))) {
        throw invalidConfig(`${at}.code`, `A code must be a string or a number.`);
      }
      const key = `${typeof code}:${String(code)}`;
      if (seen.has(key)) throw invalidConfig(`${at}.code`, `The code ${JSON.stringify(code)} is listed twice.`);
      seen.add(key);
      return { name: cv['name'], code };
    });
    return { type: 'codedValue', name, codedValues };
  }
  if (v['type'] === 'range') {
    const r = v['range'];
    if (
      !Array.isArray(r) ||
      r.length !== 2 ||
      !r.every((x) => typeof x === 'number' && Number.isFinite(x)) ||
      (r[0] as number) > (r[1] as number)
    ) {
      throw invalidConfig(`${path}.range`, `A range domain needs 'range': [min, max] with min <= max.`);
    }
    return { type: 'range', name, range: [r[0] as number, r[1] as number] };
  }
  throw invalidConfig(`${path}.type`, `A domain's 'type' must be 'codedValue' or 'range'.`);
}

function parseFields(v: unknown, at: string): Record<string, FieldSettings> {
  if (v === undefined) return {};
  if (!isObject(v))
    throw invalidConfig(at, `'fields' must be an object keyed by field name: {"NAME": {"alias": "...", "domain": {...}, "length": 50}}.`);
  const out: Record<string, FieldSettings> = {};
  const seen = new Set<string>();
  for (const [name, f] of Object.entries(v)) {
    const path = `${at}.${name}`;
    if (seen.has(name.toLowerCase()))
      throw invalidConfig(path, `The field '${name}' is configured twice (field names are not case-sensitive).`);
    seen.add(name.toLowerCase());
    if (!isObject(f)) throw invalidConfig(path, `The settings of field '${name}' must be an object {alias?, domain?, length?}.`);
    const alias = f['alias'];
    if (alias !== undefined && typeof alias !== 'string') throw invalidConfig(`${path}.alias`, `'alias' must be a string.`);
    const length = f['length'];
    if (length !== undefined && (typeof length !== 'number' || !Number.isInteger(length) || length < 1)) {
      throw invalidConfig(`${path}.length`, `'length' must be a whole number from 1.`);
    }
    out[name] = {
      ...(alias === undefined ? {} : { alias }),
      ...(f['domain'] === undefined ? {} : { domain: parseDomain(f['domain'], `${path}.domain`) }),
      ...(length === undefined ? {} : { length: length as number }),
    };
  }
  return out;
}

function parseSubtypes(v: unknown, at: string): Subtypes | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) throw invalidConfig(at, `'subtypes' must be {field, subtypes: [{code, name, domains}]}.`);
  const field = v['field'];
  if (typeof field !== 'string' || field.trim() === '')
    throw invalidConfig(`${at}.field`, `'subtypes.field' must name the integer field holding the subtype code.`);
  const list = v['subtypes'];
  if (!Array.isArray(list) || list.length === 0)
    throw invalidConfig(`${at}.subtypes`, `'subtypes.subtypes' must be a non-empty array of {code, name, domains}.`);
  const codes = new Set<number>();
  const subtypes = list.map((s: unknown, i) => {
    const path = `${at}.subtypes[${i}]`;
    if (!isObject(s)) throw invalidConfig(path, `A subtype must be {code, name, domains}.`);
    const code = s['code'];
    if (typeof code !== 'number' || !Number.isInteger(code))
      throw invalidConfig(`${path}.code`, `A subtype 'code' must be a whole number.`);
    if (codes.has(code)) throw invalidConfig(`${path}.code`, `The subtype code ${code} is listed twice.`);
    codes.add(code);
    const name = s['name'];
    if (typeof name !== 'string' || name.trim() === '') throw invalidConfig(`${path}.name`, `A subtype needs a 'name'.`);
    const d = s['domains'] ?? {};
    if (!isObject(d)) throw invalidConfig(`${path}.domains`, `'domains' must be an object keyed by field name.`);
    const domains: Record<string, Domain> = {};
    for (const [f, dom] of Object.entries(d)) domains[f] = parseDomain(dom, `${path}.domains.${f}`);
    return { code, name, domains };
  });
  return { field, subtypes };
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  txt: 'text/plain',
  csv: 'text/csv',
  json: 'application/json',
  geojson: 'application/geo+json',
  xml: 'application/xml',
  html: 'text/html',
  htm: 'text/html',
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  webp: 'image/webp',
  zip: 'application/zip',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  mp4: 'video/mp4',
  mp3: 'audio/mpeg',
};

/** MIME type of a file name by its extension (`application/octet-stream` when unknown). */
export function contentTypeOf(name: string): string {
  const ext = /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase();
  return (ext && CONTENT_TYPES[ext]) ?? 'application/octet-stream';
}

function parseAttachments(v: unknown, at: string, baseDir?: string): AttachmentSettings[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw invalidConfig(at, `'attachments' must be an array of {featureId, path, name?, contentType?}.`);
  return v.map((a: unknown, i) => {
    const path = `${at}[${i}]`;
    if (!isObject(a)) throw invalidConfig(path, `An attachment must be {featureId, path, name?, contentType?}.`);
    const featureId = a['featureId'];
    if (typeof featureId !== 'number' || !Number.isInteger(featureId) || featureId < 1) {
      throw invalidConfig(`${path}.featureId`, `'featureId' must be the object id (a whole number from 1) of the row the file belongs to.`);
    }
    const file = filePath(a, 'path', path, 'the file to attach', baseDir);
    const name = text(a, 'name', path, file.split(/[\\/]/).pop() ?? file);
    if (name.trim() === '' || /[\\/\0]/.test(name)) throw invalidConfig(`${path}.name`, `'name' must be a file name without folders.`);
    const contentType = text(a, 'contentType', path, contentTypeOf(name));
    if (!/^[\w.+-]+\/[\w.+-]+$/.test(contentType))
      throw invalidConfig(`${path}.contentType`, `'contentType' must be a MIME type such as 'image/png'.`);
    return { featureId, path: file, name, contentType };
  });
}

const OID_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

function tableBase(o: Record<string, unknown>, at: string, what: string, baseDir?: string): Omit<TableSettingsBase, 'name'> {
  const popup = o['popup'];
  if (popup !== undefined && (typeof popup !== 'string' || popup.trim() === '')) {
    throw invalidConfig(`${at}.popup`, `'popup' must be an HTML template such as "<b>{NAME}</b>".`);
  }
  const objectIdField = text(o, 'objectIdField', at, 'OBJECTID');
  if (!OID_NAME.test(objectIdField))
    throw invalidConfig(`${at}.objectIdField`, `'objectIdField' must be a field name (letters, digits, '_').`);
  const displayField = optionalText(o, 'displayField', at);
  const subtypes = parseSubtypes(o['subtypes'], `${at}.subtypes`);
  return {
    path: filePath(o, 'path', at, what, baseDir),
    description: text(o, 'description', at),
    ...(displayField === undefined ? {} : { displayField }),
    ...(popup === undefined ? {} : { popup: popup as string }),
    fields: parseFields(o['fields'], `${at}.fields`),
    ...(subtypes === undefined ? {} : { subtypes }),
    attachments: parseAttachments(o['attachments'], `${at}.attachments`, baseDir),
    objectIdField,
    at,
  };
}

// Renderers ------------------------------------------------------------------------------------

const SMS_STYLES = ['esriSMSCircle', 'esriSMSSquare', 'esriSMSCross', 'esriSMSX', 'esriSMSDiamond', 'esriSMSTriangle'];
const SLS_STYLES = [
  'esriSLSSolid',
  'esriSLSDash',
  'esriSLSDot',
  'esriSLSDashDot',
  'esriSLSDashDotDot',
  'esriSLSNull',
  'esriSLSShortDash',
  'esriSLSShortDot',
  'esriSLSShortDashDot',
  'esriSLSShortDashDotDot',
  'esriSLSLongDash',
  'esriSLSLongDashDot',
];
const SFS_STYLES = [
  'esriSFSSolid',
  'esriSFSNull',
  'esriSFSHollow',
  'esriSFSHorizontal',
  'esriSFSVertical',
  'esriSFSForwardDiagonal',
  'esriSFSBackwardDiagonal',
  'esriSFSCross',
  'esriSFSDiagonalCross',
];

/** The symbol family a renderer draws with: esriSMS (points), esriSLS (lines), esriSFS (polygons). */
export type SymbolFamily = 'esriSMS' | 'esriSLS' | 'esriSFS';

function checkSymbol(v: unknown, path: string, families: Set<SymbolFamily>): void {
  if (!isObject(v)) throw invalidConfig(path, `A symbol must be an object with 'type' esriSMS, esriSLS or esriSFS.`);
  const type = v['type'];
  const style = v['style'];
  const styleCheck = (styles: string[]): void => {
    if (style !== undefined && (typeof style !== 'string' || !styles.includes(style))) {
      throw invalidConfig(`${path}.style`, `'style' must be one of ${styles.join(', ')}.`);
    }
  };
  const colorCheck = (key: string, required: boolean): void => {
    if (v[key] === undefined || v[key] === null) {
      if (required) throw invalidConfig(`${path}.${key}`, `The symbol needs a '${key}' [red, green, blue, alpha].`);
      return;
    }
    rgba(v[key], `${path}.${key}`);
  };
  const numberCheck = (key: string): void => {
    const n = v[key];
    if (n !== undefined && (typeof n !== 'number' || !Number.isFinite(n) || (key !== 'angle' && !key.endsWith('offset') && n < 0))) {
      throw invalidConfig(
        `${path}.${key}`,
        `'${key}' must be a ${key === 'angle' || key.endsWith('offset') ? '' : 'non-negative '}number.`,
      );
    }
  };
  if (type === 'esriSMS') {
    styleCheck(SMS_STYLES);
    colorCheck('color', false);
    for (const k of ['size', 'angle', 'xoffset', 'yoffset']) numberCheck(k);
    if (v['outline'] !== undefined && v['outline'] !== null) {
      const o = v['outline'];
      if (!isObject(o)) throw invalidConfig(`${path}.outline`, `'outline' must be {color, width}.`);
      if (o['color'] !== undefined && o['color'] !== null) rgba(o['color'], `${path}.outline.color`);
      if (o['width'] !== undefined && (typeof o['width'] !== 'number' || !(o['width'] >= 0))) {
        throw invalidConfig(`${path}.outline.width`, `'width' must be a non-negative number.`);
      }
    }
  } else if (type === 'esriSLS') {
    styleCheck(SLS_STYLES);
    colorCheck('color', false);
    numberCheck('width');
  } else if (type === 'esriSFS') {
    styleCheck(SFS_STYLES);
    colorCheck('color', false);
    if (v['outline'] !== undefined && v['outline'] !== null) {
      const o = v['outline'];
      if (!isObject(o)) throw invalidConfig(`${path}.outline`, `'outline' must be an esriSLS symbol.`);
      checkSymbol({ type: 'esriSLS', ...o }, `${path}.outline`, new Set());
    }
  } else {
    throw invalidConfig(`${path}.type`, `A symbol's 'type' must be esriSMS (points), esriSLS (lines) or esriSFS (polygons).`);
  }
  families.add(type);
}

/**
 * Checks an Esri JSON renderer (`simple`, `classBreaks`, `uniqueValue`) and answers the symbol
 * families it uses (matched against the layer's geometry type when the layer opens).
 */
export function checkRenderer(v: unknown, path: string): Set<SymbolFamily> {
  const families = new Set<SymbolFamily>();
  if (!isObject(v))
    throw invalidConfig(path, `'renderer' must be an Esri JSON renderer object ('type' simple, classBreaks or uniqueValue).`);
  const label = (o: Record<string, unknown>, at: string): void => {
    for (const k of ['label', 'description']) {
      if (o[k] !== undefined && o[k] !== null && typeof o[k] !== 'string') throw invalidConfig(`${at}.${k}`, `'${k}' must be a string.`);
    }
  };
  label(v, path);
  switch (v['type']) {
    case 'simple':
      checkSymbol(v['symbol'], `${path}.symbol`, families);
      break;
    case 'classBreaks': {
      if (typeof v['field'] !== 'string' || v['field'] === '')
        throw invalidConfig(`${path}.field`, `A classBreaks renderer needs the numeric 'field' it classifies.`);
      if (v['minValue'] !== undefined && (typeof v['minValue'] !== 'number' || !Number.isFinite(v['minValue']))) {
        throw invalidConfig(`${path}.minValue`, `'minValue' must be a number.`);
      }
      const infos = v['classBreakInfos'];
      if (!Array.isArray(infos) || infos.length === 0)
        throw invalidConfig(
          `${path}.classBreakInfos`,
          `A classBreaks renderer needs 'classBreakInfos': [{classMaxValue, symbol, label}, ...].`,
        );
      let last = -Infinity;
      infos.forEach((info: unknown, i) => {
        const at = `${path}.classBreakInfos[${i}]`;
        if (!isObject(info)) throw invalidConfig(at, `A class break must be {classMaxValue, symbol, label}.`);
        const max = info['classMaxValue'];
        if (typeof max !== 'number' || !Number.isFinite(max))
          throw invalidConfig(`${at}.classMaxValue`, `'classMaxValue' must be a number.`);
        if (max < last) throw invalidConfig(`${at}.classMaxValue`, `Class breaks must be in ascending order of 'classMaxValue'.`);
        last = max;
        label(info, at);
        checkSymbol(info['symbol'], `${at}.symbol`, families);
      });
      if (v['defaultSymbol'] !== undefined && v['defaultSymbol'] !== null)
        checkSymbol(v['defaultSymbol'], `${path}.defaultSymbol`, families);
      break;
    }
    case 'uniqueValue': {
      if (typeof v['field1'] !== 'string' || v['field1'] === '')
        throw invalidConfig(`${path}.field1`, `A uniqueValue renderer needs 'field1', the field whose values pick the symbol.`);
      for (const k of ['field2', 'field3', 'fieldDelimiter']) {
        if (v[k] !== undefined && v[k] !== null && typeof v[k] !== 'string')
          throw invalidConfig(`${path}.${k}`, `'${k}' must be a string.`);
      }
      const infos = v['uniqueValueInfos'];
      if (!Array.isArray(infos))
        throw invalidConfig(`${path}.uniqueValueInfos`, `A uniqueValue renderer needs 'uniqueValueInfos': [{value, symbol, label}, ...].`);
      infos.forEach((info: unknown, i) => {
        const at = `${path}.uniqueValueInfos[${i}]`;
        if (!isObject(info) || (typeof info['value'] !== 'string' && typeof info['value'] !== 'number')) {
          throw invalidConfig(at, `A unique value must be {value, symbol, label} with a string or number 'value'.`);
        }
        label(info, at);
        checkSymbol(info['symbol'], `${at}.symbol`, families);
      });
      if (v['defaultSymbol'] !== undefined && v['defaultSymbol'] !== null)
        checkSymbol(v['defaultSymbol'], `${path}.defaultSymbol`, families);
      break;
    }
    default:
      throw invalidConfig(`${path}.type`, `A renderer's 'type' must be 'simple', 'classBreaks' or 'uniqueValue'.`);
  }
  return families;
}

/** The symbol family that draws a geometry type. */
export function symbolFamilyOf(geometryType: 'point' | 'multipoint' | 'polyline' | 'polygon'): SymbolFamily {
  return geometryType === 'polyline' ? 'esriSLS' : geometryType === 'polygon' ? 'esriSFS' : 'esriSMS';
}

/**
 * The renderer of a layer without one. Decision: one simple renderer per geometry type with fixed
 * colours (the vendor picks random ones at publishing; fixed ones keep maps reproducible).
 */
export function defaultRenderer(geometryType: 'point' | 'multipoint' | 'polyline' | 'polygon'): RendererJson {
  const outline = { type: 'esriSLS', style: 'esriSLSSolid', color: [110, 110, 110, 255], width: 0.7 };
  const symbol =
    geometryType === 'polyline'
      ? { type: 'esriSLS', style: 'esriSLSSolid', color: [78, 78, 78, 255], width: 1 }
      : geometryType === 'polygon'
        ? { type: 'esriSFS', style: 'esriSFSSolid', color: [190, 210, 255, 255], outline }
        : {
            type: 'esriSMS',
            style: 'esriSMSCircle',
            color: [0, 112, 255, 255],
            size: 6,
            angle: 0,
            xoffset: 0,
            yoffset: 0,
            outline: { color: [255, 255, 255, 255], width: 0.7 },
          };
  return { type: 'simple', label: '', description: '', symbol };
}

// Layers, tables, relationships -------------------------------------------------------------------

/** The first `rasterFunction` name in a rule (nested ones included) that the registry does not know. */
function unknownFunction(rule: unknown): string | undefined {
  if (Array.isArray(rule)) {
    for (const r of rule) {
      const u = unknownFunction(r);
      if (u !== undefined) return u;
    }
    return undefined;
  }
  if (!isObject(rule)) return undefined;
  const fn = rule['rasterFunction'];
  if (typeof fn === 'string' && registry.get(fn) === undefined) return fn;
  for (const v of Object.values(rule)) {
    const u = unknownFunction(v);
    if (u !== undefined) return u;
  }
  return undefined;
}

function parseLayer(v: unknown, at: string, baseDir?: string): LayerSettings {
  if (!isObject(v)) throw invalidConfig(at, `A layer must be an object {name, type: 'raster' | 'feature', path, ...}.`);
  const name = v['name'];
  if (typeof name !== 'string' || name.trim() === '') throw invalidConfig(`${at}.name`, `Every layer needs a 'name'.`);
  const common = {
    name: name.trim(),
    description: text(v, 'description', at),
    copyrightText: text(v, 'copyrightText', at),
    minScale: scale(v, 'minScale', at),
    maxScale: scale(v, 'maxScale', at),
    visible: bool(v, 'visible', at, true),
    at,
  };
  if (common.minScale !== 0 && common.maxScale !== 0 && common.maxScale > common.minScale) {
    throw invalidConfig(
      `${at}.maxScale`,
      `'maxScale' (the largest scale, e.g. 1000) must be smaller than 'minScale' (e.g. 500000); 0 means no limit.`,
    );
  }
  if (v['type'] === 'raster') {
    const rule = v['renderingRule'];
    if (rule !== undefined) {
      const parsed = parseRule(rule, `${at}.renderingRule`);
      if (parsed.issues.length > 0)
        throw invalidConfig(`${at}.renderingRule`, `'renderingRule' is not valid: ${parsed.issues[0]!.message}`);
      const unknown = unknownFunction(rule);
      if (unknown !== undefined) {
        throw invalidConfig(`${at}.renderingRule`, `'renderingRule' uses the raster function '${unknown}', which does not exist.`);
      }
    }
    return {
      type: 'raster',
      ...common,
      path: filePath(v, 'path', at, 'the GeoTIFF/COG path or URL of the raster', baseDir),
      ...(rule === undefined ? {} : { renderingRule: rule }),
    };
  }
  if (v['type'] === 'feature') {
    if (v['renderer'] !== undefined) checkRenderer(v['renderer'], `${at}.renderer`);
    const hyperlinkField = optionalText(v, 'hyperlinkField', at);
    return {
      type: 'feature',
      ...common,
      ...tableBase(v, at, 'the GeoJSON file of the features', baseDir),
      ...(v['renderer'] === undefined ? {} : { renderer: v['renderer'] as RendererJson }),
      ...(hyperlinkField === undefined ? {} : { hyperlinkField }),
    };
  }
  throw invalidConfig(`${at}.type`, `A layer's 'type' must be 'raster' (a GeoTIFF/COG) or 'feature' (a GeoJSON file).`);
}

function parseTable(v: unknown, at: string, baseDir?: string): TableSettings {
  if (!isObject(v)) throw invalidConfig(at, `A table must be an object {name, path, ...}.`);
  const name = v['name'];
  if (typeof name !== 'string' || name.trim() === '') throw invalidConfig(`${at}.name`, `Every table needs a 'name'.`);
  return { name: name.trim(), ...tableBase(v, at, 'a GeoJSON file (null geometries) or a JSON array of row objects', baseDir) };
}

const CARDINALITY: Readonly<Record<string, 'oneToOne' | 'oneToMany'>> = {
  onetoone: 'oneToOne',
  onetomany: 'oneToMany',
  esrirelcardinalityonetoone: 'oneToOne',
  esrirelcardinalityonetomany: 'oneToMany',
};

function parseRelationship(v: unknown, at: string, names: readonly string[]): RelationshipSettings {
  if (!isObject(v)) throw invalidConfig(at, `A relationship must be {name, origin, destination, originKey, destinationKey, cardinality}.`);
  const name = v['name'];
  if (typeof name !== 'string' || name.trim() === '') throw invalidConfig(`${at}.name`, `Every relationship needs a 'name'.`);
  const end = (key: 'origin' | 'destination'): number => {
    const x = v[key];
    if (typeof x === 'number' && Number.isInteger(x) && x >= 0 && x < names.length) return x;
    if (typeof x === 'string') {
      const i = names.findIndex((n) => n.toLowerCase() === x.trim().toLowerCase());
      if (i >= 0) return i;
    }
    throw invalidConfig(
      `${at}.${key}`,
      `'${key}' must name a layer or table of this service (by name or id): ${names.map((n, i) => `${i} '${n}'`).join(', ')}.`,
    );
  };
  const origin = end('origin');
  const destination = end('destination');
  if (origin === destination) throw invalidConfig(`${at}.destination`, `A relationship must join two different layers or tables.`);
  const key = (k: 'originKey' | 'destinationKey'): string => {
    const x = v[k];
    if (typeof x !== 'string' || x.trim() === '') throw invalidConfig(`${at}.${k}`, `'${k}' must name the field that joins the two sides.`);
    return x.trim();
  };
  const c = v['cardinality'] ?? 'oneToMany';
  const cardinality = typeof c === 'string' ? CARDINALITY[c.toLowerCase()] : undefined;
  if (!cardinality) throw invalidConfig(`${at}.cardinality`, `'cardinality' must be 'oneToOne' or 'oneToMany'.`);
  return { name: name.trim(), origin, destination, originKey: key('originKey'), destinationKey: key('destinationKey'), cardinality, at };
}

function parseTiling(v: unknown, at: string): TilingSettings {
  if (v === undefined) return { dpi: 96, tileSize: 256, format: 'PNG', quality: 75, clientCachingAllowed: true };
  if (!isObject(v))
    throw invalidConfig(at, `'tiling' must be an object {dpi, tileSize, format, quality, levels, origin, clientCachingAllowed}.`);
  const dpi = v['dpi'] ?? 96;
  if (typeof dpi !== 'number' || !Number.isFinite(dpi) || dpi < 1 || dpi > 2400)
    throw invalidConfig(`${at}.dpi`, `'dpi' must be a number from 1 to 2400.`);
  const tileSize = wholeNumber(v, 'tileSize', at, 256, 16, 4096);
  const format = v['format'] ?? 'PNG';
  if (typeof format !== 'string' || !['PNG', 'JPEG', 'MIXED'].includes(format.toUpperCase())) {
    throw invalidConfig(`${at}.format`, `'format' must be PNG, JPEG or MIXED.`);
  }
  const quality = wholeNumber(v, 'quality', at, 75, 1, 100);
  let levels: number | LevelOfDetail[] | undefined;
  const l = v['levels'];
  if (typeof l === 'number') levels = wholeNumber(v, 'levels', at, 0, 1, 30);
  else if (Array.isArray(l)) {
    if (l.length === 0) throw invalidConfig(`${at}.levels`, `'levels' must not be empty.`);
    levels = l.map((x: unknown, i) => {
      const p = `${at}.levels[${i}]`;
      if (!isObject(x)) throw invalidConfig(p, `A level must be {level?, scale} or {level?, resolution}.`);
      const level = x['level'] ?? i;
      if (typeof level !== 'number' || !Number.isInteger(level) || level < 0)
        throw invalidConfig(`${p}.level`, `'level' must be a whole number from 0.`);
      const s = x['scale'];
      const r = x['resolution'];
      if (
        (s !== undefined && (typeof s !== 'number' || !(s > 0))) ||
        (r !== undefined && (typeof r !== 'number' || !(r > 0))) ||
        (s === undefined && r === undefined)
      ) {
        throw invalidConfig(p, `A level needs a positive 'scale' or 'resolution'.`);
      }
      return { level, scale: (s as number | undefined) ?? NaN, resolution: (r as number | undefined) ?? NaN };
    });
    for (let i = 1; i < levels.length; i++) {
      const a = levels[i - 1]!;
      const b = levels[i]!;
      if (b.level <= a.level) throw invalidConfig(`${at}.levels[${i}].level`, `Levels must be listed in ascending order of 'level'.`);
      const sa = Number.isNaN(a.scale) ? a.resolution : a.scale;
      const sb = Number.isNaN(b.scale) ? b.resolution : b.scale;
      if (!(sb < sa))
        throw invalidConfig(`${at}.levels[${i}]`, `Each level must be finer (smaller scale or resolution) than the one before.`);
    }
  } else if (l !== undefined)
    throw invalidConfig(`${at}.levels`, `'levels' must be a number of levels or an array of {level, scale | resolution}.`);
  let origin: { x: number; y: number } | undefined;
  if (v['origin'] !== undefined) {
    const o = v['origin'];
    if (!isObject(o)) throw invalidConfig(`${at}.origin`, `'origin' must be {x, y}: the top-left corner of the tiling.`);
    origin = { x: finite(o['x'], `${at}.origin.x`, `'x'`), y: finite(o['y'], `${at}.origin.y`, `'y'`) };
  }
  return {
    dpi,
    tileSize,
    format: format.toUpperCase() as TilingSettings['format'],
    quality,
    ...(levels === undefined ? {} : { levels }),
    ...(origin === undefined ? {} : { origin }),
    clientCachingAllowed: bool(v, 'clientCachingAllowed', at, true),
  };
}

/**
 * Checks the `properties` of a MapServer record and fills in the defaults. Relative file paths are
 * resolved against `baseDir` when given (a `--config` file's folder; the test fixtures' folder);
 * without it they stay as written (then relative to the server's working folder).
 */
export function parseMapServiceProperties(record: Pick<ServiceRecord, 'properties' | 'description'>, baseDir?: string): MapServiceSettings {
  const p = record.properties;
  const at = (k: string): string => `service.properties.${k}`;
  const rawLayers = p['layers'];
  if (!Array.isArray(rawLayers) || rawLayers.length === 0) {
    throw invalidConfig(
      at('layers'),
      `A map service needs 'properties.layers': an array of raster and feature layers (the first is drawn on top).`,
    );
  }
  const layers = rawLayers.map((l: unknown, i) => parseLayer(l, `${at('layers')}[${i}]`, baseDir));
  const rawTables = p['tables'] ?? [];
  if (!Array.isArray(rawTables)) throw invalidConfig(at('tables'), `'tables' must be an array of standalone tables {name, path, ...}.`);
  const tables = rawTables.map((t: unknown, i) => parseTable(t, `${at('tables')}[${i}]`, baseDir));
  const names = [...layers.map((l) => l.name), ...tables.map((t) => t.name)];
  const seen = new Map<string, number>();
  names.forEach((n, i) => {
    const prev = seen.get(n.toLowerCase());
    if (prev !== undefined) {
      const where = i < layers.length ? `${at('layers')}[${i}]` : `${at('tables')}[${i - layers.length}]`;
      throw invalidConfig(`${where}.name`, `The name '${n}' is used twice (layer and table names must differ, ignoring case).`);
    }
    seen.set(n.toLowerCase(), i);
  });
  const rawRelationships = p['relationships'] ?? [];
  if (!Array.isArray(rawRelationships))
    throw invalidConfig(
      at('relationships'),
      `'relationships' must be an array of {name, origin, destination, originKey, destinationKey, cardinality}.`,
    );
  const relationships = rawRelationships.map((r: unknown, i) => parseRelationship(r, `${at('relationships')}[${i}]`, names));
  const mapName = text(p, 'mapName', 'service.properties', DEFAULT_MAP_NAME);
  if (mapName.trim() === '') throw invalidConfig(at('mapName'), `'mapName' must not be empty.`);
  const anonymous = p['anonymous'];
  if (anonymous !== undefined && typeof anonymous !== 'boolean') throw invalidConfig(at('anonymous'), `'anonymous' must be true or false.`);
  const rawBookmarks = p['bookmarks'] ?? [];
  if (!Array.isArray(rawBookmarks)) throw invalidConfig(at('bookmarks'), `'bookmarks' must be an array of {name, extent}.`);
  const bookmarks = rawBookmarks.map((b: unknown, i) => {
    const path = `${at('bookmarks')}[${i}]`;
    if (!isObject(b) || typeof b['name'] !== 'string' || b['name'].trim() === '')
      throw invalidConfig(path, `A bookmark must be {name, extent: {xmin, ymin, xmax, ymax}}.`);
    return { name: b['name'], extent: extentOf(b['extent'], `${path}.extent`) };
  });
  return {
    layers,
    tables,
    relationships,
    mapName,
    description: record.description ?? text(p, 'description', 'service.properties'),
    copyrightText: text(p, 'copyrightText', 'service.properties'),
    anonymous: anonymous === true,
    maxRecordCount: wholeNumber(p, 'maxRecordCount', 'service.properties', DEFAULT_MAP_MAX_RECORD_COUNT, 1),
    maxImageWidth: wholeNumber(p, 'maxImageWidth', 'service.properties', DEFAULT_MAP_MAX_IMAGE_WIDTH, 1),
    maxImageHeight: wholeNumber(p, 'maxImageHeight', 'service.properties', DEFAULT_MAP_MAX_IMAGE_HEIGHT, 1),
    backgroundColor: p['backgroundColor'] === undefined ? DEFAULT_BACKGROUND_COLOR : rgba(p['backgroundColor'], at('backgroundColor')),
    bookmarks,
    tiling: parseTiling(p['tiling'], at('tiling')),
  };
}

/**
 * A copy of a MapServer record whose relative file paths (layers, tables, attachments) are made
 * absolute against `baseDir`: what `--config` and tests store, so the service opens from any folder.
 */
export function withResolvedMapPaths<R extends Pick<ServiceRecord, 'properties'>>(record: R, baseDir: string): R {
  const fix = (v: unknown): unknown =>
    typeof v === 'string' && v !== '' && !/^[a-z][a-z0-9+.-]*:\/\//i.test(v) && !isAbsolute(v) ? resolve(baseDir, v) : v;
  const entry = (e: unknown): unknown => {
    if (!isObject(e)) return e;
    const out: Record<string, unknown> = { ...e, path: fix(e['path']) };
    if (Array.isArray(e['attachments']))
      out['attachments'] = e['attachments'].map((a: unknown) => (isObject(a) ? { ...a, path: fix(a['path']) } : a));
    return out;
  };
  const p = record.properties;
  return {
    ...record,
    properties: {
      ...p,
      ...(Array.isArray(p['layers']) ? { layers: p['layers'].map(entry) } : {}),
      ...(Array.isArray(p['tables']) ? { tables: p['tables'].map(entry) } : {}),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Tile scheme

/** True for Web Mercator (3857, 102100, 900913, 102113). */
export function isWebMercator(sr: SpatialReference): boolean {
  return sr.wkid === 3857 || sr.wkid === 102100 || sr.wkid === 900913 || sr.wkid === 102113;
}

/** Metres per map unit: 1 for metres, the unit's size for projected systems, metres per degree for geographic ones. */
/**
 * The tile scheme of a map. Explicit levels are completed (scale from resolution or back). Else
 * Web Mercator maps get the standard levels 0-19 and origin; other maps get origin = the full
 * extent's top-left corner, level 0 covering the full extent in one tile, each level halving the
 * resolution until it reaches the finest raster cell (`finestCell`, map units), else 1:1000.
 * Decision: a map that also has feature layers goes on to 1:1000 when that is finer than its
 * rasters' cells (vectors stay sharp at any scale; a 90 m DEM alone would allow a single level).
 * `levels` as a count caps the number of levels.
 */
export function tileSchemeOf(
  tiling: TilingSettings,
  sr: SpatialReference,
  fullExtent: Extent,
  finestCell: number | undefined,
  cacheDir: string,
  hasFeatureLayers = false,
): TileScheme {
  const { dpi, tileSize } = tiling;
  const base = {
    rows: tileSize,
    cols: tileSize,
    dpi,
    format: tiling.format,
    quality: tiling.quality,
    clientCachingAllowed: tiling.clientCachingAllowed,
    cacheDir,
  };
  if (Array.isArray(tiling.levels)) {
    const lods = (tiling.levels as readonly LevelOfDetail[]).map((l) => {
      const resolution = Number.isNaN(l.resolution) ? resolutionOf(l.scale, dpi, sr) : l.resolution;
      const s = Number.isNaN(l.scale) ? scaleOf(l.resolution, dpi, sr) : l.scale;
      return { level: l.level, scale: s, resolution };
    });
    const origin = tiling.origin ?? (isWebMercator(sr) ? WEB_MERCATOR_ORIGIN : { x: fullExtent.xmin, y: fullExtent.ymax });
    return { ...base, origin: { x: origin.x, y: origin.y }, lods };
  }
  const cap = typeof tiling.levels === 'number' ? tiling.levels : undefined;
  if (isWebMercator(sr)) {
    const count = Math.min(cap ?? WEB_MERCATOR_LEVELS, WEB_MERCATOR_LEVELS);
    // The standard levels are for 256-pixel tiles at 96 DPI; other sizes/DPIs keep the resolutions
    // (so tiles of different schemes line up) and scale the scales.
    const lods: LevelOfDetail[] = [];
    for (let level = 0; level < count; level++) {
      const resolution = (WEB_MERCATOR_LEVEL0.resolution * 256) / tileSize / 2 ** level;
      const s = tileSize === 256 && dpi === 96 ? WEB_MERCATOR_LEVEL0.scale / 2 ** level : scaleOf(resolution, dpi, sr);
      lods.push({ level, scale: s, resolution });
    }
    const origin = tiling.origin ?? WEB_MERCATOR_ORIGIN;
    return { ...base, origin: { x: origin.x, y: origin.y }, lods };
  }
  const span = Math.max(fullExtent.xmax - fullExtent.xmin, fullExtent.ymax - fullExtent.ymin);
  const level0 = span > 0 ? span / tileSize : (finestCell ?? resolutionOf(1000, dpi, sr));
  const atThousand = resolutionOf(1000, dpi, sr);
  const cell = finestCell !== undefined && finestCell > 0 ? finestCell : undefined;
  const finest = cell === undefined ? atThousand : hasFeatureLayers ? Math.min(cell, atThousand) : cell;
  const lods: LevelOfDetail[] = [];
  for (let level = 0; ; level++) {
    const resolution = level0 / 2 ** level;
    lods.push({ level, scale: scaleOf(resolution, dpi, sr), resolution });
    if (resolution <= finest * (1 + 1e-9) || level >= 29 || (cap !== undefined && lods.length >= cap)) break;
  }
  const origin = tiling.origin ?? { x: fullExtent.xmin, y: fullExtent.ymax };
  return { ...base, origin: { x: origin.x, y: origin.y }, lods };
}

/**
 * The feature store of the map service: the feature layers and standalone tables of one service
 * version imported into one SQLite database (better-sqlite3), `<serviceDir>/<version>.sqlite`.
 *
 * Import (once per version, in one transaction, into a temporary file renamed into place when
 * complete; the `meta` row `complete` marks it): GeoJSON features (or a JSON array of row objects
 * for tables) become rows with typed attribute columns — Integer / Double / String / Date (ISO 8601
 * strings; kept as UTC milliseconds) inferred per property — the object id column (`OBJECTID`
 * numbered 1..n in file order unless configured), the geometry as GeoJSON text, and SQLite's
 * built-in R*Tree on the geometry envelopes. Features are reprojected into the map's spatial
 * reference when their GeoJSON names another (`crs`; EPSG:4326 when none). Attachments are copied
 * under `<serviceDir>/attachments/<version>/`. A reopened version whose source files are unchanged
 * is used as it is; otherwise it is imported again.
 *
 * Queries never concatenate client text into SQL: the where clause goes through `where.ts`, field
 * names are checked against the field list and quoted, every value is a bound parameter.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { proj4ForEpsg } from '../../core/crs.js';
import { EngineError } from '../../core/errors.js';
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import type { AttachmentSettings, FieldSettings } from './config.js';
import { invalidConfig } from './config.js';
import type {
  AttachmentInfo,
  AttributeValue,
  FeatureQuery,
  FeatureRow,
  FeatureTable,
  FieldInfo,
  FieldType,
  Geometry,
  StatisticRequest,
  Subtypes,
} from './model.js';
import { envelopeOf, mapCoordinates, maskAllowsDisjoint, spatialTest, transformBetween } from './spatial.js';
import { compileWhere, parseDateLiteral, quoteIdentifier } from './where.js';

/** Bumped when the database layout changes: older files are imported again. */
const STORE_FORMAT = '1';
/** Largest GeoJSON/JSON source read (bytes). */
const MAX_SOURCE_BYTES = 512 * 1024 * 1024;
/** Column of the geometry (GeoJSON text); field names that collide with it are renamed. */
const GEOMETRY_COLUMN = '_geometry';

// ---------------------------------------------------------------------------------------------
// What the store imports

export interface TableSource {
  /** Layer/table id in the service (SQL tables are `t<id>`). */
  readonly id: number;
  readonly name: string;
  /** Feature layers keep geometries; tables have none. */
  readonly kind: 'feature' | 'table';
  readonly path: string;
  readonly fields: Readonly<Record<string, FieldSettings>>;
  readonly objectIdField: string;
  readonly attachments: readonly AttachmentSettings[];
  readonly subtypes?: Subtypes;
  /** JSON path of the entry, for errors found while importing (`service.properties.layers[2]`). */
  readonly at: string;
}

export interface FeatureStoreOptions {
  /** `<serviceDir>/<version>.sqlite`. */
  readonly file: string;
  /** Where the attachments of this version are copied. */
  readonly attachmentsDir: string;
  readonly sources: readonly TableSource[];
  /** The map's spatial reference; undefined = the first feature layer's. */
  readonly spatialReference?: SpatialReference;
  /** Rows a query returns at most when it gives no limit. */
  readonly maxRecordCount: number;
}

export interface FeatureStore {
  /** The tables by layer/table id. */
  readonly tables: ReadonlyMap<number, SqliteFeatureTable>;
  /** The map's spatial reference (given, else the first feature layer's). */
  readonly spatialReference: SpatialReference | undefined;
  /** True when this open imported the sources (false when it reused a complete database). */
  readonly imported: boolean;
  readonly file: string;
  close(): void;
}

// ---------------------------------------------------------------------------------------------
// Reading sources

interface SourceRow {
  readonly properties: Record<string, unknown>;
  readonly geometry: Geometry | null;
}

interface ReadSource {
  readonly rows: SourceRow[];
  readonly spatialReference: SpatialReference | undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const GEOMETRY_TYPES = new Set(['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon']);

/** The EPSG code a GeoJSON `crs` member names (`EPSG:x`, `urn:ogc:def:crs:EPSG::x`, CRS84 = 4326). */
export function epsgOfCrs(crs: unknown): number | undefined {
  if (!isObject(crs)) return undefined;
  const props = crs['properties'];
  const name = isObject(props) ? props['name'] : undefined;
  if (typeof name !== 'string') return undefined;
  if (/CRS:?84$/i.test(name)) return 4326;
  const m = /EPSG:{1,2}(?:[\d.]*:)?(\d+)$/i.exec(name) ?? /^(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

const GEOGRAPHIC_EPSG = new Set([4326, 4269, 4258, 4283, 4674, 4167, 4148, 4617, 4019]);

function spatialReferenceOfEpsg(code: number, path: string): SpatialReference {
  const proj4 = proj4ForEpsg(code);
  if (proj4 === undefined)
    throw invalidConfig(path, `The GeoJSON names the coordinate system EPSG:${code}, which this server does not know.`);
  const geographic = GEOGRAPHIC_EPSG.has(code) || /\+proj=longlat/.test(proj4);
  return geographic ? { wkid: code, proj4, geographic: true } : { wkid: code, proj4, metersPerUnit: 1 };
}

function checkGeometry(g: unknown, path: string): Geometry | null {
  if (g === null || g === undefined) return null;
  if (!isObject(g) || typeof g['type'] !== 'string' || !GEOMETRY_TYPES.has(g['type']) || !Array.isArray(g['coordinates'])) {
    throw invalidConfig(
      path,
      `A feature's geometry must be a GeoJSON Point, MultiPoint, LineString, MultiLineString, Polygon or MultiPolygon.`,
    );
  }
  const depth = { Point: 0, MultiPoint: 1, LineString: 1, MultiLineString: 2, Polygon: 2, MultiPolygon: 3 }[g['type'] as Geometry['type']];
  const check = (c: unknown, d: number): boolean =>
    d === 0
      ? Array.isArray(c) && c.length >= 2 && c.every((x) => typeof x === 'number' && Number.isFinite(x))
      : Array.isArray(c) && c.every((x) => check(x, d - 1));
  if (!check(g['coordinates'], depth)) throw invalidConfig(path, `A ${g['type']}'s coordinates are not nested arrays of [x, y] numbers.`);
  return { type: g['type'], coordinates: g['coordinates'] } as Geometry;
}

async function readSource(src: TableSource): Promise<ReadSource> {
  const at = `${src.at}.path`;
  let text: string;
  try {
    const size = statSync(src.path).size;
    if (size > MAX_SOURCE_BYTES) throw invalidConfig(at, `'${src.path}' is larger than ${MAX_SOURCE_BYTES / 1024 / 1024} MB.`);
    text = await readFile(src.path, 'utf8');
  } catch (e) {
    if (e instanceof EngineError) throw e;
    const msg = `Cannot read '${src.path}' (${src.kind === 'feature' ? 'layer' : 'table'} '${src.name}'): ${(e as NodeJS.ErrnoException).code ?? String(e)}.`;
    throw new EngineError('IO_ERROR', msg, { path: at, details: [msg] });
  }
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch (e) {
    throw invalidConfig(at, `'${src.path}' is not valid JSON: ${e instanceof Error ? e.message : String(e)}.`);
  }
  let sr: SpatialReference | undefined;
  let rows: SourceRow[];
  if (Array.isArray(json)) {
    if (src.kind === 'feature')
      throw invalidConfig(at, `A feature layer's file must be GeoJSON (a FeatureCollection); '${src.path}' is a plain array.`);
    rows = json.map((r: unknown, i) => {
      if (!isObject(r)) throw invalidConfig(at, `Row ${i + 1} of '${src.path}' is not a JSON object.`);
      return { properties: r, geometry: null };
    });
  } else if (isObject(json) && (json['type'] === 'FeatureCollection' || json['type'] === 'Feature')) {
    const features = json['type'] === 'Feature' ? [json] : json['features'];
    if (!Array.isArray(features)) throw invalidConfig(at, `'${src.path}' is a FeatureCollection without a 'features' array.`);
    const code = epsgOfCrs(json['crs']);
    sr = spatialReferenceOfEpsg(code ?? 4326, at);
    rows = features.map((f: unknown, i) => {
      if (!isObject(f) || f['type'] !== 'Feature') throw invalidConfig(at, `Feature ${i + 1} of '${src.path}' is not a GeoJSON Feature.`);
      const p = f['properties'];
      if (p !== null && p !== undefined && !isObject(p))
        throw invalidConfig(at, `Feature ${i + 1} of '${src.path}' has properties that are not an object.`);
      const geometry = src.kind === 'feature' ? checkGeometry(f['geometry'], at) : null;
      const properties: Record<string, unknown> = { ...(p ?? {}) };
      return { properties, geometry };
    });
    // Decision: the Features' `id`s are the object ids when every Feature has a unique positive
    // whole-number id and no property already holds object ids.
    const fids = (features as Record<string, unknown>[]).map((f) => f['id']);
    const oid = src.objectIdField.toUpperCase();
    if (
      fids.length > 0 &&
      fids.every((v) => typeof v === 'number' && Number.isInteger(v) && v > 0) &&
      new Set(fids).size === fids.length &&
      !rows.some((r) => Object.keys(r.properties).some((k) => k.toUpperCase() === oid))
    ) {
      rows = rows.map((r, i) => ({ ...r, properties: { [src.objectIdField]: fids[i], ...r.properties } }));
    }
  } else {
    throw invalidConfig(
      at,
      `'${src.path}' must be a GeoJSON FeatureCollection${src.kind === 'table' ? ' or a JSON array of row objects' : ''}.`,
    );
  }
  return { rows, spatialReference: sr };
}

// ---------------------------------------------------------------------------------------------
// Schema inference

interface Column {
  /** Stored field name (also the SQL column). */
  readonly name: string;
  /** Property name in the source. */
  readonly source: string;
  readonly type: FieldType;
  readonly length: number;
}

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const INT32 = 2 ** 31;

function fieldNameOf(property: string, taken: Set<string>): string {
  let base = property.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 60);
  if (!/^[A-Za-z_]/.test(base)) base = `F_${base}`;
  if (!FIELD_NAME.test(base)) base = 'FIELD';
  let name = base;
  for (let i = 1; taken.has(name.toUpperCase()); i++) name = `${base}_${i}`;
  taken.add(name.toUpperCase());
  return name;
}

function inferType(values: unknown[]): { type: FieldType; length: number } {
  const present = values.filter((v) => v !== null && v !== undefined);
  if (present.length === 0) return { type: 'geoFieldTypeString', length: 1 };
  if (present.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    const ints = (present as number[]).every((v) => Number.isInteger(v) && Math.abs(v) < INT32);
    return { type: ints ? 'geoFieldTypeInteger' : 'geoFieldTypeDouble', length: 0 };
  }
  if (present.every((v) => typeof v === 'boolean')) return { type: 'geoFieldTypeSmallInteger', length: 0 };
  if (present.every((v) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) && parseDateLiteral(v) !== undefined)) {
    return { type: 'geoFieldTypeDate', length: 8 };
  }
  const texts = present.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  return { type: 'geoFieldTypeString', length: Math.max(1, ...texts.map((t) => [...t].length)) };
}

function storedValue(v: unknown, type: FieldType): string | number | null {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'geoFieldTypeDate':
      return parseDateLiteral(v as string) ?? null;
    case 'geoFieldTypeSmallInteger':
      return typeof v === 'boolean' ? (v ? 1 : 0) : (v as number);
    case 'geoFieldTypeInteger':
    case 'geoFieldTypeDouble':
    case 'geoFieldTypeOID':
      return v as number;
    default:
      return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
  }
}

const SQL_TYPE: Partial<Record<FieldType, string>> = {
  geoFieldTypeOID: 'INTEGER',
  geoFieldTypeInteger: 'INTEGER',
  geoFieldTypeSmallInteger: 'INTEGER',
  geoFieldTypeDouble: 'REAL',
  geoFieldTypeSingle: 'REAL',
  geoFieldTypeDate: 'INTEGER',
  geoFieldTypeString: 'TEXT',
  geoFieldTypeGUID: 'TEXT',
  geoFieldTypeGlobalID: 'TEXT',
};

// ---------------------------------------------------------------------------------------------
// Import

interface Meta {
  readonly format: string;
  readonly complete: string;
  readonly fingerprint: string;
  readonly spatialReference: string;
}

/** Size and modification time of every source file: a changed file means a new import. */
function fingerprintOf(sources: readonly TableSource[]): string {
  const parts: string[] = [];
  const add = (p: string): void => {
    try {
      const s = statSync(p);
      parts.push(`${p}:${s.size}:${Math.round(s.mtimeMs)}`);
    } catch {
      parts.push(`${p}:missing`);
    }
  };
  for (const s of sources) {
    add(s.path);
    for (const a of s.attachments) add(a.path);
  }
  return parts.join('|');
}

function readMeta(db: Database.Database): Partial<Meta> {
  try {
    const rows = db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[];
    return Object.fromEntries(rows.map((r) => [r.key, r.value])) as Partial<Meta>;
  } catch {
    return {};
  }
}

/** Files of this process's open stores (with how many opens): never deleted as stale versions. */
const openFiles = new Map<string, number>();

async function importInto(db: Database.Database, options: FeatureStoreOptions, fingerprint: string): Promise<SpatialReference | undefined> {
  const read: ReadSource[] = [];
  for (const src of options.sources) read.push(await readSource(src));
  let target = options.spatialReference;
  if (target === undefined) {
    const first = options.sources.findIndex((s) => s.kind === 'feature');
    target = first >= 0 ? read[first]!.spatialReference : undefined;
  }
  mkdirSync(options.attachmentsDir, { recursive: true });
  const tx = db.transaction(() => {
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE tables (id INTEGER PRIMARY KEY, name TEXT NOT NULL, info TEXT NOT NULL);
      CREATE TABLE attachments (tableId INTEGER NOT NULL, id INTEGER NOT NULL, parentId INTEGER NOT NULL, name TEXT NOT NULL,
        contentType TEXT NOT NULL, size INTEGER NOT NULL, file TEXT NOT NULL, PRIMARY KEY (tableId, id));`);
    options.sources.forEach((src, i) => importTable(db, src, read[i]!, target, options.attachmentsDir));
    const meta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
    meta.run('format', STORE_FORMAT);
    meta.run('fingerprint', fingerprint);
    meta.run('spatialReference', JSON.stringify(target ?? null));
    meta.run('complete', '1');
  });
  tx();
  return target;
}

interface TableInfo {
  readonly name: string;
  readonly kind: 'feature' | 'table';
  readonly objectIdField: string;
  readonly fields: FieldInfo[];
  readonly geometryType: FeatureTable['geometryType'];
  readonly extent?: Extent;
}

function importTable(
  db: Database.Database,
  src: TableSource,
  read: ReadSource,
  target: SpatialReference | undefined,
  attachmentsDir: string,
): void {
  const at = src.at;
  const rows = read.rows;
  // Object ids: a property named objectIdField with unique positive integers, else 1..n.
  const oidKey = Object.keys(rows[0]?.properties ?? {}).find((k) => k.toUpperCase() === src.objectIdField.toUpperCase());
  let ids: number[] | undefined;
  if (oidKey !== undefined) {
    const vals = rows.map((r) => r.properties[oidKey]);
    const unique = new Set(vals);
    if (vals.every((v) => typeof v === 'number' && Number.isInteger(v) && v > 0) && unique.size === vals.length) ids = vals as number[];
  }
  const taken = new Set<string>([GEOMETRY_COLUMN.toUpperCase()]);
  const oidName = ids !== undefined && oidKey !== undefined ? oidKey : src.objectIdField;
  taken.add(oidName.toUpperCase());
  // Properties in order of first appearance.
  const order: string[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    for (const k of Object.keys(r.properties)) {
      if (!seen.has(k)) {
        seen.add(k);
        if (!(ids !== undefined && k === oidKey)) order.push(k);
      }
    }
  }
  const shapeName = src.kind === 'feature' ? fieldNameOf('SHAPE', new Set([...taken, ...order.map((k) => k.toUpperCase())])) : undefined;
  if (shapeName) taken.add(shapeName.toUpperCase());
  const columns: Column[] = order.map((k) => {
    const name = fieldNameOf(k, taken);
    const { type, length } = inferType(rows.map((r) => r.properties[k]));
    return { name, source: k, type, length };
  });
  // Geometry type of a feature layer.
  let geometryType: TableInfo['geometryType'] = null;
  if (src.kind === 'feature') {
    const kinds = new Set(rows.map((r) => r.geometry?.type).filter((t): t is Geometry['type'] => t !== undefined));
    const dims = new Set([...kinds].map((t) => (t.endsWith('Point') ? 0 : t.endsWith('LineString') ? 1 : 2)));
    if (dims.size > 1)
      throw invalidConfig(
        `${at}.path`,
        `Layer '${src.name}' mixes ${[...kinds].join(', ')} geometries; a layer holds one kind (points, lines or polygons).`,
      );
    geometryType = kinds.has('MultiPoint')
      ? 'multipoint'
      : kinds.has('Point')
        ? 'point'
        : dims.has(1)
          ? 'polyline'
          : dims.has(2)
            ? 'polygon'
            : 'point';
  }
  // Configured fields must exist.
  const byUpper = new Map(columns.map((c) => [c.name.toUpperCase(), c] as const));
  const sourceUpper = new Map(columns.map((c) => [c.source.toUpperCase(), c] as const));
  for (const name of Object.keys(src.fields)) {
    const up = name.toUpperCase();
    if (!byUpper.has(up) && !sourceUpper.has(up) && up !== oidName.toUpperCase()) {
      throw invalidConfig(
        `${at}.fields.${name}`,
        `'${name}' is not a field of '${src.path}' (fields: ${[oidName, ...columns.map((c) => c.name)].join(', ')}).`,
      );
    }
  }
  const settingsOf = (name: string, source?: string): FieldSettings | undefined => {
    const key = Object.keys(src.fields).find(
      (k) => k.toUpperCase() === name.toUpperCase() || (source !== undefined && k.toUpperCase() === source.toUpperCase()),
    );
    return key === undefined ? undefined : src.fields[key];
  };
  const fields: FieldInfo[] = [];
  const oidSettings = settingsOf(oidName);
  fields.push({
    name: oidName,
    type: 'geoFieldTypeOID',
    alias: oidSettings?.alias ?? oidName,
    length: 0,
    nullable: false,
    editable: false,
  });
  if (shapeName)
    fields.push({ name: shapeName, type: 'geoFieldTypeGeometry', alias: shapeName, length: 0, nullable: true, editable: true });
  for (const c of columns) {
    const s = settingsOf(c.name, c.source);
    fields.push({
      name: c.name,
      type: c.type,
      alias: s?.alias ?? c.name,
      length: s?.length ?? (c.type === 'geoFieldTypeString' ? c.length : 0),
      nullable: true,
      editable: true,
      ...(s?.domain ? { domain: s.domain } : {}),
    });
  }
  if (src.subtypes) {
    const f = fields.find((x) => x.name.toUpperCase() === src.subtypes!.field.toUpperCase());
    if (!f || (f.type !== 'geoFieldTypeInteger' && f.type !== 'geoFieldTypeSmallInteger')) {
      throw invalidConfig(`${at}.subtypes.field`, `The subtype field '${src.subtypes.field}' must be an integer field of '${src.path}'.`);
    }
    src.subtypes.subtypes.forEach((st, i) => {
      for (const name of Object.keys(st.domains)) {
        if (!fields.some((x) => x.name.toUpperCase() === name.toUpperCase())) {
          throw invalidConfig(`${at}.subtypes.subtypes[${i}].domains.${name}`, `'${name}' is not a field of '${src.path}'.`);
        }
      }
    });
  }
  // Table, rows, R*Tree.
  const t = `t${src.id}`;
  const cols = [
    `${quoteIdentifier(oidName)} INTEGER PRIMARY KEY`,
    ...columns.map((c) => `${quoteIdentifier(c.name)} ${SQL_TYPE[c.type] ?? 'TEXT'}`),
  ];
  if (src.kind === 'feature') cols.push(`${quoteIdentifier(GEOMETRY_COLUMN)} TEXT`);
  db.exec(`CREATE TABLE ${t} (${cols.join(', ')})`);
  if (src.kind === 'feature') db.exec(`CREATE VIRTUAL TABLE ${t}_rtree USING rtree(id, xmin, xmax, ymin, ymax)`);
  const insert = db.prepare(
    `INSERT INTO ${t} VALUES (${['?', ...columns.map(() => '?'), ...(src.kind === 'feature' ? ['?'] : [])].join(', ')})`,
  );
  const insertBox = src.kind === 'feature' ? db.prepare(`INSERT INTO ${t}_rtree VALUES (?, ?, ?, ?, ?)`) : undefined;
  let transform: ((x: number, y: number) => readonly [number, number]) | undefined;
  if (src.kind === 'feature' && read.spatialReference && target) {
    try {
      transform = transformBetween(read.spatialReference, target, `${at}.path`);
    } catch {
      throw invalidConfig(`${at}.path`, `The features of '${src.path}' cannot be reprojected into the map's coordinate system.`);
    }
  }
  let extent: { xmin: number; ymin: number; xmax: number; ymax: number } | undefined;
  rows.forEach((r, i) => {
    const id = ids ? ids[i]! : i + 1;
    const values = columns.map((c) => storedValue(r.properties[c.source], c.type));
    let geometry = r.geometry;
    if (geometry && transform) geometry = mapCoordinates(geometry, transform);
    const box = geometry ? envelopeOf(geometry) : undefined;
    if (geometry && box && !Object.values(box).every(Number.isFinite)) {
      throw invalidConfig(`${at}.path`, `Feature ${i + 1} of '${src.path}' cannot be projected into the map's coordinate system.`);
    }
    insert.run(id, ...values, ...(src.kind === 'feature' ? [geometry ? JSON.stringify(geometry) : null] : []));
    if (box && insertBox) {
      insertBox.run(id, box.xmin, box.xmax, box.ymin, box.ymax);
      extent = extent
        ? {
            xmin: Math.min(extent.xmin, box.xmin),
            ymin: Math.min(extent.ymin, box.ymin),
            xmax: Math.max(extent.xmax, box.xmax),
            ymax: Math.max(extent.ymax, box.ymax),
          }
        : { ...box };
    }
  });
  // Attachments.
  const idSet = new Set(ids ?? rows.map((_, i) => i + 1));
  const insertAttachment = db.prepare('INSERT INTO attachments VALUES (?, ?, ?, ?, ?, ?, ?)');
  src.attachments.forEach((a, i) => {
    if (!idSet.has(a.featureId)) {
      throw invalidConfig(`${at}.attachments[${i}].featureId`, `'${src.name}' has no row with ${oidName} ${a.featureId}.`);
    }
    const file = join(attachmentsDir, `${src.id}-${i + 1}`);
    try {
      copyFileSync(a.path, file);
    } catch (e) {
      const msg = `Cannot read the attachment '${a.path}': ${(e as NodeJS.ErrnoException).code ?? String(e)}.`;
      throw new EngineError('IO_ERROR', msg, { path: `${at}.attachments[${i}].path`, details: [msg] });
    }
    insertAttachment.run(src.id, i + 1, a.featureId, a.name, a.contentType, statSync(file).size, file);
  });
  const info: TableInfo = { name: src.name, kind: src.kind, objectIdField: oidName, fields, geometryType, ...(extent ? { extent } : {}) };
  db.prepare('INSERT INTO tables (id, name, info) VALUES (?, ?, ?)').run(src.id, src.name, JSON.stringify(info));
}

// ---------------------------------------------------------------------------------------------
// Statistics aggregates

function registerFunctions(db: Database.Database): void {
  // Sample variance and standard deviation (n - 1), Welford's update: what the vendor reports.
  const welford = (finish: (m2: number, n: number) => number | null) => ({
    start: () => ({ n: 0, mean: 0, m2: 0 }),
    step: (s: { n: number; mean: number; m2: number }, x: unknown) => {
      if (typeof x !== 'number' && typeof x !== 'bigint') return s;
      const v = Number(x);
      s.n++;
      const d = v - s.mean;
      s.mean += d / s.n;
      s.m2 += d * (v - s.mean);
      return s;
    },
    result: (s: { n: number; mean: number; m2: number }) => finish(s.m2, s.n),
  });
  db.aggregate(
    'rf_var_samp',
    welford((m2, n) => (n > 1 ? m2 / (n - 1) : null)),
  );
  db.aggregate(
    'rf_stddev_samp',
    welford((m2, n) => (n > 1 ? Math.sqrt(m2 / (n - 1)) : null)),
  );
}

// ---------------------------------------------------------------------------------------------
// Tables

const notFound = (msg: string): EngineError => new EngineError('NOT_FOUND', msg, { details: [msg] });
const invalid = (path: string, msg: string): EngineError => new EngineError('INVALID_ARGUMENT', msg, { path, details: [msg] });

const STAT_SQL: Record<StatisticRequest['type'], (c: string) => string> = {
  count: (c) => `COUNT(${c})`,
  sum: (c) => `SUM(${c})`,
  min: (c) => `MIN(${c})`,
  max: (c) => `MAX(${c})`,
  avg: (c) => `AVG(${c})`,
  stddev: (c) => `rf_stddev_samp(${c})`,
  var: (c) => `rf_var_samp(${c})`,
};

/** A table of the store: one layer's or standalone table's rows. */
export class SqliteFeatureTable implements FeatureTable {
  readonly fields: readonly FieldInfo[];
  readonly objectIdField: string;
  readonly geometryType: FeatureTable['geometryType'];
  readonly extent?: Extent;
  /** The layer/table name (for messages). */
  readonly name: string;
  /** SQL table name. */
  readonly sqlName: string;
  private readonly attributeFields: readonly FieldInfo[];

  constructor(
    private readonly db: Database.Database,
    readonly id: number,
    info: TableInfo,
    private readonly maxRecordCount: number,
  ) {
    this.fields = info.fields;
    this.objectIdField = info.objectIdField;
    this.geometryType = info.geometryType;
    if (info.extent) this.extent = info.extent;
    this.name = info.name;
    this.sqlName = `t${id}`;
    this.attributeFields = info.fields.filter((f) => f.type !== 'geoFieldTypeGeometry');
  }

  /** The stored field of a client's name (any case), or INVALID_ARGUMENT at `path`. */
  field(name: string, path: string): FieldInfo {
    const f = this.attributeFields.find((x) => x.name.toUpperCase() === name.trim().toUpperCase());
    if (!f)
      throw invalid(
        path,
        `'${name.trim()}' is not a field of '${this.name}' (fields: ${this.attributeFields.map((x) => x.name).join(', ')}).`,
      );
    return f;
  }

  /** WHERE text and parameters of a query (where clause, object ids, key lists), without the spatial filter. */
  private filterSql(q: FeatureQuery): { sql: string; params: unknown[] } {
    const path = q.path ?? 'QueryFilter';
    const parts: string[] = [];
    const params: unknown[] = [];
    const where = compileWhere(q.where, this.attributeFields, { path: q.wherePath ?? `${path}/WhereClause` });
    if (where.sql !== '1') {
      parts.push(where.sql);
      params.push(...where.params);
    }
    if (q.objectIds !== undefined) {
      parts.push(`${quoteIdentifier(this.objectIdField)} IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(q.objectIds.filter((x) => Number.isFinite(x))));
    }
    if (q.fieldIn !== undefined) {
      const f = this.field(q.fieldIn.field, path);
      const values = q.fieldIn.values
        .filter((v) => v !== null)
        .map((v) => (v instanceof Date ? v.getTime() : typeof v === 'boolean' ? (v ? 1 : 0) : v));
      parts.push(`${quoteIdentifier(f.name)} IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(values));
    }
    return { sql: parts.length ? parts.join(' AND ') : '1', params };
  }

  /**
   * The ids matching the spatial filter among those matching the rest (undefined when the query
   * has no spatial filter): the R*Tree gives the candidates, jsts the exact relation.
   */
  private spatialIds(q: FeatureQuery, base: { sql: string; params: unknown[] }): number[] | undefined {
    if (!q.spatial) return undefined;
    const path = q.path ?? 'QueryFilter';
    if (this.geometryType === null) throw invalid(`${path}/FilterGeometry`, `'${this.name}' is a table; it has no geometry to filter on.`);
    const test = spatialTest(q.spatial.geometry, q.spatial.relation, q.spatial.relationMask, path);
    const candidates = this.candidateSql(q, base, test.envelope);
    if (!candidates) return [];
    const out: number[] = [];
    for (const r of this.db.prepare(candidates.sql).iterate(...candidates.params) as Iterable<{ id: number; g: string | null }>) {
      if (r.g === null) continue;
      if (test.matches(JSON.parse(r.g) as Geometry)) out.push(r.id);
    }
    return out;
  }

  /**
   * The statement that reads the spatial candidates: the rows whose R*Tree box meets the filter's
   * envelope (all rows for a DE-9IM mask that disjoint geometries can match). undefined when
   * nothing can match (an empty filter geometry).
   */
  private candidateSql(
    q: FeatureQuery,
    base: { sql: string; params: unknown[] },
    e: Extent | undefined,
  ): { sql: string; params: unknown[] } | undefined {
    const oid = quoteIdentifier(this.objectIdField);
    const useIndex = !(q.spatial?.relation === 'relation' && maskAllowsDisjoint(q.spatial.relationMask ?? ''));
    const head = `SELECT ${oid} AS id, ${quoteIdentifier(GEOMETRY_COLUMN)} AS g FROM ${this.sqlName} WHERE (${base.sql})`;
    if (!useIndex) return { sql: head, params: base.params };
    if (!e) return undefined;
    return {
      sql: `${head} AND ${oid} IN (SELECT id FROM ${this.sqlName}_rtree WHERE xmin <= ? AND xmax >= ? AND ymin <= ? AND ymax >= ?)`,
      params: [...base.params, e.xmax, e.xmin, e.ymax, e.ymin],
    };
  }

  /** EXPLAIN QUERY PLAN of the spatial candidate statement of `q` (tests and diagnostics: the R*Tree is used). */
  explainSpatial(q: FeatureQuery): string[] {
    if (!q.spatial) return [];
    const c = this.candidateSql(q, this.filterSql(q), envelopeOf(q.spatial.geometry));
    if (!c) return [];
    return (this.db.prepare(`EXPLAIN QUERY PLAN ${c.sql}`).all(...c.params) as { detail: string }[]).map((r) => r.detail);
  }

  /** The full filter: base SQL plus the spatial result as an id list. */
  private filter(q: FeatureQuery): { sql: string; params: unknown[] } {
    const base = this.filterSql(q);
    const ids = this.spatialIds(q, base);
    if (ids === undefined) return base;
    return {
      sql: `(${base.sql}) AND ${quoteIdentifier(this.objectIdField)} IN (SELECT value FROM json_each(?))`,
      params: [...base.params, JSON.stringify(ids)],
    };
  }

  private orderSql(orderBy: FeatureQuery['orderBy'], path: string, extra: readonly string[] = []): string {
    const terms = (orderBy ?? []).map((o) => {
      const alias = extra.find((x) => x.toUpperCase() === o.field.toUpperCase());
      const col = alias !== undefined ? quoteIdentifier(alias) : quoteIdentifier(this.field(o.field, `${path}/PostfixClause`).name);
      return `${col} ${o.descending ? 'DESC' : 'ASC'}`;
    });
    return terms.join(', ');
  }

  private rowOf(r: Record<string, unknown>, fields: readonly FieldInfo[], withGeometry: boolean): FeatureRow {
    const attributes: Record<string, AttributeValue> = {};
    for (const f of fields) attributes[f.name] = this.valueOf(r[f.name], f.type);
    const id = r['__id'] as number;
    if (!withGeometry) return { id, attributes };
    const g = r['__g'] as string | null | undefined;
    return { id, attributes, geometry: g ? (JSON.parse(g) as Geometry) : null };
  }

  private valueOf(v: unknown, type: FieldType): AttributeValue {
    if (v === null || v === undefined) return null;
    if (type === 'geoFieldTypeDate') return new Date(Number(v));
    if (typeof v === 'bigint') return Number(v);
    return v as AttributeValue;
  }

  private outFields(q: FeatureQuery): readonly FieldInfo[] {
    const names = q.outFields;
    if (names === undefined || names.some((n) => n.trim() === '*')) return this.attributeFields;
    const path = `${q.path ?? 'QueryFilter'}/SubFields`;
    const wanted = new Set(names.filter((n) => n.trim() !== '').map((n) => this.field(n, path).name));
    return this.attributeFields.filter((f) => wanted.has(f.name));
  }

  async query(q: FeatureQuery): Promise<FeatureRow[]> {
    const fields = this.outFields(q);
    const withGeometry = (q.returnGeometry ?? true) && this.geometryType !== null;
    const where = this.filter(q);
    const oid = quoteIdentifier(this.objectIdField);
    const order = this.orderSql(q.orderBy, q.path ?? 'QueryFilter');
    const limit = q.limit ?? this.maxRecordCount;
    const select = [`${oid} AS "__id"`, ...fields.map((f) => quoteIdentifier(f.name))];
    if (withGeometry) select.push(`${quoteIdentifier(GEOMETRY_COLUMN)} AS "__g"`);
    // `limit: Infinity` reads every row (drawing a layer is not capped by maxRecordCount).
    const limited = Number.isFinite(limit);
    const sql = `SELECT ${select.join(', ')} FROM ${this.sqlName} WHERE ${where.sql} ORDER BY ${order ? `${order}, ` : ''}${oid}${limited ? ' LIMIT ?' : ''}`;
    const params = limited ? [...where.params, Math.max(0, Math.floor(limit))] : where.params;
    const rows = this.db.prepare(sql).all(...params) as Record<string, unknown>[];
    return rows.map((r) => this.rowOf(r, fields, withGeometry));
  }

  async count(q: FeatureQuery): Promise<number> {
    const where = this.filter(q);
    return (this.db.prepare(`SELECT COUNT(*) AS n FROM ${this.sqlName} WHERE ${where.sql}`).get(...where.params) as { n: number }).n;
  }

  async ids(q: FeatureQuery): Promise<number[]> {
    const where = this.filter(q);
    const oid = quoteIdentifier(this.objectIdField);
    const order = this.orderSql(q.orderBy, q.path ?? 'QueryFilter');
    const limited = q.limit !== undefined && Number.isFinite(q.limit);
    const limit = limited ? ' LIMIT ?' : '';
    const sql = `SELECT ${oid} AS id FROM ${this.sqlName} WHERE ${where.sql} ORDER BY ${order ? `${order}, ` : ''}${oid}${limit}`;
    const params = limited ? [...where.params, Math.max(0, Math.floor(q.limit!))] : where.params;
    return (this.db.prepare(sql).all(...params) as { id: number }[]).map((r) => r.id);
  }

  async statistics(
    q: FeatureQuery,
    stats: readonly StatisticRequest[],
    groupBy: readonly string[] = [],
    orderBy: readonly { readonly field: string; readonly descending: boolean }[] = [],
  ): Promise<Record<string, AttributeValue>[]> {
    const path = q.path ?? 'QueryFilter';
    if (stats.length === 0) throw invalid(`${path}/StatisticDescriptions`, 'At least one statistic is needed.');
    const groups = groupBy.map((g) => this.field(g, `${path}/GroupByFields`));
    const outNames: string[] = [];
    const select: string[] = groups.map((g) => quoteIdentifier(g.name));
    const outTypes: FieldType[] = [];
    stats.forEach((s, i) => {
      const at = `${path}/StatisticDescriptions[${i}]`;
      const f = this.field(s.field, `${at}/StatisticFieldName`);
      const numeric = [
        'geoFieldTypeOID',
        'geoFieldTypeInteger',
        'geoFieldTypeSmallInteger',
        'geoFieldTypeDouble',
        'geoFieldTypeSingle',
      ].includes(f.type);
      if (!numeric && !['count', 'min', 'max'].includes(s.type)) {
        throw invalid(`${at}/StatisticType`, `The ${s.type} of '${f.name}' cannot be computed: it is not a numeric field.`);
      }
      const out = (s.outName ?? `${s.type.toUpperCase()}_${f.name}`).trim();
      if (
        out === '' ||
        outNames.some((n) => n.toUpperCase() === out.toUpperCase()) ||
        groups.some((g) => g.name.toUpperCase() === out.toUpperCase())
      ) {
        throw invalid(`${at}/ResultFieldName`, `The result field name '${out}' is empty or used twice.`);
      }
      outNames.push(out);
      outTypes.push(s.type === 'min' || s.type === 'max' ? f.type : s.type === 'count' ? 'geoFieldTypeInteger' : 'geoFieldTypeDouble');
      select.push(`${STAT_SQL[s.type](quoteIdentifier(f.name))} AS ${quoteIdentifier(out)}`);
    });
    const where = this.filter(q);
    const groupSql = groups.length ? ` GROUP BY ${groups.map((g) => quoteIdentifier(g.name)).join(', ')}` : '';
    const order = orderBy.map((o) => {
      const name =
        outNames.find((n) => n.toUpperCase() === o.field.trim().toUpperCase()) ??
        groups.find((g) => g.name.toUpperCase() === o.field.trim().toUpperCase())?.name;
      if (name === undefined)
        throw invalid(`${path}/OrderByFields`, `'${o.field}' is neither a group-by field nor a statistic result field.`);
      return `${quoteIdentifier(name)} ${o.descending ? 'DESC' : 'ASC'}`;
    });
    const orderSql = order.length
      ? ` ORDER BY ${order.join(', ')}`
      : groups.length
        ? ` ORDER BY ${groups.map((g) => quoteIdentifier(g.name)).join(', ')}`
        : '';
    const rows = this.db
      .prepare(`SELECT ${select.join(', ')} FROM ${this.sqlName} WHERE ${where.sql}${groupSql}${orderSql}`)
      .all(...where.params) as Record<string, unknown>[];
    return rows.map((r) => {
      const out: Record<string, AttributeValue> = {};
      for (const g of groups) out[g.name] = this.valueOf(r[g.name], g.type);
      outNames.forEach((n, i) => (out[n] = this.valueOf(r[n], outTypes[i]!)));
      return out;
    });
  }

  async distinct(field: string, q: FeatureQuery = {}): Promise<{ readonly value: AttributeValue; readonly count: number }[]> {
    const f = this.field(field, `${q.path ?? 'QueryFilter'}/FieldName`);
    const where = this.filter(q);
    const col = quoteIdentifier(f.name);
    const rows = this.db
      .prepare(`SELECT ${col} AS v, COUNT(*) AS n FROM ${this.sqlName} WHERE ${where.sql} GROUP BY ${col} ORDER BY ${col}`)
      .all(...where.params) as {
      v: unknown;
      n: number;
    }[];
    return rows.map((r) => ({ value: this.valueOf(r.v, f.type), count: r.n }));
  }

  async attachmentInfos(rowIds: readonly number[]): Promise<AttachmentInfo[]> {
    const rows = this.db
      .prepare(
        'SELECT id, parentId, name, contentType, size FROM attachments WHERE tableId = ? AND parentId IN (SELECT value FROM json_each(?)) ORDER BY parentId, id',
      )
      .all(this.id, JSON.stringify(rowIds)) as AttachmentInfo[];
    return rows.map((r) => ({ id: r.id, parentId: r.parentId, name: r.name, contentType: r.contentType, size: r.size }));
  }

  async attachmentData(attachmentIds: readonly number[]): Promise<{ readonly info: AttachmentInfo; readonly data: Uint8Array }[]> {
    const get = this.db.prepare('SELECT id, parentId, name, contentType, size, file FROM attachments WHERE tableId = ? AND id = ?');
    return attachmentIds.map((id) => {
      const r = get.get(this.id, id) as (AttachmentInfo & { file: string }) | undefined;
      if (!r) throw notFound(`Attachment ${id} does not exist in '${this.name}'.`);
      let data: Buffer;
      try {
        data = readFileSync(r.file);
      } catch (e) {
        const msg = `The attachment ${id} of '${this.name}' cannot be read: ${(e as NodeJS.ErrnoException).code ?? String(e)}.`;
        throw new EngineError('IO_ERROR', msg, { details: [msg] });
      }
      return {
        info: { id: r.id, parentId: r.parentId, name: r.name, contentType: r.contentType, size: r.size },
        data: new Uint8Array(data),
      };
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Opening

/**
 * Opens the store of one service version, importing the sources first unless a complete database
 * of the same sources exists. Stale versions next to it (other `*.sqlite` files not open in this
 * process, and their attachment folders) are removed after an import.
 */
export async function openFeatureStore(options: FeatureStoreOptions): Promise<FeatureStore> {
  const file = options.file;
  mkdirSync(dirname(file), { recursive: true });
  const fingerprint = fingerprintOf(options.sources);
  let db: Database.Database | undefined;
  let imported = false;
  if (existsSync(file)) {
    try {
      const existing = new Database(file, { fileMustExist: true });
      const meta = readMeta(existing);
      if (meta.complete === '1' && meta.format === STORE_FORMAT && meta.fingerprint === fingerprint) db = existing;
      else existing.close();
    } catch {
      db = undefined;
    }
  }
  if (!db) {
    const tmp = `${file}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
    const fresh = new Database(tmp);
    try {
      fresh.pragma('journal_mode = OFF');
      fresh.pragma('synchronous = OFF');
      await importInto(fresh, options, fingerprint);
      fresh.close();
      renameSync(tmp, file);
    } catch (e) {
      if (fresh.open) fresh.close();
      rmSync(tmp, { force: true });
      throw e;
    }
    imported = true;
    db = new Database(file, { fileMustExist: true });
    removeStaleVersions(file, options.attachmentsDir);
  }
  registerFunctions(db);
  db.pragma('query_only = ON');
  const meta = readMeta(db);
  const sr = JSON.parse(meta.spatialReference ?? 'null') as SpatialReference | null;
  const tables = new Map<number, SqliteFeatureTable>();
  for (const r of db.prepare('SELECT id, info FROM tables ORDER BY id').all() as { id: number; info: string }[]) {
    tables.set(r.id, new SqliteFeatureTable(db, r.id, JSON.parse(r.info) as TableInfo, options.maxRecordCount));
  }
  openFiles.set(file, (openFiles.get(file) ?? 0) + 1);
  const opened = db;
  let closed = false;
  return {
    tables,
    spatialReference: sr ?? undefined,
    imported,
    file,
    close() {
      if (closed) return;
      closed = true;
      const n = (openFiles.get(file) ?? 1) - 1;
      if (n > 0) openFiles.set(file, n);
      else openFiles.delete(file);
      if (opened.open) opened.close();
    },
  };
}

function removeStaleVersions(file: string, attachmentsDir: string): void {
  const dir = dirname(file);
  const attachmentsRoot = dirname(attachmentsDir);
  try {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (p === file || openFiles.has(p)) continue;
      if (name.endsWith('.sqlite')) {
        rmSync(p, { force: true });
        rmSync(join(attachmentsRoot, name.slice(0, -'.sqlite'.length)), { recursive: true, force: true });
      } else if (name.includes('.sqlite.tmp-') && Date.now() - statSync(p).mtimeMs > 3600_000) {
        // An import that died an hour ago or more.
        rmSync(p, { force: true });
      }
    }
  } catch {
    // Decision: leftovers of old versions are harmless; a failed clean-up is not an error.
  }
}

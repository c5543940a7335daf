/**
 * A SOAP QueryFilter (or SpatialFilter / TimeQueryFilter, by `$type`) as the map model's
 * FeatureQuery, plus what the answer needs besides the rows: the output fields in order, the
 * output spatial reference, DISTINCT and the coordinate resolution (protocols.md §5.6 QueryFilter).
 *
 * The where clause is not parsed here: the feature store compiles it into its safe SQL subset with
 * bound parameters (an injection attempt is the store's INVALID_ARGUMENT at `QueryFilter/WhereClause`).
 */
import Densifier from 'jsts/org/locationtech/jts/densify/Densifier.js';
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import GeoJSONReader from 'jsts/org/locationtech/jts/io/GeoJSONReader.js';
import GeoJSONWriter from 'jsts/org/locationtech/jts/io/GeoJSONWriter.js';
import DouglasPeuckerSimplifier from 'jsts/org/locationtech/jts/simplify/DouglasPeuckerSimplifier.js';
import { invalidArgument } from '../../core/errors.js';
import type { SpatialReference } from '../../core/pixel-block.js';
import { transformer } from '../image/query-geometry.js';
import { compileWhere } from '../map/where.js';
import type {
  FeatureLayer,
  FeatureQuery,
  FeatureTable,
  FieldInfo,
  Geometry,
  MapService,
  SpatialRelation,
  StandaloneTable,
} from '../map/model.js';
import { isObject } from './display.js';
import { extentOfGeometry, geometryOfSoap, mapGeometry } from './geometry.js';
import type { SoapValue } from './operation.js';
import { optionalSpatialReference } from './spatial-reference.js';

/** A layer or standalone table with attributes (raster layers have none). */
export type QueryTarget = FeatureLayer | StandaloneTable;

export interface ParsedQueryFilter {
  /** What the store is asked (attribute fields only in `outFields`; the OID field always among them). */
  readonly query: FeatureQuery;
  /** Output fields in table order: the requested attribute fields and, when geometry is returned, the shape field. */
  readonly fields: readonly FieldInfo[];
  readonly returnGeometry: boolean;
  /** Spatial reference of returned geometries (OutputSpatialReference, else the map's). */
  readonly outSr: SpatialReference;
  /** PrefixClause DISTINCT: one row per distinct combination of the output attribute fields. */
  readonly distinct: boolean;
  /** Resolution > 0: returned coordinates are snapped to multiples of it (output SR units). */
  readonly resolution: number;
}

/** The name the vendor gives a feature class's geometry field when the store does not list one. */
export const SHAPE_FIELD = 'Shape';

/** The geometry field of a table (listed by the store, or the implicit `Shape`), undefined for a standalone table. */
export function shapeFieldOf(table: FeatureTable): FieldInfo | undefined {
  if (table.geometryType === null) return undefined;
  return (
    table.fields.find((f) => f.type === 'geoFieldTypeGeometry') ?? {
      name: SHAPE_FIELD,
      type: 'geoFieldTypeGeometry',
      alias: SHAPE_FIELD,
      length: 0,
      nullable: true,
      editable: true,
    }
  );
}

/** Every field of a table in order, the shape field included (after the OID field when the store lists none). */
export function allFieldsOf(table: FeatureTable): FieldInfo[] {
  const shape = shapeFieldOf(table);
  if (shape === undefined || table.fields.includes(shape)) return [...table.fields];
  const oid = table.fields.findIndex((f) => f.name === table.objectIdField);
  const out = [...table.fields];
  out.splice(oid + 1, 0, shape);
  return out;
}

const str = (v: SoapValue): string => (typeof v === 'string' ? v.trim() : '');

/** A field of the table by name (case-insensitive, as the vendor's geodatabases compare names). */
export function fieldNamed(fields: readonly FieldInfo[], name: string): FieldInfo | undefined {
  const n = name.trim().toLowerCase();
  return fields.find((f) => f.name.toLowerCase() === n);
}

/**
 * A comma-separated field list (`SubFields`, `RelatedTableFields`, `GroupByFields`) as fields of the
 * table, in the order given; `*` or empty = undefined (all). Unknown names fail at `path`.
 */
export function fieldList(value: string, fields: readonly FieldInfo[], path: string): FieldInfo[] | undefined {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0 || names.includes('*')) return undefined;
  const out: FieldInfo[] = [];
  for (const n of names) {
    const f = fieldNamed(fields, n);
    if (f === undefined)
      throw invalidArgument(path, `${path}: field '${n}' does not exist (fields: ${fields.map((x) => x.name).join(', ')}).`);
    if (!out.includes(f)) out.push(f);
  }
  return out;
}

/** `ORDER BY a [ASC|DESC], b ...` (case-insensitive) as the store's orderBy. */
export function orderByOf(
  clause: string,
  fields: readonly FieldInfo[],
  path: string,
): { field: string; descending: boolean }[] | undefined {
  const t = clause.trim();
  if (t === '') return undefined;
  const m = /^order\s+by\s+([\s\S]+)$/i.exec(t);
  if (!m) throw invalidArgument(path, `${path}: only 'ORDER BY <field> [ASC|DESC], ...' is accepted here, not '${t}'.`);
  const body = m[1]!;
  return body.split(',').map((part) => {
    const pm = /^\s*("?)([A-Za-z_][A-Za-z0-9_.]*)\1(?:\s+(asc|desc))?\s*$/i.exec(part);
    if (!pm) throw invalidArgument(path, `${path}: '${part.trim()}' is not '<field> [ASC|DESC]'; only ORDER BY is accepted here.`);
    const f = fieldNamed(fields, pm[2]!);
    if (f === undefined || f.type === 'geoFieldTypeGeometry')
      throw invalidArgument(path, `${path}: field '${pm[2]!}' does not exist or cannot be ordered.`);
    return { field: f.name, descending: (pm[3] ?? '').toLowerCase() === 'desc' };
  });
}

/** `(a) AND (b)` of the non-empty where clauses (a layer's definition expression and the filter's). */
export function andWhere(...clauses: (string | undefined)[]): string | undefined {
  const parts = clauses.map((c) => (c ?? '').trim()).filter((c) => c !== '');
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0] : parts.map((p) => `(${p})`).join(' AND ');
}

const RELATIONS: Readonly<Record<string, SpatialRelation>> = {
  geoSpatialRelIntersects: 'intersects',
  geoSpatialRelEnvelopeIntersects: 'envelopeIntersects',
  geoSpatialRelIndexIntersects: 'indexIntersects',
  geoSpatialRelTouches: 'touches',
  geoSpatialRelOverlaps: 'overlaps',
  geoSpatialRelCrosses: 'crosses',
  geoSpatialRelWithin: 'within',
  geoSpatialRelContains: 'contains',
  geoSpatialRelRelation: 'relation',
};

/** A DE-9IM mask: `T*F**F***`, or the vendor's `RELATE(G1, G2, 'T*F**F***')` form. */
export function relationMaskOf(desc: string, path: string): string {
  const t = desc.trim();
  const m = /^(?:relate\s*\(\s*g1\s*,\s*g2\s*,\s*'([^']*)'\s*\)|'?([^']*)'?)$/i.exec(t);
  const mask = (m?.[1] ?? m?.[2] ?? '').toUpperCase();
  if (!/^[TF*012]{9}$/.test(mask)) {
    throw invalidArgument(path, `${path}: '${desc}' is not a DE-9IM matrix of nine characters from T, F, *, 0, 1, 2 (e.g. 'T*F**F***').`);
  }
  return mask;
}

export interface QueryFilterOptions {
  /** The layer's or table's DefinitionExpression (AND-ed with the where clause). */
  readonly definitionExpression?: string;
  /** Where a faulty definition expression is reported (default `LayerDescription/DefinitionExpression`). */
  readonly definitionPath?: string;
  /** Error path prefix (default `QueryFilter`). */
  readonly path?: string;
}

/** A decoded QueryFilter value as the store's query, for `target` of `service`. */
export function parseQueryFilter(
  filter: SoapValue,
  target: QueryTarget,
  service: MapService,
  opts: QueryFilterOptions = {},
): ParsedQueryFilter {
  const path = opts.path ?? 'QueryFilter';
  if (filter !== undefined && filter !== null && !isObject(filter)) throw invalidArgument(path, `${path} must be a QueryFilter.`);
  const qf = filter ?? { $type: 'QueryFilter' };
  const table = target.table;
  const all = allFieldsOf(table);
  const shape = all.find((f) => f.type === 'geoFieldTypeGeometry');

  // SubFields: `*` / empty = all. Decision: the OID field is always returned (the vendor's
  // geodatabase cursors add it too); the geometry only when the shape field is among them.
  const sub = fieldList(str(qf['SubFields']), all, `${path}/SubFields`);
  const chosen = sub ?? all;
  const distinctPrefix = /^distinct$/i.test(str(qf['PrefixClause']));
  const returnGeometry = shape !== undefined && chosen.includes(shape) && !distinctPrefix;

  const prefix = str(qf['PrefixClause']);
  if (prefix !== '' && !/^distinct$/i.test(prefix)) {
    throw invalidArgument(`${path}/PrefixClause`, `${path}/PrefixClause: only DISTINCT is accepted, not '${prefix}'.`);
  }
  const distinct = prefix !== '';
  // Decision: with DISTINCT the OID field is not added (it would make every row distinct), and the
  // geometry is not compared (the vendor's DISTINCT is over attribute columns).
  const oid = table.fields.find((f) => f.name === table.objectIdField);
  const attrs = all.filter((f) => f !== shape && (chosen.includes(f) || (!distinct && f === oid)));
  if (distinct && attrs.length === 0) {
    throw invalidArgument(`${path}/SubFields`, `${path}/SubFields: DISTINCT needs at least one attribute field.`);
  }
  const fields = all.filter((f) => attrs.includes(f) || (returnGeometry && !distinct && f === shape));

  for (const k of ['SpatialReferenceFieldName', 'GeometryFieldName']) {
    const n = str(qf[k]);
    if (n !== '' && (shape === undefined || n.toLowerCase() !== shape.name.toLowerCase())) {
      throw invalidArgument(
        `${path}/${k}`,
        `${path}/${k}: '${n}' is not the geometry field${shape ? ` ('${shape.name}')` : ' (this table has none)'}.`,
      );
    }
  }
  const filterDefs = qf['FilterDefs'];
  if (Array.isArray(filterDefs) && filterDefs.length > 0) {
    // FilterDefs filter XML fields by XPath; the map model has no XML fields, so any field named is wrong.
    const first = (filterDefs as readonly SoapValue[])[0];
    const name = isObject(first) ? str(first['FieldName']) : '';
    throw invalidArgument(`${path}/FilterDefs[0]`, `${path}/FilterDefs[0]: '${name}' is not an XML field of this table (it has none).`);
  }

  const resolution = typeof qf['Resolution'] === 'number' && Number.isFinite(qf['Resolution']) ? qf['Resolution'] : 0;
  if (resolution < 0) throw invalidArgument(`${path}/Resolution`, `${path}/Resolution must not be negative.`);

  const outSr = optionalSpatialReference(qf['OutputSpatialReference'], `${path}/OutputSpatialReference`) ?? service.spatialReference;

  const fidSet = qf['FIDSet'];
  let objectIds: number[] | undefined;
  if (isObject(fidSet)) {
    const arr = fidSet['FIDArray'];
    objectIds = Array.isArray(arr) ? (arr as SoapValue[]).filter((v): v is number => typeof v === 'number' && Number.isInteger(v)) : [];
  }

  let spatial: FeatureQuery['spatial'];
  const isSpatial = qf.$type === 'SpatialFilter' || qf.$type === 'TimeQueryFilter' || qf.$type === 'ImageQueryFilter';
  if (isSpatial && qf['FilterGeometry'] !== undefined && qf['FilterGeometry'] !== null) {
    if (shape === undefined)
      throw invalidArgument(`${path}/FilterGeometry`, `${path}/FilterGeometry: '${target.name}' is a table without geometry.`);
    const g = geometryOfSoap(qf['FilterGeometry'], `${path}/FilterGeometry`);
    // The filter geometry's own SR, else the map's (the vendor assumes the map SR).
    const to = transformer(g.spatialReference ?? service.spatialReference, service.spatialReference);
    const geometry: Geometry = g.spatialReference ? mapGeometry(densifiedForReprojection(g.geometry), to) : g.geometry;
    const relName = str(qf['SpatialRel']);
    // Decision: geoSpatialRelUndefined (or no SpatialRel) with a geometry means intersects, the
    // relation every vendor client defaults to.
    const relation = relName === '' || relName === 'geoSpatialRelUndefined' ? 'intersects' : RELATIONS[relName];
    if (relation === undefined)
      throw invalidArgument(`${path}/SpatialRel`, `${path}/SpatialRel: '${relName}' is not a SpatialRelEnum value.`);
    const relationMask =
      relation === 'relation' ? relationMaskOf(str(qf['SpatialRelDescription']), `${path}/SpatialRelDescription`) : undefined;
    spatial = { geometry, relation, ...(relationMask !== undefined ? { relationMask } : {}) };
    // SearchOrder (spatial or attribute first) only orders the evaluation; the rows are the same.
  } else if (isSpatial && str(qf['SpatialRel']) === 'geoSpatialRelRelation') {
    throw invalidArgument(`${path}/FilterGeometry`, `${path}/FilterGeometry is required with geoSpatialRelRelation.`);
  }
  // Decision: a TimeQueryFilter's TimeValue is applied over the layer's time fields; the map model
  // configures none (no layer is time-aware), so the time part selects every row, as the vendor
  // does for layers without time.

  const orderBy = orderByOf(str(qf['PostfixClause']), all, `${path}/PostfixClause`);
  // The definition expression is checked on its own first, so its faults name it rather than the where clause.
  if (opts.definitionExpression !== undefined) {
    compileWhere(opts.definitionExpression, table.fields, { path: opts.definitionPath ?? 'LayerDescription/DefinitionExpression' });
  }
  const where = andWhere(opts.definitionExpression, str(qf['WhereClause']));
  const query: FeatureQuery = {
    path,
    outFields: attrs.map((f) => f.name),
    returnGeometry,
    ...(where !== undefined ? { where } : {}),
    ...(objectIds !== undefined ? { objectIds } : {}),
    ...(spatial !== undefined ? { spatial } : {}),
    ...(orderBy !== undefined ? { orderBy } : {}),
  };
  return { query, fields, returnGeometry, outSr, distinct, resolution };
}

/** Snap every coordinate to a multiple of `r` and drop the repeated vertices this makes. */
export function snapGeometry(g: Geometry, r: number): Geometry {
  if (!(r > 0)) return g;
  const s = (v: number): number => Math.round(v / r) * r;
  const pt = (c: readonly number[]): number[] => [s(c[0]!), s(c[1]!)];
  const line = (l: readonly (readonly number[])[], min: number): number[][] => {
    const out: number[][] = [];
    for (const c of l) {
      const p = pt(c);
      const last = out[out.length - 1];
      if (last === undefined || last[0] !== p[0] || last[1] !== p[1]) out.push(p);
    }
    while (out.length < min && out.length > 0) out.push(out[out.length - 1]!);
    return out;
  };
  switch (g.type) {
    case 'Point':
      return { type: 'Point', coordinates: pt(g.coordinates) };
    case 'MultiPoint':
      return { type: 'MultiPoint', coordinates: g.coordinates.map(pt) };
    case 'LineString':
      return { type: 'LineString', coordinates: line(g.coordinates, 2) };
    case 'MultiLineString':
      return { type: 'MultiLineString', coordinates: g.coordinates.map((l) => line(l, 2)) };
    case 'Polygon':
      return { type: 'Polygon', coordinates: g.coordinates.map((r2) => line(r2, 4)) };
    case 'MultiPolygon':
      return { type: 'MultiPolygon', coordinates: g.coordinates.map((p) => p.map((r2) => line(r2, 4))) };
  }
}

/** GeometryResultOptions: generalization and densification of returned geometries (output SR units). */
export interface GeometryShaping {
  /** Douglas-Peucker tolerance (GeneralizeGeometries with MaximumAllowableOffset > 0). */
  readonly generalize?: number;
  /** Longest segment (DensifyGeometries with MaximumSegmentLength > 0). */
  readonly densify?: number;
}

/** A decoded GeometryResultOptions (undefined or all defaults: no shaping). */
export function geometryShapingOf(v: SoapValue, path: string): GeometryShaping {
  if (!isObject(v)) return {};
  const num = (k: string): number => {
    const x = v[k];
    if (x === undefined || x === null) return 0;
    if (typeof x !== 'number' || !Number.isFinite(x)) throw invalidArgument(`${path}/${k}`, `${path}/${k} must be a finite number.`);
    return x;
  };
  const offset = num('MaximumAllowableOffset');
  const segment = num('MaximumSegmentLength');
  // MaximumDeviation bounds the densification of true curves; the store holds none (all segments are straight).
  return {
    ...(v['GeneralizeGeometries'] === true && offset > 0 ? { generalize: offset } : {}),
    ...(v['DensifyGeometries'] === true && segment > 0 ? { densify: segment } : {}),
  };
}

interface JtsGeometry {
  isEmpty(): boolean;
}
const jtsReader = new GeoJSONReader(new GeometryFactory());
const jtsWriter = new GeoJSONWriter();

/** Generalize (Douglas-Peucker, keeping the original when it would collapse) then densify. */
export function shapeGeometry(g: Geometry, s: GeometryShaping): Geometry {
  if (s.generalize === undefined && s.densify === undefined) return g;
  let j = jtsReader.read(g as never) as unknown as JtsGeometry;
  if (s.generalize !== undefined) {
    const simple = DouglasPeuckerSimplifier.simplify(j, s.generalize) as JtsGeometry;
    if (!simple.isEmpty()) j = simple;
  }
  if (s.densify !== undefined) j = Densifier.densify(j, s.densify) as JtsGeometry;
  return jtsWriter.write(j as never) as Geometry;
}

/**
 * Lines and polygons with extra vertices (edges cut in 20 along the longer side of the extent) so
 * that their straight edges stay close to the curves they become in another spatial reference.
 */
export function densifiedForReprojection(g: Geometry): Geometry {
  if (g.type === 'Point' || g.type === 'MultiPoint') return g;
  const e = extentOfGeometry(g);
  const size = e ? Math.max(e.xmax - e.xmin, e.ymax - e.ymin) : 0;
  return size > 0 ? shapeGeometry(g, { densify: size / 20 }) : g;
}

/** A geometry of the map as the client asked for it: reprojected into `outSr`, shaped, snapped to `resolution`. */
export function outputGeometry(
  g: Geometry,
  mapSr: SpatialReference,
  outSr: SpatialReference,
  resolution: number,
  shaping: GeometryShaping = {},
): Geometry {
  const moved = mapGeometry(g, transformer(mapSr, outSr));
  return snapGeometry(shapeGeometry(moved, shaping), resolution);
}

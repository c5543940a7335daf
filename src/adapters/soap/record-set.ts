/**
 * Rows of the map model as the answers of the query operations (protocols.md §5.6): a `RecordSet`
 * (Fields + Records, values typed per field in the `xs:anyType` slots), the Esri JSON feature set the
 * REST API gives for the same rows, KML 2.2 placemarks in WGS 84 and AMF3 (Flash's binary object
 * format) of the JSON feature set, and `QueryResult` in each `QueryResultFormat`.
 */
import { invalidArgument } from '../../core/errors.js';
import type { SpatialReference } from '../../core/pixel-block.js';
import { transformer } from '../image/query-geometry.js';
import type { AttributeValue, Domain, FeatureRow, FeatureTable, FieldInfo, FieldType, Geometry } from '../map/model.js';
import { mapGeometry, signedArea2, soapGeometry } from './geometry.js';
import type { SoapObject, SoapValue, XsValue } from './operation.js';
import { soapSpatialReference } from './spatial-reference.js';

/** Rows with what every output format needs to describe them. */
export interface FeatureSetData {
  /** Output fields in order; the geometry field among them when rows carry geometries. */
  readonly fields: readonly FieldInfo[];
  /** Rows whose geometries are already in `spatialReference`. */
  readonly rows: readonly FeatureRow[];
  readonly geometryType: FeatureTable['geometryType'];
  readonly spatialReference: SpatialReference;
  readonly objectIdField: string;
  readonly displayField: string;
  /** Layer or table name (KML document name). */
  readonly name: string;
  /** More rows matched than maxRecordCount allowed. */
  readonly exceededTransferLimit?: boolean;
}

const GEOMETRY_TYPES: Readonly<Record<string, string>> = {
  point: 'geoGeometryPoint',
  multipoint: 'geoGeometryMultipoint',
  polyline: 'geoGeometryPolyline',
  polygon: 'geoGeometryPolygon',
};

/** Decision: byte lengths the vendor reports for fixed-size types when none is configured. */
const TYPE_LENGTH: Readonly<Partial<Record<FieldType, number>>> = {
  geoFieldTypeOID: 4,
  geoFieldTypeInteger: 4,
  geoFieldTypeSmallInteger: 2,
  geoFieldTypeDouble: 8,
  geoFieldTypeSingle: 4,
  geoFieldTypeDate: 8,
  geoFieldTypeGlobalID: 38,
  geoFieldTypeGUID: 38,
};

const XS_OF: Readonly<Partial<Record<FieldType, XsValue['$xs']>>> = {
  geoFieldTypeOID: 'int',
  geoFieldTypeInteger: 'int',
  geoFieldTypeSmallInteger: 'short',
  geoFieldTypeDouble: 'double',
  geoFieldTypeSingle: 'float',
};

/** An attribute value in an `xs:anyType` slot, typed by its field's type; null stays null (xsi:nil). */
export function soapValueOf(v: AttributeValue | undefined, type: FieldType): SoapValue {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v;
  const xs = XS_OF[type];
  if (xs !== undefined && typeof v === 'number') return { $xs: xs, value: v };
  if (type === 'geoFieldTypeDate' && (typeof v === 'string' || typeof v === 'number')) {
    const d = new Date(v);
    if (!Number.isNaN(d.getTime())) return d;
  }
  if (typeof v === 'boolean') return v;
  return { $xs: 'string', value: String(v) };
}

/** A model Domain as the SOAP CodedValueDomain / RangeDomain of a field of `type`. */
export function soapDomainOf(d: Domain, type: FieldType): SoapObject {
  const base = { DomainName: d.name, FieldType: type, MergePolicy: 'geoMPTDefaultValue', SplitPolicy: 'geoSPTDefaultValue' };
  if (d.type === 'range') {
    return { $type: 'RangeDomain', ...base, MaxValue: soapValueOf(d.range[1], type), MinValue: soapValueOf(d.range[0], type) };
  }
  return {
    $type: 'CodedValueDomain',
    ...base,
    CodedValues: d.codedValues.map((c) => ({ $type: 'CodedValue', Name: c.name, Code: soapValueOf(c.code, type) })),
  };
}

/** A Field element; the geometry field carries its GeometryDef (type, SR). */
export function soapFieldOf(f: FieldInfo, geometryType: FeatureTable['geometryType'], sr: SpatialReference): SoapObject {
  const isShape = f.type === 'geoFieldTypeGeometry';
  return {
    $type: 'Field',
    Name: f.name,
    Type: f.type,
    IsNullable: f.nullable,
    Length: f.length > 0 ? f.length : (TYPE_LENGTH[f.type] ?? 0),
    Precision: 0,
    Scale: 0,
    Required: f.type === 'geoFieldTypeOID' || isShape,
    Editable: f.type === 'geoFieldTypeOID' ? false : f.editable,
    ...(isShape && geometryType !== null
      ? {
          GeometryDef: {
            $type: 'GeometryDef',
            AvgNumPoints: 0,
            GeometryType: GEOMETRY_TYPES[geometryType]!,
            HasM: false,
            HasZ: false,
            SpatialReference: soapSpatialReference(sr),
          },
        }
      : {}),
    AliasName: f.alias || f.name,
    ...(f.domain ? { Domain: soapDomainOf(f.domain, f.type) } : {}),
  };
}

const valueOf = (data: Pick<FeatureSetData, 'objectIdField'>, row: FeatureRow, f: FieldInfo): AttributeValue | undefined =>
  f.name in row.attributes ? row.attributes[f.name] : f.name === data.objectIdField ? row.id : undefined;

/** The Fields element of a field list. */
export function soapFieldsOf(data: Pick<FeatureSetData, 'fields' | 'geometryType' | 'spatialReference'>): SoapObject {
  return { $type: 'Fields', FieldArray: data.fields.map((f) => soapFieldOf(f, data.geometryType, data.spatialReference)) };
}

/** One Record: a value per field, in field order (geometries as SOAP geometries, null when absent). */
export function soapRecordOf(data: FeatureSetData, row: FeatureRow): SoapObject {
  return {
    $type: 'Record',
    Values: data.fields.map((f) =>
      f.type === 'geoFieldTypeGeometry' ? (row.geometry ? soapGeometry(row.geometry) : null) : soapValueOf(valueOf(data, row, f), f.type),
    ),
  };
}

export function recordSetOf(data: FeatureSetData): SoapObject {
  return { $type: 'RecordSet', Fields: soapFieldsOf(data), Records: data.rows.map((r) => soapRecordOf(data, r)) };
}

// ---------------------------------------------------------------------------------------------
// Esri JSON (what the REST API's query answers)

const esriName = (s: string): string => s.replace(/^geo/, 'esri');

/** `{ wkid, latestWkid }` or `{ wkt }`. */
export function spatialReferenceJson(sr: SpatialReference): Record<string, unknown> {
  const soap = soapSpatialReference(sr);
  if (typeof soap['WKID'] === 'number') return { wkid: soap['WKID'], latestWkid: soap['LatestWKID'] };
  return sr.wkt !== undefined ? { wkt: sr.wkt } : {};
}

/** Esri JSON winding: outer rings clockwise, holes counter-clockwise. */
const esriRings = (polys: readonly (readonly (readonly (readonly number[])[])[])[]): number[][][] =>
  polys.flatMap((p) => p.map((r, i) => ((i === 0) === signedArea2(r) < 0 ? r : [...r].reverse()).map((c) => [c[0]!, c[1]!])));

export function geometryJson(g: Geometry): Record<string, unknown> {
  const xy = (c: readonly number[]): number[] => [c[0]!, c[1]!];
  switch (g.type) {
    case 'Point':
      return { x: g.coordinates[0], y: g.coordinates[1] };
    case 'MultiPoint':
      return { points: g.coordinates.map(xy) };
    case 'LineString':
      return { paths: [g.coordinates.map(xy)] };
    case 'MultiLineString':
      return { paths: g.coordinates.map((l) => l.map(xy)) };
    case 'Polygon':
      return { rings: esriRings([g.coordinates]) };
    case 'MultiPolygon':
      return { rings: esriRings(g.coordinates) };
  }
}

export function fieldJson(f: FieldInfo): Record<string, unknown> {
  const d = f.domain;
  return {
    name: f.name,
    type: esriName(f.type),
    alias: f.alias || f.name,
    ...(f.type === 'geoFieldTypeString' ? { length: f.length } : {}),
    ...(d
      ? {
          domain:
            d.type === 'range'
              ? { type: 'range', name: d.name, range: [...d.range] }
              : { type: 'codedValue', name: d.name, codedValues: d.codedValues.map((c) => ({ name: c.name, code: c.code })) },
        }
      : {}),
  };
}

const attrJson = (v: AttributeValue | undefined, type: FieldType): unknown => {
  if (v === undefined || v === null) return null;
  if (v instanceof Date) return v.getTime();
  if (type === 'geoFieldTypeDate' && typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? v : t;
  }
  return v;
};

export function featureJson(data: FeatureSetData, row: FeatureRow): Record<string, unknown> {
  const attributes: Record<string, unknown> = {};
  for (const f of data.fields) if (f.type !== 'geoFieldTypeGeometry') attributes[f.name] = attrJson(valueOf(data, row, f), f.type);
  const withGeometry = data.fields.some((f) => f.type === 'geoFieldTypeGeometry');
  return { attributes, ...(withGeometry && row.geometry ? { geometry: geometryJson(row.geometry) } : {}) };
}

/** The Esri JSON feature set of the rows (dates as epoch milliseconds). */
export function featureSetJson(data: FeatureSetData): Record<string, unknown> {
  const attrs = data.fields.filter((f) => f.type !== 'geoFieldTypeGeometry');
  const withGeometry = attrs.length !== data.fields.length && data.geometryType !== null;
  return {
    displayFieldName: data.displayField,
    ...(attrs.some((f) => f.name === data.objectIdField) ? { objectIdFieldName: data.objectIdField } : {}),
    fieldAliases: Object.fromEntries(attrs.map((f) => [f.name, f.alias || f.name])),
    ...(withGeometry ? { geometryType: esriName(GEOMETRY_TYPES[data.geometryType!]!) } : {}),
    ...(withGeometry ? { spatialReference: spatialReferenceJson(data.spatialReference) } : {}),
    fields: attrs.map(fieldJson),
    features: data.rows.map((r) => featureJson(data, r)),
    ...(data.exceededTransferLimit ? { exceededTransferLimit: true } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// KML 2.2

const WGS84: SpatialReference = { wkid: 4326, geographic: true };

const xmlText = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const kmlCoords = (l: readonly (readonly number[])[]): string => `<coordinates>${l.map((c) => `${c[0]},${c[1]}`).join(' ')}</coordinates>`;

function kmlPolygon(p: readonly (readonly (readonly number[])[])[]): string {
  const [outer, ...holes] = p;
  const ring = (r: readonly (readonly number[])[]): string => `<LinearRing>${kmlCoords(r)}</LinearRing>`;
  return `<Polygon><outerBoundaryIs>${ring(outer ?? [])}</outerBoundaryIs>${holes.map((h) => `<innerBoundaryIs>${ring(h)}</innerBoundaryIs>`).join('')}</Polygon>`;
}

export function kmlGeometry(g: Geometry): string {
  const multi = (parts: string[]): string => (parts.length === 1 ? parts[0]! : `<MultiGeometry>${parts.join('')}</MultiGeometry>`);
  switch (g.type) {
    case 'Point':
      return `<Point>${kmlCoords([g.coordinates])}</Point>`;
    case 'MultiPoint':
      return multi(g.coordinates.map((c) => `<Point>${kmlCoords([c])}</Point>`));
    case 'LineString':
      return `<LineString>${kmlCoords(g.coordinates)}</LineString>`;
    case 'MultiLineString':
      return multi(g.coordinates.map((l) => `<LineString>${kmlCoords(l)}</LineString>`));
    case 'Polygon':
      return kmlPolygon(g.coordinates);
    case 'MultiPolygon':
      return multi(g.coordinates.map(kmlPolygon));
  }
}

const kmlValue = (v: AttributeValue | undefined): string =>
  v === null || v === undefined ? '' : v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : String(v);

/** A KML 2.2 document: one Placemark per row (name = display field), attributes as ExtendedData, geometry in WGS 84. */
export function kmlOf(data: FeatureSetData): string {
  const toWgs = transformer(data.spatialReference, WGS84);
  const display = data.fields.find((f) => f.name.toLowerCase() === data.displayField.toLowerCase());
  const attrs = data.fields.filter((f) => f.type !== 'geoFieldTypeGeometry');
  const marks = data.rows.map((row) => {
    const name = display ? kmlValue(valueOf(data, row, display)) : String(row.id);
    const ext = attrs.map(
      (f) =>
        `<Data name="${xmlText(f.name)}"><displayName>${xmlText(f.alias || f.name)}</displayName><value>${xmlText(kmlValue(valueOf(data, row, f)))}</value></Data>`,
    );
    const geom = row.geometry && attrs.length !== data.fields.length ? kmlGeometry(mapGeometry(row.geometry, toWgs)) : '';
    return `<Placemark id="${xmlText(`${data.objectIdField}_${row.id}`)}"><name>${xmlText(name)}</name><ExtendedData>${ext.join('')}</ExtendedData>${geom}</Placemark>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>${xmlText(data.name)}</name>${marks.join('')}</Document></kml>\n`;
}

// ---------------------------------------------------------------------------------------------
// AMF3 (Adobe's Action Message Format 3): the JSON values as AMF3 values. Objects are anonymous
// dynamic objects with inline traits; strings are sent once and referenced afterwards.

/** AMF3 bytes of a JSON-like value (null, boolean, number, string, Date, arrays, plain objects). */
export function amf3(value: unknown): Uint8Array {
  const out: number[] = [];
  const strings = new Map<string, number>();
  const u29 = (n: number): void => {
    if (n < 0x80) out.push(n);
    else if (n < 0x4000) out.push(((n >> 7) & 0x7f) | 0x80, n & 0x7f);
    else if (n < 0x200000) out.push(((n >> 14) & 0x7f) | 0x80, ((n >> 7) & 0x7f) | 0x80, n & 0x7f);
    else out.push(((n >> 22) & 0x7f) | 0x80, ((n >> 15) & 0x7f) | 0x80, ((n >> 8) & 0x7f) | 0x80, n & 0xff);
  };
  const double = (d: number): void => {
    const b = new DataView(new ArrayBuffer(8));
    b.setFloat64(0, d);
    for (let i = 0; i < 8; i++) out.push(b.getUint8(i));
  };
  // UTF-8-vr: a reference (index << 1) to a string already sent, else (length << 1 | 1) and the bytes.
  const str = (s: string): void => {
    const ref = strings.get(s);
    if (ref !== undefined) return u29(ref << 1);
    if (s !== '') strings.set(s, strings.size);
    const bytes = new TextEncoder().encode(s);
    u29((bytes.length << 1) | 1);
    for (const b of bytes) out.push(b);
  };
  const write = (v: unknown): void => {
    if (v === undefined) out.push(0x00);
    else if (v === null) out.push(0x01);
    else if (v === false) out.push(0x02);
    else if (v === true) out.push(0x03);
    else if (typeof v === 'number') {
      if (Number.isInteger(v) && v >= -0x10000000 && v <= 0x0fffffff && !Object.is(v, -0)) {
        out.push(0x04);
        u29(v & 0x1fffffff);
      } else {
        out.push(0x05);
        double(v);
      }
    } else if (typeof v === 'string') {
      out.push(0x06);
      str(v);
    } else if (v instanceof Date) {
      out.push(0x08, 0x01);
      double(v.getTime());
    } else if (Array.isArray(v)) {
      out.push(0x09);
      u29((v.length << 1) | 1);
      out.push(0x01); // no associative part
      for (const item of v) write(item);
    } else if (typeof v === 'object') {
      // 0x0B: object inline, traits inline, dynamic, no sealed members; class name '' (anonymous).
      out.push(0x0a, 0x0b, 0x01);
      for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
        if (k === '' || item === undefined) continue;
        str(k);
        write(item);
      }
      out.push(0x01);
    } else throw new TypeError(`AMF3 cannot encode ${typeof v}`);
  };
  write(value);
  return Uint8Array.from(out);
}

// ---------------------------------------------------------------------------------------------
// QueryResult

/** Writes an answer file and returns its public URL (the outputs route). */
export type PublishOutput = (bytes: Uint8Array, extension: string, contentType: string) => Promise<string>;

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Encoded answers of a non-object format: the bytes, their extension and MIME type. */
export function encodedAnswer(
  kind: 'json' | 'amf' | 'kml',
  json: () => unknown,
  kml: () => string,
): { bytes: Uint8Array; ext: string; type: string } {
  switch (kind) {
    case 'json':
      return { bytes: utf8(JSON.stringify(json())), ext: 'json', type: 'application/json' };
    case 'amf':
      return { bytes: amf3(json()), ext: 'amf', type: 'application/x-amf' };
    case 'kml':
      return { bytes: utf8(kml()), ext: 'kml', type: 'application/vnd.google-earth.kml+xml' };
  }
}

/** A QueryResult holding `object`, or the encoded bytes as MimeData, or as a URL. */
export async function queryResultOf(
  format: string,
  path: string,
  answers: { readonly object: () => SoapObject; readonly json: () => unknown; readonly kml?: () => string },
  publish: PublishOutput,
): Promise<SoapObject> {
  const m = /^geo(?:Query|Relate)Result(RecordSetAsObject|RelatedRecordSetAsObject|Json|Amf|KML)(AsMime|AsURL)?$/.exec(format);
  if (!m || (m[1]!.endsWith('AsObject') ? m[2] !== undefined : m[2] === undefined)) {
    throw invalidArgument(path, `${path}: '${format}' is not a result format.`);
  }
  if (m[1]!.endsWith('AsObject')) return { $type: 'QueryResult', URL: '', Object: answers.object() };
  const kind = m[1] === 'Json' ? 'json' : m[1] === 'Amf' ? 'amf' : 'kml';
  if (kind === 'kml' && answers.kml === undefined)
    throw invalidArgument(path, `${path}: '${format}' is not a result format of this operation.`);
  const enc = encodedAnswer(kind, answers.json, answers.kml ?? ((): string => ''));
  if (m[2] === 'AsMime') return { $type: 'QueryResult', MimeData: enc.bytes, URL: '', Object: null };
  return { $type: 'QueryResult', URL: await publish(enc.bytes, enc.ext, enc.type), Object: null };
}

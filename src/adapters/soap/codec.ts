/**
 * The table-driven SOAP codec (protocols.md §5.3, §5.4): requests are decoded into the JS values of
 * operation.ts's conventions, results are encoded into the `<Op>Response` content, both walking the
 * type table (schema.ts) and the operation signatures (signatures.ts). Nothing here knows a type by
 * name except the inference defaults of §5.3 rule 4.
 *
 * Paths in errors name the element from the operation's wrapper down, e.g. `MapDescription/MapArea`
 * or `LayerIDs[2]` (array items counted from 0).
 */
import { EngineError, invalidArgument } from '../../core/errors.js';
import { spatialReferenceOfWkid } from '../../core/spatial-reference.js';
import { GEO_SOAP_NS, XS_NS, responseEnvelope, type SoapElement } from './envelope.js';
import type { OperationSignature, SoapArgs, SoapObject, SoapResult, SoapScalar, SoapValue, XsValue } from './operation.js';
import {
  allFields,
  arrayItem,
  complexType,
  derivedTypes,
  derivesFrom,
  enumeration,
  isPolymorphic,
  isXsType,
  type FieldDecl,
} from './schema.js';
import { el, typed, xmlBase64, xmlDateTime, xmlDouble, XmlFragment } from './xml.js';

// ---------------------------------------------------------------------------------------------
// Lexical forms

/** Bounds of the XML Schema integer types the table uses. */
const INTEGER_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  'xs:int': [-2147483648, 2147483647],
  'xs:short': [-32768, 32767],
  'xs:unsignedByte': [0, 255],
  // Decision: xs:long is read and written within JS's safe integers (±2^53-1); larger values are refused.
  'xs:long': [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  // Read in anyType slots only (a client's own xsi:type): the same safe-integer bounds.
  'xs:integer': [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

const DOUBLE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const DATE_TIME = /^(-?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** What a value of an `xs:` type must look like, for error messages. */
function describeXs(type: string): string {
  const range = INTEGER_RANGES[type];
  if (range) return `a whole number from ${range[0]} to ${range[1]}`;
  switch (type) {
    case 'xs:double':
    case 'xs:float':
      return 'a number (INF, -INF and NaN allowed)';
    case 'xs:decimal':
      return 'a decimal number';
    case 'xs:boolean':
      return 'true or false';
    case 'xs:dateTime':
      return 'a date and time like 2024-05-01T12:00:00Z';
    case 'xs:base64Binary':
      return 'base64 data';
    default:
      return 'text';
  }
}

const quote = (text: string): string => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);

/** Parse the lexical form of an `xs:` scalar type (§5.3: validated; whitespace collapsed except for strings). */
function parseXs(type: string, raw: string, path: string): SoapScalar {
  if (type === 'xs:string') return raw;
  const text = raw.trim();
  const bad = (): EngineError => invalidArgument(path, `${path} must be ${describeXs(type)}, not ${quote(text)}.`);
  const range = INTEGER_RANGES[type];
  if (range) {
    const n = /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(n) || n < range[0] || n > range[1]) throw bad();
    return n;
  }
  switch (type) {
    case 'xs:decimal':
      if (!/^[+-]?(?:\d+\.?\d*|\.\d+)$/.test(text)) throw bad();
      return Number(text);
    case 'xs:double':
    case 'xs:float':
      if (text === 'INF' || text === '+INF') return Infinity;
      if (text === '-INF') return -Infinity;
      if (text === 'NaN') return NaN;
      if (!DOUBLE.test(text)) throw bad();
      return Number(text);
    case 'xs:boolean':
      if (text === 'true' || text === '1') return true;
      if (text === 'false' || text === '0') return false;
      throw bad();
    case 'xs:base64Binary': {
      const compact = text.replace(/\s+/g, '');
      if (!BASE64.test(compact)) throw bad();
      const b = Buffer.from(compact, 'base64');
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    }
    case 'xs:dateTime': {
      const m = DATE_TIME.exec(text);
      if (!m) throw bad();
      const [, y, mo, d, h, mi, s] = m.map((x) => (x === undefined ? 0 : Number(x))) as number[];
      const valid =
        mo! >= 1 && mo! <= 12 && d! >= 1 && d! <= new Date(Date.UTC(y!, mo!, 0)).getUTCDate() && h! <= 24 && mi! <= 59 && s! <= 59;
      // Decision: a dateTime without a time zone is read as UTC.
      const date = new Date(m[8] === undefined ? `${text}Z` : text);
      if (!valid || Number.isNaN(date.getTime())) throw bad();
      return date;
    }
    default:
      throw invalidArgument(path, `${path} has the unsupported type ${type}.`);
  }
}

/** The schema default of a missing required value-type element (§5.3 rule 6). */
function defaultOf(fd: FieldDecl, path: string): SoapValue {
  if (fd.default !== undefined) return fd.type.startsWith('xs:') ? parseXs(fd.type, fd.default, path) : fd.default;
  const e = enumeration(fd.type);
  // Decision: a missing required enumeration reads as its first value (what generated .NET proxies send when unset).
  if (e !== undefined) return e.values[0];
  if (INTEGER_RANGES[fd.type] !== undefined || fd.type === 'xs:double') return 0;
  switch (fd.type) {
    case 'xs:boolean':
      return false;
    case 'xs:string':
      return '';
    case 'xs:base64Binary':
      return new Uint8Array(0);
    case 'xs:anyType':
      return null;
    case 'xs:dateTime':
      // Decision: a time has no sensible default; a missing one is an error like a missing structure.
      throw invalidArgument(path, `${path} is required.`);
  }
  // Decision: a missing required ArrayOf element reads as the empty array (its natural empty value).
  if (arrayItem(fd.type) !== undefined) return [];
  throw invalidArgument(path, `${path} is required.`);
}

const fieldNamesCache = new Map<string, ReadonlySet<string>>();
/** The element names of a complex type, base types' included. */
function fieldNames(type: string): ReadonlySet<string> {
  let names = fieldNamesCache.get(type);
  if (names === undefined) fieldNamesCache.set(type, (names = new Set(allFields(type).map((f) => f.name))));
  return names;
}

// ---------------------------------------------------------------------------------------------
// Request decoding (§5.3)

/**
 * The concrete type to read when an element of a polymorphic type has no `xsi:type` (§5.3 rule 4).
 * Decision: besides the rule's list, `Polyline`/`Polygon` read as `PolylineN`/`PolygonN`.
 */
const INFERRED_TYPES: Readonly<Record<string, string>> = {
  MapArea: 'MapExtent',
  Envelope: 'EnvelopeN',
  Point: 'PointN',
  Multipoint: 'MultipointN',
  Polyline: 'PolylineN',
  Polygon: 'PolygonN',
  Color: 'RgbColor',
};

/** Last child element with this local name, nil ones included (§5.3 rule 5: last wins). */
function lastChild(parent: SoapElement, name: string): SoapElement | undefined {
  for (let i = parent.children.length - 1; i >= 0; i--) {
    const c = parent.children[i];
    if (c !== undefined && c.name === name) return c;
  }
  return undefined;
}

/** `xsi:type` of an element as a table or `xs:` type name (§5.3 rule 3); undefined when absent. */
function xsiTypeOf(e: SoapElement, path: string): string | undefined {
  const t = e.xsiType;
  if (t === undefined) return undefined;
  if (t.namespace === XS_NS) return `xs:${t.name}`;
  // An unbound prefix falls back to the local name; a type of another namespace is not one of ours.
  if (t.namespace === undefined || t.namespace === GEO_SOAP_NS) {
    if (complexType(t.name) !== undefined || enumeration(t.name) !== undefined) return t.name;
  }
  const shown = t.namespace === undefined || t.namespace === GEO_SOAP_NS ? t.name : `{${t.namespace}}${t.name}`;
  throw invalidArgument(path, `${path} has the unknown type ${shown}.`);
}

/** The concrete type of an element of declared complex type `declared` without `xsi:type` (§5.3 rule 4). */
function inferType(e: SoapElement, declared: string, path: string): string {
  const decl = complexType(declared);
  if (decl === undefined) throw new EngineError('INTERNAL', `type ${declared} is not in the SOAP type table`);
  if (!isPolymorphic(declared)) return declared;
  if (declared === 'SpatialReference') {
    // Decision (§5.3 rule 4): a WKID (or LatestWKID) the engine knows tells geographic from projected.
    for (const name of ['WKID', 'LatestWKID']) {
      const w = lastChild(e, name);
      const n = w && !w.nil && /^\s*\d+\s*$/.test(w.text) ? Number(w.text) : undefined;
      const sr = n !== undefined ? spatialReferenceOfWkid(n) : undefined;
      if (sr !== undefined) return sr.geographic ? 'GeographicCoordinateSystem' : 'ProjectedCoordinateSystem';
    }
    return 'UnknownCoordinateSystem';
  }
  const family = [declared, ...derivedTypes(declared)];
  const known = new Set(family.flatMap((t) => allFields(t).map((fd) => fd.name)));
  const present = [...new Set(e.children.filter((c) => known.has(c.name)).map((c) => c.name))];
  const candidates = family.filter((t) => {
    if (complexType(t)?.abstract) return false;
    const names = fieldNames(t);
    return present.every((n) => names.has(n));
  });
  const preferred = INFERRED_TYPES[declared];
  if (preferred !== undefined && candidates.includes(preferred)) return preferred;
  // Several fit: the least derived one, when every other extends it (a QueryFilter with spatial elements is a SpatialFilter).
  const root = candidates.find((r) => candidates.every((c) => derivesFrom(c, r)));
  if (root !== undefined) return root;
  const options = (candidates.length > 0 ? candidates : family.filter((t) => !complexType(t)?.abstract)).slice(0, 12);
  throw invalidArgument(path, `${path} needs an xsi:type attribute naming its type (one of ${options.join(', ')}).`);
}

/** Decode one present element of declared type `fd.type` (§5.3 rules 2-7). */
function decodeElement(e: SoapElement, fd: FieldDecl, path: string): SoapValue {
  const given = xsiTypeOf(e, path);
  const declared = fd.type;
  if (declared === 'xs:anyType') return decodeAny(e, given, path);
  let type = declared;
  if (given !== undefined && given !== declared) {
    const derived = complexType(declared) !== undefined && complexType(given) !== undefined && derivesFrom(given, declared);
    if (!derived) throw invalidArgument(path, `${path} has type ${given}, which is not a ${declared.replace(/^xs:/, '')}.`);
    type = given;
  }
  if (isXsType(type) || type.startsWith('xs:')) {
    if (type !== 'xs:string' && e.text.trim() === '' && e.children.length === 0) {
      // Decision: an empty value-type element counts as absent (its schema default when required).
      return fd.minOccurs === 0 ? undefined : defaultOf(fd, path);
    }
    return parseXs(type, e.text, path);
  }
  const en = enumeration(type);
  if (en !== undefined) {
    const text = e.text.trim();
    if (text === '' && fd.minOccurs === 0) return undefined;
    if (en.values.includes(text)) return text;
    const alias = en.inputAliases?.[text];
    if (alias !== undefined) return alias;
    if (text === '') return defaultOf(fd, path);
    throw invalidArgument(path, `${path} must be one of ${en.values.join(', ')}, not ${quote(text)}.`);
  }
  const concrete = given === undefined ? inferType(e, type, path) : type;
  const c = complexType(concrete);
  if (c === undefined) throw new EngineError('INTERNAL', `type ${concrete} is not in the SOAP type table`);
  if (c.abstract) throw invalidArgument(path, `${path} has the abstract type ${concrete}; name a concrete type in xsi:type.`);
  const item = arrayItem(concrete);
  if (item !== undefined) return decodeArray(e, item, path);
  const out: Record<string, SoapValue> = { $type: concrete };
  for (const f of allFields(concrete)) {
    const v = decodeField(e, f, `${path}/${f.name}`);
    if (v !== undefined) out[f.name] = v;
  }
  return out;
}

/** The items of an `ArrayOf<X>` element (§5.4 rule 8); a nil item is null in anyType arrays and left out elsewhere. */
function decodeArray(e: SoapElement, item: FieldDecl, path: string): SoapValue[] {
  const out: SoapValue[] = [];
  let i = 0;
  for (const c of e.children) {
    if (c.name !== item.name) continue;
    const p = `${path}[${i++}]`;
    if (c.nil) {
      if (item.type === 'xs:anyType') out.push(null);
      continue;
    }
    const v = decodeElement(c, { ...item, minOccurs: 1 }, p);
    if (v !== undefined) out.push(v);
  }
  return out;
}

/** An `xs:anyType` slot (§5.4 rule 6 read back): typed by `xsi:type`, else its text as a string. */
function decodeAny(e: SoapElement, given: string | undefined, path: string): SoapValue {
  if (given === undefined) {
    if (e.children.length > 0) throw invalidArgument(path, `${path} needs an xsi:type attribute naming its type.`);
    return e.text;
  }
  if (given === 'xs:anyType') return e.text;
  return decodeElement(e, { name: e.name, type: given, minOccurs: 1, maxOccurs: 1, nillable: true }, path);
}

/** Decode a child element of `parent` declared by `fd` (absent, nil or present). */
function decodeField(parent: SoapElement, fd: FieldDecl, path: string): SoapValue {
  const e = lastChild(parent, fd.name);
  // §5.3 rule 7: xsi:nil counts as absent; an anyType slot keeps it as null (nulls are meaningful values there).
  if (e !== undefined && e.nil && fd.type === 'xs:anyType') return null;
  if (e === undefined || e.nil) return fd.minOccurs === 0 ? undefined : defaultOf(fd, path);
  return decodeElement(e, fd, path);
}

/**
 * Decode an operation's request element (the wrapper, `<Op>`) into its arguments (§5.3): children
 * matched by local name in any order (the last of repeated ones wins), `xsi:type` resolved through
 * in-scope prefixes or by local name, abstract types inferred, missing required value types read
 * as schema defaults and missing required structures refused, unknown elements ignored. Values are
 * checked against their lexical forms and enumerations; errors name the element's path.
 */
export function decodeRequest(signature: OperationSignature, element: SoapElement): SoapArgs {
  const args: Record<string, SoapValue> = {};
  for (const d of signature.request) {
    const fd: FieldDecl = { name: d.name, type: d.type, minOccurs: d.optional ? 0 : 1, maxOccurs: 1, nillable: false };
    const v = decodeField(element, fd, d.name);
    if (v !== undefined) args[d.name] = v;
  }
  return args;
}

// ---------------------------------------------------------------------------------------------
// Response encoding (§5.4)

/** A value that does not fit the table: a programming error of the operation that produced it. */
const misfit = (path: string, message: string): EngineError => new EngineError('INTERNAL', `SOAP response ${path}: ${message}`);

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'bytes';
  if (v instanceof Date) return 'a Date';
  if (typeof v === 'string') return `the string ${quote(v)}`;
  if (typeof v === 'object') return `an object${'$type' in v ? ` of type ${String((v as SoapObject).$type)}` : ''}`;
  return typeof v === 'number' || typeof v === 'boolean' ? `${typeof v} ${String(v)}` : typeof v;
}

const isComplexValue = (v: SoapValue): v is SoapObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date) && !('$xs' in v);

/** Lexical form of a scalar of `xs:` type `type` (§5.4 rule 7), checking the JS type. */
function lexicalOf(type: string, v: SoapValue, path: string): string {
  const wrong = (): EngineError => misfit(path, `expected ${describeXs(type)} (${type}), got ${describeValue(v)}`);
  const range = INTEGER_RANGES[type];
  if (range) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < range[0] || v > range[1]) throw wrong();
    return String(v);
  }
  switch (type) {
    case 'xs:double':
    case 'xs:float':
      if (typeof v !== 'number') throw wrong();
      return xmlDouble(v);
    case 'xs:boolean':
      if (typeof v !== 'boolean') throw wrong();
      return v ? 'true' : 'false';
    case 'xs:string':
      if (typeof v !== 'string') throw wrong();
      return v;
    case 'xs:dateTime':
      if (!(v instanceof Date) || Number.isNaN(v.getTime())) throw wrong();
      return xmlDateTime(v);
    case 'xs:base64Binary':
      if (!(v instanceof Uint8Array)) throw wrong();
      return xmlBase64(v);
    default:
      throw misfit(path, `unsupported type ${type}`);
  }
}

const nil = (name: string): XmlFragment => el(name, { 'xsi:nil': 'true' });

/** An `xs:anyType` slot (§5.4 rule 6): `xsi:type` from the value, `xsi:nil` for null. */
function encodeAny(name: string, v: SoapValue, path: string): XmlFragment {
  if (v === null || v === undefined) return nil(name);
  if (typeof v === 'string') return el(name, { 'xsi:type': 'xs:string' }, v);
  if (typeof v === 'boolean') return el(name, { 'xsi:type': 'xs:boolean' }, v ? 'true' : 'false');
  if (typeof v === 'number') {
    const type = Number.isInteger(v) && v >= -2147483648 && v <= 2147483647 ? 'xs:int' : 'xs:double';
    return el(name, { 'xsi:type': type }, lexicalOf(type, v, path));
  }
  if (v instanceof Date) return el(name, { 'xsi:type': 'xs:dateTime' }, lexicalOf('xs:dateTime', v, path));
  if (v instanceof Uint8Array) return el(name, { 'xsi:type': 'xs:base64Binary' }, xmlBase64(v));
  if (Array.isArray(v)) throw misfit(path, 'an array cannot fill an anyType slot (no type to name)');
  if ('$xs' in v) {
    const x = v as XsValue;
    const type = `xs:${x.$xs}`;
    return el(name, { 'xsi:type': type }, lexicalOf(type, x.value, path));
  }
  const o = v as SoapObject;
  if (o.$type === undefined) throw misfit(path, 'an object in an anyType slot needs $type');
  return encodeValue(name, o.$type, o, path);
}

/** One element of declared type `type` holding `v` (present, not null). */
function encodeValue(name: string, type: string, v: SoapValue, path: string): XmlFragment {
  if (type === 'xs:anyType') return encodeAny(name, v, path);
  if (type.startsWith('xs:')) return el(name, null, lexicalOf(type, v, path));
  const en = enumeration(type);
  if (en !== undefined) {
    if (typeof v !== 'string' || !en.values.includes(v))
      throw misfit(path, `expected a ${type} value (${en.values.join(', ')}), got ${describeValue(v)}`);
    return el(name, null, v);
  }
  if (complexType(type) === undefined) throw misfit(path, `type ${type} is not in the type table`);
  const item = arrayItem(type);
  if (item !== undefined) {
    if (!Array.isArray(v)) throw misfit(path, `expected an array (${type}), got ${describeValue(v)}`);
    const items = (v as readonly SoapValue[]).map((x, i) => {
      const p = `${path}[${i}]`;
      if (x === null && item.nillable) return nil(item.name);
      if (x === null || x === undefined) throw misfit(p, `an item of ${type} cannot be ${describeValue(x ?? null)}`);
      return encodeValue(item.name, item.type, x, p);
    });
    // §5.4 rule 3: the vendor writes xsi:type on every complex element, arrays included.
    return typed(name, type, items);
  }
  if (!isComplexValue(v)) throw misfit(path, `expected an object of type ${type}, got ${describeValue(v)}`);
  const concrete = v.$type ?? type;
  const c = complexType(concrete);
  if (c === undefined) throw misfit(path, `$type ${concrete} is not in the type table`);
  if (!derivesFrom(concrete, type)) throw misfit(path, `$type ${concrete} is not derived from the declared type ${type}`);
  if (c.abstract) throw misfit(path, `type ${concrete} is abstract; set $type to a concrete type`);
  if (arrayItem(concrete) !== undefined) throw misfit(path, `$type ${concrete} is an array type; give a JS array`);
  const fields = allFields(concrete);
  const names = fieldNames(concrete);
  for (const k of Object.keys(v)) {
    if (k !== '$type' && v[k] !== undefined && !names.has(k)) throw misfit(path, `${concrete} has no element ${k}`);
  }
  return typed(
    name,
    concrete,
    fields.map((f) => encodeField(f, v[f.name], `${path}/${f.name}`)),
  );
}

/** A declared element (§5.4 rule 5): omitted when optional and absent, empty when a required string is absent. */
function encodeField(fd: FieldDecl, v: SoapValue, path: string): XmlFragment | null {
  if (v === undefined || v === null) {
    if (v === null && fd.nillable) return nil(fd.name);
    if (fd.minOccurs === 0) return null;
    if (fd.type === 'xs:string') return el(fd.name, null, '');
    // Decision: a required base64Binary without a value is written empty (zero bytes), like a required
    // string: AttachmentData/Data of a URL answer is "empty" (protocols.md §5.6).
    if (fd.type === 'xs:base64Binary') return el(fd.name, null, '');
    // Decision: a required anyType slot without a value (QueryResult/Object of a MIME or URL answer) is written empty.
    if (fd.type === 'xs:anyType') return el(fd.name, null);
    throw misfit(path, `required element of type ${fd.type} has no value`);
  }
  return encodeValue(fd.name, fd.type, v, path);
}

/**
 * The content of an operation's `<tns:<Op>Response>` (§5.4): its response elements (`Result`, or
 * FromMapPoints' `ScreenXValues`/`ScreenYValues`) in schema order, unqualified, with `xsi:type` on
 * every complex element. A value that does not fit the table is an INTERNAL error naming its path.
 */
export function encodeResponse(signature: OperationSignature, result: SoapResult): XmlFragment {
  for (const k of Object.keys(result)) {
    if (result[k] !== undefined && !signature.response.some((d) => d.name === k))
      throw misfit(signature.name, `${signature.name}Response has no element ${k}`);
  }
  const parts = signature.response.map((d) =>
    encodeField({ name: d.name, type: d.type, minOccurs: d.optional ? 0 : 1, maxOccurs: 1, nillable: false }, result[d.name], d.name),
  );
  return new XmlFragment(parts.map((p) => (p === null ? '' : p.xml)).join(''));
}

/** The whole answer document of an operation: `responseEnvelope` around `encodeResponse`. */
export function encodeResponseEnvelope(signature: OperationSignature, result: SoapResult): string {
  return responseEnvelope(signature.name, encodeResponse(signature, result));
}

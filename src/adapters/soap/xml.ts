/**
 * A small typed XML writer for the SOAP map service (protocols.md §5.4): elements are built as
 * `XmlFragment`s, so a plain string handed in as content is always escaped and only fragments built
 * here are written verbatim. Operations write their types in schema order with `el`, `typed` and `opt`.
 */
import { EngineError } from '../../core/errors.js';

/** Well-formed XML text, built only by this module. */
export class XmlFragment {
  readonly xml: string;
  /** Use `el`/`raw`; the constructor is not meant for content from outside. */
  constructor(xml: string) {
    this.xml = xml;
  }
  toString(): string {
    return this.xml;
  }
}

export type XmlScalar = string | number | boolean | Date;
/** Content of an element: fragments, scalars (escaped) and arrays of them; null and undefined are skipped. */
export type XmlContent = XmlFragment | XmlScalar | null | undefined | readonly XmlContent[];
export type XmlAttributes = Readonly<Record<string, XmlScalar | null | undefined>>;

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*(?::[A-Za-z_][A-Za-z0-9_.-]*)?$/;

/**
 * Characters XML 1.0 cannot carry (C0 controls but tab/LF/CR, U+FFFE/U+FFFF, lone surrogates).
 * Decision: replaced by U+FFFD so an answer built from stored data stays well-formed.
 */
const INVALID_CHARS =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Escape character data: `&`, `<`, `>` and CR (kept as `&#13;` so it survives end-of-line handling). */
export function escapeText(s: string): string {
  return s.replace(INVALID_CHARS, '\uFFFD').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#13;');
}

/** Escape an attribute value (double-quoted): also `"` and tab/LF/CR, which attribute normalization would turn into spaces. */
export function escapeAttribute(s: string): string {
  return escapeText(s).replace(/"/g, '&quot;').replace(/\t/g, '&#9;').replace(/\n/g, '&#10;');
}

/** `xs:double` lexical form (§5.4 rule 7): shortest round-trip decimal, `INF`/`-INF`/`NaN` for specials. */
export function xmlDouble(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'INF';
  if (n === -Infinity) return '-INF';
  return Object.is(n, -0) ? '0' : String(n);
}

/** `xs:dateTime` in UTC with `Z` (§5.4 rule 7). */
export function xmlDateTime(d: Date): string {
  if (Number.isNaN(d.getTime())) throw new EngineError('INTERNAL', 'invalid date written to XML');
  return d.toISOString();
}

/** `xs:base64Binary` without line breaks (§5.4 rule 7). */
export function xmlBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Lexical form of a scalar: booleans `true`/`false`, numbers per `xmlDouble`, dates per `xmlDateTime`. */
export function lexical(v: XmlScalar): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return xmlDouble(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return xmlDateTime(v);
}

function checkName(name: string): void {
  if (!NAME.test(name)) throw new EngineError('INTERNAL', `invalid XML name ${JSON.stringify(name)}`);
}

function writeContent(c: XmlContent, out: string[]): void {
  if (c === null || c === undefined) return;
  if (c instanceof XmlFragment) out.push(c.xml);
  else if (Array.isArray(c)) for (const x of c as readonly XmlContent[]) writeContent(x, out);
  else out.push(escapeText(lexical(c as XmlScalar)));
}

/** `<name attrs>content</name>`; attributes whose value is null/undefined are left out. */
export function el(name: string, attributes: XmlAttributes | null, ...content: XmlContent[]): XmlFragment {
  checkName(name);
  let open = `<${name}`;
  if (attributes) {
    for (const [k, v] of Object.entries(attributes)) {
      if (v === null || v === undefined) continue;
      checkName(k);
      open += ` ${k}="${escapeAttribute(lexical(v))}"`;
    }
  }
  const out: string[] = [];
  writeContent(content, out);
  return new XmlFragment(`${open}>${out.join('')}</${name}>`);
}

/** A complex element with its concrete type: `<name xsi:type="tns:<type>">…</name>` (§5.4 rule 3). */
export function typed(name: string, type: string, ...content: XmlContent[]): XmlFragment {
  checkName(type);
  return el(name, { 'xsi:type': type.includes(':') ? type : `tns:${type}` }, ...content);
}

/** An optional (`minOccurs=0`) element: nothing when the value is absent (§5.4 rule 5). */
export function opt(name: string, value: XmlScalar | null | undefined): XmlFragment | null {
  return value === null || value === undefined ? null : el(name, null, value);
}

/**
 * An `xs:anyType` slot (§5.4 rule 6): `xsi:type` from the JS value (`xs:string`, `xs:int` for safe
 * integers, `xs:double`, `xs:boolean`, `xs:dateTime`, `xs:base64Binary`), `xsi:nil="true"` for null.
 */
export function anyValue(name: string, value: XmlScalar | Uint8Array | null | undefined): XmlFragment {
  if (value === null || value === undefined) return el(name, { 'xsi:nil': 'true' });
  if (value instanceof Uint8Array) return el(name, { 'xsi:type': 'xs:base64Binary' }, xmlBase64(value));
  if (typeof value === 'string') return el(name, { 'xsi:type': 'xs:string' }, value);
  if (typeof value === 'boolean') return el(name, { 'xsi:type': 'xs:boolean' }, value);
  if (value instanceof Date) return el(name, { 'xsi:type': 'xs:dateTime' }, value);
  const type = Number.isInteger(value) && value >= -2147483648 && value <= 2147483647 ? 'xs:int' : 'xs:double';
  return el(name, { 'xsi:type': type }, value);
}

/** `ArrayOf<X>` (§5.4 rule 8): `<name xsi:type="tns:ArrayOf<X>"><X>…</X>…</name>`. */
export function arrayOf(name: string, itemName: string, items: readonly XmlContent[]): XmlFragment {
  return typed(
    name,
    `ArrayOf${itemName}`,
    items.map((i) => (i instanceof XmlFragment ? i : el(itemName, null, i))),
  );
}

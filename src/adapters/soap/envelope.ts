/**
 * SOAP 1.1 envelopes of the map service (protocols.md §5.2-§5.4): a lenient, bounded request parser
 * (fast-xml-parser with entities and DTDs off) and the strict response envelope.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { EngineError } from '../../core/errors.js';
import { el, XmlFragment, type XmlContent } from './xml.js';

/** The neutral schema namespace (protocols.md §5.2): WSDL, serialiser and parser all use this one constant. */
export const GEO_SOAP_NS = 'http://www.geo.example/schemas/Geo/3.5.0';
export const SOAP11_ENV_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
export const SOAP12_ENV_NS = 'http://www.w3.org/2003/05/soap-envelope';
export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
export const XS_NS = 'http://www.w3.org/2001/XMLSchema';
/** Content type of every answer, success or fault (§5.7). */
export const SOAP_CONTENT_TYPE = 'text/xml; charset=utf-8';

/**
 * Limits on a request (§5.3 rule 8). Decision: 10 MB, 100 levels, 64 attributes on one element, and
 * 500,000 elements (a geometry of ~160,000 points; 10 MB of `<a/>` would otherwise cost ~800 MB of memory).
 */
export const SOAP_LIMITS = {
  maxBytes: 10 * 1024 * 1024,
  maxDepth: 100,
  maxAttributes: 64,
  maxElements: 500_000,
  // Decision: 64 KiB per attribute value. A request's attributes are namespace declarations, xsi:type and
  // xsi:nil; the parser reads a value at ~35 bytes of heap per character (a 9 MB value needed over 300 MB).
  maxAttributeChars: 65_536,
} as const;

/** Start tags in the text (`<` followed by a name start character), counted before anything is built. */
function countStartTags(text: string): number {
  let n = 0;
  for (let i = text.indexOf('<'); i >= 0; i = text.indexOf('<', i + 1)) {
    const c = text.charCodeAt(i + 1);
    if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c > 127) n++;
  }
  return n;
}

/** SOAP 1.1 fault codes other than Client/Server, raised by the envelope layer itself. */
export type SoapProtocolFaultCode = 'VersionMismatch' | 'MustUnderstand';

/** A fault whose `faultcode` is not derived from the error code (§5.7: SOAP 1.2 envelope -> VersionMismatch). */
export class SoapProtocolFault extends EngineError {
  readonly faultcode: SoapProtocolFaultCode;
  constructor(faultcode: SoapProtocolFaultCode, message: string) {
    super('INVALID_ARGUMENT', message, { issues: [] });
    this.faultcode = faultcode;
  }
}

/** One element of the request, namespaces resolved, children in document order. */
export interface SoapElement {
  /** Local name (prefix dropped: §5.3 rules 1-2 match by local name). */
  readonly name: string;
  /** Namespace URI in scope for the element's prefix (or default namespace); undefined when none. */
  readonly namespace?: string;
  /** Attributes as written (qualified names, entity references decoded), `xmlns` declarations included. */
  readonly attributes: Readonly<Record<string, string>>;
  /** `xsi:type` resolved (§5.3 rule 3): local name of the type, and its namespace when the prefix is bound. */
  readonly xsiType?: { readonly name: string; readonly namespace?: string };
  /** `xsi:nil="true"` (or `1`): the element counts as absent (§5.3 rule 7). */
  readonly nil: boolean;
  /** Child elements in document order. */
  readonly children: readonly SoapElement[];
  /** Character data directly inside the element (text and CDATA, concatenated, untrimmed). */
  readonly text: string;
}

export interface SoapRequest {
  /** Local name of the first (only) child of `Body`. */
  readonly operation: string;
  /** Its namespace, when it had one (§5.3 rule 1: NS or none are both accepted). */
  readonly namespace?: string;
  readonly request: SoapElement;
}

/** Last child with this local name (§5.3 rule 5: a repeated single-valued element, last wins); nil counts as absent. */
export function childOf(e: SoapElement, name: string): SoapElement | undefined {
  for (let i = e.children.length - 1; i >= 0; i--) {
    const c = e.children[i];
    if (c && c.name === name) return c.nil ? undefined : c;
  }
  return undefined;
}

/** Every child with this local name, in order (nil ones left out). */
export function childrenOf(e: SoapElement, name: string): SoapElement[] {
  return e.children.filter((c) => c.name === name && !c.nil);
}

const clientFault = (message: string, code: 'INVALID_ARGUMENT' | 'INVALID_FORMAT' | 'LIMIT_EXCEEDED' = 'INVALID_ARGUMENT'): EngineError =>
  new EngineError(code, message, { issues: [] });

/** `utf-8`, `UTF8`, `"utf-8"`, `us-ascii` (a subset): the charsets a request may name (§5.3). */
function utf8Compatible(charset: string): boolean {
  const c = charset
    .trim()
    .replace(/^["']|["']$/g, '')
    .toLowerCase();
  return c === 'utf-8' || c === 'utf8' || c === 'us-ascii' || c === 'ascii';
}

/**
 * Content type rules. Decision: lenient — any type but SOAP 1.2's `application/soap+xml`
 * (VersionMismatch, §5.7) and multipart (MTOM/SwA, not supported) is read as XML; a charset other
 * than UTF-8 (or its ASCII subset) is refused rather than guessed.
 */
function checkContentType(contentType: string | null): void {
  if (contentType === null || contentType.trim() === '') return;
  const [type = '', ...params] = contentType.split(';');
  const mediaType = type.trim().toLowerCase();
  if (mediaType === 'application/soap+xml') throw new SoapProtocolFault('VersionMismatch', 'Only SOAP 1.1 is supported.');
  if (mediaType.startsWith('multipart/')) throw clientFault('Multipart (MTOM) requests are not supported; send text/xml.');
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq < 0) continue;
    if (p.slice(0, eq).trim().toLowerCase() === 'charset' && !utf8Compatible(p.slice(eq + 1)))
      throw clientFault(`Unsupported charset ${p.slice(eq + 1).trim()}; send UTF-8.`);
  }
}

function decodeBody(body: string | Uint8Array, maxBytes: number): string {
  let text: string;
  if (typeof body === 'string') {
    if (body.length > maxBytes) throw clientFault('The request is too large.', 'LIMIT_EXCEEDED');
    text = body;
  } else {
    if (body.byteLength > maxBytes) throw clientFault('The request is too large.', 'LIMIT_EXCEEDED');
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
    } catch {
      throw clientFault('The request is not valid UTF-8.', 'INVALID_FORMAT');
    }
  }
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text))
    throw clientFault('The request is not valid UTF-8.', 'INVALID_FORMAT');
  // XML 1.0 §2.2: NUL, C0 controls other than tab/CR/LF, U+FFFE and U+FFFF are not characters of a document.
  // eslint-disable-next-line no-control-regex -- the control characters are what is looked for
  const bad = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/.exec(text);
  if (bad) {
    const cp = `U+${bad[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw clientFault(`Malformed XML: the character ${cp} is not allowed in a document.`, 'INVALID_FORMAT');
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The character an entity or character reference `ref` (between `&` and `;`) stands for. */
function entityValue(ref: string): string {
  switch (ref) {
    case 'lt':
      return '<';
    case 'gt':
      return '>';
    case 'amp':
      return '&';
    case 'quot':
      return '"';
    case 'apos':
      return "'";
  }
  const num = /^#(?:x([0-9A-Fa-f]+)|([0-9]+))$/.exec(ref);
  if (num) {
    const cp = num[1] !== undefined ? parseInt(num[1], 16) : parseInt(num[2] ?? '', 10);
    const allowed =
      cp === 0x9 ||
      cp === 0xa ||
      cp === 0xd ||
      (cp >= 0x20 && cp <= 0xd7ff) ||
      (cp >= 0xe000 && cp <= 0xfffd) ||
      (cp >= 0x10000 && cp <= 0x10ffff);
    if (!allowed) throw clientFault(`Malformed XML: character reference &${ref}; is not allowed.`, 'INVALID_FORMAT');
    return String.fromCodePoint(cp);
  }
  throw clientFault(`Malformed XML: undeclared entity &${ref};.`, 'INVALID_FORMAT');
}

/**
 * The five predefined entities and character references; anything else is an undeclared entity.
 * A loop rather than `replace` with a callback: a 9 MB text of `&amp;` (1.6 million references)
 * took over 150 MB that way; pieces are joined every few thousand so memory stays near the output's size.
 */
function decodeEntities(s: string): string {
  let amp = s.indexOf('&');
  if (amp < 0) return s;
  const chunks: string[] = [];
  let parts: string[] = [];
  let from = 0;
  while (amp >= 0) {
    let end = amp + 1;
    for (; end < s.length; end++) {
      const c = s.charCodeAt(end);
      if (c === 59 /* ; */ || c === 38 /* & */ || c === 60 /* < */ || /\s/.test(s[end]!)) break;
    }
    if (s.charCodeAt(end) !== 59) throw clientFault('Malformed XML: a bare "&" in content.', 'INVALID_FORMAT');
    parts.push(s.slice(from, amp), entityValue(s.slice(amp + 1, end)));
    from = end + 1;
    if (parts.length >= 8192) {
      chunks.push(parts.join(''));
      parts = [];
    }
    amp = s.indexOf('&', from);
  }
  parts.push(s.slice(from));
  chunks.push(parts.join(''));
  return chunks.join('');
}

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  allowBooleanAttributes: false,
  // Entities off: predefined ones and character references are decoded by decodeEntities, nothing else.
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  cdataPropName: '#cdata',
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: SOAP_LIMITS.maxDepth + 1,
});

type RawNode = Record<string, unknown>;

/** Character data runs at least this long are handed to the parser as CDATA (see longTextAsCdata). */
const LONG_TEXT = 4096;

/**
 * fast-xml-parser builds character data one character at a time (`text += c`), a rope of ~32 bytes
 * per character: a 9 MB text node cost 300 MB of heap and 1.5 s. CDATA sections are sliced whole, so
 * each long run of character data in a well-formed document (checked by XMLValidator first) is set
 * aside in `texts`, entity references decoded here (as convert would), and replaced by a CDATA section
 * holding NUL and its index: NUL cannot occur in a request (decodeBody refuses it), so the marker is
 * unambiguous, and convert puts the text back. Short runs, markup, comments and CDATA are left as they are.
 */
function longTextAsCdata(xml: string, texts: string[]): string {
  if (xml.length < LONG_TEXT) return xml;
  const out: string[] = [];
  let copied = 0;
  let depth = 0;
  let i = 0;
  while (i < xml.length) {
    if (xml.charCodeAt(i) === 60 /* < */) {
      let end: number;
      if (xml.startsWith('<!--', i)) end = xml.indexOf('-->', i + 4) + 3;
      else if (xml.startsWith('<![CDATA[', i)) end = xml.indexOf(']]>', i + 9) + 3;
      else if (xml.startsWith('<?', i)) end = xml.indexOf('?>', i + 2) + 2;
      else {
        // A tag: attribute values are quoted and may hold '>'.
        end = i + 1;
        while (end < xml.length && xml.charCodeAt(end) !== 62 /* > */) {
          const c = xml.charCodeAt(end);
          if (c === 34 || c === 39) {
            const close = xml.indexOf(c === 34 ? '"' : "'", end + 1);
            if ((close < 0 ? xml.length : close) - end - 1 > SOAP_LIMITS.maxAttributeChars)
              throw clientFault(`An attribute value is longer than ${SOAP_LIMITS.maxAttributeChars} characters.`, 'LIMIT_EXCEEDED');
            end = close < 0 ? xml.length : close;
          }
          end++;
        }
        end++;
        if (xml.charCodeAt(i + 1) === 47 /* / */) depth--;
        else if (xml.charCodeAt(end - 2) !== 47) depth++;
      }
      if (end <= i) return xml; // unterminated: leave the document to the parser's own errors
      i = end;
      continue;
    }
    let next = xml.indexOf('<', i);
    if (next < 0) next = xml.length;
    if (next - i >= LONG_TEXT) {
      // Outside the root only whitespace is well-formed (XMLValidator checks): it is dropped.
      const run = xml.slice(i, next);
      if (depth > 0) texts.push(decodeEntities(run));
      out.push(xml.slice(copied, i), depth > 0 ? `<![CDATA[\u0000${texts.length - 1}]]>` : '');
      copied = next;
    }
    i = next;
  }
  if (copied === 0) return xml;
  out.push(xml.slice(copied));
  return out.join('');
}

/** Namespace scope: prefix ('' = default) -> URI. */
type Scope = ReadonlyMap<string, string>;

function convert(node: RawNode, scope: Scope, depth: number, texts: readonly string[]): SoapElement {
  if (depth > SOAP_LIMITS.maxDepth)
    throw clientFault(`The request nests elements deeper than ${SOAP_LIMITS.maxDepth} levels.`, 'LIMIT_EXCEEDED');
  const qname = Object.keys(node).find((k) => k !== ':@');
  if (qname === undefined) throw clientFault('Malformed XML.', 'INVALID_FORMAT');
  const rawAttrs = (node[':@'] ?? {}) as Record<string, unknown>;
  const attrNames = Object.keys(rawAttrs);
  if (attrNames.length > SOAP_LIMITS.maxAttributes)
    throw clientFault(`An element has more than ${SOAP_LIMITS.maxAttributes} attributes.`, 'LIMIT_EXCEEDED');
  const attributes: Record<string, string> = {};
  let inner: Map<string, string> | undefined;
  for (const k of attrNames) {
    const v = rawAttrs[k];
    if (typeof v !== 'string') throw clientFault(`Malformed XML: attribute ${k} has no value.`, 'INVALID_FORMAT');
    const value = decodeEntities(v);
    attributes[k] = value;
    if (k === 'xmlns' || k.startsWith('xmlns:')) {
      inner ??= new Map(scope);
      inner.set(k === 'xmlns' ? '' : k.slice(6), value);
    }
  }
  const here: Scope = inner ?? scope;
  const colon = qname.indexOf(':');
  const prefix = colon < 0 ? '' : qname.slice(0, colon);
  const name = colon < 0 ? qname : qname.slice(colon + 1);
  // `xmlns=""` undeclares the default namespace: no namespace, as if none had been declared.
  const namespace = here.get(prefix) || undefined;
  // Decision: an element with an unbound prefix is still matched by local name (§5.3 rules 1-2 ignore
  // namespaces below the envelope), with no namespace.
  let xsiType: SoapElement['xsiType'];
  let nil = false;
  for (const [k, v] of Object.entries(attributes)) {
    const c = k.indexOf(':');
    if (c < 0 || here.get(k.slice(0, c)) !== XSI_NS) continue;
    const local = k.slice(c + 1);
    if (local === 'type') {
      const t = v.trim();
      const tc = t.indexOf(':');
      const tns = here.get(tc < 0 ? '' : t.slice(0, tc)) || undefined;
      // §5.3 rule 3: resolve through in-scope prefixes; an unbound prefix falls back to the local name.
      xsiType = tns === undefined ? { name: t.slice(tc + 1) } : { name: t.slice(tc + 1), namespace: tns };
    } else if (local === 'nil') nil = v.trim() === 'true' || v.trim() === '1';
  }
  const children: SoapElement[] = [];
  let text = '';
  const content = node[qname];
  if (Array.isArray(content)) {
    for (const child of content as RawNode[]) {
      if ('#text' in child) text += decodeEntities(typeof child['#text'] === 'string' ? child['#text'] : '');
      else if ('#cdata' in child) {
        for (const t of child['#cdata'] as RawNode[]) {
          const cdata = typeof t['#text'] === 'string' ? t['#text'] : '';
          text += cdata.charCodeAt(0) === 0 ? (texts[Number(cdata.slice(1))] ?? '') : cdata;
        }
      } else children.push(convert(child, here, depth + 1, texts));
    }
  }
  return { name, ...(namespace !== undefined ? { namespace } : {}), attributes, ...(xsiType ? { xsiType } : {}), nil, children, text };
}

/**
 * Parse a SOAP 1.1 request (§5.3). Refused with a `soap:Client` fault: DTDs and entity declarations
 * (never expanded), invalid UTF-8, non-UTF-8 charsets, malformed XML, more than `SOAP_LIMITS`, a root
 * that is not a SOAP 1.1 `Envelope`, no `Body`, an empty `Body` or one with two operations. A SOAP 1.2
 * envelope or content type is a `VersionMismatch` fault. The `SOAPAction` header is never consulted
 * (§5.3: dispatch is on the first child of `Body`), so quoted, unquoted and absent values all work.
 * `maxBytes` (default SOAP_LIMITS.maxBytes) caps the envelope's size: the endpoint passes the site's `maxBodyBytes`.
 */
export function parseEnvelope(body: string | Uint8Array, contentType: string | null, maxBytes: number = SOAP_LIMITS.maxBytes): SoapRequest {
  checkContentType(contentType);
  const text = decodeBody(body, maxBytes);
  if (/<!\s*(?:DOCTYPE|ENTITY)/i.test(text)) throw clientFault('Document type and entity declarations are not accepted.');
  // Decision: the XML declaration's encoding, when given, must be UTF-8 as well.
  const decl = /^\s*<\?xml\s[^?]*encoding\s*=\s*["']([^"']*)["']/.exec(text);
  if (decl && !utf8Compatible(decl[1] ?? '')) throw clientFault(`Unsupported encoding ${decl[1] ?? ''}; send UTF-8.`);
  if (countStartTags(text) > SOAP_LIMITS.maxElements)
    throw clientFault(`The request has more than ${SOAP_LIMITS.maxElements} elements.`, 'LIMIT_EXCEEDED');
  // Long character data set aside before the parser sees it (and over-long attribute values refused).
  const texts: string[] = [];
  const prepared = longTextAsCdata(text, texts);
  const valid = XMLValidator.validate(text, { allowBooleanAttributes: false });
  if (valid !== true)
    throw clientFault(`Malformed XML: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col}).`, 'INVALID_FORMAT');
  let raw: RawNode[];
  try {
    raw = parser.parse(prepared) as RawNode[];
  } catch (e) {
    if (e instanceof Error && /nested/i.test(e.message))
      throw clientFault(`The request nests elements deeper than ${SOAP_LIMITS.maxDepth} levels.`, 'LIMIT_EXCEEDED');
    throw clientFault('Malformed XML.', 'INVALID_FORMAT');
  }
  const roots = raw.filter((n) => !('#text' in n && String(n['#text']).trim() === ''));
  if (roots.length !== 1 || roots[0] === undefined || '#text' in roots[0] || '#cdata' in roots[0])
    throw clientFault('Malformed XML: the document must have exactly one root element.', 'INVALID_FORMAT');
  const envelope = convert(roots[0], new Map([['xml', 'http://www.w3.org/XML/1998/namespace']]), 1, texts);
  if (envelope.name === 'Envelope' && envelope.namespace === SOAP12_ENV_NS)
    throw new SoapProtocolFault('VersionMismatch', 'Only SOAP 1.1 is supported.');
  if (envelope.name !== 'Envelope' || envelope.namespace !== SOAP11_ENV_NS) throw clientFault('The request is not a SOAP 1.1 Envelope.');
  const header = envelope.children.find((c) => c.name === 'Header' && c.namespace === SOAP11_ENV_NS);
  // Decision: headers are ignored, except one marked mustUnderstand (we understand none: SOAP 1.1 §4.2.3).
  for (const h of header?.children ?? []) {
    const mu = Object.entries(h.attributes).find(([k]) => k === 'mustUnderstand' || k.endsWith(':mustUnderstand'));
    if (mu && mu[1].trim() === '1') throw new SoapProtocolFault('MustUnderstand', `Header ${h.name} is not understood.`);
  }
  const bodies = envelope.children.filter((c) => c.name === 'Body' && c.namespace === SOAP11_ENV_NS);
  const soapBody = bodies[0];
  if (soapBody === undefined) throw clientFault('The Envelope has no Body.');
  if (bodies.length > 1) throw clientFault('The Envelope has more than one Body.');
  const operation = soapBody.children[0];
  if (operation === undefined) throw clientFault('The Body holds no operation.');
  if (soapBody.children.length > 1) throw clientFault('The Body holds more than one operation.');
  // §5.3 rule 1: the wrapper may be in the service namespace or in none; another namespace is not ours.
  if (operation.namespace !== undefined && operation.namespace !== GEO_SOAP_NS)
    throw clientFault(`Operation ${operation.name} is in namespace ${operation.namespace}; expected ${GEO_SOAP_NS}.`);
  return {
    operation: operation.name,
    ...(operation.namespace !== undefined ? { namespace: operation.namespace } : {}),
    request: operation,
  };
}

/** Envelope opening tag of answers and faults (§5.4 rule 1): `soap`, `xsi`, `xs` and `tns` declared. */
const ENVELOPE_NS = { 'xmlns:soap': SOAP11_ENV_NS, 'xmlns:xsi': XSI_NS, 'xmlns:xs': XS_NS, 'xmlns:tns': GEO_SOAP_NS } as const;

/** A whole SOAP document around one Body child. */
export function soapDocument(bodyChild: XmlFragment): string {
  return `<?xml version="1.0" encoding="utf-8"?>\n${el('soap:Envelope', ENVELOPE_NS, el('soap:Body', null, bodyChild)).xml}`;
}

/**
 * The answer of `operation` (§5.4): `<tns:<Op>Response>` holding `content` — normally one `Result`
 * (see `resultElement`), `ScreenXValues`/`ScreenYValues` for FromMapPoints; everything below unqualified.
 */
export function responseEnvelope(operation: string, content: XmlContent): string {
  return soapDocument(el(`tns:${operation}Response`, null, content));
}

/** `<Result>` with `xsi:type="tns:<type>"` when its declared type is complex (§5.4 rule 3), plain for simple types. */
export function resultElement(type: string | null, ...content: XmlContent[]): XmlFragment {
  return el('Result', type === null ? null : { 'xsi:type': type.includes(':') ? type : `tns:${type}` }, ...content);
}

/** Dotted path of an element for fault messages, e.g. `ImageDescription.ImageDisplay.ImageDPI`. */
const at = (path: string, e: SoapElement): string => (path ? `${path}.${e.name}` : e.name);

const badValue = (path: string, type: string, text: string): EngineError =>
  new EngineError(
    'INVALID_ARGUMENT',
    `${path} must be ${type}, not ${JSON.stringify(text.length > 40 ? text.slice(0, 40) + '…' : text)}.`,
    {
      path,
      issues: [],
    },
  );

/**
 * Value-type children (§5.3 rule 6): an absent (or nil) element reads as the schema default (0, false,
 * empty); a present one is parsed with the XML Schema lexical rules (whitespace collapsed) and an
 * invalid value is a `soap:Client` fault naming the element. `path` is the parent's dotted path.
 */
export function readString(parent: SoapElement, name: string, fallback = ''): string {
  return childOf(parent, name)?.text ?? fallback;
}

/** `xs:boolean`: `true`/`false`/`1`/`0`. */
export function readBoolean(parent: SoapElement, name: string, path = '', fallback = false): boolean {
  const e = childOf(parent, name);
  if (e === undefined) return fallback;
  const t = e.text.trim();
  if (t === 'true' || t === '1') return true;
  if (t === 'false' || t === '0') return false;
  throw badValue(at(path, e), 'true or false', t);
}

/** `xs:double`: decimal or exponent form, `INF`, `-INF`, `NaN` (`+INF` too, as XSD 1.1 allows). */
export function readDouble(parent: SoapElement, name: string, path = '', fallback = 0): number {
  const e = childOf(parent, name);
  if (e === undefined) return fallback;
  const t = e.text.trim();
  if (t === 'INF' || t === '+INF') return Infinity;
  if (t === '-INF') return -Infinity;
  if (t === 'NaN') return NaN;
  if (!/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(t)) throw badValue(at(path, e), 'a number', t);
  return Number(t);
}

/** `xs:int` (32-bit signed); `xs:short`/`xs:long` readers can pass their own bounds. */
export function readInt(parent: SoapElement, name: string, path = '', fallback = 0, min = -2147483648, max = 2147483647): number {
  const e = childOf(parent, name);
  if (e === undefined) return fallback;
  const t = e.text.trim();
  const n = /^[+-]?\d+$/.test(t) ? Number(t) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw badValue(at(path, e), `an integer from ${min} to ${max}`, t);
  return n;
}

/** A required structure (§5.3 rule 6): missing -> `soap:Client` fault naming it. */
export function requireChild(parent: SoapElement, name: string, path = ''): SoapElement {
  const e = childOf(parent, name);
  if (e === undefined)
    throw new EngineError('INVALID_ARGUMENT', `${path ? `${path}.${name}` : name} is required.`, {
      path: path ? `${path}.${name}` : name,
      issues: [],
    });
  return e;
}

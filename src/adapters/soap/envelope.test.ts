import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { EngineError, ERROR_CODES, ERROR_TABLE } from '../../core/errors.js';
import {
  childOf,
  childrenOf,
  GEO_SOAP_NS,
  parseEnvelope,
  readBoolean,
  readDouble,
  readInt,
  readString,
  requireChild,
  resultElement,
  responseEnvelope,
  SOAP11_ENV_NS,
  SOAP_LIMITS,
  SoapProtocolFault,
  type SoapElement,
} from './envelope.js';
import { faultParts, SHOWN_SERVER_DETAILS, SOAP_FAULT_TABLE, soapFault } from './faults.js';
import { anyValue, arrayOf, el, escapeAttribute, escapeText, opt, typed, xmlDouble, XmlFragment } from './xml.js';

const CT = 'text/xml; charset=utf-8';

/** The request of protocols.md §5.3, verbatim. */
const SAMPLE = `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"
                  xmlns:g="http://www.geo.example/schemas/Geo/3.5.0"
                  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <soapenv:Body>
    <g:ExportMapImage>
      <MapDescription>
        <Name>Layers</Name>
        <MapArea xsi:type="g:MapExtent">
          <Extent xsi:type="g:EnvelopeN">
            <XMin>-8240000</XMin><YMin>4960000</YMin><XMax>-8225000</XMax><YMax>4970000</YMax>
          </Extent>
        </MapArea>
        <LayerDescriptions>
          <LayerDescription><LayerID>0</LayerID><Visible>true</Visible><ShowLabels>false</ShowLabels>
            <ScaleSymbols>false</ScaleSymbols><SetSelectionSymbol>false</SetSelectionSymbol>
            <SelectionBufferDistance>0</SelectionBufferDistance><ShowSelectionBuffer>false</ShowSelectionBuffer>
            <DefinitionExpression></DefinitionExpression></LayerDescription>
        </LayerDescriptions>
        <Rotation>0</Rotation>
      </MapDescription>
      <ImageDescription>
        <ImageType><ImageFormat>geoImagePNG</ImageFormat><ImageReturnType>geoImageReturnURL</ImageReturnType></ImageType>
        <ImageDisplay><ImageHeight>400</ImageHeight><ImageWidth>600</ImageWidth><ImageDPI>96</ImageDPI></ImageDisplay>
      </ImageDescription>
    </g:ExportMapImage>
  </soapenv:Body>
</soapenv:Envelope>`;

/** An envelope around `inner` (the Body content), with prefixes chosen by the caller. */
const envelope = (inner: string, env = 'soapenv', extra = ''): string =>
  `<${env}:Envelope xmlns:${env}="${SOAP11_ENV_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"${extra}><${env}:Body>${inner}</${env}:Body></${env}:Envelope>`;

const path = (e: SoapElement, ...names: string[]): SoapElement | undefined =>
  names.reduce<SoapElement | undefined>((at, n) => (at ? childOf(at, n) : undefined), e);

/** What parseEnvelope threw, with its rendered fault. */
function refusal(body: string | Uint8Array, contentType: string | null = CT): { error: EngineError; status: number; fault: Fault } {
  try {
    parseEnvelope(body, contentType);
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    const { status, body: xml } = soapFault(e);
    return { error: e as EngineError, status, fault: faultOf(xml) };
  }
  throw new Error('parseEnvelope accepted the request');
}

interface Fault {
  faultcode: string;
  faultstring: string;
  code: number;
  details: string[];
}

const plain = new XMLParser({ ignoreAttributes: false, parseTagValue: false, isArray: (name) => name === 'Details' });

/** Read a fault document with an independent parser; check its envelope and namespaces on the way. */
function faultOf(xml: string): Fault {
  expect(XMLValidator.validate(xml)).toBe(true);
  const doc = plain.parse(xml) as Record<string, Record<string, unknown>>;
  const env = doc['soap:Envelope'] as Record<string, unknown>;
  expect(env['@_xmlns:soap']).toBe(SOAP11_ENV_NS);
  expect(env['@_xmlns:tns']).toBe(GEO_SOAP_NS);
  const f = (env['soap:Body'] as Record<string, Record<string, unknown>>)['soap:Fault'] as Record<string, unknown>;
  const err = (f['detail'] as Record<string, Record<string, unknown>>)['tns:GeoError'] as Record<string, unknown>;
  return {
    faultcode: String(f['faultcode']),
    faultstring: String(f['faultstring']),
    code: Number(err['Code']),
    details: ((err['Details'] as unknown[] | undefined) ?? []).map(String),
  };
}

describe('parseEnvelope: the request of protocols.md §5.3', () => {
  it('returns the operation, its namespace and the operation element in order, with xsi:type resolved', () => {
    const r = parseEnvelope(SAMPLE, CT);
    expect(r.operation).toBe('ExportMapImage');
    expect(r.namespace).toBe(GEO_SOAP_NS);
    expect(r.request.children.map((c) => c.name)).toEqual(['MapDescription', 'ImageDescription']);
    const md = childOf(r.request, 'MapDescription');
    expect(md?.children.map((c) => c.name)).toEqual(['Name', 'MapArea', 'LayerDescriptions', 'Rotation']);
    expect(path(r.request, 'MapDescription', 'Name')?.text).toBe('Layers');
    expect(path(r.request, 'MapDescription', 'MapArea')?.xsiType).toEqual({ name: 'MapExtent', namespace: GEO_SOAP_NS });
    const extent = path(r.request, 'MapDescription', 'MapArea', 'Extent');
    expect(extent?.xsiType).toEqual({ name: 'EnvelopeN', namespace: GEO_SOAP_NS });
    expect(extent?.children.map((c) => [c.name, c.text])).toEqual([
      ['XMin', '-8240000'],
      ['YMin', '4960000'],
      ['XMax', '-8225000'],
      ['YMax', '4970000'],
    ]);
    expect(path(r.request, 'MapDescription', 'LayerDescriptions', 'LayerDescription', 'DefinitionExpression')?.text).toBe('');
    expect(path(r.request, 'ImageDescription', 'ImageDisplay', 'ImageDPI')?.text).toBe('96');
    expect(r.request.attributes).toEqual({});
  });

  it('accepts bytes as well as a string, with or without a BOM', () => {
    const bytes = new TextEncoder().encode(SAMPLE);
    expect(parseEnvelope(bytes, CT).operation).toBe('ExportMapImage');
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...bytes]);
    expect(parseEnvelope(bom, CT).operation).toBe('ExportMapImage');
    expect(parseEnvelope('\uFEFF' + SAMPLE, CT).operation).toBe('ExportMapImage');
  });
});

describe('parseEnvelope: request quirks tolerated (§5.3)', () => {
  const op = '<e:GetServerInfo xmlns:e="http://www.geo.example/schemas/Geo/3.5.0"><MapName>Layers</MapName></e:GetServerInfo>';

  it.each(['soap', 'soapenv', 'SOAP-ENV', 's', 'env'])('any envelope prefix: %s', (prefix) => {
    const r = parseEnvelope(envelope(op, prefix), CT);
    expect(r.operation).toBe('GetServerInfo');
    expect(childOf(r.request, 'MapName')?.text).toBe('Layers');
  });

  it('an envelope in the default namespace', () => {
    const r = parseEnvelope(`<Envelope xmlns="${SOAP11_ENV_NS}"><Body>${op}</Body></Envelope>`, CT);
    expect(r.operation).toBe('GetServerInfo');
  });

  it('rule 1: the wrapper in the service namespace under any prefix, as default namespace, or in no namespace', () => {
    expect(parseEnvelope(envelope(`<ns1:GetServerInfo xmlns:ns1="${GEO_SOAP_NS}"/>`), CT).namespace).toBe(GEO_SOAP_NS);
    expect(parseEnvelope(envelope(`<GetServerInfo xmlns="${GEO_SOAP_NS}"><MapName>x</MapName></GetServerInfo>`), CT)).toMatchObject({
      operation: 'GetServerInfo',
      namespace: GEO_SOAP_NS,
    });
    const none = parseEnvelope(envelope('<GetServerInfo><MapName>x</MapName></GetServerInfo>'), CT);
    expect(none.operation).toBe('GetServerInfo');
    expect(none.namespace).toBeUndefined();
    // Namespace declared on the envelope (zeep style).
    expect(parseEnvelope(envelope('<ns0:GetServerInfo/>', 'soap-env', ` xmlns:ns0="${GEO_SOAP_NS}"`), CT).namespace).toBe(GEO_SOAP_NS);
  });

  it('rule 2: qualified children (node-soap) are matched by local name', () => {
    const r = parseEnvelope(
      envelope(
        `<tns:ExportMapImage xmlns:tns="${GEO_SOAP_NS}"><tns:MapDescription><tns:Name>L</tns:Name><tns:MapArea xsi:type="tns:MapExtent"><tns:Extent xsi:type="tns:EnvelopeN"><tns:XMin>1</tns:XMin></tns:Extent></tns:MapArea></tns:MapDescription></tns:ExportMapImage>`,
      ),
      CT,
    );
    expect(path(r.request, 'MapDescription', 'Name')?.text).toBe('L');
    expect(path(r.request, 'MapDescription', 'MapArea', 'Extent', 'XMin')?.namespace).toBe(GEO_SOAP_NS);
    expect(path(r.request, 'MapDescription', 'MapArea', 'Extent', 'XMin')?.text).toBe('1');
  });

  it('rule 3: xsi:type through in-scope prefixes; an unbound prefix falls back to the local name', () => {
    const r = parseEnvelope(
      envelope(
        `<GetServerInfo><A xsi:type="tns:MapExtent"/><B xmlns:q="${GEO_SOAP_NS}" xsi:type="q:PointN"/><C xsi:type="EnvelopeN"/><D xmlns:i="http://www.w3.org/2001/XMLSchema-instance" i:type=" xs:string "/><E/></GetServerInfo>`,
      ),
      CT,
    );
    const [a, b, c, d, e] = r.request.children;
    expect(a?.xsiType).toEqual({ name: 'MapExtent' });
    expect(b?.xsiType).toEqual({ name: 'PointN', namespace: GEO_SOAP_NS });
    expect(c?.xsiType).toEqual({ name: 'EnvelopeN' });
    expect(d?.xsiType).toEqual({ name: 'string' });
    expect(e?.xsiType).toBeUndefined();
    // An attribute named type in another namespace is not xsi:type.
    const other = parseEnvelope(envelope('<GetServerInfo><A xmlns:x="urn:other" x:type="Foo"/></GetServerInfo>'), CT);
    expect(other.request.children[0]?.xsiType).toBeUndefined();
    expect(other.request.children[0]?.attributes['x:type']).toBe('Foo');
  });

  it('rule 5: order is kept as sent and a repeated element reads last-wins', () => {
    const r = parseEnvelope(envelope('<ComputeScale><B>1</B><A>2</A><B>3</B></ComputeScale>'), CT);
    expect(r.request.children.map((c) => c.name)).toEqual(['B', 'A', 'B']);
    expect(childOf(r.request, 'B')?.text).toBe('3');
    expect(childrenOf(r.request, 'B').map((c) => c.text)).toEqual(['1', '3']);
    expect(childOf(r.request, 'Missing')).toBeUndefined();
  });

  it('rule 7: xsi:nil="true" (or 1) reads as absent; unknown elements are kept for the operation to ignore', () => {
    const r = parseEnvelope(envelope('<Find><SearchString xsi:nil="true"/><Other xsi:nil="1"/><Kept xsi:nil="false">k</Kept></Find>'), CT);
    expect(r.request.children.map((c) => [c.name, c.nil])).toEqual([
      ['SearchString', true],
      ['Other', true],
      ['Kept', false],
    ]);
    expect(childOf(r.request, 'SearchString')).toBeUndefined();
    expect(childrenOf(r.request, 'Other')).toEqual([]);
    expect(childOf(r.request, 'Kept')?.text).toBe('k');
  });

  it('whitespace, comments, processing instructions, an XML declaration, CDATA and entity references', () => {
    const r = parseEnvelope(
      `<?xml version="1.0" encoding="UTF-8"?>\n<!-- a comment -->\n  ` +
        envelope(
          `\n  <GetServerInfo>\n    <?pi x?><MapName> a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#233;&#x4E2D; <![CDATA[<raw & kept>]]></MapName>\n  </GetServerInfo>\n`,
        ) +
        '\n',
      CT,
    );
    expect(childOf(r.request, 'MapName')?.text).toBe(` a & b <c> "d" 'e' é中 <raw & kept>`);
    const attrs = parseEnvelope(envelope(`<GetServerInfo><A v="x &amp; y &lt; &#34;z&#34;"/></GetServerInfo>`), CT);
    expect(attrs.request.children[0]?.attributes['v']).toBe('x & y < "z"');
  });

  it('a SOAP Header is ignored unless one of its entries must be understood', () => {
    const withHeader = `<s:Envelope xmlns:s="${SOAP11_ENV_NS}"><s:Header><Trace xmlns="urn:x">1</Trace><Other s:mustUnderstand="0"/></s:Header><s:Body><GetServerInfo/></s:Body></s:Envelope>`;
    expect(parseEnvelope(withHeader, CT).operation).toBe('GetServerInfo');
    const mu = refusal(withHeader.replace('s:mustUnderstand="0"', 's:mustUnderstand="1"'));
    expect(mu.error).toBeInstanceOf(SoapProtocolFault);
    expect(mu.status).toBe(500);
    expect(mu.fault.faultcode).toBe('soap:MustUnderstand');
  });

  it.each([
    null,
    '',
    'text/xml',
    'text/xml; charset=utf-8',
    'text/xml;charset=UTF-8',
    'text/xml; charset="utf-8"',
    "text/xml; charset='UTF8'",
    'TEXT/XML; Charset=us-ascii',
    'application/xml; charset=utf-8',
    'text/xml; charset=utf-8; action=""',
  ])('content type %s', (ct) => {
    expect(parseEnvelope(SAMPLE, ct).operation).toBe('ExportMapImage');
  });

  it('SOAPAction is never read: the operation comes from the Body only', () => {
    // parseEnvelope has no SOAPAction input: quoted (""), unquoted and absent headers are all the same request.
    expect(parseEnvelope.length).toBe(2);
  });
});

describe('parseEnvelope: refusals, each a soap:Client fault with HTTP 500 and code 400', () => {
  const secretDir = mkdtempSync(join(tmpdir(), 'soap-xxe-'));
  const secretFile = join(secretDir, 'secret.txt');
  writeFileSync(secretFile, 'TOP-SECRET-CONTENT');

  const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol9 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
]>
${envelope('<GetServerInfo><MapName>&lol9;</MapName></GetServerInfo>')}`;

  const cases: [string, string | Uint8Array, RegExp][] = [
    ['a DOCTYPE', `<!DOCTYPE Envelope>${SAMPLE}`, /Document type and entity declarations/],
    ['a lower-case doctype with spaces', `<! doctype Envelope SYSTEM "x.dtd">${SAMPLE}`, /Document type/],
    [
      'XXE to a local file',
      `<?xml version="1.0"?><!DOCTYPE e [<!ENTITY xxe SYSTEM "file://${secretFile}">]>${envelope('<GetServerInfo><MapName>&xxe;</MapName></GetServerInfo>')}`,
      /Document type/,
    ],
    ['billion laughs', billionLaughs, /Document type/],
    ['an ENTITY declaration without DOCTYPE', `${envelope('<GetServerInfo><!ENTITY a "b"></GetServerInfo>')}`, /entity declarations/],
    ['an undeclared entity reference', envelope('<GetServerInfo><MapName>&xxe;</MapName></GetServerInfo>'), /undeclared entity &xxe;/],
    ['an undeclared entity in an attribute', envelope('<GetServerInfo a="&nbsp;"/>'), /undeclared entity &nbsp;/],
    ['a character reference to NUL', envelope('<GetServerInfo><A>&#0;</A></GetServerInfo>'), /character reference/],
    [
      'invalid UTF-8 bytes',
      new Uint8Array([
        ...new TextEncoder().encode(envelope('<GetServerInfo><A>')),
        0xc3,
        0x28,
        ...new TextEncoder().encode('</A></GetServerInfo>'),
      ]),
      /not valid UTF-8/,
    ],
    [
      'an overlong UTF-8 encoding',
      new Uint8Array([...new TextEncoder().encode('<a>'), 0xc0, 0xaf, ...new TextEncoder().encode('</a>')]),
      /not valid UTF-8/,
    ],
    ['a lone surrogate in a string body', envelope('<GetServerInfo><A>\uD800</A></GetServerInfo>'), /not valid UTF-8/],
    ['malformed XML (unclosed element)', envelope('<GetServerInfo><A></GetServerInfo>'), /Malformed XML/],
    ['malformed XML (repeated attribute)', envelope('<GetServerInfo a="1" a="2"/>'), /Malformed XML/],
    ['two root elements', `${SAMPLE}<Other/>`, /Malformed XML/],
    ['text only', 'hello', /Malformed XML|not a SOAP/],
    ['an empty body', '', /Malformed XML|not a SOAP/],
    ['not an Envelope', `<Body xmlns="${SOAP11_ENV_NS}"><GetServerInfo/></Body>`, /not a SOAP 1.1 Envelope/],
    ['an Envelope in no namespace', '<Envelope><Body><GetServerInfo/></Body></Envelope>', /not a SOAP 1.1 Envelope/],
    ['an Envelope in another namespace', '<Envelope xmlns="urn:x"><Body><GetServerInfo/></Body></Envelope>', /not a SOAP 1.1 Envelope/],
    ['no Body', `<s:Envelope xmlns:s="${SOAP11_ENV_NS}"><s:Header/></s:Envelope>`, /no Body/],
    ['a Body in another namespace', `<s:Envelope xmlns:s="${SOAP11_ENV_NS}"><Body><GetServerInfo/></Body></s:Envelope>`, /no Body/],
    ['two Bodies', `<s:Envelope xmlns:s="${SOAP11_ENV_NS}"><s:Body><A/></s:Body><s:Body><B/></s:Body></s:Envelope>`, /more than one Body/],
    ['an empty Body', envelope('  '), /holds no operation/],
    ['two operations', envelope('<GetServerInfo/><GetDocumentInfo/>'), /more than one operation/],
    [
      'an operation in a foreign namespace',
      envelope('<x:GetServerInfo xmlns:x="http://www.esri.com/schemas/ArcGIS/10.8"/>'),
      /expected http:\/\/www.geo.example/,
    ],
    ['a non-UTF-8 XML declaration', `<?xml version="1.0" encoding="ISO-8859-1"?>${SAMPLE}`, /Unsupported encoding ISO-8859-1/],
  ];

  it.each(cases)('%s', (_name, body, message) => {
    const started = Date.now();
    const r = refusal(body);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(r.status).toBe(500);
    expect(r.fault.faultcode).toBe('soap:Client');
    expect(r.fault.code).toBe(400);
    expect(r.fault.faultstring).toMatch(message);
    expect(JSON.stringify(r.fault)).not.toContain('TOP-SECRET');
    expect(JSON.stringify(r.fault)).not.toMatch(/lollollol/);
    expect(r.fault.faultstring).not.toMatch(/\n\s+at /);
  });

  it('a charset other than UTF-8 in the content type', () => {
    const r = refusal(SAMPLE, 'text/xml; charset=iso-8859-1');
    expect(r.fault).toMatchObject({ faultcode: 'soap:Client', code: 400 });
    expect(r.fault.faultstring).toMatch(/Unsupported charset iso-8859-1/);
  });

  it('a multipart (MTOM) content type', () => {
    expect(refusal(SAMPLE, 'multipart/related; type="application/xop+xml"').fault.faultstring).toMatch(/Multipart/);
  });

  it('§5.7: a SOAP 1.2 envelope or content type is a VersionMismatch fault', () => {
    const soap12 = `<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><GetServerInfo/></e:Body></e:Envelope>`;
    for (const r of [refusal(soap12), refusal(SAMPLE, 'application/soap+xml; charset=utf-8; action=""')]) {
      expect(r.error).toBeInstanceOf(SoapProtocolFault);
      expect(r.status).toBe(500);
      expect(r.fault.faultcode).toBe('soap:VersionMismatch');
      expect(r.fault.faultstring).toBe('Only SOAP 1.1 is supported.');
    }
  });

  const nested = (levels: number): string => '<A>'.repeat(levels) + '</A>'.repeat(levels);

  it(`depth: ${SOAP_LIMITS.maxDepth} levels are read, one more is refused, and a very deep document fails fast`, () => {
    // Envelope, Body and the operation are the first three levels.
    const ok = envelope(`<GetServerInfo>${nested(SOAP_LIMITS.maxDepth - 3)}</GetServerInfo>`);
    expect(parseEnvelope(ok, CT).operation).toBe('GetServerInfo');
    for (const extra of [SOAP_LIMITS.maxDepth - 2, 100_000]) {
      const r = refusal(envelope(`<GetServerInfo>${nested(extra)}</GetServerInfo>`));
      expect(r.error.code).toBe('LIMIT_EXCEEDED');
      expect(r.fault).toMatchObject({ faultcode: 'soap:Client', code: 400 });
      expect(r.fault.faultstring).toBe(`The request nests elements deeper than ${SOAP_LIMITS.maxDepth} levels.`);
    }
  });

  it(`attributes: ${SOAP_LIMITS.maxAttributes} on one element are read, one more is refused`, () => {
    const attrs = (n: number): string => Array.from({ length: n }, (_, i) => ` a${i}="${i}"`).join('');
    const ok = parseEnvelope(envelope(`<GetServerInfo${attrs(SOAP_LIMITS.maxAttributes)}/>`), CT);
    expect(Object.keys(ok.request.attributes)).toHaveLength(SOAP_LIMITS.maxAttributes);
    const r = refusal(envelope(`<GetServerInfo${attrs(SOAP_LIMITS.maxAttributes + 1)}/>`));
    expect(r.error.code).toBe('LIMIT_EXCEEDED');
    expect(r.fault.faultstring).toBe(`An element has more than ${SOAP_LIMITS.maxAttributes} attributes.`);
  });

  it(`elements: ${SOAP_LIMITS.maxElements} are read, one more is refused before parsing`, () => {
    // Envelope, Body and the operation are three of them.
    const ok = parseEnvelope(envelope(`<Op>${'<a/>'.repeat(SOAP_LIMITS.maxElements - 3)}</Op>`), CT);
    expect(ok.request.children).toHaveLength(SOAP_LIMITS.maxElements - 3);
    const started = Date.now();
    const r = refusal(envelope(`<Op>${'<a/>'.repeat(SOAP_LIMITS.maxElements - 2)}</Op>`));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(r.error.code).toBe('LIMIT_EXCEEDED');
    expect(r.fault).toMatchObject({
      faultcode: 'soap:Client',
      code: 400,
      faultstring: `The request has more than ${SOAP_LIMITS.maxElements} elements.`,
    });
  }, 30_000);

  it('size: a body over the limit is refused before it is decoded', () => {
    const big = new Uint8Array(SOAP_LIMITS.maxBytes + 1).fill(0x20);
    expect(refusal(big).error.code).toBe('LIMIT_EXCEEDED');
    expect(refusal(' '.repeat(SOAP_LIMITS.maxBytes + 1)).fault.faultstring).toBe('The request is too large.');
  });
});

describe('the XML writer', () => {
  it('escapes text and attributes, replaces characters XML cannot carry, and never escapes fragments twice', () => {
    expect(escapeText(`a<b>&"c"'\r`)).toBe(`a&lt;b&gt;&amp;"c"'&#13;`);
    expect(escapeAttribute(`a<"b">&\t\n\r`)).toBe('a&lt;&quot;b&quot;&gt;&amp;&#9;&#10;&#13;');
    expect(escapeText('x\u0001y\uFFFEz\uD800')).toBe('x\uFFFDy\uFFFDz\uFFFD');
    expect(escapeText('😀')).toBe('😀');
    const inner = el('B', null, '<&>');
    expect(el('A', { k: 'v"<', skip: undefined, no: null }, inner, ' & ', 1.5, true).xml).toBe(
      '<A k="v&quot;&lt;"><B>&lt;&amp;&gt;</B> &amp; 1.5true</A>',
    );
  });

  it('refuses invalid element and attribute names (a programming error)', () => {
    expect(() => el('a b', null)).toThrow(EngineError);
    expect(() => el('<x', null)).toThrow(/invalid XML name/);
    expect(() => el('A', { 'x"y': '1' })).toThrow(/invalid XML name/);
    expect(() => typed('A', 'Bad Type')).toThrow(/invalid XML name/);
  });

  it('lexical forms of §5.4 rule 7', () => {
    expect([0.1, 1e21, -0, 94488.19, NaN, Infinity, -Infinity, 3].map(xmlDouble)).toEqual([
      '0.1',
      '1e+21',
      '0',
      '94488.19',
      'NaN',
      'INF',
      '-INF',
      '3',
    ]);
    expect(el('D', null, new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6))).xml).toBe('<D>2024-01-02T03:04:05.006Z</D>');
    expect(() => el('D', null, new Date(NaN))).toThrow(EngineError);
    expect(el('B', null, false).xml).toBe('<B>false</B>');
  });

  it('typed, opt, arrayOf and anyValue', () => {
    expect(typed('Extent', 'EnvelopeN', el('XMin', null, 1)).xml).toBe('<Extent xsi:type="tns:EnvelopeN"><XMin>1</XMin></Extent>');
    expect(typed('V', 'xs:string', 'a').xml).toBe('<V xsi:type="xs:string">a</V>');
    expect(opt('MapScale', undefined)).toBeNull();
    expect(opt('MapScale', 0)?.xml).toBe('<MapScale>0</MapScale>');
    expect(arrayOf('VisibleLayerIDs', 'Int', [0, 2]).xml).toBe(
      '<VisibleLayerIDs xsi:type="tns:ArrayOfInt"><Int>0</Int><Int>2</Int></VisibleLayerIDs>',
    );
    expect(arrayOf('Names', 'String', []).xml).toBe('<Names xsi:type="tns:ArrayOfString"></Names>');
    expect(arrayOf('Infos', 'LODInfo', [typed('LODInfo', 'LODInfo', el('LevelID', null, 0))]).xml).toBe(
      '<Infos xsi:type="tns:ArrayOfLODInfo"><LODInfo xsi:type="tns:LODInfo"><LevelID>0</LevelID></LODInfo></Infos>',
    );
    expect(
      [null, 'a&b', 7, -2147483648, 2147483648, 0.5, true, new Date(0), new Uint8Array([1, 2, 255])].map((v) => anyValue('Value', v).xml),
    ).toEqual([
      '<Value xsi:nil="true"></Value>',
      '<Value xsi:type="xs:string">a&amp;b</Value>',
      '<Value xsi:type="xs:int">7</Value>',
      '<Value xsi:type="xs:int">-2147483648</Value>',
      '<Value xsi:type="xs:double">2147483648</Value>',
      '<Value xsi:type="xs:double">0.5</Value>',
      '<Value xsi:type="xs:boolean">true</Value>',
      '<Value xsi:type="xs:dateTime">1970-01-01T00:00:00.000Z</Value>',
      '<Value xsi:type="xs:base64Binary">AQL/</Value>',
    ]);
    expect(new XmlFragment('<a/>').toString()).toBe('<a/>');
  });
});

describe('responseEnvelope (§5.4)', () => {
  const result = resultElement(
    'MapImage',
    el('ImageURL', null, 'https://gis.example/geo/output/map.png?a=1&b=<2>'),
    typed('Extent', 'EnvelopeN', el('XMin', null, -8240000), el('YMin', null, 4960000)),
    arrayOf('VisibleLayerIDs', 'Int', [0]),
    el('MapScale', null, 94488.19),
  );
  const xml = responseEnvelope('ExportMapImage', result);

  it('declares soap, xsi, xs and tns on the Envelope, wraps in tns:<Op>Response, and leaves the rest unqualified', () => {
    expect(xml.startsWith('<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope')).toBe(true);
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).toContain(
      `<soap:Envelope xmlns:soap="${SOAP11_ENV_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:tns="${GEO_SOAP_NS}"><soap:Body><tns:ExportMapImageResponse><Result xsi:type="tns:MapImage"><ImageURL>https://gis.example/geo/output/map.png?a=1&amp;b=&lt;2&gt;</ImageURL>`,
    );
    expect(xml.endsWith('</MapScale></Result></tns:ExportMapImageResponse></soap:Body></soap:Envelope>')).toBe(true);
  });

  it('round trips through the request parser (the same namespaces, order, xsi:type and text)', () => {
    // A response is an envelope whose Body child is in the service namespace, so parseEnvelope reads it.
    const back = parseEnvelope(xml, CT);
    expect(back.operation).toBe('ExportMapImageResponse');
    expect(back.namespace).toBe(GEO_SOAP_NS);
    const res = childOf(back.request, 'Result');
    expect(res?.namespace).toBeUndefined();
    expect(res?.xsiType).toEqual({ name: 'MapImage', namespace: GEO_SOAP_NS });
    expect(res?.children.map((c) => c.name)).toEqual(['ImageURL', 'Extent', 'VisibleLayerIDs', 'MapScale']);
    expect(childOf(res!, 'ImageURL')?.text).toBe('https://gis.example/geo/output/map.png?a=1&b=<2>');
    expect(childOf(res!, 'Extent')?.xsiType).toEqual({ name: 'EnvelopeN', namespace: GEO_SOAP_NS });
    expect(childrenOf(childOf(res!, 'VisibleLayerIDs')!, 'Int').map((i) => i.text)).toEqual(['0']);
    const tricky = 'a\r\nb\t"c" <d> & \'e\' é 😀';
    const rt = parseEnvelope(responseEnvelope('X', resultElement(null, el('S', { attr: tricky }, tricky))), CT);
    const s = childOf(childOf(rt.request, 'Result')!, 'S');
    expect(s?.text).toBe(tricky);
    expect(s?.attributes['attr']).toBe(tricky);
  });

  it('a simple-typed Result has no xsi:type; FromMapPoints holds two arrays and no Result', () => {
    expect(responseEnvelope('ComputeScale', resultElement(null, 1234.5))).toContain(
      '<tns:ComputeScaleResponse><Result>1234.5</Result></tns:ComputeScaleResponse>',
    );
    const fmp = responseEnvelope('FromMapPoints', [arrayOf('ScreenXValues', 'Int', [1, 2]), arrayOf('ScreenYValues', 'Int', [3, 4])]);
    expect(fmp).toContain(
      '<tns:FromMapPointsResponse><ScreenXValues xsi:type="tns:ArrayOfInt"><Int>1</Int><Int>2</Int></ScreenXValues><ScreenYValues xsi:type="tns:ArrayOfInt"><Int>3</Int><Int>4</Int></ScreenYValues></tns:FromMapPointsResponse>',
    );
    expect(fmp).not.toContain('Result');
  });
});

describe('soapFault (§5.7, §5.8)', () => {
  it('the fault table is total over the error codes, with Client/Server and a code for each', () => {
    expect(Object.keys(SOAP_FAULT_TABLE).sort()).toEqual([...ERROR_CODES].sort());
    for (const code of ERROR_CODES) {
      const info = SOAP_FAULT_TABLE[code];
      expect(['Client', 'Server']).toContain(info.faultcode);
      // Server faults are exactly the 5xx codes; they never show their own message.
      expect(info.faultcode === 'Server').toBe(info.code >= 500);
      if (info.faultcode === 'Server') expect(info.message).toBe('table');
      const r = soapFault(new EngineError(code, `internal detail of ${code}`, { details: ['d1'] }));
      expect(r.status).toBe(500);
      const f = faultOf(r.body);
      expect(f.faultcode).toBe(`soap:${info.faultcode}`);
      expect(f.code).toBe(info.code);
      expect(f.faultstring).toBe(info.message === 'own' ? `internal detail of ${code}` : ERROR_TABLE[code].protocolMessage);
      expect(f.details).toEqual(info.faultcode === 'Server' && !SHOWN_SERVER_DETAILS.has(code) ? [] : ['d1']);
    }
  });

  it('the example of §5.8: a client fault with the message and its details', () => {
    const r = soapFault(new EngineError('NOT_FOUND', "Layer 12 does not exist in map 'Layers'.", { details: ['LayerID=12'] }));
    expect(r.status).toBe(500);
    expect(r.body).toContain(
      "<soap:Fault><faultcode>soap:Client</faultcode><faultstring>Layer 12 does not exist in map 'Layers'.</faultstring>",
    );
    expect(r.body).toContain('<detail><tns:GeoError><Code>400</Code><Details>LayerID=12</Details></tns:GeoError></detail></soap:Fault>');
  });

  it('authentication and permission faults (§5.8): Client with 499/498/403 and the fixed messages', () => {
    expect(faultParts(new EngineError('TOKEN_REQUIRED', 'no token on the request'))).toEqual({
      faultcode: 'Client',
      faultstring: 'Token Required',
      code: 499,
      details: [],
    });
    expect(faultParts(new EngineError('TOKEN_INVALID', 'bad signature', { issues: [] }))).toMatchObject({
      faultstring: 'Invalid token.',
      code: 498,
    });
    expect(faultParts(new EngineError('TOKEN_EXPIRED', 'expired', { issues: [] }))).toMatchObject({
      faultstring: 'Invalid token.',
      code: 498,
    });
    expect(faultParts(new EngineError('FORBIDDEN', 'user x lacks y', { issues: [] }))).toMatchObject({ faultcode: 'Client', code: 403 });
  });

  it('issues with paths become details; one equal to the message is not repeated', () => {
    expect(
      faultParts(new EngineError('INVALID_ARGUMENT', 'ImageDPI must be positive', { path: 'ImageDescription.ImageDisplay.ImageDPI' }))
        .details,
    ).toEqual(['ImageDescription.ImageDisplay.ImageDPI: ImageDPI must be positive']);
    expect(faultParts(new EngineError('INVALID_ARGUMENT', 'bad')).details).toEqual([]);
  });

  it('anything else thrown is a Server fault with no message, details or stack of its own', () => {
    const boom = new Error('ENOENT: /secret/path/file.tif');
    for (const thrown of [
      boom,
      'a string',
      { weird: true },
      new EngineError('IO_ERROR', 'read failed at /data/x.tif', { details: ['/data/x.tif'] }),
    ]) {
      const r = soapFault(thrown);
      expect(r.status).toBe(500);
      expect(r.body).not.toMatch(/secret|\/data\/x|a string|weird|\bat .*\.ts/);
      expect(faultOf(r.body).faultcode).toBe('soap:Server');
      expect(faultOf(r.body).code).toBe(500);
      expect(faultOf(r.body).details).toEqual([]);
    }
    expect(faultOf(soapFault(boom).body).faultstring).toBe(ERROR_TABLE.INTERNAL.protocolMessage);
  });

  it('fault text is escaped', () => {
    const r = soapFault(new EngineError('INVALID_ARGUMENT', 'bad <value> & "more"', { details: ['a<b'] }));
    expect(XMLValidator.validate(r.body)).toBe(true);
    expect(r.body).toContain('<faultstring>bad &lt;value&gt; &amp; "more"</faultstring>');
    expect(r.body).toContain('<Details>a&lt;b</Details>');
    expect(faultOf(r.body)).toMatchObject({ faultstring: 'bad <value> & "more"', details: ['a<b'] });
  });
});

describe('value readers (§5.3 rule 6)', () => {
  const req = parseEnvelope(
    envelope(
      `<ExportMapImage><S> x </S><B1> true </B1><B2>0</B2><B3>1</B3><B4>yes</B4><D1> -1.5e3 </D1><D2>INF</D2><D3>-INF</D3><D4>NaN</D4><D5>.5</D5><D6>1,5</D6><D7></D7>` +
        `<I1>+42</I1><I2>-2147483648</I2><I3>2147483648</I3><I4>1.0</I4><N xsi:nil="true">9</N><M><Inner/></M></ExportMapImage>`,
    ),
    CT,
  ).request;

  it('absent or nil elements read as the schema defaults or the given fallback', () => {
    expect([readString(req, 'Nope'), readBoolean(req, 'Nope'), readDouble(req, 'Nope'), readInt(req, 'Nope')]).toEqual(['', false, 0, 0]);
    expect([readString(req, 'N', 'd'), readBoolean(req, 'N', '', true), readDouble(req, 'N', '', 2.5), readInt(req, 'N', '', 7)]).toEqual([
      'd',
      true,
      2.5,
      7,
    ]);
  });

  it('present values follow the XML Schema lexical forms, whitespace collapsed (strings kept as sent)', () => {
    expect(readString(req, 'S')).toBe(' x ');
    expect(['B1', 'B2', 'B3'].map((n) => readBoolean(req, n))).toEqual([true, false, true]);
    expect(['D1', 'D2', 'D3', 'D5'].map((n) => readDouble(req, n))).toEqual([-1500, Infinity, -Infinity, 0.5]);
    expect(readDouble(req, 'D4')).toBeNaN();
    expect(['I1', 'I2'].map((n) => readInt(req, n))).toEqual([42, -2147483648]);
    expect(readInt(req, 'I3', '', 0, 0, Number.MAX_SAFE_INTEGER)).toBe(2147483648);
  });

  it('invalid values are soap:Client faults naming the element by path', () => {
    const cases: [() => unknown, RegExp][] = [
      [() => readBoolean(req, 'B4', 'MapDescription'), /^MapDescription\.B4 must be true or false, not "yes"\.$/],
      [() => readDouble(req, 'D6'), /^D6 must be a number, not "1,5"\.$/],
      [() => readDouble(req, 'D7'), /^D7 must be a number, not ""\.$/],
      [() => readInt(req, 'I3'), /^I3 must be an integer from -2147483648 to 2147483647, not "2147483648"\.$/],
      [() => readInt(req, 'I4'), /^I4 must be an integer/],
      [() => requireChild(req, 'MapDescription'), /^MapDescription is required\.$/],
      [() => requireChild(req, 'Name', 'MapDescription'), /^MapDescription\.Name is required\.$/],
    ];
    for (const [read, message] of cases) {
      let thrown: unknown;
      try {
        read();
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(EngineError);
      const f = faultOf(soapFault(thrown).body);
      expect(f).toMatchObject({ faultcode: 'soap:Client', code: 400, details: [] });
      expect(f.faultstring).toMatch(message);
    }
    expect(requireChild(req, 'M').children.map((c) => c.name)).toEqual(['Inner']);
  });

  it('xmlns="" undeclares the default namespace', () => {
    const r = parseEnvelope(envelope(`<GetServerInfo xmlns="${GEO_SOAP_NS}"><MapName xmlns="">x</MapName></GetServerInfo>`), CT);
    expect(r.namespace).toBe(GEO_SOAP_NS);
    expect(r.request.children[0]?.namespace).toBeUndefined();
    const none = parseEnvelope(envelope(`<GetServerInfo xmlns=""/>`), CT);
    expect(none.namespace).toBeUndefined();
  });
});

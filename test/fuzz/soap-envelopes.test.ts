/**
 * Fuzzing the SOAP request path (issue 20 item 1): `parseEnvelope` on random and hostile documents
 * (XXE, billion laughs, external DTDs, deep nesting, huge attribute and element counts, invalid and
 * overlong UTF-8, BOMs, NULs, unterminated CDATA, 10 MB+), and `decodeRequest` on schema-shaped
 * requests with hostile values. Property: parsed and decoded, or refused with an EngineError that
 * `soapFault` turns into a soap:Client (or VersionMismatch/MustUnderstand) fault, quickly; never
 * another exception, never a soap:Server fault. Through the mounted endpoint: HTTP 200 or a SOAP
 * fault document (HTTP 500 with `soap:Fault`), never a stack.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import { decodeRequest } from '../../src/adapters/soap/codec.js';
import { GEO_SOAP_NS, parseEnvelope, SOAP11_ENV_NS, SOAP_LIMITS, XSI_NS } from '../../src/adapters/soap/envelope.js';
import { faultParts, soapFault } from '../../src/adapters/soap/faults.js';
import { allFields, arrayItem, COMPLEX_TYPES, complexType, enumeration, ENUMERATIONS, XS_TYPES } from '../../src/adapters/soap/schema.js';
import { OPERATION_SIGNATURES } from '../../src/adapters/soap/signatures.js';
import { mapServicesOf } from '../../src/adapters/map/service.js';
import { setPeerAddress } from '../../src/adapters/site.js';
import { soapRoutes } from '../../src/adapters/soap/endpoint.js';
import { putOlindaMap } from '../map-fixture.js';
import { testSite, type TestSite } from '../site.js';
import { fuzzBudget, fuzzParameters, fuzzTimeout } from './runs.js';

const enc = new TextEncoder();

const wrap = (inner: string, head = '<?xml version="1.0" encoding="utf-8"?>'): string =>
  `${head}<s:Envelope xmlns:s="${SOAP11_ENV_NS}" xmlns:g="${GEO_SOAP_NS}" xmlns:xsi="${XSI_NS}"><s:Body>${inner}</s:Body></s:Envelope>`;

/** Parse and decode, or refuse with a client-side fault. Answers what happened. */
function parseOrFault(body: string | Uint8Array, contentType: string | null = 'text/xml; charset=utf-8'): 'ok' | 'fault' {
  try {
    const env = parseEnvelope(body, contentType);
    const sig = OPERATION_SIGNATURES.find((s) => s.name === env.operation);
    if (sig) decodeRequest(sig, env.request);
    return 'ok';
  } catch (e) {
    expectClientFault(e);
    return 'fault';
  }
}

function expectClientFault(e: unknown): asserts e is EngineError {
  if (!(e instanceof EngineError)) throw new Error(`not an EngineError: ${e instanceof Error ? e.stack : String(e)}`);
  const parts = faultParts(e);
  expect(['Client', 'VersionMismatch', 'MustUnderstand'], `${e.code}: ${e.message}`).toContain(parts.faultcode);
  expect(parts.faultstring.trim()).not.toBe('');
  const f = soapFault(e);
  expect(f.status).toBe(500);
  expect(f.body).toContain('<soap:Fault>');
}

/** Text that breaks XML readers: markup characters, entity references, CDATA pieces, controls, surrogates. */
const hostileText = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '&lt;',
    '&amp;amp;',
    '&xxe;',
    '&#0;',
    '&#x1;',
    '&#xD800;',
    '&#1114112;',
    '&#x10FFFF;',
    '&',
    '<',
    ']]>',
    '<![CDATA[',
    '<![CDATA[x]]>',
    '\u0000',
    '\uFEFF',
    '\uD800',
    'INF',
    '-INF',
    'NaN',
    '1e400',
    '-0',
    '9007199254740993',
    '2147483648',
    '  42  ',
    'true',
    '2024-02-30T25:61:61Z',
    'AAAA=',
    '__proto__',
    'constructor',
  ),
);

const TYPE_NAMES = [...XS_TYPES, ...COMPLEX_TYPES.map((t) => t.name), ...ENUMERATIONS.map((t) => t.name)];

/** An element for `name` of `type`, following the schema to `depth`, with hostile values and types. */
function elementOf(name: string, type: string, depth: number): fc.Arbitrary<string> {
  const attrs = fc
    .record({
      xsiType: fc.option(
        fc.oneof(
          fc.constantFrom(...TYPE_NAMES).map((t) => (t.startsWith('xs:') ? t : `g:${t}`)),
          fc.string({ maxLength: 8 }),
        ),
        {
          freq: 4,
        },
      ),
      nil: fc.option(fc.constantFrom('true', '1', 'false', 'yes'), { freq: 6 }),
    })
    .map(({ xsiType, nil }) => (xsiType === null ? '' : ` xsi:type="${escapeAttr(xsiType)}"`) + (nil === null ? '' : ` xsi:nil="${nil}"`));
  const ct = complexType(type);
  const item = arrayItem(type);
  let content: fc.Arbitrary<string>;
  if (depth <= 0 || (!ct && !item)) {
    const en = enumeration(type);
    content = en ? fc.oneof(fc.constantFrom(...en.values), hostileText) : hostileText;
    content = content.map((t) => (/[<&]/.test(t) && !/^&|^<!\[CDATA\[/.test(t) ? escapeText(t) : t));
  } else if (item) {
    content = fc.array(elementOf(item.name, item.type, depth - 1), { maxLength: 4 }).map((a) => a.join(''));
  } else {
    const fields = allFields(type);
    content =
      fields.length === 0
        ? fc.constant('')
        : fc
            .array(
              fc.constantFrom(...fields).chain((f) => elementOf(f.name, f.type, depth - 1)),
              { maxLength: 5 },
            )
            .map((a) => a.join(''));
  }
  return fc.tuple(attrs, content).map(([a, c]) => `<${name}${a}>${c}</${name}>`);
}

const escapeText = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const escapeAttr = (s: string): string => escapeText(s).replace(/"/g, '&quot;');

/** A request of a random operation, shaped by its signature. */
const schemaRequest = fc.constantFrom(...OPERATION_SIGNATURES).chain((sig) =>
  (sig.request.length === 0
    ? fc.constant([] as string[])
    : fc.array(
        fc.constantFrom(...sig.request).chain((d) => elementOf(d.name, d.type, 3)),
        { maxLength: 6 },
      )
  ).map((children) => wrap(`<g:${sig.name}>${children.join('')}</g:${sig.name}>`)),
);

/** A document mutated at the byte level: truncations, insertions and bit flips. */
const mutated = (base: fc.Arbitrary<string>) =>
  fc
    .tuple(
      base,
      fc.array(
        fc.record({
          at: fc.nat(),
          kind: fc.constantFrom('cut', 'insert', 'flip', 'delete'),
          text: hostileText,
          bit: fc.integer({ min: 0, max: 7 }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
    )
    .map(([doc, ms]) => {
      let bytes = enc.encode(doc);
      for (const m of ms) {
        const at = bytes.length === 0 ? 0 : m.at % bytes.length;
        if (m.kind === 'cut') bytes = bytes.slice(0, at);
        else if (m.kind === 'delete') bytes = Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1 + (m.bit % 4))]);
        else if (m.kind === 'insert') bytes = Uint8Array.from([...bytes.subarray(0, at), ...enc.encode(m.text), ...bytes.subarray(at)]);
        else if (bytes.length > 0) bytes[at]! ^= 1 << m.bit;
      }
      return bytes;
    });

describe('parseEnvelope and decodeRequest under hostile input', () => {
  it(
    'decodes or faults (soap:Client) every schema-shaped request with hostile values and xsi:types',
    () => {
      let ok = 0;
      fc.assert(
        fc.property(schemaRequest, (doc) => {
          const started = performance.now();
          if (parseOrFault(doc) === 'ok') ok++;
          expect(performance.now() - started).toBeLessThan(fuzzBudget(1000));
        }),
        fuzzParameters(1500),
      );
      // The generator reaches the decoder, not only the XML checks.
      expect(ok).toBeGreaterThan(0);
    },
    fuzzTimeout(1500, 5),
  );

  it(
    'faults (soap:Client) on byte-level mutations of valid requests, never crashes',
    () => {
      fc.assert(
        fc.property(mutated(schemaRequest), (bytes) => {
          const started = performance.now();
          parseOrFault(bytes);
          expect(performance.now() - started).toBeLessThan(fuzzBudget(1000));
        }),
        fuzzParameters(1500),
      );
    },
    fuzzTimeout(1500, 5),
  );

  it(
    'faults on random text and random content types',
    () => {
      fc.assert(
        fc.property(
          fc.oneof(fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 200 })),
          fc.option(
            fc.oneof(
              fc.string({ maxLength: 40 }),
              fc.constantFrom('application/soap+xml', 'multipart/related', 'text/xml; charset=latin1'),
            ),
          ),
          (body, ct) => {
            parseOrFault(body, ct);
          },
        ),
        fuzzParameters(1000),
      );
    },
    fuzzTimeout(1000, 5),
  );

  const op = (inner: string) => wrap(`<g:GetMapCount>${inner}</g:GetMapCount>`);
  const refused = (body: string | Uint8Array, why: RegExp, ct: string | null = 'text/xml') => {
    const started = performance.now();
    let thrown: unknown;
    try {
      parseEnvelope(body, ct);
    } catch (e) {
      thrown = e;
    }
    expectClientFault(thrown);
    expect(thrown.message).toMatch(why);
    expect(performance.now() - started).toBeLessThan(fuzzBudget(3000));
    return thrown;
  };

  it('refuses XXE, external DTDs, parameter entities and billion laughs without expanding anything', () => {
    const dtds = [
      '<!DOCTYPE s:Envelope [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
      '<!DOCTYPE foo SYSTEM "http://127.0.0.1:1/evil.dtd">',
      '<!DOCTYPE foo PUBLIC "-//X//Y" "http://127.0.0.1:1/evil.dtd">',
      '<!DOCTYPE foo [<!ENTITY % p SYSTEM "http://127.0.0.1:1/p.dtd"> %p;]>',
      `<!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`).join('')}]>`,
      '<!doctype foo>',
      '<!  DOCTYPE foo>',
    ];
    for (const dtd of dtds) refused(wrap(`<g:GetMapCount>&xxe;&lol9;</g:GetMapCount>`, `<?xml version="1.0"?>${dtd}`), /declarations/);
    // Entity references without a DTD are undeclared: refused, never looked up.
    refused(op('&xxe;'), /undeclared entity/);
    refused(wrap('<g:GetMapCount a="&xxe;"/>'), /undeclared entity/);
    // A DTD hidden after the root, in a comment or in CDATA is not a declaration, but one in the prolog after a comment is.
    refused(`<?xml version="1.0"?><!-- x --><!DOCTYPE foo [<!ENTITY a "b">]>${op('&a;')}`, /declarations/);
  });

  it('refuses deep nesting, huge attribute counts and too many elements with LIMIT_EXCEEDED', () => {
    const deep = (n: number) => op(`${'<a>'.repeat(n)}${'</a>'.repeat(n)}`);
    expect(parseOrFault(deep(90))).toBe('ok');
    for (const n of [SOAP_LIMITS.maxDepth, 10_000, 200_000]) {
      expect((refused(deep(n), /deeper/) as EngineError).code).toBe('LIMIT_EXCEEDED');
    }
    const attrs = (n: number) => op(`<a ${Array.from({ length: n }, (_, i) => `x${i}="1"`).join(' ')}/>`);
    expect(parseOrFault(attrs(SOAP_LIMITS.maxAttributes))).toBe('ok');
    expect((refused(attrs(SOAP_LIMITS.maxAttributes + 1), /attributes/) as EngineError).code).toBe('LIMIT_EXCEEDED');
    expect((refused(attrs(100_000), /attributes|large/) as EngineError).code).toBe('LIMIT_EXCEEDED');
    const many = op('<a/>'.repeat(SOAP_LIMITS.maxElements + 1));
    expect((refused(many, /elements/) as EngineError).code).toBe('LIMIT_EXCEEDED');
    // A duplicate attribute is malformed XML.
    refused(op('<a x="1" x="2"/>'), /Malformed/);
  }, 30_000);

  it('refuses invalid and overlong UTF-8, lone surrogates, NULs and other encodings; accepts a BOM', () => {
    const bytes = (...parts: (string | number[])[]) =>
      Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? [...enc.encode(p)] : p)));
    const [head, tail] = op('@').split('@') as [string, string];
    for (const bad of [[0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xff], [0x80], [0xc3]]) {
      expect((refused(bytes(head, bad, tail), /UTF-8/) as EngineError).code).toBe('INVALID_FORMAT');
    }
    refused(op('\uD800'), /UTF-8/);
    // Regression: NUL, C0 controls and U+FFFE/U+FFFF were accepted as text.
    for (const c of ['\u0000', '\u0001', '\u001F', '\u000B', '\uFFFE', '\uFFFF']) {
      expect((refused(op(`a${c}b`), /not allowed/) as EngineError).code).toBe('INVALID_FORMAT');
    }
    expect(parseOrFault(op('a\t\r\nb'))).toBe('ok');
    refused(op('&#0;'), /not allowed/);
    refused(op('x'), /charset/, 'text/xml; charset=iso-8859-1');
    refused(wrap('<g:GetMapCount/>', '<?xml version="1.0" encoding="UTF-16"?>'), /encoding/);
    expect(parseOrFault(bytes([0xef, 0xbb, 0xbf], op('')))).toBe('ok');
    expect(parseOrFault(`\uFEFF${op('')}`)).toBe('ok');
  });

  it('refuses unterminated CDATA, comments and tags, and CDATA around markup stays text', () => {
    for (const doc of [
      op('<![CDATA[abc'),
      op('<!-- abc'),
      op('<a'),
      op('<a>'),
      wrap('<g:GetMapCount>').slice(0, -10),
      '',
      '   ',
      '<',
      '<?xml version="1.0"?>',
    ]) {
      refused(doc, /Malformed|not a SOAP|root/);
    }
    const env = parseEnvelope(wrap('<g:GetMapName><Index><![CDATA[<x>&xxe;]]></Index></g:GetMapName>'), 'text/xml');
    expect(env.request.children[0]?.text).toBe('<x>&xxe;');
  });

  // Regression: fast-xml-parser builds character data one character at a time; a 9 MB text node took
  // 300 MB of heap and 1.5 s, 1.6 million `&amp;` over 150 MB in decodeEntities, a 9 MB attribute value 330 MB.
  it('reads the largest texts in bounded memory and time, and refuses over-long attribute values', () => {
    const heapGrowth = (doc: string, check: (env: ReturnType<typeof parseEnvelope>) => void): number => {
      const before = process.memoryUsage().heapUsed;
      const started = performance.now();
      const env = parseEnvelope(doc, 'text/xml');
      const grown = process.memoryUsage().heapUsed - before;
      expect(performance.now() - started).toBeLessThan(fuzzBudget(3000));
      check(env);
      return grown;
    };
    const text = (env: ReturnType<typeof parseEnvelope>) => env.request.children.map((c) => c.text).join('');
    const big = 9_000_000;
    expect(heapGrowth(op(`<a>${'x'.repeat(big)}</a>`), (env) => expect(text(env).length).toBe(big))).toBeLessThan(120e6);
    expect(
      heapGrowth(op(`<a>${'x&amp;]]&gt;'.repeat(800_000)}</a>`), (env) => {
        const t = text(env);
        expect(t.length).toBe(4_000_000);
        expect(t.startsWith('x&]]>x&]]>')).toBe(true);
      }),
    ).toBeLessThan(120e6);
    expect(
      heapGrowth(op(`<a>${'y'.repeat(5000)}</a><b>${'&lt;'.repeat(2000)}<![CDATA[&amp;]]>${'z'.repeat(5000)}</b>`), (env) => {
        expect(env.request.children[0]?.text).toBe('y'.repeat(5000));
        expect(env.request.children[1]?.text).toBe(`${'<'.repeat(2000)}&amp;${'z'.repeat(5000)}`);
      }),
    ).toBeLessThan(120e6);
    // Whitespace around the root, however long, is not text of any element.
    expect(parseOrFault(`${wrap('<g:GetMapCount/>', `<?xml version="1.0"?>${' '.repeat(100_000)}`)}${'\n'.repeat(100_000)}`)).toBe('ok');
    expect(parseOrFault(`${' '.repeat(100_000)}${wrap('<g:GetMapCount/>', '')}`)).toBe('ok');
    // A long run with a bare '&' or an undeclared entity is still refused.
    refused(op(`<a>${'x'.repeat(10_000)}&${'x'.repeat(10)}</a>`), /bare|Malformed/);
    refused(op(`<a>${'x'.repeat(10_000)}&xxe;</a>`), /undeclared entity/);
    const attr = (n: number) => op(`<a b="${'v'.repeat(n)}"/>`);
    expect(parseOrFault(attr(SOAP_LIMITS.maxAttributeChars))).toBe('ok');
    expect((refused(attr(SOAP_LIMITS.maxAttributeChars + 1), /attribute value/) as EngineError).code).toBe('LIMIT_EXCEEDED');
    expect((refused(op(`<a b='${'x&amp;'.repeat(1_500_000)}'/>`), /attribute value/) as EngineError).code).toBe('LIMIT_EXCEEDED');
  }, 30_000);

  it(
    'reads long and short character data alike: the text is the decoded characters, around markup and CDATA',
    () => {
      const piece = fc.constantFrom<[string, string]>(
        ['x', 'x'],
        ['&amp;', '&'],
        ['&lt;', '<'],
        ['&#x41;', 'A'],
        ['&#233;', '\u00e9'],
        [']]&gt;', ']]>'],
        [' ', ' '],
        ['\n', '\n'],
        ['\u00e9', '\u00e9'],
        ['>', '>'],
        ['<![CDATA[&amp;<]]>', '&amp;<'],
        ['<!-- c -->', ''],
      );
      fc.assert(
        fc.property(
          fc.array(piece, { minLength: 1, maxLength: 20 }),
          fc.integer({ min: 1, max: 600 }),
          fc.boolean(),
          (pieces, times, attr) => {
            const raw = pieces
              .map((p) => p[0])
              .join('')
              .repeat(times);
            const expected = pieces
              .map((p) => p[1])
              .join('')
              .repeat(times);
            const env = parseEnvelope(op(`<a${attr ? ' b="1>2"' : ''}>${raw}</a><b>${raw}<c/>${raw}</b>`), 'text/xml');
            expect(env.request.children[0]?.text).toBe(expected);
            expect(env.request.children[1]?.text).toBe(expected + expected);
            expect(env.request.children[1]?.children[0]?.name).toBe('c');
          },
        ),
        fuzzParameters(200),
      );
    },
    fuzzTimeout(200, 20),
  );

  it('refuses 10 MB+ documents quickly, as strings and as bytes', () => {
    const filler = `<!--${'x'.repeat(SOAP_LIMITS.maxBytes)}-->`;
    refused(op(filler), /too large/);
    refused(enc.encode(op(filler)), /too large/);
  });
});

describe('hostile envelopes through the mounted SOAP endpoint', () => {
  let site: TestSite;
  let handler: (req: Request) => Promise<Response>;

  beforeAll(async () => {
    site = await testSite();
    await putOlindaMap(site);
    handler = soapRoutes(site)[0]!.handler;
  }, 60_000);
  afterAll(async () => {
    await mapServicesOf(site).close();
  });

  const post = (body: string | Uint8Array, contentType = 'text/xml; charset=utf-8'): Promise<Response> =>
    handler(
      setPeerAddress(
        new Request('https://localhost/server/services/olinda/MapServer', {
          method: 'POST',
          headers: { 'content-type': contentType, soapaction: '""', referer: 'http://test' },
          body: body as Uint8Array<ArrayBuffer> | string,
        }),
        '127.0.0.1',
      ),
    );

  async function expectSoapAnswer(res: Response): Promise<string> {
    const text = await res.text();
    expect(res.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(text).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/);
    if (res.status === 200) expect(text).toMatch(/Response>/);
    else {
      expect(res.status).toBe(500);
      expect(text).toMatch(/<soap:Fault><faultcode>soap:(Client|VersionMismatch|MustUnderstand)<\/faultcode>/);
    }
    return text;
  }

  it(
    'answers schema-shaped and mutated requests with a result or a soap:Client fault, never a Server fault',
    async () => {
      // Operations that do real work (drawing, exporting) are left to their own tests: here the answer's shape matters.
      await fc.assert(
        fc.asyncProperty(fc.oneof(schemaRequest, mutated(schemaRequest)), async (body) => {
          const text = await expectSoapAnswer(await post(body));
          expect(text).not.toContain('soap:Server');
        }),
        fuzzParameters(150, {
          examples: [[wrap('<g:GetMapCount/>')], [wrap('<g:GetMapName><Index>0</Index></g:GetMapName>')]] as [
            string | Uint8Array<ArrayBuffer>,
          ][],
        }),
      );
    },
    fuzzTimeout(150, 100),
  );

  it('answers XXE, billion laughs, deep nesting, invalid UTF-8 and 10 MB+ bodies with a soap:Client fault', async () => {
    const bodies: (string | Uint8Array)[] = [
      wrap('<g:GetMapCount>&xxe;</g:GetMapCount>', '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'),
      wrap('<g:GetMapCount>&lol9;</g:GetMapCount>', '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;">]>'),
      wrap(`<g:GetMapCount>${'<a>'.repeat(50_000)}${'</a>'.repeat(50_000)}</g:GetMapCount>`),
      Uint8Array.from([...enc.encode(wrap('<g:GetMapName><Index>')), 0xc0, 0xaf, ...enc.encode('</Index></g:GetMapName>')]),
      wrap(`<g:GetMapCount><![CDATA[never closed</g:GetMapCount>`),
      new Uint8Array(SOAP_LIMITS.maxBytes + 1).fill(0x20),
    ];
    for (const body of bodies) {
      const res = await post(body);
      const text = await expectSoapAnswer(res);
      expect(res.status).toBe(500);
      expect(text).toContain('soap:Client');
      expect(text).not.toContain('root:');
    }
    const v12 = await expectSoapAnswer(await post(wrap('<g:GetMapCount/>'), 'application/soap+xml; charset=utf-8'));
    expect(v12).toContain('soap:VersionMismatch');
  }, 60_000);
});

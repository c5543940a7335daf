/**
 * Fuzzing the REST request parsers (issue 20 item 1): `readParams` over query strings, urlencoded and
 * multipart bodies. Property: a request is either read, or refused with an EngineError that has a code
 * and a path, quickly; never another exception. Through the mounted site routes the answer is the
 * REST error shape (HTTP 200, or 413 for a body over the limit), never a 500.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import { DEFAULT_MAX_BODY_BYTES, readParams, type Params } from '../../src/adapters/rest.js';
import { mapServicesOf } from '../../src/adapters/map/service.js';
import { createApp } from '../../src/server/app.js';
import { siteRoutes } from '../../src/server/routes.js';
import { siteRequest, testSite, type TestSite } from '../site.js';
import { fuzzBudget, fuzzParameters, fuzzTimeout } from './runs.js';

const enc = new TextEncoder();

/** Every byte percent-encoded, so that any byte sequence survives the URL parser. */
const pct = (bytes: Uint8Array): string => Array.from(bytes, (b) => `%${b.toString(16).padStart(2, '0')}`).join('');

const post = (body: string | Uint8Array<ArrayBuffer> | Buffer, contentType: string | null, query = ''): Request =>
  new Request(`https://localhost/x${query}`, {
    method: 'POST',
    ...(contentType === null ? {} : { headers: { 'content-type': contentType } }),
    body,
  });

/** Read `req`; a refusal must be an EngineError with a code and a path. Answers the params or the error. */
async function readOrRefuse(req: Request): Promise<Params | EngineError> {
  try {
    const p = await readParams(req);
    // Everything a handler touches must be safe too.
    for (const e of p.entries) {
      for (const probe of [() => p.get(e.name), () => p.bool(e.name), () => p.list(e.name), () => p.has(e.name)]) {
        try {
          probe();
        } catch (err) {
          expectRefusal(err);
        }
      }
    }
    return p;
  } catch (e) {
    expectRefusal(e);
    return e as EngineError;
  }
}

function expectRefusal(e: unknown): asserts e is EngineError {
  if (!(e instanceof EngineError)) throw new Error(`not an EngineError: ${e instanceof Error ? e.stack : String(e)}`);
  expect(['INVALID_ARGUMENT', 'LIMIT_EXCEEDED']).toContain(e.code);
  expect(typeof e.path === 'string' && e.path !== '', `path of "${e.message}"`).toBe(true);
}

/** Bytes biased towards what breaks parsers: separators, escapes, invalid and overlong UTF-8, BOMs and NULs. */
const hostileByte = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 255 }) },
  { weight: 3, arbitrary: fc.constantFrom(0x26, 0x3d, 0x25, 0x2b, 0x00, 0x0d, 0x0a, 0x2d, 0x22, 0x3b) },
);
const hostileChunk = fc.oneof(
  fc.uint8Array({ maxLength: 24 }),
  fc.array(hostileByte, { maxLength: 24 }).map((a) => Uint8Array.from(a)),
  fc
    .constantFrom(
      '%C0%AF', // overlong '/'
      '%E0%80%AF', // overlong, 3 bytes
      '%ED%A0%80', // a surrogate in UTF-8
      '%F4%90%80%80', // past U+10FFFF
      '%FF',
      '%EF%BB%BF', // BOM
      '%00',
      '%',
      '%%',
      '%G1',
      '+',
      '&&&',
      '==',
      '__proto__=1',
      'constructor=x',
      'f=json',
      'F=PJSON',
      'token=',
      '[',
      '["a",{}]',
      '[1,2',
    )
    .map((s) => enc.encode(s)),
);
const hostileBytes = fc.array(hostileChunk, { maxLength: 12 }).map((cs) => {
  const out = new Uint8Array(cs.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of cs) {
    out.set(c, at);
    at += c.length;
  }
  return out;
});

/** A multipart body: parts with or without names/filenames, hostile headers and contents, a boundary reused or missing. */
const multipart = fc
  .record({
    boundary: fc.constantFrom('XyZ', 'a', '----WebKitFormBoundary7MA4YWxkTrZu0gW', '"quoted"', '', 'bo"und', 'b b'),
    parts: fc.array(
      fc.record({
        disposition: fc.oneof(
          fc.constant('form-data; name="f"'),
          fc.constant('form-data'),
          fc.constant('form-data; filename="a.txt"'),
          fc.constant('form-data; name="file"; filename="x.tif"'),
          fc.constant('form-data; name=""'),
          fc.constant('form-data; name="\u00e9\u0000"'),
          fc.string({ maxLength: 30 }).map((s) => `form-data; name="${s}"`),
          fc.string({ maxLength: 30 }),
        ),
        extraHeaders: fc.array(
          fc.constantFrom('Content-Type: text/plain; charset=latin1', 'Content-Type: application/octet-stream', 'X: y', ':'),
          {
            maxLength: 2,
          },
        ),
        content: hostileBytes,
      }),
      { maxLength: 5 },
    ),
    closing: fc.constantFrom('--\r\n', '--', '\r\n', '', '--junk'),
    lineEnd: fc.constantFrom('\r\n', '\n'),
    repeatBoundary: fc.boolean(),
    headerBoundary: fc.constantFrom('same', 'none', 'other', 'twice'),
  })
  .map(({ boundary, parts, closing, lineEnd, repeatBoundary, headerBoundary }) => {
    const b = boundary.replace(/^"|"$/g, '');
    const chunks: Uint8Array[] = [];
    for (const p of parts) {
      chunks.push(enc.encode(`--${b}${lineEnd}Content-Disposition: ${p.disposition}${lineEnd}`));
      for (const h of p.extraHeaders) chunks.push(enc.encode(`${h}${lineEnd}`));
      chunks.push(enc.encode(lineEnd), p.content, enc.encode(lineEnd));
      if (repeatBoundary) chunks.push(enc.encode(`--${b}${lineEnd}`));
    }
    chunks.push(enc.encode(`--${b}${closing}`));
    const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of chunks) {
      body.set(c, at);
      at += c.length;
    }
    const ct =
      headerBoundary === 'same'
        ? `multipart/form-data; boundary=${boundary}`
        : headerBoundary === 'none'
          ? 'multipart/form-data'
          : headerBoundary === 'other'
            ? 'multipart/form-data; boundary=other'
            : `multipart/form-data; boundary=${boundary}; boundary=other`;
    return { body, ct };
  });

describe('readParams under hostile input', () => {
  it(
    'reads or refuses (EngineError with a path) any query string and urlencoded body',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          hostileBytes,
          hostileBytes,
          fc.constantFrom<string | null>(
            null,
            'application/x-www-form-urlencoded',
            'APPLICATION/X-WWW-FORM-URLENCODED; charset=utf-8',
            'text/plain',
          ),
          async (query, body, ct) => {
            const started = performance.now();
            const result = await readOrRefuse(post(body, ct, `?${pct(query)}`));
            expect(performance.now() - started).toBeLessThan(fuzzBudget(1000));
            if (!(result instanceof EngineError)) {
              for (const e of result.entries) expect(typeof e.value).toBe('string');
            }
          },
        ),
        fuzzParameters(1500, {
          examples: [
            // Regression (seed -1526871326): `=` gave a parameter named '', whose bool() error had path ''.
            [new Uint8Array(), enc.encode('='), null],
            // Regression: `==\x80`, an unnamed parameter with invalid UTF-8, was refused with path ''.
            [new Uint8Array(), Uint8Array.from([61, 61, 128]), null],
            [Uint8Array.from([61, 128]), new Uint8Array(), null],
          ] as [Uint8Array<ArrayBuffer>, Uint8Array<ArrayBuffer>, string | null][],
        }),
      );
    },
    fuzzTimeout(1500, 5),
  );

  it(
    'reads or refuses any multipart body: no boundary, a boundary repeated, parts without names, hostile content',
    async () => {
      await fc.assert(
        fc.asyncProperty(multipart, async ({ body, ct }) => {
          const started = performance.now();
          await readOrRefuse(post(body, ct));
          expect(performance.now() - started).toBeLessThan(fuzzBudget(1000));
        }),
        fuzzParameters(1000, {
          examples: [
            // A boundary-less multipart body.
            [{ body: enc.encode('--X\r\nContent-Disposition: form-data; name="f"\r\n\r\njson\r\n--X--\r\n'), ct: 'multipart/form-data' }],
            // A part without a name, and a file part without a name.
            [
              {
                body: enc.encode(
                  '--X\r\nContent-Disposition: form-data\r\n\r\nv\r\n--X\r\nContent-Disposition: form-data; filename="a"\r\n\r\nv\r\n--X--\r\n',
                ),
                ct: 'multipart/form-data; boundary=X',
              },
            ],
            // Regression (seed -1338418214): a part with name="" and invalid UTF-8 was refused with path ''.
            [
              {
                body: Uint8Array.from([
                  ...enc.encode('--XyZ\r\nContent-Disposition: form-data; name=""\r\n\r\n'),
                  128,
                  ...enc.encode('\r\n--XyZ--\r\n'),
                ]),
                ct: 'multipart/form-data; boundary=XyZ',
              },
            ],
            // Unterminated: no closing boundary.
            [{ body: enc.encode('--X\r\nContent-Disposition: form-data; name="f"\r\n\r\njson'), ct: 'multipart/form-data; boundary=X' }],
          ],
        }),
      );
    },
    fuzzTimeout(1000, 5),
  );

  it(
    'finds every name whatever its case, the body winning over the query and the last occurrence winning',
    async () => {
      const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,11}$/);
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(name, fc.string({ maxLength: 20 })), { maxLength: 8 }),
          fc.array(fc.tuple(name, fc.string({ maxLength: 20 })), { maxLength: 8 }),
          async (query, body) => {
            const q = new URLSearchParams(query).toString();
            const p = await readParams(post(new URLSearchParams(body).toString(), 'application/x-www-form-urlencoded', q ? `?${q}` : ''));
            const expected = new Map<string, string>();
            for (const [k, v] of query) expected.set(k.toLowerCase(), v);
            for (const [k, v] of body) expected.set(k.toLowerCase(), v);
            for (const [k, v] of expected) {
              expect(p.get(k.toUpperCase())).toBe(v);
              expect(p.get(k)).toBe(v);
            }
            expect(p.entries).toHaveLength(query.length + body.length);
          },
        ),
        fuzzParameters(500),
      );
    },
    fuzzTimeout(500, 5),
  );

  it('refuses invalid and overlong UTF-8, naming the parameter; keeps NULs and BOMs in valid text', async () => {
    for (const bad of ['%C0%AF', '%E0%80%AF', '%ED%A0%80', '%F4%90%80%80', '%FF', '%80']) {
      const e = await readOrRefuse(post(`where=${bad}`, 'application/x-www-form-urlencoded'));
      expect(e).toBeInstanceOf(EngineError);
      expect((e as EngineError).path).toBe('where');
      const q = await readOrRefuse(post('', null, `?${bad}=1`));
      expect((q as EngineError).path).toBe('query');
      const m = await readOrRefuse(
        post(
          Buffer.concat([
            Buffer.from('--B\r\nContent-Disposition: form-data; name="where"\r\n\r\n'),
            Buffer.from(bad.replace(/%/g, ''), 'hex'),
            Buffer.from('\r\n--B--\r\n'),
          ]),
          'multipart/form-data; boundary=B',
        ),
      );
      expect((m as EngineError).path, bad).toBe('where');
    }
    const ok = await readParams(post('a=%00b&b=%EF%BB%BFx', 'application/x-www-form-urlencoded'));
    expect(ok.get('a')).toBe('\u0000b');
    expect(ok.get('b')).toBe('\uFEFFx');
  });

  it('refuses a body over 10 MiB with 413 LIMIT_EXCEEDED, declared or streamed, quickly and without reading it all', async () => {
    const big = new Uint8Array(DEFAULT_MAX_BODY_BYTES + 1).fill(0x61);
    for (const ct of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=X', null]) {
      const started = performance.now();
      const e = await readOrRefuse(post(big, ct));
      expect(e).toBeInstanceOf(EngineError);
      expect((e as EngineError).code).toBe('LIMIT_EXCEEDED');
      expect(performance.now() - started).toBeLessThan(fuzzBudget(3000));
    }
    // Streamed with no content-length: refused once the limit is passed, the rest never pulled.
    let pulled = 0;
    const chunk = new Uint8Array(1 << 20).fill(0x61);
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++;
        if (pulled > 100) c.close();
        else c.enqueue(chunk);
      },
    });
    const req = new Request('https://localhost/x', { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    const e = await readOrRefuse(req);
    expect((e as EngineError).code).toBe('LIMIT_EXCEEDED');
    expect(pulled).toBeLessThan(15);
    // Exactly at the limit is read.
    const p = await readParams(post(new Uint8Array(DEFAULT_MAX_BODY_BYTES).fill(0x61), 'application/x-www-form-urlencoded'));
    expect(p.get('a'.repeat(DEFAULT_MAX_BODY_BYTES))).toBe('');
  }, 30_000);

  it('reads 300,000 parameters (named and unnamed) in bounded time', async () => {
    const body = 'a=1&=2&'.repeat(150_000);
    const started = performance.now();
    const p = await readParams(post(body, 'application/x-www-form-urlencoded'));
    expect(p.get('A')).toBe('1');
    expect(performance.now() - started).toBeLessThan(fuzzBudget(10_000));
  }, 30_000);
});

describe('hostile requests through the mounted REST routes', () => {
  let site: TestSite;
  let app: ReturnType<typeof createApp>;
  let token: string;

  beforeAll(async () => {
    site = await testSite();
    await site.addUser('root', 'administrator');
    token = await site.token('root');
    app = createApp(site, siteRoutes(site));
  }, 60_000);
  afterAll(async () => {
    await mapServicesOf(site).close();
  });

  const PATHS = [
    '/portal/sharing/rest/generateToken',
    '/server/admin/generateToken',
    '/portal/sharing/rest/community/self',
    '/portal/sharing/rest/portals/self',
    '/server/admin/security/users/add',
    '/server/admin/services/createService',
    '/server/rest/services',
    '/server/rest/info',
    '/portal/sharing/rest/oauth2/token',
  ];

  /** The answer is the REST error shape (or a success), never a 500 or a stack trace. */
  async function expectProtocolAnswer(res: Response): Promise<void> {
    expect(res.status, await res.clone().text()).not.toBeGreaterThanOrEqual(500);
    const text = await res.text();
    expect(text).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/);
    if (res.status === 413) {
      const body = JSON.parse(text) as Record<string, unknown>;
      // The sharing shape, or the admin shape under /server/admin; the code is the error table's.
      if ('error' in body) expect(body).toMatchObject({ error: { code: 400, message: 'The request exceeds a size limit.' } });
      else expect(body).toMatchObject({ status: 'error', code: 400 });
    }
  }

  it(
    'answers random bodies on every route with the protocol error shape, never a 500',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...PATHS),
          fc.boolean(),
          fc.oneof(
            hostileBytes.map((b) => ({ body: b, ct: 'application/x-www-form-urlencoded' })),
            multipart,
            hostileBytes.map((b) => ({ body: b, ct: 'multipart/form-data; boundary=' })),
          ),
          hostileBytes,
          async (path, withToken, { body, ct }, query) => {
            const auth = withToken ? `&token=${encodeURIComponent(token)}` : '';
            const req = siteRequest(`${path}?${pct(query)}${auth}`, { method: 'POST', headers: { 'content-type': ct } });
            const res = await app.fetch(new Request(req, { body }));
            await expectProtocolAnswer(res);
          },
        ),
        fuzzParameters(300),
      );
    },
    fuzzTimeout(300, 20),
  );

  it('answers a 10 MB+ body with 413 in the REST error shape', async () => {
    const big = new Uint8Array(DEFAULT_MAX_BODY_BYTES + 10).fill(0x61);
    for (const path of ['/portal/sharing/rest/generateToken', '/server/admin/security/users/add']) {
      const req = siteRequest(`${path}?f=json`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      const res = await app.fetch(new Request(req, { body: big }));
      expect(res.status).toBe(413);
      await expectProtocolAnswer(res);
    }
  }, 30_000);
});

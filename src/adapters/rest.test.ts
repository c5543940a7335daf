import { describe, expect, it } from 'vitest';
import { errorOf } from '../../test/helpers.js';
import { EngineError, ERROR_CODES, ERROR_TABLE } from '../core/errors.js';
import {
  adminError,
  errorResponse,
  escapeHtml,
  handler,
  isHttps,
  parseFormat,
  readParams,
  requireHttps,
  requirePost,
  respond,
  sharingError,
  transportStatus,
  withRestErrors,
} from './rest.js';

const URL_BASE = 'https://h.example/portal/sharing/rest/generateToken';

const form = (body: string, query = '') =>
  new Request(URL_BASE + query, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });

const thrown = (f: () => unknown): EngineError => {
  try {
    f();
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  throw new Error('did not throw');
};

describe('readParams (§0.1)', () => {
  it('reads the query string with + and %20 as spaces, names case-insensitive', async () => {
    const p = await readParams(new Request(URL_BASE + '?serverURL=a+b%20c&F=json&request=getToken'));
    expect(p.get('serverUrl')).toBe('a b c');
    expect(p.get('SERVERURL')).toBe('a b c');
    expect(p.get('f')).toBe('json');
    expect(p.has('REQUEST')).toBe(true);
    expect(p.has('missing')).toBe(false);
    expect(p.get('missing')).toBeUndefined();
    expect(p.entries).toEqual([
      { name: 'serverURL', value: 'a b c', source: 'query' },
      { name: 'F', value: 'json', source: 'query' },
      { name: 'request', value: 'getToken', source: 'query' },
    ]);
  });

  it('reads urlencoded bodies; the body wins over the query on a clash, whatever the case', async () => {
    const p = await readParams(form('Username=alice&f=pjson&empty=&flag', '?username=bob&f=json&expiration=60'));
    expect(p.get('username')).toBe('alice');
    expect(p.get('f')).toBe('pjson');
    expect(p.get('expiration')).toBe('60');
    expect(p.get('empty')).toBe('');
    expect(p.get('flag')).toBe('');
    expect(p.entries.filter((e) => e.source === 'body').map((e) => e.name)).toEqual(['Username', 'f', 'empty', 'flag']);
  });

  it('decodes percent-encoded UTF-8 and raw UTF-8 bytes', async () => {
    const p = await readParams(form('name=%C3%A9t%C3%A9&raw=été'));
    expect(p.get('name')).toBe('été');
    expect(p.get('raw')).toBe('été');
  });

  it('reads a body without a content type as urlencoded and ignores other content types', async () => {
    const bare = new Request(URL_BASE, { method: 'POST', body: new TextEncoder().encode('a=1') });
    expect((await readParams(bare)).get('a')).toBe('1');
    const json = new Request(URL_BASE + '?q=1', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    const pj = await readParams(json);
    expect(pj.has('a')).toBe(false);
    expect(pj.get('q')).toBe('1');
  });

  it('accepts a GET that declares a form content type (§0.1.5)', async () => {
    const p = await readParams(new Request(URL_BASE + '?f=json', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }));
    expect(p.get('f')).toBe('json');
  });

  it('reads multipart bodies: text fields as parameters, files as file parts', async () => {
    const fd = new FormData();
    fd.append('Token', 'abc');
    fd.append('f', 'json');
    fd.append('upload', new File(['hello'], 'h.txt', { type: 'text/plain' }));
    const p = await readParams(new Request(URL_BASE + '?token=query&other=1', { method: 'POST', body: fd }));
    expect(p.get('token')).toBe('abc');
    expect(p.get('other')).toBe('1');
    expect(p.has('UPLOAD')).toBe(true);
    expect(p.get('upload')).toBeUndefined();
    const file = p.file('Upload');
    expect(file?.name).toBe('h.txt');
    expect(await file?.text()).toBe('hello');
    expect(p.files.map((x) => x.name)).toEqual(['upload']);
    expect(p.file('missing')).toBeUndefined();
  });

  it('caches the result per request (the body can be read once)', async () => {
    const req = form('a=1');
    const first = await readParams(req);
    expect(await readParams(req)).toBe(first);
  });

  it('rejects a body over the limit with LIMIT_EXCEEDED naming the limit, HTTP 413', async () => {
    const e = await errorOf(readParams(form('a=' + 'x'.repeat(100)), { maxBodyBytes: 50 }));
    expect(e).toMatchObject({ code: 'LIMIT_EXCEEDED', path: 'body' });
    expect((e as EngineError).message).toContain('50 bytes');
    expect(transportStatus(e)).toBe(413);
    // Streamed, no content-length: counted while reading.
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('a=0123456789&'));
        c.close();
      },
    });
    const streamed = new Request(URL_BASE, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    expect(await errorOf(readParams(streamed, { maxBodyBytes: 64 }))).toMatchObject({ code: 'LIMIT_EXCEEDED', path: 'body' });
    // At the limit is fine.
    expect((await readParams(form('a=123'), { maxBodyBytes: 5 })).get('a')).toBe('123');
  });

  it('has a 10 MiB default limit', async () => {
    const big = new Uint8Array(10 * 1024 * 1024 + 1).fill(0x61);
    const e = await errorOf(readParams(new Request(URL_BASE, { method: 'POST', body: big })));
    expect(e).toMatchObject({ code: 'LIMIT_EXCEEDED' });
    expect((e as EngineError).message).toContain('10485760');
  });

  it('rejects invalid UTF-8 naming the parameter, or the source for a name', async () => {
    expect(await errorOf(readParams(form('ok=1&bad=%FF%FE')))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'bad' });
    expect(await errorOf(readParams(new Request(URL_BASE + '?q=%C3')))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'q' });
    expect(await errorOf(readParams(form('%FF=1')))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'body' });
    const raw = new Request(URL_BASE, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new Uint8Array([0x76, 0x3d, 0xc0, 0xaf]),
    });
    expect(await errorOf(readParams(raw))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'v' });
  });

  it('rejects malformed and invalid-UTF-8 multipart bodies', async () => {
    const malformed = new Request(URL_BASE, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=X' },
      body: 'garbage',
    });
    expect(await errorOf(readParams(malformed))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'body' });
    const noBoundary = new Request(URL_BASE, { method: 'POST', headers: { 'content-type': 'multipart/form-data' }, body: 'x' });
    expect(await errorOf(readParams(noBoundary))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'body' });
    const enc = new TextEncoder();
    const head = enc.encode('--B\r\nContent-Disposition: form-data; name="title"\r\n\r\n');
    const tail = enc.encode('\r\n--B--\r\n');
    const body = new Uint8Array([...head, 0xff, 0xfe, ...tail]);
    const bad = new Request(URL_BASE, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=B' }, body });
    expect(await errorOf(readParams(bad))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'title' });
    // A U+FFFD the client really sent is kept.
    const good = new Request(URL_BASE, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=B' },
      body: new Uint8Array([...head, ...enc.encode('a\uFFFDb'), ...tail]),
    });
    expect((await readParams(good)).get('title')).toBe('a\uFFFDb');
  });

  it('bool reads true/false in any case and names a bad value', async () => {
    const p = await readParams(new Request(URL_BASE + '?a=TRUE&b=false&c=yes'));
    expect(p.bool('A')).toBe(true);
    expect(p.bool('b')).toBe(false);
    expect(p.bool('none')).toBeUndefined();
    expect(thrown(() => p.bool('c'))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'c' });
  });
});

describe('Params.list (§0.1.4)', () => {
  it('accepts comma-joined text and JSON arrays, and names a bad value', async () => {
    const q = new URLSearchParams({ groups: ' a, b ,,c ', json: '["x", 2]', empty: '', bad: '[1,', objs: '[{"a":1}]' });
    const p = await readParams(new Request(URL_BASE + '?' + q.toString()));
    expect(p.list('GROUPS')).toEqual(['a', 'b', 'c']);
    expect(p.list('json')).toEqual(['x', '2']);
    expect(p.list('empty')).toEqual([]);
    expect(p.list('none')).toBeUndefined();
    expect(thrown(() => p.list('bad'))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'bad' });
    expect(thrown(() => p.list('objs'))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'objs' });
  });
});

describe('respond and f (§0.2)', () => {
  const value = { token: 'x<y>&"z\'', n: 1 };

  it('f=json is compact JSON with the JSON content type', async () => {
    const r = respond('json', value);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await r.text()).toBe(JSON.stringify(value));
    expect(r.headers.get('cache-control')).toBeNull();
  });

  it('f=pjson is the same JSON with a 2-space indent', async () => {
    const r = respond('pjson', value, { noStore: true });
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-store');
    const text = await r.text();
    expect(text).toBe(JSON.stringify(value, null, 2));
    expect(JSON.parse(text)).toEqual(value);
  });

  it('absent f and f=html give an escaped HTML page', async () => {
    for (const f of [undefined, '', 'html', 'HTML']) {
      const r = respond(f, value, { title: 'Generate <Token>' });
      expect(r.headers.get('content-type'), String(f)).toBe('text/html; charset=utf-8');
      const html = await r.text();
      expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
      expect(html).toContain('<title>Generate &#60;Token&#62;</title>');
      expect(html).toContain('&#34;token&#34;: &#34;x&#60;y&#62;&#38;\\&#34;z&#39;&#34;');
      expect(html).not.toContain('x<y>');
      expect(html).not.toContain('<Token>');
    }
  });

  it('an unknown f answers the Invalid format error as JSON with HTTP 200', async () => {
    const r = respond('xml', value);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await r.json()).toEqual({
      error: { code: 400, message: 'Invalid format.', details: ["'f' must be one of html, json, pjson."] },
    });
  });

  it('parseFormat and escapeHtml', () => {
    expect(parseFormat('PJSON')).toBe('pjson');
    expect(thrown(() => parseFormat('kmz'))).toMatchObject({ code: 'INVALID_FORMAT', path: 'f' });
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;');
  });
});

describe('error shapes (§0.3)', () => {
  it('sharing shape: code and message from ERROR_TABLE, details naming the parameter', () => {
    const e = new EngineError('INVALID_ARGUMENT', "'expiration' must be a number", { path: 'expiration' });
    expect(sharingError(e)).toEqual({
      error: { code: 400, message: 'Invalid or missing input parameters.', details: ["expiration: 'expiration' must be a number"] },
    });
  });

  it('admin shape: status error, messages, code from ERROR_TABLE', () => {
    const e = new EngineError('INVALID_ARGUMENT', 'required', { path: 'token' });
    expect(adminError(e)).toEqual({ status: 'error', messages: ['token: required'], code: 400 });
    expect(adminError(new EngineError('METHOD_NOT_ALLOWED', 'GET', { issues: [] }))).toEqual({
      status: 'error',
      messages: ['Method not supported.'],
      code: 405,
    });
  });

  it('explicit details win over issues; several issues are all listed', () => {
    expect(sharingError(new EngineError('HTTPS_REQUIRED', 'x', { details: ['SSL Required'] })).error.details).toEqual(['SSL Required']);
    const two = new EngineError('INVALID_ARGUMENT', 'two', {
      issues: [
        { code: 'INVALID_ARGUMENT', path: 'a', message: 'bad a' },
        { code: 'INVALID_ARGUMENT', path: 'b', message: 'bad b' },
      ],
    });
    expect(sharingError(two).error.details).toEqual(['a: bad a', 'b: bad b']);
  });

  it('server-side faults never leak their message or stack', () => {
    const crash = new Error('secret /etc/passwd at line 3');
    for (const body of [JSON.stringify(sharingError(crash)), JSON.stringify(adminError(crash))]) {
      expect(body).not.toContain('secret');
      expect(body).not.toContain('stack');
      expect(body).toContain(ERROR_TABLE.INTERNAL.protocolMessage);
    }
    expect(sharingError(crash)).toEqual({ error: { code: 500, message: 'Error performing the operation.', details: [] } });
    expect(sharingError(new EngineError('IO_ERROR', 'open /data/x.tif failed')).error.details).toEqual([]);
  });

  it('every code renders in both shapes with the table code', () => {
    for (const code of ERROR_CODES) {
      const e = new EngineError(code, 'm');
      expect(sharingError(e).error.code).toBe(ERROR_TABLE[code].httpStatus);
      expect(sharingError(e).error.message).toBe(ERROR_TABLE[code].protocolMessage);
      expect(adminError(e).code).toBe(ERROR_TABLE[code].httpStatus);
    }
  });

  it('errors travel with HTTP 200; crashes are 500; no-store always', async () => {
    const r = errorResponse('sharing', new EngineError('TOKEN_EXPIRED', 'expired', { issues: [] }), 'json');
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(await r.json()).toEqual({ error: { code: 498, message: 'Invalid token.', details: [] } });
    expect(errorResponse('admin', new Error('boom')).status).toBe(500);
    expect(transportStatus(new EngineError('LIMIT_EXCEEDED', 'too many pixels'))).toBe(200);
  });

  it('errors follow f: html page, pjson, and JSON for an unknown f', async () => {
    const e = new EngineError('INVALID_ARGUMENT', '<b>', { path: 'x' });
    const html = await errorResponse('sharing', e, 'html').text();
    expect(html).toContain('&#60;b&#62;');
    expect(html).not.toContain('<b>');
    expect(await errorResponse('admin', e, 'pjson').text()).toBe(JSON.stringify(adminError(e), null, 2));
    const unknown = errorResponse('sharing', e, 'nope');
    expect(unknown.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await unknown.json()).toEqual(sharingError(e));
  });
});

describe('requirePost and requireHttps (§0.6)', () => {
  it('requirePost accepts POST and answers 405 Method not supported. otherwise', async () => {
    expect(() => requirePost(new Request(URL_BASE, { method: 'POST' }))).not.toThrow();
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const e = thrown(() => requirePost(new Request(URL_BASE, { method })));
      expect(e.code).toBe('METHOD_NOT_ALLOWED');
      expect(await errorResponse('sharing', e, 'json').json()).toEqual({
        error: { code: 405, message: 'Method not supported.', details: [] },
      });
    }
  });

  it('requireHttps: https URL passes; plain http fails only under allSSL', async () => {
    const plain = new Request('http://h.example/x');
    expect(() => requireHttps(new Request('https://h.example/x'), { allSSL: true, trustProxy: false })).not.toThrow();
    expect(() => requireHttps(plain, { allSSL: false, trustProxy: false })).not.toThrow();
    const e = thrown(() => requireHttps(plain, { allSSL: true, trustProxy: false }));
    expect(e.code).toBe('HTTPS_REQUIRED');
    expect(await errorResponse('sharing', e, 'json').json()).toEqual({
      error: { code: 403, message: 'SSL Required', details: ['SSL Required'] },
    });
  });

  it('X-Forwarded-Proto counts only from a trusted proxy, last value wins', () => {
    const fwd = (v: string) => new Request('http://h.example/x', { headers: { 'x-forwarded-proto': v } });
    expect(isHttps(fwd('https'), false)).toBe(false);
    expect(isHttps(fwd('HTTPS'), true)).toBe(true);
    expect(isHttps(fwd('https, http'), true)).toBe(false);
    expect(isHttps(fwd('http, https'), true)).toBe(true);
    expect(isHttps(new Request('http://h.example/x'), true)).toBe(false);
    expect(() => requireHttps(fwd('https'), { allSSL: true, trustProxy: true })).not.toThrow();
    expect(thrown(() => requireHttps(fwd('https'), { allSSL: true, trustProxy: false })).code).toBe('HTTPS_REQUIRED');
  });
});

describe('handler and withRestErrors', () => {
  const echo = handler((deps: { greeting: string }) =>
    withRestErrors('sharing', async (req) => {
      requireHttps(req, { allSSL: true, trustProxy: false });
      requirePost(req);
      const p = await readParams(req);
      if (!p.has('name')) throw new EngineError('INVALID_ARGUMENT', "'name' is required", { path: 'name' });
      if (p.get('name') === 'crash') throw new Error('internal detail');
      return respond(p.get('f'), { message: `${deps.greeting} ${p.get('name')}` });
    }),
  );
  const h = echo({ greeting: 'hello' });

  it('passes a successful response through', async () => {
    const r = await h(form('name=ann&f=json'));
    expect(await r.json()).toEqual({ message: 'hello ann' });
  });

  it('turns EngineErrors into HTTP 200 error bodies, using f from the body', async () => {
    const r = await h(form('f=json'));
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      error: { code: 400, message: 'Invalid or missing input parameters.', details: ["name: 'name' is required"] },
    });
    const html = await h(form('f=html'));
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
  });

  it('uses f from the query when the body was never read', async () => {
    const r = await h(new Request(URL_BASE + '?f=json'));
    expect(await r.json()).toEqual({ error: { code: 405, message: 'Method not supported.', details: [] } });
  });

  it('turns unexpected throws into INTERNAL without leaking', async () => {
    const r = await h(form('name=crash&f=json'));
    expect(r.status).toBe(500);
    const text = await r.text();
    expect(text).not.toContain('internal detail');
    expect(JSON.parse(text)).toEqual({ error: { code: 500, message: 'Error performing the operation.', details: [] } });
  });

  it('admin shape wrapper', async () => {
    const admin = withRestErrors('admin', async () => {
      throw new EngineError('HTTPS_REQUIRED', 'x', { details: ['SSL Required'] });
    });
    expect(await (await admin(new Request('http://h.example/server/admin/x?f=json'))).json()).toEqual({
      status: 'error',
      messages: ['SSL Required'],
      code: 403,
    });
  });
});

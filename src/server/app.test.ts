import { describe, expect, it } from 'vitest';
import { peerAddress, type Logger } from '../adapters/site.js';
import type { Route } from '../adapters/rest.js';
import { createApp, isSecretParam, redactedTarget } from './app.js';

function memoryLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (m, f) => void lines.push(`info ${m} ${JSON.stringify(f ?? {})}`),
    warn: (m, f) => void lines.push(`warn ${m} ${JSON.stringify(f ?? {})}`),
  };
}

const echo: Route['handler'] = async (req) =>
  new Response(JSON.stringify({ method: req.method, url: req.url, body: req.body ? await req.text() : '' }), {
    headers: { 'content-type': 'application/json' },
  });

describe('createApp', () => {
  it('mounts GET, POST and ALL routes with Hono patterns and hands the handler a web Request', async () => {
    const log = memoryLog();
    const routes: Route[] = [
      { method: 'GET', path: '/server/rest/services', handler: echo },
      { method: 'GET', path: '/portal/sharing/rest/portals/self', handler: echo },
      { method: 'POST', path: '/server/admin/security/users/add', handler: echo },
      { method: 'ALL', path: '/server/rest/services/*', handler: echo },
    ];
    const app = createApp({ log }, routes);
    const get = await app.request('https://localhost/server/rest/services?f=json');
    expect(get.status).toBe(200);
    expect(await get.json()).toMatchObject({ method: 'GET', url: 'https://localhost/server/rest/services?f=json' });
    const post = await app.request('https://localhost/server/admin/security/users/add', { method: 'POST', body: 'a=1' });
    expect(await post.json()).toMatchObject({ method: 'POST', body: 'a=1' });
    // A GET-only route does not answer POST; ALL answers every method.
    expect((await app.request('https://localhost/portal/sharing/rest/portals/self', { method: 'POST' })).status).toBe(404);
    for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
      const r = await app.request('https://localhost/server/rest/services/System/RasterAnalysisTools/GPServer', { method });
      expect(await r.json()).toMatchObject({ method });
    }
    // Decision: a trailing slash is ignored.
    expect((await app.request('https://localhost/server/rest/services/')).status).toBe(200);
  });

  it('answers an unknown path with HTTP 404 and the sharing error body', async () => {
    const app = createApp({ log: memoryLog() }, []);
    for (const path of ['/nothing', '/portal/sharing/rest/nope', '/server/admin/nope?f=pjson']) {
      const res = await app.request(`https://localhost${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.text()).toBe('{"error":{"code":404,"message":"Not found.","details":[]}}');
    }
  });

  it('answers a crashing handler with 500 and the INTERNAL body, never its message or stack', async () => {
    const log = memoryLog();
    const boom: Route['handler'] = () => Promise.reject(new Error('secret internals at /src/x.ts:12'));
    const app = createApp({ log }, [
      { method: 'GET', path: '/portal/sharing/rest/boom', handler: boom },
      { method: 'GET', path: '/server/admin/boom', handler: boom },
    ]);
    const sharing = await app.request('https://localhost/portal/sharing/rest/boom?f=json');
    expect(sharing.status).toBe(500);
    const text = await sharing.text();
    expect(JSON.parse(text)).toEqual({ error: { code: 500, message: 'Error performing the operation.', details: [] } });
    expect(text).not.toMatch(/secret internals|\.ts:|at /);
    const admin = await app.request('https://localhost/server/admin/boom');
    expect(admin.status).toBe(500);
    expect(await admin.json()).toEqual({ status: 'error', messages: ['Error performing the operation.'], code: 500 });
    // The operator's log says what failed.
    expect(log.lines.some((l) => l.startsWith('warn handler failed') && l.includes('secret internals'))).toBe(true);
    expect(log.lines.some((l) => l.includes('"status":500'))).toBe(true);
  });

  it('logs method, path, status and duration for every request', async () => {
    const log = memoryLog();
    const app = createApp({ log }, [{ method: 'GET', path: '/ok', handler: echo }]);
    await app.request('https://localhost/ok?f=json');
    await app.request('https://localhost/missing');
    expect(log.lines).toHaveLength(2);
    const first = JSON.parse(log.lines[0]!.replace(/^info request /, '')) as Record<string, unknown>;
    expect(first).toMatchObject({ method: 'GET', path: '/ok?f=json', status: 200 });
    expect(typeof first['ms']).toBe('number');
    expect(log.lines[1]).toContain('"status":404');
  });

  it('never logs a token or password sent in the query, a header or the body', async () => {
    const log = memoryLog();
    const secrets = [
      'QUERYTOKEN123',
      'HEADERTOKEN456',
      'BODYPASSWORD789',
      'CLIENTSECRET0',
      'OAUTHCODE1',
      'REFRESH2',
      'ESRIHDR3',
      'COOKIE4',
    ];
    const app = createApp({ log }, [
      { method: 'POST', path: '/portal/sharing/rest/generateToken', handler: echo },
      { method: 'GET', path: '/portal/sharing/rest/boom', handler: () => Promise.reject(new Error('failed')) },
    ]);
    await app.request(
      `https://localhost/portal/sharing/rest/generateToken?token=${secrets[0]}&client_secret=${secrets[3]}&code=${secrets[4]}&refresh_token=${secrets[5]}&f=json`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${secrets[1]}`,
          'x-esri-authorization': `Bearer ${secrets[6]}`,
          cookie: `agstoken=${secrets[7]}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: `username=u&password=${secrets[2]}&token=${secrets[0]}`,
      },
    );
    await app.request(`https://localhost/portal/sharing/rest/boom?TOKEN=${secrets[0]}&Password=${secrets[2]}`);
    const all = log.lines.join('\n');
    expect(log.lines.length).toBeGreaterThanOrEqual(3);
    for (const s of secrets) expect(all).not.toContain(s);
    // The names stay, so the log still says a token was sent.
    expect(all).toContain('token=***');
    expect(all).toContain('f=json');
  });

  it('records no peer when the request did not come over a socket', async () => {
    let seen = 'unset';
    const app = createApp({ log: memoryLog() }, [
      {
        method: 'GET',
        path: '/peer',
        handler: (req) => {
          seen = peerAddress(req);
          return Promise.resolve(new Response('ok'));
        },
      },
    ]);
    await app.request('https://localhost/peer');
    expect(seen).toBe('');
  });
});

describe('redaction', () => {
  it('treats the credential parameters as secret and others not', () => {
    for (const n of [
      'token',
      'TOKEN',
      'password',
      'newPassword',
      'client_secret',
      'code',
      'refresh_token',
      'access_token',
      'signatureKey',
      'key',
    ]) {
      expect(isSecretParam(n)).toBe(true);
    }
    for (const n of ['f', 'username', 'expiration', 'referer', 'client', 'serviceName']) expect(isSecretParam(n)).toBe(false);
  });

  it('keeps the path and the harmless values', () => {
    expect(redactedTarget('https://h/a/b')).toBe('/a/b');
    expect(redactedTarget('https://h/a?f=json&token=x&username=bob')).toBe('/a?f=json&token=***&username=bob');
  });
});

import { describe, expect, it } from 'vitest';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { ADMIN_AUDIENCE, authenticate, PORTAL_AUDIENCE, serverAudience } from '../auth.js';
import { setPeerAddress } from '../site.js';
import { verifyToken } from '../tokens.js';
import { normaliseServerUrl } from '../site.js';
import { sharingRoutes } from './generate-token.js';
import { createThrottle, MAX_THROTTLE_ENTRIES } from './throttle.js';

type Body = Record<string, unknown> & { error?: { code: number; message: string; details: string[] } };

function routes(site: TestSite) {
  const [portal, admin, tokens] = sharingRoutes(site).map((r) => r.handler);
  return { portal: portal!, admin: admin!, tokens: tokens! };
}

const PATH = '/portal/sharing/rest/generateToken';
const creds = (extra: Record<string, string> = {}) => ({
  username: 'alice',
  password: 'alice-pw',
  referer: 'http://test',
  f: 'json',
  ...extra,
});

async function setup(config: Parameters<typeof testSite>[0] = {}) {
  const site = await testSite(config);
  await site.addUser('alice', 'user');
  await site.addUser('root', 'administrator');
  return { site, ...routes(site) };
}

const post = (form: Record<string, string>, options: Parameters<typeof siteRequest>[1] = {}, path = PATH) =>
  siteRequest(path, { form, ...options });

async function err(res: Response): Promise<{ code: number; message: string; details: string[] }> {
  const b = await jsonOf<Body>(res);
  expect(b.error, JSON.stringify(b)).toBeDefined();
  return b.error!;
}

describe('generateToken credential mode', () => {
  it('issues a portal token with number expires, ssl and no-store', async () => {
    const { site, portal } = await setup();
    const res = await portal(post(creds()));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const b = await jsonOf<{ token: string; expires: number; ssl: boolean }>(res);
    expect(typeof b.expires).toBe('number');
    expect(b.expires).toBe(site.clock.now() + 60 * 60_000);
    expect(b.ssl).toBe(false);
    const claims = await verifyToken(site.keys, b.token, { audience: PORTAL_AUDIENCE, request: { referer: 'http://test', ip: '1.1.1.1' } });
    expect(claims.sub).toBe('alice');
    expect(claims.bind).toEqual({ t: 'referer', v: 'http://test' });
  });

  it('ssl follows allSSL', async () => {
    const { portal } = await setup({ allSSL: true });
    expect((await jsonOf<{ ssl: boolean }>(await portal(post(creds())))).ssl).toBe(true);
  });

  it('admin root answers admin tokens and the admin error shape', async () => {
    const { site, admin } = await setup();
    const b = await jsonOf<{ token: string }>(await admin(post(creds(), {}, '/server/admin/generateToken')));
    const c = await verifyToken(site.keys, b.token, { audience: ADMIN_AUDIENCE, request: { referer: 'http://test', ip: '' } });
    expect(c.aud).toBe('admin');
    const e = await jsonOf(await admin(post(creds({ password: 'nope' }), {}, '/server/admin/generateToken')));
    expect(e).toEqual({ status: 'error', messages: ['Invalid username or password.'], code: 400 });
  });

  it('server token service issues tokens for the server root', async () => {
    const { site, tokens } = await setup();
    const b = await jsonOf<{ token: string }>(await tokens(post(creds(), {}, '/server/tokens/generateToken')));
    const c = await verifyToken(site.keys, b.token, {
      audience: serverAudience('https://localhost/server'),
      request: { referer: 'http://test', ip: '' },
    });
    expect(c.sub).toBe('alice');
    await expect(
      verifyToken(site.keys, b.token, { audience: PORTAL_AUDIENCE, request: { referer: 'http://test', ip: '' } }),
    ).rejects.toThrow();
  });

  it('wrong password, unknown user and disabled user get the same answer', async () => {
    const { site, portal } = await setup();
    const expected = { code: 400, message: 'Unable to generate token.', details: ['Invalid username or password.'] };
    expect(await err(await portal(post(creds({ password: 'wrong' }))))).toEqual(expected);
    expect(await err(await portal(post(creds({ username: 'nobody' }))))).toEqual(expected);
    const alice = (await site.store.getUser('alice'))!;
    await site.store.putUser({ ...alice, disabled: true });
    expect(await err(await portal(post(creds())))).toEqual(expected);
  });

  it('username is case-sensitive', async () => {
    const { portal } = await setup();
    expect((await err(await portal(post(creds({ username: 'Alice' }))))).details).toEqual(['Invalid username or password.']);
  });

  it('lists every missing parameter in order', async () => {
    const { portal } = await setup();
    expect(await err(await portal(post({ f: 'json' })))).toEqual({
      code: 400,
      message: 'Unable to generate token.',
      details: ["'username' must be specified.", "'password' must be specified.", "'referer' must be specified."],
    });
    expect((await err(await portal(post({ f: 'json', client: 'ip', username: 'alice' })))).details).toEqual([
      "'password' must be specified.",
      "'ip' must be specified.",
    ]);
    expect((await err(await portal(post(creds({ client: 'ip' }))))).details).toEqual(["'ip' must be specified."]);
  });

  it('rejects an unknown client and a bad ip', async () => {
    const { portal } = await setup();
    expect((await err(await portal(post(creds({ client: 'cookie' }))))).details).toEqual([
      "'client' must be one of referer, ip, requestip.",
    ]);
    expect((await err(await portal(post(creds({ client: 'ip', ip: '300.1.1.1' }))))).details).toEqual([
      "'ip' must be an IPv4 or IPv6 address.",
    ]);
  });

  it('validates expiration syntax, range and the configured maximum', async () => {
    const { site, portal } = await setup({ maxTokenMinutes: 20160 });
    for (const bad of ['0', '-5', '1.5', 'abc']) {
      expect(await err(await portal(post(creds({ expiration: bad }))))).toEqual({
        code: 400,
        message: 'Unable to generate token.',
        details: ["'expiration' must be a positive integer number of minutes."],
      });
    }
    expect(await err(await portal(post(creds({ expiration: '20161' }))))).toEqual({
      code: 400,
      message: 'Unable to generate token.',
      details: ["'expiration' must not exceed 20160 minutes."],
    });
    const ok = await jsonOf<{ expires: number }>(await portal(post(creds({ expiration: '20160' }))));
    expect(ok.expires).toBe(site.clock.now() + 20160 * 60_000);
  });

  it('default expiration comes from the configuration', async () => {
    const { site, portal } = await setup({ defaultTokenMinutes: 15 });
    const ok = await jsonOf<{ expires: number }>(await portal(post(creds())));
    expect(ok.expires).toBe(site.clock.now() + 15 * 60_000);
  });

  it('refuses credentials in the query string of a POST', async () => {
    const { portal } = await setup();
    const res = await portal(post({ password: 'alice-pw', referer: 'x', f: 'json' }, {}, `${PATH}?username=alice`));
    expect(await err(res)).toEqual({
      code: 400,
      message: 'Unable to generate token.',
      details: ['Credentials must be sent in the request body.'],
    });
  });

  it('requires HTTPS (trusted proxy X-Forwarded-Proto counts)', async () => {
    const { portal } = await setup();
    expect(await err(await portal(post(creds(), { scheme: 'http' })))).toEqual({
      code: 403,
      message: 'SSL Required',
      details: ['SSL Required'],
    });
    const { portal: p2 } = await setup({ trustedProxies: ['10.0.0.1'] });
    const res = await p2(post(creds(), { scheme: 'http', peer: '10.0.0.1', headers: { 'x-forwarded-proto': 'https' } }));
    expect((await jsonOf(res))['token']).toBeTypeOf('string');
  });

  it('method errors come before HTTPS; GET with credentials or f=json is 405', async () => {
    const { portal } = await setup();
    const e405 = { code: 405, message: 'Method not supported.', details: [] };
    expect(await err(await portal(siteRequest(`${PATH}?username=alice&password=x&f=json`)))).toEqual(e405);
    expect(await err(await portal(siteRequest(`${PATH}?f=json`)))).toEqual(e405);
    expect(await err(await portal(siteRequest(`${PATH}?f=json`, { scheme: 'http' })))).toEqual(e405);
    expect(await err(await portal(siteRequest(`${PATH}?f=json`, { method: 'PUT' })))).toEqual(e405);
  });

  it('binds ip and requestip', async () => {
    const { site, portal } = await setup();
    const ipTok = await jsonOf<{ token: string }>(await portal(post(creds({ client: 'ip', ip: '::ffff:10.1.2.3' }))));
    const c = await verifyToken(site.keys, ipTok.token, { audience: PORTAL_AUDIENCE, request: { ip: '10.1.2.3' } });
    expect(c.bind).toEqual({ t: 'ip', v: '10.1.2.3' });
    const v6 = await jsonOf<{ token: string }>(await portal(post(creds({ client: 'ip', ip: '2001:db8::1' }))));
    expect((await verifyToken(site.keys, v6.token, { audience: PORTAL_AUDIENCE, request: { ip: '2001:db8::1' } })).bind.t).toBe('ip');
    const req = await jsonOf<{ token: string }>(await portal(post(creds({ client: 'requestip' }), { peer: '192.0.2.7' })));
    const r = await verifyToken(site.keys, req.token, { audience: PORTAL_AUDIENCE, request: { ip: '192.0.2.7' } });
    expect(r.bind).toEqual({ t: 'requestip', v: '192.0.2.7' });
    await expect(verifyToken(site.keys, req.token, { audience: PORTAL_AUDIENCE, request: { ip: '192.0.2.8' } })).rejects.toThrow(
      /ClientID/,
    );
  });

  it('requestip behind a trusted proxy binds the forwarded address', async () => {
    const { site, portal } = await setup({ trustedProxies: ['10.0.0.1'] });
    const res = await portal(
      post(creds({ client: 'requestip' }), { peer: '10.0.0.1', headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.9' } }),
    );
    const b = await jsonOf<{ token: string }>(res);
    expect((await verifyToken(site.keys, b.token, { audience: PORTAL_AUDIENCE, request: { ip: '203.0.113.9' } })).bind.v).toBe(
      '203.0.113.9',
    );
  });

  it('referer binding: exact for @esri/arcgis-rest-js, URL prefix rule, mismatch is 498 on use', async () => {
    const { site, portal } = await setup();
    const auth = (token: string, referer: string) => {
      const req = siteRequest(`/x?token=${token}`, { headers: { referer } });
      return authenticate(site, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing' });
    };
    const js = await jsonOf<{ token: string }>(await portal(post(creds({ referer: '@esri/arcgis-rest-js' }))));
    expect((await auth(js.token, '@esri/arcgis-rest-js')).username).toBe('alice');
    await expect(auth(js.token, '@esri/arcgis-rest-js2')).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    const url = await jsonOf<{ token: string }>(await portal(post(creds({ referer: 'https://app.example/maps' }))));
    expect((await auth(url.token, 'https://app.example/maps/view?x=1')).username).toBe('alice');
    await expect(auth(url.token, 'https://app.example/mapsevil')).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    await expect(auth(url.token, 'https://evil.example/maps')).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
  });

  it('expires exactly at the boundary; tampered tokens and retired keys are refused; rotation keeps old tokens', async () => {
    const { site, portal } = await setup();
    const b = await jsonOf<{ token: string; expires: number }>(await portal(post(creds({ expiration: '1' }))));
    const check = (token: string) =>
      verifyToken(site.keys, token, { audience: PORTAL_AUDIENCE, request: { referer: 'http://test', ip: '' } });
    site.keys.rotate();
    site.clock.set(b.expires - 1);
    expect((await check(b.token)).sub).toBe('alice');
    site.clock.set(b.expires);
    await expect(check(b.token)).rejects.toMatchObject({ code: 'TOKEN_EXPIRED' });
    site.clock.set(b.expires - 30_000);
    const [h, p, s] = b.token.split('.') as [string, string, string];
    const tamperedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'root' })).toString(
      'base64url',
    );
    await expect(check(`${h}.${tamperedPayload}.${s}`)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    const oldKid = JSON.parse(Buffer.from(h, 'base64url').toString()).kid as string;
    site.keys.retire(oldKid);
    await expect(check(b.token)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
  });
});

describe('generateToken throttle', () => {
  it('per user: 429 after the allowed failures, even with the right password; resets after the window', async () => {
    const { site, portal } = await setup({ throttleAttempts: 3, throttleWindowMs: 60_000 });
    for (let i = 0; i < 3; i++) expect((await err(await portal(post(creds({ password: 'x' }), { peer: `10.0.0.${i}` })))).code).toBe(400);
    const throttled = { code: 429, message: 'Unable to generate token.', details: ['Too many invalid attempts. Please try again later.'] };
    expect(await err(await portal(post(creds(), { peer: '10.0.0.9' })))).toEqual(throttled);
    // Another user from another address is not affected.
    expect(
      (await jsonOf(await portal(post(creds({ username: 'root', password: 'root-pw' }), { peer: '10.0.0.10' }))))['token'],
    ).toBeDefined();
    site.clock.advance(60_000);
    expect((await jsonOf(await portal(post(creds(), { peer: '10.0.0.9' }))))['token']).toBeDefined();
  });

  it('per address: failures over many usernames block the address', async () => {
    const { portal } = await setup({ throttleAttempts: 2 });
    await portal(post(creds({ username: 'u1' }), { peer: '198.51.100.1' }));
    await portal(post(creds({ username: 'u2' }), { peer: '198.51.100.1' }));
    expect((await err(await portal(post(creds(), { peer: '198.51.100.1' })))).code).toBe(429);
    expect((await jsonOf(await portal(post(creds(), { peer: '198.51.100.2' }))))['token']).toBeDefined();
  });

  it('a success resets the user count', async () => {
    const { portal } = await setup({ throttleAttempts: 2 });
    await portal(post(creds({ password: 'x' }), { peer: '10.0.0.1' }));
    await portal(post(creds(), { peer: '10.0.0.2' }));
    await portal(post(creds({ password: 'x' }), { peer: '10.0.0.3' }));
    expect((await jsonOf(await portal(post(creds(), { peer: '10.0.0.4' }))))['token']).toBeDefined();
  });

  it('is bounded', () => {
    let t = 0;
    const th = createThrottle({ clock: { now: () => t }, config: { throttleAttempts: 5, throttleWindowMs: 1000 } as never }, 100);
    for (let i = 0; i < 1000; i++) th.fail(`user${i}`, `addr${i}`);
    expect(th.size()).toBeLessThanOrEqual(200);
    t = 5000;
    th.check('user999', 'addr999');
    expect(MAX_THROTTLE_ENTRIES).toBeGreaterThan(0);
  });
});

describe('generateToken server-token mode', () => {
  async function portalToken(site: TestSite, portal: (r: Request) => Promise<Response>, extra: Record<string, string> = {}) {
    return jsonOf<{ token: string; expires: number }>(await portal(post(creds(extra))));
  }

  it('issues a token for the own server root with the portal token binding and expiry, ignoring expiration', async () => {
    const { site, portal } = await setup();
    const pt = await portalToken(site, portal, { expiration: '30' });
    site.clock.advance(60_000);
    for (const serverUrl of [
      'https://localhost/server',
      'HTTPS://LOCALHOST/server/rest/services/Foo/ImageServer',
      'https://localhost/server/',
    ]) {
      const b = await jsonOf<{ token: string; expires: number }>(
        await portal(post({ token: pt.token, serverURL: serverUrl, expiration: '99999999', f: 'json' })),
      );
      expect(b.expires).toBe(pt.expires);
      const c = await verifyToken(site.keys, b.token, {
        audience: serverAudience('https://localhost/server'),
        request: { referer: 'http://test', ip: '' },
      });
      expect(c.bind).toEqual({ t: 'referer', v: 'http://test' });
      // The portal refuses a server token.
      const use = siteRequest(`/x?token=${b.token}`);
      await expect(authenticate(site, use, { audiences: [PORTAL_AUDIENCE], shape: 'sharing' })).rejects.toMatchObject({
        code: 'TOKEN_INVALID',
      });
    }
  });

  it('accepts registered federated servers, refuses others', async () => {
    const { site, portal } = await setup();
    await site.store.putFederatedServer({ id: 's1', url: 'https://gis.example:6443/arcgis' });
    const pt = await portalToken(site, portal);
    const ok = await jsonOf<{ token: string }>(
      await portal(post({ token: pt.token, serverUrl: 'https://GIS.example:6443/arcgis/rest/services', f: 'json' })),
    );
    await verifyToken(site.keys, ok.token, {
      audience: serverAudience('https://gis.example:6443/arcgis'),
      request: { referer: 'http://test', ip: '' },
    });
    expect(await err(await portal(post({ token: pt.token, serverUrl: 'https://other.example/arcgis', f: 'json' })))).toEqual({
      code: 400,
      message: 'Unable to generate token.',
      details: ["'serverUrl' is not a server federated with this portal."],
    });
    expect((await err(await portal(post({ token: pt.token, f: 'json' })))).details).toEqual(["'serverUrl' must be specified."]);
  });

  it('invalid, expired or mismatched portal tokens are 498', async () => {
    const { site, portal } = await setup();
    const pt = await portalToken(site, portal, { expiration: '1' });
    const e498 = { code: 498, message: 'Invalid token.', details: [] };
    const body = (token: string) => ({ token, serverUrl: 'https://localhost/server', f: 'json' });
    expect(await err(await portal(post(body(pt.token), { headers: { referer: 'http://other' } })))).toEqual(e498);
    expect(await err(await portal(post(body('garbage'))))).toEqual(e498);
    const adminTok = await site.token('alice', { audience: ADMIN_AUDIENCE });
    expect(await err(await portal(post(body(adminTok))))).toEqual(e498);
    site.clock.advance(60_000);
    expect(await err(await portal(post(body(pt.token))))).toEqual(e498);
  });
});

describe('generateToken HTML', () => {
  it('GET shows the sign-in form, escaped, posting back, no-store and no-referrer', async () => {
    const { portal } = await setup();
    const res = await portal(siteRequest(`${PATH}?referer=%22%3E%3Cscript%3E`));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).toContain(`<form method="post" action="${PATH}"`);
    for (const n of ['username', 'password', 'referer', 'ip', 'expiration', 'client', 'f']) expect(html).toContain(`name="${n}"`);
    expect(html).toContain('value="60"');
    expect(html).toContain('requestip');
    expect(html).not.toContain('"><script>');
    expect(html).toContain('&#34;&#62;&#60;script&#62;');
  });

  it('GET form requires HTTPS', async () => {
    const { portal } = await setup();
    expect((await portal(siteRequest(PATH, { scheme: 'http' }))).status).toBe(200);
    expect(await (await portal(siteRequest(PATH, { scheme: 'http' }))).text()).toContain('SSL Required');
  });

  it('POST f=html shows the token and its UTC expiry, or the error; never the password', async () => {
    const { site, portal } = await setup();
    const res = await portal(post(creds({ f: 'html' })));
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).toContain(new Date(site.clock.now() + 3600_000).toUTCString());
    expect(html).toMatch(/<code id="token">[A-Za-z0-9_.-]+<\/code>/);
    expect(html).not.toContain('alice-pw');
    const bad = await (await portal(post(creds({ f: 'html', password: '<b>secret' })))).text();
    expect(bad).toContain('Unable to generate token.');
    expect(bad).toContain('Invalid username or password.');
    expect(bad).not.toContain('secret');
  });
});

describe('generateToken formats', () => {
  it('pjson is pretty; an unknown f is an error; admin-shape errors on the admin form page', async () => {
    const { admin, portal } = await setup();
    const pretty = await (await portal(post(creds({ f: 'pjson' })))).text();
    expect(pretty).toMatch(/^\{\n {2}"token": "/);
    const unknown = await jsonOf<Body>(await portal(post(creds({ f: 'xml' }))));
    expect(unknown.error).toEqual({ code: 400, message: 'Invalid format.', details: ["'f' must be one of html, json, pjson."] });
    // Refused before the credentials: a wrong password is not counted and not reported.
    const unknownBad = await jsonOf<Body>(await portal(post(creds({ f: 'xml', password: 'x' }))));
    expect(unknownBad.error!.message).toBe('Invalid format.');
    const html = await (await admin(post(creds({ f: 'html', password: 'x' }), {}, '/server/admin/generateToken'))).text();
    expect(html).toContain('Invalid username or password.');
    const form = await admin(siteRequest('/server/admin/generateToken'));
    expect(await form.text()).toContain('action="/server/admin/generateToken"');
  });
});

describe('server root normalisation', () => {
  it('normalises', () => {
    expect(normaliseServerUrl('HTTPS://Host.Example:443/arcgis/rest/services/x')).toBe('https://host.example/arcgis');
    expect(normaliseServerUrl('https://h:6443/server/admin')).toBe('https://h:6443/server');
    expect(normaliseServerUrl('ftp://h/x')).toBeUndefined();
    expect(normaliseServerUrl('not a url')).toBeUndefined();
    expect(setPeerAddress).toBeDefined();
  });
});

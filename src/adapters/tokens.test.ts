import { describe, expect, it } from 'vitest';
import { ERROR_TABLE } from '../core/errors.js';
import { readParams } from './rest.js';
import {
  bindingMatches,
  createKeyRing,
  issueToken,
  revokeSubject,
  revokeTokenId,
  tokenFromRequest,
  verifyToken,
  type Binding,
  type KeyRing,
} from './tokens.js';

function fakeClock(t = 1_700_000_000_000): { now: () => number; t: number } {
  const c = { t, now: () => c.t };
  return c;
}

const ARJS: Binding = { kind: 'referer', value: '@esri/arcgis-rest-js' };
const REQ = { referer: '@esri/arcgis-rest-js', ip: '10.0.0.1' };

async function issue(ring: KeyRing, over: Partial<Parameters<typeof issueToken>[1]> = {}): Promise<string> {
  return issueToken(ring, { subject: 'alice', audience: 'portal', binding: ARJS, expiresAt: ring.clock.now() + 60_000, ...over });
}

const verify = (ring: KeyRing, token: string, over: Partial<Parameters<typeof verifyToken>[2]> = {}) =>
  verifyToken(ring, token, { audience: 'portal', request: REQ, ...over });

/** Replace one character of a base64url part, keeping it decodable. */
function flip(part: string, at: number): string {
  const c = part[at] === 'A' ? 'B' : 'A';
  return part.slice(0, at) + c + part.slice(at + 1);
}

describe('issueToken / verifyToken', () => {
  it('round-trips the claims', async () => {
    const clock = fakeClock();
    const ring = createKeyRing(clock);
    const token = await issue(ring, { ssl: true });
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(token.length).toBeLessThan(1024);
    const claims = await verify(ring, token);
    expect(claims).toMatchObject({ sub: 'alice', aud: 'portal', iat: clock.t, exp: clock.t + 60_000, ssl: true, kid: ring.current().kid });
    expect(claims.bind).toEqual({ t: 'referer', v: '@esri/arcgis-rest-js' });
    expect(claims.jti).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect((await verify(ring, await issue(ring))).jti).not.toBe(claims.jti);
  });

  it('expires at exactly exp, valid one millisecond before (no grace)', async () => {
    const clock = fakeClock();
    const ring = createKeyRing(clock);
    const token = await issue(ring, { expiresAt: clock.t + 1000 });
    clock.t += 999;
    await expect(verify(ring, token)).resolves.toMatchObject({ sub: 'alice' });
    clock.t += 1;
    await expect(verify(ring, token)).rejects.toMatchObject({ code: 'TOKEN_EXPIRED' });
    await expect(verify(ring, token, { now: clock.t - 1 })).resolves.toMatchObject({ sub: 'alice' });
  });

  it('refuses a token that expires before it is issued', async () => {
    const ring = createKeyRing(fakeClock());
    await expect(issue(ring, { expiresAt: ring.clock.now() })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'expiresAt' });
  });

  it('refuses a tampered payload, a tampered signature and garbage', async () => {
    const ring = createKeyRing(fakeClock());
    const [h, p, s] = (await issue(ring)).split('.') as [string, string, string];
    const forgedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'admin' })).toString(
      'base64url',
    );
    for (const bad of [`${h}.${forgedPayload}.${s}`, `${h}.${p}.${flip(s, 3)}`, `${h}.${flip(p, 5)}.${s}`, 'nonsense', `${h}.${p}`, '']) {
      await expect(verify(ring, bad)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    }
  });

  it('refuses a token from another ring (unknown kid) and one signed with another alg', async () => {
    const ring = createKeyRing(fakeClock());
    const other = createKeyRing(fakeClock());
    await expect(verify(ring, await issue(other))).rejects.toMatchObject({ code: 'TOKEN_INVALID', message: /unknown or retired/ });
    const [, p] = (await issue(ring)).split('.') as [string, string, string];
    const none = Buffer.from(JSON.stringify({ alg: 'none', kid: ring.current().kid })).toString('base64url');
    await expect(verify(ring, `${none}.${p}.AAAA`)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
  });

  it('refuses another audience', async () => {
    const ring = createKeyRing(fakeClock());
    const token = await issue(ring, { audience: 'server:https://gis.example/server' });
    await expect(verify(ring, token, { audience: 'portal' })).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    await expect(verify(ring, token, { audience: 'server:https://gis.example/server' })).resolves.toBeTruthy();
  });
});

describe('key rotation', () => {
  it('keeps old tokens valid until the old key is retired, then refuses them', async () => {
    const clock = fakeClock();
    const ring = createKeyRing(clock);
    const oldKid = ring.current().kid;
    const oldToken = await issue(ring);
    const newKey = ring.rotate();
    expect(ring.current()).toEqual(newKey);
    const newToken = await issue(ring);
    expect((await verify(ring, newToken)).kid).toBe(newKey.kid);
    expect((await verify(ring, oldToken)).kid).toBe(oldKid);
    ring.retire(oldKid);
    await expect(verify(ring, oldToken)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    await expect(verify(ring, newToken)).resolves.toBeTruthy();
    expect(() => ring.retire(newKey.kid)).toThrow(/current key/);
  });

  it('is plain data that a new ring restores', async () => {
    const clock = fakeClock();
    const ring = createKeyRing(clock);
    ring.rotate();
    const token = await issue(ring);
    revokeSubject(ring, 'bob', clock.t);
    const data = JSON.parse(JSON.stringify(ring.data())) as ReturnType<KeyRing['data']>;
    const restored = createKeyRing(clock, data);
    expect(restored.data()).toEqual(ring.data());
    await expect(verify(restored, token)).resolves.toMatchObject({ sub: 'alice' });
  });

  it('refuses keys shorter than 256 bits', () => {
    expect(() => createKeyRing(fakeClock(), { keys: [{ kid: 'k', secret: 'AAAA', createdAt: 0 }] })).toThrow(/256 bits/);
  });
});

describe('client binding', () => {
  it('referer: exact match, including the non-URL values real clients bind', async () => {
    const ring = createKeyRing(fakeClock());
    const token = await issue(ring);
    await expect(verify(ring, token, { request: { referer: ' @esri/arcgis-rest-js ', ip: '1.2.3.4' } })).resolves.toBeTruthy();
    await expect(verify(ring, token, { request: { referer: '@esri/arcgis-rest', ip: '10.0.0.1' } })).rejects.toMatchObject({
      code: 'TOKEN_INVALID',
    });
    await expect(verify(ring, token, { request: { ip: '10.0.0.1' } })).rejects.toMatchObject({
      code: 'TOKEN_INVALID',
      message: /ClientID/,
    });
    const py = await issue(ring, { binding: { kind: 'referer', value: 'http' } });
    await expect(verify(ring, py, { request: { referer: 'http', ip: '' } })).resolves.toBeTruthy();
    await expect(verify(ring, py, { request: { referer: 'https', ip: '' } })).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
  });

  it('referer: a URL binding matches the same origin on a path boundary (§0.5)', () => {
    const bind = { t: 'referer', v: 'https://app.example/maps' } as const;
    const m = (referer: string) => bindingMatches(bind, { referer, ip: '' });
    expect(m('https://app.example/maps')).toBe(true);
    expect(m('https://app.example/maps/viewer?x=1')).toBe(true);
    expect(m('https://app.example/mapsevil')).toBe(false);
    expect(m('https://app.example.evil/maps')).toBe(false);
    expect(m('http://app.example/maps')).toBe(false);
    expect(m('https://app.example:8443/maps')).toBe(false);
  });

  it('ip and requestip: exact address', async () => {
    const ring = createKeyRing(fakeClock());
    for (const kind of ['ip', 'requestip'] as const) {
      const token = await issue(ring, { binding: { kind, value: '10.0.0.1' } });
      await expect(verify(ring, token, { request: { ip: '10.0.0.1' } })).resolves.toMatchObject({ bind: { t: kind } });
      await expect(verify(ring, token, { request: { ip: '10.0.0.10' } })).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
      await expect(verify(ring, token, { request: { ip: '::ffff:10.0.0.1', referer: '10.0.0.1' } })).rejects.toMatchObject({
        code: 'TOKEN_INVALID',
      });
    }
  });
});

describe('revocation', () => {
  it('refuses a subject’s tokens issued before the instant, not later ones nor other subjects', async () => {
    const clock = fakeClock();
    const ring = createKeyRing(clock);
    const before = await issue(ring);
    const bobs = await issue(ring, { subject: 'bob' });
    clock.t += 10;
    revokeSubject(ring, 'alice', clock.t);
    const at = await issue(ring);
    await expect(verify(ring, before)).rejects.toMatchObject({ code: 'TOKEN_INVALID', message: /revoked/ });
    await expect(verify(ring, at)).resolves.toBeTruthy();
    await expect(verify(ring, bobs)).resolves.toBeTruthy();
    revokeSubject(ring, 'alice', clock.t - 5); // an older revocation does not undo a newer one
    await expect(verify(ring, before)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
  });

  it('refuses one token by jti', async () => {
    const ring = createKeyRing(fakeClock());
    const a = await issue(ring);
    const b = await issue(ring);
    const claims = await verify(ring, a);
    revokeTokenId(ring, claims.jti, claims.exp);
    await expect(verify(ring, a)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    await expect(verify(ring, b)).resolves.toBeTruthy();
  });
});

describe('tokenFromRequest (§0.4 carriers)', () => {
  const URL_BASE = 'https://h.example/portal/sharing/rest/portals/self';
  const post = (query: string, body: string, headers: Record<string, string> = {}) =>
    new Request(URL_BASE + query, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });

  it('reads each carrier alone', async () => {
    expect(tokenFromRequest(new Request(URL_BASE, { headers: { 'X-Geo-Authorization': 'Bearer g' } }))).toBe('g');
    expect(tokenFromRequest(new Request(URL_BASE, { headers: { Authorization: 'bearer a' } }))).toBe('a');
    expect(tokenFromRequest(new Request(URL_BASE, { headers: { 'X-Esri-Authorization': 'Bearer e' } }))).toBe('e');
    expect(
      tokenFromRequest(new Request(URL_BASE, { headers: { 'X-Esri-Authorization': 'Bearer e' } }), { headerAlias: false }),
    ).toBeUndefined();
    const req = post('', 'token=b&f=json');
    expect(tokenFromRequest(req, { params: await readParams(req) })).toBe('b');
    expect(tokenFromRequest(new Request(`${URL_BASE}?TOKEN=q`))).toBe('q');
    expect(tokenFromRequest(new Request(URL_BASE, { headers: { cookie: 'a=1; geo_authcookie=c; b=2' } }))).toBe('c');
    expect(tokenFromRequest(new Request(URL_BASE, { headers: { cookie: 'geo_authcookie=c' } }), { cookie: false })).toBeUndefined();
    expect(tokenFromRequest(new Request(URL_BASE))).toBeUndefined();
  });

  it('the higher carrier wins', async () => {
    const all = {
      'X-Geo-Authorization': 'Bearer g',
      Authorization: 'Bearer a',
      'X-Esri-Authorization': 'Bearer e',
      cookie: 'geo_authcookie=c',
    };
    const drop = (...names: string[]) => Object.fromEntries(Object.entries(all).filter(([k]) => !names.includes(k)));
    const from = async (headers: Record<string, string>, query = '?token=q', body = 'token=b') => {
      const req = post(query, body, headers);
      return tokenFromRequest(req, { params: await readParams(req) });
    };
    expect(await from(all)).toBe('g');
    expect(await from(drop('X-Geo-Authorization'))).toBe('a');
    expect(await from(drop('X-Geo-Authorization', 'Authorization'))).toBe('e');
    expect(await from(drop('X-Geo-Authorization', 'Authorization', 'X-Esri-Authorization'))).toBe('b');
    expect(await from(drop('X-Geo-Authorization', 'Authorization', 'X-Esri-Authorization'), '?token=q', 'f=json')).toBe('q');
    expect(await from({ cookie: 'geo_authcookie=c' }, '', 'f=json')).toBe('c');
  });

  it('a header without the Bearer prefix is TOKEN_INVALID (498)', () => {
    for (const value of ['abc', 'Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b']) {
      expect(() => tokenFromRequest(new Request(URL_BASE, { headers: { Authorization: value } })), value).toThrow(
        expect.objectContaining({ code: 'TOKEN_INVALID' }),
      );
    }
  });
});

describe('error codes', () => {
  it('map to the statuses of protocols.md §0.3', () => {
    expect(ERROR_TABLE.TOKEN_REQUIRED).toMatchObject({ httpStatus: 499, protocolMessage: 'Token Required' });
    expect(ERROR_TABLE.TOKEN_INVALID).toMatchObject({ httpStatus: 498, protocolMessage: 'Invalid token.' });
    expect(ERROR_TABLE.TOKEN_EXPIRED).toMatchObject({ httpStatus: 498 });
  });
});

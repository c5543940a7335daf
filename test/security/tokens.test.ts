/**
 * Token attacks (issue 20 item 3): tampering, signature stripping and `alg` confusion, replay under
 * another binding, expiry at the boundary and clock skew, key rotation, revocation, audiences, and
 * tokens kept out of the server log.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { base64url, CompactSign } from 'jose';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import type { Logger } from '../../src/adapters/site.js';
import {
  createKeyRing,
  issueToken,
  revokeSubject,
  revokeTokenId,
  verifyToken,
  type Binding,
  type KeyRing,
  type VerifyOptions,
} from '../../src/adapters/tokens.js';
import { mapServicesOf } from '../../src/adapters/map/service.js';
import { createApp } from '../../src/server/app.js';
import { siteRoutes } from '../../src/server/routes.js';
import { fuzzParameters, fuzzTimeout } from '../fuzz/runs.js';
import { putOlindaMap } from '../map-fixture.js';
import { ADMIN_AUDIENCE, jsonOf, manualClock, PORTAL_AUDIENCE, siteRequest, testSite, TEST_REFERER } from '../site.js';

const REFERER: Binding = { kind: 'referer', value: 'https://app.example.com/viewer' };
const REQ = { referer: 'https://app.example.com/viewer/index.html', ip: '10.0.0.1' };

function ringAt(t = Date.UTC(2026, 0, 15, 12)) {
  const clock = manualClock(t);
  return { clock, ring: createKeyRing(clock) };
}

const issue = (ring: KeyRing, over: Partial<Parameters<typeof issueToken>[1]> = {}): Promise<string> =>
  issueToken(ring, { subject: 'alice', audience: PORTAL_AUDIENCE, binding: REFERER, expiresAt: ring.clock.now() + 60_000, ...over });

const verify = (ring: KeyRing, token: string, over: Partial<VerifyOptions> = {}) =>
  verifyToken(ring, token, { audience: PORTAL_AUDIENCE, request: REQ, ...over });

/** The code of the EngineError `p` rejects with; fails the test on success or on any other throwable. */
async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof EngineError)) throw new Error(`not an EngineError: ${String(e)}`);
    return e.code;
  }
  throw new Error('the token was accepted');
}

const enc = (o: unknown): string => base64url.encode(new TextEncoder().encode(JSON.stringify(o)));
const dec = (s: string): Record<string, unknown> => JSON.parse(new TextDecoder().decode(base64url.decode(s))) as Record<string, unknown>;
const parts = (token: string): [string, string, string] => token.split('.') as [string, string, string];

describe('token tampering', () => {
  it(
    'refuses a token with any single bit flipped in its header, payload or signature',
    async () => {
      const { ring } = ringAt();
      const token = await issue(ring);
      await expect(verify(ring, token)).resolves.toMatchObject({ sub: 'alice' });
      const segs = parts(token).map((s) => base64url.decode(s));
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 2 }), fc.nat(), fc.integer({ min: 0, max: 7 }), async (seg, at, bit) => {
          const bytes = Uint8Array.from(segs[seg]!);
          bytes[at % bytes.length]! ^= 1 << bit;
          const mutated = segs.map((s, i) => base64url.encode(i === seg ? bytes : s)).join('.');
          expect(await codeOf(verify(ring, mutated))).toBe('TOKEN_INVALID');
        }),
        fuzzParameters(300),
      );
    },
    fuzzTimeout(300, 5),
  );

  it('refuses a payload rewritten (longer expiry, other user, other audience, no binding) under the old signature', async () => {
    const { ring } = ringAt();
    const [h, p, s] = parts(await issue(ring));
    const claims = dec(p);
    for (const change of [
      { exp: Number(claims['exp']) + 86_400_000 },
      { sub: 'admin' },
      { aud: ADMIN_AUDIENCE },
      { bind: { t: 'none', v: '' } },
    ]) {
      expect(
        await codeOf(verify(ring, `${h}.${enc({ ...claims, ...change })}.${s}`, { audience: [PORTAL_AUDIENCE, ADMIN_AUDIENCE] })),
      ).toBe('TOKEN_INVALID');
    }
  });

  it('refuses signature stripping and alg "none", with or without a signature part', async () => {
    const { ring } = ringAt();
    const [h, p] = parts(await issue(ring));
    const kid = dec(h)['kid'];
    for (const header of [{ alg: 'none', kid }, { alg: 'none' }, { alg: 'None', kid, typ: 'JWT' }, { alg: '', kid }]) {
      for (const sig of ['', 'AAAA', parts(await issue(ring))[2]]) {
        expect(await codeOf(verify(ring, `${enc(header)}.${p}.${sig}`))).toBe('TOKEN_INVALID');
      }
    }
    expect(await codeOf(verify(ring, `${h}.${p}`))).toBe('TOKEN_INVALID');
    expect(await codeOf(verify(ring, `${h}.${p}.`))).toBe('TOKEN_INVALID');
  });

  it('refuses alg confusion: HS512 and HS384 with the ring key, RS256 and ES256 with the kid of a ring key', async () => {
    const { ring } = ringAt();
    const good = await issue(ring);
    const [, p] = parts(good);
    const payload = base64url.decode(p);
    const key = ring.current();
    const secret = base64url.decode(key.secret);
    for (const alg of ['HS512', 'HS384']) {
      const t = await new CompactSign(payload).setProtectedHeader({ alg, kid: key.kid, typ: 'JWT' }).sign(secret);
      expect(await codeOf(verify(ring, t))).toBe('TOKEN_INVALID');
    }
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rs = await new CompactSign(payload).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' }).sign(rsa.privateKey);
    expect(await codeOf(verify(ring, rs))).toBe('TOKEN_INVALID');
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const es = await new CompactSign(payload).setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT' }).sign(ec.privateKey);
    expect(await codeOf(verify(ring, es))).toBe('TOKEN_INVALID');
    // An embedded key (jwk header) does not make a token trusted.
    const jwk = { kty: 'oct', k: base64url.encode(new Uint8Array(32)) };
    const embedded = await new CompactSign(payload).setProtectedHeader({ alg: 'HS256', kid: key.kid, jwk }).sign(new Uint8Array(32));
    expect(await codeOf(verify(ring, embedded))).toBe('TOKEN_INVALID');
  });

  it(
    'refuses random strings and oversized tokens with TOKEN_INVALID, never another throwable',
    async () => {
      const { ring } = ringAt();
      const good = await issue(ring);
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.string({ maxLength: 300 }),
            fc.stringMatching(/^[A-Za-z0-9_-]{0,60}\.[A-Za-z0-9_-]{0,200}\.[A-Za-z0-9_-]{0,60}$/),
            fc.tuple(fc.nat(good.length), fc.string({ maxLength: 8 })).map(([i, s]) => good.slice(0, i) + s + good.slice(i + s.length)),
          ),
          async (t) => {
            fc.pre(t !== good);
            expect(await codeOf(verify(ring, t))).toBe('TOKEN_INVALID');
          },
        ),
        fuzzParameters(500),
      );
      expect(await codeOf(verify(ring, `${'A'.repeat(5000)}.${'A'.repeat(5000)}.${'A'.repeat(5000)}`))).toBe('TOKEN_INVALID');
    },
    fuzzTimeout(500, 5),
  );
});

describe('token binding', () => {
  it('refuses a token replayed under another referer or from another address', async () => {
    const { ring } = ringAt();
    const byReferer = await issue(ring);
    for (const referer of [
      undefined,
      '',
      'https://app.example.com/viewerx',
      'https://app.example.com/',
      'https://app.example.com.evil.net/viewer',
      'http://app.example.com/viewer',
      'https://evil.net/?https://app.example.com/viewer',
      'https://app.example.com:444/viewer',
    ]) {
      expect(await codeOf(verify(ring, byReferer, { request: { referer, ip: REQ.ip } })), String(referer)).toBe('TOKEN_INVALID');
    }
    const byIp = await issue(ring, { binding: { kind: 'ip', value: '10.0.0.1' } });
    await expect(verify(ring, byIp)).resolves.toMatchObject({ bind: { t: 'ip' } });
    for (const ip of ['10.0.0.2', '10.0.0.10', '::ffff:10.0.0.2', '', ' 10.0.0.1x']) {
      expect(await codeOf(verify(ring, byIp, { request: { referer: REQ.referer, ip } })), ip).toBe('TOKEN_INVALID');
    }
  });

  it(
    'refuses any other referer origin (property)',
    async () => {
      const { ring } = ringAt();
      const token = await issue(ring);
      await fc.assert(
        fc.asyncProperty(fc.webUrl(), async (referer) => {
          fc.pre(new URL(referer).origin !== 'https://app.example.com');
          expect(await codeOf(verify(ring, token, { request: { referer, ip: REQ.ip } }))).toBe('TOKEN_INVALID');
        }),
        fuzzParameters(300),
      );
    },
    fuzzTimeout(300, 5),
  );

  it('refuses a bound token replayed from another client through the HTTP API (498, not the user data)', async () => {
    const site = await testSite();
    await site.addUser('bob');
    const app = createApp(site, siteRoutes(site));
    const token = await site.token('bob', { binding: { kind: 'ip', value: '10.1.1.1' } });
    const ask = (peer: string) =>
      app.fetch(siteRequest(`/portal/sharing/rest/community/self?f=json&token=${encodeURIComponent(token)}`, { peer }));
    expect(await jsonOf(await ask('10.1.1.1'))).toMatchObject({ username: 'bob' });
    expect(await jsonOf(await ask('10.1.1.2'))).toMatchObject({ error: { code: 498 } });
  });
});

describe('expiry and clock skew', () => {
  it('accepts a token up to the millisecond before exp and refuses it at exp and after', async () => {
    const { clock, ring } = ringAt();
    const exp = clock.now() + 60_000;
    const token = await issue(ring, { expiresAt: exp });
    await expect(verify(ring, token, { now: exp - 1 })).resolves.toMatchObject({ exp });
    expect(await codeOf(verify(ring, token, { now: exp }))).toBe('TOKEN_EXPIRED');
    expect(await codeOf(verify(ring, token, { now: exp + 1 }))).toBe('TOKEN_EXPIRED');
    clock.set(exp);
    expect(await codeOf(verify(ring, token))).toBe('TOKEN_EXPIRED');
  });

  it('gives no grace to a verifier whose clock runs ahead, and no extra life to one whose clock runs behind the issuer', async () => {
    // Two servers sharing one key ring (persisted data), their clocks five minutes apart.
    const issuer = ringAt(Date.UTC(2026, 0, 15, 12));
    const token = await issue(issuer.ring, { expiresAt: issuer.clock.now() + 60_000 });
    const exp = issuer.clock.now() + 60_000;
    const ahead = createKeyRing(manualClock(Date.UTC(2026, 0, 15, 12, 5)), issuer.ring.data());
    expect(await codeOf(verify(ahead, token))).toBe('TOKEN_EXPIRED');
    const behind = createKeyRing(manualClock(Date.UTC(2026, 0, 15, 11, 55)), issuer.ring.data());
    await expect(verify(behind, token)).resolves.toMatchObject({ exp });
    // exp is absolute: the server behind refuses at the same instant as the issuer would.
    expect(await codeOf(verify(behind, token, { now: exp }))).toBe('TOKEN_EXPIRED');
  });

  it('answers 498 through the HTTP API at the expiry instant', async () => {
    const site = await testSite();
    await site.addUser('carol');
    const app = createApp(site, siteRoutes(site));
    const token = await site.token('carol', { minutes: 1 });
    const ask = () => app.fetch(siteRequest(`/portal/sharing/rest/community/self?f=json&token=${encodeURIComponent(token)}`));
    site.clock.advance(59_999);
    expect(await jsonOf(await ask())).toMatchObject({ username: 'carol' });
    site.clock.advance(1);
    expect(await jsonOf(await ask())).toMatchObject({ error: { code: 498 } });
  });
});

describe('key rotation', () => {
  it('keeps an old kid valid until it is retired, then refuses it; an unknown kid is refused', async () => {
    const { ring } = ringAt();
    const old = await issue(ring);
    const oldKid = ring.current().kid;
    const next = ring.rotate();
    const fresh = await issue(ring);
    expect(dec(parts(fresh)[0])['kid']).toBe(next.kid);
    await expect(verify(ring, old)).resolves.toMatchObject({ kid: oldKid });
    await expect(verify(ring, fresh)).resolves.toMatchObject({ kid: next.kid });
    expect(() => ring.retire(next.kid)).toThrow(EngineError);
    ring.retire(oldKid);
    expect(await codeOf(verify(ring, old))).toBe('TOKEN_INVALID');
    await expect(verify(ring, fresh)).resolves.toMatchObject({ kid: next.kid });
    // The retirement survives persistence.
    const reloaded = createKeyRing(ring.clock, JSON.parse(JSON.stringify(ring.data())) as ReturnType<KeyRing['data']>);
    expect(await codeOf(verify(reloaded, old))).toBe('TOKEN_INVALID');
    await expect(verify(reloaded, fresh)).resolves.toMatchObject({ sub: 'alice' });
    // Another ring's token, and one with a made-up kid signed with this ring's secret name.
    const other = ringAt().ring;
    expect(await codeOf(verify(ring, await issue(other)))).toBe('TOKEN_INVALID');
    const [, p] = parts(fresh);
    const forged = await new CompactSign(base64url.decode(p))
      .setProtectedHeader({ alg: 'HS256', kid: 'nope', typ: 'JWT' })
      .sign(base64url.decode(ring.current().secret));
    expect(await codeOf(verify(ring, forged))).toBe('TOKEN_INVALID');
    // A kid that names a key of this ring but a signature made with another secret.
    const wrongSecret = await new CompactSign(base64url.decode(p))
      .setProtectedHeader({ alg: 'HS256', kid: next.kid, typ: 'JWT' })
      .sign(base64url.decode(other.current().secret));
    expect(await codeOf(verify(ring, wrongSecret))).toBe('TOKEN_INVALID');
  });

  it('refuses a kid that is an Object.prototype name', async () => {
    const { ring } = ringAt();
    const [, p] = parts(await issue(ring));
    for (const kid of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const t = await new CompactSign(base64url.decode(p)).setProtectedHeader({ alg: 'HS256', kid }).sign(new Uint8Array(32));
      expect(await codeOf(verify(ring, t))).toBe('TOKEN_INVALID');
    }
  });
});

describe('revocation', () => {
  it('refuses the tokens of a revoked user issued before the revocation, and accepts later ones', async () => {
    const { clock, ring } = ringAt();
    const before = await issue(ring);
    const otherUser = await issue(ring, { subject: 'dave' });
    clock.advance(1);
    revokeSubject(ring, 'alice');
    expect(await codeOf(verify(ring, before))).toBe('TOKEN_INVALID');
    await expect(verify(ring, otherUser)).resolves.toMatchObject({ sub: 'dave' });
    clock.advance(1);
    await expect(verify(ring, await issue(ring))).resolves.toMatchObject({ sub: 'alice' });
    // The revocation survives persistence.
    const reloaded = createKeyRing(clock, JSON.parse(JSON.stringify(ring.data())) as ReturnType<KeyRing['data']>);
    expect(await codeOf(verify(reloaded, before))).toBe('TOKEN_INVALID');
  });

  it('revokes one token by jti, leaving the user’s other tokens valid', async () => {
    const { ring } = ringAt();
    const a = await issue(ring);
    const b = await issue(ring);
    const claims = await verify(ring, a);
    revokeTokenId(ring, claims.jti, claims.exp);
    expect(await codeOf(verify(ring, a))).toBe('TOKEN_INVALID');
    await expect(verify(ring, b)).resolves.toMatchObject({ sub: 'alice' });
  });

  // Regression: the revocation maps were plain objects, so revoking a user named `__proto__` was
  // silently lost (an assignment to the prototype) and one named `constructor` stored NaN.
  it('revokes users whose names are Object.prototype properties', async () => {
    for (const subject of ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty']) {
      const { clock, ring } = ringAt();
      const token = await issue(ring, { subject });
      await expect(verify(ring, token), subject).resolves.toMatchObject({ sub: subject });
      clock.advance(1);
      revokeSubject(ring, subject);
      expect(await codeOf(verify(ring, token)), subject).toBe('TOKEN_INVALID');
      const reloaded = createKeyRing(clock, JSON.parse(JSON.stringify(ring.data())) as ReturnType<KeyRing['data']>);
      expect(await codeOf(verify(reloaded, token)), `${subject} after reload`).toBe('TOKEN_INVALID');
    }
  });

  it('does not refuse a user named like an Object.prototype property that was never revoked', async () => {
    const { ring } = ringAt();
    revokeSubject(ring, 'alice');
    for (const subject of ['constructor', 'toString', '__proto__']) {
      const t = await issue(ring, { subject });
      await expect(verify(ring, t)).resolves.toMatchObject({ sub: subject });
    }
  });
});

describe('audiences', () => {
  it('refuses an admin token on the portal, and a server token on the portal and the admin API', async () => {
    const site = await testSite();
    await site.addUser('root', 'administrator');
    const app = createApp(site, siteRoutes(site));
    const adminToken = await site.token('root', { audience: ADMIN_AUDIENCE });
    const portalToken = await site.token('root', { audience: PORTAL_AUDIENCE });
    const serverToken = await site.token('root', { audience: 'server:https://localhost/server' });
    const portal = (t: string) => app.fetch(siteRequest(`/portal/sharing/rest/community/self?f=json&token=${encodeURIComponent(t)}`));
    const admin = (t: string) => app.fetch(siteRequest(`/server/admin/security/users?f=json&token=${encodeURIComponent(t)}`));
    expect(await jsonOf(await portal(portalToken))).toMatchObject({ username: 'root' });
    expect(await jsonOf(await portal(adminToken))).toMatchObject({ error: { code: 498 } });
    expect(await jsonOf(await portal(serverToken))).toMatchObject({ error: { code: 498 } });
    expect(await jsonOf(await admin(adminToken))).not.toHaveProperty('status', 'error');
    expect(await jsonOf(await admin(serverToken))).toMatchObject({ status: 'error', code: 498 });
    // Decision (issue 17): the admin API also takes a portal token of an administrator, as a federated server does.
    expect(await jsonOf(await admin(portalToken))).not.toHaveProperty('status', 'error');
  });

  it(
    'refuses any audience not listed (property)',
    async () => {
      const { ring } = ringAt();
      await fc.assert(
        fc.asyncProperty(fc.string({ minLength: 1, maxLength: 40 }), async (aud) => {
          fc.pre(aud !== PORTAL_AUDIENCE);
          const t = await issue(ring, { audience: aud });
          expect(await codeOf(verify(ring, t))).toBe('TOKEN_INVALID');
        }),
        fuzzParameters(200),
      );
    },
    fuzzTimeout(200, 5),
  );
});

describe('constant-time comparisons', () => {
  const src = (p: string) => readFileSync(fileURLToPath(new URL(`../../src/adapters/${p}`, import.meta.url)), 'utf8');

  it('verifies signatures with jose (WebCrypto HMAC verify, constant-time) and compares secrets with timingSafeEqual only', () => {
    const tokens = src('tokens.ts');
    expect(tokens).toMatch(/compactVerify\(/);
    expect(tokens).not.toMatch(/signature\s*[!=]==|[!=]==\s*signature/);
    const auth = src('auth.ts');
    expect(auth).toMatch(/timingSafeEqual\(got, expected\)/);
    const oauth = src('sharing/oauth2.ts');
    // Codes, refresh tokens and client secrets are looked up by hash or verified with scrypt; PKCE and CSRF use safeEqual.
    expect(oauth).toMatch(/timingSafeEqual\(x, y\)/);
    expect(oauth).not.toMatch(/(?:code_verifier|codeChallenge|csrf|secret)\w*\s*[!=]==\s*(?!undefined|''|"")\w/i);
  });
});

describe('tokens stay out of the server log', () => {
  function memoryLog(): Logger & { lines: string[] } {
    const lines: string[] = [];
    return {
      lines,
      info: (m, f) => void lines.push(`info ${m} ${JSON.stringify(f ?? {})}`),
      warn: (m, f) => void lines.push(`warn ${m} ${JSON.stringify(f ?? {})}`),
    };
  }

  it('never writes a token sent in the query, a header, the cookie or the body, valid or not', async () => {
    const log = memoryLog();
    // The site's own logger (handlers' warnings) and the request log are both captured.
    const site = { ...(await testSite()), log };
    await site.addUser('erin', 'administrator');
    await putOlindaMap(site, { properties: { anonymous: false } });
    const app = createApp(site, siteRoutes(site));
    const valid = await site.token('erin');
    const expired = await site.token('erin', { minutes: 1 });
    const tampered = `${valid.slice(0, -4)}AAAA`;
    const secrets = [valid, expired, tampered];
    site.clock.advance(120_000);
    for (const t of secrets) {
      const e = encodeURIComponent(t);
      const paths = [
        '/portal/sharing/rest/community/self',
        '/server/admin/security/users',
        '/server/services/nope/MapServer',
        '/server/services/olinda/MapServer',
        '/server/rest/services/olinda/MapServer/export',
      ];
      for (const path of paths) {
        await app.fetch(siteRequest(`${path}?f=json&token=${e}&TOKEN=${e}&access_token=${e}`));
        await app.fetch(siteRequest(`${path}?f=json`, { headers: { authorization: `Bearer ${t}` } }));
        await app.fetch(siteRequest(`${path}?f=json`, { headers: { 'x-esri-authorization': `Bearer ${t}` } }));
        await app.fetch(siteRequest(`${path}?f=json`, { headers: { 'x-geo-authorization': `Bearer ${t}` } }));
        await app.fetch(siteRequest(`${path}?f=json`, { headers: { cookie: `geo_authcookie=${t}`, origin: 'https://localhost' } }));
        await app.fetch(siteRequest(path, { form: { f: 'json', token: t } }));
        await app.fetch(siteRequest(`${path}?f=json&bad=%FF`, { form: { f: 'json', token: t, junk: '\uFFFD' } }));
      }
      // A SOAP request with the token on the endpoint URL and in a header.
      const soap = `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><GetMapCount/></s:Body></s:Envelope>`;
      for (const headers of [{}, { authorization: `Bearer ${t}` }] as Record<string, string>[]) {
        const req = siteRequest(`/server/services/olinda/MapServer?token=${e}`, {
          method: 'POST',
          headers: { 'content-type': 'text/xml', ...headers },
        });
        await app.fetch(new Request(req, { body: soap }));
      }
      // A malformed header value still holds the token.
      await app.fetch(siteRequest('/portal/sharing/rest/community/self?f=json', { headers: { authorization: `Token ${t}` } }));
      // generateToken answers a token: that answer must not be logged either.
      await app.fetch(
        siteRequest('/portal/sharing/rest/generateToken', {
          form: { f: 'json', username: 'erin', password: 'erin-pw', client: 'referer', referer: TEST_REFERER },
        }),
      );
    }
    await mapServicesOf(site).close();
    const all = log.lines.join('\n');
    expect(log.lines.length).toBeGreaterThan(60);
    for (const t of secrets) {
      expect(all).not.toContain(t);
      // Nor any of its parts (a signature or payload alone is as good as a leak for analysis).
      for (const part of t.split('.')) expect(all).not.toContain(part);
    }
    expect(all).not.toContain('erin-pw');
    expect(all).toContain('token=***');
  }, 60_000);
});

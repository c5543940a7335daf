import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { authenticate, hashPassword, PORTAL_AUDIENCE } from '../auth.js';
import { readParams } from '../rest.js';
import { verifyToken } from '../tokens.js';
import { CODE_TTL_MS, oauthRoutes } from './oauth2.js';

const REDIRECT = 'https://app.example/callback';
const SECRET = 'app-secret-0123456789';
const VERIFIER = 'v'.repeat(20) + 'abcdefghijklmnopqrstuvwxyz0123456789-._~';
const S256 = (v: string) => createHash('sha256').update(v).digest('base64url');

type OAuthErr = { error: { code: number; error: string; error_description: string; message: string; details: string[] } };
type TokenBody = {
  access_token: string;
  expires_in: number;
  username: string;
  ssl: boolean;
  refresh_token?: string;
  refresh_token_expires_in?: number;
};

async function setup(config: Parameters<typeof testSite>[0] = {}) {
  const site = await testSite(config);
  await site.addUser('alice', 'user');
  await site.addUser('root', 'administrator');
  await site.store.putOAuthApp({
    clientId: 'app1',
    secretHash: await hashPassword(SECRET),
    name: 'Map <Viewer>',
    redirectUris: [REDIRECT, 'http://localhost:3000/cb'],
    owner: 'root',
    created: site.clock.now(),
  });
  const h = Object.fromEntries(oauthRoutes(site).map((r) => [r.path, r.handler]));
  return {
    site,
    authorize: h['/portal/sharing/rest/oauth2/authorize']!,
    token: h['/portal/sharing/rest/oauth2/token/']!,
    revoke: h['/portal/sharing/rest/oauth2/revokeToken/']!,
  };
}

const authQuery = (extra: Record<string, string> = {}) =>
  new URLSearchParams({
    client_id: 'app1',
    redirect_uri: REDIRECT,
    response_type: 'code',
    state: 'st<1>',
    code_challenge: S256(VERIFIER),
    code_challenge_method: 'S256',
    ...extra,
  }).toString();

/** The hidden fields and the CSRF cookie of a sign-in page. */
async function formOf(res: Response): Promise<{ fields: Record<string, string>; csrfCookie: string }> {
  const html = await res.text();
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[m[1]!] = m[2]!.replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c)));
  }
  const set = res.headers.get('set-cookie') ?? '';
  const csrfCookie = /geo_oauth_csrf=([^;]+)/.exec(set)?.[1] ?? '';
  return { fields, csrfCookie };
}

async function signIn(
  t: Awaited<ReturnType<typeof setup>>,
  options: { query?: Record<string, string>; password?: string; persist?: boolean; origin?: string } = {},
): Promise<Response> {
  const page = await t.authorize(siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery(options.query)}`));
  expect(page.status).toBe(200);
  const { fields, csrfCookie } = await formOf(page);
  return t.authorize(
    siteRequest('/portal/sharing/rest/oauth2/authorize', {
      form: { ...fields, username: 'alice', password: options.password ?? 'alice-pw', ...(options.persist ? { persist: 'true' } : {}) },
      headers: { cookie: `geo_oauth_csrf=${csrfCookie}`, origin: options.origin ?? 'https://localhost' },
    }),
  );
}

function codeOf(res: Response): string {
  expect(res.status).toBe(302);
  const loc = new URL(res.headers.get('location')!);
  expect(`${loc.origin}${loc.pathname}`).toBe(REDIRECT);
  expect(loc.searchParams.get('state')).toBe('st<1>');
  return loc.searchParams.get('code')!;
}

const tokenReq = (form: Record<string, string>) => siteRequest('/portal/sharing/rest/oauth2/token/', { form: { f: 'json', ...form } });

async function exchange(t: Awaited<ReturnType<typeof setup>>, code: string, extra: Record<string, string> = {}) {
  return jsonOf<TokenBody & OAuthErr>(
    await t.token(
      tokenReq({ grant_type: 'authorization_code', client_id: 'app1', redirect_uri: REDIRECT, code, code_verifier: VERIFIER, ...extra }),
    ),
  );
}

async function useToken(site: TestSite, token: string, referer = 'https://anywhere.example/') {
  return authenticate(site, siteRequest(`/x?token=${token}`, { headers: { referer } }), { audiences: [PORTAL_AUDIENCE], shape: 'sharing' });
}

describe('OAuth 2.0 authorization code + PKCE', () => {
  it('full flow: sign-in page, credentials, 302 with code, token, refresh, exchange, revoke', async () => {
    const t = await setup();
    const { site } = t;
    const page = await t.authorize(siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery()}`));
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('content-security-policy')).not.toContain('form-action');
    expect(page.headers.get('set-cookie')).toMatch(
      /^geo_oauth_csrf=[A-Za-z0-9_-]+; HttpOnly; Secure; SameSite=Strict; Path=\/portal\/sharing\/rest\/oauth2$/,
    );
    const html = await page.clone().text();
    expect(html).toContain('name="username"');
    expect(html).toContain('type="password" name="password"');
    expect(html).toContain('name="persist"');
    expect(html).toContain('Keep me signed in');
    expect(html).toContain('Map &#60;Viewer&#62;');
    expect(html).toContain('value="st&#60;1&#62;"');
    expect(html).toMatch(/name="csrf_token" value="[A-Za-z0-9_-]{20,}"/);

    const res = await signIn(t);
    const code = codeOf(res);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^geo_authcookie=[A-Za-z0-9_.-]+; HttpOnly; Secure; SameSite=Lax; Path=\/, geo_oauth_csrf=; .*Max-Age=0$/);
    expect(cookie.split(', ')[0]).not.toContain('Max-Age'); // a session cookie
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');

    const grant = await exchange(t, code);
    expect(grant.username).toBe('alice');
    expect(grant.ssl).toBe(false);
    expect(grant.expires_in).toBe(20160 * 60);
    expect(grant.refresh_token_expires_in).toBe(20160 * 60);
    expect((await useToken(site, grant.access_token)).username).toBe('alice');
    expect('token' in grant && 'expires' in grant).toBe(false); // arcgis-rest-js tells the two answers apart by these keys

    // The code is single-use.
    expect((await exchange(t, code)).error).toMatchObject({ code: 400, error: 'invalid_grant', details: [] });

    // refresh_token: a new access token, the refresh token stays (arcgis-rest-js keeps using it).
    const r1 = await jsonOf<TokenBody>(
      await t.token(tokenReq({ grant_type: 'refresh_token', client_id: 'app1', refresh_token: grant.refresh_token!, expiration: '30' })),
    );
    expect(r1.expires_in).toBe(30 * 60);
    expect(r1.refresh_token).toBeUndefined();
    expect((await useToken(site, r1.access_token)).username).toBe('alice');
    // exchange_refresh_token rotates.
    const r2 = await jsonOf<TokenBody>(
      await t.token(
        tokenReq({ grant_type: 'exchange_refresh_token', client_id: 'app1', refresh_token: grant.refresh_token!, redirect_uri: REDIRECT }),
      ),
    );
    expect(r2.refresh_token).toBeDefined();
    expect(r2.refresh_token).not.toBe(grant.refresh_token);
    const old = await jsonOf<OAuthErr>(
      await t.token(tokenReq({ grant_type: 'refresh_token', client_id: 'app1', refresh_token: grant.refresh_token! })),
    );
    expect(old.error.error).toBe('invalid_grant');

    // Another client cannot use or revoke the refresh token.
    await site.store.putOAuthApp({
      clientId: 'app2',
      secretHash: await hashPassword('s2'),
      name: 'Other',
      redirectUris: [REDIRECT],
      owner: 'root',
      created: 0,
    });
    const foreign = await jsonOf<OAuthErr>(
      await t.token(tokenReq({ grant_type: 'refresh_token', client_id: 'app2', refresh_token: r2.refresh_token! })),
    );
    expect(foreign.error.error).toBe('invalid_grant');
    await t.revoke(siteRequest('/r', { form: { client_id: 'app2', auth_token: r2.refresh_token!, f: 'json' } }));
    const still = await jsonOf<TokenBody>(
      await t.token(tokenReq({ grant_type: 'refresh_token', client_id: 'app1', refresh_token: r2.refresh_token! })),
    );
    expect(still.access_token).toBeDefined();

    // revokeToken: the refresh token (arcgis-rest-js sends auth_token) and an access token (token + hint).
    const rv = await t.revoke(siteRequest('/r', { form: { client_id: 'app1', auth_token: r2.refresh_token!, f: 'json' } }));
    expect(await jsonOf(rv)).toEqual({ success: true });
    const gone = await jsonOf<OAuthErr>(
      await t.token(tokenReq({ grant_type: 'refresh_token', client_id: 'app1', refresh_token: r2.refresh_token! })),
    );
    expect(gone.error.error).toBe('invalid_grant');
    expect(
      await jsonOf(
        await t.revoke(
          siteRequest('/r', { form: { client_id: 'app1', token: r1.access_token, token_type_hint: 'access_token', f: 'json' } }),
        ),
      ),
    ).toEqual({ success: true });
    await expect(useToken(site, r1.access_token)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    // The revocation is persisted.
    const saved = await site.store.getSetting<{ revokedIds: Record<string, number> }>('signingKeys');
    expect(Object.keys(saved!.revokedIds)).toHaveLength(1);
    expect((await useToken(site, grant.access_token)).username).toBe('alice');
  });

  it('wrong verifier, missing verifier, wrong redirect_uri, wrong client are refused (and consume the code)', async () => {
    const t = await setup();
    const bad = await exchange(t, codeOf(await signIn(t)), { code_verifier: 'x'.repeat(43) });
    expect(bad.error).toEqual({
      code: 400,
      error: 'invalid_grant',
      error_description: 'Invalid code_verifier.',
      message: 'Invalid code_verifier.',
      details: [],
    });
    const code = codeOf(await signIn(t));
    const missing = await jsonOf<OAuthErr>(
      await t.token(tokenReq({ grant_type: 'authorization_code', client_id: 'app1', redirect_uri: REDIRECT, code })),
    );
    expect(missing.error.error_description).toBe('Invalid code_verifier.');
    expect((await exchange(t, code)).error.error).toBe('invalid_grant');
    const redirect = await exchange(t, codeOf(await signIn(t)), { redirect_uri: 'http://localhost:3000/cb' });
    expect(redirect.error.error_description).toBe('Invalid redirect_uri.');
    expect((await exchange(t, codeOf(await signIn(t)), { client_id: 'nope' })).error.error).toBe('invalid_client');
    expect((await exchange(t, codeOf(await signIn(t)), { client_secret: 'wrong' })).error.error).toBe('invalid_client');
    expect((await exchange(t, codeOf(await signIn(t)), { client_secret: SECRET })).access_token).toBeDefined();
  });

  it('plain PKCE and no PKCE (arcgis-rest-js server-side authorize)', async () => {
    const t = await setup();
    const plain = codeOf(await signIn(t, { query: { code_challenge: VERIFIER, code_challenge_method: 'plain' } }));
    expect((await exchange(t, plain)).access_token).toBeDefined();
    const none = codeOf(await signIn(t, { query: { code_challenge: '', code_challenge_method: '' } }));
    const res = await jsonOf<TokenBody>(
      await t.token(tokenReq({ grant_type: 'authorization_code', client_id: 'app1', redirect_uri: REDIRECT, code: none })),
    );
    expect(res.access_token).toBeDefined();
  });

  it('codes expire after ten minutes', async () => {
    const t = await setup();
    const code = codeOf(await signIn(t));
    t.site.clock.advance(CODE_TTL_MS);
    expect((await exchange(t, code)).error.error).toBe('invalid_grant');
    const code2 = codeOf(await signIn(t));
    t.site.clock.advance(CODE_TTL_MS - 1);
    expect((await exchange(t, code2)).access_token).toBeDefined();
  });

  it('unknown client or unregistered redirect_uri: an error page, never a redirect', async () => {
    const t = await setup();
    for (const [q, msg] of [
      [{ client_id: 'nope' }, 'Invalid client_id.'],
      [{ client_id: '' }, "'client_id' must be specified."],
      [{ redirect_uri: 'https://evil.example/callback' }, 'Invalid redirect_uri.'],
      [{ redirect_uri: `${REDIRECT}/` }, 'Invalid redirect_uri.'],
      [{ redirect_uri: '' }, "'redirect_uri' must be specified."],
    ] as const) {
      const res = await t.authorize(siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery(q)}`));
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain(msg.replace(/'/g, '&#39;'));
    }
  });

  it('other authorization errors go back to the redirect URI with error and state', async () => {
    const t = await setup();
    const cases: [Record<string, string>, string][] = [
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ code_challenge_method: 'S512' }, 'invalid_request'],
      [{ code_challenge: 'short' }, 'invalid_request'],
      [{ code_challenge: '', code_challenge_method: 'S256' }, 'invalid_request'],
    ];
    for (const [q, error] of cases) {
      const res = await t.authorize(siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery(q)}`));
      expect(res.status).toBe(302);
      const loc = new URL(res.headers.get('location')!);
      expect(loc.searchParams.get('error')).toBe(error);
      expect(loc.searchParams.get('error_description')).toBeTruthy();
      expect(loc.searchParams.get('state')).toBe('st<1>');
    }
  });

  it('wrong password re-shows the form; throttled like generateToken', async () => {
    const t = await setup({ throttleAttempts: 2 });
    const r1 = await signIn(t, { password: 'wrong' });
    expect(r1.status).toBe(200);
    expect(await r1.text()).toContain('Invalid username or password.');
    await signIn(t, { password: 'wrong' });
    const r3 = await signIn(t);
    expect(r3.status).toBe(200);
    expect(await r3.text()).toContain('Too many invalid attempts. Please try again later.');
  });

  it('CSRF: the sign-in POST needs the form token, its cookie and the site origin', async () => {
    const t = await setup();
    expect((await signIn(t, { origin: 'https://evil.example' })).status).toBe(200);
    const page = await t.authorize(siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery()}`));
    const { fields } = await formOf(page);
    const noCookie = await t.authorize(
      siteRequest('/portal/sharing/rest/oauth2/authorize', {
        form: { ...fields, username: 'alice', password: 'alice-pw' },
        headers: { origin: 'https://localhost' },
      }),
    );
    expect(noCookie.status).toBe(200);
    expect(await noCookie.text()).toContain('Your sign-in session has expired');
    const wrong = await t.authorize(
      siteRequest('/portal/sharing/rest/oauth2/authorize', {
        form: { ...fields, username: 'alice', password: 'alice-pw' },
        headers: { origin: 'https://localhost', cookie: 'geo_oauth_csrf=other' },
      }),
    );
    expect(wrong.status).toBe(200);
    expect(codeOf(await signIn(t))).toBeTruthy();
    // An authorization request sent as a POST (not our form) gets the form without an error.
    const posted = await t.authorize(
      siteRequest('/portal/sharing/rest/oauth2/authorize', { form: Object.fromEntries(new URLSearchParams(authQuery())) }),
    );
    expect(posted.status).toBe(200);
    const postedHtml = await posted.text();
    expect(postedHtml).toContain('name="csrf_token"');
    expect(postedHtml).not.toContain('id="error"');
  });

  it('keep me signed in: a two-week cookie; a valid cookie skips the form', async () => {
    const t = await setup();
    const res = await signIn(t, { persist: true });
    codeOf(res);
    const set = res.headers.get('set-cookie')!.split(', ')[0]!;
    expect(set).toMatch(/^geo_authcookie=[^;]+; HttpOnly; Secure; SameSite=Lax; Path=\/; Max-Age=1209600$/);
    const value = /^geo_authcookie=([^;]+)/.exec(set)![1]!;
    const claims = await verifyToken(t.site.keys, value, { audience: PORTAL_AUDIENCE, request: { ip: '' } });
    expect(claims.exp).toBe(t.site.clock.now() + 20160 * 60_000);
    const again = await t.authorize(
      siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery()}`, { headers: { cookie: `geo_authcookie=${value}` } }),
    );
    const code = codeOf(again);
    const head = await t.authorize(
      siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery()}`, {
        method: 'HEAD',
        headers: { cookie: `geo_authcookie=${value}` },
      }),
    );
    expect(head.status).toBe(200);
    expect(head.headers.get('location')).toBeNull();
    expect((await exchange(t, code)).username).toBe('alice');
    const invalid = await t.authorize(
      siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery()}`, { headers: { cookie: 'geo_authcookie=x.y.z' } }),
    );
    expect(invalid.status).toBe(200);
  });

  it('authorize honours allSSL', async () => {
    const t = await setup({ allSSL: true });
    const res = await t.authorize(siteRequest(`/portal/sharing/rest/oauth2/authorize?${authQuery()}`, { scheme: 'http' }));
    expect(res.status).toBe(403);
  });
});

describe('OAuth 2.0 token endpoint', () => {
  it('client_credentials: the app owner, secret required and checked, expiration shortens', async () => {
    const t = await setup();
    const ok = await jsonOf<TokenBody>(
      await t.token(tokenReq({ grant_type: 'client_credentials', client_id: 'app1', client_secret: SECRET, expiration: '120' })),
    );
    expect(ok.username).toBe('root');
    expect(ok.expires_in).toBe(7200);
    expect(ok.refresh_token).toBeUndefined();
    expect((await useToken(t.site, ok.access_token)).username).toBe('root');
    const over = await jsonOf<TokenBody>(
      await t.token(tokenReq({ grant_type: 'client_credentials', client_id: 'app1', client_secret: SECRET, expiration: '999999' })),
    );
    expect(over.expires_in).toBe(20160 * 60);
    const noSecret = await jsonOf<OAuthErr>(await t.token(tokenReq({ grant_type: 'client_credentials', client_id: 'app1' })));
    expect(noSecret.error.error).toBe('invalid_request');
    const wrong = await jsonOf<OAuthErr>(
      await t.token(tokenReq({ grant_type: 'client_credentials', client_id: 'app1', client_secret: 'x' })),
    );
    expect(wrong.error.error).toBe('invalid_client');
    const badExp = await jsonOf<OAuthErr>(
      await t.token(tokenReq({ grant_type: 'client_credentials', client_id: 'app1', client_secret: SECRET, expiration: '0' })),
    );
    expect(badExp.error.error).toBe('invalid_request');
  });

  it('grant type and parameter errors; POST only; no-store', async () => {
    const t = await setup();
    const e = async (form: Record<string, string>) => (await jsonOf<OAuthErr>(await t.token(tokenReq(form)))).error;
    expect(await e({})).toMatchObject({ error: 'invalid_request', error_description: "'grant_type' must be specified." });
    expect(await e({ grant_type: 'password', client_id: 'app1' })).toMatchObject({ code: 400, error: 'unsupported_grant_type' });
    expect(await e({ grant_type: 'authorization_code' })).toMatchObject({
      error: 'invalid_request',
      error_description: "'client_id' must be specified.",
    });
    expect(await e({ grant_type: 'authorization_code', client_id: 'app1' })).toMatchObject({
      error_description: "'code' must be specified.",
    });
    expect(await e({ grant_type: 'authorization_code', client_id: 'app1', code: 'x' })).toMatchObject({
      error_description: "'redirect_uri' must be specified.",
    });
    expect(await e({ grant_type: 'refresh_token', client_id: 'app1' })).toMatchObject({
      error_description: "'refresh_token' must be specified.",
    });
    expect(await e({ grant_type: 'refresh_token', client_id: 'app1', refresh_token: 'nope' })).toMatchObject({ error: 'invalid_grant' });
    const get = await t.token(siteRequest('/portal/sharing/rest/oauth2/token?grant_type=client_credentials&f=json'));
    expect((await jsonOf<OAuthErr>(get)).error.code).toBe(405);
    const res = await t.token(tokenReq({ grant_type: 'client_credentials', client_id: 'app1', client_secret: SECRET }));
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('refresh tokens expire after two weeks and stop for disabled users', async () => {
    const t = await setup();
    const grant = await exchange(t, codeOf(await signIn(t)));
    const refresh = () => t.token(tokenReq({ grant_type: 'refresh_token', client_id: 'app1', refresh_token: grant.refresh_token! }));
    t.site.clock.advance(20160 * 60_000 - 1);
    expect((await jsonOf<TokenBody>(await refresh())).access_token).toBeDefined();
    t.site.clock.advance(1);
    expect((await jsonOf<OAuthErr>(await refresh())).error.error).toBe('invalid_grant');
    const g2 = await exchange(t, codeOf(await signIn(t)));
    const alice = (await t.site.store.getUser('alice'))!;
    await t.site.store.putUser({ ...alice, disabled: true });
    const r = await jsonOf<OAuthErr>(
      await t.token(tokenReq({ grant_type: 'refresh_token', client_id: 'app1', refresh_token: g2.refresh_token! })),
    );
    expect(r.error.error).toBe('invalid_grant');
  });

  it('revokeToken needs a registered client and a token; unknown tokens answer success', async () => {
    const t = await setup();
    const e = async (form: Record<string, string>) => jsonOf<OAuthErr>(await t.revoke(siteRequest('/r', { form: { f: 'json', ...form } })));
    expect((await e({ auth_token: 'x' })).error.error).toBe('invalid_request');
    expect((await e({ client_id: 'nope', auth_token: 'x' })).error.error).toBe('invalid_client');
    expect((await e({ client_id: 'app1' })).error.error_description).toBe("'token' must be specified.");
    expect((await e({ client_id: 'app1', token: 'x', token_type_hint: 'id_token' })).error.error).toBe('unsupported_token_type');
    expect(await e({ client_id: 'app1', token: 'unknown' })).toEqual({ success: true });
  });
});

describe('cookie authentication and CSRF', () => {
  async function cookieToken(site: TestSite) {
    return site.token('alice', { binding: { kind: 'none', value: '' } });
  }
  const auth = async (site: TestSite, req: Request) =>
    authenticate(site, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params: await readParams(req) });

  it('GET with the cookie works from anywhere', async () => {
    const t = await setup();
    const c = await cookieToken(t.site);
    expect(
      (await auth(t.site, siteRequest('/x', { headers: { cookie: `geo_authcookie=${c}`, referer: 'https://evil.example/' } }))).username,
    ).toBe('alice');
  });

  it('a cookie-authenticated POST needs the site origin (Origin, else Referer)', async () => {
    const t = await setup({ publicOrigin: 'https://gis.example' });
    const c = await cookieToken(t.site);
    const post = (headers: Record<string, string>) =>
      siteRequest('/x', { form: { f: 'json' }, headers: { cookie: `geo_authcookie=${c}`, ...headers } });
    await expect(auth(t.site, post({ origin: 'https://evil.example' }))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(auth(t.site, post({ origin: 'null' }))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(auth(t.site, post({ referer: 'https://evil.example/page' }))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const noHeaders = new Request('https://localhost/x', { method: 'POST', headers: { cookie: `geo_authcookie=${c}` }, body: 'f=json' });
    await expect(auth(t.site, noHeaders)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect((await auth(t.site, post({ origin: 'https://gis.example' }))).username).toBe('alice');
    expect((await auth(t.site, post({ referer: 'https://gis.example/portal/home/' }))).username).toBe('alice');
  });

  it('a token in the body or a header is not subject to the origin check', async () => {
    const t = await setup();
    const tok = await t.site.token('alice');
    const req = siteRequest('/x', {
      form: { token: tok, f: 'json' },
      headers: { cookie: 'geo_authcookie=whatever', origin: 'https://evil.example' },
    });
    expect((await auth(t.site, req)).username).toBe('alice');
  });
});

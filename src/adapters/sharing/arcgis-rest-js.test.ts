/**
 * arcgis-rest-js 4.10 against the real handlers (its `fetch` routed to them, no network): sign-in
 * with username/password, server-token discovery for the site's own federated server, the OAuth
 * server-side code exchange, refresh and revoke.
 */
import { ArcGISIdentityManager, request, revokeToken, validateAppAccess } from '@esri/arcgis-rest-request';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { hashPassword, PORTAL_AUDIENCE, serverAudience } from '../auth.js';
import type { Route } from '../rest.js';
import { setPeerAddress } from '../site.js';
import { verifyToken } from '../tokens.js';
import { sharingRoutes } from './generate-token.js';
import { infoRoutes } from './info.js';
import { oauthRoutes } from './oauth2.js';

const PORTAL = 'https://localhost/portal/sharing/rest';
const REDIRECT = 'https://app.example/cb';

function router(routes: Route[]) {
  const compiled = routes.map((r) => ({ ...r, re: new RegExp(`^${r.path.replace(/:[A-Za-z]+/g, '[^/]+')}$`) }));
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = setPeerAddress(new Request(input, init), '127.0.0.1');
    const path = new URL(req.url).pathname;
    const route = compiled.find((r) => r.re.test(path) && (r.method === 'ALL' || r.method === req.method));
    if (!route) return new Response('not found', { status: 404 });
    return route.handler(req);
  };
}

let site: TestSite;
const realFetch = globalThis.fetch;

beforeEach(async () => {
  site = await testSite();
  await site.addUser('alice', 'user');
  await site.addUser('root', 'administrator');
  await site.store.putOAuthApp({
    clientId: 'app1',
    secretHash: await hashPassword('s'),
    name: 'App',
    redirectUris: [REDIRECT],
    owner: 'root',
    created: 0,
  });
  globalThis.fetch = router([...sharingRoutes(site), ...infoRoutes(site), ...oauthRoutes(site)]) as typeof fetch;
});

afterEach(() => {
  globalThis.fetch = realFetch;
});

describe('arcgis-rest-js 4.10', () => {
  it('signs in with username and password and reads the user and the portal', async () => {
    const manager = await ArcGISIdentityManager.signIn({ username: 'alice', password: 'alice-pw', portal: PORTAL });
    expect(manager.username).toBe('alice');
    expect(manager.tokenExpires.getTime()).toBe(site.clock.now() + 20160 * 60_000);
    const claims = await verifyToken(site.keys, manager.token, {
      audience: PORTAL_AUDIENCE,
      request: { referer: '@esri/arcgis-rest-js', ip: '' },
    });
    expect(claims.bind).toEqual({ t: 'referer', v: '@esri/arcgis-rest-js' });
    const user = await manager.getUser();
    expect(user.role).toBe('org_user');
    const portal = await manager.getPortal();
    expect(portal.id).toBe('org1');
    expect(await validateAppAccess(manager.token, 'app1', PORTAL)).toEqual({ valid: true, viewOnlyUserTypeApp: false });
    await expect(validateAppAccess(manager.token, 'nope', PORTAL)).rejects.toThrow(/Invalid client_id/);
    await expect(validateAppAccess('bad', 'app1', PORTAL)).rejects.toThrow(/Invalid token/);
  });

  it('reports a wrong password as a request error', async () => {
    await expect(ArcGISIdentityManager.signIn({ username: 'alice', password: 'nope', portal: PORTAL })).rejects.toThrow(
      /Unable to generate token/,
    );
  });

  it('discovers the federated server and gets a server token for it', async () => {
    const manager = await ArcGISIdentityManager.signIn({ username: 'alice', password: 'alice-pw', portal: PORTAL });
    const token = await manager.getToken('https://localhost/server/rest/services/Elevation/ImageServer');
    expect(token).not.toBe(manager.token);
    const claims = await verifyToken(site.keys, token, {
      audience: serverAudience('https://localhost/server'),
      request: { referer: '@esri/arcgis-rest-js', ip: '' },
    });
    expect(claims.sub).toBe('alice');
  });

  it('exchanges an authorization code, refreshes and revokes', async () => {
    // The browser part: sign-in page and form post (no PKCE, as the server-side authorize() sends none).
    const query = new URLSearchParams({ client_id: 'app1', redirect_uri: REDIRECT, response_type: 'code', state: 's1' });
    const authorize = oauthRoutes(site)[0]!.handler;
    const page = await authorize(siteRequest(`/portal/sharing/rest/oauth2/authorize?${query.toString()}`));
    const html = await page.text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    const res = await authorize(
      siteRequest('/portal/sharing/rest/oauth2/authorize', {
        form: { ...Object.fromEntries(query), csrf_token: csrf, username: 'alice', password: 'alice-pw' },
        headers: { cookie: `geo_oauth_csrf=${csrf}`, origin: 'https://localhost' },
      }),
    );
    const code = new URL(res.headers.get('location')!).searchParams.get('code')!;

    const manager = await ArcGISIdentityManager.exchangeAuthorizationCode(
      { portal: PORTAL, clientId: 'app1', redirectUri: REDIRECT },
      code,
    );
    expect(manager.username).toBe('alice');
    expect(manager.refreshToken).toBeTruthy();
    const first = manager.token;
    const user = await request(`${PORTAL}/community/self`, { authentication: manager, httpMethod: 'GET' });
    expect(user.username).toBe('alice');
    await manager.refreshCredentials();
    expect(manager.token).not.toBe(first);
    await manager.refreshCredentials(); // the refresh token stays usable
    const revoked = await revokeToken({ portal: PORTAL, clientId: 'app1', token: manager.refreshToken });
    expect(revoked.success).toBe(true);
    await expect(manager.refreshCredentials()).rejects.toThrow(/Invalid refresh_token/);
  });
});

import { describe, expect, it } from 'vitest';
import { jsonOf, siteRequest, testSite } from '../../../test/site.js';
import { ADMIN_AUDIENCE, serverAudience } from '../auth.js';
import { verifyToken } from '../tokens.js';
import { sharingRoutes } from './generate-token.js';
import { infoRoutes, OWN_SERVER_ID } from './info.js';

async function setup(config: Parameters<typeof testSite>[0] = {}) {
  const site = await testSite({ orgName: 'Acme GIS', ...config });
  await site.addUser('alice', 'user');
  await site.addUser('pub', 'publisher', ['featureLayer']);
  await site.addUser('root', 'administrator');
  const h = Object.fromEntries(infoRoutes(site).map((r) => [r.path, r.handler]));
  const get = (path: string) => h[path]!;
  return { site, get };
}

type Err = { error: { code: number; message: string; details: string[] } };

describe('info endpoints', () => {
  it('server info names the portal as owner and its token service', async () => {
    const { get } = await setup({ defaultTokenMinutes: 45 });
    const b = await jsonOf(await get('/server/rest/info')(siteRequest('/server/rest/info?f=json')));
    expect(b).toEqual({
      currentVersion: 11.5,
      fullVersion: '11.5.0',
      soapUrl: 'https://localhost/server/services',
      secureSoapUrl: 'https://localhost/server/services',
      owningSystemUrl: 'https://localhost/portal',
      authInfo: {
        isTokenBasedSecurity: true,
        tokenServicesUrl: 'https://localhost/portal/sharing/rest/generateToken',
        shortLivedTokenValidity: 45,
      },
    });
  });

  it('portal info and the public origin', async () => {
    const { get } = await setup({ publicOrigin: 'https://gis.example:7443' });
    const b = await jsonOf<Record<string, unknown>>(
      await get('/portal/sharing/rest/info')(siteRequest('/portal/sharing/rest/info?f=pjson')),
    );
    expect(b['owningSystemUrl']).toBe('https://gis.example:7443/portal');
    expect(b['authInfo']).toEqual({
      isTokenBasedSecurity: true,
      tokenServicesUrl: 'https://gis.example:7443/portal/sharing/rest/generateToken',
      shortLivedTokenValidity: 60,
    });
  });

  it('info follows allSSL', async () => {
    const { get } = await setup({ allSSL: true });
    const b = await jsonOf<Err>(await get('/server/rest/info')(siteRequest('/server/rest/info?f=json', { scheme: 'http' })));
    expect(b.error.code).toBe(403);
  });

  it('portals/self anonymous and with a token', async () => {
    const { site, get } = await setup({ allSSL: true });
    const h = get('/portal/sharing/rest/portals/self');
    const anon = await jsonOf<Record<string, unknown>>(await h(siteRequest('/portal/sharing/rest/portals/self?f=json')));
    expect(anon).toMatchObject({
      id: 'org1',
      name: 'Acme GIS',
      allSSL: true,
      isPortal: true,
      portalHostname: 'localhost/portal',
      currentVersion: '11.5',
    });
    expect(anon['user']).toBeUndefined();
    const t = await site.token('root');
    const res = await h(siteRequest(`/portal/sharing/rest/portals/self?f=json&token=${t}`));
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect((await jsonOf<{ user: { username: string; role: string } }>(res)).user).toMatchObject({ username: 'root', role: 'org_admin' });
    const bad = await jsonOf<Err>(await h(siteRequest('/portal/sharing/rest/portals/self?f=json&token=nope')));
    expect(bad.error.code).toBe(498);
  });

  it('community/self needs a token and describes the user', async () => {
    const { site, get } = await setup();
    const h = get('/portal/sharing/rest/community/self');
    expect(await jsonOf(await h(siteRequest('/portal/sharing/rest/community/self?f=json')))).toEqual({
      error: { code: 499, message: 'Token Required', details: ['Token Required'] },
    });
    const self = async (u: string) =>
      jsonOf<{ username: string; role: string; privileges: string[]; orgId: string }>(
        await h(siteRequest('/portal/sharing/rest/community/self?f=json', { headers: { authorization: `Bearer ${await site.token(u)}` } })),
      );
    const a = await self('alice');
    expect(a).toMatchObject({ username: 'alice', fullName: 'alice', email: '', role: 'org_user', orgId: 'org1' });
    expect(a.privileges).not.toContain('portal:publisher:publishFeatures');
    const p = await self('pub');
    expect(p.role).toBe('org_publisher');
    expect(p.privileges).toContain('portal:publisher:publishFeatures');
    const r = await self('root');
    expect(r.role).toBe('org_admin');
    expect(r.privileges).toContain('portal:admin:manageServers');
    const adminTok = await site.token('alice', { audience: ADMIN_AUDIENCE });
    const e = await jsonOf<Err>(await h(siteRequest(`/portal/sharing/rest/community/self?f=json&token=${adminTok}`)));
    expect(e.error.code).toBe(498);
  });

  it('register, list and unregister federated servers; then server tokens for them', async () => {
    const { site, get } = await setup();
    const reg = get('/portal/sharing/rest/portals/self/servers/register');
    const list = get('/portal/sharing/rest/portals/self/servers');
    const unreg = get('/portal/sharing/rest/portals/self/servers/:id/unregister');
    const root = await site.token('root');
    const alice = await site.token('alice');
    const form = (token: string, extra: Record<string, string>) => ({ token, f: 'json', ...extra });
    const forbidden = await jsonOf<Err>(await reg(siteRequest('/x', { form: form(alice, { url: 'https://gis.example/arcgis' }) })));
    expect(forbidden.error.code).toBe(403);
    expect((await jsonOf<Err>(await reg(siteRequest('/x?f=json')))).error.code).toBe(405);
    expect((await jsonOf<Err>(await reg(siteRequest('/x', { form: form(root, {}) })))).error.details).toEqual(["'url' must be specified."]);
    expect((await jsonOf<Err>(await reg(siteRequest('/x', { form: form(root, { url: 'gis' }) })))).error.details).toEqual([
      "'url' must be an absolute http or https URL.",
    ]);
    const ok = await jsonOf<{ success: boolean; id: string }>(
      await reg(
        siteRequest('/x', {
          form: form(root, { url: 'HTTPS://GIS.example/arcgis/rest/services/', adminUrl: 'https://gis.example/arcgis/admin', name: 'GIS' }),
        }),
      ),
    );
    expect(ok.success).toBe(true);
    expect((await site.store.listFederatedServers())[0]).toMatchObject({ id: ok.id, url: 'https://gis.example/arcgis', name: 'GIS' });
    const dup = await jsonOf<Err>(await reg(siteRequest('/x', { form: form(root, { url: 'https://gis.example/arcgis' }) })));
    expect(dup.error.code).toBe(409);
    const own = await jsonOf<Err>(await reg(siteRequest('/x', { form: form(root, { url: 'https://localhost/server' }) })));
    expect(own.error.code).toBe(409);

    const servers = await jsonOf<{ servers: { id: string; url: string }[] }>(
      await list(siteRequest(`/portal/sharing/rest/portals/self/servers?f=json&token=${alice}`)),
    );
    expect(servers.servers.map((s) => s.url)).toEqual(['https://localhost/server', 'https://gis.example/arcgis']);
    expect(servers.servers[0]!.id).toBe(OWN_SERVER_ID);
    expect((await jsonOf<Err>(await list(siteRequest('/portal/sharing/rest/portals/self/servers?f=json')))).error.code).toBe(499);

    // A server token for the registered server.
    const gen = sharingRoutes(site)[0]!.handler;
    const st = await jsonOf<{ token: string }>(
      await gen(siteRequest('/g', { form: { token: alice, serverUrl: 'https://gis.example/arcgis', f: 'json' } })),
    );
    await verifyToken(site.keys, st.token, {
      audience: serverAudience('https://gis.example/arcgis'),
      request: { referer: 'http://test', ip: '' },
    });

    const path = (id: string) => `/portal/sharing/rest/portals/self/servers/${id}/unregister`;
    expect((await jsonOf<Err>(await unreg(siteRequest(path(OWN_SERVER_ID), { form: form(root, {}) })))).error.code).toBe(403);
    expect((await jsonOf<Err>(await unreg(siteRequest(path(ok.id), { form: form(alice, {}) })))).error.code).toBe(403);
    expect(await jsonOf(await unreg(siteRequest(path(ok.id), { form: form(root, {}) })))).toEqual({ success: true });
    expect((await jsonOf<Err>(await unreg(siteRequest(path(ok.id), { form: form(root, {}) })))).error.code).toBe(404);
    const after = await jsonOf<Err>(
      await gen(siteRequest('/g', { form: { token: alice, serverUrl: 'https://gis.example/arcgis', f: 'json' } })),
    );
    expect(after.error.details).toEqual(["'serverUrl' is not a server federated with this portal."]);
  });

  it('server registration waits for a site backup', async () => {
    const { site, get } = await setup();
    await site.store.acquireLock('exportSite', 'x', 60_000);
    const reg = get('/portal/sharing/rest/portals/self/servers/register');
    const res = await jsonOf<Err>(
      await reg(siteRequest('/x', { form: { token: await site.token('root'), url: 'https://a.example/s', f: 'json' } })),
    );
    expect(res.error.code).toBe(409);
  });
});

import { describe, expect, it } from 'vitest';
import { jsonOf, siteRequest, testSite } from '../../../test/site.js';
import { ADMIN_AUDIENCE, verifyPassword } from '../auth.js';
import { oauthAppRoutes, redirectUriProblem } from './oauth-apps.js';

type AdminErr = { status: string; messages: string[]; code: number };

async function setup() {
  const site = await testSite();
  await site.addUser('root', 'administrator');
  await site.addUser('alice', 'publisher');
  const [register, list, unregister] = oauthAppRoutes(site).map((r) => r.handler) as [
    (r: Request) => Promise<Response>,
    (r: Request) => Promise<Response>,
    (r: Request) => Promise<Response>,
  ];
  const root = await site.token('root', { audience: ADMIN_AUDIENCE });
  return { site, register, list, unregister, root };
}

describe('OAuth app registration (admin API)', () => {
  it('registers an app: secret shown once, stored hashed; listed without secrets; unregistered', async () => {
    const { site, register, list, unregister, root } = await setup();
    const res = await register(
      siteRequest('/server/admin/security/oauth/registerApp', {
        form: { token: root, f: 'json', name: 'Viewer', redirect_uris: '["https://app.example/cb","http://localhost:3000/cb"]' },
      }),
    );
    expect(res.headers.get('cache-control')).toBe('no-store');
    const app = await jsonOf<{ client_id: string; client_secret: string; name: string; redirect_uris: string[] }>(res);
    expect(app.name).toBe('Viewer');
    expect(app.redirect_uris).toEqual(['https://app.example/cb', 'http://localhost:3000/cb']);
    const stored = (await site.store.getOAuthApp(app.client_id))!;
    expect(stored.owner).toBe('root');
    expect(stored.secretHash).not.toContain(app.client_secret);
    expect(await verifyPassword(app.client_secret, stored.secretHash)).toBe(true);

    const listed = await list(siteRequest(`/server/admin/security/oauth/apps?f=json&token=${root}`));
    const text = await listed.text();
    expect(text).not.toContain(app.client_secret);
    expect(JSON.parse(text)).toEqual({
      apps: [{ client_id: app.client_id, name: 'Viewer', redirect_uris: app.redirect_uris, owner: 'root', created: site.clock.now() }],
    });

    const comma = await jsonOf<{ redirect_uris: string[] }>(
      await register(
        siteRequest('/x', {
          form: { token: root, f: 'json', name: 'Two', redirect_uris: 'https://a.example/1, http://127.0.0.1:8080/cb' },
        }),
      ),
    );
    expect(comma.redirect_uris).toEqual(['https://a.example/1', 'http://127.0.0.1:8080/cb']);

    const path = `/server/admin/security/oauth/apps/${app.client_id}/unregister`;
    expect(await jsonOf(await unregister(siteRequest(path, { form: { token: root, f: 'json' } })))).toEqual({ status: 'success' });
    expect(await site.store.getOAuthApp(app.client_id)).toBeUndefined();
    const again = await jsonOf<AdminErr>(await unregister(siteRequest(path, { form: { token: root, f: 'json' } })));
    expect(again).toEqual({ status: 'error', messages: [`OAuth app '${app.client_id}' does not exist.`], code: 404 });
  });

  it('validates name and redirect URIs, all problems together', async () => {
    const { register, root } = await setup();
    const res = await jsonOf<AdminErr>(
      await register(
        siteRequest('/x', { form: { token: root, f: 'json', redirect_uris: 'http://app.example/cb,ftp://x/y,https://a.example/#f' } }),
      ),
    );
    expect(res.code).toBe(400);
    expect(res.messages).toEqual([
      "'name' must be specified.",
      "'http://app.example/cb' must use https (http is allowed only for localhost and 127.0.0.1).",
      "'ftp://x/y' must use https (http is allowed only for localhost and 127.0.0.1).",
      "'https://a.example/#f' must not contain a fragment.",
    ]);
    const none = await jsonOf<AdminErr>(await register(siteRequest('/x', { form: { token: root, f: 'json', name: 'x' } })));
    expect(none.messages).toEqual(["'redirect_uris' must list at least one URI."]);
    expect(redirectUriProblem('relative/cb')).toBe("'relative/cb' is not an absolute URL.");
  });

  it('default administrators only; token required; POST only; waits for a site backup', async () => {
    const { site, register, list, unregister, root } = await setup();
    const alice = await site.token('alice', { audience: ADMIN_AUDIENCE });
    const form = (token: string) => ({ token, f: 'json', name: 'x', redirect_uris: 'https://a.example/cb' });
    expect((await jsonOf<AdminErr>(await register(siteRequest('/x', { form: form(alice) })))).code).toBe(403);
    expect((await jsonOf<AdminErr>(await list(siteRequest(`/x?f=json&token=${alice}`)))).code).toBe(403);
    expect(
      (await jsonOf<AdminErr>(await unregister(siteRequest('/a/apps/x/unregister', { form: { token: alice, f: 'json' } })))).code,
    ).toBe(403);
    const missing = await jsonOf<AdminErr>(await list(siteRequest('/x?f=json')));
    expect(missing).toEqual({
      status: 'error',
      messages: ["Unauthorized access. Token not found. You can generate a token using the 'generateToken' operation."],
      code: 499,
    });
    expect((await jsonOf<AdminErr>(await register(siteRequest(`/x?f=json&token=${root}`)))).code).toBe(405);
    await site.store.acquireLock('exportSite', 'backup', 60_000);
    expect((await jsonOf<AdminErr>(await register(siteRequest('/x', { form: form(root) })))).code).toBe(409);
  });
});

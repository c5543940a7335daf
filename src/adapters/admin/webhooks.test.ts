import { beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_AUDIENCE, jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { hashPassword } from '../auth.js';
import type { Route } from '../rest.js';
import { SITE_BACKUP_LOCK } from '../site.js';
import { serviceRoutes } from './services.js';
import { MAX_WEBHOOKS_PER_SERVICE } from './webhooks.js';

type Json = Record<string, unknown>;

function dispatch(routes: readonly Route[], req: Request): Promise<Response> {
  const path = new URL(req.url).pathname;
  const route = routes.find((r) => (r.path.endsWith('/*') ? path.startsWith(r.path.slice(0, -1)) : path === r.path));
  if (!route) throw new Error(`no route for ${path}`);
  return route.handler(req);
}

const adminError = (code: number, ...messages: string[]): Json => ({ status: 'error', messages, code });
const FORBIDDEN = adminError(403, 'You do not have permissions to access this resource or perform this operation.');
const SUCCESS = { status: 'success' };

let site: TestSite;
let routes: Route[];
let admin: string;

beforeEach(async () => {
  site = await testSite();
  await site.addUser('admin', 'administrator');
  routes = serviceRoutes(site);
  admin = await site.token('admin', { audience: ADMIN_AUDIENCE });
  const now = site.clock.now();
  await site.store.putService({ folder: '', serviceName: 'Parcels', type: 'FeatureServer', properties: {}, created: now });
  await site.store.putService({ folder: 'Tools', serviceName: 'Chips', type: 'GPServer', properties: {}, created: now });
  await site.store.putService({ folder: '', serviceName: 'Basemap', type: 'MapServer', properties: {}, created: now });
  await site.store.putService({ folder: '', serviceName: 'Imagery', type: 'ImageServer', properties: {}, created: now });
});

async function post(
  path: string,
  form: Record<string, string> = {},
  token: string | null = admin,
  headers?: Record<string, string>,
): Promise<Json> {
  const req = siteRequest(`/server/admin/services${path}`, {
    form: { f: 'json', ...form, ...(token ? { token } : {}) },
    ...(headers ? { headers } : {}),
  });
  return jsonOf(await dispatch(routes, req));
}

async function get(path: string, token: string | null = admin): Promise<Json> {
  return jsonOf(await dispatch(routes, siteRequest(`/server/admin/services${path}?f=json${token ? `&token=${token}` : ''}`)));
}

const hook = (o: Record<string, string> = {}): Record<string, string> => ({
  name: 'notify',
  changeTypes: 'jobSucceeded,jobFailed',
  hookUrl: 'https://hooks.example/in',
  ...o,
});

describe('createWebhook, list, get, edit, delete', () => {
  it('creates a webhook and shows it without its signature key', async () => {
    const created = await post(
      '/Parcels.FeatureServer/webhooks/createWebhook',
      hook({ signatureKey: 's3cret', changeTypes: '["FeaturesCreated","*"]' }),
    );
    expect(created).toEqual({
      status: 'success',
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      name: 'notify',
      changeTypes: ['FeaturesCreated', '*'],
      hookUrl: 'https://hooks.example/in',
      active: true,
      hasSignatureKey: true,
      created: site.clock.now(),
    });
    const id = created['id'] as string;
    const [stored] = await site.store.listWebhooks('Parcels.FeatureServer');
    expect(stored).toMatchObject({ id, signatureKey: 's3cret', active: true });
    const list = await get('/Parcels.FeatureServer/webhooks');
    expect(JSON.stringify(list)).not.toContain('s3cret');
    expect(list).toEqual({ webhooks: [{ ...created, status: undefined }].map(({ status: _s, ...v }) => v) });
    const { status: _s, ...view } = created;
    expect(await get(`/Parcels.FeatureServer/webhooks/${id}`)).toEqual(view);
  });

  it('creates inactive or unsigned hooks in folders', async () => {
    const created = await post('/Tools/Chips.GPServer/webhooks/createWebhook', hook({ active: 'false' }));
    expect(created).toMatchObject({ active: false, hasSignatureKey: false });
    expect((await site.store.listWebhooks('Tools/Chips.GPServer'))[0]).toMatchObject({ signatureKey: '', service: 'Tools/Chips.GPServer' });
  });

  it('validates the parameters', async () => {
    const at = '/Parcels.FeatureServer/webhooks/createWebhook';
    const absolute = "'hookUrl' must be an absolute http or https URL.";
    expect(await post(at, hook({ hookUrl: '/relative' }))).toEqual(adminError(400, absolute));
    expect(await post(at, hook({ hookUrl: 'ftp://x.example/' }))).toEqual(adminError(400, absolute));
    expect(await post(at, hook({ hookUrl: `https://x.example/${'a'.repeat(2048)}` }))).toEqual(adminError(400, absolute));
    expect(await post(at, hook({ hookUrl: 'https://u:p@x.example/' }))).toEqual(
      adminError(400, "'hookUrl' must not contain a user name or password."),
    );
    expect(await post(at, { name: 'n', changeTypes: '*' })).toEqual(adminError(400, "'hookUrl' must be specified."));
    expect(await post(at, { hookUrl: 'https://x.example', changeTypes: '*' })).toEqual(adminError(400, "'name' must be specified."));
    expect(await post(at, { name: 'n', hookUrl: 'https://x.example' })).toEqual(adminError(400, "'changeTypes' must be specified."));
    expect(await post(at, hook({ changeTypes: ',' }))).toEqual(
      adminError(400, "'changeTypes' must name at least one change type, or '*'."),
    );
    expect(await post(at, hook({ changeTypes: 'ok,bad type,9x' }))).toEqual(
      adminError(400, "Invalid change type 'bad type', '9x': use names such as 'jobSucceeded', or '*' for every change."),
    );
    expect(await post(at, hook({ name: 'a\u0001b' }))).toEqual(
      adminError(400, "'name' must be 1 to 128 characters without control characters."),
    );
    expect(await post(at, hook({ active: 'yes' }))).toMatchObject({ code: 400 });
    expect(await post(at, hook({ signatureKey: 'k'.repeat(1025) }))).toEqual(
      adminError(400, "'signatureKey' must be at most 1024 characters."),
    );
    expect(await site.store.listWebhooks('Parcels.FeatureServer')).toEqual([]);
  });

  it('refuses a second hook of the same name and more than the per-service maximum', async () => {
    const at = '/Parcels.FeatureServer/webhooks/createWebhook';
    await post(at, hook());
    expect(await post(at, hook())).toEqual(adminError(409, "A webhook named 'notify' already exists on service 'Parcels.FeatureServer'."));
    for (let i = 1; i < MAX_WEBHOOKS_PER_SERVICE; i++) expect(await post(at, hook({ name: `h${i}` }))).toMatchObject({ status: 'success' });
    expect(await post(at, hook({ name: 'one-more' }))).toEqual(
      adminError(400, `Service 'Parcels.FeatureServer' already has ${MAX_WEBHOOKS_PER_SERVICE} webhooks, the most a service may have.`),
    );
  });

  it('edits and deletes a webhook; unknown ids are 404', async () => {
    const base = '/Parcels.FeatureServer/webhooks';
    const { id } = (await post(`${base}/createWebhook`, hook({ signatureKey: 'k1' }))) as { id: string };
    await post(`${base}/createWebhook`, hook({ name: 'other' }));
    expect(
      await post(`${base}/${id}/edit`, { name: 'renamed', changeTypes: '*', hookUrl: 'http://new.example/x', active: 'false' }),
    ).toMatchObject({
      status: 'success',
      name: 'renamed',
      changeTypes: ['*'],
      hookUrl: 'http://new.example/x',
      active: false,
      hasSignatureKey: true,
    });
    expect(await post(`${base}/${id}/edit`, { signatureKey: '' })).toMatchObject({ hasSignatureKey: false, name: 'renamed' });
    expect(await post(`${base}/${id}/edit`, { name: 'other' })).toEqual(
      adminError(409, "A webhook named 'other' already exists on service 'Parcels.FeatureServer'."),
    );
    expect(await post(`${base}/${id}/edit`, { hookUrl: 'nope' })).toMatchObject({ code: 400 });
    expect(await post(`${base}/${id}/delete`)).toEqual(SUCCESS);
    expect(await get(`${base}/${id}`)).toEqual(adminError(404, `Webhook '${id}' does not exist on service 'Parcels.FeatureServer'.`));
    expect(await post(`${base}/${id}/delete`)).toEqual(
      adminError(404, `Webhook '${id}' does not exist on service 'Parcels.FeatureServer'.`),
    );
    expect(await get(`${base}/${id}/frob`)).toEqual(adminError(404, `'${id}/frob' is not a webhook operation.`));
    expect(await get(`${base}/${id}/delete`)).toEqual(adminError(405, 'Method not supported.'));
    expect(await get(`${base}/createWebhook`)).toEqual(adminError(405, 'Method not supported.'));
  });

  it('a webhook id belongs to its service', async () => {
    const { id } = (await post('/Parcels.FeatureServer/webhooks/createWebhook', hook())) as { id: string };
    expect(await get(`/Tools/Chips.GPServer/webhooks/${id}`)).toMatchObject({ code: 404 });
  });

  it('createWebhook follows the service-type rule and waits for a backup', async () => {
    expect(await post('/Basemap.MapServer/webhooks/createWebhook', hook())).toEqual(
      adminError(400, "Webhooks are not supported for service type 'MapServer'."),
    );
    await site.store.acquireLock(SITE_BACKUP_LOCK, 'x', 60_000);
    expect(await post('/Parcels.FeatureServer/webhooks/createWebhook', hook())).toEqual(
      adminError(409, 'A site backup is in progress. Configuration changes are not allowed until it completes.'),
    );
    expect(await get('/Parcels.FeatureServer/webhooks')).toEqual({ webhooks: [] });
  });
});

describe('deactivateAll / activateAll (protocols §2.1)', () => {
  beforeEach(async () => {
    await post('/Parcels.FeatureServer/webhooks/createWebhook', hook({ name: 'a' }));
    await post('/Parcels.FeatureServer/webhooks/createWebhook', hook({ name: 'b', active: 'false' }));
    await post('/Tools/Chips.GPServer/webhooks/createWebhook', hook({ name: 'c' }));
  });

  const actives = async (service: string) =>
    (await site.store.listWebhooks(service)).sort((x, y) => x.name.localeCompare(y.name)).map((h) => h.active);

  it('deactivates and activates every webhook of one service, idempotently', async () => {
    expect(await post('/Parcels.FeatureServer/webhooks/deactivateAll')).toEqual(SUCCESS);
    expect(await actives('Parcels.FeatureServer')).toEqual([false, false]);
    expect(await actives('Tools/Chips.GPServer')).toEqual([true]);
    expect(await post('/Parcels.FeatureServer/webhooks/deactivateAll')).toEqual(SUCCESS);
    expect(await post('/Parcels.FeatureServer/webhooks/activateAll')).toEqual(SUCCESS);
    expect(await post('/Parcels.FeatureServer/webhooks/activateAll')).toEqual(SUCCESS);
    expect(await actives('Parcels.FeatureServer')).toEqual([true, true]);
    expect(await post('/Tools/Chips.GPServer/webhooks/deactivateAll')).toEqual(SUCCESS);
    expect(await actives('Tools/Chips.GPServer')).toEqual([false]);
  });

  it('a service without webhooks answers success', async () => {
    const now = site.clock.now();
    await site.store.putService({ folder: '', serviceName: 'Empty', type: 'GPServer', properties: {}, created: now });
    expect(await post('/Empty.GPServer/webhooks/deactivateAll')).toEqual(SUCCESS);
    expect(await post('/Empty.GPServer/webhooks/activateAll')).toEqual(SUCCESS);
  });

  it('GET is 405 with the exact admin body', async () => {
    for (const op of ['deactivateAll', 'activateAll']) {
      const res = await dispatch(routes, siteRequest(`/server/admin/services/Parcels.FeatureServer/webhooks/${op}?f=json&token=${admin}`));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('{"status":"error","messages":["Method not supported."],"code":405}');
    }
    expect(await actives('Parcels.FeatureServer')).toEqual([true, false]);
  });

  it('other service types are 400, unknown services 404, with the exact bodies', async () => {
    expect(await post('/Basemap.MapServer/webhooks/deactivateAll')).toEqual(
      adminError(400, "Webhooks are not supported for service type 'MapServer'."),
    );
    expect(await post('/Imagery.ImageServer/webhooks/activateAll')).toEqual(
      adminError(400, "Webhooks are not supported for service type 'ImageServer'."),
    );
    const res = await dispatch(
      routes,
      siteRequest('/server/admin/services/Nope.FeatureServer/webhooks/deactivateAll', { form: { f: 'json', token: admin } }),
    );
    expect(await res.text()).toBe(`{"status":"error","messages":["Service 'Nope.FeatureServer' does not exist."],"code":404}`);
    expect(await post('/Parcels.Featureserver/webhooks/deactivateAll')).toEqual(
      adminError(404, "Service 'Parcels.Featureserver' does not exist."),
    );
    expect(await post('/Tools/Nope.GPServer/webhooks/activateAll')).toEqual(
      adminError(404, "Service 'Tools/Nope.GPServer' does not exist."),
    );
    expect(await post('/Chips.GPServer/webhooks/activateAll')).toEqual(adminError(404, "Service 'Chips.GPServer' does not exist."));
  });

  it('waits for a site backup', async () => {
    await site.store.acquireLock(SITE_BACKUP_LOCK, 'x', 60_000);
    expect(await post('/Parcels.FeatureServer/webhooks/deactivateAll')).toMatchObject({ code: 409 });
    expect(await actives('Parcels.FeatureServer')).toEqual([true, false]);
  });

  it('shows an error on the operation page when html is asked for (the default)', async () => {
    const res = await dispatch(
      routes,
      siteRequest('/server/admin/services/Basemap.MapServer/webhooks/createWebhook', { form: { token: admin, ...hook() } }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(html).toContain('<h1>createWebhook</h1>');
    expect(html).toContain('name="hookUrl" value="https://hooks.example/in"');
    expect(html).toContain('&#34;code&#34;: 400');
    expect(html).toContain('Webhooks are not supported for service type &#39;MapServer&#39;.');
    const edit = await dispatch(
      routes,
      siteRequest('/server/admin/services/Parcels.FeatureServer/webhooks/nope/edit', { form: { token: admin } }),
    );
    expect(await edit.text()).toContain('name="changeTypes"');
  });

  it('answers the admin HTML page by default', async () => {
    const res = await dispatch(
      routes,
      siteRequest('/server/admin/services/Parcels.FeatureServer/webhooks/deactivateAll', { form: { token: admin } }),
    );
    const html = await res.text();
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(html).toContain('<h1>Deactivate All Webhooks</h1>');
    expect(html).toContain('<input type="hidden" name="f" value="json">');
    expect(html).toContain('<pre>{\n  &#34;status&#34;: &#34;success&#34;\n}</pre>');
  });
});

describe('who may manage webhooks (protocols §2.1 rule 6)', () => {
  /** A user with the built-in role `user` and one custom role per privilege group. */
  async function userWithRoles(username: string, ...roles: string[][]): Promise<string> {
    const names: string[] = [];
    for (const [i, privileges] of roles.entries()) {
      const rolename = `${username}-${i}`;
      await site.store.putRole({ rolename, privileges: privileges as never });
      names.push(rolename);
    }
    await site.store.putUser({ username, passwordHash: await hashPassword('x'), role: 'user', roles: names, created: site.clock.now() });
    return site.token(username, { audience: ADMIN_AUDIENCE });
  }

  const feature = (token: string | null, headers?: Record<string, string>) =>
    post('/Parcels.FeatureServer/webhooks/deactivateAll', {}, token, headers);
  const gp = (token: string | null, headers?: Record<string, string>) =>
    post('/Tools/Chips.GPServer/webhooks/deactivateAll', {}, token, headers);

  it('the default administrator may, with an admin or a portal token', async () => {
    expect(await feature(admin)).toEqual(SUCCESS);
    expect(await gp(admin)).toEqual(SUCCESS);
    expect(await gp(await site.token('admin'))).toEqual(SUCCESS);
  });

  it('the feature layer privilege covers FeatureServer only', async () => {
    const t = await userWithRoles('fl', ['featureLayer']);
    expect(await feature(t)).toEqual(SUCCESS);
    expect(await post('/Parcels.FeatureServer/webhooks/createWebhook', hook(), t)).toMatchObject({ status: 'success' });
    expect(await get('/Parcels.FeatureServer/webhooks', t)).toEqual({
      webhooks: expect.arrayContaining([expect.objectContaining({ name: 'notify' })]),
    });
    expect(await gp(t)).toEqual(FORBIDDEN);
    expect(await get('/Tools/Chips.GPServer/webhooks', t)).toEqual(FORBIDDEN);
  });

  it('geoprocessing alone is not enough; with publishing server layers in the same role it is', async () => {
    expect(await gp(await userWithRoles('gpo', ['geoprocessing']))).toEqual(FORBIDDEN);
    expect(await feature(await userWithRoles('gpo2', ['geoprocessing']))).toEqual(FORBIDDEN);
    const both = await userWithRoles('gpp', ['geoprocessing', 'publishServerLayers']);
    expect(await gp(both)).toEqual(SUCCESS);
    expect(await feature(both)).toEqual(FORBIDDEN);
  });

  it('geoprocessing and publishing split across two roles is not enough', async () => {
    expect(await gp(await userWithRoles('split', ['geoprocessing'], ['publishServerLayers']))).toEqual(FORBIDDEN);
  });

  it('plain users and publishers without privileges may not; nor may they learn whether a service exists', async () => {
    await site.addUser('plain', 'user');
    await site.addUser('pub', 'publisher');
    for (const u of ['plain', 'pub']) {
      const t = await site.token(u, { audience: ADMIN_AUDIENCE });
      expect(await feature(t)).toEqual(FORBIDDEN);
      expect(await gp(t)).toEqual(FORBIDDEN);
      expect(await post('/Ghost.FeatureServer/webhooks/deactivateAll', {}, t)).toEqual(FORBIDDEN);
    }
  });

  it('no token is 499, an expired one 498, one bound to another referer 498, in the admin wording', async () => {
    expect(await feature(null)).toEqual(
      adminError(499, "Unauthorized access. Token not found. You can generate a token using the 'generateToken' operation."),
    );
    const short = await site.token('admin', { audience: ADMIN_AUDIENCE, minutes: 1 });
    site.clock.advance(60_000);
    expect(await gp(short)).toEqual(adminError(498, 'Token Expired.'));
    const other = await site.token('admin', { audience: ADMIN_AUDIENCE, binding: { kind: 'referer', value: 'https://elsewhere.example' } });
    expect(await feature(other)).toEqual(adminError(498, 'Invalid token, ClientID does not match.'));
    expect(await feature('garbage')).toEqual(adminError(498, 'Could not decrypt token. Token may not be valid.'));
    expect(await actives()).toEqual([true, false, true]);
  });

  const actives = async () =>
    [...(await site.store.listWebhooks('Parcels.FeatureServer')), ...(await site.store.listWebhooks('Tools/Chips.GPServer'))]
      .sort((x, y) => x.name.localeCompare(y.name))
      .map((h) => h.active);

  beforeEach(async () => {
    await post('/Parcels.FeatureServer/webhooks/createWebhook', hook({ name: 'a' }));
    await post('/Parcels.FeatureServer/webhooks/createWebhook', hook({ name: 'b', active: 'false' }));
    await post('/Tools/Chips.GPServer/webhooks/createWebhook', hook({ name: 'c' }));
  });

  it('a server-audience token is not accepted by the admin API', async () => {
    const t = await site.token('admin', { audience: 'server:https://localhost/server' });
    expect(await feature(t)).toEqual(adminError(498, 'Could not decrypt token. Token may not be valid.'));
  });

  it('plain HTTP is refused when allSSL is on', async () => {
    const ssl = await testSite({ allSSL: true });
    const res = await dispatch(
      serviceRoutes(ssl),
      siteRequest('/server/admin/services/Parcels.FeatureServer/webhooks/deactivateAll', { form: { f: 'json' }, scheme: 'http' }),
    );
    expect(await jsonOf(res)).toEqual(adminError(403, 'SSL Required'));
  });
});

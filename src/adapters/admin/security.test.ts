import { beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_AUDIENCE, jsonOf, siteRequest, testSite, type RequestOptions, type TestSite } from '../../../test/site.js';
import { ensurePrimaryAdministrator } from '../../server/site.js';
import { verifyPassword } from '../auth.js';
import type { Route } from '../rest.js';
import { SITE_BACKUP_LOCK } from '../site.js';
import { adminRootRoutes } from './html.js';
import { securityRoutes } from './security.js';

type Json = Record<string, unknown>;

const FORBIDDEN = {
  status: 'error',
  messages: ['You do not have permissions to access this resource or perform this operation.'],
  code: 403,
};

/** Finds the route of `path` the way the host mounts them (exact, or `/*` prefix). */
function dispatch(routes: readonly Route[], req: Request): Promise<Response> {
  const path = new URL(req.url).pathname;
  const route = routes.find((r) => (r.path.endsWith('/*') ? path.startsWith(r.path.slice(0, -1)) : path === r.path));
  if (!route) throw new Error(`no route for ${path}`);
  return route.handler(req);
}

let site: TestSite;
let routes: Route[];
let adminToken: string;

beforeEach(async () => {
  site = await testSite();
  await ensurePrimaryAdministrator(site, 'admin', 'admin-password');
  await site.addUser('alice', 'user');
  routes = [...adminRootRoutes(site), ...securityRoutes(site)];
  adminToken = await site.token('admin', { audience: ADMIN_AUDIENCE });
});

async function call(path: string, form?: Record<string, string>, options: RequestOptions & { token?: string | null } = {}): Promise<Json> {
  const token = options.token === undefined ? adminToken : options.token;
  const body = form === undefined ? undefined : { f: 'json', ...form, ...(token ? { token } : {}) };
  const query = form === undefined ? `?f=json${token ? `&token=${token}` : ''}` : '';
  return jsonOf(
    await dispatch(routes, siteRequest(`/server/admin/security${path}${query}`, { ...options, ...(body ? { form: body } : {}) })),
  );
}

const adminError = (code: number, ...messages: string[]): Json => ({ status: 'error', messages, code });

describe('admin root', () => {
  it('lists the resources and the version for the default administrator', async () => {
    const res = await dispatch(routes, siteRequest(`/server/admin?f=json&token=${adminToken}`));
    expect(await jsonOf(res)).toEqual({ resources: ['security', 'services'], currentVersion: 11.5 });
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('accepts a portal token and refuses other users, anonymous and plain-HTTP callers', async () => {
    const portal = await site.token('admin');
    expect(await jsonOf(await dispatch(routes, siteRequest(`/server/admin?f=json&token=${portal}`)))).toMatchObject({
      currentVersion: 11.5,
    });
    const alice = await site.token('alice', { audience: ADMIN_AUDIENCE });
    expect(await jsonOf(await dispatch(routes, siteRequest(`/server/admin?f=json&token=${alice}`)))).toEqual(FORBIDDEN);
    expect(await jsonOf(await dispatch(routes, siteRequest(`/server/admin?f=json`)))).toEqual(
      adminError(499, "Unauthorized access. Token not found. You can generate a token using the 'generateToken' operation."),
    );
    const ssl = await testSite({ allSSL: true });
    const res = await dispatch(adminRootRoutes(ssl), siteRequest(`/server/admin?f=json`, { scheme: 'http' }));
    expect(await jsonOf(res)).toEqual(adminError(403, 'SSL Required'));
  });

  it('answers an HTML page by default: the operation name, a form posting f=json, the JSON in a <pre>', async () => {
    const res = await dispatch(routes, siteRequest(`/server/admin?token=${adminToken}`));
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(html).toContain('<h1>Site administration</h1>');
    expect(html).toContain('<form method="post" action="/server/admin"');
    expect(html).toContain('<input type="hidden" name="f" value="json">');
    expect(html).toMatch(/<pre>\{\n {2}&#34;resources&#34;/);
    expect(html).not.toContain(adminToken);
  });

  it('answers pjson pretty-printed and an unknown f in the admin shape', async () => {
    const res = await dispatch(routes, siteRequest(`/server/admin?f=pjson&token=${adminToken}`));
    expect(await res.text()).toContain('\n  "currentVersion": 11.5');
    const bad = await dispatch(routes, siteRequest(`/server/admin?f=xml&token=${adminToken}`));
    expect(await jsonOf(bad)).toEqual(adminError(400, "'f' must be one of html, json, pjson."));
  });
});

describe('security/users/add', () => {
  it('adds a user with a hashed password and never echoes it', async () => {
    const res = await dispatch(
      routes,
      siteRequest('/server/admin/security/users/add', {
        form: {
          f: 'json',
          token: adminToken,
          username: 'bob',
          password: 'correct horse',
          fullname: 'Bob B',
          email: 'bob@example.com',
          description: 'GIS',
        },
      }),
    );
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ status: 'success' });
    expect(text).not.toContain('correct horse');
    const bob = (await site.store.getUser('bob'))!;
    expect(bob).toMatchObject({ role: 'user', roles: [], fullName: 'Bob B', email: 'bob@example.com', description: 'GIS' });
    expect(bob.passwordHash).toMatch(/^scrypt\$/);
    expect(await verifyPassword('correct horse', bob.passwordHash)).toBe(true);
  });

  it.each([
    ['administrator', 'administrator'],
    ['ROLE_ADMINISTRATOR', 'administrator'],
    ['org_admin', 'administrator'],
    ['Publisher', 'publisher'],
    ['role_publisher', 'publisher'],
    ['ORG_PUBLISHER', 'publisher'],
    ['user', 'user'],
    ['ROLE_USER', 'user'],
    ['org_user', 'user'],
  ])('role %s is the built-in role %s', async (role, expected) => {
    expect(await call('/users/add', { username: 'carol', password: 'password1', role })).toEqual({ status: 'success' });
    expect((await site.store.getUser('carol'))!.role).toBe(expected);
  });

  it('defaults the role to user and refuses unknown roles', async () => {
    await call('/users/add', { username: 'dave', password: 'password1' });
    expect((await site.store.getUser('dave'))!.role).toBe('user');
    expect(await call('/users/add', { username: 'erin', password: 'password1', role: 'superuser' })).toEqual(
      adminError(400, "'role' must be one of administrator, publisher, user; got 'superuser'."),
    );
  });

  it('validates the user name and the password', async () => {
    const nameRule = "'username' must be 1 to 128 characters without spaces or control characters.";
    expect(await call('/users/add', { username: 'a b', password: 'password1' })).toEqual(adminError(400, nameRule));
    expect(await call('/users/add', { username: 'a\u0007b', password: 'password1' })).toEqual(adminError(400, nameRule));
    expect(await call('/users/add', { username: 'x'.repeat(129), password: 'password1' })).toEqual(adminError(400, nameRule));
    expect(await call('/users/add', { username: 'x'.repeat(128), password: 'password1' })).toEqual({ status: 'success' });
    expect(await call('/users/add', { password: 'password1' })).toEqual(adminError(400, "'username' must be specified."));
    expect(await call('/users/add', { username: 'frank' })).toEqual(adminError(400, "'password' must be specified."));
    expect(await call('/users/add', { username: 'frank', password: 'short12' })).toEqual(
      adminError(400, "'password' must be at least 8 characters."),
    );
    expect(await site.store.getUser('frank')).toBeUndefined();
  });

  it('refuses a duplicate with a 409 naming the user (names are case-sensitive)', async () => {
    expect(await call('/users/add', { username: 'alice', password: 'password1' })).toEqual(adminError(409, "User 'alice' already exists."));
    expect(await call('/users/add', { username: 'Alice', password: 'password1' })).toEqual({ status: 'success' });
  });

  it('is POST-only, for the default administrator, and waits for a site backup', async () => {
    expect(await call('/users/add')).toEqual(adminError(405, 'Method not supported.'));
    const alice = await site.token('alice', { audience: ADMIN_AUDIENCE });
    expect(await call('/users/add', { username: 'z1', password: 'password1' }, { token: alice })).toEqual(FORBIDDEN);
    expect(await call('/users/add', { username: 'z1', password: 'password1' }, { token: null })).toMatchObject({ code: 499 });
    await site.store.acquireLock(SITE_BACKUP_LOCK, 'export-1', 60_000);
    expect(await call('/users/add', { username: 'z1', password: 'password1' })).toEqual(
      adminError(409, 'A site backup is in progress. Configuration changes are not allowed until it completes.'),
    );
    expect(await site.store.getUser('z1')).toBeUndefined();
  });

  it('answers an HTML page by default without the password', async () => {
    const res = await dispatch(
      routes,
      siteRequest('/server/admin/security/users/add', { form: { token: adminToken, username: 'gina', password: 'secret-pass' } }),
    );
    const html = await res.text();
    expect(html).toContain('<h1>Add User</h1>');
    expect(html).toContain('name="username" value="gina"');
    expect(html).toContain('name="password" value=""');
    expect(html).not.toContain('secret-pass');
    expect(html).not.toContain(adminToken);
    expect(html).toContain('&#34;status&#34;: &#34;success&#34;');
  });
});

describe('admin error pages', () => {
  it('an error asked for in html is shown on the operation page with its form; in json it is the admin body', async () => {
    const res = await dispatch(
      routes,
      siteRequest('/server/admin/security/users/add', { form: { token: adminToken, username: 'alice', password: 'password1' } }),
    );
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(html).toContain('<h1>Add User</h1>');
    expect(html).toContain('name="username" value="alice"');
    expect(html).not.toContain('password1');
    expect(html).toContain('User &#39;alice&#39; already exists.');
    expect(await call('/users/add', { username: 'alice', password: 'password1' })).toEqual(adminError(409, "User 'alice' already exists."));
    const root = await dispatch(routes, siteRequest('/server/admin'));
    expect(await root.text()).toContain('<h1>Site administration</h1>');
  });
});

describe('security/users (list, search)', () => {
  it('lists users without password hashes, by GET or POST, at both paths', async () => {
    const viaGet = await call('/users');
    const viaPost = await call('/users/getUsers', {});
    expect(viaGet).toEqual(viaPost);
    expect(JSON.stringify(viaGet)).not.toContain('scrypt');
    expect(viaGet['users']).toEqual([
      expect.objectContaining({ username: 'admin', role: 'administrator', primary: true, disabled: false }),
      expect.objectContaining({ username: 'alice', role: 'user', roles: [], fullname: '', email: '', description: '' }),
    ]);
    expect(viaGet).toMatchObject({ total: 2, hasMore: false });
  });

  it('pages with startIndex and maxCount', async () => {
    await site.addUser('bob');
    const p = await call('/users/getUsers', { startIndex: '1', maxCount: '1' });
    expect((p['users'] as Json[]).map((u) => u['username'])).toEqual(['alice']);
    expect(p).toMatchObject({ total: 3, hasMore: true });
    expect(await call('/users/getUsers', { maxCount: '0' })).toEqual(adminError(400, "'maxCount' must be an integer from 1 to 10000."));
    expect(await call('/users/getUsers', { startIndex: '-1' })).toEqual(
      adminError(400, `'startIndex' must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}.`),
    );
  });

  it('searches user name, full name and e-mail', async () => {
    await call('/users/add', { username: 'bob', password: 'password1', fullname: 'Robert Smith', email: 'rs@example.com' });
    const names = async (filter: string) => ((await call('/users/search', { filter }))['users'] as Json[]).map((u) => u['username']);
    expect(await names('SMITH')).toEqual(['bob']);
    expect(await names('example.com')).toEqual(['bob']);
    expect(await names('ali')).toEqual(['alice']);
    expect(await names('')).toEqual(['admin', 'alice', 'bob']);
  });

  it('is for the default administrator only', async () => {
    const alice = await site.token('alice', { audience: ADMIN_AUDIENCE });
    expect(await call('/users', undefined, { token: alice })).toEqual(FORBIDDEN);
  });
});

describe('security/users/remove and update', () => {
  it('removes a user, whose tokens stop working even if the name is reused', async () => {
    const old = await site.token('alice', { audience: ADMIN_AUDIENCE });
    site.clock.advance(1);
    expect(await call('/users/remove', { username: 'alice' })).toEqual({ status: 'success' });
    expect(await site.store.getUser('alice')).toBeUndefined();
    expect(await call('/users/add', { username: 'alice', password: 'password1', role: 'administrator' })).toEqual({ status: 'success' });
    expect(await call('/users', undefined, { token: old })).toMatchObject({ code: 498 });
  });

  it('refuses to remove the primary administrator or an unknown user, and needs POST', async () => {
    expect(await call('/users/remove', { username: 'admin' })).toEqual(
      adminError(400, "The primary site administrator 'admin' cannot be removed."),
    );
    expect(await call('/users/remove', { username: 'nobody' })).toEqual(adminError(404, "User 'nobody' does not exist."));
    expect(await call('/users/remove')).toEqual(adminError(405, 'Method not supported.'));
  });

  it('a password change revokes the tokens and grants of the user', async () => {
    await site.store.putUser({ ...(await site.store.getUser('alice'))!, role: 'administrator' });
    const before = await site.token('alice', { audience: ADMIN_AUDIENCE });
    await site.store.putGrant({ id: 'g1', kind: 'refresh', clientId: 'app', username: 'alice', expires: site.clock.now() + 60_000 });
    site.clock.advance(1);
    expect(await call('/users/update', { username: 'alice', password: 'new-password' })).toEqual({ status: 'success' });
    expect(await verifyPassword('new-password', (await site.store.getUser('alice'))!.passwordHash)).toBe(true);
    expect(await call('/users', undefined, { token: before })).toEqual(adminError(498, 'Could not decrypt token. Token may not be valid.'));
    expect(await site.store.takeGrant('g1')).toBeUndefined();
    const after = await site.token('alice', { audience: ADMIN_AUDIENCE });
    expect(await call('/users', undefined, { token: after })).toMatchObject({ total: 2 });
    expect((await site.store.getSetting<{ revokedSubjects: Json }>('signingKeys'))!.revokedSubjects).toHaveProperty('alice');
  });

  it('disabling revokes; profile fields are set and cleared; other updates keep tokens', async () => {
    await site.store.putUser({ ...(await site.store.getUser('alice'))!, role: 'administrator' });
    const token = await site.token('alice', { audience: ADMIN_AUDIENCE });
    await site.store.putGrant({ id: 'g2', kind: 'refresh', clientId: 'app', username: 'alice', expires: site.clock.now() + 60_000 });
    site.clock.advance(1);
    expect(await call('/users/update', { username: 'alice', fullname: 'Alice A', email: 'a@example.com', description: 'x' })).toEqual({
      status: 'success',
    });
    expect(await site.store.getUser('alice')).toMatchObject({ fullName: 'Alice A', email: 'a@example.com', description: 'x' });
    expect(await call('/users', undefined, { token })).toMatchObject({ total: 2 });
    await call('/users/update', { username: 'alice', description: '' });
    expect((await site.store.getUser('alice'))!.description).toBeUndefined();
    expect(await call('/users/update', { username: 'alice', disabled: 'TRUE' })).toEqual({ status: 'success' });
    expect((await site.store.getUser('alice'))!.disabled).toBe(true);
    expect(await site.store.takeGrant('g2')).toBeUndefined();
    expect(await call('/users/update', { username: 'alice', disabled: 'false' })).toEqual({ status: 'success' });
    expect(await call('/users', undefined, { token })).toMatchObject({ code: 498 });
  });

  it('changes the built-in role, never that of the primary administrator', async () => {
    expect(await call('/users/update', { username: 'alice', role: 'ROLE_PUBLISHER' })).toEqual({ status: 'success' });
    expect((await site.store.getUser('alice'))!.role).toBe('publisher');
    expect(await call('/users/update', { username: 'alice', role: 'boss' })).toMatchObject({ code: 400 });
    expect(await call('/users/update', { username: 'admin', role: 'user' })).toEqual(
      adminError(400, "The primary site administrator 'admin' must keep the administrator role."),
    );
    expect(await call('/users/update', { username: 'admin', role: 'org_admin' })).toEqual({ status: 'success' });
    expect((await site.store.getUser('admin'))!.role).toBe('administrator');
  });

  it('validates updates', async () => {
    expect(await call('/users/update', { username: 'admin', disabled: 'true' })).toEqual(
      adminError(400, "The primary site administrator 'admin' cannot be disabled."),
    );
    expect(await call('/users/update', { username: 'alice', disabled: 'maybe' })).toMatchObject({ code: 400 });
    expect(await call('/users/update', { username: 'alice', password: 'short' })).toEqual(
      adminError(400, "'password' must be at least 8 characters."),
    );
    expect(await call('/users/update', { username: 'ghost', fullname: 'G' })).toEqual(adminError(404, "User 'ghost' does not exist."));
    expect(await call('/users/update', {})).toEqual(adminError(400, "'username' must be specified."));
  });
});

describe('security/roles', () => {
  it('adds roles with comma-joined or JSON privileges, vendor long names included', async () => {
    expect(await call('/roles/add', { rolename: 'editors', description: 'Edit', privileges: 'featureLayer, GEOPROCESSING' })).toEqual({
      status: 'success',
    });
    expect(
      await call('/roles/add', {
        rolename: 'gp',
        privileges: '["portal:publisher:publishServerGPServices","portal:publisher:publishServerServices"]',
      }),
    ).toEqual({
      status: 'success',
    });
    expect(await call('/roles/add', { rolename: 'hosted', privileges: 'portal:publisher:publishFeatures' })).toEqual({ status: 'success' });
    expect(await call('/roles/add', { rolename: 'empty' })).toEqual({ status: 'success' });
    expect(await call('/roles/getRoles', {})).toEqual({
      roles: [
        { rolename: 'editors', description: 'Edit', privileges: ['featureLayer', 'geoprocessing'] },
        { rolename: 'empty', description: '', privileges: [] },
        { rolename: 'gp', description: '', privileges: ['geoprocessing', 'publishServerLayers'] },
        { rolename: 'hosted', description: '', privileges: ['featureLayer'] },
      ],
      total: 4,
      hasMore: false,
    });
    expect(await call('/roles')).toMatchObject({ total: 4 });
    expect(await call('/roles/getPrivileges', { rolename: 'gp' })).toEqual({
      rolename: 'gp',
      privileges: ['geoprocessing', 'publishServerLayers'],
    });
  });

  it('names unknown privileges, refuses duplicates and bad names', async () => {
    expect(await call('/roles/add', { rolename: 'r', privileges: 'featureLayer,fly,swim' })).toEqual(
      adminError(400, "Unknown privileges 'fly', 'swim'. Privileges are featureLayer, geoprocessing, publishServerLayers."),
    );
    expect(await site.store.getRole('r')).toBeUndefined();
    await call('/roles/add', { rolename: 'r' });
    expect(await call('/roles/add', { rolename: 'r' })).toEqual(adminError(409, "Role 'r' already exists."));
    expect(await call('/roles/add', { rolename: 'has space' })).toEqual(
      adminError(400, "'rolename' must be 1 to 128 characters without spaces or control characters."),
    );
    expect(await call('/roles/add', {})).toEqual(adminError(400, "'rolename' must be specified."));
    expect(await call('/roles/add', { rolename: 'Role_Administrator' })).toEqual(
      adminError(400, "'Role_Administrator' is the name of a built-in role."),
    );
    expect(await call('/roles/getPrivileges', { rolename: 'nope' })).toEqual(adminError(404, "Role 'nope' does not exist."));
  });

  it('updates privileges and description', async () => {
    await call('/roles/add', { rolename: 'r', description: 'd', privileges: 'featureLayer' });
    expect(await call('/roles/update', { rolename: 'r', privileges: 'geoprocessing,publishServerLayers' })).toEqual({ status: 'success' });
    expect(await site.store.getRole('r')).toEqual({
      rolename: 'r',
      description: 'd',
      privileges: ['geoprocessing', 'publishServerLayers'],
    });
    await call('/roles/update', { rolename: 'r', description: '' });
    expect((await site.store.getRole('r'))!.description).toBeUndefined();
    expect(await call('/roles/update', { rolename: 'r', privileges: 'nope' })).toMatchObject({ code: 400 });
    expect(await call('/roles/update', { rolename: 'x', privileges: '' })).toEqual(adminError(404, "Role 'x' does not exist."));
  });

  it('adds users to a role all or nothing, naming every unknown user', async () => {
    await site.addUser('bob');
    await call('/roles/add', { rolename: 'r', privileges: 'featureLayer' });
    expect(await call('/roles/addUsersToRole', { rolename: 'r', users: 'alice,ghost,spook' })).toEqual(
      adminError(404, "Users 'ghost', 'spook' do not exist."),
    );
    expect((await site.store.getUser('alice'))!.roles).toEqual([]);
    expect(await call('/roles/addUsersToRole', { rolename: 'none', users: 'alice' })).toEqual(
      adminError(404, "Role 'none' does not exist."),
    );
    expect(await call('/roles/addUsersToRole', { rolename: 'r' })).toEqual(adminError(400, "'users' must be specified."));
    expect(await call('/roles/addUsersToRole', { rolename: 'r', users: '["alice","bob"]' })).toEqual({ status: 'success' });
    expect(await call('/roles/addUsersToRole', { rolename: 'r', users: 'alice' })).toEqual({ status: 'success' });
    expect((await site.store.getUser('alice'))!.roles).toEqual(['r']);
    expect((await site.store.getUser('bob'))!.roles).toEqual(['r']);
    expect(await call('/roles/removeUsersFromRole', { rolename: 'r', users: 'bob,ghost' })).toEqual(
      adminError(404, "User 'ghost' does not exist."),
    );
    expect(await call('/roles/removeUsersFromRole', { rolename: 'r', users: 'bob' })).toEqual({ status: 'success' });
    expect((await site.store.getUser('bob'))!.roles).toEqual([]);
  });

  it('removing a role takes it from its users', async () => {
    await call('/roles/add', { rolename: 'r', privileges: 'featureLayer' });
    await call('/roles/addUsersToRole', { rolename: 'r', users: 'alice' });
    expect(await call('/roles/remove', { rolename: 'r' })).toEqual({ status: 'success' });
    expect(await site.store.getRole('r')).toBeUndefined();
    expect((await site.store.getUser('alice'))!.roles).toEqual([]);
    expect(await call('/roles/remove', { rolename: 'r' })).toEqual(adminError(404, "Role 'r' does not exist."));
  });

  it('role writes are POST-only, administrator-only and wait for a backup', async () => {
    for (const op of ['add', 'update', 'remove', 'addUsersToRole', 'removeUsersFromRole']) {
      expect(await call(`/roles/${op}`)).toEqual(adminError(405, 'Method not supported.'));
    }
    const alice = await site.token('alice', { audience: ADMIN_AUDIENCE });
    expect(await call('/roles/add', { rolename: 'r' }, { token: alice })).toEqual(FORBIDDEN);
    expect(await call('/roles', undefined, { token: alice })).toEqual(FORBIDDEN);
    await site.store.acquireLock(SITE_BACKUP_LOCK, 'export-1', 60_000);
    expect(await call('/roles/add', { rolename: 'r' })).toMatchObject({ code: 409 });
    expect(await call('/roles')).toMatchObject({ total: 0 });
  });

  it('the security root lists users and roles', async () => {
    expect(await call('')).toEqual({ resources: ['users', 'roles'] });
  });
});

describe('security/tokens: signing key rotation', () => {
  it('rotates (live tokens keep working), retires (the tokens it signed stop), never shows a secret', async () => {
    const listed = (await call('/tokens')) as { keys: Json[] };
    expect(listed.keys).toHaveLength(1);
    expect(listed.keys[0]).toMatchObject({ current: true });
    expect(JSON.stringify(listed)).not.toContain(site.keys.current().secret);
    const oldKid = listed.keys[0]!['kid'] as string;

    const rotated = await call('/tokens/rotateKey', {});
    expect(rotated).toMatchObject({ status: 'success' });
    expect(rotated['kid']).not.toBe(oldKid);
    expect(site.keys.current().kid).toBe(rotated['kid']);
    const verify = (t: string) => call('/users', undefined, { token: t });
    // The old key still verifies; the admin's own token (signed before) still works.
    expect(await call('/users')).toMatchObject({ total: expect.any(Number) });

    expect(await call('/tokens/retireKey', { kid: rotated['kid'] as string })).toEqual(
      adminError(400, `Signing key '${rotated['kid'] as string}' is the current key; rotate first.`),
    );
    expect(await call('/tokens/retireKey', { kid: 'nope' })).toEqual(adminError(404, "Signing key 'nope' does not exist."));
    const freshAdmin = await site.token('admin', { audience: ADMIN_AUDIENCE });
    expect(await call('/tokens/retireKey', { kid: oldKid }, { token: freshAdmin })).toEqual({ status: 'success' });
    // Tokens signed with the retired key are refused now; new ones work.
    expect((await verify(adminToken))['code']).toBe(498);
    expect(await call('/users', undefined, { token: freshAdmin })).toMatchObject({ total: expect.any(Number) });
    expect(
      ((await call('/tokens', undefined, { token: freshAdmin })) as { keys: Json[] }).keys.find((k) => k['kid'] === oldKid),
    ).toMatchObject({
      retired: expect.any(Number),
      current: false,
    });
  });

  it('is for the default administrator only, and rotation is a write (POST)', async () => {
    const alice = await site.token('alice', { audience: ADMIN_AUDIENCE });
    expect(await call('/tokens/rotateKey', {}, { token: alice })).toEqual(FORBIDDEN);
    expect(((await call('/tokens/rotateKey')) as Json)['status']).toBe('error');
  });
});

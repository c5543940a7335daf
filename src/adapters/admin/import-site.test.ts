/* eslint-disable @typescript-eslint/no-explicit-any -- the damage tests edit parsed archive entries of every shape */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { strToU8, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import {
  adminPost,
  adminSite,
  adminToken,
  entriesOf,
  multipartPost,
  populate,
  PRIMARY,
  PRIMARY_PASSWORD,
  tempDir,
} from '../../../test/site-archive-fixtures.js';
import { jsonOf, siteRequest, TEST_REFERER, type TestSite } from '../../../test/site.js';
import { authenticate, ADMIN_AUDIENCE, PORTAL_AUDIENCE, verifyPassword } from '../auth.js';
import { exportSiteHandler } from './export-site.js';
import { importSiteHandler, importSiteRoutes, type ImportSiteOptions } from './import-site.js';
import { assertNoSiteBackup, type SiteStore } from '../site.js';

const IMPORT = '/server/admin/importSite';
const NAME = '20260115-120000-UTC.agssite';
const BUSY = 'A site backup is in progress. Configuration changes are not allowed until it completes.';

/** Site A, populated, exported to a folder both sites may read; answers the archive path. */
async function exportedSite(): Promise<{ a: TestSite; file: string; shared: string }> {
  const shared = tempDir('rf-shared-');
  const a = await adminSite({ writableRoots: [shared] });
  await populate(a);
  const body = await jsonOf(await exportSiteHandler(a)(adminPost('/server/admin/exportSite', { location: shared }, await adminToken(a))));
  expect(body).toEqual({ status: 'success', location: join(shared, NAME) });
  return { a, file: join(shared, NAME), shared };
}

/** An empty site B (its own primary administrator `b-root`, plus `ops` and `pub`) that may read `shared`. */
const siteB = (shared: string) => adminSite({ writableRoots: [shared], portalId: 'orgB' }, 'b-root', 'b-root-password');

async function importInto(site: TestSite, form: Record<string, string>, options: ImportSiteOptions = {}) {
  const res = await importSiteHandler({ ...site, options })(adminPost(IMPORT, form, await adminToken(site)));
  return { res, body: await jsonOf(res) };
}

const sortBy = <T>(xs: T[], key: (x: T) => string): T[] => [...xs].sort((p, q) => key(p).localeCompare(key(q)));

describe('importSite: round trip', () => {
  it('export site A, import into empty site B: B holds A’s configuration; B’s primary administrator stays', async () => {
    const { a, file, shared } = await exportedSite();
    const b = await siteB(shared);
    const bPrimaryBefore = await b.store.getUser('b-root');
    const { body } = await importInto(b, { location: file });
    expect(body).toEqual({
      status: 'success',
      restored: {
        services: 3,
        webhooks: 2,
        users: 4,
        roles: 2,
        federations: 1,
        identityProviders: 1,
        federatedServers: 1,
        oauthApps: 2,
        logSettings: 1,
      },
      removed: {
        services: 0,
        webhooks: 0,
        users: 0,
        roles: 0,
        federations: 0,
        identityProviders: 0,
        federatedServers: 0,
        oauthApps: 0,
        logSettings: 0,
      },
      skipped: [],
    });
    expect(await b.store.listServices()).toEqual(await a.store.listServices());
    expect(await b.store.listWebhooks()).toEqual(await a.store.listWebhooks());
    expect(await b.store.listRoles()).toEqual(await a.store.listRoles());
    expect(await b.store.listFederatedServers()).toEqual(await a.store.listFederatedServers());
    // Users: A's users except its primary; B's primary untouched. ops/pub were overwritten by A's (other hashes).
    const aUsers = (await a.store.listUsers()).filter((u) => u.username !== PRIMARY);
    const bUsers = await b.store.listUsers();
    expect(
      sortBy(
        bUsers.filter((u) => u.username !== 'b-root'),
        (u) => u.username,
      ),
    ).toEqual(sortBy(aUsers, (u) => u.username));
    expect(await b.store.getUser('b-root')).toEqual(bPrimaryBefore);
    expect(await b.store.getUser(PRIMARY)).toBeUndefined();
    expect(await verifyPassword('alice-secret', (await b.store.getUser('alice'))!.passwordHash)).toBe(true);
    // Federations of A's organization belong to B's now; records of another organization keep theirs.
    expect(await b.store.listFederations()).toEqual((await a.store.listFederations()).map((f) => ({ ...f, portalId: 'orgB' })));
    expect(await b.store.listIdentityProviders()).toEqual(await a.store.listIdentityProviders());
    // The app the old primary administrator owned belongs to the current one.
    const apps = await b.store.listOAuthApps();
    expect(apps.find((x) => x.clientId === 'app-primary')?.owner).toBe('b-root');
    expect(apps.find((x) => x.clientId === 'app-alice')).toEqual(await a.store.getOAuthApp('app-alice'));
    expect(await b.store.getSetting('logSettings')).toEqual({ logLevel: 'WARNING', maxLogFileAge: 90 });
    // Jobs and signing keys are not part of a site archive.
    expect(await b.store.listJobs()).toEqual([]);
    expect(b.keys.data().keys.map((k) => k.secret)).not.toEqual(a.keys.data().keys.map((k) => k.secret));
    // Exporting B again yields the same configuration entries as A's export (but for the organization).
    const again = await jsonOf(await exportSiteHandler(b)(adminPost('/server/admin/exportSite', {}, await adminToken(b))));
    expect(again['status']).toBe('success');
    const eA = entriesOf(readFileSync(file));
    const eB = entriesOf(readFileSync(join(b.config.dataDir, 'site-exports', NAME)));
    for (const entry of ['services.json', 'webhooks.json', 'roles.json', 'users.json', 'identityProviders.json', 'logSettings.json']) {
      expect(JSON.parse(eB[entry]!), entry).toEqual(JSON.parse(eA[entry]!));
    }
  });

  it('accepts the archive as a multipart upload part `file`', async () => {
    const { file, shared } = await exportedSite();
    const b = await siteB(shared);
    const res = await importSiteHandler(b)(
      multipartPost(IMPORT, { f: 'json', token: await adminToken(b), file: new Blob([readFileSync(file)], { type: 'application/zip' }) }),
    );
    expect(await jsonOf(res)).toMatchObject({ status: 'success', restored: { services: 3, users: 4 } });
    expect((await b.store.listServices()).length).toBe(3);
  });

  it('a user of the archive named like the current primary administrator is skipped and reported', async () => {
    const { file, shared } = await exportedSite();
    // Site B's primary administrator is called `alice`, like a user of the archive.
    const b = await adminSite({ writableRoots: [shared], portalId: 'orgB' }, 'alice', 'b-alice-password');
    const before = await b.store.getUser('alice');
    const { body } = await importInto(b, { location: file });
    expect(body).toMatchObject({
      status: 'success',
      restored: { users: 3 },
      skipped: ["User 'alice' was not restored: it is the primary site administrator of this site, which stays as it is."],
    });
    expect(await b.store.getUser('alice')).toEqual(before);
    expect(await verifyPassword('b-alice-password', (await b.store.getUser('alice'))!.passwordHash)).toBe(true);
  });

  it('makes the configuration the archive’s: what the archive lacks is removed (never the primary administrator)', async () => {
    const { file, shared } = await exportedSite();
    const b = await siteB(shared);
    const now = b.clock.now();
    await b.store.putService({ folder: '', serviceName: 'OnlyInB', type: 'MapServer', properties: {}, created: now });
    await b.store.putRole({ rolename: 'b-role', privileges: [] });
    await b.store.putUser({
      username: 'b-only',
      passwordHash: (await b.store.getUser('ops'))!.passwordHash,
      role: 'user',
      roles: [],
      created: now,
    });
    await b.store.putFederatedServer({ id: 'b-srv', url: 'https://b.example/server' });
    await b.store.putOAuthApp({
      clientId: 'b-app',
      secretHash: 'scrypt$1$1$1$a$b',
      name: 'B',
      redirectUris: [],
      owner: 'b-root',
      created: now,
    });
    const { body } = await importInto(b, { location: file });
    expect(body['removed']).toEqual({
      services: 1,
      webhooks: 0,
      users: 1,
      roles: 1,
      federations: 0,
      identityProviders: 0,
      federatedServers: 1,
      oauthApps: 1,
      logSettings: 0,
    });
    expect(await b.store.getService('OnlyInB.MapServer')).toBeUndefined();
    expect(await b.store.getUser('b-only')).toBeUndefined();
    expect(await b.store.getUser('b-root')).toBeDefined();
  });

  it('tokens of users removed or whose password changed stop working; others keep working', async () => {
    const { file, shared } = await exportedSite();
    const b = await siteB(shared);
    await b.addUser('gone');
    const opsToken = await b.token('ops', { audience: ADMIN_AUDIENCE });
    const goneToken = await b.token('gone');
    const primaryToken = await b.token('b-root');
    b.clock.advance(1000);
    await importInto(b, { location: file });
    const auth = (token: string) =>
      authenticate(b, siteRequest(`/x?token=${token}`, { headers: { referer: TEST_REFERER } }), {
        audiences: [ADMIN_AUDIENCE, PORTAL_AUDIENCE],
        shape: 'admin',
      });
    await expect(auth(opsToken)).rejects.toMatchObject({ code: 'TOKEN_INVALID' }); // ops now has A's password
    await expect(auth(goneToken)).rejects.toMatchObject({ code: 'TOKEN_INVALID' });
    await expect(auth(primaryToken)).resolves.toMatchObject({ username: 'b-root' });
  });

  it('a failed write puts the previous configuration back and answers 500', async () => {
    const { file, shared } = await exportedSite();
    const b = await siteB(shared);
    await b.store.putService({ folder: '', serviceName: 'Keep', type: 'MapServer', properties: {}, created: 1 });
    const before = {
      services: await b.store.listServices(),
      users: await b.store.listUsers(),
      roles: await b.store.listRoles(),
      apps: await b.store.listOAuthApps(),
    };
    let puts = 0;
    const failing = (store: SiteStore): SiteStore => ({
      ...store,
      putService: async (s) => {
        if (++puts === 2) throw new Error('disk I/O error');
        return store.putService(s);
      },
    });
    const { res, body } = await importInto(b, { location: file }, { restoreStore: failing });
    expect(res.status).toBe(500);
    expect(body).toEqual({ status: 'error', messages: ['Error performing the operation.'], code: 500 });
    expect(await b.store.listServices()).toEqual(before.services);
    expect(sortBy(await b.store.listUsers(), (u) => u.username)).toEqual(sortBy(before.users, (u) => u.username));
    expect(await b.store.listRoles()).toEqual(before.roles);
    expect(await b.store.listOAuthApps()).toEqual(before.apps);
    await expect(assertNoSiteBackup(b)).resolves.toBeUndefined();
  });
});

describe('importSite: parameters, caller, lock', () => {
  it('GET is 405; no token 499; non-administrator 403; importSiteRoutes mounts it', async () => {
    const site = await adminSite();
    const h = importSiteHandler(site);
    expect(await jsonOf(await h(siteRequest(`${IMPORT}?f=json`)))).toEqual({
      status: 'error',
      messages: ['Method not supported.'],
      code: 405,
    });
    expect(await jsonOf(await h(adminPost(IMPORT, { location: '/x' })))).toMatchObject({ status: 'error', code: 499 });
    expect(await jsonOf(await h(adminPost(IMPORT, { location: '/x' }, await site.token('pub'))))).toEqual({
      status: 'error',
      messages: ['You do not have permissions to access this resource or perform this operation.'],
      code: 403,
    });
    expect(importSiteRoutes(site).map((r) => [r.method, r.path])).toEqual([['ALL', IMPORT]]);
  });

  it('needs exactly one of location and file; location follows the path rules; the file must exist', async () => {
    const { file, shared } = await exportedSite();
    const b = await siteB(shared);
    expect((await importInto(b, {})).body).toEqual({
      status: 'error',
      messages: ["'location' (the path of an .agssite file) or an uploaded 'file' is required."],
      code: 400,
    });
    const both = await importSiteHandler(b)(
      multipartPost(IMPORT, { f: 'json', token: await adminToken(b), location: file, file: new Blob([readFileSync(file)]) }),
    );
    expect(await jsonOf(both)).toEqual({ status: 'error', messages: ["Give either 'location' or 'file', not both."], code: 400 });
    expect((await importInto(b, { location: 'x.agssite' })).body).toEqual({
      status: 'error',
      messages: ["The location 'x.agssite' must be an absolute path."],
      code: 400,
    });
    expect((await importInto(b, { location: `${shared}/../etc/passwd` })).body).toMatchObject({ code: 400 });
    expect((await importInto(b, { location: '/etc/passwd' })).body).toMatchObject({ code: 400 });
    const missing = join(shared, 'none.agssite');
    expect((await importInto(b, { location: missing })).body).toEqual({
      status: 'error',
      messages: [`The file '${missing}' cannot be read: it does not exist.`],
      code: 400,
    });
    expect((await importInto(b, { location: shared })).body).toEqual({
      status: 'error',
      messages: [`The file '${shared}' cannot be read: it is not a readable file.`],
      code: 400,
    });
  });

  it('is refused with 409 while an export runs, and holds the lock while it restores', async () => {
    const { file, shared } = await exportedSite();
    const b = await siteB(shared);
    let release!: () => void;
    let reached!: () => void;
    const atRestore = new Promise<void>((r) => (reached = r));
    const gate = new Promise<void>((r) => (release = r));
    const token = await adminToken(b);
    const running = importSiteHandler({
      ...b,
      options: {
        beforeRestore: () => {
          reached();
          return gate;
        },
      },
    })(adminPost(IMPORT, { location: file }, token));
    await atRestore;
    await expect(assertNoSiteBackup(b)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await jsonOf(await exportSiteHandler(b)(adminPost('/server/admin/exportSite', {}, token)))).toEqual({
      status: 'error',
      messages: [BUSY],
      code: 409,
    });
    expect((await importInto(b, { location: file })).body).toEqual({ status: 'error', messages: [BUSY], code: 409 });
    release();
    expect(await jsonOf(await running)).toMatchObject({ status: 'success' });
    await expect(assertNoSiteBackup(b)).resolves.toBeUndefined();
  });
});

describe('importSite: corrupt and foreign archives name the entry', () => {
  /** The entries of a real export, to be damaged one at a time. */
  async function goodEntries(): Promise<{ b: TestSite; entries: Record<string, string>; dir: string }> {
    const { file, shared } = await exportedSite();
    return { b: await siteB(shared), entries: entriesOf(readFileSync(file)), dir: shared };
  }
  const zipOf = (entries: Record<string, string>) => zipSync(Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, strToU8(v)])));
  async function importBytes(b: TestSite, dir: string, bytes: Uint8Array) {
    const file = join(dir, `bad-${Math.random().toString(36).slice(2)}.agssite`);
    writeFileSync(file, bytes);
    return (await importInto(b, { location: file })).body;
  }
  const err = (message: string) => ({ status: 'error', messages: [message], code: 400 });
  const edit = (entries: Record<string, string>, name: string, f: (v: any) => unknown) => ({
    ...entries,
    [name]: JSON.stringify(f(JSON.parse(entries[name]!))),
  });

  it('rejects each kind of damage with a message naming the entry, and writes nothing', async () => {
    const { b, entries, dir } = await goodEntries();
    const servicesBefore = await b.store.listServices();
    const { 'manifest.json': _m, ...noManifest } = entries;
    const { 'roles.json': _r, ...noRoles } = entries;
    const cases: [Uint8Array, string][] = [
      [strToU8('this is not a zip'), 'The file is not a site export archive: it is not a readable ZIP file.'],
      [zipOf(noManifest), 'The archive has no manifest.json; it is not a rasterflow site export.'],
      [
        zipOf(edit(entries, 'manifest.json', (m) => ({ ...m, product: 'other-gis' }))),
        'manifest.json does not describe a rasterflow site export.',
      ],
      [
        zipOf({ ...entries, 'manifest.json': '{"product":' }),
        expect.stringMatching(/^manifest\.json is not valid JSON \(/) as unknown as string,
      ],
      [
        zipOf(edit(entries, 'manifest.json', (m) => ({ ...m, formatVersion: 2 }))),
        'manifest.json: the archive has format version 2, newer than this server reads (1).',
      ],
      [
        zipOf(edit(entries, 'manifest.json', (m) => ({ ...m, formatVersion: 'one' }))),
        "manifest.json: 'formatVersion' must be a positive integer.",
      ],
      [zipOf(noRoles), 'The archive has no roles.json.'],
      [zipOf({ ...entries, 'users.json': '[{' }), expect.stringMatching(/^users\.json is not valid JSON \(/) as unknown as string],
      [zipOf({ ...entries, 'users.json': '{}' }), 'users.json must hold a JSON array.'],
      [
        zipOf(edit(entries, 'users.json', (u: any[]) => u.map((x, i) => (i === 1 ? { ...x, role: 'superuser' } : x)))),
        "users.json[1]: 'role' must be one of administrator, publisher, user.",
      ],
      [
        zipOf(edit(entries, 'users.json', (u: any[]) => u.map((x, i) => (i === 0 ? { ...x, passwordHash: 'plain' } : x)))),
        "users.json[0]: 'passwordHash' must be a scrypt password hash.",
      ],
      [
        zipOf(edit(entries, 'services.json', (s: any[]) => s.map((x, i) => (i === 2 ? { ...x, type: 'TileServer' } : x)))),
        "services.json[2]: 'type' must be one of GPServer, FeatureServer, ImageServer, MapServer.",
      ],
      [
        zipOf(edit(entries, 'services.json', (s: any[]) => [...s, s[0]])),
        'services.json holds 4 items but manifest.json counts 3; the archive is damaged.',
      ],
      [
        zipOf(
          edit(
            edit(entries, 'services.json', (s: any[]) => [...s, s[0]]),
            'manifest.json',
            (m) => ({ ...m, counts: { ...m.counts, services: 4 } }),
          ),
        ),
        "services.json[3]: 'Imagery/Elevation.ImageServer' appears more than once.",
      ],
      [
        zipOf(edit(entries, 'webhooks.json', (h: any[]) => h.map((x, i) => (i === 0 ? { ...x, service: 'Nope.FeatureServer' } : x)))),
        "webhooks.json[0]: service 'Nope.FeatureServer' is not in services.json.",
      ],
      [
        zipOf(edit(entries, 'roles.json', (r: any[]) => r.map((x) => ({ ...x, privileges: ['root'] })))),
        "roles.json[0]: 'privileges' must be a list of featureLayer, geoprocessing, publishServerLayers.",
      ],
      [
        zipOf(
          edit(
            edit(entries, 'serverObjectExtensions.json', () => [{ name: 'soe' }]),
            'manifest.json',
            (m) => ({ ...m, counts: { ...m.counts, serverObjectExtensions: 1 } }),
          ),
        ),
        'serverObjectExtensions.json is not supported by this server (it has no server object extensions).',
      ],
      [zipOf({ ...entries, 'logSettings.json': '[1]' }), 'logSettings.json must hold a JSON object or null.'],
      [
        zipOf(edit(entries, 'oauthApps.json', (a: any[]) => a.map((x) => ({ ...x, redirectUris: 'x' })))),
        "oauthApps.json[0]: 'redirectUris' must be a list of strings.",
      ],
    ];
    for (const [bytes, message] of cases) expect(await importBytes(b, dir, bytes)).toEqual(err(message));
    expect(await b.store.listServices()).toEqual(servicesBefore);
    // Unknown extra entries are ignored (a later minor addition); the good archive still imports.
    expect(await importBytes(b, dir, zipOf({ ...entries, 'extra.json': '{}' }))).toMatchObject({ status: 'success' });
  });
});

describe('importSite: the archive never restores the old primary administrator', () => {
  it('signing in as the exported site’s primary administrator fails on the restored site', async () => {
    const { file, shared } = await exportedSite();
    const b = await siteB(shared);
    await importInto(b, { location: file });
    expect(await b.store.getUser(PRIMARY)).toBeUndefined();
    expect((await b.store.listUsers()).filter((u) => u.primary).map((u) => u.username)).toEqual(['b-root']);
    // Even a validly signed token naming the old primary administrator is no caller on site B.
    const token = await b.token(PRIMARY, { audience: ADMIN_AUDIENCE });
    const res = await importSiteHandler(b)(adminPost(IMPORT, { location: file }, token));
    expect(await jsonOf(res)).toEqual({ status: 'error', messages: ['Could not decrypt token. Token may not be valid.'], code: 498 });
    // And nothing of the archive holds its password.
    for (const text of Object.values(entriesOf(readFileSync(file)))) expect(text).not.toContain(PRIMARY_PASSWORD);
  });
});

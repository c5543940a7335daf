/**
 * The site store contract (issue 22): ONE suite of behaviours run against the embedded SQLite store
 * and the PostgreSQL store. Every method of SiteStore, single-use grants and locks under concurrency
 * (two store instances on one database, as two servers), lock expiry, and durability across a reopen.
 * The PostgreSQL half starts its own cluster (test/pg-harness.ts) and skips, saying so, only when
 * PostgreSQL is not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../src/core/errors.js';
import type {
  FederatedServerRecord,
  FederationRecord,
  IdentityProviderRecord,
  JobRecord,
  OAuthAppRecord,
  OAuthGrantRecord,
  RoleRecord,
  ServiceRecord,
  SiteStore,
  UserRecord,
  WebhookRecord,
} from '../src/adapters/site.js';
import { serviceKey } from '../src/adapters/site.js';
import type { Clock } from '../src/adapters/tokens.js';
import { openPgStore, PG_MIGRATIONS, redactUrl } from '../src/server/pg-store.js';
import { openSqliteStore } from '../src/server/sqlite-store.js';
import { findPostgres, NO_POSTGRES, startPostgres, type PgServer } from './pg-harness.js';

/** A clock the tests move. */
class TestClock implements Clock {
  t = 1_700_000_000_000;
  now(): number {
    return this.t;
  }
}

/** How a suite gets stores: a fresh location, and stores opened on it (several = several servers). */
interface Backend {
  readonly name: string;
  /** A new empty location (a file or a database). */
  fresh(): Promise<string>;
  open(location: string, clock: Clock): Promise<SiteStore>;
}

const tmp = mkdtempSync(join(tmpdir(), 'rasterflow-contract-'));
let files = 0;
const sqlite: Backend = {
  name: 'SQLite',
  fresh: () => Promise.resolve(join(tmp, `site${++files}.db`)),
  open: (file, clock) => Promise.resolve(openSqliteStore(file, { clock })),
};

const bin = findPostgres();
if (bin === undefined) console.warn(NO_POSTGRES);
let server: PgServer | undefined;
const postgres: Backend = {
  name: 'PostgreSQL',
  fresh: () => server!.createDatabase(),
  open: (url, clock) => openPgStore(url, { clock, poolSize: 5 }),
};

beforeAll(async () => {
  if (bin !== undefined) server = await startPostgres(bin);
}, 60_000);
afterAll(async () => {
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const user = (username: string, extra: Partial<UserRecord> = {}): UserRecord => ({
  username,
  passwordHash: 'scrypt$16384$8$1$c2FsdA$aGFzaA',
  role: 'user',
  roles: [],
  created: 1,
  ...extra,
});
const service = (folder: string, serviceName: string, type: ServiceRecord['type'] = 'ImageServer'): ServiceRecord => ({
  folder,
  serviceName,
  type,
  properties: { path: `/data/${serviceName}.tif`, nested: { a: [1, 2, { b: 'ü' }] } },
  created: 2,
});
const hook = (id: string, svc: string, active = true): WebhookRecord => ({
  id,
  service: svc,
  name: `hook ${id}`,
  changeTypes: ['jobSucceeded'],
  hookUrl: 'https://example.com/h',
  signatureKey: '',
  active,
  created: 3,
});
const grant = (id: string, username: string): OAuthGrantRecord => ({
  id,
  kind: 'code',
  clientId: 'app1',
  username,
  expires: 10,
  redirectUri: 'https://app.example.com/cb',
  codeChallenge: 'x',
  codeChallengeMethod: 'S256',
});
const job = (id: string, status = 'geoJobExecuting'): JobRecord => ({
  id,
  task: 'System/RasterAnalysisTools/ExportTrainingDataforDeepLearning',
  status,
  owner: 'alice',
  inputs: { inputRaster: '/data/a.tif' },
  messages: [{ type: 'geoJobMessageTypeInformative', description: 'Submitted.' }],
  progress: { type: 'step', message: 'Exporting image chips', percent: 40 },
  created: 4,
  updated: 5,
});

for (const backend of [sqlite, postgres]) {
  const skip = backend === postgres && bin === undefined;
  describe.skipIf(skip)(`site store contract: ${backend.name}`, () => {
    /** A fresh store (and its location and clock) for one test. */
    const fresh = async (): Promise<{ store: SiteStore; at: string; clock: TestClock }> => {
      const clock = new TestClock();
      const at = await backend.fresh();
      return { store: await backend.open(at, clock), at, clock };
    };

    it('users: get, list in id order, replace, delete', async () => {
      const { store } = await fresh();
      try {
        expect(await store.getUser('bob')).toBeUndefined();
        expect(await store.listUsers()).toEqual([]);
        await store.putUser(user('bob'));
        await store.putUser(user('Alice', { fullName: 'Alice A', email: 'a@example.com', disabled: true, primary: true, roles: ['r1'] }));
        await store.putUser(user('alice'));
        expect((await store.listUsers()).map((u) => u.username)).toEqual(['Alice', 'alice', 'bob']);
        expect(await store.getUser('Alice')).toEqual(
          user('Alice', { fullName: 'Alice A', email: 'a@example.com', disabled: true, primary: true, roles: ['r1'] }),
        );
        await store.putUser(user('bob', { role: 'publisher' }));
        expect((await store.getUser('bob'))?.role).toBe('publisher');
        expect(await store.listUsers()).toHaveLength(3);
        expect(await store.deleteUser('bob')).toBe(true);
        expect(await store.deleteUser('bob')).toBe(false);
        expect(await store.getUser('bob')).toBeUndefined();
      } finally {
        await store.close();
      }
    });

    it('roles: get, list, replace, delete', async () => {
      const { store } = await fresh();
      try {
        const r: RoleRecord = { rolename: 'analysts', description: 'd', privileges: ['geoprocessing'] };
        await store.putRole(r);
        await store.putRole({ rolename: 'Editors', privileges: [] });
        expect(await store.getRole('analysts')).toEqual(r);
        expect((await store.listRoles()).map((x) => x.rolename)).toEqual(['Editors', 'analysts']);
        await store.putRole({ ...r, privileges: ['featureLayer', 'publishServerLayers'] });
        expect((await store.getRole('analysts'))?.privileges).toEqual(['featureLayer', 'publishServerLayers']);
        expect(await store.deleteRole('analysts')).toBe(true);
        expect(await store.deleteRole('analysts')).toBe(false);
        expect(await store.getRole('nobody')).toBeUndefined();
      } finally {
        await store.close();
      }
    });

    it('services: keyed by folder/name.Type, records read back exactly (key order, nesting, unicode)', async () => {
      const { store } = await fresh();
      try {
        const a = service('', 'dem');
        const b = service('Hydro', 'rivers', 'MapServer');
        await store.putService(a);
        await store.putService(b);
        await store.putService(service('', 'dem', 'MapServer'));
        expect(await store.getService('dem.ImageServer')).toEqual(a);
        expect(JSON.stringify(await store.getService('Hydro/rivers.MapServer'))).toBe(JSON.stringify(b));
        expect((await store.listServices()).map(serviceKey)).toEqual(['Hydro/rivers.MapServer', 'dem.ImageServer', 'dem.MapServer']);
        await store.putService({ ...a, description: 'changed' });
        expect((await store.getService('dem.ImageServer'))?.description).toBe('changed');
        expect(await store.getService('dem.GPServer')).toBeUndefined();
      } finally {
        await store.close();
      }
    });

    it('webhooks: listed per service or all, deleteService takes its webhooks along, setWebhooksActive counts', async () => {
      const { store } = await fresh();
      try {
        await store.putService(service('', 'dem'));
        await store.putService(service('', 'other'));
        await store.putWebhook(hook('h2', 'dem.ImageServer'));
        await store.putWebhook(hook('h1', 'dem.ImageServer', false));
        await store.putWebhook(hook('h3', 'other.ImageServer'));
        expect((await store.listWebhooks('dem.ImageServer')).map((h) => h.id)).toEqual(['h1', 'h2']);
        expect((await store.listWebhooks()).map((h) => h.id)).toEqual(['h1', 'h2', 'h3']);
        expect(await store.setWebhooksActive('dem.ImageServer', false)).toBe(2);
        expect((await store.listWebhooks('dem.ImageServer')).every((h) => !h.active)).toBe(true);
        expect(await store.setWebhooksActive('dem.ImageServer', true)).toBe(2);
        expect(await store.listWebhooks('dem.ImageServer')).toEqual([hook('h1', 'dem.ImageServer'), hook('h2', 'dem.ImageServer')]);
        expect((await store.listWebhooks('other.ImageServer'))[0]?.active).toBe(true);
        expect(await store.setWebhooksActive('none.ImageServer', false)).toBe(0);
        // A webhook moved to another service (put with another `service`) is listed under the new one only.
        await store.putWebhook(hook('h2', 'other.ImageServer'));
        expect((await store.listWebhooks('dem.ImageServer')).map((h) => h.id)).toEqual(['h1']);
        expect(await store.deleteWebhook('h1')).toBe(true);
        expect(await store.deleteWebhook('h1')).toBe(false);
        await store.putWebhook(hook('h4', 'dem.ImageServer'));
        expect(await store.deleteService('dem.ImageServer')).toBe(true);
        expect(await store.listWebhooks('dem.ImageServer')).toEqual([]);
        expect((await store.listWebhooks()).map((h) => h.id)).toEqual(['h2', 'h3']);
        expect(await store.deleteService('dem.ImageServer')).toBe(false);
        expect(await store.getService('dem.ImageServer')).toBeUndefined();
      } finally {
        await store.close();
      }
    });

    it('federations, identity providers and federated servers: listed per organization, replaced, deleted', async () => {
      const { store } = await fresh();
      try {
        const f: FederationRecord = {
          id: 'f1',
          portalId: 'p1',
          name: 'fed',
          discoveryServiceUrl: 'https://d',
          metadataServiceUrl: 'https://m',
          entityId: 'e',
          settings: { x: 1 },
          created: 1,
        };
        await store.putFederation(f);
        await store.putFederation({ ...f, id: 'f0', portalId: 'p2' });
        expect(await store.listFederations('p1')).toEqual([f]);
        expect((await store.listFederations()).map((x) => x.id)).toEqual(['f0', 'f1']);
        expect(await store.deleteFederation('f1')).toBe(true);
        expect(await store.deleteFederation('f1')).toBe(false);

        const i: IdentityProviderRecord = { id: 'i1', portalId: 'p1', name: 'idp', metadataUrl: 'https://md', created: 1 };
        await store.putIdentityProvider(i);
        await store.putIdentityProvider({ ...i, id: 'i2', portalId: 'p2' });
        expect(await store.listIdentityProviders('p1')).toEqual([i]);
        expect(await store.listIdentityProviders()).toHaveLength(2);
        expect(await store.deleteIdentityProvider('i2')).toBe(true);
        expect(await store.listIdentityProviders('p2')).toEqual([]);

        const s: FederatedServerRecord = { id: 's1', url: 'https://gis.example.com/server', name: 'gis' };
        await store.putFederatedServer(s);
        await store.putFederatedServer({ ...s, name: 'renamed' });
        expect(await store.listFederatedServers()).toEqual([{ ...s, name: 'renamed' }]);
        expect(await store.deleteFederatedServer('s1')).toBe(true);
        expect(await store.deleteFederatedServer('s1')).toBe(false);
      } finally {
        await store.close();
      }
    });

    it('OAuth apps and grants: takeGrant is single-use, deleteGrantsOf removes one user’s grants only', async () => {
      const { store } = await fresh();
      try {
        const app: OAuthAppRecord = {
          clientId: 'app1',
          secretHash: 'h',
          name: 'App',
          redirectUris: ['https://a/cb'],
          owner: 'bob',
          created: 1,
        };
        await store.putOAuthApp(app);
        await store.putOAuthApp({ ...app, clientId: 'app0' });
        expect(await store.getOAuthApp('app1')).toEqual(app);
        expect((await store.listOAuthApps()).map((a) => a.clientId)).toEqual(['app0', 'app1']);
        expect(await store.deleteOAuthApp('app0')).toBe(true);
        expect(await store.deleteOAuthApp('app0')).toBe(false);

        await store.putGrant(grant('g1', 'bob'));
        await store.putGrant(grant('g2', 'bob'));
        await store.putGrant({ ...grant('g3', 'carol'), kind: 'refresh' });
        expect(await store.takeGrant('g1')).toEqual(grant('g1', 'bob'));
        expect(await store.takeGrant('g1')).toBeUndefined();
        expect(await store.deleteGrantsOf('bob')).toBe(1);
        expect(await store.takeGrant('g2')).toBeUndefined();
        expect((await store.takeGrant('g3'))?.kind).toBe('refresh');
        expect(await store.deleteGrantsOf('nobody')).toBe(0);
      } finally {
        await store.close();
      }
    });

    it('jobs: put replaces, listed in id order', async () => {
      const { store } = await fresh();
      try {
        await store.putJob(job('j2'));
        await store.putJob(job('j1', 'geoJobWaiting'));
        expect(await store.getJob('j2')).toEqual(job('j2'));
        const { progress: _p, ...done } = job('j2', 'geoJobSucceeded');
        await store.putJob({ ...done, results: { outLocation: { uri: '/out' } } });
        expect(await store.getJob('j2')).toEqual({ ...done, results: { outLocation: { uri: '/out' } } });
        expect((await store.listJobs()).map((j) => [j.id, j.status])).toEqual([
          ['j1', 'geoJobWaiting'],
          ['j2', 'geoJobSucceeded'],
        ]);
        expect(await store.getJob('nope')).toBeUndefined();
      } finally {
        await store.close();
      }
    });

    it('settings: any JSON value by key, replaced', async () => {
      const { store } = await fresh();
      try {
        expect(await store.getSetting('k')).toBeUndefined();
        await store.putSetting('k', { keys: [{ kid: 'a' }], n: 1.5, s: 'é', t: true, z: null });
        expect(await store.getSetting('k')).toEqual({ keys: [{ kid: 'a' }], n: 1.5, s: 'é', t: true, z: null });
        await store.putSetting('k', 'text');
        expect(await store.getSetting('k')).toBe('text');
        await store.putSetting('n', 42);
        expect(await store.getSetting<number>('n')).toBe(42);
      } finally {
        await store.close();
      }
    });

    it('locks: held until released or expired, renewable by the holder, released only by the holder', async () => {
      const { store, clock } = await fresh();
      try {
        expect(await store.lockHolder('L')).toBeUndefined();
        expect(await store.acquireLock('L', 'a', 1000)).toBe(true);
        expect(await store.lockHolder('L')).toBe('a');
        expect(await store.acquireLock('L', 'b', 1000)).toBe(false);
        clock.t += 600;
        expect(await store.acquireLock('L', 'a', 1000)).toBe(true); // renewed: now expires at +1600
        clock.t += 600;
        expect(await store.acquireLock('L', 'b', 1000)).toBe(false);
        await store.releaseLock('L', 'b'); // not the holder: nothing happens
        expect(await store.lockHolder('L')).toBe('a');
        clock.t += 400; // exactly at expiry: gone
        expect(await store.lockHolder('L')).toBeUndefined();
        expect(await store.acquireLock('L', 'b', 1000)).toBe(true);
        expect(await store.lockHolder('L')).toBe('b');
        await store.releaseLock('L', 'b');
        expect(await store.lockHolder('L')).toBeUndefined();
        expect(await store.acquireLock('L', 'a', 1000)).toBe(true);
        expect(await store.acquireLock('M', 'b', 1000)).toBe(true); // another name is another lock
      } finally {
        await store.close();
      }
    });

    it('two stores on one site (two servers): writes are seen at once, one takeGrant wins, one acquireLock wins', async () => {
      const clock = new TestClock();
      const at = await backend.fresh();
      const a = await backend.open(at, clock);
      const b = await backend.open(at, clock);
      try {
        await a.putUser(user('bob'));
        expect(await b.getUser('bob')).toEqual(user('bob'));
        await b.putService(service('', 'dem'));
        expect(await a.listServices()).toHaveLength(1);

        for (let round = 0; round < 5; round++) {
          await a.putGrant(grant(`race${round}`, 'bob'));
          const taken = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b).takeGrant(`race${round}`)));
          expect(taken.filter((g) => g !== undefined)).toHaveLength(1);
        }

        for (let round = 0; round < 5; round++) {
          const name = `lock${round}`;
          const got = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b).acquireLock(name, `holder${i}`, 10_000)));
          expect(got.filter(Boolean)).toHaveLength(1);
          const winner = `holder${got.indexOf(true)}`;
          expect(await a.lockHolder(name)).toBe(winner);
          expect(await b.lockHolder(name)).toBe(winner);
        }

        // An expired lock raced for by many: still exactly one winner.
        clock.t += 10_000;
        const got = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b).acquireLock('lock0', `late${i}`, 10_000)));
        expect(got.filter(Boolean)).toHaveLength(1);

        // setWebhooksActive from both at once: every hook ends in one of the two states, none is lost.
        for (let i = 0; i < 6; i++) await a.putWebhook(hook(`w${i}`, 'dem.ImageServer'));
        const counts = await Promise.all([a.setWebhooksActive('dem.ImageServer', false), b.setWebhooksActive('dem.ImageServer', false)]);
        expect(counts).toEqual([6, 6]);
        const hooks = await b.listWebhooks('dem.ImageServer');
        expect(hooks).toHaveLength(6);
        expect(hooks.every((h) => !h.active)).toBe(true);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('durable: everything written is there after the store is closed and opened again', async () => {
      const clock = new TestClock();
      const at = await backend.fresh();
      const first = await backend.open(at, clock);
      await first.putUser(user('bob'));
      await first.putService(service('', 'dem'));
      await first.putWebhook(hook('h1', 'dem.ImageServer'));
      await first.putJob(job('j1'));
      await first.putGrant(grant('g1', 'bob'));
      await first.putSetting('signingKeys', { keys: [{ kid: 'k' }] });
      expect(await first.acquireLock('exportSite', 'me', 60_000)).toBe(true);
      await first.close();
      const again = await backend.open(at, clock);
      try {
        expect(await again.getUser('bob')).toEqual(user('bob'));
        expect(await again.getService('dem.ImageServer')).toEqual(service('', 'dem'));
        expect(await again.listWebhooks('dem.ImageServer')).toEqual([hook('h1', 'dem.ImageServer')]);
        expect(await again.getJob('j1')).toEqual(job('j1'));
        expect(await again.takeGrant('g1')).toEqual(grant('g1', 'bob'));
        expect(await again.getSetting('signingKeys')).toEqual({ keys: [{ kid: 'k' }] });
        expect(await again.lockHolder('exportSite')).toBe('me');
      } finally {
        await again.close();
      }
    });

    it('methods of a closed store reject (no hang)', async () => {
      const { store } = await fresh();
      await store.close();
      await expect(store.getUser('x')).rejects.toThrow();
      await expect(store.putSetting('x', 1)).rejects.toThrow();
    });
  });
}

describe.skipIf(bin === undefined)('PostgreSQL store: migrations and connection errors', () => {
  it('servers starting at once on an empty database migrate it once (advisory lock, schema_migrations)', async () => {
    const url = await server!.createDatabase();
    const stores = await Promise.all(Array.from({ length: 6 }, () => openPgStore(url, { poolSize: 2 })));
    try {
      for (const s of stores) expect(await s.schemaVersion()).toBe(PG_MIGRATIONS.length);
      const { rows } = await stores[0]!.pool.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(PG_MIGRATIONS.map((_, i) => i + 1));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    // A later start applies nothing again.
    const again = await openPgStore(url);
    try {
      const { rows } = await again.pool.query('SELECT count(*)::int AS n FROM schema_migrations');
      expect(rows[0]).toEqual({ n: PG_MIGRATIONS.length });
    } finally {
      await again.close();
    }
  });

  it('refuses a database migrated by a newer rasterflow, naming --store', async () => {
    const url = await server!.createDatabase();
    const s = await openPgStore(url);
    await s.pool.query('INSERT INTO schema_migrations (version) VALUES ($1)', [PG_MIGRATIONS.length + 1]);
    await s.close();
    await expect(openPgStore(url)).rejects.toThrow(/--store .*schema version 3, newer than this rasterflow \(2\)/);
  });

  it('changes of cached kinds bump their counter; jobs and grants do not', async () => {
    const url = await server!.createDatabase();
    const s = await openPgStore(url);
    try {
      const before = await s.changeVersions();
      await s.putUser(user('bob'));
      await s.putService(service('', 'dem'));
      await s.deleteService('dem.ImageServer');
      await s.putJob(job('j1'));
      await s.putGrant(grant('g', 'bob'));
      await s.takeGrant('g');
      const after = await s.changeVersions();
      expect((after.get('user') ?? 0) - (before.get('user') ?? 0)).toBe(1);
      expect((after.get('service') ?? 0) - (before.get('service') ?? 0)).toBe(2);
      expect(after.has('job')).toBe(false);
      expect(after.has('grant')).toBe(false);
    } finally {
      await s.close();
    }
  });

  it('a bad URL or an unreachable database is an error naming --store, never showing the password', async () => {
    const errorOf = async (url: string): Promise<EngineError> => {
      try {
        await openPgStore(url, { connectTimeoutMs: 3000 });
      } catch (e) {
        expect(e).toBeInstanceOf(EngineError);
        return e as EngineError;
      }
      throw new Error('expected an error');
    };
    const refused = await errorOf(`postgres://bob:hunter2@127.0.0.1:1/site`);
    expect(refused.code).toBe('IO_ERROR');
    expect(refused.path).toBe('store');
    expect(refused.message).toMatch(/^--store postgres:\/\/bob:\*\*\*@127\.0\.0\.1:1\/site: .*connection refused/);
    const noDb = await errorOf(`postgres://postgres:hunter2@127.0.0.1:${server!.port}/missing_db`);
    expect(noDb.message).toMatch(/database does not exist/);
    const badRole = await errorOf(`postgres://nobody:hunter2@127.0.0.1:${server!.port}/postgres`);
    expect(badRole.message).toMatch(/does not accept this user/);
    const notPg = await errorOf('mysql://bob:hunter2@db/site');
    expect(notPg.code).toBe('INVALID_ARGUMENT');
    expect(notPg.message).toMatch(/not a postgres:\/\/ URL/);
    expect((await errorOf('postgres://bob:hunter2@db.example.com')).message).toMatch(/names no database/);
    for (const e of [refused, noDb, badRole, notPg]) expect(e.message).not.toContain('hunter2');
    expect(redactUrl('postgres://u:p%40ss@h:5/d?sslpassword=x&sslmode=require')).toBe(
      'postgres://u:***@h:5/d?sslpassword=***&sslmode=require',
    );
  });

  it('durable against the server itself: a committed write survives a PostgreSQL restart of the site database', async () => {
    // Reopen through a brand-new pool after every connection was dropped (pg_terminate_backend).
    const url = await server!.createDatabase();
    const s = await openPgStore(url);
    await s.putUser(user('dora'));
    const admin = new pg.Client({ connectionString: server!.url() });
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
        new URL(url).pathname.slice(1),
      ]);
    } finally {
      await admin.end();
    }
    // The pool notices its dead connections and makes new ones.
    let got: UserRecord | undefined;
    for (let i = 0; i < 3 && got === undefined; i++) got = await s.getUser('dora').catch(() => undefined);
    expect(got).toEqual(user('dora'));
    await s.close();
  });
});

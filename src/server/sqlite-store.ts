/**
 * The embedded site store (issue 17): SQLite through better-sqlite3, WAL journal, synchronous=FULL,
 * so a write whose promise resolved survives a kill -9 (and a power cut). Records are JSON documents
 * in one table keyed by (kind, id), with a group column for the lookups the interface needs (the
 * webhooks of a service, the federations of an organization, the grants of a user). Schema versions
 * are `PRAGMA user_version` migrations.
 */
import Database from 'better-sqlite3';
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
} from '../adapters/site.js';
import { serviceKey } from '../adapters/site.js';
import type { Clock } from '../adapters/tokens.js';
import { systemClock } from '../adapters/tokens.js';

/** Each entry upgrades the schema from version i to i + 1. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE docs (kind TEXT NOT NULL, id TEXT NOT NULL, grp TEXT NOT NULL DEFAULT '', json TEXT NOT NULL,
                      PRIMARY KEY (kind, id)) WITHOUT ROWID;
   CREATE INDEX docs_grp ON docs (kind, grp);
   CREATE TABLE locks (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires INTEGER NOT NULL);`,
];

type Kind = 'user' | 'role' | 'service' | 'webhook' | 'federation' | 'idp' | 'server' | 'app' | 'grant' | 'job' | 'setting';

export interface SqliteStoreOptions {
  readonly clock?: Clock;
}

/** Opens (creating and migrating if needed) the store in `file`; `:memory:` for a throw-away one. */
export function openSqliteStore(file: string, options: SqliteStoreOptions = {}): SiteStore & { readonly db: Database.Database } {
  const clock = options.clock ?? systemClock;
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  migrate(db);

  const sGet = db.prepare<[Kind, string], { json: string }>('SELECT json FROM docs WHERE kind = ? AND id = ?');
  const sList = db.prepare<[Kind], { json: string }>('SELECT json FROM docs WHERE kind = ? ORDER BY id');
  const sListGrp = db.prepare<[Kind, string], { json: string }>('SELECT json FROM docs WHERE kind = ? AND grp = ? ORDER BY id');
  const sPut = db.prepare<[Kind, string, string, string]>('INSERT OR REPLACE INTO docs (kind, id, grp, json) VALUES (?, ?, ?, ?)');
  const sDel = db.prepare<[Kind, string]>('DELETE FROM docs WHERE kind = ? AND id = ?');
  const sDelGrp = db.prepare<[Kind, string]>('DELETE FROM docs WHERE kind = ? AND grp = ?');
  const sLock = db.prepare<[string], { holder: string; expires: number }>('SELECT holder, expires FROM locks WHERE name = ?');
  const sLockPut = db.prepare<[string, string, number]>('INSERT OR REPLACE INTO locks (name, holder, expires) VALUES (?, ?, ?)');
  const sLockDel = db.prepare<[string, string]>('DELETE FROM locks WHERE name = ? AND holder = ?');

  const get = <T>(kind: Kind, id: string): T | undefined => {
    const row = sGet.get(kind, id);
    return row ? (JSON.parse(row.json) as T) : undefined;
  };
  const list = <T>(kind: Kind, grp?: string): T[] =>
    (grp === undefined ? sList.all(kind) : sListGrp.all(kind, grp)).map((r) => JSON.parse(r.json) as T);
  const put = (kind: Kind, id: string, value: unknown, grp = ''): void => void sPut.run(kind, id, grp, JSON.stringify(value));
  const del = (kind: Kind, id: string): boolean => sDel.run(kind, id).changes > 0;

  const deleteService = db.transaction((key: string): boolean => {
    sDelGrp.run('webhook', key);
    return del('service', key);
  });
  const setWebhooksActive = db.transaction((service: string, active: boolean): number => {
    const hooks = list<WebhookRecord>('webhook', service);
    for (const h of hooks) put('webhook', h.id, { ...h, active }, service);
    return hooks.length;
  });
  const takeGrant = db.transaction((id: string): OAuthGrantRecord | undefined => {
    const g = get<OAuthGrantRecord>('grant', id);
    if (g) del('grant', id);
    return g;
  });
  const acquireLock = db.transaction((name: string, holder: string, ttlMs: number): boolean => {
    const now = clock.now();
    const cur = sLock.get(name);
    if (cur && cur.holder !== holder && cur.expires > now) return false;
    sLockPut.run(name, holder, now + ttlMs);
    return true;
  });

  // Every method is synchronous underneath; `async` turns a thrown SQLite error into a rejection.
  return {
    db,
    getUser: async (u) => get<UserRecord>('user', u),
    listUsers: async () => list<UserRecord>('user'),
    putUser: async (u) => put('user', u.username, u),
    deleteUser: async (u) => del('user', u),

    getRole: async (r) => get<RoleRecord>('role', r),
    listRoles: async () => list<RoleRecord>('role'),
    putRole: async (r) => put('role', r.rolename, r),
    deleteRole: async (r) => del('role', r),

    getService: async (k) => get<ServiceRecord>('service', k),
    listServices: async () => list<ServiceRecord>('service'),
    putService: async (s) => put('service', serviceKey(s), s),
    deleteService: async (k) => deleteService(k),

    listWebhooks: async (service) => list<WebhookRecord>('webhook', service),
    putWebhook: async (h) => put('webhook', h.id, h, h.service),
    deleteWebhook: async (id) => del('webhook', id),
    setWebhooksActive: async (service, active) => setWebhooksActive(service, active),

    listFederations: async (portalId) => list<FederationRecord>('federation', portalId),
    putFederation: async (f) => put('federation', f.id, f, f.portalId),
    deleteFederation: async (id) => del('federation', id),
    listIdentityProviders: async (portalId) => list<IdentityProviderRecord>('idp', portalId),
    putIdentityProvider: async (i) => put('idp', i.id, i, i.portalId),
    deleteIdentityProvider: async (id) => del('idp', id),
    listFederatedServers: async () => list<FederatedServerRecord>('server'),
    putFederatedServer: async (s) => put('server', s.id, s),
    deleteFederatedServer: async (id) => del('server', id),

    getOAuthApp: async (id) => get<OAuthAppRecord>('app', id),
    listOAuthApps: async () => list<OAuthAppRecord>('app'),
    putOAuthApp: async (a) => put('app', a.clientId, a),
    deleteOAuthApp: async (id) => del('app', id),
    putGrant: async (g) => put('grant', g.id, g, g.username),
    takeGrant: async (id) => takeGrant(id),
    deleteGrantsOf: async (u) => sDelGrp.run('grant', u).changes,

    getJob: async (id) => get<JobRecord>('job', id),
    listJobs: async () => list<JobRecord>('job'),
    putJob: async (j) => put('job', j.id, j),

    getSetting: async <T>(key: string) => get<T>('setting', key),
    putSetting: async (key, value) => put('setting', key, value),

    acquireLock: async (name, holder, ttlMs) => acquireLock(name, holder, ttlMs),
    releaseLock: async (name, holder) => void sLockDel.run(name, holder),
    lockHolder: async (name) => {
      const cur = sLock.get(name);
      return cur && cur.expires > clock.now() ? cur.holder : undefined;
    },

    close: async () => void db.close(),
  };
}

function migrate(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > MIGRATIONS.length) {
    throw new Error(`the site database is schema version ${version}, newer than this rasterflow (${MIGRATIONS.length})`);
  }
  db.transaction(() => {
    for (let v = version; v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  })();
}

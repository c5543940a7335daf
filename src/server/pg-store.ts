/**
 * The networked site store (issue 22): PostgreSQL through `pg`, for several `rasterflow serve`
 * processes sharing one site (`serve --store postgres://...`). It behaves exactly as the embedded
 * SQLite store (sqlite-store.ts): the same records as JSON documents keyed by (kind, id) with a group
 * column, every method one statement or one transaction, a resolved write committed (PostgreSQL's
 * `synchronous_commit`, on by default, makes it durable).
 *
 * - `takeGrant` is one `DELETE ... RETURNING`: of two servers taking the same code, one gets it.
 * - `acquireLock` is one UPSERT whose update only happens when the caller already holds the lock or
 *   it has expired, so it is atomic across processes; expiry is judged with the caller's clock, as in
 *   the SQLite store (the servers of a site keep their clocks in step, as token expiry already needs).
 * - Migrations are numbered and recorded in `schema_migrations`; each missing one is applied once,
 *   in one transaction holding an advisory lock, so two servers starting at once never race.
 * - A change of the cached kinds of records (users, roles, services, webhooks, settings, ...) bumps a
 *   per-kind counter in `site_versions` in the same transaction (a trigger), which other servers read
 *   to know that their in-memory state is stale (site-events.ts). Jobs and OAuth grants are not
 *   cached and bump nothing.
 */
import pg from 'pg';
import { EngineError } from '../core/errors.js';
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

/**
 * Each entry upgrades the schema from version i to i + 1 (recorded as i + 1 in schema_migrations).
 * Decision: ids compare with the "C" collation, so lists come back in the same (byte) order as
 * SQLite's, whatever the database's locale; documents are `text` (not jsonb) so a record reads back
 * with its keys in the order it was written, as the registries compare records as JSON text.
 */
export const PG_MIGRATIONS: readonly string[] = [
  `CREATE TABLE docs (kind text NOT NULL, id text COLLATE "C" NOT NULL, grp text COLLATE "C" NOT NULL DEFAULT '', json text NOT NULL,
                      PRIMARY KEY (kind, id));
   CREATE INDEX docs_grp ON docs (kind, grp);
   CREATE TABLE locks (name text PRIMARY KEY, holder text NOT NULL, expires bigint NOT NULL);`,
  `CREATE TABLE site_versions (kind text PRIMARY KEY, version bigint NOT NULL);
   CREATE FUNCTION rasterflow_bump_site_version() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE k text;
   BEGIN
     IF TG_OP = 'DELETE' THEN k := OLD.kind; ELSE k := NEW.kind; END IF;
     IF k IN ('job', 'grant') THEN RETURN NULL; END IF;
     INSERT INTO site_versions AS v (kind, version) VALUES (k, 1) ON CONFLICT (kind) DO UPDATE SET version = v.version + 1;
     RETURN NULL;
   END $$;
   CREATE TRIGGER docs_site_version AFTER INSERT OR UPDATE OR DELETE ON docs FOR EACH ROW EXECUTE FUNCTION rasterflow_bump_site_version();`,
];

/** The advisory lock key migrations hold (any constant; "rasterfl" in ASCII). */
const MIGRATION_LOCK = 0x7261737465726666n;

type Kind = 'user' | 'role' | 'service' | 'webhook' | 'federation' | 'idp' | 'server' | 'app' | 'grant' | 'job' | 'setting';

export interface PgStoreOptions {
  readonly clock?: Clock;
  /**
   * Connections the store keeps at most (default 10). Decision: 10, pg's default: a request makes one
   * short query at a time, so 10 serve hundreds of requests a second; 100 servers x 10 stay within a
   * PostgreSQL raised to max_connections 1000 or behind PgBouncer.
   */
  readonly poolSize?: number;
  /** How long to wait for a connection (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Told about connection errors of idle pooled connections (default: ignored, the pool reconnects). */
  readonly onError?: (error: Error) => void;
}

/** The PostgreSQL store: SiteStore plus the change counters other servers watch. */
export interface PgSiteStore extends SiteStore {
  readonly kind: 'postgres';
  /** The URL with its password hidden (for messages). */
  readonly url: string;
  readonly pool: pg.Pool;
  /** Counter per kind of record, bumped by every change of that kind (site-events.ts). */
  changeVersions(): Promise<Map<string, number>>;
  /** The schema version the database is at. */
  schemaVersion(): Promise<number>;
}

/** Whether `url` names a PostgreSQL store (`postgres://` or `postgresql://`). */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url.trim());

/** `postgres://user:secret@host/db` -> `postgres://user:***@host/db`; never shows a password. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const k of [...u.searchParams.keys()]) if (/pass|secret|key/i.test(k)) u.searchParams.set(k, '***');
    return u.toString();
  } catch {
    // Not a URL: hide whatever sits between '://' and '@'.
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}

const badUrl = (url: string, why: string): EngineError =>
  new EngineError('INVALID_ARGUMENT', `--store ${redactUrl(url)}: ${why}; expected postgres://user:password@host:5432/database`, {
    path: 'store',
  });

/** Checks a store URL's form (scheme, host, database) without connecting. */
export function checkPgUrl(url: string): void {
  if (!isPostgresUrl(url)) throw badUrl(url, 'not a postgres:// URL');
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw badUrl(url, 'not a valid URL');
  }
  const socketHost = u.searchParams.get('host');
  if (u.hostname === '' && !socketHost) throw badUrl(url, 'the URL names no host');
  if (u.pathname.replace(/^\//, '') === '') throw badUrl(url, 'the URL names no database');
  if (u.port !== '' && !(Number(u.port) >= 1 && Number(u.port) <= 65535)) throw badUrl(url, 'the port must be 1 to 65535');
}

/** Why a connection failed, in words an operator acts on. */
function unreachable(url: string, e: unknown): EngineError {
  const err = e as { code?: string; message?: string };
  const code = err?.code ?? '';
  const why =
    code === 'ECONNREFUSED'
      ? 'connection refused (is PostgreSQL running and listening there?)'
      : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? 'the host name does not resolve'
        : code === 'ETIMEDOUT' || /timeout/i.test(err?.message ?? '')
          ? 'the connection timed out'
          : code === '28P01'
            ? 'the server refused the password'
            : code === '28000'
              ? 'the server does not accept this user from here (no such role, or not allowed by pg_hba.conf)'
              : code === '3D000'
                ? 'the database does not exist (create it first: createdb)'
                : code === '42501'
                  ? 'the user may not create the store tables (grant CREATE on the database, or run the first start as its owner)'
                  : (err?.message ?? String(e)).replaceAll(/:\/\/[^@\s/]*@/g, '://***@');
  return new EngineError('IO_ERROR', `--store ${redactUrl(url)}: cannot use the PostgreSQL site store: ${why}`, {
    path: 'store',
    cause: e,
  });
}

/** Applies the missing migrations, once, under an advisory lock; answers the schema version. */
async function migrate(pool: pg.Pool, url: string): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK.toString()]);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
      const version = rows[0]?.v ?? 0;
      if (version > PG_MIGRATIONS.length) {
        throw new EngineError(
          'INVALID_ARGUMENT',
          `--store ${redactUrl(url)}: the site database is schema version ${version}, newer than this rasterflow (${PG_MIGRATIONS.length}); upgrade rasterflow`,
          { path: 'store' },
        );
      }
      for (let v = version; v < PG_MIGRATIONS.length; v++) {
        await client.query(PG_MIGRATIONS[v]!);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v + 1]);
      }
      await client.query('COMMIT');
      return PG_MIGRATIONS.length;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  } finally {
    client.release();
  }
}

/**
 * Connects to the store at `url`, creating and migrating its tables when needed. Rejects with an
 * error naming `--store` (the password hidden) when the URL is wrong or the database unreachable.
 */
export async function openPgStore(url: string, options: PgStoreOptions = {}): Promise<PgSiteStore> {
  checkPgUrl(url);
  const clock = options.clock ?? systemClock;
  const shown = redactUrl(url);
  const pool = new pg.Pool({
    connectionString: url.trim(),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    application_name: 'rasterflow',
  });
  // An idle connection the server dropped is an 'error' event: without a listener it would end the process.
  pool.on('error', (e) => options.onError?.(e));
  try {
    await migrate(pool, url);
  } catch (e) {
    await pool.end().catch(() => undefined);
    throw e instanceof EngineError ? e : unreachable(url, e);
  }

  const q = async <R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> => pool.query<R>(sql, params);
  /** Runs `fn` in one transaction on one connection. */
  const tx = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      try {
        const out = await fn(client);
        await client.query('COMMIT');
        return out;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw e;
      }
    } finally {
      client.release();
    }
  };

  const get = async <T>(kind: Kind, id: string): Promise<T | undefined> => {
    const { rows } = await q<{ json: string }>('SELECT json FROM docs WHERE kind = $1 AND id = $2', [kind, id]);
    return rows[0] ? (JSON.parse(rows[0].json) as T) : undefined;
  };
  const list = async <T>(kind: Kind, grp?: string): Promise<T[]> => {
    const { rows } =
      grp === undefined
        ? await q<{ json: string }>('SELECT json FROM docs WHERE kind = $1 ORDER BY id', [kind])
        : await q<{ json: string }>('SELECT json FROM docs WHERE kind = $1 AND grp = $2 ORDER BY id', [kind, grp]);
    return rows.map((r) => JSON.parse(r.json) as T);
  };
  const PUT =
    'INSERT INTO docs (kind, id, grp, json) VALUES ($1, $2, $3, $4) ON CONFLICT (kind, id) DO UPDATE SET grp = EXCLUDED.grp, json = EXCLUDED.json';
  const put = async (kind: Kind, id: string, value: unknown, grp = ''): Promise<void> => {
    await q(PUT, [kind, id, grp, JSON.stringify(value)]);
  };
  const del = async (kind: Kind, id: string): Promise<boolean> =>
    ((await q('DELETE FROM docs WHERE kind = $1 AND id = $2', [kind, id])).rowCount ?? 0) > 0;

  let closed: Promise<void> | undefined;
  return {
    kind: 'postgres',
    url: shown,
    pool,

    getUser: (u) => get<UserRecord>('user', u),
    listUsers: () => list<UserRecord>('user'),
    putUser: (u) => put('user', u.username, u),
    deleteUser: (u) => del('user', u),

    getRole: (r) => get<RoleRecord>('role', r),
    listRoles: () => list<RoleRecord>('role'),
    putRole: (r) => put('role', r.rolename, r),
    deleteRole: (r) => del('role', r),

    getService: (k) => get<ServiceRecord>('service', k),
    listServices: () => list<ServiceRecord>('service'),
    putService: (s) => put('service', serviceKey(s), s),
    // One statement: the service and its webhooks go together or not at all.
    deleteService: async (k) => {
      const { rows } = await q<{ kind: string }>(
        `DELETE FROM docs WHERE (kind = 'webhook' AND grp = $1) OR (kind = 'service' AND id = $1) RETURNING kind`,
        [k],
      );
      return rows.some((r) => r.kind === 'service');
    },

    listWebhooks: (service) => list<WebhookRecord>('webhook', service),
    putWebhook: (h) => put('webhook', h.id, h, h.service),
    deleteWebhook: (id) => del('webhook', id),
    setWebhooksActive: (service, active) =>
      tx(async (c) => {
        const { rows } = await c.query<{ id: string; json: string }>(
          `SELECT id, json FROM docs WHERE kind = 'webhook' AND grp = $1 ORDER BY id FOR UPDATE`,
          [service],
        );
        for (const r of rows) {
          const h = JSON.parse(r.json) as WebhookRecord;
          await c.query(PUT, ['webhook', r.id, service, JSON.stringify({ ...h, active })]);
        }
        return rows.length;
      }),

    listFederations: (portalId) => list<FederationRecord>('federation', portalId),
    putFederation: (f) => put('federation', f.id, f, f.portalId),
    deleteFederation: (id) => del('federation', id),
    listIdentityProviders: (portalId) => list<IdentityProviderRecord>('idp', portalId),
    putIdentityProvider: (i) => put('idp', i.id, i, i.portalId),
    deleteIdentityProvider: (id) => del('idp', id),
    listFederatedServers: () => list<FederatedServerRecord>('server'),
    putFederatedServer: (s) => put('server', s.id, s),
    deleteFederatedServer: (id) => del('server', id),

    getOAuthApp: (id) => get<OAuthAppRecord>('app', id),
    listOAuthApps: () => list<OAuthAppRecord>('app'),
    putOAuthApp: (a) => put('app', a.clientId, a),
    deleteOAuthApp: (id) => del('app', id),
    putGrant: (g) => put('grant', g.id, g, g.username),
    takeGrant: async (id) => {
      const { rows } = await q<{ json: string }>(`DELETE FROM docs WHERE kind = 'grant' AND id = $1 RETURNING json`, [id]);
      return rows[0] ? (JSON.parse(rows[0].json) as OAuthGrantRecord) : undefined;
    },
    deleteGrantsOf: async (u) => (await q(`DELETE FROM docs WHERE kind = 'grant' AND grp = $1`, [u])).rowCount ?? 0,

    getJob: (id) => get<JobRecord>('job', id),
    listJobs: () => list<JobRecord>('job'),
    putJob: (j) => put('job', j.id, j),

    getSetting: <T>(key: string) => get<T>('setting', key),
    putSetting: (key, value) => put('setting', key, value),

    acquireLock: async (name, holder, ttlMs) => {
      const now = clock.now();
      const { rows } = await q(
        `INSERT INTO locks AS l (name, holder, expires) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires = EXCLUDED.expires
         WHERE l.holder = EXCLUDED.holder OR l.expires <= $4
         RETURNING holder`,
        [name, holder, now + ttlMs, now],
      );
      return rows.length > 0;
    },
    releaseLock: async (name, holder) => {
      await q('DELETE FROM locks WHERE name = $1 AND holder = $2', [name, holder]);
    },
    lockHolder: async (name) => {
      const { rows } = await q<{ holder: string }>('SELECT holder FROM locks WHERE name = $1 AND expires > $2', [name, clock.now()]);
      return rows[0]?.holder;
    },

    changeVersions: async () => {
      // A named (prepared) statement: it runs before every token verification.
      const { rows } = await pool.query<{ kind: string; version: string }>({
        name: 'rasterflow_site_versions',
        text: 'SELECT kind, version FROM site_versions',
      });
      return new Map(rows.map((r) => [r.kind, Number(r.version)]));
    },
    schemaVersion: async () => {
      const { rows } = await q<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations', []);
      return rows[0]?.v ?? 0;
    },

    close: () => (closed ??= pool.end()),
  };
}

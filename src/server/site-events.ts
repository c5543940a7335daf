/**
 * Several servers, one site (issue 22): what keeps the in-memory state of each `rasterflow serve`
 * true to the shared store.
 *
 * What is cached in memory, and how each stays right with several servers:
 * - Users, roles, services, webhooks, federations, OAuth apps, jobs: not cached. Every request reads
 *   its records from the store (auth.ts, the image and map registries compare the record on every
 *   lookup), so a change on one server is seen by the next request on any other.
 * - Opened services (rasters, feature stores, parsed rules) and the image and map tile caches: keyed
 *   by a hash of the service record read on each request, so a service changed on another server is
 *   reopened, and its old tiles are never served (a new hash is a new cache generation).
 * - The signing-key ring (keys, retirements, revoked users and tokens): loaded once, the only state
 *   held between requests. `startSiteSync` makes every token signature and verification first check
 *   the store's change counters (one small query, shared by the requests that arrive while it runs)
 *   and reload the ring when settings changed; `saveKeys` merges under a store lock so two servers
 *   changing keys at once lose nothing (server/site.ts).
 * - Webhook deliveries: an event is raised by the one server where it happens (the job ran there) and
 *   delivered by that server only, once; the hooks are read from the store before each attempt.
 *
 * Decision: a per-check query rather than LISTEN/NOTIFY alone. A notification arrives a little after
 * the commit, so a client that revoked a token on one server and used it at once on another could
 * still get in; the counter read before each verification closes that window, and costs one round
 * trip only on requests that carry a token (measured in test/two-servers.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { EngineError } from '../core/errors.js';
import type { SiteStore } from '../adapters/site.js';
import { absorbKeyRing, setKeyRingSync, type KeyRing, type KeyRingData } from '../adapters/tokens.js';

/** A store that counts changes per kind of record (the PostgreSQL store). */
export interface ChangeFeed {
  changeVersions(): Promise<Map<string, number>>;
}

export const hasChangeFeed = (store: SiteStore): store is SiteStore & ChangeFeed =>
  typeof (store as Partial<ChangeFeed>).changeVersions === 'function';

/** The setting the signing-key ring is saved under. */
export const SIGNING_KEYS_SETTING = 'signingKeys';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `fn` holding the store lock `name` (a lease of `ttlMs`, for a holder that dies), waiting up to
 * `waitMs` for another holder to release it; SERVER_BUSY when it never does. `holder` defaults to a
 * new id; a server passing its own stable id takes over at once a lock its killed previous run left.
 */
export async function withStoreLock<T>(
  store: SiteStore,
  name: string,
  fn: () => Promise<T>,
  ttlMs = 30_000,
  waitMs = 30_000,
  holder = `${name}:${randomUUID()}`,
): Promise<T> {
  const started = Date.now();
  for (let delay = 5; !(await store.acquireLock(name, holder, ttlMs)); delay = Math.min(200, delay * 2)) {
    if (Date.now() - started > waitMs) {
      throw new EngineError('SERVER_BUSY', `another server holds the site lock '${name}'; try again later`, { path: name });
    }
    await sleep(delay);
  }
  try {
    return await fn();
  } finally {
    await store.releaseLock(name, holder).catch(() => undefined);
  }
}

/** Saves the key ring merged with what other servers saved meanwhile (under a store lock). */
export async function saveKeyRing(store: SiteStore, keys: KeyRing): Promise<void> {
  await withStoreLock(store, SIGNING_KEYS_SETTING, async () => {
    const stored = await store.getSetting<KeyRingData>(SIGNING_KEYS_SETTING);
    if (stored) absorbKeyRing(keys, stored);
    await store.putSetting(SIGNING_KEYS_SETTING, keys.data());
  });
}

export interface SiteSyncStats {
  /** Counter reads made. */
  readonly checks: number;
  /** Freshness waits answered (requests); checks < waits when requests shared a read. */
  readonly waits: number;
  /** Times the key ring was reloaded. */
  readonly reloads: number;
}

export interface SiteSync {
  /** Resolves once this server's in-memory state includes every change committed before the call. */
  fresh(): Promise<void>;
  stats(): SiteSyncStats;
  /** Stops checking (the ring no longer waits for the store). */
  stop(): void;
}

/**
 * Keeps the site's key ring fresh from a store with a change feed: every issueToken/verifyToken
 * waits for a read of the change counters that started after it was called (reads are shared: one
 * runs at a time and the calls arriving meanwhile wait for the next one), and a changed `setting`
 * counter reloads the ring. With a store without a feed (SQLite, one server) it does nothing.
 */
export function startSiteSync(site: { readonly store: SiteStore; readonly keys: KeyRing }): SiteSync {
  const { store, keys } = site;
  let checks = 0;
  let waits = 0;
  let reloads = 0;
  if (!hasChangeFeed(store)) {
    return { fresh: () => Promise.resolve(), stats: () => ({ checks, waits, reloads }), stop: () => undefined };
  }
  let seen: Map<string, number> | undefined;

  const check = async (): Promise<void> => {
    checks++;
    let versions: Map<string, number>;
    try {
      versions = await store.changeVersions();
    } catch (e) {
      // Decision: fail closed. A token is not accepted when its revocation cannot be checked.
      throw new EngineError('IO_ERROR', 'the site store cannot be reached; try again later', { cause: e });
    }
    if (seen === undefined || (versions.get('setting') ?? 0) !== (seen.get('setting') ?? 0)) {
      const data = await store.getSetting<KeyRingData>(SIGNING_KEYS_SETTING);
      if (data) absorbKeyRing(keys, data);
      if (seen !== undefined) reloads++;
    }
    seen = versions;
  };

  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const start = (): Promise<void> => {
    const p = check().finally(() => {
      if (running === p) running = undefined;
    });
    running = p;
    return p;
  };
  const fresh = (): Promise<void> => {
    waits++;
    // A read already running may have started before this call: wait for the one after it.
    if (next) return next;
    if (!running) return start();
    const after = running
      .catch(() => undefined)
      .then(() => {
        next = undefined;
        return start();
      });
    next = after;
    return after;
  };

  setKeyRingSync(keys, fresh);
  return {
    fresh,
    stats: () => ({ checks, waits, reloads }),
    stop: () => setKeyRingSync(keys, undefined),
  };
}

/**
 * The Redis connection of the job queue (BullMQ): a `redis://` or `rediss://` URL as given to
 * `--queue`, checked before anything is submitted or run. A bad URL is a usage error naming
 * `--queue`; a Redis that does not answer is an error saying where it was looked for and what to
 * check. The queue's names and timings are fixed here, the same for every process of a site.
 */
import { isIP } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { EngineError } from '../core/errors.js';

/** The queues of a site: exports (one coordinator job per export) and chip ranges (work for `rasterflow worker`). */
export const EXPORTS_QUEUE = 'rasterflow-exports';
export const RANGES_QUEUE = 'rasterflow-ranges';

export interface QueueSettings {
  /** The URL as given (shown in messages without its password). */
  readonly url: string;
  /** Key prefix of every queue (BullMQ's `prefix`); several sites may share one Redis with different prefixes. */
  readonly prefix: string;
  /**
   * How long a worker holds a job without renewing its lock before the job is taken back and given
   * to another worker (a worker killed mid-range), ms. BullMQ renews it every half of this while
   * the worker is alive.
   */
  readonly lockDuration: number;
  /** How often workers look for jobs whose worker died, ms. */
  readonly stalledInterval: number;
  /** How many times a job may be taken back from a dead worker before it fails. */
  readonly maxStalledCount: number;
  readonly redis: RedisOptions;
}

/** The URL without its password, for messages. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/** Milliseconds from an environment variable (tests shorten the lock), else the default. */
function envMs(name: string, fallback: number): number {
  const v = process.env[name];
  const n = v === undefined ? NaN : Number(v);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/**
 * Parse `--queue`: `redis://[user:password@]host[:port][/db]` or `rediss://` (TLS). The key prefix
 * is `rasterflow` unless the URL has `?prefix=NAME`.
 *
 * Decision: 30 s locks and stall checks (BullMQ's defaults): a killed worker's range is given to
 * another worker within about a minute. RASTERFLOW_QUEUE_LOCK_MS sets both lower (tests).
 */
export function parseQueueUrl(url: string, option = 'queue'): QueueSettings {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new EngineError('INVALID_ARGUMENT', `--${option} must be a Redis URL such as redis://127.0.0.1:6379, got ${url}`, {
      path: option,
    });
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `--${option} must be a redis:// or rediss:// URL (the Redis server of the job queue), got ${displayUrl(url)}`,
      { path: option },
    );
  }
  if (u.hostname === '') throw new EngineError('INVALID_ARGUMENT', `--${option} names no host: ${displayUrl(url)}`, { path: option });
  const port = u.port === '' ? 6379 : Number(u.port);
  const dbText = u.pathname.replace(/^\//, '');
  const db = dbText === '' ? 0 : Number(dbText);
  if (!Number.isInteger(db) || db < 0) {
    throw new EngineError('INVALID_ARGUMENT', `--${option}: the database number after the host must be a whole number, got ${dbText}`, {
      path: option,
    });
  }
  const prefix = u.searchParams.get('prefix') ?? 'rasterflow';
  if (!/^[\w.-]+$/.test(prefix)) {
    throw new EngineError('INVALID_ARGUMENT', `--${option}: prefix must be letters, digits, '_', '-' or '.', got ${prefix}`, {
      path: option,
    });
  }
  const lock = envMs('RASTERFLOW_QUEUE_LOCK_MS', 30000);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return {
    url,
    prefix,
    lockDuration: lock,
    stalledInterval: lock,
    maxStalledCount: 5,
    redis: {
      host,
      port,
      db,
      ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
      ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
      // TLS checks the server's certificate against Node's CAs (add a private CA with NODE_EXTRA_CA_CERTS);
      // an IP address is checked against the certificate's IP names (SNI carries host names only).
      ...(u.protocol === 'rediss:' ? { tls: isIP(host) === 0 ? { servername: host } : {} } : {}),
      // BullMQ's blocking commands need this; reconnects are ioredis's own.
      maxRetriesPerRequest: null,
      enableReadyCheck: true,
    },
  };
}

/**
 * A connection to the queue's Redis, answered only once Redis has answered a PING (within
 * `timeoutMs`): an unreachable Redis is an error naming the URL, not a hang.
 */
export async function connectQueue(settings: QueueSettings, option = 'queue', timeoutMs = 5000): Promise<Redis> {
  const redis = new Redis({ ...settings.redis, lazyConnect: true, retryStrategy: (n) => Math.min(n * 200, 2000) });
  let lastError: Error | undefined;
  const onError = (e: Error): void => void (lastError = e);
  redis.on('error', onError);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer')), timeoutMs);
      redis
        .connect()
        .then(() => redis.ping())
        .then(
          () => {
            clearTimeout(timer);
            resolve();
          },
          (e: unknown) => {
            clearTimeout(timer);
            reject(e instanceof Error ? e : new Error(String(e)));
          },
        );
    });
  } catch (e) {
    redis.disconnect();
    const why = (lastError ?? (e as Error)).message;
    throw new EngineError(
      'LOCATION_NOT_ACCESSIBLE',
      `the job queue's Redis at ${displayUrl(settings.url)} did not answer within ${timeoutMs / 1000} s (${why}); check --${option} and that redis-server is running there`,
      { path: option },
    );
  }
  redis.off('error', onError);
  // Later connection errors are retried by ioredis; they are not fatal to the process.
  redis.on('error', () => undefined);
  return redis;
}

/** The worker name that carries a `rasterflow worker`'s concurrency to the submitters (see workSlots). */
export const workerName = (concurrency: number): string => `c${concurrency}`;

/**
 * Jobs the work queue's live workers can run at once: the sum of their concurrency, read from
 * the names their connections carry (Redis CLIENT LIST). Undefined where Redis refuses CLIENT LIST
 * (some managed services).
 */
export async function workSlots(queue: { getWorkers(): Promise<{ [k: string]: string }[]> }): Promise<number | undefined> {
  try {
    let slots = 0;
    for (const w of await queue.getWorkers()) {
      // BullMQ answers one entry without a connection name where CLIENT LIST is refused.
      if (w.rawname === undefined) return undefined;
      slots += Number(/:w:c(\d+)$/.exec(w.rawname)?.[1] ?? 1);
    }
    return slots;
  } catch {
    return undefined;
  }
}

/**
 * How many ranges or bands a coordinator keeps on the queue ahead of the one it is folding or
 * writing: at least `floor`, and twice the slots of the live workers, so that every worker has work
 * (and one more in hand) however many are added. Bounds the staged pixels on disk to about that
 * many ranges. Asked again at most every 5 s.
 *
 * Decision: adaptive rather than a fixed 16, which left all workers past the 16th idle.
 */
export function inFlightWindow(queue: { getWorkers(): Promise<{ [k: string]: string }[]> }, floor = 16): () => Promise<number> {
  let value = floor;
  let asked = -Infinity;
  return async () => {
    if (performance.now() - asked > 5000) {
      asked = performance.now();
      const slots = await workSlots(queue);
      value = Math.max(floor, 2 * (slots ?? 0));
    }
    return value;
  };
}

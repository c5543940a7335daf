/**
 * Jobs and several servers on one store (issue 22). Each server runs the training-data jobs it
 * accepted; the others only read their records. So that a server never takes another live server's
 * job for one left by a crash, the server running a job holds a store lease on it (`job:<id>`,
 * renewed while the job is unfinished, released when it ends). An unfinished job whose lease is gone
 * was left by a server that stopped: it is failed (recoverJobs) at the next start of a server, or by
 * the sweep every live server runs, under a store lock so that one server fails it and raises its
 * `jobFailed` event once.
 *
 * A cancel asked of a server that does not run the job is passed on through the store: a request
 * (`cancel:<id>`) the running server picks up within a second.
 *
 * Decision: a server's lease holder id is kept in its data folder (`server-id`), so a server restarted
 * after a kill -9 recognises the leases of its previous run at once, rather than waiting out their
 * time to live (a single server behaves exactly as before: its unfinished jobs are failed at start).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isTerminal, recoverJobs } from '../adapters/gp/jobs.js';
import type { JobRecord, Logger, SiteDeps, SiteStore } from '../adapters/site.js';
import { withStoreLock } from './site-events.js';

/** How long a job lease lives without renewal (its server died or stalled that long). */
export const JOB_LEASE_TTL_MS = 60_000;
/** The store lock under which orphaned jobs are failed (one server at a time). */
export const JOB_SWEEP_LOCK = 'jobSweep';

export const jobLeaseName = (jobId: string): string => `job:${jobId}`;

/** The lease holder id of the server of `dataDir` (made on first use). */
export function serverIdOf(dataDir: string): string {
  const file = join(dataDir, 'server-id');
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[A-Za-z0-9-]{8,64}$/.test(id)) return id;
  } catch {
    // made below
  }
  const id = randomUUID();
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}

export interface JobLeases {
  /** The store to give the site: `putJob` of an unfinished job takes its lease first, a finished one releases it. */
  readonly store: SiteStore;
  readonly serverId: string;
  /** Fails the unfinished jobs of stopped servers (and, at start, this server's previous run); answers how many. */
  recover(deps: Pick<SiteDeps, 'store' | 'clock' | 'emit'>, atStart: boolean): Promise<number>;
  /** Starts the periodic sweep (every `ttlMs`). */
  startSweeping(deps: Pick<SiteDeps, 'store' | 'clock' | 'emit' | 'log'>): void;
  /**
   * Another server's job: records a cancel request for the server holding its lease and answers the
   * job as cancelling; undefined when no live server runs it.
   */
  requestCancel(job: JobRecord): Promise<JobRecord | undefined>;
  /** Calls `cancel` for each job of this server another server asked to cancel (checked every `pollMs`). */
  onCancelRequest(cancel: (jobId: string) => Promise<unknown>): void;
  /** Ids of the jobs whose lease this server holds. */
  held(): string[];
  /** Stops renewing and sweeping (leases of jobs still unfinished then expire). */
  stop(): void;
}

export interface JobLeaseOptions {
  readonly ttlMs?: number;
  /** How often the jobs this server runs are checked for cancel requests of other servers (default 1 s). */
  readonly pollMs?: number;
  readonly log?: Logger;
}

export const cancelRequestName = (jobId: string): string => `cancel:${jobId}`;

/** Wraps `store` so that this server leases the jobs it runs. */
export function leaseJobs(store: SiteStore, serverId: string, options: JobLeaseOptions = {}): JobLeases {
  const ttlMs = options.ttlMs ?? JOB_LEASE_TTL_MS;
  const held = new Set<string>();
  let sweeper: NodeJS.Timeout | undefined;
  let poller: NodeJS.Timeout | undefined;

  const renew = async (): Promise<void> => {
    for (const id of held) {
      const ok = await store.acquireLock(jobLeaseName(id), serverId, ttlMs).catch(() => true);
      if (!ok) options.log?.warn('a job lease was lost (the server stalled longer than its time to live)', { jobId: id });
    }
  };
  const renewer = setInterval(() => void renew(), Math.max(1, Math.floor(ttlMs / 3)));
  renewer.unref();

  const putJob = async (job: JobRecord): Promise<void> => {
    if (!isTerminal(job.status) && !held.has(job.id)) {
      await store.acquireLock(jobLeaseName(job.id), serverId, ttlMs);
      held.add(job.id);
    }
    await store.putJob(job);
    if (isTerminal(job.status) && held.delete(job.id)) await store.releaseLock(jobLeaseName(job.id), serverId).catch(() => undefined);
  };

  // One sweep at a time in this server (the holder id is this server's, so a restart after a kill
  // takes over at once a sweep lock its previous run left).
  let sweeping: Promise<number> | undefined;
  const recover = (deps: Pick<SiteDeps, 'store' | 'clock' | 'emit'>, atStart: boolean): Promise<number> =>
    (sweeping ??= withStoreLock(
      store,
      JOB_SWEEP_LOCK,
      () =>
        recoverJobs(deps, async (job) => {
          if (held.has(job.id)) return false;
          const holder = await store.lockHolder(jobLeaseName(job.id));
          return holder === undefined || (atStart && holder === serverId);
        }),
      30_000,
      30_000,
      `${JOB_SWEEP_LOCK}:${serverId}`,
    ).finally(() => (sweeping = undefined)));

  return {
    store: { ...store, putJob },
    serverId,
    recover,
    startSweeping(deps) {
      if (sweeper) return;
      sweeper = setInterval(() => {
        recover(deps, false)
          .then((n) => {
            if (n > 0) deps.log.warn('failed the unfinished jobs of a server that stopped', { jobs: n });
          })
          .catch((e: unknown) => deps.log.warn('the job sweep failed', { error: e instanceof Error ? e.message : String(e) }));
      }, ttlMs);
      sweeper.unref();
    },
    // Decision: a job cancelled through another server answers geoJobCancelling (waiting or executing
    // alike); the server running it cancels it within `pollMs` and records geoJobCancelled as usual.
    async requestCancel(job) {
      const holder = await store.lockHolder(jobLeaseName(job.id));
      if (holder === undefined || holder === serverId) return undefined;
      await store.acquireLock(cancelRequestName(job.id), serverId, ttlMs);
      const { progress: _progress, ...rest } = job;
      return { ...rest, status: 'geoJobCancelling' };
    },
    onCancelRequest(cancel) {
      if (poller) return;
      let busy = false;
      poller = setInterval(() => {
        if (busy || held.size === 0) return;
        busy = true;
        void (async () => {
          for (const id of [...held]) {
            const requester = await store.lockHolder(cancelRequestName(id));
            if (requester === undefined) continue;
            await store.releaseLock(cancelRequestName(id), requester);
            await cancel(id).catch((e: unknown) =>
              options.log?.warn('a cancel asked by another server failed', { jobId: id, error: String(e) }),
            );
          }
        })()
          .catch(() => undefined)
          .finally(() => (busy = false));
      }, options.pollMs ?? 1000);
      poller.unref();
    },
    held: () => [...held],
    stop() {
      clearInterval(renewer);
      if (sweeper) clearInterval(sweeper);
      if (poller) clearInterval(poller);
    },
  };
}

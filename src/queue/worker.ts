/**
 * `rasterflow worker`: a process taking jobs from the queue. It coordinates exports (the `export`
 * job: folding the ranges' verdicts, the journal, the closing metadata) and works chip ranges
 * (`render`, `write`) and the bands of batch renders (`band`), `concurrency` at once. Closing it finishes the ranges it holds and
 * hands the exports it coordinates back to the queue, where another worker (or this one, started
 * again) continues them from the ranges already done.
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { connectQueue, EXPORTS_QUEUE, RANGES_QUEUE, workerName, type QueueSettings } from './connection.js';
import { exportProcessor, OpenExports, rangeProcessor } from './export-queue.js';
import { BAND_JOB, renderBandJob, type BandJobData } from './render-queue.js';
import { RENDER_JOB, renderJobProcessor, type RenderJobData } from './render-job.js';

export interface QueueWorkerOptions {
  /** Ranges worked at once (default 1). */
  readonly concurrency?: number;
  /** Told what the worker does (a range taken, finished, failed); default nothing. */
  readonly log?: (line: string) => void;
}

export interface QueueWorker {
  /** Finish the ranges in hand, hand coordinations back, disconnect. */
  close(): Promise<void>;
}

export async function startQueueWorker(settings: QueueSettings, o: QueueWorkerOptions = {}): Promise<QueueWorker> {
  const redis: Redis = await connectQueue(settings);
  const connection = { ...settings.redis };
  const common = {
    connection,
    prefix: settings.prefix,
    lockDuration: settings.lockDuration,
    stalledInterval: settings.stalledInterval,
    maxStalledCount: settings.maxStalledCount,
  };
  const ranges = new Queue(RANGES_QUEUE, { connection, prefix: settings.prefix });
  const cache = new OpenExports();
  const shutdown = new AbortController();
  const chips = rangeProcessor(redis, settings, cache);
  // One queue of work for every kind: chip ranges of exports, bands of batch renders.
  const work = (job: Job<unknown>): Promise<unknown> =>
    job.name === BAND_JOB ? renderBandJob(redis, settings, job as Job<BandJobData>) : chips(job as Parameters<typeof chips>[0]);
  const concurrency = Math.max(1, o.concurrency ?? 1);
  const rangeWorker = new Worker(RANGES_QUEUE, work, {
    ...common,
    // Its name tells submitters how many jobs it runs at once (connection.ts workSlots).
    name: workerName(concurrency),
    concurrency,
  });
  // Coordinators mostly wait on Redis: a few at once, beside the ranges.
  const coordination = { redis, settings, ranges, shutdown: shutdown.signal, ...(o.log ? { log: o.log } : {}) };
  const exportJobs = exportProcessor(coordination);
  const renderJobs = renderJobProcessor(coordination);
  // Coordinators by kind: exports, and batch renders (render-job.ts).
  const coordinate = (job: Job<unknown>, token?: string): Promise<unknown> =>
    job.name === RENDER_JOB ? renderJobs(job as Job<RenderJobData>, token) : exportJobs(job as Parameters<typeof exportJobs>[0], token);
  const exportWorker = new Worker(EXPORTS_QUEUE, coordinate, {
    ...common,
    concurrency: 4,
  });
  const log = o.log;
  if (log) {
    for (const [w, kind] of [
      [rangeWorker, 'range'],
      [exportWorker, 'export'],
    ] as const) {
      w.on('active', (job) => log(`${kind} ${job.name} ${job.id} started`));
      w.on('completed', (job) => log(`${kind} ${job.name} ${job.id} done`));
      w.on('failed', (job, e) => log(`${kind} ${job?.name ?? ''} ${job?.id ?? ''} failed: ${e.message}`));
    }
  }
  for (const w of [rangeWorker, exportWorker]) w.on('error', (e) => log?.(`queue error: ${e.message}`));
  await Promise.all([rangeWorker.waitUntilReady(), exportWorker.waitUntilReady()]);
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        // No new export is taken, then the coordinations in hand go back to the queue (they would
        // otherwise be taken again by this worker while it closes); the ranges in hand are finished.
        await exportWorker.pause(true);
        shutdown.abort();
        await Promise.all([rangeWorker.close(), exportWorker.close()]);
        await ranges.close();
        await cache.closeAll();
        redis.disconnect();
      })();
      return closing;
    },
  };
}

/** The queues a submitter (`chip --queue`, `serve --queue`) talks to. */
export interface QueueClient {
  readonly settings: QueueSettings;
  readonly redis: Redis;
  readonly exports: Queue;
  /** The work queue: chip ranges, and the bands of batch renders (render-queue.ts). */
  readonly ranges: Queue;
  close(): Promise<void>;
}

export async function openQueueClient(settings: QueueSettings, option = 'queue'): Promise<QueueClient> {
  const redis = await connectQueue(settings, option);
  const exports = new Queue(EXPORTS_QUEUE, { connection: { ...settings.redis }, prefix: settings.prefix });
  const ranges = new Queue(RANGES_QUEUE, { connection: { ...settings.redis }, prefix: settings.prefix });
  return {
    settings,
    redis,
    exports,
    ranges,
    async close() {
      await Promise.all([exports.close(), ranges.close()]);
      redis.disconnect();
    },
  };
}

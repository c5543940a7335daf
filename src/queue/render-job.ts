/**
 * A batch render as a job on the queue: the `render` job on the exports queue is a render's
 * coordinator. The worker that takes it rebuilds the graph from the job's rule and sources, hands
 * the render's bands to the ranges queue (render-queue.ts `queuedTiles`: any worker renders them)
 * and writes the tiles, in order, with the streaming GeoTIFF writer to the output path, through its
 * partial name: a render that fails or is cancelled leaves no output. Its progress (tiles written of
 * the total) is the job's progress; a cancel (a key in Redis, checked between bands) stops it.
 *
 * The GP service's GenerateRaster jobs (`serve --queue`, queue/gp.ts) and library callers
 * (`submitRender` / `watchRender`) use it.
 *
 * Decision: a coordinator that dies (its worker killed) loses the job's lock; BullMQ gives the job
 * to another worker, which renders it again from the start (the dead one's bands and staged files
 * are dropped, its partial file removed). The file is the same either way: tiles never depend on
 * the process that computed them. A restart costs the work done so far, which for a render (unlike
 * an export, whose chips are its output) is only time.
 */
import { readdir, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DelayedError, Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  GENERATE_TILE,
  outputFileOf,
  writeGenerated,
  type GenerateLimits,
  type GenerateParams,
  type GenerateSummary,
} from '../adapters/gp/generate-raster-task.js';
import type { TaskProgress } from '../adapters/gp/jobs.js';
import type { InputPolicy } from '../chipper/inputs.js';
import { EngineError } from '../core/errors.js';
import type { QueueSettings } from './connection.js';
import { absoluteLocation } from './cli.js';
import { failure, watchJob, type CoordinatorContext, type WatchOptions } from './export-queue.js';
import { queuedTiles } from './render-queue.js';
import { stagingRoot } from './staging.js';

/** The name of a render coordinator job on the exports queue. */
export const RENDER_JOB = 'render';

/** The data of a `render` job. */
export interface RenderJobData {
  readonly params: GenerateParams;
  /** Where inputs may be read from (a server's policy); none: any path or URL. */
  readonly inputPolicy?: InputPolicy;
  readonly limits?: GenerateLimits;
  /** Rows per band (default: about 4 MiB of pixels a band). */
  readonly bandRows?: number;
  /** The most bytes the output may take (a disk quota's room when it was submitted), and the setting it names. */
  readonly maxBytes?: number;
  readonly maxBytesName?: string;
}

/** What a render job reports as its progress. */
export type RenderProgress = TaskProgress;

const DAY = 86400;
const cancelKey = (s: QueueSettings, jobId: string): string => `${s.prefix}:rasterflow:render-cancel:${jobId}`;

/** A render for a library caller: a rule, the locations of its references, the GeoTIFF to write. */
export interface RenderRequest {
  readonly rule: unknown;
  /** Locations bound to the rule's references (`$$`, `$1`, variable names); relative paths are made absolute here. */
  readonly sources: Readonly<Record<string, string>>;
  /** The GeoTIFF to write (workers must see its folder). */
  readonly output: string;
}

export interface SubmitRenderOptions {
  /** The job's id (default a random one); the GP front uses its own job id. */
  readonly jobId?: string;
  readonly inputPolicy?: InputPolicy;
  readonly limits?: GenerateLimits;
  readonly bandRows?: number;
  readonly maxBytes?: number;
  readonly maxBytesName?: string;
}

const isRequest = (r: RenderRequest | GenerateParams): r is RenderRequest =>
  typeof (r as RenderRequest).output === 'string' && !('jobsDir' in r);

/** Put a render on the queue; answers its job id. */
export async function submitRender(queue: Queue, render: RenderRequest | GenerateParams, o: SubmitRenderOptions = {}): Promise<string> {
  let params: GenerateParams;
  if (isRequest(render)) {
    const output = absoluteLocation(render.output);
    if (!/\.tiff?$/i.test(output)) {
      throw new EngineError('INVALID_ARGUMENT', `the output of a queued render is a GeoTIFF: name it .tif, got ${render.output}`, {
        path: 'output',
      });
    }
    params = {
      rule: render.rule,
      sources: Object.fromEntries(Object.entries(render.sources).map(([k, v]) => [k, absoluteLocation(v)])),
      jobsDir: dirname(output),
      outputName: basename(output).replace(/\.tiff?$/i, ''),
      applied: [],
      output,
    };
  } else params = render;
  const data: RenderJobData = {
    params,
    ...(o.inputPolicy ? { inputPolicy: o.inputPolicy } : {}),
    ...(o.limits ? { limits: o.limits } : {}),
    ...(o.bandRows !== undefined ? { bandRows: o.bandRows } : {}),
    ...(o.maxBytes !== undefined ? { maxBytes: o.maxBytes, ...(o.maxBytesName ? { maxBytesName: o.maxBytesName } : {}) } : {}),
  };
  const job = await queue.add(RENDER_JOB, data, {
    ...(o.jobId !== undefined ? { jobId: o.jobId } : {}),
    attempts: 1,
    removeOnComplete: { age: 7 * DAY },
    removeOnFail: { age: 7 * DAY },
  });
  return job.id!;
}

/** Ask a queued render to stop: its coordinator stops between bands (its workers' bands go); a job no worker took is removed. */
export async function cancelRender(queue: Queue, redis: Redis, s: QueueSettings, jobId: string): Promise<void> {
  await redis.set(cancelKey(s, jobId), '1', 'EX', DAY);
  const job = await Job.fromId(queue, jobId);
  if (job && ['waiting', 'delayed', 'prioritized'].includes(await job.getState())) await job.remove().catch(() => undefined);
}

const cancelled = (): EngineError => new EngineError('ABORTED', 'the render was cancelled');

/** Wait for a queued render (watchJob): its progress, its summary, its failure as the EngineError it was. */
export function watchRender(
  queue: Queue,
  redis: Redis,
  s: QueueSettings,
  jobId: string,
  o: WatchOptions<RenderProgress> = {},
): Promise<GenerateSummary> {
  return watchJob<GenerateSummary, RenderProgress>(queue, jobId, 'render', () => cancelRender(queue, redis, s, jobId), o);
}

/** The processor of `render` jobs (the exports queue's worker dispatches them here by name). */
export function renderJobProcessor(ctx: CoordinatorContext) {
  return async (job: Job<RenderJobData>, token?: string): Promise<GenerateSummary> => {
    try {
      return await coordinateRender(job, ctx);
    } catch (e) {
      if (ctx.shutdown.aborted && !(e instanceof EngineError && e.code !== 'ABORTED')) {
        // This worker is stopping: the render goes back to the queue for another worker, which
        // renders it again. Delayed a moment, so that this worker, still closing, does not take it.
        await job.moveToDelayed(Date.now() + 1000, token);
        throw new DelayedError();
      }
      throw failure(e);
    }
  };
}

/** Files a render left in its output's folder: the staging area, partial outputs of earlier coordinators. */
async function sweep(out: string, staging: boolean): Promise<void> {
  const folder = dirname(out);
  if (staging) await removeStaging(folder);
  const partial = `${basename(out)}.partial-`;
  const names = await readdir(folder).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => n.startsWith(partial)).map((n) => rm(join(folder, n), { force: true })));
}

/**
 * The staging area of a job's folder, removed. The bands a dead coordinator put on the queue may be
 * rendered still, a band file landing while the folder is removed (ENOTEMPTY): removing is tried
 * again. Once the folders are gone such a band cannot write (its worker makes no folder) and fails.
 */
async function removeStaging(folder: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rm(stagingRoot(folder), { recursive: true, force: true });
      return;
    } catch (e) {
      if (attempt >= 4) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function coordinateRender(job: Job<RenderJobData>, ctx: CoordinatorContext): Promise<GenerateSummary> {
  const { redis, settings: s, ranges } = ctx;
  const jobId = job.id!;
  const d = job.data;
  const out = outputFileOf(d.params, jobId);
  const controller = new AbortController();
  const onShutdown = (): void => controller.abort(new Error('the worker is stopping'));
  if (ctx.shutdown.aborted) onShutdown();
  else ctx.shutdown.addEventListener('abort', onShutdown, { once: true });
  const cancelPoll = setInterval(() => {
    void redis.exists(cancelKey(s, jobId)).then(
      (n) => {
        if (n === 1) controller.abort(new Error('cancelled'));
      },
      () => undefined,
    );
  }, 250);
  let lastProgress = 0;
  try {
    // Cancelled before a worker took it (the removal from the queue came too late).
    if ((await redis.exists(cancelKey(s, jobId))) === 1) throw cancelled();
    // Taken over from a coordinator that died: what it left goes first (the staging area is the
    // job folder's own only for a GP job; a library caller's folder may hold other renders' bands).
    await sweep(out, d.params.output === undefined);
    return await writeGenerated(d.params, jobId, {
      signal: controller.signal,
      ...(d.inputPolicy ? { inputPolicy: d.inputPolicy } : {}),
      ...(d.limits ? { limits: d.limits } : {}),
      ...(d.maxBytes !== undefined ? { maxBytes: d.maxBytes, maxBytesName: d.maxBytesName ?? 'maxBytes' } : {}),
      onProgress: (p) => {
        const t = performance.now();
        if (p.done < p.total && t - lastProgress < 250) return;
        lastProgress = t;
        void job.updateProgress({ ...p }).catch(() => undefined);
      },
      tiles: (root, recipe, signal, window) =>
        queuedTiles(ranges, redis, s, root, {
          ...(window ? { rect: window } : {}),
          tileSize: GENERATE_TILE,
          recipe,
          staging: dirname(out),
          ...(d.bandRows !== undefined ? { bandRows: d.bandRows } : {}),
          ...(signal ? { signal } : {}),
        }),
    });
  } catch (e) {
    const reason: unknown = controller.signal.reason;
    if (controller.signal.aborted && reason instanceof Error && reason.message === 'cancelled') throw cancelled();
    throw e;
  } finally {
    clearInterval(cancelPoll);
    ctx.shutdown.removeEventListener('abort', onShutdown);
    // The staging area goes (queuedTiles removed what it staged; a GP job's folder is its own, so
    // bands a dead coordinator left go too); a job folder left empty too.
    if (d.params.output === undefined) {
      await removeStaging(dirname(out)).catch(() => undefined);
      await rmdir(dirname(out)).catch(() => undefined);
    } else await rmdir(stagingRoot(dirname(out))).catch(() => undefined);
  }
}

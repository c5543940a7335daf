/**
 * The asynchronous job around the export (contract §11): an in-process job manager with the
 * geoprocessing status values, step progress, messages, cooperative cancellation between chips,
 * and the `outLocation` result. Parameters are checked at submission, so a bad request fails
 * before a job exists (the adapter renders the EngineError as the service's error body).
 * Jobs run one at a time by default (`concurrency`), in submission order.
 */
import { randomBytes } from 'node:crypto';
import { EngineError } from '../core/errors.js';
import type { TilePool } from '../graph/render.js';
import { exportTrainingData, type ExportOptions, type ExportSummary } from './export.js';
import { parseChipParams } from './params.js';

export const JOB_STATUSES = [
  'geoJobNew',
  'geoJobSubmitted',
  'geoJobWaiting',
  'geoJobExecuting',
  'geoJobSucceeded',
  'geoJobFailed',
  'geoJobTimedOut',
  'geoJobCancelling',
  'geoJobCancelled',
  'geoJobDeleting',
  'geoJobDeleted',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const TERMINAL: ReadonlySet<JobStatus> = new Set([
  'geoJobSucceeded',
  'geoJobFailed',
  'geoJobTimedOut',
  'geoJobCancelled',
  'geoJobDeleted',
]);

export interface JobMessage {
  readonly type: 'geoJobMessageTypeInformative' | 'geoJobMessageTypeWarning' | 'geoJobMessageTypeError';
  readonly description: string;
}

export interface JobView {
  readonly jobId: string;
  readonly jobStatus: JobStatus;
  readonly progress?: { readonly type: 'step'; readonly message: string; readonly percent: number };
  readonly results?: { readonly outLocation: { readonly paramUrl: string } };
  readonly inputs?: Readonly<Record<string, { readonly paramUrl: string }>>;
  readonly messages?: readonly JobMessage[];
}

export interface ResultParameter {
  readonly paramName: string;
  readonly dataType: string;
  readonly value: unknown;
}

interface Job {
  readonly id: string;
  status: JobStatus;
  readonly params: Record<string, unknown>;
  readonly controller: AbortController;
  readonly messages: JobMessage[];
  progress?: { type: 'step'; message: string; percent: number };
  summary?: ExportSummary;
  readonly started: number;
}

export interface JobManagerOptions {
  /** The task run by a job (default exportTrainingData). */
  readonly run?: (params: unknown, options: ExportOptions) => Promise<ExportSummary>;
  readonly pool?: TilePool;
  /** Jobs executing at once (default 1). */
  readonly concurrency?: number;
  /** Job time limit in ms (geoJobTimedOut); default none. */
  readonly timeoutMs?: number;
  readonly now?: () => number;
}

export interface JobManager {
  /** Check the parameters and queue a job; throws EngineError (with paths) for bad parameters. */
  submit(params: unknown): { readonly jobId: string; readonly jobStatus: JobStatus };
  status(jobId: string, options?: { readonly returnMessages?: boolean }): JobView;
  result(jobId: string, name: string): ResultParameter;
  input(jobId: string, name: string): ResultParameter;
  /** Allowed while waiting or executing; otherwise an error and the job goes on. */
  cancel(jobId: string): { readonly jobId: string; readonly jobStatus: JobStatus };
  /** Resolves when the job reaches a terminal status. */
  wait(jobId: string): Promise<JobView>;
}

const info = (description: string): JobMessage => ({ type: 'geoJobMessageTypeInformative', description });

export function createJobManager(options: JobManagerOptions = {}): JobManager {
  const run = options.run ?? exportTrainingData;
  const now = options.now ?? Date.now;
  const jobs = new Map<string, Job>();
  const queue: Job[] = [];
  const waiters = new Map<string, (() => void)[]>();
  let running = 0;

  const get = (jobId: string): Job => {
    const job = jobs.get(jobId);
    if (job === undefined) throw new EngineError('INVALID_ARGUMENT', `no job ${jobId}`, { path: 'jobId' });
    return job;
  };
  const settle = (job: Job, status: JobStatus): void => {
    job.status = status;
    delete job.progress;
    for (const w of waiters.get(job.id) ?? []) w();
    waiters.delete(job.id);
  };
  const pump = (): void => {
    while (running < (options.concurrency ?? 1) && queue.length > 0) {
      const job = queue.shift()!;
      if (job.status !== 'geoJobWaiting') continue;
      running++;
      job.status = 'geoJobExecuting';
      job.messages.push(info('Executing...'));
      const timer =
        options.timeoutMs !== undefined ? setTimeout(() => job.controller.abort(new Error('timeout')), options.timeoutMs) : undefined;
      run(job.params, {
        signal: job.controller.signal,
        pool: options.pool,
        onProgress: (p) => {
          job.progress = {
            type: 'step',
            message: p.message === 'done' ? 'Writing metadata' : 'Exporting image chips',
            percent: Math.floor((100 * p.done) / Math.max(1, p.total)),
          };
        },
      })
        .then((summary) => {
          job.summary = summary;
          job.messages.push(info(`Exported ${summary.chips} chips with ${summary.labels} labels to ${summary.outputLocation}`));
          job.messages.push(info(`Succeeded (Elapsed Time: ${((now() - job.started) / 1000).toFixed(2)} seconds)`));
          settle(job, 'geoJobSucceeded');
        })
        .catch((e: unknown) => {
          if (job.controller.signal.aborted) {
            const timedOut = (job.controller.signal.reason as Error | undefined)?.message === 'timeout';
            job.messages.push({
              type: timedOut ? 'geoJobMessageTypeError' : 'geoJobMessageTypeWarning',
              description: timedOut ? 'The job timed out.' : 'Cancelled.',
            });
            settle(job, timedOut ? 'geoJobTimedOut' : 'geoJobCancelled');
          } else {
            const err = e instanceof EngineError ? e : new EngineError('INTERNAL', String((e as Error)?.message ?? e));
            job.messages.push({ type: 'geoJobMessageTypeError', description: err.path ? `${err.path}: ${err.message}` : err.message });
            job.messages.push({ type: 'geoJobMessageTypeError', description: 'Failed.' });
            settle(job, 'geoJobFailed');
          }
        })
        .finally(() => {
          if (timer) clearTimeout(timer);
          running--;
          pump();
        });
    }
  };

  return {
    submit(params) {
      parseChipParams(params); // throws with paths before any job exists
      const id = `j${randomBytes(16).toString('hex')}`;
      const job: Job = {
        id,
        status: 'geoJobSubmitted',
        params: (typeof params === 'string' ? JSON.parse(params) : params) as Record<string, unknown>,
        controller: new AbortController(),
        messages: [info('Submitted.')],
        started: now(),
      };
      jobs.set(id, job);
      queue.push(job);
      // Submitted -> Waiting at once (the queue), Executing when a slot frees.
      queueMicrotask(() => {
        if (job.status === 'geoJobSubmitted') job.status = 'geoJobWaiting';
        pump();
      });
      return { jobId: id, jobStatus: 'geoJobSubmitted' };
    },
    status(jobId, o = {}) {
      const job = get(jobId);
      const view: Record<string, unknown> = { jobId, jobStatus: job.status };
      if (job.status === 'geoJobExecuting' && job.progress) view.progress = { ...job.progress };
      if (job.status === 'geoJobSucceeded') {
        view.results = { outLocation: { paramUrl: 'results/outLocation' } };
        view.inputs = Object.fromEntries(Object.keys(job.params).map((k) => [k, { paramUrl: `inputs/${k}` }]));
      }
      if (o.returnMessages !== false) view.messages = [...job.messages];
      return view as unknown as JobView;
    },
    result(jobId, name) {
      const job = get(jobId);
      if (name !== 'outLocation')
        throw new EngineError('INVALID_ARGUMENT', `the task has no result ${JSON.stringify(name)} (outLocation)`, { path: 'paramName' });
      if (job.status !== 'geoJobSucceeded' || job.summary === undefined) {
        throw new EngineError('INVALID_ARGUMENT', `job ${jobId} has no results yet (${job.status})`, { path: 'jobId' });
      }
      return { paramName: 'outLocation', dataType: 'GPString', value: { uri: job.summary.outputLocation } };
    },
    input(jobId, name) {
      const job = get(jobId);
      const key = Object.keys(job.params).find((k) => k.toLowerCase() === name.toLowerCase());
      if (key === undefined)
        throw new EngineError('INVALID_ARGUMENT', `job ${jobId} has no input ${JSON.stringify(name)}`, { path: 'paramName' });
      return { paramName: key, dataType: typeof job.params[key] === 'string' ? 'GPString' : 'GPRecordSet', value: job.params[key] };
    },
    cancel(jobId) {
      const job = get(jobId);
      if (job.status !== 'geoJobWaiting' && job.status !== 'geoJobExecuting') {
        throw new EngineError(
          'INVALID_ARGUMENT',
          `Invalid or missing input parameters: job ${jobId} is ${job.status} and cannot be cancelled`,
          { path: 'jobId' },
        );
      }
      if (job.status === 'geoJobWaiting') {
        job.messages.push({ type: 'geoJobMessageTypeWarning', description: 'Cancelled.' });
        settle(job, 'geoJobCancelled');
        return { jobId, jobStatus: 'geoJobCancelled' };
      }
      job.status = 'geoJobCancelling';
      job.controller.abort(new Error('cancelled'));
      return { jobId, jobStatus: 'geoJobCancelling' };
    },
    wait(jobId) {
      const job = get(jobId);
      if (TERMINAL.has(job.status)) return Promise.resolve(this.status(jobId));
      return new Promise((resolve) => {
        const list = waiters.get(jobId) ?? [];
        list.push(() => resolve(this.status(jobId)));
        waiters.set(jobId, list);
      });
    },
  };
}

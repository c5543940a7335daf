/**
 * Persistent geoprocessing jobs of the training-data export (training-data-export.md §11) and of the
 * service's other tasks (GenerateRaster: a JobTask, named by its record's `task`): every
 * job is a JobRecord in the site store, written on each status change (progress at most about once
 * a second), so that `jobs/<id>` answers from the store and a job's outcome survives a restart.
 * Jobs run in this process, one at a time by default, in submission order; cancellation is
 * cooperative between chips (the chipper checks its AbortSignal).
 */
import { randomBytes } from 'node:crypto';
import { EngineError } from '../../core/errors.js';
import { exportTrainingData, type ExportOptions, type ExportSummary } from '../../chipper/export.js';
import type { InputPolicy } from '../../chipper/inputs.js';
import { TERMINAL, type JobMessage, type JobStatus } from '../../chipper/job.js';
import type { TilePool } from '../../graph/render.js';
import type { JobRecord, SiteDeps } from '../site.js';

export const TASK_NAME = 'ExportTrainingDataforDeepLearning';
/** The `task` of the job records. */
export const TASK_KEY = `System/RasterAnalysisTools/${TASK_NAME}`;
/** The serviceKey events of these jobs belong to (webhooks of the GP service). */
export const SERVICE_KEY = 'System/RasterAnalysisTools.GPServer';

export type JobDeps = Pick<SiteDeps, 'store' | 'clock' | 'emit' | 'log'>;

/** What a task reports as it runs (the export's ExportProgress is one). */
export interface TaskProgress {
  readonly done: number;
  readonly total: number;
  readonly message: string;
}

/** What a task's run is given: the export's options, its progress generalised, and the job's id. */
export interface TaskRunOptions extends Omit<ExportOptions, 'onProgress' | 'dryRun'> {
  readonly jobId: string;
  readonly onProgress?: (p: TaskProgress) => void;
}

/** What a job that succeeded keeps: its closing messages and its results (by output parameter name). */
export interface TaskOutcome {
  readonly messages: readonly string[];
  readonly results: Record<string, unknown>;
}

/** How a task runs on the job queue (`serve --queue`); as JobQueueHook, answering the task's outcome. */
export interface TaskQueueHook {
  run(
    jobId: string,
    params: Readonly<Record<string, unknown>> | undefined,
    options: TaskRunOptions,
    started: () => void,
  ): Promise<TaskOutcome>;
  detach(): Promise<void>;
  cancel(jobId: string): Promise<void>;
}

/**
 * A task of the GP service besides the training-data export (which `run` and `queue` describe): job
 * records name it by its key (`task`), and the runner runs each job with its record's task.
 */
export interface JobTask {
  /** The task's name in events and logs (`GenerateRaster`). */
  readonly name: string;
  /** Runs a job in this process. */
  run(params: Readonly<Record<string, unknown>>, options: TaskRunOptions): Promise<TaskOutcome>;
  /** Runs it on the job queue instead (`serve --queue`). */
  readonly queue?: TaskQueueHook;
  /** The step shown while a job executes. */
  progressMessage?(p: TaskProgress): string;
  /** What a job that crashed shows (default 'An internal error stopped the job.'). */
  readonly internalError?: string;
}

export interface JobRunnerOptions {
  /** The task a job runs (default exportTrainingData); tests give a controllable one. */
  readonly run?: (params: unknown, options: ExportOptions) => Promise<ExportSummary>;
  readonly pool?: TilePool;
  /** Jobs executing at once (default 1). */
  readonly concurrency?: number;
  /** Least time between two progress writes to the store, ms (default 1000). */
  readonly progressIntervalMs?: number;
  /** Jobs waiting or executing at once: on the server and per user (default: no limit). */
  readonly maxJobs?: number;
  readonly maxJobsPerUser?: number;
  /**
   * The disk the outputs of all jobs may use, bytes, with `outputBytes` measuring what they use
   * now. A submit when the outputs use it all is refused; a running job stops before a chip would
   * pass it (the chipper's maxBytes) and fails.
   */
  readonly exportQuotaBytes?: number;
  readonly outputBytes?: () => Promise<number>;
  /** Where a run may read inputs from, asked when it starts (the chipper checks again as it opens them). */
  readonly inputPolicy?: () => Promise<InputPolicy>;
  /**
   * A job not running here but unfinished in the store (another server on a shared store runs it):
   * asks that server to cancel it and answers the record to show, or undefined when nobody runs it.
   */
  readonly cancelElsewhere?: (job: JobRecord) => Promise<JobRecord | undefined>;
  /**
   * Jobs run on the job queue (`serve --queue`) instead of in this process: any number follow at
   * once here (they wait on the queue for workers), close() leaves them running there, and
   * adoptUnfinished() follows the jobs an earlier run of the server left.
   */
  readonly queue?: JobQueueHook;
  /** Other tasks, by their key (the `task` of their job records). */
  readonly tasks?: Readonly<Record<string, JobTask>>;
}

/** How the runner puts its jobs on the job queue (src/queue/gp.ts). */
export interface JobQueueHook {
  /**
   * Run the job `jobId` on the queue, or follow it there when it is already on it (`params`
   * undefined: a job an earlier run of the server submitted); answers its summary.
   */
  run(
    jobId: string,
    params: Readonly<Record<string, unknown>> | undefined,
    options: ExportOptions,
    /** Called when a worker takes the job: it executes (until then it waits on the queue). */
    started: () => void,
  ): Promise<ExportSummary>;
  /** Stop following every job (they go on on the queue): each run() rejects. */
  detach(): Promise<void>;
  /** Take a job off the queue, or ask its workers to stop; resolves once a waiting job can no longer start. */
  cancel(jobId: string): Promise<void>;
}

export interface JobRunner {
  /** Records a new job (geoJobSubmitted), queues it (geoJobWaiting) and answers the record as submitted. */
  submit(
    owner: string,
    inputs: Readonly<Record<string, unknown>>,
    params: Readonly<Record<string, unknown>>,
    /** The task's key (default the training-data task's). */
    task?: string,
  ): Promise<JobRecord>;
  /**
   * Cancels a waiting job (geoJobCancelled at once) or an executing one (geoJobCancelling, then
   * geoJobCancelled when the chipper stops); any other status is an INVALID_ARGUMENT error and the
   * job goes on.
   */
  cancel(jobId: string): Promise<JobRecord>;
  /** Resolves when the job has ended (at once for a job that is not running here). */
  settled(jobId: string): Promise<void>;
  /**
   * Cancels every job that has not ended and waits until each is recorded as cancelled. On the job
   * queue, leaves them running there instead: the next start of the server follows them again.
   */
  close(): Promise<void>;
  /** On the job queue: follow the jobs the store holds as not ended (submitted by an earlier run of the server); answers how many. */
  adoptUnfinished(): Promise<number>;
}

interface Live {
  record: JobRecord;
  /** Undefined for a job adopted from the queue (its parameters are there). */
  readonly params: Readonly<Record<string, unknown>> | undefined;
  readonly controller: AbortController;
  writes: Promise<void>;
  readonly done: Promise<void>;
  finish(): void;
}

const info = (description: string): JobMessage => ({ type: 'geoJobMessageTypeInformative', description });
const error = (description: string): JobMessage => ({ type: 'geoJobMessageTypeError', description });

export const isTerminal = (status: string): boolean => TERMINAL.has(status as JobStatus) || status === 'expectedFailure';

const CHANGE_TYPES: Partial<Record<JobStatus, string>> = {
  geoJobSucceeded: 'jobSucceeded',
  geoJobFailed: 'jobFailed',
  geoJobTimedOut: 'jobFailed',
  geoJobCancelled: 'jobCancelled',
};

/** The task's name in a record's task key (`System/RasterAnalysisTools/GenerateRaster` -> `GenerateRaster`). */
const taskNameOf = (key: string | undefined): string => (key === undefined || key === '' ? TASK_NAME : key.slice(key.lastIndexOf('/') + 1));

/** Raise the event of a job that ended. */
export function emitEnd(deps: Pick<SiteDeps, 'emit'>, job: JobRecord): void {
  const changeType = CHANGE_TYPES[job.status as JobStatus];
  if (changeType === undefined) return;
  deps.emit({
    service: SERVICE_KEY,
    changeType,
    payload: {
      jobId: job.id,
      jobStatus: job.status,
      task: taskNameOf(job.task),
      owner: job.owner,
      submitted: job.created,
      ended: job.updated,
      ...(job.results ? { results: job.results } : {}),
      messages: job.messages.filter((m) => m.type === 'geoJobMessageTypeError').map((m) => m.description),
    },
  });
}

export function createJobRunner(deps: JobDeps, options: JobRunnerOptions = {}): JobRunner {
  const run = options.run ?? exportTrainingData;
  const queued = options.queue;
  // The training-data task, and the others by key; a record without a task is a training-data job.
  const training: JobTask = {
    name: TASK_NAME,
    run: async (params, o) => exportOutcome(await run(params, o)),
    ...(queued
      ? {
          queue: {
            run: async (jobId, params, o, started) => exportOutcome(await queued.run(jobId, params, o, started)),
            detach: () => queued.detach(),
            cancel: (jobId) => queued.cancel(jobId),
          },
        }
      : {}),
    progressMessage: (p) => (p.message === 'done' ? 'Writing metadata' : 'Exporting image chips'),
    internalError: 'An internal error stopped the export.',
  };
  const tasks = new Map<string, JobTask>([[TASK_KEY, training], ...Object.entries(options.tasks ?? {})]);
  const taskOf = (record: JobRecord): JobTask => tasks.get(record.task ?? TASK_KEY) ?? training;
  // On the job queue, jobs wait there for workers: all are followed at once here.
  const concurrency = queued ? Infinity : (options.concurrency ?? 1);
  /** On the job queue, close() stops following the jobs: they are not recorded as ended here. */
  let detached = false;
  const interval = options.progressIntervalMs ?? 1000;
  const live = new Map<string, Live>();
  const queue: Live[] = [];
  let running = 0;
  let closing = false;
  /** Owners of the submits being admitted (checked, not yet in `live`). */
  const admitting: string[] = [];
  const quota = options.exportQuotaBytes;
  const measure = options.outputBytes ?? (() => Promise.resolve(0));
  /**
   * Disk accounting for the running jobs: `base` is the outputs' size measured at the latest job
   * start; each running job's `written` is what its chipper reported, `offset` what it had written
   * when `base` was measured (so its bytes are not counted twice).
   */
  let base = 0;
  const usage = new Map<string, { written: number; offset: number }>();
  const remaining = (): number => {
    let since = 0;
    for (const u of usage.values()) since += u.written - u.offset;
    return (quota ?? Infinity) - base - since;
  };

  /** Update the job and queue its write after the earlier ones (so the store never goes back in time). */
  const update = (job: Live, patch: Partial<JobRecord>, drop: readonly (keyof JobRecord)[] = []): Promise<void> => {
    const next: Record<string, unknown> = { ...job.record, ...patch, updated: deps.clock.now() };
    for (const k of drop) delete next[k];
    const snapshot = next as unknown as JobRecord;
    job.record = snapshot;
    job.writes = job.writes
      .then(() => deps.store.putJob(snapshot))
      .catch((e: unknown) => deps.log.warn('a job record could not be written', { jobId: snapshot.id, error: String(e) }));
    return job.writes;
  };

  const end = async (job: Live, status: JobStatus, messages: readonly JobMessage[], results?: Record<string, unknown>): Promise<void> => {
    await update(job, { status, messages: [...job.record.messages, ...messages], ...(results ? { results } : {}) }, ['progress']);
    live.delete(job.record.id);
    emitEnd(deps, job.record);
    job.finish();
  };

  const execute = async (job: Live): Promise<void> => {
    const started = deps.clock.now();
    const wall = performance.now();
    let lastWrite = -Infinity;
    const startTime = new Date(started).toISOString().replace('T', ' ').slice(0, 19);
    const executing = (): Promise<void> =>
      update(job, {
        status: 'geoJobExecuting',
        messages: [...job.record.messages, info('Executing...'), info(`Start Time: ${startTime}`)],
      });
    const task = taskOf(job.record);
    const hook = task.queue;
    // On the job queue a job waits there until a worker takes it (hook.run's `started`).
    if (!hook) await executing();
    const mine = { written: 0, offset: 0 };
    try {
      let budget: Pick<ExportOptions, 'maxBytes' | 'maxBytesName'> = {};
      if (quota !== undefined) {
        const measured = await measure();
        for (const u of usage.values()) u.offset = u.written;
        base = measured;
        usage.set(job.record.id, mine);
        budget = {
          maxBytes: (written) => {
            mine.written = written;
            return written + remaining();
          },
          maxBytesName: 'exportQuotaBytes',
        };
      }
      const policy = options.inputPolicy ? { inputPolicy: await options.inputPolicy() } : {};
      // Cancelled while the policy and the disk were being read: the run is not started.
      if (job.controller.signal.aborted) throw new EngineError('ABORTED', 'the job was cancelled');
      const runOptions: TaskRunOptions = {
        ...policy,
        ...budget,
        jobId: job.record.id,
        signal: job.controller.signal,
        ...(options.pool ? { pool: options.pool } : {}),
        onProgress: (p) => {
          if (job.record.status !== 'geoJobExecuting') return;
          const progress = {
            type: 'step' as const,
            message: task.progressMessage?.(p) ?? p.message,
            percent: Math.min(100, Math.floor((100 * p.done) / Math.max(1, p.total))),
          };
          // Throttled: the store sees at most one progress write per interval.
          const t = performance.now();
          if (t - lastWrite < interval) {
            job.record = { ...job.record, progress };
            return;
          }
          lastWrite = t;
          void update(job, { progress });
        },
      };
      const started = (): void => {
        if (job.record.status === 'geoJobWaiting' || job.record.status === 'geoJobSubmitted') void executing();
      };
      const outcome = hook ? await hook.run(job.record.id, job.params, runOptions, started) : await task.run(job.params ?? {}, runOptions);
      const elapsed = ((performance.now() - wall) / 1000).toFixed(2);
      await end(
        job,
        'geoJobSucceeded',
        [...outcome.messages.map(info), info(`Succeeded (Elapsed Time: ${elapsed} seconds)`)],
        outcome.results,
      );
    } catch (e) {
      if (isTerminal(job.record.status)) {
        // Ended already (a job cancelled while it waited on the queue).
      } else if (detached && !job.controller.signal.aborted) {
        // The server is stopping; the job goes on on the queue, recorded as it is.
        await job.writes;
        live.delete(job.record.id);
        job.finish();
      } else if (job.controller.signal.aborted) {
        await end(job, 'geoJobCancelled', [{ type: 'geoJobMessageTypeWarning', description: 'Cancelled.' }]);
      } else {
        const err = e instanceof EngineError ? e : new EngineError('INTERNAL', String((e as Error)?.message ?? e));
        const shown =
          err.code === 'INTERNAL'
            ? (task.internalError ?? 'An internal error stopped the job.')
            : err.path
              ? `${err.path}: ${err.message}`
              : err.message;
        if (err.code === 'INTERNAL') deps.log.warn(`a ${task.name} job crashed`, { jobId: job.record.id, error: err.message });
        await end(job, 'geoJobFailed', [error(shown), error('Failed.')]);
      }
    } finally {
      // Its bytes are on disk now: the next measurement counts them.
      usage.delete(job.record.id);
    }
  };

  const pump = (): void => {
    while (running < concurrency && queue.length > 0) {
      const job = queue.shift()!;
      if (job.record.status !== 'geoJobWaiting') continue;
      running++;
      void execute(job).finally(() => {
        running--;
        pump();
      });
    }
  };

  /**
   * The limits a new job must pass: jobs waiting or executing (a cancelling job still runs) on the
   * server and for its owner, and the disk the outputs already use.
   *
   * Decision: the server-wide count answers SERVER_BUSY (503: other users' jobs, it clears as they
   * finish), the per-user count and the quota LIMIT_EXCEEDED (400: the caller's own jobs and
   * outputs). Each says which setting it met, and the count.
   */
  const admit = (owner: string): void => {
    // Submits between this check and their record landing in `live` count too.
    let all = admitting.length;
    let own = admitting.filter((o) => o === owner).length;
    for (const j of live.values()) {
      if (isTerminal(j.record.status)) continue;
      all++;
      if (j.record.owner === owner) own++;
    }
    if (options.maxJobsPerUser !== undefined && own >= options.maxJobsPerUser) {
      const message = `${owner} has ${own} jobs waiting or executing, the most one user may have (maxJobsPerUser ${options.maxJobsPerUser}); wait for one to finish or cancel one`;
      throw new EngineError('LIMIT_EXCEEDED', message, { path: 'maxJobsPerUser', details: [`maxJobsPerUser: ${message}.`] });
    }
    if (options.maxJobs !== undefined && all >= options.maxJobs) {
      const message = `the server has ${all} jobs waiting or executing, the most it takes (maxJobs ${options.maxJobs}); try again later`;
      throw new EngineError('SERVER_BUSY', message, { path: 'maxJobs', details: [`maxJobs: ${message}.`] });
    }
  };
  const checkQuota = async (): Promise<void> => {
    if (quota !== undefined) {
      const used = await measure();
      if (used >= quota) {
        const message = `the outputs of the jobs use ${used} bytes, the disk quota of exports (exportQuotaBytes ${quota}); delete old job outputs or raise exportQuotaBytes`;
        throw new EngineError('LIMIT_EXCEEDED', message, { path: 'exportQuotaBytes', details: [`exportQuotaBytes: ${message}.`] });
      }
    }
  };

  const notCancellable = (id: string, status: string): EngineError =>
    new EngineError('INVALID_ARGUMENT', `job ${id} is ${status} and cannot be cancelled`, {
      details: [`Job '${id}' cannot be cancelled: its status is ${status}.`],
    });

  /** Record a new job and queue it. */
  const record = async (
    owner: string,
    inputs: Readonly<Record<string, unknown>>,
    params: Readonly<Record<string, unknown>>,
    task: string,
  ): Promise<JobRecord> => {
    const now = deps.clock.now();
    const id = `j${randomBytes(16).toString('hex')}`;
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const job: Live = {
      record: {
        id,
        task,
        status: 'geoJobSubmitted',
        owner,
        inputs,
        messages: [info('Submitted.')],
        created: now,
        updated: now,
      },
      params,
      controller: new AbortController(),
      writes: Promise.resolve(),
      done,
      finish,
    };
    // The first write is awaited and its failure is the caller's: no job is answered that the store lacks.
    await deps.store.putJob(job.record);
    live.set(id, job);
    const submitted = job.record;
    // Submitted -> Waiting in the queue -> Executing when a slot frees.
    void update(job, { status: 'geoJobWaiting' });
    queue.push(job);
    pump();
    return submitted;
  };

  return {
    async submit(owner, inputs, params, task = TASK_KEY) {
      if (!tasks.has(task)) throw new EngineError('NOT_FOUND', `no task ${task}`);
      if (closing) throw new EngineError('CONFLICT', 'the server is shutting down', { details: ['The server is shutting down.'] });
      admit(owner);
      admitting.push(owner);
      try {
        await checkQuota();
        return await record(owner, inputs, params, task);
      } finally {
        admitting.splice(admitting.indexOf(owner), 1);
      }
    },

    async cancel(jobId) {
      const job = live.get(jobId);
      if (job === undefined) {
        const rec = await deps.store.getJob(jobId);
        const asked = rec && !isTerminal(rec.status) && options.cancelElsewhere ? await options.cancelElsewhere(rec) : undefined;
        if (asked) return asked;
        throw notCancellable(jobId, rec?.status ?? 'unknown');
      }
      const status = job.record.status;
      if (status === 'geoJobWaiting') {
        // On the job queue it is taken off the queue first.
        const hook = taskOf(job.record).queue;
        if (hook) await hook.cancel(jobId);
        await end(job, 'geoJobCancelled', [{ type: 'geoJobMessageTypeWarning', description: 'Cancelled.' }]);
        if (hook) job.controller.abort(new Error('cancelled'));
        return job.record;
      }
      if (status === 'geoJobExecuting') {
        await update(job, { status: 'geoJobCancelling' }, ['progress']);
        job.controller.abort(new Error('cancelled'));
        return job.record;
      }
      throw notCancellable(jobId, status);
    },

    settled(jobId) {
      return live.get(jobId)?.done ?? Promise.resolve();
    },

    async close() {
      closing = true;
      if (queued) {
        detached = true;
        const jobs = [...live.values()];
        await Promise.all([...new Set([...tasks.values()].map((t) => t.queue).filter((q) => q !== undefined))].map((q) => q.detach()));
        await Promise.all(jobs.map((j) => j.done.then(() => j.writes)));
        return;
      }
      const jobs = [...live.values()];
      for (const job of jobs) {
        // Submitted jobs are about to wait: let their Waiting write land first.
        await job.writes;
        if (job.record.status === 'geoJobWaiting' || job.record.status === 'geoJobExecuting') {
          await this.cancel(job.record.id).catch(() => undefined);
        }
      }
      await Promise.all(jobs.map((j) => j.done.then(() => j.writes)));
    },

    async adoptUnfinished() {
      if (!queued) return 0;
      let n = 0;
      for (const record of await deps.store.listJobs()) {
        if (isTerminal(record.status) || tasks.get(record.task ?? TASK_KEY)?.queue === undefined || live.has(record.id)) continue;
        let finish!: () => void;
        const done = new Promise<void>((resolve) => (finish = resolve));
        const job: Live = { record, params: undefined, controller: new AbortController(), writes: Promise.resolve(), done, finish };
        live.set(record.id, job);
        // A cancel asked of the earlier run is asked again: the queue ends the job cancelled.
        if (record.status === 'geoJobCancelling') job.controller.abort(new Error('cancelled'));
        running++;
        void execute(job).finally(() => running--);
        n++;
      }
      return n;
    },
  };
}

/** The training-data export's closing message and result. */
function exportOutcome(summary: ExportSummary): TaskOutcome {
  return {
    messages: [`Exported ${summary.chips} chips with ${summary.labels} labels to ${summary.outputLocation}`],
    results: { outLocation: { uri: summary.outputLocation } },
  };
}

/**
 * Start-up: jobs the store holds as not ended were running when the server stopped. They are
 * marked geoJobFailed with a message saying why.
 *
 * Decision: fail, not resume. A half-written chip folder cannot be trusted (a chip being written
 * when the process died may be cut short), and the chipper writes the metadata (EMD, EAS, stats)
 * last, so the folder of an interrupted job is recognisably unfinished; the client submits again
 * (with `resume: true` to continue from the chipper's journal if it wants).
 */
export async function recoverJobs(
  deps: Pick<SiteDeps, 'store' | 'clock' | 'emit'>,
  /** Whether an unfinished job was left by a stopped server (default: every one is); a job another live server runs is not. */
  isOrphan: (job: JobRecord) => Promise<boolean> = () => Promise.resolve(true),
): Promise<number> {
  let n = 0;
  for (const job of await deps.store.listJobs()) {
    if (isTerminal(job.status) || !(await isOrphan(job))) continue;
    const { progress: _progress, ...rest } = job;
    const failed: JobRecord = {
      ...rest,
      status: 'geoJobFailed',
      messages: [
        ...job.messages,
        error('The server restarted while the job was running; the job was stopped. Submit it again.'),
        error('Failed.'),
      ],
      updated: deps.clock.now(),
    };
    await deps.store.putJob(failed);
    emitEnd(deps, failed);
    n++;
  }
  return n;
}

/**
 * The training-data export on the job queue: one export split into chip ranges that
 * `rasterflow worker` processes take, and one finalizer, with the output byte for byte that of a
 * one-process export with the same parameters.
 *
 * A chip's index, and so its file names, depends on every candidate before it (chips dropped for
 * NoData, for the empty-chip ratio), and those verdicts need its pixels. So a range is worked in
 * two jobs:
 * - `render` (any worker, ranges in parallel): renders each candidate of the range, takes the
 *   pixel verdicts (no labels, too much NoData, empty or not) and leaves the kept chips' pixels in
 *   the staging folder (staging.ts);
 * - the coordinator (the `export` job, on its own queue) folds the verdicts strictly in candidate
 *   order, exactly as the one-process loop does (the empty-chip ratio, the next index), and gives
 *   each kept chip its index;
 * - `write` (any worker): writes the range's chips with their indexes through the chipper's own
 *   writeChip (every file through a temporary name) and answers their journal entries;
 * - the coordinator appends the entries in candidate order to the chipper's journal and, after the
 *   last range, writes map.txt, the statistics, the EMD, the EAS and the label sets with the
 *   chipper's own writeMetadata, which folds the per-chip statistics in chip order: the same
 *   floating-point sums in the same order as one process.
 *
 * Ranges are blocks of `rangeSize` candidate ids, their jobs named after the export and the block,
 * so a coordinator taken over after its worker died finds the ranges already done in Redis and
 * folds them again from the same start: the same indexes, the journal rewritten to the same
 * lines. A worker killed mid-range loses its job's lock; after `lockDuration` another worker
 * takes the range and writes it again (the same files, the same bytes; the temporaries the dead
 * worker left are swept by the finalizer). A range job that fails (an unreadable block) fails the
 * export with its error, as one process would.
 */
import { mkdir, open as openFile, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DelayedError, Job, Queue, UnrecoverableError, type Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { combinedError, EngineError, toEngineError, type ErrorCode } from '../core/errors.js';
import type { PixelBlock } from '../core/pixel-block.js';
import { openerScope } from '../io/source.js';
import {
  chipRun,
  labelChip,
  exportTrainingData,
  planExport,
  writeChip,
  writeMetadata,
  type ChipRun,
  type ExportOptions,
  type ExportPlan,
  type ExportProgress,
  type ExportSummary,
  type Planned,
} from '../chipper/export.js';
import { removeTemporaries } from '../chipper/files.js';
import { componentObjects } from '../chipper/grid.js';
import { inputRefusals, openRefusal, type InputPolicy, type RasterOpener } from '../chipper/inputs.js';
import { Journal, type ChipEntry } from '../chipper/journal.js';
import type { ClassInfo } from '../chipper/metadata.js';
import { parseChipParams } from '../chipper/params.js';
import { renderChip } from '../chipper/pixels.js';
import { inFlightWindow, type QueueSettings } from './connection.js';
import { readStagedChip, stageChip, stagingDir, stagingRoot } from './staging.js';

/** The data of an `export` job. */
export interface ExportJobData {
  /** The task's parameters, as the one-process export takes them (a JSON object). */
  readonly params: Record<string, unknown>;
  /** Where inputs may be read from (a server's policy); none: any path or URL. */
  readonly inputPolicy?: InputPolicy;
  /** Candidates per range (default DEFAULT_RANGE_SIZE). */
  readonly rangeSize?: number;
}

/** What an `export` job reports as its progress (JSON). */
export type QueuedProgress = ExportProgress;

/** Candidate ids per chip range. Decision: 64: a range is a few seconds of work, small enough to spread over workers. */
export const DEFAULT_RANGE_SIZE = 64;
/** Ranges rendered ahead of the last one written, at least (connection.ts inFlightWindow): bounds the staged pixels on disk. */
const WINDOW = 16;
const POLL_MS = 100;

interface RangeJobData {
  readonly exportId: string;
  readonly params: Record<string, unknown>;
  readonly inputPolicy?: InputPolicy;
  /** The export's classes (an append merges an earlier export's). */
  readonly classes: ClassInfo[];
  /** Candidate ids [from, to). */
  readonly from: number;
  readonly to: number;
  /** write: [candidate id, index] of each chip to write, in order. */
  readonly assign?: [number, number][];
}

/** Pixel verdicts of a render job, per planned candidate of its range. */
const NO_LABELS = 0;
const NO_DATA = 1;
const KEPT = 2;
const KEPT_EMPTY = 3;

interface RenderResult {
  readonly ids: number[];
  readonly verdicts: number[];
}

// ---- Keys.

const cancelKey = (s: QueueSettings, exportId: string): string => `${s.prefix}:rasterflow:cancel:${exportId}`;
const stopKey = (s: QueueSettings, exportId: string): string => `${s.prefix}:rasterflow:stop:${exportId}`;
const baseKey = (s: QueueSettings, exportId: string): string => `${s.prefix}:rasterflow:base:${exportId}`;
const renderId = (exportId: string, k: number): string => `${exportId}-r${k}`;
const writeId = (exportId: string, k: number): string => `${exportId}-w${k}`;
const DAY = 86400;

// ---- Errors through Redis: an EngineError travels as JSON in the failed job's reason.

const FAILURE = 'rasterflow:';

/** The error a processor fails its job with: never retried (the same input fails the same way). */
export function failure(e: unknown): UnrecoverableError {
  const err = toEngineError(e);
  return new UnrecoverableError(
    FAILURE + JSON.stringify({ code: err.code, message: err.message, ...(err.path !== undefined ? { path: err.path } : {}) }),
  );
}

/** The EngineError of a failed job's reason. */
export function failureOf(reason: string | undefined, what: string): EngineError {
  if (reason?.startsWith(FAILURE)) {
    try {
      const e = JSON.parse(reason.slice(FAILURE.length)) as { code: ErrorCode; message: string; path?: string };
      return new EngineError(e.code, e.message, e.path !== undefined ? { path: e.path } : {});
    } catch {
      // fall through
    }
  }
  return new EngineError('INTERNAL', `${what} failed on a worker: ${reason ?? 'no reason given'}`);
}

// ---- Opening an export on a worker (cached: a worker's ranges of one export share it).

interface Opened {
  readonly plan: ExportPlan;
  readonly run: ChipRun;
  readonly byId: Map<number, Planned>;
  close(): Promise<void>;
}

/** The chipper's opener: a server's policy checked, broken files refused before any chip. */
function policyOpener(files: ReturnType<typeof openerScope>, policy: InputPolicy | undefined): RasterOpener {
  return async (location, o) => {
    const refused = policy ? await openRefusal(policy, location, 'input') : undefined;
    if (refused) throw new EngineError('INVALID_ARGUMENT', refused.message, { path: refused.path });
    const source = await files.open(location, o);
    source.verifyBlocks?.();
    return source;
  };
}

async function openExport(data: RangeJobData): Promise<Opened> {
  const p = parseChipParams(data.params);
  if (data.inputPolicy) {
    const refused = await inputRefusals(p, data.inputPolicy);
    if (refused.length > 0) throw combinedError(refused);
  }
  const files = openerScope();
  try {
    // The folder is the coordinator's: the plan here does not read it (dryRun), and takes the
    // coordinator's classes.
    const planned = await planExport(p, { dryRun: true }, policyOpener(files, data.inputPolicy));
    const plan: ExportPlan = { ...planned, classes: data.classes };
    return {
      plan,
      run: chipRun(plan),
      byId: new Map(plan.planned.map((pl) => [pl.c.id, pl] as const)),
      close: () => files.closeAll(),
    };
  } catch (e) {
    await files.closeAll();
    throw e;
  }
}

/** Open exports of one worker process, by export id; the two most recent stay open. */
class OpenExports {
  private readonly open = new Map<string, { opened: Promise<Opened>; users: number }>();

  async use<T>(data: RangeJobData, f: (o: Opened) => Promise<T>): Promise<T> {
    let entry = this.open.get(data.exportId);
    if (entry === undefined) {
      entry = { opened: openExport(data), users: 0 };
      entry.opened.catch(() => undefined);
      this.open.set(data.exportId, entry);
    }
    entry.users++;
    try {
      return await f(await entry.opened);
    } catch (e) {
      // A failed open is not kept: the next job of the export tries again.
      if ((await entry.opened.then(() => false).catch(() => true)) && this.open.get(data.exportId) === entry)
        this.open.delete(data.exportId);
      throw e;
    } finally {
      entry.users--;
      await this.evict();
    }
  }

  private async evict(): Promise<void> {
    const idle = [...this.open.entries()].filter(([, e]) => e.users === 0);
    for (const [id, e] of idle.slice(0, Math.max(0, this.open.size - 2))) {
      this.open.delete(id);
      await (await e.opened.catch(() => undefined))?.close();
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    for (const e of all) await (await e.opened.catch(() => undefined))?.close();
  }
}

// ---- The range jobs.

/** Stops a range when its export was cancelled or its coordinator failed (checked between chips). */
async function checkStop(redis: Redis, s: QueueSettings, exportId: string): Promise<void> {
  if ((await redis.exists(stopKey(s, exportId))) === 1) throw new EngineError('ABORTED', 'the export was stopped');
}

/** The class chip of a rendered class raster: class values where valid, 0 elsewhere (as the one-process loop). */
function classValuesOf(classChip: PixelBlock, maxClass: number): Uint8Array | Uint16Array {
  const n = classChip.mask.length;
  const values = maxClass > 255 ? new Uint16Array(n) : new Uint8Array(n);
  const band = classChip.bands[0]!;
  for (let i = 0; i < n; i++) values[i] = classChip.mask[i] ? band[i]! : 0;
  return values;
}

async function renderRange(o: Opened, data: RangeJobData, stop: () => Promise<void>): Promise<RenderResult> {
  const { plan, run } = o;
  const { p, inputs } = plan;
  const { items, extra, classRasterSource } = inputs;
  const list = plan.planned.filter((pl) => pl.c.id >= data.from && pl.c.id < data.to);
  const dir = stagingDir(p.outputLocation, data.exportId);
  const rendered = (pl: Planned): boolean => plan.labelled(pl) || p.context.exportAllTiles;
  // A few chips rendered ahead: reads and decodes overlap the chip being checked and staged.
  const ahead = 4;
  const pixels: (Promise<{ image: PixelBlock; image2?: PixelBlock; classes?: PixelBlock }> | undefined)[] = [];
  const start = (i: number): void => {
    const pl = list[i];
    if (pl === undefined || pixels[i] !== undefined || !rendered(pl)) return;
    const it = items[pl.c.item]!;
    const promise = (async () => ({
      image: await renderChip(it, pl.c, undefined, undefined),
      ...(extra ? { image2: await renderChip(extra, pl.c, undefined, undefined) } : {}),
      ...(classRasterSource ? { classes: await renderChip(classRasterSource, pl.c, undefined, undefined, true) } : {}),
    }))();
    promise.catch(() => undefined);
    pixels[i] = promise;
  };
  for (let i = 0; i < ahead; i++) start(i);
  const verdicts: number[] = [];
  try {
    for (let i = 0; i < list.length; i++) {
      start(i + ahead);
      const pl = list[i]!;
      const px = pixels[i];
      if (px === undefined) {
        verdicts.push(NO_LABELS);
        continue;
      }
      await stop();
      const { image, image2, classes } = await px;
      pixels[i] = undefined;
      const { width: w, height: h } = pl.c.window;
      let invalid = 0;
      for (let j = 0; j < w * h; j++) if (image.mask[j] === 0) invalid++;
      if (invalid / (w * h) > p.maxNoDataFraction) {
        verdicts.push(NO_DATA);
        continue;
      }
      const classValues = classes ? classValuesOf(classes, run.labels.maxClass) : undefined;
      const objects = classValues ? componentObjects(classValues, w, h, plan.names) : pl.objects;
      const empty = objects.length === 0 && pl.instanceObjects.length === 0;
      await stageChip(dir, pl.c.id, { image, ...(image2 ? { image2 } : {}), ...(classValues ? { classValues } : {}) });
      verdicts.push(empty ? KEPT_EMPTY : KEPT);
    }
  } finally {
    await Promise.allSettled(pixels.filter((x) => x !== undefined));
  }
  return { ids: list.map((pl) => pl.c.id), verdicts };
}

async function writeRange(o: Opened, data: RangeJobData, stop: () => Promise<void>): Promise<ChipEntry[]> {
  const { plan, run } = o;
  const { p } = plan;
  const dir = stagingDir(p.outputLocation, data.exportId);
  const entries: ChipEntry[] = [];
  for (const [id, index] of data.assign ?? []) {
    await stop();
    const pl = o.byId.get(id);
    if (pl === undefined) throw new EngineError('INTERNAL', `candidate ${id} is not in this worker's plan of the export`);
    const c = pl.c;
    const { image, image2, classValues } = await readStagedChip(dir, id);
    const { width: w, height: h } = c.window;
    // As the one-process loop, from its pixels on: the class chip's objects, the blackening, the chip.
    const objects = classValues ? componentObjects(classValues, w, h, plan.names) : pl.objects;
    const empty = objects.length === 0 && pl.instanceObjects.length === 0;
    const chip = labelChip(run, pl, index, image, objects, classValues);
    entries.push(await writeChip(run, c, index, chip, empty, image, image2));
  }
  return entries;
}

/** The processor of the ranges queue (`render` and `write` jobs). */
export function rangeProcessor(redis: Redis, s: QueueSettings, cache: OpenExports) {
  return async (job: Job<RangeJobData>): Promise<RenderResult | ChipEntry[]> => {
    const data = job.data;
    const stop = (): Promise<void> => checkStop(redis, s, data.exportId);
    try {
      await stop();
      return await cache.use<RenderResult | ChipEntry[]>(data, (o) =>
        job.name === 'render' ? renderRange(o, data, stop) : writeRange(o, data, stop),
      );
    } catch (e) {
      const f = failure(e);
      // A write that failed (a file renamed away under it, a full disk for a moment) is tried again.
      if (toEngineError(e).code === 'IO_ERROR' && job.attemptsMade + 1 < (job.opts.attempts ?? 1)) throw new Error(f.message);
      throw f;
    }
  };
}

export { OpenExports };

// ---- Waiting for a job.

/** Resolves with a job's return value once it completed; rejects with its error when it failed. */
export async function finished<R>(
  queue: Queue,
  id: string,
  what: string,
  signal?: AbortSignal,
  cancelled = 'the export was cancelled',
): Promise<R> {
  for (;;) {
    if (signal?.aborted) throw new EngineError('ABORTED', cancelled, { cause: signal.reason });
    const job = (await Job.fromId(queue, id)) as Job<unknown, R> | undefined;
    if (job === undefined) throw new EngineError('INTERNAL', `${what} (job ${id}) is no longer on the queue`);
    if (job.finishedOn !== undefined && job.finishedOn > 0) {
      if (job.failedReason) throw failureOf(job.failedReason, what);
      return job.returnvalue;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

// ---- The coordinator and finalizer (the `export` job).

/** The first journal line and the first `n` entries: the journal as the first coordination left it at its start. */
async function cutJournal(out: string, n: number): Promise<void> {
  const path = join(out, '.rasterflow-journal.ndjson');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return;
  }
  const lines = text.split('\n');
  if (lines.length < 2 + n) return;
  const kept = `${lines.slice(0, 1 + n).join('\n')}\n`;
  const h = await openFile(path, 'r+');
  try {
    await h.truncate(Buffer.byteLength(kept));
  } finally {
    await h.close();
  }
}

interface Base {
  readonly done: number;
}

export interface CoordinatorContext {
  readonly redis: Redis;
  readonly settings: QueueSettings;
  readonly ranges: Queue;
  /** Aborted when this worker shuts down: the coordination is handed to another worker. */
  readonly shutdown: AbortSignal;
  /** Told what the coordinator does that no job event shows (a coordination left to another worker). */
  readonly log?: (line: string) => void;
}

export function exportProcessor(ctx: CoordinatorContext) {
  return async (job: Job<ExportJobData>, token?: string): Promise<ExportSummary> => {
    try {
      return await coordinate(job, ctx, token);
    } catch (e) {
      // Another worker coordinates the export now: this one leaves everything to it, touching nothing.
      if (e instanceof LockLost) {
        ctx.log?.(`export ${job.name} ${job.id ?? ''} left: ${e.message}`);
        throw e;
      }
      if (ctx.shutdown.aborted && !(e instanceof EngineError && e.code !== 'ABORTED')) {
        // This worker is stopping: the export goes back to the queue for another worker (or this
        // one, started again), which continues it from the ranges already done. Delayed a moment,
        // so that this worker, still closing, does not take it again at once.
        await job.moveToDelayed(Date.now() + 1000, token);
        throw new DelayedError();
      }
      // The workers stop this export's ranges; its staged pixels go (the journal stays, for a resume).
      await ctx.redis.set(stopKey(ctx.settings, job.id!), '1', 'EX', DAY);
      const out = (job.data.params as { outputLocation?: unknown }).outputLocation;
      if (typeof out === 'string' && out !== '') await rm(stagingRoot(out), { recursive: true, force: true }).catch(() => undefined);
      throw failure(e);
    }
  };
}

/** The coordination's lock went to another worker (this one stalled past the lock's duration: paused, swapped out). */
class LockLost extends Error {}

async function coordinate(job: Job<ExportJobData>, ctx: CoordinatorContext, token: string | undefined): Promise<ExportSummary> {
  const { redis, settings: s, ranges } = ctx;
  const exportId = job.id!;
  /**
   * Before writing the journal or the metadata: this worker still holds the coordination, for a
   * whole lock's duration more (no other worker can take it over meanwhile). A worker that stalled
   * past its lock (paused, swapped out) finds the export taken over and stops without writing.
   */
  const holdLock = async (): Promise<void> => {
    if (token !== undefined && (await job.extendLock(token, s.lockDuration)) !== 1) {
      throw new LockLost(`the coordination of export ${exportId} was taken over by another worker`);
    }
  };
  const controller = new AbortController();
  const signal = controller.signal;
  const onShutdown = (): void => controller.abort(new Error('the worker is stopping'));
  if (ctx.shutdown.aborted) onShutdown();
  else ctx.shutdown.addEventListener('abort', onShutdown, { once: true });
  const cancelPoll = setInterval(() => {
    void redis.exists(cancelKey(s, exportId)).then(
      (n) => {
        if (n === 1) controller.abort(new Error('cancelled'));
      },
      () => undefined,
    );
  }, 250);
  let lastProgress = 0;
  const progress = (pr: ExportProgress, force = false): void => {
    const t = performance.now();
    if (!force && t - lastProgress < 250) return;
    lastProgress = t;
    void job.updateProgress(pr).catch(() => undefined);
  };
  const files = openerScope();
  try {
    const raw = job.data.params;
    // Cancelled before a worker took it (the removal from the queue came too late).
    if ((await redis.exists(cancelKey(s, exportId))) === 1) throw cancelled();
    const first = await redis.get(baseKey(s, exportId));
    const base = first === null ? undefined : (JSON.parse(first) as Base);
    let p = parseChipParams(raw);
    const policy = job.data.inputPolicy;
    if (policy) {
      const refused = await inputRefusals(p, policy);
      if (refused.length > 0) throw combinedError(refused);
    }
    // CycleGAN (two sub-exports on their own grids) runs here, in one process.
    if (p.metadataFormat === 'CycleGAN') {
      return await exportTrainingData(raw, { signal, onProgress: (pr) => progress(pr), ...(policy ? { inputPolicy: policy } : {}) });
    }
    // Taken over from a coordinator that stopped: its journal, cut back to where it started.
    if (base !== undefined) {
      await cutJournal(p.outputLocation, base.done);
      p = { ...p, resume: true };
    }
    const plan = await planExport(p, { signal }, policyOpener(files, policy));
    if (base === undefined) await redis.set(baseKey(s, exportId), JSON.stringify({ done: plan.done.length }), 'EX', 30 * DAY);
    const out = p.outputLocation;
    await mkdir(out, { recursive: true });
    const run = chipRun(plan);
    const total = plan.candidates.length;
    const size = Math.max(1, job.data.rangeSize ?? DEFAULT_RANGE_SIZE);

    // Ranges: blocks of `size` candidate ids holding planned candidates.
    const blocks = new Map<number, Planned[]>();
    for (const pl of plan.planned) {
      const k = Math.floor(pl.c.id / size);
      let list = blocks.get(k);
      if (list === undefined) blocks.set(k, (list = []));
      list.push(pl);
    }
    const order = [...blocks.keys()].sort((a, b) => a - b);
    const dataOf = (k: number): RangeJobData => ({
      exportId,
      params: raw,
      ...(policy ? { inputPolicy: policy } : {}),
      classes: plan.classes,
      // A resumed export starts after its journal, maybe inside a block.
      from: Math.max(k * size, plan.firstCandidate),
      to: (k + 1) * size,
    });
    // Kept until the coordinator has folded them (it removes them at the end); a week at most, for
    // the range jobs of an export that failed or was cancelled.
    const keep = { removeOnComplete: { age: 7 * DAY }, removeOnFail: { age: 7 * DAY }, attempts: 3 } as const;
    let rendersAdded = 0;
    let consumed = 0;
    const window = inFlightWindow(ranges, WINDOW);
    const addRenders = async (): Promise<void> => {
      const ahead = await window();
      while (rendersAdded < order.length && rendersAdded < consumed + ahead) {
        const k = order[rendersAdded++]!;
        await ranges.add('render', dataOf(k), { ...keep, jobId: renderId(exportId, k), priority: 2 });
      }
    };

    const journal = await Journal.open(p, plan.firstCandidate);
    try {
      let { nextIndex, kept, emptyKept } = plan;
      const skipped = { ...plan.skipped };
      const written: ChipEntry[] = [...plan.done];
      // Write jobs added, in range order; the consumer below waits on them in the same order.
      const writes: Promise<{ k: number; staged: number[] }>[] = [];
      const writeAdded: ((v: { k: number; staged: number[] }) => void)[] = [];
      for (let i = 0; i < order.length; i++) writes.push(new Promise((resolve) => (writeAdded[i] = resolve)));
      for (const w of writes) w.catch(() => undefined);

      // The fold: verdicts in candidate order, exactly as the one-process loop.
      const fold = async (): Promise<void> => {
        for (let i = 0; i < order.length; i++) {
          await addRenders();
          // Not further ahead of the written ranges than the window (taken-over ranges finish at once).
          while (rendersAdded <= i) {
            await new Promise((r) => setTimeout(r, POLL_MS));
            if (signal.aborted) throw cancelled();
          }
          const k = order[i]!;
          const result = await finished<RenderResult>(ranges, renderId(exportId, k), `chip range ${k}`, signal);
          const list = blocks.get(k)!;
          if (result.ids.length !== list.length || result.ids.some((id, j) => id !== list[j]!.c.id)) {
            throw new EngineError('INTERNAL', `a worker planned chip range ${k} differently: do all workers run the same version?`);
          }
          const assign: [number, number][] = [];
          const staged: number[] = [];
          result.verdicts.forEach((v, j) => {
            const id = result.ids[j]!;
            if (v === NO_LABELS) return void skipped.noLabels++;
            staged.push(id);
            if (v === NO_DATA) return void skipped.noData++;
            const empty = v === KEPT_EMPTY;
            if (empty && p.inputClassData !== undefined && emptyKept + 1 > p.maxEmptyChipRatio * (kept + 1)) {
              return void skipped.emptyRatio++;
            }
            assign.push([id, nextIndex++]);
            kept++;
            if (empty) emptyKept++;
          });
          await ranges.add('write', { ...dataOf(k), assign }, { ...keep, jobId: writeId(exportId, k), priority: 1 });
          writeAdded[i]!({ k, staged });
        }
      };
      // The consumer: journal entries in candidate order, then the staged pixels of the range removed.
      const consume = async (): Promise<void> => {
        const dir = stagingDir(out, exportId);
        const stopped = new Promise<never>((_, reject) => {
          const stop = (): void => reject(new EngineError('ABORTED', 'the export was cancelled'));
          if (signal.aborted) stop();
          else signal.addEventListener('abort', stop, { once: true });
        });
        stopped.catch(() => undefined);
        for (let i = 0; i < order.length; i++) {
          const { k, staged } = await Promise.race([writes[i]!, stopped]);
          const entries = await finished<ChipEntry[]>(ranges, writeId(exportId, k), `chip range ${k}`, signal);
          await holdLock();
          for (const e of entries) {
            await journal.append(e);
            written.push(e);
          }
          consumed = i + 1;
          await addRenders();
          const lastId = blocks.get(k)!.at(-1)!.c.id;
          progress({ done: lastId + 1, total, chips: written.length, message: `chip ${lastId + 1} of ${total}` });
          await Promise.all(staged.map((id) => rm(join(dir, `${id}.chip`), { force: true })));
        }
      };
      const stopOther = (e: unknown): never => {
        controller.abort(e);
        throw e;
      };
      await Promise.all([fold().catch(stopOther), consume().catch(stopOther)]).catch((e: unknown) => {
        // The first real error, not the cancellation it caused in the other loop.
        const reason: unknown = signal.reason;
        if (reason instanceof LockLost) throw reason;
        throw reason instanceof EngineError ? reason : reason instanceof Error && reason.message === 'cancelled' ? cancelled() : e;
      });

      // Every range is written: the temporaries of workers killed mid-write and the staging go.
      await holdLock();
      await rm(stagingRoot(out), { recursive: true, force: true });
      await removeTemporaries(out);
      const summary = await writeMetadata(run, written, plan.earlier, plan.classValues);
      await journal.remove();
      progress({ done: total, total, chips: written.length, message: 'done' }, true);
      // The range jobs' results are folded: they leave Redis.
      await Promise.all(order.flatMap((k) => [renderId(exportId, k), writeId(exportId, k)]).map((id) => ranges.remove(id).catch(() => 0)));
      await redis.del(baseKey(s, exportId));
      const userResume = (raw as { resume?: unknown }).resume === true;
      return {
        outputLocation: out,
        dryRun: false,
        candidates: total,
        chips: written.length,
        labels: summary.labels,
        firstIndex: written[0]?.index ?? p.context.startIndex,
        nextIndex: summary.nextIndex,
        skipped,
        labelsOutsideRaster: plan.labelsOutsideRaster,
        bytes: summary.bytes,
        classes: plan.classes,
        ...(userResume && base === undefined && plan.done.length > 0 ? { resumedFrom: plan.done.length } : {}),
      };
    } finally {
      await journal.close();
    }
  } finally {
    clearInterval(cancelPoll);
    ctx.shutdown.removeEventListener('abort', onShutdown);
    await files.closeAll();
  }
}

const cancelled = (): EngineError => new EngineError('ABORTED', 'the export was cancelled');

// ---- Submitting and watching.

export interface SubmitOptions {
  /** The export job's id (default a random one); the GP front uses its own job id. */
  readonly jobId?: string;
  readonly inputPolicy?: InputPolicy;
  readonly rangeSize?: number;
}

/** Put an export on the queue; parameters are checked first (errors with paths, before any job exists). */
export async function submitExport(queue: Queue, params: unknown, o: SubmitOptions = {}): Promise<string> {
  parseChipParams(params); // throws with paths, as the one-process export does
  const parsed = typeof params === 'string' ? (JSON.parse(params) as unknown) : params;
  const data: ExportJobData = {
    params: parsed as Record<string, unknown>,
    ...(o.inputPolicy ? { inputPolicy: o.inputPolicy } : {}),
    ...(o.rangeSize !== undefined ? { rangeSize: o.rangeSize } : {}),
  };
  const job = await queue.add('export', data, {
    ...(o.jobId !== undefined ? { jobId: o.jobId } : {}),
    attempts: 1,
    removeOnComplete: { age: 7 * DAY },
    removeOnFail: { age: 7 * DAY },
  });
  return job.id!;
}

/** Ask a queued export to stop: its coordinator stops between ranges, its workers between chips. */
export async function cancelExport(queue: Queue, redis: Redis, s: QueueSettings, jobId: string): Promise<void> {
  await redis.set(cancelKey(s, jobId), '1', 'EX', DAY);
  await redis.set(stopKey(s, jobId), '1', 'EX', DAY);
  // A job no worker has taken yet is removed at once.
  const job = await Job.fromId(queue, jobId);
  if (job && ['waiting', 'delayed', 'prioritized'].includes(await job.getState())) await job.remove().catch(() => undefined);
}

/** How a job on the queue is followed (watchJob). */
export interface WatchOptions<P> {
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: P) => void;
  /** Stops following the job (a server stopping): it goes on on the queue. */
  readonly detach?: AbortSignal;
  /** Called once, when a worker has taken the job. */
  readonly started?: () => void;
}

/**
 * Wait for a job on the queue (`what`: "export", "render"): its progress reported as it changes,
 * its result answered, its failure thrown as the EngineError it was; `signal` cancels it with
 * `cancel`.
 */
export async function watchJob<R, P>(
  queue: Queue,
  jobId: string,
  what: string,
  cancel: () => Promise<void>,
  o: WatchOptions<P> = {},
): Promise<R> {
  let cancelling = false;
  let taken = false;
  let last = '';
  for (;;) {
    if (o.detach?.aborted) throw new EngineError('ABORTED', `no longer followed; the ${what} goes on on the job queue`);
    if (o.signal?.aborted && !cancelling) {
      cancelling = true;
      await cancel();
    }
    const job = (await Job.fromId(queue, jobId)) as Job<unknown, R> | undefined;
    if (job === undefined) {
      if (cancelling) throw new EngineError('ABORTED', `the ${what} was cancelled`);
      throw new EngineError('NOT_FOUND', `the ${what} ${jobId} is no longer on the queue`, { path: 'jobId' });
    }
    if (!taken && job.processedOn !== undefined && job.processedOn > 0) {
      taken = true;
      o.started?.();
    }
    const pr = job.progress;
    if (typeof pr === 'object' && pr !== null && JSON.stringify(pr) !== last) {
      last = JSON.stringify(pr);
      o.onProgress?.(pr as P);
    }
    if (job.finishedOn !== undefined && job.finishedOn > 0) {
      if (job.failedReason) throw failureOf(job.failedReason, `the ${what}`);
      return job.returnvalue;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Wait for a queued export (watchJob), its progress as the one-process export's onProgress. */
export function watchExport(
  queue: Queue,
  redis: Redis,
  s: QueueSettings,
  jobId: string,
  o: Pick<ExportOptions, 'signal' | 'onProgress'> & WatchOptions<ExportProgress> = {},
): Promise<ExportSummary> {
  return watchJob<ExportSummary, ExportProgress>(queue, jobId, 'export', () => cancelExport(queue, redis, s, jobId), o);
}

export type { Worker };

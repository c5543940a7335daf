/**
 * Worker threads for exportImage (issue 18, performance): each runs `renderExport` (render on the
 * request grid + encoding) for whole requests, so the main thread keeps HTTP, parameters and
 * auth, and a second core renders. Jobs go to the worker with the fewest in flight; the main
 * thread's render slots (service.ts) still bound the jobs in flight, so memory stays bounded.
 * Every worker opens a service from the same record with the same code as the main thread, so
 * the bytes do not depend on the number of workers (tested with 0, 1 and 2).
 *
 * Size: `RASTERFLOW_IMAGE_WORKERS` (0 = render on the main thread), else `defaultExportWorkers()`:
 * the machine's cores (at most 4). One pool per process; its workers start on the first exportImage
 * and are unref'd (they never keep a process alive); `destroy()` ends them.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { EngineError } from '../../core/errors.js';
import { abortError, throwIfAborted } from '../limits.js';
import type { EncodedImage, ExportJob, ExportPool } from './export-image.js';
import type { ExportCancel, ExportReply, ExportRequest } from './export-worker.js';
import type { ImageServices, OpenedImageService } from './service.js';

export interface ExportWorkerPool extends ExportPool {
  readonly size: number;
  destroy(): Promise<void>;
}

interface Slot {
  readonly worker: Worker;
  failed: EngineError | undefined;
  readonly pending: Map<number, { resolve: (e: EncodedImage) => void; reject: (e: unknown) => void }>;
}

/** The worker entry beside this module (sources, tsc output), or under the CLI bundle's dist/. */
function entryUrl(): { url: URL; ts: boolean } {
  const here = import.meta.url;
  const ts = here.endsWith('.ts');
  const beside = new URL(ts ? './export-worker.ts' : './export-worker.js', here);
  if (existsSync(fileURLToPath(beside))) return { url: beside, ts };
  return { url: new URL('../adapters/image/export-worker.js', here), ts };
}

export function defaultExportWorkers(): number {
  const v = process.env['RASTERFLOW_IMAGE_WORKERS'];
  if (v !== undefined && v !== '') {
    const n = Number(v);
    if (Number.isInteger(n) && n >= 0) return n;
  }
  return Math.min(4, availableParallelism());
}

export function createExportPool(size: number): ExportWorkerPool {
  if (!(Number.isInteger(size) && size >= 1))
    throw new EngineError('INVALID_ARGUMENT', `export workers must be a whole number >= 1, got ${size}`);
  const { url, ts } = entryUrl();
  const slots: Slot[] = [];
  let seq = 0;
  let destroyed = false;
  for (let i = 0; i < size; i++) {
    // Under vitest/tsx the sources are TypeScript: the worker registers the same loader first (as src/workers/pool.ts).
    const worker = ts
      ? new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`, {
          eval: true,
          execArgv: [],
          workerData: {},
        })
      : new Worker(url, { execArgv: [], workerData: {} });
    const slot: Slot = { worker, pending: new Map(), failed: undefined };
    worker.on('message', (m: ExportReply) => {
      const p = slot.pending.get(m.id);
      if (p === undefined) return;
      slot.pending.delete(m.id);
      if (m.ok) p.resolve({ bytes: m.bytes, contentType: m.contentType, ext: m.ext });
      else
        p.reject(new EngineError(m.error.code, m.error.message, { path: m.error.path, issues: m.error.issues, details: m.error.details }));
    });
    const fail = (err: EngineError): void => {
      slot.failed ??= err;
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
    };
    worker.on('error', (e) => fail(new EngineError('INTERNAL', `export worker failed: ${e.message}`, { cause: e })));
    worker.on('exit', (code) => fail(new EngineError(destroyed ? 'ABORTED' : 'INTERNAL', `export worker exited with code ${code}`)));
    worker.unref();
    slots.push(slot);
  }
  return {
    size,
    async run(
      services: ImageServices,
      service: OpenedImageService,
      job: ExportJob,
      signal?: AbortSignal,
      client?: string,
    ): Promise<EncodedImage> {
      if (destroyed) throw new EngineError('ABORTED', 'the export workers were stopped');
      // The main thread's render slot bounds the jobs in flight (and their memory), per client too.
      const renderSlot = await services.renderSlot(signal, client);
      // Whether the slot is released when the worker answers (an aborted job) instead of below.
      let releaseOnReply = false;
      try {
        throwIfAborted(signal);
        const live = slots.filter((s) => s.failed === undefined);
        if (live.length === 0) throw slots[0]!.failed!;
        const slot = live.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
        const id = ++seq;
        let onAbort: (() => void) | undefined;
        return await new Promise<EncodedImage>((resolve, reject) => {
          slot.pending.set(id, { resolve, reject });
          onAbort = () => {
            if (!slot.pending.has(id)) return;
            // The caller is answered now (TIMEOUT past requestTimeoutMs, ABORTED when the client went
            // away); the worker stops the job at its next tile and answers, and only then are its
            // render slot and its place in the worker's count given up, so that cancelled jobs never
            // let more renders run at once than maxRenders.
            releaseOnReply = true;
            const ended = (): void => {
              renderSlot.release();
              if (slot.pending.size === 0) slot.worker.unref();
            };
            slot.pending.set(id, { resolve: ended, reject: ended });
            const cancel: ExportCancel = { cancel: id };
            slot.worker.postMessage(cancel);
            reject(abortError(signal));
          };
          signal?.addEventListener('abort', onAbort, { once: true });
          slot.worker.ref();
          const request: ExportRequest = { id, record: service.record, job };
          slot.worker.postMessage(request);
        }).finally(() => {
          if (onAbort) signal?.removeEventListener('abort', onAbort);
          if (slot.pending.size === 0) slot.worker.unref();
        });
      } finally {
        if (!releaseOnReply) renderSlot.release();
      }
    },
    async destroy() {
      destroyed = true;
      for (const s of slots) {
        for (const p of s.pending.values()) p.reject(new EngineError('ABORTED', 'the export workers were stopped'));
        s.pending.clear();
      }
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}

let shared: ExportWorkerPool | null | undefined;

/**
 * The process's export pool (created on first use with `defaultExportWorkers()`), or undefined
 * for none. Decision: one pool for the process, whatever the number of sites or registries (a
 * host or a test suite that makes many sites does not start 2 threads for each); a job carries
 * its service's record, so a worker serves any site.
 */
export function exportPoolOf(): ExportWorkerPool | undefined {
  if (shared === undefined) {
    const n = defaultExportWorkers();
    shared = n > 0 ? createExportPool(n) : null;
  }
  return shared ?? undefined;
}

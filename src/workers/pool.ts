/**
 * A worker-thread tile pool. Each worker rebuilds the DAG from the recipe (rule JSON + source
 * locations, cached by their JSON) and evaluates whole tiles; pixels come back as transferred
 * buffers. Tiles are independent, so the output does not depend on the pool size. `size: 0` is
 * the inline pool. One pool per process, created by the host (CLI, server) and passed in; the
 * library never creates one by itself. Dispatch goes to the least-loaded worker.
 */
import { Worker } from 'node:worker_threads';
import { EngineError } from '../core/errors.js';
import type { PixelBlock } from '../core/pixel-block.js';
import type { Rect } from '../core/rect.js';
import { inlinePool, type Recipe, type TilePool } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import type { TileReply, TileRequest } from './tile-worker.js';

export interface WorkerPool extends TilePool {
  /** Terminates the workers; pending tiles reject with ABORTED. */
  destroy(): Promise<void>;
}

interface Slot {
  readonly worker: Worker;
  /** Set when the worker died: later tiles fail at once instead of waiting forever. */
  failed: EngineError | undefined;
  readonly pending: Map<number, { resolve: (b: PixelBlock) => void; reject: (e: unknown) => void }>;
}

export function createPool(options: { readonly size: number }): WorkerPool {
  if (!(Number.isInteger(options.size) && options.size >= 0)) {
    throw new EngineError('INVALID_ARGUMENT', `worker count must be a whole number >= 0, got ${options.size}`, { path: 'workers' });
  }
  if (options.size === 0) return { ...inlinePool, destroy: () => Promise.resolve() };

  const here = import.meta.url;
  const isTs = here.endsWith('.ts');
  // '../workers/': right from this module and from the CLI bundle (dist/cli/rasterflow.js) alike.
  const entry = new URL(isTs ? '../workers/tile-worker.ts' : '../workers/tile-worker.js', here);
  const slots: Slot[] = [];
  let seq = 0;
  let destroyed = false;

  for (let i = 0; i < options.size; i++) {
    // Under vitest/tsx the sources are TypeScript: the worker registers the same loader first.
    // workerData must be an object: geotiff.js loads web-worker, which reads it in any worker thread.
    const worker = isTs
      ? new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`, {
          eval: true,
          execArgv: [],
          workerData: {},
        })
      : new Worker(entry, { execArgv: [], workerData: {} });
    const slot: Slot = { worker, pending: new Map(), failed: undefined };
    worker.on('message', (m: TileReply) => {
      const p = slot.pending.get(m.id);
      if (p === undefined) return;
      slot.pending.delete(m.id);
      if (m.ok) p.resolve(m.block);
      else p.reject(new EngineError(m.error.code, m.error.message, { path: m.error.path, issues: m.error.issues }));
    });
    const fail = (err: EngineError): void => {
      slot.failed ??= err;
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
    };
    worker.on('error', (e) => fail(new EngineError('INTERNAL', `tile worker failed: ${e.message}`, { cause: e })));
    worker.on('exit', (code) => fail(new EngineError(destroyed ? 'ABORTED' : 'INTERNAL', `tile worker exited with code ${code}`)));
    // After the listeners: adding a 'message' listener references the worker's port again.
    worker.unref();
    slots.push(slot);
  }

  return {
    size: options.size,
    run(root: RasterNode, tile: Rect, signal?: AbortSignal, recipe?: Recipe): Promise<PixelBlock> {
      if (recipe === undefined) return inlinePool.run(root, tile, signal);
      if (destroyed) return Promise.reject(new EngineError('ABORTED', 'the worker pool was destroyed'));
      if (signal?.aborted) return Promise.reject(new EngineError('ABORTED', 'the request was aborted'));
      const live = slots.filter((s) => s.failed === undefined);
      // Every slot has failed (none is live), so slots[0].failed is set.
      if (live.length === 0) return Promise.reject(slots[0]!.failed!);
      const slot = live.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
      const id = ++seq;
      let onAbort: (() => void) | undefined;
      return new Promise<PixelBlock>((resolve, reject) => {
        slot.pending.set(id, { resolve, reject });
        onAbort = () => {
          if (slot.pending.delete(id)) reject(new EngineError('ABORTED', 'the request was aborted'));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        slot.worker.ref();
        const request: TileRequest = { id, recipe, tile };
        slot.worker.postMessage(request);
      }).finally(() => {
        // A long render shares one signal across thousands of tiles: drop each tile's listener.
        if (onAbort) signal?.removeEventListener('abort', onAbort);
        if (slot.pending.size === 0) slot.worker.unref();
      });
    },
    async destroy() {
      destroyed = true;
      for (const s of slots) {
        for (const p of s.pending.values()) p.reject(new EngineError('ABORTED', 'the worker pool was destroyed'));
        s.pending.clear();
      }
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}

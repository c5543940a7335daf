/**
 * Export worker entry (export-pool.ts): runs `renderExport` for jobs the main thread sends, over
 * its own registry of the services it is told about (each opened from its record, as the main
 * thread opens it), and sends the encoded bytes back transferred. `{cancel: id}` aborts a job.
 */
import { parentPort } from 'node:worker_threads';
import { toEngineError } from '../../core/errors.js';
import type { ServiceRecord, SiteDeps } from '../site.js';
import { renderExport, type ExportJob } from './export-image.js';
import { createImageServices } from './service.js';

export interface ExportRequest {
  readonly id: number;
  readonly record: ServiceRecord;
  readonly job: ExportJob;
}

export interface ExportCancel {
  readonly cancel: number;
}

export type ExportReply =
  | {
      readonly id: number;
      readonly ok: true;
      readonly bytes: Uint8Array;
      readonly contentType: string;
      readonly ext: 'png' | 'jpg' | 'tif';
    }
  | {
      readonly id: number;
      readonly ok: false;
      readonly error: ReturnType<ReturnType<typeof toEngineError>['toJSON']> & { readonly details: readonly string[] };
    };

/** The records this worker was sent, by key: its registry's whole store. */
const records = new Map<string, ServiceRecord>();
const keyOf = (folder: string, name: string): string => `${folder ? `${folder}/` : ''}${name}`;
const store = { getService: (key: string) => Promise.resolve(records.get(key.replace(/\.ImageServer$/, ''))) };
const log = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined };
// Decision: the main thread's render slots already bound the jobs in flight, per server and per
// client; the worker's own registry only bounds how many of them render at once here, and never
// refuses one (no queue or per-client limit of its own).
const services = createImageServices({ store, log } as unknown as Pick<SiteDeps, 'store' | 'log'>, {
  maxQueuedRenders: Number.POSITIVE_INFINITY,
  maxRendersPerClient: Number.POSITIVE_INFINITY,
});
const running = new Map<number, AbortController>();

async function serve(m: ExportRequest): Promise<void> {
  const abort = new AbortController();
  running.set(m.id, abort);
  try {
    records.set(keyOf(m.record.folder ?? '', m.record.serviceName), m.record);
    const service = await services.open(m.record.folder ?? '', m.record.serviceName);
    if (!service) throw new Error(`the service ${m.record.serviceName} is not known to the export worker`);
    const encoded = await renderExport(services, service, m.job, abort.signal);
    const reply: ExportReply = { id: m.id, ok: true, bytes: encoded.bytes, contentType: encoded.contentType, ext: encoded.ext };
    parentPort!.postMessage(reply, [encoded.bytes.buffer as ArrayBuffer]);
  } catch (e) {
    const err = toEngineError(e);
    const reply: ExportReply = { id: m.id, ok: false, error: { ...err.toJSON(), details: err.details } };
    parentPort!.postMessage(reply);
  } finally {
    running.delete(m.id);
  }
}

parentPort?.on('message', (m: ExportRequest | ExportCancel) => {
  if ('cancel' in m) running.get(m.cancel)?.abort();
  else void serve(m);
});

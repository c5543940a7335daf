/** `rasterflow chip --queue`: submit an export to the job queue and follow it, as a local export is followed. */
import { isAbsolute, resolve } from 'node:path';
import type { ExportOptions, ExportSummary } from '../chipper/export.js';
import type { QueueSettings } from './connection.js';
import { submitExport, watchExport } from './export-queue.js';
import { openQueueClient } from './worker.js';

const PATH_PARAMS = ['outputLocation', 'inputRaster', 'inputClassData', 'inputMaskPolygons', 'additionalInputRaster', 'inputInstanceData'];

/** A location as given: a URL (any scheme) is kept, a relative path resolved against `cwd`. */
export const absoluteLocation = (v: string, cwd = process.cwd()): string =>
  /^[a-z][a-z0-9+.-]*:\/\//i.test(v) || isAbsolute(v) || v === '' ? v : resolve(cwd, v);

function absoluteInput(v: unknown, cwd: string): unknown {
  if (typeof v === 'string') return absoluteLocation(v, cwd);
  if (Array.isArray(v)) return v.map((x) => absoluteInput(x, cwd));
  if (v !== null && typeof v === 'object' && typeof (v as { url?: unknown }).url === 'string') {
    return { ...(v as Record<string, unknown>), url: absoluteLocation((v as { url: string }).url, cwd) };
  }
  return v;
}

/**
 * The parameters with their relative paths made absolute against the submitter's folder: the
 * workers run elsewhere.
 *
 * Decision: outputLocation and the input parameters (a path, a list of paths, an object's `url`)
 * are resolved here, as a local export would read them; paths inside a rendering rule's own
 * arguments are the rule's and must be absolute (or URLs) for workers in other folders.
 */
export function absoluteParams(raw: unknown, cwd = process.cwd()): Record<string, unknown> {
  const params = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, unknown>;
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return params;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) {
    out[k] = PATH_PARAMS.some((name) => name.toLowerCase() === k.toLowerCase()) ? absoluteInput(v, cwd) : v;
  }
  return out;
}

export interface QueuedChipOptions extends Pick<ExportOptions, 'signal' | 'onProgress'> {
  readonly onSubmitted?: (jobId: string) => void;
  readonly rangeSize?: number;
}

export async function runQueuedChip(settings: QueueSettings, raw: string, o: QueuedChipOptions = {}): Promise<ExportSummary> {
  const client = await openQueueClient(settings);
  try {
    let params: Record<string, unknown>;
    try {
      params = absoluteParams(raw);
    } catch {
      params = raw as unknown as Record<string, unknown>; // not JSON: submitExport reports it as the local export does
    }
    const id = await submitExport(client.exports, params, o.rangeSize !== undefined ? { rangeSize: o.rangeSize } : {});
    o.onSubmitted?.(id);
    return await watchExport(client.exports, client.redis, settings, id, {
      ...(o.signal ? { signal: o.signal } : {}),
      ...(o.onProgress ? { onProgress: o.onProgress } : {}),
    });
  } finally {
    await client.close();
  }
}

/**
 * exportImage in worker threads (export-pool.ts): the same bytes with 0 (this thread), 1 and 2
 * workers for PNG (bilinear min-max Stretch, cubic, nearest, masked edges), JPEG and GeoTIFF;
 * rule errors come back as the same EngineError (code and details); an aborted job rejects
 * with ABORTED and frees its render slot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import { budgetSignal } from '../limits.js';
import type { ServiceRecord, SiteDeps } from '../site.js';
import { renderExport, SERVED_PNG, type ExportJob } from './export-image.js';
import { createExportPool, defaultExportWorkers, exportPoolOf, type ExportWorkerPool } from './export-pool.js';
import { createImageServices, type ImageServices, type OpenedImageService } from './service.js';

const DEM = `${import.meta.dirname}/../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const record: ServiceRecord = { folder: 'Elevation', serviceName: 'dem', type: 'ImageServer', properties: { path: DEM }, created: 0 };
const store = { getService: (key: string) => Promise.resolve(key === 'Elevation/dem.ImageServer' ? record : undefined) };
const log = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined };

const STRETCH = { rasterFunction: 'Stretch', rasterFunctionArguments: { StretchType: 5, Min: 0, Max: 255 } };
const SR = { wkid: 32616 };
const encode = { format: 'png', quality: 75, compression: 'deflate' } as const;

function job(over: Partial<ExportJob>): ExportJob {
  return {
    rule: STRETCH,
    grid: { spatialReference: SR, extent: { xmin: 735000, ymin: 4040000, xmax: 745000, ymax: 4050000 }, width: 256, height: 256 },
    method: 'bilinear',
    included: true,
    encode,
    noDataMode: 'any',
    ...over,
  };
}

const JOBS: [string, ExportJob][] = [
  ['png bilinear min-max stretch', job({})],
  [
    'png cubic, bbox past the raster edge (masked)',
    job({
      method: 'cubic',
      grid: { spatialReference: SR, extent: { xmin: 725000, ymin: 4060000, xmax: 740000, ymax: 4075000 }, width: 200, height: 180 },
    }),
  ],
  [
    'png nearest, no rule, zoomed out',
    job({
      rule: undefined,
      method: 'nearest',
      grid: { spatialReference: SR, extent: { xmin: 720000, ymin: 4030000, xmax: 770000, ymax: 4080000 }, width: 97, height: 131 },
    }),
  ],
  ['jpg', job({ encode: { ...encode, format: 'jpg' } })],
  ['tiff F32', job({ rule: undefined, encode: { ...encode, format: 'tiff' } })],
  [
    'png in web mercator (warp)',
    job({
      grid: {
        spatialReference: { wkid: 3857 },
        extent: { xmin: -9390000, ymin: 4370000, xmax: -9370000, ymax: 4390000 },
        width: 128,
        height: 128,
      },
    }),
  ],
];

/** Waits until no render holds a slot of `s`, failing after `ms`. */
async function slotsFree(s: ImageServices, ms: number): Promise<void> {
  const t0 = Date.now();
  while (s.renderStats().running > 0 && Date.now() - t0 < ms) await new Promise((r) => setTimeout(r, 5));
  expect(s.renderStats().running).toBe(0);
}

let services: ImageServices;
let service: OpenedImageService;
let pools: ExportWorkerPool[];

beforeAll(async () => {
  services = createImageServices({ store, log } as unknown as Pick<SiteDeps, 'store' | 'log'>, { maxConcurrentRenders: 2 });
  service = (await services.open('Elevation', 'dem'))!;
  pools = [createExportPool(1), createExportPool(2)];
}, 60_000);

afterAll(async () => {
  await Promise.all(pools.map((p) => p.destroy()));
  await services.close();
});

describe('exportImage in export workers', () => {
  it('served PNGs use the one-pass up filter', () => {
    expect(SERVED_PNG).toEqual({ filter: 'up', deflateLevel: 1 });
  });

  it('the same bytes with 0, 1 and 2 workers', { timeout: 120_000 }, async () => {
    for (const [name, j] of JOBS) {
      const inline = await renderExport(services, service, j);
      expect(inline.bytes.length, name).toBeGreaterThan(100);
      for (const pool of pools) {
        // Several at once, so both workers of the 2-pool take some.
        const out = await Promise.all([0, 1, 2].map(() => pool.run(services, service, j)));
        for (const o of out) {
          expect(o.contentType, name).toBe(inline.contentType);
          expect(Buffer.compare(Buffer.from(o.bytes), Buffer.from(inline.bytes)), `${name} with ${pool.size} workers`).toBe(0);
        }
      }
    }
    expect(services.renderStats().running).toBe(0);
  });

  it('errors come back with their code and details', { timeout: 60_000 }, async () => {
    const bad = job({ bandIds: '5' });
    const here = await renderExport(services, service, bad).catch((e: unknown) => e);
    const there = await pools[1]!.run(services, service, bad).catch((e: unknown) => e);
    expect(here).toBeInstanceOf(EngineError);
    expect(there).toBeInstanceOf(EngineError);
    expect([(there as EngineError).code, (there as EngineError).details]).toEqual([
      (here as EngineError).code,
      (here as EngineError).details,
    ]);
  });

  it('an aborted job rejects with ABORTED and frees its render slot', { timeout: 60_000 }, async () => {
    const abort = new AbortController();
    const big = job({ rule: { rasterFunction: 'Hillshade' }, method: 'cubic', grid: { ...job({}).grid, width: 3000, height: 3000 } });
    const p = pools[0]!.run(services, service, big, abort.signal).catch((e: unknown) => e);
    abort.abort();
    const e = await p;
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('ABORTED');
    expect(services.renderStats().running).toBe(0);
    // Aborted while the worker renders: rejected at once, and the worker is free for the next job.
    const later = new AbortController();
    const started = Date.now();
    const q = pools[0]!.run(services, service, big, later.signal).catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 100));
    expect(services.renderStats().running).toBe(1);
    later.abort();
    expect(((await q) as EngineError).code).toBe('ABORTED');
    expect(Date.now() - started).toBeLessThan(2000);
    // The slot is given back when the worker has stopped the job (at its next tile), not a whole render later.
    await slotsFree(services, 2000);
    const next = await pools[0]!.run(services, service, job({}));
    expect(next.contentType).toBe('image/png');
  });

  it('a job past requestTimeoutMs rejects with TIMEOUT, frees its slot, and the worker drops it', { timeout: 60_000 }, async () => {
    // A 41 x 41 median over the DEM upsampled to 3072 x 3072: about a minute of work.
    const slow = job({
      rule: { rasterFunction: 'Statistics', rasterFunctionArguments: { Type: 5, Columns: 41, Rows: 41 } },
      method: 'nearest',
      grid: { spatialReference: SR, extent: { xmin: 732000, ymin: 4037625, xmax: 760725, ymax: 4068150 }, width: 3072, height: 3072 },
    });
    const budget = budgetSignal({ requestTimeoutMs: 200 });
    const started = Date.now();
    const e = await pools[0]!.run(services, service, slow, budget.signal, 'user:a').catch((err: unknown) => err);
    budget.dispose();
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('TIMEOUT');
    expect((e as EngineError).message).toContain('requestTimeoutMs');
    expect(Date.now() - started).toBeLessThan(2000);
    // The worker ends the tile it is on (about half a second of this rule), answers, and the slot is free.
    await slotsFree(services, 3000);
    expect(services.renderStats()).toMatchObject({ running: 0, clients: 0 });
    // The one worker of this pool stopped the job at its next tile: the next job is served in seconds, not a minute.
    const next = Date.now();
    expect((await pools[0]!.run(services, service, job({}))).contentType).toBe('image/png');
    expect(Date.now() - next).toBeLessThan(5000);
  });

  it('one export pool per process, whatever the number of sites', () => {
    const a = exportPoolOf();
    expect(exportPoolOf()).toBe(a);
    expect(a?.size ?? 0).toBe(defaultExportWorkers());
  });

  it('RASTERFLOW_IMAGE_WORKERS sets the default size (0 = this thread)', () => {
    const before = process.env['RASTERFLOW_IMAGE_WORKERS'];
    try {
      process.env['RASTERFLOW_IMAGE_WORKERS'] = '0';
      expect(defaultExportWorkers()).toBe(0);
      process.env['RASTERFLOW_IMAGE_WORKERS'] = '3';
      expect(defaultExportWorkers()).toBe(3);
      delete process.env['RASTERFLOW_IMAGE_WORKERS'];
      expect(defaultExportWorkers()).toBeGreaterThanOrEqual(1);
    } finally {
      if (before === undefined) delete process.env['RASTERFLOW_IMAGE_WORKERS'];
      else process.env['RASTERFLOW_IMAGE_WORKERS'] = before;
    }
  });
});

/**
 * Load on the image service (issue 18: "200 concurrent clients with 512² requests: 0 errors, and
 * memory bounded"), bounded and on loopback: `rasterflow serve` runs in a child process (its own
 * memory, read from /proc as VmRSS/VmHWM), 200 keep-alive clients send 400 exportImage requests of
 * 512 × 512 PNG (a min-max Stretch and a Hillshade over 17 bboxes) at once.
 *
 * Checked: every answer is a PNG (0 errors); at most RASTERFLOW_MAX_RENDERS renders ran at once
 * (the server's render slots, read through the test entry's /test/renderStats) and the limit was
 * reached; the server's peak RSS during the burst grew by less than GROWTH_LIMIT_MIB over its RSS
 * after a quiet warm-up, and stayed under PEAK_LIMIT_MIB.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gridBboxes, runLoad, startServeChild, type ServeChild } from '../bench/serve/load.js';

const DEM = `${import.meta.dirname}/../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const EXTENT = [732000, 4037625, 760725, 4068150] as const;
const MAX_RENDERS = 3;
const MIB = 1024 * 1024;
// Decision: 512² renders hold a few MiB each (Float32 planes of the rule, the U8 output, the PNG);
// with 3 at once the working set is tens of MiB. 160 MiB of growth leaves room for V8's heap
// sizing and the 200 sockets, and is far below what 200 unbounded renders would take.
const GROWTH_LIMIT_MIB = 160;
const PEAK_LIMIT_MIB = 600;

const HAVE_PROC = existsSync('/proc/self/status');
const SKIP = !existsSync(DEM) ? `(skipped: no DEM at ${DEM})` : !HAVE_PROC ? '(skipped: no /proc to read the memory from)' : '';
if (SKIP) console.log(`load test ${SKIP}`);

describe.skipIf(SKIP !== '')(`200 concurrent clients × 512² exportImage ${SKIP}`.trim(), () => {
  let dataDir: string;
  let server: ServeChild;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'rf-load-'));
    server = await startServeChild({
      dataDir,
      entry: 'test/load-entry.ts',
      // The 200 clients are told apart as clients behind a proxy are (an X-Forwarded-For each), so
      // the per-client render limit sees 200 clients, not one address.
      config: {
        settings: { trustedProxies: ['127.0.0.1'] },
        services: [{ serviceName: 'dem', type: 'ImageServer', properties: { path: DEM, anonymous: true } }],
      },
      env: {
        RASTERFLOW_ADMIN_USERNAME: 'loadadmin',
        RASTERFLOW_ADMIN_PASSWORD: `load-${process.pid}-${Date.now()}`,
        RASTERFLOW_MAX_RENDERS: String(MAX_RENDERS),
      },
      limitMs: 120_000,
    });
  }, 60_000);

  afterAll(async () => {
    if (server) expect(await server.stop()).toBe(0);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers every request with a PNG, keeps at most the configured renders in flight, and its memory bounded', async () => {
    const origin = server.httpOrigin;
    const stretch = JSON.stringify({ rasterFunction: 'Stretch', rasterFunctionArguments: { StretchType: 5, Min: 0, Max: 255 } });
    const hillshade = JSON.stringify({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } });
    const urls = [EXTENT.join(','), ...gridBboxes(EXTENT, 4)].flatMap((bbox) =>
      [stretch, hillshade].map(
        (rule) =>
          `${origin}/server/rest/services/dem/ImageServer/exportImage?f=image&format=png&bbox=${bbox}&bboxSR=32616` +
          `&size=512,512&renderingRule=${encodeURIComponent(rule)}`,
      ),
    );
    // A quiet warm-up: every URL once, 4 at a time; the RSS after it is the baseline.
    const warm = await runLoad({ urls, concurrency: 4, requests: urls.length, warmup: 0 });
    expect(warm.errors, warm.errorSamples.join(' | ')).toBe(0);
    const baseline = server.memory()!;

    let peakRss = baseline.rss;
    const burst = await runLoad({
      urls,
      concurrency: 200,
      requests: 400,
      warmup: 0,
      timeoutMs: 50_000,
      clientHeaders: (i) => ({ 'x-forwarded-for': `10.0.${i >> 8}.${i & 255}` }),
      onTick: () => (peakRss = Math.max(peakRss, server.memory()?.rss ?? 0)),
    });
    const after = server.memory()!;
    const stats = (await (await fetch(`${origin}/test/renderStats`)).json()) as {
      running: number;
      queued: number;
      peak: number;
      limit: number;
    };

    console.log(
      `load test: 400 × 512² at 200 clients: ${burst.reqPerSec.toFixed(1)} req/s, p50 ${burst.p50Ms.toFixed(0)} ms, ` +
        `p99 ${burst.p99Ms.toFixed(0)} ms, errors ${burst.errors}, resent on a closed connection ${burst.retriedOnClosedConnection} ${burst.retriedSamples.join(' | ')}; server RSS ${(baseline.rss / MIB).toFixed(0)} MiB after warm-up, ` +
        `peak ${(Math.max(peakRss, after.hwm) / MIB).toFixed(0)} MiB (VmHWM); renders at once: peak ${stats.peak} of ${stats.limit}`,
    );
    expect(burst.errors, burst.errorSamples.join(' | ')).toBe(0);
    expect(stats.limit).toBe(MAX_RENDERS);
    expect(stats.peak).toBe(MAX_RENDERS);
    expect(stats.running).toBe(0);
    expect(stats.queued).toBe(0);
    expect((after.hwm - baseline.rss) / MIB).toBeLessThan(GROWTH_LIMIT_MIB);
    expect(after.hwm / MIB).toBeLessThan(PEAK_LIMIT_MIB);
  }, 90_000);
});

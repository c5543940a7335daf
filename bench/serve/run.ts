/**
 * `npm run bench:serve`: rasterflow's exportImage against MapServer's WMS GetMap, side by side, with
 * the same client (bench/serve/load.ts: keep-alive node:http clients), the same bbox list and the
 * same output (8-bit PNG of the DEM scaled min..max to 0..255):
 *
 *  0. 1 client, 256 × 256: the time one request takes on an otherwise idle server;
 *  1. 20 concurrent clients, 256 × 256: req/s, p50, p95, p99 for both (rounds alternate which server
 *     goes first, so a neighbour's load on this shared machine hits both alike); then once more in
 *     Web Mercator (EPSG:3857 bboxes inside the DEM's footprint: both servers warp);
 *  2. 200 concurrent clients, 512 × 512: errors (must be 0) for both;
 *
 * and rasterflow's memory: the server runs in a child process (`rasterflow serve` via tsx), its peak
 * RSS is the kernel's VmHWM (/proc/<pid>/status), read after each phase.
 *
 * MapServer: Debian's cgi-mapserver as 2 FastCGI workers behind lighttpd on loopback, started and
 * stopped by bench/serve/mapserver.sh exactly as the peer's reproduction notes do (PROCESSING
 * "SCALE=AUTO", AGG/PNG8). When it cannot be started, its rows are skipped with the reason.
 * rasterflow: a min-max Stretch (StretchType 5) with the service's own statistics (the same cut-offs
 * on every request: no per-tile seams, where MapServer's SCALE=AUTO takes each request's min/max).
 *
 * Results: bench/serve/results.json. Options (environment): BENCH_REQUESTS (default 1000, phase 1),
 * BENCH_BIG_REQUESTS (default 1000, phase 2), BENCH_ROUNDS (default 2), BENCH_DEM (default the
 * shared Jacksboro DEM), BENCH_MS_PORT / BENCH_MS_FCGI_PORT (default 8089 / 9009).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gridBboxes, runLoad, startServeChild, type LoadResult, type ServeChild } from './load.js';

const run = promisify(execFile);
const HERE = new URL('.', import.meta.url).pathname;
const int = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
};

const DEM = process.env['BENCH_DEM'] ?? `${import.meta.dirname}/../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const REQUESTS = int('BENCH_REQUESTS', 1000);
const BIG_REQUESTS = int('BENCH_BIG_REQUESTS', 1000);
const ROUNDS = int('BENCH_ROUNDS', 2);
const MS_PORT = int('BENCH_MS_PORT', 8089);
const MS_FCGI_PORT = int('BENCH_MS_FCGI_PORT', 9009);
const MIB = 1024 * 1024;

interface ServiceFacts {
  readonly extent: [number, number, number, number];
  readonly wkid: number;
  /** [min, max, mean, stdDev] of band 1, from the service's statistics. */
  readonly statistics: [number, number, number, number];
}

async function serviceFacts(origin: string): Promise<ServiceFacts> {
  const res = await fetch(`${origin}/server/rest/services/dem/ImageServer?f=json`);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the service's JSON, checked below
  const info = (await res.json()) as Record<string, any>;
  if (info['error']) throw new Error(`service info: ${JSON.stringify(info['error'])}`);
  const e = info['extent'];
  const first = (k: string): number => Number((info[k] as unknown[] | undefined)?.[0]);
  const stats: [number, number, number, number] = [first('minValues'), first('maxValues'), first('meanValues'), first('stdvValues')];
  if (!Number.isFinite(stats[0]) || !Number.isFinite(stats[1]))
    throw new Error(`service info has no minValues/maxValues: ${JSON.stringify(info)}`);
  return {
    extent: [e.xmin, e.ymin, e.xmax, e.ymax],
    wkid: Number(e.spatialReference?.latestWkid ?? e.spatialReference?.wkid),
    statistics: stats,
  };
}

/** The bboxes of every phase: the whole extent and its 4 × 4 cells (the peer notes' `fixed` and `grid` modes). */
const bboxesOf = (extent: ServiceFacts['extent']): string[] => [extent.join(','), ...gridBboxes(extent, 4)];
/** Inside the DEM's footprint in Web Mercator (the peer notes' `grid3857` mode): warped on the fly by both servers. */
const MERCATOR_EXTENT: ServiceFacts['extent'] = [-9395000, 4364000, -9361000, 4400000];

function rasterflowUrls(origin: string, facts: ServiceFacts, size: number, wkid = facts.wkid): string[] {
  const [min, max, mean, std] = facts.statistics;
  const rule = JSON.stringify({
    rasterFunction: 'Stretch',
    rasterFunctionArguments: {
      StretchType: 5,
      Min: 0,
      Max: 255,
      Statistics: [[min, max, Number.isFinite(mean) ? mean : 0, Number.isFinite(std) ? std : 0]],
    },
  });
  return bboxesOf(wkid === 3857 ? MERCATOR_EXTENT : facts.extent).map(
    (bbox) =>
      `${origin}/server/rest/services/dem/ImageServer/exportImage?f=image&format=png&bbox=${bbox}&bboxSR=${wkid}&imageSR=${wkid}` +
      `&size=${size},${size}&renderingRule=${encodeURIComponent(rule)}`,
  );
}

function mapserverUrls(base: string, facts: ServiceFacts, size: number, wkid = facts.wkid): string[] {
  const crs = base.replace(/CRS=EPSG:\d+/, `CRS=EPSG:${wkid}`);
  return bboxesOf(wkid === 3857 ? MERCATOR_EXTENT : facts.extent).map((bbox) => `${crs}&BBOX=${bbox}&WIDTH=${size}&HEIGHT=${size}`);
}

async function startMapServer(): Promise<{ base: string } | { skipped: string }> {
  try {
    const { stdout } = await run('bash', [join(HERE, 'mapserver.sh'), 'start', DEM, String(MS_PORT), String(MS_FCGI_PORT), '2']);
    const base = stdout.trim().split('\n').pop() ?? '';
    if (!base.startsWith('http://127.0.0.1:')) return { skipped: `the peer printed no URL: ${stdout}` };
    return { base };
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return { skipped: (err.stderr ?? '').trim() || err.message };
  }
}

async function stopMapServer(): Promise<void> {
  await run('bash', [join(HERE, 'mapserver.sh'), 'stop']).catch(() => undefined);
}

const row = (name: string, r: LoadResult): Record<string, string | number> => ({
  server: name,
  clients: r.concurrency,
  requests: r.requests,
  errors: r.errors,
  resent: r.retriedOnClosedConnection,
  'req/s': Number(r.reqPerSec.toFixed(1)),
  'p50 ms': Number(r.p50Ms.toFixed(1)),
  'p95 ms': Number(r.p95Ms.toFixed(1)),
  'p99 ms': Number(r.p99Ms.toFixed(1)),
  'max ms': Number(r.maxMs.toFixed(1)),
  'mean bytes': r.meanBytes,
});

async function main(): Promise<void> {
  if (!existsSync(DEM)) throw new Error(`no DEM at ${DEM} (set BENCH_DEM)`);
  const started = new Date().toISOString();
  const loadAtStart = loadavg();
  const dataDir = mkdtempSync(join(tmpdir(), 'rf-bench-serve-'));
  let server: ServeChild | undefined;
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  try {
    server = await startServeChild({
      dataDir,
      config: { services: [{ serviceName: 'dem', type: 'ImageServer', properties: { path: DEM, anonymous: true } }] },
      env: { RASTERFLOW_ADMIN_USERNAME: 'benchadmin', RASTERFLOW_ADMIN_PASSWORD: `bench-${process.pid}-${Date.now()}` },
    });
    const origin = server.httpOrigin;
    const facts = await serviceFacts(origin);
    const idle = server.memory();
    log(`rasterflow serve pid ${server.pid} at ${origin}; idle RSS ${((idle?.rss ?? 0) / MIB).toFixed(0)} MiB`);
    log(`service: extent ${facts.extent.join(',')} wkid ${facts.wkid}; band 1 min..max ${facts.statistics[0]}..${facts.statistics[1]}`);

    const ms = await startMapServer();
    if ('skipped' in ms) log(`MapServer skipped: ${ms.skipped}`);
    else log(`MapServer at ${ms.base.split('?')[0]}`);

    let peakRss = idle?.rss ?? 0;
    const sample = (): void => {
      const m = server?.memory();
      if (m) peakRss = Math.max(peakRss, m.rss, m.hwm);
    };

    const both = async (
      name: string,
      clients: number,
      size: number,
      requests: number,
      wkid: number,
      order: 'mapserver-first' | 'rasterflow-first' = 'mapserver-first',
    ): Promise<{ rasterflow: LoadResult; mapserver?: LoadResult }> => {
      const rf = (): Promise<LoadResult> =>
        runLoad({ urls: rasterflowUrls(origin, facts, size, wkid), concurrency: clients, requests, onTick: sample });
      const mp = (): Promise<LoadResult> | undefined =>
        'base' in ms ? runLoad({ urls: mapserverUrls(ms.base, facts, size, wkid), concurrency: clients, requests }) : undefined;
      let rasterflow: LoadResult;
      let mapserver: LoadResult | undefined;
      if (order === 'mapserver-first') {
        mapserver = await mp();
        rasterflow = await rf();
      } else {
        rasterflow = await rf();
        mapserver = await mp();
      }
      console.log(`${name}: ${clients} clients, ${size}², EPSG:${wkid}`);
      console.table([...(mapserver ? [row('MapServer', mapserver)] : []), row('rasterflow', rasterflow)]);
      for (const [who, r] of [['rasterflow', rasterflow] as const, ...(mapserver ? [['MapServer', mapserver] as const] : [])]) {
        if (r.errors > 0) log(`${who}: ${r.errors} errors, e.g. ${r.errorSamples.join(' | ')}`);
      }
      return { rasterflow, ...(mapserver ? { mapserver } : {}) };
    };

    // Phase 0: one client: the time one request takes when nothing else runs on the server.
    const single = await both('service time', 1, 256, Math.min(REQUESTS, 200), facts.wkid);

    // Phase 1: 20 clients, 256², in the raster's SR; rounds alternate which server goes first.
    const small: { round: number; rasterflow: LoadResult; mapserver?: LoadResult }[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await both(`round ${round}`, 20, 256, REQUESTS, facts.wkid, round % 2 === 1 ? 'mapserver-first' : 'rasterflow-first');
      small.push({ round, ...r });
    }
    // Phase 1b: the same in Web Mercator (both servers warp).
    const mercator = await both('Web Mercator', 20, 256, REQUESTS, 3857);
    sample();
    const peakAfterSmall = Math.max(peakRss, server.memory()?.hwm ?? 0);

    // Phase 2: 200 clients, 512².
    const big = await both('many clients', 200, 512, BIG_REQUESTS, facts.wkid, 'rasterflow-first');
    const bigRf = big.rasterflow;
    const bigMs = big.mapserver;
    sample();
    const peakAfterBig = Math.max(peakRss, server.memory()?.hwm ?? 0);

    const best = (pick: (s: (typeof small)[number]) => LoadResult | undefined): LoadResult | undefined =>
      small.map(pick).reduce<LoadResult | undefined>((a, b) => (b && (!a || b.reqPerSec > a.reqPerSec) ? b : a), undefined);
    const rfBest = best((s) => s.rasterflow)!;
    const msBest = best((s) => s.mapserver);
    const summary = {
      '20 clients 256² req/s (best round)': { rasterflow: rfBest.reqPerSec, ...(msBest ? { mapserver: msBest.reqPerSec } : {}) },
      '20 clients 256² p50 / p99 ms (that round)': {
        rasterflow: [rfBest.p50Ms, rfBest.p99Ms],
        ...(msBest ? { mapserver: [msBest.p50Ms, msBest.p99Ms] } : {}),
      },
      '1 client 256² p50 ms': { rasterflow: single.rasterflow.p50Ms, ...(single.mapserver ? { mapserver: single.mapserver.p50Ms } : {}) },
      '20 clients 256² EPSG:3857 req/s': {
        rasterflow: mercator.rasterflow.reqPerSec,
        ...(mercator.mapserver ? { mapserver: mercator.mapserver.reqPerSec } : {}),
      },
      'rasterflow peak RSS MiB after 20 clients': peakAfterSmall / MIB,
      'rasterflow peak RSS MiB after 200 clients': peakAfterBig / MIB,
      '200 clients 512² errors': { rasterflow: bigRf.errors, ...(bigMs ? { mapserver: bigMs.errors } : {}) },
    };
    console.log(JSON.stringify(summary, null, 2));

    const results = {
      started,
      host: { cores: cpus().length, loadavgAtStart: loadAtStart, loadavgAtEnd: loadavg(), node: process.version },
      dem: DEM,
      client:
        'node:http keep-alive, one connection per client, warm-up of 2 × clients not counted; a request whose kept-alive connection the server had closed is resent once (column resent, not an error)',
      bboxes: bboxesOf(facts.extent),
      rasterflow: {
        request: 'exportImage f=image format=png, renderingRule Stretch StretchType 5 (MinMax) with the service statistics, Min 0 Max 255',
        statistics: facts.statistics,
        idleRssBytes: idle?.rss,
        peakRssBytesAfter20Clients: peakAfterSmall,
        peakRssBytesAfter200Clients: peakAfterBig,
      },
      mapserver:
        'base' in ms
          ? { request: 'WMS 1.3.0 GetMap FORMAT=image/png (AGG/PNG8), PROCESSING SCALE=AUTO, 2 FastCGI workers behind lighttpd' }
          : { skipped: ms.skipped },
      phase0: { clients: 1, size: 256, ...single },
      phase1: { clients: 20, size: 256, requestsPerRound: REQUESTS, rounds: small },
      phase1Mercator: { clients: 20, size: 256, wkid: 3857, bboxes: bboxesOf(MERCATOR_EXTENT), ...mercator },
      phase2: { clients: 200, size: 512, requests: BIG_REQUESTS, rasterflow: bigRf, ...(bigMs ? { mapserver: bigMs } : {}) },
      summary,
    };
    writeFileSync(join(HERE, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
    log(`wrote ${join(HERE, 'results.json')}`);
    if (bigRf.errors > 0) process.exitCode = 1;
  } finally {
    await stopMapServer();
    if (server) {
      const code = await server.stop();
      if (code !== 0) log(`rasterflow serve exited ${code}:\n${server.stderr().slice(-2000)}`);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

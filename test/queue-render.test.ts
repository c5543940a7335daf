/**
 * Batch renders on the job queue: `rasterflow render --queue` with 1, 2 and 4 `rasterflow worker`
 * processes writes the one-process render's file byte for byte (a COG with overviews and
 * statistics; a Stretch whose statistics are of the whole output, not of a band; a PNG); a worker
 * killed while it holds a band (its reads held by a loopback HTTP server serving the DEM) loses
 * nothing: the band is rendered again by another worker; a band that fails fails the render with
 * its error and leaves no output; an interrupted render takes its bands off the queue.
 */
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisMissing, startRedis, type RedisHarness } from './redis-harness.js';
import type { Child } from './serve-helpers.js';
import { pendingWork, queueChildren } from './queue-helpers.js';
import { inFlightWindow, parseQueueUrl, RANGES_QUEUE, workSlots } from '../src/queue/connection.js';
import { startQueueWorker } from '../src/queue/worker.js';

const DEM = resolve(import.meta.dirname, '../golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const dir = mkdtempSync(join(tmpdir(), 'rf-queue-render-'));
let redis: RedisHarness;
const env = { ...process.env, RASTERFLOW_QUEUE_LOCK_MS: '2000', RASTERFLOW_DEBUG: '1' };

const HILLSHADE = JSON.stringify({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } });
// Statistics of the whole output (DRA): a band rendering its own would stretch differently.
const STRETCH = JSON.stringify({
  rasterFunction: 'Stretch',
  rasterFunctionArguments: { StretchType: 3, NumberOfStandardDeviations: 2, DRA: true, Min: 0, Max: 255 },
  outputPixelType: 'U8',
});

interface Case {
  readonly name: string;
  readonly args: readonly string[];
  readonly out: string;
}
const CASES: readonly Case[] = [
  {
    name: 'hillshade',
    args: ['--rule', HILLSHADE, '--input', DEM, '--tile', '64', '--co', 'COG=YES', '--co', 'BLOCKXSIZE=64'],
    out: 'tif',
  },
  { name: 'stretch', args: ['--rule', STRETCH, '--input', DEM, '--tile', '32', '--window', '10,20,300,350'], out: 'tif' },
  { name: 'png', args: ['--rule', HILLSHADE, '--input', DEM, '--tile', '100'], out: 'png' },
];

const { cli, startWorkers: workersOn, killAll } = queueChildren(env);
const startWorkers = (n: number): Promise<Child[]> => workersOn(redis.url, n);

const local = (c: Case): string => join(dir, `local-${c.name}.${c.out}`);

/** Files left in a folder's staging area (none once a render has ended). */
const staged = (folder: string): string[] => {
  const root = join(folder, '.rasterflow-queue');
  return existsSync(root) ? readdirSync(root, { recursive: true }).map(String) : [];
};

/**
 * The DEM over loopback HTTP with range requests. Closed, the gate holds every request until it
 * opens again (or answers 500 with `fail`).
 */
class GatedServer {
  readonly server: Server;
  private gated = false;
  private fail = false;
  private readonly held: (() => void)[] = [];
  heldCount = 0;
  constructor() {
    this.server = createServer((req, res) => {
      const serve = (): void => this.answer(req.headers.range, res);
      if (this.gated) {
        this.heldCount++;
        this.held.push(serve);
      } else serve();
    });
  }
  private answer(range: string | undefined, res: ServerResponse): void {
    if (this.fail) {
      res.writeHead(500).end('broken on purpose');
      return;
    }
    const size = statSync(DEM).size;
    const m = /bytes=(\d+)-(\d*)/.exec(range ?? '');
    if (!m) {
      res.writeHead(200, { 'content-length': size, 'accept-ranges': 'bytes' });
      createReadStream(DEM).pipe(res);
      return;
    }
    const start = Number(m[1]);
    const end = Math.min(m[2] ? Number(m[2]) : size - 1, size - 1);
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
    createReadStream(DEM, { start, end }).pipe(res);
  }
  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const { port } = this.server.address() as { port: number };
    return `http://127.0.0.1:${port}/dem.tif`;
  }
  close(): void {
    this.gated = false;
    this.server.closeAllConnections();
    this.server.close();
  }
  gate(on: boolean, fail = false): void {
    this.gated = on;
    this.fail = fail;
    if (!on) for (const f of this.held.splice(0)) f();
  }
}

describe.skipIf(redisMissing !== undefined)('rasterflow render --queue', () => {
  beforeAll(async () => {
    redis = await startRedis();
    // The one-process renders every queued one is compared with.
    await Promise.all(
      CASES.map(async (c) => {
        const r = cli(['render', ...c.args, '--output', local(c)]);
        expect(await r.exited, r.stderr()).toBe(0);
      }),
    );
  }, 120_000);
  afterEach(killAll);
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it.each([1, 2, 4])(
    '%i worker(s): every render byte for byte as one process, its bands taken off the queue and its staging removed',
    async (n) => {
      const workers = await startWorkers(n);
      const out = join(dir, `q${n}`);
      for (const c of CASES) {
        const file = join(out, `${c.name}.${c.out}`);
        const r = cli(['render', '--queue', redis.url, '--band-rows', c.name === 'png' ? '100' : '64', ...c.args, '--output', file]);
        expect(await r.exited, r.stderr()).toBe(0);
        expect(r.stderr()).toMatch(/submitted render \S+ to the job queue in \d+ band\(s\)/);
        expect(readFileSync(file).equals(readFileSync(local(c))), `${c.name} differs from the one-process render`).toBe(true);
      }
      expect(staged(out)).toEqual([]);
      expect(await pendingWork(redis.url)).toBe(0);
      // Every worker rendered bands when there were several.
      if (n > 1) expect(workers.filter((w) => /range band \S+ done/.test(w.stderr())).length).toBeGreaterThan(1);
    },
    180_000,
  );

  it('a worker killed while it holds a band: another renders it again, the output is unchanged', async () => {
    const http = new GatedServer();
    const url = await http.listen();
    try {
      const c = CASES[0]!;
      const file = join(dir, 'killed.tif');
      const r = cli(['render', '--queue', redis.url, '--band-rows', '64', ...c.args.map((a) => (a === DEM ? url : a)), '--output', file]);
      await r.waitFor(/submitted render/, 60_000);
      // The submitter has read what it needs; from now on the worker's reads wait at the gate.
      http.gate(true);
      const [first] = await startWorkers(1);
      await first!.waitFor(/range band \S+ started/, 60_000);
      while (http.heldCount === 0) await new Promise((res) => setTimeout(res, 20));
      first!.proc.kill('SIGKILL');
      await first!.exited;
      http.gate(false);
      const [second] = await startWorkers(1);
      expect(await r.exited, r.stderr()).toBe(0);
      expect(readFileSync(file).equals(readFileSync(local(c)))).toBe(true);
      // The band the first worker held (its first) was rendered by the second.
      const firstBand = /range band (\S+) started/.exec(first!.stderr())![1]!;
      expect(second!.stderr()).toContain(`range band ${firstBand} done`);
      expect(staged(dir)).toEqual([]);
    } finally {
      http.close();
    }
  }, 180_000);

  it('a band that fails on a worker fails the render with its error: no output, nothing left queued', async () => {
    const http = new GatedServer();
    const url = await http.listen();
    try {
      await startWorkers(1);
      const file = join(dir, 'failed.tif');
      const r = cli([
        'render',
        '--queue',
        redis.url,
        '--band-rows',
        '64',
        '--rule',
        HILLSHADE,
        '--input',
        url,
        '--tile',
        '64',
        '--output',
        file,
      ]);
      await r.waitFor(/submitted render/, 60_000);
      http.gate(false, true);
      expect(await r.exited).toBe(1);
      expect(r.stderr()).toMatch(/error IO_ERROR.*500/);
      expect(existsSync(file)).toBe(false);
      expect(staged(dir)).toEqual([]);
      expect(await pendingWork(redis.url)).toBe(0);
    } finally {
      http.close();
    }
  }, 120_000);

  it('an interrupted render (SIGINT): exit 130, no output, its bands off the queue', async () => {
    // No worker: the bands wait on the queue until the render is interrupted.
    const file = join(dir, 'interrupted.tif');
    const r = cli(['render', '--queue', redis.url, '--band-rows', '64', ...CASES[0]!.args, '--output', file]);
    await r.waitFor(/submitted render/, 60_000);
    r.proc.kill('SIGINT');
    expect(await r.exited).toBe(130);
    expect(r.stderr()).toMatch(/ABORTED: interrupted by SIGINT/);
    expect(existsSync(file)).toBe(false);
    expect(staged(dir)).toEqual([]);
    expect(await pendingWork(redis.url)).toBe(0);
  }, 60_000);

  it("the window of bands (and chip ranges) ahead follows the live workers' slots", async () => {
    const settings = parseQueueUrl(redis.url);
    const q = new Queue(RANGES_QUEUE, { connection: { ...settings.redis }, prefix: settings.prefix });
    const workers = [await startQueueWorker(settings, { concurrency: 3 }), await startQueueWorker(settings, { concurrency: 1 })];
    try {
      expect(await workSlots(q)).toBe(4);
      expect(await inFlightWindow(q, 2)()).toBe(8);
      expect(await inFlightWindow(q, 16)()).toBe(16);
    } finally {
      for (const w of workers) await w.close();
      await q.close();
    }
    const after = new Queue(RANGES_QUEUE, { connection: { ...settings.redis }, prefix: settings.prefix });
    expect(await workSlots(after)).toBe(0);
    await after.close();
  }, 60_000);

  it('usage errors name the option', async () => {
    const both = cli([
      'render',
      '--queue',
      redis.url,
      '--workers',
      '2',
      '--rule',
      HILLSHADE,
      '--input',
      DEM,
      '--output',
      join(dir, 'x.tif'),
    ]);
    expect(await both.exited).toBe(2);
    expect(both.stderr()).toMatch(/at workers: --workers and --queue exclude each other/);
    const rows = cli([
      'render',
      '--queue',
      redis.url,
      '--band-rows',
      '100',
      '--tile',
      '64',
      '--rule',
      HILLSHADE,
      '--input',
      DEM,
      '--output',
      join(dir, 'y.tif'),
    ]);
    expect(await rows.exited).toBe(2);
    expect(rows.stderr()).toMatch(/at band-rows: rows per band must be a whole multiple of the tile height 64, got 100/);
    const alone = cli(['render', '--band-rows', '64', '--rule', HILLSHADE, '--input', DEM, '--output', join(dir, 'z.tif')]);
    expect(await alone.exited).toBe(2);
    expect(alone.stderr()).toMatch(/at band-rows: --band-rows applies to --queue/);
  }, 60_000);
});

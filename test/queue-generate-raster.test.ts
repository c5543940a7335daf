/**
 * `rasterflow serve --queue`: GenerateRaster jobs as render jobs on the job queue, their bands
 * rendered by `rasterflow worker` processes. Status, progress and results through the GP REST front
 * as in-process; the file is `rasterflow render`'s byte for byte; a cancel stops the render and
 * leaves no output, no job folder and no band on the queue. And the library call
 * (submitRender / watchRender) with a worker in this process.
 */
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Job, Queue } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GP_ROOT } from '../src/adapters/gp/training-data-task.js';
import { allocateBlock } from '../src/core/pixel-block.js';
import { rect } from '../src/core/rect.js';
import { encodeGeoTiff } from '../src/io/encode-tiff.js';
import { openerScope } from '../src/io/source.js';
import { EXPORTS_QUEUE, parseQueueUrl } from '../src/queue/connection.js';
import { submitRender, watchRender } from '../src/queue/render-job.js';
import { openQueueClient, startQueueWorker } from '../src/queue/worker.js';
import { postForm, REFERER, siteAdminToken, type Running } from './crash-helpers.js';
import { gridInfo, runCli } from './helpers.js';
import { pendingWork } from './queue-helpers.js';
import { redisMissing, startRedis, type RedisHarness } from './redis-harness.js';
import { httpCall, spawnChild, type Child } from './serve-helpers.js';

const DEM = resolve(import.meta.dirname, '../golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const dir = mkdtempSync(join(tmpdir(), 'rf-queue-gen-'));
const task = `${GP_ROOT}/GenerateRaster`;
const HILLSHADE = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } };
const env = { ...process.env, RASTERFLOW_QUEUE_LOCK_MS: '2000', RASTERFLOW_ADMIN_PASSWORD: 'queue-admin-pw' };
let redis: RedisHarness;
const children: Child[] = [];

/** A synthetic surface big enough that a render spans several bands and some seconds: 2048 x 3072 F32. */
const BIG = join(dir, 'big.tif');
function writeBig(): void {
  const w = 2048;
  const h = 3072;
  const block = allocateBlock(rect(0, 0, w, h), 'F32', 1);
  const band = block.bands[0]!;
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) band[y * w + x] = 300 + 80 * Math.sin(x / 57) * Math.cos(y / 43) + 0.01 * x * y;
  writeFileSync(BIG, encodeGeoTiff(block, { ...gridInfo({ width: w, height: h, cellSize: 30, origin: { x: 500000, y: 4000000 } }) }));
}

async function startWorkers(n: number): Promise<Child[]> {
  // RASTERFLOW_DEBUG: the workers log the bands they take.
  const ws = Array.from({ length: n }, () => {
    const c = spawnChild(
      'src/cli/main.ts',
      ['worker', '--queue', redis.url, '--concurrency', '1'],
      { ...env, RASTERFLOW_DEBUG: '1' },
      300_000,
    );
    children.push(c);
    return c;
  });
  await Promise.all(ws.map((w) => w.waitFor(/worker on redis:/, 60_000)));
  return ws;
}

async function startServe(dataDir: string): Promise<Running> {
  const config = join(dataDir, '..', `${basename(dataDir)}.config.json`);
  writeFileSync(config, JSON.stringify({ settings: { inputRoots: [dir, resolve(DEM, '..')], inputOrigins: [new URL(gated.url).origin] } }));
  const child = spawnChild(
    'test/serve-entry.ts',
    ['serve', '--port', '0', '--data', dataDir, '--config', config, '--queue', redis.url],
    env,
    180_000,
  );
  children.push(child);
  const m = await child.waitFor(/services: (https:\/\/127\.0\.0\.1:\d+)\/server\/rest\/services/, 60_000);
  await child.waitFor(/SIGINT or SIGTERM stops/, 60_000);
  return { child, url: m[1]!, ca: readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'), readyAt: performance.now() };
}

/** BIG over loopback HTTP with range requests; closed, the gate holds every request until it opens. */
class Gated {
  readonly server: Server;
  url = '';
  private gated = false;
  private readonly held: (() => void)[] = [];
  constructor(private readonly file: string) {
    this.server = createServer((req, res) => {
      const serve = (): void => this.answer(req.headers.range, res);
      if (this.gated) this.held.push(serve);
      else serve();
    });
  }
  private answer(range: string | undefined, res: ServerResponse): void {
    const size = statSync(this.file).size;
    const m = /bytes=(\d+)-(\d*)/.exec(range ?? '');
    if (!m) {
      res.writeHead(200, { 'content-length': size, 'accept-ranges': 'bytes' });
      createReadStream(this.file).pipe(res);
      return;
    }
    const start = Number(m[1]);
    const end = Math.min(m[2] ? Number(m[2]) : size - 1, size - 1);
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
    createReadStream(this.file, { start, end }).pipe(res);
  }
  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/big.tif`;
  }
  gate(on: boolean): void {
    this.gated = on;
    if (!on) for (const f of this.held.splice(0)) f();
  }
  close(): void {
    this.gate(false);
    this.server.closeAllConnections();
    this.server.close();
  }
}
let gated: Gated;

interface JobJson {
  jobStatus: string;
  progress?: { type: string; message: string; percent: number };
  messages?: { type: string; description: string }[];
}

async function jobOf(s: Running, token: string, jobId: string): Promise<JobJson> {
  const r = await httpCall(`${s.url}${task}/jobs/${jobId}?f=json&returnMessages=true&token=${token}`, {
    ca: s.ca,
    headers: { referer: REFERER },
  });
  return JSON.parse(r.body) as JobJson;
}

const ended = (j: JobJson): boolean => ['geoJobSucceeded', 'geoJobFailed', 'geoJobCancelled'].includes(j.jobStatus);

async function until(s: Running, token: string, jobId: string, done: (j: JobJson) => boolean, ms = 150_000): Promise<JobJson> {
  const end = Date.now() + ms;
  for (;;) {
    const j = await jobOf(s, token, jobId);
    if (done(j) || Date.now() > end) return j;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(redisMissing !== undefined)('GenerateRaster on the job queue', () => {
  let reference: Buffer;
  let bigReference: Buffer;
  beforeAll(async () => {
    redis = await startRedis();
    writeBig();
    gated = new Gated(BIG);
    await gated.listen();
    const r = runCli(['render', '--rule', JSON.stringify(HILLSHADE), '--input', DEM, '--output', join(dir, 'cli.tif')]);
    expect(r.code, r.stderr).toBe(0);
    reference = readFileSync(join(dir, 'cli.tif'));
    const b = runCli(['render', '--rule', JSON.stringify(HILLSHADE), '--input', BIG, '--output', join(dir, 'cli-big.tif')], {
      timeoutMs: 120_000,
    });
    expect(b.code, b.stderr).toBe(0);
    bigReference = readFileSync(join(dir, 'cli-big.tif'));
  }, 180_000);
  afterEach(async () => {
    // A test that failed with the gate closed does not leave the next ones' reads waiting.
    gated?.gate(false);
    for (const c of children.splice(0)) {
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      await c.exited;
    }
  });
  afterAll(async () => {
    gated?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it("serve --queue with 2 workers: submit, progress, results; the file is `rasterflow render`'s byte for byte; then a cancel", async () => {
    const dataDir = join(dir, 'site');
    const s = await startServe(dataDir);
    const token = await siteAdminToken(dataDir);
    const workers = await startWorkers(2);

    // The small DEM, as in-process.
    const small = JSON.parse(
      (
        await postForm(s, `${task}/submitJob`, {
          token,
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: DEM }),
          outputName: 'small',
        })
      ).body,
    ) as { jobId: string; jobStatus: string };
    expect(small.jobStatus).toBe('geoJobSubmitted');
    const done = await until(s, token, small.jobId, ended);
    expect(done.jobStatus, JSON.stringify(done)).toBe('geoJobSucceeded');
    const file = join(dataDir, 'jobs', small.jobId, 'small.tif');
    expect(readFileSync(file).equals(reference)).toBe(true);
    const result = JSON.parse(
      (
        await httpCall(`${s.url}${task}/jobs/${small.jobId}/results/outputRaster?f=json&token=${token}`, {
          ca: s.ca,
          headers: { referer: REFERER },
        })
      ).body,
    ) as { paramName: string; value: { url: string } };
    expect(result).toEqual({ paramName: 'outputRaster', dataType: 'GPString', value: { url: file, uri: file } });

    // The big surface: several bands over both workers, progress seen through the REST front.
    const big = JSON.parse(
      (
        await postForm(s, `${task}/submitJob`, {
          token,
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: BIG }),
          outputName: 'big',
        })
      ).body,
    ) as { jobId: string };
    const percents: number[] = [];
    const last = await until(s, token, big.jobId, (j) => {
      if (j.progress) percents.push(j.progress.percent);
      return ended(j);
    });
    expect(last.jobStatus, JSON.stringify(last)).toBe('geoJobSucceeded');
    expect(readFileSync(join(dataDir, 'jobs', big.jobId, 'big.tif')).equals(bigReference)).toBe(true);
    expect(percents.length).toBeGreaterThan(0);
    expect(percents.every((p, i) => p >= 0 && p <= 100 && (i === 0 || p >= percents[i - 1]!))).toBe(true);
    expect(last.messages?.map((m) => m.description)).toContain(
      `Generated ${join(dataDir, 'jobs', big.jobId, 'big.tif')} (2048x3072, 1 band(s) U8, ${bigReference.length} bytes)`,
    );
    // Both workers rendered bands.
    expect(workers.filter((w) => /range band \S+ done/.test(w.stderr())).length).toBe(2);
    expect(existsSync(join(dataDir, 'jobs', big.jobId, '.rasterflow-queue'))).toBe(false);

    // Cancel mid-render: geoJobCancelling, then geoJobCancelled; no output, no job folder, no band
    // left. The surface is read over loopback HTTP; once the workers have taken the render's bands,
    // their reads wait at a gate, so the cancel lands mid-render whatever the machine's speed.
    const firstBands = (): number => workers.reduce((n, w) => n + (w.stderr().match(/range band \S+-b0 started/g)?.length ?? 0), 0);
    const firstBandsBefore = firstBands();
    const c = JSON.parse(
      (
        await postForm(s, `${task}/submitJob`, {
          token,
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: gated.url }),
          outputName: 'cancelled',
        })
      ).body,
    ) as { jobId: string };
    for (const end = Date.now() + 60_000; firstBands() === firstBandsBefore && Date.now() < end;)
      await new Promise((r) => setTimeout(r, 10));
    gated.gate(true);
    // The server sees the job taken at its next look at the queue (a worker logs its band first).
    expect((await until(s, token, c.jobId, (j) => j.jobStatus !== 'geoJobWaiting', 60_000)).jobStatus).toBe('geoJobExecuting');
    const answer = JSON.parse((await postForm(s, `${task}/jobs/${c.jobId}/cancel`, { token })).body) as { jobStatus: string };
    expect(answer.jobStatus).toBe('geoJobCancelling');
    const after = await until(s, token, c.jobId, ended, 60_000);
    expect(after.jobStatus).toBe('geoJobCancelled');
    expect(after.messages?.map((m) => m.description)).toContain('Cancelled.');
    gated.gate(false);
    expect(existsSync(join(dataDir, 'jobs', c.jobId))).toBe(false);
    for (let i = 0; i < 100 && (await pendingWork(redis.url)) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await pendingWork(redis.url)).toBe(0);

    // Bad parameters are refused at submit, naming them, as in-process.
    const bad = JSON.parse(
      (await postForm(s, `${task}/submitJob`, { token, rasterFunction: JSON.stringify(HILLSHADE), outputName: 'x/y' })).body,
    ) as {
      error: { details: string[] };
    };
    expect(bad.error.details.join(' ')).toContain('outputName: outputName "x/y" must be a name');
    s.child.proc.kill('SIGTERM');
    expect(await s.child.exited).toBe(0);
  }, 300_000);

  it('the worker coordinating a render is killed: another worker renders it again from the start, the same bytes, nothing left behind', async () => {
    const dataDir = join(dir, 'site-kill');
    const s = await startServe(dataDir);
    const token = await siteAdminToken(dataDir);
    const [first] = await startWorkers(1);
    const { jobId } = JSON.parse(
      (
        await postForm(s, `${task}/submitJob`, {
          token,
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: BIG }),
          outputName: 'killed',
        })
      ).body,
    ) as { jobId: string };
    await first!.waitFor(new RegExp(`export render ${jobId} started`), 60_000);
    // Killed once its first band has come back (the output is being written; two bands remain).
    await first!.waitFor(/range band \S+-b0 done/, 60_000);
    first!.proc.kill('SIGKILL');
    await first!.exited;
    const [second] = await startWorkers(1);
    const last = await until(s, token, jobId, ended);
    const q = new Queue(EXPORTS_QUEUE, { connection: { ...parseQueueUrl(redis.url).redis }, prefix: 'rasterflow' });
    const reason = (await Job.fromId(q, jobId))?.failedReason;
    await q.close();
    expect(last.jobStatus, `${reason}\n${JSON.stringify(last)}\n${first!.stderr()}\n${second!.stderr()}\n${s.child.stderr()}`).toBe(
      'geoJobSucceeded',
    );
    expect(second!.stderr()).toContain(`export render ${jobId} done`);
    const folder = join(dataDir, 'jobs', jobId);
    expect(readFileSync(join(folder, 'killed.tif')).equals(bigReference)).toBe(true);
    // The dead coordinator's partial file and staged bands are gone.
    expect(readdirSync(folder)).toEqual(['killed.tif']);
    s.child.proc.kill('SIGTERM');
    expect(await s.child.exited).toBe(0);
  }, 300_000);

  it('a job waiting on the queue survives a server restart: the restarted server follows it to its end (with context.extent, as render --window)', async () => {
    const files = openerScope();
    const g = (await files.open(DEM, { id: DEM })).info;
    await files.closeAll();
    const extent = {
      xmin: g.extent.xmin + 10 * g.cellSize.x,
      xmax: g.extent.xmin + 300 * g.cellSize.x,
      ymax: g.extent.ymax - 20 * g.cellSize.y,
      ymin: g.extent.ymax - 371 * g.cellSize.y,
    };
    const window = join(dir, 'cli-window.tif');
    const r = runCli(['render', '--rule', JSON.stringify(HILLSHADE), '--input', DEM, '--window', '10,20,290,351', '--output', window]);
    expect(r.code, r.stderr).toBe(0);
    const dataDir = join(dir, 'site-restart');
    const first = await startServe(dataDir);
    const token = await siteAdminToken(dataDir);
    const { jobId } = JSON.parse(
      (
        await postForm(first, `${task}/submitJob`, {
          token,
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: DEM }),
          outputName: 'later',
          context: JSON.stringify({ extent }),
        })
      ).body,
    ) as { jobId: string };
    expect((await until(first, token, jobId, (j) => j.jobStatus === 'geoJobWaiting')).jobStatus).toBe('geoJobWaiting');
    first.child.proc.kill('SIGTERM');
    expect(await first.child.exited).toBe(0);
    const second = await startServe(dataDir);
    expect(second.child.stderr()).toMatch(/following 1 \S+ job\(s\) an earlier run left on the job queue/);
    await startWorkers(1);
    const last = await until(second, token, jobId, ended);
    expect(last.jobStatus, JSON.stringify(last)).toBe('geoJobSucceeded');
    expect(readFileSync(join(dataDir, 'jobs', jobId, 'later.tif')).equals(readFileSync(window))).toBe(true);
    second.child.proc.kill('SIGTERM');
    expect(await second.child.exited).toBe(0);
  }, 180_000);

  it('the library call: submitRender and watchRender with a worker in this process, the same bytes', async () => {
    const settings = parseQueueUrl(redis.url);
    const worker = await startQueueWorker(settings, { concurrency: 1 });
    const client = await openQueueClient(settings);
    try {
      const out = join(dir, 'lib', 'shaded.tif');
      const id = await submitRender(client.exports, { rule: HILLSHADE, sources: { $$: DEM }, output: out });
      const seen: number[] = [];
      const summary = await watchRender(client.exports, client.redis, settings, id, { onProgress: (p) => seen.push(p.done) });
      expect(summary).toMatchObject({ output: out, width: 383, height: 407, bandCount: 1, pixelType: 'U8', tiles: 4 });
      expect(readFileSync(out).equals(reference)).toBe(true);
      expect(seen.at(-1)).toBe(4);
      // A rule that cannot be built fails the job with its error, named at the rule.
      const failing = await submitRender(client.exports, {
        rule: { rasterFunction: 'Nope' },
        sources: { $$: DEM },
        output: join(dir, 'lib', 'no.tif'),
      });
      await expect(watchRender(client.exports, client.redis, settings, failing)).rejects.toMatchObject({
        code: 'UNKNOWN_FUNCTION',
        path: 'rasterFunction',
      });
      expect(existsSync(join(dir, 'lib', 'no.tif'))).toBe(false);
    } finally {
      await client.close();
      await worker.close();
    }
  }, 120_000);
});

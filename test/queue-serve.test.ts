/**
 * `rasterflow serve --queue`: the training-data GP task's jobs on the job queue, worked by a queue
 * worker. Status, progress and cancel through the GP REST front as in-process; a job submitted
 * before a server restart is followed by the restarted server to its end, with the bytes of a
 * one-process export.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GP_ROOT } from '../src/adapters/gp/training-data-task.js';
import { exportTrainingData } from '../src/chipper/export.js';
import { parseQueueUrl } from '../src/queue/connection.js';
import { startQueueWorker, type QueueWorker } from '../src/queue/worker.js';
import { CRASH_CHIP_PARAMS, CRASH_INPUT_ROOT, expectSameTree, postForm, REFERER, siteAdminToken, type Running } from './crash-helpers.js';
import { redisMissing, startRedis, type RedisHarness } from './redis-harness.js';
import { httpCall, spawnChild, type Child } from './serve-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'rf-queue-serve-'));
const task = `${GP_ROOT}/ExportTrainingDataforDeepLearning`;
let redis: RedisHarness;
const children: Child[] = [];
const workers: QueueWorker[] = [];

async function startServe(dataDir: string): Promise<Running> {
  const env: NodeJS.ProcessEnv = { ...process.env, RASTERFLOW_ADMIN_PASSWORD: 'queue-admin-pw' };
  const config = join(dataDir, '..', `${basename(dataDir)}.config.json`);
  writeFileSync(config, JSON.stringify({ settings: { inputRoots: [CRASH_INPUT_ROOT] } }));
  const child = spawnChild(
    'test/serve-entry.ts',
    ['serve', '--port', '0', '--data', dataDir, '--config', config, '--queue', redis.url],
    env,
  );
  children.push(child);
  const m = await child.waitFor(/services: (https:\/\/127\.0\.0\.1:\d+)\/server\/rest\/services/);
  await child.waitFor(/SIGINT or SIGTERM stops/);
  return { child, url: m[1]!, ca: readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'), readyAt: performance.now() };
}

const form = (token: string, outputLocation: string): Record<string, string> => ({
  inputRaster: CRASH_CHIP_PARAMS.inputRaster,
  inputClassData: CRASH_CHIP_PARAMS.inputClassData,
  tileSize: JSON.stringify(CRASH_CHIP_PARAMS.tileSize),
  strideSize: JSON.stringify(CRASH_CHIP_PARAMS.strideSize),
  metadataFormat: CRASH_CHIP_PARAMS.metadataFormat,
  context: JSON.stringify(CRASH_CHIP_PARAMS.context),
  outputLocation,
  token,
});

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

async function until(s: Running, token: string, jobId: string, done: (j: JobJson) => boolean, ms = 120_000): Promise<JobJson> {
  const end = Date.now() + ms;
  for (;;) {
    const j = await jobOf(s, token, jobId);
    if (done(j) || Date.now() > end) return j;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const ended = (j: JobJson): boolean => ['geoJobSucceeded', 'geoJobFailed', 'geoJobCancelled'].includes(j.jobStatus);

describe.skipIf(redisMissing !== undefined)('serve --queue: the GP task on the job queue', () => {
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.close();
    for (const c of children.splice(0)) {
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      await c.exited;
    }
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('a job survives a server restart and ends with the bytes of one process; status and progress as in-process', async () => {
    const ref = join(dir, 'reference');
    await exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: ref });
    const dataDir = join(dir, 'site');
    const first = await startServe(dataDir);
    const token = await siteAdminToken(dataDir);
    // No worker yet: the job waits on the queue while its server restarts.
    const submitted = JSON.parse((await postForm(first, `${task}/submitJob`, form(token, 'queued-job'))).body) as {
      jobId: string;
      jobStatus: string;
    };
    expect(submitted.jobStatus).toBe('geoJobSubmitted');
    // As in-process: waiting until a worker takes it.
    expect((await until(first, token, submitted.jobId, (j) => j.jobStatus === 'geoJobWaiting')).jobStatus).toBe('geoJobWaiting');
    await new Promise((r) => setTimeout(r, 500));
    expect((await jobOf(first, token, submitted.jobId)).jobStatus).toBe('geoJobWaiting');
    first.child.proc.kill('SIGTERM');
    expect(await first.child.exited).toBe(0);

    const second = await startServe(dataDir);
    expect(second.child.stderr()).toMatch(/following 1 geoprocessing job\(s\) an earlier run left on the job queue/);
    expect((await jobOf(second, token, submitted.jobId)).jobStatus).toBe('geoJobWaiting');
    workers.push(await startQueueWorker(parseQueueUrl(redis.url), { concurrency: 2 }));
    const percents: number[] = [];
    const last = await until(second, token, submitted.jobId, (j) => {
      if (j.progress) percents.push(j.progress.percent);
      return ended(j);
    });
    expect(last.jobStatus, JSON.stringify(last)).toBe('geoJobSucceeded');
    expect(last.messages?.map((m) => m.description)).toContain(
      `Exported 484 chips with ${(await exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: join(dir, 'again') })).labels} labels to ${join(dataDir, 'jobs', 'queued-job')}`,
    );
    expect(percents.length).toBeGreaterThan(0);
    expect(percents.every((p) => p >= 0 && p <= 100)).toBe(true);
    const result = JSON.parse(
      (
        await httpCall(`${second.url}${task}/jobs/${submitted.jobId}/results/outLocation?f=json&token=${token}`, {
          ca: second.ca,
          headers: { referer: REFERER },
        })
      ).body,
    ) as { value: { uri: string } };
    expect(result.value.uri).toBe(join(dataDir, 'jobs', 'queued-job'));
    expectSameTree(join(dataDir, 'jobs', 'queued-job'), ref);
    second.child.proc.kill('SIGTERM');
    expect(await second.child.exited).toBe(0);
  }, 240_000);

  it('cancel through the REST front: a waiting job at once; an executing one geoJobCancelling, then geoJobCancelled', async () => {
    const dataDir = join(dir, 'site2');
    const s = await startServe(dataDir);
    const token = await siteAdminToken(dataDir);
    const waiting = JSON.parse((await postForm(s, `${task}/submitJob`, form(token, 'never-run'))).body) as { jobId: string };
    await until(s, token, waiting.jobId, (j) => j.jobStatus === 'geoJobWaiting');
    const at = JSON.parse((await postForm(s, `${task}/jobs/${waiting.jobId}/cancel`, { token })).body) as { jobStatus: string };
    expect(at.jobStatus).toBe('geoJobCancelled');
    workers.push(await startQueueWorker(parseQueueUrl(redis.url), { concurrency: 1 }));
    const { jobId } = JSON.parse((await postForm(s, `${task}/submitJob`, form(token, 'cancelled-job'))).body) as { jobId: string };
    const running = await until(s, token, jobId, (j) => j.progress !== undefined || ended(j));
    expect(running.jobStatus).toBe('geoJobExecuting');
    const answer = JSON.parse((await postForm(s, `${task}/jobs/${jobId}/cancel`, { token })).body) as { jobStatus: string };
    expect(answer.jobStatus).toBe('geoJobCancelling');
    const last = await until(s, token, jobId, ended, 30_000);
    expect(last.jobStatus).toBe('geoJobCancelled');
    expect(last.messages?.map((m) => m.description)).toContain('Cancelled.');
    // The waiting job was taken off the queue: no worker ever ran it.
    expect((await jobOf(s, token, waiting.jobId)).jobStatus).toBe('geoJobCancelled');
    expect(existsSync(join(dataDir, 'jobs', 'never-run'))).toBe(false);
    s.child.proc.kill('SIGTERM');
    expect(await s.child.exited).toBe(0);
  }, 120_000);
});

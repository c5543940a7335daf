/**
 * `rasterflow worker` processes on a loopback Redis and `rasterflow chip --queue`: every file of
 * the export byte for byte as a one-process `rasterflow chip`, with 1, 2 and 4 workers; the same
 * summary line and exit status; a worker killed (SIGKILL) while it holds the export's
 * coordination and a chip range: the range is worked again by another worker and nothing is lost
 * or duplicated. Chips per minute are printed for the closing note.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { classifiedParams, folderDifferences, queueChildren } from './queue-helpers.js';
import { redisMissing, startRedis, type RedisHarness } from './redis-harness.js';
import type { Child } from './serve-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'rf-queue-workers-'));
let redis: RedisHarness;
let localLine = '';
const local = join(dir, 'local');

const env = { ...process.env, RASTERFLOW_QUEUE_LOCK_MS: '2000', RASTERFLOW_DEBUG: '1' };

const { cli, startWorkers: workersOn, killAll } = queueChildren(env);
const startWorkers = (n: number): Promise<Child[]> => workersOn(redis.url, n);

/** The summary line without its timing and folder. */
const summaryOf = (stderr: string, folder: string): string =>
  (/^wrote .*$/m.exec(stderr)?.[0] ?? `no summary in: ${stderr}`).replace(/ in \d+ ms$/, '').replace(folder, 'OUT');

function paramsFile(name: string, out: string): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(classifiedParams(out)));
  return file;
}

describe.skipIf(redisMissing !== undefined)('rasterflow worker processes', () => {
  beforeAll(async () => {
    redis = await startRedis();
    const c = cli(['chip', paramsFile('local', local)]);
    expect(await c.exited).toBe(0);
    localLine = summaryOf(c.stderr(), local);
  }, 120_000);
  afterEach(killAll);
  afterAll(async () => {
    const t = Date.now();
    await redis?.stop();
    console.log(`redis stopped in ${Date.now() - t} ms`);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it.each([1, 2, 4])(
    '%i worker(s): the same files, summary and status as one process; SIGTERM stops each worker cleanly',
    async (n) => {
      const workers = await startWorkers(n);
      const out = join(dir, `queued-${n}`);
      const chip = cli(['chip', '--queue', redis.url, '--range-size', '24', paramsFile(`q${n}`, out)]);
      expect(await chip.exited).toBe(0);
      expect(summaryOf(chip.stderr(), out)).toBe(localLine);
      expect(folderDifferences(local, out)).toEqual([]);
      const chips = Number(/wrote (\d+) chips/.exec(chip.stderr())![1]);
      const ms = Number(/ in (\d+) ms$/m.exec(chip.stderr())![1]);
      console.log(`queue: ${n} worker(s): ${chips} chips in ${ms} ms = ${Math.round((chips * 60000) / ms)} chips/min`);
      for (const w of workers) w.proc.kill('SIGTERM');
      for (const w of workers) {
        expect(await w.exited).toBe(0);
        expect(w.stderr()).toMatch(/stopped/);
      }
    },
    180_000,
  );

  it('a worker killed mid-range: its range and its coordination are taken over, nothing lost or duplicated', async () => {
    const [first] = await startWorkers(1);
    const out = join(dir, 'killed');
    const chip = cli(['chip', '--queue', redis.url, '--range-size', '24', paramsFile('killed', out)]);
    // The first worker coordinates the export and takes ranges; it dies while it holds one.
    await first!.waitFor(/range render \S+ started/, 60_000);
    await first!.waitFor(/export export \S+ started[\s\S]*range \w+ \S+-[rw]\d+ started/, 60_000);
    first!.proc.kill('SIGKILL');
    await first!.exited;
    const [second] = await startWorkers(1);
    expect(await chip.exited).toBe(0);
    expect(summaryOf(chip.stderr(), out)).toBe(localLine);
    expect(folderDifferences(local, out)).toEqual([]);
    // The survivor took the coordination and ranges over.
    expect(second!.stderr()).toMatch(/export export \S+ started/);
    expect(second!.stderr()).toMatch(/range \w+ \S+ done/);
  }, 180_000);

  it('a coordinator paused past its lock (SIGSTOP) while another takes over: it stops without writing, the output is whole', async () => {
    const [first] = await startWorkers(1);
    const out = join(dir, 'paused');
    const chip = cli(['chip', '--queue', redis.url, '--range-size', '24', paramsFile('paused', out)]);
    await first!.waitFor(/export export \S+ started[\s\S]*range \w+ \S+-[rw]\d+ done/, 60_000);
    first!.proc.kill('SIGSTOP');
    // The lock (2 s here) expires; the second worker finds the export stalled and coordinates it.
    const [second] = await startWorkers(1);
    await second!.waitFor(/export export \S+ started/, 60_000);
    first!.proc.kill('SIGCONT');
    expect(await chip.exited, chip.stderr()).toBe(0);
    expect(summaryOf(chip.stderr(), out)).toBe(localLine);
    expect(folderDifferences(local, out)).toEqual([]);
    // The first worker, woken, found its coordination taken over and left it.
    await first!.waitFor(/export export \S+ left: the coordination of export \S+ was taken over by another worker/, 30_000);
  }, 180_000);

  it('a worker stopped with SIGTERM mid-export exits 0 after its range and hands the coordination over', async () => {
    const [first] = await startWorkers(1);
    const out = join(dir, 'handed-over');
    const chip = cli(['chip', '--queue', redis.url, '--range-size', '24', paramsFile('handed', out)]);
    await first!.waitFor(/export export \S+ started[\s\S]*range \w+ \S+-[rw]\d+ started/, 60_000);
    first!.proc.kill('SIGTERM');
    expect(await first!.exited).toBe(0);
    expect(first!.stderr()).toMatch(/stopping: finishing the ranges in hand[\s\S]*stopped/);
    const [second] = await startWorkers(1);
    expect(await chip.exited).toBe(0);
    expect(summaryOf(chip.stderr(), out)).toBe(localLine);
    expect(folderDifferences(local, out)).toEqual([]);
    expect(second!.stderr()).toMatch(/export export \S+ started/);
  }, 180_000);

  it('chip --queue interrupted (SIGINT): the export is cancelled, exit 130, the chips written so far kept for a resume', async () => {
    const [worker] = await startWorkers(1);
    const out = join(dir, 'interrupted');
    const chip = cli(['chip', '--queue', redis.url, '--range-size', '24', paramsFile('interrupted', out)]);
    await chip.waitFor(/submitted export \S+ to the job queue/, 60_000);
    // Interrupted once the worker has begun its first range: the export is under way, with most
    // of its ranges to go (a fixed wait raced an export that can now end within it).
    await worker!.waitFor(/range \w+ \S+-[rw]\d+ started/, 60_000);
    chip.proc.kill('SIGINT');
    expect(await chip.exited).toBe(130);
    expect(chip.stderr()).toMatch(/error ABORTED: interrupted by SIGINT; the export was cancelled; the chips written so far are kept/);
    const again = cli(['chip', '--queue', redis.url, JSON.stringify({ ...classifiedParams(out), resume: true })]);
    expect(await again.exited, again.stderr()).toBe(0);
    expect(folderDifferences(local, out)).toEqual([]);
  }, 180_000);

  it('an unreachable Redis or a bad URL: a clear error naming --queue and exit status 1 or 2', async () => {
    const bad = cli(['chip', '--queue', 'http://127.0.0.1:1', paramsFile('bad', join(dir, 'bad'))]);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toMatch(/error INVALID_ARGUMENT at queue: --queue must be a redis:\/\/ or rediss:\/\/ URL/);
    const down = cli(['worker', '--queue', 'redis://127.0.0.1:1']);
    expect(await down.exited).toBe(1);
    expect(down.stderr()).toMatch(/at queue: the job queue's Redis at redis:\/\/127\.0\.0\.1:1 did not answer .*check --queue/);
  }, 60_000);
});

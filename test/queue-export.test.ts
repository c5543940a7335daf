/**
 * The export on the queue, workers in this process: byte-identical to the one-process export
 * (every file), ranges small enough that the chips spread over several ranges and workers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportTrainingData } from '../src/chipper/export.js';
import { parseQueueUrl, type QueueSettings } from '../src/queue/connection.js';
import { submitExport, watchExport } from '../src/queue/export-queue.js';
import { openQueueClient, startQueueWorker, type QueueClient, type QueueWorker } from '../src/queue/worker.js';
import { classifiedParams, fileCount, folderDifferences, vocParams } from './queue-helpers.js';
import { redisMissing, startRedis, type RedisHarness } from './redis-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'rf-queue-export-'));
let redis: RedisHarness;
let settings: QueueSettings;
let client: QueueClient;
const workers: QueueWorker[] = [];

describe.skipIf(redisMissing !== undefined)('a queued export, workers in-process', () => {
  beforeAll(async () => {
    redis = await startRedis();
    settings = parseQueueUrl(redis.url);
    client = await openQueueClient(settings);
    for (let i = 0; i < 2; i++) workers.push(await startQueueWorker(settings, { concurrency: 2 }));
  }, 60_000);
  afterAll(async () => {
    for (const w of workers) await w.close();
    await client?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['classified', classifiedParams],
    ['voc', vocParams],
  ])('%s: the same files, byte for byte, as one process', async (name, params) => {
    const local = join(dir, `${name}-local`);
    const queued = join(dir, `${name}-queued`);
    const expected = await exportTrainingData(params(local));
    if (name === 'classified')
      expect([expected.skipped.noData > 0, expected.skipped.emptyRatio > 0, expected.chips > 200]).toEqual([true, true, true]);
    const seen: number[] = [];
    const id = await submitExport(client.exports, params(queued), { rangeSize: 24 });
    const summary = await watchExport(client.exports, client.redis, settings, id, { onProgress: (p) => seen.push(p.done) });
    expect(summary).toEqual({ ...expected, outputLocation: queued });
    expect(fileCount(queued)).toBeGreaterThan(100);
    expect(folderDifferences(local, queued)).toEqual([]);
    expect(seen.at(-1)).toBe(expected.candidates);
  }, 60_000);
});

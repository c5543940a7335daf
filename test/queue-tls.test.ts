/**
 * A job queue on TLS (`rediss://`): Redis serving TLS only, with the site's self-signed
 * certificate. A worker and `render --queue` trusting it (NODE_EXTRA_CA_CERTS, as Node takes a
 * private CA) render the one-process file byte for byte; one that does not trust it stops with an
 * error naming --queue and the certificate problem, rather than hanging.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedTls } from '../src/server/tls.js';
import { redisMissing, startRedis, type RedisHarness } from './redis-harness.js';
import { spawnChild, type Child } from './serve-helpers.js';

const DEM = resolve(import.meta.dirname, '../golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const HILLSHADE = JSON.stringify({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } });
const dir = mkdtempSync(join(tmpdir(), 'rf-queue-tls-'));
let redis: RedisHarness;
let certFile = '';
const children: Child[] = [];

function cli(args: readonly string[], env: NodeJS.ProcessEnv): Child {
  const c = spawnChild('src/cli/main.ts', args, { ...process.env, ...env }, 120_000);
  children.push(c);
  return c;
}

describe.skipIf(redisMissing !== undefined)('a job queue on rediss://', () => {
  beforeAll(async () => {
    const tls = await selfSignedTls(dir);
    certFile = tls.certFile;
    redis = await startRedis({ tls: { certFile, keyFile: join(dir, 'tls/key.pem') } });
  }, 60_000);
  afterEach(async () => {
    for (const c of children.splice(0)) {
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      await c.exited;
    }
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('a worker and render --queue that trust the certificate: the one-process file byte for byte', async () => {
    expect(redis.url).toMatch(/^rediss:\/\/localhost:\d+$/);
    const trusted = { NODE_EXTRA_CA_CERTS: certFile, RASTERFLOW_DEBUG: '1' };
    const local = join(dir, 'local.tif');
    const l = cli(['render', '--rule', HILLSHADE, '--input', DEM, '--tile', '64', '--output', local], {});
    expect(await l.exited, l.stderr()).toBe(0);
    const worker = cli(['worker', '--queue', redis.url], trusted);
    await worker.waitFor(/worker on rediss:/, 60_000);
    const out = join(dir, 'queued.tif');
    const r = cli(
      ['render', '--queue', redis.url, '--band-rows', '128', '--rule', HILLSHADE, '--input', DEM, '--tile', '64', '--output', out],
      trusted,
    );
    expect(await r.exited, r.stderr()).toBe(0);
    expect(readFileSync(out).equals(readFileSync(local))).toBe(true);
    expect(worker.stderr()).toMatch(/range band \S+ done/);
  }, 120_000);

  it('a worker that does not trust the certificate: exit 1, an error naming --queue and the certificate', async () => {
    const w = cli(['worker', '--queue', redis.url], { NODE_EXTRA_CA_CERTS: '' });
    expect(await w.exited).toBe(1);
    expect(w.stderr()).toMatch(
      /at queue: the job queue's Redis at rediss:\/\/localhost:\d+\/? did not answer .*certificate.*check --queue/,
    );
  }, 60_000);
});

/**
 * The whole scale-out on loopback: PostgreSQL (the site store) and Redis (the job queue), two
 * `rasterflow serve` sites on both, four `rasterflow worker` processes. A training-data job
 * submitted through one server and followed through the other ends with the folder a one-process
 * export writes; a GenerateRaster job submitted through the second and followed through the first
 * ends with the file `rasterflow render` writes; work is spread over the workers. Everything starts
 * here and stops by itself; skips, saying so, without PostgreSQL or Redis.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportTrainingData } from '../src/chipper/export.js';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { expectSameTree } from './crash-helpers.js';
import { findPostgres, NO_POSTGRES, startPostgres, type PgServer } from './pg-harness.js';
import { queueChildren } from './queue-helpers.js';
import { redisMissing, startRedis, type RedisHarness } from './redis-harness.js';
import { httpCall, type Child } from './serve-helpers.js';

const ROOT = resolve(import.meta.dirname, '..');
const PASSWORD = 'a long enough password';
const REFERER = 'https://scale.test';
const GP = '/server/rest/services/System/RasterAnalysisTools/GPServer';
const DEM = join(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const HILLSHADE = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } };
const CHIPS = {
  inputRaster: join(ROOT, 'golden/data/L7_ETMs.tif'),
  inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
  metadataFormat: 'PASCAL_VOC_rectangles',
  tileSize: { x: 32, y: 32 },
  strideSize: { x: 16, y: 16 },
  context: { exportAllTiles: true },
};

const bin = findPostgres();
if (bin === undefined) console.warn(NO_POSTGRES);
const missing = bin === undefined ? NO_POSTGRES : redisMissing;

type Job = { jobId: string; jobStatus: string };

describe.skipIf(missing !== undefined)('two servers, one PostgreSQL site, one Redis queue, four workers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rf-scale-out-'));
  const { cli, startWorkers, killAll } = queueChildren({ ...process.env, RASTERFLOW_DEBUG: '1' });
  let pg: PgServer;
  let redis: RedisHarness;
  const servers: RunningServer[] = [];
  let workers: Child[] = [];

  beforeAll(async () => {
    pg = await startPostgres(bin!);
    redis = await startRedis();
    const store = await pg.createDatabase();
    const start = (i: number): Promise<RunningServer> =>
      startServer({
        dataDir: join(dir, `site-${i}`),
        port: 0,
        store,
        queue: redis.url,
        env: { RASTERFLOW_ADMIN_USERNAME: 'root', RASTERFLOW_ADMIN_PASSWORD: PASSWORD },
        config: { settings: { inputRoots: [join(ROOT, 'golden')] } },
        print: () => undefined,
      });
    servers.push(...(await Promise.all([start(0), start(1)])));
    workers = await startWorkers(redis.url, 4);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await killAll();
    await redis?.stop();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  const json = async (s: RunningServer, path: string, form: Record<string, string> = {}): Promise<Record<string, unknown>> =>
    JSON.parse(
      (
        await httpCall(`${s.httpsUrl}${path}`, {
          ca: s.tls.cert,
          headers: { referer: REFERER },
          body: new URLSearchParams({ f: 'json', ...form }).toString(),
        })
      ).body,
    ) as Record<string, unknown>;
  const tokenOf = async (s: RunningServer): Promise<string> =>
    (await json(s, '/portal/sharing/rest/generateToken', { username: 'root', password: PASSWORD, client: 'referer', referer: REFERER }))[
      'token'
    ] as string;
  const follow = async (s: RunningServer, task: string, jobId: string, token: string): Promise<string> => {
    let status = '';
    for (let i = 0; i < 1200 && !['geoJobSucceeded', 'geoJobFailed', 'geoJobCancelled'].includes(status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = ((await json(s, `${GP}/${task}/jobs/${jobId}`, { token })) as Job).jobStatus;
    }
    return status;
  };

  it('a training-data job through one server, followed through the other: the one-process folder', async () => {
    const [a, b] = servers as [RunningServer, RunningServer];
    const token = await tokenOf(a);
    const submitted = (await json(a, `${GP}/ExportTrainingDataforDeepLearning/submitJob`, {
      token,
      inputRaster: JSON.stringify({ url: CHIPS.inputRaster }),
      inputClassData: JSON.stringify({ url: CHIPS.inputClassData }),
      outputLocation: 'chips',
      metadataFormat: CHIPS.metadataFormat,
      tileSize: JSON.stringify(CHIPS.tileSize),
      strideSize: JSON.stringify(CHIPS.strideSize),
      context: JSON.stringify(CHIPS.context),
    })) as Job;
    expect(submitted.jobStatus, JSON.stringify(submitted)).toBe('geoJobSubmitted');
    expect(await follow(b, 'ExportTrainingDataforDeepLearning', submitted.jobId, await tokenOf(b))).toBe('geoJobSucceeded');
    const reference = join(dir, 'reference');
    await exportTrainingData({ ...CHIPS, outputLocation: reference });
    expect(expectSameTree(join(dir, 'site-0', 'jobs', 'chips'), reference)).toBeGreaterThan(100);
  }, 240_000);

  it('a GenerateRaster job through the second server, followed through the first: the file rasterflow render writes', async () => {
    const [a, b] = servers as [RunningServer, RunningServer];
    const token = await tokenOf(b);
    const submitted = (await json(b, `${GP}/GenerateRaster/submitJob`, {
      token,
      rasterFunction: JSON.stringify(HILLSHADE),
      functionArguments: JSON.stringify({ Raster: DEM }),
      outputName: 'shade',
    })) as Job;
    expect(submitted.jobStatus, JSON.stringify(submitted)).toBe('geoJobSubmitted');
    expect(await follow(a, 'GenerateRaster', submitted.jobId, await tokenOf(a))).toBe('geoJobSucceeded');
    const result = (await json(a, `${GP}/GenerateRaster/jobs/${submitted.jobId}/results/outputRaster`, { token })) as {
      value: { url: string };
    };
    const local = join(dir, 'local.tif');
    const r = cli(['render', '--rule', JSON.stringify(HILLSHADE), '--input', DEM, '--output', local]);
    expect(await r.exited, r.stderr()).toBe(0);
    expect(readFileSync(result.value.url).equals(readFileSync(local))).toBe(true);
  }, 240_000);

  it('the work was spread over the workers', () => {
    const busy = workers.filter((w) => /range \w+ \S+ done/.test(w.stderr()));
    expect(busy.length).toBeGreaterThanOrEqual(2);
  });
});

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { exportTrainingData, type ExportOptions, type ExportSummary } from '../../chipper/export.js';
import { allocateBlock } from '../../core/pixel-block.js';
import { rect } from '../../core/rect.js';
import { encodeGeoTiff } from '../../io/encode-tiff.js';
import { openSite } from '../../server/site.js';
import { openSqliteStore } from '../../server/sqlite-store.js';
import { gridInfo, runCli } from '../../../test/helpers.js';
import { ADMIN_AUDIENCE, jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { issueToken } from '../tokens.js';
import { serverAudience } from '../auth.js';
import type { JobRecord, SiteEvent } from '../site.js';
import { createGpService, GP_ROOT, jobOutputBytes, recoverJobs, type GpService, type GpServiceOptions } from './training-data-task.js';

// The small synthetic case of the chipper's tests: a 30 x 30 three-band U8 raster (cell 1 m,
// EPSG:32616, top-left at (1000, 2000)) and three hand-placed labels.
const dir = mkdtempSync(join(tmpdir(), 'rf-gp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const info = {
  ...gridInfo({ width: 30, height: 30, bandCount: 3, pixelType: 'U8', origin: { x: 1000, y: 2000 } }),
  spatialReference: { wkid: 32616, metersPerUnit: 1 },
};
const block = allocateBlock(rect(0, 0, 30, 30), 'U8', 3);
for (let b = 0; b < 3; b++) for (let i = 0; i < 900; i++) block.bands[b]![i] = ((i % 30) + 7 * Math.floor(i / 30) + 50 * b) % 256;
const rasterPath = join(dir, 'raster.tif');
writeFileSync(rasterPath, encodeGeoTiff(block, info));
const box = (x0: number, y0: number, x1: number, y1: number): number[][][] => [
  [
    [1000 + x0, 2000 - y0],
    [1000 + x0, 2000 - y1],
    [1000 + x1, 2000 - y1],
    [1000 + x1, 2000 - y0],
    [1000 + x0, 2000 - y0],
  ],
];
const labels = {
  spatialReference: { wkid: 32616 },
  features: [
    { attributes: { classvalue: 1, classname: 'pond' }, geometry: { rings: box(2, 3, 7, 9) } },
    { attributes: { classvalue: 2, classname: 'roof' }, geometry: { rings: box(8, 12, 12, 15) } },
    { attributes: { classvalue: 1, classname: 'pond' }, geometry: { x: 1015.5, y: 1994.5 } },
  ],
};
const labelPath = join(dir, 'labels.json');
writeFileSync(labelPath, JSON.stringify(labels));

/** The REST form of a small export (JSON-valued parameters as JSON text, as clients send them). */
const FORM = (outputLocation: string, extra: Record<string, string> = {}): Record<string, string> => ({
  inputRaster: JSON.stringify({ url: rasterPath }),
  inputClassData: JSON.stringify({ url: labelPath }),
  outputLocation,
  tileSize: '{"x":10,"y":10}',
  bufferRadius: '2',
  metadataFormat: 'PASCAL_VOC_rectangles',
  f: 'json',
  ...extra,
});

let site: TestSite;
let gp: GpService;
let events: SiteEvent[];
let admin: string;
const services: GpService[] = [];

async function start(options: GpServiceOptions = {}, config: Parameters<typeof testSite>[0] = {}): Promise<void> {
  // The inputs live in a temporary folder: the site reads inputs from there only when told so.
  site = await testSite({ inputRoots: [dir], ...config });
  events = [];
  site.on((e) => events.push(e));
  gp = createGpService(site, options);
  services.push(gp);
  await site.addUser('root', 'administrator');
  await site.addUser('pub', 'publisher');
  await site.addUser('gpuser', 'user', ['geoprocessing']);
  await site.addUser('other', 'user', ['geoprocessing']);
  await site.addUser('plain', 'user', ['featureLayer']);
  admin = await site.token('root');
}

afterEach(async () => {
  while (services.length > 0) await services.pop()!.close();
});

const TASK = `${GP_ROOT}/ExportTrainingDataforDeepLearning`;

async function call(path: string, form?: Record<string, string>, service = gp) {
  const res = await service.routes()[0]!.handler(siteRequest(path, form ? { form } : {}));
  return { res, body: await jsonOf<Record<string, unknown>>(res) };
}
const get = (path: string, token = admin) => call(`${path}${path.includes('?') ? '&' : '?'}f=json&token=${token}`);
const submit = (form: Record<string, string>, token = admin, task = TASK) => call(`${task}/submitJob`, { ...form, token });
const errorOf = (body: Record<string, unknown>) => body['error'] as { code: number; message: string; details: string[] };

async function finished(jobId: string, token = admin): Promise<Record<string, unknown>> {
  await gp.runner.settled(jobId);
  return (await get(`${TASK}/jobs/${jobId}`, token)).body;
}

function snapshot(root: string): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else m.set(relative(root, p), readFileSync(p));
    }
  };
  walk(root);
  return m;
}

/** A task that runs until it is released or aborted, reporting progress on demand. */
function controllable() {
  const started: { params: Record<string, unknown>; options: ExportOptions; release: (s?: Partial<ExportSummary>) => void }[] = [];
  const run = (params: unknown, options: ExportOptions): Promise<ExportSummary> =>
    new Promise((resolve, reject) => {
      const p = params as Record<string, unknown>;
      options.signal?.addEventListener('abort', () => reject(new Error('aborted')));
      started.push({
        params: p,
        options,
        release: (s = {}) =>
          resolve({ outputLocation: p['outputLocation'] as string, chips: 3, labels: 4, ...s } as unknown as ExportSummary),
      });
    });
  return { run, started };
}

const tick = () => new Promise((r) => setTimeout(r, 5));
/** Until the controllable task has started a run (a busy machine may take more than a tick), at most about 10 s. */
async function startedRuns(c: { readonly started: readonly unknown[] }): Promise<void> {
  for (let i = 0; i < 2000 && c.started.length === 0; i++) await tick();
}

describe('the proof: an export over REST equals the chipper run on the same parameters', () => {
  it('POST submit, poll to success, same files and bytes as exportTrainingData and `rasterflow chip`', { timeout: 60_000 }, async () => {
    await start();
    const { body } = await submit(FORM('run1'));
    expect(body['jobStatus']).toBe('geoJobSubmitted');
    const jobId = body['jobId'] as string;
    expect(jobId).toMatch(/^j[0-9a-f]{32}$/);

    // Poll as a client does, until the job ends.
    let job: Record<string, unknown> = {};
    for (let i = 0; i < 400; i++) {
      job = (await get(`${TASK}/jobs/${jobId}`)).body;
      if (['geoJobSucceeded', 'geoJobFailed', 'geoJobCancelled'].includes(job['jobStatus'] as string)) break;
      expect(['geoJobSubmitted', 'geoJobWaiting', 'geoJobExecuting']).toContain(job['jobStatus']);
      await tick();
    }
    expect(job['jobStatus']).toBe('geoJobSucceeded');
    expect(job['results']).toEqual({ outLocation: { paramUrl: 'results/outLocation' } });
    expect(job['inputs']).toEqual(
      Object.fromEntries(
        ['inputRaster', 'inputClassData', 'outputLocation', 'tileSize', 'bufferRadius', 'metadataFormat'].map((k) => [
          k,
          { paramUrl: `inputs/${k}` },
        ]),
      ),
    );
    expect(job).not.toHaveProperty('progress');
    const descriptions = (job['messages'] as { description: string }[]).map((m) => m.description);
    expect(descriptions[0]).toBe('Submitted.');
    expect(descriptions.slice(1, 3)).toEqual(['Executing...', 'Start Time: 2026-01-15 12:00:00']);
    expect(descriptions.at(-1)).toMatch(/^Succeeded \(Elapsed Time: \d+\.\d\d seconds\)$/);

    const out = join(site.config.dataDir, 'jobs', 'run1');
    const result = (await get(`${TASK}/jobs/${jobId}/results/outLocation`)).body;
    expect(result).toEqual({ paramName: 'outLocation', dataType: 'GPString', value: { uri: out } });

    // The same parameters through the chipper directly (what `rasterflow chip params.json` runs).
    const direct = join(dir, 'direct1');
    await exportTrainingData({
      inputRaster: { url: rasterPath },
      inputClassData: { url: labelPath },
      outputLocation: direct,
      tileSize: { x: 10, y: 10 },
      bufferRadius: 2,
      metadataFormat: 'PASCAL_VOC_rectangles',
    });
    const a = snapshot(out);
    const b = snapshot(direct);
    // No file of the export carries a timestamp or its own folder path, so nothing is excluded.
    expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
    expect(a.size).toBeGreaterThan(5);
    for (const [name, bytes] of b) expect(a.get(name)?.equals(bytes), name).toBe(true);
    // And `rasterflow chip params.json`, the command line on the same parameters.
    const viaCli = join(dir, 'cli1');
    const paramsFile = join(dir, 'params1.json');
    writeFileSync(
      paramsFile,
      JSON.stringify({
        inputRaster: { url: rasterPath },
        inputClassData: { url: labelPath },
        outputLocation: viaCli,
        tileSize: { x: 10, y: 10 },
        bufferRadius: 2,
        metadataFormat: 'PASCAL_VOC_rectangles',
      }),
    );
    const r = runCli(['chip', paramsFile]);
    expect(r.code, r.stderr).toBe(0);
    const c = snapshot(viaCli);
    expect([...c.keys()].sort()).toEqual([...a.keys()].sort());
    for (const [name, bytes] of c) expect(a.get(name)?.equals(bytes), name).toBe(true);

    // The record in the store and the event.
    const rec = await site.store.getJob(jobId);
    expect(rec).toMatchObject({ status: 'geoJobSucceeded', owner: 'root', results: { outLocation: { uri: out } } });
    expect(rec?.inputs['tileSize']).toEqual({ x: 10, y: 10 });
    expect(events.map((e) => [e.service, e.changeType])).toEqual([['System/RasterAnalysisTools.GPServer', 'jobSucceeded']]);
    expect(events[0]!.payload).toMatchObject({
      jobId,
      jobStatus: 'geoJobSucceeded',
      task: 'ExportTrainingDataforDeepLearning',
      owner: 'root',
      results: { outLocation: { uri: out } },
    });

    // inputs/<param>: the value as sent, JSON text parsed; names match in any case.
    expect((await get(`${TASK}/jobs/${jobId}/inputs/outputLocation`)).body).toEqual({
      paramName: 'outputLocation',
      dataType: 'GPString',
      value: 'run1',
    });
    expect((await get(`${TASK}/jobs/${jobId}/inputs/TILESIZE`)).body).toEqual({
      paramName: 'tileSize',
      dataType: 'GPString',
      value: { x: 10, y: 10 },
    });
    expect((await get(`${TASK}/jobs/${jobId}/inputs/bufferRadius`)).body).toEqual({
      paramName: 'bufferRadius',
      dataType: 'GPDouble',
      value: '2',
    });
    expect(errorOf((await get(`${TASK}/jobs/${jobId}/inputs/chipFormat`)).body)).toEqual({
      code: 400,
      message: 'Unable to complete operation.',
      details: [`Job '${jobId}' has no input 'chipFormat'.`],
    });
    expect(errorOf((await get(`${TASK}/jobs/${jobId}/results/other`)).body).details).toEqual([`The task has no result 'other'.`]);
    // returnMessages=false omits messages.
    expect((await get(`${TASK}/jobs/${jobId}?returnMessages=false`)).body).not.toHaveProperty('messages');
  });

  it('GET submit with the parameters in the query string; an absolute path under a writable root', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rf-gp-root-'));
    await start({}, { writableRoots: [root] });
    const query = new URLSearchParams({ ...FORM(join(root, 'chips')), token: admin }).toString();
    const { body } = await call(`${TASK}/submitJob?${query}`);
    const job = await finished(body['jobId'] as string);
    expect(job['jobStatus']).toBe('geoJobSucceeded');
    expect(readdirSync(join(root, 'chips'))).toContain('images');
    rmSync(root, { recursive: true, force: true });
  });

  it.each(['ExportTrainingDataForDeepLearning', 'ExportTrainingData'])('the task answers under the variant name %s', async (name) => {
    const c = controllable();
    await start({ run: c.run });
    const { body } = await submit(FORM('v'), admin, `${GP_ROOT}/${name}`);
    expect(body['jobStatus']).toBe('geoJobSubmitted');
    await startedRuns(c);
    c.started[0]!.release();
    expect((await finished(body['jobId'] as string))['jobStatus']).toBe('geoJobSucceeded');
    expect((await get(`${GP_ROOT}/${name}/jobs/${body['jobId'] as string}`)).body['jobStatus']).toBe('geoJobSucceeded');
    expect((await get(`${GP_ROOT}/${name}`)).body['name']).toBe('ExportTrainingDataforDeepLearning');
  });

  it('a job whose input cannot be read fails, with the reason in its messages and a jobFailed event', async () => {
    await start();
    const { body } = await submit(FORM('bad', { inputRaster: JSON.stringify({ url: join(dir, 'missing.tif') }) }));
    const job = await finished(body['jobId'] as string);
    expect(job['jobStatus']).toBe('geoJobFailed');
    const msgs = job['messages'] as { type: string; description: string }[];
    expect(msgs.at(-1)).toEqual({ type: 'geoJobMessageTypeError', description: 'Failed.' });
    expect(msgs.at(-2)?.type).toBe('geoJobMessageTypeError');
    expect(job).not.toHaveProperty('results');
    expect(events.map((e) => e.changeType)).toEqual(['jobFailed']);
    expect(errorOf((await get(`${TASK}/jobs/${body['jobId'] as string}/results/outLocation`)).body).details).toEqual([
      `Job '${body['jobId'] as string}' has no results: its status is geoJobFailed.`,
    ]);
  });
});

describe('submitJob: bad parameters are refused before a job exists', () => {
  beforeEach(() => start());

  it('every problem listed, with the parameter named', async () => {
    const { body } = await submit({
      inputClassData: JSON.stringify({ url: labelPath }),
      chipFormat: 'GIF',
      tileSize: '{"x":"a"}',
      f: 'json',
    });
    const e = errorOf(body);
    expect(e.code).toBe(400);
    expect(e.message).toBe('Unable to complete operation.');
    expect(e.details[0]).toBe('outputLocation: outputLocation must be specified');
    expect(e.details.some((d) => d.startsWith('inputRaster: '))).toBe(true);
    expect(e.details.some((d) => d.startsWith('chipFormat: '))).toBe(true);
    expect(e.details.some((d) => d.startsWith('tileSize.x: '))).toBe(true);
    expect(await site.store.listJobs()).toEqual([]);
  });

  it.each([
    ['/etc/chips', 'is outside the folders this server may write to'],
    ['../escape', `must be a folder name`],
    ['a/b', `must be a folder name`],
    ['.hidden', `must be a folder name`],
  ])('outputLocation %j is refused', async (loc, why) => {
    const e = errorOf((await submit(FORM(loc))).body);
    expect(e.details).toHaveLength(1);
    expect(e.details[0]).toContain('outputLocation');
    expect(e.details[0]).toContain(why);
  });

  it('a symbolic link inside the data folder cannot lead the output elsewhere', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'rf-gp-outside-'));
    symlinkSync(outside, join(site.config.dataDir, 'link'));
    const e = errorOf((await submit(FORM(join(site.config.dataDir, 'link', 'chips')))).body);
    expect(e.details).toHaveLength(1);
    expect(e.details[0]).toContain('is outside the folders this server may write to');
    rmSync(outside, { recursive: true, force: true });
  });

  it('the data folder itself and its own folders are not outputs', async () => {
    for (const own of ['', 'tls', 'site-exports/x', 'site.db']) {
      const e = errorOf((await submit(FORM(join(site.config.dataDir, own)))).body);
      expect(e.details).toEqual([
        `outputLocation: outputLocation ${JSON.stringify(join(site.config.dataDir, own))} is one of the server's own folders; choose a folder below it`,
      ]);
    }
  });

  it('an absolute path inside the data folder is allowed', async () => {
    const { body } = await submit(FORM(join(site.config.dataDir, 'mine')));
    expect(body['jobStatus']).toBe('geoJobSubmitted');
    expect((await finished(body['jobId'] as string))['jobStatus']).toBe('geoJobSucceeded');
  });

  it('a store that cannot record the job: an error, no job answered', async () => {
    site.store.putJob = () => Promise.reject(new Error('disk full'));
    const { res, body } = await submit(FORM('x'));
    expect(res.status).toBe(500);
    expect(body).not.toHaveProperty('jobId');
    expect(errorOf(body).code).toBe(500);
  });

  it('unknown parameters are named', async () => {
    expect(errorOf((await submit(FORM('x', { bogus: '1' }))).body).details).toEqual(['bogus: unknown parameter "bogus"']);
  });
});

describe('service and task info', () => {
  beforeEach(() => start());

  it('the service lists its task, asynchronous', async () => {
    expect((await get(GP_ROOT)).body).toMatchObject({
      tasks: ['ExportTrainingDataforDeepLearning', 'GenerateRaster'],
      executionType: 'geoExecutionTypeAsynchronous',
    });
  });

  it('the task info lists every parameter with type, direction, requirement and default', async () => {
    const t = (await get(TASK)).body;
    expect(t).toMatchObject({ name: 'ExportTrainingDataforDeepLearning', executionType: 'geoExecutionTypeAsynchronous' });
    const params = t['parameters'] as Record<string, unknown>[];
    expect(params.map((p) => p['name'])).toEqual([
      'inputRaster',
      'outputLocation',
      'inputClassData',
      'chipFormat',
      'tileSize',
      'strideSize',
      'metadataFormat',
      'classValueField',
      'bufferRadius',
      'inputMaskPolygons',
      'rotationAngle',
      'referenceSystem',
      'processAllRasterItems',
      'blackenAroundFeature',
      'fixChipSize',
      'additionalInputRaster',
      'inputInstanceData',
      'instanceClassValueField',
      'minPolygonOverlapRatio',
      'context',
      'outLocation',
    ]);
    expect(params[0]).toMatchObject({
      dataType: 'GPString',
      direction: 'geoGPParameterDirectionInput',
      parameterType: 'geoGPParameterTypeRequired',
    });
    expect(params.find((p) => p['name'] === 'metadataFormat')).toMatchObject({
      defaultValue: 'PASCAL_VOC_rectangles',
      parameterType: 'geoGPParameterTypeOptional',
    });
    expect(params.at(-1)).toMatchObject({ dataType: 'GPString', direction: 'geoGPParameterDirectionOutput' });
  });

  it('f absent answers HTML; an unknown task or resource is not found', async () => {
    const res = await gp.routes()[0]!.handler(siteRequest(`${TASK}?token=${admin}`));
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(errorOf((await get(`${GP_ROOT}/Nope`)).body).code).toBe(404);
    expect(errorOf((await get(`${TASK}/jobs/x/y/z/w`)).body).code).toBe(404);
  });
});

describe('who may call', () => {
  beforeEach(() => start());

  it('no token -> 499; a token of another server root -> 498', async () => {
    expect(errorOf((await call(`${GP_ROOT}?f=json`)).body).code).toBe(499);
    const foreign = await site.token('root', { audience: serverAudience('https://elsewhere/server') });
    expect(errorOf((await get(GP_ROOT, foreign)).body).code).toBe(498);
  });

  it('server, portal and admin tokens are accepted', async () => {
    for (const audience of [serverAudience('https://localhost/server'), ADMIN_AUDIENCE]) {
      expect((await get(GP_ROOT, await site.token('root', { audience }))).body['tasks']).toBeDefined();
    }
  });

  it('administrator, publisher and the geoprocessing privilege may submit; others get 403', async () => {
    for (const user of ['pub', 'gpuser'])
      expect((await submit(FORM(`by-${user}`), await site.token(user))).body['jobStatus']).toBe('geoJobSubmitted');
    const e = errorOf((await submit(FORM('no'), await site.token('plain'))).body);
    expect(e).toEqual({
      code: 403,
      message: 'You do not have permissions to access this resource or perform this operation.',
      details: [],
    });
    expect(errorOf((await get(GP_ROOT, await site.token('plain'))).body).code).toBe(403);
  });

  it('a job is seen and cancelled by its owner or an administrator only', async () => {
    const c = controllable();
    await start({ run: c.run });
    const owner = await site.token('gpuser');
    const jobId = (await submit(FORM('own'), owner)).body['jobId'] as string;
    const otherTok = await site.token('other');
    for (const p of ['', '/cancel', '/results/outLocation', '/inputs/outputLocation']) {
      expect(errorOf((await get(`${TASK}/jobs/${jobId}${p}`, otherTok)).body).details).toEqual([
        `Job '${jobId}' does not exist or is not accessible.`,
      ]);
    }
    expect((await get(`${TASK}/jobs/${jobId}`, owner)).body['jobId']).toBe(jobId);
    expect((await get(`${TASK}/jobs/${jobId}`, admin)).body['jobId']).toBe(jobId);
    await tick();
    expect((await get(`${TASK}/jobs/${jobId}/cancel`, admin)).body).toEqual({ jobId, jobStatus: 'geoJobCancelling' });
  });

  it('an unknown job is an error', async () => {
    expect(errorOf((await get(`${TASK}/jobs/jnope`)).body)).toEqual({
      code: 400,
      message: 'Unable to complete operation.',
      details: [`Job 'jnope' does not exist or is not accessible.`],
    });
  });

  it('plain HTTP with allSSL -> SSL Required', async () => {
    await start({}, { allSSL: true });
    const res = await gp.routes()[0]!.handler(siteRequest(`${GP_ROOT}?f=json&token=${admin}`, { scheme: 'http' }));
    expect(errorOf(await jsonOf(res))).toEqual({ code: 403, message: 'SSL Required', details: ['SSL Required'] });
  });
});

describe('job states: waiting, executing with progress, cancel', () => {
  it('progress only while executing; throttled writes; cancel rules', async () => {
    const c = controllable();
    await start({ run: c.run, progressIntervalMs: 60_000 });
    let writes = 0;
    const putJob = site.store.putJob.bind(site.store);
    site.store.putJob = async (j: JobRecord) => {
      writes++;
      return putJob(j);
    };
    const j1 = (await submit(FORM('a'))).body['jobId'] as string;
    const j2 = (await submit(FORM('b'))).body['jobId'] as string;
    await tick();
    const status = async (id: string) => (await get(`${TASK}/jobs/${id}`)).body;
    expect((await status(j1))['jobStatus']).toBe('geoJobExecuting');
    expect((await status(j2))['jobStatus']).toBe('geoJobWaiting');
    expect(await status(j2)).not.toHaveProperty('progress');

    const before = writes;
    for (let i = 1; i <= 50; i++) c.started[0]!.options.onProgress?.({ done: i, total: 100, chips: i, message: 'chip' });
    await tick();
    expect(writes - before).toBe(1); // one write in the interval, the rest held in memory
    expect((await status(j1))['progress']).toEqual({ type: 'step', message: 'Exporting image chips', percent: 1 });

    // Waiting -> cancelled at once.
    expect((await get(`${TASK}/jobs/${j2}/cancel`)).body).toEqual({ jobId: j2, jobStatus: 'geoJobCancelled' });
    // Executing -> cancelling (POST), then cancelled when the task stops.
    expect((await call(`${TASK}/jobs/${j1}/cancel`, { f: 'json', token: admin })).body).toEqual({
      jobId: j1,
      jobStatus: 'geoJobCancelling',
    });
    await gp.runner.settled(j1);
    const done = await status(j1);
    expect(done['jobStatus']).toBe('geoJobCancelled');
    expect(done).not.toHaveProperty('progress');
    expect(c.started).toHaveLength(1); // the waiting job never started
    // Cancelling a job that ended: the table's "Invalid or missing input parameters." and nothing changes.
    expect(errorOf((await get(`${TASK}/jobs/${j1}/cancel`)).body)).toEqual({
      code: 400,
      message: 'Invalid or missing input parameters.',
      details: [`Job '${j1}' cannot be cancelled: its status is geoJobCancelled.`],
    });
    expect(events.map((e) => [e.changeType, e.payload['jobId']])).toEqual([
      ['jobCancelled', j2],
      ['jobCancelled', j1],
    ]);
    expect(errorOf((await get(`${TASK}/jobs/${j1}/results/outLocation`)).body).details).toEqual([
      `Job '${j1}' has no results: its status is geoJobCancelled.`,
    ]);
    expect(errorOf((await get(`${TASK}/jobs/${j1}/inputs/outputLocation`)).body).details).toEqual([
      `Job '${j1}' has no inputs: its status is geoJobCancelled.`,
    ]);
  });

  it('a succeeded job cannot be cancelled and stays succeeded', async () => {
    const c = controllable();
    await start({ run: c.run });
    const j = (await submit(FORM('s'))).body['jobId'] as string;
    await startedRuns(c);
    c.started[0]!.release();
    await gp.runner.settled(j);
    expect(errorOf((await get(`${TASK}/jobs/${j}/cancel`)).body).message).toBe('Invalid or missing input parameters.');
    expect((await get(`${TASK}/jobs/${j}`)).body['jobStatus']).toBe('geoJobSucceeded');
  });

  it('the task receives the parameters with outputLocation resolved into the data folder', async () => {
    const c = controllable();
    await start({ run: c.run });
    await submit(FORM('resolved'));
    await startedRuns(c);
    expect(c.started[0]!.params['outputLocation']).toBe(join(site.config.dataDir, 'jobs', 'resolved'));
  });
});

describe('shutdown and restart', () => {
  it('close() cancels running and waiting jobs, records them cancelled, and refuses new jobs', async () => {
    const c = controllable();
    await start({ run: c.run });
    const j1 = (await submit(FORM('a'))).body['jobId'] as string;
    const j2 = (await submit(FORM('b'))).body['jobId'] as string;
    await tick();
    await gp.close();
    expect((await site.store.getJob(j1))?.status).toBe('geoJobCancelled');
    expect((await site.store.getJob(j2))?.status).toBe('geoJobCancelled');
    expect(events.map((e) => e.changeType)).toEqual(['jobCancelled', 'jobCancelled']);
    expect(errorOf((await submit(FORM('c'))).body).code).toBe(409);
  });

  it('a restart on the same store reports the interrupted job failed', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rf-gp-db-')), 'site.db');
    const c = controllable();
    const store1 = openSqliteStore(file);
    const site1 = await openSite({ store: store1, dataDir: dir, config: { portalId: 'org1' } });
    await store1.putUser({ username: 'root', passwordHash: 'x', role: 'administrator', roles: [], created: 0 });
    const gp1 = createGpService(site1, { run: c.run });
    const token1 = await issueToken(site1.keys, {
      subject: 'root',
      audience: 'portal',
      binding: { kind: 'referer', value: 'http://test' },
      expiresAt: Date.now() + 3_600_000,
    });
    const jobId = (await call(`${TASK}/submitJob`, { ...FORM('r'), token: token1 }, gp1)).body['jobId'] as string;
    await tick();
    expect((await call(`${TASK}/jobs/${jobId}?f=json&token=${token1}`, undefined, gp1)).body['jobStatus']).toBe('geoJobExecuting');

    // The process "dies": a new site on the same database file, as after a restart.
    const store2 = openSqliteStore(file);
    const site2 = await openSite({ store: store2, dataDir: dir, config: { portalId: 'org1' } });
    const seen: SiteEvent[] = [];
    site2.on((e) => seen.push(e));
    expect(await recoverJobs(site2)).toBe(1);
    expect(await recoverJobs(site2)).toBe(0);
    const gp2 = createGpService(site2);
    const job = (await call(`${TASK}/jobs/${jobId}?f=json&token=${token1}`, undefined, gp2)).body;
    expect(job['jobStatus']).toBe('geoJobFailed');
    expect(job).not.toHaveProperty('progress');
    expect((job['messages'] as { description: string }[]).map((m) => m.description)).toContain(
      'The server restarted while the job was running; the job was stopped. Submit it again.',
    );
    expect(seen.map((e) => [e.changeType, e.payload['jobId']])).toEqual([['jobFailed', jobId]]);
    await gp1.close();
    await gp2.close();
    await store1.close();
    await store2.close();
  });
});

describe('limits: jobs waiting or executing, on the server and per user', () => {
  it('maxJobsPerUser and maxJobs refuse a submit naming the setting and the count; finished and cancelled jobs do not count', async () => {
    const c = controllable();
    await start({ run: c.run }, { maxJobs: 3, maxJobsPerUser: 2 });
    const gpuser = await site.token('gpuser');
    const other = await site.token('other');
    const j1 = (await submit(FORM('u1'), gpuser)).body['jobId'] as string;
    const j2 = (await submit(FORM('u2'), gpuser)).body['jobId'] as string;
    expect(j1).toBeDefined();
    expect(j2).toBeDefined();
    // The user's third: refused, 400, naming maxJobsPerUser and the count.
    const own = await submit(FORM('u3'), gpuser);
    expect(own.res.status).toBe(200);
    expect(errorOf(own.body)).toEqual({
      code: 400,
      message: 'The request exceeds a size limit.',
      details: [
        'maxJobsPerUser: gpuser has 2 jobs waiting or executing, the most one user may have (maxJobsPerUser 2); wait for one to finish or cancel one.',
      ],
    });
    // Another user still may: the server's third.
    const j3 = (await submit(FORM('o1'), other)).body['jobId'] as string;
    expect(j3).toMatch(/^j/);
    // The server's fourth: busy, 503, naming maxJobs and the count.
    const busy = await submit(FORM('p1'), await site.token('pub'));
    expect(busy.res.status).toBe(200);
    expect(errorOf(busy.body)).toEqual({
      code: 503,
      message: 'The server is busy. Try again later.',
      details: ['maxJobs: the server has 3 jobs waiting or executing, the most it takes (maxJobs 3); try again later.'],
    });
    expect((await site.store.listJobs()).length).toBe(3);

    // j1 finishes: one slot on the server and one for gpuser.
    await startedRuns(c);
    c.started[0]!.release();
    expect((await finished(j1))['jobStatus']).toBe('geoJobSucceeded');
    const j4 = (await submit(FORM('u4'), gpuser)).body['jobId'] as string;
    expect(j4).toMatch(/^j/);
    expect(errorOf((await submit(FORM('u5'), gpuser)).body).details[0]).toMatch(/^maxJobsPerUser: gpuser has 2 jobs/);
    // A cancelled job frees its slot too.
    await get(`${TASK}/jobs/${j4}/cancel`);
    expect((await finished(j4))['jobStatus']).toBe('geoJobCancelled');
    expect((await submit(FORM('u6'), gpuser)).body['jobStatus']).toBe('geoJobSubmitted');
  });

  it('submits made at the same moment cannot pass the limit together', async () => {
    const c = controllable();
    await start({ run: c.run }, { maxJobs: 100, maxJobsPerUser: 3 });
    const gpuser = await site.token('gpuser');
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => submit(FORM(`s${i}`), gpuser)));
    expect(answers.filter((a) => a.body['jobStatus'] === 'geoJobSubmitted')).toHaveLength(3);
    expect(answers.filter((a) => errorOf(a.body)?.code === 400)).toHaveLength(3);
  });

  it('the defaults: 100 on the server, 10 per user', async () => {
    const c = controllable();
    await start({ run: c.run });
    const gpuser = await site.token('gpuser');
    for (let i = 0; i < 10; i++) expect((await submit(FORM(`d${i}`), gpuser)).body['jobStatus']).toBe('geoJobSubmitted');
    expect(errorOf((await submit(FORM('d10'), gpuser)).body).details[0]).toContain('(maxJobsPerUser 10)');
  });
});

describe('limits: the disk quota of exports (exportQuotaBytes)', () => {
  const bytesBelow = (root: string): number => {
    let n = 0;
    for (const [, b] of snapshot(root)) n += b.length;
    return n;
  };

  it('a job that would pass the quota stops before that chip and fails naming exportQuotaBytes; a resume with room finishes it byte-identical', async () => {
    // Each chip of this export is bounded by 10 x 10 x (3 + 2) bytes + 16 KiB of side files:
    // a quota of 20,000 bytes takes a few chips, not the whole export.
    await start({}, { exportQuotaBytes: 20_000 });
    const { body } = await submit(FORM('q1', { context: '{"exportAllTiles":true}' }));
    const job = await finished(body['jobId'] as string);
    expect(job['jobStatus']).toBe('geoJobFailed');
    const msgs = (job['messages'] as { type: string; description: string }[]).map((m) => m.description);
    expect(msgs.at(-1)).toBe('Failed.');
    expect(msgs.at(-2)).toMatch(
      /^exportQuotaBytes: the export stopped before passing the disk quota \(exportQuotaBytes\): it wrote \d+ chip/,
    );
    expect(events.map((e) => e.changeType)).toEqual(['jobFailed']);

    // Nothing a resume would trust beyond the journal: every journalled chip is whole, no temporary
    // files, no metadata (the folder is recognisably unfinished), and the quota held.
    const out = join(site.config.dataDir, 'jobs', 'q1');
    const files = snapshot(out);
    const journal = files.get('.rasterflow-journal.ndjson')!.toString().trim().split('\n');
    const chips = journal.slice(1).map((l) => JSON.parse(l) as { image: string; bytes: number });
    expect(chips.length).toBeGreaterThan(0);
    expect(chips.length).toBeLessThan(9);
    for (const ch of chips) expect(files.has(ch.image), ch.image).toBe(true);
    expect([...files.keys()].filter((f) => /\.part-\d+$/.test(f))).toEqual([]);
    expect(files.has('geo_accumulated_stats.json')).toBe(false);
    expect(bytesBelow(out)).toBeLessThanOrEqual(20_000);

    // Used less than the quota, so a new job is taken; it stops at once (its first chip would pass it).
    const again = await finished((await submit(FORM('q2', { context: '{"exportAllTiles":true}' }))).body['jobId'] as string);
    expect(again['jobStatus']).toBe('geoJobFailed');
    expect(bytesBelow(join(site.config.dataDir, 'jobs'))).toBeLessThanOrEqual(20_000);

    // With room (the chipper without a quota), `resume` finishes the first one: the same bytes as an export never stopped.
    const params = {
      inputRaster: { url: rasterPath },
      inputClassData: { url: labelPath },
      tileSize: { x: 10, y: 10 },
      bufferRadius: 2,
      metadataFormat: 'PASCAL_VOC_rectangles',
      context: { exportAllTiles: true },
    };
    const resumed = await exportTrainingData({ ...params, outputLocation: out, resume: true });
    expect(resumed.resumedFrom).toBe(chips.length);
    const whole = join(dir, 'quota-whole');
    await exportTrainingData({ ...params, outputLocation: whole });
    const a = snapshot(out);
    const b = snapshot(whole);
    expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
    for (const [name, bytes] of b) expect(a.get(name)?.equals(bytes), name).toBe(true);
  });

  it('a submit when the outputs use the quota is refused naming exportQuotaBytes; removing outputs frees it', async () => {
    await start({}, { exportQuotaBytes: 1000 });
    // Outputs already there (an earlier job's folder) count.
    const jobs = join(site.config.dataDir, 'jobs', 'old');
    mkdirSync(jobs, { recursive: true });
    writeFileSync(join(jobs, 'chip.tif'), Buffer.alloc(1000));
    const e = errorOf((await submit(FORM('n1'))).body);
    expect(e.code).toBe(400);
    expect(e.details).toEqual([
      'exportQuotaBytes: the outputs of the jobs use 1000 bytes, the disk quota of exports (exportQuotaBytes 1000); delete old job outputs or raise exportQuotaBytes.',
    ]);
    expect(await site.store.listJobs()).toEqual([]);
    rmSync(jobs, { recursive: true });
    expect((await submit(FORM('n2'))).body['jobStatus']).toBe('geoJobSubmitted');
  });

  it('the output folders of jobs outside the data folder count, each once', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rf-gp-quota-'));
    await start({}, { writableRoots: [root] });
    const done = await finished((await submit(FORM(join(root, 'out')))).body['jobId'] as string);
    expect(done['jobStatus']).toBe('geoJobSucceeded');
    const used = bytesBelow(join(root, 'out'));
    expect(used).toBeGreaterThan(1000);
    expect(await jobOutputBytes(site)).toBe(used);
    // A second job into a folder inside the first does not count it twice; the jobs area counts.
    writeFileSync(join(root, 'out', 'extra.bin'), Buffer.alloc(100));
    mkdirSync(join(site.config.dataDir, 'jobs', 'x'), { recursive: true });
    writeFileSync(join(site.config.dataDir, 'jobs', 'x', 'f'), Buffer.alloc(7));
    expect(await jobOutputBytes(site)).toBe(used + 107);
    rmSync(root, { recursive: true, force: true });
  });
});

describe('limits: where the task reads inputs from', () => {
  const outside = mkdtempSync(join(tmpdir(), 'rf-gp-elsewhere-'));
  afterAll(() => rmSync(outside, { recursive: true, force: true }));
  writeFileSync(join(outside, 'raster.tif'), readFileSync(rasterPath));
  writeFileSync(join(outside, 'labels.json'), JSON.stringify(labels));
  symlinkSync(outside, join(dir, 'link-out'));

  const refused = async (form: Record<string, string>): Promise<string[]> => {
    const before = (await site.store.listJobs()).length;
    const { body } = await submit(form);
    const e = errorOf(body);
    expect(e?.code, JSON.stringify(body)).toBe(400);
    expect((await site.store.listJobs()).length).toBe(before);
    return e.details;
  };

  it('a ../ escape, a symbolic link out, a file: URL elsewhere and another scheme are refused, naming the parameter and the setting', async () => {
    await start();
    const up = join(dir, '..', basename(outside), 'raster.tif');
    expect(await refused(FORM('e1', { inputRaster: JSON.stringify({ url: up }) }))).toEqual([
      `inputRaster: ${JSON.stringify(up)} is outside the folders this server reads inputs from; an administrator can add its folder to the inputRoots setting`,
    ]);
    // The link lies inside an allowed folder; where it leads does not.
    expect(await refused(FORM('e2', { inputClassData: join(dir, 'link-out', 'labels.json') }))).toEqual([
      `inputClassData: ${JSON.stringify(join(dir, 'link-out', 'labels.json'))} is outside the folders this server reads inputs from; an administrator can add its folder to the inputRoots setting`,
    ]);
    expect((await refused(FORM('e3', { inputClassData: JSON.stringify({ url: 'file:///etc/passwd' }) })))[0]).toMatch(
      /^inputClassData: "file:\/\/\/etc\/passwd" is outside the folders .* inputRoots setting$/,
    );
    expect((await refused(FORM('e4', { inputRaster: 'ftp://example.com/a.tif' })))[0]).toBe(
      'inputRaster: "ftp://example.com/a.tif": only local paths and http(s) URLs are read (not ftp: URLs)',
    );
    // Every refused input at once, each named.
    const all = await refused(
      FORM('e5', {
        inputRaster: JSON.stringify({ url: join(outside, 'raster.tif') }),
        inputMaskPolygons: '/etc/hosts',
      }),
    );
    expect(all.map((d) => d.split(':')[0])).toEqual(['inputRaster', 'inputMaskPolygons']);
  });

  it('rasters named inside a rendering rule are checked too, at their place in the rule', async () => {
    await start();
    const rule = {
      rasterFunction: 'Clip',
      rasterFunctionArguments: {
        Raster: { url: join(outside, 'raster.tif') },
        ClippingGeometry: { xmin: 1000, ymin: 1970, xmax: 1030, ymax: 2000 },
      },
    };
    const [d] = await refused(FORM('r1', { inputRaster: JSON.stringify(rule) }));
    expect(d).toMatch(/^inputRaster\.rasterFunctionArguments\.Raster: .* inputRoots setting$/);
    // A bare path in a rule, with `..`.
    const bare = { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: `${dir}/../${basename(outside)}/raster.tif` } };
    expect((await refused(FORM('r2', { inputRaster: JSON.stringify(bare) })))[0]).toMatch(
      /^inputRaster\.rasterFunctionArguments\.Raster: /,
    );
    // The same rule over an allowed raster runs.
    const ok = { ...rule, rasterFunctionArguments: { ...rule.rasterFunctionArguments, Raster: { url: rasterPath } } };
    const job = await finished((await submit(FORM('r3', { inputRaster: JSON.stringify(ok) }))).body['jobId'] as string);
    expect(job['jobStatus']).toBe('geoJobSucceeded');
  });

  it('an http(s) input needs its origin in inputOrigins; an allowed origin is read', async () => {
    const tif = readFileSync(rasterPath);
    const server = createServer((req, res) => {
      const range = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
      if (range) {
        const from = Number(range[1]);
        const to = range[2] ? Math.min(Number(range[2]), tif.length - 1) : tif.length - 1;
        res.writeHead(206, {
          'content-range': `bytes ${from}-${to}/${tif.length}`,
          'content-length': to - from + 1,
          'accept-ranges': 'bytes',
        });
        res.end(tif.subarray(from, to + 1));
      } else {
        res.writeHead(200, { 'content-length': tif.length, 'accept-ranges': 'bytes' });
        res.end(tif);
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await start();
      expect(await refused(FORM('h1', { inputRaster: JSON.stringify({ url: `${origin}/raster.tif` }) }))).toEqual([
        `inputRaster: "${origin}/raster.tif": this server does not read inputs from ${origin}; an administrator can allow that origin with the inputOrigins setting`,
      ]);
      await gp.close();
      await start({}, { inputOrigins: [origin] });
      const job = await finished(
        (await submit(FORM('h2', { inputRaster: JSON.stringify({ url: `${origin}/raster.tif` }) }))).body['jobId'] as string,
      );
      expect(job['jobStatus'], JSON.stringify(job['messages'])).toBe('geoJobSucceeded');
      // Another port of the same host is another origin.
      expect((await refused(FORM('h3', { inputRaster: JSON.stringify({ url: 'http://127.0.0.1:1/raster.tif' }) })))[0]).toContain(
        'does not read inputs from http://127.0.0.1:1',
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('without inputRoots: the data folder, the writable roots and the folders of the image services are read; a file: URL inside is fine', async () => {
    await start({}, { inputRoots: undefined });
    expect(await refused(FORM('d1'))).toHaveLength(2); // the temporary folder is not a root
    const data = join(site.config.dataDir, 'inputs');
    mkdirSync(data);
    writeFileSync(join(data, 'raster.tif'), readFileSync(rasterPath));
    writeFileSync(join(data, 'labels.json'), JSON.stringify(labels));
    const inData = {
      inputRaster: JSON.stringify({ url: pathToFileURL(join(data, 'raster.tif')).href }),
      inputClassData: join(data, 'labels.json'),
    };
    expect((await finished((await submit(FORM('d2', inData))).body['jobId'] as string))['jobStatus']).toBe('geoJobSucceeded');
    // A registered image service's raster folder.
    await site.store.putService({ folder: '', serviceName: 'scene', type: 'ImageServer', properties: { path: rasterPath }, created: 0 });
    expect((await finished((await submit(FORM('d3'))).body['jobId'] as string))['jobStatus']).toBe('geoJobSucceeded');
    // Not the folder next to it.
    expect(await refused(FORM('d4', { inputRaster: JSON.stringify({ url: join(outside, 'raster.tif') }) }))).toHaveLength(1);
    // Nor the site's own files in the data folder, by any spelling.
    for (const own of ['site.db', 'site.db-wal', 'tls/key.pem', 'site-exports/x.agssite', 'inputs/../tls/key.pem']) {
      const [d] = await refused(FORM('d5', { inputClassData: join(site.config.dataDir, own) }));
      expect(d).toMatch(/^inputClassData: ".*" is one of the server's own files, never read as an input$/);
    }
  });
});

describe('deleting a job frees its share of the quota', () => {
  it('jobs/<id>/delete (POST) removes an ended job’s folder in the jobs area; the quota has room again', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rf-gp-del-'));
    await start({}, { exportQuotaBytes: 40_000, writableRoots: [root] });
    const j1 = (await submit(FORM('d1'))).body['jobId'] as string;
    expect((await finished(j1))['jobStatus']).toBe('geoJobSucceeded');
    const out = join(site.config.dataDir, 'jobs', 'd1');
    expect(existsSync(join(out, 'map.txt'))).toBe(true);
    // The job's folder grows past the quota (files added to it count as its own).
    writeFileSync(join(out, 'more.bin'), Buffer.alloc(40_000));
    expect(errorOf((await submit(FORM('d2'))).body).details[0]).toMatch(/^exportQuotaBytes: the outputs of the jobs use \d+ bytes/);

    // Not by GET; not by another user.
    expect(errorOf((await get(`${TASK}/jobs/${j1}/delete`)).body).code).toBe(405);
    const other = await site.token('other');
    expect(errorOf((await call(`${TASK}/jobs/${j1}/delete`, { f: 'json', token: other })).body).code).toBe(400);
    expect(existsSync(out)).toBe(true);

    const del = await call(`${TASK}/jobs/${j1}/delete`, { f: 'json', token: admin });
    expect(del.body).toEqual({ jobId: j1, jobStatus: 'geoJobDeleted' });
    expect(existsSync(out)).toBe(false);
    const view = (await get(`${TASK}/jobs/${j1}`)).body;
    expect(view['jobStatus']).toBe('geoJobDeleted');
    expect(view).not.toHaveProperty('results');
    expect((await site.store.getJob(j1))?.status).toBe('geoJobDeleted');
    // Deleting again answers the same.
    expect((await call(`${TASK}/jobs/${j1}/delete`, { f: 'json', token: admin })).body).toEqual({ jobId: j1, jobStatus: 'geoJobDeleted' });
    // Room again.
    const j2 = (await submit(FORM('d2'))).body['jobId'] as string;
    expect((await finished(j2))['jobStatus']).toBe('geoJobSucceeded');
    await call(`${TASK}/jobs/${j2}/delete`, { f: 'json', token: admin });

    // A folder named by absolute path stays (it may hold other files), and keeps counting.
    const abs = join(root, 'mine');
    const j3 = (await submit(FORM(abs))).body['jobId'] as string;
    expect((await finished(j3))['jobStatus']).toBe('geoJobSucceeded');
    expect((await call(`${TASK}/jobs/${j3}/delete`, { f: 'json', token: admin })).body['jobStatus']).toBe('geoJobDeleted');
    expect(existsSync(join(abs, 'map.txt'))).toBe(true);
    expect(await jobOutputBytes(site)).toBeGreaterThan(1000);
    rmSync(root, { recursive: true, force: true });
  });

  it('a running job cannot be deleted; a folder another job uses is kept', async () => {
    const c = controllable();
    await start({ run: c.run });
    const j1 = (await submit(FORM('same'))).body['jobId'] as string;
    // The job executes once the runner has started it (a fixed pause raced a loaded machine).
    await vi.waitFor(() => expect(c.started).toHaveLength(1), { timeout: 10_000 });
    expect(errorOf((await call(`${TASK}/jobs/${j1}/delete`, { f: 'json', token: admin })).body).details).toEqual([
      `Job '${j1}' cannot be deleted: its status is geoJobExecuting; cancel it first.`,
    ]);
    const out = join(site.config.dataDir, 'jobs', 'same');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'chip.tif'), 'x');
    c.started[0]!.release();
    await finished(j1);
    const j2 = (await submit(FORM('same'))).body['jobId'] as string;
    await vi.waitFor(() => expect(c.started).toHaveLength(2), { timeout: 10_000 });
    await call(`${TASK}/jobs/${j1}/delete`, { f: 'json', token: admin });
    expect(existsSync(join(out, 'chip.tif'))).toBe(true);
    c.started[1]!.release();
    await finished(j2);
    await call(`${TASK}/jobs/${j2}/delete`, { f: 'json', token: admin });
    expect(existsSync(out)).toBe(false);
  });
});

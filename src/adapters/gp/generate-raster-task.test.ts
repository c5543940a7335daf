import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { renderTiles } from '../../graph/render.js';
import { openerScope } from '../../io/source.js';
import { runCli } from '../../../test/helpers.js';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import {
  GENERATE_TASK_KEY,
  GENERATE_TILE,
  generateOutcome,
  parseGenerateInputs,
  writeGenerated,
  type GenerateParams,
} from './generate-raster-task.js';
import type { JobTask } from './jobs.js';
import { createGpService, GP_ROOT, type GpService, type GpServiceOptions } from './training-data-task.js';

const DATA = resolve(import.meta.dirname, '../../../golden/data');
const DEM = join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif');
const dir = mkdtempSync(join(tmpdir(), 'rf-gen-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HILLSHADE = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } };
const TASK = `${GP_ROOT}/GenerateRaster`;

let site: TestSite;
let gp: GpService;
let admin: string;
const services: GpService[] = [];

async function start(options: GpServiceOptions = {}): Promise<void> {
  site = await testSite({ inputRoots: [DATA] });
  gp = createGpService(site, options);
  services.push(gp);
  await site.addUser('root', 'administrator');
  await site.addUser('gpuser', 'user', ['geoprocessing']);
  admin = await site.token('root');
}
afterEach(async () => {
  while (services.length > 0) await services.pop()!.close();
});

async function call(path: string, form?: Record<string, string>) {
  const res = await gp.routes()[0]!.handler(siteRequest(path, form ? { form } : {}));
  return { res, body: await jsonOf<Record<string, unknown>>(res) };
}
const get = (path: string, token = admin) => call(`${path}${path.includes('?') ? '&' : '?'}f=json&token=${token}`);
const submit = (form: Record<string, string>, token = admin) => call(`${TASK}/submitJob`, { f: 'json', ...form, token });
const details = (body: Record<string, unknown>): string[] => (body['error'] as { details: string[] }).details;

/** `rasterflow render` of the same rule: the reference every job's file is compared with. */
function cliRender(rule: unknown, out: string, input = DEM): Buffer {
  const r = runCli(['render', '--rule', JSON.stringify(rule), '--input', input, '--output', out]);
  expect(r.code, r.stderr).toBe(0);
  return readFileSync(out);
}

async function poll(jobId: string): Promise<Record<string, unknown>> {
  let job: Record<string, unknown> = {};
  for (let i = 0; i < 2000; i++) {
    job = (await get(`${TASK}/jobs/${jobId}`)).body;
    if (['geoJobSucceeded', 'geoJobFailed', 'geoJobCancelled'].includes(job['jobStatus'] as string)) return job;
    await new Promise((r) => setTimeout(r, 5));
  }
  return job;
}

describe('GenerateRaster over the GP REST front, in the server', () => {
  it('the task is listed and described; submit, poll, results: the file is `rasterflow render` of the same rule, byte for byte', async () => {
    await start();
    const service = (await get(GP_ROOT)).body;
    expect(service['tasks']).toEqual(['ExportTrainingDataforDeepLearning', 'GenerateRaster']);
    const info = (await get(TASK)).body;
    expect((info['parameters'] as { name: string }[]).map((p) => p.name)).toEqual([
      'rasterFunction',
      'functionArguments',
      'outputName',
      'outputRasterProperties',
      'context',
      'outputRaster',
    ]);

    const { body } = await submit({
      rasterFunction: JSON.stringify(HILLSHADE),
      functionArguments: JSON.stringify({ Raster: { url: DEM } }),
      outputName: JSON.stringify({ serviceProperties: { name: 'shaded' } }),
    });
    expect(body['jobStatus']).toBe('geoJobSubmitted');
    const jobId = body['jobId'] as string;
    const job = await poll(jobId);
    expect(job['jobStatus'], JSON.stringify(job)).toBe('geoJobSucceeded');
    expect(job['results']).toEqual({ outputRaster: { paramUrl: 'results/outputRaster' } });
    const messages = (job['messages'] as { description: string }[]).map((m) => m.description);
    const file = join(site.config.dataDir, 'jobs', jobId, 'shaded.tif');
    expect(messages, JSON.stringify(messages)).toContain(`Generated ${file} (383x407, 1 band(s) U8, ${readFileSync(file).length} bytes)`);
    const result = (await get(`${TASK}/jobs/${jobId}/results/outputRaster`)).body;
    expect(result).toEqual({ paramName: 'outputRaster', dataType: 'GPString', value: { url: file, uri: file } });
    expect(readFileSync(file).equals(cliRender(HILLSHADE, join(dir, 'cli-shaded.tif')))).toBe(true);
    // The job is seen under its own task only.
    const other = (await get(`${GP_ROOT}/ExportTrainingDataforDeepLearning/jobs/${jobId}`)).body;
    expect(details(other)).toEqual([`Job '${jobId}' does not exist or is not accessible.`]);
    // Deleting the job removes its folder.
    const deleted = (await call(`${TASK}/jobs/${jobId}/delete`, { f: 'json', token: admin })).body;
    expect(deleted['jobStatus']).toBe('geoJobDeleted');
    expect(existsSync(join(site.config.dataDir, 'jobs', jobId))).toBe(false);
  }, 60_000);

  it("functionArguments set the function's arguments; a keyword rasterFunction; a plain outputName with .tif", async () => {
    await start();
    const { body } = await submit({
      rasterFunction: JSON.stringify({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, ZFactor: 1 } }),
      functionArguments: JSON.stringify({ Raster: DEM, Azimuth: 90, Altitude: '30' }),
      outputName: 'east.tif',
    });
    const job = await poll(body['jobId'] as string);
    expect(job['jobStatus'], JSON.stringify(job)).toBe('geoJobSucceeded');
    const file = join(site.config.dataDir, 'jobs', body['jobId'] as string, 'east.tif');
    const rule = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 90, Altitude: 30, ZFactor: 1 } };
    expect(readFileSync(file).equals(cliRender(rule, join(dir, 'cli-east.tif')))).toBe(true);

    const keyword = await submit({ rasterFunction: 'Slope', functionArguments: JSON.stringify({ Raster: DEM }), outputName: 'slope' });
    const kjob = await poll(keyword.body['jobId'] as string);
    expect(kjob['jobStatus'], JSON.stringify(kjob)).toBe('geoJobSucceeded');
    const kfile = join(site.config.dataDir, 'jobs', keyword.body['jobId'] as string, 'slope.tif');
    expect(readFileSync(kfile).equals(cliRender({ rasterFunction: 'Slope' }, join(dir, 'cli-slope.tif')))).toBe(true);
  }, 60_000);

  it('context.extent writes that part of the output, as `rasterflow render --window` (edges rounded to the nearest cell)', async () => {
    await start();
    const files = openerScope();
    const g = (await files.open(DEM, { id: DEM })).info;
    await files.closeAll();
    const { cellSize: cs, extent: e } = g;
    const extent = {
      xmin: e.xmin + 10.4 * cs.x,
      xmax: e.xmin + 300.2 * cs.x,
      ymax: e.ymax - 20.3 * cs.y,
      ymin: e.ymax - 370.6 * cs.y,
      spatialReference: { wkid: g.spatialReference!.wkid },
    };
    const { body } = await submit({
      rasterFunction: JSON.stringify(HILLSHADE),
      functionArguments: JSON.stringify({ Raster: DEM }),
      outputName: 'part',
      context: JSON.stringify({ extent, parallelProcessingFactor: '80%' }),
    });
    const job = await poll(body['jobId'] as string);
    expect(job['jobStatus'], JSON.stringify(job)).toBe('geoJobSucceeded');
    const file = join(site.config.dataDir, 'jobs', body['jobId'] as string, 'part.tif');
    const r = runCli([
      'render',
      '--rule',
      JSON.stringify(HILLSHADE),
      '--input',
      DEM,
      '--window',
      '10,20,290,351',
      '--output',
      join(dir, 'cli-part.tif'),
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(file).equals(readFileSync(join(dir, 'cli-part.tif')))).toBe(true);
    // Another spatial reference, or an extent off the raster: refused at submit, naming it.
    const other = await submit({
      rasterFunction: JSON.stringify(HILLSHADE),
      functionArguments: JSON.stringify({ Raster: DEM }),
      outputName: 'x',
      context: JSON.stringify({ extent: { ...extent, spatialReference: { wkid: 4326 } } }),
    });
    expect(details(other.body)[0]).toContain('context.extent.spatialReference: the extent is in wkid 4326');
    const off = await submit({
      rasterFunction: JSON.stringify(HILLSHADE),
      functionArguments: JSON.stringify({ Raster: DEM }),
      outputName: 'x',
      context: JSON.stringify({ extent: { xmin: e.xmax + 10, xmax: e.xmax + 1000, ymin: e.ymin, ymax: e.ymax } }),
    });
    expect(details(off.body)[0]).toContain('context.extent: the extent does not cover a whole cell of the output');
  }, 60_000);

  it('bad parameters: every problem in one answer, each naming its parameter; no job is made', async () => {
    await start();
    const cases: [Record<string, string>, string[]][] = [
      [{ outputName: 'x' }, ['rasterFunction: rasterFunction must be specified']],
      [
        { rasterFunction: JSON.stringify(HILLSHADE), functionArguments: JSON.stringify({ Raster: DEM }) },
        ['outputName: outputName must be specified'],
      ],
      [
        { rasterFunction: JSON.stringify(HILLSHADE), functionArguments: JSON.stringify({ Raster: DEM }), outputName: '../up' },
        ['outputName: outputName "../up" must be a name'],
      ],
      [
        {
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: { itemId: 'abc' } }),
          outputName: JSON.stringify({ itemId: 'def' }),
          context: JSON.stringify({ extent: { xmin: 0 }, cellSize: 30, parallelProcessingFactor: '50%' }),
          outputRasterProperties: JSON.stringify({ SensorName: 'x' }),
        },
        [
          'functionArguments.Raster: portal items (itemId) are not rasters',
          'outputName: this server writes the output as a file',
          'outputRasterProperties: output raster properties',
          'context.extent: the extent must be {"xmin", "ymin", "xmax", "ymax"} numbers',
          'context.cellSize: the environment setting cellSize is not supported',
        ],
      ],
      [
        {
          rasterFunction: JSON.stringify({ rasterFunction: 'Hilshade' }),
          functionArguments: JSON.stringify({ Raster: DEM }),
          outputName: 'x',
        },
        ['rasterFunction: '],
      ],
      [
        { rasterFunction: JSON.stringify(HILLSHADE), functionArguments: JSON.stringify({ Raster: DEM, Azimut: 3 }), outputName: 'x' },
        ['functionArguments.Azimut: Hillshade has no argument Azimut'],
      ],
      [
        {
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: DEM, Azimuth: 'north' }),
          outputName: 'x',
        },
        ['functionArguments.Azimuth: '],
      ],
      [
        { rasterFunction: JSON.stringify(HILLSHADE), outputName: 'x' },
        ['rasterFunction.rasterFunctionArguments.DEM: no raster is bound to $$'],
      ],
      [
        {
          rasterFunction: JSON.stringify(HILLSHADE),
          functionArguments: JSON.stringify({ Raster: join(dir, 'elsewhere.tif') }),
          outputName: 'x',
        },
        ['functionArguments.Raster: '],
      ],
      [
        {
          rasterFunction: JSON.stringify({ ...HILLSHADE, rasterFunctionArguments: { Raster: { url: '/etc/passwd' } } }),
          outputName: 'x',
        },
        ['rasterFunction'],
      ],
    ];
    for (const [form, want] of cases) {
      const { res, body } = await submit(form);
      expect(res.status, JSON.stringify(body)).toBe(200);
      const got = details(body);
      expect(got.length, JSON.stringify(got)).toBe(want.length);
      want.forEach((w, i) => expect(got[i], JSON.stringify(got)).toContain(w));
    }
    expect(await site.store.listJobs()).toEqual([]);
    // The folders of GenerateRaster jobs are not training-data outputs.
    const reserved = await call(`${GP_ROOT}/ExportTrainingDataforDeepLearning/submitJob`, {
      f: 'json',
      token: admin,
      inputRaster: DEM,
      inputClassData: DEM,
      outputLocation: `j${'0'.repeat(32)}`,
    });
    expect(details(reserved.body).join(' ')).toContain('is reserved for the outputs of jobs');
  }, 60_000);

  it('cancel while executing: geoJobCancelling then geoJobCancelled, no output and no job folder left', async () => {
    // The real writer, its tiles slowed so the cancel lands mid-render.
    let tilesDone = 0;
    const slow: JobTask = {
      name: 'GenerateRaster',
      run: async (params, options) =>
        generateOutcome(
          await writeGenerated(params as unknown as GenerateParams, options.jobId, {
            ...options,
            tiles: async function* (root, recipe, signal) {
              for await (const t of renderTiles(root, {
                tileSize: GENERATE_TILE,
                recipe,
                transient: true,
                ...(signal ? { signal } : {}),
              })) {
                await new Promise((r) => setTimeout(r, 100));
                tilesDone++;
                yield t;
              }
            },
          }),
        ),
    };
    await start({ tasks: { [GENERATE_TASK_KEY]: slow } });
    const { body } = await submit({
      rasterFunction: JSON.stringify(HILLSHADE),
      functionArguments: JSON.stringify({ Raster: DEM }),
      outputName: 'c',
    });
    const jobId = body['jobId'] as string;
    while (tilesDone === 0) await new Promise((r) => setTimeout(r, 10));
    const cancelling = (await call(`${TASK}/jobs/${jobId}/cancel`, { f: 'json', token: admin })).body;
    expect(cancelling['jobStatus']).toBe('geoJobCancelling');
    const job = await poll(jobId);
    expect(job['jobStatus']).toBe('geoJobCancelled');
    expect(tilesDone).toBeLessThan(4);
    expect(existsSync(join(site.config.dataDir, 'jobs', jobId))).toBe(false);
    expect(existsSync(join(site.config.dataDir, 'jobs')) ? readdirSync(join(site.config.dataDir, 'jobs')) : []).toEqual([]);
  }, 60_000);
});

describe('parseGenerateInputs', () => {
  it('binds rasters by argument name and as $$, lists of rasters as numbered names', () => {
    const { params, issues } = parseGenerateInputs(
      {
        rasterFunction: { rasterFunction: 'CompositeBand' },
        functionArguments: { Rasters: [DEM, { uri: DEM }] },
        outputName: 'c',
      },
      '/jobs',
    );
    expect(issues).toEqual([]);
    expect(params?.sources).toEqual({ Rasters_1: DEM, Rasters_2: DEM, $$: DEM });
    expect(params?.rule).toEqual({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Rasters: ['Rasters_1', 'Rasters_2'] } });
  });
});

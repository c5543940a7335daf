/**
 * The training-data export as a geoprocessing service (seed §6; training-data-export.md §11) at
 * `{services_url}/System/RasterAnalysisTools/GPServer`:
 *
 * - `GPServer` — service info; `GPServer/<task>` — task info (parameters)
 * - `<task>/submitJob` (GET query or POST form) -> `{jobId, jobStatus}`
 * - `<task>/jobs/<jobId>` (`returnMessages`) — the job, read from the store
 * - `<task>/jobs/<jobId>/results/outLocation`, `<task>/jobs/<jobId>/inputs/<param>` (after success)
 * - `<task>/jobs/<jobId>/cancel` (GET or POST)
 * - `<task>/jobs/<jobId>/delete` (POST) — an ended job and its output folder in the jobs area
 *
 * The same service hosts GenerateRaster (generate-raster-task.ts), under `GPServer/GenerateRaster/...`
 * with the same operations; a job is seen under its own task only.
 *
 * Callers: a token for the server, the portal or the admin API; the administrator or publisher
 * role, or a custom role with the geoprocessing privilege. A job is seen and cancelled by its owner
 * or an administrator.
 */
import { lstat, readdir, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { EngineError, withPath, type Issue } from '../../core/errors.js';
import { inputRefusals, isInside, realPathOf, type InputPolicy } from '../../chipper/inputs.js';
import { CHIP_FORMATS, METADATA_FORMATS, parseChipParams } from '../../chipper/params.js';
import { ADMIN_AUDIENCE, authenticate, forbidden, isAdministrator, PORTAL_AUDIENCE, serverAudience, type Caller } from '../auth.js';
import {
  MessageError,
  readParams,
  requireHttps,
  requirePost,
  respond,
  withRestErrors,
  type Handler,
  type Params,
  type Route,
} from '../rest.js';
import { fromTrustedProxy, limitsOf, originOf, type JobRecord, type SiteDeps } from '../site.js';
import { createJobRunner, isTerminal, TASK_KEY, TASK_NAME, type JobRunner, type JobRunnerOptions } from './jobs.js';
import {
  checkGenerate,
  GENERATE_OUTPUT,
  GENERATE_PARAMETERS,
  GENERATE_TASK_KEY,
  GENERATE_TASK_NAME,
  generateRasterTask,
  generateTaskInfo,
  parseGenerateInputs,
} from './generate-raster-task.js';

export { recoverJobs, TASK_NAME, SERVICE_KEY } from './jobs.js';

export const GP_ROOT = '/server/rest/services/System/RasterAnalysisTools/GPServer';

/**
 * Decision (seed §6 open question: the POST example ends with a different task name than the GET
 * example): the service answers the task under its documented name and under the variants clients
 * are seen to use — the desktop tool's spelling with a capital F and the short `ExportTrainingData`
 * — all routed to the same task. Lookup is exact for these names; anything else is not found.
 */
export const TASK_ALIASES: readonly string[] = [TASK_NAME, 'ExportTrainingDataForDeepLearning', 'ExportTrainingData'];

/** Decision: the vendor's `esri` enumeration prefix becomes `geo` (seed Conventions). */
const ASYNC = 'geoExecutionTypeAsynchronous';

type GpDeps = Pick<SiteDeps, 'store' | 'clock' | 'config' | 'keys' | 'emit' | 'log'>;

interface ParamInfo {
  readonly name: string;
  readonly dataType: string;
  readonly displayName: string;
  readonly required?: boolean;
  readonly defaultValue?: unknown;
  readonly choiceList?: readonly string[];
}

/** The task's parameters (seed §6 table) with the chipper's defaults. */
export const TASK_PARAMETERS: readonly ParamInfo[] = [
  { name: 'inputRaster', dataType: 'GPString', displayName: 'Input Raster', required: true },
  { name: 'outputLocation', dataType: 'GPString', displayName: 'Output Location', required: true },
  { name: 'inputClassData', dataType: 'GPString', displayName: 'Input Class Data', required: true },
  {
    name: 'chipFormat',
    dataType: 'GPString',
    displayName: 'Chip Format',
    defaultValue: 'TIFF',
    choiceList: [...CHIP_FORMATS],
  },
  { name: 'tileSize', dataType: 'GPString', displayName: 'Tile Size', defaultValue: { x: 256, y: 256 } },
  { name: 'strideSize', dataType: 'GPString', displayName: 'Stride Size', defaultValue: { x: 256, y: 256 } },
  {
    name: 'metadataFormat',
    dataType: 'GPString',
    displayName: 'Metadata Format',
    defaultValue: 'PASCAL_VOC_rectangles',
    choiceList: [...METADATA_FORMATS],
  },
  { name: 'classValueField', dataType: 'GPString', displayName: 'Class Value Field' },
  { name: 'bufferRadius', dataType: 'GPDouble', displayName: 'Buffer Radius' },
  { name: 'inputMaskPolygons', dataType: 'GPString', displayName: 'Input Mask Polygons' },
  { name: 'rotationAngle', dataType: 'GPDouble', displayName: 'Rotation Angle', defaultValue: 0 },
  {
    name: 'referenceSystem',
    dataType: 'GPString',
    displayName: 'Reference System',
    defaultValue: 'MAP_SPACE',
    choiceList: ['MAP_SPACE', 'PIXEL_SPACE'],
  },
  { name: 'processAllRasterItems', dataType: 'GPBoolean', displayName: 'Process All Raster Items', defaultValue: false },
  { name: 'blackenAroundFeature', dataType: 'GPBoolean', displayName: 'Blacken Around Feature', defaultValue: false },
  { name: 'fixChipSize', dataType: 'GPBoolean', displayName: 'Fix Chip Size', defaultValue: true },
  { name: 'additionalInputRaster', dataType: 'GPString', displayName: 'Additional Input Raster' },
  { name: 'inputInstanceData', dataType: 'GPString', displayName: 'Input Instance Data' },
  { name: 'instanceClassValueField', dataType: 'GPString', displayName: 'Instance Class Value Field' },
  { name: 'minPolygonOverlapRatio', dataType: 'GPDouble', displayName: 'Minimum Polygon Overlap Ratio', defaultValue: 0 },
  { name: 'context', dataType: 'GPString', displayName: 'Context', defaultValue: { exportAllTiles: false, startIndex: 0 } },
];

const OUT_PARAM = { name: 'outLocation', dataType: 'GPString', displayName: 'Output Location' } as const;

function serviceInfo(): Record<string, unknown> {
  return {
    currentVersion: 11.1,
    serviceDescription: 'Raster analysis tools: training data for deep learning, and rasters generated from raster functions.',
    tasks: [TASK_NAME, GENERATE_TASK_NAME],
    executionType: ASYNC,
    resultMapServerName: '',
    maximumRecords: 1000,
  };
}

function taskInfo(): Record<string, unknown> {
  const param = (p: ParamInfo, direction: 'Input' | 'Output', required: boolean) => ({
    name: p.name,
    dataType: p.dataType,
    displayName: p.displayName,
    description: '',
    direction: `geoGPParameterDirection${direction}`,
    defaultValue: p.defaultValue ?? null,
    parameterType: required ? 'geoGPParameterTypeRequired' : 'geoGPParameterTypeOptional',
    category: '',
    ...(p.choiceList ? { choiceList: p.choiceList } : {}),
  });
  return {
    name: TASK_NAME,
    displayName: 'Export Training Data For Deep Learning',
    description: 'Generates training image chips, labels and metadata from imagery and labeled vector or classified raster data.',
    category: '',
    helpUrl: '',
    executionType: ASYNC,
    parameters: [...TASK_PARAMETERS.map((p) => param(p, 'Input', p.required === true)), param(OUT_PARAM, 'Output', true)],
  };
}

// ---------------------------------------------------------------------------------------------
// Request steps

const OPERATION_FAILED = 'Unable to complete operation.';

async function caller(deps: GpDeps, req: Request, params: Params): Promise<Caller> {
  const origin = originOf(req, deps.config);
  const c = await authenticate(deps, req, {
    audiences: [serverAudience(`${origin}/server`), PORTAL_AUDIENCE, ADMIN_AUDIENCE],
    shape: 'sharing',
    params,
  });
  if (c.role !== 'administrator' && c.role !== 'publisher' && !c.privileges.has('geoprocessing')) {
    throw forbidden(`${c.username} may not run geoprocessing tasks`);
  }
  return c;
}

/** The job, if the caller may see it. Decision: another user's job answers like an unknown one (no existence leak). */
async function visibleJob(deps: GpDeps, c: Caller, jobId: string): Promise<JobRecord> {
  const job = await deps.store.getJob(jobId);
  if (job === undefined || (job.owner !== c.username && !isAdministrator(c))) {
    throw new MessageError(OPERATION_FAILED, [`Job '${jobId}' does not exist or is not accessible.`]);
  }
  return job;
}

const FOLDER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/;
/** A job id (jobs.ts), the name of a GenerateRaster job's folder in the jobs area. */
const JOB_FOLDER = /^j[0-9a-f]{32}$/;

/** The data folder's own files: the database and its journals, the TLS key, the site backups. */
const siteOwnPaths = (dataDir: string): string[] => [
  ...['', '-wal', '-shm', '-journal'].map((x) => join(dataDir, `site.db${x}`)),
  join(dataDir, 'tls'),
  join(dataDir, 'site-exports'),
];

/**
 * Where a job writes: a plain folder name goes to `<dataDir>/jobs/<name>`; an absolute path is
 * allowed inside the data folder or one of the configured writable roots; anything else is refused.
 */
export function resolveOutputLocation(config: GpDeps['config'], value: unknown): { path?: string; issue?: Issue } {
  const issue = (message: string): { issue: Issue } => ({ issue: { code: 'INVALID_ARGUMENT', path: 'outputLocation', message } });
  if (value === undefined || value === null || value === '') return issue('outputLocation must be specified');
  if (typeof value !== 'string') return issue('outputLocation must be a folder name or an absolute path');
  const v = value.trim();
  // The folders of GenerateRaster jobs (`<dataDir>/jobs/<jobId>`) are theirs alone.
  const jobsDir = join(config.dataDir, 'jobs');
  const reserved = (p: string): boolean => isInside(jobsDir, p) && JOB_FOLDER.test(relative(jobsDir, p).split(sep)[0] ?? '');
  if (FOLDER_NAME.test(v)) {
    if (JOB_FOLDER.test(v)) return issue(`outputLocation ${JSON.stringify(v)} is reserved for the outputs of jobs; choose another name`);
    return { path: join(jobsDir, v) };
  }
  if (isAbsolute(v)) {
    const p = resolve(v);
    if (reserved(p)) return issue(`outputLocation ${JSON.stringify(v)} is the folder of another job's output; choose another folder`);
    if (realPathOf(p) === realPathOf(config.dataDir) || siteOwnPaths(config.dataDir).some((own) => isInside(own, p)))
      return issue(`outputLocation ${JSON.stringify(v)} is one of the server's own folders; choose a folder below it`);
    if ([config.dataDir, ...config.writableRoots].some((root) => isInside(root, p))) return { path: p };
    return issue(`outputLocation ${JSON.stringify(v)} is outside the folders this server may write to`);
  }
  return issue(`outputLocation ${JSON.stringify(v)} must be a folder name (letters, digits, '_', '-', '.') or an absolute path`);
}

const SKIP = new Set(['f', 'token']);

/** The submitted task parameters: JSON text parsed, everything else as sent. */
function taskInputs(params: Params): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const byLower = new Map<string, string>();
  for (const e of params.entries) {
    if (SKIP.has(e.name.toLowerCase())) continue;
    // The body wins over the query, and a later occurrence over an earlier one: keep one spelling per name.
    const prev = byLower.get(e.name.toLowerCase());
    if (prev !== undefined) delete out[prev];
    byLower.set(e.name.toLowerCase(), e.name);
    const v = params.get(e.name)!;
    let value: unknown = v;
    if (/^\s*[[{]/.test(v)) {
      try {
        value = JSON.parse(v);
      } catch {
        value = v;
      }
    }
    out[e.name] = value;
  }
  return out;
}

/**
 * Where the task may read inputs from: the folders of `inputRoots`, the data folder, the writable
 * roots and the folders of the registered image services' rasters; URLs of `inputOrigins` and the
 * image services' raster URLs.
 *
 * Decision: with no `inputRoots` the task reads only what the site already holds or serves (the
 * data folder but its database, TLS key and site backups; `writableRoots`; the image services' folders): a fresh server reads nothing else
 * until an administrator says so. URLs likewise need `inputOrigins`. The task takes rasters (paths,
 * GeoTIFF/COG URLs, rules), not image service REST URLs, so no service URL is allowed as such.
 */
export async function inputPolicyOf(deps: Pick<GpDeps, 'store' | 'config'>): Promise<InputPolicy> {
  const roots = [...(deps.config.inputRoots ?? []), deps.config.dataDir, ...deps.config.writableRoots];
  const urls: string[] = [];
  for (const s of await deps.store.listServices()) {
    const path = s.type === 'ImageServer' ? s.properties['path'] : undefined;
    if (typeof path !== 'string' || path.trim() === '') continue;
    if (/^https?:/i.test(path)) urls.push(path);
    else if (!/^[a-z][a-z0-9+.-]+:\/\//i.test(path)) roots.push(dirname(resolve(path)));
  }
  // The data folder's own files are never inputs: the database (its hashes and keys), the TLS key,
  // the site backups.
  return { roots, origins: deps.config.inputOrigins ?? [], urls, denied: siteOwnPaths(deps.config.dataDir) };
}

/** Bytes of the files below `root` (links not followed; an absent folder is 0). */
async function folderBytes(root: string): Promise<number> {
  let total = 0;
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else
        total += await lstat(p).then(
          (st) => st.size,
          () => 0,
        );
    }
  };
  await walk(root);
  return total;
}

/**
 * What the jobs' outputs use on disk: `<dataDir>/jobs` and the output folder of every recorded job
 * elsewhere (an absolute outputLocation in the data folder or a writable root), each folder once.
 * What is on disk counts, whatever the job's status: a deleted job's folder in the jobs area is
 * gone; one elsewhere counts until its files are removed.
 */
export async function jobOutputBytes(deps: Pick<GpDeps, 'store' | 'config'>): Promise<number> {
  const jobsDir = join(deps.config.dataDir, 'jobs');
  const folders: string[] = [jobsDir];
  for (const job of await deps.store.listJobs()) {
    const key = Object.keys(job.inputs).find((k) => k.toLowerCase() === 'outputlocation');
    const out = key === undefined ? undefined : resolveOutputLocation(deps.config, job.inputs[key]).path;
    if (out !== undefined) folders.push(out);
  }
  // A folder inside another one counted is not counted again.
  const distinct = [...new Set(folders.map((f) => resolve(f)))].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const f of distinct) if (!kept.some((k) => isInside(k, f))) kept.push(f);
  let total = 0;
  for (const f of kept) total += await folderBytes(f);
  return total;
}

/** Check the parameters as the chipper will; every problem in one error body. */
async function chipParams(deps: GpDeps, inputs: Record<string, unknown>, policy: InputPolicy): Promise<Record<string, unknown>> {
  const outKey = Object.keys(inputs).find((k) => k.toLowerCase() === 'outputlocation');
  const out = resolveOutputLocation(deps.config, outKey === undefined ? undefined : inputs[outKey]);
  const params: Record<string, unknown> = { ...inputs };
  if (outKey !== undefined) delete params[outKey];
  params['outputLocation'] = out.path ?? '';
  const issues: Issue[] = out.issue ? [out.issue] : [];
  try {
    issues.push(...(await inputRefusals(parseChipParams(params), policy)));
  } catch (e) {
    if (!(e instanceof EngineError)) throw e;
    for (const i of e.issues) if (!(out.issue && i.path === 'outputLocation')) issues.push(i);
  }
  if (issues.length > 0) throw new MessageError(OPERATION_FAILED, issues.map(withPath));
  return params;
}

/**
 * `jobs/<jobId>/delete` (POST): an ended job becomes geoJobDeleted and its output folder in the
 * jobs area (`<dataDir>/jobs/<name>`) is removed, unless another job not deleted writes or wrote
 * there; a job still waiting or executing must be cancelled first.
 *
 * Decision: an output folder the client named by absolute path (in the data folder or a writable
 * root) is left in place: it may hold files the job did not write (an earlier export appended to,
 * or the root itself). It keeps counting against exportQuotaBytes until its files are removed.
 */
async function deleteJob(deps: GpDeps, job: JobRecord): Promise<JobRecord> {
  if (job.status === 'geoJobDeleted') return job;
  if (!isTerminal(job.status)) {
    throw new MessageError(OPERATION_FAILED, [`Job '${job.id}' cannot be deleted: its status is ${job.status}; cancel it first.`]);
  }
  const jobsDir = join(deps.config.dataDir, 'jobs');
  const outOf = (j: JobRecord): string | undefined => {
    if (j.task === GENERATE_TASK_KEY) return join(jobsDir, j.id);
    const key = Object.keys(j.inputs).find((k) => k.toLowerCase() === 'outputlocation');
    return key === undefined ? undefined : resolveOutputLocation(deps.config, j.inputs[key]).path;
  };
  const out = outOf(job);
  if (out !== undefined && resolve(out) !== resolve(jobsDir) && isInside(jobsDir, out)) {
    const shared = (await deps.store.listJobs()).some((j) => {
      if (j.id === job.id || j.status === 'geoJobDeleted') return false;
      const other = outOf(j);
      return other !== undefined && (isInside(out, other) || isInside(other, out));
    });
    if (!shared) await rm(out, { recursive: true, force: true });
  }
  const { results: _results, progress: _progress, ...rest } = job;
  const deleted: JobRecord = {
    ...rest,
    status: 'geoJobDeleted',
    messages: [...job.messages, { type: 'geoJobMessageTypeInformative', description: 'Deleted.' }],
    updated: deps.clock.now(),
  };
  await deps.store.putJob(deleted);
  return deleted;
}

/** The output parameter of a job's task. */
const outParamOf = (job: JobRecord): { readonly name: string; readonly dataType: string } =>
  job.task === GENERATE_TASK_KEY ? GENERATE_OUTPUT : OUT_PARAM;

function jobView(job: JobRecord, returnMessages: boolean): Record<string, unknown> {
  const view: Record<string, unknown> = { jobId: job.id, jobStatus: job.status };
  if (job.status === 'geoJobExecuting' && job.progress) view['progress'] = job.progress;
  if (job.status === 'geoJobSucceeded') {
    const out = outParamOf(job).name;
    view['results'] = { [out]: { paramUrl: `results/${out}` } };
    view['inputs'] = Object.fromEntries(Object.keys(job.inputs).map((k) => [k, { paramUrl: `inputs/${k}` }]));
  }
  if (returnMessages) view['messages'] = job.messages;
  return view;
}

function requireSucceeded(job: JobRecord, what: string): void {
  if (job.status !== 'geoJobSucceeded') {
    throw new MessageError(OPERATION_FAILED, [`Job '${job.id}' has no ${what}: its status is ${job.status}.`]);
  }
}

// ---------------------------------------------------------------------------------------------
// The service

export interface GpService {
  routes(): Route[];
  /** Cancels the jobs still waiting or running (they end geoJobCancelled, recorded) — for SIGTERM. */
  close(): Promise<void>;
  /** The job runner (tests wait on it). */
  readonly runner: JobRunner;
}

export type GpServiceOptions = JobRunnerOptions;

export function createGpService(deps: GpDeps, options: GpServiceOptions = {}): GpService {
  const limits = limitsOf(deps.config);
  const ruleLimits = { maxRuleDepth: limits.maxRuleDepth, maxRuleNodes: limits.maxRuleNodes };
  const runner = createJobRunner(deps, {
    maxJobs: limits.maxJobs,
    maxJobsPerUser: limits.maxJobsPerUser,
    exportQuotaBytes: limits.exportQuotaBytes,
    outputBytes: () => jobOutputBytes(deps),
    inputPolicy: () => inputPolicyOf(deps),
    ...options,
    // GenerateRaster runs here unless the options give it (on the job queue).
    tasks: { [GENERATE_TASK_KEY]: generateRasterTask({ limits: ruleLimits }), ...options.tasks },
  });

  const handle = async (req: Request): Promise<Response> => {
    requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
    const params = await readParams(req);
    const c = await caller(deps, req, params);
    const f = params.get('f');
    const path = new URL(req.url).pathname.slice(GP_ROOT.length);
    const parts = path
      .split('/')
      .filter((s) => s !== '')
      .map(decodeURIComponent);
    if (parts.length === 0) return respond(f, serviceInfo());
    const [task, op, jobId, sub, name, ...more] = parts;
    const generate = task === GENERATE_TASK_NAME;
    if (!generate && !TASK_ALIASES.includes(task!))
      throw new EngineError('NOT_FOUND', `no task ${task}`, { details: [`Task '${task}' does not exist.`] });
    const taskKey = generate ? GENERATE_TASK_KEY : TASK_KEY;
    if (op === undefined) return respond(f, generate ? generateTaskInfo(ASYNC) : taskInfo());

    if (op === 'submitJob' && jobId === undefined && generate) {
      const inputs = taskInputs(params);
      const parsed = parseGenerateInputs(inputs, join(deps.config.dataDir, 'jobs'));
      if (parsed.params === undefined) throw new MessageError(OPERATION_FAILED, parsed.issues.map(withPath));
      try {
        await checkGenerate(parsed.params, await inputPolicyOf(deps), ruleLimits);
      } catch (e) {
        if (!(e instanceof EngineError)) throw e;
        throw new MessageError(OPERATION_FAILED, e.issues.map(withPath));
      }
      const job = await runner.submit(c.username, inputs, { ...parsed.params }, GENERATE_TASK_KEY);
      return respond(f, { jobId: job.id, jobStatus: job.status });
    }
    if (op === 'submitJob' && jobId === undefined) {
      const inputs = taskInputs(params);
      const run = await chipParams(deps, inputs, await inputPolicyOf(deps));
      const job = await runner.submit(c.username, inputs, run);
      return respond(f, { jobId: job.id, jobStatus: job.status });
    }
    if (op !== 'jobs' || jobId === undefined || more.length > 0) throw new EngineError('NOT_FOUND', `no resource ${path}`, { issues: [] });

    const job = await visibleJob(deps, c, jobId);
    // A job is seen under its own task only (a record without a task is a training-data job).
    if ((job.task || TASK_KEY) !== taskKey)
      throw new MessageError(OPERATION_FAILED, [`Job '${jobId}' does not exist or is not accessible.`]);
    if (sub === undefined) return respond(f, jobView(job, params.bool('returnMessages') ?? true));
    if (sub === 'cancel' && name === undefined) {
      const after = await runner.cancel(job.id);
      return respond(f, { jobId: after.id, jobStatus: after.status });
    }
    if (sub === 'delete' && name === undefined) {
      requirePost(req);
      const after = await deleteJob(deps, job);
      return respond(f, { jobId: after.id, jobStatus: after.status });
    }
    if (sub === 'results' && name !== undefined) {
      const out = outParamOf(job);
      if (name !== out.name) throw new MessageError(OPERATION_FAILED, [`The task has no result '${name}'.`]);
      requireSucceeded(job, 'results');
      return respond(f, { paramName: out.name, dataType: out.dataType, value: job.results?.[out.name] });
    }
    if (sub === 'inputs' && name !== undefined) {
      requireSucceeded(job, 'inputs');
      const key = Object.keys(job.inputs).find((k) => k.toLowerCase() === name.toLowerCase());
      if (key === undefined) throw new MessageError(OPERATION_FAILED, [`Job '${job.id}' has no input '${name}'.`]);
      const dataType =
        (generate ? GENERATE_PARAMETERS : TASK_PARAMETERS).find((p) => p.name.toLowerCase() === key.toLowerCase())?.dataType ?? 'GPString';
      return respond(f, { paramName: key, dataType, value: job.inputs[key] });
    }
    throw new EngineError('NOT_FOUND', `no resource ${path}`, { issues: [] });
  };

  const handler: Handler = withRestErrors('sharing', handle);
  return {
    runner,
    routes: () => [
      { method: 'ALL', path: GP_ROOT, handler },
      { method: 'ALL', path: `${GP_ROOT}/*`, handler },
    ],
    close: () => runner.close(),
  };
}

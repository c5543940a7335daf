/**
 * The GenerateRaster task of `System/RasterAnalysisTools/GPServer` (ArcGIS Enterprise's raster
 * analysis task of that name): a rendering rule (`rasterFunction`) over the rasters its variables
 * are bound to (`functionArguments`), written as a GeoTIFF named `outputName` in the job's folder
 * of the data folder, `<dataDir>/jobs/<jobId>/<outputName>.tif`. The file is the one
 * `rasterflow render --rule <rule> --input <name>=<raster> --output <file>.tif` writes, byte for
 * byte: the same graph, 256-pixel tiles, the streaming writer's default creation options.
 *
 * Jobs run in the server (the job runner, jobs.ts) or, with `serve --queue`, as a render job on the
 * job queue (queue/render-job.ts), its bands rendered by any worker.
 */
import { mkdir, rmdir, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { EngineError, toEngineError, type Issue } from '../../core/errors.js';
import { windowInfo, type PixelBlock } from '../../core/pixel-block.js';
import { rect, type Rect } from '../../core/rect.js';
import { PIXEL_TYPE_INFO } from '../../core/pixel-type.js';
import { openRefusal, type InputPolicy } from '../../chipper/inputs.js';
import { registry } from '../../functions/index.js';
import { renderTiles, type Recipe } from '../../graph/render.js';
import type { RasterNode } from '../../graph/types.js';
import { openerScope, type OpenerScope } from '../../io/source.js';
import { parseCreationOptions } from '../../io/tiff-options.js';
import { writeTiffStream } from '../../io/tiff-stream-writer.js';
import { planRule, resolveRule } from '../../rule/build.js';
import { bindSources } from '../../rule/sources.js';
import type { JobTask, TaskOutcome, TaskQueueHook, TaskRunOptions } from './jobs.js';

export const GENERATE_TASK_NAME = 'GenerateRaster';
/** The `task` of its job records. */
export const GENERATE_TASK_KEY = `System/RasterAnalysisTools/${GENERATE_TASK_NAME}`;

interface ParamInfo {
  readonly name: string;
  readonly dataType: string;
  readonly displayName: string;
  readonly required?: boolean;
  readonly defaultValue?: unknown;
}

export const GENERATE_PARAMETERS: readonly ParamInfo[] = [
  { name: 'rasterFunction', dataType: 'GPString', displayName: 'Raster Function', required: true },
  { name: 'functionArguments', dataType: 'GPString', displayName: 'Function Arguments' },
  { name: 'outputName', dataType: 'GPString', displayName: 'Output Name', required: true },
  { name: 'outputRasterProperties', dataType: 'GPString', displayName: 'Output Raster Properties' },
  { name: 'context', dataType: 'GPString', displayName: 'Context' },
];

export const GENERATE_OUTPUT = { name: 'outputRaster', dataType: 'GPString', displayName: 'Output Raster' } as const;

export function generateTaskInfo(executionType: string): Record<string, unknown> {
  const param = (p: ParamInfo, direction: 'Input' | 'Output', required: boolean) => ({
    name: p.name,
    dataType: p.dataType,
    displayName: p.displayName,
    description: '',
    direction: `geoGPParameterDirection${direction}`,
    defaultValue: p.defaultValue ?? null,
    parameterType: required ? 'geoGPParameterTypeRequired' : 'geoGPParameterTypeOptional',
    category: '',
  });
  return {
    name: GENERATE_TASK_NAME,
    displayName: 'Generate Raster',
    description: 'Renders a raster function (a rendering rule) over input rasters to a GeoTIFF in the server data folder.',
    category: '',
    helpUrl: '',
    executionType,
    parameters: [...GENERATE_PARAMETERS.map((p) => param(p, 'Input', p.required === true)), param(GENERATE_OUTPUT, 'Output', true)],
  };
}

/** A GenerateRaster job's checked parameters: plain JSON (the job queue carries them). */
export interface GenerateParams {
  /** The rule, `functionArguments` applied. */
  readonly rule: unknown;
  /** Locations bound to the rule's variables (and `$$`). */
  readonly sources: Readonly<Record<string, string>>;
  /** Where job folders are made (`<dataDir>/jobs`). */
  readonly jobsDir: string;
  /** The output's name, without `.tif`. */
  readonly outputName: string;
  /** The names of the functionArguments applied to the rule (its problems there name them). */
  readonly applied: readonly string[];
  /** `context.extent`: the part of the output written, in map units of the output's spatial reference. */
  readonly extent?: { readonly xmin: number; readonly ymin: number; readonly xmax: number; readonly ymax: number; readonly wkid?: number };
  /** The file to write instead of `<jobsDir>/<jobId>/<outputName>.tif` (library callers; queue/render-job.ts). */
  readonly output?: string;
}

/** The file a job writes. */
export const outputFileOf = (p: GenerateParams, jobId: string): string => p.output ?? join(p.jobsDir, jobId, `${p.outputName}.tif`);

/** Tile edge of the rendered output: the GeoTIFF's default block size, as `rasterflow render` renders it. */
export const GENERATE_TILE = 256;

/**
 * Most pixels (width x height) of an output. Decision: 2^31, `rasterflow render`'s default for
 * GeoTIFF outputs: the writer streams, so memory is not the bound; it is a guard against a rule
 * that would fill the disk by mistake (the export quota is the other).
 */
export const MAX_GENERATE_PIXELS = 2 ** 31;

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/;

/**
 * Decision: which functionArguments values are rasters. An object with `url` or `uri` (ArcGIS's
 * forms for an image service or a shared path; without `rasterFunction`), an absolute path, a
 * `scheme://` URL or a name ending in a raster extension is a raster; an array of them is a list of
 * rasters; anything else (numbers, keywords, arrays of numbers) is a plain argument value. Portal
 * items (`itemId`) are refused: this server has no portal items to read.
 */
const RASTER_EXT = /\.(tif|tiff|vrt|img|jp2|png|jpg|jpeg|json|mrf)$/i;
type Classified =
  { kind: 'raster'; location: string } | { kind: 'rasters'; locations: string[] } | { kind: 'value' } | { kind: 'bad'; message: string };

function rasterOf(v: unknown): Classified {
  if (typeof v === 'string') {
    const s = v.trim();
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s) || isAbsolute(s)) return { kind: 'raster', location: s };
    if (RASTER_EXT.test(s)) return { kind: 'bad', message: `${JSON.stringify(s)} must be an absolute path or a URL` };
    return { kind: 'value' };
  }
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const entries = Object.entries(v);
    const get = (k: string): unknown => entries.find(([key]) => key.toLowerCase() === k)?.[1];
    if (get('rasterfunction') !== undefined || get('function') !== undefined) return { kind: 'value' };
    const location = get('url') ?? get('uri');
    if (typeof location === 'string' && location.trim() !== '') return rasterOf(location.trim());
    if (get('itemid') !== undefined) {
      return { kind: 'bad', message: 'portal items (itemId) are not rasters this server can read; give the raster as a path or a URL' };
    }
    return { kind: 'value' };
  }
  if (Array.isArray(v) && v.length > 0 && v.every((e) => rasterOf(e).kind === 'raster')) {
    return { kind: 'rasters', locations: v.map((e) => (rasterOf(e) as { location: string }).location) };
  }
  return { kind: 'value' };
}

const findKey = (o: Record<string, unknown>, name: string): string | undefined =>
  Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());

/** The submitted parameter `name` (any case), or undefined. */
const inputOf = (inputs: Readonly<Record<string, unknown>>, name: string): unknown => {
  const k = Object.keys(inputs).find((key) => key.toLowerCase() === name.toLowerCase());
  return k === undefined ? undefined : inputs[k];
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Context settings that are hints for ArcGIS's own processing, with nothing to change here. */
const IGNORED_CONTEXT = new Set(['parallelprocessingfactor', 'processortype']);

/**
 * Check the submitted parameters (names in any case; JSON values parsed) without reading a raster;
 * answers the job's parameters, or every problem, each naming its parameter.
 */
export function parseGenerateInputs(
  inputs: Readonly<Record<string, unknown>>,
  jobsDir: string,
): { params?: GenerateParams; issues: Issue[] } {
  const issues: Issue[] = [];
  const bad = (path: string, message: string): void => void issues.push({ code: 'INVALID_ARGUMENT', path, message });

  // rasterFunction: a rule object (short or long form), or a function's name (ArcGIS's keywords).
  let rule: unknown = inputOf(inputs, 'rasterFunction');
  if (rule === undefined || rule === null || rule === '') {
    bad('rasterFunction', 'rasterFunction must be specified: a raster function (rendering rule) as JSON, or a function name');
    rule = undefined;
  } else if (typeof rule === 'string') {
    const s = rule.trim();
    if (s.startsWith('<')) {
      bad('rasterFunction', 'raster function templates in XML (.rft.xml) are not read here; send the template as JSON');
      rule = undefined;
    } else if (/^[\w.-]+$/.test(s)) rule = { rasterFunction: s };
    else {
      bad('rasterFunction', 'rasterFunction must be a raster function as JSON (an object) or a function name');
      rule = undefined;
    }
  } else if (!isObject(rule)) {
    bad('rasterFunction', 'rasterFunction must be a raster function as JSON (an object) or a function name');
    rule = undefined;
  }

  // functionArguments: rasters bound to the rule's variables, other values applied to its function.
  const sources: Record<string, string> = {};
  const args = inputOf(inputs, 'functionArguments');
  const applied = new Map<string, unknown>();
  if (args !== undefined && args !== null && args !== '') {
    if (!isObject(args)) bad('functionArguments', 'functionArguments must be a JSON object of argument names and values');
    else {
      for (const [k, v] of Object.entries(args)) {
        const c = rasterOf(v);
        if (c.kind === 'bad') bad(`functionArguments.${k}`, c.message);
        else if (c.kind === 'raster') {
          sources[k] = c.location;
          applied.set(k, k);
        } else if (c.kind === 'rasters') {
          const names = c.locations.map((loc, i) => {
            const name = `${k}_${i + 1}`;
            sources[name] = loc;
            return name;
          });
          applied.set(k, names);
        } else applied.set(k, v);
      }
      // Decision: `$$` (the raster a rule applies to when it names none) is the `Raster` argument,
      // else the first raster given, as ArcGIS's functions take their primary input as `Raster`.
      const primary = findKey(sources, 'Raster') ?? Object.keys(sources)[0];
      if (primary !== undefined) sources['$$'] = sources[primary]!;
    }
  }
  if (isObject(rule) && applied.size > 0) rule = applyArguments(rule, applied, issues);

  // outputName: a name, or ArcGIS's `{"serviceProperties": {"name": ...}}` / `{"name": ...}`.
  let outputName: string | undefined;
  const out = inputOf(inputs, 'outputName');
  let name: unknown = out;
  if (isObject(out)) {
    const sp = out[findKey(out, 'serviceProperties') ?? ''];
    name = isObject(sp) ? sp[findKey(sp, 'name') ?? ''] : out[findKey(out, 'name') ?? ''];
    if (name === undefined && (findKey(out, 'itemId') !== undefined || findKey(out, 'url') !== undefined)) {
      bad(
        'outputName',
        'this server writes the output as a file in its data folder, not to a portal item or an image service: give outputName as a name',
      );
      name = null;
    }
  }
  if (name === null) {
    // reported above
  } else if (name === undefined || name === '') bad('outputName', 'outputName must be specified: the name of the output raster');
  else if (typeof name !== 'string') bad('outputName', "outputName must be a name (letters, digits, '_', '-', '.')");
  else {
    const n = name.trim().replace(/\.tiff?$/i, '');
    if (!NAME.test(n))
      bad(
        'outputName',
        `outputName ${JSON.stringify(name)} must be a name of letters, digits, '_', '-' and '.' (not starting with '.' or '-'), at most 200 characters`,
      );
    else outputName = n;
  }

  const props = inputOf(inputs, 'outputRasterProperties');
  if (props !== undefined && props !== null && props !== '' && !(isObject(props) && Object.keys(props).length === 0)) {
    bad(
      'outputRasterProperties',
      'output raster properties (key metadata) are not written to GeoTIFF outputs here; leave outputRasterProperties out',
    );
  }
  const context = inputOf(inputs, 'context');
  let extent: GenerateParams['extent'];
  if (context !== undefined && context !== null && context !== '') {
    if (!isObject(context)) bad('context', 'context must be a JSON object');
    else {
      for (const k of Object.keys(context)) {
        if (IGNORED_CONTEXT.has(k.toLowerCase())) continue;
        if (k.toLowerCase() === 'extent') {
          const e = context[k];
          const n = (name: string): number | undefined => {
            const v = isObject(e) ? e[findKey(e, name) ?? ''] : undefined;
            return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
          };
          const [xmin, ymin, xmax, ymax] = [n('xmin'), n('ymin'), n('xmax'), n('ymax')];
          const sr = isObject(e) ? e[findKey(e, 'spatialReference') ?? ''] : undefined;
          const wkid = isObject(sr) ? (sr[findKey(sr, 'latestWkid') ?? ''] ?? sr[findKey(sr, 'wkid') ?? '']) : undefined;
          if (xmin === undefined || ymin === undefined || xmax === undefined || ymax === undefined || xmax <= xmin || ymax <= ymin) {
            bad(`context.${k}`, 'the extent must be {"xmin", "ymin", "xmax", "ymax"} numbers with xmin < xmax and ymin < ymax');
          } else if (sr !== undefined && typeof wkid !== 'number') {
            bad(`context.${k}.spatialReference`, "the extent's spatial reference must be given by wkid");
          } else extent = { xmin, ymin, xmax, ymax, ...(typeof wkid === 'number' ? { wkid } : {}) };
          continue;
        }
        bad(
          `context.${k}`,
          `the environment setting ${k} is not supported here: the output has the grid of the raster function's result (set cell sizes and projections in the rule, e.g. with Resample or Reproject functions; the extent with context.extent)`,
        );
      }
    }
  }
  if (issues.length > 0 || rule === undefined || outputName === undefined) return { issues };
  return { params: { rule, sources, jobsDir, outputName, applied: [...applied.keys()], ...(extent ? { extent } : {}) }, issues };
}

/** The rule with `functionArguments` applied to its function (short form) or its variables (long form). */
function applyArguments(rule: Record<string, unknown>, applied: Map<string, unknown>, issues: Issue[]): Record<string, unknown> {
  const fnKey = findKey(rule, 'rasterFunction');
  if (fnKey !== undefined) {
    const fn = typeof rule[fnKey] === 'string' ? registry.get(rule[fnKey]) : undefined;
    const argsKey = findKey(rule, 'rasterFunctionArguments') ?? 'rasterFunctionArguments';
    const given = isObject(rule[argsKey]) ? { ...rule[argsKey] } : {};
    for (const [k, v] of applied) {
      const known = fn ? Object.keys(fn.args).find((a) => a.toLowerCase() === k.toLowerCase()) : undefined;
      // A raster bound only by name (a variable deeper in the rule) is not an argument here.
      if (known === undefined && typeof v === 'string' && v === k) continue;
      if (known === undefined && Array.isArray(v) && v.every((e) => typeof e === 'string' && e.startsWith(`${k}_`))) continue;
      if (known === undefined && fn !== undefined) {
        issues.push({
          code: 'INVALID_ARGUMENT',
          path: `functionArguments.${k}`,
          message: `${fn.name} has no argument ${k} (its arguments: ${Object.keys(fn.args).join(', ')})`,
        });
        continue;
      }
      const existing = findKey(given, known ?? k);
      if (existing !== undefined) delete given[existing];
      given[known ?? k] = v;
    }
    return { ...rule, [argsKey]: given };
  }
  const argsKey = findKey(rule, 'arguments');
  if (argsKey === undefined || !isObject(rule[argsKey])) return rule;
  const given: Record<string, unknown> = { ...rule[argsKey] };
  for (const [k, v] of applied) {
    const existing = findKey(given, k);
    const cur = existing === undefined ? undefined : given[existing];
    if (isObject(cur) && cur['type'] === 'RasterFunctionVariable') given[existing!] = { ...cur, value: v };
    else given[existing ?? k] = v;
  }
  return { ...rule, [argsKey]: given };
}

/** The issue paths of the rule, named after the parameter that carries them. */
function ruleIssue(i: Issue, applied: ReadonlySet<string>): Issue {
  const m = /^rasterFunctionArguments\.([^.[]+)(.*)$/.exec(i.path ?? '');
  if (m && applied.has(m[1]!.toLowerCase())) return { ...i, path: `functionArguments.${m[1]}${m[2]}` };
  const p = i.path ?? '';
  return { ...i, path: p === '' || p === 'rasterFunction' ? 'rasterFunction' : `rasterFunction.${p}` };
}

export interface GenerateLimits {
  readonly maxRuleDepth?: number;
  readonly maxRuleNodes?: number;
}

/**
 * The graph of a job (its rasters opened in `files`, each checked against `policy` first): rule
 * problems name `rasterFunction` or `functionArguments`; an output over MAX_GENERATE_PIXELS is refused.
 */
export async function planGenerate(
  p: GenerateParams,
  files: OpenerScope,
  policy: InputPolicy | undefined,
  limits: GenerateLimits = {},
): Promise<RasterNode> {
  const applied = new Set(p.applied.map((k) => k.toLowerCase()));
  const resolution = resolveRule(p.rule, {
    registry,
    ...(limits.maxRuleDepth !== undefined ? { maxDepth: limits.maxRuleDepth } : {}),
    ...(limits.maxRuleNodes !== undefined ? { maxNodes: limits.maxRuleNodes } : {}),
  });
  if (resolution.issues.length > 0) throw issuesError(resolution.issues.map((i) => ruleIssue(i, applied)));
  const refusals: Issue[] = [];
  if (policy) {
    for (const [k, loc] of Object.entries(p.sources)) {
      if (k === '$$') continue;
      const refused = await openRefusal(policy, loc, `functionArguments.${k}`);
      if (refused) refusals.push(refused);
    }
  }
  if (refusals.length > 0) throw issuesError(refusals);
  const open: OpenerScope['open'] = async (location, o) => {
    if (policy) {
      const refused = await openRefusal(policy, location, 'rasterFunction');
      if (refused) throw new EngineError('INVALID_ARGUMENT', refused.message, { path: refused.path });
    }
    return files.open(location, o);
  };
  const hint = (name: string): string => `bind it in functionArguments: {"${name.startsWith('$') ? 'Raster' : name}": "<path or URL>"}`;
  let root: RasterNode;
  try {
    root = (await planRule(resolution, bindSources(p.sources, open, { hint }))).root;
  } catch (e) {
    const err = toEngineError(e);
    throw issuesError(
      err.issues.map((i) => (i.path === 'rasterFunction' || i.path?.startsWith('functionArguments') ? i : ruleIssue(i, applied))),
    );
  }
  const { width, height } = root.info;
  if (width * height > MAX_GENERATE_PIXELS) {
    throw new EngineError(
      'LIMIT_EXCEEDED',
      `the output would be ${width}x${height} pixels, more than the ${MAX_GENERATE_PIXELS} a job may write; clip the raster in the rule`,
      { path: 'rasterFunction' },
    );
  }
  return root;
}

function issuesError(issues: Issue[]): EngineError {
  const first = issues[0]!;
  return new EngineError(first.code, first.message, { ...(first.path !== undefined ? { path: first.path } : {}), issues });
}

/**
 * The pixel window of `context.extent` on the output's grid. Decision: as gdal_translate -projwin,
 * the extent's edges are rounded to the nearest cell edge, then clipped to the raster; an extent in
 * another spatial reference is refused (no reprojection of the window here).
 */
export function extentWindow(p: GenerateParams, info: RasterNode['info']): Rect | undefined {
  const e = p.extent;
  if (e === undefined) return undefined;
  const own = info.spatialReference?.wkid;
  if (e.wkid !== undefined && own !== undefined && e.wkid !== own) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `the extent is in wkid ${e.wkid}, the output in wkid ${own}: give the extent in wkid ${own}`,
      {
        path: 'context.extent.spatialReference',
      },
    );
  }
  const { extent: g, cellSize: cs, width, height } = info;
  const x0 = Math.max(0, Math.round((e.xmin - g.xmin) / cs.x));
  const x1 = Math.min(width, Math.round((e.xmax - g.xmin) / cs.x));
  const y0 = Math.max(0, Math.round((g.ymax - e.ymax) / cs.y));
  const y1 = Math.min(height, Math.round((g.ymax - e.ymin) / cs.y));
  if (x1 <= x0 || y1 <= y0) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `the extent does not cover a whole cell of the output (${g.xmin}, ${g.ymin}, ${g.xmax}, ${g.ymax})`,
      { path: 'context.extent' },
    );
  }
  return rect(x0, y0, x1 - x0, y1 - y0);
}

/** Check a job's parameters by planning its graph (rasters opened and closed again). */
export async function checkGenerate(p: GenerateParams, policy: InputPolicy | undefined, limits: GenerateLimits = {}): Promise<void> {
  const files = openerScope();
  try {
    extentWindow(p, (await planGenerate(p, files, policy, limits)).info);
  } finally {
    await files.closeAll();
  }
}

/** What a GenerateRaster job wrote. */
export interface GenerateSummary {
  readonly output: string;
  readonly width: number;
  readonly height: number;
  readonly bandCount: number;
  readonly pixelType: string;
  readonly tiles: number;
  readonly bytes: number;
}

/** Where the tiles of a job come from: rendered here (default) or by queue workers (queue/render-job.ts). */
export type TileSource = (root: RasterNode, recipe: Recipe, signal: AbortSignal | undefined, window?: Rect) => AsyncIterable<PixelBlock>;

export interface WriteGeneratedOptions extends Pick<
  TaskRunOptions,
  'signal' | 'onProgress' | 'inputPolicy' | 'pool' | 'maxBytes' | 'maxBytesName'
> {
  readonly tiles?: TileSource;
  readonly limits?: GenerateLimits;
}

/**
 * Render a job's output to `<jobsDir>/<jobId>/<outputName>.tif` through the streaming writer (its
 * partial name until done: a failed or cancelled job leaves no output, and no empty job folder).
 */
export async function writeGenerated(p: GenerateParams, jobId: string, o: WriteGeneratedOptions = {}): Promise<GenerateSummary> {
  const files = openerScope();
  const out = outputFileOf(p, jobId);
  try {
    const root = await planGenerate(p, files, o.inputPolicy, o.limits);
    // context.extent: a window of the output, written as `rasterflow render --window` writes it.
    const window = extentWindow(p, root.info);
    const { statistics: _whole, ...windowed } = window ? windowInfo(root.info, window) : root.info;
    const info = window ? windowed : root.info;
    // Decision: against the disk quota, the output's uncompressed size is the bound checked before
    // any pixel (compression usually makes it smaller; never larger by more than a few bytes a block).
    const raw = info.width * info.height * info.bandCount * Math.ceil(PIXEL_TYPE_INFO[info.pixelType].bits / 8);
    const budget = typeof o.maxBytes === 'function' ? o.maxBytes(0) : o.maxBytes;
    if (budget !== undefined && raw > budget) {
      const setting = o.maxBytesName ?? 'maxBytes';
      throw new EngineError(
        'LIMIT_EXCEEDED',
        `the output may take ${raw} bytes, more than the ${Math.max(0, budget)} left of the disk quota of job outputs (${setting}); delete old job outputs or raise ${setting}`,
        { path: setting },
      );
    }
    const recipe: Recipe = { rule: p.rule, sources: p.sources };
    const total = Math.ceil(info.width / GENERATE_TILE) * Math.ceil(info.height / GENERATE_TILE);
    const tiles = o.tiles
      ? o.tiles(root, recipe, o.signal, window)
      : renderTiles(root, {
          ...(window ? { rect: window } : {}),
          tileSize: GENERATE_TILE,
          recipe,
          transient: true,
          ...(o.signal ? { signal: o.signal } : {}),
          ...(o.pool && o.pool.size > 0 ? { pool: o.pool } : { concurrency: 16 }),
        });
    await mkdir(dirname(out), { recursive: true });
    let done = 0;
    o.onProgress?.({ done: 0, total, message: `tile 0 of ${total}` });
    await writeTiffStream(out, info, tiles, { ...parseCreationOptions([]), ...(window ? { offset: window } : {}) }, () => {
      done++;
      o.onProgress?.({ done, total, message: `tile ${done} of ${total}` });
    });
    const bytes = (await stat(out)).size;
    if (typeof o.maxBytes === 'function') o.maxBytes(bytes);
    return {
      output: out,
      width: info.width,
      height: info.height,
      bandCount: info.bandCount,
      pixelType: info.pixelType,
      tiles: total,
      bytes,
    };
  } catch (e) {
    // The job's folder goes when nothing is in it (the writer removed its partial file).
    if (p.output === undefined) await rmdir(dirname(out)).catch(() => undefined);
    throw e;
  } finally {
    await files.closeAll();
  }
}

/**
 * A job's result. Decision: `outputRaster` is `{ "url": <the file's absolute path>, "uri": <the
 * same> }`. ArcGIS answers the URL of the hosted image service it created (and its portal itemId);
 * this server creates no service for the output, so `url` is where the raster is, on the server's
 * disk (`uri` as ArcGIS's form for a shared data path); no `itemId`, as there is no portal item.
 */
export function generateOutcome(s: GenerateSummary): TaskOutcome {
  return {
    messages: [`Generated ${s.output} (${s.width}x${s.height}, ${s.bandCount} band(s) ${s.pixelType}, ${s.bytes} bytes)`],
    results: { [GENERATE_OUTPUT.name]: { url: s.output, uri: s.output } },
  };
}

/** The GenerateRaster task for the job runner: in this process, or on the job queue through `queue`. */
export function generateRasterTask(o: { readonly queue?: TaskQueueHook; readonly limits?: GenerateLimits } = {}): JobTask {
  return {
    name: GENERATE_TASK_NAME,
    run: async (params, options) =>
      generateOutcome(
        await writeGenerated(params as unknown as GenerateParams, options.jobId, { ...options, ...(o.limits ? { limits: o.limits } : {}) }),
      ),
    ...(o.queue ? { queue: o.queue } : {}),
    progressMessage: () => 'Generating raster',
    internalError: 'An internal error stopped the raster generation.',
  };
}

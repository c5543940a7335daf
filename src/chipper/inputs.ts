/**
 * Opening an export's inputs: the raster items (a rendering rule is built through the engine,
 * `context.cellSize` resamples), the additional raster, the labels (vector features in the
 * raster's pixel space, or a class raster), the mask polygons, and the classes with their colours.
 * Every check that refuses an input is made here, before any chip is planned or written.
 */
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineError, type Issue } from '../core/errors.js';
import type { RasterInfo } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { registry } from '../functions/index.js';
import { render, type Recipe } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import type { OpenerScope } from '../io/source.js';
import { buildGraph, resolveRule, type ResolvedNode } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { mapPoints, type MultiPolygon } from './geometry.js';
import { readFeatures, type LabelFeature } from './features.js';
import type { LabelWriter } from './label-writers.js';
import type { ClassInfo } from './metadata.js';
import type { ChipParams, LabelInput, RasterInput } from './params.js';

export interface OpenedRaster {
  readonly root: RasterNode;
  readonly info: RasterInfo;
  readonly recipe: Recipe;
  readonly name: string;
}

/** Opens a raster for one export; the export closes every raster it opened when it ends. */
export type RasterOpener = OpenerScope['open'];

/** Everything an export reads before it plans chips. */
export interface ExportInputs {
  /** The raster items (several with processAllRasterItems), all of `info`'s band count and type. */
  readonly items: readonly OpenedRaster[];
  /** The first item's info: the grid labels are placed on. */
  readonly info: RasterInfo;
  readonly extra?: OpenedRaster;
  /** Vector labels (inputClassData) in `info`'s pixel space. */
  readonly features: readonly LabelFeature[];
  /** Instance labels (inputInstanceData, Panoptic_Segmentation) in pixel space. */
  readonly instances: readonly LabelFeature[];
  readonly mask?: MultiPolygon;
  /** inputClassData given as a class raster. */
  readonly classRasterSource?: OpenedRaster;
  readonly classes: ClassInfo[];
  readonly instanceClasses?: ClassInfo[];
}

export async function openInputs(
  p: ChipParams,
  writer: LabelWriter,
  open: RasterOpener,
  signal: AbortSignal | undefined,
): Promise<ExportInputs> {
  // Rasters.
  const items: OpenedRaster[] = [];
  for (const [i, input] of p.inputRasters.entries())
    items.push(await openInput(open, input, p.inputRasters.length > 1 ? `inputRaster[${i}]` : 'inputRaster', p.context.cellSize));
  if (items.length > 1 && !p.processAllRasterItems) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      'several input rasters need processAllRasterItems: true (mosaicking rasters is not supported)',
      { path: 'processAllRasterItems' },
    );
  }
  const info = items[0]!.info;
  for (const [i, it] of items.entries()) {
    if (it.info.bandCount !== info.bandCount || it.info.pixelType !== info.pixelType) {
      throw new EngineError(
        'INVALID_ARGUMENT',
        `every raster item must have ${info.bandCount} ${info.pixelType} band(s); item ${i} has ${it.info.bandCount} ${it.info.pixelType}`,
        { path: `inputRaster[${i}]` },
      );
    }
    if (p.tileSize.x > it.info.width && p.tileSize.y > it.info.height && writer.chipPerFeature !== true) {
      throw new EngineError(
        'INVALID_ARGUMENT',
        `the chip (${p.tileSize.x} x ${p.tileSize.y}) is larger than the raster (${it.info.width} x ${it.info.height})`,
        { path: 'tileSize' },
      );
    }
  }
  if ((p.chipFormat === 'PNG' || p.chipFormat === 'JPEG') && (info.bandCount > 3 || info.pixelType !== 'U8')) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `${p.chipFormat} chips hold at most 3 bands of 8-bit data; the input has ${info.bandCount} ${info.pixelType} band(s): use TIFF or MRF, or a rule (ExtractBand, Stretch) making 3 x U8`,
      { path: 'chipFormat' },
    );
  }
  const extra = p.additionalInputRaster
    ? await openInput(open, p.additionalInputRaster, 'additionalInputRaster', p.context.cellSize)
    : undefined;
  if (extra !== undefined && !sameGrid(extra.info, info)) {
    throw new EngineError(
      'UNSUPPORTED_INPUT',
      "additionalInputRaster must lie on the input raster's grid (same extent and cell size); align it first (Resample/Clip rule)",
      { path: 'additionalInputRaster' },
    );
  }

  // Labels.
  const pixelSpace = p.referenceSystem === 'PIXEL_SPACE';
  const target = pixelSpace ? undefined : info.spatialReference;
  let features: LabelFeature[] = [];
  let classRasterSource: OpenedRaster | undefined;
  if (p.inputClassData !== undefined) {
    if (isRasterLocation(p.inputClassData)) {
      classRasterSource = await openInput(
        open,
        { kind: 'location', location: (p.inputClassData as { location: string }).location },
        'inputClassData',
        p.context.cellSize,
        true,
      );
      const ci = classRasterSource.info;
      if (ci.bandCount !== 1 || ci.pixelType.startsWith('F') || ci.pixelType.startsWith('C')) {
        throw new EngineError('INVALID_ARGUMENT', `a class raster must have one integer band; it has ${ci.bandCount} ${ci.pixelType}`, {
          path: 'inputClassData',
        });
      }
      if (!sameGrid(ci, info)) {
        throw new EngineError('UNSUPPORTED_INPUT', "the class raster must lie on the input raster's grid (same extent and cell size)", {
          path: 'inputClassData',
        });
      }
    } else {
      const json = await readJsonLocation(p.inputClassData, 'inputClassData');
      features = toPixelSpace(
        readFeatures(json, { classValueField: p.classValueField, bufferRadius: p.bufferRadius, target, path: 'inputClassData' }),
        info,
        pixelSpace,
      );
    }
  }
  let instances: LabelFeature[] = [];
  if (p.inputInstanceData !== undefined) {
    const json = await readJsonLocation(p.inputInstanceData, 'inputInstanceData');
    instances = toPixelSpace(
      readFeatures(json, {
        classValueField: p.instanceClassValueField ?? p.classValueField,
        bufferRadius: p.bufferRadius,
        target,
        path: 'inputInstanceData',
      }),
      info,
      pixelSpace,
    );
  }
  let mask: MultiPolygon | undefined;
  if (p.inputMaskPolygons !== undefined) {
    const json = await readJsonLocation(p.inputMaskPolygons, 'inputMaskPolygons');
    mask = toPixelSpace(readFeatures(json, { target, path: 'inputMaskPolygons' }), info, pixelSpace).flatMap((f) => f.geometry);
  }

  // Classes.
  let classes: ClassInfo[];
  if (classRasterSource !== undefined) {
    const values = await classValuesOf(classRasterSource, signal);
    const cm = classRasterSource.info.colormap;
    classes = values.map((v, i) => {
      const k = cm ? indexIn(cm.values, v) : -1;
      return { value: v, name: String(v), color: k >= 0 && cm ? [cm.rgb[3 * k]!, cm.rgb[3 * k + 1]!, cm.rgb[3 * k + 2]!] : classColor(i) };
    });
  } else {
    classes = classesOf([...features, ...instances].map((f) => [f.classValue, f.className] as [number, string]));
  }
  const instanceClasses =
    writer.instances === true ? classesOf(instances.map((f) => [f.classValue, f.className] as [number, string])) : undefined;
  if (writer.instances === true && instances.length === 0) {
    throw new EngineError('INVALID_ARGUMENT', `${p.metadataFormat} needs inputInstanceData with at least one feature`, {
      path: 'inputInstanceData',
    });
  }
  return {
    items,
    info,
    ...(extra ? { extra } : {}),
    features,
    instances,
    ...(mask ? { mask } : {}),
    ...(classRasterSource ? { classRasterSource } : {}),
    classes,
    ...(instanceClasses ? { instanceClasses } : {}),
  };
}

/** Whether `a` lies on `b`'s grid (same size and origin, to a millionth of a cell). */
const sameGrid = (a: RasterInfo, b: RasterInfo): boolean =>
  a.width === b.width &&
  a.height === b.height &&
  Math.abs(a.extent.xmin - b.extent.xmin) <= 1e-6 * b.cellSize.x &&
  Math.abs(a.extent.ymax - b.extent.ymax) <= 1e-6 * b.cellSize.y;

async function openInput(
  open: RasterOpener,
  input: RasterInput,
  name: string,
  cellSize?: { readonly x: number; readonly y: number },
  nearest = false,
): Promise<OpenedRaster> {
  let opened: OpenedRaster;
  if (input.kind === 'location' && input.rule === undefined) {
    const src = await open(input.location).catch((e: unknown) => {
      throw e instanceof EngineError ? new EngineError(e.code, e.message, { path: name, cause: e }) : e;
    });
    opened = { root: src, info: src.info, recipe: { rule: { rasterFunction: 'Identity' }, sources: { $$: input.location } }, name };
  } else opened = await openRule(open, input.rule, input.kind === 'location' ? { $$: input.location } : {}, name);
  // context.cellSize: resample through the engine's Resample (bilinear for imagery, nearest for class rasters).
  if (cellSize === undefined) return opened;
  const cs = opened.info.cellSize;
  if (Math.abs(cs.x - cellSize.x) <= 1e-9 * cellSize.x && Math.abs(cs.y - cellSize.y) <= 1e-9 * cellSize.y) return opened;
  const inner = input.kind === 'location' && input.rule === undefined ? '$$' : input.rule;
  const rule = {
    rasterFunction: 'Resample',
    rasterFunctionArguments: { Raster: inner, ResamplingType: nearest ? 0 : 1, OutputCellsize: { x: cellSize.x, y: cellSize.y } },
  };
  return openRule(open, rule, input.kind === 'location' ? { $$: input.location } : {}, name);
}

/**
 * A rule given as a raster input. It names its rasters by `{ "url": ... }` or as plain paths
 * (`"Raster": "scene.tif"`): the export binds no variables, so a bare name is a path, recorded in
 * the recipe's sources for the workers. `$$` is the raster of `{ "url", "renderingRule" }`.
 */
async function openRule(open: RasterOpener, rule: unknown, bound: Record<string, string>, name: string): Promise<OpenedRaster> {
  const sources = { ...bound };
  const unbound = (ref: string): string | undefined => (ref.startsWith('$') ? undefined : (sources[ref] = ref));
  const hint = (): string =>
    `a rule given as ${name} names its rasters as plain paths or {"url": PATH} (e.g. "Raster": "scene.tif"), or applies to one raster as {"url": PATH, "renderingRule": RULE}`;
  const prefix = (path: string | undefined): string => `${name}${path ? `.${path}` : ''}`;
  const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(sources, open, { unbound, hint }) }).catch(
    (e: unknown) => {
      if (e instanceof EngineError) {
        throw new EngineError(e.code, e.message, {
          path: prefix(e.path),
          issues: e.issues.map((i) => ({ ...i, path: prefix(i.path) })),
          cause: e,
        });
      }
      throw e;
    },
  );
  return { root, info: root.info, recipe: { rule, sources }, name };
}

async function readJsonLocation(input: LabelInput, path: string): Promise<unknown> {
  if (input.kind === 'inline') return input.json;
  const file = input.location.replace(/^file:\/\//, '');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new EngineError('IO_ERROR', `cannot read ${input.location}: ${(e as Error).message}`, { path });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new EngineError('INVALID_ARGUMENT', `${input.location} is not GeoJSON or Esri JSON: ${(e as Error).message}`, { path });
  }
}

const isRasterLocation = (input: LabelInput | undefined): boolean =>
  input?.kind === 'location' && ['.tif', '.tiff', '.mrf', '.img'].includes(extname(input.location.replace(/[?#].*$/, '')).toLowerCase());

/** Features into the raster's pixel space (x = column, y = row, continuous). */
function toPixelSpace(features: LabelFeature[], info: RasterInfo, pixelSpace: boolean): LabelFeature[] {
  if (pixelSpace) return features;
  const { extent, cellSize } = info;
  return features.map((f) => ({
    ...f,
    geometry: mapPoints(f.geometry, (x, y) => [(x - extent.xmin) / cellSize.x, (extent.ymax - y) / cellSize.y]),
  }));
}

/** A deterministic, well-spread colour per class (golden-angle hues). */
function classColor(i: number): [number, number, number] {
  const h = (i * 137.508) % 360;
  const f = (n: number): number => {
    const k = (n + h / 60) % 6;
    return Math.round(255 * (0.85 - 0.6 * Math.max(0, Math.min(k, 4 - k, 1))));
  };
  return [f(5), f(3), f(1)];
}

/** Classes from (value, name) pairs: the first name of each value, sorted by value, coloured in that order. */
export function classesOf(values: Iterable<[number, string]>): ClassInfo[] {
  const byValue = new Map<number, string>();
  for (const [v, n] of values) if (!byValue.has(v)) byValue.set(v, n);
  return [...byValue.entries()].sort((a, b) => a[0] - b[0]).map(([value, name], i) => ({ value, name, color: classColor(i) }));
}

async function classValuesOf(r: OpenedRaster, signal: AbortSignal | undefined): Promise<number[]> {
  const seen = new Set<number>();
  const rows = Math.max(1, Math.floor(1 << (20 / Math.max(1, r.info.width))));
  for (let y = 0; y < r.info.height; y += rows) {
    const b = await render(r.root, {
      rect: rect(0, y, r.info.width, Math.min(rows, r.info.height - y)),
      tileSize: Math.max(r.info.width, rows),
      signal,
    });
    const band = b.bands[0]!;
    for (let i = 0; i < band.length; i++) if (b.mask[i] && band[i] !== 0) seen.add(band[i]!);
  }
  return [...seen].sort((a, b) => a - b);
}

function indexIn(values: Float64Array, v: number): number {
  for (let i = 0; i < values.length; i++) if (values[i] === v) return i;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Where inputs may come from (the site server's policy; the CLI reads what its user can)

/**
 * The places an export may read its inputs from. Local paths (and `file:` URLs) must lie in one of
 * `roots` once `..` and symbolic links are resolved; http(s) URLs must have one of `origins` or be
 * one of `urls` exactly. Any other scheme is refused.
 */
export interface InputPolicy {
  /** Absolute folders. */
  readonly roots: readonly string[];
  /** `scheme://host[:port]`. */
  readonly origins: readonly string[];
  /** Exact URLs also allowed (e.g. the rasters of the site's own image services). */
  readonly urls?: readonly string[];
  /** Files and folders never read, even inside a root (a server's database, keys and backups). */
  readonly denied?: readonly string[];
  /** The setting that adds folders, named in the refusal (default `inputRoots`). */
  readonly rootsSetting?: string;
  /** The setting that adds origins, named in the refusal (default `inputOrigins`). */
  readonly originsSetting?: string;
}

/** One location an export would read, with the parameter (JSON path) that names it. */
export interface InputLocation {
  readonly location: string;
  readonly path: string;
}

/**
 * Every location the parameters make the export read: each raster input, the label, instance and
 * mask files, and the rasters named inside rendering rules (`{"url": ...}` and bare paths), found by
 * resolving the rule as the export will (no file is opened). A rule that does not resolve names no
 * location: the export refuses it before opening anything.
 */
export function inputLocations(p: ChipParams): InputLocation[] {
  const out: InputLocation[] = [];
  const raster = (input: RasterInput, path: string): void => {
    const bound = input.kind === 'location' ? input.location : undefined;
    if (bound !== undefined) out.push({ location: bound, path });
    if (input.rule === undefined) return;
    const { root } = resolveRule(input.rule, { registry });
    const seen = new Set<string>();
    const walk = (n: ResolvedNode | undefined): void => {
      if (n === undefined || seen.has(n.id)) return;
      seen.add(n.id);
      if (n.kind === 'function') n.inputs.forEach(walk);
      if (n.kind !== 'source') return;
      const at = `${path}${n.path ? `.${n.path}` : ''}`;
      // As openRule binds them: a URL as written; `$`-names to the bound raster; other names are paths.
      if (n.ref.kind === 'url') out.push({ location: n.ref.url, path: at });
      else if (!n.ref.name.startsWith('$')) out.push({ location: n.ref.name, path: at });
    };
    walk(root);
  };
  const label = (input: LabelInput | undefined, path: string): void => {
    if (input?.kind === 'location') out.push({ location: input.location, path });
  };
  p.inputRasters.forEach((r, i) => raster(r, p.inputRasters.length > 1 ? `inputRaster[${i}]` : 'inputRaster'));
  if (p.additionalInputRaster) raster(p.additionalInputRaster, 'additionalInputRaster');
  label(p.inputClassData, 'inputClassData');
  label(p.inputInstanceData, 'inputInstanceData');
  label(p.inputMaskPolygons, 'inputMaskPolygons');
  return out;
}

/**
 * A path with symbolic links resolved as far as it exists (the rest appended), so that neither a
 * link nor `..` can lead out of a root, whether or not the file exists yet.
 */
export function realPathOf(p: string): string {
  const rest: string[] = [];
  let at = resolve(p);
  for (;;) {
    try {
      return join(realpathSync(at), ...rest.reverse());
    } catch {
      const parent = dirname(at);
      if (parent === at) return resolve(p);
      rest.push(basename(at));
      at = parent;
    }
  }
}

/** Whether `p` lies in `root` (both resolved through symbolic links). */
export function isInside(root: string, p: string): boolean {
  const rel = relative(realPathOf(root), realPathOf(p));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

const originOf = (u: string): string | undefined => {
  try {
    return new URL(u).origin.toLowerCase();
  } catch {
    return undefined;
  }
};

/** Why `location` (named by parameter `path`) may not be read under `policy`, or undefined when it may. */
export function inputRefusal(policy: InputPolicy, location: string, path: string): Issue | undefined {
  const refuse = (message: string): Issue => ({ code: 'INVALID_ARGUMENT', path, message });
  const shown = JSON.stringify(location.length > 300 ? `${location.slice(0, 300)}...` : location);
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(location)?.[1]?.toLowerCase();
  // A Windows drive letter (C:\...) is a path, not a scheme.
  if (scheme !== undefined && scheme.length > 1 && scheme !== 'file') {
    if (scheme !== 'http' && scheme !== 'https')
      return refuse(`${shown}: only local paths and http(s) URLs are read (not ${scheme}: URLs)`);
    const origin = originOf(location);
    if (origin === undefined) return refuse(`${shown} is not a valid URL`);
    if (policy.urls?.includes(location)) return undefined;
    if (policy.origins.some((o) => originOf(o) === origin)) return undefined;
    return refuse(
      `${shown}: this server does not read inputs from ${origin}; an administrator can allow that origin with the ${policy.originsSetting ?? 'inputOrigins'} setting`,
    );
  }
  let file: string;
  try {
    file = scheme === 'file' ? fileURLToPath(location) : location;
  } catch {
    return refuse(`${shown} is not a valid file URL`);
  }
  if (file.includes('\0')) return refuse(`${shown} is not a valid path`);
  if (policy.denied?.some((d) => isInside(d, file))) return refuse(`${shown} is one of the server's own files, never read as an input`);
  if (policy.roots.some((root) => isInside(root, file))) return undefined;
  return refuse(
    `${shown} is outside the folders this server reads inputs from; an administrator can add its folder to the ${policy.rootsSetting ?? 'inputRoots'} setting`,
  );
}

/**
 * Every input location of `p` that `policy` refuses, one issue each; of the allowed ones, the
 * multidimensional manifests' slice files too.
 */
export async function inputRefusals(p: ChipParams, policy: InputPolicy): Promise<Issue[]> {
  const issues: Issue[] = [];
  for (const { location, path } of inputLocations(p)) {
    const issue = inputRefusal(policy, location, path);
    if (issue) issues.push(issue);
    else issues.push(...(await manifestRefusals(policy, location, path)));
  }
  return issues;
}

/** `location` refused by `policy`, or, when it is an allowed manifest, its first slice refused. */
export async function openRefusal(policy: InputPolicy, location: string, path: string): Promise<Issue | undefined> {
  return inputRefusal(policy, location, path) ?? (await manifestRefusals(policy, location, path))[0];
}

/**
 * The slice files a multidimensional manifest (a `.json` raster input) names, each checked like the
 * manifest itself: a manifest inside an allowed folder cannot lead elsewhere. An unreadable or
 * malformed manifest names nothing here (opening it reports that).
 */
export async function manifestRefusals(policy: InputPolicy, location: string, path: string): Promise<Issue[]> {
  const file = /^file:/i.test(location) ? fileURLToPath(location) : location;
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(file) || extname(file).toLowerCase() !== '.json') return [];
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return [];
  }
  const issues: Issue[] = [];
  const vars = (doc as { variables?: unknown } | null)?.variables;
  for (const [vi, v] of (Array.isArray(vars) ? vars : []).entries()) {
    const slices = (v as { slices?: unknown } | null)?.slices;
    for (const [si, sl] of (Array.isArray(slices) ? slices : []).entries()) {
      const slice = (sl as { path?: unknown } | null)?.path;
      if (typeof slice !== 'string') continue;
      const target = isAbsolute(slice) ? slice : join(dirname(file), slice);
      const issue = inputRefusal(policy, target, `${path}.variables[${vi}].slices[${si}].path`);
      if (issue) issues.push({ ...issue, message: `the manifest names ${issue.message}` });
    }
  }
  return issues;
}

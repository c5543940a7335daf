/**
 * "Render this rule over this service on this grid": the one path every image operation takes
 * (exportImage here; tiles, identify and histograms in the sibling modules).
 *
 * 1. The rule: `resolveServiceRule` reads a `renderingRule` parameter (JSON, the name of a published
 *    template, or a registry function name with its defaults; absent: the service's default rule;
 *    `{"rasterFunction":"None"}`: the raster as stored). The rule sees only the service's raster:
 *    `$$`, `$1` and the template variables bound to it. Decision: any other reference (a path or a
 *    URL written in the rule) is refused, so that a client cannot read files of the server.
 * 2. The graph: planned once per (service version, rule, read level) and kept in a small LRU, so a
 *    Stretch's statistics or a template's resolution are not redone for every tile.
 * 3. The grid: `{spatialReference, extent, width, height}`. Same spatial reference: when the grid
 *    is the raster's own at native resolution and pixel-aligned, the rule's output window is
 *    rendered as it is (exact); otherwise the output is resampled onto the grid (an affine Align
 *    node: nearest, bilinear or cubic with gdalwarp's conventions). A coarser grid (2x or more)
 *    reads the raster from its overviews first (as the vendor and GDAL do), so a zoomed-out view
 *    of a large raster does not read every pixel. Another spatial reference: the warp.
 * 4. Bounded: a render holds one of the site's render slots (service.ts) and stops when the
 *    request's AbortSignal aborts (a client that hung up).
 */
import { EngineError } from '../../core/errors.js';
import {
  allocateBlock,
  copyInto,
  type BandStatistics,
  type Extent,
  type PixelBlock,
  type RasterInfo,
  type SpatialReference,
} from '../../core/pixel-block.js';
import { allocatePlane, castValue, PIXEL_TYPE_INFO, type PixelType, type Plane } from '../../core/pixel-type.js';
import { rect, type Rect } from '../../core/rect.js';
import { alignNode, sameSpatialReference } from '../../graph/align.js';
import { parseSpatialReference, transformExtent, warpNode } from '../../graph/warp.js';
import { renderTiles } from '../../graph/render.js';
import type { RasterNode, ResamplingMethod, SourceNode } from '../../graph/types.js';
import { registry } from '../../functions/index.js';
import { planRule, resolveRule } from '../../rule/build.js';
import { outsizeSource } from '../../io/geotiff-source.js';
import { abortError, throwIfAborted } from '../limits.js';
import type { SiteLimits } from '../site.js';
import type { ImageServices, OpenedImageService } from './service.js';

// ---------------------------------------------------------------------------------------------
// Parameters shared by the operations

/** A request's output grid (north-up). */
export interface RenderGrid {
  readonly spatialReference: SpatialReference;
  readonly extent: Extent;
  readonly width: number;
  readonly height: number;
}

const bad = (param: string, detail: string): EngineError => new EngineError('INVALID_ARGUMENT', detail, { path: param, details: [detail] });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Spatial reference parameters are read as the warp reads them (wkid, `EPSG:n`, Esri JSON, WKT). */
export { parseSpatialReference } from '../../graph/warp.js';

const WEB_MERCATOR = new Set([3857, 102100, 102113, 900913]);

/** The vendor's JSON of a spatial reference: `{wkid, latestWkid}` (Web Mercator as 102100/3857), else `{wkt}`. */
export function spatialReferenceJson(sr: SpatialReference | undefined): Record<string, unknown> | undefined {
  if (!sr) return undefined;
  if (sr.wkid !== undefined) return WEB_MERCATOR.has(sr.wkid) ? { wkid: 102100, latestWkid: 3857 } : { wkid: sr.wkid, latestWkid: sr.wkid };
  if (sr.wkt !== undefined) return { wkt: sr.wkt };
  return undefined;
}

/**
 * An envelope parameter (`bbox`): `xmin,ymin,xmax,ymax`, a JSON array of the four, or Esri JSON
 * `{"xmin":..,"ymin":..,"xmax":..,"ymax":..,"spatialReference":{...}}` (its spatial reference, if
 * any, is answered beside it).
 */
export function parseEnvelope(value: string, param: string): { extent: Extent; spatialReference?: SpatialReference } {
  const t = value.trim();
  let nums: number[] | undefined;
  let sr: SpatialReference | undefined;
  if (t.startsWith('{')) {
    let json: unknown;
    try {
      json = JSON.parse(t);
    } catch {
      throw bad(param, `'${param}' is not valid JSON.`);
    }
    if (!isObject(json)) throw bad(param, `'${param}' must be an envelope.`);
    nums = ['xmin', 'ymin', 'xmax', 'ymax'].map((k) => (typeof json[k] === 'number' ? json[k] : Number.NaN));
    if (json['spatialReference'] !== undefined) sr = parseSpatialReference(json['spatialReference'], `${param}.spatialReference`);
  } else if (t.startsWith('[')) {
    try {
      const a: unknown = JSON.parse(t);
      nums = Array.isArray(a) ? a.map((x) => (typeof x === 'number' ? x : Number.NaN)) : undefined;
    } catch {
      nums = undefined;
    }
  } else {
    nums = t.split(',').map((p) => (p.trim() === '' ? Number.NaN : Number(p)));
  }
  if (!nums || nums.length !== 4 || nums.some((n) => !Number.isFinite(n))) {
    throw bad(param, `'${param}' must be xmin,ymin,xmax,ymax or an envelope JSON object.`);
  }
  const [xmin, ymin, xmax, ymax] = nums as [number, number, number, number];
  if (!(xmax > xmin) || !(ymax > ymin)) throw bad(param, `'${param}' must have xmax > xmin and ymax > ymin.`);
  return { extent: { xmin, ymin, xmax, ymax }, ...(sr ? { spatialReference: sr } : {}) };
}

/** `interpolation`: the vendor's RSP_* names (and the short ones) to a resampling method. */
export function parseInterpolation(value: string | undefined, param = 'interpolation'): ResamplingMethod {
  if (value === undefined || value.trim() === '') return 'nearest';
  const t = value.trim().toLowerCase();
  const byName: Record<string, ResamplingMethod> = {
    rsp_nearestneighbor: 'nearest',
    nearestneighbor: 'nearest',
    nearest: 'nearest',
    rsp_bilinearinterpolation: 'bilinear',
    bilinearinterpolation: 'bilinear',
    bilinear: 'bilinear',
    rsp_cubicconvolution: 'cubic',
    cubicconvolution: 'cubic',
    cubic: 'cubic',
  };
  const m = byName[t];
  if (m) return m;
  if (t === 'rsp_majority' || t === 'majority') {
    // Decision: Majority is refused rather than silently drawn with another method.
    throw bad(
      param,
      `'${param}': RSP_Majority is not supported; use RSP_NearestNeighbor, RSP_BilinearInterpolation or RSP_CubicConvolution (or a Resample rule with the Majority type).`,
    );
  }
  throw bad(param, `'${param}' must be RSP_NearestNeighbor, RSP_BilinearInterpolation or RSP_CubicConvolution, got '${value}'.`);
}

// ---------------------------------------------------------------------------------------------
// Rules

/** The rule a request renders: undefined = the raster as stored. */
export type ServiceRule = unknown;

/**
 * A `renderingRule` parameter read for `service`: JSON (a rule, possibly naming a published
 * template as its `rasterFunction`), or a bare name (a published template, else a registry
 * function with its defaults). Absent or empty: the service's default rule. `{"rasterFunction":
 * "None"}` (the vendor's spelling of "no rendering") or "None": the raster as stored.
 */
export function resolveServiceRule(service: OpenedImageService, value: string | undefined, param = 'renderingRule'): ServiceRule {
  const t = value?.trim() ?? '';
  if (t === '') return service.settings.renderingRule;
  let rule: unknown;
  if (t.startsWith('{') || t.startsWith('[') || t.startsWith('"')) {
    try {
      rule = JSON.parse(t);
    } catch {
      throw bad(param, `'${param}' is not valid JSON.`);
    }
    if (typeof rule === 'string') return resolveServiceRule(service, rule, param);
  } else {
    const template = service.templates.get(t);
    if (template) return template.rule;
    if (t.toLowerCase() === 'none') return undefined;
    if (!registry.get(t)) {
      throw new EngineError('UNKNOWN_FUNCTION', `no raster function or template is named '${t}'`, {
        path: param,
        details: [`'${param}': no published template or raster function is named '${t}'.`],
      });
    }
    return { rasterFunction: t };
  }
  if (isObject(rule) && typeof rule['rasterFunction'] === 'string' && rule['rasterFunction'].toLowerCase() === 'none') {
    if (!service.templates.get('None')) return undefined;
  }
  return rule;
}

/** The site's rule caps a plan applies (`maxRuleDepth`, `maxRuleNodes`; absent: the engine's defaults). */
export type RuleCaps = Partial<Pick<SiteLimits, 'maxRuleDepth' | 'maxRuleNodes'>>;

/** One planned graph: the rule over the service's raster read at `level` (0 = full resolution). */
interface Planned {
  readonly root: RasterNode;
  /** The source node the rule reads (a downsampled view at level > 0). */
  readonly source: SourceNode;
}

const GRAPH_CACHE_SIZE = 128;
const graphs = new Map<string, Promise<Planned>>();
/**
 * Each opened service's number in the graph cache's keys. A graph holds its service's open
 * source, so it serves that opening only: a service reopened with the same record (the same
 * version: an edit undone, a site started again in the process) has closed, or will close, the
 * source the earlier graphs read.
 */
const openings = new WeakMap<OpenedImageService, number>();
let nextOpening = 0;

/** The source read at overview level `level` (power-of-two reduction), or the source itself. */
function sourceAtLevel(service: OpenedImageService, level: number): SourceNode {
  if (level === 0) return service.source;
  const f = 2 ** level;
  const { width, height } = service.info;
  return outsizeSource(service.source, Math.max(1, Math.ceil(width / f)), Math.max(1, Math.ceil(height / f)));
}

/**
 * The planned graph of `rule` over `service` read at `level`, cached (LRU) by opened service,
 * rule JSON and level. Errors of the rule are EngineErrors at `param`.
 */
export function planServiceRule(
  service: OpenedImageService,
  rule: ServiceRule,
  level = 0,
  param = 'renderingRule',
  caps: RuleCaps = {},
): Promise<Planned> {
  const { maxRuleDepth, maxRuleNodes } = caps;
  // The caps are in the key: a rule planned under looser caps is not served under tighter ones.
  let opening = openings.get(service);
  if (opening === undefined) openings.set(service, (opening = ++nextOpening));
  const key = `${opening}|${service.key}|${service.version}|${level}|${maxRuleDepth ?? ''}|${maxRuleNodes ?? ''}|${JSON.stringify(rule ?? null)}`;
  const hit = graphs.get(key);
  if (hit) {
    graphs.delete(key);
    graphs.set(key, hit);
    return hit;
  }
  const p = (async (): Promise<Planned> => {
    const source = sourceAtLevel(service, level);
    if (rule === undefined) return { root: source, source };
    const resolution = resolveRule(rule, {
      registry,
      templates: service.templates,
      ...(maxRuleDepth === undefined ? {} : { maxDepth: maxRuleDepth }),
      ...(maxRuleNodes === undefined ? {} : { maxNodes: maxRuleNodes }),
    });
    try {
      const built = await planRule(resolution, async (ref) => {
        if (ref.kind === 'ref' && (ref.name === '$$' || ref.name === '$1')) return source;
        const what = ref.kind === 'url' ? ref.url : ref.name;
        throw bad(param, `'${param}' may only use the service's raster ($$ or $1), not '${what}'.`);
      });
      return { root: built.root, source };
    } catch (e) {
      if (e instanceof EngineError && e.details.length === 0 && e.code !== 'INTERNAL' && e.code !== 'IO_ERROR') {
        // Rule problems: each issue with its path, under the parameter's name.
        throw new EngineError(e.code, e.message, {
          path: param,
          details: e.issues.map((i) => `${param}${i.path ? `.${i.path}` : ''}: ${i.message}`),
        });
      }
      throw e;
    }
  })();
  graphs.set(key, p);
  p.catch(() => graphs.delete(key));
  while (graphs.size > GRAPH_CACHE_SIZE) graphs.delete(graphs.keys().next().value!);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Rendering on a grid

export interface RenderOnGridOptions {
  readonly rule: ServiceRule;
  readonly grid: RenderGrid;
  readonly method: ResamplingMethod;
  /** The request's signal (`requestSignal`): aborts the render on disconnect or past requestTimeoutMs. */
  readonly signal?: AbortSignal;
  /** The client the render slot is counted against (`services.clientOf(req, caller)`). */
  readonly client?: string;
  /** Rule caps (default the registry's limits): an export worker gets the main thread's site's. */
  readonly ruleCaps?: RuleCaps;
  /** Parameter name for rule errors (default renderingRule). */
  readonly ruleParam?: string;
}

export interface RenderedImage {
  /** The rule's output on the grid: rect (0, 0, width, height), mask 0 for NoData and outside the raster. */
  readonly block: PixelBlock;
  /** The grid's RasterInfo (the rule output's bands, type, NoData, statistics; the grid's extent and SR). */
  readonly info: RasterInfo;
  /** How it was computed (tests and logs): the exact window, an affine resample, or a warp. */
  readonly path: 'window' | 'resample' | 'warp';
  /** Overview level the raster was read at (0 = full resolution). */
  readonly level: number;
}

/** Cell size of `grid` measured in the raster's spatial reference (its extent transformed). */
function cellInSource(grid: RenderGrid, sourceSr: SpatialReference | undefined): number | undefined {
  const ex = grid.extent;
  if (sameSpatialReference(grid.spatialReference, sourceSr)) {
    return Math.min((ex.xmax - ex.xmin) / grid.width, (ex.ymax - ex.ymin) / grid.height);
  }
  if (!sourceSr) return undefined;
  let t: Extent;
  try {
    t = transformExtent(ex, grid.spatialReference, sourceSr);
  } catch {
    return undefined;
  }
  return Math.min((t.xmax - t.xmin) / grid.width, (t.ymax - t.ymin) / grid.height);
}

/** Power-of-two reduction to read the raster at: the largest with a cell no coarser than the grid's. */
function levelFor(service: OpenedImageService, grid: RenderGrid): number {
  const cell = cellInSource(grid, service.info.spatialReference);
  if (cell === undefined) return 0;
  const native = Math.max(service.info.cellSize.x, service.info.cellSize.y);
  const ratio = cell / native;
  if (!(ratio >= 2)) return 0;
  const max = Math.floor(Math.log2(Math.max(service.info.width, service.info.height)));
  return Math.max(0, Math.min(max, Math.floor(Math.log2(ratio + 1e-9))));
}

/** The window of `info`'s grid that `grid` is, when it is pixel-aligned at the same resolution. */
function exactWindow(info: RasterInfo, grid: RenderGrid): { x: number; y: number } | undefined {
  const e = grid.extent;
  const cx = (e.xmax - e.xmin) / grid.width;
  const cy = (e.ymax - e.ymin) / grid.height;
  const tol = 1e-6;
  if (Math.abs(cx - info.cellSize.x) > tol * info.cellSize.x || Math.abs(cy - info.cellSize.y) > tol * info.cellSize.y) return undefined;
  const px = (e.xmin - info.extent.xmin) / info.cellSize.x;
  const py = (info.extent.ymax - e.ymax) / info.cellSize.y;
  const x = Math.round(px);
  const y = Math.round(py);
  if (Math.abs(px - x) > 1e-4 || Math.abs(py - y) > 1e-4) return undefined;
  return { x, y };
}

/** Same spatial reference: the engine's affine Align node (a plain resample, no projection involved). */
function resampled(node: RasterNode, target: RasterInfo, method: ResamplingMethod): RasterNode {
  return alignNode(node, target, method, 'bbox');
}

/**
 * `render()`, yielding to the event loop after every tile: a source whose blocks are cached
 * resolves its reads as microtasks, and a whole render would then hold the event loop, so that
 * neither other requests nor the client's disconnect (which aborts `signal`) are seen until it ends.
 */
async function renderYielding(root: RasterNode, area: Rect, signal: AbortSignal | undefined): Promise<PixelBlock> {
  const out = allocateBlock(area, root.info.pixelType, root.info.bandCount);
  try {
    for await (const tile of renderTiles(root, { rect: area, ...(signal ? { signal } : {}) })) {
      copyInto(tile, out);
      await new Promise<void>((resolve) => setImmediate(resolve));
      throwIfAborted(signal);
    }
  } catch (e) {
    // The evaluator stops with ABORTED whatever the reason: answer the signal's (TIMEOUT past requestTimeoutMs).
    if (signal?.aborted) throw abortError(signal);
    throw e;
  }
  throwIfAborted(signal);
  return out;
}

/**
 * The RasterInfo of a rule output `info` put on `grid`: its bands, type, NoData and statistics, the
 * grid's size and extent, and the grid's SR (the output's own when they are the same SR).
 */
export function gridInfo(info: RasterInfo, grid: RenderGrid, sameSr: boolean): RasterInfo {
  const e = grid.extent;
  return {
    ...info,
    width: grid.width,
    height: grid.height,
    extent: e,
    cellSize: { x: (e.xmax - e.xmin) / grid.width, y: (e.ymax - e.ymin) / grid.height },
    spatialReference: sameSr ? (info.spatialReference ?? grid.spatialReference) : grid.spatialReference,
  };
}

/**
 * Render `options.rule` over `service` on `options.grid`, holding a render slot of `services` for
 * the duration. The block is rect (0, 0, width, height).
 */
export async function renderOnGrid(
  services: ImageServices,
  service: OpenedImageService,
  options: RenderOnGridOptions,
): Promise<RenderedImage> {
  const { grid, method, signal } = options;
  const sameSr = sameSpatialReference(grid.spatialReference, service.info.spatialReference);
  const level = levelFor(service, grid);
  const planned = await planServiceRule(service, options.rule, level, options.ruleParam, options.ruleCaps ?? services.limits);
  const root = planned.root;
  const target = gridInfo(root.info, grid, sameSr);
  const full = rect(0, 0, grid.width, grid.height);
  const slot = await services.renderSlot(signal, options.client);
  try {
    if (sameSr) {
      const win = exactWindow(root.info, grid);
      if (win) {
        const block = await renderYielding(root, rect(win.x, win.y, grid.width, grid.height), signal);
        return { block: { ...block, rect: rect(0, 0, grid.width, grid.height) }, info: target, path: 'window', level };
      }
      const node = resampled(root, target, method);
      return { block: await renderYielding(node, full, signal), info: target, path: 'resample', level };
    }
    const node = warpNode(root, grid, method);
    return { block: await renderYielding(node, full, signal), info: target, path: 'warp', level };
  } finally {
    slot.release();
  }
}

// ---------------------------------------------------------------------------------------------
// Display (PNG/JPEG of data that is not 8-bit)

/**
 * Statistics to stretch a rendered image for display: the rule output's own (functions that know
 * their range declare them), else the service's when the image is the raster as stored, else
 * undefined (the caller uses the image's own).
 */
export function displayStatistics(
  image: RenderedImage,
  service: OpenedImageService,
  rule: ServiceRule,
): readonly (BandStatistics | undefined)[] | undefined {
  if (image.info.statistics && image.info.statistics.length === image.info.bandCount) return image.info.statistics;
  if (rule === undefined) return service.statistics;
  return undefined;
}

/** min/max of each band's valid pixels. */
function blockMinMax(block: PixelBlock, band: number): { min: number; max: number } | undefined {
  const plane = block.bands[band]!;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < block.mask.length; i++) {
    if (block.mask[i] === 0) continue;
    const v = plane[i]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return min <= max ? { min, max } : undefined;
}

/**
 * An 8-bit copy of `block` for PNG/JPEG: U8 as it is; other types linearly stretched from each
 * band's [min, max] (from `statistics`, else the block's own valid pixels) to 0..255, as the
 * vendor's default display of non-8-bit data. The mask is kept.
 */
export function toDisplayBlock(block: PixelBlock, statistics?: readonly (BandStatistics | undefined)[]): PixelBlock {
  if (block.pixelType === 'U8') return block;
  const k = PIXEL_TYPE_INFO[block.pixelType].complex ? 2 : 1;
  const bands: Plane[] = block.bands.map((plane, b) => {
    const s = statistics?.[b] ?? blockMinMax(block, b);
    const out = allocatePlane('U8', block.mask.length) as Uint8Array;
    if (!s) return out;
    const span = s.max - s.min;
    for (let i = 0; i < out.length; i++) {
      if (block.mask[i] === 0) continue;
      const v = plane[k * i]!;
      out[i] = span > 0 ? castValue(((v - s.min) / span) * 255, 'U8') : v >= s.max ? 255 : 0;
    }
    return out;
  });
  return { rect: block.rect, pixelType: 'U8', bands, mask: block.mask };
}

/** `block` with its values converted to `to` (rounded half away from zero and saturated for integers). */
export function castBlock(block: PixelBlock, to: PixelType): PixelBlock {
  if (block.pixelType === to) return block;
  const k = PIXEL_TYPE_INFO[block.pixelType].complex ? 2 : 1;
  const bands = block.bands.map((plane) => {
    const out = allocatePlane(to, block.mask.length);
    for (let i = 0; i < block.mask.length; i++) out[i] = castValue(plane[k * i]!, to);
    return out;
  });
  return { rect: block.rect, pixelType: to, bands, mask: block.mask };
}

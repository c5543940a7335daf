/**
 * Tile schemes of the image service's `tile/{level}/{row}/{col}` endpoint: the vendor's standard
 * Web Mercator scheme (wkid 102100 / latestWkid 3857, 256 px tiles at 96 dpi, origin at the
 * top-left corner of the square world) and a "native" scheme on the raster's own grid.
 *
 * Decision: the native scheme's level 0 is the coarsest power-of-two reduction of the raster's
 * pixel size at which the whole raster fits one 256 px tile; level n halves the resolution n times,
 * and the last level is the raster's own resolution. Its origin is the raster's top-left corner, so
 * native tiles at the last level are aligned with the raster's pixels (no resampling).
 */
import type { Extent, PixelBlock, RasterInfo, SpatialReference } from '../../core/pixel-block.js';
import { rect } from '../../core/rect.js';
import { alignNode, sameSpatialReference } from '../../graph/align.js';
import { render } from '../../graph/render.js';
import { applyBoundParams, bindRequestStatistics, needsRequestStatistics } from '../../graph/request-statistics.js';
import type { FunctionNode, RasterNode } from '../../graph/types.js';
import { transformExtent, warpNode } from '../../graph/warp.js';
import { EngineError } from '../../core/errors.js';
import { encodeAs } from '../../io/encode.js';
import { encodePng } from '../../io/encode-png.js';
import { abortError, budgetSignal } from '../limits.js';
import { readParams, TransportError, withRestErrors } from '../rest.js';
import { serviceKey } from '../site.js';
import { openRequestedService, servicePathOf, type ImageDeps } from './access.js';
import { gridInfo, planServiceRule, resolveServiceRule, toDisplayBlock, type RenderGrid, type ServiceRule } from './render-request.js';
import { etagOf, matchesIfNoneMatch, ruleHash, type CachedTile, type TileCache } from './tile-cache.js';
import type { ImageServices, OpenedImageService } from './service.js';

export const TILE_SIZE = 256;
export const TILE_DPI = 96;

/** One level of detail. */
export interface Lod {
  readonly level: number;
  readonly resolution: number;
  readonly scale: number;
}

export interface TileScheme {
  readonly kind: 'webmercator' | 'native';
  readonly origin: { readonly x: number; readonly y: number };
  readonly spatialReference: SpatialReference & { readonly latestWkid?: number };
  readonly lods: readonly Lod[];
  readonly rows: number;
  readonly cols: number;
}

/** Half the side of the Web Mercator square world, metres. */
export const WEB_MERCATOR_HALF = 20037508.342787;

/**
 * The vendor's standard Web Mercator levels (ArcGIS Online / Bing / Google scheme), as the vendor
 * lists them in a tiled service's tileInfo: resolution halves at each level, scale at 96 dpi.
 */
export const WEB_MERCATOR_LODS: readonly Lod[] = [
  [156543.03392800014, 5.91657527591555e8],
  [78271.51696399994, 2.95828763795777e8],
  [39135.75848200009, 1.47914381897889e8],
  [19567.87924099992, 7.3957190948944e7],
  [9783.93962049996, 3.6978595474472e7],
  [4891.96981024998, 1.8489297737236e7],
  [2445.98490512499, 9244648.868618],
  [1222.992452562495, 4622324.434309],
  [611.4962262813797, 2311162.217155],
  [305.74811314055756, 1155581.108577],
  [152.87405657041106, 577790.554289],
  [76.43702828507324, 288895.277144],
  [38.21851414253662, 144447.638572],
  [19.10925707126831, 72223.819286],
  [9.554628535634155, 36111.909643],
  [4.77731426794937, 18055.954822],
  [2.388657133974685, 9027.977411],
  [1.1943285668550503, 4513.988705],
  [0.5971642835598172, 2256.994353],
  [0.29858214164761665, 1128.497176],
  [0.14929107082380833, 564.248588],
  [0.07464553541190416, 282.124294],
  [0.03732276770595208, 141.062147],
  [0.01866138385297604, 70.5310735],
].map(([resolution, scale], level) => ({ level, resolution: resolution!, scale: scale! }));

export const WEB_MERCATOR_SCHEME: TileScheme = {
  kind: 'webmercator',
  origin: { x: -WEB_MERCATOR_HALF, y: WEB_MERCATOR_HALF },
  spatialReference: { wkid: 102100, latestWkid: 3857 },
  lods: WEB_MERCATOR_LODS,
  rows: TILE_SIZE,
  cols: TILE_SIZE,
};

/** The vendor's inches per metre: scale = resolution * metres-per-unit * dpi * 39.37. */
const INCHES_PER_METRE = 39.37;

/** The native scheme of a raster (see the Decision at the top of this file). */
export function nativeScheme(info: RasterInfo): TileScheme {
  const base = Math.max(info.cellSize.x, info.cellSize.y);
  let levels = 0;
  while (Math.max(info.width, info.height) / 2 ** levels > TILE_SIZE && levels < 30) levels++;
  const metersPerUnit = info.spatialReference?.geographic ? (Math.PI * 6378137) / 180 : (info.spatialReference?.metersPerUnit ?? 1);
  const lods: Lod[] = [];
  for (let level = 0; level <= levels; level++) {
    const resolution = base * 2 ** (levels - level);
    lods.push({ level, resolution, scale: resolution * metersPerUnit * TILE_DPI * INCHES_PER_METRE });
  }
  const sr = info.spatialReference;
  return {
    kind: 'native',
    origin: { x: info.extent.xmin, y: info.extent.ymax },
    spatialReference: sr?.wkid !== undefined ? { wkid: sr.wkid, latestWkid: sr.wkid } : sr?.wkt !== undefined ? { wkt: sr.wkt } : {},
    lods,
    rows: TILE_SIZE,
    cols: TILE_SIZE,
  };
}

/** The map extent of tile (level, row, col); undefined when the level does not exist. */
export function tileExtent(scheme: TileScheme, level: number, row: number, col: number): Extent | undefined {
  const lod = scheme.lods[level];
  if (lod === undefined || !Number.isInteger(row) || !Number.isInteger(col) || row < 0 || col < 0) return undefined;
  const w = lod.resolution * scheme.cols;
  const h = lod.resolution * scheme.rows;
  const xmin = scheme.origin.x + col * w;
  const ymax = scheme.origin.y - row * h;
  return { xmin, ymin: ymax - h, xmax: xmin + w, ymax };
}

/** The range of rows and columns of `level` that touch `extent` (in the scheme's SR); undefined when none. */
export function tileRange(
  scheme: TileScheme,
  level: number,
  extent: Extent,
): { readonly minRow: number; readonly maxRow: number; readonly minCol: number; readonly maxCol: number } | undefined {
  const lod = scheme.lods[level];
  if (lod === undefined) return undefined;
  const w = lod.resolution * scheme.cols;
  const h = lod.resolution * scheme.rows;
  const eps = 1e-9 * w;
  const minCol = Math.max(0, Math.floor((extent.xmin - scheme.origin.x) / w + 1e-9));
  const maxCol = Math.floor((extent.xmax - scheme.origin.x - eps) / w);
  const minRow = Math.max(0, Math.floor((scheme.origin.y - extent.ymax) / h + 1e-9));
  const maxRow = Math.floor((scheme.origin.y - extent.ymin - eps) / h);
  if (maxCol < minCol || maxRow < minRow) return undefined;
  return { minRow, maxRow, minCol, maxCol };
}

/** Whether two extents overlap with a positive area. */
export function overlaps(a: Extent, b: Extent): boolean {
  return a.xmin < b.xmax && b.xmin < a.xmax && a.ymin < b.ymax && b.ymin < a.ymax;
}

/** The `tileInfo` object of the service's JSON for `scheme`, `format` being the tile image format. */
export function tileInfoJson(scheme: TileScheme, format: string): Record<string, unknown> {
  return {
    rows: scheme.rows,
    cols: scheme.cols,
    dpi: TILE_DPI,
    format: format.toUpperCase() === 'JPGPNG' ? 'MIXED' : format.toUpperCase(),
    compressionQuality: 75,
    origin: { x: scheme.origin.x, y: scheme.origin.y },
    spatialReference: scheme.spatialReference,
    lods: scheme.lods.map((l) => ({ level: l.level, resolution: l.resolution, scale: l.scale })),
  };
}

// ---------------------------------------------------------------------------------------------
// Rendering tiles without seams

/**
 * Where the tile endpoint's request statistics come from (Stretch with DRA or a percent clip,
 * Threshold's histogram...): the WHOLE service raster, once per (service version, rule), never a
 * tile. Decision: they are computed over the raster read at the coarsest power-of-two level whose
 * larger side is still at least STATS_SIDE pixels (the whole raster when smaller), like the
 * service's approximate statistics, so a huge raster is not read in full; every tile of every level
 * then uses the same bound parameters, so neighbouring tiles (and zoom levels) agree.
 */
export const STATS_SIDE = 2048;

/** Function nodes in post-order (inputs first), each once: the same order for the same rule at any read level. */
function functionNodes(root: RasterNode): FunctionNode[] {
  const out: FunctionNode[] = [];
  const seen = new Set<string>();
  const visit = (n: RasterNode): void => {
    if (seen.has(n.id)) return;
    seen.add(n.id);
    if (n.kind === 'function') {
      for (const i of n.inputs) visit(i);
      out.push(n);
    }
  };
  visit(root);
  return out;
}

interface ServiceBinding {
  /** The function names in post-order (to check that a graph at another level has the same shape). */
  readonly shape: readonly string[];
  /** Bound params by post-order index. */
  readonly params: ReadonlyMap<number, unknown>;
}

const bindings = new Map<string, Promise<ServiceBinding>>();
const BINDINGS_SIZE = 64;

/** The statistics level of a service (see STATS_SIDE). */
export function statisticsLevel(info: RasterInfo): number {
  let level = 0;
  while (Math.max(info.width, info.height) / 2 ** (level + 1) >= STATS_SIDE) level++;
  return level;
}

function serviceBinding(service: OpenedImageService, rule: ServiceRule): Promise<ServiceBinding> {
  const key = `${service.key}|${service.version}|${JSON.stringify(rule ?? null)}`;
  let p = bindings.get(key);
  if (p === undefined) {
    p = (async () => {
      const { root } = await planServiceRule(service, rule, statisticsLevel(service.info));
      const { bound } = await bindRequestStatistics(root, rect(0, 0, root.info.width, root.info.height));
      const nodes = functionNodes(root);
      const params = new Map<number, unknown>();
      nodes.forEach((n, i) => {
        if (Object.hasOwn(bound, n.id)) params.set(i, bound[n.id]);
      });
      return { shape: nodes.map((n) => n.fn.name), params };
    })();
    bindings.set(key, p);
    p.catch(() => bindings.delete(key));
    while (bindings.size > BINDINGS_SIZE) bindings.delete(bindings.keys().next().value!);
  }
  return p;
}

/** `root` (the rule planned at some read level) with the service-wide statistics bound. */
export async function bindServiceStatistics(service: OpenedImageService, rule: ServiceRule, root: RasterNode): Promise<RasterNode> {
  if (!needsRequestStatistics(root)) return root;
  const b = await serviceBinding(service, rule);
  const nodes = functionNodes(root);
  if (nodes.length !== b.shape.length || nodes.some((n, i) => n.fn.name !== b.shape[i])) {
    // Not the same shape at this level (should not happen): bind over this level's whole raster.
    return (await bindRequestStatistics(root, rect(0, 0, root.info.width, root.info.height))).root;
  }
  const bound: Record<string, unknown> = {};
  for (const [i, params] of b.params) bound[nodes[i]!.id] = params;
  return applyBoundParams(root, bound);
}

/** Power-of-two read level for a grid whose cells measure `cell` in the raster's units. */
function readLevel(info: RasterInfo, cell: number): number {
  const ratio = cell / Math.max(info.cellSize.x, info.cellSize.y);
  if (!(ratio >= 2)) return 0;
  const max = Math.floor(Math.log2(Math.max(info.width, info.height)));
  return Math.max(0, Math.min(max, Math.floor(Math.log2(ratio + 1e-9))));
}

/**
 * Render `rule` over `service` on `grid` with the service-wide request statistics (not the grid's):
 * what the tile endpoint draws. Holds a render slot. The block is rect (0, 0, width, height).
 */
export async function renderSeamless(
  services: ImageServices,
  service: OpenedImageService,
  rule: ServiceRule,
  grid: RenderGrid,
  signal?: AbortSignal,
  client?: string,
): Promise<{ block: PixelBlock; info: RasterInfo }> {
  const info = service.info;
  const sameSr = sameSpatialReference(grid.spatialReference, info.spatialReference);
  const e = grid.extent;
  let cell = Math.min((e.xmax - e.xmin) / grid.width, (e.ymax - e.ymin) / grid.height);
  if (!sameSr && info.spatialReference) {
    const t = transformExtent(e, grid.spatialReference, info.spatialReference);
    cell = Math.min((t.xmax - t.xmin) / grid.width, (t.ymax - t.ymin) / grid.height);
  }
  const level = readLevel(info, cell);
  const planned = await planServiceRule(service, rule, level, 'renderingRule', services.limits);
  const root = await bindServiceStatistics(service, rule, planned.root);
  const target = gridInfo(root.info, grid, sameSr);
  const node = sameSr ? alignNode(root, target, 'nearest', 'tile') : warpNode(root, grid, 'nearest');
  const slot = await services.renderSlot(signal, client);
  try {
    // Decision: a tile that got drawn is served even if the budget ran out meanwhile (the work is done).
    const block = await render(node, { rect: rect(0, 0, grid.width, grid.height), ...(signal ? { signal } : {}) });
    return { block, info: target };
  } catch (e) {
    // The evaluator stops with ABORTED whatever the reason: answer the signal's (TIMEOUT past requestTimeoutMs).
    if (signal?.aborted) throw abortError(signal);
    throw e;
  } finally {
    slot.release();
  }
}

// ---------------------------------------------------------------------------------------------
// The tile endpoint

/** `Cache-Control` max-age of tiles when the service sets none (`properties.tileMaxAge`, seconds). */
export const DEFAULT_TILE_MAX_AGE = 3600;

export type TileFormat = 'png' | 'jpgpng';

/** The service's tile settings: `properties.tileScheme` ('webmercator' | 'native'), `tileFormat`, `tileMaxAge`. */
export interface TileSettings {
  readonly scheme: 'webmercator' | 'native';
  readonly format: TileFormat;
  readonly maxAge: number;
}

const tileBad = (param: string, detail: string): EngineError =>
  new EngineError('INVALID_ARGUMENT', detail, { path: param, details: [detail] });

function schemeName(v: unknown, param: string): 'webmercator' | 'native' | undefined {
  if (v === undefined || v === '') return undefined;
  const t = typeof v === 'string' ? v.trim().toLowerCase() : '';
  if (t === 'native') return 'native';
  if (t === 'webmercator' || t === 'web-mercator' || t === '3857' || t === '102100') return 'webmercator';
  throw tileBad(param, `'${param}' must be webmercator or native.`);
}

/** Tile settings of a service (invalid properties are errors at `service.properties.<name>`). */
export function tileSettings(service: OpenedImageService, maxAgeDefault = DEFAULT_TILE_MAX_AGE): TileSettings {
  const p = service.record.properties;
  const f = p['tileFormat'];
  if (f !== undefined && f !== 'png' && f !== 'jpgpng')
    throw tileBad('service.properties.tileFormat', `'tileFormat' must be png or jpgpng.`);
  const age = p['tileMaxAge'];
  if (age !== undefined && !(typeof age === 'number' && Number.isInteger(age) && age >= 0)) {
    throw tileBad('service.properties.tileMaxAge', `'tileMaxAge' must be a whole number of seconds.`);
  }
  return {
    scheme: schemeName(p['tileScheme'], 'service.properties.tileScheme') ?? 'webmercator',
    format: (f as TileFormat | undefined) ?? 'png',
    maxAge: (age as number | undefined) ?? maxAgeDefault,
  };
}

export const schemeOf = (service: OpenedImageService, kind: 'webmercator' | 'native'): TileScheme =>
  kind === 'native' ? nativeScheme(service.info) : WEB_MERCATOR_SCHEME;

/** The ImageServer resource's tile fields (an InfoExtension of the service resource). */
export function tileInfoExtension(service: OpenedImageService): Record<string, unknown> {
  let s: TileSettings;
  try {
    s = tileSettings(service);
  } catch {
    return {};
  }
  const scheme = schemeOf(service, s.scheme);
  return { singleFusedMapCache: true, tileInfo: tileInfoJson(scheme, s.format), minLOD: 0, maxLOD: scheme.lods.length - 1 };
}

/**
 * The rule of a tile request. Decision: `renderingRule` on tiles may only name a published template
 * (bare, or `{"rasterFunction": "<name>"}` with no arguments) or `None`; absent, the service's
 * default rule. Arbitrary JSON rules would let any client fill the disk cache with one-off
 * renderings; exportImage takes them.
 */
export function tileRule(service: OpenedImageService, value: string | undefined): ServiceRule {
  const t = value?.trim() ?? '';
  if (t === '') return resolveServiceRule(service, undefined);
  let name = t;
  if (t.startsWith('{')) {
    let o: unknown;
    try {
      o = JSON.parse(t);
    } catch {
      throw tileBad('renderingRule', `'renderingRule' is not valid JSON.`);
    }
    const keys = o !== null && typeof o === 'object' ? Object.keys(o) : [];
    const fn = (o as Record<string, unknown> | null)?.['rasterFunction'];
    if (typeof fn !== 'string' || keys.some((k) => k !== 'rasterFunction' && k !== 'name')) name = '';
    else name = fn;
  }
  if (name.toLowerCase() === 'none') return undefined;
  if (name === '' || !service.templates.get(name)) {
    throw tileBad('renderingRule', `'renderingRule' on tiles must name a published raster function template of this service (or None).`);
  }
  return resolveServiceRule(service, name);
}

let transparent: Uint8Array | undefined;
/** A fully transparent 256x256 PNG (tiles outside the raster). */
export function transparentTile(): Uint8Array {
  if (transparent === undefined) {
    const n = TILE_SIZE * TILE_SIZE;
    const block: PixelBlock = {
      rect: rect(0, 0, TILE_SIZE, TILE_SIZE),
      pixelType: 'U8',
      bands: [new Uint8Array(n), new Uint8Array(n), new Uint8Array(n), new Uint8Array(n)],
      mask: new Uint8Array(n).fill(1),
    };
    const info: RasterInfo = {
      width: TILE_SIZE,
      height: TILE_SIZE,
      bandCount: 4,
      pixelType: 'U8',
      extent: { xmin: 0, ymin: 0, xmax: 1, ymax: 1 },
      cellSize: { x: 1, y: 1 },
    };
    transparent = encodePng(block, info);
  }
  return transparent;
}

/** Encode a rendered tile: 8-bit for display (the service's statistics), PNG, or JPEG for jpgpng when no pixel is masked. */
export function encodeTile(
  block: PixelBlock,
  info: RasterInfo,
  service: OpenedImageService,
  rule: ServiceRule,
  format: TileFormat,
): { bytes: Uint8Array; ext: 'png' | 'jpg' } {
  const stats =
    info.statistics && info.statistics.length === info.bandCount ? info.statistics : rule === undefined ? service.statistics : undefined;
  const display = toDisplayBlock(block, stats);
  const outInfo: RasterInfo = { ...info, pixelType: 'U8', ...(display === block ? {} : { noData: undefined }) };
  if (
    format === 'jpgpng' &&
    display.mask.indexOf(0) < 0 &&
    (display.bands.length === 1 || display.bands.length === 3) &&
    info.colormap === undefined
  ) {
    return { bytes: encodeAs('jpeg', display, outInfo, { quality: 75 }), ext: 'jpg' };
  }
  return { bytes: encodeAs('png', display, outInfo), ext: 'png' };
}

const tileResponse = (req: Request, bytes: Uint8Array, etag: string, type: string, cacheControl: string): Response => {
  const headers = new Headers({ etag, 'cache-control': cacheControl, 'content-type': type });
  if (matchesIfNoneMatch(req.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers });
  headers.set('content-length', String(bytes.byteLength));
  return new Response(Buffer.from(bytes), { status: 200, headers });
};

export interface TileHandlerOptions {
  readonly cache: TileCache;
  /** max-age when the service sets no `tileMaxAge`. */
  readonly maxAge?: number;
}

/**
 * `.../ImageServer/tile/{level}/{row}/{col}`: a 256 px tile of the service's scheme (see
 * `tileSettings`; `?tileScheme=native|webmercator` overrides the service's), rendering the
 * service's default rule or a published template with service-wide statistics, cached on disk.
 *
 * - A level, row or column outside the scheme: HTTP 404. A tile of the scheme that does not touch
 *   the raster: Decision: a transparent 256x256 PNG (200), which OpenLayers draws without logging
 *   errors or retrying, and which clients cache like any tile.
 * - `ETag` is the tile bytes' hash; `If-None-Match` -> 304. `Cache-Control: public, max-age=<n>` for
 *   an anonymous service; Decision: `private, max-age=<n>` for a secured one, so shared caches
 *   never hand a secured tile to a caller without a token.
 * - The cache key holds the service record's hash: an edit of the service (its rule, templates,
 *   path...) gives new tiles and ETags, and the stale generation is deleted on the next request.
 */
export function tileHandler(deps: ImageDeps, services: ImageServices, options: TileHandlerOptions) {
  const inFlight = new Map<string, Promise<CachedTile & { ext: string }>>();
  return withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    let opened;
    try {
      opened = await openRequestedService(deps, services, req, params);
    } catch (e) {
      const path = servicePathOf(req);
      if (e instanceof EngineError && e.code === 'NOT_FOUND' && path) {
        // The service is gone: so is its cache.
        await options.cache.dropService(serviceKey({ folder: path.folder, serviceName: path.name, type: 'ImageServer' }));
      }
      throw e;
    }
    const { service, path, caller } = opened;
    const m = /^tile\/(\d{1,3})\/(\d{1,10})\/(\d{1,10})$/.exec(path.rest);
    const notFound = (): TransportError => new TransportError(404, 'NOT_FOUND', 'no such tile', { details: ['Tile not found.'] });
    if (!m) throw notFound();
    const [level, row, col] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const settings = tileSettings(service, options.maxAge);
    const kind = schemeName(params.get('tileScheme'), 'tileScheme') ?? settings.scheme;
    const scheme = schemeOf(service, kind);
    const extent = tileExtent(scheme, level, row, col);
    const span = scheme.lods[level] ? Math.round((2 * WEB_MERCATOR_HALF) / (scheme.lods[level]!.resolution * TILE_SIZE)) : 0;
    if (!extent || (kind === 'webmercator' && (row >= span || col >= span))) throw notFound();
    const rule = tileRule(service, params.get('renderingRule'));
    const cacheControl = `${service.settings.anonymous ? 'public' : 'private'}, max-age=${settings.maxAge}`;
    const rasterSr = service.info.spatialReference ?? {};
    const gridSr = kind === 'native' ? rasterSr : { wkid: 3857 };
    const footprint = sameSpatialReference(gridSr, rasterSr) ? service.info.extent : transformExtent(service.info.extent, rasterSr, gridSr);
    if (!overlaps(extent, footprint)) {
      const bytes = transparentTile();
      return tileResponse(req, bytes, etagOf(bytes), 'image/png', cacheControl);
    }
    const address = {
      serviceKey: service.key,
      serviceHash: service.version.replace(/[^A-Za-z0-9_-]/g, '_'),
      ruleHash: ruleHash({ rule: rule ?? null, scheme: kind, format: settings.format }),
      level,
      row,
      col,
    };
    for (const ext of settings.format === 'jpgpng' ? ['png', 'jpg'] : ['png']) {
      const hit = await options.cache.get({ ...address, ext });
      if (hit) return tileResponse(req, hit.bytes, hit.etag, ext === 'jpg' ? 'image/jpeg' : 'image/png', cacheControl);
    }
    // Clients asking for the same missing tile at once share one render (web maps of several
    // users open on the same view). Decision: the shared render is not aborted by one client's
    // hang-up, since others wait for it; it ends by itself and fills the cache. It keeps the time
    // budget (requestTimeoutMs) and counts against the client that started it.
    const flightKey = JSON.stringify(address);
    let flight = inFlight.get(flightKey);
    if (flight === undefined) {
      const client = services.clientOf(req, caller);
      flight = (async () => {
        const grid = { spatialReference: gridSr, extent, width: TILE_SIZE, height: TILE_SIZE };
        const budget = budgetSignal(services.limits);
        let image: { block: PixelBlock; info: RasterInfo };
        try {
          image = await renderSeamless(services, service, rule, grid, budget.signal, client);
        } finally {
          budget.dispose();
        }
        const { bytes, ext } = encodeTile(image.block, image.info, service, rule, settings.format);
        return { ...(await options.cache.put({ ...address, ext }, bytes)), ext };
      })();
      inFlight.set(flightKey, flight);
      void flight.finally(() => inFlight.delete(flightKey)).catch(() => undefined);
    }
    const stored = await flight;
    return tileResponse(req, stored.bytes, stored.etag, stored.ext === 'jpg' ? 'image/jpeg' : 'image/png', cacheControl);
  });
}

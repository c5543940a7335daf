/**
 * The map service's tile cache: tiles of the service's fixed scales (`MapService.tiling`), drawn on
 * demand and kept on disk in the vendor's exploded layout
 *
 *     <cacheDir>/_alllayers/L{level:02d}/R{row:08x}/C{col:08x}.{png|jpg}     (the fused map cache)
 *     <cacheDir>/<layerId>/L{level:02d}/R{row:08x}/C{col:08x}.{png|jpg}      (one layer's cache)
 *
 * - A tile is the map drawn for the tile's extent: x from `origin.x + col * cols * res`, y down
 *   from `origin.y - row * rows * res`, `cols x rows` pixels at the level's resolution `res`.
 * - Files are written to a temporary name and renamed, so a reader never sees half a tile. Requests
 *   for a tile being drawn wait for that one drawing (one in-flight drawing per file). At most
 *   `concurrency` tiles are drawn at once and at most `maxQueued` more wait for a turn (the site's
 *   `maxQueuedRenders`), the waiting ones served round-robin across clients (limits.ts
 *   `createFairSemaphore`); one client may have `maxPerClient` drawings running or waiting (the
 *   site's `maxRendersPerClient`). A request that needs one drawing more than that is answered
 *   SERVER_BUSY at once. Tiles on disk are served without waiting, and a request joining a drawing
 *   in progress or queued takes no place in the queue.
 * - A request stops waiting when its signal aborts (client gone, time budget spent: the signal's
 *   reason is thrown). A drawing that no request waits for any more is dropped from the queue, or
 *   aborted while it runs, so a disconnected client stops its work; one that others still wait
 *   for goes on and fills the cache.
 * - PNG tiles are deflated on the thread pool (node:zlib's asynchronous deflate), so the event loop
 *   serves other requests meanwhile; the bytes are those `encodeTileImage` writes.
 * - `cacheDir` belongs to one service version (the service registry puts it under the version), and
 *   a marker file `conf.json` in it names the service and version: a folder whose marker names
 *   another version is emptied before use, and on first use of a version the folders of the same
 *   service's other versions (siblings of the cache folder, or of its parent when the version is a
 *   folder above it) are deleted. Only folders carrying this service's marker are ever deleted, so a
 *   change of the layout can never delete other data. A service change therefore never serves old tiles.
 *
 * Decision: every layer has a layer cache (any layer can be drawn alone at the cache's scales); its
 * cache name is the layer id (the vendor names a layer cache after its layer, but names repeat and
 * hold characters that are unsafe in paths; ids are unique and stable). The fused cache's name is
 * `_alllayers`, as the vendor's.
 *
 * Decision: tiles asked for in another format than the cache's (GetMapTile's `Format`) are drawn and
 * kept apart, under `<cacheDir>/_formats/<format>/...`, so the exploded cache holds the cache format
 * only and its virtual directory serves exactly what TileImageInfo says.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { EngineError, invalidArgument } from '../../core/errors.js';
import type { Extent, PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { rect } from '../../core/rect.js';
import { encodeJpeg } from '../../io/encode-jpeg.js';
import { encodeIndexedPng, encodePng, encodePngAsync } from '../../io/encode-png.js';
import { imageServicesOf } from '../image/service.js';
import { etagOf } from '../image/tile-cache.js';
import type { DrawnMap } from './view.js';
import { abortError, createFairSemaphore, throwIfAborted } from '../limits.js';
import { limitsOf, SITE_LIMITS, type SiteDeps } from '../site.js';
import { drawMap, type DrawMapOptions } from './draw.js';
import type { LevelOfDetail, MapService, TileScheme } from './model.js';

/** The fused cache's folder (and cache) name, as the vendor's. */
export const FUSED_CACHE_NAME = '_alllayers';
/** The marker file in a cache folder: `{ service, version }`. */
export const CACHE_MARKER = 'conf.json';
/** Tiles drawn at once per site when not configured: the machine's cores are shared with everything else. */
export const DEFAULT_TILE_CONCURRENCY = 2;

/** How a tile is encoded. `png` = RGBA when any pixel is not opaque, else RGB. */
export type TileEncoding = 'png' | 'png8' | 'png24' | 'png32' | 'jpeg' | 'mixed';

/** The encoding of a scheme's cache format. */
export function cacheEncoding(scheme: Pick<TileScheme, 'format'>): TileEncoding {
  return scheme.format === 'JPEG' ? 'jpeg' : scheme.format === 'MIXED' ? 'mixed' : 'png';
}

const FORMAT_NAMES: Readonly<Record<string, TileEncoding>> = {
  png: 'png',
  png8: 'png8',
  png24: 'png24',
  png32: 'png32',
  jpg: 'jpeg',
  jpeg: 'jpeg',
  mixed: 'mixed',
};

/**
 * The encoding a request's `Format` asks for: absent or empty = the cache's; `png`, `PNG8`,
 * `PNG24`, `PNG32`, `jpg`/`JPEG`, `MIXED` (any case). Anything else is INVALID_ARGUMENT at `path`.
 */
export function tileEncodingOf(format: string | undefined, scheme: Pick<TileScheme, 'format'>, path = 'Format'): TileEncoding {
  const t = format?.trim() ?? '';
  if (t === '') return cacheEncoding(scheme);
  const e = FORMAT_NAMES[t.toLowerCase()];
  if (e === undefined) throw invalidArgument(path, `Format '${t}' is not a tile format: use PNG, PNG8, PNG24, PNG32, JPEG or MIXED.`);
  return e;
}

// ---------------------------------------------------------------------------------------------
// The scheme's geometry

/** The level of detail `level` (by its LevelID), or undefined. */
export const lodOf = (scheme: Pick<TileScheme, 'lods'>, level: number): LevelOfDetail | undefined =>
  scheme.lods.find((l) => l.level === level);

/** The map extent of tile (level, row, col) of `scheme`; undefined when the level does not exist. */
export function tileExtent(scheme: TileScheme, level: number, row: number, col: number): Extent | undefined {
  const lod = lodOf(scheme, level);
  if (lod === undefined) return undefined;
  const w = lod.resolution * scheme.cols;
  const h = lod.resolution * scheme.rows;
  const xmin = scheme.origin.x + col * w;
  const ymax = scheme.origin.y - row * h;
  return { xmin, ymin: ymax - h, xmax: xmin + w, ymax };
}

/**
 * Whether [tmin, tmax) meets [fmin, fmax] (a degenerate [f, f] included) by more than rounding: an
 * overlap thinner than a billionth of the tile does not count, so a full extent whose edge falls on
 * a tile boundary (level 0 of the default schemes) does not gain a row or column of slivers.
 */
function meets(tmin: number, tmax: number, fmin: number, fmax: number): boolean {
  const eps = (tmax - tmin) * 1e-9;
  if (fmax - fmin <= eps) return tmin - eps <= fmin && fmin < tmax - eps;
  return tmin < fmax - eps && fmin < tmax - eps;
}

/**
 * The extent of tile (level, row, col) when it belongs to the cache, else undefined. Decision: the
 * cache's tiles are those of the scheme's levels, with row and column >= 0 (down and right from
 * the origin), that meet the map's full extent — the vendor's cache extent; tiles beyond it are
 * "not found" (a client's map shows them empty) rather than drawn empty and stored.
 */
export function cacheTileExtent(
  service: Pick<MapService, 'tiling' | 'fullExtent'>,
  level: number,
  row: number,
  col: number,
): Extent | undefined {
  if (![level, row, col].every((v) => Number.isSafeInteger(v) && v >= 0)) return undefined;
  const e = tileExtent(service.tiling, level, row, col);
  if (e === undefined) return undefined;
  const f = service.fullExtent;
  return meets(e.xmin, e.xmax, f.xmin, f.xmax) && meets(e.ymin, e.ymax, f.ymin, f.ymax) ? e : undefined;
}

/** The rows and columns of `level` whose tiles belong to the cache (see cacheTileExtent); undefined when the level does not exist. */
export function cacheTileRange(
  service: Pick<MapService, 'tiling' | 'fullExtent'>,
  level: number,
): { readonly minRow: number; readonly maxRow: number; readonly minCol: number; readonly maxCol: number } | undefined {
  const s = service.tiling;
  const lod = lodOf(s, level);
  if (lod === undefined) return undefined;
  const w = lod.resolution * s.cols;
  const h = lod.resolution * s.rows;
  const f = service.fullExtent;
  // The same tolerance as `meets`.
  const minCol = Math.max(0, Math.floor((f.xmin - s.origin.x) / w + 1e-9));
  const maxCol = f.xmax - f.xmin <= w * 1e-9 ? minCol : Math.ceil((f.xmax - s.origin.x) / w - 1e-9) - 1;
  const minRow = Math.max(0, Math.floor((s.origin.y - f.ymax) / h + 1e-9));
  const maxRow = f.ymax - f.ymin <= h * 1e-9 ? minRow : Math.ceil((s.origin.y - f.ymin) / h - 1e-9) - 1;
  if (maxCol < minCol || maxRow < minRow) return undefined;
  return { minRow, maxRow, minCol, maxCol };
}

/** The vendor's exploded names: `L05`, `R0000001a`, `C000000ff`. */
export const levelFolder = (level: number): string => `L${String(level).padStart(2, '0')}`;
export const rowFolder = (row: number): string => `R${row.toString(16).padStart(8, '0')}`;
export const columnFile = (col: number, ext: string): string => `C${col.toString(16).padStart(8, '0')}.${ext}`;

/** Parses `L05` / `R0000001a` / `C000000ff.png` back (undefined when a name is not one of these). */
export function parseTilePath(
  l: string,
  r: string,
  c: string,
): { readonly level: number; readonly row: number; readonly col: number; readonly ext: 'png' | 'jpg' } | undefined {
  const lm = /^L(\d{2,3})$/.exec(l);
  const rm = /^R([0-9a-fA-F]{8})$/.exec(r);
  const cm = /^C([0-9a-fA-F]{8})\.(png|jpg)$/.exec(c);
  if (!lm || !rm || !cm) return undefined;
  return { level: Number(lm[1]), row: parseInt(rm[1]!, 16), col: parseInt(cm[1]!, 16), ext: cm[2] as 'png' | 'jpg' };
}

/** The cache name of the fused cache (layerId undefined or -1) or of a layer's cache. */
export const cacheNameOf = (layerId?: number): string => (layerId === undefined || layerId === -1 ? FUSED_CACHE_NAME : String(layerId));

/**
 * The service's cache folder name, as the vendor names it under its cache directory:
 * `<folder>_<service>` (`<service>` in the root folder).
 */
export const cacheFolderName = (service: Pick<MapService, 'folder' | 'serviceName'>): string =>
  service.folder ? `${service.folder}_${service.serviceName}` : service.serviceName;

// ---------------------------------------------------------------------------------------------
// Encoding

const PNG_OPTIONS = { filter: 'up', deflateLevel: 6 } as const;

const infoOf = (width: number, height: number, bands: number): RasterInfo => ({
  width,
  height,
  bandCount: bands,
  pixelType: 'U8',
  extent: { xmin: 0, ymin: 0, xmax: width, ymax: height },
  cellSize: { x: 1, y: 1 },
});

/** Interleaved RGBA as a U8 block of `bands` planes (3: alpha composited over `matte`). */
function planes(rgba: Uint8Array, width: number, height: number, bands: 3 | 4, matte: readonly [number, number, number]): PixelBlock {
  const n = width * height;
  const out = [new Uint8Array(n), new Uint8Array(n), new Uint8Array(n)];
  const [r, g, b] = out as [Uint8Array, Uint8Array, Uint8Array];
  const a = bands === 4 ? new Uint8Array(n) : undefined;
  const [mr, mg, mb] = matte;
  for (let i = 0, o = 0; i < n; i++, o += 4) {
    const alpha = rgba[o + 3]!;
    if (a) {
      r[i] = rgba[o]!;
      g[i] = rgba[o + 1]!;
      b[i] = rgba[o + 2]!;
      a[i] = alpha;
    } else if (alpha === 255) {
      r[i] = rgba[o]!;
      g[i] = rgba[o + 1]!;
      b[i] = rgba[o + 2]!;
    } else {
      // Straight (not premultiplied) RGBA over an opaque matte.
      const k = 255 - alpha;
      r[i] = (rgba[o]! * alpha + mr * k + 127) / 255;
      g[i] = (rgba[o + 1]! * alpha + mg * k + 127) / 255;
      b[i] = (rgba[o + 2]! * alpha + mb * k + 127) / 255;
    }
  }
  return { rect: rect(0, 0, width, height), pixelType: 'U8', bands: a ? [r, g, b, a] : [r, g, b], mask: new Uint8Array(n).fill(1) };
}

function opaque(rgba: Uint8Array): boolean {
  for (let o = 3; o < rgba.length; o += 4) if (rgba[o] !== 255) return false;
  return true;
}

export interface EncodedTile {
  readonly bytes: Uint8Array;
  readonly ext: 'png' | 'jpg';
  readonly contentType: 'image/png' | 'image/jpeg';
}

/**
 * Encode a drawn tile (straight RGBA, `width x height`). `matte` is the colour translucent pixels
 * are composited over where the encoding has no alpha (JPEG, PNG24). `MIXED` is JPEG when every
 * pixel is opaque, else PNG (as the vendor's mixed caches: JPEG inside the data, PNG at its edges).
 */
export function encodeTileImage(
  rgba: Uint8Array,
  width: number,
  height: number,
  encoding: TileEncoding,
  quality: number,
  matte: readonly [number, number, number],
): EncodedTile {
  if (rgba.length !== width * height * 4) {
    throw new EngineError('INTERNAL', `a drawn tile holds ${rgba.length} bytes, not ${width} x ${height} x 4`);
  }
  const isOpaque = encoding === 'png' || encoding === 'mixed' ? opaque(rgba) : false;
  if (encoding === 'jpeg' || (encoding === 'mixed' && isOpaque)) {
    const bytes = encodeJpeg(planes(rgba, width, height, 3, matte), infoOf(width, height, 3), { quality });
    return { bytes, ext: 'jpg', contentType: 'image/jpeg' };
  }
  if (encoding === 'png8') return { bytes: encodeIndexedPng(rgba, width, height), ext: 'png', contentType: 'image/png' };
  const bands = encoding === 'png24' || (encoding === 'png' && isOpaque) ? 3 : 4;
  const bytes = encodePng(planes(rgba, width, height, bands, matte), infoOf(width, height, bands), PNG_OPTIONS);
  return { bytes, ext: 'png', contentType: 'image/png' };
}

/**
 * `encodeTileImage`, with the deflate of PNG tiles (PNG, PNG24, PNG32, MIXED at the data's edges) on
 * the thread pool: the same bytes, without holding the event loop for the compression.
 */
export async function encodeTileImageAsync(
  rgba: Uint8Array,
  width: number,
  height: number,
  encoding: TileEncoding,
  quality: number,
  matte: readonly [number, number, number],
): Promise<EncodedTile> {
  if (rgba.length !== width * height * 4 || encoding === 'jpeg' || encoding === 'png8') {
    return encodeTileImage(rgba, width, height, encoding, quality, matte);
  }
  const isOpaque = encoding === 'png' || encoding === 'mixed' ? opaque(rgba) : false;
  if (encoding === 'mixed' && isOpaque) return encodeTileImage(rgba, width, height, encoding, quality, matte);
  const channels = encoding === 'png24' || (encoding === 'png' && isOpaque) ? 3 : 4;
  const bytes = await encodePngAsync(planes(rgba, width, height, channels, matte), infoOf(width, height, channels), PNG_OPTIONS);
  return { bytes, ext: 'png', contentType: 'image/png' };
}

/** The colour under translucent pixels where a format has no alpha: the map's background, white when that is transparent. */
export function matteOf(service: Pick<MapService, 'backgroundColor'>): [number, number, number] {
  const [r, g, b, a] = service.backgroundColor;
  return a > 0 ? [r, g, b] : [255, 255, 255];
}

// ---------------------------------------------------------------------------------------------
// The cache

/** What the renderer draws: one tile of the fused cache (no layerId) or of one layer's cache. */
export interface TileDrawRequest {
  readonly level: number;
  readonly row: number;
  readonly col: number;
  /** Draw only this layer (a layer cache); undefined: the whole map. */
  readonly layerId?: number;
  readonly extent: Extent;
  /** Pixels: the scheme's cols and rows. */
  readonly width: number;
  readonly height: number;
  readonly dpi: number;
  /** The level's scale and resolution (map units per pixel). */
  readonly scale: number;
  readonly resolution: number;
}

/** Draws a tile: straight RGBA bytes, `width x height x 4`, rows top-down. */
export type RenderTile = (service: MapService, tile: TileDrawRequest, signal?: AbortSignal) => Promise<Uint8Array>;

export interface TileRequest {
  readonly level: number;
  readonly row: number;
  readonly col: number;
  /** A layer's cache; undefined (or -1) the fused map cache. */
  readonly layerId?: number;
  /** Request format (GetMapTile's `Format`); undefined the cache format. */
  readonly format?: string;
  /**
   * Who asks (limits.ts `clientKey`): a drawing is counted against the client whose request started
   * it (the queue serves clients in turn); undefined: one anonymous client.
   */
  readonly client?: string;
}

export interface MapTile extends EncodedTile {
  /** Quoted strong validator of the bytes. */
  readonly etag: string;
  /** Whether the tile came from disk (false: drawn for this request or a request it joined). */
  readonly hit: boolean;
}

export interface MapTileCacheOptions {
  /** Draws tiles (default: the map drawing of draw.ts, installed by `mapTileCachesOf`). */
  readonly render: RenderTile;
  /** Tiles drawn at once (default DEFAULT_TILE_CONCURRENCY). */
  readonly concurrency?: number;
  /** Drawings that may wait for a turn; one more is SERVER_BUSY (default the site's `maxQueuedRenders` default). */
  readonly maxQueued?: number;
  /** Drawings one client (`TileRequest.client`) may have running or waiting; one more is SERVER_BUSY (default no limit). */
  readonly maxPerClient?: number;
}

export interface MapTileCache {
  /**
   * The tile's bytes: from disk, else drawn, stored and returned. Errors: NOT_FOUND "Tile not
   * found." for a tile outside the cache; NOT_FOUND for an unknown layer; INVALID_ARGUMENT (path
   * `Format`) for an unknown format.
   */
  tile(service: MapService, request: TileRequest, signal?: AbortSignal): Promise<MapTile>;
  /**
   * Tiles drawn and served from disk since start; draws running now and the most at once; drawings
   * waiting for a turn now; requests answered SERVER_BUSY; drawings dropped or aborted because no
   * request waited for them any more.
   */
  stats(): {
    readonly draws: number;
    readonly hits: number;
    readonly running: number;
    readonly peak: number;
    readonly queued: number;
    readonly busy: number;
    readonly abandoned: number;
  };
}

/** NOT_FOUND "Tile not found." with the address in the details. */
export function tileNotFound(request: TileRequest): EngineError {
  const where = `Level=${request.level} Row=${request.row} Column=${request.col}`;
  return new EngineError('NOT_FOUND', 'Tile not found.', {
    details: [request.layerId !== undefined && request.layerId !== -1 ? `LayerID=${request.layerId} ${where}` : where],
  });
}

/** The layer a layer cache belongs to; NOT_FOUND for an id that is no layer of the map. */
export function cachedLayer(service: MapService, layerId: number, path = 'LayerID'): number {
  const l = service.byId(layerId);
  if (l === undefined) throw new EngineError('NOT_FOUND', `Layer ${layerId} does not exist in map '${service.mapName}'.`, { path });
  if (l.kind === 'table') {
    throw new EngineError('NOT_FOUND', `${layerId} is a standalone table of map '${service.mapName}': only layers have a layer cache.`, {
      path,
    });
  }
  return layerId;
}

interface Marker {
  readonly service: string;
  readonly version: string;
}

async function readMarker(dir: string): Promise<Marker | undefined> {
  try {
    const m = JSON.parse(await readFile(join(dir, CACHE_MARKER), 'utf8')) as Partial<Marker>;
    return typeof m.service === 'string' && typeof m.version === 'string' ? { service: m.service, version: m.version } : undefined;
  } catch {
    return undefined;
  }
}

async function subfolders(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => join(dir, d.name));
  } catch {
    return [];
  }
}

/**
 * Prepare `service`'s cache folder: empty it when its marker names another version, write the
 * marker, and delete the same service's cache folders of other versions (see the file comment).
 */
export async function prepareCacheDir(service: Pick<MapService, 'name' | 'version' | 'tiling'>): Promise<void> {
  const dir = service.tiling.cacheDir;
  const mine = await readMarker(dir);
  if (mine && (mine.service !== service.name || mine.version !== service.version)) await rm(dir, { recursive: true, force: true });
  if (!mine || mine.version !== service.version || mine.service !== service.name) {
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `${CACHE_MARKER}.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(tmp, JSON.stringify({ service: service.name, version: service.version }));
    await rename(tmp, join(dir, CACHE_MARKER));
  }
  const parent = dirname(dir);
  const candidates = [
    ...(await subfolders(parent)),
    ...(await subfolders(dirname(parent))).filter((d) => d !== parent).map((d) => join(d, basename(dir))),
  ];
  await Promise.all(
    candidates
      .filter((d) => d !== dir)
      .map(async (d) => {
        const m = await readMarker(d);
        if (m && m.service === service.name && m.version !== service.version)
          await rm(d, { recursive: true, force: true }).catch(() => undefined);
      }),
  );
}

async function readIfExists(path: string): Promise<Uint8Array | undefined> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw new EngineError('IO_ERROR', `cannot read a cached tile: ${(e as Error).message}`, { cause: e });
  }
}

const CONTENT_TYPE = { png: 'image/png', jpg: 'image/jpeg' } as const;

/** `p`, or the abort reason of `signal` (abortError) as soon as it aborts (`p` goes on). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}

/** One tile being drawn (or waiting for a turn), shared by the requests that wait for it. */
interface Flight {
  readonly stem: string;
  promise: Promise<EncodedTile & { etag: string }>;
  /** Requests waiting for it now. */
  waiters: number;
  settled: boolean;
  /** Aborted when no request waits any more: leaves the queue, or stops the drawing. */
  readonly controller: AbortController;
}

/** A tile cache over `render`. Most callers want `mapTileCachesOf(deps)`, the site's shared one. */
export function createMapTileCache(options: MapTileCacheOptions): MapTileCache {
  const slots = createFairSemaphore({
    maxRunning: Math.max(1, options.concurrency ?? DEFAULT_TILE_CONCURRENCY),
    maxQueued: Math.max(0, options.maxQueued ?? SITE_LIMITS.maxQueuedRenders),
    maxPerClient: options.maxPerClient ?? Infinity,
    names: { running: 'maxRenders', queued: 'maxQueuedRenders', perClient: 'maxRendersPerClient' },
    what: 'map tiles',
  });
  const inFlight = new Map<string, Flight>();
  const prepared = new Map<string, Promise<void>>();
  let draws = 0;
  let hits = 0;
  let busy = 0;
  let abandoned = 0;

  /** No request waits for `f` any more: it leaves the queue, or its drawing is aborted. */
  const abandon = (f: Flight): void => {
    if (f.settled) return;
    abandoned++;
    if (inFlight.get(f.stem) === f) inFlight.delete(f.stem);
    f.controller.abort(new EngineError('ABORTED', 'no request waits for this tile any more'));
  };

  const prepare = (service: MapService): Promise<void> => {
    const key = `${service.tiling.cacheDir}\n${service.name}\n${service.version}`;
    let p = prepared.get(key);
    if (p === undefined) {
      p = prepareCacheDir(service);
      prepared.set(key, p);
      p.catch(() => prepared.delete(key));
    }
    return p;
  };

  return {
    async tile(service, request, signal) {
      throwIfAborted(signal);
      const layerId = request.layerId === -1 ? undefined : request.layerId;
      if (layerId !== undefined) cachedLayer(service, layerId);
      const scheme = service.tiling;
      const encoding = tileEncodingOf(request.format, scheme);
      const extent = cacheTileExtent(service, request.level, request.row, request.col);
      const lod = lodOf(scheme, request.level);
      if (extent === undefined || lod === undefined) throw tileNotFound(request);
      await prepare(service);
      const base = encoding === cacheEncoding(scheme) ? scheme.cacheDir : join(scheme.cacheDir, '_formats', encoding);
      const stem = join(base, cacheNameOf(layerId), levelFolder(request.level), rowFolder(request.row), columnFile(request.col, ''));
      const exts: readonly ('png' | 'jpg')[] = encoding === 'mixed' ? ['jpg', 'png'] : encoding === 'jpeg' ? ['jpg'] : ['png'];
      if (!inFlight.has(stem)) {
        for (const ext of exts) {
          const bytes = await readIfExists(stem + ext);
          if (bytes) {
            hits++;
            return { bytes, ext, contentType: CONTENT_TYPE[ext], etag: etagOf(bytes), hit: true };
          }
        }
      }
      throwIfAborted(signal);
      // Clients asking for the same missing tile at once share one drawing, which takes its turn
      // (and its place in the queue) for the first of them.
      let flight = inFlight.get(stem);
      if (flight === undefined) {
        const f: Flight = { stem, promise: Promise.resolve() as never, waiters: 0, settled: false, controller: new AbortController() };
        const drawSignal = f.controller.signal;
        f.promise = (async () => {
          const slot = await slots.acquire(request.client ?? 'anonymous', drawSignal);
          try {
            throwIfAborted(drawSignal);
            draws++;
            const rgba = await options.render(
              service,
              {
                level: request.level,
                row: request.row,
                col: request.col,
                ...(layerId !== undefined ? { layerId } : {}),
                extent,
                width: scheme.cols,
                height: scheme.rows,
                dpi: scheme.dpi,
                scale: lod.scale,
                resolution: lod.resolution,
              },
              drawSignal,
            );
            throwIfAborted(drawSignal);
            const encoded = await encodeTileImageAsync(rgba, scheme.cols, scheme.rows, encoding, scheme.quality, matteOf(service));
            const path = stem + encoded.ext;
            try {
              await mkdir(dirname(path), { recursive: true });
              const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
              await writeFile(tmp, encoded.bytes);
              await rename(tmp, path);
            } catch (e) {
              throw new EngineError('IO_ERROR', `cannot store a tile: ${(e as Error).message}`, { cause: e });
            }
            return { ...encoded, etag: etagOf(encoded.bytes) };
          } finally {
            slot.release();
          }
        })();
        inFlight.set(stem, f);
        void f.promise
          .finally(() => {
            f.settled = true;
            if (inFlight.get(stem) === f) inFlight.delete(stem);
          })
          .catch(() => undefined);
        flight = f;
      }
      const f = flight;
      f.waiters++;
      try {
        const t = await untilAborted(f.promise, signal);
        return { ...t, hit: false };
      } catch (e) {
        if (e instanceof EngineError && e.code === 'SERVER_BUSY') busy++;
        throw e;
      } finally {
        f.waiters--;
        if (f.waiters === 0) abandon(f);
      }
    },
    stats: () => {
      const s = slots.stats();
      return { draws, hits, running: s.running, peak: s.peak, queued: s.queued, busy, abandoned };
    },
  };
}

const shared = new WeakMap<object, MapTileCache>();

/** The drawn map of a tile: its extent in the map's SR at the level's scale, `cols x rows` pixels. */
export function tileDrawnMap(service: Pick<MapService, 'spatialReference'>, t: TileDrawRequest): DrawnMap {
  return {
    extent: t.extent,
    spatialReference: service.spatialReference,
    width: t.width,
    height: t.height,
    dpi: t.dpi,
    scale: t.scale,
    resolution: t.resolution,
  };
}

/**
 * Tiles drawn by the map drawing (draw.ts `drawMap`, raster layers through the image service
 * engine). A fused tile is the map as ExportMapImage draws it with the default layer visibility at
 * the level's scale. Decision: a layer tile draws that one layer (visible whatever its default
 * visibility; its scale range still applies) over a transparent background, so layer tiles overlay
 * one another as the vendor's layer caches do.
 */
export function drawTileRenderer(deps: Pick<SiteDeps, 'store' | 'log'>): RenderTile {
  return async (service, t, signal) => {
    const single = t.layerId;
    const options: DrawMapOptions = {
      ...(single !== undefined
        ? { layers: new Map(service.layers.map((l) => [l.id, { visible: l.id === single }])), backgroundColor: [0, 0, 0, 0] }
        : {}),
      ...(signal ? { signal } : {}),
    };
    const image = await drawMap(imageServicesOf(deps), service, tileDrawnMap(service, t), options);
    return new Uint8Array(image.rgba.buffer, image.rgba.byteOffset, image.rgba.byteLength);
  };
}

/**
 * The tile cache every map operation and route of a site shares (one in-flight map, one drawing
 * limit, one queue), keyed by the site's store. The first caller's options win. Unless they say
 * otherwise: DEFAULT_TILE_CONCURRENCY tiles drawn at once (fewer when the site's `maxRenders` is
 * lower), the queue bounded by `maxQueuedRenders`, a client's drawings by `maxRendersPerClient`.
 */
export function mapTileCachesOf(
  deps: Pick<SiteDeps, 'store' | 'log'> & Partial<Pick<SiteDeps, 'config'>>,
  options?: Partial<MapTileCacheOptions>,
): MapTileCache {
  let c = shared.get(deps.store);
  if (!c) {
    const limits = limitsOf(deps.config);
    c = createMapTileCache({
      concurrency: Math.min(DEFAULT_TILE_CONCURRENCY, limits.maxRenders),
      maxQueued: limits.maxQueuedRenders,
      maxPerClient: limits.maxRendersPerClient,
      ...options,
      render: options?.render ?? drawTileRenderer(deps),
    });
    shared.set(deps.store, c);
  }
  return c;
}

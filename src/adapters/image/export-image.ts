/**
 * `exportImage` (GET or POST `.../ImageServer/exportImage`): an image of an extent at a size, after
 * an optional rendering rule, in the vendor's parameters. Parsing here; the render is
 * render-request.ts's `renderOnGrid` (bounded by the site's render slots, stopped when the client
 * disconnects).
 *
 * Decisions where the vendor's documentation leaves room:
 * - `bbox` absent: the service's full extent (the vendor requires it; a default is friendlier).
 * - `bboxSR` absent: the bbox JSON's own spatialReference, else the service's. `imageSR` absent:
 *   `bboxSR` (so the image covers exactly the bbox asked for), else the service's.
 * - `size` absent: 400,400 as the vendor. The bbox is kept as given (pixels may be non-square).
 * - Order of operations: rendering rule -> bandIds (0-based band indexes of the rule's output) ->
 *   `noData` (pixels whose values match become NoData; `noDataInterpretation` esriNoDataMatchAny:
 *   one band matching is enough, esriNoDataMatchAll: every band must; a list gives one value per
 *   band) -> pixelType (rounded and saturated) -> encoding.
 * - PNG/JPEG of data that is not 8-bit (and not a colormap): stretched linearly to 0..255 from the
 *   rule output's statistics, else the service's (no rule), else the image's own, as the vendor's
 *   default display does, unless `pixelType` asks for U8 (values clamped) or U16 (16-bit PNG).
 *   More than 3 bands: the first three; 2 bands: the first (PNG's grey + alpha is not data).
 * - `format`: jpgpng (default) is PNG when any pixel is NoData (transparent), else JPEG; png and
 *   png8 are 8-bit grey/RGB with alpha when needed; png24 is RGB without alpha; png32 RGBA always;
 *   jpg; tiff (GeoTIFF, any pixel type, NoData kept; `compression` None or Deflate (default);
 *   LZW is refused: no writer for it here). `lerc`: refused, no LERC encoder is available from npm
 *   (Esri's `lerc` package decodes only). bip, bsq, bmp, gif: refused.
 * - `mosaicRule`: a service holds one raster (raster id 1, no catalog), so a mosaic rule has
 *   nothing to order or blend: it is checked (JSON object, a known mosaicMethod) and otherwise
 *   changes nothing, except that `lockRasterIds` or `fids` not listing 1 (or a `where` of "1=0")
 *   leave no raster to draw (an image of NoData).
 * - `f=json`: the image is held for 10 minutes at `.../ImageServer/output/<random id>.<ext>`
 *   (bounded store, oldest dropped first); the URL is unguessable and served without a token, as
 *   the vendor's output directory is, so that an <img> can load it.
 * - `f=kmz`: a KMZ with a GroundOverlay, only when the image is in EPSG:4326 (KML's frame).
 */
import { randomBytes } from 'node:crypto';
import { strToU8, zipSync } from 'fflate';
import { EngineError } from '../../core/errors.js';
import { allocateBlock, type Extent, type PixelBlock, type RasterInfo, type SpatialReference } from '../../core/pixel-block.js';
import { castValue, isPixelType, PIXEL_TYPE_INFO, type PixelType } from '../../core/pixel-type.js';
import { rect } from '../../core/rect.js';
import { proj4Of, sameSpatialReference } from '../../graph/align.js';
import type { ResamplingMethod } from '../../graph/types.js';
import { transformExtent } from '../../graph/warp.js';
import { encodeGeoTiff } from '../../io/encode-tiff.js';
import { encodeJpeg } from '../../io/encode-jpeg.js';
import { encodePng, type PngOptions } from '../../io/encode-png.js';
import { requestSignal } from '../limits.js';
import { escapeHtml, respond, type Params } from '../rest.js';
import {
  castBlock,
  displayStatistics,
  parseEnvelope,
  parseInterpolation,
  parseSpatialReference,
  renderOnGrid,
  resolveServiceRule,
  spatialReferenceJson,
  toDisplayBlock,
  type RenderGrid,
  type RenderedImage,
  type RuleCaps,
  type ServiceRule,
} from './render-request.js';
import type { ImageServices, OpenedImageService } from './service.js';

const bad = (param: string, detail: string): EngineError => new EngineError('INVALID_ARGUMENT', detail, { path: param, details: [detail] });

// ---------------------------------------------------------------------------------------------
// Parameters

export const EXPORT_FORMATS = ['jpgpng', 'png', 'png8', 'png24', 'png32', 'jpg', 'tiff'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

function parseExportFormat(v: string | undefined): ExportFormat {
  const t = (v ?? '').trim().toLowerCase();
  if (t === '') return 'jpgpng';
  if (t === 'jpeg') return 'jpg';
  if (t === 'tif') return 'tiff';
  if ((EXPORT_FORMATS as readonly string[]).includes(t)) return t as ExportFormat;
  if (t === 'lerc') {
    throw bad('format', `'format': lerc is not supported (no LERC encoder is available); use tiff for the pixel values.`);
  }
  throw bad('format', `'format' must be one of ${EXPORT_FORMATS.join(', ')}, got '${v}'.`);
}

/** `size=w,h` (default 400,400). */
function parseSize(v: string | undefined): { width: number; height: number } {
  if (v === undefined || v.trim() === '') return { width: 400, height: 400 };
  const parts = v.split(',').map((p) => p.trim());
  const nums = parts.map(Number);
  if (parts.length !== 2 || nums.some((n) => !Number.isInteger(n) || n < 1)) {
    throw bad('size', `'size' must be width,height in whole pixels (e.g. 400,400), got '${v}'.`);
  }
  return { width: nums[0]!, height: nums[1]! };
}

function parseBandIds(v: string | undefined, bandCount: number): number[] | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  const t = v.trim();
  const items = t.startsWith('[')
    ? (() => {
        try {
          const a: unknown = JSON.parse(t);
          return Array.isArray(a) ? a.map(String) : [];
        } catch {
          return [];
        }
      })()
    : t.split(',').map((x) => x.trim());
  const ids = items.map(Number);
  if (ids.length === 0 || ids.some((n) => !Number.isInteger(n) || n < 0)) {
    throw bad('bandIds', `'bandIds' must be band indexes from 0 (e.g. 2,1,0), got '${v}'.`);
  }
  const over = ids.find((n) => n >= bandCount);
  if (over !== undefined)
    throw bad('bandIds', `'bandIds': band ${over} does not exist; the image has ${bandCount} band(s), 0 to ${bandCount - 1}.`);
  return ids;
}

function parsePixelTypeParam(v: string | undefined): PixelType | undefined {
  if (v === undefined || v.trim() === '' || v.trim().toUpperCase() === 'UNKNOWN') return undefined;
  const t = v.trim().toUpperCase();
  if (!isPixelType(t) || PIXEL_TYPE_INFO[t].complex) {
    throw bad('pixelType', `'pixelType' must be one of U1, U2, U4, U8, S8, U16, S16, U32, S32, F32, F64 or UNKNOWN, got '${v}'.`);
  }
  return t;
}

/** `noData`: one value, or one per band (comma list or JSON array). */
function parseNoData(v: string | undefined): number[] | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  const t = v.trim().replace(/^\[|\]$/g, '');
  const values = t.split(',').map((x) => (x.trim().toLowerCase() === 'nan' ? Number.NaN : x.trim() === '' ? Number.NaN : Number(x)));
  if (values.some((n, i) => Number.isNaN(n) && t.split(',')[i]!.trim().toLowerCase() !== 'nan')) {
    throw bad('noData', `'noData' must be a number or a comma-separated list of numbers (one per band), got '${v}'.`);
  }
  return values;
}

/** `noDataInterpretation`: the vendor's esriNoDataMatchAny/All, also spelled without the prefix. */
function parseNoDataInterpretation(v: string | undefined): 'any' | 'all' {
  const t = (v ?? '')
    .trim()
    .toLowerCase()
    .replace(/^(esri|geo)nodatamatch/, '');
  if (t === '' || t === 'any') return 'any';
  if (t === 'all') return 'all';
  throw bad('noDataInterpretation', `'noDataInterpretation' must be esriNoDataMatchAny or esriNoDataMatchAll, got '${v}'.`);
}

function parseCompression(v: string | undefined): 'none' | 'deflate' {
  const t = (v ?? '').trim().toLowerCase();
  if (t === '' || t === 'deflate') return 'deflate';
  if (t === 'none') return 'none';
  if (t === 'lzw') throw bad('compression', `'compression': LZW is not available for writing; use Deflate or None.`);
  if (t === 'jpeg' || t === 'lerc') throw bad('compression', `'compression': ${v} is not available for TIFF here; use Deflate or None.`);
  throw bad('compression', `'compression' must be None or Deflate, got '${v}'.`);
}

function parseQuality(v: string | undefined): number {
  if (v === undefined || v.trim() === '') return 75;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 100)
    throw bad('compressionQuality', `'compressionQuality' must be a whole number from 1 to 100, got '${v}'.`);
  return n;
}

const MOSAIC_METHODS = [
  'esriMosaicNone',
  'esriMosaicCenter',
  'esriMosaicNadir',
  'esriMosaicViewpoint',
  'esriMosaicAttribute',
  'esriMosaicLockRaster',
  'esriMosaicNorthwest',
  'esriMosaicSeamline',
];

/** Whether the mosaic rule leaves the service's one raster (id 1) in; throws for a malformed rule. */
export function parseMosaicRule(v: string | undefined): boolean {
  if (v === undefined || v.trim() === '') return true;
  let json: unknown;
  try {
    json = JSON.parse(v);
  } catch {
    throw bad('mosaicRule', `'mosaicRule' is not valid JSON.`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw bad('mosaicRule', `'mosaicRule' must be a JSON object.`);
  const o = json as Record<string, unknown>;
  const method = o['mosaicMethod'];
  if (method !== undefined && (typeof method !== 'string' || !MOSAIC_METHODS.some((m) => m.toLowerCase() === method.toLowerCase()))) {
    throw bad('mosaicRule', `'mosaicRule.mosaicMethod' must be one of ${MOSAIC_METHODS.join(', ')}.`);
  }
  for (const k of ['lockRasterIds', 'fids']) {
    const ids = o[k];
    if (ids === undefined) continue;
    if (!Array.isArray(ids) || !ids.every((x) => typeof x === 'number'))
      throw bad('mosaicRule', `'mosaicRule.${k}' must be an array of raster ids.`);
    if (!ids.includes(1)) return false;
  }
  const where = o['where'];
  if (where !== undefined && typeof where !== 'string') throw bad('mosaicRule', `'mosaicRule.where' must be a string.`);
  if (typeof where === 'string' && /^\s*1\s*=\s*0\s*$/.test(where)) return false;
  return true;
}

/** The request's output grid, in `imageSR`. */
export function requestGrid(params: Params, service: OpenedImageService): RenderGrid {
  const serviceSr = service.info.spatialReference ?? {};
  const size = parseSize(params.get('size'));
  const bboxText = params.get('bbox');
  const env = bboxText === undefined || bboxText.trim() === '' ? { extent: service.info.extent } : parseEnvelope(bboxText, 'bbox');
  const bboxSrText = params.get('bboxSR');
  const bboxSr: SpatialReference =
    bboxSrText !== undefined && bboxSrText.trim() !== ''
      ? parseSpatialReference(bboxSrText, 'bboxSR')
      : ('spatialReference' in env && env.spatialReference) || serviceSr;
  const imageSrText = params.get('imageSR');
  const imageSr = imageSrText !== undefined && imageSrText.trim() !== '' ? parseSpatialReference(imageSrText, 'imageSR') : bboxSr;
  let extent: Extent = env.extent;
  if (!sameSpatialReference(bboxSr, imageSr)) {
    try {
      extent = transformExtent(extent, bboxSr, imageSr);
    } catch {
      throw bad('bbox', `'bbox' cannot be transformed from bboxSR to imageSR.`);
    }
  }
  return { spatialReference: imageSr, extent, width: size.width, height: size.height };
}

// ---------------------------------------------------------------------------------------------
// Post-render steps

function selectBands(block: PixelBlock, info: RasterInfo, ids: readonly number[]): { block: PixelBlock; info: RasterInfo } {
  const bands = ids.map((i) => block.bands[i]!);
  const names = info.bandNames ? ids.map((i) => info.bandNames![i] ?? `Band_${i + 1}`) : undefined;
  const stats = info.statistics ? ids.map((i) => info.statistics![i]!) : undefined;
  const { colormap: _c, ...rest } = info;
  return {
    block: { ...block, bands },
    info: {
      ...(ids.length === 1 ? info : rest),
      bandCount: ids.length,
      ...(names ? { bandNames: names } : {}),
      ...(stats ? { statistics: stats } : {}),
    },
  };
}

/** Pixels whose values match `noData` become NoData (mask 0); a new mask, the bands are shared. */
function applyNoData(block: PixelBlock, values: readonly number[], mode: 'any' | 'all'): PixelBlock {
  const nb = block.bands.length;
  const valueOf = (b: number): number => (values.length === 1 ? values[0]! : (values[b] ?? Number.NaN));
  const k = PIXEL_TYPE_INFO[block.pixelType].complex ? 2 : 1;
  const mask = new Uint8Array(block.mask);
  const matches = (v: number, nd: number): boolean => v === nd || (Number.isNaN(nd) && Number.isNaN(v));
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] === 0) continue;
    let hit = mode === 'all';
    for (let b = 0; b < nb; b++) {
      const m = matches(block.bands[b]![k * i]!, valueOf(b));
      if (mode === 'any' && m) {
        hit = true;
        break;
      }
      if (mode === 'all' && !m) {
        hit = false;
        break;
      }
    }
    if (hit) mask[i] = 0;
  }
  return { ...block, mask };
}

/** `block` as 3 bands (grey repeated) plus an alpha band from the mask; mask all valid. */
function rgba(block: PixelBlock, withAlpha: boolean): PixelBlock {
  const n = block.mask.length;
  const colour = block.bands.length >= 3 ? block.bands.slice(0, 3) : [block.bands[0]!, block.bands[0]!, block.bands[0]!];
  const bands = colour.map((b) => {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = block.mask[i] === 0 ? 0 : b[i]!;
    return out;
  });
  if (withAlpha) {
    const alpha = new Uint8Array(n);
    for (let i = 0; i < n; i++) alpha[i] = block.mask[i] === 0 ? 0 : 255;
    bands.push(alpha);
  }
  return { rect: block.rect, pixelType: 'U8', bands, mask: new Uint8Array(n).fill(1) };
}

export interface EncodedImage {
  readonly bytes: Uint8Array;
  readonly contentType: string;
  /** File extension of the format written. */
  readonly ext: 'png' | 'jpg' | 'tif';
}

export interface EncodeRequest {
  readonly format: ExportFormat;
  readonly pixelType?: PixelType;
  readonly noData?: readonly number[];
  readonly quality: number;
  readonly compression: 'none' | 'deflate';
}

/**
 * PNG settings of served images. Decision: every row filtered 'up' and deflate level 1 (the
 * encoder's one-pass path): about 4x faster than trying the 5 filters per row at level 6, for
 * files some 5% larger on elevation data. The pixels are the same.
 */
export const SERVED_PNG: PngOptions = { filter: 'up', deflateLevel: 1 };

/** The post-render steps and the encoder, for a rendered image. */
export function encodeExport(
  image: RenderedImage,
  service: OpenedImageService,
  rule: ServiceRule,
  bandIds: number[] | undefined,
  e: EncodeRequest,
  noDataMode: 'any' | 'all',
): EncodedImage {
  let block = image.block;
  let info = image.info;
  let stats = displayStatistics(image, service, rule);
  if (bandIds) {
    ({ block, info } = selectBands(block, info, bandIds));
    stats = stats ? bandIds.map((i) => stats![i]) : undefined;
  }
  if (e.noData) block = applyNoData(block, e.noData, noDataMode);
  if (e.format === 'tiff') {
    if (e.pixelType) block = castBlock(block, e.pixelType);
    const nd = e.noData?.[0];
    const tiffInfo: RasterInfo = { ...info, pixelType: block.pixelType, bandCount: block.bands.length };
    const noData = nd !== undefined && !Number.isNaN(nd) ? castValue(nd, block.pixelType) : undefined;
    const bytes = encodeGeoTiff(block, tiffInfo, {
      compress: e.compression,
      statistics: false,
      ...(noData !== undefined ? { noData } : {}),
    });
    return { bytes, contentType: 'image/tiff', ext: 'tif' };
  }
  // PNG / JPEG: 8-bit (16-bit PNG when asked), at most 3 colour bands.
  if (block.bands.length === 2 || block.bands.length > 3) {
    block = { ...block, bands: block.bands.slice(0, block.bands.length === 2 ? 1 : 3) };
    stats = stats?.slice(0, block.bands.length);
    info = { ...info, bandCount: block.bands.length };
  }
  const colormapped = info.colormap !== undefined && block.bands.length === 1;
  if (!colormapped) {
    if (e.pixelType === 'U8' || (e.pixelType === 'U16' && e.format !== 'jpg' && e.format !== 'jpgpng'))
      block = castBlock(block, e.pixelType);
    else if (e.pixelType !== undefined) {
      throw bad(
        'pixelType',
        `'pixelType' ${e.pixelType} cannot be written as ${e.format}: use format=tiff, or pixelType U8${e.format.startsWith('png') ? ' or U16' : ''}.`,
      );
    } else block = toDisplayBlock(block, stats);
  }
  const masked = block.mask.indexOf(0) >= 0;
  const pngInfo: RasterInfo = { ...info, pixelType: block.pixelType, bandCount: block.bands.length };
  const asJpeg = e.format === 'jpg' || (e.format === 'jpgpng' && !masked);
  if (asJpeg) {
    if (block.pixelType !== 'U8') block = toDisplayBlock(block);
    return { bytes: encodeJpeg(block, pngInfo, { quality: e.quality }), contentType: 'image/jpeg', ext: 'jpg' };
  }
  if (e.format === 'png24' || e.format === 'png32') {
    if (colormapped || block.pixelType !== 'U8') block = toDisplayBlock(block);
    const out = rgba(block, e.format === 'png32');
    return {
      bytes: encodePng(out, { ...pngInfo, bandCount: out.bands.length, pixelType: 'U8' }, SERVED_PNG),
      contentType: 'image/png',
      ext: 'png',
    };
  }
  return { bytes: encodePng(block, pngInfo, SERVED_PNG), contentType: 'image/png', ext: 'png' };
}

// ---------------------------------------------------------------------------------------------
// Held results (f=json)

/** How long an exported image stays downloadable. */
export const HELD_MS = 10 * 60_000;
/** Most bytes held at once (oldest dropped first). */
export const HELD_MAX_BYTES = 256 * 1024 * 1024;
const HELD_MAX_COUNT = 2000;

interface Held {
  readonly bytes: Uint8Array;
  readonly contentType: string;
  readonly expires: number;
  /** serviceKey: the image is served only under its own service. */
  readonly service: string;
}

export interface HeldImages {
  put(service: string, image: EncodedImage, now: number): string;
  get(service: string, id: string, now: number): Held | undefined;
}

export function createHeldImages(maxBytes = HELD_MAX_BYTES): HeldImages {
  const held = new Map<string, Held>();
  let total = 0;
  const drop = (id: string): void => {
    const h = held.get(id);
    if (h) {
      total -= h.bytes.byteLength;
      held.delete(id);
    }
  };
  return {
    put(service, image, now) {
      for (const [id, h] of held) if (h.expires <= now) drop(id);
      while (held.size > 0 && (total + image.bytes.byteLength > maxBytes || held.size >= HELD_MAX_COUNT)) drop(held.keys().next().value!);
      const id = `${randomBytes(16).toString('hex')}.${image.ext}`;
      held.set(id, { bytes: image.bytes, contentType: image.contentType, expires: now + HELD_MS, service });
      total += image.bytes.byteLength;
      return id;
    },
    get(service, id, now) {
      const h = held.get(id);
      if (!h || h.service !== service) return undefined;
      if (h.expires <= now) {
        drop(id);
        return undefined;
      }
      return h;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The operation

/** Map scale of an image (1 : scale) at the vendor's 96 dpi. */
function scaleOf(grid: RenderGrid): number {
  const sr = grid.spatialReference;
  const cell = (grid.extent.xmax - grid.extent.xmin) / grid.width;
  const geographic = sr.wkid === 4326 || sr.geographic === true || /\+proj=longlat/.test(proj4Of(sr) ?? '');
  const metres = geographic ? cell * 111_319.49079327357 : cell * (sr.metersPerUnit ?? 1);
  return (metres * 96) / 0.0254;
}

function kmz(image: EncodedImage, extent: Extent, name: string): Uint8Array {
  const file = `image.${image.ext}`;
  const x = (s: string): string => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
  const kml =
    `<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2">\n<GroundOverlay>\n<name>${x(name)}</name>\n` +
    `<Icon><href>${file}</href></Icon>\n<LatLonBox><north>${extent.ymax}</north><south>${extent.ymin}</south>` +
    `<east>${extent.xmax}</east><west>${extent.xmin}</west></LatLonBox>\n</GroundOverlay>\n</kml>\n`;
  return zipSync({ 'doc.kml': strToU8(kml), [file]: image.bytes });
}

export interface ExportContext {
  readonly services: ImageServices;
  readonly held: HeldImages;
  readonly now: () => number;
  /** Worker threads that run `renderExport` (export-pool.ts); absent: on this thread. */
  readonly pool?: ExportPool;
}

/** One exportImage's render and encoding, parsed: plain data (a worker thread receives it as is). */
export interface ExportJob {
  readonly rule: ServiceRule;
  readonly grid: RenderGrid;
  readonly method: ResamplingMethod;
  /** False when the mosaic rule leaves no raster (an image of NoData). */
  readonly included: boolean;
  /** The `bandIds` parameter as sent (checked against the rule output's band count). */
  readonly bandIds?: string;
  readonly encode: EncodeRequest;
  readonly noDataMode: 'any' | 'all';
  /** The site's maxRuleDepth/maxRuleNodes (an export worker's registry does not know the site). */
  readonly ruleCaps?: RuleCaps;
}

/** Where exportImage jobs run when not on this thread. */
export interface ExportPool {
  /** Runs `job` holding a render slot of `services` counted against `client`; `signal` aborts it (the job is cancelled). */
  run(services: ImageServices, service: OpenedImageService, job: ExportJob, signal?: AbortSignal, client?: string): Promise<EncodedImage>;
}

/**
 * Render and encode one exportImage job (holding a render slot of `services` while rendering).
 * The same function runs on the main thread and in export workers, so the bytes do not depend on
 * where it ran.
 */
export async function renderExport(
  services: ImageServices,
  service: OpenedImageService,
  job: ExportJob,
  signal?: AbortSignal,
  client?: string,
): Promise<EncodedImage> {
  const { rule, grid, method } = job;
  const common = {
    rule,
    method,
    ...(signal ? { signal } : {}),
    ...(client === undefined ? {} : { client }),
    ...(job.ruleCaps ? { ruleCaps: job.ruleCaps } : {}),
  };
  let image: RenderedImage;
  if (job.included) {
    image = await renderOnGrid(services, service, { ...common, grid });
  } else {
    // The mosaic rule leaves no raster: an image of NoData with the rule output's bands and type.
    const planned = await renderOnGrid(services, service, { ...common, grid: { ...grid, width: 1, height: 1 } });
    const block = allocateBlock(rect(0, 0, grid.width, grid.height), planned.block.pixelType, planned.block.bands.length);
    block.mask.fill(0);
    image = { ...planned, block, info: { ...planned.info, width: grid.width, height: grid.height } };
  }
  const bandIds = parseBandIds(job.bandIds, image.block.bands.length);
  return encodeExport(image, service, rule, bandIds, job.encode, job.noDataMode);
}

/**
 * Answers exportImage for an opened service; `serviceUrl` is the absolute URL of `.../ImageServer`.
 * `caller` (verified by the handler) is who the render counts against (maxRendersPerClient); the
 * render stops at the site's requestTimeoutMs (TIMEOUT) or when the client disconnects.
 */
export async function exportImage(
  ctx: ExportContext,
  req: Request,
  params: Params,
  service: OpenedImageService,
  serviceUrl: string,
  caller?: { readonly username: string },
): Promise<Response> {
  const f = (params.get('f') ?? 'html').trim().toLowerCase() || 'html';
  if (!['image', 'json', 'pjson', 'html', 'kmz'].includes(f)) {
    throw new EngineError('INVALID_FORMAT', `'f' must be image, json, pjson, html or kmz`, {
      path: 'f',
      details: [`'f' must be one of image, json, pjson, html, kmz.`],
    });
  }
  const grid = requestGrid(params, service);
  const s = service.settings;
  if (grid.width > s.maxImageWidth || grid.height > s.maxImageHeight) {
    const detail = `The requested image size ${grid.width}x${grid.height} exceeds the maximum allowed image size of ${s.maxImageWidth}x${s.maxImageHeight} (maxImageWidth x maxImageHeight).`;
    throw new EngineError('LIMIT_EXCEEDED', detail, { path: 'size', details: [detail] });
  }
  const format = parseExportFormat(params.get('format'));
  const method = parseInterpolation(params.get('interpolation'));
  const pixelType = parsePixelTypeParam(params.get('pixelType'));
  const noData = parseNoData(params.get('noData'));
  const noDataMode = parseNoDataInterpretation(params.get('noDataInterpretation'));
  const quality = parseQuality(params.get('compressionQuality'));
  const compression = parseCompression(params.get('compression'));
  const included = parseMosaicRule(params.get('mosaicRule'));
  const rule = resolveServiceRule(service, params.get('renderingRule'));
  if (f === 'kmz' && !(grid.spatialReference.wkid === 4326)) {
    throw bad('f', `'f=kmz' needs the image in geographic coordinates: add imageSR=4326.`);
  }

  const job: ExportJob = {
    rule,
    grid,
    method,
    included,
    ...(params.get('bandIds') !== undefined ? { bandIds: params.get('bandIds')! } : {}),
    encode: { format, ...(pixelType ? { pixelType } : {}), ...(noData ? { noData } : {}), quality, compression },
    noDataMode,
    ruleCaps: { maxRuleDepth: ctx.services.limits.maxRuleDepth, maxRuleNodes: ctx.services.limits.maxRuleNodes },
  };
  const client = ctx.services.clientOf(req, caller);
  const budget = requestSignal(req, ctx.services.limits);
  let encoded: EncodedImage;
  try {
    encoded = ctx.pool
      ? await ctx.pool.run(ctx.services, service, job, budget.signal, client)
      : await renderExport(ctx.services, service, job, budget.signal, client);
  } finally {
    budget.dispose();
  }

  if (f === 'image') {
    return new Response(encoded.bytes, { headers: { 'content-type': encoded.contentType, 'cache-control': 'private, max-age=0' } });
  }
  if (f === 'kmz') {
    return new Response(kmz(encoded, grid.extent, service.name), {
      headers: {
        'content-type': 'application/vnd.google-earth.kmz',
        'content-disposition': `attachment; filename="${service.record.serviceName}.kmz"`,
      },
    });
  }
  const id = ctx.held.put(service.key, encoded, ctx.now());
  const sr = spatialReferenceJson(grid.spatialReference);
  const body = {
    href: `${serviceUrl}/output/${id}`,
    width: grid.width,
    height: grid.height,
    extent: { ...grid.extent, ...(sr ? { spatialReference: sr } : {}) },
    scale: scaleOf(grid),
  };
  if (f === 'html') {
    const page =
      `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Export Image (${escapeHtml(service.name)})</title></head>\n<body>\n` +
      `<h1>Export Image: ${escapeHtml(service.name)}</h1>\n<p><img alt="exported image" src="${escapeHtml(body.href)}" width="${grid.width}" height="${grid.height}"></p>\n` +
      `<pre>${escapeHtml(JSON.stringify(body, null, 2))}</pre>\n</body>\n</html>\n`;
    return new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } });
  }
  return respond(f, body);
}

/** Serves a held image: `.../ImageServer/output/<id>`; NOT_FOUND once it expired. */
export function heldImageResponse(held: HeldImages, service: string, id: string, now: number): Response {
  const h = held.get(service, id, now);
  if (!h) throw new EngineError('NOT_FOUND', `no exported image ${id}`, { details: ['The exported image does not exist or has expired.'] });
  return new Response(h.bytes, { headers: { 'content-type': h.contentType, 'cache-control': 'private, max-age=600' } });
}

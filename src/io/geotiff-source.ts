/**
 * GeoTIFF / COG sources: `openGeoTiff(location)` opens a local file or an http(s) URL (a COG
 * read with HTTP range requests) and returns a `SourceNode` whose `read(rect)` decodes only the
 * tiles or strips crossing the rectangle. The TIFF structure is parsed by our own IFD reader
 * (tiff-reader.ts: classic and BigTIFF, either byte order) and blocks are decoded by
 * decoders.ts (raw views, node:zlib DEFLATE, LZW, PackBits, predictors 2 and 3, NBITS; JPEG,
 * LERC, ZSTD, WebP through geotiff.js's decoders). Decoded blocks go through a small LRU shared by
 * every source of the process (tile-cache.ts), so halos and neighbouring tiles decode a block once.
 *
 * `info` comes from the first image (full resolution): pixel type from SampleFormat/BitsPerSample,
 * NoData from GDAL_NODATA, the north-up grid from ModelPixelScale + ModelTiepoint or
 * ModelTransformation (rotated or GCP-georeferenced rasters are rejected), the spatial reference
 * from the GeoKeys (see srs.ts), band names and statistics from GDAL_METADATA, the colormap of a
 * palette image (PhotometricInterpretation 3) from its ColorMap (`colormapFromTiff`). Pixels
 * outside the raster, equal to NoData or NaN get mask 0, and so do the pixels GDAL's internal
 * mask marks invalid: a 1-bit (or 8-bit) transparency-mask image of the first image's size, as
 * `GDAL_TIFF_INTERNAL_MASK=YES` writes it and `encodeGeoTiff` does for integer rasters without
 * NoData (see `findMask`). Sparse blocks (offset or byte count 0) read as NoData (0 without one),
 * and as masked in a mask image, as GDAL reads them. Each cached block is checked once for NaN and
 * NoData samples (`blockMayBeInvalid`); only the parts of a read coming from blocks that may hold
 * some are scanned pixel by pixel for the mask. A float window read into planes in wasm memory (a
 * render's tiles) skips both: its mask is computed in wasm after the copies (src/wasm/reader.ts).
 *
 * Overviews (reduced-resolution IFDs, NewSubfileType bit 1, with their masks, NewSubfileType 5)
 * are listed in `overviews`; `overview(level)` is a SourceNode over one of them (its own size and
 * a cell size scaled by the size ratio), and `readDownsampled(rect, w, h)` answers a downsampled
 * request from the overview GDAL would choose (the smallest one still at least as fine as the
 * request), nearest-neighbour from there.
 *
 * Errors: a bad path, a file or URL that is not a TIFF -> IO_ERROR at `input`; a TIFF the engine
 * cannot represent -> UNSUPPORTED_INPUT at `input`.
 */
import { approximateStatistics } from './approx-statistics.js';
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { EngineError } from '../core/errors.js';
import { allocateBlock, type Colormap, type Extent, type PixelBlock, type RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, castValue, PIXEL_TYPE_INFO, representable, type PixelType, type Plane } from '../core/pixel-type.js';
import { intersect, type Rect } from '../core/rect.js';
import type { SourceNode } from '../graph/types.js';
import { createBlockDecoder, horizontalPredictor, storageOf, type BlockDecoder, type SampleArray } from './decoders.js';
import { bandNamesOf, parseGdalMetadata, parseNoData, statisticsOf, type GdalMetadata } from './gdal-metadata.js';
import { spatialReferenceFromGeoKeys } from './srs.js';
import { noteBlockRow, tileCache, type DecodedBlock } from './tile-cache.js';
import { canMaskInWasm, copyRowsInWasm, maskInvalid, residentSpan } from '../wasm/reader.js';
import { fillPlane } from '../wasm/planes.js';
import { BlockReadError, type InflateTarget, inflateFileBlock, recycleInflated } from './codec-pool.js';
import {
  describeTiffImage,
  geoKeysOf,
  numberOf,
  numbersOf,
  openFileSource,
  openHttpSource,
  readRangesEach,
  readTiffStructure,
  TAG,
  textOf,
  TiffFormatError,
  TiffUnsupportedError,
  type ByteSource,
  type Ifd,
  type TiffImageLayout,
} from './tiff-reader.js';

export interface OpenOptions {
  readonly signal?: AbortSignal;
  /** Node id; defaults to the location. */
  readonly id?: string;
  /**
   * Told of what a source could not read but can open without (optional data: a Zarr store's
   * spatial reference declared in a form it cannot read); the caller decides how to show it.
   */
  readonly onWarning?: (message: string) => void;
}

/** An overview level: its size in pixels. */
export interface OverviewInfo {
  readonly width: number;
  readonly height: number;
}

/** A GeoTIFF source; `close()` releases the file handle of a local file. */
export interface GeoTiffSource extends SourceNode {
  readonly location: string;
  close(): Promise<void>;
  /** Reduced-resolution images, largest first (empty when the file has none). */
  readonly overviews?: readonly OverviewInfo[];
  /** A source over overview `level` (1 = the largest overview; 0 = this image). */
  overview?(level: number): SourceNode;
  /**
   * `rect` of the full-resolution grid resampled (nearest neighbour) to `width` x `height`,
   * read from the best overview; the block's rect is (0, 0, width, height).
   */
  readDownsampled?(rect: Rect, width: number, height: number, signal?: AbortSignal): Promise<PixelBlock>;
  /** The first image's GDAL_METADATA (band metadata such as NETCDF_DIM_*), when it has one. */
  readonly gdalMetadata?: GdalMetadata;
  /**
   * Check every block of every image (full resolution, overviews, masks) against the file without
   * reading pixels: throws the IO_ERROR a read of the first broken block would (cut short, past
   * the end, offset and byte count contradicting each other). One check per block: for callers
   * that must not write anything from a broken file (the chipper), before they start.
   */
  verifyBlocks?(): void;
}

const INPUT = 'input';
const HEAD_BYTES_FILE = 16384;

/** Open a GeoTIFF or COG (local path, `file:` URL, or http(s) URL). */
export async function openGeoTiff(location: string, options: OpenOptions = {}): Promise<GeoTiffSource> {
  const { signal } = options;
  const isUrl = /^https?:\/\//i.test(location);
  const path = /^file:/i.test(location) ? fileURLToPath(location) : location;
  if (isUrl) rejectServiceUrl(location);
  else await checkTiffMagic(path);
  if (signal?.aborted) throw aborted(signal.reason);

  let src: ByteSource;
  let head: Uint8Array;
  try {
    if (isUrl) ({ source: src, head } = await openHttpSource(location, signal));
    else {
      const file = await openFileSource(path);
      src = file;
      // A failed (or aborted) first read must not leave the file handle open.
      head = await file.read(0, HEAD_BYTES_FILE, signal).catch(async (e: unknown) => {
        await file.close().catch(() => undefined);
        throw e;
      });
    }
  } catch (e) {
    throw openFailure(location, isUrl, e);
  }
  try {
    const structure = await readTiffStructure(src, head, MAX_SCANNED_IFDS + 1, signal).catch((e: unknown) => {
      throw openFailure(location, isUrl, e);
    });
    const main = structure.ifds[0]!;
    const { info, layout } = describeImage(main, structure.littleEndian, location);
    const decoder = await decoderFor(layout, location, 'the image');
    const image: ImageReader = { index: 0, layout, decode: decoder, label: '' };
    const mask = await findMask(structure.ifds, main, structure.littleEndian, location, 0);
    const overviews = await findOverviews(structure.ifds, layout, structure.littleEndian, location);
    const source = makeSource(options.id ?? location, location, src, image, info, mask, overviews);
    const mdText = textOf(main, TAG.GdalMetadata);
    return mdText === undefined ? source : { ...source, gdalMetadata: parseGdalMetadata(mdText) };
  } catch (e) {
    await src.close().catch(() => undefined);
    throw e instanceof EngineError ? e : openFailure(location, isUrl, e);
  }
}

/** The RasterInfo of a GeoTIFF, without keeping it open. */
export async function rasterInfoOf(location: string, options: OpenOptions = {}): Promise<RasterInfo> {
  const source = await openGeoTiff(location, options);
  await source.close();
  return source.info;
}

// ---- Opening

const ioError = (message: string, cause?: unknown): EngineError =>
  new EngineError('IO_ERROR', message, { path: INPUT, ...(cause === undefined ? {} : { cause }) });

const unsupported = (location: string, what: string): EngineError =>
  new EngineError('UNSUPPORTED_INPUT', `${location}: ${what}`, { path: INPUT });

const isAbort = (e: unknown): boolean => e instanceof Error && (e.name === 'AbortError' || e.name === 'TimeoutError');

const aborted = (cause: unknown): EngineError => new EngineError('ABORTED', 'the request was aborted', { cause });

/** ArcGIS service endpoints are not rasters we can range-read: say so before any request. */
function rejectServiceUrl(url: string): void {
  if (/\/(ImageServer|MapServer)(\/|\?|$)/i.test(url)) {
    throw ioError(`${url} is an ArcGIS service endpoint; only COG/GeoTIFF URLs are readable`);
  }
}

/** Read the first bytes of a local file: a clear message for a missing file or a non-TIFF. */
async function checkTiffMagic(path: string): Promise<void> {
  let head: Uint8Array;
  try {
    const fh = await open(path, 'r');
    try {
      head = new Uint8Array(4);
      const { bytesRead } = await fh.read(head, 0, 4, 0);
      head = head.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : String(e);
    throw ioError(`cannot open ${path}: ${why}`, e);
  }
  const ii = head[0] === 0x49 && head[1] === 0x49 && (head[2] === 42 || head[2] === 43) && head[3] === 0;
  const mm = head[0] === 0x4d && head[1] === 0x4d && head[2] === 0 && (head[3] === 42 || head[3] === 43);
  if (!ii && !mm) throw ioError(`${path} is not a TIFF file (only GeoTIFF/COG inputs are readable)`);
}

/**
 * An IFD that `describeTiffImage` refused: a broken structure (a TiffFormatError) is IO_ERROR, a
 * layout the engine cannot represent UNSUPPORTED_INPUT.
 */
function layoutFailure(location: string, what: string, e: unknown): EngineError {
  const why = e instanceof Error ? e.message : String(e);
  if (e instanceof TiffFormatError) return ioError(`${location}: ${what} is corrupt: ${why}`, e);
  return unsupported(location, e instanceof TiffUnsupportedError && what === 'the image' ? why : `${what}: ${why}`);
}

function openFailure(location: string, isUrl: boolean, e: unknown): EngineError {
  if (isAbort(e)) return aborted(e);
  const why = e instanceof Error ? e.message : String(e);
  if (isUrl) return ioError(`cannot read ${location} as a GeoTIFF (${why}); only COG/GeoTIFF URLs are readable`, e);
  return ioError(`cannot read ${location} as a GeoTIFF: ${why}`, e);
}

// ---- Describing

/** SampleFormat + BitsPerSample -> pixel type; undefined when the engine has no such type. */
export function pixelTypeOf(sampleFormat: number, bits: number): PixelType | undefined {
  switch (sampleFormat) {
    case 1:
      if (bits === 1 || bits === 2 || bits === 4) return (['U1', 'U2', 'U4'] as const)[bits >> 1];
      // ASSUMPTION (spec silent): other widths (NBITS 3, 12, 24, ...) widen to the next byte
      // type, as GDAL reports them; decoders.ts unpacks them so.
      return bits >= 1 && bits <= 8 ? 'U8' : bits <= 16 ? 'U16' : bits <= 32 ? 'U32' : undefined;
    case 2:
      return ({ 8: 'S8', 16: 'S16', 32: 'S32' } as const)[bits as 8];
    case 3:
      // ASSUMPTION (spec silent): half floats (16 bits) widen to F32 (decoders.ts).
      return ({ 16: 'F32', 32: 'F32', 64: 'F64' } as const)[bits as 32];
    case 5: // complex integer: CInt16 fits C64 exactly, CInt32 fits C128 exactly
      return ({ 32: 'C64', 64: 'C128' } as const)[bits as 32];
    case 6:
      return ({ 64: 'C64', 128: 'C128' } as const)[bits as 64];
    default:
      return undefined;
  }
}

async function decoderFor(layout: TiffImageLayout, location: string, what: string): Promise<BlockDecoder> {
  try {
    return await createBlockDecoder(layout);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw unsupported(location, what === 'the image' ? why : `${what}: ${why}`);
  }
}

function describeImage(ifd: Ifd, littleEndian: boolean, location: string): { info: RasterInfo; layout: TiffImageLayout } {
  let layout: TiffImageLayout;
  try {
    layout = describeTiffImage(ifd, littleEndian);
  } catch (e) {
    throw layoutFailure(location, 'the image', e);
  }
  const { width, height, samplesPerPixel: bandCount, sampleFormat: format, bitsPerSample: bps } = layout;
  const pixelType = pixelTypeOf(format, bps);
  if (!pixelType) throw unsupported(location, `SampleFormat ${format} with BitsPerSample ${bps} is not supported`);
  const complex = format === 5 || format === 6;

  const keys = geoKeysOf(ifd);
  const grid = gridOf(ifd, width, height, keys?.['GTRasterTypeGeoKey'] === 2, location);
  const ndText = textOf(ifd, TAG.GdalNoData);
  const noData = ndText === undefined ? undefined : parseNoData(ndText);
  const mdText = textOf(ifd, TAG.GdalMetadata);
  const md = mdText === undefined ? undefined : parseGdalMetadata(mdText);
  const spatialReference = spatialReferenceFromGeoKeys(keys);
  const bandNames = md && bandNamesOf(md, bandCount);
  const statistics = md && statisticsOf(md, bandCount);
  const colormap = paletteOf(ifd, bandCount, complex);
  const sensorName = md?.dataset.get('SENSOR_NAME') ?? md?.dataset.get('SensorName');
  const info: RasterInfo = {
    width,
    height,
    bandCount,
    pixelType,
    ...(noData === undefined ? {} : { noData }),
    ...grid,
    ...(spatialReference ? { spatialReference } : {}),
    ...(bandNames ? { bandNames } : {}),
    ...(statistics ? { statistics } : {}),
    ...(colormap ? { colormap } : {}),
    ...(sensorName ? { sensorName } : {}),
    radiometry: 'source',
  };
  return { info, layout };
}

/**
 * The colour table of a palette image (PhotometricInterpretation 3, one sample, a ColorMap tag)
 * as `RasterInfo.colormap`; undefined for other images.
 */
function paletteOf(ifd: Ifd, bandCount: number, complex: boolean): Colormap | undefined {
  if (bandCount !== 1 || complex || numberOf(ifd, TAG.Photometric) !== 3) return undefined;
  const table = numbersOf(ifd, TAG.ColorMap);
  return table && table.length >= 3 ? colormapFromTiff(table) : undefined;
}

/**
 * A TIFF ColorMap (all reds, then all greens, then all blues; 16-bit values; 2^BitsPerSample
 * entries for pixel values 0..n-1) as a colormap with 8-bit colours. The 16-bit values are
 * divided by GDAL's multiplier and truncated, as GDAL's GTiff driver reads them: 257 (0..65535
 * onto 0..255, how GDAL and most writers store c x 257), 256 when every value is a multiple of
 * 256 and one is not 0, and 1 when every value is at most 255 (writers that store 8-bit values).
 * TIFF colour tables have no alpha.
 */
export function colormapFromTiff(table: ArrayLike<number>): Colormap {
  const n = Math.floor(table.length / 3);
  let max = 0;
  let all256 = true;
  let nonZero = false;
  for (let i = 0; i < 3 * n; i++) {
    const v = table[i]!;
    if (v > max) max = v;
    if (v % 256 !== 0) all256 = false;
    if (v !== 0) nonZero = true;
  }
  const divisor = max > 0 && max < 256 ? 1 : all256 && nonZero ? 256 : 257;
  const values = new Float64Array(n);
  const rgb = new Uint8Array(3 * n);
  for (let i = 0; i < n; i++) {
    values[i] = i;
    for (let c = 0; c < 3; c++) rgb[3 * i + c] = Math.floor(table[c * n + i]! / divisor);
  }
  return { values, rgb };
}

/** How many IFDs after the first are searched for an internal mask (a guard against IFD loops). */
const MAX_SCANNED_IFDS = 256;

interface ImageReader {
  /** IFD index, part of the tile-cache key. */
  readonly index: number;
  /** Which image, for messages: '' for the full-resolution one, else e.g. ' of overview 2'. */
  readonly label: string;
  /** A transparency mask (its blocks are not named by band). */
  readonly mask?: boolean;
  readonly layout: TiffImageLayout;
  readonly decode: BlockDecoder;
}

const subfileOf = (ifd: Ifd): number => numberOf(ifd, TAG.NewSubfileType, 0);

/**
 * GDAL's internal mask of an image (of the main image when `reduced` is 0, of an overview when it
 * is 1): the first IFD whose NewSubfileType has the mask bit (4) and the given reduced-image bit
 * (1; NewSubfileType 5 is the mask of an overview), with PhotometricInterpretation 4
 * (transparency mask), the image's width and height, one unsigned sample of 1 or 8 bits (GDAL's
 * conditions in its GTiff driver). Other IFDs are skipped. GDAL writes the mask right after its
 * image or, when the mask was created after the overviews, after them: every IFD is looked at.
 * A mask we would misread (FillOrder 2, unknown compression) is UNSUPPORTED_INPUT rather than
 * dropped, so a mask is never silently lost.
 */
async function findMask(ifds: readonly Ifd[], image: Ifd, le: boolean, location: string, reduced: 0 | 1): Promise<ImageReader | undefined> {
  const w = numberOf(image, TAG.ImageWidth, 0);
  const h = numberOf(image, TAG.ImageLength, 0);
  for (let i = 1; i < ifds.length; i++) {
    const ifd = ifds[i]!;
    const subfile = subfileOf(ifd);
    if ((subfile & 4) === 0 || (subfile & 1) !== reduced || numberOf(ifd, TAG.Photometric) !== 4) continue;
    if (numberOf(ifd, TAG.ImageWidth) !== w || numberOf(ifd, TAG.ImageLength) !== h || numberOf(ifd, TAG.SamplesPerPixel, 1) !== 1)
      continue;
    const bits = numberOf(ifd, TAG.BitsPerSample, 1);
    if ((bits !== 1 && bits !== 8) || numberOf(ifd, TAG.SampleFormat, 1) !== 1) continue;
    if (numberOf(ifd, TAG.FillOrder, 1) !== 1) throw unsupported(location, 'an internal mask with FillOrder 2 is not supported');
    let layout: TiffImageLayout;
    try {
      layout = describeTiffImage(ifd, le);
    } catch (e) {
      throw layoutFailure(location, 'an internal mask', e);
    }
    if (
      layout.compression !== 1 &&
      layout.compression !== 5 &&
      layout.compression !== 8 &&
      layout.compression !== 32946 &&
      layout.compression !== 32773 &&
      layout.compression !== 50000
    ) {
      throw unsupported(location, `an internal mask with TIFF compression ${layout.compression} is not supported`);
    }
    return { index: i, layout, decode: await decoderFor(layout, location, 'an internal mask'), label: ' of the internal mask', mask: true };
  }
  return undefined;
}

interface OverviewReader {
  readonly image: ImageReader;
  readonly mask: ImageReader | undefined;
}

/** Reduced-resolution images of the main image's samples, largest first, with their masks. */
async function findOverviews(ifds: readonly Ifd[], main: TiffImageLayout, le: boolean, location: string): Promise<OverviewReader[]> {
  const out: OverviewReader[] = [];
  for (let i = 1; i < ifds.length; i++) {
    const ifd = ifds[i]!;
    const subfile = subfileOf(ifd);
    if ((subfile & 1) === 0 || (subfile & 4) !== 0) continue;
    let layout: TiffImageLayout;
    try {
      layout = describeTiffImage(ifd, le);
    } catch {
      continue;
    }
    if (
      layout.samplesPerPixel !== main.samplesPerPixel ||
      layout.sampleFormat !== main.sampleFormat ||
      layout.bitsPerSample !== main.bitsPerSample
    )
      continue;
    if (layout.width >= main.width && layout.height >= main.height) continue;
    let decode: BlockDecoder;
    try {
      decode = await createBlockDecoder(layout);
    } catch {
      continue; // an overview we cannot decode is not used; the full image still is
    }
    let mask: ImageReader | undefined;
    try {
      mask = await findMask(ifds, ifd, le, location, 1);
    } catch {
      mask = undefined;
    }
    out.push({ image: { index: i, layout, decode, label: '' }, mask });
  }
  return out
    .sort((a, b) => b.image.layout.width - a.image.layout.width)
    .map(({ image, mask }, k) => ({
      image: { ...image, label: ` of overview ${k + 1}` },
      mask: mask && { ...mask, label: ` of the internal mask of overview ${k + 1}` },
    }));
}

/**
 * Extent and cell size of a north-up grid. ASSUMPTION (spec silent): a TIFF without
 * georeferencing gets GDAL's default pixel grid, origin (0, 0) and cell 1, with y growing north,
 * so its extent is (0, -height) to (width, 0). PixelIsPoint rasters are shifted by half a cell,
 * as GDAL does by default (GTIFF_POINT_GEO_IGNORE=NO).
 */
function gridOf(
  ifd: Ifd,
  w: number,
  h: number,
  pixelIsPoint: boolean,
  location: string,
): { extent: Extent; cellSize: { x: number; y: number } } {
  const scale = numbersOf(ifd, TAG.ModelPixelScale);
  const tie = numbersOf(ifd, TAG.ModelTiepoint);
  const transform = numbersOf(ifd, TAG.ModelTransformation);
  let x0 = 0;
  let y0 = 0;
  let sx = 1;
  let sy = 1;
  if (transform && transform.length >= 16) {
    const [a, b, , d, e, f, , hh] = Array.from(transform) as [number, number, number, number, number, number, number, number];
    if (b !== 0 || e !== 0) throw unsupported(location, 'rotated or sheared grids (ModelTransformation) are not supported');
    if (!(a > 0 && f < 0)) throw unsupported(location, 'only north-up grids are supported');
    [x0, y0, sx, sy] = [d, hh, a, -f];
  } else if (tie && tie.length >= 6) {
    if (tie.length > 6 || !scale || scale.length < 2) {
      throw unsupported(location, 'rasters georeferenced by ground control points are not supported');
    }
    [sx, sy] = [scale[0]!, scale[1]!];
    if (!(sx > 0 && sy > 0)) throw unsupported(location, 'only north-up grids with positive pixel scales are supported');
    x0 = tie[3]! - tie[0]! * sx;
    y0 = tie[4]! + tie[1]! * sy;
  }
  if (pixelIsPoint && (transform || tie)) {
    x0 -= sx / 2;
    y0 += sy / 2;
  }
  return { extent: { xmin: x0, ymin: y0 - h * sy, xmax: x0 + w * sx, ymax: y0 }, cellSize: { x: sx, y: sy } };
}

// ---- Reading

/** The value sparse blocks read as: NoData when the storage type holds it, else 0. */
function sparseFill(layout: TiffImageLayout, pixelType: PixelType, noData: number | undefined): number {
  if (noData === undefined || PIXEL_TYPE_INFO[pixelType].complex) return 0;
  if (PIXEL_TYPE_INFO[pixelType].integer && !representable(noData, pixelType)) return 0;
  return castValue(noData, pixelType);
}

/**
 * Decode (through the shared cache) the blocks of `image` that cross `win` (inside the image)
 * and hand each to `use` with its block column/row and chunk (plane of a separate-planes image).
 * Blocks missing from the cache are fetched with coalesced range reads (uncompressed blocks of a
 * local file one read each, straight into the buffer the decoded block views: no copy).
 *
 * A small async shell around `startBlocks` (the work up to the wait): the engine optimizes a
 * function once enough of its code has run, and this one runs once per tile, to no profit before
 * a render of a few hundred tiles ends; an async function of this size is also a costly one to
 * compile (about 25 ms of a 4096^2 render's CPU).
 */
async function forEachBlock(...args: Parameters<typeof startBlocks>): Promise<void> {
  await startBlocks(...args);
}

/** `forEachBlock` up to its wait, which it returns. */
function startBlocks(
  src: ByteSource,
  image: ImageReader,
  win: Rect,
  chunks: readonly number[],
  fill: number,
  signal: AbortSignal | undefined,
  use: (block: DecodedBlock, bx: number, by: number, chunk: number) => void,
): Promise<void> {
  const l = image.layout;
  const tx0 = Math.floor(win.x / l.blockWidth);
  const tx1 = Math.min(l.across, Math.ceil((win.x + win.width) / l.blockWidth));
  const ty0 = Math.floor(win.y / l.blockHeight);
  const ty1 = Math.min(l.down, Math.ceil((win.y + win.height) / l.blockHeight));
  const storage = storageOf(l.sampleFormat, l.bitsPerSample)!;
  const perBlock = l.blockWidth * l.blockHeight * (l.planar === 1 ? l.samplesPerPixel : 1) * storage.parts;
  const prefix = `${src.key}#${image.index}:`;
  const wanted: { index: number; bx: number; by: number; chunk: number }[] = [];
  for (const chunk of chunks) {
    for (let by = ty0; by < ty1; by++) {
      for (let bx = tx0; bx < tx1; bx++) wanted.push({ index: chunk * l.across * l.down + by * l.across + bx, bx, by, chunk });
    }
  }
  // Uncompressed blocks of a local file that lie inside the window whole and are not cached are
  // read into pooled scratch buffers and used at once, outside the cache: reading them is the
  // whole decode, the copy into the planes follows while the buffer is still in the CPU cache,
  // and no fresh memory is touched (a whole-raster read of 64 MB: about 25% faster). Blocks
  // the window only crosses go through the cache, so the halos of neighbouring reads share them.
  const blockBytes = perBlock * storage.size;
  const inside = (w: { bx: number; by: number }): boolean =>
    w.bx * l.blockWidth >= win.x &&
    Math.min((w.bx + 1) * l.blockWidth, l.width) <= win.x + win.width &&
    w.by * l.blockHeight >= win.y &&
    Math.min((w.by + 1) * l.blockHeight, l.height) <= win.y + win.height;
  // Every block not cached yet is checked against the file before any read starts (one check per
  // block): a block past the end of a cut file, or an offset and a byte count that contradict
  // each other, is an IO_ERROR naming the block, never zeros.
  const present = (w: { index: number }): boolean => !tileCache.has(prefix + w.index) && blockHasData(src, image, w.index);
  const direct =
    src.readInto !== undefined && l.compression === 1
      ? wanted.filter((w) => inside(w) && l.byteCounts[w.index] === blockBytes && present(w))
      : [];
  const directSet = new Set(direct);
  const viaCache = direct.length === 0 ? wanted : wanted.filter((w) => !directSet.has(w));
  // One coalesced read for the blocks the cache does not hold yet; each of them enters the
  // cache at once (as a promise), so concurrent readers share the read and the decode.
  const missing = viaCache.filter(present);
  const directDone = direct.length === 0 ? undefined : readScratch(src, image, direct, blockBytes, l.offsets, signal, use);
  let fetched: Promise<Uint8Array>[] | undefined;
  // DEFLATE blocks whose inflated bytes are the samples: read and inflated on a codec thread.
  const fromFile = src.withDescriptor !== undefined ? fileInflatable(l) : undefined;
  if (missing.length > 0 && !fromFile) {
    // Local DEFLATE blocks are read one each, into their own buffers: the codec threads then take
    // each buffer as it is (transferred), where a block inside a merged read was copied out first
    // (every compressed byte copied once more, into fresh memory, on the main thread).
    const merge = /^https?:/i.test(src.location) || (l.compression !== 1 && l.compression !== 8 && l.compression !== 32946);
    fetched = readRangesEach(
      src,
      missing.map((m) => ({ offset: l.offsets[m.index]!, length: l.byteCounts[m.index]! })),
      signal,
      merge,
    );
    for (const f of fetched) f.catch(() => undefined);
  }
  const slot = new Map(missing.map((m, i) => [m.index, i]));
  const sparse = (): Promise<DecodedBlock> => {
    const a = new storage.array(perBlock);
    if (fill !== 0) a.fill(fill);
    return Promise.resolve({ data: a, byteLength: a.byteLength });
  };
  const load = async (index: number, bytes: Promise<Uint8Array>): Promise<DecodedBlock> => {
    let raw: Uint8Array;
    try {
      raw = await bytes;
    } catch (e) {
      throw isAbort(e) || signal?.aborted ? e : blockError(src, image, index, `cannot be read (${messageOf(e)})`, e);
    }
    const count = l.byteCounts[index]!;
    if (raw.length < count) throw blockError(src, image, index, cutShort(src, l.offsets[index]!, count, raw.length));
    const data = await decodeBlock(src, image, raw, index);
    return { data, byteLength: data.byteLength };
  };
  // The block's buffer is its own (inflateFromFile's): once the cache has dropped the block and
  // no reader copies from it, a later block is inflated into it.
  // When wasm is on, the block is inflated straight into a block of wasm memory (a codec thread
  // writes there), which windows of a render's tiles, also there, are then copied from in wasm.
  const loadFile = async (index: number, f: FileInflate): Promise<DecodedBlock> => {
    const span = residentSpan(f.blockBytes);
    if (span === undefined) {
      const data = await inflateFromFile(src, image, index, f);
      return { data, byteLength: data.byteLength, recycle: () => recycleInflated(data.buffer) };
    }
    try {
      const data = await inflateFromFile(src, image, index, f, { memory: span.memory, at: span.at, room: f.blockBytes });
      return { data, byteLength: data.byteLength, recycle: span.release };
    } catch (e) {
      span.release();
      throw e;
    }
  };
  // Each block is used as soon as it is decoded (copies overlap the reads and decodes still
  // running); an unreadable block rejects the whole read, once nothing writes into it any more.
  return settleAll([
    ...(directDone ? [directDone] : []),
    ...viaCache.map((w) =>
      tileCache.use(
        prefix + w.index,
        () => {
          const i = slot.get(w.index);
          if (i !== undefined && fromFile) return loadFile(w.index, fromFile);
          return i === undefined || !fetched ? sparse() : load(w.index, fetched[i]!);
        },
        (blk) => use(blk, w.bx, w.by, w.chunk),
      ),
    ),
  ]);
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** How the blocks of an image are inflated straight from the file (`inflateFromFile`). */
interface FileInflate {
  readonly storage: NonNullable<ReturnType<typeof storageOf>>;
  /** Bytes of one row of a block, of a whole block, and its samples (numbers: a complex sample is two). */
  readonly rowBytes: number;
  readonly blockBytes: number;
  readonly numbers: number;
  /** Predictor 2, undone here as decoders.ts does: the words per pixel of a row and the word's bytes. */
  readonly predictor?: { readonly stride: number; readonly word: number };
}

/**
 * Whether the blocks of `l` are read and inflated on a codec thread (codec-pool.ts
 * `inflateFileBlock`): the main thread then neither reads nor holds their compressed bytes. Only
 * where the inflated bytes are the samples as they are, or once predictor 2 is undone here
 * (DEFLATE, samples filling their storage words, little-endian or bytes), in blocks large enough
 * to be sent to a thread; every other layout is decoded by decoders.ts from bytes read here.
 */
function fileInflatable(l: TiffImageLayout): FileInflate | undefined {
  if ((l.compression !== 8 && l.compression !== 32946) || (l.predictor !== 1 && l.predictor !== 2) || l.fillOrder !== 1) return undefined;
  const storage = storageOf(l.sampleFormat, l.bitsPerSample);
  if (!storage || l.bitsPerSample !== storage.size * 8 * storage.parts || (!l.littleEndian && storage.size > 1)) return undefined;
  const chunkSpp = l.planar === 1 ? l.samplesPerPixel : 1;
  const rowBytes = (l.blockWidth * chunkSpp * l.bitsPerSample) / 8;
  const blockBytes = rowBytes * l.blockHeight;
  if (blockBytes < FILE_INFLATE_MIN) return undefined;
  // Predictor 2 works on the sample's words (a complex sample's parts), as in decoders.ts.
  const word = storage.parts === 2 ? l.bitsPerSample / 16 : l.bitsPerSample / 8;
  if (l.predictor === 2 && ![1, 2, 4, 8].includes(word)) return undefined;
  return {
    storage,
    rowBytes,
    blockBytes,
    numbers: l.blockWidth * l.blockHeight * chunkSpp * storage.parts,
    ...(l.predictor === 2 ? { predictor: { stride: chunkSpp * storage.parts, word } } : {}),
  };
}
/** Smaller blocks are read and inflated here: a message to a codec thread would cost more. */
const FILE_INFLATE_MIN = 32 * 1024;

/**
 * Block `index` of `image` read and inflated on a codec thread: the samples as decoders.ts gives
 * them for this layout, and its failures as a read and decoders.ts name them (a block cut short
 * by the end of the file, a DEFLATE stream that does not decode, gives too little or too much).
 */
async function inflateFromFile(
  src: ByteSource,
  image: ImageReader,
  index: number,
  f: FileInflate,
  into?: InflateTarget,
): Promise<SampleArray> {
  const l = image.layout;
  const offset = l.offsets[index]!;
  const count = l.byteCounts[index]!;
  // The rows a block must hold: a whole tile; the rows of a strip inside the image.
  const perPlane = l.across * l.down;
  const rows = l.tiled ? l.blockHeight : Math.min(l.blockHeight, l.height - Math.floor((index % perPlane) / l.across) * l.blockHeight);
  const needed = f.rowBytes * rows;
  const corrupt = (why: string): EngineError => blockError(src, image, index, `does not decode: ${why}`);
  // No DEFLATE stream expands further than 1032:1.
  if (needed > count * 1032) {
    throw corrupt(`${count} compressed bytes cannot give the ${needed} bytes its pixels need: the data is cut short or corrupt`);
  }
  let bytes: Uint8Array;
  try {
    bytes = await src.withDescriptor!((fd) => inflateFileBlock(fd, offset, count, f.blockBytes, into));
  } catch (e) {
    if (e instanceof BlockReadError) {
      if (e.ended) throw blockError(src, image, index, cutShort(src, offset, count, e.bytesRead));
      throw blockError(src, image, index, `cannot be read (${e.message})`, e);
    }
    if ((e as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw corrupt(`DEFLATE data inflates to more than the ${f.blockBytes} bytes of the block: the data is corrupt`);
    }
    throw blockError(src, image, index, `does not decode: ${messageOf(e)}`, e);
  }
  if (bytes.length < needed)
    throw corrupt(`DEFLATE gives ${bytes.length} bytes where its pixels need ${needed}: the data is cut short or corrupt`);
  if (into !== undefined) {
    // The target's bytes past the output (a short last strip) are zeroed, as a fresh block's.
    if (bytes.length < f.blockBytes) new Uint8Array(into.memory, into.at + bytes.length, f.blockBytes - bytes.length).fill(0);
    bytes = new Uint8Array(into.memory, into.at, f.blockBytes);
  }
  // A private, aligned, full-size block (a short last strip padded), not a view into a larger buffer.
  else if (bytes.buffer.byteLength > 2 * f.blockBytes + 4096 || bytes.byteOffset % f.storage.size !== 0 || bytes.length < f.blockBytes) {
    const copy = new Uint8Array(f.blockBytes);
    copy.set(bytes.length > f.blockBytes ? bytes.subarray(0, f.blockBytes) : bytes);
    bytes = copy;
  }
  if (f.predictor) horizontalPredictor(bytes, l.blockWidth, l.blockHeight, f.predictor.stride, f.predictor.word);
  return new f.storage.array(bytes.buffer, bytes.byteOffset, f.numbers);
}

/**
 * Which block `index` of `image` is, for messages, in libtiff's numbering (0-based, planes of a
 * separate-planes image one after another): "strip 12 (rows 60-64) of band 1", "tile 3
 * (columns 256-511, rows 0-255) of bands 1-3", "... of overview 2".
 */
function blockName(image: Pick<ImageReader, 'layout' | 'label' | 'mask'>, index: number): string {
  const l = image.layout;
  const perPlane = l.across * l.down;
  const plane = Math.floor(index / perPlane);
  const bx = (index % perPlane) % l.across;
  const by = Math.floor((index % perPlane) / l.across);
  const rows = `rows ${by * l.blockHeight}-${Math.min(l.height, (by + 1) * l.blockHeight) - 1}`;
  const where = l.tiled
    ? `tile ${index} (columns ${bx * l.blockWidth}-${Math.min(l.width, (bx + 1) * l.blockWidth) - 1}, ${rows})`
    : `strip ${index} (${rows})`;
  const bands = image.mask
    ? ''
    : l.planar === 2
      ? ` of band ${plane + 1}`
      : l.samplesPerPixel > 1
        ? ` of bands 1-${l.samplesPerPixel}`
        : ' of band 1';
  return `${where}${bands}${image.label}`;
}

const blockError = (src: ByteSource, image: ImageReader, index: number, why: string, cause?: unknown): EngineError =>
  ioError(`${src.location}: ${blockName(image, index)} ${why}`, cause);

function cutShort(src: ByteSource, offset: number, count: number, got: number): string {
  const size = src.size === undefined ? '' : ` (the file has ${src.size} bytes)`;
  return `is cut short: ${count} bytes at offset ${offset}, only ${got} of them are in the file${size}; the file is truncated or the block's offset is corrupt`;
}

/**
 * Whether block `index` holds data (false: a sparse block, offset and byte count both 0, as GDAL
 * writes with SPARSE_OK). An offset without bytes, bytes at offset 0 (the header) or a block
 * reaching past the end of the file are IO_ERRORs naming the block.
 */
function blockHasData(src: ByteSource, image: ImageReader, index: number): boolean {
  const l = image.layout;
  const offset = l.offsets[index]!;
  const count = l.byteCounts[index]!;
  if (offset === 0 && count === 0) return false;
  if (!(count > 0)) throw blockError(src, image, index, `has no data: its byte count is ${count} while its offset is ${offset}`);
  if (!(offset > 0))
    throw blockError(src, image, index, `has ${count} bytes at offset ${offset}, inside the TIFF header: the offset is corrupt`);
  const size = src.size;
  if (size !== undefined && offset + count > size) {
    throw blockError(
      src,
      image,
      index,
      offset >= size
        ? `starts at offset ${offset}, past the end of the file (${size} bytes); the file is truncated or the offset is corrupt`
        : cutShort(src, offset, count, size - offset),
    );
  }
  return true;
}

/** `image.decode`, its failures (corrupt or short compressed data) an IO_ERROR naming the block. */
async function decodeBlock(src: ByteSource, image: ImageReader, raw: Uint8Array, index: number): Promise<SampleArray> {
  try {
    return await image.decode(raw, index);
  } catch (e) {
    throw blockError(src, image, index, `does not decode: ${messageOf(e)}`, e);
  }
}

/**
 * Promise.all that rejects only once every promise has settled: a failed read must not leave
 * copies still writing into the planes (the caller's own block, with `readInto`).
 */
async function settleAll(promises: readonly Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(promises);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}

/**
 * Scratch buffers by byte length, reused across reads: at most SCRATCH_KEPT of each size and
 * SCRATCH_BYTES in all, the sizes used longest ago dropped first.
 * Decision: 64 MiB in all (16 blocks of 4 MiB), as the tile cache's default; without a total, every
 * distinct block size a process met stayed, 16 buffers each (files of many layouts, or hostile
 * ones: one 256 MiB strip read could leave 4 GiB pooled).
 */
const scratchPool = new Map<number, Uint8Array[]>();
const SCRATCH_KEPT = 16;
const SCRATCH_BYTES = 64 * 2 ** 20;
let scratchKept = 0;

function takeScratch(size: number): Uint8Array {
  const buf = scratchPool.get(size)?.pop();
  if (!buf) return new Uint8Array(size);
  scratchKept -= size;
  return buf;
}

function keepScratch(buf: Uint8Array): void {
  const size = buf.byteLength;
  const list = scratchPool.get(size) ?? [];
  if (list.length >= SCRATCH_KEPT || size > SCRATCH_BYTES) return;
  for (const [other, kept] of scratchPool) {
    if (scratchKept + size <= SCRATCH_BYTES) break;
    if (other === size) continue;
    scratchKept -= other * kept.length;
    scratchPool.delete(other);
  }
  if (scratchKept + size > SCRATCH_BYTES) return;
  list.push(buf);
  scratchPool.delete(size); // re-inserted last: the most recently used size
  scratchPool.set(size, list);
  scratchKept += size;
}
/** Scratch reads in flight per read request. */
const SCRATCH_IN_FLIGHT = 8;

/** Read uncompressed whole blocks into scratch buffers, decode in place (byte order, predictor) and `use` each. */
async function readScratch(
  src: ByteSource,
  image: ImageReader,
  blocks: readonly { index: number; bx: number; by: number; chunk: number }[],
  blockBytes: number,
  offsets: ArrayLike<number>,
  signal: AbortSignal | undefined,
  use: (block: DecodedBlock, bx: number, by: number, chunk: number) => void,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    const buf = takeScratch(blockBytes);
    try {
      while (!failed && next < blocks.length) {
        const w = blocks[next++]!;
        let got: number;
        try {
          got = await src.readInto!(offsets[w.index]!, buf, signal);
        } catch (e) {
          throw isAbort(e) || signal?.aborted ? e : blockError(src, image, w.index, `cannot be read (${messageOf(e)})`, e);
        }
        if (got !== blockBytes) throw blockError(src, image, w.index, cutShort(src, offsets[w.index]!, blockBytes, got));
        const data = await decodeBlock(src, image, buf, w.index);
        use({ data, byteLength: data.byteLength, reused: true }, w.bx, w.by, w.chunk);
      }
    } catch (e) {
      failed = true; // the other readers stop at their next block
      throw e;
    } finally {
      keepScratch(buf);
    }
  };
  await settleAll(Array.from({ length: Math.min(SCRATCH_IN_FLIGHT, blocks.length) }, worker));
}

/**
 * Whether a decoded block may hold a NaN sample (`float`) or one equal to `nd` (`testNd`);
 * false positives (an infinite sum) only cost a per-pixel scan later.
 */
function blockMayBeInvalid(data: SampleArray, float: boolean, testNd: boolean, nd: number): boolean {
  if (testNd && data.indexOf(nd) >= 0) return true;
  if (!float) return false;
  // A sum is NaN when any term is NaN (or +inf meets -inf): four running sums, no branch.
  const n = data.length & ~3;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  for (let i = 0; i < n; i += 4) {
    s0 += data[i]!;
    s1 += data[i + 1]!;
    s2 += data[i + 2]!;
    s3 += data[i + 3]!;
  }
  for (let i = n; i < data.length; i++) s0 += data[i]!;
  const s = s0 + s1 + s2 + s3;
  return s !== s;
}

/**
 * Row views of a scratch buffer (`rows` rows of `rowLength` samples), made once per buffer: the
 * scratch buffers are read into again and again, and a fresh `subarray` per row cost as much as
 * the copy itself (a whole 4096 x 4096 read copies 65536 rows: 18 ms -> 9 ms). Not for cached
 * blocks: each is copied whole once, and the views, kept as long as the block (64 MiB of F32
 * blocks: 65,536 of them), made every collection longer.
 */
const ROW_VIEWS = new WeakMap<ArrayBufferLike, { readonly data: SampleArray; readonly views: readonly SampleArray[] }>();
function rowViews(data: SampleArray, rowLength: number, rows: number): readonly SampleArray[] {
  const hit = ROW_VIEWS.get(data.buffer);
  if (
    hit &&
    hit.data.byteOffset === data.byteOffset &&
    hit.data.constructor === data.constructor &&
    hit.views.length === rows &&
    hit.views[0]!.length === rowLength
  ) {
    return hit.views;
  }
  const views: SampleArray[] = [];
  for (let y = 0; y < rows; y++) views.push(data.subarray(y * rowLength, (y + 1) * rowLength));
  ROW_VIEWS.set(data.buffer, { data, views });
  return views;
}

/** Row parts of at most this many samples are copied by a loop (`copyBlock`). */
const SHORT_ROW = 16;

/**
 * Copy the part of a decoded block inside `win` into the planes of rectangle `r`; `reused`: the
 * block's buffer is a scratch buffer (`rowViews`).
 */
function copyBlock(
  data: SampleArray,
  reused: boolean,
  l: TiffImageLayout,
  k: number,
  bx: number,
  by: number,
  chunk: number,
  win: Rect,
  r: Rect,
  planes: readonly Plane[],
): void {
  const bw = l.blockWidth;
  const x0 = Math.max(win.x, bx * bw);
  const x1 = Math.min(win.x + win.width, (bx + 1) * bw);
  const y0 = Math.max(win.y, by * l.blockHeight);
  const y1 = Math.min(win.y + win.height, (by + 1) * l.blockHeight);
  if (x1 <= x0 || y1 <= y0) return;
  const n = x1 - x0;
  const spp = l.planar === 1 ? l.samplesPerPixel : 1;
  if (spp === 1) {
    const plane = planes[l.planar === 1 ? 0 : chunk] as Float64Array;
    // A block and a window both in wasm memory (a render's tiles): its rows copied by one call.
    const from = ((y0 - by * l.blockHeight) * bw + (x0 - bx * bw)) * k;
    if (copyRowsInWasm(data, from, bw * k, plane, ((y0 - r.y) * r.width + (x0 - r.x)) * k, r.width * k, n * k, y1 - y0)) return;
    // Whole block rows (most of a large read) from the block's row views, others by subarray.
    const rows = n === bw && reused ? rowViews(data, bw * k, l.blockHeight) : undefined;
    for (let y = y0; y < y1; y++) {
      const dst = ((y - r.y) * r.width + (x0 - r.x)) * k;
      const row = y - by * l.blockHeight;
      if (rows) plane.set(rows[row] as Float64Array, dst);
      else if (n * k <= SHORT_ROW) {
        // A few samples (the column a halo takes from the block beside): a loop, not a subarray
        // object per row (a 256 x 256 tile with a halo of 1 takes 516 such rows).
        const src = (row * bw + (x0 - bx * bw)) * k;
        for (let i = 0; i < n * k; i++) plane[dst + i] = (data as Float64Array)[src + i]!;
      } else {
        const src = (row * bw + (x0 - bx * bw)) * k;
        plane.set((data as Float64Array).subarray(src, src + n * k), dst);
      }
    }
    return;
  }
  for (let s = 0; s < spp; s++) {
    const plane = planes[s]!;
    for (let y = y0; y < y1; y++) {
      const src = ((y - by * l.blockHeight) * bw + (x0 - bx * bw)) * spp * k;
      const dst = ((y - r.y) * r.width + (x0 - r.x)) * k;
      if (k === 1) {
        for (let i = 0, si = src + s, di = dst; i < n; i++, si += spp, di++) plane[di] = data[si]!;
      } else {
        for (let i = 0, si = src + 2 * s, di = dst; i < n; i++, si += 2 * spp, di += 2) {
          plane[di] = data[si]!;
          plane[di + 1] = data[si + 1]!;
        }
      }
    }
  }
}

function makeSource(
  id: string,
  location: string,
  src: ByteSource,
  image: ImageReader,
  info: RasterInfo,
  maskImage: ImageReader | undefined,
  overviews: readonly OverviewReader[],
): GeoTiffSource {
  let closed = false;
  const level = (ov: OverviewReader | undefined, levelInfo: RasterInfo, levelId: string): SourceNode => {
    const img = ov ? ov.image : image;
    const msk = ov ? ov.mask : maskImage;
    return {
      kind: 'source',
      id: levelId,
      info: levelInfo,
      read: (r, signal) => {
        if (closed) return Promise.reject(ioError(`${location} is closed`));
        return readBlock(src, img, msk, levelInfo, r, signal, location);
      },
    };
  };
  const base = level(undefined, info, id);
  const levels = overviews.map((ov, i) => {
    const { width, height } = ov.image.layout;
    const levelInfo: RasterInfo = {
      ...info,
      width,
      height,
      cellSize: { x: (info.extent.xmax - info.extent.xmin) / width, y: (info.extent.ymax - info.extent.ymin) / height },
    };
    return level(ov, levelInfo, `${id}#overview${i + 1}`);
  });

  // One row of blocks of the image, decoded, while it is open (the render's cache size).
  const l = image.layout;
  const storage = storageOf(l.sampleFormat, l.bitsPerSample);
  const forgetRow = noteBlockRow(storage ? l.across * l.blockWidth * l.blockHeight * l.samplesPerPixel * storage.size * storage.parts : 0);
  return {
    kind: 'source',
    id,
    info,
    location,
    overviews: overviews.map((o) => ({ width: o.image.layout.width, height: o.image.layout.height })),
    async close() {
      if (closed) return;
      closed = true;
      forgetRow();
      await src.close();
    },
    read: base.read,
    verifyBlocks() {
      for (const img of [image, maskImage, ...overviews.flatMap((o) => [o.image, o.mask])]) {
        if (img === undefined) continue;
        const l = img.layout;
        const blocks = l.across * l.down * (l.planar === 2 ? l.samplesPerPixel : 1);
        for (let i = 0; i < blocks; i++) blockHasData(src, img, i);
      }
    },
    async readInto(block: PixelBlock, signal?: AbortSignal): Promise<PixelBlock> {
      if (closed) throw ioError(`${location} is closed`);
      checkTarget(block, info);
      return readBlock(src, image, maskImage, info, block.rect, signal, location, block);
    },
    overview(n: number): SourceNode {
      if (n === 0) return base;
      const s = levels[n - 1];
      if (!Number.isInteger(n) || !s)
        throw new EngineError('INVALID_ARGUMENT', `${location} has ${levels.length} overview(s); no level ${n}`, { path: 'overview' });
      return s;
    },
    readDownsampled: (r: Rect, width: number, height: number, signal?: AbortSignal): Promise<PixelBlock> =>
      readDownsampledFrom([base, ...levels], r, width, height, signal),
    approximateStatistics: (signal?: AbortSignal) =>
      approximateStatistics(
        [image, ...overviews.map((o) => o.image)].map((img, i) => ({
          node: i === 0 ? base : levels[i - 1]!,
          blockWidth: img.layout.blockWidth,
          blockHeight: img.layout.blockHeight,
        })),
        signal,
      ),
  };
}

/**
 * GDAL's choice of level for a reduction by `factor` (full-resolution pixels per output pixel):
 * the overview with the largest reduction not above it (1.2 tolerance, the spirit of
 * GDAL_OVERVIEW_OVERSAMPLING_THRESHOLD); else the full image, `levels[0]`.
 */
function chooseLevel(levels: readonly SourceNode[], factor: number): SourceNode {
  let chosen = levels[0]!;
  for (const s of levels.slice(1)) if (levels[0]!.info.width / s.info.width <= factor * 1.2) chosen = s;
  return chosen;
}

/**
 * `source`'s whole extent as a `width` x `height` raster: a downsampled request (GDAL's
 * `-outsize`), read from the overview GDAL would choose (`chooseLevel`) by nearest neighbour,
 * output pixel X taking level column floor((X + 0.5) * levelWidth / width) as GDAL's RasterIO
 * does (computed exactly in integers, so tiles agree with the whole). Cell sizes follow from the
 * extent; statistics are the source's. Sizes above the source's read the full image, upsampled.
 */
export function outsizeSource(
  source: SourceNode & Pick<GeoTiffSource, 'overviews' | 'overview'>,
  width: number,
  height: number,
): SourceNode {
  checkOutputSize(width, height, 'outsize');
  const { info } = source;
  const levels = [source, ...(source.overviews ?? []).map((_, i) => source.overview!(i + 1))];
  const level = chooseLevel(levels, Math.min(info.width / width, info.height / height));
  const e = info.extent;
  return {
    kind: 'source',
    id: `${source.id}@${width}x${height}`,
    info: { ...info, width, height, cellSize: { x: (e.xmax - e.xmin) / width, y: (e.ymax - e.ymin) / height } },
    async read(r: Rect, signal?: AbortSignal): Promise<PixelBlock> {
      const out = allocateBlock(r, info.pixelType, info.bandCount);
      out.mask.fill(0);
      const win = intersect(r, { x: 0, y: 0, width, height });
      if (win) await sampleNearest(level, info, { x: 0, y: 0, width: info.width, height: info.height }, width, height, win, out, signal);
      return out;
    },
  };
}

/**
 * `rect` of the full-resolution grid (`levels[0]`) resampled by nearest neighbour to `width` x
 * `height`, read from the overview GDAL would choose among `levels` (full image first, then the
 * overviews, largest first); the block's rect is (0, 0, width, height). Shared by GeoTIFF sources
 * and the sources that wrap them (multidim-source.ts), so a wrapper's own reads are the ones used.
 */
export async function readDownsampledFrom(
  levels: readonly SourceNode[],
  r: Rect,
  width: number,
  height: number,
  signal?: AbortSignal,
): Promise<PixelBlock> {
  checkOutputSize(width, height, 'size');
  const { info } = levels[0]!;
  const level = chooseLevel(levels, Math.min(r.width / width, r.height / height));
  const all = { x: 0, y: 0, width, height };
  const out = allocateBlock(all, info.pixelType, info.bandCount);
  await sampleNearest(level, info, r, width, height, all, out, signal);
  return out;
}

function checkOutputSize(width: number, height: number, path: string): void {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
    throw new EngineError('INVALID_ARGUMENT', `bad output size ${width}x${height}`, { path });
  }
}

/**
 * Nearest-neighbour samples of `level` (an image of the raster `full`) for the full-resolution
 * rectangle `r` (integers) shown as `width` x `height` output pixels: output pixel (x, y) takes
 * the level pixel under full-resolution position r.x + (x + 0.5) r.width / width, as GDAL's
 * RasterIO does. Computed exactly in integers (numerators below 2^53; a quotient is never within
 * a rounding of an integer it is not), so any window `win` of the output agrees with the whole.
 * Written into `out` (whose rect holds `win`), mask from the level's.
 */
async function sampleNearest(
  level: SourceNode,
  full: { width: number; height: number },
  r: Rect,
  width: number,
  height: number,
  win: Rect,
  out: PixelBlock,
  signal?: AbortSignal,
): Promise<void> {
  const { width: lw, height: lh } = level.info;
  const col = (x: number): number => Math.floor(((2 * r.x * width + (2 * x + 1) * r.width) * lw) / (2 * width * full.width));
  const row = (y: number): number => Math.floor(((2 * r.y * height + (2 * y + 1) * r.height) * lh) / (2 * height * full.height));
  const c0 = col(win.x);
  const r0 = row(win.y);
  const src = await level.read(
    { x: c0, y: r0, width: col(win.x + win.width - 1) - c0 + 1, height: row(win.y + win.height - 1) - r0 + 1 },
    signal,
  );
  const k = PIXEL_TYPE_INFO[out.pixelType].complex ? 2 : 1;
  const sw = src.rect.width;
  const cols = new Int32Array(win.width);
  for (let x = 0; x < win.width; x++) cols[x] = col(win.x + x) - c0;
  const o = out.rect;
  for (let y = 0; y < win.height; y++) {
    const so = (row(win.y + y) - r0) * sw;
    const d0 = (win.y - o.y + y) * o.width + (win.x - o.x);
    for (let x = 0; x < win.width; x++) {
      const si = so + cols[x]!;
      const di = d0 + x;
      out.mask[di] = src.mask[si]!;
      for (let b = 0; b < out.bands.length; b++) {
        out.bands[b]![k * di] = src.bands[b]![k * si]!;
        if (k === 2) out.bands[b]![k * di + 1] = src.bands[b]![k * si + 1]!;
      }
    }
  }
}

/** `readInto`'s check of the caller's block against the raster: errors name the field. */
function checkTarget(block: PixelBlock, info: RasterInfo): void {
  const bad = (path: string, what: string): EngineError => new EngineError('INVALID_ARGUMENT', `readInto: ${what}`, { path });
  const { rect: r } = block;
  if (!(
    Number.isInteger(r.x) &&
    Number.isInteger(r.y) &&
    Number.isInteger(r.width) &&
    Number.isInteger(r.height) &&
    r.width > 0 &&
    r.height > 0
  )) {
    throw bad('block.rect', `the rect must have integer x, y and positive integer width, height (got ${JSON.stringify(r)})`);
  }
  if (block.pixelType !== info.pixelType) throw bad('block.pixelType', `the raster is ${info.pixelType}, the block ${block.pixelType}`);
  if (block.bands.length !== info.bandCount)
    throw bad('block.bands', `the raster has ${info.bandCount} band(s), the block ${block.bands.length}`);
  const n = r.width * r.height;
  const { array, complex } = PIXEL_TYPE_INFO[info.pixelType];
  block.bands.forEach((p, b) => {
    if (!(p instanceof array) || p.length !== (complex ? 2 : 1) * n) {
      throw bad(
        `block.bands[${b}]`,
        `a ${info.pixelType} plane of ${r.width}x${r.height} is a ${array.name} of length ${(complex ? 2 : 1) * n}`,
      );
    }
  });
  if (!(block.mask instanceof Uint8Array) || block.mask.length !== n)
    throw bad('block.mask', `the mask of ${r.width}x${r.height} is a Uint8Array of length ${n}`);
}

/** Zero the pixels (`k` numbers each) of a plane of rectangle `r` that lie outside `win` (inside `r`). */
function zeroOutside(p: Plane, r: Rect, win: Rect, k: number): void {
  const w = r.width;
  const top = win.y - r.y;
  const bottom = top + win.height;
  const left = win.x - r.x;
  const right = left + win.width;
  fillPlane(p, 0, 0, top * w * k);
  fillPlane(p, 0, bottom * w * k, r.height * w * k);
  if (left === 0 && right === w) return;
  // The columns of a halo: a few samples a row, zeroed by a loop (a fill call per row costs more).
  const zero = (from: number, to: number): void => {
    if (to - from > SHORT_ROW) fillPlane(p, 0, from, to);
    else for (let i = from; i < to; i++) p[i] = 0;
  };
  for (let y = top; y < bottom; y++) {
    if (left > 0) zero(y * w * k, (y * w + left) * k);
    if (right < w) zero((y * w + right) * k, (y + 1) * w * k);
  }
}

/** What `startRead` began: the block being read into, the decodes it waits for, and what `finishRead` does after them. */
interface ReadInFlight {
  readonly block: PixelBlock;
  /** Empty when the window misses the image (the block is done). */
  readonly jobs: readonly Promise<void>[];
  readonly win: Rect | undefined;
  /** Regions (x0, y0, x1, y1, plane or -1 for all) whose pixels are checked for NaN and NoData. */
  readonly scan: number[];
  /** The mask is made in wasm once the blocks are copied (`maskInvalid`). */
  readonly inWasm: boolean;
  readonly testNd: boolean;
  readonly nd: number | undefined;
  readonly k: number;
}

/**
 * Read `r` of one image (the main one or an overview) into a block (`into`'s planes and mask
 * when given, else fresh ones); mask as the header says. Its parts before and after the wait
 * are functions of their own (`startRead`, `finishRead`): the engine optimizes a function once
 * enough of its code has run, and this one runs once per tile, to no profit before a render of a
 * few hundred tiles ends (compiling the whole read cost about 40 ms of a 4096^2 render's CPU).
 */
async function readBlock(...args: Parameters<typeof startRead>): Promise<PixelBlock> {
  const [, , , , r, signal, location] = args;
  const read = startRead(...args);
  if (read.jobs.length === 0) return read.block;
  try {
    await settleAll(read.jobs);
  } catch (e) {
    if (e instanceof EngineError) throw e;
    throw isAbort(e) || signal?.aborted ? aborted(e) : ioError(`cannot read ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  if (signal?.aborted) throw aborted(signal.reason);
  return finishRead(read, r);
}

/** `readBlock` up to the wait: the block's planes and mask set up, the decodes of its blocks started. */
function startRead(
  src: ByteSource,
  image: ImageReader,
  maskImage: ImageReader | undefined,
  info: RasterInfo,
  r: Rect,
  signal: AbortSignal | undefined,
  location: string,
  into?: PixelBlock,
): ReadInFlight {
  if (signal?.aborted) throw aborted(signal.reason);
  const { width, height, bandCount, pixelType, noData } = info;
  const k = PIXEL_TYPE_INFO[pixelType].complex ? 2 : 1;
  const float = !PIXEL_TYPE_INFO[pixelType].integer;
  const n = r.width * r.height;
  const win = intersect(r, { x: 0, y: 0, width, height });
  let mask: Uint8Array;
  let bands: Plane[];
  if (into) {
    ({ mask, bands } = into);
    // Every pixel inside the raster is written below; those outside read 0, mask 0, as fresh
    // (only they are zeroed: a render's edge tile has a halo's few rows and columns outside).
    if (!win) {
      fillPlane(mask, 0);
      for (const p of bands) fillPlane(p, 0);
    } else if (win.width !== r.width || win.height !== r.height) {
      zeroOutside(mask, r, win, 1);
      for (const p of bands) zeroOutside(p, r, win, k);
    }
  } else {
    mask = new Uint8Array(n);
    bands = [];
    for (let b = 0; b < bandCount; b++) bands.push(allocatePlane(pixelType, n));
  }
  const block = into ?? { rect: r, pixelType, bands, mask };
  if (!win) return { block, jobs: [], win, scan: [], inWasm: false, testNd: false, nd: undefined, k };
  const l = image.layout;
  const chunks = l.planar === 2 ? Array.from({ length: bandCount }, (_, i) => i) : [0];
  // Mask 0 where any band is NoData (or NaN in float bands).
  // ASSUMPTION (spec silent): NaN pixels of float rasters are masked even when NoData is not
  // NaN (the engine's rule "NaN -> NoData"); complex pixels are tested on their real part.
  // A float32 band holds the NoData value rounded to float32, as GDAL compares it.
  const nd = noData !== undefined && (pixelType === 'F32' || pixelType === 'C64') ? Math.fround(noData) : noData;
  const testNd = nd !== undefined && !Number.isNaN(nd);
  // Regions (x0, y0, x1, y1, plane or -1 for all) of blocks that may hold NaN/NoData samples:
  // only these are scanned pixel by pixel (each block is checked once, when first read).
  const scan: number[] = [];
  // A float window read into wasm memory (a render's tile) gets its mask in wasm after the copies,
  // all of it at once: no check of the blocks, no scan in TypeScript (the same mask: 0 where NaN or NoData).
  const inWasm = into !== undefined && k === 1 && float && bands.every((p) => canMaskInWasm(p, mask));
  const jobs: Promise<void>[] = [
    forEachBlock(src, image, win, chunks, sparseFill(l, pixelType, noData), signal, (blk, bx, by, chunk) => {
      copyBlock(blk.data, blk.reused === true, l, k, bx, by, chunk, win, r, bands);
      if (!(testNd || float) || inWasm) return;
      blk.invalid ??= blockMayBeInvalid(blk.data, float, testNd, nd ?? 0);
      if (!blk.invalid) return;
      const x0 = Math.max(win.x, bx * l.blockWidth);
      const x1 = Math.min(win.x + win.width, (bx + 1) * l.blockWidth);
      const y0 = Math.max(win.y, by * l.blockHeight);
      const y1 = Math.min(win.y + win.height, (by + 1) * l.blockHeight);
      if (x1 > x0 && y1 > y0) scan.push(x0, y0, x1, y1, l.planar === 2 ? chunk : -1);
    }),
  ];
  if (maskImage) {
    const ml = maskImage.layout;
    jobs.push(
      forEachBlock(src, maskImage, win, [0], 0, signal, ({ data }, bx, by) => {
        const x0 = Math.max(win.x, bx * ml.blockWidth);
        const x1 = Math.min(win.x + win.width, (bx + 1) * ml.blockWidth);
        const y0 = Math.max(win.y, by * ml.blockHeight);
        const y1 = Math.min(win.y + win.height, (by + 1) * ml.blockHeight);
        for (let y = y0; y < y1; y++) {
          const s = (y - by * ml.blockHeight) * ml.blockWidth - bx * ml.blockWidth;
          const d = (y - r.y) * r.width - r.x;
          for (let x = x0; x < x1; x++) mask[d + x] = data[s + x] === 0 ? 0 : 1;
        }
      }),
    );
  } else if (win.width === r.width && win.height === r.height) {
    fillPlane(mask, 1);
  } else {
    for (let y = 0; y < win.height; y++) {
      const d = (win.y - r.y + y) * r.width + (win.x - r.x);
      fillPlane(mask, 1, d, d + win.width);
    }
  }
  return { block, jobs, win, scan, inWasm, testNd, nd, k };
}

/** `readBlock` after the wait: the mask from the samples where the header gives none. */
function finishRead(read: ReadInFlight, r: Rect): PixelBlock {
  const { block, win, scan, inWasm, testNd, nd, k } = read;
  const { bands, mask } = block;
  // Pixels outside the raster are 0 with mask 0 already: masking them again changes nothing.
  // (Should wasm refuse after all, the band's whole window is scanned below instead.)
  if (inWasm) {
    bands.forEach((p, b) => {
      if (!maskInvalid(p, mask, testNd, nd ?? 0)) scan.push(win!.x, win!.y, win!.x + win!.width, win!.y + win!.height, b);
    });
  }
  for (let j = 0; j < scan.length; j += 5) {
    const [x0, y0, x1, y1, which] = [scan[j]!, scan[j + 1]!, scan[j + 2]!, scan[j + 3]!, scan[j + 4]!];
    for (let b = 0; b < bands.length; b++) {
      if (which >= 0 && which !== b) continue;
      const plane = bands[b]!;
      for (let y = y0; y < y1; y++) {
        const row = (y - r.y) * r.width - r.x;
        if (k === 1 && !testNd) {
          for (let i = row + x0; i < row + x1; i++) {
            const v = plane[i]!;
            if (v !== v) mask[i] = 0;
          }
        } else if (k === 1) {
          for (let i = row + x0; i < row + x1; i++) {
            const v = plane[i]!;
            if (v === nd || v !== v) mask[i] = 0;
          }
        } else {
          for (let i = row + x0; i < row + x1; i++) {
            const v = plane[2 * i]!;
            if (v === nd || v !== v || plane[2 * i + 1] !== plane[2 * i + 1]) mask[i] = 0;
          }
        }
      }
    }
  }
  return block;
}

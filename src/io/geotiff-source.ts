/**
 * GeoTIFF / COG sources: `openGeoTiff(location)` opens a local file or an http(s) URL through
 * geotiff.js (`fromFile`, or `fromUrl`, which reads a COG with HTTP range requests) and returns a
 * `SourceNode` whose `read(rect)` decodes only the tiles or strips crossing the rectangle.
 *
 * `info` comes from the first image (full resolution; overviews are not used): pixel type from
 * SampleFormat/BitsPerSample, NoData from GDAL_NODATA, the north-up grid from ModelPixelScale +
 * ModelTiepoint or ModelTransformation (rotated or GCP-georeferenced rasters are rejected),
 * the spatial reference from the GeoKeys (see srs.ts), band names and statistics from
 * GDAL_METADATA, the colormap of a palette image (PhotometricInterpretation 3) from its ColorMap
 * (`colormapFromTiff`). Pixels outside the raster, equal to NoData or NaN get mask 0, and so do the
 * pixels GDAL's internal mask marks invalid: a 1-bit (or 8-bit) transparency-mask image of the
 * first image's size, as `GDAL_TIFF_INTERNAL_MASK=YES` writes it and `encodeGeoTiff` does for
 * integer rasters without NoData (see `findMaskImage`).
 * Errors: a bad path, a file or URL that is not a TIFF -> IO_ERROR at `input`; a TIFF the engine
 * cannot represent -> UNSUPPORTED_INPUT at `input`.
 */
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { fromFile, fromUrl, getDecoder, type GeoTIFF, type GeoTIFFImage } from 'geotiff';
import { EngineError } from '../core/errors.js';
import type { Colormap, Extent, PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, PIXEL_TYPE_INFO, type PixelType, type Plane } from '../core/pixel-type.js';
import { intersect, type Rect } from '../core/rect.js';
import type { SourceNode } from '../graph/types.js';
import { bandNamesOf, parseGdalMetadata, parseNoData, statisticsOf } from './gdal-metadata.js';
import { readComplexWindow, type ComplexLayout } from './geotiff-complex.js';
import { spatialReferenceFromGeoKeys } from './srs.js';

export interface OpenOptions {
  readonly signal?: AbortSignal;
  /** Node id; defaults to the location. */
  readonly id?: string;
}

/** A GeoTIFF source; `close()` releases the file handle of a local file. */
export interface GeoTiffSource extends SourceNode {
  readonly location: string;
  close(): Promise<void>;
}

const INPUT = 'input';

/** Open a GeoTIFF or COG (local path, `file:` URL, or http(s) URL). */
export async function openGeoTiff(location: string, options: OpenOptions = {}): Promise<GeoTiffSource> {
  const { signal } = options;
  const isUrl = /^https?:\/\//i.test(location);
  const path = /^file:/i.test(location) ? fileURLToPath(location) : location;
  if (isUrl) rejectServiceUrl(location);
  else await checkTiffMagic(path);
  if (signal?.aborted) throw aborted(signal.reason);

  let tiff: GeoTIFF;
  try {
    tiff = isUrl ? await fromUrl(location, {}, signal) : await fromFile(path, signal);
  } catch (e) {
    throw openFailure(location, isUrl, e);
  }
  try {
    const image = await tiff.getImage(0);
    const { info, layout } = await describeImage(image, location);
    const mask = await findMaskImage(tiff, image, location);
    return makeSource(options.id ?? location, location, tiff, image, info, layout, mask);
  } catch (e) {
    await Promise.resolve(tiff.close()).catch(() => undefined);
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
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : String(e);
    throw ioError(`cannot open ${path}: ${why}`, e);
  }
  const ii = head[0] === 0x49 && head[1] === 0x49 && (head[2] === 42 || head[2] === 43) && head[3] === 0;
  const mm = head[0] === 0x4d && head[1] === 0x4d && head[2] === 0 && (head[3] === 42 || head[3] === 43);
  if (!ii && !mm) throw ioError(`${path} is not a TIFF file (only GeoTIFF/COG inputs are readable)`);
}

function openFailure(location: string, isUrl: boolean, e: unknown): EngineError {
  if (isAbort(e)) return aborted(e);
  const why = e instanceof Error ? e.message : String(e);
  if (isUrl) return ioError(`cannot read ${location} as a GeoTIFF (${why}); only COG/GeoTIFF URLs are readable`, e);
  return ioError(`cannot read ${location} as a GeoTIFF: ${why}`, e);
}

// ---- Describing

interface Layout {
  readonly pixelType: PixelType;
  /** Set for complex images, which geotiff.js cannot decode (see geotiff-complex.ts). */
  readonly complex?: ComplexLayout;
}

/** SampleFormat + BitsPerSample -> pixel type; undefined when the engine has no such type. */
export function pixelTypeOf(sampleFormat: number, bits: number): PixelType | undefined {
  switch (sampleFormat) {
    case 1:
      if (bits === 1 || bits === 2 || bits === 4) return (['U1', 'U2', 'U4'] as const)[bits >> 1];
      // ASSUMPTION (spec silent): other widths (NBITS 3, 12, 24, ...) widen to the next byte
      // type, as GDAL reports them; geotiff.js unpacks them so.
      return bits >= 1 && bits <= 8 ? 'U8' : bits <= 16 ? 'U16' : bits <= 32 ? 'U32' : undefined;
    case 2:
      return ({ 8: 'S8', 16: 'S16', 32: 'S32' } as const)[bits as 8];
    case 3:
      // ASSUMPTION (spec silent): half floats (16 bits) widen to F32; geotiff.js decodes them so.
      return ({ 16: 'F32', 32: 'F32', 64: 'F64' } as const)[bits as 32];
    case 5: // complex integer: CInt16 fits C64 exactly, CInt32 fits C128 exactly
      return ({ 32: 'C64', 64: 'C128' } as const)[bits as 32];
    case 6:
      return ({ 64: 'C64', 128: 'C128' } as const)[bits as 64];
    default:
      return undefined;
  }
}

const numbers = (v: unknown): number[] | undefined =>
  v === undefined || v === null ? undefined : typeof v === 'number' ? [v] : Array.from(v as ArrayLike<number>);

async function describeImage(image: GeoTIFFImage, location: string): Promise<{ info: RasterInfo; layout: Layout }> {
  const fd = image.getFileDirectory();
  const width = image.getWidth();
  const height = image.getHeight();
  const bandCount = image.getSamplesPerPixel();
  const bits = numbers(fd.getValue('BitsPerSample')) ?? [1];
  const formats = numbers(fd.getValue('SampleFormat')) ?? [1];
  if (bits.some((b) => b !== bits[0]) || formats.some((f) => f !== formats[0])) {
    throw unsupported(location, 'bands with different sample formats or bit depths are not supported');
  }
  const format = formats[0]!;
  const bps = bits[0]!;
  const pixelType = pixelTypeOf(format, bps);
  if (!pixelType) throw unsupported(location, `SampleFormat ${format} with BitsPerSample ${bps} is not supported`);
  const planar = image.planarConfiguration;
  if (bps % 8 !== 0 && planar === 1 && bandCount > 1) {
    // geotiff.js mis-addresses packed samples that are not whole bytes in pixel-interleaved images.
    throw unsupported(location, `${bps}-bit pixel-interleaved images with several bands are not supported`);
  }
  const compression = Number(fd.getValue('Compression') ?? 1);
  try {
    await getDecoder(compression, { tileWidth: 1, tileHeight: 1, planarConfiguration: planar, bitsPerSample: bits, predictor: 1 });
  } catch {
    throw unsupported(location, `TIFF compression ${compression} is not supported`);
  }
  const complex: ComplexLayout | undefined =
    format === 5 || format === 6 ? { sampleFormat: format, bitsPerSample: bps, samplesPerPixel: bandCount, planar } : undefined;

  const keys = image.getGeoKeys();
  const grid = gridOf(image, keys?.['GTRasterTypeGeoKey'] === 2, location);
  const noData = fd.hasTag('GDAL_NODATA') ? parseNoData(String(fd.getValue('GDAL_NODATA') ?? '')) : undefined;
  const md = fd.hasTag('GDAL_METADATA') ? parseGdalMetadata(String((await fd.loadValue('GDAL_METADATA')) ?? '')) : undefined;
  const spatialReference = spatialReferenceFromGeoKeys(keys);
  const bandNames = md && bandNamesOf(md, bandCount);
  const statistics = md && statisticsOf(md, bandCount);
  const colormap = await paletteOf(fd, bandCount, complex !== undefined);
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
  return { info, layout: { pixelType, ...(complex ? { complex } : {}) } };
}

type Directory = ReturnType<GeoTIFFImage['getFileDirectory']>;

/**
 * The colour table of a palette image (PhotometricInterpretation 3, one sample, a ColorMap tag)
 * as `RasterInfo.colormap`; undefined for other images.
 */
async function paletteOf(fd: Directory, bandCount: number, complex: boolean): Promise<Colormap | undefined> {
  if (bandCount !== 1 || complex || Number(fd.getValue('PhotometricInterpretation')) !== 3 || !fd.hasTag('ColorMap')) return undefined;
  const table = numbers(await fd.loadValue('ColorMap'));
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

/**
 * GDAL's internal mask of image 0, if the file has one: the first later IFD whose
 * NewSubfileType has the mask bit (4) without the reduced-image bit (1; NewSubfileType 5 is the
 * mask of an overview), with PhotometricInterpretation 4 (transparency mask), image 0's width
 * and height, one unsigned sample of 1 or 8 bits (GDAL's conditions in its GTiff driver).
 * Overviews (NewSubfileType 1), their masks and other pages are skipped, and image 0 stays the
 * image that is read. GDAL writes the mask right after image 0 or, when the mask was created
 * after the overviews, after them: every IFD is looked at, up to MAX_SCANNED_IFDS.
 * A mask geotiff.js would misread (FillOrder 2, unknown compression) is UNSUPPORTED_INPUT
 * rather than dropped, so a mask is never silently lost.
 */
async function findMaskImage(tiff: GeoTIFF, main: GeoTIFFImage, location: string): Promise<GeoTIFFImage | undefined> {
  let previous = main;
  for (let i = 1; i <= MAX_SCANNED_IFDS && previous.fileDirectory.nextIFDByteOffset !== 0; i++) {
    const image = await tiff.getImage(i);
    previous = image;
    const fd = image.getFileDirectory();
    const subfile = Number(fd.getValue('NewSubfileType') ?? 0);
    if ((subfile & 4) === 0 || (subfile & 1) !== 0 || Number(fd.getValue('PhotometricInterpretation')) !== 4) continue;
    if (image.getWidth() !== main.getWidth() || image.getHeight() !== main.getHeight() || image.getSamplesPerPixel() !== 1) continue;
    const bits = numbers(fd.getValue('BitsPerSample')) ?? [1];
    const format = numbers(fd.getValue('SampleFormat')) ?? [1];
    if ((bits[0] !== 1 && bits[0] !== 8) || format[0] !== 1) continue;
    if (fd.hasTag('FillOrder') && Number((await fd.loadValue('FillOrder')) ?? 1) !== 1) throw unsupported(location, 'an internal mask with FillOrder 2 is not supported');
    const compression = Number(fd.getValue('Compression') ?? 1);
    try {
      await getDecoder(compression, { tileWidth: 1, tileHeight: 1, planarConfiguration: 1, bitsPerSample: bits, predictor: 1 });
    } catch {
      throw unsupported(location, `an internal mask with TIFF compression ${compression} is not supported`);
    }
    return image;
  }
  return undefined;
}

/**
 * Extent and cell size of a north-up grid. ASSUMPTION (spec silent): a TIFF without
 * georeferencing gets GDAL's default pixel grid, origin (0, 0) and cell 1, with y growing north,
 * so its extent is (0, -height) to (width, 0). PixelIsPoint rasters are shifted by half a cell,
 * as GDAL does by default (GTIFF_POINT_GEO_IGNORE=NO).
 */
function gridOf(image: GeoTIFFImage, pixelIsPoint: boolean, location: string): { extent: Extent; cellSize: { x: number; y: number } } {
  const fd = image.getFileDirectory();
  const w = image.getWidth();
  const h = image.getHeight();
  const scale = numbers(fd.getValue('ModelPixelScale'));
  const tie = numbers(fd.getValue('ModelTiepoint'));
  const transform = numbers(fd.getValue('ModelTransformation'));
  let x0 = 0;
  let y0 = 0;
  let sx = 1;
  let sy = 1;
  if (transform && transform.length >= 16) {
    const [a, b, , d, e, f, , hh] = transform as [number, number, number, number, number, number, number, number];
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

function makeSource(
  id: string,
  location: string,
  tiff: GeoTIFF,
  image: GeoTIFFImage,
  info: RasterInfo,
  layout: Layout,
  maskImage: GeoTIFFImage | undefined,
): GeoTiffSource {
  const { width, height, bandCount, pixelType } = info;
  const k = PIXEL_TYPE_INFO[pixelType].complex ? 2 : 1;
  const float = !PIXEL_TYPE_INFO[pixelType].integer;
  const noData = info.noData;
  let closed = false;

  async function readWindow(win: Rect, signal: AbortSignal | undefined): Promise<Plane[]> {
    if (layout.complex) return readComplexWindow(image, layout.complex, win, signal);
    const window = [win.x, win.y, win.x + win.width, win.y + win.height];
    return (await image.readRasters({ window, interleave: false, ...(signal ? { signal } : {}) })) as Plane[];
  }

  /** The internal mask over the window, 0 = masked (1-bit masks decode to 0/1, 8-bit to 0/255). */
  async function readMaskWindow(win: Rect, signal: AbortSignal | undefined): Promise<ArrayLike<number> | undefined> {
    if (!maskImage) return undefined;
    const window = [win.x, win.y, win.x + win.width, win.y + win.height];
    const planes = (await maskImage.readRasters({ window, samples: [0], interleave: false, ...(signal ? { signal } : {}) })) as Plane[];
    return planes[0];
  }

  return {
    kind: 'source',
    id,
    info,
    location,
    async close() {
      if (closed) return;
      closed = true;
      await tiff.close();
    },
    async read(r: Rect, signal?: AbortSignal): Promise<PixelBlock> {
      if (closed) throw ioError(`${location} is closed`);
      if (signal?.aborted) throw aborted(signal.reason);
      const n = r.width * r.height;
      const mask = new Uint8Array(n);
      const win = intersect(r, { x: 0, y: 0, width, height });
      if (!win) {
        const bands: Plane[] = [];
        for (let b = 0; b < bandCount; b++) bands.push(allocatePlane(pixelType, n));
        return { rect: r, pixelType, bands, mask };
      }
      let planes: Plane[];
      let valid: ArrayLike<number> | undefined;
      try {
        [planes, valid] = await Promise.all([readWindow(win, signal), readMaskWindow(win, signal)]);
      } catch (e) {
        throw isAbort(e) || signal?.aborted ? aborted(e) : ioError(`cannot read ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
      }
      if (signal?.aborted) throw aborted(signal.reason);
      const whole = win.width === r.width && win.height === r.height;
      const bands = whole ? planes : planes.map((p) => placeWindow(p, win, r, pixelType, k));
      // Mask: 1 inside the window where the internal mask (if any) is not 0, then 0 where any band
      // is NoData (or NaN in float bands).
      // ASSUMPTION (spec silent): NaN pixels of float rasters are masked even when NoData is not
      // NaN (the engine's rule "NaN -> NoData"); complex pixels are tested on their real part.
      for (let y = 0; y < win.height; y++) {
        const d = (win.y - r.y + y) * r.width + (win.x - r.x);
        if (!valid) mask.fill(1, d, d + win.width);
        else for (let x = 0, s = y * win.width; x < win.width; x++) mask[d + x] = valid[s + x] === 0 ? 0 : 1;
      }
      // A float32 band holds the NoData value rounded to float32, as GDAL compares it.
      const nd = noData !== undefined && (pixelType === 'F32' || pixelType === 'C64') ? Math.fround(noData) : noData;
      const testNd = nd !== undefined && !Number.isNaN(nd);
      if (testNd || float) {
        for (const plane of bands) {
          for (let y = 0; y < win.height; y++) {
            const row = (win.y - r.y + y) * r.width + (win.x - r.x);
            for (let i = row; i < row + win.width; i++) {
              const v = plane[k * i]!;
              if (v === nd || v !== v || (k === 2 && plane[2 * i + 1] !== plane[2 * i + 1])) mask[i] = 0;
            }
          }
        }
      }
      return { rect: r, pixelType, bands, mask };
    },
  };
}

/** Copy a window-sized plane into a zeroed plane of the (larger) requested rectangle. */
function placeWindow(src: Plane, win: Rect, r: Rect, pixelType: PixelType, k: number): Plane {
  const dst = allocatePlane(pixelType, r.width * r.height);
  for (let y = 0; y < win.height; y++) {
    const s = k * y * win.width;
    const d = k * ((win.y - r.y + y) * r.width + (win.x - r.x));
    (dst as Plane).set(src.subarray(s, s + k * win.width) as never, d);
  }
  return dst;
}

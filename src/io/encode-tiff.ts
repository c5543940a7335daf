/**
 * GeoTIFF encoder: a PixelBlock plus the RasterInfo of its grid -> the bytes of a tiled,
 * little-endian classic GeoTIFF that GDAL and geotiff.js read back exactly. It is the streaming
 * writer (tiff-stream-writer.ts) aimed at memory: the block goes through TiffMemoryWriter, so a
 * chip, an exported image and a streamed render are written by the same code.
 *
 * - Tiles of 256 x 256 (smaller, still a multiple of 16, for small images), planar configuration
 *   2 (one plane per band), DEFLATE by default (`compress: 'none'` turns it off) with the
 *   horizontal predictor (2) for 8/16/32-bit integers and the floating-point predictor (3) for
 *   F32/F64 (TIFF Technical Note 3). Photometric RGB for 3 bands of U8, else MinIsBlack with
 *   the other bands as unspecified extra samples.
 * - Every pixel type: U8 S8 U16 S16 U32 S32 F32 F64 (SampleFormat 1/2/3), U1/U2/U4 packed
 *   MSB-first with BitsPerSample 1/2/4 (GDAL reports NBITS), C64/C128 as complex float
 *   (SampleFormat 6, BitsPerSample 64/128).
 * - Palette: a single band of U1/U2/U4/U8/U16 with `info.colormap` is written as a palette image
 *   (PhotometricInterpretation 3 and a ColorMap of 2^bits entries, all reds then all greens then
 *   all blues, 16-bit = 8-bit x 257, as GDAL writes them); values with no colormap entry are
 *   black. ASSUMPTION (TIFF colour tables have no alpha; GDAL reads 255): colormap alpha is not
 *   written. Other types and band counts cannot hold a TIFF palette (GDAL neither): the colormap
 *   is dropped and the pixels are written as they are.
 * - Georeferencing: ModelPixelScale + ModelTiepoint of the block's top-left corner (`info` is the
 *   block's own grid when its size is the block's, else the grid the block's rect indexes);
 *   GeoKeys from `info.spatialReference` (srs.ts), PixelIsArea.
 * - GDAL_NODATA and GDAL_METADATA: band names, and the statistics of the pixels written as
 *   `gdalinfo -stats` gives them (pixel-statistics.ts) when the block is the whole raster. The
 *   statistics a function advertises (`info.statistics`, nominal ranges such as Hillshade 0..255)
 *   are never written.
 * - An internal transparency mask when the mask cannot travel as NoData (below).
 *
 * NoData policy (masked pixels are written as the NoData value; the mask is never lost):
 * - `options.noData` wins; it must be representable in the pixel type (else INVALID_ARGUMENT).
 * - Float and complex types: `info.noData`, else NaN; the tag is always written.
 * - Integer types: `info.noData` when representable in the type. Otherwise no NoData tag is
 *   written, masked pixels hold 0 (as gdalwarp initialises a destination without -dstnodata),
 *   and, when the block has at least one masked pixel, the mask itself is written as a second
 *   IFD the way GDAL does with GDAL_TIFF_INTERNAL_MASK=YES: NewSubfileType 4 (FILETYPE_MASK),
 *   PhotometricInterpretation 4 (transparency mask), 1 bit per pixel packed MSB-first per tile
 *   row, 1 = valid, 0 = masked, the main image's size and tiling and its compression (DEFLATE
 *   or none, no predictor). GDAL reports it as a per-dataset mask (`Mask Flags: PER_DATASET`);
 *   openGeoTiff reads it back into the block mask.
 * - The NoData decision (`outputNoData`) depends on `info` and options only, never on the
 *   pixels, so a streaming writer can make the same one before seeing any tile. Whether the
 *   mask IFD is written depends on the pixels (none when every pixel is valid, so such files
 *   are byte-for-byte what they were); a streaming writer that cannot look ahead would write it
 *   whenever the NoData decision has no tag for an integer type (TiffStreamWriter reserves it and
 *   unlinks it at the end).
 */
import { EngineError, invalidArgument } from '../core/errors.js';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { PIXEL_TYPE_INFO, type Plane } from '../core/pixel-type.js';
import { maskAllValid } from '../core/pixel-block.js';
import { deflateBlock } from './codec-pool.js';
import { MAX_ZLEVEL, MIN_ZLEVEL } from './deflate.js';
import { gdalMetadataXml } from './gdal-metadata.js';
import { PixelStatistics, type ByteHistograms } from './pixel-statistics.js';
import { assembleTiff, blockTags, entryOf, type Entry } from './tiff-ifd.js';
import { DEFAULT_ZLEVEL, outputNoData, type StreamTiffOptions } from './tiff-options.js';
import { TiffMemoryWriter } from './tiff-stream-writer.js';

export interface GeoTiffOptions {
  /** NoData value to declare and to write into masked pixels (see the policy above). */
  readonly noData?: number;
  /** Default 'deflate'. */
  readonly compress?: 'none' | 'deflate';
  /** Tile edge in pixels, a multiple of 16; default 256, or less for images smaller than that. */
  readonly tileSize?: number;
  /** DEFLATE level 1-12 for 'deflate'; default DEFAULT_ZLEVEL. */
  readonly level?: number;
  /** Write the statistics of the pixels (STATISTICS_*) when the block is the whole raster; default true. */
  readonly statistics?: boolean;
  /**
   * The byteHistogram of some of the block's U8 bands under its mask, already counted by the
   * caller: the statistics take them instead of counting those bands again (only for the block's
   * own planes and mask, see ByteHistograms). The same bytes as without.
   */
  readonly byteHistograms?: ByteHistograms;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function tileSizeFor(width: number, height: number, requested: number | undefined): number {
  if (requested !== undefined) {
    if (!Number.isInteger(requested) || requested < 16 || requested % 16 !== 0 || requested > 65520) {
      throw invalidArgument('tileSize', `tileSize must be a multiple of 16 between 16 and 65520, got ${requested}`);
    }
    return requested;
  }
  return Math.min(256, Math.ceil(Math.max(width, height) / 16) * 16);
}

export function encodeGeoTiff(block: PixelBlock, info: RasterInfo, options: GeoTiffOptions = {}): Uint8Array {
  return geoTiffWriter(block, info, options, false).finish();
}

/**
 * encodeGeoTiff with the blocks deflated on the codec threads (codec-pool.ts), the same bytes. The
 * block is read (copied, its statistics counted) before this returns: the caller may change or
 * reuse its planes at once.
 */
export function encodeGeoTiffAsync(block: PixelBlock, info: RasterInfo, options: GeoTiffOptions = {}): Promise<Uint8Array> {
  try {
    return geoTiffWriter(block, info, options, true).finishAsync();
  } catch (e) {
    return Promise.reject(e as Error);
  }
}

function geoTiffWriter(block: PixelBlock, info: RasterInfo, options: GeoTiffOptions, offThread: boolean): TiffMemoryWriter {
  const { grid, writerOptions } = prepare(block, info, options);
  const writer = new TiffMemoryWriter(grid, writerOptions, offThread);
  writer.write(block, options.byteHistograms);
  return writer;
}

/** The checks of encodeGeoTiff, and the grid and the writer's options it writes `block` with. */
function prepare(block: PixelBlock, info: RasterInfo, options: GeoTiffOptions): { grid: RasterInfo; writerOptions: StreamTiffOptions } {
  if (!LITTLE_ENDIAN) throw new EngineError('INTERNAL', 'the GeoTIFF encoder needs a little-endian host');
  const t = block.pixelType;
  const { width, height } = block.rect;
  const bandCount = block.bands.length;
  const k = PIXEL_TYPE_INFO[t].complex ? 2 : 1;
  if (bandCount < 1 || width < 1 || height < 1) throw invalidArgument('output', 'cannot encode an empty block as GeoTIFF');
  if (block.bands.some((b) => b.length !== k * width * height) || block.mask.length !== width * height) {
    throw new EngineError('INTERNAL', `encodeGeoTiff: block planes do not match its ${width}x${height} rectangle`);
  }
  const { x: sx, y: sy } = info.cellSize;
  if (!(sx > 0 && sy > 0 && Number.isFinite(sx) && Number.isFinite(sy))) {
    throw invalidArgument('output', `cannot write a GeoTIFF with cell size ${sx} x ${sy}`);
  }
  // ASSUMPTION (spec silent): an info of the block's own size describes the block itself (what
  // `windowInfo` gives); otherwise the block's rect indexes the info's grid.
  const ownGrid = info.width === width && info.height === height;
  const xmin = ownGrid ? info.extent.xmin : info.extent.xmin + block.rect.x * sx;
  const ymax = ownGrid ? info.extent.ymax : info.extent.ymax - block.rect.y * sy;
  const level = options.level ?? DEFAULT_ZLEVEL;
  if (!Number.isInteger(level) || level < MIN_ZLEVEL || level > MAX_ZLEVEL)
    throw invalidArgument('level', `level must be an integer from ${MIN_ZLEVEL} to ${MAX_ZLEVEL}, got ${level}`);
  const ts = tileSizeFor(width, height, options.tileSize);
  // Statistics describe the whole raster, so they are written only when the block covers all of
  // it; band names always. They are the pixels' own (the values written: masked pixels and values
  // equal to the NoData tag excluded), never `info.statistics`.
  const whole = ownGrid && block.rect.x === 0 && block.rect.y === 0;
  const grid: RasterInfo = {
    ...info,
    width,
    height,
    bandCount,
    pixelType: t,
    extent: { xmin, ymax, xmax: xmin + width * sx, ymin: ymax - height * sy },
  };
  const writerOptions: StreamTiffOptions = {
    compress: options.compress ?? 'deflate',
    level,
    blockWidth: ts,
    blockHeight: ts,
    bigTiff: 'NO',
    statistics: whole && options.statistics !== false,
    ...(options.noData !== undefined ? { noData: options.noData } : {}),
    offset: { x: block.rect.x, y: block.rect.y },
  };
  return { grid, writerOptions };
}

/**
 * What a writer built for one block tells of every block of the same layout: the main image's
 * tags (its georeference, placeholders for its statistics and block tags), its tiling, predictor,
 * fill and NoData. Read once per layout (GeoTiffSeries), from the writer's own fields.
 */
class LayoutWriter extends TiffMemoryWriter {
  layout(): Layout {
    const level = this.levels[0]!;
    return {
      entries: level.image.entries,
      oneLevel: this.levels.length === 1,
      needsMask: level.mask !== undefined,
      tiled: this.tiled,
      big: this.big,
      bw: this.bw,
      bh: this.bh,
      bits: this.bits,
      k: this.k,
      level: this.level,
      statistics: this.stats !== undefined && this.metadataEntry !== undefined,
      blockBytes: (plane, mask, masked) => this.blockBytes(plane, mask, masked),
    };
  }
}

interface Layout {
  readonly entries: ReadonlyMap<number, Entry>;
  readonly oneLevel: boolean;
  readonly needsMask: boolean;
  readonly tiled: boolean;
  readonly big: boolean;
  readonly bw: number;
  readonly bh: number;
  readonly bits: number;
  readonly k: number;
  readonly level: number | undefined;
  readonly statistics: boolean;
  /** The writer's bytes of one whole block of a band before compression (TiffBlockEncoder.blockBytes). */
  readonly blockBytes: (plane: Plane, mask: Uint8Array, masked: boolean) => Uint8Array;
}

/**
 * What a layout depends on besides the block's position: compared field by field. Decision: the
 * spatial reference, band names and colormap by identity (an export's chips share its raster's
 * objects; RasterInfo is never changed in place): equal objects that are not the same one only
 * cost a layout built again, never other bytes.
 */
interface LayoutKey {
  readonly width: number;
  readonly height: number;
  readonly bandCount: number;
  readonly pixelType: string;
  readonly sx: number;
  readonly sy: number;
  readonly noData: number | undefined;
  readonly spatialReference: unknown;
  readonly bandNames: unknown;
  readonly colormap: unknown;
  readonly options: StreamTiffOptions;
}

function sameKey(a: LayoutKey, b: LayoutKey): boolean {
  const o = a.options;
  const p = b.options;
  return (
    a.width === b.width &&
    a.height === b.height &&
    a.bandCount === b.bandCount &&
    a.pixelType === b.pixelType &&
    a.sx === b.sx &&
    a.sy === b.sy &&
    Object.is(a.noData, b.noData) &&
    a.spatialReference === b.spatialReference &&
    a.bandNames === b.bandNames &&
    a.colormap === b.colormap &&
    o.compress === p.compress &&
    o.level === p.level &&
    o.blockWidth === p.blockWidth &&
    o.blockHeight === p.blockHeight &&
    o.statistics === p.statistics &&
    Object.is(o.noData, p.noData)
  );
}

const keyOf = (grid: RasterInfo, options: StreamTiffOptions): LayoutKey => ({
  width: grid.width,
  height: grid.height,
  bandCount: grid.bandCount,
  pixelType: grid.pixelType,
  sx: grid.cellSize.x,
  sy: grid.cellSize.y,
  noData: grid.noData,
  spatialReference: grid.spatialReference,
  bandNames: grid.bandNames,
  colormap: grid.colormap,
  options,
});

/** Layouts a GeoTiffSeries keeps. */
const MAX_LAYOUTS = 4;

/**
 * encodeGeoTiffAsync for a series of blocks that mostly share one layout (the chips of an export:
 * the same size, type, bands, cell size, spatial reference and options; only their position and
 * pixels differ): the same bytes as encodeGeoTiffAsync, block by block. The tags are built once
 * per layout; each block patches what is its own (its tiepoint, its statistics, its blocks' offsets
 * and byte counts). A block that is exactly one TIFF block per band, written without an internal
 * mask, is encoded here: each band copied once into the buffer the predictor works in (which the
 * codec thread then takes), its statistics from the histograms given. Any other block (smaller or
 * larger than one TIFF block, packed bits, complex, a mask to write) goes through encodeGeoTiffAsync.
 */
export class GeoTiffSeries {
  /** The layouts seen, the latest first (a few: an export's images, its second images, its label rasters). */
  private readonly layouts: { readonly key: LayoutKey; readonly layout: Layout }[] = [];
  /** Blocks encoded from the layout (tests check the path they meant ran). */
  fastBlocks = 0;

  /**
   * encodeGeoTiffAsync(block, info, options): the block is read before this returns. `allValid`:
   * maskAllValid(block.mask), when the caller knows it.
   */
  encode(block: PixelBlock, info: RasterInfo, options: GeoTiffOptions = {}, allValid?: boolean): Promise<Uint8Array> {
    try {
      const { grid, writerOptions } = prepare(block, info, options);
      const key = keyOf(grid, writerOptions);
      const at = this.layouts.findIndex((x) => sameKey(x.key, key));
      const known = at >= 0 ? this.layouts.splice(at, 1)[0]! : { key, layout: new LayoutWriter(grid, writerOptions).layout() };
      this.layouts.unshift(known);
      if (this.layouts.length > MAX_LAYOUTS) this.layouts.pop();
      const noData = outputNoData(grid.pixelType, writerOptions.noData, grid.noData).tag;
      const out = this.fromLayout(known.layout, block, grid, noData, options.byteHistograms, allValid ?? maskAllValid(block.mask));
      if (out !== undefined) return out;
      const writer = new TiffMemoryWriter(grid, writerOptions, true);
      writer.write(block, options.byteHistograms);
      return writer.finishAsync();
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  /**
   * writeDirect of TiffBlockEncoder, then TiffMemoryWriter's finishAsync, for a block that is one
   * TIFF block per band without a mask IFD; undefined when the block is not one.
   */
  private fromLayout(
    l: Layout,
    block: PixelBlock,
    grid: RasterInfo,
    noData: number | undefined,
    known: ByteHistograms | undefined,
    allValid: boolean,
  ): Promise<Uint8Array> | undefined {
    const t = block.pixelType;
    const ti = PIXEL_TYPE_INFO[t];
    const { width, height } = block.rect;
    const masked = !allValid;
    if (!l.oneLevel || !l.tiled || l.big || width !== l.bw || height !== l.bh || l.k !== 1 || l.bits !== ti.bits || ti.bits % 8 !== 0)
      return undefined;
    if (masked && l.needsMask) return undefined;
    const planes = block.bands;
    const mask = block.mask;
    // The statistics first (TiffBlockEncoder.writeDirect's order), then each band's bytes.
    let stats: PixelStatistics | undefined;
    if (l.statistics) {
      stats = new PixelStatistics(block.bands.length, t, noData, l.bits);
      stats.add(planes, mask, 0, width, height, width, known);
    }
    const n = width * height;
    const raw = planes.map((plane) => l.blockBytes(plane, mask, masked));
    this.fastBlocks++;
    const level = l.level;
    const compressed = level === undefined ? Promise.resolve(raw) : Promise.all(raw.map((b) => deflateBlock(b, level, true)));
    // The tags of this block: the layout's, with its own tiepoint, statistics and block tags.
    const entries = new Map(l.entries);
    entries.set(33922, entryOf(33922, { type: 'DOUBLE', values: [0, 0, 0, grid.extent.xmin, grid.extent.ymax, 0] }));
    if (stats) {
      const names = grid.bandNames?.length === grid.bandCount ? grid.bandNames : undefined;
      const xml = gdalMetadataXml(stats.result(n), names, grid.bandCount);
      if (xml) entries.set(42112, entryOf(42112, { type: 'ASCII', value: xml }));
      else entries.delete(42112);
    }
    const zeros = new Array<number>(raw.length).fill(0);
    const { offsets, counts } = blockTags(true);
    entries.set(offsets, entryOf(offsets, { type: 'LONG', values: zeros }));
    entries.set(counts, entryOf(counts, { type: 'LONG', values: zeros }));
    return compressed.then((blocks) => assembleTiff([entries], [blocks], [true], false));
  }
}

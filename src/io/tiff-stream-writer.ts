/**
 * A streaming tiled (or stripped) GeoTIFF / COG writer: blocks arrive as the renderer yields them
 * (`renderTiles`), are gathered into rows of TIFF blocks, and every TIFF block is encoded and
 * written as soon as its row is complete, so memory stays at about one row of blocks per level
 * whatever the raster's size. A block that is exactly one full TIFF block (render tiles the size
 * of the TIFF blocks, as `rasterflow render` makes them) is encoded at once, without gathering,
 * when there are no overviews. DEFLATE runs on the codec threads
 * (codec-pool.ts) while the renderer computes the next tiles.
 *
 * What it writes (tags as `encodeGeoTiff` writes them; see encode-tiff.ts for the NoData policy,
 * the palette, complex types and the internal mask):
 * - Little-endian classic TIFF, or BigTIFF (BIGTIFF=YES; IF_NEEDED, the default, when the
 *   uncompressed image data, overviews included, could pass 4 GiB; IF_SAFER from 2 GiB). A
 *   classic file that outgrows 4 GiB anyway fails with LIMIT_EXCEEDED naming BIGTIFF=YES.
 * - Tiles (default 256 x 256) or strips (TILED=NO; RowsPerStrip from BLOCKYSIZE, else about
 *   8 KiB per strip as GDAL picks it), planar configuration 2 (one plane per band).
 * - COMPRESS=DEFLATE (ZLEVEL 1-9, default 1) or NONE; PREDICTOR 1, 2 (integers) or 3 (floats),
 *   default 2 or 3 with DEFLATE (see DEFAULT_ZLEVEL in encode-tiff.ts for why).
 *   NBITS=n packs unsigned samples in n bits (1-7 for U8, 9-15 for U16, 17-31 for U32; values
 *   above 2^n - 1 saturate); U1/U2/U4 are always packed in 1/2/4 bits.
 * - Georeferencing (ModelPixelScale, ModelTiepoint, GeoKeys), GDAL_NODATA, GDAL_METADATA (band
 *   names, and the statistics of the pixels written, computed as the blocks pass: minimum,
 *   maximum, mean, population standard deviation and valid percent as `gdalinfo -stats` gives
 *   them (pixel-statistics.ts); STATISTICS=NO leaves them out). Statistics a function advertises
 *   (`info.statistics`: Hillshade 0..255, NDVI -1..1, ...) are nominal ranges and never written.
 * - Overviews (OVERVIEWS=AUTO: halve until the largest side fits one block; OVERVIEW_COUNT=n),
 *   each level made from the previous one as its rows complete: AVERAGE of the valid pixels of
 *   each 2 x 2 cell (integers rounded half away from zero), NEAREST (the top-left pixel, GDAL's
 *   pick for a factor of 2) for palettes or OVERVIEW_RESAMPLING=NEAREST.
 * - COG=YES (alias LAYOUT=COG): every IFD and tag value first, then the blocks of the smallest
 *   overview, ..., the full-resolution blocks last (each level goes to a temporary file beside
 *   the output and is copied in at the end), overviews AUTO unless OVERVIEWS/OVERVIEW_COUNT say.
 * - The internal mask (integer rasters whose mask cannot travel as NoData) is reserved up front
 *   and unlinked from the IFD chain at the end when no pixel was masked (its few bytes stay).
 *
 * Layout without COG: header, IFDs with their values (block offsets and counts reserved, filled at
 * the end), then the blocks in the order they were finished. Output goes to `<path>.partial-<pid>`
 * and is renamed at `close()`; `abort()` removes it.
 */
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { deflateBlock, warmCodecThreads } from './codec-pool.js';
import { EngineError, invalidArgument } from '../core/errors.js';
import type { BandStatistics, PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, castValue, PIXEL_TYPE_INFO, type PixelType, type Plane } from '../core/pixel-type.js';
import { colorMapTag, DEFAULT_ZLEVEL, geoKeyTags, outputNoData, SAMPLE_FORMAT } from './encode-tiff.js';
import { formatNoData, gdalMetadataXml } from './gdal-metadata.js';
import { PixelStatistics } from './pixel-statistics.js';
import type { TagValue } from './tiff-writer.js';

export interface StreamTiffOptions {
  readonly compress?: 'none' | 'deflate';
  /** 1 none, 2 horizontal (integers), 3 floating point; default: 2 or 3 with DEFLATE, 1 without. */
  readonly predictor?: 1 | 2 | 3;
  /** zlib level 1-9; default DEFAULT_ZLEVEL (1). */
  readonly level?: number;
  /** Default true. */
  readonly tiled?: boolean;
  readonly blockWidth?: number;
  readonly blockHeight?: number;
  readonly bigTiff?: 'YES' | 'NO' | 'IF_NEEDED' | 'IF_SAFER';
  readonly nbits?: number;
  readonly cog?: boolean;
  /** 'AUTO', 'NONE' or a count of levels; default NONE, or AUTO with `cog`. */
  readonly overviews?: 'AUTO' | 'NONE' | number;
  readonly overviewResampling?: 'NEAREST' | 'AVERAGE';
  /**
   * Write the statistics of the written pixels (STATISTICS_*), computed as blocks pass; default
   * true (not for complex types, which GDAL's statistics do not describe).
   */
  readonly statistics?: boolean;
  readonly noData?: number;
  /** Subtracted from block rects: the output's top-left in the coordinates blocks arrive in. */
  readonly offset?: { readonly x: number; readonly y: number };
}

const co = (name: string, msg: string): EngineError => invalidArgument(`co.${name}`, msg);

/**
 * GDAL-style creation options (`NAME=VALUE`, names case-insensitive) -> writer options. Known:
 * COMPRESS (NONE, DEFLATE), PREDICTOR (1/NONE, 2/STANDARD, 3/FLOATING_POINT), ZLEVEL, TILED,
 * BLOCKXSIZE, BLOCKYSIZE, BLOCKSIZE, BIGTIFF, NBITS, COG / LAYOUT=COG, OVERVIEWS
 * (AUTO, NONE), OVERVIEW_COUNT, OVERVIEW_RESAMPLING / RESAMPLING (NEAREST, AVERAGE), STATISTICS.
 * Defaults differ from GDAL's on purpose (DEFAULT_ZLEVEL in encode-tiff.ts): PREDICTOR 2 for
 * integers and 3 for floats, ZLEVEL 1; `PREDICTOR=1 ZLEVEL=6` give GDAL's settings.
 */
export function parseCreationOptions(list: readonly string[]): StreamTiffOptions {
  const o: { -readonly [K in keyof StreamTiffOptions]: StreamTiffOptions[K] } = {};
  const yes = (name: string, v: string): boolean => {
    const u = v.toUpperCase();
    if (['YES', 'TRUE', 'ON', '1'].includes(u)) return true;
    if (['NO', 'FALSE', 'OFF', '0'].includes(u)) return false;
    throw co(name, `${name} must be YES or NO, got ${v}`);
  };
  const int = (name: string, v: string, min: number, max: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw co(name, `${name} must be an integer from ${min} to ${max}, got ${v}`);
    return n;
  };
  for (const item of list) {
    const m = /^([A-Za-z_]+)=(.*)$/.exec(item.trim());
    if (!m) throw invalidArgument('co', `creation options are NAME=VALUE, got ${item}`);
    const name = m[1]!.toUpperCase();
    const v = m[2]!.trim();
    const u = v.toUpperCase();
    switch (name) {
      case 'COMPRESS':
        if (u !== 'NONE' && u !== 'DEFLATE') throw co(name, `COMPRESS must be NONE or DEFLATE, got ${v}`);
        o.compress = u === 'NONE' ? 'none' : 'deflate';
        break;
      case 'PREDICTOR': {
        const p = ({ '1': 1, NONE: 1, '2': 2, STANDARD: 2, HORIZONTAL: 2, '3': 3, FLOATING_POINT: 3 } as const)[u as '1'];
        if (p === undefined) throw co(name, `PREDICTOR must be 1, 2 or 3, got ${v}`);
        o.predictor = p;
        break;
      }
      case 'ZLEVEL':
        o.level = int(name, v, 1, 9);
        break;
      case 'TILED':
        o.tiled = yes(name, v);
        break;
      case 'BLOCKXSIZE':
        o.blockWidth = int(name, v, 1, 65536);
        break;
      case 'BLOCKYSIZE':
        o.blockHeight = int(name, v, 1, 1 << 30);
        break;
      case 'BLOCKSIZE':
        o.blockWidth = o.blockHeight = int(name, v, 16, 65536);
        break;
      case 'BIGTIFF':
        if (!['YES', 'NO', 'IF_NEEDED', 'IF_SAFER'].includes(u)) throw co(name, `BIGTIFF must be YES, NO, IF_NEEDED or IF_SAFER, got ${v}`);
        o.bigTiff = u as 'YES';
        break;
      case 'NBITS':
        o.nbits = int(name, v, 1, 32);
        break;
      case 'COG':
        o.cog = yes(name, v);
        break;
      case 'LAYOUT':
        if (u !== 'COG' && u !== 'GTIFF' && u !== 'DEFAULT') throw co(name, `LAYOUT must be COG or GTIFF, got ${v}`);
        o.cog = u === 'COG';
        break;
      case 'OVERVIEWS':
        if (u !== 'AUTO' && u !== 'NONE') throw co(name, `OVERVIEWS must be AUTO or NONE, got ${v}`);
        o.overviews = u as 'AUTO';
        break;
      case 'OVERVIEW_COUNT':
        o.overviews = int(name, v, 0, 30);
        break;
      case 'OVERVIEW_RESAMPLING':
      case 'RESAMPLING':
        if (u !== 'NEAREST' && u !== 'AVERAGE') throw co(name, `${name} must be NEAREST or AVERAGE, got ${v}`);
        o.overviewResampling = u as 'NEAREST';
        break;
      case 'STATISTICS':
        o.statistics = yes(name, v);
        break;
      default:
        throw co(name, `unknown creation option ${name} (known: COMPRESS, PREDICTOR, ZLEVEL, TILED, BLOCKXSIZE, BLOCKYSIZE, BLOCKSIZE, BIGTIFF, NBITS, COG, LAYOUT, OVERVIEWS, OVERVIEW_COUNT, OVERVIEW_RESAMPLING, STATISTICS)`);
    }
  }
  return o;
}

// ---- IFD serialisation

type TypeName = 'SHORT' | 'LONG' | 'LONG8' | 'DOUBLE' | 'ASCII';
const TYPE_CODE: Readonly<Record<TypeName, number>> = { ASCII: 2, SHORT: 3, LONG: 4, DOUBLE: 12, LONG8: 16 };
const TYPE_SIZE: Readonly<Record<TypeName, number>> = { ASCII: 1, SHORT: 2, LONG: 4, DOUBLE: 8, LONG8: 8 };

interface Entry {
  readonly tag: number;
  readonly type: TypeName;
  count: number;
  bytes: Uint8Array;
  /** Bytes reserved for the value (>= bytes.length), for values filled in at the end. */
  readonly room: number;
}

function entryOf(tag: number, v: TagValue | { type: 'LONG8'; values: readonly number[] }, room = 0): Entry {
  if (v.type === 'ASCII') {
    const text = new TextEncoder().encode(v.value);
    const bytes = new Uint8Array(text.length + 1);
    bytes.set(text);
    return { tag, type: 'ASCII', count: bytes.length, bytes, room: Math.max(room, bytes.length) };
  }
  const bytes = numberBytes(v.type, v.values);
  return { tag, type: v.type, count: v.values.length, bytes, room: Math.max(room, bytes.length) };
}

function numberBytes(type: Exclude<TypeName, 'ASCII'>, values: ArrayLike<number>): Uint8Array {
  const size = TYPE_SIZE[type];
  const bytes = new Uint8Array(values.length * size);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    if (type === 'SHORT') view.setUint16(i * 2, x, true);
    else if (type === 'LONG') view.setUint32(i * 4, x, true);
    else if (type === 'LONG8') view.setBigUint64(i * 8, BigInt(x), true);
    else view.setFloat64(i * 8, x, true);
  }
  return bytes;
}

const align8 = (n: number): number => (n + 7) & ~7;

/** One IFD placed at a byte offset: where each entry and out-of-line value sits. */
class PlacedIfd {
  readonly entries: Entry[];
  readonly entryAt = new Map<number, number>();
  readonly valueAt = new Map<number, number>();
  readonly nextAt: number;
  readonly end: number;

  constructor(
    tags: ReadonlyMap<number, Entry>,
    readonly at: number,
    readonly big: boolean,
  ) {
    this.entries = [...tags.values()].sort((a, b) => a.tag - b.tag);
    const es = big ? 20 : 12;
    const head = big ? 8 : 2;
    let p = at + head;
    for (const e of this.entries) {
      this.entryAt.set(e.tag, p);
      p += es;
    }
    this.nextAt = p;
    let cursor = align8(p + (big ? 8 : 4));
    const inline = big ? 8 : 4;
    for (const e of this.entries) {
      if (e.room > inline) {
        this.valueAt.set(e.tag, cursor);
        cursor = align8(cursor + e.room);
      }
    }
    this.end = cursor;
  }

  /** Write the IFD (entries, next pointer, values) into `out`, whose byte 0 is file offset `base`. */
  serialise(out: Uint8Array, base: number, next: number): void {
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    const o = this.at - base;
    if (this.big) view.setBigUint64(o, BigInt(this.entries.length), true);
    else view.setUint16(o, this.entries.length, true);
    for (const e of this.entries) this.writeEntry(out, base, e);
    if (this.big) view.setBigUint64(this.nextAt - base, BigInt(next), true);
    else view.setUint32(this.nextAt - base, next, true);
  }

  writeEntry(out: Uint8Array, base: number, e: Entry): void {
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    const p = this.entryAt.get(e.tag)! - base;
    view.setUint16(p, e.tag, true);
    view.setUint16(p + 2, TYPE_CODE[e.type], true);
    const at = this.valueAt.get(e.tag);
    if (this.big) {
      view.setBigUint64(p + 4, BigInt(e.count), true);
      if (at === undefined) out.set(e.bytes, p + 12);
      else view.setBigUint64(p + 12, BigInt(at), true);
    } else {
      view.setUint32(p + 4, e.count, true);
      if (at === undefined) out.set(e.bytes, p + 8);
      else view.setUint32(p + 8, at, true);
    }
    if (at !== undefined) out.set(e.bytes, at - base);
  }
}

// ---- Levels (the image and its overviews)

interface Sink {
  /** Append bytes; the file offset (or the offset within a COG level's temporary file). */
  append(bytes: Uint8Array): Promise<number>;
}

interface ImageIfd {
  /** Image or mask of a level. */
  readonly entries: Map<number, Entry>;
  readonly offsets: number[];
  readonly counts: number[];
  placed?: PlacedIfd;
}

interface Job {
  readonly ifd: ImageIfd;
  readonly index: number;
  readonly bytes: Promise<Uint8Array>;
}

interface BandRow {
  readonly planes: Plane[];
  readonly mask: Uint8Array;
  readonly rows: number;
  filled: number;
}

interface Level {
  readonly index: number;
  readonly width: number;
  readonly height: number;
  readonly across: number;
  readonly down: number;
  readonly image: ImageIfd;
  readonly mask: ImageIfd | undefined;
  readonly pending: Map<number, BandRow>;
  /** Block row -> block columns written straight from a block the size of a TIFF block. */
  readonly direct: Map<number, Set<number>>;
  readonly sink: Sink;
  /** COG: the level's temporary file. */
  readonly temp?: { path: string; fh: FileHandle; size: number };
}

const MAX_CLASSIC = 0xffffffff;
const MAX_IN_FLIGHT = 96 * 1024 * 1024;

export class TiffStreamWriter {
  private readonly t: PixelType;
  private readonly k: number;
  private readonly bits: number;
  private readonly bandCount: number;
  private readonly bw: number;
  private readonly bh: number;
  private readonly tiled: boolean;
  private readonly level: number | undefined;
  private readonly predictor: 1 | 2 | 3;
  private readonly fill: number;
  private readonly big: boolean;
  private readonly levels: Level[] = [];
  private readonly average: boolean;
  private readonly stats: PixelStatistics | undefined;
  private readonly offset: { x: number; y: number };
  private readonly partial: string;
  private fh!: FileHandle;
  private fileSize = 0;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;
  private inFlight = 0;
  private anyMasked = false;
  private headerSize = 0;
  private metadataEntry: Entry | undefined;
  private finished = false;
  private validMaskTile: Promise<Uint8Array> | undefined;

  private constructor(
    readonly path: string,
    readonly info: RasterInfo,
    private readonly options: StreamTiffOptions,
  ) {
    const t = info.pixelType;
    const ti = PIXEL_TYPE_INFO[t];
    this.t = t;
    this.k = ti.complex ? 2 : 1;
    this.bandCount = info.bandCount;
    if (info.width < 1 || info.height < 1 || info.bandCount < 1) throw invalidArgument('output', 'cannot write an empty raster as GeoTIFF');
    const { x: sx, y: sy } = info.cellSize;
    if (!(sx > 0 && sy > 0 && Number.isFinite(sx) && Number.isFinite(sy))) throw invalidArgument('output', `cannot write a GeoTIFF with cell size ${sx} x ${sy}`);
    const compress = options.compress ?? 'deflate';
    this.level = compress === 'deflate' ? (options.level ?? DEFAULT_ZLEVEL) : undefined;
    if (this.level !== undefined && !(Number.isInteger(this.level) && this.level >= 1 && this.level <= 9)) throw co('ZLEVEL', `ZLEVEL must be an integer from 1 to 9, got ${this.level}`);
    if (this.level !== undefined) warmCodecThreads();
    // Bits per sample: the type's, or NBITS for unsigned integer types.
    let bits = ti.bits;
    if (options.nbits !== undefined) {
      const n = options.nbits;
      const ok = (t === 'U8' && n >= 1 && n <= 8) || (t === 'U16' && n >= 9 && n <= 16) || (t === 'U32' && n >= 17 && n <= 32) || (ti.bits < 8 && n === ti.bits);
      if (!ok) throw co('NBITS', `NBITS=${n} does not fit ${t} (1-7 for U8, 9-15 for U16, 17-31 for U32)`);
      bits = n;
    }
    this.bits = bits;
    const packed = bits % 8 !== 0;
    const natural: 1 | 2 | 3 = ti.complex || packed ? 1 : ti.integer ? 2 : 3;
    const predictor = options.predictor ?? (compress === 'deflate' ? natural : 1);
    if (predictor !== 1 && (compress !== 'deflate' || packed || ti.complex || (predictor === 3) === ti.integer)) {
      throw co('PREDICTOR', `PREDICTOR=${predictor} does not apply to ${packed ? `${bits}-bit ` : ''}${t}${compress !== 'deflate' ? ' without compression' : ''}`);
    }
    this.predictor = predictor;
    this.tiled = options.tiled ?? true;
    const cog = options.cog === true;
    if (cog && !this.tiled) throw co('TILED', 'a COG is tiled: TILED=NO does not apply');
    const overviews = options.overviews ?? (cog ? 'AUTO' : 'NONE');
    if (this.tiled) {
      this.bw = options.blockWidth ?? 256;
      this.bh = options.blockHeight ?? this.bw;
      for (const [name, v] of [['BLOCKXSIZE', this.bw], ['BLOCKYSIZE', this.bh]] as const) {
        if (!(Number.isInteger(v) && v >= 16 && v % 16 === 0 && v <= 65536)) throw co(name, `${name} must be a multiple of 16 (tiles), got ${v}`);
      }
    } else {
      this.bw = info.width;
      const rowBytes = Math.ceil((info.width * bits * this.k) / 8);
      let rows = options.blockHeight ?? Math.max(1, Math.floor(8192 / Math.max(1, rowBytes)));
      if (overviews !== 'NONE' && overviews !== 0 && rows % 2 === 1 && rows < info.height) rows++;
      this.bh = Math.min(rows, info.height);
    }
    const nd = outputNoData(t, options.noData, info.noData);
    this.fill = nd.fill;
    const palette = info.bandCount === 1 && info.colormap !== undefined && ti.integer && ti.min === 0 && ti.bits <= 16;
    this.average = (options.overviewResampling ?? (palette ? 'NEAREST' : 'AVERAGE')) === 'AVERAGE';
    this.stats = options.statistics !== false && !ti.complex ? new PixelStatistics(info.bandCount, t, nd.tag, bits) : undefined;
    this.offset = { x: options.offset?.x ?? 0, y: options.offset?.y ?? 0 };
    this.partial = `${path}.partial-${process.pid}`;

    // Levels and their sizes.
    const sizes: [number, number][] = [[info.width, info.height]];
    const maxLevels = overviews === 'NONE' ? 0 : overviews === 'AUTO' ? 30 : overviews;
    while (sizes.length - 1 < maxLevels) {
      const [w, h] = sizes.at(-1)!;
      if (overviews === 'AUTO' && Math.max(w, h) <= Math.max(this.bw, this.bh)) break;
      if (w === 1 && h === 1) break;
      sizes.push([Math.ceil(w / 2), Math.ceil(h / 2)]);
    }
    const uncompressed = sizes.reduce((a, [w, h]) => a + (w * h * info.bandCount * bits * this.k) / 8, 0);
    const mode = options.bigTiff ?? 'IF_NEEDED';
    this.big = mode === 'YES' || (mode === 'IF_NEEDED' && uncompressed > MAX_CLASSIC - 64 * 1024 * 1024) || (mode === 'IF_SAFER' && uncompressed > 2 ** 31);

    const needsMask = ti.integer && nd.tag === undefined;
    const baseTags = this.imageTags(nd.tag, palette);
    sizes.forEach(([w, h], i) => {
      const across = Math.ceil(w / this.bw);
      const down = Math.ceil(h / (i === 0 ? this.bh : this.bh));
      const blocks = across * down * (this.bandCount === 1 ? 1 : this.bandCount);
      const tags = new Map(baseTags);
      tags.set(256, entryOf(256, { type: 'LONG', values: [w] }));
      tags.set(257, entryOf(257, { type: 'LONG', values: [h] }));
      if (!this.tiled) tags.set(278, entryOf(278, { type: 'LONG', values: [this.bh] }));
      if (i > 0) {
        tags.set(254, entryOf(254, { type: 'LONG', values: [1] }));
        for (const geo of [33550, 33922, 34735, 34736, 34737, 42112]) tags.delete(geo);
      }
      this.addBlockTags(tags, blocks);
      const image: ImageIfd = { entries: tags, offsets: new Array<number>(blocks).fill(0), counts: new Array<number>(blocks).fill(0) };
      let mask: ImageIfd | undefined;
      if (needsMask) {
        const m = this.maskTags(w, h, i > 0);
        this.addBlockTags(m, across * down);
        mask = { entries: m, offsets: new Array<number>(across * down).fill(0), counts: new Array<number>(across * down).fill(0) };
      }
      this.levels.push({ index: i, width: w, height: h, across, down, image, mask, pending: new Map(), direct: new Map(), sink: undefined as unknown as Sink });
    });
    if (this.stats) {
      // Room for the statistics filled in at the end: the XML with long placeholder numbers.
      const x = -1.2345678901234567e-300;
      const placeholder = Array.from({ length: info.bandCount }, () => ({ min: x, max: x, mean: x, stdDev: x, validPercent: x }));
      const xml = gdalMetadataXml(placeholder, info.bandNames?.length === info.bandCount ? info.bandNames : undefined, info.bandCount) ?? '';
      const e = entryOf(42112, { type: 'ASCII', value: ' ' }, xml.length + 64);
      this.levels[0]!.image.entries.set(42112, e);
      this.metadataEntry = e;
    }
  }

  /** Open the output (`<path>.partial-<pid>` until close) and write the header. */
  static async create(path: string, info: RasterInfo, options: StreamTiffOptions = {}): Promise<TiffStreamWriter> {
    const w = new TiffStreamWriter(path, info, options);
    try {
      await w.start();
    } catch (e) {
      // A failed start (a level's temporary file, the header write) must not leave the partial
      // output's file handle to the garbage collector, nor the partial file behind.
      await w.abort();
      throw e;
    }
    return w;
  }

  private imageTags(ndTag: number | undefined, palette: boolean): Map<number, Entry> {
    const info = this.info;
    const t = this.t;
    const n = this.bandCount;
    const rgb = n === 3 && t === 'U8';
    const extra = n - (rgb ? 3 : 1);
    const m = new Map<number, Entry>();
    const set = (tag: number, v: TagValue): void => void m.set(tag, entryOf(tag, v));
    set(258, { type: 'SHORT', values: new Array<number>(n).fill(this.bits) });
    set(259, { type: 'SHORT', values: [this.level === undefined ? 1 : 8] });
    set(262, { type: 'SHORT', values: [palette ? 3 : rgb ? 2 : 1] });
    set(277, { type: 'SHORT', values: [n] });
    set(284, { type: 'SHORT', values: [n === 1 ? 1 : 2] });
    if (this.tiled) {
      set(322, { type: 'LONG', values: [this.bw] });
      set(323, { type: 'LONG', values: [this.bh] });
    }
    set(339, { type: 'SHORT', values: new Array<number>(n).fill(SAMPLE_FORMAT[t]) });
    if (this.predictor !== 1) set(317, { type: 'SHORT', values: [this.predictor] });
    if (palette) set(320, colorMapTag(info.colormap!, this.bits));
    if (extra > 0) set(338, { type: 'SHORT', values: new Array<number>(extra).fill(0) });
    const { x: sx, y: sy } = info.cellSize;
    set(33550, { type: 'DOUBLE', values: [sx, sy, 0] });
    set(33922, { type: 'DOUBLE', values: [0, 0, 0, info.extent.xmin, info.extent.ymax, 0] });
    for (const [tag, value] of geoKeyTags(info)) set(tag, value);
    const names = info.bandNames?.length === n ? info.bandNames : undefined;
    // Band names only: `info.statistics` is what functions advertise, not the pixels' statistics.
    const xml = gdalMetadataXml(undefined, names, n);
    if (xml) set(42112, { type: 'ASCII', value: xml });
    if (ndTag !== undefined) set(42113, { type: 'ASCII', value: formatNoData(ndTag) });
    return m;
  }

  private maskTags(w: number, h: number, overview: boolean): Map<number, Entry> {
    const m = new Map<number, Entry>();
    const set = (tag: number, v: TagValue): void => void m.set(tag, entryOf(tag, v));
    set(254, { type: 'LONG', values: [overview ? 5 : 4] });
    set(256, { type: 'LONG', values: [w] });
    set(257, { type: 'LONG', values: [h] });
    set(258, { type: 'SHORT', values: [1] });
    set(259, { type: 'SHORT', values: [this.level === undefined ? 1 : 8] });
    set(262, { type: 'SHORT', values: [4] });
    set(277, { type: 'SHORT', values: [1] });
    set(284, { type: 'SHORT', values: [1] });
    if (this.tiled) {
      set(322, { type: 'LONG', values: [this.bw] });
      set(323, { type: 'LONG', values: [this.bh] });
    } else set(278, { type: 'LONG', values: [this.bh] });
    set(339, { type: 'SHORT', values: [1] });
    return m;
  }

  private addBlockTags(tags: Map<number, Entry>, blocks: number): void {
    const type = this.big ? 'LONG8' : 'LONG';
    const zeros = new Array<number>(blocks).fill(0);
    tags.set(this.tiled ? 324 : 273, entryOf(this.tiled ? 324 : 273, { type, values: zeros } as TagValue));
    tags.set(this.tiled ? 325 : 279, entryOf(this.tiled ? 325 : 279, { type, values: zeros } as TagValue));
  }

  /** The chain of IFDs: each level's image then its mask (masks left out when unused). */
  private ifdChain(withMasks: boolean): ImageIfd[] {
    const out: ImageIfd[] = [];
    for (const l of this.levels) {
      out.push(l.image);
      if (l.mask && withMasks) out.push(l.mask);
    }
    return out;
  }

  private async start(): Promise<void> {
    let cursor = this.big ? 16 : 8;
    for (const ifd of this.ifdChain(true)) {
      ifd.placed = new PlacedIfd(ifd.entries, cursor, this.big);
      cursor = ifd.placed.end;
    }
    this.headerSize = cursor;
    try {
      this.fh = await open(this.partial, 'w');
    } catch (e) {
      throw new EngineError('IO_ERROR', `cannot write ${this.path}: ${(e as Error).message}`, { path: 'output', cause: e });
    }
    this.fileSize = this.headerSize;
    if (!this.options.cog) {
      await this.fh.write(new Uint8Array(this.headerSize), 0, this.headerSize, 0);
      for (const l of this.levels) (l as { sink: Sink }).sink = { append: (b) => this.appendMain(b) };
    } else {
      for (const l of this.levels) {
        const path = `${this.path}.level${l.index}.tmp-${process.pid}`;
        const temp = { path, fh: await open(path, 'w+'), size: 0 };
        Object.assign(l, {
          temp,
          sink: {
            append: async (b: Uint8Array) => {
              const at = temp.size;
              temp.size += b.length;
              await writeAll(temp.fh, b, at);
              return at;
            },
          },
        });
      }
    }
  }

  private async appendMain(b: Uint8Array): Promise<number> {
    const at = this.fileSize;
    this.fileSize += b.length;
    if (!this.big && this.fileSize > MAX_CLASSIC) {
      throw new EngineError('LIMIT_EXCEEDED', `${this.path} would pass 4 GiB: write it as BigTIFF (--co BIGTIFF=YES)`, { path: 'output' });
    }
    await writeAll(this.fh, b, at);
    return at;
  }

  /** Add a rendered block (its rect in the output's coordinates plus `offset`). */
  async write(block: PixelBlock): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.finished) throw new EngineError('INTERNAL', 'write after close');
    if (block.pixelType !== this.t || block.bands.length !== this.bandCount) {
      throw new EngineError('INTERNAL', `TiffStreamWriter: a ${block.bands.length}-band ${block.pixelType} block for a ${this.bandCount}-band ${this.t} raster`);
    }
    const r = { x: block.rect.x - this.offset.x, y: block.rect.y - this.offset.y, width: block.rect.width, height: block.rect.height };
    if (!this.writeDirect(r, block.bands, block.mask)) this.addRows(this.levels[0]!, r, block.bands, block.mask, block.rect.width);
    if (this.inFlight > MAX_IN_FLIGHT) await this.chain;
    if (this.failure) throw this.failure;
  }

  /** Copy the part of a block inside the level into its band rows; flush the rows it completes. */
  private addRows(level: Level, r: { x: number; y: number; width: number; height: number }, planes: readonly Plane[], mask: Uint8Array, stride: number): void {
    const k = this.k;
    const x0 = Math.max(0, r.x);
    const x1 = Math.min(level.width, r.x + r.width);
    const y0 = Math.max(0, r.y);
    const y1 = Math.min(level.height, r.y + r.height);
    if (x1 <= x0 || y1 <= y0) return;
    const n = x1 - x0;
    for (let row = Math.floor(y0 / this.bh); row * this.bh < y1; row++) {
      const top = row * this.bh;
      const rows = Math.min(this.bh, level.height - top);
      let br = level.pending.get(row);
      if (!br) {
        const direct = level.direct.get(row)?.size ?? 0;
        br = { planes: planes.map(() => allocatePlane(this.t, level.width * rows)), mask: new Uint8Array(level.width * rows), rows, filled: direct * this.bw * rows };
        level.pending.set(row, br);
      }
      const ya = Math.max(y0, top);
      const yb = Math.min(y1, top + rows);
      for (let y = ya; y < yb; y++) {
        const s = (y - r.y) * stride + (x0 - r.x);
        const d = (y - top) * level.width + x0;
        for (let b = 0; b < planes.length; b++) (br.planes[b] as Float64Array).set((planes[b] as Float64Array).subarray(k * s, k * (s + n)), k * d);
        br.mask.set(mask.subarray(s, s + n), d);
      }
      br.filled += n * (yb - ya);
      if (br.filled >= level.width * rows) {
        level.pending.delete(row);
        this.flushRow(level, row, br);
      }
    }
  }

  /** Encode and queue the blocks of one complete band row; feed the next level. */
  private flushRow(level: Level, row: number, br: BandRow): void {
    const top = row * this.bh;
    const w = level.width;
    const { rows, planes, mask } = br;
    const k = this.k;
    const masked = mask.indexOf(0) >= 0;
    if (masked && level.index === 0) this.anyMasked = true;
    if (level.index === 0 && this.stats) this.stats.add(planes, mask, 0, w, rows, w);
    // Next level first (it reads the unfilled values).
    const next = this.levels[level.index + 1];
    if (next) {
      const half = downsample(planes, mask, w, rows, this.t, this.average);
      this.addRows(next, { x: 0, y: top / 2, width: half.width, height: half.height }, half.planes, half.mask, half.width);
    }
    const jobs: Job[] = [];
    const tileH = this.tiled ? this.bh : rows;
    const direct = level.direct.get(row);
    level.direct.delete(row);
    for (let b = 0; b < planes.length; b++) {
      const plane = planes[b]!;
      for (let bx = 0; bx < level.across; bx++) {
        if (direct?.has(bx)) continue;
        const x0 = bx * this.bw;
        const cw = Math.min(this.bw, w - x0);
        const tile = allocatePlane(this.t, this.bw * tileH);
        if (cw < this.bw || rows < tileH) tile.fill(k === 2 ? 0 : this.fill);
        for (let y = 0; y < rows; y++) {
          const s = y * w + x0;
          (tile as Float64Array).set((plane as Float64Array).subarray(k * s, k * (s + cw)), k * y * this.bw);
          if (!masked || mask.subarray(s, s + cw).indexOf(0) < 0) continue;
          for (let c = 0; c < cw; c++) {
            if (mask[s + c] === 0) {
              tile[k * (y * this.bw + c)] = this.fill;
              if (k === 2) tile[2 * (y * this.bw + c) + 1] = 0;
            }
          }
        }
        const index = b * level.across * level.down + row * level.across + bx;
        jobs.push({ ifd: level.image, index, bytes: this.encodeBlock(tile, tileH) });
      }
    }
    if (level.mask) {
      for (let bx = 0; bx < level.across; bx++) {
        if (direct?.has(bx)) continue;
        const x0 = bx * this.bw;
        const cw = Math.min(this.bw, w - x0);
        let all = cw === this.bw && rows === tileH && tileH === this.bh;
        for (let y = 0; all && y < rows; y++) all = mask.subarray(y * w + x0, y * w + x0 + cw).indexOf(0) < 0;
        // A full tile of valid pixels is the same bytes every time: encode it once.
        const bytes = all ? (this.validMaskTile ??= this.compress(packMask(new Uint8Array(this.bw * tileH).fill(1), 0, this.bw, this.bw, tileH, tileH, this.bw))) : this.compress(packMask(mask, x0, w, cw, rows, tileH, this.bw));
        jobs.push({ ifd: level.mask, index: row * level.across + bx, bytes });
      }
    }
    this.queue(level, jobs, jobs.length * this.bw * tileH * (this.bits / 8) * k);
  }

  /**
   * A block that is exactly one full TIFF block of the full-resolution image (render tiles the
   * size of the TIFF blocks, aligned, as `rasterflow render` makes them): encoded from its own
   * planes, without gathering a band row. Not with overviews (they need rows), nor
   * into a row already being gathered. False when the block does not qualify.
   */
  private writeDirect(r: { x: number; y: number; width: number; height: number }, planes: readonly Plane[], mask: Uint8Array): boolean {
    const level = this.levels[0]!;
    if (!this.tiled || this.levels.length !== 1 || r.width !== this.bw || r.height !== this.bh) return false;
    if (r.x < 0 || r.y < 0 || r.x % this.bw !== 0 || r.y % this.bh !== 0 || r.x + this.bw > level.width || r.y + this.bh > level.height) return false;
    const row = r.y / this.bh;
    const bx = r.x / this.bw;
    if (level.pending.has(row)) return false;
    let set = level.direct.get(row);
    if (set?.has(bx)) return false;
    const k = this.k;
    const masked = mask.indexOf(0) >= 0;
    if (masked) this.anyMasked = true;
    this.stats?.add(planes, mask, 0, this.bw, this.bh, this.bw);
    const jobs: Job[] = [];
    for (let b = 0; b < planes.length; b++) {
      // A private copy: the predictor and the NoData fill work in place, and the caller keeps its block.
      const tile = planes[b]!.slice();
      if (masked) {
        for (let i = 0; i < mask.length; i++) {
          if (mask[i] !== 0) continue;
          tile[k * i] = this.fill;
          if (k === 2) tile[k * i + 1] = 0;
        }
      }
      jobs.push({ ifd: level.image, index: b * level.across * level.down + row * level.across + bx, bytes: this.encodeBlock(tile, this.bh) });
    }
    if (level.mask) {
      const bytes = masked
        ? this.compress(packMask(mask, 0, this.bw, this.bw, this.bh, this.bh, this.bw))
        : (this.validMaskTile ??= this.compress(packMask(new Uint8Array(this.bw * this.bh).fill(1), 0, this.bw, this.bw, this.bh, this.bh, this.bw)));
      jobs.push({ ifd: level.mask, index: row * level.across + bx, bytes });
    }
    if (!set) level.direct.set(row, (set = new Set()));
    set.add(bx);
    if (set.size === level.across) level.direct.delete(row);
    this.queue(level, jobs, jobs.length * this.bw * this.bh * (this.bits / 8) * k);
    return true;
  }

  /** Append encoded blocks to the level's output in order, once each is ready. */
  private queue(level: Level, jobs: Job[], size: number): void {
    this.inFlight += size;
    for (const j of jobs) j.bytes.catch(() => undefined);
    this.chain = this.chain.then(async () => {
      for (const j of jobs) {
        const bytes = await j.bytes;
        j.ifd.offsets[j.index] = await level.sink.append(bytes);
        j.ifd.counts[j.index] = bytes.length;
      }
      this.inFlight -= size;
    });
    this.chain.catch((e: unknown) => {
      this.failure ??= e;
    });
  }

  private encodeBlock(tile: Plane, rows: number): Promise<Uint8Array> {
    const ti = PIXEL_TYPE_INFO[this.t];
    let bytes: Uint8Array;
    if (this.bits % 8 !== 0 || this.bits < ti.bits) {
      bytes = packSamples(tile as Uint8Array | Uint16Array | Uint32Array, this.bw, rows, this.bits);
    } else {
      bytes = new Uint8Array(tile.buffer, tile.byteOffset, tile.byteLength);
      if (this.predictor === 2) horizontalDifference(tile, this.bw, rows);
      else if (this.predictor === 3) floatingPointDifference(bytes, this.bw, rows, ti.bits / 8);
    }
    return this.compress(bytes);
  }

  /** DEFLATE on the codec threads (codec-pool.ts); `bytes` is given up (every caller made it). */
  private compress(bytes: Uint8Array): Promise<Uint8Array> {
    if (this.level === undefined) return Promise.resolve(bytes);
    return deflateBlock(bytes, this.level, true);
  }

  /** Wait for every block, write the IFDs and offsets, rename into place. */
  async close(): Promise<void> {
    if (this.finished) return;
    try {
      for (const l of this.levels) {
        if (l.pending.size > 0) throw new EngineError('INTERNAL', `TiffStreamWriter: level ${l.index} was not completely written`);
      }
      await this.chain;
      if (this.failure) throw this.failure;
      this.finished = true;
      await this.finish();
      await this.fh.close();
      await rename(this.partial, this.path);
    } catch (e) {
      await this.abort();
      throw e;
    }
  }

  private async finish(): Promise<void> {
    const withMasks = this.anyMasked;
    if (this.metadataEntry && this.stats) {
      const names = this.info.bandNames?.length === this.bandCount ? this.info.bandNames : undefined;
      const xml = gdalMetadataXml(this.stats.result(this.info.width * this.info.height), names, this.bandCount) ?? '';
      const fresh = entryOf(42112, { type: 'ASCII', value: xml });
      this.metadataEntry.bytes = fresh.bytes.length <= this.metadataEntry.room ? fresh.bytes : fresh.bytes.subarray(0, this.metadataEntry.room);
      this.metadataEntry.count = this.metadataEntry.bytes.length;
    }
    // COG: level data after the header, smallest overview first.
    const base = new Map<number, number>();
    if (this.options.cog) {
      let cursor = this.headerSize;
      for (const l of [...this.levels].reverse()) {
        base.set(l.index, cursor);
        cursor += l.temp!.size;
      }
      if (!this.big && cursor > MAX_CLASSIC) {
        throw new EngineError('LIMIT_EXCEEDED', `${this.path} would pass 4 GiB: write it as BigTIFF (--co BIGTIFF=YES)`, { path: 'output' });
      }
    }
    for (const l of this.levels) {
      const add = base.get(l.index) ?? 0;
      for (const ifd of l.mask ? [l.image, l.mask] : [l.image]) {
        const type = this.big ? 'LONG8' : 'LONG';
        const offsets = ifd.offsets.map((o, i) => (ifd.counts[i] === 0 ? 0 : o + add));
        ifd.entries.get(this.tiled ? 324 : 273)!.bytes = numberBytes(type, offsets);
        ifd.entries.get(this.tiled ? 325 : 279)!.bytes = numberBytes(type, ifd.counts);
      }
    }
    const header = new Uint8Array(this.headerSize);
    const view = new DataView(header.buffer);
    header[0] = 0x49;
    header[1] = 0x49;
    if (this.big) {
      view.setUint16(2, 43, true);
      view.setUint16(4, 8, true);
      view.setBigUint64(8, 16n, true);
    } else {
      view.setUint16(2, 42, true);
      view.setUint32(4, 8, true);
    }
    // Every IFD keeps its place; unused masks are just left out of the chain.
    const chain = this.ifdChain(withMasks);
    const all = this.ifdChain(true);
    for (const ifd of all) {
      const i = chain.indexOf(ifd);
      const next = i >= 0 && i + 1 < chain.length ? chain[i + 1]!.placed!.at : 0;
      ifd.placed!.serialise(header, 0, next);
    }
    await writeAll(this.fh, header, 0);
    if (this.options.cog) {
      for (const l of [...this.levels].reverse()) {
        const temp = l.temp!;
        const chunk = new Uint8Array(Math.min(8 * 1024 * 1024, Math.max(1, temp.size)));
        for (let p = 0; p < temp.size; ) {
          const { bytesRead } = await temp.fh.read(chunk, 0, Math.min(chunk.length, temp.size - p), p);
          if (bytesRead === 0) break;
          await writeAll(this.fh, chunk.subarray(0, bytesRead), base.get(l.index)! + p);
          p += bytesRead;
        }
        await temp.fh.close();
        await unlink(temp.path).catch(() => undefined);
      }
    }
  }

  /** Stop and remove the partial output and temporary files. */
  async abort(): Promise<void> {
    this.finished = true;
    await this.chain.catch(() => undefined);
    await this.fh?.close().catch(() => undefined);
    await unlink(this.partial).catch(() => undefined);
    for (const l of this.levels) {
      if (!l.temp) continue;
      await l.temp.fh.close().catch(() => undefined);
      await unlink(l.temp.path).catch(() => undefined);
    }
  }
}

async function writeAll(fh: FileHandle, b: Uint8Array, at: number): Promise<void> {
  let done = 0;
  while (done < b.length) {
    const { bytesWritten } = await fh.write(b, done, b.length - done, at + done);
    done += bytesWritten;
  }
}

/**
 * Write a whole raster from an iterable of blocks (e.g. `renderTiles(...)`) to `path`; `onBlock`
 * is told after each block. On any error the partial output is removed.
 */
export async function writeTiffStream(
  path: string,
  info: RasterInfo,
  blocks: AsyncIterable<PixelBlock>,
  options: StreamTiffOptions = {},
  onBlock?: (block: PixelBlock) => void,
): Promise<void> {
  const w = await TiffStreamWriter.create(path, info, options);
  try {
    for await (const b of blocks) {
      await w.write(b);
      onBlock?.(b);
    }
  } catch (e) {
    await w.abort();
    throw e;
  }
  await w.close();
}

// ---- Pixel work

/**
 * Halve a band row (rows x width) for the next overview level: AVERAGE of the valid pixels of
 * each 2 x 2 cell (cells cut by the right or bottom edge use what they have; integer results
 * rounded half away from zero), or NEAREST (the cell's top-left pixel). A cell without a valid
 * pixel is masked.
 */
export function downsample(
  planes: readonly Plane[],
  mask: Uint8Array,
  width: number,
  rows: number,
  t: PixelType,
  average: boolean,
): { planes: Plane[]; mask: Uint8Array; width: number; height: number } {
  const w2 = Math.ceil(width / 2);
  const h2 = Math.ceil(rows / 2);
  const k = PIXEL_TYPE_INFO[t].complex ? 2 : 1;
  const integer = PIXEL_TYPE_INFO[t].integer;
  const out = planes.map(() => allocatePlane(t, w2 * h2));
  const m2 = new Uint8Array(w2 * h2);
  for (let y = 0; y < h2; y++) {
    const r0 = 2 * y;
    const r1 = Math.min(rows - 1, r0 + 1);
    for (let x = 0; x < w2; x++) {
      const c0 = 2 * x;
      const c1 = Math.min(width - 1, c0 + 1);
      const d = y * w2 + x;
      if (!average) {
        // Top-left of the cell, or the first valid one.
        const cand = [r0 * width + c0, r0 * width + c1, r1 * width + c0, r1 * width + c1];
        let s = -1;
        for (const i of cand) if (mask[i] !== 0) { s = i; break; }
        if (s < 0) continue;
        m2[d] = 1;
        for (let b = 0; b < planes.length; b++) {
          out[b]![k * d] = planes[b]![k * s]!;
          if (k === 2) out[b]![k * d + 1] = planes[b]![k * s + 1]!;
        }
        continue;
      }
      const i00 = r0 * width + c0;
      const i01 = r0 * width + c1;
      const i10 = r1 * width + c0;
      const i11 = r1 * width + c1;
      const v00 = mask[i00] !== 0;
      const v01 = c1 !== c0 && mask[i01] !== 0;
      const v10 = r1 !== r0 && mask[i10] !== 0;
      const v11 = c1 !== c0 && r1 !== r0 && mask[i11] !== 0;
      const n = (v00 ? 1 : 0) + (v01 ? 1 : 0) + (v10 ? 1 : 0) + (v11 ? 1 : 0);
      if (n === 0) continue;
      m2[d] = 1;
      for (let b = 0; b < planes.length; b++) {
        const p = planes[b]!;
        for (let part = 0; part < k; part++) {
          const s = (v00 ? p[k * i00 + part]! : 0) + (v01 ? p[k * i01 + part]! : 0) + (v10 ? p[k * i10 + part]! : 0) + (v11 ? p[k * i11 + part]! : 0);
          out[b]![k * d + part] = integer ? castValue(s / n, t) : s / n;
        }
      }
    }
  }
  return { planes: out, mask: m2, width: w2, height: h2 };
}

/**
 * A 1-bit mask block (`tileW` x `tileH`, rows padded to a byte): 1 where `mask` (a band row of
 * width `w`, columns x0..x0+cw, `rows` rows) is not 0; 0 outside the image.
 */
export function packMask(mask: Uint8Array, x0: number, w: number, cw: number, rows: number, tileH: number, tileW: number): Uint8Array {
  const rowBytes = Math.ceil(tileW / 8);
  const out = new Uint8Array(rowBytes * tileH);
  for (let y = 0; y < rows; y++) {
    const s = y * w + x0;
    const d = y * rowBytes;
    let c = 0;
    for (; c + 8 <= cw; c += 8) {
      const i = s + c;
      out[d + (c >> 3)] =
        (mask[i] ? 128 : 0) | (mask[i + 1] ? 64 : 0) | (mask[i + 2] ? 32 : 0) | (mask[i + 3] ? 16 : 0) |
        (mask[i + 4] ? 8 : 0) | (mask[i + 5] ? 4 : 0) | (mask[i + 6] ? 2 : 0) | (mask[i + 7] ? 1 : 0);
    }
    for (; c < cw; c++) if (mask[s + c]) out[d + (c >> 3)]! |= 0x80 >>> (c & 7);
  }
  return out;
}

/** Pack `bits`-bit unsigned samples MSB-first, each row starting on a byte; larger values saturate. */
export function packSamples(src: Uint8Array | Uint16Array | Uint32Array | Plane, width: number, rows: number, bits: number): Uint8Array {
  const rowBytes = Math.ceil((width * bits) / 8);
  const out = new Uint8Array(rowBytes * rows);
  const max = 2 ** bits - 1;
  if (bits === 1 || bits === 2 || bits === 4) {
    const perByte = 8 / bits;
    for (let r = 0; r < rows; r++) {
      const s = r * width;
      const d = r * rowBytes;
      for (let c = 0; c < width; c++) {
        const v = Math.min(max, src[s + c]!);
        out[d + Math.floor(c / perByte)]! |= v << (8 - bits * (1 + (c % perByte)));
      }
    }
    return out;
  }
  for (let r = 0; r < rows; r++) {
    let bit = r * rowBytes * 8;
    const s = r * width;
    for (let c = 0; c < width; c++) {
      const v = Math.min(max, src[s + c]!);
      for (let k = bits - 1; k >= 0; k--, bit++) {
        if (Math.floor(v / 2 ** k) % 2 === 1) out[bit >>> 3]! |= 0x80 >>> (bit & 7);
      }
    }
  }
  return out;
}

/** Predictor 2: each sample minus its left neighbour, in the type's wrapping arithmetic. */
function horizontalDifference(p: Plane, width: number, rows: number): void {
  if (p instanceof Uint8Array && width % 4 === 0 && p.byteOffset % 4 === 0) {
    bytesDifference(new Int32Array(p.buffer, p.byteOffset, (width * rows) >> 2), width >> 2, rows);
    return;
  }
  // Forward, carrying the previous sample: one load per sample (the store wraps to the type).
  for (let r = 0; r < rows; r++) {
    const row = r * width;
    let prev = p[row]!;
    for (let i = row + 1; i < row + width; i++) {
      const v = p[i]!;
      p[i] = v - prev;
      prev = v;
    }
  }
}

/**
 * Predictor 2 on bytes, four at a time (SWAR, little-endian host): each word minus the word of
 * the bytes one to the left, `(x | H) - (y & ~H) ^ ((x ^ ~y) & H)` subtracting lane by lane
 * without borrows (H = the lanes' top bits). `words` words per row.
 */
function bytesDifference(w: Int32Array, words: number, rows: number): void {
  const H = 0x80808080 | 0;
  for (let r = 0; r < rows; r++) {
    let carry = 0; // the previous word's top byte, as the next word's lowest left neighbour
    for (let i = r * words, end = i + words; i < end; i++) {
      const x = w[i]!;
      const y = (x << 8) | carry;
      carry = x >>> 24;
      w[i] = ((x | H) - (y & ~H)) ^ ((x ^ ~y) & H);
    }
  }
}

/** Predictor 3 (TIFF Technical Note 3): bytes regrouped most significant first, then differenced. */
function floatingPointDifference(bytes: Uint8Array, width: number, rows: number, bps: number): void {
  const rowBytes = width * bps;
  const tmp = new Uint8Array(rowBytes);
  for (let r = 0; r < rows; r++) {
    const base = r * rowBytes;
    if (bps === 4) {
      const w2 = 2 * width;
      const w3 = 3 * width;
      for (let i = 0, o = base; i < width; i++, o += 4) {
        tmp[w3 + i] = bytes[o]!;
        tmp[w2 + i] = bytes[o + 1]!;
        tmp[width + i] = bytes[o + 2]!;
        tmp[i] = bytes[o + 3]!;
      }
    } else {
      for (let i = 0; i < width; i++) {
        const o = base + i * bps;
        for (let b = 0; b < bps; b++) tmp[(bps - 1 - b) * width + i] = bytes[o + b]!;
      }
    }
    bytes[base] = tmp[0]!;
    for (let j = 1; j < rowBytes; j++) bytes[base + j] = tmp[j]! - tmp[j - 1]!;
  }
}

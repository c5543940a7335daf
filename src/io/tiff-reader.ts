/**
 * A lean TIFF structure reader: byte sources (a local file through one file handle, an http(s)
 * URL through HTTP range requests) and our own IFD parser for classic TIFF and BigTIFF, either
 * byte order (TIFF 6.0 section 2; BigTIFF: 16-byte header, 20-byte entries, 8-byte counts and
 * offsets, types 16-18). Every tag of every IFD is read eagerly (COG headers sit in the first
 * kilobytes, fetched in one request); pixels are decoded elsewhere (decoders.ts).
 *
 * `describeTiffImage` turns an IFD into what the block decoder needs (size, blocks, samples,
 * compression, predictor, offsets). Byte sources coalesce nearby block reads into one read
 * (`readRangesEach`), so a window of a COG costs one request per run of adjacent tiles.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';

/** Random access to the bytes of a file or URL. */
export interface ByteSource {
  readonly location: string;
  /** Identity for caches: path + size + mtime, or URL + length (+ ETag). */
  readonly key: string;
  /** The size in bytes, when known (a local file; a URL once a response has given it). */
  readonly size?: number | undefined;
  /** Read up to `length` bytes at `offset` (fewer at the end of the file). */
  read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
  /** Local files: read up to `target.length` bytes at `offset` into `target`; resolves to the bytes read. */
  readInto?(offset: number, target: Uint8Array, signal?: AbortSignal): Promise<number>;
  /**
   * Local files: `use` the file's descriptor (reads on another thread: codec-pool.ts
   * `inflateFileBlock`); the file stays open until the promise `use` returns settles, even when
   * `close()` is called meanwhile. Rejects once the source is closed.
   */
  withDescriptor?<T>(use: (fd: number) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Largest gap between two block ranges read in one request, and the largest merged read. */
const GAP_FILE = 64 * 1024;
const GAP_HTTP = 512 * 1024;
const MAX_MERGED_FILE = 2 * 1024 * 1024;
const MAX_MERGED_HTTP = 16 * 1024 * 1024;

export interface ByteRange {
  readonly offset: number;
  readonly length: number;
}

/**
 * Read several ranges, merging those less than a gap apart into one read (unless `merge` is
 * false: one read per range, each into its own buffer); one promise per range, in the order of
 * `ranges`, each settled as soon as its own read is done. Zero-length ranges give empty arrays.
 */
export function readRangesEach(src: ByteSource, ranges: readonly ByteRange[], signal?: AbortSignal, merge = true): Promise<Uint8Array>[] {
  const http = /^https?:/i.test(src.location);
  const gap = !merge ? -1 : http ? GAP_HTTP : GAP_FILE;
  // Local reads stay small, so the decoding of the first blocks overlaps the reading of the next.
  const maxMerged = http ? MAX_MERGED_HTTP : MAX_MERGED_FILE;
  const order = ranges
    .map((_, i) => i)
    .filter((i) => ranges[i]!.length > 0)
    .sort((a, b) => ranges[a]!.offset - ranges[b]!.offset);
  const out: Promise<Uint8Array>[] = ranges.map(() => Promise.resolve(new Uint8Array(0)));
  const groups: number[][] = [];
  let end = -Infinity;
  let start = 0;
  for (const i of order) {
    const r = ranges[i]!;
    const g = groups.at(-1);
    if (g && merge && r.offset - end <= gap && Math.max(end, r.offset + r.length) - start <= maxMerged) {
      g.push(i);
      end = Math.max(end, r.offset + r.length);
    } else {
      groups.push([i]);
      start = r.offset;
      end = r.offset + r.length;
    }
  }
  for (const g of groups) {
    const first = ranges[g[0]!]!.offset;
    const last = Math.max(...g.map((i) => ranges[i]!.offset + ranges[i]!.length));
    const bytes = src.read(first, last - first, signal);
    bytes.catch(() => undefined); // observed through the per-range promises
    for (const i of g) {
      const r = ranges[i]!;
      out[i] = bytes.then((b) =>
        g.length === 1 && r.offset === first && b.length <= r.length
          ? b
          : b.subarray(r.offset - first, Math.min(b.length, r.offset - first + r.length)),
      );
    }
  }
  return out;
}

/** A local file. The handle stays open until `close()`. */
export async function openFileSource(path: string): Promise<ByteSource> {
  const fh: FileHandle = await open(path, 'r');
  // On a failed stat the handle would otherwise be left to the garbage collector.
  const st = await stat(path).catch(async (e: unknown) => {
    await fh.close().catch(() => undefined);
    throw e;
  });
  let closed = false;
  // Uses of the descriptor still running (`withDescriptor`), and the close waiting for them.
  let using = 0;
  let idle: (() => void) | undefined;
  return {
    location: path,
    key: `file:${path}:${st.size}:${st.mtimeMs}:${st.ino}`,
    size: st.size,
    async read(offset, length, signal) {
      if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : abortError();
      // Never more than the file holds: a length from a corrupt header (a 4 GB byte count, a
      // tag of 2^30 values) must not size a buffer, nor reach fh.read (which aborts the process
      // for a length over 2^31 - 1).
      length = Math.max(0, Math.min(length, st.size - offset));
      if (length === 0) return new Uint8Array(0);
      // Not zero-filled (every byte is read over); its own buffer, exactly `length` long.
      const buf = new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
      let got = 0;
      while (got < length) {
        const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return got === length ? buf : buf.subarray(0, got);
    },
    async readInto(offset, target, signal) {
      if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : abortError();
      let got = 0;
      while (got < target.length) {
        const { bytesRead } = await fh.read(target, got, target.length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return got;
    },
    async withDescriptor<T>(use: (fd: number) => Promise<T>): Promise<T> {
      if (closed) throw new Error(`${path} is closed`);
      using++;
      try {
        return await use(fh.fd);
      } finally {
        if (--using === 0) idle?.();
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      // A descriptor closed under a read on another thread could be reused by the next open file.
      if (using > 0) await new Promise<void>((resolve) => (idle = resolve));
      await fh.close();
    },
  };
}

function abortError(): Error {
  const e = new Error('The operation was aborted');
  e.name = 'AbortError';
  return e;
}

class HttpError extends Error {}

/**
 * An http(s) URL read with `Range: bytes=a-b` requests. A server that ignores ranges (200 with
 * the whole body) is read once and served from memory afterwards.
 */
export async function openHttpSource(
  url: string,
  signal?: AbortSignal,
  headBytes = 65536,
): Promise<{ source: ByteSource; head: Uint8Array }> {
  let whole: Uint8Array | undefined;
  let size: number | undefined;
  let etag = '';
  const get = async (offset: number, length: number, s?: AbortSignal): Promise<Uint8Array> => {
    if (whole) return whole.subarray(offset, offset + length);
    const end = size === undefined ? offset + length - 1 : Math.min(offset + length, size) - 1;
    if (end < offset) return new Uint8Array(0);
    const res = await fetch(url, { headers: { range: `bytes=${offset}-${end}` }, ...(s ? { signal: s } : {}) });
    if (res.status === 200) {
      whole = new Uint8Array(await res.arrayBuffer());
      size = whole.length;
      return whole.subarray(offset, offset + length);
    }
    if (res.status !== 206) throw new HttpError(`HTTP ${res.status} ${res.statusText}`.trim());
    const total = /\/(\d+)\s*$/.exec(res.headers.get('content-range') ?? '');
    if (total) size = Number(total[1]);
    etag ||= res.headers.get('etag') ?? '';
    return new Uint8Array(await res.arrayBuffer());
  };
  const head = await get(0, headBytes, signal);
  const source: ByteSource = {
    location: url,
    key: `url:${url}:${size ?? ''}:${etag}`,
    get size() {
      return size;
    },
    read: (offset, length, s) => get(offset, length, s),
    close: async () => {
      whole = undefined;
    },
  };
  return { source, head };
}

// ---- IFDs

/** A tag's value: numbers (any numeric type), text (ASCII) or raw bytes (BYTE, UNDEFINED). */
export type TagData = Float64Array | string | Uint8Array;

export interface Ifd {
  /** Byte offset of the IFD. */
  readonly offset: number;
  readonly tags: ReadonlyMap<number, TagData>;
}

export interface TiffStructure {
  readonly littleEndian: boolean;
  readonly bigTiff: boolean;
  readonly ifds: readonly Ifd[];
}

const TYPE_SIZE: Readonly<Record<number, number>> = {
  1: 1,
  2: 1,
  3: 2,
  4: 4,
  5: 8,
  6: 1,
  7: 1,
  8: 2,
  9: 4,
  10: 8,
  11: 4,
  12: 8,
  13: 4,
  16: 8,
  17: 8,
  18: 8,
};

/** A TIFF whose structure is broken: cut short, or tags that contradict each other (IO_ERROR). */
export class TiffFormatError extends Error {}

/** A well-formed TIFF the engine cannot represent (UNSUPPORTED_INPUT). */
export class TiffUnsupportedError extends Error {}

/**
 * How many tag values the IFDs of one file may hold in all, each entry counting at least 16
 * (its Map slot and typed array). Values are decoded to 8-byte numbers, and entries of many
 * tags may point at the same bytes: without a budget a 1 MB file of 4,000 tags, each 250,000
 * SHORTs at one offset, decodes to 8 GB.
 * Decision: 2^24 (128 MiB of decoded numbers), ample for the block offsets and byte counts of
 * an image of 8 million tiles and its overviews.
 */
export const MAX_TAG_VALUES = 2 ** 24;

/**
 * Parse the header and up to `maxIfds` IFDs (a guard against loops). `head` holds the first bytes
 * of the file (any length); anything past it is read from `src`.
 */
export async function readTiffStructure(src: ByteSource, head: Uint8Array, maxIfds = 257, signal?: AbortSignal): Promise<TiffStructure> {
  const bytesAt = async (offset: number, length: number, what: string): Promise<DataView> => {
    const size = src.size;
    // Checked before reading: a length from a corrupt entry (2^32 values) must not size a buffer.
    if (size !== undefined && offset + length > size && offset + length > head.length) {
      const there = Math.max(0, Math.min(length, size - offset));
      throw new TiffFormatError(
        `the file is cut short or corrupt: ${what} needs ${length} bytes at offset ${offset}, ${there} are there (the file has ${size} bytes)`,
      );
    }
    const b = offset + length <= head.length ? head.subarray(offset, offset + length) : await src.read(offset, length, signal);
    if (b.length < length) {
      const size = src.size === undefined ? '' : ` (the file has ${src.size} bytes)`;
      throw new TiffFormatError(
        `the file is cut short or corrupt: ${what} needs ${length} bytes at offset ${offset}, ${b.length} are there${size}`,
      );
    }
    return new DataView(b.buffer, b.byteOffset, b.byteLength);
  };
  const h = await bytesAt(0, 8, 'the header');
  const b0 = h.getUint8(0);
  const b1 = h.getUint8(1);
  if (!((b0 === 0x49 && b1 === 0x49) || (b0 === 0x4d && b1 === 0x4d))) throw new TiffFormatError('not a TIFF file');
  const le = b0 === 0x49;
  const version = h.getUint16(2, le);
  if (version !== 42 && version !== 43) throw new TiffFormatError(`not a TIFF file (version ${version})`);
  const big = version === 43;
  let next: number;
  if (big) {
    const h16 = await bytesAt(0, 16, 'the BigTIFF header');
    if (h16.getUint16(4, le) !== 8) throw new TiffFormatError('unsupported BigTIFF offset size');
    next = Number(h16.getBigUint64(8, le));
  } else next = h.getUint32(4, le);

  const ifds: Ifd[] = [];
  const seen = new Set<number>();
  let budget = MAX_TAG_VALUES;
  while (next !== 0 && ifds.length < maxIfds && !seen.has(next)) {
    seen.add(next);
    const what = `image directory (IFD) ${ifds.length + 1}`;
    const countView = await bytesAt(next, big ? 8 : 2, what);
    const count = big ? Number(countView.getBigUint64(0, le)) : countView.getUint16(0, le);
    const entrySize = big ? 20 : 12;
    const body = await bytesAt(next + (big ? 8 : 2), count * entrySize + (big ? 8 : 4), what);
    const tags = new Map<number, TagData>();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const p = i * entrySize;
      const tag = body.getUint16(p, le);
      const type = body.getUint16(p + 2, le);
      const n = big ? Number(body.getBigUint64(p + 4, le)) : body.getUint32(p + 4, le);
      const size = TYPE_SIZE[type];
      if (size === undefined) continue; // unknown type: skip the tag, as libtiff does
      budget -= Math.max(n, 16);
      if (budget < 0) {
        for (const read of pending) read.catch(() => undefined); // reads already started fail unobserved otherwise
        throw new TiffFormatError(
          `the image directories hold more than ${MAX_TAG_VALUES} tag values (at tag ${tag} of ${what}): the file is corrupt or hostile`,
        );
      }
      const total = size * n;
      const inline = total <= (big ? 8 : 4);
      if (inline) tags.set(tag, decodeValues(body, p + (big ? 12 : 8), type, n, le));
      else {
        const at = big ? Number(body.getBigUint64(p + 12, le)) : body.getUint32(p + 8, le);
        pending.push(bytesAt(at, total, `tag ${tag} of ${what}`).then((v) => void tags.set(tag, decodeValues(v, 0, type, n, le))));
      }
    }
    await Promise.all(pending);
    ifds.push({ offset: next, tags });
    next = big ? Number(body.getBigUint64(count * entrySize, le)) : body.getUint32(count * entrySize, le);
  }
  if (ifds.length === 0) throw new TiffFormatError('the TIFF has no image');
  return { littleEndian: le, bigTiff: big, ifds };
}

function decodeValues(v: DataView, at: number, type: number, n: number, le: boolean): TagData {
  if (type === 2) {
    let s = '';
    for (let i = 0; i < n; i++) s += String.fromCharCode(v.getUint8(at + i));
    return decodeUtf8Lenient(s);
  }
  if (type === 1 || type === 7 || type === 6) {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = v.getUint8(at + i);
    if (type !== 6) return out;
    return Float64Array.from(new Int8Array(out.buffer));
  }
  const out = new Float64Array(n);
  switch (type) {
    case 3:
      for (let i = 0; i < n; i++) out[i] = v.getUint16(at + 2 * i, le);
      break;
    case 8:
      for (let i = 0; i < n; i++) out[i] = v.getInt16(at + 2 * i, le);
      break;
    case 4:
    case 13:
      for (let i = 0; i < n; i++) out[i] = v.getUint32(at + 4 * i, le);
      break;
    case 9:
      for (let i = 0; i < n; i++) out[i] = v.getInt32(at + 4 * i, le);
      break;
    case 5:
      for (let i = 0; i < n; i++) out[i] = v.getUint32(at + 8 * i, le) / v.getUint32(at + 8 * i + 4, le);
      break;
    case 10:
      for (let i = 0; i < n; i++) out[i] = v.getInt32(at + 8 * i, le) / v.getInt32(at + 8 * i + 4, le);
      break;
    case 11:
      for (let i = 0; i < n; i++) out[i] = v.getFloat32(at + 4 * i, le);
      break;
    case 12:
      for (let i = 0; i < n; i++) out[i] = v.getFloat64(at + 8 * i, le);
      break;
    case 16:
    case 18:
      for (let i = 0; i < n; i++) out[i] = Number(v.getBigUint64(at + 8 * i, le));
      break;
    case 17:
      for (let i = 0; i < n; i++) out[i] = Number(v.getBigInt64(at + 8 * i, le));
      break;
  }
  return out;
}

/** ASCII tags are bytes; GDAL writes UTF-8 in them (band names). Fall back to Latin-1. */
function decodeUtf8Lenient(latin1: string): string {
  if (!/[\x80-\xff]/.test(latin1)) return latin1;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(latin1, (c) => c.charCodeAt(0)));
  } catch {
    return latin1;
  }
}

// ---- Tag access

export const TAG = {
  NewSubfileType: 254,
  ImageWidth: 256,
  ImageLength: 257,
  BitsPerSample: 258,
  Compression: 259,
  Photometric: 262,
  FillOrder: 266,
  StripOffsets: 273,
  SamplesPerPixel: 277,
  RowsPerStrip: 278,
  StripByteCounts: 279,
  PlanarConfiguration: 284,
  Predictor: 317,
  ColorMap: 320,
  TileWidth: 322,
  TileLength: 323,
  TileOffsets: 324,
  TileByteCounts: 325,
  ExtraSamples: 338,
  SampleFormat: 339,
  JPEGTables: 347,
  ModelPixelScale: 33550,
  ModelTiepoint: 33922,
  ModelTransformation: 34264,
  GeoKeyDirectory: 34735,
  GeoDoubleParams: 34736,
  GeoAsciiParams: 34737,
  GdalMetadata: 42112,
  GdalNoData: 42113,
  LercParameters: 50674,
} as const;

export function numbersOf(ifd: Ifd, tag: number): ArrayLike<number> | undefined {
  const v = ifd.tags.get(tag);
  return v === undefined || typeof v === 'string' ? undefined : v;
}

export function numberOf(ifd: Ifd, tag: number, fallback: number): number;
export function numberOf(ifd: Ifd, tag: number): number | undefined;
export function numberOf(ifd: Ifd, tag: number, fallback?: number): number | undefined {
  const v = numbersOf(ifd, tag);
  return v && v.length > 0 ? v[0]! : fallback;
}

export function textOf(ifd: Ifd, tag: number): string | undefined {
  const v = ifd.tags.get(tag);
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : String.fromCharCode(...(v instanceof Uint8Array ? v : []));
}

/**
 * GeoKey names by ID (GeoTIFF 1.0 spec §6.2, the names geotiff.js's `globals.geoKeyNames` uses),
 * kept here so opening a GeoTIFF does not load geotiff.js.
 */
export const GEO_KEY_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  (
    [
      [1024, 'GTModelType GTRasterType GTCitation'],
      [
        2048,
        'GeographicType GeogCitation GeogGeodeticDatum GeogPrimeMeridian GeogLinearUnits GeogLinearUnitSize GeogAngularUnits ' +
          'GeogAngularUnitSize GeogEllipsoid GeogSemiMajorAxis GeogSemiMinorAxis GeogInvFlattening GeogAzimuthUnits ' +
          'GeogPrimeMeridianLong GeogTOWGS84',
      ],
      [
        3072,
        'ProjectedCSType PCSCitation Projection ProjCoordTrans ProjLinearUnits ProjLinearUnitSize ProjStdParallel1 ' +
          'ProjStdParallel2 ProjNatOriginLong ProjNatOriginLat ProjFalseEasting ProjFalseNorthing ProjFalseOriginLong ' +
          'ProjFalseOriginLat ProjFalseOriginEasting ProjFalseOriginNorthing ProjCenterLong ProjCenterLat ProjCenterEasting ' +
          'ProjCenterNorthing ProjScaleAtNatOrigin ProjScaleAtCenter ProjAzimuthAngle ProjStraightVertPoleLong ProjRectifiedGridAngle',
      ],
      [4096, 'VerticalCSType VerticalCitation VerticalDatum VerticalUnits'],
    ] as const
  ).flatMap(([first, names]) => names.split(' ').map((n, i) => [first + i, `${n}GeoKey`])),
);

/** The GeoKeys of an IFD keyed by name, as geotiff.js's `getGeoKeys()` gives them (srs.ts reads these). */
export function geoKeysOf(ifd: Ifd): Record<string, unknown> | null {
  const dir = numbersOf(ifd, TAG.GeoKeyDirectory);
  if (!dir || dir.length < 4) return null;
  const names = GEO_KEY_NAMES;
  const out: Record<string, unknown> = {};
  for (let i = 4; i + 3 < dir.length && i <= dir[3]! * 4; i += 4) {
    const key = names[dir[i]!] ?? `GeoKey${dir[i]}`;
    const location = dir[i + 1]!;
    const count = dir[i + 2]!;
    const offset = dir[i + 3]!;
    if (!location) {
      out[key] = offset;
      continue;
    }
    const v = ifd.tags.get(location);
    if (v === undefined) continue;
    if (typeof v === 'string') out[key] = v.substring(offset, offset + count - 1);
    else {
      const part = (v as Float64Array).subarray(offset, offset + count);
      out[key] = count === 1 ? part[0] : part;
    }
  }
  return out;
}

/** What the block decoder needs to know about one image (an IFD). */
export interface TiffImageLayout {
  readonly width: number;
  readonly height: number;
  readonly tiled: boolean;
  /** Block size: the tile, or the image width x RowsPerStrip. */
  readonly blockWidth: number;
  readonly blockHeight: number;
  readonly across: number;
  readonly down: number;
  readonly samplesPerPixel: number;
  readonly bitsPerSample: number;
  /** 1 unsigned, 2 signed, 3 float, 5 complex int, 6 complex float. */
  readonly sampleFormat: number;
  /** 1 contiguous (pixel-interleaved), 2 separate planes. */
  readonly planar: 1 | 2;
  readonly compression: number;
  readonly predictor: number;
  readonly photometric: number;
  readonly fillOrder: number;
  readonly offsets: ArrayLike<number>;
  readonly byteCounts: ArrayLike<number>;
  readonly littleEndian: boolean;
  readonly jpegTables?: Uint8Array;
  readonly lercParameters?: ArrayLike<number>;
}

/**
 * The largest decoded block (tile or strip) the reader allocates.
 * Decision: 256 MiB, so that a hostile header (a 2^31 x 2^31 tile, a strip claiming 4 GiB of
 * pixels, a DEFLATE bomb behind a huge tile size) is refused before any allocation, while real
 * files (GDAL's 8 KB strips, 256-1024 tiles, COGs; a single-strip 8000 x 8000 x 4 Byte image)
 * read. Refused as an IO_ERROR, as the other hostile headers are.
 */
export const MAX_BLOCK_BYTES = 256 * 2 ** 20;

export function describeTiffImage(ifd: Ifd, littleEndian: boolean): TiffImageLayout {
  const width = numberOf(ifd, TAG.ImageWidth, 0);
  const height = numberOf(ifd, TAG.ImageLength, 0);
  if (!(width > 0 && height > 0)) throw new TiffFormatError('the image has no width or height');
  const tiled = ifd.tags.has(TAG.TileOffsets);
  const spp = numberOf(ifd, TAG.SamplesPerPixel, 1);
  // SamplesPerPixel is a SHORT (TIFF 6.0): a larger or fractional count is a corrupt entry (a
  // type or offset rewritten), not 4 billion bands to allocate for.
  if (!(Number.isInteger(spp) && spp >= 1 && spp <= 65535)) throw new TiffFormatError(`bad SamplesPerPixel ${spp}`);
  const bitsList = numbersOf(ifd, TAG.BitsPerSample) ?? [1];
  const formats = numbersOf(ifd, TAG.SampleFormat) ?? [1];
  for (let i = 1; i < bitsList.length; i++)
    if (bitsList[i] !== bitsList[0]) throw new TiffUnsupportedError('bands with different sample formats or bit depths are not supported');
  for (let i = 1; i < formats.length; i++)
    if (formats[i] !== formats[0]) throw new TiffUnsupportedError('bands with different sample formats or bit depths are not supported');
  const blockWidth = tiled ? numberOf(ifd, TAG.TileWidth, 0) : width;
  const blockHeight = tiled ? numberOf(ifd, TAG.TileLength, 0) : Math.min(height, numberOf(ifd, TAG.RowsPerStrip, height) || height);
  if (!(blockWidth > 0 && blockHeight > 0)) throw new TiffFormatError('bad tile or strip size');
  if (![width, height, blockWidth, blockHeight].every(Number.isSafeInteger)) throw new TiffFormatError('bad image, tile or strip size');
  const offsets = numbersOf(ifd, tiled ? TAG.TileOffsets : TAG.StripOffsets);
  const byteCounts = numbersOf(ifd, tiled ? TAG.TileByteCounts : TAG.StripByteCounts);
  if (!offsets || !byteCounts) throw new TiffFormatError('the image has no strip or tile offsets');
  const across = Math.ceil(width / blockWidth);
  const down = Math.ceil(height / blockHeight);
  const planar = numberOf(ifd, TAG.PlanarConfiguration, 1) === 2 && spp > 1 ? 2 : 1;
  // A decoded block is one typed array: its size comes from header fields alone, so it is
  // checked before anything is allocated for it (a 2^31 x 2^31 tile, a sparse one included).
  const bits0 = bitsList[0] ?? 1;
  const wordBytes = bits0 <= 8 ? 1 : bits0 <= 16 ? 2 : bits0 <= 32 ? 4 : bits0 <= 64 ? 8 : 16;
  const decodedBytes = blockWidth * blockHeight * (planar === 2 ? 1 : spp) * wordBytes;
  if (decodedBytes > MAX_BLOCK_BYTES) {
    throw new TiffFormatError(
      `a ${tiled ? 'tile' : 'strip'} of ${blockWidth} x ${blockHeight} pixels (${decodedBytes} bytes decoded) is larger than ` +
        `the ${MAX_BLOCK_BYTES / 2 ** 20} MiB the reader decodes per block`,
    );
  }
  const blocks = across * down * (planar === 2 ? spp : 1);
  if (offsets.length < blocks) throw new TiffFormatError(`${offsets.length} block offsets for ${blocks} ${tiled ? 'tiles' : 'strips'}`);
  if (byteCounts.length < blocks)
    throw new TiffFormatError(`${byteCounts.length} block byte counts for ${blocks} ${tiled ? 'tiles' : 'strips'}`);
  const jpegTables = ifd.tags.get(TAG.JPEGTables);
  const lerc = numbersOf(ifd, TAG.LercParameters);
  return {
    width,
    height,
    tiled,
    blockWidth,
    blockHeight,
    across,
    down,
    samplesPerPixel: spp,
    bitsPerSample: bitsList[0]!,
    sampleFormat: formats[0]!,
    planar,
    compression: numberOf(ifd, TAG.Compression, 1),
    predictor: numberOf(ifd, TAG.Predictor, 1),
    photometric: numberOf(ifd, TAG.Photometric, 1),
    fillOrder: numberOf(ifd, TAG.FillOrder, 1),
    offsets,
    byteCounts,
    littleEndian,
    ...(jpegTables instanceof Uint8Array ? { jpegTables } : {}),
    ...(lerc ? { lercParameters: lerc } : {}),
  };
}

/**
 * TIFF block (tile or strip) decoding in tight loops over typed arrays:
 * - Compression: none (a typed-array view of the bytes read when byte order and alignment allow),
 *   DEFLATE / Adobe DEFLATE (node:zlib inflate on the codec threads: codec-pool.ts), LZW (TIFF flavour: MSB-first codes, early change), PackBits; JPEG, LERC
 *   and WebP through geotiff.js's decoders (`getDecoder(...).decodeBlock`), ZSTD (and LERC's
 *   additional ZSTD) through the libzstd build geotiff.js bundles (zstddec), with an output size.
 * - Every decoder is bounded by the block, not by what a hostile block declares: DEFLATE and ZSTD
 *   output is capped at the block's size, LZW and PackBits work in what their input can give,
 *   and the JPEG frame header and LERC blob header are checked against the TIFF block (and the
 *   block budget) before geotiff.js allocates what they declare.
 * - Byte order: samples of a big-endian file are swapped to the host's (little-endian) order.
 * - Predictors: 2 (horizontal differencing, per sample width, stride = samples per pixel) after
 *   the swap, and 3 (floating point, TIFF Technical Note 3: bytes regrouped most significant
 *   first, then differenced), whose output is in host order, as libtiff's `fpAcc` gives it.
 * - Sample widths that are not whole bytes (NBITS 1..31, rows padded to a byte) are unpacked
 *   MSB-first into the next byte type; 16-bit floats (half) widen to float32.
 *
 * A decoded block is one typed array of the storage type (`storageOf`) holding blockWidth x
 * blockHeight pixels of the block's samples (all samples per pixel for contiguous planes, one for
 * separate planes; complex samples as (re, im) pairs), padded blocks included.
 */
import { inflateBlock, warmCodecThreads } from './codec-pool.js';
import { MAX_BLOCK_BYTES, type TiffImageLayout } from './tiff-reader.js';
import { undoDifferenceInWasm } from '../wasm/stats.js';

export type SampleArray = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array;

type ArrayCtor = new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => SampleArray;

export interface Storage {
  readonly array: ArrayCtor & (new (length: number) => SampleArray);
  /** Numbers per sample: 2 for complex. */
  readonly parts: number;
  /** Bytes per number in the decoded block. */
  readonly size: number;
}

/** The typed array holding decoded samples of (SampleFormat, BitsPerSample); undefined if none. */
export function storageOf(format: number, bits: number): Storage | undefined {
  const s = (array: unknown, parts: number, size: number): Storage => ({ array: array as Storage['array'], parts, size });
  switch (format) {
    case 1:
      return bits <= 8 ? s(Uint8Array, 1, 1) : bits <= 16 ? s(Uint16Array, 1, 2) : bits <= 32 ? s(Uint32Array, 1, 4) : undefined;
    case 2:
      return bits === 8 ? s(Int8Array, 1, 1) : bits === 16 ? s(Int16Array, 1, 2) : bits === 32 ? s(Int32Array, 1, 4) : undefined;
    case 3:
      return bits === 16 || bits === 32 ? s(Float32Array, 1, 4) : bits === 64 ? s(Float64Array, 1, 8) : undefined;
    case 5:
      return bits === 32 ? s(Int16Array, 2, 2) : bits === 64 ? s(Int32Array, 2, 4) : undefined;
    case 6:
      return bits === 64 ? s(Float32Array, 2, 4) : bits === 128 ? s(Float64Array, 2, 8) : undefined;
    default:
      return undefined;
  }
}

/** The largest expansion of DEFLATE (output bytes per input byte; LZW and PackBits decoders name their own short data). */
const MAX_RATIO: Readonly<Record<number, number>> = { 8: 1032, 32946: 1032 };

const NATIVE_COMPRESSIONS = new Set([1, 5, 8, 32946, 32773]);
const LIBRARY_COMPRESSIONS = new Set([7, 34887, 50000, 50001]);

/** Whether a compression can be decoded (natively or through geotiff.js). */
export const compressionSupported = (c: number): boolean => NATIVE_COMPRESSIONS.has(c) || LIBRARY_COMPRESSIONS.has(c);

/**
 * A block decoder. It rejects when the block's data is corrupt or holds fewer bytes than its
 * pixels need (the caller names the block: geotiff-source.ts), as libtiff does ("Not enough data"),
 * rather than padding it with zeros. Only the rows inside the image are needed: the last strip may
 * be short.
 */
export type BlockDecoder = (raw: Uint8Array, blockIndex: number) => Promise<SampleArray>;

/**
 * A decoder for the blocks of one image. Throws (at creation) for a layout it cannot decode;
 * the caller reports that as UNSUPPORTED_INPUT.
 */
export async function createBlockDecoder(l: TiffImageLayout): Promise<BlockDecoder> {
  const storage = storageOf(l.sampleFormat, l.bitsPerSample);
  if (!storage) throw new Error(`SampleFormat ${l.sampleFormat} with BitsPerSample ${l.bitsPerSample} is not supported`);
  if (!compressionSupported(l.compression)) throw new Error(`TIFF compression ${l.compression} is not supported`);
  if (l.fillOrder !== 1) throw new Error('FillOrder 2 is not supported');
  const bits = l.bitsPerSample;
  if (l.compression === 8 || l.compression === 32946) warmCodecThreads();
  const chunkSpp = l.planar === 1 ? l.samplesPerPixel : 1;
  const bw = l.blockWidth;
  const bh = l.blockHeight;
  // Samples that fill their storage words (8, 16, 32, 64, 128 bits; 16-bit halves into 16-bit
  // words) are byte-swapped and predicted in place; other widths are bit-packed, MSB first. 24-bit
  // samples too, after libtiff's swab of byte triples in big-endian files: most significant byte
  // first in little-endian files, last in big-endian ones (how GDAL 3.6 writes and reads them).
  const half = l.sampleFormat === 3 && bits === 16;
  const wholeBytes = bits === storage.size * 8 * storage.parts || half;
  const byteSamples = !wholeBytes && bits % 8 === 0;
  const rowBytes = Math.ceil((bw * chunkSpp * bits) / 8);
  const blockBytes = rowBytes * bh;
  const numbers = bw * bh * chunkSpp * storage.parts;
  // Bytes a block must decode to: whole tiles; the rows of a strip that lie inside the image.
  const perPlane = l.across * l.down;
  const neededRows = (index: number): number => (l.tiled ? bh : Math.min(bh, l.height - Math.floor((index % perPlane) / l.across) * bh));
  const neededBytes = (index: number): number => rowBytes * neededRows(index);
  const short = (what: string, got: number, needed: number): Error =>
    new CorruptBlockError(`${what} ${got} bytes where its pixels need ${needed}: the data is cut short or corrupt`);
  const swap = !l.littleEndian && wholeBytes && bits > 8;
  // The word the byte swap and predictor 2 work on: a complex sample's parts, else the sample.
  const word = storage.parts === 2 ? bits / 16 : bits / 8;
  if (l.predictor === 2 && !(wholeBytes && [1, 2, 4, 8].includes(bits / 8)))
    throw new Error(`Predictor 2 with ${bits}-bit samples is not supported`);
  if (l.predictor === 3 && !(l.sampleFormat === 3 || l.sampleFormat === 6)) throw new Error('Predictor 3 needs floating-point samples');
  if (l.predictor !== 1 && l.predictor !== 2 && l.predictor !== 3) throw new Error(`Predictor ${l.predictor} is not supported`);

  let library: { decodeBlock(b: ArrayBuffer): ArrayBufferLike | Promise<ArrayBufferLike> } | undefined;
  /** Set when the JPEGTables tag is itself corrupt: every block of the image fails with it. */
  let tablesError: Error | undefined;
  const lercType = lercDataTypeOf(l.sampleFormat, bits);
  const lercCompression = l.lercParameters?.[1] ?? 0;
  if (l.compression === 7) {
    if (bits !== 8) throw new Error(`JPEG compression with ${bits}-bit samples is not supported`);
    if (l.jpegTables) {
      // geotiff.js parses the tables when its decoder is made, allocating for any frame header
      // in them: a tables-only stream (SOI, DQT, DHT, EOI) is checked first.
      try {
        const t = jpegFrameHeaders(l.jpegTables);
        if (t.frames.length > 0 || t.scans > 0)
          throw new CorruptBlockError('JPEG data is corrupt: it holds an image where tables only belong');
      } catch (e) {
        tablesError = new CorruptBlockError(`the JPEGTables tag does not decode: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }
  if (l.compression === 34887) {
    if (lercType === undefined)
      throw new Error(`LERC compression of SampleFormat ${l.sampleFormat} with ${bits}-bit samples is not supported`);
    if (lercCompression !== 0 && lercCompression !== 1 && lercCompression !== 2)
      throw new Error(`LERC with additional compression ${lercCompression} is not supported`);
  }
  if (l.compression === 50000 || (l.compression === 34887 && lercCompression === 2)) await zstdReady();
  if (LIBRARY_COMPRESSIONS.has(l.compression) && l.compression !== 50000) {
    // geotiff.js is loaded only for these compressions (it weighs on every CLI start otherwise).
    const { getDecoder } = await import('geotiff');
    library = await getDecoder(l.compression, {
      tileWidth: bw,
      tileHeight: bh,
      planarConfiguration: l.planar,
      bitsPerSample: new Array<number>(l.samplesPerPixel).fill(bits),
      predictor: 1,
      samplesPerPixel: l.samplesPerPixel,
      ...(l.jpegTables && !tablesError ? { JPEGTables: l.jpegTables } : {}),
      // LERC's additional DEFLATE or ZSTD is undone here (bounded), the blob handed over bare.
      // (geotiff.js needs the parameters, which a file may lack: LERC version 2.4, nothing added.)
      ...(l.compression === 34887 ? { LercParameters: [l.lercParameters?.[0] ?? 4, 0] } : {}),
    });
  }
  // What a LERC blob may be, decompressed: its values and mask with room for its headers.
  const lercCap = 2 * blockBytes + 2 ** 20;

  return async (raw, index) => {
    let bytes: Uint8Array;
    const needed = neededBytes(index);
    // No DEFLATE stream expands further than 1032:1: a block whose pixels need more than that of
    // its bytes is refused before zlib allocates an output chunk of the header-given size.
    const ratio = MAX_RATIO[l.compression];
    if (ratio !== undefined && needed > raw.length * ratio) {
      throw new CorruptBlockError(
        `${raw.length} compressed bytes cannot give the ${needed} bytes its pixels need: the data is cut short or corrupt`,
      );
    }
    switch (l.compression) {
      case 1:
        if (raw.length < needed) throw short('it holds', raw.length, needed);
        bytes = raw;
        break;
      case 8:
      case 32946:
        bytes = await inflateBlock(raw, blockBytes, true).catch((e: unknown) => {
          // zlib stops at the cap inflateBlock sets: say what it means for the block.
          if ((e as { code?: unknown }).code !== 'ERR_BUFFER_TOO_LARGE') throw e;
          throw new CorruptBlockError(`DEFLATE data inflates to more than the ${blockBytes} bytes of the block: the data is corrupt`);
        }); // raw is this decode's alone
        if (bytes.length < needed) throw short('DEFLATE gives', bytes.length, needed);
        break;
      case 5:
        bytes = lzwDecode(raw, blockBytes, needed);
        break;
      case 32773:
        bytes = packBitsDecode(raw, blockBytes, needed);
        break;
      case 50000:
        bytes = zstdBlock(raw, blockBytes + 64, needed); // slack for padding, as DEFLATE's
        break;
      default: {
        let data = raw;
        const rows = neededRows(index);
        if (l.compression === 7) {
          if (tablesError) throw tablesError;
          // geotiff.js allocates what the frame header declares: checked against the block first.
          checkJpegFrame(raw, { width: bw, height: bh, minHeight: rows, components: chunkSpp, budget: MAX_BLOCK_BYTES });
        } else if (l.compression === 34887) {
          if (lercCompression === 1) {
            // zlib allocates its output chunk up front: no larger than DEFLATE's 1032:1 allows.
            const cap = Math.min(lercCap, raw.length * 1032);
            data = await inflateBlock(raw, cap, false).catch((e: unknown) => {
              if ((e as { code?: unknown }).code !== 'ERR_BUFFER_TOO_LARGE') throw e;
              throw new CorruptBlockError(
                `LERC's DEFLATE data inflates to more than the ${cap} bytes a blob of the block may hold: the data is corrupt`,
              );
            });
          } else if (lercCompression === 2) data = zstdBlock(raw, lercCap, 0);
          checkLercBlob(data, { width: bw, height: bh, minHeight: rows, depth: chunkSpp, dataType: lercType! });
        }
        const ab = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength ? (data.buffer as ArrayBuffer) : data.slice().buffer;
        const out = await library!.decodeBlock(ab);
        if (l.compression === 34887) {
          // LERC gives host-order samples of the right type, no predictor.
          if (out.byteLength < needed) throw short('LERC gives', out.byteLength, needed);
          const arr = new storage.array(numbers);
          const src = new storage.array(out, 0, Math.min(numbers, out.byteLength / storage.size));
          (arr as Float64Array).set(src);
          return arr;
        }
        bytes = new Uint8Array(out);
        if (bytes.length < needed) throw short('it decodes to', bytes.length, needed);
      }
    }
    if (byteSamples) {
      const out = new storage.array(numbers) as Uint32Array;
      const nb = bits / 8;
      for (let i = 0, p = 0; i < numbers && p + nb <= bytes.length; i++, p += nb) {
        let v = 0;
        if (l.littleEndian) for (let j = 0; j < nb; j++) v = v * 256 + bytes[p + j]!;
        else for (let j = nb - 1; j >= 0; j--) v = v * 256 + bytes[p + j]!;
        out[i] = v;
      }
      return out;
    }
    if (!wholeBytes) {
      const out = new storage.array(numbers) as Uint8Array | Uint16Array | Uint32Array;
      unpackBits(bytes, out, bw * chunkSpp, bh, bits, rowBytes);
      return out;
    }
    // A private, aligned, full-size copy when the bytes are shared, misaligned or short.
    // (Raw bytes are viewed in place only when they are the whole buffer read: a view into a
    // merged read would keep all of it alive in the tile cache.)
    const own = l.compression !== 1 || (raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength);
    // Nor is a block kept as a view into a buffer much larger than itself: the tile cache counts
    // the block's bytes, not its buffer's (zlib's 64 KiB output chunk for a 256-byte tile held
    // 256 times what the cache counted: 175 MB of buffers under a 64 MB cache in the fuzzer).
    const oversized = bytes.buffer.byteLength > 2 * blockBytes + 4096;
    if (!own || oversized || bytes.byteOffset % storage.size !== 0 || bytes.length < blockBytes) {
      const copy = new Uint8Array(blockBytes);
      copy.set(bytes.length > blockBytes ? bytes.subarray(0, blockBytes) : bytes);
      bytes = copy;
    }
    if (l.predictor === 3) floatPredictor(bytes, bw * chunkSpp, bh, bits / 8, chunkSpp);
    else {
      if (swap) byteSwap(bytes, word, blockBytes);
      if (l.predictor === 2) horizontalPredictor(bytes, bw, bh, chunkSpp * storage.parts, word);
    }
    if (half) return halfToFloat(new Uint16Array(bytes.buffer, bytes.byteOffset, numbers));
    return new storage.array(bytes.buffer, bytes.byteOffset, numbers);
  };
}

// ---- ZSTD

/**
 * The ZSTD decoder geotiff.js itself uses (zstddec, libzstd compiled to WebAssembly), called with
 * an explicit output size. geotiff.js calls it without one: for a frame that does not declare its
 * content size (libtiff writes none) it then streams, and on corrupt data libzstd's error leaves
 * its input where it was, so that loop never ends (a hang, memory growing).
 */
let zstd: { decode(array: Uint8Array, uncompressedSize?: number): Uint8Array } | undefined;
let zstdInit: Promise<void> | undefined;

function zstdReady(): Promise<void> {
  zstdInit ??= import('zstddec').then(async ({ ZSTDDecoder }) => {
    const d = new ZSTDDecoder();
    await d.init();
    zstd = d;
  });
  return zstdInit;
}

/**
 * Decompress a ZSTD block into at most `capacity` bytes (libzstd's ZSTD_decompress into a buffer
 * of that size: more output, like corrupt data, is an error, which zstddec returns as no bytes).
 * The buffer is never larger than what the frame and block headers allow (`zstdUpperBound`),
 * and a block whose pixels need more than that is refused first.
 */
export function zstdBlock(raw: Uint8Array, capacity: number, needed: number): Uint8Array {
  const { bound } = zstdUpperBound(raw);
  if (bound < needed)
    throw new CorruptBlockError(
      `${raw.length} bytes of ZSTD data cannot give the ${needed} bytes its pixels need: the data is cut short or corrupt`,
    );
  // zstddec allocates what the frames declare (or streams what the blocks give): the headers first.
  if (bound > 2 * capacity + ZSTD_BLOCK_MAX * 8) {
    throw new CorruptBlockError(
      `ZSTD data may decompress to ${bound} bytes, more than the ${capacity} bytes of the block: the data is corrupt`,
    );
  }
  const size = Math.max(1, Math.min(capacity, bound));
  const out = zstd!.decode(raw, size);
  if (out.length < Math.max(needed, 1))
    throw new CorruptBlockError(
      `ZSTD data does not decompress into the ${size} bytes the block may hold (it gives ${out.length} of the ${needed} its pixels need): it is corrupt, cut short or larger than the block`,
    );
  return out;
}

// ---- ZSTD frame sizes

/** The largest a ZSTD block decompresses to (RFC 8878 §3.1.1.2.3, Block_Maximum_Size). */
const ZSTD_BLOCK_MAX = 128 * 1024;

/**
 * An upper bound of what a ZSTD stream (frames one after another, RFC 8878 §3.1) decompresses
 * to, from its headers alone: per frame the declared Frame_Content_Size when there is one, else
 * the sum over its blocks (Raw and RLE blocks their size, Compressed blocks at most 128 KiB).
 * `undeclared`: some frame has no Frame_Content_Size. Throws a CorruptBlockError for a stream
 * the headers show to be broken.
 */
export function zstdUpperBound(b: Uint8Array): { bound: number; undeclared: boolean } {
  const corrupt = (why: string): Error => new CorruptBlockError(`ZSTD data is corrupt: ${why}`);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let p = 0;
  let total = 0;
  let undeclared = false;
  while (p < b.length) {
    if (p + 4 > b.length) throw corrupt(`a frame cut short at byte ${p}`);
    const magic = v.getUint32(p, true);
    if (magic >>> 4 === 0x184d2a5) {
      // A skippable frame: its size, then that many bytes.
      if (p + 8 > b.length) throw corrupt(`a skippable frame cut short at byte ${p}`);
      p += 8 + v.getUint32(p + 4, true);
      continue;
    }
    if (magic !== 0xfd2fb528) throw corrupt(`no frame magic number at byte ${p}`);
    const fhd = b[p + 4];
    if (fhd === undefined) throw corrupt('a frame header cut short');
    const single = (fhd & 0x20) !== 0;
    const fcsFlag = fhd >>> 6;
    const fcsSize = fcsFlag === 0 ? (single ? 1 : 0) : 1 << fcsFlag;
    const didSize = [0, 1, 2, 4][fhd & 3]!;
    p += 5 + (single ? 0 : 1) + didSize;
    if (p + fcsSize > b.length) throw corrupt('a frame header cut short');
    let declared = -1;
    if (fcsSize === 1) declared = b[p]!;
    else if (fcsSize === 2) declared = v.getUint16(p, true) + 256;
    else if (fcsSize === 4) declared = v.getUint32(p, true);
    else if (fcsSize === 8) declared = Number(v.getBigUint64(p, true));
    p += fcsSize;
    let blocks = 0;
    for (;;) {
      if (p + 3 > b.length) throw corrupt('a block header cut short');
      const h = b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16);
      const type = (h >>> 1) & 3;
      const size = h >>> 3;
      if (type === 3) throw corrupt('a reserved block type');
      blocks += type === 2 ? ZSTD_BLOCK_MAX : size;
      p += 3 + (type === 1 ? 1 : size);
      if (h & 1) break;
    }
    if (fhd & 4) p += 4; // Content_Checksum
    // zstddec allocates what the frames declare, or streams what the blocks give: the larger counts.
    total += Math.max(declared, blocks);
    if (declared < 0) undeclared = true;
  }
  return { bound: total, undeclared };
}

// ---- Byte order and predictors

export function byteSwap(b: Uint8Array, size: number, length: number): void {
  if (size === 2) {
    for (let i = 0; i + 1 < length; i += 2) {
      const t = b[i]!;
      b[i] = b[i + 1]!;
      b[i + 1] = t;
    }
  } else if (size === 4) {
    for (let i = 0; i + 3 < length; i += 4) {
      const a = b[i]!;
      const c = b[i + 1]!;
      b[i] = b[i + 3]!;
      b[i + 1] = b[i + 2]!;
      b[i + 2] = c;
      b[i + 3] = a;
    }
  } else if (size === 8) {
    for (let i = 0; i + 7 < length; i += 8) {
      for (let j = 0; j < 4; j++) {
        const t = b[i + j]!;
        b[i + j] = b[i + 7 - j]!;
        b[i + 7 - j] = t;
      }
    }
  }
}

const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Undo predictor 2 in place: per row, each word plus the word `stride` words before it (wrapping). */
export function horizontalPredictor(b: Uint8Array, width: number, height: number, stride: number, word: number): void {
  const n = width * stride;
  // One plane of bytes: in wasm when the kernels are on (src/wasm/stats.ts), the same bytes.
  if (word === 1 && stride === 1 && undoDifferenceInWasm(b, n, height)) return;
  if (word === 1 && stride === 1 && n % 4 === 0 && b.byteOffset % 4 === 0 && HOST_LITTLE_ENDIAN) {
    // One plane of bytes whose rows are whole 32-bit words: each row's running sum taken four
    // bytes a step in 16-bit lanes (bytes 0 and 2 in one word, bytes 1 and 3 in another; a lane
    // holds at most four bytes plus the carry, under 2^16), the carry kept modulo 256.
    const w = new Int32Array(b.buffer, b.byteOffset, (n * height) >> 2);
    const perRow = n >> 2;
    for (let r = 0; r < height; r++) {
      let c = 0;
      const end = (r + 1) * perRow;
      for (let k = r * perRow; k < end; k++) {
        const x = w[k]!;
        const even = x & 0x00ff00ff; // bytes 0 and 2
        const pairs = even + ((x >>> 8) & 0x00ff00ff); // bytes 0+1 and 2+3
        const carry = Math.imul(c, 0x00010001);
        const odd = pairs + (pairs << 16) + carry; // c+b0+b1 and c+b0+b1+b2+b3
        const evenSums = even + (pairs << 16) + carry; // c+b0 and c+b0+b1+b2
        w[k] = (evenSums & 0x00ff00ff) | ((odd & 0x00ff00ff) << 8);
        c = (odd >>> 16) & 255;
      }
    }
  } else if (word === 1 && stride === 1) {
    // One plane of bytes (planar configuration 2, or one band): the running sum stays in a
    // register instead of being read back from the byte just stored (a store-to-load wait on
    // every byte), four bytes a step. The stores keep the low 8 bits, as the loop below.
    for (let r = 0; r < height; r++) {
      const base = r * n;
      const end = base + n;
      let acc = b[base]!;
      let i = base + 1;
      for (; i + 3 < end; i += 4) {
        const a0 = (acc + b[i]!) & 255;
        const a1 = (a0 + b[i + 1]!) & 255;
        const a2 = (a1 + b[i + 2]!) & 255;
        acc = (a2 + b[i + 3]!) & 255;
        b[i] = a0;
        b[i + 1] = a1;
        b[i + 2] = a2;
        b[i + 3] = acc;
      }
      for (; i < end; i++) b[i] = acc = (acc + b[i]!) & 255;
    }
  } else if (word === 1) {
    for (let r = 0; r < height; r++) {
      const base = r * n;
      for (let i = base + stride; i < base + n; i++) b[i] = b[i]! + b[i - stride]!;
    }
  } else if (word === 2) {
    const a = new Uint16Array(b.buffer, b.byteOffset, n * height);
    for (let r = 0; r < height; r++) {
      const base = r * n;
      for (let i = base + stride; i < base + n; i++) a[i] = a[i]! + a[i - stride]!;
    }
  } else if (word === 4) {
    const a = new Uint32Array(b.buffer, b.byteOffset, n * height);
    for (let r = 0; r < height; r++) {
      const base = r * n;
      for (let i = base + stride; i < base + n; i++) a[i] = a[i]! + a[i - stride]!;
    }
  } else {
    const a = new BigUint64Array(b.buffer, b.byteOffset, n * height);
    for (let r = 0; r < height; r++) {
      const base = r * n;
      for (let i = base + stride; i < base + n; i++) a[i] = BigInt.asUintN(64, a[i]! + a[i - stride]!);
    }
  }
}

/**
 * Undo predictor 3 in place: per row of `count` samples of `bps` bytes, add each byte to the one
 * `stride` bytes before it, then put byte k of sample i (stored at k x count + i, most
 * significant first) back as a host-order (little-endian) sample.
 */
export function floatPredictor(b: Uint8Array, count: number, height: number, bps: number, stride: number): void {
  if (bps === 4 && stride === 1 && count % 4 === 0 && b.byteOffset % 4 === 0) {
    floatPredictor32(new Uint32Array(b.buffer, b.byteOffset, count * height), count, height);
    return;
  }
  const rowBytes = count * bps;
  const tmp = new Uint8Array(rowBytes);
  // Whole 32-bit words per sample when the row is aligned (F32: one store per sample).
  const words = bps === 4 && b.byteOffset % 4 === 0 ? new Uint32Array(b.buffer, b.byteOffset, (rowBytes * height) >> 2) : undefined;
  for (let r = 0; r < height; r++) {
    const base = r * rowBytes;
    // Undo the byte differencing into tmp (a running sum per interleaved sample).
    if (stride === 1) {
      let acc = 0;
      for (let i = 0; i < rowBytes; i++) {
        acc = (acc + b[base + i]!) & 255;
        tmp[i] = acc;
      }
    } else {
      for (let i = 0; i < rowBytes; i++) tmp[i] = i < stride ? b[base + i]! : tmp[i - stride]! + b[base + i]!;
    }
    if (words) {
      const c2 = 2 * count;
      const c3 = 3 * count;
      const w0 = base >> 2;
      for (let i = 0; i < count; i++)
        words[w0 + i] = ((tmp[i]! << 24) | (tmp[count + i]! << 16) | (tmp[c2 + i]! << 8) | tmp[c3 + i]!) >>> 0;
    } else {
      for (let i = 0; i < count; i++) {
        const o = base + i * bps;
        for (let k = 0; k < bps; k++) b[o + bps - 1 - k] = tmp[k * count + i]!;
      }
    }
  }
}

/**
 * Predictor 3 for one-sample float32 rows of a multiple of 4 samples, four bytes at a time (SWAR,
 * on a little-endian host): the running byte sum within a word is two lane-wise shifted adds
 * (no carry between bytes), plus the previous word's last byte in every lane; then 4 x 4 byte
 * transposes put byte k of 4 samples (plane k) back into 4 samples.
 */
function floatPredictor32(words: Uint32Array, count: number, height: number): void {
  const tmp = new Uint32Array(count);
  const q = count >> 2;
  const LOW = 0x7f7f7f7f;
  const HIGH = 0x80808080;
  for (let r = 0; r < height; r++) {
    const w0 = r * count;
    let acc = 0;
    for (let i = 0; i < count; i++) {
      let x = words[w0 + i]!;
      let y = x << 8;
      x = ((x & LOW) + (y & LOW)) ^ ((x ^ y) & HIGH);
      y = x << 16;
      x = ((x & LOW) + (y & LOW)) ^ ((x ^ y) & HIGH);
      y = acc * 0x01010101;
      x = ((x & LOW) + (y & LOW)) ^ ((x ^ y) & HIGH);
      tmp[i] = x;
      acc = x >>> 24;
    }
    for (let j = 0, o = w0; j < q; j++, o += 4) {
      const p0 = tmp[j]!;
      const p1 = tmp[q + j]!;
      const p2 = tmp[2 * q + j]!;
      const p3 = tmp[3 * q + j]!;
      const a = (p3 & 0x00ff00ff) | ((p2 & 0x00ff00ff) << 8);
      const b = ((p3 >>> 8) & 0x00ff00ff) | (p2 & 0xff00ff00);
      const c = (p1 & 0x00ff00ff) | ((p0 & 0x00ff00ff) << 8);
      const d = ((p1 >>> 8) & 0x00ff00ff) | (p0 & 0xff00ff00);
      words[o] = (a & 0xffff) | (c << 16);
      words[o + 1] = (b & 0xffff) | (d << 16);
      words[o + 2] = (a >>> 16) | (c & 0xffff0000);
      words[o + 3] = (b >>> 16) | (d & 0xffff0000);
    }
  }
}

/** Unpack `bits`-bit unsigned samples, MSB first, each row starting on a byte. */
export function unpackBits(
  src: Uint8Array,
  dst: Uint8Array | Uint16Array | Uint32Array,
  perRow: number,
  rows: number,
  bits: number,
  rowBytes: number,
): void {
  if (bits === 1 || bits === 2 || bits === 4) {
    const perByte = 8 / bits;
    const max = (1 << bits) - 1;
    for (let r = 0; r < rows; r++) {
      const s = r * rowBytes;
      const d = r * perRow;
      for (let c = 0; c < perRow; c++) {
        const byte = src[s + Math.floor(c / perByte)] ?? 0;
        dst[d + c] = (byte >>> (8 - bits * (1 + (c % perByte)))) & max;
      }
    }
    return;
  }
  for (let r = 0; r < rows; r++) {
    let bit = r * rowBytes * 8;
    const d = r * perRow;
    for (let c = 0; c < perRow; c++) {
      let v = 0;
      for (let k = 0; k < bits; k++, bit++) v = v * 2 + (((src[bit >>> 3] ?? 0) >>> (7 - (bit & 7))) & 1);
      dst[d + c] = v;
    }
  }
}

/**
 * Half-float bits -> float32, for every one of the 65,536 patterns: made at the first half-float
 * block, not when the module loads (every command loads it; few read half floats).
 */
let halfFloats: Float32Array | undefined;
function halfTable(): Float32Array {
  if (halfFloats) return halfFloats;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >>> 10) & 0x1f;
    const m = h & 0x3ff;
    t[h] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m === 0 ? s * Infinity : NaN) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return (halfFloats = t);
}

function halfToFloat(h: Uint16Array): Float32Array {
  const table = halfTable();
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) out[i] = table[h[i]!]!;
  return out;
}

// ---- LZW and PackBits

/** A block's compressed data that is not a valid stream of its compression. */
export class CorruptBlockError extends Error {}

/**
 * The most bytes `n` bytes of TIFF LZW can give: at most 8n/9 codes (9 bits or more each), each
 * one string of the table, whose entries are at most 3,840 bytes long (entry k, learned k - 258
 * codes after a clear, is at most k - 256 bytes).
 */
export const lzwMaxOutput = (n: number): number => Math.floor((n * 8) / 9) * 3840;

/** The most bytes `n` bytes of PackBits can give: 128 bytes per two (a repeat header and its byte). */
export const packBitsMaxOutput = (n: number): number => Math.floor(n / 2) * 128;

/**
 * TIFF LZW (MSB-first codes of 9..12 bits, 256 clear, 257 end, early change) into at most
 * `expected` bytes. Throws a CorruptBlockError for a code the table cannot hold, or when the data
 * ends before `needed` bytes came out (libtiff: "Corrupted LZW table", "Not enough data").
 * The output grows with what the codes give (from a few times the input, doubling, never past
 * `lzwMaxOutput`), so that a small block whose header claims a huge size fails before anything
 * of that size is allocated; the block-sized result is made once the data gave what it needs.
 */
export function lzwDecode(input: Uint8Array, expected: number, needed = expected): Uint8Array {
  const n = input.length;
  let cap = Math.min(expected, Math.max(65536, n * 8), lzwMaxOutput(n) + 4096);
  let out = new Uint8Array(cap);
  const prefix = new Uint16Array(4096);
  const first = new Uint8Array(4096);
  const suffix = new Uint8Array(4096);
  const len = new Uint16Array(4096);
  for (let i = 0; i < 256; i++) {
    first[i] = i;
    suffix[i] = i;
    len[i] = 1;
  }
  const nbits = n * 8;
  let next = 258;
  let width = 9;
  let old = -1;
  let op = 0;
  let bitPos = 0;
  while (bitPos + width <= nbits && op < expected) {
    const byte = bitPos >>> 3;
    const v = (input[byte]! << 16) | ((byte + 1 < n ? input[byte + 1]! : 0) << 8) | (byte + 2 < n ? input[byte + 2]! : 0);
    const code = (v >>> (24 - (bitPos & 7) - width)) & ((1 << width) - 1);
    bitPos += width;
    if (code === 257) break;
    if (code === 256) {
      next = 258;
      width = 9;
      old = -1;
      continue;
    }
    if (op + 4096 > cap && cap < expected) {
      // Room for the longest string: double, up to the block's size.
      cap = Math.min(expected, Math.max(cap * 2, op + 4096));
      const grown = new Uint8Array(cap);
      grown.set(out.subarray(0, op));
      out = grown;
    }
    if (old === -1) {
      if (code > 255) throw new CorruptBlockError(`LZW data is corrupt: code ${code} after a clear code, at bit ${bitPos - width}`);
      out[op++] = code;
      old = code;
      continue;
    }
    if (code > next)
      throw new CorruptBlockError(`LZW data is corrupt: code ${code} is not in the table (next ${next}), at bit ${bitPos - width}`);
    if (next < 4096) {
      prefix[next] = old;
      suffix[next] = code < next ? first[code]! : first[old]!;
      first[next] = first[old]!;
      len[next] = len[old]! + 1;
      next++;
      if (next + 1 >= 1 << width && width < 12) width++;
    }
    // Write the string of `code` backwards from its last byte.
    const l = len[code]!;
    let c = code;
    for (let p = op + l - 1; p >= op; p--) {
      if (p < cap) out[p] = suffix[c]!;
      c = prefix[c]!;
    }
    op += l;
    old = code;
  }
  if (op < needed)
    throw new CorruptBlockError(`LZW data ends after ${op} bytes where the pixels need ${needed}: the data is cut short or corrupt`);
  if (out.length === expected) return out;
  // Whole blocks only from here (a last strip's rows past the image are zeros), allocated once the data has given what the pixels need.
  const whole = new Uint8Array(expected);
  whole.set(out.subarray(0, Math.min(op, cap)));
  return whole;
}

/**
 * PackBits (Apple RLE) into at most `expected` bytes; a CorruptBlockError when fewer than
 * `needed` come out. The working buffer is at most what the input can give (`packBitsMaxOutput`):
 * a small block whose header claims a huge size fails before anything of that size is allocated.
 */
export function packBitsDecode(input: Uint8Array, expected: number, needed = expected): Uint8Array {
  const size = Math.min(expected, packBitsMaxOutput(input.length));
  const out = new Uint8Array(size);
  let i = 0;
  let o = 0;
  while (i < input.length && o < size) {
    const h = input[i++]!;
    if (h < 128) {
      const count = Math.min(h + 1, size - o, input.length - i);
      out.set(input.subarray(i, i + count), o);
      i += h + 1;
      o += count;
    } else if (h > 128) {
      const count = Math.min(257 - h, size - o);
      if (i >= input.length) break; // a repeat header without its byte
      out.fill(input[i++]!, o, o + count);
      o += count;
    }
  }
  if (o < needed)
    throw new CorruptBlockError(`PackBits data ends after ${o} bytes where the pixels need ${needed}: the data is cut short or corrupt`);
  if (size === expected) return out;
  const whole = new Uint8Array(expected);
  whole.set(out.subarray(0, o));
  return whole;
}

// ---- JPEG frame headers

/** One JPEG frame header (SOFn, ITU-T T.81 §B.2.2). */
export interface JpegFrameHeader {
  /** The marker's low byte: 0xc0 (baseline) .. 0xcf. */
  readonly marker: number;
  readonly precision: number;
  /** Number of lines (0: defined later by a DNL marker). */
  readonly height: number;
  readonly width: number;
  readonly components: readonly { readonly id: number; readonly h: number; readonly v: number }[];
}

/**
 * The frame headers of a JPEG stream (or of a tables-only stream, JPEGTables), found by walking
 * the stream's markers the way geotiff.js's decoder does (segment by segment, entropy-coded data
 * up to the first marker that is neither a stuffed 0xFF00 nor a restart marker, its recovery
 * from a marker whose first 0xFF was lost included), so that every frame header it would act on
 * is seen here first. `scans`: how many SOS markers. Throws a CorruptBlockError where that
 * decoder would fail on the stream's structure.
 */
export function jpegFrameHeaders(d: Uint8Array): { frames: JpegFrameHeader[]; scans: number } {
  const corrupt = (why: string): CorruptBlockError => new CorruptBlockError(`JPEG data is corrupt: ${why}`);
  let p = 0;
  const u16 = (): number => {
    const v = ((d[p] ?? 0) << 8) | (d[p + 1] ?? 0);
    p += 2;
    return v;
  };
  const frames: JpegFrameHeader[] = [];
  let scans = 0;
  if (u16() !== 0xffd8) throw corrupt('it does not start with a start-of-image marker (SOI)');
  let m = u16();
  // Every step moves forward but a re-alignment by 3 bytes, which cannot follow itself: bounded.
  for (let steps = 0; m !== 0xffd9; steps++) {
    if (steps > 2 * d.length + 16) throw corrupt('its markers do not end');
    if (m === 0xff00) {
      // geotiff.js skips a lone 0xFF00.
    } else if ((m >= 0xffe0 && m <= 0xffef) || m === 0xfffe) {
      const len = u16();
      p += Math.max(0, Math.min(len - 2, d.length - p));
    } else if (m === 0xffdb) {
      const end = u16() + p - 2;
      while (p < end) {
        const spec = (d[p++] ?? 0) >> 4;
        if (spec === 0) p += 64;
        else if (spec === 1) p += 128;
        else throw corrupt('a quantization table (DQT) of an unknown precision');
      }
    } else if (m >= 0xffc0 && m <= 0xffcf && m !== 0xffc4 && m !== 0xffc8 && m !== 0xffcc) {
      if (m > 0xffc2) throw corrupt(`its process (marker SOF${m - 0xffc0}: lossless, hierarchical or arithmetic-coded) is not supported`);
      p += 2;
      const precision = d[p++] ?? 0;
      const height = u16();
      const width = u16();
      const n = d[p++] ?? 0;
      const components: { id: number; h: number; v: number }[] = [];
      for (let i = 0; i < n; i++, p += 3) components.push({ id: d[p] ?? 0, h: (d[p + 1] ?? 0) >> 4, v: (d[p + 1] ?? 0) & 15 });
      frames.push({ marker: m & 0xff, precision, height, width, components });
    } else if (m === 0xffc4) {
      const len = u16();
      for (let i = 2; i < len;) {
        p++;
        let sum = 0;
        for (let j = 0; j < 16; j++, p++) sum += d[p] ?? 0;
        p += sum;
        i += 17 + sum;
      }
    } else if (m === 0xffdd) {
      p += 4;
    } else if (m === 0xffda) {
      scans++;
      p += 2;
      p += 2 * (d[p++] ?? 0) + 3;
      // The entropy-coded data: up to the first 0xFF not followed by 0x00 (stuffing) or a restart marker.
      while (p < d.length) {
        const b = d[p + 1];
        if (d[p] === 0xff && b !== 0 && !(b !== undefined && b >= 0xd0 && b <= 0xd7)) break;
        p++;
      }
    } else if (m === 0xffff) {
      if (d[p] !== 0xff) p--;
    } else if (d[p - 3] === 0xff && d[p - 2]! >= 0xc0 && d[p - 2]! <= 0xfe) {
      p -= 3; // the marker's 0xFF was taken by the previous segment: read it again from there
    } else {
      throw corrupt(
        p > d.length ? 'it ends before its end-of-image marker (EOI)' : `an unknown marker 0x${m.toString(16)} at byte ${p - 2}`,
      );
    }
    m = u16();
  }
  return { frames, scans };
}

/**
 * Bytes of memory geotiff.js's JPEG decoder holds per 8 x 8 block of a frame (its coefficients, an
 * Int32Array of 64 and the object around it, then the rows of samples): its size is checked
 * against the block budget before it runs.
 */
const JPEG_BYTES_PER_BLOCK = 512;

/**
 * Check a JPEG block's frame header against the TIFF block before geotiff.js's decoder allocates
 * what the header declares: one frame (T.81 allows one per image), 8-bit baseline, extended or
 * progressive DCT, `components` components with sampling factors 1..4, `width` wide and between
 * `minHeight` and `height` lines (a last strip may hold only the rows inside the image, as libtiff
 * accepts), at least one bit of entropy-coded data per 8 x 8 block (no DCT scan codes a block in
 * less), its working set within `budget` bytes.
 */
export function checkJpegFrame(
  data: Uint8Array,
  expect: { width: number; height: number; minHeight: number; components: number; budget: number },
): void {
  const { frames, scans } = jpegFrameHeaders(data);
  const corrupt = (why: string): CorruptBlockError => new CorruptBlockError(`JPEG data is corrupt: ${why}`);
  if (frames.length === 0) throw corrupt('it has no frame header (SOF)');
  if (frames.length > 1) throw corrupt(`it has ${frames.length} frame headers (SOF) where an image has one`);
  if (scans === 0) throw corrupt('it has no scan (SOS)');
  const f = frames[0]!;
  if (f.precision !== 8) throw corrupt(`its samples are ${f.precision}-bit where the reader decodes 8-bit JPEG`);
  if (f.components.length !== expect.components)
    throw corrupt(`its frame has ${f.components.length} components where the TIFF block has ${expect.components} samples per pixel`);
  const ids = new Set<number>();
  let maxH = 0;
  let maxV = 0;
  for (const c of f.components) {
    if (!(c.h >= 1 && c.h <= 4 && c.v >= 1 && c.v <= 4))
      throw corrupt(`component ${c.id} has sampling factors ${c.h} x ${c.v} (1 to 4 each)`);
    if (ids.has(c.id)) throw corrupt(`component ${c.id} is declared twice`);
    ids.add(c.id);
    maxH = Math.max(maxH, c.h);
    maxV = Math.max(maxV, c.v);
  }
  if (f.width !== expect.width || f.height > expect.height || f.height < expect.minHeight) {
    const lines = expect.minHeight === expect.height ? `${expect.height}` : `${expect.minHeight} to ${expect.height}`;
    throw corrupt(
      `its frame is ${f.width} x ${f.height} pixels where the TIFF block is ${expect.width} pixels wide and ${lines} lines high`,
    );
  }
  // The 8 x 8 blocks geotiff.js allocates: whole MCUs of each component.
  const mcusAcross = Math.ceil(f.width / 8 / maxH);
  const mcusDown = Math.ceil(f.height / 8 / maxV);
  let blocks = 0;
  for (const c of f.components) blocks += mcusAcross * c.h * mcusDown * c.v;
  if (blocks * JPEG_BYTES_PER_BLOCK > expect.budget)
    throw corrupt(`its ${blocks} blocks of 8 x 8 samples need more than the ${expect.budget} bytes the reader decodes per block`);
  if (data.length * 8 < blocks) throw corrupt(`${data.length} bytes cannot hold the ${blocks} blocks of 8 x 8 samples of its frame`);
}

// ---- LERC blob headers

/** One LERC2 blob header (Esri's LERC format, versions 1 to 5; version 3 added the checksum, 4 the depth). */
export interface LercBlobHeader {
  readonly version: number;
  readonly height: number;
  readonly width: number;
  readonly depth: number;
  /** 0 Int8, 1 UInt8, 2 Int16, 3 UInt16, 4 Int32, 5 UInt32, 6 Float32, 7 Float64. */
  readonly dataType: number;
  readonly blobSize: number;
}

/**
 * The blob headers of a LERC block, read the way the lerc decoder geotiff.js uses walks them
 * (blob after blob while more than 10 bytes remain, each `blobSize` bytes long). Throws a
 * CorruptBlockError for a header that does not add up: an unknown identifier or version, a blob
 * size that would not move forward (the decoder would loop on it) or that passes the end.
 */
export function lercBlobHeaders(d: Uint8Array): LercBlobHeader[] {
  const corrupt = (why: string): CorruptBlockError => new CorruptBlockError(`LERC data is corrupt: ${why}`);
  const v = new DataView(d.buffer, d.byteOffset, d.byteLength);
  const blobs: LercBlobHeader[] = [];
  let p = 0;
  while (p < d.length - 10) {
    const id = String.fromCharCode(...d.subarray(p, p + 6));
    if (id.startsWith('CntZImage')) throw corrupt('LERC1 (CntZImage) blobs are not used in TIFF; LERC2 is');
    if (id !== 'Lerc2 ') throw corrupt(`no LERC2 blob identifier at byte ${p}`);
    const version = p + 10 <= d.length ? v.getInt32(p + 6, true) : -1;
    if (!(version >= 1 && version <= 5)) throw corrupt(`a LERC2 blob of version ${version} (the reader decodes versions 1 to 5)`);
    let q = p + 10 + (version >= 3 ? 4 : 0);
    const keys = 8 + (version >= 4 ? 4 : 0) + 16 + 24;
    if (q + keys > d.length) throw corrupt(`a blob header cut short at byte ${p}`);
    const height = v.getUint32(q, true);
    const width = v.getUint32(q + 4, true);
    q += 8;
    const depth = version >= 4 ? v.getUint32(q, true) : 1;
    if (version >= 4) q += 4;
    const blobSize = v.getInt32(q + 8, true);
    const dataType = v.getInt32(q + 12, true);
    q += 16 + 24;
    if (!(blobSize >= q - p && p + blobSize <= d.length))
      throw corrupt(`a blob at byte ${p} declares ${blobSize} bytes where ${q - p} to ${d.length - p} are possible`);
    blobs.push({ version, height, width, depth, dataType, blobSize });
    p += blobSize;
  }
  return blobs;
}

/**
 * Check a LERC block's blob header against the TIFF block before the lerc decoder allocates what
 * it declares: one blob (geotiff.js keeps the first only) of `width` x `height` pixels (a last strip:
 * from `minHeight`), `depth` values per pixel of the TIFF's sample type (libtiff's LERC codec writes
 * them so; another type would be read as the wrong one).
 */
export function checkLercBlob(
  data: Uint8Array,
  expect: { width: number; height: number; minHeight: number; depth: number; dataType: number },
): void {
  const corrupt = (why: string): CorruptBlockError => new CorruptBlockError(`LERC data is corrupt: ${why}`);
  const blobs = lercBlobHeaders(data);
  if (blobs.length !== 1) throw corrupt(`it holds ${blobs.length} blobs where a TIFF block holds one`);
  const b = blobs[0]!;
  if (b.width !== expect.width || b.height > expect.height || b.height < expect.minHeight) {
    const lines = expect.minHeight === expect.height ? `${expect.height}` : `${expect.minHeight} to ${expect.height}`;
    throw corrupt(
      `its blob is ${b.width} x ${b.height} pixels where the TIFF block is ${expect.width} pixels wide and ${lines} lines high`,
    );
  }
  if (b.depth !== expect.depth) throw corrupt(`its blob has ${b.depth} values per pixel where the TIFF block has ${expect.depth}`);
  if (b.dataType !== expect.dataType) {
    const name = (t: number): string => ['Int8', 'UInt8', 'Int16', 'UInt16', 'Int32', 'UInt32', 'Float32', 'Float64'][t] ?? `type ${t}`;
    throw corrupt(`its blob holds ${name(b.dataType)} values where the TIFF's samples are ${name(expect.dataType)}`);
  }
}

/** The LERC data type of a TIFF's (SampleFormat, BitsPerSample); undefined when LERC has none. */
export function lercDataTypeOf(format: number, bits: number): number | undefined {
  if (format === 1) return ({ 8: 1, 16: 3, 32: 5 } as Record<number, number>)[bits];
  if (format === 2) return ({ 8: 0, 16: 2, 32: 4 } as Record<number, number>)[bits];
  if (format === 3) return ({ 32: 6, 64: 7 } as Record<number, number>)[bits];
  return undefined;
}

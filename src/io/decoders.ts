/**
 * TIFF block (tile or strip) decoding in tight loops over typed arrays:
 * - Compression: none (a typed-array view of the bytes read when byte order and alignment allow),
 *   DEFLATE / Adobe DEFLATE (node:zlib inflate on the codec threads: codec-pool.ts), LZW (TIFF flavour: MSB-first codes, early change), PackBits; JPEG, LERC,
 *   ZSTD and WebP through geotiff.js's decoders (`getDecoder(...).decodeBlock`).
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
import type { TiffImageLayout } from './tiff-reader.js';

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
  const neededBytes = (index: number): number =>
    l.tiled ? blockBytes : rowBytes * Math.min(bh, l.height - Math.floor((index % perPlane) / l.across) * bh);
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
  if (LIBRARY_COMPRESSIONS.has(l.compression)) {
    // geotiff.js is loaded only for these compressions (it weighs on every CLI start otherwise).
    const { getDecoder } = await import('geotiff');
    library = await getDecoder(l.compression, {
      tileWidth: bw,
      tileHeight: bh,
      planarConfiguration: l.planar,
      bitsPerSample: new Array<number>(l.samplesPerPixel).fill(bits),
      predictor: 1,
      samplesPerPixel: l.samplesPerPixel,
      ...(l.jpegTables ? { JPEGTables: l.jpegTables } : {}),
      ...(l.lercParameters ? { LercParameters: Array.from(l.lercParameters) } : {}),
    });
  }

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
      default: {
        if (l.compression === 50000) {
          // geotiff.js's ZSTD decoder (zstddec) allocates what the frames declare, or streams
          // what the blocks give: a 32 KB tile of RLE blocks gives 1 GiB. Bounded from the headers first.
          const { bound } = zstdUpperBound(raw);
          if (bound > 2 * blockBytes + ZSTD_BLOCK_MAX * 8) {
            throw new CorruptBlockError(
              `ZSTD data may decompress to ${bound} bytes, more than the ${blockBytes} bytes of the block: the data is corrupt`,
            );
          }
        }
        const ab = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength ? (raw.buffer as ArrayBuffer) : raw.slice().buffer;
        const out = await library!.decodeBlock(ab);
        if (l.compression === 34887) {
          // LERC gives host-order samples of the right type, no predictor.
          const arr = new storage.array(numbers);
          const src = new storage.array(out, 0, Math.min(numbers, out.byteLength / storage.size));
          (arr as Float64Array).set(src);
          return arr;
        }
        bytes = new Uint8Array(out);
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
    if (!own || bytes.byteOffset % storage.size !== 0 || bytes.length < blockBytes) {
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

/** Undo predictor 2 in place: per row, each word plus the word `stride` words before it (wrapping). */
export function horizontalPredictor(b: Uint8Array, width: number, height: number, stride: number, word: number): void {
  const n = width * stride;
  if (word === 1) {
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

const HALF = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >>> 10) & 0x1f;
    const m = h & 0x3ff;
    t[h] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m === 0 ? s * Infinity : NaN) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return t;
})();

function halfToFloat(h: Uint16Array): Float32Array {
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) out[i] = HALF[h[i]!]!;
  return out;
}

// ---- LZW and PackBits

/** A block's compressed data that is not a valid stream of its compression. */
export class CorruptBlockError extends Error {}

/**
 * TIFF LZW (MSB-first codes of 9..12 bits, 256 clear, 257 end, early change) into `expected`
 * bytes. Throws a CorruptBlockError for a code the table cannot hold, or when the data ends
 * before `needed` bytes came out (libtiff: "Corrupted LZW table", "Not enough data").
 */
export function lzwDecode(input: Uint8Array, expected: number, needed = expected): Uint8Array {
  const out = new Uint8Array(expected);
  const prefix = new Uint16Array(4096);
  const first = new Uint8Array(4096);
  const suffix = new Uint8Array(4096);
  const len = new Uint16Array(4096);
  for (let i = 0; i < 256; i++) {
    first[i] = i;
    suffix[i] = i;
    len[i] = 1;
  }
  const n = input.length;
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
      if (p < expected) out[p] = suffix[c]!;
      c = prefix[c]!;
    }
    op += l;
    old = code;
  }
  if (op < needed)
    throw new CorruptBlockError(`LZW data ends after ${op} bytes where the pixels need ${needed}: the data is cut short or corrupt`);
  return out;
}

/** PackBits (Apple RLE) into `expected` bytes; a CorruptBlockError when fewer than `needed` come out. */
export function packBitsDecode(input: Uint8Array, expected: number, needed = expected): Uint8Array {
  const out = new Uint8Array(expected);
  let i = 0;
  let o = 0;
  while (i < input.length && o < expected) {
    const h = input[i++]!;
    if (h < 128) {
      const count = Math.min(h + 1, expected - o, input.length - i);
      out.set(input.subarray(i, i + count), o);
      i += h + 1;
      o += count;
    } else if (h > 128) {
      const count = Math.min(257 - h, expected - o);
      if (i >= input.length) break; // a repeat header without its byte
      out.fill(input[i++]!, o, o + count);
      o += count;
    }
  }
  if (o < needed)
    throw new CorruptBlockError(`PackBits data ends after ${o} bytes where the pixels need ${needed}: the data is cut short or corrupt`);
  return out;
}

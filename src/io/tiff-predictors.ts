/**
 * TIFF predictors and bit packing, one copy for every TIFF writer (block bytes before DEFLATE):
 * - predictor 2 (horizontal differencing, TIFF 6.0 section 14), with a four-bytes-at-a-time path
 *   for 8-bit samples;
 * - predictor 3 (floating point, TIFF Technical Note 3: libtiff's `fpDiff`);
 * - unsigned samples packed in 1 to 31 bits MSB-first (U1/U2/U4, NBITS), rows starting on a byte;
 * - the 1-bit transparency mask of GDAL's internal mask.
 * All work in place on a block or return a fresh buffer; none allocates per pixel.
 */
import type { Plane } from '../core/pixel-type.js';

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
        (mask[i] ? 128 : 0) |
        (mask[i + 1] ? 64 : 0) |
        (mask[i + 2] ? 32 : 0) |
        (mask[i + 3] ? 16 : 0) |
        (mask[i + 4] ? 8 : 0) |
        (mask[i + 5] ? 4 : 0) |
        (mask[i + 6] ? 2 : 0) |
        (mask[i + 7] ? 1 : 0);
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
export function horizontalDifference(p: Plane, width: number, rows: number): void {
  if (p instanceof Uint8Array && width % 4 === 0 && p.byteOffset % 4 === 0) {
    const w = new Int32Array(p.buffer, p.byteOffset, (width * rows) >> 2);
    differenceInto(w, w, width >> 2, rows);
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
 * Predictor 2 on bytes, four at a time (SWAR, little-endian host), from `src` into `dst` (the same
 * array for in place): each word minus the word of the bytes one to the left,
 * `(x | H) - (y & ~H) ^ ((x ^ ~y) & H)` subtracting lane by lane without borrows (H = the lanes'
 * top bits). `words` words per row.
 */
export function differenceInto(src: Int32Array, dst: Int32Array, words: number, rows: number): void {
  const H = 0x80808080 | 0;
  for (let r = 0; r < rows; r++) {
    let carry = 0; // the previous word's top byte, as the next word's lowest left neighbour
    for (let i = r * words, end = i + words; i < end; i++) {
      const x = src[i]!;
      const y = (x << 8) | carry;
      carry = x >>> 24;
      dst[i] = ((x | H) - (y & ~H)) ^ ((x ^ ~y) & H);
    }
  }
}

/** Predictor 3 (TIFF Technical Note 3): bytes regrouped most significant first, then differenced. */
export function floatingPointDifference(bytes: Uint8Array, width: number, rows: number, bps: number): void {
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

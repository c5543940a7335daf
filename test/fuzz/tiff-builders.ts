/**
 * TIFF mutation and hostile-header tools for the GeoTIFF reader fuzzer (geotiff.test.ts):
 * - `tiffEntries` walks every IFD of a classic or BigTIFF file of either byte order and lists
 *   each entry with the byte positions of its fields, so a mutation can rewrite an entry count,
 *   a field type, a value count, a value offset or one value of any tag;
 * - `hostileTiff` writes a small classic TIFF whose tags are whatever a test says (2^31-pixel
 *   dimensions, offsets past the end, 4 GB byte counts, a tile count that disagrees with the
 *   size, an IFD chain that loops);
 * - `deflateBomb` / `lzwBomb` build compressed blocks that inflate to gigabytes from a few KB.
 */
import { constants as zlibConstants, deflateRawSync } from 'node:zlib';
import { resolve } from 'node:path';
import { readdirSync } from 'node:fs';

export const FUZZ_TIFF_DIR = resolve(import.meta.dirname, 'tiffs');
export const GOLDEN_DIR = resolve(import.meta.dirname, '../../golden/data');

/** The seed TIFFs: the ten made by make-tiffs.py plus the small bundled DEM (49 KB). */
export function seedTiffs(): string[] {
  const own = readdirSync(FUZZ_TIFF_DIR)
    .filter((f) => f.endsWith('.tif'))
    .sort()
    .map((f) => resolve(FUZZ_TIFF_DIR, f));
  return [...own, resolve(GOLDEN_DIR, 'olinda_dem_utm25s.tif')];
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

/** One IFD entry and where its fields sit in the file. */
export interface EntrySlot {
  readonly ifd: number;
  /** Byte position of the IFD's entry count. */
  readonly ifdAt: number;
  /** Byte position of the entry (its tag field). */
  readonly at: number;
  readonly tag: number;
  readonly type: number;
  readonly count: number;
  /** Where the values are: inside the entry, or at the offset it holds (may be past the end). */
  readonly valuesAt: number;
  readonly valueSize: number;
}

export interface TiffLayout {
  readonly le: boolean;
  readonly big: boolean;
  /** Byte positions of each IFD's entry count, and of the next-IFD pointer that follows its entries. */
  readonly ifds: readonly { at: number; nextAt: number }[];
  readonly entries: readonly EntrySlot[];
}

/** Walk the IFDs of a well-formed TIFF (at most 64, stopping at anything out of range). */
export function tiffEntries(b: Uint8Array): TiffLayout {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const le = b[0] === 0x49;
  if (b.length < 16) return { le, big: false, ifds: [], entries: [] };
  const big = v.getUint16(2, le) === 43;
  const off = (p: number): number => (big ? Number(v.getBigUint64(p, le)) : v.getUint32(p, le));
  const ifds: { at: number; nextAt: number }[] = [];
  const entries: EntrySlot[] = [];
  let p = off(big ? 8 : 4);
  const seen = new Set<number>();
  while (p !== 0 && p + (big ? 8 : 2) <= b.length && !seen.has(p) && ifds.length < 64) {
    seen.add(p);
    const n = big ? Number(v.getBigUint64(p, le)) : v.getUint16(p, le);
    const es = big ? 20 : 12;
    const first = p + (big ? 8 : 2);
    const nextAt = first + n * es;
    if (nextAt + (big ? 8 : 4) > b.length) break;
    for (let i = 0; i < n; i++) {
      const e = first + i * es;
      const type = v.getUint16(e + 2, le);
      const count = big ? Number(v.getBigUint64(e + 4, le)) : v.getUint32(e + 4, le);
      const valueSize = TYPE_SIZE[type] ?? 1;
      const field = e + (big ? 12 : 8);
      const valuesAt = valueSize * count <= (big ? 8 : 4) ? field : off(field);
      entries.push({ ifd: ifds.length, ifdAt: p, at: e, tag: v.getUint16(e, le), type, count, valuesAt, valueSize });
    }
    ifds.push({ at: p, nextAt });
    p = off(nextAt);
  }
  return { le, big, ifds, entries };
}

/** Write an unsigned number of `size` bytes (1, 2, 4, 8) at `at`, if it fits in the file. */
export function writeUint(b: Uint8Array, at: number, size: number, value: number, le: boolean): void {
  if (at < 0 || at + size > b.length) return;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const x = Math.max(0, Math.floor(value));
  if (size === 1) v.setUint8(at, x & 0xff);
  else if (size === 2) v.setUint16(at, x & 0xffff, le);
  else if (size === 4) v.setUint32(at, x % 2 ** 32, le);
  else v.setBigUint64(at, BigInt(x), le);
}

/** A field mutation: which entry (index modulo the entry count, or among those of `tag`), which field, what value. */
export interface FieldMutation {
  readonly entry: number;
  readonly field: 'count' | 'type' | 'offset' | 'value' | 'ifdCount' | 'next';
  /** For `value`: which value of the entry (modulo its count). */
  readonly index: number;
  readonly value: number;
  /** Aim at an entry of this tag when the file has one (then `entry` picks among them). */
  readonly tag?: number;
}

/** Apply one field mutation in place (nothing when the file has no entry). */
export function mutateField(b: Uint8Array, m: FieldMutation): void {
  const t = tiffEntries(b);
  if (t.entries.length === 0) return;
  const ofTag = m.tag === undefined ? [] : t.entries.filter((x) => x.tag === m.tag);
  const pool = ofTag.length > 0 ? ofTag : t.entries;
  const e = pool[m.entry % pool.length]!;
  const big = t.big;
  switch (m.field) {
    case 'ifdCount':
      return writeUint(b, e.ifdAt, big ? 8 : 2, m.value, t.le);
    case 'next': {
      const ifd = t.ifds[e.ifd]!;
      // A loop back to an IFD (this one or an earlier), or any other value.
      const target = m.value < 64 ? t.ifds[m.value % (e.ifd + 1)]!.at : m.value;
      return writeUint(b, ifd.nextAt, big ? 8 : 4, target, t.le);
    }
    case 'type':
      return writeUint(b, e.at + 2, 2, m.value, t.le);
    case 'count':
      return writeUint(b, e.at + 4, big ? 8 : 4, m.value, t.le);
    case 'offset':
      return writeUint(b, e.at + (big ? 12 : 8), big ? 8 : 4, m.value, t.le);
    case 'value': {
      const i = e.count > 0 ? m.index % e.count : 0;
      const size = e.valueSize === 1 || e.valueSize === 2 || e.valueSize === 4 || e.valueSize === 8 ? e.valueSize : 4;
      return writeUint(b, e.valuesAt + i * size, size, m.value, t.le);
    }
  }
}

/** Tags whose values the fuzzer aims at most (the layout and the georeferencing). */
export const INTERESTING_TAGS = [
  256, 257, 258, 259, 273, 277, 278, 279, 284, 317, 322, 323, 324, 325, 339, 338, 254, 262, 34735, 33550, 33922,
];

/**
 * Numbers a hostile header likes: limits of each width, powers of two, the file size around,
 * and the codes of every compression, predictor and sample format the reader knows (so a
 * mutant reaches each decoder, geotiff.js's JPEG, LERC, ZSTD and WebP included).
 */
export function interestingNumbers(fileSize: number): number[] {
  return [
    ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 64, 128, 255, 256, 65535, 65536],
    ...[32773, 32946, 34887, 50000, 50001],
    ...[2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, fileSize - 1, fileSize, fileSize + 1, 2 ** 40],
  ];
}

// ---- Hand-made hostile files

export type HostileTag = readonly [tag: number, type: 3 | 4 | 7 | 16, values: readonly number[]];

/**
 * A classic little-endian TIFF (or BigTIFF) of one or more IFDs with exactly the tags given
 * (sorted here), out-of-line values after the IFD, then `data` (the blocks), whose position
 * `dataAt` the tags may use through the `DATA` placeholder value -1. `next` sets each IFD's
 * next-IFD pointer (an index into the IFDs, or a raw offset with `{ raw }`); by default IFDs chain.
 */
export function hostileTiff(
  ifds: readonly (readonly HostileTag[])[],
  data: Uint8Array = new Uint8Array(0),
  options: { next?: readonly (number | { raw: number } | null)[]; big?: boolean } = {},
): Uint8Array {
  const big = options.big ?? false;
  const es = big ? 20 : 12;
  const inline = big ? 8 : 4;
  const size = (type: number): number => (type === 7 ? 1 : type === 3 ? 2 : type === 4 ? 4 : 8);
  let cursor = big ? 16 : 8;
  const placed = ifds.map((tags) => {
    const at = cursor;
    const sorted = [...tags].sort((a, b) => a[0] - b[0]);
    cursor = at + (big ? 8 : 2) + sorted.length * es + (big ? 8 : 4);
    const outOfLine = sorted.map(([, type, values]) => {
      const bytes = values.length * size(type);
      if (bytes <= inline) return -1;
      const p = cursor;
      cursor += bytes + (bytes % 2);
      return p;
    });
    return { at, sorted, outOfLine };
  });
  const dataAt = cursor;
  const out = new Uint8Array(cursor + data.length);
  const v = new DataView(out.buffer);
  out.set([0x49, 0x49]);
  if (big) {
    v.setUint16(2, 43, true);
    v.setUint16(4, 8, true);
    v.setBigUint64(8, BigInt(placed[0]!.at), true);
  } else {
    v.setUint16(2, 42, true);
    v.setUint32(4, placed[0]!.at, true);
  }
  const put = (p: number, type: number, x: number): void => {
    const value = x === -1 ? dataAt : x;
    if (type === 7) v.setUint8(p, value);
    else if (type === 3) v.setUint16(p, value, true);
    else if (type === 4) v.setUint32(p, value % 2 ** 32, true);
    else v.setBigUint64(p, BigInt(value), true);
  };
  placed.forEach(({ at, sorted, outOfLine }, k) => {
    if (big) v.setBigUint64(at, BigInt(sorted.length), true);
    else v.setUint16(at, sorted.length, true);
    sorted.forEach(([tag, type, values], i) => {
      const e = at + (big ? 8 : 2) + i * es;
      v.setUint16(e, tag, true);
      v.setUint16(e + 2, type, true);
      if (big) v.setBigUint64(e + 4, BigInt(values.length), true);
      else v.setUint32(e + 4, values.length, true);
      const field = e + (big ? 12 : 8);
      const target = outOfLine[i]!;
      if (target !== -1) {
        if (big) v.setBigUint64(field, BigInt(target), true);
        else v.setUint32(field, target, true);
      }
      values.forEach((x, j) => put((target === -1 ? field : target) + j * size(type), type, x));
    });
    const nextAt = at + (big ? 8 : 2) + sorted.length * es;
    const n = options.next?.[k];
    const next = n === undefined ? (placed[k + 1]?.at ?? 0) : n === null ? 0 : typeof n === 'number' ? placed[n]!.at : n.raw;
    if (big) v.setBigUint64(nextAt, BigInt(next), true);
    else v.setUint32(nextAt, next % 2 ** 32, true);
  });
  out.set(data, dataAt);
  return out;
}

/** The placeholder for "where the data starts" in `hostileTiff` tag values. */
export const DATA = -1;

/** The tags of a one-band 8-bit image of `width` x `height` in tiles (or strips) of `bw` x `bh`. */
export function imageTags(o: {
  width: number;
  height: number;
  bw: number;
  bh: number;
  tiled: boolean;
  compression?: number;
  offsets: readonly number[];
  counts: readonly number[];
  bits?: number;
  spp?: number;
  type?: 3 | 4 | 16;
}): HostileTag[] {
  const t = o.type ?? 4;
  const tags: HostileTag[] = [
    [256, 4, [o.width]],
    [257, 4, [o.height]],
    [258, 3, new Array<number>(o.spp ?? 1).fill(o.bits ?? 8)],
    [259, 3, [o.compression ?? 1]],
    [262, 3, [1]],
    [277, 3, [o.spp ?? 1]],
    [284, 3, [1]],
  ];
  if (o.tiled) tags.push([322, 4, [o.bw]], [323, 4, [o.bh]], [324, t, o.offsets], [325, t, o.counts]);
  else tags.push([273, t, o.offsets], [278, 4, [o.bh]], [279, t, o.counts]);
  return tags;
}

/**
 * A zlib stream of at least `bytes` zero bytes, without ever holding them: 1 MiB of zeros
 * compressed with a full flush (byte-aligned, no back-reference across it) is repeated, then a
 * final empty block and the Adler-32 of the zeros. About 1 KB per MiB: 4 GiB in 4 MB.
 */
export function deflateBomb(bytes: number): Uint8Array {
  const MIB = 1 << 20;
  const unit = deflateRawSync(Buffer.alloc(MIB), { level: 9, finishFlush: zlibConstants.Z_FULL_FLUSH });
  const n = Math.max(1, Math.ceil(bytes / MIB));
  const out = new Uint8Array(2 + n * unit.length + 2 + 4);
  out.set([0x78, 0xda]);
  for (let i = 0; i < n; i++) out.set(unit, 2 + i * unit.length);
  let p = 2 + n * unit.length;
  out.set([0x03, 0x00], p); // a final fixed-Huffman block holding nothing
  p += 2;
  const adler = (((n * MIB) % 65521) * 65536 + 1) >>> 0; // s1 = 1, s2 = the length mod 65521
  new DataView(out.buffer).setUint32(p, adler, false);
  return out;
}

/**
 * An LZW stream (TIFF flavour, 12-bit codes after the table fills) that would give about
 * `bytes` bytes: a clear code, then the ever longer runs of zeros the table learns, then the
 * longest string (code 4095) repeated. 12-bit codes of up to ~3,800 bytes each: ~10 MB per KB.
 */
export function lzwBomb(bytes: number): Uint8Array {
  const codes: number[] = [256, 0];
  let next = 258;
  let len = 1;
  let out = 1;
  // Code k (258..) is k - 256 zeros long once learned: emit the newest code each time.
  while (next < 4094) {
    codes.push(next);
    out += len + 1;
    len++;
    next++;
  }
  const longest = next - 1;
  while (out < bytes) {
    codes.push(longest);
    out += longest - 256;
  }
  codes.push(257);
  return packVariable(codes);
}

/** Pack LZW codes MSB first with TIFF's widths (9 bits, 10 from code 510 on, 11 from 1022, 12 from 2046). */
function packVariable(codes: readonly number[]): Uint8Array {
  const out: number[] = [];
  let acc = 0;
  let nbits = 0;
  let next = 258;
  let width = 9;
  let afterClear = true;
  for (const c of codes) {
    acc = (acc << width) | c;
    nbits += width;
    while (nbits >= 8) {
      out.push((acc >>> (nbits - 8)) & 0xff);
      nbits -= 8;
      acc &= (1 << nbits) - 1;
    }
    if (c === 256) {
      next = 258;
      width = 9;
      afterClear = true;
      continue;
    }
    if (afterClear) {
      afterClear = false;
      continue;
    }
    if (next < 4096) next++;
    if (next + 1 >= 1 << width && width < 12) width++;
  }
  if (nbits > 0) out.push((acc << (8 - nbits)) & 0xff);
  return Uint8Array.from(out);
}

/**
 * A ZSTD frame of RLE blocks (RFC 8878: 4 bytes give up to 128 KiB) of exactly `bytes` zeros, its
 * Frame_Content_Size declared (or left out, so that a decoder streams): 1 GiB in 32 KB.
 */
export function zstdBomb(bytes: number, declare = true): Uint8Array {
  const B = 128 * 1024;
  const n = Math.max(1, Math.ceil(bytes / B));
  const head = declare ? 13 : 6; // magic, descriptor, then the content size or the window descriptor
  const out = new Uint8Array(head + n * 4);
  const v = new DataView(out.buffer);
  v.setUint32(0, 0xfd2fb528, true);
  // Frame header: 8-byte content size and single segment, or no content size and a window of 128 KiB.
  out[4] = declare ? 0xe0 : 0x00;
  if (declare) v.setBigUint64(5, BigInt(bytes), true);
  else out[5] = 0x38; // Window_Descriptor: exponent 7 (2^17)
  for (let i = 0; i < n; i++) {
    const last = i === n - 1;
    const h = (last ? 1 : 0) | (1 << 1) | ((last ? bytes - (n - 1) * B : B) << 3); // last flag, RLE, size
    const p = head + i * 4;
    out[p] = h & 255;
    out[p + 1] = (h >>> 8) & 255;
    out[p + 2] = (h >>> 16) & 255;
    out[p + 3] = 0;
  }
  return out;
}

/**
 * A baseline JPEG stream (ITU-T T.81) whose every 8 x 8 block is flat mid-grey (128): one
 * quantization table, one DC and one AC Huffman table each of a single 1-bit code (DC difference
 * 0, end of block), then two zero bits per block. `frame` says what the SOF0 header declares
 * (dimensions, precision, components and their sampling factors) whatever the data; `extraSof`
 * adds a second frame header; `tablesOnly` leaves out the frame and the scan (a JPEGTables stream).
 */
export function jpegStream(
  o: {
    width?: number;
    height?: number;
    precision?: number;
    components?: readonly (readonly [h: number, v: number])[];
    blocks?: number;
    extraSof?: boolean;
    tablesOnly?: boolean;
  } = {},
): Uint8Array {
  const w = o.width ?? 16;
  const h = o.height ?? 16;
  const comps = o.components ?? [[1, 1]];
  const out: number[] = [0xff, 0xd8];
  const seg = (marker: number, body: readonly number[]): void => {
    out.push(0xff, marker, (body.length + 2) >> 8, (body.length + 2) & 255, ...body);
  };
  seg(0xdb, [0, ...new Array<number>(64).fill(1)]);
  seg(0xc4, [0x00, 1, ...new Array<number>(15).fill(0), 0]); // DC table 0: one code '0' -> category 0
  seg(0xc4, [0x10, 1, ...new Array<number>(15).fill(0), 0]); // AC table 0: one code '0' -> EOB
  if (o.tablesOnly !== true || o.extraSof === true) {
    const sof = [o.precision ?? 8, h >> 8, h & 255, w >> 8, w & 255, comps.length];
    comps.forEach(([ch, cv], i) => sof.push(i + 1, (ch << 4) | cv, 0));
    seg(0xc0, sof);
    if (o.extraSof === true) seg(0xc0, sof);
  }
  if (o.tablesOnly !== true) {
    const sos = [comps.length];
    comps.forEach((_, i) => sos.push(i + 1, 0x00));
    seg(0xda, [...sos, 0, 63, 0]);
    const hMax = Math.max(...comps.map((c) => c[0]));
    const vMax = Math.max(...comps.map((c) => c[1]));
    const perMcu = comps.reduce((a, [ch, cv]) => a + ch * cv, 0);
    const blocks = o.blocks ?? Math.ceil(w / 8 / hMax) * Math.ceil(h / 8 / vMax) * perMcu;
    for (let i = 0; i < Math.ceil((2 * blocks) / 8); i++) out.push(0);
  }
  out.push(0xff, 0xd9);
  return Uint8Array.from(out);
}

/**
 * A LERC2 blob (version 2: no checksum, one value per pixel) of a constant surface: every pixel
 * `value`, all valid. `blobSize` overrides the size its header declares.
 */
export function lercBlob(o: { width: number; height: number; dataType: number; value: number; blobSize?: number }): Uint8Array {
  const b = new Uint8Array(6 + 4 + 8 + 16 + 24 + 4);
  const v = new DataView(b.buffer);
  b.set([...'Lerc2 '].map((c) => c.charCodeAt(0)));
  v.setInt32(6, 2, true); // version
  v.setUint32(10, o.height, true);
  v.setUint32(14, o.width, true);
  v.setUint32(18, o.width * o.height, true); // numValidPixel
  v.setInt32(22, 8, true); // microBlockSize
  v.setInt32(26, o.blobSize ?? b.length, true);
  v.setInt32(30, o.dataType, true);
  v.setFloat64(34, 0, true); // maxZError
  v.setFloat64(42, o.value, true); // zMin
  v.setFloat64(50, o.value, true); // zMax: a constant surface
  // Then the mask's byte count, 0: all pixels valid.
  return b;
}

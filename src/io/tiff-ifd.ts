/**
 * TIFF image file directories and the tags rasterflow writes (one copy for every TIFF writer):
 * tag values and their byte encoding (classic and BigTIFF field types), an IFD placed at a byte
 * offset with its out-of-line values 8-byte aligned, the file header, a small whole-file
 * assembler (`writeClassicTiff`), and the content of the GeoTIFF tags (SampleFormat, ColorMap,
 * GeoKeyDirectory).
 *
 * Layout of an IFD at offset `at`: entry count, entries sorted by tag, next-IFD offset, then the
 * values longer than an entry's inline field, each starting on an 8-byte boundary. Classic TIFF:
 * 2-byte count, 12-byte entries, 4-byte offsets; BigTIFF: 8-byte count, 20-byte entries, 8-byte
 * offsets. Reference: TIFF 6.0, sections 2 (structure) and 15 (tiles); the BigTIFF design notes.
 */
import { EngineError } from '../core/errors.js';
import type { Colormap, RasterInfo } from '../core/pixel-block.js';
import type { PixelType } from '../core/pixel-type.js';
import { geoKeysFromSpatialReference } from './srs.js';

export type TagValue =
  | { readonly type: 'SHORT' | 'LONG' | 'LONG8' | 'DOUBLE'; readonly values: readonly number[] }
  | { readonly type: 'ASCII'; readonly value: string };

type TypeName = 'SHORT' | 'LONG' | 'LONG8' | 'DOUBLE' | 'ASCII';
const TYPE_CODE: Readonly<Record<TypeName, number>> = { ASCII: 2, SHORT: 3, LONG: 4, DOUBLE: 12, LONG8: 16 };
const TYPE_SIZE: Readonly<Record<TypeName, number>> = { ASCII: 1, SHORT: 2, LONG: 4, DOUBLE: 8, LONG8: 8 };

/** The largest offset of a classic TIFF. */
export const MAX_CLASSIC = 0xffffffff;

const align8 = (n: number): number => (n + 7) & ~7;

/** One encoded IFD entry. */
export interface Entry {
  readonly tag: number;
  readonly type: TypeName;
  count: number;
  bytes: Uint8Array;
  /** Bytes reserved for the value (>= bytes.length), for values filled in at the end. */
  readonly room: number;
}

export function entryOf(tag: number, v: TagValue, room = 0): Entry {
  if (v.type === 'ASCII') {
    const text = new TextEncoder().encode(v.value);
    const bytes = new Uint8Array(text.length + 1); // NUL-terminated
    bytes.set(text);
    return { tag, type: 'ASCII', count: bytes.length, bytes, room: Math.max(room, bytes.length) };
  }
  const bytes = numberBytes(v.type, v.values);
  return { tag, type: v.type, count: v.values.length, bytes, room: Math.max(room, bytes.length) };
}

/** Little-endian bytes of numeric values of one field type. */
export function numberBytes(type: Exclude<TypeName, 'ASCII'>, values: ArrayLike<number>): Uint8Array {
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

/** One IFD placed at a byte offset: where each entry and out-of-line value sits. */
export class PlacedIfd {
  readonly entries: Entry[];
  readonly entryAt = new Map<number, number>();
  readonly valueAt = new Map<number, number>();
  readonly nextAt: number;
  /** The first byte after the IFD and its values (8-byte aligned). */
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

/** Bytes of the file header before the first IFD. */
const headerSize = (big: boolean): number => (big ? 16 : 8);

/** Write the little-endian header ("II", 42 or BigTIFF 43) pointing at the first IFD. */
export function writeHeader(out: Uint8Array, big: boolean, firstIfd: number): void {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  out[0] = 0x49; // "II": little-endian
  out[1] = 0x49;
  if (big) {
    view.setUint16(2, 43, true);
    view.setUint16(4, 8, true); // bytes per offset
    view.setUint16(6, 0, true);
    view.setBigUint64(8, BigInt(firstIfd), true);
  } else {
    view.setUint16(2, 42, true);
    view.setUint32(4, firstIfd, true);
  }
}

/**
 * Place IFDs one after the other from the end of the header; the first byte after the last.
 * Every IFD and tag value then sits before the pixels, as in a COG.
 */
export function placeIfds(ifds: readonly ReadonlyMap<number, Entry>[], big: boolean): { placed: PlacedIfd[]; end: number } {
  let cursor = headerSize(big);
  const placed = ifds.map((entries) => {
    const p = new PlacedIfd(entries, cursor, big);
    cursor = p.end;
    return p;
  });
  return { placed, end: cursor };
}

export interface TiffImage {
  /** Tag id -> value, without the block offset and byte-count tags (the assembler adds them). */
  readonly tags: ReadonlyMap<number, TagValue>;
  /** Encoded blocks in offset order (planar separate: band-major). */
  readonly blocks: readonly Uint8Array[];
  /** Tiles (TileOffsets/TileByteCounts) or strips (StripOffsets/StripByteCounts). */
  readonly tiled: boolean;
}

/** The tags that hold a block's offsets and byte counts. */
export const blockTags = (tiled: boolean): { offsets: number; counts: number } =>
  tiled ? { offsets: 324, counts: 325 } : { offsets: 273, counts: 279 };

/**
 * Assemble one classic TIFF file from one image, or from several chained through their next-IFD
 * offsets in the order given (the first is image 0, the main image; later ones are e.g. a
 * transparency mask or overviews). Layout: header, then for each image its IFD and its
 * out-of-line tag values, then the blocks of every image in image order.
 */
export function writeClassicTiff(images: TiffImage | readonly TiffImage[]): Uint8Array {
  const list: readonly TiffImage[] = Array.isArray(images) ? images : [images as TiffImage];
  if (list.length === 0) throw new EngineError('INTERNAL', 'writeClassicTiff: no image to write');
  const ifds = list.map((image) => {
    const { offsets, counts } = blockTags(image.tiled);
    const entries = new Map([...image.tags].map(([tag, v]) => [tag, entryOf(tag, v)]));
    entries.set(offsets, entryOf(offsets, { type: 'LONG', values: new Array<number>(image.blocks.length).fill(0) }));
    entries.set(counts, entryOf(counts, { type: 'LONG', values: image.blocks.map((b) => b.length) }));
    return entries;
  });
  return assembleTiff(
    ifds,
    list.map((image) => image.blocks),
    list.map((image) => image.tiled),
    false,
  );
}

/**
 * A whole TIFF in memory: `ifds` (each with its offsets and counts entries, of the right length)
 * placed after the header, then `blocks[i]` of IFD i in order; the offsets and counts entries
 * are filled in here. Classic TIFF over 4 GiB fails with LIMIT_EXCEEDED.
 */
export function assembleTiff(
  ifds: readonly Map<number, Entry>[],
  blocks: readonly (readonly Uint8Array[])[],
  tiled: readonly boolean[],
  big: boolean,
): Uint8Array {
  const { placed, end } = placeIfds(ifds, big);
  let cursor = end;
  const offsets = blocks.map((list) =>
    list.map((b) => {
      const at = cursor;
      cursor += b.length;
      return at;
    }),
  );
  if (!big && cursor > MAX_CLASSIC) {
    throw new EngineError('LIMIT_EXCEEDED', `the GeoTIFF would be ${cursor} bytes; files over 4 GiB (BigTIFF) are not written yet`, {
      path: 'output',
    });
  }
  const type = big ? 'LONG8' : 'LONG';
  ifds.forEach((entries, i) => {
    const t = blockTags(tiled[i]!);
    entries.get(t.offsets)!.bytes = numberBytes(type, offsets[i]!);
    entries.get(t.counts)!.bytes = numberBytes(
      type,
      blocks[i]!.map((b) => b.length),
    );
  });
  const out = new Uint8Array(cursor);
  writeHeader(out, big, placed[0]!.at);
  placed.forEach((p, i) => {
    p.serialise(out, 0, placed[i + 1]?.at ?? 0);
    blocks[i]!.forEach((b, j) => out.set(b, offsets[i]![j]));
  });
  return out;
}

// ---- The content of the GeoTIFF tags

/** TIFF SampleFormat per pixel type: 1 unsigned, 2 signed, 3 float, 6 complex float. */
export const SAMPLE_FORMAT: Readonly<Record<PixelType, number>> = {
  U1: 1,
  U2: 1,
  U4: 1,
  U8: 1,
  S8: 2,
  U16: 1,
  S16: 2,
  U32: 1,
  S32: 2,
  F32: 3,
  F64: 3,
  C64: 6,
  C128: 6,
};

/**
 * The ColorMap tag (320) of a `bits`-bit palette image: 3 x 2^bits SHORTs, reds, greens, blues,
 * each 8-bit colour scaled to 16 bits by 257 (0 -> 0, 255 -> 65535). Entries whose value is not
 * an integer pixel value of the type are left out; pixel values without an entry are black.
 */
export function colorMapTag(colormap: Colormap, bits: number): TagValue {
  const n = 2 ** bits;
  const values = new Array<number>(3 * n).fill(0);
  for (let j = 0; j < colormap.values.length; j++) {
    const v = colormap.values[j]!;
    if (!Number.isInteger(v) || v < 0 || v >= n) continue;
    for (let c = 0; c < 3; c++) values[c * n + v] = colormap.rgb[3 * j + c]! * 257;
  }
  return { type: 'SHORT', values };
}

/** GeoKeyDirectory (34735) plus its double (34736) and ASCII (34737) parameter tags. */
export function geoKeyTags(info: RasterInfo): [number, TagValue][] {
  const keys = geoKeysFromSpatialReference(info.spatialReference);
  const dir: number[] = [1, 1, 0, keys.length];
  const doubles: number[] = [];
  let ascii = '';
  for (const key of keys) {
    if (key.kind === 'short') dir.push(key.id, 0, 1, key.value);
    else if (key.kind === 'double') {
      dir.push(key.id, 34736, key.value.length, doubles.length);
      doubles.push(...key.value);
    } else {
      dir.push(key.id, 34737, key.value.length + 1, ascii.length);
      ascii += `${key.value}|`;
    }
  }
  const out: [number, TagValue][] = [[34735, { type: 'SHORT', values: dir }]];
  if (doubles.length > 0) out.push([34736, { type: 'DOUBLE', values: doubles }]);
  if (ascii) out.push([34737, { type: 'ASCII', value: ascii }]);
  return out;
}

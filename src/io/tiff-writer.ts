/**
 * A small classic-TIFF (little-endian, 32-bit offsets) file assembler: one or more image file
 * directories (an IFD chain) with their tags, then the already-encoded tiles or strips. Layout:
 * 8-byte header, the first IFD at byte 8, its out-of-line tag values (8-byte aligned), the next
 * IFD and its values, ..., then the blocks of every image, so a reader finds every tag in the
 * first few kilobytes (as in a COG). Files over 4 GiB need BigTIFF, which is not written yet.
 * Reference: TIFF 6.0, sections 2 (structure) and 15 (tiles).
 */
import { EngineError } from '../core/errors.js';

export type TagValue =
  | { readonly type: 'SHORT' | 'LONG' | 'DOUBLE'; readonly values: readonly number[] }
  | { readonly type: 'ASCII'; readonly value: string };

export interface TiffImage {
  /** Tag id -> value, without the block offset and byte-count tags (the assembler adds them). */
  readonly tags: ReadonlyMap<number, TagValue>;
  /** Encoded blocks in offset order (planar separate: band-major). */
  readonly blocks: readonly Uint8Array[];
  /** Tiles (TileOffsets/TileByteCounts) or strips (StripOffsets/StripByteCounts). */
  readonly tiled: boolean;
}

const TYPE_CODE = { ASCII: 2, SHORT: 3, LONG: 4, DOUBLE: 12 } as const;
const TYPE_SIZE = { ASCII: 1, SHORT: 2, LONG: 4, DOUBLE: 8 } as const;
const MAX_CLASSIC = 0xffffffff;

interface Encoded {
  readonly tag: number;
  readonly type: keyof typeof TYPE_CODE;
  readonly count: number;
  readonly bytes: Uint8Array;
}

function encodeValue(tag: number, v: TagValue): Encoded {
  if (v.type === 'ASCII') {
    const text = new TextEncoder().encode(v.value);
    const bytes = new Uint8Array(text.length + 1); // NUL-terminated
    bytes.set(text);
    return { tag, type: 'ASCII', count: bytes.length, bytes };
  }
  const size = TYPE_SIZE[v.type];
  const bytes = new Uint8Array(v.values.length * size);
  const view = new DataView(bytes.buffer);
  v.values.forEach((x, i) => {
    if (v.type === 'SHORT') view.setUint16(i * 2, x, true);
    else if (v.type === 'LONG') view.setUint32(i * 4, x, true);
    else view.setFloat64(i * 8, x, true);
  });
  return { tag, type: v.type, count: v.values.length, bytes };
}

const align8 = (n: number): number => (n + 7) & ~7;

interface Planned {
  readonly image: TiffImage;
  readonly offsetsTag: number;
  readonly entries: Encoded[];
  /** Byte offset of the IFD. */
  readonly ifdAt: number;
  /** Tag -> byte offset of its out-of-line value. */
  readonly valueAt: Map<number, number>;
  readonly blockOffsets: number[];
}

/**
 * Assemble one TIFF file from one image, or from several chained through their next-IFD offsets
 * in the order given (the first is image 0, the main image; later ones are e.g. a transparency
 * mask or overviews). Layout: header, then for each image its IFD and its out-of-line tag values,
 * then the blocks of every image in image order, so every IFD and tag sits before the pixels.
 */
export function writeClassicTiff(images: TiffImage | readonly TiffImage[]): Uint8Array {
  const list: readonly TiffImage[] = Array.isArray(images) ? images : [images as TiffImage];
  if (list.length === 0) throw new EngineError('INTERNAL', 'writeClassicTiff: no image to write');
  let cursor = 8;
  const plans: Planned[] = list.map((image) => {
    const blockCount = image.blocks.length;
    // Placeholder offsets (filled below) and the real byte counts.
    const offsetsTag = image.tiled ? 324 : 273;
    const countsTag = image.tiled ? 325 : 279;
    const all = new Map(image.tags);
    all.set(offsetsTag, { type: 'LONG', values: new Array<number>(blockCount).fill(0) });
    all.set(countsTag, { type: 'LONG', values: image.blocks.map((b) => b.length) });
    const entries = [...all.entries()].sort((a, b) => a[0] - b[0]).map(([tag, v]) => encodeValue(tag, v));
    const ifdAt = cursor;
    cursor = align8(cursor + 2 + 12 * entries.length + 4);
    const valueAt = new Map<number, number>();
    for (const e of entries) {
      if (e.bytes.length > 4) {
        valueAt.set(e.tag, cursor);
        cursor = align8(cursor + e.bytes.length);
      }
    }
    return { image, offsetsTag, entries, ifdAt, valueAt, blockOffsets: [] };
  });
  for (const plan of plans) {
    for (const b of plan.image.blocks) {
      plan.blockOffsets.push(cursor);
      cursor += b.length;
    }
  }
  if (cursor > MAX_CLASSIC) {
    throw new EngineError('LIMIT_EXCEEDED', `the GeoTIFF would be ${cursor} bytes; files over 4 GiB (BigTIFF) are not written yet`, {
      path: 'output',
    });
  }

  const out = new Uint8Array(cursor);
  const view = new DataView(out.buffer);
  out[0] = 0x49; // "II": little-endian
  out[1] = 0x49;
  view.setUint16(2, 42, true);
  view.setUint32(4, plans[0]!.ifdAt, true);
  plans.forEach((plan, n) => {
    // Now that the blocks have offsets, re-encode the offsets tag.
    const offsetsEntry = encodeValue(plan.offsetsTag, { type: 'LONG', values: plan.blockOffsets });
    const final = plan.entries.map((e) => (e.tag === plan.offsetsTag ? offsetsEntry : e));
    view.setUint16(plan.ifdAt, final.length, true);
    let p = plan.ifdAt + 2;
    for (const e of final) {
      view.setUint16(p, e.tag, true);
      view.setUint16(p + 2, TYPE_CODE[e.type], true);
      view.setUint32(p + 4, e.count, true);
      const at = plan.valueAt.get(e.tag);
      if (at === undefined) out.set(e.bytes, p + 8);
      else {
        view.setUint32(p + 8, at, true);
        out.set(e.bytes, at);
      }
      p += 12;
    }
    view.setUint32(p, plans[n + 1]?.ifdAt ?? 0, true); // next IFD, 0 after the last
    plan.image.blocks.forEach((b, i) => out.set(b, plan.blockOffsets[i]!));
  });
  return out;
}

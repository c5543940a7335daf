/**
 * Rendered chips between the two halves of a queued export: a range's render job leaves each kept
 * chip's pixels here (raw, exactly as rendered), its write job reads them back once the finalizer
 * has given the chip its index. One file per chip, written through a temporary name (a file is
 * whole or absent), below the export folder, which every worker sees.
 *
 * File layout: a 4-byte little-endian header length, a JSON header (per block: pixel type, rect,
 * band count; the class chip's type), then the bytes of every band, mask and class chip in order.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PixelBlock } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { allocatePlane, type PixelType, type Plane } from '../core/pixel-type.js';
import { writeAtomic } from '../chipper/files.js';

/** The staging folder of one coordination of an export. */
export const stagingRoot = (outputLocation: string): string => join(outputLocation, '.rasterflow-queue');
export const stagingDir = (outputLocation: string, run: string): string => join(stagingRoot(outputLocation), run);
const chipFile = (dir: string, candidate: number): string => join(dir, `${candidate}.chip`);

export interface StagedChip {
  readonly image: PixelBlock;
  readonly image2?: PixelBlock;
  readonly classValues?: Uint8Array | Uint16Array;
}

interface BlockHead {
  readonly pixelType: PixelType;
  readonly rect: readonly [number, number, number, number];
  readonly bands: number;
}

const headOf = (b: PixelBlock): BlockHead => ({
  pixelType: b.pixelType,
  rect: [b.rect.x, b.rect.y, b.rect.width, b.rect.height],
  bands: b.bands.length,
});

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** A 4-byte little-endian length, then `json`. */
function framedJson(value: unknown): Buffer[] {
  const json = Buffer.from(JSON.stringify(value));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(json.length);
  return [len, json];
}

/** Reads what stagedParts wrote: framed JSON headers and aligned copies of planes, in order. */
class StagedReader {
  at = 0;
  constructor(
    readonly buf: Buffer,
    private readonly file: string,
  ) {}
  json<T>(): T {
    const len = this.buf.readUInt32LE(this.at);
    const v = JSON.parse(this.buf.subarray(this.at + 4, this.at + 4 + len).toString('utf8')) as T;
    this.at += 4 + len;
    return v;
  }
  /** A copy of the next `n` values of `type` (aligned, owning its buffer). */
  take(type: PixelType, n: number): Plane {
    const plane = allocatePlane(type, n);
    const bytes = bytesOf(plane);
    if (this.at + bytes.length > this.buf.length) throw new Error(`the staged file ${this.file} is truncated`);
    bytes.set(this.buf.subarray(this.at, this.at + bytes.length));
    this.at += bytes.length;
    return plane;
  }
  block(h: BlockHead): PixelBlock {
    const [x, y, w, hh] = h.rect;
    const n = w * hh;
    const bands: Plane[] = [];
    for (let b = 0; b < h.bands; b++) bands.push(this.take(h.pixelType, n));
    const mask = this.take('U8', n) as Uint8Array;
    return { rect: rect(x, y, w, hh), pixelType: h.pixelType, bands, mask };
  }
  get done(): boolean {
    return this.at >= this.buf.length;
  }
}

/**
 * A tile of a render's band as staged bytes: its framed header, then copies of its bands and mask
 * (copies: a transient tile's planes are given back once the next tile is asked for).
 */
export function stagedTile(t: PixelBlock): Buffer[] {
  return [...framedJson(headOf(t)), ...t.bands.map((b) => Buffer.from(bytesOf(b))), Buffer.from(t.mask)];
}

/** The tiles of a staged band (stagedTile after stagedTile), each owning aligned planes. */
export function* stagedTiles(buf: Buffer, file: string): Generator<PixelBlock> {
  const r = new StagedReader(buf, file);
  while (!r.done) yield r.block(r.json<BlockHead>());
}

export async function stageChip(dir: string, candidate: number, chip: StagedChip): Promise<void> {
  const head = {
    image: headOf(chip.image),
    ...(chip.image2 ? { image2: headOf(chip.image2) } : {}),
    ...(chip.classValues ? { classValues: chip.classValues instanceof Uint16Array ? 'U16' : 'U8' } : {}),
  };
  const parts: Uint8Array[] = framedJson(head);
  for (const b of [chip.image, chip.image2]) {
    if (b === undefined) continue;
    for (const band of b.bands) parts.push(bytesOf(band));
    parts.push(b.mask);
  }
  if (chip.classValues) parts.push(bytesOf(chip.classValues));
  await writeAtomic(chipFile(dir, candidate), Buffer.concat(parts));
}

export async function readStagedChip(dir: string, candidate: number): Promise<StagedChip> {
  const file = chipFile(dir, candidate);
  const r = new StagedReader(await readFile(file), file);
  const head = r.json<{ image: BlockHead; image2?: BlockHead; classValues?: 'U8' | 'U16' }>();
  const image = r.block(head.image);
  const image2 = head.image2 ? r.block(head.image2) : undefined;
  const n = image.rect.width * image.rect.height;
  const classValues = head.classValues ? (r.take(head.classValues, n) as Uint8Array | Uint16Array) : undefined;
  if (!r.done) throw new Error(`the staged chip ${file} has ${r.buf.length - r.at} unexpected bytes`);
  return { image, ...(image2 ? { image2 } : {}), ...(classValues ? { classValues } : {}) };
}

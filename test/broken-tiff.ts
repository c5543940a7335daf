/**
 * Broken copies of good TIFFs for the tests of corrupt input: cut short, a block offset or byte
 * count rewritten, compressed bytes garbled. Classic little-endian TIFFs only (the bundled ones).
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';

export const DATA = resolve(import.meta.dirname, '../golden/data');
/** 383 x 407 Float32, uncompressed strips of 5 rows (7660 bytes each), the IFD first. */
export const DEM = join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif');
/** 349 x 352 x 6 Byte, DEFLATE strips of 3 rows, pixel-interleaved, 4 tiled overviews after it. */
export const LANDSAT = join(DATA, 'L7_ETMs.tif');

export const TAGS = { Compression: 259, StripOffsets: 273, StripByteCounts: 279, TileOffsets: 324, TileByteCounts: 325 } as const;

const SIZE: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 16: 8 };

/** Where the values of `tag` of IFD `ifd` sit in `b`: byte position, value size, count. */
export function tagSlot(b: Uint8Array, tag: number, ifd = 0): { at: number; size: number; count: number } {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (v.getUint16(0, true) !== 0x4949 || v.getUint16(2, true) !== 42) throw new Error('classic little-endian TIFFs only');
  let p = v.getUint32(4, true);
  for (let k = 0; k < ifd; k++) p = v.getUint32(p + 2 + 12 * v.getUint16(p, true), true);
  const n = v.getUint16(p, true);
  for (let i = 0; i < n; i++) {
    const e = p + 2 + 12 * i;
    if (v.getUint16(e, true) !== tag) continue;
    const size = SIZE[v.getUint16(e + 2, true)]!;
    const count = v.getUint32(e + 4, true);
    return { at: size * count <= 4 ? e + 8 : v.getUint32(e + 8, true), size, count };
  }
  throw new Error(`no tag ${tag} in IFD ${ifd}`);
}

export function getTag(b: Uint8Array, tag: number, i = 0, ifd = 0): number {
  const { at, size } = tagSlot(b, tag, ifd);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return size === 2 ? v.getUint16(at + 2 * i, true) : v.getUint32(at + 4 * i, true);
}

export function setTag(b: Uint8Array, tag: number, i: number, value: number, ifd = 0): void {
  const { at, size } = tagSlot(b, tag, ifd);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (size === 2) v.setUint16(at + 2 * i, value, true);
  else v.setUint32(at + 4 * i, value, true);
}

/** A temporary folder for broken copies; `done()` removes it. */
export function brokenCopies(): {
  dir: string;
  copy(src: string, name: string, edit?: (b: Uint8Array) => void): string;
  cut(src: string, name: string, size: number): string;
  done(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'rasterflow-broken-'));
  return {
    dir,
    copy(src, name, edit) {
      const file = join(dir, name);
      if (!edit) copyFileSync(src, file);
      else {
        const b = new Uint8Array(readFileSync(src));
        edit(b);
        writeFileSync(file, b);
      }
      return file;
    },
    cut(src, name, size) {
      const file = join(dir, name || basename(src));
      copyFileSync(src, file);
      truncateSync(file, size);
      return file;
    },
    done: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Pack codes of `width` bits MSB first (a hand-made LZW stream). */
export function packCodes(codes: readonly number[], width = 9): Uint8Array {
  const bits = codes.map((c) => c.toString(2).padStart(width, '0')).join('');
  const padded = bits.padEnd(Math.ceil(bits.length / 8) * 8, '0');
  return Uint8Array.from({ length: padded.length / 8 }, (_, i) => parseInt(padded.slice(8 * i, 8 * i + 8), 2));
}

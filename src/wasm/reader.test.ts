/**
 * The GeoTIFF I/O's wasm predictor (wasm/reader.ts `readerDifferenceBytes`, glue `differencedCopy`)
 * against the TypeScript reference (tiff-predictors.ts `horizontalDifference`): bit for bit, over
 * seeded random bytes in planes of odd widths (tails after the sixteen-byte steps, rows shorter
 * than one step), in place and into another block; and the streaming writer's files, written from
 * tiles in wasm memory (the wasm path) and from ordinary planes (the TypeScript path), byte for
 * byte the same (statistics and internal mask included), the tiles' masks checked in wasm
 * (`maskAllValidInWasm`: every length, any place of a byte other than 1); and the rows of a
 * decoded block copied into a window in wasm (`copyRowsInWasm`, geotiff-source.ts copyBlock) as a
 * row-by-row TypeScript copy does, whatever the row's length and place. Each comparison checks
 * which path ran.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { horizontalDifference } from '../io/tiff-predictors.js';
import { inlineDeflateCount, setInlineDeflate, writeTiffStream } from '../io/tiff-stream-writer.js';
import { prng } from '../../test/helpers.js';
import { setWasmEnabled, wasmKernels } from './module.js';
import { tileBlocks, WasmCall } from './planes.js';
import {
  copyRowsInWasm,
  differencedCopy,
  maskAllValidInWasm,
  readerAllValidCalls,
  readerDifferenceCalls,
  type ReaderExports,
} from './reader.js';

const dir = mkdtempSync(join(tmpdir(), 'rasterflow-wasm-reader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const wasmOn = wasmKernels() !== undefined;

/** `n` seeded random bytes. */
function randomBytes(n: number, seed: number): Uint8Array {
  const r = prng(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

/** The TypeScript reference: a copy, differenced in place. */
function reference(bytes: Uint8Array, width: number, rows: number): Uint8Array {
  const copy = bytes.slice(0, width * rows);
  horizontalDifference(copy, width, rows);
  return copy;
}

const SIZES: readonly [number, number][] = [
  [1, 1],
  [1, 5],
  [2, 3],
  [15, 2],
  [16, 3],
  [17, 4],
  [31, 1],
  [33, 3],
  [48, 2],
  [255, 3],
  [256, 256],
  [257, 5],
];

describe.skipIf(!wasmOn)('wasm predictor 2 on bytes', () => {
  it('differencedCopy equals horizontalDifference on a copy, for planes in wasm memory', () => {
    SIZES.forEach(([width, rows], s) => {
      const blocks = tileBlocks()!;
      try {
        const block = blocks.allocate({ x: 0, y: 0, width, height: rows }, 'U8', 1);
        const plane = block.bands[0] as Uint8Array;
        const bytes = randomBytes(width * rows, 100 + s);
        plane.set(bytes);
        const before = readerDifferenceCalls();
        const got = differencedCopy(plane, width, rows);
        expect(readerDifferenceCalls(), `${width}x${rows}: the wasm path`).toBe(before + 1);
        expect(got, `${width}x${rows}`).toEqual(reference(bytes, width, rows));
        // The plane itself is left as it was, and the copy is ordinary memory.
        expect(plane).toEqual(bytes);
        expect(got!.buffer).not.toBe(plane.buffer);
      } finally {
        blocks.release();
      }
    });
  });

  it('the kernel differences in place (dst = src) as into another block', () => {
    const k = wasmKernels()!;
    const x = k.exports as unknown as ReaderExports;
    SIZES.forEach(([width, rows], s) => {
      const n = width * rows;
      const bytes = randomBytes(n, 300 + s);
      const call = new WasmCall(k);
      try {
        const a = call.scratch(n)!;
        new Uint8Array(k.arena.buffer, a, n).set(bytes);
        x.readerDifferenceBytes(a, a, width, rows);
        expect(new Uint8Array(k.arena.buffer, a, n).slice(), `${width}x${rows} in place`).toEqual(reference(bytes, width, rows));
      } finally {
        call.release();
      }
    });
  });

  it('planes outside wasm memory, or wasm off: no copy made (the caller differences in TypeScript)', () => {
    expect(differencedCopy(new Uint8Array(64), 8, 8)).toBeUndefined();
    const blocks = tileBlocks()!;
    try {
      const plane = blocks.allocate({ x: 0, y: 0, width: 8, height: 8 }, 'U8', 1).bands[0] as Uint8Array;
      expect(differencedCopy(plane, 8, 9), 'more rows than the plane holds').toBeUndefined();
      const was = setWasmEnabled(false);
      try {
        expect(differencedCopy(plane, 8, 8)).toBeUndefined();
      } finally {
        setWasmEnabled(was);
      }
    } finally {
      blocks.release();
    }
  });

  it('maskAllValidInWasm: true only when every byte is 1, whatever the length and the place of another byte', () => {
    const blocks = tileBlocks()!;
    try {
      for (const n of [1, 15, 16, 17, 63, 64, 65, 127, 200, 4096 + 7]) {
        const mask = blocks.allocate({ x: 0, y: 0, width: n, height: 1 }, 'U8', 1).mask;
        const before = readerAllValidCalls();
        expect(maskAllValidInWasm(mask), `${n} ones`).toBe(true);
        expect(readerAllValidCalls() - before, 'counted in wasm').toBe(1);
        for (const at of new Set([0, 1, n >> 1, n - 17, n - 16, n - 2, n - 1].filter((i) => i >= 0 && i < n))) {
          for (const v of [0, 2, 255]) {
            mask[at] = v;
            expect(maskAllValidInWasm(mask), `${n} bytes, ${v} at ${at}`).toBe(false);
            mask[at] = 1;
          }
        }
        expect(maskAllValidInWasm(mask)).toBe(true);
      }
      expect(maskAllValidInWasm(new Uint8Array(64).fill(1)), 'a mask outside wasm memory').toBeUndefined();
      const mask = blocks.allocate({ x: 0, y: 0, width: 8, height: 8 }, 'U8', 1).mask;
      const was = setWasmEnabled(false);
      try {
        expect(maskAllValidInWasm(mask), 'wasm off').toBeUndefined();
      } finally {
        setWasmEnabled(was);
      }
    } finally {
      blocks.release();
    }
  });

  it.each([
    ['with NoData', 0],
    ['without NoData (an internal mask)', undefined],
  ])('a streamed GeoTIFF from tiles in wasm memory has the bytes of one from ordinary planes, %s', async (_, noData) => {
    const size = 512;
    const info: RasterInfo = {
      width: size,
      height: size,
      bandCount: 1,
      pixelType: 'U8',
      extent: { xmin: 0, ymin: 0, xmax: size, ymax: size },
      cellSize: { x: 1, y: 1 },
      ...(noData === undefined ? {} : { noData }),
    };
    const bytes = randomBytes(size * size, 7);
    // Some masked pixels in one tile (the NoData fill runs in TypeScript there), none in the others.
    const masked = (x: number, y: number): boolean => x < 256 && y < 256 && (x * 7 + y * 3) % 11 === 0;
    const write = async (path: string, inWasm: boolean): Promise<void> => {
      async function* tiles(): AsyncGenerator<PixelBlock> {
        for (let ty = 0; ty < size; ty += 256) {
          for (let tx = 0; tx < size; tx += 256) {
            const blocks = inWasm ? tileBlocks()! : undefined;
            const rect = { x: tx, y: ty, width: 256, height: 256 };
            const block: PixelBlock = blocks
              ? blocks.allocate(rect, 'U8', 1)
              : { rect, pixelType: 'U8', bands: [new Uint8Array(256 * 256)], mask: new Uint8Array(256 * 256).fill(1) };
            const plane = block.bands[0] as Uint8Array;
            for (let y = 0; y < 256; y++) {
              for (let x = 0; x < 256; x++) {
                plane[y * 256 + x] = bytes[(ty + y) * size + tx + x]!;
                if (masked(tx + x, ty + y)) block.mask[y * 256 + x] = 0;
              }
            }
            try {
              yield block;
            } finally {
              blocks?.release();
            }
          }
        }
      }
      await writeTiffStream(path, info, tiles(), { compress: 'deflate', predictor: 2 });
    };
    const before = readerDifferenceCalls();
    const checked = readerAllValidCalls();
    const inline = inlineDeflateCount();
    // Deflated here from wasm memory, then copied out to the codec threads (or inline below 32 KiB).
    const was = setInlineDeflate('always');
    try {
      await write(join(dir, 'wasm.tif'), true);
      expect(inlineDeflateCount() - inline, 'the three unmasked tiles deflated from wasm memory').toBe(3);
      setInlineDeflate('never');
      await write(join(dir, 'wasm-copied.tif'), true);
      expect(inlineDeflateCount() - inline, 'none copied out').toBe(3);
    } finally {
      setInlineDeflate(was);
    }
    expect(readerDifferenceCalls() - before, 'the three unmasked tiles through wasm, twice').toBe(6);
    expect(readerAllValidCalls() - checked, "every tile's mask checked in wasm, twice").toBe(8);
    await write(join(dir, 'js.tif'), false);
    expect(readerDifferenceCalls() - before, 'none from ordinary planes').toBe(6);
    expect(readerAllValidCalls() - checked, 'none from ordinary planes').toBe(8);
    // The statistics (GDAL_METADATA) and the internal mask are in the bytes compared.
    const js = readFileSync(join(dir, 'js.tif'));
    expect(readFileSync(join(dir, 'wasm.tif')).equals(js)).toBe(true);
    expect(readFileSync(join(dir, 'wasm-copied.tif')).equals(js)).toBe(true);
  });
});

describe.skipIf(!wasmOn)('wasm row copies (a decoded block into a window)', () => {
  it('copyRowsInWasm copies as a row-by-row copy does, touching nothing else; false when either side is outside wasm memory', () => {
    const k = wasmKernels()!;
    const call = new WasmCall(k);
    try {
      const src = new Float32Array(k.arena.buffer, call.scratch(4 * 300 * 40)!, 300 * 40);
      const dst = new Float32Array(k.arena.buffer, call.scratch(4 * 320 * 40)!, 320 * 40);
      const r = prng(31);
      for (let i = 0; i < src.length; i++) src[i] = r();
      // Row lengths across the 64- and 16-byte steps and their tails (a halo's 1 or 2 columns too).
      for (const [rowLength, rows, srcAt, dstAt] of [
        [1, 40, 0, 0],
        [2, 39, 255, 1],
        [3, 17, 7, 5],
        [16, 20, 1, 3],
        [17, 12, 300, 2],
        [256, 38, 300, 321],
        [258, 40, 0, 0],
        [259, 5, 40, 60],
      ] as const) {
        dst.fill(-1);
        const want = new Float32Array(dst.length).fill(-1);
        for (let y = 0; y < rows; y++) want.set(src.subarray(srcAt + y * 300, srcAt + y * 300 + rowLength), dstAt + y * 320);
        expect(copyRowsInWasm(src, srcAt, 300, dst, dstAt, 320, rowLength, rows)).toBe(true);
        expect(dst).toEqual(want);
      }
      const outside = new Float32Array(320 * 40);
      expect(copyRowsInWasm(src, 0, 300, outside, 0, 320, 10, 2)).toBe(false);
      expect(outside.every((v) => v === 0)).toBe(true);
      expect(copyRowsInWasm(src, 0, 300, new Float64Array(k.arena.buffer, call.scratch(8 * 16)!, 16), 0, 16, 4, 1)).toBe(false);
    } finally {
      call.release();
    }
  });
});

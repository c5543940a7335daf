/**
 * DEFLATE blocks read and inflated on a codec thread (codec-pool.ts `inflateFileBlock`,
 * geotiff-source.ts `inflateFromFile`): the samples decoders.ts gives for the same file (blocks
 * too small for a thread are decoded there), the failures named as a read and decoders.ts name
 * them (a stream that does not decode, gives too little or too much, a file cut short after it
 * was opened), and a file closed while blocks are still read on a thread stays open until they
 * are done. With wasm on, blocks are inflated straight into blocks of the kernels' shared memory
 * (on the thread, or here when no thread runs): the same samples, the memory around untouched.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { spawnSync } from 'node:child_process';
import { wasmKernels } from '../wasm/module.js';
import { decodedBytesLive, RESIDENT_BUDGET, TileBlocks } from '../wasm/planes.js';
import { residentSpan, residentSpanCount } from '../wasm/reader.js';
import { BlockReadError, inflateFileBlock, recycleInflated } from './codec-pool.js';
import { openGeoTiff } from './geotiff-source.js';
import { describeTiffImage, openFileSource, readTiffStructure, type TiffImageLayout } from './tiff-reader.js';
import { fitTileCacheToPass, tileCache } from './tile-cache.js';
import { openerScope } from './source.js';
import { registry } from '../functions/index.js';
import { renderTiles } from '../graph/render.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { writeTiffStream } from './tiff-stream-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'rasterflow-file-inflate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A 512 x 512 F32 raster of seeded noise (poorly compressible, as a DEM's low bits). */
const SIZE = 512;
const values = (() => {
  const f = new Float32Array(SIZE * SIZE);
  let s = 7;
  for (let i = 0; i < f.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    f[i] = 1000 + (i % SIZE) * 0.25 + (s % 1000) / 7;
  }
  return f;
})();

/**
 * A raster (`values` by default) as a DEFLATE GeoTIFF without predictor, in tiles of `tile` (256: a
 * thread's; 64: decoders.ts's).
 */
async function writeDem(path: string, tile: number, width = SIZE, height = SIZE, plane: Float32Array = values): Promise<void> {
  const info: RasterInfo = {
    width,
    height,
    bandCount: 1,
    pixelType: 'F32',
    extent: { xmin: 0, ymin: 0, xmax: width, ymax: height },
    cellSize: { x: 1, y: 1 },
  };
  async function* blocks(): AsyncGenerator<PixelBlock> {
    yield {
      rect: { x: 0, y: 0, width, height },
      pixelType: 'F32',
      bands: [plane.slice()],
      mask: new Uint8Array(width * height).fill(1),
    };
  }
  await writeTiffStream(path, info, blocks(), { compress: 'deflate', predictor: 1, blockWidth: tile, blockHeight: tile });
}

async function layoutOf(path: string): Promise<TiffImageLayout> {
  const src = await openFileSource(path);
  try {
    const head = await src.read(0, 16384);
    const s = await readTiffStructure(src, head);
    return describeTiffImage(s.ifds[0]!, s.littleEndian);
  } finally {
    await src.close();
  }
}

/** Replace the bytes of block `index` (from its start) with `bytes`. */
function overwrite(path: string, l: TiffImageLayout, index: number, bytes: Uint8Array): void {
  expect(bytes.length).toBeLessThanOrEqual(l.byteCounts[index]!);
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, bytes, 0, bytes.length, l.offsets[index]!);
  } finally {
    closeSync(fd);
  }
}

async function readAll(path: string): Promise<Float32Array> {
  const src = await openGeoTiff(path);
  try {
    return (await src.read({ x: 0, y: 0, width: SIZE, height: SIZE })).bands[0] as Float32Array;
  } finally {
    await src.close();
  }
}

async function failure(path: string): Promise<string> {
  return readAll(path).then(
    () => 'no error',
    (e: unknown) => `${(e as { code?: string }).code}: ${(e as Error).message}`,
  );
}

describe('DEFLATE blocks read and inflated on a codec thread', () => {
  it('give the samples written, as the small blocks decoders.ts decodes do', async () => {
    const big = join(dir, 'big.tif');
    const small = join(dir, 'small.tif');
    await writeDem(big, 256);
    await writeDem(small, 64);
    expect((await layoutOf(big)).byteCounts[0]).toBeGreaterThan(100_000);
    expect(await readAll(big)).toEqual(values);
    expect(await readAll(small)).toEqual(values);
    // A window crossing blocks, and the file read again through the cache.
    const src = await openGeoTiff(big);
    try {
      const w = await src.read({ x: 200, y: 250, width: 100, height: 20 });
      for (let y = 0; y < 20; y++) for (let x = 0; x < 100; x++) expect(w.bands[0]![y * 100 + x]).toBe(values[(250 + y) * SIZE + 200 + x]);
    } finally {
      await src.close();
    }
  });

  it('name a corrupt stream, one giving too little or too much, and the block', async () => {
    const path = join(dir, 'corrupt.tif');
    await writeDem(path, 256);
    const l = await layoutOf(path);
    const pristine = readFileSync(path);
    overwrite(path, l, 3, new Uint8Array([0x12, 0x34, 0x56]));
    expect(await failure(path)).toMatch(
      /^IO_ERROR: .*tile 3 \(columns 256-511, rows 256-511\) of band 1 does not decode: incorrect header check$/,
    );
    writeFileSync(path, pristine);
    overwrite(path, l, 1, deflateSync(new Uint8Array(1000)));
    expect(await failure(path)).toMatch(
      /tile 1 .* does not decode: DEFLATE gives 1000 bytes where its pixels need 262144: the data is cut short or corrupt$/,
    );
    writeFileSync(path, pristine);
    overwrite(path, l, 2, deflateSync(new Uint8Array(262144 + 100_000)));
    expect(await failure(path)).toMatch(
      /tile 2 .* does not decode: DEFLATE data inflates to more than the 262144 bytes of the block: the data is corrupt$/,
    );
  });

  it('a file cut short after it was opened: the block is named as cut short, not decoded from what is there', async () => {
    const path = join(dir, 'cut.tif');
    await writeDem(path, 256);
    const l = await layoutOf(path);
    const src = await openGeoTiff(path);
    try {
      truncateSync(path, l.offsets[3]! + 100);
      await expect(src.read({ x: 256, y: 256, width: 10, height: 10 })).rejects.toThrow(
        new RegExp(`tile 3 .* is cut short: ${l.byteCounts[3]} bytes at offset ${l.offsets[3]}, only 100 of them are in the file`),
      );
    } finally {
      await src.close();
    }
  });

  it('a recycled block buffer goes to the next block read (the old view detached) and holds its bytes', async () => {
    const path = join(dir, 'recycled.bin');
    const a = deflateSync(new Uint8Array(65536).fill(5));
    const b = deflateSync(new Uint8Array(65536).fill(9));
    writeFileSync(path, Buffer.concat([a, b]));
    const fd = openSync(path, 'r');
    try {
      const first = await inflateFileBlock(fd, 0, a.length, 65536);
      expect(first.every((v) => v === 5)).toBe(true);
      recycleInflated(first.buffer);
      const second = await inflateFileBlock(fd, a.length, b.length, 65536);
      expect(second.length).toBe(65536);
      expect(second.every((v) => v === 9)).toBe(true);
      // Off the main thread the buffer was transferred to the thread with the job; inline it is the same buffer.
      expect(first.byteLength === 0 || first.buffer === second.buffer).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it('a cache smaller than the raster: blocks dropped while windows still copy from them, recycled, reread right', async () => {
    const big = join(dir, 'small-cache.tif');
    await writeDem(big, 256);
    const kept = tileCache.maxBytes;
    // Room for one 256 x 256 F32 block: every window's blocks leave the cache while others are read.
    tileCache.maxBytes = 300_000;
    const src = await openGeoTiff(big);
    try {
      for (let round = 0; round < 3; round++) {
        const windows = [
          { x: 0, y: 0, width: SIZE, height: SIZE },
          { x: 250, y: 10, width: 20, height: 480 },
          { x: 5, y: 255, width: 500, height: 3 },
          { x: 255 - round, y: 255 - round, width: 2 + round, height: 2 + round },
        ];
        const blocks = await Promise.all(windows.map((w) => src.read(w)));
        windows.forEach((w, i) => {
          const got = blocks[i]!.bands[0] as Float32Array;
          const want = new Float32Array(w.width * w.height);
          for (let y = 0; y < w.height; y++)
            want.set(values.subarray((w.y + y) * SIZE + w.x, (w.y + y) * SIZE + w.x + w.width), y * w.width);
          expect(got).toEqual(want);
        });
      }
    } finally {
      tileCache.maxBytes = kept;
      await src.close();
    }
  });

  it('inflateFileBlock: a short file and a bad descriptor are BlockReadErrors', async () => {
    const path = join(dir, 'bytes.bin');
    const stream = deflateSync(new Uint8Array(65536).fill(3));
    writeFileSync(path, stream);
    const fd = openSync(path, 'r');
    try {
      expect(Buffer.from(await inflateFileBlock(fd, 0, stream.length, 65536)).equals(Buffer.alloc(65536, 3))).toBe(true);
      const short = await inflateFileBlock(fd, 0, stream.length + 50, 65536).catch((e: unknown) => e);
      expect(short).toBeInstanceOf(BlockReadError);
      expect(short).toMatchObject({ ended: true, bytesRead: stream.length });
    } finally {
      closeSync(fd);
    }
    const bad = await inflateFileBlock(fd, 0, 10, 65536).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BlockReadError);
    expect(bad).toMatchObject({ ended: false, code: 'EBADF' });
  });

  it.skipIf(wasmKernels() === undefined)(
    'inflateFileBlock into shared wasm memory: the bytes at the target, nothing around them touched',
    async () => {
      const path = join(dir, 'into.bin');
      const a = deflateSync(new Uint8Array(65536).fill(7));
      // 40 bytes of padding past the block: within the output's cap, dropped at the target's room.
      const padded = deflateSync(Buffer.concat([Buffer.alloc(65536, 4), Buffer.alloc(40, 9)]));
      writeFileSync(path, Buffer.concat([a, padded]));
      const span = residentSpan(65536 + 4096)!;
      expect(span).toBeDefined();
      const fd = openSync(path, 'r');
      try {
        const all = new Uint8Array(span.memory, span.at, 65536 + 4096);
        all.fill(0xee);
        const at = span.at + 16;
        const got = await inflateFileBlock(fd, 0, a.length, 65536, { memory: span.memory, at, room: 65536 });
        expect(got.buffer).toBe(span.memory);
        expect(got.byteOffset).toBe(at);
        expect(got.length).toBe(65536);
        expect(got.every((v) => v === 7)).toBe(true);
        expect(all.subarray(0, 16).every((v) => v === 0xee)).toBe(true);
        expect(all.subarray(16 + 65536).every((v) => v === 0xee)).toBe(true);
        const cut = await inflateFileBlock(fd, a.length, padded.length, 65536, { memory: span.memory, at, room: 65536 });
        expect(cut.length).toBe(65536);
        expect(cut.every((v) => v === 4)).toBe(true);
        expect(all.subarray(16 + 65536).every((v) => v === 0xee)).toBe(true);
        await expect(inflateFileBlock(fd, 0, a.length, 65536, { memory: span.memory, at, room: 65535 })).rejects.toThrow(
          /smaller than the block/,
        );
      } finally {
        closeSync(fd);
        span.release();
      }
    },
  );

  it.skipIf(wasmKernels() === undefined)(
    'with wasm on, file blocks are inflated into wasm memory, on a thread and (no thread) here',
    async () => {
      const path = join(dir, 'resident.tif');
      await writeDem(path, 256);
      const before = residentSpanCount();
      expect(await readAll(path)).toEqual(values);
      expect(residentSpanCount()).toBeGreaterThan(before);
      // No codec thread: the main thread reads and inflates into the same memory (runInline).
      const code = [
        `const { openGeoTiff } = await import('./src/io/geotiff-source.ts');`,
        `const { residentSpanCount } = await import('./src/wasm/reader.ts');`,
        `const { codecThreadCount } = await import('./src/io/codec-pool.ts');`,
        `const src = await openGeoTiff(${JSON.stringify(path)});`,
        `const b = await src.read({ x: 0, y: 0, width: ${SIZE}, height: ${SIZE} });`,
        `await src.close();`,
        `const h = (await import('node:crypto')).createHash('sha256').update(new Uint8Array(b.bands[0].buffer, b.bands[0].byteOffset, b.bands[0].byteLength)).digest('hex');`,
        `console.log(JSON.stringify({ h, spans: residentSpanCount(), threads: codecThreadCount() }));`,
      ].join('\n');
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
        cwd: new URL('../..', import.meta.url).pathname,
        env: { ...process.env, RASTERFLOW_CODEC_THREADS: '0' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stderr).toBe('');
      const out = JSON.parse(r.stdout) as { h: string; spans: number; threads: number };
      const { createHash } = await import('node:crypto');
      expect(out).toEqual({ h: createHash('sha256').update(new Uint8Array(values.buffer)).digest('hex'), spans: 4, threads: 0 });
    },
  );

  it.skipIf(wasmKernels() === undefined)('decoded blocks the cache holds in wasm memory leave the evaluator its whole budget', async () => {
    const path = join(dir, 'budget.tif');
    await writeDem(path, 256);
    const src = await openGeoTiff(path);
    const blocks = new TileBlocks(wasmKernels()!);
    try {
      await src.read({ x: 0, y: 0, width: SIZE, height: SIZE });
      expect(decodedBytesLive()).toBeGreaterThan(0);
      // One plane of the whole budget (8192 x 8192 F32, never touched): still in wasm memory.
      const b = blocks.allocateUnfilled({ x: 0, y: 0, width: 8192, height: 8192 }, 'F32', 1);
      expect(b.bands[0]!.byteLength).toBe(RESIDENT_BUDGET);
      expect(b.bands[0]!.buffer).toBe(wasmKernels()!.arena.buffer);
    } finally {
      blocks.release();
      await src.close();
    }
  });

  it.skipIf(wasmKernels() === undefined)(
    'a render of the whole raster, 256-px tiles 16 in flight, decodes each block once in the cache fitted to its pass',
    async () => {
      // 16 x 5 blocks of 256 x 256: a row of tiles is a row of blocks, as `rasterflow render` reads a 4096-px raster.
      const W = 4096;
      const H = 1280;
      const path = join(dir, 'pass.tif');
      const plane = new Float32Array(W * H);
      for (let i = 0; i < plane.length; i++) plane[i] = values[i % values.length]!;
      await writeDem(path, 256, W, H, plane);
      const files = openerScope();
      const kept = tileCache.maxBytes;
      try {
        const { root } = await buildGraph(
          { rasterFunction: 'Hillshade' },
          { registry, resolveSource: bindSources({ $$: path }, files.open) },
        );
        tileCache.clear();
        fitTileCacheToPass();
        const before = residentSpanCount();
        let tiles = 0;
        for await (const _ of renderTiles(root, { tileSize: 256, transient: true, concurrency: 16 })) tiles++;
        expect(tiles).toBe(80);
        expect(residentSpanCount() - before).toBe(80);
      } finally {
        tileCache.maxBytes = kept;
        await files.closeAll();
      }
    },
  );

  it('a source closed while its blocks are read on a thread closes its file once they are done', async () => {
    const path = join(dir, 'close.tif');
    await writeDem(path, 256);
    const src = await openGeoTiff(path);
    const reading = src.read({ x: 0, y: 0, width: SIZE, height: SIZE });
    const closing = src.close();
    const [block] = await Promise.all([reading, closing]);
    expect(block.bands[0]).toEqual(values);
    await expect(src.read({ x: 0, y: 0, width: 1, height: 1 })).rejects.toThrow(/is closed/);
  });
});

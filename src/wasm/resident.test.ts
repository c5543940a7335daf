/**
 * Planes that live in wasm memory through a chain (planes.ts `TileBlocks`, evaluate.ts): a chain
 * equals its TypeScript result and its copy-path result bit for bit; kernel calls copy nothing
 * when every plane is resident; every block returns to the arena after a render (whole, tiled,
 * stopped early, failed); the memory never grows; blocks that escape a tile are ordinary JS
 * memory or released by their consumer; and the `.buffer` mistakes (identity, transfer, encoders
 * reading a view as if it owned its buffer) are caught.
 */
import { join, resolve } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { windowInfo, type PixelBlock, type RasterInfo } from '../core/pixel-block.js';
import type { Plane } from '../core/pixel-type.js';
import { rect } from '../core/rect.js';
import { registry } from '../functions/index.js';
import { evaluateTile, evaluateTileHeld } from '../graph/evaluate.js';
import { render, renderTiles } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import { encodeAs } from '../io/encode.js';
import { TiffMemoryWriter } from '../io/tiff-stream-writer.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { createPool } from '../workers/pool.js';
import { transferable } from '../workers/tile-worker.js';
import { closingOpener, firstDifference } from '../../test/helpers.js';
import { WasmArena, type WasmMemory } from './arena.js';
import { setWasmEnabled, wasmKernels, wasmStatus, type Kernels } from './module.js';
import {
  copyOf,
  fillPlane,
  inWasmMemory,
  ownMemory,
  RESIDENT_BUDGET,
  setResidentPlanes,
  sharesMemory,
  TileBlocks,
  tileBlocksInUse,
  wasmCopiedBytes,
} from './planes.js';
import { wasmCallCount } from './terrain.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DEM = join(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const files = closingOpener();
afterEach(async () => {
  setWasmEnabled(true);
  setResidentPlanes(true);
  await files.closeAll();
});

const wasmOn = wasmStatus().enabled;

/**
 * Slope (percent rise) -> Curvature (of the slope surface) -> Aspect: three wasm terrain kernels whose
 * results equal the TypeScript kernels' bit for bit (Hillshade and Slope in degrees compute their last
 * step in single precision, within a stated tolerance: src/wasm/terrain.test.ts), F32 all along.
 */
const CHAIN = {
  rasterFunction: 'Aspect',
  rasterFunctionArguments: {
    Raster: {
      rasterFunction: 'Curvature',
      rasterFunctionArguments: { Raster: { rasterFunction: 'Slope', rasterFunctionArguments: { SlopeType: 2, ZFactor: 3 } } },
      outputPixelType: 'F32',
    },
  },
};

async function graph(rule: unknown = CHAIN): Promise<RasterNode> {
  return (await buildGraph(rule, { registry, resolveSource: bindSources({ $$: DEM }, files.open) })).root;
}

function arenaLive(): number {
  return wasmKernels()?.arena.stats().liveBlocks ?? 0;
}

/** Render with the given path; the result and what the kernels copied meanwhile. */
async function renderWith(
  root: RasterNode,
  mode: 'ts' | 'copy' | 'resident',
  tileSize = 100,
): Promise<{ block: PixelBlock; copied: number; calls: number }> {
  setWasmEnabled(mode !== 'ts');
  setResidentPlanes(mode === 'resident');
  const c0 = wasmCopiedBytes();
  const k0 = wasmCallCount();
  try {
    const block = await render(root, { tileSize });
    return { block, copied: wasmCopiedBytes() - c0, calls: wasmCallCount() - k0 };
  } finally {
    setWasmEnabled(true);
    setResidentPlanes(true);
  }
}

describe.runIf(wasmOn)('planes living in wasm memory through a chain', () => {
  it('a 3-node chain equals the TypeScript path and the copy path bit for bit; resident, its kernel calls copy nothing', async () => {
    const root = await graph();
    const ts = await renderWith(root, 'ts');
    const copy = await renderWith(root, 'copy');
    const resident = await renderWith(root, 'resident');
    expect(firstDifference(ts.block, copy.block)).toBeUndefined();
    expect(firstDifference(ts.block, resident.block)).toBeUndefined();
    expect(ts.calls).toBe(0);
    expect(copy.calls).toBeGreaterThan(0);
    expect(resident.calls).toBe(copy.calls);
    expect(copy.copied).toBeGreaterThan(0);
    // The GeoTIFF source reads into wasm memory and every output is allocated there.
    expect(resident.copied).toBe(0);
    // render() assembles ordinary JS memory.
    expect(inWasmMemory(resident.block)).toBe(false);
    expect(arenaLive()).toBe(0);
    expect(tileBlocksInUse()).toBe(0);
  });

  it('a worker pool (each worker its own wasm memory) gives the same pixels as the TypeScript path inline', async () => {
    const root = await graph();
    const ts = await renderWith(root, 'ts');
    const pool = createPool({ size: 2 });
    try {
      const pooled = await render(root, { tileSize: 77, pool, recipe: { rule: CHAIN, sources: { $$: DEM } } });
      expect(firstDifference(ts.block, pooled)).toBeUndefined();
    } finally {
      await pool.destroy();
    }
  });

  it('tiled equals whole with resident planes (odd tiles, halos across tile edges)', async () => {
    const root = await graph();
    const whole = await renderWith(root, 'resident', 4096);
    for (const size of [37, 64, 129])
      expect(firstDifference(whole.block, (await renderWith(root, 'resident', size)).block)).toBeUndefined();
    expect(arenaLive()).toBe(0);
  });

  it('every block returns to the arena: after a render, a consumer that stops early, and a failed render', async () => {
    const root = await graph();
    await render(root, { tileSize: 64 });
    expect(arenaLive()).toBe(0);

    let n = 0;
    for await (const t of renderTiles(root, { tileSize: 64, transient: true })) {
      expect(inWasmMemory(t)).toBe(true);
      if (++n === 3) break;
    }
    // Tiles launched ahead are released when they settle.
    await new Promise((r) => setTimeout(r, 50));
    expect(arenaLive()).toBe(0);

    const controller = new AbortController();
    let seen = 0;
    await expect(
      (async () => {
        for await (const _ of renderTiles(root, { tileSize: 32, transient: true, signal: controller.signal, concurrency: 4 })) {
          if (++seen === 2) controller.abort();
        }
      })(),
    ).rejects.toThrow(/abort/i);
    await new Promise((r) => setTimeout(r, 50));
    expect(arenaLive()).toBe(0);
    expect(tileBlocksInUse()).toBe(0);
  });

  it('renderTiles without `transient` gives tiles the consumer may keep (ordinary JS memory)', async () => {
    const root = await graph();
    const kept: PixelBlock[] = [];
    for await (const t of renderTiles(root, { tileSize: 128 })) kept.push(t);
    expect(kept.some(inWasmMemory)).toBe(false);
    expect(arenaLive()).toBe(0);
    // Rendering more reuses the arena's blocks: the kept tiles must not change.
    const copies = kept.map(ownMemory).map((b) => ({ ...b, bands: b.bands.map((p) => p.slice()), mask: b.mask.slice() }));
    await render(root, { tileSize: 128 });
    kept.forEach((b, i) => expect(firstDifference(b, copies[i]!)).toBeUndefined());
  });

  it('the memory is reserved once and never grows, whatever is rendered', async () => {
    const k = wasmKernels()!;
    const before = k.arena.buffer;
    const bytes = before.byteLength;
    expect(bytes).toBeGreaterThanOrEqual(64 * 2 ** 20);
    await render(await graph(), { tileSize: 383 });
    expect(k.arena.buffer).toBe(before);
    expect(k.arena.buffer.byteLength).toBe(bytes);
  });

  it('evaluateTile gives ordinary JS memory; evaluateTileHeld keeps the tile in wasm memory until released', async () => {
    const root = await graph();
    const r = rect(40, 50, 120, 90);
    const own = await evaluateTile(root, r);
    expect(inWasmMemory(own)).toBe(false);
    expect(arenaLive()).toBe(0);
    const held = await evaluateTileHeld(root, r);
    expect(inWasmMemory(held.block)).toBe(true);
    expect(arenaLive()).toBeGreaterThan(0);
    expect(firstDifference(own, ownMemory(held.block))).toBeUndefined();
    held.release();
    held.release(); // once only
    expect(arenaLive()).toBe(0);
  });

  it('a worker reply transfers only buffers its views own: planes in wasm memory are copied, never detached', async () => {
    const held = await evaluateTileHeld(await graph(), rect(0, 0, 64, 64));
    const memory = wasmKernels()!.arena.buffer;
    try {
      const { block, transfer } = transferable(held.block);
      expect(transfer).not.toContain(memory);
      expect(inWasmMemory(block)).toBe(false);
      const { port1, port2 } = new MessageChannel();
      const got = new Promise<PixelBlock>((res) => port2.once('message', (m: PixelBlock) => res(m)));
      port1.postMessage(block, transfer);
      const received = await got;
      port1.close();
      port2.close();
      expect(memory.byteLength).toBeGreaterThan(0); // not detached
      expect(firstDifference(received, ownMemory(held.block))).toBeUndefined();
      // A subarray of a bigger JS buffer is copied too (its transfer would detach the rest).
      const big = new Float32Array(64 * 64 * 2);
      const part: PixelBlock = { ...block, bands: [big.subarray(64 * 64)] };
      const t = transferable(part);
      expect(t.transfer).not.toContain(big.buffer);
    } finally {
      held.release();
    }
  });

  it('encoders read planes where they are (views at an offset of a shared buffer): the same bytes as from JS memory', async () => {
    const root = await graph({ rasterFunction: 'Hillshade' });
    const r = rect(0, 0, root.info.width, root.info.height);
    const held = await evaluateTileHeld(root, r);
    try {
      expect(inWasmMemory(held.block)).toBe(true);
      const own = ownMemory(held.block);
      const info = { ...root.info };
      for (const format of ['tiff', 'png', 'jpeg'] as const) {
        expect(Buffer.from(encodeAs(format, held.block, info)).equals(Buffer.from(encodeAs(format, own, info))), format).toBe(true);
      }
      // Band rows gathered from the tile (addRows), then one tile encoded from its own planes (writeDirect).
      const streamed = (b: PixelBlock, i: RasterInfo, size: number): Uint8Array => {
        const w = new TiffMemoryWriter(i, { compress: 'deflate', predictor: 2, tiled: true, blockWidth: size, blockHeight: size });
        w.write(b);
        return w.finish();
      };
      expect(Buffer.from(streamed(held.block, info, 128)).equals(Buffer.from(streamed(own, info, 128)))).toBe(true);
      const t = await evaluateTileHeld(root, rect(0, 0, 256, 256));
      try {
        const i = windowInfo(info, rect(0, 0, 256, 256));
        expect(Buffer.from(streamed(t.block, i, 256)).equals(Buffer.from(streamed(ownMemory(t.block), i, 256)))).toBe(true);
      } finally {
        t.release();
      }
    } finally {
      held.release();
    }
  });
});

describe('TileBlocks and the arena budget', () => {
  function fixedMemory(bytes: number): WasmMemory {
    const buffer = new ArrayBuffer(bytes);
    return {
      get buffer() {
        return buffer;
      },
      grow(): number {
        throw new Error('must not grow');
      },
    };
  }
  const kernelsWith = (arena: WasmArena): Kernels => ({ exports: {} as Kernels['exports'], arena });

  it('falls back to JS planes when the memory is full, and the block is the same as allocateBlock gives', () => {
    const arena = new WasmArena(fixedMemory(65536 + 4 * 4096), Infinity, { grow: false, base: 0 });
    const blocks = new TileBlocks(kernelsWith(arena));
    const a = blocks.allocate(rect(0, 0, 32, 32), 'F32', 3); // 4 KiB per band, 1 KiB mask: 4 blocks
    expect(a.bands.map((p) => p.buffer === arena.buffer)).toEqual([true, true, true]);
    expect(a.mask.buffer).toBe(arena.buffer);
    const b = blocks.allocate(rect(0, 0, 32, 32), 'F64', 1);
    expect(b.bands[0]!.buffer).not.toBe(arena.buffer);
    expect(b.bands[0]).toBeInstanceOf(Float64Array);
    for (const blk of [a, b]) {
      expect(blk.mask.every((v) => v === 1)).toBe(true);
      for (const p of blk.bands) expect(p.every((v) => v === 0)).toBe(true);
    }
    blocks.release();
    expect(arena.stats().liveBlocks).toBe(0);
    expect(() => blocks.allocate(rect(0, 0, 1, 1), 'U8', 1)).toThrow(/after release/);
  });

  it('recycled blocks come back zeroed (bands 0, mask 1), whatever the last tile left there', () => {
    const arena = new WasmArena(fixedMemory(1 << 20), Infinity, { grow: false, base: 0 });
    const k = kernelsWith(arena);
    const first = new TileBlocks(k);
    const a = first.allocate(rect(0, 0, 50, 50), 'S16', 2);
    a.bands[0]!.fill(-7);
    a.mask.fill(0);
    first.release();
    const second = new TileBlocks(k);
    const b = second.allocate(rect(0, 0, 50, 50), 'S16', 2);
    expect(sharesMemory(a.bands[0]!, b.bands[0]!) || sharesMemory(a.bands[0]!, b.bands[1]!)).toBe(true);
    expect(b.bands.every((p) => p.every((v) => v === 0))).toBe(true);
    expect(b.mask.every((v) => v === 1)).toBe(true);
    second.release();
  });

  it.runIf(wasmOn)("in the kernels' shared memory, fresh blocks are filled by one wasm memset each, and only their own bytes", () => {
    const real = wasmKernels()!;
    let fills = 0;
    const realFill = (real.exports as unknown as { readerFillBytes: (dst: number, value: number, n: number) => void }).readerFillBytes;
    const exports = {
      ...real.exports,
      readerFillBytes: (dst: number, value: number, n: number) => {
        fills++;
        realFill(dst, value, n);
      },
    } as unknown as Kernels['exports'];
    const k: Kernels = { exports, arena: real.arena };
    const first = new TileBlocks(k);
    const dirty = first.allocateUnfilled(rect(0, 0, 37, 29), 'F32', 2);
    for (const p of dirty.bands) p.fill(Number.NaN);
    dirty.mask.fill(9);
    first.release();
    const memory = new Uint8Array(real.arena.buffer);
    const second = new TileBlocks(k);
    const b = second.allocate(rect(0, 0, 37, 29), 'F32', 2);
    expect(fills).toBe(3);
    expect(b.bands.every((p) => p.buffer === real.arena.buffer && p.every((v) => v === 0))).toBe(true);
    expect(b.mask.buffer).toBe(real.arena.buffer);
    expect(b.mask.every((v) => v === 1)).toBe(true);
    // The byte just past each plane (a size class holds more) keeps what was there.
    const past = b.mask.byteOffset + b.mask.byteLength;
    memory[past] = 0xab;
    second.release();
    const third = new TileBlocks(k);
    third.allocate(rect(0, 0, 37, 29), 'F32', 2);
    expect(memory[past]).toBe(0xab);
    third.release();
  });

  it.runIf(wasmOn)('fillPlane equals TypedArray fill, in wasm memory or not, for every value and range', () => {
    const k = wasmKernels()!;
    const blocks = new TileBlocks(k);
    const cases: [Plane, number, number?, number?][] = [];
    const resident = blocks.allocateUnfilled(rect(0, 0, 19, 7), 'F32', 1).bands[0] as Float32Array;
    const mask = blocks.allocateUnfilled(rect(0, 0, 19, 7), 'U8', 1).mask;
    const s16 = blocks.allocateUnfilled(rect(0, 0, 19, 7), 'S16', 1).bands[0] as Int16Array;
    expect(resident.buffer).toBe(k.arena.buffer);
    for (const p of [resident, mask, s16, new Float64Array(133), new Uint8Array(133)] as Plane[]) {
      for (const v of [0, -0, 1, 255, -1, 2.5, Number.NaN]) cases.push([p, v], [p, v, 3, 40], [p, v, 50, 51], [p, v, 9, 9], [p, v, -5]);
    }
    for (const [p, v, start, end] of cases) {
      const expected = p.slice().fill(9).fill(v, start, end);
      p.fill(9);
      fillPlane(p, v, start, end);
      expect(Array.from(p).map((x) => (Object.is(x, -0) ? '-0' : x))).toEqual(
        Array.from(expected).map((x) => (Object.is(x, -0) ? '-0' : x)),
      );
    }
    blocks.release();
  });

  it('copyOf copies a plane of a shared memory into ordinary memory: same type, same values, own buffer', () => {
    const shared = new SharedArrayBuffer(4096);
    const p = new Float32Array(shared, 256, 100);
    p.forEach((_, i) => (p[i] = i - 50.5));
    const q = copyOf(p);
    expect(q).toBeInstanceOf(Float32Array);
    expect(q.buffer).toBeInstanceOf(ArrayBuffer);
    expect(q.byteOffset).toBe(0);
    expect(Array.from(q)).toEqual(Array.from(p));
    p[0] = 7;
    expect(q[0]).toBe(-50.5);
  });

  it('the arena refuses past its live budget (the evaluator then allocates JS planes)', () => {
    const arena = new WasmArena(fixedMemory(1 << 22), Infinity, { grow: false, base: 0 });
    const p = arena.alloc(1 << 20, 1 << 21)!;
    expect(p).toBeDefined();
    expect(arena.alloc(1 << 20, 1 << 21)).toBeDefined();
    expect(arena.alloc(4096, 1 << 21)).toBeUndefined();
    expect(arena.stats().liveBytes).toBe(1 << 21);
    expect(RESIDENT_BUDGET).toBeGreaterThan(16 * 2 ** 20);
  });

  it('compares memory by address range, not by buffer (every plane in wasm memory shares one buffer)', () => {
    const buf = new ArrayBuffer(1024);
    const a = new Float32Array(buf, 0, 16);
    const b = new Float32Array(buf, 64, 16);
    const c = new Uint8Array(buf, 60, 8);
    expect(a.buffer).toBe(b.buffer);
    expect(sharesMemory(a, b)).toBe(false);
    expect(sharesMemory(a, c)).toBe(true);
    expect(sharesMemory(b, c)).toBe(true);
    expect(sharesMemory(a, new Float32Array(16))).toBe(false);
  });
});

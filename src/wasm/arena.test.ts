import { describe, expect, it } from 'vitest';
import { prng } from '../../test/helpers.js';
import { WasmArena, type WasmMemory } from './arena.js';

/** A memory like WebAssembly.Memory's: pages of 64 KiB, grown by replacing the buffer. */
function fakeMemory(pages = 0, maxPages = 65536): WasmMemory & { grows: number } {
  let buffer = new ArrayBuffer(pages * 65536);
  return {
    grows: 0,
    get buffer() {
      return buffer;
    },
    grow(n: number): number {
      const old = buffer.byteLength / 65536;
      if (old + n > maxPages) throw new RangeError('WebAssembly.Memory.grow(): Maximum memory size exceeded');
      const next = new ArrayBuffer((old + n) * 65536);
      new Uint8Array(next).set(new Uint8Array(buffer));
      buffer = next;
      this.grows++;
      return old;
    },
  };
}

describe('WasmArena', () => {
  it('gives 16-byte aligned, non-overlapping blocks above address 0 and grows the memory as needed', () => {
    const mem = fakeMemory();
    const a = new WasmArena(mem);
    const p = a.alloc(100)!;
    const q = a.alloc(70000)!;
    expect(p).toBeGreaterThan(0);
    expect(p % 16).toBe(0);
    expect(q % 16).toBe(0);
    expect(q >= p + 100 || p >= q + 70000).toBe(true);
    expect(mem.buffer.byteLength).toBeGreaterThanOrEqual(q + 70000);
    expect(a.stats().liveBlocks).toBe(2);
  });

  it('recycles a released block of the same size class without growing', () => {
    const mem = fakeMemory();
    const a = new WasmArena(mem);
    const p = a.alloc(1 << 20)!;
    const q = a.alloc(1 << 20)!;
    a.release(p);
    const grows = mem.grows;
    expect(a.alloc((1 << 20) - 5)).toBe(p);
    expect(mem.grows).toBe(grows);
    a.release(q);
  });

  it('stays within twice the largest request when one block is held at a time, whatever the sizes', () => {
    const mem = fakeMemory();
    const a = new WasmArena(mem);
    const rnd = prng(7);
    let largest = 0;
    for (let i = 0; i < 2000; i++) {
      const bytes = 1 + Math.floor(rnd() ** 3 * 3e6);
      largest = Math.max(largest, bytes);
      const p = a.alloc(bytes)!;
      expect(p).toBeDefined();
      a.release(p);
      expect(a.stats().spanBytes).toBeLessThan(2 * Math.max(largest, 4096));
    }
    expect(a.stats().liveBlocks).toBe(0);
  });

  it('refuses past its limit or when the memory cannot grow (the caller then runs TypeScript)', () => {
    const a = new WasmArena(fakeMemory(0, 4), 1 << 20);
    expect(a.alloc(2 << 20)).toBeUndefined();
    expect(a.alloc(256 * 1024)).toBeUndefined(); // 64 KiB base + 256 KiB > 4 pages: grow fails
    expect(a.alloc(64 * 1024)).toBeDefined();
  });

  it('with grow: false never grows the memory (views on it stay attached): past its size it refuses', () => {
    const mem = fakeMemory(8);
    const a = new WasmArena(mem, Infinity, { grow: false, base: 0 });
    const before = mem.buffer;
    const view = new Float32Array(before, 65536, 4);
    const p = a.alloc(4 * 65536)!;
    expect(p).toBe(65536);
    expect(a.alloc(4 * 65536)).toBeUndefined(); // 64 KiB base + 2 x 256 KiB > 8 pages
    expect(a.alloc(2 * 65536)).toBeDefined();
    expect(mem.grows).toBe(0);
    expect(mem.buffer).toBe(before);
    expect(view.length).toBe(4);
    expect(a.stats().liveBytes).toBe(6 * 65536);
  });

  it('throws on a release of a block it did not give', () => {
    const a = new WasmArena(fakeMemory());
    const p = a.alloc(10)!;
    a.release(p);
    expect(() => a.release(p)).toThrow(/not allocated/);
  });
});

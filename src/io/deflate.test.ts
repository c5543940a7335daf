import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { deflateZlib, MAX_ZLEVEL, MIN_ZLEVEL } from './deflate.js';

/** Bytes that compress a little: a ramp with noise, and runs. */
function sample(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    out[i] = i % 97 < 40 ? 7 : (i >> 4) + (s % 5);
  }
  return out;
}

describe('deflateZlib (libdeflate)', () => {
  it('makes zlib streams node:zlib inflates back, at every level, for empty to multi-block inputs', () => {
    for (const n of [0, 1, 100, 65536, 300_001]) {
      const data = sample(n, n + 1);
      for (let level = MIN_ZLEVEL; level <= MAX_ZLEVEL; level++) {
        const z = deflateZlib(data, level);
        expect(z[0]! & 0x0f).toBe(8); // CM = deflate: a zlib header
        expect(Buffer.from(inflateSync(z)).equals(Buffer.from(data))).toBe(true);
      }
    }
  });

  it('is deterministic, smaller at higher levels, and leaves its input alone', () => {
    const data = sample(256 * 256, 3);
    const copy = data.slice();
    const a = deflateZlib(data, 1);
    expect(Buffer.from(deflateZlib(data, 1)).equals(Buffer.from(a))).toBe(true);
    expect(deflateZlib(data, 9).length).toBeLessThan(a.length);
    expect(Buffer.from(data).equals(Buffer.from(copy))).toBe(true);
    // The output owns its buffer (it may be transferred between threads).
    expect(a.byteOffset).toBe(0);
    expect(a.buffer.byteLength).toBe(a.length);
  });

  it('rejects a level outside 1-12', () => {
    expect(() => deflateZlib(new Uint8Array(8), 0)).toThrow(RangeError);
    expect(() => deflateZlib(new Uint8Array(8), 13)).toThrow(RangeError);
  });
});

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { deflateZlib, libdeflateModule, MAX_ZLEVEL, MIN_ZLEVEL, zlibCompressor } from './deflate.js';

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
    expect(() => deflateZlib(new Uint8Array(8), 1.5)).toThrow(/integer from 1 to 12, not 1.5/);
  });

  it('makes the bytes the npm package libdeflate@0.1.0 made (its own wrapper, a compressor per call)', () => {
    // SHA-256 of its zlib() output for these inputs, taken before the module was vendored.
    const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
    expect(sha(deflateZlib(sample(65536, 3), 1))).toBe('4b004fd64df745050b6048910a32bd5a87e7186037fc86f3aded46909cfe0dbe');
    expect(sha(deflateZlib(sample(300_001, 3), 6))).toBe('c782212d1affe30a438d531922bf8241144c1fd19861bff769e62e507e6f220f');
    expect(sha(deflateZlib(sample(65536, 3), 12))).toBe('66d9394403122b4acd6226654e3fd9bf432134a441bef4c4372a54a36f3980f9');
  });

  it('reuses one compressor per level: the same bytes on a fresh instance, level after level, and past heap growth', () => {
    const fresh = zlibCompressor(libdeflateModule());
    const inputs = [sample(1000, 1), sample(65536, 2), sample(1, 3)];
    for (let round = 0; round < 3; round++) {
      for (const level of [1, 6, 12, 1]) {
        for (const data of inputs) expect(Buffer.from(fresh(data, level)).equals(Buffer.from(deflateZlib(data, level)))).toBe(true);
      }
    }
    // 40 MB: more than the module's first heap, which its malloc grows to hold input and output.
    const big = sample(40_000_000, 9);
    const z = fresh(big, 1);
    expect(Buffer.from(inflateSync(z)).equals(Buffer.from(big))).toBe(true);
    expect(Buffer.from(fresh(inputs[1]!, 6)).equals(Buffer.from(deflateZlib(inputs[1]!, 6)))).toBe(true);
  });

  it('loads the vendored module, whose bytes are the recorded ones', () => {
    const wasm = readFileSync(new URL('../../vendor/libdeflate/libdeflate.wasm', import.meta.url));
    expect(createHash('sha256').update(wasm).digest('hex')).toBe('b51248d7badf1084b1a92fd3640f94c0ed6017428fdddffbe0b308f503b36eb2');
    expect(libdeflateModule()).toBe(libdeflateModule());
  });
});

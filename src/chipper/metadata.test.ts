import { describe, expect, it } from 'vitest';
import { byteHistogram } from '../io/pixel-statistics.js';
import { momentsOf, momentsOfBands } from './metadata.js';
import { prng } from '../../test/helpers.js';

describe('momentsOf on U8 bands', () => {
  // The histogram path (Uint8Array) against the pixel loop (the same values in a Float64Array):
  // every figure equal bit for bit, whatever the mask, the length (tails of the 4-way unrolling)
  // and the spread of the values.
  it('gives the same bits as the pixel loop', () => {
    const next = prng(7);
    for (let round = 0; round < 40; round++) {
      const len = 1 + Math.floor(next() * 5000);
      const band = new Uint8Array(len);
      const spread = [2, 17, 256][round % 3]!;
      const base = Math.floor(next() * (256 - spread));
      for (let i = 0; i < len; i++) band[i] = base + Math.floor(next() * spread);
      const mask = new Uint8Array(len).fill(1);
      if (round % 2 === 1) for (let i = 0; i < len; i++) mask[i] = next() < 0.7 ? 1 : 0;
      if (round === 5) mask.fill(0);
      const a = momentsOf(band, mask);
      const b = momentsOf(Float64Array.from(band), mask);
      expect(a).toEqual(b);
      for (const k of ['min', 'max', 'm1', 'm2', 'num'] as const) expect(Object.is(a[k], b[k])).toBe(true);
    }
  });

  it('momentsOfBands: each band the bits of momentsOf, for 1 to 9 bands (groups of four side by side), masks and other types', () => {
    const next = prng(11);
    for (let round = 0; round < 36; round++) {
      const len = 1 + Math.floor(next() * 3000);
      const count = 1 + (round % 9);
      const bands: ArrayLike<number>[] = [];
      for (let b = 0; b < count; b++) {
        // Some bands start off a 4-byte boundary (the word-at-a-time loops do not take them).
        const band = round % 5 === 4 ? new Uint8Array(len + 1).subarray(1) : new Uint8Array(len);
        const spread = [3, 60, 256][(round + b) % 3]!;
        for (let i = 0; i < len; i++) band[i] = Math.floor(next() * spread);
        // A band of another type between the bytes takes momentsOf's own loop.
        bands.push(round % 4 === 3 && b === 1 ? Float32Array.from(band) : band);
      }
      const mask = new Uint8Array(len).fill(1);
      if (round % 3 === 1) for (let i = 0; i < len; i++) mask[i] = next() < 0.6 ? 1 : 0;
      if (round % 12 === 5) mask.fill(0);
      const all = momentsOfBands(bands, mask);
      expect(all.length).toBe(count);
      // The mask's validity and the byte bands' histograms given by the caller: the same figures.
      const given = bands.map((b) => (b instanceof Uint8Array ? byteHistogram(b, mask) : undefined));
      expect(
        momentsOfBands(
          bands,
          mask,
          given,
          mask.every((v) => v === 1),
        ),
      ).toEqual(all);
      bands.forEach((band, b) => {
        const one = momentsOf(band, mask);
        for (const k of ['min', 'max', 'm1', 'm2', 'num'] as const) expect(Object.is(all[b]![k], one[k]), `band ${b} ${k}`).toBe(true);
        expect(one).toEqual(momentsOf(Float64Array.from(band), mask));
      });
    }
  });

  it('a band without a valid pixel has empty moments', () => {
    expect(momentsOf(new Uint8Array([1, 2, 3]), new Uint8Array(3))).toEqual({ min: Infinity, max: -Infinity, m1: 0, m2: 0, num: 0 });
  });
});

import { describe, expect, it } from 'vitest';
import { prng } from '../../test/helpers.js';
import { horizontalPredictor } from './decoders.js';

/** Predictor 2 undone the plain way: each word plus the word `stride` words before it, in place. */
function reference(b: Uint8Array, width: number, height: number, stride: number): void {
  const n = width * stride;
  for (let r = 0; r < height; r++) for (let i = r * n + stride; i < (r + 1) * n; i++) b[i] = b[i]! + b[i - stride]!;
}

describe('horizontalPredictor on bytes', () => {
  it('gives the bytes of the plain loop for one plane and for interleaved samples, at any width', () => {
    const next = prng(21);
    for (let round = 0; round < 60; round++) {
      const stride = [1, 1, 3, 4, 2][round % 5]!;
      const width = 1 + Math.floor(next() * 70); // tails of every length past the steps of four
      const height = 1 + Math.floor(next() * 5);
      const spread = [256, 7, 1][round % 3]!;
      const raw = new Uint8Array(width * stride * height + 3); // bytes after the block stay as they are
      for (let i = 0; i < raw.length; i++) raw[i] = Math.floor(next() * spread);
      const a = raw.slice();
      const b = raw.slice();
      horizontalPredictor(a, width, height, stride, 1);
      reference(b, width, height, stride);
      expect(a).toEqual(b);
    }
  });

  it('a row of 512 bytes wraps modulo 256 as the TIFF predictor does', () => {
    const row = new Uint8Array(512).fill(255);
    horizontalPredictor(row, 512, 1, 1, 1);
    for (let i = 0; i < 512; i++) expect(row[i]).toBe((255 * (i + 1)) & 255);
  });
});

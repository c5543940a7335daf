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
      // Widths of whole words take the 32-bit loop; some blocks start off a word boundary.
      const w = round % 4 === 0 ? 4 * Math.ceil(width / 4) : width;
      const skew = round % 7 === 3 ? 1 : 0;
      const raw = new Uint8Array(skew + w * stride * height + 3).subarray(skew); // bytes after the block stay as they are
      for (let i = 0; i < raw.length; i++) raw[i] = Math.floor(next() * spread);
      const a = raw.slice();
      const b = raw.slice();
      horizontalPredictor(a, w, height, stride, 1);
      reference(b, w, height, stride);
      expect(a).toEqual(b);
    }
  });

  it('rows of 512 and 514 bytes wrap modulo 256 as the TIFF predictor does', () => {
    for (const n of [512, 514]) {
      const rows = new Uint8Array(2 * n).fill(255);
      horizontalPredictor(rows, n, 2, 1, 1);
      for (let i = 0; i < 2 * n; i++) expect(rows[i]).toBe((255 * ((i % n) + 1)) & 255);
    }
  });
});

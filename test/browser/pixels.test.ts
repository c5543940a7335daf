/** The browser test's pixel measures tell a blank or flat image from relief, and one relief from another. */
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { correlation, greyOf, spreadOf } from './pixels.js';

function png(width: number, height: number, rgba: (x: number, y: number) => [number, number, number, number]): Buffer {
  const img = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) img.data.set(rgba(x, y), 4 * (y * width + x));
  }
  return PNG.sync.write(img);
}

const relief = (x: number, y: number): number => Math.round(128 + 100 * Math.sin(x / 7) * Math.cos(y / 11));
/** Deterministic noise 0..255 (an integer hash of the position). */
const noise = (x: number, y: number): number => (Math.imul(x * 73856093 + 1, 0x9e3779b1) ^ Math.imul(y + 7, 0x85ebca6b)) >>> 24;

describe('browser test pixel measures', () => {
  it('a transparent image is blank: one level, no spread, all white', () => {
    const s = spreadOf(greyOf(png(32, 32, () => [0, 0, 0, 0])));
    expect(s).toEqual({ levels: 1, mean: 255, stdDev: 0, blankShare: 1 });
  });

  it('relief has many grey levels and a spread; colour is counted', () => {
    const g = greyOf(png(64, 64, (x, y) => [relief(x, y), relief(x, y), relief(x, y), 255]));
    const s = spreadOf(g);
    expect(s.levels).toBeGreaterThan(150);
    expect(s.stdDev).toBeGreaterThan(40);
    expect(s.blankShare).toBe(0);
    expect(g.colouredShare).toBe(0);
    expect(greyOf(png(4, 4, () => [255, 0, 0, 255])).colouredShare).toBe(1);
  });

  it('correlation: 1 with itself, -1 with its negative, about 0 with noise, and sizes must match', () => {
    const a = greyOf(png(64, 64, (x, y) => [relief(x, y), relief(x, y), relief(x, y), 255]));
    const neg = greyOf(png(64, 64, (x, y) => [255 - relief(x, y), 255 - relief(x, y), 255 - relief(x, y), 255]));
    const other = greyOf(png(64, 64, (x, y) => [noise(x, y), noise(x, y), noise(x, y), 255]));
    expect(correlation(a, a)).toBeCloseTo(1, 10);
    expect(correlation(a, neg)).toBeCloseTo(-1, 10);
    expect(Math.abs(correlation(a, other))).toBeLessThan(0.3);
    expect(() => correlation(a, greyOf(png(8, 8, () => [0, 0, 0, 255])))).toThrow(/sizes differ/);
  });
});

/** JPEG encoder: decoded back with jpeg-js; values within JPEG loss, masked pixels black. */
import jpeg from 'jpeg-js';
import { describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, type PixelType } from '../core/pixel-type.js';
import { encodeJpeg } from './encode-jpeg.js';

function flatBlock(t: PixelType, width: number, height: number, values: number[], mask?: (x: number, y: number) => number): PixelBlock {
  const n = width * height;
  const bands = values.map((v) => allocatePlane(t, n).fill(v));
  const m = new Uint8Array(n);
  for (let i = 0; i < n; i++) m[i] = mask ? mask(i % width, Math.floor(i / width)) : 1;
  return { rect: { x: 0, y: 0, width, height }, pixelType: t, bands, mask: m };
}

const infoOf = (b: PixelBlock): RasterInfo => ({
  width: b.rect.width,
  height: b.rect.height,
  bandCount: b.bands.length,
  pixelType: b.pixelType,
  extent: { xmin: 0, ymin: 0, xmax: 1, ymax: 1 },
  cellSize: { x: 1, y: 1 },
});

describe('encodeJpeg', () => {
  it('3 bands U8 decode to the same colour (within 2 levels)', () => {
    const b = flatBlock('U8', 16, 16, [200, 100, 50]);
    const d = jpeg.decode(encodeJpeg(b, infoOf(b), { quality: 95 }), { useTArray: true });
    expect([d.width, d.height]).toEqual([16, 16]);
    for (let i = 0; i < 256; i++) {
      expect(Math.abs(d.data[4 * i]! - 200)).toBeLessThanOrEqual(2);
      expect(Math.abs(d.data[4 * i + 1]! - 100)).toBeLessThanOrEqual(2);
      expect(Math.abs(d.data[4 * i + 2]! - 50)).toBeLessThanOrEqual(2);
    }
  });

  it('1 band U8 decodes to grey; masked pixels (a whole 8x8 block here) are black', () => {
    const b = flatBlock('U8', 16, 8, [180], (x) => (x < 8 ? 0 : 1));
    const d = jpeg.decode(encodeJpeg(b, infoOf(b)), { useTArray: true });
    for (let y = 0; y < 8; y++) {
      for (let x = 0; x < 16; x++) {
        const [r, g, bl] = d.data.subarray(4 * (y * 16 + x), 4 * (y * 16 + x) + 3);
        expect(Math.abs(r! - g!)).toBeLessThanOrEqual(1);
        expect(Math.abs(g! - bl!)).toBeLessThanOrEqual(1);
        if (x < 6) expect(r).toBeLessThanOrEqual(3);
        if (x > 9) expect(Math.abs(r! - 180)).toBeLessThanOrEqual(3);
      }
    }
  });

  it('1 band U8 is a one-component (greyscale) JPEG; a gradient of odd size decodes within JPEG loss', () => {
    const w = 37;
    const h = 21;
    const b = flatBlock('U8', w, h, [0]);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) b.bands[0]![y * w + x] = Math.round((255 * (x + y)) / (w + h - 2));
    const bytes = encodeJpeg(b, infoOf(b), { quality: 95 });
    // SOF0: the component count follows precision, height and width.
    const sof = bytes.findIndex((v, i) => v === 0xff && bytes[i + 1] === 0xc0);
    expect(sof).toBeGreaterThan(0);
    expect(bytes[sof + 9]).toBe(1);
    const d = jpeg.decode(bytes, { useTArray: true });
    expect([d.width, d.height]).toEqual([w, h]);
    for (let i = 0; i < w * h; i++) expect(Math.abs(d.data[4 * i]! - b.bands[0]![i]!), `pixel ${i}`).toBeLessThanOrEqual(4);
  });

  it('a single band with a colormap is expanded to RGB (any pixel type); unmapped and alpha-0 values are black', () => {
    // Left 8 columns value 3 (colour 200, 30, 120), right 8 columns value -2 (alpha 0), bottom 8 rows 9 (no entry).
    const b = flatBlock('S16', 16, 16, [0]);
    for (let y = 0; y < 16; y++) for (let x = 0; x < 16; x++) b.bands[0]![y * 16 + x] = y >= 8 ? 9 : x < 8 ? 3 : -2;
    const colormap = { values: Float64Array.of(-2, 3), rgb: Uint8Array.of(255, 255, 255, 200, 30, 120), alpha: Uint8Array.of(0, 255) };
    const d = jpeg.decode(encodeJpeg(b, { ...infoOf(b), colormap }, { quality: 95 }), { useTArray: true });
    const px = (x: number, y: number) => Array.from(d.data.subarray(4 * (y * 16 + x), 4 * (y * 16 + x) + 3));
    for (const [x, y, want] of [
      [2, 2, [200, 30, 120]],
      [13, 2, [0, 0, 0]],
      [5, 13, [0, 0, 0]],
    ] as const) {
      px(x, y).forEach((v, c) => expect(Math.abs(v - want[c]!), `(${x}, ${y}) channel ${c}`).toBeLessThanOrEqual(4));
    }
  });

  it('quality changes the size', () => {
    const b = flatBlock('U8', 64, 64, [0]);
    for (let i = 0; i < 64 * 64; i++) b.bands[0]![i] = (i * 37) % 251;
    expect(encodeJpeg(b, infoOf(b), { quality: 20 }).length).toBeLessThan(encodeJpeg(b, infoOf(b), { quality: 95 }).length);
  });

  it('other types, band counts and qualities are refused', () => {
    const f = flatBlock('U16', 2, 2, [1]);
    expect(() => encodeJpeg(f, infoOf(f))).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_INPUT', path: 'outputPixelType' }));
    const two = flatBlock('U8', 2, 2, [1, 2]);
    expect(() => encodeJpeg(two, infoOf(two))).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_INPUT', path: 'output' }));
    const ok = flatBlock('U8', 2, 2, [1]);
    expect(() => encodeJpeg(ok, infoOf(ok), { quality: 0 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'quality' }),
    );
  });
});

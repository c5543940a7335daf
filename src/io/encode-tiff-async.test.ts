/**
 * encodeGeoTiffAsync (blocks deflated on the codec threads) gives encodeGeoTiff's bytes: masked
 * and unmasked blocks, several tiles, byte, 16-bit and float pixels; the block is free to change
 * as soon as the call returns.
 */
import { describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, type PixelType } from '../core/pixel-type.js';
import { codecThreadCount } from './codec-pool.js';
import { encodeGeoTiff, encodeGeoTiffAsync } from './encode-tiff.js';

function blockOf(t: PixelType, w: number, h: number, bands: number, masked: boolean): { block: PixelBlock; info: RasterInfo } {
  const planes = Array.from({ length: bands }, (_, b) => {
    const p = allocatePlane(t, w * h);
    let s = 3 + b;
    for (let i = 0; i < p.length; i++) {
      s = (s * 1103515245 + 12345) >>> 0;
      p[i] = ((i % w) + b * 40 + (s % 9)) % 250;
    }
    return p;
  });
  const mask = new Uint8Array(w * h).fill(1);
  if (masked) for (let i = 0; i < mask.length; i += 7) mask[i] = 0;
  const info: RasterInfo = {
    width: w,
    height: h,
    bandCount: bands,
    pixelType: t,
    extent: { xmin: 500000, ymin: 4000000 - h * 30, xmax: 500000 + w * 30, ymax: 4000000 },
    cellSize: { x: 30, y: 30 },
    spatialReference: { wkid: 32616 },
  };
  return { block: { rect: { x: 0, y: 0, width: w, height: h }, pixelType: t, bands: planes, mask }, info };
}

describe('encodeGeoTiffAsync', () => {
  for (const [t, w, h, bands, masked] of [
    ['U8', 256, 256, 3, false],
    ['U8', 256, 256, 3, true],
    ['U8', 600, 300, 1, true],
    ['U16', 300, 520, 2, false],
    ['F32', 256, 256, 2, true],
  ] as const) {
    it(`${t} ${w}x${h}, ${bands} band(s)${masked ? ', masked pixels' : ''}: encodeGeoTiff's bytes`, async () => {
      const { block, info } = blockOf(t, w, h, bands, masked);
      const expected = encodeGeoTiff(block, info);
      const before = block.bands.map((p) => p.slice());
      const pending = encodeGeoTiffAsync(block, info);
      // The block is the caller's again at once: changing it does not change the file.
      for (const p of block.bands) p.fill(0);
      const got = await pending;
      expect(Buffer.compare(Buffer.from(got), Buffer.from(expected))).toBe(0);
      for (let b = 0; b < bands; b++) block.bands[b]!.set(before[b]!);
    });
  }

  it('ran on the codec threads where they run', async () => {
    const { block, info } = blockOf('U8', 256, 256, 3, false);
    await encodeGeoTiffAsync(block, info);
    if (process.env.RASTERFLOW_CODEC_THREADS !== '0') expect(codecThreadCount()).toBeGreaterThan(0);
  });
});

/** PNG encoder: decoded back with pngjs, values, bit depth, colour type and alpha from the mask. */
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, type PixelType } from '../core/pixel-type.js';
import { encodePng } from './encode-png.js';

function blockOf(t: PixelType, width: number, height: number, bands: number[][], mask?: number[]): PixelBlock {
  return {
    rect: { x: 0, y: 0, width, height },
    pixelType: t,
    bands: bands.map((values) => {
      const p = allocatePlane(t, width * height);
      values.forEach((v, i) => (p[i] = v));
      return p;
    }),
    mask: Uint8Array.from(mask ?? new Array<number>(width * height).fill(1)),
  };
}

const infoOf = (b: PixelBlock): RasterInfo => ({
  width: b.rect.width,
  height: b.rect.height,
  bandCount: b.bands.length,
  pixelType: b.pixelType,
  extent: { xmin: 0, ymin: 0, xmax: b.rect.width, ymax: b.rect.height },
  cellSize: { x: 1, y: 1 },
});

/** Decode with pngjs (which expands to RGBA, 8 or 16 bits) and report the header fields too. */
function decode(bytes: Uint8Array, keep16 = false) {
  const png = PNG.sync.read(Buffer.from(bytes), { skipRescale: keep16 });
  return { width: png.width, height: png.height, colorType: png.colorType, depth: png.depth, alpha: png.alpha, data: png.data };
}

const rgba = (d: { data: Buffer }, i: number): number[] => Array.from(d.data.subarray(4 * i, 4 * i + 4));

describe('encodePng', () => {
  it('1 band U8 without masked pixels: opaque grey', () => {
    const b = blockOf('U8', 3, 2, [[0, 10, 20, 200, 254, 255]]);
    const d = decode(encodePng(b, infoOf(b)));
    expect(d).toMatchObject({ width: 3, height: 2, colorType: 0, depth: 8, alpha: false });
    expect([0, 1, 2, 3, 4, 5].map((i) => rgba(d, i))).toEqual([0, 10, 20, 200, 254, 255].map((v) => [v, v, v, 255]));
  });

  it('1 band U8 with masked pixels: grey + alpha, alpha 0 where masked', () => {
    const b = blockOf('U8', 2, 2, [[5, 6, 7, 8]], [1, 0, 1, 0]);
    const d = decode(encodePng(b, infoOf(b)));
    expect(d).toMatchObject({ colorType: 4, alpha: true });
    expect([0, 1, 2, 3].map((i) => rgba(d, i))).toEqual([[5, 5, 5, 255], [0, 0, 0, 0], [7, 7, 7, 255], [0, 0, 0, 0]]);
  });

  it('3 bands U8: RGB, becoming RGBA when a pixel is masked', () => {
    const b = blockOf('U8', 2, 1, [[1, 2], [3, 4], [5, 6]]);
    const opaque = decode(encodePng(b, infoOf(b)));
    expect(opaque).toMatchObject({ colorType: 2, alpha: false });
    expect([rgba(opaque, 0), rgba(opaque, 1)]).toEqual([[1, 3, 5, 255], [2, 4, 6, 255]]);
    const m = blockOf('U8', 2, 1, [[1, 2], [3, 4], [5, 6]], [0, 1]);
    const t = decode(encodePng(m, infoOf(m)));
    expect(t).toMatchObject({ colorType: 6, alpha: true });
    expect([rgba(t, 0), rgba(t, 1)]).toEqual([[0, 0, 0, 0], [2, 4, 6, 255]]);
  });

  it('2 and 4 bands: the last band is the alpha, and the mask still clears it', () => {
    const ga = blockOf('U8', 3, 1, [[9, 8, 7], [255, 128, 255]], [1, 1, 0]);
    const d2 = decode(encodePng(ga, infoOf(ga)));
    expect(d2.colorType).toBe(4);
    expect([0, 1, 2].map((i) => rgba(d2, i))).toEqual([[9, 9, 9, 255], [8, 8, 8, 128], [0, 0, 0, 0]]);
    const c = blockOf('U8', 1, 1, [[10], [20], [30], [40]]);
    const d4 = decode(encodePng(c, infoOf(c)));
    expect(d4.colorType).toBe(6);
    expect(rgba(d4, 0)).toEqual([10, 20, 30, 40]);
  });

  it('U16 is written with 16-bit samples', () => {
    const b = blockOf('U16', 4, 1, [[0, 1, 4660, 65535]], [1, 1, 1, 0]);
    const d = decode(encodePng(b, infoOf(b)), true);
    expect(d).toMatchObject({ depth: 16, colorType: 4 });
    // pngjs keeps 16-bit samples in a Uint16Array-like RGBA array when skipRescale is set
    const values = Array.from(d.data as unknown as ArrayLike<number>);
    expect(values.slice(0, 16)).toEqual([0, 0, 0, 65535, 1, 1, 1, 65535, 4660, 4660, 4660, 65535, 0, 0, 0, 0]);
  });

  it('U1/U2/U4 are written as unscaled 8-bit values', () => {
    const b = blockOf('U4', 3, 1, [[0, 7, 15]]);
    const d = decode(encodePng(b, infoOf(b)));
    expect(d.depth).toBe(8);
    expect([0, 1, 2].map((i) => rgba(d, i)[0])).toEqual([0, 7, 15]);
  });

  it('other pixel types and band counts are UNSUPPORTED_INPUT', () => {
    for (const t of ['S8', 'S16', 'U32', 'F32', 'F64', 'C64'] as const) {
      const b = blockOf(t, 1, 1, [[1]]);
      expect(() => encodePng(b, infoOf(b)), t).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_INPUT', path: 'outputPixelType', message: expect.stringMatching(/U8.*Stretch/) }));
    }
    const five = blockOf('U8', 1, 1, [[1], [2], [3], [4], [5]]);
    expect(() => encodePng(five, infoOf(five))).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_INPUT' }));
  });
});

/** encodeByExtension picks the encoder from the output path; unknown extensions are refused. */
import { describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { encodeByExtension, formatOfPath } from './encode.js';

const block: PixelBlock = {
  rect: { x: 0, y: 0, width: 2, height: 2 },
  pixelType: 'U8',
  bands: [Uint8Array.of(1, 2, 3, 4)],
  mask: Uint8Array.of(1, 1, 1, 1),
};
const info: RasterInfo = {
  width: 2,
  height: 2,
  bandCount: 1,
  pixelType: 'U8',
  extent: { xmin: 0, ymin: 0, xmax: 2, ymax: 2 },
  cellSize: { x: 1, y: 1 },
};

describe('encodeByExtension', () => {
  it('chooses by extension, case-insensitively', () => {
    expect(formatOfPath('out/a.TIF')).toBe('tiff');
    expect(formatOfPath('a.tiff')).toBe('tiff');
    expect(formatOfPath('a.png')).toBe('png');
    expect(formatOfPath('a.JPG')).toBe('jpeg');
    expect(formatOfPath('a.b.jpeg')).toBe('jpeg');
  });

  it('writes the right magic bytes', () => {
    expect(Array.from(encodeByExtension('x.tif', block, info).subarray(0, 4))).toEqual([0x49, 0x49, 42, 0]);
    expect(Array.from(encodeByExtension('x.png', block, info).subarray(0, 4))).toEqual([0x89, 0x50, 0x4e, 0x47]);
    expect(Array.from(encodeByExtension('x.jpg', block, info, { quality: 80 }).subarray(0, 2))).toEqual([0xff, 0xd8]);
  });

  it('an unknown or missing extension is INVALID_ARGUMENT at output', () => {
    for (const p of ['x.mrf', 'x', 'dir.tif/file', 'x.gif']) {
      expect(() => encodeByExtension(p, block, info), p).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'output' }));
    }
  });
});

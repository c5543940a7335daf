/**
 * PNG row filters: every `filter` choice (the one-pass writer for 'none'/'up' on 8 bits, pngjs
 * for the others and 16 bits) decodes to the same pixels as the adaptive default, for grey, grey
 * + alpha (masked pixels), RGB, RGBA, a colormap and 16-bit samples; the one-pass writer marks
 * each row with its filter byte.
 */
import { inflateSync } from 'node:zlib';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, type PixelType } from '../core/pixel-type.js';
import { prng } from '../../test/helpers.js';
import { encodePng, type PngOptions } from './encode-png.js';

function randomBlock(t: PixelType, w: number, h: number, nb: number, holes: boolean, seed: number): PixelBlock {
  const rnd = prng(seed);
  const max = t === 'U16' ? 65535 : 255;
  const bands = Array.from({ length: nb }, () => {
    const p = allocatePlane(t, w * h);
    // Smooth with noise, so the filters matter.
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) p[y * w + x] = Math.min(max, Math.floor(((x + y) * max) / (w + h) + rnd() * 9));
    return p;
  });
  const mask = new Uint8Array(w * h).fill(1);
  if (holes) for (let i = 0; i < mask.length; i++) if (rnd() < 0.1) mask[i] = 0;
  return { rect: { x: 0, y: 0, width: w, height: h }, pixelType: t, bands, mask };
}

const infoOf = (b: PixelBlock, extra: Partial<RasterInfo> = {}): RasterInfo => ({
  width: b.rect.width,
  height: b.rect.height,
  bandCount: b.bands.length,
  pixelType: b.pixelType,
  extent: { xmin: 0, ymin: 0, xmax: b.rect.width, ymax: b.rect.height },
  cellSize: { x: 1, y: 1 },
  ...extra,
});

const FILTERS: NonNullable<PngOptions['filter']>[] = ['none', 'sub', 'up', 'average', 'paeth'];

/** Filter byte of each row of an 8-bit PNG (IDAT inflated). */
function rowFilters(png: Uint8Array, rowBytes: number): number[] {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const idat: Uint8Array[] = [];
  for (let o = 8; o < png.length;) {
    const len = view.getUint32(o);
    const type = String.fromCharCode(...png.subarray(o + 4, o + 8));
    if (type === 'IDAT') idat.push(png.subarray(o + 8, o + 8 + len));
    o += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const rows: number[] = [];
  for (let o = 0; o < raw.length; o += rowBytes + 1) rows.push(raw[o]!);
  return rows;
}

describe('PNG row filters', () => {
  const cases: [string, PixelBlock, Partial<RasterInfo>][] = [
    ['grey', randomBlock('U8', 37, 23, 1, false, 1), {}],
    ['grey + alpha (masked)', randomBlock('U8', 37, 23, 1, true, 2), {}],
    ['RGB', randomBlock('U8', 19, 31, 3, false, 3), {}],
    ['RGBA (masked RGB)', randomBlock('U8', 19, 31, 3, true, 4), {}],
    ['grey + alpha band', randomBlock('U8', 16, 16, 2, false, 5), {}],
    ['16-bit grey', randomBlock('U16', 21, 13, 1, true, 6), {}],
    [
      'colormap',
      randomBlock('U8', 25, 9, 1, true, 7),
      {
        colormap: {
          values: Float64Array.from({ length: 200 }, (_, v) => v),
          rgb: Uint8Array.from({ length: 600 }, (_, i) => (i * 37) % 256),
        },
      },
    ],
  ];
  for (const [name, block, extra] of cases) {
    it(`${name}: every filter decodes to the adaptive default's pixels`, () => {
      const info = infoOf(block, extra);
      const reference = PNG.sync.read(Buffer.from(encodePng(block, info)));
      for (const filter of FILTERS) {
        for (const deflateLevel of [1, 6]) {
          const bytes = encodePng(block, info, { filter, deflateLevel });
          const png = PNG.sync.read(Buffer.from(bytes));
          expect([png.width, png.height, png.depth, png.colorType]).toEqual([
            reference.width,
            reference.height,
            reference.depth,
            reference.colorType,
          ]);
          expect(Buffer.compare(png.data, reference.data)).toBe(0);
        }
      }
    });
  }

  it("the one-pass writer: 'up' on every row (the first row's 'up' is its own bytes), 'none' on every row", () => {
    const block = randomBlock('U8', 40, 12, 1, true, 8);
    const info = infoOf(block);
    expect(rowFilters(encodePng(block, info, { filter: 'up' }), 80)).toEqual(new Array<number>(12).fill(2));
    expect(rowFilters(encodePng(block, info, { filter: 'none' }), 80)).toEqual(new Array<number>(12).fill(0));
    // The adaptive default does use other filters on this data.
    expect(new Set(rowFilters(encodePng(block, info), 80)).size).toBeGreaterThan(1);
  });
});

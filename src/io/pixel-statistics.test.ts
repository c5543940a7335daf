import { describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { encodeGeoTiff } from './encode-tiff.js';
import { byteHistogram, PixelStatistics, type ByteHistograms } from './pixel-statistics.js';
import { prng } from '../../test/helpers.js';

describe('PixelStatistics byte histogram path', () => {
  // The U8/S8 histogram path against the pixel-by-pixel loop (taken for the same values in a
  // Float64Array plane): equal bit for bit, over windows, strides, masks, NoData and NBITS.
  const cases: { type: 'U8' | 'S8'; noData?: number; bits?: number }[] = [
    { type: 'U8' },
    { type: 'U8', noData: 0 },
    { type: 'U8', noData: 200 },
    { type: 'U8', bits: 5 },
    { type: 'U8', bits: 5, noData: 31 },
    { type: 'S8' },
    { type: 'S8', noData: -128 },
    { type: 'S8', noData: 7 },
  ];
  for (const c of cases) {
    it(`${c.type} noData=${c.noData} bits=${c.bits}: the same figures as the pixel loop`, () => {
      const next = prng(17 + (c.noData ?? 0) + (c.bits ?? 0) * 1000 + (c.type === 'S8' ? 99 : 0));
      const w = 37;
      const h = 23;
      const fast = new PixelStatistics(2, c.type, c.noData, c.bits);
      const slow = new PixelStatistics(2, c.type, c.noData, c.bits);
      for (let round = 0; round < 12; round++) {
        const bytes = c.type === 'U8' ? new Uint8Array(w * h) : new Int8Array(w * h);
        const narrow = round % 3 === 0; // few distinct values, so NoData and the ceiling occur often
        for (let i = 0; i < bytes.length; i++)
          bytes[i] = narrow ? Math.floor(next() * 8) * 37 - (c.type === 'S8' ? 128 : 0) : Math.floor(next() * 256);
        const mask = new Uint8Array(w * h);
        // Round 0: all masked (no shift yet); round 1: the first rows masked; then random masks.
        for (let i = 0; i < mask.length; i++) mask[i] = round === 0 ? 0 : round === 1 ? (i >= 5 * w ? 1 : 0) : next() < 0.8 ? 1 : 0;
        const as64 = Float64Array.from(bytes);
        // A window of the block: start, width and rows inside a stride of w.
        const x = round % 5;
        const y = round % 4;
        const ww = w - x - (round % 3);
        const rows = h - y - 1;
        fast.add([bytes, bytes], mask, y * w + x, ww, rows, w);
        slow.add([as64, as64], mask, y * w + x, ww, rows, w);
      }
      const a = fast.result(w * h * 12);
      const b = slow.result(w * h * 12);
      expect(a).toEqual(b);
      expect(a[0]).toBeDefined();
      for (let i = 0; i < 2; i++) {
        expect(Object.is(a[i]!.mean, b[i]!.mean) && Object.is(a[i]!.stdDev, b[i]!.stdDev)).toBe(true);
      }
    });
  }

  it('whole rows without a masked pixel (one loop over the window): the same figures as the pixel loop', () => {
    for (const c of cases) {
      const next = prng(5 + (c.noData ?? 0) + (c.bits ?? 0) * 1000 + (c.type === 'S8' ? 99 : 0));
      const fast = new PixelStatistics(1, c.type, c.noData, c.bits);
      const slow = new PixelStatistics(1, c.type, c.noData, c.bits);
      let pixels = 0;
      for (let round = 0; round < 8; round++) {
        const w = 1 + Math.floor(next() * 40); // widths past the steps of four
        const rows = 1 + Math.floor(next() * 6);
        const y = round % 3;
        const bytes = c.type === 'U8' ? new Uint8Array(w * (rows + 3)) : new Int8Array(w * (rows + 3));
        for (let i = 0; i < bytes.length; i++)
          bytes[i] = round % 2 ? Math.floor(next() * 8) * 37 - (c.type === 'S8' ? 128 : 0) : Math.floor(next() * 256);
        const mask = new Uint8Array(bytes.length).fill(1);
        mask[0] = round === 7 && y > 0 ? 0 : 1; // a masked pixel outside the window does not matter
        fast.add([bytes], mask, y * w, w, rows, w);
        slow.add([Float64Array.from(bytes)], mask, y * w, w, rows, w);
        pixels += w * rows;
      }
      const a = fast.result(pixels);
      const b = slow.result(pixels);
      expect(a).toEqual(b);
      expect(Object.is(a[0]?.mean, b[0]?.mean) && Object.is(a[0]?.stdDev, b[0]?.stdDev)).toBe(true);
    }
  });

  it('a band without a valid pixel has no statistics, as before', () => {
    const s = new PixelStatistics(1, 'U8', 0);
    s.add([new Uint8Array(16)], new Uint8Array(16).fill(1), 0, 4, 4, 4);
    expect(s.result(16)).toEqual([undefined]);
    expect(s.any).toBe(false);
  });

  it('known byte histograms: a whole plane at its index under the same mask takes the given histogram; other planes, indices, masks and windows are counted', () => {
    const next = prng(3);
    const plane = Uint8Array.from({ length: 64 }, () => Math.floor(next() * 256));
    const other = Uint8Array.from({ length: 64 }, () => Math.floor(next() * 256));
    const mask = new Uint8Array(64).fill(1);
    mask[5] = 0;
    type Figures = { min: number; max: number; count: number } | undefined;
    const stats = (planes: Uint8Array[], m: Uint8Array, known?: ByteHistograms, rows = 8, start = 0): Figures[] => {
      const s = new PixelStatistics(planes.length, 'U8', undefined);
      s.add(planes, m, start, 8, rows, 8, known);
      return s.result(64);
    };
    const counted = stats([plane], mask)[0];
    const right = byteHistogram(plane, mask);
    // The right histogram gives the figures counting gives; a wrong one shows it was taken.
    expect(stats([plane], mask, { planes: [plane], mask, histograms: [right] })[0]).toEqual(counted);
    const wrong = new Uint32Array(1024);
    wrong[plane[0]!] = 63;
    const given = (histograms: (Uint32Array | undefined)[], planes = [plane], m = mask): ByteHistograms => ({
      planes,
      mask: m,
      histograms,
    });
    const taken = stats([plane], mask, given([wrong]))[0]!;
    expect(taken.count).toBe(63);
    expect(taken.min).toBe(plane[0]);
    expect(stats([plane], mask, given([wrong], [plane], mask.slice()))[0]).toEqual(counted); // counted under another mask
    expect(stats([plane], mask.slice(), given([wrong]))[0]).toEqual(counted); // added under another mask
    expect(stats([plane], mask, given([wrong], [plane.slice()]))[0]).toEqual(counted); // of another plane
    expect(stats([plane], mask, given([undefined]))[0]).toEqual(counted); // not given
    expect(stats([plane], mask, given([wrong.subarray(0, 256)]))[0]).toEqual(counted); // not a byteHistogram
    // The plane at another band index than the histogram's: each band counted.
    const both = stats([other, plane], mask);
    expect(stats([other, plane], mask, given([wrong, undefined], [plane, other]))).toEqual(both);
    expect(stats([other, plane], mask, given([undefined, wrong], [other, plane]))[1]!.count).toBe(63);
    // Not the whole plane: fewer rows, or the window starting further on.
    expect(stats([plane], mask, given([wrong]), 7)[0]).toEqual(stats([plane], mask, undefined, 7)[0]);
    expect(stats([plane], mask, given([wrong]), 7, 8)[0]).toEqual(stats([plane], mask, undefined, 7, 8)[0]);
  });

  it('encodeGeoTiff: the right histograms give the same bytes; a mismatched histogram is not used', () => {
    const next = prng(11);
    const w = 64;
    const bands = [0, 1, 2].map(() => Uint8Array.from({ length: w * w }, () => Math.floor(next() * 256)));
    const mask = new Uint8Array(w * w).fill(1);
    for (let i = 0; i < 100; i++) mask[Math.floor(next() * w * w)] = 0;
    const block: PixelBlock = { rect: rect(0, 0, w, w), pixelType: 'U8', bands, mask };
    const info: RasterInfo = {
      width: w,
      height: w,
      bandCount: 3,
      pixelType: 'U8',
      extent: { xmin: 0, ymin: 0, xmax: w, ymax: w },
      cellSize: { x: 1, y: 1 },
      noData: 0,
    };
    const plain = encodeGeoTiff(block, info);
    const histograms = bands.map((b) => byteHistogram(b, mask));
    expect(encodeGeoTiff(block, info, { byteHistograms: { planes: bands, mask, histograms } })).toEqual(plain);
    const wrong = histograms.map(() => new Uint32Array(1024).fill(1));
    const wrongStats = encodeGeoTiff(block, info, { byteHistograms: { planes: bands, mask, histograms: wrong } });
    expect(wrongStats).not.toEqual(plain); // taken when it matches: the test can fail
    expect(encodeGeoTiff(block, info, { byteHistograms: { planes: bands, mask: mask.slice(), histograms: wrong } })).toEqual(plain);
    expect(encodeGeoTiff(block, info, { byteHistograms: { planes: [bands[1]!, bands[2]!, bands[0]!], mask, histograms: wrong } })).toEqual(
      plain,
    );
  });
});

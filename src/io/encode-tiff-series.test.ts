/**
 * GeoTiffSeries (the chipper's GeoTIFF encoder: tags built once per layout, each block patching
 * its tiepoint, statistics and block tags) gives encodeGeoTiff's bytes block by block: byte,
 * 16-bit, signed and float pixels, masked blocks with and without a NoData value (the latter
 * writes an internal mask: the general path), blocks that are not one TIFF block, compression off,
 * blocks at other positions of the grid, layouts alternating, histograms given and mismatched.
 */
import { describe, expect, it } from 'vitest';
import { windowInfo, type PixelBlock, type RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, type PixelType } from '../core/pixel-type.js';
import { rect } from '../core/rect.js';
import { encodeGeoTiff, GeoTiffSeries, type GeoTiffOptions } from './encode-tiff.js';
import { differenceInto } from './tiff-predictors.js';
import { byteHistogram } from './pixel-statistics.js';
import { horizontalDifference } from './tiff-predictors.js';
import { prng } from '../../test/helpers.js';

const RASTER: RasterInfo = {
  width: 4096,
  height: 4096,
  bandCount: 3,
  pixelType: 'U8',
  extent: { xmin: 500000, ymin: 4000000 - 4096 * 30, xmax: 500000 + 4096 * 30, ymax: 4000000 },
  cellSize: { x: 30, y: 30 },
  spatialReference: { wkid: 32616 },
  bandNames: ['red', 'green', 'blue'],
};

function chip(t: PixelType, w: number, h: number, bands: number, seed: number, masked: boolean): PixelBlock {
  const next = prng(seed);
  const planes = Array.from({ length: bands }, () => {
    const p = allocatePlane(t, w * h);
    for (let i = 0; i < p.length; i++) p[i] = t === 'F32' ? next() * 1000 - 500 : Math.floor(next() * 250) - (t.startsWith('S') ? 120 : 0);
    return p;
  });
  const mask = new Uint8Array(w * h).fill(1);
  if (masked) for (let i = 0; i < mask.length; i++) if (next() < 0.05) mask[i] = 0;
  return { rect: rect(0, 0, w, h), pixelType: t, bands: planes, mask };
}

/** The chip's own grid at window (x, y) of RASTER, as the chipper gives it. */
const gridAt = (x: number, y: number, b: PixelBlock, over: Partial<RasterInfo> = {}): RasterInfo => ({
  ...windowInfo({ ...RASTER, ...over }, rect(x, y, b.rect.width, b.rect.height)),
  bandCount: b.bands.length,
  pixelType: b.pixelType,
});

/** Whether two files are the same bytes (a plain comparison: toEqual on 200 KB arrays takes seconds). */
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);

describe('GeoTiffSeries', () => {
  const cases: { t: PixelType; w: number; bands: number; masked: boolean; noData?: number; options?: GeoTiffOptions; fast: boolean }[] = [
    { t: 'U8', w: 256, bands: 3, masked: false, fast: true },
    { t: 'U8', w: 256, bands: 3, masked: true, noData: 0, fast: true },
    { t: 'U8', w: 256, bands: 3, masked: true, fast: false }, // an internal mask to write
    { t: 'U8', w: 128, bands: 1, masked: false, fast: true },
    { t: 'U8', w: 100, bands: 2, masked: false, fast: false }, // not one TIFF block (112)
    { t: 'S8', w: 64, bands: 2, masked: true, noData: -1, fast: true },
    { t: 'U16', w: 256, bands: 2, masked: true, noData: 65535, fast: true },
    { t: 'S16', w: 48, bands: 1, masked: false, fast: true },
    { t: 'F32', w: 64, bands: 2, masked: true, fast: true },
    { t: 'U8', w: 64, bands: 3, masked: false, options: { compress: 'none' }, fast: true },
    { t: 'U8', w: 64, bands: 3, masked: true, noData: 7, options: { statistics: false, level: 6 }, fast: true },
  ];
  for (const c of cases) {
    it(`${c.t} ${c.w}² x${c.bands}${c.masked ? ' masked' : ''} noData=${c.noData} ${JSON.stringify(c.options ?? {})}: encodeGeoTiff's bytes`, async () => {
      const series = new GeoTiffSeries();
      const over = c.noData === undefined ? {} : { noData: c.noData };
      // Several blocks at several positions (their tiepoints and statistics differ).
      for (let k = 0; k < 4; k++) {
        const b = chip(c.t, c.w, c.w, c.bands, 100 * k + c.w, c.masked);
        const info = gridAt(256 * k, 512 * (k % 2), b, over);
        const before = series.fastBlocks;
        const got = await series.encode(b, info, c.options);
        expect(same(got, encodeGeoTiff(b, info, c.options))).toBe(true);
        expect(series.fastBlocks - before).toBe(c.fast ? 1 : 0);
      }
    });
  }

  it('layouts alternating (a chip, a label raster, a second image) each give their own bytes', async () => {
    const series = new GeoTiffSeries();
    for (let k = 0; k < 3; k++) {
      const image = chip('U8', 256, 256, 3, k, false);
      const label = chip('U8', 256, 256, 1, 50 + k, false);
      const image2 = chip('U16', 256, 256, 2, 90 + k, true);
      for (const [b, over] of [
        [image, {}],
        [label, { bandNames: undefined }],
        [image2, { noData: 0, cellSize: { x: 15, y: 15 } }],
      ] as const) {
        const info = gridAt(256 * k, 0, b, over);
        expect(same(await series.encode(b, info), encodeGeoTiff(b, info))).toBe(true);
      }
    }
    expect(series.fastBlocks).toBe(9);
  });

  it('the histograms given are used only for the block they were counted from', async () => {
    const series = new GeoTiffSeries();
    const b = chip('U8', 256, 256, 3, 5, true);
    const info = gridAt(0, 0, b, { noData: 0 });
    const plain = encodeGeoTiff(b, info);
    const histograms = b.bands.map((p) => byteHistogram(p as Uint8Array, b.mask));
    expect(same(await series.encode(b, info, { byteHistograms: { planes: b.bands, mask: b.mask, histograms } }), plain)).toBe(true);
    const wrong = histograms.map(() => new Uint32Array(1024).fill(3));
    // Taken when they match (the check below can fail) ...
    expect(same(await series.encode(b, info, { byteHistograms: { planes: b.bands, mask: b.mask, histograms: wrong } }), plain)).toBe(false);
    // ... and not for another mask, nor for planes at other band indices.
    expect(
      same(await series.encode(b, info, { byteHistograms: { planes: b.bands, mask: b.mask.slice(), histograms: wrong } }), plain),
    ).toBe(true);
    const rotated = [b.bands[1]!, b.bands[2]!, b.bands[0]!];
    expect(same(await series.encode(b, info, { byteHistograms: { planes: rotated, mask: b.mask, histograms: wrong } }), plain)).toBe(true);
  });

  it('the block is free once encode returns', async () => {
    const series = new GeoTiffSeries();
    const b = chip('U8', 256, 256, 3, 9, false);
    const info = gridAt(0, 0, b);
    const expected = encodeGeoTiff(b, info);
    const pending = series.encode(b, info);
    for (const p of b.bands) p.fill(0);
    expect(same(await pending, expected)).toBe(true);
  });

  it('differenceInto: horizontalDifference on a copy, rows of any number of words', () => {
    const next = prng(21);
    for (const [w, h] of [
      [4, 1],
      [8, 3],
      [256, 256],
      [60, 7],
    ] as const) {
      const src = Uint8Array.from({ length: w * h }, () => Math.floor(next() * 256));
      const copy = src.slice();
      horizontalDifference(copy, w, h);
      const out = new Uint8Array(w * h);
      differenceInto(new Int32Array(src.buffer), new Int32Array(out.buffer), w >> 2, h);
      expect(same(out, copy)).toBe(true);
    }
  });
});

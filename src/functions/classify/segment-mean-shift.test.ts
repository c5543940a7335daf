import { describe, expect, it } from 'vitest';
import type { PixelBlock } from '../../core/pixel-block.js';
import { roundHalfAway } from '../../core/pixel-type.js';
import type { SourceNode } from '../../graph/types.js';
import { applyFunction, catchError, gridInfo, prng, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { meanShiftSegments, segmentMeanShift, type SegmentMeanShiftParams } from './segment-mean-shift.js';
import { MAX_WHOLE_PIXELS } from './whole-image.js';

const rgb = (w: number, h: number, f: (x: number, y: number, b: number) => number, mask?: Uint8Array) =>
  rasterOf({ width: w, height: h, bandCount: 3, pixelType: 'U8' }, f, mask);
const pixel = (r: { value: (x: number, y: number, b?: number) => number }, x: number, y: number) => [0, 1, 2].map((b) => r.value(x, y, b));

/** Blocky test image: 6 x 6-pixel blocks of random colours plus +-6 noise (seeded). */
function blocky(w: number, h: number, seed: number): { bands: Uint8Array[]; mask: Uint8Array } {
  const rnd = prng(seed);
  const colours = Array.from({ length: 64 }, () => [rnd() * 200 + 20, rnd() * 200 + 20, rnd() * 200 + 20]);
  const bands = [0, 1, 2].map(() => new Uint8Array(w * h));
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const c = colours[(Math.floor(x / 6) * 7 + Math.floor(y / 6) * 3) % 64]!;
      for (let b = 0; b < 3; b++) bands[b]![y * w + x] = Math.round(c[b]! + (rnd() - 0.5) * 12);
    }
  }
  return { bands, mask: new Uint8Array(w * h).fill(1) };
}

describe('SegmentMeanShift: hand-derived small images', () => {
  const halves = (x: number) => (x < 4 ? 0 : 200);

  it('two flat halves far apart in colour are two segments keeping their colour', async () => {
    // Range radius 3 colour units < 200: no pixel's kernel reaches the other half, modes stay put.
    const r = await runFunction(segmentMeanShift, { SpectralRadius: 3, SpatialRadius: 2, MinNumPixelsPerSegment: 5 }, [rgb(8, 4, halves)]);
    expect(pixel(r, 0, 0)).toEqual([0, 0, 0]);
    expect(pixel(r, 7, 3)).toEqual([200, 200, 200]);
  });

  it('segments below MinNumPixelsPerSegment merge: 16 + 16 pixels < 20 -> one segment of mean 100', async () => {
    const r = await runFunction(segmentMeanShift, { SpectralRadius: 3, SpatialRadius: 2 }, [rgb(8, 4, halves)]);
    for (const [x, y] of [
      [0, 0],
      [7, 3],
      [3, 2],
    ] as const)
      expect(pixel(r, x, y)).toEqual([100, 100, 100]);
  });

  it('colours closer than the range radius link into one segment; a smaller radius keeps them apart', async () => {
    // 10 units apart per band (Euclidean 17.3): linked with hr = 21, apart with hr = 10 (colour units).
    const img = rgb(8, 4, (x) => (x < 4 ? 100 : 110));
    const wide = await runFunction(segmentMeanShift, { SpectralRadius: 21, SpatialRadius: 2, MinNumPixelsPerSegment: 5 }, [img]);
    expect(pixel(wide, 0, 0)).toEqual([105, 105, 105]);
    const narrow = await runFunction(segmentMeanShift, { SpectralRadius: 10, SpatialRadius: 2, MinNumPixelsPerSegment: 5 }, [img]);
    expect(pixel(narrow, 0, 0)).toEqual([100, 100, 100]);
    expect(pixel(narrow, 7, 0)).toEqual([110, 110, 110]);
  });

  it('a one-pixel outlier joins its surroundings; the colour is the rounded mean of the original pixels', async () => {
    // 99 pixels of 50 and one of 60: mean 50.1 -> 50.
    const r = await runFunction(segmentMeanShift, { SpectralRadius: 3, SpatialRadius: 3, MinNumPixelsPerSegment: 2 }, [
      rgb(10, 10, (x, y) => (x === 4 && y === 4 ? 60 : 50)),
    ]);
    expect(pixel(r, 4, 4)).toEqual([50, 50, 50]);
    // 3 x 3 pixels of 80 in 0 (mean 7.2) with min size 10 -> one segment; 720/100 = 7.2 -> 7.
    const r2 = await runFunction(segmentMeanShift, { SpectralRadius: 3, SpatialRadius: 1, MinNumPixelsPerSegment: 10 }, [
      rgb(10, 10, (x, y) => (x < 3 && y < 3 ? 80 : 0)),
    ]);
    expect(pixel(r2, 0, 0)).toEqual([7, 7, 7]);
  });

  it('BoundariesOnly draws pixels next to another segment black', async () => {
    const r = await runFunction(
      segmentMeanShift,
      { SpectralRadius: 3, SpatialRadius: 2, MinNumPixelsPerSegment: 5, BoundariesOnly: true },
      [rgb(8, 4, (x) => (x < 4 ? 40 : 200))],
    );
    expect(pixel(r, 3, 1)).toEqual([0, 0, 0]);
    expect(pixel(r, 4, 1)).toEqual([0, 0, 0]);
    expect(pixel(r, 2, 1)).toEqual([40, 40, 40]);
    expect(pixel(r, 5, 1)).toEqual([200, 200, 200]);
  });

  it('NoData pixels stay NoData and are left out of the means', async () => {
    const mask = new Uint8Array(16).fill(1);
    mask[5] = 0;
    const r = await runFunction(segmentMeanShift, { SpectralRadius: 3, SpatialRadius: 2, MinNumPixelsPerSegment: 2 }, [
      rgb(4, 4, (x, y) => (x === 1 && y === 1 ? 250 : 10), mask),
    ]);
    expect(r.valid(1, 1)).toBe(false);
    expect(pixel(r, 0, 0)).toEqual([10, 10, 10]);
  });
});

describe('SegmentMeanShift: invariants on a noisy blocky image', () => {
  const W = 48;
  const H = 36;
  const { bands, mask } = blocky(W, H, 3);
  const seg = (hr: number, hs: number, minSize = 20, maxSize = -1) =>
    meanShiftSegments(bands, mask, W, H, { hr, hs, minSize, maxSize, boundaries: false });

  it('every segment has at least MinNumPixelsPerSegment pixels and its colour is the mean of its pixels', () => {
    const s = seg(36, 3);
    expect(s.count).toBeGreaterThan(5);
    for (let l = 0; l < s.count; l++) expect(s.sizes[l]).toBeGreaterThanOrEqual(20);
    const sums = new Float64Array(3 * s.count);
    for (let i = 0; i < W * H; i++) for (let b = 0; b < 3; b++) sums[3 * s.labels[i]! + b]! += bands[b]![i]!;
    for (let i = 0; i < W * H; i++) {
      const l = s.labels[i]!;
      for (let b = 0; b < 3; b++) expect(s.rgb[3 * i + b]).toBe(roundHalfAway(sums[3 * l + b]! / s.sizes[l]!));
    }
  });

  it('the segment count does not grow with larger radii', () => {
    const counts = [12, 24, 48, 96].map((hr) => seg(hr, 3, 5).count);
    for (let k = 1; k < counts.length; k++) expect(counts[k]).toBeLessThanOrEqual(counts[k - 1]!);
    expect(counts[0]).toBeGreaterThan(counts[3]!);
    expect(seg(24, 6, 5).count).toBeLessThanOrEqual(seg(24, 1, 5).count);
  });

  it('MaxNumPixelsPerSegment cuts large segments by a grid (pieces <= max)', () => {
    const one = meanShiftSegments(
      [new Uint8Array(100).fill(9), new Uint8Array(100).fill(9), new Uint8Array(100).fill(9)],
      new Uint8Array(100).fill(1),
      10,
      10,
      {
        hr: 30,
        hs: 2,
        minSize: 5,
        maxSize: 25,
        boundaries: false,
      },
    );
    expect(one.count).toBe(4);
    expect([...one.sizes]).toEqual([25, 25, 25, 25]);
    const s = seg(96, 3, 5, 50);
    for (let l = 0; l < s.count; l++) expect(s.sizes[l]).toBeLessThanOrEqual(50);
  });

  it('tiled equals whole for any tile size', async () => {
    const node = applyFunction(segmentMeanShift, { SpectralRadius: 2, SpatialRadius: 3, MinNumPixelsPerSegment: 8 }, [
      rgb(W, H, (x, y, b) => bands[b]![y * W + x]!),
    ]);
    for (const t of [
      [1, 1],
      [5, 7],
      [48, 1],
    ] as [number, number][])
      expect(await tiledVersusWhole(node, t)).toBeUndefined();
  });
});

describe('SegmentMeanShift: arguments', () => {
  const img = rgb(4, 4, () => 0);
  const params = (args: Record<string, unknown>) => applyFunction(segmentMeanShift, args, [img]).plan.params as SegmentMeanShiftParams;

  it('maps Detail to Radius (21 - detail), radii in pixels and colour units; defaults 15.5 / 15', () => {
    expect(params({})).toMatchObject({ hs: 6, hr: 5.5, minSize: 20, maxSize: -1 });
    expect(params({ SpectralDetail: 18, SpatialDetail: 20 })).toMatchObject({ hs: 1, hr: 3 });
    expect(params({ SpectralRadius: 7, SpatialRadius: 4 })).toMatchObject({ hs: 4, hr: 7 });
    const n = applyFunction(segmentMeanShift, { SpectralRadius: 7, SpectralDetail: 3 }, [img]);
    expect(n.plan.warnings?.[0]).toContain('SpectralRadius is used');
    expect(n.info).toMatchObject({ bandCount: 3, pixelType: 'U8' });
  });

  it('bad input and arguments (code and path)', () => {
    const err = (args: Record<string, unknown>, inputs = [img]) => catchError(() => applyFunction(segmentMeanShift, args, inputs));
    expect(err({}, [rasterOf({ width: 2, height: 2, bandCount: 4, pixelType: 'U8' }, () => 0)])).toMatchObject({
      code: 'UNSUPPORTED_INPUT',
      path: 'rasterFunctionArguments.Raster',
    });
    expect(err({}, [rasterOf({ width: 2, height: 2, bandCount: 3, pixelType: 'U16' }, () => 0)])).toMatchObject({
      code: 'UNSUPPORTED_INPUT',
    });
    expect(err({ SpectralDetail: 22 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.SpectralDetail' });
    expect(err({ SpatialDetail: 2.5 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.SpatialDetail' });
    expect(err({ MinNumPixelsPerSegment: 0 })).toMatchObject({ path: 'rasterFunctionArguments.MinNumPixelsPerSegment' });
    expect(err({ MaxNumPixelsPerSegment: 20 })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.MaxNumPixelsPerSegment',
    });
    expect(err({ MaxNumPixelsPerSegment: -5 })).toMatchObject({ path: 'rasterFunctionArguments.MaxNumPixelsPerSegment' });
    const side = Math.ceil(Math.sqrt(MAX_WHOLE_PIXELS)) + 1;
    const huge: SourceNode = {
      kind: 'source',
      id: 'huge-rgb',
      info: gridInfo({ width: side, height: side, bandCount: 3, pixelType: 'U8' }),
      read: () => Promise.reject(new Error('not read')) as Promise<PixelBlock>,
    };
    expect(err({}, [huge])).toMatchObject({ code: 'LIMIT_EXCEEDED', path: 'rasterFunctionArguments.Raster' });
  });
});

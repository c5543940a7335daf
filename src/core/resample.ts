/**
 * Interpolation and aggregation kernels shared by the alignment node (src/graph/align.ts),
 * Resample and Geometric. Every kernel reads one source pixel block and a position in ABSOLUTE
 * source pixel coordinates (pixel (i, j) covers [i, i+1) x [j, j+1); its centre is (i+0.5, j+0.5)),
 * so results depend only on where a pixel is, never on how the request was tiled.
 *
 * Conventions (GDAL 3.6 gdalwarp's, checked against it on small rasters):
 * - The source pixel that contains the position must lie inside the source raster and be valid,
 *   otherwise the result is NoData, for every interpolating method (so NoData does not grow and
 *   positions outside the source extent are NoData).
 * - Nearest: that containing pixel's value.
 * - Bilinear: the 4 pixel centres around the position; neighbours outside the raster or NoData are
 *   left out and the weights of the others renormalised (gdalwarp's 4-sample formula), so NoData
 *   does not bleed and edges are not darkened. Total valid weight < 1e-5: NoData.
 *   `bilinearFallback` instead takes the nearest value as soon as one neighbour is missing (the
 *   vendor client's rule for Resample type 1).
 * - Cubic: Keys cubic convolution, a = -0.5, over the 4 x 4 centres; if any of the 16 is outside
 *   the raster or NoData the pixel falls back to renormalised bilinear (as gdalwarp does).
 * - Integer outputs: rounded half away from zero and saturated (castValue); float outputs stored
 *   as computed (float64, F32 rounds on store).
 * Aggregations (Resample Average, Minimum, Maximum, Majority, VectorAverage) work on a target
 * pixel's footprint [x0, x1) x [y0, y1) in source pixel coordinates, with gdalwarp's selection:
 * columns floor(x0 + 1e-10) .. ceil(x1 - 1e-10) - 1 clipped to the raster (at least one column),
 * rows likewise; Average weighs each source pixel by the part of it inside the footprint.
 */
import type { PixelBlock } from './pixel-block.js';
import { castValue, PIXEL_TYPE_INFO, type PixelType, type Plane } from './pixel-type.js';

/** A source block seen in absolute source pixel coordinates, with the source raster's size. */
export interface SourceWindow {
  readonly bands: readonly Plane[];
  readonly mask: Uint8Array;
  /** Absolute position of the block's top-left pixel. */
  readonly x0: number;
  readonly y0: number;
  /** Block size. */
  readonly w: number;
  readonly h: number;
  /** Source raster size (pixels at or past it are outside). */
  readonly width: number;
  readonly height: number;
}

export function sourceWindow(block: PixelBlock, width: number, height: number): SourceWindow {
  return {
    bands: block.bands,
    mask: block.mask,
    x0: block.rect.x,
    y0: block.rect.y,
    w: block.rect.width,
    h: block.rect.height,
    width,
    height,
  };
}

/** Block index of absolute source pixel (ix, iy) when it is inside the raster and valid, else -1. */
function validIndex(s: SourceWindow, ix: number, iy: number): number {
  if (ix < 0 || iy < 0 || ix >= s.width || iy >= s.height) return -1;
  const bx = ix - s.x0;
  const by = iy - s.y0;
  if (bx < 0 || by < 0 || bx >= s.w || by >= s.h) return -1;
  const k = by * s.w + bx;
  return s.mask[k] === 0 ? -1 : k;
}

export type InterpolationMethod = 'nearest' | 'bilinear' | 'bilinearFallback' | 'cubic';

/** Source pixels a method reads around the containing pixel (for input rectangles). */
export const METHOD_MARGIN: Readonly<Record<InterpolationMethod, number>> = {
  nearest: 0,
  bilinear: 1,
  bilinearFallback: 1,
  cubic: 2,
};

/** Keys cubic convolution weight, a = -0.5. */
export function keysWeight(t: number): number {
  const x = t < 0 ? -t : t;
  if (x <= 1) return (1.5 * x - 2.5) * x * x + 1;
  if (x < 2) return ((-0.5 * x + 2.5) * x - 4) * x + 2;
  return 0;
}

/**
 * Interpolate every band at source position (sx, sy) into `out` (one value per band). Returns
 * false (NoData) when the containing pixel is outside or NoData. `wx`/`wy` are 4-long scratch.
 */
export function interpolate(
  s: SourceWindow,
  method: InterpolationMethod,
  sx: number,
  sy: number,
  out: Float64Array,
  wx: Float64Array,
  wy: Float64Array,
): boolean {
  if (!(sx >= 0 && sy >= 0 && sx < s.width && sy < s.height)) return false; // NaN too
  const cx = Math.floor(sx);
  const cy = Math.floor(sy);
  const kc = validIndex(s, cx, cy);
  if (kc < 0) return false;
  const nb = s.bands.length;
  if (method === 'nearest') {
    for (let b = 0; b < nb; b++) out[b] = s.bands[b]![kc]!;
    return true;
  }
  const px = sx - 0.5;
  const py = sy - 0.5;
  const ix = Math.floor(px);
  const iy = Math.floor(py);
  const fx = px - ix;
  const fy = py - iy;
  if (method === 'cubic' && cubic(s, ix, iy, fx, fy, out, wx, wy)) return true;
  // Bilinear over the 4 centres around (px, py).
  const k00 = validIndex(s, ix, iy);
  const k10 = validIndex(s, ix + 1, iy);
  const k01 = validIndex(s, ix, iy + 1);
  const k11 = validIndex(s, ix + 1, iy + 1);
  if (k00 >= 0 && k10 >= 0 && k01 >= 0 && k11 >= 0) {
    const w00 = (1 - fx) * (1 - fy);
    const w10 = fx * (1 - fy);
    const w01 = (1 - fx) * fy;
    const w11 = fx * fy;
    for (let b = 0; b < nb; b++) {
      const p = s.bands[b]!;
      out[b] = w00 * p[k00]! + w10 * p[k10]! + w01 * p[k01]! + w11 * p[k11]!;
    }
    return true;
  }
  if (method === 'bilinearFallback') {
    for (let b = 0; b < nb; b++) out[b] = s.bands[b]![kc]!;
    return true;
  }
  let wsum = 0;
  for (let b = 0; b < nb; b++) out[b] = 0;
  for (let q = 0; q < 4; q++) {
    const k = q === 0 ? k00 : q === 1 ? k10 : q === 2 ? k01 : k11;
    if (k < 0) continue;
    const w = (q & 1 ? fx : 1 - fx) * (q & 2 ? fy : 1 - fy);
    wsum += w;
    for (let b = 0; b < nb; b++) out[b]! += w * s.bands[b]![k]!;
  }
  if (wsum < 1e-5) return false;
  for (let b = 0; b < nb; b++) out[b]! /= wsum;
  return true;
}

/** Keys cubic over the 4 x 4 centres from (ix-1, iy-1); false when any of them is missing. */
function cubic(
  s: SourceWindow,
  ix: number,
  iy: number,
  fx: number,
  fy: number,
  out: Float64Array,
  wx: Float64Array,
  wy: Float64Array,
): boolean {
  if (ix - 1 < 0 || iy - 1 < 0 || ix + 2 >= s.width || iy + 2 >= s.height) return false;
  const bx = ix - 1 - s.x0;
  const by = iy - 1 - s.y0;
  if (bx < 0 || by < 0 || bx + 4 > s.w || by + 4 > s.h) return false;
  const m = s.mask;
  for (let r = 0; r < 4; r++) {
    const o = (by + r) * s.w + bx;
    if (m[o] === 0 || m[o + 1] === 0 || m[o + 2] === 0 || m[o + 3] === 0) return false;
  }
  for (let t = 0; t < 4; t++) {
    wx[t] = keysWeight(fx + 1 - t);
    wy[t] = keysWeight(fy + 1 - t);
  }
  const nb = s.bands.length;
  for (let b = 0; b < nb; b++) {
    const p = s.bands[b]!;
    let acc = 0;
    for (let r = 0; r < 4; r++) {
      const o = (by + r) * s.w + bx;
      acc += wy[r]! * (wx[0]! * p[o]! + wx[1]! * p[o + 1]! + wx[2]! * p[o + 2]! + wx[3]! * p[o + 3]!);
    }
    out[b] = acc;
  }
  return true;
}

/** Column (or row) range of a footprint [a0, a1) clipped to [0, size): gdalwarp's rule. [lo, hi) */
export function footprintRange(a0: number, a1: number, size: number): [number, number] {
  let lo = Math.floor(a0 + 1e-10);
  let hi = Math.ceil(a1 - 1e-10);
  if (lo < 0) lo = 0;
  if (hi > size) hi = size;
  if (lo === hi && hi < size) hi++;
  return [lo, hi];
}

/** Weight of source column `i` in the footprint [a0, a1): the length of [i, i+1) inside it. */
export function overlap(i: number, a0: number, a1: number): number {
  const lo = i > a0 ? i : a0;
  const hi = i + 1 < a1 ? i + 1 : a1;
  return hi > lo ? hi - lo : 0;
}

/** Store `v` at `i` of `plane` for output type `t`: rounded and saturated for integers. */
export function storeValue(plane: Plane, i: number, v: number, t: PixelType): void {
  plane[i] = PIXEL_TYPE_INFO[t].integer ? castValue(v, t) : v;
}

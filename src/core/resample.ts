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

/**
 * `interpolate` for every pixel of an output rectangle under an AFFINE mapping (same spatial
 * reference: sx = ax + bx * (col + 0.5), sy = ay + by * (row + 0.5)), bit for bit the same values
 * and mask, faster: the source column/row, fraction and kernel weights depend only on the output
 * column (resp. row), so they are computed once per column and per row instead of per pixel, and
 * a pixel whose neighbourhood lies inside the block and is all valid is computed inline with the
 * very same arithmetic (same operands, same order). Every other pixel (raster edges, NoData
 * around, outside) goes through `interpolate` itself. `out` receives the values (`storeValue`
 * semantics for `pixelType`); `mask[i] = 0` where `interpolate` says NoData (others untouched).
 */
export function interpolateAffine(
  s: SourceWindow,
  method: InterpolationMethod,
  map: { readonly ax: number; readonly bx: number; readonly ay: number; readonly by: number },
  r: { readonly x: number; readonly y: number; readonly width: number; readonly height: number },
  bands: readonly Plane[],
  mask: Uint8Array,
  pixelType: PixelType,
): void {
  const { width: w, height: h } = r;
  const nb = s.bands.length;
  const integer = PIXEL_TYPE_INFO[pixelType].integer;
  const lo = PIXEL_TYPE_INFO[pixelType].min;
  const hi = PIXEL_TYPE_INFO[pixelType].max;
  /** castValue(v, pixelType) for an integer type, inlined (round half away from zero, saturate; NaN kept). */
  const castInt = (v: number): number => {
    if (v !== v) return v;
    const r = v < 0 ? -Math.floor(0.5 - v) : Math.floor(v + 0.5);
    return r < lo ? lo : r > hi ? hi : r === 0 ? 0 : r;
  };
  const sxs = new Float64Array(w);
  const sys = new Float64Array(h);
  for (let i = 0; i < w; i++) sxs[i] = map.ax + map.bx * (r.x + i + 0.5);
  for (let j = 0; j < h; j++) sys[j] = map.ay + map.by * (r.y + j + 0.5);
  const v = new Float64Array(nb);
  const wx = new Float64Array(4);
  const wy = new Float64Array(4);
  const put = (o: number, val: number, b: number): void => {
    const p = bands[b]!;
    p[o] = integer ? castInt(val) : val;
  };
  const slow = (o: number, sx: number, sy: number): void => {
    if (!interpolate(s, method, sx, sy, v, wx, wy)) {
      mask[o] = 0;
      return;
    }
    for (let b = 0; b < nb; b++) put(o, v[b]!, b);
  };
  const sm = s.mask;
  const sw = s.w;
  // One band (the common case): its planes hoisted out of the loops.
  const single = nb === 1;
  const p0 = s.bands[0]!;
  const d0 = bands[0]!;
  if (method === 'nearest') {
    // Column/row of the containing pixel in the block, or -1 when outside the raster or block.
    const col = new Int32Array(w);
    const row = new Int32Array(h);
    for (let i = 0; i < w; i++) {
      const sx = sxs[i]!;
      const c = Math.floor(sx);
      col[i] = sx >= 0 && sx < s.width && c - s.x0 >= 0 && c - s.x0 < s.w ? c - s.x0 : -1;
    }
    for (let j = 0; j < h; j++) {
      const sy = sys[j]!;
      const c = Math.floor(sy);
      row[j] = sy >= 0 && sy < s.height && c - s.y0 >= 0 && c - s.y0 < s.h ? (c - s.y0) * sw : -1;
    }
    for (let j = 0; j < h; j++) {
      const rj = row[j]!;
      const base = j * w;
      if (rj < 0) {
        for (let i = 0; i < w; i++) mask[base + i] = 0;
        continue;
      }
      for (let i = 0; i < w; i++) {
        const ci = col[i]!;
        const o = base + i;
        if (ci < 0 || sm[rj + ci] === 0) {
          mask[o] = 0;
          continue;
        }
        if (single) {
          const val = p0[rj + ci]!;
          d0[o] = integer ? castInt(val) : val;
        } else for (let b = 0; b < nb; b++) put(o, s.bands[b]![rj + ci]!, b);
      }
    }
    return;
  }
  const cubicMethod = method === 'cubic';
  // Per column: block column of the top-left neighbour (ix - x0; for cubic ix - 1 - x0) when the
  // whole neighbourhood is inside the raster and the block, else -1; the fraction's weights.
  const col = new Int32Array(w);
  const row = new Int32Array(h);
  const ax0 = new Float64Array(w);
  const ax1 = new Float64Array(w);
  const ay0 = new Float64Array(h);
  const ay1 = new Float64Array(h);
  const fxs = new Float64Array(w);
  const fys = new Float64Array(h);
  const kx = cubicMethod ? new Float64Array(4 * w) : undefined;
  const ky = cubicMethod ? new Float64Array(4 * h) : undefined;
  const setup = (a: number, size: number, org: number, blk: number, idx: Int32Array, i: number, f: Float64Array): number => {
    const p = a - 0.5;
    const ia = Math.floor(p);
    f[i] = p - ia;
    const lo = cubicMethod ? ia - 1 : ia;
    const hi = cubicMethod ? ia + 2 : ia + 1;
    idx[i] = a >= 0 && a < size && lo >= 0 && hi < size && lo - org >= 0 && hi - org < blk ? lo - org : -1;
    return f[i]!;
  };
  for (let i = 0; i < w; i++) {
    const fx = setup(sxs[i]!, s.width, s.x0, s.w, col, i, fxs);
    ax0[i] = 1 - fx;
    ax1[i] = fx;
    if (kx) for (let t = 0; t < 4; t++) kx[4 * i + t] = keysWeight(fx + 1 - t);
  }
  for (let j = 0; j < h; j++) {
    const fy = setup(sys[j]!, s.height, s.y0, s.h, row, j, fys);
    ay0[j] = 1 - fy;
    ay1[j] = fy;
    if (ky) for (let t = 0; t < 4; t++) ky[4 * j + t] = keysWeight(fy + 1 - t);
  }
  for (let j = 0; j < h; j++) {
    const rj = row[j]!;
    const base = j * w;
    const sy = sys[j]!;
    if (rj < 0) {
      for (let i = 0; i < w; i++) slow(base + i, sxs[i]!, sy);
      continue;
    }
    const ry = rj * sw;
    const wy0 = ay0[j]!;
    const wy1 = ay1[j]!;
    for (let i = 0; i < w; i++) {
      const ci = col[i]!;
      const o = base + i;
      if (ci < 0) {
        slow(o, sxs[i]!, sy);
        continue;
      }
      const k = ry + ci;
      if (cubicMethod) {
        if (
          sm[k] === 0 ||
          sm[k + 1] === 0 ||
          sm[k + 2] === 0 ||
          sm[k + 3] === 0 ||
          sm[k + sw] === 0 ||
          sm[k + sw + 1] === 0 ||
          sm[k + sw + 2] === 0 ||
          sm[k + sw + 3] === 0 ||
          sm[k + 2 * sw] === 0 ||
          sm[k + 2 * sw + 1] === 0 ||
          sm[k + 2 * sw + 2] === 0 ||
          sm[k + 2 * sw + 3] === 0 ||
          sm[k + 3 * sw] === 0 ||
          sm[k + 3 * sw + 1] === 0 ||
          sm[k + 3 * sw + 2] === 0 ||
          sm[k + 3 * sw + 3] === 0
        ) {
          slow(o, sxs[i]!, sy);
          continue;
        }
        const w0 = kx![4 * i]!;
        const w1 = kx![4 * i + 1]!;
        const w2 = kx![4 * i + 2]!;
        const w3 = kx![4 * i + 3]!;
        for (let b = 0; b < nb; b++) {
          const p = s.bands[b]!;
          let acc = 0;
          for (let q = 0; q < 4; q++) {
            const oo = k + q * sw;
            acc += ky![4 * j + q]! * (w0 * p[oo]! + w1 * p[oo + 1]! + w2 * p[oo + 2]! + w3 * p[oo + 3]!);
          }
          put(o, acc, b);
        }
        continue;
      }
      if (sm[k] === 0 || sm[k + 1] === 0 || sm[k + sw] === 0 || sm[k + sw + 1] === 0) {
        slow(o, sxs[i]!, sy);
        continue;
      }
      const wx0 = ax0[i]!;
      const wx1 = ax1[i]!;
      const w00 = wx0 * wy0;
      const w10 = wx1 * wy0;
      const w01 = wx0 * wy1;
      const w11 = wx1 * wy1;
      if (single) {
        const val = w00 * p0[k]! + w10 * p0[k + 1]! + w01 * p0[k + sw]! + w11 * p0[k + sw + 1]!;
        d0[o] = integer ? castInt(val) : val;
        continue;
      }
      for (let b = 0; b < nb; b++) {
        const p = s.bands[b]!;
        put(o, w00 * p[k]! + w10 * p[k + 1]! + w01 * p[k + sw]! + w11 * p[k + sw + 1]!, b);
      }
    }
  }
}

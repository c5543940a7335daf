/**
 * The reprojection warp (gdalwarp's, inverse-mapped): a RasterNode on an output grid (spatial
 * reference, extent, size) whose pixels are the input's, sampled where each output pixel centre
 * falls in the input. Used by the image service (`exportImage` with `imageSR`, tiles) and the
 * CLI (`rasterflow render --t_srs/--te/--tr/--ts/-r`).
 *
 * Coordinates, as gdalwarp 3.6 (GDALWarpKernel + GDALGenImgProjTransformer): output pixel
 * (i, j) is mapped at its centre (i + 0.5, j + 0.5) through the output geotransform to map
 * coordinates, through proj4 into the input's spatial reference, and through the input's
 * inverse geotransform to input pixel coordinates; src/core/resample.ts then samples there
 * (nearest, bilinear or cubic with gdalwarp's rules: a position outside the input or on a masked
 * pixel is NoData; bilinear and cubic leave masked neighbours out and renormalise, cubic falls
 * back to bilinear when any of its 16 pixels is missing).
 *
 * Speed: gdalwarp's approximate transformer (GDALApproxTransform, error threshold 0.125 input
 * pixels, gdalwarp's `-et` default), reproduced exactly. Along each output row (the whole row,
 * columns 0 .. width - 1, whatever the tile), the first, middle and last points are transformed
 * exactly; if the linear interpolation between first and last misses the middle by more than
 * 0.125 px (|dx| + |dy|) the row is split at the middle and each half is handled the same way,
 * else every point is interpolated linearly; runs of 5 points or fewer are transformed exactly.
 * A tile only descends into the parts of the recursion over its own columns, so a row costs a
 * few exact transforms per tile, and a pixel gets the same position in any tiling: tiled ==
 * whole bit for bit, whatever the worker count. Because the control points and the error test
 * are gdalwarp's own, positions equal gdalwarp's up to proj4js-versus-PROJ rounding (far below
 * a micro-pixel), which is what makes nearest-neighbour output equal gdalwarp's pixel for pixel.
 *
 * Edges: where the approximate position falls just outside the input (less than a pixel), the
 * pixel is transformed again exactly and sampled there if that is inside, as gdalwarp's kernels
 * do (measured on the DEM's default 3857 grid: valid = approximate inside OR exact inside).
 *
 * Downsampling: as gdalwarp (GDALWarpKernel::PerformWarp, GWKResample), when the output is
 * coarser than 0.95 of the input along an axis, bilinear and cubic widen their kernels by the
 * scale: scale = output size / input window size (the input window: the bounding box of the
 * output's edges mapped into the input, 21 points per edge, its raw size clamped to the raster;
 * a reciprocal within 0.05 of a whole number is snapped to it), radius = ceil(R / scale) (R = 1 bilinear, 2 cubic), the weight of
 * input pixel offset i is the kernel at (i - dx) * scale, and the sum is divided by the total
 * weight of the valid pixels (masked and off-raster pixels left out). The scale is computed once
 * per node from the whole output grid (gdalwarp computes it per warp chunk; a single chunk for
 * outputs within its memory limit), so tiles agree. Nearest is unaffected.
 */
import { EngineError, invalidArgument } from '../core/errors.js';
import type { Extent, RasterInfo, SpatialReference } from '../core/pixel-block.js';
import { isComplex, type PixelType } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { interpolate, keysWeight, METHOD_MARGIN, sourceWindow, storeValue, type SourceWindow } from '../core/resample.js';
import { proj4ForWkid } from '../core/spatial-reference.js';
import { boundingSourceRect, converter, densifiedBounds, proj4Of, sameSpatialReference } from './align.js';
import { evaluateTile } from './evaluate.js';
import type { FunctionNode, RasterFunction, RasterNode, SourceNode } from './types.js';

export { parseSpatialReference } from '../core/spatial-reference.js';

export type WarpMethod = 'nearest' | 'bilinear' | 'cubic';

export const WARP_METHODS: readonly WarpMethod[] = ['nearest', 'bilinear', 'cubic'];

export interface WarpGrid {
  readonly spatialReference: SpatialReference;
  readonly extent: Extent;
  readonly width: number;
  readonly height: number;
}

/** gdalwarp's default `-et`: the approximate transformer's error threshold, in input pixels. */
export const WARP_MAX_ERROR = 0.125;

// ---- Transforms

/** The proj4 (or WKT) definition proj4js is given for an SR, or undefined when none is known. */
export function definitionOf(sr: SpatialReference | undefined): string | undefined {
  if (sr === undefined) return undefined;
  return proj4Of(sr) ?? (sr.wkid !== undefined ? proj4ForWkid(sr.wkid) : undefined) ?? sr.wkt;
}

function requireDefinition(sr: SpatialReference | undefined, what: string): string {
  const d = definitionOf(sr);
  if (d === undefined) {
    throw new EngineError(
      'UNSUPPORTED_INPUT',
      `the ${what} spatial reference${sr?.wkid !== undefined ? ` (wkid ${sr.wkid})` : ''} has no known definition, so it cannot be reprojected`,
    );
  }
  return d;
}

type Forward = (p: number[]) => number[];

/** A point transform between two SRs (undefined: the same SR, nothing to do). */
function forwardOf(from: SpatialReference | undefined, to: SpatialReference | undefined): Forward | undefined {
  if (from === undefined || to === undefined || from === to || sameSpatialReference(from, to)) return undefined;
  const c = converter(requireDefinition(from, 'source'), requireDefinition(to, 'target'));
  return (p) => c.forward(p);
}

/**
 * The extent of `extent` (in `from`) in `to`: 21 points along each edge transformed (as GDAL's
 * GDALSuggestedWarpOutput and OGR's TransformBounds densify), then their bounding box. An
 * INVALID_ARGUMENT error when no point transforms (an extent outside the projection's domain).
 */
export function transformExtent(extent: Extent, from: SpatialReference, to: SpatialReference): Extent {
  const f = forwardOf(from, to);
  if (f === undefined) return { xmin: extent.xmin, ymin: extent.ymin, xmax: extent.xmax, ymax: extent.ymax };
  const b = densifiedBounds(extent, (x, y) => tryForward(f, x, y));
  if (b === undefined) throw invalidArgument('extent', 'the extent does not transform into the target spatial reference');
  return b;
}

function tryForward(f: Forward, x: number, y: number): [number, number] | undefined {
  try {
    const p = f([x, y]);
    const a = p[0]!;
    const b = p[1]!;
    return Number.isFinite(a) && Number.isFinite(b) ? [a, b] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * gdalwarp's default output grid for `info` reprojected to `to` (GDALSuggestedWarpOutput2 and
 * gdalwarp's rounding): 21 points per edge of the raster transformed; extent = their bounding
 * box; square pixels whose size keeps the pixel count along the diagonal (top-left to
 * bottom-right corner, transformed) equal to the input's; size = extent / pixel size rounded
 * to nearest; the extent then grows right and down to whole pixels.
 */
export function suggestedGrid(info: RasterInfo, to: SpatialReference): WarpGrid {
  const from = info.spatialReference;
  if (from === undefined) throw invalidArgument('spatialReference', 'the raster has no spatial reference, so it cannot be reprojected');
  const f = forwardOf(from, to);
  const W = info.width;
  const H = info.height;
  const pts: [number, number][] = [];
  const N = 20;
  for (let i = 0; i <= N; i++) {
    const r = i / N;
    pts.push([r * W, 0], [r * W, H], [0, r * H], [W, r * H]);
  }
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  const mapped: ([number, number] | undefined)[] = pts.map(([px, py]) => {
    const x = info.extent.xmin + px * info.cellSize.x;
    const y = info.extent.ymax - py * info.cellSize.y;
    return f === undefined ? [x, y] : tryForward(f, x, y);
  });
  for (const q of mapped) {
    if (q === undefined) continue;
    if (q[0] < xmin) xmin = q[0];
    if (q[0] > xmax) xmax = q[0];
    if (q[1] < ymin) ymin = q[1];
    if (q[1] > ymax) ymax = q[1];
  }
  const first = mapped[0];
  const last = mapped[mapped.length - 1];
  if (!(xmin < xmax && ymin < ymax) || first === undefined || last === undefined) {
    throw invalidArgument('spatialReference', 'the raster does not transform into the target spatial reference');
  }
  const diagonal = Math.hypot(last[0] - first[0], last[1] - first[1]);
  const res = diagonal / Math.hypot(W, H);
  const width = Math.max(1, Math.floor((xmax - xmin) / res + 0.5));
  const height = Math.max(1, Math.floor((ymax - ymin) / res + 0.5));
  return { spatialReference: to, extent: { xmin, ymax, xmax: xmin + width * res, ymin: ymax - height * res }, width, height };
}

// ---- Pixel positions: output pixel centres -> input pixel coordinates

/** The whole mapping of a warp: output geotransform, proj4, input inverse geotransform. */
export interface WarpMapping {
  /** Output geotransform (north-up): x = gx0 + u * gx1, y = gy0 + v * gy5. */
  readonly gx0: number;
  readonly gx1: number;
  readonly gy0: number;
  readonly gy5: number;
  /** Input inverse geotransform (GDALInvGeoTransform's no-rotation case): px = ix0 + x * ix1, py = iy0 + y * iy5. */
  readonly ix0: number;
  readonly ix1: number;
  readonly iy0: number;
  readonly iy5: number;
  /** Output row width: the approximation runs over whole rows. */
  readonly width: number;
  /** Output SR -> input SR; undefined for the same SR. */
  readonly forward: Forward | undefined;
  /** Error threshold in input pixels (0: exact per pixel). */
  readonly maxError: number;
}

export function warpMapping(input: RasterInfo, grid: WarpGrid, maxError = WARP_MAX_ERROR): WarpMapping {
  const cx = (grid.extent.xmax - grid.extent.xmin) / grid.width;
  const cy = (grid.extent.ymax - grid.extent.ymin) / grid.height;
  const sx = input.cellSize.x;
  const sy = -input.cellSize.y;
  return {
    gx0: grid.extent.xmin,
    gx1: cx,
    gy0: grid.extent.ymax,
    gy5: -cy,
    ix0: -input.extent.xmin / sx,
    ix1: 1 / sx,
    iy0: -input.extent.ymax / sy,
    iy5: 1 / sy,
    width: grid.width,
    forward: forwardOf(grid.spatialReference, input.spatialReference ?? grid.spatialReference),
    maxError,
  };
}

/** Exact input position of output position (u, v) into out[at], out[at + 1]; NaN where proj4 fails. */
function exactAt(m: WarpMapping, u: number, v: number, out: Float64Array, at: number): void {
  let x = m.gx0 + u * m.gx1;
  let y = m.gy0 + v * m.gy5;
  if (m.forward !== undefined) {
    const q = tryForward(m.forward, x, y);
    if (q === undefined) {
      out[at] = Number.NaN;
      out[at + 1] = Number.NaN;
      return;
    }
    x = q[0];
    y = q[1];
  }
  out[at] = m.ix0 + x * m.ix1;
  out[at + 1] = m.iy0 + y * m.iy5;
}

/** Scratch for one exact transform (no allocation per pixel or per step). */
const POINT = new Float64Array(2);

/** Exact positions of the columns [from, to) of a row into `out`. */
function exactRun(m: WarpMapping, v: number, from: number, to: number, lo: number, out: Float64Array, base: number): void {
  for (let c = from; c < to; c++) exactAt(m, c + 0.5, v, out, base + 2 * (c - lo));
}

/**
 * GDALApproxTransform over the row points a .. a + n - 1 (absolute columns, positions at
 * column + 0.5), writing only the columns in [lo, hi) to `out` at `base + 2 * (column - lo)`.
 * (x0, y0) and (x2, y2) are the exact transforms of the first and last point (NaN where they
 * failed), carried down the recursion as gdalwarp reuses them: each step transforms only its
 * middle point and the end of its first half.
 */
function approxRow(
  m: WarpMapping,
  v: number,
  a: number,
  n: number,
  lo: number,
  hi: number,
  out: Float64Array,
  base: number,
  x0: number,
  y0: number,
  x2: number,
  y2: number,
): void {
  if (a >= hi || a + n <= lo) return;
  const from = a > lo ? a : lo;
  const to = a + n < hi ? a + n : hi;
  if (n <= 5 || m.maxError === 0 || x0 !== x0 || x2 !== x2) {
    exactRun(m, v, from, to, lo, out, base);
    return;
  }
  const half = (n - 1) >> 1;
  const mid = a + half;
  exactAt(m, mid + 0.5, v, POINT, 0);
  const xm = POINT[0]!;
  const ym = POINT[1]!;
  if (xm !== xm) {
    exactRun(m, v, from, to, lo, out, base);
    return;
  }
  const u0 = a + 0.5;
  const span = n - 1;
  const dx = (x2 - x0) / span;
  const dy = (y2 - y0) / span;
  const error = Math.abs(x0 + dx * (mid + 0.5 - u0) - xm) + Math.abs(y0 + dy * (mid + 0.5 - u0) - ym);
  if (error > m.maxError) {
    if (a < hi && a + half > lo) {
      let xe = Number.NaN;
      let ye = Number.NaN;
      if (half > 5) {
        exactAt(m, a + half - 1 + 0.5, v, POINT, 0);
        xe = POINT[0]!;
        ye = POINT[1]!;
      }
      approxRow(m, v, a, half, lo, hi, out, base, x0, y0, xe, ye);
    }
    approxRow(m, v, mid, n - half, lo, hi, out, base, xm, ym, x2, y2);
    return;
  }
  for (let c = from; c < to; c++) {
    const d = c + 0.5 - u0;
    const o = base + 2 * (c - lo);
    out[o] = x0 + dx * d;
    out[o + 1] = y0 + dy * d;
  }
}

/**
 * Input pixel positions (x, y interleaved, row-major) of the centres of the output pixels of
 * `r`, as gdalwarp computes them. Depends only on absolute pixel positions.
 */
export function warpPositions(m: WarpMapping, r: Rect, out: Float64Array): void {
  const W = m.width;
  for (let j = 0; j < r.height; j++) {
    const v = r.y + j + 0.5;
    let x0 = Number.NaN;
    let y0 = Number.NaN;
    let x2 = Number.NaN;
    let y2 = Number.NaN;
    if (W > 5 && m.maxError !== 0) {
      exactAt(m, 0.5, v, POINT, 0);
      x0 = POINT[0]!;
      y0 = POINT[1]!;
      exactAt(m, W - 1 + 0.5, v, POINT, 0);
      x2 = POINT[0]!;
      y2 = POINT[1]!;
    }
    approxRow(m, v, 0, W, r.x, r.x + r.width, out, 2 * j * r.width, x0, y0, x2, y2);
  }
}

// ---- The warp node

interface WarpParams {
  readonly mapping: WarpMapping;
  readonly method: WarpMethod;
  readonly srcWidth: number;
  readonly srcHeight: number;
  readonly pixelType: PixelType;
  /** Downsampling kernels (bilinear/cubic with a scale < 0.95 on an axis), else undefined. */
  readonly scaled?: ScaledKernel;
}

/** gdalwarp's widened kernel (GWKResample) for one warp. */
interface ScaledKernel {
  readonly xScale: number;
  readonly yScale: number;
  readonly xRadius: number;
  readonly yRadius: number;
  /** First offset of the window: -radius for bilinear, 1 - radius for cubic (gdalwarp's nFiltInit). */
  readonly xInit: number;
  readonly yInit: number;
  readonly weight: (t: number) => number;
}

const bilinearWeight = (t: number): number => {
  const a = t < 0 ? -t : t;
  return a < 1 ? 1 - a : 0;
};

/**
 * gdalwarp's scale along one axis (GDALWarpOperation::ComputeSourceWindow, PerformWarp): the
 * output size over the raw input window size, max - min of the mapped edge points, clamped to
 * the raster; a reciprocal within 0.05 of a whole number is snapped to it.
 */
function axisScale(dst: number, lo: number, hi: number, size: number): number {
  const raw = Math.max(0, Math.min(size - Math.max(0, Math.trunc(lo)), hi - lo));
  if (!(raw > 0)) return 1;
  let scale = dst / raw;
  if (scale < 1) {
    const r = 1 / scale;
    const n = Math.floor(r + 0.5);
    if (Math.abs(r - n) < 0.05) scale = 1 / n;
  }
  return scale;
}

/** The widened kernel of a warp when gdalwarp would use one (bilinear/cubic, a scale < 0.95), else undefined. */
function scaledKernel(m: WarpMapping, grid: WarpGrid, method: WarpMethod, srcWidth: number, srcHeight: number): ScaledKernel | undefined {
  if (method === 'nearest') return undefined;
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  const p = new Float64Array(2);
  const N = 20;
  for (let k = 0; k <= N; k++) {
    const t = k / N;
    for (const [u, v] of [
      [t * grid.width, 0],
      [t * grid.width, grid.height],
      [0, t * grid.height],
      [grid.width, t * grid.height],
    ] as const) {
      exactAt(m, u, v, p, 0);
      const x = p[0]!;
      const y = p[1]!;
      if (x !== x || y !== y) continue;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
  }
  if (!(minX <= maxX)) return undefined;
  const xScale = axisScale(grid.width, minX, maxX, srcWidth);
  const yScale = axisScale(grid.height, minY, maxY, srcHeight);
  if (xScale >= 0.95 && yScale >= 0.95) return undefined;
  const R = method === 'bilinear' ? 1 : 2;
  const xRadius = xScale < 1 ? Math.ceil(R / xScale) : R;
  const yRadius = yScale < 1 ? Math.ceil(R / yScale) : R;
  const init = (r: number): number => ((R + 1) % 2) - r;
  return {
    xScale: Math.min(xScale, 1),
    yScale: Math.min(yScale, 1),
    xRadius,
    yRadius,
    xInit: init(xRadius),
    yInit: init(yRadius),
    weight: method === 'bilinear' ? bilinearWeight : keysWeight,
  };
}

/**
 * GWKResample at input position (sx, sy): every band into `out`; false (NoData) when the
 * containing pixel is outside or masked, or the valid weight is below 1e-6. `wx` holds the
 * window's x weights (2 * xRadius + 2 long).
 */
function resampleScaled(k: ScaledKernel, s: SourceWindow, sx: number, sy: number, out: Float64Array, wx: Float64Array): boolean {
  if (!(sx >= 0 && sy >= 0 && sx < s.width && sy < s.height)) return false;
  const cx = Math.floor(sx) - s.x0;
  const cy = Math.floor(sy) - s.y0;
  if (cx < 0 || cy < 0 || cx >= s.w || cy >= s.h || s.mask[cy * s.w + cx] === 0) return false;
  const ix = Math.floor(sx - 0.5);
  const iy = Math.floor(sy - 0.5);
  const dx = sx - 0.5 - ix;
  const dy = sy - 0.5 - iy;
  let i0 = k.xInit;
  let i1 = k.xRadius;
  if (ix + i0 < 0) i0 = -ix;
  if (ix + i1 >= s.width) i1 = s.width - ix - 1;
  let j0 = k.yInit;
  let j1 = k.yRadius;
  if (iy + j0 < 0) j0 = -iy;
  if (iy + j1 >= s.height) j1 = s.height - iy - 1;
  for (let i = i0; i <= i1; i++) wx[i - i0] = k.weight((i - dx) * k.xScale);
  const nb = s.bands.length;
  for (let b = 0; b < nb; b++) out[b] = 0;
  let total = 0;
  for (let j = j0; j <= j1; j++) {
    const by = iy + j - s.y0;
    if (by < 0 || by >= s.h) continue;
    const wyj = k.weight((j - dy) * k.yScale);
    let rowWeight = 0;
    const rowStart = by * s.w;
    for (let i = i0; i <= i1; i++) {
      const bx = ix + i - s.x0;
      if (bx < 0 || bx >= s.w || s.mask[rowStart + bx] === 0) continue;
      const w = wx[i - i0]!;
      rowWeight += w;
      for (let b = 0; b < nb; b++) out[b]! += s.bands[b]![rowStart + bx]! * w * wyj;
    }
    total += rowWeight * wyj;
  }
  if (total < 0.000001) return false;
  if (total < 0.99999 || total > 1.00001) for (let b = 0; b < nb; b++) out[b]! /= total;
  return true;
}

/**
 * gdalwarp takes the containing pixel as floor(x + 1e-10) (GWK kernels: `(int)(x + 1e-10)`); the
 * nudge is applied to nearest's positions so the choice between two pixels at a boundary is its.
 */
const NEAREST_NUDGE = 1e-10;

function positions(p: WarpParams, r: Rect): Float64Array {
  const xy = new Float64Array(2 * r.width * r.height);
  warpPositions(p.mapping, r, xy);
  if (p.method === 'nearest') for (let i = 0; i < xy.length; i++) xy[i]! += NEAREST_NUDGE;
  return xy;
}

/** The internal function behind warp nodes (not registered: warpNode makes them). */
const warpFunction: RasterFunction<Record<string, never>, WarpParams> = {
  name: 'Warp',
  summary: 'Internal: reproject and resample an input onto an output grid (gdalwarp).',
  family: 'internal',
  verification: 'reference: gdalwarp goldens (golden/warp)',
  args: {},
  plan() {
    throw new EngineError('INTERNAL', 'Warp nodes are made by warpNode, not planned from a rule');
  },
  kernel(p, inputs, out) {
    const { x: c0, y: r0, width: w, height: h } = out.rect;
    const xy = positions(p, out.rect);
    const s = sourceWindow(inputs[0]!, p.srcWidth, p.srcHeight);
    const nb = out.bands.length;
    const v = new Float64Array(nb);
    const wx = new Float64Array(4);
    const wy = new Float64Array(4);
    const mask = out.mask;
    const W = p.srcWidth;
    const H = p.srcHeight;
    const scaled = p.scaled;
    const wxs = scaled ? new Float64Array(2 * scaled.xRadius + 2) : wx;
    for (let j = 0, i = 0; j < h; j++) {
      for (let k = 0; k < w; k++, i++) {
        let sx = xy[2 * i]!;
        let sy = xy[2 * i + 1]!;
        if (!(sx >= 0 && sy >= 0 && sx < W && sy < H) && sx > -1 && sy > -1 && sx < W + 1 && sy < H + 1) {
          // Just outside by the approximation: gdalwarp (GWKCheckAndComputeSrcOffsets) retries
          // such a pixel with the exact transform, and samples there when that one is inside.
          exactAt(p.mapping, c0 + k + 0.5, r0 + j + 0.5, EXACT, 0);
          sx = EXACT[0]! + (p.method === 'nearest' ? NEAREST_NUDGE : 0);
          sy = EXACT[1]! + (p.method === 'nearest' ? NEAREST_NUDGE : 0);
        }
        if (scaled ? !resampleScaled(scaled, s, sx, sy, v, wxs) : !interpolate(s, p.method, sx, sy, v, wx, wy)) {
          mask[i] = 0;
          continue;
        }
        for (let b = 0; b < nb; b++) storeValue(out.bands[b]!, i, v[b]!, p.pixelType);
      }
    }
  },
};

const EXACT = new Float64Array(2);

function checkGrid(grid: WarpGrid): void {
  const { extent: e, width, height } = grid;
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
    throw invalidArgument('size', `the output size must be whole positive numbers of pixels, got ${width}x${height}`);
  }
  if (![e.xmin, e.ymin, e.xmax, e.ymax].every(Number.isFinite) || !(e.xmax > e.xmin && e.ymax > e.ymin)) {
    throw invalidArgument('extent', 'the output extent must have xmin < xmax and ymin < ymax');
  }
}

/**
 * A RasterNode on `grid`: each output pixel centre inverse-mapped through proj4 to the input's SR
 * and sampled there with `method`; outside the input -> mask 0. Tiled == whole. Bands, pixel type,
 * NoData and colormap are the input's. An input without a spatial reference is taken to be in
 * the grid's.
 */
export function warpNode(input: RasterNode, grid: WarpGrid, method: WarpMethod): RasterNode {
  checkGrid(grid);
  if (!WARP_METHODS.includes(method))
    throw invalidArgument('method', `the resampling method must be nearest, bilinear or cubic, got ${String(method)}`);
  const src = input.info;
  if (isComplex(src.pixelType)) throw invalidArgument('pixelType', `complex (${src.pixelType}) rasters cannot be warped`);
  const mapping = warpMapping(src, grid);
  const scaled = scaledKernel(mapping, grid, method, src.width, src.height);
  const params: WarpParams = {
    mapping,
    method,
    srcWidth: src.width,
    srcHeight: src.height,
    pixelType: src.pixelType,
    ...(scaled ? { scaled } : {}),
  };
  const e = grid.extent;
  // Decision: the input's statistics and histograms are kept: the warped pixels are a resampling
  // of the same values, and renderers over the warp (a Stretch of the service) need the raster's
  // statistics, not a tile's.
  const info: RasterInfo = {
    ...src,
    width: grid.width,
    height: grid.height,
    extent: { xmin: e.xmin, ymin: e.ymin, xmax: e.xmax, ymax: e.ymax },
    cellSize: { x: (e.xmax - e.xmin) / grid.width, y: (e.ymax - e.ymin) / grid.height },
    spatialReference: grid.spatialReference,
  };
  // One pixel more than the kernel's reach: nearest's nudge and the exact retry of positions just
  // outside the input (see the kernel) can move a position over a pixel edge.
  const margin = (scaled ? Math.max(scaled.xRadius, scaled.yRadius) : METHOD_MARGIN[method]) + 1;
  const inputRect = (out: Rect): Rect => boundingSourceRect(positions(params, out), margin, src.width, src.height);
  const key = {
    sr: definitionOf(grid.spatialReference) ?? null,
    xmin: e.xmin,
    ymin: e.ymin,
    xmax: e.xmax,
    ymax: e.ymax,
    width: grid.width,
    height: grid.height,
    method,
  };
  const node: FunctionNode = {
    kind: 'function',
    id: `Warp(${JSON.stringify(key)};${input.id})`,
    fn: warpFunction,
    args: key,
    inputs: [input],
    plan: { info, halo: 0, inputRect, params },
    info,
  };
  return node;
}

// ---- gdalwarp's output grid from its options

/** gdalwarp's grid options: `-te` (in `teSrs`, default the target SR), `-tr`, `-ts` (0 = keep the aspect ratio). */
export interface WarpGridOptions {
  readonly te?: Extent;
  readonly teSrs?: SpatialReference;
  readonly tr?: readonly [number, number];
  readonly ts?: readonly [number, number];
}

/**
 * The output grid gdalwarp 3.6 makes for `info` warped to `to` with `options` (gdalwarp_lib's
 * GDALWarpCreateOutput): missing parts come from `suggestedGrid`. -te alone keeps the suggested
 * resolution, size = extent / resolution rounded, then the resolution is adjusted to fit the
 * extent exactly; -tr without -te keeps the suggested extent's top-left corner and rounds the
 * size the same way; -ts without -te divides the suggested extent; a 0 in -ts keeps the aspect
 * ratio (square pixels from the other axis, the extent fitted to the rounded size). Errors name the option (`te`, `te_srs`, `tr`, `ts`).
 */
export function targetGrid(info: RasterInfo, to: SpatialReference, options: WarpGridOptions = {}): WarpGrid {
  const { tr, ts } = options;
  if (tr !== undefined && ts !== undefined) throw invalidArgument('ts', '-tr and -ts cannot be used together');
  if (tr !== undefined && !(tr[0] > 0 && tr[1] > 0 && Number.isFinite(tr[0]) && Number.isFinite(tr[1]))) {
    throw invalidArgument('tr', `the target resolution must be two positive numbers, got ${tr.join(' ')}`);
  }
  if (ts !== undefined && !(ts.every((v) => Number.isInteger(v) && v >= 0) && ts[0] + ts[1] > 0)) {
    throw invalidArgument(
      'ts',
      `the target size must be two whole numbers of pixels (0 for one of them keeps the aspect ratio), got ${ts.join(' ')}`,
    );
  }
  let te = options.te;
  if (options.teSrs !== undefined && te === undefined) throw invalidArgument('te_srs', '-te_srs needs -te');
  if (te !== undefined) {
    if (![te.xmin, te.ymin, te.xmax, te.ymax].every(Number.isFinite) || !(te.xmax > te.xmin && te.ymax > te.ymin)) {
      throw invalidArgument('te', 'the target extent must be xmin ymin xmax ymax with xmin < xmax and ymin < ymax');
    }
    if (options.teSrs !== undefined) {
      try {
        te = transformExtent(te, options.teSrs, to);
      } catch {
        throw invalidArgument('te_srs', 'the target extent does not transform from -te_srs into the target spatial reference');
      }
    }
  }
  const suggested = te !== undefined && (tr !== undefined || ts !== undefined) ? undefined : suggestedGrid(info, to);
  const e = te ?? suggested!.extent;
  const dx = e.xmax - e.xmin;
  const dy = e.ymax - e.ymin;
  let width: number;
  let height: number;
  let xmax = e.xmax;
  let ymin = e.ymin;
  if (ts !== undefined) {
    width = ts[0];
    height = ts[1];
    // A 0: square pixels from the other axis, the size rounded and the extent fitted to it.
    if (width === 0) {
      const res = dy / height;
      width = Math.max(1, Math.floor(dx / res + 0.5));
      xmax = e.xmin + width * res;
    } else if (height === 0) {
      const res = dx / width;
      height = Math.max(1, Math.floor(dy / res + 0.5));
      ymin = e.ymax - height * res;
    }
  } else {
    const rx = tr !== undefined ? tr[0] : (suggested!.extent.xmax - suggested!.extent.xmin) / suggested!.width;
    const ry = tr !== undefined ? tr[1] : (suggested!.extent.ymax - suggested!.extent.ymin) / suggested!.height;
    width = Math.max(1, Math.floor((dx + rx / 2) / rx));
    height = Math.max(1, Math.floor((dy + ry / 2) / ry));
    if (tr !== undefined) {
      // -tr: the resolution is kept and the extent follows from the top-left corner.
      xmax = e.xmin + width * rx;
      ymin = e.ymax - height * ry;
    } else if (te === undefined) {
      return suggested!;
    }
  }
  return { spatialReference: to, extent: { xmin: e.xmin, ymin, xmax, ymax: e.ymax }, width, height };
}

// ---- Resampled sources (the CLI's `--outsize` with `-r bilinear|cubic`)

type NodeOpener = (location: string, options: { id: string }) => Promise<SourceNode>;

/**
 * `open` with each raster resampled onto its own extent at `outsize`'s scale (the first input
 * `width` x `height`; the others by the same factors, rounded, at least 1 pixel, as io's
 * outsizeOpener) with `method` through the warp kernels: the pixels of `gdalwarp -ts W H -r
 * method` over the same extent (see the note on downsampling above).
 */
export function resampledOpener(
  open: NodeOpener,
  outsize: { readonly width: number; readonly height: number; readonly baseWidth: number; readonly baseHeight: number },
  method: WarpMethod,
): NodeOpener {
  return async (location, options) => {
    const source = await open(location, options);
    const { info } = source;
    const width = Math.max(1, Math.round((info.width * outsize.width) / outsize.baseWidth));
    const height = Math.max(1, Math.round((info.height * outsize.height) / outsize.baseHeight));
    if (width === info.width && height === info.height) return source;
    const node = warpNode(source, { spatialReference: info.spatialReference ?? {}, extent: info.extent, width, height }, method);
    const { spatialReference: _sr, ...rest } = node.info;
    return {
      kind: 'source',
      id: `${source.id}@${width}x${height}:${method}`,
      info: info.spatialReference !== undefined ? node.info : rest,
      read: (r, signal) => evaluateTile(node, r, signal),
    };
  };
}

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
 * Downsampling: gdalwarp widens its bilinear and cubic kernels by the scale (`XSCALE`, the
 * output/input size ratio) when the output is coarser than 0.95 of the input; these kernels keep
 * the 2 x 2 / 4 x 4 footprint at every scale (nearest is unaffected). So bilinear and cubic equal
 * gdalwarp at scales >= 0.95 (upsampling, same resolution, reprojection at a similar
 * resolution) and are sharper (more aliased) than gdalwarp's for large reductions; read from an
 * overview for those.
 */
import { EngineError, invalidArgument } from '../core/errors.js';
import type { Extent, RasterInfo, SpatialReference } from '../core/pixel-block.js';
import { isComplex, type PixelType } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { interpolate, METHOD_MARGIN, sourceWindow, storeValue } from '../core/resample.js';
import { proj4ForWkid } from '../core/spatial-reference.js';
import { boundingSourceRect, converter, proj4Of, sameSpatialReference } from './align.js';
import type { FunctionNode, RasterFunction, RasterNode } from './types.js';

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
  if (from === undefined || to === undefined || sameSpatialReference(from, to)) return undefined;
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
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  const N = 20;
  for (let i = 0; i <= N; i++) {
    const t = i / N;
    const x = extent.xmin + t * (extent.xmax - extent.xmin);
    const y = extent.ymin + t * (extent.ymax - extent.ymin);
    for (const [px, py] of [
      [x, extent.ymin],
      [x, extent.ymax],
      [extent.xmin, y],
      [extent.xmax, y],
    ] as const) {
      const q = tryForward(f, px, py);
      if (q === undefined) continue;
      if (q[0] < xmin) xmin = q[0];
      if (q[0] > xmax) xmax = q[0];
      if (q[1] < ymin) ymin = q[1];
      if (q[1] > ymax) ymax = q[1];
    }
  }
  if (!(xmin <= xmax && ymin <= ymax)) throw invalidArgument('extent', 'the extent does not transform into the target spatial reference');
  return { xmin, ymin, xmax, ymax };
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

/** Scratch for the three control points of one recursion step (no allocation per pixel or per step). */
const SME = new Float64Array(6);

/**
 * GDALApproxTransform over the row points a .. a + n - 1 (absolute columns, positions at
 * column + 0.5), writing only the columns in [lo, hi) to `out` at `base + 2 * (column - lo)`.
 */
function approxRow(m: WarpMapping, v: number, a: number, n: number, lo: number, hi: number, out: Float64Array, base: number): void {
  if (a >= hi || a + n <= lo) return;
  const mid = a + ((n - 1) >> 1);
  const last = a + n - 1;
  const from = a > lo ? a : lo;
  const to = a + n < hi ? a + n : hi;
  if (n <= 5 || m.maxError === 0) {
    for (let c = from; c < to; c++) exactAt(m, c + 0.5, v, out, base + 2 * (c - lo));
    return;
  }
  exactAt(m, a + 0.5, v, SME, 0);
  exactAt(m, mid + 0.5, v, SME, 2);
  exactAt(m, last + 0.5, v, SME, 4);
  const x0 = SME[0]!;
  const y0 = SME[1]!;
  const xm = SME[2]!;
  const ym = SME[3]!;
  const x2 = SME[4]!;
  const y2 = SME[5]!;
  if (x0 !== x0 || xm !== xm || x2 !== x2) {
    for (let c = from; c < to; c++) exactAt(m, c + 0.5, v, out, base + 2 * (c - lo));
    return;
  }
  const u0 = a + 0.5;
  const span = last + 0.5 - u0;
  const dx = (x2 - x0) / span;
  const dy = (y2 - y0) / span;
  const error = Math.abs(x0 + dx * (mid + 0.5 - u0) - xm) + Math.abs(y0 + dy * (mid + 0.5 - u0) - ym);
  if (error > m.maxError) {
    const half = (n - 1) >> 1;
    approxRow(m, v, a, half, lo, hi, out, base);
    approxRow(m, v, a + half, n - half, lo, hi, out, base);
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
  for (let j = 0; j < r.height; j++) approxRow(m, r.y + j + 0.5, 0, m.width, r.x, r.x + r.width, out, 2 * j * r.width);
}

// ---- The warp node

interface WarpParams {
  readonly mapping: WarpMapping;
  readonly method: WarpMethod;
  readonly srcWidth: number;
  readonly srcHeight: number;
  readonly pixelType: PixelType;
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
        if (!interpolate(s, p.method, sx, sy, v, wx, wy)) {
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
  const params: WarpParams = { mapping, method, srcWidth: src.width, srcHeight: src.height, pixelType: src.pixelType };
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
  const margin = METHOD_MARGIN[method] + 1;
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

/**
 * Alignment nodes: put an input on another grid (extent, cell size, spatial reference) before a
 * function's kernel sees it. A function asks for it with `Plan.align[i] = { method }`;
 * `createFunctionNode` wraps input i in an internal `Align` node whose output grid is the
 * function's output grid (plan.info) and whose bands, pixel type and NoData are the input's own.
 *
 * Coordinates: output pixel (col, row) is sampled at its centre (col + 0.5, row + 0.5), mapped to
 * map coordinates, into the input's spatial reference when it differs, and to the input's pixel
 * coordinates; the kernels of src/core/resample.ts then interpolate there (nearest, bilinear or
 * cubic with gdalwarp's conventions: pixels outside the input's extent or on an input NoData pixel
 * are NoData; bilinear/cubic renormalise over valid neighbours, so NoData does not bleed).
 *
 * Same spatial reference: the mapping is affine, sx = ax + bx * (col + 0.5), exact per pixel.
 * Different spatial references (proj4 definitions from the SRs' `proj4` or `wkid`): an
 * approximate transformer like gdalwarp's (error threshold 0.125 source pixels). Exact proj4
 * transforms are computed at the nodes of a coarse grid, every `step` output pixels in ABSOLUTE
 * output pixel coordinates (nodes at col, row = k * step), and pixel positions are bilinearly
 * interpolated between the 4 nodes around them. The step (64 down to 1, or exact per pixel) is
 * chosen once at plan time so that the interpolation error, measured at cell centres and edge
 * midpoints of up to 16 x 16 coarse cells spread over the whole output, stays <= 0.125 source
 * pixels. Since nodes sit at absolute positions, a pixel gets the same source position whatever
 * tile it is computed in: tiled rendering equals whole rendering bit for bit. Pixels next to a
 * node where the transform fails (outside the projection's domain) are transformed exactly.
 */
import { EngineError, unsupportedInput } from '../core/errors.js';
import { sameGrid, type RasterInfo, type SpatialReference } from '../core/pixel-block.js';
import { isComplex, type PixelType } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { interpolate, interpolateAffine, METHOD_MARGIN, sourceWindow, storeValue, type InterpolationMethod } from '../core/resample.js';
import { parseProj4, proj4ForEpsg, proj4Lib } from '../core/crs.js';
import type { FunctionNode, RasterFunction, RasterNode, ResamplingMethod } from './types.js';

// ---- Spatial references

/** The proj4 definition of a spatial reference: its own, or the one its wkid is known by. */
export function proj4Of(sr: SpatialReference | undefined): string | undefined {
  if (!sr) return undefined;
  if (sr.proj4) return sr.proj4;
  return sr.wkid !== undefined ? proj4ForEpsg(sr.wkid === 102100 || sr.wkid === 102113 ? 3857 : sr.wkid) : undefined;
}

/** A proj4 string with its tokens sorted, so equal definitions compare equal. */
const normalProj4 = (def: string): string =>
  [...parseProj4(def).entries()]
    .filter(([k]) => k !== 'no_defs' && k !== 'wktext' && k !== 'type')
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(' ');

/**
 * Whether two rasters are in the same spatial reference. ASSUMPTION (spec silent): a raster with
 * no spatial reference is taken to be in the other's (nothing to reproject from).
 */
export function sameSpatialReference(a: SpatialReference | undefined, b: SpatialReference | undefined): boolean {
  if (!a || !b) return true;
  if (a.wkid !== undefined && a.wkid === b.wkid) return true;
  const pa = proj4Of(a);
  const pb = proj4Of(b);
  if (pa !== undefined && pb !== undefined) return normalProj4(pa) === normalProj4(pb);
  if (a.wkt !== undefined && a.wkt === b.wkt) return true;
  return false;
}

/** A short stable key of a spatial reference, for node ids. */
function spatialReferenceKey(sr: SpatialReference | undefined): string {
  if (!sr) return '';
  const p = proj4Of(sr);
  return p !== undefined ? normalProj4(p) : sr.wkid !== undefined ? `wkid:${sr.wkid}` : (sr.wkt ?? '');
}

interface Converter {
  forward(p: number[]): number[];
}
const converters = new Map<string, Converter>();

/** A cached proj4 converter between two definitions. */
export function converter(from: string, to: string): Converter {
  const key = `${from}|${to}`;
  let c = converters.get(key);
  if (c === undefined) {
    c = proj4Lib()(from, to);
    converters.set(key, c);
  }
  return c;
}

/** Transform one point; [NaN, NaN] where the transform fails. */
function transformPoint(c: Converter, x: number, y: number): [number, number] {
  try {
    const p = c.forward([x, y]);
    const px = p[0]!;
    const py = p[1]!;
    return Number.isFinite(px) && Number.isFinite(py) ? [px, py] : [Number.NaN, Number.NaN];
  } catch {
    return [Number.NaN, Number.NaN];
  }
}

/**
 * The proj4 definitions to go from `from` to `to`, or an UNSUPPORTED_INPUT error at `path` when one
 * of them has none.
 */
export function reprojection(from: SpatialReference | undefined, to: SpatialReference | undefined, path: string): [string, string] {
  const a = proj4Of(from);
  const b = proj4Of(to);
  if (a === undefined || b === undefined) {
    const which = a === undefined ? from : to;
    throw unsupportedInput(
      path,
      `inputs are in different spatial references and ${which?.wkid !== undefined ? `wkid ${which.wkid}` : 'one of them'} ` +
        'has no known proj4 definition, so it cannot be reprojected',
    );
  }
  return [a, b];
}

type Bounds = { xmin: number; ymin: number; xmax: number; ymax: number };

/**
 * Bounding box of `e` mapped by `forward`: 21 points along each edge (enough for the curvature of
 * map projections over a raster's extent; GDAL's GDALSuggestedWarpOutput and OGR's TransformBounds
 * densify the same way). Points `forward` cannot map (undefined) are skipped; undefined if none maps.
 */
export function densifiedBounds(e: Bounds, forward: (x: number, y: number) => readonly [number, number] | undefined): Bounds | undefined {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  const N = 20;
  for (let i = 0; i <= N; i++) {
    const t = i / N;
    const x = e.xmin + t * (e.xmax - e.xmin);
    const y = e.ymin + t * (e.ymax - e.ymin);
    for (const [px, py] of [
      [x, e.ymin],
      [x, e.ymax],
      [e.xmin, y],
      [e.xmax, y],
    ] as const) {
      const q = forward(px, py);
      if (q === undefined) continue;
      if (q[0] < xmin) xmin = q[0];
      if (q[0] > xmax) xmax = q[0];
      if (q[1] < ymin) ymin = q[1];
      if (q[1] > ymax) ymax = q[1];
    }
  }
  return xmin <= xmax && ymin <= ymax ? { xmin, ymin, xmax, ymax } : undefined;
}

/** Bounding box, in `to`, of an extent in `from` (densifiedBounds). Undefined if nothing transforms. */
export function transformExtent(e: Bounds, from: string, to: string): Bounds | undefined {
  const c = converter(from, to);
  return densifiedBounds(e, (x, y) => {
    const q = transformPoint(c, x, y);
    return Number.isNaN(q[0]) ? undefined : q;
  });
}

// ---- Pixel mappings: output pixel centre -> input pixel coordinates

/** A north-up grid: top-left corner and positive cell sizes. */
export interface GridGeometry {
  readonly xmin: number;
  readonly ymax: number;
  readonly cx: number;
  readonly cy: number;
}

export type PixelMapping =
  /** sx = ax + bx * (col + 0.5), sy = ay + by * (row + 0.5). */
  | { readonly kind: 'affine'; readonly ax: number; readonly bx: number; readonly ay: number; readonly by: number }
  /** Through proj4 (`from` = output SR, `to` = input SR); `step` 0 = exact per pixel. */
  | {
      readonly kind: 'reproject';
      readonly target: GridGeometry;
      readonly source: GridGeometry;
      readonly from: string;
      readonly to: string;
      readonly step: number;
    };

const geometryOf = (i: Pick<RasterInfo, 'extent' | 'cellSize'>): GridGeometry => ({
  xmin: i.extent.xmin,
  ymax: i.extent.ymax,
  cx: i.cellSize.x,
  cy: i.cellSize.y,
});

/** Mapping from `target`'s pixels to `source`'s pixel coordinates. */
export function pixelMapping(target: RasterInfo, source: RasterInfo, path: string): PixelMapping {
  if (sameSpatialReference(target.spatialReference, source.spatialReference)) {
    return {
      kind: 'affine',
      ax: (target.extent.xmin - source.extent.xmin) / source.cellSize.x,
      bx: target.cellSize.x / source.cellSize.x,
      ay: (source.extent.ymax - target.extent.ymax) / source.cellSize.y,
      by: target.cellSize.y / source.cellSize.y,
    };
  }
  const [from, to] = reprojection(target.spatialReference, source.spatialReference, path);
  const base = { kind: 'reproject' as const, target: geometryOf(target), source: geometryOf(source), from, to };
  return { ...base, step: chooseStep(base, target.width, target.height) };
}

/** Exact source pixel position of target pixel position (u, v) (pixel units, not centres). */
function exact(m: Extract<PixelMapping, { kind: 'reproject' }>, c: Converter, u: number, v: number, out: Float64Array, at: number): void {
  const [x, y] = transformPoint(c, m.target.xmin + u * m.target.cx, m.target.ymax - v * m.target.cy);
  out[at] = (x - m.source.xmin) / m.source.cx;
  out[at + 1] = (m.source.ymax - y) / m.source.cy;
}

const MAX_ERROR = 0.125;

/** Largest power-of-two step (<= 64) whose interpolation error stays within MAX_ERROR; 0 = exact. */
function chooseStep(m: Omit<Extract<PixelMapping, { kind: 'reproject' }>, 'step'>, width: number, height: number): number {
  const mm = { ...m, step: 0 };
  const c = converter(m.from, m.to);
  const p = new Float64Array(2);
  const q = new Float64Array(8);
  for (let step = 64; step >= 1; step /= 2) {
    const nx = Math.ceil(width / step);
    const ny = Math.ceil(height / step);
    const sx = Math.min(nx, 16);
    const sy = Math.min(ny, 16);
    let worst = 0;
    for (let a = 0; a < sx; a++) {
      const kx = sx === 1 ? 0 : Math.round((a * (nx - 1)) / (sx - 1));
      for (let b = 0; b < sy; b++) {
        const ky = sy === 1 ? 0 : Math.round((b * (ny - 1)) / (sy - 1));
        exact(mm, c, kx * step, ky * step, q, 0);
        exact(mm, c, (kx + 1) * step, ky * step, q, 2);
        exact(mm, c, kx * step, (ky + 1) * step, q, 4);
        exact(mm, c, (kx + 1) * step, (ky + 1) * step, q, 6);
        if (q.some(Number.isNaN)) continue;
        for (const [t, s] of [
          [0.5, 0.5],
          [0.5, 0],
          [0, 0.5],
          [1, 0.5],
          [0.5, 1],
        ] as const) {
          exact(mm, c, (kx + t) * step, (ky + s) * step, p, 0);
          if (Number.isNaN(p[0]!)) continue;
          for (let d = 0; d < 2; d++) {
            const i = (1 - t) * (1 - s) * q[d]! + t * (1 - s) * q[2 + d]! + (1 - t) * s * q[4 + d]! + t * s * q[6 + d]!;
            worst = Math.max(worst, Math.abs(i - p[d]!));
          }
        }
      }
    }
    if (worst <= MAX_ERROR) return step;
  }
  return 0;
}

/**
 * Source pixel positions (x, y interleaved: 2 values per pixel, row-major) of the centres of the
 * output pixels of `r`. Depends only on absolute pixel positions.
 */
export function mapRect(m: PixelMapping, r: Rect, out: Float64Array): void {
  const { x: c0, y: r0, width: w, height: h } = r;
  if (m.kind === 'affine') {
    for (let j = 0; j < h; j++) {
      const sy = m.ay + m.by * (r0 + j + 0.5);
      let o = 2 * j * w;
      for (let i = 0; i < w; i++, o += 2) {
        out[o] = m.ax + m.bx * (c0 + i + 0.5);
        out[o + 1] = sy;
      }
    }
    return;
  }
  const c = converter(m.from, m.to);
  const S = m.step;
  if (S === 0) {
    for (let j = 0; j < h; j++) for (let i = 0; i < w; i++) exact(m, c, c0 + i + 0.5, r0 + j + 0.5, out, 2 * (j * w + i));
    return;
  }
  const kx0 = Math.floor((c0 + 0.5) / S);
  const kx1 = Math.floor((c0 + w - 0.5) / S) + 1;
  const ky0 = Math.floor((r0 + 0.5) / S);
  const ky1 = Math.floor((r0 + h - 0.5) / S) + 1;
  const nw = kx1 - kx0 + 1;
  const nodes = new Float64Array(2 * nw * (ky1 - ky0 + 1));
  for (let ky = ky0; ky <= ky1; ky++) {
    for (let kx = kx0; kx <= kx1; kx++) exact(m, c, kx * S, ky * S, nodes, 2 * ((ky - ky0) * nw + (kx - kx0)));
  }
  for (let j = 0; j < h; j++) {
    const v = r0 + j + 0.5;
    const ky = Math.floor(v / S);
    const s = (v - ky * S) / S;
    const rowA = 2 * (ky - ky0) * nw;
    const rowB = rowA + 2 * nw;
    for (let i = 0; i < w; i++) {
      const u = c0 + i + 0.5;
      const kx = Math.floor(u / S);
      const t = (u - kx * S) / S;
      const a = rowA + 2 * (kx - kx0);
      const b = rowB + 2 * (kx - kx0);
      const o = 2 * (j * w + i);
      const x00 = nodes[a]!;
      const x10 = nodes[a + 2]!;
      const x01 = nodes[b]!;
      const x11 = nodes[b + 2]!;
      if (x00 !== x00 || x10 !== x10 || x01 !== x01 || x11 !== x11) {
        exact(m, c, u, v, out, o);
        continue;
      }
      const w00 = (1 - t) * (1 - s);
      const w10 = t * (1 - s);
      const w01 = (1 - t) * s;
      const w11 = t * s;
      out[o] = w00 * x00 + w10 * x10 + w01 * x01 + w11 * x11;
      out[o + 1] = w00 * nodes[a + 1]! + w10 * nodes[a + 3]! + w01 * nodes[b + 1]! + w11 * nodes[b + 3]!;
    }
  }
}

/**
 * The source rectangle covering the positions `xy` (from mapRect) grown by `margin` pixels,
 * clipped to the source raster grown by the margin; a 1 x 1 rectangle outside it when nothing
 * falls inside (the read then comes back NoData).
 */
export function boundingSourceRect(xy: Float64Array, margin: number, width: number, height: number): Rect {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (let o = 0; o < xy.length; o += 2) {
    const x = xy[o]!;
    const y = xy[o + 1]!;
    if (x !== x || y !== y) continue;
    if (x < x0) x0 = x;
    if (x > x1) x1 = x;
    if (y < y0) y0 = y;
    if (y > y1) y1 = y;
  }
  const lx = Math.max(Math.floor(x0) - margin, -margin);
  const ly = Math.max(Math.floor(y0) - margin, -margin);
  const hx = Math.min(Math.floor(x1) + margin + 1, width + margin);
  const hy = Math.min(Math.floor(y1) + margin + 1, height + margin);
  if (!(hx > lx && hy > ly)) return { x: -1, y: -1, width: 1, height: 1 };
  return { x: lx, y: ly, width: hx - lx, height: hy - ly };
}

// ---- The alignment node

interface AlignParams {
  readonly mapping: PixelMapping;
  readonly method: InterpolationMethod;
  readonly srcWidth: number;
  readonly srcHeight: number;
  readonly pixelType: PixelType;
  /** Tests: always take the general per-pixel path (to compare the affine fast path with it). */
  readonly general?: boolean;
}

/** The internal function behind alignment nodes (not registered: only createFunctionNode makes them). */
const alignFunction: RasterFunction<Record<string, never>, AlignParams> = {
  name: 'Align',
  summary: 'Internal: resample an input onto its consumer’s output grid.',
  family: 'internal',
  verification: 'reference: gdalwarp goldens through Arithmetic across grids',
  args: {},
  plan() {
    throw new EngineError('INTERNAL', 'Align nodes are made by createFunctionNode, not planned from a rule');
  },
  kernel(p, inputs, out) {
    if (p.mapping.kind === 'affine' && !p.general) {
      // Same values as the general loop below, with per-column/per-row tables (resample.ts).
      interpolateAffine(sourceWindow(inputs[0]!, p.srcWidth, p.srcHeight), p.method, p.mapping, out.rect, out.bands, out.mask, p.pixelType);
      return;
    }
    const { width: w, height: h } = out.rect;
    const n = w * h;
    const xy = new Float64Array(2 * n);
    mapRect(p.mapping, out.rect, xy);
    const s = sourceWindow(inputs[0]!, p.srcWidth, p.srcHeight);
    const nb = out.bands.length;
    const v = new Float64Array(nb);
    const wx = new Float64Array(4);
    const wy = new Float64Array(4);
    const m = out.mask;
    for (let i = 0; i < n; i++) {
      if (!interpolate(s, p.method, xy[2 * i]!, xy[2 * i + 1]!, v, wx, wy)) {
        m[i] = 0;
        continue;
      }
      for (let b = 0; b < nb; b++) storeValue(out.bands[b]!, i, v[b]!, p.pixelType);
    }
  },
};

/** Whether `input` already lies on `target`'s grid and spatial reference. */
export const onGrid = (input: RasterInfo, target: RasterInfo): boolean =>
  sameGrid(input, target) && sameSpatialReference(input.spatialReference, target.spatialReference);

/**
 * `input` resampled with `method` onto `target`'s grid (extent, cell size, size, spatial
 * reference): `input` itself when it is already there or is a constant; otherwise an Align node.
 */
export function alignNode(input: RasterNode, target: RasterInfo, method: ResamplingMethod, path: string): RasterNode {
  const src = input.info;
  if (src.constant !== undefined || onGrid(src, target)) return input;
  if (isComplex(src.pixelType)) {
    throw unsupportedInput(path, `complex (${src.pixelType}) rasters cannot be resampled onto another grid`);
  }
  const mapping = pixelMapping(target, src, path);
  const margin = METHOD_MARGIN[method] + (mapping.kind === 'reproject' ? 1 : 0);
  const { width: srcWidth, height: srcHeight } = src;
  const params: AlignParams = { mapping, method, srcWidth, srcHeight, pixelType: src.pixelType };
  const info: RasterInfo = {
    ...src,
    width: target.width,
    height: target.height,
    extent: target.extent,
    cellSize: target.cellSize,
    ...(target.spatialReference ? { spatialReference: target.spatialReference } : {}),
  };
  const inputRect = (out: Rect): Rect => {
    if (mapping.kind === 'affine') {
      // Corner pixels bound the affine positions; same formula as mapRect.
      const xa = mapping.ax + mapping.bx * (out.x + 0.5);
      const xb = mapping.ax + mapping.bx * (out.x + out.width - 0.5);
      const ya = mapping.ay + mapping.by * (out.y + 0.5);
      const yb = mapping.ay + mapping.by * (out.y + out.height - 0.5);
      return boundingSourceRect(Float64Array.of(xa, ya, xb, yb), margin, srcWidth, srcHeight);
    }
    const xy = new Float64Array(2 * out.width * out.height);
    mapRect(mapping, out, xy);
    return boundingSourceRect(xy, margin, srcWidth, srcHeight);
  };
  const t = target;
  const grid = {
    xmin: t.extent.xmin,
    ymax: t.extent.ymax,
    cx: t.cellSize.x,
    cy: t.cellSize.y,
    width: t.width,
    height: t.height,
    sr: spatialReferenceKey(t.spatialReference),
  };
  const node: FunctionNode = {
    kind: 'function',
    id: `Align(${JSON.stringify({ grid, method })};${input.id})`,
    fn: alignFunction,
    args: { grid, method },
    inputs: [input],
    plan: { info, halo: 0, inputRect, params },
    info,
  };
  return node;
}

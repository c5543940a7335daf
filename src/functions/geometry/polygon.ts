/**
 * Clipping and remap geometries: parsing (vendor JSON polygons and envelopes, GeoJSON Polygon and
 * MultiPolygon), projection onto a raster's spatial reference with proj4, and exact rasterization
 * by pixel centre, shared by Clip and Remap.
 *
 * Rasterization rule (GDAL's `gdal_rasterize` without ALL_TOUCHED, reproduced exactly): a pixel is
 * inside iff its centre is inside the geometry. A geometry is a list of parts: the rings of one
 * part are filled together with the even-odd rule (holes are honoured whatever their orientation),
 * and parts are united (a pixel inside any part is inside), as GDAL burns each polygon of a
 * multipolygon on its own. A vendor polygon `{rings}` is one part (its rings carry no part
 * structure); a GeoJSON MultiPolygon has one part per polygon. On each pixel row the scanline at the row's centre meets the edges whose
 * y-range [ymin, ymax) contains it; intersections are sorted and paired, and the pair (a, b) fills
 * the columns floor(a + 0.5) .. floor(b + 0.5) - 1 (pixel coordinates, pixel x spans [x, x + 1)).
 * So a centre lying exactly on a left edge is outside and one exactly on a right edge inside,
 * the same tie rule as GDAL (llrasterize.cpp, GDALdllImageFilledPolygon).
 */
import type proj4 from 'proj4';
import { proj4Lib } from '../../core/crs.js';
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { Extent, RasterInfo } from '../../core/pixel-block.js';
import type { Rect } from '../../core/rect.js';
import { proj4Of, sameSpatialReference } from '../../graph/align.js';

/** A ring: map coordinates x0, y0, x1, y1, ... (closing vertex optional). */
export type Ring = Float64Array;
/** Parts, each a list of rings filled even-odd; parts are united. */
export type Parts = readonly (readonly Ring[])[];

export interface Geometry {
  readonly parts: Parts;
  /** The geometry's own spatial reference, when it carries one. */
  readonly spatialReference?: GeometrySR;
  /** True when the geometry was given as an envelope. */
  readonly envelope: boolean;
}

export interface GeometrySR {
  readonly wkid?: number;
  readonly wkt?: string;
  readonly proj4?: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Case-insensitive property lookup (clients write `Rings`, `XMin`, `SpatialReference`). */
function prop(o: Record<string, unknown>, name: string): unknown {
  if (name in o) return o[name];
  const k = Object.keys(o).find((key) => key.toLowerCase() === name.toLowerCase());
  return k === undefined ? undefined : o[k];
}

const num = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

/** A ring from `[[x, y], ...]`; closing vertex optional. */
function ringOf(v: unknown, path: string): Float64Array {
  if (!Array.isArray(v)) throw invalidArgument(path, 'a ring must be an array of [x, y] points');
  const out = new Float64Array(2 * v.length);
  v.forEach((p, i) => {
    const x = Array.isArray(p) ? num(p[0]) : undefined;
    const y = Array.isArray(p) ? num(p[1]) : undefined;
    if (x === undefined || y === undefined)
      throw invalidArgument(`${path}[${i}]`, `a point must be [x, y] numbers, got ${JSON.stringify(p)}`);
    out[2 * i] = x;
    out[2 * i + 1] = y;
  });
  if (v.length < 3) throw invalidArgument(path, `a ring needs at least 3 points, got ${v.length}`);
  return out;
}

function srOf(v: unknown, path: string): GeometrySR | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw invalidArgument(path, 'spatialReference must be an object such as {"wkid": 4326}');
  const wkid = num(prop(v, 'latestWkid')) ?? num(prop(v, 'wkid'));
  const wkt = prop(v, 'wkt');
  const p4 = prop(v, 'proj4');
  const sr: GeometrySR = {
    ...(wkid !== undefined ? { wkid } : {}),
    ...(typeof wkt === 'string' ? { wkt } : {}),
    ...(typeof p4 === 'string' ? { proj4: p4 } : {}),
  };
  return sr.wkid === undefined && sr.wkt === undefined && sr.proj4 === undefined ? undefined : sr;
}

/**
 * Parse one geometry: `{rings, spatialReference}` (vendor polygon), `{xmin, ymin, xmax, ymax,
 * spatialReference}` (envelope), GeoJSON `{type: "Polygon" | "MultiPolygon", coordinates}`, or a
 * feature-like `{geometry: ...}`.
 */
export function parseGeometry(v: unknown, path: string): Geometry {
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v) as unknown;
    } catch {
      throw invalidArgument(path, 'the geometry string is not JSON');
    }
  }
  if (!isObj(v)) throw invalidArgument(path, 'expected a polygon {rings} or an envelope {xmin, ymin, xmax, ymax}');
  const inner = prop(v, 'geometry');
  if (isObj(inner) && prop(v, 'rings') === undefined && prop(v, 'xmin') === undefined) {
    const g = parseGeometry(inner, `${path}.geometry`);
    return g.spatialReference === undefined && prop(v, 'spatialReference') !== undefined
      ? { ...g, spatialReference: srOf(prop(v, 'spatialReference'), `${path}.spatialReference`) }
      : g;
  }
  const sr = srOf(prop(v, 'spatialReference'), `${path}.spatialReference`);
  const withSr = (g: Omit<Geometry, 'spatialReference'>): Geometry => (sr ? { ...g, spatialReference: sr } : g);
  const rings = prop(v, 'rings');
  if (rings !== undefined) {
    if (!Array.isArray(rings) || rings.length === 0) throw invalidArgument(`${path}.rings`, 'rings must be a non-empty array of rings');
    return withSr({ parts: [rings.map((r, i) => ringOf(r, `${path}.rings[${i}]`))], envelope: false });
  }
  const type = prop(v, 'type');
  const coords = prop(v, 'coordinates');
  if (typeof type === 'string' && coords !== undefined) {
    const t = type.toLowerCase();
    if (t === 'polygon' && Array.isArray(coords)) {
      return withSr({ parts: [coords.map((r, i) => ringOf(r, `${path}.coordinates[${i}]`))], envelope: false });
    }
    if (t === 'multipolygon' && Array.isArray(coords)) {
      const parts = coords.map((poly, i) => {
        if (!Array.isArray(poly) || poly.length === 0)
          throw invalidArgument(`${path}.coordinates[${i}]`, 'a polygon must be a non-empty array of rings');
        return poly.map((r, j) => ringOf(r, `${path}.coordinates[${i}][${j}]`));
      });
      if (parts.length === 0) throw invalidArgument(`${path}.coordinates`, 'the multipolygon has no polygons');
      return withSr({ parts, envelope: false });
    }
    throw invalidArgument(`${path}.type`, `only Polygon and MultiPolygon geometries can clip, got ${JSON.stringify(type)}`);
  }
  const [xmin, ymin, xmax, ymax] = ['xmin', 'ymin', 'xmax', 'ymax'].map((k) => num(prop(v, k)));
  if (xmin !== undefined && ymin !== undefined && xmax !== undefined && ymax !== undefined) {
    if (!(xmin < xmax && ymin < ymax)) {
      throw invalidArgument(path, `the envelope is empty: xmin ${xmin}, xmax ${xmax}, ymin ${ymin}, ymax ${ymax}`);
    }
    return withSr({ parts: [[envelopeRing({ xmin, ymin, xmax, ymax })]], envelope: true });
  }
  throw invalidArgument(path, 'expected a polygon {rings} or an envelope {xmin, ymin, xmax, ymax}');
}

export const envelopeRing = (e: Extent): Float64Array =>
  Float64Array.from([e.xmin, e.ymin, e.xmin, e.ymax, e.xmax, e.ymax, e.xmax, e.ymin]);

/** Bounding box of a geometry's rings. */
export function envelopeOf(parts: Parts): Extent {
  const rings = parts.flat();
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  for (const r of rings) {
    for (let i = 0; i < r.length; i += 2) {
      xmin = Math.min(xmin, r[i]!);
      xmax = Math.max(xmax, r[i]!);
      ymin = Math.min(ymin, r[i + 1]!);
      ymax = Math.max(ymax, r[i + 1]!);
    }
  }
  return { xmin, ymin, xmax, ymax };
}

/** Pieces each edge is split into before projecting, so straight edges follow the projection. */
const DENSIFY = 32;

/**
 * The geometry's rings in the raster's map coordinates: projected with proj4 (edges densified) when
 * the geometry names a spatial reference different from the raster's; as given otherwise.
 */
export function partsInRasterSR(g: Geometry, raster: RasterInfo, path: string): Parts {
  const from = g.spatialReference;
  const to = raster.spatialReference;
  if (from === undefined || to === undefined || sameSpatialReference(from, to)) return g.parts;
  const a = proj4Of(from) ?? from.wkt;
  const b = proj4Of(to) ?? to.wkt;
  if (a === undefined)
    throw unsupportedInput(
      `${path}.spatialReference`,
      `unknown spatial reference ${JSON.stringify(from)}: give a wkid proj4 knows, a wkt or a proj4 string`,
    );
  if (b === undefined)
    throw unsupportedInput(
      `${path}.spatialReference`,
      "the raster's spatial reference has no definition proj4 can use, so the geometry cannot be projected onto it",
    );
  let conv: proj4.Converter;
  try {
    conv = proj4Lib()(a, b);
  } catch (e) {
    throw unsupportedInput(
      `${path}.spatialReference`,
      `proj4 cannot project from ${a} to ${b}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  return g.parts.map((rings) =>
    rings.map((r) => {
      const n = r.length / 2;
      const out = new Float64Array(2 * n * DENSIFY);
      let k = 0;
      for (let i = 0; i < n; i++) {
        const x0 = r[2 * i]!;
        const y0 = r[2 * i + 1]!;
        const j = (i + 1) % n;
        const x1 = r[2 * j]!;
        const y1 = r[2 * j + 1]!;
        for (let s = 0; s < DENSIFY; s++) {
          const t = s / DENSIFY;
          const [x, y] = conv.forward([x0 + t * (x1 - x0), y0 + t * (y1 - y0)]) as [number, number];
          if (!Number.isFinite(x) || !Number.isFinite(y)) {
            throw unsupportedInput(
              path,
              "the geometry does not project onto the raster's spatial reference (a vertex falls outside its domain)",
            );
          }
          out[k++] = x;
          out[k++] = y;
        }
      }
      return out;
    }),
  );
}

/**
 * Edges of a geometry's parts in the pixel space of `info`'s grid (or parts already in pixel
 * coordinates when `info` is left out), encoded for `fillInside`: per
 * part, its edge count × 4, then its edges [x1, y1, x2, y2] with y1 < y2 (horizontal edges dropped:
 * the scanline rule never counts them), closing edges included.
 */
export function pixelEdges(parts: Parts, info?: Pick<RasterInfo, 'extent' | 'cellSize'>): Float64Array {
  // Without `info` the parts are already in pixel space (x right, y down).
  const xmin = info ? info.extent.xmin : 0;
  const ymax = info ? info.extent.ymax : 0;
  const cx = info ? info.cellSize.x : 1;
  const cy = info ? info.cellSize.y : -1;
  const out: number[] = [];
  for (const rings of parts) {
    const at = out.length;
    out.push(0);
    for (const r of rings) {
      const n = r.length / 2;
      for (let i = 0; i < n; i++) {
        const j = (i + 1) % n;
        const ax = (r[2 * i]! - xmin) / cx;
        const ay = (ymax - r[2 * i + 1]!) / cy;
        const bx = (r[2 * j]! - xmin) / cx;
        const by = (ymax - r[2 * j + 1]!) / cy;
        if (ay === by) continue;
        if (ay < by) out.push(ax, ay, bx, by);
        else out.push(bx, by, ax, ay);
      }
    }
    out[at] = out.length - at - 1;
  }
  return Float64Array.from(out);
}

/**
 * Set `inside[i] = 1` for the pixels of `rect` (row-major over the rect, pixel space of the grid the
 * edges are in) whose centre is inside the geometry encoded by `pixelEdges` (even-odd within each
 * part, union of parts); other entries are untouched.
 */
export function fillInside(encoded: Float64Array, rect: Rect, inside: Uint8Array): void {
  for (let o = 0; o < encoded.length;) {
    const len = encoded[o]!;
    fillPart(encoded.subarray(o + 1, o + 1 + len), rect, inside);
    o += 1 + len;
  }
}

function fillPart(edges: Float64Array, rect: Rect, inside: Uint8Array): void {
  const ne = edges.length / 4;
  // Only edges whose y-range meets the rect's rows matter.
  const ylo = rect.y + 0.5;
  const yhi = rect.y + rect.height - 0.5;
  const keep: number[] = [];
  for (let e = 0; e < ne; e++) if (edges[4 * e + 3]! > ylo && edges[4 * e + 1]! <= yhi) keep.push(e);
  const xs = new Float64Array(keep.length);
  const x0 = rect.x;
  const x1 = rect.x + rect.width;
  for (let row = 0; row < rect.height; row++) {
    const yc = rect.y + row + 0.5;
    let m = 0;
    for (let k = 0; k < keep.length; k++) {
      const o = 4 * keep[k]!;
      const ey1 = edges[o + 1]!;
      const ey2 = edges[o + 3]!;
      if (yc >= ey1 && yc < ey2) {
        const ex1 = edges[o]!;
        xs[m++] = ex1 + ((yc - ey1) * (edges[o + 2]! - ex1)) / (ey2 - ey1);
      }
    }
    if (m < 2) continue;
    const sorted = xs.subarray(0, m).sort();
    const base = row * rect.width - x0;
    for (let p = 0; p + 1 < m; p += 2) {
      const a = Math.max(Math.floor(sorted[p]! + 0.5), x0);
      const b = Math.min(Math.floor(sorted[p + 1]! + 0.5), x1);
      for (let x = a; x < b; x++) inside[base + x] = 1;
    }
  }
}

/**
 * Planar polygon geometry for labels: areas, bounding boxes, clipping to a chip rectangle,
 * rotation, point buffers, containment and rasterization by pixel centre.
 *
 * A ring is a flat `[x0, y0, x1, y1, ...]` array, closed implicitly (the last vertex is not a
 * repeat of the first). A polygon is an outer ring followed by its holes; a feature's geometry is
 * a list of polygons (a multipolygon). Orientation is free: areas use the absolute shoelace sum of
 * the outer ring minus the holes, and containment uses the even-odd rule over all rings (GDAL's
 * rasterization rule for valid polygons).
 */

import { rect } from '../core/rect.js';
import { fillInside, pixelEdges } from '../functions/geometry/polygon.js';

export type Ring = number[];
export type Polygon = Ring[];
export type MultiPolygon = Polygon[];

export interface Box {
  xmin: number;
  ymin: number;
  xmax: number;
  ymax: number;
}

const emptyBox = (): Box => ({ xmin: Infinity, ymin: Infinity, xmax: -Infinity, ymax: -Infinity });
export const boxIsEmpty = (b: Box): boolean => !(b.xmax > b.xmin && b.ymax > b.ymin);

export function boxOf(mp: MultiPolygon): Box {
  const b = emptyBox();
  for (const poly of mp) {
    const outer = poly[0];
    if (outer === undefined) continue;
    for (let i = 0; i < outer.length; i += 2) {
      const x = outer[i]!;
      const y = outer[i + 1]!;
      if (x < b.xmin) b.xmin = x;
      if (x > b.xmax) b.xmax = x;
      if (y < b.ymin) b.ymin = y;
      if (y > b.ymax) b.ymax = y;
    }
  }
  return b;
}

function ringArea(r: Ring): number {
  let s = 0;
  const n = r.length;
  for (let i = 0; i < n; i += 2) {
    const j = (i + 2) % n;
    s += r[i]! * r[j + 1]! - r[j]! * r[i + 1]!;
  }
  return Math.abs(s) / 2;
}

export function area(mp: MultiPolygon): number {
  let a = 0;
  for (const poly of mp) poly.forEach((ring, k) => (a += k === 0 ? ringArea(ring) : -ringArea(ring)));
  return Math.max(0, a);
}

/** Apply `f` to every vertex: `f(x, y)` returns `[x', y']`. */
export function mapPoints(mp: MultiPolygon, f: (x: number, y: number) => readonly [number, number]): MultiPolygon {
  return mp.map((poly) =>
    poly.map((ring) => {
      const out: Ring = new Array<number>(ring.length);
      for (let i = 0; i < ring.length; i += 2) {
        const [x, y] = f(ring[i]!, ring[i + 1]!);
        out[i] = x;
        out[i + 1] = y;
      }
      return out;
    }),
  );
}

/** Sutherland-Hodgman against one half plane `sign * (coord - at) >= 0` on axis 0 (x) or 1 (y). */
function clipHalf(ring: Ring, axis: 0 | 1, at: number, sign: 1 | -1): Ring {
  const out: Ring = [];
  const n = ring.length;
  if (n === 0) return out;
  for (let i = 0; i < n; i += 2) {
    const j = (i + n - 2) % n;
    const cx = ring[i]!;
    const cy = ring[i + 1]!;
    const px = ring[j]!;
    const py = ring[j + 1]!;
    const c = sign * ((axis === 0 ? cx : cy) - at);
    const p = sign * ((axis === 0 ? px : py) - at);
    if (c >= 0) {
      if (p < 0) {
        const t = p / (p - c);
        out.push(px + t * (cx - px), py + t * (cy - py));
      }
      out.push(cx, cy);
    } else if (p >= 0) {
      const t = p / (p - c);
      out.push(px + t * (cx - px), py + t * (cy - py));
    }
  }
  return out;
}

/**
 * The part of `mp` inside the box (each ring clipped by the four half planes; the rectangle is
 * convex, so outer-ring and hole areas stay exact). Polygons whose outer ring vanishes are dropped.
 */
export function clipToBox(mp: MultiPolygon, b: Box): MultiPolygon {
  const out: MultiPolygon = [];
  for (const poly of mp) {
    const rings: Polygon = [];
    for (const [k, ring] of poly.entries()) {
      let r = clipHalf(ring, 0, b.xmin, 1);
      r = clipHalf(r, 0, b.xmax, -1);
      r = clipHalf(r, 1, b.ymin, 1);
      r = clipHalf(r, 1, b.ymax, -1);
      if (r.length >= 6 && ringArea(r) > 0) rings.push(r);
      else if (k === 0) break;
    }
    if (rings.length > 0 && poly[0] !== undefined && rings[0] !== undefined) out.push(rings);
  }
  return out;
}

/** A circle polygon of `radius` around (x, y), `segments` vertices (a point buffer). */
export function circle(x: number, y: number, radius: number, segments = 64): Polygon {
  const ring: Ring = [];
  for (let i = 0; i < segments; i++) {
    const a = (2 * Math.PI * i) / segments;
    ring.push(x + radius * Math.cos(a), y + radius * Math.sin(a));
  }
  return [ring];
}

/** Even-odd containment of (x, y) in a polygon's rings. */
function pointInPolygon(poly: Polygon, x: number, y: number): boolean {
  let inside = false;
  for (const ring of poly) {
    const n = ring.length;
    for (let i = 0, j = n - 2; i < n; j = i, i += 2) {
      const yi = ring[i + 1]!;
      const yj = ring[j + 1]!;
      if (yi > y !== yj > y) {
        const xi = ring[i]!;
        const xj = ring[j]!;
        if (x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
      }
    }
  }
  return inside;
}

function segmentsCross(ax: number, ay: number, bx: number, by: number, cx: number, cy: number, dx: number, dy: number): boolean {
  const d1 = (dx - cx) * (ay - cy) - (dy - cy) * (ax - cx);
  const d2 = (dx - cx) * (by - cy) - (dy - cy) * (bx - cx);
  const d3 = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  const d4 = (bx - ax) * (dy - ay) - (by - ay) * (dx - ax);
  return d1 * d2 < 0 && d3 * d4 < 0;
}

/** Whether (x, y) lies on a ring edge of the polygon (within `eps`). */
function onBoundary(poly: Polygon, x: number, y: number, eps = 1e-9): boolean {
  for (const ring of poly) {
    const n = ring.length;
    for (let i = 0, j = n - 2; i < n; j = i, i += 2) {
      const ax = ring[j]!;
      const ay = ring[j + 1]!;
      const bx = ring[i]!;
      const by = ring[i + 1]!;
      const cross = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
      if (Math.abs(cross) > eps * Math.hypot(bx - ax, by - ay)) continue;
      if (x >= Math.min(ax, bx) - eps && x <= Math.max(ax, bx) + eps && y >= Math.min(ay, by) - eps && y <= Math.max(ay, by) + eps)
        return true;
    }
  }
  return false;
}

/**
 * Whether the box lies completely inside one polygon of `mp`: its four corners are inside and no
 * polygon edge (outer or hole) crosses the box's edges or lies inside the box.
 * ASSUMPTION (spec: "only chips completely inside the polygons"): inside ONE polygon; a chip
 * straddling two touching mask polygons is left out.
 */
export function boxInside(mp: MultiPolygon, b: Box): boolean {
  const corners = [b.xmin, b.ymin, b.xmax, b.ymin, b.xmax, b.ymax, b.xmin, b.ymax];
  for (const poly of mp) {
    let all = true;
    // Corners on the polygon's boundary count as inside (a chip may touch the mask's edge).
    for (let k = 0; k < 8 && all; k += 2)
      all = pointInPolygon(poly, corners[k]!, corners[k + 1]!) || onBoundary(poly, corners[k]!, corners[k + 1]!);
    if (!all) continue;
    let crossed = false;
    for (const ring of poly) {
      const n = ring.length;
      for (let i = 0, j = n - 2; i < n && !crossed; j = i, i += 2) {
        const x = ring[i]!;
        const y = ring[i + 1]!;
        if (x > b.xmin && x < b.xmax && y > b.ymin && y < b.ymax) crossed = true;
        for (let k = 0; k < 8 && !crossed; k += 2) {
          const m = (k + 2) % 8;
          if (segmentsCross(ring[j]!, ring[j + 1]!, x, y, corners[k]!, corners[k + 1]!, corners[m]!, corners[m + 1]!)) crossed = true;
        }
      }
    }
    if (!crossed) return true;
  }
  return false;
}

/**
 * Rasterize `mp` (in pixel coordinates of a `width` x `height` grid) by pixel centre, with the same
 * scanline rule as Clip and Remap (`functions/geometry/polygon.ts`, checked against
 * `gdal_rasterize` without ALL_TOUCHED): even-odd within a polygon, union of polygons. Calls
 * `set(index)` once for every inside pixel.
 */
export function rasterize(mp: MultiPolygon, width: number, height: number, set: (index: number) => void): void {
  const inside = new Uint8Array(width * height);
  fillInside(pixelEdges(mp.map((poly) => poly.map((ring) => Float64Array.from(ring)))), rect(0, 0, width, height), inside);
  for (let i = 0; i < inside.length; i++) if (inside[i] === 1) set(i);
}

/**
 * SOAP geometries (protocols.md §5.6: PointN, MultipointN, EnvelopeN, PolylineN, PolygonN with
 * Path/Ring point arrays) <-> the map model's GeoJSON geometries. Polygons follow the vendor's ring
 * convention: outer rings clockwise, holes counter-clockwise (y up); GeoJSON polygons group each
 * hole with the outer ring that contains it.
 */
import { invalidArgument } from '../../core/errors.js';
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import type { Geometry } from '../map/model.js';
import { isObject } from './display.js';
import type { SoapObject, SoapValue } from './operation.js';
import { optionalSpatialReference, soapSpatialReference } from './spatial-reference.js';

type Pos = readonly number[];
type Ring = readonly Pos[];

const finite = (v: SoapValue): v is number => typeof v === 'number' && Number.isFinite(v);

function pointOf(v: SoapValue, path: string): Pos {
  if (!isObject(v) || !finite(v['X']) || !finite(v['Y'])) throw invalidArgument(path, `${path}: a point needs finite X and Y`);
  return [v['X'] as number, v['Y'] as number];
}

function pointsOf(v: SoapValue, path: string): Pos[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidArgument(path, `${path} must be an array of points`);
  return (v as SoapValue[]).map((p, i) => pointOf(p, `${path}[${i}]`));
}

/** Points of a Path or Ring: its PointArray, or the end points of its Line segments. */
function pathPoints(v: SoapValue, path: string): Pos[] {
  if (!isObject(v)) throw invalidArgument(path, `${path} must be a path`);
  if (Array.isArray(v['PointArray'])) return pointsOf(v['PointArray'], `${path}/PointArray`);
  const segments = v['SegmentArray'];
  if (!Array.isArray(segments)) return [];
  const out: Pos[] = [];
  (segments as SoapValue[]).forEach((s, i) => {
    const at = `${path}/SegmentArray[${i}]`;
    if (!isObject(s) || s.$type !== 'Line') {
      // Decision: curves (CircularArc, EllipticArc, BezierCurve) are refused rather than approximated silently.
      throw invalidArgument(at, `${at}: only Line segments are supported; send curves densified as point arrays`);
    }
    const from = pointOf(s['FromPoint'], `${at}/FromPoint`);
    if (out.length === 0) out.push(from);
    out.push(pointOf(s['ToPoint'], `${at}/ToPoint`));
  });
  return out;
}

/** Twice the signed area (shoelace; positive = counter-clockwise with y up). */
export function signedArea2(ring: Ring): number {
  let a = 0;
  for (let i = 0, n = ring.length; i < n; i++) {
    const p = ring[i]!;
    const q = ring[(i + 1) % n]!;
    a += p[0]! * q[1]! - q[0]! * p[1]!;
  }
  return a;
}

function pointInRing(x: number, y: number, ring: Ring): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const xi = ring[i]![0]!;
    const yi = ring[i]![1]!;
    const xj = ring[j]![0]!;
    const yj = ring[j]![1]!;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

const closed = (r: Pos[]): Pos[] => {
  if (r.length === 0) return r;
  const a = r[0]!;
  const b = r[r.length - 1]!;
  return a[0] === b[0] && a[1] === b[1] ? r : [...r, a];
};

/** Vendor rings (outer clockwise, holes counter-clockwise) -> GeoJSON (Multi)Polygon coordinates. */
function polygonOfRings(rings: Pos[][]): Geometry {
  const outers: Pos[][][] = [];
  const holes: Pos[][] = [];
  for (const r of rings) {
    if (r.length < 4) continue;
    if (signedArea2(r) <= 0) outers.push([r]);
    else holes.push(r);
  }
  for (const h of holes) {
    const [x, y] = h[0]!;
    const owner = outers.find((o) => pointInRing(x!, y!, o[0]!));
    // Decision: a counter-clockwise ring inside no outer ring is an outer ring drawn the other way round.
    if (owner) owner.push(h);
    else outers.push([[...h].reverse()]);
  }
  // GeoJSON (RFC 7946) winds outer rings counter-clockwise and holes clockwise.
  const geo = outers.map((p) => p.map((r, i) => ((i === 0) === signedArea2(r) < 0 ? [...r].reverse() : r)));
  return geo.length === 1 ? { type: 'Polygon', coordinates: geo[0]! } : { type: 'MultiPolygon', coordinates: geo };
}

export interface GeometryWithSr {
  readonly geometry: Geometry;
  /** The geometry's own SpatialReference element, when it had one. */
  readonly spatialReference?: SpatialReference;
}

/** A SOAP Geometry value as GeoJSON (an EnvelopeN becomes its rectangle polygon). Errors name `path`. */
export function geometryOfSoap(v: SoapValue, path: string): GeometryWithSr {
  if (!isObject(v)) throw invalidArgument(path, `${path} must be a geometry`);
  const sr = optionalSpatialReference(v['SpatialReference'], `${path}/SpatialReference`);
  const withSr = (geometry: Geometry): GeometryWithSr => (sr ? { geometry, spatialReference: sr } : { geometry });
  switch (v.$type) {
    case 'PointN':
      return withSr({ type: 'Point', coordinates: pointOf(v, path) });
    case 'MultipointN':
      return withSr({ type: 'MultiPoint', coordinates: pointsOf(v['PointArray'], `${path}/PointArray`) });
    case 'EnvelopeN': {
      const n = (k: string): number => {
        if (!finite(v[k])) throw invalidArgument(`${path}/${k}`, `${path}/${k} must be a finite number`);
        return v[k] as number;
      };
      const [x0, y0, x1, y1] = [n('XMin'), n('YMin'), n('XMax'), n('YMax')];
      if (x0 > x1 || y0 > y1) throw invalidArgument(path, `${path}: XMin must not exceed XMax nor YMin exceed YMax`);
      return withSr({
        type: 'Polygon',
        coordinates: [
          [
            [x0, y0],
            [x1, y0],
            [x1, y1],
            [x0, y1],
            [x0, y0],
          ],
        ],
      });
    }
    case 'PolylineN': {
      const paths = Array.isArray(v['PathArray']) ? (v['PathArray'] as SoapValue[]) : [];
      const lines = paths.map((p, i) => pathPoints(p, `${path}/PathArray[${i}]`)).filter((l) => l.length >= 2);
      if (lines.length === 0)
        throw invalidArgument(`${path}/PathArray`, `${path}/PathArray: a polyline needs a path of two points or more`);
      return withSr(lines.length === 1 ? { type: 'LineString', coordinates: lines[0]! } : { type: 'MultiLineString', coordinates: lines });
    }
    case 'PolygonN': {
      const rings = Array.isArray(v['RingArray']) ? (v['RingArray'] as SoapValue[]) : [];
      const pts = rings.map((r, i) => closed(pathPoints(r, `${path}/RingArray[${i}]`))).filter((r) => r.length >= 4);
      if (pts.length === 0) throw invalidArgument(`${path}/RingArray`, `${path}/RingArray: a polygon needs a ring of three points or more`);
      return withSr(polygonOfRings(pts));
    }
    default:
      throw invalidArgument(
        path,
        `${path}: geometry type '${v.$type ?? 'Geometry'}' is not supported (send PointN, MultipointN, EnvelopeN, PolylineN or PolygonN)`,
      );
  }
}

/** Every position of a geometry. */
export function positionsOf(g: Geometry): Pos[] {
  switch (g.type) {
    case 'Point':
      return [g.coordinates];
    case 'MultiPoint':
    case 'LineString':
      return [...g.coordinates];
    case 'MultiLineString':
    case 'Polygon':
      return g.coordinates.flat();
    case 'MultiPolygon':
      return g.coordinates.flat(2);
  }
}

/** The bounding extent of a geometry (undefined when it has no position). */
export function extentOfGeometry(g: Geometry): Extent | undefined {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  for (const p of positionsOf(g)) {
    const x = p[0]!;
    const y = p[1]!;
    if (x < xmin) xmin = x;
    if (x > xmax) xmax = x;
    if (y < ymin) ymin = y;
    if (y > ymax) ymax = y;
  }
  return xmin <= xmax ? { xmin, ymin, xmax, ymax } : undefined;
}

/** A geometry with every position mapped (reprojection); positions that map to NaN are kept as NaN. */
export function mapGeometry(g: Geometry, f: (x: number, y: number) => readonly [number, number]): Geometry {
  const p = (c: Pos): Pos => f(c[0]!, c[1]!);
  switch (g.type) {
    case 'Point':
      return { type: 'Point', coordinates: p(g.coordinates) };
    case 'MultiPoint':
      return { type: 'MultiPoint', coordinates: g.coordinates.map(p) };
    case 'LineString':
      return { type: 'LineString', coordinates: g.coordinates.map(p) };
    case 'MultiLineString':
      return { type: 'MultiLineString', coordinates: g.coordinates.map((l) => l.map(p)) };
    case 'Polygon':
      return { type: 'Polygon', coordinates: g.coordinates.map((r) => r.map(p)) };
    case 'MultiPolygon':
      return { type: 'MultiPolygon', coordinates: g.coordinates.map((q) => q.map((r) => r.map(p))) };
  }
}

const soapPoint = (c: Pos): SoapObject => ({ $type: 'PointN', X: c[0]!, Y: c[1]! });

export function soapEnvelope(e: Extent, sr?: SpatialReference): SoapObject {
  return {
    $type: 'EnvelopeN',
    XMin: e.xmin,
    YMin: e.ymin,
    XMax: e.xmax,
    YMax: e.ymax,
    ...(sr ? { SpatialReference: soapSpatialReference(sr) } : {}),
  };
}

/** A GeoJSON geometry as its SOAP geometry (N types), with its SpatialReference when `sr` is given. */
export function soapGeometry(g: Geometry, sr?: SpatialReference): SoapObject {
  const srPart = sr ? { SpatialReference: soapSpatialReference(sr) } : {};
  const flags = { HasID: false, HasZ: false, HasM: false };
  const extent = extentOfGeometry(g);
  const extentPart = extent ? { Extent: soapEnvelope(extent) } : {};
  switch (g.type) {
    case 'Point':
      return { ...soapPoint(g.coordinates), ...srPart };
    case 'MultiPoint':
      return { $type: 'MultipointN', ...flags, ...extentPart, PointArray: g.coordinates.map(soapPoint), ...srPart };
    case 'LineString':
    case 'MultiLineString': {
      const lines = g.type === 'LineString' ? [g.coordinates] : g.coordinates;
      return {
        $type: 'PolylineN',
        ...flags,
        ...extentPart,
        PathArray: lines.map((l) => ({ $type: 'Path', PointArray: l.map(soapPoint) })),
        ...srPart,
      };
    }
    case 'Polygon':
    case 'MultiPolygon': {
      const polys = g.type === 'Polygon' ? [g.coordinates] : g.coordinates;
      const rings: SoapObject[] = [];
      for (const poly of polys) {
        poly.forEach((r, i) => {
          // Vendor winding: outer rings clockwise (negative area), holes counter-clockwise.
          const wantClockwise = i === 0;
          const ring = wantClockwise === signedArea2(r) < 0 ? r : [...r].reverse();
          rings.push({ $type: 'Ring', PointArray: ring.map(soapPoint) });
        });
      }
      return { $type: 'PolygonN', ...flags, ...extentPart, RingArray: rings, ...srPart };
    }
  }
}

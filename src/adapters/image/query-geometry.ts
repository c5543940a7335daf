/**
 * Geometries and spatial references of image service requests (identify, computeHistograms):
 * Esri JSON points, envelopes and polygons or their comma-separated short forms, in any spatial
 * reference proj4 knows (wkid, latestWkid, wkt), mapped into the raster's spatial reference.
 */
import { EngineError } from '../../core/errors.js';
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import type { MultiPolygon } from '../../chipper/geometry.js';
import { converter, reprojection, sameSpatialReference } from '../../graph/align.js';
import { parseSpatialReference } from './render-request.js';

const invalid = (param: string, message: string): EngineError =>
  new EngineError('INVALID_ARGUMENT', message, { path: param, details: [message] });

export type XY = readonly [number, number];

/**
 * A point mapper from `from` to `to` (identity when they are the same or either is unknown);
 * points that do not transform come back as NaN.
 */
export function transformer(from: SpatialReference | undefined, to: SpatialReference | undefined): (x: number, y: number) => XY {
  if (sameSpatialReference(from, to)) return (x, y) => [x, y];
  const [a, b] = reprojection(from, to, 'geometry');
  const c = converter(a, b);
  return (x, y) => {
    try {
      const p = c.forward([x, y]);
      return [p[0] ?? Number.NaN, p[1] ?? Number.NaN];
    } catch {
      return [Number.NaN, Number.NaN];
    }
  };
}

const parseJsonParam = (value: string, param: string): unknown => {
  try {
    return JSON.parse(value);
  } catch {
    throw invalid(param, `'${param}' is not valid JSON.`);
  }
};

const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

export type GeometryKind = 'point' | 'envelope' | 'polygon';

export interface ParsedGeometry {
  readonly kind: GeometryKind;
  /** point: [x, y]; envelope: [xmin, ymin, xmax, ymax]; polygon: flat rings. */
  readonly point?: XY;
  readonly envelope?: Extent;
  readonly rings?: readonly (readonly XY[])[];
  /** The geometry's own `spatialReference`, when it has one. */
  readonly sr?: unknown;
}

/** `geometryType`: `esriGeometryPoint` (also the `geo` spelling `geoGeometryPoint`), envelope, polygon. */
export function parseGeometryType(
  value: string | undefined,
  allowed: readonly GeometryKind[],
  fallback?: GeometryKind,
): GeometryKind | undefined {
  if (value === undefined || value.trim() === '') return fallback;
  const m = /^(?:esri|geo)geometry(point|envelope|polygon)$/i.exec(value.trim());
  const kind = m?.[1]?.toLowerCase() as GeometryKind | undefined;
  if (kind === undefined || !allowed.includes(kind)) {
    const names = allowed.map((k) => `esriGeometry${k[0]!.toUpperCase()}${k.slice(1)}`).join(', ');
    throw invalid('geometryType', `'geometryType' must be one of ${names}.`);
  }
  return kind;
}

/** The `geometry` parameter: Esri JSON, or `x,y` (point) / `xmin,ymin,xmax,ymax` (envelope). */
export function parseGeometry(value: string | undefined, kind: GeometryKind | undefined): ParsedGeometry {
  if (value === undefined || value.trim() === '') throw invalid('geometry', `'geometry' is required.`);
  const t = value.trim();
  if (!t.startsWith('{')) {
    const parts = t.split(',').map((s) => Number(s.trim()));
    if (parts.some((p) => !Number.isFinite(p))) throw invalid('geometry', `'geometry' must be JSON or comma-separated numbers.`);
    if (parts.length === 2 && (kind === undefined || kind === 'point')) return { kind: 'point', point: [parts[0]!, parts[1]!] };
    if (parts.length === 4 && (kind === undefined || kind === 'envelope')) {
      return { kind: 'envelope', envelope: envelopeOf(parts[0]!, parts[1]!, parts[2]!, parts[3]!) };
    }
    throw invalid('geometry', `'geometry' does not match its geometryType.`);
  }
  const o = parseJsonParam(t, 'geometry');
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw invalid('geometry', `'geometry' must be a JSON object.`);
  const g = o as Record<string, unknown>;
  const sr = g['spatialReference'];
  const withSr = sr === undefined || sr === null ? {} : { sr };
  if (num(g['x']) && num(g['y']) && (kind === undefined || kind === 'point')) return { kind: 'point', point: [g['x'], g['y']], ...withSr };
  if (num(g['xmin']) && num(g['ymin']) && num(g['xmax']) && num(g['ymax']) && (kind === undefined || kind === 'envelope')) {
    return { kind: 'envelope', envelope: envelopeOf(g['xmin'], g['ymin'], g['xmax'], g['ymax']), ...withSr };
  }
  if (Array.isArray(g['rings']) && (kind === undefined || kind === 'polygon')) {
    const rings = (g['rings'] as unknown[]).map((ring, i) => {
      if (!Array.isArray(ring) || ring.length < 3) throw invalid('geometry', `Ring ${i} of 'geometry' needs at least 3 points.`);
      return ring.map((p) => {
        if (!Array.isArray(p) || !num(p[0]) || !num(p[1]))
          throw invalid('geometry', `Ring ${i} of 'geometry' holds a point that is not [x, y].`);
        return [p[0], p[1]] as XY;
      });
    });
    if (rings.length === 0) throw invalid('geometry', `'geometry' has no rings.`);
    return { kind: 'polygon', rings, ...withSr };
  }
  throw invalid('geometry', `'geometry' is not a ${kind ?? 'point, envelope or polygon'} geometry.`);
}

function envelopeOf(a: number, b: number, c: number, d: number): Extent {
  if (!(c > a && d > b)) throw invalid('geometry', `The envelope of 'geometry' must have xmax > xmin and ymax > ymin.`);
  return { xmin: a, ymin: b, xmax: c, ymax: d };
}

/** The geometry's spatial reference: its own `spatialReference`, else the `sr`-like parameter, else the raster's. */
export function geometrySr(
  g: ParsedGeometry,
  srParam: string | undefined,
  paramName: string,
  raster: SpatialReference | undefined,
): SpatialReference | undefined {
  if (g.sr !== undefined) return parseSpatialReference(g.sr, 'geometry.spatialReference');
  if (srParam !== undefined && srParam.trim() !== '') return parseSpatialReference(srParam, paramName);
  return raster;
}

/** Points along each side of an envelope, so a reprojected envelope keeps its curved sides. */
const DENSIFY = 16;

/**
 * A polygon or envelope as rings of the raster's map coordinates (envelopes densified). Even-odd
 * between rings, as the vendor's rings (outer clockwise, holes counter-clockwise) read.
 */
export function ringsInRasterSr(g: ParsedGeometry, map: (x: number, y: number) => XY): XY[][] {
  if (g.kind === 'envelope') {
    const e = g.envelope!;
    const ring: XY[] = [];
    const side = (x0: number, y0: number, x1: number, y1: number): void => {
      for (let i = 0; i < DENSIFY; i++) ring.push(map(x0 + ((x1 - x0) * i) / DENSIFY, y0 + ((y1 - y0) * i) / DENSIFY));
    };
    side(e.xmin, e.ymax, e.xmax, e.ymax);
    side(e.xmax, e.ymax, e.xmax, e.ymin);
    side(e.xmax, e.ymin, e.xmin, e.ymin);
    side(e.xmin, e.ymin, e.xmin, e.ymax);
    return [ring];
  }
  if (g.kind === 'polygon') return g.rings!.map((r) => r.map(([x, y]) => map(x, y)));
  throw invalid('geometry', `'geometry' must be an envelope or a polygon.`);
}

export function boundsOf(rings: readonly (readonly XY[])[]): Extent {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  for (const r of rings)
    for (const [x, y] of r) {
      if (!Number.isFinite(x) || !Number.isFinite(y))
        throw invalid('geometry', `'geometry' cannot be mapped into the raster's spatial reference.`);
      xmin = Math.min(xmin, x);
      ymin = Math.min(ymin, y);
      xmax = Math.max(xmax, x);
      ymax = Math.max(ymax, y);
    }
  return { xmin, ymin, xmax, ymax };
}

/** Rings of map coordinates as a MultiPolygon in pixel coordinates of a grid whose top-left is (x0, y0). */
export function toPixelPolygon(rings: readonly (readonly XY[])[], x0: number, y0: number, cellX: number, cellY: number): MultiPolygon {
  return [rings.map((r) => r.flatMap(([x, y]) => [(x - x0) / cellX, (y0 - y) / cellY]))];
}

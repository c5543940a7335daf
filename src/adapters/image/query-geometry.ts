/**
 * Geometries and spatial references of image service requests (identify, computeHistograms):
 * Esri JSON points, envelopes and polygons or their comma-separated short forms, in any spatial
 * reference proj4 knows (wkid, latestWkid, wkt), mapped into the raster's spatial reference.
 */
import { EngineError } from '../../core/errors.js';
import { proj4Lib, proj4ForEpsg } from '../../core/crs.js';
import type { Extent, RasterInfo, SpatialReference } from '../../core/pixel-block.js';
import type { MultiPolygon } from '../../chipper/geometry.js';

const invalid = (param: string, message: string): EngineError =>
  new EngineError('INVALID_ARGUMENT', message, { path: param, details: [message] });

/** The vendor's Web Mercator aliases. */
const WEB_MERCATOR_ALIASES = new Set([102100, 102113, 900913, 3857]);

/** A parsed spatial reference: the JSON to echo and a proj4 definition. */
export interface ParsedSr {
  readonly json: Record<string, unknown>;
  readonly def: string;
  readonly wkid?: number;
}

function srOfWkid(wkid: number, param: string): ParsedSr {
  const code = WEB_MERCATOR_ALIASES.has(wkid) ? 3857 : wkid;
  const def = proj4ForEpsg(code);
  if (def === undefined) throw invalid(param, `The spatial reference ${wkid} of '${param}' is not supported.`);
  return { json: wkid === 3857 || wkid === 102100 ? { wkid: 102100, latestWkid: 3857 } : { wkid }, def, wkid: code };
}

/** A spatial reference parameter: a wkid (`4326`), or JSON `{wkid}` / `{latestWkid}` / `{wkt}`. */
export function parseSr(value: unknown, param: string): ParsedSr {
  let v = value;
  if (typeof v === 'string') {
    const t = v.trim();
    if (/^\d+$/.test(t)) return srOfWkid(Number(t), param);
    try {
      v = JSON.parse(t);
    } catch {
      throw invalid(param, `'${param}' must be a wkid or a spatial reference JSON object.`);
    }
  }
  if (typeof v === 'number' && Number.isInteger(v)) return srOfWkid(v, param);
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw invalid(param, `'${param}' must be a wkid or a spatial reference JSON object.`);
  const o = v as Record<string, unknown>;
  const latest = o['latestWkid'];
  const wkid = o['wkid'];
  if (typeof latest === 'number' && proj4ForEpsg(WEB_MERCATOR_ALIASES.has(latest) ? 3857 : latest) !== undefined) {
    return { ...srOfWkid(latest, param), json: { ...o } };
  }
  if (typeof wkid === 'number') return { ...srOfWkid(wkid, param), json: { ...o } };
  if (typeof o['wkt'] === 'string') {
    try {
      proj4Lib()(o['wkt'], o['wkt']);
    } catch {
      throw invalid(param, `The well-known text of '${param}' is not a spatial reference this server knows.`);
    }
    return { json: { wkt: o['wkt'] }, def: o['wkt'] };
  }
  throw invalid(param, `'${param}' must name a spatial reference by wkid or wkt.`);
}

/** The raster's spatial reference as a ParsedSr (undefined when the raster has none). */
export function rasterSr(info: RasterInfo): ParsedSr | undefined {
  const sr: SpatialReference | undefined = info.spatialReference;
  if (sr === undefined) return undefined;
  const def = sr.proj4 ?? (sr.wkid !== undefined ? proj4ForEpsg(sr.wkid) : undefined) ?? sr.wkt;
  if (def === undefined) return undefined;
  const json =
    sr.wkid !== undefined
      ? sr.wkid === 3857
        ? { wkid: 102100, latestWkid: 3857 }
        : { wkid: sr.wkid, latestWkid: sr.wkid }
      : { wkt: sr.wkt };
  return { json, def, ...(sr.wkid !== undefined ? { wkid: sr.wkid } : {}) };
}

export type XY = readonly [number, number];

/** A point mapper from `from` to `to` (identity when they are the same or either is unknown). */
export function transformer(from: ParsedSr | undefined, to: ParsedSr | undefined): (x: number, y: number) => XY {
  if (from === undefined || to === undefined || from.def === to.def || (from.wkid !== undefined && from.wkid === to.wkid))
    return (x, y) => [x, y];
  const t = proj4Lib()(from.def, to.def);
  return (x, y) => {
    const [px, py] = t.forward([x, y]) as [number, number];
    return [px, py];
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

/** The request's SR of the geometry: its own `spatialReference`, else `sr`/`inSR` parameter, else the raster's. */
export function geometrySr(
  g: ParsedGeometry,
  srParam: string | undefined,
  paramName: string,
  raster: ParsedSr | undefined,
): ParsedSr | undefined {
  if (g.sr !== undefined) return parseSr(g.sr, 'geometry.spatialReference');
  if (srParam !== undefined && srParam.trim() !== '') return parseSr(srParam, paramName);
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

/**
 * The engine's one geodesy: metres per degree on the ellipsoid, per-row ground cell sizes of
 * geographic (degree) grids, and the ellipsoid of a raster's spatial reference. Every function
 * that turns degrees into metres (Slope, Aspect, Hillshade, Curvature, ShadedRelief,
 * SurfaceParamFunction, VectorFieldRenderer, UnitConversion) goes through this module, so two
 * functions on the same geographic DEM cannot disagree about the size of a cell.
 *
 * ## The model
 *
 * On an ellipsoid with semi-major axis a and first eccentricity squared e2, at geodetic latitude
 * phi, with w = 1 - e2 sin^2(phi):
 *
 *     metres per degree of longitude (along the parallel) = pi/180 * a cos(phi) / sqrt(w)          = pi/180 * N(phi) cos(phi)
 *     metres per degree of latitude  (along the meridian) = pi/180 * a (1 - e2) / w^(3/2)           = pi/180 * M(phi)
 *
 * N is the prime-vertical radius of curvature and M the meridional one. A cell of a geographic grid
 * is `dlon` x `dlat` degrees; its ground size in raster row `row` is taken at the latitude of the
 * row's centre (`rowCellSize`). For cells of a few arc-seconds the error of using the centre's
 * radii instead of the arc between the row's edges is below 1e-9 relative.
 *
 * ## Which ellipsoid
 *
 * The raster's own, where its spatial reference says it (`ellipsoidOf`: the proj4 string's
 * `+a/+b/+rf/+f/+es/+R`, `+ellps=`, `+datum=`; else the WKT's SPHEROID/ELLIPSOID; else the EPSG
 * code's datum); WGS 84 otherwise. The differences are small (Clarke 1866 vs WGS 84: 3e-5
 * relative) but cost nothing to get right.
 *
 * ## Constants that remain
 *
 * - `METERS_PER_EQUATORIAL_DEGREE` = pi/180 * a on WGS 84 (111319.490793 m): a "decimal degree"
 *   used as a linear unit where no latitude is known (UnitConversion's code 11, a distance given in
 *   decimal degrees on a projected raster). It is the longitude formula above at phi = 0.
 * - `VENDOR_METERS_PER_DEGREE` = 111000: the vendor client's flat rule for geographic DEMs, used
 *   only where a function offers it as an explicit option (`GeographicCellSize: Vendor111000`).
 *
 * Per-row sizes are computed once per row by the kernels (never per pixel), from plain numbers
 * (`GeodesicRows`), so they depend on the absolute raster row only: tiles agree with the whole.
 */
import { parseProj4, proj4ForEpsg, proj4Lib } from './crs.js';
import type { RasterInfo, SpatialReference } from './pixel-block.js';

const RAD = Math.PI / 180;

/** An ellipsoid: semi-major axis (metres) and first eccentricity squared. */
export interface Ellipsoid {
  readonly a: number;
  readonly e2: number;
}

/** From the semi-major axis and the inverse flattening (0 or Infinity: a sphere). */
function ellipsoidOfFlattening(a: number, rf: number): Ellipsoid {
  const f = rf === 0 || !Number.isFinite(rf) ? 0 : 1 / rf;
  return { a, e2: f * (2 - f) };
}

/** From the semi-axes. */
const ellipsoidOfAxes = (a: number, b: number): Ellipsoid => ({ a, e2: 1 - (b * b) / (a * a) });

/** WGS 84 (EPSG:7030): a = 6378137 m, 1/f = 298.257223563. */
export const WGS84: Ellipsoid = ellipsoidOfFlattening(6378137, 298.257223563);

/** Ellipsoids by proj4 `+ellps=` name (the values of PROJ and proj4js). Others: proj4js's table. */
const ELLIPSOIDS: Readonly<Record<string, Ellipsoid>> = {
  WGS84,
  GRS80: ellipsoidOfFlattening(6378137, 298.257222101),
  WGS72: ellipsoidOfFlattening(6378135, 298.26),
  clrk66: ellipsoidOfAxes(6378206.4, 6356583.8),
  clrk80: ellipsoidOfFlattening(6378249.145, 293.4663),
  intl: ellipsoidOfFlattening(6378388, 297),
  bessel: ellipsoidOfFlattening(6377397.155, 299.1528128),
  krass: ellipsoidOfFlattening(6378245, 298.3),
  airy: ellipsoidOfAxes(6377563.396, 6356256.91),
  sphere: { a: 6370997, e2: 0 },
};

/** The ellipsoid of proj4 `+datum=` names (PROJ's datum table). */
const DATUM_ELLIPSOIDS: Readonly<Record<string, string>> = {
  WGS84: 'WGS84',
  NAD83: 'GRS80',
  GGRS87: 'GRS80',
  NAD27: 'clrk66',
  potsdam: 'bessel',
  hermannskogel: 'bessel',
  ch1903: 'bessel',
  nzgd49: 'intl',
  OSGB36: 'airy',
  carthage: 'clrk80',
};

/** Metres per degree of longitude, along the parallel at latitude `lat` (degrees). */
export function metersPerDegreeLongitude(lat: number, e: Ellipsoid = WGS84): number {
  const r = lat * RAD;
  const s = Math.sin(r);
  return (RAD * e.a * Math.cos(r)) / Math.sqrt(1 - e.e2 * s * s);
}

/** Metres per degree of latitude, along the meridian at latitude `lat` (degrees). */
export function metersPerDegreeLatitude(lat: number, e: Ellipsoid = WGS84): number {
  const s = Math.sin(lat * RAD);
  const w = 1 - e.e2 * s * s;
  return (RAD * e.a * (1 - e.e2)) / (w * Math.sqrt(w));
}

/** A degree of the WGS 84 equator, pi/180 * a = 111319.490793 m: a decimal degree as a linear unit where no latitude is known. */
export const METERS_PER_EQUATORIAL_DEGREE = metersPerDegreeLongitude(0);

/** The vendor client's flat metres per degree for geographic DEMs; only behind an explicit option. */
export const VENDOR_METERS_PER_DEGREE = 111000;

/**
 * The ellipsoid of a spatial reference: its proj4 definition, its WKT, its EPSG code's datum;
 * WGS 84 when none of them says (or for no spatial reference).
 */
export function ellipsoidOf(sr: SpatialReference | undefined): Ellipsoid {
  if (sr === undefined) return WGS84;
  const fromProj = sr.proj4 === undefined ? undefined : ellipsoidOfProj4(sr.proj4);
  if (fromProj) return fromProj;
  const fromWkt = sr.wkt === undefined ? undefined : ellipsoidOfWkt(sr.wkt);
  if (fromWkt) return fromWkt;
  if (sr.wkid !== undefined) {
    const def = proj4ForEpsg(sr.wkid);
    const e = def === undefined ? undefined : ellipsoidOfProj4(def);
    if (e) return e;
  }
  return WGS84;
}

/** The ellipsoid a proj4 string names or gives by its axes; undefined when it says nothing usable. */
export function ellipsoidOfProj4(def: string): Ellipsoid | undefined {
  const p = parseProj4(def);
  const num = (k: string): number | undefined => {
    const v = p.get(k);
    const n = v === undefined || v === '' ? Number.NaN : Number(v);
    return Number.isFinite(n) ? n : undefined;
  };
  const R = num('R');
  if (R !== undefined && R > 0) return { a: R, e2: 0 };
  const datum = p.get('datum');
  const ellps = p.get('ellps') ?? (datum === undefined ? undefined : DATUM_ELLIPSOIDS[datum]);
  const named = ellps !== undefined ? (ELLIPSOIDS[ellps] ?? proj4Ellipsoid(def)) : datum !== undefined ? proj4Ellipsoid(def) : undefined;
  const a = num('a') ?? named?.a;
  if (a === undefined || !(a > 0)) return undefined;
  const b = num('b');
  const rf = num('rf');
  const f = num('f');
  const es = num('es');
  if (b !== undefined && b > 0) return ellipsoidOfAxes(a, b);
  if (rf !== undefined) return ellipsoidOfFlattening(a, rf);
  if (f !== undefined) return { a, e2: f * (2 - f) };
  if (es !== undefined && es >= 0 && es < 1) return { a, e2: es };
  if (named) return { a, e2: named.e2 };
  return { a, e2: 0 }; // +a alone: PROJ takes a sphere
}

/** An ellipsoid or datum name this module does not list: ask proj4js, which knows PROJ's tables. */
function proj4Ellipsoid(def: string): Ellipsoid | undefined {
  try {
    const P = proj4Lib().Proj(def) as unknown as { a?: number; es?: number };
    return typeof P.a === 'number' && P.a > 0 && typeof P.es === 'number' ? { a: P.a, e2: P.es } : undefined;
  } catch {
    return undefined;
  }
}

/** The first SPHEROID["name", a, rf] (WKT 1) or ELLIPSOID["name", a, rf, ...] (WKT 2) of a WKT. */
export function ellipsoidOfWkt(wkt: string): Ellipsoid | undefined {
  const m = /\b(?:SPHEROID|ELLIPSOID)\s*[[(]\s*"[^"]*"\s*,\s*([0-9.eE+-]+)\s*,\s*([0-9.eE+-]+)/i.exec(wkt);
  if (!m) return undefined;
  const a = Number(m[1]);
  const rf = Number(m[2]);
  if (!(a > 0) || !Number.isFinite(rf)) return undefined;
  // WKT 2 may give the axis in another length unit; axes near the Earth's are metres.
  if (a < 6e6 || a > 7e6) return undefined;
  return ellipsoidOfFlattening(a, rf);
}

/**
 * A geographic grid, for ground cell sizes per row: the north edge and the cell size in degrees,
 * and the ellipsoid. Plain numbers (structured-cloneable, cheap to keep in a plan's params).
 */
export interface GeodesicRows {
  readonly ymax: number;
  readonly dlon: number;
  readonly dlat: number;
  readonly a: number;
  readonly e2: number;
}

/** The per-row geometry of a geographic raster; undefined for projected (or unknown) ones. */
export function geodesicRows(info: RasterInfo): GeodesicRows | undefined {
  if (info.spatialReference?.geographic !== true) return undefined;
  const e = ellipsoidOf(info.spatialReference);
  return { ymax: info.extent.ymax, dlon: info.cellSize.x, dlat: info.cellSize.y, a: e.a, e2: e.e2 };
}

/**
 * Latitude (degrees) of the centre of raster row `row` (any real number: (H - 1) / 2 is the middle),
 * clamped to the centre of a row that touches a pole.
 */
function rowLatitude(g: GeodesicRows, row: number): number {
  const lim = 90 - g.dlat / 2;
  const phi = g.ymax - (row + 0.5) * g.dlat;
  return phi > lim ? lim : phi < -lim ? -lim : phi;
}

/**
 * Metres of one cell of raster row `row`, written to `out`: x = N(phi) cos(phi) dlon (the cell's
 * stretch of parallel), y = M(phi) dlat (its meridian arc), phi the row centre's latitude. Call it
 * once per row. Depends on `row` alone, so tiles and the whole agree.
 */
export function rowCellSize(g: GeodesicRows, row: number, out: { x: number; y: number }): void {
  const r = rowLatitude(g, row) * RAD;
  const s = Math.sin(r);
  const w = 1 - g.e2 * s * s;
  const sw = Math.sqrt(w);
  out.x = (g.a / sw) * Math.cos(r) * (g.dlon * RAD);
  out.y = ((g.a * (1 - g.e2)) / (w * sw)) * (g.dlat * RAD);
}

/**
 * The ground size of a raster's cells in metres, as one number per axis: a projected raster's cell
 * size times its linear unit (1 m when it does not say); a geographic raster's cells at the latitude
 * of its middle row. For decisions made once per raster (a window or symbol size from a distance).
 */
export function groundCellSize(info: RasterInfo): { x: number; y: number } {
  const g = geodesicRows(info);
  if (g === undefined) {
    const m = info.spatialReference?.metersPerUnit ?? 1;
    return { x: info.cellSize.x * m, y: info.cellSize.y * m };
  }
  const out = { x: 0, y: 0 };
  rowCellSize(g, (info.height - 1) / 2, out);
  return out;
}

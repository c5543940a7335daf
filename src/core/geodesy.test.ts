/**
 * The engine's one geodesy against an independent tool: pyproj 3.4.1 (PROJ 9.1.1) `Geod`, which is
 * Karney's GeographicLib. Metres per degree there are geodesic lengths of short lines, divided by
 * their length in degrees (the printed values below were produced by this snippet):
 *
 *     from pyproj import Geod
 *     d = 1e-4
 *     g = Geod(ellps='WGS84')                       # also 'GRS80', 'clrk66', 'intl'
 *     x = g.inv(0, lat, d, lat)[2] / d               # along the parallel
 *     y = g.inv(0, lat - d/2, 0, lat + d/2)[2] / d   # along the meridian
 *
 * A geodesic 1e-4 degree long differs from the parallel arc and from M(phi) times its length by
 * less than 1e-11 relative, so the values agree with the closed forms to 1e-9 relative.
 */
import { describe, expect, it } from 'vitest';
import {
  ellipsoidOf,
  ellipsoidOfProj4,
  ellipsoidOfWkt,
  geodesicRows,
  groundCellSize,
  METERS_PER_EQUATORIAL_DEGREE,
  metersPerDegreeLatitude,
  metersPerDegreeLongitude,
  rowCellSize,
  VENDOR_METERS_PER_DEGREE,
  WGS84,
} from './geodesy.js';
import type { RasterInfo } from './pixel-block.js';

/** A one-band grid whose north-west corner is `origin`. */
const gridInfo = (o: { width: number; height: number; cellSize: number; origin?: { x: number; y: number } }): RasterInfo => {
  const { x, y } = o.origin ?? { x: 0, y: 0 };
  return {
    width: o.width,
    height: o.height,
    bandCount: 1,
    pixelType: 'F32',
    extent: { xmin: x, ymin: y - o.height * o.cellSize, xmax: x + o.width * o.cellSize, ymax: y },
    cellSize: { x: o.cellSize, y: o.cellSize },
  };
};

/** pyproj Geod values: [latitude, metres per degree of longitude, of latitude]. */
const PYPROJ: Readonly<Record<string, readonly (readonly [number, number, number])[]>> = {
  WGS84: [
    [0, 111319.49079327357, 110574.27582159784],
    [36.3, 89820.95880186175, 110964.57154839963],
    [45, 78846.83509397315, 111131.77741993581],
    [60, 55800.001572430825, 111412.28745738382],
    [80, 19393.485528129764, 111659.94041641099],
    [-45, 78846.83509397315, 111131.77741993581],
  ],
  clrk66: [
    [0, 111320.70205177447, 110567.2102915711],
    [36.3, 89823.10807301269, 110961.82423744266],
    [60, 55802.170920758654, 111414.52533104128],
  ],
  intl: [
    [45, 78850.49751365812, 111135.35150562454],
    [80, 19394.516527611006, 111665.77997143668],
  ],
  GRS80: [[36.3, 89820.9588023786, 110964.57155073172]],
};

const close = (actual: number, expected: number, rel = 1e-9) =>
  expect(Math.abs(actual - expected) / expected, `${actual} vs ${expected}`).toBeLessThan(rel);

describe('metres per degree on the ellipsoid (against pyproj Geod)', () => {
  it('WGS 84, Clarke 1866, International 1909, GRS 80 at several latitudes', () => {
    for (const [name, rows] of Object.entries(PYPROJ)) {
      const e = ellipsoidOfProj4(`+proj=longlat +ellps=${name} +no_defs`)!;
      for (const [lat, x, y] of rows) {
        close(metersPerDegreeLongitude(lat, e), x);
        close(metersPerDegreeLatitude(lat, e), y);
      }
    }
  });

  it('WGS 84 is the default, and the equatorial degree is pi/180 a', () => {
    close(metersPerDegreeLongitude(45), 78846.83509397315);
    expect(METERS_PER_EQUATORIAL_DEGREE).toBe(metersPerDegreeLongitude(0, WGS84));
    expect(METERS_PER_EQUATORIAL_DEGREE).toBeCloseTo(111319.490793, 6); // UnitConversion's published factor
    expect(VENDOR_METERS_PER_DEGREE).toBe(111000);
  });

  it('hand-derived from the formula on a sphere: pi/180 R cos(phi) and pi/180 R', () => {
    const e = ellipsoidOfProj4('+proj=longlat +R=6370997 +no_defs')!;
    expect(e).toEqual({ a: 6370997, e2: 0 });
    close(metersPerDegreeLongitude(60, e), (Math.PI / 180) * 6370997 * 0.5);
    close(metersPerDegreeLatitude(60, e), (Math.PI / 180) * 6370997);
  });
});

describe('per-row cell sizes of a geographic grid', () => {
  it('row r of a grid is the cell at the latitude of its centre, in metres', () => {
    const g = { ymax: 37, dlon: 1 / 1200, dlat: 1 / 1200, a: WGS84.a, e2: WGS84.e2 };
    const out = { x: 0, y: 0 };
    // Row 839 is centred on 37 - 839.5 / 1200 = 36.30041666... degrees.
    rowCellSize(g, 839, out);
    const lat = 37 - 839.5 / 1200;
    close(out.x, metersPerDegreeLongitude(lat) / 1200, 1e-12);
    close(out.y, metersPerDegreeLatitude(lat) / 1200, 1e-12);
    // ... which is pyproj's 36.3 degrees value to within the 0.00042 degree offset (3e-6 relative).
    close(out.x * 1200, 89820.95880186175, 1e-5);
  });

  it('southern rows mirror northern ones; rows count down from ymax', () => {
    const e = { a: WGS84.a, e2: WGS84.e2 };
    const n = { x: 0, y: 0 };
    const s = { x: 0, y: 0 };
    rowCellSize({ ymax: 50, dlon: 0.01, dlat: 0.01, ...e }, 9, n); // centre 49.905
    rowCellSize({ ymax: -49.9, dlon: 0.01, dlat: 0.01, ...e }, 0, s); // centre -49.905
    expect(n.x).toBeCloseTo(s.x, 9);
    expect(n.y).toBeCloseTo(s.y, 9);
  });

  it('stays finite and positive at a pole row (its centre, not the pole)', () => {
    const out = { x: 0, y: 0 };
    rowCellSize({ ymax: 90, dlon: 1, dlat: 1, a: WGS84.a, e2: WGS84.e2 }, 0, out);
    close(out.x, metersPerDegreeLongitude(89.5), 1e-12);
  });

  it("geodesicRows: only for geographic rasters, with the raster's ellipsoid", () => {
    const utm = { ...gridInfo({ width: 4, height: 4, cellSize: 30 }), spatialReference: { wkid: 32616, metersPerUnit: 1 } };
    expect(geodesicRows(utm)).toBeUndefined();
    const nad27 = {
      ...gridInfo({ width: 4, height: 4, cellSize: 0.01, origin: { x: -90, y: 40 } }),
      spatialReference: { geographic: true, proj4: '+proj=longlat +datum=NAD27 +no_defs' },
    };
    const g = geodesicRows(nad27)!;
    expect(g).toMatchObject({ ymax: 40, dlon: 0.01, dlat: 0.01, a: 6378206.4 });
    const out = { x: 0, y: 0 };
    rowCellSize(g, 0, out);
    close(out.x * 100, metersPerDegreeLongitude(39.995, { a: g.a, e2: g.e2 }), 1e-12);
  });

  it('groundCellSize: projected cells times their unit; geographic cells at the middle row', () => {
    const ft = { ...gridInfo({ width: 4, height: 4, cellSize: 10 }), spatialReference: { wkid: 2263, metersPerUnit: 0.3048 } };
    expect(groundCellSize(ft)).toEqual({ x: 3.048, y: 3.048 });
    const geo = {
      ...gridInfo({ width: 3, height: 3, cellSize: 1, origin: { x: 0, y: 61.5 } }),
      spatialReference: { geographic: true, wkid: 4326 },
    };
    const c = groundCellSize(geo); // middle row centred on 60 N
    close(c.x, 55800.001572430825);
    close(c.y, 111412.28745738382);
  });
});

describe('the ellipsoid of a spatial reference', () => {
  it('from proj4: +datum, +ellps, +a/+rf, +a/+b; proj4js for names not listed here', () => {
    expect(ellipsoidOfProj4('+proj=longlat +datum=WGS84 +no_defs')).toEqual(WGS84);
    expect(ellipsoidOfProj4('+proj=longlat +datum=NAD83 +no_defs')!.e2).toBeCloseTo(0.0066943800229, 14);
    expect(ellipsoidOfProj4('+proj=longlat +a=6378137 +rf=298.257223563 +no_defs')).toEqual(WGS84);
    expect(ellipsoidOfProj4('+proj=longlat +a=6378206.4 +b=6356583.8 +no_defs')!.a).toBe(6378206.4);
    const evrst = ellipsoidOfProj4('+proj=longlat +ellps=evrst30 +no_defs')!; // Everest 1830, from proj4js's table
    expect(evrst.a).toBeCloseTo(6377276.345, 3);
    expect(ellipsoidOfProj4('+proj=longlat +no_defs')).toBeUndefined();
  });

  it('from WKT 1 and WKT 2; WGS 84 when nothing says', () => {
    expect(ellipsoidOfWkt('GEOGCS["NAD27",DATUM["North_American_Datum_1927",SPHEROID["Clarke 1866",6378206.4,294.978698213898]]]')!.a).toBe(
      6378206.4,
    );
    expect(
      ellipsoidOfWkt('GEOGCRS["ETRS89",DATUM["x",ELLIPSOID["GRS 1980",6378137,298.257222101,LENGTHUNIT["metre",1]]]]')!.e2,
    ).toBeCloseTo(0.0066943800229, 14);
    expect(ellipsoidOf({ geographic: true, wkt: 'GEOGCS["x",DATUM["y",SPHEROID["Clarke 1866",6378206.4,294.978698213898]]]' }).a).toBe(
      6378206.4,
    );
    expect(ellipsoidOf({ wkid: 4269, geographic: true }).e2).toBeCloseTo(0.0066943800229, 14); // NAD83: GRS 80
    expect(ellipsoidOf({ geographic: true })).toEqual(WGS84);
    expect(ellipsoidOf(undefined)).toEqual(WGS84);
  });
});

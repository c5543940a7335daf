import proj4 from 'proj4';
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import type { RasterNode } from '../../graph/types.js';
import {
  applyFunction,
  catchError,
  gridInfo,
  prng,
  rasterOf,
  runFunction,
  tiledVersusWhole,
  type GridOptions,
} from '../../../test/helpers.js';
import {
  biquadraticFilter,
  LINEAR_UNITS,
  MAX_HALF_WIDTH,
  parseLinearUnit,
  momentSolver,
  quadraticFilter,
  surfaceParam,
  SurfaceCalculation as C,
} from './surface-param.js';

const DEG = 180 / Math.PI;

/**
 * Metres per degree on WGS 84 at latitude `lat` (degrees), hand-derived from the closed forms
 * (a = 6378137 m, 1/f = 298.257223563, e2 = f (2 - f), w = 1 - e2 sin^2 phi):
 * longitude pi/180 a cos(phi) / sqrt(w), latitude pi/180 a (1 - e2) / w^1.5.
 */
function wgs84(lat: number): { lon: number; lat: number } {
  const a = 6378137;
  const f = 1 / 298.257223563;
  const e2 = f * (2 - f);
  const phi = (lat * Math.PI) / 180;
  const w = 1 - e2 * Math.sin(phi) ** 2;
  return { lon: ((Math.PI / 180) * a * Math.cos(phi)) / Math.sqrt(w), lat: ((Math.PI / 180) * a * (1 - e2)) / w ** 1.5 };
}
const ALL = [1, 2, 3, 4, 5, 6, 7, 8, 9] as const;

let seq = 0;
/** A raster from explicit info (spatial references the helper does not make). */
function rasterWith(info: RasterInfo, f: (x: number, y: number) => number, mask?: Uint8Array): RasterNode {
  const plane = new Float64Array(info.width * info.height);
  for (let y = 0; y < info.height; y++) for (let x = 0; x < info.width; x++) plane[y * info.width + x] = f(x, y);
  return memorySource(`sp${++seq}`, { ...info, pixelType: 'F64' }, [plane], mask);
}

/**
 * z = p x + q y + r x^2/2 + t y^2/2 + s x y around pixel (X0, Y0), x east and y north in metres,
 * cell L: an exact quadratic, so both local surfaces recover p..t at (X0, Y0) at every scale.
 */
const P0 = 0.3,
  Q0 = -0.4,
  R0 = 0.02,
  T0 = -0.01,
  S0 = 0.005;
const L = 10;
const X0 = 12;
const Y0 = 10;
const quad = (X: number, Y: number): number => {
  const x = (X - X0) * L;
  const y = (Y0 - Y) * L;
  return 500 + P0 * x + Q0 * y + (R0 * x * x) / 2 + (T0 * y * y) / 2 + S0 * x * y;
};
/**
 * Derived by hand from the formulas of the spec (w = 0.25, m = 1.25, m^1.5 = 1.3975425,
 * p^2 r + 2pqs + q^2 t = -0.001, q^2 r - 2pqs + p^2 t = 0.0035, pq(r - t) - (p^2 - q^2)s = -0.00325,
 * (1 + q^2) r - 2pqs + (1 + p^2) t = 0.0135, rt - s^2 = -0.000225).
 */
const QUAD_EXPECTED: Record<number, number> = {
  [C.Slope]: 26.565051177, // atan(0.5)
  [C.Aspect]: 323.130102354, // descent (-0.3, +0.4): atan2(-0.3, 0.4) + 360
  [C.ProfileCurvature]: 0.001 / (0.25 * 1.397542486), // 0.0028621670
  [C.TangentialCurvature]: -0.0035 / (0.25 * 1.118033989), // -0.0125219807
  [C.PlanCurvature]: -0.0035 / 0.125, // -0.028
  [C.ContourGeodesicTorsion]: -0.00325 / 0.3125, // -0.0104
  [C.MeanCurvature]: -0.0135 / (2 * 1.397542486), // -0.0048299068
  [C.GaussianCurvature]: -0.000225 / 1.5625, // -0.000144
  [C.CasoratiCurvature]: 0.013807823869, // sqrt(2 * 0.0048299068^2 + 0.000144)
};

describe('SurfaceParamFunction: least-squares filters', () => {
  it('the 3x3 quadratic weights are the closed forms of the spec (Evans / Wood)', () => {
    const f = quadraticFilter(1, 1);
    // cells in row-major order without the centre: z1 z2 z3 z4 z6 z7 z8 z9 (row 0 north)
    const col = (i: number) => Array.from({ length: 8 }, (_, k) => f.w[k * 6 + i]!);
    const close = (a: number[], b: number[]) => a.forEach((v, k) => expect(v).toBeCloseTo(b[k]!, 12));
    close(
      col(0),
      [-1, 0, 1, -1, 1, -1, 0, 1].map((v) => v / 6),
    ); // p = (z3 + z6 + z9 - z1 - z4 - z7) / 6L
    close(
      col(1),
      [1, 1, 1, 0, 0, -1, -1, -1].map((v) => v / 6),
    ); // q = (z1 + z2 + z3 - z7 - z8 - z9) / 6L
    close(
      col(2),
      [1, -2, 1, 1, 1, 1, -2, 1].map((v) => v / 3),
    ); // r = (z1 + z3 + z4 + z6 + z7 + z9 - 2(z2 + z5 + z8)) / 3L^2
    close(
      col(3),
      [1, 1, 1, -2, -2, 1, 1, 1].map((v) => v / 3),
    ); // t, with the centre's -2 dropped (z5 - z5 = 0)
    close(
      col(4),
      [-1, 0, 1, 0, 0, 1, 0, -1].map((v) => v / 4),
    ); // s = (z3 + z7 - z1 - z9) / 4L^2
  });

  it('the biquadratic weights are Zevenbergen-Thorne at +-n cells', () => {
    const f = biquadraticFilter(3, 2);
    expect([...f.dx]).toEqual([-3, 0, 3, -3, 3, -3, 0, 3]);
    expect([...f.dy]).toEqual([-2, -2, -2, 0, 0, 2, 2, 2]);
    expect(f.w[3 * 6]).toBeCloseTo(-1 / 6, 14); // west point in p: -1 / 2n
    expect(f.w[1 * 6 + 1]).toBeCloseTo(1 / 4, 14); // north point in q
    expect(f.w[1 * 6 + 3]).toBeCloseTo(1 / 4, 14); // north point in t: 1 / n^2
    expect(f.w[2 * 6 + 4]).toBeCloseTo(1 / 24, 14); // north-east point in s: 1 / 4 n m
  });

  it('recovers an exact quadratic on square and rectangular windows', () => {
    for (const [hx, hy] of [
      [1, 1],
      [3, 3],
      [2, 1],
      [5, 4],
    ] as const) {
      const f = quadraticFilter(hx, hy);
      const sums = [0, 0, 0, 0, 0, 0];
      for (let k = 0; k < f.dx.length; k++) {
        const u = f.dx[k]!;
        const v = -f.dy[k]!;
        const z = 2 + 0.7 * u - 1.1 * v + (0.3 * u * u) / 2 - (0.5 * v * v) / 2 + 0.25 * u * v;
        for (let i = 0; i < 6; i++) sums[i]! += f.w[k * 6 + i]! * (z - 2);
      }
      [0.7, -1.1, 0.3, -0.5, 0.25, 0].forEach((v, i) => expect(sums[i], `${hx}x${hy} #${i}`).toBeCloseTo(v, 10));
    }
  });
});

describe('SurfaceParamFunction: separable moments', () => {
  it('give the same fit as the window filters (rectangular windows, random values)', () => {
    const rnd = prng(3);
    for (const [hx, hy] of [
      [2, 2],
      [4, 3],
      [1, 5],
      [7, 7],
    ] as const) {
      const f = quadraticFilter(hx, hy);
      const m = momentSolver(hx, hy);
      const z = (u: number, v: number) => 800 + 30 * Math.sin(u + 2 * v) + 5 * rnd();
      const zs = new Map<string, number>();
      for (let v = -hy; v <= hy; v++) for (let u = -hx; u <= hx; u++) zs.set(`${u},${v}`, z(u, v));
      const z0 = zs.get('0,0')!;
      const viaFilter = [0, 0, 0, 0, 0];
      for (let k = 0; k < f.dx.length; k++) {
        const d = zs.get(`${f.dx[k]},${-f.dy[k]!}`)! - z0;
        for (let i = 0; i < 5; i++) viaFilter[i]! += f.w[k * 6 + i]! * d;
      }
      let [m0, mu, mv, muu, mvv, muv] = [0, 0, 0, 0, 0, 0];
      for (const [key, val] of zs) {
        const [u, v] = key.split(',').map(Number) as [number, number];
        m0 += val;
        mu += u * val;
        mv += v * val;
        muu += u * u * val;
        mvv += v * v * val;
        muv += u * v * val;
      }
      const e = [mu, mv, (muu - m.su2 * z0) / 2, (mvv - m.sv2 * z0) / 2, muv, m0 - m.n * z0];
      for (let i = 0; i < 5; i++) {
        const viaMoments = e.reduce((acc, x, j) => acc + m.inv[i * 6 + j]! * x, 0);
        expect(Math.abs(viaMoments - viaFilter[i]!), `${hx}x${hy} #${i}`).toBeLessThan(1e-9 * (1 + Math.abs(viaFilter[i]!)));
      }
    }
  });
});

describe('SurfaceParamFunction: hand-derived values', () => {
  const dem = rasterOf({ width: 25, height: 21, cellSize: L, pixelType: 'F64' }, quad);

  for (const surface of [1, 2]) {
    for (const scale of [undefined, '30 Meters', 50]) {
      it(`an exact quadratic: all nine parameters, LocalSurface ${surface}, scale ${scale ?? 'default'}`, async () => {
        for (const calc of ALL) {
          const r = await runFunction(surfaceParam, { SurfaceCalculation: calc, LocalSurface: surface, AnalysisScaleWithUnits: scale }, [
            dem,
          ]);
          const expected = QUAD_EXPECTED[calc]!;
          expect(r.value(X0, Y0), `calc ${calc}`).toBeCloseTo(expected, Math.abs(expected) < 0.1 ? 5 : 3);
          expect(Math.abs(r.value(X0, Y0) - expected) / Math.abs(expected), `calc ${calc}`).toBeLessThan(1e-6);
        }
      });
    }
  }

  it('a plane: slope and aspect exact, every curvature 0, both surfaces, 3x3 and 11x11', async () => {
    // z = 0.2 x - 0.15 y (x east, y north): rise 0.25, descent towards (-0.2, +0.15) = 306.8699 degrees.
    const plane = rasterOf({ width: 30, height: 30, cellSize: 5, pixelType: 'F64' }, (X, Y) => 0.2 * X * 5 + 0.15 * Y * 5);
    for (const LocalSurface of [1, 2]) {
      for (const AnalysisScaleWithUnits of ['5', '25 Meters']) {
        const base = { LocalSurface, AnalysisScaleWithUnits };
        const slope = await runFunction(surfaceParam, base, [plane]);
        const pct = await runFunction(surfaceParam, { ...base, SlopeType: 2 }, [plane]);
        const asp = await runFunction(surfaceParam, { ...base, SurfaceCalculation: C.Aspect, ProjectAzimuths: true }, [plane]);
        for (const [x, y] of [
          [0, 0],
          [15, 15],
          [29, 3],
        ] as const) {
          expect(slope.value(x, y)).toBeCloseTo(Math.atan(0.25) * DEG, 5);
          expect(pct.value(x, y)).toBeCloseTo(25, 4);
          expect(asp.value(x, y)).toBeCloseTo(360 - Math.atan2(0.2, 0.15) * DEG, 4); // F32 output
        }
        for (const calc of [1, 2, 3, 6, 7, 8, 9]) {
          const r = await runFunction(surfaceParam, { ...base, SurfaceCalculation: calc }, [plane]);
          expect(Math.abs(r.value(15, 15)), `calc ${calc}`).toBeLessThan(1e-12);
        }
      }
    }
  });

  it('a flat surface: slope 0, aspect -1, curvatures 0', async () => {
    const flat = rasterOf({ width: 9, height: 9, cellSize: 30 }, () => 250);
    const r = await runFunction(surfaceParam, { SurfaceCalculation: C.Aspect }, [flat]);
    expect(r.value(4, 4)).toBe(-1);
    for (const calc of [1, 2, 3, 4, 6, 7, 8, 9]) {
      expect((await runFunction(surfaceParam, { SurfaceCalculation: calc }, [flat])).value(4, 4), `calc ${calc}`).toBe(0);
    }
  });

  it('a sphere cap: curvatures 1/R (Gaussian 1/R^2), plan 1/rho, torsion 0, slope asin(rho/R)', async () => {
    // Derived by hand: a sphere is umbilic, every normal curvature is 1/R (convex: positive), the
    // contour through a point at horizontal distance rho from the top is a circle of radius rho.
    const R = 2000;
    const cx = 40;
    const cy = 40;
    const sphere = rasterOf({ width: 81, height: 81, cellSize: 1, pixelType: 'F64' }, (X, Y) =>
      Math.sqrt(R * R - (X - cx) ** 2 - (Y - cy) ** 2),
    );
    const [X, Y] = [70, 56]; // 30 m east, 16 m south of the top: rho = 34
    const rho = 34;
    const expected: Record<number, number> = {
      [C.MeanCurvature]: 1 / R,
      [C.ProfileCurvature]: 1 / R,
      [C.TangentialCurvature]: 1 / R,
      [C.PlanCurvature]: 1 / rho,
      [C.ContourGeodesicTorsion]: 0,
      [C.GaussianCurvature]: 1 / (R * R),
      [C.CasoratiCurvature]: 1 / R,
      [C.Slope]: Math.asin(rho / R) * DEG,
      [C.Aspect]: Math.atan2(30, -16) * DEG, // away from the top: east and south
    };
    for (const LocalSurface of [1, 2]) {
      for (const calc of ALL) {
        const r = await runFunction(surfaceParam, { SurfaceCalculation: calc, LocalSurface, ProjectAzimuths: true }, [sphere]);
        const e = expected[calc]!;
        const tol = e === 0 ? 1e-9 : Math.abs(e) * 1e-3;
        expect(Math.abs(r.value(X, Y) - e), `calc ${calc} surface ${LocalSurface}: ${r.value(X, Y)} vs ${e}`).toBeLessThan(tol);
      }
    }
  });
});

describe('SurfaceParamFunction: units and scale', () => {
  it('accepts all 13 units of the spec and common spellings', () => {
    for (const u of Object.keys(LINEAR_UNITS)) expect(parseLinearUnit(u)).toBe(u);
    expect(parseLinearUnit('meter')).toBe('Meters');
    expect(parseLinearUnit('METRES')).toBe('Meters');
    expect(parseLinearUnit('foot')).toBe('Feet');
    expect(parseLinearUnit('NAUTICAL_MILES')).toBe('Nautical Miles');
    expect(parseLinearUnit('decimal_degrees')).toBe('Decimal degrees');
    expect(parseLinearUnit('furlongs')).toBeUndefined();
  });

  // A plane rising 1 z unit per metre to the east: slope = atan(metres per z unit).
  const plane = rasterOf({ width: 9, height: 9, cellSize: 2, pixelType: 'F64' }, (X) => 2 * X);
  it.each([
    ['Meters', 1],
    ['Centimeters', 0.01],
    ['Decimeters', 0.1],
    ['Millimeters', 0.001],
    ['Kilometers', 1000],
    ['Feet', 0.3048],
    ['Inches', 0.0254],
    ['Yards', 0.9144],
    ['Miles', 1609.344],
    ['Nautical Miles', 1852],
    ['Points', 0.0254 / 72],
    ['Decimal degrees', (Math.PI / 180) * 6378137],
    ['Unknown', 1], // the WGS 84 equatorial degree
  ] as const)('ZUnit %s converts z by %d m', async (ZUnit, meters) => {
    const r = await runFunction(surfaceParam, { ZUnit, SlopeType: 2 }, [plane]);
    expect(Math.abs(r.value(4, 4) / 100 / meters - 1)).toBeLessThan(1e-6);
  });

  it('z in metres over a grid in feet: z is converted to feet', async () => {
    const info = { ...gridInfo({ width: 9, height: 9, cellSize: 2 }), spatialReference: { wkid: 2263, metersPerUnit: 0.3048 } };
    const r = await runFunction(surfaceParam, { SlopeType: 2 }, [rasterWith(info, (X) => 2 * X)]); // 1 m per foot
    expect(r.value(4, 4)).toBeCloseTo(100 / 0.3048, 4); // F32 output
    const f = await runFunction(surfaceParam, { SlopeType: 2, ZUnit: 'Feet' }, [rasterWith(info, (X) => 2 * X)]);
    expect(f.value(4, 4)).toBeCloseTo(100, 5);
  });

  it.each([
    [undefined, 10, 1],
    ['10', 10, 1],
    ['5 Meters', 10, 1],
    ['10.000000001', 10, 1],
    ['25 Meters', 10, 3],
    ['30', 10, 3],
    ['0.1 Kilometers', 10, 10],
    ['3 Feet', 0.3048, 3],
    [40, 10, 4],
    ['1 Miles', 160.9344, 10],
    ['500 Centimeters', 1, 5],
  ] as const)('AnalysisScaleWithUnits %s on %d m cells: half-width %d', (AnalysisScaleWithUnits, cellSize, n) => {
    const node = applyFunction(surfaceParam, { AnalysisScaleWithUnits }, [rasterOf({ width: 5, height: 5, cellSize }, () => 0)]);
    expect(node.plan.halo).toBe(n);
  });

  it('geographic rasters: degrees directly, metres at the centre latitude', () => {
    const geo = (args: Record<string, unknown>) =>
      applyFunction(surfaceParam, args, [
        rasterOf({ width: 5, height: 5, cellSize: 1 / 1200, geographic: true, origin: { x: -84, y: 60.002 } }, () => 0),
      ]).plan.halo;
    expect(geo({ AnalysisScaleWithUnits: '0.0025 Decimal degrees' })).toBe(3);
    expect(geo({ AnalysisScaleWithUnits: '0.0025' })).toBe(3);
    // 200 m: north-south cells are 92.8 m (3 cells), east-west cells 46.5 m at 60N (5 cells): the window is 11 x 7
    expect(geo({ AnalysisScaleWithUnits: '200 Meters' })).toBe(5);
  });

  it('geographic rasters: metre cell sizes per row on the WGS 84 ellipsoid, both axes', async () => {
    // Planes of 0.1 m per metre of the centre row's cell, north-south and east-west: 10 % there.
    const cell = 1 / 1200;
    const o = { width: 7, height: 7, cellSize: cell, geographic: true, origin: { x: 10, y: 45 }, pixelType: 'F64' } as const;
    const m = wgs84(45 - 3.5 * cell);
    const ns = await runFunction(surfaceParam, { SlopeType: 2 }, [rasterOf(o, (_, Y) => -0.1 * Y * cell * m.lat)]);
    expect(ns.value(3, 3)).toBeCloseTo(10, 7);
    const ew = await runFunction(surfaceParam, { SlopeType: 2 }, [rasterOf(o, (X) => 0.1 * X * cell * m.lon)]);
    expect(ew.value(3, 3)).toBeCloseTo(10, 7);
    // The same planes read with another row's cell sizes: the north-south one too varies by row (M(phi)).
    const far = { ...o, height: 2401, origin: { x: 10, y: 46 } }; // rows from 46 N to 44 N
    const rise = (Y: number) => -0.1 * Y * cell * m.lat;
    const tall = await runFunction(surfaceParam, { SlopeType: 2 }, [rasterOf(far, (_, Y) => rise(Y))]);
    expect(tall.value(3, 1200)).toBeCloseTo(10, 5); // row 1200 is centred on 45 - 0.5 cell
    expect(tall.value(3, 2)).toBeCloseTo(10 * (m.lat / wgs84(46 - 2.5 * cell).lat), 4);
  });
});

describe('SurfaceParamFunction: aspect frames', () => {
  // Descent due east on a UTM 16N grid at the Jacksboro DEM (east of the central meridian -87).
  const utm = (ProjectAzimuths: boolean, sr: RasterInfo['spatialReference'] = { wkid: 32616, metersPerUnit: 1 }) =>
    runFunction(surfaceParam, { SurfaceCalculation: C.Aspect, ProjectAzimuths }, [
      rasterWith(
        { ...gridInfo({ width: 40, height: 30, cellSize: 75, origin: { x: 732000, y: 4068150 } }), spatialReference: sr },
        (X) => 1000 - X,
      ),
    ]);

  it('ProjectAzimuths true: grid azimuths; false: true-north azimuths through the grid convergence', async () => {
    const grid = await utm(true);
    const truth = await utm(false);
    const conv = proj4('+proj=utm +zone=16 +datum=WGS84 +units=m +no_defs');
    for (const [X, Y] of [
      [0, 0],
      [20, 15],
      [39, 29],
    ] as const) {
      expect(grid.value(X, Y)).toBeCloseTo(90, 9);
      // Derived by hand (spherical transverse Mercator): convergence gamma = atan(tan(lon - lon0) sin(lat));
      // true north lies gamma west of grid north, so a grid azimuth of 90 is 90 + gamma from true north.
      const sx = Math.min(Math.max(X, 1), 38);
      const sy = Math.min(Math.max(Y, 1), 28);
      const [lon, lat] = conv.inverse([732000 + (sx + 0.5) * 75, 4068150 - (sy + 0.5) * 75]) as [number, number];
      const gamma = Math.atan(Math.tan(((lon + 87) * Math.PI) / 180) * Math.sin((lat * Math.PI) / 180)) * DEG;
      expect(gamma).toBeGreaterThan(1.5);
      expect(Math.abs(truth.value(X, Y) - (90 + gamma))).toBeLessThan(1e-3);
    }
  });

  it('the convergence lattice interpolates within 1e-4 degrees over 300 km of a UTM zone', async () => {
    const conv = proj4('+proj=utm +zone=16 +datum=WGS84 +units=m +no_defs');
    const info = {
      ...gridInfo({ width: 1000, height: 9, cellSize: 300, origin: { x: 350000, y: 5200000 } }),
      spatialReference: { wkid: 32616, metersPerUnit: 1 },
    };
    const r = await runFunction(surfaceParam, { SurfaceCalculation: C.Aspect }, [rasterWith(info, (X) => 5000 - X)]);
    for (const X of [1, 7, 250, 499, 500, 731, 998]) {
      const [lon, lat] = conv.inverse([350000 + (X + 0.5) * 300, 5200000 - 4.5 * 300]) as [number, number];
      const [xn, yn] = conv.forward([lon, lat + 1e-5]) as [number, number];
      const [xs, ys] = conv.forward([lon, lat - 1e-5]) as [number, number];
      const thetaN = Math.atan2(xn - xs, yn - ys) * DEG; // grid azimuth of true north, exact at this pixel
      expect(Math.abs(r.value(X, 4) - (90 - thetaN)), `X ${X}`).toBeLessThan(1e-4);
    }
  });

  it('uses the proj4 string when there is one, and refuses non-conformal or unknown projections', async () => {
    const withProj = await utm(false, { proj4: '+proj=utm +zone=16 +datum=WGS84 +units=m +no_defs', metersPerUnit: 1 });
    const withWkid = await utm(false);
    expect(withProj.value(20, 15)).toBeCloseTo(withWkid.value(20, 15), 9);
    const aea = {
      proj4: '+proj=aea +lat_0=23 +lon_0=-96 +lat_1=29.5 +lat_2=45.5 +x_0=0 +y_0=0 +datum=NAD83 +units=m +no_defs',
      metersPerUnit: 1,
    };
    await expect(utm(false, aea)).rejects.toMatchObject({ code: 'UNSUPPORTED_INPUT', path: 'rasterFunctionArguments.ProjectAzimuths' });
    await expect(utm(false, { wkid: 2263, metersPerUnit: 0.3048 })).rejects.toMatchObject({
      code: 'UNSUPPORTED_INPUT',
      path: 'rasterFunctionArguments.ProjectAzimuths',
    });
    expect((await utm(true, aea)).value(20, 15)).toBeCloseTo(90, 9); // grid azimuths need no projection
  });

  it('geographic rasters: true azimuths, or with ProjectAzimuths the direction drawn in the degree grid', async () => {
    // Derived by hand: descent towards north-east on the ground (45 degrees) at 60N is drawn in the degree grid as
    // (1 / metres per degree of longitude, 1 / of latitude) = (1 / 55800.0, 1 / 111412.3): 63.39 degrees.
    const cell = 1 / 1200;
    const o = { width: 9, height: 9, cellSize: cell, geographic: true, origin: { x: 10, y: 60 + 4.5 * cell }, pixelType: 'F64' } as const;
    const lx = (Y: number) => cell * wgs84(60 + (4 - Y) * cell).lon;
    const ly = cell * wgs84(60).lat;
    const dem = rasterOf(o, (X, Y) => -((X - 4) * lx(Y) + (4 - Y) * ly)); // falls 1 m per m east and north
    const t = await runFunction(surfaceParam, { SurfaceCalculation: C.Aspect }, [dem]);
    expect(t.value(4, 4)).toBeCloseTo(45, 3);
    const g = await runFunction(surfaceParam, { SurfaceCalculation: C.Aspect, ProjectAzimuths: true }, [dem]);
    expect(g.value(4, 4)).toBeCloseTo(Math.atan2(1 / wgs84(60).lon, 1 / wgs84(60).lat) * DEG, 3);
    expect(g.value(4, 4)).toBeCloseTo(63.396, 3);
  });

  it('UseEquatorialAspect measures from the direction of 0N 0E', async () => {
    // Derived by hand: at 0N 90E the point 0N 0E lies due west (bearing 270), so a west-facing slope has
    // equatorial aspect 0 and a north-facing one 90.
    const cell = 1 / 1200;
    const o = {
      width: 5,
      height: 5,
      cellSize: cell,
      geographic: true,
      origin: { x: 90 - 2.5 * cell, y: 2.5 * cell },
      pixelType: 'F64',
    } as const;
    const west = await runFunction(surfaceParam, { SurfaceCalculation: C.Aspect, UseEquatorialAspect: true }, [rasterOf(o, (X) => X)]);
    expect(west.value(2, 2)).toBeCloseTo(0, 6);
    const north = await runFunction(surfaceParam, { SurfaceCalculation: C.Aspect, UseEquatorialAspect: true }, [rasterOf(o, (_, Y) => Y)]);
    expect(north.value(2, 2)).toBeCloseTo(90, 6);
    const planar = rasterWith({ ...gridInfo({ width: 5, height: 5 }), spatialReference: undefined }, (X) => X);
    expect(catchError(() => applyFunction(surfaceParam, { SurfaceCalculation: 5, UseEquatorialAspect: true }, [planar]))).toMatchObject({
      code: 'UNSUPPORTED_INPUT',
      path: 'rasterFunctionArguments.UseEquatorialAspect',
    });
    // A grid without a spatial reference is its own north.
    expect((await runFunction(surfaceParam, { SurfaceCalculation: 5 }, [planar])).value(2, 2)).toBeCloseTo(270, 9);
  });
});

describe('SurfaceParamFunction: UseAdaptiveScale', () => {
  // A plane of 0.2 with a 30 m step 3 cells east of x = 10: windows reaching it fit badly.
  const broken = rasterOf({ width: 31, height: 21, cellSize: 10, pixelType: 'F64' }, (X) => 2 * X + (X >= 13 ? 30 : 0));

  it('shrinks the window to the largest one that does not reach the break', async () => {
    const fixed = await runFunction(surfaceParam, { AnalysisScaleWithUnits: '50 Meters', SlopeType: 2 }, [broken]);
    const adaptive = await runFunction(surfaceParam, { AnalysisScaleWithUnits: '50 Meters', SlopeType: 2, UseAdaptiveScale: true }, [
      broken,
    ]);
    // Cell 10: the 11x11 window reaches the step, the 5x5 one (x = 8..12) does not: 20 % exactly.
    expect(fixed.value(10, 10)).toBeGreaterThan(25);
    expect(adaptive.value(10, 10)).toBeCloseTo(20, 9);
    expect(adaptive.value(4, 10)).toBeCloseTo(fixed.value(4, 10), 12); // far from the step: the full window
  });

  it('keeps the full window on a smooth quadratic (equal to the fixed window), both surfaces', async () => {
    const dem = rasterOf({ width: 25, height: 21, cellSize: L, pixelType: 'F64' }, quad);
    for (const LocalSurface of [1, 2]) {
      const a = { AnalysisScaleWithUnits: '30 Meters', SurfaceCalculation: C.MeanCurvature, LocalSurface };
      const fixed = await runFunction(surfaceParam, a, [dem]);
      const adaptive = await runFunction(surfaceParam, { ...a, UseAdaptiveScale: true }, [dem]);
      // (the fixed window uses the separable moments, the adaptive one the filters: same fit, rounding apart)
      expect(Math.abs(adaptive.value(X0, Y0) / fixed.value(X0, Y0) - 1)).toBeLessThan(1e-6);
    }
  });

  it('warns that a 3x3 window cannot adapt', () => {
    const node = applyFunction(surfaceParam, { UseAdaptiveScale: true }, [broken]);
    expect(node.plan.warnings).toEqual(['UseAdaptiveScale has no effect with a 3x3 window']);
  });
});

describe('SurfaceParamFunction: edges and NoData (spec 1.6 with the whole window)', () => {
  const o: GridOptions = { width: 7, height: 7, cellSize: 10, pixelType: 'F64' };
  const plane = (X: number) => 10 * X; // p = 1: 45 degrees

  it('one NoData neighbour takes the centre value; two make NoData; a NoData cell stays NoData', async () => {
    const mask = new Uint8Array(49).fill(1);
    mask[3 * 7 + 4] = 0; // east neighbour of (3, 3)
    const r = await runFunction(surfaceParam, { SlopeType: 2 }, [rasterOf(o, plane, mask)]);
    // Derived by hand: z1..z9 = 20 30 40 / 20 30 [30] / 20 30 40 with z6 := z5, so
    // p = (z3 + z6 + z9 - z1 - z4 - z7) / 6L = (40 + 30 + 40 - 20 - 20 - 20) / 60 = 50 / 60 and q = 0.
    expect(r.value(3, 3)).toBeCloseTo((100 * 50) / 60, 5); // F32 output
    expect(r.valid(4, 3)).toBe(false);
    mask[2 * 7 + 3] = 0; // and the north neighbour: two missing
    const r2 = await runFunction(surfaceParam, { SlopeType: 2 }, [rasterOf(o, plane, mask)]);
    expect(r2.valid(3, 3)).toBe(false);
    expect(r2.value(1, 5)).toBeCloseTo(100, 5);
  });

  it('the biquadratic only looks at its 9 points', async () => {
    const mask = new Uint8Array(49).fill(1);
    mask[2 * 7 + 2] = 0;
    mask[4 * 7 + 4] = 0; // two diagonal neighbours: NoData for the quadratic, two of the 9 points for the biquadratic
    mask[1 * 7 + 2] = 0;
    const q = await runFunction(surfaceParam, { SlopeType: 2, AnalysisScaleWithUnits: 20 }, [rasterOf(o, plane, mask)]);
    const b = await runFunction(surfaceParam, { SlopeType: 2, AnalysisScaleWithUnits: 20, LocalSurface: 2 }, [rasterOf(o, plane, mask)]);
    expect(q.valid(3, 3)).toBe(false);
    expect(b.value(3, 3)).toBeCloseTo(100, 5); // (2, 2), (4, 4) and (2, 1) are not among its points (1|3|5, 1|3|5)
  });

  it('edge cells copy the nearest cell whose window fits; rasters smaller than the window are NoData', async () => {
    const dem = rasterOf({ width: 12, height: 10, cellSize: 10, pixelType: 'F64' }, quad);
    const r = await runFunction(surfaceParam, { AnalysisScaleWithUnits: 30, SurfaceCalculation: C.MeanCurvature }, [dem]);
    expect(r.value(0, 0)).toBe(r.value(3, 3));
    expect(r.value(11, 9)).toBe(r.value(8, 6));
    expect(r.value(5, 0)).toBe(r.value(5, 3));
    const small = await runFunction(surfaceParam, { AnalysisScaleWithUnits: 30 }, [
      rasterOf({ width: 6, height: 9, cellSize: 10 }, () => 1),
    ]);
    expect([...small.block.mask].every((m) => m === 0)).toBe(true);
  });
});

describe('SurfaceParamFunction: arguments', () => {
  const dem = rasterOf({ width: 5, height: 5, cellSize: 10 }, (x, y) => x + y);

  it('rejects bad arguments with the code and the argument path', () => {
    for (const [args, code, path] of [
      [{ SurfaceCalculation: 10 }, 'INVALID_ARGUMENT', 'SurfaceCalculation'],
      [{ SurfaceCalculation: 'curvy' }, 'INVALID_ARGUMENT', 'SurfaceCalculation'],
      [{ LocalSurface: 3 }, 'INVALID_ARGUMENT', 'LocalSurface'],
      [{ SlopeType: 3 }, 'INVALID_ARGUMENT', 'SlopeType'],
      [{ UseAdaptiveScale: 'sometimes' }, 'INVALID_ARGUMENT', 'UseAdaptiveScale'],
      [{ AnalysisScaleWithUnits: 'far' }, 'INVALID_ARGUMENT', 'AnalysisScaleWithUnits'],
      [{ AnalysisScaleWithUnits: '-5 Meters' }, 'INVALID_ARGUMENT', 'AnalysisScaleWithUnits'],
      [{ AnalysisScaleWithUnits: '0' }, 'INVALID_ARGUMENT', 'AnalysisScaleWithUnits'],
      [{ AnalysisScaleWithUnits: '10 furlongs' }, 'INVALID_ARGUMENT', 'AnalysisScaleWithUnits'],
      [{ AnalysisScaleWithUnits: `${(MAX_HALF_WIDTH + 1) * 10} Meters` }, 'LIMIT_EXCEEDED', 'AnalysisScaleWithUnits'],
      [{ ZUnit: 'parsecs' }, 'INVALID_ARGUMENT', 'ZUnit'],
    ] as const) {
      expect(
        catchError(() => applyFunction(surfaceParam, args, [dem])),
        JSON.stringify(args),
      ).toMatchObject({
        code,
        path: `rasterFunctionArguments.${path}`,
      });
    }
    expect(applyFunction(surfaceParam, { AnalysisScaleWithUnits: `${MAX_HALF_WIDTH * 10} Meters` }, [dem]).plan.halo).toBe(MAX_HALF_WIDTH);
  });

  it('rejects multiband and complex rasters', () => {
    const multi = rasterOf({ width: 5, height: 5, bandCount: 2 }, () => 1);
    expect(catchError(() => applyFunction(surfaceParam, {}, [multi]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Raster',
    });
    const c = memorySource('c64', { ...gridInfo({ width: 2, height: 2 }), pixelType: 'C64' }, [new Float32Array(8)]);
    expect(catchError(() => applyFunction(surfaceParam, {}, [c]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Raster',
    });
  });

  it('accepts names for the enums and warns about arguments of other calculations', () => {
    const n = applyFunction(
      surfaceParam,
      { SurfaceCalculation: 'gaussian_curvature', SlopeType: 2, ProjectAzimuths: true, UseEquatorialAspect: true },
      [dem],
    );
    expect(n.args.SurfaceCalculation).toBe(8);
    expect(n.plan.warnings).toHaveLength(3);
    expect(applyFunction(surfaceParam, { SurfaceCalculation: 'Slope', SlopeType: 'PERCENTRISE' }, [dem]).plan.warnings).toBeUndefined();
  });

  it('advertises 0..90 for slope in degrees and 0..360 for aspect', () => {
    expect(applyFunction(surfaceParam, {}, [dem]).info.statistics).toEqual([{ min: 0, max: 90 }]);
    expect(applyFunction(surfaceParam, { SlopeType: 2 }, [dem]).info.statistics).toBeUndefined();
    expect(applyFunction(surfaceParam, { SurfaceCalculation: 5 }, [dem]).info.statistics).toEqual([{ min: 0, max: 360 }]);
    expect(applyFunction(surfaceParam, { SurfaceCalculation: 1 }, [dem]).info).toMatchObject({ pixelType: 'F32', bandCount: 1 });
  });
});

describe('SurfaceParamFunction: tiled equals whole', () => {
  const W = 61;
  const H = 47;
  const rnd = prng(7);
  const noise = Float64Array.from({ length: W * H }, () => rnd());
  const holes = new Uint8Array(W * H).fill(1);
  for (const [x, y] of [
    [10, 10],
    [11, 10],
    [30, 5],
    [0, 20],
    [60, 46],
    [45, 30],
    [40, 12],
    [42, 12],
  ] as const)
    holes[y * W + x] = 0;
  for (let y = 20; y < 24; y++) for (let x = 25; x < 29; x++) holes[y * W + x] = 0;
  const surface = (x: number, y: number): number => 500 + 120 * Math.sin(x / 7) * Math.cos(y / 5) + 3 * x - 2 * y + 4 * noise[y * W + x]!;
  const dem = rasterOf({ width: W, height: H, cellSize: 30, origin: { x: 732000, y: 4068150 } }, surface, holes);
  const geo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true, origin: { x: -84.4, y: 36.7 } }, surface, holes);

  const cases: [string, Record<string, unknown>, RasterNode][] = [
    ...ALL.map((c): [string, Record<string, unknown>, RasterNode] => [`calc ${c}`, { SurfaceCalculation: c }, dem]),
    ...ALL.map((c): [string, Record<string, unknown>, RasterNode] => [
      `calc ${c} biquadratic 7x7`,
      { SurfaceCalculation: c, LocalSurface: 2, AnalysisScaleWithUnits: '90 Meters' },
      dem,
    ]),
    ['slope 11x11', { AnalysisScaleWithUnits: '150 Meters' }, dem],
    ['mean 11x11 adaptive', { SurfaceCalculation: 1, AnalysisScaleWithUnits: '150 Meters', UseAdaptiveScale: true }, dem],
    [
      'aspect 7x7 adaptive biquadratic',
      { SurfaceCalculation: 5, AnalysisScaleWithUnits: 90, UseAdaptiveScale: true, LocalSurface: 2 },
      dem,
    ],
    ['aspect grid', { SurfaceCalculation: 5, ProjectAzimuths: true }, dem],
    ['aspect equatorial', { SurfaceCalculation: 5, UseEquatorialAspect: true }, dem],
    ['geographic profile 5x5', { SurfaceCalculation: 2, AnalysisScaleWithUnits: '0.0015 Decimal degrees' }, geo],
    ['geographic aspect projected', { SurfaceCalculation: 5, ProjectAzimuths: true, UseEquatorialAspect: true }, geo],
    [
      'geographic mean 7x7 adaptive',
      { SurfaceCalculation: 1, AnalysisScaleWithUnits: '0.0025 Decimal degrees', UseAdaptiveScale: true },
      geo,
    ],
  ];
  for (const [name, args, input] of cases) {
    it(name, async () => {
      const node = applyFunction(surfaceParam, args, [input]);
      for (const tile of [
        [37, 53],
        [7, 5],
        [1, 3],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, tile), `tile ${tile.join('x')}`).toBeUndefined();
      }
    });
  }
});

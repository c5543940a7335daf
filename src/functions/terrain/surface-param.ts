/**
 * SurfaceParamFunction (11.1): slope, aspect and seven curvatures of a local surface fitted by least
 * squares over a (2n+1) x (2n+1) window [spec raster-functions.md "SurfaceParamFunction"; spec
 * 000 section 8 table].
 *
 * ## Local surface (x east, y north, z in the x,y unit; n = window half-width, L = cell size)
 *
 *     z = r x^2 / 2 + t y^2 / 2 + s x y + p x + q y + c
 *
 * - LocalSurface 1, Quadratic [LIT Evans 1979; Wood 1996, as GRASS r.param.scale]: fitted by
 *   unweighted least squares over every cell of the window; the surface need not pass through the
 *   cells. For a 3x3 window this gives the spec's closed forms (p = (z3+z6+z9-z1-z4-z7) / 6L, ...).
 * - LocalSurface 2, Biquadratic [LIT Zevenbergen & Thorne 1987]: exact through the 9 points at
 *   0 and +-n cells: p = (z6 - z4) / 2nL, q = (z2 - z8) / 2nL, r = (z4 + z6 - 2 z5) / (nL)^2,
 *   t = (z2 + z8 - 2 z5) / (nL)^2, s = (z3 + z7 - z1 - z9) / 4(nL)^2 (n > 1: spec, [ours]).
 *
 * Both are linear in the window values, so `plan` solves the normal equations ONCE per window size
 * (in cell units) and keeps, for every window cell, its weight in each of p, q, r, t, s, c: a
 * coefficient is then a weighted window sum. The kernel sums `w_k * (z_k - z_centre)` (subtracting
 * the centre only changes c and keeps the sums well conditioned) and scales by the cell size per
 * row: p = P / Lx, q = Q / Ly, r = R / Lx^2, t = T / Ly^2, s = S / (Lx Ly).
 *
 * ## Parameters [spec, after Minar et al. 2020; convex = positive], w = p^2 + q^2, m = 1 + w
 *
 *     4 Slope        atan(sqrt w) degrees (SlopeType 1, default) or 100 sqrt w (SlopeType 2)
 *     5 Aspect       compass azimuth of steepest descent (-p, -q), 0 <= a < 360; flat (w = 0): -1
 *     2 Profile      -(p^2 r + 2pqs + q^2 t) / (w m^3/2)
 *     3 Tangential   -(q^2 r - 2pqs + p^2 t) / (w m^1/2)
 *     6 Plan         -(q^2 r - 2pqs + p^2 t) / w^3/2
 *     7 Torsion       (pq (r - t) - (p^2 - q^2) s) / (w m)
 *     1 Mean         -((1 + q^2) r - 2pqs + (1 + p^2) t) / (2 m^3/2)
 *     8 Gaussian      (r t - s^2) / m^2
 *     9 Casorati      sqrt(2 H^2 - K), H = Mean, K = Gaussian
 *     w = 0: profile, tangential, plan and torsion are 0 [spec, ours].
 *
 * Curvatures are in 1 / (x,y unit) (Gaussian 1 / unit^2): 1/m for metre grids and for geographic
 * grids (computed in metres, below).
 *
 * ## Units
 *
 * - ZUnit (default Meters; all 13 listed units, singular/plural/abbreviations accepted): z is
 *   multiplied by metres-per-ZUnit / metres-per-x,y-unit (`spatialReference.metersPerUnit`;
 *   1 when absent: ASSUMPTION, metres). `Unknown`: z is already in the x,y unit (factor 1).
 * - Geographic rasters: per row, Lx and Ly are the metres of a cell at the latitude of the window's
 *   centre row on the raster's ellipsoid (WGS 84 unless its spatial reference names another):
 *   Lx = N(phi) cos(phi) cellX, Ly = M(phi) cellY, angles in radians (core/geodesy.ts, the same
 *   per-row sizes Slope, Aspect, Hillshade and Curvature use by default, so their slopes agree on
 *   a geographic DEM); z in metres. (The spec's suggestion of 111320 cos(lat) x 110574 is a
 *   spherical shortcut that is 0.35 % short north-south at 36 degrees; one geodesy wins.)
 * - AnalysisScaleWithUnits: "value unit" ("30 Meters", "0.001 Decimal degrees"), or a bare number
 *   in the raster's units; default one cell (3x3). Half-widths nx = ceil(d / cellX),
 *   ny = ceil(d / cellY), at least 1 (a distance under one cell gives 3x3, as the spec's "minimum
 *   the input cell size"); at most `MAX_HALF_WIDTH` (LIMIT_EXCEEDED beyond).
 *   ASSUMPTION: issue 3 says 2 * ceil(d / cell) + 1; the spec file says round(d / cell): the issue
 *   wins (they agree for whole multiples of the cell size; 1e-9 cell of slack absorbs rounding).
 *   Geographic rasters with a linear distance: the window is fixed for the whole raster, from the
 *   metre cell sizes at the latitude of the raster's middle row. Decimal degrees on a projected
 *   raster (and as a ZUnit): 1 degree = the WGS 84 equatorial degree, 111319.49 m (ASSUMPTION: no
 *   latitude is known there; the same constant as UnitConversion).
 *
 * ## UseAdaptiveScale (ASSUMPTION; the vendor only says the distance "varies with landscape
 * changes", between one cell and AnalysisScaleWithUnits)
 *
 * Candidate half-widths j = J .. 1 (J = max(nx, ny); window min(j, nx) x min(j, ny)). The quadratic
 * least-squares fit's residual standard error sigma_j = sqrt(RSS_j / (cells_j - 6)) measures how
 * well a quadratic describes the landscape at that scale. The largest j whose window is usable
 * (NoData rule below) and whose sigma_j <= `ADAPTIVE_RESIDUAL_RATIO` * sigma_1 + `ADAPTIVE_RESIDUAL_FLOOR`
 * (x,y units) is used; otherwise j = 1. The scale is chosen with the quadratic fit for both local
 * surfaces (a biquadratic passes through its 9 points, so it has no residual); the parameter is
 * then computed with the requested surface at that scale. Cost: up to J fits per cell.
 *
 * ## Azimuths (SurfaceCalculation 5)
 *
 * The vendor computes geodesic azimuths (from true north); ProjectAzimuths "projects" them into the
 * output spatial reference to correct its angle distortion [V]. rasterflow fits the surface in the
 * raster's grid, so:
 * - projected rasters (conformal projections: UTM, tmerc, merc, lcc, stere, omerc, ...): the grid
 *   azimuth is exact with ProjectAzimuths true; with false (default) it is turned into a true-north
 *   azimuth by subtracting the grid azimuth of true north (grid convergence) computed with proj4
 *   from `spatialReference.proj4` (or the UTM / Web Mercator wkid). Non-conformal projections or
 *   no projection definition: UNSUPPORTED_INPUT naming ProjectAzimuths.
 * - geographic rasters: the metre-based azimuth is the true-north one (ProjectAzimuths false); with
 *   true the steepest-descent direction is mapped into the degree grid
 *   (dx = dE / metres per degree of longitude, dy = dN / metres per degree of latitude, on the
 *   raster's ellipsoid) and its azimuth there is returned.
 * - no spatial reference: the grid is taken as true north (ASSUMPTION).
 * - UseEquatorialAspect (ASSUMPTION; mechanism undocumented): the azimuth is measured from the
 *   direction of the point on the equator at longitude 0 (initial great-circle bearing on the
 *   sphere) instead of from north; it needs a spatial reference (UNSUPPORTED_INPUT otherwise).
 *   For projected (conformal) rasters the angle between two directions does not change under
 *   projection, so ProjectAzimuths does not change the equatorial aspect there.
 * The per-pixel rotation (or, for geographic ProjectAzimuths, 2x2 map) is computed with proj4 at
 * the nodes of a lattice of at most 65 x 65 points over the raster in `plan` and interpolated
 * bilinearly per pixel (tile independent; over 300 x 300 km of UTM zone 16 the error measured
 * 4e-6 degrees, the test checks < 1e-4).
 *
 * ## Edges and NoData: spec section 1.6 with a (2n+1)^2 window
 *
 * 1. A cell whose own input pixel is NoData is NoData.
 * 2. Cells closer than n to the raster edge use the window of the nearest cell whose window fits
 *    (centre clamp(X, nx, W-1-nx), clamp(Y, ny, H-1-ny)): they copy its result (vendor rule 4).
 *    Rasters smaller than the window: all NoData.
 * 3. In that window (the cells with a weight: all of them for the quadratic, the 9 points for the
 *    biquadratic) the centre must be valid, one NoData cell takes the centre's value, two or more
 *    make the cell NoData (vendor rules 2 and 3; ASSUMPTION: "exactly one missing" is kept as is
 *    for larger windows, as the spec's "as 1.6 (window of (2n+1)^2)" reads).
 * The output at (X, Y) depends on input pixels and raster coordinates only, never on the tile, so
 * tiled equals whole; `inputRect` asks exactly for the windows the clamped centres need.
 *
 * Output: one F32 band, NoData NaN (mask 0); statistics 0..90 (slope in degrees), 0..360 (aspect).
 * Speed (no allocation per cell): 3x3 windows, biquadratic windows and windows touching NoData
 * take one pass over the filter cells (5 multiply-adds each). Quadratic windows of 5+ cells a side
 * that are fully valid use the same fit through its six moments, which are separable: per output
 * row, column sums over the window's rows, then per cell 6 (2n+1) multiply-adds and a fixed 5 x 6
 * solve (`MomentSolver`), O(n) instead of O(n^2) per cell. Every sum runs in a fixed order, so a
 * cell gets the same bits from any tile; the two paths agree to rounding (1e-9 relative, tested).
 * UseAdaptiveScale costs up to J filter passes per cell.
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import type { Converter } from 'proj4';
import { proj4Lib } from '../../core/crs.js';
import { EngineError, invalidArgument, unsupportedInput } from '../../core/errors.js';
import {
  ellipsoidOf,
  type GeodesicRows,
  geodesicRows,
  groundCellSize,
  METERS_PER_EQUATORIAL_DEGREE,
  metersPerDegreeLatitude,
  metersPerDegreeLongitude,
  rowCellSize,
} from '../../core/geodesy.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type Plane } from '../../core/pixel-type.js';
import type { Rect } from '../../core/rect.js';
import { argPaths, closestSpelling } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction } from '../../graph/types.js';
import { atanDegrees, SlopeType } from './gradient.js';

export const SurfaceCalculation = {
  MeanCurvature: 1,
  ProfileCurvature: 2,
  TangentialCurvature: 3,
  Slope: 4,
  Aspect: 5,
  PlanCurvature: 6,
  ContourGeodesicTorsion: 7,
  GaussianCurvature: 8,
  CasoratiCurvature: 9,
} as const;

export const LocalSurface = { Quadratic: 1, Biquadratic: 2 } as const;

/** Largest window half-width (window 101 x 101); larger scales are LIMIT_EXCEEDED. */
export const MAX_HALF_WIDTH = 50;

// ASSUMPTION (vendor mechanism undocumented): the adaptive rule and its two constants are ours.
/** UseAdaptiveScale: a larger window is kept while its residual error is at most this many times the 3x3 one. */
const ADAPTIVE_RESIDUAL_RATIO = 2;
/** UseAdaptiveScale: residual errors below this (x,y units, 1 micrometre for metres) count as an exact fit. */
const ADAPTIVE_RESIDUAL_FLOOR = 1e-6;

/** Lattice of the azimuth correction: at most this many intervals per axis. */
const LATTICE_INTERVALS = 64;

/** The 13 linear units of the spec, metres per unit; `Unknown`: the x,y unit (no conversion). */
export const LINEAR_UNITS = {
  Centimeters: 0.01,
  'Decimal degrees': METERS_PER_EQUATORIAL_DEGREE, // ASSUMPTION: the WGS 84 equatorial degree (no latitude known)
  Decimeters: 0.1,
  Feet: 0.3048,
  Inches: 0.0254,
  Kilometers: 1000,
  Meters: 1,
  Miles: 1609.344,
  Millimeters: 0.001,
  'Nautical Miles': 1852,
  Points: 0.0254 / 72,
  Unknown: Number.NaN,
  Yards: 0.9144,
} as const satisfies Readonly<Record<string, number>>;

export type LinearUnit = keyof typeof LINEAR_UNITS;

/** Other spellings accepted for the units (compared lower-case, without spaces, '_' or '-'). */
const UNIT_ALIASES: Readonly<Record<string, LinearUnit>> = {
  centimeter: 'Centimeters',
  centimetre: 'Centimeters',
  centimetres: 'Centimeters',
  cm: 'Centimeters',
  decimaldegree: 'Decimal degrees',
  degree: 'Decimal degrees',
  degrees: 'Decimal degrees',
  deg: 'Decimal degrees',
  decimeter: 'Decimeters',
  decimetre: 'Decimeters',
  decimetres: 'Decimeters',
  dm: 'Decimeters',
  foot: 'Feet',
  ft: 'Feet',
  internationalfoot: 'Feet',
  inch: 'Inches',
  in: 'Inches',
  kilometer: 'Kilometers',
  kilometre: 'Kilometers',
  kilometres: 'Kilometers',
  km: 'Kilometers',
  meter: 'Meters',
  metre: 'Meters',
  metres: 'Meters',
  m: 'Meters',
  mile: 'Miles',
  mi: 'Miles',
  statutemile: 'Miles',
  statutemiles: 'Miles',
  millimeter: 'Millimeters',
  millimetre: 'Millimeters',
  millimetres: 'Millimeters',
  mm: 'Millimeters',
  nauticalmile: 'Nautical Miles',
  nmi: 'Nautical Miles',
  point: 'Points',
  pt: 'Points',
  yard: 'Yards',
  yd: 'Yards',
};

const normUnit = (s: string): string => s.toLowerCase().replace(/[\s_-]+/g, '');

/** The vendor's linear unit codes (the distance codes of UnitConversion), which its clients send instead of names. */
const UNIT_CODES: Readonly<Record<string, LinearUnit>> = {
  1: 'Inches',
  2: 'Points',
  3: 'Feet',
  4: 'Yards',
  5: 'Miles',
  6: 'Nautical Miles',
  7: 'Millimeters',
  8: 'Centimeters',
  9: 'Meters',
  10: 'Kilometers',
  11: 'Decimal degrees',
  12: 'Decimeters',
};

/** The canonical unit for a spelling (a name, an abbreviation, `esriMeters`, or a unit code), or undefined. */
export function parseLinearUnit(s: string): LinearUnit | undefined {
  const code = UNIT_CODES[s.trim()];
  if (code !== undefined) return code;
  for (const k of [normUnit(s), normUnit(s).replace(/^(esri|geo)/, '')]) {
    for (const name of Object.keys(LINEAR_UNITS) as LinearUnit[]) if (normUnit(name) === k) return name;
    if (UNIT_ALIASES[k] !== undefined) return UNIT_ALIASES[k];
  }
  return undefined;
}

const DEG = 180 / Math.PI;
const RAD = Math.PI / 180;

const args = {
  SurfaceCalculation: {
    kind: 'enum',
    values: [1, 2, 3, 4, 5, 6, 7, 8, 9],
    names: {
      MEAN_CURVATURE: 1,
      PROFILE_CURVATURE: 2,
      TANGENTIAL_CURVATURE: 3,
      SLOPE: 4,
      ASPECT: 5,
      PLAN_CURVATURE: 6,
      CONTOUR_GEODESIC_TORSION: 7,
      GAUSSIAN_CURVATURE: 8,
      CASORATI_CURVATURE: 9,
    },
    default: SurfaceCalculation.Slope,
    doc:
      '1 Mean curvature, 2 Profile curvature, 3 Tangential curvature, 4 Slope (default), 5 Aspect, 6 Plan curvature, ' +
      '7 Contour geodesic torsion, 8 Gaussian curvature, 9 Casorati curvature.',
  },
  LocalSurface: {
    kind: 'enum',
    values: [1, 2],
    names: { QUADRATIC: 1, BIQUADRATIC: 2 },
    default: LocalSurface.Quadratic,
    doc: '1 Quadratic (least squares over the window, default), 2 Biquadratic (Zevenbergen-Thorne, through 9 points).',
  },
  AnalysisScaleWithUnits: {
    kind: 'string',
    doc:
      'Distance from the target cell, "value unit" (e.g. "30 Meters", "0.001 Decimal degrees") or a number in the ' +
      "raster's units; window 2 * ceil(distance / cell) + 1 cells, at least 3x3. Default: one cell (3x3).",
  },
  UseAdaptiveScale: {
    kind: 'boolean',
    default: false,
    doc: 'Shrink the window (down to 3x3) where a quadratic fits the landscape much worse than at 3x3.',
  },
  ZUnit: {
    kind: 'string',
    default: 'Meters',
    doc: `Unit of the z values: ${Object.keys(LINEAR_UNITS).join(', ')}; or the vendor's unit code (1 Inches ... 9 Meters ... 12 Decimeters).`,
  },
  SlopeType: {
    kind: 'enum',
    values: [1, 2],
    names: { DEGREE: 1, PERCENTRISE: 2, PERCENT_RISE: 2 },
    doc: 'Only with SurfaceCalculation 4: 1 Degree (default), 2 Percent rise.',
  },
  ProjectAzimuths: {
    kind: 'boolean',
    default: false,
    doc: 'Only with SurfaceCalculation 5: azimuths in the grid of the output spatial reference instead of from true north.',
  },
  UseEquatorialAspect: {
    kind: 'boolean',
    default: false,
    doc: 'Only with SurfaceCalculation 5: measure aspect from the direction of the point 0N 0E instead of north.',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Elevation raster (one band); defaults to the service raster ($$).' },
} as const;

/**
 * Least-squares weights of one window: for each window cell except the centre (whose term
 * `z_centre - z_centre` is always 0), its weight in P, Q, R, T, S, C (derivatives in cell units:
 * dz/du, dz/dv, d2z/du2, d2z/dv2, d2z/dudv, fitted value minus the centre; u east, v north).
 */
export interface WindowFilter {
  readonly hx: number;
  readonly hy: number;
  /** Column offset (east positive) of each weighted cell. */
  readonly dx: Int32Array;
  /** Row offset (south positive) of each weighted cell. */
  readonly dy: Int32Array;
  /** 6 weights per cell: P, Q, R, T, S, C. */
  readonly w: Float64Array;
}

/** Azimuth map per pixel: a 2x2 matrix applied to the descent vector (east, north), on a lattice. */
export interface AzimuthLattice {
  readonly nx: number;
  readonly ny: number;
  /** m00 m01 m10 m11 per node, row-major nodes. */
  readonly m: Float64Array;
}

export interface SurfaceParamParams {
  readonly dem: number;
  readonly calc: number;
  readonly percent: boolean;
  readonly width: number;
  readonly height: number;
  /** Filters of the local surface per candidate half-width j (index j - 1); one entry unless adaptive. */
  readonly surface: readonly WindowFilter[];
  /** Quadratic filters per candidate (adaptive only). */
  readonly select: readonly WindowFilter[] | undefined;
  /** Largest half-widths that fit in the raster. */
  readonly fitX: number;
  readonly fitY: number;
  readonly zScale: number;
  /** Cell size in x,y units (projected rasters; geographic ones take theirs per row from `geodesic`). */
  readonly lx: number;
  readonly ly: number;
  /** Geographic rasters: the grid and ellipsoid, for the per-row metre cell sizes. */
  readonly geodesic: GeodesicRows | undefined;
  readonly azimuth: AzimuthLattice | undefined;
  /** Quadratic, fixed window of 5+ cells a side: the separable moment solver for fully valid windows. */
  readonly moments: MomentSolver | undefined;
}

// ---- Filters (plan time)

/** Invert a symmetric positive definite n x n matrix (row-major), Gauss-Jordan with partial pivoting. */
function invert(n: number, a: Float64Array): Float64Array {
  const m = Float64Array.from(a);
  const inv = new Float64Array(n * n);
  for (let i = 0; i < n; i++) inv[i * n + i] = 1;
  for (let col = 0; col < n; col++) {
    let piv = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r * n + col]!) > Math.abs(m[piv * n + col]!)) piv = r;
    if (m[piv * n + col] === 0) throw new EngineError('INTERNAL', 'singular normal equations');
    if (piv !== col) {
      for (let k = 0; k < n; k++) {
        [m[col * n + k], m[piv * n + k]] = [m[piv * n + k]!, m[col * n + k]!];
        [inv[col * n + k], inv[piv * n + k]] = [inv[piv * n + k]!, inv[col * n + k]!];
      }
    }
    const d = m[col * n + col]!;
    for (let k = 0; k < n; k++) {
      m[col * n + k]! /= d;
      inv[col * n + k]! /= d;
    }
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r * n + col]!;
      if (f === 0) continue;
      for (let k = 0; k < n; k++) {
        m[r * n + k]! -= f * m[col * n + k]!;
        inv[r * n + k]! -= f * inv[col * n + k]!;
      }
    }
  }
  return inv;
}

/**
 * Quadratic least squares over the (2hx+1) x (2hy+1) window [Evans 1979, Wood 1996]: basis
 * (u, v, u^2/2, v^2/2, uv, 1) in coordinates normalised by the half-widths (for conditioning),
 * normal matrix over every cell (centre included), weights N^-1 phi_k scaled back to cell units.
 */
export function quadraticFilter(hx: number, hy: number): WindowFilter {
  const { inv, scale, basis } = quadraticNormal(hx, hy);
  const kept: [number, number][] = [];
  for (let dy = -hy; dy <= hy; dy++) for (let dx = -hx; dx <= hx; dx++) if (dx !== 0 || dy !== 0) kept.push([dx, dy]);
  const w = new Float64Array(kept.length * 6);
  kept.forEach(([dx, dy], k) => {
    const f = basis(dx, dy);
    for (let i = 0; i < 6; i++) {
      let s = 0;
      for (let j = 0; j < 6; j++) s += inv[i * 6 + j]! * f[j]!;
      w[k * 6 + i] = s * scale[i]!;
    }
  });
  return { hx, hy, dx: Int32Array.from(kept, (c) => c[0]), dy: Int32Array.from(kept, (c) => c[1]), w };
}

/** The inverse normal matrix of the quadratic over the full window, in normalised coordinates. */
function quadraticNormal(hx: number, hy: number): { inv: Float64Array; scale: number[]; basis: (dx: number, dy: number) => number[] } {
  const basis = (dx: number, dy: number): number[] => {
    const u = dx / hx;
    const v = -dy / hy;
    return [u, v, (u * u) / 2, (v * v) / 2, u * v, 1];
  };
  const N = new Float64Array(36);
  for (let dy = -hy; dy <= hy; dy++) {
    for (let dx = -hx; dx <= hx; dx++) {
      const f = basis(dx, dy);
      for (let i = 0; i < 6; i++) for (let j = 0; j < 6; j++) N[i * 6 + j]! += f[i]! * f[j]!;
    }
  }
  return { inv: invert(6, N), scale: [1 / hx, 1 / hy, 1 / (hx * hx), 1 / (hy * hy), 1 / (hx * hy), 1], basis };
}

/**
 * The quadratic fit of a full window from its six moments (cell units, u east, v north):
 * (P, Q, R, T, S) = inv x (sum u d, sum v d, sum u^2 d / 2, sum v^2 d / 2, sum u v d, sum d), d = z - z_centre.
 * Mathematically the same fit as `quadraticFilter`; the moments are separable (column sums, then
 * row sums), so a cell costs O(n) instead of O(n^2). Used for windows of 5 or more cells a side.
 */
export interface MomentSolver {
  /** 5 x 6: rows P, Q, R, T, S. */
  readonly inv: Float64Array;
  /** Cells in the window, sum of u^2 and sum of v^2 over it (for the centre correction). */
  readonly n: number;
  readonly su2: number;
  readonly sv2: number;
}

export function momentSolver(hx: number, hy: number): MomentSolver {
  const { inv, scale } = quadraticNormal(hx, hy);
  const out = new Float64Array(30);
  for (let i = 0; i < 5; i++) for (let j = 0; j < 6; j++) out[i * 6 + j] = scale[i]! * inv[i * 6 + j]! * scale[j]!;
  let su2 = 0;
  for (let u = -hx; u <= hx; u++) su2 += u * u;
  let sv2 = 0;
  for (let v = -hy; v <= hy; v++) sv2 += v * v;
  const cols = 2 * hx + 1;
  const rows = 2 * hy + 1;
  return { inv: out, n: cols * rows, su2: su2 * rows, sv2: sv2 * cols };
}

/**
 * Biquadratic [Zevenbergen & Thorne 1987] through the 9 points at 0 and +-h cells (the centre term
 * is 0 after subtracting the centre). Row-major order of the 8 outer points.
 */
export function biquadraticFilter(hx: number, hy: number): WindowFilter {
  const dx: number[] = [];
  const dy: number[] = [];
  const w: number[] = [];
  for (const y of [-hy, 0, hy]) {
    for (const x of [-hx, 0, hx]) {
      if (x === 0 && y === 0) continue;
      const u = Math.sign(x);
      const v = -Math.sign(y); // north positive
      dx.push(x);
      dy.push(y);
      const P = y === 0 ? u / (2 * hx) : 0;
      const Q = x === 0 ? v / (2 * hy) : 0;
      const R = y === 0 ? 1 / (hx * hx) : 0;
      const T = x === 0 ? 1 / (hy * hy) : 0;
      const S = x !== 0 && y !== 0 ? (u * v) / (4 * hx * hy) : 0;
      w.push(P, Q, R, T, S, 0);
    }
  }
  return { hx, hy, dx: Int32Array.from(dx), dy: Int32Array.from(dy), w: Float64Array.from(w) };
}

// ---- Plan helpers

const at = argPaths(args);

/** Metres per unit of the raster's x,y (1 for geographic rasters: they are converted to metres). */
function xyMetersPerUnit(dem: RasterInfo): number {
  if (dem.spatialReference?.geographic) return 1;
  return dem.spatialReference?.metersPerUnit ?? 1; // ASSUMPTION: metres when the raster does not say
}

/** Window half-widths from AnalysisScaleWithUnits. */
function halfWidths(raw: string | undefined, dem: RasterInfo): { nx: number; ny: number } {
  if (raw === undefined || raw.trim() === '') return { nx: 1, ny: 1 };
  const path = at('AnalysisScaleWithUnits');
  const m = /^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*(.*?)\s*$/i.exec(raw);
  if (!m) throw invalidArgument(path, `expected a distance like "30 Meters" or a number, got ${JSON.stringify(raw)}`);
  const d = Number(m[1]);
  if (!(d > 0) || !Number.isFinite(d)) throw invalidArgument(path, `the distance must be positive, got ${m[1]}`);
  let unit: LinearUnit | undefined;
  if (m[2] !== '') {
    unit = parseLinearUnit(m[2]!);
    if (unit === undefined) {
      throw invalidArgument(path, `unknown unit ${JSON.stringify(m[2])}; expected one of ${Object.keys(LINEAR_UNITS).join(', ')}`);
    }
  }
  // ASSUMPTION: half-width ceil(d / cell) (issue 3) rather than the spec file's round(d / cell); at least 1.
  const ceil = (v: number): number => Math.max(1, Math.ceil(v - 1e-9));
  const { x: cx, y: cy } = dem.cellSize;
  let nx: number;
  let ny: number;
  if (dem.spatialReference?.geographic) {
    if (unit === undefined || unit === 'Unknown' || unit === 'Decimal degrees') {
      nx = ceil(d / cx);
      ny = ceil(d / cy);
    } else {
      // ASSUMPTION: one window for the whole raster, from the metre cell sizes of its middle row.
      const meters = d * LINEAR_UNITS[unit];
      const ground = groundCellSize(dem);
      nx = ceil(meters / ground.x);
      ny = ceil(meters / ground.y);
    }
  } else {
    const inUnits = unit === undefined || unit === 'Unknown' ? d : (d * LINEAR_UNITS[unit]) / xyMetersPerUnit(dem);
    nx = ceil(inUnits / cx);
    ny = ceil(inUnits / cy);
  }
  if (!(nx <= MAX_HALF_WIDTH && ny <= MAX_HALF_WIDTH)) {
    throw new EngineError(
      'LIMIT_EXCEEDED',
      `AnalysisScaleWithUnits ${raw} needs a ${2 * nx + 1} x ${2 * ny + 1} window; the largest is ${2 * MAX_HALF_WIDTH + 1} x ${2 * MAX_HALF_WIDTH + 1}`,
      { path },
    );
  }
  return { nx, ny };
}

/** Projections whose grid azimuths differ from true azimuths by a rotation only (conformal). */
const CONFORMAL = new Set(['utm', 'tmerc', 'etmerc', 'merc', 'webmerc', 'lcc', 'stere', 'sterea', 'ups', 'omerc', 'somerc', 'krovak']);

/** The proj4 definition of a projected raster: its own, or one derived from a UTM / Web Mercator wkid. */
function projDefinition(dem: RasterInfo): string | undefined {
  const sr = dem.spatialReference;
  if (sr?.proj4) return sr.proj4;
  const c = sr?.wkid;
  if (c === undefined) return undefined;
  if (c >= 32601 && c <= 32660) return `+proj=utm +zone=${c - 32600} +datum=WGS84 +units=m +no_defs`;
  if (c >= 32701 && c <= 32760) return `+proj=utm +zone=${c - 32700} +south +datum=WGS84 +units=m +no_defs`;
  if (c === 3857 || c === 102100 || c === 102113)
    return '+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +no_defs';
  return undefined;
}

// ASSUMPTION (UseEquatorialAspect, mechanism undocumented): "a point on the equator" is 0N 0E.
/** Initial great-circle bearing (radians, clockwise from north) from (lat, lon) to 0N 0E, on the sphere. */
const bearingToOrigin = (lat: number, lon: number): number => Math.atan2(-Math.sin(lon * RAD), -Math.sin(lat * RAD) * Math.cos(lon * RAD));

/**
 * The lattice of 2x2 maps that turn the descent vector (east, north) of the computation frame into
 * one whose compass azimuth is the requested aspect; undefined when the grid azimuth is the answer.
 */
function azimuthLattice(dem: RasterInfo, project: boolean, equatorial: boolean): AzimuthLattice | undefined {
  // ASSUMPTION (reading of the vendor's "Project geodesic azimuths ... to correct the angle distortion
  // caused by the output spatial reference"): false (default) = true-north (geodesic) azimuths,
  // true = azimuths in the output grid. The spec file's one line ("corrects for the output
  // projection's grid convergence") fits either reading; the vendor's wording decides.
  const sr = dem.spatialReference;
  const geographic = sr?.geographic === true;
  if (sr === undefined || (sr.wkid === undefined && sr.proj4 === undefined && !geographic)) {
    if (equatorial) {
      throw unsupportedInput(
        at('UseEquatorialAspect'),
        'UseEquatorialAspect needs the raster to have a spatial reference (longitude and latitude of every cell)',
      );
    }
    return undefined; // ASSUMPTION: a grid without a spatial reference is its own north (nothing to correct)
  }
  let node: (x: number, y: number) => [number, number, number, number];
  if (geographic) {
    if (!project && !equatorial) return undefined;
    const ellipsoid = ellipsoidOf(sr);
    node = (lon, lat) => {
      // The degree grid's map of a ground direction (east, north): divide by metres per degree.
      const gx = project ? 1 / metersPerDegreeLongitude(lat, ellipsoid) : 1;
      const gy = project ? 1 / metersPerDegreeLatitude(lat, ellipsoid) : 1;
      let rho = 0;
      if (equatorial) {
        const b = bearingToOrigin(lat, lon);
        rho = Math.atan2(Math.sin(b) * gx, Math.cos(b) * gy); // the reference direction, mapped the same way
      }
      const c = Math.cos(rho);
      const s = Math.sin(rho);
      // rotate by -rho after scaling: E' = c gx E - s gy N, N' = s gx E + c gy N
      return [c * gx, -s * gy, s * gx, c * gy];
    };
  } else {
    if (project && !equatorial) return undefined;
    const def = projDefinition(dem);
    const which = equatorial && project ? 'UseEquatorialAspect' : 'ProjectAzimuths';
    if (def === undefined) {
      throw unsupportedInput(
        at(which),
        "true-north azimuths need the grid convergence, but the raster's spatial reference has no proj4 definition; " +
          (equatorial ? 'UseEquatorialAspect cannot be honoured' : 'set ProjectAzimuths: true for grid azimuths'),
      );
    }
    const name = /\+proj=(\w+)/.exec(def)?.[1] ?? '';
    if (!CONFORMAL.has(name)) {
      throw unsupportedInput(
        at(which),
        `the raster's projection (+proj=${name}) is not conformal, so grid azimuths do not turn into true azimuths by a rotation; ` +
          (equatorial ? 'UseEquatorialAspect cannot be honoured' : 'set ProjectAzimuths: true for grid azimuths'),
      );
    }
    let conv: Converter;
    try {
      conv = proj4Lib()(def);
    } catch (e) {
      throw unsupportedInput(at(which), `proj4 cannot read the raster's projection ${def}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const D = 1e-5; // degrees of latitude for the direction of north
    node = (x, y) => {
      const [lon, lat] = conv.inverse([x, y]) as [number, number];
      const [xn, yn] = conv.forward([lon, lat + D]) as [number, number];
      const [xs, ys] = conv.forward([lon, lat - D]) as [number, number];
      let rho = Math.atan2(xn - xs, yn - ys); // grid azimuth of true north
      if (equatorial) rho += bearingToOrigin(lat, lon);
      const c = Math.cos(rho);
      const s = Math.sin(rho);
      return [c, -s, s, c];
    };
  }
  const W = dem.width;
  const H = dem.height;
  const nx = Math.min(W, LATTICE_INTERVALS + 1);
  const ny = Math.min(H, LATTICE_INTERVALS + 1);
  const m = new Float64Array(nx * ny * 4);
  for (let j = 0; j < ny; j++) {
    const py = ny > 1 ? (j * (H - 1)) / (ny - 1) : 0;
    const y = dem.extent.ymax - (py + 0.5) * dem.cellSize.y;
    for (let i = 0; i < nx; i++) {
      const px = nx > 1 ? (i * (W - 1)) / (nx - 1) : 0;
      const x = dem.extent.xmin + (px + 0.5) * dem.cellSize.x;
      const v = node(x, y);
      if (!v.every(Number.isFinite)) {
        throw unsupportedInput(
          at(project ? 'ProjectAzimuths' : 'UseEquatorialAspect'),
          `cannot compute azimuths at map point (${x}, ${y})`,
        );
      }
      m.set(v, (j * nx + i) * 4);
    }
  }
  return { nx, ny, m };
}

// ---- The function

export const surfaceParam = defineFunction<typeof args, SurfaceParamParams>({
  name: 'SurfaceParamFunction',
  summary: 'Slope, aspect or one of seven curvatures of a quadratic or biquadratic surface fitted over an n x n window.',
  variableName: 'Raster',
  family: 'terrain',
  verification: 'reference: GRASS 8.2 r.param.scale, gdaldem 3.6 (Zevenbergen-Thorne), NumPy (golden); hand-derived analytic surfaces',
  args,

  plan(a, inputs, to) {
    const dem = inputs[a.Raster];
    const rasterPath = at('Raster');
    if (dem === undefined) throw invalidArgument(rasterPath, 'SurfaceParamFunction needs an elevation raster');
    if (dem.bandCount !== 1)
      throw invalidArgument(rasterPath, `SurfaceParamFunction needs a single-band raster, got ${dem.bandCount} bands`);
    if (isComplex(dem.pixelType))
      throw invalidArgument(rasterPath, `SurfaceParamFunction needs a real-valued raster, got ${dem.pixelType}`);

    const calc = a.SurfaceCalculation;
    const warnings: string[] = [];
    if (a.SlopeType !== undefined && calc !== SurfaceCalculation.Slope)
      warnings.push('SlopeType only applies to SurfaceCalculation 4 (Slope); ignored');
    if (a.ProjectAzimuths && calc !== SurfaceCalculation.Aspect)
      warnings.push('ProjectAzimuths only applies to SurfaceCalculation 5 (Aspect); ignored');
    if (a.UseEquatorialAspect && calc !== SurfaceCalculation.Aspect)
      warnings.push('UseEquatorialAspect only applies to SurfaceCalculation 5 (Aspect); ignored');

    const zUnit = parseLinearUnit(a.ZUnit);
    if (zUnit === undefined) {
      const near = closestSpelling(a.ZUnit, Object.keys(LINEAR_UNITS));
      throw invalidArgument(
        at('ZUnit'),
        `unknown z unit ${JSON.stringify(a.ZUnit)}; expected one of ${Object.keys(LINEAR_UNITS).join(', ')} or a unit code 1..12${near ? ` (did you mean ${near}?)` : ''}`,
      );
    }
    const zScale = zUnit === 'Unknown' ? 1 : LINEAR_UNITS[zUnit] / xyMetersPerUnit(dem);

    const { nx, ny } = halfWidths(a.AnalysisScaleWithUnits, dem);
    const J = Math.max(nx, ny);
    const adaptive = a.UseAdaptiveScale && J > 1;
    if (a.UseAdaptiveScale && J === 1) warnings.push('UseAdaptiveScale has no effect with a 3x3 window');
    const make = a.LocalSurface === LocalSurface.Biquadratic ? biquadraticFilter : quadraticFilter;
    const sizes = adaptive ? Array.from({ length: J }, (_, i) => [Math.min(i + 1, nx), Math.min(i + 1, ny)] as const) : [[nx, ny] as const];
    const surface = sizes.map(([hx, hy]) => make(hx, hy));
    const select = adaptive ? (make === quadraticFilter ? surface : sizes.map(([hx, hy]) => quadraticFilter(hx, hy))) : undefined;

    const W = dem.width;
    const H = dem.height;
    const fitX = Math.floor((W - 1) / 2);
    const fitY = Math.floor((H - 1) / 2);
    const azimuth = calc === SurfaceCalculation.Aspect ? azimuthLattice(dem, a.ProjectAzimuths, a.UseEquatorialAspect) : undefined;
    const percent = calc === SurfaceCalculation.Slope && a.SlopeType === SlopeType.PercentRise;
    const statistics =
      calc === SurfaceCalculation.Slope && !percent
        ? [{ min: 0, max: 90 }]
        : calc === SurfaceCalculation.Aspect
          ? [{ min: 0, max: 360 }]
          : undefined;

    const info: RasterInfo = {
      width: W,
      height: H,
      bandCount: 1,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: dem.extent,
      cellSize: dem.cellSize,
      ...(dem.spatialReference ? { spatialReference: dem.spatialReference } : {}),
      ...(statistics ? { statistics } : {}),
    };
    // The input rows/columns the clamped window centres of an output rectangle need.
    const hxR = Math.min(nx, fitX);
    const hyR = Math.min(ny, fitY);
    const clamp = (v: number, lo: number, hi: number): number => (v < lo ? lo : v > hi ? hi : v);
    const inputRect = (out: Rect): Rect => {
      if (hxR < 1 || hyR < 1) return out; // nothing can be computed: only the output's own pixels
      const x0 = clamp(out.x, hxR, W - 1 - hxR) - hxR;
      const x1 = clamp(out.x + out.width - 1, hxR, W - 1 - hxR) + hxR;
      const y0 = clamp(out.y, hyR, H - 1 - hyR) - hyR;
      const y1 = clamp(out.y + out.height - 1, hyR, H - 1 - hyR) + hyR;
      return { x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1 };
    };
    return {
      info,
      halo: J,
      inputRect,
      ...(warnings.length > 0 ? { warnings } : {}),
      params: {
        dem: a.Raster,
        calc,
        percent,
        width: W,
        height: H,
        surface,
        select,
        fitX,
        fitY,
        zScale,
        lx: dem.cellSize.x,
        ly: dem.cellSize.y,
        geodesic: geodesicRows(dem),
        azimuth,
        moments: make === quadraticFilter && !adaptive && (nx > 1 || ny > 1) ? momentSolver(nx, ny) : undefined,
      },
    };
  },

  kernel(p, inputs, out) {
    const blk = inputs[p.dem]!;
    if (p.select === undefined) fixedScaleKernel(p, blk, out);
    else adaptiveScaleKernel(p, p.select, blk, out);
  },
});

/** Block offsets of a filter's cells for a block `bw` pixels wide. */
const offsetsOf = (f: WindowFilter, bw: number): Int32Array => Int32Array.from(f.dx, (dx, k) => f.dy[k]! * bw + dx);

/**
 * The cell size (x,y units; metres for geographic rasters) of raster row `row`, written to `out`.
 * Called once per output row (per window row in the adaptive kernel, cached), never per pixel.
 */
const rowCell = (p: SurfaceParamParams, row: number, out: { x: number; y: number }): void => {
  if (p.geodesic !== undefined) rowCellSize(p.geodesic, row, out);
  else {
    out.x = p.lx;
    out.y = p.ly;
  }
};

/** One window size for every cell: the window sums inline, scale factors once per row. */
function fixedScaleKernel(p: SurfaceParamParams, blk: PixelBlock, out: PixelBlock): void {
  const f = p.surface[0]!;
  const hx = f.hx;
  const hy = f.hy;
  const src = blk.bands[0]!;
  const mask = blk.mask;
  const bx = blk.rect.x;
  const by = blk.rect.y;
  const bw = blk.rect.width;
  const offs = offsetsOf(f, bw);
  const K = offs.length;
  const wt = f.w;
  const dst = out.bands[0]!;
  const om = out.mask;
  const { x: ox, y: oy, width: ow, height: oh } = out.rect;
  const W = p.width;
  const H = p.height;
  const fits = hx <= p.fitX && hy <= p.fitY;
  const { calc, percent, zScale: zs } = p;
  const cell = { x: 0, y: 0 };
  const aspectCalc = calc === SurfaceCalculation.Aspect;
  // Separable moments: per output row, column sums over the window's rows for the input columns
  // xLo..xHi (sum z, sum v z, sum v^2 z and the NoData count), each summed top to bottom so a
  // column's sums do not depend on the tile.
  const ms = p.moments;
  const xLo = (ox < hx ? hx : ox > W - 1 - hx ? W - 1 - hx : ox) - hx;
  const xEnd = ox + ow - 1;
  const xHi = (xEnd < hx ? hx : xEnd > W - 1 - hx ? W - 1 - hx : xEnd) + hx;
  const nCols = ms !== undefined && fits ? xHi - xLo + 1 : 0;
  const c0 = new Float64Array(nCols);
  const c1 = new Float64Array(nCols);
  const c2 = new Float64Array(nCols);
  const cm = new Int32Array(nCols);
  for (let y = 0; y < oh; y++) {
    const Y = oy + y;
    const sy = Y < hy ? hy : Y > H - 1 - hy ? H - 1 - hy : Y;
    for (let j = 0; j < nCols; j++) {
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let bad = 0;
      for (let dy = -hy; dy <= hy; dy++) {
        const i = (sy + dy - by) * bw + xLo + j - bx;
        if (mask[i] === 0) {
          bad++;
          continue;
        }
        const z = src[i]!;
        const v = -dy;
        s0 += z;
        s1 += v * z;
        s2 += v * v * z;
      }
      c0[j] = s0;
      c1[j] = s1;
      c2[j] = s2;
      cm[j] = bad;
    }
    rowCell(p, sy, cell);
    const lx = cell.x;
    const ly = cell.y;
    const kx = zs / lx;
    const ky = zs / ly;
    const kxx = zs / (lx * lx);
    const kyy = zs / (ly * ly);
    const kxy = zs / (lx * ly);
    const own = (Y - by) * bw - bx;
    const row = (sy - by) * bw - bx;
    for (let x = 0; x < ow; x++) {
      const X = ox + x;
      const o = y * ow + x;
      let v = Number.NaN;
      if (fits && mask[own + X] !== 0) {
        const sx = X < hx ? hx : X > W - 1 - hx ? W - 1 - hx : X;
        const c = row + sx;
        let bad = 1;
        if (nCols > 0 && mask[c] !== 0) {
          bad = 0;
          const j0 = sx - hx - xLo;
          for (let j = j0; j <= j0 + 2 * hx; j++) bad += cm[j]!;
        }
        if (bad === 0) {
          // Fully valid window: the six moments from the column sums, then the fixed 5 x 6 solve.
          const z0 = src[c]!;
          const j0 = sx - hx - xLo;
          let m0 = 0;
          let mu = 0;
          let muu = 0;
          let mv = 0;
          let muv = 0;
          let mvv = 0;
          for (let u = -hx, j = j0; u <= hx; u++, j++) {
            const a = c0[j]!;
            const b = c1[j]!;
            m0 += a;
            mu += u * a;
            muu += u * u * a;
            mv += b;
            muv += u * b;
            mvv += c2[j]!;
          }
          const M = ms!;
          const iv = M.inv;
          const e2 = (muu - M.su2 * z0) / 2;
          const e3 = (mvv - M.sv2 * z0) / 2;
          const e5 = m0 - M.n * z0;
          const a0 = iv[0]! * mu + iv[1]! * mv + iv[2]! * e2 + iv[3]! * e3 + iv[4]! * muv + iv[5]! * e5;
          const a1 = iv[6]! * mu + iv[7]! * mv + iv[8]! * e2 + iv[9]! * e3 + iv[10]! * muv + iv[11]! * e5;
          const a2 = iv[12]! * mu + iv[13]! * mv + iv[14]! * e2 + iv[15]! * e3 + iv[16]! * muv + iv[17]! * e5;
          const a3 = iv[18]! * mu + iv[19]! * mv + iv[20]! * e2 + iv[21]! * e3 + iv[22]! * muv + iv[23]! * e5;
          const a4 = iv[24]! * mu + iv[25]! * mv + iv[26]! * e2 + iv[27]! * e3 + iv[28]! * muv + iv[29]! * e5;
          v = aspectCalc ? aspectOf(p, a0 * kx, a1 * ky, sx, sy) : parameter(calc, percent, a0 * kx, a1 * ky, a2 * kxx, a3 * kyy, a4 * kxy);
        } else if (mask[c] !== 0) {
          // The weighted window sums of z - z_centre; one NoData cell adds 0 (takes the centre value).
          const z0 = src[c]!;
          let a0 = 0;
          let a1 = 0;
          let a2 = 0;
          let a3 = 0;
          let a4 = 0;
          let missing = 0;
          for (let k = 0, j = 0; k < K; k++, j += 6) {
            const i = c + offs[k]!;
            if (mask[i] === 0) {
              missing++;
              continue;
            }
            const d = src[i]! - z0;
            a0 += wt[j]! * d;
            a1 += wt[j + 1]! * d;
            a2 += wt[j + 2]! * d;
            a3 += wt[j + 3]! * d;
            a4 += wt[j + 4]! * d;
          }
          if (missing <= 1) {
            v = aspectCalc
              ? aspectOf(p, a0 * kx, a1 * ky, sx, sy)
              : parameter(calc, percent, a0 * kx, a1 * ky, a2 * kxx, a3 * kyy, a4 * kxy);
          }
        }
      }
      if (v === v)
        dst[o] = v + 0; // + 0: no -0
      else {
        dst[o] = Number.NaN;
        om[o] = 0;
      }
    }
  }
}

/** UseAdaptiveScale: choose the window per cell, then the same arithmetic as the fixed kernel. */
function adaptiveScaleKernel(p: SurfaceParamParams, select: readonly WindowFilter[], blk: PixelBlock, out: PixelBlock): void {
  const src = blk.bands[0]!;
  const mask = blk.mask;
  const bx = blk.rect.x;
  const by = blk.rect.y;
  const bw = blk.rect.width;
  const surf = p.surface.map((f) => offsetsOf(f, bw));
  const sel = select === p.surface ? surf : select.map((f) => offsetsOf(f, bw));
  const dst = out.bands[0]!;
  const om = out.mask;
  const { x: ox, y: oy, width: ow, height: oh } = out.rect;
  const W = p.width;
  const H = p.height;
  const D = COEF;
  const { calc, percent, zScale: zs } = p;
  // The cell size of the last window row used: windows of different sizes clamp to different rows
  // near the raster edge, so it is kept per row rather than per output row.
  const cell = { x: p.lx, y: p.ly };
  let cellRow = -1;
  for (let y = 0; y < oh; y++) {
    const Y = oy + y;
    for (let x = 0; x < ow; x++) {
      const X = ox + x;
      const o = y * ow + x;
      let v = Number.NaN;
      const j = mask[(Y - by) * bw + X - bx] !== 0 ? chooseScale(p, src, mask, sel, X, Y, bx, by, bw) : -1;
      if (j >= 0) {
        const f = p.surface[j]!;
        const sx = X < f.hx ? f.hx : X > W - 1 - f.hx ? W - 1 - f.hx : X;
        const sy = Y < f.hy ? f.hy : Y > H - 1 - f.hy ? H - 1 - f.hy : Y;
        const c = (sy - by) * bw + sx - bx;
        if (fitWindow(src, mask, c, surf[j]!, f.w, D)) {
          if (sy !== cellRow) {
            rowCell(p, sy, cell);
            cellRow = sy;
          }
          const lx = cell.x;
          const ly = cell.y;
          const kx = zs / lx;
          const ky = zs / ly;
          v =
            calc === SurfaceCalculation.Aspect
              ? aspectOf(p, D[0]! * kx, D[1]! * ky, sx, sy)
              : parameter(
                  calc,
                  percent,
                  D[0]! * kx,
                  D[1]! * ky,
                  D[2]! * (zs / (lx * lx)),
                  D[3]! * (zs / (ly * ly)),
                  D[4]! * (zs / (lx * ly)),
                );
        }
      }
      if (v === v) dst[o] = v + 0;
      else {
        dst[o] = Number.NaN;
        om[o] = 0;
      }
    }
  }
}

/** Scratch for the six window sums (module level: no allocation per pixel). */
const COEF = new Float64Array(6);

/**
 * The six weighted sums of `w_k * (z_k - z_centre)` over the filter's cells around block index `c`
 * (a valid centre). One NoData cell takes the centre's value (adds 0); two or more: false.
 */
function fitWindow(src: Plane, mask: Uint8Array, c: number, offs: Int32Array, w: Float64Array, out: Float64Array): boolean {
  const z0 = src[c]!;
  let a0 = 0;
  let a1 = 0;
  let a2 = 0;
  let a3 = 0;
  let a4 = 0;
  let a5 = 0;
  let missing = 0;
  for (let k = 0, j = 0; k < offs.length; k++, j += 6) {
    const i = c + offs[k]!;
    if (mask[i] === 0) {
      if (++missing > 1) return false;
      continue;
    }
    const d = src[i]! - z0;
    a0 += w[j]! * d;
    a1 += w[j + 1]! * d;
    a2 += w[j + 2]! * d;
    a3 += w[j + 3]! * d;
    a4 += w[j + 4]! * d;
    a5 += w[j + 5]! * d;
  }
  out[0] = a0;
  out[1] = a1;
  out[2] = a2;
  out[3] = a3;
  out[4] = a4;
  out[5] = a5;
  return true;
}

/** Residual sum of squares of the quadratic in `q` (cell units) over the window, centre included. */
function residual(src: Plane, mask: Uint8Array, c: number, offs: Int32Array, f: WindowFilter, q: Float64Array): number {
  const z0 = src[c]!;
  const [P, Q, R, T, S, C] = [q[0]!, q[1]!, q[2]!, q[3]!, q[4]!, q[5]!];
  let sum = C * C; // the centre: z - z0 = 0, fitted C
  for (let k = 0; k < offs.length; k++) {
    const i = c + offs[k]!;
    const d = mask[i] === 0 ? 0 : src[i]! - z0;
    const u = f.dx[k]!;
    const v = -f.dy[k]!;
    const e = d - (C + P * u + Q * v + 0.5 * R * u * u + 0.5 * T * v * v + S * u * v);
    sum += e * e;
  }
  return sum;
}

/** UseAdaptiveScale: the candidate index (j - 1) for output cell (X, Y), or -1 when even 3x3 is unusable. */
function chooseScale(
  p: SurfaceParamParams,
  src: Plane,
  mask: Uint8Array,
  sel: readonly Int32Array[],
  X: number,
  Y: number,
  bx: number,
  by: number,
  bw: number,
): number {
  const filters = p.select!;
  const W = p.width;
  const H = p.height;
  const q = COEF;
  if (p.fitX < 1 || p.fitY < 1) return -1;
  // The 3x3 fit: its residual error is the yardstick.
  const f0 = filters[0]!;
  const sx0 = X < 1 ? 1 : X > W - 2 ? W - 2 : X;
  const sy0 = Y < 1 ? 1 : Y > H - 2 ? H - 2 : Y;
  const c0 = (sy0 - by) * bw + sx0 - bx;
  if (mask[c0] === 0 || !fitWindow(src, mask, c0, sel[0]!, f0.w, q)) return -1;
  const sigma0 = Math.sqrt(residual(src, mask, c0, sel[0]!, f0, q) / (f0.dx.length + 1 - 6));
  const limit = ADAPTIVE_RESIDUAL_RATIO * sigma0 + ADAPTIVE_RESIDUAL_FLOOR / p.zScale;
  for (let j = filters.length - 1; j >= 1; j--) {
    const f = filters[j]!;
    if (f.hx > p.fitX || f.hy > p.fitY) continue;
    const sx = X < f.hx ? f.hx : X > W - 1 - f.hx ? W - 1 - f.hx : X;
    const sy = Y < f.hy ? f.hy : Y > H - 1 - f.hy ? H - 1 - f.hy : Y;
    const c = (sy - by) * bw + sx - bx;
    if (mask[c] === 0 || !fitWindow(src, mask, c, sel[j]!, f.w, q)) continue;
    const sigma = Math.sqrt(residual(src, mask, c, sel[j]!, f, q) / (f.dx.length + 1 - 6));
    if (sigma <= limit) return j;
  }
  return 0;
}

/** The requested parameter (not aspect) from the surface derivatives p, q, r, t, s (x,y units). */
function parameter(calc: number, percent: boolean, P: number, Q: number, R: number, T: number, S: number): number {
  const w = P * P + Q * Q;
  const m = 1 + w;
  switch (calc) {
    case SurfaceCalculation.Slope:
      return percent ? 100 * Math.sqrt(w) : atanDegrees(Math.sqrt(w));
    case SurfaceCalculation.ProfileCurvature:
      return w === 0 ? 0 : -(P * P * R + 2 * P * Q * S + Q * Q * T) / (w * m * Math.sqrt(m));
    case SurfaceCalculation.TangentialCurvature:
      return w === 0 ? 0 : -(Q * Q * R - 2 * P * Q * S + P * P * T) / (w * Math.sqrt(m));
    case SurfaceCalculation.PlanCurvature:
      return w === 0 ? 0 : -(Q * Q * R - 2 * P * Q * S + P * P * T) / (w * Math.sqrt(w));
    case SurfaceCalculation.ContourGeodesicTorsion:
      return w === 0 ? 0 : (P * Q * (R - T) - (P * P - Q * Q) * S) / (w * m);
    case SurfaceCalculation.MeanCurvature:
      return meanCurvature(P, Q, R, T, S, m);
    case SurfaceCalculation.GaussianCurvature:
      return (R * T - S * S) / (m * m);
    case SurfaceCalculation.CasoratiCurvature: {
      const h = meanCurvature(P, Q, R, T, S, m);
      const c2 = 2 * h * h - (R * T - S * S) / (m * m);
      return Math.sqrt(c2 > 0 ? c2 : 0); // (k1^2 + k2^2) / 2 >= 0; rounding may dip below 0
    }
    default:
      return Number.NaN;
  }
}

const meanCurvature = (P: number, Q: number, R: number, T: number, S: number, m: number): number =>
  -((1 + Q * Q) * R - 2 * P * Q * S + (1 + P * P) * T) / (2 * m * Math.sqrt(m));

/**
 * Aspect from the gradient (P, Q): compass azimuth (0 <= a < 360) of the descent vector (-P, -Q),
 * through the lattice map at the window centre (sx, sy) when there is one; -1 when flat.
 */
function aspectOf(p: SurfaceParamParams, P: number, Q: number, sx: number, sy: number): number {
  if (P === 0 && Q === 0) return -1;
  let e = -P;
  let n = -Q;
  const lat = p.azimuth;
  if (lat !== undefined) {
    const { nx, ny, m } = lat;
    const tx = nx > 1 ? (sx * (nx - 1)) / (p.width - 1) : 0;
    const ty = ny > 1 ? (sy * (ny - 1)) / (p.height - 1) : 0;
    const i0 = Math.min(Math.floor(tx), Math.max(nx - 2, 0));
    const j0 = Math.min(Math.floor(ty), Math.max(ny - 2, 0));
    const i1 = Math.min(i0 + 1, nx - 1);
    const j1 = Math.min(j0 + 1, ny - 1);
    const fx = tx - i0;
    const fy = ty - j0;
    const a = (j0 * nx + i0) * 4;
    const b = (j0 * nx + i1) * 4;
    const c = (j1 * nx + i0) * 4;
    const d = (j1 * nx + i1) * 4;
    const w00 = (1 - fx) * (1 - fy);
    const w10 = fx * (1 - fy);
    const w01 = (1 - fx) * fy;
    const w11 = fx * fy;
    const m00 = w00 * m[a]! + w10 * m[b]! + w01 * m[c]! + w11 * m[d]!;
    const m01 = w00 * m[a + 1]! + w10 * m[b + 1]! + w01 * m[c + 1]! + w11 * m[d + 1]!;
    const m10 = w00 * m[a + 2]! + w10 * m[b + 2]! + w01 * m[c + 2]! + w11 * m[d + 2]!;
    const m11 = w00 * m[a + 3]! + w10 * m[b + 3]! + w01 * m[c + 3]! + w11 * m[d + 3]!;
    const e2 = m00 * e + m01 * n;
    n = m10 * e + m11 * n;
    e = e2;
  }
  const az = Math.atan2(e, n) * DEG;
  return az < 0 ? (az + 360 >= 360 ? 0 : az + 360) : az + 0;
}

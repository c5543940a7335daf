/**
 * Curvature: the shape of the surface from the Zevenbergen & Thorne (1987) polynomial through the
 * 3x3 window [spec "Curvature"; vendor "How Curvature works"; xarray-spatial]:
 *
 *     D = ((d + f) / 2 - e) / Lx^2       E = ((b + h) / 2 - e) / Ly^2
 *     F = (-a + c + g - i) / (4 Lx Ly)   G = (f - d) / (2 Lx)      H = (b - h) / (2 Ly)
 *     Standard = -2 (D + E) * 100
 *     Profile  = -2 (D G^2 + E H^2 + F G H) / (G^2 + H^2) * 100
 *     Planform =  2 (D H^2 + E G^2 - F G H) / (G^2 + H^2) * 100
 *
 * with every elevation multiplied by ZFactor (folded into the constants), Lx / Ly the cell sizes
 * (square cells in the vendor's text; each axis its own here [spec, ours]). Units: 1/100 of a
 * z-unit per ground unit squared, i.e. hundredths of 1/m for metre DEMs. Where G^2 + H^2 = 0 (no
 * gradient) Profile and Planform are 0 [spec, ours].
 *
 * Signs: the formulas above are implemented exactly as the spec writes them (its Appendix C
 * vectors, standard -28, profile -50.375..., planform -22.375..., pin them). What they give:
 *   - Standard > 0 on a dome (convex up), < 0 in a bowl: as the vendor's text says;
 *   - Profile < 0 where the slope flattens downhill (flow decelerates), > 0 where it steepens
 *     downhill (flow accelerates): as the vendor's text says for the flow (the text calls the
 *     first "upwardly convex");
 *   - Planform < 0 across a ridge or nose (contours bulge downhill, flow diverges), > 0 across a
 *     hollow (flow converges). The spec's sign sentence says the opposite ("Planform > 0 = convex,
 *     sideward divergent"): the spec's formula and its sentence disagree, and rasterflow follows
 *     the formula and the vector. (GRASS's tcurvature has the opposite sign: planform = -100 tcurv
 *     sqrt(1 + p^2) on surfaces where the estimators agree; golden/terrain/curvature_reference.py.)
 *
 * Type codes [spec CONFLICT box, Appendix D]: the REST table lists 0 Standard, 1 "Platform",
 * 2 Profile, but the server's enumeration (esriCurvatureType) and the vendor's Python API both say
 * 0 Standard, 1 Profile, 2 Planform; rasterflow follows those. Names are accepted too, with
 * "Platform" (the REST page's spelling) as a synonym of Planform.
 *
 * Geographic DEMs (gradient.ts, `GeographicCellSize`): `Geodesic` (default) converts to metres per
 * row unless |ZFactor| < 0.001; `Vendor111000` uses 111000 m per degree when ZFactor > 0.001, the
 * rule the vendor client applies for Hillshade (ASSUMPTION (spec silent): the vendor client has no
 * Curvature, so its geographic rule for Curvature is not known).
 *
 * Output: one F32 band, NoData NaN (mask 0). Edges and NoData: the shared window reader of
 * `gradient.ts` (vendor rule; `RemoveEdgeEffect: true` = gdaldem -compute_edges' extrapolation).
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { rowCellSize } from '../../core/geodesy.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import type { Plane } from '../../core/pixel-type.js';
import { floatOutputType } from '../../graph/output-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction } from '../../graph/types.js';
import {
  cellGeometry,
  demInfo,
  geodesicConverts,
  GeographicCellSize,
  geographicCellSizeArg,
  gradientHalo,
  removeEdgeEffectArg,
  type WindowParams,
  windowParams,
  WindowRows,
} from './gradient.js';
import { OUT_KIND, windowViaWasm } from '../../wasm/terrain.js';

/** Curvature `Type` codes (the vendor's enumeration and Python API; see the file comment). */
export const CurvatureType = { Standard: 0, Profile: 1, Planform: 2 } as const;
export type CurvatureType = (typeof CurvatureType)[keyof typeof CurvatureType];

const args = {
  Type: {
    kind: 'enum',
    aliases: ['CurvatureType'],
    values: [0, 1, 2],
    names: { STANDARD: 0, PROFILE: 1, PLANFORM: 2, PLATFORM: 2 },
    default: CurvatureType.Standard,
    doc:
      '0 standard, 1 profile (along the slope), 2 planform (across it); codes of the vendor enumeration and Python API ' +
      '(the REST table\'s "1 Platform, 2 Profile" is not followed); Planform is also accepted as Platform.',
  },
  ZFactor: { kind: 'number', default: 1, doc: 'Multiplier that converts z units to ground (x, y) units.' },
  RemoveEdgeEffect: removeEdgeEffectArg,
  GeographicCellSize: geographicCellSizeArg,
  Raster: { kind: 'raster', default: '$$', aliases: ['DEM'], doc: 'Elevation raster; defaults to the service raster ($$).' },
} as const;

export interface CurvatureParams {
  readonly dem: number;
  readonly type: CurvatureType;
  readonly window: WindowParams;
  readonly z: number;
  /** The constants of constant cells: z/Lx^2, z/Ly^2, z/(4 Lx Ly), z/(2 Lx), z/(2 Ly). */
  readonly c: readonly number[];
}

/** The five polynomial constants for cell sizes (lx, ly) and z-factor z, written to `out`. */
function constants(z: number, lx: number, ly: number, out: Float64Array | number[]): void {
  out[0] = z / (lx * lx);
  out[1] = z / (ly * ly);
  out[2] = z / (4 * lx * ly);
  out[3] = z / (2 * lx);
  out[4] = z / (2 * ly);
}

/*
 * The formulas, written once (window a b c / d e f / g h i = t0 t1 t2 / m0 m1 m2 / b0 b1 b2). The
 * sliding loops and the per-window path both call these, so every path gives the same bits.
 * (`+ 0` turns the -0 of a plane into 0.)
 */

const standardOf = (t1: number, m0: number, m1: number, m2: number, b1: number, cxx: number, cyy: number): number =>
  -200 * (((m0 + m2) * 0.5 - m1) * cxx + ((t1 + b1) * 0.5 - m1) * cyy) + 0;

function profileOf(
  t0: number,
  t1: number,
  t2: number,
  m0: number,
  m1: number,
  m2: number,
  b0: number,
  b1: number,
  b2: number,
  cxx: number,
  cyy: number,
  cxy: number,
  cx: number,
  cy: number,
): number {
  const G = (m2 - m0) * cx;
  const H = (t1 - b1) * cy;
  const s = G * G + H * H;
  if (s === 0) return 0;
  const D = ((m0 + m2) * 0.5 - m1) * cxx;
  const E = ((t1 + b1) * 0.5 - m1) * cyy;
  const F = (t2 - t0 + b0 - b2) * cxy;
  return (-200 * (D * G * G + E * H * H + F * G * H)) / s + 0;
}

function planformOf(
  t0: number,
  t1: number,
  t2: number,
  m0: number,
  m1: number,
  m2: number,
  b0: number,
  b1: number,
  b2: number,
  cxx: number,
  cyy: number,
  cxy: number,
  cx: number,
  cy: number,
): number {
  const G = (m2 - m0) * cx;
  const H = (t1 - b1) * cy;
  const s = G * G + H * H;
  if (s === 0) return 0;
  const D = ((m0 + m2) * 0.5 - m1) * cxx;
  const E = ((t1 + b1) * 0.5 - m1) * cyy;
  const F = (t2 - t0 + b0 - b2) * cxy;
  return (200 * (D * H * H + E * G * G - F * G * H)) / s + 0;
}

/** The reader's windows over [from, to) of one output row (dst offset o). */
function windowCells(
  rows: WindowRows,
  type: CurvatureType,
  c: Float64Array,
  dst: Plane,
  mask: Uint8Array,
  o: number,
  from: number,
  to: number,
): void {
  const { win, ok } = rows;
  const cxx = c[0]!;
  const cyy = c[1]!;
  const cxy = c[2]!;
  const cx = c[3]!;
  const cy = c[4]!;
  for (let x = from; x < to; x++) {
    if (ok[x] !== 1) {
      dst[o + x] = Number.NaN;
      mask[o + x] = 0;
      continue;
    }
    const k = 9 * x;
    const t0 = win[k]!,
      t1 = win[k + 1]!,
      t2 = win[k + 2]!;
    const m0 = win[k + 3]!,
      m1 = win[k + 4]!,
      m2 = win[k + 5]!;
    const b0 = win[k + 6]!,
      b1 = win[k + 7]!,
      b2 = win[k + 8]!;
    dst[o + x] =
      type === CurvatureType.Standard
        ? standardOf(t1, m0, m1, m2, b1, cxx, cyy)
        : type === CurvatureType.Profile
          ? profileOf(t0, t1, t2, m0, m1, m2, b0, b1, b2, cxx, cyy, cxy, cx, cy)
          : planformOf(t0, t1, t2, m0, m1, m2, b0, b1, b2, cxx, cyy, cxy, cx, cy);
  }
}

/** Sliding loops over the fast span [f0, f1): 3 loads per cell, the window carried in registers. */
function standardFast(
  src: Plane,
  dst: Plane,
  o: number,
  top: number,
  mid: number,
  bot: number,
  f0: number,
  f1: number,
  c: Float64Array,
): void {
  const cxx = c[0]!;
  const cyy = c[1]!;
  let m0 = src[mid + f0 - 1]!;
  let m1 = src[mid + f0]!;
  for (let x = f0; x < f1; x++) {
    const m2 = src[mid + x + 1]!;
    dst[o + x] = standardOf(src[top + x]!, m0, m1, m2, src[bot + x]!, cxx, cyy);
    m0 = m1;
    m1 = m2;
  }
}

function shapeFast(
  profile: boolean,
  src: Plane,
  dst: Plane,
  o: number,
  top: number,
  mid: number,
  bot: number,
  f0: number,
  f1: number,
  c: Float64Array,
): void {
  const cxx = c[0]!;
  const cyy = c[1]!;
  const cxy = c[2]!;
  const cx = c[3]!;
  const cy = c[4]!;
  let t0 = src[top + f0 - 1]!,
    t1 = src[top + f0]!;
  let m0 = src[mid + f0 - 1]!,
    m1 = src[mid + f0]!;
  let b0 = src[bot + f0 - 1]!,
    b1 = src[bot + f0]!;
  if (profile) {
    for (let x = f0; x < f1; x++) {
      const t2 = src[top + x + 1]!;
      const m2 = src[mid + x + 1]!;
      const b2 = src[bot + x + 1]!;
      dst[o + x] = profileOf(t0, t1, t2, m0, m1, m2, b0, b1, b2, cxx, cyy, cxy, cx, cy);
      t0 = t1;
      t1 = t2;
      m0 = m1;
      m1 = m2;
      b0 = b1;
      b1 = b2;
    }
  } else {
    for (let x = f0; x < f1; x++) {
      const t2 = src[top + x + 1]!;
      const m2 = src[mid + x + 1]!;
      const b2 = src[bot + x + 1]!;
      dst[o + x] = planformOf(t0, t1, t2, m0, m1, m2, b0, b1, b2, cxx, cyy, cxy, cx, cy);
      t0 = t1;
      t1 = t2;
      m0 = m1;
      m1 = m2;
      b0 = b1;
      b1 = b2;
    }
  }
}

/**
 * Keeps `c` the constants of raster row `sy` (per row for Geodesic cells; constant otherwise).
 * @returns the updater, called with each output row's window row.
 */
function constantsPerRow(p: CurvatureParams, c: Float64Array): (sy: number) => void {
  const g = p.window.cell.geodesic;
  const cell = { x: 0, y: 0 };
  let factorRow = -1;
  return (sy) => {
    if (g !== undefined && sy >= 0 && sy !== factorRow) {
      rowCellSize(g, sy, cell);
      constants(p.z, cell.x, cell.y, c);
      factorRow = sy;
    }
  };
}

/**
 * The wasm SIMD path, when it is on (any DEM type; F32 or F64 output): the fast spans in wasm with
 * the same expressions in f64 (bit for bit these loops'), the other cells as above.
 * @returns false when it did not run (the TypeScript path runs).
 */
function curvatureWasm(p: CurvatureParams, dem: PixelBlock, out: PixelBlock): boolean {
  const c = Float64Array.from(p.c);
  const rowConstants = constantsPerRow(p, c);
  return windowViaWasm(
    p.window,
    dem,
    out,
    (rows, y, view) => {
      rows.compute(y);
      rowConstants(rows.sy);
      const o = y * out.rect.width;
      windowCells(rows, p.type, c, view, out.mask, o, 0, rows.fastFrom);
      windowCells(rows, p.type, c, view, out.mask, o, rows.fastTo, out.rect.width);
    },
    (x, inType, kind) => {
      if (kind === 'U8') return undefined;
      const o = OUT_KIND[kind];
      const type = p.type;
      return (t, m, b, d, n) => x.terrainCurvature(inType, o, type, t, m, b, d, n, c[0]!, c[1]!, c[2]!, c[3]!, c[4]!);
    },
    (rows) => rowConstants(rows.sy), // a plain row: no other cell, only the row's constants
  );
}

export const curvature = defineFunction<typeof args, CurvatureParams>({
  name: 'Curvature',
  summary: 'Standard, profile or planform curvature, 1/100 z-unit (Zevenbergen-Thorne 3x3 polynomial).',
  variableName: 'Raster',
  family: 'terrain',
  verification:
    "reference: NumPy Zevenbergen-Thorne and GRASS r.slope.aspect on a polynomial surface (golden), the vendor's documented vectors",
  args,

  plan(a, inputs, to) {
    const dem = demInfo(inputs, a.Raster, 'Curvature', argPaths(args)('Raster'));
    const vendor = a.GeographicCellSize === GeographicCellSize.Vendor111000;
    const convert = vendor ? a.ZFactor > 0.001 : geodesicConverts(a.ZFactor);
    const cell = cellGeometry(dem, a.GeographicCellSize, convert);
    const c: number[] = [0, 0, 0, 0, 0];
    constants(a.ZFactor, cell.x, cell.y, c);
    const info: RasterInfo = {
      width: dem.width,
      height: dem.height,
      bandCount: 1,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: dem.extent,
      cellSize: dem.cellSize,
      ...(dem.spatialReference ? { spatialReference: dem.spatialReference } : {}),
    };
    const window = windowParams(dem, cell, a.RemoveEdgeEffect);
    return {
      info,
      halo: gradientHalo(window.edges),
      params: { dem: a.Raster, type: a.Type, window, z: a.ZFactor, c },
    };
  },

  kernel(p, inputs, out) {
    if (curvatureWasm(p, inputs[p.dem]!, out)) return;
    const rows = new WindowRows(p.window, inputs[p.dem]!, out.rect);
    const dst = out.bands[0]!;
    const mask = out.mask;
    const w = out.rect.width | 0; // | 0: a small integer, so row offsets stay integers (see WindowRows)
    const c = Float64Array.from(p.c);
    const rowConstants = constantsPerRow(p, c);
    for (let y = 0; y < out.rect.height; y++) {
      rows.compute(y);
      rowConstants(rows.sy);
      const o = y * w;
      const f0 = rows.fastFrom;
      const f1 = rows.fastTo;
      windowCells(rows, p.type, c, dst, mask, o, 0, f0);
      windowCells(rows, p.type, c, dst, mask, o, f1, w);
      if (f0 >= f1) continue;
      if (p.type === CurvatureType.Standard) standardFast(rows.src, dst, o, rows.top, rows.mid, rows.bot, f0, f1, c);
      else shapeFast(p.type === CurvatureType.Profile, rows.src, dst, o, rows.top, rows.mid, rows.bot, f0, f1, c);
    }
  },
});

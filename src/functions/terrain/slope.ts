/**
 * Slope: the steepest rate of change of z at each cell, from the 3x3 Horn (1981) gradient.
 *
 *     rise = sqrt(gx^2 + gy^2)        gx, gy from `gradient.ts` (z-factor and cell size applied)
 *     DEGREE, SCALED:  atan(rise) * 180 / pi      (0..90)
 *     PERCENTRISE:     100 * rise                 (0..inf; 45 degrees = 100 %)
 *
 * SCALED (SlopeType 3) is degrees with the vendor's pixel-size-adjusted z-factor
 * `ZFactor + cell^PSPower * PSZFactor` per axis (cell in metres), so slope maps stay visually stable
 * across zoom levels. Geographic DEMs (cell size in degrees), `GeographicCellSize` (gradient.ts):
 *  - `Geodesic` (default): metres per row on the raster's ellipsoid (core/geodesy.ts); SCALED
 *    always, otherwise unless |ZFactor| < 0.001 (such a factor is taken as the client's own
 *    degrees-to-metres factor);
 *  - `Vendor111000`: the vendor client's rule, spec §1.6 and "Slope": with SCALED the cell sizes
 *    are first multiplied by 111000 m/degree; otherwise the gradients are divided by 111000 only
 *    when ZFactor is 1 (|ZFactor - 1| < 1e-4), a different ZFactor being taken to convert units
 *    already.
 *
 * Spec: raster-functions.md "Slope", §1.6, §1.7; GDAL `gdaldem slope` (identical Horn formula; `-p`
 * percent, `-s` = 1 / z-factor). Output: one F32 band, NoData NaN (mask 0); advertised statistics
 * 0..90 for the degree types, none for percent rise.
 * Edges and NoData: `gradient.ts` (vendor rule; `RemoveEdgeEffect: true` = gdaldem -compute_edges).
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import type { RasterInfo } from '../../core/pixel-block.js';
import type { Plane } from '../../core/pixel-type.js';
import { floatOutputType } from '../../graph/output-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction } from '../../graph/types.js';
import {
  atanDegrees,
  cellGeometry,
  demInfo,
  geodesicConverts,
  GeographicCellSize,
  type GradientParams,
  gradientHalo,
  gradientParams,
  hornGx,
  hornGy,
  HornRows,
  hornSum,
  metersPerUnit,
  SlopeType,
  surfaceArgs,
} from './gradient.js';
import { hornViaWasm, OUT_KIND, slopeDegreeF32 } from '../../wasm/terrain.js';

export { SlopeType };

const args = surfaceArgs;

export interface SlopeParams {
  readonly dem: number;
  readonly gradient: GradientParams;
  readonly percent: boolean;
}

/** Slope of gradient (u, v): percent rise or degrees. */
const slopeOf = (u: number, v: number, percent: boolean): number =>
  percent ? 100 * Math.sqrt(u * u + v * v) : atanDegrees(Math.sqrt(u * u + v * v));

const degreeCell = (u: number, v: number): number => slopeOf(u, v, false);
const percentCell = (u: number, v: number): number => slopeOf(u, v, true);
/** Degrees on the wasm path: its f32 output stage. */
const degreeCellF32 = (u: number, v: number): number => slopeDegreeF32(u, v, degreeCell);

/** One output row (dst offset o): the reader's cells from gx/gy/ok, the fast span by sliding. */
function slopeRow(rows: HornRows, dst: Plane, mask: Uint8Array, o: number, kx: number, ky: number, percent: boolean): void {
  const { src, fastFrom: f0, fastTo: f1, top, mid, bot } = rows;
  rows.writeOtherCells(dst, mask, o, Number.NaN, percent ? percentCell : degreeCell);
  if (f0 >= f1) return;
  // Sliding Horn window (see HornRows): carry the west and middle column sums and differences.
  // Written out here, not passed to a shared driver, by measurement (HornRows, "One sliding loop
  // per function"): through a driver taking the formula, Slope ran at 0.57-0.66x this loop.
  let sW = hornSum(src[top + f0 - 1]!, src[mid + f0 - 1]!, src[bot + f0 - 1]!);
  let dW = src[bot + f0 - 1]! - src[top + f0 - 1]!;
  let sM = hornSum(src[top + f0]!, src[mid + f0]!, src[bot + f0]!);
  let dM = src[bot + f0]! - src[top + f0]!;
  for (let x = f0; x < f1; x++) {
    const t = src[top + x + 1]!;
    const b = src[bot + x + 1]!;
    const sE = hornSum(t, src[mid + x + 1]!, b);
    const dE = b - t;
    dst[o + x] = slopeOf(hornGx(sW, sE, kx), hornGy(dW, dM, dE, ky), percent);
    sW = sM;
    sM = sE;
    dW = dM;
    dM = dE;
  }
}

export const slope = defineFunction<typeof args, SlopeParams>({
  name: 'Slope',
  summary: 'Rate of maximum change in z, in degrees or percent rise (Horn 3x3).',
  variableName: 'DEM',
  family: 'terrain',
  verification: 'reference: gdaldem 3.6 and a NumPy per-row geodesic reference (golden), hand-checked vendor vectors',
  args,

  plan(a, inputs, to) {
    const dem = demInfo(inputs, a.DEM, 'Slope', argPaths(args)('DEM'));
    const scaled = a.SlopeType === SlopeType.Scaled;
    // Geographic DEMs: SCALED always works in metres; otherwise the mode's z-factor rule decides.
    const vendor = a.GeographicCellSize === GeographicCellSize.Vendor111000;
    const convert = scaled || (vendor ? Math.abs(a.ZFactor - 1) < 1e-4 : geodesicConverts(a.ZFactor));
    const cell = cellGeometry(dem, a.GeographicCellSize, convert);
    const percent = a.SlopeType === SlopeType.PercentRise;
    const info: RasterInfo = {
      width: dem.width,
      height: dem.height,
      bandCount: 1,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: dem.extent,
      cellSize: dem.cellSize,
      ...(dem.spatialReference ? { spatialReference: dem.spatialReference } : {}),
      ...(percent ? {} : { statistics: [{ min: 0, max: 90 }] }),
    };
    const gradient = gradientParams(
      dem,
      a.ZFactor,
      cell,
      a.RemoveEdgeEffect,
      scaled ? { power: a.PSPower, factor: a.PSZFactor, metersPerUnit: metersPerUnit(dem) } : undefined,
    );
    return { info, halo: gradientHalo(gradient.edges), params: { dem: a.DEM, gradient, percent } };
  },

  kernel(p, inputs, out) {
    // The wasm SIMD path when it is on and takes the case (any DEM; F32 output, or F64 for percent
    // rise): percent rise bit for bit, degrees with the f32 output stage (src/wasm/terrain.ts).
    const percent = p.percent;
    if (
      hornViaWasm(p.gradient, inputs[p.dem]!, out, Number.NaN, percent ? percentCell : degreeCellF32, (x, inType, kind) => {
        if (kind === 'U8' || (kind === 'F64' && !percent)) return undefined;
        const o = OUT_KIND[kind];
        return percent
          ? (t, m, b, d, n, kx, ky, k, si, so) => x.terrainSlopePercent(inType, o, t, m, b, d, n, kx, ky, k, si, so)
          : (t, m, b, d, n, kx, ky, k, si, so) => x.terrainSlopeDegree(inType, o, t, m, b, d, n, kx, ky, k, si, so);
      })
    ) {
      return;
    }
    const rows = new HornRows(p.gradient, inputs[p.dem]!, out.rect);
    const dst = out.bands[0]!;
    const w = out.rect.width | 0; // | 0: a small integer, so row offsets stay integers (see WindowRows)
    for (let y = 0; y < out.rect.height; y++) {
      rows.compute(y);
      slopeRow(rows, dst, out.mask, y * w, rows.kx, rows.ky, p.percent);
    }
  },
});

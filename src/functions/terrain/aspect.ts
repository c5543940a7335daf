/**
 * Aspect: the compass direction the downslope faces, degrees clockwise from north, from the 3x3
 * Horn gradient [spec "Aspect"; vendor "How Aspect works"; VJS surfaceUtils]:
 *
 *     gx, gy from `gradient.ts` (east minus west, SOUTH minus north, each divided by its cell size)
 *     gx == 0 and gy == 0 (flat):  -1
 *     otherwise:  t = atan2(gy, -gx) in degrees;  aspect = 90 - t, plus 360 when negative
 *
 * so 0 <= aspect < 360 (0 north, 90 east, 180 south, 270 west). The gradients are divided by the
 * cell sizes as the vendor client does, which matters only for non-square cells: geographic DEMs,
 * whose cells are converted to metres per row in `Geodesic` mode (gradient.ts; `Vendor111000`
 * scales both axes by 111000, so the degree cells' shape is kept).
 *
 * ZFactor: clients send it (spec rules-sample 041), so it is accepted, but aspect does not depend
 * on the vertical scale and it has no effect [spec: "Z-factor: not used"].
 *
 * The arctangent is the family's fitted polynomial by the half-angle identity (`aspectRaw`; 1.1e-7
 * degrees from Math.atan2, far below the F32 output's 3e-5 degree resolution near 360). Exact 180/pi, not the vendor
 * client's rounded 57.29578 (a 3e-6 degree difference at most). An angle that would round to 360
 * in F32 is stored as 0, keeping the output in [0, 360) [ours].
 *
 * Output: one F32 band, NoData NaN (mask 0); advertised statistics 0..360 (spec §1.7).
 * GDAL `gdaldem aspect` uses the same azimuth convention, flat -> NoData (or 0 with
 * -zero_for_flat) and does not divide by the cell sizes; golden cases convert its flat cells to -1.
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
  atanUnitDegrees,
  cellGeometry,
  demInfo,
  geographicCellSizeArg,
  type GradientParams,
  gradientHalo,
  gradientParams,
  hornGx,
  hornGy,
  HornRows,
  hornSum,
  removeEdgeEffectArg,
} from './gradient.js';
import { hornViaWasm, OUT_KIND } from '../../wasm/terrain.js';

const args = {
  ZFactor: {
    kind: 'number',
    doc: 'Accepted because clients send it; has no effect (aspect does not depend on the vertical scale).',
  },
  RemoveEdgeEffect: removeEdgeEffectArg,
  GeographicCellSize: geographicCellSizeArg,
  Raster: { kind: 'raster', default: '$$', aliases: ['DEM'], doc: 'Elevation raster; defaults to the service raster ($$).' },
} as const;

/** The value of flat cells (no gradient) [spec "Aspect"]. */
export const FLAT_ASPECT = -1;

export interface AspectParams {
  readonly dem: number;
  readonly gradient: GradientParams;
}

/**
 * Aspect of gradient (u, v) in degrees clockwise from north, valid where `aspectPlain(u, a)`;
 * elsewhere the aspect is `aspectEdge(u, v)`. With X = -u, Y = v (the angle is 90 - atan2(Y, X))
 * and h = hypot(X, Y):
 *     p = atan(Y / |X|) = 2 atan(Y / (h + |X|))   (the half-angle identity: the ratio is in
 *                                                   [-1, 1], and h + |X| >= h never cancels)
 *     X >= 0: 90 - p;   X < 0: 270 + p;   that is 180 + s (90 + p) with s = -1 or +1
 * One square root and one division and no branch on the octant: those branches follow the
 * terrain, which the processor cannot predict (they took half the time of the whole cell).
 */
const aspectRaw = (u: number, v: number): number => {
  const h = Math.sqrt(u * u + v * v);
  // 2 * +(u > 0) - 1: s without a branch (+1 when X = -u < 0). Flat: 0 / 0 = NaN.
  return 180 + (2 * +(u > 0) - 1) * (90 + 2 * atanUnitDegrees(v / (h + Math.abs(u))));
};
/** 359.99998474... and above round to 360 in F32: that is north, stored as 0. */
const NORTH_F32 = 359.99998474121094;
/**
 * Where `aspectRaw` stands: not flat (NaN), in [0, 360) in F32, and off the north-south axis,
 * which is exact in `aspectEdge` (2 atan(1) is 90 - 1e-7 in the fitted polynomial).
 */
const aspectPlain = (u: number, a: number): boolean => a >= 0 && a < NORTH_F32 && u !== 0;
/** The aspect where `aspectPlain` fails: flat -1, north 0 (also a few 1e-8 either side), south 180. */
const aspectEdge = (u: number, v: number): number => (u !== 0 || v > 0 ? 0 : v < 0 ? 180 : FLAT_ASPECT);

/** Aspect of gradient (u, v): degrees clockwise from north in [0, 360), or -1 when flat. */
export const aspectOf = (u: number, v: number): number => {
  const a = aspectRaw(u, v);
  return aspectPlain(u, a) ? a : aspectEdge(u, v);
};

/** One output row (dst offset o): the reader's cells from gx/gy/ok, the fast span by sliding. */
function aspectRow(rows: HornRows, dst: Plane, mask: Uint8Array, o: number): void {
  const { src, fastFrom: f0, fastTo: f1, top, mid, bot, kx, ky } = rows;
  rows.writeOtherCells(dst, mask, o, Number.NaN, aspectOf);
  if (f0 >= f1) return;
  // Sliding Horn window (see HornRows and slope.ts). Aspect alone would lose nothing through a
  // shared driver (measured 1.00-1.05x), but Slope and Hillshade would (HornRows, "One sliding
  // loop per function"), so a driver would serve Aspect only: the loop stays here like theirs.
  let sW = hornSum(src[top + f0 - 1]!, src[mid + f0 - 1]!, src[bot + f0 - 1]!);
  let dW = src[bot + f0 - 1]! - src[top + f0 - 1]!;
  let sM = hornSum(src[top + f0]!, src[mid + f0]!, src[bot + f0]!);
  let dM = src[bot + f0]! - src[top + f0]!;
  for (let x = f0; x < f1; x++) {
    const t = src[top + x + 1]!;
    const b = src[bot + x + 1]!;
    const sE = hornSum(t, src[mid + x + 1]!, b);
    const dE = b - t;
    const u = hornGx(sW, sE, kx);
    const v = hornGy(dW, dM, dE, ky);
    const a = aspectRaw(u, v);
    // Store, then mend the rare flat or north cell: a select here costs a quarter of the speed.
    dst[o + x] = a;
    if (!aspectPlain(u, a)) dst[o + x] = aspectEdge(u, v);
    sW = sM;
    sM = sE;
    dW = dM;
    dM = dE;
  }
}

export const aspect = defineFunction<typeof args, AspectParams>({
  name: 'Aspect',
  summary: 'Downslope direction, degrees clockwise from north (0..360), -1 for flat cells (Horn 3x3).',
  variableName: 'Raster',
  family: 'terrain',
  verification: 'reference: gdaldem 3.6 aspect and a NumPy per-row geodesic reference (golden), hand-checked vendor vectors',
  args,

  plan(a, inputs, to) {
    const dem = demInfo(inputs, a.Raster, 'Aspect', argPaths(args)('Raster'));
    // Only the ratio of the cell sizes matters: geographic cells always become metres (per row in
    // Geodesic mode; 111000 m on both axes in Vendor111000 mode, which keeps the degree ratio).
    const cell = cellGeometry(dem, a.GeographicCellSize, true);
    const info: RasterInfo = {
      width: dem.width,
      height: dem.height,
      bandCount: 1,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: dem.extent,
      cellSize: dem.cellSize,
      ...(dem.spatialReference ? { spatialReference: dem.spatialReference } : {}),
      statistics: [{ min: 0, max: 360 }],
    };
    const gradient = gradientParams(dem, 1, cell, a.RemoveEdgeEffect);
    return { info, halo: gradientHalo(gradient.edges), params: { dem: a.Raster, gradient } };
  },

  kernel(p, inputs, out) {
    // The wasm SIMD path when it is on and takes the case (any DEM; F32 or F64 output): the same bits.
    if (
      hornViaWasm(p.gradient, inputs[p.dem]!, out, Number.NaN, aspectOf, (x, inType, kind) => {
        if (kind === 'U8') return undefined;
        const o = OUT_KIND[kind];
        return (t, m, b, d, n, kx, ky, k, si, so) => x.terrainAspect(inType, o, t, m, b, d, n, kx, ky, k, si, so);
      })
    ) {
      return;
    }
    const rows = new HornRows(p.gradient, inputs[p.dem]!, out.rect);
    const dst = out.bands[0]!;
    const w = out.rect.width | 0; // | 0: a small integer, so row offsets stay integers (see WindowRows)
    for (let y = 0; y < out.rect.height; y++) {
      rows.compute(y);
      aspectRow(rows, dst, out.mask, y * w);
    }
  },
});

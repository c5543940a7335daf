/**
 * Hillshade: illumination of the surface by a light source (or six), from the 3x3 Horn gradient.
 *
 * Traditional (HillshadeType 0) [spec "Hillshade"; vendor "How Hillshade works"; VJS]:
 *
 *     Zenith = (90 - Altitude) deg,  AzMath = (450 - Azimuth) deg
 *     HS = 255 * (cos Zenith + sin Zenith sin AzMath gy - sin Zenith cos AzMath gx) / sqrt(1 + gx^2 + gy^2)
 *
 * with gx east-minus-west and gy SOUTH-minus-north (`gradient.ts`). The trigonometric terms are
 * constants fixed in `plan`, so a pixel costs a few multiply-adds and one 1/sqrt (GDAL's closed
 * form; algebraically the documented cos/sin of slope and aspect form).
 *
 * Multidirectional (HillshadeType 1) [VJS `calculateHillshadeParams`]: Azimuth and Altitude are
 * ignored and the z-factor is doubled; six sources (azimuth/altitude/weight 315/60/3, 270/60/5,
 * 225/60/3, 360/60/2, 180/60/1 and the zenith 0/90/4, weights in 18ths) are each clamped at 0 and
 * averaged: `HS = sum w_k max(0, HS_k)`.
 *
 * SlopeType 3 (SCALED): the z-factor (doubled first for multidirectional) becomes
 * `zf + cell^PSPower * PSZFactor` per axis (cell in metres). Geographic DEMs, `GeographicCellSize`
 * (gradient.ts): `Geodesic` (default) converts to metres per row on the raster's ellipsoid, with
 * SCALED always, otherwise unless |ZFactor| < 0.001; `Vendor111000` is the vendor client's rule
 * (spec §1.6): with SCALED the cell sizes are multiplied by 111000 m/degree first; otherwise they
 * are whenever ZFactor > 0.001. SlopeType 1 and 2 shade alike (the slope unit does not enter the formula).
 *
 * Output: one U8 band (natural type), HS clamped at 0 and TRUNCATED (the vendor client stores
 * `value & 255`); advertised statistics 0..255. The rule's outputPixelType is computed into: F32
 * and F64 keep the unrounded shade (the kernel writes its float result, nothing truncates it),
 * integer types that hold 0..255 truncate as U8 does, complex types get the float shade as real
 * parts (engine's cast); S8 and sub-byte types cannot hold the shades and are refused.
 *
 * NoData: 0..255 are all legitimate shades for the vendor (0 = fully shaded; GDAL instead shades
 * into 1..255 and reserves 0 for NoData). rasterflow keeps the vendor's values and declares no
 * NoData sentinel (`info.noData` undefined): NoData travels in the mask only (PNG alpha, masked
 * pixels for the next function, a GDAL internal mask band in GeoTIFF output), and masked pixels
 * hold 0. A client that wants a sentinel in the file asks the encoder for one (the request's
 * `noData`, e.g. 0 for GDAL's convention, at the price of fully shaded pixels reading as NoData).
 * [ours]
 *
 * Edges and NoData neighbours: `gradient.ts` (vendor rule; `RemoveEdgeEffect: true` = gdaldem
 * -compute_edges).
 */
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isInteger, PIXEL_TYPE_INFO, type Plane } from '../../core/pixel-type.js';
import { realTypeOf, refuseType } from '../../graph/output-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction } from '../../graph/types.js';
import {
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
import { hillshadeManyF32, hillshadeOneF32, hornViaWasm, OUT_KIND } from '../../wasm/terrain.js';

export const HillshadeType = { Traditional: 0, Multidirectional: 1 } as const;

const args = {
  HillshadeType: {
    kind: 'enum',
    values: [0, 1],
    names: { TRADITIONAL: 0, MULTIDIRECTIONAL: 1 },
    default: HillshadeType.Traditional,
    doc: '0 traditional (one light source), 1 multidirectional (six weighted sources; Azimuth and Altitude ignored).',
  },
  Azimuth: { kind: 'number', default: 315, doc: 'Direction of the light, degrees clockwise from north.' },
  Altitude: { kind: 'number', default: 45, min: 0, max: 90, doc: 'Angle of the light above the horizon, degrees.' },
  ...surfaceArgs,
} as const;

/** Vendor multidirectional light sources: azimuth, altitude (degrees), weight. */
export const MULTIDIRECTIONAL_SOURCES: readonly (readonly [number, number, number])[] = [
  [315, 60, 3 / 18],
  [270, 60, 5 / 18],
  [225, 60, 3 / 18],
  [360, 60, 2 / 18],
  [180, 60, 1 / 18],
  [0, 90, 4 / 18],
];

export interface HillshadeParams {
  readonly dem: number;
  readonly gradient: GradientParams;
  /**
   * Oblique light sources as `k0 + kx * gx + ky * gy` numerators (255 and the weight folded in),
   * flattened [k0, kx, ky, ...]; each is clamped at 0 before summing.
   */
  readonly sources: readonly number[];
  /** Sum of the numerators of sources that can never be negative (the zenith source). */
  readonly constant: number;
}

const RAD = Math.PI / 180;

/** Numerator terms of one source: 255 w (cos Zen + sin Zen sin AzMath gy - sin Zen cos AzMath gx). */
function sourceTerms(azimuth: number, altitude: number, weight: number): [number, number, number] {
  const zenith = (90 - altitude) * RAD;
  const azMath = (360 - azimuth + 90) * RAD;
  const s = 255 * weight;
  return [s * Math.cos(zenith), -s * Math.sin(zenith) * Math.cos(azMath), s * Math.sin(zenith) * Math.sin(azMath)];
}

/*
 * Shades of gradient (u, v). The numerators are 255 w (L . n) for the unnormalised surface normal
 * n = (-u, -v, 1), so a shade never exceeds 255 (1 + rounding) and the Uint8Array store, which
 * truncates (the vendor's `& 255` after clamping at 0), needs no upper clamp.
 */

/** One oblique source: numerator k0 + kx u + ky v, clamped at 0. */
const shadeOne = (u: number, v: number, k0: number, kx: number, ky: number): number => {
  const n = k0 + kx * u + ky * v;
  return (n > 0 ? n : 0) / Math.sqrt(1 + u * u + v * v);
};

/** Several sources: the constant zenith term c plus the clamped numerators, one 1/sqrt. */
const shadeMany = (u: number, v: number, s: readonly number[], c: number): number => {
  let sum = c;
  for (let k = 0; k < s.length; k += 3) {
    const n = s[k]! + s[k + 1]! * u + s[k + 2]! * v;
    if (n > 0) sum += n;
  }
  return sum / Math.sqrt(1 + u * u + v * v);
};

/** One output row, one source: the reader's cells from gx/gy/ok, the fast span by sliding. */
function traditionalRow(rows: HornRows, p: HillshadeParams, dst: Plane, mask: Uint8Array, o: number): void {
  const { src, fastFrom: f0, fastTo: f1, top, mid, bot, kx, ky } = rows;
  const k0 = p.sources[0]!;
  const k1 = p.sources[1]!;
  const k2 = p.sources[2]!;
  rows.writeOtherCells(dst, mask, o, 0, (u, v) => shadeOne(u, v, k0, k1, k2));
  if (f0 < f1) traditionalFast(src, dst, o, top, mid, bot, f0, f1, kx, ky, k0, k1, k2);
}

function traditionalFast(
  src: Plane,
  dst: Plane,
  o: number,
  top: number,
  mid: number,
  bot: number,
  f0: number,
  f1: number,
  kx: number,
  ky: number,
  k0: number,
  k1: number,
  k2: number,
): void {
  // Sliding Horn window (see HornRows and slope.ts), written out: hornSum, hornGx, hornGy and
  // shadeOne in the same order of operations (the same bits), with int32 offsets, so the hot
  // loop has no call to guard and no overflow check. Not a shared driver, by measurement (HornRows,
  // "One sliding loop per function"): through one, traditional Hillshade ran at 0.33-0.70x this loop.
  let t = top | 0;
  let m = mid | 0;
  let b = bot | 0;
  const d = (o + f0) | 0;
  const n = (f1 - f0) | 0;
  t = (t + f0 - 1) | 0;
  m = (m + f0 - 1) | 0;
  b = (b + f0 - 1) | 0;
  let sW = src[t]! + 2 * src[m]! + src[b]!;
  let dW = src[b]! - src[t]!;
  let sM = src[t + 1]! + 2 * src[m + 1]! + src[b + 1]!;
  let dM = src[b + 1]! - src[t + 1]!;
  for (let i = 0; i < n; i++) {
    const tE = src[t + i + 2]!;
    const bE = src[b + i + 2]!;
    const sE = tE + 2 * src[m + i + 2]! + bE;
    const dE = bE - tE;
    const u = (sE - sW) * kx;
    const v = (dW + 2 * dM + dE) * ky;
    const num = k0 + k1 * u + k2 * v;
    dst[d + i] = (num > 0 ? num : 0) / Math.sqrt(1 + u * u + v * v);
    sW = sM;
    sM = sE;
    dW = dM;
    dM = dE;
  }
}

/** One output row, several sources. */
function multiRow(rows: HornRows, p: HillshadeParams, dst: Plane, mask: Uint8Array, o: number): void {
  const { src, fastFrom: f0, fastTo: f1, top, mid, bot, kx, ky } = rows;
  const s = p.sources;
  const c = p.constant;
  rows.writeOtherCells(dst, mask, o, 0, (u, v) => shadeMany(u, v, s, c));
  if (f0 >= f1) return;
  // Sliding Horn window (see traditionalFast). Its own loop, by measurement (HornRows, "One sliding
  // loop per function"): through a shared driver, multidirectional Hillshade ran at 0.74x this loop.
  let sW = hornSum(src[top + f0 - 1]!, src[mid + f0 - 1]!, src[bot + f0 - 1]!);
  let dW = src[bot + f0 - 1]! - src[top + f0 - 1]!;
  let sM = hornSum(src[top + f0]!, src[mid + f0]!, src[bot + f0]!);
  let dM = src[bot + f0]! - src[top + f0]!;
  for (let x = f0; x < f1; x++) {
    const t = src[top + x + 1]!;
    const b = src[bot + x + 1]!;
    const sE = hornSum(t, src[mid + x + 1]!, b);
    const dE = b - t;
    dst[o + x] = shadeMany(hornGx(sW, sE, kx), hornGy(dW, dM, dE, ky), s, c);
    sW = sM;
    sM = sE;
    dW = dM;
    dM = dE;
  }
}

/**
 * The wasm SIMD path, when it is on (any DEM type; U8 or F32 output): the Horn gradients as above,
 * the shade in f32 lanes (src/wasm/terrain.ts: within a stated tolerance of the rows above, and
 * the cells outside the fast span computed with the same f32 operations, so tiles agree).
 * @returns false when it did not run (the TypeScript path runs).
 */
function hillshadeWasm(p: HillshadeParams, dem: PixelBlock, out: PixelBlock, one: boolean): boolean {
  if (out.bands[0] instanceof Float64Array) return false; // F64 keeps the float64 shade: the TypeScript rows
  const s = p.sources;
  if (one) {
    const [k0, k1, k2] = [s[0]!, s[1]!, s[2]!];
    const exact = (u: number, v: number): number => shadeOne(u, v, k0, k1, k2);
    return hornViaWasm(
      p.gradient,
      dem,
      out,
      0,
      (u, v) => hillshadeOneF32(u, v, k0, k1, k2, exact),
      (x, inType, kind) => {
        if (kind === 'F64') return undefined;
        const o = OUT_KIND[kind];
        return (t, m, b, d, n, kx, ky, k, si, so) => x.terrainHillshade(inType, o, t, m, b, d, n, kx, ky, k0, k1, k2, k, si, so);
      },
    );
  }
  const c = p.constant;
  const count = s.length / 3;
  const exact = (u: number, v: number): number => shadeMany(u, v, s, c);
  return hornViaWasm(
    p.gradient,
    dem,
    out,
    0,
    (u, v) => hillshadeManyF32(u, v, s, c, exact),
    (x, inType, kind, srcs) => {
      if (kind === 'F64') return undefined;
      const o = OUT_KIND[kind];
      return (t, m, b, d, n, kx, ky, k, si, so) => x.terrainMulti(inType, o, t, m, b, d, n, kx, ky, c, srcs, count, k, si, so);
    },
    s,
  );
}

export const hillshade = defineFunction<typeof args, HillshadeParams>({
  name: 'Hillshade',
  summary: 'Shaded relief from one light source or six (multidirectional), 0..255 (Horn 3x3).',
  variableName: 'DEM',
  family: 'terrain',
  verification: 'reference: gdaldem 3.6 and a NumPy per-row geodesic reference (golden), hand-checked vendor vectors',
  args,

  plan(a, inputs, to) {
    const dem = demInfo(inputs, a.DEM, 'Hillshade', argPaths(args)('DEM'));
    const pixelType = to === undefined ? 'U8' : realTypeOf(to);
    if (isInteger(pixelType) && (PIXEL_TYPE_INFO[pixelType].min > 0 || PIXEL_TYPE_INFO[pixelType].max < 255)) {
      throw refuseType('Hillshade', pixelType, 'shades run 0..255; use U8, a wider integer type or F32');
    }
    const multi = a.HillshadeType === HillshadeType.Multidirectional;
    const zf = multi ? 2 * a.ZFactor : a.ZFactor;
    // Geographic DEMs: SCALED always works in metres; otherwise the mode's z-factor rule decides.
    // ASSUMPTION (spec silent): the z-factor tests look at ZFactor as given, before doubling.
    const scaled = a.SlopeType === SlopeType.Scaled;
    const vendor = a.GeographicCellSize === GeographicCellSize.Vendor111000;
    const convert = scaled || (vendor ? a.ZFactor > 0.001 : geodesicConverts(a.ZFactor));
    const cell = cellGeometry(dem, a.GeographicCellSize, convert);

    const sources: number[] = [];
    let constant = 0;
    const lights = multi ? MULTIDIRECTIONAL_SOURCES : [[a.Azimuth, a.Altitude, 1] as const];
    for (const [az, alt, w] of lights) {
      const [k0, kx, ky] = sourceTerms(az, alt, w);
      // A source at the zenith shades flat-on everywhere: k0 >= 0 and no gradient terms.
      if (Math.abs(kx) < 1e-12 && Math.abs(ky) < 1e-12 && k0 >= 0) constant += k0;
      else sources.push(k0, kx, ky);
    }
    const info: RasterInfo = {
      width: dem.width,
      height: dem.height,
      bandCount: 1,
      pixelType,
      extent: dem.extent,
      cellSize: dem.cellSize,
      ...(dem.spatialReference ? { spatialReference: dem.spatialReference } : {}),
      statistics: [{ min: 0, max: 255 }],
    };
    const gradient = gradientParams(
      dem,
      zf,
      cell,
      a.RemoveEdgeEffect,
      scaled ? { power: a.PSPower, factor: a.PSZFactor, metersPerUnit: metersPerUnit(dem) } : undefined,
    );
    return { info, halo: gradientHalo(gradient.edges), params: { dem: a.DEM, gradient, sources, constant } };
  },

  kernel(p, inputs, out) {
    // One oblique source (traditional; a zenith light has no oblique term: `constant` only).
    const one = p.sources.length === 3 && p.constant === 0;
    if (hillshadeWasm(p, inputs[p.dem]!, out, one)) return;
    const rows = new HornRows(p.gradient, inputs[p.dem]!, out.rect);
    const dst = out.bands[0]!;
    const w = out.rect.width | 0; // | 0: a small integer, so row offsets stay integers (see WindowRows)
    for (let y = 0; y < out.rect.height; y++) {
      rows.compute(y);
      if (one) traditionalRow(rows, p, dst, out.mask, y * w);
      else multiRow(rows, p, dst, out.mask, y * w);
    }
  },
});

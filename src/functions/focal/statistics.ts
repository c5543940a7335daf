/**
 * Statistics (focal): a statistic of the valid pixels in a Rows x Columns window around each pixel.
 *
 * Spec: raster-functions.md "Statistics (focal)"; spec section 8 (both argument forms).
 *  - Form 1: `Type` string Min | Max | Mean | StandardDeviation with `KernelColumns`/`KernelRows`;
 *    form 2 (10.2.1): `Type` int 1 Min, 2 Max, 3 Mean (default), 4 StandardDeviation, 5 Median,
 *    6 Majority, 7 Minority [VPY] with `Columns`/`Rows` (default 3 x 3) and `FillNoDataOnly`.
 *    Both spellings of every argument are accepted in either form; so are the names for the codes.
 *  - Window: centred; for even sizes the extra row/column is above/left [ours, = SciPy origin 0].
 *    Clipped at the raster's edges (pixels outside count as NoData). NoData pixels are left out of
 *    the statistic [ours]. StandardDeviation is the population one (divide by n) [ours]; Median of
 *    an even count is the mean of the two middle values; Majority/Minority ties take the smallest
 *    value [ours].
 *  - FillNoDataOnly false (default): NoData pixels stay NoData, every valid pixel gets the
 *    statistic. True: valid pixels keep their value; NoData pixels get the statistic of their valid
 *    neighbours, or stay NoData when the window has none (the vendor's "fill holes" use).
 *  - Output: the input's bands; natural type F32 for Mean and StandardDeviation, the input type
 *    otherwise (Median of an even count of integers rounds half away from zero) [ours]. The rule's
 *    outputPixelType replaces it: the statistic is stored once into that type (integer types
 *    round half away from zero and clamp; a U8 Median asked for F32 keeps its halves); a complex
 *    type computes into its real component type, then the engine's cast. NoData: the input's, or
 *    NaN for float outputs (always for Mean and StandardDeviation).
 * Code paths: Mean from window sums, StandardDeviation from `WindowMoments` (sums and sums of
 * squares), Min/Max from window minimums (Max as -min(-v)), all through `WindowReducer` (van Herk
 * / Gil-Werman blocks: cost independent of the window size; 3x3 fused in one pass), then one loop
 * per statistic along the row. StandardDeviation recomputes by two passes where `n*Q - S^2`
 * cancels more than 9 digits (`CANCELLATION`, `directVariance`); Median, Majority and Minority
 * gather and sort each window (limited to MAX_RANK_AREA pixels).
 */
import { EngineError, unsupportedInput } from '../../core/errors.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex, isInteger, type PixelType, type Plane } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { computedNoData, realTypeOf } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { FocalBand } from '../../wasm/focal.js';
import {
  bandValues,
  type BlockGeometry,
  CANCELLATION,
  directVariance,
  exactSquares,
  type FocalWindow,
  focalWindow,
  geometryOf,
  insideCounts,
  maskedInside,
  maskValues,
  minimumValues,
  ReduceMode,
  type Store,
  storeFor,
  storeRow,
  type Values,
  windowHalo,
  WindowMoments,
  WindowReducer,
} from './window.js';

const StatisticsType = { Min: 1, Max: 2, Mean: 3, StandardDeviation: 4, Median: 5, Majority: 6, Minority: 7 } as const;
type StatisticsTypeCode = (typeof StatisticsType)[keyof typeof StatisticsType];

/** Largest Columns or Rows. */
const MAX_WINDOW = 1001;
/** Largest window area for Median, Majority and Minority (which sort each window). */
const MAX_RANK_AREA = 128 * 128;

const args = {
  Type: {
    kind: 'enum',
    values: [1, 2, 3, 4, 5, 6, 7],
    names: {
      Min: 1,
      Minimum: 1,
      Max: 2,
      Maximum: 2,
      Mean: 3,
      StandardDeviation: 4,
      StdDev: 4,
      Std: 4,
      Median: 5,
      Majority: 6,
      Minority: 7,
    },
    default: StatisticsType.Mean,
    doc: '1 Min, 2 Max, 3 Mean (default), 4 StandardDeviation, 5 Median, 6 Majority, 7 Minority; or the names (form 1: Min, Max, Mean, StandardDeviation).',
  },
  Columns: {
    kind: 'int',
    min: 1,
    max: MAX_WINDOW,
    default: 3,
    aliases: ['KernelColumns'],
    doc: 'Window width in pixels (form 1: KernelColumns); default 3.',
  },
  Rows: {
    kind: 'int',
    min: 1,
    max: MAX_WINDOW,
    default: 3,
    aliases: ['KernelRows'],
    doc: 'Window height in pixels (form 1: KernelRows); default 3.',
  },
  FillNoDataOnly: {
    kind: 'boolean',
    default: false,
    doc: 'true: keep valid pixels and replace only NoData pixels by the statistic of their valid neighbours.',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

export interface StatisticsParams {
  readonly input: number;
  readonly type: StatisticsTypeCode;
  readonly win: FocalWindow;
  readonly fillOnly: boolean;
  readonly store: Store;
  /** Raster size (windows are clipped to it). */
  readonly width: number;
  readonly height: number;
  /** Integer input whose sums of squares are exact (no cancellation fallback needed). */
  readonly exact: boolean;
}

const at = argPaths(args);

export const statistics = defineFunction<typeof args, StatisticsParams>({
  name: 'Statistics',
  aliases: ['FocalStatistics'],
  summary: 'Focal Min, Max, Mean, StandardDeviation, Median, Majority or Minority over a moving window; can fill NoData only.',
  variableName: 'Raster',
  family: 'focal',
  verification:
    'reference: SciPy 1.10 ndimage generic_filter/uniform_filter with NaN padding (golden, 1e-5); hand: small windows, NoData, FillNoDataOnly',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) {
      throw unsupportedInput(at('Raster'), `Statistics needs a real-valued raster, got ${src.pixelType}; use Complex first`);
    }
    const type = a.Type;
    const area = a.Columns * a.Rows;
    if (type >= StatisticsType.Median && area > MAX_RANK_AREA) {
      throw new EngineError(
        'LIMIT_EXCEEDED',
        `a ${a.Columns}x${a.Rows} window is too large for Median/Majority/Minority (at most ${MAX_RANK_AREA} pixels)`,
        { path: at('Columns') },
      );
    }
    const float = type === StatisticsType.Mean || type === StatisticsType.StandardDeviation;
    const pixelType: PixelType = to !== undefined ? realTypeOf(to) : float ? 'F32' : src.pixelType;
    const noData = float && !isInteger(pixelType) ? Number.NaN : computedNoData(src.noData, src.pixelType, pixelType);
    const win = focalWindow(a.Columns, a.Rows);
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: src.bandCount,
      pixelType,
      ...(noData !== undefined ? { noData } : {}),
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      ...(src.bandNames ? { bandNames: src.bandNames } : {}),
    };
    return {
      info,
      halo: windowHalo(win),
      params: {
        input: a.Raster,
        type,
        win,
        fillOnly: a.FillNoDataOnly,
        width: src.width,
        height: src.height,
        store: storeFor(pixelType, noData),
        exact: exactSquares(src.pixelType, area),
      },
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const g = geometryOf(src, out);
    const { inW, outW, outH, ox, oy } = g;
    const win = p.win;
    const type = p.type;
    const fillOnly = p.fillOnly;
    const mask = src.mask;
    const outMask = out.mask;
    // Without NoData inside the raster, counts are the window's rows x columns inside the raster.
    const full = !maskedInside(mask, g, p.width, p.height);
    const inside = insideCounts(g, win, p.width, p.height);
    const rowBuf = new Float64Array(outW);
    const fullCounts = new Float64Array(outW);
    const scratch = type >= StatisticsType.Median ? new Float64Array(win.cols * win.rows) : undefined;
    const exact = p.exact;
    for (let b = 0; b < out.bands.length; b++) {
      const raw = bandValues(src, b);
      // Output mask: the centre's (FillNoDataOnly: 1, NoData only where the window has no valid pixel).
      for (let y = 0; y < outH; y++) {
        const s = (oy + y) * inW + ox;
        if (fillOnly) outMask.fill(1, y * outW, (y + 1) * outW);
        else outMask.set(mask.subarray(s, s + outW), y * outW);
      }
      if (fillOnly && full) {
        // FillNoDataOnly without NoData: every pixel keeps its value.
        for (let y = 0; y < outH; y++) {
          const c0 = (oy + y) * inW + ox;
          rowBuf.set(raw.subarray(c0, c0 + outW));
          storeRow(out.bands[b]!, y * outW, rowBuf, outW, outMask, p.store);
        }
        continue;
      }
      // The WebAssembly path (src/wasm/focal.ts) when it takes this band; else the loops below.
      if (full && !fillOnly && statisticsWasm(p, src, b, out.bands[b]!, outMask, g, inside)) continue;
      const counts = full ? undefined : new WindowReducer(maskValues(mask), g, win, ReduceMode.Sum);
      const moments = type === StatisticsType.Mean || type === StatisticsType.StandardDeviation;
      const values: Values = moments ? bandValues(src, b, 0) : raw;
      let main: WindowReducer | undefined;
      let both: WindowMoments | undefined;
      if (type === StatisticsType.StandardDeviation) both = new WindowMoments(values, g, win);
      else if (type === StatisticsType.Mean) main = new WindowReducer(values, g, win, ReduceMode.Sum);
      else if (type === StatisticsType.Min || type === StatisticsType.Max) {
        main = new WindowReducer(minimumValues(src, b, type === StatisticsType.Max), g, win, ReduceMode.Min);
      }
      // Mean without NoData into a float band: counts, quotient and store fused in one pass per
      // row, with the same operands as the general path below (count = rows x columns inside,
      // then m / count, then storeRow's rule), so the same bits.
      if (type === StatisticsType.Mean && !counts && !fillOnly && !p.store.integer) {
        const dst = out.bands[b]!;
        const fill = p.store.fill;
        const cols = inside.cols;
        if (win.rows === 3 && win.cols === 3) {
          // 3 x 3: the window sums of WindowReducer's fused3 (three-row column sums, then
          // c0 + c1 + c2, the same order) computed here, with no row of sums in between.
          for (let y = 0; y < outH; y++) {
            const o = (y * outW) | 0;
            const ry = inside.rows[y]!;
            const r0 = ((oy + y - 1) * inW + ox - 1) | 0;
            const r1 = (r0 + inW) | 0;
            const r2 = (r1 + inW) | 0;
            let c0 = values[r0]! + values[r1]! + values[r2]!;
            let c1 = values[r0 + 1]! + values[r1 + 1]! + values[r2 + 1]!;
            for (let x = 0; x < outW; x++) {
              const c2 = values[r0 + x + 2]! + values[r1 + x + 2]! + values[r2 + x + 2]!;
              const v = (c0 + c1 + c2) / (ry * cols[x]!);
              if (outMask[o + x] === 0 || v !== v) {
                outMask[o + x] = 0;
                dst[o + x] = fill;
              } else dst[o + x] = v;
              c0 = c1;
              c1 = c2;
            }
          }
          continue;
        }
        for (let y = 0; y < outH; y++) {
          const o = (y * outW) | 0;
          const ry = inside.rows[y]!;
          const m = main!.next();
          for (let x = 0; x < outW; x++) {
            const v = m[x]! / (ry * cols[x]!);
            if (outMask[o + x] === 0 || v !== v) {
              outMask[o + x] = 0;
              dst[o + x] = fill;
            } else dst[o + x] = v;
          }
        }
        continue;
      }
      // Standard deviation without NoData into a float band, fused likewise (the same operands and
      // order as the general path: count, the cancellation test, sqrt, storeRow's rule). The
      // formula is written out in each loop on purpose: a shared helper, inlined by TurboFan
      // with a guard per call, cost a fifth of the 3x3 kernel's speed (measured).
      if (type === StatisticsType.StandardDeviation && !counts && !fillOnly && !p.store.integer) {
        const dst = out.bands[b]!;
        const fill = p.store.fill;
        const cols = inside.cols;
        if (win.rows === 3 && win.cols === 3) {
          // 3 x 3: WindowMoments' sums and sums of squares (three-row column terms, then
          // s0 + s1 + s2, q0 + q1 + q2, the same order) computed here, with no rows in between.
          for (let y = 0; y < outH; y++) {
            const o = (y * outW) | 0;
            const cy = oy + y;
            const c0 = (cy * inW + ox) | 0;
            const ry = inside.rows[y]!;
            const r0 = ((cy - 1) * inW + ox - 1) | 0;
            const r1 = (r0 + inW) | 0;
            const r2 = (r1 + inW) | 0;
            let a = values[r0]!,
              bb = values[r1]!,
              c = values[r2]!;
            let s0 = a + bb + c;
            let q0 = a * a + bb * bb + c * c;
            a = values[r0 + 1]!;
            bb = values[r1 + 1]!;
            c = values[r2 + 1]!;
            let s1 = a + bb + c;
            let q1 = a * a + bb * bb + c * c;
            for (let x = 0; x < outW; x++) {
              a = values[r0 + x + 2]!;
              bb = values[r1 + x + 2]!;
              c = values[r2 + x + 2]!;
              const s2 = a + bb + c;
              const q2 = a * a + bb * bb + c * c;
              const sum = s0 + s1 + s2;
              const square = q0 + q1 + q2;
              s0 = s1;
              s1 = s2;
              q0 = q1;
              q1 = q2;
              const count = ry * cols[x]!;
              let r: number;
              if (count === 0 || mask[c0 + x] === 0) r = Number.NaN;
              else {
                const nq = count * square;
                const d = nq - sum * sum;
                r = Math.sqrt(
                  exact || d > CANCELLATION * nq ? (d > 0 ? d / (count * count) : 0) : directVariance(values, mask, inW, win, ox + x, cy),
                );
              }
              if (outMask[o + x] === 0 || r !== r) {
                outMask[o + x] = 0;
                dst[o + x] = fill;
              } else dst[o + x] = r;
            }
          }
          continue;
        }
        for (let y = 0; y < outH; y++) {
          const o = (y * outW) | 0;
          const cy = oy + y;
          const c0 = (cy * inW + ox) | 0;
          const ry = inside.rows[y]!;
          both!.next();
          const { sums, squares } = both!; // (other than 3 x 3, fresh arrays each row)
          for (let x = 0; x < outW; x++) {
            const count = ry * cols[x]!;
            let r: number;
            if (count === 0 || mask[c0 + x] === 0) r = Number.NaN;
            else {
              const s = sums[x]!;
              const nq = count * squares[x]!;
              const d = nq - s * s;
              r = Math.sqrt(
                exact || d > CANCELLATION * nq ? (d > 0 ? d / (count * count) : 0) : directVariance(values, mask, inW, win, ox + x, cy),
              );
            }
            if (outMask[o + x] === 0 || r !== r) {
              outMask[o + x] = 0;
              dst[o + x] = fill;
            } else dst[o + x] = r;
          }
        }
        continue;
      }
      for (let y = 0; y < outH; y++) {
        const o = y * outW;
        const cy = oy + y;
        const c0 = cy * inW + ox;
        let n: Float64Array;
        if (counts) n = counts.next();
        else {
          n = fullCounts;
          const ry = inside.rows[y]!;
          for (let x = 0; x < outW; x++) n[x] = ry * inside.cols[x]!;
        }
        const m = main?.next();
        // Results (NaN where the window has no valid pixel; Std and ranks skip the pixels whose
        // centre decides: a valid centre kept by FillNoDataOnly, a NoData centre without it).
        if (type === StatisticsType.Mean) {
          for (let x = 0; x < outW; x++) rowBuf[x] = m![x]! / n[x]!;
        } else if (type === StatisticsType.StandardDeviation) {
          both!.next();
          const { sums, squares } = both!;
          for (let x = 0; x < outW; x++) {
            const count = n[x]!;
            if (count === 0 || (mask[c0 + x] !== 0) === fillOnly) {
              rowBuf[x] = Number.NaN;
              continue;
            }
            // (n*Q - S^2) / n^2, two-pass where the sums cancel (window.ts CANCELLATION).
            const s = sums[x]!;
            const nq = count * squares[x]!;
            const d = nq - s * s;
            const v =
              exact || d > CANCELLATION * nq ? (d > 0 ? d / (count * count) : 0) : directVariance(values, mask, inW, win, ox + x, cy);
            rowBuf[x] = Math.sqrt(v);
          }
        } else if (m) {
          const sign = type === StatisticsType.Max ? -1 : 1;
          for (let x = 0; x < outW; x++) rowBuf[x] = n[x] === 0 ? Number.NaN : sign * m[x]!;
        } else {
          for (let x = 0; x < outW; x++) {
            rowBuf[x] =
              n[x] === 0 || (mask[c0 + x] !== 0) === fillOnly ? Number.NaN : rankStatistic(type, raw, mask, inW, win, ox + x, cy, scratch!);
          }
        }
        // FillNoDataOnly keeps valid centres (NoData centres without it are masked by storeRow).
        if (fillOnly) for (let x = 0; x < outW; x++) if (mask[c0 + x] !== 0) rowBuf[x] = raw[c0 + x]!;
        storeRow(out.bands[b]!, o, rowBuf, outW, outMask, p.store);
      }
    }
  },
});

/**
 * Mean, StandardDeviation, Min or Max over 3x3 windows of an F32 band without NoData inside the
 * raster, into an F32 band, in WebAssembly: the same results bit for bit (wasm/focal.ts). Pixels
 * the row function leaves NaN are finished here as the TypeScript path does (StandardDeviation:
 * recomputed, with the two-pass fallback; otherwise NoData). @returns false when not supported.
 */
function statisticsWasm(
  p: StatisticsParams,
  src: PixelBlock,
  b: number,
  dst: Plane,
  outMask: Uint8Array,
  g: BlockGeometry,
  inside: { rows: Float64Array; cols: Float64Array },
): boolean {
  const type = p.type;
  if (p.win.cols !== 3 || p.win.rows !== 3 || p.store.integer || type > StatisticsType.StandardDeviation || !FocalBand.available())
    return false;
  const plane = src.bands[b]!;
  if (!(plane instanceof Float32Array) || !(dst instanceof Float32Array)) return false;
  const moments = type === StatisticsType.Mean || type === StatisticsType.StandardDeviation;
  const mask = src.mask;
  // Masked pixels (outside the raster: none inside) count as the identity. Mean and
  // StandardDeviation read values holding 0 there (as the TypeScript path); Min and Max read the
  // plane itself and compute the pixels whose window reaches outside the raster here (minMax3At).
  const values = moments ? bandValues(src, b, 0) : plane;
  const band = FocalBand.bind(values, dst, [Array.from(inside.cols)]);
  if (band === undefined) return false;
  let done = false;
  try {
    const { fx, view } = band;
    const cols = band.constants[0]!;
    const { inW, outW, outH, ox, oy } = g;
    const stride = 4 * inW;
    const fill = p.store.fill;
    const exact = p.exact ? 1 : 0;
    const max = type === StatisticsType.Max;
    // Min/Max: output columns [xLo, xHi) of rows inside [yLo, yHi) have their window inside the raster.
    const X0 = g.inX + ox;
    const Y0 = g.inY + oy;
    const xLo = moments ? 0 : X0 === 0 ? 1 : 0;
    const xHi = moments ? outW : Math.max(xLo, X0 + outW === p.width ? outW - 1 : outW);
    for (let y = 0; y < outH; y++) {
      const o = y * outW;
      const ry = inside.rows[y]!;
      if (!moments && (Y0 + y === 0 || Y0 + y === p.height - 1 || xHi === xLo)) {
        for (let x = 0; x < outW; x++) storeF32(view, outMask, o + x, minMax3At(plane, mask, inW, ox + x, oy + y, max), fill);
        continue;
      }
      if (!moments) {
        for (let x = 0; x < xLo; x++) storeF32(view, outMask, o + x, minMax3At(plane, mask, inW, ox + x, oy + y, max), fill);
        for (let x = xHi; x < outW; x++) storeF32(view, outMask, o + x, minMax3At(plane, mask, inW, ox + x, oy + y, max), fill);
      }
      const s = band.at((oy + y - 1) * inW + ox + xLo - 1);
      const d = band.out(o + xLo);
      const nans =
        type === StatisticsType.Mean
          ? fx.focalMean3F32(s, d, outW, stride, ry, cols)
          : type === StatisticsType.StandardDeviation
            ? fx.focalStd3F32(s, d, outW, stride, ry, cols, exact, CANCELLATION)
            : type === StatisticsType.Min
              ? fx.focalMin3F32(s, d, xHi - xLo, stride)
              : fx.focalMax3F32(s, d, xHi - xLo, stride);
      if (nans === 0) continue;
      const cy = oy + y;
      for (let x = xLo; x < xHi; x++) {
        if (view[o + x] === view[o + x]) continue;
        const r = type === StatisticsType.StandardDeviation ? std3At(values, mask, inW, p, ox + x, cy, ry * inside.cols[x]!) : Number.NaN;
        if (r !== r) {
          outMask[o + x] = 0;
          view[o + x] = fill;
        } else view[o + x] = r;
      }
    }
    band.finish();
    done = true;
    return true;
  } finally {
    if (!done) band.release();
  }
}

/** storeRow's rule for one float pixel (its centre is valid here). */
function storeF32(view: Float32Array, outMask: Uint8Array, i: number, r: number, fill: number): void {
  if (r !== r) {
    outMask[i] = 0;
    view[i] = fill;
  } else view[i] = r;
}

/**
 * Min (Max) of the 3x3 window centred on input pixel (cx, cy), masked pixels counting as +Infinity
 * (-Infinity): window.ts fused3's comparisons in its order (column m = r0; m = r1 < m ? r1 : m;
 * m = r2 < m ? r2 : m; then u = c0 < c1 ? c0 : c1; u < c2 ? u : c2), Max as -min(-v) selects.
 */
function minMax3At(v: Float32Array, mask: Uint8Array, inW: number, cx: number, cy: number, max: boolean): number {
  const id = max ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  let c0 = 0;
  let c1 = 0;
  let r = 0;
  for (let j = 0; j < 3; j++) {
    const i0 = (cy - 1) * inW + cx - 1 + j;
    const a = mask[i0] !== 0 ? v[i0]! : id;
    const b = mask[i0 + inW] !== 0 ? v[i0 + inW]! : id;
    const c = mask[i0 + 2 * inW] !== 0 ? v[i0 + 2 * inW]! : id;
    let m = a;
    if (max) {
      m = m < b ? b : m;
      m = m < c ? c : m;
    } else {
      m = b < m ? b : m;
      m = c < m ? c : m;
    }
    if (j === 0) c0 = m;
    else if (j === 1) c1 = m;
    else if (max) {
      const u = c1 < c0 ? c0 : c1;
      r = m < u ? u : m;
    } else {
      const u = c0 < c1 ? c0 : c1;
      r = u < m ? u : m;
    }
  }
  return r;
}

/** The fused 3x3 StandardDeviation of one pixel (centre cx, cy): the same operands and order as the loop above. */
function std3At(values: Values, mask: Uint8Array, inW: number, p: StatisticsParams, cx: number, cy: number, count: number): number {
  if (count === 0 || mask[cy * inW + cx] === 0) return Number.NaN;
  const r0 = (cy - 1) * inW + cx - 1;
  const r1 = r0 + inW;
  const r2 = r1 + inW;
  let sum = 0;
  let square = 0;
  for (let j = 0; j < 3; j++) {
    const a = values[r0 + j]!;
    const bb = values[r1 + j]!;
    const c = values[r2 + j]!;
    const s = a + bb + c;
    const q = a * a + bb * bb + c * c;
    sum = j === 0 ? s : sum + s;
    square = j === 0 ? q : square + q;
  }
  const nq = count * square;
  const d = nq - sum * sum;
  return Math.sqrt(p.exact || d > CANCELLATION * nq ? (d > 0 ? d / (count * count) : 0) : directVariance(values, mask, inW, p.win, cx, cy));
}

/** Median, Majority or Minority of the valid pixels of one window (NaN when none is valid). */
function rankStatistic(
  type: StatisticsTypeCode,
  v: Values,
  mask: Uint8Array,
  inW: number,
  win: FocalWindow,
  cx: number,
  cy: number,
  scratch: Float64Array,
): number {
  let n = 0;
  for (let r = cy - win.top; r <= cy + win.bottom; r++) {
    const o = r * inW;
    for (let c = cx - win.left; c <= cx + win.right; c++) if (mask[o + c] !== 0) scratch[n++] = v[o + c]!;
  }
  if (n === 0) return Number.NaN;
  const s = scratch.subarray(0, n).sort();
  if (type === StatisticsType.Median) return n % 2 === 1 ? s[n >> 1]! : (s[(n >> 1) - 1]! + s[n >> 1]!) / 2;
  // Runs of equal values in sorted order: the first longest (Majority) or first shortest (Minority) run.
  const majority = type === StatisticsType.Majority;
  let best = s[0]!;
  let bestLen = majority ? 0 : Number.POSITIVE_INFINITY;
  for (let i = 0; i < n;) {
    let j = i + 1;
    while (j < n && s[j] === s[i]) j++;
    const len = j - i;
    if (majority ? len > bestLen : len < bestLen) {
      best = s[i]!;
      bestLen = len;
    }
    i = j;
  }
  return best;
}

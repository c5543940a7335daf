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
 *  - Output: the input's bands; F32 for Mean and StandardDeviation, the input type otherwise
 *    (Median of an even count of integers rounds half away from zero) [ours].
 * Code paths: Mean and StandardDeviation from window sums and Min/Max from window minimums, all
 * through `WindowReducer` (van Herk / Gil-Werman blocks: cost independent of the window size);
 * StandardDeviation recomputes by two passes where `n*Q - S^2` cancels more than 9 digits
 * (`varianceOf`); Median, Majority and Minority gather and sort each window (limited to
 * MAX_RANK_AREA pixels).
 */
import { EngineError, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type PixelType } from '../../core/pixel-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import {
  bandValues,
  exactSquares,
  type FocalWindow,
  focalWindow,
  geometryOf,
  insideCounts,
  maskedInside,
  maskValues,
  ReduceMode,
  type Store,
  storeFor,
  storeRow,
  type Values,
  varianceOf,
  windowHalo,
  WindowReducer,
} from './window.js';

export const StatisticsType = { Min: 1, Max: 2, Mean: 3, StandardDeviation: 4, Median: 5, Majority: 6, Minority: 7 } as const;
type StatisticsTypeCode = (typeof StatisticsType)[keyof typeof StatisticsType];

/** Largest Columns or Rows. */
export const MAX_WINDOW = 1001;
/** Largest window area for Median, Majority and Minority (which sort each window). */
export const MAX_RANK_AREA = 128 * 128;

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

const P = 'rasterFunctionArguments.';

export const statistics = defineFunction<typeof args, StatisticsParams>({
  name: 'Statistics',
  aliases: ['FocalStatistics'],
  summary: 'Focal Min, Max, Mean, StandardDeviation, Median, Majority or Minority over a moving window; can fill NoData only.',
  variableName: 'Raster',
  family: 'focal',
  verification: 'reference: SciPy 1.10 ndimage generic_filter/uniform_filter with NaN padding (golden, 1e-5); hand: small windows, NoData, FillNoDataOnly',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) {
      throw unsupportedInput(`${P}Raster`, `Statistics needs a real-valued raster, got ${src.pixelType}; use Complex first`);
    }
    const type = a.Type as StatisticsTypeCode;
    const area = a.Columns * a.Rows;
    if (type >= StatisticsType.Median && area > MAX_RANK_AREA) {
      throw new EngineError(
        'LIMIT_EXCEEDED',
        `a ${a.Columns}x${a.Rows} window is too large for Median/Majority/Minority (at most ${MAX_RANK_AREA} pixels)`,
        { path: `${P}Columns` },
      );
    }
    const float = type === StatisticsType.Mean || type === StatisticsType.StandardDeviation;
    const pixelType: PixelType = float ? 'F32' : src.pixelType;
    const noData = float ? Number.NaN : src.noData;
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
    const mask = src.mask;
    const outMask = out.mask;
    const area = win.cols * win.rows;
    // Without NoData inside the raster, counts are the window's rows x columns inside the raster.
    const full = !maskedInside(mask, g, p.width, p.height);
    const inside = insideCounts(g, win, p.width, p.height);
    const rowBuf = new Float64Array(outW);
    const scratch = p.type >= StatisticsType.Median ? new Float64Array(area) : undefined;
    for (let b = 0; b < out.bands.length; b++) {
      const raw = bandValues(src, b);
      // Output mask: the centre's (FillNoDataOnly: 1, NoData only where the window has no valid pixel).
      for (let y = 0; y < outH; y++) {
        const s = (oy + y) * inW + ox;
        if (p.fillOnly) outMask.fill(1, y * outW, (y + 1) * outW);
        else outMask.set(mask.subarray(s, s + outW), y * outW);
      }
      const counts = full ? undefined : new WindowReducer(maskValues(mask), g, win, ReduceMode.Sum);
      let main: WindowReducer | undefined;
      let squares: WindowReducer | undefined;
      let values: Values = raw;
      const negate = p.type === StatisticsType.Max;
      if (p.type === StatisticsType.Mean || p.type === StatisticsType.StandardDeviation) {
        values = bandValues(src, b, 0);
        main = new WindowReducer(values, g, win, ReduceMode.Sum);
        if (p.type === StatisticsType.StandardDeviation) squares = new WindowReducer(values, g, win, ReduceMode.SumOfSquares);
      } else if (p.type === StatisticsType.Min || negate) {
        const v = negate ? Float64Array.from(raw, (x) => -x) : Float64Array.from(raw);
        for (let i = 0; i < mask.length; i++) if (mask[i] === 0) v[i] = Number.POSITIVE_INFINITY;
        main = new WindowReducer(v, g, win, ReduceMode.Min);
      }
      for (let y = 0; y < outH; y++) {
        const o = y * outW;
        const n = counts?.next();
        const m = main?.next();
        const q = squares?.next();
        const cy = oy + y;
        for (let x = 0; x < outW; x++) {
          const cx = ox + x;
          const ci = cy * inW + cx;
          if (mask[ci] !== 0 ? p.fillOnly : !p.fillOnly) {
            // Valid centre kept as is (FillNoDataOnly), or NoData centre left NoData.
            rowBuf[x] = raw[ci]!;
            continue;
          }
          const count = n ? n[x]! : inside.rows[y]! * inside.cols[x]!;
          if (count === 0) {
            rowBuf[x] = Number.NaN;
            continue;
          }
          switch (p.type) {
            case StatisticsType.Mean:
              rowBuf[x] = m![x]! / count;
              break;
            case StatisticsType.StandardDeviation:
              rowBuf[x] = Math.sqrt(varianceOf(count, m![x]!, q![x]!, p.exact, values, mask, inW, win, cx, cy));
              break;
            case StatisticsType.Min:
              rowBuf[x] = m![x]!;
              break;
            case StatisticsType.Max:
              rowBuf[x] = -m![x]!;
              break;
            default:
              rowBuf[x] = rankStatistic(p.type, raw, mask, inW, win, cx, cy, scratch!);
          }
        }
        storeRow(out.bands[b]!, o, rowBuf, outW, outMask, p.store);
      }
    }
  },
});

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
  for (let i = 0; i < n; ) {
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

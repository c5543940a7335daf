/**
 * The focal family's shared window reader: window geometry, band values as floats, a
 * constant-cost window reducer (sums and minimums over a Rows x Columns window) and the output
 * store (round half away from zero and clamp for integer types, spec §1.2).
 *
 * Window convention (spec "Statistics (focal)", "Convolution"): the window of an output pixel
 * spans `left = floor(Columns / 2)` pixels to its left and `Columns - 1 - left` to its right, and
 * likewise `top = floor(Rows / 2)` above; so for even sizes the extra column/row lies left/above
 * (SciPy's `origin=0` for even sizes does the same).
 *
 * `WindowReducer` is the van Herk / Gil-Werman scheme applied to both sums and minimums, first down
 * the columns, then along the row of column results: the raster is cut into blocks of `Rows` rows
 * (and `Columns` columns) aligned on raster coordinates; any window covers the tail of one block
 * and the head of the next, so its result is `suffix(first block) (+|min) prefix(next block)`, with
 * both partial results accumulated inside one block. Cost per pixel is constant (about six
 * operations per direction) whatever the window size, and because blocks are aligned on the
 * raster, not on the tile, every pixel's sum is computed in the same order in any tiling: tiled
 * renders equal whole renders bit for bit, and no running sum drifts along a row (each partial sum
 * has at most `Rows` or `Columns` terms).
 * Windows of at most 3 rows (columns) are summed directly in a fixed order instead, and 3x3 sums
 * and minimums are fused into one pass with a sliding register window of column results (same
 * order, same results); `WindowMoments` gives sums and sums of squares together (one pass for
 * 3x3). Values are read from the block's own plane where it is float and its masked pixels
 * already hold the fill value (no copy).
 */
import type { PixelBlock } from '../../core/pixel-block.js';
import { PIXEL_TYPE_INFO, type PixelType, type Plane } from '../../core/pixel-type.js';

export interface FocalWindow {
  readonly cols: number;
  readonly rows: number;
  /** Pixels left of the centre: floor(cols / 2); `right` = cols - 1 - left. */
  readonly left: number;
  readonly right: number;
  /** Rows above the centre: floor(rows / 2); `bottom` = rows - 1 - top. */
  readonly top: number;
  readonly bottom: number;
}

export function focalWindow(cols: number, rows: number): FocalWindow {
  const left = cols >> 1;
  const top = rows >> 1;
  return { cols, rows, left, right: cols - 1 - left, top, bottom: rows - 1 - top };
}

/** The plan halo a window needs (left >= right and top >= bottom). */
export const windowHalo = (w: FocalWindow): number => Math.max(w.left, w.top);

/** Float values of one band. */
export type Values = Float32Array | Float64Array;

/** Where a kernel's output block sits in its input block. */
export interface BlockGeometry {
  /** Input block size and its top-left pixel in raster coordinates. */
  readonly inW: number;
  readonly inH: number;
  readonly inX: number;
  readonly inY: number;
  readonly outW: number;
  readonly outH: number;
  /** Input column/row of the output's pixel (0, 0). */
  readonly ox: number;
  readonly oy: number;
}

/** Copy the input mask under the output rectangle into `outMask` (focal functions keep NoData where it was). */
export function copyCentreMask(g: BlockGeometry, mask: Uint8Array, outMask: Uint8Array): void {
  const { inW, outW, outH, ox, oy } = g;
  for (let y = 0; y < outH; y++) outMask.set(mask.subarray((oy + y) * inW + ox, (oy + y) * inW + ox + outW), y * outW);
}

export function geometryOf(input: PixelBlock, out: PixelBlock): BlockGeometry {
  // `| 0`: small-integer fields, so the kernels' offsets stay integer arithmetic (core/rect.ts).
  return {
    inW: input.rect.width | 0,
    inH: input.rect.height | 0,
    inX: input.rect.x | 0,
    inY: input.rect.y | 0,
    outW: out.rect.width | 0,
    outH: out.rect.height | 0,
    ox: (out.rect.x - input.rect.x) | 0,
    oy: (out.rect.y - input.rect.y) | 0,
  };
}

/**
 * Whether a pixel of the input block that lies inside the raster (`width` x `height`) is masked.
 * Pixels outside the raster are always masked, but they only fall in the windows of edge pixels,
 * whose counts `insideCounts` gives without a mask pass.
 */
export function maskedInside(mask: Uint8Array, g: BlockGeometry, width: number, height: number): boolean {
  const x0 = Math.max(0, -g.inX);
  const x1 = Math.min(g.inW, width - g.inX);
  const y0 = Math.max(0, -g.inY);
  const y1 = Math.min(g.inH, height - g.inY);
  if (x0 >= x1) return false;
  for (let y = y0; y < y1; y++) if (mask.subarray(y * g.inW + x0, y * g.inW + x1).indexOf(0) >= 0) return true;
  return false;
}

/** How many rows (per output row) and columns (per output column) of each window lie inside the raster. */
export function insideCounts(g: BlockGeometry, w: FocalWindow, width: number, height: number): { rows: Float64Array; cols: Float64Array } {
  const span = (from: number, to: number, size: number): number => Math.max(0, Math.min(to, size - 1) - Math.max(from, 0) + 1);
  const rows = new Float64Array(g.outH);
  const cols = new Float64Array(g.outW);
  for (let y = 0; y < g.outH; y++) {
    const R = g.inY + g.oy + y;
    rows[y] = span(R - w.top, R + w.bottom, height);
  }
  for (let x = 0; x < g.outW; x++) {
    const C = g.inX + g.ox + x;
    cols[x] = span(C - w.left, C + w.right, width);
  }
  return { rows, cols };
}

/**
 * Band `band` of `block` as floats. Without `fill`: the plane itself when it is F32/F64, else a
 * Float64 copy (values of masked pixels are whatever the plane holds). With `fill`: masked pixels
 * hold `fill` (a copy unless nothing is masked and the plane is already float).
 */
export function bandValues(block: PixelBlock, band: number, fill?: number): Values {
  const plane = block.bands[band]!;
  const float = plane instanceof Float32Array || plane instanceof Float64Array;
  const mask = block.mask;
  if (fill === undefined || (float && holds(plane, mask, fill))) return float ? plane : new Float64Array(plane);
  const v = plane instanceof Float32Array ? new Float32Array(plane) : new Float64Array(plane);
  for (let i = 0; i < mask.length; i++) if (mask[i] === 0) v[i] = fill;
  return v;
}

/** Whether every masked pixel of `plane` already holds `fill` (the same sign for zeros). */
function holds(plane: Values, mask: Uint8Array, fill: number): boolean {
  const inv = 1 / fill;
  for (let i = mask.indexOf(0); i >= 0; i = mask.indexOf(0, i + 1)) {
    const v = plane[i]!;
    if (v !== fill || 1 / v !== inv) return false;
  }
  return true;
}

/**
 * Band `band` for window minimums (`negate`: maximums, as minimums of the negated values): valid
 * pixels' values (negated), +Inf where masked (the plane itself when it is float, not negated and
 * has no masked pixel). Negation is exact, so maximums are -min(-v).
 */
export function minimumValues(block: PixelBlock, band: number, negate: boolean): Values {
  const plane = block.bands[band]!;
  const mask = block.mask;
  const float = plane instanceof Float32Array || plane instanceof Float64Array;
  if (float && !negate && mask.indexOf(0) < 0) return plane;
  const v = plane instanceof Float32Array ? new Float32Array(plane.length) : new Float64Array(plane.length);
  const sign = negate ? -1 : 1;
  for (let i = 0; i < v.length; i++) v[i] = mask[i] !== 0 ? sign * plane[i]! : Number.POSITIVE_INFINITY;
  return v;
}

/** The mask as 0/1 floats (`invert`: 1 where masked), for counting with a `WindowReducer`. */
export function maskValues(mask: Uint8Array, invert = false): Float32Array {
  const v = new Float32Array(mask.length);
  if (invert) for (let i = 0; i < mask.length; i++) v[i] = mask[i] === 0 ? 1 : 0;
  else for (let i = 0; i < mask.length; i++) v[i] = mask[i] === 0 ? 0 : 1;
  return v;
}

const mod = (a: number, k: number): number => ((a % k) + k) % k;

/** Windows of at most this many rows (columns) are summed directly, in order, down (along) each window. */
const DIRECT = 3;

export const ReduceMode = { Sum: 0, SumOfSquares: 1, Min: 2 } as const;
export type ReduceMode = (typeof ReduceMode)[keyof typeof ReduceMode];

/**
 * Window sums (of values or of their squares) or minimums, one output row per `next()` call, rows
 * in order from output row 0. The source holds the identity for masked pixels (0 for sums, +Inf
 * for minimums). See the file header for the block scheme.
 */
export class WindowReducer {
  private readonly pre: Float64Array;
  private readonly suf: Float64Array;
  private readonly col: Float64Array;
  private readonly hPre: Float64Array;
  private readonly hSuf: Float64Array;
  private readonly out: Float64Array;
  private y = 0;
  private sufBlock = Number.NaN;

  constructor(
    private readonly src: Values,
    private readonly g: BlockGeometry,
    private readonly w: FocalWindow,
    private readonly mode: ReduceMode,
  ) {
    this.pre = new Float64Array(g.inW);
    this.suf = new Float64Array(g.inW * w.rows);
    this.col = new Float64Array(g.inW);
    this.hPre = new Float64Array(g.inW);
    this.hSuf = new Float64Array(g.inW);
    this.out = new Float64Array(g.outW);
  }

  /** dst[d0 + x] = f(src row i); or, with `acc`, dst[d0 + x] = dst[d0 + x] (op) f(src row i). */
  private row(dst: Float64Array, d0: number, i: number, acc: boolean, other?: Float64Array, o0 = 0): void {
    const src = this.src;
    const n = this.g.inW;
    const s0 = i * n;
    if (this.mode === ReduceMode.Min) {
      if (other !== undefined) {
        for (let x = 0; x < n; x++) {
          const v = src[s0 + x]!;
          const o = other[o0 + x]!;
          dst[d0 + x] = v < o ? v : o;
        }
      } else if (acc) {
        for (let x = 0; x < n; x++) {
          const v = src[s0 + x]!;
          const o = dst[d0 + x]!;
          dst[d0 + x] = v < o ? v : o;
        }
      } else {
        for (let x = 0; x < n; x++) dst[d0 + x] = src[s0 + x]!;
      }
    } else if (this.mode === ReduceMode.SumOfSquares) {
      if (other !== undefined) {
        for (let x = 0; x < n; x++) {
          const v = src[s0 + x]!;
          dst[d0 + x] = v * v + other[o0 + x]!;
        }
      } else if (acc) {
        for (let x = 0; x < n; x++) {
          const v = src[s0 + x]!;
          dst[d0 + x] = dst[d0 + x]! + v * v;
        }
      } else {
        for (let x = 0; x < n; x++) {
          const v = src[s0 + x]!;
          dst[d0 + x] = v * v;
        }
      }
    } else if (other !== undefined) {
      for (let x = 0; x < n; x++) dst[d0 + x] = src[s0 + x]! + other[o0 + x]!;
    } else if (acc) {
      for (let x = 0; x < n; x++) dst[d0 + x] = dst[d0 + x]! + src[s0 + x]!;
    } else {
      for (let x = 0; x < n; x++) dst[d0 + x] = src[s0 + x]!;
    }
  }

  /** The window results of the next output row (a view reused by the next call). */
  next(): Float64Array {
    // (3x3 sums of squares come from WindowMoments; here they take the direct path, same order.)
    if (this.w.rows === 3 && this.w.cols === 3 && this.mode !== ReduceMode.SumOfSquares) return this.fused3();
    const col = this.vertical();
    this.y++;
    return this.horizontal(col);
  }

  /**
   * 3x3 windows in one pass with a sliding register window of three column results, in the same
   * order as the direct paths below ((r0 op r1) op r2 down, then left to right; minimums compare
   * the same operands the same way, NaN included), so results are identical.
   */
  private fused3(): Float64Array {
    const { inW, ox, oy, outW } = this.g;
    const src = this.src;
    const out = this.out;
    const r0 = (this.y + oy - 1) * inW + ox - 1;
    const r1 = r0 + inW;
    const r2 = r1 + inW;
    this.y++;
    if (this.mode === ReduceMode.Sum) {
      let c0 = src[r0]! + src[r1]! + src[r2]!;
      let c1 = src[r0 + 1]! + src[r1 + 1]! + src[r2 + 1]!;
      for (let x = 0; x < outW; x++) {
        const c2 = src[r0 + x + 2]! + src[r1 + x + 2]! + src[r2 + x + 2]!;
        out[x] = c0 + c1 + c2;
        c0 = c1;
        c1 = c2;
      }
    } else {
      // Column minimum as vertical(): m = r0; m = r1 < m ? r1 : m; m = r2 < m ? r2 : m.
      let c0 = 0,
        c1 = 0;
      for (let x = -2; x < outW; x++) {
        let m = src[r0 + x + 2]!;
        const b = src[r1 + x + 2]!;
        m = b < m ? b : m;
        const c = src[r2 + x + 2]!;
        const c2 = c < m ? c : m;
        if (x >= 0) {
          const u = c0 < c1 ? c0 : c1;
          out[x] = u < c2 ? u : c2;
        }
        c0 = c1;
        c1 = c2;
      }
    }
    return out;
  }

  /** Column results (sums or minimums down the window's rows) for every input column. */
  private vertical(): Float64Array {
    const { inW, inY, oy } = this.g;
    const { rows: kh, top } = this.w;
    const pre = this.pre;
    const a = this.y + oy - top;
    const b = a + kh - 1;
    if (kh <= DIRECT) {
      // Small windows: rows a..b added (or min-ed) in order; the same order in any tiling.
      this.row(pre, 0, a, false);
      for (let i = a + 1; i <= b; i++) this.row(pre, 0, i, true);
      return pre;
    }
    // Vertical prefix: rows blockStart(b)..b, accumulated forward from the block start.
    const posB = mod(inY + b, kh);
    if (this.y === 0) {
      this.row(pre, 0, b - posB, false);
      for (let i = b - posB + 1; i <= b; i++) this.row(pre, 0, i, true);
    } else {
      this.row(pre, 0, b, posB !== 0);
    }
    // Vertical suffix: rows a..blockEnd(a), accumulated backward from the block end, once per block.
    const posA = mod(inY + a, kh);
    if (posA === 0) return pre;
    const block = Math.floor((inY + a) / kh);
    const suf = this.suf;
    if (block !== this.sufBlock) {
      this.sufBlock = block;
      const end = a + kh - 1 - posA;
      this.row(suf, (kh - 1) * inW, end, false);
      for (let i = end - 1, p = kh - 2; i >= a; i--, p--) this.row(suf, p * inW, i, false, suf, (p + 1) * inW);
    }
    const col = this.col;
    const s0 = posA * inW;
    if (this.mode === ReduceMode.Min) {
      for (let x = 0; x < inW; x++) {
        const s = suf[s0 + x]!;
        const p = pre[x]!;
        col[x] = s < p ? s : p;
      }
    } else {
      for (let x = 0; x < inW; x++) col[x] = suf[s0 + x]! + pre[x]!;
    }
    return col;
  }

  /** Window results along the row of column results, for the output columns. */
  private horizontal(col: Float64Array): Float64Array {
    const { inX, ox, outW } = this.g;
    const { cols: kw, left } = this.w;
    const min = this.mode === ReduceMode.Min;
    const out = this.out;
    const c0 = ox - left;
    if (kw === 1) {
      for (let x = 0; x < outW; x++) out[x] = col[c0 + x]!;
      return out;
    }
    if (kw === 2) {
      if (min) {
        for (let x = 0, c = c0; x < outW; x++, c++) {
          const u = col[c]!;
          const v = col[c + 1]!;
          out[x] = u < v ? u : v;
        }
      } else for (let x = 0, c = c0; x < outW; x++, c++) out[x] = col[c]! + col[c + 1]!;
      return out;
    }
    if (kw === 3) {
      if (min) {
        for (let x = 0, c = c0; x < outW; x++, c++) {
          const u = col[c]!;
          const v = col[c + 1]!;
          const w = col[c + 2]!;
          const m = u < v ? u : v;
          out[x] = m < w ? m : w;
        }
      } else for (let x = 0, c = c0; x < outW; x++, c++) out[x] = col[c]! + col[c + 1]! + col[c + 2]!;
      return out;
    }
    // Blocks of kw columns aligned on raster columns: prefixes forward, suffixes backward.
    const d1 = c0 + outW + kw - 2;
    const hPre = this.hPre;
    const hSuf = this.hSuf;
    const pos0 = mod(inX + c0, kw);
    for (let i = c0, end = Math.min(d1, c0 + kw - 1 - pos0); i <= d1; end = Math.min(d1, i + kw - 1)) {
      let s = col[i]!;
      hPre[i] = s;
      if (min) {
        for (let j = i + 1; j <= end; j++) {
          const v = col[j]!;
          s = v < s ? v : s;
          hPre[j] = s;
        }
      } else {
        for (let j = i + 1; j <= end; j++) {
          s += col[j]!;
          hPre[j] = s;
        }
      }
      i = end + 1;
    }
    const posEnd = mod(inX + d1, kw);
    for (let i = d1, start = Math.max(c0, d1 - posEnd); i >= c0; start = Math.max(c0, i - kw + 1)) {
      let s = col[i]!;
      hSuf[i] = s;
      if (min) {
        for (let j = i - 1; j >= start; j--) {
          const v = col[j]!;
          s = v < s ? v : s;
          hSuf[j] = s;
        }
      } else {
        for (let j = i - 1; j >= start; j--) {
          s = col[j]! + s;
          hSuf[j] = s;
        }
      }
      i = start - 1;
    }
    let pos = pos0;
    const last = kw - 1;
    if (min) {
      for (let x = 0; x < outW; x++) {
        const d = c0 + x + last;
        if (pos === 0) out[x] = hPre[d]!;
        else {
          const s = hSuf[c0 + x]!;
          const p = hPre[d]!;
          out[x] = s < p ? s : p;
        }
        pos = pos === last ? 0 : pos + 1;
      }
    } else {
      for (let x = 0; x < outW; x++) {
        const d = c0 + x + last;
        out[x] = pos === 0 ? hPre[d]! : hSuf[c0 + x]! + hPre[d]!;
        pos = pos === last ? 0 : pos + 1;
      }
    }
    return out;
  }
}

/**
 * Window sums and sums of squares, one output row per `next()` (views reused by the next call):
 * two `WindowReducer`s, or for 3x3 windows one fused pass with the same order (same results).
 */
export class WindowMoments {
  sums: Float64Array;
  squares: Float64Array;
  private readonly reducers?: readonly [WindowReducer, WindowReducer];
  private y = 0;

  constructor(
    private readonly src: Values,
    private readonly g: BlockGeometry,
    w: FocalWindow,
  ) {
    if (w.rows === 3 && w.cols === 3) {
      this.sums = new Float64Array(g.outW);
      this.squares = new Float64Array(g.outW);
    } else {
      this.reducers = [new WindowReducer(src, g, w, ReduceMode.Sum), new WindowReducer(src, g, w, ReduceMode.SumOfSquares)];
      this.sums = this.squares = new Float64Array(0);
    }
  }

  next(): void {
    if (this.reducers) {
      this.sums = this.reducers[0].next();
      this.squares = this.reducers[1].next();
      return;
    }
    const { inW, ox, oy, outW } = this.g;
    const src = this.src;
    const sums = this.sums;
    const squares = this.squares;
    const r0 = (this.y + oy - 1) * inW + ox - 1;
    const r1 = r0 + inW;
    const r2 = r1 + inW;
    this.y++;
    let a = src[r0]!,
      b = src[r1]!,
      c = src[r2]!;
    let s0 = a + b + c;
    let q0 = a * a + b * b + c * c;
    a = src[r0 + 1]!;
    b = src[r1 + 1]!;
    c = src[r2 + 1]!;
    let s1 = a + b + c;
    let q1 = a * a + b * b + c * c;
    for (let x = 0; x < outW; x++) {
      a = src[r0 + x + 2]!;
      b = src[r1 + x + 2]!;
      c = src[r2 + x + 2]!;
      const s2 = a + b + c;
      const q2 = a * a + b * b + c * c;
      sums[x] = s0 + s1 + s2;
      squares[x] = q0 + q1 + q2;
      s0 = s1;
      s1 = s2;
      q0 = q1;
      q1 = q2;
    }
  }
}

/** Whether sums of squares of this type over `area` pixels are exact in float64 (small integers). */
export function exactSquares(t: PixelType, area: number): boolean {
  const info = PIXEL_TYPE_INFO[t];
  return info.integer && info.bits <= 16 && area <= 1024;
}

/**
 * Population variance of the valid pixels of the window centred on input pixel (cx, cy), by two
 * passes (mean first, then squared deviations): the fallback where `n*Q - S^2` from running sums
 * has cancelled too many digits. Returns NaN when no pixel is valid.
 */
export function directVariance(values: Values, mask: Uint8Array, inW: number, w: FocalWindow, cx: number, cy: number): number {
  let n = 0;
  let s = 0;
  for (let r = cy - w.top; r <= cy + w.bottom; r++) {
    const o = r * inW;
    for (let c = cx - w.left; c <= cx + w.right; c++) {
      if (mask[o + c] !== 0) {
        n++;
        s += values[o + c]!;
      }
    }
  }
  if (n === 0) return Number.NaN;
  const m = s / n;
  let q = 0;
  for (let r = cy - w.top; r <= cy + w.bottom; r++) {
    const o = r * inW;
    for (let c = cx - w.left; c <= cx + w.right; c++) {
      if (mask[o + c] !== 0) {
        const d = values[o + c]! - m;
        q += d * d;
      }
    }
  }
  return q / n;
}

/**
 * Relative size of `n*Q - S^2` against `n*Q` under which the variance from window sums
 * (`(n*Q - S^2) / n^2`, n count, S sum, Q sum of squares) is recomputed by `directVariance`: at
 * 1e-9, float64 sums keep about 6 significant digits of the variance. Integer sums that are exact
 * (`exactSquares`) need no fallback.
 */
export const CANCELLATION = 1e-9;

/** How results are written to an output plane of type `t`. */
export interface Store {
  readonly integer: boolean;
  readonly lo: number;
  readonly hi: number;
  /** Written to masked pixels (the output NoData value, else 0). */
  readonly fill: number;
}

export function storeFor(t: PixelType, noData: number | undefined): Store {
  const info = PIXEL_TYPE_INFO[t];
  return { integer: info.integer, lo: info.min, hi: info.max, fill: noData ?? 0 };
}

/**
 * Write `n` results of `row` to `dst` at offset `o`: integer types round half away from zero and
 * clamp to the type's range (spec §1.2); NaN results and pixels with `mask[o + x] === 0` get mask 0
 * and the store's fill value.
 */
export function storeRow(dst: Plane, o: number, row: Float64Array, n: number, mask: Uint8Array, s: Store): void {
  const fill = s.fill;
  if (!s.integer) {
    for (let x = 0; x < n; x++) {
      const v = row[x]!;
      if (mask[o + x] === 0 || v !== v) {
        mask[o + x] = 0;
        dst[o + x] = fill;
      } else dst[o + x] = v;
    }
    return;
  }
  const lo = s.lo;
  const hi = s.hi;
  for (let x = 0; x < n; x++) {
    const v = row[x]!;
    if (mask[o + x] === 0 || v !== v) {
      mask[o + x] = 0;
      dst[o + x] = fill;
      continue;
    }
    const r = v < 0 ? -Math.floor(0.5 - v) : Math.floor(v + 0.5);
    dst[o + x] = r < lo ? lo : r > hi ? hi : r;
  }
}

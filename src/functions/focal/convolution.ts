/**
 * Convolution: a weighted sum over a Rows x Columns window, per band.
 *
 *     out(r, c) = sum_ij  w[i][j] * in(r + i - top, c + j - left)      top = floor(Rows/2), left = floor(Columns/2)
 *
 * Spec: raster-functions.md "Convolution" (VJS `convolutionUtils.js`, `ConvolutionFunction.js`).
 *  - Type 0..21: the spec's predefined kernels (convolution-kernels.ts), Type -1 UserDefined with
 *    `Kernel` (a flat row-major list of Rows x Columns numbers, a string of numbers, or an array of
 *    rows; any size, odd or even: for even sizes the extra row/column is above/left, as the
 *    spec's offset formula says). Type defaults to -1 when only Kernel is given.
 *  - Applied as a correlation (no flipping). A kernel whose sum is neither 0 nor 1 is divided by
 *    its sum (Smoothing5x5 by 60; PointSpread by 1.823, the sum of the spec's table, whose prose says
 *    about 1.003); zero-sum edge detectors are used as is.
 *  - Output: the input's bands; the pixel type is the rule's outputPixelType, else the input's
 *    (natural). The sum is computed in float64 and stored once into that type: integer types round
 *    half away from zero (as the engine's casts; the vendor client's Math.round differs only for
 *    negative halves) and are clamped to their range (spec §1.2 [VJS clamp: the function's own
 *    pixel type]), so a U8 Sobel asked for F32 keeps its negative responses and fractions. A
 *    complex outputPixelType computes into its real component type, then the engine's cast makes
 *    the values real parts. NoData: the input's, or NaN for a float output of an integer input
 *    (a valid response can be 0).
 *  - NoData: a pixel whose own mask is 0 stays NoData; NoData neighbours take the centre pixel's
 *    value (the spec's recommendation [ours]).
 *  - Edges: the rows/columns of the raster that have no full window (top rows above, bottom
 *    rows below, likewise columns) are filled by mirroring the computed interior about the first
 *    and last full-window row/column: for 3x3 row 0 := row 2 and the last row := the third from
 *    last [VJS mirror edges]. This is done at the raster's edges (not the tile's), so tiles read the
 *    few extra rows the mirror needs (`inputRect`). Where the mirrored pixel is NoData, or the
 *    raster is too small to have an interior, the edge pixel is computed from its own window with
 *    missing neighbours taking its own value [ours].
 * Code paths: rank-one (separable) kernels larger than 3x3 as two 1-D passes over a ring of
 * horizontal results (within ~1e-15 relative of the direct sum); other 3x3 and 5x5 kernels
 * unrolled with hoisted weights and a sliding register window of columns (zero weights included,
 * which differs from skipping them only for non-finite values); any other kernel as a per-pixel
 * sum over its non-zero taps. All sum their taps in row-major order. Pixels whose window holds
 * NoData are recomputed one by one.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type Plane } from '../../core/pixel-type.js';
import { rect, type Rect } from '../../core/rect.js';
import { argPaths } from '../../graph/args.js';
import { computedNoData, realTypeOf } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema, type PlanWarning } from '../../graph/types.js';
import { KERNEL_TYPE_NAMES, normalise, parseKernel, PREDEFINED_KERNELS, separate, USER_DEFINED } from './convolution-kernels.js';
import { FocalBand } from '../../wasm/focal.js';
import {
  bandValues,
  type BlockGeometry,
  type FocalWindow,
  focalWindow,
  copyCentreMask,
  geometryOf,
  maskedInside,
  maskValues,
  ReduceMode,
  type Store,
  storeFor,
  storeRow,
  type Values,
  windowHalo,
  WindowReducer,
} from './window.js';

/** Largest Columns or Rows accepted. */
const MAX_KERNEL_SIZE = 255;

const args = {
  Type: {
    kind: 'enum',
    values: [USER_DEFINED, ...PREDEFINED_KERNELS.map((_, i) => i)],
    names: KERNEL_TYPE_NAMES,
    aliases: ['ConvolutionType'],
    doc: 'Kernel: -1 UserDefined (uses Kernel), 0..21 predefined (0 LineDetectionHorizontal ... 21 PointSpread); names accepted. Defaults to -1 when Kernel is given.',
  },
  Columns: { kind: 'int', min: 1, max: MAX_KERNEL_SIZE, doc: 'UserDefined: kernel width in pixels.' },
  Rows: { kind: 'int', min: 1, max: MAX_KERNEL_SIZE, doc: 'UserDefined: kernel height in pixels.' },
  Kernel: {
    kind: 'json',
    optional: true,
    doc: 'UserDefined: Rows x Columns weights, row-major, as an array, a string of numbers, or an array of rows.',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

export interface ConvolutionParams {
  readonly input: number;
  readonly win: FocalWindow;
  /** Normalised weights, row-major. */
  readonly weights: Float64Array;
  /** Rank-one factors, for kernels larger than 3x3 that have them. */
  readonly separable?: { readonly col: Float64Array; readonly row: Float64Array };
  readonly width: number;
  readonly height: number;
  readonly store: Store;
}

const at = argPaths(args);

/** The raster row/column an edge pixel mirrors (itself when it has a full window). */
const mirror = (r: number, size: number, before: number, after: number): number =>
  r < before ? 2 * before - r : r > size - 1 - after ? 2 * (size - 1 - after) - r : r;

export const convolution = defineFunction<typeof args, ConvolutionParams>({
  name: 'Convolution',
  summary: 'Weighted sum over a moving window: 22 predefined kernels (edges, gradients, smoothing, sharpening) or a user kernel.',
  variableName: 'Raster',
  family: 'focal',
  verification: 'reference: SciPy 1.10 ndimage.correlate (golden, 1e-5 off the edge band); hand: kernels, normalisation, edges, NoData',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const outType = to === undefined ? src.pixelType : realTypeOf(to);
    const noData = computedNoData(src.noData, src.pixelType, outType);
    if (isComplex(src.pixelType)) {
      throw unsupportedInput(at('Raster'), `Convolution needs a real-valued raster, got ${src.pixelType}; use Complex first`);
    }
    const warnings: PlanWarning[] = [];
    const type = a.Type ?? (a.Kernel !== undefined ? USER_DEFINED : undefined);
    if (type === undefined) throw invalidArgument(at('Type'), 'Type is required (or a Kernel for a user-defined kernel)');
    let cols: number;
    let rows: number;
    let raw: readonly number[];
    if (type === USER_DEFINED) {
      const k = parseKernel(a.Kernel, a.Columns, a.Rows);
      if ('error' in k) throw invalidArgument(at('Kernel'), k.error);
      if (k.cols > MAX_KERNEL_SIZE || k.rows > MAX_KERNEL_SIZE) {
        throw invalidArgument(at('Kernel'), `kernel ${k.cols}x${k.rows} is larger than ${MAX_KERNEL_SIZE}x${MAX_KERNEL_SIZE}`);
      }
      ({ cols, rows } = k);
      raw = k.weights;
    } else {
      const k = PREDEFINED_KERNELS[type]!;
      if (a.Kernel !== undefined || a.Columns !== undefined || a.Rows !== undefined) {
        const given = (['Kernel', 'Columns', 'Rows'] as const).filter((n) => a[n] !== undefined);
        warnings.push({
          arg: given[0],
          message: `Type ${type} (${k.name}) is predefined: ${given.join(', ')} ${given.length > 1 ? 'are' : 'is'} ignored`,
        });
      }
      ({ cols, rows } = k);
      raw = k.weights;
    }
    const weights = normalise(raw);
    const win = focalWindow(cols, rows);
    const sep = cols * rows > 9 ? separate(weights, cols, rows) : undefined;
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: src.bandCount,
      pixelType: outType,
      ...(noData !== undefined ? { noData } : {}),
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      ...(src.bandNames ? { bandNames: src.bandNames } : {}),
    };
    const halo = windowHalo(win);
    const { width: W, height: H } = src;
    const inputRect = (out: Rect): Rect => {
      let x0 = out.x - halo;
      let y0 = out.y - halo;
      let x1 = out.x + out.width + halo;
      let y1 = out.y + out.height + halo;
      // Mirrored edges read the first/last full-window rows and columns.
      if (out.y < win.top) y1 = Math.max(y1, 2 * win.top + win.bottom + 1);
      if (out.y + out.height > H - win.bottom) y0 = Math.min(y0, H - 1 - 2 * win.bottom - win.top);
      if (out.x < win.left) x1 = Math.max(x1, 2 * win.left + win.right + 1);
      if (out.x + out.width > W - win.right) x0 = Math.min(x0, W - 1 - 2 * win.right - win.left);
      return rect(x0, y0, x1 - x0, y1 - y0);
    };
    return {
      info,
      halo,
      inputRect,
      params: {
        input: a.Raster,
        win,
        weights,
        ...(sep ? { separable: sep } : {}),
        width: W,
        height: H,
        store: storeFor(outType, noData),
      },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const g = geometryOf(src, out);
    const { inW, outW, outH, ox, oy } = g;
    const win = p.win;
    const mask = src.mask;
    const outMask = out.mask;
    copyCentreMask(g, mask, outMask);
    // Output rows/columns with a full window inside the raster: [yLo, yHi) x [xLo, xHi).
    const X0 = out.rect.x;
    const Y0 = out.rect.y;
    const yLo = Math.max(0, win.top - Y0);
    const yHi = Math.min(outH, p.height - win.bottom - Y0);
    const xLo = Math.max(0, win.left - X0);
    const xHi = Math.min(outW, p.width - win.right - X0);
    const n = xHi - xLo;
    const taps = tapsOf(p.weights, win, inW);
    // Outside-raster pixels only reach edge pixels' windows, which take the mirror path anyway.
    const hasInvalid = maskedInside(mask, g, p.width, p.height);
    const rowBuf = new Float64Array(outW);
    const ctx: SlowContext = { mask, inW, win, weights: p.weights };
    for (let b = 0; b < out.bands.length; b++) {
      const v = bandValues(src, b);
      // The WebAssembly path (src/wasm/focal.ts) when it takes this band; else the loops below.
      if (n > 0 && convolveWasm(p, v, out.bands[b]!, outMask, g, ctx, hasInvalid, taps, out.rect.x, out.rect.y)) continue;
      const dirty = hasInvalid ? new WindowReducer(maskValues(mask, true), g, win, ReduceMode.Sum) : undefined;
      const sep = p.separable && n > 0 ? new SeparableRows(v, p.separable, inW, ox + xLo - win.left, n) : undefined;
      for (let y = 0; y < outH; y++) {
        const bad = dirty?.next();
        const R = Y0 + y;
        const o = y * outW;
        const interior = y >= yLo && y < yHi && n > 0;
        // No NoData in the block and a float band: the 3x3 interior goes straight to the band.
        const fused = interior && !sep && !bad && !p.store.integer && win.cols === 3 && win.rows === 3;
        if (interior) {
          const top = (oy + y - win.top) * inW; // input index of the window's first row, column 0
          if (sep) {
            sep.row(oy + y - win.top, rowBuf, xLo);
          } else if (fused) {
            conv3Store(v, out.bands[b]!, outMask, p.store.fill, o + xLo, top + ox + xLo - 1, inW, n, p.weights);
          } else if (win.cols === 3 && win.rows === 3) {
            conv3(v, rowBuf, xLo, top + ox + xLo - 1, inW, n, p.weights);
          } else if (win.cols === 5 && win.rows === 5) {
            conv5(v, rowBuf, xLo, top + ox + xLo - 2, inW, n, p.weights);
          } else {
            convTaps(v, rowBuf, xLo, top + ox + xLo - win.left, n, taps.off, taps.w);
          }
          if (bad) {
            for (let x = xLo; x < xHi; x++) {
              if (bad[x]! > 0 && outMask[o + x] !== 0) rowBuf[x] = slowAt(v, ctx, oy + y, ox + x);
            }
          }
        }
        for (let x = 0; x < outW; x++) {
          if (interior && x === xLo) x = xHi;
          if (x >= outW || outMask[o + x] === 0) continue;
          const C = X0 + x;
          const Rm = mirror(R, p.height, win.top, win.bottom);
          const Cm = mirror(C, p.width, win.left, win.right);
          const iy = Rm - g.inY;
          const ix = Cm - g.inX;
          const ok =
            Rm >= win.top &&
            Rm <= p.height - 1 - win.bottom &&
            Cm >= win.left &&
            Cm <= p.width - 1 - win.right &&
            mask[iy * inW + ix] !== 0;
          rowBuf[x] = ok ? slowAt(v, ctx, iy, ix) : slowAt(v, ctx, oy + y, ox + x);
        }
        if (fused) {
          storeRow(out.bands[b]!, o, rowBuf, xLo, outMask, p.store);
          storeRow(out.bands[b]!, o + xHi, rowBuf.subarray(xHi), outW - xHi, outMask, p.store);
        } else storeRow(out.bands[b]!, o, rowBuf, outW, outMask, p.store);
      }
    }
  },
});

/**
 * One band in WebAssembly (f32 lanes: wasm/focal.ts states the bound against the loops above):
 * F32 values into an F32 band. The interior span of each row is computed by the wasm row function
 * (3x3, 5x5, separable, else the non-zero taps); everything else as the TypeScript path does it
 * (mirrored edges, pixels whose window holds NoData, masked centres, NaN results), written into
 * the bound output. @returns false when the band is not supported (nothing written).
 */
function convolveWasm(
  p: ConvolutionParams,
  v: Values,
  dst: Plane,
  outMask: Uint8Array,
  g: BlockGeometry,
  ctx: SlowContext,
  hasInvalid: boolean,
  taps: { off: Int32Array; w: Float64Array },
  X0: number,
  Y0: number,
): boolean {
  if (!FocalBand.available() || !(v instanceof Float32Array) || !(dst instanceof Float32Array)) return false;
  const { inW, outW, outH, ox, oy } = g;
  const win = p.win;
  const dense3 = win.cols === 3 && win.rows === 3;
  const dense5 = win.cols === 5 && win.rows === 5;
  const sep = p.separable;
  // (A kernel of zeros on the taps path: the TypeScript path fills the zeros.)
  if (!dense3 && !dense5 && !sep && taps.w.length === 0) return false;
  const yLo = Math.max(0, win.top - Y0);
  const yHi = Math.min(outH, p.height - win.bottom - Y0);
  const xLo = Math.max(0, win.left - X0);
  const xHi = Math.min(outW, p.width - win.right - X0);
  const n = xHi - xLo;
  // Decision: a rank-one 3x3 kernel (Smoothing3x3, Sobel, the gradients) runs as one fused
  // column-then-row pass in wasm (10 operations per four pixels instead of 17); within the same bound.
  const sep3 = dense3 ? separate(p.weights, 3, 3) : undefined;
  const constants: number[][] = sep3
    ? [Array.from(sep3.col), Array.from(sep3.row)]
    : dense3 || dense5
      ? [Array.from(p.weights)]
      : sep
        ? [Array.from(sep.col), Array.from(sep.row)]
        : [];
  if (!dense3 && !dense5 && !sep)
    constants.push(
      Array.from(taps.off, (o) => 4 * o),
      Array.from(taps.w),
    );
  const band = FocalBand.bind(v, dst, constants, sep ? 4 * (n + win.cols - 1) : 0);
  if (band === undefined) return false;
  let done = false;
  try {
    const { fx, view } = band;
    const [c0 = 0, c1 = 0] = band.constants;
    const stride = 4 * inW;
    const fill = p.store.fill;
    const mask = ctx.mask;
    const dirty = hasInvalid ? new WindowReducer(maskValues(mask, true), g, win, ReduceMode.Sum) : undefined;
    const rowBuf = new Float64Array(outW);
    for (let y = 0; y < outH; y++) {
      const bad = dirty?.next();
      const R = Y0 + y;
      const o = y * outW;
      const interior = y >= yLo && y < yHi && n > 0;
      if (interior) {
        const i0 = (oy + y - win.top) * inW + ox + xLo - win.left;
        const s = band.at(i0);
        const d = band.out(o + xLo);
        const nans = sep3
          ? fx.focalSep3F32(s, d, n, stride, c0, c1)
          : dense3
            ? fx.focalConv3F32(s, d, n, stride, c0)
            : dense5
              ? fx.focalConv5F32(s, d, n, stride, c0)
              : sep
                ? fx.focalSepF32(s, d, n, stride, band.scratch, c0, win.rows, c1, win.cols)
                : fx.focalConvTapsF32(s, d, n, c0, c1, taps.w.length);
        if (bad) {
          // storeRow's rule, with the pixels whose window holds NoData recomputed one by one.
          for (let x = xLo; x < xHi; x++) {
            if (outMask[o + x] === 0) view[o + x] = fill;
            else {
              const r = bad[x]! > 0 ? slowAt(v, ctx, oy + y, ox + x) : view[o + x]!;
              if (r !== r) {
                outMask[o + x] = 0;
                view[o + x] = fill;
              } else view[o + x] = r;
            }
          }
        } else if (nans > 0) {
          for (let x = xLo; x < xHi; x++) {
            if (view[o + x] !== view[o + x]) {
              outMask[o + x] = 0;
              view[o + x] = fill;
            }
          }
        }
      }
      // Edge pixels: as the TypeScript path.
      for (let x = 0; x < outW; x++) {
        if (interior && x === xLo) x = xHi;
        if (x >= outW || outMask[o + x] === 0) continue;
        const C = X0 + x;
        const Rm = mirror(R, p.height, win.top, win.bottom);
        const Cm = mirror(C, p.width, win.left, win.right);
        const iy = Rm - g.inY;
        const ix = Cm - g.inX;
        const ok =
          Rm >= win.top && Rm <= p.height - 1 - win.bottom && Cm >= win.left && Cm <= p.width - 1 - win.right && mask[iy * inW + ix] !== 0;
        rowBuf[x] = ok ? slowAt(v, ctx, iy, ix) : slowAt(v, ctx, oy + y, ox + x);
      }
      if (interior) {
        storeRow(view, o, rowBuf, xLo, outMask, p.store);
        storeRow(view, o + xHi, rowBuf.subarray(xHi), outW - xHi, outMask, p.store);
      } else storeRow(view, o, rowBuf, outW, outMask, p.store);
    }
    band.finish();
    done = true;
    return true;
  } finally {
    if (!done) band.release();
  }
}

/** Non-zero taps: input-index offsets from the window's top-left pixel, and their weights. */
function tapsOf(weights: Float64Array, win: FocalWindow, inW: number): { off: Int32Array; w: Float64Array } {
  const off: number[] = [];
  const w: number[] = [];
  for (let r = 0; r < win.rows; r++) {
    for (let c = 0; c < win.cols; c++) {
      const k = weights[r * win.cols + c]!;
      if (k !== 0) {
        off.push(r * inW + c);
        w.push(k);
      }
    }
  }
  return { off: Int32Array.from(off), w: Float64Array.from(w) };
}

/**
 * General correlation of one row (`i0`: input index of the first pixel's window top-left): each
 * pixel sums its non-zero taps in row-major order, in a local.
 */
function convTaps(v: Values, dst: Float64Array, d0: number, i0: number, n: number, off: Int32Array, w: Float64Array): void {
  const taps = w.length;
  if (taps === 0) {
    dst.fill(0, d0, d0 + n);
    return;
  }
  const w0 = w[0]!;
  const off0 = off[0]!;
  for (let x = 0; x < n; x++) {
    const i = i0 + x;
    let acc = w0 * v[i + off0]!;
    for (let k = 1; k < taps; k++) acc += w[k]! * v[i + off[k]!]!;
    dst[d0 + x] = acc;
  }
}

/**
 * 3x3 correlation of one row: weights hoisted into locals, three input rows read once per column
 * (a sliding register window of the last three columns). `i0` is the input index of the window's
 * top-left pixel for the first output pixel; results go to `dst[d0 ...]`.
 */
function conv3(v: Values, dst: Float64Array, d0: number, i0: number, inW: number, n: number, k: Float64Array): void {
  const k0 = k[0]!,
    k1 = k[1]!,
    k2 = k[2]!,
    k3 = k[3]!,
    k4 = k[4]!,
    k5 = k[5]!,
    k6 = k[6]!,
    k7 = k[7]!,
    k8 = k[8]!;
  const t = i0;
  const m = i0 + inW;
  const b = m + inW;
  let a0 = v[t]!,
    a1 = v[t + 1]!;
  let d0v = v[m]!,
    d1 = v[m + 1]!;
  let g0 = v[b]!,
    g1 = v[b + 1]!;
  for (let x = 0; x < n; x++) {
    const a2 = v[t + x + 2]!;
    const d2 = v[m + x + 2]!;
    const g2 = v[b + x + 2]!;
    dst[d0 + x] = k0 * a0 + k1 * a1 + k2 * a2 + k3 * d0v + k4 * d1 + k5 * d2 + k6 * g0 + k7 * g1 + k8 * g2;
    a0 = a1;
    a1 = a2;
    d0v = d1;
    d1 = d2;
    g0 = g1;
    g1 = g2;
  }
}

/**
 * `conv3` stored straight into a float band at `d0` with storeRow's rule (a NaN result: mask 0
 * and `fill`; the caller's block has no NoData, so no centre is masked); the same sum in the same
 * order, so the same bits.
 */
function conv3Store(
  v: Values,
  dst: Plane,
  mask: Uint8Array,
  fill: number,
  d0: number,
  i0: number,
  inW: number,
  n: number,
  k: Float64Array,
): void {
  const k0 = k[0]!,
    k1 = k[1]!,
    k2 = k[2]!,
    k3 = k[3]!,
    k4 = k[4]!,
    k5 = k[5]!,
    k6 = k[6]!,
    k7 = k[7]!,
    k8 = k[8]!;
  const t = i0 | 0;
  const m = (t + inW) | 0;
  const b = (m + inW) | 0;
  const d = d0 | 0;
  let a0 = v[t]!,
    a1 = v[t + 1]!;
  let d0v = v[m]!,
    d1 = v[m + 1]!;
  let g0 = v[b]!,
    g1 = v[b + 1]!;
  for (let x = 0; x < n; x++) {
    const a2 = v[t + x + 2]!;
    const d2 = v[m + x + 2]!;
    const g2 = v[b + x + 2]!;
    const r = k0 * a0 + k1 * a1 + k2 * a2 + k3 * d0v + k4 * d1 + k5 * d2 + k6 * g0 + k7 * g1 + k8 * g2;
    // Every centre is valid here (no NoData in the block): only a NaN result is NoData.
    if (r !== r) {
      mask[d + x] = 0;
      dst[d + x] = fill;
    } else dst[d + x] = r;
    a0 = a1;
    a1 = a2;
    d0v = d1;
    d1 = d2;
    g0 = g1;
    g1 = g2;
  }
}

/**
 * 5x5 correlation of one row: weights in locals and a sliding register window of the last five
 * columns of the five rows (`a`..`e`, one new load per row and pixel); the same row-major sum as
 * `convTaps`, zero weights included as in `conv3` (which differs only for non-finite values).
 */
function conv5(v: Values, dst: Float64Array, o: number, i0: number, inW: number, n: number, k: Float64Array): void {
  const k0 = k[0]!,
    k1 = k[1]!,
    k2 = k[2]!,
    k3 = k[3]!,
    k4 = k[4]!;
  const k5 = k[5]!,
    k6 = k[6]!,
    k7 = k[7]!,
    k8 = k[8]!,
    k9 = k[9]!;
  const k10 = k[10]!,
    k11 = k[11]!,
    k12 = k[12]!,
    k13 = k[13]!,
    k14 = k[14]!;
  const k15 = k[15]!,
    k16 = k[16]!,
    k17 = k[17]!,
    k18 = k[18]!,
    k19 = k[19]!;
  const k20 = k[20]!,
    k21 = k[21]!,
    k22 = k[22]!,
    k23 = k[23]!,
    k24 = k[24]!;
  const a = i0;
  const b = i0 + inW;
  const c = i0 + 2 * inW;
  const d = i0 + 3 * inW;
  const e = i0 + 4 * inW;
  let a0 = v[a]!,
    a1 = v[a + 1]!,
    a2 = v[a + 2]!,
    a3 = v[a + 3]!;
  let b0 = v[b]!,
    b1 = v[b + 1]!,
    b2 = v[b + 2]!,
    b3 = v[b + 3]!;
  let c0 = v[c]!,
    c1 = v[c + 1]!,
    c2 = v[c + 2]!,
    c3 = v[c + 3]!;
  let d0 = v[d]!,
    d1 = v[d + 1]!,
    d2 = v[d + 2]!,
    d3 = v[d + 3]!;
  let e0 = v[e]!,
    e1 = v[e + 1]!,
    e2 = v[e + 2]!,
    e3 = v[e + 3]!;
  for (let x = 0; x < n; x++) {
    const a4 = v[a + x + 4]!;
    const b4 = v[b + x + 4]!;
    const c4 = v[c + x + 4]!;
    const d4 = v[d + x + 4]!;
    const e4 = v[e + x + 4]!;
    dst[o + x] =
      k0 * a0 +
      k1 * a1 +
      k2 * a2 +
      k3 * a3 +
      k4 * a4 +
      k5 * b0 +
      k6 * b1 +
      k7 * b2 +
      k8 * b3 +
      k9 * b4 +
      k10 * c0 +
      k11 * c1 +
      k12 * c2 +
      k13 * c3 +
      k14 * c4 +
      k15 * d0 +
      k16 * d1 +
      k17 * d2 +
      k18 * d3 +
      k19 * d4 +
      k20 * e0 +
      k21 * e1 +
      k22 * e2 +
      k23 * e3 +
      k24 * e4;
    a0 = a1;
    a1 = a2;
    a2 = a3;
    a3 = a4;
    b0 = b1;
    b1 = b2;
    b2 = b3;
    b3 = b4;
    c0 = c1;
    c1 = c2;
    c2 = c3;
    c3 = c4;
    d0 = d1;
    d1 = d2;
    d2 = d3;
    d3 = d4;
    e0 = e1;
    e1 = e2;
    e2 = e3;
    e3 = e4;
  }
}

/**
 * A separable kernel as two 1-D passes: horizontal results of the last `rows` input rows in a
 * ring (each row computed once), combined down the column for each output row; the same order as
 * before (row taps left to right, then column taps top to bottom).
 */
class SeparableRows {
  private readonly ring: Float64Array;
  private readonly slot: Int32Array;
  /** Last input row whose horizontal results are in the ring. */
  private last = -1;

  constructor(
    private readonly v: Values,
    private readonly sep: { readonly col: Float64Array; readonly row: Float64Array },
    private readonly inW: number,
    /** Input column of the first window column of the first output column; output count. */
    private readonly x0: number,
    private readonly n: number,
  ) {
    this.ring = new Float64Array(sep.col.length * n);
    this.slot = new Int32Array(sep.col.length);
  }

  /** Results for the output row whose window starts at input row `first`, to dst[d0 ...]. */
  row(first: number, dst: Float64Array, d0: number): void {
    const { v, ring, slot, n, inW } = this;
    const h = this.sep.row;
    const col = this.sep.col;
    const kh = col.length;
    const kw = h.length;
    for (let i = Math.max(first, this.last + 1); i < first + kh; i++) {
      const s = i * inW + this.x0;
      const d = (i % kh) * n;
      for (let x = 0; x < n; x++) {
        let acc = h[0]! * v[s + x]!;
        for (let c = 1; c < kw; c++) acc += h[c]! * v[s + x + c]!;
        ring[d + x] = acc;
      }
    }
    this.last = first + kh - 1;
    for (let r = 0; r < kh; r++) slot[r] = ((first + r) % kh) * n;
    const c0 = col[0]!;
    const s0 = slot[0]!;
    for (let x = 0; x < n; x++) {
      let acc = c0 * ring[s0 + x]!;
      for (let r = 1; r < kh; r++) acc += col[r]! * ring[slot[r]! + x]!;
      dst[d0 + x] = acc;
    }
  }
}

interface SlowContext {
  readonly mask: Uint8Array;
  readonly inW: number;
  readonly win: FocalWindow;
  readonly weights: Float64Array;
}

/** One pixel (input row iy, column ix): NoData neighbours take the centre's value; row-major order. */
function slowAt(v: Values, c: SlowContext, iy: number, ix: number): number {
  const { mask, inW, win, weights } = c;
  const centre = v[iy * inW + ix]!;
  let acc = 0;
  let first = true;
  for (let r = 0; r < win.rows; r++) {
    const o = (iy - win.top + r) * inW + ix - win.left;
    for (let k = 0; k < win.cols; k++) {
      const w = weights[r * win.cols + k]!;
      if (w === 0) continue;
      const t = w * (mask[o + k] !== 0 ? v[o + k]! : centre);
      acc = first ? t : acc + t;
      first = false;
    }
  }
  return acc;
}

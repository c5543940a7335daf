/**
 * Terrain row kernels in WebAssembly with explicit SIMD128 (AssemblyScript). Each function computes
 * one output row's fast span (src/functions/terrain/gradient.ts, `WindowRows`: every window valid
 * and inside the raster), two cells per step, with the same arithmetic in the same order as the
 * TypeScript kernels it stands for, so the results are bit for bit those of the TypeScript path:
 *
 *   - the DEM is F32; each value is promoted to f64 (exact) and everything is computed in f64x2
 *     lanes, as the TypeScript kernels compute in JS numbers (float64). WebAssembly float
 *     arithmetic is IEEE 754 round-to-nearest with no fused multiply-add, like V8's;
 *   - F32 outputs are demoted (round to nearest even, what a Float32Array store does); U8 outputs
 *     are truncated (i32 trunc_sat, what a Uint8Array store does to values in [0, 256), and NaN
 *     becomes 0 in both).
 *
 * Decision: f64x2 rather than f32x4 lanes. The Horn sums of F32 elevations (a + 2d + g ~ 4x the
 * elevation) lose the gradient to cancellation in f32 on gentle slopes (a 0.08 difference of two
 * sums near 4000 keeps 3 significant digits), which is thousands of ULPs from the reference, not a
 * few; f64 keeps the reference's bits.
 *
 * Pointers are byte addresses in this module's memory, which the TypeScript side manages
 * (src/wasm/arena.ts: nothing here allocates). `top`, `mid`, `bot` address the window column west
 * of the first output cell (x - 1) in the three DEM rows; `n` cells are written from `dst`.
 * Window naming as gradient.ts: gx = (east sum - west sum) kx, gy = ((g - a) + 2 (h - b) + (i - c)) ky.
 */

// ---- Horn window: the sliding column sums and differences, two columns per vector.

const TWO: v128 = f64x2(2.0, 2.0);
const ZERO: v128 = f64x2(0.0, 0.0);
const ONE: v128 = f64x2(1.0, 1.0);

/** Two F32 values at p as f64x2. */
// @ts-ignore: decorator
@inline function ld2(p: usize): v128 {
  return f64x2.promote_low_f32x4(v128.load64_zero(p));
}

/** hornSum(t, m, b) = t + 2 m + b, evaluated as (t + 2 m) + b like gradient.ts. */
// @ts-ignore: decorator
@inline function colSum(t: v128, m: v128, b: v128): v128 {
  return f64x2.add(f64x2.add(t, f64x2.mul(TWO, m)), b);
}

/** hornGy: ((dW + 2 dM) + dE) * ky. */
// @ts-ignore: decorator
@inline function gyOf(dW: v128, dM: v128, dE: v128, ky: v128): v128 {
  return f64x2.mul(f64x2.add(f64x2.add(dW, f64x2.mul(TWO, dM)), dE), ky);
}

/** n > 0 ? n : 0 per lane (NaN and -0 give +0). */
// @ts-ignore: decorator
@inline function positive(n: v128): v128 {
  return v128.bitselect(n, ZERO, f64x2.gt(n, ZERO));
}

// Scalar versions for the odd last cell of a span (the same expressions).
// @ts-ignore: decorator
@inline function colSum1(p: usize, q: usize, r: usize): f64 {
  return <f64>load<f32>(p) + 2.0 * <f64>load<f32>(q) + <f64>load<f32>(r);
}
// @ts-ignore: decorator
@inline function colDiff1(p: usize, r: usize): f64 {
  return <f64>load<f32>(r) - <f64>load<f32>(p);
}

// ---- Output stores.

/** Output kinds: the TypeScript side passes the destination plane's type. */
const OUT_F32: i32 = 0;
const OUT_U8: i32 = 1;

// @ts-ignore: decorator
@inline function store2(dst: usize, i: i32, kind: i32, r: v128): void {
  if (kind == OUT_F32) {
    v128.store64_lane(dst + (<usize>i << 2), f32x4.demote_f64x2_zero(r), 0);
  } else {
    const t = i32x4.trunc_sat_f64x2_s_zero(r);
    store<u8>(dst + <usize>i, <u8>i32x4.extract_lane(t, 0));
    store<u8>(dst + <usize>i + 1, <u8>i32x4.extract_lane(t, 1));
  }
}

// @ts-ignore: decorator
@inline function store1(dst: usize, i: i32, kind: i32, r: f64): void {
  if (kind == OUT_F32) store<f32>(dst + (<usize>i << 2), <f32>r);
  else store<u8>(dst + <usize>i, <u8><i32>r);
}

// ---- Arctangent in degrees (gradient.ts atanUnitDegrees / atanDegrees; same coefficients, same order).

const A0: f64 = 57.29577839927536;
const A1: f64 = -19.098505533568567;
const A2: f64 = 11.457114347385406;
const A3: f64 = -8.163057288859694;
const A4: f64 = 6.232640545666483;
const A5: f64 = -4.706138647073333;
const A6: f64 = 3.152877661086918;
const A7: f64 = -1.6324009175759946;
const A8: f64 = 0.5481680432046695;
const A9: f64 = -0.08647666075964544;

// @ts-ignore: decorator
@inline function sp(a: f64): v128 {
  return f64x2.splat(a);
}

/** atan(u) in degrees for u in [-1, 1]: u * P(u^2) by Estrin's scheme, as atanUnitDegrees. */
// @ts-ignore: decorator
@inline function atanUnit2(u: v128): v128 {
  const x = f64x2.mul(u, u);
  const x2 = f64x2.mul(x, x);
  const x4 = f64x2.mul(x2, x2);
  const p03 = f64x2.add(f64x2.add(sp(A0), f64x2.mul(sp(A1), x)), f64x2.mul(f64x2.add(sp(A2), f64x2.mul(sp(A3), x)), x2));
  const p47 = f64x2.add(f64x2.add(sp(A4), f64x2.mul(sp(A5), x)), f64x2.mul(f64x2.add(sp(A6), f64x2.mul(sp(A7), x)), x2));
  const p8 = f64x2.mul(f64x2.add(sp(A8), f64x2.mul(sp(A9), x)), f64x2.mul(x4, x4));
  return f64x2.mul(u, f64x2.add(f64x2.add(p03, f64x2.mul(p47, x4)), p8));
}

// @ts-ignore: decorator
@inline function atanUnit1(u: f64): f64 {
  const x = u * u;
  const x2 = x * x;
  const x4 = x2 * x2;
  const p03 = A0 + A1 * x + (A2 + A3 * x) * x2;
  const p47 = A4 + A5 * x + (A6 + A7 * x) * x2;
  return u * (p03 + p47 * x4 + (A8 + A9 * x) * (x4 * x4));
}

/** atanDegrees(r), r >= 0: above 1, 90 - atan(1 / r). */
// @ts-ignore: decorator
@inline function atanDeg2(r: v128): v128 {
  const inv = f64x2.gt(r, ONE);
  const p = atanUnit2(v128.bitselect(f64x2.div(ONE, r), r, inv));
  return v128.bitselect(f64x2.sub(sp(90.0), p), p, inv);
}

// @ts-ignore: decorator
@inline function atanDeg1(r: f64): f64 {
  const inv = r > 1;
  const p = atanUnit1(inv ? 1 / r : r);
  return inv ? 90 - p : p;
}

// ---- The cell formulas (hillshade.ts, slope.ts, aspect.ts), vector and scalar.

const F_HILLSHADE: i32 = 0;
const F_SLOPE_DEGREE: i32 = 1;
const F_SLOPE_PERCENT: i32 = 2;
const F_ASPECT: i32 = 3;
const F_MULTI: i32 = 4;

/** Sources of the multidirectional formula: [k0, kx, ky] x count at `srcs`, constant c. */
// @ts-ignore: decorator
@inline function multi2(u: v128, v: v128, srcs: usize, count: i32, c: f64): v128 {
  let sum = f64x2.splat(c);
  for (let k = 0; k < count; k++) {
    const s = srcs + (<usize>k) * 24;
    const n = f64x2.add(f64x2.add(v128.load64_splat(s), f64x2.mul(v128.load64_splat(s, 8), u)), f64x2.mul(v128.load64_splat(s, 16), v));
    sum = f64x2.add(sum, positive(n));
  }
  return f64x2.div(sum, f64x2.sqrt(f64x2.add(f64x2.add(ONE, f64x2.mul(u, u)), f64x2.mul(v, v))));
}

// @ts-ignore: decorator
@inline function multi1(u: f64, v: f64, srcs: usize, count: i32, c: f64): f64 {
  let sum = c;
  for (let k = 0; k < count; k++) {
    const s = srcs + (<usize>k) * 24;
    const n = load<f64>(s) + load<f64>(s, 8) * u + load<f64>(s, 16) * v;
    if (n > 0) sum += n;
  }
  return sum / Math.sqrt(1 + u * u + v * v);
}

const NORTH_F32: f64 = 359.99998474121094;

// @ts-ignore: decorator
@inline function aspect2(u: v128, v: v128): v128 {
  const h = f64x2.sqrt(f64x2.add(f64x2.mul(u, u), f64x2.mul(v, v)));
  // 2 * +(u > 0) - 1: +1 or -1
  const s = v128.bitselect(ONE, sp(-1.0), f64x2.gt(u, ZERO));
  const t = f64x2.add(sp(90.0), f64x2.mul(TWO, atanUnit2(f64x2.div(v, f64x2.add(h, f64x2.abs(u))))));
  const a = f64x2.add(sp(180.0), f64x2.mul(s, t));
  // aspectPlain: a >= 0 && a < NORTH_F32 && u !== 0
  const plain = v128.and(v128.and(f64x2.ge(a, ZERO), f64x2.lt(a, sp(NORTH_F32))), f64x2.ne(u, ZERO));
  // aspectEdge: u !== 0 || v > 0 ? 0 : v < 0 ? 180 : -1
  const edge = v128.bitselect(
    ZERO,
    v128.bitselect(sp(180.0), sp(-1.0), f64x2.lt(v, ZERO)),
    v128.or(f64x2.ne(u, ZERO), f64x2.gt(v, ZERO)),
  );
  return v128.bitselect(a, edge, plain);
}

// @ts-ignore: decorator
@inline function aspect1(u: f64, v: f64): f64 {
  const h = Math.sqrt(u * u + v * v);
  const a = 180 + (u > 0 ? 1.0 : -1.0) * (90 + 2 * atanUnit1(v / (h + Math.abs(u))));
  if (a >= 0 && a < NORTH_F32 && u != 0) return a;
  return u != 0 || v > 0 ? 0 : v < 0 ? 180 : -1;
}

// @ts-ignore: decorator
@inline function cell2(f: i32, u: v128, v: v128, k0: f64, k1: f64, k2: f64, srcs: usize, count: i32): v128 {
  if (f == F_HILLSHADE) {
    const num = f64x2.add(f64x2.add(sp(k0), f64x2.mul(sp(k1), u)), f64x2.mul(sp(k2), v));
    return f64x2.div(positive(num), f64x2.sqrt(f64x2.add(f64x2.add(ONE, f64x2.mul(u, u)), f64x2.mul(v, v))));
  }
  if (f == F_MULTI) return multi2(u, v, srcs, count, k0);
  if (f == F_ASPECT) return aspect2(u, v);
  const r = f64x2.sqrt(f64x2.add(f64x2.mul(u, u), f64x2.mul(v, v)));
  if (f == F_SLOPE_PERCENT) return f64x2.mul(sp(100.0), r);
  return atanDeg2(r);
}

// @ts-ignore: decorator
@inline function cell1(f: i32, u: f64, v: f64, k0: f64, k1: f64, k2: f64, srcs: usize, count: i32): f64 {
  if (f == F_HILLSHADE) {
    const num = k0 + k1 * u + k2 * v;
    return (num > 0 ? num : 0) / Math.sqrt(1 + u * u + v * v);
  }
  if (f == F_MULTI) return multi1(u, v, srcs, count, k0);
  if (f == F_ASPECT) return aspect1(u, v);
  if (f == F_SLOPE_PERCENT) return 100 * Math.sqrt(u * u + v * v);
  return atanDeg1(Math.sqrt(u * u + v * v));
}

/**
 * The sliding loop, two cells per step: cells (i, i + 1) take window columns [i, i + 3] relative
 * to `top` (column x - 1 of cell 0). West sums/differences are the previous step's east ones.
 */
// @ts-ignore: decorator
@inline function hornRow(
  f: i32,
  kind: i32,
  top: usize,
  mid: usize,
  bot: usize,
  dst: usize,
  n: i32,
  kx: f64,
  ky: f64,
  k0: f64,
  k1: f64,
  k2: f64,
  srcs: usize,
  count: i32,
): void {
  const vkx = f64x2.splat(kx);
  const vky = f64x2.splat(ky);
  let t = ld2(top);
  let b = ld2(bot);
  let sW = colSum(t, ld2(mid), b);
  let dW = f64x2.sub(b, t);
  let i = 0;
  // Four cells per step (two independent vectors), then two, then the odd last cell.
  for (; i + 4 <= n; i += 4) {
    const o1 = <usize>(i + 2) << 2;
    const o2 = <usize>(i + 4) << 2;
    const t1 = ld2(top + o1);
    const b1 = ld2(bot + o1);
    const t2 = ld2(top + o2);
    const b2 = ld2(bot + o2);
    const sE1 = colSum(t1, ld2(mid + o1), b1);
    const sE2 = colSum(t2, ld2(mid + o2), b2);
    const dE1 = f64x2.sub(b1, t1);
    const dE2 = f64x2.sub(b2, t2);
    const u1 = f64x2.mul(f64x2.sub(sE1, sW), vkx);
    const v1 = gyOf(dW, f64x2.shuffle(dW, dE1, 1, 2), dE1, vky);
    const u2 = f64x2.mul(f64x2.sub(sE2, sE1), vkx);
    const v2 = gyOf(dE1, f64x2.shuffle(dE1, dE2, 1, 2), dE2, vky);
    store2(dst, i, kind, cell2(f, u1, v1, k0, k1, k2, srcs, count));
    store2(dst, i + 2, kind, cell2(f, u2, v2, k0, k1, k2, srcs, count));
    sW = sE2;
    dW = dE2;
  }
  for (; i + 2 <= n; i += 2) {
    const o = <usize>(i + 2) << 2;
    t = ld2(top + o);
    b = ld2(bot + o);
    const sE = colSum(t, ld2(mid + o), b);
    const dE = f64x2.sub(b, t);
    const dM = f64x2.shuffle(dW, dE, 1, 2);
    const u = f64x2.mul(f64x2.sub(sE, sW), vkx);
    const v = gyOf(dW, dM, dE, vky);
    store2(dst, i, kind, cell2(f, u, v, k0, k1, k2, srcs, count));
    sW = sE;
    dW = dE;
  }
  if (i < n) {
    const o = <usize>i << 2;
    const w0 = colSum1(top + o, mid + o, bot + o);
    const e0 = colSum1(top + o + 8, mid + o + 8, bot + o + 8);
    const u = (e0 - w0) * kx;
    const v = (colDiff1(top + o, bot + o) + 2 * colDiff1(top + o + 4, bot + o + 4) + colDiff1(top + o + 8, bot + o + 8)) * ky;
    store1(dst, i, kind, cell1(f, u, v, k0, k1, k2, srcs, count));
  }
}

/** Traditional hillshade: numerator k0 + k1 gx + k2 gy clamped at 0, over sqrt(1 + gx^2 + gy^2). */
export function hillshadeRowU8(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, k0: f64, k1: f64, k2: f64): void {
  hornRow(F_HILLSHADE, OUT_U8, top, mid, bot, dst, n, kx, ky, k0, k1, k2, 0, 0);
}
export function hillshadeRowF32(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, k0: f64, k1: f64, k2: f64): void {
  hornRow(F_HILLSHADE, OUT_F32, top, mid, bot, dst, n, kx, ky, k0, k1, k2, 0, 0);
}
/** Several sources ([k0, kx, ky] f64 triples at srcs) plus the constant c. */
export function multiRowU8(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, c: f64, srcs: usize, count: i32): void {
  hornRow(F_MULTI, OUT_U8, top, mid, bot, dst, n, kx, ky, c, 0, 0, srcs, count);
}
export function multiRowF32(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, c: f64, srcs: usize, count: i32): void {
  hornRow(F_MULTI, OUT_F32, top, mid, bot, dst, n, kx, ky, c, 0, 0, srcs, count);
}
export function slopeDegreeRow(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64): void {
  hornRow(F_SLOPE_DEGREE, OUT_F32, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0);
}
export function slopePercentRow(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64): void {
  hornRow(F_SLOPE_PERCENT, OUT_F32, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0);
}
export function aspectRow(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64): void {
  hornRow(F_ASPECT, OUT_F32, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0);
}

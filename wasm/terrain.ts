/**
 * Terrain row kernels in WebAssembly with explicit SIMD128 (AssemblyScript). Each export computes
 * one output row's fast span (src/functions/terrain/gradient.ts, `WindowRows`: every window valid
 * and inside the raster) from three DEM rows of any plane type (`inType`, below), so every DEM the
 * TypeScript kernels take runs here too: each value is converted to f64 exactly (F32, F64 and the
 * integer types up to 32 bits all are exact in f64).
 *
 * Two kinds of arithmetic:
 *
 *   - exact (Aspect, Slope percent rise, Curvature): everything in f64x2 lanes, with the same
 *     operations in the same order as the TypeScript kernels (JS numbers are float64; WebAssembly
 *     float arithmetic is IEEE 754 round-to-nearest with no fused multiply-add, like V8's), so the
 *     results are bit for bit the TypeScript path's. F32 outputs are demoted (round to nearest even,
 *     what a Float32Array store does), F64 outputs stored as they are, U8 outputs truncated
 *     (i32 trunc_sat, what a Uint8Array store does to values in [0, 256); NaN gives 0 in both);
 *
 *   - f32 output stage (Hillshade traditional and multidirectional, Slope in degrees): the Horn
 *     gradients (gx, gy) in f64x2 exactly as above, then rounded to f32 and the output formula
 *     (the numerators, the square root, the division, the arctangent) computed four cells at a time
 *     in f32x4. Decision: the sums stay in f64 because the Horn sums of F32 elevations
 *     (a + 2d + g ~ 4x the elevation) lose the gradient to cancellation in f32 on gentle slopes (a
 *     0.08 difference of two sums near 4000 keeps 3 significant digits); the output formula has no
 *     such cancellation, and f32x4 does twice the lanes of f64x2 with a cheaper square root and
 *     division (measured on the bench machine, one thread, DEM in wasm memory: 1.3x the all-f64x2
 *     kernel for Hillshade, 1.7x for multidirectional Hillshade and Slope in degrees). The result is within a stated tolerance
 *     of the TypeScript kernel (src/wasm/terrain.test.ts states and checks it), and the TypeScript
 *     side computes the cells outside the fast span with the same f32 operations
 *     (src/wasm/terrain.ts, `hillshadeOneF32` ...), so the wasm path gives every cell the same bits
 *     whatever the tiling. A cell whose gx^2 + gy^2 overflows f32 (|g| > 1.8e19) is computed
 *     in f64 exactly instead (the same rule on the TypeScript side).
 *
 * Pointers are byte addresses in this module's memory, which the TypeScript side manages
 * (src/wasm/arena.ts: nothing here allocates). `top`, `mid`, `bot` address the window column west
 * of the first output cell (x - 1) in the three DEM rows; `n` cells are written from `dst`.
 * Window naming as gradient.ts: gx = (east sum - west sum) kx, gy = ((g - a) + 2 (h - b) + (i - c)) ky.
 * The Horn exports (Hillshade, multidirectional, Slope, Aspect) take `rows`, `inStride` and
 * `outStride` too: `rows` consecutive rows with the same factors, each `inStride` bytes below the
 * last in the DEM and `outStride` bytes in the output (`hornAuto`); a single row is rows = 1.
 */

// ---- Input plane types (src/wasm/terrain.ts `IN_TYPE` has the same codes).

const IN_U8: i32 = 0;
const IN_S8: i32 = 1;
const IN_U16: i32 = 2;
const IN_S16: i32 = 3;
const IN_U32: i32 = 4;
const IN_S32: i32 = 5;
const IN_F32: i32 = 6;
const IN_F64: i32 = 7;

/** Two consecutive values of type T at p as f64x2 (exact). */
// @ts-ignore: decorator
@inline function ld2<T>(p: usize): v128 {
  if (isFloat<T>()) {
    if (sizeof<T>() == 4) return f64x2.promote_low_f32x4(v128.load64_zero(p));
    return v128.load(p);
  }
  if (sizeof<T>() == 4) {
    if (isSigned<T>()) return f64x2.convert_low_i32x4_s(v128.load64_zero(p));
    return f64x2.convert_low_i32x4_u(v128.load64_zero(p));
  }
  if (sizeof<T>() == 2) {
    const w = v128.load32_zero(p);
    return f64x2.convert_low_i32x4_s(isSigned<T>() ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_low_i16x8_u(w));
  }
  const b = v128.load16_splat(p);
  return f64x2.convert_low_i32x4_s(
    isSigned<T>() ? i32x4.extend_low_i16x8_s(i16x8.extend_low_i8x16_s(b)) : i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(b)),
  );
}

/** One value of type T at p as f64. */
// @ts-ignore: decorator
@inline function ld1<T>(p: usize): f64 {
  return <f64>load<T>(p);
}

// ---- Horn window: the sliding column sums and differences, two columns per vector.

const TWO: v128 = f64x2(2.0, 2.0);
const ZERO: v128 = f64x2(0.0, 0.0);
const ONE: v128 = f64x2(1.0, 1.0);

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

// ---- Output stores.

/** Output kinds: the TypeScript side passes the destination plane's type. */
const OUT_F32: i32 = 0;
const OUT_U8: i32 = 1;
const OUT_F64: i32 = 2;

/** Two f64 results at cell i. */
// @ts-ignore: decorator
@inline function store2(dst: usize, i: i32, kind: i32, r: v128): void {
  if (kind == OUT_F32) {
    v128.store64_lane(dst + (<usize>i << 2), f32x4.demote_f64x2_zero(r), 0);
  } else if (kind == OUT_F64) {
    v128.store(dst + (<usize>i << 3), r);
  } else {
    const t = i32x4.trunc_sat_f64x2_s_zero(r);
    store<u8>(dst + <usize>i, <u8>i32x4.extract_lane(t, 0));
    store<u8>(dst + <usize>i + 1, <u8>i32x4.extract_lane(t, 1));
  }
}

/** One f64 result at cell i. */
// @ts-ignore: decorator
@inline function store1(dst: usize, i: i32, kind: i32, r: f64): void {
  if (kind == OUT_F32) store<f32>(dst + (<usize>i << 2), <f32>r);
  else if (kind == OUT_F64) store<f64>(dst + (<usize>i << 3), r);
  else store<u8>(dst + <usize>i, <u8><i32>r);
}

/** The first `lanes` (1, 2 or 4) of four f32 results at cell i (F32 or U8 outputs). */
// @ts-ignore: decorator
@inline function store4(dst: usize, i: i32, kind: i32, r: v128, lanes: i32): void {
  if (kind == OUT_F32) {
    const p = dst + (<usize>i << 2);
    if (lanes == 4) v128.store(p, r);
    else if (lanes == 2) v128.store64_lane(p, r, 0);
    else v128.store32_lane(p, r, 0);
  } else {
    // trunc_sat then saturating narrows: shades are in [0, 256) or NaN (0), as a Uint8Array store.
    const t = i32x4.trunc_sat_f32x4_s(r);
    const b = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(t, t), ZERO);
    const p = dst + <usize>i;
    if (lanes == 4) v128.store32_lane(p, b, 0);
    else if (lanes == 2) v128.store16_lane(p, b, 0);
    else v128.store8_lane(p, b, 0);
  }
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
@inline function atanDeg1(r: f64): f64 {
  const inv = r > 1;
  const p = atanUnit1(inv ? 1 / r : r);
  return inv ? 90 - p : p;
}

// ---- The f32 output stage: the same formulas four cells at a time in f32x4.

const ZERO4: v128 = f32x4(0.0, 0.0, 0.0, 0.0);
const ONE4: v128 = f32x4(1.0, 1.0, 1.0, 1.0);
const INF4: v128 = f32x4(Infinity, Infinity, Infinity, Infinity);

// @ts-ignore: decorator
@inline function sp4(a: f32): v128 {
  return f32x4.splat(a);
}

/** Lanes (a0, a1, b0, b1) rounded to f32. */
// @ts-ignore: decorator
@inline function pack(a: v128, b: v128): v128 {
  return i32x4.shuffle(f32x4.demote_f64x2_zero(a), f32x4.demote_f64x2_zero(b), 0, 1, 4, 5);
}

/** n > 0 ? n : 0 per lane (NaN and -0 give +0): pmax(0, n) is 0 < n ? n : 0, one maxps. */
// @ts-ignore: decorator
@inline function positive4(n: v128): v128 {
  return f32x4.pmax(ZERO4, n);
}

/** atanUnit2 in f32x4 (the coefficients rounded to f32, the same order of operations). */
// @ts-ignore: decorator
@inline function atanUnit4(u: v128): v128 {
  const x = f32x4.mul(u, u);
  const x2 = f32x4.mul(x, x);
  const x4 = f32x4.mul(x2, x2);
  const p03 = f32x4.add(
    f32x4.add(sp4(<f32>A0), f32x4.mul(sp4(<f32>A1), x)),
    f32x4.mul(f32x4.add(sp4(<f32>A2), f32x4.mul(sp4(<f32>A3), x)), x2),
  );
  const p47 = f32x4.add(
    f32x4.add(sp4(<f32>A4), f32x4.mul(sp4(<f32>A5), x)),
    f32x4.mul(f32x4.add(sp4(<f32>A6), f32x4.mul(sp4(<f32>A7), x)), x2),
  );
  const p8 = f32x4.mul(f32x4.add(sp4(<f32>A8), f32x4.mul(sp4(<f32>A9), x)), f32x4.mul(x4, x4));
  return f32x4.mul(u, f32x4.add(f32x4.add(p03, f32x4.mul(p47, x4)), p8));
}

const F_HILLSHADE: i32 = 0;
const F_SLOPE_DEGREE: i32 = 1;
const F_SLOPE_PERCENT: i32 = 2;
const F_ASPECT: i32 = 3;
const F_MULTI: i32 = 4;

/** Whether a function takes the f32 output stage. */
// @ts-ignore: decorator
@inline function f32Stage(f: i32): bool {
  return f == F_HILLSHADE || f == F_MULTI || f == F_SLOPE_DEGREE;
}

/**
 * Four cells in f32x4 from U, V (f32 gradients) and q = U^2 + V^2. Multidirectional sources: f32
 * triples [k0, kx, ky] at `srcs32`.
 */
// @ts-ignore: decorator
@inline function cell4(f: i32, U: v128, V: v128, q: v128, k0: f32, k1: f32, k2: f32, srcs32: usize, count: i32): v128 {
  if (f == F_HILLSHADE) {
    const num = f32x4.add(f32x4.add(sp4(k0), f32x4.mul(sp4(k1), U)), f32x4.mul(sp4(k2), V));
    return f32x4.div(positive4(num), f32x4.sqrt(f32x4.add(ONE4, q)));
  }
  if (f == F_MULTI) {
    let sum = sp4(k0);
    for (let k = 0; k < count; k++) {
      const s = srcs32 + (<usize>k) * 12;
      const n = f32x4.add(f32x4.add(v128.load32_splat(s), f32x4.mul(v128.load32_splat(s, 4), U)), f32x4.mul(v128.load32_splat(s, 8), V));
      sum = f32x4.add(sum, positive4(n));
    }
    return f32x4.div(sum, f32x4.sqrt(f32x4.add(ONE4, q)));
  }
  // F_SLOPE_DEGREE: atanDegrees(sqrt(q)).
  const r = f32x4.sqrt(q);
  const inv = f32x4.gt(r, ONE4);
  const p = atanUnit4(v128.bitselect(f32x4.div(ONE4, r), r, inv));
  return v128.bitselect(f32x4.sub(sp4(90.0), p), p, inv);
}

// ---- The exact cell formulas (hillshade.ts, slope.ts, aspect.ts), vector and scalar.

/** Sources of the multidirectional formula: [k0, kx, ky] f64 x count at `srcs`, constant c. */
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

/** The exact formulas (aspect, percent rise) on two cells. */
// @ts-ignore: decorator
@inline function cell2(f: i32, u: v128, v: v128): v128 {
  if (f == F_ASPECT) return aspect2(u, v);
  return f64x2.mul(sp(100.0), f64x2.sqrt(f64x2.add(f64x2.mul(u, u), f64x2.mul(v, v))));
}

/** Every formula exactly in f64 (the TypeScript kernels' expressions), one cell. */
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
 * The f32 stage on cells i.. (u1, v1 lanes then u2, v2 lanes; `lanes` of them stored).
 * @returns the lanes whose f32 q overflowed (the caller mends them: `mendRow`).
 */
// @ts-ignore: decorator
@inline function out4(
  f: i32,
  kind: i32,
  dst: usize,
  i: i32,
  lanes: i32,
  u1: v128,
  v1: v128,
  u2: v128,
  v2: v128,
  k0: f64,
  k1: f64,
  k2: f64,
  srcs: usize,
  count: i32,
): v128 {
  const U = pack(u1, u2);
  const V = pack(v1, v2);
  const q = f32x4.add(f32x4.mul(U, U), f32x4.mul(V, V));
  store4(dst, i, kind, cell4(f, U, V, q, <f32>k0, <f32>k1, <f32>k2, srcs + (<usize>count) * 24, count), lanes);
  return f32x4.eq(q, INF4);
}

/**
 * The f32 stage's rare cells again: every cell of the row whose f32 q = gx^2 + gy^2 overflows
 * (|g| > 1.8e19) is recomputed exactly in f64. Run only for a row where the loop saw one (checking
 * per step measured 20 % slower). The same scalar expressions as the loop's lanes.
 */
function mendRow<T>(
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
  const S = <usize>sizeof<T>();
  for (let i = 0; i < n; i++) {
    const o = <usize>i * S;
    const w0 = ld1<T>(top + o) + 2.0 * ld1<T>(mid + o) + ld1<T>(bot + o);
    const e0 = ld1<T>(top + o + 2 * S) + 2.0 * ld1<T>(mid + o + 2 * S) + ld1<T>(bot + o + 2 * S);
    const u = (e0 - w0) * kx;
    const dW1 = ld1<T>(bot + o) - ld1<T>(top + o);
    const dM1 = ld1<T>(bot + o + S) - ld1<T>(top + o + S);
    const dE1 = ld1<T>(bot + o + 2 * S) - ld1<T>(top + o + 2 * S);
    const v = (dW1 + 2 * dM1 + dE1) * ky;
    const U = <f32>u;
    const V = <f32>v;
    if (U * U + V * V == Infinity) store1(dst, i, kind, cell1(f, u, v, k0, k1, k2, srcs, count));
  }
}

/**
 * The sliding loop over DEM values of type T, four cells per step: cells (i .. i + 3) take window
 * columns [i, i + 5] relative to `top` (column x - 1 of cell 0). West sums/differences are the
 * previous step's east ones. Then two cells, then the odd last one. Starts at cell `from`; `ovf`
 * carries the f32 overflow lanes seen before it (hornRowI).
 */
// @ts-ignore: decorator
@inline function hornRow<T>(
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
  from: i32,
  ovf: v128,
): void {
  const S = <usize>sizeof<T>();
  const vkx = f64x2.splat(kx);
  const vky = f64x2.splat(ky);
  let i = from;
  let t = ld2<T>(top + <usize>i * S);
  let b = ld2<T>(bot + <usize>i * S);
  let sW = colSum(t, ld2<T>(mid + <usize>i * S), b);
  let dW = f64x2.sub(b, t);
  for (; i + 4 <= n; i += 4) {
    const o1 = <usize>(i + 2) * S;
    const o2 = <usize>(i + 4) * S;
    const t1 = ld2<T>(top + o1);
    const b1 = ld2<T>(bot + o1);
    const t2 = ld2<T>(top + o2);
    const b2 = ld2<T>(bot + o2);
    const sE1 = colSum(t1, ld2<T>(mid + o1), b1);
    const sE2 = colSum(t2, ld2<T>(mid + o2), b2);
    const dE1 = f64x2.sub(b1, t1);
    const dE2 = f64x2.sub(b2, t2);
    const u1 = f64x2.mul(f64x2.sub(sE1, sW), vkx);
    const v1 = gyOf(dW, f64x2.shuffle(dW, dE1, 1, 2), dE1, vky);
    const u2 = f64x2.mul(f64x2.sub(sE2, sE1), vkx);
    const v2 = gyOf(dE1, f64x2.shuffle(dE1, dE2, 1, 2), dE2, vky);
    if (f32Stage(f)) {
      ovf = v128.or(ovf, out4(f, kind, dst, i, 4, u1, v1, u2, v2, k0, k1, k2, srcs, count));
    } else {
      store2(dst, i, kind, cell2(f, u1, v1));
      store2(dst, i + 2, kind, cell2(f, u2, v2));
    }
    sW = sE2;
    dW = dE2;
  }
  for (; i + 2 <= n; i += 2) {
    const o = <usize>(i + 2) * S;
    t = ld2<T>(top + o);
    b = ld2<T>(bot + o);
    const sE = colSum(t, ld2<T>(mid + o), b);
    const dE = f64x2.sub(b, t);
    const u = f64x2.mul(f64x2.sub(sE, sW), vkx);
    const v = gyOf(dW, f64x2.shuffle(dW, dE, 1, 2), dE, vky);
    if (f32Stage(f)) ovf = v128.or(ovf, out4(f, kind, dst, i, 2, u, v, u, v, k0, k1, k2, srcs, count));
    else store2(dst, i, kind, cell2(f, u, v));
    sW = sE;
    dW = dE;
  }
  if (i < n) {
    const o = <usize>i * S;
    const w0 = ld1<T>(top + o) + 2.0 * ld1<T>(mid + o) + ld1<T>(bot + o);
    const e0 = ld1<T>(top + o + 2 * S) + 2.0 * ld1<T>(mid + o + 2 * S) + ld1<T>(bot + o + 2 * S);
    const u = (e0 - w0) * kx;
    const dW1 = ld1<T>(bot + o) - ld1<T>(top + o);
    const dM1 = ld1<T>(bot + o + S) - ld1<T>(top + o + S);
    const dE1 = ld1<T>(bot + o + 2 * S) - ld1<T>(top + o + 2 * S);
    const v = (dW1 + 2 * dM1 + dE1) * ky;
    if (f32Stage(f)) {
      const vu = f64x2.splat(u);
      const vv = f64x2.splat(v);
      ovf = v128.or(ovf, out4(f, kind, dst, i, 1, vu, vv, vu, vv, k0, k1, k2, srcs, count));
    } else {
      store1(dst, i, kind, cell1(f, u, v, k0, k1, k2, srcs, count));
    }
  }
  if (f32Stage(f) && v128.any_true(ovf)) mendRow<T>(f, kind, top, mid, bot, dst, n, kx, ky, k0, k1, k2, srcs, count);
}

/** Four 8- or 16-bit values of type T at p as i32x4 (exact). */
// @ts-ignore: decorator
@inline function ld4i<T>(p: usize): v128 {
  if (sizeof<T>() == 2) {
    const w = v128.load64_zero(p);
    return isSigned<T>() ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_low_i16x8_u(w);
  }
  const w = v128.load32_zero(p);
  return isSigned<T>() ? i32x4.extend_low_i16x8_s(i16x8.extend_low_i8x16_s(w)) : i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(w));
}

/**
 * hornRow for 8- and 16-bit DEMs: the Horn sums and differences in i32x4 lanes, four columns per
 * vector. They are exact integers there (|t + 2m + b| <= 4 * 65535) as they are in the float64 of
 * the TypeScript kernel, so gx = f64(sE - sW) kx and gy = f64(dW + 2 dM + dE) ky are the same bits.
 * Cells i .. i + 3 read columns [i, i + 7] (A = [i, i + 3], B = [i + 4, i + 7]); the last cells go
 * to hornRow (no read past column n + 1).
 */
// @ts-ignore: decorator
@inline function hornRowI<T>(
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
  const S = <usize>sizeof<T>();
  const vkx = f64x2.splat(kx);
  const vky = f64x2.splat(ky);
  let i = 0;
  let ovf = v128.splat<i32>(0);
  if (n >= 6) {
    let t = ld4i<T>(top);
    let b = ld4i<T>(bot);
    let cA = i32x4.add(i32x4.add(t, i32x4.shl(ld4i<T>(mid), 1)), b);
    let dA = i32x4.sub(b, t);
    for (; i + 6 <= n; i += 4) {
      const o = <usize>(i + 4) * S;
      t = ld4i<T>(top + o);
      b = ld4i<T>(bot + o);
      const cB = i32x4.add(i32x4.add(t, i32x4.shl(ld4i<T>(mid + o), 1)), b);
      const dB = i32x4.sub(b, t);
      const gx = i32x4.sub(i32x4.shuffle(cA, cB, 2, 3, 4, 5), cA);
      const gy = i32x4.add(i32x4.add(dA, i32x4.shl(i32x4.shuffle(dA, dB, 1, 2, 3, 4), 1)), i32x4.shuffle(dA, dB, 2, 3, 4, 5));
      const u1 = f64x2.mul(f64x2.convert_low_i32x4_s(gx), vkx);
      const u2 = f64x2.mul(f64x2.convert_low_i32x4_s(i32x4.shuffle(gx, gx, 2, 3, 2, 3)), vkx);
      const v1 = f64x2.mul(f64x2.convert_low_i32x4_s(gy), vky);
      const v2 = f64x2.mul(f64x2.convert_low_i32x4_s(i32x4.shuffle(gy, gy, 2, 3, 2, 3)), vky);
      if (f32Stage(f)) {
        ovf = v128.or(ovf, out4(f, kind, dst, i, 4, u1, v1, u2, v2, k0, k1, k2, srcs, count));
      } else {
        store2(dst, i, kind, cell2(f, u1, v1));
        store2(dst, i + 2, kind, cell2(f, u2, v2));
      }
      cA = cB;
      dA = dB;
    }
  }
  hornRow<T>(f, kind, top, mid, bot, dst, n, kx, ky, k0, k1, k2, srcs, count, i, ovf);
}

/**
 * The row loop for DEM type T (integer lanes for 8- and 16-bit types, f64 lanes otherwise), over
 * `rows` rows: row r reads from top, mid, bot + r * inStride and writes from dst + r * outStride
 * (byte strides; the same factors for every row). One call per run of a tile's plain rows instead
 * of one per row: the per-row call from JavaScript cost as much as a third of the kernel.
 */
// @ts-ignore: decorator
@inline function hornAuto<T>(
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
  rows: i32,
  inStride: usize,
  outStride: usize,
): void {
  for (let r = 0; r < rows; r++) {
    if (!isFloat<T>() && sizeof<T>() <= 2) hornRowI<T>(f, kind, top, mid, bot, dst, n, kx, ky, k0, k1, k2, srcs, count);
    else hornRow<T>(f, kind, top, mid, bot, dst, n, kx, ky, k0, k1, k2, srcs, count, 0, v128.splat<i32>(0));
    top += inStride;
    mid += inStride;
    bot += inStride;
    dst += outStride;
  }
}

// One function per (formula, output kind, DEM type), each with its own loop: the formula and the
// output kind are constants there, and the module's optimizer keeps the functions apart (functions
// with loops are not inlined), which keeps the build fast.

function hsU8<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, k0: f64, k1: f64, k2: f64, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_HILLSHADE, OUT_U8, top, mid, bot, dst, n, kx, ky, k0, k1, k2, 0, 0, rows, inStride, outStride);
}
function hsF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, k0: f64, k1: f64, k2: f64, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_HILLSHADE, OUT_F32, top, mid, bot, dst, n, kx, ky, k0, k1, k2, 0, 0, rows, inStride, outStride);
}
function multiU8<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, c: f64, srcs: usize, count: i32, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_MULTI, OUT_U8, top, mid, bot, dst, n, kx, ky, c, 0, 0, srcs, count, rows, inStride, outStride);
}
function multiF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, c: f64, srcs: usize, count: i32, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_MULTI, OUT_F32, top, mid, bot, dst, n, kx, ky, c, 0, 0, srcs, count, rows, inStride, outStride);
}
function slopeDegF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_SLOPE_DEGREE, OUT_F32, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0, rows, inStride, outStride);
}
function slopePctF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_SLOPE_PERCENT, OUT_F32, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0, rows, inStride, outStride);
}
function slopePctF64<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_SLOPE_PERCENT, OUT_F64, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0, rows, inStride, outStride);
}
function aspectF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_ASPECT, OUT_F32, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0, rows, inStride, outStride);
}
function aspectF64<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  hornAuto<T>(F_ASPECT, OUT_F64, top, mid, bot, dst, n, kx, ky, 0, 0, 0, 0, 0, rows, inStride, outStride);
}

/** Traditional hillshade (U8 or F32 output): numerator k0 + k1 gx + k2 gy clamped at 0, over sqrt(1 + gx^2 + gy^2). */
export function terrainHillshade(inType: i32, kind: i32, top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, k0: f64, k1: f64, k2: f64, rows: i32, inStride: usize, outStride: usize): void {
  if (kind == OUT_U8) {
    switch (inType) {
      case IN_F32:
        hsU8<f32>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_F64:
        hsU8<f64>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_U8:
        hsU8<u8>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_S8:
        hsU8<i8>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_U16:
        hsU8<u16>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_S16:
        hsU8<i16>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_U32:
        hsU8<u32>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_S32:
        hsU8<i32>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  } else {
    switch (inType) {
      case IN_F32:
        hsF32<f32>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_F64:
        hsF32<f64>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_U8:
        hsF32<u8>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_S8:
        hsF32<i8>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_U16:
        hsF32<u16>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_S16:
        hsF32<i16>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_U32:
        hsF32<u32>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      case IN_S32:
        hsF32<i32>(top, mid, bot, dst, n, kx, ky, k0, k1, k2, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  }
}

/** Multidirectional hillshade (U8 or F32 output): `count` sources, [k0, kx, ky] f64 triples at `srcs` followed by the same triples rounded to f32, plus the constant c. */
export function terrainMulti(inType: i32, kind: i32, top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, c: f64, srcs: usize, count: i32, rows: i32, inStride: usize, outStride: usize): void {
  if (kind == OUT_U8) {
    switch (inType) {
      case IN_F32:
        multiU8<f32>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_F64:
        multiU8<f64>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_U8:
        multiU8<u8>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_S8:
        multiU8<i8>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_U16:
        multiU8<u16>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_S16:
        multiU8<i16>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_U32:
        multiU8<u32>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_S32:
        multiU8<i32>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  } else {
    switch (inType) {
      case IN_F32:
        multiF32<f32>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_F64:
        multiF32<f64>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_U8:
        multiF32<u8>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_S8:
        multiF32<i8>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_U16:
        multiF32<u16>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_S16:
        multiF32<i16>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_U32:
        multiF32<u32>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      case IN_S32:
        multiF32<i32>(top, mid, bot, dst, n, kx, ky, c, srcs, count, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  }
}

/** Slope in degrees (F32 output; the f32 stage). */
export function terrainSlopeDegree(inType: i32, kind: i32, top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  switch (inType) {
    case IN_F32:
      slopeDegF32<f32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    case IN_F64:
      slopeDegF32<f64>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    case IN_U8:
      slopeDegF32<u8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    case IN_S8:
      slopeDegF32<i8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    case IN_U16:
      slopeDegF32<u16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    case IN_S16:
      slopeDegF32<i16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    case IN_U32:
      slopeDegF32<u32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    case IN_S32:
      slopeDegF32<i32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
      break;
    default:
      unreachable();
  }
}

/** Slope in percent rise (F32 or F64 output; exact). */
export function terrainSlopePercent(inType: i32, kind: i32, top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  if (kind == OUT_F32) {
    switch (inType) {
      case IN_F32:
        slopePctF32<f32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_F64:
        slopePctF32<f64>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U8:
        slopePctF32<u8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S8:
        slopePctF32<i8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U16:
        slopePctF32<u16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S16:
        slopePctF32<i16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U32:
        slopePctF32<u32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S32:
        slopePctF32<i32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  } else {
    switch (inType) {
      case IN_F32:
        slopePctF64<f32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_F64:
        slopePctF64<f64>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U8:
        slopePctF64<u8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S8:
        slopePctF64<i8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U16:
        slopePctF64<u16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S16:
        slopePctF64<i16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U32:
        slopePctF64<u32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S32:
        slopePctF64<i32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  }
}

/** Aspect (F32 or F64 output; exact). */
export function terrainAspect(inType: i32, kind: i32, top: usize, mid: usize, bot: usize, dst: usize, n: i32, kx: f64, ky: f64, rows: i32, inStride: usize, outStride: usize): void {
  if (kind == OUT_F32) {
    switch (inType) {
      case IN_F32:
        aspectF32<f32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_F64:
        aspectF32<f64>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U8:
        aspectF32<u8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S8:
        aspectF32<i8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U16:
        aspectF32<u16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S16:
        aspectF32<i16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U32:
        aspectF32<u32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S32:
        aspectF32<i32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  } else {
    switch (inType) {
      case IN_F32:
        aspectF64<f32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_F64:
        aspectF64<f64>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U8:
        aspectF64<u8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S8:
        aspectF64<i8>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U16:
        aspectF64<u16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S16:
        aspectF64<i16>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_U32:
        aspectF64<u32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      case IN_S32:
        aspectF64<i32>(top, mid, bot, dst, n, kx, ky, rows, inStride, outStride);
        break;
      default:
        unreachable();
    }
  }
}

// ---- Curvature (curvature.ts, Zevenbergen-Thorne): exact, f64x2, the same expressions in the same order.

const C_STANDARD: i32 = 0;
const C_PROFILE: i32 = 1;
const C_PLANFORM: i32 = 2;

/**
 * One curvature from the window t0 t1 t2 / m0 m1 m2 / b0 b1 b2 (vector or scalar through the
 * helpers below), constants cxx, cyy, cxy, cx, cy (curvature.ts `constants`).
 */
// @ts-ignore: decorator
@inline function curv2(
  type: i32,
  t0: v128,
  t1: v128,
  t2: v128,
  m0: v128,
  m1: v128,
  m2: v128,
  b0: v128,
  b1: v128,
  b2: v128,
  cxx: v128,
  cyy: v128,
  cxy: v128,
  cx: v128,
  cy: v128,
): v128 {
  const half = sp(0.5);
  const D = f64x2.mul(f64x2.sub(f64x2.mul(f64x2.add(m0, m2), half), m1), cxx);
  const E = f64x2.mul(f64x2.sub(f64x2.mul(f64x2.add(t1, b1), half), m1), cyy);
  if (type == C_STANDARD) return f64x2.add(f64x2.mul(sp(-200.0), f64x2.add(D, E)), ZERO);
  const G = f64x2.mul(f64x2.sub(m2, m0), cx);
  const H = f64x2.mul(f64x2.sub(t1, b1), cy);
  const s = f64x2.add(f64x2.mul(G, G), f64x2.mul(H, H));
  const F = f64x2.mul(f64x2.sub(f64x2.add(f64x2.sub(t2, t0), b0), b2), cxy);
  const FGH = f64x2.mul(f64x2.mul(F, G), H);
  let r: v128;
  if (type == C_PROFILE) {
    // (-200 * (D G G + E H H + F G H)) / s + 0
    const sum = f64x2.add(f64x2.add(f64x2.mul(f64x2.mul(D, G), G), f64x2.mul(f64x2.mul(E, H), H)), FGH);
    r = f64x2.add(f64x2.div(f64x2.mul(sp(-200.0), sum), s), ZERO);
  } else {
    // (200 * (D H H + E G G - F G H)) / s + 0
    const sum = f64x2.sub(f64x2.add(f64x2.mul(f64x2.mul(D, H), H), f64x2.mul(f64x2.mul(E, G), G)), FGH);
    r = f64x2.add(f64x2.div(f64x2.mul(sp(200.0), sum), s), ZERO);
  }
  // s === 0 -> 0
  return v128.bitselect(ZERO, r, f64x2.eq(s, ZERO));
}

// @ts-ignore: decorator
@inline function curvRow<T>(
  type: i32,
  kind: i32,
  top: usize,
  mid: usize,
  bot: usize,
  dst: usize,
  n: i32,
  cxx: f64,
  cyy: f64,
  cxy: f64,
  cx: f64,
  cy: f64,
): void {
  const S = <usize>sizeof<T>();
  const vxx = sp(cxx);
  const vyy = sp(cyy);
  const vxy = sp(cxy);
  const vx = sp(cx);
  const vy = sp(cy);
  // Columns (i, i + 1) relative to `top` (x - 1 of cell 0): the west pair of cells (i, i + 1).
  let tL = ld2<T>(top);
  let mL = ld2<T>(mid);
  let bL = ld2<T>(bot);
  let i = 0;
  for (; i + 2 <= n; i += 2) {
    const o = <usize>(i + 2) * S;
    const tR = ld2<T>(top + o);
    const mR = ld2<T>(mid + o);
    const bR = ld2<T>(bot + o);
    const r = curv2(
      type,
      tL,
      f64x2.shuffle(tL, tR, 1, 2),
      tR,
      mL,
      f64x2.shuffle(mL, mR, 1, 2),
      mR,
      bL,
      f64x2.shuffle(bL, bR, 1, 2),
      bR,
      vxx,
      vyy,
      vxy,
      vx,
      vy,
    );
    store2(dst, i, kind, r);
    tL = tR;
    mL = mR;
    bL = bR;
  }
  if (i < n) {
    // The odd last cell: the same expressions on splatted scalars (lane 0 stored).
    const o = <usize>i * S;
    const r = curv2(
      type,
      sp(ld1<T>(top + o)),
      sp(ld1<T>(top + o + S)),
      sp(ld1<T>(top + o + 2 * S)),
      sp(ld1<T>(mid + o)),
      sp(ld1<T>(mid + o + S)),
      sp(ld1<T>(mid + o + 2 * S)),
      sp(ld1<T>(bot + o)),
      sp(ld1<T>(bot + o + S)),
      sp(ld1<T>(bot + o + 2 * S)),
      vxx,
      vyy,
      vxy,
      vx,
      vy,
    );
    store1(dst, i, kind, f64x2.extract_lane(r, 0));
  }
}

function curvStandardF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, cxx: f64, cyy: f64, cxy: f64, cx: f64, cy: f64): void {
  curvRow<T>(C_STANDARD, OUT_F32, top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
}
function curvStandardF64<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, cxx: f64, cyy: f64, cxy: f64, cx: f64, cy: f64): void {
  curvRow<T>(C_STANDARD, OUT_F64, top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
}
function curvProfileF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, cxx: f64, cyy: f64, cxy: f64, cx: f64, cy: f64): void {
  curvRow<T>(C_PROFILE, OUT_F32, top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
}
function curvProfileF64<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, cxx: f64, cyy: f64, cxy: f64, cx: f64, cy: f64): void {
  curvRow<T>(C_PROFILE, OUT_F64, top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
}
function curvPlanformF32<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, cxx: f64, cyy: f64, cxy: f64, cx: f64, cy: f64): void {
  curvRow<T>(C_PLANFORM, OUT_F32, top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
}
function curvPlanformF64<T>(top: usize, mid: usize, bot: usize, dst: usize, n: i32, cxx: f64, cyy: f64, cxy: f64, cx: f64, cy: f64): void {
  curvRow<T>(C_PLANFORM, OUT_F64, top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
}

/** Curvature (F32 or F64 output; exact): type 0 standard, 1 profile, 2 planform. */
export function terrainCurvature(inType: i32, kind: i32, type: i32, top: usize, mid: usize, bot: usize, dst: usize, n: i32, cxx: f64, cyy: f64, cxy: f64, cx: f64, cy: f64): void {
  if (kind == OUT_F32 && type == C_STANDARD) {
    switch (inType) {
      case IN_F32:
        curvStandardF32<f32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_F64:
        curvStandardF32<f64>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U8:
        curvStandardF32<u8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S8:
        curvStandardF32<i8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U16:
        curvStandardF32<u16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S16:
        curvStandardF32<i16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U32:
        curvStandardF32<u32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S32:
        curvStandardF32<i32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      default:
        unreachable();
    }
  } else if (kind == OUT_F64 && type == C_STANDARD) {
    switch (inType) {
      case IN_F32:
        curvStandardF64<f32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_F64:
        curvStandardF64<f64>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U8:
        curvStandardF64<u8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S8:
        curvStandardF64<i8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U16:
        curvStandardF64<u16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S16:
        curvStandardF64<i16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U32:
        curvStandardF64<u32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S32:
        curvStandardF64<i32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      default:
        unreachable();
    }
  } else if (kind == OUT_F32 && type == C_PROFILE) {
    switch (inType) {
      case IN_F32:
        curvProfileF32<f32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_F64:
        curvProfileF32<f64>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U8:
        curvProfileF32<u8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S8:
        curvProfileF32<i8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U16:
        curvProfileF32<u16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S16:
        curvProfileF32<i16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U32:
        curvProfileF32<u32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S32:
        curvProfileF32<i32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      default:
        unreachable();
    }
  } else if (kind == OUT_F64 && type == C_PROFILE) {
    switch (inType) {
      case IN_F32:
        curvProfileF64<f32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_F64:
        curvProfileF64<f64>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U8:
        curvProfileF64<u8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S8:
        curvProfileF64<i8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U16:
        curvProfileF64<u16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S16:
        curvProfileF64<i16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U32:
        curvProfileF64<u32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S32:
        curvProfileF64<i32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      default:
        unreachable();
    }
  } else if (kind == OUT_F32 && type == C_PLANFORM) {
    switch (inType) {
      case IN_F32:
        curvPlanformF32<f32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_F64:
        curvPlanformF32<f64>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U8:
        curvPlanformF32<u8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S8:
        curvPlanformF32<i8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U16:
        curvPlanformF32<u16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S16:
        curvPlanformF32<i16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U32:
        curvPlanformF32<u32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S32:
        curvPlanformF32<i32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      default:
        unreachable();
    }
  } else if (kind == OUT_F64 && type == C_PLANFORM) {
    switch (inType) {
      case IN_F32:
        curvPlanformF64<f32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_F64:
        curvPlanformF64<f64>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U8:
        curvPlanformF64<u8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S8:
        curvPlanformF64<i8>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U16:
        curvPlanformF64<u16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S16:
        curvPlanformF64<i16>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_U32:
        curvPlanformF64<u32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      case IN_S32:
        curvPlanformF64<i32>(top, mid, bot, dst, n, cxx, cyy, cxy, cx, cy);
        break;
      default:
        unreachable();
    }
  } else {
    unreachable();
  }
}

// ---- The window reader's row scan (gradient.ts `WindowRows`), for masks in this memory.

/**
 * Which rows of a mask block are valid over a column range: out[r] = 1 when the `n` mask bytes at
 * mask + r * stride + from are all nonzero, else 0, for r in [0, rows). Sixteen bytes per vector.
 */
export function terrainMaskRows(mask: usize, stride: i32, rows: i32, from: i32, n: i32, out: usize): void {
  for (let r: i32 = 0; r < rows; r++) {
    let p = mask + <usize>r * <usize>stride + <usize>from;
    const end = p + <usize>n;
    let ok: u8 = 1;
    while (p + 16 <= end) {
      if (!i8x16.all_true(v128.load(p))) {
        ok = 0;
        break;
      }
      p += 16;
    }
    if (ok) {
      while (p < end) {
        if (load<u8>(p) == 0) {
          ok = 0;
          break;
        }
        p++;
      }
    }
    store<u8>(out + <usize>r, ok);
  }
}

/**
 * Per-pixel band math in WebAssembly with explicit SIMD128 (AssemblyScript): NDVI, Arithmetic,
 * the expression engine's register programs, the linear Stretch and the engine's cast.
 *
 * Every kernel computes in f64x2 lanes exactly what its TypeScript kernel computes in JS numbers
 * (float64): inputs are converted to f64 exactly (every pixel type's values are f64 values), the
 * arithmetic is IEEE 754 add, sub, mul, div, sqrt, floor, ceil, trunc, round to nearest, with no
 * fused multiply-add (as V8's), in the same order, and outputs are stored as a typed array stores
 * them (F32: round to nearest even; integers: the value, already integral and in range). So the
 * results are bit for bit the TypeScript path's (NaN payloads aside: NaN is NaN).
 *
 * Decision: f64x2 lanes are the default (they keep the reference's bits without case-by-case
 * proofs); f32x4 lanes only where a stated argument gives the same bits: Arithmetic's F32 results of
 * F32 values (innocuous double rounding), NDVI's scientific form and the fused normalised difference
 * of 8- and 16-bit bands (exact operands, innocuous double rounding), and NDVI's scaled U8 form of
 * U8/U16 bands (an error bound, and float64 for the steps it does not cover). F32 bands keep f64
 * lanes where the float64 division decides the bits (NDVI of F32 bands): it is the kernels' limit
 * once the planes are in cache (about 1.2 Gpx/s on one core here).
 *
 * Masks: one byte per pixel, 0 = NoData. Each loop takes four to sixteen pixels per step with one
 * test of their mask bytes (Arithmetic and the fused normalised difference AND the operands' masks
 * into the output mask in that same pass: every plane is read once and written once); a step
 * whose mask bytes are not all 1, or whose results need NoData, is fixed lane by lane (the rare
 * path). The last pixels run one by one with the reference's float64 operations.
 *
 * Each specialised loop is its own wasm function (not inlined into the exported dispatchers): V8
 * tiers a hot function up on its own, so a small one reaches optimised code after a call or two.
 *
 * Element type codes (src/wasm/local.ts `typeCode`): 0 U8, 1 S8, 2 U16, 3 S16, 4 U32, 5 S32, 6 F32, 7 F64.
 * Pointers are byte addresses in this module's memory, managed by the TypeScript side.
 */

const ZERO: v128 = f64x2(0.0, 0.0);
const ONE: v128 = f64x2(1.0, 1.0);
const HALF: v128 = f64x2(0.5, 0.5);
const NAN2: v128 = f64x2(NaN, NaN);
const C100: v128 = f64x2(100.0, 100.0);
const C1005: v128 = f64x2(100.5, 100.5);

// ---- Loads and stores of two elements (or one, `lanes` = 1) as f64x2.

/** Two elements of type T at p, as f64 lanes. */
// @ts-ignore: decorator
@inline function ld2<T>(p: usize): v128 {
  if (isFloat<T>()) {
    if (sizeof<T>() == 4) return f64x2.promote_low_f32x4(v128.load64_zero(p));
    return v128.load(p);
  }
  if (sizeof<T>() == 1) {
    const b = v128.load16_splat(p);
    const w = isSigned<T>() ? i16x8.extend_low_i8x16_s(b) : i16x8.extend_low_i8x16_u(b);
    return f64x2.convert_low_i32x4_s(isSigned<T>() ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_low_i16x8_u(w));
  }
  if (sizeof<T>() == 2) {
    const w = v128.load32_zero(p);
    return f64x2.convert_low_i32x4_s(isSigned<T>() ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_low_i16x8_u(w));
  }
  const d = v128.load64_zero(p);
  return isSigned<T>() ? f64x2.convert_low_i32x4_s(d) : f64x2.convert_low_i32x4_u(d);
}

/** One element of type T at p, splat. */
// @ts-ignore: decorator
@inline function ld1<T>(p: usize): v128 {
  return f64x2.splat(<f64>load<T>(p));
}

// @ts-ignore: decorator
@inline function ldn<T>(p: usize, lanes: i32): v128 {
  return lanes == 2 ? ld2<T>(p) : ld1<T>(p);
}

/** Integer lanes of x (integral f64 values in D's range) in a v128 narrowed to D's width, lane 0 first. */
// @ts-ignore: decorator
@inline function narrow<D>(x: v128): v128 {
  if (sizeof<D>() == 4) return isSigned<D>() ? i32x4.trunc_sat_f64x2_s_zero(x) : i32x4.trunc_sat_f64x2_u_zero(x);
  const t = i32x4.trunc_sat_f64x2_s_zero(x);
  if (sizeof<D>() == 2) return isSigned<D>() ? i16x8.narrow_i32x4_s(t, t) : i16x8.narrow_i32x4_u(t, t);
  const h = i16x8.narrow_i32x4_s(t, t);
  return isSigned<D>() ? i8x16.narrow_i16x8_s(h, h) : i8x16.narrow_i16x8_u(h, h);
}

/**
 * Store lanes of x into D at p: floats as a typed array stores them (F32 rounds to nearest even);
 * integers truncated and saturated (the callers pass integral values in range, or NaN -> 0).
 */
// @ts-ignore: decorator
@inline function stn<D>(p: usize, x: v128, lanes: i32): void {
  if (isFloat<D>()) {
    if (sizeof<D>() == 4) {
      const f = f32x4.demote_f64x2_zero(x);
      if (lanes == 2) v128.store64_lane(p, f, 0);
      else v128.store32_lane(p, f, 0);
    } else if (lanes == 2) v128.store(p, x);
    else v128.store64_lane(p, x, 0);
    return;
  }
  const t = narrow<D>(x);
  if (sizeof<D>() == 4) {
    if (lanes == 2) v128.store64_lane(p, t, 0);
    else v128.store32_lane(p, t, 0);
  } else if (sizeof<D>() == 2) {
    if (lanes == 2) v128.store32_lane(p, t, 0);
    else v128.store16_lane(p, t, 0);
  } else if (lanes == 2) v128.store16_lane(p, t, 0);
  else v128.store8_lane(p, t, 0);
}

/** Lanes (bit 0, bit 1) whose mask byte is not 1, as bits; 0 when both are 1. */
// @ts-ignore: decorator
@inline function maskBits(m: usize, lanes: i32): i32 {
  if (lanes == 2) {
    const w = <i32>load<u16>(m);
    return w == 0x0101 ? 0 : ((w & 0xff) == 1 ? 0 : 1) | ((w >> 8) == 1 ? 0 : 2);
  }
  return load<u8>(m) == 1 ? 0 : 1;
}

/** Lanes where x - x != 0 (NaN or infinite), as bits. */
// @ts-ignore: decorator
@inline function nonFinite(x: v128, lanes: i32): i32 {
  return i64x2.bitmask(f64x2.ne(f64x2.sub(x, x), ZERO)) & ((1 << lanes) - 1);
}

/** Four lanes (lo: pixels 0, 1; hi: 2, 3) stored into D at p, as `stn` stores them. */
// @ts-ignore: decorator
@inline function st4<D>(p: usize, lo: v128, hi: v128): void {
  if (isFloat<D>() && sizeof<D>() == 4) {
    v128.store(p, v128.shuffle<i32>(f32x4.demote_f64x2_zero(lo), f32x4.demote_f64x2_zero(hi), 0, 1, 4, 5));
  } else if (isFloat<D>()) {
    v128.store(p, lo);
    v128.store(p, hi, 16);
  } else {
    stn<D>(p, lo, 2);
    stn<D>(p + 2 * sizeof<D>(), hi, 2);
  }
}

/** Whether the four mask bytes at m are not all 1. */
// @ts-ignore: decorator
@inline function maskNot4(m: usize): bool {
  return load<u32>(m) != 0x01010101;
}

// ---- NDVI (src/functions/spectral/ndvi.ts).

const NDVI_SCI: i32 = 0;
const NDVI_SCALED_FLOAT: i32 = 1;
const NDVI_SCALED_U8: i32 = 2;

/**
 * s = r + v; x = s == 0 ? 0 : (r - v) / s, then * 100 + 100 (scaled float) or * 100 + 100.5
 * (scaled U8, truncated by the store: the U8 store's saturation is the kernel's 0..255 clamp).
 * NoData where the source mask is 0, or x is not finite (U8: NaN); written NaN (floats) or 0 (U8).
 */
/** The NDVI value of two lanes (mode as ndviStep). */
// @ts-ignore: decorator
@inline function ndviX(mode: i32, r: v128, v: v128): v128 {
  const s = f64x2.add(r, v);
  let q = f64x2.div(f64x2.sub(r, v), s);
  if (mode == NDVI_SCALED_FLOAT) q = f64x2.add(f64x2.mul(q, C100), C100);
  else if (mode == NDVI_SCALED_U8) q = f64x2.add(f64x2.mul(q, C100), C1005);
  return v128.bitselect(ZERO, q, f64x2.eq(s, ZERO));
}

/** Lanes of x that are NoData for the mode (U8: NaN; floats: not finite), as bits. */
// @ts-ignore: decorator
@inline function ndviBad(mode: i32, x: v128): i32 {
  return mode == NDVI_SCALED_U8 ? i64x2.bitmask(f64x2.ne(x, x)) : nonFinite(x, 2);
}

/** Four pixels from i: two vectors, one mask test; the lanes to fix one by one. */
// @ts-ignore: decorator
@inline function ndviStep4<T, D>(mode: i32, ir: usize, vis: usize, sm: usize, dst: usize, m: usize, i: i32): void {
  const o = (<usize>i) * sizeof<T>();
  const x0 = ndviX(mode, ld2<T>(ir + o), ld2<T>(vis + o));
  const x1 = ndviX(mode, ld2<T>(ir + o + 2 * sizeof<T>()), ld2<T>(vis + o + 2 * sizeof<T>()));
  const pd = dst + (<usize>i) * sizeof<D>();
  st4<D>(pd, x0, x1);
  const bad = ndviBad(mode, x0) | (ndviBad(mode, x1) << 2);
  if (bad != 0 || maskNot4(sm + i)) {
    const fill: f64 = mode == NDVI_SCALED_U8 ? 0.0 : NaN;
    for (let j = 0; j < 4; j++) {
      if (((bad >> j) & 1) != 0 || load<u8>(sm + i + j) == 0) {
        store<u8>(m + i + j, 0);
        store<D>(pd + (<usize>j) * sizeof<D>(), <D>fill);
      }
    }
  }
}

// @ts-ignore: decorator
@inline function ndviStep<T, D>(mode: i32, ir: usize, vis: usize, sm: usize, dst: usize, m: usize, i: i32, lanes: i32): void {
  const fill: f64 = mode == NDVI_SCALED_U8 ? 0.0 : NaN;
  {
    const r = ldn<T>(ir + (<usize>i) * sizeof<T>(), lanes);
    const v = ldn<T>(vis + (<usize>i) * sizeof<T>(), lanes);
    const s = f64x2.add(r, v);
    let q = f64x2.div(f64x2.sub(r, v), s);
    if (mode == NDVI_SCALED_FLOAT) q = f64x2.add(f64x2.mul(q, C100), C100);
    else if (mode == NDVI_SCALED_U8) q = f64x2.add(f64x2.mul(q, C100), C1005);
    const x = v128.bitselect(ZERO, q, f64x2.eq(s, ZERO));
    const pd = dst + (<usize>i) * sizeof<D>();
    stn<D>(pd, x, lanes);
    const bad = (mode == NDVI_SCALED_U8 ? i64x2.bitmask(f64x2.ne(x, x)) & ((1 << lanes) - 1) : nonFinite(x, lanes)) | maskBits(sm + i, lanes);
    if (bad != 0) {
      for (let j = 0; j < lanes; j++) {
        if (((bad >> j) & 1) != 0) {
          if (load<u8>(sm + i + j) == 0 || (mode == NDVI_SCALED_U8 ? isNaN(ext(x, j)) : !isFinite(ext(x, j)))) {
            store<u8>(m + i + j, 0);
            store<D>(pd + (<usize>j) * sizeof<D>(), <D>fill);
          }
        }
      }
    }
  }
}

/**
 * One wasm function per specialised loop (not inlined into the exported dispatchers): V8 compiles a
 * hot function with its optimising tier on its own, so a small function gets there after a call or
 * two where a dispatcher holding every loop took hundreds of milliseconds. Values the loops are
 * specialised for (the NDVI form, Arithmetic's operation and operand shape) travel as type tags:
 * u8, u16, u32, u64 stand for 0, 1, 2, 3 (`tagOf`).
 */
// @ts-ignore: decorator
@inline function tagOf<X>(): i32 {
  return sizeof<X>() == 1 ? 0 : sizeof<X>() == 2 ? 1 : sizeof<X>() == 4 ? 2 : 3;
}

/** The NDVI loop for form M (tag: 0 scientific, 1 scaled float, 2 scaled U8). */
function ndviLoop<T, D, M>(ir: usize, vis: usize, sm: usize, dst: usize, m: usize, n: i32): void {
  const mode = tagOf<M>();
  let i = 0;
  for (; i + 4 <= n; i += 4) ndviStep4<T, D>(mode, ir, vis, sm, dst, m, i);
  for (; i < n; i++) ndviStep<T, D>(mode, ir, vis, sm, dst, m, i, 1);
}

/** Lane j (0 or 1) of x. */
// @ts-ignore: decorator
@inline function ext(x: v128, j: i32): f64 {
  return j == 0 ? f64x2.extract_lane(x, 0) : f64x2.extract_lane(x, 1);
}

/**
 * The scientific form (F32 output) of 8- and 16-bit integer bands in f32x4 lanes, eight pixels per
 * step. Exact: the bands widen to F32 exactly and r - v, r + v (|.| < 2^17) are exact in F32, so
 * the two paths divide the same two binary32 values; the float64 quotient rounded to binary32 is
 * the binary32 quotient (binary64 has at least 2 x 24 + 2 bits: double rounding is innocuous for
 * division, Figueroa 1995). The quotient is finite (s != 0), so only the source mask makes NoData.
 */
function ndviSciSmall<T>(ir: usize, vis: usize, sm: usize, dst: usize, m: usize, n: i32): void {
  const zero = f32x4.splat(0);
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const o = (<usize>i) * sizeof<T>();
    const o4 = o + 4 * sizeof<T>();
    const r0 = ld4f<T>(ir + o);
    const v0 = ld4f<T>(vis + o);
    const r1 = ld4f<T>(ir + o4);
    const v1 = ld4f<T>(vis + o4);
    const s0 = f32x4.add(r0, v0);
    const s1 = f32x4.add(r1, v1);
    const x0 = v128.bitselect(zero, f32x4.div(f32x4.sub(r0, v0), s0), f32x4.eq(s0, zero));
    const x1 = v128.bitselect(zero, f32x4.div(f32x4.sub(r1, v1), s1), f32x4.eq(s1, zero));
    const pd = dst + (<usize>i << 2);
    v128.store(pd, x0);
    v128.store(pd, x1, 16);
    if (load<u64>(sm + i) != 0x0101010101010101) {
      for (let j = 0; j < 8; j++) {
        if (load<u8>(sm + i + j) == 0) {
          store<u8>(m + i + j, 0);
          store<f32>(pd + (<usize>j << 2), NaN);
        }
      }
    }
  }
  for (; i < n; i++) ndviStep<T, f32>(NDVI_SCI, ir, vis, sm, dst, m, i, 1);
}

/**
 * The scaled U8 form of U8 and U16 bands (inputs >= 0, so q = (r - v) / (r + v) is in [-1, 1] and
 * t = q * 100 + 100.5 in [0.5, 200.5]; r + v == 0 gives 0) in f32x4 lanes, eight pixels per step,
 * with a proof and a fallback rather than equal operations: q is the binary32 quotient of exact
 * binary32 operands (error <= 2^-25), then * 100 and + 100.5 in binary32 add at most
 * 100 * 2^-24 and 200.5 * 2^-24, so |t32 - t| < 2^-15; the float64 reference is within 2^-40 of t.
 * Where every lane's t32 is more than 2^-14 from an integer (or its sum is 0), trunc(t32) is the
 * reference's truncation; a step with a lane closer (ties such as 201 vs 199: t = 101 exactly) is
 * recomputed pixel by pixel in float64 (ndviStep), as are the last pixels.
 */
function ndviU8Small<T>(ir: usize, vis: usize, sm: usize, dst: usize, m: usize, n: i32): void {
  const zero = f32x4.splat(0);
  const c100 = f32x4.splat(100);
  const c1005 = f32x4.splat(100.5);
  const near = f32x4.splat(<f32>6.103515625e-5); // 2^-14
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const o = (<usize>i) * sizeof<T>();
    const o4 = o + 4 * sizeof<T>();
    const r0 = ld4f<T>(ir + o);
    const v0 = ld4f<T>(vis + o);
    const r1 = ld4f<T>(ir + o4);
    const v1 = ld4f<T>(vis + o4);
    const s0 = f32x4.add(r0, v0);
    const s1 = f32x4.add(r1, v1);
    const z0 = f32x4.eq(s0, zero);
    const z1 = f32x4.eq(s1, zero);
    const t0 = v128.bitselect(zero, f32x4.add(f32x4.mul(f32x4.div(f32x4.sub(r0, v0), s0), c100), c1005), z0);
    const t1 = v128.bitselect(zero, f32x4.add(f32x4.mul(f32x4.div(f32x4.sub(r1, v1), s1), c100), c1005), z1);
    const n0 = v128.andnot(f32x4.le(f32x4.abs(f32x4.sub(t0, f32x4.nearest(t0))), near), z0);
    const n1 = v128.andnot(f32x4.le(f32x4.abs(f32x4.sub(t1, f32x4.nearest(t1))), near), z1);
    if (v128.any_true(v128.or(n0, n1))) {
      ndviU8Fix<T>(ir, vis, sm, dst, m, i, i + 8);
      continue;
    }
    const w = i16x8.narrow_i32x4_s(i32x4.trunc_sat_f32x4_s(t0), i32x4.trunc_sat_f32x4_s(t1)); // t in [0, 200.5]: the signed conversions are exact
    const pd = dst + i;
    v128.store64_lane(pd, i8x16.narrow_i16x8_u(w, w), 0);
    if (load<u64>(sm + i) != 0x0101010101010101) {
      for (let j = 0; j < 8; j++) {
        if (load<u8>(sm + i + j) == 0) {
          store<u8>(m + i + j, 0);
          store<u8>(pd + j, 0);
        }
      }
    }
  }
  ndviU8Fix<T>(ir, vis, sm, dst, m, i, n);
}

/** Pixels from..to-1 of the scaled U8 form, one by one in float64 (the reference's operations). */
function ndviU8Fix<T>(ir: usize, vis: usize, sm: usize, dst: usize, m: usize, from: i32, to: i32): void {
  for (let i = from; i < to; i++) ndviStep<T, u8>(NDVI_SCALED_U8, ir, vis, sm, dst, m, i, 1);
}

// @ts-ignore: decorator
@inline function ndviOut<T>(mode: i32, ir: usize, vis: usize, sm: usize, dst: usize, m: usize, n: i32): void {
  if (mode == 0 && !isFloat<T>() && sizeof<T>() <= 2) ndviSciSmall<T>(ir, vis, sm, dst, m, n);
  else if (mode == 3 && !isFloat<T>() && !isSigned<T>() && sizeof<T>() <= 2) ndviU8Small<T>(ir, vis, sm, dst, m, n);
  else if (mode == 0) ndviLoop<T, f32, u8>(ir, vis, sm, dst, m, n);
  else if (mode == 1) ndviLoop<T, f32, u16>(ir, vis, sm, dst, m, n);
  else if (mode == 2) ndviLoop<T, f64, u16>(ir, vis, sm, dst, m, n);
  else ndviLoop<T, u8, u32>(ir, vis, sm, dst, m, n);
}

/**
 * NDVI of n pixels: bands `ir` and `vis` of element type `type`, source mask `sm`, output `dst`
 * and output mask `m` (cleared where NoData). mode: 0 scientific F32, 1 scaled F32, 2 scaled F64, 3 scaled U8.
 */
export function localNdvi(type: i32, mode: i32, ir: usize, vis: usize, sm: usize, dst: usize, m: usize, n: i32): void {
  if (type == 0) ndviOut<u8>(mode, ir, vis, sm, dst, m, n);
  else if (type == 1) ndviOut<i8>(mode, ir, vis, sm, dst, m, n);
  else if (type == 2) ndviOut<u16>(mode, ir, vis, sm, dst, m, n);
  else if (type == 3) ndviOut<i16>(mode, ir, vis, sm, dst, m, n);
  else if (type == 4) ndviOut<u32>(mode, ir, vis, sm, dst, m, n);
  else if (type == 5) ndviOut<i32>(mode, ir, vis, sm, dst, m, n);
  else if (type == 6) ndviOut<f32>(mode, ir, vis, sm, dst, m, n);
  else ndviOut<f64>(mode, ir, vis, sm, dst, m, n);
}

// ---- Arithmetic (src/functions/local/arithmetic.ts): plus, minus, multiply, divide.

/** The operation, a run-time value: one well-predicted branch per vector (the f32x4 loops below take the common cases). */
// @ts-ignore: decorator
@inline function arith(op: i32, x: v128, y: v128): v128 {
  if (op == 1) return f64x2.add(x, y);
  if (op == 2) return f64x2.sub(x, y);
  if (op == 3) return f64x2.mul(x, y);
  return f64x2.div(x, y);
}

/**
 * dst = a op b for one band; `shape` 0: both rasters, 1: b is the constant cb, 2: a is the constant ca.
 * The output mask m becomes m AND sa AND sb (the raster operands' masks, read in the same pass; a
 * caller without a mask passes m itself), then NoData (mask 0) where the stored value is not finite;
 * pixels whose mask is 0 are written NaN. Every plane is read once and written once.
 */
/** Whether lane j of the four (or eight) pixels from i is NoData: a bad result or a mask byte 0. */
// @ts-ignore: decorator
@inline function arithNoData(bad: i32, j: i32, m: usize, sa: usize, sb: usize, i: i32): bool {
  const k = <usize>(i + j);
  return ((bad >> j) & 1) != 0 || load<u8>(m + k) == 0 || load<u8>(sa + k) == 0 || load<u8>(sb + k) == 0;
}

/** The four mask bytes from i of m, sa and sb ANDed: 0x01010101 when all are valid (the common case). */
// @ts-ignore: decorator
@inline function masks4(m: usize, sa: usize, sb: usize, i: i32): u32 {
  return load<u32>(m + i) & load<u32>(sa + i) & load<u32>(sb + i);
}

/** Four pixels from i, f64 lanes (any operand type, F32 or F64 output). */
// @ts-ignore: decorator
@inline function arithStep4<T, D>(op: i32, shape: i32, a: usize, va: v128, b: usize, vb: v128, dst: usize, m: usize, sa: usize, sb: usize, i: i32): void {
  const o = (<usize>i) * sizeof<T>();
  const o2 = o + 2 * sizeof<T>();
  const r0 = arith(op, shape == 2 ? va : ld2<T>(a + o), shape == 1 ? vb : ld2<T>(b + o));
  const r1 = arith(op, shape == 2 ? va : ld2<T>(a + o2), shape == 1 ? vb : ld2<T>(b + o2));
  const pd = dst + (<usize>i) * sizeof<D>();
  let bad: i32;
  if (sizeof<D>() == 4) {
    // The stored F32 values: infinite past the F32 range.
    const d = v128.shuffle<i32>(f32x4.demote_f64x2_zero(r0), f32x4.demote_f64x2_zero(r1), 0, 1, 4, 5);
    v128.store(pd, d);
    bad = i32x4.bitmask(f32x4.ne(f32x4.sub(d, d), f32x4.splat(0)));
  } else {
    v128.store(pd, r0);
    v128.store(pd, r1, 16);
    bad = nonFinite(r0, 2) | (nonFinite(r1, 2) << 2);
  }
  if (bad != 0 || masks4(m, sa, sb, i) != 0x01010101) {
    for (let j = 0; j < 4; j++) {
      if (arithNoData(bad, j, m, sa, sb, i)) {
        store<u8>(m + i + j, 0);
        store<D>(pd + (<usize>j) * sizeof<D>(), <D>NaN);
      }
    }
  }
}

/** One pixel (the tail): the float64 operation, stored as D, its finiteness once stored. */
// @ts-ignore: decorator
@inline function arithTail<T, D>(op: i32, shape: i32, a: usize, ca: f64, b: usize, cb: f64, dst: usize, m: usize, sa: usize, sb: usize, i: i32): void {
  const x: f64 = shape == 2 ? ca : <f64>load<T>(a + (<usize>i) * sizeof<T>());
  const y: f64 = shape == 1 ? cb : <f64>load<T>(b + (<usize>i) * sizeof<T>());
  const r: f64 = op == 1 ? x + y : op == 2 ? x - y : op == 3 ? x * y : x / y;
  const pd = dst + (<usize>i) * sizeof<D>();
  store<D>(pd, <D>r);
  const s = <f64>load<D>(pd);
  if (!isFinite(s) || arithNoData(0, 0, m, sa, sb, i)) {
    store<u8>(m + i, 0);
    store<D>(pd, <D>NaN);
  }
}

function arithLoop<T, D>(op: i32, shape: i32, a: usize, ca: f64, b: usize, cb: f64, dst: usize, m: usize, sa: usize, sb: usize, n: i32): void {
  const va = f64x2.splat(ca);
  const vb = f64x2.splat(cb);
  let i = 0;
  for (; i + 4 <= n; i += 4) arithStep4<T, D>(op, shape, a, va, b, vb, dst, m, sa, sb, i);
  for (; i < n; i++) arithTail<T, D>(op, shape, a, ca, b, cb, dst, m, sa, sb, i);
}

// @ts-ignore: decorator
@inline function arithIn<T>(op: i32, shape: i32, a: usize, ca: f64, b: usize, cb: f64, f64out: i32, dst: usize, m: usize, sa: usize, sb: usize, n: i32): void {
  if (f64out != 0) arithLoop<T, f64>(op, shape, a, ca, b, cb, dst, m, sa, sb, n);
  else arithLoop<T, f32>(op, shape, a, ca, b, cb, dst, m, sa, sb, n);
}

/**
 * One band of Arithmetic over n pixels: operation 1..4, raster operands of element type `type`
 * (both rasters the same type), `shape` as arithLoop, output F32 (f64out 0) or F64, output mask m
 * ANDed here with the operands' masks sa and sb (pass m for an operand without one).
 */
export function localArith(
  op: i32,
  type: i32,
  shape: i32,
  a: usize,
  ca: f64,
  b: usize,
  cb: f64,
  f64out: i32,
  dst: usize,
  m: usize,
  sa: usize,
  sb: usize,
  n: i32,
): void {
  if (type == 0) arithIn<u8>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
  else if (type == 1) arithIn<i8>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
  else if (type == 2) arithIn<u16>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
  else if (type == 3) arithIn<i16>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
  else if (type == 4) arithIn<u32>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
  else if (type == 5) arithIn<i32>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
  else if (type == 6) arithIn<f32>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
  else arithIn<f64>(op, shape, a, ca, b, cb, f64out, dst, m, sa, sb, n);
}

// ---- Arithmetic in f32x4 lanes: F32 outputs of operands that are F32 values.

/**
 * Four elements of type T at p as f32x4: F32 as they are; 8- and 16-bit integers converted (exact:
 * every such integer is an F32 value).
 */
// @ts-ignore: decorator
@inline function ld4f<T>(p: usize): v128 {
  if (isFloat<T>()) return v128.load(p);
  if (sizeof<T>() == 1) {
    const b = v128.load32_zero(p);
    const w = isSigned<T>() ? i16x8.extend_low_i8x16_s(b) : i16x8.extend_low_i8x16_u(b);
    return f32x4.convert_i32x4_s(isSigned<T>() ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_low_i16x8_u(w));
  }
  const w = v128.load64_zero(p);
  return f32x4.convert_i32x4_s(isSigned<T>() ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_low_i16x8_u(w));
}

// @ts-ignore: decorator
@inline function arith4(op: i32, x: v128, y: v128): v128 {
  if (op == 1) return f32x4.add(x, y);
  if (op == 2) return f32x4.sub(x, y);
  if (op == 3) return f32x4.mul(x, y);
  return f32x4.div(x, y);
}

/**
 * arithLoop for an F32 output when both operands are F32 values (F32 planes, 8- and 16-bit integer
 * planes, constants that are F32 values): the operation in f32x4 lanes. The result is the one the
 * float64 reference stores: for +, -, *, / of two binary32 values, rounding the exact result to
 * binary64 and then to binary32 gives the binary32 rounding of the exact result (binary64 has at
 * least 2 x 24 + 2 bits; Figueroa, "When is double rounding innocuous?", 1995), overflow included.
 */
/** The f32x4 loop for operation OP (tag + 1: 1 plus .. 4 divide) and operand shape SH (tag). */
function arithLoop4<T, OP, SH>(a: usize, ca: f64, b: usize, cb: f64, dst: usize, m: usize, sa: usize, sb: usize, n: i32): void {
  const op = tagOf<OP>() + 1;
  const shape = tagOf<SH>();
  const va = f32x4.splat(<f32>ca);
  const vb = f32x4.splat(<f32>cb);
  const zero = f32x4.splat(0);
  let i = 0;
  // Sixteen pixels per step: four vectors, one test of the three masks' sixteen bytes.
  const ones = i8x16.splat(1);
  for (; i + 16 <= n; i += 16) {
    const pa = a + (<usize>i) * sizeof<T>();
    const pb = b + (<usize>i) * sizeof<T>();
    const d0 = arith4(op, shape == 2 ? va : ld4f<T>(pa), shape == 1 ? vb : ld4f<T>(pb));
    const d1 = arith4(op, shape == 2 ? va : ld4f<T>(pa + 4 * sizeof<T>()), shape == 1 ? vb : ld4f<T>(pb + 4 * sizeof<T>()));
    const d2 = arith4(op, shape == 2 ? va : ld4f<T>(pa + 8 * sizeof<T>()), shape == 1 ? vb : ld4f<T>(pb + 8 * sizeof<T>()));
    const d3 = arith4(op, shape == 2 ? va : ld4f<T>(pa + 12 * sizeof<T>()), shape == 1 ? vb : ld4f<T>(pb + 12 * sizeof<T>()));
    const pd = dst + (<usize>i << 2);
    v128.store(pd, d0);
    v128.store(pd, d1, 16);
    v128.store(pd, d2, 32);
    v128.store(pd, d3, 48);
    const e0 = f32x4.ne(f32x4.sub(d0, d0), zero);
    const e1 = f32x4.ne(f32x4.sub(d1, d1), zero);
    const e2 = f32x4.ne(f32x4.sub(d2, d2), zero);
    const e3 = f32x4.ne(f32x4.sub(d3, d3), zero);
    const mw = v128.and(v128.and(v128.load(m + i), v128.load(sa + i)), v128.load(sb + i));
    if (!i8x16.all_true(i8x16.eq(mw, ones)) || v128.any_true(v128.or(v128.or(e0, e1), v128.or(e2, e3)))) {
      const bad = i32x4.bitmask(e0) | (i32x4.bitmask(e1) << 4) | (i32x4.bitmask(e2) << 8) | (i32x4.bitmask(e3) << 12);
      for (let j = 0; j < 16; j++) {
        if (arithNoData(bad, j, m, sa, sb, i)) {
          store<u8>(m + i + j, 0);
          store<f32>(pd + (<usize>j << 2), NaN);
        }
      }
    }
  }
  // Eight pixels per step: two vectors, one test of the three masks' eight bytes.
  for (; i + 8 <= n; i += 8) {
    const pa = a + (<usize>i) * sizeof<T>();
    const pb = b + (<usize>i) * sizeof<T>();
    const d0 = arith4(op, shape == 2 ? va : ld4f<T>(pa), shape == 1 ? vb : ld4f<T>(pb));
    const d1 = arith4(op, shape == 2 ? va : ld4f<T>(pa + 4 * sizeof<T>()), shape == 1 ? vb : ld4f<T>(pb + 4 * sizeof<T>()));
    const pd = dst + (<usize>i << 2);
    v128.store(pd, d0);
    v128.store(pd, d1, 16);
    const e0 = f32x4.ne(f32x4.sub(d0, d0), zero);
    const e1 = f32x4.ne(f32x4.sub(d1, d1), zero);
    const mw = load<u64>(m + i) & load<u64>(sa + i) & load<u64>(sb + i);
    if (mw != 0x0101010101010101 || v128.any_true(v128.or(e0, e1))) {
      const bad = i32x4.bitmask(e0) | (i32x4.bitmask(e1) << 4);
      for (let j = 0; j < 8; j++) {
        if (arithNoData(bad, j, m, sa, sb, i)) {
          store<u8>(m + i + j, 0);
          store<f32>(pd + (<usize>j << 2), NaN);
        }
      }
    }
  }
  for (; i < n; i++) arithTail<T, f32>(op, shape, a, ca, b, cb, dst, m, sa, sb, i);
}

// @ts-ignore: decorator
@inline function arith4Of<T>(op: i32, shape: i32, a: usize, ca: f64, b: usize, cb: f64, dst: usize, m: usize, sa: usize, sb: usize, n: i32): void {
  if (shape == 0) {
    if (op == 1) arithLoop4<T, u8, u8>(a, ca, b, cb, dst, m, sa, sb, n);
    else if (op == 2) arithLoop4<T, u16, u8>(a, ca, b, cb, dst, m, sa, sb, n);
    else if (op == 3) arithLoop4<T, u32, u8>(a, ca, b, cb, dst, m, sa, sb, n);
    else arithLoop4<T, u64, u8>(a, ca, b, cb, dst, m, sa, sb, n);
  } else if (shape == 1) {
    if (op == 1) arithLoop4<T, u8, u16>(a, ca, b, cb, dst, m, sa, sb, n);
    else if (op == 2) arithLoop4<T, u16, u16>(a, ca, b, cb, dst, m, sa, sb, n);
    else if (op == 3) arithLoop4<T, u32, u16>(a, ca, b, cb, dst, m, sa, sb, n);
    else arithLoop4<T, u64, u16>(a, ca, b, cb, dst, m, sa, sb, n);
  } else {
    if (op == 1) arithLoop4<T, u8, u32>(a, ca, b, cb, dst, m, sa, sb, n);
    else if (op == 2) arithLoop4<T, u16, u32>(a, ca, b, cb, dst, m, sa, sb, n);
    else if (op == 3) arithLoop4<T, u32, u32>(a, ca, b, cb, dst, m, sa, sb, n);
    else arithLoop4<T, u64, u32>(a, ca, b, cb, dst, m, sa, sb, n);
  }
}

/**
 * localArith for F32 outputs whose operands are F32 values: `type` 0 U8, 1 S8, 2 U16, 3 S16 or 6 F32,
 * constants that are F32 values (the caller checks). Other types: localArith. Masks as localArith.
 */
export function localArithF32(
  op: i32,
  type: i32,
  shape: i32,
  a: usize,
  ca: f64,
  b: usize,
  cb: f64,
  dst: usize,
  m: usize,
  sa: usize,
  sb: usize,
  n: i32,
): void {
  if (type == 0) arith4Of<u8>(op, shape, a, ca, b, cb, dst, m, sa, sb, n);
  else if (type == 1) arith4Of<i8>(op, shape, a, ca, b, cb, dst, m, sa, sb, n);
  else if (type == 2) arith4Of<u16>(op, shape, a, ca, b, cb, dst, m, sa, sb, n);
  else if (type == 3) arith4Of<i16>(op, shape, a, ca, b, cb, dst, m, sa, sb, n);
  else arith4Of<f32>(op, shape, a, ca, b, cb, dst, m, sa, sb, n);
}

/** m[i] = 0 where src[i] == 0 (sixteen bytes per step). */
export function localMaskAnd(m: usize, src: usize, n: i32): void {
  let i = 0;
  const z = i8x16.splat(0);
  for (; i + 16 <= n; i += 16) {
    const s = v128.load(src + i);
    v128.store(m + i, v128.and(v128.load(m + i), v128.not(i8x16.eq(s, z))));
  }
  for (; i < n; i++) if (load<u8>(src + i) == 0) store<u8>(m + i, 0);
}

/** dst[i] = NaN where m[i] == 0; dst F32 (f64out 0) or F64. */
export function localFillNaN(f64out: i32, dst: usize, m: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    if (load<u32>(m + i) == 0x01010101) continue;
    for (let j = i; j < i + 4; j++) if (load<u8>(m + j) == 0) fillOne(f64out, dst, j);
  }
  for (; i < n; i++) if (load<u8>(m + i) == 0) fillOne(f64out, dst, i);
}

// @ts-ignore: decorator
@inline function fillOne(f64out: i32, dst: usize, i: i32): void {
  if (f64out != 0) store<f64>(dst + (<usize>i << 3), NaN);
  else store<f32>(dst + (<usize>i << 2), NaN);
}

// ---- The engine's cast (src/core/pixel-type.ts castPlane), real to real.

/**
 * Integer targets: r = v < 0 ? -floor(0.5 - v) : floor(v + 0.5) (round half away from zero),
 * saturated to [lo, hi]; NaN: mask 0 (the value stays 0). Float targets: the typed array's
 * conversion; NaN: mask 0.
 */
/** Integer targets: round half away from zero, saturate to [lo, hi]; float targets: the value. */
// @ts-ignore: decorator
@inline function castValue<D>(v: v128, vlo: v128, vhi: v128): v128 {
  if (isFloat<D>()) return v;
  const neg = f64x2.lt(v, ZERO);
  const up = f64x2.floor(f64x2.add(v, HALF));
  const down = f64x2.neg(f64x2.floor(f64x2.sub(HALF, v)));
  let r = v128.bitselect(down, up, neg);
  r = v128.bitselect(vlo, r, f64x2.lt(r, vlo));
  return v128.bitselect(vhi, r, f64x2.gt(r, vhi));
}

/** Four values from i. */
// @ts-ignore: decorator
@inline function castStep4<S, D>(src: usize, dst: usize, m: usize, vlo: v128, vhi: v128, i: i32): void {
  const o = (<usize>i) * sizeof<S>();
  const v0 = ld2<S>(src + o);
  const v1 = ld2<S>(src + o + 2 * sizeof<S>());
  st4<D>(dst + (<usize>i) * sizeof<D>(), castValue<D>(v0, vlo, vhi), castValue<D>(v1, vlo, vhi));
  if (isFloat<S>()) {
    const nan = i64x2.bitmask(f64x2.ne(v0, v0)) | (i64x2.bitmask(f64x2.ne(v1, v1)) << 2);
    if (nan != 0) for (let j = 0; j < 4; j++) if (((nan >> j) & 1) != 0) store<u8>(m + i + j, 0);
  }
}

// @ts-ignore: decorator
@inline function castStep<S, D>(src: usize, dst: usize, m: usize, vlo: v128, vhi: v128, i: i32, lanes: i32): void {
  {
    const v = ldn<S>(src + (<usize>i) * sizeof<S>(), lanes);
    stn<D>(dst + (<usize>i) * sizeof<D>(), castValue<D>(v, vlo, vhi), lanes);
    if (isFloat<S>()) {
      const nan = i64x2.bitmask(f64x2.ne(v, v)) & ((1 << lanes) - 1);
      if (nan != 0) {
        if ((nan & 1) != 0) store<u8>(m + i, 0);
        if ((nan & 2) != 0) store<u8>(m + i + 1, 0);
      }
    }
  }
}

function castLoop<S, D>(src: usize, dst: usize, m: usize, n: i32, lo: f64, hi: f64): void {
  const vlo = f64x2.splat(lo);
  const vhi = f64x2.splat(hi);
  let i = 0;
  for (; i + 4 <= n; i += 4) castStep4<S, D>(src, dst, m, vlo, vhi, i);
  for (; i < n; i++) castStep<S, D>(src, dst, m, vlo, vhi, i, 1);
}

// @ts-ignore: decorator
@inline function castFrom<S>(to: i32, src: usize, dst: usize, m: usize, n: i32, lo: f64, hi: f64): void {
  if (to == 0) castLoop<S, u8>(src, dst, m, n, lo, hi);
  else if (to == 1) castLoop<S, i8>(src, dst, m, n, lo, hi);
  else if (to == 2) castLoop<S, u16>(src, dst, m, n, lo, hi);
  else if (to == 3) castLoop<S, i16>(src, dst, m, n, lo, hi);
  else if (to == 4) castLoop<S, u32>(src, dst, m, n, lo, hi);
  else if (to == 5) castLoop<S, i32>(src, dst, m, n, lo, hi);
  else if (to == 6) castLoop<S, f32>(src, dst, m, n, lo, hi);
  else castLoop<S, f64>(src, dst, m, n, lo, hi);
}

/** Cast n values of element type `from` at src into element type `to` at dst (saturating at [lo, hi] for integers). */
export function localCast(from: i32, to: i32, src: usize, dst: usize, m: usize, n: i32, lo: f64, hi: f64): void {
  if (from == 0) castFrom<u8>(to, src, dst, m, n, lo, hi);
  else if (from == 1) castFrom<i8>(to, src, dst, m, n, lo, hi);
  else if (from == 2) castFrom<u16>(to, src, dst, m, n, lo, hi);
  else if (from == 3) castFrom<i16>(to, src, dst, m, n, lo, hi);
  else if (from == 4) castFrom<u32>(to, src, dst, m, n, lo, hi);
  else if (from == 5) castFrom<i32>(to, src, dst, m, n, lo, hi);
  else if (from == 6) castFrom<f32>(to, src, dst, m, n, lo, hi);
  else castFrom<f64>(to, src, dst, m, n, lo, hi);
}

// ---- Stretch, the linear mapping (src/functions/radiometric/stretch.ts linearFloat).

/**
 * k (f64 at k): [lo, hi, span, outMin, range, top, bottom, tlo, thi] where span = hi - lo,
 * range = outMax - outMin, top/bottom the (rounded, saturated) outputs past the cut-offs and
 * [tlo, thi] the integer target's range. lo < v < hi: x = outMin + range * ((v - lo) / span),
 * rounded half up (floor(x + 0.5)) and saturated for integer targets; v >= hi: top; v <= lo:
 * bottom; NaN: mask 0 and the output pixel is left as it was (the lane is written back).
 */
/** The output lanes of input lanes v (NaN lanes: whatever; the caller does not store them). */
// @ts-ignore: decorator
@inline function stretchValue<D>(
  v: v128,
  lo: v128,
  hi: v128,
  span: v128,
  outMin: v128,
  range: v128,
  top: v128,
  bottom: v128,
  tlo: v128,
  thi: v128,
): v128 {
  let x = f64x2.add(outMin, f64x2.mul(range, f64x2.div(f64x2.sub(v, lo), span)));
  if (!isFloat<D>()) {
    x = f64x2.floor(f64x2.add(x, HALF));
    x = v128.bitselect(tlo, x, f64x2.lt(x, tlo));
    x = v128.bitselect(thi, x, f64x2.gt(x, thi));
  }
  const inside = v128.and(f64x2.lt(v, hi), f64x2.gt(v, lo));
  return v128.bitselect(x, v128.bitselect(top, bottom, f64x2.ge(v, hi)), inside);
}

/** Four pixels from i; false (nothing written) when one is NaN (the caller takes them one by one). */
// @ts-ignore: decorator
@inline function stretchStep4<S, D>(
  src: usize,
  dst: usize,
  lo: v128,
  hi: v128,
  span: v128,
  outMin: v128,
  range: v128,
  top: v128,
  bottom: v128,
  tlo: v128,
  thi: v128,
  i: i32,
): bool {
  const o = (<usize>i) * sizeof<S>();
  const v0 = ld2<S>(src + o);
  const v1 = ld2<S>(src + o + 2 * sizeof<S>());
  if (i64x2.bitmask(v128.or(f64x2.ne(v0, v0), f64x2.ne(v1, v1))) != 0) return false;
  st4<D>(
    dst + (<usize>i) * sizeof<D>(),
    stretchValue<D>(v0, lo, hi, span, outMin, range, top, bottom, tlo, thi),
    stretchValue<D>(v1, lo, hi, span, outMin, range, top, bottom, tlo, thi),
  );
  return true;
}

// @ts-ignore: decorator
@inline function stretchStep<S, D>(
  src: usize,
  dst: usize,
  m: usize,
  lo: v128,
  hi: v128,
  span: v128,
  outMin: v128,
  range: v128,
  top: v128,
  bottom: v128,
  tlo: v128,
  thi: v128,
  i: i32,
  lanes: i32,
): void {
  {
    const v = ldn<S>(src + (<usize>i) * sizeof<S>(), lanes);
    const pd = dst + (<usize>i) * sizeof<D>();
    const x = stretchValue<D>(v, lo, hi, span, outMin, range, top, bottom, tlo, thi);
    const nan = i64x2.bitmask(f64x2.ne(v, v)) & ((1 << lanes) - 1);
    if (nan == 0) stn<D>(pd, x, lanes);
    else {
      // NaN lanes: mask 0, output untouched; the other lane is stored alone.
      for (let j = 0; j < lanes; j++) {
        if (((nan >> j) & 1) != 0) store<u8>(m + i + j, 0);
        else stn<D>(pd + (<usize>j) * sizeof<D>(), j == 0 ? x : f64x2.splat(f64x2.extract_lane(x, 1)), 1);
      }
    }
  }
}

function stretchLoop<S, D>(src: usize, dst: usize, m: usize, n: i32, k: usize): void {
  const lo = v128.load64_splat(k);
  const hi = v128.load64_splat(k, 8);
  const span = v128.load64_splat(k, 16);
  const outMin = v128.load64_splat(k, 24);
  const range = v128.load64_splat(k, 32);
  const top = v128.load64_splat(k, 40);
  const bottom = v128.load64_splat(k, 48);
  const tlo = v128.load64_splat(k, 56);
  const thi = v128.load64_splat(k, 64);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    if (!stretchStep4<S, D>(src, dst, lo, hi, span, outMin, range, top, bottom, tlo, thi, i)) {
      for (let j = i; j < i + 4; j++) stretchStep<S, D>(src, dst, m, lo, hi, span, outMin, range, top, bottom, tlo, thi, j, 1);
    }
  }
  for (; i < n; i++) stretchStep<S, D>(src, dst, m, lo, hi, span, outMin, range, top, bottom, tlo, thi, i, 1);
}

// @ts-ignore: decorator
@inline function stretchFrom<S>(to: i32, src: usize, dst: usize, m: usize, n: i32, k: usize): void {
  if (to == 0) stretchLoop<S, u8>(src, dst, m, n, k);
  else if (to == 1) stretchLoop<S, i8>(src, dst, m, n, k);
  else if (to == 2) stretchLoop<S, u16>(src, dst, m, n, k);
  else if (to == 3) stretchLoop<S, i16>(src, dst, m, n, k);
  else if (to == 4) stretchLoop<S, u32>(src, dst, m, n, k);
  else if (to == 5) stretchLoop<S, i32>(src, dst, m, n, k);
  else if (to == 6) stretchLoop<S, f32>(src, dst, m, n, k);
  else stretchLoop<S, f64>(src, dst, m, n, k);
}

/** The linear stretch of n pixels of element type `from` into element type `to`; constants at k (stretchLoop). */
export function localStretchLinear(from: i32, to: i32, src: usize, dst: usize, m: usize, n: i32, k: usize): void {
  if (from == 4) stretchFrom<u32>(to, src, dst, m, n, k);
  else if (from == 5) stretchFrom<i32>(to, src, dst, m, n, k);
  else if (from == 6) stretchFrom<f32>(to, src, dst, m, n, k);
  else stretchFrom<f64>(to, src, dst, m, n, k);
}

// ---- The expression engine's register programs (src/functions/expr/evaluate.ts).

/** Pixels per chunk: each register is a strip of CHUNK f64 (8 KiB), so a program's registers stay in cache. */
export const LOCAL_EXPR_CHUNK: i32 = 1024;

// Opcodes: ops.ts's, plus the fused normalised difference (evaluate.ts Mode.ND).
const OP_LOAD: i32 = 1;
const OP_NEG: i32 = 10;
const OP_ABS: i32 = 11;
const OP_SQRT: i32 = 12;
const OP_SQUARE: i32 = 13;
const OP_INT: i32 = 32;
const OP_FLOAT: i32 = 33;
const OP_FLOOR: i32 = 34;
const OP_CEIL: i32 = 35;
const OP_BOOL_NOT: i32 = 36;
const OP_IS_NULL: i32 = 38;
const OP_ADD: i32 = 50;
const OP_SUB: i32 = 51;
const OP_MUL: i32 = 52;
const OP_DIV: i32 = 53;
const OP_DIV_ZERO: i32 = 54;
const OP_FLOOR_DIV: i32 = 55;
const OP_EQ: i32 = 60;
const OP_NE: i32 = 61;
const OP_LT: i32 = 62;
const OP_LE: i32 = 63;
const OP_GT: i32 = 64;
const OP_GE: i32 = 65;
const OP_BOOL_AND: i32 = 70;
const OP_BOOL_OR: i32 = 71;
const OP_BOOL_XOR: i32 = 72;
const OP_CON: i32 = 90;
const OP_SET_NULL: i32 = 91;
/** Con with two operands (no false value): the glue's code 1090. */
const OP_CON2: i32 = 1090;
const OP_ND: i32 = 200;
const OP_ND_ZERO: i32 = 201;

/** 1 where the condition lanes hold, else 0; NaN where `nan` lanes hold. */
// @ts-ignore: decorator
@inline function boolOf(cond: v128, nan: v128): v128 {
  return v128.bitselect(NAN2, v128.bitselect(ONE, ZERO, cond), nan);
}

// @ts-ignore: decorator
@inline function isNan2(x: v128): v128 {
  return f64x2.ne(x, x);
}

/** Address of register r. */
// @ts-ignore: decorator
@inline function reg(regs: usize, r: i32): usize {
  return regs + (<usize>r) * (<usize>LOCAL_EXPR_CHUNK << 3);
}

/** Lanes where x or y is NaN. */
// @ts-ignore: decorator
@inline function nan2(x: v128, y: v128): v128 {
  return v128.or(isNan2(x), isNan2(y));
}

/** (x - y) / (x + y), `zero` where x + y is 0. */
// @ts-ignore: decorator
@inline function ndOf(x: v128, y: v128, zero: v128): v128 {
  const s = f64x2.add(x, y);
  return v128.bitselect(zero, f64x2.div(f64x2.sub(x, y), s), f64x2.eq(s, ZERO));
}

/**
 * Run one step over len pixels of registers d = op(a, b, c), two lanes per vector; the same
 * expressions as evaluate.ts. One plain loop per op (the dispatch is per step and chunk). An odd
 * last pixel is computed with the lane past it, inside the register (its value is never used).
 */
function exprStep(op: i32, d: usize, a: usize, b: usize, c: usize, len: i32): void {
  const end = (<usize>(len + 1) >> 1) << 4;
  switch (op) {
    case OP_NEG:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, f64x2.neg(x));
      }
      break;
    case OP_ABS:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, f64x2.abs(x));
      }
      break;
    case OP_SQRT:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, f64x2.sqrt(x));
      }
      break;
    case OP_SQUARE:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, f64x2.mul(x, x));
      }
      break;
    case OP_INT:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, f64x2.trunc(x));
      }
      break;
    case OP_FLOAT:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, x);
      }
      break;
    case OP_FLOOR:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, f64x2.floor(x));
      }
      break;
    case OP_CEIL:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, f64x2.ceil(x));
      }
      break;
    case OP_BOOL_NOT:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, v128.bitselect(x, v128.bitselect(ONE, ZERO, f64x2.eq(x, ZERO)), isNan2(x)));
      }
      break;
    case OP_IS_NULL:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); v128.store(d + o, v128.bitselect(ONE, ZERO, isNan2(x)));
      }
      break;
    case OP_ADD:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, f64x2.add(x, y));
      }
      break;
    case OP_SUB:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, f64x2.sub(x, y));
      }
      break;
    case OP_MUL:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, f64x2.mul(x, y));
      }
      break;
    case OP_DIV:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, v128.bitselect(NAN2, f64x2.div(x, y), f64x2.eq(y, ZERO)));
      }
      break;
    case OP_DIV_ZERO:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, v128.bitselect(ZERO, f64x2.div(x, y), f64x2.eq(y, ZERO)));
      }
      break;
    case OP_FLOOR_DIV:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, v128.bitselect(NAN2, f64x2.floor(f64x2.div(x, y)), f64x2.eq(y, ZERO)));
      }
      break;
    case OP_EQ:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(f64x2.eq(x, y), nan2(x, y)));
      }
      break;
    case OP_NE:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(f64x2.ne(x, y), nan2(x, y)));
      }
      break;
    case OP_LT:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(f64x2.lt(x, y), nan2(x, y)));
      }
      break;
    case OP_LE:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(f64x2.le(x, y), nan2(x, y)));
      }
      break;
    case OP_GT:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(f64x2.gt(x, y), nan2(x, y)));
      }
      break;
    case OP_GE:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(f64x2.ge(x, y), nan2(x, y)));
      }
      break;
    case OP_BOOL_AND:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(v128.and(f64x2.ne(x, ZERO), f64x2.ne(y, ZERO)), nan2(x, y)));
      }
      break;
    case OP_BOOL_OR:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(v128.or(f64x2.ne(x, ZERO), f64x2.ne(y, ZERO)), nan2(x, y)));
      }
      break;
    case OP_BOOL_XOR:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, boolOf(v128.xor(f64x2.ne(x, ZERO), f64x2.ne(y, ZERO)), nan2(x, y)));
      }
      break;
    case OP_CON:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); const z = v128.load(c + o); v128.store(d + o, v128.bitselect(x, v128.bitselect(y, z, f64x2.ne(x, ZERO)), isNan2(x)));
      }
      break;
    case OP_CON2:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, v128.bitselect(NAN2, y, v128.or(isNan2(x), f64x2.eq(x, ZERO))));
      }
      break;
    case OP_SET_NULL:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, v128.bitselect(NAN2, y, v128.or(isNan2(x), f64x2.ne(x, ZERO))));
      }
      break;
    case OP_ND:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, ndOf(x, y, NAN2));
      }
      break;
    case OP_ND_ZERO:
      for (let o: usize = 0; o < end; o += 16) {
        const x = v128.load(a + o); const y = v128.load(b + o); v128.store(d + o, ndOf(x, y, ZERO));
      }
      break;
  }
}

/** LOAD: the plane's values as f64; with `nanMask`, pixels whose mask byte is 0 become NaN. */
// @ts-ignore: decorator
@inline function exprLoadStep<T>(d: usize, src: usize, sm: usize, nanMask: i32, i: i32, lanes: i32): void {
  {
    const v = ldn<T>(src + (<usize>i) * sizeof<T>(), lanes);
    v128.store(d + (<usize>i << 3), v);
    if (nanMask != 0 && maskBits(sm + i, lanes) != 0) {
      for (let j = 0; j < lanes; j++) if (load<u8>(sm + i + j) == 0) store<f64>(d + (<usize>(i + j) << 3), NaN);
    }
  }
}

// @ts-ignore: decorator
@inline function exprLoadStep4<T>(d: usize, src: usize, sm: usize, nanMask: i32, i: i32): void {
  const o = (<usize>i) * sizeof<T>();
  v128.store(d + (<usize>i << 3), ld2<T>(src + o));
  v128.store(d + (<usize>i << 3), ld2<T>(src + o + 2 * sizeof<T>()), 16);
  if (nanMask != 0 && maskNot4(sm + i)) {
    for (let j = 0; j < 4; j++) if (load<u8>(sm + i + j) == 0) store<f64>(d + (<usize>(i + j) << 3), NaN);
  }
}

// @ts-ignore: decorator
@inline function exprLoadT<T>(d: usize, src: usize, sm: usize, nanMask: i32, len: i32): void {
  let i = 0;
  for (; i + 4 <= len; i += 4) exprLoadStep4<T>(d, src, sm, nanMask, i);
  for (; i < len; i++) exprLoadStep<T>(d, src, sm, nanMask, i, 1);
}

function exprLoad(type: i32, d: usize, src: usize, sm: usize, nanMask: i32, len: i32): void {
  if (type == 0) exprLoadT<u8>(d, src, sm, nanMask, len);
  else if (type == 1) exprLoadT<i8>(d, src, sm, nanMask, len);
  else if (type == 2) exprLoadT<u16>(d, src, sm, nanMask, len);
  else if (type == 3) exprLoadT<i16>(d, src, sm, nanMask, len);
  else if (type == 4) exprLoadT<u32>(d, src, sm, nanMask, len);
  else if (type == 5) exprLoadT<i32>(d, src, sm, nanMask, len);
  else if (type == 6) exprLoadT<f32>(d, src, sm, nanMask, len);
  else exprLoadT<f64>(d, src, sm, nanMask, len);
}

/**
 * The output band (F32 or F64): dst = v where |v| < inf (the smallest f64 that is infinite once
 * stored) and the mask is not 0; else mask 0 and dst NaN (evaluate.ts storeFloat with fill).
 */
// @ts-ignore: decorator
@inline function exprStoreStep<D>(dst: usize, r: usize, m: usize, lo: v128, hi: v128, inf: f64, i: i32, lanes: i32): void {
  {
    const v = v128.load(r + (<usize>i << 3));
    const pd = dst + (<usize>i) * sizeof<D>();
    stn<D>(pd, v, lanes);
    const ok = v128.and(f64x2.gt(v, lo), f64x2.lt(v, hi));
    const bad = ((~i64x2.bitmask(ok)) & ((1 << lanes) - 1)) | maskBits(m + i, lanes);
    if (bad != 0) {
      for (let j = 0; j < lanes; j++) {
        const x = ext(v, j);
        if (!(x > -inf && x < inf) || load<u8>(m + i + j) == 0) {
          store<u8>(m + i + j, 0);
          store<D>(pd + (<usize>j) * sizeof<D>(), <D>NaN);
        }
      }
    }
  }
}

// @ts-ignore: decorator
@inline function exprStoreStep4<D>(dst: usize, r: usize, m: usize, lo: v128, hi: v128, i: i32): void {
  const v0 = v128.load(r + (<usize>i << 3));
  const v1 = v128.load(r + (<usize>i << 3), 16);
  const pd = dst + (<usize>i) * sizeof<D>();
  st4<D>(pd, v0, v1);
  const ok = i64x2.bitmask(v128.and(f64x2.gt(v0, lo), f64x2.lt(v0, hi))) | (i64x2.bitmask(v128.and(f64x2.gt(v1, lo), f64x2.lt(v1, hi))) << 2);
  if (ok != 15 || maskNot4(m + i)) {
    for (let j = 0; j < 4; j++) {
      if (((ok >> j) & 1) == 0 || load<u8>(m + i + j) == 0) {
        store<u8>(m + i + j, 0);
        store<D>(pd + (<usize>j) * sizeof<D>(), <D>NaN);
      }
    }
  }
}

// @ts-ignore: decorator
@inline function exprStoreT<D>(dst: usize, r: usize, m: usize, len: i32, inf: f64): void {
  const hi = f64x2.splat(inf);
  const lo = f64x2.splat(-inf);
  let i = 0;
  for (; i + 4 <= len; i += 4) exprStoreStep4<D>(dst, r, m, lo, hi, i);
  for (; i < len; i++) exprStoreStep<D>(dst, r, m, lo, hi, inf, i, 1);
}

/**
 * Run a program over n pixels. `prog`: `steps` x 5 i32 [op, dst, a, b, c] (register numbers;
 * LOAD: a = slot); `regs`: the registers, LOCAL_EXPR_CHUNK f64 each (constant registers filled by
 * the caller); `slots`: per slot 3 i32 [type, plane, mask]; strict != 0: the output mask is also
 * cleared where any of the `nStrict` masks at `strictMasks` (i32 addresses) is 0, and LOAD leaves
 * masked values as they are; `out` the output register, `dst` the band (f64out: F64, else F32), `m` its mask.
 */
export function localExprRun(
  prog: usize,
  steps: i32,
  regs: usize,
  slots: usize,
  strict: i32,
  strictMasks: usize,
  nStrict: i32,
  out: i32,
  f64out: i32,
  dst: usize,
  m: usize,
  n: i32,
  inf: f64,
): void {
  for (let start = 0; start < n; start += LOCAL_EXPR_CHUNK) {
    const len = min(LOCAL_EXPR_CHUNK, n - start);
    for (let s = 0; s < steps; s++) {
      const p = prog + (<usize>s) * 20;
      const op = load<i32>(p);
      const d = reg(regs, load<i32>(p, 4));
      if (op == OP_LOAD) {
        const slot = slots + (<usize>load<i32>(p, 8)) * 12;
        const type = load<i32>(slot);
        const size: usize = type <= 1 ? 1 : type <= 3 ? 2 : type <= 6 ? 4 : 8;
        exprLoad(type, d, <usize>load<i32>(slot, 4) + (<usize>start) * size, <usize>load<i32>(slot, 8) + start, strict == 0 ? 1 : 0, len);
      } else {
        exprStep(op, d, reg(regs, load<i32>(p, 8)), reg(regs, load<i32>(p, 12)), reg(regs, load<i32>(p, 16)), len);
      }
    }
    const mm = m + start;
    if (strict != 0) for (let k = 0; k < nStrict; k++) localMaskAnd(mm, <usize>load<i32>(strictMasks + (<usize>k << 2)) + start, len);
    if (f64out != 0) exprStoreT<f64>(dst + (<usize>start << 3), reg(regs, out), mm, len, inf);
    else exprStoreT<f32>(dst + (<usize>start << 2), reg(regs, out), mm, len, inf);
  }
}

// ---- The expression engine's most common program, fused: `(x - y) / (x + y)` of two bands.

/**
 * The program LOAD x, LOAD y, ND(x, y) (BandArithmetic's and RasterCalculator's normalised
 * differences) in one pass over the planes: what localExprRun computes for it, without registers.
 * v = x + y == 0 ? zero : (x - y) / (x + y) in float64; the pixel is NoData (mask 0, value NaN)
 * where the output mask or either band's mask is 0 (a masked operand is NaN in the interpreter,
 * and NaN propagates through ND; strict programs clear the mask instead: the same outcome), or
 * where v is not finite once stored (|v| >= inf, or NaN; an F32 band's `inf` is 2^128 - 2^103, the
 * smallest float64 stored as infinity, so its lanes are tested once stored).
 */
function exprNdLoop<T, D>(zeroNaN: i32, xp: usize, xm: usize, yp: usize, ym: usize, dst: usize, m: usize, n: i32, inf: f64): void {
  const zero = zeroNaN != 0 ? NAN2 : ZERO;
  const hi = f64x2.splat(inf);
  const lo = f64x2.splat(-inf);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = (<usize>i) * sizeof<T>();
    const o2 = o + 2 * sizeof<T>();
    const v0 = ndOf(ld2<T>(xp + o), ld2<T>(yp + o), zero);
    const v1 = ndOf(ld2<T>(xp + o2), ld2<T>(yp + o2), zero);
    const pd = dst + (<usize>i) * sizeof<D>();
    let bad: i32;
    if (sizeof<D>() == 4) {
      // F32: |v| < inf (F32_INF) exactly when the stored binary32 value is finite: test the stored lanes.
      const d = v128.shuffle<i32>(f32x4.demote_f64x2_zero(v0), f32x4.demote_f64x2_zero(v1), 0, 1, 4, 5);
      v128.store(pd, d);
      bad = i32x4.bitmask(f32x4.ne(f32x4.sub(d, d), f32x4.splat(0)));
    } else {
      st4<D>(pd, v0, v1);
      bad = 15 & ~(i64x2.bitmask(v128.and(f64x2.gt(v0, lo), f64x2.lt(v0, hi))) | (i64x2.bitmask(v128.and(f64x2.gt(v1, lo), f64x2.lt(v1, hi))) << 2));
    }
    if (bad != 0 || masks4(m, xm, ym, i) != 0x01010101) {
      for (let j = 0; j < 4; j++) {
        if (arithNoData(bad, j, m, xm, ym, i)) {
          store<u8>(m + i + j, 0);
          store<D>(pd + (<usize>j) * sizeof<D>(), <D>NaN);
        }
      }
    }
  }
  const z: f64 = zeroNaN != 0 ? NaN : 0.0;
  for (; i < n; i++) {
    const x = <f64>load<T>(xp + (<usize>i) * sizeof<T>());
    const y = <f64>load<T>(yp + (<usize>i) * sizeof<T>());
    const s = x + y;
    const v = s == 0 ? z : (x - y) / s;
    const pd = dst + (<usize>i) * sizeof<D>();
    if (v > -inf && v < inf && !arithNoData(0, 0, m, xm, ym, i)) store<D>(pd, <D>v);
    else {
      store<u8>(m + i, 0);
      store<D>(pd, <D>NaN);
    }
  }
}

/**
 * exprNdLoop for 8- and 16-bit bands into F32 in f32x4 lanes, eight pixels per step: exact, as
 * ndviSciSmall (x - y and x + y are exact in F32; the float64 quotient rounded to binary32 is the
 * binary32 quotient). The quotient is finite; only the zero policy's NaN and the masks make NoData.
 */
function exprNdSmall<T>(zeroNaN: i32, xp: usize, xm: usize, yp: usize, ym: usize, dst: usize, m: usize, n: i32, inf: f64): void {
  const fz = f32x4.splat(0);
  const zero = zeroNaN != 0 ? f32x4.splat(NaN) : fz;
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const o = (<usize>i) * sizeof<T>();
    const o4 = o + 4 * sizeof<T>();
    const x0 = ld4f<T>(xp + o);
    const y0 = ld4f<T>(yp + o);
    const x1 = ld4f<T>(xp + o4);
    const y1 = ld4f<T>(yp + o4);
    const s0 = f32x4.add(x0, y0);
    const s1 = f32x4.add(x1, y1);
    const v0 = v128.bitselect(zero, f32x4.div(f32x4.sub(x0, y0), s0), f32x4.eq(s0, fz));
    const v1 = v128.bitselect(zero, f32x4.div(f32x4.sub(x1, y1), s1), f32x4.eq(s1, fz));
    const pd = dst + (<usize>i << 2);
    v128.store(pd, v0);
    v128.store(pd, v1, 16);
    const bad = i32x4.bitmask(f32x4.ne(v0, v0)) | (i32x4.bitmask(f32x4.ne(v1, v1)) << 4);
    const mw = load<u64>(m + i) & load<u64>(xm + i) & load<u64>(ym + i);
    if (bad != 0 || mw != 0x0101010101010101) {
      for (let j = 0; j < 8; j++) {
        if (arithNoData(bad, j, m, xm, ym, i)) {
          store<u8>(m + i + j, 0);
          store<f32>(pd + (<usize>j << 2), NaN);
        }
      }
    }
  }
  exprNdLoop<T, f32>(zeroNaN, xp + (<usize>i) * sizeof<T>(), xm + i, yp + (<usize>i) * sizeof<T>(), ym + i, dst + (<usize>i << 2), m + i, n - i, inf);
}

// @ts-ignore: decorator
@inline function exprNdOf<T>(zeroNaN: i32, xp: usize, xm: usize, yp: usize, ym: usize, f64out: i32, dst: usize, m: usize, n: i32, inf: f64): void {
  if (f64out != 0) exprNdLoop<T, f64>(zeroNaN, xp, xm, yp, ym, dst, m, n, inf);
  else if (!isFloat<T>() && sizeof<T>() <= 2) exprNdSmall<T>(zeroNaN, xp, xm, yp, ym, dst, m, n, inf);
  else exprNdLoop<T, f32>(zeroNaN, xp, xm, yp, ym, dst, m, n, inf);
}

/**
 * The fused normalised difference of bands x and y (both of element type `type`, masks xm, ym)
 * into dst (F32, or F64 with f64out) with mask m; zeroNaN: the DIV policy (x + y == 0 is NoData)
 * rather than DIV_ZERO's 0; `inf` the band's storeFloat bound.
 */
export function localExprNd(type: i32, zeroNaN: i32, xp: usize, xm: usize, yp: usize, ym: usize, f64out: i32, dst: usize, m: usize, n: i32, inf: f64): void {
  if (type == 0) exprNdOf<u8>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
  else if (type == 1) exprNdOf<i8>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
  else if (type == 2) exprNdOf<u16>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
  else if (type == 3) exprNdOf<i16>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
  else if (type == 4) exprNdOf<u32>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
  else if (type == 5) exprNdOf<i32>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
  else if (type == 6) exprNdOf<f32>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
  else exprNdOf<f64>(zeroNaN, xp, xm, yp, ym, f64out, dst, m, n, inf);
}

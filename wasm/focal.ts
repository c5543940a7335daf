/**
 * Focal row kernels in WebAssembly with explicit SIMD128 (AssemblyScript): Convolution (3x3, 5x5,
 * any kernel as taps, separable kernels as two 1-D passes) and focal Statistics over 3x3 windows
 * (Mean, StandardDeviation, Min, Max). Each call computes one output row's interior span (every
 * window inside the input block; src/functions/focal/convolution.ts and statistics.ts decide the
 * span and compute every other pixel in TypeScript), reading F32 values and writing an F32 row.
 *
 * Precision, against the TypeScript kernels (the reference):
 *   - Convolution computes in f32x4 lanes (four pixels per vector): the weights are rounded to f32,
 *     each product and partial sum is rounded to f32. 3x3 and 5x5 kernels sum each kernel row,
 *     then the rows, as short trees (shorter dependency chains than one running sum); rank-one
 *     kernels go down the column first, then along the row; other kernels sum their taps in
 *     row-major order. The TypeScript kernel sums in float64 and rounds once, so results differ by
 *     at most about (taps + 2) * 2^-24 * sum |w_i x_i| (the bound of any f32 summation order of
 *     `taps` products, plus the weights' and the store's rounding; src/wasm/focal.test.ts checks
 *     it). A pixel's result does not depend on where its row or tile starts (the vector loops and
 *     the scalar tails evaluate the same expression), so tiled renders equal whole ones. Decision: f32 lanes, not f64: twice the pixels
 *     per instruction, which the 3x3 target needs; an absolute bound is the honest measure for
 *     mixed-sign kernels (edge detectors cancel, so ULPs of the result mean nothing).
 *     Intermediate f32 overflow: products or partial sums beyond 3.4e38 become Infinity where the
 *     float64 sum might have come back into range (values within 1e30 of zero never do).
 *   - Mean and StandardDeviation compute in f64x2 lanes with the TypeScript kernel's operations in
 *     its order (three-row column sums, then the three columns; the count product and the
 *     quotient), so the results are bit for bit the TypeScript kernel's. Lanes whose variance the
 *     TypeScript kernel would recompute by two passes (cancellation) are written as NaN and
 *     counted; the caller recomputes them (and every NaN) in TypeScript.
 *   - Min and Max are f32x4 pmin/pmax with the TypeScript comparisons' operands in its order
 *     (`b < a ? b : a`), so NaN and signed zeros come out as they do there: bit for bit.
 *
 * Every function returns a count that is 0 when no result is NaN (StandardDeviation: NaN or to be
 * recomputed), else positive (pixels or vector positions holding NaN); the caller then scans the
 * row and turns those into NoData (or recomputes them).
 * Pointers are byte addresses in this module's memory (src/wasm/arena.ts; nothing here allocates);
 * `stride` is the input block's row length in bytes; `n` output pixels are written from `dst`.
 */

// ---- Small helpers.

/** Lanes of a comparison mask that are set (0..4 for f32x4 masks, 0..2 for f64x2 masks counted as i64). */
// @ts-ignore: decorator
@inline function count32(m: v128): i32 {
  return i32x4.extract_lane(m, 0) + i32x4.extract_lane(m, 1) + i32x4.extract_lane(m, 2) + i32x4.extract_lane(m, 3);
}

/** The f64 weight `k` at `w` as an f32x4 splat. */
// @ts-ignore: decorator
@inline function wsplat(w: usize, k: i32): v128 {
  return f32x4.splat(<f32>load<f64>(w + (<usize>k << 3)));
}

/** NaN lanes of an f32x4 (all ones where NaN). */
// @ts-ignore: decorator
@inline function nan4(r: v128): v128 {
  return f32x4.ne(r, r);
}

// ---- Convolution 3x3.

/** One kernel row of three taps on four pixels: (k0 x0 + k1 x1) + k2 x2. */
// @ts-ignore: decorator
@inline function row3(k0: v128, k1: v128, k2: v128, p: usize): v128 {
  return f32x4.add(f32x4.add(f32x4.mul(k0, v128.load(p)), f32x4.mul(k1, v128.load(p, 4))), f32x4.mul(k2, v128.load(p, 8)));
}

/** The same on one pixel. */
// @ts-ignore: decorator
@inline function row3s(w: usize, p: usize): f32 {
  return <f32>load<f64>(w) * load<f32>(p) + <f32>load<f64>(w, 8) * load<f32>(p, 4) + <f32>load<f64>(w, 16) * load<f32>(p, 8);
}

/**
 * 3x3 correlation of one row: `src` is the window's top-left pixel for the first output pixel,
 * `w` nine f64 weights (row-major). r = k0 a0 + k1 a1 + k2 a2 + k3 d0 + ... + k8 g2 in that order.
 */
export function focalConv3F32(src: usize, dst: usize, n: i32, stride: usize, w: usize): i32 {
  const k0 = wsplat(w, 0);
  const k1 = wsplat(w, 1);
  const k2 = wsplat(w, 2);
  const k3 = wsplat(w, 3);
  const k4 = wsplat(w, 4);
  const k5 = wsplat(w, 5);
  const k6 = wsplat(w, 6);
  const k7 = wsplat(w, 7);
  const k8 = wsplat(w, 8);
  const t = src;
  const m = src + stride;
  const b = m + stride;
  let nans = i32x4.splat(0);
  let x = 0;
  for (; x + 8 <= n; x += 8) {
    const o = <usize>x << 2;
    const p = o + 16;
    const r = f32x4.add(f32x4.add(row3(k0, k1, k2, t + o), row3(k3, k4, k5, m + o)), row3(k6, k7, k8, b + o));
    const s = f32x4.add(f32x4.add(row3(k0, k1, k2, t + p), row3(k3, k4, k5, m + p)), row3(k6, k7, k8, b + p));
    v128.store(dst + o, r);
    v128.store(dst + p, s);
    nans = i32x4.sub(nans, v128.or(nan4(r), nan4(s)));
  }
  let count = 0;
  for (; x < n; x++) {
    const o = <usize>x << 2;
    const r = row3s(w, t + o) + row3s(w + 24, m + o) + row3s(w + 48, b + o);
    store<f32>(dst + o, r);
    if (r != r) count++;
  }
  // (Vector NaN lanes were counted once per pixel pair position: any count > 0 makes the caller scan.)
  return count + count32(nans);
}

// ---- Convolution 5x5.

/** One kernel row of five taps on four pixels: ((k0 x0 + k1 x1) + (k2 x2 + k3 x3)) + k4 x4. */
// @ts-ignore: decorator
@inline function row5(k0: v128, k1: v128, k2: v128, k3: v128, k4: v128, p: usize): v128 {
  return f32x4.add(
    f32x4.add(
      f32x4.add(f32x4.mul(k0, v128.load(p)), f32x4.mul(k1, v128.load(p, 4))),
      f32x4.add(f32x4.mul(k2, v128.load(p, 8)), f32x4.mul(k3, v128.load(p, 12))),
    ),
    f32x4.mul(k4, v128.load(p, 16)),
  );
}

// @ts-ignore: decorator
@inline function row5s(w: usize, p: usize): f32 {
  return (
    <f32>load<f64>(w) * load<f32>(p) +
    <f32>load<f64>(w, 8) * load<f32>(p, 4) +
    (<f32>load<f64>(w, 16) * load<f32>(p, 8) + <f32>load<f64>(w, 24) * load<f32>(p, 12)) +
    <f32>load<f64>(w, 32) * load<f32>(p, 16)
  );
}

/** 5x5 correlation of one row (25 f64 weights, row-major; the same order as focalConv3F32). */
export function focalConv5F32(src: usize, dst: usize, n: i32, stride: usize, w: usize): i32 {
  // Weights as f32 in a local array of splats would spill; 25 splats per row are cheap.
  const k0 = wsplat(w, 0);
  const k1 = wsplat(w, 1);
  const k2 = wsplat(w, 2);
  const k3 = wsplat(w, 3);
  const k4 = wsplat(w, 4);
  const k5 = wsplat(w, 5);
  const k6 = wsplat(w, 6);
  const k7 = wsplat(w, 7);
  const k8 = wsplat(w, 8);
  const k9 = wsplat(w, 9);
  const k10 = wsplat(w, 10);
  const k11 = wsplat(w, 11);
  const k12 = wsplat(w, 12);
  const k13 = wsplat(w, 13);
  const k14 = wsplat(w, 14);
  const k15 = wsplat(w, 15);
  const k16 = wsplat(w, 16);
  const k17 = wsplat(w, 17);
  const k18 = wsplat(w, 18);
  const k19 = wsplat(w, 19);
  const k20 = wsplat(w, 20);
  const k21 = wsplat(w, 21);
  const k22 = wsplat(w, 22);
  const k23 = wsplat(w, 23);
  const k24 = wsplat(w, 24);
  const a = src;
  const b = a + stride;
  const c = b + stride;
  const d = c + stride;
  const e = d + stride;
  let nans = i32x4.splat(0);
  let x = 0;
  for (; x + 4 <= n; x += 4) {
    const o = <usize>x << 2;
    const r = f32x4.add(
      f32x4.add(f32x4.add(row5(k0, k1, k2, k3, k4, a + o), row5(k5, k6, k7, k8, k9, b + o)), f32x4.add(row5(k10, k11, k12, k13, k14, c + o), row5(k15, k16, k17, k18, k19, d + o))),
      row5(k20, k21, k22, k23, k24, e + o),
    );
    v128.store(dst + o, r);
    nans = i32x4.sub(nans, nan4(r));
  }
  let count = count32(nans);
  for (; x < n; x++) {
    const o = <usize>x << 2;
    const r =
      row5s(w, a + o) + row5s(w + 40, b + o) + (row5s(w + 80, c + o) + row5s(w + 120, d + o)) + row5s(w + 160, e + o);
    store<f32>(dst + o, r);
    if (r != r) count++;
  }
  return count;
}

// ---- Any kernel, as a list of taps.

/**
 * Correlation of one row over `taps` taps: `off` holds each tap's byte offset from the window's
 * top-left pixel and `w` its weight (both as f64, row-major order of the non-zero taps).
 */
export function focalConvTapsF32(src: usize, dst: usize, n: i32, off: usize, w: usize, taps: i32): i32 {
  let nans = i32x4.splat(0);
  let x = 0;
  for (; x + 8 <= n; x += 8) {
    const o = src + (<usize>x << 2);
    const o0 = o + <usize><i32>load<f64>(off);
    const k0 = wsplat(w, 0);
    let r = f32x4.mul(k0, v128.load(o0));
    let s = f32x4.mul(k0, v128.load(o0, 16));
    for (let k = 1; k < taps; k++) {
      const p = o + <usize><i32>load<f64>(off + (<usize>k << 3));
      const kk = wsplat(w, k);
      r = f32x4.add(r, f32x4.mul(kk, v128.load(p)));
      s = f32x4.add(s, f32x4.mul(kk, v128.load(p, 16)));
    }
    v128.store(dst + (<usize>x << 2), r);
    v128.store(dst + (<usize>x << 2), s, 16);
    nans = i32x4.sub(nans, v128.or(nan4(r), nan4(s)));
  }
  let count = count32(nans);
  for (; x < n; x++) {
    const o = src + (<usize>x << 2);
    let r: f32 = <f32>load<f64>(w) * load<f32>(o + <usize><i32>load<f64>(off));
    for (let k = 1; k < taps; k++) r += <f32>load<f64>(w + (<usize>k << 3)) * load<f32>(o + <usize><i32>load<f64>(off + (<usize>k << 3)));
    store<f32>(dst + (<usize>x << 2), r);
    if (r != r) count++;
  }
  return count;
}

// ---- Separable kernels: down the column, then along the row.

/**
 * w[r][c] = col[r] * row[c]: `tmp` (n + kw - 1 f32) gets sum_r col[r] x[r][.] for the window
 * columns, then out[x] = sum_c row[c] tmp[x + c]. `col` and `row` are f64 (kh and kw of them).
 */
export function focalSepF32(src: usize, dst: usize, n: i32, stride: usize, tmp: usize, col: usize, kh: i32, row: usize, kw: i32): i32 {
  const m = n + kw - 1;
  let x = 0;
  const c0 = wsplat(col, 0);
  for (; x + 4 <= m; x += 4) {
    const o = <usize>x << 2;
    let r = f32x4.mul(c0, v128.load(src + o));
    for (let i = 1; i < kh; i++) r = f32x4.add(r, f32x4.mul(wsplat(col, i), v128.load(src + (<usize>i) * stride + o)));
    v128.store(tmp + o, r);
  }
  for (; x < m; x++) {
    const o = <usize>x << 2;
    let r: f32 = <f32>load<f64>(col) * load<f32>(src + o);
    for (let i = 1; i < kh; i++) r += <f32>load<f64>(col + (<usize>i << 3)) * load<f32>(src + (<usize>i) * stride + o);
    store<f32>(tmp + o, r);
  }
  let nans = i32x4.splat(0);
  const h0 = wsplat(row, 0);
  x = 0;
  for (; x + 4 <= n; x += 4) {
    const o = tmp + (<usize>x << 2);
    let r = f32x4.mul(h0, v128.load(o));
    for (let j = 1; j < kw; j++) r = f32x4.add(r, f32x4.mul(wsplat(row, j), v128.load(o + (<usize>j << 2))));
    v128.store(dst + (<usize>x << 2), r);
    nans = i32x4.sub(nans, nan4(r));
  }
  let count = count32(nans);
  for (; x < n; x++) {
    const o = tmp + (<usize>x << 2);
    let r: f32 = <f32>load<f64>(row) * load<f32>(o);
    for (let j = 1; j < kw; j++) r += <f32>load<f64>(row + (<usize>j << 3)) * load<f32>(o + (<usize>j << 2));
    store<f32>(dst + (<usize>x << 2), r);
    if (r != r) count++;
  }
  return count;
}

/**
 * A rank-one 3x3 kernel (w[r][c] = col[r] * row[c], `col` and `row` three f64 each) in one pass:
 * column sums v = (c0 x0 + c1 x1) + c2 x2 for four columns at a time, then (h0 v0 + h1 v1) + h2 v2
 * along the row from the sliding column vectors: 10 operations per four pixels instead of 17.
 */
export function focalSep3F32(src: usize, dst: usize, n: i32, stride: usize, col: usize, row: usize): i32 {
  const c0 = wsplat(col, 0);
  const c1 = wsplat(col, 1);
  const c2 = wsplat(col, 2);
  const h0 = wsplat(row, 0);
  const h1 = wsplat(row, 1);
  const h2 = wsplat(row, 2);
  const m = src + stride;
  const b = m + stride;
  let nans = i32x4.splat(0);
  let x = 0;
  if (n >= 8) {
    let V0 = colv(c0, c1, c2, src, m, b);
    // Eight pixels read columns x..x+11: x + 10 <= n keeps every read inside the window's columns.
    for (; x + 10 <= n; x += 8) {
      const o = <usize>(x + 4) << 2;
      const V1 = colv(c0, c1, c2, src + o, m + o, b + o);
      const V2 = colv(c0, c1, c2, src + o + 16, m + o + 16, b + o + 16);
      const r = f32x4.add(
        f32x4.add(f32x4.mul(h0, V0), f32x4.mul(h1, f32x4.shuffle(V0, V1, 1, 2, 3, 4))),
        f32x4.mul(h2, f32x4.shuffle(V0, V1, 2, 3, 4, 5)),
      );
      const s = f32x4.add(
        f32x4.add(f32x4.mul(h0, V1), f32x4.mul(h1, f32x4.shuffle(V1, V2, 1, 2, 3, 4))),
        f32x4.mul(h2, f32x4.shuffle(V1, V2, 2, 3, 4, 5)),
      );
      v128.store(dst + (<usize>x << 2), r);
      v128.store(dst + (<usize>x << 2), s, 16);
      nans = i32x4.sub(nans, v128.or(nan4(r), nan4(s)));
      V0 = V2;
    }
  }
  let count = count32(nans);
  const C0 = <f32>load<f64>(col);
  const C1 = <f32>load<f64>(col, 8);
  const C2 = <f32>load<f64>(col, 16);
  const H0 = <f32>load<f64>(row);
  const H1 = <f32>load<f64>(row, 8);
  const H2 = <f32>load<f64>(row, 16);
  for (; x < n; x++) {
    const o = <usize>x << 2;
    const v0 = C0 * load<f32>(src + o) + C1 * load<f32>(m + o) + C2 * load<f32>(b + o);
    const v1 = C0 * load<f32>(src + o, 4) + C1 * load<f32>(m + o, 4) + C2 * load<f32>(b + o, 4);
    const v2 = C0 * load<f32>(src + o, 8) + C1 * load<f32>(m + o, 8) + C2 * load<f32>(b + o, 8);
    const r = H0 * v0 + H1 * v1 + H2 * v2;
    store<f32>(dst + o, r);
    if (r != r) count++;
  }
  return count;
}

/** Column sums (c0 x0 + c1 x1) + c2 x2 of four columns. */
// @ts-ignore: decorator
@inline function colv(c0: v128, c1: v128, c2: v128, t: usize, m: usize, b: usize): v128 {
  return f32x4.add(f32x4.add(f32x4.mul(c0, v128.load(t)), f32x4.mul(c1, v128.load(m))), f32x4.mul(c2, v128.load(b)));
}

// ---- Statistics 3x3: Mean and StandardDeviation (f64x2, the TypeScript operations in order).

/** Two F32 values at p as f64x2. */
// @ts-ignore: decorator
@inline function ld2(p: usize): v128 {
  return f64x2.promote_low_f32x4(v128.load64_zero(p));
}

/** Two f64 results stored as F32 (round to nearest even, what a Float32Array store does). */
// @ts-ignore: decorator
@inline function st2(p: usize, r: v128): void {
  v128.store64_lane(p, f32x4.demote_f64x2_zero(r), 0);
}

/** NaN lanes of an f64x2 as a count (0..2). */
// @ts-ignore: decorator
@inline function nan2(r: v128): i32 {
  const m = f64x2.ne(r, r);
  return <i32>(i64x2.extract_lane(m, 0) & 1) + <i32>(i64x2.extract_lane(m, 1) & 1);
}

/**
 * Mean over 3x3 windows: `src` is the window's top-left pixel (row y - 1, column x - 1) for the
 * first output pixel; `ry` the window's rows inside the raster, `cols` (f64) each output pixel's
 * columns inside it. r = ((r0 + r1) + r2 column sums, (c0 + c1) + c2) / (ry * cols[x]).
 */
export function focalMean3F32(src: usize, dst: usize, n: i32, stride: usize, ry: f64, cols: usize): i32 {
  const m = src + stride;
  const b = m + stride;
  const vry = f64x2.splat(ry);
  let nan = 0;
  let nans = i64x2.splat(0);
  let c01 = f64x2.add(f64x2.add(ld2(src), ld2(m)), ld2(b));
  let x = 0;
  for (; x + 4 <= n; x += 4) {
    const o = <usize>(x + 2) << 2;
    const c23 = f64x2.add(f64x2.add(ld2(src + o), ld2(m + o)), ld2(b + o));
    const c45 = f64x2.add(f64x2.add(ld2(src + o + 8), ld2(m + o + 8)), ld2(b + o + 8));
    const s0 = f64x2.add(f64x2.add(c01, f64x2.shuffle(c01, c23, 1, 2)), c23);
    const s1 = f64x2.add(f64x2.add(c23, f64x2.shuffle(c23, c45, 1, 2)), c45);
    const q = cols + (<usize>x << 3);
    const r0 = f64x2.div(s0, f64x2.mul(vry, v128.load(q)));
    const r1 = f64x2.div(s1, f64x2.mul(vry, v128.load(q, 16)));
    const d = dst + (<usize>x << 2);
    v128.store(d, f32x4.shuffle(f32x4.demote_f64x2_zero(r0), f32x4.demote_f64x2_zero(r1), 0, 1, 4, 5));
    nans = i64x2.sub(nans, v128.or(f64x2.ne(r0, r0), f64x2.ne(r1, r1)));
    c01 = c45;
  }
  nan += <i32>(i64x2.extract_lane(nans, 0) + i64x2.extract_lane(nans, 1));
  for (; x < n; x++) {
    const o = <usize>x << 2;
    const s =
      <f64>load<f32>(src + o) +
      <f64>load<f32>(m + o) +
      <f64>load<f32>(b + o) +
      (<f64>load<f32>(src + o, 4) + <f64>load<f32>(m + o, 4) + <f64>load<f32>(b + o, 4)) +
      (<f64>load<f32>(src + o, 8) + <f64>load<f32>(m + o, 8) + <f64>load<f32>(b + o, 8));
    const r = s / (ry * load<f64>(cols + (<usize>x << 3)));
    store<f32>(dst + o, <f32>r);
    if (r != r) nan++;
  }
  return nan;
}

/** One column's sum and sum of squares, (a + b) + c and (a a + b b) + c c, into *s and *q (two lanes). */
// @ts-ignore: decorator
@inline function colSum(p: usize, stride: usize): v128 {
  return f64x2.add(f64x2.add(ld2(p), ld2(p + stride)), ld2(p + stride + stride));
}
// @ts-ignore: decorator
@inline function colSquares(p: usize, stride: usize): v128 {
  const a = ld2(p);
  const b = ld2(p + stride);
  const c = ld2(p + stride + stride);
  return f64x2.add(f64x2.add(f64x2.mul(a, a), f64x2.mul(b, b)), f64x2.mul(c, c));
}

/**
 * Population standard deviation over 3x3 windows (statistics.ts's fused 3x3 path): with S the sum,
 * Q the sum of squares and n = ry * cols[x], d = n Q - S^2, sqrt(d > 0 ? d / n^2 : 0) when `exact`
 * or d > cancellation * n Q; other lanes (and n = 0) are written NaN and counted: the caller
 * recomputes them (two passes) in TypeScript.
 */
// @ts-ignore: decorator
@inline function std2(s: v128, q: v128, count: v128, exact: bool, cancel: v128): v128 {
  const ZERO = f64x2.splat(0);
  const nq = f64x2.mul(count, q);
  const d = f64x2.sub(nq, f64x2.mul(s, s));
  const v = v128.bitselect(f64x2.div(d, f64x2.mul(count, count)), ZERO, f64x2.gt(d, ZERO));
  const r = f64x2.sqrt(v);
  const ok = exact ? f64x2.ne(count, ZERO) : v128.and(f64x2.ne(count, ZERO), f64x2.gt(d, f64x2.mul(cancel, nq)));
  return v128.bitselect(r, f64x2.splat(NaN), ok);
}

export function focalStd3F32(src: usize, dst: usize, n: i32, stride: usize, ry: f64, cols: usize, exact: i32, cancellation: f64): i32 {
  const vry = f64x2.splat(ry);
  const cancel = f64x2.splat(cancellation);
  const ex = exact != 0;
  let nan = 0;
  let nans = i64x2.splat(0);
  let s01 = colSum(src, stride);
  let q01 = colSquares(src, stride);
  let x = 0;
  for (; x + 4 <= n; x += 4) {
    const o = src + (<usize>(x + 2) << 2);
    const s23 = colSum(o, stride);
    const q23 = colSquares(o, stride);
    const s45 = colSum(o + 8, stride);
    const q45 = colSquares(o + 8, stride);
    const S0 = f64x2.add(f64x2.add(s01, f64x2.shuffle(s01, s23, 1, 2)), s23);
    const Q0 = f64x2.add(f64x2.add(q01, f64x2.shuffle(q01, q23, 1, 2)), q23);
    const S1 = f64x2.add(f64x2.add(s23, f64x2.shuffle(s23, s45, 1, 2)), s45);
    const Q1 = f64x2.add(f64x2.add(q23, f64x2.shuffle(q23, q45, 1, 2)), q45);
    const c = cols + (<usize>x << 3);
    const r0 = std2(S0, Q0, f64x2.mul(vry, v128.load(c)), ex, cancel);
    const r1 = std2(S1, Q1, f64x2.mul(vry, v128.load(c, 16)), ex, cancel);
    v128.store(dst + (<usize>x << 2), f32x4.shuffle(f32x4.demote_f64x2_zero(r0), f32x4.demote_f64x2_zero(r1), 0, 1, 4, 5));
    nans = i64x2.sub(nans, v128.or(f64x2.ne(r0, r0), f64x2.ne(r1, r1)));
    s01 = s45;
    q01 = q45;
  }
  nan += <i32>(i64x2.extract_lane(nans, 0) + i64x2.extract_lane(nans, 1));
  // The tail a pair at a time; an odd last pixel is computed with its left neighbour (the same
  // value again for that one) so that no read passes the window's last column; n = 1 alone.
  if (n == 1) return std1(src, dst, stride, ry * load<f64>(cols), ex, cancellation);
  for (; x < n; x += 2) {
    if (x + 1 == n) x--;
    const p = src + (<usize>x << 2);
    const sa = colSum(p, stride);
    const qa = colSquares(p, stride);
    const sb = colSum(p + 8, stride);
    const qb = colSquares(p + 8, stride);
    const S = f64x2.add(f64x2.add(sa, f64x2.shuffle(sa, sb, 1, 2)), sb);
    const Q = f64x2.add(f64x2.add(qa, f64x2.shuffle(qa, qb, 1, 2)), qb);
    const r = std2(S, Q, f64x2.mul(vry, v128.load(cols + (<usize>x << 3))), ex, cancel);
    st2(dst + (<usize>x << 2), r);
    nan += nan2(r);
  }
  return nan;
}

/** One pixel of focalStd3F32 (a row of one pixel). */
function std1(src: usize, dst: usize, stride: usize, count: f64, exact: bool, cancellation: f64): i32 {
  let s: f64 = 0;
  let q: f64 = 0;
  for (let j = 0; j < 3; j++) {
    const p = src + (<usize>j << 2);
    const a = <f64>load<f32>(p);
    const b = <f64>load<f32>(p + stride);
    const c = <f64>load<f32>(p + stride + stride);
    s = j == 0 ? a + b + c : s + (a + b + c);
    q = j == 0 ? a * a + b * b + c * c : q + (a * a + b * b + c * c);
  }
  const nq = count * q;
  const d = nq - s * s;
  const r = count != 0 && (exact || d > cancellation * nq) ? Math.sqrt(d > 0 ? d / (count * count) : 0) : NaN;
  store<f32>(dst, <f32>r);
  return r != r ? 1 : 0;
}

// ---- Statistics 3x3: Min and Max (f32x4 pmin/pmax; window.ts fused3's comparisons in order).

/**
 * Min (max = 0) or Max (max = 1) over 3x3 windows. Column m = pmin(pmin(r0, r1), r2) (m = r1 < m ?
 * r1 : m; m = r2 < m ? r2 : m), then u = pmin(c1, c0) (c0 < c1 ? c0 : c1) and pmin(c2, u). Max is
 * the same with pmax: TypeScript takes -min(-v), which selects the same operands.
 */
// @ts-ignore: decorator
@inline function minmax3(src: usize, dst: usize, n: i32, stride: usize, max: bool): i32 {
  const m = src + stride;
  const b = m + stride;
  let nans = i32x4.splat(0);
  let x = 0;
  // Four pixels read columns x..x+7: x + 6 <= n keeps every read inside the window's columns.
  for (; x + 6 <= n; x += 4) {
    const o = <usize>x << 2;
    // Columns x..x+3 (C0) and x+4..x+7 (C1).
    let C0: v128;
    let C1: v128;
    if (max) {
      C0 = f32x4.pmax(f32x4.pmax(v128.load(src + o), v128.load(m + o)), v128.load(b + o));
      C1 = f32x4.pmax(f32x4.pmax(v128.load(src + o, 16), v128.load(m + o, 16)), v128.load(b + o, 16));
    } else {
      C0 = f32x4.pmin(f32x4.pmin(v128.load(src + o), v128.load(m + o)), v128.load(b + o));
      C1 = f32x4.pmin(f32x4.pmin(v128.load(src + o, 16), v128.load(m + o, 16)), v128.load(b + o, 16));
    }
    const c1 = f32x4.shuffle(C0, C1, 1, 2, 3, 4);
    const c2 = f32x4.shuffle(C0, C1, 2, 3, 4, 5);
    const r = max ? f32x4.pmax(c2, f32x4.pmax(c1, C0)) : f32x4.pmin(c2, f32x4.pmin(c1, C0));
    v128.store(dst + o, r);
    nans = i32x4.sub(nans, nan4(r));
  }
  let count = count32(nans);
  for (; x < n; x++) {
    const o = <usize>x << 2;
    let c0: f32 = 0;
    let c1: f32 = 0;
    let r: f32 = 0;
    for (let j = 0; j < 3; j++) {
      const q = <usize>(o + (<usize>j << 2));
      let v = load<f32>(src + q);
      const u = load<f32>(m + q);
      const w = load<f32>(b + q);
      if (max) {
        v = v < u ? u : v;
        v = v < w ? w : v;
      } else {
        v = u < v ? u : v;
        v = w < v ? w : v;
      }
      if (j == 0) c0 = v;
      else if (j == 1) c1 = v;
      else {
        const u2 = max ? (c1 < c0 ? c0 : c1) : c0 < c1 ? c0 : c1;
        r = max ? (v < u2 ? u2 : v) : u2 < v ? u2 : v;
      }
    }
    store<f32>(dst + o, r);
    if (r != r) count++;
  }
  return count;
}

export function focalMin3F32(src: usize, dst: usize, n: i32, stride: usize): i32 {
  return minmax3(src, dst, n, stride, false);
}
export function focalMax3F32(src: usize, dst: usize, n: i32, stride: usize): i32 {
  return minmax3(src, dst, n, stride, true);
}

/**
 * The GeoTIFF I/O's per-pixel work on planes already in this memory: the NoData/NaN mask of a
 * window read (src/io/geotiff-source.ts reads a render's tiles into planes the evaluator allocates
 * here), and TIFF predictor 2 of an 8-bit block about to be written (src/io/tiff-stream-writer.ts
 * encodes a render's tiles from the planes the kernels computed here).
 */

const IN_F32: i32 = 6;
const IN_F64: i32 = 7;

/**
 * mask[i] = 0 where plane[i] is NaN or (testNd != 0) equals nd, for i in [0, n); other mask bytes
 * are kept. `type` is the plane's element type code (6 F32, 7 F64: src/wasm/planes.ts typeCode);
 * for F32, nd is the NoData value rounded to f32 (as the plane holds it). Sixteen cells per step.
 */
export function readerMaskInvalid(type: i32, plane: usize, mask: usize, n: i32, testNd: i32, nd: f64): void {
  let i: i32 = 0;
  if (type == IN_F32) {
    const ndv = f32x4.splat(<f32>nd);
    const tv = i32x4.splat(testNd != 0 ? -1 : 0);
    for (; i + 16 <= n; i += 16) {
      const p = plane + ((<usize>i) << 2);
      const a = v128.load(p);
      const b = v128.load(p, 16);
      const c = v128.load(p, 32);
      const d = v128.load(p, 48);
      const ba = v128.or(f32x4.ne(a, a), v128.and(f32x4.eq(a, ndv), tv));
      const bb = v128.or(f32x4.ne(b, b), v128.and(f32x4.eq(b, ndv), tv));
      const bc = v128.or(f32x4.ne(c, c), v128.and(f32x4.eq(c, ndv), tv));
      const bd = v128.or(f32x4.ne(d, d), v128.and(f32x4.eq(d, ndv), tv));
      const bad = i8x16.narrow_i16x8_s(i16x8.narrow_i32x4_s(ba, bb), i16x8.narrow_i32x4_s(bc, bd));
      if (v128.any_true(bad)) {
        const m = mask + <usize>i;
        v128.store(m, v128.andnot(v128.load(m), bad));
      }
    }
    for (; i < n; i++) {
      const v = load<f32>(plane + ((<usize>i) << 2));
      if (v != v || (testNd != 0 && v == <f32>nd)) store<u8>(mask + <usize>i, 0);
    }
  } else if (type == IN_F64) {
    const ndv = f64x2.splat(nd);
    const tv = i64x2.splat(testNd != 0 ? -1 : 0);
    for (; i + 2 <= n; i += 2) {
      const a = v128.load(plane + ((<usize>i) << 3));
      const bad = v128.or(f64x2.ne(a, a), v128.and(f64x2.eq(a, ndv), tv));
      if (v128.any_true(bad)) {
        if (i64x2.extract_lane(bad, 0) != 0) store<u8>(mask + <usize>i, 0);
        if (i64x2.extract_lane(bad, 1) != 0) store<u8>(mask + <usize>i + 1, 0);
      }
    }
    for (; i < n; i++) {
      const v = load<f64>(plane + ((<usize>i) << 3));
      if (v != v || (testNd != 0 && v == nd)) store<u8>(mask + <usize>i, 0);
    }
  } else {
    unreachable();
  }
}

/**
 * TIFF predictor 2 (horizontal differencing) of 8-bit samples: dst[r][0] = src[r][0] and
 * dst[r][i] = src[r][i] - src[r][i - 1] (wrapping) for `rows` rows of `width` bytes. dst may be
 * src (each row is worked from its end, so every left neighbour is read before it is replaced) or
 * a block not overlapping it. Sixteen bytes per step: the row against itself loaded one byte to
 * the left.
 */
export function readerDifferenceBytes(src: usize, dst: usize, width: i32, rows: i32): void {
  for (let r: i32 = 0; r < rows; r++) {
    const s = src + <usize>r * <usize>width;
    const d = dst + <usize>r * <usize>width;
    let i: i32 = width - 16;
    for (; i >= 1; i -= 16) {
      const p = s + <usize>i;
      v128.store(d + <usize>i, i8x16.sub(v128.load(p), v128.load(p - 1)));
    }
    // The first (at most sixteen) bytes, one by one from the right.
    for (let j: i32 = i + 15; j >= 1; j--) store<u8>(d + <usize>j, load<u8>(s + <usize>j) - load<u8>(s + <usize>j - 1));
    if (width > 0) store<u8>(d, load<u8>(s));
  }
}

/**
 * 1 when each of the `n` mask bytes from `mask` is 1 (a valid pixel), else 0: sixty-four bytes a
 * step, stopping at the first block of them that is not.
 */
export function readerAllValid(mask: usize, n: i32): i32 {
  const one = i8x16.splat(1);
  let i: i32 = 0;
  for (; i + 64 <= n; i += 64) {
    const p = mask + <usize>i;
    const ab = v128.and(i8x16.eq(v128.load(p), one), i8x16.eq(v128.load(p, 16), one));
    const cd = v128.and(i8x16.eq(v128.load(p, 32), one), i8x16.eq(v128.load(p, 48), one));
    if (!i8x16.all_true(v128.and(ab, cd))) return 0;
  }
  for (; i + 16 <= n; i += 16) {
    if (!i8x16.all_true(i8x16.eq(v128.load(mask + <usize>i), one))) return 0;
  }
  for (; i < n; i++) {
    if (load<u8>(mask + <usize>i) != 1) return 0;
  }
  return 1;
}

/**
 * Copy `rows` rows of `rowBytes` bytes from `src` (rows `srcStride` bytes apart) to `dst` (rows
 * `dstStride` bytes apart): a window's part of a decoded block held in this memory
 * (src/io/geotiff-source.ts copyBlock), one call per block instead of one per row.
 */
export function readerCopyRows(src: usize, srcStride: i32, dst: usize, dstStride: i32, rowBytes: i32, rows: i32): void {
  // Loads and stores, not memory.copy: a row is short (a tile's row, or a halo's few bytes), and
  // memory.copy's call per row cost more than the copy (the two never overlap).
  for (let y: i32 = 0; y < rows; y++) {
    const s = src + <usize>(y * srcStride);
    const d = dst + <usize>(y * dstStride);
    let i: i32 = 0;
    for (; i + 64 <= rowBytes; i += 64) {
      const p = <usize>i;
      const a = v128.load(s + p);
      const b = v128.load(s + p, 16);
      const c = v128.load(s + p, 32);
      const e = v128.load(s + p, 48);
      v128.store(d + p, a);
      v128.store(d + p, b, 16);
      v128.store(d + p, c, 32);
      v128.store(d + p, e, 48);
    }
    for (; i + 16 <= rowBytes; i += 16) v128.store(d + <usize>i, v128.load(s + <usize>i));
    for (; i + 4 <= rowBytes; i += 4) store<u32>(d + <usize>i, load<u32>(s + <usize>i));
    for (; i < rowBytes; i++) store<u8>(d + <usize>i, load<u8>(s + <usize>i));
  }
}

/**
 * Set `n` bytes at `dst` to `value`: a tile's fresh planes (zeros) and mask (ones) in this memory
 * (src/wasm/planes.ts TileBlocks.allocate). `memory.fill` is one memset; a TypedArray's `fill` on a
 * shared memory stores element by element, about eight times slower.
 */
export function readerFillBytes(dst: usize, value: i32, n: i32): void {
  memory.fill(dst, <u8>value, <usize>n);
}

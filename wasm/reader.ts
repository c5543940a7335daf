/**
 * The GeoTIFF reader's per-pixel work on windows already in this memory (src/io/geotiff-source.ts
 * reads a render's tiles into planes the evaluator allocates here): the NoData/NaN mask.
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
      const p = plane + (<usize>i << 2);
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
      const v = load<f32>(plane + (<usize>i << 2));
      if (v != v || (testNd != 0 && v == <f32>nd)) store<u8>(mask + <usize>i, 0);
    }
  } else if (type == IN_F64) {
    const ndv = f64x2.splat(nd);
    const tv = i64x2.splat(testNd != 0 ? -1 : 0);
    for (; i + 2 <= n; i += 2) {
      const a = v128.load(plane + (<usize>i << 3));
      const bad = v128.or(f64x2.ne(a, a), v128.and(f64x2.eq(a, ndv), tv));
      if (v128.any_true(bad)) {
        if (i64x2.extract_lane(bad, 0) != 0) store<u8>(mask + <usize>i, 0);
        if (i64x2.extract_lane(bad, 1) != 0) store<u8>(mask + <usize>i + 1, 0);
      }
    }
    for (; i < n; i++) {
      const v = load<f64>(plane + (<usize>i << 3));
      if (v != v || (testNd != 0 && v == nd)) store<u8>(mask + <usize>i, 0);
    }
  } else {
    unreachable();
  }
}

/**
 * Per-band statistics of byte planes (src/wasm/stats.ts is the glue, src/io/pixel-statistics.ts
 * and src/chipper/metadata.ts the TypeScript references and dispatchers):
 *   - the counts of the byte values of a window's valid pixels, pixel i into the (i % 4)th of four
 *     interleaved histograms of 256 u32 bins (consecutive equal values would otherwise wait on each
 *     other's increments): the very counts of `byteHistogram`;
 *   - the sums of squared deviations of up to four byte bands, each band's sum added pixel by pixel
 *     in pixel order (one sequential f64 add chain per band, the TypeScript loop's roundings), the
 *     bands' chains side by side so their additions overlap.
 */

/**
 * Sub-histograms the kernel counts into: pixel i into the (i % NH)th, folded at the end into the
 * (i % 4)th of the four the caller gets. Runs of equal values (upscaled or flat imagery) make
 * pixel i and i + NH increment the same bin: with NH = 4 each increment waited on the store of
 * the one four pixels before. (inc16 and the head and tail loops assume NH = 16.)
 */
const NH: i32 = 16;

/** One more count in u32 bin `j` of the histograms at `h`. */
// @ts-ignore: decorator
@inline function inc(h: usize, j: u32): void {
  const p = h + ((<usize>j) << 2);
  store<u32>(p, load<u32>(p) + 1);
}

/** Four pixels from word `x` (pixel order: low byte first) into histograms q .. q + 3 (bin offset `o` = 1024 * q). */
// @ts-ignore: decorator
@inline function incWord(h: usize, x: u32, o: u32): void {
  inc(h, o | (x & 255));
  inc(h, (o + 256) | ((x >>> 8) & 255));
  inc(h, (o + 512) | ((x >>> 16) & 255));
  inc(h, (o + 768) | (x >>> 24));
}

/** Sixteen pixels at `p`, the first into histogram 0. */
// @ts-ignore: decorator
@inline function inc16(h: usize, p: usize): void {
  incWord(h, load<u32>(p), 0);
  incWord(h, load<u32>(p, 4), 1024);
  incWord(h, load<u32>(p, 8), 2048);
  incWord(h, load<u32>(p, 12), 3072);
}

/**
 * Count pixels [i0, i1) of `band` into the NH histograms at `h` (not zeroed here), pixel i into
 * histogram (i % NH), skipping those whose mask byte is 0 when `useMask` is not 0.
 */
function countSpan(band: usize, mask: usize, i0: i32, i1: i32, useMask: i32, h: usize): void {
  let i = i0;
  // Up to a multiple of sixteen (then byte k of the sixteen is pixel i + k with (i + k) % 16 == k).
  for (; i < i1 && (i & 15) != 0; i++)
    if (useMask == 0 || load<u8>(mask + <usize>i) != 0) inc(h, (((<u32>i) & 15) << 8) | load<u8>(band + <usize>i));
  if (useMask == 0) {
    for (; i + 16 <= i1; i += 16) inc16(h, band + <usize>i);
  } else {
    // Sixteen mask bytes at a time: all valid, all masked, or pixel by pixel.
    for (; i + 16 <= i1; i += 16) {
      const m = v128.load(mask + <usize>i);
      const p = band + <usize>i;
      if (i8x16.all_true(m)) inc16(h, p);
      else if (v128.any_true(m)) {
        for (let j: i32 = 0; j < 16; j++) if (load<u8>(mask + <usize>(i + j)) != 0) inc(h, ((<u32>j) << 8) | load<u8>(p + <usize>j));
      }
    }
  }
  for (; i < i1; i++) if (useMask == 0 || load<u8>(mask + <usize>i) != 0) inc(h, (((<u32>i) & 15) << 8) | load<u8>(band + <usize>i));
}

/**
 * The four interleaved histograms (1024 u32 bins at `h`) of the byte pixels of a window: `rows`
 * rows of `width` pixels, row r from index start + r * stride of `band` (and of `mask`, whose 0
 * bytes are skipped when `useMask` is not 0). Pixel i of the plane goes into histogram (i % 4): for
 * a whole plane (start 0, stride = width) the counts of `byteHistogram`. `h` holds 4096 * NH / 4
 * bytes (16 KiB): the kernel counts into NH histograms there, then folds them into the first four.
 */
export function statsByteHistogram(band: usize, mask: usize, start: i32, width: i32, rows: i32, stride: i32, useMask: i32, h: usize): void {
  memory.fill(h, 0, <usize>NH << 10);
  for (let r: i32 = 0; r < rows; r++) {
    const i0 = start + r * stride;
    countSpan(band, mask, i0, i0 + width, useMask, h);
  }
  // Histogram q (q >= 4) into histogram q % 4: pixel i into the (i % 4)th.
  for (let q: i32 = 4; q < NH; q++) {
    const src = h + ((<usize>q) << 10);
    const dst = h + ((<usize>(q & 3)) << 10);
    for (let j: usize = 0; j < 1024; j += 16) v128.store(dst + j, i32x4.add(v128.load(dst + j), v128.load(src + j)));
  }
}

/** The squared deviation of byte value `v` of band j (table at t: 256 f64 per band). */
// @ts-ignore: decorator
@inline function sq(t: usize, v: u32): f64 {
  return load<f64>(t + ((<usize>v) << 3));
}

/**
 * The sums of squared deviations of `k` (1 to 4) byte bands at b0..b3 over pixels [0, n): for each
 * pixel (its mask byte not 0, when `useMask` is not 0) s_j += t[256 * j + band_j[i]], the pixels
 * one by one in pixel order: each s_j is the same sequential f64 add chain as the TypeScript loop,
 * so the same bits. The k sums go to `out` (f64). Pointers of bands past k are not read.
 */
export function statsSquares(
  k: i32,
  b0: usize,
  b1: usize,
  b2: usize,
  b3: usize,
  mask: usize,
  n: i32,
  useMask: i32,
  t: usize,
  out: usize,
): void {
  const t1 = t + 2048;
  const t2 = t + 4096;
  const t3 = t + 6144;
  let s0: f64 = 0;
  let s1: f64 = 0;
  let s2: f64 = 0;
  let s3: f64 = 0;
  let i: i32 = 0;
  if (useMask == 0) {
    const words = n & ~3;
    if (k == 1) {
      for (; i < words; i += 4) {
        const x = load<u32>(b0 + <usize>i);
        s0 += sq(t, x & 255);
        s0 += sq(t, (x >>> 8) & 255);
        s0 += sq(t, (x >>> 16) & 255);
        s0 += sq(t, x >>> 24);
      }
    } else if (k == 2) {
      for (; i < words; i += 4) {
        const x = load<u32>(b0 + <usize>i);
        const y = load<u32>(b1 + <usize>i);
        s0 += sq(t, x & 255);
        s1 += sq(t1, y & 255);
        s0 += sq(t, (x >>> 8) & 255);
        s1 += sq(t1, (y >>> 8) & 255);
        s0 += sq(t, (x >>> 16) & 255);
        s1 += sq(t1, (y >>> 16) & 255);
        s0 += sq(t, x >>> 24);
        s1 += sq(t1, y >>> 24);
      }
    } else if (k == 3) {
      for (; i < words; i += 4) {
        const x = load<u32>(b0 + <usize>i);
        const y = load<u32>(b1 + <usize>i);
        const z = load<u32>(b2 + <usize>i);
        s0 += sq(t, x & 255);
        s1 += sq(t1, y & 255);
        s2 += sq(t2, z & 255);
        s0 += sq(t, (x >>> 8) & 255);
        s1 += sq(t1, (y >>> 8) & 255);
        s2 += sq(t2, (z >>> 8) & 255);
        s0 += sq(t, (x >>> 16) & 255);
        s1 += sq(t1, (y >>> 16) & 255);
        s2 += sq(t2, (z >>> 16) & 255);
        s0 += sq(t, x >>> 24);
        s1 += sq(t1, y >>> 24);
        s2 += sq(t2, z >>> 24);
      }
    } else {
      for (; i < words; i += 4) {
        const x = load<u32>(b0 + <usize>i);
        const y = load<u32>(b1 + <usize>i);
        const z = load<u32>(b2 + <usize>i);
        const w = load<u32>(b3 + <usize>i);
        s0 += sq(t, x & 255);
        s1 += sq(t1, y & 255);
        s2 += sq(t2, z & 255);
        s3 += sq(t3, w & 255);
        s0 += sq(t, (x >>> 8) & 255);
        s1 += sq(t1, (y >>> 8) & 255);
        s2 += sq(t2, (z >>> 8) & 255);
        s3 += sq(t3, (w >>> 8) & 255);
        s0 += sq(t, (x >>> 16) & 255);
        s1 += sq(t1, (y >>> 16) & 255);
        s2 += sq(t2, (z >>> 16) & 255);
        s3 += sq(t3, (w >>> 16) & 255);
        s0 += sq(t, x >>> 24);
        s1 += sq(t1, y >>> 24);
        s2 += sq(t2, z >>> 24);
        s3 += sq(t3, w >>> 24);
      }
    }
  }
  // The tail (or, with a mask, every pixel): one pixel at a time, each band's chain in order.
  for (; i < n; i++) {
    if (useMask != 0 && load<u8>(mask + <usize>i) == 0) continue;
    s0 += sq(t, load<u8>(b0 + <usize>i));
    if (k > 1) s1 += sq(t1, load<u8>(b1 + <usize>i));
    if (k > 2) s2 += sq(t2, load<u8>(b2 + <usize>i));
    if (k > 3) s3 += sq(t3, load<u8>(b3 + <usize>i));
  }
  store<f64>(out, s0);
  store<f64>(out, s1, 8);
  store<f64>(out, s2, 16);
  store<f64>(out, s3, 24);
}

/**
 * Undo TIFF predictor 2 on one plane of bytes (src/io/decoders.ts `horizontalPredictor` with one
 * byte per sample and one sample per pixel): dst[r][i] = (src[r][0] + ... + src[r][i]) mod 256, for
 * `rows` rows of `width` bytes. dst may be src, or a block not overlapping it. Sixteen bytes per
 * step: their running sums within the step in four shifted adds, plus the step before's last sum.
 */
export function statsUndoDifferenceBytes(src: usize, dst: usize, width: i32, rows: i32): void {
  const zero = i8x16.splat(0);
  for (let r: i32 = 0; r < rows; r++) {
    const s = src + <usize>r * <usize>width;
    const d = dst + <usize>r * <usize>width;
    let carry = zero;
    let i: i32 = 0;
    for (; i + 16 <= width; i += 16) {
      let v = v128.load(s + <usize>i);
      v = i8x16.add(v, i8x16.shuffle(zero, v, 0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30));
      v = i8x16.add(v, i8x16.shuffle(zero, v, 0, 1, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29));
      v = i8x16.add(v, i8x16.shuffle(zero, v, 0, 1, 2, 3, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27));
      v = i8x16.add(v, i8x16.shuffle(zero, v, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23));
      v = i8x16.add(v, carry);
      v128.store(d + <usize>i, v);
      carry = i8x16.shuffle(v, v, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15);
    }
    let c: u32 = i8x16.extract_lane_u(carry, 0);
    for (; i < width; i++) {
      c = (c + load<u8>(s + <usize>i)) & 255;
      store<u8>(d + <usize>i, <u8>c);
    }
  }
}

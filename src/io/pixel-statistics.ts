/**
 * Statistics of the pixels a writer puts into a file, as `gdalinfo -stats` gives them
 * (GDALRasterBand::ComputeStatistics with bApproxOK false): per band the minimum, maximum, mean,
 * POPULATION standard deviation and the percentage of valid pixels, over the values as stored in
 * the file's type. A pixel counts when it is valid in the block's mask, is not NaN, and is not
 * equal to the NoData value the file declares (GDAL skips such a value even when the engine
 * thought it valid). NBITS files store values saturated at 2^n - 1; so are the statistics.
 *
 * Accumulated block by block in float64, with sums shifted by each band's first valid value (the
 * variance stays exact enough whatever the magnitude of the values). The loops are plain
 * typed-array loops: writers call `add` on their hot path.
 *
 * Written into GeoTIFFs as GDAL's STATISTICS_MINIMUM/MAXIMUM/MEAN/STDDEV/VALID_PERCENT items
 * (gdal-metadata.ts). Statistics a function merely advertises (`RasterInfo.statistics`: Hillshade
 * 0..255, NDVI -1..1, Slope 0..90) are nominal ranges, never the pixels' statistics: writers never
 * put those into a file.
 */
import { maskAllValid, type BandStatistics } from '../core/pixel-block.js';
import { PIXEL_TYPE_INFO, type PixelType, type Plane } from '../core/pixel-type.js';
import { histogramInWasm } from '../wasm/stats.js';

/** One band's statistics as a file carries them. */
export interface FileBandStatistics extends BandStatistics {
  readonly mean: number;
  readonly stdDev: number;
  readonly count: number;
  /** Valid pixels, percent of the band's pixels, to 4 significant digits as GDAL writes it. */
  readonly validPercent: number;
}

/**
 * The byteHistogram (four interleaved histograms of 256 bins) of some whole byte planes under one
 * mask, counted by a caller that needed them as well: the chipper counts a chip's bands once, for
 * its own statistics and its GeoTIFF's. `histograms[b]` holds the counts of `planes[b]` under
 * `mask` (undefined: not counted). PixelStatistics.add takes a histogram only for that very plane,
 * at that band index, under that very mask, added whole; anything else is counted as usual.
 */
export interface ByteHistograms {
  readonly planes: readonly Plane[];
  readonly mask: Uint8Array;
  readonly histograms: readonly (Uint32Array | undefined)[];
}

/** One more count in bin `j`. */
const inc = (h: Uint32Array, j: number): void => {
  h[j] = h[j]! + 1;
};

/** Byte pixels per band whose sums of squared deviations (at most 255^2 each) stay below 2^53. */
const EXACT_BYTE_PIXELS = Math.floor(2 ** 53 / (255 * 255));

export class PixelStatistics {
  private readonly n: Float64Array;
  private readonly min: Float64Array;
  private readonly max: Float64Array;
  private readonly shift: Float64Array;
  private readonly s: Float64Array;
  private readonly ss: Float64Array;
  private readonly k: number;
  private readonly noData: number | undefined;
  private readonly ceiling: number;
  private histogram: Uint32Array | undefined;

  /**
   * `noData`: the value the file declares as NoData (undefined: none, or NaN); `bits`: bits per
   * stored sample when fewer than the type's (NBITS), values above 2^bits - 1 then saturate.
   */
  constructor(
    readonly bandCount: number,
    pixelType: PixelType,
    noData: number | undefined,
    bits?: number,
  ) {
    const ti = PIXEL_TYPE_INFO[pixelType];
    this.k = ti.complex ? 2 : 1;
    this.noData = noData === undefined || Number.isNaN(noData) ? undefined : noData;
    this.ceiling = bits !== undefined && bits < ti.bits && ti.integer ? 2 ** bits - 1 : Infinity;
    this.n = new Float64Array(bandCount);
    this.min = new Float64Array(bandCount).fill(Infinity);
    this.max = new Float64Array(bandCount).fill(-Infinity);
    this.shift = new Float64Array(bandCount).fill(Number.NaN);
    this.s = new Float64Array(bandCount);
    this.ss = new Float64Array(bandCount);
  }

  /**
   * Add `count` pixels: band planes (pixel i of band b at planes[b][k * (start + row * stride + c)])
   * of a `width` x `rows` window starting at `start`, with the mask indexed the same way.
   * `known`: byte histograms the caller already counted (see ByteHistograms), used for a band only
   * when they are of this plane at this index, under this mask, and the window is the whole plane.
   */
  add(
    planes: readonly Plane[],
    mask: Uint8Array,
    start: number,
    width: number,
    rows: number,
    stride: number,
    known?: ByteHistograms,
  ): void {
    const whole = known !== undefined && known.mask === mask && start === 0 && stride === width && width * rows === mask.length;
    for (let b = 0; b < planes.length; b++) {
      const p = planes[b]!;
      const given = whole && known.planes[b] === p && p.length === mask.length ? known.histograms[b] : undefined;
      this.addBand(b, p, mask, start, width, rows, stride, given?.length === 1024 ? given : undefined);
    }
  }

  /** `given`: the byteHistogram of `p` under `mask`, whole (checked by `add`), for a U8 plane. */
  private addBand(
    b: number,
    p: Plane,
    mask: Uint8Array,
    start: number,
    width: number,
    rows: number,
    stride: number,
    given: Uint32Array | undefined,
  ): void {
    // Bytes: counted into a histogram (a third of the time); the sums stay exact integers, so the
    // result is the same bit for bit as the loop below while they stay under 2^53.
    if ((p instanceof Uint8Array || p instanceof Int8Array) && width * rows < 2 ** 32 && this.n[b]! + width * rows <= EXACT_BYTE_PIXELS) {
      this.addBytes(b, p, mask, start, width, rows, stride, p instanceof Uint8Array ? given : undefined);
      return;
    }
    const k = this.k;
    const nd = this.noData;
    const ceiling = this.ceiling;
    let n = this.n[b]!;
    let lo = this.min[b]!;
    let hi = this.max[b]!;
    let shift = this.shift[b]!;
    let s = this.s[b]!;
    let ss = this.ss[b]!;
    for (let r = 0; r < rows; r++) {
      const i0 = start + r * stride;
      const i1 = i0 + width;
      if (shift !== shift) {
        // The band's first valid value becomes the shift.
        for (let i = i0; i < i1; i++) {
          if (mask[i] === 0) continue;
          let v = p[k * i]!;
          if (v > ceiling) v = ceiling;
          if (v !== v || v === nd) continue;
          shift = v;
          break;
        }
        if (shift !== shift) continue;
      }
      if (nd === undefined && ceiling === Infinity && k === 1) {
        for (let i = i0; i < i1; i++) {
          if (mask[i] === 0) continue;
          const v = p[i]!;
          if (v !== v) continue;
          const d = v - shift;
          s += d;
          ss += d * d;
          if (v < lo) lo = v;
          if (v > hi) hi = v;
          n++;
        }
      } else {
        for (let i = i0; i < i1; i++) {
          if (mask[i] === 0) continue;
          let v = p[k * i]!;
          if (v > ceiling) v = ceiling;
          if (v !== v || v === nd) continue;
          const d = v - shift;
          s += d;
          ss += d * d;
          if (v < lo) lo = v;
          if (v > hi) hi = v;
          n++;
        }
      }
    }
    this.n[b] = n;
    this.min[b] = lo;
    this.max[b] = hi;
    this.shift[b] = shift;
    this.s[b] = s;
    this.ss[b] = ss;
  }

  /**
   * `addBand` for U8 / S8 planes: a histogram of the valid pixels, then the same sums from the
   * histogram. Every partial sum is an integer below 2^53 (at most EXACT_BYTE_PIXELS pixels of
   * squared deviation at most 255^2), so float64 adds them exactly in any order: the same figures
   * as pixel by pixel. The shift is still the band's first valid value in pixel order.
   */
  private addBytes(
    b: number,
    p: Uint8Array | Int8Array,
    mask: Uint8Array,
    start: number,
    width: number,
    rows: number,
    stride: number,
    given: Uint32Array | undefined,
  ): void {
    const u = p instanceof Uint8Array ? p : new Uint8Array(p.buffer, p.byteOffset, p.length);
    const signed = p instanceof Int8Array;
    const nd = this.noData;
    const ceiling = this.ceiling;
    let shift = this.shift[b]!;
    for (let r = 0; r < rows && shift !== shift; r++) {
      const i0 = start + r * stride;
      for (let i = i0; i < i0 + width; i++) {
        if (mask[i] === 0) continue;
        let v = p[i]!;
        if (v > ceiling) v = ceiling;
        if (v === nd) continue;
        shift = v;
        break;
      }
    }
    if (shift !== shift) return; // no valid pixel here (none before either)
    // Four interleaved histograms (pixel i into the (i % 4)th): consecutive equal values would
    // otherwise wait on each other's increments. Rows without a masked pixel skip the mask tests.
    // Counts given for this very plane and mask, whole (ByteHistograms): not counted again.
    const h = given ?? (this.histogram ??= new Uint32Array(1024));
    // A window whose rows follow each other without a gap and no masked pixel: one loop.
    const flat = given === undefined && stride === width && maskAllValid(mask, start, width * rows);
    // In wasm when the kernels are on (src/wasm/stats.ts): the same counts.
    const counted = given !== undefined || histogramInWasm(u, mask, start, width, rows, stride, !flat, h);
    if (!counted) h.fill(0);
    if (flat && !counted) countRun(h, u, start, start + width * rows);
    for (let r = 0; r < (flat || counted ? 0 : rows); r++) {
      const i0 = start + r * stride;
      if (maskAllValid(mask, i0, width)) countRun(h, u, i0, i0 + width);
      else countMasked(h, u, mask, i0, i0 + width);
    }
    let n = this.n[b]!;
    let lo = this.min[b]!;
    let hi = this.max[b]!;
    let s = this.s[b]!;
    let ss = this.ss[b]!;
    for (let bin = 0; bin < 256; bin++) {
      const c = h[bin]! + h[256 + bin]! + h[512 + bin]! + h[768 + bin]!;
      if (c === 0) continue;
      let v = signed && bin > 127 ? bin - 256 : bin;
      if (v > ceiling) v = ceiling;
      if (v === nd) continue;
      const d = v - shift;
      s += d * c;
      ss += d * d * c;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
      n += c;
    }
    this.n[b] = n;
    this.min[b] = lo;
    this.max[b] = hi;
    this.shift[b] = shift;
    this.s[b] = s;
    this.ss[b] = ss;
  }

  /** Whether any band has a valid pixel. */
  get any(): boolean {
    return this.n.some((n) => n > 0);
  }

  /** Per band; undefined for a band without a valid pixel. `pixels`: the band's pixel count. */
  result(pixels: number): (FileBandStatistics | undefined)[] {
    return Array.from({ length: this.bandCount }, (_, b) => {
      const n = this.n[b]!;
      if (n === 0) return undefined;
      const s = this.s[b]!;
      const variance = Math.max(0, (this.ss[b]! - (s * s) / n) / n);
      return {
        min: this.min[b]!,
        max: this.max[b]!,
        mean: this.shift[b]! + s / n,
        stdDev: Math.sqrt(variance),
        count: n,
        // GDAL writes the percentage with 4 significant digits ("%.4g").
        validPercent: Number(((100 * n) / pixels).toPrecision(4)),
      };
    });
  }
}

/**
 * The counts of the byte values of `band`'s valid pixels (mask[i] !== 0, i < mask.length), in four
 * interleaved histograms of 256 bins (pixel i into the (i % 4)th: consecutive equal values would
 * otherwise wait on each other's increments), into `h` (1024 bins, zeroed first) or a new array.
 * Counted in wasm when the kernels are on (src/wasm/stats.ts: the same counts in the same bins).
 */
export function byteHistogram(band: Uint8Array, mask: Uint8Array, all = maskAllValid(mask), h = new Uint32Array(1024)): Uint32Array {
  const len = mask.length;
  if (len > 0 && histogramInWasm(band, mask, 0, len, 1, len, !all, h)) return h;
  h.fill(0);
  if (all) countRun(h, band, 0, len);
  else countMasked(h, band, mask, 0, len);
  return h;
}

/**
 * Pixels i0..i1-1 of `u` counted into four interleaved histograms (pixel i into the (i % 4)th:
 * consecutive equal values would otherwise wait on each other's increments); only their sums are read.
 */
function countRun(h: Uint32Array, u: Uint8Array, i0: number, i1: number): void {
  let i = i0;
  for (; i + 3 < i1; i += 4) {
    inc(h, u[i]!);
    inc(h, 256 + u[i + 1]!);
    inc(h, 512 + u[i + 2]!);
    inc(h, 768 + u[i + 3]!);
  }
  for (; i < i1; i++) inc(h, ((i & 3) << 8) | u[i]!);
}

/** countRun of the pixels whose mask byte is not 0. */
function countMasked(h: Uint32Array, u: Uint8Array, mask: Uint8Array, i0: number, i1: number): void {
  for (let i = i0; i < i1; i++) if (mask[i] !== 0) inc(h, ((i & 3) << 8) | u[i]!);
}

/** Statistics of a whole block (its planes are the file's pixels), as `gdalinfo -stats` gives them. */
export function blockStatistics(
  planes: readonly Plane[],
  mask: Uint8Array,
  width: number,
  height: number,
  pixelType: PixelType,
  noData: number | undefined,
): (FileBandStatistics | undefined)[] {
  const acc = new PixelStatistics(planes.length, pixelType, noData);
  acc.add(planes, mask, 0, width, height, width);
  return acc.result(width * height);
}

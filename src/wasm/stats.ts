/**
 * The byte statistics' wasm path (wasm/stats.ts): the counts of a byte window's values
 * (`byteHistogram`, PixelStatistics' byte bands) and the chipper's sums of squared deviations of
 * byte bands (`momentsOfBands`), and TIFF predictor 2 undone on byte planes (`horizontalPredictor`).
 * The TypeScript loops (src/io/pixel-statistics.ts, src/chipper/metadata.ts, src/io/decoders.ts)
 * stay the reference and the dispatchers: they call here first and run their own loop when this
 * answers undefined/false (wasm off, `RASTERFLOW_SIMD=0`, a small window, the arena full).
 * The results are the same bit for bit: the same counts in the same bins; each band's squared
 * deviations added in pixel order in one f64 chain, as the TypeScript loop adds them.
 *
 * Memory: planes are bound through a `WasmCall` (planes.ts): used where they are when they live in
 * wasm memory, else copied in. Decision: the copy pays (a 256^2 chip band's histogram, copy included:
 * about 2.5x the TypeScript loop's speed, bench/stats.bench.ts), so a byte plane of at least
 * STATS_WASM_MIN_PIXELS takes the wasm path when wasm is on, wherever it lives.
 */
import { wasmKernels } from './module.js';
import { WasmCall } from './planes.js';

/** The statistics exports of the kernels' module (wasm/stats.ts); addresses are byte addresses in its memory. */
export interface StatsExports {
  statsByteHistogram(
    band: number,
    mask: number,
    start: number,
    width: number,
    rows: number,
    stride: number,
    useMask: number,
    h: number,
  ): void;
  statsUndoDifferenceBytes(src: number, dst: number, width: number, rows: number): void;
  statsSquares(
    k: number,
    b0: number,
    b1: number,
    b2: number,
    b3: number,
    mask: number,
    n: number,
    useMask: number,
    t: number,
    out: number,
  ): void;
}

let enabled = true;
/**
 * Switch this family's wasm path off (false) or back on in this thread, leaving the other
 * kernels as they are: benchmarks compare the two paths of the statistics alone in one process.
 * @returns the previous setting.
 */
export function setStatsWasmEnabled(on: boolean): boolean {
  const was = enabled;
  enabled = on;
  return was;
}

/**
 * Decision: windows of fewer pixels than this stay in TypeScript. A call's fixed cost (binding the
 * planes, zeroing and folding the kernel's histograms) is 1-3 us; measured A/B (load ~3), the
 * TypeScript loops are faster up to about 1,000-1,500 pixels, wasm from 4,096 on (a 64 x 64 block:
 * 1.7x for the predictor and the histogram).
 */
export const STATS_WASM_MIN_PIXELS = 2048;
let minPixels = STATS_WASM_MIN_PIXELS;
/** Tests: the smallest window taking the wasm path (1: every window). @returns the previous value. */
export function setStatsWasmMinPixels(n: number): number {
  const was = minPixels;
  minPixels = n;
  return was;
}

let histogramCalls = 0;
let squaresCalls = 0;
/** Histograms counted in wasm in this thread (tests check the path they meant ran). */
export const statsHistogramCalls = (): number => histogramCalls;
/** Groups of squared-deviation sums computed in wasm in this thread. */
export const statsSquaresCalls = (): number => squaresCalls;

/**
 * Count the byte values of a window's pixels into `h` (1024 bins: four interleaved histograms,
 * pixel i of the plane into the (i % 4)th, zeroed first): `rows` rows of `width` pixels, row r from
 * index start + r * stride of `band` and of `mask` (pixels whose mask byte is 0 skipped when
 * `useMask`). @returns false when not done (wasm off, memory out): the caller counts in TypeScript.
 */
export function histogramInWasm(
  band: Uint8Array,
  mask: Uint8Array,
  start: number,
  width: number,
  rows: number,
  stride: number,
  useMask: boolean,
  h: Uint32Array,
): boolean {
  const k = enabled ? wasmKernels() : undefined;
  if (k === undefined || rows <= 0 || width <= 0 || width * rows < minPixels) return false;
  const span = (rows - 1) * stride + width;
  // A window past the plane's (or the mask's) end: the TypeScript loop's answer, whatever it is.
  if (start < 0 || start + span > band.length || (useMask && start + span > mask.length)) return false;
  const call = new WasmCall(k);
  try {
    // Only the window's span is bound (copied, when the plane lives elsewhere), from `start` on.
    const b = call.input(band.subarray(start, start + span));
    const m = useMask ? call.input(mask.subarray(start, start + span)) : 0;
    const out = call.scratch(16384);
    if (b === undefined || m === undefined || out === undefined) return false;
    // Indices relative to the bound span keep pixel i's histogram (i % 4) only when start % 4 is 0:
    // otherwise the kernel's bins are rotated back below.
    (k.exports as unknown as StatsExports).statsByteHistogram(b, m, 0, width, rows, stride, useMask ? 1 : 0, out);
    const got = new Uint32Array(k.arena.buffer, out, 1024);
    const shift = start & 3;
    if (shift === 0) h.set(got);
    else for (let q = 0; q < 4; q++) h.set(got.subarray(256 * q, 256 * q + 256), 256 * ((q + shift) & 3));
    histogramCalls++;
    return true;
  } finally {
    call.release();
  }
}

/**
 * The sums of squared deviations of `bands` (1 to 4 byte bands, each at least `n` long) over pixels
 * [0, n) whose mask byte is not 0 (every pixel when `mask` is undefined): s_j += t[256 * j +
 * bands[j][i]] in pixel order, the TypeScript loop's chain. Undefined when not done.
 */
export function squaresInWasm(
  bands: readonly Uint8Array[],
  mask: Uint8Array | undefined,
  n: number,
  t: Float64Array,
): number[] | undefined {
  const k = enabled ? wasmKernels() : undefined;
  const count = bands.length;
  if (k === undefined || count < 1 || count > 4 || n <= 0 || n < minPixels) return undefined;
  const call = new WasmCall(k);
  try {
    const ptrs: number[] = [];
    for (const b of bands) {
      if (b.length < n) return undefined;
      const p = call.input(b.subarray(0, n));
      if (p === undefined) return undefined;
      ptrs.push(p);
    }
    if ((mask !== undefined && mask.length < n) || t.length < 256 * count) return undefined;
    const m = mask === undefined ? 0 : call.input(mask.subarray(0, n));
    const tp = call.input(t.subarray(0, 256 * count));
    const out = call.scratch(32);
    if (m === undefined || tp === undefined || out === undefined) return undefined;
    const p0 = ptrs[0]!;
    (k.exports as unknown as StatsExports).statsSquares(
      count,
      p0,
      ptrs[1] ?? p0,
      ptrs[2] ?? p0,
      ptrs[3] ?? p0,
      m,
      n,
      mask === undefined ? 0 : 1,
      tp,
      out,
    );
    squaresCalls++;
    return Array.from(new Float64Array(k.arena.buffer, out, count));
  } finally {
    call.release();
  }
}

let undone = 0;
/** Byte blocks whose predictor 2 was undone in wasm in this thread. */
export const statsUndoDifferenceCalls = (): number => undone;

/**
 * Undo TIFF predictor 2 in place on `rows` rows of `width` bytes of `b` (one byte per sample, one
 * sample per pixel: the running sum of each row, modulo 256), in wasm. @returns false when not done
 * (wasm off, memory out): the caller undoes it in TypeScript.
 */
export function undoDifferenceInWasm(b: Uint8Array, width: number, rows: number): boolean {
  const k = enabled ? wasmKernels() : undefined;
  const n = width * rows;
  if (k === undefined || n <= 0 || n > b.length || n < minPixels) return false;
  const plane = b.subarray(0, n);
  const call = new WasmCall(k);
  try {
    const src = call.input(plane);
    const dst = call.output(plane);
    if (src === undefined || dst === undefined) return false;
    (k.exports as unknown as StatsExports).statsUndoDifferenceBytes(src, dst, width, rows);
    call.finish();
    undone++;
    return true;
  } finally {
    call.release();
  }
}

/**
 * Byte bands bound into wasm memory once for both passes of their moments: the histogram of each
 * (`histogram`), then the sums of squared deviations of all of them (`squares`), where
 * histogramInWasm then squaresInWasm bound (copied) every band twice. The same kernels on the same
 * bytes: the same counts and the same bits. `release` when done (in a `finally`).
 */
export class BoundByteBands {
  private constructor(
    private readonly k: NonNullable<ReturnType<typeof wasmKernels>>,
    private readonly call: WasmCall,
    private readonly ptrs: readonly number[],
    private readonly mask: number,
    private readonly useMask: 0 | 1,
    private readonly n: number,
  ) {}

  /** The block the histograms are counted in (one for every band). */
  private bins: number | undefined;

  /**
   * Bind `bands` (1 to 4 byte bands, each at least `n` long) over pixels [0, n), with `mask` (pixels
   * whose byte is 0 left out) or every pixel when undefined. Undefined when not done (wasm off, fewer
   * than STATS_WASM_MIN_PIXELS pixels, memory out): the caller's TypeScript path.
   */
  static bind(bands: readonly Uint8Array[], mask: Uint8Array | undefined, n: number): BoundByteBands | undefined {
    const k = enabled ? wasmKernels() : undefined;
    if (k === undefined || bands.length < 1 || bands.length > 4 || n <= 0 || n < minPixels) return undefined;
    if ((mask !== undefined && mask.length < n) || bands.some((b) => b.length < n)) return undefined;
    const call = new WasmCall(k);
    const ptrs: number[] = [];
    for (const b of bands) {
      const p = call.input(b.subarray(0, n));
      if (p === undefined) {
        call.release();
        return undefined;
      }
      ptrs.push(p);
    }
    const m = mask === undefined ? 0 : call.input(mask.subarray(0, n));
    if (m === undefined) {
      call.release();
      return undefined;
    }
    return new BoundByteBands(k, call, ptrs, m, mask === undefined ? 0 : 1, n);
  }

  /** byteHistogram of band `j` into `h` (1024 bins, overwritten). False when memory is out. */
  histogram(j: number, h: Uint32Array): boolean {
    const out = (this.bins ??= this.call.scratch(16384));
    if (out === undefined) return false;
    (this.k.exports as unknown as StatsExports).statsByteHistogram(this.ptrs[j]!, this.mask, 0, this.n, 1, this.n, this.useMask, out);
    h.set(new Uint32Array(this.k.arena.buffer, out, 1024));
    histogramCalls++;
    return true;
  }

  /** squaresInWasm of the bound bands with table `t` (256 entries a band); undefined when memory is out. */
  squares(t: Float64Array): number[] | undefined {
    const count = this.ptrs.length;
    if (t.length < 256 * count) return undefined;
    const tp = this.call.input(t.subarray(0, 256 * count));
    const out = this.call.scratch(32);
    if (tp === undefined || out === undefined) return undefined;
    const p0 = this.ptrs[0]!;
    (this.k.exports as unknown as StatsExports).statsSquares(
      count,
      p0,
      this.ptrs[1] ?? p0,
      this.ptrs[2] ?? p0,
      this.ptrs[3] ?? p0,
      this.mask,
      this.n,
      this.useMask,
      tp,
      out,
    );
    squaresCalls++;
    return Array.from(new Float64Array(this.k.arena.buffer, out, count));
  }

  /** Give the bound blocks back. */
  release(): void {
    this.call.release();
  }
}

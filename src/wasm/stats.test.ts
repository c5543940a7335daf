/**
 * The byte statistics' wasm path (wasm/stats.ts, glue src/wasm/stats.ts) against the TypeScript
 * references, bit for bit (no tolerance: the counts are integers in the same bins, and each band's
 * squared deviations are added in pixel order in one f64 chain on both paths):
 *   - `byteHistogram`: the same 1024 bins, over seeded random planes with random, sparse, empty and
 *     full masks, lengths that are not multiples of 4 or 16, planes starting at odd byte offsets,
 *     all-equal planes and planes of only 0 and 255, planes in wasm memory (bound in place) and in
 *     JS memory (copied in);
 *   - `PixelStatistics` on U8/S8 windows (odd starts, strides, widths; NoData, NBITS): the same
 *     results;
 *   - `momentsOfBands`: the same moments (Object.is on every figure) for 1 to 6 bands, masked or
 *     not, with and without the caller's histograms;
 *   - `horizontalPredictor` (predictor 2 undone) on byte planes: the same bytes as the TypeScript
 *     loops and as a plain running sum, for widths around the sixteen-byte steps, odd offsets, in
 *     wasm memory and not.
 * Every comparison checks the wasm path ran (its call counters), and RASTERFLOW_SIMD=0 switches
 * it off.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { prng } from '../../test/helpers.js';
import { momentsOfBands, type BandMoments } from '../chipper/metadata.js';
import { horizontalPredictor } from '../io/decoders.js';
import { byteHistogram, PixelStatistics } from '../io/pixel-statistics.js';
import { setWasmEnabled, wasmKernels } from './module.js';
import { tileBlocks } from './planes.js';
import { setStatsWasmMinPixels, STATS_WASM_MIN_PIXELS, statsHistogramCalls, statsSquaresCalls, statsUndoDifferenceCalls } from './stats.js';

const wasmOn = wasmKernels() !== undefined;

// Every window takes the wasm path here (tails and tiny planes included), except in the test of
// the threshold itself.
beforeAll(() => void setStatsWasmMinPixels(1));
afterAll(() => void setStatsWasmMinPixels(STATS_WASM_MIN_PIXELS));

/** Run `f` on the TypeScript path (wasm switched off in this thread), then back on. */
function typescriptPath<T>(f: () => T): T {
  const was = setWasmEnabled(false);
  try {
    return f();
  } finally {
    setWasmEnabled(was);
  }
}

type Fill = 'random' | 'narrow' | 'equal' | 'extremes' | 'runs';
function bytes(n: number, seed: number, fill: Fill, offset = 0): Uint8Array {
  const r = prng(seed);
  const out = new Uint8Array(n + offset).subarray(offset);
  const c = Math.floor(r() * 256);
  for (let i = 0; i < n; i++) {
    if (fill === 'random') out[i] = Math.floor(r() * 256);
    else if (fill === 'narrow') out[i] = 100 + Math.floor(r() * 5);
    else if (fill === 'equal') out[i] = c;
    else if (fill === 'extremes') out[i] = r() < 0.5 ? 0 : 255;
    else out[i] = (Math.floor(i / 23) * 37 + c) & 255;
  }
  return out;
}

type MaskKind = 'full' | 'random' | 'sparse' | 'empty' | 'blocks';
function maskOf(n: number, seed: number, kind: MaskKind, offset = 0): Uint8Array {
  const r = prng(seed);
  const m = new Uint8Array(n + offset).subarray(offset);
  for (let i = 0; i < n; i++) {
    if (kind === 'full') m[i] = 1;
    else if (kind === 'random') m[i] = r() < 0.7 ? 1 : 0;
    else if (kind === 'sparse') m[i] = r() < 0.02 ? 1 : 0;
    else if (kind === 'blocks') m[i] = Math.floor(i / 40) % 3 === 0 ? 0 : 1;
  }
  return m;
}

const LENGTHS = [1, 3, 4, 5, 15, 16, 17, 31, 33, 255, 1000, 4099, 65536, 65537];
const FILLS: readonly Fill[] = ['random', 'narrow', 'equal', 'extremes', 'runs'];
const MASKS: readonly MaskKind[] = ['full', 'random', 'sparse', 'empty', 'blocks'];

/** Every figure of two moments lists the same bits (Object.is: 0 and -0, NaN). */
function sameMoments(a: readonly BandMoments[], b: readonly BandMoments[], what: string): void {
  expect(a.length, what).toBe(b.length);
  a.forEach((m, j) => {
    for (const key of ['min', 'max', 'm1', 'm2', 'num'] as const)
      expect(Object.is(m[key], b[j]![key]), `${what} band ${j} ${key}: ${m[key]} vs ${b[j]![key]}`).toBe(true);
  });
}

describe.skipIf(!wasmOn)('wasm byte histograms', () => {
  it('byteHistogram: the same 1024 bins as the TypeScript loop, through the wasm path', () => {
    let seed = 1;
    for (const n of LENGTHS)
      for (const fill of FILLS)
        for (const kind of MASKS) {
          for (const offset of n < 5000 ? [0, 1, 3] : [0]) {
            const band = bytes(n, seed++, fill, offset);
            const mask = maskOf(n, seed++, kind, (offset * 7) % 4);
            const all = kind === 'full';
            const ts = typescriptPath(() => byteHistogram(band, mask, all));
            const before = statsHistogramCalls();
            const got = byteHistogram(band, mask, all);
            expect(statsHistogramCalls(), 'the wasm path').toBe(before + 1);
            expect(got, `${n} ${fill} ${kind} +${offset}`).toEqual(ts);
            // The default `all` (maskAllValid) and a histogram given to fill.
            expect(byteHistogram(band, mask, undefined, new Uint32Array(1024).fill(7))).toEqual(ts);
          }
        }
  });

  it('byteHistogram of planes in wasm memory (bound in place) equals the copy path', () => {
    const blocks = tileBlocks()!;
    try {
      const block = blocks.allocate({ x: 0, y: 0, width: 257, height: 131 }, 'U8', 1);
      const band = block.bands[0] as Uint8Array;
      band.set(bytes(band.length, 77, 'random'));
      for (let i = 0; i < block.mask.length; i += 5) block.mask[i] = 0;
      const ts = typescriptPath(() => byteHistogram(band, block.mask, false));
      const before = statsHistogramCalls();
      expect(byteHistogram(band, block.mask, false)).toEqual(ts);
      expect(byteHistogram(band.slice(), block.mask.slice(), false)).toEqual(ts);
      expect(statsHistogramCalls()).toBe(before + 2);
    } finally {
      blocks.release();
    }
  });

  it('PixelStatistics of U8 and S8 windows: the same results on both paths', () => {
    const r = prng(5);
    let seed = 100;
    for (let trial = 0; trial < 120; trial++) {
      const stride = 1 + Math.floor(r() * 90);
      const width = 1 + Math.floor(r() * stride);
      const rows = 1 + Math.floor(r() * 40);
      const start = Math.floor(r() * 19);
      const len = start + (rows - 1) * stride + width + Math.floor(r() * 5);
      const fill = FILLS[trial % FILLS.length]!;
      const kind = MASKS[Math.floor(trial / FILLS.length) % MASKS.length]!;
      const u = bytes(len, seed++, fill);
      const mask = maskOf(len, seed++, kind);
      const signed = trial % 3 === 2;
      const plane = signed ? new Int8Array(u.buffer, u.byteOffset, len) : u;
      const noData = trial % 4 === 1 ? (signed ? -3 : 200) : undefined;
      const bits = trial % 7 === 3 && !signed ? 6 : undefined;
      const run = (): unknown => {
        const s = new PixelStatistics(2, signed ? 'S8' : 'U8', noData, bits);
        // Two windows into each band (the shift from the first), the second band the plane reversed.
        const rev = plane.slice().reverse();
        s.add([plane, rev], mask, start, width, rows, stride);
        s.add([plane, rev], mask, 0, Math.min(width, len), 1, Math.min(width, len));
        return s.result(width * rows);
      };
      const ts = typescriptPath(run);
      const before = statsHistogramCalls();
      const got = run();
      expect(got, `trial ${trial}`).toEqual(ts);
      // Counted in wasm whenever a band had a valid pixel (else addBytes stops before counting).
      if ((ts as unknown[]).some((b) => b !== undefined)) expect(statsHistogramCalls(), 'the wasm path').toBeGreaterThan(before);
    }
  });

  it('momentsOfBands: the same bits for 1 to 6 byte bands, masked or not, with and without given histograms', () => {
    let seed = 1000;
    for (const n of [1, 3, 17, 255, 1001, 65536, 65539])
      for (const kind of MASKS)
        for (const count of [1, 2, 3, 4, 5, 6]) {
          const fills = Array.from({ length: count }, (_, b) => FILLS[(b + n) % FILLS.length]!);
          const bands = fills.map((f, b) => bytes(n, seed++, f, b % 2));
          const mask = maskOf(n, seed++, kind);
          const all = kind === 'full';
          const given = bands.map((b, j) => (j % 2 === 0 ? typescriptPath(() => byteHistogram(b, mask, all)) : undefined));
          for (const histograms of [[], given]) {
            const ts = typescriptPath(() => momentsOfBands(bands, mask, histograms, all));
            const before = statsSquaresCalls();
            const got = momentsOfBands(bands, mask, histograms, all);
            // One call per group of four bands, unless no pixel is valid (empty moments).
            if (mask.some((v) => v !== 0)) expect(statsSquaresCalls() - before, 'the wasm path').toBe(Math.ceil(count / 4));
            sameMoments(got, ts, `${n} ${kind} x${count}`);
          }
        }
  });

  it('momentsOfBands beside other band types: only the byte bands take the wasm path', () => {
    const n = 999;
    const mask = maskOf(n, 3, 'random');
    const f32 = Float32Array.from(bytes(n, 4, 'random'), (v, i) => (i % 97 === 0 ? NaN : v / 3));
    const bands = [bytes(n, 5, 'random'), f32, bytes(n, 6, 'extremes'), new Uint16Array(n).fill(9)];
    const ts = typescriptPath(() => momentsOfBands(bands, mask));
    const before = statsSquaresCalls();
    sameMoments(momentsOfBands(bands, mask), ts, 'mixed');
    expect(statsSquaresCalls()).toBe(before + 1);
  });
});

describe.skipIf(!wasmOn)('wasm predictor 2 undone on bytes', () => {
  /** The running sum of each row, modulo 256: what undoing horizontal differencing gives. */
  const runningSums = (b: Uint8Array, width: number, rows: number): Uint8Array => {
    const out = b.slice();
    for (let r = 0; r < rows; r++) for (let i = 1; i < width; i++) out[r * width + i] = out[r * width + i]! + out[r * width + i - 1]!;
    return out;
  };

  it('horizontalPredictor: the same bytes as the TypeScript loops, through the wasm path', () => {
    let seed = 500;
    for (const width of [1, 2, 3, 4, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 1024])
      for (const rows of [1, 2, 7])
        for (const fill of FILLS)
          for (const offset of [0, 1, 4]) {
            const src = bytes(width * rows, seed++, fill, offset);
            const ts = src.slice();
            typescriptPath(() => horizontalPredictor(ts, width, rows, 1, 1));
            const got = src.slice(); // aligned
            const before = statsUndoDifferenceCalls();
            horizontalPredictor(src, width, rows, 1, 1); // at `offset`
            horizontalPredictor(got, width, rows, 1, 1);
            expect(statsUndoDifferenceCalls(), 'the wasm path').toBe(before + 2);
            expect(got, `${width}x${rows} ${fill}`).toEqual(ts);
            expect(src, `${width}x${rows} ${fill} +${offset}`).toEqual(ts);
            expect(ts).toEqual(runningSums(bytes(width * rows, seed - 1, fill, offset), width, rows));
          }
  });

  it('horizontalPredictor on a plane in wasm memory (in place) and past the rows it is given', () => {
    const blocks = tileBlocks()!;
    try {
      const block = blocks.allocate({ x: 0, y: 0, width: 77, height: 13 }, 'U8', 1);
      const plane = block.bands[0] as Uint8Array;
      plane.set(bytes(plane.length, 31, 'random'));
      const want = plane.slice();
      typescriptPath(() => horizontalPredictor(want, 77, 12, 1, 1)); // the last row left as it is
      const before = statsUndoDifferenceCalls();
      horizontalPredictor(plane, 77, 12, 1, 1);
      expect(statsUndoDifferenceCalls()).toBe(before + 1);
      expect(plane).toEqual(want);
    } finally {
      blocks.release();
    }
  });
});

describe.skipIf(!wasmOn)('wasm byte statistics: small windows', () => {
  it('stay in TypeScript below STATS_WASM_MIN_PIXELS, take wasm from it on', () => {
    const was = setStatsWasmMinPixels(STATS_WASM_MIN_PIXELS);
    try {
      for (const n of [STATS_WASM_MIN_PIXELS - 1, STATS_WASM_MIN_PIXELS]) {
        const band = bytes(n, n, 'random');
        const mask = maskOf(n, 2, 'random');
        const h0 = statsHistogramCalls();
        const s0 = statsSquaresCalls();
        const u0 = statsUndoDifferenceCalls();
        const want = typescriptPath(() => momentsOfBands([band, band], mask));
        sameMoments(momentsOfBands([band, band], mask), want, `${n}`);
        horizontalPredictor(band.slice(), n, 1, 1, 1);
        const taken = n >= STATS_WASM_MIN_PIXELS ? 1 : 0;
        expect(statsHistogramCalls() - h0, `${n}`).toBe(2 * taken);
        expect(statsSquaresCalls() - s0, `${n}`).toBe(taken);
        expect(statsUndoDifferenceCalls() - u0, `${n}`).toBe(taken);
      }
    } finally {
      setStatsWasmMinPixels(was);
    }
  });
});

describe('wasm byte statistics switched off', () => {
  it('RASTERFLOW_SIMD=0: the TypeScript paths run, the same results', async () => {
    const band = bytes(4099, 9, 'random');
    const mask = maskOf(4099, 10, 'random');
    const want = typescriptPath(() => byteHistogram(band, mask, false));
    const wantMoments = typescriptPath(() => momentsOfBands([band, band, band], mask));
    vi.stubEnv('RASTERFLOW_SIMD', '0');
    vi.resetModules();
    try {
      const m = await import('./module.js');
      const s = await import('./stats.js');
      const p = await import('../io/pixel-statistics.js');
      const md = await import('../chipper/metadata.js');
      expect(m.wasmStatus()).toEqual({ enabled: false, detail: 'switched off (RASTERFLOW_SIMD=0)' });
      expect(p.byteHistogram(band, mask, false)).toEqual(want);
      sameMoments(md.momentsOfBands([band, band, band], mask), wantMoments, 'off');
      expect(s.statsHistogramCalls()).toBe(0);
      expect(s.statsSquaresCalls()).toBe(0);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

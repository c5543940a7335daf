/**
 * chipMoments (a chip's bands bound into wasm once for their histograms and squared deviations):
 * the bits of momentsOfBands and the counts of byteHistogram, with the kernels on and off, for 1 to
 * 5 bands (5: the TypeScript path), masks, a chip without a valid pixel and other pixel types.
 */
import { describe, expect, it } from 'vitest';
import { byteHistogram } from '../io/pixel-statistics.js';
import { wasmKernels } from '../wasm/module.js';
import { setStatsWasmEnabled, statsHistogramCalls, statsSquaresCalls } from '../wasm/stats.js';
import { chipMoments, momentsOf } from './metadata.js';
import { prng } from '../../test/helpers.js';

describe('chipMoments', () => {
  const next = prng(77);
  const n = 256 * 256;
  const band = (narrow: boolean): Uint8Array =>
    Uint8Array.from({ length: n }, () => (narrow ? 100 + Math.floor(next() * 3) : Math.floor(next() * 256)));
  const masks: [string, Uint8Array][] = [
    ['all valid', new Uint8Array(n).fill(1)],
    ['some masked', Uint8Array.from({ length: n }, () => (next() < 0.9 ? 1 : 0))],
    ['none valid', new Uint8Array(n)],
  ];
  for (const wasm of [true, false]) {
    for (const [name, mask] of masks) {
      for (const count of [1, 2, 3, 4, 5]) {
        it(`${count} U8 band(s), ${name}, wasm ${wasm ? 'on' : 'off'}: momentsOf's bits and byteHistogram's counts`, () => {
          const was = setStatsWasmEnabled(wasm);
          try {
            const bands = Array.from({ length: count }, (_, j) => band(j === 1));
            const allValid = mask.every((m) => m === 1);
            const h0 = statsHistogramCalls();
            const s0 = statsSquaresCalls();
            const got = chipMoments(bands, mask, allValid);
            const bound = wasm && wasmKernels() !== undefined && count <= 4;
            if (bound) {
              expect(statsHistogramCalls() - h0).toBe(count);
              // One squares call for the bands together (none when no pixel is valid).
              expect(statsSquaresCalls() - s0).toBe(name === 'none valid' ? 0 : 1);
            }
            expect(got.moments).toEqual(bands.map((b) => momentsOf(b, mask)));
            got.histograms.forEach((h, j) => expect(Array.from(h!)).toEqual(Array.from(byteHistogram(bands[j]!, mask, allValid))));
          } finally {
            setStatsWasmEnabled(was);
          }
        });
      }
    }
  }

  it('the wasm path is the one tested above (kernels on unless RASTERFLOW_SIMD=0)', () => {
    expect(wasmKernels() !== undefined).toBe(process.env.RASTERFLOW_SIMD !== '0');
  });

  it('bands of other types: momentsOf for each, histograms only for the byte bands', () => {
    const mask = masks[1]![1];
    const f = Float32Array.from({ length: n }, () => next() * 10);
    const b = band(false);
    const got = chipMoments([f, b], mask, false);
    expect(got.moments).toEqual([momentsOf(f, mask), momentsOf(b, mask)]);
    expect(got.histograms[0]).toBeUndefined();
    expect(Array.from(got.histograms[1]!)).toEqual(Array.from(byteHistogram(b, mask, false)));
  });
});

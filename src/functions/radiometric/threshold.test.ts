// Expected thresholds worked out by hand from Otsu's between-class variance w0*w1*(mu0 - mu1)^2
// on tiny histograms (written out beside each case), not from our output.
import { describe, expect, it } from 'vitest';
import type { RasterNode } from '../../graph/types.js';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { otsuThreshold, threshold } from './threshold.js';

const row = (values: readonly number[], pixelType: 'F32' | 'U8' = 'U8', mask?: Uint8Array): RasterNode =>
  rasterOf({ width: values.length, height: 1, pixelType }, (x) => values[x]!, mask);

const out = async (input: RasterNode, tile?: number) => {
  const r = await runFunction(threshold, {}, [input], tile);
  return Array.from({ length: r.info.width }, (_, x) => (r.valid(x, 0) ? r.value(x, 0) : null));
};

describe('Threshold (Otsu)', () => {
  it('splits 0, 0, 0, 0, 1, 1, 1, 1, 10, 10 after 1 (variance 1444 against 384 after 0)', async () => {
    // k = 0: w0 4, mu0 0 | w1 6, mu1 4 -> 4*6*16 = 384; k = 1..9: w0 8, mu0 0.5 | w1 2, mu1 10 -> 8*2*90.25 = 1444.
    // The first maximum is k = 1: t = boundary 1.5, so 0 and 1 -> 0, 10 -> 1.
    expect(await out(row([0, 0, 0, 0, 1, 1, 1, 1, 10, 10]))).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
  });

  it('puts the boundary after the first bin of a two-value image (ties go to the lowest split)', () => {
    // Values 10 and 200, 5 each: every split 10..199 has the same variance; the first is k = 10 -> t = 10.5.
    const counts = new Array(256).fill(0);
    counts[10] = 5;
    counts[200] = 5;
    expect(otsuThreshold({ size: 256, min: -0.5, max: 255.5, counts })).toBe(10.5);
  });

  it('thresholds float data at a bin boundary of the 256 bins over [min, max]', async () => {
    // 0.1 x3, 0.2 x2 | 0.8 x2, 0.9 x3: a clear gap; w = 0.8/256; the split is the last bin of the
    // low class (0.2 sits in bin floor(0.1/w) = 32), t = 0.1 + 33 w = 0.203125.
    const values = [0.1, 0.1, 0.1, 0.2, 0.2, 0.8, 0.8, 0.9, 0.9, 0.9];
    const h = { size: 256, min: Math.fround(0.1), max: Math.fround(0.9), counts: new Array(256).fill(0) };
    expect(await out(row(values, 'F32'))).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
    h.counts[0] = 3;
    h.counts[32] = 2;
    h.counts[191] = 2;
    h.counts[255] = 3;
    expect(otsuThreshold(h)).toBeCloseTo(0.1 + 33 * (0.8 / 256), 6);
  });

  it('uses the whole request: tiles of one value still split like the whole image', async () => {
    const values = [0, 0, 0, 0, 1, 1, 1, 1, 10, 10];
    expect(await out(row(values), 1)).toEqual(await out(row(values)));
  });

  it('a constant band has no split: every valid pixel is 0; NoData and NaN stay NoData', async () => {
    expect(await out(row([7, 7, 7]))).toEqual([0, 0, 0]);
    expect(await out(row([1, Number.NaN, 9, 9], 'F32', Uint8Array.from([1, 1, 0, 1])))).toEqual([0, null, null, 1]);
  });

  it('works per band and advertises 0..1 U8 output', async () => {
    const two = rasterOf({ width: 4, height: 1, bandCount: 2, pixelType: 'U8' }, (x, _y, b) =>
      b === 0 ? [1, 1, 9, 9][x]! : [5, 6, 6, 6][x]!,
    );
    const r = await runFunction(threshold, {}, [two]);
    expect(r.info.pixelType).toBe('U8');
    expect(r.info.statistics).toEqual([
      { min: 0, max: 1 },
      { min: 0, max: 1 },
    ]);
    expect(Array.from(r.block.bands[0]!)).toEqual([0, 0, 1, 1]);
    expect(Array.from(r.block.bands[1]!)).toEqual([0, 1, 1, 1]);
  });

  it('rejects other threshold types and complex input', () => {
    const e = catchError(() => applyFunction(threshold, { ThresholdType: 2 }, [row([1])]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.ThresholdType']);
    expect(applyFunction(threshold, { ThresholdType: 'Otsu' }, [row([1])]).plan.requestStatistics).toEqual({ inputs: [0], bins: 256 });
  });
});

// CCDC and DetectChange on hand-built series whose breaks are known by construction (a step
// added from a given date on); chi-square quantiles checked against published table values.
import { describe, expect, it } from 'vitest';
import { decimalYear, timeSeriesMultidim } from '../../core/multidim.js';
import type { RasterNode } from '../../graph/types.js';
import { applyFunction, catchError, prng, rasterOf, runFunction } from '../../../test/helpers.js';
import { ccdc } from './ccdc.js';
import { detectChange } from './detect-change.js';
import { chiSquareQuantile } from './regression.js';

const DAY = 86400000;
const N = 40;
const times = Array.from({ length: N }, (_, k) => Date.UTC(2000, 0, 1) + k * 30 * DAY);
const noise = prng(7);
const jitter = Array.from({ length: 4 * N * 2 }, () => 3 * (noise() - 0.5));

/** Pixel x: 0 a step at date 20; 1 no change; 2 clouds at dates 2 and 5 and a step at date 25. */
function value(x: number, k: number, band: number): number {
  const w = (2 * Math.PI * times[k]!) / DAY / 365.25;
  let v = band === 0 ? 60 + 8 * Math.sin(w) : 120 + 15 * Math.cos(w);
  v += jitter[(x * N + k) * 2 + band]!;
  if (x === 0 && k >= 20) v += band === 0 ? 40 : -50;
  if (x === 2 && (k === 2 || k === 5)) v += 100;
  if (x === 2 && k >= 25) v += band === 0 ? 30 : -60;
  if (x === 3 && k === 13) return Number.NaN; // a missing date
  return v;
}

const series = (): RasterNode =>
  rasterOf({ width: 4, height: 1, bandCount: 2 * N, extra: { multidimensional: timeSeriesMultidim('L', times, 2) } }, (x, _y, b) =>
    value(x, b >> 1, b & 1),
  );

describe('chi-square quantiles', () => {
  it('match table values', () => {
    expect(chiSquareQuantile(0.99, 1)).toBeCloseTo(6.634897, 5);
    expect(chiSquareQuantile(0.99, 6)).toBeCloseTo(16.811894, 5);
    expect(chiSquareQuantile(0.95, 2)).toBeCloseTo(5.991465, 5);
  });
});

describe('CCDC', () => {
  it('finds the inserted break and fits one segment on each side', async () => {
    const r = await runFunction(ccdc, { TmaskBandIDs: [0, 1] }, [series()]);
    const K = 5 + 2 * 10;
    expect(r.info.bandCount).toBe(3 * K); // floor(40 / 12) = 3 segment slots
    expect(r.info.multidimensional!.model).toMatchObject({ kind: 'ccdc', changeBands: [0, 1], maxSegments: 3, bandsPerSegment: K });
    const seg = (x: number, s: number) => [0, 1, 2, 3, 4].map((b) => r.value(x, 0, s * K + b));
    expect(seg(0, 0)).toEqual([decimalYear(times[0]!), decimalYear(times[19]!), decimalYear(times[20]!), 1, 20]);
    expect(seg(0, 1).slice(0, 3)).toEqual([decimalYear(times[20]!), decimalYear(times[39]!), 0]);
    // Step +40 in band 0 and -50 in band 1: the magnitudes are near them.
    expect(r.value(0, 0, 5 + 9)).toBeCloseTo(40, -1);
    expect(r.value(0, 0, 5 + 10 + 9)).toBeCloseTo(-50, -1);
    // The fitted seasonal term of band 0 is 8 sin: Sin1 near 8, slope near 0 per day.
    expect(Math.abs(r.value(0, 0, 5 + 3) - 8)).toBeLessThan(1.5);
    expect(seg(1, 0).slice(2, 5)).toEqual([0, 0, 40]);
    expect(seg(1, 1)).toEqual([0, 0, 0, 0, 0]);
    // Clouds in the first window are screened by Tmask; the step at date 25 is found.
    expect(seg(2, 0)[2]).toBe(decimalYear(times[25]!));
    expect(seg(2, 0)[4]).toBe(23);
    expect(seg(3, 0)[4]).toBe(39);
  });

  it('without Tmask, clouds in the first window inflate its RMSE and hide the later step', async () => {
    const r = await runFunction(ccdc, {}, [series()]);
    expect(r.value(2, 0, 2)).toBe(0);
    expect(r.value(0, 0, 2)).toBe(decimalYear(times[20]!));
  });

  it('MinNumberAnomaly larger than the run after a break: no break, change probability at the end', async () => {
    const late = rasterOf(
      { width: 1, height: 1, bandCount: 2 * N, extra: { multidimensional: timeSeriesMultidim('L', times, 2) } },
      (_x, _y, b) => value(1, b >> 1, b & 1) + (b >> 1 >= 37 ? 80 : 0),
    );
    const r = await runFunction(ccdc, {}, [late]);
    expect(r.value(0, 0, 2)).toBe(0);
    expect(r.value(0, 0, 3)).toBe(0.5); // 3 anomalous of MinNumberAnomaly 6
  });

  it('rejects bad inputs and arguments with their paths', () => {
    const plain = rasterOf({ width: 1, height: 1, bandCount: 2 }, () => 1);
    const e1 = catchError(() => applyFunction(ccdc, {}, [plain]));
    expect([e1?.code, e1?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
    const src = series();
    for (const [args, path] of [
      [{ BandIDs: [2] }, 'BandIDs'],
      [{ TmaskBandIDs: [1] }, 'TmaskBandIDs'],
      [{ ChiSquareProb: 1.5 }, 'ChiSquareProb'],
      [{ UpdatingFrequency: 0 }, 'UpdatingFrequency'],
      [{ MinNumberAnomaly: 0 }, 'MinNumberAnomaly'],
    ] as const) {
      const e = catchError(() => applyFunction(ccdc, args, [src]));
      expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', `rasterFunctionArguments.${path}`]);
    }
    const short = rasterOf(
      { width: 1, height: 1, bandCount: 5, extra: { multidimensional: timeSeriesMultidim('L', times.slice(0, 5)) } },
      () => 1,
    );
    expect(catchError(() => applyFunction(ccdc, {}, [short]))?.code).toBe('UNSUPPORTED_INPUT');
  });
});

describe('DetectChange', () => {
  const model = () => applyFunction(ccdc, { TmaskBandIDs: [0, 1] }, [series()]);

  it('time of latest / earliest / largest change and the number of changes', async () => {
    const latest = await runFunction(detectChange, {}, [model()]);
    expect(latest.info.pixelType).toBe('F32');
    expect([0, 1, 2, 3].map((x) => (latest.valid(x, 0) ? latest.value(x, 0) : null))).toEqual([
      Math.fround(decimalYear(times[20]!)),
      null,
      Math.fround(decimalYear(times[25]!)),
      null,
    ]);
    const count = await runFunction(detectChange, { ChangeType: 3 }, [model()]);
    expect(count.info.pixelType).toBe('U16');
    expect([0, 1, 2, 3].map((x) => count.value(x, 0))).toEqual([1, 0, 1, 0]);
    const two = await runFunction(detectChange, { ChangeType: 'TimeOfEarliestChange', MaxNumberChanges: 2 }, [model()]);
    expect([two.value(0, 0, 0), two.value(0, 0, 1)]).toEqual([Math.fround(decimalYear(times[20]!)), 0]);
  });

  it('orders several changes by relevance', async () => {
    const K = 5 + 10;
    const md = {
      variables: [
        {
          name: 'CCDC',
          dimensions: [{ name: 'Segment', time: false }],
          bandsPerSlice: K,
          slices: [0, 1, 2].map((s) => ({ values: [s + 1], band: s * K })),
        },
      ],
      model: { kind: 'ccdc' as const, changeBands: [0], maxSegments: 3, bandsPerSegment: K },
    };
    // Segment breaks at 2003.5 (magnitude 10), 2001.25 (magnitude -30), none.
    const fields: Record<number, number> = { 2: 2003.5, [5 + 9]: 10, [K + 2]: 2001.25, [K + 5 + 9]: -30 };
    const cc = rasterOf(
      { width: 1, height: 1, bandCount: 3 * K, pixelType: 'F64', extra: { multidimensional: md } },
      (_x, _y, b) => fields[b] ?? 0,
    );
    const run = async (t: number) => {
      const r = await runFunction(detectChange, { ChangeType: t, MaxNumberChanges: 3 }, [cc]);
      return [0, 1, 2].map((b) => r.value(0, 0, b));
    };
    expect(await run(0)).toEqual([2003.5, 2001.25, 0]);
    expect(await run(1)).toEqual([2001.25, 2003.5, 0]);
    expect(await run(2)).toEqual([2001.25, 2003.5, 0]);
  });

  it('rejects a raster that is not a CCDC result', () => {
    const e = catchError(() => applyFunction(detectChange, {}, [series()]));
    expect([e?.code, e?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
    expect(catchError(() => applyFunction(detectChange, { ChangeType: 4 }, [model()]))?.path).toBe('rasterFunctionArguments.ChangeType');
  });
});

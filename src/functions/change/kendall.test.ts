// Expected values derived by hand from the Mann-Kendall / Seasonal-Kendall formulas (kendall.ts
// header; Gilbert 1987) on tiny series: every pair, sign, tie group and slope is listed in the
// comments. erfc values are the standard table values (Abramowitz & Stegun 7.1), p-values of z
// from the normal table (Φ(1.01) = 0.84375, Φ(1.02) = 0.84614, linear interpolation).
import { describe, expect, it } from 'vitest';
import { erfc, KendallScratch, kendallLayout, kendallTest, largestSeason, median, seasonOf, selectKth } from './kendall.js';

/** Run the test on runs of (t, y) given season by season. */
function run(seasons: readonly (readonly [number, number])[][]): Float64Array | undefined {
  const n = seasons.reduce((a, s) => a + s.length, 0);
  const s = new KendallScratch(n);
  let c = 0;
  seasons.forEach((run, k) => {
    for (const [t, y] of run) {
      s.t[c] = t;
      s.y[c] = y;
      c++;
    }
    s.ends[k] = c;
  });
  const out = new Float64Array(5);
  return kendallTest(s, seasons.length, out, 0) ? out : undefined;
}

describe('Mann-Kendall', () => {
  it('x = 1 3 2 2 5 at t = 0..4: S 5, Var 282/18, z 4/sd, p 0.3122, Sen 7/12', () => {
    // pairs (i<j): + (1,3)(1,2)(1,2)(1,5)(3,5)(2,5)(2,5) = 7, - (3,2)(3,2) = 2, tie (2,2): S = 5.
    // Var = [5·4·15 − 2·1·9] / 18 = 282/18. z = (5 − 1)/sqrt(282/18) = 1.01058.
    // slopes 2, 1/2, 1/3, 1, -1, -1/2, 2/3, 0, 3/2, 3 -> middle two 1/2 and 2/3 -> 7/12.
    const r = run([
      [
        [0, 1],
        [1, 3],
        [2, 2],
        [3, 2],
        [4, 5],
      ],
    ])!;
    expect(r[2]).toBe(5);
    expect(r[3]).toBeCloseTo(282 / 18, 12);
    expect(r[4]).toBeCloseTo(4 / Math.sqrt(282 / 18), 12);
    expect(r[1]).toBeCloseTo(2 * (1 - (0.84375 + 0.058 * 0.00239)), 4);
    expect(r[0]).toBeCloseTo(7 / 12, 14);
  });

  it('falling series: z uses S + 1; all tied: S 0, Var 0, z 0, p 1, slope 0', () => {
    // 4 3 2 1: S = −6, Var = 4·3·13/18 = 156/18, z = −5/sqrt(156/18); slopes all −1.
    const r = run([
      [
        [0, 4],
        [1, 3],
        [2, 2],
        [3, 1],
      ],
    ])!;
    expect([r[0], r[2], r[3]]).toEqual([-1, -6, 156 / 18]);
    expect(r[4]).toBeCloseTo(-5 / Math.sqrt(156 / 18), 12);
    const flat = run([
      [
        [0, 7],
        [5, 7],
        [9, 7],
      ],
    ])!;
    expect([...flat]).toEqual([0, 1, 0, 0, 0]);
  });

  it('two values: S ±1, Var 1, z 0, p 1; one value: no result', () => {
    expect([
      ...run([
        [
          [10, 2],
          [12, 1],
        ],
      ])!,
    ]).toEqual([-0.5, 1, -1, 1, 0]);
    expect(run([[[10, 2]]])).toBeUndefined();
    expect(run([[[10, 2]], [[11, 3]]])).toBeUndefined();
  });
});

describe('Seasonal-Kendall', () => {
  it('two seasons: S and Var summed, Sen = median of within-season slopes', () => {
    // January (t 0, 366, 731): 1 2 4 -> S 3, Var 3·2·11/18 = 66/18, slopes 1/366, 3/731, 2/365.
    // July (t 182, 547, 912): 10 9 9 -> S −2, Var (66 − 18)/18 = 48/18, slopes −1/365, −1/730, 0.
    // S = 1 -> z = 0, p = 1; Var = 114/18; six slopes, middle two 0 and 1/366 -> 1/732.
    const r = run([
      [
        [0, 1],
        [366, 2],
        [731, 4],
      ],
      [
        [182, 10],
        [547, 9],
        [912, 9],
      ],
    ])!;
    expect([r[1], r[2], r[4]]).toEqual([1, 1, 0]);
    expect(r[3]).toBeCloseTo(114 / 18, 12);
    expect(r[0]).toBeCloseTo(1 / 732, 15);
  });

  it('a season with one value adds nothing', () => {
    const r = run([
      [
        [0, 1],
        [365, 3],
      ],
      [[100, 50]],
    ])!;
    expect([...r]).toEqual([2 / 365, 1, 1, 1, 0]);
  });
});

describe('helpers', () => {
  it('median and selection (ties, even and odd counts)', () => {
    expect(median(Float64Array.of(3, 1, 2), 3)).toBe(2);
    expect(median(Float64Array.of(4, 1, 3, 2), 4)).toBe(2.5);
    expect(median(Float64Array.of(5, 5, 5, 1, 5, 5), 6)).toBe(5);
    expect(median(Float64Array.of(0, 3, 3, 4, 4, 4, 1, 5), 8)).toBe(3.5);
    const a = Float64Array.of(9, 2, 7, 2, 2, 8, 1, 0, 7, 3);
    expect(selectKth(a, 0, 9, 6)).toBe(7);
    for (let q = 0; q < 10; q++) expect(q < 6 ? a[q]! <= 7 : a[q]! >= 7).toBe(true);
    // only the first m values count
    expect(median(Float64Array.of(1, 2, 3, 100, 100), 3)).toBe(2);
  });

  it('erfc against table values', () => {
    expect(erfc(0)).toBe(1);
    expect(erfc(0.5)).toBeCloseTo(0.4795001221869535, 15);
    expect(erfc(1)).toBeCloseTo(0.1572992070502851, 15);
    expect(erfc(2) / 0.004677734981047266).toBeCloseTo(1, 13);
    expect(erfc(3) / 2.209049699858544e-5).toBeCloseTo(1, 13);
    expect(erfc(5) / 1.537459794428035e-12).toBeCloseTo(1, 12);
    expect(erfc(-1)).toBeCloseTo(2 - 0.1572992070502851, 15);
    // two-sided p of z = 1.959964 is 0.05
    expect(erfc(1.959963984540054 / Math.SQRT2)).toBeCloseTo(0.05, 14);
  });

  it('seasons: calendar month, or calendar day with 29 February on its own', () => {
    expect(seasonOf(Date.UTC(2003, 2, 1), 'MONTHS')).toBe(2);
    expect(seasonOf(Date.UTC(2003, 2, 1), 'DAYS')).toBe(seasonOf(Date.UTC(2004, 2, 1), 'DAYS'));
    expect(seasonOf(Date.UTC(2004, 1, 29), 'DAYS')).not.toBe(seasonOf(Date.UTC(2004, 2, 1), 'DAYS'));
    expect(seasonOf(Date.UTC(2004, 1, 29), 'DAYS')).not.toBe(seasonOf(Date.UTC(2003, 1, 28), 'DAYS'));
  });

  it('layouts group rows by season in t order', () => {
    const l = kendallLayout([0, 1, 2, 3, 4], [1, 0, 1, 0, 2]);
    expect([...l.order]).toEqual([1, 3, 0, 2, 4]);
    expect([...l.ends]).toEqual([2, 4, 5]);
    expect(largestSeason(l)).toBe(2);
    expect([...kendallLayout([5, 6]).ends]).toEqual([2]);
  });
});

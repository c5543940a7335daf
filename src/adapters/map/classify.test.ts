import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  classOf,
  equalIntervalBreaks,
  geometricalIntervalBreaks,
  JENKS_MAX_VALUES,
  meanAndStdDev,
  naturalBreaks,
  quantileBreaks,
  sortedFinite,
  standardDeviationBreaks,
  withinClassDeviation,
} from './classify.js';

/** A deterministic pseudo-random generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The optimum within-class deviation over every split of `sorted` into `k` contiguous non-empty groups (exhaustive). */
function bruteForceOptimum(sorted: Float64Array, k: number): number {
  const n = sorted.length;
  const cost = (a: number, b: number): number => {
    let s = 0;
    let s2 = 0;
    for (let i = a; i < b; i++) {
      s += sorted[i]!;
      s2 += sorted[i]! * sorted[i]!;
    }
    return Math.max(0, s2 - (s * s) / (b - a));
  };
  const best = (start: number, left: number): number => {
    if (left === 1) return cost(start, n);
    let m = Infinity;
    for (let c = start + 1; c <= n - left + 1; c++) m = Math.min(m, cost(start, c) + best(c, left - 1));
    return m;
  };
  return best(0, k);
}

const python = '/usr/bin/python3';
const hasNumpy = ((): boolean => {
  if (!existsSync(python)) return false;
  try {
    execFileSync(python, ['-c', 'import numpy'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function numpy(script: string, input: unknown): unknown {
  const out = execFileSync(python, ['-c', `import json, sys, numpy as np\nd = json.load(sys.stdin)\n${script}`], {
    input: JSON.stringify(input),
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

/**
 * Jenks' original formulation (the lower-class-limit and variance matrices of his 1977 program, as
 * circulated in Python), run by the system Python: a second, independently written optimum for
 * data too large for the exhaustive search. No packaged reference (mapclassify, jenkspy) is installed.
 */
const JENKS_PY = `import json, sys
# Jenks' original "variance" matrices (lower class limits and variance combinations), in plain Python.
def jenks(data, k):
    data = sorted(data)
    n = len(data)
    inf = float('inf')
    lower = [[0] * (k + 1) for _ in range(n + 1)]
    var = [[0.0] * (k + 1) for _ in range(n + 1)]
    for i in range(1, k + 1):
        lower[1][i] = 1
        for j in range(2, n + 1):
            var[j][i] = inf
    for l in range(2, n + 1):
        s1 = s2 = w = 0.0
        v = 0.0
        for m in range(1, l + 1):
            i3 = l - m + 1
            val = data[i3 - 1]
            s2 += val * val
            s1 += val
            w += 1
            v = s2 - (s1 * s1) / w
            i4 = i3 - 1
            if i4 != 0:
                for j in range(2, k + 1):
                    if var[l][j] >= v + var[i4][j - 1]:
                        lower[l][j] = i3
                        var[l][j] = v + var[i4][j - 1]
        lower[l][1] = 1
        var[l][1] = v
    breaks = [0.0] * k
    breaks[k - 1] = data[n - 1]
    kk = n
    for j in range(k, 1, -1):
        idx = lower[kk][j] - 2
        breaks[j - 2] = data[idx]
        kk = lower[kk][j] - 1
    return breaks, var[n][k]
d = json.load(sys.stdin)
print(json.dumps([jenks(x['v'], x['k']) for x in d]))
`;

describe('equal interval', () => {
  it('splits the range into equal widths, the last break the maximum', () => {
    const c = equalIntervalBreaks(Float64Array.from([3, 1, 11, 7, Number.NaN]), 5);
    expect(c.minimum).toBe(1);
    expect(c.breaks).toEqual([3, 5, 7, 9, 11]);
  });
  it('constant data is one class', () => {
    expect(equalIntervalBreaks(Float64Array.from([4, 4, 4]), 3)).toEqual({ minimum: 4, breaks: [4] });
  });
});

describe('quantile', () => {
  it('puts equal counts in each class', () => {
    const v = Float64Array.from({ length: 100 }, (_, i) => (i * 37) % 100);
    const c = quantileBreaks(v, 4);
    expect(c.breaks).toEqual([24, 49, 74, 99]);
    const counts = [0, 0, 0, 0];
    for (const x of v) counts[classOf(x, c.breaks)]!++;
    expect(counts).toEqual([25, 25, 25, 25]);
  });
  it('never splits repeated values (fewer classes instead)', () => {
    const c = quantileBreaks(Float64Array.from([1, 1, 1, 1, 1, 1, 2, 3]), 4);
    expect(c.breaks).toEqual([1, 3]);
  });
  it.skipIf(!hasNumpy)("equals numpy's quantile (inverted_cdf) on random data", () => {
    const r = random(7);
    for (const [n, k] of [
      [97, 5],
      [1000, 7],
      [12, 5],
      [250, 10],
    ] as const) {
      const v = Array.from({ length: n }, () => Math.round(r() * 1000) / 10);
      const want = numpy(
        `k = ${k}\nprint(json.dumps(sorted(set(float(np.quantile(np.array(d), i / k, method='inverted_cdf')) for i in range(1, k + 1)))))`,
        v,
      ) as number[];
      expect(quantileBreaks(Float64Array.from(v), k).breaks).toEqual(want);
    }
  });
});

describe('natural breaks (Fisher-Jenks)', () => {
  it('finds the obvious clusters', () => {
    const c = naturalBreaks(Float64Array.from([1, 2, 3, 10, 11, 12, 30, 31, 33]), 3);
    expect(c).toEqual({ minimum: 1, breaks: [3, 12, 33] });
  });
  it('reaches the exhaustive optimum on small random data', () => {
    const r = random(42);
    for (let trial = 0; trial < 40; trial++) {
      const n = 6 + Math.floor(r() * 9);
      const k = 2 + Math.floor(r() * 4);
      // Repeated values on purpose (rounding): the search runs on weighted distinct values.
      const v = Float64Array.from({ length: n }, () => Math.round(r() * 40) / 2);
      const s = sortedFinite(v);
      const distinct = new Set(s).size;
      const c = naturalBreaks(v, k);
      expect(c.breaks.length).toBe(Math.min(k, distinct));
      expect(c.breaks[c.breaks.length - 1]).toBe(s[s.length - 1]);
      // The exhaustive optimum over splits of the sorted values (splits between equal values allowed there).
      const best = bruteForceOptimum(s, Math.min(k, distinct));
      expect(withinClassDeviation(s, c.breaks)).toBeCloseTo(best, 9);
    }
  });
  it.skipIf(!existsSync(python))("equals Jenks' original variance-matrix program on larger data", () => {
    const r = random(5);
    const cases = [
      { n: 150, k: 5, round: 0 },
      { n: 300, k: 7, round: 0 },
      { n: 400, k: 4, round: 10 },
      { n: 60, k: 9, round: 0 },
    ].map(({ n, k, round }) => ({
      k,
      v: Array.from({ length: n }, () => {
        const x = r() < 0.3 ? r() * 20 : r() < 0.6 ? 40 + r() * 15 : 70 + r() * r() * 200;
        return round ? Math.round(x * round) / round : x;
      }),
    }));
    const want = JSON.parse(execFileSync(python, ['-c', JENKS_PY], { input: JSON.stringify(cases), encoding: 'utf8' })) as [
      number[],
      number,
    ][];
    cases.forEach((c, i) => {
      const s = sortedFinite(Float64Array.from(c.v));
      const got = naturalBreaks(Float64Array.from(c.v), c.k);
      const [breaks, ssd] = want[i]!;
      expect(withinClassDeviation(s, got.breaks)).toBeCloseTo(ssd, 6);
      expect(got.breaks).toEqual(breaks);
    });
  });
  it('is better than or equal to equal interval and quantile', () => {
    const r = random(3);
    const v = Float64Array.from({ length: 500 }, () => (r() < 0.5 ? r() * 10 : 50 + r() * r() * 100));
    const s = sortedFinite(v);
    const jenks = withinClassDeviation(s, naturalBreaks(v, 5).breaks);
    expect(jenks).toBeLessThanOrEqual(withinClassDeviation(s, equalIntervalBreaks(v, 5).breaks) + 1e-9);
    expect(jenks).toBeLessThanOrEqual(withinClassDeviation(s, quantileBreaks(v, 5).breaks) + 1e-9);
  });
  it('samples data with more distinct values than it searches exactly', () => {
    const r = random(9);
    const v = Float64Array.from({ length: JENKS_MAX_VALUES * 3 }, () => r() * 1000);
    const c = naturalBreaks(v, 4);
    expect(c.breaks.length).toBe(4);
    expect(c.breaks[3]).toBe(Math.max(...v));
    expect(c.minimum).toBe(Math.min(...v));
    for (let i = 1; i < 4; i++) expect(c.breaks[i]!).toBeGreaterThan(c.breaks[i - 1]!);
  });
});

describe('standard deviation', () => {
  it('centres the middle class on the mean and ends on the extremes', () => {
    const v = Float64Array.from([2, 4, 4, 4, 5, 5, 7, 9]); // mean 5, population sd 2
    const c = standardDeviationBreaks(v, 1);
    expect(c.mean).toBe(5);
    expect(c.stdDev).toBe(2);
    expect(c.breaks).toEqual([4, 6, 8, 9]);
    expect(c.sigmas).toEqual([
      [-Infinity, -0.5],
      [-0.5, 0.5],
      [0.5, 1.5],
      [1.5, Infinity],
    ]);
    expect(c.minimum).toBe(2);
  });
  it.skipIf(!hasNumpy)("uses numpy's mean and std (ddof 0) for the breaks", () => {
    const r = random(11);
    const v = Array.from({ length: 333 }, () => r() * 50 + r() * r() * 200);
    const [mean, sd] = numpy('a = np.array(d)\nprint(json.dumps([float(a.mean()), float(a.std())]))', v) as [number, number];
    for (const interval of [1, 0.5, 1 / 3, 0.25]) {
      const c = standardDeviationBreaks(Float64Array.from(v), interval);
      expect(c.mean).toBeCloseTo(mean, 10);
      expect(c.stdDev).toBeCloseTo(sd, 10);
      const max = Math.max(...v);
      const min = Math.min(...v);
      const inner = c.breaks.slice(0, -1);
      for (const [i, b] of inner.entries()) {
        const sigma = c.sigmas[i]![1];
        expect(b).toBeCloseTo(mean + sigma * sd, 9);
        // Break positions are odd multiples of half the interval.
        const x = sigma / interval - 0.5;
        expect(Math.abs(x - Math.round(x))).toBeLessThan(1e-9);
      }
      expect(inner[0]! - interval * sd).toBeLessThanOrEqual(min);
      expect(c.breaks[c.breaks.length - 1]).toBe(max);
    }
  });
  it('mean and deviation ignore NaN', () => {
    expect(meanAndStdDev(Float64Array.from([1, Number.NaN, 3]))).toEqual({ mean: 2, stdDev: 1, count: 2 });
  });
});

describe('geometrical interval', () => {
  it('grows the class widths by a constant factor along the tail', () => {
    const v = Float64Array.from([0, 1, 1, 2, 2, 3, 5, 8, 15, 70]);
    const c = geometricalIntervalBreaks(v, 3);
    // widths w, 2w, 4w sum to 70
    expect(c.breaks[0]).toBeCloseTo(10, 9);
    expect(c.breaks[1]).toBeCloseTo(30, 9);
    expect(c.breaks[2]).toBe(70);
  });
});

describe('classOf', () => {
  it('finds the class of a value by its upper bound', () => {
    expect(classOf(5, [3, 5, 9])).toBe(1);
    expect(classOf(5.1, [3, 5, 9])).toBe(2);
    expect(classOf(10, [3, 5, 9])).toBe(-1);
  });
});

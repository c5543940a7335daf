import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, prng, rasterOf, runFunction } from '../../../test/helpers.js';
import { nnls, nnlsWorkspace, spectralUnmixing } from './spectral-unmixing.js';

const P = 'rasterFunctionArguments.';

/** Unmix the pixels `xs` (one spectrum each) with end members `members`; returns fractions per pixel. */
async function unmix(members: Record<string, number[]>, xs: number[][], flags: Record<string, boolean> = {}): Promise<number[][]> {
  const n = xs[0]!.length;
  const r = await runFunction(spectralUnmixing, { SpectralProfileDefinition: members, ...flags }, [
    rasterOf({ width: xs.length, height: 1, bandCount: n, pixelType: 'F64' }, (x, _y, b) => xs[x]![b]!),
  ]);
  const m = Object.keys(members).length;
  return xs.map((_, x) => Array.from({ length: m }, (_, q) => r.value(x, 0, q)));
}

describe('SpectralUnmixing: hand-derived fractions', () => {
  it("ordinary least squares: f = (E'E)^-1 E'x", async () => {
    // E columns a = (1, 0, 1), b = (0, 1, 1); x = (1, 2, 3.3): E'E = [[2, 1], [1, 2]], E'x = (4.3, 5.3),
    // f = [[2, -1], [-1, 2]] / 3 (4.3, 5.3) = (1.1, 2.1).
    const [f] = await unmix({ a: [1, 0, 1], b: [0, 1, 1] }, [[1, 2, 3.3]]);
    expect(f![0]).toBeCloseTo(1.1, 6);
    expect(f![1]).toBeCloseTo(2.1, 6);
  });

  it('NonNegative: the active set drops a negative fraction', async () => {
    // Same E, x = (-1, 2, 1): unconstrained f = (-1, 2); with f >= 0: f_a = 0, f_b = b.x / |b|^2 = 3 / 2.
    const [f] = await unmix({ a: [1, 0, 1], b: [0, 1, 1] }, [[-1, 2, 1]], { NonNegative: true });
    expect(f).toEqual([0, 1.5]);
    const [g] = await unmix({ a: [1, 0, 1], b: [0, 1, 1] }, [[-1, 2, 1]]);
    expect(g![0]).toBeCloseTo(-1, 6);
  });

  it('SumToOne: augmented row of weight d = 1000 max|E|', async () => {
    // E = I (2 x 2), d = 1000. Minimising |f - x|^2 + d^2 (f1 + f2 - 1)^2 gives
    // f = x - d^2 s with s = (sum x - 1) / (1 + 2 d^2): x = (0.5, 0.7) -> f = x - 0.2e6 / (1 + 2e6)
    // = (0.40000005, 0.60000005), i.e. the exact constrained (0.4, 0.6) within 1e-7.
    const [f] = await unmix({ a: [1, 0], b: [0, 1] }, [[0.5, 0.7]], { SumToOne: true });
    const shift = 0.2e6 / (1 + 2e6);
    expect(f![0]).toBeCloseTo(0.5 - shift, 6);
    expect(f![1]).toBeCloseTo(0.7 - shift, 6);
  });

  it('both: fully constrained', async () => {
    // E = I, x = (-0.2, 0.5): the sum-constrained optimum (0.15, 0.85) is already >= 0.
    // x = (-1, 0.5): sum-constrained (-0.25, 1.25) is infeasible -> f_a = 0, f_b = (0.5 + d^2) / (1 + d^2).
    const [f, g] = await unmix(
      { a: [1, 0], b: [0, 1] },
      [
        [-0.2, 0.5],
        [-1, 0.5],
      ],
      { SumToOne: true, NonNegative: true },
    );
    expect(f![0]).toBeCloseTo(0.15, 6);
    expect(f![1]).toBeCloseTo(0.85, 6);
    expect(g![0]).toBe(0);
    expect(g![1]).toBeCloseTo((0.5 + 1e6) / (1 + 1e6), 6);
  });

  it('NNLS meets the KKT conditions on random problems', () => {
    const rnd = prng(7);
    const n = 6;
    const m = 4;
    const ws = nnlsWorkspace(m);
    const f = new Float64Array(m);
    for (let t = 0; t < 300; t++) {
      const e = Array.from({ length: n * m }, () => rnd() * 100);
      const x = Array.from({ length: n }, () => rnd() * 200 - 50);
      const g = new Float64Array(m * m);
      for (let p = 0; p < m; p++) {
        for (let q = 0; q < m; q++) for (let i = 0; i < n; i++) g[p * m + q]! += e[i * m + p]! * e[i * m + q]!;
        let s = 0;
        for (let i = 0; i < n; i++) s += e[i * m + p]! * x[i]!;
        ws.b[p] = s;
      }
      nnls(g, m, ws, f);
      for (let p = 0; p < m; p++) {
        // w = E'(x - E f): <= 0 everywhere, = 0 where f > 0.
        let w = ws.b[p]!;
        for (let q = 0; q < m; q++) w -= g[p * m + q]! * f[q]!;
        expect(f[p]).toBeGreaterThanOrEqual(0);
        expect(w).toBeLessThan(1e-6 * 1e4);
        if (f[p]! > 0) expect(Math.abs(w)).toBeLessThan(1e-6 * 1e4);
      }
    }
  });

  it('output: one F32 band per end member named after it; NoData passes through', async () => {
    const mask = Uint8Array.from([1, 0]);
    const r = await runFunction(spectralUnmixing, { SpectralProfileDefinition: { soil: [1, 0], veg: [0, 1] } }, [
      rasterOf({ width: 2, height: 1, bandCount: 2 }, () => 1, mask),
    ]);
    expect(r.info).toMatchObject({ pixelType: 'F32', bandCount: 2, bandNames: ['soil', 'veg'] });
    expect(r.valid(1, 0)).toBe(false);
  });

  it('ClassifierDefinition form: class Means are the end members', async () => {
    const d = {
      Definitions: [
        {
          NumberBands: 3,
          Classes: [
            { ClassValue: 1, ClassName: 'a', Means: [1, 0, 1] },
            { ClassValue: 2, ClassName: 'b', Means: [0, 1, 1] },
          ],
        },
      ],
    };
    const r = await runFunction(spectralUnmixing, { SpectralProfileDefinition: JSON.stringify(d) }, [
      rasterOf({ width: 1, height: 1, bandCount: 3, pixelType: 'F64' }, (_x, _y, b) => [1, 2, 3.3][b]!),
    ]);
    expect(r.info.bandNames).toEqual(['a', 'b']);
    expect(r.value(0, 0, 1)).toBeCloseTo(2.1, 6);
  });
});

describe('SpectralUnmixing: bad arguments (code and path)', () => {
  const two = rasterOf({ width: 1, height: 1, bandCount: 2 }, () => 0);
  const err = (args: Record<string, unknown>) => catchError(() => applyFunction(spectralUnmixing, args, [two]));
  it('refuses missing, unreadable and malformed end members', () => {
    expect(err({})).toMatchObject({ code: 'INVALID_ARGUMENT', path: `${P}SpectralProfileDefinition` });
    expect(err({ SpectralProfileFile: 'C:/x.json' })).toMatchObject({ code: 'UNSUPPORTED_INPUT', path: `${P}SpectralProfileFile` });
    expect(err({ SpectralProfileType: 1, TrainingFeature: 'x.shp' })).toMatchObject({
      code: 'UNSUPPORTED_INPUT',
      path: `${P}TrainingFeature`,
    });
    expect(err({ SpectralProfileDefinition: { a: [1, 2, 3] } })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: `${P}SpectralProfileDefinition.a`,
    });
    expect(err({ SpectralProfileDefinition: { a: [1, 'x'] } })).toMatchObject({ path: `${P}SpectralProfileDefinition.a[1]` });
    expect(err({ SpectralProfileDefinition: { a: [1, 2], b: [2, 4] } })!.message).toContain('linearly dependent');
    expect(err({ SpectralProfileDefinition: { a: [1, 0], b: [0, 1], c: [1, 1] } })!.message).toContain('at most 2');
    expect(err({ SpectralProfileDefinition: { Definitions: [{ Classes: [{ ClassValue: 1, Means: [1] }] }] } })).toMatchObject({
      path: `${P}SpectralProfileDefinition.Definitions[0].Classes[0].Means`,
    });
    expect(err({ SpectralProfileDefinition: {} })).toMatchObject({ path: `${P}SpectralProfileDefinition` });
  });
});

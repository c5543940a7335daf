/**
 * Speckle unit tests. Hand-derived values from the spec's formulas (raster-functions.md "Speckle
 * (10.6)": Lee's three noise models, Enhanced Lee, Frost, Kuan; population variance; NoData left
 * out; windows clipped at the edges) on a 3x3 window, and a brute-force reference (plain loops
 * over every window, written from the same formulas) for every filter, size and noise model.
 */
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, prng, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { mean, variance, windowOf, type Grid } from '../../../test/focal-reference.js';
import { speckle } from './speckle.js';

// ---- Brute-force reference.

interface SpeckleOptions {
  readonly filter: number;
  readonly size: number;
  readonly model?: number;
  readonly noiseVar?: number;
  readonly addMean?: number;
  readonly mulMean?: number;
  readonly looks?: number;
  readonly damp?: number;
}

/** The spec's speckle filters at one pixel (valid centre). */
function speckleAt(g: Grid, x: number, y: number, o: SpeckleOptions): number {
  const { v, dx, dy } = windowOf(g, x, y, o.size, o.size);
  const ic = g.v[y * g.w + x]!;
  const im = mean(v);
  const vr = variance(v);
  const L = o.looks ?? 1;
  const cu = 1 / Math.sqrt(L);
  const damp = o.damp ?? 1;
  switch (o.filter) {
    case 0: {
      const M = o.mulMean ?? 1;
      const AV = o.noiseVar ?? 0.25;
      const A = o.addMean ?? 0;
      const model = o.model ?? 0;
      if (model === 1) return vr + AV > 0 ? im + (vr / (vr + AV)) * (ic - im) : ic;
      const den = (im * im) / L + M * M * vr + (model === 2 ? AV : 0);
      if (!(den > 0)) return ic;
      const k = (M * vr) / den;
      return model === 2 ? im + k * (ic - M * im - A) : im + k * (ic - M * im);
    }
    case 1: {
      if (im === 0) return ic;
      const ci = Math.sqrt(vr) / im;
      const cmax = Math.sqrt(1 + 2 / L);
      if (ci <= cu) return im;
      if (ci >= cmax) return ic;
      const w = Math.exp((-damp * (ci - cu)) / (cmax - ci));
      return im * w + ic * (1 - w);
    }
    case 2: {
      if (im === 0) return ic;
      const b = (damp * vr) / (im * im);
      let num = 0;
      let den = 0;
      for (let i = 0; i < v.length; i++) {
        const k = Math.exp(-b * Math.hypot(dx[i]!, dy[i]!));
        num += k * v[i]!;
        den += k;
      }
      return num / den;
    }
    default: {
      if (im === 0) return ic;
      const ci2 = vr / (im * im);
      const w = ci2 > 0 ? Math.min(1, Math.max(0, (1 - (cu * cu) / ci2) / (1 + cu * cu))) : 0;
      return ic * w + im * (1 - w);
    }
  }
}

describe('Speckle: hand-derived values on one 3x3 window', () => {
  // Window 2 4 4 / 4 5 5 / 7 9 96 -> n 9, Im = 136/9, centre Ic = 5.
  const v = [2, 4, 4, 4, 5, 5, 7, 9, 96];
  const z = rasterOf({ width: 3, height: 3 }, (x, y) => v[y * 3 + x]!);
  const im = 136 / 9;
  const vr = v.reduce((a, b) => a + (b - im) ** 2, 0) / 9;
  const at = async (args: Record<string, unknown>) => (await runFunction(speckle, args, [z])).value(1, 1);

  it('Lee multiplicative (defaults M 1, NLooks 1): K = V / (Im^2 + V), out = Im + K (Ic - Im)', async () => {
    const k = vr / (im * im + vr);
    expect(await at({})).toBeCloseTo(im + k * (5 - im), 4);
    const k2 = (2 * vr) / ((im * im) / 4 + 4 * vr);
    expect(await at({ MultiplicativeNoiseMean: 2, NLooks: 4 })).toBeCloseTo(im + k2 * (5 - 2 * im), 4);
  });

  it('Lee additive: K = V / (V + NoiseVar)', async () => {
    const k = vr / (vr + 30);
    expect(await at({ NoiseModel: 1, NoiseVar: 30 })).toBeCloseTo(im + k * (5 - im), 4);
  });

  it('Lee additive and multiplicative: K = M V / (Im^2 / L + M^2 V + AV), out = Im + K (Ic - M Im - A)', async () => {
    const k = (1.5 * vr) / ((im * im) / 2 + 2.25 * vr + 40);
    expect(
      await at({ NoiseModel: 'Additive and Multiplicative', NoiseVar: 40, AdditiveNoiseMean: 3, MultiplicativeNoiseMean: 1.5, NLooks: 2 }),
    ).toBeCloseTo(im + k * (5 - 1.5 * im - 3), 4);
  });

  it('Enhanced Lee: Ci = S / Im between Cu and Cmax damps exponentially', async () => {
    const ci = Math.sqrt(vr) / im; // 1.77...
    const looks = 2;
    const cu = 1 / Math.sqrt(looks);
    const cmax = Math.sqrt(1 + 2 / looks); // 1.414: Ci >= Cmax -> the centre itself
    expect(ci).toBeGreaterThan(cmax);
    expect(await at({ FilterType: 1, NLooks: looks })).toBe(5);
    // NLooks 0.5: Cu 1.414, Cmax sqrt(5) = 2.236 -> W = exp(-D (Ci - Cu) / (Cmax - Ci)).
    const cu2 = Math.sqrt(2);
    const cm2 = Math.sqrt(5);
    const w = Math.exp((-0.7 * (ci - cu2)) / (cm2 - ci));
    expect(await at({ FilterType: 'Enhanced Lee', NLooks: 0.5, DampFactor: 0.7 })).toBeCloseTo(im * w + 5 * (1 - w), 4);
    expect(cu).toBeLessThan(ci);
    // NLooks 0.1: Cu = 3.16 > Ci -> the mean.
    expect(await at({ FilterType: 1, NLooks: 0.1 })).toBeCloseTo(im, 4);
  });

  it('Frost: weights exp(-B d), B = D V / Im^2, d the distance to the centre', async () => {
    const b = (0.5 * vr) / (im * im);
    let num = 0;
    let den = 0;
    for (let y = 0; y < 3; y++) {
      for (let x = 0; x < 3; x++) {
        const k = Math.exp(-b * Math.hypot(x - 1, y - 1));
        num += k * v[y * 3 + x]!;
        den += k;
      }
    }
    expect(await at({ FilterType: 2, DampFactor: 0.5 })).toBeCloseTo(num / den, 4);
  });

  it('Kuan: W = (1 - Cu^2 / Ci^2) / (1 + Cu^2), clamped to [0, 1]', async () => {
    const ci2 = vr / (im * im);
    const w = (1 - 0.5 / ci2) / 1.5;
    expect(await at({ FilterType: 3, NLooks: 2 })).toBeCloseTo(5 * w + im * (1 - w), 4);
    expect(await at({ FilterType: 3, NLooks: 0.1 })).toBeCloseTo(im, 4); // W < 0 -> 0
  });

  it('a flat window returns the mean (every filter); Im = 0 returns the centre', async () => {
    const flat = rasterOf({ width: 4, height: 4 }, () => 7);
    for (const FilterType of [0, 1, 2, 3]) expect((await runFunction(speckle, { FilterType }, [flat])).value(1, 1)).toBe(7);
    const zero = rasterOf({ width: 3, height: 3 }, (x, y) => (x === 1 && y === 1 ? 4 : x === 0 ? -2 : x === 2 && y === 1 ? 2 : 0)); // sum 0
    for (const FilterType of [1, 2, 3]) expect((await runFunction(speckle, { FilterType }, [zero])).value(1, 1)).toBe(4);
  });

  it('keeps the input type: U8 rounds half away and clamps', async () => {
    const u8 = rasterOf({ width: 3, height: 3, pixelType: 'U8' }, (x, y) => v[y * 3 + x]!);
    const r = await runFunction(speckle, { FilterType: 3, NLooks: 2 }, [u8]);
    expect(r.info.pixelType).toBe('U8');
    const ci2 = vr / (im * im);
    const w = (1 - 0.5 / ci2) / 1.5;
    expect(r.value(1, 1)).toBe(Math.round(5 * w + im * (1 - w)));
  });
});

describe('Speckle: every filter, size and noise model against the brute-force reference', () => {
  const W = 25;
  const H = 18;
  const rnd = prng(5);
  // Gamma-ish speckle: a smooth signal times an exponential draw.
  const v = Array.from({ length: W * H }, (_, i) => (50 + 30 * Math.sin(i / 17)) * -Math.log(1 - 0.98 * rnd()));
  const holes = Uint8Array.from({ length: W * H }, (_, i) => (i % 31 === 4 || (i >= 260 && i < 266) ? 0 : 1));
  const g = { w: W, h: H, v: Float32Array.from(v), m: holes };
  const src = rasterOf({ width: W, height: H }, (x, y) => v[y * W + x]!, holes);
  const cases: [string, Record<string, unknown>, SpeckleOptions][] = [
    ['Lee multiplicative', { NLooks: 3, MultiplicativeNoiseMean: 1.1 }, { filter: 0, size: 3, looks: 3, mulMean: 1.1 }],
    ['Lee additive', { NoiseModel: 1, NoiseVar: 400 }, { filter: 0, size: 3, model: 1, noiseVar: 400 }],
    [
      'Lee additive+multiplicative',
      { NoiseModel: 2, NoiseVar: 50, AdditiveNoiseMean: 2, NLooks: 2 },
      { filter: 0, size: 3, model: 2, noiseVar: 50, addMean: 2, looks: 2 },
    ],
    ['Enhanced Lee', { FilterType: 1, NLooks: 1, DampFactor: 1.5 }, { filter: 1, size: 3, looks: 1, damp: 1.5 }],
    ['Frost', { FilterType: 2, DampFactor: 2 }, { filter: 2, size: 3, damp: 2 }],
    ['Kuan', { FilterType: 3, NLooks: 1.5 }, { filter: 3, size: 3, looks: 1.5 }],
  ];
  for (const [name, args, opts] of cases) {
    it(`${name}: sizes 3x3 to 11x11, with NoData holes, tiled = whole`, async () => {
      for (let FilterSize = 0; FilterSize <= 4; FilterSize++) {
        const size = 3 + 2 * FilterSize;
        const r = await runFunction(speckle, { ...args, FilterSize }, [src]);
        for (let y = 0; y < H; y++) {
          for (let x = 0; x < W; x++) {
            if (!holes[y * W + x]) {
              expect(r.valid(x, y)).toBe(false);
              continue;
            }
            const e = speckleAt(g, x, y, { ...opts, size });
            expect(Math.abs(r.value(x, y) - e), `${size}x${size} (${x}, ${y}): ${r.value(x, y)} vs ${e}`).toBeLessThanOrEqual(
              2e-5 * Math.max(1, Math.abs(e)),
            );
          }
        }
        expect(await tiledVersusWhole(r.node, [7, 6])).toBeUndefined();
      }
    });
  }
});

describe('Speckle: bad arguments and warnings', () => {
  const z = rasterOf({ width: 4, height: 4 }, () => 1);
  const fail = (args: Record<string, unknown>) => catchError(() => applyFunction(speckle, args, [z]));
  it('names the offending field', () => {
    expect(fail({ FilterType: 4 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.FilterType' });
    expect(fail({ FilterSize: 5 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.FilterSize' });
    expect(fail({ NoiseModel: 3 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.NoiseModel' });
    expect(fail({ NLooks: 0 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.NLooks' });
    expect(fail({ NoiseVar: -1 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.NoiseVar' });
    expect(fail({ DampFactor: 'x' })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.DampFactor' });
  });
  it('warns about arguments the chosen filter does not use', () => {
    expect(applyFunction(speckle, { FilterType: 2, NoiseModel: 1, NLooks: 4 }, [z]).plan.warnings).toHaveLength(2);
    expect(applyFunction(speckle, { FilterType: 0, DampFactor: 3 }, [z]).plan.warnings?.[0]).toMatch(/DampFactor/);
    expect(applyFunction(speckle, { FilterType: 0, NoiseModel: 2, NoiseVar: 2, AdditiveNoiseMean: 1 }, [z]).plan.warnings).toBeUndefined();
  });
});

// Expected values derived by hand from the spec's pansharpening formulas, not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { pansharpening } from './pansharpening.js';

// One pixel: R 40, G 60, B 20, NIR 100; pan 90. Weights 0.2 0.2 0.1 0.5.
const ms = (bands = 4) => rasterOf({ width: 1, height: 1, bandCount: bands, pixelType: 'F32' }, (_x, _y, b) => [40, 60, 20, 100][b]!);
const pan = () => rasterOf({ width: 1, height: 1, pixelType: 'F32' }, () => 90);
const W = [0.2, 0.2, 0.1, 0.5];
const run = async (type: number, m = ms()) => {
  const r = await runFunction(pansharpening, { PansharpeningType: type, Weights: W }, [pan(), m]);
  return Array.from({ length: r.info.bandCount }, (_, b) => r.value(0, 0, b));
};

describe('Pansharpening', () => {
  it('Brovey: DNF = (P - wI I) / (wR R + wG G + wB B)', async () => {
    const dnf = (90 - 50) / (8 + 12 + 2);
    expect(await run(1)).toEqual([40, 60, 20, 100].map((v) => Math.fround(v * dnf)));
  });

  it('Esri: b + P - weighted average', async () => {
    const adj = 90 - (8 + 12 + 2 + 50) / 1;
    expect(await run(2)).toEqual([40 + adj, 60 + adj, 20 + adj, 100 + adj]);
  });

  it('IHS (linear): b + (P - wI I)/(wR + wG + wB) - (R + G + B)/3', async () => {
    const d = 40 / 0.5 - 40;
    expect(await run(0)).toEqual([40 + d, 60 + d, 20 + d, 100 + d]);
  });

  it('Simple Mean: (b + P) / 2; without infrared the weights of R, G, B only', async () => {
    expect(await run(3)).toEqual([65, 75, 55, 95]);
    const r = await runFunction(pansharpening, { PansharpeningType: 1, Weights: [0.5, 0.25, 0.25] }, [pan(), ms(3)]);
    const dnf = 90 / (20 + 15 + 5);
    expect([0, 1, 2].map((b) => r.value(0, 0, b))).toEqual([40, 60, 20].map((v) => Math.fround(v * dnf)));
  });

  it('Gram-Schmidt: gains cov(b, S)/var(S) over the whole grid', async () => {
    // Two pixels; S = (R + G + B)/3 with equal weights: S = 20, 40; pan 10, 30 -> P' = S exactly
    // (same std, shifted mean) -> output = input.
    const m = rasterOf(
      { width: 2, height: 1, bandCount: 3, pixelType: 'F32' },
      (x, _y, b) =>
        [
          [10, 20, 30],
          [30, 40, 50],
        ][x]![b]!,
    );
    const p = rasterOf({ width: 2, height: 1, pixelType: 'F32' }, (x) => [10, 30][x]!);
    const r = await runFunction(pansharpening, { PansharpeningType: 4, Weights: [1, 1, 1] }, [p, m]);
    expect([r.value(0, 0, 0), r.value(1, 0, 2)]).toEqual([10, 50]);
  });

  it('output on the pan grid over the overlap, MS resampled; MS type kept', () => {
    const coarse = rasterOf({ width: 2, height: 2, bandCount: 3, cellSize: 2, pixelType: 'U16' }, () => 100);
    const fine = rasterOf({ width: 6, height: 3, pixelType: 'U16' }, () => 100);
    const node = applyFunction(pansharpening, {}, [fine, coarse]);
    expect([node.info.width, node.info.height, node.info.bandCount, node.info.pixelType]).toEqual([4, 3, 3, 'U16']);
  });

  it('rejects malformed arguments with the argument path', () => {
    const cases: [Record<string, unknown>, ReturnType<typeof ms>, string, string][] = [
      [{ Weights: [1, 1] }, ms(), 'Weights', 'INVALID_ARGUMENT'],
      [{ Weights: [1, -1, 1, 1] }, ms(), 'Weights', 'INVALID_ARGUMENT'],
      [{}, ms(2), 'MSImage', 'UNSUPPORTED_INPUT'],
      [{ PansharpeningType: 9 }, ms(), 'PansharpeningType', 'INVALID_ARGUMENT'],
    ];
    for (const [args, m, field, code] of cases) {
      const e = catchError(() => applyFunction(pansharpening, args, [pan(), m]));
      expect(e?.code, JSON.stringify(args)).toBe(code);
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
  });
});

// Expected values derived by hand from the spec formulas (raster-functions.md "Stretch" and
// appendix C), not from our output; the arithmetic is written out beside each case.
import { describe, expect, it } from 'vitest';
import type { RasterNode } from '../../graph/types.js';
import { applyFunction, catchError, rasterOf, runFunction, type Result } from '../../../test/helpers.js';
import { slope } from '../terrain/slope.js';
import { equalizationLevels, naturalType, percentClip, stretch } from './stretch.js';

/** A 1-row raster holding `values` (F32 unless told). */
const row = (values: readonly number[], pixelType: 'F32' | 'U8' | 'S16' | 'U16' = 'F32', mask?: Uint8Array): RasterNode =>
  rasterOf({ width: values.length, height: 1, pixelType }, (x) => values[x]!, mask);

const pixels = (r: Result, b = 0): (number | null)[] =>
  Array.from({ length: r.info.width * r.info.height }, (_, i) => (r.block.mask[i] ? r.block.bands[b]![i]! : null));

const run = (args: Record<string, unknown>, input: RasterNode) => runFunction(stretch, args, [input]);

describe('Stretch: mapping', () => {
  it('MinMax from Statistics: appendix C (50 in [0, 200] -> 63.75 -> 64), ends and half-up rounding', async () => {
    // (v - 0) / 200 * 255: 0 -> 0, 50 -> 63.75 -> 64, 100 -> 127.5 -> 128, 200 and 250 -> 255, -5 -> 0.
    const r = await run({ StretchType: 5, Statistics: [[0, 200, 100, 50]] }, row([0, 50, 100, 200, 250, -5]));
    expect(r.info.pixelType).toBe('U8');
    expect(pixels(r)).toEqual([0, 64, 128, 255, 255, 0]);
  });

  it('StandardDeviation: mean -+ n*std clipped to [min, max]', async () => {
    // mean 50, std 10, n 2 -> [30, 70]: 40 -> 10/40*255 = 63.75 -> 64; 55 -> 159.375 -> 159.
    const r = await run({ StretchType: 3, Statistics: [[0, 100, 50, 10]], NumberOfStandardDeviations: 2 }, row([30, 40, 55, 70, 90]));
    expect(pixels(r)).toEqual([0, 64, 159, 255, 255]);
    // n = 10 -> [-50, 150] clipped to [20, 60]: 40 -> 127.5 -> 128. Object form and the singular alias.
    const r2 = await run(
      { StretchType: 3, Statistics: [{ min: 20, max: 60, mean: 50, standardDeviation: 10 }], NumberOfStandardDeviation: 10 },
      row([20, 40, 60]),
    );
    expect(pixels(r2)).toEqual([0, 128, 255]);
  });

  it('StandardDeviation defaults to n = 2', async () => {
    const r = await run({ StretchType: 3, Statistics: [[0, 100, 50, 10]] }, row([40]));
    expect(pixels(r)).toEqual([64]);
  });

  it('None on U8 is the identity; on S16 the type range maps onto 0..255', async () => {
    const values = [0, 1, 127, 128, 254, 255];
    expect(pixels(await run({}, row(values, 'U8')))).toEqual(values);
    // S16: (v + 32768) / 65535 * 255: -32768 -> 0, 0 -> 127.5019 -> 128, 32767 -> 255.
    expect(pixels(await run({ StretchType: 0 }, row([-32768, 0, 32767], 'S16')))).toEqual([0, 128, 255]);
  });

  it('Min/Max set the output range, inverted ranges included', async () => {
    // [0, 100] onto 10..20: 25 -> 12.5 -> 13; inverted 255..0: 25 -> 255 - 63.75 = 191.25 -> 191.
    expect(pixels(await run({ StretchType: 5, Statistics: [[0, 100]], Min: 10, Max: 20 }, row([0, 25, 100])))).toEqual([10, 13, 20]);
    expect(pixels(await run({ StretchType: 5, Statistics: [[0, 100]], Min: 255, Max: 0 }, row([0, 25, 100])))).toEqual([255, 191, 0]);
  });

  it('picks a natural type that holds Min..Max', async () => {
    expect(naturalType(0, 255)).toBe('U8');
    expect(naturalType(0, 1000)).toBe('U16');
    expect(naturalType(-10, 10)).toBe('S8');
    expect(naturalType(0.5, 9.5)).toBe('F32');
    // Float output is not rounded: [0, 100] onto 0..1.5 at 25 -> 0.375.
    const r = await run({ StretchType: 5, Statistics: [[0, 100]], Min: 0, Max: 1.5 }, row([25]));
    expect(r.info.pixelType).toBe('F32');
    expect(pixels(r)).toEqual([0.375]);
  });

  it('Gamma: gamma <= 1 is m^(1/g); gamma > 1 is damped by 1 - (1/O)^(m k)', async () => {
    // m = 0.25: gamma 0.5 -> 0.0625 * 255 = 15.94 -> 16.
    expect(pixels(await run({ StretchType: 5, Statistics: [[0, 100]], UseGamma: true, Gamma: [0.5] }, row([25])))).toEqual([16]);
    // gamma 2: k = 6.5, S = 1 - 255^-(0.25*6.5) = 0.99988, S * 0.5 * 255 = 127.484 -> 127.
    expect(pixels(await run({ StretchType: 5, Statistics: [[0, 100]], UseGamma: true, Gamma: 2 }, row([25])))).toEqual([127]);
    // One gamma per band on a 2-band U8 raster (LUT path): band 2 gamma 1 = linear.
    const two = rasterOf({ width: 1, height: 1, bandCount: 2, pixelType: 'U8' }, () => 25);
    const r = await run({ StretchType: 5, Statistics: [[0, 100]], UseGamma: true, Gamma: [0.5, 1] }, two);
    expect([r.value(0, 0, 0), r.value(0, 0, 1)]).toEqual([16, 64]);
  });

  it('ComputeGamma derives gamma from the mean (U8 mean 100 -> gamma 1.27692)', async () => {
    // t = 100, e = 45 cos(1.047) = 22.506, gamma = ln(100/255) / ln(122.506/255) = 1.27692;
    // v = 50 in [0, 255]: m = 0.196078, S = 1 - 255^-(m * (6.5 + 100 * 0.72308^4)) = 0.999999...,
    // 255 * m^(1/1.27692) = 255 * 0.27962 = 71.30 -> 71.
    const r = await run({ StretchType: 5, Statistics: [[0, 255, 100, 30]], UseGamma: true, ComputeGamma: true }, row([50], 'U8'));
    expect(pixels(r)).toEqual([71]);
  });

  it('Sigmoid (level 2: k = 6) is symmetric around the middle', async () => {
    // m = 0.5 -> 0.5 -> 127.5 -> 128; m = 0.25 -> (s(-1.5) - s(-3)) / (s(3) - s(-3)) = 0.149146 -> 38.03 -> 38.
    const r = await run({ StretchType: 9, Statistics: [[0, 100]] }, row([0, 25, 50, 75, 100]));
    expect(pixels(r)).toEqual([0, 38, 128, 217, 255]);
  });

  it('keeps NoData and makes NaN NoData', async () => {
    const r = await run({ StretchType: 5, Statistics: [[0, 100]] }, row([10, Number.NaN, 50], 'F32', Uint8Array.from([0, 1, 1])));
    expect(pixels(r)).toEqual([null, null, 128]);
  });
});

describe('Stretch: cut-offs from histograms', () => {
  it('PercentClip on a small histogram uses bin edges (no zeroing below 20 bins)', () => {
    // 10 bins of 10 over 0..100, T = 100. Min 10%: first C[z] > 10 is z = 1 -> 10.
    // Max 20%: from z = 8 down, first C[z] < 80 is z = 6 (C = 70) -> upper edge of bin 7 = 80.
    const h = { size: 10, min: 0, max: 100, counts: new Array(10).fill(10) };
    expect(percentClip(h, 10, 20)).toEqual([10, 80]);
  });

  it('PercentClip on a U8 histogram zeroes bins 0-2 and 254-255 and cuts at bin centres', () => {
    // 100 pixels at 0 and 255 (zeroed), 10 at each of 10..19: min 0% -> 10, max 0% -> C[18] = 90 < 100 -> 19.
    const counts = new Array(256).fill(0);
    counts[0] = 100;
    counts[255] = 100;
    for (let v = 10; v < 20; v++) counts[v] = 10;
    expect(percentClip({ size: 256, min: -0.5, max: 255.5, counts }, 0, 0)).toEqual([10, 19]);
    // 10% low: C[z] > 10 first at z = 11; 25% high: C[z] < 75 from above first at z = 16 (C = 70) -> 17.
    expect(percentClip({ size: 256, min: -0.5, max: 255.5, counts }, 10, 25)).toEqual([11, 17]);
  });

  it('PercentClip with the Histograms argument maps pixels', async () => {
    // cuts [10, 80]: 45 -> 35/70 * 255 = 127.5 -> 128.
    const r = await run(
      { StretchType: 6, MinPercent: 10, MaxPercent: 20, Histograms: [{ size: 10, min: 0, max: 100, counts: new Array(10).fill(10) }] },
      row([5, 45, 85]),
    );
    expect(pixels(r)).toEqual([0, 128, 255]);
  });

  it('PercentClip with DRA over a U8 request', async () => {
    // Values 0..99 once each (100 pixels, 256 unit bins; 0, 1, 2 zeroed -> T = 97).
    // Min 10%: 9.7 -> C[z] = z - 2 > 9.7 first at z = 12. Max 10%: C[z] < 87.3 from z = 254 down:
    // C[89] = 87 -> z = 89, maxCut = 90. v = 51 -> (51 - 12) / 78 * 255 = 127.5 -> 128.
    const src = rasterOf({ width: 10, height: 10, pixelType: 'U8' }, (x, y) => 10 * y + x);
    const r = await runFunction(stretch, { StretchType: 6, MinPercent: 10, MaxPercent: 10, DRA: true }, [src], 3);
    expect([r.value(2, 1), r.value(1, 5), r.value(0, 9)]).toEqual([0, 128, 255]);
  });

  it('HistogramEqualization levels: min(255, ceil(256 C / T) - 1)', () => {
    // T = 100: C = 10 -> ceil(25.6) - 1 = 25, 20 -> 51, 30 -> 76, 100 -> 255; empty leading bin -> 0.
    expect(equalizationLevels([0, 10, 10, 10, 70])).toEqual([0, 25, 51, 76, 255]);
  });

  it('HistogramEqualization from a Histograms argument, levels spread onto Min..Max', async () => {
    // bins of width 25 over 0..100: 10 -> bin 0 -> level 25; 30 -> bin 1 -> 51; 99 -> bin 3 -> 255.
    // Onto 0..510: level * 2.
    const h = [{ size: 4, min: 0, max: 100, counts: [10, 10, 10, 70] }];
    expect(pixels(await run({ StretchType: 4, Histograms: h }, row([10, 30, 99])))).toEqual([25, 51, 255]);
    expect(pixels(await run({ StretchType: 4, Histograms: h, Max: 510 }, row([10, 30, 99])))).toEqual([50, 102, 510]);
  });
});

describe('Stretch: where statistics come from', () => {
  it('uses statistics an upstream function advertises (Slope 0..90)', async () => {
    const dem = rasterOf({ width: 5, height: 5, cellSize: 1 }, (x) => x); // 45 degrees everywhere
    const node = applyFunction(slope, {}, [dem]);
    const r = await runFunction(stretch, { StretchType: 5 }, [node]);
    expect(r.value(2, 2)).toBe(128); // 45 / 90 * 255 = 127.5 -> 128
  });

  it('DRA ignores Statistics (warning) and takes the request min/max', async () => {
    const node = applyFunction(stretch, { StretchType: 5, DRA: true, Statistics: [[0, 1000]] }, [row([10, 20, 30])]);
    expect(node.plan.warnings).toContain('DRA is true: Statistics is ignored');
    expect(node.plan.requestStatistics).toEqual({ inputs: [0], bins: 256 });
    const r = await runFunction(stretch, { StretchType: 5, DRA: true, Statistics: [[0, 1000]] }, [row([10, 20, 30])]);
    expect(pixels(r)).toEqual([0, 128, 255]);
  });

  it('DRAExtent takes statistics from a fixed window (map or pixel coordinates)', async () => {
    // Row 0..9; window x 2..5 -> [2, 5]; 3 -> 85, 4 -> 170.
    const src = rasterOf({ width: 10, height: 1, cellSize: 10, origin: { x: 1000, y: 500 } }, (x) => x);
    const byMap = await runFunction(stretch, { StretchType: 5, DRAExtent: { xmin: 1020, xmax: 1060, ymin: 490, ymax: 500 } }, [src]);
    const byPixel = await runFunction(stretch, { StretchType: 5, DRAExtent: { x: 2, y: 0, width: 4, height: 1 } }, [src]);
    expect(Array.from(byMap.block.bands[0]!)).toEqual([0, 0, 0, 85, 170, 255, 255, 255, 255, 255]);
    expect(Array.from(byPixel.block.bands[0]!)).toEqual(Array.from(byMap.block.bands[0]!));
    expect(byMap.node.plan.requestStatistics?.rect).toEqual({ x: 2, y: 0, width: 4, height: 1 });
  });

  it('None needs no statistics, even with DRA', () => {
    expect(applyFunction(stretch, { DRA: true }, [row([1])]).plan.requestStatistics).toBeUndefined();
  });
});

describe('Stretch: bad arguments', () => {
  const err = (args: Record<string, unknown>, input: RasterNode = row([1, 2])) => catchError(() => applyFunction(stretch, args, [input]));

  it.each([
    ['StandardDeviation without statistics', { StretchType: 3 }, 'rasterFunctionArguments.Statistics'],
    ['StandardDeviation with min/max only', { StretchType: 3, Statistics: [[0, 1]] }, 'rasterFunctionArguments.Statistics'],
    ['MinMax without statistics', { StretchType: 5 }, 'rasterFunctionArguments.Statistics'],
    ['PercentClip without histograms', { StretchType: 6, MinPercent: 1, MaxPercent: 1 }, 'rasterFunctionArguments.Histograms'],
    ['HistogramEqualization without histograms', { StretchType: 4 }, 'rasterFunctionArguments.Histograms'],
    ['PercentClip without MinPercent', { StretchType: 6, DRA: true, MaxPercent: 1 }, 'rasterFunctionArguments.MinPercent'],
    ['PercentClip without MaxPercent', { StretchType: 6, DRA: true, MinPercent: 1 }, 'rasterFunctionArguments.MaxPercent'],
    ['percentages adding up to 100', { StretchType: 6, DRA: true, MinPercent: 60, MaxPercent: 40 }, 'rasterFunctionArguments.MaxPercent'],
    ['UseGamma without Gamma', { StretchType: 5, DRA: true, UseGamma: true }, 'rasterFunctionArguments.Gamma'],
    ['a zero gamma', { StretchType: 5, DRA: true, UseGamma: true, Gamma: [0] }, 'rasterFunctionArguments.Gamma[0]'],
    [
      'ComputeGamma without means',
      { StretchType: 5, Statistics: [[0, 1]], UseGamma: true, ComputeGamma: true },
      'rasterFunctionArguments.Statistics',
    ],
    ['malformed Statistics', { StretchType: 5, Statistics: [['a', 1]] }, 'rasterFunctionArguments.Statistics[0]'],
    ['min above max', { StretchType: 5, Statistics: [[5, 1]] }, 'rasterFunctionArguments.Statistics[0]'],
    [
      'histogram size mismatch',
      { StretchType: 4, Histograms: [{ size: 3, min: 0, max: 1, counts: [1, 2] }] },
      'rasterFunctionArguments.Histograms[0].size',
    ],
    [
      'DRAExtent outside the raster',
      { StretchType: 5, DRAExtent: { x: 50, y: 0, width: 2, height: 1 } },
      'rasterFunctionArguments.DRAExtent',
    ],
    ['DRAExtent of the wrong shape', { StretchType: 5, DRAExtent: [1, 2, 3, 4] }, 'rasterFunctionArguments.DRAExtent'],
    ['an unknown StretchType', { StretchType: 7 }, 'rasterFunctionArguments.StretchType'],
    ['SigmoidStrengthLevel 7', { StretchType: 9, SigmoidStrengthLevel: 7 }, 'rasterFunctionArguments.SigmoidStrengthLevel'],
  ])('rejects %s', (_what, args, path) => {
    const e = err(args);
    expect(e?.code).toBe('INVALID_ARGUMENT');
    expect(e?.path).toBe(path);
  });

  it('rejects Statistics of the wrong band count', () => {
    const two = rasterOf({ width: 1, height: 1, bandCount: 3 }, () => 1);
    const e = err(
      {
        StretchType: 5,
        Statistics: [
          [0, 1],
          [0, 2],
        ],
      },
      two,
    );
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.Statistics']);
  });

  it('warns about arguments without effect', () => {
    const node = applyFunction(stretch, { StretchType: 5, Statistics: [[0, 1]], Gamma: [2], MinPercent: 3 }, [row([1])]);
    expect(node.plan.warnings).toEqual([
      'UseGamma is false: Gamma and ComputeGamma are ignored',
      'MinPercent/MaxPercent only apply to StretchType 6 (PercentClip) and are ignored',
    ]);
  });
});

// Grayscale. Expected values derived by hand from the spec formula gray = sum(w_b v_b) / sum(w_b),
// rounded half away from zero into integer input types.
import { describe, expect, it } from 'vitest';
import { memorySource } from '../../graph/memory-source.js';
import type { RasterNode } from '../../graph/types.js';
import { buildGraph } from '../../rule/build.js';
import { registry } from '../index.js';
import { applyFunction, catchError, gridInfo, runFunction, type Result } from '../../../test/helpers.js';
import { grayscale } from './grayscale.js';

const P = 'rasterFunctionArguments.';
const at = (f: () => unknown) => {
  const e = catchError(f);
  return e && { code: e.code, path: e.path };
};

/** Pixels given as per-pixel band vectors. */
function pixels(values: number[][], pixelType: 'U8' | 'S16' | 'F32' = 'U8', mask?: number[], noData?: number): RasterNode {
  const nb = values[0]!.length;
  const info = gridInfo({ width: values.length, height: 1, bandCount: nb, pixelType, noData });
  const Ctor = pixelType === 'U8' ? Uint8Array : pixelType === 'S16' ? Int16Array : Float32Array;
  const bands = Array.from({ length: nb }, (_, b) => Ctor.from(values.map((v) => v[b]!)));
  return memorySource(`g${Math.random()}`, info, bands, mask && Uint8Array.from(mask));
}

const row = (r: Result): (number | 'NoData')[] =>
  Array.from({ length: r.info.width }, (_, x) => (r.valid(x, 0) ? r.value(x, 0) : 'NoData'));

describe('Grayscale', () => {
  it('weights normalised by their sum: [1, 3, 2] on (r, g, b)', async () => {
    // (10, 20, 30): (10 + 60 + 60) / 6 = 21.67 -> 22; (0, 1, 0): 3/6 = 0.5 -> 1 (half away); (255, 255, 255) -> 255
    const res = await runFunction(grayscale, { ConversionParameters: [1, 3, 2] }, [
      pixels([
        [10, 20, 30],
        [0, 1, 0],
        [255, 255, 255],
        [1, 0, 1],
      ]),
    ]);
    expect(res.info).toMatchObject({ bandCount: 1, pixelType: 'U8', bandNames: ['Gray'] });
    expect(res.info.statistics).toBeUndefined();
    // (1, 0, 1): 3/6 = 0.5 -> 1
    expect(row(res)).toEqual([22, 1, 255, 1]);
  });

  it('scaling the weights changes nothing; a string of weights works', async () => {
    const src = pixels([
      [10, 20, 30],
      [7, 8, 200],
    ]);
    const a = await runFunction(grayscale, { ConversionParameters: [1, 3, 2] }, [src]);
    const b = await runFunction(grayscale, { conversionParameters: '0.5 1.5 1' }, [src]);
    expect(row(b)).toEqual(row(a));
  });

  it('no weights: equal weights, the mean of the bands', async () => {
    // (1, 2, 4) / 3 = 2.33 -> 2; (2, 2, 3) / 3 = 2.33 -> 2
    expect(
      row(
        await runFunction(grayscale, {}, [
          pixels([
            [1, 2, 4],
            [2, 2, 3],
          ]),
        ]),
      ),
    ).toEqual([2, 2]);
  });

  it('natural type = input type: F32 keeps fractions, S16 rounds half away from zero (negatives too)', async () => {
    const f = await runFunction(grayscale, { ConversionParameters: [1, 1] }, [
      pixels(
        [
          [1, 2],
          [-1.5, 0],
        ],
        'F32',
      ),
    ]);
    expect(f.info.pixelType).toBe('F32');
    expect(row(f)).toEqual([1.5, -0.75]);
    const s = await runFunction(grayscale, { ConversionParameters: [1, 1] }, [
      pixels(
        [
          [-3, 0],
          [3, 0],
          [-32768, -32768],
        ],
        'S16',
      ),
    ]);
    expect(s.info.pixelType).toBe('S16');
    expect(row(s)).toEqual([-2, 2, -32768]);
  });

  it('negative weights can leave the type range: saturated', async () => {
    // (200 x 2 - 1 x 10) / 1 = 390 -> 255; (0 x 2 - 10) / 1 = -10 -> 0
    expect(
      row(
        await runFunction(grayscale, { ConversionParameters: [2, -1] }, [
          pixels([
            [200, 10],
            [0, 10],
          ]),
        ]),
      ),
    ).toEqual([255, 0]);
  });

  it('NoData input stays NoData (and keeps the NoData value); NaN results are NoData', async () => {
    const res = await runFunction(grayscale, { ConversionParameters: [1, 1] }, [
      pixels(
        [
          [1, 3],
          [5, 7],
        ],
        'U8',
        [0, 1],
        250,
      ),
    ]);
    expect(res.info.noData).toBe(250);
    expect(row(res)).toEqual(['NoData', 6]);
    expect(
      row(
        await runFunction(grayscale, {}, [
          pixels(
            [
              [Number.NaN, 1],
              [1, 1],
            ],
            'F32',
          ),
        ]),
      ),
    ).toEqual(['NoData', 1]);
  });

  it('weights summing to 0: every pixel NoData, with a warning', async () => {
    const res = await runFunction(grayscale, { ConversionParameters: [1, -1] }, [
      pixels([
        [1, 3],
        [5, 7],
      ]),
    ]);
    expect(row(res)).toEqual(['NoData', 'NoData']);
    expect(res.node.plan.warnings).toEqual(['the weights sum to 0: every pixel is NoData']);
  });

  it('is also called Greyscale', async () => {
    const src = pixels([[10, 20, 30]]);
    const { root } = await buildGraph(
      { rasterFunction: 'Greyscale', rasterFunctionArguments: { conversionParameters: [1, 3, 2] } },
      { registry, resolveSource: async () => src as never },
    );
    expect(root.kind === 'function' && root.fn.name).toBe('Grayscale');
  });

  describe('bad arguments', () => {
    it('a weight count other than the band count names both counts', () => {
      const e = catchError(() => applyFunction(grayscale, { ConversionParameters: [1, 2] }, [pixels([[1, 2, 3]])]))!;
      expect([e.code, e.path]).toEqual(['INVALID_ARGUMENT', `${P}ConversionParameters`]);
      expect(e.message).toMatch(/3 band.*2 weight/);
    });

    it('non-numeric weights', () => {
      expect(at(() => applyFunction(grayscale, { ConversionParameters: [1, 'x', 2] }, [pixels([[1, 2, 3]])]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: `${P}ConversionParameters`,
      });
    });

    it('complex input', () => {
      const c = memorySource('c', gridInfo({ width: 1, height: 1, pixelType: 'C64' }), [new Float32Array(2)]);
      expect(at(() => applyFunction(grayscale, {}, [c]))).toEqual({ code: 'UNSUPPORTED_INPUT', path: `${P}Raster` });
    });
  });
});

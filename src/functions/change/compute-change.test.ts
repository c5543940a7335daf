// Expected values computed by hand from the spec formulas on tiny arrays (not from our output).
import { describe, expect, it } from 'vitest';
import type { Colormap } from '../../core/pixel-block.js';
import type { RasterNode } from '../../graph/types.js';
import { applyFunction, catchError, rasterOf, runFunction, type Result } from '../../../test/helpers.js';
import { computeChange } from './compute-change.js';

const one = (v: number[], pixelType: 'F32' | 'U8' = 'F32', colormap?: Colormap): RasterNode =>
  rasterOf({ width: v.length, height: 1, pixelType, ...(colormap ? { extra: { colormap } } : {}) }, (x) => v[x]!);
const two = (a: number[], b: number[]): RasterNode =>
  rasterOf({ width: a.length, height: 1, bandCount: 2 }, (x, _y, band) => (band === 0 ? a : b)[x]!);
const px = (r: Result): (number | null)[] => Array.from({ length: r.info.width }, (_, x) => (r.valid(x, 0) ? r.value(x, 0) : null));
const run = (args: Record<string, unknown>, inputs: RasterNode[]) => runFunction(computeChange, { Raster2: '$2', ...args }, inputs);

describe('ComputeChange', () => {
  const from = [2, 0, -1, 4];
  const to = [5, 0, 3, 4];

  it('0 Difference: to - from', async () => {
    expect(px(await run({ Method: 0 }, [one(from), one(to)]))).toEqual([3, 0, 4, 0]);
  });

  it('1 Relative Difference: (to - from) / max(from, to), 0/0 NoData', async () => {
    expect(px(await run({ Method: 1 }, [one(from), one(to)]))).toEqual([Math.fround(0.6), null, Math.fround(4 / 3), 0]);
  });

  it('3 Euclidean distance, 4 spectral angle (radians), 5 band with most change (1-based, first on ties)', async () => {
    const a = two([3, 1], [4, 0]);
    const b = two([6, 0], [8, 1]);
    expect(px(await run({ Method: 3 }, [a, b]))).toEqual([5, Math.fround(Math.SQRT2)]);
    expect(px(await run({ Method: 4 }, [a, b]))).toEqual([0, Math.fround(Math.PI / 2)]);
    const m5 = await run({ Method: 5 }, [a, b]);
    expect(m5.info.pixelType).toBe('U8');
    expect(px(m5)).toEqual([2, 1]);
  });

  it('4 with a zero vector is NoData', async () => {
    expect(px(await run({ Method: 4 }, [two([0, 1], [0, 1]), two([1, 1], [1, 1])]))).toEqual([null, 0]);
  });

  it('2 Categorical: changed pairs of the listed classes numbered from-major', async () => {
    const r = await run({ Method: 2, FromClassValues: [1, 2, 3], ToClassValues: [1, 2, 3] }, [
      one([1, 1, 2, 3], 'U8'),
      one([1, 2, 3, 3], 'U8'),
    ]);
    // (1,2)=1 (1,3)=2 (2,1)=3 (2,3)=4 (3,1)=5 (3,2)=6; unchanged pixels dropped (KeepMethod 1).
    expect(px(r)).toEqual([null, 1, 4, null]);
    expect(r.info.pixelType).toBe('U8');
  });

  it('2 Categorical, KeepMethod 0 and classes read from the request', async () => {
    const r = await run({ Method: 2, KeepMethod: 0 }, [one([1, 1, 2, 3], 'U8'), one([1, 2, 3, 3], 'U8')]);
    expect(px(r)).toEqual([1, 2, 6, 9]);
    const u = await run({ Method: 2, KeepMethod: 2 }, [one([1, 1, 2, 3], 'U8'), one([1, 2, 3, 3], 'U8')]);
    expect(px(u)).toEqual([1, null, null, 3]);
  });

  it('2 Categorical with colormaps: averaged transition colours', async () => {
    const cm: Colormap = { values: Float64Array.from([1, 2]), rgb: Uint8Array.from([255, 0, 0, 0, 255, 0]) };
    const r = await run({ Method: 2, UseColorMethod: 0 }, [one([1, 2], 'U8', cm), one([2, 2], 'U8', cm)]);
    expect(px(r)).toEqual([1, null]);
    expect(Array.from(r.info.colormap!.values)).toEqual([1, 2]);
    expect(Array.from(r.info.colormap!.rgb)).toEqual([128, 128, 0, 128, 128, 0]);
    const f = await run({ Method: 2, UseColorMethod: 1 }, [one([1, 2], 'U8', cm), one([2, 2], 'U8', cm)]);
    expect(Array.from(f.info.colormap!.rgb.slice(0, 3))).toEqual([255, 0, 0]);
  });

  it('enforces the band-count rules and class sources with paths', () => {
    const e1 = catchError(() => applyFunction(computeChange, { Raster2: '$2', Method: 0 }, [two([1], [1]), one([1])]));
    expect([e1?.code, e1?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.Raster']);
    const e2 = catchError(() => applyFunction(computeChange, { Raster2: '$2', Method: 3 }, [two([1], [1]), one([1])]));
    expect([e2?.code, e2?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.Raster2']);
    const e3 = catchError(() => applyFunction(computeChange, { Raster2: '$2', Method: 2 }, [one([1.5]), one([1])]));
    expect([e3?.code, e3?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.FromClassValues']);
    const e4 = catchError(() =>
      applyFunction(computeChange, { Raster2: '$2', Method: 2, KeepMethod: 1, FromClassValues: [1], ToClassValues: [1] }, [
        one([1], 'U8'),
        one([1], 'U8'),
      ]),
    );
    expect(e4?.path).toBe('rasterFunctionArguments.KeepMethod');
    const e5 = catchError(() => applyFunction(computeChange, { Raster2: '$2', Method: 9 }, [one([1]), one([1])]));
    expect(e5?.path).toBe('rasterFunctionArguments.Method');
  });
});

// Expected values derived by hand from the definitions in resample.ts (pixel centres, footprints,
// gdalwarp's edge rules) on small arrays, not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction, tiledVersusWhole, type Result } from '../../../test/helpers.js';
import { resample } from './resample.js';

// 4 x 4 cells of 1; v(x, y) = x + 10 y.
const lin = (mask?: Uint8Array) => rasterOf({ width: 4, height: 4 }, (x, y) => x + 10 * y, mask);
const all = (r: Result, b = 0): (number | null)[] => {
  const out: (number | null)[] = [];
  for (let y = 0; y < r.info.height; y++) for (let x = 0; x < r.info.width; x++) out.push(r.valid(x, y) ? r.value(x, y, b) : null);
  return out;
};

describe('Resample', () => {
  it('output grid: input corner, OutputCellsize, rounded size', async () => {
    const r = await runFunction(resample, { OutputCellsize: 1.5 }, [lin()]);
    // 4 / 1.5 = 2.67 -> 3 cells; extent from the top-left corner (0, 0).
    expect([r.info.width, r.info.height, r.info.extent.xmin, r.info.extent.ymax, r.info.extent.xmax]).toEqual([3, 3, 0, 0, 4.5]);
    expect(r.info.cellSize).toEqual({ x: 1.5, y: 1.5 });
  });

  it('NearestNeighbor: the pixel containing the target centre', async () => {
    const r = await runFunction(resample, { ResamplingType: 0, OutputCellsize: 2 }, [lin()]);
    expect(all(r)).toEqual([11, 13, 31, 33]);
  });

  it('Average, Minimum, Maximum over 2 x 2 footprints', async () => {
    expect(all(await runFunction(resample, { ResamplingType: 7, OutputCellsize: 2 }, [lin()]))).toEqual([5.5, 7.5, 25.5, 27.5]);
    expect(all(await runFunction(resample, { ResamplingType: 'Minimum', OutputCellsize: 2 }, [lin()]))).toEqual([0, 2, 20, 22]);
    expect(all(await runFunction(resample, { ResamplingType: 9, OutputCellsize: 2 }, [lin()]))).toEqual([11, 13, 31, 33]);
  });

  it('Average weighs partial pixels by area; the edge pixel stands for the part outside the raster', async () => {
    // 1.5-cells: column 1 covers [1.5, 3): half of pixel 1, all of pixel 2 -> (0.5 * 1 + 2) / 1.5 on row 0 part.
    // Column 2 covers [3, 4.5): pixel 3 (weight 1.5: it stands for [4, 4.5) too).
    const row = rasterOf({ width: 4, height: 1 }, (x) => [0, 3, 6, 12][x]!);
    const r = await runFunction(resample, { ResamplingType: 7, OutputCellsize: { x: 1.5, y: 1 } }, [row]);
    expect(r.info.width).toBe(3);
    expect(r.value(0, 0)).toBeCloseTo((0 * 1 + 3 * 0.5) / 1.5, 12);
    expect(r.value(1, 0)).toBeCloseTo((3 * 0.5 + 6 * 1) / 1.5, 12);
    expect(r.value(2, 0)).toBe(12);
  });

  it('Average ignores NoData; a footprint with no valid pixel is NoData', async () => {
    const m = new Uint8Array(16).fill(1);
    m[0] = 0; // (0, 0)
    for (const i of [2, 3, 6, 7]) m[i] = 0; // block (1, 0)
    const r = await runFunction(resample, { ResamplingType: 7, OutputCellsize: 2 }, [lin(m)]);
    expect(all(r)).toEqual([Math.fround((1 + 10 + 11) / 3), null, 25.5, 27.5]);
  });

  it('integer outputs are rounded (half away from zero)', async () => {
    const u8 = rasterOf({ width: 4, height: 4, pixelType: 'U8' }, (x, y) => x + 10 * y);
    const r = await runFunction(resample, { ResamplingType: 7, OutputCellsize: 2 }, [u8]);
    expect(r.info.pixelType).toBe('U8');
    expect(all(r)).toEqual([6, 8, 26, 28]);
  });

  it('Majority: most frequent value, ties to the value that reached the top count first', async () => {
    const u8 = rasterOf(
      { width: 4, height: 2, pixelType: 'U8' },
      (x, y) =>
        [
          [1, 1, 2, 3],
          [2, 2, 3, 3],
        ][y]![x]!,
    );
    const r = await runFunction(resample, { ResamplingType: 'Majority', OutputCellsize: 2 }, [u8]);
    // block 0 scans 1, 1, 2, 2: 1 reaches 2 first; block 1: 2, 3, 3, 3 -> 3.
    expect(all(r)).toEqual([1, 3]);
  });

  it('bilinear upsampling between centres, renormalised at the edge (type 4)', async () => {
    const r = await runFunction(resample, { ResamplingType: 4, OutputCellsize: 0.5 }, [lin()]);
    // (1, 1): centre (0.75, 0.75) -> 0.25 past centre (0, 0) on both axes: 0.25 * 1 + 0.25 * 10.
    expect(r.value(1, 1)).toBeCloseTo(2.75, 12);
    // (0, 0): centre (0.25, 0.25): the west and north neighbours are outside; renormalised: v(0, 0).
    expect(r.value(0, 0)).toBe(0);
  });

  it('NoData neighbour: type 1 takes the nearest value, type 4 renormalises', async () => {
    const m = new Uint8Array(16).fill(1);
    m[1] = 0; // pixel (1, 0)
    const one = await runFunction(resample, { ResamplingType: 1, OutputCellsize: 0.5 }, [lin(m)]);
    const four = await runFunction(resample, { ResamplingType: 4, OutputCellsize: 0.5 }, [lin(m)]);
    expect(one.value(1, 1)).toBe(0);
    // weights 0.5625 (v 0), 0.1875 (v(0, 1) = 10), 0.0625 (v(1, 1) = 11); (1, 0) left out.
    expect(four.value(1, 1)).toBeCloseTo((0.1875 * 10 + 0.0625 * 11) / 0.8125, 6);
    // Target centres inside the NoData pixel are NoData for both.
    expect(one.valid(2, 0)).toBe(false);
    expect(four.valid(3, 1)).toBe(false);
  });

  it('Cubic reproduces a linear field inside; falls back to bilinear near the edge', async () => {
    const r = await runFunction(resample, { ResamplingType: 2, OutputCellsize: 0.5 }, [lin()]);
    expect(r.value(3, 3)).toBeCloseTo(1.25 + 12.5, 5); // centre (1.75, 1.75): full 4 x 4 window
    expect(r.value(1, 1)).toBeCloseTo(2.75, 5); // centre (0.75, 0.75): window leaves the raster
  });

  it('BilinearGaussBlur: no blur when upsampling; a constant stays constant when downsampling', async () => {
    const a = await runFunction(resample, { ResamplingType: 5, OutputCellsize: 0.5 }, [lin()]);
    const b = await runFunction(resample, { ResamplingType: 1, OutputCellsize: 0.5 }, [lin()]);
    expect(all(a)).toEqual(all(b));
    const flat = rasterOf({ width: 9, height: 9 }, () => 7);
    const c = await runFunction(resample, { ResamplingType: 6, OutputCellsize: 3 }, [flat]);
    expect(all(c)).toEqual(Array(9).fill(7));
  });

  it('BilinearGaussBlur low-passes when downsampling (a spike spreads, the sum of weights is 1)', async () => {
    const spike = rasterOf({ width: 9, height: 1 }, (x) => (x === 4 ? 9 : 0));
    const r = await runFunction(resample, { ResamplingType: 5, OutputCellsize: { x: 3, y: 1 } }, [spike]);
    // Centre of output pixel 1 is input 4.5 = the spike's centre: sigma = sqrt(8) / 2, the value is
    // the spike times its normalised Gaussian weight at 0.
    const s = Math.sqrt(8) / 2;
    const w = Array.from({ length: 9 }, (_, k) => Math.exp(-((k - 4) ** 2) / (2 * s * s)));
    expect(r.value(1, 0)).toBeCloseTo((9 * w[4]!) / w.reduce((x, y) => x + y, 0), 6);
  });

  it('VectorAverage: u/v means, and magnitude/direction through u, v', async () => {
    const uv = rasterOf({ width: 2, height: 2, bandCount: 2 }, (x, y, b) => (b === 0 ? 1 + 2 * x : 2 * y));
    const r = await runFunction(resample, { ResamplingType: 10, OutputCellsize: 2, InputDataType: 'Vector-UV' }, [uv]);
    expect([r.value(0, 0, 0), r.value(0, 0, 1)]).toEqual([2, 1]);
    const md = rasterOf({ width: 2, height: 2, bandCount: 2 }, (x, _y, b) => (b === 0 ? 1 : x * 90));
    const m = await runFunction(resample, { ResamplingType: 10, OutputCellsize: 2 }, [md]);
    expect(m.value(0, 0, 0)).toBeCloseTo(Math.SQRT1_2, 6);
    expect(m.value(0, 0, 1)).toBeCloseTo(45, 4);
  });

  it('VectorAverage needs half of the footprint valid', async () => {
    const md = (valid: number) =>
      rasterOf(
        { width: 2, height: 2, bandCount: 2 },
        () => 1,
        Uint8Array.from([0, 1, 2, 3], (i) => (i < valid ? 1 : 0)),
      );
    expect((await runFunction(resample, { ResamplingType: 10, OutputCellsize: 2 }, [md(2)])).valid(0, 0)).toBe(true);
    expect((await runFunction(resample, { ResamplingType: 10, OutputCellsize: 2 }, [md(1)])).valid(0, 0)).toBe(false);
  });

  it('InputCellsize re-labels the input grid; OutputCellsize defaults to it', async () => {
    const r = await runFunction(resample, { InputCellsize: { x: 2, y: 2 } }, [lin()]);
    expect([r.info.width, r.info.cellSize.x, r.info.extent.xmax]).toEqual([4, 2, 8]);
    expect(all(r)).toEqual(Array.from({ length: 16 }, (_, i) => (i % 4) + 10 * Math.floor(i / 4)));
  });

  it('pixels outside the input are NoData', async () => {
    const r = await runFunction(resample, { ResamplingType: 0, OutputCellsize: 3 }, [lin()]);
    // 4 / 3 -> 1 cell of 3 (round 1.33): centre (1.5, 1.5) inside; with cell 2.5: 2 cells, centre 3.75 inside.
    expect(all(r)).toEqual([11]);
  });

  it('tiled equals whole for every type', async () => {
    const big = rasterOf(
      { width: 50, height: 40, bandCount: 2 },
      (x, y, b) => Math.sin(x / 3 + b) * 50 + y,
      Uint8Array.from({ length: 2000 }, (_, i) => (i % 17 ? 1 : 0)),
    );
    for (let t = 0; t <= 10; t++) {
      for (const cell of [2.5, 0.7]) {
        const node = applyFunction(resample, { ResamplingType: t, OutputCellsize: cell }, [big]);
        expect(await tiledVersusWhole(node, [7, 5]), `type ${t} cell ${cell}`).toBeUndefined();
      }
    }
  });

  describe('argument errors', () => {
    const at = (raw: Record<string, unknown>, input = lin()) => {
      const e = catchError(() => applyFunction(resample, raw, [input]));
      return e && { code: e.code, path: e.path };
    };
    it('VectorAverage needs two bands', () => {
      expect(at({ ResamplingType: 10 })).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.ResamplingType' });
    });
    it('bad cell sizes', () => {
      expect(at({ OutputCellsize: -1 })).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.OutputCellsize' });
      expect(at({ OutputCellsize: { x: 1 } })).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.OutputCellsize' });
      expect(at({ InputCellsize: 'abc' })).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.InputCellsize' });
    });
    it('an unknown ResamplingType', () => {
      expect(at({ ResamplingType: 11 })).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.ResamplingType' });
    });
  });
});

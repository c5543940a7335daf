// ColormapToRGB. Expected values derived by hand from the lookup rule: the entry whose value
// equals trunc(v) gives (r, g, b); alpha 0, no entry and NoData input give NoData.
import { describe, expect, it } from 'vitest';
import type { Colormap, RasterInfo } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import type { RasterNode } from '../../graph/types.js';
import { registry } from '../index.js';
import { buildGraph } from '../../rule/build.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction, tiledVersusWhole, type Result } from '../../../test/helpers.js';
import { colormap } from './colormap.js';
import { colormapLut, colormapToRgb } from './colormap-to-rgb.js';
import { namedColormap } from './colormap.js';

const P = 'rasterFunctionArguments.';
const at = (f: () => unknown) => {
  const e = catchError(f);
  return e && { code: e.code, path: e.path };
};

/** A single-band source carrying `cm` (as a palette GeoTIFF would). */
function withColormap(values: number[], cm: Colormap, pixelType: RasterInfo['pixelType'] = 'S16', mask?: number[]): RasterNode {
  const info: RasterInfo = { ...gridInfo({ width: values.length, height: 1, pixelType }), colormap: cm };
  const plane = pixelType === 'F32' ? Float32Array.from(values) : pixelType === 'U8' ? Uint8Array.from(values) : Int16Array.from(values);
  return memorySource(`cm${Math.random()}`, info, [plane], mask && Uint8Array.from(mask));
}

const rgbAt = (r: Result, x: number): number[] | 'NoData' =>
  r.valid(x, 0) ? [r.value(x, 0, 0), r.value(x, 0, 1), r.value(x, 0, 2)] : 'NoData';
const all = (r: Result): (number[] | 'NoData')[] => Array.from({ length: r.info.width }, (_, x) => rgbAt(r, x));

const cm3: Colormap = { values: Float64Array.of(-7, 0, 5), rgb: Uint8Array.of(10, 20, 30, 40, 50, 60, 70, 80, 90) };

describe('ColormapToRGB', () => {
  it('looks values up: colours for entries, NoData for values without one and for NoData input; negative values work', async () => {
    const res = await runFunction(colormapToRgb, {}, [withColormap([-7, 0, 5, 1, 5, -8], cm3, 'S16', [1, 1, 1, 1, 0, 1])]);
    expect(res.info).toMatchObject({ bandCount: 3, pixelType: 'U8', bandNames: ['Red', 'Green', 'Blue'] });
    expect(res.info.colormap).toBeUndefined();
    expect(res.info.noData).toBeUndefined();
    expect(all(res)).toEqual([[10, 20, 30], [40, 50, 60], [70, 80, 90], 'NoData', 'NoData', 'NoData']);
    // masked pixels hold 0, 0, 0
    expect([res.value(4, 0, 0), res.value(4, 0, 1), res.value(4, 0, 2)]).toEqual([0, 0, 0]);
    // statistics: each channel's range over the entries
    expect(res.info.statistics).toEqual([
      { min: 10, max: 70 },
      { min: 20, max: 80 },
      { min: 30, max: 90 },
    ]);
  });

  it('truncates float values toward zero; NaN is NoData', async () => {
    const res = await runFunction(colormapToRgb, {}, [withColormap([-7.9, -0.99, 0.5, 5.999, Number.NaN, -6.5], cm3, 'F32')]);
    expect(all(res)).toEqual([[10, 20, 30], [40, 50, 60], [40, 50, 60], [70, 80, 90], 'NoData', 'NoData']);
  });

  it('an alpha column goes into the mask: alpha 0 is NoData, any other alpha is valid', async () => {
    const cm: Colormap = { ...cm3, alpha: Uint8Array.of(0, 1, 255) };
    const res = await runFunction(colormapToRgb, {}, [withColormap([-7, 0, 5], cm)]);
    expect(all(res)).toEqual(['NoData', [40, 50, 60], [70, 80, 90]]);
    expect(res.info.statistics).toEqual([
      { min: 40, max: 70 },
      { min: 50, max: 80 },
      { min: 60, max: 90 },
    ]);
  });

  it('UnmappedAsRandomColor: unmapped values get a colour that depends only on the value; NaN and NoData stay NoData', async () => {
    const values = [1, 2, 1, 0, 2, 99, Number.NaN, 1];
    const res = await runFunction(colormapToRgb, { UnmappedAsRandomColor: true }, [
      withColormap(values, cm3, 'F32', [1, 1, 1, 1, 1, 1, 1, 0]),
    ]);
    const px = all(res);
    expect(px[3]).toEqual([40, 50, 60]);
    expect(px[0]).toEqual(px[2]); // the same value, the same colour
    expect(px[1]).toEqual(px[4]);
    expect(px[0]).not.toEqual(px[1]);
    expect(px[5]).not.toEqual('NoData');
    expect(px[6]).toBe('NoData');
    expect(px[7]).toBe('NoData');
    expect(res.info.statistics).toEqual([0, 1, 2].map(() => ({ min: 0, max: 255 })));
    // the same colours in another raster, tile or run
    const again = await runFunction(colormapToRgb, { UnmappedAsRandomColor: 'true' }, [withColormap([2, 1], cm3, 'F32')]);
    expect(all(again)).toEqual([px[1], px[0]]);
  });

  it('colormaps spanning more than 2^20 values are searched instead of tabulated, with the same result', async () => {
    const wide: Colormap = {
      values: Float64Array.of(-3_000_000, -7, 0, 5, 4_000_000),
      rgb: Uint8Array.of(1, 1, 1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 2, 2, 2),
    };
    expect(colormapLut(wide).index).toBeUndefined();
    expect(colormapLut(cm3).index).toBeDefined();
    const info: RasterInfo = { ...gridInfo({ width: 6, height: 1, pixelType: 'S32' }), colormap: wide };
    const src = memorySource('wide', info, [Int32Array.of(-3_000_000, -7, 0, 5, 4_000_000, 6)]);
    const res = await runFunction(colormapToRgb, {}, [src]);
    expect(all(res)).toEqual([[1, 1, 1], [10, 20, 30], [40, 50, 60], [70, 80, 90], [2, 2, 2], 'NoData']);
  });

  it('takes the colormap of a preceding Colormap function (and tiles match whole)', async () => {
    const src = rasterOf({ width: 40, height: 30, pixelType: 'U8' }, (x, y) => (x * 13 + y * 7) % 256);
    const named = applyFunction(colormap, { ColormapName: 'Elevation' }, [src]);
    const res = await runFunction(colormapToRgb, {}, [named]);
    const elevation = namedColormap('Elevation')!;
    for (const [x, y] of [
      [0, 0],
      [7, 3],
      [39, 29],
    ] as const) {
      const v = (x * 13 + y * 7) % 256;
      expect([res.value(x, y, 0), res.value(x, y, 1), res.value(x, y, 2)]).toEqual(Array.from(elevation.rgb.subarray(3 * v, 3 * v + 3)));
    }
    expect(await tiledVersusWhole(applyFunction(colormapToRgb, { UnmappedAsRandomColor: true }, [named]), [7, 5])).toBeUndefined();
  });

  it('in a rule: ColormapToRGB over Colormap', async () => {
    const src = withColormap([0, 1, 2], cm3, 'U8');
    const { root } = await buildGraph(
      {
        rasterFunction: 'ColormapToRGB',
        rasterFunctionArguments: { Raster: { rasterFunction: 'Colormap', rasterFunctionArguments: { Colormap: [[1, 9, 8, 7]] } } },
      },
      { registry, resolveSource: async () => src as never },
    );
    expect(root.info.bandCount).toBe(3);
  });

  describe('bad input', () => {
    it('a raster without a colormap: UNSUPPORTED_INPUT at Raster, saying how to get one', () => {
      const plain = rasterOf({ width: 2, height: 2, pixelType: 'U8' }, () => 1);
      const e = catchError(() => applyFunction(colormapToRgb, {}, [plain]))!;
      expect([e.code, e.path]).toEqual(['UNSUPPORTED_INPUT', `${P}Raster`]);
      expect(e.message).toMatch(/palette GeoTIFF.*Colormap function/);
    });

    it('several bands: UNSUPPORTED_INPUT at Raster', () => {
      const three: RasterNode = memorySource(
        'three',
        { ...gridInfo({ width: 1, height: 1, bandCount: 3, pixelType: 'U8' }), colormap: cm3 },
        [new Uint8Array(1), new Uint8Array(1), new Uint8Array(1)],
      );
      expect(at(() => applyFunction(colormapToRgb, {}, [three]))).toEqual({ code: 'UNSUPPORTED_INPUT', path: `${P}Raster` });
    });

    it('a non-boolean UnmappedAsRandomColor', () => {
      expect(at(() => applyFunction(colormapToRgb, { UnmappedAsRandomColor: 'sometimes' }, [withColormap([0], cm3)]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: `${P}UnmappedAsRandomColor`,
      });
    });
  });
});

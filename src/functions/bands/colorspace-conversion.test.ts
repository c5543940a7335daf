// ColorspaceConversion. Expected values derived by hand from the spec's hexcone formulas, e.g.
// (100, 50, 25): max = r = 100, d = 75, H = 60 x (50 - 25)/75 = 20, S = 75/100, V = 100/255;
// U8: H x 255/360 = 14.17 -> 14, S x 255 = 191.25 -> 191, V = 100.
import { describe, expect, it } from 'vitest';
import { memorySource } from '../../graph/memory-source.js';
import { render } from '../../graph/render.js';
import type { RasterNode } from '../../graph/types.js';
import { buildGraph } from '../../rule/build.js';
import { registry } from '../index.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction, type Result } from '../../../test/helpers.js';
import { colorspaceConversion } from './colorspace-conversion.js';

const P = 'rasterFunctionArguments.';
const at = (f: () => unknown) => {
  const e = catchError(f);
  return e && { code: e.code, path: e.path };
};

/** One pixel per colour, three bands. */
function pixels(colors: number[][], pixelType: 'U8' | 'F32' | 'S16' = 'U8', mask?: number[]): RasterNode {
  const info = gridInfo({ width: colors.length, height: 1, bandCount: 3, pixelType });
  const Ctor = pixelType === 'U8' ? Uint8Array : pixelType === 'F32' ? Float32Array : Int16Array;
  const bands = [0, 1, 2].map((b) => Ctor.from(colors.map((c) => c[b]!)));
  return memorySource(`px${Math.random()}`, info, bands, mask && Uint8Array.from(mask));
}

const px = (r: Result, x: number): number[] | 'NoData' => (r.valid(x, 0) ? [0, 1, 2].map((b) => r.value(x, 0, b)) : 'NoData');
const f32 = (v: number[]): number[] => v.map(Math.fround);

const RGB = [
  [255, 0, 0],
  [0, 255, 0],
  [0, 0, 255],
  [255, 255, 0],
  [128, 128, 128],
  [0, 0, 0],
  [100, 50, 25],
  [255, 0, 128],
  [20, 40, 30],
];
// H = 60 x sextant, S = d/max, V = max/255
const HSV = [
  [0, 1, 1],
  [120, 1, 1],
  [240, 1, 1],
  [60, 1, 1],
  [0, 0, 128 / 255],
  [0, 0, 0],
  [20, 0.75, 100 / 255],
  [60 * (6 - 128 / 255), 1, 1], // max r, (g - b)/d = -128/255 -> + 6
  [60 * ((30 - 20) / 20 + 2), 20 / 40, 40 / 255], // max g: (b - r)/d + 2 = 2.5 -> 150
];

describe('ColorspaceConversion', () => {
  it('RGB -> HSV (default ConversionType 0): F32, H degrees, S and V fractions', async () => {
    const res = await runFunction(colorspaceConversion, {}, [pixels(RGB)]);
    expect(res.info).toMatchObject({ bandCount: 3, pixelType: 'F32', bandNames: ['Hue', 'Saturation', 'Value'] });
    expect(res.info.statistics).toEqual([
      { min: 0, max: 360 },
      { min: 0, max: 1 },
      { min: 0, max: 1 },
    ]);
    HSV.forEach((want, x) => expect(px(res, x), `pixel ${x}`).toEqual(f32(want)));
  });

  it('NoData pixels stay NoData', async () => {
    const res = await runFunction(colorspaceConversion, {}, [
      pixels(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        'U8',
        [0, 1],
      ),
    ]);
    expect(px(res, 0)).toBe('NoData');
    expect(px(res, 1)).not.toBe('NoData');
  });

  describe('outputPixelType U8: the function writes the 0..255 encoding itself', () => {
    const hsv8 = [
      [0, 255, 255],
      [85, 255, 255],
      [170, 255, 255],
      [43, 255, 255],
      [0, 0, 128],
      [0, 0, 0],
      [14, 191, 100],
      [
        // H = 60 x (6 - 128/255): x 255/360 = 42.5 x (6 - 128/255) = 233.67 -> 234
        234, 255, 255,
      ],
      [106, 128, 40],
    ]; // H 150 -> 106.25 -> 106; S 0.5 -> 127.5 -> 128 (exact half rounds up)

    it('through a rule: U8 values, not a clamping cast', async () => {
      const src = pixels(RGB);
      const { root } = await buildGraph(
        { rasterFunction: 'ColorspaceConversion', outputPixelType: 'U8' },
        { registry, resolveSource: async () => src as never },
      );
      expect(root.kind === 'function' && root.fn.name).toBe('ColorspaceConversion'); // no Cast node on top
      expect(root.info.pixelType).toBe('U8');
      expect(root.info.statistics).toEqual([0, 1, 2].map(() => ({ min: 0, max: 255 })));
      const block = await render(root, { tileSize: 4 });
      hsv8.forEach((want, x) =>
        expect(
          [0, 1, 2].map((b) => block.bands[b]![x]),
          `pixel ${x}`,
        ).toEqual(want),
      );
    });

    it('exact halves round up: d = 5 puts H x 255/360 on k + 0.5', async () => {
      // (10, 7, 5): max r, d = 5, sextant 2/5, H x 255/360 = 42.5 x 0.4 = 17 exactly; (10, 6, 5): 42.5 x 0.2 = 8.5 -> 9.
      const node = applyFunction(
        colorspaceConversion,
        {},
        [
          pixels([
            [10, 7, 5],
            [10, 6, 5],
          ]),
        ],
        'U8',
      );
      const block = await render(node, { tileSize: 8 });
      expect([block.bands[0]![0], block.bands[0]![1]]).toEqual([17, 9]);
    });

    it('other integer types keep the plain cast of degrees and fractions', async () => {
      const node = applyFunction(colorspaceConversion, {}, [pixels([[100, 50, 25]])], 'U16');
      expect(node.fn.name).toBe('Cast');
      const block = await render(node, { tileSize: 8 });
      expect([0, 1, 2].map((b) => block.bands[b]![0])).toEqual([20, 1, 0]);
    });
  });

  describe('HSV -> RGB (ConversionType 1): U8', () => {
    it('from F32 (degrees, fractions) inverts RGB -> HSV exactly', async () => {
      const hsv = applyFunction(colorspaceConversion, {}, [pixels(RGB)]);
      const res = await runFunction(colorspaceConversion, { ConversionType: 1 }, [hsv]);
      expect(res.info).toMatchObject({ pixelType: 'U8', bandNames: ['Red', 'Green', 'Blue'] });
      RGB.forEach((want, x) => expect(px(res, x), `pixel ${x}`).toEqual(want));
    });

    it('U8 input is the 0..255 encoding (H = h x 360/255)', async () => {
      // h 85 -> 120 degrees, s 255 -> 1, v 255 -> 1: pure green; (0, 0, 128) -> grey 128; (0, 255, 255) -> red.
      const res = await runFunction(colorspaceConversion, { ConversionType: 'HSVToRGB' }, [
        pixels([
          [85, 255, 255],
          [0, 0, 128],
          [0, 255, 255],
        ]),
      ]);
      expect([px(res, 0), px(res, 1), px(res, 2)]).toEqual([
        [0, 255, 0],
        [128, 128, 128],
        [255, 0, 0],
      ]);
    });

    it('other types hold degrees and fractions; H wraps modulo 360, S and V clamp to [0, 1], NaN is NoData', async () => {
      const res = await runFunction(colorspaceConversion, { ConversionType: 1 }, [
        pixels(
          [
            [-240, 1, 1],
            [480, 2, 1],
            [60, 0.5, 1.5],
            [Number.NaN, 1, 1],
            [0, 0.5, 0.5],
          ],
          'F32',
        ),
      ]);
      // -240 = 120 (green); 480 = 120 with S 1; (60, 0.5, 1): (255, 255, 127.5 -> 128); NaN; (0, 0.5, 0.5): (127.5 -> 128, 63.75 -> 64, 64)
      expect([0, 1, 2, 3, 4].map((x) => px(res, x))).toEqual([[0, 255, 0], [0, 255, 0], [255, 255, 128], 'NoData', [128, 64, 64]]);
      const s16 = await runFunction(colorspaceConversion, { ConversionType: 1 }, [pixels([[240, 1, 1]], 'S16')]);
      expect(px(s16, 0)).toEqual([0, 0, 255]);
    });
  });

  it('tiles match whole (a per-pixel function)', async () => {
    const src = rasterOf({ width: 23, height: 17, bandCount: 3, pixelType: 'U8' }, (x, y, b) => (x * 11 + y * 29 + b * 83) % 256);
    const node = applyFunction(colorspaceConversion, {}, [src]);
    const whole = await render(node, { tileSize: 32 });
    const tiled = await render(node, { tileSize: [5, 3] });
    for (let b = 0; b < 3; b++) expect(Array.from(tiled.bands[b]!)).toEqual(Array.from(whole.bands[b]!));
  });

  describe('bad input', () => {
    it('not three bands', () => {
      const two = rasterOf({ width: 1, height: 1, bandCount: 2, pixelType: 'U8' }, () => 1);
      expect(at(() => applyFunction(colorspaceConversion, {}, [two]))).toEqual({ code: 'UNSUPPORTED_INPUT', path: `${P}Raster` });
      expect(at(() => applyFunction(colorspaceConversion, { ConversionType: 1 }, [two]))).toEqual({
        code: 'UNSUPPORTED_INPUT',
        path: `${P}Raster`,
      });
    });

    it('RGB -> HSV of anything but U8, with a hint', () => {
      const e = catchError(() => applyFunction(colorspaceConversion, {}, [pixels([[1, 2, 3]], 'F32')]))!;
      expect([e.code, e.path]).toEqual(['UNSUPPORTED_INPUT', `${P}Raster`]);
      expect(e.message).toMatch(/U8/);
    });

    it('complex pixels', () => {
      const c = memorySource(
        'c',
        gridInfo({ width: 1, height: 1, bandCount: 3, pixelType: 'C64' }),
        [0, 1, 2].map(() => new Float32Array(2)),
      );
      expect(at(() => applyFunction(colorspaceConversion, { ConversionType: 1 }, [c]))).toEqual({
        code: 'UNSUPPORTED_INPUT',
        path: `${P}Raster`,
      });
    });

    it('an unknown ConversionType', () => {
      expect(at(() => applyFunction(colorspaceConversion, { ConversionType: 2 }, [pixels([[1, 2, 3]])]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: `${P}ConversionType`,
      });
    });
  });
});

// Colormap. Expected colours are the spec's own check values (raster-functions.md "Colormap" and
// appendix A); the pixel rules (pass-through, U8 conversion for ramps/names) are derived by hand.
import { describe, expect, it } from 'vitest';
import type { Colormap } from '../../core/pixel-block.js';
import { registry } from '../index.js';
import { memorySource } from '../../graph/memory-source.js';
import { buildGraph } from '../../rule/build.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction } from '../../../test/helpers.js';
import { colormap, COLORMAP_NAMES, namedColormap, RANDOM_COLORMAP_SEED } from './colormap.js';
import { predefinedRamp, rampColors } from './ramps.js';

const color = (cm: Colormap, i: number): number[] => Array.from(cm.rgb.subarray(3 * i, 3 * i + 3));
const checks = (cm: Colormap, want: [number, number[]][]) => {
  for (const [i, c] of want) expect(color(cm, i), `[${i}]`).toEqual(c);
};

const P = 'rasterFunctionArguments.';
const at = (f: () => unknown) => {
  const e = catchError(f);
  return e && { code: e.code, path: e.path };
};

describe('named colormaps (spec check values)', () => {
  it('all seven names make 256 entries for values 0..255, found in any case', () => {
    for (const name of COLORMAP_NAMES) {
      const cm = namedColormap(name.toUpperCase())!;
      expect(cm.values.length, name).toBe(256);
      expect(cm.rgb.length, name).toBe(768);
      expect(cm.values[0]).toBe(0);
      expect(cm.values[255]).toBe(255);
    }
    expect(namedColormap(' grey ')).toEqual(namedColormap('Gray'));
    expect(namedColormap('Rainbow')).toBeUndefined();
  });

  it('Gray: entry i = (i, i, i)', () => {
    const cm = namedColormap('Gray')!;
    for (let i = 0; i < 256; i++) expect(color(cm, i)).toEqual([i, i, i]);
  });

  it('Elevation', () => {
    checks(namedColormap('Elevation')!, [
      [0, [0, 191, 191]],
      [1, [0, 192, 188]],
      [25, [0, 222, 113]],
      [50, [0, 254, 4]],
      [51, [1, 255, 0]],
      [100, [247, 255, 0]],
      [128, [255, 188, 0]],
      [150, [255, 133, 0]],
      [200, [195, 128, 60]],
      [254, [23, 23, 23]],
      [255, [20, 20, 20]],
    ]);
  });

  it('NDVI2 (201 colours, then its last colour repeated)', () => {
    const cm = namedColormap('NDVI2')!;
    checks(cm, [
      [1, [251, 251, 255]],
      [25, [163, 163, 255]],
      [50, [72, 72, 255]],
      [100, [149, 147, 144]],
      [128, [123, 195, 96]],
      [150, [14, 96, 1]],
      [200, [6, 27, 7]],
    ]);
    for (let i = 201; i < 256; i++) expect(color(cm, i)).toEqual([6, 27, 7]);
  });

  it('Hillshade (explicit part weights)', () => {
    checks(namedColormap('Hillshade')!, [
      [25, [52, 67, 55]],
      [100, [117, 125, 119]],
      [128, [155, 155, 155]],
      [200, [211, 205, 211]],
      [255, [253, 241, 253]],
    ]);
  });

  it('NDVI and NDVI3: the fixed tables of appendix A (runs included)', () => {
    const ndvi = namedColormap('NDVI')!;
    checks(ndvi, [
      [0, [36, 0, 255]],
      [3, [36, 0, 255]],
      [4, [112, 75, 3]],
      [63, [174, 117, 6]],
      [64, [245, 0, 0]],
      [95, [252, 156, 0]],
      [96, [252, 156, 0]],
      [127, [223, 247, 0]],
      [128, [165, 247, 0]],
      [183, [42, 60, 8]],
      [184, [40, 57, 8]],
      [255, [40, 57, 8]],
    ]);
    const ndvi3 = namedColormap('NDVI3')!;
    checks(ndvi3, [
      [2, [36, 0, 255]],
      [4, [245, 20, 0]],
      [9, [247, 33, 0]],
      [13, [247, 41, 0]],
      [61, [252, 113, 13]],
      [100, [253, 252, 186]],
      [139, [56, 156, 14]],
      [142, [51, 153, 0]],
      [198, [39, 117, 0]],
      [199, [38, 115, 0]],
      [255, [38, 115, 0]],
    ]);
  });

  it('Random: seeded, so the same on every call; channels round(255 random()) spread over 0..255', () => {
    const a = namedColormap('Random')!;
    expect(namedColormap('random')).toEqual(a);
    expect(RANDOM_COLORMAP_SEED).toBe(0x5eed);
    const distinct = new Set(Array.from({ length: 256 }, (_, i) => color(a, i).join(',')));
    expect(distinct.size).toBeGreaterThan(250);
    expect(Math.min(...a.rgb)).toBeLessThan(5);
    expect(Math.max(...a.rgb)).toBeGreaterThan(250);
  });
});

describe('Colormap function', () => {
  const u8 = () => rasterOf({ width: 3, height: 2, pixelType: 'U8' }, (x, y) => 10 * y + x, Uint8Array.of(1, 1, 0, 1, 1, 1));

  it('explicit Colormap: pixels, type, mask and statistics pass through; the colormap is attached', async () => {
    const info = { ...gridInfo({ width: 3, height: 1, pixelType: 'F32' }), statistics: [{ min: -2, max: 7 }] };
    const src = memorySource('f', info, [Float32Array.of(-1.5, 2.25, 7)], Uint8Array.of(1, 0, 1));
    const res = await runFunction(
      colormap,
      {
        Colormap: [
          [7, 1, 2, 3],
          [-1, 4, 5, 6, 128],
        ],
      },
      [src],
    );
    expect(res.info.pixelType).toBe('F32');
    expect(res.info.statistics).toEqual([{ min: -2, max: 7 }]);
    expect(Array.from(res.block.bands[0]!)).toEqual([-1.5, 2.25, 7]);
    expect(Array.from(res.block.mask)).toEqual([1, 0, 1]);
    const cm = res.info.colormap!;
    expect(Array.from(cm.values)).toEqual([-1, 7]);
    expect(Array.from(cm.rgb)).toEqual([4, 5, 6, 1, 2, 3]);
    expect(Array.from(cm.alpha!)).toEqual([128, 255]);
  });

  it('ColormapName on U8: pixels and mask unchanged, 256-entry colormap', async () => {
    const res = await runFunction(colormap, { ColormapName: 'ndvi3' }, [u8()]);
    expect(res.info.pixelType).toBe('U8');
    expect(Array.from(res.block.bands[0]!)).toEqual([0, 1, 2, 10, 11, 12]);
    expect(Array.from(res.block.mask)).toEqual([1, 1, 0, 1, 1, 1]);
    expect(res.info.colormap).toEqual(namedColormap('NDVI3'));
  });

  it('a ramp or name on other types gives U8: truncated toward zero, outside 0..255 and NaN NoData', async () => {
    const src = memorySource('f', gridInfo({ width: 6, height: 1, pixelType: 'F64', noData: -9999 }), [
      Float64Array.of(-0.5, 3.9, 255.99, 256, Number.NaN, -9999),
    ]);
    const res = await runFunction(colormap, { ColorrampName: 'Black To White' }, [src]);
    expect(res.info.pixelType).toBe('U8');
    expect(res.info.noData).toBeUndefined();
    // -0.5 truncates to 0 (an entry); 256, NaN and the NoData value are NoData.
    expect(Array.from(res.block.mask)).toEqual([1, 1, 1, 0, 0, 0]);
    expect(Array.from(res.block.bands[0]!).slice(0, 3)).toEqual([0, 3, 255]);
  });

  it('ColorrampName expands the predefined ramp with CIELab; Colorramp objects use their own algorithm', async () => {
    const byName = await runFunction(colormap, { ColorrampName: 'Slope' }, [u8()]);
    expect(Array.from(byName.info.colormap!.rgb)).toEqual(Array.from(rampColors(predefinedRamp('Slope')!).rgb));
    const ramp = { type: 'algorithmic', fromColor: [255, 0, 0, 255], toColor: [0, 0, 255, 0], algorithm: 'geoHSVAlgorithm' };
    const obj = await runFunction(colormap, { Colorramp: ramp }, [u8()]);
    const cm = obj.info.colormap!;
    // HSV red (H 0) -> blue (H 240): the short way round (-120 degrees) goes through magenta:
    // i = 85 is t = 1/3, H = -40 = 320, S = V = 1 -> (255, 0, 255 x 2/3 = 170).
    expect(color(cm, 0)).toEqual([255, 0, 0]);
    expect(color(cm, 85)).toEqual([255, 0, 170]);
    expect(color(cm, 255)).toEqual([0, 0, 255]);
    // alpha interpolated 255 -> 0: entry 85 = 255 - 85 = 170.
    expect([cm.alpha![0], cm.alpha![85], cm.alpha![255]]).toEqual([255, 170, 0]);
    // a multipart ramp object with an algorithm per part
    const multi = {
      type: 'multipart',
      colorRamps: [
        { type: 'algorithmic', fromColor: [0, 0, 0], toColor: [255, 255, 255], algorithm: 'geoCIELabAlgorithm' },
        { type: 'algorithmic', fromColor: [255, 255, 255], toColor: [255, 0, 0], algorithm: 'geoLabLChAlgorithm' },
      ],
    };
    const m = (await runFunction(colormap, { colorramp: multi }, [u8()])).info.colormap!;
    expect(color(m, 0)).toEqual([0, 0, 0]);
    expect(color(m, 255)).toEqual([255, 0, 0]);
  });

  it('precedence Colormap > Colorramp > ColorrampName > ColormapName, the others ignored with warnings', () => {
    const all = { ColormapName: 'Gray', ColorrampName: 'Slope', Colorramp: 'Black To White', Colormap: [[0, 9, 9, 9]] };
    const n1 = applyFunction(colormap, all, [u8()]);
    expect(Array.from(n1.info.colormap!.values)).toEqual([0]);
    expect(n1.plan.warnings).toEqual([
      'Colormap given: Colorramp is ignored',
      'Colormap given: ColorrampName is ignored',
      'Colormap given: ColormapName is ignored',
    ]);
    const { Colormap: _c, ...noColormap } = all;
    const n2 = applyFunction(colormap, noColormap, [u8()]);
    expect(n2.info.colormap!.rgb.slice(0, 3)).toEqual(Uint8Array.of(0, 0, 0));
    expect(color(n2.info.colormap!, 255)).toEqual([255, 255, 255]);
    const { Colorramp: _r, ...nameOnly } = noColormap;
    expect(Array.from(applyFunction(colormap, nameOnly, [u8()]).info.colormap!.rgb)).toEqual(
      Array.from(rampColors(predefinedRamp('Slope')!).rgb),
    );
    expect(applyFunction(colormap, { ColormapName: 'Gray' }, [u8()]).plan.warnings).toBeUndefined();
  });

  it('is found as ColorMap and Colormap in a rule', async () => {
    const src = u8();
    for (const name of ['ColorMap', 'colormap']) {
      const { root } = await buildGraph(
        { rasterFunction: name, rasterFunctionArguments: { ColormapName: 'Elevation' } },
        { registry, resolveSource: async () => src as never },
      );
      expect(root.info.colormap).toEqual(namedColormap('Elevation'));
    }
  });

  describe('bad arguments', () => {
    it('more than one band, or complex pixels: UNSUPPORTED_INPUT at Raster', () => {
      const three = rasterOf({ width: 2, height: 2, bandCount: 3, pixelType: 'U8' }, () => 1);
      expect(at(() => applyFunction(colormap, { ColormapName: 'Gray' }, [three]))).toEqual({
        code: 'UNSUPPORTED_INPUT',
        path: `${P}Raster`,
      });
      const c64 = memorySource('c', gridInfo({ width: 1, height: 1, pixelType: 'C64' }), [new Float32Array(2)]);
      expect(at(() => applyFunction(colormap, { ColormapName: 'Gray' }, [c64]))).toEqual({ code: 'UNSUPPORTED_INPUT', path: `${P}Raster` });
    });

    it('no colormap argument at all', () => {
      expect(at(() => applyFunction(colormap, {}, [u8()]))).toEqual({ code: 'INVALID_ARGUMENT', path: `${P}Colormap` });
    });

    it('unknown names, with a suggestion', () => {
      const e = catchError(() => applyFunction(colormap, { ColormapName: 'Elevaton' }, [u8()]))!;
      expect([e.code, e.path]).toEqual(['INVALID_ARGUMENT', `${P}ColormapName`]);
      expect(e.message).toMatch(/did you mean Elevation/);
      expect(at(() => applyFunction(colormap, { ColorrampName: 'Rainbow' }, [u8()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: `${P}ColorrampName`,
      });
    });

    it('malformed colormaps and ramps name the element', () => {
      expect(
        at(() =>
          applyFunction(
            colormap,
            {
              Colormap: [
                [0, 1, 2, 3],
                [1, 2, 300, 4],
              ],
            },
            [u8()],
          ),
        ),
      ).toEqual({ code: 'INVALID_ARGUMENT', path: `${P}Colormap[1][2]` });
      expect(at(() => applyFunction(colormap, { Colormap: [[0.5, 1, 2, 3]] }, [u8()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: `${P}Colormap[0][0]`,
      });
      expect(at(() => applyFunction(colormap, { Colormap: 'red' }, [u8()]))).toEqual({ code: 'INVALID_ARGUMENT', path: `${P}Colormap` });
      expect(
        at(() => applyFunction(colormap, { Colorramp: { type: 'algorithmic', fromColor: [1, 2], toColor: [0, 0, 0] } }, [u8()])),
      ).toEqual({ code: 'INVALID_ARGUMENT', path: `${P}Colorramp.fromColor` });
      expect(
        at(() =>
          applyFunction(colormap, { Colorramp: { type: 'algorithmic', fromColor: [1, 2, 3], toColor: [0, 0, 0], algorithm: 'rgb' } }, [
            u8(),
          ]),
        ),
      ).toEqual({ code: 'INVALID_ARGUMENT', path: `${P}Colorramp.algorithm` });
    });
  });
});

import { describe, expect, it } from 'vitest';
import { PNG } from 'pngjs';
import type { RasterInfo } from '../../core/pixel-block.js';
import { colormapLegend, labelNumber, legendEntries, rampLegend, SWATCH, swatchPng } from './legend.js';

const decode = (b64: string) => PNG.sync.read(Buffer.from(b64, 'base64'));
const base: RasterInfo = {
  width: 1,
  height: 1,
  bandCount: 1,
  pixelType: 'U8',
  extent: { xmin: 0, ymin: 0, xmax: 1, ymax: 1 },
  cellSize: { x: 1, y: 1 },
};

describe('legend', () => {
  it('draws 20x20 PNG swatches', () => {
    const png = decode(swatchPng(() => [10, 20, 30, 255]));
    expect([png.width, png.height]).toEqual([SWATCH, SWATCH]);
    expect([...png.data.subarray(0, 4)]).toEqual([10, 20, 30, 255]);
  });

  it('one entry per colormap value, with its colour and alpha', () => {
    const entries = colormapLegend({
      values: Float64Array.from([1, 5]),
      rgb: Uint8Array.from([255, 0, 0, 0, 0, 255]),
      alpha: Uint8Array.from([255, 0]),
    });
    expect(entries.map((e) => [e.label, e.values])).toEqual([
      ['1', [1]],
      ['5', [5]],
    ]);
    expect(entries[0]).toMatchObject({ contentType: 'image/png', width: 20, height: 20 });
    expect([...decode(entries[1]!.imageData).data.subarray(0, 4)]).toEqual([0, 0, 255, 0]);
  });

  it('ramp legend High/Low for a continuous band, RGB entries for 3 bands', () => {
    const r = rampLegend(236.452, 1074.354);
    expect(r.map((e) => e.label)).toEqual(['High : 1074.35', 'Low : 236.452']);
    const top = decode(r[0]!.imageData).data[0]!;
    const bottom = decode(r[1]!.imageData).data[(SWATCH * SWATCH - 1) * 4]!;
    expect(top).toBe(255);
    expect(bottom).toBe(0);
    expect(legendEntries({ ...base, bandCount: 3, bandNames: ['b1', 'b2', 'b3'] }).map((e) => e.label)).toEqual([
      'Red: b1',
      'Green: b2',
      'Blue: b3',
    ]);
    expect(legendEntries(base).map((e) => e.label)).toEqual(['High : 255', 'Low : 0']);
    expect(legendEntries(base, () => ({ min: 3, max: 9 })).map((e) => e.label)).toEqual(['High : 9', 'Low : 3']);
    expect(labelNumber(2.5)).toBe('2.5');
  });
});

// Expected values derived by hand: Identity's formula is output = input, so the expectation is the input itself.
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import { applyFunction, gridInfo, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { identity } from './identity.js';

describe('Identity', () => {
  it('keeps the info as is: type, bands, NoData, names, statistics, histograms, grid', async () => {
    const info: RasterInfo = {
      ...gridInfo({ width: 3, height: 2, bandCount: 2, pixelType: 'S16', noData: -9999, cellSize: 30 }),
      bandNames: ['red', 'nir'],
      statistics: [
        { min: -5, max: 7 },
        { min: 0, max: 1 },
      ],
      histograms: [
        { size: 2, min: -5, max: 7, counts: [3, 2] },
        { size: 1, min: 0, max: 1, counts: [5] },
      ],
    };
    const src = memorySource('s16', info, [Int16Array.from([-5, 1, 2, 3, -9999, 7]), Int16Array.from([0, 1, 0, 1, 0, 1])]);
    const res = await runFunction(identity, {}, [src]);
    expect(res.info).toEqual(info);
    expect(res.block.pixelType).toBe('S16');
    expect(res.block.bands[0]).toBeInstanceOf(Int16Array);
    expect(Array.from(res.block.bands[0]!)).toEqual([-5, 1, 2, 3, -9999, 7]);
    expect(Array.from(res.block.bands[1]!)).toEqual([0, 1, 0, 1, 0, 1]);
    // The pixel equal to the NoData value is masked in the input, so it is masked in the output.
    expect(Array.from(res.block.mask)).toEqual([1, 1, 1, 1, 0, 1]);
  });

  it('copies float values bit for bit, NaN and -0 included, and the mask as given', async () => {
    const values = [0.1, -0, NaN, 1e-45, -3.4e38, 2];
    const mask = Uint8Array.from([1, 1, 1, 0, 1, 1]);
    const res = await runFunction(identity, {}, [rasterOf({ width: 3, height: 2, pixelType: 'F64' }, (x, y) => values[y * 3 + x]!, mask)]);
    const out = Array.from(res.block.bands[0]!);
    values.forEach((v, i) => {
      if (mask[i]) expect(Object.is(out[i], v)).toBe(true);
    });
    expect(Array.from(res.block.mask)).toEqual(Array.from(mask));
  });

  it('passes complex planes through unchanged', async () => {
    const info = gridInfo({ width: 2, height: 1, pixelType: 'C64' });
    const res = await runFunction(identity, {}, [memorySource('c64', info, [Float32Array.from([1, -1, 2.5, 3])])]);
    expect(res.info.pixelType).toBe('C64');
    expect(Array.from(res.block.bands[0]!)).toEqual([1, -1, 2.5, 3]);
  });

  it('unknown arguments are ignored (warned by the parser), the output is still the input', async () => {
    const res = await runFunction(identity, { Foo: 1 }, [rasterOf({ width: 2, height: 1, pixelType: 'U8' }, (x) => x + 7)]);
    expect(Array.from(res.block.bands[0]!)).toEqual([7, 8]);
  });

  it('tiled equals whole', async () => {
    const src = rasterOf(
      { width: 100, height: 80, bandCount: 3, pixelType: 'U16' },
      (x, y, b) => (x * 31 + y * 17 + b * 1000) % 65536,
      Uint8Array.from({ length: 8000 }, (_, i) => (i % 11 === 0 ? 0 : 1)),
    );
    expect(await tiledVersusWhole(applyFunction(identity, {}, [src]), [37, 53])).toBeUndefined();
  });
});

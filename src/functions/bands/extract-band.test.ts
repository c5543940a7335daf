// Expected values derived by hand from the formula: output band k = input band ids[k], where input
// band b at (x, y) holds 1000*b + 10*y + x, so every output value says which band it came from.
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import type { RasterNode } from '../../graph/types.js';
import {
  applyFunction,
  catchError,
  gridInfo,
  rasterOf,
  runFunction,
  tiledVersusWhole,
  warningMessages,
  type Result,
} from '../../../test/helpers.js';
import { extractBand } from './extract-band.js';

const value = (x: number, y: number, b: number): number => 1000 * b + 10 * y + x;
const four = (mask?: Uint8Array) => rasterOf({ width: 3, height: 2, bandCount: 4, pixelType: 'U16' }, value, mask);

/** Input band that output band k came from (every pixel must agree). */
function sourceBands(res: Result): number[] {
  return res.block.bands.map((plane) => {
    const b = Math.floor(plane[0]! / 1000);
    for (let y = 0; y < 2; y++) for (let x = 0; x < 3; x++) expect(plane[y * 3 + x]).toBe(value(x, y, b));
    return b;
  });
}

/** A 4-band raster with names, statistics and histograms. */
function named(): RasterNode {
  const info: RasterInfo = {
    ...gridInfo({ width: 3, height: 2, bandCount: 4, pixelType: 'U16', noData: 65535 }),
    bandNames: ['Blue', 'Green', 'Red', 'NIR'],
    statistics: [0, 1, 2, 3].map((b) => ({ min: 1000 * b, max: 1000 * b + 12 })),
    histograms: [0, 1, 2, 3].map((b) => ({ size: 1, min: 1000 * b, max: 1000 * b + 12, counts: [b] })),
  };
  const bands = [0, 1, 2, 3].map((b) => Uint16Array.from({ length: 6 }, (_, i) => value(i % 3, Math.floor(i / 3), b)));
  return memorySource('named', info, bands);
}

const at = (f: () => unknown) => {
  const e = catchError(f);
  return e && { code: e.code, path: e.path };
};

describe('ExtractBand', () => {
  describe('by BandIDs (0-based)', () => {
    it('selects and reorders', async () => {
      const res = await runFunction(extractBand, { BandIDs: [2, 0] }, [four()]);
      expect(res.info.bandCount).toBe(2);
      expect(sourceBands(res)).toEqual([2, 0]);
    });

    it('allows repetition, from a space-delimited string', async () => {
      const res = await runFunction(extractBand, { BandIDs: '3 1 1' }, [four()]);
      expect(sourceBands(res)).toEqual([3, 1, 1]);
    });

    it('accepts numeric strings in an array', async () => {
      const res = await runFunction(extractBand, { bandids: ['1', '0'] }, [four()]);
      expect(sourceBands(res)).toEqual([1, 0]);
    });

    it('keeps the input pixel type and NoData value', async () => {
      const res = await runFunction(extractBand, { BandIDs: [1] }, [named()]);
      expect(res.info.pixelType).toBe('U16');
      expect(res.block.bands[0]).toBeInstanceOf(Uint16Array);
      expect(res.info.noData).toBe(65535);
    });

    it('rule sample 057: BandIDs [1, 3, 6] of a 12-band Sentinel-2-like raster', async () => {
      const s2 = rasterOf({ width: 3, height: 2, bandCount: 12, pixelType: 'U16' }, value);
      const res = await runFunction(extractBand, { BandIDs: [1, 3, 6] }, [s2]);
      expect(sourceBands(res)).toEqual([1, 3, 6]);
    });
  });

  describe('MissingBandAction', () => {
    it('0 FindBestMatch (default) clamps an id past the end to the last band, with a warning', async () => {
      const res = await runFunction(extractBand, { BandIDs: [1, 7, 3] }, [four()]);
      expect(sourceBands(res)).toEqual([1, 3, 3]);
      expect(warningMessages(res.node.plan.warnings).some((w) => w.includes('7'))).toBe(true);
    });

    it('the same rule sample on a 4-band raster clamps 6 to band 3', async () => {
      const res = await runFunction(extractBand, { BandIDs: [1, 3, 6] }, [four()]);
      expect(sourceBands(res)).toEqual([1, 3, 3]);
    });

    it('1 Fail rejects an out-of-range id at plan time, naming it', () => {
      const e = catchError(() => applyFunction(extractBand, { BandIDs: [1, 4], MissingBandAction: 1 }, [four()]));
      expect(e).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.BandIDs' });
      expect(e?.message).toContain('4');
    });

    it('1 Fail (also by name) accepts ids in range', async () => {
      const res = await runFunction(extractBand, { BandIDs: [3, 0], MissingBandAction: 'Fail' }, [four()]);
      expect(sourceBands(res)).toEqual([3, 0]);
    });

    it('rejects values outside 0 and 1', () => {
      expect(at(() => applyFunction(extractBand, { BandIDs: [0], MissingBandAction: 2 }, [four()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.MissingBandAction',
      });
    });
  });

  describe('by BandNames', () => {
    it('matches case-insensitively, in the given order', async () => {
      const res = await runFunction(extractBand, { BandNames: ['nir', ' RED ', 'Green'] }, [named()]);
      expect(sourceBands(res)).toEqual([3, 2, 1]);
    });

    it('names, statistics and histograms follow the selected bands', async () => {
      const res = await runFunction(extractBand, { BandNames: ['NIR', 'Blue', 'NIR'] }, [named()]);
      expect(res.info.bandNames).toEqual(['NIR', 'Blue', 'NIR']);
      expect(res.info.statistics).toEqual([
        { min: 3000, max: 3012 },
        { min: 0, max: 12 },
        { min: 3000, max: 3012 },
      ]);
      expect(res.info.histograms?.map((h) => h.counts[0])).toEqual([3, 0, 3]);
    });

    it('BandIDs win over BandNames (with a warning)', async () => {
      const res = await runFunction(extractBand, { BandIDs: [0], BandNames: ['NIR'] }, [named()]);
      expect(sourceBands(res)).toEqual([0]);
      expect(res.node.plan.warnings?.length).toBeGreaterThan(0);
    });

    it('an unknown name is rejected naming the argument (both actions)', () => {
      for (const action of [0, 1]) {
        expect(at(() => applyFunction(extractBand, { BandNames: ['Red', 'SWIR'], MissingBandAction: action }, [named()]))).toEqual({
          code: 'INVALID_ARGUMENT',
          path: 'rasterFunctionArguments.BandNames',
        });
      }
    });

    it('a raster without band names is unsupported for BandNames', () => {
      expect(at(() => applyFunction(extractBand, { BandNames: ['Red'] }, [four()]))).toEqual({
        code: 'UNSUPPORTED_INPUT',
        path: 'rasterFunctionArguments.BandNames',
      });
    });
  });

  describe('other argument errors', () => {
    it('BandWavelengths needs wavelength metadata, which no raster has yet (both actions)', () => {
      for (const action of [0, 1]) {
        expect(at(() => applyFunction(extractBand, { BandWavelengths: '665 842', MissingBandAction: action }, [named()]))).toEqual({
          code: 'UNSUPPORTED_INPUT',
          path: 'rasterFunctionArguments.BandWavelengths',
        });
      }
    });

    it('BandWavelengths is ignored when BandIDs is given', async () => {
      const res = await runFunction(extractBand, { BandIDs: [2], BandWavelengths: [665] }, [four()]);
      expect(sourceBands(res)).toEqual([2]);
    });

    it('no selection at all is rejected', () => {
      expect(at(() => applyFunction(extractBand, {}, [four()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.BandIDs',
      });
      expect(at(() => applyFunction(extractBand, { BandIDs: [] }, [four()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.BandIDs',
      });
    });

    it('negative and non-integer ids are rejected', () => {
      expect(at(() => applyFunction(extractBand, { BandIDs: [0, -1] }, [four()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.BandIDs',
      });
      expect(at(() => applyFunction(extractBand, { BandIDs: '1.5' }, [four()]))).toEqual({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.BandIDs',
      });
    });

    it('a negative WavelengthMatchTolerance is rejected', () => {
      expect(at(() => applyFunction(extractBand, { BandIDs: [0], WavelengthMatchTolerance: -1 }, [four()]))?.path).toBe(
        'rasterFunctionArguments.WavelengthMatchTolerance',
      );
    });
  });

  it('NoData: the shared mask passes through unchanged', async () => {
    const mask = Uint8Array.from([1, 0, 1, 1, 1, 0]);
    const res = await runFunction(extractBand, { BandIDs: [3] }, [four(mask)]);
    expect(Array.from(res.block.mask)).toEqual(Array.from(mask));
  });

  it('tiled equals whole', async () => {
    const src = rasterOf(
      { width: 100, height: 80, bandCount: 5, pixelType: 'F32' },
      (x, y, b) => Math.cos(x * 0.3 + y * 0.7 + b),
      Uint8Array.from({ length: 8000 }, (_, i) => (i % 17 === 0 ? 0 : 1)),
    );
    const node = applyFunction(extractBand, { BandIDs: [4, 0, 9, 2, 2] }, [src]);
    expect(await tiledVersusWhole(node, [37, 53])).toBeUndefined();
  });
});

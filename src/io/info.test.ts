/**
 * describeRaster: the summary behind `rasterflow info`. Expected statistics are GDAL 3.6.2's,
 * from `/usr/bin/python3` + osgeo.gdal: `ds.GetRasterBand(b).ComputeStatistics(False)`
 * -> [min, max, mean, stdDev] (population standard deviation), hard-coded here.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { encodeGeoTiff } from './encode-tiff.js';
import { describeRaster } from './info.js';

const DATA = join(dirname(fileURLToPath(import.meta.url)), '../../golden/data');
let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rasterflow-info-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function expectStats(actual: unknown, expected: readonly (readonly number[])[]): void {
  const stats = actual as { min: number; max: number; mean: number; stdDev: number }[];
  expect(stats).toHaveLength(expected.length);
  expected.forEach(([min, max, mean, stdDev], b) => {
    expect(stats[b]!.min).toBe(min);
    expect(stats[b]!.max).toBe(max);
    expect(stats[b]!.mean).toBeCloseTo(mean!, 9);
    expect(stats[b]!.stdDev).toBeCloseTo(stdDev!, 9);
  });
}

describe('describeRaster', () => {
  it('L7_ETMs.tif: size, grid, SR and statistics computed like GDAL', async () => {
    const s = await describeRaster(join(DATA, 'L7_ETMs.tif'));
    expect(s).toMatchObject({
      format: 'GeoTIFF',
      width: 349,
      height: 352,
      bandCount: 6,
      pixelType: 'U8',
      noData: null,
      statisticsSource: 'computed',
    });
    expect(s.spatialReference).toMatchObject({ wkid: 31985 });
    expectStats(s.statistics, [
      [47, 255, 79.14771913258662, 14.694064257216086],
      [32, 255, 67.57464508986715, 16.392784318315414],
      [21, 255, 64.35885810106798, 21.58710266803929],
      [9, 255, 59.23541286793436, 23.02118042461991],
      [1, 255, 83.182664756447, 38.49212450730123],
      [1, 255, 59.975205131544676, 33.3800130934345],
    ]);
    expect(s.statistics![0]!.count).toBe(349 * 352);
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  it('the two Jacksboro DEMs (Float32 UTM, Int16 geographic)', async () => {
    const utm = await describeRaster(join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif'));
    expectStats(utm.statistics, [[236.45242309570312, 1074.35400390625, 535.3446090663682, 163.87618981816803]]);
    expect(utm.bandNames).toEqual(['elevation (m)']);
    const geo = await describeRaster(join(DATA, 'jacksboro_fault_dem_3arcsec.tif'));
    expectStats(geo.statistics, [[236, 1076, 531.0311688498975, 162.4566510964761]]);
    expect(geo.spatialReference).toMatchObject({ wkid: 4326, geographic: true });
  });

  it('statistics from the file win; masked pixels are left out of computed ones; NaN NoData is a string', async () => {
    const n = 6;
    const block: PixelBlock = {
      rect: { x: 0, y: 0, width: 3, height: 2 },
      pixelType: 'F32',
      bands: [Float32Array.of(1, 2, 3, 4, 100, 6)],
      mask: Uint8Array.of(1, 1, 1, 1, 0, 1),
    };
    const info: RasterInfo = {
      width: 3,
      height: 2,
      bandCount: 1,
      pixelType: 'F32',
      extent: { xmin: 0, ymin: 0, xmax: 3, ymax: 2 },
      cellSize: { x: 1, y: 1 },
    };
    const computed = join(dir, 'computed.tif');
    writeFileSync(computed, encodeGeoTiff(block, info, { statistics: false }));
    const c = await describeRaster(computed);
    expect(c.noData).toBe('NaN');
    expect(c.statisticsSource).toBe('computed');
    expect(c.statistics![0]).toMatchObject({ min: 1, max: 6, mean: 3.2, count: n - 1 });
    expect(c.statistics![0]!.stdDev).toBeCloseTo(Math.sqrt((2.2 ** 2 + 1.2 ** 2 + 0.2 ** 2 + 0.8 ** 2 + 2.8 ** 2) / 5), 12);
    const stored = join(dir, 'stored.tif');
    // A written file carries its pixels' statistics (never the advertised ones); they are read back.
    writeFileSync(stored, encodeGeoTiff(block, { ...info, statistics: [{ min: -1, max: 99, mean: 7, stdDev: 3 }] }));
    const f = await describeRaster(stored);
    expect(f.statisticsSource).toBe('file');
    expect(f.statistics![0]).toMatchObject({ min: 1, max: 6, mean: 3.2 });
    const none = await describeRaster(computed, { computeStatistics: false });
    expect(none).toMatchObject({ statistics: null, statisticsSource: 'none' });
  });

  it('a band without valid pixels has null statistics; complex rasters get none', async () => {
    const info: RasterInfo = {
      width: 2,
      height: 1,
      bandCount: 1,
      pixelType: 'S16',
      noData: -1,
      extent: { xmin: 0, ymin: 0, xmax: 2, ymax: 1 },
      cellSize: { x: 1, y: 1 },
    };
    const empty = join(dir, 'empty.tif');
    writeFileSync(
      empty,
      encodeGeoTiff(
        { rect: { x: 0, y: 0, width: 2, height: 1 }, pixelType: 'S16', bands: [Int16Array.of(5, 5)], mask: Uint8Array.of(0, 0) },
        info,
      ),
    );
    expect((await describeRaster(empty)).statistics).toEqual([null]);
    const complex = join(dir, 'complex.tif');
    writeFileSync(
      complex,
      encodeGeoTiff(
        { rect: { x: 0, y: 0, width: 2, height: 1 }, pixelType: 'C64', bands: [Float32Array.of(1, 2, 3, 4)], mask: Uint8Array.of(1, 1) },
        { ...info, pixelType: 'C64', noData: undefined },
      ),
    );
    expect(await describeRaster(complex)).toMatchObject({ pixelType: 'C64', statistics: null, statisticsSource: 'none' });
  });

  it('a missing file is IO_ERROR', async () => {
    await expect(describeRaster(join(DATA, 'nope.tif'))).rejects.toMatchObject({ code: 'IO_ERROR', path: 'input' });
  });
});

describe('computeSourceStatistics', () => {
  it('is exported from the engine entry beside the request statistics, neither hiding the other', async () => {
    const api = await import('../index.js');
    const { computeSourceStatistics } = await import('./info.js');
    const { computeStatistics } = await import('../graph/request-statistics.js');
    expect(api.computeSourceStatistics).toBe(computeSourceStatistics);
    expect(api.computeStatistics).toBe(computeStatistics);
    const { memorySource } = await import('../graph/memory-source.js');
    const info: RasterInfo = {
      width: 3,
      height: 1,
      bandCount: 1,
      pixelType: 'F32',
      extent: { xmin: 0, ymin: 0, xmax: 3, ymax: 1 },
      cellSize: { x: 1, y: 1 },
    };
    const src = memorySource('s', info, [Float32Array.of(1, 2, 6)]);
    expect(await computeSourceStatistics(src)).toEqual([
      { min: 1, max: 6, mean: 3, stdDev: expect.closeTo(Math.sqrt(14 / 3), 12), count: 3 },
    ]);
  });
});

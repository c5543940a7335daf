import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import {
  nativeScheme,
  TILE_SIZE,
  tileExtent,
  tileInfoJson,
  tileRange,
  WEB_MERCATOR_HALF,
  WEB_MERCATOR_LODS,
  WEB_MERCATOR_SCHEME,
} from './tiles.js';

const dem: RasterInfo = {
  width: 383,
  height: 407,
  bandCount: 1,
  pixelType: 'F32',
  extent: { xmin: 732000, ymin: 4037625, xmax: 760725, ymax: 4068150 },
  cellSize: { x: 75, y: 75 },
  spatialReference: { wkid: 32616, metersPerUnit: 1 },
};

describe('Web Mercator scheme', () => {
  it('has the vendor levels: level 0 one tile of the whole world, resolutions halving, scales at 96 dpi', () => {
    expect(WEB_MERCATOR_LODS).toHaveLength(24);
    expect(WEB_MERCATOR_LODS[0]).toEqual({ level: 0, resolution: 156543.03392800014, scale: 591657527.591555 });
    for (let i = 1; i < WEB_MERCATOR_LODS.length; i++) {
      const a = WEB_MERCATOR_LODS[i - 1]!;
      const b = WEB_MERCATOR_LODS[i]!;
      expect(b.resolution / a.resolution).toBeCloseTo(0.5, 9);
      expect(b.scale / a.scale).toBeCloseTo(0.5, 6);
      // the vendor's scale: resolution * 96 dpi * 39.37 inches per metre
      expect(Math.abs(b.scale / (b.resolution * 96 * 39.37) - 1)).toBeLessThan(1e-6);
    }
    expect(WEB_MERCATOR_LODS[0]!.resolution * TILE_SIZE).toBeCloseTo(2 * WEB_MERCATOR_HALF, 3);
  });

  it('maps level/row/col to an extent from the top-left origin', () => {
    const e = tileExtent(WEB_MERCATOR_SCHEME, 1, 0, 1)!;
    expect(e.xmin).toBeCloseTo(0, 3);
    expect(e.ymax).toBeCloseTo(WEB_MERCATOR_HALF, 3);
    expect(e.xmax).toBeCloseTo(WEB_MERCATOR_HALF, 3);
    expect(e.ymin).toBeCloseTo(0, 3);
    expect(tileExtent(WEB_MERCATOR_SCHEME, 99, 0, 0)).toBeUndefined();
    expect(tileExtent(WEB_MERCATOR_SCHEME, 1, -1, 0)).toBeUndefined();
    expect(tileExtent(WEB_MERCATOR_SCHEME, 1, 0.5, 0)).toBeUndefined();
  });

  it('finds the tiles covering an extent', () => {
    const r = tileRange(WEB_MERCATOR_SCHEME, 2, { xmin: 1, ymin: 1, xmax: 2, ymax: 2 })!;
    expect(r).toEqual({ minRow: 1, maxRow: 1, minCol: 2, maxCol: 2 });
    const all = tileRange(WEB_MERCATOR_SCHEME, 1, {
      xmin: -WEB_MERCATOR_HALF,
      ymin: -WEB_MERCATOR_HALF,
      xmax: WEB_MERCATOR_HALF,
      ymax: WEB_MERCATOR_HALF,
    })!;
    expect(all).toEqual({ minRow: 0, maxRow: 1, minCol: 0, maxCol: 1 });
  });

  it('writes the vendor tileInfo', () => {
    const t = tileInfoJson(WEB_MERCATOR_SCHEME, 'png');
    expect(t).toMatchObject({ rows: 256, cols: 256, dpi: 96, format: 'PNG', origin: { x: -WEB_MERCATOR_HALF, y: WEB_MERCATOR_HALF } });
    expect(t['spatialReference']).toEqual({ wkid: 102100, latestWkid: 3857 });
    expect((t['lods'] as unknown[]).length).toBe(24);
    expect(tileInfoJson(WEB_MERCATOR_SCHEME, 'jpgpng')['format']).toBe('MIXED');
  });
});

describe('native scheme', () => {
  it('ends at the raster resolution, starts where the raster fits one tile, origin at its corner', () => {
    const s = nativeScheme(dem);
    expect(s.origin).toEqual({ x: 732000, y: 4068150 });
    expect(s.lods.at(-1)!.resolution).toBe(75);
    expect(s.lods).toHaveLength(2); // 407 px -> 204 px at level 0
    expect(s.lods[0]!.resolution).toBe(150);
    expect(s.lods[1]!.scale).toBeCloseTo(75 * 96 * 39.37, 6);
    expect(s.spatialReference).toEqual({ wkid: 32616, latestWkid: 32616 });
    // the last level's tiles are aligned with the raster's pixels
    const e = tileExtent(s, 1, 1, 0)!;
    expect((e.xmin - dem.extent.xmin) / 75).toBe(0);
    expect((dem.extent.ymax - e.ymax) / 75).toBe(256);
    expect(tileRange(s, 1, dem.extent)).toEqual({ minRow: 0, maxRow: 1, minCol: 0, maxCol: 1 });
  });
});

/**
 * Statistics and histograms of an image service over a geometry (computeHistograms,
 * computeStatisticsHistograms): the pixels whose centres fall inside the polygon (or envelope),
 * rasterized with the chipper's scanline rule (the same as Clip and `gdal_rasterize` without
 * ALL_TOUCHED), valid pixels only. Statistics and histograms follow the engine's request-statistics
 * conventions (graph/request-statistics.ts): 8-bit data one bin per value over -0.5..255.5, other
 * types 256 bins over [min, max]; population standard deviation.
 */
import { rasterize, type MultiPolygon } from '../../chipper/geometry.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { rect } from '../../core/rect.js';
import { memorySource } from '../../graph/memory-source.js';
import { computeStatistics } from '../../graph/request-statistics.js';
import type { RequestBandStatistics } from '../../graph/types.js';

/** The mask of `block` restricted to pixels whose centres fall inside `polygon` (pixel coordinates of the block). */
export function polygonMask(block: PixelBlock, polygon: MultiPolygon): Uint8Array {
  const { width, height } = block.rect;
  const inside = new Uint8Array(width * height);
  rasterize(polygon, width, height, (i) => {
    inside[i] = block.mask[i] ?? 0;
  });
  return inside;
}

/** Per band statistics and histogram of `block`'s pixels where `mask` is 1. */
export async function maskedStatistics(
  block: PixelBlock,
  info: RasterInfo,
  mask: Uint8Array,
): Promise<(RequestBandStatistics | undefined)[]> {
  const { width, height } = block.rect;
  const { statistics: _s, histograms: _h, noData: _n, colormap: _c, ...rest } = info;
  const node = memorySource(
    'histograms',
    { ...rest, width, height, bandCount: block.bands.length, pixelType: block.pixelType },
    block.bands,
    mask,
  );
  return computeStatistics(node, rect(0, 0, width, height), { bins: 256 });
}

/** The vendor's `histograms` entries. Bands without a valid pixel get an empty histogram. */
export function histogramsJson(stats: readonly (RequestBandStatistics | undefined)[]): Record<string, unknown>[] {
  return stats.map((s) =>
    s === undefined
      ? { size: 0, min: 0, max: 0, counts: [] }
      : { size: s.histogram.size, min: s.histogram.min, max: s.histogram.max, counts: [...s.histogram.counts] },
  );
}

/** The vendor's `statistics` entries (`skipX`/`skipY` 1: every pixel is read). */
export function statisticsJson(stats: readonly (RequestBandStatistics | undefined)[]): Record<string, unknown>[] {
  return stats.map((s) =>
    s === undefined
      ? { min: 0, max: 0, mean: 0, standardDeviation: 0, median: 0, mode: 0, skipX: 1, skipY: 1, count: 0 }
      : {
          min: s.statistics.min,
          max: s.statistics.max,
          mean: s.statistics.mean ?? 0,
          standardDeviation: s.statistics.stdDev ?? 0,
          median: s.statistics.median ?? 0,
          mode: s.statistics.mode ?? 0,
          skipX: 1,
          skipY: 1,
          count: s.statistics.count ?? 0,
        },
  );
}

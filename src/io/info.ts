/**
 * `describeRaster(location)`: a JSON-ready summary of a raster for `rasterflow info`: size, bands,
 * pixel type, grid, spatial reference, NoData, band names and per-band statistics. Statistics come
 * from the file (GDAL's STATISTICS_* metadata) when it has them, else they are computed over the
 * valid pixels (mask 1), reading full-width stripes of about a megapixel at a time, so memory
 * stays bounded whatever the raster's size. Standard deviation is the population one, as GDAL's.
 */
import type { BandStatistics, Extent, SpatialReference } from '../core/pixel-block.js';
import type { PixelType } from '../core/pixel-type.js';
import { PIXEL_TYPE_INFO } from '../core/pixel-type.js';
import type { SourceNode } from '../graph/types.js';
import { openRaster, type OpenOptions } from './source.js';

export interface RasterSummary {
  readonly location: string;
  readonly format: 'GeoTIFF';
  readonly width: number;
  readonly height: number;
  readonly bandCount: number;
  readonly pixelType: PixelType;
  readonly extent: Extent;
  readonly cellSize: { readonly x: number; readonly y: number };
  readonly spatialReference: SpatialReference | null;
  /** A number, or 'NaN' / 'Infinity' / '-Infinity' (JSON has no such numbers), or null: none. */
  readonly noData: number | string | null;
  readonly bandNames: readonly string[] | null;
  /** One entry per band; null for a band without valid pixels, or for complex rasters. */
  readonly statistics: readonly (BandStatistics | null)[] | null;
  readonly statisticsSource: 'file' | 'computed' | 'none';
}

export interface DescribeOptions extends OpenOptions {
  /** Compute statistics when the file has none (default true). */
  readonly computeStatistics?: boolean;
  /**
   * Also told (besides what opening warns of, OpenOptions) when the summary comes from the header
   * alone but the file is broken (a block cut short or past its end): as gdalinfo, the header is
   * still described; a read of those pixels fails.
   */
  readonly onWarning?: (message: string) => void;
}

export async function describeRaster(location: string, options: DescribeOptions = {}): Promise<RasterSummary> {
  const source = await openRaster(location, options);
  try {
    const info = source.info;
    let statistics: readonly (BandStatistics | null)[] | null = info.statistics ?? null;
    let statisticsSource: RasterSummary['statisticsSource'] = statistics ? 'file' : 'none';
    if (!statistics && options.computeStatistics !== false && !PIXEL_TYPE_INFO[info.pixelType].complex) {
      // Reads every pixel: a broken block is an IO_ERROR naming it.
      statistics = await computeSourceStatistics(source, options.signal);
      statisticsSource = 'computed';
    } else {
      try {
        source.verifyBlocks?.();
      } catch (e) {
        options.onWarning?.(`${e instanceof Error ? e.message : String(e)}; reading its pixels will fail`);
      }
    }
    return {
      location,
      format: 'GeoTIFF',
      width: info.width,
      height: info.height,
      bandCount: info.bandCount,
      pixelType: info.pixelType,
      extent: info.extent,
      cellSize: info.cellSize,
      spatialReference: info.spatialReference ?? null,
      noData: info.noData === undefined ? null : Number.isFinite(info.noData) ? info.noData : String(info.noData),
      bandNames: info.bandNames ?? null,
      statistics,
      statisticsSource,
    };
  } finally {
    await source.close();
  }
}

/**
 * min, max, mean, stdDev and count of the valid pixels of each band of a whole source (null for a
 * band without any), read in strips. Real-valued sources only (complex planes are read as their
 * real parts). Not to be confused with graph/request-statistics.ts `computeStatistics`, the
 * statistics and histograms of any node over a request's rectangle.
 */
export async function computeSourceStatistics(source: SourceNode, signal?: AbortSignal): Promise<(BandStatistics | null)[]> {
  const { width, height, bandCount } = source.info;
  const k = PIXEL_TYPE_INFO[source.info.pixelType].complex ? 2 : 1;
  const acc = Array.from({ length: bandCount }, () => ({ n: 0, min: Infinity, max: -Infinity, shift: Number.NaN, s: 0, ss: 0 }));
  const rows = Math.max(1, Math.floor((1 << 20) / Math.max(1, width)));
  for (let y = 0; y < height; y += rows) {
    const block = await source.read({ x: 0, y, width, height: Math.min(rows, height - y) }, signal);
    const mask = block.mask;
    for (let b = 0; b < bandCount; b++) {
      const plane = block.bands[b]!;
      const a = acc[b]!;
      let { n, min, max, shift, s, ss } = a;
      for (let i = 0; i < mask.length; i++) {
        if (mask[i] === 0) continue;
        const v = plane[k * i]!;
        if (shift !== shift) shift = v; // shifted sums keep the variance exact enough
        const d = v - shift;
        n++;
        s += d;
        ss += d * d;
        if (v < min) min = v;
        if (v > max) max = v;
      }
      Object.assign(a, { n, min, max, shift, s, ss });
    }
  }
  return acc.map(({ n, min, max, shift, s, ss }) => {
    if (n === 0) return null;
    const variance = Math.max(0, (ss - (s * s) / n) / n);
    return { min, max, mean: shift + s / n, stdDev: Math.sqrt(variance), count: n };
  });
}

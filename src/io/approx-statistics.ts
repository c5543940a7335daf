/**
 * Approximate band statistics of a raster file, as GDAL's GDALRasterBand::ComputeStatistics with
 * bApproxOK (what `gdalinfo -approx_stats` prints), for rules that need statistics the file does
 * not store (graph/input-statistics.ts):
 *
 * 1. GetRasterSampleOverview(GDALSTAT_APPROX_NUMSAMPLES = 2500): among the overviews, the one with
 *    the fewest pixels that still has more than 2500 (and fewer than the full image); its
 *    statistics are then computed exactly, over every pixel.
 * 2. Without such an overview, the full image is sampled by whole blocks: with B blocks
 *    (blocksPerRow x blocksPerColumn, row-major), every r-th block from the first, r =
 *    max(1, floor(sqrt(B))), plus one when that equals blocksPerRow and there is more than one
 *    block per row (GDAL's guard against sampling only the first column). Edge blocks count only
 *    their pixels inside the image.
 *
 * Valid pixels only (the source's mask: NoData, NaN and masked pixels excluded); population
 * standard deviation; float64 sums (pixel-statistics.ts).
 */
import type { BandStatistics } from '../core/pixel-block.js';
import type { SourceNode } from '../graph/types.js';
import { PixelStatistics } from './pixel-statistics.js';

/** GDALSTAT_APPROX_NUMSAMPLES. */
const APPROX_NUM_SAMPLES = 2500;

export interface StatisticsLevel {
  readonly node: SourceNode;
  readonly blockWidth: number;
  readonly blockHeight: number;
}

/** GetRasterSampleOverview: index into `levels` (0 = the full image, then the overviews). */
export function sampleLevel(levels: readonly { readonly width: number; readonly height: number }[], samples = APPROX_NUM_SAMPLES): number {
  let best = 0;
  let bestSamples = levels[0]!.width * levels[0]!.height;
  for (let i = 1; i < levels.length; i++) {
    const n = levels[i]!.width * levels[i]!.height;
    if (n < bestSamples && n > samples) {
      best = i;
      bestSamples = n;
    }
  }
  return best;
}

/** `levels`: the full image first, then its overviews. */
export async function approximateStatistics(
  levels: readonly StatisticsLevel[],
  signal?: AbortSignal,
): Promise<(BandStatistics | undefined)[]> {
  const chosen = sampleLevel(levels.map((l) => l.node.info));
  const { node, blockWidth, blockHeight } = levels[chosen]!;
  const { width, height, bandCount, pixelType } = node.info;
  const acc = new PixelStatistics(bandCount, pixelType, undefined);
  let pixels = 0;
  if (chosen > 0) {
    // Every pixel of the overview, in stripes of about a megapixel.
    const rows = Math.max(1, Math.floor((1 << 20) / width));
    for (let y = 0; y < height; y += rows) {
      const h = Math.min(rows, height - y);
      const b = await node.read({ x: 0, y, width, height: h }, signal);
      acc.add(b.bands, b.mask, 0, width, h, width);
      pixels += width * h;
    }
  } else {
    const across = Math.ceil(width / blockWidth);
    const down = Math.ceil(height / blockHeight);
    const count = across * down;
    let rate = Math.max(1, Math.floor(Math.sqrt(count)));
    if (rate === across && across > 1) rate++;
    for (let i = 0; i < count; i += rate) {
      const by = Math.floor(i / across);
      const bx = i - by * across;
      const x = bx * blockWidth;
      const y = by * blockHeight;
      const w = Math.min(blockWidth, width - x);
      const h = Math.min(blockHeight, height - y);
      const b = await node.read({ x, y, width: w, height: h }, signal);
      acc.add(b.bands, b.mask, 0, w, h, w);
      pixels += w * h;
    }
  }
  return acc
    .result(Math.max(1, pixels))
    .map((s) => (s === undefined ? undefined : { min: s.min, max: s.max, mean: s.mean, stdDev: s.stdDev, count: s.count }));
}

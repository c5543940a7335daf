/**
 * StatisticsHistogram: attach statistics and histograms to a raster; pixels pass through unchanged.
 *
 * Spec: raster-functions.md "StatisticsHistogram" [VJS StatisticsHistogramFunction], seed §8.
 * `Statistics`: one object per band {min, max, mean, standardDeviation, count, median, mode}
 * (the [min, max, mean, standardDeviation] array form of Stretch is accepted too); `Histograms`:
 * one {size, min, max, counts} per band, bin i covering [min + i*w, min + (i+1)*w), w = (max -
 * min)/size. A list of one entry applies to every band [ours]. Given lists REPLACE the input's
 * published statistics/histograms in the output info, so downstream functions (Stretch without
 * DRA, Colormap ramps) use them; an argument left out keeps what the input publishes.
 * Neither given: INVALID_ARGUMENT naming Statistics (the function would do nothing).
 * Output: the input's type, bands, NoData and pixels (mask copied).
 * outputPixelType: the pixels pass through unchanged, so the engine's cast converts them (values
 * unchanged where the type holds them; otherwise rounded half away from zero and saturated, NaN ->
 * NoData; a real type to complex gives real parts).
 */
import { invalidArgument } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import type { Plane } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { parseHistograms, parseStatistics } from './statistics-args.js';

const args = {
  Statistics: { kind: 'json', optional: true, doc: 'Per band {min, max, mean, standardDeviation, count, median, mode}.' },
  Histograms: { kind: 'json', optional: true, doc: 'Per band {size, min, max, counts}.' },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

const at = argPaths(args);

export const statisticsHistogram = defineFunction<typeof args, { readonly input: number }>({
  name: 'StatisticsHistogram',
  summary: 'Set the statistics and histograms a raster publishes to downstream functions; pixels unchanged.',
  variableName: 'Raster',
  family: 'radiometric',
  verification: 'hand: pass-through pixels, published statistics read back by Stretch',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (a.Statistics === undefined && a.Histograms === undefined) {
      throw invalidArgument(at('Statistics'), 'StatisticsHistogram needs Statistics, Histograms or both');
    }
    const info: RasterInfo = {
      ...src,
      ...(a.Statistics !== undefined ? { statistics: parseStatistics(a.Statistics, src.bandCount, at('Statistics')) } : {}),
      ...(a.Histograms !== undefined ? { histograms: parseHistograms(a.Histograms, src.bandCount, at('Histograms')) } : {}),
    };
    return { info, halo: 0, params: { input: a.Raster } };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    out.mask.set(src.mask);
    for (let b = 0; b < out.bands.length; b++) (out.bands[b] as Plane).set(src.bands[b]!);
  },
});

/**
 * CompositeBand — stack the bands of several rasters into one raster.
 *
 * Spec: raster-functions.md §2 "CompositeBand" (variableName `Rasters`). Output bands are the bands
 * of input 1, then input 2, ... (band count = sum) [VJS `CompositeBandFunction`]. Pixel type: the
 * smallest type that holds every input type (`promote()`: U8+S16 -> S16, U8+F32 -> F32), so every
 * value is copied exactly. Band names, statistics and histograms are concatenated when every input
 * has them [VJS].
 * Edges and NoData: the masks are ANDed, as the vendor client does (VJS `pixelUtils.compositeBands`):
 * a pixel NoData in any input is NoData in every output band.
 * Grids (spec §1.5): the output grid takes the first raster's extent (ExtentType FirstOf, as the
 * vendor's CompositeBand has no extent choice) and the cell size `CellsizeType` picks (default
 * MaxOf, the Python API's default); inputs on another grid or spatial reference are resampled onto
 * it by the engine (`Plan.align`: nearest for integer/thematic inputs, bilinear for float). Pixels
 * outside an input's extent are NoData. Statistics and histograms are kept only when no input is
 * resampled.
 */
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, promote, representable } from '../../core/pixel-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { alignMethod, outputGrid } from '../local/grid.js';
import { onGrid } from '../../graph/align.js';

const args = {
  Rasters: { kind: 'rasters', minLength: 1, doc: 'Rasters whose bands are stacked, in order.' },
  CellsizeType: {
    kind: 'enum',
    values: [0, 1, 2, 3, 4],
    names: { FirstOf: 0, MinOf: 1, MaxOf: 2, MeanOf: 3, LastOf: 4 },
    default: 2,
    doc: 'Output cell size when inputs differ: 0 FirstOf, 1 MinOf, 2 MaxOf (default), 3 MeanOf, 4 LastOf.',
  },
} as const satisfies ArgSchema;

interface CompositeBandParams {
  /** For each output band, in order: the input index, the band inside it, and whether it is complex. */
  readonly sources: readonly { readonly input: number; readonly band: number; readonly complex: boolean }[];
  readonly inputs: readonly number[];
  readonly complex: boolean;
}


export const compositeBand = defineFunction<typeof args, CompositeBandParams>({
  name: 'CompositeBand',
  summary: 'Stack the bands of several rasters into one multiband raster.',
  variableName: 'Rasters',
  family: 'bands',
  verification: 'reference: gdalbuildvrt -separate golden; hand: type promotion and mask AND',
  args,

  plan(a, inputs) {
    const infos = a.Rasters.map((i) => inputs[i]!);
    const first = infos[0]!;
    const grid = outputGrid(infos, 0, a.CellsizeType)!;
    const target: RasterInfo = { ...first, ...grid };
    const moved = infos.map((i) => !onGrid(i, target));

    const pixelType = promote(infos.map((i) => i.pixelType));
    const sources: { input: number; band: number; complex: boolean }[] = [];
    a.Rasters.forEach((input, k) => {
      const complex = isComplex(infos[k]!.pixelType);
      for (let band = 0; band < infos[k]!.bandCount; band++) sources.push({ input, band, complex });
    });

    const all = <T>(get: (i: RasterInfo) => readonly T[] | undefined): T[] | undefined =>
      infos.every((i) => get(i)?.length === i.bandCount) ? infos.flatMap((i) => get(i)!) : undefined;

    // ASSUMPTION (spec silent): the output NoData value is the first one an input declares that the
    // promoted type can hold; the mask, not this value, decides which pixels are NoData.
    const noData = infos.map((i) => i.noData).find((v) => v !== undefined && representable(v, pixelType));

    const kept = moved.every((m) => !m);
    const info: RasterInfo = {
      ...target,
      bandCount: sources.length,
      pixelType,
      noData,
      // ASSUMPTION (spec silent on names): names are kept only when every input has them, so a
      // later ExtractBand by name never matches a made-up name.
      bandNames: all((i) => i.bandNames),
      statistics: kept ? all((i) => i.statistics) : undefined,
      histograms: kept ? all((i) => i.histograms) : undefined,
    };
    return {
      info,
      halo: 0,
      params: { sources, inputs: [...new Set(a.Rasters)], complex: isComplex(pixelType) },
      align: inputs.map((i, k) => (a.Rasters.includes(k) && !onGrid(i, target) ? alignMethod(i) : undefined)),
    };
  },

  kernel(p, inputs, out) {
    const m = out.mask;
    const n = m.length;
    for (const k of p.inputs) {
      const src = inputs[k]!.mask;
      for (let i = 0; i < n; i++) if (src[i] === 0) m[i] = 0;
    }
    for (let b = 0; b < p.sources.length; b++) {
      const s = p.sources[b]!;
      const from = inputs[s.input]!.bands[s.band]!;
      const to = out.bands[b]!;
      if (p.complex && !s.complex) {
        // Real into complex: the value becomes the real part; the imaginary part stays 0.
        for (let i = 0; i < n; i++) to[2 * i] = from[i]!;
      } else {
        // Same layout; the promoted type holds every value, so the typed-array copy is exact.
        to.set(from as never);
      }
    }
  },
});

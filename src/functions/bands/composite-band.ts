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
 * Multidimensional inputs (seed section 8 rule 6; the spec's CompositeBand section is silent, rule 6
 * covers every function with several inputs) [ours]: the composite is made slice by slice. Slices
 * are paired by MatchVariable / UnionDimension exactly as Arithmetic pairs them (core/multidim.ts
 * `pairSlices`, the whole-slice form of `pairMultidimensional`: same rules, errors and warnings),
 * and output slice s stacks input 1's bands of its slice, then input 2's, ... (slices of any band
 * count: 3-band slices + 1-band slices give 4-band slices); a plain input gives all its bands to
 * every slice. The output is multidimensional (the paired variables and dimension values, band
 * names `sliceBandName`); statistics and histograms are dropped.
 * Per-slice NoData (core/multidim.ts): an output slice is missing at a pixel where any band it
 * stacks is missing there (its input's mask is 0, the value is NaN, or, for a multidimensional
 * input, equals that input's NoData value); the pixel keeps its other slices, and the mask is 0
 * only where every slice is missing. Missing slice pixels hold the output NoData value, so an
 * integer type is kept only when every input declares the same NoData value (as the
 * multidimensional sources do); otherwise the type becomes F32 (F64 when a 32-bit integer is
 * involved) with NaN.
 * outputPixelType: the pixels pass through unchanged, so the engine's cast converts them (values
 * unchanged where the type holds them; otherwise rounded half away from zero and saturated, NaN ->
 * NoData; a real type to complex gives real parts).
 */
import { layoutBandNames, multidimOf, pairSlices, sliceValueMissing } from '../../core/multidim.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex, PIXEL_TYPE_INFO, promote, representable } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
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
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name.' },
  UnionDimension: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: true = dimension names must match; false = union of the dimensions.',
  },
} as const satisfies ArgSchema;

interface CompositeBandParams {
  /** For each output band, in order: the input index, the band inside it, and whether it is complex. */
  readonly sources: readonly { readonly input: number; readonly band: number; readonly complex: boolean }[];
  readonly inputs: readonly number[];
  readonly complex: boolean;
  /**
   * Multidimensional output: output slices as [first output band, band count], the value written
   * into missing slice pixels, and per input index the NoData value that marks a missing slice
   * value (multidimensional inputs only).
   */
  readonly slices?: {
    readonly ranges: readonly (readonly [number, number])[];
    readonly missing: number;
    readonly noData: readonly (number | undefined)[];
  };
}

const at = argPaths(args);

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
    // The output mask is the AND of the inputs': an input outside the first one's extent leaves it all NoData.
    const grid = outputGrid(infos, 0, a.CellsizeType, { paths: infos.map((_, i) => at('Rasters', i)) })!;
    const target: RasterInfo = { ...first, ...grid };
    const moved = infos.map((i) => !onGrid(i, target));
    const align = inputs.map((i, k) => (a.Rasters.includes(k) && !onGrid(i, target) ? alignMethod(i) : undefined));

    let pixelType = promote(infos.map((i) => i.pixelType));
    // Multidimensional inputs: composite slice by slice (seed rule 6 pairing of whole slices).
    const md = pairSlices(infos, {
      matchVariable: a.MatchVariable,
      unionDimension: a.UnionDimension,
      at,
      paths: a.Rasters.map((_, i) => at('Rasters', i)),
    });
    if (md) {
      const sources: { input: number; band: number; complex: boolean }[] = [];
      const ranges: [number, number][] = [];
      for (let s = 0; s < md.sliceCount; s++) {
        const start = sources.length;
        a.Rasters.forEach((input, k) => {
          const complex = isComplex(infos[k]!.pixelType);
          for (const band of md.bands[k]![s]!) sources.push({ input, band, complex });
        });
        ranges.push([start, sources.length - start]);
      }
      // Missing slice pixels need a NoData value: one every input shares, else NaN in a float type.
      const nd0 = infos[0]!.noData;
      const shared = nd0 !== undefined && infos.every((i) => Object.is(i.noData, nd0)) ? nd0 : undefined;
      if (PIXEL_TYPE_INFO[pixelType].integer && (shared === undefined || !representable(shared, pixelType))) {
        pixelType = promote([pixelType, 'F32']);
      }
      const noData = PIXEL_TYPE_INFO[pixelType].integer
        ? shared!
        : shared !== undefined && representable(shared, pixelType)
          ? shared
          : Number.NaN;
      const multidimensional = md.layout((s) => ranges[s]![1]);
      const noDataOf = inputs.map((i, k) => (a.Rasters.includes(k) && multidimOf(i) ? i.noData : undefined));
      const info: RasterInfo = {
        ...target,
        bandCount: sources.length,
        pixelType,
        noData,
        multidimensional,
        bandNames: layoutBandNames(multidimensional, sources.length),
        statistics: undefined,
        histograms: undefined,
      };
      return {
        info,
        halo: 0,
        params: {
          sources,
          inputs: [...new Set(a.Rasters)],
          complex: isComplex(pixelType),
          slices: { ranges, missing: noData, noData: noDataOf },
        },
        align,
        ...(md.warnings.length ? { warnings: md.warnings } : {}),
      };
    }

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
      // A multidimensional first input's layout no longer describes the stacked bands.
      multidimensional: undefined,
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
      align,
    };
  },

  kernel(p, inputs, out) {
    if (p.slices) {
      compositeSlices(p, p.slices, inputs, out);
      return;
    }
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
        to.set(from);
      }
    }
  },
});

/** Multidimensional composite: per output slice, copy its bands where the slice is complete, else the missing value. */
function compositeSlices(
  p: CompositeBandParams,
  sl: NonNullable<CompositeBandParams['slices']>,
  inputs: readonly PixelBlock[],
  out: PixelBlock,
): void {
  const m = out.mask;
  const n = m.length;
  const any = new Uint8Array(n);
  const ok = new Uint8Array(n);
  const miss = sl.missing;
  for (const [start, count] of sl.ranges) {
    // ok[i]: every band this slice stacks is present at pixel i.
    ok.fill(1);
    for (let b = start; b < start + count; b++) {
      const s = p.sources[b]!;
      const src = inputs[s.input]!;
      const sm = src.mask;
      const from = src.bands[s.band]!;
      const nd = sl.noData[s.input];
      const step = s.complex ? 2 : 1;
      for (let i = 0; i < n; i++) {
        const v = from[i * step]!;
        if (sm[i] === 0 || sliceValueMissing(v, nd)) ok[i] = 0;
      }
    }
    for (let b = start; b < start + count; b++) {
      const s = p.sources[b]!;
      const from = inputs[s.input]!.bands[s.band]!;
      const to = out.bands[b]!;
      if (p.complex) {
        // Interleaved (re, im) output; a real input gives the real part, imaginary 0.
        for (let i = 0; i < n; i++) {
          if (ok[i] === 0) {
            to[2 * i] = miss;
            to[2 * i + 1] = miss;
          } else if (s.complex) {
            to[2 * i] = from[2 * i]!;
            to[2 * i + 1] = from[2 * i + 1]!;
          } else {
            to[2 * i] = from[i]!;
            to[2 * i + 1] = 0;
          }
        }
      } else {
        for (let i = 0; i < n; i++) to[i] = ok[i] === 0 ? miss : from[i]!;
      }
    }
    for (let i = 0; i < n; i++) any[i]! |= ok[i]!;
  }
  for (let i = 0; i < n; i++) m[i] = any[i]!;
}

/**
 * Identity — pass the input through unchanged.
 *
 * Spec: raster-functions.md §2 "Identity" (variableName `Raster`). In mosaicked services it only
 * marks the source raster for the default mosaicking; here there is nothing to mark, so it is a
 * pure pass-through. Output: the input's `RasterInfo` as is (pixel type, band count, NoData value,
 * band names, statistics, histograms), every band copied bit for bit.
 * Edges and NoData: the input's mask is copied as is; no pixel becomes valid or invalid.
 * outputPixelType: the pixels pass through unchanged, so the engine's cast converts them (values
 * unchanged where the type holds them; otherwise rounded half away from zero and saturated, NaN ->
 * NoData; a real type to complex gives real parts).
 */
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

interface IdentityParams {
  /** Index of the `Raster` input among the node's inputs. */
  readonly input: number;
}

export const identity = defineFunction<typeof args, IdentityParams>({
  name: 'Identity',
  summary: 'Pass-through: the output is the input, unchanged.',
  variableName: 'Raster',
  family: 'local',
  verification: 'reference: gdal_translate copy golden',
  args,

  plan(a, inputs) {
    const info = inputs[a.Raster]!;
    return { info, halo: 0, params: { input: a.Raster } };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    // Copied rather than aliased: the per-tile memo may hand the same input block to other nodes.
    out.mask.set(src.mask);
    for (let b = 0; b < out.bands.length; b++) out.bands[b]!.set(src.bands[b]!);
  },
});

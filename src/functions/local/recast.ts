/**
 * Recast — change argument values of the functions further down a chain (a nested rule or a
 * service template) without editing it: a `Raster` plus name/value overrides.
 *
 * Spec: raster-functions.md §2 "Recast" (variableName `Raster`). The vendor documents a table of
 * "variable names and user-defined values" (e.g. `Weights: "0.37 0.23 0.4"` for a pan-sharpening
 * template); its ArcObjects class has `Raster` and `Arguments`. The REST layout is not shown.
 * ASSUMPTION (spec recommendation [ours]): every argument other than `Raster` is an override
 * `{ name: value }`; an `Arguments` (or `Overrides`) argument holding an object contributes its
 * entries as overrides too (the vendor object's layout). The rule builder (rule/build.ts) applies
 * them, matching names case-insensitively, to every function of the nested raster's chain, down
 * to its sources and through templates: an argument of that name (written or defaulted, aliases
 * included) or a long-form RasterFunctionVariable of that name takes the override's value, which
 * is then parsed and checked as if written there (errors point at the override). An enclosing
 * Recast wins over a nested one for the same name. An override that matches nothing in the chain
 * is a warning with a did-you-mean, like any unknown argument.
 * Pixels: none of Recast's own; the output is the (overridden) nested raster as is: info, pixel
 * type, NoData, names, statistics, mask.
 * outputPixelType: Recast has no pixels of its own; the nested raster's values go through the
 * engine's cast.
 */
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  Raster: {
    kind: 'raster',
    default: '$$',
    doc: 'The chain (nested rule or template) whose arguments are overridden; every other argument is an override name: value.',
  },
} as const satisfies ArgSchema;

interface RecastParams {
  readonly input: number;
}

export const recast = defineFunction<typeof args, RecastParams>({
  name: 'Recast',
  summary: 'Override argument values / template variables of the nested chain by name; no pixel math.',
  variableName: 'Raster',
  family: 'local',
  verification: 'reference: gdaldem hillshade and gdal_calc.py goldens reached through overrides; hand: rule-level override tests',
  nestedOverrides: true,
  args,

  plan(a, inputs) {
    return { info: inputs[a.Raster]!, halo: 0, params: { input: a.Raster } };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    // Copied rather than aliased: the per-tile memo may hand the same input block to other nodes.
    out.mask.set(src.mask);
    for (let b = 0; b < out.bands.length; b++) out.bands[b]!.set(src.bands[b]!);
  },
});

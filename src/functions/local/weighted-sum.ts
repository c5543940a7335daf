/**
 * WeightedSum — Σ value_i × weight_i over several rasters.
 *
 * Spec: raster-functions.md §2 "WeightedSum" (VPY `weighted_sum`). `Rasters` (one or more),
 * `Fields` (per raster, the attribute used as the input value; only `Value`, the pixel value, is
 * available: rasterflow carries no attribute tables, so any other field is UNSUPPORTED_INPUT),
 * `Weights` (per raster, any real numbers, negative allowed; default 1 each [ours]).
 * Math, in float64: out = Σ v_i × w_i over the first band of each raster (a warning names ignored
 * bands); no rescaling. Output: one band F32, NoData NaN; NoData where any input is NoData (or
 * NaN), or where the sum is not a finite F32 number.
 * Grids [ours, spec §1.5 with the FirstOf defaults]: the output grid is the first raster's; other
 * rasters are resampled onto it by the engine (Plan.align: nearest for integer/colormapped inputs,
 * bilinear for float ones; other spatial references reprojected).
 * Multidimensional rasters: one weighted sum per slice, slices paired by MatchVariable /
 * UnionDimension (core/multidim.ts `pairMultidimensional`).
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { pairMultidimensional } from '../../core/multidim.js';
import { alignMethod, CellsizeType, ExtentType, outputGrid } from './grid.js';

const args = {
  Rasters: { kind: 'rasters', minLength: 1, doc: 'Input rasters (the first band of each is used).' },
  Fields: { kind: 'strings', doc: 'Per raster, the field used as the input value; only Value (the pixel value) is supported.' },
  Weights: { kind: 'numbers', doc: 'Per raster, the weight (any real number); default 1 each.' },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name.' },
  UnionDimension: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: true = dimension names must match; false = union of the dimensions.',
  },
} as const satisfies ArgSchema;

interface WeightedSumParams {
  readonly inputs: readonly number[];
  readonly weights: readonly number[];
  /** `bands[k][b]`: the band of input k that output band b reads (one output band unless multidimensional). */
  readonly bands: readonly (readonly number[])[];
}

const at = argPaths(args);

/** Check `Fields` (only Value) and the rasters (no constants, no complex); shared by WeightedOverlay. */
export function checkRasterList(
  fn: string,
  rasters: readonly number[],
  inputs: readonly RasterInfo[],
  fields: readonly string[] | undefined,
  warnings: string[],
): void {
  rasters.forEach((r, i) => {
    const info = inputs[r]!;
    if (info.constant !== undefined) throw invalidArgument(at('Rasters', i), `${fn} needs rasters, not constants`);
    if (isComplex(info.pixelType)) throw unsupportedInput(at('Rasters', i), `${fn} does not take complex (${info.pixelType}) rasters`);
    if (info.bandCount > 1) warnings.push(`Rasters[${i}] has ${info.bandCount} bands: ${fn} uses the first`);
  });
  if (fields !== undefined) {
    if (fields.length !== rasters.length) {
      throw invalidArgument(at('Fields'), `Fields needs one entry per raster: ${rasters.length} raster(s), ${fields.length} field(s)`);
    }
    fields.forEach((f, i) => {
      if (f.trim() !== '' && f.trim().toLowerCase() !== 'value') {
        throw unsupportedInput(
          at('Fields', i),
          `field ${JSON.stringify(f)}: rasters carry no attribute tables here, only the Value field (the pixel value) is available`,
        );
      }
    });
  }
}

/** The output RasterInfo of a one-band result on the first raster's grid, and the align list. */
export function firstOfGrid(
  rasters: readonly number[],
  inputs: readonly RasterInfo[],
  pixelType: RasterInfo['pixelType'],
  noData: number | undefined,
  nearest: boolean,
) {
  const list = rasters.map((r) => inputs[r]!);
  const grid = outputGrid(list, ExtentType.FirstOf, CellsizeType.FirstOf, { paths: rasters.map((_, i) => at('Rasters', i)) })!;
  const info: RasterInfo = { ...grid, bandCount: 1, pixelType, ...(noData !== undefined ? { noData } : {}) };
  const align = inputs.map((i, k) => (rasters.includes(k) ? (nearest ? { method: 'nearest' as const } : alignMethod(i)) : undefined));
  return { info, align };
}

export const weightedSum = defineFunction<typeof args, WeightedSumParams>({
  name: 'WeightedSum',
  summary: 'Sum of rasters multiplied by weights (F32).',
  variableName: 'Rasters',
  family: 'local',
  verification: 'reference: NumPy golden on Landsat bands; hand: weights, NoData, grids',
  args,

  plan(a, inputs, to) {
    const warnings: string[] = [];
    checkRasterList('WeightedSum', a.Rasters, inputs, a.Fields, warnings);
    const weights = a.Weights ?? a.Rasters.map(() => 1);
    if (weights.length !== a.Rasters.length) {
      throw invalidArgument(
        at('Weights'),
        `Weights needs one weight per raster: ${a.Rasters.length} raster(s), ${weights.length} weight(s)`,
      );
    }
    const { info: one, align } = firstOfGrid(a.Rasters, inputs, floatOutputType(to, 'F32'), Number.NaN, false);
    // Multidimensional rasters: one weighted sum per paired slice (seed rule 6), else of first bands.
    const md = pairMultidimensional(
      a.Rasters.map((r) => inputs[r]!),
      { matchVariable: a.MatchVariable, unionDimension: a.UnionDimension, at, paths: a.Rasters.map((_, i) => at('Rasters', i)) },
    );
    const info: RasterInfo = md ? { ...one, bandCount: md.bandCount, multidimensional: md.multidimensional, bandNames: md.bandNames } : one;
    if (md) warnings.splice(0, warnings.length, ...md.warnings);
    const bands = md ? md.bands : a.Rasters.map(() => [0]);
    return { info, halo: 0, align, params: { inputs: a.Rasters, weights, bands }, ...(warnings.length ? { warnings } : {}) };
  },

  kernel(p, inputs, out) {
    const m = out.mask;
    const n = m.length;
    for (const k of p.inputs) {
      const sm = inputs[k]!.mask;
      for (let i = 0; i < n; i++) if (sm[i] === 0) m[i] = 0;
    }
    const acc = new Float64Array(n);
    for (let b = 0; b < out.bands.length; b++) {
      acc.fill(0);
      for (let k = 0; k < p.inputs.length; k++) {
        const v = inputs[p.inputs[k]!]!.bands[p.bands[k]![b]!]!;
        const w = p.weights[k]!;
        for (let i = 0; i < n; i++) acc[i]! += v[i]! * w;
      }
      const dst = out.bands[b]!;
      for (let i = 0; i < n; i++) {
        const s = Math.fround(acc[i]!);
        if (m[i] === 0 || s - s !== 0) {
          m[i] = 0;
          dst[i] = Number.NaN;
        } else dst[i] = s;
      }
    }
    // A band's bad result made the pixel NoData: clear it in the bands written before.
    for (let b = 0; b < out.bands.length - 1; b++) {
      const dst = out.bands[b]!;
      for (let i = 0; i < n; i++) if (m[i] === 0) dst[i] = Number.NaN;
    }
  },
});

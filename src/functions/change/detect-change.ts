/**
 * DetectChange ("Detect Change Using Change Analysis Raster") — change dates or counts from a
 * CCDC change analysis raster (spec raster-functions.md §2 "DetectChange"; seed section 8).
 *
 * Input: the output of CCDC (`multidimensional.model.kind === 'ccdc'`; see ccdc.ts for its bands).
 * A change is a segment with a break (BreakTime > 0); its magnitude is the Euclidean norm of the
 * per-band magnitudes (median residuals of the anomalies that made the break).
 * ChangeType: 0 time of latest change (default), 1 time of earliest change, 2 time of largest
 * change, 3 number of changes. Types 0–2 give `MaxNumberChanges` bands (default 1), ordered from
 * the most relevant change (latest first, earliest first, largest first; equal magnitudes: the
 * later first) as decimal years [ours: the spec recommends decimal years, F32]; a pixel without
 * any change is NoData, and bands past a pixel's number of changes are 0. Type 3 gives one U16
 * band, the count (0 where the model found no break); MaxNumberChanges is ignored.
 * NoData: where CCDC fitted no model. Types 4–7 (longest, shortest, fastest, slowest) and the
 * later filters describe LandTrendr segments, which rasterflow does not compute: 4–7 are outside
 * the accepted values.
 * outputPixelType: change dates and magnitudes are computed in floating point (a float type is
 * computed into directly, an integer type through the engine's cast: round half away from zero,
 * saturate); change counts (ChangeType 3, U16) go through the engine's cast to a real type that
 * holds 0..65535, other types are refused when the rule is built.
 */
import { unsupportedInput } from '../../core/errors.js';
import { multidimOf } from '../../core/multidim.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { argPaths } from '../../graph/args.js';
import { checkHolds, floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { CCDC_BAND_FIELDS, CCDC_SEGMENT_BANDS } from './ccdc.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'A change analysis raster (CCDC output).' },
  ChangeType: {
    kind: 'enum',
    values: [0, 1, 2, 3],
    names: { TimeOfLatestChange: 0, TimeOfEarliestChange: 1, TimeOfLargestChange: 2, NumberOfChanges: 3 },
    default: 0,
    doc: '0 time of latest change, 1 time of earliest change, 2 time of largest change, 3 number of changes.',
  },
  MaxNumberChanges: { kind: 'int', min: 1, default: 1, doc: 'Bands of change times to return (types 0-2).' },
} as const satisfies ArgSchema;

interface DetectChangeParams {
  readonly input: number;
  readonly type: 0 | 1 | 2 | 3;
  readonly bands: number;
  readonly segments: number;
  readonly bandsPerSegment: number;
  readonly changeBands: number;
  readonly first: number;
}

const at = argPaths(args);

export const detectChange = defineFunction<typeof args, DetectChangeParams>({
  name: 'DetectChange',
  aliases: ['DetectChangeUsingChangeAnalysisRaster'],
  summary: 'Time of the latest, earliest or largest change, or the number of changes, from a CCDC raster.',
  variableName: 'Raster',
  family: 'change',
  verification: 'reference: breaks inserted at known pixels and dates (goldens); hand: hand-made CCDC rasters',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const md = multidimOf(src);
    const model = md?.model;
    if (!md || model?.kind !== 'ccdc')
      throw unsupportedInput(at('Raster'), 'DetectChange needs a change analysis raster (the output of CCDC)');
    const type = a.ChangeType;
    const bands = type === 3 ? 1 : a.MaxNumberChanges;
    const warnings = type === 3 && a.MaxNumberChanges !== 1 ? ['MaxNumberChanges does not apply to ChangeType 3 (number of changes)'] : [];
    const what = ['Latest', 'Earliest', 'Largest'][type];
    if (type === 3) checkHolds('DetectChange', to, 0, 65535, 'change counts');
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: bands,
      pixelType: type === 3 ? 'U16' : floatOutputType(to, 'F32'),
      ...(type === 3 ? {} : { noData: Number.NaN }),
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      bandNames: type === 3 ? ['NumberOfChanges'] : Array.from({ length: bands }, (_, k) => `${what}Change_${k + 1}`),
    };
    return {
      info,
      halo: 0,
      params: {
        input: a.Raster,
        type,
        bands,
        segments: model.maxSegments,
        bandsPerSegment: model.bandsPerSegment,
        changeBands: model.changeBands.length,
        first: md.variables[0]!.slices[0]!.band,
      },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const n = out.mask.length;
    const S = p.segments;
    const times = new Float64Array(S);
    const sizes = new Float64Array(S);
    const order = new Int32Array(S);
    const S0 = CCDC_SEGMENT_BANDS.length;
    const F = CCDC_BAND_FIELDS.length;
    for (let i = 0; i < n; i++) {
      for (const b of out.bands) b[i] = 0;
      if (src.mask[i] === 0) {
        out.mask[i] = 0;
        if (p.type !== 3) for (const b of out.bands) b[i] = Number.NaN;
        continue;
      }
      let c = 0;
      for (let s = 0; s < S; s++) {
        const base = p.first + s * p.bandsPerSegment;
        const tb = src.bands[base + 2]![i]!;
        if (!(tb > 0)) continue;
        let m2 = 0;
        for (let b = 0; b < p.changeBands; b++) {
          const v = src.bands[base + S0 + b * F + F - 1]![i]!;
          m2 += v * v;
        }
        times[c] = tb;
        sizes[c] = Math.sqrt(m2);
        order[c] = c;
        c++;
      }
      if (p.type === 3) {
        out.mask[i] = 1;
        out.bands[0]![i] = c;
        continue;
      }
      if (c === 0) {
        out.mask[i] = 0;
        for (const b of out.bands) b[i] = Number.NaN;
        continue;
      }
      out.mask[i] = 1;
      // Insertion sort of the (few) changes by relevance.
      for (let a = 1; a < c; a++) {
        const k = order[a]!;
        let j = a - 1;
        while (j >= 0 && before(p.type, k, order[j]!, times, sizes)) {
          order[j + 1] = order[j]!;
          j--;
        }
        order[j + 1] = k;
      }
      for (let k = 0; k < p.bands && k < c; k++) out.bands[k]![i] = times[order[k]!]!;
    }
  },
});

/** Whether change a is more relevant than change b for the change type. */
function before(type: number, a: number, b: number, times: Float64Array, sizes: Float64Array): boolean {
  if (type === 0) return times[a]! > times[b]!;
  if (type === 1) return times[a]! < times[b]!;
  return sizes[a]! > sizes[b]! || (sizes[a] === sizes[b] && times[a]! > times[b]!);
}

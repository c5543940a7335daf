/**
 * ArgStatistics — per pixel, the band index holding the maximum, minimum or median, or the
 * duration (longest run of consecutive bands within [MinValue, MaxValue]).
 *
 * Spec: raster-functions.md §2 "ArgStatistics"; spec section 8. Bands of all `Rasters` are
 * concatenated and numbered from 0 (input 0's bands 0..k-1, input 1's from k, ...).
 * ArgStatisticsType 0 ArgumentMax, 1 ArgumentMin: the index of the extreme value; when that value
 * occurs in more than one band the result is `UndefinedClass` (default 100) [V: "no definitive
 * maximum/minimum"]. 2 ArgumentMedian: the valid values sorted ascending, the median is the one at
 * position floor((m - 1) / 2) (the lower median for an even count m); its band index, or
 * UndefinedClass when the median value occurs in more than one band [ours, as the doc].
 * 3 Duration: the length of the longest run of consecutive bands (band-index order) with
 * MinValue <= v <= MaxValue; 0 when none [ours]; MinValue and MaxValue are required.
 * NoData [ours, spec]: a band that is NoData at a pixel (its raster's mask, or a NaN value) is
 * skipped by the Arg types and breaks a run for Duration; a pixel NoData in every band is NoData.
 * Output: one band; natural type the smallest of U8, U16, S16, U32, S32 that holds every possible
 * result (0..n-1 and UndefinedClass; 0..n for Duration), n the total band count.
 * Grids [ours, spec §1.5 FirstOf defaults]: the first raster's grid; others are resampled onto it
 * (Plan.align: nearest for integer inputs, bilinear for float ones).
 * Multidimensional rasters [ours; rule 6 pairing]: with two or more `Rasters` of which at least
 * one is multidimensional, the statistic is taken slice by slice: slices are paired by
 * MatchVariable / UnionDimension exactly as Arithmetic pairs them (core/multidim.ts `pairSlices`,
 * the whole-slice form of `pairMultidimensional`: same rules, errors and warnings; a plain raster
 * takes part in every slice with all its bands), and output slice s is the statistic over the
 * bands of the paired input slices, numbered from 0 in input order within the slice (input 0's
 * slice bands, then input 1's, ...). The output is multidimensional, one band per slice. A single
 * raster keeps the spec's band numbering over all its bands (for a one-band time series, the
 * position of the slice in the series), so ArgStatistics along a series still works.
 * Per-slice NoData (core/multidim.ts): a value of a multidimensional input equal to its NoData
 * value counts as NoData like a masked or NaN one. In a multidimensional output, a slice with no
 * valid band holds the output NoData value (the type's maximum, the type chosen so that it is not a
 * possible result) and the pixel is NoData only where every slice is.
 * outputPixelType: band indexes and durations through the engine's cast to any real type that holds
 * their advertised range (values unchanged); complex types, and types that would merge indexes, are
 * refused when the rule is built.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import { layoutBandNames, multidimOf, pairSlices } from '../../core/multidim.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, PIXEL_TYPE_INFO, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { alignMethod, CellsizeType, ExtentType, outputGrid } from './grid.js';

export const ArgStatisticsType = { ArgumentMax: 0, ArgumentMin: 1, ArgumentMedian: 2, Duration: 3 } as const;

const args = {
  Rasters: { kind: 'rasters', minLength: 1, doc: 'Input rasters; their bands are numbered from 0 across all inputs, in order.' },
  ArgStatisticsType: {
    kind: 'enum',
    values: [0, 1, 2, 3],
    names: {
      ArgumentMax: 0,
      ArgMax: 0,
      Max: 0,
      Maximum: 0,
      ArgumentMin: 1,
      ArgMin: 1,
      Min: 1,
      Minimum: 1,
      ArgumentMedian: 2,
      ArgMedian: 2,
      Median: 2,
      Duration: 3,
    },
    default: ArgStatisticsType.ArgumentMax,
    aliases: ['Type'],
    doc: '0 ArgumentMax, 1 ArgumentMin, 2 ArgumentMedian (band index of the statistic), 3 Duration (longest run within MinValue..MaxValue).',
  },
  MinValue: { kind: 'number', doc: 'Duration: lowest value counted (inclusive); required for Duration.' },
  MaxValue: { kind: 'number', doc: 'Duration: highest value counted (inclusive); required for Duration.' },
  UndefinedClass: { kind: 'int', default: 100, doc: 'Output when no definitive maximum, minimum or median exists (ties).' },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name.' },
  UnionDimension: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: true = dimension names must match; false = union of the dimensions.',
  },
} as const satisfies ArgSchema;

/** One band the statistic reads: input index, band, and the value marking a missing slice (multidimensional inputs). */
interface BandRef {
  readonly input: number;
  readonly band: number;
  readonly noData: number | undefined;
}

interface ArgStatisticsParams {
  /** Per output band, the bands its statistic reads, in index order. */
  readonly outputs: readonly (readonly BandRef[])[];
  readonly type: 0 | 1 | 2 | 3;
  readonly undefinedClass: number;
  readonly min: number;
  readonly max: number;
  /** Multidimensional output: the value of a slice with no valid band (the mask is 0 only where every slice has none). */
  readonly missing: number | undefined;
}

const at = argPaths(args);

export const argStatistics = defineFunction<typeof args, ArgStatisticsParams>({
  name: 'ArgStatistics',
  summary: 'Band index of the maximum, minimum or median per pixel, or the duration within a value range.',
  variableName: 'Rasters',
  family: 'local',
  codes: 'band indexes',
  verification: 'reference: NumPy golden (argmax/argmin/median/duration) on the Landsat bands; hand: ties, NoData',
  args,

  plan(a, inputs) {
    const list = a.Rasters.map((r, i) => {
      const info = inputs[r]!;
      if (info.constant !== undefined) throw invalidArgument(at('Rasters', i), 'ArgStatistics needs rasters, not constants');
      if (isComplex(info.pixelType))
        throw unsupportedInput(at('Rasters', i), `ArgStatistics does not take complex (${info.pixelType}) rasters`);
      return info;
    });
    const ref = (k: number, band: number): BandRef => {
      const info = list[k]!;
      return { input: a.Rasters[k]!, band, noData: multidimOf(info) ? info.noData : undefined };
    };
    // Several rasters, one multidimensional: the statistic per paired slice (seed rule 6).
    const md =
      a.Rasters.length > 1
        ? pairSlices(list, {
            matchVariable: a.MatchVariable,
            unionDimension: a.UnionDimension,
            at,
            paths: a.Rasters.map((_, i) => at('Rasters', i)),
          })
        : undefined;
    const outputs: BandRef[][] = md
      ? Array.from({ length: md.sliceCount }, (_, s) => list.flatMap((_, k) => md.bands[k]![s]!.map((b) => ref(k, b))))
      : [list.flatMap((info, k) => Array.from({ length: info.bandCount }, (_, b) => ref(k, b)))];
    const n = Math.max(...outputs.map((o) => o.length));
    const duration = a.ArgStatisticsType === ArgStatisticsType.Duration;
    const warnings: string[] = md ? [...md.warnings] : [];
    let lo = 0;
    let hi: number;
    if (duration) {
      if (a.MinValue === undefined) throw invalidArgument(at('MinValue'), 'Duration needs MinValue');
      if (a.MaxValue === undefined) throw invalidArgument(at('MaxValue'), 'Duration needs MaxValue');
      if (a.MinValue > a.MaxValue) throw invalidArgument(at('MaxValue'), `MaxValue (${a.MaxValue}) is below MinValue (${a.MinValue})`);
      hi = n;
    } else {
      if (a.MinValue !== undefined || a.MaxValue !== undefined)
        warnings.push('MinValue and MaxValue only apply to Duration (ArgStatisticsType 3) and are ignored');
      lo = Math.min(0, a.UndefinedClass);
      hi = Math.max(n - 1, a.UndefinedClass);
    }
    // A multidimensional output needs a NoData value for missing slices: the type's maximum, above every result.
    const top = md ? hi + 1 : hi;
    const pixelType = (['U8', 'U16', 'S16', 'U32', 'S32'] as PixelType[]).find(
      (t) => PIXEL_TYPE_INFO[t].min <= lo && PIXEL_TYPE_INFO[t].max >= top,
    );
    if (pixelType === undefined)
      throw invalidArgument(at('UndefinedClass'), `UndefinedClass ${a.UndefinedClass} does not fit a 32-bit integer`);
    const missing = md ? PIXEL_TYPE_INFO[pixelType].max : undefined;
    // NoData inputs are left out of the statistic: only an input outside the first one's extent is refused.
    const grid = outputGrid(list, ExtentType.FirstOf, CellsizeType.FirstOf, {
      paths: list.map((_, i) => at('Rasters', i)),
      needsAll: false,
    })!;
    let info: RasterInfo = { ...grid, bandCount: 1, pixelType };
    if (md) {
      const multidimensional = md.layout(() => 1);
      info = {
        ...info,
        bandCount: md.sliceCount,
        noData: missing,
        multidimensional,
        bandNames: layoutBandNames(multidimensional, md.sliceCount),
      };
    }
    const align = inputs.map((i, k) => (a.Rasters.includes(k) ? alignMethod(i) : undefined));
    return {
      info,
      halo: 0,
      align,
      params: { outputs, type: a.ArgStatisticsType, undefinedClass: a.UndefinedClass, min: a.MinValue ?? 0, max: a.MaxValue ?? 0, missing },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const m = out.mask;
    const npx = m.length;
    const multi = p.missing !== undefined;
    // any[i]: some output band is valid at pixel i (multidimensional output: the mask).
    const any = new Uint8Array(npx);
    const nMax = Math.max(...p.outputs.map((o) => o.length));
    const vals = new Float64Array(nMax);
    const idx = new Int32Array(nMax);
    const uc = p.undefinedClass;
    for (let o = 0; o < p.outputs.length; o++) {
      const refs = p.outputs[o]!;
      const nb = refs.length;
      // Band planes, their masks and missing-slice values, in index order.
      const planes = refs.map((r) => inputs[r.input]!.bands[r.band]!);
      const masks = refs.map((r) => inputs[r.input]!.mask);
      const nds = Float64Array.from(refs, (r) => (r.noData === undefined ? Number.NaN : r.noData));
      const dst = out.bands[o]!;
      for (let i = 0; i < npx; i++) {
        let count = 0;
        for (let b = 0; b < nb; b++) {
          const x = planes[b]![i]!;
          if (masks[b]![i] !== 0 && x === x && x !== nds[b]) {
            vals[count] = x;
            idx[count] = b;
            count++;
          } else if (p.type === 3) {
            vals[count] = Number.NaN; // a run breaker
            idx[count] = b;
            count++;
          }
        }
        let valid = 0;
        for (let c = 0; c < count; c++) if (vals[c] === vals[c]) valid++;
        if (valid === 0) {
          // No valid band: NoData (multidimensional output: this slice is missing).
          dst[i] = multi ? p.missing : 0;
          continue;
        }
        any[i] = 1;
        if (p.type === 3) {
          let best = 0;
          let run = 0;
          for (let c = 0; c < count; c++) {
            const x = vals[c]!;
            if (x >= p.min && x <= p.max) {
              run++;
              if (run > best) best = run;
            } else run = 0;
          }
          dst[i] = best;
          continue;
        }
        if (p.type === 2) {
          // Lower median of the valid values; insertion sort of (value, band) pairs (n is small).
          for (let c = 1; c < count; c++) {
            const x = vals[c]!;
            const j0 = idx[c]!;
            let j = c - 1;
            while (j >= 0 && vals[j]! > x) {
              vals[j + 1] = vals[j]!;
              idx[j + 1] = idx[j]!;
              j--;
            }
            vals[j + 1] = x;
            idx[j + 1] = j0;
          }
          const k = (count - 1) >> 1;
          const med = vals[k]!;
          const tie = (k > 0 && vals[k - 1] === med) || (k + 1 < count && vals[k + 1] === med);
          dst[i] = tie ? uc : idx[k]!;
          continue;
        }
        let best = vals[0]!;
        let at = idx[0]!;
        let ties = 0;
        for (let c = 1; c < count; c++) {
          const x = vals[c]!;
          if (p.type === 0 ? x > best : x < best) {
            best = x;
            at = idx[c]!;
            ties = 0;
          } else if (x === best) ties++;
        }
        dst[i] = ties > 0 ? uc : at;
      }
    }
    for (let i = 0; i < npx; i++) if (any[i] === 0) m[i] = 0;
  },
});

/**
 * Mask — turn pixels into NoData by value lists and value ranges per band; values are unchanged.
 *
 * Spec: raster-functions.md §2 "Mask" (VJS `MaskFunction`, `pixelUtils.mask`); §1.4 (space-separated
 * lists). Per band b, a pixel is "NoData in band b" when its value equals one of band b's
 * `NoDataValues` (string b holds space- or comma-separated values; `""` = none), or when band b has
 * an included range ([min, max], both inclusive) and the value lies outside it, or [ours, an
 * extension the task asked for] when it lies inside one of band b's `ExcludedRanges` ([min, max],
 * both inclusive). `NoDataInterpretation` 0 MatchAny (default): NoData if NoData in ANY band;
 * 1 MatchAll: NoData only if NoData in ALL bands (bands without any rule never match, so with
 * MatchAll every band needs a rule for a pixel to be masked [ours, VJS behaves the same]).
 * Pixels already NoData stay NoData. Float comparisons: a NoData value on an F32 raster is rounded
 * to F32 first, so "0.1" matches the stored 0.1f. NaN values in NoDataValues match NaN pixels.
 * Lists shorter than the band count leave the remaining bands without rules; longer lists are an
 * error (they name bands that do not exist).
 * Output: the input unchanged (type, bands, NoData value, statistics, band names); only the mask.
 * outputPixelType: the pixels pass through unchanged, so the engine's cast converts them (values
 * unchanged where the type holds them; otherwise rounded half away from zero and saturated, NaN ->
 * NoData; a real type to complex gives real parts).
 */
import { invalidArgument } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

export const NoDataInterpretation = { MatchAny: 0, MatchAll: 1 } as const;

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
  NoDataValues: {
    kind: 'strings',
    doc: 'One string per band, each holding space-separated NoData values for that band, e.g. ["0", "0 255", ""].',
  },
  IncludedRanges: {
    kind: 'numbers',
    doc: 'Flat [min0, max0, min1, max1, ...], one inclusive range per band: values outside become NoData.',
  },
  ExcludedRanges: {
    kind: 'numbers',
    doc: 'Extension: flat [min0, max0, min1, max1, ...], one inclusive range per band: values inside become NoData.',
  },
  NoDataInterpretation: {
    kind: 'enum',
    values: [0, 1],
    names: { MatchAny: 0, Any: 0, MatchAll: 1, All: 1 },
    default: NoDataInterpretation.MatchAny,
    doc: '0 MatchAny: NoData if NoData in any band (default); 1 MatchAll: NoData only if NoData in all bands.',
  },
} as const satisfies ArgSchema;

interface BandRule {
  readonly values: Float64Array;
  /** [min, max] included, or undefined. */
  readonly included?: readonly [number, number];
  readonly excluded?: readonly [number, number];
}

interface MaskParams {
  readonly input: number;
  /** One entry per band; undefined = no rule for that band. */
  readonly rules: readonly (BandRule | undefined)[];
  readonly all: boolean;
}

const at = argPaths(args);

export const mask = defineFunction<typeof args, MaskParams>({
  name: 'Mask',
  summary: 'Set pixels to NoData by per-band NoData values and included/excluded value ranges (match any or all bands).',
  variableName: 'Raster',
  family: 'local',
  verification: 'reference: NumPy goldens on the Landsat image (any/all); hand: lists, ranges, F32 rounding',
  args,

  plan(a, inputs) {
    if (a.NoDataValues === undefined && a.IncludedRanges === undefined && a.ExcludedRanges === undefined) {
      // A Mask with nothing to mask is a broken rule, not a pass-through.
      throw invalidArgument(at('NoDataValues'), 'Mask needs NoDataValues, IncludedRanges or ExcludedRanges');
    }
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) throw invalidArgument(at('Raster'), `Mask does not take complex (${src.pixelType}) rasters`);
    const nb = src.bandCount;
    const f32 = src.pixelType === 'F32';
    const lists = (a.NoDataValues ?? []).map((s, i) => {
      const tokens = s.split(/[\s,;]+/).filter((t) => t !== '');
      return Float64Array.from(tokens, (t) => {
        const v = /^nan$/i.test(t) ? Number.NaN : Number(t);
        if (Number.isNaN(v) && !/^nan$/i.test(t)) throw invalidArgument(at('NoDataValues', i), `not a number: ${JSON.stringify(t)}`);
        return f32 ? Math.fround(v) : v;
      });
    });
    if (lists.length > nb) {
      throw invalidArgument(
        at('NoDataValues'),
        `NoDataValues has ${lists.length} entries but the raster has ${nb} band(s): one string per band`,
      );
    }
    const ranges = (name: 'IncludedRanges' | 'ExcludedRanges'): ([number, number] | undefined)[] => {
      const r = a[name] ?? [];
      if (r.length % 2 !== 0)
        throw invalidArgument(at(name), `${name} holds [min, max] pairs per band: an even count of numbers, got ${r.length}`);
      if (r.length / 2 > nb) throw invalidArgument(at(name), `${name} has ${r.length / 2} range(s) but the raster has ${nb} band(s)`);
      return Array.from({ length: r.length / 2 }, (_, b) => {
        const lo = r[2 * b]!;
        const hi = r[2 * b + 1]!;
        if (lo > hi) throw invalidArgument(at(name), `range of band ${b} [${lo}, ${hi}] has min > max`);
        return [lo, hi];
      });
    };
    const inc = ranges('IncludedRanges');
    const exc = ranges('ExcludedRanges');
    const rules: (BandRule | undefined)[] = [];
    for (let b = 0; b < nb; b++) {
      const values = lists[b] ?? new Float64Array(0);
      const included = inc[b];
      const excluded = exc[b];
      rules.push(
        values.length || included || excluded
          ? { values, ...(included ? { included } : {}), ...(excluded ? { excluded } : {}) }
          : undefined,
      );
    }
    const warnings = rules.every((r) => r === undefined) ? ['Mask has no NoDataValues or ranges: the raster passes through unchanged'] : [];
    const info: RasterInfo = { ...src };
    return {
      info,
      halo: 0,
      params: { input: a.Raster, rules, all: a.NoDataInterpretation === NoDataInterpretation.MatchAll },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const n = out.mask.length;
    for (let b = 0; b < out.bands.length; b++) out.bands[b]!.set(src.bands[b]!);
    // hits[i] = number of bands in which pixel i is NoData.
    const hits = new Uint16Array(n);
    let ruled = 0;
    for (let b = 0; b < p.rules.length; b++) {
      const r = p.rules[b];
      if (r === undefined) continue;
      ruled++;
      const v = src.bands[b]!;
      const vals = r.values;
      const nv = vals.length;
      const hasNaN = vals.some((x) => x !== x);
      const incLo = r.included ? r.included[0] : -Infinity;
      const incHi = r.included ? r.included[1] : Infinity;
      const excLo = r.excluded ? r.excluded[0] : Infinity;
      const excHi = r.excluded ? r.excluded[1] : -Infinity;
      for (let i = 0; i < n; i++) {
        const x = v[i]!;
        let bad = x !== x ? hasNaN || r.included !== undefined : !(x >= incLo && x <= incHi) || (x >= excLo && x <= excHi);
        for (let k = 0; !bad && k < nv; k++) if (x === vals[k]) bad = true;
        if (bad) hits[i]!++;
      }
    }
    const need = p.all ? p.rules.length : 1;
    const m = out.mask;
    for (let i = 0; i < n; i++) m[i] = src.mask[i] !== 0 && !(ruled > 0 && hits[i]! >= need) ? 1 : 0;
  },
});

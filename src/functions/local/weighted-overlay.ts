/**
 * WeightedOverlay — remap each raster onto a common evaluation scale and sum them by influence.
 *
 * Spec: raster-functions.md §2 "WeightedOverlay" (vendor "How Weighted Overlay works"; VPY
 * `weighted_overlay`); spec section 8. Arguments: `Rasters`, `Fields` (only `Value`: no attribute
 * tables here), `Influences` (per raster, >= 0; percentages summing to 100 or fractions summing
 * to 1 are both accepted: they are divided by their sum [ours]), `Remaps` (one string per raster),
 * `EvalFrom`, `EvalTo` (the scale, both required, integers, EvalFrom < EvalTo).
 * Remap strings [ours, spec: syntax unsure]: entries separated by `,` or `;`; an entry is
 * `old new` or `lo hi new` (a range, both bounds inclusive); `old` may be `NODATA` (the value
 * given to input NoData pixels); `new` is a number on the scale, `NODATA` or `RESTRICTED`. The
 * first matching entry in the string wins, so with ranges listed in ascending order a shared
 * bound goes to the lower range (ArcGIS Reclassify's boundary rule).
 * Math per pixel: v_k = remap_k(value_k); out = round(Σ v_k × influence_k / Σ influence),
 * rounded half away from zero. Any `RESTRICTED` makes the output the restricted value
 * EvalFrom − 1 whatever the other inputs (it wins over NoData) [vendor desktop tool]; otherwise any
 * `NODATA` remap, a value with no entry, or an input NoData pixel without a `NODATA old` entry
 * makes the output NoData.
 * Output: one band, S16 (S32 when the scale does not fit), statistics min EvalFrom − 1 (or
 * EvalFrom when nothing maps to RESTRICTED) and max EvalTo. Grid: the first raster's; other rasters
 * are resampled onto it with nearest neighbour (their values are classes).
 * Multidimensional rasters: one overlay per slice, slices paired by MatchVariable / UnionDimension
 * exactly as WeightedSum pairs them (core/multidim.ts `pairMultidimensional`: band b of the output
 * reads the paired band of every raster, a plain raster is broadcast over every slice); the output
 * is multidimensional. Per-slice NoData (core/multidim.ts) [ours]: a slice value that is missing
 * (NaN, or the raster's NoData value) is an input NoData pixel for that slice (so a `NODATA old`
 * entry applies to it); an output slice that is NoData holds the output NoData value (the type's
 * minimum, below the restricted value), and the pixel is NoData only where every slice is.
 * outputPixelType: scores through the engine's cast to any real type that holds their advertised
 * range (values unchanged); complex types, and types that would merge scores, are refused when the
 * rule is built.
 */
import { invalidArgument } from '../../core/errors.js';
import { multidimOf, pairMultidimensional, sliceValueMissing } from '../../core/multidim.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { PIXEL_TYPE_INFO, roundHalfAway } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { checkRasterList, firstOfGrid } from './weighted-sum.js';

const args = {
  Rasters: { kind: 'rasters', minLength: 1, doc: 'Input rasters (the first band of each is used).' },
  Fields: { kind: 'strings', doc: 'Per raster, the field used as the input value; only Value (the pixel value) is supported.' },
  Influences: {
    kind: 'numbers',
    doc: 'Per raster, its influence (>= 0); percentages (sum 100) or fractions (sum 1), normalised by their sum.',
  },
  Remaps: {
    kind: 'strings',
    doc: 'Per raster, "old new" or "lo hi new" entries separated by commas; new may be NODATA or RESTRICTED, old may be NODATA.',
  },
  EvalFrom: { kind: 'int', doc: 'Lowest value of the evaluation scale (required).' },
  EvalTo: { kind: 'int', doc: 'Highest value of the evaluation scale (required).' },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name.' },
  UnionDimension: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: true = dimension names must match; false = union of the dimensions.',
  },
} as const satisfies ArgSchema;

/** What an entry maps to: a scale value, NoData or Restricted. */
const VALUE = 0;
const NODATA = 1;
const RESTRICTED = 2;

interface RemapTable {
  readonly lo: Float64Array;
  readonly hi: Float64Array;
  readonly kind: Uint8Array;
  readonly value: Float64Array;
  /** For input NoData pixels: kind and value, or kind NODATA when no `NODATA old` entry. */
  readonly noDataKind: number;
  readonly noDataValue: number;
}

interface WeightedOverlayParams {
  readonly inputs: readonly number[];
  readonly weights: readonly number[];
  readonly tables: readonly RemapTable[];
  readonly restricted: number;
  /** `bands[k][b]`: the band of input k that output band b reads (one output band unless multidimensional). */
  readonly bands: readonly (readonly number[])[];
  /** Per input k, the value marking a missing slice value (multidimensional inputs; NaN otherwise). */
  readonly noData: readonly number[];
  /** Multidimensional output: the value of a NoData slice (the mask is 0 only where every slice is NoData). */
  readonly missing: number | undefined;
}

const at = argPaths(args);

export const weightedOverlay = defineFunction<typeof args, WeightedOverlayParams>({
  name: 'WeightedOverlay',
  summary: 'Remap rasters to a common scale and sum them by influence (restricted and NoData classes).',
  variableName: 'Rasters',
  family: 'local',
  codes: 'suitability scores',
  verification: 'reference: NumPy golden on reclassified Landsat bands; hand: remap syntax, restricted, NoData',
  args,

  plan(a, inputs) {
    const warnings: string[] = [];
    const n = a.Rasters.length;
    checkRasterList('WeightedOverlay', a.Rasters, inputs, a.Fields, warnings);
    if (a.EvalFrom === undefined) throw invalidArgument(at('EvalFrom'), 'EvalFrom (the lowest value of the evaluation scale) is required');
    if (a.EvalTo === undefined) throw invalidArgument(at('EvalTo'), 'EvalTo (the highest value of the evaluation scale) is required');
    if (a.EvalFrom >= a.EvalTo) throw invalidArgument(at('EvalTo'), `EvalTo (${a.EvalTo}) must be greater than EvalFrom (${a.EvalFrom})`);
    const influences = a.Influences;
    if (influences === undefined || influences.length !== n) {
      throw invalidArgument(
        at('Influences'),
        `Influences needs one value per raster: ${n} raster(s), ${influences?.length ?? 0} influence(s)`,
      );
    }
    influences.forEach((w, i) => {
      if (w < 0) throw invalidArgument(at('Influences'), `influence ${i} is negative (${w})`);
    });
    const total = influences.reduce((s, w) => s + w, 0);
    if (!(total > 0)) throw invalidArgument(at('Influences'), 'the influences sum to 0');
    if (Math.abs(total - 1) > 1e-6 && Math.abs(total - 100) > 1e-6) {
      warnings.push(`Influences sum to ${total}, neither 1 nor 100; they are divided by their sum`);
    }
    const remaps = a.Remaps;
    if (remaps === undefined || remaps.length !== n) {
      throw invalidArgument(at('Remaps'), `Remaps needs one remap string per raster: ${n} raster(s), ${remaps?.length ?? 0} string(s)`);
    }
    const tables = remaps.map((s, i) => parseRemap(s, a.EvalFrom!, a.EvalTo!, at('Remaps', i)));
    const restricted = a.EvalFrom - 1;
    const anyRestricted = tables.some((t) => t.kind.includes(RESTRICTED) || t.noDataKind === RESTRICTED);
    // Multidimensional rasters: one overlay per paired slice (seed rule 6), else of first bands.
    const md = pairMultidimensional(
      a.Rasters.map((r) => inputs[r]!),
      { matchVariable: a.MatchVariable, unionDimension: a.UnionDimension, at, paths: a.Rasters.map((_, i) => at('Rasters', i)) },
    );
    // A multidimensional output needs a NoData value for NoData slices: the type's minimum, below the restricted value.
    const pixelType = restricted - (md ? 1 : 0) >= -32768 && a.EvalTo <= 32767 ? 'S16' : 'S32';
    const missing = md ? PIXEL_TYPE_INFO[pixelType].min : undefined;
    const { info: one, align } = firstOfGrid(a.Rasters, inputs, pixelType, missing, true);
    const statistics = { min: anyRestricted ? restricted : a.EvalFrom, max: a.EvalTo };
    const info: RasterInfo = md
      ? {
          ...one,
          bandCount: md.bandCount,
          multidimensional: md.multidimensional,
          bandNames: md.bandNames,
          statistics: md.bandNames.map(() => statistics),
        }
      : { ...one, statistics: [statistics] };
    if (md) warnings.splice(0, warnings.length, ...md.warnings);
    const bands = md ? md.bands : a.Rasters.map(() => [0]);
    const noData = a.Rasters.map((r) => {
      const i = inputs[r]!;
      return multidimOf(i) && i.noData !== undefined ? i.noData : Number.NaN;
    });
    return {
      info,
      halo: 0,
      align,
      params: { inputs: a.Rasters, weights: influences.map((w) => w / total), tables, restricted, bands, noData, missing },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const m = out.mask;
    const n = m.length;
    const acc = new Float64Array(n);
    // state: 0 ok, 1 NoData, 2 restricted (restricted wins).
    const state = new Uint8Array(n);
    // any[i]: some output band is not NoData at pixel i.
    const any = new Uint8Array(n);
    const multi = p.missing !== undefined;
    for (let b = 0; b < out.bands.length; b++) {
      acc.fill(0);
      state.fill(0);
      for (let k = 0; k < p.inputs.length; k++) {
        const src = inputs[p.inputs[k]!]!;
        const v = src.bands[p.bands[k]![b]!]!;
        const sm = src.mask;
        const nd = p.noData[k]!;
        const t = p.tables[k]!;
        const w = p.weights[k]!;
        const ne = t.lo.length;
        for (let i = 0; i < n; i++) {
          if (state[i] === RESTRICTED) continue;
          let kind: number = NODATA;
          let value = 0;
          const x = v[i]!;
          if (sm[i] === 0 || sliceValueMissing(x, nd)) {
            kind = t.noDataKind;
            value = t.noDataValue;
          } else {
            for (let e = 0; e < ne; e++) {
              if (x >= t.lo[e]! && x <= t.hi[e]!) {
                kind = t.kind[e]!;
                value = t.value[e]!;
                break;
              }
            }
          }
          if (kind === RESTRICTED) state[i] = RESTRICTED;
          else if (kind === NODATA) state[i] = NODATA;
          else acc[i]! += value * w;
        }
      }
      const dst = out.bands[b]!;
      for (let i = 0; i < n; i++) {
        const s = state[i]!;
        if (s === NODATA) dst[i] = multi ? p.missing : 0;
        else {
          any[i] = 1;
          dst[i] = s === RESTRICTED ? p.restricted : roundHalfAway(acc[i]!);
        }
      }
    }
    for (let i = 0; i < n; i++) if (any[i] === 0) m[i] = 0;
  },
});

/** Parse one remap string into a table, checking new values against the scale. */
function parseRemap(s: string, from: number, to: number, path: string): RemapTable {
  const lo: number[] = [];
  const hi: number[] = [];
  const kind: number[] = [];
  const value: number[] = [];
  let noDataKind = NODATA;
  let noDataValue = 0;
  const entries = s
    .split(/[,;]/)
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) throw invalidArgument(path, 'the remap string has no entries');
  const numberOf = (t: string, entry: string): number => {
    const v = Number(t);
    if (t === '' || !Number.isFinite(v)) throw invalidArgument(path, `entry "${entry}": ${JSON.stringify(t)} is not a number`);
    return v;
  };
  for (const entry of entries) {
    const tokens = entry.split(/\s+/);
    if (tokens.length !== 2 && tokens.length !== 3) {
      throw invalidArgument(path, `entry "${entry}" must be "old new" or "lo hi new"`);
    }
    const last = tokens[tokens.length - 1]!.toUpperCase();
    let k = VALUE;
    let v = 0;
    if (last === 'NODATA') k = NODATA;
    else if (last === 'RESTRICTED') k = RESTRICTED;
    else {
      v = numberOf(tokens[tokens.length - 1]!, entry);
      if (v < from || v > to) throw invalidArgument(path, `entry "${entry}": ${v} is outside the evaluation scale ${from}..${to}`);
    }
    if (tokens.length === 2 && tokens[0]!.toUpperCase() === 'NODATA') {
      noDataKind = k;
      noDataValue = v;
      continue;
    }
    const a = numberOf(tokens[0]!, entry);
    const b = tokens.length === 3 ? numberOf(tokens[1]!, entry) : a;
    if (a > b) throw invalidArgument(path, `entry "${entry}": the range ${a}..${b} is reversed`);
    lo.push(a);
    hi.push(b);
    kind.push(k);
    value.push(v);
  }
  return {
    lo: Float64Array.from(lo),
    hi: Float64Array.from(hi),
    kind: Uint8Array.from(kind),
    value: Float64Array.from(value),
    noDataKind,
    noDataValue,
  };
}

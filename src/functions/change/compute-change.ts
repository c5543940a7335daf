/**
 * ComputeChange — change between a "from" raster (`Raster`) and a "to" raster (`Raster2`) (spec
 * raster-functions.md §2 "ComputeChange"; seed section 8).
 *
 * Methods (per pixel, float64):
 * 0 Difference               to − from                                   (single band, F32)
 * 1 Relative Difference      (to − from) / max(from, to); a zero denominator is NoData (F32)
 * 2 Categorical              a transition class per (from class, to class)  (single band, integer)
 * 3 Spectral Euclidean Dist. sqrt(Σ_b (to_b − from_b)²)                    (F32)
 * 4 Spectral Angle           acos(Σ to_b·from_b / (|to|·|from|)) in radians, the cosine clamped
 *                            to [−1, 1]; a zero vector is NoData            (F32)
 * 5 Band With Most Change    1-based band number of the largest |to_b − from_b| (the first on
 *                            ties)                                          (U8, U16 past 255 bands)
 * Band-count rules [seed]: methods 0–2 take single-band rasters (INVALID_ARGUMENT at the raster
 * with several bands); 3–5 take multiband rasters with equal band counts.
 * Categorical [spec; numbering ours]: the from classes are `FromClassValues`, else the values of
 * the from raster's colormap, else the integer values present in the request (request
 * histograms: exact for 8/16-bit rasters; 32-bit and float rasters need the lists); likewise the
 * to classes. The transitions kept are the pairs of FromClassValues x ToClassValues (from-major,
 * in the order given, or ascending) that KeepMethod keeps (0 all, 1 changed pixels only — the
 * default as in the vendor's Python API —, 2 unchanged only), numbered 1..N in that order.
 * Pixels whose pair is not kept, or whose value is in neither list, are NoData. Output U8 (N ≤
 * 255 when the classes are known at plan time) else U16. With colormaps on both inputs the output
 * gets a colormap: UseColorMethod 0 the average of the from and to colours (rounded half up),
 * 1 the from colour, 2 the to colour. RasterInfo has no attribute table, so the class name fields
 * (FromClassNameFieldName, ToClassNameFieldName) have nothing to read: accepted with a warning.
 * Grids (spec §1.5, Python defaults): ExtentType 1 IntersectionOf, CellsizeType 2 MaxOf; inputs off
 * the output grid are resampled by the engine (nearest for categorical and thematic inputs,
 * bilinear otherwise). NoData: where either input is NoData or NaN, and where a method's formula
 * is undefined.
 * outputPixelType: differences and relative differences are computed in floating point (a float
 * type is computed into directly, an integer type through the engine's cast: round half away from
 * zero, saturate, NaN -> NoData); categorical transition codes go through the engine's cast to a
 * real type that holds the natural type's range, other types are refused when the rule is built.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { Colormap, RasterInfo } from '../../core/pixel-block.js';
import { isComplex, isInteger, PIXEL_TYPE_INFO } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { checkHolds, floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { alignMethod, cellsizeTypeArg, extentTypeArg, outputGrid } from '../local/grid.js';

const ChangeMethod = {
  Difference: 0,
  RelativeDifference: 1,
  Categorical: 2,
  SpectralEuclideanDistance: 3,
  SpectralAngleDifference: 4,
  BandWithMostChange: 5,
} as const;

const METHOD_NAMES = [
  'Difference',
  'Relative Difference',
  'Categorical',
  'Spectral Euclidean Distance',
  'Spectral Angle Difference',
  'Band With Most Change',
];

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'The from (earlier) raster.' },
  Raster2: { kind: 'raster', doc: 'The to (later) raster.' },
  Method: {
    kind: 'enum',
    values: [0, 1, 2, 3, 4, 5],
    names: {
      ...ChangeMethod,
      DIFFERENCE: 0,
      RELATIVE_DIFFERENCE: 1,
      CATEGORICAL_DIFFERENCE: 2,
      SPECTRAL_EUCLIDEAN_DISTANCE: 3,
      SPECTRAL_ANGLE_DIFFERENCE: 4,
      BAND_WITH_MOST_CHANGE: 5,
    },
    default: 0,
    doc: '0 Difference, 1 Relative Difference, 2 Categorical, 3 Spectral Euclidean Distance, 4 Spectral Angle Difference, 5 Band With Most Change.',
  },
  FromClassValues: { kind: 'numbers', integer: true, doc: 'Categorical: class values of the from raster to consider (default: all).' },
  ToClassValues: { kind: 'numbers', integer: true, doc: 'Categorical: class values of the to raster to consider (default: all).' },
  KeepMethod: {
    kind: 'enum',
    values: [0, 1, 2],
    names: { All: 0, ChangedPixelsOnly: 1, CHANGED_PIXELS_ONLY: 1, UnchangedPixelsOnly: 2, UNCHANGED_PIXELS_ONLY: 2 },
    default: 1,
    doc: 'Categorical: 0 all transitions, 1 changed pixels only, 2 unchanged pixels only.',
  },
  UseColorMethod: {
    kind: 'enum',
    values: [0, 1, 2],
    names: { Average: 0, FromColor: 1, ToColor: 2 },
    default: 0,
    doc: 'Categorical: colour of a transition: 0 average of from and to colours, 1 from colour, 2 to colour.',
  },
  FromClassNameFieldName: { kind: 'string', doc: 'Categorical: attribute field with the from class names (needs an attribute table).' },
  ToClassNameFieldName: { kind: 'string', doc: 'Categorical: attribute field with the to class names (needs an attribute table).' },
  ExtentType: { ...extentTypeArg, default: 1 },
  CellsizeType: { ...cellsizeTypeArg, default: 2 },
} as const satisfies ArgSchema;

interface ComputeChangeParams {
  readonly method: 0 | 1 | 2 | 3 | 4 | 5;
  readonly from: number;
  readonly to: number;
  readonly bands: number;
  readonly keep: 0 | 1 | 2;
  /** Categorical: class lists (undefined: from the request histograms). */
  readonly fromClasses: readonly number[] | undefined;
  readonly toClasses: readonly number[] | undefined;
  /** Categorical: code of each pair, `fromIndex * toClasses.length + toIndex` -> code (0 = dropped). */
  readonly codes: Int32Array | undefined;
}

const at = argPaths(args);

/** Codes 1..N for the kept pairs of from x to (from-major). */
function transitionCodes(from: readonly number[], to: readonly number[], keep: number): Int32Array {
  const codes = new Int32Array(from.length * to.length);
  let next = 1;
  from.forEach((f, i) =>
    to.forEach((t, j) => {
      const changed = f !== t;
      if (keep === 0 || (keep === 1 && changed) || (keep === 2 && !changed)) codes[i * to.length + j] = next++;
    }),
  );
  return codes;
}

const unique = (v: readonly number[]): number[] => v.filter((x, i) => v.indexOf(x) === i);

export const computeChange = defineFunction<typeof args, ComputeChangeParams>({
  name: 'ComputeChange',
  aliases: ['ComputeChangeRaster'],
  summary: 'Difference, relative difference, categorical transitions or spectral change between two rasters.',
  variableName: 'Raster',
  family: 'change',
  verification: 'reference: NumPy formulations of every method (goldens); hand: small arrays',
  args,

  plan(a, inputs, outputType) {
    const from = inputs[a.Raster]!;
    const to = inputs[a.Raster2]!;
    const method = a.Method;
    const name = `Method ${method} (${METHOD_NAMES[method]})`;
    for (const [arg, info] of [
      ['Raster', from],
      ['Raster2', to],
    ] as const) {
      if (info.constant !== undefined) throw invalidArgument(at(arg), 'ComputeChange takes rasters, not constants');
      if (isComplex(info.pixelType)) throw unsupportedInput(at(arg), `ComputeChange does not take complex (${info.pixelType}) rasters`);
      if (method <= 2 && info.bandCount !== 1) {
        throw invalidArgument(
          at(arg),
          `${name} takes single-band rasters; ${arg} has ${info.bandCount} bands (use ExtractBand, or methods 3-5 for multiband rasters)`,
        );
      }
    }
    if (method >= 3 && from.bandCount !== to.bandCount) {
      throw invalidArgument(
        at('Raster2'),
        `${name} needs rasters with the same band count; Raster has ${from.bandCount}, Raster2 has ${to.bandCount}`,
      );
    }
    const warnings: string[] = [];
    const categorical = method === 2;
    if (!categorical) {
      for (const k of ['FromClassValues', 'ToClassValues', 'FromClassNameFieldName', 'ToClassNameFieldName'] as const) {
        if (a[k] !== undefined) warnings.push(`${k} only applies to Method 2 (Categorical) and is ignored`);
      }
    }
    const grid = outputGrid([from, to], a.ExtentType, a.CellsizeType, { paths: [at('Raster'), at('Raster2')] })!;
    let fromClasses: number[] | undefined;
    let toClasses: number[] | undefined;
    let codes: Int32Array | undefined;
    let colormap: Colormap | undefined;
    let pixelType: RasterInfo['pixelType'] = method === 5 ? (from.bandCount > 255 ? 'U16' : 'U8') : 'F32';
    let statisticsNeeded = false;
    if (categorical) {
      for (const k of ['FromClassNameFieldName', 'ToClassNameFieldName'] as const) {
        if (a[k] !== undefined) warnings.push(`${k}: rasters carry no attribute table here, so class names are not read`);
      }
      const classes = (
        list: readonly number[] | undefined,
        info: RasterInfo,
        arg: 'FromClassValues' | 'ToClassValues',
      ): number[] | undefined => {
        if (list !== undefined && list.length > 0) return unique(list);
        if (info.colormap) return Array.from(info.colormap.values);
        if (!isInteger(info.pixelType) || info.pixelType === 'U32' || info.pixelType === 'S32') {
          throw invalidArgument(
            at(arg),
            `Categorical needs ${arg} for a ${info.pixelType} raster without a colormap (class values are read from 8- and 16-bit rasters only)`,
          );
        }
        statisticsNeeded = true;
        return undefined;
      };
      fromClasses = classes(a.FromClassValues, from, 'FromClassValues');
      toClasses = classes(a.ToClassValues, to, 'ToClassValues');
      if (fromClasses && toClasses) {
        codes = transitionCodes(fromClasses, toClasses, a.KeepMethod);
        const n = Math.max(0, ...codes);
        if (n === 0)
          throw invalidArgument(at('KeepMethod'), `no transition between the from and to classes is kept by KeepMethod ${a.KeepMethod}`);
        pixelType = n <= 255 ? 'U8' : 'U16';
        if (from.colormap && to.colormap)
          colormap = transitionColormap(fromClasses, toClasses, codes, from.colormap, to.colormap, a.UseColorMethod);
      } else pixelType = 'U16';
    }
    if (pixelType === 'F32') pixelType = floatOutputType(outputType, 'F32');
    else checkHolds('ComputeChange', outputType, 0, PIXEL_TYPE_INFO[pixelType].max, 'change class codes');
    const info: RasterInfo = {
      width: grid.width,
      height: grid.height,
      bandCount: 1,
      pixelType,
      ...(!isInteger(pixelType) ? { noData: Number.NaN } : {}),
      extent: grid.extent,
      cellSize: grid.cellSize,
      ...(grid.spatialReference ? { spatialReference: grid.spatialReference } : {}),
      bandNames: [METHOD_NAMES[method]!.replace(/ /g, '_')],
      ...(colormap ? { colormap } : {}),
    };
    return {
      info,
      halo: 0,
      params: { method, from: a.Raster, to: a.Raster2, bands: from.bandCount, keep: a.KeepMethod, fromClasses, toClasses, codes },
      align: inputs.map((i) => (categorical ? { method: 'nearest' as const } : alignMethod(i))),
      ...(statisticsNeeded ? { requestStatistics: { inputs: [a.Raster, a.Raster2], bins: 65536 } } : {}),
      ...(warnings.length ? { warnings } : {}),
    };
  },

  bindStatistics(p, [fromStats, toStats]) {
    const present = (s: typeof fromStats): number[] => {
      const h = s?.[0]?.histogram;
      if (!h) return [];
      const w = (h.max - h.min) / h.size;
      const out: number[] = [];
      for (let k = 0; k < h.size; k++) {
        if (h.counts[k] === 0) continue;
        // 8-bit histograms have one bin per value (centre = value); 16-bit ones have bins
        // narrower than 1 over [min, max], each holding at most one integer.
        const v = h.size === 1 || w === 0 ? h.min : w === 1 ? h.min + k + 0.5 : Math.ceil(h.min + k * w - 1e-9);
        if (out[out.length - 1] !== v) out.push(v);
      }
      return out;
    };
    const fromClasses = p.fromClasses ?? present(fromStats);
    const toClasses = p.toClasses ?? present(toStats);
    return { ...p, fromClasses, toClasses, codes: transitionCodes(fromClasses, toClasses, p.keep) };
  },

  kernel(p, inputs, out) {
    const A = inputs[p.from]!;
    const B = inputs[p.to]!;
    const m = out.mask;
    const n = m.length;
    const dst = out.bands[0]!;
    for (let i = 0; i < n; i++) m[i] = A.mask[i] === 1 && B.mask[i] === 1 ? 1 : 0;
    const nb = p.bands;
    switch (p.method) {
      case 0:
      case 1: {
        const f = A.bands[0]!;
        const t = B.bands[0]!;
        for (let i = 0; i < n; i++) {
          const x = f[i]!;
          const y = t[i]!;
          const v = p.method === 0 ? y - x : (y - x) / Math.max(x, y);
          dst[i] = v;
          if (v - v !== 0) m[i] = 0;
        }
        break;
      }
      case 2: {
        const fc = p.fromClasses ?? [];
        const tc = p.toClasses ?? [];
        const codes = p.codes!;
        const fIndex = new Map(fc.map((v, k) => [v, k]));
        const tIndex = new Map(tc.map((v, k) => [v, k]));
        const f = A.bands[0]!;
        const t = B.bands[0]!;
        for (let i = 0; i < n; i++) {
          const fi = fIndex.get(f[i]!);
          const ti = tIndex.get(t[i]!);
          const code = fi === undefined || ti === undefined ? 0 : codes[fi * tc.length + ti]!;
          dst[i] = code;
          if (code === 0) m[i] = 0;
        }
        break;
      }
      default: {
        for (let i = 0; i < n; i++) {
          if (m[i] === 0) {
            dst[i] = p.method === 5 ? 0 : Number.NaN;
            continue;
          }
          let ss = 0;
          let dot = 0;
          let na = 0;
          let nbb = 0;
          let best = 0;
          let bestBand = 0;
          for (let b = 0; b < nb; b++) {
            const x = A.bands[b]![i]!;
            const y = B.bands[b]![i]!;
            const d = y - x;
            ss += d * d;
            dot += x * y;
            na += x * x;
            nbb += y * y;
            const ad = Math.abs(d);
            if (ad > best || b === 0) {
              best = ad;
              bestBand = b;
            }
          }
          let v: number;
          if (p.method === 3) v = Math.sqrt(ss);
          else if (p.method === 4) {
            const den = Math.sqrt(na * nbb);
            v = den > 0 ? Math.acos(Math.min(1, Math.max(-1, dot / den))) : Number.NaN;
          } else v = best === best ? bestBand + 1 : Number.NaN;
          if (v !== v || v - v !== 0) {
            m[i] = 0;
            v = p.method === 5 ? 0 : Number.NaN;
          }
          dst[i] = v;
        }
      }
    }
    if (p.method <= 1) for (let i = 0; i < n; i++) if (m[i] === 0) dst[i] = Number.NaN;
  },
});

/** The output colormap of categorical change: one entry per kept transition. */
function transitionColormap(
  from: readonly number[],
  to: readonly number[],
  codes: Int32Array,
  fc: Colormap,
  tc: Colormap,
  use: number,
): Colormap | undefined {
  const colour = (cm: Colormap, v: number): [number, number, number] | undefined => {
    const k = Array.prototype.indexOf.call(cm.values, v) as number;
    return k < 0 ? undefined : [cm.rgb[3 * k]!, cm.rgb[3 * k + 1]!, cm.rgb[3 * k + 2]!];
  };
  const entries: [number, number[]][] = [];
  from.forEach((f, i) =>
    to.forEach((t, j) => {
      const code = codes[i * to.length + j]!;
      if (code === 0) return;
      const a = colour(fc, f) ?? [0, 0, 0];
      const b = colour(tc, t) ?? [0, 0, 0];
      const c = use === 1 ? a : use === 2 ? b : a.map((x, k) => Math.floor((x + b[k]!) / 2 + 0.5));
      entries.push([code, c]);
    }),
  );
  if (entries.length === 0) return undefined;
  entries.sort((x, y) => x[0] - y[0]);
  return { values: Float64Array.from(entries, (e) => e[0]), rgb: Uint8Array.from(entries.flatMap((e) => e[1])) };
}

/**
 * VectorField — two single-band rasters (U and V, or magnitude and direction) into one two-band
 * vector raster, converting between the UV and magnitude-direction forms.
 *
 *     UV -> magnitude/direction:  mag = sqrt(u^2 + v^2),  theta = atan2(v, u) in [0, 360)
 *                                 (arithmetic: counter-clockwise from east);
 *                                 geographic: dir = (450 - theta) mod 360 (clockwise from north)
 *     magnitude/direction -> UV:  geographic first theta = (450 - dir) mod 360;
 *                                 u = mag cos(theta), v = mag sin(theta)
 *
 * Directions say where the vector points to; "flow from" is the renderer's business
 * (VectorFieldRenderer MassFlowAngleRepresentation). `AngleReferenceSystem` applies to whichever
 * side is magnitude-direction (the input's directions, the output's, or both); with equal input
 * and output types the bands pass through unchanged (as F32). A zero vector has direction 0
 * arithmetic, 90 geographic (atan2(0, 0) = 0).
 *
 * Spec: raster-functions.md "VectorField (10.6)" (VJS vectorFieldUtils). Output: 2 bands F32,
 * named U, V or Magnitude, Direction (the data type key `Vector-UV` / `Vector-MagDir` is carried
 * as those band names), NoData NaN where either input is NoData. Grid: Raster1's; Raster2 on another
 * grid or spatial reference is resampled onto it (bilinear; nearest for integer data).
 * Multidimensional inputs (seed section 8 rule 6): one vector per slice. Slices of Raster1 and
 * Raster2 are paired by MatchVariable / UnionDimension (both default true, as the seed says)
 * exactly as Arithmetic pairs them (core/multidim.ts `pairSlices`, the whole-slice form of
 * `pairMultidimensional`: same rules, errors and warnings; a plain single-band raster is used for
 * every slice). U and V stored as two variables (`u`, `v`) have different names, so they pair with
 * MatchVariable false (pair by position); the error at MatchVariable says so. Every slice must have
 * one band. The output is multidimensional with 2-band slices (variable name from Raster1), band
 * names `<slice>_U`/`<slice>_V` or `<slice>_Magnitude`/`<slice>_Direction` (slice as
 * `sliceBandName`) [ours]. Per-slice NoData (core/multidim.ts): a slice is NoData at a pixel where
 * either input is masked, NaN or (multidimensional input) equal to its NoData value; it holds NaN
 * in both bands and the pixel keeps its other slices (NoData only where every slice is).
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import { multidimOf, pairSlices, sliceBandName } from '../../core/multidim.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { alignMethod } from '../local/grid.js';
import { onGrid } from '../../graph/align.js';

const VECTOR_DATA_TYPES = ['Vector-UV', 'Vector-MagDir'] as const;

/** Other spellings of the data types: the JS client's `dataType` values ("vector-uv", "vector-magdir") match as they are. */
const VECTOR_DATA_TYPE_NAMES: Readonly<Record<string, VectorDataType>> = {
  UV: 'Vector-UV',
  MagDir: 'Vector-MagDir',
  MagnitudeDirection: 'Vector-MagDir',
  'Vector-MagnitudeDirection': 'Vector-MagDir',
};
export type VectorDataType = (typeof VECTOR_DATA_TYPES)[number];

/** Band names a vector raster carries, by data type (VectorFieldRenderer reads them back). */
export const VECTOR_BAND_NAMES: Readonly<Record<VectorDataType, readonly [string, string]>> = {
  'Vector-UV': ['U', 'V'],
  'Vector-MagDir': ['Magnitude', 'Direction'],
};

const args = {
  Raster1: { kind: 'raster', doc: 'U component, or magnitude (single band).' },
  Raster2: { kind: 'raster', doc: 'V component, or direction in degrees (single band).' },
  InputDataType: {
    kind: 'string',
    values: VECTOR_DATA_TYPES,
    names: VECTOR_DATA_TYPE_NAMES,
    default: 'Vector-UV',
    doc: 'What Raster1/Raster2 hold.',
  },
  AngleReferenceSystem: {
    kind: 'enum',
    values: [0, 1],
    names: { Geographic: 0, Arithmetic: 1 },
    default: 0,
    doc: 'Directions: 0 geographic (clockwise from north), 1 arithmetic (counter-clockwise from east).',
  },
  OutputDataType: {
    kind: 'string',
    values: VECTOR_DATA_TYPES,
    names: VECTOR_DATA_TYPE_NAMES,
    default: 'Vector-MagDir',
    doc: 'What the two output bands hold.',
  },
  MatchVariable: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: pair variables by name; false pairs them by position (u and v variables).',
  },
  UnionDimension: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: true = dimension names must match; false = union of the dimensions.',
  },
} as const satisfies ArgSchema;

/** 0 copy, 1 UV -> magnitude/direction, 2 magnitude/direction -> UV. */
interface VectorFieldParams {
  readonly a: number;
  readonly b: number;
  /** Per output slice (bands 2s, 2s + 1): the band of Raster1 and of Raster2 it reads. */
  readonly pairs: readonly (readonly [number, number])[];
  /** Values marking a missing slice value of Raster1 / Raster2 (multidimensional inputs; NaN otherwise). */
  readonly noData: readonly [number, number];
  readonly mode: 0 | 1 | 2;
  readonly geographic: boolean;
}

const at = argPaths(args);
const DEG = 180 / Math.PI;

function singleBand(info: RasterInfo, name: 'Raster1' | 'Raster2'): void {
  if (info.constant !== undefined) throw invalidArgument(at(name), `${name} must be a raster, not a constant`);
  const md = multidimOf(info);
  if (md) {
    const v = md.variables.find((w) => w.bandsPerSlice !== 1);
    if (v)
      throw unsupportedInput(
        at(name),
        `${name}: the slices of variable ${v.name} have ${v.bandsPerSlice} bands; VectorField needs one band per slice`,
      );
  } else if (info.bandCount !== 1) throw unsupportedInput(at(name), `${name} must have one band, it has ${info.bandCount}`);
  if (isComplex(info.pixelType)) throw unsupportedInput(at(name), `${name} must not be complex (${info.pixelType})`);
}

/** The missing-slice value of a multidimensional input (NaN otherwise: NaN is missing anyway). */
const missingOf = (info: RasterInfo): number => (multidimOf(info) && info.noData !== undefined ? info.noData : Number.NaN);

export const vectorField = defineFunction<typeof args, VectorFieldParams>({
  name: 'VectorField',
  summary: 'Combine U/V or magnitude/direction rasters into a two-band vector raster, converting between the forms.',
  variableName: 'Raster1',
  family: 'vector',
  verification:
    'reference: NumPy goldens (both conversions; multidimensional slice pairing); hand: conversions on compass points and 3-4-5 vectors',
  args,

  plan(a, inputs, outputType) {
    const first = inputs[a.Raster1]!;
    const second = inputs[a.Raster2]!;
    singleBand(first, 'Raster1');
    singleBand(second, 'Raster2');
    const from = a.InputDataType as VectorDataType;
    const to = a.OutputDataType as VectorDataType;
    const mode = from === to ? 0 : from === 'Vector-UV' ? 1 : 2;
    const names = VECTOR_BAND_NAMES[to];
    // Multidimensional inputs: one vector per paired slice (seed rule 6).
    const md = pairSlices([first, second], {
      matchVariable: a.MatchVariable,
      unionDimension: a.UnionDimension,
      at,
      paths: [at('Raster1'), at('Raster2')],
    });
    let info: RasterInfo = {
      ...first,
      bandCount: 2,
      pixelType: floatOutputType(outputType, 'F32'),
      noData: Number.NaN,
      bandNames: names,
      statistics: undefined,
      histograms: undefined,
      colormap: undefined,
      multidimensional: undefined,
    };
    const pairs: (readonly [number, number])[] = md
      ? Array.from({ length: md.sliceCount }, (_, s) => [md.bands[0]![s]![0]!, md.bands[1]![s]![0]!] as const)
      : [[0, 0]];
    if (md) {
      const multidimensional = md.layout(() => 2);
      const bandNames = multidimensional.variables.flatMap((v) =>
        v.slices.map((s) => sliceBandName({ ...v, bandsPerSlice: 1 }, s, 0)).flatMap((slice) => names.map((n) => `${slice}_${n}`)),
      );
      info = { ...info, bandCount: 2 * md.sliceCount, multidimensional, bandNames };
    }
    const align = inputs.map((i, k) => (k === a.Raster2 && !onGrid(i, first) ? alignMethod(i) : undefined));
    return {
      info,
      halo: 0,
      params: {
        a: a.Raster1,
        b: a.Raster2,
        pairs,
        noData: [missingOf(first), missingOf(second)],
        mode,
        geographic: a.AngleReferenceSystem === 0,
      },
      align,
      ...(md?.warnings.length ? { warnings: md.warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const x = inputs[p.a]!;
    const y = inputs[p.b]!;
    const [ndx, ndy] = p.noData;
    const mask = out.mask;
    const n = mask.length;
    // any[i]: some slice is valid at pixel i.
    const any = new Uint8Array(n);
    for (let k = 0; k < p.pairs.length; k++) {
      const [ba, bb] = p.pairs[k]!;
      const xs = x.bands[ba]!;
      const ys = y.bands[bb]!;
      const o1 = out.bands[2 * k]!;
      const o2 = out.bands[2 * k + 1]!;
      for (let i = 0; i < n; i++) {
        const s = xs[i]!;
        const t = ys[i]!;
        if (x.mask[i] === 0 || y.mask[i] === 0 || s === ndx || t === ndy) {
          o1[i] = Number.NaN;
          o2[i] = Number.NaN;
          continue;
        }
        if (p.mode === 0) {
          o1[i] = s;
          o2[i] = t;
        } else if (p.mode === 1) {
          o1[i] = Math.sqrt(s * s + t * t);
          let theta = Math.atan2(t, s) * DEG;
          if (theta < 0) theta += 360;
          o2[i] = p.geographic ? (450 - theta) % 360 : theta % 360;
        } else {
          const theta = (p.geographic ? 90 - t : t) / DEG;
          o1[i] = s * Math.cos(theta);
          o2[i] = s * Math.sin(theta);
        }
        // NaN inputs give NaN here: the slice is NoData in both bands.
        if (o1[i] !== o1[i] || o2[i] !== o2[i]) {
          o1[i] = Number.NaN;
          o2[i] = Number.NaN;
        } else any[i] = 1;
      }
    }
    for (let i = 0; i < n; i++) if (any[i] === 0) mask[i] = 0;
  },
});

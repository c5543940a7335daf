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
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { alignMethod } from '../local/grid.js';
import { onGrid } from '../../graph/align.js';

export const VECTOR_DATA_TYPES = ['Vector-UV', 'Vector-MagDir'] as const;
export type VectorDataType = (typeof VECTOR_DATA_TYPES)[number];

/** Band names a vector raster carries, by data type (VectorFieldRenderer reads them back). */
export const VECTOR_BAND_NAMES: Readonly<Record<VectorDataType, readonly [string, string]>> = {
  'Vector-UV': ['U', 'V'],
  'Vector-MagDir': ['Magnitude', 'Direction'],
};

const args = {
  Raster1: { kind: 'raster', doc: 'U component, or magnitude (single band).' },
  Raster2: { kind: 'raster', doc: 'V component, or direction in degrees (single band).' },
  InputDataType: { kind: 'string', values: VECTOR_DATA_TYPES, default: 'Vector-UV', doc: 'What Raster1/Raster2 hold.' },
  AngleReferenceSystem: {
    kind: 'enum',
    values: [0, 1],
    names: { Geographic: 0, Arithmetic: 1 },
    default: 0,
    doc: 'Directions: 0 geographic (clockwise from north), 1 arithmetic (counter-clockwise from east).',
  },
  OutputDataType: { kind: 'string', values: VECTOR_DATA_TYPES, default: 'Vector-MagDir', doc: 'What the two output bands hold.' },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name.' },
  UnionDimension: { kind: 'boolean', default: false, doc: 'Multidimensional inputs: union of dimension values.' },
} as const satisfies ArgSchema;

/** 0 copy, 1 UV -> magnitude/direction, 2 magnitude/direction -> UV. */
interface VectorFieldParams {
  readonly a: number;
  readonly b: number;
  readonly mode: 0 | 1 | 2;
  readonly geographic: boolean;
}

const P = 'rasterFunctionArguments.';
const DEG = 180 / Math.PI;

function singleBand(info: RasterInfo, name: string): void {
  if (info.constant !== undefined) throw invalidArgument(`${P}${name}`, `${name} must be a raster, not a constant`);
  if (info.bandCount !== 1) throw unsupportedInput(`${P}${name}`, `${name} must have one band, it has ${info.bandCount}`);
  if (isComplex(info.pixelType)) throw unsupportedInput(`${P}${name}`, `${name} must not be complex (${info.pixelType})`);
}

export const vectorField = defineFunction<typeof args, VectorFieldParams>({
  name: 'VectorField',
  summary: 'Combine U/V or magnitude/direction rasters into a two-band vector raster, converting between the forms.',
  variableName: 'Raster1',
  family: 'vector',
  verification: 'hand: conversions derived from the formulas on compass points and 3-4-5 vectors',
  args,

  plan(a, inputs) {
    const first = inputs[a.Raster1]!;
    const second = inputs[a.Raster2]!;
    singleBand(first, 'Raster1');
    singleBand(second, 'Raster2');
    const from = a.InputDataType as VectorDataType;
    const to = a.OutputDataType as VectorDataType;
    const mode = from === to ? 0 : from === 'Vector-UV' ? 1 : 2;
    const names = VECTOR_BAND_NAMES[to];
    const info: RasterInfo = {
      ...first,
      bandCount: 2,
      pixelType: 'F32',
      noData: Number.NaN,
      bandNames: names,
      statistics: undefined,
      histograms: undefined,
      colormap: undefined,
    };
    const align = inputs.map((i, k) => (k === a.Raster2 && !onGrid(i, first) ? alignMethod(i) : undefined));
    return { info, halo: 0, params: { a: a.Raster1, b: a.Raster2, mode, geographic: a.AngleReferenceSystem === 0 }, align };
  },

  kernel(p, inputs, out) {
    const x = inputs[p.a]!;
    const y = inputs[p.b]!;
    const xs = x.bands[0]!;
    const ys = y.bands[0]!;
    const o1 = out.bands[0]!;
    const o2 = out.bands[1]!;
    const mask = out.mask;
    const n = mask.length;
    for (let i = 0; i < n; i++) {
      if (x.mask[i] === 0 || y.mask[i] === 0) {
        mask[i] = 0;
        o1[i] = Number.NaN;
        o2[i] = Number.NaN;
        continue;
      }
      const s = xs[i]!;
      const t = ys[i]!;
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
      if (o1[i] !== o1[i] || o2[i] !== o2[i]) mask[i] = 0;
    }
  },
});

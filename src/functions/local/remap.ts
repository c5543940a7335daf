/**
 * Remap — map ranges of values to new values, turn ranges into NoData, optionally only inside
 * geometries.
 *
 * Spec: raster-functions.md §2 "Remap" (VJS `remap`/`createRemapLUT`); spec section 8.
 * Matching (per pixel, first band): range k = [from_k, to_k) of `InputRanges` matches v when
 * `v == from_k` or `from_k < v < to_k`; `IsLastInputRangeInclusive` makes the last range's `to`
 * inclusive. Ranges are tested from the LAST to the first; the first hit wins. For float sources
 * (F32/F64) every bound except the very first `from` and the very last `to` is lowered by 1e-6, as
 * the vendor client does, so decimal bounds stored as F32 (0.7 -> 0.69999999) land in the range
 * they name; a range with from == to still matches its value exactly.
 * Matched -> OutputValues[k]; unmatched -> the value itself when `AllowUnmatched` (default false),
 * NoData otherwise. `NoDataRanges` (flat pairs) make values NoData whatever the ranges say; the
 * bound rule follows the spec's conflict box: [from, to) for float sources, [from, to] (both
 * inclusive, the vendor client's lookup) for integer sources.
 * Geometries (`GeometryType` + `Geometries`, 10.3): when given, only pixels whose centre is inside
 * one of the geometries are remapped (pixel-centre rule and projection as Clip, see
 * geometry/polygon.ts; even-odd within each geometry, union across geometries); the others pass
 * through unchanged [spec: ours, unsure].
 * Output: one band (the input's first; a warning names the ignored bands). Natural type: the
 * input type (spec); OutputValues and unmatched values are clamped to the output type (round half
 * away from zero, saturate; VJS `clamp`), with a warning naming OutputValues that do not fit.
 * With an `outputPixelType` the function plans for that type itself (its plan gets it), so a class value
 * such as 1000 on U8 data survives `outputPixelType: "U16"` instead of being saturated first.
 * NoData pixels are written as 0. Statistics: min/max of the OutputValues when every valid output
 * pixel is an OutputValue (no AllowUnmatched, no Geometries), as the vendor client advertises.
 * Input NoData and NaN values stay NoData.
 */
import { invalidArgument } from '../../core/errors.js';
import type { BandStatistics, PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { castValue, isComplex, PIXEL_TYPE_INFO, representable, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema, type ArgValues, type Plan } from '../../graph/types.js';
import { fillInside, parseGeometry, partsInRasterSR, pixelEdges } from '../geometry/polygon.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$). Only its first band is remapped.' },
  InputRanges: {
    kind: 'numbers',
    doc: 'Flat pairs [from0, to0, from1, to1, ...]: from inclusive, to exclusive; later ranges win where ranges overlap.',
  },
  OutputValues: { kind: 'numbers', doc: 'One output value per input range.' },
  NoDataRanges: {
    kind: 'numbers',
    doc: 'Flat pairs [from, to] of values that become NoData: [from, to) for float rasters, [from, to] for integer rasters.',
  },
  AllowUnmatched: { kind: 'boolean', default: false, doc: 'true: values in no range keep their value; false: they become NoData.' },
  IsLastInputRangeInclusive: { kind: 'boolean', default: false, doc: 'Make the upper bound of the last input range inclusive.' },
  GeometryType: {
    kind: 'string',
    doc: 'Type of Geometries: esriGeometryEnvelope or esriGeometryPolygon (Envelope/Polygon accepted).',
  },
  Geometries: {
    kind: 'json',
    optional: true,
    doc: 'Geometry or array of geometries (polygons {rings} or envelopes {xmin, ymin, xmax, ymax}); only pixels inside are remapped.',
  },
} as const satisfies ArgSchema;

interface RemapParams {
  readonly input: number;
  readonly inType: PixelType;
  /** Lookup table for integer inputs of at most 16 bits: value and state (1 valid) per input value - lutBase. */
  readonly lut?: { readonly base: number; readonly values: Float64Array; readonly valid: Uint8Array };
  /** Direct matching (other types): adjusted bounds, exact froms, outputs, in range order. */
  readonly lo: Float64Array;
  readonly hi: Float64Array;
  readonly from: Float64Array;
  readonly lastTo: number;
  readonly lastInclusive: boolean;
  readonly outputs: Float64Array;
  readonly ndFrom: Float64Array;
  readonly ndTo: Float64Array;
  readonly ndInclusive: boolean;
  readonly allowUnmatched: boolean;
  readonly outType: PixelType;
  /** Geometries in the input grid's pixel space (encoded by pixelEdges); undefined = remap everywhere. */
  readonly edges?: Float64Array;
}

const at = argPaths(args);
const FLOAT_NUDGE = 1e-6;

export const remap = defineFunction<typeof args, RemapParams>({
  name: 'Remap',
  summary: 'Map value ranges to output values; NoData ranges; unmatched values kept or NoData; optionally inside geometries only.',
  variableName: 'Raster',
  family: 'local',
  verification: 'reference: NumPy (gdal_calc.py) goldens on the DEM and Landsat; hand: bounds, order, NoData ranges, geometries',
  args,

  // With an outputPixelType the remap produces that type itself, so OutputValues and unmatched
  // values are clamped to it (the vendor's rule) rather than to the input type first. Complex
  // types: the remap in the input type, then the engine's cast (values become real parts).
  plan(a, inputs, to) {
    return planRemap(a, inputs, to === undefined || isComplex(to) ? undefined : to);
  },

  kernel(p, inputs, out) {
    remapKernel(p, inputs, out);
  },
});

function planRemap(a: ArgValues<typeof args>, inputs: readonly RasterInfo[], to: PixelType | undefined): Plan<RemapParams> {
  const src = inputs[a.Raster]!;
  if (isComplex(src.pixelType)) throw invalidArgument(at('Raster'), `Remap does not take complex (${src.pixelType}) rasters`);
  const ranges = a.InputRanges ?? [];
  const outputs = a.OutputValues ?? [];
  const nd = a.NoDataRanges ?? [];
  if (ranges.length % 2 !== 0)
    throw invalidArgument(at('InputRanges'), `InputRanges holds [from, to] pairs: an even count of numbers, got ${ranges.length}`);
  if (nd.length % 2 !== 0)
    throw invalidArgument(at('NoDataRanges'), `NoDataRanges holds [from, to] pairs: an even count of numbers, got ${nd.length}`);
  const n = ranges.length / 2;
  if (outputs.length !== n) {
    throw invalidArgument(at('OutputValues'), `OutputValues needs one value per input range: ${n} range(s), ${outputs.length} value(s)`);
  }
  if (n === 0 && nd.length === 0 && !a.AllowUnmatched) {
    throw invalidArgument(at('InputRanges'), 'Remap needs InputRanges (with OutputValues), NoDataRanges or AllowUnmatched');
  }
  for (let k = 0; k < n; k++) {
    if (ranges[2 * k]! > ranges[2 * k + 1]!) {
      throw invalidArgument(at('InputRanges'), `range ${k} [${ranges[2 * k]}, ${ranges[2 * k + 1]}) has from > to`);
    }
  }
  for (let k = 0; k < nd.length / 2; k++) {
    if (nd[2 * k]! > nd[2 * k + 1]!) throw invalidArgument(at('NoDataRanges'), `range ${k} [${nd[2 * k]}, ${nd[2 * k + 1]}] has from > to`);
  }

  const warnings: string[] = [];
  if (src.bandCount > 1) warnings.push(`Remap uses the first band; the other ${src.bandCount - 1} band(s) are dropped`);

  const inType = src.pixelType;
  const float = !PIXEL_TYPE_INFO[inType].integer;
  const outType = to ?? inType;
  const castOut = Float64Array.from(outputs, (v) => castValue(v, outType));
  const clamped = outputs.filter((v, k) => castOut[k] !== (outType === 'F32' ? Math.fround(v) : v));
  if (clamped.length > 0) {
    warnings.push(
      `OutputValues ${clamped.slice(0, 5).join(', ')}${clamped.length > 5 ? ', ...' : ''} do not fit the output type ${outType} and are ` +
        `rounded/clamped to it; set outputPixelType (e.g. ${typeHolding([...outputs, PIXEL_TYPE_INFO[inType].min, PIXEL_TYPE_INFO[inType].max])}) to keep them`,
    );
  }

  const lo = new Float64Array(n);
  const hi = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    lo[k] = ranges[2 * k]! - (float && k > 0 ? FLOAT_NUDGE : 0);
    hi[k] = ranges[2 * k + 1]! - (float && k < n - 1 ? FLOAT_NUDGE : 0);
  }
  const ndFrom = Float64Array.from({ length: nd.length / 2 }, (_, k) => nd[2 * k]!);
  const ndTo = Float64Array.from({ length: nd.length / 2 }, (_, k) => nd[2 * k + 1]!);

  let edges: Float64Array | undefined;
  if (a.Geometries !== undefined) {
    const gt = a.GeometryType?.trim()
      .toLowerCase()
      .replace(/^esrigeometry/, '');
    if (gt !== undefined && gt !== 'envelope' && gt !== 'polygon') {
      throw invalidArgument(
        at('GeometryType'),
        `GeometryType must be esriGeometryEnvelope or esriGeometryPolygon, got ${JSON.stringify(a.GeometryType)}`,
      );
    }
    const list = Array.isArray(a.Geometries) ? (a.Geometries as unknown[]) : [a.Geometries];
    if (list.length === 0) throw invalidArgument(at('Geometries'), 'Geometries is empty');
    // Each geometry is filled on its own (even-odd within each of its parts); their union is remapped.
    const parts = list.flatMap((g, i) => {
      const path = Array.isArray(a.Geometries) ? at('Geometries', i) : at('Geometries');
      return partsInRasterSR(parseGeometry(g, path), src, path);
    });
    edges = pixelEdges(parts, src);
  } else if (a.GeometryType !== undefined) {
    warnings.push('GeometryType given without Geometries: it is ignored');
  }

  const exactStats = !a.AllowUnmatched && edges === undefined && castOut.length > 0;
  const statistics: BandStatistics[] | undefined = exactStats ? [{ min: Math.min(...castOut), max: Math.max(...castOut) }] : undefined;
  const noData =
    src.noData !== undefined && representable(src.noData, outType) ? src.noData : PIXEL_TYPE_INFO[outType].integer ? undefined : Number.NaN;
  const info: RasterInfo = {
    width: src.width,
    height: src.height,
    bandCount: 1,
    pixelType: outType,
    ...(noData !== undefined ? { noData } : {}),
    extent: src.extent,
    cellSize: src.cellSize,
    ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    ...(src.bandNames?.[0] !== undefined ? { bandNames: [src.bandNames[0]] } : {}),
    ...(statistics ? { statistics } : {}),
  };

  const base: Omit<RemapParams, 'lut'> = {
    input: a.Raster,
    inType,
    lo,
    hi,
    from: Float64Array.from({ length: n }, (_, k) => ranges[2 * k]!),
    lastTo: n > 0 ? ranges[2 * n - 1]! : 0,
    lastInclusive: a.IsLastInputRangeInclusive,
    outputs: castOut,
    ndFrom,
    ndTo,
    ndInclusive: !float,
    allowUnmatched: a.AllowUnmatched,
    outType,
    ...(edges ? { edges } : {}),
  };
  // Integer inputs of at most 16 bits: resolve every possible value once.
  const t = PIXEL_TYPE_INFO[inType];
  let lut: RemapParams['lut'];
  if (t.integer && t.bits <= 16) {
    const size = t.max - t.min + 1;
    const values = new Float64Array(size);
    const valid = new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      const r = lookup(base, t.min + i);
      if (r !== undefined) {
        values[i] = r;
        valid[i] = 1;
      }
    }
    lut = { base: t.min, values, valid };
  }
  return { info, halo: 0, params: { ...base, ...(lut ? { lut } : {}) }, ...(warnings.length ? { warnings } : {}) };
}

function remapKernel(p: RemapParams, inputs: readonly PixelBlock[], out: PixelBlock): void {
  const src = inputs[p.input]!;
  const v = src.bands[0]!;
  const dst = out.bands[0]!;
  const m = out.mask;
  const n = m.length;
  let region: Uint8Array | undefined;
  if (p.edges !== undefined) {
    region = new Uint8Array(n);
    fillInside(p.edges, out.rect, region);
  }
  const lut = p.lut;
  for (let i = 0; i < n; i++) {
    const x = v[i]!;
    if (src.mask[i] === 0 || x !== x) {
      m[i] = 0;
      dst[i] = 0;
      continue;
    }
    if (region !== undefined && region[i] === 0) {
      dst[i] = castValue(x, p.outType); // outside every geometry: unchanged (clamped to the output type)
      continue;
    }
    if (lut !== undefined) {
      const j = x - lut.base;
      if (lut.valid[j] === 1) dst[i] = lut.values[j]!;
      else {
        m[i] = 0;
        dst[i] = 0;
      }
      continue;
    }
    const r = lookup(p, x);
    if (r === undefined) {
      m[i] = 0;
      dst[i] = 0;
    } else dst[i] = r;
  }
}

/** The output for input value `x` (already cast to the output type), or undefined for NoData. */
function lookup(p: Omit<RemapParams, 'lut'>, x: number): number | undefined {
  const nd = p.ndFrom.length;
  for (let k = 0; k < nd; k++) {
    const f = p.ndFrom[k]!;
    const t = p.ndTo[k]!;
    if (x === f || (x >= f && (p.ndInclusive ? x <= t : x < t))) return undefined;
  }
  const n = p.lo.length;
  for (let k = n - 1; k >= 0; k--) {
    if (x === p.from[k] || (x >= p.lo[k]! && x < p.hi[k]!) || (k === n - 1 && p.lastInclusive && x === p.lastTo)) return p.outputs[k]!;
  }
  return p.allowUnmatched ? castValue(x, p.outType) : undefined;
}

/** The smallest pixel type holding every value (integers: the smallest integer type; fractions: F32, F64 past its range). */
function typeHolding(values: readonly number[]): PixelType {
  if (values.every((v) => Number.isInteger(v))) {
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    for (const t of ['U8', 'S8', 'U16', 'S16', 'U32', 'S32'] as const) {
      if (PIXEL_TYPE_INFO[t].min <= lo && PIXEL_TYPE_INFO[t].max >= hi) return t;
    }
    return 'F64';
  }
  return values.every((v) => Math.abs(v) <= PIXEL_TYPE_INFO.F32.max) ? 'F32' : 'F64';
}

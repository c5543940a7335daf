/**
 * Arithmetic — band-wise `Raster op Raster2`: plus, minus, multiply, divide, power, mode.
 *
 * Spec: raster-functions.md §2 "Arithmetic" and §1.5 (several inputs). Either operand may be a
 * raster or a constant (a number, an array with one value per band, or a space-delimited string,
 * turned into a constant source by the builder); at least one must be a raster.
 * Math, per band b and pixel, in float64: r1 + r2, r1 − r2, r1 × r2, r1 / r2, r1 ^ r2, and
 * Mode = r1 − r2·trunc(r1/r2) (floating modulo, the sign of r1). A single-band operand (or a
 * one-value constant) is broadcast to every band; otherwise band counts must match.
 * Output: F32 (natural type), band count = the larger operand's, NoData NaN; band names from the
 * first raster operand; statistics and histograms dropped.
 * Edges and NoData: a pixel is NoData where any raster operand is NoData (masks ANDed), or where
 * any band's result is not a finite F32 number: division by zero and 0/0, a negative base with a
 * non-integer power, 0 to a negative power, Mode by zero, overflow of the F32 range, NaN operands.
 * The mask is shared by all bands, so a bad result in one band makes the pixel NoData in all.
 * Grids (spec §1.5): the output grid is `outputGrid(rasters, ExtentType, CellsizeType)` (grid.ts:
 * FirstOf/IntersectionOf/UnionOf/LastOf extent, FirstOf/MinOf/MaxOf/MeanOf/LastOf cell size, in the
 * first raster's spatial reference, snapped to the first raster's origin); constants are ignored.
 * Raster operands not on that grid are resampled onto it by the engine (Plan.align): nearest
 * neighbour for thematic inputs (integer pixel types, colormaps), bilinear for continuous (float)
 * ones, gdalwarp conventions (src/core/resample.ts); other spatial references are reprojected
 * (src/graph/align.ts). Pixels outside an operand's extent are NoData for that operand, so NoData
 * in the result (UnionOf leaves NoData where only one operand covers).
 * Multidimensional operands (core/multidim.ts): slices are paired by variable name and dimension
 * values per MatchVariable / UnionDimension (seed section 8 rule 6, `pairMultidimensional`); the
 * result is multidimensional, a plain operand or constant is broadcast over every slice.
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { pairMultidimensional } from '../../core/multidim.js';
import { alignMethod, cellsizeTypeArg, extentTypeArg, outputGrid } from './grid.js';
import { type ArithOperand, arithmeticViaWasm } from '../../wasm/local.js';

const ArithmeticOperation = { Plus: 1, Minus: 2, Multiply: 3, Divide: 4, Power: 5, Mode: 6 } as const;

const args = {
  Raster: {
    kind: 'raster',
    scalar: true,
    default: '$$',
    doc: 'First operand: a raster, or a constant (number, array with one value per band, space-delimited string).',
  },
  Raster2: {
    kind: 'raster',
    scalar: true,
    doc: 'Second operand: a raster, or a constant (number, array with one value per band, space-delimited string).',
  },
  Operation: {
    kind: 'enum',
    values: [1, 2, 3, 4, 5, 6],
    names: ArithmeticOperation,
    default: ArithmeticOperation.Plus,
    doc: '1 Plus, 2 Minus, 3 Multiply, 4 Divide, 5 Power, 6 Mode (floating modulo r1 - r2*trunc(r1/r2)).',
  },
  ExtentType: extentTypeArg,
  CellsizeType: cellsizeTypeArg,
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name.' },
  UnionDimension: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: true = dimension names must match; false = union of the dimensions.',
  },
} as const satisfies ArgSchema;

/** One operand as the kernel sees it: a raster input (band per output band) or constants per output band. */
type Operand =
  | { readonly kind: 'raster'; readonly input: number; readonly bands: readonly number[] }
  | { readonly kind: 'constant'; readonly values: readonly number[] };

interface ArithmeticParams {
  readonly operation: 1 | 2 | 3 | 4 | 5 | 6;
  readonly bandCount: number;
  readonly a: Operand;
  readonly b: Operand;
}

const at = argPaths(args);

export const arithmetic = defineFunction<typeof args, ArithmeticParams>({
  name: 'Arithmetic',
  summary: 'Band-wise plus, minus, multiply, divide, power or mode of two rasters or constants.',
  variableName: 'Raster',
  family: 'local',
  verification: 'reference: gdal_calc.py (NumPy) goldens for all six operations and a scalar operand; hand-derived edge cases',
  args,

  plan(a, inputs, to) {
    const operands = [
      { name: 'Raster', index: a.Raster, info: inputs[a.Raster]! },
      { name: 'Raster2', index: a.Raster2, info: inputs[a.Raster2]! },
    ] as const;

    const rasters = operands.filter((o) => o.info.constant === undefined);
    const firstRaster = rasters[0];
    if (firstRaster === undefined) {
      throw invalidArgument(at('Raster'), 'at least one operand of Arithmetic must be a raster (both are constants)');
    }
    for (const o of operands) {
      if (o.info.constant !== undefined && o.info.constant.length === 0) {
        throw invalidArgument(at(o.name), `${o.name} is an empty list of constants`);
      }
      if (o.info.constant === undefined && isComplex(o.info.pixelType)) {
        throw unsupportedInput(at(o.name), `Arithmetic does not take complex (${o.info.pixelType}) rasters`);
      }
    }
    // Every operation needs both operands at a pixel: inputs without a common area are refused.
    const grid = outputGrid(
      operands.map((o) => o.info),
      a.ExtentType,
      a.CellsizeType,
      { paths: operands.map((o) => at(o.name)) },
    )!;

    const counts = operands.map(bandsOf);
    const [n1, n2] = counts as [number, number];
    // Multidimensional operands: slices paired by variable and dimension values (seed rule 6).
    const md = pairMultidimensional(
      operands.map((o) => o.info),
      { matchVariable: a.MatchVariable, unionDimension: a.UnionDimension, at, paths: [at('Raster'), at('Raster2')] },
    );
    // ASSUMPTION (spec: "a single-band operand is broadcast"): a one-band raster or one-value constant
    // broadcasts against any band count (numpy's rule), so a single-band raster with a 3-value
    // constant gives 3 bands; any other mismatch is an error.
    if (md === undefined && n1 !== n2 && n1 !== 1 && n2 !== 1) {
      const bad = operands[1].info.constant !== undefined || operands[0].info.constant === undefined ? operands[1] : operands[0];
      const what = (o: (typeof operands)[number]): string =>
        o.info.constant !== undefined ? `${o.info.constant.length} constants` : `${o.info.bandCount} bands`;
      throw invalidArgument(
        at(bad.name),
        `band counts do not match: Raster has ${what(operands[0])}, Raster2 has ${what(operands[1])}; ` +
          'a constant needs one value or one value per band, rasters need equal band counts or a single band',
      );
    }
    const bandCount = md?.bandCount ?? Math.max(n1, n2);

    const operand = (o: (typeof operands)[number]): Operand => {
      const pick = (b: number): number => (bandsOf(o) === 1 ? 0 : b);
      const out = md ? [...md.bands[o === operands[0] ? 0 : 1]!] : Array.from({ length: bandCount }, (_, b) => pick(b));
      return o.info.constant !== undefined
        ? { kind: 'constant', values: out.map((b) => o.info.constant![b]!) }
        : { kind: 'raster', input: o.index, bands: out };
    };

    const src = firstRaster.info;
    const info: RasterInfo = {
      width: grid.width,
      height: grid.height,
      bandCount,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: grid.extent,
      cellSize: grid.cellSize,
      ...(grid.spatialReference ? { spatialReference: grid.spatialReference } : {}),
      // ASSUMPTION (spec silent): band b of the result stands for band b of the first raster, so its
      // names carry over when the band counts agree; statistics no longer hold and are dropped.
      ...(src.bandNames?.length === bandCount ? { bandNames: src.bandNames } : {}),
      ...(md ? { multidimensional: md.multidimensional, bandNames: md.bandNames } : {}),
    };
    return {
      info,
      halo: 0,
      params: { operation: a.Operation, bandCount, a: operand(operands[0]), b: operand(operands[1]) },
      align: inputs.map((i) => (i.constant === undefined ? alignMethod(i) : undefined)),
      ...(md && md.warnings.length > 0 ? { warnings: md.warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const m = out.mask;
    const n = m.length;
    if (p.operation <= 4 && viaWasm(p, inputs, out)) return;
    for (const o of [p.a, p.b]) {
      if (o.kind !== 'raster') continue;
      const src = inputs[o.input]!.mask;
      for (let i = 0; i < n; i++) if (src[i] === 0) m[i] = 0;
    }
    for (let b = 0; b < p.bandCount; b++) {
      const dst = out.bands[b]!;
      // The operands' float64 values a strip at a time (scratch of CHUNK, not of the block).
      for (let s = 0; s < n; s += CHUNK) {
        const e = Math.min(n, s + CHUNK);
        const x = load(p.a, b, inputs, X, m, s, e);
        const y = load(p.b, b, inputs, Y, m, s, e);
        switch (p.operation) {
          case 1:
            for (let i = s; i < e; i++) dst[i] = x[i - s]! + y[i - s]!;
            break;
          case 2:
            for (let i = s; i < e; i++) dst[i] = x[i - s]! - y[i - s]!;
            break;
          case 3:
            for (let i = s; i < e; i++) dst[i] = x[i - s]! * y[i - s]!;
            break;
          case 4:
            // x/0 is ±Infinity and 0/0 is NaN: both fail the finiteness check below.
            for (let i = s; i < e; i++) dst[i] = x[i - s]! / y[i - s]!;
            break;
          case 5:
            // Math.pow gives NaN for a negative base with a non-integer power, Infinity for 0^-k.
            for (let i = s; i < e; i++) dst[i] = Math.pow(x[i - s]!, y[i - s]!);
            break;
          case 6:
            // ASSUMPTION (spec: "Mode is undocumented", unsure): floating modulo r1 − r2·trunc(r1/r2),
            // computed with `%` (C fmod, exact, as the vendor client's Local Mod); `+ 0` turns -0 into 0,
            // as the formula gives. x % 0 is NaN, so Mode by zero is NoData.
            for (let i = s; i < e; i++) dst[i] = (x[i - s]! % y[i - s]!) + 0;
            break;
        }
      }
      // Stored as F32: NaN, ±Infinity and values past the F32 range (now ±Infinity) become NoData.
      for (let i = 0; i < n; i++) {
        const v = dst[i]!;
        if (v - v !== 0) m[i] = 0;
      }
    }
    for (let b = 0; b < p.bandCount; b++) {
      const dst = out.bands[b]!;
      for (let i = 0; i < n; i++) if (m[i] === 0) dst[i] = Number.NaN;
    }
  },
});

/**
 * Plus, minus, multiply and divide in wasm (src/wasm/local.ts: the same float64 arithmetic, the
 * same F32 rounding and finiteness test, the same masks); false when the case is not taken.
 */
function viaWasm(p: ArithmeticParams, inputs: readonly PixelBlock[], out: PixelBlock): boolean {
  const operand = (o: Operand, b: number): ArithOperand =>
    o.kind === 'constant' ? { value: o.values[b]! } : { plane: inputs[o.input]!.bands[o.bands[b]!]! };
  const bands: (readonly [ArithOperand, ArithOperand])[] = [];
  for (let b = 0; b < p.bandCount; b++) bands.push([operand(p.a, b), operand(p.b, b)]);
  const masks: Uint8Array[] = [];
  if (p.a.kind === 'raster') masks.push(inputs[p.a.input]!.mask);
  if (p.b.kind === 'raster') masks.push(inputs[p.b.input]!.mask);
  return arithmeticViaWasm(p.operation, bands, masks, out.bands, out.mask);
}

/** Bands an operand contributes: its band count, or its number of constants. */
function bandsOf(o: { readonly info: RasterInfo }): number {
  return o.info.constant !== undefined ? o.info.constant.length : o.info.bandCount;
}

/** Pixels per strip of the TypeScript kernel's float64 scratch (two planes of CHUNK, reused). */
const CHUNK = 4096;
const X = new Float64Array(CHUNK);
const Y = new Float64Array(CHUNK);

/**
 * Fill `dst` with operand `o`'s float64 values for output band `b`, pixels [s, e) to dst[0, e - s);
 * a NaN operand value clears the mask. Answers `dst`.
 */
function load(o: Operand, b: number, inputs: readonly PixelBlock[], dst: Float64Array, m: Uint8Array, s: number, e: number): Float64Array {
  if (o.kind === 'constant') {
    dst.fill(o.values[b]!, 0, e - s);
    if (Number.isNaN(o.values[b])) m.fill(0, s, e);
    return dst;
  }
  const src = inputs[o.input]!.bands[o.bands[b]!]!;
  for (let i = s; i < e; i++) {
    const v = src[i]!;
    // ASSUMPTION (spec silent): a NaN pixel not covered by the mask is NoData too (NaN ^ 0 would give 1).
    if (v !== v) m[i] = 0;
    dst[i - s] = v;
  }
  return dst;
}

/**
 * Local — cell-by-cell math, trigonometry, logic, bitwise ops, conditionals and cell statistics
 * over one or more rasters (the vendor's GeoAnalysis function enumeration).
 *
 * Spec: raster-functions.md §2 "Local" (operation table and semantics), §1.2 (output types), §1.3
 * (NoData), §1.5 (several inputs). Table-driven: `Operation` picks an op of the expression engine
 * (src/functions/expr/ops.ts maps every code of the spec's table), so Local and RasterCalculator
 * share one kernel per family of ops (expr/evaluate.ts) and the same NoData rules.
 *
 * Operands: `Rasters` (rasters, or numbers = constants; an absent or empty list means `["$$"]`).
 * Unary ops use the first operand, binary ops the first two, Con (78, and 76 as the vendor client)
 * takes condition, true value and optional false value, SetNull takes condition and value, Pick a
 * position then the values, and the cell statistics (38-43, 47, 54, 55, 58, 66-75, 93, 94) take any
 * number of operands. Extra operands of unary/binary ops are ignored with a warning. Codes the spec
 * does not identify (62, 63, 77, 79-83, 85-92, ...) are rejected.
 *
 * Math (float64): as the spec's semantics list. Int truncates toward zero, RoundDown = floor,
 * RoundUp = ceil, FloorDivide = floor(a/b), Divide = FloatDivide; comparisons and Boolean ops give
 * 0/1 (non-zero is true); bitwise ops act on 32-bit integers (truncated operands; operands outside
 * [-2^31, 2^32-1] or shift counts outside 0..31 give NoData); Mod is the floating modulo with the
 * dividend's sign; Std is the population standard deviation; Median averages the two middle values
 * for an even count; Majority ties go to the value first reaching the top count, Minority ties to
 * the first value; with exactly two values, Majority and Minority are NoData unless they agree (the
 * vendor client's rule; with IgnoreNoData it applies to the two valid values). Percentile: rank
 * p/100*(n-1) of the sorted values, NEAREST rounds it, LINEAR interpolates, AUTO_DETECT is NEAREST
 * when every raster operand has an integer type and LINEAR otherwise. Pick truncates the position
 * (1 = first value operand); out of range is NoData.
 *
 * NoData: a pixel is NoData where an operand it uses is NoData, except: IsNull (1 where NoData, never
 * NoData itself), Con (only the chosen branch matters), SetNull (NoData where the condition is
 * non-zero), Pick (only the picked operand), and the IgnoreNoData statistics (valid where at least
 * one operand is; NoData operands are left out of the statistic). Domain errors (ACos/ASin outside
 * [-1, 1], ATanH |x| >= 1, Ln/Log10/Log2 of x <= 0, SquareRoot of a negative, division by 0, 0/0)
 * and NaN results are NoData; so are results past the F32 range.
 *
 * Bands (`ProcessAsMultiband`, default true): band b of the output uses band b of every operand (a
 * single-band operand or a single constant is broadcast). With `false`, cell statistics pool every
 * band of every operand into one output band; other ops are band-wise either way.
 *
 * Output: natural type F32, NoData NaN; advertised statistics for ACos [0, pi], ASin/ATan
 * [-pi/2, pi/2], Cos/Sin [-1, 1], comparison/Boolean ops and IsNull [0, 1] (spec). An integer
 * `outputPixelType` is produced directly (the plan gets it): values rounded half up (Math.round, as the vendor
 * client) and values outside the type's range are NoData instead of clamped (spec §1.2 rule 2).
 * Grid: the output grid follows ExtentType/CellsizeType (local/grid.ts); other rasters are
 * resampled onto it. Multidimensional inputs pair their slices by MatchVariable/UnionDimension (core/multidim.ts).
 */
import { invalidArgument } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, isInteger, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema, type ArgValues, type Plan } from '../../graph/types.js';
import type { Binding } from '../expr/compile.js';
import { compileProgram, ExprBuilder, LOCAL_CODES, localOp, Op, type IrNode } from '../expr/index.js';
import { STATISTIC_OPS } from '../expr/ops.js';
import { expressionKernel, operandsInfo, planOperands, type ExpressionParams } from '../expr/operands.js';
import { cellsizeTypeArg, extentTypeArg } from './grid.js';

const args = {
  Rasters: {
    kind: 'rasters',
    scalar: true,
    default: '$$',
    doc: 'Operands: rasters or numbers (constants; one value, or one per band). An empty list means the service raster ($$).',
  },
  Operation: {
    kind: 'int',
    doc: "Operation code (the vendor's Local table): 1 Plus ... 65 FloorDivide, 66-75 statistics ignoring NoData, 76/78 Con, 84 Pick, 93 Percentile, 94 PercentileIgnoreNoData.",
  },
  ExtentType: extentTypeArg,
  CellsizeType: cellsizeTypeArg,
  ProcessAsMultiband: {
    kind: 'boolean',
    default: true,
    doc: 'true: band b of the output from band b of every operand; false: cell statistics pool all bands of all operands into one band.',
  },
  PercentileValue: { kind: 'number', default: 90, min: 0, max: 100, doc: 'Percentile (0..100) for operations 93 and 94.' },
  PercentileInterpolationType: {
    kind: 'string',
    values: ['AUTO_DETECT', 'NEAREST', 'LINEAR'],
    default: 'AUTO_DETECT',
    doc: 'Percentile ranks: NEAREST, LINEAR, or AUTO_DETECT (NEAREST for integer rasters, LINEAR for float).',
  },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name.' },
  UnionDimension: {
    kind: 'boolean',
    default: true,
    doc: 'Multidimensional inputs: true = dimension names must match; false = union of the dimensions.',
  },
} as const satisfies ArgSchema;

const at = argPaths(args);

function planLocal(a: ArgValues<typeof args>, inputs: readonly RasterInfo[], pixelType: PixelType): Plan<ExpressionParams> {
  if (a.Operation === undefined) throw invalidArgument(at('Operation'), 'Operation is required (an operation code from the Local table)');
  const op = localOp(a.Operation);
  if (op === undefined) {
    throw invalidArgument(
      at('Operation'),
      `operation code ${a.Operation} is not one the spec identifies (public material names no operation for it); known codes: ${LOCAL_CODES.join(', ')}`,
    );
  }
  const all = a.Rasters.map((input, j) => ({ input, info: inputs[input]!, path: at('Rasters', j) }));
  const [lo, hi] = op.def.arity;
  const warnings: string[] = [];
  if (all.length < lo) {
    throw invalidArgument(at('Rasters'), `${op.name} (${a.Operation}) needs ${lo} operand(s) in Rasters, got ${all.length}`);
  }
  if (all.length > hi) warnings.push(`${op.name} uses ${hi} operand(s); the other ${all.length - hi} in Rasters are ignored`);
  const used = all.slice(0, Math.min(all.length, hi));
  // Ops where a NoData operand makes the pixel NoData need a common area of all operands; the
  // IgnoreNoData statistics, IsNull, Con, SetNull and Pick only need each operand to reach the output.
  const needsAll = !op.ignoreNoData && !([Op.IS_NULL, Op.CON, Op.SET_NULL, Op.PICK] as number[]).includes(op.def.op);
  const operands = planOperands(
    'Local',
    used,
    inputs,
    a.ExtentType,
    a.CellsizeType,
    at('Rasters'),
    { matchVariable: a.MatchVariable, unionDimension: a.UnionDimension, at },
    needsAll,
  );

  const statistic = STATISTIC_OPS.has(op.def.op);
  const params: number[] = statistic ? [op.ignoreNoData ? 1 : 0] : [];
  if (op.def.op === Op.PERCENTILE) {
    const mode = a.PercentileInterpolationType;
    const integer = used.every((o) => o.info.constant !== undefined || isInteger(o.info.pixelType));
    params.push(a.PercentileValue, mode === 'LINEAR' || (mode === 'AUTO_DETECT' && !integer) ? 1 : 0);
  }
  const b = new ExprBuilder();
  const leaf = (x: Binding): IrNode => ('slot' in x ? b.load(x.slot) : 'node' in x ? x.node : b.constant(x.value));
  const outputs: IrNode[] = [];
  if (statistic && !a.ProcessAsMultiband) {
    outputs.push(b.apply(op.def.op, used.flatMap((_, j) => operands.bindAll(j)).map(leaf), params));
  } else {
    for (let band = 0; band < operands.bandCount; band++) {
      outputs.push(
        b.apply(
          op.def.op,
          used.map((_, j) => leaf(operands.bind(j, band))),
          params,
        ),
      );
    }
  }
  const domain = op.def.domain;
  const info: RasterInfo = {
    ...operandsInfo(operands, outputs.length, pixelType),
    ...(domain ? { statistics: outputs.map(() => ({ min: domain[0], max: domain[1] })) } : {}),
  };
  return {
    info,
    halo: 0,
    params: { program: compileProgram(outputs), slots: operands.slots(), strictMask: false },
    align: operands.align,
    ...(warnings.length ? { warnings } : {}),
  };
}

export const local = defineFunction<typeof args, ExpressionParams>({
  name: 'Local',
  summary: 'Cell-by-cell math, trigonometry, logic, bitwise, conditional and statistics operations over rasters.',
  variableName: 'Rasters',
  family: 'local',
  verification:
    'reference: NumPy (gdal_calc.py style) goldens for several operations on Landsat bands; hand: every op family, NoData rules',
  args,
  // Complex outputPixelTypes: the F32 result becomes the real parts (the engine's cast).
  plan: (a, inputs, to) => planLocal(a, inputs, to === undefined || isComplex(to) ? 'F32' : to),
  kernel: expressionKernel,
});

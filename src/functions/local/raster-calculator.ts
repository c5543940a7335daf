/**
 * RasterCalculator — a map-algebra expression over named rasters, e.g.
 * `Con((nir - red) / (nir + red) > 0.3, nir, 0)` with `InputNames: ["nir", "red"]`.
 *
 * Spec: raster-functions.md §2 "RasterCalculator" (arguments, operators, functions), §2 "Local"
 * (op semantics and NoData rules, shared through the expression engine in src/functions/expr),
 * §1.5 (several inputs). The expression is parsed by a tokenizer and a recursive-descent parser to
 * an AST with an allowlist grammar, and compiled to block-wise typed-array loops; it is never run as
 * JavaScript. Grammar (expr/parse.ts): numbers (with exponents), input names, `+ - * / **`, unary
 * minus, `== != < <= > >=` (0/1), `&` `|` `^` Boolean and/or/xor and `~` Boolean not (0/1),
 * parentheses, and calls of the Local family by name, case-insensitive: Abs, Sqrt/SquareRoot, Exp,
 * Exp10, Exp2, Ln, Log10, Log2, Sin, Cos, Tan, ASin, ACos, ATan, ATan2, SinH, CosH, TanH, ASinH,
 * ACosH, ATanH, Int, Float, RoundUp, RoundDown, Square, Negate, Power/Pow, Mod, Divide,
 * FloatDivide, FloorDivide, Plus, Minus, Times, EqualTo ... BooleanXOr, Bitwise*, Con(c, t[, f]),
 * SetNull(c, v), IsNull(x), Pick(p, ...), Max/Min/Mean/Med/Majority/Minority/Range/Std/Sum/Variety
 * (any number of arguments, and their ...IgnoreNoData forms), Percentile(p, ...).
 * ASSUMPTION (spec: "exact grammar undocumented"): comparisons bind tighter than & | ^ (see
 * parse.ts), `^` is XOR as in the vendor's Python map algebra (power is `**`), chained comparisons
 * are rejected, and `/` by zero is NoData (Local Divide). Limits: 10,000 characters, 4,000 tokens,
 * nesting 100; every problem is INVALID_ARGUMENT at rasterFunctionArguments.Expression with the
 * 0-based character position.
 *
 * Names: `InputNames[i]` names `Rasters[i]` (a JSON array, or one string of names separated by
 * commas or blanks); names are identifiers ([A-Za-z_][A-Za-z0-9_]*), matched case-insensitively,
 * unique. A `Rasters` element may be a number (a constant).
 * ASSUMPTION (spec: "inputs must be single-band (use ExtractBand first)" [VPY]): multiband inputs are
 * accepted and processed band-wise as Local does (band b from band b of every input; single-band
 * inputs broadcast), since rejecting them helps nobody.
 * NoData: as Local (NoData operands give NoData except under IsNull/Con/SetNull/Pick/IgnoreNoData;
 * domain errors and non-finite results are NoData). Output: F32, NoData NaN; an integer
 * outputPixelType is produced directly with Local's rule (rounded, out of range -> NoData).
 * Grid: ExtentType/CellsizeType choose the output grid; inputs not on it are resampled (Plan.align).
 */
import { invalidArgument } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema, type ArgValues, type Plan } from '../../graph/types.js';
import { bindUserExpression, compileProgram, ExprBuilder, type IrNode } from '../expr/index.js';
import { expressionKernel, operandsInfo, planOperands, type ExpressionParams } from '../expr/operands.js';
import { cellsizeTypeArg, extentTypeArg } from './grid.js';

const args = {
  Rasters: { kind: 'rasters', scalar: true, doc: 'The input rasters (or numbers, used as constants), one per name in InputNames.' },
  InputNames: {
    kind: 'strings',
    doc: 'The name of each raster in Rasters, used as a variable in Expression (identifiers, case-insensitive).',
  },
  Expression: {
    kind: 'string',
    doc: 'Map-algebra expression over the input names: + - * / **, comparisons, & | ^ ~, parentheses, Local functions (Con, SetNull, IsNull, Sqrt, ...).',
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

const at = argPaths(args);
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function planCalculator(a: ArgValues<typeof args>, inputs: readonly RasterInfo[], pixelType: PixelType): Plan<ExpressionParams> {
  const text = a.Expression;
  if (text === undefined || text.trim() === '')
    throw invalidArgument(at('Expression'), 'Expression is required (a map-algebra expression over InputNames)');
  let names = [...(a.InputNames ?? [])];
  if (names.length === 1 && a.Rasters.length > 1) names = names[0]!.split(/[\s,;]+/).filter((n) => n !== '');
  names = names.map((n) => n.trim());
  if (names.length !== a.Rasters.length) {
    throw invalidArgument(
      at('InputNames'),
      `InputNames has ${names.length} name(s) but Rasters has ${a.Rasters.length} raster(s): give one name per raster`,
    );
  }
  const index = new Map<string, number>();
  names.forEach((n, i) => {
    if (!IDENT.test(n) || n.length > 128) {
      throw invalidArgument(
        at('InputNames', i),
        `${JSON.stringify(n.slice(0, 60))} is not a valid name: use letters, digits and _ (not starting with a digit)`,
      );
    }
    const key = n.toLowerCase();
    if (index.has(key)) throw invalidArgument(at('InputNames', i), `the name ${n} is given twice (names are case-insensitive)`);
    index.set(key, i);
  });

  const operands = a.Rasters.map((input, j) => ({ input, info: inputs[input]!, path: at('Rasters', j) }));
  // An expression may leave NoData operands out (Con, IsNull, ...IgnoreNoData): only operands that
  // do not reach the output extent at all are refused.
  const planned = planOperands(
    'RasterCalculator',
    operands,
    inputs,
    a.ExtentType,
    a.CellsizeType,
    at('Rasters'),
    { matchVariable: a.MatchVariable, unionDimension: a.UnionDimension, at },
    false,
  );
  const b = new ExprBuilder();
  const outputs: IrNode[] = [];
  for (let band = 0; band < planned.bandCount; band++) {
    outputs.push(
      bindUserExpression(
        text,
        b,
        {
          dialect: 'full',
          division: 'nodata',
          resolve: (name) => {
            const j = index.get(name.toLowerCase());
            return j === undefined ? undefined : planned.bind(j, band);
          },
          names: () => names,
        },
        at('Expression'),
      ),
    );
  }
  return {
    info: operandsInfo(planned, planned.bandCount, pixelType),
    halo: 0,
    params: { program: compileProgram(outputs), slots: planned.slots(), strictMask: false },
    align: planned.align,
  };
}

export const rasterCalculator = defineFunction<typeof args, ExpressionParams>({
  name: 'RasterCalculator',
  aliases: ['Calculator'],
  summary: 'Evaluate a map-algebra expression (arithmetic, comparisons, Boolean ops, Local functions) over named rasters.',
  variableName: 'Rasters',
  family: 'local',
  verification: 'reference: NumPy goldens of expressions over Landsat bands; hand: grammar, precedence, NoData, hostile inputs',
  args,
  // Complex outputPixelTypes: the F32 result becomes the real parts (the engine's cast).
  plan: (a, inputs, to) => planCalculator(a, inputs, to === undefined || isComplex(to) ? 'F32' : to),
  kernel: expressionKernel,
});

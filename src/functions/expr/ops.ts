/**
 * The operations of the expression engine: opcodes (plain numbers, so compiled programs stay
 * structured-cloneable) and one table that names them for RasterCalculator expressions and maps
 * the Local function's operation codes (spec §2 "Local" table) onto them. Semantics live in
 * `evaluate.ts` (one small loop per family of ops).
 */

export const Op = {
  // Leaves.
  CONST: 0,
  LOAD: 1,
  // Unary math.
  NEG: 10,
  ABS: 11,
  SQRT: 12,
  SQUARE: 13,
  EXP: 14,
  EXP10: 15,
  EXP2: 16,
  LN: 17,
  LOG10: 18,
  LOG2: 19,
  SIN: 20,
  COS: 21,
  TAN: 22,
  ASIN: 23,
  ACOS: 24,
  ATAN: 25,
  SINH: 26,
  COSH: 27,
  TANH: 28,
  ASINH: 29,
  ACOSH: 30,
  ATANH: 31,
  INT: 32,
  FLOAT: 33,
  FLOOR: 34,
  CEIL: 35,
  BOOL_NOT: 36,
  BIT_NOT: 37,
  IS_NULL: 38,
  // Binary.
  ADD: 50,
  SUB: 51,
  MUL: 52,
  DIV: 53,
  DIV_ZERO: 54,
  FLOOR_DIV: 55,
  POW: 56,
  MOD: 57,
  ATAN2: 58,
  EQ: 60,
  NE: 61,
  LT: 62,
  LE: 63,
  GT: 64,
  GE: 65,
  BOOL_AND: 70,
  BOOL_OR: 71,
  BOOL_XOR: 72,
  BIT_AND: 75,
  BIT_OR: 76,
  BIT_XOR: 77,
  BIT_SHL: 78,
  BIT_SHR: 79,
  // Conditionals.
  CON: 90,
  SET_NULL: 91,
  PICK: 92,
  // Cell statistics over any number of operands; params[0] = 1 ignores NoData operands.
  MAX: 100,
  MIN: 101,
  MEAN: 102,
  MEDIAN: 103,
  MAJORITY: 104,
  MINORITY: 105,
  RANGE: 106,
  STD: 107,
  SUM: 108,
  VARIETY: 109,
  /** params: [ignoreNoData, percentile 0..100, interpolation 0 nearest / 1 linear]. */
  PERCENTILE: 110,
} as const;

export type OpCode = (typeof Op)[keyof typeof Op];

export const STATISTIC_OPS: ReadonlySet<number> = new Set([
  Op.MAX,
  Op.MIN,
  Op.MEAN,
  Op.MEDIAN,
  Op.MAJORITY,
  Op.MINORITY,
  Op.RANGE,
  Op.STD,
  Op.SUM,
  Op.VARIETY,
  Op.PERCENTILE,
]);

export interface OpDef {
  /** Name in RasterCalculator expressions (matched case-insensitively) and in messages. */
  readonly name: string;
  readonly aliases?: readonly string[];
  readonly op: OpCode;
  /** Operand count: [min, max] (max Infinity for cell statistics). */
  readonly arity: readonly [number, number];
  /** Local `Operation` codes that mean this op. */
  readonly local?: readonly number[];
  /** Cell statistics: the IgnoreNoData variant's Local code and name. */
  readonly ignoreNoData?: { readonly local: number; readonly name: string };
  /** Output domain the vendor client advertises as statistics (spec §2 Local). */
  readonly domain?: readonly [number, number];
}

const U = [1, 1] as const;
const B = [2, 2] as const;
const N = [1, Infinity] as const;
const HALF_PI = Math.PI / 2;

const OPS: readonly OpDef[] = [
  { name: 'Plus', op: Op.ADD, arity: B, local: [1] },
  { name: 'Minus', op: Op.SUB, arity: B, local: [2] },
  { name: 'Times', op: Op.MUL, arity: B, local: [3] },
  { name: 'SquareRoot', aliases: ['Sqrt'], op: Op.SQRT, arity: U, local: [4] },
  { name: 'Power', aliases: ['Pow'], op: Op.POW, arity: B, local: [5] },
  { name: 'ACos', op: Op.ACOS, arity: U, local: [6], domain: [0, Math.PI] },
  { name: 'ASin', op: Op.ASIN, arity: U, local: [7], domain: [-HALF_PI, HALF_PI] },
  { name: 'ATan', op: Op.ATAN, arity: U, local: [8], domain: [-HALF_PI, HALF_PI] },
  { name: 'ATanH', op: Op.ATANH, arity: U, local: [9] },
  { name: 'Abs', op: Op.ABS, arity: U, local: [10] },
  { name: 'BitwiseAnd', op: Op.BIT_AND, arity: B, local: [11] },
  { name: 'BitwiseLeftShift', op: Op.BIT_SHL, arity: B, local: [12] },
  { name: 'BitwiseNot', op: Op.BIT_NOT, arity: U, local: [13] },
  { name: 'BitwiseOr', op: Op.BIT_OR, arity: B, local: [14] },
  { name: 'BitwiseRightShift', op: Op.BIT_SHR, arity: B, local: [15] },
  { name: 'BitwiseXOr', op: Op.BIT_XOR, arity: B, local: [16] },
  { name: 'BooleanAnd', op: Op.BOOL_AND, arity: B, local: [17], domain: [0, 1] },
  { name: 'BooleanNot', op: Op.BOOL_NOT, arity: U, local: [18], domain: [0, 1] },
  { name: 'BooleanOr', op: Op.BOOL_OR, arity: B, local: [19], domain: [0, 1] },
  { name: 'BooleanXOr', op: Op.BOOL_XOR, arity: B, local: [20], domain: [0, 1] },
  { name: 'Cos', op: Op.COS, arity: U, local: [21], domain: [-1, 1] },
  { name: 'CosH', op: Op.COSH, arity: U, local: [22] },
  { name: 'Divide', op: Op.DIV, arity: B, local: [23] },
  { name: 'EqualTo', op: Op.EQ, arity: B, local: [24], domain: [0, 1] },
  { name: 'Exp', op: Op.EXP, arity: U, local: [25] },
  { name: 'Exp10', op: Op.EXP10, arity: U, local: [26] },
  { name: 'Exp2', op: Op.EXP2, arity: U, local: [27] },
  { name: 'GreaterThan', op: Op.GT, arity: B, local: [28], domain: [0, 1] },
  { name: 'GreaterThanEqual', op: Op.GE, arity: B, local: [29], domain: [0, 1] },
  { name: 'Int', op: Op.INT, arity: U, local: [30] },
  { name: 'IsNull', op: Op.IS_NULL, arity: U, local: [31], domain: [0, 1] },
  { name: 'Float', op: Op.FLOAT, arity: U, local: [32] },
  { name: 'LessThan', op: Op.LT, arity: B, local: [33], domain: [0, 1] },
  { name: 'LessThanEqual', op: Op.LE, arity: B, local: [34], domain: [0, 1] },
  { name: 'Ln', op: Op.LN, arity: U, local: [35] },
  { name: 'Log10', op: Op.LOG10, arity: U, local: [36] },
  { name: 'Log2', op: Op.LOG2, arity: U, local: [37] },
  { name: 'Majority', op: Op.MAJORITY, arity: N, local: [38], ignoreNoData: { local: 66, name: 'MajorityIgnoreNoData' } },
  { name: 'Max', op: Op.MAX, arity: N, local: [39], ignoreNoData: { local: 67, name: 'MaxIgnoreNoData' } },
  { name: 'Mean', op: Op.MEAN, arity: N, local: [40], ignoreNoData: { local: 68, name: 'MeanIgnoreNoData' } },
  { name: 'Med', aliases: ['Median'], op: Op.MEDIAN, arity: N, local: [41], ignoreNoData: { local: 69, name: 'MedIgnoreNoData' } },
  { name: 'Min', op: Op.MIN, arity: N, local: [42], ignoreNoData: { local: 70, name: 'MinIgnoreNoData' } },
  { name: 'Minority', op: Op.MINORITY, arity: N, local: [43], ignoreNoData: { local: 71, name: 'MinorityIgnoreNoData' } },
  { name: 'Mod', op: Op.MOD, arity: B, local: [44] },
  { name: 'Negate', op: Op.NEG, arity: U, local: [45] },
  { name: 'NotEqual', op: Op.NE, arity: B, local: [46], domain: [0, 1] },
  { name: 'Range', op: Op.RANGE, arity: N, local: [47], ignoreNoData: { local: 72, name: 'RangeIgnoreNoData' } },
  { name: 'RoundDown', op: Op.FLOOR, arity: U, local: [48] },
  { name: 'RoundUp', op: Op.CEIL, arity: U, local: [49] },
  { name: 'SetNull', op: Op.SET_NULL, arity: B, local: [50] },
  { name: 'Sin', op: Op.SIN, arity: U, local: [51], domain: [-1, 1] },
  { name: 'SinH', op: Op.SINH, arity: U, local: [52] },
  { name: 'Square', op: Op.SQUARE, arity: U, local: [53] },
  { name: 'Std', op: Op.STD, arity: N, local: [54], ignoreNoData: { local: 73, name: 'StdIgnoreNoData' } },
  { name: 'Sum', op: Op.SUM, arity: N, local: [55], ignoreNoData: { local: 74, name: 'SumIgnoreNoData' } },
  { name: 'Tan', op: Op.TAN, arity: U, local: [56] },
  { name: 'TanH', op: Op.TANH, arity: U, local: [57] },
  { name: 'Variety', op: Op.VARIETY, arity: N, local: [58], ignoreNoData: { local: 75, name: 'VarietyIgnoreNoData' } },
  { name: 'ACosH', op: Op.ACOSH, arity: U, local: [59] },
  { name: 'ASinH', op: Op.ASINH, arity: U, local: [60] },
  { name: 'ATan2', op: Op.ATAN2, arity: B, local: [61] },
  { name: 'FloatDivide', op: Op.DIV, arity: B, local: [64] },
  { name: 'FloorDivide', op: Op.FLOOR_DIV, arity: B, local: [65] },
  // ASSUMPTION (spec: "the vendor client also maps 76 to the same 3-operand conditional"): 76 = Con.
  // Con with two operands (no false value) gives NoData where the condition is false, as in ArcGIS.
  { name: 'Con', op: Op.CON, arity: [2, 3], local: [78, 76] },
  { name: 'Pick', op: Op.PICK, arity: [2, Infinity], local: [84] },
  { name: 'Percentile', op: Op.PERCENTILE, arity: N, local: [93], ignoreNoData: { local: 94, name: 'PercentileIgnoreNoData' } },
];

export interface LocalOp {
  readonly def: OpDef;
  readonly ignoreNoData: boolean;
  /** The name for messages: `Max` or `MaxIgnoreNoData`. */
  readonly name: string;
}

const byLocal = new Map<number, LocalOp>();
const byName = new Map<string, LocalOp>();
for (const def of OPS) {
  for (const code of def.local ?? []) byLocal.set(code, { def, ignoreNoData: false, name: def.name });
  if (def.ignoreNoData) byLocal.set(def.ignoreNoData.local, { def, ignoreNoData: true, name: def.ignoreNoData.name });
  for (const n of [def.name, ...(def.aliases ?? [])]) byName.set(n.toLowerCase(), { def, ignoreNoData: false, name: def.name });
  if (def.ignoreNoData) byName.set(def.ignoreNoData.name.toLowerCase(), { def, ignoreNoData: true, name: def.ignoreNoData.name });
}

/** The op for a Local `Operation` code, or undefined for codes the spec does not identify. */
export const localOp = (code: number): LocalOp | undefined => byLocal.get(code);

/** The op for a function name in an expression (case-insensitive), or undefined. */
export const namedOp = (name: string): LocalOp | undefined => byName.get(name.toLowerCase());

/** Every function name an expression may call (for messages and docs). */
export const FUNCTION_NAMES: readonly string[] = [...byName.values()].map((o) => o.name).filter((n, i, a) => a.indexOf(n) === i);

/** The Local codes the spec identifies, ascending. */
export const LOCAL_CODES: readonly number[] = [...byLocal.keys()].sort((a, b) => a - b);

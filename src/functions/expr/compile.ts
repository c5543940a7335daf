/**
 * Expressions without eval, part 2: binding names, folding constants, sharing common
 * sub-expressions and compiling to a register program that `evaluate.ts` runs block-wise.
 *
 * - `ExprBuilder` makes IR nodes. Equal nodes are one node (hash-consing), so a sub-expression
 *   written twice (GEMI's eta) is computed once. A node whose operands are all constants is folded
 *   at compile time by the same kernels that run on pixels (so folding never changes a result); a
 *   constant that folds to a non-finite value (`9**9**9`, `1/0`, `Ln(0)`) is an error at its
 *   position rather than a raster of NoData.
 * - `bindExpression` turns a parsed AST into IR: names through the caller's resolver (a band, an
 *   input raster or a constant), operators and function calls through the op table.
 * - `compileProgram` orders the nodes, gives each a Float64Array register (freed after its last
 *   use, so a long expression needs few registers) and returns plain data, safe to send to workers.
 */
import { FUNCTION_NAMES, namedOp, Op, STATISTIC_OPS, type OpCode } from './ops.js';
import { ExprError, type Ast } from './parse.js';
import { execInstruction } from './evaluate.js';

export interface IrNode {
  readonly op: OpCode;
  readonly args: readonly IrNode[];
  /** CONST: the value; LOAD: unused. */
  readonly value: number;
  /** LOAD: [slot]; statistics: [ignoreNoData, ...]. */
  readonly params: readonly number[];
  readonly key: string;
  /** Position in the source text, for messages (-1 for built nodes). */
  readonly pos: number;
}

export interface Instruction {
  readonly op: OpCode;
  readonly dst: number;
  readonly args: readonly number[];
  readonly params: readonly number[];
}

/** A compiled expression: plain data (structured-cloneable). */
export interface Program {
  readonly registers: number;
  /** Registers holding constants, filled once per evaluation. */
  readonly constants: readonly (readonly [register: number, value: number])[];
  readonly code: readonly Instruction[];
  /** Register of each result (one per output band). */
  readonly outputs: readonly number[];
  /** Variable slots the program reads (LOAD), ascending. */
  readonly slots: readonly number[];
}

const keyOf = (v: number): string => (Object.is(v, -0) ? '-0' : String(v));

export class ExprBuilder {
  private readonly nodes = new Map<string, IrNode>();

  private intern(n: IrNode): IrNode {
    const seen = this.nodes.get(n.key);
    if (seen) return seen;
    this.nodes.set(n.key, n);
    return n;
  }

  constant(value: number, pos = -1): IrNode {
    return this.intern({ op: Op.CONST, args: [], value, params: [], key: `c${keyOf(value)}`, pos });
  }

  load(slot: number, pos = -1): IrNode {
    return this.intern({ op: Op.LOAD, args: [], value: 0, params: [slot], key: `l${slot}`, pos });
  }

  /** An operation; folded to a constant when every operand is one. */
  apply(op: OpCode, args: readonly IrNode[], params: readonly number[] = [], pos = -1): IrNode {
    if (args.every((a) => a.op === Op.CONST)) {
      const regs = args.map((a) => Float64Array.of(a.value));
      const out = new Float64Array(1);
      execInstruction({ op, dst: args.length, args: args.map((_, i) => i), params }, [...regs, out], 1);
      const v = out[0]!;
      if (!Number.isFinite(v)) {
        throw new ExprError(
          'this constant sub-expression has no finite value (overflow, division by zero, a domain error or a NoData constant)',
          Math.max(pos, 0),
        );
      }
      return this.constant(v, pos);
    }
    const key = `${op}(${args.map((a) => a.key).join(',')})${params.length ? `[${params.join(',')}]` : ''}`;
    return this.intern({ op, args, value: 0, params, key, pos });
  }
}

/** What a name in an expression stands for: a band (slot), a constant, or a sub-expression built earlier. */
export type Binding = { readonly slot: number } | { readonly value: number } | { readonly node: IrNode };

export interface BindOptions {
  /** The binding of `name`, or undefined when unknown (an error listing `names` follows). */
  readonly resolve: (name: string) => Binding | undefined;
  /** Names to suggest in the "unknown name" message. */
  readonly names: () => readonly string[];
  /** `/` by zero: NoData (RasterCalculator, Local) or 0 (BandArithmetic, as the vendor client). */
  readonly division: 'nodata' | 'zero';
}

const BINARY: Readonly<Record<string, OpCode>> = {
  '+': Op.ADD,
  '-': Op.SUB,
  '*': Op.MUL,
  '**': Op.POW,
  '==': Op.EQ,
  '!=': Op.NE,
  '<': Op.LT,
  '<=': Op.LE,
  '>': Op.GT,
  '>=': Op.GE,
  '&': Op.BOOL_AND,
  '|': Op.BOOL_OR,
  '^': Op.BOOL_XOR,
};

/** Bind a parsed AST to IR nodes; throws ExprError with the position of the offending name or call. */
export function bindExpression(ast: Ast, b: ExprBuilder, o: BindOptions): IrNode {
  const visit = (n: Ast): IrNode => {
    switch (n.k) {
      case 'num':
        return b.constant(n.v, n.pos);
      case 'name': {
        const hit = o.resolve(n.name);
        if (hit === undefined) {
          const names = o.names();
          const near = nearestName(n.name, names);
          throw new ExprError(
            `unknown name ${n.name}${near ? ` (did you mean ${near}?)` : ''}; known names: ${names.slice(0, 30).join(', ') || '(none)'}`,
            n.pos,
          );
        }
        return 'slot' in hit ? b.load(hit.slot, n.pos) : 'node' in hit ? hit.node : b.constant(hit.value, n.pos);
      }
      case 'un': {
        const x = visit(n.x);
        if (n.op === '+') return x;
        return b.apply(n.op === '-' ? Op.NEG : Op.BOOL_NOT, [x], [], n.pos);
      }
      case 'bin': {
        const a = visit(n.a);
        const c = visit(n.b);
        const op = n.op === '/' ? (o.division === 'zero' ? Op.DIV_ZERO : Op.DIV) : BINARY[n.op]!;
        return b.apply(op, [a, c], [], n.pos);
      }
      case 'call': {
        const def = namedOp(n.name);
        if (def === undefined) {
          const near = nearestName(n.name, FUNCTION_NAMES);
          throw new ExprError(
            `unknown function ${n.name}${near ? ` (did you mean ${near}?)` : ''}; functions: ${FUNCTION_NAMES.join(', ')}`,
            n.pos,
          );
        }
        const [lo, hi] = def.def.arity;
        let args = n.args;
        let params: number[] = [];
        if (def.def.op === Op.PERCENTILE) {
          // Percentile(p, x1, x2, ...): p a constant 0..100; linear interpolation between ranks.
          const first = args[0];
          const p = first === undefined ? undefined : visit(first);
          if (p === undefined || p.op !== Op.CONST || !(p.value >= 0 && p.value <= 100)) {
            throw new ExprError(`${def.name} takes a constant percentile 0..100 first, then the values: ${def.name}(90, a, b, c)`, n.pos);
          }
          args = args.slice(1);
          params = [def.ignoreNoData ? 1 : 0, p.value, 1];
        } else if (STATISTIC_OPS.has(def.def.op)) {
          params = [def.ignoreNoData ? 1 : 0];
        }
        if (args.length < lo || args.length > hi) {
          const want = lo === hi ? `${lo}` : hi === Infinity ? `at least ${lo}` : `${lo} to ${hi}`;
          throw new ExprError(`${def.name} takes ${want} argument(s), got ${args.length}`, n.pos);
        }
        return b.apply(def.def.op, args.map(visit), params, n.pos);
      }
    }
  };
  return visit(ast);
}

/** Order, allocate registers, emit. `outputs` are the results, one per output band. */
export function compileProgram(outputs: readonly IrNode[]): Program {
  const order: IrNode[] = [];
  const uses = new Map<IrNode, number>();
  const seen = new Set<IrNode>();
  // Iterative post-order (AST depth is bounded, but an explicit stack costs nothing).
  for (const root of outputs) {
    const stack: { n: IrNode; i: number }[] = [{ n: root, i: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (seen.has(top.n)) {
        stack.pop();
        continue;
      }
      if (top.i < top.n.args.length) {
        const child = top.n.args[top.i++]!;
        if (!seen.has(child)) stack.push({ n: child, i: 0 });
        continue;
      }
      seen.add(top.n);
      order.push(top.n);
      stack.pop();
    }
  }
  for (const n of order) for (const a of n.args) uses.set(a, (uses.get(a) ?? 0) + 1);
  for (const n of outputs) uses.set(n, (uses.get(n) ?? 0) + 1);

  let registers = 0;
  const free: number[] = [];
  const reg = new Map<IrNode, number>();
  const constants: [number, number][] = [];
  const code: Instruction[] = [];
  const slots = new Set<number>();
  for (const n of order) {
    if (n.op === Op.CONST) {
      const r = registers++;
      reg.set(n, r);
      constants.push([r, n.value]);
      continue;
    }
    const args = n.args.map((a) => reg.get(a)!);
    for (const a of n.args) {
      const left = uses.get(a)! - 1;
      uses.set(a, left);
      if (left === 0 && a.op !== Op.CONST) free.push(reg.get(a)!);
    }
    const dst = free.pop() ?? registers++;
    reg.set(n, dst);
    if (n.op === Op.LOAD) slots.add(n.params[0]!);
    code.push({ op: n.op, dst, args, params: n.params });
  }
  return {
    registers,
    constants,
    code,
    outputs: outputs.map((n) => reg.get(n)!),
    slots: [...slots].sort((a, b) => a - b),
  };
}

/** The closest of `names` to `word` (case-insensitive edit distance at most 2), for suggestions. */
function nearestName(word: string, names: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestD = 3;
  for (const c of names) {
    const d = distance(w, c.toLowerCase(), bestD);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

function distance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

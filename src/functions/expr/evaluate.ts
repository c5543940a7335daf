/**
 * Expressions without eval, part 3: running a compiled `Program` over a pixel block.
 *
 * The block is processed in chunks of 4,096 pixels (each register a 32 KB Float64Array that stays
 * in cache; registers are pooled across calls). For every chunk each instruction runs one plain
 * loop over the chunk: the dispatch is per instruction and chunk, never per pixel, and no closure
 * runs per pixel. Loads and float stores are native typed-array conversions (`set`); a binary op
 * with one constant operand reads it as a scalar; the mask fix-ups run only where a chunk's mask
 * is not all valid. Every path computes the same per-pixel expression as the generic loop.
 *
 * Output: float bands take the values (NoData where not finite once stored); integer bands take
 * them rounded half up (Math.round), and values outside the type's range are NoData, not clamped.
 *
 * NoData travels as NaN: LOAD turns masked pixels (and NaN pixels) into NaN, every op maps NaN
 * operands to NaN (explicitly where JavaScript would not: comparisons, Boolean and bitwise ops,
 * `Math.pow(NaN, 0)`), domain errors give NaN (sqrt of a negative, log of x <= 0, asin/acos
 * outside [-1, 1], atanh with |x| >= 1, division by zero under the `nodata` policy), and only
 * IsNull, Con, SetNull, Pick and the IgnoreNoData statistics look at NaN operands on purpose. An
 * output pixel is NoData when any output band's value is not finite once stored (NaN, infinite, or
 * past the F32 range), so the mask stays shared by all bands; with `strictMask` (BandArithmetic)
 * it is also NoData wherever any input the program reads is NoData.
 */
import { maskAllValid, type PixelBlock } from '../../core/pixel-block.js';
import { PIXEL_TYPE_INFO, type Plane } from '../../core/pixel-type.js';
import type { Instruction, Program } from './compile.js';
import { Op } from './ops.js';
import { exprViaWasm, type ExprStep } from '../../wasm/local.js';

const CHUNK = 4096;

/** Where a program's variable slot reads its pixels: one band of an input block (same rectangle as the output). */
export interface SlotSource {
  readonly plane: Plane;
  readonly mask: Uint8Array;
}

/** 2^128 - 2^103: the smallest float64 that rounds to Infinity when stored as float32. */
const F32_INF = 3.4028235677973366e38;
const INT32_MIN = -2147483648;
const UINT32_MAX = 4294967295;

/** How one instruction runs: a LOAD, the generic op, a binary op with a constant operand, or a fused one. */
const enum Mode {
  LOAD,
  GENERIC,
  /** `reg op constant` */
  RC,
  /** `constant op reg` */
  CR,
  /** `(x - y) / (x + y)`: a DIV or DIV_ZERO whose operands were a SUB and an ADD of the same two values, used only there. */
  ND,
}

interface Step {
  readonly mode: Mode;
  readonly ins: Instruction;
  /** RC/CR: the register operand. */
  readonly reg: number;
  /** RC/CR: the constant operand's value. */
  readonly c: number;
  /** ND: the registers of x and y. */
  readonly x: number;
  readonly y: number;
}

/** Binary ops with a fast path for one constant operand (same expression per pixel as the generic loop). */
const CONST_OPS: ReadonlySet<number> = new Set([Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.DIV_ZERO, Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE]);

/** Execution steps of a program, derived once per Program object (programs are immutable data). */
const stepsCache = new WeakMap<Program, readonly Step[]>();

function stepsOf(p: Program): readonly Step[] {
  let steps = stepsCache.get(p);
  if (steps === undefined) {
    steps = fuse(p, plainSteps(p)) ?? plainSteps(p);
    stepsCache.set(p, steps);
  }
  return steps;
}

function plainSteps(p: Program): Step[] {
  const constant = new Map<number, number>(p.constants.map(([r, v]) => [r, v]));
  return p.code.map((ins): Step => {
    if (ins.op === Op.LOAD) return { mode: Mode.LOAD, ins, reg: -1, c: 0, x: -1, y: -1 };
    if (CONST_OPS.has(ins.op) && ins.args.length === 2) {
      const [a, b] = ins.args as [number, number];
      const ca = constant.get(a);
      const cb = constant.get(b);
      // NaN constants keep the generic loop (its NaN checks look at both operands).
      if (cb !== undefined && ca === undefined && cb === cb) return { mode: Mode.RC, ins, reg: a, c: cb, x: -1, y: -1 };
      if (ca !== undefined && cb === undefined && ca === ca) return { mode: Mode.CR, ins, reg: b, c: ca, x: -1, y: -1 };
    }
    return { mode: Mode.GENERIC, ins, reg: -1, c: 0, x: -1, y: -1 };
  });
}

/**
 * Fuse normalised differences (`(x - y) / (x + y)`, NDVI and its kin) into one step, when the SUB
 * and the ADD feed only that division. Values are tracked by the instruction that wrote them (a
 * constant register by -1 - register); the fused program is accepted only if a simulation shows
 * every step reading exactly the values the original program read, and the outputs unchanged.
 * Returns undefined when nothing was fused (or the check failed).
 */
function fuse(p: Program, base: Step[]): Step[] | undefined {
  const code = p.code;
  const writer = new Int32Array(p.registers).fill(-1);
  const valueOf = (w: Int32Array, r: number): number => (w[r]! >= 0 ? w[r]! : -1 - r);
  const reads: number[][] = [];
  const consumers = new Int32Array(code.length);
  for (let i = 0; i < code.length; i++) {
    const ins = code[i]!;
    const vals = ins.op === Op.LOAD ? [] : ins.args.map((r) => valueOf(writer, r));
    for (const v of vals) if (v >= 0) consumers[v]!++;
    reads.push(vals);
    writer[ins.dst] = i;
  }
  const finals = p.outputs.map((r) => valueOf(writer, r));
  for (const v of finals) if (v >= 0) consumers[v]!++;

  const steps = base.slice();
  const expect = reads.slice();
  const dropped = new Uint8Array(code.length);
  let fused = false;
  for (let i = 0; i < code.length; i++) {
    const ins = code[i]!;
    if ((ins.op !== Op.DIV && ins.op !== Op.DIV_ZERO) || base[i]!.mode !== Mode.GENERIC) continue;
    const [vs, va] = reads[i] as [number, number];
    if (vs < 0 || va < 0 || code[vs]!.op !== Op.SUB || code[va]!.op !== Op.ADD) continue;
    if (consumers[vs] !== 1 || consumers[va] !== 1 || dropped[vs] || dropped[va]) continue;
    const [sx, sy] = reads[vs] as [number, number];
    const [ax, ay] = reads[va] as [number, number];
    if (!((ax === sx && ay === sy) || (ax === sy && ay === sx))) continue;
    const sub = code[vs]!;
    dropped[vs] = 1;
    dropped[va] = 1;
    steps[i] = { mode: Mode.ND, ins, reg: -1, c: 0, x: sub.args[0]!, y: sub.args[1]! };
    expect[i] = [sx, sy];
    fused = true;
  }
  if (!fused) return undefined;
  // Check: replay the kept steps and compare the values each one reads.
  const w = new Int32Array(p.registers).fill(-1);
  const kept: Step[] = [];
  for (let i = 0; i < code.length; i++) {
    if (dropped[i]) continue;
    const s = steps[i]!;
    const regs = s.mode === Mode.ND ? [s.x, s.y] : s.ins.op === Op.LOAD ? [] : s.ins.args;
    const want = expect[i]!;
    if (regs.length !== want.length || regs.some((r, k) => valueOf(w, r) !== want[k])) return undefined;
    w[s.ins.dst] = i;
    kept.push(s);
  }
  if (p.outputs.some((r, k) => valueOf(w, r) !== finals[k])) return undefined;
  return kept;
}

/** Registers reused across calls (runProgram is synchronous and never re-entered). */
const registerPool: Float64Array[] = [];

/** Run `p` over `out`'s pixels; output band k gets `p.outputs[k]`. */
export function runProgram(p: Program, sources: readonly (SlotSource | undefined)[], out: PixelBlock, strictMask = false): void {
  const m = out.mask;
  const n = m.length;
  const steps = stepsOf(p);
  // The wasm interpreter (src/wasm/local.ts) runs programs with one float output band whose ops it has.
  if (p.outputs.length === 1 && out.bands.length === 1 && n > 0) {
    const dst = out.bands[0]!;
    if ((dst instanceof Float32Array || dst instanceof Float64Array) && runViaWasm(p, steps, sources, dst, m, strictMask)) return;
  }
  while (registerPool.length < p.registers) registerPool.push(new Float64Array(CHUNK));
  const regs = registerPool;
  const size = Math.min(CHUNK, n);
  for (const [r, v] of p.constants) regs[r]!.fill(v, 0, size);
  const info = PIXEL_TYPE_INFO[out.pixelType];
  const float = !info.integer;
  const fill = float ? Number.NaN : 0;
  const lo = info.min;
  const hi = info.max;
  const bands = out.bands;
  const outputs = p.outputs;
  for (let start = 0; start < n; start += CHUNK) {
    const len = Math.min(CHUNK, n - start);
    for (let c = 0; c < steps.length; c++) {
      const s = steps[c]!;
      const ins = s.ins;
      switch (s.mode) {
        case Mode.LOAD: {
          const src = sources[ins.params[0]!]!;
          const d = regs[ins.dst]!;
          // Typed-array conversion (native) into the register; masked pixels become NaN unless the
          // strict mask makes them NoData anyway.
          d.set(src.plane.subarray(start, start + len));
          if (!strictMask && !maskAllValid(src.mask, start, len)) maskNaN(d, src.mask, start, len);
          break;
        }
        case Mode.RC:
          constRight(ins.op, regs[ins.dst]!, regs[s.reg]!, s.c, len);
          break;
        case Mode.CR:
          constLeft(ins.op, regs[ins.dst]!, s.c, regs[s.reg]!, len);
          break;
        case Mode.ND:
          normalizedDifference(regs[ins.dst]!, regs[s.x]!, regs[s.y]!, ins.op === Op.DIV ? Number.NaN : 0, len);
          break;
        default:
          execInstruction(ins, regs, len);
      }
    }
    if (strictMask) {
      for (const slot of p.slots) {
        const sm = sources[slot]!.mask;
        if (!maskAllValid(sm, start, len)) for (let j = start; j < start + len; j++) if (sm[j] === 0) m[j] = 0;
      }
    }
    for (let k = 0; k < outputs.length; k++) {
      const r = regs[outputs[k]!]!;
      const dst = bands[k]!;
      // Float bands: NoData where the value is not finite once stored (F32: |v| >= F32_INF).
      // One band: masked pixels are written NaN here, so the fill pass below finds nothing to do.
      if (dst instanceof Float32Array) storeFloat(dst, r, m, start, len, F32_INF, outputs.length === 1);
      else if (dst instanceof Float64Array) storeFloat(dst, r, m, start, len, Infinity, outputs.length === 1);
      else if (float) {
        for (let i = 0; i < len; i++) {
          const j = start + i;
          dst[j] = r[i]!;
          const s = dst[j];
          if (s - s !== 0) m[j] = 0;
        }
      } else {
        // Integer outputs (an integer outputPixelType on Local/RasterCalculator, or band copies):
        // round half up as the vendor client's Math.round; out of the type's range or NaN -> NoData
        // (spec §1.2 rule 2: Local does not clamp).
        for (let i = 0; i < len; i++) {
          const j = start + i;
          const v = Math.floor(r[i]! + 0.5);
          if (v >= lo && v <= hi) dst[j] = v;
          else m[j] = 0;
        }
      }
    }
    if (float && outputs.length === 1 && bands.length === 1 && (bands[0] instanceof Float32Array || bands[0] instanceof Float64Array))
      continue;
    // NoData pixels (any band invalid, or a strict input mask) hold NaN (float) or 0 in every band.
    if (!maskAllValid(m, start, len)) {
      for (let k = 0; k < bands.length; k++) {
        const dst = bands[k]!;
        for (let j = start; j < start + len; j++) if (m[j] === 0) dst[j] = fill;
      }
    }
  }
}

/** The steps as src/wasm/local.ts takes them (cached per program). */
const wasmSteps = new WeakMap<readonly Step[], readonly ExprStep[]>();

function runViaWasm(
  p: Program,
  steps: readonly Step[],
  sources: readonly (SlotSource | undefined)[],
  dst: Float32Array | Float64Array,
  m: Uint8Array,
  strictMask: boolean,
): boolean {
  let ws = wasmSteps.get(steps);
  if (ws === undefined) {
    ws = steps.map((s): ExprStep =>
      s.mode === Mode.ND
        ? { ...s.ins, nd: { x: s.x, y: s.y, zero: s.ins.op === Op.DIV ? 'nan' : 'zero' } }
        : { op: s.ins.op, dst: s.ins.dst, args: s.ins.args, params: s.ins.params },
    );
    wasmSteps.set(steps, ws);
  }
  const inf = dst instanceof Float32Array ? F32_INF : Infinity;
  return exprViaWasm(ws, p.registers, p.constants, p.outputs[0]!, sources, p.slots, strictMask, dst, m, inf);
}

function maskNaN(d: Float64Array, sm: Uint8Array, start: number, len: number): void {
  for (let i = 0; i < len; i++) if (sm[start + i] === 0) d[i] = Number.NaN;
}

/**
 * Store a float band: `dst[j] = r[i]`, NoData where the stored value is not finite, i.e. where
 * |r[i]| >= `inf` (the smallest float64 that rounds to Infinity in the band's type) or r[i] is NaN.
 * With `fill`, pixels already masked are written NaN too.
 */
function storeFloat(
  dst: Float32Array | Float64Array,
  r: Float64Array,
  m: Uint8Array,
  start: number,
  len: number,
  inf: number,
  fill: boolean,
): void {
  const lo = -inf;
  if (fill) {
    for (let i = 0; i < len; i++) {
      const j = start + i;
      const v = r[i]!;
      if (v > lo && v < inf && m[j] !== 0) dst[j] = v;
      else {
        m[j] = 0;
        dst[j] = Number.NaN;
      }
    }
  } else {
    for (let i = 0; i < len; i++) {
      const j = start + i;
      const v = r[i]!;
      dst[j] = v;
      if (!(v > lo && v < inf)) m[j] = 0;
    }
  }
}

/** `d = (x - y) / (x + y)`, `zero` where x + y is 0 (the DIV or DIV_ZERO policy). */
function normalizedDifference(d: Float64Array, x: Float64Array, y: Float64Array, zero: number, len: number): void {
  for (let i = 0; i < len; i++) {
    const a = x[i]!;
    const b = y[i]!;
    const s = a + b;
    d[i] = s === 0 ? zero : (a - b) / s;
  }
}

/** `d = a op c` for a constant c (not NaN): the generic loop's expression with b[i] = c. */
function constRight(op: number, d: Float64Array, a: Float64Array, c: number, len: number): void {
  switch (op) {
    case Op.ADD:
      for (let i = 0; i < len; i++) d[i] = a[i]! + c;
      return;
    case Op.SUB:
      for (let i = 0; i < len; i++) d[i] = a[i]! - c;
      return;
    case Op.MUL:
      for (let i = 0; i < len; i++) d[i] = a[i]! * c;
      return;
    case Op.DIV:
      if (c === 0) d.fill(Number.NaN, 0, len);
      else for (let i = 0; i < len; i++) d[i] = a[i]! / c;
      return;
    case Op.DIV_ZERO:
      if (c === 0) d.fill(0, 0, len);
      else for (let i = 0; i < len; i++) d[i] = a[i]! / c;
      return;
    case Op.EQ:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? Number.NaN : x === c ? 1 : 0;
      }
      return;
    case Op.NE:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? Number.NaN : x !== c ? 1 : 0;
      }
      return;
    case Op.LT:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? Number.NaN : x < c ? 1 : 0;
      }
      return;
    case Op.LE:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? Number.NaN : x <= c ? 1 : 0;
      }
      return;
    case Op.GT:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? Number.NaN : x > c ? 1 : 0;
      }
      return;
    default:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? Number.NaN : x >= c ? 1 : 0;
      }
      return; // GE
  }
}

/** `d = c op b` for a constant c (not NaN). */
function constLeft(op: number, d: Float64Array, c: number, b: Float64Array, len: number): void {
  switch (op) {
    case Op.ADD:
      for (let i = 0; i < len; i++) d[i] = c + b[i]!;
      return;
    case Op.SUB:
      for (let i = 0; i < len; i++) d[i] = c - b[i]!;
      return;
    case Op.MUL:
      for (let i = 0; i < len; i++) d[i] = c * b[i]!;
      return;
    case Op.DIV:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y === 0 ? Number.NaN : c / y;
      }
      return;
    case Op.DIV_ZERO:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y === 0 ? 0 : c / y;
      }
      return;
    case Op.EQ:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y !== y ? Number.NaN : c === y ? 1 : 0;
      }
      return;
    case Op.NE:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y !== y ? Number.NaN : c !== y ? 1 : 0;
      }
      return;
    case Op.LT:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y !== y ? Number.NaN : c < y ? 1 : 0;
      }
      return;
    case Op.LE:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y !== y ? Number.NaN : c <= y ? 1 : 0;
      }
      return;
    case Op.GT:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y !== y ? Number.NaN : c > y ? 1 : 0;
      }
      return;
    default:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y !== y ? Number.NaN : c >= y ? 1 : 0;
      }
      return; // GE
  }
}

/** A 32-bit integer operand of a bitwise op, or NaN (not an integer in [-2^31, 2^32-1] after truncation). */
function int32(x: number): number {
  const t = Math.trunc(x);
  return t >= INT32_MIN && t <= UINT32_MAX ? t : Number.NaN;
}

/** Execute one non-LOAD instruction over the first `len` pixels of its registers. */
export function execInstruction(ins: Instruction, regs: readonly Float64Array[], len: number): void {
  const d = regs[ins.dst]!;
  const a = regs[ins.args[0]!]!;
  const b = regs[ins.args[1]!]!;
  switch (ins.op) {
    case Op.NEG:
      for (let i = 0; i < len; i++) d[i] = -a[i]!;
      return;
    case Op.ABS:
      for (let i = 0; i < len; i++) d[i] = Math.abs(a[i]!);
      return;
    case Op.SQRT:
      for (let i = 0; i < len; i++) d[i] = Math.sqrt(a[i]!);
      return;
    case Op.SQUARE:
      for (let i = 0; i < len; i++) d[i] = a[i]! * a[i]!;
      return;
    case Op.EXP:
      for (let i = 0; i < len; i++) d[i] = Math.exp(a[i]!);
      return;
    case Op.EXP10:
      for (let i = 0; i < len; i++) d[i] = Math.pow(10, a[i]!);
      return;
    case Op.EXP2:
      for (let i = 0; i < len; i++) d[i] = Math.pow(2, a[i]!);
      return;
    // log of 0 is -Infinity (not finite: NoData anyway); of a negative, NaN. Both made NaN here so a
    // later op (1/Ln(0) = -0) cannot turn them into a valid value.
    case Op.LN:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x > 0 ? Math.log(x) : Number.NaN;
      }
      return;
    case Op.LOG10:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x > 0 ? Math.log10(x) : Number.NaN;
      }
      return;
    case Op.LOG2:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x > 0 ? Math.log2(x) : Number.NaN;
      }
      return;
    case Op.SIN:
      for (let i = 0; i < len; i++) d[i] = Math.sin(a[i]!);
      return;
    case Op.COS:
      for (let i = 0; i < len; i++) d[i] = Math.cos(a[i]!);
      return;
    case Op.TAN:
      for (let i = 0; i < len; i++) d[i] = Math.tan(a[i]!);
      return;
    case Op.ASIN:
      for (let i = 0; i < len; i++) d[i] = Math.asin(a[i]!);
      return;
    case Op.ACOS:
      for (let i = 0; i < len; i++) d[i] = Math.acos(a[i]!);
      return;
    case Op.ATAN:
      for (let i = 0; i < len; i++) d[i] = Math.atan(a[i]!);
      return;
    case Op.SINH:
      for (let i = 0; i < len; i++) d[i] = Math.sinh(a[i]!);
      return;
    case Op.COSH:
      for (let i = 0; i < len; i++) d[i] = Math.cosh(a[i]!);
      return;
    case Op.TANH:
      for (let i = 0; i < len; i++) d[i] = Math.tanh(a[i]!);
      return;
    case Op.ASINH:
      for (let i = 0; i < len; i++) d[i] = Math.asinh(a[i]!);
      return;
    case Op.ACOSH:
      for (let i = 0; i < len; i++) d[i] = Math.acosh(a[i]!);
      return;
    case Op.ATANH:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x > -1 && x < 1 ? Math.atanh(x) : Number.NaN;
      }
      return;
    case Op.INT:
      for (let i = 0; i < len; i++) d[i] = Math.trunc(a[i]!);
      return;
    case Op.FLOAT:
      for (let i = 0; i < len; i++) d[i] = a[i]!;
      return;
    case Op.FLOOR:
      for (let i = 0; i < len; i++) d[i] = Math.floor(a[i]!);
      return;
    case Op.CEIL:
      for (let i = 0; i < len; i++) d[i] = Math.ceil(a[i]!);
      return;
    case Op.BOOL_NOT:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? x : x === 0 ? 1 : 0;
      }
      return;
    case Op.BIT_NOT:
      for (let i = 0; i < len; i++) {
        const x = int32(a[i]!);
        d[i] = x !== x ? x : ~x;
      }
      return;
    case Op.IS_NULL:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? 1 : 0;
      }
      return;

    case Op.ADD:
      for (let i = 0; i < len; i++) d[i] = a[i]! + b[i]!;
      return;
    case Op.SUB:
      for (let i = 0; i < len; i++) d[i] = a[i]! - b[i]!;
      return;
    case Op.MUL:
      for (let i = 0; i < len; i++) d[i] = a[i]! * b[i]!;
      return;
    case Op.DIV:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y === 0 ? Number.NaN : a[i]! / y;
      }
      return;
    // The vendor client's BandArithmetic leaves pixels with a zero denominator at 0 (spec).
    case Op.DIV_ZERO:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y === 0 ? 0 : a[i]! / y;
      }
      return;
    case Op.FLOOR_DIV:
      for (let i = 0; i < len; i++) {
        const y = b[i]!;
        d[i] = y === 0 ? Number.NaN : Math.floor(a[i]! / y);
      }
      return;
    case Op.POW:
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        d[i] = x !== x ? x : Math.pow(x, b[i]!);
      }
      return;
    // Floating modulo with the sign of the dividend (the vendor client's `%`); x % 0 is NaN.
    case Op.MOD:
      for (let i = 0; i < len; i++) d[i] = (a[i]! % b[i]!) + 0;
      return;
    case Op.ATAN2:
      for (let i = 0; i < len; i++) d[i] = Math.atan2(a[i]!, b[i]!);
      return;
    case Op.EQ:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x === y ? 1 : 0;
      }
      return;
    case Op.NE:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x !== y ? 1 : 0;
      }
      return;
    case Op.LT:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x < y ? 1 : 0;
      }
      return;
    case Op.LE:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x <= y ? 1 : 0;
      }
      return;
    case Op.GT:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x > y ? 1 : 0;
      }
      return;
    case Op.GE:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x >= y ? 1 : 0;
      }
      return;
    case Op.BOOL_AND:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x !== 0 && y !== 0 ? 1 : 0;
      }
      return;
    case Op.BOOL_OR:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : x !== 0 || y !== 0 ? 1 : 0;
      }
      return;
    case Op.BOOL_XOR:
      for (let i = 0; i < len; i++) {
        const x = a[i]!,
          y = b[i]!;
        d[i] = x !== x || y !== y ? Number.NaN : (x !== 0) !== (y !== 0) ? 1 : 0;
      }
      return;
    case Op.BIT_AND:
    case Op.BIT_OR:
    case Op.BIT_XOR:
    case Op.BIT_SHL:
    case Op.BIT_SHR:
      bitwise(ins.op, d, a, b, len);
      return;

    case Op.CON:
      if (ins.args.length === 2) {
        for (let i = 0; i < len; i++) {
          const c = a[i]!;
          d[i] = c !== c || c === 0 ? Number.NaN : b[i]!;
        }
      } else {
        const f = regs[ins.args[2]!]!;
        for (let i = 0; i < len; i++) {
          const c = a[i]!;
          d[i] = c !== c ? c : c !== 0 ? b[i]! : f[i]!;
        }
      }
      return;
    case Op.SET_NULL:
      for (let i = 0; i < len; i++) {
        const c = a[i]!;
        d[i] = c !== c || c !== 0 ? Number.NaN : b[i]!;
      }
      return;
    case Op.PICK: {
      const A = ins.args.map((r) => regs[r]!);
      const k = A.length - 1;
      for (let i = 0; i < len; i++) {
        const pos = Math.trunc(a[i]!);
        d[i] = pos >= 1 && pos <= k ? A[pos]![i]! : Number.NaN;
      }
      return;
    }
    default:
      if (!fastStatistic(ins, regs, len)) statistic(ins, regs, len);
  }
}

/**
 * Sum, Mean, Max and Min (with or without IgnoreNoData) operand by operand over the chunk, in the
 * same order and with the same arithmetic as `statistic` (the sum starts at 0 and adds operands
 * in order; Max/Min keep the first of equal values; any NaN operand gives NaN unless ignored).
 * Returns false for the other statistics.
 */
function fastStatistic(ins: Instruction, regs: readonly Float64Array[], len: number): boolean {
  const op = ins.op;
  if (op !== Op.SUM && op !== Op.MEAN && op !== Op.MAX && op !== Op.MIN) return false;
  // The result is accumulated in a scratch array (the destination may be one of the operands).
  const d = scratch(0, len);
  statisticInto(op, d, ins.args, ins.params[0] === 1, regs, len);
  regs[ins.dst]!.set(d.subarray(0, len));
  return true;
}

function statisticInto(
  op: number,
  d: Float64Array,
  args: readonly number[],
  ignore: boolean,
  regs: readonly Float64Array[],
  len: number,
): void {
  const k = args.length;
  if (op === Op.SUM || op === Op.MEAN) {
    if (!ignore) {
      const a0 = regs[args[0]!]!;
      for (let i = 0; i < len; i++) d[i] = 0 + a0[i]!;
      for (let j = 1; j < k; j++) {
        const a = regs[args[j]!]!;
        for (let i = 0; i < len; i++) d[i] = d[i]! + a[i]!;
      }
      if (op === Op.MEAN) for (let i = 0; i < len; i++) d[i] = d[i]! / k;
      return;
    }
    const cnt = scratch(1, len);
    d.fill(0, 0, len);
    cnt.fill(0, 0, len);
    for (let j = 0; j < k; j++) {
      const a = regs[args[j]!]!;
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        if (x === x) {
          d[i] = d[i]! + x;
          cnt[i] = cnt[i]! + 1;
        }
      }
    }
    for (let i = 0; i < len; i++) {
      const c = cnt[i]!;
      d[i] = c === 0 ? Number.NaN : op === Op.MEAN ? d[i]! / c : d[i]!;
    }
    return;
  }
  const max = op === Op.MAX;
  const a0 = regs[args[0]!]!;
  for (let i = 0; i < len; i++) d[i] = a0[i]!;
  for (let j = 1; j < k; j++) {
    const a = regs[args[j]!]!;
    if (!ignore) {
      // A NaN operand makes (and keeps) the result NaN.
      if (max)
        for (let i = 0; i < len; i++) {
          const x = a[i]!;
          if (x > d[i]! || x !== x) d[i] = x;
        }
      else
        for (let i = 0; i < len; i++) {
          const x = a[i]!;
          if (x < d[i]! || x !== x) d[i] = x;
        }
    } else if (max) {
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        const r = d[i]!;
        if (x === x && (r !== r || x > r)) d[i] = x;
      }
    } else {
      for (let i = 0; i < len; i++) {
        const x = a[i]!;
        const r = d[i]!;
        if (x === x && (r !== r || x < r)) d[i] = x;
      }
    }
  }
}

const scratchArrays = [new Float64Array(CHUNK), new Float64Array(CHUNK)];
function scratch(k: 0 | 1, len: number): Float64Array {
  if (scratchArrays[k]!.length < len) scratchArrays[k] = new Float64Array(len);
  return scratchArrays[k]!;
}

function bitwise(op: number, d: Float64Array, a: Float64Array, b: Float64Array, len: number): void {
  for (let i = 0; i < len; i++) {
    const x = int32(a[i]!);
    const y = int32(b[i]!);
    if (x !== x || y !== y) {
      d[i] = Number.NaN;
      continue;
    }
    const unsigned = x >= 0 && y >= 0;
    let r: number;
    switch (op) {
      case Op.BIT_AND:
        r = unsigned ? (x & y) >>> 0 : x & y;
        break;
      case Op.BIT_OR:
        r = unsigned ? (x | y) >>> 0 : x | y;
        break;
      case Op.BIT_XOR:
        r = unsigned ? (x ^ y) >>> 0 : x ^ y;
        break;
      // Shift counts outside 0..31 have no 32-bit meaning: NoData.
      case Op.BIT_SHL:
        r = y <= 31 ? (x >= 0 ? (x << y) >>> 0 : x << y) : Number.NaN;
        break;
      default:
        r = y <= 31 ? (x >= 0 ? x >>> y : x >> y) : Number.NaN;
    }
    d[i] = r;
  }
}

/**
 * Cell statistics over the operands at each pixel. Without IgnoreNoData a NoData operand makes
 * the pixel NoData; with it, NoData operands are left out and the pixel is NoData only when all are.
 */
function statistic(ins: Instruction, regs: readonly Float64Array[], len: number): void {
  const d = regs[ins.dst]!;
  const A = ins.args.map((r) => regs[r]!);
  const k = A.length;
  const ignore = ins.params[0] === 1;
  const v = new Float64Array(k);
  const counts = new Int32Array(k);
  const op = ins.op;
  for (let i = 0; i < len; i++) {
    let m = 0;
    let bad = false;
    for (let j = 0; j < k; j++) {
      const x = A[j]![i]!;
      if (x !== x) {
        if (!ignore) {
          bad = true;
          break;
        }
        continue;
      }
      v[m++] = x;
    }
    if (bad || m === 0) {
      d[i] = Number.NaN;
      continue;
    }
    let r = 0;
    switch (op) {
      case Op.MAX:
        r = v[0]!;
        for (let j = 1; j < m; j++) if (v[j]! > r) r = v[j]!;
        break;
      case Op.MIN:
        r = v[0]!;
        for (let j = 1; j < m; j++) if (v[j]! < r) r = v[j]!;
        break;
      case Op.SUM:
        for (let j = 0; j < m; j++) r += v[j]!;
        break;
      case Op.MEAN:
        for (let j = 0; j < m; j++) r += v[j]!;
        r /= m;
        break;
      case Op.RANGE: {
        let lo = v[0]!,
          hi = v[0]!;
        for (let j = 1; j < m; j++) {
          const x = v[j]!;
          if (x < lo) lo = x;
          if (x > hi) hi = x;
        }
        r = hi - lo;
        break;
      }
      case Op.STD: {
        let s = 0;
        for (let j = 0; j < m; j++) s += v[j]!;
        const mean = s / m;
        let q = 0;
        for (let j = 0; j < m; j++) {
          const e = v[j]! - mean;
          q += e * e;
        }
        r = Math.sqrt(q / m); // population standard deviation (divide by n), as the spec says
        break;
      }
      case Op.MEDIAN:
        sortPrefix(v, m);
        r = m % 2 === 1 ? v[(m - 1) / 2]! : (v[m / 2 - 1]! + v[m / 2]!) / 2;
        break;
      case Op.PERCENTILE: {
        sortPrefix(v, m);
        const pos = (ins.params[1]! / 100) * (m - 1);
        if (ins.params[2] === 1) {
          const lo = Math.floor(pos);
          const hi = Math.min(lo + 1, m - 1);
          r = v[lo]! + (pos - lo) * (v[hi]! - v[lo]!);
        } else {
          r = v[Math.round(pos)]!;
        }
        break;
      }
      case Op.VARIETY: {
        for (let j = 0; j < m; j++) {
          let dup = false;
          for (let q = 0; q < j; q++)
            if (v[q] === v[j]) {
              dup = true;
              break;
            }
          if (!dup) r++;
        }
        break;
      }
      case Op.MAJORITY:
      case Op.MINORITY:
        r = mode(v, counts, m, op === Op.MAJORITY);
        break;
      default:
        r = Number.NaN;
    }
    d[i] = r;
  }
}

/**
 * Majority (most frequent) or minority (least frequent) of v[0..m). Majority ties: the value that
 * first reaches the top count scanning in input order; minority ties: the first value (by first
 * appearance) with the lowest count. Two values that differ have no majority or minority: NaN
 * (the vendor client's two-input rule).
 */
function mode(v: Float64Array, counts: Int32Array, m: number, majority: boolean): number {
  if (m === 2) return v[0] === v[1] ? v[0]! : Number.NaN;
  if (majority) {
    let best = v[0]!;
    let top = 0;
    for (let j = 0; j < m; j++) {
      let c = 1;
      for (let q = 0; q < j; q++) if (v[q] === v[j]) c++;
      if (c > top) {
        top = c;
        best = v[j]!;
      }
    }
    return best;
  }
  // counts[j]: occurrences of v[j] when j is its first appearance, else 0.
  for (let j = 0; j < m; j++) {
    let first = true;
    for (let q = 0; q < j; q++)
      if (v[q] === v[j]) {
        first = false;
        break;
      }
    if (!first) {
      counts[j] = 0;
      continue;
    }
    let c = 0;
    for (let q = j; q < m; q++) if (v[q] === v[j]) c++;
    counts[j] = c;
  }
  let best = Number.NaN;
  let low = Infinity;
  for (let j = 0; j < m; j++) {
    const c = counts[j]!;
    if (c > 0 && c < low) {
      low = c;
      best = v[j]!;
    }
  }
  return best;
}

/** Insertion sort of v[0..m) (m is the operand count: small). */
function sortPrefix(v: Float64Array, m: number): void {
  for (let j = 1; j < m; j++) {
    const x = v[j]!;
    let q = j - 1;
    while (q >= 0 && v[q]! > x) {
      v[q + 1] = v[q]!;
      q--;
    }
    v[q + 1] = x;
  }
}

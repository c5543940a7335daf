/**
 * The per-pixel functions' wasm path (wasm/local.ts): NDVI, Arithmetic (plus, minus, multiply,
 * divide), the expression engine's register programs, the linear Stretch and the engine's cast.
 * The TypeScript kernels stay the dispatchers and the references: each calls its `...ViaWasm`
 * here first, which answers false (nothing written) when wasm is off (`wasmKernels()` undefined),
 * the case is not one the wasm kernels take, or memory is out; the TypeScript loop then runs.
 * When it answers true, the outputs are bit for bit what the TypeScript loop writes (the kernels
 * compute in f64 lanes with the same IEEE operations in the same order, or in f32x4 lanes where
 * wasm/local.ts states why the bits are the same). The expression engine's programs that are one
 * normalised difference of two bands (NDVI written as an expression) run as one fused pass.
 *
 * Planes are bound through `WasmCall` (planes.ts): used in place when they live in wasm memory,
 * else copied in (inputs), out (outputs) or both (masks and outputs the kernel updates in place).
 */
import type { Plane } from '../core/pixel-type.js';
import { type Kernels, wasmKernels } from './module.js';
import { residentAddress, typeCode, WasmCall } from './planes.js';

/** The exports of wasm/local.ts (plain functions; pointers are byte addresses in the module's memory). */
export interface LocalExports {
  readonly localNdvi: (type: number, mode: number, ir: number, vis: number, sm: number, dst: number, m: number, n: number) => void;
  readonly localArith: (
    op: number,
    type: number,
    shape: number,
    a: number,
    ca: number,
    b: number,
    cb: number,
    f64out: number,
    dst: number,
    m: number,
    sa: number,
    sb: number,
    n: number,
  ) => void;
  readonly localArithF32: (
    op: number,
    type: number,
    shape: number,
    a: number,
    ca: number,
    b: number,
    cb: number,
    dst: number,
    m: number,
    sa: number,
    sb: number,
    n: number,
  ) => void;
  readonly localMaskAnd: (m: number, src: number, n: number) => void;
  readonly localFillNaN: (f64out: number, dst: number, m: number, n: number) => void;
  readonly localCast: (from: number, to: number, src: number, dst: number, m: number, n: number, lo: number, hi: number) => void;
  readonly localStretchLinear: (from: number, to: number, src: number, dst: number, m: number, n: number, k: number) => void;
  readonly localExprRun: (
    prog: number,
    steps: number,
    regs: number,
    slots: number,
    strict: number,
    strictMasks: number,
    nStrict: number,
    out: number,
    f64out: number,
    dst: number,
    m: number,
    n: number,
    inf: number,
  ) => void;
  readonly localExprNd: (
    type: number,
    zeroNaN: number,
    xp: number,
    xm: number,
    yp: number,
    ym: number,
    f64out: number,
    dst: number,
    m: number,
    n: number,
    inf: number,
  ) => void;
}

let calls = 0;
/** How many calls ran in wasm in this thread (tests check that the path they meant ran). */
export const localWasmCallCount = (): number => calls;
let fusedNd = 0;
/** How many expression programs ran as the fused normalised difference (localExprNd) in this thread. */
export const localFusedNdCount = (): number => fusedNd;

const exportsOf = (k: Kernels): LocalExports => k.exports as unknown as LocalExports;

/** Bind a plane the kernel reads and writes: its address, with its current contents. */
function inout(k: Kernels, call: WasmCall, plane: Plane): number | undefined {
  const ptr = call.output(plane);
  if (ptr !== undefined && residentAddress(k, plane) === undefined) call.view(plane, ptr, plane.length).set(plane as never);
  return ptr;
}

/** Run `body` with a WasmCall; false (blocks given back) when it answers false or throws. */
function withCall(body: (k: Kernels, call: WasmCall, x: LocalExports) => boolean): boolean {
  const k = wasmKernels();
  if (k === undefined) return false;
  const call = new WasmCall(k);
  let done = false;
  try {
    if (!body(k, call, exportsOf(k))) return false;
    call.finish();
    done = true;
    calls++;
    return true;
  } finally {
    if (!done) call.release();
  }
}

// ---- NDVI.

/** NDVI output forms: scientific F32, scaled 100 + 100*NDVI into F32 or F64, scaled U8. */
export type NdviForm = 'scientific' | 'scaledFloat' | 'scaledU8';

/** ndvi.ts's three loops in one call: false when not taken (the bands' types differ, an unexpected output array). */
export function ndviViaWasm(form: NdviForm, ir: Plane, vis: Plane, sm: Uint8Array, dst: Plane, m: Uint8Array): boolean {
  const type = typeCode(ir);
  if (type === undefined || typeCode(vis) !== type) return false;
  const mode =
    form === 'scientific'
      ? dst instanceof Float32Array
        ? 0
        : -1
      : form === 'scaledU8'
        ? dst instanceof Uint8Array
          ? 3
          : -1
        : dst instanceof Float32Array
          ? 1
          : dst instanceof Float64Array
            ? 2
            : -1;
  if (mode < 0) return false;
  return withCall((k, call, x) => {
    const pi = call.input(ir);
    const pv = vis === ir ? pi : call.input(vis);
    const ps = call.input(sm);
    const pd = call.output(dst);
    const pm = inout(k, call, m);
    if (pi === undefined || pv === undefined || ps === undefined || pd === undefined || pm === undefined) return false;
    x.localNdvi(type, mode, pi, pv, ps, pd, pm, m.length);
    return true;
  });
}

// ---- Arithmetic.

/** Whether v is an F32 value (NaN included). */
const isF32 = (v: number): boolean => Object.is(Math.fround(v), v) || v !== v;

/** One operand of one band: a plane or a constant. */
export type ArithOperand = { readonly plane: Plane } | { readonly value: number };

/**
 * Arithmetic (operation 1..4) over every band, as arithmetic.ts's kernel: `m` becomes the AND of
 * itself and the raster operands' `masks`, then NoData where a band's stored value is not finite.
 * Taken when every raster operand plane has one element type and the outputs are F32 or F64.
 */
export function arithmeticViaWasm(
  op: number,
  bands: readonly (readonly [ArithOperand, ArithOperand])[],
  masks: readonly Uint8Array[],
  dsts: readonly Plane[],
  m: Uint8Array,
): boolean {
  if (op < 1 || op > 4 || bands.length === 0) return false;
  let type: number | undefined;
  for (const pair of bands) {
    if ('value' in pair[0] && 'value' in pair[1]) return false;
    for (const o of pair) {
      if (!('plane' in o)) continue;
      const t = typeCode(o.plane);
      if (t === undefined || (type !== undefined && t !== type)) return false;
      type = t;
    }
  }
  const f64out = dsts[0] instanceof Float64Array ? 1 : 0;
  if (!dsts.every((d) => (f64out ? d instanceof Float64Array : d instanceof Float32Array))) return false;
  if (masks.length > 2) return false;
  const t = type!;
  return withCall((k, call, x) => {
    const pm = inout(k, call, m);
    if (pm === undefined) return false;
    // Plain loops, no per-call maps or closures: a render calls this once per 256 x 256 tile.
    const sa = masks.length > 0 ? call.input(masks[0]!) : pm;
    const sb = masks.length > 1 ? (masks[1] === masks[0] ? sa : call.input(masks[1]!)) : pm;
    if (sa === undefined || sb === undefined) return false;
    const n = m.length;
    const nb = bands.length;
    // Every plane bound before any kernel runs: a plane out of memory leaves the outputs untouched.
    // Per band: [shape, a, b, dst].
    const words: number[] = [];
    let lastPlane: Plane | undefined;
    let lastPtr = 0;
    const bind = (o: ArithOperand): number | undefined => {
      if (!('plane' in o)) return 0;
      if (o.plane !== lastPlane) {
        const ptr = call.input(o.plane);
        if (ptr === undefined) return undefined;
        lastPlane = o.plane;
        lastPtr = ptr;
      }
      return lastPtr;
    };
    for (let b = 0; b < nb; b++) {
      const pair = bands[b]!;
      const a = bind(pair[0]);
      const bb = bind(pair[1]);
      const dst = call.output(dsts[b]!);
      if (a === undefined || bb === undefined || dst === undefined) return false;
      words.push('value' in pair[1] ? 1 : 'value' in pair[0] ? 2 : 0, a, bb, dst);
    }
    for (let b = 0; b < nb; b++) {
      const pair = bands[b]!;
      const oa = pair[0];
      const ob = pair[1];
      const ca = 'value' in oa ? oa.value : 0;
      const cb = 'value' in ob ? ob.value : 0;
      const shape = words[4 * b]!;
      const a = words[4 * b + 1]!;
      const bb = words[4 * b + 2]!;
      const dst = words[4 * b + 3]!;
      // The first band's pass ANDs the operands' masks into m (m itself stands for a missing one).
      const ma = b === 0 ? sa : pm;
      const mb = b === 0 ? sb : pm;
      // F32 outputs of F32 values (F32, 8- and 16-bit planes, constants that are F32 values): f32x4 lanes.
      if (f64out === 0 && (t <= 3 || t === 6) && isF32(ca) && isF32(cb)) x.localArithF32(op, t, shape, a, ca, bb, cb, dst, pm, ma, mb, n);
      else x.localArith(op, t, shape, a, ca, bb, cb, f64out, dst, pm, ma, mb, n);
    }
    // Pixels a later band made NoData hold NaN in the earlier bands too.
    for (let b = 0; b + 1 < nb; b++) x.localFillNaN(f64out, words[4 * b + 3]!, pm, n);
    return true;
  });
}

// ---- The engine's cast.

/**
 * castPlane's (src/graph/cast.ts) real-to-real loops: `src` (element type of its array) into `dst` (a fresh zeroed
 * plane of the target's array type) with the target range [lo, hi] (integer targets); NaN -> mask 0.
 */
export function castViaWasm(src: Plane, dst: Plane, mask: Uint8Array, lo: number, hi: number): boolean {
  const from = typeCode(src);
  const to = typeCode(dst);
  if (from === undefined || to === undefined || src.length !== mask.length || dst.length !== mask.length) return false;
  return withCall((k, call, x) => {
    const ps = call.input(src);
    const pd = call.output(dst);
    const pm = inout(k, call, mask);
    if (ps === undefined || pd === undefined || pm === undefined) return false;
    x.localCast(from, to, ps, pd, pm, mask.length, lo, hi);
    return true;
  });
}

// ---- Stretch.

/**
 * stretch.ts's linear mapping of one band of float or 32-bit integer pixels (linearFloat): the
 * cut-offs lo, hi, the output range outMin..outMax, integer targets rounded half up and saturated
 * at [tlo, thi]. NaN pixels: mask 0, output left as it was.
 */
export function stretchLinearViaWasm(
  s: Plane,
  d: Plane,
  mask: Uint8Array,
  lo: number,
  hi: number,
  outMin: number,
  outMax: number,
  round: boolean,
  tlo: number,
  thi: number,
): boolean {
  const from = typeCode(s);
  const to = typeCode(d);
  if (from === undefined || from < 4 || to === undefined || round === to >= 6) return false;
  const n = mask.length;
  if (s.length < n || d.length < n) return false;
  const sat = (v: number): number => (round ? Math.min(thi, Math.max(tlo, Math.floor(v + 0.5))) : v);
  return withCall((k, call, x) => {
    const kp = call.constants([lo, hi, hi - lo, outMin, outMax - outMin, sat(outMax), sat(outMin), tlo, thi]);
    const ps = call.input(s);
    const pd = inout(k, call, d);
    const pm = inout(k, call, mask);
    if (kp === undefined || ps === undefined || pd === undefined || pm === undefined) return false;
    x.localStretchLinear(from, to, ps, pd, pm, n, kp);
    return true;
  });
}

// ---- The expression engine.

/** Pixels per chunk of the wasm interpreter (wasm/local.ts LOCAL_EXPR_CHUNK). */
const CHUNK = 1024;

/** One step of a program as evaluate.ts runs it: an instruction, or a fused normalised difference of registers x and y. */
export interface ExprStep {
  readonly op: number;
  readonly dst: number;
  readonly args: readonly number[];
  readonly params: readonly number[];
  /** The fused `(x - y) / (x + y)`: its registers, and the zero-denominator policy (NaN or 0). */
  readonly nd?: { readonly x: number; readonly y: number; readonly zero: 'nan' | 'zero' };
}

/** Ops the wasm interpreter runs (the same expressions as evaluate.ts); others keep the TypeScript path. */
const EXPR_OPS: ReadonlySet<number> = new Set([
  1, 10, 11, 12, 13, 32, 33, 34, 35, 36, 38, 50, 51, 52, 53, 54, 55, 60, 61, 62, 63, 64, 65, 70, 71, 72, 90, 91,
]);

/** The program's steps as the interpreter's words [op, dst, a, b, c]; undefined when a step is not supported. */
function encode(steps: readonly ExprStep[]): Int32Array | undefined {
  const words = new Int32Array(5 * steps.length);
  for (let s = 0; s < steps.length; s++) {
    const st = steps[s]!;
    let op = st.op;
    let a: number;
    let b: number;
    let c: number;
    if (st.nd !== undefined) {
      op = st.nd.zero === 'nan' ? 200 : 201;
      a = st.nd.x;
      b = st.nd.y;
      c = a;
    } else {
      if (!EXPR_OPS.has(op)) return undefined;
      if (op === 1) {
        a = st.params[0]!;
        b = c = 0;
      } else {
        const args = st.args;
        if (op === 90 && args.length === 2) op = 1090;
        else if (args.length !== (op < 50 ? 1 : op === 90 ? 3 : 2)) return undefined;
        a = args[0]!;
        b = args[1] ?? a;
        c = args[2] ?? a;
      }
    }
    words.set([op, st.dst, a, b, c], 5 * s);
  }
  return words;
}

/**
 * The slots of x and y when the program is exactly one or two LOADs and a fused normalised
 * difference of loaded registers into the output register (NDVI and its kin): localExprNd runs it in one
 * pass; undefined for any other program.
 */
function ndShape(steps: readonly ExprStep[], output: number): { x: number; y: number; zeroNaN: boolean } | undefined {
  if (steps.length !== 2 && steps.length !== 3) return undefined;
  const st = steps[steps.length - 1]!;
  const loads = steps.slice(0, -1);
  if (st.nd === undefined || st.dst !== output || loads.some((l) => l.op !== 1 || l.nd !== undefined)) return undefined;
  // The slot each register holds after the loads (a later load wins a shared register).
  const slotOf = (r: number): number | undefined => loads.findLast((l) => l.dst === r)?.params[0];
  const x = slotOf(st.nd.x);
  const y = slotOf(st.nd.y);
  if (x === undefined || y === undefined) return undefined;
  return { x, y, zeroNaN: st.nd.zero === 'nan' };
}

/**
 * Run a compiled program's steps over `n` pixels into one float band (evaluate.ts runProgram with
 * one output and one F32/F64 band); `inf` is the band's storeFloat bound. False when not taken.
 */
export function exprViaWasm(
  steps: readonly ExprStep[],
  registers: number,
  constants: readonly (readonly [number, number])[],
  output: number,
  sources: readonly ({ readonly plane: Plane; readonly mask: Uint8Array } | undefined)[],
  slots: readonly number[],
  strict: boolean,
  dst: Plane,
  m: Uint8Array,
  inf: number,
): boolean {
  const f64out = dst instanceof Float64Array ? 1 : dst instanceof Float32Array ? 0 : -1;
  if (f64out < 0) return false;
  const nd = ndShape(steps, output);
  if (nd !== undefined) {
    const x = sources[nd.x];
    const y = sources[nd.y];
    const type = x === undefined ? undefined : typeCode(x.plane);
    const n = m.length;
    if (x !== undefined && y !== undefined && type !== undefined && typeCode(y.plane) === type) {
      if (x.plane.length >= n && y.plane.length >= n && x.mask.length >= n && y.mask.length >= n) {
        // The masks clear the output as LOAD's NaN (or the strict mask) would: the same outcome for ND.
        return withCall((k, call, e) => {
          const xp = call.input(x.plane);
          const xm = call.input(x.mask);
          const yp = y.plane === x.plane ? xp : call.input(y.plane);
          const ym = y.mask === x.mask ? xm : call.input(y.mask);
          const pd = call.output(dst);
          const pm = inout(k, call, m);
          if (xp === undefined || xm === undefined || yp === undefined || ym === undefined || pd === undefined || pm === undefined)
            return false;
          e.localExprNd(type, nd.zeroNaN ? 1 : 0, xp, xm, yp, ym, f64out, pd, pm, n, inf);
          fusedNd++;
          return true;
        });
      }
    }
  }
  const prog = encode(steps);
  if (prog === undefined) return false;
  const n = m.length;
  return withCall((k, call, x) => {
    // Slots: [type, plane, mask] for every slot the steps load.
    const slotCount = sources.length;
    const slotWords = new Int32Array(3 * Math.max(1, slotCount));
    // Bands of one block share its mask: each plane is bound once.
    const bound = new Map<ArrayBufferView, number | undefined>();
    const bind = (p: Plane): number | undefined => {
      if (!bound.has(p)) bound.set(p, call.input(p));
      return bound.get(p);
    };
    for (const s of slots) {
      const src = sources[s];
      if (src === undefined) return false;
      const t = typeCode(src.plane);
      if (t === undefined || src.plane.length < n || src.mask.length < n) return false;
      const pp = bind(src.plane);
      const pmk = bind(src.mask);
      if (pp === undefined || pmk === undefined) return false;
      slotWords.set([t, pp, pmk], 3 * s);
    }
    const strictWords = Int32Array.from(slots, (s) => slotWords[3 * s + 2]!);
    const pProg = call.scratch(prog.byteLength);
    const pSlots = call.scratch(slotWords.byteLength);
    const pStrict = call.scratch(Math.max(4, strictWords.byteLength));
    const pRegs = call.scratch(8 * CHUNK * Math.max(1, registers));
    const pd = call.output(dst);
    const pm = inout(k, call, m);
    if (pProg === undefined || pSlots === undefined || pStrict === undefined || pRegs === undefined || pd === undefined || pm === undefined)
      return false;
    call.view(prog, pProg, prog.length).set(prog);
    call.view(slotWords, pSlots, slotWords.length).set(slotWords);
    call.view(strictWords, pStrict, strictWords.length).set(strictWords);
    const regs = call.view(new Float64Array(0), pRegs, CHUNK * Math.max(1, registers));
    for (const [r, v] of constants) regs.fill(v, r * CHUNK, (r + 1) * CHUNK);
    x.localExprRun(pProg, steps.length, pRegs, pSlots, strict ? 1 : 0, pStrict, strictWords.length, output, f64out, pd, pm, n, inf);
    return true;
  });
}

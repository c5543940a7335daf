/**
 * The focal functions' wasm path (Convolution; Statistics Mean, StandardDeviation, Min, Max over
 * 3x3 windows): the TypeScript kernels stay the dispatchers and the references. A kernel binds one
 * band with `FocalBand.bind` (its F32 values plane and F32 output plane, plus f64 constants and a
 * scratch block) and calls the row functions of wasm/focal.ts for each row's interior span; it
 * computes every other pixel (mirrored edges, NoData neighbours, NaN results) in TypeScript, into
 * `view`. Precision: wasm/focal.ts's header (Statistics bit for bit; Convolution in f32 lanes
 * within a stated bound).
 *
 * Supported: F32 values and an F32 output plane; anything else (and wasm off, or memory out)
 * answers undefined and the caller runs its TypeScript loop.
 *
 * Memory: the planes are bound through a `WasmCall` (planes.ts): used where they are when they live
 * in wasm memory, else copied in (values) and out (the output) through the arena's blocks.
 */
import type { Plane } from '../core/pixel-type.js';
import { wasmKernels } from './module.js';
import { WasmCall } from './planes.js';

/** Row functions of wasm/focal.ts: byte addresses, `n` output pixels, `stride` input row bytes; each answers its NaN count. */
export interface FocalExports {
  focalConv3F32(src: number, dst: number, n: number, stride: number, w: number): number;
  focalConv5F32(src: number, dst: number, n: number, stride: number, w: number): number;
  focalConvTapsF32(src: number, dst: number, n: number, off: number, w: number, taps: number): number;
  focalSep3F32(src: number, dst: number, n: number, stride: number, col: number, row: number): number;
  focalSepF32(src: number, dst: number, n: number, stride: number, tmp: number, col: number, kh: number, row: number, kw: number): number;
  focalMean3F32(src: number, dst: number, n: number, stride: number, ry: number, cols: number): number;
  focalStd3F32(src: number, dst: number, n: number, stride: number, ry: number, cols: number, exact: number, cancellation: number): number;
  focalMin3F32(src: number, dst: number, n: number, stride: number): number;
  focalMax3F32(src: number, dst: number, n: number, stride: number): number;
}

let calls = 0;
/** How many band calls ran in wasm in this thread (tests check the path they meant ran). */
export const focalWasmCallCount = (): number => calls;

/**
 * One band of one kernel call bound in wasm memory. Element indices (not bytes) in the row
 * methods: `i0` into the values plane, `d0` into the output plane; `inW` the values' row length.
 */
export class FocalBand {
  /** The output plane's pixels while the call runs (write edge and fixed-up pixels here). */
  readonly view: Float32Array;
  readonly fx: FocalExports;
  private readonly call: WasmCall;
  private readonly src: number;
  private readonly dst: number;
  /** Addresses of the constant blocks, in the order given to `bind`. */
  readonly constants: readonly number[];
  /** The scratch block's address (0 when none was asked for). */
  readonly scratch: number;

  private constructor(
    fx: FocalExports,
    call: WasmCall,
    src: number,
    dst: number,
    constants: number[],
    scratch: number,
    view: Float32Array,
  ) {
    this.fx = fx;
    this.call = call;
    this.src = src;
    this.dst = dst;
    this.constants = constants;
    this.scratch = scratch;
    this.view = view;
  }

  /** Whether the wasm kernels are on in this thread (a kernel checks before preparing anything for them). */
  static available(): boolean {
    return wasmKernels() !== undefined;
  }

  /**
   * Bind `values` (read) and `out` (written) with f64 `constants` blocks and `scratchBytes` of
   * scratch; undefined when wasm is off, a plane is not F32, or memory is out (nothing bound).
   */
  static bind(values: Plane, out: Plane, constants: readonly (readonly number[])[] = [], scratchBytes = 0): FocalBand | undefined {
    const k = wasmKernels();
    if (k === undefined || !(values instanceof Float32Array) || !(out instanceof Float32Array)) return undefined;
    const call = new WasmCall(k);
    let ok = false;
    try {
      const ptrs: number[] = [];
      for (const c of constants) {
        const p = call.constants(c);
        if (p === undefined) return undefined;
        ptrs.push(p);
      }
      const scratch = scratchBytes > 0 ? call.scratch(scratchBytes) : 0;
      const src = call.input(values);
      const dst = call.output(out);
      if (scratch === undefined || src === undefined || dst === undefined) return undefined;
      // The view after the call's last allocation (growing the memory detaches earlier views).
      const view = call.view(out, dst, out.length);
      ok = true;
      return new FocalBand(k.exports as unknown as FocalExports, call, src, dst, ptrs, scratch, view);
    } finally {
      if (!ok) call.release();
    }
  }

  /** Byte address of values element `i`. */
  at(i: number): number {
    return this.src + 4 * i;
  }

  /** Byte address of output element `i`. */
  out(i: number): number {
    return this.dst + 4 * i;
  }

  /** The output is complete: copy it to its plane (when it was not computed in place) and give the blocks back. */
  finish(): void {
    this.call.finish();
    calls++;
  }

  /** Give the blocks back without copying (after a failure). */
  release(): void {
    this.call.release();
  }
}

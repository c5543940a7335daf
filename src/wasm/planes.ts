/**
 * Where a kernel call's planes are in wasm memory. Every wasm kernel family binds its planes through
 * a `WasmCall`: `input(plane)` and `output(plane)` answer a byte address in the module's memory,
 * `finish()` makes the outputs' pixels the planes' own and gives back what the call borrowed.
 *
 * A plane that already lives in the module's memory (`residentAddress`) is used where it is: no copy.
 * Any other plane is copied into a block of the arena (inputs) or computed in a block and copied out
 * at `finish` (outputs). Addresses stay valid across the call; views do not (growing the memory
 * detaches them): take a view with `view` after the last `input`/`output`/`constants` of the call.
 */
import type { Plane } from '../core/pixel-type.js';
import type { Kernels } from './module.js';

/** A typed-array constructor of the planes the kernels read or write. */
export type PlaneArray = Float32Array | Float64Array | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array;
type PlaneCtor = { new (buffer: ArrayBuffer, byteOffset: number, length: number): PlaneArray; readonly BYTES_PER_ELEMENT: number };

/**
 * The byte address of `plane` in the kernels' memory when it lives there, else undefined.
 * Decision: only planes the module's memory holds whole count; a plane elsewhere is copied.
 */
export function residentAddress(k: Kernels, plane: ArrayBufferView): number | undefined {
  return plane.buffer === k.arena.buffer ? plane.byteOffset : undefined;
}

const align16 = (n: number): number => Math.ceil(n / 16) * 16;

export class WasmCall {
  private readonly k: Kernels;
  private readonly blocks: number[] = [];
  private readonly copyBack: { readonly plane: PlaneArray; readonly ptr: number }[] = [];

  constructor(k: Kernels) {
    this.k = k;
  }

  /** A block of `bytes` (16-byte aligned), held until `finish`/`release`; undefined when memory is out. */
  scratch(bytes: number): number | undefined {
    const ptr = this.k.arena.alloc(Math.max(16, align16(bytes)));
    if (ptr !== undefined) this.blocks.push(ptr);
    return ptr;
  }

  /** The address of an input plane (its own, or a copy's); undefined when memory is out. */
  input(plane: Plane): number | undefined {
    const own = residentAddress(this.k, plane);
    if (own !== undefined) return own;
    const ptr = this.scratch(plane.byteLength);
    if (ptr === undefined) return undefined;
    const p = plane as PlaneArray;
    new (p.constructor as PlaneCtor)(this.k.arena.buffer, ptr, p.length).set(p as never);
    return ptr;
  }

  /** The address an output plane is computed at (its own, or a block copied to it by `finish`). */
  output(plane: Plane): number | undefined {
    const own = residentAddress(this.k, plane);
    if (own !== undefined) return own;
    const ptr = this.scratch(plane.byteLength);
    if (ptr === undefined) return undefined;
    this.copyBack.push({ plane: plane as PlaneArray, ptr });
    return ptr;
  }

  /** f64 constants copied into a block: their address (0 when there are none). */
  constants(values: readonly number[]): number | undefined {
    if (values.length === 0) return 0;
    const ptr = this.scratch(8 * values.length);
    if (ptr === undefined) return undefined;
    new Float64Array(this.k.arena.buffer, ptr, values.length).set(values);
    return ptr;
  }

  /** A view of `length` elements at `ptr` of the type of `like` (valid until the memory grows). */
  view<T extends PlaneArray>(like: T, ptr: number, length: number): T {
    return new (like.constructor as PlaneCtor)(this.k.arena.buffer, ptr, length) as T;
  }

  /** Copy the outputs computed in blocks to their planes, then give the blocks back. */
  finish(): void {
    try {
      for (const { plane, ptr } of this.copyBack) plane.set(this.view(plane, ptr, plane.length) as never);
    } finally {
      this.release();
    }
  }

  /** Give the blocks back without copying (after a failure, or when the call did not run). */
  release(): void {
    for (const ptr of this.blocks) this.k.arena.release(ptr);
    this.blocks.length = 0;
    this.copyBack.length = 0;
  }
}

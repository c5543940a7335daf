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
import type { PixelBlock } from '../core/pixel-block.js';
import { PIXEL_TYPE_INFO, type PixelType, type Plane } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { type Kernels, wasmKernels, wasmMemoryBuffer } from './module.js';
import type { ReaderExports } from './reader.js';

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

let copied = 0;
/** Bytes kernel calls copied into and out of wasm memory in this thread (planes not resident there). */
export const wasmCopiedBytes = (): number => copied;

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
    copied += p.byteLength;
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
      for (const { plane, ptr } of this.copyBack) {
        plane.set(this.view(plane, ptr, plane.length) as never);
        copied += plane.byteLength;
      }
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

// ---- Planes that live in wasm memory through a chain

/**
 * Bytes of arena blocks the evaluator's planes may hold at once in one thread (one tile's planes
 * are a few MiB; whole-image functions read up to 4096 x 4096 per tile). Past it, planes are
 * ordinary JS memory (and kernel calls copy them, as before). The rest of the reservation
 * (module.ts) stays for the decoded blocks (DECODED_BUDGET) and kernel calls' own blocks.
 */
export const RESIDENT_BUDGET = 256 * 2 ** 20;

/**
 * Bytes of arena blocks the decoded GeoTIFF blocks (reader.ts `residentSpan`, kept by the tile
 * cache: at most its size, 64 MiB by default, plus the blocks being read) may hold at once in one
 * thread: a budget of their own, beside the evaluator's, so that a full cache never pushes a
 * render's planes out of wasm memory.
 */
export const DECODED_BUDGET = 128 * 2 ** 20;

let decodedLive = 0;
/** Bytes (size classes) of decoded blocks live in the arena now. */
export const decodedBytesLive = (): number => decodedLive;
/** Count `delta` bytes (size classes) of decoded blocks taken (+) or given back (-). */
export function noteDecodedBytes(delta: number): void {
  decodedLive += delta;
}

let residentOn = true;

/**
 * Switch planes living in wasm memory off (false: the evaluator allocates ordinary JS planes and
 * every kernel call copies its planes in and out) or back on, in this thread: the copy path kept
 * for benchmarks and tests that compare the two. @returns the previous setting.
 */
export function setResidentPlanes(enabled: boolean): boolean {
  const was = residentOn;
  residentOn = enabled;
  return was;
}

/*
 * Decision: no FinalizationRegistry backstop for tiles never released. A view made from a
 * resident plane (a `subarray`, a DataView) keeps the memory's buffer alive, not the plane object,
 * so a finalizer on the planes could give back memory still referenced: the one mistake worse than
 * a leak. A leak is bounded instead: past RESIDENT_BUDGET the arena refuses and the evaluator
 * allocates JS planes (slower, same results); `tileBlocksInUse` counts tiles not given back.
 */
let blocksInUse = 0;
/** Tile allocators holding blocks in this thread (not yet released): tests check it returns to 0. */
export const tileBlocksInUse = (): number => blocksInUse;

/**
 * One tile's blocks: planes and masks in wasm memory (arena blocks) where the budget allows,
 * ordinary JS memory otherwise, all given back at once by `release`. The evaluator makes one per
 * tile when wasm is on (`tileBlocks()`); source reads and function outputs are allocated here, so a
 * chain's planes are bound in place by every kernel's `WasmCall`.
 *
 * Every resident plane shares ONE `.buffer` (the memory's): compare planes by address ranges
 * (`sharesMemory`), never by `.buffer`, and never transfer or clone such a plane's buffer (a
 * worker reply takes `ownMemory(block)`).
 */
export class TileBlocks {
  private readonly k: Kernels;
  private readonly ptrs: number[] = [];
  private released = false;

  constructor(k: Kernels) {
    this.k = k;
    blocksInUse++;
  }

  /** A block like `allocateBlock`'s (zeroed bands, mask all 1), its planes in wasm memory where they fit. */
  allocate(rect: Rect, pixelType: PixelType, bandCount: number): PixelBlock {
    const n = rect.width * rect.height;
    const info = PIXEL_TYPE_INFO[pixelType];
    const bands: Plane[] = [];
    for (let b = 0; b < bandCount; b++) {
      const p = this.plane(info.array as unknown as PlaneCtor, info.complex ? 2 * n : n);
      fillPlane(p, 0, 0, p.length, this.k);
      bands.push(p);
    }
    const mask = this.plane(Uint8Array as unknown as PlaneCtor, n) as Uint8Array;
    fillPlane(mask, 1, 0, n, this.k);
    return { rect, pixelType, bands, mask };
  }

  /**
   * `allocate` without the fills: planes and mask hold whatever the memory held. For a block its
   * caller overwrites whole (a source's `readInto`: the evaluator's tile reads).
   */
  allocateUnfilled(rect: Rect, pixelType: PixelType, bandCount: number): PixelBlock {
    const n = rect.width * rect.height;
    const info = PIXEL_TYPE_INFO[pixelType];
    const bands: Plane[] = [];
    for (let b = 0; b < bandCount; b++) bands.push(this.plane(info.array as unknown as PlaneCtor, info.complex ? 2 * n : n));
    return { rect, pixelType, bands, mask: this.plane(Uint8Array as unknown as PlaneCtor, n) as Uint8Array };
  }

  private plane(ctor: PlaneCtor, length: number): PlaneArray {
    if (this.released) throw new Error('TileBlocks: allocate after release');
    const ptr = length === 0 ? undefined : this.k.arena.alloc(length * ctor.BYTES_PER_ELEMENT, RESIDENT_BUDGET + decodedLive);
    if (ptr === undefined) return new (ctor as unknown as new (n: number) => PlaneArray)(length);
    this.ptrs.push(ptr);
    return new ctor(this.k.arena.buffer, ptr, length);
  }

  /** Give every block back (once; later calls do nothing). No plane allocated here may be used after. */
  release(): void {
    if (this.released) return;
    this.released = true;
    blocksInUse--;
    for (const ptr of this.ptrs) this.k.arena.release(ptr);
    this.ptrs.length = 0;
  }
}

/**
 * `p.fill(value, start, end)`, as one memset in wasm (`memory.fill`) where `p` lives in the kernels'
 * shared memory and every byte of the value is the same (0, or any value of a byte plane): a
 * TypedArray's `fill` on a shared memory stores element by element, about eight times slower.
 */
export function fillPlane(p: PlaneArray, value: number, start = 0, end = p.length, k: Kernels | undefined = wasmKernels()): void {
  const fill = (k?.exports as Partial<ReaderExports> | undefined)?.readerFillBytes;
  const bytewise = value === 0 ? !Object.is(value, -0) : p.BYTES_PER_ELEMENT === 1 && Number.isInteger(value);
  if (fill === undefined || !bytewise || start < 0 || end > p.length || end <= start || p.buffer !== k!.arena.buffer) {
    p.fill(value, start, end);
    return;
  }
  const e = p.BYTES_PER_ELEMENT;
  fill(p.byteOffset + start * e, value & 0xff, (end - start) * e);
}

/** A tile allocator when wasm is on and planes may live in wasm memory; undefined otherwise (JS planes). */
export function tileBlocks(): TileBlocks | undefined {
  if (!residentOn) return undefined;
  const k = wasmKernels();
  return k === undefined ? undefined : new TileBlocks(k);
}

/** Whether two views overlap in memory (the same buffer and intersecting byte ranges). */
export function sharesMemory(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}

/**
 * `block` with every plane (and the mask) that lives in wasm memory copied to ordinary JS memory
 * (planes elsewhere are kept): for blocks that leave the tile's lifetime (a worker reply, a
 * caller without a release).
 */
export function ownMemory(block: PixelBlock): PixelBlock {
  const mem = wasmMemoryBuffer();
  if (mem === undefined || !inWasmMemory(block)) return block;
  const own = <T extends ArrayBufferView>(p: T): T => (p.buffer === mem ? (copyOf(p as unknown as PlaneArray) as unknown as T) : p);
  return { ...block, bands: block.bands.map(own), mask: own(block.mask) };
}

/**
 * A copy of `p` in ordinary JS memory. `new` and `set`, not `slice`: `slice` of a view on a shared
 * memory (the kernels') copies element by element, about ten times slower than `set`.
 */
export function copyOf<T extends PlaneArray>(p: T): T {
  const out = new (p.constructor as new (length: number) => T)(p.length);
  out.set(p as never);
  return out;
}

/** Whether any plane of `block` (or its mask) lives in the kernels' memory. */
export function inWasmMemory(block: PixelBlock): boolean {
  const mem = wasmMemoryBuffer();
  return mem !== undefined && (block.mask.buffer === mem || block.bands.some((p) => p.buffer === mem));
}

/**
 * The element type code the wasm kernels take for a plane (wasm/local.ts and wasm/terrain.ts: 0 U8,
 * 1 S8, 2 U16, 3 S16, 4 U32, 5 S32, 6 F32, 7 F64); undefined for other arrays.
 */
export function typeCode(p: ArrayBufferView): number | undefined {
  if (p instanceof Uint8Array) return 0;
  if (p instanceof Int8Array) return 1;
  if (p instanceof Uint16Array) return 2;
  if (p instanceof Int16Array) return 3;
  if (p instanceof Uint32Array) return 4;
  if (p instanceof Int32Array) return 5;
  if (p instanceof Float32Array) return 6;
  if (p instanceof Float64Array) return 7;
  return undefined;
}

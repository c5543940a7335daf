/**
 * The GeoTIFF I/O's wasm paths (wasm/reader.ts):
 * - the NoData/NaN mask of a window whose planes live in wasm memory (a render's tiles: the
 *   evaluator allocates source reads there), computed in wasm after the window's blocks are copied
 *   in, sixteen cells per step, instead of a TypeScript scan of each decoded block
 *   (`blockMayBeInvalid`) and then of the window's pixels;
 * - TIFF predictor 2 of an 8-bit block whose plane lives in wasm memory (a render's output tiles,
 *   tiff-stream-writer.ts), computed into a scratch block and copied out once, where the writer
 *   copied the plane and then differenced the copy in TypeScript (tiff-predictors.ts, the
 *   reference: the bytes are the same);
 * - whether a block's mask is all valid (every byte 1), for the same writer: one pass sixty-four
 *   bytes a step instead of a scan for a 0 and then another for the statistics.
 */
import type { Plane } from '../core/pixel-type.js';
import { wasmKernels } from './module.js';
import { sizeClass } from './arena.js';
import {
  copyOf,
  DECODED_BUDGET,
  decodedBytesLive,
  noteDecodedBytes,
  RESIDENT_BUDGET,
  residentAddress,
  typeCode,
  WasmCall,
} from './planes.js';

/** The reader exports of the kernels' module; addresses are byte addresses in its memory. */
export interface ReaderExports {
  readerMaskInvalid(type: number, plane: number, mask: number, n: number, testNd: number, nd: number): void;
  readerDifferenceBytes(src: number, dst: number, width: number, rows: number): void;
  readerAllValid(mask: number, n: number): number;
  readerCopyRows(src: number, srcStride: number, dst: number, dstStride: number, rowBytes: number, rows: number): void;
  /** Set `n` bytes at `dst` to `value` (planes.ts `fillPlane`). */
  readerFillBytes(dst: number, value: number, n: number): void;
}

let calls = 0;
/** How many masks were computed in wasm in this thread (tests check the path they meant ran). */
export const readerWasmCalls = (): number => calls;

/**
 * Whether `maskInvalid` can run for a plane of this kind in this thread (wasm on, an F32 or F64
 * plane and its mask both in wasm memory, one sample per pixel): the caller may then skip its own
 * checks of the decoded blocks.
 */
export function canMaskInWasm(plane: Plane, mask: Uint8Array): boolean {
  const k = wasmKernels();
  if (k === undefined || plane.length !== mask.length) return false;
  const type = typeCode(plane);
  return (type === 6 || type === 7) && residentAddress(k, plane) !== undefined && residentAddress(k, mask) !== undefined;
}

/**
 * mask[i] = 0 where plane[i] is NaN or (testNd) equals nd (already rounded to f32 for an F32
 * plane), other mask bytes kept. @returns false when not done (`canMaskInWasm` is false): the
 * caller scans in TypeScript.
 */
export function maskInvalid(plane: Plane, mask: Uint8Array, testNd: boolean, nd: number): boolean {
  if (!canMaskInWasm(plane, mask)) return false;
  const k = wasmKernels()!;
  const x = k.exports as unknown as ReaderExports;
  x.readerMaskInvalid(
    typeCode(plane)!,
    residentAddress(k, plane)!,
    residentAddress(k, mask)!,
    mask.length,
    testNd ? 1 : 0,
    testNd ? nd : 0,
  );
  calls++;
  return true;
}

let differenced = 0;
/** How many blocks were differenced in wasm in this thread (tests check the path they meant ran). */
export const readerDifferenceCalls = (): number => differenced;

/**
 * A private copy of the first `width` x `rows` bytes of an 8-bit plane with TIFF predictor 2
 * applied (`horizontalDifference` of tiff-predictors.ts on a copy: the same bytes), computed in
 * wasm; undefined when the plane does not live in wasm memory (or wasm is off, or the arena is
 * full): the caller copies and differences in TypeScript.
 */
export function differencedCopy(plane: Uint8Array | Int8Array, width: number, rows: number): Uint8Array | undefined {
  return withDifferenced(plane, width, rows, copyOf);
}

let allValidCalls = 0;
/** How many masks were checked in wasm in this thread (tests check the path they meant ran). */
export const readerAllValidCalls = (): number => allValidCalls;

/**
 * Whether every byte of `mask` is 1 (every pixel valid), checked in wasm; undefined when the mask
 * does not live in wasm memory (or wasm is off): the caller checks in TypeScript.
 */
export function maskAllValidInWasm(mask: Uint8Array): boolean | undefined {
  const k = wasmKernels();
  if (k === undefined) return undefined;
  const at = residentAddress(k, mask);
  const x = k.exports as unknown as Partial<ReaderExports>;
  // A module built before this kernel (a stale wasm/build): the caller checks in TypeScript.
  if (at === undefined || typeof x.readerAllValid !== 'function') return undefined;
  allValidCalls++;
  return x.readerAllValid(at, mask.length) === 1;
}

/**
 * `use` of the first `width` x `rows` bytes of an 8-bit plane with TIFF predictor 2 applied, as
 * `differencedCopy` gives them, but as a view of a scratch block of wasm memory, valid only during
 * `use` (no copy out); undefined (and `use` not called) when `differencedCopy` would give undefined.
 */
export function withDifferenced<T>(
  plane: Uint8Array | Int8Array,
  width: number,
  rows: number,
  use: (bytes: Uint8Array) => T,
): T | undefined {
  const k = wasmKernels();
  const n = width * rows;
  if (k === undefined || n > plane.length || !Number.isInteger(n) || n <= 0) return undefined;
  const src = residentAddress(k, plane);
  if (src === undefined) return undefined;
  const call = new WasmCall(k);
  try {
    const dst = call.scratch(n);
    if (dst === undefined) return undefined;
    (k.exports as unknown as ReaderExports).readerDifferenceBytes(src, dst, width, rows);
    differenced++;
    return use(new Uint8Array(k.arena.buffer, dst, n));
  } finally {
    call.release();
  }
}

type View = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array;

let spans = 0;
/** How many blocks of wasm memory were handed out for decoded blocks in this thread (tests check the path they meant ran). */
export const residentSpanCount = (): number => spans;

/**
 * A block of `bytes` bytes of wasm memory for a decoded block (within planes.ts DECODED_BUDGET,
 * beside the evaluator's), as the shared memory and the block's byte address in it, and the function that
 * gives it back; undefined when wasm is off, its memory is not shared, or the arena cannot hold it
 * (the caller decodes into memory of its own). Codec threads inflate straight into it.
 */
export function residentSpan(
  bytes: number,
): { readonly memory: SharedArrayBuffer; readonly at: number; readonly release: () => void } | undefined {
  const k = wasmKernels();
  const memory = k?.arena.buffer as ArrayBufferLike | undefined;
  if (k === undefined || !(memory instanceof SharedArrayBuffer) || bytes <= 0) return undefined;
  if (typeof (k.exports as unknown as Partial<ReaderExports>).readerCopyRows !== 'function') return undefined;
  const held = sizeClass(bytes);
  if (decodedBytesLive() + held > DECODED_BUDGET) return undefined;
  const at = k.arena.alloc(bytes, RESIDENT_BUDGET + DECODED_BUDGET);
  if (at === undefined) return undefined;
  noteDecodedBytes(held);
  spans++;
  let released = false;
  return {
    memory,
    at,
    release: () => {
      if (released) return;
      released = true;
      k.arena.release(at);
      noteDecodedBytes(-held);
    },
  };
}

/**
 * Copy `rows` rows of `rowLength` elements from `src` (from element `srcAt`, rows `srcStride`
 * elements apart) into `dst` (from `dstAt`, rows `dstStride` apart), both of one element size,
 * in wasm, when both live in wasm memory; false (nothing copied) otherwise.
 */
export function copyRowsInWasm(
  src: View,
  srcAt: number,
  srcStride: number,
  dst: View,
  dstAt: number,
  dstStride: number,
  rowLength: number,
  rows: number,
): boolean {
  const k = wasmKernels();
  if (k === undefined) return false;
  const from = residentAddress(k, src);
  const to = residentAddress(k, dst);
  if (from === undefined || to === undefined || src.BYTES_PER_ELEMENT !== dst.BYTES_PER_ELEMENT) return false;
  const e = src.BYTES_PER_ELEMENT;
  (k.exports as unknown as ReaderExports).readerCopyRows(
    from + srcAt * e,
    srcStride * e,
    to + dstAt * e,
    dstStride * e,
    rowLength * e,
    rows,
  );
  return true;
}

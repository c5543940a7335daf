/**
 * The GeoTIFF reader's wasm path (wasm/reader.ts): the NoData/NaN mask of a window whose planes
 * live in wasm memory (a render's tiles: the evaluator allocates source reads there), computed in
 * wasm after the window's blocks are copied in, sixteen cells per step, instead of a TypeScript
 * scan of each decoded block (`blockMayBeInvalid`) and then of the window's pixels.
 */
import type { Plane } from '../core/pixel-type.js';
import { wasmKernels } from './module.js';
import { residentAddress, typeCode } from './planes.js';

/** The reader exports of the kernels' module; addresses are byte addresses in its memory. */
export interface ReaderExports {
  readerMaskInvalid(type: number, plane: number, mask: number, n: number, testNd: number, nd: number): void;
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

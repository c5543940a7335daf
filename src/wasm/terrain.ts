/**
 * The terrain functions' wasm path (Slope, Aspect, Hillshade): the TypeScript kernel stays the
 * dispatcher and the reference. `hornViaWasm` runs one kernel call (one tile) with the same
 * `HornRows` window reader as the TypeScript path: the reader decides each row's fast span and
 * computes every other cell (raster edges, NoData neighbours) in TypeScript; the wasm row function
 * computes the fast span, the hot loop, with the same arithmetic (wasm/terrain.ts), so the result
 * is bit for bit the TypeScript kernel's.
 *
 * Supported: an F32 DEM plane and an output plane the row function writes (F32, or U8 for
 * Hillshade). Anything else (other pixel types, F64 outputs, wasm off) returns false and the
 * caller runs its TypeScript path.
 *
 * Memory: the planes are bound through a `WasmCall` (planes.ts): used where they are when they
 * live in wasm memory, else copied in (the DEM) and out (the output) through the arena's blocks.
 */
import type { PixelBlock } from '../core/pixel-block.js';
import type { Plane } from '../core/pixel-type.js';
import { type GradientParams, HornRows } from '../functions/terrain/gradient.js';
import { type Kernels, wasmKernels } from './module.js';
import { WasmCall } from './planes.js';

/**
 * One row's fast span: window column x - 1 of its first cell at byte addresses top, mid, bot in the
 * three DEM rows, n cells written from byte address dst, with the row's Horn factors kx, ky.
 */
export type HornRowKernel = (top: number, mid: number, bot: number, dst: number, n: number, kx: number, ky: number) => void;

/** Output planes a row kernel can write. */
export type WasmOutput = 'F32' | 'U8';

let calls = 0;
/** How many kernel calls ran in wasm in this thread (tests check the path they meant ran). */
export const wasmCallCount = (): number => calls;

function outputOf(dst: Plane): WasmOutput | undefined {
  return dst instanceof Float32Array ? 'F32' : dst instanceof Uint8Array ? 'U8' : undefined;
}

/**
 * Compute `out` (band 0) from `dem` (band 0) in wasm. `row(k, kind)` picks the row function for
 * the output kind (undefined: not supported); `noData` and `cell` are what the TypeScript kernel
 * gives `HornRows.writeOtherCells`; `constants` (f64) are copied into wasm memory and their
 * address passed to `row` (0 when none). @returns false when the case is not supported (nothing written).
 */
export function hornViaWasm(
  p: GradientParams,
  dem: PixelBlock,
  out: PixelBlock,
  noData: number,
  cell: (gx: number, gy: number) => number,
  row: (k: Kernels, kind: WasmOutput, constants: number) => HornRowKernel | undefined,
  constants: readonly number[] = [],
): boolean {
  const k = wasmKernels();
  if (k === undefined) return false;
  const src = dem.bands[0];
  const dst = out.bands[0];
  if (!(src instanceof Float32Array) || dst === undefined) return false;
  const kind = outputOf(dst);
  if (kind === undefined) return false;
  const call = new WasmCall(k);
  let done = false;
  try {
    const constPtr = call.constants(constants);
    const inPtr = call.input(src);
    const outPtr = call.output(dst);
    if (constPtr === undefined || inPtr === undefined || outPtr === undefined) return false;
    const fn = row(k, kind, constPtr);
    if (fn === undefined) return false;
    // The view after the call's last allocation (growing the memory detaches earlier views).
    const view = call.view(dst, outPtr, dst.length);
    const bpe = view.BYTES_PER_ELEMENT;
    const rows = new HornRows(p, dem, out.rect);
    const w = out.rect.width | 0;
    for (let y = 0; y < out.rect.height; y++) {
      rows.compute(y);
      const o = y * w;
      rows.writeOtherCells(view, out.mask, o, noData, cell);
      const f0 = rows.fastFrom;
      const n = rows.fastTo - f0;
      if (n > 0) {
        fn(
          inPtr + 4 * (rows.top + f0 - 1),
          inPtr + 4 * (rows.mid + f0 - 1),
          inPtr + 4 * (rows.bot + f0 - 1),
          outPtr + bpe * (o + f0),
          n,
          rows.kx,
          rows.ky,
        );
      }
    }
    call.finish();
    done = true;
    calls++;
    return true;
  } finally {
    if (!done) call.release();
  }
}

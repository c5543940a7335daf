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
 * Memory: the DEM plane is copied into wasm memory and the output plane out of it, per call (the
 * blocks are the arena's, recycled). Keeping a chain's planes in wasm memory from node to node is
 * a later step.
 */
import type { PixelBlock } from '../core/pixel-block.js';
import type { Plane } from '../core/pixel-type.js';
import { type GradientParams, HornRows } from '../functions/terrain/gradient.js';
import { type Kernels, wasmKernels } from './module.js';

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
  const arena = k.arena;
  // One block per call (constants, DEM plane, output plane, each 16-byte aligned): nothing else is
  // held while it is, so the arena's bound (arena.ts) is one tile's planes.
  const constBytes = align16(8 * constants.length);
  const inBytes = align16(src.byteLength);
  const block = arena.alloc(constBytes + inBytes + dst.byteLength);
  if (block === undefined) return false;
  try {
    const constPtr = constants.length > 0 ? block : 0;
    const inPtr = block + constBytes;
    const outPtr = inPtr + inBytes;
    const fn = row(k, kind, constPtr);
    if (fn === undefined) return false;
    // Views after every allocation (growing the memory detaches earlier views).
    const buf = arena.buffer;
    if (constants.length > 0) new Float64Array(buf, constPtr, constants.length).set(constants);
    new Float32Array(buf, inPtr, src.length).set(src);
    const view = kind === 'F32' ? new Float32Array(buf, outPtr, dst.length) : new Uint8Array(buf, outPtr, dst.length);
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
    dst.set(view);
    calls++;
    return true;
  } finally {
    arena.release(block);
  }
}

const align16 = (n: number): number => Math.ceil(n / 16) * 16;

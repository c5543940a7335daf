/**
 * The terrain functions' wasm path (Slope, Aspect, Hillshade, Curvature): the TypeScript kernel
 * stays the dispatcher and the reference. `hornViaWasm` / `windowViaWasm` run one kernel call (one
 * tile) with the same window reader as the TypeScript path (`HornRows` / `WindowRows`): the reader
 * decides each row's fast span and its other cells (raster edges, NoData neighbours) are computed
 * in TypeScript; the wasm row function (wasm/terrain.ts) computes the fast span, the hot loop.
 * Per kernel call the mask's rows are scanned once in wasm (`terrainMaskRows`, the reader's
 * `presetRows`), and a plain row (its fast span is the whole row: no raster edge column, no NoData
 * near it; most rows of a render's tiles) costs no TypeScript per cell (`WindowRows.plain`): the
 * reader's per-row work was 15-20% of a whole-raster Hillshade. The Horn functions go further: a
 * run of plain rows with the same factors is one wasm call (`HornRows.plainRun`), most tiles one
 * call in all; a call per row, through the driver's closures, was about 40% of the row loop's time.
 *
 * Arithmetic (wasm/terrain.ts says why):
 *   - Aspect, Slope percent rise and Curvature: exact, bit for bit the TypeScript kernel's;
 *   - Hillshade and Slope in degrees: the Horn gradients in f64 as the TypeScript kernel, the
 *     output formula in f32 lanes, within the tolerance that terrain.test.ts states. The cells
 *     outside the fast span are computed with the same f32 operations (`hillshadeOneF32`,
 *     `hillshadeManyF32`, `slopeDegreeF32`: Math.fround after each operation, which gives the f32
 *     result exactly for +, -, *, / and sqrt of f32 operands), so on the wasm path a cell has the
 *     same bits whatever the tiling, as on the TypeScript path.
 *
 * Supported: a DEM plane of any type (F32, F64, U8, S8, U16, S16, U32, S32; each value converted to
 * f64 exactly) and an output plane the row function writes (F32 everywhere, U8 for Hillshade, F64
 * for the exact functions). Anything else (other output types, wasm off) returns false and the
 * caller runs its TypeScript path.
 *
 * Memory: the planes are bound through a `WasmCall` (planes.ts): used where they are when they
 * live in wasm memory, else copied in (the DEM) and out (the output) through the arena's blocks.
 */
import type { PixelBlock } from '../core/pixel-block.js';
import type { Plane } from '../core/pixel-type.js';
import { type GradientParams, HornRows, type WindowParams, WindowRows } from '../functions/terrain/gradient.js';
import { type Kernels, wasmKernels } from './module.js';
import { typeCode, WasmCall } from './planes.js';

/** The arguments every Horn export starts with: the DEM's type code, the output kind, the span (`SpanKernel`) and the row's factors. */
type HornSpan = [inType: number, kind: number, top: number, mid: number, bot: number, dst: number, n: number, kx: number, ky: number];
/** The arguments every Horn export ends with: `rows` rows, each `inStride` (DEM) and `outStride` (output) bytes below the last. */
type RowRun = [rows: number, inStride: number, outStride: number];

/** The terrain exports of the kernels' module (wasm/terrain.ts); addresses are byte addresses in its memory. */
export interface TerrainExports {
  terrainHillshade(...args: [...HornSpan, k0: number, k1: number, k2: number, ...RowRun]): void;
  terrainMulti(...args: [...HornSpan, c: number, srcs: number, count: number, ...RowRun]): void;
  terrainSlopeDegree(...args: [...HornSpan, ...RowRun]): void;
  terrainSlopePercent(...args: [...HornSpan, ...RowRun]): void;
  terrainAspect(...args: [...HornSpan, ...RowRun]): void;
  terrainCurvature(
    inType: number,
    kind: number,
    type: number,
    top: number,
    mid: number,
    bot: number,
    dst: number,
    n: number,
    cxx: number,
    cyy: number,
    cxy: number,
    cx: number,
    cy: number,
  ): void;
  terrainMaskRows(mask: number, stride: number, rows: number, from: number, n: number, out: number): void;
}

const terrainExports = (k: Kernels): TerrainExports => k.exports as unknown as TerrainExports;

/** Output planes a row function can write. */
export type WasmOutput = 'F32' | 'U8' | 'F64';
/** Output kind codes (wasm/terrain.ts OUT_*). */
export const OUT_KIND: Readonly<Record<WasmOutput, number>> = { F32: 0, U8: 1, F64: 2 };

function outputOf(dst: Plane): WasmOutput | undefined {
  return dst instanceof Float32Array ? 'F32' : dst instanceof Uint8Array ? 'U8' : dst instanceof Float64Array ? 'F64' : undefined;
}

/**
 * One row's fast span: window column x - 1 of its first cell at byte addresses top, mid, bot in the
 * three DEM rows, n cells written from byte address dst (the row's own factors are the caller's).
 * With `rows` > 1 (only where the driver's `plain` gave a run: `HornRows.plainRun`), that many
 * rows with the same factors, each `inStride` bytes below the last in the DEM and `outStride`
 * bytes in the output.
 */
export type SpanKernel = (...args: [top: number, mid: number, bot: number, dst: number, n: number, ...RowRun]) => void;

let calls = 0;
let spanCalls = 0;
/** How many kernel calls ran in wasm in this thread (tests check the path they meant ran). */
export const wasmCallCount = (): number => calls;
/** How many calls of a span function those made (one per row, or per run of plain rows). */
export const wasmSpanCallCount = (): number => spanCalls;

/** What a window reader gives the wasm driver after `compute(y)` (or `plain(y)`). */
interface SpanRows {
  readonly fastFrom: number;
  readonly fastTo: number;
  readonly top: number;
  readonly mid: number;
  readonly bot: number;
  readonly copyFirst: boolean;
  readonly copyLast: boolean;
  scanColumns(): { readonly from: number; readonly n: number } | undefined;
  presetRows(flags: ArrayLike<number>): void;
}

/**
 * The reader's row scan, every block row at once in wasm (sixteen mask bytes per vector instead of
 * four per step in TypeScript), its flags handed to the reader. The mask is bound like a plane:
 * where it is when it lives in wasm memory (a render's tiles), else copied in (one memcpy, cheaper
 * than the TypeScript scan it replaces). Nothing done (the reader scans) when memory is out.
 */
function scanMaskRows(call: WasmCall, x: TerrainExports, dem: PixelBlock, rows: SpanRows): void {
  const cols = rows.scanColumns();
  const bw = dem.rect.width;
  const bh = dem.rect.height;
  if (cols === undefined || cols.from < 0 || cols.from + cols.n > bw || dem.mask.length !== bw * bh) return;
  const mask = call.input(dem.mask);
  const flags = call.scratch(bh);
  if (mask === undefined || flags === undefined) return;
  x.terrainMaskRows(mask, bw, bh, cols.from, cols.n, flags);
  rows.presetRows(call.view(dem.mask, flags, bh));
}

/**
 * The driver: bind the planes, then from each output row y either `plain(y, max)` > 0 (that many
 * plain rows from y, at most `max`, with the same factors: their fast spans are the whole rows,
 * nothing else to compute, no TypeScript per cell) or `prepare(y, view)` (the reader's
 * `compute(y)` and the cells outside the fast span, written to `view`), then the rows' fast spans
 * in one wasm call (most tiles: one call in all). `kernel(x, inType, kind, constants)` picks the
 * span function (undefined: not supported); `constants` (f64, then the same values as f32) are
 * copied into wasm memory first.
 */
function spansViaWasm(
  dem: PixelBlock,
  out: PixelBlock,
  rows: SpanRows,
  plain: (y: number, max: number) => number,
  prepare: (y: number, view: Plane) => void,
  kernel: (x: TerrainExports, inType: number, kind: WasmOutput, constants: number) => SpanKernel | undefined,
  constants: readonly number[],
): boolean {
  const k = wasmKernels();
  if (k === undefined) return false;
  const src = dem.bands[0];
  const dst = out.bands[0];
  if (src === undefined || dst === undefined) return false;
  const kind = outputOf(dst);
  if (kind === undefined) return false;
  const call = new WasmCall(k);
  let done = false;
  try {
    let constPtr = 0;
    if (constants.length > 0) {
      const n = constants.length;
      const ptr = call.scratch(12 * n);
      if (ptr === undefined) return false;
      new Float64Array(k.arena.buffer, ptr, n).set(constants);
      new Float32Array(k.arena.buffer, ptr + 8 * n, n).set(constants);
      constPtr = ptr;
    }
    const inPtr = call.input(src);
    const outPtr = call.output(dst);
    if (inPtr === undefined || outPtr === undefined) return false;
    const fn = kernel(terrainExports(k), typeCode(src)!, kind, constPtr);
    if (fn === undefined) return false;
    scanMaskRows(call, terrainExports(k), dem, rows);
    // The view after the call's last allocation (growing the memory detaches earlier views).
    const view = call.view(dst, outPtr, dst.length);
    const bpe = view.BYTES_PER_ELEMENT;
    const ibpe = src.BYTES_PER_ELEMENT;
    const w = out.rect.width | 0;
    const h = out.rect.height | 0;
    const inStride = ibpe * dem.rect.width;
    const copyFirst = rows.copyFirst;
    const copyLast = rows.copyLast;
    for (let y = 0; y < h;) {
      const plainRows = plain(y, h - y);
      const isPlain = plainRows > 0;
      const run = isPlain ? plainRows : 1;
      if (!isPlain) prepare(y, view);
      const f0 = rows.fastFrom;
      const f1 = rows.fastTo;
      if (f1 > f0) {
        spanCalls++;
        fn(
          inPtr + ibpe * (rows.top + f0 - 1),
          inPtr + ibpe * (rows.mid + f0 - 1),
          inPtr + ibpe * (rows.bot + f0 - 1),
          outPtr + bpe * (y * w + f0),
          f1 - f0,
          run,
          inStride,
          bpe * w,
        );
        // A plain row's raster edge cells (vendor rule): their inner neighbour's result. One
        // statement for both edges: the last column's copy first runs at the raster's last tile
        // of a row, after this loop was optimized, and an operation of its own, never run
        // before, threw the optimized loop away then (about 20 ms of compiling it again).
        if (isPlain && (copyFirst || copyLast)) {
          for (let r = y; r < y + run; r++) {
            for (let e = copyFirst ? 0 : 1, end = copyLast ? 2 : 1; e < end; e++) {
              const to = r * w + (e === 0 ? f0 - 1 : f1);
              view[to] = view[to + (e === 0 ? 1 : -1)]!;
            }
          }
        }
      }
      y += run;
    }
    call.finish();
    done = true;
    calls++;
    return true;
  } finally {
    if (!done) call.release();
  }
}

/** A Horn row function: the span plus the row's factors kx, ky, then `rows`, `inStride`, `outStride` as `SpanKernel`'s. */
export type HornRowKernel = (
  ...args: [top: number, mid: number, bot: number, dst: number, n: number, kx: number, ky: number, ...RowRun]
) => void;

/**
 * Compute `out` (band 0) from `dem` (band 0) in wasm, Horn functions. `row(x, inType, kind, constants)`
 * picks the row function (undefined: not supported); `noData` and `cell` are what the kernel gives
 * `HornRows.writeOtherCells` (for the f32-stage functions, their f32 formula); `constants` (f64)
 * are copied into wasm memory, followed by their f32 roundings, and their address passed to `row`
 * (0 when none). @returns false when the case is not supported (nothing written).
 */
export function hornViaWasm(
  p: GradientParams,
  dem: PixelBlock,
  out: PixelBlock,
  noData: number,
  cell: (gx: number, gy: number) => number,
  row: (x: TerrainExports, inType: number, kind: WasmOutput, constants: number) => HornRowKernel | undefined,
  constants: readonly number[] = [],
): boolean {
  if (wasmKernels() === undefined) return false;
  const rows = new HornRows(p, dem, out.rect);
  const w = out.rect.width | 0;
  return spansViaWasm(
    dem,
    out,
    rows,
    (y, max) => rows.plainRun(y, max),
    (y, view) => {
      rows.compute(y);
      rows.writeOtherCells(view, out.mask, y * w, noData, cell);
    },
    (x, inType, kind, c) => {
      const fn = row(x, inType, kind, c);
      return fn === undefined ? undefined : (t, m, b, d, n, k, si, so) => fn(t, m, b, d, n, rows.kx, rows.ky, k, si, so);
    },
    constants,
  );
}

/**
 * Compute `out` from `dem` in wasm, functions of the whole window (Curvature). `prepare(rows, y, view)`
 * runs the reader's `compute(y)` and writes the cells outside the fast span to `view`;
 * `span(x, inType, kind)` gives the row's fast-span function (it may read the reader's state, e.g. `sy`).
 * `plainRow(rows)`, when given, is called for each plain row (`WindowRows.plain`) instead of
 * `prepare` (to set the row's own state from `rows.sy`); without it every row is prepared.
 */
export function windowViaWasm(
  p: WindowParams,
  dem: PixelBlock,
  out: PixelBlock,
  prepare: (rows: WindowRows, y: number, view: Plane) => void,
  span: (x: TerrainExports, inType: number, kind: WasmOutput) => SpanKernel | undefined,
  plainRow?: (rows: WindowRows) => void,
): boolean {
  if (wasmKernels() === undefined) return false;
  const rows = new WindowRows(p, dem, out.rect);
  const plain =
    plainRow === undefined
      ? (): number => 0
      : (y: number): number => {
          if (!rows.plain(y)) return 0;
          plainRow(rows);
          return 1;
        };
  return spansViaWasm(dem, out, rows, plain, (y, view) => prepare(rows, y, view), span, []);
}

// ---- The f32 output stage of wasm/terrain.ts, cell by cell (the cells outside the fast span).

const fr = Math.fround;
const A = [
  57.29577839927536, -19.098505533568567, 11.457114347385406, -8.163057288859694, 6.232640545666483, -4.706138647073333, 3.152877661086918,
  -1.6324009175759946, 0.5481680432046695, -0.08647666075964544,
].map(fr);
const [B0, B1, B2, B3, B4, B5, B6, B7, B8, B9] = A as [number, number, number, number, number, number, number, number, number, number];

/** q = U^2 + V^2 in f32 (U, V the f32 gradients); Infinity sends the cell to the exact formula. */
const q32 = (U: number, V: number): number => fr(fr(U * U) + fr(V * V));

/** Traditional hillshade in f32 (wasm/terrain.ts cell4 F_HILLSHADE); `exact` where q overflows. */
export function hillshadeOneF32(u: number, v: number, k0: number, k1: number, k2: number, exact: (u: number, v: number) => number): number {
  const U = fr(u);
  const V = fr(v);
  const q = q32(U, V);
  if (q === Infinity) return exact(u, v);
  const num = fr(fr(fr(k0) + fr(fr(k1) * U)) + fr(fr(k2) * V));
  return fr((num > 0 ? num : 0) / fr(Math.sqrt(fr(1 + q))));
}

/** Multidirectional hillshade in f32 (cell4 F_MULTI): sources [k0, kx, ky, ...], constant c. */
export function hillshadeManyF32(u: number, v: number, s: readonly number[], c: number, exact: (u: number, v: number) => number): number {
  const U = fr(u);
  const V = fr(v);
  const q = q32(U, V);
  if (q === Infinity) return exact(u, v);
  let sum = fr(c);
  for (let k = 0; k < s.length; k += 3) {
    const n = fr(fr(fr(s[k]!) + fr(fr(s[k + 1]!) * U)) + fr(fr(s[k + 2]!) * V));
    if (n > 0) sum = fr(sum + n);
  }
  return fr(sum / fr(Math.sqrt(fr(1 + q))));
}

/** atanUnitDegrees in f32 (atanUnit4). */
function atanUnitF32(u: number): number {
  const x = fr(u * u);
  const x2 = fr(x * x);
  const x4 = fr(x2 * x2);
  const p03 = fr(fr(B0 + fr(B1 * x)) + fr(fr(B2 + fr(B3 * x)) * x2));
  const p47 = fr(fr(B4 + fr(B5 * x)) + fr(fr(B6 + fr(B7 * x)) * x2));
  const p8 = fr(fr(B8 + fr(B9 * x)) * fr(x4 * x4));
  return fr(u * fr(fr(p03 + fr(p47 * x4)) + p8));
}

/** Slope in degrees in f32 (cell4 F_SLOPE_DEGREE); `exact` where q overflows. */
export function slopeDegreeF32(u: number, v: number, exact: (u: number, v: number) => number): number {
  const q = q32(fr(u), fr(v));
  if (q === Infinity) return exact(u, v);
  const r = fr(Math.sqrt(q));
  const inv = r > 1;
  const p = atanUnitF32(inv ? fr(1 / r) : r);
  return inv ? fr(90 - p) : p;
}

/**
 * Whole-image context for functions whose result at a pixel depends on objects that can span the
 * raster (segments): Classify with a segmented Raster2, SegmentMeanShift.
 *
 * How tiles get their context: `Plan.inputRect` returns the WHOLE input raster for every output
 * tile, so every tile sees the same input pixels; the whole-image result is computed once per plan
 * (per worker, since workers rebuild the graph) and kept in the plan itself: `plan` puts an empty
 * `WholeImageMemo` in its params, the first tile's kernel fills it, together with a fingerprint of
 * the input pixels (mask and band bytes) so a kept result is only reused for exactly the same
 * input. No state lives in the module: the memo goes with its plan. Tiles then copy their window
 * out of it. The result never depends on the tile size or the worker count, and tiled equals whole
 * bit for bit.
 *
 * Cost (declared): every tile reads the whole input (W x H pixels of every band) and hashes it
 * (one pass); the whole-image computation runs once per plan and per worker. Rasters above
 * `MAX_WHOLE_PIXELS` (4096 x 4096) are refused at plan time with LIMIT_EXCEEDED.
 */
import { EngineError } from '../../core/errors.js';
import type { PixelBlock } from '../../core/pixel-block.js';
import type { Rect } from '../../core/rect.js';

/** Largest raster (pixels) a whole-image function accepts: 4096 x 4096. */
export const MAX_WHOLE_PIXELS = 4096 * 4096;

export const wholeRect = (width: number, height: number): Rect => ({ x: 0, y: 0, width, height });

/** LIMIT_EXCEEDED unless a width x height raster fits the whole-image bound. */
export function checkWholeImageLimit(fn: string, width: number, height: number, path: string): void {
  if (width * height > MAX_WHOLE_PIXELS) {
    throw new EngineError(
      'LIMIT_EXCEEDED',
      `${fn} works on the whole image at once and is limited to ${MAX_WHOLE_PIXELS} pixels (4096 x 4096); ` +
        `this raster is ${width} x ${height}: request a smaller extent or a coarser cell size first (e.g. Resample or Clip)`,
      { path },
    );
  }
}

/** FNV-1a over the masks and band bytes of `blocks` (32-bit words where aligned). */
export function fingerprint(blocks: readonly PixelBlock[]): number {
  let h = 0x811c9dc5;
  const mix = (a: ArrayBufferView): void => {
    if (a.byteOffset % 4 === 0 && a.byteLength % 4 === 0) {
      const w = new Int32Array(a.buffer, a.byteOffset, a.byteLength / 4);
      for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w[i]!, 0x01000193);
    } else {
      const b = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
    }
    h = Math.imul(h ^ a.byteLength, 0x01000193);
  };
  for (const blk of blocks) {
    mix(blk.mask);
    for (const b of blk.bands) mix(b);
  }
  return h >>> 0;
}

/**
 * A plan's whole-image result and the fingerprint of the inputs it was computed from. `plan`
 * creates it empty (`wholeImageMemo()`) in its params; only `cachedWhole` reads or fills it.
 */
export interface WholeImageMemo<T> {
  entry?: { readonly key: number; readonly value: T };
}

export const wholeImageMemo = <T>(): WholeImageMemo<T> => ({});

/**
 * The whole-image result for these input blocks: computed by `compute` the first time and kept in
 * the plan's `memo`, then reused while the inputs' fingerprint is unchanged.
 */
export function cachedWhole<T>(memo: WholeImageMemo<T>, inputs: readonly PixelBlock[], compute: () => T): T {
  const key = fingerprint(inputs);
  const hit = memo.entry;
  if (hit !== undefined && hit.key === key) return hit.value;
  const value = compute();
  memo.entry = { key, value };
  return value;
}

/** Union-find over pixel indexes with path halving; `find` returns the root. */
export class UnionFind {
  readonly parent: Int32Array;
  constructor(n: number) {
    this.parent = new Int32Array(n);
    for (let i = 0; i < n; i++) this.parent[i] = i;
  }
  find(i: number): number {
    const p = this.parent;
    while (p[i] !== i) {
      p[i] = p[p[i]!]!;
      i = p[i]!;
    }
    return i;
  }
  /** Join the sets of a and b; the smaller root index becomes the root (deterministic). */
  union(a: number, b: number): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra === rb) return;
    if (ra < rb) this.parent[rb] = ra;
    else this.parent[ra] = rb;
  }
}

/**
 * Dense labels 0..count-1 from a union-find, numbered in row-major order of each set's first
 * pixel; pixels with mask 0 get -1.
 */
export function denseLabels(uf: UnionFind, mask: Uint8Array): { labels: Int32Array; count: number } {
  const n = mask.length;
  const labels = new Int32Array(n).fill(-1);
  const rootLabel = new Int32Array(n).fill(-1);
  let count = 0;
  for (let i = 0; i < n; i++) {
    if (mask[i] === 0) continue;
    const r = uf.find(i);
    let l = rootLabel[r]!;
    if (l < 0) {
      l = count++;
      rootLabel[r] = l;
    }
    labels[i] = l;
  }
  return { labels, count };
}

/**
 * The request-statistics pre-pass. Functions that need statistics of an input over the whole
 * request (Stretch with DRA, Threshold's Otsu histogram, a renderer's magnitude range) say so in
 * `plan.requestStatistics`; before the first tile, `render`/`renderTiles` call
 * `bindRequestStatistics`, which returns a *bound* DAG whose kernels never see a tile-dependent
 * statistic. The rules:
 *
 * - Request rectangle of a node: the render area mapped down the DAG through every ancestor
 *   (`plan.inputRect(r, i)`, else `r` grown by `plan.halo`); a node reached along several paths takes
 *   the bounding box of its rectangles. The statistics of input `i` are taken over
 *   `inputRect(R, i)` when the node has an `inputRect` (grid changes), else over `R` itself, NOT
 *   grown by the node's own halo; or over `requestStatistics.rect` (a fixed rectangle of the node's
 *   grid: "DRA from extent", so independently requested tiles agree). Clipped to the input's grid.
 * - Order: bottom-up. A node's inputs are bound first, so an inner Stretch(DRA) under an outer
 *   Threshold is bound before the Threshold's histogram is computed from its (bound) output.
 * - Pixels: valid ones only (mask 1, finite value). Per band: min, max, mean, population stdDev,
 *   count, median and mode, and a histogram. Histograms: U8 (and U1/U2/U4) one bin per value, 256
 *   bins over -0.5..255.5; S8 likewise over -128.5..127.5; every other type `bins` (default 256)
 *   bins over [min, max], bin i covering [min + i*w, min + (i+1)*w) with w = (max - min) / bins and
 *   max in the last bin (min == max: everything in bin 0). Median and mode are bin centres (exact
 *   values for 8- and 16-bit data, whose every value is counted). Complex inputs: real parts.
 * - Determinism: the input is evaluated over a FIXED tiling of the statistics rectangle
 *   (`STATS_TILE` squares, row-major), values are summed in that order in float64, 8/16-bit data
 *   through exact integer counts (order-free: read in strips of whole rows of ~STATS_TILE^2 pixels); floats take two passes (min/max/sum, then histogram and squared
 *   deviations from the mean). Results do not depend on the caller's tile size or worker count.
 * - Binding: each node with `requestStatistics` is copied with `plan.params =
 *   fn.bindStatistics(params, stats)` and `plan.requestStatistics` removed; it and every ancestor get
 *   a new id (`#stats:<hash>` / `#in:<hash>`) so memo keys of bound and unbound graphs never mix.
 *   `bound` maps each ORIGINAL node id to its bound params: worker pools carry it in the recipe and
 *   `applyBoundParams` rebuilds the same bound DAG from the rule (tile-worker.ts).
 * - The pre-pass runs inline (not in the pool): it evaluates inner nodes, which pools cannot address.
 */
import { EngineError } from '../core/errors.js';
import { maskAllValid, type BandStatistics, type Histogram, type PixelBlock } from '../core/pixel-block.js';
import { PIXEL_TYPE_INFO, type PixelType, type Plane } from '../core/pixel-type.js';
import { grow, intersect, rect, tiles, type Rect } from '../core/rect.js';
import { evaluateTile } from './evaluate.js';
import type { FunctionNode, RasterNode, RequestBandStatistics } from './types.js';

/** Edge of the fixed tiles the pre-pass evaluates its inputs over. */
const STATS_TILE = 512;
/** Default histogram size for types other than 8-bit. */
const DEFAULT_BINS = 256;
/** Float inputs are read twice; up to this many bytes of first-pass tiles are kept for the second. */
const KEEP_BYTES = 128 * 1024 * 1024;

const needsCache = new WeakMap<RasterNode, boolean>();

/** Whether any node of the DAG asks for request statistics (cached per root). */
export function needsRequestStatistics(root: RasterNode): boolean {
  const cached = needsCache.get(root);
  if (cached !== undefined) return cached;
  const seen = new Set<string>();
  const visit = (n: RasterNode): boolean => {
    if (n.kind === 'source' || seen.has(n.id)) return false;
    seen.add(n.id);
    if (n.plan.requestStatistics !== undefined) return true;
    return n.inputs.some(visit);
  };
  const r = visit(root);
  needsCache.set(root, r);
  return r;
}

export interface BoundGraph {
  /** The DAG to evaluate: bound copies where statistics were needed, the original nodes elsewhere. */
  readonly root: RasterNode;
  /** Bound params by ORIGINAL node id (empty when nothing needed statistics). */
  readonly bound: Readonly<Record<string, unknown>>;
}

/** Nodes in post-order (inputs before the nodes that use them), each once. */
function postOrder(root: RasterNode): RasterNode[] {
  const out: RasterNode[] = [];
  const seen = new Set<string>();
  const visit = (n: RasterNode): void => {
    if (seen.has(n.id)) return;
    seen.add(n.id);
    if (n.kind === 'function') for (const i of n.inputs) visit(i);
    out.push(n);
  };
  visit(root);
  return out;
}

const union = (a: Rect | undefined, b: Rect): Rect => {
  if (a === undefined) return b;
  const x0 = Math.min(a.x, b.x);
  const y0 = Math.min(a.y, b.y);
  return rect(x0, y0, Math.max(a.x + a.width, b.x + b.width) - x0, Math.max(a.y + a.height, b.y + b.height) - y0);
};

/** The rectangle each node is evaluated over when `root` renders `area` (bounding box over paths). */
export function requestRects(root: RasterNode, area: Rect): Map<string, Rect> {
  const order = postOrder(root).reverse(); // every node before its inputs
  const rects = new Map<string, Rect>([[root.id, area]]);
  for (const n of order) {
    const r = rects.get(n.id);
    if (n.kind !== 'function' || r === undefined) continue;
    const grown = grow(r, n.plan.halo);
    n.inputs.forEach((input, i) => {
      rects.set(input.id, union(rects.get(input.id), n.plan.inputRect ? n.plan.inputRect(r, i) : grown));
    });
  }
  return rects;
}

/**
 * Bind every node's request statistics for a render of `area`. Returns `root` itself (and an empty
 * `bound`) when no node needs statistics.
 */
export async function bindRequestStatistics(root: RasterNode, area: Rect, signal?: AbortSignal): Promise<BoundGraph> {
  if (!needsRequestStatistics(root)) return { root, bound: {} };
  const rects = requestRects(root, area);
  const copies = new Map<string, RasterNode>();
  const bound: Record<string, unknown> = {};
  for (const n of postOrder(root)) {
    if (n.kind === 'source') {
      copies.set(n.id, n);
      continue;
    }
    const inputs = n.inputs.map((i) => copies.get(i.id)!);
    const rs = n.plan.requestStatistics;
    if (rs === undefined) {
      copies.set(n.id, inputs.every((i, k) => i === n.inputs[k]) ? n : rebuilt(n, inputs, undefined));
      continue;
    }
    if (n.fn.bindStatistics === undefined) {
      throw new EngineError('INTERNAL', `${n.fn.name} asks for request statistics but has no bindStatistics`);
    }
    const r = rs.rect ?? rects.get(n.id) ?? area;
    const stats: (RequestBandStatistics | undefined)[][] = [];
    for (const i of rs.inputs) {
      const input = inputs[i];
      if (input === undefined) throw new EngineError('INTERNAL', `${n.fn.name}: request statistics of a missing input ${i}`);
      const statsRect = rs.rect === undefined && n.plan.inputRect ? n.plan.inputRect(r, i) : r;
      stats.push(await computeStatistics(input, statsRect, { bins: rs.bins, signal }));
    }
    const params = n.fn.bindStatistics(n.plan.params, stats);
    bound[n.id] = params;
    copies.set(n.id, rebuilt(n, inputs, params));
  }
  return { root: copies.get(root.id)!, bound };
}

/**
 * The worker side: rebuild the bound DAG from a freshly built graph and the recipe's `bound` map.
 * Throws INTERNAL when a node still needs statistics the map does not have, or the map names nodes
 * this graph does not contain (the recipe would not rebuild the same graph).
 */
export function applyBoundParams(root: RasterNode, bound: Readonly<Record<string, unknown>>): RasterNode {
  const copies = new Map<string, RasterNode>();
  let used = 0;
  for (const n of postOrder(root)) {
    if (n.kind === 'source') {
      copies.set(n.id, n);
      continue;
    }
    const inputs = n.inputs.map((i) => copies.get(i.id)!);
    if (Object.hasOwn(bound, n.id)) {
      used++;
      copies.set(n.id, rebuilt(n, inputs, bound[n.id]));
    } else if (n.plan.requestStatistics !== undefined) {
      throw new EngineError('INTERNAL', `${n.fn.name} needs request statistics that the recipe does not carry (node ${n.id.slice(0, 80)})`);
    } else {
      copies.set(n.id, inputs.every((i, k) => i === n.inputs[k]) ? n : rebuilt(n, inputs, undefined));
    }
  }
  if (used !== Object.keys(bound).length) {
    throw new EngineError('INTERNAL', 'the recipe carries bound statistics for nodes its rule does not build');
  }
  return copies.get(root.id)!;
}

/** A copy of `n` over new inputs; with `params`, a bound copy (statistics no longer requested). */
function rebuilt(n: FunctionNode, inputs: readonly RasterNode[], params: unknown): FunctionNode {
  if (params === undefined) {
    return { ...n, id: `${n.id}#in:${hashOf(inputs.map((i) => i.id).join(','))}`, inputs };
  }
  const { requestStatistics: _done, ...rest } = n.plan;
  const plan = { ...rest, params };
  return { ...n, id: `${n.id}#stats:${hashOf([hashValue(params), ...inputs.map((i) => i.id)].join(','))}`, inputs, plan };
}

// ---- Hashes for ids (FNV-1a, two 32-bit lanes): short, deterministic, structure-aware.

function hashOf(s: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return (a >>> 0).toString(36) + (b >>> 0).toString(36);
}

function hashValue(v: unknown): string {
  const parts: string[] = [];
  const walk = (x: unknown): void => {
    if (ArrayBuffer.isView(x)) {
      parts.push(`${x.constructor.name}[`);
      const a = x as unknown as ArrayLike<number>;
      for (let i = 0; i < a.length; i++) parts.push(String(a[i]));
      parts.push(']');
    } else if (Array.isArray(x)) {
      parts.push('[');
      for (const e of x) walk(e);
      parts.push(']');
    } else if (x !== null && typeof x === 'object') {
      parts.push('{');
      for (const k of Object.keys(x).sort()) {
        parts.push(k);
        walk((x as Record<string, unknown>)[k]);
      }
      parts.push('}');
    } else {
      parts.push(typeof x === 'number' ? String(x) : (JSON.stringify(x) ?? 'u'));
    }
  };
  walk(v);
  return hashOf(parts.join(','));
}

// ---- Statistics of one node over a rectangle.

export interface StatisticsOptions {
  /** Histogram size for types other than 8-bit (default 256). */
  readonly bins?: number;
  readonly signal?: AbortSignal;
}

type Kind = 'u8' | 's8' | 'i16' | 'other';

const kindOf = (t: PixelType): Kind =>
  t === 'U8' || t === 'U1' || t === 'U2' || t === 'U4' ? 'u8' : t === 'S8' ? 's8' : t === 'U16' || t === 'S16' ? 'i16' : 'other';

/**
 * Per-band statistics and histograms of `node`'s valid pixels over `r` (clipped to its grid), one
 * entry per band, `undefined` for a band without a valid pixel. See the file header for the rules.
 */
export async function computeStatistics(
  node: RasterNode,
  r: Rect,
  options: StatisticsOptions = {},
): Promise<(RequestBandStatistics | undefined)[]> {
  const info = node.info;
  const bands = info.bandCount;
  const area = info.constant !== undefined ? r : intersect(r, rect(0, 0, info.width, info.height));
  if (area === undefined) return new Array<undefined>(bands).fill(undefined);
  const bins = options.bins ?? DEFAULT_BINS;
  if (!(Number.isInteger(bins) && bins >= 1)) throw new EngineError('INTERNAL', `bad histogram size ${bins}`);
  const kind = kindOf(info.pixelType);
  const stride = PIXEL_TYPE_INFO[info.pixelType].complex ? 2 : 1;
  const parts = tiles(area, STATS_TILE, STATS_TILE);
  const read = async (t: Rect): Promise<PixelBlock> => {
    if (options.signal?.aborted) throw new EngineError('ABORTED', 'the request was aborted', { cause: options.signal.reason });
    return evaluateTile(node, t, options.signal);
  };

  if (kind !== 'other') {
    // Exact integer counts of every value, one pass. Counts do not depend on the order of pixels,
    // so the input is read in strips of whole rows of about STATS_TILE^2 pixels (contiguous reads).
    const strips = tiles(area, area.width, Math.max(1, Math.floor((STATS_TILE * STATS_TILE) / area.width)));
    const size = kind === 'i16' ? 65536 : 256;
    const offset = kind === 'u8' ? 0 : info.pixelType === 'U16' ? 0 : size / 2;
    const counts = Array.from({ length: bands }, () => new Float64Array(size));
    for (const t of strips) {
      const block = await read(t);
      const m = block.mask;
      const valid = maskAllValid(m);
      for (let b = 0; b < bands; b++) countValues(block.bands[b]!, m, valid, stride, offset, counts[b]!);
    }
    return counts.map((c) => fromCounts(c, offset, kind === 'i16' ? bins : 0));
  }

  // Floats and 32-bit integers: pass 1 min/max/count/sum, pass 2 histogram and squared deviations.
  const min = new Float64Array(bands).fill(Infinity);
  const max = new Float64Array(bands).fill(-Infinity);
  const count = new Float64Array(bands);
  const sum = new Float64Array(bands);
  const kept: PixelBlock[] = [];
  let keptBytes = 0;
  for (const t of parts) {
    const block = await read(t);
    const m = block.mask;
    for (let b = 0; b < bands; b++) {
      const src = block.bands[b]!;
      let lo = min[b]!;
      let hi = max[b]!;
      let n = 0;
      let s = 0;
      for (let i = 0; i < m.length; i++) {
        if (m[i] === 0) continue;
        const v = src[i * stride]!;
        if (v - v !== 0) continue; // NaN, +-Infinity
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        s += v;
        n++;
      }
      min[b] = lo;
      max[b] = hi;
      count[b] = count[b]! + n;
      sum[b] = sum[b]! + s;
    }
    const bytes = block.bands.reduce((a, p) => a + p.byteLength, block.mask.byteLength);
    if (keptBytes + bytes <= KEEP_BYTES) {
      kept.push(block);
      keptBytes += bytes;
    }
  }
  const mean = Array.from(sum, (s, b) => s / count[b]!);
  const hist = Array.from({ length: bands }, () => new Float64Array(bins));
  const dev = new Float64Array(bands);
  for (let k = 0; k < parts.length; k++) {
    const block = k < kept.length ? kept[k]! : await read(parts[k]!);
    const m = block.mask;
    for (let b = 0; b < bands; b++) {
      if (count[b] === 0) continue;
      const src = block.bands[b]!;
      const h = hist[b]!;
      const lo = min[b]!;
      const w = (max[b]! - lo) / bins;
      const mu = mean[b]!;
      const last = bins - 1;
      let d = 0;
      for (let i = 0; i < m.length; i++) {
        if (m[i] === 0) continue;
        const v = src[i * stride]!;
        if (v - v !== 0) continue;
        const j = w > 0 ? Math.floor((v - lo) / w) : 0;
        h[j > last ? last : j]!++;
        d += (v - mu) * (v - mu);
      }
      dev[b] = dev[b]! + d;
    }
  }
  return Array.from({ length: bands }, (_, b) => {
    const n = count[b]!;
    if (n === 0) return undefined;
    const lo = min[b]!;
    const hi = max[b]!;
    const counts = Array.from(hist[b]!);
    const histogram: Histogram = { size: bins, min: lo, max: hi, counts };
    const w = (hi - lo) / bins;
    const { median, mode } = medianMode(hist[b]!, n, (i) => lo + (i + 0.5) * w);
    const statistics: BandStatistics = { min: lo, max: hi, mean: mean[b]!, stdDev: Math.sqrt(dev[b]! / n), count: n, median, mode };
    return { statistics, histogram };
  });
}

/**
 * c[v + offset]++ for every valid pixel value v (8/16-bit data: exact counts, so the order of
 * pixels does not matter). One loop per array type and case keeps each loop monomorphic.
 */
function countValues(src: Plane, m: Uint8Array, valid: boolean, stride: number, offset: number, c: Float64Array): void {
  if (stride === 1 && offset === 0 && valid) {
    if (src instanceof Uint8Array) return countU8(src, c);
    if (src instanceof Uint16Array) return countU16(src, c);
  }
  if (stride === 1 && src instanceof Int16Array) return countS16(src, m, valid, offset, c);
  for (let i = 0; i < m.length; i++) if (m[i] !== 0) c[src[i * stride]! + offset]!++;
}

/** Four interleaved integer histograms (no float adds, no store-to-load chains on runs of equal values). */
const u8Counts = new Int32Array(4 * 256);
function countU8(src: Uint8Array, c: Float64Array): void {
  const h = u8Counts;
  h.fill(0);
  const n = src.length;
  const n4 = n - (n & 3);
  let i = 0;
  for (; i < n4; i += 4) {
    h[src[i]!]!++;
    h[256 + src[i + 1]!]!++;
    h[512 + src[i + 2]!]!++;
    h[768 + src[i + 3]!]!++;
  }
  for (; i < n; i++) h[src[i]!]!++;
  for (let v = 0; v < 256; v++) c[v] = c[v]! + (h[v]! + h[256 + v]! + h[512 + v]! + h[768 + v]!);
}

const u16Counts = new Int32Array(65536);
function countU16(src: Uint16Array, c: Float64Array): void {
  const h = u16Counts;
  h.fill(0);
  for (let i = 0; i < src.length; i++) h[src[i]!]!++;
  for (let v = 0; v < 65536; v++) if (h[v] !== 0) c[v] = c[v]! + h[v]!;
}

function countS16(src: Int16Array, m: Uint8Array, valid: boolean, offset: number, c: Float64Array): void {
  if (valid) for (let i = 0; i < src.length; i++) c[src[i]! + offset]!++;
  else for (let i = 0; i < src.length; i++) if (m[i] !== 0) c[src[i]! + offset]!++;
}

/** Statistics from exact value counts (8/16-bit); `rebin` > 0: histogram of that many bins over [min, max]. */
function fromCounts(c: Float64Array, offset: number, rebin: number): RequestBandStatistics | undefined {
  let n = 0;
  let s = 0;
  let first = -1;
  let last = -1;
  for (let i = 0; i < c.length; i++) {
    const k = c[i]!;
    if (k === 0) continue;
    if (first < 0) first = i;
    last = i;
    n += k;
    s += k * (i - offset);
  }
  if (n === 0) return undefined;
  const mean = s / n;
  let d = 0;
  for (let i = first; i <= last; i++) if (c[i] !== 0) d += c[i]! * (i - offset - mean) * (i - offset - mean);
  const { median, mode } = medianMode(c, n, (i) => i - offset);
  const min = first - offset;
  const max = last - offset;
  const statistics: BandStatistics = { min, max, mean, stdDev: Math.sqrt(d / n), count: n, median, mode };
  let histogram: Histogram;
  if (rebin === 0) {
    histogram = { size: 256, min: -offset - 0.5, max: 255.5 - offset, counts: Array.from(c) };
  } else {
    const h = new Array<number>(rebin).fill(0);
    const w = (max - min) / rebin;
    for (let i = first; i <= last; i++) {
      if (c[i] === 0) continue;
      const j = w > 0 ? Math.floor((i - offset - min) / w) : 0;
      h[j > rebin - 1 ? rebin - 1 : j]! += c[i]!;
    }
    histogram = { size: rebin, min, max, counts: h };
  }
  return { statistics, histogram };
}

/** Median (first bin where the running count reaches half) and mode (first fullest bin), as values. */
function medianMode(c: Float64Array, n: number, value: (i: number) => number): { median: number; mode: number } {
  let run = 0;
  let median = Number.NaN;
  let best = -1;
  let mode = Number.NaN;
  for (let i = 0; i < c.length; i++) {
    const k = c[i]!;
    if (k > best) {
      best = k;
      mode = value(i);
    }
    run += k;
    if (Number.isNaN(median) && run >= n / 2) median = value(i);
  }
  return { median, mode };
}

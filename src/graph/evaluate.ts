/**
 * Pull-based, halo-aware evaluation of one tile: a node asks each input for its rectangle grown by
 * the node's halo, then runs its kernel. Halos add up down a chain. A memo keyed by (node id, rect),
 * scoped to one tile, lets branches of the DAG that need the same pixels share them. Nodes that
 * need request statistics must be bound first (`render`/`renderTiles` do it; request-statistics.ts):
 * evaluating an unbound one is a programming error, never a silent per-tile statistic.
 *
 * Memory: when the wasm kernels are on, a tile's source reads (`readInto`) and function outputs
 * are allocated in wasm memory (src/wasm/planes.ts `TileBlocks`), so every wasm kernel of a chain
 * binds its planes in place (no per-node copy), and they are all given back when the tile is done.
 * A tile's result leaves as ordinary JS memory (`evaluateTile`: one copy per tile), or stays in
 * wasm memory until its consumer releases it (`evaluateTileHeld`; `renderTiles` with `transient`).
 * Decision: the GeoTIFF source still decodes into its shared block cache and copies the window
 * into the block's planes (now in wasm memory): a tile's window is grown by the chain's halo, so it
 * never is one whole file block, and the cache is what lets neighbouring tiles share the blocks
 * their halos cross; that copy replaces the first kernel's copy in, it is not an extra one. It is
 * one copy per block row (a typed-array `set`, a memcpy), and the window's NoData/NaN mask is then
 * computed in wasm over the planes (src/wasm/reader.ts). Decoding straight into the plane was
 * weighed and left: node:zlib has no API that inflates into a caller's buffer (its output is a
 * fresh Buffer, which the copy reads while it is still in the CPU cache), a 256 x 256 tile's window
 * grown by a halo of 2 is 260 x 260 and so never one file block, and the blocks its halo crosses
 * are the neighbouring tiles' too (the cache decodes each once).
 */
import { EngineError } from '../core/errors.js';
import { allocateBlock, type PixelBlock } from '../core/pixel-block.js';
import { grow, rectKey, type Rect } from '../core/rect.js';
import { inWasmMemory, ownMemory, sharesMemory, tileBlocks, type TileBlocks } from '../wasm/planes.js';
import type { FunctionNode, RasterNode, SourceNode } from './types.js';

export interface EvalContext {
  readonly signal?: AbortSignal;
  readonly memo: Map<string, Promise<PixelBlock>>;
  /** Source blocks read into recycled blocks for this tile; `evaluateTile` recycles them again. */
  readonly reads?: PixelBlock[];
  /**
   * The tile's allocator when planes live in wasm memory (wasm on): source reads and function
   * outputs are allocated there and given back together when the tile is done.
   */
  readonly blocks?: TileBlocks;
}

/**
 * A tile whose planes may live in wasm memory until `release()` (`evaluateTileHeld`): the consumer
 * reads (copies, encodes) the block, then releases it, after which no plane of it may be used.
 */
export interface HeldBlock {
  readonly block: PixelBlock;
  release(): void;
}

export function evaluate(node: RasterNode, r: Rect, ctx: EvalContext): Promise<PixelBlock> {
  const key = `${node.id}@${rectKey(r)}`;
  let block = ctx.memo.get(key);
  if (block === undefined) {
    block = node.kind === 'source' ? readSource(node, r, ctx) : run(node, r, ctx);
    ctx.memo.set(key, block);
  }
  return block;
}

/**
 * Source blocks that tiles no longer use, by pixel type, band count and size: a render reads one
 * block per tile per source, all of one size but the edge tiles, and reading into a used block
 * spares the allocator and the collector (`SourceNode.readInto`; renders of a 4096^2 GeoTIFF 5%
 * faster here). At most RECYCLED_KEPT per size and RECYCLED_BYTES in all are kept.
 */
const recycled = new Map<string, PixelBlock[]>();
const RECYCLED_KEPT = 16;
const RECYCLED_BYTES = 64 * 1024 * 1024;
let recycledBytes = 0;
const recycleKey = (t: string, bands: number, r: Rect): string => `${t}:${bands}:${r.width}x${r.height}`;
const bytesOf = (b: PixelBlock): number => b.mask.byteLength + b.bands.reduce((n, p) => n + p.byteLength, 0);

function readSource(node: SourceNode, r: Rect, ctx: EvalContext): Promise<PixelBlock> {
  if (!node.readInto || !ctx.reads) return node.read(r, ctx.signal);
  // Not filled first: readInto overwrites the planes and mask whole.
  if (ctx.blocks) return node.readInto(ctx.blocks.allocateUnfilled(r, node.info.pixelType, node.info.bandCount), ctx.signal);
  const { pixelType, bandCount } = node.info;
  const used = recycled.get(recycleKey(pixelType, bandCount, r))?.pop();
  if (used) recycledBytes -= bytesOf(used);
  const block = used ? { ...used, rect: r } : allocateBlock(r, pixelType, bandCount);
  ctx.reads.push(block);
  return node.readInto(block, ctx.signal);
}

/**
 * Give the tile's source blocks back, unless the result holds any of their memory (a kernel may
 * pass an input plane through; kernels never keep inputs past their call). Only after success:
 * after a failure, reads may still be running. Memory is compared by address range, not by
 * `.buffer` (views may share one buffer: every plane in wasm memory does).
 */
function recycle(reads: readonly PixelBlock[], result: PixelBlock): void {
  const held: ArrayBufferView[] = [result.mask, ...result.bands];
  const isHeld = (p: ArrayBufferView): boolean => held.some((h) => sharesMemory(h, p));
  for (const b of reads) {
    if (isHeld(b.mask) || b.bands.some(isHeld)) continue;
    const key = recycleKey(b.pixelType, b.bands.length, b.rect);
    const list = recycled.get(key) ?? [];
    const bytes = bytesOf(b);
    if (list.length >= RECYCLED_KEPT || recycledBytes + bytes > RECYCLED_BYTES) continue;
    list.push(b);
    recycledBytes += bytes;
    recycled.set(key, list);
  }
}

async function run(node: FunctionNode, r: Rect, ctx: EvalContext): Promise<PixelBlock> {
  if (ctx.signal?.aborted) throw new EngineError('ABORTED', 'the request was aborted', { cause: ctx.signal.reason });
  const { halo, inputRect } = node.plan;
  if (node.plan.requestStatistics !== undefined) {
    throw new EngineError(
      'INTERNAL',
      `${node.fn.name} needs statistics of the whole request: render the graph with render()/renderTiles(), or bind it with bindRequestStatistics() before evaluating tiles`,
    );
  }
  const grown = grow(r, halo);
  const inputs = await Promise.all(node.inputs.map((input, i) => evaluate(input, inputRect ? inputRect(r, i) : grown, ctx)));
  const { pixelType, bandCount } = node.plan.info;
  const out = ctx.blocks ? ctx.blocks.allocate(r, pixelType, bandCount) : allocateBlock(r, pixelType, bandCount);
  node.fn.kernel(node.plan.params, inputs, out);
  return out;
}

/**
 * Evaluate `node` over `r` with a fresh memo (one tile); its source blocks are recycled after.
 * The result is ordinary JS memory, the caller's to keep: when it lives in wasm memory it is
 * copied out (once per tile) and the tile's blocks are given back.
 */
export async function evaluateTile(node: RasterNode, r: Rect, signal?: AbortSignal): Promise<PixelBlock> {
  const held = await evaluateTileHeld(node, r, signal);
  const own = ownMemory(held.block);
  held.release();
  return own;
}

/**
 * `evaluateTile` whose result may stay in wasm memory (when wasm is on): no copy. The caller reads
 * the block, then calls `release()`, which gives back every block of the tile (intermediates,
 * source reads and the result); the block must not be used after. Intermediates are given back
 * when the tile is done, whatever the result; after a failure, once every node of the tile has
 * settled (a read may still be writing into its block until then).
 */
export async function evaluateTileHeld(node: RasterNode, r: Rect, signal?: AbortSignal): Promise<HeldBlock> {
  const reads: PixelBlock[] = [];
  const blocks = tileBlocks();
  const memo = new Map<string, Promise<PixelBlock>>();
  let out: PixelBlock;
  try {
    out = await evaluate(node, r, { signal, memo, reads, ...(blocks ? { blocks } : {}) });
  } catch (e) {
    if (blocks) await settled(memo).finally(() => blocks.release());
    throw e;
  }
  recycle(reads, out);
  if (blocks === undefined) return { block: out, release: () => undefined };
  if (!inWasmMemory(out)) {
    blocks.release();
    return { block: out, release: () => undefined };
  }
  return { block: out, release: () => blocks.release() };
}

/** Wait until every evaluation in the memo has settled, including those started meanwhile. */
async function settled(memo: ReadonlyMap<string, Promise<PixelBlock>>): Promise<void> {
  let seen = -1;
  while (seen !== memo.size) {
    seen = memo.size;
    await Promise.allSettled([...memo.values()]);
  }
}

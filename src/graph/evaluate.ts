/**
 * Pull-based, halo-aware evaluation of one tile: a node asks each input for its rectangle grown by
 * the node's halo, then runs its kernel. Halos add up down a chain. A memo keyed by (node id, rect),
 * scoped to one tile, lets branches of the DAG that need the same pixels share them. Nodes that
 * need request statistics must be bound first (`render`/`renderTiles` do it; request-statistics.ts):
 * evaluating an unbound one is a programming error, never a silent per-tile statistic.
 */
import { EngineError } from '../core/errors.js';
import { allocateBlock, type PixelBlock } from '../core/pixel-block.js';
import { grow, rectKey, type Rect } from '../core/rect.js';
import type { FunctionNode, RasterNode, SourceNode } from './types.js';

export interface EvalContext {
  readonly signal?: AbortSignal;
  readonly memo: Map<string, Promise<PixelBlock>>;
  /** Source blocks read into recycled blocks for this tile; `evaluateTile` recycles them again. */
  readonly reads?: PixelBlock[];
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
 * after a failure, reads may still be running.
 */
function recycle(reads: readonly PixelBlock[], result: PixelBlock): void {
  const held = new Set<ArrayBufferLike>([result.mask.buffer, ...result.bands.map((b) => b.buffer)]);
  for (const b of reads) {
    if (held.has(b.mask.buffer) || b.bands.some((p) => held.has(p.buffer))) continue;
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
  const out = allocateBlock(r, node.plan.info.pixelType, node.plan.info.bandCount);
  node.fn.kernel(node.plan.params, inputs, out);
  return out;
}

/** Evaluate `node` over `r` with a fresh memo (one tile); its source blocks are recycled after. */
export async function evaluateTile(node: RasterNode, r: Rect, signal?: AbortSignal): Promise<PixelBlock> {
  const reads: PixelBlock[] = [];
  const out = await evaluate(node, r, { signal, memo: new Map(), reads });
  recycle(reads, out);
  return out;
}

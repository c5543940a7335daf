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
import type { FunctionNode, RasterNode } from './types.js';

export interface EvalContext {
  readonly signal?: AbortSignal;
  readonly memo: Map<string, Promise<PixelBlock>>;
}

export function evaluate(node: RasterNode, r: Rect, ctx: EvalContext): Promise<PixelBlock> {
  const key = `${node.id}@${rectKey(r)}`;
  let block = ctx.memo.get(key);
  if (block === undefined) {
    block = node.kind === 'source' ? node.read(r, ctx.signal) : run(node, r, ctx);
    ctx.memo.set(key, block);
  }
  return block;
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

/** Evaluate `node` over `r` with a fresh memo (one tile). */
export const evaluateTile = (node: RasterNode, r: Rect, signal?: AbortSignal): Promise<PixelBlock> =>
  evaluate(node, r, { signal, memo: new Map() });

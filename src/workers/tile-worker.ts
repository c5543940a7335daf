/**
 * Worker entry: rebuild the DAG from a recipe (cached by its JSON), apply the parameters the
 * request-statistics pre-pass bound in the main thread (`recipe.bound`, cached by `boundKey`),
 * evaluate one tile, send the block back with its buffers transferred.
 */
import { parentPort } from 'node:worker_threads';
import { toEngineError, type ErrorCode, type Issue } from '../core/errors.js';
import type { PixelBlock } from '../core/pixel-block.js';
import type { Rect } from '../core/rect.js';
import { evaluateTile } from '../graph/evaluate.js';
import { applyBoundParams } from '../graph/request-statistics.js';
import type { Recipe } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import { registry } from '../functions/index.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { openRaster } from '../io/source.js';

export interface TileRequest {
  readonly id: number;
  readonly recipe: Recipe;
  readonly tile: Rect;
}

export type TileReply =
  | { readonly id: number; readonly ok: true; readonly block: PixelBlock }
  | { readonly id: number; readonly ok: false; readonly error: { code: ErrorCode; message: string; path?: string; issues: readonly Issue[] } };

const graphs = new Map<string, Promise<RasterNode>>();

function graphFor(recipe: Recipe): Promise<RasterNode> {
  const base = JSON.stringify({ rule: recipe.rule, sources: recipe.sources });
  const key = recipe.bound === undefined ? base : `${base}\n${recipe.boundKey ?? JSON.stringify(recipe.bound)}`;
  let g = graphs.get(key);
  if (g === undefined) {
    const built = graphs.get(base) ?? buildGraph(recipe.rule, { registry, resolveSource: bindSources(recipe.sources, openRaster) }).then((b) => b.root);
    const bound = recipe.bound;
    g = bound === undefined ? built : built.then((root) => applyBoundParams(root, bound));
    if (graphs.size > 16) graphs.clear();
    if (bound !== undefined) graphs.set(base, built);
    graphs.set(key, g);
  }
  return g;
}

parentPort?.on('message', async (m: TileRequest) => {
  try {
    const block = await evaluateTile(await graphFor(m.recipe), m.tile);
    const reply: TileReply = { id: m.id, ok: true, block };
    const buffers = new Set<ArrayBuffer>([block.mask.buffer as ArrayBuffer, ...block.bands.map((b) => b.buffer as ArrayBuffer)]);
    parentPort!.postMessage(reply, [...buffers]);
  } catch (e) {
    const err = toEngineError(e);
    const reply: TileReply = { id: m.id, ok: false, error: { code: err.code, message: err.message, path: err.path, issues: err.issues } };
    parentPort!.postMessage(reply);
  }
});

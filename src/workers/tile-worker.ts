/**
 * Worker entry: rebuild the DAG from a recipe (cached by its JSON), evaluate one tile, send the
 * block back with its buffers transferred.
 */
import { parentPort } from 'node:worker_threads';
import { toEngineError, type ErrorCode, type Issue } from '../core/errors.js';
import type { PixelBlock } from '../core/pixel-block.js';
import type { Rect } from '../core/rect.js';
import { evaluateTile } from '../graph/evaluate.js';
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
  const key = JSON.stringify(recipe);
  let g = graphs.get(key);
  if (g === undefined) {
    g = buildGraph(recipe.rule, { registry, resolveSource: bindSources(recipe.sources, openRaster) }).then((b) => b.root);
    if (graphs.size > 16) graphs.clear();
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

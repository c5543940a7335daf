/**
 * Worker entry: rebuild the DAG from a recipe (recipe-graph.ts: cached by its JSON, with the
 * parameters the request-statistics pre-pass bound in the main thread), evaluate one tile, send the block back with its buffers transferred.
 */
import { parentPort } from 'node:worker_threads';
import { toEngineError, type ErrorCode, type Issue } from '../core/errors.js';
import type { PixelBlock } from '../core/pixel-block.js';
import type { Plane } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { evaluateTile } from '../graph/evaluate.js';
import type { Recipe } from '../graph/render.js';
import { useRecipeGraph, type RecipeGraph } from './recipe-graph.js';
import { copyOf } from '../wasm/planes.js';

export interface TileRequest {
  readonly id: number;
  readonly recipe: Recipe;
  readonly tile: Rect;
}

export type TileReply =
  | { readonly id: number; readonly ok: true; readonly block: PixelBlock }
  | {
      readonly id: number;
      readonly ok: false;
      readonly error: { code: ErrorCode; message: string; path?: string; issues: readonly Issue[] };
    };

/**
 * `block` ready to post: every plane (and the mask) owning its buffer whole, and those buffers to
 * transfer. A view on part of a buffer (a plane in wasm memory, a subarray) is copied first:
 * transferring its buffer would detach memory still in use (a wasm memory's cannot be detached at
 * all), and cloning it would copy the whole buffer (all of the wasm memory).
 */
export function transferable(block: PixelBlock): { block: PixelBlock; transfer: ArrayBuffer[] } {
  const seen = new Set<ArrayBufferLike>();
  const own = <T extends Uint8Array | Plane>(v: T): T => {
    const whole = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && v.buffer instanceof ArrayBuffer && !seen.has(v.buffer);
    const out = whole ? v : copyOf(v);
    seen.add(out.buffer);
    return out;
  };
  const out = { ...block, mask: own(block.mask), bands: block.bands.map(own) };
  return { block: out, transfer: [...seen] as ArrayBuffer[] };
}

/** Render one requested tile and post it (or its error) back. */
async function serve(m: TileRequest): Promise<void> {
  let graph: RecipeGraph | undefined;
  try {
    graph = useRecipeGraph(m.recipe);
    // evaluateTile's result is ordinary JS memory: planes in wasm memory share the memory's one
    // buffer, whose transfer would fail (and whose clone would copy all of it).
    const { block, transfer } = transferable(await evaluateTile(await graph.root, m.tile));
    const reply: TileReply = { id: m.id, ok: true, block };
    parentPort!.postMessage(reply, transfer);
  } catch (e) {
    const err = toEngineError(e);
    const reply: TileReply = { id: m.id, ok: false, error: { code: err.code, message: err.message, path: err.path, issues: err.issues } };
    parentPort!.postMessage(reply);
  } finally {
    graph?.release();
  }
}

parentPort?.on('message', (m: TileRequest) => void serve(m));

/**
 * Worker entry: rebuild the DAG from a recipe (cached by its JSON), apply the parameters the
 * request-statistics pre-pass bound in the main thread (`recipe.bound`, cached by `boundKey`),
 * evaluate one tile, send the block back with its buffers transferred.
 */
import { parentPort } from 'node:worker_threads';
import { toEngineError, type ErrorCode, type Issue } from '../core/errors.js';
import type { PixelBlock } from '../core/pixel-block.js';
import type { Plane } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { evaluateTile } from '../graph/evaluate.js';
import { applyBoundParams } from '../graph/request-statistics.js';
import type { Recipe } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import { resampledOpener, warpNode } from '../graph/warp.js';
import { registry } from '../functions/index.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { openerScope, outsizeOpener, type OpenerScope } from '../io/source.js';

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
 * One DAG built from a recipe's rule and sources, with the rasters it opened. An evicted build
 * closes them once no tile is still being evaluated over it (they were left to the garbage
 * collector before, one file handle per source on every eviction).
 */
interface Build {
  readonly root: Promise<RasterNode>;
  readonly files: OpenerScope;
  users: number;
  evicted: boolean;
}

interface Graph {
  readonly build: Build;
  readonly root: Promise<RasterNode>;
}

const builds = new Map<string, Build>();
const graphs = new Map<string, Graph>();

function closeBuild(build: Build): void {
  void build.files.closeAll();
}

function release(build: Build): void {
  build.users--;
  if (build.evicted && build.users === 0) closeBuild(build);
}

function graphFor(recipe: Recipe): Graph {
  const base = JSON.stringify({
    rule: recipe.rule,
    sources: recipe.sources,
    outsize: recipe.outsize,
    outsizeMethod: recipe.outsizeMethod,
    warp: recipe.warp,
  });
  const key = recipe.bound === undefined ? base : `${base}\n${recipe.boundKey ?? JSON.stringify(recipe.bound)}`;
  let g = graphs.get(key);
  if (g === undefined) {
    let build = builds.get(base);
    if (build === undefined) {
      const files = openerScope();
      const { outsize, outsizeMethod, warp } = recipe;
      const open = outsize
        ? outsizeMethod !== undefined && outsizeMethod !== 'nearest'
          ? resampledOpener(files.open, outsize, outsizeMethod)
          : outsizeOpener(files.open, outsize)
        : files.open;
      const root = buildGraph(recipe.rule, { registry, resolveSource: bindSources(recipe.sources, open) }).then((b) =>
        warp ? warpNode(b.root, warp.grid, warp.method) : b.root,
      );
      build = { root, files, users: 0, evicted: false };
      // A failed build keeps no raster open (the failure itself stays cached).
      const failed = build;
      root.catch(() => closeBuild(failed));
    }
    const bound = recipe.bound;
    g = { build, root: bound === undefined ? build.root : build.root.then((root) => applyBoundParams(root, bound)) };
    if (graphs.size > 16) {
      for (const b of builds.values()) {
        if (b === build) continue;
        b.evicted = true;
        if (b.users === 0) closeBuild(b);
      }
      graphs.clear();
      builds.clear();
    }
    builds.set(base, build);
    graphs.set(key, g);
  }
  return g;
}

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
    const out = whole ? v : (v.slice() as T);
    seen.add(out.buffer);
    return out;
  };
  const out = { ...block, mask: own(block.mask), bands: block.bands.map(own) };
  return { block: out, transfer: [...seen] as ArrayBuffer[] };
}

/** Render one requested tile and post it (or its error) back. */
async function serve(m: TileRequest): Promise<void> {
  let build: Build | undefined;
  try {
    const graph = graphFor(m.recipe);
    build = graph.build;
    build.users++;
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
    if (build) release(build);
  }
}

parentPort?.on('message', (m: TileRequest) => void serve(m));

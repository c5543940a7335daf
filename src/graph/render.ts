/**
 * Render a rectangle of a graph's output: cut it into tiles, evaluate each through a tile pool
 * (inline by default; a worker pool is injected by hosts), and either hand tiles to a sink as they
 * finish (streaming writers) or assemble one block. Tiles never depend on each other, so the
 * result is the same for any tile size and any number of workers. Functions that need statistics of
 * the whole request (Stretch DRA, Threshold) are bound first by a pre-pass over the render area
 * (request-statistics.ts); worker pools receive the bound parameters in the recipe.
 */
import { EngineError } from '../core/errors.js';
import { allocateBlock, copyInto, type PixelBlock } from '../core/pixel-block.js';
import { rect, tiles, type Rect } from '../core/rect.js';
import { evaluateTile, evaluateTileHeld, type HeldBlock } from './evaluate.js';
import { bindRequestStatistics } from './request-statistics.js';
import type { WarpGrid, WarpMethod } from './warp.js';
import type { RasterNode } from './types.js';

/**
 * How a worker rebuilds the same DAG: the rule JSON and the locations bound to its references.
 * Plain data, structured-cloneable; code is never serialised.
 */
export interface Recipe {
  readonly rule: unknown;
  readonly sources: Readonly<Record<string, string>>;
  /**
   * Set by the renderer, not by callers: kernel parameters bound by the request-statistics pre-pass,
   * by the ORIGINAL id of their node (`applyBoundParams` in the worker), and the bound root's id
   * (the worker's cache key for the bound graph).
   */
  readonly bound?: Readonly<Record<string, unknown>>;
  readonly boundKey?: string;
  /** Sources read downsampled (io `Outsize`, the CLI's `--outsize`): workers open them the same way. */
  readonly outsize?: { readonly width: number; readonly height: number; readonly baseWidth: number; readonly baseHeight: number };
  /** How `outsize` resamples when not by today's nearest from overviews (the CLI's `-r` with `--outsize`; graph/warp.ts resampledOpener). */
  readonly outsizeMethod?: WarpMethod;
  /** The rule's output warped onto this grid (the CLI's `--t_srs/--te/--tr/--ts`; graph/warp.ts warpNode): workers apply it too. */
  readonly warp?: { readonly grid: WarpGrid; readonly method: WarpMethod };
}

/** Where tiles are computed. `size: 0` pools run inline; worker pools rebuild the DAG per worker. */
export interface TilePool {
  readonly size: number;
  run(root: RasterNode, tile: Rect, signal?: AbortSignal, recipe?: Recipe): Promise<PixelBlock>;
  /**
   * Optional: `run` whose result may stay in memory the pool lends (wasm memory) until released
   * (evaluate.ts `evaluateTileHeld`); renders with `transient` tiles use it.
   */
  runHeld?(root: RasterNode, tile: Rect, signal?: AbortSignal, recipe?: Recipe): Promise<HeldBlock>;
}

export const inlinePool: TilePool = {
  size: 0,
  run: (root, tile, signal) => evaluateTile(root, tile, signal),
  runHeld: (root, tile, signal) => evaluateTileHeld(root, tile, signal),
};

export interface RenderOptions {
  /** Output rectangle; default the whole raster. */
  readonly rect?: Rect;
  /** Tile edge in pixels (default 256); or `[width, height]`. */
  readonly tileSize?: number | readonly [number, number];
  readonly signal?: AbortSignal;
  readonly pool?: TilePool;
  /** Tiles evaluated at once (default: 2 per pool worker, 1 inline). */
  readonly concurrency?: number;
  /** Lets a worker pool rebuild the DAG; without it every pool computes inline. */
  readonly recipe?: Recipe;
  /**
   * `renderTiles`: each yielded tile is valid only until the consumer asks for the next one (or
   * stops): it copies or encodes it at once and keeps no reference to its planes. Tiles then stay
   * where the evaluator computed them (wasm memory) instead of being copied out per tile.
   * Default false: tiles are the consumer's to keep.
   */
  readonly transient?: boolean;
}

const DEFAULT_TILE = 256;

export function planTiles(root: RasterNode, opts: RenderOptions): { area: Rect; tileRects: Rect[] } {
  const area = opts.rect ?? rect(0, 0, root.info.width, root.info.height);
  if (area.width <= 0 || area.height <= 0 || !Number.isInteger(area.x + area.y + area.width + area.height)) {
    throw new EngineError('INVALID_ARGUMENT', `bad output window ${JSON.stringify(area)}`, { path: 'window' });
  }
  const size = opts.tileSize ?? DEFAULT_TILE;
  const [tw, th] = typeof size === 'number' ? [size, size] : size;
  if (!(tw >= 1 && th >= 1)) throw new EngineError('INVALID_ARGUMENT', `bad tile size ${tw}x${th}`, { path: 'tileSize' });
  return { area, tileRects: tiles(area, tw, th) };
}

/**
 * Request statistics first (a no-op unless some node asks for them), over the whole `area`: the
 * graph to evaluate, and the recipe carrying the bound parameters to wherever tiles are computed.
 */
export async function bindRequest(
  graph: RasterNode,
  area: Rect,
  opts: Pick<RenderOptions, 'recipe' | 'signal'>,
): Promise<{ root: RasterNode; recipe: Recipe | undefined }> {
  const bound = await bindRequestStatistics(graph, area, opts.signal);
  const root = bound.root;
  const recipe = opts.recipe === undefined || root === graph ? opts.recipe : { ...opts.recipe, bound: bound.bound, boundKey: root.id };
  return { root, recipe };
}

/** Tiles in row-major order, as they are computed (at most `concurrency` in flight). */
export async function* renderTiles(graph: RasterNode, opts: RenderOptions = {}): AsyncGenerator<PixelBlock> {
  const { area, tileRects } = planTiles(graph, opts);
  const { root, recipe } = await bindRequest(graph, area, opts);
  const pool = opts.pool ?? inlinePool;
  const inFlight = Math.max(1, opts.concurrency ?? (pool.size === 0 ? 1 : 2 * pool.size));
  const held = opts.transient === true && pool.runHeld !== undefined;
  const pending: Promise<HeldBlock>[] = [];
  let next = 0;
  const launch = (): void => {
    const t = tileRects[next++]!;
    const p = held ? pool.runHeld!(root, t, opts.signal, recipe) : pool.run(root, t, opts.signal, recipe).then(kept);
    p.catch(() => undefined); // observed when awaited below; avoid unhandled rejections meanwhile
    pending.push(p);
  };
  let current: HeldBlock | undefined;
  try {
    while (next < tileRects.length && pending.length < inFlight) launch();
    while (pending.length > 0) {
      current = await pending.shift()!;
      if (next < tileRects.length) launch();
      yield current.block;
      current.release();
      current = undefined;
    }
  } finally {
    // The consumer stopped (or a tile failed): give back the tile it held and those still coming.
    current?.release();
    for (const p of pending)
      p.then(
        (h) => h.release(),
        () => undefined,
      );
  }
}

const kept = (block: PixelBlock): HeldBlock => ({ block, release: () => undefined });

/** The whole requested rectangle as one block. */
export async function render(root: RasterNode, opts: RenderOptions = {}): Promise<PixelBlock> {
  const { area } = planTiles(root, opts);
  const out = allocateBlock(area, root.info.pixelType, root.info.bandCount);
  for await (const tile of renderTiles(root, { ...opts, transient: true })) copyInto(tile, out);
  return out;
}

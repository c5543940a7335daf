/**
 * The DAG a recipe describes, rebuilt where tiles are computed away from the process that planned
 * the render: worker threads (tile-worker.ts) and queue workers (queue/render-queue.ts). Built from
 * the rule JSON and the locations bound to its references, with the parameters the
 * request-statistics pre-pass bound in the planning process applied (`recipe.bound`), cached by the
 * recipe's JSON (and `boundKey`).
 */
import type { Recipe } from '../graph/render.js';
import { applyBoundParams } from '../graph/request-statistics.js';
import type { RasterNode } from '../graph/types.js';
import { resampledOpener, warpNode } from '../graph/warp.js';
import { registry } from '../functions/index.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { openerScope, outsizeOpener, type OpenerScope } from '../io/source.js';

/**
 * One DAG built from a recipe's rule and sources, with the rasters it opened. An evicted build
 * closes them once no tile is still being evaluated over it.
 */
interface Build {
  readonly root: Promise<RasterNode>;
  readonly files: OpenerScope;
  users: number;
  evicted: boolean;
}

/** A recipe's graph in use: `release()` once the tiles evaluated over it are done. */
export interface RecipeGraph {
  readonly root: Promise<RasterNode>;
  release(): void;
}

interface Graph {
  readonly build: Build;
  readonly root: Promise<RasterNode>;
}

const builds = new Map<string, Build>();
const graphs = new Map<string, Graph>();
/** Graphs kept (bound variants included) before every build but the newest is closed. */
const MAX_GRAPHS = 16;

function closeBuild(build: Build): void {
  void build.files.closeAll();
}

function graphOf(recipe: Recipe): Graph {
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
    if (graphs.size > MAX_GRAPHS) {
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

/** The graph of `recipe`, held until `release()`: its rasters stay open while it is in use. */
export function useRecipeGraph(recipe: Recipe): RecipeGraph {
  const { build, root } = graphOf(recipe);
  build.users++;
  let released = false;
  return {
    root,
    release() {
      if (released) return;
      released = true;
      build.users--;
      if (build.evicted && build.users === 0) closeBuild(build);
    },
  };
}

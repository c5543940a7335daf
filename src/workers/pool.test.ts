import { getEventListeners } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { registry } from '../functions/index.js';
import { render } from '../graph/render.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { closingOpener, firstDifference } from '../../test/helpers.js';
import { createPool } from './pool.js';

const DEM = join(resolve(import.meta.dirname, '../..'), 'golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const pool = createPool({ size: 2 });
afterAll(() => pool.destroy());

// Rasters opened here are closed after each test (no file handle left to the garbage collector).
const files = closingOpener();
const openRaster = files.open;
afterEach(files.closeAll);

describe('worker pool', () => {
  const rule = {
    rasterFunction: 'Arithmetic',
    rasterFunctionArguments: {
      Raster: { rasterFunction: 'Hillshade', rasterFunctionArguments: { HillshadeType: 1 } },
      Raster2: { rasterFunction: 'Slope' },
      Operation: 2,
    },
  };
  const recipe = { rule, sources: { $$: DEM } };

  it('gives the same pixels as inline rendering, whatever the pool size', async () => {
    const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(recipe.sources, openRaster) });
    const inline = await render(root, { tileSize: 100 });
    const pooled = await render(root, { tileSize: 100, pool, recipe });
    expect(firstDifference(inline, pooled)).toBeUndefined();
    const one = createPool({ size: 1 });
    try {
      expect(firstDifference(inline, await render(root, { tileSize: [61, 33], pool: one, recipe }))).toBeUndefined();
    } finally {
      await one.destroy();
    }
  });

  it('leaves no abort listener behind on a signal shared by every tile of a render', async () => {
    const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(recipe.sources, openRaster) });
    const controller = new AbortController();
    await render(root, { tileSize: 64, pool, recipe, signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('carries statistics bound in the main thread to the workers: pool sizes 0, 1, 2 agree', async () => {
    // DRA percent clip on the DEM, then Otsu over the stretched result: both need request statistics.
    const statsRule = {
      rasterFunction: 'Threshold',
      rasterFunctionArguments: {
        Raster: {
          rasterFunction: 'Stretch',
          rasterFunctionArguments: { StretchType: 6, MinPercent: 1, MaxPercent: 3, DRA: true, UseGamma: true, Gamma: [1.4] },
        },
      },
    };
    const statsRecipe = { rule: statsRule, sources: { $$: DEM } };
    const { root } = await buildGraph(statsRule, { registry, resolveSource: bindSources(statsRecipe.sources, openRaster) });
    const window = { x: 20, y: 30, width: 250, height: 190 };
    const inline = await render(root, { rect: window, tileSize: 100 });
    const zero = createPool({ size: 0 });
    const one = createPool({ size: 1 });
    try {
      expect(firstDifference(inline, await render(root, { rect: window, tileSize: 64, pool: zero, recipe: statsRecipe }))).toBeUndefined();
      expect(
        firstDifference(inline, await render(root, { rect: window, tileSize: [61, 33], pool: one, recipe: statsRecipe })),
      ).toBeUndefined();
      expect(firstDifference(inline, await render(root, { rect: window, tileSize: 50, pool, recipe: statsRecipe }))).toBeUndefined();
    } finally {
      await Promise.all([zero.destroy(), one.destroy()]);
    }
    // Both classes occur, so the check is not vacuous.
    expect(new Set(inline.bands[0])).toEqual(new Set([0, 1]));
  });

  it('reports a worker-side error as an EngineError', async () => {
    const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(recipe.sources, openRaster) });
    const broken = { rule, sources: { $$: '/nonexistent/dem.tif' } };
    await expect(render(root, { pool, recipe: broken })).rejects.toMatchObject({ code: 'IO_ERROR' });
  });

  it('size 0 is the inline pool', async () => {
    const inline = createPool({ size: 0 });
    expect(inline.size).toBe(0);
    expect(() => createPool({ size: -1 })).toThrow(/worker count/);
  });
});

describe.skipIf(!existsSync('/proc/self/fd'))('worker graph cache', () => {
  it('closes the rasters of the graphs it evicts (40 recipes through one worker leave at most the cache open)', async () => {
    const fds = (): number => readdirSync('/proc/self/fd').length;
    const one = createPool({ size: 1 });
    try {
      const before = fds();
      for (let k = 0; k < 40; k++) {
        // 40 different rules over the same DEM: each is a new graph in the worker, opening the DEM.
        const rule = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: k * 9 } };
        const recipe = { rule, sources: { $$: DEM } };
        const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(recipe.sources, openRaster) });
        await render(root, { rect: { x: 0, y: 0, width: 64, height: 64 }, tileSize: 64, pool: one, recipe });
        await files.closeAll();
      }
      // The worker keeps at most 17 graphs (16 + the newest) with one open DEM each; evicted ones
      // are closed at once, not left to the garbage collector.
      expect(fds() - before).toBeLessThanOrEqual(17);
    } finally {
      await one.destroy();
    }
  });
});

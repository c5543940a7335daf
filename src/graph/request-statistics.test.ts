// Statistics checked against values computed by hand on tiny rasters; the binding rules (request
// rectangle through halos, bottom-up order, fixed tiling, worker recipe) checked end to end.
import { describe, expect, it } from 'vitest';
import { rect } from '../core/rect.js';
import { applyFunction, firstDifference, rasterOf } from '../../test/helpers.js';
import { identity } from '../functions/local/identity.js';
import { stretch } from '../functions/radiometric/stretch.js';
import { threshold } from '../functions/radiometric/threshold.js';
import { hillshade } from '../functions/terrain/hillshade.js';
import { evaluateTile } from './evaluate.js';
import { render } from './render.js';
import { applyBoundParams, bindRequestStatistics, computeStatistics, needsRequestStatistics, requestRects } from './request-statistics.js';
import type { FunctionNode } from './types.js';

describe('computeStatistics', () => {
  it('U8: exact counts, population deviation, median and mode; masked pixels left out', async () => {
    // Valid values 1, 2, 2, 5 (the 9 is masked): mean 2.5, variance (2.25 + 0.25 + 0.25 + 6.25) / 4 = 2.25.
    const src = rasterOf({ width: 5, height: 1, pixelType: 'U8' }, (x) => [1, 2, 2, 5, 9][x]!, Uint8Array.from([1, 1, 1, 1, 0]));
    const [s] = await computeStatistics(src, rect(0, 0, 5, 1));
    expect(s!.statistics).toEqual({ min: 1, max: 5, mean: 2.5, stdDev: 1.5, count: 4, median: 2, mode: 2 });
    expect(s!.histogram.size).toBe(256);
    expect([s!.histogram.min, s!.histogram.max]).toEqual([-0.5, 255.5]);
    expect(s!.histogram.counts.slice(0, 10)).toEqual([0, 1, 2, 0, 0, 1, 0, 0, 0, 0]);
  });

  it('S16: exact statistics, histogram rebinned into `bins` over [min, max] (max in the last bin)', async () => {
    // -10, 0, 10, 30 into 4 bins of width 10 over [-10, 30]: bins 0, 1, 2, 3 (30 = max goes to the last).
    const src = rasterOf({ width: 4, height: 1, pixelType: 'S16' }, (x) => [-10, 0, 10, 30][x]!);
    const [s] = await computeStatistics(src, rect(0, 0, 4, 1), { bins: 4 });
    expect(s!.histogram).toEqual({ size: 4, min: -10, max: 30, counts: [1, 1, 1, 1] });
    expect(s!.statistics.mean).toBe(7.5);
  });

  it('F32: two passes; NaN and infinities left out; a band with no valid pixel is undefined', async () => {
    const values = [0.5, Number.NaN, 2.5, Infinity, 4.5];
    const src = rasterOf({ width: 5, height: 1, bandCount: 2 }, (x, _y, b) => (b === 0 ? values[x]! : Number.NaN));
    const [s, none] = await computeStatistics(src, rect(0, 0, 5, 1), { bins: 2 });
    // 0.5, 2.5, 4.5: mean 2.5, variance 8/3; bins of width 2 over [0.5, 4.5]: 0.5 | 2.5, 4.5.
    expect(s!.statistics.mean).toBe(2.5);
    expect(s!.statistics.stdDev).toBeCloseTo(Math.sqrt(8 / 3), 12);
    expect(s!.histogram.counts).toEqual([1, 2]);
    expect(none).toBeUndefined();
  });

  it('clips the rectangle to the raster; a rectangle outside gives undefined', async () => {
    const src = rasterOf({ width: 3, height: 3, pixelType: 'U8' }, (x, y) => x + 3 * y);
    const [s] = await computeStatistics(src, rect(-5, -5, 7, 6)); // only (0..1, 0) inside
    expect([s!.statistics.min, s!.statistics.max, s!.statistics.count]).toEqual([0, 1, 2]);
    expect(await computeStatistics(src, rect(10, 10, 2, 2))).toEqual([undefined]);
  });

  it('gives the same floats for any order of evaluation (fixed internal tiling)', async () => {
    const src = rasterOf({ width: 700, height: 600 }, (x, y) => Math.sin(x * 0.37) * 1e3 + y * 0.001);
    const a = await computeStatistics(src, rect(0, 0, 700, 600));
    const b = await computeStatistics(src, rect(0, 0, 700, 600));
    expect(a).toEqual(b);
  });
});

describe('binding request statistics', () => {
  const dem = rasterOf({ width: 40, height: 30, cellSize: 10 }, (x, y) => 100 + x * 3 + y * 2 + ((x * 7 + y * 13) % 5));

  it('plain graphs are left alone', async () => {
    const node = applyFunction(identity, {}, [dem]);
    expect(needsRequestStatistics(node)).toBe(false);
    const bound = await bindRequestStatistics(node, rect(0, 0, 40, 30));
    expect(bound.root).toBe(node);
    expect(bound.bound).toEqual({});
  });

  it("takes a node's statistics over its request rectangle: the area grown by the halos above it", async () => {
    const inner = applyFunction(stretch, { StretchType: 5, DRA: true }, [dem]);
    const outer = applyFunction(hillshade, {}, [inner]);
    const area = rect(10, 10, 5, 5);
    const h = outer.plan.halo;
    expect(h).toBeGreaterThan(0);
    const grown = rect(10 - h, 10 - h, 5 + 2 * h, 5 + 2 * h);
    expect(requestRects(outer, area).get(inner.id)).toEqual(grown);
    const { bound } = await bindRequestStatistics(outer, area);
    const [s] = await computeStatistics(dem, grown);
    expect(s!.statistics.min).toBeLessThan((await computeStatistics(dem, area))[0]!.statistics.min);
    const t = (bound[inner.id] as { transfers: { minCut: number; maxCut: number }[] }).transfers[0]!;
    expect([t.minCut, t.maxCut]).toEqual([s!.statistics.min, s!.statistics.max]);
  });

  it('binds bottom-up: a Threshold over a DRA Stretch sees the bound Stretch', async () => {
    const inner = applyFunction(stretch, { StretchType: 5, DRA: true }, [dem]);
    const outer = applyFunction(threshold, {}, [inner]);
    const bound = await bindRequestStatistics(outer, rect(0, 0, 40, 30));
    expect(Object.keys(bound.bound).sort()).toEqual([inner.id, outer.id].sort());
    expect(bound.root.id).not.toBe(outer.id);
    expect((bound.root as FunctionNode).inputs[0]!.id).toContain('#stats:');
    expect((bound.root as FunctionNode).plan.requestStatistics).toBeUndefined();
  });

  it('renders identically for every tile size, and for a window from the window only', async () => {
    const node = applyFunction(threshold, {}, [applyFunction(stretch, { StretchType: 3, DRA: true }, [dem])]);
    const whole = await render(node, { tileSize: 64 });
    for (const t of [1, 7, 13]) expect(firstDifference(whole, await render(node, { tileSize: t }))).toBeUndefined();
    const window = rect(3, 4, 20, 11);
    const a = await render(node, { rect: window, tileSize: 5 });
    const b = await render(node, { rect: window, tileSize: 20 });
    expect(firstDifference(a, b)).toBeUndefined();
  });

  it('refuses to evaluate an unbound node tile by tile', async () => {
    const node = applyFunction(stretch, { StretchType: 5, DRA: true }, [dem]);
    await expect(evaluateTile(node, rect(0, 0, 4, 4))).rejects.toMatchObject({ code: 'INTERNAL' });
  });

  it('stops with ABORTED during the pre-pass', async () => {
    const node = applyFunction(stretch, { StretchType: 5, DRA: true }, [dem]);
    const ac = new AbortController();
    ac.abort();
    await expect(render(node, { signal: ac.signal })).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('applyBoundParams rebuilds the bound graph and refuses missing or foreign entries', async () => {
    const node = applyFunction(threshold, {}, [applyFunction(stretch, { StretchType: 5, DRA: true }, [dem])]);
    const area = rect(0, 0, 40, 30);
    const bound = await bindRequestStatistics(node, area);
    const again = applyBoundParams(node, bound.bound);
    expect(again.id).toBe(bound.root.id);
    expect(firstDifference(await evaluateTile(bound.root, area), await evaluateTile(again, area))).toBeUndefined();
    expect(() => applyBoundParams(node, {})).toThrow(/recipe does not carry/);
    expect(() => applyBoundParams(node, { ...bound.bound, 'Other()': {} })).toThrow(/does not build/);
  });
});

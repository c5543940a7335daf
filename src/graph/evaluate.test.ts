/**
 * evaluateTile recycles the source blocks of a tile through SourceNode.readInto: later tiles of
 * the same size read into them, results never share memory with a recycled block, and a failed
 * tile gives nothing back while its reads may still be running. Both ways: JS blocks (wasm off:
 * the evaluator's pool of blocks) and blocks in wasm memory (the arena; compared by address, as
 * every plane there shares one buffer).
 */
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PixelBlock } from '../core/pixel-block.js';
import { rect, type Rect } from '../core/rect.js';
import { applyFunction } from '../../test/helpers.js';
import { arithmetic } from '../functions/local/arithmetic.js';
import { identity } from '../functions/local/identity.js';
import { slope } from '../functions/terrain/slope.js';
import { openGeoTiff } from '../io/geotiff-source.js';
import { setWasmEnabled, wasmKernels } from '../wasm/module.js';
import { sharesMemory } from '../wasm/planes.js';
import { evaluateTile } from './evaluate.js';
import { defineFunction, type SourceNode } from './types.js';

const DEM = join(resolve(import.meta.dirname, '../../golden/data'), 'jacksboro_fault_dem_utm16n_75m.tif');

/** The GeoTIFF source with every block handed to readInto recorded (by its first plane). */
async function spied(): Promise<{ source: SourceNode; planes: ArrayBufferView[]; close: () => Promise<void> }> {
  const s = await openGeoTiff(DEM);
  const planes: ArrayBufferView[] = [];
  const source: SourceNode = {
    kind: 'source',
    id: s.id,
    info: s.info,
    read: (r, signal) => s.read(r, signal),
    readInto: (b, signal) => {
      planes.push(b.bands[0]!);
      return s.readInto!(b, signal);
    },
  };
  return { source, planes, close: () => s.close() };
}

const copy = (b: PixelBlock): PixelBlock => ({ ...b, bands: b.bands.map((p) => p.slice()), mask: b.mask.slice() });

for (const wasm of [false, true])
  describe(`evaluateTile: source blocks recycled (wasm ${wasm ? 'on' : 'off'})`, () => {
    beforeEach(() => void setWasmEnabled(wasm));
    afterEach(() => void setWasmEnabled(true));
    const live = (): number => wasmKernels()?.arena.stats().liveBlocks ?? 0;

    it('reads the next tile of a size into the block the last one used, with the same results', async () => {
      const { source, planes, close } = await spied();
      try {
        const node = applyFunction(slope, {}, [source]);
        const tiles: Rect[] = [rect(0, 0, 32, 32), rect(32, 0, 32, 32), rect(64, 64, 32, 32)];
        const got: PixelBlock[] = [];
        for (const t of tiles) got.push(copy(await evaluateTile(node, t)));
        // Grown by the halo: 34 x 34 each; the second and third tiles reuse the first one's block.
        expect(planes.length).toBe(3);
        expect(sharesMemory(planes[1]!, planes[0]!)).toBe(true);
        expect(sharesMemory(planes[2]!, planes[0]!)).toBe(true);
        const fresh = applyFunction(slope, {}, [{ ...source, readInto: undefined }]);
        for (const [i, t] of tiles.entries()) expect(got[i]).toEqual(await evaluateTile(fresh, t));
      } finally {
        await close();
      }
    });

    it('never recycles a block the result holds (a source rendered as it is)', async () => {
      const { source, planes, close } = await spied();
      try {
        const a = await evaluateTile(source, rect(0, 0, 16, 16));
        const kept = copy(a);
        await evaluateTile(source, rect(100, 100, 16, 16));
        expect(sharesMemory(planes[1]!, a.bands[0]!)).toBe(false);
        expect(a).toEqual(kept);
        // Through a function whose kernel passes its input's plane through, the same holds.
        const passThrough = defineFunction({
          name: 'PassThrough',
          summary: 'test only: the input plane itself as the output',
          family: 'test',
          verification: 'hand',
          args: { Raster: { kind: 'raster', default: '$$', doc: 'input' } },
          plan: (a, inputs) => ({ info: inputs[a.Raster]!, halo: 0, params: {} }),
          kernel(_p, [input], out) {
            out.bands[0] = input!.bands[0]!;
            out.mask.set(input!.mask);
          },
        });
        const node = applyFunction(passThrough, {}, [source]);
        const b = await evaluateTile(node, rect(0, 0, 16, 16));
        const before = copy(b);
        await evaluateTile(node, rect(50, 50, 16, 16));
        expect(sharesMemory(planes.at(-1)!, b.bands[0]!)).toBe(false);
        expect(b).toEqual(before);
      } finally {
        await close();
      }
    });

    it('gives nothing back from a failed tile (its reads may still be running)', async () => {
      const { source, planes, close } = await spied();
      try {
        const broken: SourceNode = { ...source, id: 'broken', readInto: undefined, read: () => Promise.reject(new Error('disk on fire')) };
        const bad = applyFunction(arithmetic, { Operation: 1 }, [source, broken]);
        await expect(evaluateTile(bad, rect(0, 0, 8, 8))).rejects.toThrow('disk on fire');
        // Wasm memory: the failed tile's blocks are given back once every read of it has settled.
        expect(live()).toBe(0);
        await evaluateTile(applyFunction(identity, {}, [source]), rect(0, 0, 8, 8));
        expect(planes.length).toBe(2);
        if (!wasm) expect(sharesMemory(planes[1]!, planes[0]!)).toBe(false);
      } finally {
        await close();
      }
    });
  });

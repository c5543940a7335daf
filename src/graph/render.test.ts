import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { rect } from '../core/rect.js';
import { applyFunction, rasterOf } from '../../test/helpers.js';
import { identity } from '../functions/local/identity.js';
import { hillshade } from '../functions/terrain/hillshade.js';
import { render, renderTiles } from './render.js';

const dem = rasterOf({ width: 50, height: 40, cellSize: 10 }, (x, y) => x * x - 3 * y);

describe('render', () => {
  it('renders a window of the output grid, pixels outside the raster masked', async () => {
    const node = applyFunction(identity, {}, [dem]);
    const block = await render(node, { rect: rect(45, 35, 10, 10), tileSize: 3 });
    expect(block.rect).toEqual(rect(45, 35, 10, 10));
    expect(block.bands[0]![0]).toBe(45 * 45 - 3 * 35);
    expect(block.mask[4]).toBe(1); // x = 49
    expect(block.mask[5]).toBe(0); // x = 50, outside
    expect(block.mask[5 * 10]).toBe(0); // y = 40, outside
  });

  it('streams tiles in row-major order', async () => {
    const node = applyFunction(identity, {}, [dem]);
    const seen = [];
    for await (const t of renderTiles(node, { tileSize: [30, 25] })) seen.push(t.rect);
    expect(seen).toEqual([rect(0, 0, 30, 25), rect(30, 0, 20, 25), rect(0, 25, 30, 15), rect(30, 25, 20, 15)]);
  });

  it('stops with ABORTED when the signal fires', async () => {
    const node = applyFunction(hillshade, {}, [dem]);
    const ac = new AbortController();
    ac.abort();
    await expect(render(node, { signal: ac.signal, tileSize: 8 })).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('refuses bad windows and tile sizes', async () => {
    const node = applyFunction(identity, {}, [dem]);
    await expect(render(node, { rect: rect(0, 0, 0, 5) })).rejects.toBeInstanceOf(EngineError);
    await expect(render(node, { tileSize: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'tileSize' });
  });
});

describe('inputRect', () => {
  it('lets a plan ask for another input rectangle than out grown by the halo', async () => {
    const { defineFunction } = await import('./types.js');
    // Hand-made function: each output pixel is the sum of its whole input column (needs the full height).
    const columnSum = defineFunction({
      name: 'ColumnSum',
      summary: 'test only: sum of the whole column',
      family: 'test',
      verification: 'hand',
      args: { Raster: { kind: 'raster', default: '$$', doc: 'input' } },
      plan(a, inputs) {
        const info = inputs[a.Raster]!;
        return { info: { ...info, pixelType: 'F64' }, halo: 0, params: {}, inputRect: (out) => rect(out.x, 0, out.width, info.height) };
      },
      kernel(_p, [input], out) {
        const w = out.rect.width;
        for (let y = 0; y < out.rect.height; y++) {
          for (let x = 0; x < w; x++) {
            let s = 0;
            for (let k = 0; k < input!.rect.height; k++) s += input!.bands[0]![k * input!.rect.width + x]!;
            out.bands[0]![y * w + x] = s;
          }
        }
      },
    });
    const node = applyFunction(columnSum, {}, [dem]);
    const block = await render(node, { tileSize: 7 });
    let expected = 0;
    for (let y = 0; y < 40; y++) expected += 3 * 3 - 3 * y;
    expect(block.bands[0]![3]).toBe(expected);
    expect(block.bands[0]![39 * 50 + 3]).toBe(expected);
  });
});

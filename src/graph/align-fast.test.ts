// The Align node's affine fast path (per-column/per-row tables, resample.ts interpolateAffine)
// against the general per-pixel path: the same values bit for bit and the same mask, on random
// grids (zoom in/out, offsets past the raster's edges), with NoData holes, every method, float
// and integer outputs, several bands and odd tilings.
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../core/pixel-block.js';
import type { PixelType } from '../core/pixel-type.js';
import type { FunctionNode, RasterNode } from './types.js';
import { firstDifference, gridInfo, prng, rasterOf } from '../../test/helpers.js';
import { alignNode } from './align.js';
import { render } from './render.js';

/** The same Align node forced onto the general per-pixel loop. */
function general(node: RasterNode): RasterNode {
  const f = node as FunctionNode;
  const params = { ...(f.plan.params as object), general: true };
  return { ...f, id: `${f.id}#general`, plan: { ...f.plan, params } } as RasterNode;
}

describe('Align affine fast path', () => {
  const methods = ['nearest', 'bilinear', 'cubic'] as const;
  const rnd = prng(1818);
  for (const pixelType of ['F32', 'U8', 'S16'] as PixelType[]) {
    for (const method of methods) {
      it(`${method} ${pixelType}: bit-identical to the per-pixel path on random grids, holes and edges`, async () => {
        for (let trial = 0; trial < 6; trial++) {
          const w = 20 + Math.floor(rnd() * 60);
          const h = 20 + Math.floor(rnd() * 60);
          const mask = new Uint8Array(w * h).fill(1);
          for (let i = 0; i < mask.length; i++) if (rnd() < 0.08) mask[i] = 0;
          const bandCount = trial % 2 === 0 ? 1 : 3;
          const src = rasterOf(
            { width: w, height: h, cellSize: 30, origin: { x: 500000, y: 4000000 }, pixelType, bandCount },
            (x, y, b) => (pixelType === 'U8' ? (x * 7 + y * 13 + b * 31) % 256 : Math.sin(x * 0.3 + b) * 1000 + y * 17.25 - 300),
            mask,
          );
          // A target grid that may start outside the raster, zoom in or out, with non-square cells.
          const cx = 30 * (0.2 + rnd() * 2.5);
          const cy = trial === 3 ? cx : 30 * (0.2 + rnd() * 2.5);
          const tw = 10 + Math.floor(rnd() * 70);
          const th = 10 + Math.floor(rnd() * 70);
          const ox = 500000 + (rnd() - 0.2) * w * 30;
          const oy = 4000000 - (rnd() - 0.2) * h * 30;
          const target: RasterInfo = gridInfo({ width: tw, height: th, cellSize: { x: cx, y: cy }, origin: { x: ox, y: oy } });
          const fast = alignNode(src, target, method, '');
          expect(fast.id).not.toBe(src.id);
          for (const tileSize of [256, 17] as const) {
            const a = await render(fast, { tileSize });
            const b = await render(general(fast), { tileSize });
            expect(firstDifference(a, b)).toBeUndefined();
          }
        }
      });
    }
  }

  it('covers both sides: the comparison sees valid pixels and NoData pixels', async () => {
    const mask = new Uint8Array(30 * 30).fill(1);
    mask[15 * 30 + 15] = 0;
    const src = rasterOf({ width: 30, height: 30, cellSize: 30, origin: { x: 500000, y: 4000000 } }, (x, y) => x + y / 7, mask);
    const target = gridInfo({ width: 50, height: 50, cellSize: 21, origin: { x: 499900, y: 4000100 } });
    const node = alignNode(src, target, 'bilinear', '');
    const a = await render(node);
    const b = await render(general(node));
    expect(firstDifference(a, b)).toBeUndefined();
    expect(a.mask.indexOf(0)).toBeGreaterThanOrEqual(0);
    expect(a.mask.indexOf(1)).toBeGreaterThanOrEqual(0);
  });
});

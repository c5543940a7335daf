// Alignment-node math: spatial reference equality, absolute-position coordinate mapping (tiles
// independent), the approximate transformer's error bound, and the Keys cubic weights (by hand).
import { describe, expect, it } from 'vitest';
import { keysWeight } from '../core/resample.js';
import { gridInfo, rasterOf, tiledVersusWhole } from '../../test/helpers.js';
import { mapRect, pixelMapping, sameSpatialReference } from './align.js';
import { createFunctionNode } from './node.js';
import { arithmetic } from '../functions/local/arithmetic.js';

describe('alignment', () => {
  it('spatial references: same wkid, equivalent proj4, different systems', () => {
    const sirgas = { wkid: 31985 };
    const user = { proj4: '+proj=utm +zone=25 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs' };
    expect(sameSpatialReference(sirgas, user)).toBe(true);
    expect(sameSpatialReference({ wkid: 32616 }, { wkid: 4326 })).toBe(false);
    expect(sameSpatialReference({ wkid: 32616 }, undefined)).toBe(true);
  });

  it('Keys cubic weights (a = -0.5)', () => {
    expect([keysWeight(0), keysWeight(1), keysWeight(2), keysWeight(0.5), keysWeight(1.5), keysWeight(-0.5)]).toEqual([
      1, 0, 0, 0.5625, -0.0625, 0.5625,
    ]);
  });

  const utm = { ...gridInfo({ width: 300, height: 200, cellSize: 30, origin: { x: 500000, y: 4000000 } }) };
  const geo = gridInfo({ width: 400, height: 300, cellSize: 1 / 1200, geographic: true, origin: { x: -87.05, y: 36.2 } });

  it('affine mapping for one spatial reference: centres to source pixels', () => {
    const m = pixelMapping(gridInfo({ width: 2, height: 2, cellSize: 2, origin: { x: 1, y: 0 } }), gridInfo({ width: 9, height: 9 }), '');
    const xy = new Float64Array(8);
    mapRect(m, { x: 0, y: 0, width: 2, height: 2 }, xy);
    expect([...xy]).toEqual([2, 1, 4, 1, 2, 3, 4, 3]);
  });

  it('reprojection: approximate positions within 0.125 px of exact, and the same in any tiling', () => {
    const m = pixelMapping(utm, geo, '');
    expect(m.kind).toBe('reproject');
    const whole = new Float64Array(2 * 300 * 200);
    mapRect(m, { x: 0, y: 0, width: 300, height: 200 }, whole);
    const exact = new Float64Array(whole.length);
    mapRect({ ...(m as Extract<typeof m, { kind: 'reproject' }>), step: 0 }, { x: 0, y: 0, width: 300, height: 200 }, exact);
    let worst = 0;
    for (let i = 0; i < whole.length; i++) worst = Math.max(worst, Math.abs(whole[i]! - exact[i]!));
    expect(worst).toBeLessThanOrEqual(0.125);
    // A tile at an odd offset gives bit-identical positions.
    const tile = new Float64Array(2 * 37 * 23);
    mapRect(m, { x: 101, y: 77, width: 37, height: 23 }, tile);
    for (let j = 0; j < 23; j++) {
      for (let i = 0; i < 37; i++) {
        const a = 2 * (j * 37 + i);
        const b = 2 * ((77 + j) * 300 + 101 + i);
        expect([tile[a], tile[a + 1]]).toEqual([whole[b], whole[b + 1]]);
      }
    }
  });

  it('Align node ids name the target grid and method; tiled equals whole', async () => {
    const a = rasterOf({ width: 61, height: 47, cellSize: 30, origin: { x: 500000, y: 4000000 } }, (x, y) => x * y);
    const b = rasterOf({ width: 40, height: 30, cellSize: 1 / 1200, geographic: true, origin: { x: -87.01, y: 36.15 } }, (x, y) => x - y);
    const n = createFunctionNode(arithmetic, { Raster: 0, Raster2: 1, Operation: 1, ExtentType: 0, CellsizeType: 0 }, [a, b], '');
    const align = n.inputs[1]!;
    expect(align.id).toMatch(
      /^Align\(\{"grid":\{"xmin":500000,"ymax":4000000,"cx":30,"cy":30,"width":61,"height":47,"sr":"[^"]*zone=16[^"]*"\},"method":"bilinear"\};mem\d+\)$/,
    );
    expect(await tiledVersusWhole(n, [7, 5])).toBeUndefined();
    expect(await tiledVersusWhole(align, [16, 3])).toBeUndefined();
  });
});

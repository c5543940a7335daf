import { describe, expect, it } from 'vitest';
import type { PixelBlock } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import type { SourceNode } from '../../graph/types.js';
import {
  applyFunction,
  catchError,
  gridInfo,
  prng,
  rasterOf,
  runFunction,
  tiledVersusWhole,
  type GridOptions,
} from '../../../test/helpers.js';
import { elevationVoidFill, MAX_CONTEXT_PIXELS } from './elevation-void-fill.js';

const W = 15;
const H = 12;
const grid: GridOptions = { width: W, height: H, cellSize: 10, pixelType: 'F64' };

/** A mask with the given pixels NoData. */
function holes(cells: readonly (readonly [number, number])[], w = W, h = H): Uint8Array {
  const m = new Uint8Array(w * h).fill(1);
  for (const [x, y] of cells) m[y * w + x] = 0;
  return m;
}
const rect = (x0: number, y0: number, w: number, h: number): [number, number][] => {
  const out: [number, number][] = [];
  for (let y = y0; y < y0 + h; y++) for (let x = x0; x < x0 + w; x++) out.push([x, y]);
  return out;
};

describe('ElevationVoidFill: hand-derived fills', () => {
  it('a void in a plane takes the plane exactly (rim RMS 0 <= 1 % of its range)', async () => {
    const plane = (x: number, y: number) => 100 + 2 * x + 3 * y;
    const r = await runFunction(elevationVoidFill, {}, [rasterOf(grid, plane, holes(rect(5, 4, 3, 3)))]);
    for (const [x, y] of rect(5, 4, 3, 3)) {
      expect(r.valid(x, y)).toBe(true);
      expect(r.value(x, y)).toBeCloseTo(plane(x, y), 9);
    }
    expect(r.value(0, 0)).toBe(100); // valid pixels pass through
  });

  it('a one-pixel void takes the mean of its 8 neighbours', async () => {
    // Derived by hand: z = x^2 around (3, 3): (4 + 9 + 16) + (4 + 16) + (4 + 9 + 16) = 78, / 8 = 9.75.
    const r = await runFunction(elevationVoidFill, {}, [rasterOf(grid, (x) => x * x, holes([[3, 3]]))]);
    expect(r.value(3, 3)).toBe(9.75);
  });

  it('a curved rim uses inverse-distance weighting (power 2, ground distances)', async () => {
    // Derived by hand for the void (5,5)-(6,5) on z = x^2 with 10 m cells: the rim is x = 4..7 on rows 4
    // and 6 plus (4,5) and (7,5); seen from (5,5) the weights (1/d^2, in 1/100 m^2) are
    // .5 1 .5 .2 / 1 .25 / .5 1 .5 .2 (sum 5.65) and sum w z = 149.85; from (6,5) the mirror
    // weights give sum w z = 205.4. The plane fit leaves residuals far above 1 % of the range 33.
    const r = await runFunction(elevationVoidFill, {}, [
      rasterOf(
        grid,
        (x) => x * x,
        holes([
          [5, 5],
          [6, 5],
        ]),
      ),
    ]);
    expect(r.value(5, 5)).toBeCloseTo(149.85 / 5.65, 10);
    expect(r.value(6, 5)).toBeCloseTo(205.4 / 5.65, 10);
  });

  it('voids touching the raster edge stay NoData; diagonal neighbours are one void', async () => {
    const mask = holes([
      [0, 5],
      [1, 5],
      [7, 7],
      [8, 8],
      [9, 9],
    ]);
    const r = await runFunction(elevationVoidFill, {}, [rasterOf(grid, (x, y) => x + y, mask)]);
    expect(r.valid(0, 5)).toBe(false);
    expect(r.valid(1, 5)).toBe(false);
    // (7,7)-(9,9) is one 3x3-bounded void whose rim is a plane: filled with it.
    for (const k of [7, 8, 9]) expect(r.value(k, k)).toBeCloseTo(2 * k, 9);
  });

  it('rounds fills of integer rasters half away from zero', async () => {
    const r = await runFunction(elevationVoidFill, {}, [rasterOf({ ...grid, pixelType: 'S16' }, (x) => x * x, holes([[3, 3]]))]);
    expect(r.value(3, 3)).toBe(10); // 9.75
    expect(r.block.bands[0]).toBeInstanceOf(Int16Array);
  });
});

describe('ElevationVoidFill: MaxVoidWidth', () => {
  // A 3 x 2 void and a 1 x 3 void in a plane, 10 m cells.
  const voids = [...rect(2, 2, 3, 2), ...rect(10, 3, 1, 3)];
  const dem = rasterOf(grid, (x, y) => 50 + x - y, holes(voids));
  const filled = async (MaxVoidWidth: number) => {
    const r = await runFunction(elevationVoidFill, { MaxVoidWidth }, [dem]);
    return [r.valid(3, 2), r.valid(10, 4)];
  };

  it('fills voids whose bounding box is at most MaxVoidWidth wide and high', async () => {
    expect(await filled(0)).toEqual([true, true]);
    expect(await filled(30)).toEqual([true, true]);
    expect(await filled(29.9)).toEqual([false, false]); // 3 cells wide / 3 cells high
    expect(await filled(20)).toEqual([false, false]);
    expect(await filled(1000)).toEqual([true, true]);
  });

  it('-1 fills nothing; widths under one cell fill nothing and warn', async () => {
    expect(await filled(-1)).toEqual([false, false]);
    expect(await filled(5)).toEqual([false, false]);
    expect(applyFunction(elevationVoidFill, { MaxVoidWidth: 5 }, [dem]).plan.warnings).toEqual([
      'MaxVoidWidth 5 is less than one cell: nothing is filled',
    ]);
  });

  it('reads the output grown by the width in cells, or the whole raster for 0', () => {
    const at = (MaxVoidWidth: number) => applyFunction(elevationVoidFill, { MaxVoidWidth }, [dem]).plan.inputRect!;
    expect(at(30)({ x: 5, y: 5, width: 2, height: 2 }, 0)).toEqual({ x: 2, y: 2, width: 8, height: 8 });
    expect(at(30)({ x: 0, y: 10, width: 4, height: 2 }, 0)).toEqual({ x: 0, y: 7, width: 7, height: 5 });
    expect(at(0)({ x: 5, y: 5, width: 2, height: 2 }, 0)).toEqual({ x: 0, y: 0, width: W, height: H });
    expect(at(-1)({ x: 5, y: 5, width: 2, height: 2 }, 0)).toEqual({ x: 5, y: 5, width: 2, height: 2 });
  });
});

describe('ElevationVoidFill: arguments', () => {
  const dem = rasterOf(grid, () => 1);

  it('rejects bad arguments with INVALID_ARGUMENT and the argument path', () => {
    for (const MaxVoidWidth of ['wide', -2]) {
      expect(catchError(() => applyFunction(elevationVoidFill, { MaxVoidWidth }, [dem]))).toMatchObject({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.MaxVoidWidth',
      });
    }
    const multi = rasterOf({ ...grid, bandCount: 2 }, () => 1);
    expect(catchError(() => applyFunction(elevationVoidFill, {}, [multi]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Raster',
    });
    expect(applyFunction(elevationVoidFill, { MaxVoidWidth: '25' }, [dem]).args.MaxVoidWidth).toBe(25);
  });

  it('refuses whole-raster context above the limit (LIMIT_EXCEEDED)', () => {
    const side = Math.ceil(Math.sqrt(MAX_CONTEXT_PIXELS)) + 1;
    const huge: SourceNode = {
      kind: 'source',
      id: 'huge',
      info: gridInfo({ width: side, height: side, cellSize: 1 }),
      read: () => Promise.reject(new Error('not read')) as Promise<PixelBlock>,
    };
    expect(catchError(() => applyFunction(elevationVoidFill, {}, [huge]))).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      path: 'rasterFunctionArguments.MaxVoidWidth',
    });
    expect(applyFunction(elevationVoidFill, { MaxVoidWidth: 100 }, [huge]).info.width).toBe(side);
  });

  it('keeps the input type and NoData, drops statistics', () => {
    const info = { ...gridInfo({ width: 4, height: 4, pixelType: 'S16', noData: -9999 }), statistics: [{ min: 0, max: 1 }] };
    const node = applyFunction(elevationVoidFill, {}, [memorySource('s', info, [new Int16Array(16)])]);
    expect(node.info).toMatchObject({ pixelType: 'S16', noData: -9999 });
    expect(node.info.statistics).toBeUndefined();
  });
});

describe('ElevationVoidFill: tiled equals whole', () => {
  const w = 61;
  const h = 47;
  const rnd = prng(11);
  const mask = new Uint8Array(w * h).fill(1);
  for (let k = 0; k < 40; k++) mask[Math.floor(rnd() * w * h)] = 0; // single pixels, some on the edge
  const block = (x0: number, y0: number, bw: number, bh: number) => {
    for (let y = y0; y < y0 + bh; y++) for (let x = x0; x < x0 + bw; x++) mask[y * w + x] = 0;
  };
  block(20, 10, 9, 4); // spans tile seams
  block(40, 30, 3, 12);
  block(5, 30, 14, 14); // large: filled only with MaxVoidWidth 0 or >= 140
  block(50, 0, 4, 3); // touches the edge
  for (let k = 0; k < 12; k++) mask[(20 + k) * w + 25 + k] = 0; // a diagonal chain: one 8-connected void
  const surface = (x: number, y: number) => 500 + 120 * Math.sin(x / 7) * Math.cos(y / 5) + 3 * x - 2 * y + 5 * rnd();
  const f32 = rasterOf({ width: w, height: h, cellSize: 10 }, surface, mask);
  const s16 = rasterOf({ width: w, height: h, cellSize: 10, pixelType: 'S16' }, (x, y) => Math.round(surface(x, y)), mask);

  for (const [name, args, input] of [
    ['fill all', {}, f32],
    ['fill all S16', {}, s16],
    ['MaxVoidWidth 50', { MaxVoidWidth: 50 }, f32],
    ['MaxVoidWidth 150', { MaxVoidWidth: 150 }, f32],
    ['no filling', { MaxVoidWidth: -1 }, f32],
  ] as const) {
    it(name, async () => {
      const node = applyFunction(elevationVoidFill, args, [input]);
      for (const tile of [
        [37, 53],
        [7, 5],
        [1, 3],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, tile), `tile ${tile.join('x')}`).toBeUndefined();
      }
    });
  }

  it('fills what it should on that surface', async () => {
    const all = await runFunction(elevationVoidFill, {}, [f32]);
    const limited = await runFunction(elevationVoidFill, { MaxVoidWidth: 50 }, [f32]);
    expect(all.valid(10, 35)).toBe(true); // the 14 x 14 block
    expect(limited.valid(10, 35)).toBe(false);
    expect(limited.valid(24, 12)).toBe(false); // 9 wide
    expect(all.valid(51, 1)).toBe(false); // touches the edge
    expect(limited.valid(30, 25)).toBe(false); // the diagonal chain is 12 x 12
    expect(all.valid(30, 25)).toBe(true);
  });
});

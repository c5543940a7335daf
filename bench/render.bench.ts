/**
 * Level 3 of STYLE §2.9: a whole request through the engine (rule -> DAG -> tiled render,
 * inline pool), Hillshade and a two-function DAG over a seeded synthetic 4096 x 4096 DEM held in
 * memory (no file decoding, which issue 9 measures), beside the plain typed-array hillshade loop
 * of terrain.bench.ts measured in the same run. The gap to the kernel rows is the evaluator's
 * cost: halo reads, tile assembly and the per-tile memo.
 */
import { Bench } from 'tinybench';
import type { RasterInfo } from '../src/core/pixel-block.js';
import { registry } from '../src/functions/index.js';
import { memorySource } from '../src/graph/memory-source.js';
import { render } from '../src/graph/render.js';
import { buildGraph } from '../src/rule/build.js';
import { type BenchRow, rowsOf } from './rows.js';
import { plainHillshade, syntheticDem } from './terrain.bench.js';

export async function renderBench(size = 4096): Promise<BenchRow[]> {
  const z = syntheticDem(size);
  const info: RasterInfo = {
    width: size,
    height: size,
    bandCount: 1,
    pixelType: 'F32',
    extent: { xmin: 0, ymin: 0, xmax: size * 10, ymax: size * 10 },
    cellSize: { x: 10, y: 10 },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
  };
  const source = memorySource('bench:synthetic', info, [z]);
  const graph = async (rule: unknown) => (await buildGraph(rule, { registry, resolveSource: async () => source })).root;
  const hs = await graph({ rasterFunction: 'Hillshade' });
  const chain = await graph({
    rasterFunction: 'Arithmetic',
    rasterFunctionArguments: { Raster: { rasterFunction: 'Hillshade' }, Raster2: { rasterFunction: 'Slope' }, Operation: 3 },
  });
  const u8 = new Uint8Array(size * size);
  const bench = new Bench({ name: 'render', time: 500, iterations: 6 });
  const hsName = `Hillshade render, 256-px tiles, synthetic ${size}x${size}`;
  const chainName = `Hillshade x Slope render, 256-px tiles, synthetic ${size}x${size}`;
  const plainName = `Hillshade plain loop (render suite), synthetic ${size}x${size}`;
  bench.add(hsName, async () => {
    await render(hs, { tileSize: 256 });
  });
  bench.add(chainName, async () => {
    await render(chain, { tileSize: 256 });
  });
  bench.add(plainName, () => plainHillshade(z, u8, size, size, 10));
  await bench.run();
  return rowsOf(bench.tasks, [
    { ours: hsName, reference: plainName, pixels: size * size },
    { ours: chainName, pixels: size * size },
  ]);
}

/**
 * Inputs that do not overlap are refused when the rule is built, naming both extents and the
 * argument: a Landsat scene near Olinda (EPSG:31985) and a DEM of the Jacksboro fault in
 * Tennessee (EPSG:32616) share no pixel, so Arithmetic, Local, CompositeBand, ... over them would
 * give an output that is entirely NoData. Partial overlaps, and UnionOf mosaics of functions that
 * leave NoData inputs out, stay legitimate.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../src/core/errors.js';
import { registry } from '../src/functions/index.js';
import { openerScope } from '../src/io/source.js';
import { buildGraph } from '../src/rule/build.js';
import { bindSources } from '../src/rule/sources.js';
import { DATA } from './broken-tiff.js';

const LANDSAT = join(DATA, 'L7_ETMs.tif');
const DEM = join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif');
const DEM_GEO = join(DATA, 'jacksboro_fault_dem_3arcsec.tif');
const OLINDA = join(DATA, 'olinda_dem_utm25s.tif');

const files = openerScope();
afterAll(files.closeAll);

const build = (rule: unknown, inputs: Record<string, string>) =>
  buildGraph(rule, { registry, resolveSource: bindSources(inputs, files.open) });

async function refusal(rule: unknown, inputs: Record<string, string> = { $1: LANDSAT, $2: DEM }): Promise<EngineError> {
  try {
    await build(rule, inputs);
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    return e as EngineError;
  }
  throw new Error('the rule was built');
}

const fn = (rasterFunction: string, args: Record<string, unknown>) => ({ rasterFunction, rasterFunctionArguments: args });

describe('inputs that do not overlap are refused when the rule is built', () => {
  it('Arithmetic, every ExtentType: an INVALID_ARGUMENT at the input, naming both extents and spatial references', async () => {
    for (const extentType of [0, 1, 2, 3]) {
      const e = await refusal(fn('Arithmetic', { Raster: '$1', Raster2: '$2', Operation: 1, ExtentType: extentType }));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.path).toBe('rasterFunctionArguments.Raster2');
      expect(e.message).toContain('Raster2 covers [732000, 4037625, 760725, 4068150] in EPSG:32616');
      expect(e.message).toContain('Raster covers [288776.25, 9110728.75, 298722.75, 9120760.75] in EPSG:31985');
      expect(e.message).not.toMatch(/seed|spec section/i);
    }
  });

  it('the path leads to the function inside a nested rule', async () => {
    const e = await refusal(fn('Hillshade', { DEM: fn('Arithmetic', { Raster: '$2', Raster2: '$1', Operation: 2 }) }));
    expect(e.path).toBe('rasterFunctionArguments.DEM.rasterFunctionArguments.Raster2');
  });

  it('Local, RasterCalculator, CompositeBand, WeightedSum, ComputeChange', async () => {
    const cases: [unknown, string][] = [
      [fn('Local', { Rasters: ['$1', '$2'], Operation: 1 }), 'rasterFunctionArguments.Rasters[1]'],
      [fn('Local', { Rasters: ['$1', '$2'], Operation: 1, ExtentType: 2 }), 'rasterFunctionArguments.Rasters[1]'],
      [fn('Local', { Rasters: ['$1', '$2'], Operation: 67 }), 'rasterFunctionArguments.Rasters[1]'],
      [
        fn('RasterCalculator', { Rasters: ['$1', '$2'], InputNames: ['a', 'b'], Expression: 'a + b' }),
        'rasterFunctionArguments.Rasters[1]',
      ],
      [fn('CompositeBand', { Rasters: ['$1', '$2'] }), 'rasterFunctionArguments.Rasters[1]'],
      [fn('WeightedSum', { Rasters: ['$1', '$2'], Weights: [0.5, 0.5] }), 'rasterFunctionArguments.Rasters[1]'],
      [
        fn('ComputeChange', { Raster: '$2', Raster2: fn('ExtractBand', { Raster: '$1', BandIDs: [4] }) }),
        'rasterFunctionArguments.Raster2',
      ],
    ];
    for (const [rule, path] of cases) {
      const e = await refusal(rule);
      expect({ code: e.code, path: e.path }, JSON.stringify(rule)).toEqual({ code: 'INVALID_ARGUMENT', path });
      expect(e.message).toContain('EPSG:32616');
      expect(e.message).toContain('EPSG:31985');
    }
  });

  it('legitimate: partial overlaps, overlaps across spatial references, UnionOf mosaics that leave NoData out', async () => {
    // L7 and the Olinda DEM cover the same corner; the 3-arc-second DEM is the UTM one's source.
    await expect(
      build(fn('Arithmetic', { Raster: '$1', Raster2: '$2', Operation: 1 }), { $1: LANDSAT, $2: OLINDA }),
    ).resolves.toBeDefined();
    await expect(
      build(fn('Arithmetic', { Raster: '$1', Raster2: '$2', Operation: 1, ExtentType: 1 }), { $1: DEM, $2: DEM_GEO }),
    ).resolves.toBeDefined();
    await expect(
      build(fn('Local', { Rasters: ['$1', '$2'], Operation: 67, ExtentType: 2 }), { $1: LANDSAT, $2: DEM }),
    ).resolves.toBeDefined();
    await expect(
      build(fn('RasterCalculator', { Rasters: ['$1', '$2'], InputNames: ['a', 'b'], Expression: 'a + b', ExtentType: 2 }), {
        $1: LANDSAT,
        $2: DEM,
      }),
    ).resolves.toBeDefined();
  });
});

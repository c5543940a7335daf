// Recast has no pixel math: the expected output is the nested chain rendered with the overridden
// values written in directly (derived by hand from the spec: "override the named argument or
// variable further down the chain"), compared node by node and pixel for pixel.
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import { render } from '../../graph/render.js';
import type { FunctionNode, SourceNode } from '../../graph/types.js';
import { buildGraph, resolveRule, type SourceResolver } from '../../rule/build.js';
import { createTemplates, type TemplateStore } from '../../rule/templates.js';
import { applyFunction, firstDifference, rasterOf, tiledVersusWhole } from '../../../test/helpers.js';
import { registry } from '../index.js';
import { recast } from './recast.js';

const dem = rasterOf({ width: 24, height: 18, cellSize: 30 }, (x, y) => 100 + 3 * x + 2 * y + ((x * y) % 7));
const dem2 = rasterOf({ width: 24, height: 18, cellSize: 30 }, (x, y) => 50 + x * y);
const sources: Record<string, SourceNode> = { $$: dem as SourceNode, $1: dem as SourceNode, $3: dem2 as SourceNode };
const resolveSource: SourceResolver = async (ref, path) => {
  const s = ref.kind === 'ref' ? sources[ref.name] : undefined;
  if (s === undefined) throw new EngineError('IO_ERROR', `cannot open ${JSON.stringify(ref)}`, { path });
  return s;
};
const build = (rule: unknown, templates?: TemplateStore) => buildGraph(rule, { registry, templates, resolveSource });
const hillshade = (args: Record<string, unknown> = {}) => ({ rasterFunction: 'Hillshade', rasterFunctionArguments: args });
const recastOf = (raster: unknown, overrides: Record<string, unknown>) => ({
  rasterFunction: 'Recast',
  rasterFunctionArguments: { Raster: raster, ...overrides },
});
/** The node under the Recast node at the root. */
const under = (root: unknown): FunctionNode => (root as FunctionNode).inputs[0] as FunctionNode;

async function samePixels(a: unknown, b: unknown): Promise<string | undefined> {
  const x = await build(a);
  const y = await build(b);
  return firstDifference(await render(x.root, { tileSize: 64 }), await render(y.root, { tileSize: 64 }));
}

describe('Recast', () => {
  it('overrides an argument of the nested function; output = the chain with that value written in', async () => {
    const g = await build(recastOf(hillshade({ Azimuth: 315, Altitude: 45 }), { Azimuth: 200 }));
    expect((g.root as FunctionNode).fn.name).toBe('Recast');
    expect(under(g.root).args).toMatchObject({ Azimuth: 200, Altitude: 45 });
    expect(g.root.info).toEqual(under(g.root).info);
    expect(g.warnings).toEqual([]);
    expect(await samePixels(recastOf(hillshade({ Azimuth: 315 }), { Azimuth: 200 }), hillshade({ Azimuth: 200 }))).toBeUndefined();
  });

  it('matches names case-insensitively, overrides defaulted arguments too, and reaches the whole chain', async () => {
    const chain = {
      rasterFunction: 'Arithmetic',
      rasterFunctionArguments: {
        Raster: { rasterFunction: 'Slope', rasterFunctionArguments: { ZFactor: 1 } },
        Raster2: hillshade({ Azimuth: 100 }),
        Operation: 1,
      },
    };
    const g = await build(recastOf(chain, { zfactor: '3', ALTITUDE: 20 }));
    const arith = under(g.root);
    expect((arith.inputs[0] as FunctionNode).args).toMatchObject({ ZFactor: 3 });
    expect((arith.inputs[1] as FunctionNode).args).toMatchObject({ ZFactor: 3, Altitude: 20, Azimuth: 100 });
    expect(g.warnings).toEqual([]);
  });

  it('overrides a raster argument (resolved where the Recast is)', async () => {
    const g = await build(recastOf({ rasterFunction: 'Slope', rasterFunctionArguments: { DEM: '$1' } }, { DEM: '$3' }));
    expect(under(g.root).inputs[0]).toBe(dem2);
    const viaAlias = await build(
      recastOf({ rasterFunction: 'Aspect', rasterFunctionArguments: { DEM: '$1' } }, { Raster2: 1, raster_: 0, dem: '$3' }),
    );
    expect(under(viaAlias.root).inputs[0]).toBe(dem2);
  });

  it('takes the vendor layout too: an Arguments (or Overrides) object of name/value pairs', async () => {
    const g = await build(recastOf(hillshade(), { Arguments: { Azimuth: 10, Altitude: 60 } }));
    expect(under(g.root).args).toMatchObject({ Azimuth: 10, Altitude: 60 });
    const o = await build(recastOf(hillshade(), { overrides: { ZFactor: 2 } }));
    expect(under(o.root).args).toMatchObject({ ZFactor: 2 });
  });

  it('overrides template arguments and long-form RasterFunctionVariables by their variable name', async () => {
    const templates = createTemplates();
    templates.register('Hillshade Gray', hillshade({ Azimuth: 200, Altitude: 30 }), { variableName: 'DEM' });
    templates.register('Sun', {
      function: { type: 'HillshadeFunction' },
      arguments: {
        Azimuth: { type: 'RasterFunctionVariable', name: 'SunAzimuth', value: 270 },
        Altitude: { type: 'RasterFunctionVariable', name: 'SunAltitude' },
        DEM: { type: 'RasterFunctionVariable', name: 'DEM', isDataset: true },
      },
    });
    const a = await build(recastOf({ rasterFunction: 'Hillshade Gray' }, { Azimuth: 90 }), templates);
    expect(under(a.root).args).toMatchObject({ Azimuth: 90, Altitude: 30 });
    const b = await build(recastOf({ rasterFunction: 'Sun' }, { SunAzimuth: 45, sunaltitude: 10 }), templates);
    expect(under(b.root).args).toMatchObject({ Azimuth: 45, Altitude: 10 });
    expect(b.warnings).toEqual([]);
    // A template used as the chain's raster (by name) is recast like a nested rule.
    const c = await build(
      recastOf(
        { rasterFunction: 'Arithmetic', rasterFunctionArguments: { Raster: { rasterFunction: 'Sun' }, Raster2: 0 } },
        { SunAzimuth: 1 },
      ),
      templates,
    );
    expect((under(c.root).inputs[0] as FunctionNode).args).toMatchObject({ Azimuth: 1 });
  });

  it('an enclosing Recast wins over a nested one for the same name', async () => {
    const g = await build(recastOf(recastOf(hillshade(), { Azimuth: 10, Altitude: 20 }), { Azimuth: 99 }));
    expect(under(under(g.root)).args).toMatchObject({ Azimuth: 99, Altitude: 20 });
    expect(g.warnings).toEqual([]);
  });

  it('an override that matches nothing is a warning with a did-you-mean, and changes nothing', async () => {
    const r = resolveRule(recastOf(hillshade(), { Azimut: 10, Foo: 1 }), { registry });
    expect(r.issues).toEqual([]);
    expect(r.warnings).toEqual([
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Azimut',
        message: expect.stringMatching(/no argument or variable named Azimut.*did you mean Azimuth\?/),
      }),
      expect.objectContaining({ path: 'rasterFunctionArguments.Foo', message: expect.not.stringMatching(/did you mean/) }),
    ]);
    const onSource = resolveRule(recastOf('$$', { Azimuth: 10 }), { registry });
    expect(onSource.warnings.map((w) => w.path)).toEqual(['rasterFunctionArguments.Azimuth']);
  });

  it('a bad override value is reported at the override, naming where it applied', async () => {
    const r = resolveRule(
      recastOf({ rasterFunction: 'Identity', rasterFunctionArguments: { Raster: hillshade() } }, { Altitude: 'high' }),
      { registry },
    );
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0]).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Altitude' });
    expect(r.issues[0]!.message).toMatch(
      /expected a number.*Recast override Altitude, applied at rasterFunctionArguments\.Raster\.rasterFunctionArguments\.Raster\.rasterFunctionArguments\.Altitude/,
    );
  });

  it('keeps outputPixelType on the Recast and on the nested rule', async () => {
    const g = await build({ ...recastOf({ ...hillshade(), outputPixelType: 'F32' }, { Azimuth: 1 }), outputPixelType: 'U16' });
    expect(g.root.info.pixelType).toBe('U16');
    expect((under(g.root).inputs[0] as FunctionNode).info.pixelType).toBe('F32');
  });

  it('tiled equals whole, as a bare pass-through and through a recast chain', async () => {
    expect(await tiledVersusWhole(applyFunction(recast, {}, [dem]), [7, 5])).toBeUndefined();
    const g = await build(recastOf(hillshade(), { Azimuth: 10, ZFactor: 4 }));
    expect(await tiledVersusWhole(g.root, [7, 5])).toBeUndefined();
  });
});

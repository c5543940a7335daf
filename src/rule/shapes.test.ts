/**
 * The rule shapes real clients send: the vendor JS client's spelling (lowerCamel names, kebab-case
 * and numeric enum values, its object field names), type slips taken as "not given" with a
 * warning, one multi-band Raster where a list of rasters is expected, unknown rule fields named,
 * required arguments and values that cannot take effect reported, did-you-mean for enum typos.
 */
import { describe, expect, it } from 'vitest';
import { EngineError, type Issue } from '../core/errors.js';
import { registry } from '../functions/index.js';
import { render } from '../graph/render.js';
import type { FunctionNode, SourceNode } from '../graph/types.js';
import { rasterOf, errorOf } from '../../test/helpers.js';
import { buildGraph, describeResolution, resolveRule, type SourceResolver } from './build.js';

const dem = rasterOf({ width: 20, height: 16, cellSize: 30 }, (x, y) => 100 + 3 * x + 2 * y + ((x * y) % 7));
const rgb = rasterOf({ width: 20, height: 16, cellSize: 30, bandCount: 3, pixelType: 'U8' }, (x, y, b) => (7 * x + 3 * y + 50 * b) % 256);
const vec = rasterOf({ width: 20, height: 16, cellSize: 30, bandCount: 2 }, (x, y, b) => (b === 0 ? 1 + x : (10 * y) % 360));
const sources: Record<string, SourceNode> = { $$: dem as SourceNode, $1: dem as SourceNode, $2: rgb as SourceNode, $3: vec as SourceNode };
const resolveSource: SourceResolver = async (ref, path) => {
  const s = ref.kind === 'ref' ? sources[ref.name] : undefined;
  if (s === undefined) throw new EngineError('IO_ERROR', `cannot open ${JSON.stringify(ref)}`, { path });
  return s;
};
const build = (rule: unknown) => buildGraph(rule, { registry, resolveSource });

/** The arguments the resolver settled on for the root function (canonical names, defaults applied). */
function argsOf(rule: unknown): Record<string, unknown> {
  const r = resolveRule(rule, { registry });
  expect(r.issues).toEqual([]);
  const d = describeResolution(r.root!);
  return d.nodes.find((n) => n.id === d.root)!.rasterFunctionArguments as Record<string, unknown>;
}

const pixels = async (rule: unknown) => {
  const g = await build(rule);
  const b = await render(g.root, { tileSize: 7 });
  return { bands: b.bands.map((p) => Array.from(p)), mask: Array.from(b.mask), info: g.root.info };
};

describe('the vendor JS client spelling', () => {
  it('takes lowerCamel names and the kebab-case enum names of the JS API', () => {
    expect(
      argsOf({
        rasterFunction: 'Stretch',
        rasterFunctionArguments: { raster: '$$', stretchType: 'standard-deviation', numberOfStandardDeviations: 2, dra: true },
      }),
    ).toMatchObject({
      StretchType: 3,
      NumberOfStandardDeviations: 2,
      DRA: true,
    });
    expect(
      argsOf({ rasterFunction: 'Stretch', rasterFunctionArguments: { stretchType: 'percent-clip', minPercent: 1, maxPercent: 1 } }),
    ).toMatchObject({ StretchType: 6 });
    expect(
      argsOf({
        rasterFunction: 'Hillshade',
        rasterFunctionArguments: { hillshadeType: 'multi-directional', slopeType: 'adjusted', psPower: 0.5, psZFactor: 0.1, zFactor: 1 },
      }),
    ).toMatchObject({
      HillshadeType: 1,
      SlopeType: 3,
      PSPower: 0.5,
      PSZFactor: 0.1,
    });
    expect(argsOf({ rasterFunction: 'Slope', rasterFunctionArguments: { slopeType: 'percent-rise' } })).toMatchObject({ SlopeType: 2 });
    expect(argsOf({ rasterFunction: 'Curvature', rasterFunctionArguments: { curvatureType: 'planform', zFactor: 1 } })).toMatchObject({
      Type: 2,
    });
    expect(
      argsOf({ rasterFunction: 'Mask', rasterFunctionArguments: { noDataValues: ['0'], noDataInterpretation: 'match-all' } }),
    ).toMatchObject({ NoDataInterpretation: 1 });
    expect(
      argsOf({ rasterFunction: 'ExtractBand', rasterFunctionArguments: { bandIds: [0], missingBandAction: 'best-match' } }),
    ).toMatchObject({ BandIDs: [0], MissingBandAction: 0 });
  });

  it('takes the VectorFieldRenderer arguments exactly as the JS client writes them (unit code 100, style names)', () => {
    const js = {
      magnitudeBandID: 0,
      directionBandID: 1,
      isUVComponents: false,
      referenceSystem: 2,
      massFlowAngleRepresentation: 0,
      symbolTileSize: 50,
      symbolTileSizeUnits: 100,
      calculationMethod: 'Vector Average',
      symbologyName: 'Beaufort Wind (Knots)',
    };
    expect(argsOf({ rasterFunction: 'VectorFieldRenderer', rasterFunctionArguments: js })).toMatchObject({
      SymbolTileSizeUnits: 'Pixels',
      CalculationMethod: 'Vector Average',
      SymbologyName: 'Beaufort Wind (Knots)',
    });
    for (const [style, name] of [
      ['beaufort-kn', 'Beaufort Wind (Knots)'],
      ['ocean_current_m', 'Ocean Current (MetersPerSecond)'],
      ['single-arrow', 'Single Arrow'],
      ['wind-barb', 'Wind Barb'],
    ] as const) {
      expect(argsOf({ rasterFunction: 'VectorFieldRenderer', rasterFunctionArguments: { symbologyName: style } }).SymbologyName).toBe(name);
    }
    expect(
      argsOf({ rasterFunction: 'VectorFieldRenderer', rasterFunctionArguments: { symbolTileSizeUnits: 9, calculationMethod: 0 } }),
    ).toMatchObject({
      SymbolTileSizeUnits: 'Meters',
      CalculationMethod: 'Nearest neighbor',
    });
    expect(
      argsOf({
        rasterFunction: 'VectorField',
        rasterFunctionArguments: { raster1: '$1', raster2: '$1', inputDataType: 'vector-magdir', outputDataType: 'vector-uv' },
      }),
    ).toMatchObject({
      InputDataType: 'Vector-MagDir',
      OutputDataType: 'Vector-UV',
    });
  });

  it('renders the JS client VectorFieldRenderer rule as the canonical one', async () => {
    const canonical = await pixels({
      rasterFunction: 'VectorFieldRenderer',
      rasterFunctionArguments: { Raster: '$3', SymbolTileSize: 5, SymbologyName: 'Single Arrow', SymbolTileSizeUnits: 'Pixels' },
    });
    const js = await pixels({
      rasterFunction: 'VectorFieldRenderer',
      rasterFunctionArguments: { raster: '$3', symbolTileSize: 5, symbologyName: 'single-arrow', symbolTileSizeUnits: 100 },
    });
    expect(js).toEqual(canonical);
  });

  it('takes unit codes and the vendor-prefixed unit names for SurfaceParamFunction ZUnit', async () => {
    const plan = async (zUnit: unknown) =>
      ((await build({ rasterFunction: 'SurfaceParamFunction', rasterFunctionArguments: { ZUnit: zUnit } })).root as FunctionNode).plan
        .params;
    const feet = await plan('Feet');
    expect(await plan(3)).toEqual(feet);
    expect(await plan('3')).toEqual(feet);
    expect(await plan('esriFeet')).toEqual(feet);
    expect(await plan(9)).toEqual(await plan('Meters'));
    const e = await errorOf(plan('Meterz'));
    expect(e.issues[0]).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.ZUnit' });
    expect(e.message).toMatch(/did you mean Meters\?/);
  });

  it('takes a Statistics Type as a name or a code alike', () => {
    const byName = resolveRule(
      { rasterFunction: 'Statistics', rasterFunctionArguments: { type: 'mean', kernelColumns: 3, kernelRows: 3 } },
      { registry },
    );
    const byCode = resolveRule({ rasterFunction: 'Statistics', rasterFunctionArguments: { Type: 3, Columns: 3, Rows: 3 } }, { registry });
    expect(byName.root!.id).toBe(byCode.root!.id);
  });

  it('reads the JS RasterFunction object fields functionName and functionArguments', () => {
    const js = resolveRule(
      {
        functionName: 'Hillshade',
        functionArguments: { zFactor: 2, raster: { functionName: 'Identity', functionArguments: {} } },
        outputPixelType: 'U8',
      },
      { registry },
    );
    const rest = resolveRule(
      {
        rasterFunction: 'Hillshade',
        rasterFunctionArguments: { ZFactor: 2, Raster: { rasterFunction: 'Identity' } },
        outputPixelType: 'U8',
      },
      { registry },
    );
    expect(js.issues).toEqual([]);
    expect(js.warnings).toEqual([]);
    expect(js.root!.id).toBe(rest.root!.id);
    const both = resolveRule({ rasterFunction: 'Slope', functionName: 'Aspect' }, { registry });
    expect(both.warnings).toMatchObject([{ path: 'functionName', message: expect.stringMatching(/rasterFunction is used/) }]);
  });
});

describe('type slips', () => {
  it('takes false, null or "" where a number, list or name is expected as not given, with a warning at its path', () => {
    const r = resolveRule(
      { rasterFunction: 'Hillshade', rasterFunctionArguments: { ZFactor: false, Azimuth: null, Altitude: '', SlopeType: false } },
      { registry },
    );
    expect(r.issues).toEqual([]);
    expect(r.warnings.map((w) => w.path).sort()).toEqual([
      'rasterFunctionArguments.Altitude',
      'rasterFunctionArguments.Azimuth',
      'rasterFunctionArguments.SlopeType',
      'rasterFunctionArguments.ZFactor',
    ]);
    expect(r.warnings.find((w) => w.path.endsWith('ZFactor'))!.message).toMatch(/false is taken as not given: the default 1 is used/);
    expect(describeResolution(r.root!).nodes.at(-1)!.rasterFunctionArguments).toMatchObject({
      ZFactor: 1,
      Azimuth: 315,
      Altitude: 45,
      SlopeType: 1,
    });

    const remap = resolveRule(
      { rasterFunction: 'Remap', rasterFunctionArguments: { InputRanges: '0 100', OutputValues: '1', NoDataRanges: false } },
      { registry },
    );
    expect(remap.issues).toEqual([]);
    expect(remap.warnings).toMatchObject([{ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.NoDataRanges' }]);
    expect(describeResolution(remap.root!).nodes.at(-1)!.rasterFunctionArguments).toMatchObject({
      InputRanges: [0, 100],
      OutputValues: [1],
    });

    const vfr = resolveRule({ rasterFunction: 'VectorFieldRenderer', rasterFunctionArguments: { SymbologyName: '' } }, { registry });
    expect(vfr.issues).toEqual([]);
    expect(vfr.warnings[0]?.path).toBe('rasterFunctionArguments.SymbologyName');
  });

  it('takes numbers as strings and lists as space-delimited strings', () => {
    expect(argsOf({ rasterFunction: 'Slope', rasterFunctionArguments: { ZFactor: '2.5', SlopeType: '2' } })).toMatchObject({
      ZFactor: 2.5,
      SlopeType: 2,
    });
    expect(argsOf({ rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: '2 0' } })).toMatchObject({ BandIDs: [2, 0] });
    expect(argsOf({ rasterFunction: 'Remap', rasterFunctionArguments: { InputRanges: '0 10 10 20', OutputValues: '1 2' } })).toMatchObject({
      InputRanges: [0, 10, 10, 20],
      OutputValues: [1, 2],
    });
  });
});

describe('a multi-band Raster where a list of rasters is expected', () => {
  const bandRule = (b: number) => ({ rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [b], Raster: '$2' } });

  it('CompositeBand: its bands are the inputs, as if written out one by one', async () => {
    const one = await pixels({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Raster: '$2' } });
    const canonical = await pixels({
      rasterFunction: 'CompositeBand',
      rasterFunctionArguments: { Rasters: [bandRule(0), bandRule(1), bandRule(2)] },
    });
    expect(one).toEqual(canonical);
    expect(one.info.bandCount).toBe(3);
    const r = resolveRule({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Raster: '$2' } }, { registry });
    expect(r.warnings).toEqual([]);
  });

  it('Local and ArgStatistics: the bands are the operands', async () => {
    const one = await pixels({ rasterFunction: 'Local', rasterFunctionArguments: { Operation: 40, Raster: '$2' } });
    const canonical = await pixels({
      rasterFunction: 'Local',
      rasterFunctionArguments: { Operation: 40, Rasters: [bandRule(0), bandRule(1), bandRule(2)] },
    });
    expect(one).toEqual(canonical);
    expect(one.bands[0]!.some((v, i) => v !== canonical.bands[0]![i] || v !== 0)).toBe(true);
    const arg = await pixels({ rasterFunction: 'ArgStatistics', rasterFunctionArguments: { Type: 'Max', raster: '$2' } });
    const argCanonical = await pixels({
      rasterFunction: 'ArgStatistics',
      rasterFunctionArguments: { Type: 'Max', Rasters: [bandRule(0), bandRule(1), bandRule(2)] },
    });
    expect(arg).toEqual(argCanonical);
  });

  it('a Raster beside Rasters is reported and Rasters is used', () => {
    const r = resolveRule({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Rasters: ['$1'], Raster: '$2' } }, { registry });
    expect(r.warnings).toMatchObject([{ path: 'rasterFunctionArguments.Raster', message: expect.stringMatching(/Rasters is used/) }]);
  });
});

describe('nothing written is dropped in silence', () => {
  it('names an unknown rule field and its path, with a did-you-mean or where arguments belong', () => {
    const r = resolveRule({ rasterFunction: 'Slope', Raster: '$2', rasterFunctionArguments: {} }, { registry });
    expect(r.warnings).toEqual([
      {
        code: 'INVALID_RULE',
        path: 'Raster',
        message: 'unknown rule field "Raster" ignored; function arguments belong inside rasterFunctionArguments',
      },
    ] satisfies Issue[]);
    const typo = resolveRule({ rasterFunction: 'Slope', rasterFunctionArgument: { ZFactor: 2 } }, { registry });
    expect(typo.warnings[0]).toMatchObject({
      path: 'rasterFunctionArgument',
      message: expect.stringMatching(/did you mean rasterFunctionArguments\?/),
    });
    const nested = resolveRule(
      { rasterFunction: 'Slope', rasterFunctionArguments: { DEM: { rasterFunction: 'Identity', DEM: '$1' } } },
      { registry },
    );
    expect(nested.warnings.map((w) => w.path)).toEqual(['rasterFunctionArguments.DEM.DEM']);
  });

  it('rejects a Mask with nothing to mask when the rule is built', async () => {
    const e = await errorOf(build({ rasterFunction: 'Mask', rasterFunctionArguments: {} }));
    expect(e.issues).toMatchObject([{ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.NoDataValues' }]);
  });

  it("puts the plans' warnings in the builder's warnings, at the argument that has no effect", async () => {
    const g = await build({ rasterFunction: 'Convolution', rasterFunctionArguments: { Type: 0, Kernel: [1, 2, 1], Columns: 3, Rows: 1 } });
    expect(g.warnings).toMatchObject([
      {
        code: 'INVALID_ARGUMENT',
        path: 'rasterFunctionArguments.Kernel',
        message: expect.stringMatching(/Kernel, Columns, Rows are ignored/),
      },
    ]);
    const nested = await build({
      rasterFunction: 'Slope',
      rasterFunctionArguments: { DEM: { rasterFunction: 'Mask', rasterFunctionArguments: { NoDataValues: [''] } } },
    });
    expect(nested.warnings).toMatchObject([
      { path: 'rasterFunctionArguments.DEM.rasterFunctionArguments', message: expect.stringMatching(/passes through unchanged/) },
    ]);
  });
});

describe('enum typos', () => {
  it('gets a did-you-mean, for coded enums and named ones', () => {
    const stretch = resolveRule({ rasterFunction: 'Stretch', rasterFunctionArguments: { StretchType: 'minMaxx' } }, { registry });
    expect(stretch.issues).toMatchObject([
      { code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.StretchType', message: expect.stringMatching(/did you mean minMax\?/) },
    ]);
    const slope = resolveRule({ rasterFunction: 'Slope', rasterFunctionArguments: { SlopeType: 'percent_rsie' } }, { registry });
    expect(slope.issues[0]!.message).toMatch(/did you mean PERCENTRISE\?/);
    const vfr = resolveRule(
      { rasterFunction: 'VectorFieldRenderer', rasterFunctionArguments: { SymbologyName: 'Singel Arrow' } },
      { registry },
    );
    expect(vfr.issues).toMatchObject([
      { path: 'rasterFunctionArguments.SymbologyName', message: expect.stringMatching(/did you mean Single Arrow\?/) },
    ]);
    const far = resolveRule({ rasterFunction: 'Stretch', rasterFunctionArguments: { StretchType: 'banana' } }, { registry });
    expect(far.issues[0]!.message).not.toMatch(/did you mean/);
  });
});

describe('enum spellings stay unambiguous', () => {
  it('no two names of one argument mean different values once case and separators are dropped', () => {
    const key = (s: string) => s.toLowerCase().replace(/[\s\-_.()]/g, '');
    const clashes: string[] = [];
    for (const fn of registry.list()) {
      for (const [arg, spec] of Object.entries(fn.args)) {
        const entries: [string, unknown][] =
          spec.kind === 'enum'
            ? Object.entries(spec.names ?? {})
            : spec.kind === 'string' && spec.values
              ? [...spec.values.map((v) => [v, v] as [string, unknown]), ...Object.entries(spec.names ?? {})]
              : [];
        const seen = new Map<string, unknown>();
        for (const [name, value] of entries) {
          const prev = seen.get(key(name));
          if (prev !== undefined && prev !== value) clashes.push(`${fn.name}.${arg}: ${name}`);
          seen.set(key(name), value);
        }
      }
    }
    expect(clashes).toEqual([]);
  });
});

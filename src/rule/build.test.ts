import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { registry } from '../functions/index.js';
import { createRegistry, type FunctionNode, type SourceNode } from '../graph/types.js';
import { rasterOf, errorOf } from '../../test/helpers.js';
import { buildGraph, describeResolution, planRule, resolveRule, type SourceResolver } from './build.js';
import { createTemplates } from './templates.js';
import { DEFAULT_MAX_RULE_DEPTH, parseRule } from './parse.js';

const dem = rasterOf({ width: 20, height: 16, cellSize: 30 }, (x, y) => 100 + 3 * x + 2 * y);
const rgb = rasterOf({ width: 20, height: 16, cellSize: 30, bandCount: 3, pixelType: 'U8' }, (x, y, b) => (x + y + b) % 256);
const dem2 = rasterOf({ width: 20, height: 16, cellSize: 30 }, (x, y) => 50 + x * y);
const sources: Record<string, SourceNode> = { $$: dem as SourceNode, $1: dem as SourceNode, $2: rgb as SourceNode, $3: dem2 as SourceNode };
const resolveSource: SourceResolver = async (ref, path) => {
  const s = ref.kind === 'ref' ? sources[ref.name] : undefined;
  if (s === undefined) throw new EngineError('IO_ERROR', `cannot open ${JSON.stringify(ref)}`, { path });
  return s;
};
const build = (rule: unknown, templates = createTemplates()) => buildGraph(rule, { registry, templates, resolveSource });

describe('rule shapes', () => {
  it('matches function and argument names in any case and answers with the canonical spelling', () => {
    const r = resolveRule({ rasterfunction: 'hILLSHADE', rasterfunctionarguments: { zfactor: '2', AZIMUTH: '300' } }, { registry });
    expect(r.issues).toEqual([]);
    const d = describeResolution(r.root!);
    const node = d.nodes.find((n) => n.rasterFunction === 'Hillshade')!;
    expect(node.rasterFunctionArguments).toMatchObject({ ZFactor: 2, Azimuth: 300, Altitude: 45 });
  });

  it('accepts outputPixelType in any case; a float-natural function asked for an integer type ends in the engine cast', async () => {
    const g = await build({ rasterFunction: 'Slope', outputPixelType: 'u8' });
    expect(g.root.info.pixelType).toBe('U8');
    expect((g.root as FunctionNode).fn.name).toBe('Cast');
    const keep = await build({ rasterFunction: 'Slope', outputPixelType: 'unknown' });
    expect(keep.root.info.pixelType).toBe('F32');
  });

  it('rejects an outputPixelType that is not a pixel type, naming the field', () => {
    const r = resolveRule({ rasterFunction: 'Slope', outputPixelType: 'float' }, { registry });
    expect(r.issues).toMatchObject([{ code: 'INVALID_RULE', path: 'outputPixelType' }]);
  });

  it('takes DEM or Raster for Hillshade and Slope, DEM when both are given', async () => {
    const viaRaster = await build({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Raster: '$3' }, variableName: 'Raster' });
    expect((viaRaster.root as FunctionNode).inputs[0]).toBe(dem2);
    const r = resolveRule({ rasterFunction: 'Slope', rasterFunctionArguments: { Raster: '$3', DEM: '$1' } }, { registry });
    expect(r.warnings.map((w) => w.path)).toContain('rasterFunctionArguments.Raster');
    const g = await planRule(r, resolveSource);
    expect((g.root as FunctionNode).inputs[0]).toBe(dem);
  });

  it('defaults the raster argument to the service raster when it is absent', async () => {
    const g = await build({ rasterFunction: 'Aspect'.replace('Aspect', 'Hillshade') });
    expect((g.root as FunctionNode).inputs[0]).toBe(dem);
  });

  it('keeps unknown arguments out of the computation and warns, with a did-you-mean', () => {
    const r = resolveRule({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimut: 200, Foo: 1 } }, { registry });
    expect(r.issues).toEqual([]);
    expect(r.warnings).toEqual([
      expect.objectContaining({ path: 'rasterFunctionArguments.Azimut', message: expect.stringContaining('did you mean Azimuth') }),
      expect.objectContaining({ path: 'rasterFunctionArguments.Foo', message: 'unknown argument ignored' }),
    ]);
  });

  it('accepts argument values as arrays or space-delimited strings', () => {
    const a = resolveRule({ rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: '2 1 0' } }, { registry });
    const b = resolveRule({ rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2, '1', 0] } }, { registry });
    expect(a.root!.id).toBe(b.root!.id);
  });

  it('unwraps double-encoded rules and arguments and a renderingRule wrapper, with warnings', () => {
    const rule = { rasterFunction: 'Slope', rasterFunctionArguments: { SlopeType: 2 } };
    const plain = resolveRule(rule, { registry }).root!.id;
    expect(resolveRule(JSON.stringify(JSON.stringify(rule)), { registry }).root!.id).toBe(plain);
    const wrapped = resolveRule({ renderingRule: rule }, { registry });
    expect(wrapped.root!.id).toBe(plain);
    expect(wrapped.warnings[0]).toMatchObject({ path: 'renderingRule' });
    const args = resolveRule({ rasterFunction: 'Slope', rasterFunctionArguments: '{"SlopeType":2}' }, { registry });
    expect(args.root!.id).toBe(plain);
    expect(args.warnings[0]).toMatchObject({ path: 'rasterFunctionArguments' });
    const bad = resolveRule({ renderingRule: { rasterFunction: 'Slope', rasterFunctionArguments: { ZFactor: 'x' } } }, { registry });
    expect(bad.issues[0]).toMatchObject({ path: 'renderingRule.rasterFunctionArguments.ZFactor' });
  });

  it('reads the long raster-function-template form', async () => {
    const g = await build({
      type: 'RasterFunctionTemplate',
      function: { type: 'HillshadeFunction', pixelType: 'UNKNOWN' },
      arguments: {
        type: 'HillshadeFunctionArguments',
        Azimuth: { type: 'RasterFunctionVariable', name: 'Azimuth', value: 270 },
        DEM: { type: 'RasterFunctionVariable', name: 'DEM', isDataset: true },
      },
    });
    expect((g.root as FunctionNode).args).toMatchObject({ Azimuth: 270 });
    expect((g.root as FunctionNode).inputs[0]).toBe(dem);
  });

  it('takes raster arguments as $$, $n, $<id>, nested rules, arrays, variables, numbers and { url }', () => {
    const r = resolveRule(
      {
        rasterFunction: 'CompositeBand',
        rasterFunctionArguments: {
          Rasters: ['$$', '$2', '$2101234', 'NIR', { rasterFunction: 'Slope' }, { url: 'https://example.com/cog.tif' }],
        },
      },
      { registry },
    );
    expect(r.issues).toEqual([]);
    const d = describeResolution(r.root!);
    expect(d.nodes.filter((n) => 'source' in n).map((n) => n.source)).toEqual([
      '$$',
      '$2',
      '$2101234',
      'NIR',
      { url: 'https://example.com/cog.tif' },
    ]);
    const scalar = resolveRule({ rasterFunction: 'Arithmetic', rasterFunctionArguments: { Raster2: '2 3', Operation: 3 } }, { registry });
    expect(describeResolution(scalar.root!).nodes.some((n) => JSON.stringify(n.constant) === '[2,3]')).toBe(true);
    const notScalar = resolveRule({ rasterFunction: 'Slope', rasterFunctionArguments: { DEM: 5 } }, { registry });
    expect(notScalar.issues).toMatchObject([{ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.DEM' }]);
  });

  it('collapses equal sub-rules into one node', async () => {
    const slopeRule = { rasterFunction: 'Slope', rasterFunctionArguments: { ZFactor: 1 } };
    const g = await build({
      rasterFunction: 'Arithmetic',
      rasterFunctionArguments: { Raster: slopeRule, Raster2: { rasterfunction: 'slope' }, Operation: 1 },
    });
    const root = g.root as FunctionNode;
    expect(root.inputs[0]).toBe(root.inputs[1]);
  });
});

describe('errors', () => {
  it('reports every problem at once, each with a code and a JSON path', async () => {
    const rule = {
      rasterFunction: 'Arithmetic',
      rasterFunctionArguments: {
        Raster: { rasterFunction: 'Hillshade', rasterFunctionArguments: { ZFactor: 'steep' } },
        Raster2: {
          rasterFunction: 'Slope',
          rasterFunctionArguments: { SlopeType: 7, DEM: { rasterFunction: 'NoSuchFunction' } },
        },
        Operation: [1],
      },
    };
    const e = await errorOf(build(rule));
    expect(e.issues.map((i) => [i.code, i.path])).toEqual([
      ['INVALID_ARGUMENT', 'rasterFunctionArguments.Operation'],
      ['INVALID_ARGUMENT', 'rasterFunctionArguments.Raster.rasterFunctionArguments.ZFactor'],
      ['INVALID_ARGUMENT', 'rasterFunctionArguments.Raster2.rasterFunctionArguments.SlopeType'],
      ['UNKNOWN_FUNCTION', 'rasterFunctionArguments.Raster2.rasterFunctionArguments.DEM.rasterFunction'],
    ]);
    expect(e.issues[1]!.message).toMatch(/expected a number/);
    expect(e.issues[3]!.message).toMatch(/neither a well-known raster function nor a registered template/);
  });

  it('says when a well-known function is not provided yet, and suggests near names', () => {
    // Every well-known function is registered by now: check the message with a registry lacking one.
    const partial = createRegistry(registry.list().filter((f) => f.name !== 'Stretch'));
    const r = resolveRule({ rasterFunction: 'Stretch' }, { registry: partial });
    expect(r.issues[0]!.message).toMatch(/^Stretch is a well-known raster function/);
    const typo = resolveRule({ rasterFunction: 'Hilshade' }, { registry });
    expect(typo.issues[0]!.message).toMatch(/did you mean Hillshade/);
  });

  it('refuses malformed rules with INVALID_RULE', () => {
    expect(resolveRule('{not json', { registry }).issues[0]).toMatchObject({ code: 'INVALID_RULE', path: 'rasterFunction' });
    expect(resolveRule([], { registry }).issues[0]).toMatchObject({ code: 'INVALID_RULE' });
    expect(resolveRule({ rasterFunction: 12 }, { registry }).issues[0]).toMatchObject({ code: 'INVALID_RULE', path: 'rasterFunction' });
    expect(resolveRule({ rasterFunction: 'Slope', rasterFunctionArguments: 'x' }, { registry }).issues[0]).toMatchObject({
      path: 'rasterFunctionArguments',
    });
    expect(resolveRule({ rasterFunction: 'Slope', rasterFunctionArguments: { DEM: '$no such' } }, { registry }).issues[0]).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.DEM',
    });
  });

  it('refuses rules nested absurdly deep without overflowing the stack', () => {
    let rule: unknown = '$$';
    for (let i = 0; i < 5000; i++) rule = { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: rule } };
    const r = resolveRule(rule, { registry });
    expect(r.issues.some((i) => i.code === 'LIMIT_EXCEEDED')).toBe(true);
  });

  it('reports planning problems of several nodes together, at their paths', async () => {
    const e = await errorOf(
      build({
        rasterFunction: 'Arithmetic',
        rasterFunctionArguments: {
          Raster: { rasterFunction: 'Slope', rasterFunctionArguments: { DEM: '$2' } },
          Raster2: { rasterFunction: 'Hillshade', rasterFunctionArguments: { DEM: '$2' } },
        },
      }),
    );
    expect(e.issues.map((i) => i.path)).toEqual([
      expect.stringMatching(/^rasterFunctionArguments\.Raster\./),
      expect.stringMatching(/^rasterFunctionArguments\.Raster2\./),
    ]);
  });

  it('fails clearly when a source cannot be opened', async () => {
    const e = await errorOf(build({ rasterFunction: 'Slope', rasterFunctionArguments: { DEM: { url: 'https://example.com/x' } } }));
    expect(e.issues[0]).toMatchObject({ code: 'IO_ERROR', path: 'rasterFunctionArguments.DEM' });
  });
});

describe('templates', () => {
  const templates = createTemplates();
  templates.register(
    'Hillshade Gray',
    { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 200, Altitude: 30 } },
    { variableName: 'DEM' },
  );
  templates.register(
    'Steepness',
    {
      rasterFunction: 'Arithmetic',
      rasterFunctionArguments: { Raster: { rasterFunction: 'Slope', rasterFunctionArguments: { DEM: 'DEM' } }, Raster2: 2, Operation: 3 },
    },
    { variableName: 'DEM' },
  );

  it('applies template defaults when arguments are omitted', async () => {
    const g = await build({ rasterFunction: 'hillshade gray' }, templates);
    expect((g.root as FunctionNode).args).toMatchObject({ Azimuth: 200, Altitude: 30, ZFactor: 1 });
    expect((g.root as FunctionNode).inputs[0]).toBe(dem);
  });

  it('lets the caller override template arguments and bind its raster', async () => {
    const g = await build({ rasterFunction: 'Hillshade Gray', rasterFunctionArguments: { Azimuth: 90, DEM: '$3' } }, templates);
    expect((g.root as FunctionNode).args).toMatchObject({ Azimuth: 90, Altitude: 30 });
    expect((g.root as FunctionNode).inputs[0]).toBe(dem2);
    await expect(build({ rasterFunction: 'Steepness', rasterFunctionArguments: { DEM: '$2' } }, templates)).rejects.toThrow(/band/i);
    const ok = await build({ rasterFunction: 'Steepness' }, templates);
    expect(((ok.root as FunctionNode).inputs[0] as FunctionNode).inputs[0]).toBe(dem);
  });

  it('uses templates inside client-defined chains', async () => {
    const g = await build(
      {
        rasterFunction: 'Arithmetic',
        rasterFunctionArguments: { Raster: { rasterFunction: 'Hillshade Gray' }, Raster2: 1, Operation: 1 },
      },
      templates,
    );
    expect(((g.root as FunctionNode).inputs[0] as FunctionNode).args).toMatchObject({ Azimuth: 200 });
  });
});

describe('hostile rules (regressions found by test/fuzz/rules.test.ts)', () => {
  it('names rasterFunction when the rule as a whole is not a JSON object', async () => {
    for (const rule of [null, 1, [], '"x"', '{not json']) {
      expect(await errorOf(build(rule))).toMatchObject({ code: 'INVALID_RULE', path: 'rasterFunction' });
    }
  });

  it('refuses argument values and RasterFunctionVariable values nested deeper than 64 levels with LIMIT_EXCEEDED', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(await errorOf(build({ rasterFunction: 'Hillshade', rasterFunctionArguments: { ZFactor: deep } }))).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      path: 'rasterFunctionArguments.ZFactor',
    });
    let chain: unknown = '$$';
    for (let i = 0; i < 100_000; i++) chain = { type: 'RasterFunctionVariable', name: 'Raster', value: chain };
    expect(await errorOf(build({ function: { type: 'IdentityFunction' }, arguments: { Raster: chain } }))).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      path: 'arguments.Raster',
    });
    // 64 levels are fine.
    let ok: unknown = 2;
    for (let i = 0; i < 63; i++) ok = { type: 'RasterFunctionVariable', name: 'Raster', value: ok };
    await expect(build({ function: { type: 'HillshadeFunction' }, arguments: { ZFactor: ok, DEM: '$1' } })).resolves.toBeDefined();
  });

  it('refuses a template that uses itself at its rasterFunction, naming the cycle, and a template tree that multiplies', async () => {
    const templates = createTemplates();
    templates.register('Ping', { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: { rasterFunction: 'Pong' } } });
    templates.register('Pong', { rasterFunction: 'Ping' });
    const e = await errorOf(build({ rasterFunction: 'Ping' }, templates));
    expect(e).toMatchObject({ code: 'LIMIT_EXCEEDED', message: expect.stringMatching(/uses itself \(Ping -> Pong -> Ping\)/) });
    expect(e.path).toMatch(/rasterFunction$/);
    for (let i = 0; i < 16; i++) {
      templates.register(`T${i}`, {
        rasterFunction: 'CompositeBand',
        rasterFunctionArguments: { Rasters: [0, 1, 2, 3].map(() => ({ rasterFunction: `T${i + 1}` })) },
      });
    }
    templates.register('T16', { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: '$1' } });
    const t0 = performance.now();
    expect(await errorOf(build({ rasterFunction: 'T0' }, templates))).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      message: expect.stringMatching(/more than 10000 raster functions/),
    });
    expect(performance.now() - t0).toBeLessThan(5_000);
    // A small tree of the same templates builds.
    await expect(build({ rasterFunction: 'T14' }, templates)).resolves.toBeDefined();
  });
});

describe('rule caps as options (the server passes its maxRuleDepth and maxRuleNodes)', () => {
  const nested = (levels: number): unknown => {
    let rule: unknown = '$$';
    for (let i = 0; i < levels; i++) rule = { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: rule } };
    return rule;
  };

  it('maxDepth replaces the default of 64 levels; the message names maxRuleDepth', () => {
    expect(DEFAULT_MAX_RULE_DEPTH).toBe(64);
    expect(parseRule(nested(65)).issues).toEqual([]);
    const deep = parseRule(nested(66)).issues;
    expect(deep).toHaveLength(1);
    expect(deep[0]).toMatchObject({ code: 'LIMIT_EXCEEDED', message: expect.stringMatching(/more than 64 levels deep.*\(maxRuleDepth\)/) });
    expect(parseRule(nested(3), '', { maxDepth: 2 }).issues).toEqual([]);
    const three = parseRule(nested(4), '', { maxDepth: 2 }).issues;
    expect(three[0]).toMatchObject({ code: 'LIMIT_EXCEEDED', message: expect.stringContaining('more than 2 levels') });
    expect(parseRule(nested(100), '', { maxDepth: 200 }).issues).toEqual([]);
    // Through resolveRule, and inside a renderingRule wrapper too.
    expect(resolveRule({ renderingRule: nested(4) }, { registry, maxDepth: 2 }).issues[0]).toMatchObject({ code: 'LIMIT_EXCEEDED' });
  });

  it('maxNodes replaces MAX_RULE_NODES; the message names maxRuleNodes', () => {
    expect(resolveRule(nested(5), { registry, maxNodes: 5 }).issues).toEqual([]);
    const over = resolveRule(nested(6), { registry, maxNodes: 5 }).issues;
    expect(over).toHaveLength(1);
    expect(over[0]).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      message: expect.stringMatching(/more than 5 raster functions.*\(maxRuleNodes\)/),
    });
    expect(resolveRule(nested(60), { registry }).issues).toEqual([]);
  });
});

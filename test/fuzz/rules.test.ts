/**
 * Fuzzing the rule parser and builder (issue 20, item 1): structural mutations of the real rules in
 * test/rules-sample and generated hostile rules (10,000 levels deep, very wide, 1 MB strings,
 * prototype keys, templates that refer to each other in a cycle) go through the public API
 * (`buildGraph`, as the CLI and the servers use it). Property: it succeeds, or it fails with an
 * `EngineError` whose code is in ERROR_TABLE and whose path is non-empty; never another exception,
 * never more than CASE_BUDGET_MS per case (checked with timestamps), Object.prototype untouched, and
 * the heap grows by less than HEAP_BOUND over the whole run. A rule that builds is rendered over an
 * 8x8 in-memory block, which must succeed or fail with an EngineError.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, ERROR_TABLE } from '../../src/core/errors.js';
import { rect } from '../../src/core/rect.js';
import { registry } from '../../src/functions/index.js';
import { render } from '../../src/graph/render.js';
import type { SourceNode } from '../../src/graph/types.js';
import { buildGraph, type SourceResolver } from '../../src/rule/build.js';
import { createTemplates, type TemplateStore } from '../../src/rule/templates.js';
import { rasterOf } from '../helpers.js';
import { fuzzBudget, fuzzParameters, fuzzTimeout } from './runs.js';
import {
  deepLongForm,
  deepRule,
  deepRuleText,
  deepValue,
  MEGABYTE,
  mutatedRuleArb,
  mutateRule,
  SAMPLE_RULES,
  type Mutation,
} from './rule-arbitraries.js';

/** Wall time one case may take (parse + build + an 8x8 render). */
const CASE_BUDGET_MS = fuzzBudget(2_000);
/** Heap growth allowed across a whole property run (after a GC where one is exposed). */
const HEAP_BOUND = 256 * 1024 * 1024;
const RUNS = 1_000;

const sources = {
  gray: rasterOf({ width: 16, height: 16, cellSize: 30 }, (x, y) => 100 + 3 * x + 2 * y) as SourceNode,
  multi: rasterOf(
    { width: 16, height: 16, cellSize: 30, bandCount: 8, pixelType: 'U16' },
    (x, y, b) => (x * 7 + y * 3 + b * 11) % 500,
  ) as SourceNode,
};
/**
 * Every reference opens a small in-memory raster: `$2` the multiband one, `$$` the multiband one when
 * `multiband` (band formulas resolve) or else the DEM (terrain functions resolve); URLs fail as a
 * server's would.
 */
const resolverFor =
  (multiband: boolean): SourceResolver =>
  async (ref, path) => {
    if (ref.kind === 'url') throw new EngineError('IO_ERROR', `cannot open ${ref.url.slice(0, 40)}`, { path });
    return ref.name === '$2' || (multiband && ref.name === '$$') ? sources.multi : sources.gray;
  };
const resolveSource = resolverFor(false);

const protoKeys = (): string => Object.getOwnPropertyNames(Object.prototype).sort().join(',');
const PROTO = protoKeys();

interface Outcome {
  readonly ok: boolean;
  readonly code?: string;
  readonly ms: number;
}

/** One case: build (and render when it builds); any failure other than a well-formed EngineError throws. */
async function checkRule(rule: unknown, templates: TemplateStore = createTemplates(), multiband = false): Promise<Outcome> {
  const t0 = performance.now();
  let outcome: Outcome;
  try {
    const g = await buildGraph(rule, { registry, templates, resolveSource: resolverFor(multiband) });
    if (g.root.info.width > 0 && g.root.info.height > 0) {
      const w = Math.min(8, g.root.info.width);
      const h = Math.min(8, g.root.info.height);
      try {
        await render(g.root, { rect: rect(0, 0, w, h), tileSize: 8 });
      } catch (e) {
        if (!(e instanceof EngineError) || !(e.code in ERROR_TABLE)) throw new Error(`render crashed: ${String(e)}`, { cause: e });
      }
    }
    outcome = { ok: true, ms: performance.now() - t0 };
  } catch (e) {
    if (!(e instanceof EngineError))
      throw new Error(`not an EngineError: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`, { cause: e });
    if (!(e.code in ERROR_TABLE)) throw new Error(`code ${e.code} is not in ERROR_TABLE`);
    if (typeof e.path !== 'string' || e.path === '') throw new Error(`EngineError without a path: ${e.code} ${e.message.slice(0, 200)}`);
    outcome = { ok: false, code: e.code, ms: performance.now() - t0 };
  }
  if (outcome.ms > CASE_BUDGET_MS) throw new Error(`case took ${outcome.ms.toFixed(0)} ms (budget ${CASE_BUDGET_MS} ms)`);
  if (protoKeys() !== PROTO) throw new Error('Object.prototype was changed');
  return outcome;
}

const heap = (): number => {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
};
let heapAtStart = 0;
beforeAll(() => {
  heapAtStart = heap();
});
afterAll(() => {
  const growth = heap() - heapAtStart;
  console.info(`rules fuzz: heap growth ${(growth / 2 ** 20).toFixed(1)} MB (bound ${HEAP_BOUND / 2 ** 20} MB)`);
  expect(growth).toBeLessThan(HEAP_BOUND);
});

/** Every name a sample uses that is not a registered function, registered as a template (so mutations reach template instantiation). */
function sampleTemplates(): TemplateStore {
  const templates = createTemplates();
  const names = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v !== 'object' || v === null) return;
    for (const [k, x] of Object.entries(v)) {
      if (/^(rasterfunction|functionname)$/i.test(k) && typeof x === 'string' && registry.get(x) === undefined) names.add(x);
      walk(x);
    }
  };
  for (const { rule } of SAMPLE_RULES) walk(rule);
  let i = 0;
  for (const name of names) {
    const rules = [
      { rasterFunction: 'Hillshade', rasterFunctionArguments: { DEM: 'Raster', ZFactor: 2 } },
      {
        rasterFunction: 'Stretch',
        rasterFunctionArguments: { StretchType: 5, Raster: { rasterFunction: 'Slope', rasterFunctionArguments: { DEM: 'Raster' } } },
      },
      { rasterFunction: 'Arithmetic', rasterFunctionArguments: { Raster: 'Raster', Raster2: 'Other', Operation: 3 } },
    ];
    templates.register(name, rules[i++ % rules.length]);
  }
  return templates;
}

describe('rule fuzzing: mutations of the real rules', () => {
  it(
    'every mutation builds, or fails with an EngineError with a code and a path',
    async () => {
      const templates = sampleTemplates();
      let built = 0;
      const examples: [{ sample: number; mutations: Mutation[]; asText: boolean }, boolean][] = [
        // The first failure found: a rule that is not an object had an error without a path.
        [
          {
            sample: 0,
            mutations: [
              { kind: 'set', at: 339, key: 0, value: 589 },
              { kind: 'rename', at: 187, key: 0, to: 0 },
            ],
            asText: false,
          },
          false,
        ],
        // Found at 28,070 cases of `npm run fuzz`: a wrapped value put a Symbol in a constant
        // array, and Number() threw a TypeError out of buildGraph.
        [
          {
            sample: 19,
            mutations: [
              { kind: 'wrap', at: 50, key: 2 },
              { kind: 'wrap', at: 52, key: 0 },
            ],
            asText: false,
          },
          false,
        ],
      ];
      await fc.assert(
        fc.asyncProperty(mutatedRuleArb, fc.boolean(), async ({ sample, mutations, asText }, multiband) => {
          const rule = mutateRule(sample, mutations);
          if ((await checkRule(asText ? JSON.stringify(rule) : rule, templates, multiband)).ok) built++;
        }),
        fuzzParameters(RUNS, { examples }),
      );
      // Some mutations still build and render (the property is not only exercising error paths).
      expect(built).toBeGreaterThan(0);
    },
    fuzzTimeout(RUNS, 50),
  );

  it('every sample as it is builds or fails cleanly, also with its templates registered', async () => {
    const templates = sampleTemplates();
    expect(templates.list().length).toBeGreaterThan(0);
    let built = 0;
    for (const { rule } of SAMPLE_RULES) {
      await checkRule(rule);
      if ((await checkRule(rule, templates)).ok || (await checkRule(rule, templates, true)).ok) built++;
    }
    // Most real rules build and render (the property is not only exercising error paths).
    expect(built).toBeGreaterThan(SAMPLE_RULES.length / 2);
  });
});

describe('rule fuzzing: generated hostile rules', () => {
  it('refuses rules 10,000 levels deep (objects, JSON text, long form) with LIMIT_EXCEEDED at a path', async () => {
    for (const rule of [deepRule(10_000), deepRuleText(10_000), deepLongForm(10_000), deepRule(10_000, 'Stretch')]) {
      const o = await checkRule(rule);
      expect(o).toMatchObject({ ok: false, code: 'LIMIT_EXCEEDED' });
    }
  });

  it('survives 100,000 levels: JSON text, RasterFunctionVariable values, arrays of arrays', async () => {
    const variables = deepValue(100_000, 'array');
    let chain: unknown = '$$';
    for (let i = 0; i < 100_000; i++) chain = { type: 'RasterFunctionVariable', name: 'Raster', value: chain };
    await checkRule(deepRuleText(100_000));
    await checkRule({ function: { type: 'IdentityFunction' }, arguments: { Raster: chain } });
    await checkRule({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Rasters: variables } });
  });

  it('survives argument values 10,000 levels deep that are not rules', async () => {
    for (const kind of ['array', 'object'] as const) {
      for (const arg of ['ZFactor', 'Raster', 'Colormap', 'Statistics', 'Unknown']) {
        await checkRule({ rasterFunction: 'Hillshade', rasterFunctionArguments: { [arg]: deepValue(10_000, kind) } });
      }
      await checkRule({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Rasters: deepValue(10_000, kind, '$$') } });
    }
  });

  it('handles very wide rules: 10,000 rasters, 20,000 arguments, 1 MB strings everywhere', async () => {
    const many = Array.from({ length: 10_000 }, (_, i) => `$${(i % 3) + 1}`);
    await checkRule({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Rasters: many } });
    await checkRule({ rasterFunction: 'Local', rasterFunctionArguments: { Rasters: many, Operation: 12 } });
    const nested = Array.from({ length: 2_000 }, () => ({ rasterFunction: 'Identity', rasterFunctionArguments: { Raster: '$1' } }));
    await checkRule({ rasterFunction: 'CompositeBand', rasterFunctionArguments: { Rasters: nested } });
    const args = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`Arg${i}`, i]));
    await checkRule({ rasterFunction: 'Hillshade', rasterFunctionArguments: args });
    await checkRule({ rasterFunction: 'Hillshade', ...args });
    for (const field of ['rasterFunction', 'outputPixelType', 'variableName']) {
      await checkRule({ rasterFunction: 'Slope', [field]: MEGABYTE });
    }
    for (const arg of ['ZFactor', 'DEM', 'SlopeType', 'GeographicCellSize']) {
      await checkRule({ rasterFunction: 'Slope', rasterFunctionArguments: { [arg]: MEGABYTE } });
    }
    await checkRule({ rasterFunction: 'BandArithmetic', rasterFunctionArguments: { Method: 0, BandIndexes: MEGABYTE } });
    await checkRule({
      rasterFunction: 'RasterCalculator',
      rasterFunctionArguments: { Rasters: ['$1'], InputNames: ['a'], Expression: MEGABYTE },
    });
    await checkRule(JSON.stringify({ rasterFunction: 'Remap', rasterFunctionArguments: { InputRanges: MEGABYTE } }));
  });

  it('handles NaN, Infinity and huge numbers written as strings or numbers in every numeric argument', async () => {
    for (const v of ['NaN', 'Infinity', '-Infinity', '1e999', 1e308, -1e308, 2 ** 53 + 2, 5e-324, '0x10', '1_000']) {
      await checkRule({ rasterFunction: 'Hillshade', rasterFunctionArguments: { ZFactor: v, Azimuth: v, Altitude: v } });
      await checkRule({ rasterFunction: 'Statistics', rasterFunctionArguments: { Columns: v, Rows: v, Type: 1 } });
      await checkRule({ rasterFunction: 'Remap', rasterFunctionArguments: { InputRanges: [0, v], OutputValues: [v] } });
      await checkRule({
        rasterFunction: 'Stretch',
        rasterFunctionArguments: { StretchType: 3, NumberOfStandardDeviations: v, Gamma: [v] },
      });
      await checkRule({ rasterFunction: 'Convolution', rasterFunctionArguments: { Type: 0, Columns: v, Rows: v, Kernel: [v] } });
      await checkRule({ rasterFunction: 'Resample', rasterFunctionArguments: { ResamplingType: 0, OutputCellsize: { x: v, y: v } } });
    }
  });

  it('never lets __proto__, constructor or prototype keys reach a prototype', async () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const text = `{"rasterFunction":"Hillshade","${key}":{"polluted":1},"rasterFunctionArguments":{"${key}":{"polluted":1},"ZFactor":{"${key}":{"polluted":1}}}}`;
      await checkRule(text);
      await checkRule(JSON.parse(text));
      await checkRule(
        `{"rasterFunction":"Recast","rasterFunctionArguments":{"Raster":"$$","${key}":{"polluted":1},"Arguments":{"${key}":1}}}`,
      );
      await checkRule(`{"rasterFunction":"${key}"}`);
      await checkRule(
        `{"function":{"type":"${key}Function"},"arguments":{"${key}":{"type":"RasterFunctionVariable","name":"${key}","value":"$$"}}}`,
      );
      expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    }
  });

  it('refuses templates that refer to each other in a cycle, quickly and with a path', async () => {
    const templates = createTemplates();
    templates.register('Self', { rasterFunction: 'Self' });
    templates.register('Ping', { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: { rasterFunction: 'Pong' } } });
    templates.register('Pong', { rasterFunction: 'Ping' });
    for (const name of ['Self', 'Ping', 'Pong']) {
      expect(await checkRule({ rasterFunction: name }, templates)).toMatchObject({ ok: false, code: 'LIMIT_EXCEEDED' });
    }
    const e = await buildGraph({ rasterFunction: 'Ping' }, { registry, templates, resolveSource }).catch((x: unknown) => x);
    expect(e).toMatchObject({
      path: expect.stringMatching(/rasterFunction$/),
      message: expect.stringMatching(/uses itself \(Ping -> Pong -> Ping\)/),
    });
  });

  it('refuses templates whose instances multiply (a tree of 4^16 nodes), within the time budget', async () => {
    const templates = createTemplates();
    const four = (inner: string): unknown => ({
      rasterFunction: 'CompositeBand',
      rasterFunctionArguments: { Rasters: [0, 1, 2, 3].map(() => ({ rasterFunction: inner })) },
    });
    templates.register('Fan', four('Fan'));
    expect(await checkRule({ rasterFunction: 'Fan' }, templates)).toMatchObject({ ok: false });
    // Without a cycle: T0 uses T1 four times, ..., T15 uses T16.
    for (let i = 0; i < 16; i++) templates.register(`T${i}`, four(`T${i + 1}`));
    templates.register('T16', { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: '$$' } });
    expect(await checkRule({ rasterFunction: 'T0' }, templates)).toMatchObject({ ok: false });
  });

  it(
    'fuzzes rules generated from the registry: any function, random argument values',
    async () => {
      const names = registry.list().map((f) => f.name);
      const argValue = fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        fc.constantFrom<unknown>('$$', '$1', '$2', 'NaN', 'Infinity', '1e999', MEGABYTE.slice(0, 1000), [1, 2, 3], { url: 'x' }),
      );
      const ruleArb = fc.letrec<{ rule: unknown }>((tie) => ({
        rule: fc.record({
          rasterFunction: fc.constantFrom(...names),
          rasterFunctionArguments: fc.dictionary(
            fc.oneof(
              fc.constantFrom(
                'Raster',
                'Rasters',
                'Raster2',
                'DEM',
                'ZFactor',
                'Operation',
                'Method',
                'BandIndexes',
                'Expression',
                'Colormap',
              ),
              fc.string({ maxLength: 8 }),
            ),
            fc.oneof({ depthSize: 'small', withCrossShrink: true }, argValue, tie('rule'), fc.array(tie('rule'), { maxLength: 3 })),
            { maxKeys: 5 },
          ),
          outputPixelType: fc.constantFrom(undefined, 'U8', 'F32', 'u1', 'C64', 'bogus'),
        }),
      }));
      await fc.assert(
        fc.asyncProperty(ruleArb.rule, async (rule) => {
          await checkRule(rule);
        }),
        fuzzParameters(RUNS),
      );
    },
    fuzzTimeout(RUNS, 50),
  );
});

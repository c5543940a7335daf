/**
 * Fuzzing the expression language (issue 20, item 1; src/functions/expr, used by BandArithmetic,
 * RasterCalculator, CreateColorComposite and Local): random token soups, grammar-generated
 * expressions and hostile ones (`constructor.constructor('...')()`, `__proto__`, `globalThis`,
 * `process`, `require`, `import(`, template strings, very long and very deep inputs).
 *
 * Properties, per expression and dialect:
 * - compiling returns a program or throws the documented error: an EngineError INVALID_ARGUMENT at
 *   the argument's path, with a position in its message; nothing else, and never a RangeError;
 * - nothing outside the operands is reached: a sentinel on globalThis and Object.prototype are
 *   untouched, the name resolver is only asked for names the text spells (as written), and the
 *   program is plain data (JSON round trip equal, no functions);
 * - the compile size is bounded: instructions + constants <= LIMITS.maxTokens (4,000) and registers
 *   <= LIMITS.maxTokens, because each instruction or constant comes from at least one token;
 * - evaluating the program over random Float32 blocks (with NoData) terminates within
 *   EVAL_BUDGET_MS and writes only its output block.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import { allocateBlock } from '../../src/core/pixel-block.js';
import { rect } from '../../src/core/rect.js';
import {
  bindUserExpression,
  compileProgram,
  ExprBuilder,
  FUNCTION_NAMES,
  LIMITS,
  runProgram,
  type Program,
} from '../../src/functions/expr/index.js';
import type { Dialect } from '../../src/functions/expr/parse.js';
import { registry } from '../../src/functions/index.js';
import { render } from '../../src/graph/render.js';
import type { SourceNode } from '../../src/graph/types.js';
import { buildGraph } from '../../src/rule/build.js';
import { prng, rasterOf } from '../helpers.js';
import { fuzzBudget, fuzzParameters, fuzzTimeout } from './runs.js';

const PATH = 'rasterFunctionArguments.Expression';
const NAMES = ['a', 'b', 'c', 'B1', 'B2', 'B3'];
const SLOTS = new Map(NAMES.map((n, i) => [n.toLowerCase(), i]));
/** Wall time for one compile plus one evaluation over a 64x64 block. */
const EVAL_BUDGET_MS = fuzzBudget(1_000);
const RUNS = 1_000;

const SENTINEL = '__rasterflowFuzzSentinel';
const sentinel = { touched: false, calls: 0 };
(globalThis as Record<string, unknown>)[SENTINEL] = sentinel;
const protoKeys = (o: object): string => Object.getOwnPropertyNames(o).sort().join(',');
const PROTOS: readonly object[] = [Object.prototype, Function.prototype, Array.prototype, String.prototype, Number.prototype];
const PROTO_KEYS = PROTOS.map(protoKeys);
const GLOBAL_KEYS = protoKeys(globalThis);
afterAll(() => {
  delete (globalThis as Record<string, unknown>)[SENTINEL];
});

/** Random Float32 planes with NoData holes, one per slot. */
function blocks(seed: number, n: number): { plane: Float32Array; mask: Uint8Array }[] {
  const r = prng(seed);
  return NAMES.map(() => {
    const plane = new Float32Array(n);
    const mask = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const k = r();
      plane[i] =
        k < 0.05
          ? 0
          : k < 0.1
            ? -0
            : k < 0.12
              ? 3.4e38
              : k < 0.14
                ? -3.4e38
                : k < 0.16
                  ? 1e-45
                  : (r() - 0.5) * 10 ** Math.floor(r() * 12 - 4);
      mask[i] = r() < 0.1 ? 0 : 1;
    }
    return { plane, mask };
  });
}

/** Compile `text`; undefined when it is refused with the documented error (anything else throws). */
function compile(text: string, dialect: Dialect): Program | undefined {
  const asked: string[] = [];
  let program: Program | undefined;
  try {
    const node = bindUserExpression(
      text,
      new ExprBuilder(),
      {
        dialect,
        division: dialect === 'full' ? 'nodata' : 'zero',
        resolve: (name) => {
          asked.push(name);
          const s = SLOTS.get(name.toLowerCase());
          return s === undefined ? undefined : { slot: s };
        },
        names: () => NAMES,
      },
      PATH,
    );
    program = compileProgram([node]);
  } catch (e) {
    if (!(e instanceof EngineError))
      throw new Error(`not an EngineError: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`, { cause: e });
    if (e.code !== 'INVALID_ARGUMENT' || e.path !== PATH) throw new Error(`undocumented error ${e.code} at ${e.path}: ${e.message}`);
    if (!/position \d+/.test(e.message)) throw new Error(`error without a position: ${e.message}`);
    if (/too complex/.test(e.message)) throw new Error(`a RangeError escaped the limits: ${e.message}`);
  }
  // Only names the text spells, exactly as spelled, reach the resolver.
  for (const name of asked) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || !text.includes(name)) throw new Error(`resolver asked for ${JSON.stringify(name)}`);
  }
  return program;
}

function checkIsolation(): void {
  if (sentinel.touched || sentinel.calls !== 0 || (globalThis as Record<string, unknown>)[SENTINEL] !== sentinel) {
    throw new Error('the globalThis sentinel was reached');
  }
  PROTOS.forEach((p, i) => {
    if (protoKeys(p) !== PROTO_KEYS[i]) throw new Error('a prototype was changed');
  });
  if (protoKeys(globalThis) !== GLOBAL_KEYS) throw new Error(`globalThis gained or lost keys`);
}

/** The whole property for one expression. */
function checkExpression(text: string, dialect: Dialect, seed = 1): Program | undefined {
  const t0 = performance.now();
  const p = compile(text, dialect);
  if (p !== undefined) {
    const size = p.code.length + p.constants.length;
    if (size > LIMITS.maxTokens || p.registers > LIMITS.maxTokens) throw new Error(`compile size ${size} / ${p.registers} registers`);
    const json = JSON.stringify(p);
    if (JSON.stringify(JSON.parse(json)) !== json || /function|=>/.test(json)) throw new Error('the program is not plain data');
    for (const s of p.slots) if (!(s >= 0 && s < NAMES.length)) throw new Error(`slot ${s} outside the operands`);
    const n = 64 * 64;
    const sources = blocks(seed, n);
    const copies = sources.map((s) => s.plane.slice());
    const out = allocateBlock(rect(0, 0, 64, 64), 'F32', 1);
    runProgram(p, sources, out);
    sources.forEach((s, i) => {
      if (!s.plane.every((v, k) => Object.is(v, copies[i]![k]))) throw new Error('evaluation wrote to an operand');
    });
  }
  const ms = performance.now() - t0;
  if (ms > EVAL_BUDGET_MS) throw new Error(`compile + evaluate took ${ms.toFixed(0)} ms (budget ${EVAL_BUDGET_MS} ms)`);
  checkIsolation();
  return p;
}

const HOSTILE = [
  `constructor.constructor('${SENTINEL}.touched = true')()`,
  `constructor.constructor("return this")().${SENTINEL}`,
  `a.constructor.constructor('x')()`,
  '__proto__',
  '__proto__ + 1',
  'a.__proto__.polluted = 1',
  `__proto__(1)`,
  'constructor',
  'constructor(1)',
  'prototype',
  'toString',
  'toString()',
  'valueOf(a)',
  'hasOwnProperty(a)',
  'this',
  'this.a',
  'globalThis',
  `globalThis.${SENTINEL}`,
  `${SENTINEL}`,
  `${SENTINEL}.touched`,
  'process',
  'process.exit(1)',
  "process.mainModule.require('child_process')",
  "require('fs')",
  "import('fs')",
  'import.meta',
  'eval("1")',
  'Function("return 1")()',
  '`${a}`',
  '`${process.exit()}`',
  'a; b',
  'a = 1',
  'a => a',
  '(a) => { while (true) {} }',
  'new Array(1e9)',
  '[].constructor',
  "'a'",
  '"a"',
  '/a/.exec(b)',
  'a[0]',
  'a?.b',
  'a ?? b',
  '\u0000',
  '\u2028a',
  'ａ + 1',
  'a + \ud800',
  'Con(a, b)',
  'con(a > 1, constructor, b)',
  'SetNull(a < 0, a)',
  'Percentile(50, a, b, c)',
  'Percentile(__proto__, a)',
  'Max(' + 'a,'.repeat(3_000) + 'a)',
  '('.repeat(10_000) + 'a' + ')'.repeat(10_000),
  '-'.repeat(9_999) + 'a',
  '~'.repeat(200) + 'a',
  'a' + '**a'.repeat(2_000),
  'a' + '+a'.repeat(4_999),
  'Abs('.repeat(200) + 'a' + ')'.repeat(200),
  '9**9**9',
  '1/0',
  'Ln(0)',
  '1e999',
  '1' + '0'.repeat(400),
  'a'.repeat(129),
  'a'.repeat(10_001),
  ' '.repeat(1_000_000),
  'a + '.repeat(250_000) + 'a',
];

describe('expression fuzzing', () => {
  it('refuses or safely compiles every hostile expression, in both dialects', () => {
    for (const text of HOSTILE) {
      for (const dialect of ['full', 'arithmetic'] as const) checkExpression(text, dialect);
    }
    expect(compile(`constructor.constructor('${SENTINEL}.touched = true')()`, 'full')).toBeUndefined();
    expect(sentinel.touched).toBe(false);
  });

  const TOKENS = [
    ...NAMES,
    ...FUNCTION_NAMES,
    '0',
    '1',
    '2.5',
    '.5',
    '1e3',
    '1e-3',
    '1e308',
    '1e999',
    '0x1F',
    '+',
    '-',
    '*',
    '/',
    '**',
    '==',
    '!=',
    '<',
    '<=',
    '>',
    '>=',
    '&',
    '|',
    '^',
    '~',
    '(',
    ')',
    ',',
    '=',
    '!',
    '.',
    ';',
    '[',
    ']',
    '{',
    '}',
    "'",
    '"',
    '`',
    '${',
    '=>',
    '?',
    ':',
    '\\',
    '\n',
    '\t',
    '__proto__',
    'constructor',
    'prototype',
    'this',
    'globalThis',
    'process',
    'require',
    'import',
    'eval',
    'Function',
    SENTINEL,
  ];

  it(
    'random token soups compile or fail with the documented error, and never escape',
    () => {
      fc.assert(
        fc.property(
          fc.array(fc.constantFrom(...TOKENS), { maxLength: 40 }),
          fc.constantFrom('', ' '),
          fc.constantFrom<Dialect>('full', 'arithmetic'),
          fc.nat(),
          (tokens, sep, dialect, seed) => {
            checkExpression(tokens.join(sep), dialect, seed);
          },
        ),
        fuzzParameters(RUNS),
      );
    },
    fuzzTimeout(RUNS, 20),
  );

  it(
    'random strings (any unicode) compile or fail with the documented error',
    () => {
      fc.assert(
        fc.property(fc.string({ unit: 'binary', maxLength: 60 }), fc.constantFrom<Dialect>('full', 'arithmetic'), (text, dialect) => {
          checkExpression(text, dialect);
        }),
        fuzzParameters(RUNS),
      );
    },
    fuzzTimeout(RUNS, 20),
  );

  const grammar = fc.letrec<{ expr: string }>((tie) => ({
    expr: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom(...NAMES),
      fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.double({ min: -1e6, max: 1e6, noNaN: true })).map((v) => String(Math.abs(v))),
      fc
        .tuple(tie('expr'), fc.constantFrom('+', '-', '*', '/', '**', '==', '!=', '<', '<=', '>', '>=', '&', '|', '^'), tie('expr'))
        .map(([a, op, b]) => `${a} ${op} ${b}`),
      fc.tuple(fc.constantFrom('-', '+', '~'), tie('expr')).map(([op, x]) => `${op}${x}`),
      tie('expr').map((x) => `(${x})`),
      fc.tuple(fc.constantFrom(...FUNCTION_NAMES), fc.array(tie('expr'), { maxLength: 4 })).map(([f, xs]) => `${f}(${xs.join(', ')})`),
    ),
  }));

  it(
    'grammar-generated expressions compile or fail with the documented error; compiled ones evaluate within the budget',
    () => {
      let compiled = 0;
      fc.assert(
        fc.property(grammar.expr, fc.constantFrom<Dialect>('full', 'arithmetic'), fc.nat(), (text, dialect, seed) => {
          if (checkExpression(text, dialect, seed) !== undefined) compiled++;
        }),
        fuzzParameters(RUNS),
      );
      // The generator reaches the evaluator, not only the error paths.
      expect(compiled).toBeGreaterThan(0);
    },
    fuzzTimeout(RUNS, 20),
  );

  it(
    'generated deep and long expressions stay within the limits (nesting, depth, tokens)',
    () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20_000 }),
          fc.constantFrom('(', '-', '~', 'Abs(', 'Con(a, ', 'a ** ', 'a + ', 'Max(a, '),
          (n, open) => {
            const close = open.endsWith('(') ? ')' : '';
            checkExpression(`${open.repeat(n)}b${close.repeat(n)}`, 'full');
          },
        ),
        fuzzParameters(Math.max(20, RUNS / 20)),
      );
    },
    fuzzTimeout(RUNS, 10),
  );

  const sources = { multi: rasterOf({ width: 8, height: 8, bandCount: 3, cellSize: 30 }, (x, y, b) => x - y * b + 0.5) as SourceNode };

  it(
    'through RasterCalculator and BandArithmetic rules: build fails with INVALID_ARGUMENT at the argument, or renders',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(grammar.expr, fc.constantFrom(...HOSTILE.filter((h) => h.length < 200))), async (text) => {
          for (const rule of [
            {
              rasterFunction: 'RasterCalculator',
              rasterFunctionArguments: { Rasters: ['$1', '$2', '$3'], InputNames: ['a', 'b', 'c'], Expression: text },
            },
            {
              rasterFunction: 'BandArithmetic',
              rasterFunctionArguments: { Method: 0, BandIndexes: text.replace(/\b[abc]\b/g, 'B2'), Raster: '$1' },
            },
          ]) {
            const t0 = performance.now();
            try {
              const g = await buildGraph(rule, { registry, resolveSource: async () => sources.multi });
              await render(g.root, { rect: rect(0, 0, 8, 8), tileSize: 8 });
            } catch (e) {
              if (!(e instanceof EngineError)) throw e;
              expect(e.code).toBe('INVALID_ARGUMENT');
              expect(e.path).toMatch(/^rasterFunctionArguments\.(Expression|BandIndexes)$/);
            }
            expect(performance.now() - t0).toBeLessThan(EVAL_BUDGET_MS);
            checkIsolation();
          }
        }),
        fuzzParameters(RUNS / 5),
      );
    },
    fuzzTimeout(RUNS / 5, 50),
  );
});

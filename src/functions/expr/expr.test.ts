/**
 * The expression engine: grammar and precedence, folding, sharing, NoData propagation, op
 * semantics (values derived by hand from the spec's Local rules), and a table of hostile inputs
 * that must all end in a clean INVALID_ARGUMENT with a position: no crash, no hang, no stack
 * overflow, and nothing ever evaluated as JavaScript.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import { allocateBlock } from '../../core/pixel-block.js';
import { rect } from '../../core/rect.js';
import { catchError } from '../../../test/helpers.js';
import { bindUserExpression, compileProgram, ExprBuilder, LIMITS, parseExpression, runProgram, type SlotSource } from './index.js';
import type { Dialect } from './parse.js';

const PATH = 'rasterFunctionArguments.Expression';

/** Evaluate `text` with variables a, b, c (one value per pixel; NaN = NoData). Returns values (NaN = NoData). */
function run(text: string, vars: Record<string, number[]> = {}, opts: { dialect?: Dialect; division?: 'nodata' | 'zero' } = {}): number[] {
  const names = Object.keys(vars);
  const n = Math.max(1, ...Object.values(vars).map((v) => v.length));
  const builder = new ExprBuilder();
  const node = bindUserExpression(
    text,
    builder,
    {
      dialect: opts.dialect ?? 'full',
      division: opts.division ?? 'nodata',
      resolve: (name) => {
        const i = names.findIndex((x) => x.toLowerCase() === name.toLowerCase());
        return i < 0 ? undefined : { slot: i };
      },
      names: () => names,
    },
    PATH,
  );
  const program = compileProgram([node]);
  const sources: SlotSource[] = names.map((k) => {
    const v = vars[k]!;
    return { plane: Float64Array.from(v, (x) => (Number.isNaN(x) ? 0 : x)), mask: Uint8Array.from(v, (x) => (Number.isNaN(x) ? 0 : 1)) };
  });
  const out = allocateBlock(rect(0, 0, n, 1), 'F64', 1);
  runProgram(program, sources, out);
  return Array.from(out.bands[0]!, (v, i) => (out.mask[i] === 0 ? Number.NaN : v));
}

const one = (text: string, vars: Record<string, number[]> = {}): number => run(text, vars)[0]!;

describe('expression grammar', () => {
  it('follows the documented precedence and associativity', () => {
    expect(one('1 + 2 * 3')).toBe(7);
    expect(one('(1 + 2) * 3')).toBe(9);
    expect(one('10 - 4 - 3')).toBe(3);
    expect(one('12 / 3 / 2')).toBe(2);
    expect(one('2 ** 3 ** 2')).toBe(512);
    expect(one('-2 ** 2')).toBe(-4);
    expect(one('2 ** -1')).toBe(0.5);
    expect(one('- - 3')).toBe(3);
    expect(one('+3')).toBe(3);
    expect(one('1 + 2 > 2')).toBe(1);
    expect(one('a > 1 & a < 5', { a: [3] })).toBe(1);
    expect(one('0 | 1 & 0')).toBe(0);
    expect(one('1 ^ 1')).toBe(0);
    expect(one('1 ^ 0 | 0')).toBe(1);
    expect(one('~0')).toBe(1);
    expect(one('~a', { a: [5] })).toBe(0);
  });

  it('reads numbers with fractions and exponents', () => {
    expect(one('.5 + 1.25')).toBe(1.75);
    expect(one('1e3 + 2E-2 + 3e+1')).toBe(1030.02);
    expect(one('007')).toBe(7);
  });

  it('matches names and functions case-insensitively and shares repeated sub-expressions', () => {
    expect(run('con(A > 2, sqrt(a), -1)', { a: [1, 9] })).toEqual([-1, 3]);
    const b = new ExprBuilder();
    const opts = { dialect: 'full' as const, division: 'nodata' as const, resolve: () => ({ slot: 0 }), names: () => ['x'] };
    const node = bindUserExpression('(x + 1) * (x + 1) + (x + 1)', b, opts, PATH);
    // load x, x + 1, square-by-multiply, add: four instructions, the constant 1 in a register.
    expect(compileProgram([node]).code).toHaveLength(4);
  });

  it('folds constants, and rejects constants that are not finite', () => {
    const b = new ExprBuilder();
    const opts = { dialect: 'full' as const, division: 'nodata' as const, resolve: () => undefined, names: () => [] };
    expect(compileProgram([bindUserExpression('2 * (3 + 4)', b, opts, PATH)]).code).toHaveLength(0);
    for (const bad of ['1/0', 'Ln(0)', 'Sqrt(-1)', '9**9**9', '10 ** 400', 'SetNull(1, 2)']) {
      const e = catchError(() => bindUserExpression(bad, b, opts, PATH));
      expect(e?.code, bad).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(PATH);
    }
  });

  it('arithmetic dialect: only + - * /, unary minus, parentheses', () => {
    expect(run('(a - b) / (a + b)', { a: [4], b: [2] }, { dialect: 'arithmetic' })[0]).toBeCloseTo(1 / 3, 15);
    expect(run('-a * 2', { a: [4] }, { dialect: 'arithmetic' })).toEqual([-8]);
    for (const [text, pos] of [
      ['a ** 2', 2],
      ['a ^ 2', 2],
      ['a > 1', 2],
      ['sqrt(a)', 0],
      ['~a', 0],
      ['a & 1', 2],
    ] as const) {
      const e = catchError(() => run(text, { a: [1] }, { dialect: 'arithmetic' }));
      expect(e?.code, text).toBe('INVALID_ARGUMENT');
      expect(e?.message, text).toContain(`at position ${pos}`);
      expect(e?.message, text).toMatch(/not allowed/);
    }
  });

  it('division by zero: NoData, or 0 under the BandArithmetic policy', () => {
    expect(run('a / b', { a: [1, 0, 6], b: [0, 0, 3] })).toEqual([NaN, NaN, 2]);
    expect(run('a / b + 1', { a: [1, 0, 6], b: [0, 0, 3] }, { division: 'zero' })).toEqual([1, 1, 3]);
  });
});

describe('NoData and op semantics (hand-derived from spec §2 Local)', () => {
  const N = Number.NaN;
  it('propagates NoData through arithmetic, comparisons and Boolean ops', () => {
    expect(run('a + 1', { a: [N, 1] })).toEqual([N, 2]);
    expect(run('a > 0', { a: [N, 1] })).toEqual([N, 1]);
    expect(run('(a > 0) | 1', { a: [N, 1] })).toEqual([N, 1]);
    expect(run('a ** 0', { a: [N, 3] })).toEqual([N, 1]);
  });

  it('IsNull, Con, SetNull and Pick look at NoData on purpose', () => {
    expect(run('IsNull(a)', { a: [N, 5] })).toEqual([1, 0]);
    expect(run('Con(IsNull(a), 0, a)', { a: [N, 5] })).toEqual([0, 5]);
    expect(run('Con(a, 10, 20)', { a: [0, 3, N] })).toEqual([20, 10, N]);
    expect(run('Con(a, 10)', { a: [0, 3] })).toEqual([N, 10]);
    expect(run('SetNull(a, 7)', { a: [0, 2, N] })).toEqual([7, N, N]);
    expect(run('Pick(a, 10, 20, 30)', { a: [1, 2.7, 3, 0, 4, N] })).toEqual([10, 20, 30, N, N, N]);
  });

  it('domain errors are NoData', () => {
    expect(run('Sqrt(a)', { a: [-1, 4] })).toEqual([N, 2]);
    expect(run('Ln(a)', { a: [0, -1, Math.E] })).toEqual([N, N, 1]);
    expect(run('Log10(a) + Log2(a)', { a: [0, 8] })[0]).toBeNaN();
    expect(run('ACos(a)', { a: [2, 1] })).toEqual([N, 0]);
    expect(run('ASin(a)', { a: [-1.5, 0] })).toEqual([N, 0]);
    expect(run('ATanH(a)', { a: [1, -1, 0] })).toEqual([N, N, 0]);
    expect(run('ACosH(a)', { a: [0.5, 1] })).toEqual([N, 0]);
    expect(run('FloorDivide(a, b)', { a: [7, -7, 1], b: [2, 2, 0] })).toEqual([3, -4, N]);
    expect(run('Mod(a, b)', { a: [7, -7, 1], b: [3, 3, 0] })).toEqual([1, -1, N]);
    expect(run('Power(a, 0.5)', { a: [-4, 9] })).toEqual([N, 3]);
    expect(run('1 / a', { a: [0] })).toEqual([N]);
  });

  it('rounding, integer and bitwise ops', () => {
    expect(run('Int(a)', { a: [2.7, -2.7] })).toEqual([2, -2]);
    expect(run('RoundDown(a)', { a: [2.7, -2.7] })).toEqual([2, -3]);
    expect(run('RoundUp(a)', { a: [2.2, -2.7] })).toEqual([3, -2]);
    expect(run('BitwiseAnd(a, 6)', { a: [5, 5.9] })).toEqual([4, 4]);
    expect(run('BitwiseOr(a, 6)', { a: [5] })).toEqual([7]);
    expect(run('BitwiseXOr(a, 6)', { a: [5] })).toEqual([3]);
    expect(run('BitwiseNot(a)', { a: [5] })).toEqual([-6]);
    expect(run('BitwiseLeftShift(a, b)', { a: [1, 3, 1], b: [4, 1, 40] })).toEqual([16, 6, N]);
    expect(run('BitwiseRightShift(a, 2)', { a: [16, -16] })).toEqual([4, -4]);
    expect(run('BitwiseAnd(a, 4294967295)', { a: [4294967295, 2 ** 33] })).toEqual([4294967295, N]);
  });

  it('cell statistics with and without IgnoreNoData', () => {
    const v = { a: [1, 4, N], b: [3, 4, 2], c: [2, 1, 6] };
    expect(run('Max(a, b, c)', v)).toEqual([3, 4, N]);
    expect(run('MaxIgnoreNoData(a, b, c)', v)).toEqual([3, 4, 6]);
    expect(run('Min(a, b, c)', v)).toEqual([1, 1, N]);
    expect(run('MeanIgnoreNoData(a, b, c)', v)).toEqual([2, 3, 4]);
    expect(run('Sum(a, b, c)', v)).toEqual([6, 9, N]);
    expect(run('Range(a, b, c)', v)).toEqual([2, 3, N]);
    expect(run('Med(a, b, c)', v)).toEqual([2, 4, N]);
    expect(run('MedIgnoreNoData(a, b, c)', v)).toEqual([2, 4, 4]);
    expect(run('Variety(a, b, c)', v)).toEqual([3, 2, N]);
    expect(run('VarietyIgnoreNoData(a, b, c)', v)).toEqual([3, 2, 2]);
    expect(run('Std(a, b, c)', { a: [2], b: [4], c: [6] })[0]).toBeCloseTo(Math.sqrt(8 / 3), 14);
    expect(run('MaxIgnoreNoData(a, b)', { a: [N], b: [N] })).toEqual([N]);
  });

  it('majority, minority (ties and the two-operand rule) and percentiles', () => {
    expect(one('Majority(1, 2, 2, 3)', {})).toBe(2);
    expect(one('Majority(1, 2, 2, 1)', {})).toBe(2); // 2 reaches count 2 first
    expect(one('Majority(5, 6, 7)', {})).toBe(5);
    expect(run('Majority(a, b)', { a: [1, 1], b: [1, 2] })).toEqual([1, N]);
    expect(one('Minority(1, 2, 2, 3)', {})).toBe(1);
    expect(one('Minority(2, 2, 3, 1)', {})).toBe(3);
    expect(run('Minority(a, b)', { a: [4, 4], b: [4, 5] })).toEqual([4, N]);
    expect(one('Percentile(50, 1, 2, 3, 4)')).toBe(2.5);
    expect(one('Percentile(90, 10, 20, 30, 40, 50)')).toBe(46);
    expect(one('Percentile(0, 3, 1, 2)')).toBe(1);
  });
});

/** Expect a clean INVALID_ARGUMENT with a position, quickly. */
function rejects(text: string, dialect: Dialect = 'full'): EngineError {
  const t0 = performance.now();
  let e: unknown;
  try {
    run(text, { a: [1], b: [2] }, { dialect });
  } catch (err) {
    e = err;
  }
  const ms = performance.now() - t0;
  expect(e, JSON.stringify(text.slice(0, 60))).toBeInstanceOf(EngineError);
  const err = e as EngineError;
  expect(err.code).toBe('INVALID_ARGUMENT');
  expect(err.path).toBe(PATH);
  expect(err.message).toMatch(/at position \d+/);
  expect(ms, 'fails fast').toBeLessThan(2000);
  return err;
}

describe('hostile expressions end in a clean INVALID_ARGUMENT', () => {
  const HOSTILE: readonly [string, string][] = [
    ['property access', 'a.constructor'],
    ['bare constructor', 'constructor'],
    ['prototype', '__proto__'],
    ['prototype call', '__proto__(1)'],
    ['toString', 'toString(a)'],
    ['hasOwnProperty', 'hasOwnProperty'],
    ['template literal', '`${a}`'],
    ['backtick', '`a`'],
    ['process.exit', 'process.exit()'],
    ['require', "require('fs')"],
    ['globalThis', 'globalThis'],
    ['string literal', '"a"'],
    ['single quotes', "'a'"],
    ['brackets', 'a[0]'],
    ['braces', '{a}'],
    ['arrow', '() => 1'],
    ['semicolon', 'a; b'],
    ['assignment', 'a = 1'],
    ['exclamation', '!a'],
    ['huge exponent', '1e999999'],
    ['huge literal', '9'.repeat(400)],
    ['power tower', '9**9**9'],
    ['overflowing product', '1e300 * 1e300'],
    ['exponent without digits', '1e+'],
    ['malformed number', '1.2.3'],
    ['digit then letter', '2a'],
    ['empty', ''],
    ['blank', '   \n\t '],
    ['unbalanced open', '((a + 1)'],
    ['unbalanced close', 'a + 1)'],
    ['dangling operator', 'a +'],
    ['two operators', 'a * / b'],
    ['empty parentheses', '()'],
    ['trailing comma', 'Max(a, b,)'],
    ['unknown function', 'Foo(a)'],
    ['unknown name', 'c + 1'],
    ['wrong arity', 'Sqrt(a, b)'],
    ['too few arguments', 'Con(a)'],
    ['chained comparison', 'a < b < 3'],
    ['zero-width space', 'a\u200b+ b'],
    ['non-breaking space', 'a\u00a0+ b'],
    ['cyrillic a', '\u0430 + b'],
    ['fullwidth digit', '\uff11 + a'],
    ['RTL override', 'a\u202e + b'],
    ['lone surrogate', 'a + \ud800'],
    ['emoji', 'a + \u{1F600}'],
    ['NUL byte', 'a\u0000'],
    ['long name', 'x'.repeat(200)],
    ['10k parentheses', `${'('.repeat(10_000)}a${')'.repeat(10_000)}`],
    ['10k unary minus', `${'-'.repeat(9_000)}a`],
    ['deep function nesting', `${'Abs('.repeat(2_000)}a${')'.repeat(2_000)}`],
    ['deep power chain', Array.from({ length: 3_000 }, () => 'a').join('**')],
    ['100k characters', `a${' + a'.repeat(25_000)}`],
    ['too many tokens', Array.from({ length: 2_600 }, () => 'a').join('+')],
    ['long left chain', Array.from({ length: 1_500 }, () => '1').join('-') + '-a-a'],
  ];
  for (const [what, text] of HOSTILE) it(what, () => void rejects(text));

  it('names the position of the problem', () => {
    expect(rejects('a + b.c').message).toContain('at position 5');
    expect(rejects('a +').message).toContain('at position 3');
    expect(rejects('Foo(a)').message).toContain('at position 0');
    expect(rejects('a + 1)').message).toContain('at position 5');
    expect(rejects('x'.repeat(LIMITS.maxLength + 1)).message).toMatch(/too long/);
  });

  it('the arithmetic dialect rejects the same inputs', () => {
    for (const [, text] of HOSTILE) rejects(text, 'arithmetic');
  });

  it('parses expressions at the limits without trouble', () => {
    const nested = `${'('.repeat(LIMITS.maxNesting - 1)}a${')'.repeat(LIMITS.maxNesting - 1)}`;
    expect(one(nested, { a: [5] })).toBe(5);
    const sum = Array.from({ length: 900 }, () => 'a').join('+');
    expect(one(sum, { a: [1] })).toBe(900);
    expect(() => parseExpression(sum)).not.toThrow();
  });
});

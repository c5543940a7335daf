/**
 * Expressions without eval, part 1: a tokenizer and a recursive-descent parser from user text to a
 * small AST. Nothing here ever runs user text: the only outputs are tokens and plain AST objects,
 * names are looked up later in `Map`s (never object properties), and every input is bounded.
 *
 * Grammar (the `full` dialect; lowest precedence first, all binary operators left-associative
 * except `**`):
 *
 *   expr       := or
 *   or         := xor ( '|' xor )*              Boolean or   (Local BooleanOr)
 *   xor        := and ( '^' and )*              Boolean xor  (Local BooleanXOr)
 *   and        := comparison ( '&' comparison )*  Boolean and (Local BooleanAnd)
 *   comparison := additive [ ( '==' | '!=' | '<' | '<=' | '>' | '>=' ) additive ]   (no chains)
 *   additive   := multiplicative ( ( '+' | '-' ) multiplicative )*
 *   multiplicative := unary ( ( '*' | '/' ) unary )*
 *   unary      := ( '-' | '+' | '~' ) unary | power        '~' is Boolean not
 *   power      := primary [ '**' unary ]                   right-associative: 2**3**2 = 2**9
 *   primary    := number | name | name '(' [ expr ( ',' expr )* ] ')' | '(' expr ')'
 *   number     := digits [ '.' digits ] [ ( 'e' | 'E' ) [ '+' | '-' ] digits ]  |  '.' digits [exponent]
 *   name       := [A-Za-z_][A-Za-z0-9_]*               (ASCII only)
 *
 * The operators are those the spec lists for RasterCalculator (`+ - * / **`, `== != > >= < <=`,
 * `& | ~ ^`); as in the vendor's Python map algebra `^` is XOR, not a power (use `**` or Power()).
 * ASSUMPTION (spec: "exact grammar undocumented"): comparisons bind tighter than `& | ^` (as in C,
 * unlike Python), so `a > 1 & b < 2` means `(a > 1) & (b < 2)`; the Python reading would almost
 * never be what a user means, and fully parenthesised expressions mean the same in both. Chained
 * comparisons (`a < b < c`) are rejected rather than guessed. `-2**2` is -4 (as in Python).
 *
 * The `arithmetic` dialect (BandArithmetic UserDefined, CreateColorComposite) allows only numbers,
 * names, `+ - * /`, unary minus and parentheses, as the spec's table says; anything else is an error
 * that names the operator.
 *
 * Limits (each a clean `ExprError` with the 0-based character position): at most 10,000
 * characters, 4,000 tokens, 100 levels of nesting (parentheses, unary operators, `**` operands and
 * call arguments) and an AST depth of 1,000; names at most 128 characters; number literals must be
 * finite (`1e999999` is rejected).
 */

export const LIMITS = { maxLength: 10_000, maxTokens: 4_000, maxNesting: 100, maxDepth: 1_000, maxName: 128 } as const;

/** A problem in an expression at a 0-based character position. Callers turn it into INVALID_ARGUMENT. */
export class ExprError extends Error {
  constructor(
    message: string,
    readonly pos: number,
  ) {
    super(message);
  }
}

export type BinaryOp = '+' | '-' | '*' | '/' | '**' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '&' | '|' | '^';
export type UnaryOp = '-' | '+' | '~';

export type Ast = (
  | { readonly k: 'num'; readonly v: number }
  | { readonly k: 'name'; readonly name: string }
  | { readonly k: 'un'; readonly op: UnaryOp; readonly x: Ast }
  | { readonly k: 'bin'; readonly op: BinaryOp; readonly a: Ast; readonly b: Ast }
  | { readonly k: 'call'; readonly name: string; readonly args: readonly Ast[] }
) & { readonly pos: number; readonly depth: number };

export type Dialect = 'full' | 'arithmetic';

type Token =
  | { readonly t: 'num'; readonly v: number; readonly pos: number; readonly text: string }
  | { readonly t: 'name'; readonly v: string; readonly pos: number }
  | { readonly t: 'op'; readonly v: string; readonly pos: number }
  | { readonly t: 'end'; readonly pos: number };

const OPERATORS = ['**', '==', '!=', '<=', '>=', '+', '-', '*', '/', '<', '>', '&', '|', '^', '~', '(', ')', ','];

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isNameStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isNameChar = (c: number): boolean => isNameStart(c) || isDigit(c);

/** A short, printable description of the character at `i` (so control and unicode characters show). */
function describeChar(s: string, i: number): string {
  const cp = s.codePointAt(i)!;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  return cp >= 33 && cp <= 126 ? `'${String.fromCodePoint(cp)}'` : hex;
}

function tokenize(s: string): Token[] {
  if (s.length > LIMITS.maxLength) {
    throw new ExprError(`expression is too long: ${s.length} characters (at most ${LIMITS.maxLength})`, LIMITS.maxLength);
  }
  const out: Token[] = [];
  let i = 0;
  const n = s.length;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) {
      i++;
      continue;
    }
    if (out.length >= LIMITS.maxTokens) {
      throw new ExprError(`expression has too many tokens (at most ${LIMITS.maxTokens})`, i);
    }
    const start = i;
    if (isDigit(c) || (c === 46 && i + 1 < n && isDigit(s.charCodeAt(i + 1)))) {
      while (i < n && isDigit(s.charCodeAt(i))) i++;
      if (i < n && s.charCodeAt(i) === 46) {
        i++;
        while (i < n && isDigit(s.charCodeAt(i))) i++;
      }
      if (i < n && (s.charCodeAt(i) === 101 || s.charCodeAt(i) === 69)) {
        let j = i + 1;
        if (j < n && (s.charCodeAt(j) === 43 || s.charCodeAt(j) === 45)) j++;
        if (!(j < n && isDigit(s.charCodeAt(j)))) throw new ExprError('malformed number: the exponent has no digits', start);
        while (j < n && isDigit(s.charCodeAt(j))) j++;
        i = j;
      }
      if (i < n && (isNameChar(s.charCodeAt(i)) || s.charCodeAt(i) === 46)) {
        throw new ExprError(`malformed number ${JSON.stringify(s.slice(start, Math.min(i + 1, start + 40)))}`, start);
      }
      const text = s.slice(start, i);
      const v = Number(text);
      if (!Number.isFinite(v)) throw new ExprError(`number ${text.length > 40 ? `${text.slice(0, 37)}...` : text} is out of range`, start);
      out.push({ t: 'num', v, pos: start, text });
      continue;
    }
    if (isNameStart(c)) {
      while (i < n && isNameChar(s.charCodeAt(i))) i++;
      if (i - start > LIMITS.maxName) throw new ExprError(`name is too long (at most ${LIMITS.maxName} characters)`, start);
      out.push({ t: 'name', v: s.slice(start, i), pos: start });
      continue;
    }
    const op = OPERATORS.find((o) => s.startsWith(o, i));
    if (op !== undefined) {
      out.push({ t: 'op', v: op, pos: start });
      i += op.length;
      continue;
    }
    if (c === 61) throw new ExprError("unexpected '=': use == to compare", i);
    if (c === 33) throw new ExprError("unexpected '!': use != to compare, or ~ for Boolean not", i);
    throw new ExprError(`unexpected character ${describeChar(s, i)}`, i);
  }
  out.push({ t: 'end', pos: n });
  return out;
}

const COMPARISONS = new Set(['==', '!=', '<', '<=', '>', '>=']);

const ARITHMETIC_ONLY = 'only numbers, band references, + - * /, unary minus and parentheses are allowed here';

/** Parse `text` into an AST; throws `ExprError` with a position for every problem. */
export function parseExpression(text: string, dialect: Dialect = 'full'): Ast {
  if (typeof text !== 'string') throw new ExprError('expression must be a string', 0);
  const toks = tokenize(text);
  if (toks.length === 1) throw new ExprError('expression is empty', 0);
  let p = 0;
  let nesting = 0;
  const full = dialect === 'full';

  const peek = (): Token => toks[p]!;
  const isOp = (v: string): boolean => {
    const t = toks[p]!;
    return t.t === 'op' && t.v === v;
  };
  const describe = (t: Token): string =>
    t.t === 'end' ? 'end of expression' : t.t === 'num' ? `number ${t.text}` : t.t === 'name' ? `name ${t.v}` : `'${t.v}'`;

  const node = <T extends object>(pos: number, fields: T, ...kids: Ast[]): Ast => {
    const depth = 1 + kids.reduce((m, k) => Math.max(m, k.depth), 0);
    if (depth > LIMITS.maxDepth) throw new ExprError(`expression is too deeply nested (AST depth above ${LIMITS.maxDepth})`, pos);
    return { ...fields, pos, depth } as unknown as Ast;
  };
  const enter = (pos: number): void => {
    if (++nesting > LIMITS.maxNesting) throw new ExprError(`expression is nested more than ${LIMITS.maxNesting} levels deep`, pos);
  };
  const notAllowed = (t: Token): never => {
    throw new ExprError(`operator '${t.t === 'op' ? t.v : ''}' is not allowed: ${ARITHMETIC_ONLY}`, t.pos);
  };

  function binaryLevel(ops: readonly string[], next: () => Ast): () => Ast {
    return () => {
      let a = next();
      for (;;) {
        const t = peek();
        if (t.t !== 'op' || !ops.includes(t.v)) return a;
        if (!full) notAllowed(t);
        p++;
        const b = next();
        a = node(t.pos, { k: 'bin', op: t.v as BinaryOp, a, b }, a, b);
      }
    };
  }

  function comparison(): Ast {
    const a = additive();
    const t = peek();
    if (t.t !== 'op' || !COMPARISONS.has(t.v)) return a;
    if (!full) notAllowed(t);
    p++;
    const b = additive();
    const u = peek();
    if (u.t === 'op' && COMPARISONS.has(u.v)) {
      throw new ExprError(`chained comparisons are not supported: write (a ${t.v} b) & (b ${u.v} c)`, u.pos);
    }
    return node(t.pos, { k: 'bin', op: t.v as BinaryOp, a, b }, a, b);
  }

  function additive(): Ast {
    let a = multiplicative();
    for (;;) {
      const t = peek();
      if (t.t !== 'op' || (t.v !== '+' && t.v !== '-')) return a;
      p++;
      const b = multiplicative();
      a = node(t.pos, { k: 'bin', op: t.v, a, b }, a, b);
    }
  }

  function multiplicative(): Ast {
    let a = unary();
    for (;;) {
      const t = peek();
      if (t.t !== 'op' || (t.v !== '*' && t.v !== '/')) return a;
      p++;
      const b = unary();
      a = node(t.pos, { k: 'bin', op: t.v, a, b }, a, b);
    }
  }

  function unary(): Ast {
    const t = peek();
    if (t.t === 'op' && (t.v === '-' || t.v === '+' || t.v === '~')) {
      if (t.v === '~' && !full) notAllowed(t);
      p++;
      enter(t.pos);
      const x = unary();
      nesting--;
      return node(t.pos, { k: 'un', op: t.v, x }, x);
    }
    return power();
  }

  function power(): Ast {
    const a = primary();
    const t = peek();
    if (t.t === 'op' && t.v === '**') {
      if (!full) notAllowed(t);
      p++;
      enter(t.pos);
      const b = unary();
      nesting--;
      return node(t.pos, { k: 'bin', op: '**', a, b }, a, b);
    }
    return a;
  }

  function primary(): Ast {
    const t = peek();
    if (t.t === 'num') {
      p++;
      return node(t.pos, { k: 'num', v: t.v });
    }
    if (t.t === 'name') {
      p++;
      if (!isOp('(')) return node(t.pos, { k: 'name', name: t.v });
      if (!full) throw new ExprError(`function calls are not allowed (${t.v}(...)): ${ARITHMETIC_ONLY}`, t.pos);
      enter(t.pos);
      p++;
      const args: Ast[] = [];
      if (!isOp(')')) {
        for (;;) {
          args.push(expr());
          if (isOp(',')) {
            p++;
            continue;
          }
          break;
        }
      }
      const close = peek();
      if (!isOp(')')) throw new ExprError(`expected ',' or ')' in the arguments of ${t.v}, got ${describe(close)}`, close.pos);
      p++;
      nesting--;
      return node(t.pos, { k: 'call', name: t.v, args }, ...args);
    }
    if (t.t === 'op' && t.v === '(') {
      enter(t.pos);
      p++;
      const e = expr();
      const close = peek();
      if (!isOp(')')) throw new ExprError(`expected ')' to close the '(' at position ${t.pos}, got ${describe(close)}`, close.pos);
      p++;
      nesting--;
      return e;
    }
    if (t.t === 'op' && !full && (t.v === '~' || t.v === '**' || t.v === '^' || t.v === '&' || t.v === '|')) notAllowed(t);
    throw new ExprError(`expected a number, a name or '(', got ${describe(t)}`, t.pos);
  }

  const and = binaryLevel(['&'], comparison);
  const xor = binaryLevel(['^'], and);
  const or = binaryLevel(['|'], xor);
  const expr = or;

  const ast = expr();
  const rest = peek();
  if (rest.t !== 'end') {
    if (rest.t === 'op' && rest.v === ')') throw new ExprError("unbalanced ')': no matching '('", rest.pos);
    if (rest.t === 'op' && !full) notAllowed(rest);
    throw new ExprError(`unexpected ${describe(rest)} after a complete expression`, rest.pos);
  }
  return ast;
}

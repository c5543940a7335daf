/**
 * Where clauses (and `ORDER BY` postfix clauses) of map service queries, compiled into a safe SQL
 * subset for the feature store's SQLite tables. Hand-written: a lexer and a recursive-descent parser
 * over the vendor's "standardized queries" grammar (no SQL parser library in the dependencies
 * parses a small enough dialect to be a safety boundary; a general SQL parser would accept
 * statements and subqueries we would then have to refuse node by node).
 *
 * What comes out is SQL text built only from our own fragments: field names are looked up in the
 * table's field list and quoted, every literal is a bound parameter, functions come from an
 * allowlist and are translated to SQLite's. Anything else — `;`, comments, subqueries, unknown
 * functions or fields, PRAGMA, ATTACH — is refused with INVALID_ARGUMENT naming
 * `QueryFilter/WhereClause` (or the caller's path) and the 1-based character position.
 *
 * The functions are the set the vendor documents as supported in standardized queries (ArcGIS
 * Server "Supported SQL functions"): CURRENT_DATE, CURRENT_TIME, CURRENT_TIMESTAMP, EXTRACT;
 * ABS, CEILING, COS, FLOOR, LOG, LOG10, MOD, POWER, ROUND, SIN, TAN, TRUNCATE; CHAR_LENGTH,
 * CONCAT, LOWER, POSITION, SUBSTRING, TRIM, UPPER; plus CAST (listed by the vendor's hosted
 * services). Dates are compared as UTC milliseconds (the store keeps them so); literals are
 * `date 'YYYY-MM-DD'` and `timestamp 'YYYY-MM-DD hh:mm:ss'`, and a plain string compared with a
 * date field is read as a date too.
 */
import { EngineError } from '../../core/errors.js';
import type { FieldInfo, FieldType } from './model.js';

/** SQL text with `?` placeholders and their values, in order. */
export interface CompiledSql {
  readonly sql: string;
  readonly params: readonly (string | number | null)[];
}

/** Fields a clause may name, as the store keeps them. */
export type WhereFields = readonly Pick<FieldInfo, 'name' | 'type'>[];

// ---------------------------------------------------------------------------------------------
// What GetSQLSyntaxInfo reports

export interface SqlFunctionInfo {
  readonly name: string;
  readonly kind: 'date' | 'numeric' | 'string' | 'conversion';
  readonly syntax: string;
}

/** The function allowlist, in the vendor's documentation order. */
export const SQL_FUNCTIONS: readonly SqlFunctionInfo[] = [
  { name: 'CURRENT_DATE', kind: 'date', syntax: 'CURRENT_DATE' },
  { name: 'CURRENT_TIME', kind: 'date', syntax: 'CURRENT_TIME' },
  { name: 'CURRENT_TIMESTAMP', kind: 'date', syntax: 'CURRENT_TIMESTAMP' },
  { name: 'EXTRACT', kind: 'date', syntax: 'EXTRACT(YEAR | MONTH | DAY | HOUR | MINUTE | SECOND FROM date_exp)' },
  { name: 'ABS', kind: 'numeric', syntax: 'ABS(numeric_exp)' },
  { name: 'CEILING', kind: 'numeric', syntax: 'CEILING(numeric_exp)' },
  { name: 'COS', kind: 'numeric', syntax: 'COS(numeric_exp)' },
  { name: 'FLOOR', kind: 'numeric', syntax: 'FLOOR(numeric_exp)' },
  { name: 'LOG', kind: 'numeric', syntax: 'LOG(numeric_exp)' },
  { name: 'LOG10', kind: 'numeric', syntax: 'LOG10(numeric_exp)' },
  { name: 'MOD', kind: 'numeric', syntax: 'MOD(numeric_exp, numeric_exp)' },
  { name: 'POWER', kind: 'numeric', syntax: 'POWER(numeric_exp, numeric_exp)' },
  { name: 'ROUND', kind: 'numeric', syntax: 'ROUND(numeric_exp [, integer_exp])' },
  { name: 'SIN', kind: 'numeric', syntax: 'SIN(numeric_exp)' },
  { name: 'TAN', kind: 'numeric', syntax: 'TAN(numeric_exp)' },
  { name: 'TRUNCATE', kind: 'numeric', syntax: 'TRUNCATE(numeric_exp [, integer_exp])' },
  { name: 'CHAR_LENGTH', kind: 'string', syntax: 'CHAR_LENGTH(string_exp)' },
  { name: 'CONCAT', kind: 'string', syntax: 'CONCAT(string_exp, string_exp [, ...])' },
  { name: 'LOWER', kind: 'string', syntax: 'LOWER(string_exp)' },
  { name: 'POSITION', kind: 'string', syntax: 'POSITION(string_exp IN string_exp)' },
  { name: 'SUBSTRING', kind: 'string', syntax: 'SUBSTRING(string_exp FROM start [FOR length])' },
  { name: 'TRIM', kind: 'string', syntax: "TRIM([BOTH | LEADING | TRAILING] [' '] FROM string_exp)" },
  { name: 'UPPER', kind: 'string', syntax: 'UPPER(string_exp)' },
  { name: 'CAST', kind: 'conversion', syntax: 'CAST(exp AS INT | INTEGER | SMALLINT | FLOAT | REAL | DOUBLE | CHAR | VARCHAR)' },
];

/** Predicates and operators a where clause may use. */
export const SQL_PREDICATES: readonly string[] = [
  '=',
  '<>',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  'AND',
  'OR',
  'NOT',
  'IN',
  'BETWEEN',
  'LIKE',
  'ESCAPE',
  'IS NULL',
  'IS NOT NULL',
  '+',
  '-',
  '*',
  '/',
];

/** Clauses of a PostfixClause. */
export const SQL_CLAUSES: readonly string[] = ['ORDER BY'];

/** Reserved words: they cannot name fields without double quotes. */
export const SQL_KEYWORDS: readonly string[] = [
  'AND',
  'AS',
  'ASC',
  'BETWEEN',
  'BOTH',
  'BY',
  'DATE',
  'DESC',
  'ESCAPE',
  'FOR',
  'FROM',
  'IN',
  'IS',
  'LEADING',
  'LIKE',
  'NOT',
  'NULL',
  'OR',
  'ORDER',
  'TIMESTAMP',
  'TRAILING',
];

/** How the dialect treats case and special characters (GetSQLSyntaxInfo). */
export const SQL_SYNTAX = {
  /** Field names match whatever their case. */
  identifierCase: false,
  delimitedIdentifierCase: false,
  /** `=` compares strings case-sensitively. Decision: LIKE is SQLite's (case-insensitive for ASCII letters). */
  stringComparisonCase: true,
  specialCharacters: {
    WildcardManyMatch: '%',
    WildcardSingleMatch: '_',
    DelimitedIdentifierPrefix: '"',
    DelimitedIdentifierSuffix: '"',
    StringQuote: "'",
    EscapeKeyword: 'ESCAPE',
  } as Readonly<Record<string, string>>,
  invalidCharacters: ';`#[]{}\\',
  invalidStartingCharacters: '0123456789',
} as const;

// ---------------------------------------------------------------------------------------------
// Lexer

type TokenKind = 'number' | 'string' | 'ident' | 'quoted' | 'op' | 'end';

interface Token {
  readonly kind: TokenKind;
  /** Identifiers upper-cased in `upper`; strings unescaped in `text`. */
  readonly text: string;
  readonly upper: string;
  readonly value?: number;
  /** 0-based offset in the clause. */
  readonly pos: number;
}

const STATEMENT_WORDS = new Set([
  'SELECT',
  'INSERT',
  'UPDATE',
  'DELETE',
  'DROP',
  'CREATE',
  'ALTER',
  'ATTACH',
  'DETACH',
  'PRAGMA',
  'VACUUM',
  'UNION',
  'EXEC',
  'EXECUTE',
  'WITH',
  'REINDEX',
  'ANALYZE',
  'BEGIN',
  'COMMIT',
  'ROLLBACK',
  'SAVEPOINT',
  'RELEASE',
  'EXISTS',
]);

class Lexer {
  private i = 0;
  constructor(
    private readonly s: string,
    private readonly fail: (pos: number, message: string) => never,
  ) {}

  tokens(): Token[] {
    const out: Token[] = [];
    for (;;) {
      const t = this.next();
      out.push(t);
      if (t.kind === 'end') return out;
    }
  }

  private next(): Token {
    const s = this.s;
    while (this.i < s.length && /\s/.test(s[this.i]!)) this.i++;
    const pos = this.i;
    if (pos >= s.length) return { kind: 'end', text: '', upper: '', pos };
    const c = s[pos]!;
    const two = s.slice(pos, pos + 2);
    if (two === '--' || two === '/*') this.fail(pos, 'comments are not allowed');
    if (c === ';') this.fail(pos, "';' is not allowed: a where clause is one condition, not statements");
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(s[pos + 1] ?? ''))) {
      const m = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/.exec(s.slice(pos))!;
      this.i += m[0].length;
      if (/[A-Za-z_]/.test(s[this.i] ?? '')) this.fail(this.i, `a number must not run into letters`);
      return { kind: 'number', text: m[0], upper: m[0], value: Number(m[0]), pos };
    }
    if (c === "'") {
      let text = '';
      let j = pos + 1;
      for (;;) {
        if (j >= s.length) this.fail(pos, 'this string is not closed (a quote is missing)');
        if (s[j] === "'") {
          if (s[j + 1] === "'") {
            text += "'";
            j += 2;
            continue;
          }
          break;
        }
        text += s[j];
        j++;
      }
      this.i = j + 1;
      return { kind: 'string', text, upper: text, pos };
    }
    if (c === '"') {
      const end = s.indexOf('"', pos + 1);
      if (end < 0) this.fail(pos, 'this quoted field name is not closed');
      const text = s.slice(pos + 1, end);
      if (text === '') this.fail(pos, 'a quoted field name must not be empty');
      this.i = end + 1;
      return { kind: 'quoted', text, upper: text.toUpperCase(), pos };
    }
    if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(pos))!;
      this.i += m[0].length;
      return { kind: 'ident', text: m[0], upper: m[0].toUpperCase(), pos };
    }
    for (const op of ['<>', '!=', '<=', '>=', '=', '<', '>', '+', '-', '*', '/', '(', ')', ',']) {
      if (s.startsWith(op, pos)) {
        this.i += op.length;
        return { kind: 'op', text: op, upper: op, pos };
      }
    }
    if (two === '||') this.fail(pos, "'||' is not supported: use CONCAT(a, b)");
    this.fail(pos, `the character '${c}' is not allowed`);
  }
}

// ---------------------------------------------------------------------------------------------
// Parser

/** Value types the compiler tracks, for date coercion and for "this is not a condition". */
type ValueType = 'number' | 'string' | 'date' | 'bool' | 'null' | 'any';

interface Expr {
  readonly sql: string;
  readonly params: (string | number | null)[];
  readonly type: ValueType;
  /** A lone string literal (can become a date when compared with a date). */
  readonly literal?: string;
  readonly pos: number;
}

const fieldValueType = (t: FieldType): ValueType =>
  t === 'geoFieldTypeDate'
    ? 'date'
    : t === 'geoFieldTypeString' || t === 'geoFieldTypeGUID' || t === 'geoFieldTypeGlobalID'
      ? 'string'
      : t === 'geoFieldTypeGeometry'
        ? 'any'
        : 'number';

/** `"name"` with embedded quotes doubled: how every column reaches SQL. */
export const quoteIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * Milliseconds of a date literal: `YYYY-MM-DD`, `YYYY-MM-DD hh:mm[:ss[.fff]]`, or ISO 8601 with `T`
 * and an optional zone (UTC when none). undefined when the text is not one.
 */
export function parseDateLiteral(text: string): number | undefined {
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i.exec(text.trim());
  if (!m) return undefined;
  const [y, mo, d, h = '0', mi = '0', sec = '0'] = [m[1]!, m[2]!, m[3]!, m[4], m[5], m[6]];
  const ms = m[7] ? Math.round(Number(m[7]) * 1000) : 0;
  const t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(sec), ms);
  const check = new Date(t);
  if (check.getUTCFullYear() !== Number(y) || check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d)) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return undefined;
  const zone = m[8];
  if (!zone || zone.toUpperCase() === 'Z') return t;
  const zm = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
  const offset = (Number(zm[2]) * 60 + Number(zm[3])) * 60_000 * (zm[1] === '-' ? -1 : 1);
  return t - offset;
}

interface Options {
  readonly fields: WhereFields;
  readonly path: string;
  readonly clause: string;
  readonly now: number;
  /** How a field reaches SQL (default: quoted name). */
  readonly column: (field: string) => string;
}

class Parser {
  private k = 0;
  private depth = 0;
  constructor(
    private readonly t: Token[],
    private readonly o: Options,
  ) {}

  fail(pos: number, message: string): never {
    const msg = `Invalid ${this.o.path.endsWith('PostfixClause') ? 'postfix clause' : 'where clause'} at position ${pos + 1}: ${message}.`;
    throw new EngineError('INVALID_ARGUMENT', msg, { path: this.o.path, details: [msg] });
  }

  private get cur(): Token {
    return this.t[this.k]!;
  }

  private peek(n = 1): Token {
    return this.t[Math.min(this.k + n, this.t.length - 1)]!;
  }

  private isWord(w: string, tok = this.cur): boolean {
    return tok.kind === 'ident' && tok.upper === w;
  }

  private isOp(op: string, tok = this.cur): boolean {
    return tok.kind === 'op' && tok.text === op;
  }

  private atEnd(): boolean {
    return this.cur.kind === 'end';
  }

  private take(): Token {
    const t = this.cur;
    if (t.kind !== 'end') this.k++;
    return t;
  }

  private expectOp(op: string, what: string): void {
    if (!this.isOp(op)) this.fail(this.cur.pos, `expected ${what}${this.found()}`);
    this.k++;
  }

  private expectWord(w: string): void {
    if (!this.isWord(w)) this.fail(this.cur.pos, `expected ${w}${this.found()}`);
    this.k++;
  }

  private found(): string {
    const t = this.cur;
    return t.kind === 'end' ? ' but the clause ends' : ` but found '${t.kind === 'string' ? `'${t.text}'` : t.text}'`;
  }

  /** The whole clause as a condition. */
  condition(): Expr {
    const e = this.or();
    if (this.cur.kind !== 'end') this.fail(this.cur.pos, `unexpected '${this.cur.text}' (is an AND or OR missing?)`);
    if (e.type !== 'bool') this.fail(e.pos, 'a where clause must be a condition such as FIELD = value');
    return e;
  }

  private bool(e: Expr, what: string): Expr {
    if (e.type !== 'bool') this.fail(e.pos, `${what} needs a condition on each side`);
    return e;
  }

  private or(): Expr {
    let left = this.and();
    while (this.isWord('OR')) {
      this.k++;
      const right = this.and();
      left = join(`(${this.bool(left, 'OR').sql} OR ${this.bool(right, 'OR').sql})`, 'bool', left.pos, left, right);
    }
    return left;
  }

  private and(): Expr {
    let left = this.not();
    while (this.isWord('AND')) {
      this.k++;
      const right = this.not();
      left = join(`(${this.bool(left, 'AND').sql} AND ${this.bool(right, 'AND').sql})`, 'bool', left.pos, left, right);
    }
    return left;
  }

  /** Runs a nested parse, refusing clauses nested deeper than MAX_DEPTH (the parser recurses). */
  private nested<T>(pos: number, parse: () => T): T {
    if (++this.depth > MAX_DEPTH) this.fail(pos, `the clause is nested more than ${MAX_DEPTH} levels deep`);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private not(): Expr {
    if (this.isWord('NOT')) {
      const pos = this.take().pos;
      const e = this.nested(pos, () => this.not());
      if (e.type !== 'bool') this.fail(e.pos, 'NOT needs a condition');
      return join(`(NOT ${e.sql})`, 'bool', pos, e);
    }
    return this.predicate();
  }

  private predicate(): Expr {
    const left = this.additive();
    const c = this.cur;
    if (c.kind === 'op' && ['=', '<>', '!=', '<', '<=', '>', '>='].includes(c.text)) {
      this.k++;
      const right = this.additive();
      const [a, b] = this.coerce(left, right);
      this.comparable(a, b, c.pos);
      const op = c.text === '!=' ? '<>' : c.text;
      return join(`(${a.sql} ${op} ${b.sql})`, 'bool', left.pos, a, b);
    }
    if (this.isWord('IS')) {
      this.k++;
      const negated = this.isWord('NOT');
      if (negated) this.k++;
      this.expectWord('NULL');
      return join(`(${left.sql} IS ${negated ? 'NOT ' : ''}NULL)`, 'bool', left.pos, left);
    }
    let negated = false;
    if (this.isWord('NOT') && ['IN', 'BETWEEN', 'LIKE'].includes(this.peek().upper) && this.peek().kind === 'ident') {
      this.k++;
      negated = true;
    }
    const not = negated ? 'NOT ' : '';
    if (this.isWord('IN')) {
      this.k++;
      const open = this.cur;
      this.expectOp('(', "'(' after IN");
      if (this.isWord('SELECT')) this.fail(this.cur.pos, 'subqueries are not allowed');
      const items: Expr[] = [];
      if (this.isOp(')')) this.fail(this.cur.pos, 'IN needs at least one value');
      for (;;) {
        const item = this.coerce(left, this.additive())[1];
        this.comparable(left, item, item.pos);
        items.push(item);
        if (this.isOp(',')) {
          this.k++;
          continue;
        }
        if (!this.isOp(')')) this.fail(this.cur.pos, `expected ',' or ')' in the IN list${this.found()}`);
        this.k++;
        break;
      }
      if (items.length > 10000) this.fail(open.pos, 'an IN list may hold at most 10000 values');
      return join(`(${left.sql} ${not}IN (${items.map((i) => i.sql).join(', ')}))`, 'bool', left.pos, left, ...items);
    }
    if (this.isWord('BETWEEN')) {
      this.k++;
      const low = this.coerce(left, this.additive())[1];
      this.expectWord('AND');
      const high = this.coerce(left, this.additive())[1];
      this.comparable(left, low, low.pos);
      this.comparable(left, high, high.pos);
      return join(`(${left.sql} ${not}BETWEEN ${low.sql} AND ${high.sql})`, 'bool', left.pos, left, low, high);
    }
    if (this.isWord('LIKE')) {
      this.k++;
      const pattern = this.additive();
      if (pattern.type !== 'string' && pattern.type !== 'any' && pattern.type !== 'null')
        this.fail(pattern.pos, 'LIKE needs a string pattern');
      if (this.isWord('ESCAPE')) {
        this.k++;
        const esc = this.cur;
        if (esc.kind !== 'string' || [...esc.text].length !== 1) this.fail(esc.pos, 'ESCAPE needs a single character in quotes');
        this.k++;
        return join(
          `(${left.sql} ${not}LIKE ${pattern.sql} ESCAPE ?)`,
          'bool',
          left.pos,
          left,
          pattern,
          param(esc.text, 'string', esc.pos),
        );
      }
      return join(`(${left.sql} ${not}LIKE ${pattern.sql})`, 'bool', left.pos, left, pattern);
    }
    if (negated) this.fail(c.pos, 'expected IN, BETWEEN or LIKE after NOT');
    return left;
  }

  /** A string literal compared with a date becomes a date (UTC milliseconds). */
  private coerce(a: Expr, b: Expr): [Expr, Expr] {
    const toDate = (e: Expr): Expr => {
      if (e.literal === undefined) return e;
      const ms = parseDateLiteral(e.literal);
      if (ms === undefined) this.fail(e.pos, `'${e.literal}' is not a date (write date 'YYYY-MM-DD' or timestamp 'YYYY-MM-DD hh:mm:ss')`);
      return param(ms, 'date', e.pos);
    };
    if (a.type === 'date' && b.literal !== undefined) return [a, toDate(b)];
    if (b.type === 'date' && a.literal !== undefined) return [toDate(a), b];
    return [a, b];
  }

  private comparable(a: Expr, b: Expr, pos: number): void {
    if (a.type === 'bool' || b.type === 'bool') this.fail(pos, 'a condition cannot be compared; use AND, OR and parentheses');
    const kinds = new Set([a.type, b.type]);
    if (kinds.has('date') && (kinds.has('string') || kinds.has('number')) && !kinds.has('any')) {
      this.fail(pos, "a date can only be compared with a date (date 'YYYY-MM-DD')");
    }
  }

  private additive(): Expr {
    let left = this.multiplicative();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.take();
      const right = this.multiplicative();
      this.numeric(left, op.text);
      this.numeric(right, op.text);
      left = join(`(${left.sql} ${op.text} ${right.sql})`, 'number', left.pos, left, right);
    }
    return left;
  }

  private multiplicative(): Expr {
    let left = this.unary();
    while (this.isOp('*') || this.isOp('/')) {
      const op = this.take();
      const right = this.unary();
      this.numeric(left, op.text);
      this.numeric(right, op.text);
      // SQL's `/` on two integers truncates in SQLite; the vendor's databases divide exactly.
      const sql = op.text === '/' ? `(CAST(${left.sql} AS REAL) / ${right.sql})` : `(${left.sql} * ${right.sql})`;
      left = join(sql, 'number', left.pos, left, right);
    }
    return left;
  }

  private numeric(e: Expr, op: string): void {
    if (e.type === 'bool' || e.type === 'string' || e.type === 'date') this.fail(e.pos, `'${op}' needs numbers`);
  }

  private unary(): Expr {
    if (this.isOp('-') || this.isOp('+')) {
      const op = this.take();
      const e = this.nested(op.pos, () => this.unary());
      this.numeric(e, op.text);
      return op.text === '-' ? join(`(-${e.sql})`, 'number', op.pos, e) : e;
    }
    return this.primary();
  }

  private primary(): Expr {
    const t = this.cur;
    switch (t.kind) {
      case 'number':
        this.k++;
        if (!Number.isFinite(t.value!)) this.fail(t.pos, 'this number is too large');
        return param(t.value!, 'number', t.pos);
      case 'string':
        this.k++;
        return { ...param(t.text, 'string', t.pos), literal: t.text };
      case 'quoted':
        this.k++;
        return this.field(t);
      case 'op':
        if (t.text === '(') {
          this.k++;
          if (this.isWord('SELECT') || this.isWord('WITH')) this.fail(this.cur.pos, 'subqueries are not allowed');
          const e = this.nested(t.pos, () => this.or());
          this.expectOp(')', "')'");
          return { ...e, pos: t.pos };
        }
        return this.fail(t.pos, `unexpected '${t.text}'`);
      case 'end':
        return this.fail(t.pos, 'the clause ends where a value was expected');
      case 'ident':
        return this.word(t);
    }
  }

  private word(t: Token): Expr {
    const u = t.upper;
    if (u === 'NULL') {
      this.k++;
      return { sql: 'NULL', params: [], type: 'null', pos: t.pos };
    }
    if ((u === 'DATE' || u === 'TIMESTAMP') && this.peek().kind === 'string') {
      this.k++;
      const s = this.take();
      const ms = parseDateLiteral(s.text);
      if (ms === undefined || (u === 'DATE' && !/^\s*\d{4}-\d{1,2}-\d{1,2}\s*$/.test(s.text))) {
        this.fail(s.pos, u === 'DATE' ? `'${s.text}' is not a date 'YYYY-MM-DD'` : `'${s.text}' is not a timestamp 'YYYY-MM-DD hh:mm:ss'`);
      }
      return param(ms, 'date', t.pos);
    }
    if (u === 'CURRENT_DATE' || u === 'CURRENT_TIME' || u === 'CURRENT_TIMESTAMP') {
      this.k++;
      if (this.isOp('(') && this.isOp(')', this.peek())) this.k += 2;
      const d = new Date(this.o.now);
      const ms = u === 'CURRENT_DATE' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) : this.o.now;
      return param(ms, 'date', t.pos);
    }
    if (this.isOp('(', this.peek())) return this.nested(t.pos, () => this.call(t));
    if (STATEMENT_WORDS.has(u) && !this.o.fields.some((f) => f.name.toUpperCase() === u)) {
      this.fail(
        t.pos,
        u === 'SELECT' ? 'subqueries are not allowed' : `'${t.text}' is not allowed: a where clause is one condition, not statements`,
      );
    }
    if (SQL_KEYWORDS.includes(u) && !this.o.fields.some((f) => f.name.toUpperCase() === u))
      this.fail(t.pos, `unexpected ${u}${u === 'FROM' ? ' (subqueries are not allowed)' : ''}`);
    this.k++;
    return this.field(t);
  }

  private field(t: Token): Expr {
    const f = this.o.fields.find((x) => x.name.toUpperCase() === t.upper);
    if (!f) {
      const names = this.o.fields.map((x) => x.name);
      this.fail(t.pos, `'${t.text}' is not a field of this layer (fields: ${names.join(', ')})`);
    }
    return { sql: this.o.column(f.name), params: [], type: fieldValueType(f.type), pos: t.pos };
  }

  private args(min: number, max: number, name: Token): Expr[] {
    const out: Expr[] = [];
    if (this.isOp(')')) {
      this.k++;
    } else {
      for (;;) {
        out.push(this.additiveOrString());
        if (this.isOp(',')) {
          this.k++;
          continue;
        }
        this.expectOp(')', `',' or ')'`);
        break;
      }
    }
    if (out.length < min || out.length > max) {
      this.fail(
        name.pos,
        `${name.upper} takes ${min === max ? min : max === Infinity ? `${min} or more` : `${min} to ${max}`} argument${max === 1 ? '' : 's'}`,
      );
    }
    return out;
  }

  private additiveOrString(): Expr {
    const e = this.additive();
    if (e.type === 'bool') this.fail(e.pos, 'a condition cannot be a function argument');
    return e;
  }

  private call(name: Token): Expr {
    const u = name.upper;
    const info = SQL_FUNCTIONS.find((f) => f.name === u);
    if (!info) {
      if (STATEMENT_WORDS.has(u)) this.fail(name.pos, u === 'EXISTS' ? 'subqueries are not allowed' : `'${name.text}' is not allowed`);
      this.fail(name.pos, `'${name.text}' is not a supported function (supported: ${SQL_FUNCTIONS.map((f) => f.name).join(', ')})`);
    }
    this.k += 2; // name and '('
    if (this.isWord('SELECT')) this.fail(this.cur.pos, 'subqueries are not allowed');
    const pos = name.pos;
    const fn1 = (sqlName: string, type: ValueType, argType: 'number' | 'string'): Expr => {
      const [a] = this.args(1, 1, name);
      this.argType(a!, argType, u);
      return join(`${sqlName}(${a!.sql})`, type, pos, a!);
    };
    switch (u) {
      case 'ABS':
        return fn1('abs', 'number', 'number');
      case 'CEILING':
        return fn1('ceil', 'number', 'number');
      case 'FLOOR':
        return fn1('floor', 'number', 'number');
      case 'COS':
        return fn1('cos', 'number', 'number');
      case 'SIN':
        return fn1('sin', 'number', 'number');
      case 'TAN':
        return fn1('tan', 'number', 'number');
      case 'LOG':
        return fn1('ln', 'number', 'number');
      case 'LOG10':
        return fn1('log10', 'number', 'number');
      case 'UPPER':
        return fn1('upper', 'string', 'string');
      case 'LOWER':
        return fn1('lower', 'string', 'string');
      case 'CHAR_LENGTH':
        return fn1('length', 'number', 'string');
      case 'MOD':
      case 'POWER': {
        const [a, b] = this.args(2, 2, name);
        this.argType(a!, 'number', u);
        this.argType(b!, 'number', u);
        return join(`${u === 'MOD' ? 'mod' : 'pow'}(${a!.sql}, ${b!.sql})`, 'number', pos, a!, b!);
      }
      case 'ROUND':
      case 'TRUNCATE': {
        const [a, d] = this.args(1, 2, name);
        this.argType(a!, 'number', u);
        if (d) this.argType(d, 'number', u);
        if (u === 'ROUND')
          return d ? join(`round(${a!.sql}, ${d.sql})`, 'number', pos, a!, d) : join(`round(${a!.sql})`, 'number', pos, a!);
        if (!d) return join(`trunc(${a!.sql})`, 'number', pos, a!);
        return join(`(trunc(${a!.sql} * pow(10, ${d.sql})) / pow(10, ${d.sql}))`, 'number', pos, a!, d, d);
      }
      case 'CONCAT': {
        const parts = this.args(2, 64, name);
        return join(`(${parts.map((p) => p.sql).join(' || ')})`, 'string', pos, ...parts);
      }
      case 'POSITION': {
        const needle = this.additiveOrString();
        this.expectWord('IN');
        const hay = this.additiveOrString();
        this.expectOp(')', "')'");
        this.argType(needle, 'string', u);
        this.argType(hay, 'string', u);
        return join(`instr(${hay.sql}, ${needle.sql})`, 'number', pos, hay, needle);
      }
      case 'SUBSTRING': {
        const s = this.additiveOrString();
        this.argType(s, 'string', u);
        let start: Expr;
        let length: Expr | undefined;
        if (this.isWord('FROM')) {
          this.k++;
          start = this.additiveOrString();
          if (this.isWord('FOR')) {
            this.k++;
            length = this.additiveOrString();
          }
        } else {
          this.expectOp(',', "FROM or ','");
          start = this.additiveOrString();
          if (this.isOp(',')) {
            this.k++;
            length = this.additiveOrString();
          }
        }
        this.expectOp(')', "')'");
        this.argType(start, 'number', u);
        if (length) this.argType(length, 'number', u);
        return length
          ? join(`substr(${s.sql}, ${start.sql}, ${length.sql})`, 'string', pos, s, start, length)
          : join(`substr(${s.sql}, ${start.sql})`, 'string', pos, s, start);
      }
      case 'TRIM': {
        let side = 'trim';
        if (this.isWord('BOTH') || this.isWord('LEADING') || this.isWord('TRAILING')) {
          const w = this.take().upper;
          side = w === 'LEADING' ? 'ltrim' : w === 'TRAILING' ? 'rtrim' : 'trim';
        }
        let chars: Expr | undefined;
        let s: Expr;
        if (this.isWord('FROM')) {
          this.k++;
          s = this.additiveOrString();
        } else {
          const first = this.additiveOrString();
          if (this.isWord('FROM')) {
            this.k++;
            chars = first;
            s = this.additiveOrString();
          } else {
            if (side !== 'trim') this.fail(this.cur.pos, `expected FROM${this.found()}`);
            s = first;
          }
        }
        this.expectOp(')', "')'");
        this.argType(s, 'string', u);
        if (chars) this.argType(chars, 'string', u);
        return chars ? join(`${side}(${s.sql}, ${chars.sql})`, 'string', pos, s, chars) : join(`${side}(${s.sql})`, 'string', pos, s);
      }
      case 'EXTRACT': {
        const unit = this.take();
        const formats: Record<string, string> = { YEAR: '%Y', MONTH: '%m', DAY: '%d', HOUR: '%H', MINUTE: '%M', SECOND: '%S' };
        const f = unit.kind === 'ident' ? formats[unit.upper] : undefined;
        if (!f) this.fail(unit.pos, 'EXTRACT takes YEAR, MONTH, DAY, HOUR, MINUTE or SECOND');
        this.expectWord('FROM');
        let d = this.additiveOrString();
        if (d.literal !== undefined) d = this.coerce({ sql: '', params: [], type: 'date', pos: d.pos }, d)[1];
        if (d.type !== 'date' && d.type !== 'any' && d.type !== 'null') this.fail(d.pos, 'EXTRACT needs a date');
        this.expectOp(')', "')'");
        return join(`CAST(strftime('${f}', ${d.sql} / 1000.0, 'unixepoch') AS INTEGER)`, 'number', pos, d);
      }
      case 'CAST': {
        const e = this.additiveOrString();
        this.expectWord('AS');
        const ty = this.take();
        const types: Record<string, [string, ValueType]> = {
          INT: ['INTEGER', 'number'],
          INTEGER: ['INTEGER', 'number'],
          SMALLINT: ['INTEGER', 'number'],
          FLOAT: ['REAL', 'number'],
          REAL: ['REAL', 'number'],
          DOUBLE: ['REAL', 'number'],
          CHAR: ['TEXT', 'string'],
          VARCHAR: ['TEXT', 'string'],
        };
        const target = ty.kind === 'ident' ? types[ty.upper] : undefined;
        if (!target) this.fail(ty.pos, `CAST takes ${Object.keys(types).join(', ')}`);
        if ((ty.upper === 'CHAR' || ty.upper === 'VARCHAR') && this.isOp('(')) {
          this.k++;
          const n = this.take();
          if (n.kind !== 'number') this.fail(n.pos, 'expected a length');
          this.expectOp(')', "')'");
        }
        this.expectOp(')', "')'");
        return join(`CAST(${e.sql} AS ${target[0]})`, target[1], pos, e);
      }
      case 'CURRENT_DATE':
      case 'CURRENT_TIME':
      case 'CURRENT_TIMESTAMP':
        // Reached only as `NAME(`; word() handles them.
        return this.fail(pos, `${u} takes no arguments`);
      default:
        return this.fail(pos, `'${name.text}' is not a supported function`);
    }
  }

  private argType(e: Expr, want: 'number' | 'string', fn: string): void {
    if (e.type === 'any' || e.type === 'null' || e.type === want) return;
    if (want === 'string' && e.type === 'number') return; // SQLite converts
    this.fail(e.pos, `${fn} needs ${want === 'number' ? 'a number' : 'a string'}`);
  }

  /** `ORDER BY a DESC, b` (the `ORDER BY` may be left out). */
  orderBy(): { field: string; descending: boolean }[] {
    if (this.isWord('ORDER')) {
      this.k++;
      this.expectWord('BY');
    }
    const out: { field: string; descending: boolean }[] = [];
    if (this.cur.kind === 'end') return out;
    for (;;) {
      const t = this.cur;
      if (t.kind !== 'ident' && t.kind !== 'quoted') this.fail(t.pos, `expected a field name${this.found()}`);
      if (t.kind === 'ident' && STATEMENT_WORDS.has(t.upper) && !this.o.fields.some((f) => f.name.toUpperCase() === t.upper)) {
        this.fail(t.pos, `'${t.text}' is not allowed`);
      }
      const f = this.o.fields.find((x) => x.name.toUpperCase() === t.upper);
      if (!f) this.fail(t.pos, `'${t.text}' is not a field of this layer (fields: ${this.o.fields.map((x) => x.name).join(', ')})`);
      this.k++;
      let descending = false;
      if (this.isWord('DESC') || this.isWord('ASC')) descending = this.take().upper === 'DESC';
      out.push({ field: f.name, descending });
      if (this.isOp(',')) {
        this.k++;
        continue;
      }
      if (!this.atEnd()) this.fail(this.cur.pos, `expected ',' or the end of the clause${this.found()} (only ORDER BY is supported)`);
      return out;
    }
  }
}

function param(value: string | number | null, type: ValueType, pos: number): Expr {
  return { sql: '?', params: [value], type, pos };
}

function join(sql: string, type: ValueType, pos: number, ...parts: Expr[]): Expr {
  return { sql, params: parts.flatMap((p) => p.params), type, pos };
}

const MAX_CLAUSE = 64 * 1024;
/** Deepest nesting of parentheses, NOT, signs and function calls. */
const MAX_DEPTH = 100;

function tokens(clause: string, path: string): Token[] {
  const fail = (pos: number, message: string): never => {
    const what = path.endsWith('PostfixClause') ? 'postfix clause' : 'where clause';
    const msg = `Invalid ${what} at position ${pos + 1}: ${message}.`;
    throw new EngineError('INVALID_ARGUMENT', msg, { path, details: [msg] });
  };
  if (clause.length > MAX_CLAUSE) fail(MAX_CLAUSE, `the clause is longer than ${MAX_CLAUSE} characters`);
  return new Lexer(clause, fail).tokens();
}

export interface WhereOptions {
  /** Error path (default `QueryFilter/WhereClause`). */
  readonly path?: string;
  /** The time CURRENT_DATE/CURRENT_TIMESTAMP read (default now). */
  readonly now?: number;
  /** How a field reaches SQL (default: its quoted name). */
  readonly column?: (field: string) => string;
}

/**
 * A where clause as a SQL condition with bound parameters. Empty (or blank) is every row (`1`);
 * `1=1` compiles like any other condition.
 */
export function compileWhere(where: string | undefined, fields: WhereFields, options: WhereOptions = {}): CompiledSql {
  const clause = where ?? '';
  if (clause.trim() === '') return { sql: '1', params: [] };
  const path = options.path ?? 'QueryFilter/WhereClause';
  const t = tokens(clause, path);
  const parser = new Parser(t, { fields, path, clause, now: options.now ?? Date.now(), column: options.column ?? quoteIdentifier });
  const e = parser.condition();
  return { sql: e.sql, params: e.params };
}

/** A PostfixClause's `ORDER BY a DESC, b` as stored field names (empty clause: none). */
export function parseOrderBy(
  postfix: string | undefined,
  fields: WhereFields,
  path = 'QueryFilter/PostfixClause',
): { field: string; descending: boolean }[] {
  const clause = postfix ?? '';
  if (clause.trim() === '') return [];
  const parser = new Parser(tokens(clause, path), { fields, path, clause, now: 0, column: quoteIdentifier });
  return parser.orderBy();
}

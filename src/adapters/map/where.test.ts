import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import type { FieldInfo } from './model.js';
import { compileWhere, parseDateLiteral, parseOrderBy, SQL_FUNCTIONS } from './where.js';

const field = (name: string, type: FieldInfo['type']): Pick<FieldInfo, 'name' | 'type'> => ({ name, type });
const FIELDS = [
  field('OBJECTID', 'geoFieldTypeOID'),
  field('NAME', 'geoFieldTypeString'),
  field('ELEV', 'geoFieldTypeDouble'),
  field('CLASS', 'geoFieldTypeInteger'),
  field('SURVEYED', 'geoFieldTypeDate'),
  field('Select', 'geoFieldTypeString'),
];

const D = (s: string): number => Date.parse(`${s}T00:00:00Z`);
const ROWS: [number, string | null, number | null, number | null, number | null, string | null][] = [
  [1, 'Alpha', 10.5, 1, D('2020-01-15'), 'x'],
  [2, 'beta', 22, 2, D('2021-06-30'), null],
  [3, "O'Hara", 35.25, 3, null, 'y'],
  [4, '50%', -4, 1, D('2019-12-31') + 3600_000 * 13, 'x'],
  [5, null, null, null, D('2024-02-29'), 'z'],
  [6, '  padded  ', 88, 5, D('2021-01-01'), 'x'],
];

let db: Database.Database;
beforeAll(() => {
  db = new Database(':memory:');
  db.exec('CREATE TABLE t ("OBJECTID" INTEGER PRIMARY KEY, "NAME" TEXT, "ELEV" REAL, "CLASS" INTEGER, "SURVEYED" INTEGER, "Select" TEXT)');
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)');
  for (const r of ROWS) ins.run(...r);
  db.exec('CREATE TABLE x (a INTEGER)');
});
afterAll(() => db.close());

const ids = (where: string, now?: number): number[] => {
  const c = compileWhere(where, FIELDS, now === undefined ? {} : { now });
  return (db.prepare(`SELECT "OBJECTID" AS id FROM t WHERE ${c.sql} ORDER BY 1`).all(...c.params) as { id: number }[]).map((r) => r.id);
};
const hand = (sql: string, ...params: unknown[]): number[] =>
  (db.prepare(`SELECT "OBJECTID" AS id FROM t WHERE ${sql} ORDER BY 1`).all(...params) as { id: number }[]).map((r) => r.id);

function refusal(where: string, path?: string): EngineError {
  try {
    compileWhere(where, FIELDS, path ? { path } : {});
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  throw new Error(`accepted: ${where}`);
}

describe('compileWhere: results equal hand-written SQLite', () => {
  const cases: [string, string, unknown[]][] = [
    ['', '1', []],
    ['1=1', '1', []],
    ['ELEV > 20', 'ELEV > 20', []],
    ['elev >= 10.5 and Class <> 3', 'ELEV >= 10.5 AND CLASS <> 3', []],
    ['ELEV != 22', 'ELEV <> 22', []],
    ['NOT (CLASS = 1 OR CLASS = 2)', 'NOT (CLASS = 1 OR CLASS = 2)', []],
    ['CLASS IN (1, 5)', 'CLASS IN (1, 5)', []],
    ['CLASS NOT IN (1, 5)', 'CLASS NOT IN (1, 5)', []],
    ['ELEV BETWEEN 0 AND 40', 'ELEV BETWEEN 0 AND 40', []],
    ['ELEV NOT BETWEEN 0 AND 40', 'ELEV NOT BETWEEN 0 AND 40', []],
    ["NAME LIKE 'A%'", "NAME LIKE 'A%'", []],
    ["NAME LIKE '50!%' ESCAPE '!'", "NAME LIKE '50!%' ESCAPE '!'", []],
    ["NAME NOT LIKE '%a%'", "NAME NOT LIKE '%a%'", []],
    ['NAME IS NULL', 'NAME IS NULL', []],
    ['SURVEYED IS NOT NULL', 'SURVEYED IS NOT NULL', []],
    ["NAME = 'O''Hara'", "NAME = 'O''Hara'", []],
    ['ELEV * 2 + 1 > 50', 'ELEV * 2 + 1 > 50', []],
    ['ELEV / 4 > 5', 'CAST(ELEV AS REAL) / 4 > 5', []],
    ['CLASS / 2 = 0.5', 'CAST(CLASS AS REAL) / 2 = 0.5', []],
    ['-ELEV > 0', '-ELEV > 0', []],
    ["SURVEYED > date '2020-06-01'", 'SURVEYED > ?', [D('2020-06-01')]],
    ["SURVEYED >= timestamp '2019-12-31 13:00:00'", 'SURVEYED >= ?', [D('2019-12-31') + 13 * 3600_000]],
    ["SURVEYED < '2021-01-01'", 'SURVEYED < ?', [D('2021-01-01')]],
    ["SURVEYED BETWEEN date '2020-01-01' AND date '2021-12-31'", 'SURVEYED BETWEEN ? AND ?', [D('2020-01-01'), D('2021-12-31')]],
    ['EXTRACT(YEAR FROM SURVEYED) = 2021', "CAST(strftime('%Y', SURVEYED / 1000.0, 'unixepoch') AS INTEGER) = 2021", []],
    ['EXTRACT(MONTH FROM SURVEYED) = 2', "CAST(strftime('%m', SURVEYED / 1000.0, 'unixepoch') AS INTEGER) = 2", []],
    ["UPPER(NAME) = 'BETA'", "upper(NAME) = 'BETA'", []],
    ["LOWER(NAME) LIKE 'a%'", "lower(NAME) LIKE 'a%'", []],
    ['CHAR_LENGTH(NAME) = 5', 'length(NAME) = 5', []],
    ["TRIM(NAME) = 'padded'", "trim(NAME) = 'padded'", []],
    ["TRIM(LEADING ' ' FROM NAME) = 'padded  '", "ltrim(NAME, ' ') = 'padded  '", []],
    ["SUBSTRING(NAME FROM 1 FOR 2) = 'Al'", "substr(NAME, 1, 2) = 'Al'", []],
    ["POSITION('a' IN NAME) = 2", "instr(NAME, 'a') = 2", []],
    ["CONCAT(NAME, 'x') = 'betax'", "(NAME || 'x') = 'betax'", []],
    ['ABS(ELEV) = 4', 'abs(ELEV) = 4', []],
    ['CEILING(ELEV) = 36', 'ceil(ELEV) = 36', []],
    ['FLOOR(ELEV) = 35', 'floor(ELEV) = 35', []],
    ['ROUND(ELEV, 1) = 35.3', 'round(ELEV, 1) = 35.3', []],
    ['ROUND(ELEV) = 11', 'round(ELEV) = 11', []],
    ['TRUNCATE(ELEV, 1) = 35.2', 'trunc(ELEV * 10) / 10 = 35.2', []],
    ['MOD(CLASS, 2) = 1', 'mod(CLASS, 2) = 1', []],
    ['POWER(CLASS, 2) = 9', 'pow(CLASS, 2) = 9', []],
    ['LOG10(ELEV) > 1.5', 'log10(ELEV) > 1.5', []],
    ['LOG(ELEV) > 3', 'ln(ELEV) > 3', []],
    ['COS(0) = 1 AND SIN(0) = 0 AND TAN(0) = 0', '1', []],
    ['CAST(ELEV AS INT) = 35', 'CAST(ELEV AS INTEGER) = 35', []],
    ["CAST(CLASS AS VARCHAR(10)) = '3'", "CAST(CLASS AS TEXT) = '3'", []],
    ['"NAME" = \'Alpha\'', "NAME = 'Alpha'", []],
    ['"Select" = \'x\'', '"Select" = \'x\'', []],
    ['(CLASS = 1 OR CLASS = 3) AND ELEV > 0', '(CLASS = 1 OR CLASS = 3) AND ELEV > 0', []],
    ['SURVEYED < CURRENT_DATE', 'SURVEYED < ?', [D('2022-01-01')]],
    ['SURVEYED < CURRENT_TIMESTAMP()', 'SURVEYED < ?', [D('2022-01-01') + 3600_000]],
  ];
  for (const [where, sql, params] of cases) {
    it(where || '(empty)', () => {
      const now = D('2022-01-01') + 3600_000;
      const got = ids(where, now);
      expect(got).toEqual(hand(sql, ...params));
      // A where clause that matches all rows or none says little: most cases select some.
      if (!['', '1=1'].includes(where) && !where.startsWith('COS')) expect(got.length).toBeLessThan(ROWS.length);
    });
  }

  it('every literal is a bound parameter', () => {
    const c = compileWhere("NAME = 'x'' OR 1=1 --' AND ELEV > 5 AND SURVEYED > date '2020-01-01'", FIELDS);
    expect(c.sql).not.toMatch(/'x|OR 1=1|2020|5/);
    expect(c.params).toEqual(["x' OR 1=1 --", 5, D('2020-01-01')]);
    expect(c.sql).toBe('((("NAME" = ?) AND ("ELEV" > ?)) AND ("SURVEYED" > ?))');
  });
});

describe('compileWhere: refusals', () => {
  const cases: [string, RegExp, number][] = [
    ['1=1; DROP TABLE x', /';' is not allowed/, 4],
    ['CLASS = 1 -- comment', /comments are not allowed/, 11],
    ['CLASS = 1 /* c */', /comments are not allowed/, 11],
    ['CLASS IN (SELECT a FROM x)', /subqueries are not allowed/, 11],
    ['CLASS = (SELECT max(a) FROM x)', /subqueries are not allowed/, 10],
    ['EXISTS (SELECT 1)', /subqueries are not allowed/, 1],
    ["load_extension('/tmp/evil.so') = 1", /'load_extension' is not a supported function/, 1],
    ['sqlite_version() = 1', /not a supported function/, 1],
    ['PRAGMA table_info(t)', /'PRAGMA' is not allowed/, 1],
    ["ATTACH DATABASE '/tmp/x' AS y", /'ATTACH' is not allowed/, 1],
    ['NOPE = 1', /'NOPE' is not a field of this layer/, 1],
    ['CLASS = 1 UNION SELECT 1', /unexpected 'UNION'/, 11],
    ['CLASS', /must be a condition/, 1],
    ['CLASS = ', /ends where a value was expected/, 9],
    ["NAME = 'open", /not closed/, 8],
    ['CLASS = 1 AND', /ends where a value was expected/, 14],
    ["NAME || 'x' = 'a'", /'\|\|' is not supported/, 6],
    ["SURVEYED > 'yesterday'", /is not a date/, 12],
    ["SURVEYED > date '2021-02-30'", /is not a date/, 17],
    ['CLASS = 1 = 2', /unexpected '='/, 11],
    ['(CLASS = 1) = (CLASS = 2)', /cannot be compared/, 13],
    ["ELEV + 'a' > 1", /needs numbers/, 8],
    ['`CLASS` = 1', /character '`' is not allowed/, 1],
    ['CLASS = 1 ORDER BY NAME', /unexpected 'ORDER'/, 11],
    ['UPPER(NAME, 1) = 1', /takes 1 argument/, 1],
    ['CAST(ELEV AS BLOB) = 1', /CAST takes/, 14],
  ];
  for (const [where, message, position] of cases) {
    it(where, () => {
      const e = refusal(where);
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.path).toBe('QueryFilter/WhereClause');
      expect(e.message).toMatch(message);
      expect(e.message).toContain(`at position ${position}:`);
    });
  }

  it('a field may be named like a keyword (DATE)', () => {
    const fields = [field('DATE', 'geoFieldTypeDate'), field('N', 'geoFieldTypeInteger')];
    const c = compileWhere("DATE > date '2024-01-01' AND N = 1", fields);
    expect(c.sql).toBe('(("DATE" > ?) AND ("N" = ?))');
    expect(c.params).toEqual([D('2024-01-01'), 1]);
    expect(() => compileWhere("NAME > date '2024-01-01'", fields)).toThrow(/'NAME' is not a field/);
    expect(() => compileWhere('BOTH = 1', fields)).toThrow(/unexpected BOTH/);
  });

  it('refuses deep nesting quickly with a fault, not a stack overflow', () => {
    const deep = `${'('.repeat(30000)}CLASS = 1${')'.repeat(30000)}`;
    expect(refusal(deep).message).toMatch(/nested more than 100 levels/);
    expect(refusal(`${'NOT '.repeat(5000)}CLASS = 1`).message).toMatch(/nested more than 100 levels/);
    expect(refusal(`${'ABS('.repeat(5000)}1${')'.repeat(5000)} = 1`).message).toMatch(/nested more than 100 levels/);
    expect(refusal(`CLASS = ${'- '.repeat(5000)}1`).message).toMatch(/nested more than 100 levels/);
    expect(ids(`${'('.repeat(50)}CLASS = 1${')'.repeat(50)}`)).toEqual([1, 4]);
  });

  it("names the caller's path", () => {
    expect(refusal('1=1; DROP TABLE x', 'LayerDescriptions[0]/DefinitionExpression').path).toBe(
      'LayerDescriptions[0]/DefinitionExpression',
    );
  });

  it('the database is untouched by refused clauses', () => {
    expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'x'").get()).toEqual({ n: 1 });
  });
});

describe('parseOrderBy', () => {
  it('reads ORDER BY with directions, case-insensitive names', () => {
    expect(parseOrderBy('ORDER BY elev DESC, name', FIELDS)).toEqual([
      { field: 'ELEV', descending: true },
      { field: 'NAME', descending: false },
    ]);
    expect(parseOrderBy('class asc', FIELDS)).toEqual([{ field: 'CLASS', descending: false }]);
    expect(parseOrderBy('  ', FIELDS)).toEqual([]);
  });

  it('refuses unknown fields, statements and other clauses', () => {
    for (const [clause, message] of [
      ['ORDER BY NOPE', /'NOPE' is not a field/],
      ['ORDER BY NAME; DROP TABLE x', /';' is not allowed/],
      ['GROUP BY NAME', /'GROUP' is not a field/],
      ['ORDER BY NAME LIMIT 1', /only ORDER BY/],
    ] as const) {
      try {
        parseOrderBy(clause, FIELDS);
        throw new Error(`accepted ${clause}`);
      } catch (e) {
        expect(e).toBeInstanceOf(EngineError);
        expect((e as EngineError).path).toBe('QueryFilter/PostfixClause');
        expect((e as EngineError).message).toMatch(message);
      }
    }
  });
});

describe('parseDateLiteral and the allowlist', () => {
  it('reads dates and timestamps in UTC, with zones', () => {
    expect(parseDateLiteral('2024-02-29')).toBe(D('2024-02-29'));
    expect(parseDateLiteral('2024-01-01T10:30:00Z')).toBe(Date.UTC(2024, 0, 1, 10, 30));
    expect(parseDateLiteral('2024-01-01T10:30:00-03:00')).toBe(Date.UTC(2024, 0, 1, 13, 30));
    expect(parseDateLiteral('2024-01-01 10:30')).toBe(Date.UTC(2024, 0, 1, 10, 30));
    expect(parseDateLiteral('2023-02-29')).toBeUndefined();
    expect(parseDateLiteral('soon')).toBeUndefined();
  });

  it('exports the function allowlist', () => {
    expect(SQL_FUNCTIONS.map((f) => f.name)).toEqual(
      expect.arrayContaining(['UPPER', 'LOWER', 'CHAR_LENGTH', 'TRIM', 'SUBSTRING', 'ABS', 'ROUND', 'CAST', 'CURRENT_DATE', 'EXTRACT']),
    );
  });
});

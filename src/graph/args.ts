/**
 * One schema drives argument parsing: case-insensitive names (canonical spelling out), aliases,
 * numeric strings where numbers are expected, lists as arrays or space/comma-delimited strings,
 * defaults, ranges and enums. Every problem is collected with its JSON path; unknown arguments are
 * kept out of the computation and reported as warnings with a "did you mean" for near misses.
 *
 * Enum names match in any case and with or without separators (`percent-rise`, `PERCENT_RISE` and
 * `PercentRise` are one name), so the spellings of the vendor's REST pages, its Python API and its
 * JavaScript client all land on the same code; a name that matches nothing gets a "did you mean".
 * Type slips real clients make are taken as "not given", with a warning: `null`, or `false` or `""`
 * where a number, a list, a name or an object is expected.
 */
import type { Issue } from '../core/errors.js';
import type { ArgSchema, ArgSpec } from './types.js';

/** A raster argument as written in the rule, left for the builder to resolve into input nodes. */
export interface RawRaster {
  readonly name: string;
  /** The JSON value (a string reference, a nested rule, a `{ url }` object, a number, ...). */
  readonly value: unknown;
  readonly path: string;
  /** For `rasters`: the element values and their paths. */
  readonly elements?: readonly { readonly value: unknown; readonly path: string }[];
  /**
   * For `rasters` given as one `Raster` (vendor examples write a multi-band raster where a list of
   * rasters is expected): the bands of that one raster are the inputs. The builder splits them.
   */
  readonly bandsOf?: boolean;
}

export interface ParsedArgs {
  /** Scalar values under canonical names, defaults applied. */
  readonly values: Record<string, unknown>;
  /** Raster arguments present (or defaulted to `$$`), canonical name -> raw value, in schema order. */
  readonly rasters: readonly RawRaster[];
  readonly issues: Issue[];
  readonly warnings: Issue[];
}

const join = (base: string, key: string): string => (base ? `${base}.${key}` : key);

/** The path of a function's arguments object, relative to the function: the prefix of every argument path. */
export const ARGUMENTS = 'rasterFunctionArguments';

/** The error path of an argument named `N`, relative to the function; `index` picks an element of a list. */
export type ArgPath<N extends string> = (name: N, index?: number) => string;

/**
 * Error paths of the arguments of one schema, relative to the function (graph/node.ts anchors them
 * in the rule): `const at = argPaths(args)`, then `at('ZFactor')` is
 * `rasterFunctionArguments.ZFactor` and `at('Rasters', 2)` is `rasterFunctionArguments.Rasters[2]`.
 * Names are keys of the schema, so a misspelt name does not compile.
 */
export function argPaths<A extends ArgSchema>(_schema: A): ArgPath<keyof A & string> {
  return (name, index) => (index === undefined ? `${ARGUMENTS}.${name}` : `${ARGUMENTS}.${name}[${index}]`);
}

export function parseArgs(schema: ArgSchema, raw: unknown, basePath: string): ParsedArgs {
  const issues: Issue[] = [];
  const warnings: Issue[] = [];
  const values: Record<string, unknown> = {};
  const rasters: RawRaster[] = [];

  let given: Record<string, unknown> = {};
  if (raw !== undefined && raw !== null) {
    if (typeof raw !== 'object' || Array.isArray(raw)) {
      issues.push({ code: 'INVALID_RULE', path: basePath, message: 'expected an object of argument name/value pairs' });
    } else {
      given = raw as Record<string, unknown>;
    }
  }

  // Match given keys to schema names case-insensitively, aliases included.
  const byKey = new Map<string, string>();
  for (const [name, spec] of Object.entries(schema)) {
    byKey.set(name.toLowerCase(), name);
    for (const a of spec.aliases ?? []) byKey.set(a.toLowerCase(), name);
  }
  // A function that takes `Rasters` and no `Raster` reads a `Raster` as the bands of one raster.
  const listName = Object.entries(schema).find(([, s]) => s.kind === 'rasters')?.[0];
  if (listName !== undefined && !byKey.has('raster')) byKey.set('raster', listName);
  const found = new Map<string, { key: string; value: unknown }>();
  for (const [key, value] of Object.entries(given)) {
    const name = byKey.get(key.toLowerCase());
    if (name === undefined) {
      const near = closestSpelling(key, [...Object.keys(schema), ...Object.values(schema).flatMap((s) => s.aliases ?? [])]);
      warnings.push({
        code: 'INVALID_ARGUMENT',
        path: join(basePath, key),
        message: `unknown argument ignored${near ? ` (did you mean ${near}?)` : ''}`,
      });
      continue;
    }
    const prev = found.get(name);
    if (prev !== undefined) {
      // The canonical spelling wins over an alias (DEM over Raster), else the first one given.
      const keepPrev = prev.key.toLowerCase() === name.toLowerCase() || key.toLowerCase() !== name.toLowerCase();
      const [used, dropped] = keepPrev ? [prev.key, key] : [key, prev.key];
      warnings.push({
        code: 'INVALID_ARGUMENT',
        path: join(basePath, dropped),
        message: `${name} given twice (as ${prev.key} and ${key}); ${used} is used`,
      });
      if (keepPrev) continue;
    }
    found.set(name, { key, value });
  }

  for (const [name, spec] of Object.entries(schema)) {
    const hit = found.get(name);
    const path = join(basePath, hit?.key ?? name);
    // Clients null out unset arguments, and write false or "" for "none": not given, with a warning.
    const slip = hit === undefined ? undefined : notGiven(spec, hit.value);
    const value = slip !== undefined ? undefined : hit?.value;
    if (slip !== undefined) warnings.push({ code: 'INVALID_ARGUMENT', path, message: `${slip} is taken as not given${fallback(spec)}` });
    if (spec.kind === 'raster') {
      if (value === undefined) {
        if (spec.default === '$$') rasters.push({ name, value: '$$', path });
        else if (!spec.optional) issues.push({ code: 'INVALID_ARGUMENT', path, message: `${name} is required` });
      } else {
        rasters.push({ name, value, path });
      }
      continue;
    }
    if (spec.kind === 'rasters') {
      if (hit !== undefined && hit.key.toLowerCase() !== name.toLowerCase() && value !== undefined && !Array.isArray(value)) {
        // `Raster` for `Rasters`: the bands of this raster are the inputs.
        rasters.push({ name, value, path, elements: [{ value, path }], bandsOf: true });
        continue;
      }
      let list: unknown[] = value === undefined ? [] : Array.isArray(value) ? value : [value];
      if (list.length === 0 && spec.default === '$$') list = ['$$'];
      if (list.length < (spec.minLength ?? 1)) {
        issues.push({ code: 'INVALID_ARGUMENT', path, message: `${name} needs at least ${spec.minLength ?? 1} raster(s)` });
      }
      rasters.push({ name, value, path, elements: list.map((v, i) => ({ value: v, path: `${path}[${i}]` })) });
      continue;
    }
    if (value === undefined) {
      if ('default' in spec && spec.default !== undefined) values[name] = spec.default;
      continue;
    }
    const r = coerce(spec, value);
    if (typeof r === 'string') issues.push({ code: 'INVALID_ARGUMENT', path, message: r });
    else values[name] = r.value;
  }
  return { values, rasters, issues, warnings };
}

type Coerced = { value: unknown } | string;

/** What a value that means "not given" looks like (`null`, `false`, `""`), or undefined for a real value. */
function notGiven(spec: ArgSpec, v: unknown): string | undefined {
  if (v === null) return 'null';
  if (spec.kind === 'boolean' || spec.kind === 'raster' || spec.kind === 'rasters') return undefined;
  if (v === false) return 'false';
  if (v === '' && spec.kind !== 'strings' && (spec.kind !== 'string' || spec.values !== undefined)) return '""';
  if (typeof v === 'string' && v.trim() === '' && (spec.kind === 'number' || spec.kind === 'int' || spec.kind === 'enum'))
    return JSON.stringify(v);
  return undefined;
}

/** What is used instead of a value not given, for the warning. */
function fallback(spec: ArgSpec): string {
  if (spec.kind === 'raster') return spec.default === '$$' ? ': the service raster ($$) is used' : '';
  if (spec.kind === 'rasters') return '';
  if ('default' in spec && spec.default !== undefined) return `: the default ${JSON.stringify(spec.default)} is used`;
  return '';
}

/** Lower case without spaces, dashes, underscores, dots and parentheses: one key for `percent-rise`, `PERCENT_RISE`, `PercentRise`. */
const nameKey = (s: string): string => s.toLowerCase().replace(/[\s\-_.()]/g, '');

/** The entry of `names` that `word` spells (see nameKey), also with a vendor prefix (`esri`, `geo`) dropped. */
function byName<T>(names: Readonly<Record<string, T>>, word: string): T | undefined {
  const want = nameKey(word);
  for (const [k, v] of Object.entries(names)) if (nameKey(k) === want) return v;
  const bare = want.replace(/^(esri|geo)/, '');
  if (bare !== want && bare !== '') for (const [k, v] of Object.entries(names)) if (nameKey(k) === bare) return v;
  return undefined;
}

/** " (did you mean X?)" for the name closest to `word`, compared as nameKeys; "" when none is close. */
function didYouMean(word: string, names: readonly string[]): string {
  const keys = new Map<string, string>();
  for (const n of names) if (!keys.has(nameKey(n))) keys.set(nameKey(n), n);
  const near = closestSpelling(nameKey(word), [...keys.keys()]);
  return near === undefined ? '' : ` (did you mean ${keys.get(near)}?)`;
}

function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v.trim());
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

const show = (v: unknown): string => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
};

export function coerce(spec: ArgSpec, v: unknown): Coerced {
  switch (spec.kind) {
    case 'number':
    case 'int': {
      const n = toNumber(v);
      if (n === undefined) return `expected a number, got ${show(v)}`;
      if (spec.kind === 'int' && !Number.isInteger(n)) return `expected an integer, got ${show(v)}`;
      if (spec.min !== undefined && n < spec.min) return `must be at least ${spec.min}, got ${n}`;
      if (spec.max !== undefined && n > spec.max) return `must be at most ${spec.max}, got ${n}`;
      return { value: n };
    }
    case 'enum': {
      let n = toNumber(v);
      if (n === undefined && typeof v === 'string' && spec.names) n = byName(spec.names, v);
      const allowed = spec.values.join(', ') + (spec.names ? ` or ${Object.keys(spec.names).join(', ')}` : '');
      if (n === undefined || !spec.values.includes(n)) {
        const hint = typeof v === 'string' && toNumber(v) === undefined && spec.names ? didYouMean(v, Object.keys(spec.names)) : '';
        return `must be one of ${allowed}, got ${show(v)}${hint}`;
      }
      return { value: n };
    }
    case 'boolean': {
      if (typeof v === 'boolean') return { value: v };
      if (v === 0 || v === 1) return { value: v === 1 };
      if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return { value: v.trim().toLowerCase() === 'true' };
      return `expected true or false, got ${show(v)}`;
    }
    case 'string': {
      if (spec.values) {
        const code = toNumber(v);
        if (code !== undefined && spec.codes) {
          const hit = spec.codes[code];
          if (hit !== undefined) return { value: hit };
          return `must be one of ${spec.values.join(', ')} or the codes ${Object.keys(spec.codes).join(', ')}, got ${show(v)}`;
        }
        if (typeof v !== 'string') return `must be one of ${spec.values.join(', ')}, got ${show(v)}`;
        const hit =
          spec.values.find((x) => x.toLowerCase() === v.trim().toLowerCase()) ??
          byName(Object.fromEntries(spec.values.map((x) => [x, x])), v) ??
          (spec.names ? byName(spec.names, v) : undefined);
        if (hit === undefined) {
          const codes = spec.codes ? ` (or the codes ${Object.keys(spec.codes).join(', ')})` : '';
          return `must be one of ${spec.values.join(', ')}${codes}, got ${show(v)}${didYouMean(v, [...spec.values, ...Object.keys(spec.names ?? {})])}`;
        }
        return { value: hit };
      }
      const s = typeof v === 'number' ? String(v) : v;
      if (typeof s !== 'string') return `expected a string, got ${show(v)}`;
      return { value: s };
    }
    case 'numbers': {
      const list = typeof v === 'string' ? v.split(/[\s,;]+/).filter((t) => t !== '') : typeof v === 'number' ? [v] : v;
      if (!Array.isArray(list)) return `expected an array of numbers or a space-delimited string, got ${show(v)}`;
      const out: number[] = [];
      for (let i = 0; i < list.length; i++) {
        const n = toNumber(list[i]);
        if (n === undefined) return `element ${i} is not a number: ${show(list[i])}`;
        if (spec.integer && !Number.isInteger(n)) return `element ${i} is not an integer: ${show(list[i])}`;
        out.push(n);
      }
      if (out.length < (spec.minLength ?? 0)) return `needs at least ${spec.minLength} number(s), got ${out.length}`;
      return { value: out };
    }
    case 'strings': {
      const list = typeof v === 'string' ? [v] : v;
      if (!Array.isArray(list) || !list.every((s) => typeof s === 'string' || typeof s === 'number')) {
        return `expected an array of strings, got ${show(v)}`;
      }
      return { value: list.map(String) };
    }
    case 'json':
      return { value: v };
    case 'raster':
    case 'rasters':
      return { value: v };
  }
}

/** The candidate spelt most like `word`, for a "did you mean" (case-insensitive edit distance at most 2, or 1/3 of its length); undefined when none is close. */
export function closestSpelling(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestD = Math.max(2, Math.floor(w.length / 3)) + 1;
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 99;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** A plain view of a schema, for `rasterflow functions` and the README table. */
export function describe(schema: ArgSchema): Record<string, unknown>[] {
  return Object.entries(schema).map(([name, spec]) => ({ name, ...spec }));
}

/**
 * fast-check arbitraries for the rule fuzzers: structural mutations of the real rules in
 * test/rules-sample (drop / duplicate / rename keys, swap value types, replace subtrees, prototype
 * keys, NaN and Infinity as strings, huge numbers, 1 MB strings, arrays where objects are expected)
 * and generated hostile rules (10,000 levels deep, very wide, templates that refer to each other).
 * Mutations are plain data applied to a deep copy, so a shrunk counterexample prints as a rule.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';

const DIR = join(import.meta.dirname, '..', 'rules-sample');

/** The `rule` of every sample, by file name. */
export const SAMPLE_RULES: readonly { readonly file: string; readonly rule: unknown }[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => ({ file, rule: (JSON.parse(readFileSync(join(DIR, file), 'utf8')) as { rule: unknown }).rule }));

/** One megabyte of text (built once). */
export const MEGABYTE = 'x'.repeat(1 << 20);

/** Values that stand in for any other: wrong types, hostile strings and numbers. */
export const HOSTILE_VALUES: readonly unknown[] = [
  null,
  true,
  0,
  -1,
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  2 ** 31,
  5e-324,
  'NaN',
  'Infinity',
  '-Infinity',
  '1e999',
  '',
  ' ',
  '$$',
  '$',
  '$999999999999',
  '$../../etc/passwd',
  '{',
  '{"rasterFunction":',
  '[]',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  MEGABYTE,
  `$${MEGABYTE}`,
  [],
  [[]],
  [null],
  ['NaN', 'Infinity'],
  [1e308, -1e308, 0],
  {},
  { url: '' },
  { url: 'file:///etc/passwd' },
  { rasterFunction: '' },
  { rasterFunction: 'Identity' },
  { function: {} },
  { function: { type: 'IdentityFunction' }, arguments: { Raster: { type: 'RasterFunctionVariable', isDataset: true } } },
  { type: 'RasterFunctionVariable' },
  { type: 'ArgumentArray', elements: [{ rasterFunction: 'Identity' }, '$$'] },
];

/** Keys to insert or rename to: prototype keys, case variants and rule fields in the wrong place. */
export const HOSTILE_KEYS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'rasterFunction',
  'RASTERFUNCTION',
  'rasterFunctionArguments',
  'function',
  'functionName',
  'arguments',
  'renderingRule',
  'outputPixelType',
  'variableName',
  'url',
  'Raster',
  'Rasters',
  'type',
  'value',
  'elements',
  '',
  ' ',
  '\u0000',
  'k'.repeat(10_000),
];

export type Mutation =
  | { readonly kind: 'drop'; readonly at: number; readonly key: number }
  | { readonly kind: 'duplicate'; readonly at: number; readonly key: number; readonly to: number }
  | { readonly kind: 'rename'; readonly at: number; readonly key: number; readonly to: number }
  | { readonly kind: 'caseflip'; readonly at: number; readonly key: number }
  | { readonly kind: 'set'; readonly at: number; readonly key: number; readonly value: number }
  | { readonly kind: 'graft'; readonly at: number; readonly key: number; readonly sample: number }
  | { readonly kind: 'json'; readonly at: number; readonly key: number; readonly value: unknown }
  | { readonly kind: 'insert'; readonly at: number; readonly to: number; readonly value: number }
  | { readonly kind: 'wrap'; readonly at: number; readonly key: number }
  | { readonly kind: 'stringify'; readonly at: number; readonly key: number };

const idx = fc.nat({ max: 1_000 });

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: idx, key: idx }),
  fc.record({ kind: fc.constant('duplicate' as const), at: idx, key: idx, to: idx }),
  fc.record({ kind: fc.constant('rename' as const), at: idx, key: idx, to: idx }),
  fc.record({ kind: fc.constant('caseflip' as const), at: idx, key: idx }),
  fc.record({ kind: fc.constant('set' as const), at: idx, key: idx, value: idx }),
  fc.record({ kind: fc.constant('graft' as const), at: idx, key: idx, sample: idx }),
  fc.record({ kind: fc.constant('json' as const), at: idx, key: idx, value: fc.jsonValue({ maxDepth: 3 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: idx, to: idx, value: idx }),
  fc.record({ kind: fc.constant('wrap' as const), at: idx, key: idx }),
  fc.record({ kind: fc.constant('stringify' as const), at: idx, key: idx }),
);

/** A sample rule and the mutations applied to it, and whether it is passed as JSON text. */
export const mutatedRuleArb = fc.record({
  sample: fc.nat({ max: SAMPLE_RULES.length - 1 }),
  mutations: fc.array(mutationArb, { minLength: 1, maxLength: 5 }),
  asText: fc.boolean(),
});

/** A deep copy through JSON (the samples are JSON), keeping `__proto__` as an own key. */
const copy = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** Set an own property, also for `__proto__` (a plain assignment would change the prototype). */
function setOwn(o: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Every object and array in `v` (containers the mutations act on), root first. */
function containers(v: unknown, out: (Record<string, unknown> | unknown[])[] = []): (Record<string, unknown> | unknown[])[] {
  if (typeof v !== 'object' || v === null) return out;
  out.push(v as Record<string, unknown>);
  for (const k of Object.keys(v)) containers((v as Record<string, unknown>)[k], out);
  return out;
}

/** Apply the mutations, in order, to a copy of the sample's rule. */
export function mutateRule(sample: number, mutations: readonly Mutation[]): unknown {
  const root = { rule: copy(SAMPLE_RULES[sample % SAMPLE_RULES.length]!.rule) };
  for (const m of mutations) {
    const all = containers(root.rule);
    const c = all.length === 0 ? root : (all[m.at % all.length] ?? root);
    const keys = Object.keys(c);
    const target: Record<string, unknown> | unknown[] = keys.length === 0 && m.kind !== 'insert' ? root : c;
    const tkeys = Object.keys(target);
    const key = 'key' in m ? tkeys[m.key % Math.max(1, tkeys.length)] : undefined;
    const get = (k: string): unknown => (target as Record<string, unknown>)[k];
    switch (m.kind) {
      case 'drop':
        if (key !== undefined) {
          if (Array.isArray(target)) target.splice(Number(key), 1);
          else delete target[key];
        }
        break;
      case 'duplicate':
        if (key !== undefined)
          setOwn(target, Array.isArray(target) ? target.length : HOSTILE_KEYS[m.to % HOSTILE_KEYS.length]!, copy(get(key)));
        break;
      case 'rename':
        if (key !== undefined && !Array.isArray(target)) {
          const v = get(key);
          delete target[key];
          setOwn(target, HOSTILE_KEYS[m.to % HOSTILE_KEYS.length]!, v);
        }
        break;
      case 'caseflip':
        if (key !== undefined && !Array.isArray(target)) {
          const v = get(key);
          delete target[key];
          setOwn(target, key === key.toUpperCase() ? key.toLowerCase() : key.toUpperCase(), v);
        }
        break;
      case 'set':
        if (key !== undefined) setOwn(target, key, copy(HOSTILE_VALUES[m.value % HOSTILE_VALUES.length]));
        break;
      case 'graft':
        if (key !== undefined) setOwn(target, key, copy(SAMPLE_RULES[m.sample % SAMPLE_RULES.length]!.rule));
        break;
      case 'json':
        if (key !== undefined) setOwn(target, key, copy(m.value));
        break;
      case 'insert':
        setOwn(
          target,
          Array.isArray(target) ? target.length : HOSTILE_KEYS[m.to % HOSTILE_KEYS.length]!,
          copy(HOSTILE_VALUES[m.value % HOSTILE_VALUES.length]),
        );
        break;
      case 'wrap':
        if (key !== undefined) setOwn(target, key, [get(key)]);
        break;
      case 'stringify':
        if (key !== undefined) setOwn(target, key, JSON.stringify(get(key)) ?? 'undefined');
        break;
    }
  }
  return root.rule;
}

/** `{ rasterFunction: fn, rasterFunctionArguments: { [arg]: inner } }` nested `depth` times around `leaf` (built iteratively). */
export function deepRule(depth: number, fn = 'Identity', arg = 'Raster', leaf: unknown = '$$'): unknown {
  let r: unknown = leaf;
  for (let i = 0; i < depth; i++) r = { rasterFunction: fn, rasterFunctionArguments: { [arg]: r } };
  return r;
}

/** The long template form nested `depth` times. */
export function deepLongForm(depth: number): unknown {
  let r: unknown = { type: 'RasterFunctionVariable', name: 'Raster', isDataset: true };
  for (let i = 0; i < depth; i++) {
    r = { function: { type: 'IdentityFunction' }, arguments: { Raster: { type: 'RasterFunctionVariable', name: 'Raster', value: r } } };
  }
  return r;
}

/** `depth` levels of arrays (or objects) around `leaf`, as an argument value that is not a rule. */
export function deepValue(depth: number, kind: 'array' | 'object', leaf: unknown = 1): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = kind === 'array' ? [v] : { a: v };
  return v;
}

/** The same nesting as JSON text, built without JSON.stringify (which would itself recurse). */
export function deepRuleText(depth: number): string {
  return `${'{"rasterFunction":"Identity","rasterFunctionArguments":{"Raster":'.repeat(depth)}"$$"${'}}'.repeat(depth)}`;
}

/**
 * Every real rendering rule in test/rules-sample (a copy of the project's shared sample,
 * ../shared/spec/rules-sample, rules written by other people, each with its source) goes through
 * the parser and resolver. `parse` rules must resolve, except that functions of the spec that this
 * version does not provide yet must be the only problems, each reported as UNKNOWN_FUNCTION by name;
 * `template` rules must name the unregistered template clearly and resolve once it is registered;
 * `reject` rules must be refused with an error whose path names the field.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registry } from '../src/functions/index.js';
import { resolveRule } from '../src/rule/build.js';
import { createTemplates } from '../src/rule/templates.js';

const DIR = join(import.meta.dirname, 'rules-sample');
const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();

interface Sample {
  readonly rule: unknown;
  readonly functions: readonly string[];
  readonly expect: 'parse' | 'template' | 'reject';
  readonly note: string;
}

describe('rules-sample', () => {
  it('loads the whole sample', () => {
    expect(files.length).toBeGreaterThan(30);
  });

  for (const file of files) {
    const sample = JSON.parse(readFileSync(join(DIR, file), 'utf8')) as Sample;
    const missing = sample.functions.filter((f) => registry.get(f) === undefined);

    it(`${file} (${sample.expect})`, () => {
      const res = resolveRule(sample.rule, { registry });
      if (sample.expect === 'reject') {
        expect(res.issues.length).toBeGreaterThan(0);
        expect(res.issues.some((i) => i.code === 'INVALID_RULE' || i.code === 'INVALID_ARGUMENT')).toBe(true);
        expect(res.issues.every((i) => i.path !== '')).toBe(true);
        return;
      }
      if (sample.expect === 'template') {
        const name = sample.functions.find((f) => registry.get(f) === undefined && /[^A-Za-z]|^None$/.test(f)) ?? sample.functions.at(-1)!;
        const hit = res.issues.find((i) => i.code === 'UNKNOWN_FUNCTION' && i.message.includes(JSON.stringify(name)));
        expect(hit?.message).toMatch(/neither a well-known raster function nor a registered template/);
        // Registered, the same rule resolves (its other functions permitting).
        const templates = createTemplates();
        templates.register(name, { rasterFunction: 'Identity' });
        const again = resolveRule(sample.rule, { registry, templates });
        expect(again.issues.filter((i) => !isPending(i.message))).toEqual([]);
        return;
      }
      // parse: the only problems allowed are functions of later issues, each named.
      const unexpected = res.issues.filter((i) => !(i.code === 'UNKNOWN_FUNCTION' && isPending(i.message)));
      expect(unexpected).toEqual([]);
      for (const f of missing) expect(res.issues.some((i) => i.message.toLowerCase().startsWith(f.toLowerCase()))).toBe(true);
      if (missing.length === 0) expect(res.root).toBeDefined();
    });
  }
});

const isPending = (message: string): boolean =>
  /well-known raster function of the spec that this version of rasterflow does not provide yet/.test(message);

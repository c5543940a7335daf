/** The registry is consistent with itself, with the spec's names and with the README table. */
import { describe, expect, it } from 'vitest';
import { builtinFunctions, registry } from '../src/functions/index.js';
import { WELL_KNOWN_FUNCTIONS } from '../src/rule/well-known.js';
import { functionTable, readmeTable } from './readme-table.js';

describe('registry', () => {
  it('has unique names and aliases, looked up in any case', () => {
    const names = builtinFunctions.flatMap((f) => [f.name, ...(f.aliases ?? [])].map((n) => n.toLowerCase()));
    expect(new Set(names).size).toBe(names.length);
    for (const f of builtinFunctions) expect(registry.get(f.name.toUpperCase())).toBe(f);
  });

  it('registers only names the spec knows', () => {
    const known = new Set(WELL_KNOWN_FUNCTIONS.map((n) => n.toLowerCase()));
    for (const f of builtinFunctions) expect(known.has(f.name.toLowerCase()), f.name).toBe(true);
  });

  it('documents every argument and keeps defaults inside their ranges and enums', () => {
    for (const f of builtinFunctions) {
      expect(f.summary.length, f.name).toBeGreaterThan(10);
      expect(f.verification.length, f.name).toBeGreaterThan(3);
      for (const [name, spec] of Object.entries(f.args)) {
        const where = `${f.name}.${name}`;
        expect(spec.doc.length, where).toBeGreaterThan(3);
        if (spec.kind === 'enum' && spec.default !== undefined) expect(spec.values, where).toContain(spec.default);
        if ((spec.kind === 'number' || spec.kind === 'int') && spec.default !== undefined) {
          if (spec.min !== undefined) expect(spec.default, where).toBeGreaterThanOrEqual(spec.min);
          if (spec.max !== undefined) expect(spec.default, where).toBeLessThanOrEqual(spec.max);
        }
        if (spec.kind === 'string' && spec.values && spec.default !== undefined) expect(spec.values, where).toContain(spec.default);
      }
      if (f.variableName !== undefined) expect(Object.keys(f.args), f.name).toContain(f.variableName);
    }
  });

  it('is listed in the README function table, and the table lists nothing else', () => {
    const listed = [...readmeTable().matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual(builtinFunctions.map((f) => f.name).sort());
  });

  it('the README function table is up to date in every cell (npx tsx test/readme-table.ts rewrites it)', () => {
    expect(readmeTable()).toBe(functionTable());
  });
});

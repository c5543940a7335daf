import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeResolution, resolveRule } from '../rule/build.js';
import { catalogNames, loadFunction, loadRegistry, registryFor } from './catalog.js';
import { builtinFunctions, registry } from './index.js';

const namesOf = (r: { list(): readonly { name: string }[] }): string[] => r.list().map((f) => f.name);

describe('catalog', () => {
  it('answers to exactly the names and aliases of the registry, with the very same functions', async () => {
    const all = builtinFunctions.flatMap((f) => [f.name, ...(f.aliases ?? [])]);
    expect([...catalogNames()].sort()).toEqual([...all].sort());
    for (const name of all) {
      expect(await loadFunction(name)).toBe(registry.get(name));
      expect(await loadFunction(name.toUpperCase())).toBe(registry.get(name));
    }
    expect(loadFunction('NoSuchFunction')).toBeUndefined();
    expect(await loadRegistry()).toBe(registry);
  });

  it('gives a rule the functions it names, at any depth, in any case, by alias or long-form type, and nothing else', async () => {
    expect(namesOf(await registryFor('{"rasterFunction":"Hillshade"}'))).toEqual(['Hillshade']);
    const nested = JSON.stringify({
      rasterFunction: 'stretch',
      rasterFunctionArguments: {
        Raster: { rasterFunction: 'NDVI', rasterFunctionArguments: { VisibleBandID: 2, InfraredBandID: 3 } },
        Statistics: [[0, 1, 0.5, 0.1]],
        note: 'Slope is mentioned here, and a word that names nothing',
      },
    });
    expect(namesOf(await registryFor(nested)).sort()).toEqual(['NDVI', 'Stretch']);
    expect(namesOf(await registryFor('{"rasterFunction":"FocalStatistics"}'))).toEqual(['Statistics']);
    expect(namesOf(await registryFor('{"function":{"type":"HillshadeFunction"},"arguments":{}}'))).toEqual(['Hillshade']);
    expect(namesOf(await registryFor('{"rasterFunction":"NoSuchFunction"}'))).toEqual([]);
    // Not JSON: every function (the resolver then reports the syntax error).
    expect(await registryFor('{"rasterFunction":')).toBe(registry);
  });

  it('resolves every real rule of test/rules-sample as the whole registry does', async () => {
    const dir = join(import.meta.dirname, '../../test/rules-sample');
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(30);
    let same = 0;
    for (const file of files) {
      const text = JSON.stringify((JSON.parse(readFileSync(join(dir, file), 'utf8')) as { rule: unknown }).rule);
      const whole = resolveRule(text, { registry });
      const part = resolveRule(text, { registry: await registryFor(text) });
      if (whole.root === undefined || whole.issues.length > 0) {
        // The CLI resolves these again with every function (commands.ts resolveCompiling).
        expect(part.root === undefined || part.issues.length > 0).toBe(true);
        continue;
      }
      expect(part.issues).toEqual([]);
      expect(part.warnings).toEqual(whole.warnings);
      expect(describeResolution(part.root!)).toEqual(describeResolution(whole.root));
      same++;
    }
    expect(same).toBeGreaterThan(20);
  });
});

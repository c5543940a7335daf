import { describe, expect, it } from 'vitest';
import { hillshade } from '../functions/terrain/hillshade.js';
import { ARGUMENTS, argPaths } from './args.js';
import type { ArgSchema } from './types.js';

const args = {
  ZFactor: { kind: 'number', default: 1, doc: 'z multiplier' },
  Rasters: { kind: 'rasters', doc: 'inputs' },
} as const satisfies ArgSchema;

describe('argPaths', () => {
  const at = argPaths(args);

  it('gives the path of an argument relative to the function, and of a list element', () => {
    expect(at('ZFactor')).toBe('rasterFunctionArguments.ZFactor');
    expect(at('Rasters', 2)).toBe('rasterFunctionArguments.Rasters[2]');
    expect(at('Rasters')).toBe(`${ARGUMENTS}.Rasters`);
  });

  it('takes only names of the schema: a misspelt name does not compile', () => {
    // The typecheck (tsc -p test/tsconfig.json) fails if either line below compiles without error.
    // @ts-expect-error 'Zfactor' is not an argument of the schema (names are spelt as in the schema).
    expect(at('Zfactor')).toBe('rasterFunctionArguments.Zfactor');
    // @ts-expect-error Hillshade has ZFactor but no Raster argument: its raster is DEM.
    expect(argPaths(hillshade.args)('Raster')).toBe('rasterFunctionArguments.Raster');
    expect(argPaths(hillshade.args)('ZFactor')).toBe('rasterFunctionArguments.ZFactor');
  });
});

/** `rasterflow render` reports every warning of the rule, those found while planning included. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..');
const DEM = join(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const out = mkdtempSync(join(tmpdir(), 'rasterflow-cli-warnings-'));

describe('rasterflow render warnings', () => {
  it('prints a value that cannot take effect with its path, and a misplaced rule field by name', () => {
    const rule = JSON.stringify({
      rasterFunction: 'Convolution',
      Raster: '$$',
      rasterFunctionArguments: { Type: 0, Kernel: [1, 2, 1], Columns: 3, Rows: 1 },
    });
    const r = runCli(['render', '--rule', rule, '--input', DEM, '--output', join(out, 'conv.tif'), '--window', '0,0,32,32']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: .*Raster.*unknown rule field "Raster" ignored/);
    expect(r.stderr).toMatch(/warning: .*rasterFunctionArguments\.Kernel.*Kernel, Columns, Rows are ignored/);
  });
});

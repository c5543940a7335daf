/**
 * Golden cases: every `golden/<family>/cases.json` entry renders its rule over its inputs and is
 * compared with the expected raster by decoded pixels and masks (never encoded bytes). `reference`
 * cases come from an independent tool (the script beside them says how); `snapshot` cases are our
 * own regression baselines. Fields are documented in golden/README.md.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { registry } from '../src/functions/index.js';
import { render } from '../src/graph/render.js';
import { buildGraph } from '../src/rule/build.js';
import { bindSources } from '../src/rule/sources.js';
import { closingOpener } from './helpers.js';

// Rasters opened here are closed after each test (no file handle left to the garbage collector).
const files = closingOpener();
const openRaster = files.open;
afterEach(files.closeAll);

const ROOT = resolve(import.meta.dirname, '..');
const GOLDEN = join(ROOT, 'golden');

export interface GoldenCase {
  readonly id: string;
  readonly rule: unknown;
  readonly inputs: readonly string[];
  readonly expected: string;
  readonly kind: 'reference' | 'snapshot';
  /** `values` (default): same units. `gdal-hillshade`: GDAL's 1 + 254*x byte scale, 0 = NoData, turned into the vendor's 255*x truncated. */
  readonly compare?: 'values' | 'gdal-hillshade';
  readonly tolerance: { readonly abs: number; readonly rel?: number; readonly maxBadFraction?: number };
  /** Pixels next to the raster edge left out of the comparison (documented edge policies differ). */
  readonly edge?: number;
  /** The pixel type the rule's output must have (e.g. the rule's outputPixelType); unchecked when absent. */
  readonly pixelType?: string;
  /** Render only this window `[x, y, width, height]` of the rule's output (the expected raster's size). */
  readonly window?: readonly [number, number, number, number];
  readonly provenance: Record<string, unknown>;
}

const caseFiles = readdirSync(GOLDEN)
  .map((d) => join(GOLDEN, d, 'cases.json'))
  .filter((f) => existsSync(f) && statSync(f).isFile());

/** The value the expected raster stands for at pixel i, or undefined where it is NoData. */
function expectedValue(c: GoldenCase, v: number, valid: boolean): number | undefined {
  if (!valid || Number.isNaN(v)) return undefined;
  if (c.compare === 'gdal-hillshade') return v === 0 ? undefined : Math.trunc(((v - 1) * 255) / 254);
  return v;
}

describe('golden', () => {
  it('has golden cases', () => {
    expect(caseFiles.length).toBeGreaterThan(0);
  });

  for (const file of caseFiles) {
    const cases = JSON.parse(readFileSync(file, 'utf8')) as GoldenCase[];
    for (const c of cases) {
      it(`${c.id} (${c.kind})`, async () => {
        const inputs: Record<string, string> = {};
        c.inputs.forEach((p, i) => {
          if (i === 0) inputs.$$ = join(ROOT, p);
          inputs[`$${i + 1}`] = join(ROOT, p);
        });
        const { root } = await buildGraph(c.rule, { registry, resolveSource: bindSources(inputs, openRaster) });
        const w = c.window;
        const actual = await render(root, { tileSize: 128, ...(w ? { rect: { x: w[0], y: w[1], width: w[2], height: w[3] } } : {}) });
        const expectedSource = await openRaster(join(ROOT, c.expected));
        const { width, height } = expectedSource.info;
        expect([w?.[2] ?? root.info.width, w?.[3] ?? root.info.height, root.info.bandCount]).toEqual([
          width,
          height,
          expectedSource.info.bandCount,
        ]);
        if (c.pixelType !== undefined) expect(root.info.pixelType).toBe(c.pixelType);
        const expected = await expectedSource.read({ x: 0, y: 0, width, height });
        const edge = c.edge ?? 0;
        let bad = 0;
        let checked = 0;
        let maxDiff = 0;
        let first: string | undefined;
        for (let b = 0; b < expected.bands.length; b++) {
          for (let y = edge; y < height - edge; y++) {
            for (let x = edge; x < width - edge; x++) {
              const i = y * width + x;
              const e = expectedValue(c, expected.bands[b]![i]!, expected.mask[i] === 1);
              const aValid = actual.mask[i] === 1;
              checked++;
              if (e === undefined || !aValid) {
                if ((e === undefined) !== !aValid) {
                  bad++;
                  first ??= `(${x}, ${y}, band ${b}): expected ${e === undefined ? 'NoData' : e}, got ${aValid ? actual.bands[b]![i] : 'NoData'}`;
                }
                continue;
              }
              const a = actual.bands[b]![i]!;
              const d = Math.abs(a - e);
              maxDiff = Math.max(maxDiff, d);
              if (d > c.tolerance.abs + (c.tolerance.rel ?? 0) * Math.abs(e)) {
                bad++;
                first ??= `(${x}, ${y}, band ${b}): expected ${e}, got ${a}`;
              }
            }
          }
        }
        const allowed = Math.floor((c.tolerance.maxBadFraction ?? 0) * checked);
        expect(bad, `${bad} of ${checked} pixels off (max |diff| ${maxDiff}); first at ${first}`).toBeLessThanOrEqual(allowed);
      });
    }
  }
});

/**
 * The terrain golden cases (golden/terrain/cases.json, made by gdaldem, GRASS and NumPy) run directly against the
 * terrain functions, without the rule builder or the io layer: the DEM and the expected raster are
 * read with geotiff.js and the DEM becomes a memory source. Reads committed files only; GDAL is not
 * needed. The comparison follows golden/README.md (the cross-cutting harness test/golden.test.ts
 * runs the same cases through the whole engine).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fromFile } from 'geotiff';
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../../core/pixel-block.js';
import type { Plane } from '../../core/pixel-type.js';
import { memorySource } from '../../graph/memory-source.js';
import { render } from '../../graph/render.js';
import type { RasterFunction } from '../../graph/types.js';
import { applyFunction } from '../../../test/helpers.js';
import { aspect } from './aspect.js';
import { curvature } from './curvature.js';
import { hillshade } from './hillshade.js';
import { slope } from './slope.js';

const ROOT = resolve(import.meta.dirname, '../../..');

interface Case {
  readonly id: string;
  readonly rule: { readonly rasterFunction: string; readonly rasterFunctionArguments: Record<string, unknown> };
  readonly inputs: readonly string[];
  readonly expected: string;
  readonly compare?: 'values' | 'gdal-hillshade';
  readonly tolerance: { readonly abs: number; readonly rel?: number; readonly maxBadFraction?: number };
  readonly edge?: number;
}

const FUNCTIONS: Record<string, RasterFunction> = { slope, hillshade, aspect, curvature };
const cases = JSON.parse(readFileSync(resolve(ROOT, 'golden/terrain/cases.json'), 'utf8')) as Case[];

interface Raster {
  readonly info: RasterInfo;
  readonly band: Plane;
  readonly valid: Uint8Array;
}

async function readTiff(path: string): Promise<Raster> {
  const tiff = await fromFile(resolve(ROOT, path));
  const image = await tiff.getImage();
  const width = image.getWidth();
  const height = image.getHeight();
  const [band] = (await image.readRasters()) as unknown as Plane[];
  const [xmin, ymin, xmax, ymax] = image.getBoundingBox() as [number, number, number, number];
  const keys = image.getGeoKeys() as Record<string, number> | null;
  const geographic = keys?.GTModelTypeGeoKey === 2;
  const wkid = geographic ? keys?.GeographicTypeGeoKey : keys?.ProjectedCSTypeGeoKey;
  const noData = image.getGDALNoData() ?? undefined;
  const pixelType = band instanceof Float32Array ? 'F32' : band instanceof Int16Array ? 'S16' : band instanceof Uint8Array ? 'U8' : 'F64';
  const info: RasterInfo = {
    width,
    height,
    bandCount: 1,
    pixelType,
    ...(noData === undefined ? {} : { noData }),
    extent: { xmin, ymin, xmax, ymax },
    cellSize: { x: (xmax - xmin) / width, y: (ymax - ymin) / height },
    spatialReference: { ...(wkid === undefined ? {} : { wkid }), geographic },
  };
  const valid = new Uint8Array(width * height);
  for (let i = 0; i < valid.length; i++) valid[i] = noData === undefined || (band![i] !== noData && !Number.isNaN(band![i])) ? 1 : 0;
  return { info, band: band!, valid };
}

/** What the expected raster stands for at one pixel (golden/README.md), undefined for NoData. */
function expectedValue(c: Case, v: number, valid: boolean): number | undefined {
  if (!valid || Number.isNaN(v)) return undefined;
  if (c.compare === 'gdal-hillshade') return v === 0 ? undefined : Math.trunc(((v - 1) * 255) / 254);
  return v;
}

describe('terrain goldens against the kernels', () => {
  for (const c of cases) {
    it(c.id, async () => {
      const fn = FUNCTIONS[c.rule.rasterFunction.toLowerCase()];
      expect(fn, c.rule.rasterFunction).toBeDefined();
      const dem = await readTiff(c.inputs[0]!);
      const source = memorySource(`golden:${c.inputs[0]}`, dem.info, [dem.band]);
      const node = applyFunction(fn!, c.rule.rasterFunctionArguments, [source]);
      const actual = await render(node, { tileSize: 128 });
      const exp = await readTiff(c.expected);
      const { width, height } = exp.info;
      expect([node.info.width, node.info.height]).toEqual([width, height]);

      const edge = c.edge ?? 0;
      let bad = 0;
      let checked = 0;
      let maxDiff = 0;
      let sumDiff = 0;
      let first: string | undefined;
      for (let y = edge; y < height - edge; y++) {
        for (let x = edge; x < width - edge; x++) {
          const i = y * width + x;
          const e = expectedValue(c, exp.band[i]!, exp.valid[i] === 1);
          const ok = actual.mask[i] === 1;
          checked++;
          if (e === undefined || !ok) {
            if ((e === undefined) !== !ok) {
              bad++;
              first ??= `(${x}, ${y}): expected ${e ?? 'NoData'}, got ${ok ? actual.bands[0]![i] : 'NoData'}`;
            }
            continue;
          }
          const d = Math.abs(actual.bands[0]![i]! - e);
          maxDiff = Math.max(maxDiff, d);
          sumDiff += d;
          if (d > c.tolerance.abs + (c.tolerance.rel ?? 0) * Math.abs(e)) {
            bad++;
            first ??= `(${x}, ${y}): expected ${e}, got ${actual.bands[0]![i]}`;
          }
        }
      }
      console.log(
        `${c.id}: ${checked} px, max |diff| ${maxDiff.toPrecision(3)}, mean |diff| ${(sumDiff / checked).toPrecision(3)}, ${bad} bad`,
      );
      expect(bad, `${bad} of ${checked} pixels off (max |diff| ${maxDiff}); first at ${first}`).toBeLessThanOrEqual(
        Math.floor((c.tolerance.maxBadFraction ?? 0) * checked),
      );
    });
  }
});

/**
 * The chipper refuses input that cannot be what it claims: GeoJSON labels without `crs` whose
 * numbers are projected metres (RFC 7946 makes them longitude/latitude), and broken TIFFs (no
 * chip, no folder left behind). Labels entirely outside the raster are counted in the summary.
 * The raster: 30 x 30 U8, cell 1 m, EPSG:32616, top-left corner (1000, 2000), so map (x, y) =
 * pixel (x - 1000, 2000 - y).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { allocateBlock } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { encodeGeoTiff } from '../io/encode-tiff.js';
import { brokenCopies, DEM, getTag, LANDSAT, TAGS } from '../../test/broken-tiff.js';
import { gridInfo } from '../../test/helpers.js';
import { exportTrainingData } from './export.js';

const dir = mkdtempSync(join(tmpdir(), 'rf-chipper-broken-'));
const broken = brokenCopies();
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  broken.done();
});

const info = {
  ...gridInfo({ width: 30, height: 30, bandCount: 1, pixelType: 'U8', origin: { x: 1000, y: 2000 } }),
  spatialReference: { wkid: 32616, metersPerUnit: 1 },
};
const block = allocateBlock(rect(0, 0, 30, 30), 'U8', 1);
for (let i = 0; i < 900; i++) block.bands[0]![i] = i % 251;
const raster = join(dir, 'raster.tif');
writeFileSync(raster, encodeGeoTiff(block, info));

/** A GeoJSON polygon over pixels (x0, y0) - (x1, y1), in the raster's metres. */
const square = (x0: number, y0: number, x1: number, y1: number) => ({
  type: 'Feature',
  properties: { classvalue: 1 },
  geometry: {
    type: 'Polygon',
    coordinates: [
      [
        [1000 + x0, 2000 - y0],
        [1000 + x1, 2000 - y0],
        [1000 + x1, 2000 - y1],
        [1000 + x0, 2000 - y1],
        [1000 + x0, 2000 - y0],
      ],
    ],
  },
});

let n = 0;
const run = (labels: unknown, options: { dryRun?: boolean } = {}) => {
  const file = join(dir, `labels${++n}.geojson`);
  writeFileSync(file, JSON.stringify(labels));
  const out = join(dir, `out${n}`);
  return {
    out,
    result: exportTrainingData(
      { inputRaster: raster, inputClassData: file, tileSize: { x: 10, y: 10 }, metadataFormat: 'KITTI_rectangles', outputLocation: out },
      options,
    ),
  };
};

async function failure(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    return e as EngineError;
  }
  throw new Error('expected the export to fail');
}

describe('label coordinates that cannot be what the file claims', () => {
  it('a GeoJSON without crs holding projected metres is refused, with the crs member to add (it gave zero-width boxes)', async () => {
    const { out, result } = run({ type: 'FeatureCollection', features: [square(2, 3, 7, 9)] });
    const e = await failure(result);
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.path).toBe('inputClassData');
    expect(e.message).toContain('[1002, 1997]');
    expect(e.message).toContain('"crs": {"type":"name","properties":{"name":"EPSG:32616"}}');
    expect(existsSync(out)).toBe(false);
  });

  it('the same GeoJSON with the crs member gives the boxes of the metres', async () => {
    for (const name of ['EPSG:32616', 'urn:ogc:def:crs:EPSG::32616']) {
      const { out, result } = run({
        type: 'FeatureCollection',
        crs: { type: 'name', properties: { name } },
        features: [square(2, 3, 7, 9)],
      });
      const s = await result;
      expect(s.labels).toBe(1);
      expect(readFileSync(join(out, 'labels/000000000.txt'), 'utf8')).toBe(
        '1 0.00 0 0.00 2.00 3.00 7.00 9.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n',
      );
    }
  });

  it('a crs member the engine cannot read is an error at inputClassData.crs', async () => {
    const e = await failure(
      run({ type: 'FeatureCollection', crs: { type: 'link', properties: { href: 'x.prj' } }, features: [square(2, 3, 7, 9)] }).result,
    );
    expect(e).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'inputClassData.crs' });
  });

  it('labels entirely outside the raster are counted in the summary (library and dry run), not dropped in silence', async () => {
    const labels = {
      type: 'FeatureCollection',
      crs: { type: 'name', properties: { name: 'EPSG:32616' } },
      features: [square(2, 3, 7, 9), square(100, 100, 110, 110), square(-50, 2, -40, 8), square(28, 28, 35, 35)],
    };
    const s = await run(labels).result;
    expect(s.labelsOutsideRaster).toBe(2);
    expect(s.labels).toBe(2);
    const dry = await run(labels, { dryRun: true }).result;
    expect(dry.labelsOutsideRaster).toBe(2);
  });
});

describe('broken TIFFs: no chip is written', () => {
  const params = (inputRaster: string, outputLocation: string) => ({
    inputRaster,
    outputLocation,
    metadataFormat: 'Export_Tiles',
    tileSize: { x: 64, y: 64 },
  });

  it('a raster cut short fails before any chip, naming the file and the block', async () => {
    const cut = broken.cut(DEM, 'cut.tif', 300_000);
    const out = join(dir, 'cut-out');
    const e = await failure(exportTrainingData(params(cut, out)));
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toContain(cut);
    expect(e.message).toContain('strip 39');
    expect(existsSync(out)).toBe(false);
  });

  it('a block that does not decode, met half-way, leaves no output folder behind', async () => {
    // Strip 100 of 118 (rows 300-302): the chips above it are rendered before it is met.
    const garbled = broken.copy(LANDSAT, 'garbled.tif', (b) => {
      const at = getTag(b, TAGS.StripOffsets, 100);
      for (let i = at; i < at + 64; i++) b[i] = b[i]! ^ 0x5a;
    });
    const out = join(dir, 'garbled-out');
    const e = await failure(exportTrainingData(params(garbled, out)));
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toMatch(/strip 100 \(rows 300-302\) of bands 1-6 does not decode/);
    expect(existsSync(out)).toBe(false);
  });
});

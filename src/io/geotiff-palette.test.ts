/**
 * Palette GeoTIFFs (PhotometricInterpretation 3): the TIFF ColorMap becomes `info.colormap`.
 * golden/color/palette-l7-nir.tif was made by golden/color/make-goldens.py with GDAL's
 * SetColorTable, colour of value i = ((37 i) mod 256, (91 i + 17) mod 256, 255 - i); GDAL stores
 * each 8-bit colour c as 257 c. The table is also compared live with `gdalinfo -json` (skipped
 * with a warning when GDAL is absent). The 16-bit -> 8-bit rule (GDAL's multipliers) is checked on
 * hand-made tables.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { registry } from '../functions/index.js';
import { render } from '../graph/render.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { colormapFromTiff, openGeoTiff, rasterInfoOf } from './geotiff-source.js';
import { encodePng } from './encode-png.js';
import { closingOpener } from '../../test/helpers.js';
import { PNG } from 'pngjs';

// Rasters opened here are closed after each test (no file handle left to the garbage collector).
const files = closingOpener();
const openRaster = files.open;
afterEach(files.closeAll);

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const PALETTE = join(ROOT, 'golden/color/palette-l7-nir.tif');
const L7 = join(ROOT, 'golden/data/L7_ETMs.tif');

const hasGdal = spawnSync('gdalinfo', ['--version']).status === 0;
if (!hasGdal)
  console.warn('[geotiff-palette.test] gdalinfo not found: the live GDAL colour-table check is SKIPPED (install gdal-bin to run it)');

const paletteColor = (i: number): number[] => [(i * 37) % 256, (i * 91 + 17) % 256, 255 - i];

describe('palette GeoTIFF sources', () => {
  it('read the colour table into info.colormap (values 0..255, 8-bit colours, no alpha)', async () => {
    const info = await rasterInfoOf(PALETTE);
    expect(info.bandCount).toBe(1);
    expect(info.pixelType).toBe('U8');
    const cm = info.colormap!;
    expect(cm).toBeDefined();
    expect(Array.from(cm.values)).toEqual(Array.from({ length: 256 }, (_, i) => i));
    for (let i = 0; i < 256; i++) expect(Array.from(cm.rgb.subarray(3 * i, 3 * i + 3)), `entry ${i}`).toEqual(paletteColor(i));
    expect(cm.alpha).toBeUndefined();
  });

  it.skipIf(!hasGdal)('agree with gdalinfo -json colorTable', async () => {
    const r = spawnSync('gdalinfo', ['-json', PALETTE], { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } });
    const entries = (JSON.parse(r.stdout).bands[0].colorTable.entries as number[][]).map((e) => e.slice(0, 3));
    const cm = (await rasterInfoOf(PALETTE)).colormap!;
    expect(Array.from({ length: 256 }, (_, i) => Array.from(cm.rgb.subarray(3 * i, 3 * i + 3)))).toEqual(entries);
  });

  it('leave other rasters without a colormap', async () => {
    expect((await rasterInfoOf(L7)).colormap).toBeUndefined();
  });

  it('pixels are the indexes, unchanged', async () => {
    const s = await openGeoTiff(PALETTE);
    const l7 = await openGeoTiff(L7);
    try {
      const rect = { x: 10, y: 20, width: 5, height: 3 };
      expect(Array.from((await s.read(rect)).bands[0]!)).toEqual(Array.from((await l7.read(rect)).bands[3]!));
    } finally {
      await s.close();
      await l7.close();
    }
  });

  it('feed ColormapToRGB, and PNG exports of them come out in colour', async () => {
    const { root } = await buildGraph(
      { rasterFunction: 'ColormapToRGB' },
      { registry, resolveSource: bindSources({ $$: PALETTE }, openRaster) },
    );
    const rgb = await render(root, { tileSize: 64 });
    const src = await openGeoTiff(PALETTE);
    try {
      const whole = await src.read({ x: 0, y: 0, width: src.info.width, height: src.info.height });
      for (const i of [0, 1234, 50000, whole.mask.length - 1]) {
        const want = paletteColor(whole.bands[0]![i]!);
        expect([rgb.bands[0]![i], rgb.bands[1]![i], rgb.bands[2]![i]], `pixel ${i}`).toEqual(want);
      }
      const png = PNG.sync.read(Buffer.from(encodePng(whole, src.info)));
      expect(png.colorType).toBe(2);
      const i = 1234;
      expect(Array.from(png.data.subarray(4 * i, 4 * i + 3))).toEqual(paletteColor(whole.bands[0]![i]!));
    } finally {
      await src.close();
    }
  });
});

describe('colormapFromTiff (16-bit TIFF colours -> 8 bits, as GDAL reads them)', () => {
  // Tables of 4 entries: reds, then greens, then blues.
  const rgbOf = (t: number[]) => Array.from(colormapFromTiff(t).rgb);

  it('divides by 257 (GDAL writes c x 257), truncating', () => {
    expect(rgbOf([0, 257, 65535, 514, 0, 0, 0, 0, 257 * 200, 257 * 200 + 256, 100 * 257, 65534])).toEqual([
      0, 0, 200, 1, 0, 200, 255, 0, 100, 2, 0, 254,
    ]);
  });

  it('divides by 256 when every value is a multiple of 256 (and one is not 0)', () => {
    expect(rgbOf([256, 512, 65280, 0, 0, 0, 0, 0, 256 * 9, 0, 0, 0])).toEqual([1, 0, 9, 2, 0, 0, 255, 0, 0, 0, 0, 0]);
  });

  it('takes values as 8-bit when all are at most 255 (writers that store 8-bit colours)', () => {
    expect(rgbOf([10, 20, 30, 255, 1, 2, 3, 4, 0, 0, 0, 7])).toEqual([10, 1, 0, 20, 2, 0, 30, 3, 0, 255, 4, 7]);
  });

  it('an all-zero table is black', () => {
    const cm = colormapFromTiff(new Array(12).fill(0));
    expect(Array.from(cm.values)).toEqual([0, 1, 2, 3]);
    expect(Array.from(cm.rgb)).toEqual(new Array(12).fill(0));
  });
});

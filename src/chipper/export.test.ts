/**
 * Known-answer tests of the exporter on a small synthetic raster (30 x 30, cell 1 m, EPSG:32616,
 * top-left corner at (1000, 2000)) with hand-placed Esri JSON labels in the raster's own CRS, so
 * map (x, y) = pixel (x - 1000, 2000 - y). Expected boxes, rows and class pixels are derived by
 * hand from the contract's rules (chip pixel space, clipping, pixel-centre rasterization).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { allocateBlock } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { encodeGeoTiff } from '../io/encode-tiff.js';
import { closingOpener, gridInfo } from '../../test/helpers.js';
import { createPool } from '../workers/pool.js';
import { exportTrainingData } from './export.js';
import { createJobManager } from './job.js';

// Rasters opened here are closed after each test (no file handle left to the garbage collector).
const files = closingOpener();
const openRaster = files.open;
afterEach(files.closeAll);

const hasGdal =
  spawnSync('gdalinfo', ['--version']).status === 0 && spawnSync('/usr/bin/python3', ['-c', 'from osgeo import gdal']).status === 0;
if (!hasGdal)
  console.warn(
    '[chipper export.test] gdalinfo or python3-gdal not found: the GDAL/xml.etree cross-checks are SKIPPED (install gdal-bin and python3-gdal to run them)',
  );

const dir = mkdtempSync(join(tmpdir(), 'rf-chipper-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The raster: 3 x U8 bands, band b pixel (x, y) = (x + 7y + 50b) % 256.
const info = {
  ...gridInfo({ width: 30, height: 30, bandCount: 3, pixelType: 'U8', origin: { x: 1000, y: 2000 } }),
  spatialReference: { wkid: 32616, metersPerUnit: 1 },
};
const block = allocateBlock(rect(0, 0, 30, 30), 'U8', 3);
for (let b = 0; b < 3; b++) for (let i = 0; i < 900; i++) block.bands[b]![i] = ((i % 30) + 7 * Math.floor(i / 30) + 50 * b) % 256;
const rasterPath = join(dir, 'raster.tif');
writeFileSync(rasterPath, encodeGeoTiff(block, info));

/** A rectangle polygon from pixel corners (x0, y0) - (x1, y1), in map coordinates. */
const box = (x0: number, y0: number, x1: number, y1: number): number[][][] => [
  [
    [1000 + x0, 2000 - y0],
    [1000 + x0, 2000 - y1],
    [1000 + x1, 2000 - y1],
    [1000 + x1, 2000 - y0],
    [1000 + x0, 2000 - y0],
  ],
];
const labels = {
  spatialReference: { wkid: 32616 },
  features: [
    // A: class 1, inside chip (0, 0): pixels 2..7 x 3..9.
    { attributes: { classvalue: 1, classname: 'pond' }, geometry: { rings: box(2, 3, 7, 9) } },
    // B: class 2, straddles chips (0, 10) and (10, 10): pixels 8..12 x 12..15 (half in each).
    { attributes: { classvalue: 2, classname: 'roof' }, geometry: { rings: box(8, 12, 12, 15) } },
    // C: class 1 point at pixel (15.5, 5.5), buffered to a circle of radius 2 -> chip (10, 0).
    { attributes: { classvalue: 1, classname: 'pond' }, geometry: { x: 1015.5, y: 1994.5 } },
  ],
};
const labelPath = join(dir, 'labels.json');
writeFileSync(labelPath, JSON.stringify(labels));

const base = { inputRaster: rasterPath, inputClassData: labelPath, tileSize: { x: 10, y: 10 }, bufferRadius: 2 };
let n = 0;
const run = (extra: Record<string, unknown>, options = {}) => {
  const out = join(dir, `out${++n}`);
  return exportTrainingData({ ...base, outputLocation: out, ...extra }, options).then((s) => ({ s, out }));
};
const read = (out: string, f: string): string => readFileSync(join(out, f), 'utf8');

/** Every file under `root` (relative path -> bytes), for byte-for-byte comparisons. */
function snapshot(root: string): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else m.set(relative(root, p), readFileSync(p));
    }
  };
  walk(root);
  return m;
}

describe('exportTrainingData', () => {
  it('KITTI: exact rows, clipped boxes, labelled chips only (exportAllTiles false)', async () => {
    const { s, out } = await run({ metadataFormat: 'KITTI_rectangles' });
    // Chips in row-major order: (0,0) A; (10,0) C; (0,10) B left half; (10,10) B right half. 5 empty chips skipped.
    expect([s.chips, s.candidates, s.skipped.noLabels]).toEqual([4, 9, 5]);
    expect(read(out, 'labels/000000000.txt')).toBe('1 0.00 0 0.00 2.00 3.00 7.00 9.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    expect(read(out, 'labels/000000001.txt')).toBe('1 0.00 0 0.00 3.50 3.50 7.50 7.50 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    expect(read(out, 'labels/000000002.txt')).toBe('2 0.00 0 0.00 8.00 2.00 10.00 5.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    expect(read(out, 'labels/000000003.txt')).toBe('2 0.00 0 0.00 0.00 2.00 2.00 5.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    expect(read(out, 'map.txt').split('\n')[0]).toBe('images\\000000000.tif  labels\\000000000.txt ');
    // Every row has 15 numeric columns and no negative value (the consumer's strict parser).
    for (const f of readdirSync(join(out, 'labels'))) {
      for (const line of read(out, `labels/${f}`).trim().split('\n')) {
        const cols = line.split(' ');
        expect(cols).toHaveLength(15);
        expect(cols.every((c) => /^\d+(\.\d+)?$/.test(c))).toBe(true);
      }
    }
  });

  it('PASCAL VOC: the vendor element set, numeric class names, the chip pixels and georeferencing', async () => {
    const { out } = await run({ metadataFormat: 'PASCAL_VOC_rectangles', vocExtras: true });
    const xml = read(out, 'labels/000000002.xml');
    expect(xml).toContain('<filename>000000002.tif</filename>');
    expect(xml).toContain('<name>2</name>');
    expect(xml).toContain('<truncated>1</truncated>');
    expect(xml).toMatch(/<xmin>8\.00<\/xmin>\s*<ymin>2\.00<\/ymin>\s*<xmax>10\.00<\/xmax>\s*<ymax>5\.00<\/ymax>/);
    // Chip 2 is the window (0, 10): its pixels are the raster's rows 10..19.
    const chip = await openRaster(join(out, 'images/000000002.tif'));
    const px = await chip.read(rect(0, 0, 10, 10));
    expect([px.bands[0]![0], px.bands[2]![9 * 10 + 9]]).toEqual([(0 + 70) % 256, (9 + 7 * 19 + 100) % 256]);
    expect([chip.info.extent.xmin, chip.info.extent.ymax]).toEqual([1000, 1990]);
    const emd = JSON.parse(read(out, 'geo_model_definition.emd')) as Record<string, unknown>;
    expect(emd.MetaDataMode).toBe('PASCAL_VOC_rectangles');
    expect(emd.Classes).toEqual([
      { Value: 1, Name: 'pond', Color: expect.any(Array) },
      { Value: 2, Name: 'roof', Color: expect.any(Array) },
    ]);
    const eas = JSON.parse(read(out, 'geo_accumulated_stats.json')) as {
      FeatureStats: { NumFeaturesPerClass: number[] };
      NumTiles: number;
      NextTileIndex: number;
    };
    expect([eas.NumTiles, eas.NextTileIndex, eas.FeatureStats.NumFeaturesPerClass]).toEqual([4, 4, [2, 2]]);
  });

  it.skipIf(!hasGdal)('VOC parses with xml.etree; GDAL reads TIFF and MRF chips with the right georeferencing', async () => {
    const { out } = await run({ metadataFormat: 'PASCAL_VOC_rectangles', chipFormat: 'MRF' });
    const py = spawnSync(
      '/usr/bin/python3',
      [
        '-c',
        `
import xml.etree.ElementTree as ET, sys
from osgeo import gdal
r = ET.parse(sys.argv[1]).getroot()
o = r.find('object'); b = o.find('bndbox')
print(r.find('filename').text, o.find('name').text, [float(b.find(k).text) for k in ('xmin','ymin','xmax','ymax')])
d = gdal.Open(sys.argv[2])
print(d.GetDriver().ShortName, d.RasterXSize, d.RasterCount, d.GetGeoTransform(), d.GetRasterBand(3).ReadAsArray()[9, 9])
`,
        join(out, 'labels/000000002.xml'),
        join(out, 'images/000000002.mrf'),
      ],
      { encoding: 'utf8' },
    );
    expect(py.stderr).toBe('');
    const [voc, mrf] = py.stdout.trim().split('\n');
    expect(voc).toBe('000000002.mrf 2 [8.0, 2.0, 10.0, 5.0]');
    expect(mrf).toBe(`MRF 10 3 (1000.0, 1.0, 0.0, 1990.0, 0.0, -1.0) ${(9 + 7 * 19 + 100) % 256}`);
  });

  it('Classified_Tiles: class rasters by pixel centre, class pixel statistics', async () => {
    const { out } = await run({ metadataFormat: 'Classified_Tiles' });
    const lab = await openRaster(join(out, 'labels/000000000.tif'));
    const px = await lab.read(rect(0, 0, 10, 10));
    const ones: number[] = [];
    px.bands[0]!.forEach((v, i) => v === 1 && ones.push(i));
    // Pixels 2..6 x 3..8 (centres inside [2, 7] x [3, 9]): 5 x 6 = 30.
    expect(ones.length).toBe(30);
    expect(ones[0]).toBe(3 * 10 + 2);
    const eas = JSON.parse(read(out, 'geo_accumulated_stats.json')) as { ClassPixelStats?: unknown; FeatureStats: unknown };
    expect(eas.FeatureStats).toBeDefined();
  });

  it('RCNN_Masks: one folder per class name, instance ids, negative chips left out of map.txt', async () => {
    const { out } = await run({ metadataFormat: 'RCNN_Masks', context: { exportAllTiles: true } });
    expect(readdirSync(join(out, 'labels')).sort()).toEqual(['pond', 'roof']);
    const m = await openRaster(join(out, 'labels/roof/000000003.tif'));
    const px = await m.read(rect(0, 0, 10, 10));
    expect(px.bands[0]![2 * 10 + 8]).toBe(1); // chip (0, 10) holds B's left half: pixels 8..9 x 2..4
    expect(px.bands[0]![2 * 10 + 7]).toBe(0);
    const lines = read(out, 'map.txt').trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toBe('images\\000000000.tif  labels\\pond\\000000000.tif ');
  });

  it('rotation: an extra chip per angle with boxes from the rotated geometry', async () => {
    const { s, out } = await run({
      metadataFormat: 'KITTI_rectangles',
      rotationAngle: 90,
      context: { extent: { xmin: 1000, ymin: 1990, xmax: 1010, ymax: 2000 } },
    });
    expect(s.chips).toBe(2);
    // Box [2,3]-[7,9] about the centre (5, 5), turned 90 degrees counter-clockwise: [3,3]-[9,8].
    expect(read(out, 'labels/000000001.txt')).toBe('1 0.00 0 0.00 3.00 3.00 9.00 8.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    const aux = read(out, 'images/000000001.tif.aux.xml');
    expect(aux).toContain('<SRS>EPSG:32616</SRS>');
    const manifest = JSON.parse(read(out, 'manifest.json')) as { chips: { angle: number }[] };
    expect(manifest.chips.map((c) => c.angle)).toEqual([0, 90]);
  });

  it('minPolygonOverlapRatio drops mostly-outside parts; inputMaskPolygons keeps chips fully inside', async () => {
    const { s, out } = await run({ metadataFormat: 'KITTI_rectangles', minPolygonOverlapRatio: 0.6 });
    expect(s.chips).toBe(2); // B is half in each chip: dropped from both, and those chips have no label left
    expect(existsSync(join(out, 'labels/000000002.txt'))).toBe(false);
    const mask = { spatialReference: { wkid: 32616 }, features: [{ attributes: {}, geometry: { rings: box(0, 0, 20, 10.5) } }] };
    const m = await run({ metadataFormat: 'KITTI_rectangles', inputMaskPolygons: mask, context: { exportAllTiles: true } });
    expect([m.s.chips, m.s.skipped.outsideMask]).toEqual([2, 7]);
  });

  it('Labeled_Tiles: one chip per feature, centred, blackened around it', async () => {
    const { s, out } = await run({ metadataFormat: 'Labeled_Tiles', tileSize: { x: 8, y: 8 }, blackenAroundFeature: true });
    expect(s.chips).toBe(3);
    const xml = read(out, 'labels/000000000.xml');
    expect(xml).toContain('<name>1</name>');
    // Feature A spans [2,7] x [3,9]: centre (4.5, 6) -> window x = round(0.5) = 1, y = 2; box [1,1]-[6,7].
    expect(xml).toMatch(/<xmin>1\.00<\/xmin>\s*<ymin>1\.00<\/ymin>\s*<xmax>6\.00<\/xmax>\s*<ymax>7\.00<\/ymax>/);
    const chip = await (await openRaster(join(out, 'images/000000000.tif'))).read(rect(0, 0, 8, 8));
    expect(chip.bands[0]![0]).toBe(0); // outside the feature: black
    expect(chip.bands[0]![2 * 8 + 2]).toBe((3 + 7 * 4) % 256); // inside: raster pixel (3, 4)
    const emd = JSON.parse(read(out, 'geo_model_definition.emd')) as Record<string, unknown>;
    expect([emd.BlackenAroundFeature, emd.CropTileMode]).toEqual([true, 'Fixed_Size']);
  });

  it('Imagenet, MultiLabeled_Tiles and Export_Tiles folder shapes', async () => {
    const img = await run({ metadataFormat: 'Imagenet', tileSize: { x: 8, y: 8 } });
    expect(readdirSync(join(img.out, 'images')).sort()).toEqual(['pond', 'roof']);
    expect(read(img.out, 'map.txt').split('\n')[0]).toBe('images\\pond\\000000000.tif  labels\\000000000.xml ');
    const multi = await run({ metadataFormat: 'MultiLabeled_Tiles' });
    expect(read(multi.out, 'labels/000000000.xml')).toContain('<name>pond</name>');
    const ex = await run({ metadataFormat: 'Export_Tiles', inputClassData: undefined });
    expect([ex.s.chips, existsSync(join(ex.out, 'labels'))]).toEqual([9, false]);
    expect(read(ex.out, 'map.txt').split('\n')[0]).toBe('images\\000000000.tif ');
  });

  it('COCO and YOLO sets from the same run; a spatial train/validation split in the manifest', async () => {
    const { out } = await run({
      metadataFormat: 'PASCAL_VOC_rectangles',
      labelSets: ['COCO', 'YOLO'],
      validationFraction: 0.5,
      splitBlockSize: 1,
    });
    const coco = JSON.parse(read(out, 'coco/annotations.json')) as {
      images: unknown[];
      annotations: { bbox: number[]; category_id: number }[];
      categories: unknown[];
    };
    expect(coco.images).toHaveLength(4);
    expect(coco.annotations[0]).toMatchObject({ bbox: [2, 3, 5, 6], category_id: 1 });
    expect(read(out, 'yolo/labels/000000000.txt')).toBe('0 0.450000 0.600000 0.500000 0.600000\n');
    const manifest = JSON.parse(read(out, 'manifest.json')) as { chips: { split: string }[] };
    expect(new Set(manifest.chips.map((c) => c.split)).size).toBeGreaterThan(0);
    expect(read(out, 'train.txt').split('\n').length + read(out, 'valid.txt').split('\n').length - 2).toBe(4);
  });

  it('the same bytes for 0 and 2 workers', async () => {
    const a = await run({ metadataFormat: 'Classified_Tiles', context: { exportAllTiles: true } });
    const pool = createPool({ size: 2 });
    const b = await run({ metadataFormat: 'Classified_Tiles', context: { exportAllTiles: true } }, { pool }).finally(() => pool.destroy());
    expect(snapshot(b.out)).toEqual(snapshot(a.out));
  });

  it('resume after an interruption ends with the same bytes as an uninterrupted run', async () => {
    const whole = await run({ metadataFormat: 'PASCAL_VOC_rectangles', context: { exportAllTiles: true } });
    const out = join(dir, 'resumed');
    const params = { ...base, outputLocation: out, metadataFormat: 'PASCAL_VOC_rectangles', context: { exportAllTiles: true } };
    let calls = 0;
    await expect(
      exportTrainingData(params, {
        onProgress: () => {
          if (++calls === 5) throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    expect(existsSync(join(out, '.rasterflow-journal.ndjson'))).toBe(true);
    expect(existsSync(join(out, 'geo_accumulated_stats.json'))).toBe(false);
    await expect(exportTrainingData(params)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'outputLocation' });
    const s = await exportTrainingData({ ...params, resume: true });
    expect(s.resumedFrom).toBe(4);
    expect(snapshot(out)).toEqual(snapshot(whole.out));
  });

  it('appends with startIndex, merging statistics', async () => {
    const first = await run({ metadataFormat: 'KITTI_rectangles' });
    await expect(exportTrainingData({ ...base, outputLocation: first.out, metadataFormat: 'KITTI_rectangles' })).rejects.toMatchObject({
      path: 'outputLocation',
    });
    const s = await exportTrainingData({
      ...base,
      outputLocation: first.out,
      metadataFormat: 'KITTI_rectangles',
      context: { startIndex: 4 },
    });
    expect([s.firstIndex, s.nextIndex]).toEqual([4, 8]);
    const eas = JSON.parse(read(first.out, 'geo_accumulated_stats.json')) as { NumTiles: number; BandStatsState: { Num: number }[] };
    expect([eas.NumTiles, eas.BandStatsState[0]!.Num]).toEqual([8, 800]);
    expect(read(first.out, 'map.txt').trim().split('\n')).toHaveLength(8);
  });

  it('a dry run counts without writing', async () => {
    const { s, out } = await run({ metadataFormat: 'KITTI_rectangles' }, { dryRun: true });
    expect([s.dryRun, s.chips, s.labels, s.bytes]).toEqual([true, 4, 4, 4 * 10 * 10 * 3]);
    expect(existsSync(out)).toBe(false);
  });

  it.each([
    [{ inputRaster: undefined }, 'inputRaster'],
    [{ metadataFormat: 'YOLO' }, 'metadataFormat'],
    [{ chipFormat: 'PNG', inputRaster: join(dir, 'six.tif') }, 'chipFormat'],
    [{ tileSize: { x: 64, y: 64 } }, 'tileSize'],
    [{ tileSize: { x: 0, y: 4 } }, 'tileSize.x'],
    [
      {
        inputClassData: {
          type: 'FeatureCollection',
          features: [{ type: 'Feature', properties: { value: 0 }, geometry: { type: 'Point', coordinates: [0, 0] } }],
        },
      },
      'inputClassData.features[0]',
    ],
    [{ inputClassData: rasterPath.replace('raster.tif', 'missing.json') }, 'inputClassData'],
    [{ context: { startIndex: -1 } }, 'context.startIndex'],
    [{ additionalInputRaster: rasterPath }, 'additionalInputRaster'],
  ])('refuses bad parameters before writing (%j)', async (extra, path) => {
    const six = allocateBlock(rect(0, 0, 30, 30), 'U8', 6);
    writeFileSync(join(dir, 'six.tif'), encodeGeoTiff(six, { ...info, bandCount: 6 }));
    const out = join(dir, `bad${++n}`);
    await expect(exportTrainingData({ ...base, outputLocation: out, ...extra })).rejects.toMatchObject({ path });
    expect(existsSync(out)).toBe(false);
  });

  it('a class raster as labels: Classified_Tiles copies it, KITTI boxes its 4-connected components', async () => {
    const cls = allocateBlock(rect(0, 0, 30, 30), 'U8', 1);
    for (let y = 12; y < 15; y++) for (let x = 3; x < 6; x++) cls.bands[0]![y * 30 + x] = 3; // chip (0, 10): pixels 3..5 x 2..4
    for (let y = 0; y < 2; y++) for (let x = 20; x < 30; x++) cls.bands[0]![y * 30 + x] = 5; // chip (20, 0): rows 0..1
    const classPath = join(dir, 'classes.tif');
    writeFileSync(classPath, encodeGeoTiff(cls, { ...info, bandCount: 1 }));
    const c = await run({ metadataFormat: 'Classified_Tiles', inputClassData: classPath });
    expect(c.s.chips).toBe(9); // a class raster labels every chip (0 = background)
    const lab = await (await openRaster(join(c.out, 'labels/000000003.tif'))).read(rect(0, 0, 10, 10));
    expect([lab.bands[0]![2 * 10 + 3], lab.bands[0]![2 * 10 + 6]]).toEqual([3, 0]);
    const eas = JSON.parse(read(c.out, 'geo_accumulated_stats.json')) as {
      ClassPixelStats: { NumPixelsPerClass: number[] };
      OutputFeatures: boolean;
    };
    expect([eas.OutputFeatures, eas.ClassPixelStats.NumPixelsPerClass]).toEqual([false, [9, 20]]);
    const k = await run({ metadataFormat: 'KITTI_rectangles', inputClassData: classPath });
    expect(read(k.out, 'labels/000000003.txt')).toBe('3 0.00 0 0.00 3.00 2.00 6.00 5.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    expect(read(k.out, 'labels/000000002.txt')).toBe('5 0.00 0 0.00 0.00 0.00 10.00 2.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
  });

  it('PIXEL_SPACE labels, several raster items (processAllRasterItems), PNG chips from a rule with world files', async () => {
    const pixelLabels = {
      type: 'FeatureCollection',
      features: [
        {
          type: 'Feature',
          properties: { value: 4 },
          geometry: { type: 'Polygon', coordinates: box(2, 3, 7, 9).map((r) => r.map(([x, y]) => [x! - 1000, 2000 - y!])) },
        },
      ],
    };
    const rule = { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2, 1, 0], Raster: { url: rasterPath } } };
    const { s, out } = await run({
      inputRaster: [rule, rasterPath],
      processAllRasterItems: true,
      referenceSystem: 'PIXEL_SPACE',
      inputClassData: pixelLabels,
      metadataFormat: 'KITTI_rectangles',
      chipFormat: 'PNG',
    });
    expect(s.chips).toBe(2); // chip (0, 0) of each item
    expect(read(out, 'labels/000000001.txt')).toBe('4 0.00 0 0.00 2.00 3.00 7.00 9.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    expect(read(out, 'images/000000000.pgw').split('\n').map(Number).slice(0, 6)).toEqual([1, 0, 0, -1, 1000.5, 1999.5]);
    const emd = JSON.parse(read(out, 'geo_model_definition.emd')) as { ImageSpaceUsed: string; InputRastersProps: { RasterCount: number } };
    expect([emd.ImageSpaceUsed, emd.InputRastersProps.RasterCount]).toEqual(['PIXEL_SPACE', 2]);
    await expect(run({ inputRaster: [rasterPath, rasterPath] })).rejects.toMatchObject({ path: 'processAllRasterItems' });
  });

  it('context.cellSize resamples through the engine (Resample), labels follow the new grid', async () => {
    const { s, out } = await run({
      metadataFormat: 'KITTI_rectangles',
      tileSize: { x: 5, y: 5 },
      bufferRadius: 0,
      context: { cellSize: 2 },
    });
    // 15 x 15 pixels of 2 m: A (map 1002..1007 x 1991..1997) is pixels 1..3.5 x 1.5..4.5 of chip (0, 0).
    expect(read(out, 'labels/000000000.txt')).toBe('1 0.00 0 0.00 1.00 1.50 3.50 4.50 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n');
    const chip = await openRaster(join(out, 'images/000000000.tif'));
    expect([chip.info.width, chip.info.cellSize.x]).toEqual([5, 2]);
    expect(s.candidates).toBe(9);
  });

  it('runs as a job: submitted, executing with step progress, succeeded with outLocation', async () => {
    const jobs = createJobManager();
    expect(() => jobs.submit({ outputLocation: 'x' })).toThrow(/inputRaster/);
    const out = join(dir, 'job');
    const { jobId, jobStatus } = jobs.submit({ ...base, outputLocation: out, metadataFormat: 'KITTI_rectangles' });
    expect(jobStatus).toBe('geoJobSubmitted');
    expect(() => jobs.result(jobId, 'outLocation')).toThrow(/no results yet/);
    const done = await jobs.wait(jobId);
    expect(done.jobStatus).toBe('geoJobSucceeded');
    expect(done.results).toEqual({ outLocation: { paramUrl: 'results/outLocation' } });
    expect(jobs.result(jobId, 'outLocation')).toEqual({ paramName: 'outLocation', dataType: 'GPString', value: { uri: out } });
    expect(() => jobs.cancel(jobId)).toThrow(/cannot be cancelled/);
    expect(jobs.status(jobId, { returnMessages: false }).messages).toBeUndefined();
  });

  it('a cancelled job stops between chips and is never taken for a finished export', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const jobs = createJobManager({
      run: (params, options) =>
        exportTrainingData(params, {
          ...options,
          onProgress: (p) => {
            options.onProgress?.(p);
            if (p.done === 2) release();
          },
        }),
    });
    const out = join(dir, 'cancelled');
    const { jobId } = jobs.submit({ ...base, outputLocation: out, metadataFormat: 'KITTI_rectangles', context: { exportAllTiles: true } });
    await gate;
    expect(jobs.cancel(jobId).jobStatus).toBe('geoJobCancelling');
    expect((await jobs.wait(jobId)).jobStatus).toBe('geoJobCancelled');
    expect(existsSync(join(out, 'geo_accumulated_stats.json'))).toBe(false);
  });
});

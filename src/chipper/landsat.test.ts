/**
 * The real case: the Landsat 7 sample (golden/data/L7_ETMs.tif, SIRGAS 2000 / UTM 25S) with the
 * committed hand-drawn labels (golden/chipper/l7-labels.geojson, WGS 84: water and built areas,
 * made by golden/chipper/make-labels.py) exported in every metadata format, then checked by
 * independent readers: Python's xml.etree for every VOC-shaped label, GDAL for the georeferencing
 * of TIFF and MRF chips (skipped with a message without GDAL), a strict column parser for KITTI,
 * and a structural check of COCO (pycocotools is not packaged by Debian).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportTrainingData } from './export.js';
import { METADATA_FORMATS } from './params.js';

const ROOT = resolve(import.meta.dirname, '../..');
const RASTER = join(ROOT, 'golden/data/L7_ETMs.tif');
const LABELS = join(ROOT, 'golden/chipper/l7-labels.geojson');
const hasGdal =
  spawnSync('gdalinfo', ['--version']).status === 0 && spawnSync('/usr/bin/python3', ['-c', 'from osgeo import gdal']).status === 0;
if (!hasGdal)
  console.warn(
    '[chipper landsat.test] GDAL not found: the xml.etree and GDAL read-back checks are SKIPPED (install gdal-bin and python3-gdal)',
  );

const dir = mkdtempSync(join(tmpdir(), 'rf-landsat-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const exportAs = (format: string, extra: Record<string, unknown> = {}) =>
  exportTrainingData({
    inputRaster: RASTER,
    inputClassData: LABELS,
    outputLocation: join(dir, format),
    metadataFormat: format,
    tileSize: { x: 64, y: 64 },
    strideSize: { x: 48, y: 48 },
    ...(format === 'CycleGAN'
      ? {
          additionalInputRaster: {
            url: RASTER,
            renderingRule: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2, 1, 0] } },
          },
        }
      : {}),
    ...(format === 'Panoptic_Segmentation' ? { inputInstanceData: LABELS } : {}),
    ...extra,
  });

describe('Landsat sample, every metadata format', () => {
  it.each(METADATA_FORMATS.map((f) => [f]))('%s', async (format) => {
    const s = await exportAs(format, format === 'PASCAL_VOC_rectangles' ? { labelSets: ['COCO', 'YOLO'], chipFormat: 'MRF' } : {});
    const out = join(dir, format);
    expect(s.chips).toBeGreaterThan(0);
    const roots = format === 'CycleGAN' ? [join(out, 'A'), join(out, 'B')] : [out];
    for (const root of roots) {
      for (const f of ['map.txt', 'geo_model_definition.emd', 'geo_accumulated_stats.json', 'stats.txt'])
        expect(existsSync(join(root, f)), `${root}/${f}`).toBe(true);
      const eas = JSON.parse(readFileSync(join(root, 'geo_accumulated_stats.json'), 'utf8')) as { MetaDataMode: string; NumBands: number };
      expect(eas.MetaDataMode).toBe(format);
      // The consumer reads the first map.txt line: its first token must be a chip that exists.
      const first = readFileSync(join(root, 'map.txt'), 'utf8').split('\n')[0]!.trim().split(/\s+/);
      expect(existsSync(join(root, first[0]!.replace(/\\/g, '/')))).toBe(true);
      if (first[1] !== undefined) expect(existsSync(join(root, first[first.length - 1]!.replace(/\\/g, '/')))).toBe(true);
    }
    if (format === 'KITTI_rectangles') {
      for (const f of readdirSync(join(out, 'labels'))) {
        for (const line of readFileSync(join(out, 'labels', f), 'utf8')
          .split('\n')
          .filter(Boolean)) {
          const cols = line.split(' ');
          expect(cols).toHaveLength(15);
          expect(
            cols.every((c) => /^\d+(\.\d+)?$/.test(c)),
            line,
          ).toBe(true);
          const [l, t, r, b] = cols.slice(4, 8).map(Number) as [number, number, number, number];
          expect(l >= 0 && t >= 0 && r <= 64 && b <= 64 && l <= r && t <= b, line).toBe(true);
        }
      }
    }
    if (format === 'PASCAL_VOC_rectangles') {
      const coco = JSON.parse(readFileSync(join(out, 'coco/annotations.json'), 'utf8')) as {
        images: { id: number }[];
        annotations: { image_id: number; bbox: number[]; category_id: number }[];
        categories: { id: number }[];
      };
      const ids = new Set(coco.images.map((i) => i.id));
      const cats = new Set(coco.categories.map((c) => c.id));
      expect(coco.annotations.length).toBeGreaterThan(0);
      for (const a of coco.annotations) {
        expect(ids.has(a.image_id) && cats.has(a.category_id)).toBe(true);
        expect(a.bbox.every((v) => v >= 0 && v <= 64)).toBe(true);
      }
    }
  });

  it.skipIf(!hasGdal)('VOC labels parse with xml.etree; MRF and TIFF chips carry the georeferencing GDAL expects', () => {
    const py = spawnSync(
      '/usr/bin/python3',
      [
        '-c',
        `
import glob, sys, xml.etree.ElementTree as ET
from osgeo import gdal
n = 0
for fmt in ('PASCAL_VOC_rectangles', 'Labeled_Tiles', 'MultiLabeled_Tiles', 'Imagenet'):
    for f in glob.glob(sys.argv[1] + '/' + fmt + '/labels/*.xml'):
        r = ET.parse(f).getroot()
        assert r.tag == 'annotation' and r.find('size/width').text == '64', f
        for o in r.findall('object'):
            b = [float(o.find('bndbox/' + k).text) for k in ('xmin', 'ymin', 'xmax', 'ymax')]
            assert 0 <= b[0] <= b[2] <= 64 and 0 <= b[1] <= b[3] <= 64, (f, b)
        n += 1
src = gdal.Open(sys.argv[2]); gt0 = src.GetGeoTransform()
for chip, col, row in ((sys.argv[1] + '/PASCAL_VOC_rectangles/images/000000000.mrf', None, None), (sys.argv[1] + '/Classified_Tiles/images/000000000.tif', None, None)):
    d = gdal.Open(chip)
    gt = d.GetGeoTransform()
    col = round((gt[0] - gt0[0]) / gt0[1]); row = round((gt[3] - gt0[3]) / gt0[5])
    assert abs(gt[1] - gt0[1]) < 1e-6 and abs(gt[5] - gt0[5]) < 1e-6, gt
    assert d.GetSpatialRef().GetAuthorityCode(None) == '31985', chip
    a = d.GetRasterBand(4).ReadAsArray(); b = src.GetRasterBand(4).ReadAsArray(col, row, 64, 64)
    assert (a == b).all(), chip
print(n)
`,
        dir,
        RASTER,
      ],
      { encoding: 'utf8' },
    );
    expect(py.stderr).toBe('');
    expect(Number(py.stdout.trim())).toBeGreaterThan(10);
  });
});

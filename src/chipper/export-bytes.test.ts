/**
 * An export keeps its bytes. A resume after a hard kill ends with the bytes of an uninterrupted
 * run, even when the kill left a temporary file behind. And two representative exports are pinned
 * by one hash each, so that a change to the exporter meant to keep its output (a refactor) shows
 * any file that moved. The hash covers the sorted file list, the bytes of every text file (labels,
 * sidecars, map.txt, manifest, EMD, EAS, stats, COCO, YOLO, split lists) and the decoded pixels
 * and mask of every raster: rasters are compared decoded (TIFF and MRF by our reader, PNG by
 * pngjs), never as encoded bytes, so a new byte layout of an encoder does not move the pin.
 * The input is the Landsat 7 sample with its labels, as in landsat.test.ts. The expected hashes
 * were taken from the exporter before its split into label writers (issue 16), whose output the
 * split kept byte for byte.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, relative, resolve } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { rect } from '../core/rect.js';
import { closingOpener } from '../../test/helpers.js';
import { exportTrainingData, type ExportProgress } from './export.js';

const files = closingOpener();
afterEach(files.closeAll);

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'rf-chipper-bytes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The real case of landsat.test.ts: the Landsat 7 sample and its hand-drawn labels (water, built areas).
const LABELS = join(ROOT, 'golden/chipper/l7-labels.geojson');
const RASTER = join(ROOT, 'golden/data/L7_ETMs.tif');
const base = { inputRaster: RASTER, inputClassData: LABELS, tileSize: { x: 64, y: 64 }, strideSize: { x: 48, y: 48 } };
/** Three of the six bands, for PNG chips. */
const rgb = { url: RASTER, renderingRule: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2, 1, 0] } } };

const RASTERS = new Set(['.tif', '.png', '.mrf']);

/** One hash over the export folder: file list, text bytes, decoded raster pixels and masks. */
async function folderHash(root: string): Promise<string> {
  const paths: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else paths.push(relative(root, p));
    }
  };
  walk(root);
  const hash = createHash('sha256');
  for (const path of paths.sort()) {
    hash.update(`${path}\n`);
    const ext = extname(path);
    if (ext === '.idx' || ext === '.pzp') continue; // MRF data and index: read through the .mrf
    if (!RASTERS.has(ext)) {
      hash.update(readFileSync(join(root, path)));
      continue;
    }
    if (ext === '.png') {
      const png = PNG.sync.read(readFileSync(join(root, path)));
      hash.update(`${png.width} ${png.height}\n`);
      hash.update(png.data);
      continue;
    }
    const src = await files.open(join(root, path));
    const { width, height, bandCount, pixelType } = src.info;
    const b = await src.read(rect(0, 0, width, height));
    hash.update(`${width} ${height} ${bandCount} ${pixelType}\n`);
    for (const band of b.bands) hash.update(new Uint8Array(band.buffer, band.byteOffset, band.byteLength));
    hash.update(b.mask);
  }
  return hash.digest('hex').slice(0, 16);
}

describe('representative exports keep their output', () => {
  it.each([
    [
      'PASCAL VOC, rotated PNG chips from a rule, COCO and YOLO, a validation split',
      {
        metadataFormat: 'PASCAL_VOC_rectangles',
        inputRaster: rgb,
        chipFormat: 'PNG',
        rotationAngle: 90,
        labelSets: ['COCO', 'YOLO'],
        vocExtras: true,
        validationFraction: 0.4,
        splitBlockSize: 1,
      },
      '9357b1be9f4af92d',
    ],
    [
      'Panoptic_Segmentation: class rasters and instance masks, TIFF chips',
      { metadataFormat: 'Panoptic_Segmentation', inputInstanceData: LABELS },
      'f985fe2f1210b3a1',
    ],
  ])('%s', async (name, params, expected) => {
    const out = join(dir, name.split(/\W/)[0]!);
    await exportTrainingData({ ...base, outputLocation: out, ...params });
    expect(await folderHash(out)).toBe(expected);
  });
});

describe('a resume after a hard kill', () => {
  it('removes the temporary files the kill left and ends with the bytes of an uninterrupted run', async () => {
    const params = { ...base, metadataFormat: 'Classified_Tiles', labelSets: ['COCO', 'YOLO'] };
    const whole = join(dir, 'whole');
    await exportTrainingData({ ...params, outputLocation: whole });
    const out = join(dir, 'killed');
    let chips = 0;
    const kill = (p: ExportProgress): void => {
      if ((chips = p.chips) === 3) throw new Error('killed');
    };
    await expect(exportTrainingData({ ...params, outputLocation: out }, { onProgress: kill })).rejects.toThrow('killed');
    // What a SIGKILL between a write and its rename leaves: the next chip's files under temporary names.
    for (const f of ['images/000000003.tif', 'images/000000003.tfw', 'labels/000000003.tif.aux.xml'])
      writeFileSync(join(out, `${f}.part-99999`), 'cut');
    const s = await exportTrainingData({ ...params, outputLocation: out, resume: true });
    expect([chips, s.resumedFrom]).toEqual([3, 3]);
    expect(existsSync(join(out, 'images/000000003.tif.part-99999'))).toBe(false);
    expect(await folderHash(out)).toBe(await folderHash(whole));
  });
});

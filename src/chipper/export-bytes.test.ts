/**
 * An export keeps its bytes. A resume after a hard kill ends with the bytes of an uninterrupted
 * run, even when the kill left a temporary file behind. And two representative exports are pinned
 * by one hash each, so that a change to the exporter that is meant to keep its output (a
 * refactor) shows any file that moved. The hash covers the sorted
 * file list, the bytes of every text file (labels, sidecars, map.txt, manifest, EMD, EAS, stats,
 * COCO, YOLO, split lists) and the decoded pixels and mask of every raster: rasters are compared
 * decoded (TIFF and MRF by our reader, PNG by pngjs), never as encoded bytes, so a new byte
 * layout of an encoder does not move the pin.
 * The raster is the 30 x 30 synthetic one of export.test.ts. The expected hashes were taken from
 * the exporter before its split into label writers (issue 16), whose output it kept byte for byte.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, relative } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { allocateBlock } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { encodeGeoTiff } from '../io/encode-tiff.js';
import { closingOpener, gridInfo } from '../../test/helpers.js';
import { exportTrainingData } from './export.js';

const files = closingOpener();
afterEach(files.closeAll);

const dir = mkdtempSync(join(tmpdir(), 'rf-chipper-bytes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const info = { ...gridInfo({ width: 30, height: 30, bandCount: 3, pixelType: 'U8', origin: { x: 1000, y: 2000 } }), spatialReference: { wkid: 32616, metersPerUnit: 1 } };
const block = allocateBlock(rect(0, 0, 30, 30), 'U8', 3);
for (let b = 0; b < 3; b++) for (let i = 0; i < 900; i++) block.bands[b]![i] = ((i % 30) + 7 * Math.floor(i / 30) + 50 * b) % 256;
const rasterPath = join(dir, 'raster.tif');
writeFileSync(rasterPath, encodeGeoTiff(block, info));

const box = (x0: number, y0: number, x1: number, y1: number): number[][][] => [
  [[1000 + x0, 2000 - y0], [1000 + x0, 2000 - y1], [1000 + x1, 2000 - y1], [1000 + x1, 2000 - y0], [1000 + x0, 2000 - y0]],
];
const feature = (classvalue: number, classname: string, geometry: unknown) => ({ attributes: { classvalue, classname }, geometry });
const labels = {
  spatialReference: { wkid: 32616 },
  features: [
    feature(1, 'pond', { rings: box(2, 3, 7, 9) }),
    feature(2, 'roof', { rings: box(8, 12, 12, 15) }),
    feature(1, 'pond', { x: 1015.5, y: 1994.5 }),
    feature(2, 'roof', { rings: box(21, 21, 29, 28) }),
  ],
};
const instances = { spatialReference: { wkid: 32616 }, features: [feature(7, 'car', { rings: box(3, 4, 5, 6) }), feature(7, 'car', { rings: box(4, 5, 6, 8) }), feature(8, 'truck', { rings: box(13, 13, 18, 16) })] };
const base = { inputRaster: rasterPath, inputClassData: labels, tileSize: { x: 10, y: 10 }, bufferRadius: 2 };

const RASTER = new Set(['.tif', '.png', '.mrf']);

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
    if (!RASTER.has(ext)) {
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
      'PASCAL VOC, rotated chips, COCO and YOLO, a validation split, PNG chips',
      { metadataFormat: 'PASCAL_VOC_rectangles', chipFormat: 'PNG', rotationAngle: 90, labelSets: ['COCO', 'YOLO'], vocExtras: true, validationFraction: 0.4, splitBlockSize: 1 },
      'd85536392edf1152',
    ],
    ['Panoptic_Segmentation: class rasters and instance masks, TIFF chips', { metadataFormat: 'Panoptic_Segmentation', inputInstanceData: instances, context: { exportAllTiles: true } }, 'f08a0b3cd361c0e6'],
  ])('%s', async (name, params, expected) => {
    const out = join(dir, name.split(/\W/)[0]!);
    await exportTrainingData({ ...base, outputLocation: out, ...params });
    expect(await folderHash(out)).toBe(expected);
  });
});

describe('a resume after a hard kill', () => {
  it('removes the temporary files the kill left and ends with the bytes of an uninterrupted run', async () => {
    const params = { ...base, metadataFormat: 'Classified_Tiles', labelSets: ['COCO', 'YOLO'], context: { exportAllTiles: true } };
    const whole = join(dir, 'whole');
    await exportTrainingData({ ...params, outputLocation: whole });
    const out = join(dir, 'killed');
    let calls = 0;
    const kill = (): void => {
      if (++calls === 4) throw new Error('killed');
    };
    await expect(exportTrainingData({ ...params, outputLocation: out }, { onProgress: kill })).rejects.toThrow('killed');
    // What a SIGKILL between a write and its rename leaves: the next chip's files under temporary names.
    for (const f of ['images/000000003.tif', 'images/000000003.tfw', 'labels/000000003.tif.aux.xml']) writeFileSync(join(out, `${f}.part-99999`), 'cut');
    const s = await exportTrainingData({ ...params, outputLocation: out, resume: true });
    expect(s.resumedFrom).toBe(3);
    expect(existsSync(join(out, 'images/000000003.tif.part-99999'))).toBe(false);
    expect(await folderHash(out)).toBe(await folderHash(whole));
  });
});

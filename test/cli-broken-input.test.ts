/**
 * `rasterflow` on broken input, as a user runs it: a cut TIFF, rasters that do not overlap, labels
 * in metres without a crs, labels outside the raster. Nothing exits 0 or writes output from
 * input it cannot trust.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { brokenCopies, DATA, DEM, LANDSAT } from './broken-tiff.js';
import { runCli } from './helpers.js';

const out = mkdtempSync(join(tmpdir(), 'rasterflow-cli-broken-'));
const broken = brokenCopies();
afterAll(broken.done);
const cut = broken.cut(DEM, 'cut.tif', 300_000);
const L7_LABELS = join(DATA, '../chipper/l7-labels.geojson');

describe('rasterflow on broken input', () => {
  it('render, info and chip refuse a cut TIFF: exit 1, IO_ERROR naming the file and the strip, no output', () => {
    for (const file of ['hs.tif', 'hs.png']) {
      const r = runCli(['render', '--rule', '{"rasterFunction":"Hillshade"}', '--input', cut, '--output', join(out, file)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^error IO_ERROR at input: ${cut.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: strip 39 \\(rows 195-199\\) of band 1 is cut short`,
        ),
      );
    }
    expect(readdirSync(out)).toEqual([]); // neither the image nor a .partial file
    const info = runCli(['info', cut]);
    expect(info.code).toBe(1);
    expect(info.stderr).toMatch(/^error IO_ERROR at input: .*strip 39/);
    const chips = join(out, 'chips');
    const chip = runCli([
      'chip',
      JSON.stringify({ inputRaster: cut, outputLocation: chips, metadataFormat: 'Export_Tiles', tileSize: { x: 64, y: 64 } }),
    ]);
    expect(chip.code).toBe(1);
    // chip names the parameter the raster came from.
    expect(chip.stderr).toMatch(/^error IO_ERROR at inputRaster: .*strip 39/);
    expect(existsSync(chips)).toBe(false);
  });

  it('render refuses rasters that do not overlap, naming both extents; nothing is written', () => {
    const file = join(out, 'sum.tif');
    const r = runCli([
      'render',
      '--rule',
      '{"rasterFunction":"Arithmetic","rasterFunctionArguments":{"Raster":"$1","Raster2":"$2","Operation":1}}',
      '--input',
      LANDSAT,
      '--input',
      DEM,
      '--output',
      file,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error INVALID_ARGUMENT at rasterFunctionArguments\.Raster2: the input rasters do not overlap: Raster2 covers \[732000, 4037625, 760725, 4068150\] in EPSG:32616/,
    );
    expect(r.stderr).toContain('Raster covers [288776.25, 9110728.75, 298722.75, 9120760.75] in EPSG:31985');
    expect(existsSync(file)).toBe(false);
  });

  it('chip: labels in metres without crs are refused with the member to add; labels outside the raster are counted', () => {
    const metres = join(out, 'metres.geojson');
    const ring = [
      [290000, 9115000],
      [291000, 9115000],
      [291000, 9116000],
      [290000, 9116000],
      [290000, 9115000],
    ];
    writeFileSync(
      metres,
      JSON.stringify({
        type: 'FeatureCollection',
        features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } }],
      }),
    );
    const params = (labels: string, o: string) =>
      JSON.stringify({
        inputRaster: LANDSAT,
        inputClassData: labels,
        outputLocation: join(out, o),
        metadataFormat: 'KITTI_rectangles',
        tileSize: { x: 64, y: 64 },
      });
    const r = runCli(['chip', params(metres, 'metres')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error INVALID_ARGUMENT at inputClassData: feature 0 has the position \[290000, 9115000\]/);
    expect(r.stderr).toContain('"crs": {"type":"name","properties":{"name":"EPSG:31985"}}');
    expect(existsSync(join(out, 'metres'))).toBe(false);

    // The bundled labels plus one around Jacksboro, Tennessee: far outside the Olinda scene.
    const doc = JSON.parse(readFileSync(L7_LABELS, 'utf8')) as { features: unknown[] };
    const far = [
      [-84.3, 36.5],
      [-84.2, 36.5],
      [-84.2, 36.6],
      [-84.3, 36.6],
      [-84.3, 36.5],
    ];
    doc.features.push({ type: 'Feature', properties: { classvalue: 1 }, geometry: { type: 'Polygon', coordinates: [far] } });
    const more = join(out, 'more.geojson');
    writeFileSync(more, JSON.stringify(doc));
    const dry = runCli(['chip', params(more, 'more'), '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout + dry.stderr).toMatch(/with 32 labels .*; 1 label\(s\) entirely outside the raster;/);
  });
});

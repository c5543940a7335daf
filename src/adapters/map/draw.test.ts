import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCanvas } from '@napi-rs/canvas';
import type { PNG as PngClass } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { featureLayer, memoryMap, memoryTable, rasterLayer, type MemoryFeature } from '../../../test/memory-map.js';
import { testSite } from '../../../test/site.js';
import { EngineError } from '../../core/errors.js';
import type { SpatialReference } from '../../core/pixel-block.js';
import { renderExport } from '../image/export-image.js';
import { imageServicesOf, type ImageServices } from '../image/service.js';
import { transformer } from '../image/query-geometry.js';
import { drawnMap, toScreen, type DrawnMap } from '../soap/display.js';
import { parseMapServiceProperties } from './config.js';
import { drawMap, inScaleRange, rasterLayerRule, visibleLayerIds, type DrawnImage } from './draw.js';
import { openFeatureStore, type FeatureStore, type TableSource } from './feature-store.js';
import type { FeatureLayer, Geometry, MapLayer, MapService } from './model.js';

const { PNG } = createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass };

const DEM = `${import.meta.dirname}/../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
// DEM grid: 383 x 407, 75 m, xmin 732000, ymax 4068150 (EPSG:32616).
const UTM: SpatialReference = { wkid: 32616 };
const FULL = { xmin: 732000, ymin: 4068150 - 407 * 75, xmax: 732000 + 383 * 75, ymax: 4068150 };

let services: ImageServices;

beforeAll(async () => {
  const site = await testSite();
  services = imageServicesOf(site);
});

const extentArea = (xmin: number, ymin: number, xmax: number, ymax: number) => ({
  Name: 'Layers',
  MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: xmin, YMin: ymin, XMax: xmax, YMax: ymax } },
});
const display = (w: number, h: number, dpi = 96) => ({ ImageWidth: w, ImageHeight: h, ImageDPI: dpi });
const paths = { mapDescription: 'MapDescription', imageDisplay: 'ImageDisplay' };

function drawnOf(service: MapService, e: [number, number, number, number], w: number, h: number, dpi = 96, sr?: SpatialReference) {
  const md = { ...extentArea(...e), ...(sr?.wkid ? { SpatialReference: { $type: 'ProjectedCoordinateSystem', WKID: sr.wkid } } : {}) };
  return drawnMap(service, md, display(w, h, dpi), paths);
}

/** The RGBA at the pixel containing map point (x, y) (in the drawn SR). */
function pixelAt(img: DrawnImage, d: DrawnMap, x: number, y: number): [number, number, number, number] {
  const p = toScreen(d, x, y);
  expect(p.x).toBeGreaterThanOrEqual(0);
  expect(p.y).toBeGreaterThanOrEqual(0);
  expect(p.x).toBeLessThan(img.width);
  expect(p.y).toBeLessThan(img.height);
  const o = 4 * (p.y * img.width + p.x);
  return [img.rgba[o]!, img.rgba[o + 1]!, img.rgba[o + 2]!, img.rgba[o + 3]!];
}

const square = (cx: number, cy: number, r: number): Geometry => ({
  type: 'Polygon',
  coordinates: [
    [
      [cx - r, cy - r],
      [cx + r, cy - r],
      [cx + r, cy + r],
      [cx - r, cy + r],
      [cx - r, cy - r],
    ],
  ],
});

const fill = (color: number[], outline?: number[]) => ({
  type: 'esriSFS',
  style: 'esriSFSSolid',
  color,
  ...(outline ? { outline: { type: 'esriSLS', style: 'esriSLSSolid', color: outline, width: 1 } } : {}),
});

describe('drawMap: raster layers', () => {
  it('draws a raster layer exactly as the image service exports the same rule, extent and size', async () => {
    const layer = await rasterLayer(0, 'Relief', DEM);
    const service = memoryMap([layer], UTM, FULL);
    // 200 x 150 over a window inside the DEM: resampled (not the native grid), every pixel valid.
    const d = await drawnOf(service, [740000, 4050000, 752000, 4059000], 200, 150);
    expect(d.extent).toEqual({ xmin: 740000, ymin: 4050000, xmax: 752000, ymax: 4059000 });
    const img = await drawMap(services, service, d);
    const encoded = await renderExport(services, layer.image, {
      rule: layer.image.settings.renderingRule,
      grid: { spatialReference: d.spatialReference, extent: d.extent, width: 200, height: 150 },
      method: 'nearest',
      included: true,
      encode: { format: 'png32', quality: 75, compression: 'deflate' },
      noDataMode: 'any',
    });
    const png = PNG.sync.read(Buffer.from(encoded.bytes));
    expect(png.width).toBe(200);
    let differing = 0;
    for (let i = 0; i < 200 * 150 * 4; i++) if (png.data[i] !== img.rgba[i]) differing++;
    expect(differing).toBe(0);
    // and it is not a flat image
    const greys = new Set<number>();
    for (let i = 0; i < img.rgba.length; i += 4) greys.add(img.rgba[i]!);
    expect(greys.size).toBeGreaterThan(50);
    expect(img.visibleLayerIds).toEqual([0]);
    expect(img.opaque).toBe(true);
  });

  it('with a rendering rule: the same as the image service with that rule; NoData shows the background', async () => {
    const rule = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } };
    const layer = await rasterLayer(0, 'Shade', DEM, rule);
    const service = memoryMap([layer], UTM, FULL, { backgroundColor: [10, 20, 30, 255] });
    // Extends 3 km west of the DEM: those pixels are NoData.
    const d = await drawnOf(service, [729000, 4050000, 741000, 4059000], 160, 120);
    const img = await drawMap(services, service, d);
    const encoded = await renderExport(services, layer.image, {
      rule: layer.image.settings.renderingRule,
      grid: { spatialReference: d.spatialReference, extent: d.extent, width: 160, height: 120 },
      method: 'nearest',
      included: true,
      encode: { format: 'png32', quality: 75, compression: 'deflate' },
      noDataMode: 'any',
    });
    const png = PNG.sync.read(Buffer.from(encoded.bytes));
    let transparent = 0;
    for (let i = 0; i < 160 * 120; i++) {
      const o = 4 * i;
      if (png.data[o + 3] === 0) {
        transparent++;
        expect([img.rgba[o], img.rgba[o + 1], img.rgba[o + 2], img.rgba[o + 3]]).toEqual([10, 20, 30, 255]);
      } else {
        expect([img.rgba[o], img.rgba[o + 1], img.rgba[o + 2]]).toEqual([png.data[o], png.data[o + 1], png.data[o + 2]]);
      }
    }
    // 3000 m of 12000 m are outside the raster
    expect(transparent).toBeGreaterThan(160 * 120 * 0.2);
  });
});

describe('drawMap: feature layers', () => {
  const CX = 745000;
  const CY = 4055000;

  it('fills a polygon with its symbol colour inside and leaves the background outside', async () => {
    const table = memoryTable([{ id: 1, attributes: {}, geometry: square(CX, CY, 1000) }], 'polygon');
    const service = memoryMap(
      [featureLayer(0, 'Parcels', table, { type: 'simple', symbol: fill([200, 30, 40, 255], [0, 0, 0, 255]) })],
      UTM,
      FULL,
    );
    const d = await drawnOf(service, [CX - 2000, CY - 2000, CX + 2000, CY + 2000], 200, 200);
    const img = await drawMap(services, service, d);
    expect(pixelAt(img, d, CX, CY)).toEqual([200, 30, 40, 255]);
    expect(pixelAt(img, d, CX + 900, CY - 900)).toEqual([200, 30, 40, 255]);
    expect(pixelAt(img, d, CX + 1500, CY)).toEqual([255, 255, 255, 255]);
    expect(pixelAt(img, d, CX - 1900, CY + 1900)).toEqual([255, 255, 255, 255]);
    // the outline is black on the boundary
    const edge = pixelAt(img, d, CX + 1000, CY);
    expect(edge[0]).toBeLessThan(128);
    // the query asked the store for the drawn extent's envelope
    expect(table.queries[0]?.spatial?.relation).toBe('envelopeIntersects');
  });

  it('sizes point symbols in points at the DPI: a 12 pt square covers 16 px across at 96 dpi and 32 px at 192 dpi', async () => {
    const table = memoryTable([{ id: 1, attributes: {}, geometry: { type: 'Point', coordinates: [CX, CY] } }], 'point');
    const symbol = { type: 'esriSMS', style: 'esriSMSSquare', color: [255, 0, 0, 255], size: 12 };
    const service = memoryMap([featureLayer(0, 'Wells', table, { type: 'simple', symbol })], UTM, FULL);
    for (const [dpi, side] of [
      [96, 16],
      [192, 32],
    ] as const) {
      const d = await drawnOf(service, [CX - 1000, CY - 1000, CX + 1000, CY + 1000], 100, 100, dpi);
      const img = await drawMap(services, service, d);
      // Red over white: coverage of a pixel = (255 - green) / 255. The area is side^2, the widest row side.
      let area = 0;
      let widest = 0;
      for (let y = 0; y < 100; y++) {
        let row = 0;
        for (let x = 0; x < 100; x++) row += (255 - img.rgba[4 * (y * 100 + x) + 1]!) / 255;
        area += row;
        widest = Math.max(widest, row);
      }
      expect(area).toBeCloseTo(side * side, -1);
      expect(Math.abs(widest - side)).toBeLessThan(0.6);
    }
  });

  it('picture markers (esriPMS): the picture at width x height points, centred on the point', async () => {
    const tile = createCanvas(4, 4);
    const g = tile.getContext('2d');
    g.fillStyle = 'rgb(0, 0, 255)';
    g.fillRect(0, 0, 4, 4);
    const imageData = tile.toBuffer('image/png').toString('base64');
    const table = memoryTable([{ id: 1, attributes: {}, geometry: { type: 'Point', coordinates: [CX, CY] } }], 'point');
    const symbol = { type: 'esriPMS', imageData, contentType: 'image/png', width: 15, height: 15 };
    const service = memoryMap([featureLayer(0, 'Pins', table, { type: 'simple', symbol })], UTM, FULL);
    const d = await drawnOf(service, [CX - 1000, CY - 1000, CX + 1000, CY + 1000], 100, 100);
    const img = await drawMap(services, service, d);
    // 15 pt = 20 px at 96 dpi: blue coverage 400 px
    let area = 0;
    for (let i = 0; i < 100 * 100; i++) area += (255 - img.rgba[4 * i]!) / 255;
    expect(area).toBeCloseTo(400, -1);
    expect(pixelAt(img, d, CX, CY)).toEqual([0, 0, 255, 255]);
  });

  it('a definition expression the store refuses is an error at LayerDescriptions[i]/DefinitionExpression', async () => {
    const table = memoryTable([{ id: 1, attributes: {}, geometry: square(CX, CY, 100) }], 'polygon');
    const service = memoryMap([featureLayer(0, 'Parcels', table, { type: 'simple', symbol: fill([1, 2, 3, 255]) })], UTM, FULL);
    const d = await drawnOf(service, [CX - 1000, CY - 1000, CX + 1000, CY + 1000], 50, 50);
    const e = await drawMap(services, service, d, {
      layers: new Map([[0, { definitionExpression: '1=1; DROP TABLE x', path: 'MapDescription/LayerDescriptions[3]' }]]),
    }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('INVALID_ARGUMENT');
    expect((e as EngineError).path).toBe('MapDescription/LayerDescriptions[3]/DefinitionExpression');
  });

  it('turns markers by a rotation field (arithmetic: counter-clockwise; geographic: clockwise from north)', async () => {
    const table = memoryTable(
      [
        { id: 1, attributes: { DIR: 0 }, geometry: { type: 'Point', coordinates: [CX - 500, CY] } },
        { id: 2, attributes: { DIR: 180 }, geometry: { type: 'Point', coordinates: [CX + 500, CY] } },
      ],
      'point',
    );
    const symbol = { type: 'esriSMS', style: 'esriSMSTriangle', color: [255, 0, 0, 255], size: 18 };
    const service = memoryMap([featureLayer(0, 'Arrows', table, { type: 'simple', symbol, rotationExpression: '[DIR]' })], UTM, FULL);
    const d = await drawnOf(service, [CX - 1000, CY - 500, CX + 1000, CY + 500], 200, 100);
    const img = await drawMap(services, service, d);
    // 10 m/px, the triangle 24 px: its wide base at the bottom at 0 degrees, at the top at 180
    const redAt = (x: number, y: number) => pixelAt(img, d, x, y)[1]! < 100;
    expect(redAt(CX - 500 - 70, CY - 80)).toBe(true);
    expect(redAt(CX - 500 - 70, CY + 80)).toBe(false);
    expect(redAt(CX + 500 - 70, CY + 80)).toBe(true);
    expect(redAt(CX + 500 - 70, CY - 80)).toBe(false);
    // geographic 90 (east) = arithmetic 0: the same as the first
    const geo = memoryMap(
      [featureLayer(0, 'Arrows', table, { type: 'simple', symbol, rotationExpression: '[DIR]', rotationType: 'geographic' })],
      UTM,
      FULL,
    );
    const img2 = await drawMap(services, geo, d);
    const redAt2 = (x: number, y: number) => pixelAt(img2, d, x, y)[1]! < 100;
    // DIR 0 geographic = 90 arithmetic: the base turns to the right side
    expect(redAt2(CX - 500 + 80, CY - 70)).toBe(true);
    expect(redAt2(CX - 500 - 80, CY - 70)).toBe(false);
  });

  it('class breaks: each feature in its class colour; values outside every class take the default symbol', async () => {
    const feats: MemoryFeature[] = [5, 15, 25, 99].map((v, i) => ({
      id: i + 1,
      attributes: { POP: v },
      geometry: square(CX - 1500 + i * 1000, CY, 300),
    }));
    const table = memoryTable(feats, 'polygon');
    const renderer = {
      type: 'classBreaks',
      field: 'POP',
      minValue: 0,
      classBreakInfos: [
        { classMaxValue: 10, label: '0 - 10', symbol: fill([255, 0, 0, 255]) },
        { classMaxValue: 20, label: '10 - 20', symbol: fill([0, 255, 0, 255]) },
        { classMaxValue: 30, label: '20 - 30', symbol: fill([0, 0, 255, 255]) },
      ],
      defaultSymbol: fill([128, 128, 128, 255]),
    };
    const service = memoryMap([featureLayer(0, 'Tracts', table, renderer)], UTM, FULL);
    const d = await drawnOf(service, [CX - 2000, CY - 1000, CX + 2000, CY + 1000], 400, 200);
    const img = await drawMap(services, service, d);
    const colours = feats.map((f, i) => pixelAt(img, d, CX - 1500 + i * 1000, CY));
    expect(colours).toEqual([
      [255, 0, 0, 255],
      [0, 255, 0, 255],
      [0, 0, 255, 255],
      [128, 128, 128, 255],
    ]);
    // the renderer's field was asked for
    expect(table.queries[0]?.outFields).toEqual(['POP']);
  });

  it('unique values, a definition expression, layer order (layer 0 on top) and the selection colour', async () => {
    const a = memoryTable(
      [
        { id: 1, attributes: { KIND: 'park' }, geometry: square(CX - 1000, CY, 400) },
        { id: 2, attributes: { KIND: 'lake' }, geometry: square(CX + 1000, CY, 400) },
      ],
      'polygon',
    );
    const b = memoryTable([{ id: 1, attributes: {}, geometry: square(CX, CY, 1500) }], 'polygon');
    const unique = {
      type: 'uniqueValue',
      field1: 'KIND',
      uniqueValueInfos: [
        { value: 'park', label: 'Park', symbol: fill([0, 160, 0, 255]) },
        { value: 'lake', label: 'Lake', symbol: fill([0, 0, 200, 255]) },
      ],
    };
    const service = memoryMap(
      [featureLayer(0, 'Areas', a, unique), featureLayer(1, 'Base', b, { type: 'simple', symbol: fill([240, 230, 140, 255]) })],
      UTM,
      FULL,
    );
    const d = await drawnOf(service, [CX - 2000, CY - 1000, CX + 2000, CY + 1000], 400, 200);
    let img = await drawMap(services, service, d);
    expect(pixelAt(img, d, CX - 1000, CY)).toEqual([0, 160, 0, 255]);
    expect(pixelAt(img, d, CX + 1000, CY)).toEqual([0, 0, 200, 255]);
    expect(pixelAt(img, d, CX, CY)).toEqual([240, 230, 140, 255]);
    expect(pixelAt(img, d, CX - 1900, CY + 900)).toEqual([255, 255, 255, 255]);

    img = await drawMap(services, service, d, {
      layers: new Map([[0, { definitionExpression: "KIND = 'lake'", selectionFeatures: [2] }]]),
      selectionColor: [255, 0, 255, 255],
    });
    expect(pixelAt(img, d, CX - 1000, CY)).toEqual([240, 230, 140, 255]);
    expect(pixelAt(img, d, CX + 1000, CY)).toEqual([0, 0, 200, 255]);
    // the selected lake's boundary is magenta (2 pt outline centred on it)
    const edge = pixelAt(img, d, CX + 1400, CY);
    expect(edge[0]).toBeGreaterThan(200);
    expect(edge[1]).toBeLessThan(100);
    expect(edge[2]).toBeGreaterThan(200);

    // layer 1 hidden: only layer 0's features, on the background
    img = await drawMap(services, service, d, { layers: new Map([[1, { visible: false }]]) });
    expect(img.visibleLayerIds).toEqual([0]);
    expect(pixelAt(img, d, CX, CY)).toEqual([255, 255, 255, 255]);
  });

  it('draws features in another spatial reference when the map is drawn in one (reprojected)', async () => {
    const table = memoryTable([{ id: 1, attributes: {}, geometry: square(CX, CY, 1000) }], 'polygon');
    const service = memoryMap([featureLayer(0, 'Parcels', table, { type: 'simple', symbol: fill([200, 30, 40, 255]) })], UTM, FULL);
    const toGeo = transformer(UTM, { wkid: 4326 });
    const [lon0, lat0] = toGeo(CX - 2000, CY - 2000);
    const [lon1, lat1] = toGeo(CX + 2000, CY + 2000);
    const geo = { $type: 'GeographicCoordinateSystem', WKID: 4326 };
    const md = {
      Name: 'Layers',
      MapArea: {
        $type: 'MapExtent',
        Extent: { $type: 'EnvelopeN', XMin: lon0, YMin: lat0, XMax: lon1, YMax: lat1, SpatialReference: geo },
      },
      SpatialReference: geo,
    };
    const d = await drawnMap(service, md, display(200, 200), paths);
    expect(d.spatialReference.wkid).toBe(4326);
    const img = await drawMap(services, service, d);
    const [cx, cy] = toGeo(CX, CY);
    const [ox, oy] = toGeo(CX + 1600, CY + 1600);
    expect(pixelAt(img, d, cx, cy)).toEqual([200, 30, 40, 255]);
    expect(pixelAt(img, d, ox, oy)).toEqual([255, 255, 255, 255]);
  });

  it('line symbols: width in points at the DPI, dashes leave gaps', async () => {
    const line: Geometry = {
      type: 'LineString',
      coordinates: [
        [CX - 2000, CY],
        [CX + 2000, CY],
      ],
    };
    const table = memoryTable([{ id: 1, attributes: {}, geometry: line }], 'polyline');
    const solid = { type: 'esriSLS', style: 'esriSLSSolid', color: [0, 0, 0, 255], width: 3 };
    const service = memoryMap([featureLayer(0, 'Roads', table, { type: 'simple', symbol: solid })], UTM, FULL);
    const d = await drawnOf(service, [CX - 1000, CY - 1000, CX + 1000, CY + 1000], 100, 100, 96);
    const img = await drawMap(services, service, d);
    // a column across the line: total darkness = width in px = 3 pt * 96/72 = 4 px
    let dark = 0;
    for (let y = 0; y < 100; y++) dark += (255 - img.rgba[4 * (y * 100 + 50)]!) / 255;
    expect(dark).toBeCloseTo(4, 0);
    const dashed = memoryMap([featureLayer(0, 'Roads', table, { type: 'simple', symbol: { ...solid, style: 'esriSLSDash' } })], UTM, FULL);
    const img2 = await drawMap(services, dashed, d);
    const row = toScreen(d, CX, CY).y;
    let gaps = 0;
    for (let x = 0; x < 100; x++) if (img2.rgba[4 * (row * 100 + x)]! > 200) gaps++;
    expect(gaps).toBeGreaterThan(20);
    expect(gaps).toBeLessThan(80);
  });

  it('TransparentColor makes the pixels of that colour transparent', async () => {
    const table = memoryTable([{ id: 1, attributes: {}, geometry: square(CX, CY, 1000) }], 'polygon');
    const service = memoryMap([featureLayer(0, 'Parcels', table, { type: 'simple', symbol: fill([200, 30, 40, 255]) })], UTM, FULL);
    const d = await drawnOf(service, [CX - 2000, CY - 2000, CX + 2000, CY + 2000], 100, 100);
    const img = await drawMap(services, service, d, { transparentColor: [255, 255, 255, 255] });
    expect(pixelAt(img, d, CX + 1500, CY)[3]).toBe(0);
    expect(pixelAt(img, d, CX, CY)).toEqual([200, 30, 40, 255]);
    expect(img.opaque).toBe(false);
  });
});

describe('layer visibility by scale', () => {
  it('minScale is the most zoomed-out scale shown, maxScale the most zoomed-in; 0 is no limit', async () => {
    expect(inScaleRange({ minScale: 0, maxScale: 0 }, 1e9)).toBe(true);
    expect(inScaleRange({ minScale: 50000, maxScale: 0 }, 40000)).toBe(true);
    expect(inScaleRange({ minScale: 50000, maxScale: 0 }, 60000)).toBe(false);
    expect(inScaleRange({ minScale: 0, maxScale: 10000 }, 5000)).toBe(false);
    const table = memoryTable([], 'point');
    const service = memoryMap(
      [
        featureLayer(0, 'Near', table, {}, { minScale: 20000 }),
        featureLayer(1, 'Far', table, {}, { maxScale: 20000 }),
        featureLayer(2, 'Off', table, {}, { defaultVisibility: false }),
      ],
      UTM,
      FULL,
    );
    expect(visibleLayerIds(service, 10000)).toEqual([0]);
    expect(visibleLayerIds(service, 30000)).toEqual([1]);
    expect(visibleLayerIds(service, 30000, new Map([[2, { visible: true }]]))).toEqual([1, 2]);
    // drawn at 1:94488 (25 m/px at 96 dpi): 'Near' is out of range
    const d = await drawnOf(service, [740000, 4050000, 745000, 4055000], 200, 200);
    expect(d.scale).toBeCloseTo(94488.19, 1);
    const img = await drawMap(services, service, d);
    expect(img.visibleLayerIds).toEqual([1]);
  });
});

describe('drawMap on the fixture map (the feature store)', () => {
  const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/map');
  const record = JSON.parse(readFileSync(join(FIXTURES, 'olinda-map.json'), 'utf8')) as { properties: Record<string, unknown> };
  let service: MapService;
  let store: FeatureStore;

  beforeAll(async () => {
    const settings = parseMapServiceProperties(record, FIXTURES);
    const dir = mkdtempSync(join(tmpdir(), 'rf-draw-store-'));
    const sources: TableSource[] = [];
    settings.layers.forEach((l, id) => {
      if (l.type === 'feature')
        sources.push({
          id,
          name: l.name,
          kind: 'feature',
          path: l.path,
          fields: l.fields,
          objectIdField: l.objectIdField,
          attachments: [],
          at: l.at,
        });
    });
    store = await openFeatureStore({ file: join(dir, 'v1.sqlite'), attachmentsDir: join(dir, 'att'), sources, maxRecordCount: 1000 });
    const layers: MapLayer[] = [];
    for (const [id, l] of settings.layers.entries()) {
      if (l.type === 'raster') layers.push(await rasterLayer(id, l.name, l.path, l.renderingRule));
      else
        layers.push(
          featureLayer(id, l.name, store.tables.get(id)!, l.renderer ?? {}, {
            minScale: l.minScale,
            maxScale: l.maxScale,
            defaultVisibility: l.visible,
          }),
        );
    }
    const relief = layers.find((l) => l.kind === 'raster')!;
    service = memoryMap(layers, store.spatialReference!, relief.extent);
  });
  afterAll(() => store.close());

  /** Only layer `id` drawn. */
  const only = (id: number) => new Map(service.layers.map((l) => [l.id, { visible: l.id === id }]));
  const idOf = (name: string) => service.layers.find((l) => l.name === name)!.id;

  it('fills each elevation class polygon with its class colour (alpha 160 over white) at an interior point', async () => {
    const d = await drawnMap(
      service,
      { Name: 'Layers', MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', ...envelopeOf(service.fullExtent) } } },
      display(222, 222),
      paths,
    );
    const img = await drawMap(services, service, d, { layers: only(idOf('Elevation classes')) });
    const colours: Record<number, number[]> = { 1: [56, 168, 0], 2: [139, 209, 0], 3: [255, 255, 0], 4: [255, 128, 0] };
    const table = (service.layers[idOf('Elevation classes')] as FeatureLayer).table;
    const rows = await table.query({ returnGeometry: true, outFields: ['CLASS'], limit: 10000 });
    expect(rows.length).toBe(83);
    let checked = 0;
    for (const row of rows) {
      const want = colours[row.attributes['CLASS'] as number];
      if (!want || !row.geometry) continue;
      const p = interiorPoint(row.geometry);
      // far enough from the outline (3 px) for the fill alone to decide the pixel
      if (!p || p.distance < 3 * d.resolution) continue;
      const px = pixelAt(img, d, p.x, p.y);
      const blended = want.map((c) => Math.round((c * 160 + 255 * 95) / 255));
      for (let k = 0; k < 3; k++) expect(Math.abs(px[k]! - blended[k]!)).toBeLessThanOrEqual(2);
      checked++;
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('draws every spot height as its red triangle; the relief layer as the image service draws its hillshade', async () => {
    const e = service.fullExtent;
    const d = await drawnMap(
      service,
      { Name: 'Layers', MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', ...envelopeOf(e) } } },
      display(333, 333),
      paths,
    );
    const spots = await drawMap(services, service, d, { layers: only(idOf('Spot heights')) });
    const table = (service.layers[idOf('Spot heights')] as FeatureLayer).table;
    const rows = await table.query({ returnGeometry: true, limit: 100 });
    expect(rows.length).toBe(20);
    for (const r of rows) {
      const c = (r.geometry as unknown as { coordinates: number[] }).coordinates;
      expect(pixelAt(spots, d, c[0]!, c[1]!)).toEqual([200, 30, 30, 255]);
    }
    const relief = service.layers.find((l) => l.kind === 'raster')!;
    if (relief.kind !== 'raster') throw new Error('raster expected');
    const img = await drawMap(services, service, d, { layers: only(relief.id) });
    const encoded = await renderExport(services, relief.image, {
      rule: rasterLayerRule(relief),
      grid: { spatialReference: d.spatialReference, extent: d.extent, width: d.width, height: d.height },
      method: 'nearest',
      included: true,
      encode: { format: 'png32', quality: 75, compression: 'deflate' },
      noDataMode: 'any',
    });
    const png = PNG.sync.read(Buffer.from(encoded.bytes));
    let differing = 0;
    for (let i = 0; i < png.data.length; i += 4) {
      if (png.data[i + 3] === 0) continue; // NoData: the background shows
      if (png.data[i] !== img.rgba[i] || png.data[i + 1] !== img.rgba[i + 1] || png.data[i + 2] !== img.rgba[i + 2]) differing++;
    }
    expect(differing).toBe(0);
  });

  it('hides the contours beyond their minScale (1:500,000) and shows them within it', async () => {
    const id = idOf('Contours');
    expect(visibleLayerIds(service, 400000)).toContain(id);
    expect(visibleLayerIds(service, 600000)).not.toContain(id);
  });
});

function envelopeOf(e: { xmin: number; ymin: number; xmax: number; ymax: number }) {
  return { XMin: e.xmin, YMin: e.ymin, XMax: e.xmax, YMax: e.ymax };
}

/**
 * A point inside a polygon, found independently of the drawing: on 15 horizontal lines across its
 * bounding box, the middles of the inside intervals (even-odd crossings of all rings); the one
 * farthest from every edge, with that distance.
 */
function interiorPoint(g: Geometry): { x: number; y: number; distance: number } | undefined {
  const polys = g.type === 'Polygon' ? [g.coordinates] : g.type === 'MultiPolygon' ? g.coordinates : [];
  const edges: [number, number, number, number][] = [];
  for (const poly of polys)
    for (const ring of poly)
      for (let i = 1; i < ring.length; i++) edges.push([ring[i - 1]![0]!, ring[i - 1]![1]!, ring[i]![0]!, ring[i]![1]!]);
  if (edges.length === 0) return undefined;
  const ys = edges.flatMap((e) => [e[1], e[3]]);
  const ymin = Math.min(...ys);
  const ymax = Math.max(...ys);
  const dist = (x: number, y: number): number => {
    let m = Infinity;
    for (const [x0, y0, x1, y1] of edges) {
      const dx = x1 - x0;
      const dy = y1 - y0;
      const t = dx === 0 && dy === 0 ? 0 : Math.max(0, Math.min(1, ((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy)));
      m = Math.min(m, Math.hypot(x - (x0 + t * dx), y - (y0 + t * dy)));
    }
    return m;
  };
  let best: { x: number; y: number; distance: number } | undefined;
  for (let k = 1; k < 16; k++) {
    const y = ymin + ((ymax - ymin) * k) / 16;
    const xs: number[] = [];
    for (const [x0, y0, x1, y1] of edges) if (y0 <= y !== y1 <= y) xs.push(x0 + ((y - y0) * (x1 - x0)) / (y1 - y0));
    xs.sort((a, b) => a - b);
    for (let i = 0; i + 1 < xs.length; i += 2) {
      const x = (xs[i]! + xs[i + 1]!) / 2;
      const distance = dist(x, y);
      if (!best || distance > best.distance) best = { x, y, distance };
    }
  }
  return best;
}

import { createRequire } from 'node:module';
import type { PNG as PngClass } from 'pngjs';
import { beforeEach, describe, expect, it } from 'vitest';
import { featureLayer, memoryMap, memoryTable, rasterLayer } from '../../../../test/memory-map.js';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../../test/site.js';
import type { SpatialReference } from '../../../core/pixel-block.js';
import { EngineError } from '../../../core/errors.js';
import { renderExport } from '../../image/export-image.js';
import { imageServicesOf } from '../../image/service.js';
import type { Geometry, MapService } from '../../map/model.js';
import { mapOutputRoutes } from '../../map/outputs.js';
import { drawScaleBar, defaultScaleBar, formatNumber } from '../../map/scale-bar.js';
import type { SoapArgs, SoapContext, SoapObject, SoapValue } from '../operation.js';
import { decodeRequest, encodeResponse } from '../codec.js';
import { GEO_SOAP_NS, parseEnvelope } from '../envelope.js';
import { operationSignature } from '../signatures.js';
import { colorOfSoap, drawHandlers } from './draw.js';

const { PNG } = createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass };

const DEM = `${import.meta.dirname}/../../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const UTM: SpatialReference = { wkid: 32616 };
const FULL = { xmin: 732000, ymin: 4068150 - 407 * 75, xmax: 732000 + 383 * 75, ymax: 4068150 };
const CX = 745000;
const CY = 4055000;

let site: TestSite;

beforeEach(async () => {
  site = await testSite();
});

function ctxOf(service: MapService, token?: string): SoapContext {
  return {
    deps: site,
    service,
    request: siteRequest('/server/services/olinda/MapServer', { method: 'POST' }),
    signal: new AbortController().signal,
    endpoint: 'https://localhost/server/services/olinda/MapServer',
    origin: 'https://localhost',
    ...(token ? { token } : {}),
  };
}

async function call(op: string, service: MapService, args: SoapArgs, token?: string): Promise<SoapObject> {
  const r = await drawHandlers[op]!(ctxOf(service, token), args);
  return r['Result'] as SoapObject;
}

const mapDescription = (e: [number, number, number, number], extra: Record<string, SoapValue> = {}) => ({
  $type: 'MapDescription',
  Name: 'Layers',
  MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: e[0], YMin: e[1], XMax: e[2], YMax: e[3] } },
  Rotation: 0,
  ...extra,
});
const imageDescription = (format: string, w: number, h: number, returnType = 'geoImageReturnMimeData', dpi = 96) => ({
  $type: 'ImageDescription',
  ImageType: { $type: 'ImageType', ImageFormat: format, ImageReturnType: returnType },
  ImageDisplay: { $type: 'ImageDisplay', ImageHeight: h, ImageWidth: w, ImageDPI: dpi },
});

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
const fill = (color: number[]) => ({ type: 'esriSFS', style: 'esriSFSSolid', color });

async function demMap(): Promise<MapService> {
  return memoryMap([await rasterLayer(0, 'Relief', DEM)], UTM, FULL);
}

function featureMap(extra: Partial<Parameters<typeof featureLayer>[4]> = {}): MapService {
  const table = memoryTable(
    [5, 15, 25, 99].map((v, i) => ({ id: i + 1, attributes: { POP: v }, geometry: square(CX - 1500 + i * 1000, CY, 300) })),
    'polygon',
  );
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
    defaultLabel: 'Other',
  };
  return memoryMap([featureLayer(0, 'Tracts', table, renderer, extra)], UTM, FULL);
}

const bytes = (v: SoapValue): Uint8Array => {
  expect(v).toBeInstanceOf(Uint8Array);
  return v as Uint8Array;
};
const decode = (b: Uint8Array) => PNG.sync.read(Buffer.from(b));
const magic = (b: Uint8Array, n: number): string => Buffer.from(b.slice(0, n)).toString('latin1');

async function expectEngineError(p: Promise<unknown>, code: string, path?: string, message?: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(EngineError);
  expect((e as EngineError).code).toBe(code);
  if (path !== undefined) expect((e as EngineError).path).toBe(path);
  if (message) expect((e as EngineError).message).toMatch(message);
}

describe('ExportMapImage', () => {
  it('a raster-only map is bit for bit the image service exportImage of the same rule, extent and size (same engine path)', async () => {
    const service = await demMap();
    const md = mapDescription([740000, 4050000, 752000, 4059000]);
    const r = await call('ExportMapImage', service, { MapDescription: md, ImageDescription: imageDescription('geoImagePNG32', 240, 180) });
    expect(r.$type).toBe('MapImage');
    expect(r['ImageURL']).toBe('');
    expect(r['ImageType']).toBe('image/png');
    const png = decode(bytes(r['ImageData']));
    const layer = service.layers[0]!;
    if (layer.kind !== 'raster') throw new Error('raster layer expected');
    const ref = await renderExport(imageServicesOf(site), layer.image, {
      rule: layer.image.settings.renderingRule,
      grid: { spatialReference: UTM, extent: { xmin: 740000, ymin: 4050000, xmax: 752000, ymax: 4059000 }, width: 240, height: 180 },
      method: 'nearest',
      included: true,
      encode: { format: 'png32', quality: 75, compression: 'deflate' },
      noDataMode: 'any',
    });
    const want = decode(ref.bytes);
    expect(Buffer.compare(png.data, want.data)).toBe(0);
    // 12000 m over 240 px = 50 m/px: 1:188976.38 at 96 dpi
    expect(r['MapScale']).toBeCloseTo((50 * 96) / 0.0254, 3);
    expect(r['Extent']).toMatchObject({ $type: 'EnvelopeN', XMin: 740000, YMin: 4050000, XMax: 752000, YMax: 4059000 });
    expect((r['Extent'] as SoapObject)['SpatialReference']).toMatchObject({ WKID: 32616 });
    expect(r['VisibleLayerIDs']).toEqual([0]);
    expect([r['ImageWidth'], r['ImageHeight'], r['ImageDPI']]).toEqual([240, 180, 96]);
  });

  it('grows the short side of the extent about its centre to the image aspect', async () => {
    const service = featureMap();
    const md = mapDescription([CX - 5000, CY - 5000, CX + 5000, CY + 5000]);
    const r = await call('ExportMapImage', service, { MapDescription: md, ImageDescription: imageDescription('geoImagePNG', 600, 400) });
    // 10 km square into 600 x 400: the width grows to 15 km (25 m/px)
    expect(r['Extent']).toMatchObject({ XMin: CX - 7500, XMax: CX + 7500, YMin: CY - 5000, YMax: CY + 5000 });
    expect(r['MapScale']).toBeCloseTo(94488.19, 2);
    const png = decode(bytes(r['ImageData']));
    expect([png.width, png.height]).toEqual([600, 400]);
    // Each tract (600 m square at x = CX-1500+1000i) in its class colour at its centre; background at the corner.
    const px = (x: number, y: number) => {
      const col = Math.floor((x - (CX - 7500)) / 25);
      const row = Math.floor((CY + 5000 - y) / 25);
      const o = 4 * (row * 600 + col);
      return [png.data[o], png.data[o + 1], png.data[o + 2]];
    };
    expect(px(CX - 1500, CY)).toEqual([255, 0, 0]);
    expect(px(CX - 500, CY)).toEqual([0, 255, 0]);
    expect(px(CX + 500, CY)).toEqual([0, 0, 255]);
    expect(px(CX + 1500, CY)).toEqual([128, 128, 128]);
    expect(px(CX - 7000, CY + 4500)).toEqual([255, 255, 255]);
  });

  it('writes each format the engine can encode and refuses the others with "Image format not supported"', async () => {
    const service = featureMap();
    const md = mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000]);
    const cases: [string, string, string][] = [
      ['geoImagePNG', 'image/png', '\x89PNG'],
      ['geoImagePNG24', 'image/png', '\x89PNG'],
      ['geoImageJPG', 'image/jpeg', '\xff\xd8\xff'],
      ['geoImageJPGPNG', 'image/jpeg', '\xff\xd8\xff'],
      ['geoImageGIF', 'image/gif', 'GIF89a'],
      ['geoImageBMP', 'image/bmp', 'BM'],
      ['geoImageTIFF', 'image/tiff', 'II*\x00'],
      ['geoImagePDF', 'application/pdf', '%PDF'],
      ['geoImageSVG', 'image/svg+xml', '<?xml'],
    ];
    for (const [format, mime, head] of cases) {
      const r = await call('ExportMapImage', service, { MapDescription: md, ImageDescription: imageDescription(format, 80, 40) });
      expect(r['ImageType'], format).toBe(mime);
      expect(magic(bytes(r['ImageData']), head.length), format).toBe(head);
    }
    // JPGPNG with transparent pixels is a PNG (with alpha)
    const transparent = await call('ExportMapImage', service, {
      MapDescription: md,
      ImageDescription: {
        ...imageDescription('geoImageJPGPNG', 80, 40),
        ImageDisplay: {
          ImageWidth: 80,
          ImageHeight: 40,
          ImageDPI: 96,
          TransparentColor: { $type: 'RgbColor', Red: 255, Green: 255, Blue: 255 },
        },
      },
    });
    expect(transparent['ImageType']).toBe('image/png');
    const png = decode(bytes(transparent['ImageData']));
    expect(png.data[3]).toBe(0);
    for (const format of ['geoImageEMF', 'geoImagePS', 'geoImageAI', 'geoImageNone']) {
      await expectEngineError(
        call('ExportMapImage', service, { MapDescription: md, ImageDescription: imageDescription(format, 80, 40) }),
        'INVALID_ARGUMENT',
        'ImageDescription/ImageType/ImageFormat',
        /^Image format not supported$/,
      );
    }
  });

  it('honours LayerDescriptions (visibility, definition expression, unknown layers), MapDescription background and map name', async () => {
    const service = featureMap();
    const md = (extra: Record<string, SoapValue>) => mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000], extra);
    const hidden = await call('ExportMapImage', service, {
      MapDescription: md({
        LayerDescriptions: [{ $type: 'LayerDescription', LayerID: 0, Visible: false, DefinitionExpression: '' }],
        BackgroundSymbol: { $type: 'SimpleFillSymbol', Style: 'esriSFSSolid', Color: { $type: 'RgbColor', Red: 1, Green: 2, Blue: 3 } },
      }),
      ImageDescription: imageDescription('geoImagePNG', 40, 20),
    });
    expect(hidden['VisibleLayerIDs']).toEqual([]);
    const png = decode(bytes(hidden['ImageData']));
    expect([...png.data.slice(0, 4)]).toEqual([1, 2, 3, 255]);
    await expectEngineError(
      call('ExportMapImage', service, {
        MapDescription: md({ LayerDescriptions: [{ $type: 'LayerDescription', LayerID: 7, Visible: true }] }),
        ImageDescription: imageDescription('geoImagePNG', 40, 20),
      }),
      'NOT_FOUND',
      'MapDescription/LayerDescriptions[0]/LayerID',
      /Layer 7 does not exist in map 'Layers'/,
    );
    await expectEngineError(
      call('ExportMapImage', service, { MapDescription: md({ Name: 'Other' }), ImageDescription: imageDescription('geoImagePNG', 40, 20) }),
      'NOT_FOUND',
      'MapDescription/Name',
    );
  });
});

describe('ExportMapImage: DrawingDescription', () => {
  it('a FeatureRenderer replaces the layer renderer and Transparency blends the layer as a whole', async () => {
    const service = featureMap();
    const pixelOf = async (dd: SoapObject): Promise<number[]> => {
      const r = await call('ExportMapImage', service, {
        MapDescription: mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000], {
          LayerDescriptions: [{ $type: 'LayerDescription', LayerID: 0, Visible: true, DrawingDescription: dd }],
        }),
        ImageDescription: imageDescription('geoImagePNG', 400, 200),
      });
      const png = decode(bytes(r['ImageData']));
      // centre of the first tract (CX - 1500, CY): column 50, row 100 at 10 m/px
      const o = 4 * (100 * 400 + 50);
      return [...png.data.slice(o, o + 3)];
    };
    const simple = {
      $type: 'FeatureLayerDrawingDescription',
      FeatureRenderer: {
        $type: 'SimpleRenderer',
        Symbol: { $type: 'SimpleFillSymbol', Style: 'esriSFSSolid', Color: { $type: 'RgbColor', Red: 10, Green: 100, Blue: 200 } },
        Label: 'All',
      },
    };
    expect(await pixelOf(simple)).toEqual([10, 100, 200]);
    const unique = {
      $type: 'FeatureLayerDrawingDescription',
      FeatureRenderer: {
        $type: 'UniqueValueRenderer',
        Field1: 'POP',
        FieldDelimiter: ',',
        UniqueValueInfos: [
          {
            $type: 'UniqueValueInfo',
            Value: '5',
            Label: 'five',
            Symbol: { $type: 'SimpleFillSymbol', Color: { $type: 'RgbColor', Red: 0, Green: 0, Blue: 0 } },
          },
        ],
      },
    };
    expect(await pixelOf(unique)).toEqual([0, 0, 0]);
    // 50 % transparent red over white
    const half = await pixelOf({ $type: 'FeatureLayerDrawingDescription', Transparency: 50 });
    expect(half[0]).toBe(255);
    expect(Math.abs(half[1]! - 128)).toBeLessThanOrEqual(3);
    expect(Math.abs(half[2]! - 128)).toBeLessThanOrEqual(3);
  });

  it('GetLegendInfo2 shows the renderer the MapDescription draws with', async () => {
    const service = featureMap();
    const r = await drawHandlers['GetLegendInfo2']!(ctxOf(service), {
      MapDescription: mapDescription([CX - 2000, CY - 2000, CX + 2000, CY + 2000], {
        LayerDescriptions: [
          {
            $type: 'LayerDescription',
            LayerID: 0,
            Visible: true,
            DrawingDescription: {
              $type: 'FeatureLayerDrawingDescription',
              FeatureRenderer: {
                $type: 'ClassBreaksRenderer',
                Field: 'POP',
                MinimumValue: 0,
                ClassBreakInfos: [
                  {
                    $type: 'ClassBreakInfo',
                    ClassMaximumValue: 50,
                    ClassMinimumValue: 0,
                    Label: 'Low',
                    Symbol: { $type: 'SimpleFillSymbol', Color: { $type: 'RgbColor', Red: 1, Green: 2, Blue: 3 } },
                  },
                  {
                    $type: 'ClassBreakInfo',
                    ClassMaximumValue: 100,
                    ClassMinimumValue: 50,
                    Label: 'High',
                    Symbol: { $type: 'SimpleFillSymbol', Color: { $type: 'RgbColor', Red: 4, Green: 5, Blue: 6 } },
                  },
                ],
              },
            },
          },
        ],
      }),
      MapImageDisplay: { ImageWidth: 400, ImageHeight: 400, ImageDPI: 96 },
      LayerIDs: [0],
      LegendPatch: { $type: 'MapServerLegendPatch', Width: 15, Height: 15, ImageDPI: 96 },
    });
    const group = ((r['Result'] as SoapObject[])[0]!['LegendGroups'] as SoapObject[])[0]!;
    expect((group['LegendClasses'] as SoapObject[]).map((c) => c['Label'])).toEqual(['Low', 'High']);
  });
});

describe('ExportMapImage: selection', () => {
  it('draws selected features in the selection colour, over their selection buffer', async () => {
    const table = memoryTable(
      [
        { id: 1, attributes: {}, geometry: { type: 'Point', coordinates: [CX, CY] } },
        { id: 2, attributes: {}, geometry: { type: 'Point', coordinates: [CX - 1500, CY] } },
      ],
      'point',
    );
    const symbol = { type: 'esriSMS', style: 'esriSMSCircle', color: [0, 0, 0, 255], size: 6 };
    const service = memoryMap([featureLayer(0, 'Wells', table, { type: 'simple', symbol })], UTM, FULL);
    const r = await call('ExportMapImage', service, {
      MapDescription: mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000], {
        LayerDescriptions: [
          {
            $type: 'LayerDescription',
            LayerID: 0,
            Visible: true,
            SelectionFeatures: [1],
            SelectionColor: { $type: 'RgbColor', Red: 0, Green: 0, Blue: 255 },
            ShowSelectionBuffer: true,
            SelectionBufferDistance: 500,
          },
        ],
      }),
      ImageDescription: imageDescription('geoImagePNG', 400, 200),
    });
    const png = decode(bytes(r['ImageData']));
    // 10 m/px
    const at = (x: number, y: number) => {
      const o = 4 * (Math.floor((CY + 1000 - y) / 10) * 400 + Math.floor((x - (CX - 2000)) / 10));
      return [...png.data.slice(o, o + 3)];
    };
    expect(at(CX, CY)).toEqual([0, 0, 255]);
    expect(at(CX - 1500, CY)).toEqual([0, 0, 0]);
    // inside the 500 m buffer: blue at 25 % over white; outside: white
    const inside = at(CX + 300, CY + 100);
    expect(inside[2]).toBe(255);
    expect(Math.abs(inside[0]! - 191)).toBeLessThanOrEqual(2);
    expect(at(CX + 700, CY)).toEqual([255, 255, 255]);
  });
});

describe('ExportMapImage: labels', () => {
  it('ShowLabels writes each feature label (the display field by default, or the LabelingDescription classes)', async () => {
    const service = featureMap();
    const blackIn = async (ld: Record<string, SoapValue>, tract = 0): Promise<number> => {
      const r = await call('ExportMapImage', service, {
        MapDescription: mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000], {
          LayerDescriptions: [{ $type: 'LayerDescription', LayerID: 0, Visible: true, ...ld }],
        }),
        ImageDescription: imageDescription('geoImagePNG', 400, 200),
      });
      const png = decode(bytes(r['ImageData']));
      // the first tract: 600 m square centred at CX - 1500 (columns 20..80, rows 70..130 at 10 m/px)
      let n = 0;
      for (let y = 72; y < 128; y++)
        for (let x = 22 + 100 * tract; x < 78 + 100 * tract; x++) {
          const o = 4 * (y * 400 + x);
          if (png.data[o]! < 90 && png.data[o + 1]! < 90 && png.data[o + 2]! < 90) n++;
        }
      return n;
    };
    expect(await blackIn({ ShowLabels: false })).toBe(0);
    expect(await blackIn({ ShowLabels: true })).toBeGreaterThan(2);
    const labeling = {
      ShowLabels: true,
      DrawingDescription: {
        $type: 'FeatureLayerDrawingDescription',
        LabelingDescription: {
          $type: 'LabelingDescription',
          LabelClassDescriptions: [
            {
              $type: 'LabelClassDescription',
              LabelExpression: '"Pop " & [POP]',
              WhereClause: 'POP = 15',
              Symbol: {
                $type: 'SimpleTextSymbol',
                Size: 10,
                FontFamilyName: 'DejaVu Sans',
                Color: { $type: 'RgbColor', Red: 0, Green: 0, Blue: 0 },
              },
            },
          ],
        },
      },
    };
    // only the tract with POP = 15 (the second) is labelled
    expect(await blackIn(labeling)).toBe(0);
    expect(await blackIn(labeling, 1)).toBeGreaterThan(5);
  });
});

describe('ExportMapImage: HonorLayerReordering', () => {
  it('draws the layers in the LayerDescriptions order (first on top) when asked, else layer 0 on top', async () => {
    const a = memoryTable([{ id: 1, attributes: {}, geometry: square(CX, CY, 500) }], 'polygon');
    const b = memoryTable([{ id: 1, attributes: {}, geometry: square(CX, CY, 800) }], 'polygon');
    const service = memoryMap(
      [
        featureLayer(0, 'Small', a, { type: 'simple', symbol: fill([255, 0, 0, 255]) }),
        featureLayer(1, 'Big', b, { type: 'simple', symbol: fill([0, 0, 255, 255]) }),
      ],
      UTM,
      FULL,
    );
    const centre = async (extra: Record<string, SoapValue>) => {
      const r = await call('ExportMapImage', service, {
        MapDescription: mapDescription([CX - 1000, CY - 1000, CX + 1000, CY + 1000], {
          LayerDescriptions: [
            { $type: 'LayerDescription', LayerID: 1, Visible: true },
            { $type: 'LayerDescription', LayerID: 0, Visible: true },
          ],
          ...extra,
        }),
        ImageDescription: imageDescription('geoImagePNG', 100, 100),
      });
      const png = decode(bytes(r['ImageData']));
      return [...png.data.slice(4 * (50 * 100 + 50), 4 * (50 * 100 + 50) + 3)];
    };
    expect(await centre({})).toEqual([255, 0, 0]);
    expect(await centre({ HonorLayerReordering: false })).toEqual([255, 0, 0]);
    expect(await centre({ HonorLayerReordering: true })).toEqual([0, 0, 255]);
  });
});

describe('ExportMapImage: CustomGraphics', () => {
  it('draws polygon, marker and text elements on top of the layers, in the drawn spatial reference', async () => {
    const service = featureMap();
    const rgb = (r: number, g: number, b: number) => ({ $type: 'RgbColor', Red: r, Green: g, Blue: b });
    const ring = (cx: number, cy: number, h: number) => ({
      $type: 'Ring',
      PointArray: [
        [cx - h, cy - h],
        [cx + h, cy - h],
        [cx + h, cy + h],
        [cx - h, cy + h],
        [cx - h, cy - h],
      ].map(([X, Y]) => ({ $type: 'PointN', X, Y })),
    });
    const r = await call('ExportMapImage', service, {
      MapDescription: mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000], {
        CustomGraphics: [
          // over the first tract (red): drawn on top
          {
            $type: 'PolygonElement',
            Polygon: { $type: 'PolygonN', RingArray: [ring(CX - 1500, CY, 100)] },
            Symbol: { $type: 'SimpleFillSymbol', Color: rgb(0, 0, 0) },
          },
          {
            $type: 'MarkerElement',
            Point: { $type: 'PointN', X: CX, Y: CY + 700 },
            Symbol: { $type: 'SimpleMarkerSymbol', Style: 'esriSMSSquare', Size: 9, Color: rgb(255, 0, 255) },
          },
          {
            $type: 'TextElement',
            Text: 'Olinda',
            TextGeometry: { $type: 'PointN', X: CX, Y: CY - 700 },
            Symbol: { $type: 'TextSymbol', Size: 12, Color: rgb(0, 0, 0) },
          },
        ],
      }),
      ImageDescription: imageDescription('geoImagePNG', 400, 200),
    });
    const png = decode(bytes(r['ImageData']));
    // 10 m/px; pixel of map point (x, y)
    const at = (x: number, y: number) => {
      const o = 4 * (Math.floor((CY + 1000 - y) / 10) * 400 + Math.floor((x - (CX - 2000)) / 10));
      return [...png.data.slice(o, o + 3)];
    };
    expect(at(CX - 1500, CY)).toEqual([0, 0, 0]);
    expect(at(CX - 1500 + 200, CY)).toEqual([255, 0, 0]);
    expect(at(CX, CY + 700)).toEqual([255, 0, 255]);
    // text: dark pixels in a band around the point, none far from it
    let dark = 0;
    for (let y = 160; y < 180; y++) for (let x = 150; x < 250; x++) if (png.data[4 * (y * 400 + x)]! < 100) dark++;
    expect(dark).toBeGreaterThan(30);
  });
});

describe('ExportMapImage: Rotation', () => {
  it('turns the map counter-clockwise about the image centre: a feature east of the centre shows north of it at 90 degrees', async () => {
    const table = memoryTable([{ id: 1, attributes: {}, geometry: square(CX + 1000, CY, 300) }], 'polygon');
    const service = memoryMap([featureLayer(0, 'East', table, { type: 'simple', symbol: fill([255, 0, 0, 255]) })], UTM, FULL);
    const run = async (rotation: number) => {
      const r = await call('ExportMapImage', service, {
        MapDescription: { ...mapDescription([CX - 2000, CY - 2000, CX + 2000, CY + 2000]), Rotation: rotation },
        ImageDescription: imageDescription('geoImagePNG', 200, 200),
      });
      const png = decode(bytes(r['ImageData']));
      const at = (col: number, row: number) => [...png.data.slice(4 * (row * 200 + col), 4 * (row * 200 + col) + 3)];
      // 20 m/px: 1000 m = 50 px from the centre (100, 100)
      return { east: at(150, 100), north: at(100, 50), west: at(50, 100), south: at(100, 150), scale: r['MapScale'], extent: r['Extent'] };
    };
    const still = await run(0);
    expect(still.east).toEqual([255, 0, 0]);
    expect(still.north).toEqual([255, 255, 255]);
    const turned = await run(90);
    expect(turned.north).toEqual([255, 0, 0]);
    expect(turned.east).toEqual([255, 255, 255]);
    const back = await run(-90);
    expect(back.east).toEqual([255, 255, 255]);
    expect(back.north).toEqual([255, 255, 255]);
    expect(back.west).toEqual([255, 255, 255]);
    expect(back.south).toEqual([255, 0, 0]);
    expect(turned.scale).toBe(still.scale);
    expect(turned.extent).toEqual(still.extent);
  });
});

describe('SOAP colours', () => {
  it('RGB, grey, HSV, HLS and CMYK with AlphaValue', () => {
    expect(colorOfSoap({ $type: 'RgbColor', Red: 1, Green: 2, Blue: 3 }, 'c')).toEqual([1, 2, 3, 255]);
    expect(colorOfSoap({ $type: 'RgbColor', Red: 1, Green: 2, Blue: 3, AlphaValue: 0 }, 'c')).toEqual([1, 2, 3, 0]);
    expect(colorOfSoap({ $type: 'GrayColor', GrayLevel: 77 }, 'c')).toEqual([77, 77, 77, 255]);
    expect(colorOfSoap({ $type: 'HsvColor', Hue: 120, Saturation: 100, Value: 100 }, 'c')).toEqual([0, 255, 0, 255]);
    expect(colorOfSoap({ $type: 'HsvColor', Hue: 240, Saturation: 50, Value: 100 }, 'c')).toEqual([128, 128, 255, 255]);
    expect(colorOfSoap({ $type: 'HlsColor', Hue: 0, Lightness: 50, Saturation: 100 }, 'c')).toEqual([255, 0, 0, 255]);
    expect(colorOfSoap({ $type: 'HlsColor', Hue: 0, Lightness: 100, Saturation: 0 }, 'c')).toEqual([255, 255, 255, 255]);
    expect(colorOfSoap({ $type: 'CmykColor', Cyan: 100, Magenta: 0, Yellow: 0, Black: 0 }, 'c')).toEqual([0, 255, 255, 255]);
    expect(colorOfSoap({ $type: 'CmykColor', Cyan: 0, Magenta: 0, Yellow: 0, Black: 100 }, 'c')).toEqual([0, 0, 0, 255]);
    expect(colorOfSoap(undefined, 'c')).toBeUndefined();
    expect(() => colorOfSoap({ $type: 'LabColor' }, 'MapDescription/SelectionColor')).toThrow(/unknown Color type/);
  });
});

describe('URL outputs', () => {
  const routeOf = () => mapOutputRoutes(site)[0]!.handler;
  const pathOf = (url: string): string => url.replace('https://localhost', '');

  it('are served over the server origin with Cache-Control private, then expire (manual clock)', async () => {
    const service = featureMap();
    const md = mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000]);
    const r = await call('ExportMapImage', service, {
      MapDescription: md,
      ImageDescription: imageDescription('geoImagePNG', 80, 40, 'geoImageReturnURL'),
    });
    expect(r['ImageData']).toBeUndefined();
    const url = r['ImageURL'] as string;
    expect(url).toMatch(/^https:\/\/localhost\/server\/rest\/directories\/output\/[A-Za-z0-9_-]{22}\.png$/);
    const res = await routeOf()(siteRequest(pathOf(url)));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('cache-control')).toBe('private');
    const png = decode(new Uint8Array(await res.arrayBuffer()));
    expect([png.width, png.height]).toEqual([80, 40]);
    site.clock.advance(9 * 60_000);
    expect((await routeOf()(siteRequest(pathOf(url)))).status).toBe(200);
    site.clock.advance(2 * 60_000);
    const gone = await routeOf()(siteRequest(pathOf(url)));
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toMatch(/json/);
    const body = await jsonOf<{ error: { code: number } }>(gone);
    expect(body.error.code).toBe(404);
    // an unknown (well-formed) name is the same answer
    const unknown = await jsonOf<{ error: { code: number } }>(
      await routeOf()(siteRequest('/server/rest/directories/output/AAAAAAAAAAAAAAAAAAAAAA.png')),
    );
    expect(unknown.error.code).toBe(404);
  });

  it('of a secured service carry the caller token and are refused without a valid one', async () => {
    await site.addUser('u');
    const token = await site.token('u');
    const service = featureMap();
    const md = mapDescription([CX - 2000, CY - 1000, CX + 2000, CY + 1000]);
    const r = await call(
      'ExportMapImage',
      service,
      { MapDescription: md, ImageDescription: imageDescription('geoImageJPG', 80, 40, 'geoImageReturnURL') },
      token,
    );
    const url = r['ImageURL'] as string;
    expect(url).toContain(`?token=${encodeURIComponent(token)}`);
    const ok = await routeOf()(siteRequest(pathOf(url)));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('image/jpeg');
    const bare = pathOf(url).replace(/\?.*$/, '');
    const without = await jsonOf<{ error: { code: number } }>(await routeOf()(siteRequest(bare)));
    expect(without.error.code).toBe(499);
    const bad = await jsonOf<{ error: { code: number } }>(await routeOf()(siteRequest(`${bare}?token=nonsense`)));
    expect(bad.error.code).toBe(498);
  });

  it('are bounded: the oldest are removed first', async () => {
    const { createMapOutputs } = await import('../../map/outputs.js');
    const outputs = createMapOutputs(site, { maxBytes: 250 });
    const a = await outputs.put(new Uint8Array(100), 'png', { service: 's', secured: false });
    const b = await outputs.put(new Uint8Array(100), 'png', { service: 's', secured: false });
    const c = await outputs.put(new Uint8Array(100), 'png', { service: 's', secured: false });
    expect(await outputs.get(a.name)).toBeUndefined();
    expect(await outputs.get(b.name)).toBeDefined();
    expect(await outputs.get(c.name)).toBeDefined();
    expect(a.name).not.toBe(b.name);
  });
});

describe('ExportScaleBar', () => {
  /** Rows of dark coverage (0..1 per pixel, black on white): the bar is the row with the most. */
  function barRow(rgba: Uint8Array | Uint8ClampedArray, w: number, h: number): { row: number; coverage: number } {
    let best = { row: -1, coverage: 0 };
    for (let y = 0; y < h; y++) {
      let c = 0;
      for (let x = 0; x < w; x++) c += (255 - rgba[4 * (y * w + x)]!) / 255;
      if (c > best.coverage) best = { row: y, coverage: c };
    }
    return best;
  }

  it('draws a bar whose length in pixels is the ground distance it labels over the ground size of a pixel', async () => {
    const service = featureMap();
    // 25 m/px at 96 dpi: 1:94488.19
    const md = mapDescription([CX - 7500, CY - 5000, CX + 7500, CY + 5000]);
    const r = await call('ExportScaleBar', service, {
      ScaleBar: { $type: 'SingleDivisionScaleBar', UnitLabelPosition: 'geoScaleBarBelow', Divisions: 4 },
      MapDescription: md,
      MapDisplay: { ImageWidth: 600, ImageHeight: 400, ImageDPI: 96 },
      ImageDescription: imageDescription('geoImagePNG', 400, 60),
    });
    expect(r.$type).toBe('ImageResult');
    expect([r['ImageWidth'], r['ImageHeight'], r['ImageDPI'], r['ImageType']]).toEqual([400, 60, 96, 'image/png']);
    const png = decode(bytes(r['ImageData']));
    const { coverage } = barRow(png.data, 400, 60);
    // 4 divisions of 2 km = 8 km = 320 px (+ the 1 px outline's outer halves)
    const spec = { ...defaultScaleBar('geoMeters'), kind: 'single' as const, unitLabelPosition: 'geoScaleBarBelow' as const };
    const { layout } = drawScaleBar(spec, 94488.18897637795, 400, 60, 96, [255, 255, 255, 255]);
    expect(layout.units).toBe('geoKilometers');
    expect(layout.division).toBe(2);
    expect(layout.rightX - layout.leftX).toBeCloseTo(8000 / 25, 6);
    expect(coverage).toBeCloseTo(320 + 1, 0);
  });

  it('at 192 dpi the same map scale draws the same ground length over twice the pixels', async () => {
    const spec = { ...defaultScaleBar('geoMeters'), kind: 'single' as const, unitLabelPosition: 'geoScaleBarBelow' as const };
    const { layout, rgba } = drawScaleBar(spec, 94488.18897637795, 800, 120, 192, [255, 255, 255, 255]);
    expect(layout.division).toBe(2);
    expect(layout.rightX - layout.leftX).toBeCloseTo(8000 / 12.5, 6);
    expect(barRow(rgba, 800, 120).coverage).toBeCloseTo(640 + 2, 0);
  });

  it('an alternating bar alternates its fills, labels its divisions and names its units', async () => {
    const spec = { ...defaultScaleBar('geoMeters') };
    const { layout, rgba } = drawScaleBar(spec, 94488.18897637795, 400, 60, 96, [255, 255, 255, 255]);
    const mid = Math.round(layout.barTop + layout.barHeight / 2);
    const at = (x: number) => rgba[4 * (mid * 400 + Math.floor(x))]!;
    const d = layout.division * layout.pxPerUnit;
    expect(at(layout.zeroX + d / 2)).toBe(0);
    expect(at(layout.zeroX + (3 * d) / 2)).toBe(255);
    expect(at(layout.zeroX + (5 * d) / 2)).toBe(0);
    // labels above the bar: dark pixels in the rows above it
    let above = 0;
    for (let y = 0; y < layout.barTop - 2; y++) for (let x = 0; x < 400; x++) if (rgba[4 * (y * 400 + x)]! < 128) above++;
    expect(above).toBeGreaterThan(20);
    // feet maps: miles for long bars
    const ft = drawScaleBar(defaultScaleBar('geoFeet'), 1e6, 400, 60, 96, [255, 255, 255, 255]);
    expect(ft.layout.units).toBe('geoMiles');
    expect(ft.layout.rightX - ft.layout.zeroX).toBeCloseTo((ft.layout.length * 1609.344) / ((1e6 * 0.0254) / 96), 6);
  });

  it('ImageDisplay TransparentColor makes the background of the bar transparent', async () => {
    const service = featureMap();
    const r = await call('ExportScaleBar', service, {
      MapDescription: mapDescription([CX - 7500, CY - 5000, CX + 7500, CY + 5000]),
      MapDisplay: { ImageWidth: 600, ImageHeight: 400, ImageDPI: 96 },
      BackGroundColor: { $type: 'RgbColor', Red: 250, Green: 250, Blue: 250 },
      ImageDescription: {
        ...imageDescription('geoImagePNG32', 300, 40),
        ImageDisplay: {
          ImageWidth: 300,
          ImageHeight: 40,
          ImageDPI: 96,
          TransparentColor: { $type: 'RgbColor', Red: 250, Green: 250, Blue: 250 },
        },
      },
    });
    const png = decode(bytes(r['ImageData']));
    expect(png.data[3]).toBe(0);
    let opaque = 0;
    for (let i = 3; i < png.data.length; i += 4) if (png.data[i] === 255) opaque++;
    expect(opaque).toBeGreaterThan(100);
  });

  it('draws division marks of DivisionMarkHeight above the bar', async () => {
    const service = featureMap();
    const run = async (bar: SoapObject) => {
      const r = await call('ExportScaleBar', service, {
        ScaleBar: bar,
        MapDescription: mapDescription([CX - 7500, CY - 5000, CX + 7500, CY + 5000]),
        MapDisplay: { ImageWidth: 600, ImageHeight: 400, ImageDPI: 96 },
        ImageDescription: imageDescription('geoImagePNG', 400, 80),
      });
      return decode(bytes(r['ImageData']));
    };
    const base = {
      $type: 'SingleDivisionScaleBar',
      LabelFrequency: 'geoScaleBarNone',
      UnitLabelPosition: 'geoScaleBarBelow',
      Divisions: 4,
    };
    const plain = await run(base);
    const marked = await run({
      ...base,
      DivisionMarkHeight: 10,
      MarkPosition: 'geoAbove',
      DivisionMarkSymbol: { $type: 'SimpleLineSymbol', Width: 1, Color: { $type: 'RgbColor', Red: 255, Green: 0, Blue: 0 } },
    });
    // red marks appear (5 of them: 0 and the 4 division ends), above the black bar
    let red = 0;
    const cols = new Set<number>();
    for (let y = 0; y < 80; y++)
      for (let x = 0; x < 400; x++) {
        const o = 4 * (y * 400 + x);
        if (marked.data[o]! > 200 && marked.data[o + 1]! < 200) {
          red++;
          cols.add(x);
        }
        expect(plain.data[o]! > 200 && plain.data[o + 1]! < 200).toBe(false);
      }
    expect(red).toBeGreaterThan(20);
    const groups = [...cols].sort((a, b) => a - b).filter((x, i, a) => i === 0 || x - a[i - 1]! > 2);
    expect(groups).toHaveLength(5);
  });

  it('formats labels with NumberFormat (decimals, significant digits, separators, padding, plus sign)', () => {
    const f = (
      rounding: 'decimals' | 'significant',
      value: number,
      o: Partial<{ separator: boolean; zeroPad: boolean; showPlus: boolean }> = {},
    ) => ({
      rounding,
      value,
      separator: false,
      zeroPad: false,
      showPlus: false,
      ...o,
    });
    expect(formatNumber(2.5, undefined)).toBe('2.5');
    expect(formatNumber(2.5, f('decimals', 2, { zeroPad: true }))).toBe('2.50');
    expect(formatNumber(2.5, f('decimals', 2))).toBe('2.5');
    expect(formatNumber(12000, f('decimals', 0, { separator: true }))).toBe('12,000');
    expect(formatNumber(1234.5678, f('significant', 3))).toBe('1230');
    expect(formatNumber(0.0123456, f('significant', 2))).toBe('0.012');
    expect(formatNumber(8, f('decimals', 1, { zeroPad: true, showPlus: true }))).toBe('+8.0');
    expect(formatNumber(0, f('decimals', 0, { showPlus: true }))).toBe('0');
  });

  it('refuses malformed scale bars', async () => {
    const service = featureMap();
    const md = mapDescription([CX - 7500, CY - 5000, CX + 7500, CY + 5000]);
    await expectEngineError(
      call('ExportScaleBar', service, {
        ScaleBar: { $type: 'AlternatingScaleBar', Divisions: 0 },
        MapDescription: md,
        MapDisplay: { ImageWidth: 600, ImageHeight: 400, ImageDPI: 96 },
        ImageDescription: imageDescription('geoImagePNG', 400, 60),
      }),
      'INVALID_ARGUMENT',
      'ScaleBar/Divisions',
    );
  });
});

describe('GetLegendInfo', () => {
  const patch = (w: number, h: number, dpi: number) => ({ $type: 'MapServerLegendPatch', Width: w, Height: h, ImageDPI: dpi });

  it('a feature layer: one group per renderer, one class per symbol, patches drawn with the symbol at the patch size', async () => {
    const service = featureMap();
    const r = await drawHandlers['GetLegendInfo']!(ctxOf(service), {
      MapName: 'Layers',
      LayerIDs: [],
      LegendPatch: patch(15, 15, 96),
      ImageType: { $type: 'ImageType', ImageFormat: 'geoImagePNG', ImageReturnType: 'geoImageReturnMimeData' },
    });
    const infos = r['Result'] as SoapObject[];
    expect(infos).toHaveLength(1);
    expect(infos[0]).toMatchObject({ $type: 'MapServerLegendInfo', LayerID: 0, Name: 'Tracts' });
    const groups = infos[0]!['LegendGroups'] as SoapObject[];
    expect(groups).toHaveLength(1);
    expect(groups[0]!['Heading']).toBe('POP');
    const classes = groups[0]!['LegendClasses'] as SoapObject[];
    expect(classes.map((c) => c['Label'])).toEqual(['0 - 10', '10 - 20', '20 - 30', 'Other']);
    const colours = classes.map((c) => {
      const img = c['SymbolImage'] as SoapObject;
      expect([img['ImageWidth'], img['ImageHeight'], img['ImageType']]).toEqual([20, 20, 'image/png']);
      const png = decode(bytes(img['ImageData']));
      const o = 4 * (10 * 20 + 10);
      return [...png.data.slice(o, o + 4)];
    });
    expect(colours).toEqual([
      [255, 0, 0, 255],
      [0, 255, 0, 255],
      [0, 0, 255, 255],
      [128, 128, 128, 255],
    ]);
    // 30 pt at 192 dpi = 80 px
    const big = await drawHandlers['GetLegendInfo']!(ctxOf(service), { MapName: 'Layers', LayerIDs: [0], LegendPatch: patch(30, 30, 192) });
    const img = (((big['Result'] as SoapObject[])[0]!['LegendGroups'] as SoapObject[])[0]!['LegendClasses'] as SoapObject[])[0]![
      'SymbolImage'
    ] as SoapObject;
    expect([img['ImageWidth'], img['ImageHeight'], img['ImageDPI']]).toEqual([80, 80, 192]);
  });

  it('an AreaPatch shape: fills drawn in that shape (a triangle leaves the top corners empty)', async () => {
    const service = featureMap();
    const tri = {
      $type: 'PolygonN',
      RingArray: [
        {
          $type: 'Ring',
          PointArray: [
            [0, 0],
            [10, 0],
            [5, 10],
            [0, 0],
          ].map(([X, Y]) => ({ $type: 'PointN', X, Y })),
        },
      ],
    };
    const r = await drawHandlers['GetLegendInfo']!(ctxOf(service), {
      MapName: 'Layers',
      LayerIDs: [0],
      LegendPatch: { ...patch(15, 15, 96), AreaPatch: { $type: 'AreaPatch', Geometry: tri } },
    });
    const info = (r['Result'] as SoapObject[])[0]!;
    const cls = ((info['LegendGroups'] as SoapObject[])[0]!['LegendClasses'] as SoapObject[])[0]!;
    const png = decode(bytes((cls['SymbolImage'] as SoapObject)['ImageData']));
    const alpha = (x: number, y: number) => png.data[4 * (y * 20 + x) + 3];
    expect(alpha(0, 0)).toBe(0);
    expect(alpha(19, 0)).toBe(0);
    expect(alpha(10, 17)).toBe(255);
    expect([...png.data.slice(4 * (17 * 20 + 10), 4 * (17 * 20 + 10) + 3)]).toEqual([255, 0, 0]);
  });

  it('a raster layer: the image service legend (a stretched band: High and Low)', async () => {
    const service = await demMap();
    const r = await drawHandlers['GetLegendInfo']!(ctxOf(service), { MapName: 'Layers', LayerIDs: [0], LegendPatch: patch(15, 15, 96) });
    const classes = (((r['Result'] as SoapObject[])[0]!['LegendGroups'] as SoapObject[])[0]!['LegendClasses'] as SoapObject[]).map(
      (c) => c['Label'] as string,
    );
    expect(classes).toHaveLength(2);
    expect(classes[0]).toMatch(/^High : \d/);
    expect(classes[1]).toMatch(/^Low : \d/);
    // at another patch size (30 pt at 96 dpi = 40 px) and format, the swatch is drawn at that size
    const big = await drawHandlers['GetLegendInfo']!(ctxOf(service), {
      MapName: 'Layers',
      LayerIDs: [0],
      LegendPatch: patch(30, 30, 96),
      ImageType: { $type: 'ImageType', ImageFormat: 'geoImageJPG', ImageReturnType: 'geoImageReturnMimeData' },
    });
    const img = (((big['Result'] as SoapObject[])[0]!['LegendGroups'] as SoapObject[])[0]!['LegendClasses'] as SoapObject[])[0]![
      'SymbolImage'
    ] as SoapObject;
    expect([img['ImageWidth'], img['ImageHeight'], img['ImageType']]).toEqual([40, 40, 'image/jpeg']);
    expect(magic(bytes(img['ImageData']), 3)).toBe('\xff\xd8\xff');
  });

  it('unknown layers and maps are NOT_FOUND', async () => {
    const service = featureMap();
    await expectEngineError(
      drawHandlers['GetLegendInfo']!(ctxOf(service), { MapName: 'Layers', LayerIDs: [3], LegendPatch: patch(15, 15, 96) }),
      'NOT_FOUND',
      'LayerIDs[0]',
    );
    await expectEngineError(
      drawHandlers['GetLegendInfo']!(ctxOf(service), { MapName: 'Nope', LayerIDs: [], LegendPatch: patch(15, 15, 96) }),
      'NOT_FOUND',
      'MapName',
    );
  });

  it('GetLegendInfo2 lists only what the MapDescription draws (visibility and scale range)', async () => {
    const service = featureMap({ minScale: 50000 });
    const args = (e: [number, number, number, number], extra: Record<string, SoapValue> = {}) => ({
      MapDescription: mapDescription(e, extra),
      MapImageDisplay: { ImageWidth: 400, ImageHeight: 400, ImageDPI: 96 },
      LayerIDs: [],
      LegendPatch: patch(15, 15, 96),
    });
    // 10 km over 400 px = 25 m/px = 1:94488: beyond minScale 50000, not drawn
    let r = await drawHandlers['GetLegendInfo2']!(ctxOf(service), args([CX - 5000, CY - 5000, CX + 5000, CY + 5000]));
    expect(r['Result']).toEqual([]);
    // 4 km: 1:37795, drawn
    r = await drawHandlers['GetLegendInfo2']!(ctxOf(service), args([CX - 2000, CY - 2000, CX + 2000, CY + 2000]));
    expect((r['Result'] as SoapObject[]).map((i) => i['LayerID'])).toEqual([0]);
    r = await drawHandlers['GetLegendInfo2']!(
      ctxOf(service),
      args([CX - 2000, CY - 2000, CX + 2000, CY + 2000], {
        LayerDescriptions: [{ $type: 'LayerDescription', LayerID: 0, Visible: false }],
      }),
    );
    expect(r['Result']).toEqual([]);
  });
});

describe('through the codec (requests decoded from XML, answers encoded)', () => {
  const envelope = (op: string, inner: string): string =>
    `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:g="${GEO_SOAP_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
    `<soapenv:Body><g:${op}>${inner}</g:${op}></soapenv:Body></soapenv:Envelope>`;
  async function wire(op: string, service: MapService, inner: string): Promise<{ result: SoapObject; xml: string }> {
    const sig = operationSignature(op)!;
    const req = parseEnvelope(envelope(op, inner), 'text/xml; charset=utf-8');
    const args = decodeRequest(sig, req.request);
    const res = await drawHandlers[op]!(ctxOf(service), args);
    return { result: res['Result'] as SoapObject, xml: encodeResponse(sig, res).xml };
  }
  const md = (extra = '') =>
    `<MapDescription><Name>Layers</Name><MapArea xsi:type="g:MapExtent"><Extent xsi:type="g:EnvelopeN">` +
    `<XMin>${CX - 2000}</XMin><YMin>${CY - 1000}</YMin><XMax>${CX + 2000}</XMax><YMax>${CY + 1000}</YMax></Extent></MapArea>${extra}<Rotation>0</Rotation></MapDescription>`;
  const rgb = (r: number, g: number, b: number) => `<Red>${r}</Red><Green>${g}</Green><Blue>${b}</Blue>`;

  it('ExportMapImage with a DrawingDescription and custom graphics', async () => {
    const service = featureMap();
    const layers =
      `<LayerDescriptions><LayerDescription><LayerID>0</LayerID><Visible>true</Visible><ShowLabels>false</ShowLabels><ScaleSymbols>false</ScaleSymbols>` +
      `<SetSelectionSymbol>false</SetSelectionSymbol><SelectionBufferDistance>0</SelectionBufferDistance><ShowSelectionBuffer>false</ShowSelectionBuffer>` +
      `<DefinitionExpression>POP = 5</DefinitionExpression>` +
      `<DrawingDescription xsi:type="g:FeatureLayerDrawingDescription"><FeatureRenderer xsi:type="g:SimpleRenderer">` +
      `<Symbol xsi:type="g:SimpleFillSymbol"><Color xsi:type="g:RgbColor">${rgb(9, 99, 199)}</Color><Style>geoSFSSolid</Style></Symbol>` +
      `</FeatureRenderer></DrawingDescription></LayerDescription></LayerDescriptions>`;
    const graphics =
      `<CustomGraphics><GraphicElement xsi:type="g:TextElement"><Text>Hi</Text>` +
      `<Symbol xsi:type="g:TextSymbol"><Color xsi:type="g:RgbColor">${rgb(0, 0, 0)}</Color><Size>14</Size><FontName>DejaVu Sans</FontName></Symbol>` +
      `<TextGeometry xsi:type="g:PointN"><X>${CX}</X><Y>${CY + 700}</Y></TextGeometry></GraphicElement></CustomGraphics>`;
    const { result, xml } = await wire(
      'ExportMapImage',
      service,
      md(layers + graphics) +
        `<ImageDescription><ImageType><ImageFormat>geoImagePNG</ImageFormat><ImageReturnType>geoImageReturnMimeData</ImageReturnType></ImageType>` +
        `<ImageDisplay><ImageHeight>200</ImageHeight><ImageWidth>400</ImageWidth><ImageDPI>96</ImageDPI></ImageDisplay></ImageDescription>`,
    );
    const png = decode(bytes(result['ImageData']));
    const at = (col: number, row: number) => [...png.data.slice(4 * (row * 400 + col), 4 * (row * 400 + col) + 3)];
    expect(at(50, 100)).toEqual([9, 99, 199]);
    // POP = 5 only: the second tract is not drawn
    expect(at(150, 100)).toEqual([255, 255, 255]);
    expect(xml).toContain('<Result xsi:type="tns:MapImage">');
    expect(xml).toContain('<ImageType>image/png</ImageType>');
    expect(xml).toContain('<VisibleLayerIDs xsi:type="tns:ArrayOfInt"><Int>0</Int></VisibleLayerIDs>');
  });

  it('ExportScaleBar with an AlternatingScaleBar and GetLegendInfo encode', async () => {
    const service = featureMap();
    const bar =
      `<ScaleBar xsi:type="g:AlternatingScaleBar"><Divisions>2</Divisions><Units>geoMeters</Units><UnitLabel>m</UnitLabel>` +
      `<LabelSymbol xsi:type="g:TextSymbol"><Size>9</Size><FontWeight>700</FontWeight></LabelSymbol>` +
      `<FillSymbol1 xsi:type="g:SimpleFillSymbol"><Color xsi:type="g:RgbColor">${rgb(200, 0, 0)}</Color><Style>geoSFSSolid</Style></FillSymbol1></ScaleBar>`;
    const { result, xml } = await wire(
      'ExportScaleBar',
      service,
      bar +
        md() +
        `<MapDisplay><ImageHeight>200</ImageHeight><ImageWidth>400</ImageWidth><ImageDPI>96</ImageDPI></MapDisplay>` +
        `<ImageDescription><ImageType><ImageFormat>geoImagePNG</ImageFormat><ImageReturnType>geoImageReturnMimeData</ImageReturnType></ImageType>` +
        `<ImageDisplay><ImageHeight>40</ImageHeight><ImageWidth>300</ImageWidth><ImageDPI>96</ImageDPI></ImageDisplay></ImageDescription>`,
    );
    const png = decode(bytes(result['ImageData']));
    let red = 0;
    for (let i = 0; i < 300 * 40; i++) if (png.data[4 * i] === 200 && png.data[4 * i + 1] === 0) red++;
    expect(red).toBeGreaterThan(50);
    expect(xml).toContain('<Result xsi:type="tns:ImageResult">');
    const legend = await wire(
      'GetLegendInfo',
      service,
      `<MapName>Layers</MapName><LayerIDs><Int>0</Int></LayerIDs><LegendPatch><Width>15</Width><Height>15</Height><ImageDPI>96</ImageDPI></LegendPatch>` +
        `<ImageType><ImageFormat>geoImagePNG</ImageFormat><ImageReturnType>geoImageReturnMimeData</ImageReturnType></ImageType>`,
    );
    expect(legend.xml).toContain('<MapServerLegendInfo xsi:type="tns:MapServerLegendInfo"><LayerID>0</LayerID><Name>Tracts</Name>');
    expect(legend.xml).toContain('<Label>10 - 20</Label>');
  });
});

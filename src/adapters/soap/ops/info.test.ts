import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../../core/errors.js';
import { spatialReferenceOfWkid } from '../../../core/spatial-reference.js';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import type { MapService } from '../../map/model.js';
import { field, featureLayer, rasterLayer, sqliteTable, standaloneTable, testContext, testMap } from '../../../../test/info-map.js';
import { testSite, type TestSite } from '../../../../test/site.js';
import { encodeResponseEnvelope } from '../codec.js';
import type { SoapObject, SoapResult, SoapValue } from '../operation.js';
import { operationSignature } from '../signatures.js';
import { mapOutputsOf, OUTPUT_PATH } from '../../map/outputs.js';
import { SQL_FUNCTIONS } from '../../map/where.js';
import { drawHandlers } from './draw.js';
import { computeDistanceOf, geodesicDistance, infoHandlers } from './info.js';

const DEM = `${import.meta.dirname}/../../../../golden/data/olinda_dem_utm25s.tif`;
const hasDem = existsSync(DEM);
const python = '/usr/bin/python3';
const hasPyproj = ((): boolean => {
  try {
    execFileSync(python, ['-c', 'import pyproj'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasPyproj)
  console.warn('info.test.ts: pyproj not found for /usr/bin/python3 (Debian python3-pyproj); the geodesic distance checks are SKIPPED');

const obj = (v: SoapValue): SoapObject => v as SoapObject;
const arr = (v: SoapValue): SoapObject[] => v as SoapObject[];
const props = (ps: SoapValue): Record<string, SoapValue> =>
  Object.fromEntries(arr(obj(ps)['PropertyArray']).map((p) => [p['Key'] as string, p['Value']]));

async function fault(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    return e as EngineError;
  }
  throw new Error('expected a fault');
}

const UTM25S = spatialReferenceOfWkid(32725)!;
const WGS84 = spatialReferenceOfWkid(4326)!;

let site: TestSite;
let service: MapService;

function spots() {
  return sqliteTable(
    [
      {
        id: 1,
        attributes: { NAME: 'Alto da Sé', ELEV: 65, URL: 'https://example.org/1' },
        geometry: { type: 'Point', coordinates: [289721, 9119815] },
      },
      { id: 2, attributes: { NAME: 'Varadouro', ELEV: 8, URL: '' }, geometry: { type: 'Point', coordinates: [293300, 9113700] } },
    ],
    'point',
    [
      field('NAME', 'geoFieldTypeString'),
      field('ELEV', 'geoFieldTypeDouble', { alias: 'Elevation (m)' }),
      field('URL', 'geoFieldTypeString'),
    ],
  );
}

beforeAll(async () => {
  site = await testSite();
  const parcels = sqliteTable(
    [
      {
        id: 1,
        attributes: { CLASS: 1, AREA: 120 },
        geometry: {
          type: 'Polygon',
          coordinates: [
            [
              [289000, 9113000],
              [290000, 9113000],
              [290000, 9114000],
              [289000, 9114000],
              [289000, 9113000],
            ],
          ],
        },
      },
    ],
    'polygon',
    [
      field('CLASS', 'geoFieldTypeSmallInteger'),
      field('AREA', 'geoFieldTypeDouble', { domain: { type: 'range', name: 'Area', range: [0, 1000] } }),
    ],
  );
  const layers = [
    featureLayer(
      0,
      'Spot heights',
      spots(),
      { type: 'simple', label: 'Spot', symbol: { type: 'esriSMS', style: 'esriSMSCircle', color: [200, 30, 30, 255], size: 8 } },
      {
        displayField: 'NAME',
        hyperlinkField: 'URL',
        popupTemplate: '<b>{NAME}</b>',
      },
    ),
    featureLayer(
      1,
      'Parcels',
      parcels,
      {
        type: 'uniqueValue',
        field1: 'CLASS',
        uniqueValueInfos: [{ value: 1, label: 'Plain', symbol: { type: 'esriSFS', style: 'esriSFSSolid', color: [56, 168, 0, 160] } }],
      },
      {
        subtypes: {
          field: 'CLASS',
          subtypes: [
            { code: 1, name: 'Plain', domains: { AREA: { type: 'range', name: 'Small', range: [0, 10] } } },
            { code: 2, name: 'Hill', domains: {} },
          ],
        },
        minScale: 500000,
      },
    ),
    ...(hasDem
      ? [
          await rasterLayer(2, 'Relief', DEM, {
            rasterFunction: 'Hillshade',
            rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 },
          }),
        ]
      : []),
  ];
  const inspections = sqliteTable([{ id: 1, attributes: { SCORE: 80 } }], null, [field('SCORE', 'geoFieldTypeInteger')]);
  service = testMap(
    layers,
    UTM25S,
    { xmin: 288776.25, ymin: 9110771.41, xmax: 298765.59, ymax: 9120760.75 },
    {
      tables: [standaloneTable(layers.length, 'Inspections', inspections)],
      relationships: [
        {
          id: 0,
          name: 'Parcel inspections',
          origin: 1,
          destination: layers.length,
          originKey: 'OBJECTID',
          destinationKey: 'PARCEL_ID',
          cardinality: 'oneToMany',
        },
      ],
      bookmarks: [{ name: 'Centre', extent: { xmin: 290000, ymin: 9114000, xmax: 292000, ymax: 9116000 } }],
    },
  );
});

afterAll(async () => {
  await site?.store.close?.();
});

/** Calls an operation and encodes its answer with the schema's codec (a value that does not fit the type table fails the test). */
async function call(op: string, args: Record<string, SoapValue>, s: MapService = service): Promise<SoapResult> {
  const r = await infoHandlers[op]!(testContext(site, s), args);
  expect(encodeResponseEnvelope(operationSignature(op)!, r)).toContain(`<tns:${op}Response>`);
  return r;
}

describe('document and map names', () => {
  it('GetDocumentInfo answers the document properties from the service definition', async () => {
    const r = await call('GetDocumentInfo', {});
    const p = props(r['Result']);
    expect(Object.keys(p)).toEqual(['Title', 'Subject', 'Author', 'Category', 'Keywords', 'Comments', 'Credits']);
    expect(p['Title']).toBe('olinda');
    expect(p['Subject']).toBe('Test map');
    expect(p['Credits']).toBe('Test data');
    expect(p['Keywords']).toContain('Spot heights');
  });
  it('one map: count, name by index, default name; index 1 is a fault', async () => {
    expect((await call('GetMapCount', {}))['Result']).toBe(1);
    expect((await call('GetMapName', { Index: 0 }))['Result']).toBe('Layers');
    expect((await call('GetDefaultMapName', {}))['Result']).toBe('Layers');
    const e = await fault(call('GetMapName', { Index: 1 }));
    expect(e.code).toBe('NOT_FOUND');
    expect(e.message).toContain('out of range');
  });
  it('GetServiceConfigurationInfo answers the service limits', async () => {
    const p = props((await call('GetServiceConfigurationInfo', {}))['Result']);
    expect(p).toMatchObject({ MaximumRecordCount: 1000, MaximumBufferCount: 1000, MaximumImageWidth: 2048, MaximumImageHeight: 2048 });
    expect(p['SupportedImageFormatTypes']).toContain('PNG');
  });
  it('GetSupportedImageReturnTypes answers MIME data', async () => {
    expect((await call('GetSupportedImageReturnTypes', {}))['Result']).toBe('geoImageReturnMimeData');
  });
});

describe('GetServerInfo', () => {
  it('describes the map, its layers, tables and default description', async () => {
    const info = obj((await call('GetServerInfo', { MapName: 'layers' }))['Result']);
    expect(info.$type).toBe('MapServerInfo');
    expect(info['Name']).toBe('Layers');
    expect(obj(info['FullExtent'])).toMatchObject({ $type: 'EnvelopeN', XMin: 288776.25 });
    expect(obj(info['SpatialReference'])).toMatchObject({ WKID: 32725 });
    expect(info['Units']).toBe('geoMeters');
    const layers = arr(info['MapLayerInfos']);
    expect(layers.map((l) => l['LayerType'])).toEqual(['Feature Layer', 'Feature Layer', ...(hasDem ? ['Raster Layer'] : [])]);
    const spot = layers[0]!;
    expect(spot).toMatchObject({
      LayerID: 0,
      Name: 'Spot heights',
      DisplayField: 'NAME',
      IDField: 'OBJECTID',
      HasHyperlinks: true,
      CanFind: true,
      IsFeatureLayer: true,
    });
    expect(spot['HTMLPopupType']).toBe('geoServerHTMLPopupTypeAsHTMLText');
    const fields = arr(obj(spot['Fields'])['FieldArray']);
    expect(fields.map((f) => f['Name'])).toEqual(['OBJECTID', 'Shape', 'NAME', 'ELEV', 'URL']);
    expect(obj(fields[1]!['GeometryDef'])).toMatchObject({ GeometryType: 'geoGeometryPoint', HasZ: false });
    expect(fields[3]).toMatchObject({ Type: 'geoFieldTypeDouble', AliasName: 'Elevation (m)' });
    expect(spot['FieldAliases']).toEqual(['OBJECTID', 'Shape', 'NAME', 'Elevation (m)', 'URL']);
    const parcels = layers[1]!;
    expect(parcels).toMatchObject({ HasSubtype: true, MinScale: 500000 });
    expect(arr(parcels['RelateInfos'])[0]).toMatchObject({
      RelationshipID: 0,
      RelatedTableID: service.tables[0]!.id,
      Role: 'geoRelRoleOrigin',
    });
    const area = arr(obj(parcels['Fields'])['FieldArray']).find((f) => f['Name'] === 'AREA')!;
    expect(obj(area['Domain'])).toMatchObject({ $type: 'RangeDomain', DomainName: 'Area', MinValue: { $xs: 'double', value: 0 } });
    if (hasDem) expect(layers[2]).toMatchObject({ IsFeatureLayer: false, CanFind: false, CanIdentify: true, DisplayField: '' });
    expect(arr(info['StandaloneTableInfos'])[0]).toMatchObject({ ID: service.tables[0]!.id, Name: 'Inspections' });
    expect(arr(info['Bookmarks'])[0]).toMatchObject({ $type: 'MapServerBookmark', Name: 'Centre' });
    const md = obj(info['DefaultMapDescription']);
    expect(md['Name']).toBe('Layers');
    expect(obj(md['MapArea'])['$type']).toBe('MapExtent');
    expect(arr(md['LayerDescriptions']).map((l) => l['LayerID'])).toEqual(service.layers.map((l) => l.id));
    // The map's scale range is the widest of its layers' (a layer without limits makes it unlimited).
    expect(info['MinScale']).toBe(0);
  });
  it('the DefaultMapDescription goes straight back to ExportMapImage', async () => {
    const info = obj((await call('GetServerInfo', { MapName: 'Layers' }))['Result']);
    const image = obj(
      (
        await drawHandlers['ExportMapImage']!(testContext(site, service), {
          MapDescription: info['DefaultMapDescription'],
          ImageDescription: {
            $type: 'ImageDescription',
            ImageType: { $type: 'ImageType', ImageFormat: 'geoImagePNG', ImageReturnType: 'geoImageReturnMimeData' },
            ImageDisplay: display(200, 200),
          },
        })
      )['Result'],
    );
    expect(image['ImageType']).toBe('image/png');
    // About 1:190000, within every layer's scale range.
    expect(image['VisibleLayerIDs']).toEqual(service.layers.map((l) => l.id));
  });
  it('an empty map name is the default map', async () => {
    expect(obj((await call('GetServerInfo', { MapName: '' }))['Result'])['Name']).toBe('Layers');
  });
  it('refuses another map name', async () => {
    const e = await fault(call('GetServerInfo', { MapName: 'Other' }));
    expect(e.code).toBe('NOT_FOUND');
    expect(e.issues[0]?.path).toBe('MapName');
  });
});

const md = (extent: [number, number, number, number], extra: Record<string, SoapValue> = {}): SoapObject => ({
  $type: 'MapDescription',
  Name: 'Layers',
  MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: extent[0], YMin: extent[1], XMax: extent[2], YMax: extent[3] } },
  Rotation: 0,
  ...extra,
});
const display = (w: number, h: number, dpi = 96): SoapObject => ({ $type: 'ImageDisplay', ImageWidth: w, ImageHeight: h, ImageDPI: dpi });

describe('ComputeScale, ToMapPoints, FromMapPoints', () => {
  it('ComputeScale: 25 m per pixel at 96 DPI is 1:94488.19', async () => {
    const r = await call('ComputeScale', { MapDescription: md([290000, 9110000, 305000, 9120000]), MapImageDisplay: display(600, 400) });
    expect(r['Result'] as number).toBeCloseTo(94488.19, 2);
  });
  it('the scale follows the aspect growth and the DPI', async () => {
    // 15000 m on 300 px would be 50 m/px, but 10000 m on 100 px is 100 m/px: the extent grows to 30000 m wide.
    const r = await call('ComputeScale', {
      MapDescription: md([290000, 9110000, 305000, 9120000]),
      MapImageDisplay: display(300, 100, 192),
    });
    expect(r['Result'] as number).toBeCloseTo((100 * 192) / 0.0254, 3);
  });
  it('ToMapPoints answers pixel centres; FromMapPoints answers the pixels back', async () => {
    const args = { MapDescription: md([290000, 9110000, 300000, 9120000]), MapImageDisplay: display(100, 100) };
    const mp = obj((await call('ToMapPoints', { ...args, ScreenXValues: [0, 99, 50], ScreenYValues: [0, 99, 10] }))['Result']);
    expect(mp.$type).toBe('MultipointN');
    const pts = arr(mp['PointArray']);
    expect(pts[0]).toMatchObject({ X: 290050, Y: 9119950 });
    expect(pts[1]).toMatchObject({ X: 299950, Y: 9110050 });
    expect(obj(mp['SpatialReference'])['WKID']).toBe(32725);
    const back = await call('FromMapPoints', { ...args, MapPoints: mp });
    expect(back).toEqual({ ScreenXValues: [0, 99, 50], ScreenYValues: [0, 99, 10] });
    // A point in another SR is placed on the map first.
    const corner = await call('FromMapPoints', {
      ...args,
      MapPoints: {
        $type: 'MultipointN',
        PointArray: [
          { $type: 'PointN', X: 290050, Y: 9119950 },
          { $type: 'PointN', X: 310000, Y: 9100000 },
        ],
      },
    });
    expect(corner).toEqual({ ScreenXValues: [0, 200], ScreenYValues: [0, 200] });
  });
  it('a FeatureExtent map area is the extent of the listed features', async () => {
    const area = { $type: 'FeatureExtent', LayerID: 1, FeatureIDs: [1], ExpandRatio: 1, DefaultScale: 0, MapName: 'Layers' };
    const r = await call('ComputeScale', { MapDescription: { ...md([0, 0, 1, 1]), MapArea: area }, MapImageDisplay: display(100, 100) });
    // The parcel is 1000 m wide: 10 m per pixel at 96 DPI.
    expect(r['Result'] as number).toBeCloseTo((10 * 96) / 0.0254, 6);
  });
  it('ToMapPoints refuses unequal arrays', async () => {
    const e = await fault(
      call('ToMapPoints', {
        MapDescription: md([0, 0, 10, 10]),
        MapImageDisplay: display(10, 10),
        ScreenXValues: [1, 2],
        ScreenYValues: [1],
      }),
    );
    expect(e.code).toBe('INVALID_ARGUMENT');
  });
  it('a MapDescription naming another map is refused', async () => {
    const e = await fault(
      call('ComputeScale', { MapDescription: { ...md([0, 0, 10, 10]), Name: 'Nope' }, MapImageDisplay: display(10, 10) }),
    );
    expect(e.issues[0]?.path).toBe('MapDescription/Name');
  });
});

describe('ComputeDistance', () => {
  const geographic = () => testMap([], WGS84, { xmin: -180, ymin: -90, xmax: 180, ymax: 90 });
  const pairs: [number, number, number, number][] = [
    [-34.85, -8.01, -34.88, -8.05],
    [0, 0, 1, 1],
    [-74.006, 40.7128, 2.3522, 48.8566],
    [151.2093, -33.8688, -0.1276, 51.5072],
    [10, 89.9, -170, 89.9],
    [0, 0, 0, 0],
  ];
  it.skipIf(!hasPyproj)("equals pyproj's geodesic (Karney) on WGS 84 to the millimetre", () => {
    const want = JSON.parse(
      execFileSync(
        python,
        [
          '-c',
          'import json,sys\nfrom pyproj import Geod\ng=Geod(ellps="WGS84")\nprint(json.dumps([g.inv(a,b,c,d)[2] for a,b,c,d in json.load(sys.stdin)]))',
        ],
        {
          input: JSON.stringify(pairs),
          encoding: 'utf8',
        },
      ),
    ) as number[];
    pairs.forEach(([a, b, c, d], i) => expect(Math.abs(geodesicDistance(a, b, c, d) - want[i]!)).toBeLessThan(1e-3));
  });
  it.skipIf(!hasPyproj)('a projected map measures along the geodesic of its points (pyproj transform + geodesic)', () => {
    const from = { x: 289721, y: 9119815, sr: UTM25S };
    const to = { x: 310000, y: 9050000, sr: UTM25S };
    const want = Number(
      execFileSync(
        python,
        [
          '-c',
          'from pyproj import Geod, Transformer\nt=Transformer.from_crs(32725,4326,always_xy=True)\na=t.transform(289721,9119815)\nb=t.transform(310000,9050000)\nprint(Geod(ellps="WGS84").inv(a[0],a[1],b[0],b[1])[2])',
        ],
        { encoding: 'utf8' },
      ),
    );
    const got = computeDistanceOf(service, from, to, 'geoMeters');
    expect(Math.abs(got - want)).toBeLessThan(0.01);
    // Not the planar distance on the UTM grid (scale factor 0.9996 and more).
    expect(Math.abs(got - Math.hypot(to.x - from.x, to.y - from.y))).toBeGreaterThan(1);
    expect(computeDistanceOf(service, from, to, 'geoKilometers')).toBeCloseTo(want / 1000, 6);
    expect(computeDistanceOf(service, from, to, 'geoMiles')).toBeCloseTo(want / 1609.344, 6);
  });
  it('the operation: map points, units, and points with their own SR', async () => {
    const s = geographic();
    const r = await call(
      'ComputeDistance',
      { MapName: 'Layers', FromPoint: { $type: 'PointN', X: 0, Y: 0 }, ToPoint: { $type: 'PointN', X: 0, Y: 1 }, Units: 'geoKilometers' },
      s,
    );
    // One degree of latitude at the equator on WGS 84: 110.574 km.
    expect(r['Result'] as number).toBeCloseTo(110.574, 2);
    const utm = await call(
      'ComputeDistance',
      {
        MapName: 'Layers',
        FromPoint: { $type: 'PointN', X: -34.85, Y: -8.01 },
        ToPoint: { $type: 'PointN', X: 300000, Y: 9110000, SpatialReference: { $type: 'ProjectedCoordinateSystem', WKID: 32725 } },
        Units: 'geoMeters',
      },
      s,
    );
    expect(utm['Result'] as number).toBeGreaterThan(0);
  });
  it('an unknown spatial reference measures on the plane in map units', () => {
    const s = testMap([], {}, { xmin: 0, ymin: 0, xmax: 100, ymax: 100 }, { units: 'geoFeet' });
    const d = computeDistanceOf(s, { x: 0, y: 0, sr: {} }, { x: 3, y: 4, sr: {} }, 'geoMeters');
    expect(d).toBeCloseTo(5 * 0.3048, 12);
    expect(computeDistanceOf(s, { x: 0, y: 0, sr: {} }, { x: 3, y: 4, sr: {} }, 'geoUnknownUnits')).toBeCloseTo(5, 12);
  });
  it('refuses units that are no length', async () => {
    const e = await fault(
      call('ComputeDistance', {
        MapName: 'Layers',
        FromPoint: { $type: 'PointN', X: 0, Y: 0 },
        ToPoint: { $type: 'PointN', X: 1, Y: 1 },
        Units: 'geoLightYears',
      }),
    );
    expect(e.issues[0]?.path).toBe('Units');
  });
});

describe('GetSQLSyntaxInfo', () => {
  it("reports the store's where-clause dialect", async () => {
    const r = obj((await call('GetSQLSyntaxInfo', { MapName: 'Layers', LayerID: 0 }))['Result']);
    expect(r.$type).toBe('SQLSyntaxInfo');
    const fns = props(r['FunctionNames']);
    expect(Object.keys(fns)).toEqual(SQL_FUNCTIONS.map((f) => f.name));
    expect(fns['UPPER']).toBe('UPPER(string_exp)');
    expect(props(r['SpecialCharacters'])).toMatchObject({ WildcardManyMatch: '%', WildcardSingleMatch: '_' });
    expect(r['SupportedPredicates']).toContain('LIKE');
    expect(r['SupportedClauses']).toEqual(['ORDER BY']);
    expect(r['Keywords']).toContain('BETWEEN');
    expect(r).toMatchObject({ IdentifierCase: false, StringComparisonCase: true });
    expect(typeof r['InvalidCharacters']).toBe('string');
    // Tables have the same dialect; raster layers have no attributes.
    expect(obj((await call('GetSQLSyntaxInfo', { MapName: 'Layers', LayerID: service.tables[0]!.id }))['Result'])).toEqual(r);
    if (hasDem) expect((await fault(call('GetSQLSyntaxInfo', { MapName: 'Layers', LayerID: 2 }))).issues[0]?.path).toBe('LayerID');
    expect((await fault(call('GetSQLSyntaxInfo', { MapName: 'Layers', LayerID: 42 }))).code).toBe('NOT_FOUND');
  });
});

describe('drawing descriptions and subtypes', () => {
  it('GetDefaultLayerDrawingDescriptions describes renderers with SOAP symbols', async () => {
    const r = arr(
      (await call('GetDefaultLayerDrawingDescriptions', { MapName: 'Layers', LayerIDs: [], SymbolOutputOptions: {} }))['Result'],
    );
    expect(r).toHaveLength(service.layers.length);
    const simple = obj(r[0]!['FeatureRenderer']);
    expect(simple).toMatchObject({ $type: 'SimpleRenderer', Label: 'Spot' });
    expect(obj(simple['Symbol'])).toMatchObject({ $type: 'SimpleMarkerSymbol', Style: 'geoSMSCircle', Size: 8 });
    expect(obj(obj(simple['Symbol'])['Color'])).toEqual({ $type: 'RgbColor', Red: 200, Green: 30, Blue: 30 });
    const uv = obj(r[1]!['FeatureRenderer']);
    expect(uv).toMatchObject({ $type: 'UniqueValueRenderer', Field1: 'CLASS' });
    expect(arr(uv['UniqueValueInfos'])[0]).toMatchObject({ Value: '1', Label: 'Plain' });
    expect(obj(obj(arr(uv['UniqueValueInfos'])[0]!['Symbol'])['Color'])).toMatchObject({ AlphaValue: 160, Red: 56 });
    if (hasDem) {
      expect(r[2]).toMatchObject({ $type: 'RasterLayerDrawingDescription' });
      expect(obj(r[2]!['RasterRenderer'])['$type']).toBe('RasterStretchRenderer');
    }
    const one = arr(
      (await call('GetDefaultLayerDrawingDescriptions', { MapName: 'Layers', LayerIDs: [1], SymbolOutputOptions: {} }))['Result'],
    );
    expect(one.map((d) => d['SourceLayerID'])).toEqual([1]);
    const e = await fault(call('GetDefaultLayerDrawingDescriptions', { MapName: 'Layers', LayerIDs: [12], SymbolOutputOptions: {} }));
    expect(e.message).toBe("Layer 12 does not exist in map 'Layers'.");
    expect(e.issues[0]?.path).toBe('LayerIDs[0]');
  });
  it('GetMapTableSubtypeInfos lists subtypes with their own and inherited domains', async () => {
    const all = arr((await call('GetMapTableSubtypeInfos', { MapName: 'Layers' }))['Result']);
    expect(all.map((t) => t['TableID'])).toEqual([1]);
    const info = all[0]!;
    expect(info['SubtypeFieldName']).toBe('CLASS');
    const [plain, hill] = arr(info['SubtypeInfos']);
    expect(plain).toMatchObject({ SubtypeCode: 1, SubtypeName: 'Plain' });
    expect(arr(plain!['FieldDomainInfos'])[0]).toMatchObject({ FieldName: 'AREA', IsInherited: false });
    expect(obj(arr(plain!['FieldDomainInfos'])[0]!['Domain'])['DomainName']).toBe('Small');
    expect(arr(hill!['FieldDomainInfos'])[0]).toMatchObject({ FieldName: 'AREA', IsInherited: true });
    expect(arr((await call('GetMapTableSubtypeInfos', { MapName: 'Layers', TableIDs: [0] }))['Result'])).toEqual([]);
    const two = arr(
      (await call('GetMapTableSubtypeInfos2', { MapName: 'Layers', LayerDescriptions: [{ $type: 'LayerDescription', LayerID: 1 }] }))[
        'Result'
      ],
    );
    expect(two).toEqual(all);
    const e = await fault(call('GetMapTableSubtypeInfos', { MapName: 'Layers', TableIDs: [99] }));
    expect(e.issues[0]?.path).toBe('TableIDs[0]');
  });
});

describe.skipIf(!hasDem)('QueryRasterValue', () => {
  it('a raster layer is a one-row table whose raster is the drawn layer (PNG MIME data)', async () => {
    const r = arr((await call('QueryRasterValue', { MapName: 'Layers', SourceTableID: 2, RowIDs: [1] }))['Result']);
    expect(r).toHaveLength(1);
    const img = r[0]!;
    expect(img).toMatchObject({ $type: 'ImageResult', ImageURL: '', ImageWidth: 111, ImageHeight: 111, ImageType: 'image/png' });
    const png = await loadImage(Buffer.from(img['ImageData'] as Uint8Array));
    expect([png.width, png.height]).toEqual([111, 111]);
    const canvas = createCanvas(111, 111);
    canvas.getContext('2d').drawImage(png, 0, 0);
    const px = canvas.getContext('2d').getImageData(0, 0, 111, 111).data;
    const reds = Array.from({ length: 111 * 111 }, (_, i) => px[4 * i]!);
    // A hillshade: not a flat image.
    expect(Math.max(...reds)).toBeGreaterThan(Math.min(...reds) + 50);
  });
  it('JPEG on request; QueryRasterValue2 addresses the layer by description; the image fits the largest size', async () => {
    const small = testMap(service.layers, UTM25S, service.fullExtent, { maxImageWidth: 50, maxImageHeight: 40 });
    const r = arr(
      (
        await call(
          'QueryRasterValue2',
          {
            MapName: 'Layers',
            MapTableDescription: { $type: 'LayerDescription', LayerID: 2 },
            RowIDs: [1],
            FieldName: 'raster',
            ImageType: { $type: 'ImageType', ImageFormat: 'geoImageJPG', ImageReturnType: 'geoImageReturnMimeData' },
          },
          small,
        )
      )['Result'],
    );
    expect(r[0]).toMatchObject({ ImageWidth: 40, ImageHeight: 40, ImageType: 'image/jpeg' });
    const bytes = r[0]!['ImageData'] as Uint8Array;
    expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8]);
  });
  it('URL answers are written to the output folder and served from there', async () => {
    const r = await call('QueryRasterValue', {
      MapName: 'Layers',
      SourceTableID: 2,
      RowIDs: [1],
      ImageType: { $type: 'ImageType', ImageFormat: 'geoImagePNG', ImageReturnType: 'geoImageReturnURL' },
    });
    const img = arr(r['Result'])[0]!;
    expect(img['ImageData']).toBeUndefined();
    const url = img['ImageURL'] as string;
    expect(url.startsWith(`http://test${OUTPUT_PATH}/`)).toBe(true);
    const stored = await mapOutputsOf(site).get(url.slice(url.lastIndexOf('/') + 1));
    expect(stored?.record.contentType).toBe('image/png');
    expect([...stored!.bytes.subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47]);
  });
  it('refuses feature layers, other fields and other rows', async () => {
    const e1 = await fault(call('QueryRasterValue', { MapName: 'Layers', SourceTableID: 0, RowIDs: [1], FieldName: 'Shape' }));
    expect(e1.issues[0]?.path).toBe('FieldName');
    expect(e1.message).toContain("no raster field named 'Shape'");
    const e2 = await fault(call('QueryRasterValue', { MapName: 'Layers', SourceTableID: 2, RowIDs: [1], FieldName: 'Elevation' }));
    expect(e2.issues[0]?.path).toBe('FieldName');
    const e3 = await fault(call('QueryRasterValue', { MapName: 'Layers', SourceTableID: 2, RowIDs: [1, 2] }));
    expect(e3.code).toBe('NOT_FOUND');
    expect(e3.issues[0]?.path).toBe('RowIDs[1]');
  });
});

import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../../core/errors.js';
import { spatialReferenceOfWkid } from '../../../core/spatial-reference.js';
import type { FeatureQuery, MapService } from '../../map/model.js';
import { field, featureLayer, rasterLayer, sqliteTable, testContext, testMap } from '../../../../test/info-map.js';
import { testSite, type TestSite } from '../../../../test/site.js';
import { encodeResponseEnvelope } from '../codec.js';
import type { SoapObject, SoapResult, SoapValue } from '../operation.js';
import { operationSignature } from '../signatures.js';
import { fillPopup, findClause, identifyHandlers, labelPoint } from './identify.js';

const DEM = `${import.meta.dirname}/../../../../golden/data/olinda_dem_utm25s.tif`;
const hasDem = existsSync(DEM);
const UTM25S = spatialReferenceOfWkid(32725)!;

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

// Pixel (row 10, column 10) of the DEM holds 65; its centre:
const PX = 288776.25000080315 + 10.5 * 89.99406734945116;
const PY = 9120760.750028737 - 10.5 * 89.99406734945116;

let site: TestSite;
let service: MapService;
let spotQueries: FeatureQuery[];

beforeAll(async () => {
  site = await testSite();
  const spots = sqliteTable(
    [
      {
        id: 1,
        attributes: { NAME: 'Alto da Sé', ELEV: 65, URL: 'https://example.org/1' },
        geometry: { type: 'Point', coordinates: [PX, PY] },
      },
      { id: 2, attributes: { NAME: 'Varadouro', ELEV: 8, URL: '' }, geometry: { type: 'Point', coordinates: [293300, 9113700] } },
      {
        id: 3,
        attributes: { NAME: "Olinda's 100% hill", ELEV: 80, URL: null },
        geometry: { type: 'Point', coordinates: [296000, 9118000] },
      },
    ],
    'point',
    [field('NAME', 'geoFieldTypeString'), field('ELEV', 'geoFieldTypeDouble'), field('URL', 'geoFieldTypeString')],
  );
  spotQueries = spots.queries;
  const parcels = sqliteTable(
    [
      {
        id: 7,
        attributes: { NAME: 'Plain parcel', CLASS: 1, LINK: 'https://example.org/parcel/7' },
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
    [field('NAME', 'geoFieldTypeString'), field('CLASS', 'geoFieldTypeInteger'), field('LINK', 'geoFieldTypeString')],
  );
  const layers = [
    featureLayer(
      0,
      'Spot heights',
      spots,
      { type: 'simple' },
      { displayField: 'NAME', hyperlinkField: 'URL', popupTemplate: '<b>{NAME}</b> {ELEV} m' },
    ),
    featureLayer(1, 'Parcels', parcels, { type: 'simple' }, { displayField: 'NAME', hyperlinkField: 'LINK' }),
    ...(hasDem
      ? [await rasterLayer(2, 'Relief', DEM, { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45 } })]
      : []),
  ];
  service = testMap(layers, UTM25S, { xmin: 288776.25, ymin: 9110771.41, xmax: 298765.59, ymax: 9120760.75 });
});

afterAll(async () => {
  await site?.store.close?.();
});

/** Calls an operation and encodes its answer with the schema's codec (a value that does not fit the type table fails the test). */
async function call(op: string, args: Record<string, SoapValue>, s: MapService = service): Promise<SoapResult> {
  const r = await identifyHandlers[op]!(testContext(site, s), args);
  expect(encodeResponseEnvelope(operationSignature(op)!, r)).toContain(`<tns:${op}Response>`);
  return r;
}

/** The whole map, 1000 x 1000 px: about 10 m per pixel. */
const md = (layerDescriptions?: SoapObject[]): SoapObject => ({
  $type: 'MapDescription',
  Name: 'Layers',
  MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: 288776.25, YMin: 9110771.41, XMax: 298765.59, YMax: 9120760.75 } },
  Rotation: 0,
  ...(layerDescriptions ? { LayerDescriptions: layerDescriptions } : {}),
});
const display = { $type: 'ImageDisplay', ImageWidth: 1000, ImageHeight: 1000, ImageDPI: 96 };
const ld = (id: number, visible: boolean, def = ''): SoapObject => ({
  $type: 'LayerDescription',
  LayerID: id,
  Visible: visible,
  DefinitionExpression: def,
});

const findArgs = (search: string, extra: Record<string, SoapValue> = {}) => ({
  MapDescription: md(),
  MapImageDisplay: display,
  SearchString: search,
  Contains: true,
  SearchFields: '',
  FindOption: 'geoFindAllLayers',
  LayerIDs: [],
  ...extra,
});

describe('Find', () => {
  it('finds a substring case-insensitively in text fields, with the feature and its attributes', async () => {
    const r = arr((await call('Find', findArgs('alto')))['Result']);
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ $type: 'MapServerFindResult', Value: 'Alto da Sé', LayerID: 0, FeatureID: 1, FieldName: 'NAME' });
    expect(obj(r[0]!['Shape'])).toMatchObject({ $type: 'PointN', X: PX, Y: PY });
    expect(props(r[0]!['Properties'])).toMatchObject({
      OBJECTID: { $xs: 'int', value: 1 },
      NAME: { $xs: 'string', value: 'Alto da Sé' },
      ELEV: { $xs: 'double', value: 65 },
    });
  });
  it("shapes come in the MapDescription's spatial reference", async () => {
    const lonLat: SoapObject = {
      ...md(),
      MapArea: {
        $type: 'MapExtent',
        Extent: {
          $type: 'EnvelopeN',
          XMin: -34.92,
          YMin: -8.05,
          XMax: -34.82,
          YMax: -7.95,
          SpatialReference: { $type: 'GeographicCoordinateSystem', WKID: 4326 },
        },
      },
      SpatialReference: { $type: 'GeographicCoordinateSystem', WKID: 4326 },
    };
    const r = arr((await call('Find', findArgs('alto', { MapDescription: lonLat })))['Result']);
    const shape = obj(r[0]!['Shape']);
    expect(shape['X']).toBeCloseTo(-34.907636063, 8); // pyproj: EPSG:32725 -> 4326
    expect(shape['Y']).toBeCloseTo(-7.958404283, 8);
    expect(obj(shape['SpatialReference'])['WKID']).toBe(4326);
    // Identify there, clicking in lon/lat at the spot (its own point, no SR: the map description's).
    const hit = arr(
      (
        await call(
          'Identify',
          identifyArgs({ $type: 'PointN', X: -34.90763779920564, Y: -7.95841161914058 }, { MapDescription: lonLat, LayerIDs: [0] }),
        )
      )['Result'],
    );
    expect(hit.map((x) => x['FeatureID'])).toEqual([1]);
  });
  it('Contains false matches whole values only', async () => {
    expect(arr((await call('Find', findArgs('VARADOURO', { Contains: false })))['Result'])).toHaveLength(1);
    expect(arr((await call('Find', findArgs('varad', { Contains: false })))['Result'])).toHaveLength(0);
  });
  it('a numeric search string also matches numeric fields', async () => {
    const r = arr((await call('Find', findArgs('8')))['Result']);
    expect(r.map((x) => [x['FieldName'], x['FeatureID']])).toEqual([['ELEV', 2]]);
  });
  it('SearchFields limits the fields; LayerIDs the layers', async () => {
    expect(arr((await call('Find', findArgs('parcel')))['Result']).map((x) => [x['LayerID'], x['FieldName']])).toEqual([
      [1, 'NAME'],
      [1, 'LINK'],
    ]);
    expect(arr((await call('Find', findArgs('parcel', { SearchFields: 'link, other' })))['Result'])).toHaveLength(1);
    expect(arr((await call('Find', findArgs('parcel', { LayerIDs: [0] })))['Result'])).toHaveLength(0);
  });
  it('the search text is a bound literal: quotes and LIKE wildcards are plain characters', async () => {
    expect(arr((await call('Find', findArgs("x' OR '1'='1")))['Result'])).toHaveLength(0);
    expect(arr((await call('Find', findArgs('%')))['Result']).map((x) => x['FeatureID'])).toEqual([3]);
    expect(arr((await call('Find', findArgs("olinda's")))['Result']).map((x) => x['FeatureID'])).toEqual([3]);
    expect(arr((await call('Find', findArgs('_')))['Result'])).toHaveLength(0);
    const clause = findClause(field('NAME', 'geoFieldTypeString'), "a'b", true);
    expect(clause).toBe(`UPPER("NAME") LIKE UPPER('%a''b%') ESCAPE '\\'`);
    expect(findClause(field('NAME', 'geoFieldTypeString'), '50%_\\', true)).toBe(`UPPER("NAME") LIKE UPPER('%50\\%\\_\\\\%') ESCAPE '\\'`);
    expect(findClause(field('ELEV', 'geoFieldTypeDouble'), ' 12.5 ', false)).toBe('"ELEV" = 12.5');
    expect(findClause(field('ELEV', 'geoFieldTypeDouble'), '12 OR 1=1', false)).toBeUndefined();
  });
  it('visible layers only with geoFindVisibleLayers; definition expressions apply', async () => {
    const hidden = md([ld(0, false), ld(1, true)]);
    expect(
      arr((await call('Find', findArgs('alto', { MapDescription: hidden, FindOption: 'geoFindVisibleLayers' })))['Result']),
    ).toHaveLength(0);
    expect(arr((await call('Find', findArgs('alto', { MapDescription: hidden, FindOption: 'geoFindAllLayers' })))['Result'])).toHaveLength(
      1,
    );
    const defined = md([ld(0, true, 'ELEV > 70')]);
    expect(
      arr((await call('Find', findArgs('o', { MapDescription: defined, LayerIDs: [0] })))['Result']).map((x) => x['FeatureID']),
    ).toEqual([3]);
    expect(spotQueries.map((q) => q.where)).toContain(`(ELEV > 70) AND (UPPER("NAME") LIKE UPPER('%o%') ESCAPE '\\')`);
  });
  it('refuses an empty search, unknown options and layers', async () => {
    expect((await fault(call('Find', findArgs('  ')))).issues[0]?.path).toBe('SearchString');
    expect((await fault(call('Find', findArgs('a', { FindOption: 'geoFindSome' })))).issues[0]?.path).toBe('FindOption');
    expect((await fault(call('Find', findArgs('a', { LayerIDs: [0, 9] })))).message).toBe("Layer 9 does not exist in map 'Layers'.");
  });
  it('answers at most the service record count', async () => {
    const few = testMap(service.layers, UTM25S, service.fullExtent, { maxRecordCount: 2 });
    expect(arr((await call('Find', findArgs('a'), few))['Result'])).toHaveLength(2);
  });
});

const point = (x: number, y: number, sr?: number): SoapObject => ({
  $type: 'PointN',
  X: x,
  Y: y,
  ...(sr ? { SpatialReference: { $type: 'GeographicCoordinateSystem', WKID: sr } } : {}),
});
const identifyArgs = (shape: SoapObject, extra: Record<string, SoapValue> = {}) => ({
  MapDescription: md(),
  MapImageDisplay: display,
  SearchShape: shape,
  Tolerance: 3,
  IdentifyOption: 'geoIdentifyAllLayers',
  LayerIDs: [],
  ...extra,
});

describe('Identify', () => {
  it('features within the tolerance in pixels of the shape', async () => {
    // About 10 m per pixel: 20 m away is within 3 pixels, not within 1.
    const near = arr((await call('Identify', identifyArgs(point(PX + 20, PY), { LayerIDs: [0] })))['Result']);
    expect(near).toHaveLength(1);
    expect(near[0]).toMatchObject({ $type: 'MapServerIdentifyResult', LayerID: 0, Name: 'Alto da Sé', FeatureID: 1 });
    expect(props(near[0]!['Properties'])['NAME']).toEqual({ $xs: 'string', value: 'Alto da Sé' });
    expect(obj(near[0]!['Shape'])).toMatchObject({ X: PX, Y: PY });
    expect(near[0]!['HTMLPopup']).toBeUndefined();
    expect(arr((await call('Identify', identifyArgs(point(PX + 20, PY), { LayerIDs: [0], Tolerance: 1 })))['Result'])).toHaveLength(0);
  });
  it('a shape in its own spatial reference is placed on the map first', async () => {
    const r = arr((await call('Identify', identifyArgs(point(-34.90763779920564, -7.95841161914058, 4326), { LayerIDs: [0] })))['Result']);
    expect(r.map((x) => x['FeatureID'])).toEqual([1]);
  });
  it.skipIf(!hasDem)('raster layers answer the pixel value (and the value the rule draws)', async () => {
    const r = arr((await call('Identify', identifyArgs(point(PX, PY), { LayerIDs: [2] })))['Result']);
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ LayerID: 2, Name: '65' });
    const p = props(r[0]!['Properties']);
    expect(p['Pixel Value']).toBe('65');
    expect(Number(p['Rendered Value'])).toBeGreaterThanOrEqual(0);
    expect(obj(r[0]!['Shape'])).toMatchObject({ $type: 'PointN', X: PX, Y: PY });
    const outside = arr((await call('Identify', identifyArgs(point(100, 100), { LayerIDs: [2] })))['Result']);
    expect(props(outside[0]!['Properties'])['Pixel Value']).toBe('NoData');
  });
  it('topmost answers the first layer with results, from the top', async () => {
    const inParcel = point(289500, 9113500);
    const top = arr((await call('Identify', identifyArgs(inParcel, { IdentifyOption: 'geoIdentifyTopmost' })))['Result']);
    expect(top.map((x) => [x['LayerID'], x['FeatureID']])).toEqual([[1, 7]]);
    const all = arr((await call('Identify', identifyArgs(inParcel, { IdentifyOption: 'geoIdentifyAllLayers' })))['Result']);
    expect(all.map((x) => x['LayerID'])).toEqual(hasDem ? [1, 2] : [1]);
  });
  it('visible layers follow the LayerDescriptions and scale ranges', async () => {
    const hidden = md([ld(0, false), ld(1, false), ld(2, true)]);
    const r = arr(
      (await call('Identify', identifyArgs(point(PX, PY), { MapDescription: hidden, IdentifyOption: 'geoIdentifyVisibleLayers' })))[
        'Result'
      ],
    );
    expect(r.map((x) => x['LayerID'])).toEqual(hasDem ? [2] : []);
  });
  it('the popup options answer layers with popups, their HTML filled', async () => {
    const r = arr((await call('Identify', identifyArgs(point(PX, PY), { IdentifyOption: 'geoIdentifyVisibleWithHTMLPopup' })))['Result']);
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ LayerID: 0, HTMLPopup: '<b>Alto da Sé</b> 65 m' });
    const top = arr(
      (await call('Identify', identifyArgs(point(289500, 9113500), { IdentifyOption: 'geoIdentifyTopOneWithHTMLPopup' })))['Result'],
    );
    expect(top).toEqual([]);
  });
  it('refuses bad tolerances and options', async () => {
    expect((await fault(call('Identify', identifyArgs(point(0, 0), { Tolerance: -1 })))).issues[0]?.path).toBe('Tolerance');
    expect((await fault(call('Identify', identifyArgs(point(0, 0), { IdentifyOption: 'geoIdentifyAll' })))).issues[0]?.path).toBe(
      'IdentifyOption',
    );
    expect((await fault(call('Identify', identifyArgs({ $type: 'PointN', X: Number.NaN, Y: 0 })))).issues[0]?.path).toBe('SearchShape');
  });
});

describe('QueryHyperlinks', () => {
  it('answers the features in the drawn extent with a hyperlink, at their label points', async () => {
    const r = arr((await call('QueryHyperlinks', { MapDescription: md(), MapImageDisplay: display, LayerIDs: [] }))['Result']);
    expect(r.map((h) => h['URL'])).toEqual(['https://example.org/1', 'https://example.org/parcel/7']);
    expect(obj(r[0]!['Location'])).toMatchObject({ $type: 'PointN', X: PX, Y: PY });
    const parcel = obj(r[1]!['Location']);
    expect(parcel['X']).toBeGreaterThan(289000);
    expect(parcel['X']).toBeLessThan(290000);
    expect(parcel['Y']).toBeGreaterThan(9113000);
    expect(parcel['Y']).toBeLessThan(9114000);
  });
  it('a drawn extent away from the features answers none; LayerIDs picks layers', async () => {
    const away: SoapObject = {
      ...md(),
      MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: 294000, YMin: 9114000, XMax: 295000, YMax: 9115000 } },
    };
    expect(arr((await call('QueryHyperlinks', { MapDescription: away, MapImageDisplay: display, LayerIDs: [] }))['Result'])).toEqual([]);
    expect(arr((await call('QueryHyperlinks', { MapDescription: md(), MapImageDisplay: display, LayerIDs: [1] }))['Result'])).toHaveLength(
      1,
    );
  });
});

describe('helpers', () => {
  it('label points: the middle of a line, a point inside a polygon', () => {
    expect(
      labelPoint({
        type: 'LineString',
        coordinates: [
          [0, 0],
          [10, 0],
          [10, 10],
        ],
      }),
    ).toEqual([10, 0]);
    const p = labelPoint({
      type: 'Polygon',
      coordinates: [
        [
          [0, 0],
          [10, 0],
          [10, 2],
          [2, 2],
          [2, 10],
          [0, 10],
          [0, 0],
        ],
      ],
    })!;
    // An L shape: its interior point is inside, not at the bounding box's centre (5, 5).
    expect(p[0] <= 2 || p[1] <= 2).toBe(true);
  });
  it('popups escape values and keep unknown placeholders', () => {
    expect(fillPopup('<p>{NAME} {missing} {v}</p>', { NAME: '<b>&', V: null })).toBe('<p>&#60;b&#62;&#38; {missing} </p>');
  });
});

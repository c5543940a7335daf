/**
 * The information operations over the site's real feature store (the Olinda fixture): Find's and the
 * hyperlinks' where clauses go through the store's compiler, Identify through its spatial index, data
 * classes through its distinct values. Answers are checked against the fixture files read directly.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import type JstsGeometry from 'jsts/org/locationtech/jts/geom/Geometry.js';
import GeoJSONReader from 'jsts/org/locationtech/jts/io/GeoJSONReader.js';
import RelateOp from 'jsts/org/locationtech/jts/operation/relate/RelateOp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMapService, type OpenedMapService } from '../../map/service.js';
import type { ServiceRecord } from '../../site.js';
import { naturalBreaks } from '../../map/classify.js';
import type { Geometry } from '../../map/model.js';
import { testContext } from '../../../../test/info-map.js';
import { MAP_FIXTURES, olindaMapDefinition } from '../../../../test/map-fixture.js';
import { testSite, type TestSite } from '../../../../test/site.js';
import { encodeResponseEnvelope } from '../codec.js';
import type { SoapObject, SoapResult, SoapValue } from '../operation.js';
import { operationSignature } from '../signatures.js';
import { classHandlers } from './classes.js';
import { identifyHandlers } from './identify.js';
import { infoHandlers } from './info.js';

const FIXTURES = MAP_FIXTURES;

interface GeoFeature {
  properties: Record<string, unknown>;
  geometry: Geometry;
}
const geojson = (name: string): GeoFeature[] =>
  (JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as { features: GeoFeature[] }).features;
const SPOTS = geojson('spot-heights.geojson');
const CLASSES = geojson('elevation-classes.geojson');
const reader = new GeoJSONReader(new GeometryFactory());

const handlers = { ...infoHandlers, ...identifyHandlers, ...classHandlers };
const obj = (v: SoapValue): SoapObject => v as SoapObject;
const arr = (v: SoapValue): SoapObject[] => v as SoapObject[];

let site: TestSite;
let service: OpenedMapService;

beforeAll(async () => {
  site = await testSite();
  const def = olindaMapDefinition();
  const record: ServiceRecord = {
    folder: '',
    serviceName: def.serviceName,
    type: 'MapServer',
    ...(def.description === undefined ? {} : { description: def.description }),
    properties: def.properties,
    created: 0,
  };
  service = await openMapService(record, { dataDir: site.config.dataDir });
});

afterAll(async () => {
  await service?.close();
  await site?.store.close?.();
});

const hasRaster = (): boolean => service.layers.some((l) => l.kind === 'raster');

async function call(op: string, args: Record<string, SoapValue>): Promise<SoapResult> {
  const r = await handlers[op]!(testContext(site, service), args);
  expect(encodeResponseEnvelope(operationSignature(op)!, r)).toContain(`<tns:${op}Response>`);
  return r;
}

const md = (): SoapObject => ({
  $type: 'MapDescription',
  Name: 'Layers',
  MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: 288776.25, YMin: 9110771.41, XMax: 298765.59, YMax: 9120760.75 } },
  Rotation: 0,
});
// About 10 m per pixel, at a scale where the contours (minScale 1:500000) show.
const display = { $type: 'ImageDisplay', ImageWidth: 1000, ImageHeight: 1000, ImageDPI: 96 };

describe('Find over the store', () => {
  it('finds what a case-insensitive substring search of the fixture finds', async () => {
    const r = arr(
      (
        await call('Find', {
          MapDescription: md(),
          MapImageDisplay: display,
          SearchString: 'hills',
          Contains: true,
          SearchFields: 'NAME',
          FindOption: 'geoFindAllLayers',
          LayerIDs: [],
        })
      )['Result'],
    );
    const want = CLASSES.map((f, i) => ({ id: i + 1, name: f.properties['NAME'] })).filter(
      (x) => typeof x.name === 'string' && x.name.toLowerCase().includes('hills'),
    );
    expect(r.map((x) => x['FeatureID'])).toEqual(want.map((x) => x.id));
    expect(new Set(r.map((x) => x['Value']))).toEqual(new Set(['Hills', 'Low hills']));
    expect(r.every((x) => x['LayerID'] === 2 && x['FieldName'] === 'NAME')).toBe(true);
  });
  it('whole values, numbers, and hostile text are plain searches', async () => {
    const find = async (s: string, contains: boolean, fields = '') =>
      arr(
        (
          await call('Find', {
            MapDescription: md(),
            MapImageDisplay: display,
            SearchString: s,
            Contains: contains,
            SearchFields: fields,
            FindOption: 'geoFindAllLayers',
            LayerIDs: [0],
          })
        )['Result'],
      );
    expect((await find('spot 1', false)).map((x) => x['FeatureID'])).toEqual([1]);
    const spots67 = SPOTS.map((f, i) => [i + 1, f.properties['ELEV']])
      .filter(([, e]) => e === 67)
      .map(([i]) => i);
    expect((await find('67', true, 'ELEV')).map((x) => x['FeatureID'])).toEqual(spots67);
    expect(await find("x' OR 1=1 --", true)).toEqual([]);
    expect(await find('%', true)).toEqual([]);
    expect(await find('_', true)).toEqual([]);
    expect(await find('1; DROP TABLE t0', true)).toEqual([]);
  });
});

describe('Identify over the store', () => {
  it('answers the features under a point, as a brute-force geometry test does', async () => {
    const at = { x: 293000, y: 9115000 };
    const r = arr(
      (
        await call('Identify', {
          MapDescription: md(),
          MapImageDisplay: display,
          SearchShape: { $type: 'PointN', X: at.x, Y: at.y },
          Tolerance: 0,
          IdentifyOption: 'geoIdentifyAllLayers',
          LayerIDs: [2],
        })
      )['Result'],
    );
    const point = reader.read({ type: 'Point', coordinates: [at.x, at.y] }) as JstsGeometry;
    const want = CLASSES.map((f, i) => ({ id: i + 1, g: f.geometry })).filter((x) =>
      RelateOp.relate(reader.read(x.g) as JstsGeometry, point).isIntersects(),
    );
    expect(want.length).toBeGreaterThan(0);
    expect(r.map((x) => x['FeatureID'])).toEqual(want.map((x) => x.id));
  });
  it('raster and feature layers together at a spot height', async () => {
    expect(hasRaster()).toBe(true);
    const spot = SPOTS[0]!.geometry.coordinates as number[];
    const r = arr(
      (
        await call('Identify', {
          MapDescription: md(),
          MapImageDisplay: display,
          SearchShape: { $type: 'PointN', X: spot[0]!, Y: spot[1]! },
          Tolerance: 2,
          IdentifyOption: 'geoIdentifyVisibleWithHTMLPopup',
          LayerIDs: [],
        })
      )['Result'],
    );
    expect(r[0]).toMatchObject({ LayerID: 0, FeatureID: 1, Name: 'Spot 1', HTMLPopup: '<div><b>Spot 1</b>: 88 m</div>' });
    const all = arr(
      (
        await call('Identify', {
          MapDescription: md(),
          MapImageDisplay: display,
          SearchShape: { $type: 'PointN', X: spot[0]!, Y: spot[1]! },
          Tolerance: 2,
          IdentifyOption: 'geoIdentifyAllLayers',
          LayerIDs: [0, 3],
        })
      )['Result'],
    );
    expect(all.map((x) => x['LayerID'])).toEqual([0, 3]);
    // The spot is the highest DEM cell of its block: the raster's value there is its ELEV.
    const props = Object.fromEntries(arr(obj(all[1]!['Properties'])['PropertyArray']).map((p) => [p['Key'], p['Value']]));
    expect(Number(props['Pixel Value'])).toBe(SPOTS[0]!.properties['ELEV']);
  });
});

describe('hyperlinks, classes and subtypes over the store', () => {
  it('QueryHyperlinks answers every spot with a URL', async () => {
    const r = arr((await call('QueryHyperlinks', { MapDescription: md(), MapImageDisplay: display, LayerIDs: [0] }))['Result']);
    const want = SPOTS.map((f) => f.properties['URL']).filter((u): u is string => typeof u === 'string' && u !== '');
    expect(r.map((h) => h['URL'])).toEqual(want);
  });
  it('natural breaks of the class areas equal the classification of the fixture values', async () => {
    const r = obj(
      (
        await call('GenerateDataClasses', {
          MapName: 'Layers',
          MapTableDescription: { $type: 'LayerDescription', LayerID: 2, DefinitionExpression: 'CLASS >= 2' },
          DataClassificationDef: {
            $type: 'ClassBreaksDef',
            ClassificationField: 'AREA',
            ClassificationMethod: 'geoClassifyNaturalBreaks',
            BreakCount: 4,
          },
        })
      )['Result'],
    );
    const values = Float64Array.from(
      CLASSES.filter((f) => (f.properties['CLASS'] as number) >= 2).map((f) => f.properties['AREA'] as number),
    );
    expect(arr(r['ClassBreakInfos']).map((i) => i['ClassMaximumValue'])).toEqual(naturalBreaks(values, 4).breaks);
    expect(r['MinimumValue']).toBe(Math.min(...values));
  });
  it('unique values of the class field', async () => {
    const r = obj(
      (
        await call('GenerateDataClasses', {
          MapName: 'Layers',
          MapTableDescription: { $type: 'LayerDescription', LayerID: 2 },
          DataClassificationDef: { $type: 'UniqueValuesDef', Fields: ['CLASS'] },
        })
      )['Result'],
    );
    expect(arr(r['UniqueValueInfos']).map((i) => i['Value'])).toEqual(['1', '2', '3', '4', '5']);
  });
  it('subtypes and the server info of the fixture encode', async () => {
    const st = arr((await call('GetMapTableSubtypeInfos', { MapName: 'Layers' }))['Result']);
    expect(st.map((t) => t['TableID'])).toEqual([2]);
    const info = obj((await call('GetServerInfo', { MapName: 'Layers' }))['Result']);
    expect(arr(info['MapLayerInfos']).map((l) => l['Name'])).toEqual(service.layers.map((l) => l.name));
    expect(arr(info['MapLayerInfos']).map((l) => l['LayerType'])).toEqual([
      'Feature Layer',
      'Feature Layer',
      'Feature Layer',
      'Raster Layer',
    ]);
    expect(info).toMatchObject({ Name: 'Layers', Units: 'geoMeters', CopyrightText: 'DEM: r-cran-stars sample data (Apache-2.0)' });
    expect(arr(info['Bookmarks']).map((b) => b['Name'])).toEqual(['Heights']);
    expect(arr(info['StandaloneTableInfos']).map((t) => [t['ID'], t['Name']])).toEqual([[4, 'Inspections']]);
    expect(arr(arr(info['MapLayerInfos'])[2]!['RelateInfos'])[0]).toMatchObject({
      RelatedTableID: 4,
      Cardinality: 'geoRelCardinalityOneToMany',
    });
  });
});

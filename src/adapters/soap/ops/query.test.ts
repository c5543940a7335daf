/**
 * The query operations against the real feature store on the Olinda fixtures. Expected answers are
 * computed independently from the fixture files: attribute filters by hand over the GeoJSON
 * (OBJECTIDs are 1..n in file order), spatial filters by a brute-force jsts test of every feature,
 * related records by a hand join, statistics by hand arithmetic.
 */
import 'jsts/org/locationtech/jts/monkey.js';
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import GeoJSONReader from 'jsts/org/locationtech/jts/io/GeoJSONReader.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../../core/errors.js';
import type { FeatureLayer, Geometry, MapService } from '../../map/model.js';
import type { SoapContext, SoapObject, SoapValue } from '../operation.js';
import { siteRequest, testSite, type TestSite } from '../../../../test/site.js';
import { withResolvedMapPaths } from '../../map/config.js';
import { mapOutputRoutes } from '../../map/outputs.js';
import { openMapService, type OpenedMapService } from '../../map/service.js';
import { parseServiceDefinition } from '../../site.js';
import { decodeRequest, encodeResponseEnvelope } from '../codec.js';
import { parseEnvelope } from '../envelope.js';
import { spatialReferenceJson } from '../record-set.js';
import { operationSignature } from '../signatures.js';
import { queryHandlers } from './query.js';

const FIXTURES = join(import.meta.dirname, '../../../../test/fixtures/map');

interface Feature {
  readonly properties: Record<string, string | number | null>;
  readonly geometry: Geometry;
}
const features = (file: string): Feature[] => (JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as { features: Feature[] }).features;
const SPOTS = features('spot-heights.geojson');
const CONTOURS = features('contours.geojson');
const CLASSES = features('elevation-classes.geojson');
const INSPECTIONS = JSON.parse(readFileSync(join(FIXTURES, 'inspections.json'), 'utf8')) as Record<string, string | number | null>[];

/** 1-based ids of the items passing `test`. */
const idsWhere = <T>(items: readonly T[], test: (t: T) => boolean): number[] => items.flatMap((t, i) => (test(t) ? [i + 1] : []));

const reader = new GeoJSONReader(new GeometryFactory());
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const jts = (g: Geometry): any => reader.read(g);

let site: TestSite;
let opened: OpenedMapService;
let ctx: SoapContext;
let service: MapService;
beforeAll(async () => {
  site = await testSite();
  const definition = JSON.parse(readFileSync(join(FIXTURES, 'olinda-map.json'), 'utf8')) as unknown;
  const record = withResolvedMapPaths(parseServiceDefinition(definition, site.clock.now()), FIXTURES);
  opened = await openMapService(record, { dataDir: site.config.dataDir });
  service = opened;
  ctx = {
    deps: site,
    service,
    request: siteRequest('/server/services/olinda/MapServer', { method: 'POST' }),
    signal: new AbortController().signal,
    endpoint: 'https://localhost/server/services/olinda/MapServer',
    origin: 'https://localhost',
  };
});
afterAll(async () => {
  await opened?.close();
});

/** GET an output URL through the site's output route. */
const fetchOutput = (url: string): Promise<Response> =>
  mapOutputRoutes(site)[0]!.handler(siteRequest(url.replace('https://localhost', '')));

/** Calls an operation; every answer must also encode against the schema (the strict encoder throws on any misfit). */
const callWith = async (c: SoapContext, op: string, args: Record<string, SoapValue>): Promise<SoapValue> => {
  const r = await queryHandlers[op]!(c, { MapName: 'Layers', ...args });
  expect(encodeResponseEnvelope(operationSignature(op)!, r)).toContain(`<tns:${op}Response>`);
  return r['Result'];
};
const call = (op: string, args: Record<string, SoapValue>): Promise<SoapValue> => callWith(ctx, op, args);

const failure = async (op: string, args: Record<string, SoapValue>): Promise<EngineError> => {
  try {
    await call(op, args);
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    return e as EngineError;
  }
  throw new Error(`${op} should have failed`);
};

const ids = async (layer: number, filter: SoapObject): Promise<number[]> =>
  ((await call('QueryFeatureIDs', { LayerID: layer, QueryFilter: filter })) as SoapObject)['FIDArray'] as number[];

const sorted = (a: number[]): number[] => [...a].sort((x, y) => x - y);

const layerIndex = (name: string): number => service.layers.findIndex((l) => l.name === name);
const tableId = (): number => service.tables.find((t) => t.name === 'Inspections')!.id;

describe('QueryFeatureCount / IDs / Data', () => {
  it('answer the where clause as a hand filter of the fixture does', async () => {
    const spots = layerIndex('Spot heights');
    const expected = idsWhere(SPOTS, (f) => (f.properties['ELEV'] as number) > 60);
    expect(expected.length).toBeGreaterThan(2);
    expect(expected.length).toBeLessThan(SPOTS.length);
    const filter = { $type: 'QueryFilter', WhereClause: 'ELEV > 60' };
    expect(sorted(await ids(spots, filter))).toEqual(expected);
    expect(await call('QueryFeatureCount', { LayerID: spots, QueryFilter: filter })).toBe(expected.length);

    const classes = layerIndex('Elevation classes');
    const likeL = idsWhere(
      CLASSES,
      (f) => typeof f.properties['NAME'] === 'string' && (f.properties['NAME'] as string).startsWith('Low') && f.properties['CLASS'] !== 3,
    );
    expect(sorted(await ids(classes, { $type: 'QueryFilter', WhereClause: "NAME LIKE 'Low%' AND NOT CLASS = 3" }))).toEqual(likeL);
    const nulls = idsWhere(CLASSES, (f) => f.properties['SURVEYED'] === null);
    expect(sorted(await ids(classes, { $type: 'QueryFilter', WhereClause: 'SURVEYED IS NULL' }))).toEqual(nulls);
  });

  it('returns RecordSets: SubFields with the OID, ORDER BY, typed values, geometry only when Shape is asked for', async () => {
    const spots = layerIndex('Spot heights');
    const rs = (await call('QueryFeatureData', {
      LayerID: spots,
      QueryFilter: { $type: 'QueryFilter', WhereClause: 'ELEV >= 56', SubFields: 'NAME,ELEV', PostfixClause: 'ORDER BY ELEV DESC, NAME' },
    })) as SoapObject;
    const names = ((rs['Fields'] as SoapObject)['FieldArray'] as SoapObject[]).map((f) => f['Name']);
    expect(names).toEqual(['OBJECTID', 'NAME', 'ELEV']);
    const expected = SPOTS.map((f, i) => ({ id: i + 1, name: f.properties['NAME'] as string, elev: f.properties['ELEV'] as number }))
      .filter((r) => r.elev >= 56)
      .sort((a, b) => b.elev - a.elev || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const got = (rs['Records'] as SoapObject[]).map((r) => r['Values'] as SoapValue[]);
    // ELEV's xs type follows the type the store gave the field (whole numbers in the file: Integer or Double).
    const elevType = (service.layers[spots] as FeatureLayer).table.fields.find((f) => f.name === 'ELEV')!.type;
    const xs = elevType === 'geoFieldTypeDouble' ? 'double' : 'int';
    expect(got).toEqual(
      expected.map((e) => [
        { $xs: 'int', value: e.id },
        { $xs: 'string', value: e.name },
        { $xs: xs, value: e.elev },
      ]),
    );

    const withShape = (await call('QueryFeatureData', {
      LayerID: spots,
      QueryFilter: { $type: 'QueryFilter', WhereClause: 'OBJECTID = 3', SubFields: 'Shape' },
    })) as SoapObject;
    const values = ((withShape['Records'] as SoapObject[])[0]!['Values'] as SoapValue[])!;
    const [x, y] = SPOTS[2]!.geometry.coordinates as number[];
    expect(values[1]).toMatchObject({ $type: 'PointN' });
    expect((values[1] as SoapObject)['X'] as number).toBeCloseTo(x!, 3); // within a millimetre: see the note on stored coordinates below
    expect((values[1] as SoapObject)['Y'] as number).toBeCloseTo(y!, 3);
  });

  it('refuses where-clause injection with INVALID_ARGUMENT at QueryFilter/WhereClause', async () => {
    for (const where of [
      '1=1; DROP TABLE x',
      'OBJECTID IN (SELECT OBJECTID FROM sqlite_master)',
      "load_extension('evil')",
      'ELEV > 0 -- comment',
    ]) {
      const e = await failure('QueryFeatureCount', { LayerID: 0, QueryFilter: { $type: 'QueryFilter', WhereClause: where } });
      expect(e.code, where).toBe('INVALID_ARGUMENT');
      expect(e.path, where).toBe('QueryFilter/WhereClause');
    }
  });

  it('spatial filters equal a brute-force jsts test of every feature', async () => {
    const env = { xmin: 292000, ymin: 9114000, xmax: 296000, ymax: 9118000 };
    const box: Geometry = {
      type: 'Polygon',
      coordinates: [
        [
          [env.xmin, env.ymin],
          [env.xmax, env.ymin],
          [env.xmax, env.ymax],
          [env.xmin, env.ymax],
          [env.xmin, env.ymin],
        ],
      ],
    };
    const soapBox = { $type: 'EnvelopeN', XMin: env.xmin, YMin: env.ymin, XMax: env.xmax, YMax: env.ymax };
    const jbox = jts(box);
    // Every relation reads "filter REL feature" (the vendor's "query geometry REL target geometry").
    const cases: [string, Feature[], string, (g: ReturnType<typeof jts>) => boolean][] = [
      ['Contours', CONTOURS, 'geoSpatialRelIntersects', (g) => g.intersects(jbox)],
      ['Contours', CONTOURS, 'geoSpatialRelContains', (g) => jbox.contains(g)],
      ['Contours', CONTOURS, 'geoSpatialRelCrosses', (g) => g.crosses(jbox)],
      ['Elevation classes', CLASSES, 'geoSpatialRelIntersects', (g) => g.intersects(jbox)],
      ['Elevation classes', CLASSES, 'geoSpatialRelOverlaps', (g) => g.overlaps(jbox)],
      ['Elevation classes', CLASSES, 'geoSpatialRelContains', (g) => jbox.contains(g)],
      ['Elevation classes', CLASSES, 'geoSpatialRelWithin', (g) => jbox.within(g)],
      [
        'Elevation classes',
        CLASSES,
        'geoSpatialRelEnvelopeIntersects',
        (g) => g.getEnvelopeInternal().intersects(jbox.getEnvelopeInternal()),
      ],
      ['Spot heights', SPOTS, 'geoSpatialRelContains', (g) => jbox.contains(g)],
    ];
    for (const [name, fs, rel, test] of cases) {
      const expected = idsWhere(fs, (f) => test(jts(f.geometry)) as boolean);
      const got = sorted(
        await ids(layerIndex(name), { $type: 'SpatialFilter', WhereClause: '', SpatialRel: rel, FilterGeometry: soapBox }),
      );
      expect(got, `${name} ${rel}`).toEqual(expected);
    }
    // Contains and a DE-9IM relation with a polygon of the layer itself.
    const classes = layerIndex('Elevation classes');
    // Touching needs exactly shared boundaries: brute force over the geometries as stored, with a
    // stored polygon as the filter (the store may carry the features through a no-op reprojection
    // that moves the last digits of the fixture's coordinates).
    const stored = await (service.layers[classes] as FeatureLayer).table.query({ returnGeometry: true, limit: 100000 });
    expect(stored.map((r) => r.id)).toEqual(CLASSES.map((_, i) => i + 1));
    const asStored = stored.map((r) => ({ properties: {}, geometry: r.geometry! }));
    const k = CLASSES.findIndex((f) => f.geometry.type === 'Polygon' && f.geometry.coordinates.length === 1);
    const poly = asStored[k]!.geometry as Extract<Geometry, { type: 'Polygon' }>;
    const ring = { $type: 'Ring', PointArray: poly.coordinates[0]!.map(([x, y]) => ({ $type: 'PointN', X: x!, Y: y! })) };
    const jpoly = jts(poly);
    const touches = idsWhere(asStored, (f) => jts(f.geometry).touches(jpoly) as boolean);
    expect(touches.length).toBeGreaterThan(0);
    expect(
      sorted(
        await ids(classes, {
          $type: 'SpatialFilter',
          SpatialRel: 'geoSpatialRelTouches',
          FilterGeometry: { $type: 'PolygonN', RingArray: [ring] },
        }),
      ),
    ).toEqual(touches);
    const mask = 'FF*F1****';
    const rel = idsWhere(asStored, (f) => jpoly.relate(jts(f.geometry), mask) as boolean);
    expect(rel.length).toBeGreaterThan(0);
    expect(
      sorted(
        await ids(classes, {
          $type: 'SpatialFilter',
          SpatialRel: 'geoSpatialRelRelation',
          SpatialRelDescription: mask,
          FilterGeometry: { $type: 'PolygonN', RingArray: [ring] },
        }),
      ),
    ).toEqual(rel);
    const contained = idsWhere(SPOTS, (f) => jpoly.contains(jts(f.geometry)) as boolean);
    expect(
      sorted(
        await ids(layerIndex('Spot heights'), {
          $type: 'SpatialFilter',
          SpatialRel: 'geoSpatialRelContains',
          FilterGeometry: { $type: 'PolygonN', RingArray: [ring] },
        }),
      ),
    ).toEqual(contained);
  });
});

describe('QueryFeatureData2 / QueryData: descriptions, definition expressions, result formats', () => {
  const classesDesc = (def: string, extra: SoapObject = {}): SoapObject => ({
    $type: 'LayerDescription',
    LayerID: layerIndex('Elevation classes'),
    Visible: true,
    DefinitionExpression: def,
    ...extra,
  });

  it('ANDs the definition expression with the where clause (counts, ids, rows)', async () => {
    const expected = idsWhere(CLASSES, (f) => f.properties['CLASS'] === 4 && (f.properties['AREA'] as number) > 200000);
    expect(expected.length).toBeGreaterThan(0);
    const args = { LayerDescription: classesDesc('CLASS = 4'), QueryFilter: { $type: 'QueryFilter', WhereClause: 'AREA > 200000' } };
    expect(await call('QueryFeatureCount2', args)).toBe(expected.length);
    expect(sorted(((await call('QueryFeatureIDs2', args)) as SoapObject)['FIDArray'] as number[])).toEqual(expected);
    const r = (await call('QueryFeatureData2', {
      ...args,
      QueryResultOptions: { $type: 'QueryResultOptions', Format: 'geoQueryResultRecordSetAsObject' },
    })) as SoapObject;
    const records = (r['Object'] as SoapObject)['Records'] as SoapObject[];
    expect(sorted(records.map((rec) => ((rec['Values'] as SoapObject[])[0] as unknown as { value: number }).value))).toEqual(expected);
  });

  it('answers Esri JSON (MIME and URL through the outputs route), KML in WGS 84 and AMF3', async () => {
    const args = {
      LayerDescription: classesDesc(''),
      QueryFilter: { $type: 'QueryFilter', WhereClause: 'CLASS = 5', SubFields: 'OBJECTID,NAME,Shape' },
    };
    const expected = idsWhere(CLASSES, (f) => f.properties['CLASS'] === 5);
    const mime = (await call('QueryFeatureData2', { ...args, QueryResultOptions: { Format: 'geoQueryResultJsonAsMime' } })) as SoapObject;
    const fs = JSON.parse(new TextDecoder().decode(mime['MimeData'] as Uint8Array)) as {
      geometryType: string;
      spatialReference: { wkid: number };
      fields: { name: string }[];
      features: { attributes: { OBJECTID: number; NAME: string | null }; geometry: { rings: number[][][] } }[];
    };
    expect(fs.geometryType).toBe('esriGeometryPolygon');
    expect(fs.spatialReference).toEqual(spatialReferenceJson(service.spatialReference));
    expect(fs.fields.map((f) => f.name)).toEqual(['OBJECTID', 'NAME']);
    expect(sorted(fs.features.map((f) => f.attributes.OBJECTID))).toEqual(expected);
    const first = fs.features.find((f) => f.attributes.OBJECTID === expected[0])!;
    const source = CLASSES[expected[0]! - 1]!.geometry;
    const firstPos = source.type === 'Polygon' ? source.coordinates[0]![0]! : (source.coordinates as number[][][][])[0]![0]![0]!;
    expect(first.geometry.rings.flat().some(([x, y]) => Math.abs(x! - firstPos[0]!) < 1e-3 && Math.abs(y! - firstPos[1]!) < 1e-3)).toBe(
      true,
    );

    const url = (await call('QueryFeatureData2', { ...args, QueryResultOptions: { Format: 'geoQueryResultJsonAsURL' } })) as SoapObject;
    expect(url['MimeData']).toBeUndefined();
    const res = await fetchOutput(url['URL'] as string);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual(fs);

    const kml = new TextDecoder().decode(
      ((await call('QueryFeatureData2', { ...args, QueryResultOptions: { Format: 'geoQueryResultKMLAsMime' } })) as SoapObject)[
        'MimeData'
      ] as Uint8Array,
    );
    expect(kml.match(/<Placemark /g)).toHaveLength(expected.length);
    const lonLat = /<coordinates>(-?[\d.]+),(-?[\d.]+)/.exec(kml)!;
    expect(Number(lonLat[1])).toBeGreaterThan(-35.2);
    expect(Number(lonLat[1])).toBeLessThan(-34.7);
    expect(Number(lonLat[2])).toBeGreaterThan(-8.3);
    expect(Number(lonLat[2])).toBeLessThan(-7.8);

    const amf = ((await call('QueryFeatureData2', { ...args, QueryResultOptions: { Format: 'geoQueryResultAmfAsMime' } })) as SoapObject)[
      'MimeData'
    ] as Uint8Array;
    expect(amf[0]).toBe(0x0a);
    expect(Buffer.from(amf).includes(Buffer.from('esriGeometryPolygon'))).toBe(true);
  });

  it('reprojects into OutputSpatialReference and leaves the geometry out when LayerResultOptions/IncludeGeometry is false', async () => {
    const spots = layerIndex('Spot heights');
    const r = (await call('QueryFeatureData2', {
      LayerDescription: {
        $type: 'LayerDescription',
        LayerID: spots,
        DefinitionExpression: '',
        LayerResultOptions: { IncludeGeometry: false },
      },
      QueryFilter: { $type: 'QueryFilter', WhereClause: 'OBJECTID = 1' },
      QueryResultOptions: { Format: 'geoQueryResultRecordSetAsObject' },
    })) as SoapObject;
    const fields = (((r['Object'] as SoapObject)['Fields'] as SoapObject)['FieldArray'] as SoapObject[]).map((f) => f['Type']);
    expect(fields).not.toContain('geoFieldTypeGeometry');
    const g = (await call('QueryFeatureData', {
      LayerID: spots,
      QueryFilter: {
        $type: 'QueryFilter',
        WhereClause: 'OBJECTID = 1',
        SubFields: 'Shape',
        OutputSpatialReference: { $type: 'GeographicCoordinateSystem', WKID: 4326 },
      },
    })) as SoapObject;
    const pt = ((g['Records'] as SoapObject[])[0]!['Values'] as SoapObject[])[1]!;
    expect(pt['X']).toBeGreaterThan(-35.2);
    expect(pt['X']).toBeLessThan(-34.7);
    const geomField = ((g['Fields'] as SoapObject)['FieldArray'] as SoapObject[]).find((f) => f['Type'] === 'geoFieldTypeGeometry')!;
    expect(((geomField['GeometryDef'] as SoapObject)['SpatialReference'] as SoapObject)['WKID']).toBe(4326);
  });

  it('queries the standalone table through a StandaloneTableDescription', async () => {
    const table = { $type: 'StandaloneTableDescription', ID: tableId(), DefinitionExpression: "INSPECTOR = 'Ana Lima'" };
    const expected = idsWhere(INSPECTIONS, (r) => r['INSPECTOR'] === 'Ana Lima' && typeof r['SCORE'] === 'number' && r['SCORE'] >= 40);
    expect(expected.length).toBeGreaterThan(0);
    const filter = { $type: 'QueryFilter', WhereClause: 'SCORE >= 40' };
    expect(await call('QueryRowCount', { MapTableDescription: table, QueryFilter: filter })).toBe(expected.length);
    expect(sorted((await call('QueryRowIDs', { MapTableDescription: table, QueryFilter: filter })) as number[])).toEqual(expected);
    const data = (await call('QueryData', {
      MapTableDescription: table,
      QueryFilter: { ...filter, SubFields: 'SCORE', PostfixClause: 'ORDER BY SCORE' },
      QueryResultOptions: { Format: 'geoQueryResultRecordSetAsObject' },
    })) as SoapObject;
    const scores = ((data['Object'] as SoapObject)['Records'] as SoapObject[]).map(
      (r) => ((r['Values'] as SoapObject[])[1] as unknown as { value: number }).value,
    );
    expect(scores).toEqual(expected.map((i) => INSPECTIONS[i - 1]!['SCORE'] as number).sort((a, b) => a - b));
  });

  it('DISTINCT answers one row per distinct value', async () => {
    const r = (await call('QueryData', {
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: tableId() },
      QueryFilter: {
        $type: 'QueryFilter',
        WhereClause: '',
        SubFields: 'INSPECTOR',
        PrefixClause: 'DISTINCT',
        PostfixClause: 'ORDER BY INSPECTOR',
      },
      QueryResultOptions: { Format: 'geoQueryResultRecordSetAsObject' },
    })) as SoapObject;
    const names = ((r['Object'] as SoapObject)['Records'] as SoapObject[]).map(
      (rec) => ((rec['Values'] as SoapObject[])[0] as unknown as { value: string }).value,
    );
    expect(names).toEqual([...new Set(INSPECTIONS.map((i) => i['INSPECTOR'] as string))].sort());
  });

  it('truncates data answers at maxRecordCount (JSON says exceededTransferLimit); counts and ids are not limited', async () => {
    const small = Object.create(service, { maxRecordCount: { value: 5 } }) as MapService;
    const c = { ...ctx, service: small };
    const contours = layerIndex('Contours');
    const filter = { $type: 'QueryFilter', WhereClause: '' };
    const rs = (await queryHandlers['QueryFeatureData']!(c, { MapName: 'Layers', LayerID: contours, QueryFilter: filter }))[
      'Result'
    ] as SoapObject;
    expect(rs['Records']).toHaveLength(5);
    const j = (
      await queryHandlers['QueryFeatureData2']!(c, {
        MapName: 'Layers',
        LayerDescription: { $type: 'LayerDescription', LayerID: contours },
        QueryFilter: filter,
        QueryResultOptions: { Format: 'geoQueryResultJsonAsMime' },
      })
    )['Result'] as SoapObject;
    const fs = JSON.parse(new TextDecoder().decode(j['MimeData'] as Uint8Array)) as {
      features: unknown[];
      exceededTransferLimit?: boolean;
    };
    expect(fs.features).toHaveLength(5);
    expect(fs.exceededTransferLimit).toBe(true);
    expect((await queryHandlers['QueryFeatureCount']!(c, { MapName: 'Layers', LayerID: contours, QueryFilter: filter }))['Result']).toBe(
      CONTOURS.length,
    );
    expect(
      ((await queryHandlers['QueryFeatureIDs']!(c, { MapName: 'Layers', LayerID: contours, QueryFilter: filter }))['Result'] as SoapObject)[
        'FIDArray'
      ],
    ).toHaveLength(CONTOURS.length);
  });
});

describe('QueryRelatedRecords', () => {
  const relId = (): number => service.relationships.find((r) => r.name === 'Class inspections')!.id;

  it('answers each source row its related rows, as the key join computed by hand', async () => {
    const classes = layerIndex('Elevation classes');
    const sources = [1, 8, 15, 2, 999];
    const r = (await call('QueryRelatedRecords', {
      SourceTableID: classes,
      SourceFIDSet: { $type: 'FIDSet', FIDArray: sources },
      RelateDescription: {
        $type: 'RelateDescription',
        RelationshipID: relId(),
        RelatedTableFields: 'INSPECTOR,SCORE',
        ResultFormat: 'geoRelateResultRelatedRecordSetAsObject',
      },
    })) as SoapObject;
    const set = r['Object'] as SoapObject;
    expect(set.$type).toBe('RelatedRecordSet');
    const fields = ((set['RelatedRecordFields'] as SoapObject)['FieldArray'] as SoapObject[]).map((f) => f['Name']);
    expect(fields).toEqual(['OBJECTID', 'INSPECTOR', 'SCORE']);
    const got = (set['RelatedRecordGroups'] as SoapObject[]).map((g) => [
      g['SourceRowID'],
      sorted((g['Records'] as SoapObject[]).map((rec) => ((rec['Values'] as SoapObject[])[0] as unknown as { value: number }).value)),
    ]);
    const expected = sources
      .filter((s) => s <= CLASSES.length)
      .map((s) => [s, idsWhere(INSPECTIONS, (i) => i['PARCEL_ID'] === s)] as const)
      .filter(([, rel]) => rel.length > 0);
    expect(expected.length).toBeGreaterThan(1);
    expect(got).toEqual(expected);
  });

  it('goes the other way (table -> layer) with a definition expression and JSON', async () => {
    const t = tableId();
    const r = (await call('QueryRelatedRecords2', {
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: t },
      SourceFIDSet: { FIDArray: [1, 2, 3] },
      RelateDescription: {
        RelationshipID: relId(),
        RelatedTableDefinitionExpression: 'CLASS >= 1',
        IncludeGeometry: false,
        ResultFormat: 'geoRelateResultJsonAsMime',
      },
    })) as SoapObject;
    const j = JSON.parse(new TextDecoder().decode(r['MimeData'] as Uint8Array)) as {
      relatedRecordGroups: { objectId: number; relatedRecords: { attributes: { OBJECTID: number }; geometry?: unknown }[] }[];
    };
    const expected = [1, 2, 3]
      .map((i) => [i, [INSPECTIONS[i - 1]!['PARCEL_ID'] as number].filter((p) => p <= CLASSES.length)] as const)
      .filter(([, rel]) => rel.length > 0);
    expect(j.relatedRecordGroups.map((g) => [g.objectId, g.relatedRecords.map((x) => x.attributes.OBJECTID)])).toEqual(expected);
    expect(j.relatedRecordGroups[0]!.relatedRecords[0]!.geometry).toBeUndefined();
  });

  it('refuses an unknown relationship', async () => {
    const e = await failure('QueryRelatedRecords', {
      SourceTableID: layerIndex('Spot heights'),
      SourceFIDSet: { FIDArray: [1] },
      RelateDescription: { RelationshipID: relId() },
    });
    expect(e.code).toBe('NOT_FOUND');
    expect(e.path).toBe('RelateDescription/RelationshipID');
  });
});

describe('QueryDataStatistics', () => {
  it('equals hand-computed statistics per group', async () => {
    const r = (await call('QueryDataStatistics', {
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: tableId() },
      StatisticsRequest: {
        StatisticDescriptions: [
          { StatisticFieldName: 'SCORE', StatisticType: 'geoDataStatTypeCount', ResultFieldName: 'N' },
          { StatisticFieldName: 'SCORE', StatisticType: 'geoDataStatTypeSum' },
          { StatisticFieldName: 'SCORE', StatisticType: 'geoDataStatTypeMin' },
          { StatisticFieldName: 'SCORE', StatisticType: 'geoDataStatTypeMax' },
          { StatisticFieldName: 'SCORE', StatisticType: 'geoDataStatTypeAverage' },
          { StatisticFieldName: 'SCORE', StatisticType: 'geoDataStatTypeStdDev' },
          { StatisticFieldName: 'SCORE', StatisticType: 'geoDataStatTypeVariance' },
        ],
        GroupByFields: 'INSPECTOR',
        OrderByFields: 'INSPECTOR',
      },
      QueryFilter: { $type: 'QueryFilter', WhereClause: 'PARCEL_ID > 5' },
    })) as SoapObject;
    const fields = ((r['Fields'] as SoapObject)['FieldArray'] as SoapObject[]).map((f) => `${f['Name'] as string}:${f['Type'] as string}`);
    expect(fields).toEqual([
      'INSPECTOR:geoFieldTypeString',
      'N:geoFieldTypeInteger',
      'SUM_SCORE:geoFieldTypeDouble',
      'MIN_SCORE:geoFieldTypeInteger',
      'MAX_SCORE:geoFieldTypeInteger',
      'AVG_SCORE:geoFieldTypeDouble',
      'STDDEV_SCORE:geoFieldTypeDouble',
      'VAR_SCORE:geoFieldTypeDouble',
    ]);
    const rows = (r['Records'] as SoapObject[]).map((rec) =>
      (rec['Values'] as (SoapObject | null)[]).map((v) => (v === null ? null : (v as unknown as { value: number | string }).value)),
    );
    const inspectors = [...new Set(INSPECTIONS.filter((i) => (i['PARCEL_ID'] as number) > 5).map((i) => i['INSPECTOR'] as string))].sort();
    expect(rows.map((row) => row[0])).toEqual(inspectors);
    for (const row of rows) {
      const scores = INSPECTIONS.filter(
        (i) => (i['PARCEL_ID'] as number) > 5 && i['INSPECTOR'] === row[0] && typeof i['SCORE'] === 'number',
      ).map((i) => i['SCORE'] as number);
      const n = scores.length;
      const sum = scores.reduce((a, b) => a + b, 0);
      const mean = sum / n;
      // Sample variance (n - 1), as the vendor's statistics and SQL's VAR_SAMP compute it.
      const variance = scores.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1);
      expect(row[1]).toBe(n);
      expect(row[2]).toBe(sum);
      expect(row[3]).toBe(Math.min(...scores));
      expect(row[4]).toBe(Math.max(...scores));
      expect(row[5] as number).toBeCloseTo(mean, 9);
      expect(row[6] as number).toBeCloseTo(Math.sqrt(variance), 9);
      expect(row[7] as number).toBeCloseTo(variance, 9);
    }
  });

  it('refuses a non-numeric sum and an unknown field', async () => {
    const base = { MapTableDescription: { $type: 'StandaloneTableDescription', ID: tableId() }, QueryFilter: { WhereClause: '' } };
    const e1 = await failure('QueryDataStatistics', {
      ...base,
      StatisticsRequest: { StatisticDescriptions: [{ StatisticFieldName: 'INSPECTOR', StatisticType: 'geoDataStatTypeSum' }] },
    });
    expect(e1.path).toBe('StatisticsRequest/StatisticDescriptions[0]/StatisticType');
    const e2 = await failure('QueryDataStatistics', {
      ...base,
      StatisticsRequest: { StatisticDescriptions: [{ StatisticFieldName: 'NOPE', StatisticType: 'geoDataStatTypeSum' }] },
    });
    expect(e2.path).toBe('StatisticsRequest/StatisticDescriptions[0]/StatisticFieldName');
  });
});

describe('Attachments and HTML popups', () => {
  it('lists attachments and returns their bytes embedded or by URL', async () => {
    const spots = layerIndex('Spot heights');
    const infos = (await call('QueryAttachmentInfos', { TableID: spots, RowIDs: [1, 2] })) as SoapObject[];
    expect(infos).toEqual([
      {
        $type: 'AttachmentInfo',
        AttachmentID: expect.any(Number) as number,
        ParentID: 1,
        Name: 'summit.json',
        ContentType: 'application/json',
        Size: readFileSync(join(FIXTURES, 'attachments/summit.json')).length,
      },
    ]);
    const classes = layerIndex('Elevation classes');
    const infos2 = (await call('QueryAttachmentInfos2', {
      MapTableDescription: { $type: 'LayerDescription', LayerID: classes },
      RowIDs: [1, 3],
    })) as SoapObject[];
    expect(infos2.map((i) => [i['ParentID'], i['Name']])).toEqual([
      [1, 'survey-notes.txt'],
      [1, 'thumbnail.png'],
      [3, 'notes-copy.txt'],
    ]);
    const png = infos2[1]!;
    const embedded = (await call('QueryAttachmentData', {
      TableID: classes,
      AttachmentIDs: [png['AttachmentID'] as number],
      TransportType: 'geoTransportTypeEmbedded',
    })) as SoapObject[];
    expect(Buffer.from(embedded[0]!['Data'] as Uint8Array)).toEqual(readFileSync(join(FIXTURES, 'attachments/thumbnail.png')));
    expect(embedded[0]!['URL']).toBe('');
    const byUrl = (await call('QueryAttachmentData2', {
      MapTableDescription: { $type: 'LayerDescription', LayerID: classes },
      AttachmentIDs: [png['AttachmentID'] as number],
      TransportType: 'geoTransportTypeUrl',
    })) as SoapObject[];
    expect((byUrl[0]!['Data'] as Uint8Array).length).toBe(0);
    const res = await fetchOutput(byUrl[0]!['URL'] as string);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(readFileSync(join(FIXTURES, 'attachments/thumbnail.png')));
    const e = await failure('QueryAttachmentData', { TableID: classes, AttachmentIDs: [99999], TransportType: 'geoTransportTypeEmbedded' });
    expect(e.code).toBe('NOT_FOUND');
    // The "2" forms honour the definition expression: row 1's attachments are left out with OBJECTID <> 1.
    const without1 = { $type: 'LayerDescription', LayerID: classes, DefinitionExpression: 'OBJECTID <> 1' };
    const kept = (await call('QueryAttachmentInfos2', { MapTableDescription: without1, RowIDs: [1, 3] })) as SoapObject[];
    expect(kept.map((i) => [i['ParentID'], i['Name']])).toEqual([[3, 'notes-copy.txt']]);
    const e2 = await failure('QueryAttachmentData2', {
      MapTableDescription: without1,
      AttachmentIDs: [png['AttachmentID'] as number],
      TransportType: 'geoTransportTypeEmbedded',
    });
    expect([e2.code, e2.path]).toEqual(['NOT_FOUND', 'AttachmentIDs[0]']);
  });

  it('fills the popup template with HTML-escaped values, one per row in the order asked', async () => {
    const spots = layerIndex('Spot heights');
    const popups = (await call('QueryHTMLPopups', { TableID: spots, RowIDs: [3, 1] })) as string[];
    const p = (i: number): string =>
      `<div><b>${SPOTS[i - 1]!.properties['NAME'] as string}</b>: ${String(SPOTS[i - 1]!.properties['ELEV'])} m</div>`;
    expect(popups).toEqual([p(3), p(1)]);
    const carla = INSPECTIONS.findIndex((i) => i['INSPECTOR'] === "Carla D'Ávila") + 1;
    const t = (await call('QueryHTMLPopups2', {
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: tableId() },
      RowIDs: [carla],
    })) as string[];
    expect(t[0]).toContain('Carla D&#39;Ávila scored');
    const e = await failure('QueryHTMLPopups', { TableID: spots, RowIDs: [1, 999] });
    expect([e.code, e.path]).toEqual(['NOT_FOUND', 'RowIDs[1]']);
    // QueryHTMLPopups2 honours the description's definition expression: rows it leaves out are not found.
    const e2 = await failure('QueryHTMLPopups2', {
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: tableId(), DefinitionExpression: `INSPECTOR <> 'Carla D''Ávila'` },
      RowIDs: [carla],
    });
    expect([e2.code, e2.path]).toEqual(['NOT_FOUND', 'RowIDs[0]']);
  });

  it('escapes markup in values (a hand-made table), keeps unknown placeholders and writes a default table without a template', async () => {
    const fields = [
      { name: 'OBJECTID', type: 'geoFieldTypeOID', alias: 'OBJECTID', length: 0, nullable: false, editable: false },
      { name: 'NAME', type: 'geoFieldTypeString', alias: 'Name <alias>', length: 50, nullable: true, editable: true },
    ] as const;
    const table = {
      fields,
      objectIdField: 'OBJECTID',
      geometryType: null,
      query: () => Promise.resolve([{ id: 1, attributes: { OBJECTID: 1, NAME: `<script>alert("x")</script> & 'co'` } }]),
    };
    const fake = (popupTemplate?: string): MapService =>
      Object.create(service, {
        byId: {
          value: (id: number) =>
            id === 77
              ? { kind: 'table', id: 77, name: 'Fake', table, displayField: 'NAME', ...(popupTemplate ? { popupTemplate } : {}) }
              : undefined,
        },
      }) as MapService;
    const run = async (svc: MapService): Promise<string> =>
      (
        (await queryHandlers['QueryHTMLPopups']!({ ...ctx, service: svc }, { MapName: 'Layers', TableID: 77, RowIDs: [1] }))[
          'Result'
        ] as string[]
      )[0]!;
    expect(await run(fake('<p>{name} {OTHER}</p>'))).toBe(
      '<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39; {OTHER}</p>',
    );
    expect(await run(fake())).toBe(
      '<table><tr><th>OBJECTID</th><td>1</td></tr><tr><th>Name &lt;alias&gt;</th><td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</td></tr></table>',
    );
  });
});

describe('Map, layer and table ids', () => {
  it('refuses an unknown map name, an unknown layer and a raster layer', async () => {
    const e1 = await failure('QueryFeatureCount', { MapName: 'Other', LayerID: 0, QueryFilter: { WhereClause: '' } });
    expect([e1.code, e1.path]).toEqual(['NOT_FOUND', 'MapName']);
    const e2 = await failure('QueryFeatureCount', { LayerID: 12, QueryFilter: { WhereClause: '' } });
    expect([e2.code, e2.message]).toEqual(['NOT_FOUND', "Layer 12 does not exist in map 'Layers'."]);
    const raster = service.layers.findIndex((l) => l.kind === 'raster');
    const e3 = await failure('QueryFeatureData', { LayerID: raster, QueryFilter: { WhereClause: '' } });
    expect(e3.code).toBe('INVALID_ARGUMENT');
    const e4 = await failure('QueryRowCount', {
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: 0 },
      QueryFilter: { WhereClause: '' },
    });
    expect(e4.path).toBe('MapTableDescription/ID');
    expect((service.layers[0] as FeatureLayer).kind).toBe('feature');
  });

  it('names the faulty clause: definition expressions, the related table expression, SubFields, ORDER BY', async () => {
    const classes = layerIndex('Elevation classes');
    const e1 = await failure('QueryFeatureCount2', {
      LayerDescription: { $type: 'LayerDescription', LayerID: classes, DefinitionExpression: 'CLASS = 1; DROP TABLE t2' },
      QueryFilter: { WhereClause: 'CLASS > 0' },
    });
    expect([e1.code, e1.path]).toEqual(['INVALID_ARGUMENT', 'LayerDescription/DefinitionExpression']);
    const e2 = await failure('QueryRowIDs', {
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: tableId(), DefinitionExpression: 'NOPE = 1' },
      QueryFilter: { WhereClause: '' },
    });
    expect([e2.code, e2.path]).toEqual(['INVALID_ARGUMENT', 'MapTableDescription/DefinitionExpression']);
    const e3 = await failure('QueryRelatedRecords', {
      SourceTableID: classes,
      SourceFIDSet: { FIDArray: [1] },
      RelateDescription: { RelationshipID: service.relationships[0]!.id, RelatedTableDefinitionExpression: 'SCORE > (SELECT 1)' },
    });
    expect([e3.code, e3.path]).toEqual(['INVALID_ARGUMENT', 'RelateDescription/RelatedTableDefinitionExpression']);
    const e4 = await failure('QueryFeatureData', { LayerID: classes, QueryFilter: { WhereClause: '', SubFields: 'NAME,HEIGHT' } });
    expect([e4.code, e4.path]).toEqual(['INVALID_ARGUMENT', 'QueryFilter/SubFields']);
    const e5 = await failure('QueryFeatureData', {
      LayerID: classes,
      QueryFilter: { WhereClause: '', PostfixClause: 'ORDER BY NAME; DELETE' },
    });
    expect([e5.code, e5.path]).toEqual(['INVALID_ARGUMENT', 'QueryFilter/PostfixClause']);
  });
});

describe('on the wire', () => {
  /** A request as a client writes it, decoded by the codec, answered, and encoded. */
  const wire = async (op: string, body: string): Promise<string> => {
    const xml = `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:g="http://www.geo.example/schemas/Geo/3.5.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><g:${op}>${body}</g:${op}></soapenv:Body></soapenv:Envelope>`;
    const sig = operationSignature(op)!;
    const args = decodeRequest(sig, parseEnvelope(xml, 'text/xml; charset=utf-8').request);
    return encodeResponseEnvelope(sig, await queryHandlers[op]!(ctx, args));
  };

  it('QueryFeatureData2 with a where clause and a spatial filter, as zeep sends it', async () => {
    const classes = layerIndex('Elevation classes');
    const body = `<MapName>Layers</MapName>
      <LayerDescription><LayerID>${classes}</LayerID><Visible>true</Visible><ShowLabels>false</ShowLabels><ScaleSymbols>false</ScaleSymbols>
        <SetSelectionSymbol>false</SetSelectionSymbol><SelectionBufferDistance>0</SelectionBufferDistance><ShowSelectionBuffer>false</ShowSelectionBuffer>
        <DefinitionExpression></DefinitionExpression></LayerDescription>
      <QueryFilter xsi:type="g:SpatialFilter"><SubFields>OBJECTID,CLASS</SubFields><WhereClause>CLASS &gt;= 3</WhereClause><Resolution>0</Resolution>
        <SearchOrder>geoSearchOrderSpatial</SearchOrder><SpatialRel>geoSpatialRelIntersects</SpatialRel><SpatialRelDescription></SpatialRelDescription>
        <FilterGeometry xsi:type="g:EnvelopeN"><XMin>292000</XMin><YMin>9114000</YMin><XMax>296000</XMax><YMax>9118000</YMax></FilterGeometry>
        <GeometryFieldName></GeometryFieldName><FilterOwnsGeometry>false</FilterOwnsGeometry></QueryFilter>
      <QueryResultOptions><Format>geoQueryResultRecordSetAsObject</Format></QueryResultOptions>`;
    const out = await wire('QueryFeatureData2', body);
    const box = jts({
      type: 'Polygon',
      coordinates: [
        [
          [292000, 9114000],
          [296000, 9114000],
          [296000, 9118000],
          [292000, 9118000],
          [292000, 9114000],
        ],
      ],
    });
    const expected = idsWhere(CLASSES, (f) => (f.properties['CLASS'] as number) >= 3 && (jts(f.geometry).intersects(box) as boolean));
    expect(expected.length).toBeGreaterThan(1);
    expect(out).toContain('<Object xsi:type="tns:RecordSet">');
    const ids = [
      ...out.matchAll(/<Record xsi:type="tns:Record"><Values xsi:type="tns:ArrayOfValue"><Value xsi:type="xs:int">(\d+)<\/Value>/g),
    ].map((m) => Number(m[1]));
    expect(sorted(ids)).toEqual(expected);
  });

  it('QueryRowIDs, QueryRelatedRecords and QueryHTMLPopups2 with a StandaloneTableDescription', async () => {
    const t = tableId();
    const rows = await wire(
      'QueryRowIDs',
      `<MapName>Layers</MapName><MapTableDescription xsi:type="g:StandaloneTableDescription"><ID>${t}</ID><DefinitionExpression>SCORE IS NULL</DefinitionExpression></MapTableDescription><QueryFilter><WhereClause></WhereClause></QueryFilter>`,
    );
    const nulls = idsWhere(INSPECTIONS, (i) => i['SCORE'] === null);
    expect(nulls.length).toBeGreaterThan(0);
    expect([...rows.matchAll(/<Int>(\d+)<\/Int>/g)].map((m) => Number(m[1]))).toEqual(nulls);
    const related = await wire(
      'QueryRelatedRecords',
      `<MapName>Layers</MapName><SourceTableID>${layerIndex('Elevation classes')}</SourceTableID><SourceFIDSet><FIDArray><Int>1</Int></FIDArray></SourceFIDSet>
       <RelateDescription><RelationshipID>${service.relationships[0]!.id}</RelationshipID><RelatedTableFields>SCORE</RelatedTableFields><ResultFormat>geoRelateResultRelatedRecordSetAsObject</ResultFormat></RelateDescription>`,
    );
    expect(related).toContain('<RelatedRecordGroup xsi:type="tns:RelatedRecordGroup"><SourceRowID>1</SourceRowID>');
    const popups = await wire(
      'QueryHTMLPopups2',
      `<MapName>Layers</MapName><MapTableDescription xsi:type="g:StandaloneTableDescription"><ID>${t}</ID></MapTableDescription><RowIDs><Int>1</Int></RowIDs>`,
    );
    // The popup's markup is itself escaped inside the SOAP string.
    expect(popups).toContain('<String>&lt;p&gt;Ana Lima scored 0 on 2024-01-01T08:00:00Z&lt;/p&gt;</String>');
  });
});

import { describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import type { FeatureLayer, FeatureTable, FieldInfo, Geometry, MapService, StandaloneTable } from '../map/model.js';
import {
  andWhere,
  densifiedForReprojection,
  geometryShapingOf,
  outputGeometry,
  parseQueryFilter,
  relationMaskOf,
  shapeGeometry,
  snapGeometry,
} from './query-filter.js';

const field = (name: string, type: FieldInfo['type'], extra: Partial<FieldInfo> = {}): FieldInfo => ({
  name,
  type,
  alias: name,
  length: 0,
  nullable: type !== 'geoFieldTypeOID',
  editable: true,
  ...extra,
});

const FIELDS = [
  field('OBJECTID', 'geoFieldTypeOID'),
  field('NAME', 'geoFieldTypeString', { length: 20 }),
  field('ELEV', 'geoFieldTypeDouble'),
];

const table = (geometryType: FeatureTable['geometryType']): FeatureTable => ({
  fields: FIELDS,
  objectIdField: 'OBJECTID',
  geometryType,
  query: () => Promise.resolve([]),
  count: () => Promise.resolve(0),
  ids: () => Promise.resolve([]),
  statistics: () => Promise.resolve([]),
  distinct: () => Promise.resolve([]),
  attachmentInfos: () => Promise.resolve([]),
  attachmentData: () => Promise.resolve([]),
});

const layer = { kind: 'feature', id: 0, name: 'Spots', table: table('point') } as unknown as FeatureLayer;
const tbl = { kind: 'table', id: 1, name: 'Visits', table: table(null) } as unknown as StandaloneTable;
const service = { spatialReference: { wkid: 32725 }, mapName: 'Layers' } as unknown as MapService;

const fails = (f: () => unknown, path: string, message?: RegExp): void => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('INVALID_ARGUMENT');
    expect((e as EngineError).path).toBe(path);
    if (message) expect((e as EngineError).message).toMatch(message);
    return;
  }
  throw new Error(`expected a failure at ${path}`);
};

describe('QueryFilter -> FeatureQuery', () => {
  it('reads SubFields (case-insensitive, OID always, Shape decides geometry), where, FIDSet and ORDER BY', () => {
    const p = parseQueryFilter(
      {
        $type: 'QueryFilter',
        SubFields: 'elev, Shape',
        WhereClause: "NAME LIKE 'S%'",
        FIDSet: { $type: 'FIDSet', FIDArray: [3, 1] },
        PostfixClause: 'ORDER BY elev DESC, name',
        Resolution: 0,
      },
      layer,
      service,
      { definitionExpression: 'ELEV > 10' },
    );
    expect(p.query).toEqual({
      path: 'QueryFilter',
      outFields: ['OBJECTID', 'ELEV'],
      returnGeometry: true,
      where: "(ELEV > 10) AND (NAME LIKE 'S%')",
      objectIds: [3, 1],
      orderBy: [
        { field: 'ELEV', descending: true },
        { field: 'NAME', descending: false },
      ],
    });
    expect(p.fields.map((f) => f.name)).toEqual(['OBJECTID', 'Shape', 'ELEV']);
    expect(p.outSr).toEqual({ wkid: 32725 });
    expect(p.distinct).toBe(false);
  });

  it('returns every field and the geometry for `*` or no SubFields; no geometry when Shape is not asked for', () => {
    expect(parseQueryFilter({ $type: 'QueryFilter', SubFields: '*', WhereClause: '' }, layer, service).fields.map((f) => f.name)).toEqual([
      'OBJECTID',
      'Shape',
      'NAME',
      'ELEV',
    ]);
    const p = parseQueryFilter({ $type: 'QueryFilter', SubFields: 'NAME', WhereClause: '' }, layer, service);
    expect(p.returnGeometry).toBe(false);
    expect(p.query.where).toBeUndefined();
    expect(p.fields.map((f) => f.name)).toEqual(['OBJECTID', 'NAME']);
    expect(parseQueryFilter(undefined, tbl, service).fields.map((f) => f.name)).toEqual(['OBJECTID', 'NAME', 'ELEV']);
  });

  it('refuses unknown fields, prefixes other than DISTINCT and postfixes other than ORDER BY, naming the field', () => {
    fails(() => parseQueryFilter({ $type: 'QueryFilter', SubFields: 'NAME,HEIGHT' }, layer, service), 'QueryFilter/SubFields', /'HEIGHT'/);
    fails(() => parseQueryFilter({ SubFields: 'Shape' }, tbl, service, { path: 'QF' }), 'QF/SubFields');
    fails(() => parseQueryFilter({ PrefixClause: 'TOP 5' }, layer, service), 'QueryFilter/PrefixClause');
    fails(() => parseQueryFilter({ PostfixClause: 'GROUP BY NAME' }, layer, service), 'QueryFilter/PostfixClause');
    fails(() => parseQueryFilter({ PostfixClause: 'ORDER BY NAME; DROP TABLE x' }, layer, service), 'QueryFilter/PostfixClause');
    fails(() => parseQueryFilter({ PostfixClause: 'ORDER BY HEIGHT' }, layer, service), 'QueryFilter/PostfixClause');
    fails(() => parseQueryFilter({ GeometryFieldName: 'GEOM' }, layer, service), 'QueryFilter/GeometryFieldName');
    fails(
      () => parseQueryFilter({ FilterDefs: [{ $type: 'XMLFilterDef', FieldName: 'NAME', Expression: '/a' }] }, layer, service),
      'QueryFilter/FilterDefs[0]',
    );
    fails(() => parseQueryFilter({ Resolution: -1 }, layer, service), 'QueryFilter/Resolution');
  });

  it('DISTINCT drops the OID field and the geometry', () => {
    const p = parseQueryFilter({ PrefixClause: 'distinct', SubFields: 'NAME,Shape' }, layer, service);
    expect(p.distinct).toBe(true);
    expect(p.fields.map((f) => f.name)).toEqual(['NAME']);
    expect(p.query.outFields).toEqual(['NAME']);
  });

  it('reads a SpatialFilter: geometry reprojected from its own SR into the map SR, relation and DE-9IM mask', () => {
    const p = parseQueryFilter(
      {
        $type: 'SpatialFilter',
        WhereClause: '',
        SpatialRel: 'geoSpatialRelRelation',
        SpatialRelDescription: "RELATE(G1, G2, 'T*f**F***')",
        FilterGeometry: { $type: 'PointN', X: -34.85, Y: -8.0, SpatialReference: { $type: 'GeographicCoordinateSystem', WKID: 4326 } },
      },
      layer,
      service,
    );
    const s = p.query.spatial!;
    expect(s.relation).toBe('relation');
    expect(s.relationMask).toBe('T*F**F***');
    expect(s.geometry.type).toBe('Point');
    const [x, y] = s.geometry.coordinates as number[];
    // -34.85 E, 8 S in UTM 25 S (central meridian -33): west of 500 km, north of 9,000 km.
    expect(x).toBeGreaterThan(290000);
    expect(x).toBeLessThan(300000);
    expect(y).toBeGreaterThan(9110000);
    expect(y).toBeLessThan(9120000);

    const q = parseQueryFilter(
      {
        $type: 'SpatialFilter',
        SpatialRel: 'geoSpatialRelWithin',
        FilterGeometry: { $type: 'EnvelopeN', XMin: 1, YMin: 2, XMax: 3, YMax: 4 },
      },
      layer,
      service,
    );
    expect(q.query.spatial).toEqual({
      relation: 'within',
      geometry: {
        type: 'Polygon',
        coordinates: [
          [
            [1, 2],
            [3, 2],
            [3, 4],
            [1, 4],
            [1, 2],
          ],
        ],
      },
    });
    const u = parseQueryFilter(
      { $type: 'SpatialFilter', SpatialRel: 'geoSpatialRelUndefined', FilterGeometry: { $type: 'PointN', X: 1, Y: 2 } },
      layer,
      service,
    );
    expect(u.query.spatial?.relation).toBe('intersects');
    fails(
      () =>
        parseQueryFilter(
          {
            $type: 'SpatialFilter',
            SpatialRel: 'geoSpatialRelRelation',
            SpatialRelDescription: 'TTTT',
            FilterGeometry: { $type: 'PointN', X: 1, Y: 2 },
          },
          layer,
          service,
        ),
      'QueryFilter/SpatialRelDescription',
    );
    fails(
      () =>
        parseQueryFilter(
          { $type: 'SpatialFilter', SpatialRel: 'geoSpatialRelNear', FilterGeometry: { $type: 'PointN', X: 1, Y: 2 } },
          layer,
          service,
        ),
      'QueryFilter/SpatialRel',
    );
    fails(
      () => parseQueryFilter({ $type: 'SpatialFilter', FilterGeometry: { $type: 'PointN', X: 1, Y: 2 } }, tbl, service),
      'QueryFilter/FilterGeometry',
    );
    fails(
      () => parseQueryFilter({ $type: 'SpatialFilter', FilterGeometry: { $type: 'PointN', X: 'a' } }, layer, service),
      'QueryFilter/FilterGeometry',
    );
  });

  it('reads OutputSpatialReference, and outputGeometry reprojects then snaps to Resolution', () => {
    const p = parseQueryFilter(
      { OutputSpatialReference: { $type: 'GeographicCoordinateSystem', WKID: 4326 }, Resolution: 0.001 },
      layer,
      service,
    );
    expect(p.outSr.wkid).toBe(4326);
    expect(p.resolution).toBe(0.001);
    const g = outputGeometry({ type: 'Point', coordinates: [295000, 9115000] }, service.spatialReference, p.outSr, p.resolution);
    const [lon, lat] = g.coordinates as number[];
    expect(lon).toBeCloseTo(-34.86, 3); // GDAL: -34.85996, -8.00216
    expect(lat).toBeCloseTo(-8.0, 1);
    expect(Math.abs(lon! / 0.001 - Math.round(lon! / 0.001))).toBeLessThan(1e-6);
    expect(
      snapGeometry(
        {
          type: 'LineString',
          coordinates: [
            [0.1, 0.1],
            [0.2, 0.2],
            [1.1, 0.9],
          ],
        },
        1,
      ),
    ).toEqual({
      type: 'LineString',
      coordinates: [
        [0, 0],
        [1, 1],
      ],
    });
  });

  it('ANDs where clauses and reads DE-9IM masks', () => {
    expect(andWhere(undefined, ' ', 'A=1')).toBe('A=1');
    expect(andWhere('A=1', 'B=2 OR C=3')).toBe('(A=1) AND (B=2 OR C=3)');
    expect(andWhere('', undefined)).toBeUndefined();
    expect(relationMaskOf('FF*FF****', 'p')).toBe('FF*FF****');
    expect(() => relationMaskOf("RELATE(G1, G2, 'T*F')", 'p')).toThrow(EngineError);
  });

  it('generalizes (Douglas-Peucker) and densifies returned geometries per GeometryResultOptions', () => {
    const zigzag: Geometry = {
      type: 'LineString',
      coordinates: [
        [0, 0],
        [5, 0.4],
        [10, 0],
      ],
    };
    expect(geometryShapingOf({ $type: 'GeometryResultOptions', GeneralizeGeometries: false, MaximumAllowableOffset: 1 }, 'G')).toEqual({});
    const shaping = geometryShapingOf({ $type: 'GeometryResultOptions', GeneralizeGeometries: true, MaximumAllowableOffset: 1 }, 'G');
    expect(shaping).toEqual({ generalize: 1 });
    expect(shapeGeometry(zigzag, shaping)).toEqual({
      type: 'LineString',
      coordinates: [
        [0, 0],
        [10, 0],
      ],
    });
    // The middle vertex is 0.4 off the chord: beyond a 0.3 tolerance, so it stays.
    expect(shapeGeometry(zigzag, { generalize: 0.3 })).toEqual(zigzag);
    const dense = shapeGeometry(
      {
        type: 'LineString',
        coordinates: [
          [0, 0],
          [10, 0],
        ],
      },
      geometryShapingOf({ DensifyGeometries: true, MaximumSegmentLength: 2.5 }, 'G'),
    );
    // JTS splits a segment into trunc(length / tolerance) + 1 equal parts: each no longer than the tolerance.
    expect(dense.coordinates).toEqual([0, 2, 4, 6, 8, 10].map((x) => [x, 0]));
    expect(() =>
      geometryShapingOf({ GeneralizeGeometries: true, MaximumAllowableOffset: 'x' }, 'LayerResultOptions/GeometryResultOptions'),
    ).toThrow(/LayerResultOptions\/GeometryResultOptions\/MaximumAllowableOffset/);
  });

  it('densifies a filter polygon before reprojecting it, so its edges follow the curves they become', () => {
    const box: Geometry = {
      type: 'Polygon',
      coordinates: [
        [
          [-35, -8.2],
          [-34.8, -8.2],
          [-34.8, -8],
          [-35, -8],
          [-35, -8.2],
        ],
      ],
    };
    const d = densifiedForReprojection(box) as Extract<Geometry, { type: 'Polygon' }>;
    // Edges of 0.2 degrees cut so that no segment is longer than 0.2 / 20 = 0.01.
    const ring = d.coordinates[0]!;
    expect(ring.length).toBeGreaterThanOrEqual(81);
    const longest = Math.max(...ring.slice(1).map((p, i) => Math.hypot(p[0]! - ring[i]![0]!, p[1]! - ring[i]![1]!)));
    expect(longest).toBeLessThanOrEqual(0.01 + 1e-12);
    expect(densifiedForReprojection({ type: 'Point', coordinates: [1, 2] })).toEqual({ type: 'Point', coordinates: [1, 2] });
  });
});

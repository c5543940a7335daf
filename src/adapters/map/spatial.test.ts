import { describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import type { Geometry, SpatialRelation } from './model.js';
import { envelopeOf, maskAllowsDisjoint, projectGeometry, relates, spatialTest } from './spatial.js';

const square = (x0: number, y0: number, x1: number, y1: number): Geometry => ({
  type: 'Polygon',
  coordinates: [
    [
      [x0, y0],
      [x1, y0],
      [x1, y1],
      [x0, y1],
      [x0, y0],
    ],
  ],
});
const point = (x: number, y: number): Geometry => ({ type: 'Point', coordinates: [x, y] });
const line = (...pts: [number, number][]): Geometry => ({ type: 'LineString', coordinates: pts });

const BIG = square(0, 0, 10, 10);
const ALL: SpatialRelation[] = [
  'intersects',
  'envelopeIntersects',
  'indexIntersects',
  'touches',
  'overlaps',
  'crosses',
  'within',
  'contains',
];
const holding = (feature: Geometry, filter: Geometry): SpatialRelation[] => ALL.filter((r) => relates(feature, filter, r));

describe('spatial relations (filter REL feature, as the vendor documents)', () => {
  it('a point feature inside a polygon filter: the filter contains it', () => {
    expect(holding(point(5, 5), BIG)).toEqual(['intersects', 'envelopeIntersects', 'indexIntersects', 'contains']);
  });

  it('a polygon feature around a point filter: the filter is within it', () => {
    expect(holding(BIG, point(5, 5))).toEqual(['intersects', 'envelopeIntersects', 'indexIntersects', 'within']);
  });

  it('touching, overlapping and crossing', () => {
    expect(holding(square(10, 0, 20, 10), BIG)).toEqual(['intersects', 'envelopeIntersects', 'indexIntersects', 'touches']);
    expect(holding(square(5, 5, 15, 15), BIG)).toEqual(['intersects', 'envelopeIntersects', 'indexIntersects', 'overlaps']);
    expect(holding(line([-5, 5], [15, 5]), BIG)).toEqual(['intersects', 'envelopeIntersects', 'indexIntersects', 'crosses']);
    expect(holding(line([1, 1], [2, 2]), BIG)).toEqual(['intersects', 'envelopeIntersects', 'indexIntersects', 'contains']);
  });

  it('envelopes meet without the geometries meeting', () => {
    const diagonal = line([0, 20], [20, 0]);
    expect(holding(diagonal, square(0, 0, 4, 4))).toEqual(['envelopeIntersects', 'indexIntersects']);
    expect(holding(point(50, 50), BIG)).toEqual([]);
  });

  it('relation masks, disjoint ones included', () => {
    expect(relates(point(5, 5), BIG, 'relation', 'T*****FF*')).toBe(true); // filter contains feature
    expect(relates(point(5, 5), BIG, 'relation', 'FF*FF****')).toBe(false); // disjoint
    expect(relates(point(50, 50), BIG, 'relation', 'FF*FF****')).toBe(true);
    expect(maskAllowsDisjoint('FF*FF****')).toBe(true);
    expect(maskAllowsDisjoint('T*****FF*')).toBe(false);
  });

  it('refuses a bad mask with the field named', () => {
    try {
      spatialTest(BIG, 'relation', 'T*F', 'QueryFilter');
      throw new Error('accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(EngineError);
      expect((e as EngineError).path).toBe('QueryFilter/SpatialRelDescription');
    }
  });

  it('envelopeOf', () => {
    expect(envelopeOf(line([3, -1], [-2, 4]))).toEqual({ xmin: -2, ymin: -1, xmax: 3, ymax: 4 });
    expect(envelopeOf({ type: 'MultiPoint', coordinates: [] })).toBeUndefined();
  });
});

describe('projectGeometry', () => {
  it('reprojects every coordinate and leaves same-SR geometries alone', () => {
    const utm = { wkid: 32725, metersPerUnit: 1 };
    const geo = { wkid: 4326, geographic: true };
    const g: Geometry = {
      type: 'LineString',
      coordinates: [
        [290000, 9115000, 7],
        [295000, 9118000, 9],
      ],
    };
    const p = projectGeometry(g, utm, geo) as unknown as { coordinates: number[][] };
    // GDAL/PROJ: OGRCoordinateTransformation EPSG:32725 -> EPSG:4326 of (290000, 9115000).
    expect(p.coordinates[0]![0]).toBeCloseTo(-34.90530934807728, 9);
    expect(p.coordinates[0]![1]).toBeCloseTo(-8.001953394533171, 9);
    expect(p.coordinates[1]![2]).toBe(9);
    const back = projectGeometry(p as unknown as Geometry, geo, utm) as unknown as { coordinates: number[][] };
    expect(back.coordinates[1]![0]).toBeCloseTo(295000, 5);
    expect(projectGeometry(g, utm, { wkid: 32725 })).toBe(g);
    expect(() => projectGeometry(g, utm, { wkt: 'LOCAL_CS["x"]' }, 'OutputSpatialReference')).toThrow(EngineError);
  });
});

import { describe, expect, it } from 'vitest';
import type { Geometry } from '../map/model.js';
import { extentOfGeometry, geometryOfSoap, signedArea2, soapGeometry } from './geometry.js';
import type { SoapObject } from './operation.js';

const pt = (X: number, Y: number): SoapObject => ({ $type: 'PointN', X, Y });
const ring = (...xy: [number, number][]): SoapObject => ({ $type: 'Ring', PointArray: xy.map(([x, y]) => pt(x, y)) });

describe('SOAP geometry <-> GeoJSON', () => {
  it('reads an envelope as its rectangle and refuses an inverted one, naming the path', () => {
    const g = geometryOfSoap({ $type: 'EnvelopeN', XMin: 0, YMin: 1, XMax: 2, YMax: 3 }, 'SearchShape').geometry;
    expect(g).toEqual({
      type: 'Polygon',
      coordinates: [
        [
          [0, 1],
          [2, 1],
          [2, 3],
          [0, 3],
          [0, 1],
        ],
      ],
    });
    expect(() => geometryOfSoap({ $type: 'EnvelopeN', XMin: 3, YMin: 1, XMax: 2, YMax: 3 }, 'QueryFilter/FilterGeometry')).toThrow(
      /QueryFilter\/FilterGeometry: XMin must not exceed XMax/,
    );
  });

  it('groups a counter-clockwise hole with the clockwise outer ring containing it, and winds GeoJSON the RFC 7946 way', () => {
    const outer = ring([0, 0], [0, 10], [10, 10], [10, 0], [0, 0]); // clockwise (y up)
    const hole = ring([2, 2], [4, 2], [4, 4], [2, 4], [2, 2]); // counter-clockwise
    const other = ring([20, 0], [20, 5], [25, 5], [25, 0], [20, 0]);
    const g = geometryOfSoap({ $type: 'PolygonN', RingArray: [outer, hole, other] }, 'g').geometry as Extract<
      Geometry,
      { type: 'MultiPolygon' }
    >;
    expect(g.type).toBe('MultiPolygon');
    expect(g.coordinates).toHaveLength(2);
    expect(g.coordinates[0]).toHaveLength(2);
    expect(signedArea2(g.coordinates[0]![0]!)).toBeGreaterThan(0);
    expect(signedArea2(g.coordinates[0]![1]!)).toBeLessThan(0);
  });

  it('writes polygons with vendor winding and round-trips', () => {
    const poly: Geometry = {
      type: 'Polygon',
      coordinates: [
        [
          [0, 0],
          [10, 0],
          [10, 10],
          [0, 10],
          [0, 0],
        ],
        [
          [2, 2],
          [2, 4],
          [4, 4],
          [4, 2],
          [2, 2],
        ],
      ],
    };
    const soap = soapGeometry(poly, { wkid: 32725 });
    const rings = soap['RingArray'] as SoapObject[];
    const area = (r: SoapObject): number => signedArea2((r['PointArray'] as SoapObject[]).map((p) => [p['X'] as number, p['Y'] as number]));
    expect(area(rings[0]!)).toBeLessThan(0);
    expect(area(rings[1]!)).toBeGreaterThan(0);
    expect(soap['SpatialReference']).toEqual({ $type: 'ProjectedCoordinateSystem', WKID: 32725, LatestWKID: 32725 });
    expect(geometryOfSoap(soap, 'g').geometry).toEqual(poly);
  });

  it('round-trips points, multipoints and polylines; refuses curves and unknown types', () => {
    for (const g of [
      { type: 'Point', coordinates: [1, 2] },
      {
        type: 'MultiPoint',
        coordinates: [
          [1, 2],
          [3, 4],
        ],
      },
      {
        type: 'LineString',
        coordinates: [
          [0, 0],
          [1, 1],
          [2, 0],
        ],
      },
      {
        type: 'MultiLineString',
        coordinates: [
          [
            [0, 0],
            [1, 1],
          ],
          [
            [5, 5],
            [6, 6],
          ],
        ],
      },
    ] as Geometry[]) {
      expect(geometryOfSoap(soapGeometry(g), 'g').geometry).toEqual(g);
    }
    const arc = { $type: 'PolylineN', PathArray: [{ $type: 'Path', SegmentArray: [{ $type: 'CircularArc' }] }] };
    expect(() => geometryOfSoap(arc, 'SearchShape')).toThrow(/SearchShape\/PathArray\[0\]\/SegmentArray\[0\]: only Line segments/);
    const line = {
      $type: 'PolylineN',
      PathArray: [
        {
          $type: 'Path',
          SegmentArray: [
            { $type: 'Line', FromPoint: pt(0, 0), ToPoint: pt(1, 1) },
            { $type: 'Line', FromPoint: pt(1, 1), ToPoint: pt(2, 0) },
          ],
        },
      ],
    };
    expect(geometryOfSoap(line, 'g').geometry).toEqual({
      type: 'LineString',
      coordinates: [
        [0, 0],
        [1, 1],
        [2, 0],
      ],
    });
    expect(() => geometryOfSoap({ $type: 'MultiPatch' }, 'SearchShape')).toThrow(/'MultiPatch' is not supported/);
    expect(
      extentOfGeometry({
        type: 'LineString',
        coordinates: [
          [0, 5],
          [3, -1],
        ],
      }),
    ).toEqual({ xmin: 0, ymin: -1, xmax: 3, ymax: 5 });
  });
});

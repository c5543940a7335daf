// Expected masks derived by hand from the pixel-centre rule (a pixel is inside iff its centre is
// inside; even-odd within a polygon, union of multipolygon parts; GDAL's ties), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction, type Result } from '../../../test/helpers.js';
import { clip } from './clip.js';

// 6 x 6 raster, cell 1, extent x 0..6, y -6..0 (pixel (c, r) centre (c + 0.5, -r - 0.5)).
const src = () => rasterOf({ width: 6, height: 6, pixelType: 'S16', extra: { radiometry: 'source' } }, (x, y) => 10 * y + x);
const grid = (r: Result): string =>
  Array.from({ length: r.info.height }, (_, y) =>
    Array.from({ length: r.info.width }, (_, x) => (r.valid(x, y) ? '#' : '.')).join(''),
  ).join('/');

const square = (x0: number, y0: number, x1: number, y1: number) => [
  [x0, y0],
  [x1, y0],
  [x1, y1],
  [x0, y1],
  [x0, y0],
];

describe('Clip', () => {
  it('keeps a polygon with a hole; output extent shrinks to the envelope', async () => {
    const r = await runFunction(clip, { ClippingGeometry: { rings: [square(0.6, -0.6, 5.4, -5.4), square(2.1, -2.1, 3.9, -3.9)] } }, [
      src(),
    ]);
    // Centres 0.5 and 5.5 are outside 0.6..5.4; window = pixels 0..5 (envelope snapped outward).
    expect(r.info.extent).toEqual({ xmin: 0, ymin: -6, xmax: 6, ymax: 0 });
    expect(grid(r)).toBe('....../.####./.#..#./.#..#./.####./......');
    expect(r.value(1, 1)).toBe(11);
    expect(r.info.radiometry).toBe('source');
  });

  it('crops to the geometry envelope and ClippingType 2 removes the inside', async () => {
    const g = { xmin: 1.2, ymin: -3.7, xmax: 3.1, ymax: -1.5 };
    const inside = await runFunction(clip, { ClippingGeometry: g }, [src()]);
    expect([inside.info.width, inside.info.height, inside.info.extent.xmin, inside.info.extent.ymax]).toEqual([3, 3, 1, -1]);
    expect(inside.value(0, 0)).toBe(11);
    // Row 1's centre (y -1.5) lies on the top edge: in (GDAL counts an edge from its top, y >= ymin in pixel rows).
    expect(grid(inside)).toBe('##./##./##.');
    const outside = await runFunction(clip, { ClippingGeometry: g, ClippingType: 'clippingInside' }, [src()]);
    expect(outside.info.width).toBe(6);
    expect(outside.valid(1, 2)).toBe(false);
    expect(outside.valid(0, 0)).toBe(true);
  });

  it('ties follow GDAL: a centre on a left edge is out, on a right edge in', async () => {
    const r = await runFunction(clip, { ClippingGeometry: { rings: [square(1.5, -0.2, 3.5, -0.8)] } }, [src()]);
    expect(grid(r)).toBe('.##');
  });

  it('GeoJSON MultiPolygon parts are united; UseInputGeometry false clips to the envelope', async () => {
    const mp = { type: 'MultiPolygon', coordinates: [[square(0, 0, 3, -3)], [square(2, -2, 5, -5)]] };
    const r = await runFunction(clip, { ClippingGeometry: mp, ClipType: 2 }, [src()]);
    expect(r.valid(2, 2)).toBe(false); // in both parts: still inside
    const env = await runFunction(
      clip,
      {
        ClippingGeometry: {
          rings: [
            [
              [0, 0],
              [4, 0],
              [0, -4],
              [0, 0],
            ],
          ],
        },
        UseInputGeometry: false,
      },
      [src()],
    );
    expect(grid(env)).toBe('####/####/####/####');
  });

  it('projects a geometry given in another spatial reference', () => {
    const utm = rasterOf({ width: 10, height: 10, cellSize: 1000, origin: { x: 700000, y: 4000000 } }, () => 1);
    const node = applyFunction(
      clip,
      { ClippingGeometry: { xmin: -84.7, ymin: 36.08, xmax: -84.68, ymax: 36.1, spatialReference: { wkid: 4326 } } },
      [utm],
    );
    expect(node.info.width).toBeGreaterThan(1);
    expect(node.info.width).toBeLessThan(5);
  });

  it('rejects missing, malformed and non-overlapping geometries', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'ClippingGeometry'],
      [
        {
          ClippingGeometry: {
            rings: [
              [
                [0, 0],
                [1, 1],
              ],
            ],
          },
        },
        'ClippingGeometry.rings[0]',
      ],
      [{ ClippingGeometry: { xmin: 10, ymin: 10, xmax: 20, ymax: 20 } }, 'ClippingGeometry'],
      [{ ClippingGeometry: { xmin: 3, ymin: -2, xmax: 1, ymax: 0 } }, 'ClippingGeometry'],
      [{ ClippingGeometry: { type: 'Point', coordinates: [1, 1] } }, 'ClippingGeometry.type'],
    ];
    for (const [args, field] of cases) {
      const e = catchError(() => applyFunction(clip, args, [src()]));
      expect(e?.code, JSON.stringify(args)).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
  });
});

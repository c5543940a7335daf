// Expected values derived by hand: polynomials chosen so the fit is exact and the resampled
// pixels land on known source centres; argument errors by code and path.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { evalPolynomial, fitPolynomial, geometric } from './geometric.js';

const poly = (sourcePoints: unknown, targetPoints: unknown, polynomialOrder: unknown = 1, extra: Record<string, unknown> = {}) => ({
  GeodataTransforms: [
    { geodataTransform: 'Polynomial', geodataTransformArguments: { sourcePoints, targetPoints, polynomialOrder, ...extra } },
  ],
});
const pts = (a: number[][]) => a.map(([x, y]) => ({ x, y }));
// 4 x 3 cells; v(x, y) = x + 10 y.
const src = () => rasterOf({ width: 4, height: 3, cellSize: 30, origin: { x: 1000, y: 2000 } }, (x, y) => x + 10 * y);

describe('Geometric', () => {
  it('fits polynomials exactly when the points follow one (orders 1-3)', () => {
    const s: [number, number][] = Array.from({ length: 16 }, (_, i) => [(i % 4) * 7 + 1, Math.floor(i / 4) * 5 - 3]);
    const f = [
      (x: number, y: number): [number, number] => [2 + 3 * x - y, -1 + x + 4 * y],
      (x: number, y: number): [number, number] => [2 + 3 * x - y + 0.1 * x * x - 0.2 * x * y, 1 + 0.05 * y * y],
      (x: number, y: number): [number, number] => [x + 0.001 * x * x * x, y - 0.002 * x * y * y + 0.01 * x * x],
    ];
    const out = new Float64Array(2);
    f.forEach((g, k) => {
      const p = fitPolynomial(
        s,
        s.map(([x, y]) => g(x, y)),
        k + 1,
      )!;
      evalPolynomial(p, 4.5, 2.25, out, 0);
      expect(out[0]).toBeCloseTo(g(4.5, 2.25)[0], 8);
      expect(out[1]).toBeCloseTo(g(4.5, 2.25)[1], 8);
    });
  });

  it('least squares: the residuals of an over-determined order-1 fit sum to zero', () => {
    const s: [number, number][] = [
      [0, 0],
      [10, 0],
      [0, 10],
      [10, 10],
    ];
    const t: [number, number][] = [
      [0, 0],
      [10, 1],
      [0, 10],
      [10, 10],
    ];
    const p = fitPolynomial(s, t, 1)!;
    const out = new Float64Array(2);
    let ry = 0;
    for (const [i, q] of s.entries()) {
      evalPolynomial(p, q[0], q[1], out, 0);
      ry += out[1]! - t[i]![1];
    }
    expect(ry).toBeCloseTo(0, 10);
    evalPolynomial(p, 10, 0, out, 0);
    // Plane through y values 0, 1, 10, 10: 0.25 + 0.05 x + 0.95 y (symmetry), 0.75 at (10, 0).
    expect(out[1]).toBeCloseTo(0.75, 10);
  });

  it('re-georeferences with pixel-space source points (AppendGeodataXform false)', async () => {
    // Pixel (px, py) -> map (500 + 10 px, 800 - 10 py): the same grid shape, cell 10, new origin.
    const s = pts([
      [0, 0],
      [4, 0],
      [0, 3],
      [4, 3],
    ]);
    const t = pts([
      [500, 800],
      [540, 800],
      [500, 770],
      [540, 770],
    ]);
    const r = await runFunction(geometric, poly(s, t), [src()]);
    expect([r.info.width, r.info.height, r.info.cellSize.x, r.info.extent.xmin, r.info.extent.ymax]).toEqual([4, 3, 10, 500, 800]);
    for (let y = 0; y < 3; y++) for (let x = 0; x < 4; x++) expect(r.value(x, y)).toBeCloseTo(x + 10 * y, 5);
  });

  it('a 90-degree turn moves the values (nearest)', async () => {
    // Pixel (px, py) -> map (X, Y) = (py, px): a transpose with Y up, so output row r holds map
    // Y = 4 - (r + 0.5)... the output is 3 x 4; output (i, j) has centre (i + 0.5, 3.5 - j) ->
    // source (px, py) = (3.5 - j, i + 0.5): value (3 - j) + 10 i.
    const s = pts([
      [0, 0],
      [4, 0],
      [0, 3],
      [4, 3],
    ]);
    const t = s.map(({ x, y }) => ({ x: y, y: x }));
    const r = await runFunction(geometric, { ...poly(s, t), ResamplingType: 0 }, [src()]);
    expect([r.info.width, r.info.height]).toEqual([3, 4]);
    for (let j = 0; j < 4; j++) for (let i = 0; i < 3; i++) expect(r.value(i, j)).toBe(3 - j + 10 * i);
  });

  it('AppendGeodataXform true: source points in map units, after the raster’s georeferencing', async () => {
    // A shift by (+100, -50) of the raster's own map coordinates.
    const s = pts([
      [1000, 2000],
      [1120, 2000],
      [1000, 1910],
      [1120, 1910],
    ]);
    const t = s.map(({ x, y }) => ({ x: x! + 100, y: y! - 50 }));
    const r = await runFunction(geometric, { ...poly(s, t), AppendGeodataXform: true }, [src()]);
    expect([r.info.extent.xmin, r.info.extent.ymax, r.info.width, r.info.cellSize.x]).toEqual([1100, 1950, 4, 30]);
    expect(r.value(2, 1)).toBeCloseTo(12, 6);
  });

  it('output spatial reference from the transform, else the input’s; Z arguments warn', () => {
    const s = pts([
      [0, 0],
      [4, 0],
      [0, 3],
    ]);
    const t = pts([
      [0, 0],
      [0.004, 0],
      [0, -0.003],
    ]);
    const n = applyFunction(geometric, { ...poly(s, t, 1, { spatialReference: { wkid: 4326 } }), ZFactor: 2, CorrectGeoid: true }, [src()]);
    expect(n.info.spatialReference?.wkid).toBe(4326);
    expect(n.plan.warnings?.length).toBe(2);
    expect(
      applyFunction(
        geometric,
        poly(
          s,
          pts([
            [0, 0],
            [40, 0],
            [0, -30],
          ]),
        ),
        [src()],
      ).info.spatialReference?.wkid,
    ).toBe(32616);
  });

  it('tiled equals whole (order 2, bilinear)', async () => {
    const big = rasterOf(
      { width: 40, height: 30 },
      (x, y) => Math.sin(x / 4) * 30 + y * 2,
      Uint8Array.from({ length: 1200 }, (_, i) => (i % 23 ? 1 : 0)),
    );
    const s = [
      [0, 0],
      [40, 0],
      [0, 30],
      [40, 30],
      [20, 15],
      [10, 25],
      [30, 5],
    ];
    const t = s.map(([x, y]) => ({ x: 3 * x! + 0.5 * y! + 0.01 * x! * x!, y: -3 * y! + 0.4 * x! }));
    const node = applyFunction(geometric, poly(pts(s), t, 2), [big]);
    expect(await tiledVersusWhole(node, [7, 5])).toBeUndefined();
  });

  describe('argument errors', () => {
    const three = pts([
      [0, 0],
      [4, 0],
      [0, 3],
    ]);
    const at = (raw: Record<string, unknown>) => {
      const e = catchError(() => applyFunction(geometric, raw, [src()]));
      return e && { code: e.code, path: e.path };
    };
    const A = 'rasterFunctionArguments.GeodataTransforms[0].geodataTransformArguments';
    it('GeodataTransforms is required and must hold transforms', () => {
      expect(at({})?.path).toBe('rasterFunctionArguments.GeodataTransforms');
      expect(at({ GeodataTransforms: [] })).toEqual({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.GeodataTransforms' });
    });
    it('only Polynomial transforms', () => {
      expect(at({ GeodataTransforms: [{ geodataTransform: 'RPC', geodataTransformArguments: {} }] })).toEqual({
        code: 'UNSUPPORTED_INPUT',
        path: 'rasterFunctionArguments.GeodataTransforms[0].geodataTransform',
      });
    });
    it('too few, unpaired, collinear points; a bad order', () => {
      expect(at(poly(three, three, 2))).toEqual({ code: 'INVALID_ARGUMENT', path: `${A}.sourcePoints` });
      expect(at(poly(three, three.slice(0, 2)))).toEqual({ code: 'INVALID_ARGUMENT', path: `${A}.targetPoints` });
      expect(
        at(
          poly(
            pts([
              [0, 0],
              [1, 1],
              [2, 2],
            ]),
            three,
          ),
        ),
      ).toEqual({ code: 'INVALID_ARGUMENT', path: `${A}.sourcePoints` });
      expect(at(poly(three, three, 4))).toEqual({ code: 'INVALID_ARGUMENT', path: `${A}.polynomialOrder` });
      expect(at(poly([{ x: 1 }, ...three.slice(1)], three))).toEqual({ code: 'INVALID_ARGUMENT', path: `${A}.sourcePoints[0]` });
    });
  });
});

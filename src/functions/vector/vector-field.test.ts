// Expected values derived by hand from the VectorField formulas (spec "VectorField"): compass
// points and a 3-4-5 vector, not from our output.
import { describe, expect, it } from 'vitest';
import { catchError, mdRasterOf, rasterOf, runFunction, tiledVersusWhole, applyFunction } from '../../../test/helpers.js';
import { vectorField } from './vector-field.js';

// Pixels: east (3, 0), north (0, 2), west (-1, 0), south (0, -5), 3-4-5 (3, 4), zero (0, 0).
const U = [3, 0, -1, 0, 3, 0];
const V = [0, 2, 0, -5, 4, 0];
const grid = { width: 3, height: 2 };
const u = () => rasterOf(grid, (x, y) => U[y * 3 + x]!);
const v = () => rasterOf(grid, (x, y) => V[y * 3 + x]!);

async function bands(args: Record<string, unknown>, a = u(), b = v()): Promise<[number[], number[], string[] | undefined]> {
  const res = await runFunction(vectorField, { Raster2: '$2', ...args }, [a, b]);
  const one: number[] = [];
  const two: number[] = [];
  for (let i = 0; i < 6; i++) {
    one.push(res.block.bands[0]![i]!);
    two.push(res.block.bands[1]![i]!);
  }
  return [one, two, res.info.bandNames as string[] | undefined];
}

const close = (a: number[], b: number[]): void => a.forEach((x, i) => expect(x).toBeCloseTo(b[i]!, 4));

describe('VectorField', () => {
  it('UV -> magnitude and geographic direction (clockwise from north, where the vector points)', async () => {
    const [mag, dir, names] = await bands({});
    close(mag, [3, 2, 1, 5, 5, 0]);
    // east 90, north 0, west 270, south 180, atan2(4,3) = 53.1301 deg -> 90 - 53.1301 = 36.8699, zero -> 90.
    close(dir, [90, 0, 270, 180, 36.8699, 90]);
    expect(names).toEqual(['Magnitude', 'Direction']);
  });

  it('UV -> arithmetic direction (counter-clockwise from east)', async () => {
    const [, dir] = await bands({ AngleReferenceSystem: 1 });
    close(dir, [0, 90, 180, 270, 53.1301, 0]);
  });

  it('magnitude/direction -> UV, both reference systems', async () => {
    const mags = () => rasterOf(grid, (x, y) => [3, 2, 1, 5, 5, 0][y * 3 + x]!);
    const geo = () => rasterOf(grid, (x, y) => [90, 0, 270, 180, 36.8699, 90][y * 3 + x]!);
    const [uu, vv, names] = await bands({ InputDataType: 'Vector-MagDir', OutputDataType: 'Vector-UV' }, mags(), geo());
    close(uu, U);
    close(vv, V);
    expect(names).toEqual(['U', 'V']);
    const arith = () => rasterOf(grid, (x, y) => [0, 90, 180, 270, 53.1301, 0][y * 3 + x]!);
    const [u2, v2] = await bands({ InputDataType: 'vector-magdir', OutputDataType: 'Vector-UV', AngleReferenceSystem: 1 }, mags(), arith());
    close(u2, U);
    close(v2, V);
  });

  it('same input and output type passes the bands through', async () => {
    const [a, b, names] = await bands({ OutputDataType: 'Vector-UV' });
    expect(a).toEqual(U);
    expect(b).toEqual(V);
    expect(names).toEqual(['U', 'V']);
  });

  it('NoData in either input is NoData in both bands', async () => {
    const mask = new Uint8Array([1, 0, 1, 1, 1, 1]);
    const res = await runFunction(vectorField, { Raster2: '$2' }, [u(), rasterOf(grid, (x, y) => V[y * 3 + x]!, mask)]);
    expect(Array.from(res.block.mask)).toEqual([1, 0, 1, 1, 1, 1]);
  });

  it('rejects bad inputs with the argument path', () => {
    const three = rasterOf({ ...grid, bandCount: 2 }, () => 1);
    let e = catchError(() => applyFunction(vectorField, { Raster2: '$2' }, [three, v()]));
    expect([e?.code, e?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster1']);
    e = catchError(() => applyFunction(vectorField, { Raster2: '$2', OutputDataType: 'Vector-XY' }, [u(), v()]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.OutputDataType']);
  });

  it("resamples Raster2 onto Raster1's grid", async () => {
    // Raster2 at half the resolution (cell 2) covering the same ground: nearest for integer data.
    const coarse = rasterOf({ width: 2, height: 1, cellSize: 2, pixelType: 'S16' }, (x) => (x === 0 ? 4 : 0));
    const res = await runFunction(vectorField, { Raster2: '$2', OutputDataType: 'Vector-UV' }, [
      rasterOf({ width: 4, height: 2 }, () => 3),
      coarse,
    ]);
    expect(Array.from(res.block.bands[1]!)).toEqual([4, 4, 0, 0, 4, 4, 0, 0]);
  });

  it('tiled equals whole', async () => {
    const node = applyFunction(vectorField, { Raster2: '$2' }, [
      rasterOf({ width: 23, height: 17 }, (x) => x - 11),
      rasterOf({ width: 23, height: 17 }, (x, y) => 8 - y),
    ]);
    expect(await tiledVersusWhole(node, [5, 7])).toBeUndefined();
  });
});

// Multidimensional inputs: expected values derived by hand from the VectorField formulas applied
// slice by slice (slices paired by MatchVariable / UnionDimension as Arithmetic pairs them).
describe('VectorField of multidimensional rasters', () => {
  const T = (y: number) => Date.UTC(y, 0, 1);
  const g = { width: 3, height: 1 };
  // u 2001 [3, 0, -], 2002 [0, -1, -]; v 2001 [4, 2, 1], 2002 [5, -, 1] (- = missing, NaN).
  const UV = [
    [3, 0, NaN],
    [0, -1, NaN],
  ];
  const VV = [
    [4, 2, 1],
    [5, NaN, 1],
  ];
  const uu = (name = 'u', years = [2001, 2002]) => mdRasterOf(g, [{ name, values: years }], (x, _y, k) => UV[k]![x]!);
  const vv = (name = 'v', years = [2001, 2002]) => mdRasterOf(g, [{ name, values: years }], (x, _y, k) => VV[k]![x]!);
  const run = async (args: Record<string, unknown>, inputs: Parameters<typeof runFunction>[2]) => {
    const r = await runFunction(vectorField, { Raster2: '$2', ...args }, inputs);
    return { r, b: r.block.bands.map((p) => Array.from(p)), mask: Array.from(r.block.mask) };
  };

  it('u and v variables pair by position with MatchVariable false: magnitude/direction per slice', async () => {
    expect(catchError(() => applyFunction(vectorField, { Raster2: '$2' }, [uu(), vv()]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.MatchVariable',
    });
    const { r, b, mask } = await run({ MatchVariable: false }, [uu(), vv()]);
    // 2001: (3, 4) -> 5, 90 - 53.1301 = 36.8699; (0, 2) -> 2, north 0; u missing -> NoData slice.
    // 2002: (0, 5) -> 5, 0; v missing -> NoData; u missing -> NoData. Pixel 2 has no slice: NoData.
    close(b[0]!.slice(0, 2), [5, 2]);
    close(b[1]!.slice(0, 2), [36.8699, 0]);
    close(b[2]!.slice(0, 1), [5]);
    close(b[3]!.slice(0, 1), [0]);
    expect([b[2]![1], b[3]![1]]).toEqual([NaN, NaN]);
    expect(mask).toEqual([1, 1, 0]);
    expect(r.info.bandNames).toEqual([
      'u_StdTime=2001-01-01T00:00:00_Magnitude',
      'u_StdTime=2001-01-01T00:00:00_Direction',
      'u_StdTime=2002-01-01T00:00:00_Magnitude',
      'u_StdTime=2002-01-01T00:00:00_Direction',
    ]);
    const v = r.info.multidimensional!.variables;
    expect(v.map((w) => [w.name, w.bandsPerSlice, w.slices.map((s) => [s.values[0], s.band])])).toEqual([
      [
        'u',
        2,
        [
          [T(2001), 0],
          [T(2002), 2],
        ],
      ],
    ]);
  });

  it('same variable names pair with the defaults; only the common slices are kept', async () => {
    const { r, b } = await run({ OutputDataType: 'Vector-UV' }, [uu('wind', [2001, 2002]), vv('wind', [2002, 2003])]);
    // Common 2002: u's slice 1 with v's slice 0 (pass-through): u [0, -1, -], v [4, 2, 1] -> pixel 2 NoData.
    expect(r.info.bandCount).toBe(2);
    expect([b[0]!.slice(0, 2), b[1]!.slice(0, 2)]).toEqual([
      [0, -1],
      [4, 2],
    ]);
    expect(r.info.bandNames).toEqual(['wind_StdTime=2002-01-01T00:00:00_U', 'wind_StdTime=2002-01-01T00:00:00_V']);
    expect(r.node.plan.warnings?.length).toBe(1);
  });

  it('a plain raster is used for every slice; two variables pair by position', async () => {
    // Magnitudes u (2 slices) with a plain geographic direction 90 (east): U = magnitude, V = 0.
    const east = rasterOf(g, () => 90);
    const { b } = await run({ InputDataType: 'Vector-MagDir', OutputDataType: 'Vector-UV' }, [uu(), east]);
    close([b[0]![0]!, b[1]![0]!, b[2]![0]!, b[3]![0]!], [3, 0, 0, 0]);
    // u10/u100 against v10/v100 (MatchVariable false): variable k of Raster1 with variable k of Raster2.
    const two = (names: [string, string], f: (x: number, b: number) => number) =>
      mdRasterOf(
        g,
        [
          { name: names[0], values: [2001] },
          { name: names[1], values: [2001] },
        ],
        (x, _y, k) => f(x, k),
      );
    const res = await run({ MatchVariable: false, OutputDataType: 'Vector-UV' }, [
      two(['u10', 'u100'], (x, k) => k + 1),
      two(['v10', 'v100'], (x, k) => 10 * (k + 1)),
    ]);
    expect(res.r.info.multidimensional!.variables.map((w) => w.name)).toEqual(['u10', 'u100']);
    expect(res.b.map((p) => p[0])).toEqual([1, 10, 2, 20]);
  });

  it('UnionDimension false: every (time, depth); true rejects different dimensions; slices must have one band', async () => {
    const depth = mdRasterOf(g, [{ name: 'u', values: [-5, -10], dimension: 'StdZ' }], (_x, _y, k) => 10 * (k + 1));
    expect(catchError(() => applyFunction(vectorField, { Raster2: '$2', OutputDataType: 'Vector-UV' }, [uu(), depth]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.UnionDimension',
    });
    const { r, b } = await run({ UnionDimension: false, OutputDataType: 'Vector-UV' }, [uu(), depth]);
    expect(r.info.multidimensional!.variables[0]!.slices.map((s) => s.values)).toEqual([
      [T(2001), -5],
      [T(2001), -10],
      [T(2002), -5],
      [T(2002), -10],
    ]);
    // Pixel 0: u 3, 3, 0, 0 with v 10, 20, 10, 20.
    expect(b.map((p) => p[0])).toEqual([3, 10, 3, 20, 0, 10, 0, 20]);
    const twoBand = mdRasterOf(g, [{ name: 'u', values: [2001], bandsPerSlice: 2 }], () => 1);
    expect(catchError(() => applyFunction(vectorField, { Raster2: '$2' }, [twoBand, vv()]))).toMatchObject({
      code: 'UNSUPPORTED_INPUT',
      path: 'rasterFunctionArguments.Raster1',
    });
  });

  it('tiled equals whole (per-slice NoData)', async () => {
    const W = 60;
    const H = 45;
    const a = mdRasterOf({ width: W, height: H }, [{ name: 'w', values: [2001, 2002, 2003] }], (x, y, k) =>
      (x + y + k) % 9 === 0 ? NaN : x - 30 + k,
    );
    const c = mdRasterOf({ width: W, height: H }, [{ name: 'w', values: [2001, 2002, 2003] }], (x, y, k) =>
      (2 * x + y + k) % 7 === 0 ? NaN : 20 - y + k,
    );
    expect(await tiledVersusWhole(applyFunction(vectorField, { Raster2: '$2' }, [a, c]), [7, 5])).toBeUndefined();
  });
});

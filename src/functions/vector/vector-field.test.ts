// Expected values derived by hand from the VectorField formulas (spec "VectorField"): compass
// points and a 3-4-5 vector, not from our output.
import { describe, expect, it } from 'vitest';
import { catchError, rasterOf, runFunction, tiledVersusWhole, applyFunction } from '../../../test/helpers.js';
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

  it('resamples Raster2 onto Raster1\'s grid', async () => {
    // Raster2 at half the resolution (cell 2) covering the same ground: nearest for integer data.
    const coarse = rasterOf({ width: 2, height: 1, cellSize: 2, pixelType: 'S16' }, (x) => (x === 0 ? 4 : 0));
    const res = await runFunction(vectorField, { Raster2: '$2', OutputDataType: 'Vector-UV' }, [rasterOf({ width: 4, height: 2 }, () => 3), coarse]);
    expect(Array.from(res.block.bands[1]!)).toEqual([4, 4, 0, 0, 4, 4, 0, 0]);
  });

  it('tiled equals whole', async () => {
    const node = applyFunction(vectorField, { Raster2: '$2' }, [
      rasterOf({ width: 23, height: 17 }, (x, y) => x - 11),
      rasterOf({ width: 23, height: 17 }, (x, y) => 8 - y),
    ]);
    expect(await tiledVersusWhole(node, [5, 7])).toBeUndefined();
  });
});

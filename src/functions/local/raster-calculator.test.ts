/**
 * RasterCalculator: expressions over named rasters with values derived by hand from the spec's
 * operators and Local semantics; names, constants, grids; bad arguments (code, path and position).
 * The grammar and the hostile-input table are tested in src/functions/expr/expr.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, constant, rasterOf, runFunction } from '../../../test/helpers.js';
import { rasterCalculator } from './raster-calculator.js';
import { timeSeriesMultidim } from '../../core/multidim.js';
import { memorySource } from '../../graph/memory-source.js';
import { gridInfo } from '../../../test/helpers.js';

const N = Number.NaN;
const row = (values: readonly number[], mask?: readonly number[], origin = 0) =>
  rasterOf({ width: values.length, height: 1, origin: { x: origin, y: 0 } }, (x) => values[x]!, mask ? Uint8Array.from(mask) : undefined);
const nir = row([50, 80, 0, 30], [1, 1, 1, 0]);
const red = row([30, 20, 0, 10]);

async function calc(args: Record<string, unknown>, inputs: Parameters<typeof runFunction>[2]): Promise<number[]> {
  const r = await runFunction(rasterCalculator, args, inputs);
  return Array.from({ length: r.info.width }, (_, x) => (r.valid(x, 0) ? r.value(x, 0) : N));
}

describe('RasterCalculator', () => {
  it('evaluates an NDVI expression (0/0 and NoData inputs are NoData)', async () => {
    const v = await calc({ InputNames: ['nir', 'red'], Expression: '(nir - red) / (nir + red)' }, [nir, red]);
    expect(v).toEqual([0.25, Math.fround(0.6), N, N]);
  });

  it('comparisons, Boolean operators, Con and IsNull', async () => {
    const names = { InputNames: ['NIR', 'Red'] };
    expect(await calc({ ...names, Expression: 'Con(nir > 40 & red < 25, 1, 0)' }, [nir, red])).toEqual([0, 1, 0, N]);
    expect(await calc({ ...names, Expression: 'Con(IsNull(nir), -1, nir ** 0.5)' }, [nir, red])).toEqual([
      Math.fround(Math.sqrt(50)),
      Math.fround(Math.sqrt(80)),
      0,
      -1,
    ]);
    expect(await calc({ ...names, Expression: '~(red == 0) ^ (nir >= 50)' }, [nir, red])).toEqual([0, 0, 0, N]); // ~(red == 0) is 1, 1, 0; nir >= 50 is 1, 1, 0
    expect(await calc({ ...names, Expression: 'MaxIgnoreNoData(nir, red * 2)' }, [nir, red])).toEqual([60, 80, 0, 20]);
  });

  it('accepts names as one space-separated string, and constants as operands', async () => {
    expect(await calc({ InputNames: 'a b', Expression: 'a * b + 1' }, [red, constant([2])])).toEqual([61, 41, 1, 21]);
  });

  it('works band-wise on multiband inputs, broadcasting single-band ones', async () => {
    const rgb = rasterOf({ width: 2, height: 1, bandCount: 3 }, (x, _y, b) => 10 * b + x);
    const r = await runFunction(rasterCalculator, { InputNames: ['m', 's'], Expression: 'm + s' }, [rgb, row([100, 200])]);
    expect(r.info.bandCount).toBe(3);
    expect([0, 1, 2].map((b) => r.value(1, 0, b))).toEqual([201, 211, 221]);
  });

  it('aligns rasters on other grids (UnionOf extent)', () => {
    const shifted = row([1, 2, 3, 4], undefined, 2);
    const node = applyFunction(rasterCalculator, { InputNames: ['a', 'b'], Expression: 'a + b', ExtentType: 2 }, [red, shifted]);
    expect(node.info.width).toBe(6);
  });

  it('rejects bad arguments with code, path and position', () => {
    const P = 'rasterFunctionArguments.';
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ InputNames: ['a', 'b'] }, 'Expression', /required/],
      [{ InputNames: ['a'], Expression: 'a' }, 'InputNames', /1 name\(s\) but Rasters has 2/],
      [{ InputNames: ['a', '2b'], Expression: 'a' }, 'InputNames[1]', /not a valid name/],
      [{ InputNames: ['a', 'A'], Expression: 'a' }, 'InputNames[1]', /twice/],
      [{ InputNames: ['a', 'b'], Expression: 'a + c' }, 'Expression', /unknown name c.*at position 4/],
      [{ InputNames: ['a', 'b'], Expression: 'a + b.constructor' }, 'Expression', /at position 5/],
      [{ InputNames: ['a', 'b'], Expression: 'process.exit()' }, 'Expression', /at position 7/],
      [{ InputNames: ['a', 'b'], Expression: 'Sqrt(a, b)' }, 'Expression', /takes 1 argument/],
      [{ InputNames: ['a', 'b'], Expression: 'a ++' }, 'Expression', /at position 4/],
      [{ InputNames: ['a', 'b'], Expression: '9**9**9 + a' }, 'Expression', /no finite value/],
    ];
    for (const [args, path, msg] of cases) {
      const e = catchError(() => applyFunction(rasterCalculator, args, [nir, red]));
      expect([e?.code, e?.path], JSON.stringify(args)).toEqual(['INVALID_ARGUMENT', P + path]);
      expect(e?.message).toMatch(msg);
    }
  });

  it('pairs multidimensional slices by time; UnionDimension false crosses different dimensions', async () => {
    const series = (id: string, name: string, dim: string, values: number[]) =>
      memorySource(
        id,
        {
          ...gridInfo({ width: 1, height: 1, bandCount: values.length }),
          multidimensional: timeSeriesMultidim(
            name,
            values.map((_, k) => String(2001 + k)),
            1,
            { name: dim, time: dim === 'StdTime' },
          ),
        },
        values.map((v) => Float32Array.of(v)),
      );
    const t = series('t', 'temp', 'StdTime', [10, 20]);
    const u = series('u', 'temp', 'StdTime', [1, 2]);
    const r = await runFunction(rasterCalculator, { InputNames: ['a', 'b'], Expression: 'a - b' }, [t, u]);
    expect([r.block.bands[0]![0], r.block.bands[1]![0], r.info.multidimensional?.variables[0]?.name]).toEqual([9, 18, 'temp']);
    const depth = series('d', 'temp', 'StdZ', [100, 200]);
    expect(catchError(() => applyFunction(rasterCalculator, { InputNames: ['a', 'b'], Expression: 'a + b' }, [t, depth]))).toMatchObject({
      path: 'rasterFunctionArguments.UnionDimension',
    });
    const crossed = await runFunction(rasterCalculator, { InputNames: ['a', 'b'], Expression: 'a + b', UnionDimension: false }, [t, depth]);
    expect(Array.from({ length: 4 }, (_, k) => crossed.block.bands[k]![0])).toEqual([110, 210, 120, 220]);
  });
});

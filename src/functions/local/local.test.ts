/**
 * Local: one case per family of ops with values derived by hand from the spec's Local semantics,
 * broadcasting and pooling of bands, the IgnoreNoData statistics, integer outputPixelType (out of
 * range -> NoData, spec §1.2), the empty-Rasters default, and bad arguments (code and path).
 */
import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../graph/args.js';
import { render } from '../../graph/render.js';
import { applyFunction, catchError, constant, rasterOf, runFunction } from '../../../test/helpers.js';
import { localOp, LOCAL_CODES } from '../expr/index.js';
import { local } from './local.js';

const N = Number.NaN;
const row = (values: readonly number[], mask?: readonly number[], pixelType: 'F32' | 'U8' | 'S16' = 'F32') =>
  rasterOf({ width: values.length, height: 1, pixelType }, (x) => values[x]!, mask ? Uint8Array.from(mask) : undefined);

async function values(args: Record<string, unknown>, inputs: Parameters<typeof runFunction>[2], band = 0): Promise<number[]> {
  const r = await runFunction(local, args, inputs);
  return Array.from({ length: r.info.width }, (_, x) => (r.valid(x, 0) ? r.value(x, 0, band) : N));
}

const a = row([4, -2, 0.5, 9, 7], [1, 1, 1, 1, 0]);
const b = row([2, 0, 0.5, -3, 1]);

describe('Local operations (hand-derived from spec §2 Local)', () => {
  const CASES: [number, Parameters<typeof runFunction>[2], number[]][] = [
    [1, [a, b], [6, -2, 1, 6, N]],
    [2, [a, b], [2, -2, 0, 12, N]],
    [3, [a, b], [8, -0, 0.25, -27, N]],
    [4, [a], [2, N, Math.fround(Math.SQRT1_2), 3, N]],
    [5, [a, b], [16, 1, Math.fround(Math.SQRT1_2), Math.fround(1 / 729), N]],
    [10, [a], [4, 2, 0.5, 9, N]],
    [23, [a, b], [2, N, 1, -3, N]],
    [24, [a, b], [0, 0, 1, 0, N]],
    [28, [a, b], [1, 0, 0, 1, N]],
    [30, [row([2.7, -2.7])], [2, -2]],
    [48, [row([2.7, -2.7])], [2, -3]],
    [49, [row([2.2, -2.7])], [3, -2]],
    [31, [a], [0, 0, 0, 0, 1]],
    [35, [a], [Math.fround(Math.log(4)), N, Math.fround(Math.log(0.5)), Math.fround(Math.log(9)), N]],
    [6, [row([2, 1, -1])], [N, 0, Math.fround(Math.PI)]],
    [9, [row([1, 0.5])], [N, Math.fround(Math.atanh(0.5))]],
    [11, [row([12, 5]), row([10, 3])], [8, 1]],
    [13, [row([5])], [-6]],
    [17, [row([0, 3, 2]), row([1, 4, 0])], [0, 1, 0]],
    [18, [row([0, 3])], [1, 0]],
    [20, [row([0, 3, 2]), row([1, 4, 0])], [1, 0, 1]],
    [44, [row([7, -7]), row([3, 3])], [1, -1]],
    [45, [row([3])], [-3]],
    [53, [row([-3])], [9]],
    [65, [row([7, -7, 1]), row([2, 2, 0])], [3, -4, N]],
    [50, [row([0, 1, 0]), row([5, 6, 7], [1, 1, 0])], [5, N, N]],
    [78, [row([1, 0, 2]), row([10, 10, 10]), row([20, 20, 20])], [10, 20, 10]],
    [76, [row([1, 0]), row([10, 10]), row([20, 20])], [10, 20]],
    [84, [row([1, 2, 3]), row([10, 10, 10]), row([20, 20, 20])], [10, 20, N]],
    [39, [a, b, row([1, 1, 1, 1, 1])], [4, 1, 1, 9, N]],
    [67, [a, b, row([1, 1, 1, 1, 1])], [4, 1, 1, 9, 1]],
    [40, [row([1, 2]), row([3, 6])], [2, 4]],
    [41, [row([1]), row([3]), row([2]), row([10])], [2.5]],
    [38, [row([1]), row([2]), row([2])], [2]],
    [43, [row([1]), row([2]), row([2])], [1]],
    [47, [row([1]), row([7]), row([3])], [6]],
    [54, [row([2]), row([4]), row([6])], [Math.fround(Math.sqrt(8 / 3))]],
    [55, [row([2], [0]), row([4])], [N]],
    [74, [row([2], [0]), row([4])], [4]],
    [58, [row([2]), row([4]), row([2])], [2]],
    [75, [row([2], [0]), row([4]), row([4])], [1]],
  ];
  for (const [code, inputs, want] of CASES) {
    it(`${code} ${localOp(code)!.name}`, async () => {
      expect(await values({ Operation: code }, inputs)).toEqual(want);
    });
  }

  it('knows every code of the spec table', () => {
    const spec = [
      ...Array.from({ length: 61 }, (_, i) => i + 1),
      64,
      65,
      ...Array.from({ length: 10 }, (_, i) => 66 + i),
      76,
      78,
      84,
      93,
      94,
    ];
    expect(LOCAL_CODES).toEqual(spec);
  });

  it('takes constants as operands', async () => {
    expect(await values({ Operation: 3 }, [a, constant([10])])).toEqual([40, -20, 5, 90, N]);
    expect(await values({ Operation: 2 }, [constant([10]), a])).toEqual([6, 12, 9.5, 1, N]);
  });

  it('percentile: NEAREST, LINEAR and AUTO_DETECT', async () => {
    const ins = [10, 20, 30, 40, 50].map((v) => row([v]));
    expect(await values({ Operation: 93, PercentileValue: 90, PercentileInterpolationType: 'LINEAR' }, ins)).toEqual([46]);
    expect(await values({ Operation: 93, PercentileValue: 90, PercentileInterpolationType: 'NEAREST' }, ins)).toEqual([50]);
    expect(await values({ Operation: 93, PercentileValue: 90 }, ins)).toEqual([46]); // float inputs: LINEAR
    const ints = [10, 20, 30, 40, 50].map((v) => row([v], undefined, 'S16'));
    expect(await values({ Operation: 93, PercentileValue: 90 }, ints)).toEqual([50]); // integer inputs: NEAREST
    expect(await values({ Operation: 94, PercentileValue: 50 }, [row([1], [0]), row([3]), row([5])])).toEqual([4]);
  });
});

describe('Local bands, types and arguments', () => {
  const rgb = rasterOf({ width: 2, height: 1, bandCount: 3, pixelType: 'U8' }, (x, _y, band) => 10 * band + x);
  it('band-wise with broadcasting of single-band operands; pooled statistics without ProcessAsMultiband', async () => {
    const r = await runFunction(local, { Operation: 1 }, [rgb, row([100, 200])]);
    expect(r.info.bandCount).toBe(3);
    expect([0, 1, 2].map((band) => r.value(1, 0, band))).toEqual([201, 211, 221]);
    const pooled = await runFunction(local, { Operation: 39, ProcessAsMultiband: false }, [rgb, row([5, 50])]);
    expect(pooled.info.bandCount).toBe(1);
    expect([pooled.value(0, 0), pooled.value(1, 0)]).toEqual([20, 50]);
    const banded = await runFunction(local, { Operation: 39 }, [rgb, row([5, 50])]);
    expect(banded.info.bandCount).toBe(3);
  });

  it('advertises the output domain of trigonometric and Boolean ops', () => {
    expect(applyFunction(local, { Operation: 6 }, [a]).info.statistics).toEqual([{ min: 0, max: Math.PI }]);
    expect(applyFunction(local, { Operation: 28 }, [a, b]).info.statistics).toEqual([{ min: 0, max: 1 }]);
    expect(applyFunction(local, { Operation: 1 }, [a, b]).info.statistics).toBeUndefined();
  });

  it('an integer outputPixelType turns out-of-range values into NoData (no clamping) and rounds half up', async () => {
    const cast = applyFunction(local, { Operation: 3 }, [row([200, 2, 1.25, -1]), constant([2])], 'U8');
    expect(cast.info.pixelType).toBe('U8');
    const block = await render(cast, { tileSize: 16 });
    expect(Array.from(block.mask)).toEqual([0, 1, 1, 0]);
    expect([block.bands[0]![1], block.bands[0]![2]]).toEqual([4, 3]);
  });

  it('an absent or empty Rasters list means $$', () => {
    for (const raw of [{ Operation: 4 }, { Operation: 4, Rasters: [] }]) {
      const parsed = parseArgs(local.args, raw, 'rasterFunctionArguments');
      expect(parsed.issues).toEqual([]);
      expect(parsed.rasters[0]!.elements!.map((e) => e.value)).toEqual(['$$']);
    }
  });

  it('rejects unknown codes, missing operands, band mismatches (code and path)', () => {
    const P = 'rasterFunctionArguments.';
    const cases: [Record<string, unknown>, Parameters<typeof runFunction>[2], string, RegExp][] = [
      [{ Operation: 62 }, [a], 'Operation', /not one the spec identifies/],
      [{ Operation: 90 }, [a], 'Operation', /not one the spec identifies/],
      [{}, [a], 'Operation', /required/],
      [{ Operation: 1 }, [a], 'Rasters', /needs 2 operand/],
      [{ Operation: 78 }, [a], 'Rasters', /needs 2 operand/],
      [{ Operation: 1 }, [constant([1]), constant([2])], 'Rasters', /at least one raster/],
      [{ Operation: 1 }, [rgb, rasterOf({ width: 2, height: 1, bandCount: 2 }, () => 1)], 'Rasters[1]', /band counts/],
    ];
    for (const [args, inputs, path, msg] of cases) {
      const e = catchError(() => applyFunction(local, args, inputs));
      expect([e?.code, e?.path], JSON.stringify(args)).toEqual(['INVALID_ARGUMENT', P + path]);
      expect(e?.message).toMatch(msg);
    }
    const pct = catchError(() => applyFunction(local, { Operation: 93, PercentileValue: 120 }, [a]));
    expect([pct?.code, pct?.path]).toEqual(['INVALID_ARGUMENT', `${P}PercentileValue`]);
  });

  it('warns when a unary op gets extra operands', () => {
    expect(applyFunction(local, { Operation: 4 }, [a, b]).plan.warnings?.[0]).toMatch(/ignored/);
  });
});

// Expected values derived by hand from the spec's Remap rules (ranges last-to-first, from inclusive /
// to exclusive, float nudge 1e-6, NoData ranges, AllowUnmatched), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction, warningMessages, type Result } from '../../../test/helpers.js';
import { remap } from './remap.js';

const row = (v: number[], pixelType: 'U8' | 'F32' | 'S16' = 'F32') => rasterOf({ width: v.length, height: 1, pixelType }, (x) => v[x]!);
const px = (r: Result): (number | null)[] => Array.from({ length: r.info.width }, (_, x) => (r.valid(x, 0) ? r.value(x, 0) : null));

describe('Remap', () => {
  it('maps [from, to) ranges, later ranges winning, unmatched NoData', async () => {
    const r = await runFunction(remap, { InputRanges: [0, 10, 10, 20, 15, 30], OutputValues: [1, 2, 3] }, [
      row([0, 9.5, 10, 14, 15, 29.9, 30, -1]),
    ]);
    expect(px(r)).toEqual([1, 1, 2, 2, 3, 3, null, null]);
  });

  it('nudges interior float bounds by 1e-6 so F32 decimals land in the range they name', async () => {
    // F32(0.7) = 0.69999998 < 0.7: still in [0.7, 1) because that from becomes 0.699999.
    const r = await runFunction(remap, { InputRanges: [0, 0.7, 0.7, 1], OutputValues: [1, 2] }, [row([0.69, 0.7, 0.99, 1])]);
    expect(px(r)).toEqual([1, 2, 2, null]);
  });

  it('IsLastInputRangeInclusive makes the last upper bound inclusive', async () => {
    const r = await runFunction(remap, { InputRanges: [0, 5, 5, 10], OutputValues: [1, 2], IsLastInputRangeInclusive: true }, [
      row([10, 11], 'S16'),
    ]);
    expect(px(r)).toEqual([2, null]);
  });

  it('NoDataRanges: inclusive for integers, [from, to) for floats; AllowUnmatched keeps values', async () => {
    const i = await runFunction(remap, { InputRanges: [0, 3], OutputValues: [9], NoDataRanges: [5, 6], AllowUnmatched: true }, [
      row([1, 4, 5, 6, 7], 'U8'),
    ]);
    expect(px(i)).toEqual([9, 4, null, null, 7]);
    const f = await runFunction(remap, { NoDataRanges: [5, 6], AllowUnmatched: true }, [row([4, 5, 5.5, 6, 7])]);
    expect(px(f)).toEqual([4, null, null, 6, 7]);
  });

  it('natural type is the input type: OutputValues are clamped to it (with a warning)', async () => {
    const r = await runFunction(remap, { InputRanges: [0, 10, 10, 20], OutputValues: [1000, -5] }, [row([1, 12], 'U8')]);
    expect(r.info.pixelType).toBe('U8');
    expect(px(r)).toEqual([255, 0]);
    expect(warningMessages(r.node.plan.warnings).join(' ')).toMatch(/1000, -5 do not fit/);
    expect(r.info.statistics).toEqual([{ min: 0, max: 255 }]);
  });

  it('planned for an outputPixelType keeps values the input type cannot hold', () => {
    const node = applyFunction(remap, { InputRanges: [0, 10], OutputValues: [1000] }, [row([1], 'U8')]);
    const plan = remap.plan(node.args as never, [node.inputs[0]!.info], 'U16');
    expect(plan.info.pixelType).toBe('U16');
    expect((plan.params as { outputs: Float64Array }).outputs[0]).toBe(1000);
  });

  it('remaps only inside Geometries (pixel centres), passing other pixels through', async () => {
    // 4 x 1 raster, cell 1, x from 0: an envelope over x in [0.9, 2.6] holds centres 1.5 and 2.5.
    const r = await runFunction(
      remap,
      {
        InputRanges: [0, 100],
        OutputValues: [7],
        GeometryType: 'esriGeometryEnvelope',
        Geometries: [{ xmin: 0.9, ymin: -1, xmax: 2.6, ymax: 0 }],
      },
      [row([1, 2, 3, 4])],
    );
    expect(px(r)).toEqual([1, 7, 7, 4]);
  });

  it('rejects malformed arguments with the argument path', () => {
    const src = row([1]);
    const cases: [Record<string, unknown>, string][] = [
      [{ InputRanges: [0, 1, 2], OutputValues: [1] }, 'InputRanges'],
      [{ InputRanges: [0, 1], OutputValues: [1, 2] }, 'OutputValues'],
      [{ InputRanges: [5, 1], OutputValues: [1] }, 'InputRanges'],
      [{ NoDataRanges: [1] }, 'NoDataRanges'],
      [{}, 'InputRanges'],
      [
        { InputRanges: [0, 1], OutputValues: [1], GeometryType: 'point', Geometries: [{ xmin: 0, ymin: 0, xmax: 1, ymax: 1 }] },
        'GeometryType',
      ],
      [{ InputRanges: [0, 1], OutputValues: [1], Geometries: [{ x: 1 }] }, 'Geometries[0]'],
    ];
    for (const [args, field] of cases) {
      const e = catchError(() => applyFunction(remap, args, [src]));
      expect(e?.code, JSON.stringify(args)).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
  });
});

// Expected values derived by hand from the weighted-overlay rule (remap to the scale, Σ v·influence,
// round half away; RESTRICTED = EvalFrom - 1 wins; NODATA), not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { weightedOverlay } from './weighted-overlay.js';

const a = () => rasterOf({ width: 5, height: 1, pixelType: 'U8' }, (x) => [1, 2, 3, 4, 9][x]!, Uint8Array.from([1, 1, 1, 1, 0]));
const b = () => rasterOf({ width: 5, height: 1, pixelType: 'U8' }, (x) => [10, 20, 30, 40, 10][x]!);

describe('WeightedOverlay', () => {
  it('remaps, weighs by normalised influence and rounds; RESTRICTED and NODATA classes', async () => {
    const r = await runFunction(
      weightedOverlay,
      { Influences: [75, 25], Remaps: ['1 1, 2 3 5, 4 RESTRICTED, NODATA 9', '0 15 2; 15 25 9; 30 NODATA'], EvalFrom: 1, EvalTo: 9 },
      [a(), b()],
    );
    // px0: 1*0.75 + 2*0.25 = 1.25 -> 1; px1: 5*.75 + 9*.25 = 6; px2: b = 30 NODATA; px3: restricted = 0;
    // px4: a NoData -> NODATA entry 9; b 10 -> 2: 6.75 + 0.5 = 7.25 -> 7.
    expect(r.info.pixelType).toBe('S16');
    expect([0, 1, 3, 4].map((x) => r.value(x, 0))).toEqual([1, 6, 0, 7]);
    expect(r.valid(2, 0)).toBe(false);
    expect(r.valid(3, 0)).toBe(true);
  });

  it('a value with no entry is NoData; ranges include both bounds, the first entry wins', async () => {
    const r = await runFunction(weightedOverlay, { Influences: [1], Remaps: ['1 2 3, 2 3 7'], EvalFrom: 1, EvalTo: 9 }, [a()]);
    expect([r.value(0, 0), r.value(1, 0), r.value(2, 0)]).toEqual([3, 3, 7]);
    expect(r.valid(3, 0)).toBe(false);
  });

  it('rejects malformed arguments with the argument path', () => {
    const ok = { Influences: [50, 50], Remaps: ['1 1', '10 2'], EvalFrom: 1, EvalTo: 9 };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...ok, EvalFrom: undefined }, 'EvalFrom'],
      [{ ...ok, EvalTo: 1 }, 'EvalTo'],
      [{ ...ok, Influences: [1] }, 'Influences'],
      [{ ...ok, Influences: [-1, 2] }, 'Influences'],
      [{ ...ok, Remaps: ['1 1'] }, 'Remaps'],
      [{ ...ok, Remaps: ['1 12', '10 2'] }, 'Remaps[0]'],
      [{ ...ok, Remaps: ['1 1', 'a b'] }, 'Remaps[1]'],
      [{ ...ok, Remaps: ['1 1', '1 2 3 4'] }, 'Remaps[1]'],
    ];
    for (const [args, field] of cases) {
      const e = catchError(() => applyFunction(weightedOverlay, args, [a(), b()]));
      expect(e?.code, JSON.stringify(args)).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
  });
});

/**
 * CreateColorComposite: band ids and names, expression channels (values derived by hand from the
 * BandArithmetic UserDefined rules), output types, NoData, bad arguments (code, path, position).
 */
import { describe, expect, it } from 'vitest';
import { memorySource } from '../../graph/memory-source.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction } from '../../../test/helpers.js';
import { createColorComposite } from './create-color-composite.js';

const mask = Uint8Array.from([1, 1, 0]);
// 4 bands (blue, green, red, nir) x 3 pixels, U8.
const PIX = [
  [10, 20, 30, 90],
  [0, 0, 0, 0],
  [5, 5, 5, 5],
];
const ids = rasterOf({ width: 3, height: 1, bandCount: 4, pixelType: 'U8' }, (x, _y, b) => PIX[x]![b]!, mask);
const named = memorySource(
  'ccc-named',
  { ...gridInfo({ width: 3, height: 1, bandCount: 4, pixelType: 'U8' }), bandNames: ['Blue', 'Green', 'Red', 'Near Infrared'] },
  [0, 1, 2, 3].map((b) => Uint8Array.from(PIX, (p) => p[b]!)),
  mask,
);

describe('CreateColorComposite', () => {
  it('Method 1: band ids copy bands and keep the input type', async () => {
    const r = await runFunction(createColorComposite, { Method: 1, BandIndexesR: 'B4', BandIndexesG: 'b3', BandIndexesB: '2' }, [ids]);
    expect(r.info.pixelType).toBe('U8');
    expect([0, 1, 2].map((b) => r.value(0, 0, b))).toEqual([90, 30, 20]);
    expect(r.valid(2, 0)).toBe(false);
  });

  it('Method 1: an expression channel makes the output F32; x/0 is 0', async () => {
    const r = await runFunction(
      createColorComposite,
      { Method: 1, BandIndexesR: '(B4 - B3)/(B4 + B3)', BandIndexesG: 'B2', BandIndexesB: 'B1 * 2' },
      [ids],
    );
    expect(r.info.pixelType).toBe('F32');
    expect([0, 1, 2].map((b) => r.value(0, 0, b))).toEqual([0.5, 20, 20]);
    expect([0, 1, 2].map((b) => r.value(1, 0, b))).toEqual([0, 0, 0]);
    expect(r.valid(2, 0)).toBe(false);
  });

  it('Method 0: band names, whole-name matches with spaces, expressions over names', async () => {
    const r = await runFunction(
      createColorComposite,
      { Method: 0, BandIndexesR: ' near infrared ', BandIndexesG: 'red', BandIndexesB: 'Green' },
      [named],
    );
    expect(r.info.pixelType).toBe('U8');
    expect([0, 1, 2].map((b) => r.value(0, 0, b))).toEqual([90, 30, 20]);
    const e = await runFunction(
      createColorComposite,
      { BandIndexesR: '(Red - Blue) / (Red + Blue)', BandIndexesG: 'Green', BandIndexesB: 'Blue' },
      [named],
    );
    expect(e.value(0, 0, 0)).toBe(0.5);
  });

  it('rejects bad channels with code, path and position', () => {
    const P = 'rasterFunctionArguments.';
    const cases: [Record<string, unknown>, typeof ids, string, string, RegExp][] = [
      [{ Method: 1, BandIndexesR: 'B5', BandIndexesG: 'B1', BandIndexesB: 'B1' }, ids, 'INVALID_ARGUMENT', 'BandIndexesR', /1-based/],
      [
        { Method: 1, BandIndexesR: 'B1', BandIndexesG: 'B1 + B9', BandIndexesB: 'B1' },
        ids,
        'INVALID_ARGUMENT',
        'BandIndexesG',
        /unknown name B9.*at position 5/,
      ],
      [
        { Method: 1, BandIndexesR: 'B1', BandIndexesG: 'B1', BandIndexesB: 'B1 ** 2' },
        ids,
        'INVALID_ARGUMENT',
        'BandIndexesB',
        /not allowed/,
      ],
      [{ Method: 1, BandIndexesR: 'B1', BandIndexesG: 'B1' }, ids, 'INVALID_ARGUMENT', 'BandIndexesB', /required/],
      [{ Method: 0, BandIndexesR: 'Red', BandIndexesG: 'Red', BandIndexesB: 'Red' }, ids, 'UNSUPPORTED_INPUT', 'Method', /band names/],
      [
        { Method: 0, BandIndexesR: 'Rde', BandIndexesG: 'Red', BandIndexesB: 'Red' },
        named,
        'INVALID_ARGUMENT',
        'BandIndexesR',
        /did you mean Red/,
      ],
    ];
    for (const [args, input, code, path, msg] of cases) {
      const err = catchError(() => applyFunction(createColorComposite, args, [input]));
      expect([err?.code, err?.path], JSON.stringify(args)).toEqual([code, P + path]);
      expect(err?.message).toMatch(msg);
    }
  });
});

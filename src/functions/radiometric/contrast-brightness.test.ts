// Expected values computed by hand from the spec's lookup-table formula (k = 200v - 25500 + 510B),
// written out beside each case. No independent tool implements this vendor table.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { contrastBrightness, contrastBrightnessLut } from './contrast-brightness.js';

describe('ContrastBrightness', () => {
  it('C = 0, B = 0 is the identity (appendix C: 100 -> 100)', () => {
    // out = (200v - 25500) * 100 / 20000 + 128 = v + 0.5 -> truncated to v.
    expect(Array.from(contrastBrightnessLut(0, 0))).toEqual(Array.from({ length: 256 }, (_, v) => v));
  });

  it('positive contrast: k / (2(100 - C)) + 128', () => {
    // C 50: v 100 -> -5500/100 + 128 = 73; v 200 -> 145 + 128 = 273 -> 255; v 0 -> -255 + 128 < 0 -> 0.
    const lut = contrastBrightnessLut(50, 0);
    expect([lut[100], lut[200], lut[0]]).toEqual([73, 255, 0]);
  });

  it('negative contrast with brightness: k (100 + C) / 20000 + 128, truncated', () => {
    // C -50, B 20: v 100 -> k = -5500 + 10200 = 4700 -> 4700 * 50 / 20000 + 128 = 139.75 -> 139.
    expect(contrastBrightnessLut(-50, 20)[100]).toBe(139);
  });

  it('C = 100 thresholds at the middle; C = -100 is flat grey', () => {
    const hard = contrastBrightnessLut(100, 0); // k = 200v - 25500 > 0 from v = 128
    expect([hard[127], hard[128]]).toEqual([0, 255]);
    expect(new Set(contrastBrightnessLut(-100, 40))).toEqual(new Set([128]));
  });

  it('maps every band of a U8 raster and keeps NoData', async () => {
    const src = rasterOf(
      { width: 2, height: 1, bandCount: 2, pixelType: 'U8' },
      (x, _y, b) => (b ? 200 : 100) + x,
      Uint8Array.from([1, 0]),
    );
    const r = await runFunction(contrastBrightness, { ContrastOffset: 50 }, [src]);
    expect([r.value(0, 0, 0), r.value(0, 0, 1), r.valid(1, 0)]).toEqual([73, 255, false]);
    expect(r.info.pixelType).toBe('U8');
  });

  it('rejects non-8-bit input and offsets outside -100..100', () => {
    const s16 = rasterOf({ width: 1, height: 1, pixelType: 'S16' }, () => 1);
    const e = catchError(() => applyFunction(contrastBrightness, {}, [s16]));
    expect([e?.code, e?.path]).toEqual(['UNSUPPORTED_INPUT', 'rasterFunctionArguments.Raster']);
    const u8 = rasterOf({ width: 1, height: 1, pixelType: 'U8' }, () => 1);
    const e2 = catchError(() => applyFunction(contrastBrightness, { BrightnessOffset: 101 }, [u8]));
    expect([e2?.code, e2?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.BrightnessOffset']);
  });
});

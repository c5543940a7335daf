import { describe, expect, it } from 'vitest';
import { castValue, parsePixelType, PIXEL_TYPES, promote, representable, roundHalfAway } from './pixel-type.js';

describe('pixel types', () => {
  it('names all 13 types plus UNKNOWN, in any case', () => {
    expect(PIXEL_TYPES).toHaveLength(13);
    expect(parsePixelType('u8')).toBe('U8');
    expect(parsePixelType(' c128 ')).toBe('C128');
    expect(parsePixelType('Unknown')).toBe('UNKNOWN');
    expect(parsePixelType('float')).toBeUndefined();
    expect(parsePixelType('U64')).toBeUndefined();
  });

  it('rounds half away from zero like GDAL', () => {
    expect([2.5, 1.5, 0.5, -0.5, -1.5, -2.5, 2.4999, -2.4999].map(roundHalfAway)).toEqual([3, 2, 1, -1, -2, -3, 2, -2]);
  });

  // Expected values derived by hand from the rule: round half away from zero, then saturate.
  it.each([
    ['U1', 0.6, 1],
    ['U1', 7, 1],
    ['U2', 2.5, 3],
    ['U2', -1, 0],
    ['U4', 15.4, 15],
    ['U4', 99, 15],
    ['U8', 254.5, 255],
    ['U8', 300, 255],
    ['U8', -0.4, 0],
    ['S8', -128.6, -128],
    ['S8', 127.5, 127],
    ['U16', 65535.7, 65535],
    ['S16', -32768.5, -32768],
    ['S16', -2.5, -3],
    ['U32', 4294967295.9, 4294967295],
    ['S32', -2147483648.9, -2147483648],
    ['S32', 1e12, 2147483647],
  ] as const)('%s casts %d to %d', (t, v, expected) => {
    expect(castValue(v, t)).toBe(expected);
  });

  it('keeps float values (F32 rounded to single precision) and NaN', () => {
    expect(castValue(0.1, 'F32')).toBe(Math.fround(0.1));
    expect(castValue(0.1, 'F64')).toBe(0.1);
    expect(castValue(Number.NaN, 'U8')).toBeNaN();
  });

  it('knows which values a type can hold', () => {
    expect(representable(-9999, 'S16')).toBe(true);
    expect(representable(-9999, 'U16')).toBe(false);
    expect(representable(0.1, 'F32')).toBe(false);
    expect(representable(0.5, 'F32')).toBe(true);
    expect(representable(Number.NaN, 'F64')).toBe(true);
    expect(representable(Number.NaN, 'U8')).toBe(false);
  });

  it('promotes to the smallest type that holds every input', () => {
    expect(promote(['U8', 'S16'])).toBe('S16');
    expect(promote(['U8', 'S8'])).toBe('S16');
    expect(promote(['U1', 'U4'])).toBe('U4');
    expect(promote(['U16', 'S16'])).toBe('S32');
    expect(promote(['U8', 'F32'])).toBe('F32');
    expect(promote(['S32', 'F32'])).toBe('F64');
    expect(promote(['U32', 'S8'])).toBe('F64');
    expect(promote(['C64', 'F64'])).toBe('C128');
  });
});

import { describe, expect, it } from 'vitest';
import { castPlane } from './cast.js';

describe('castPlane', () => {
  it('casts planes: NaN becomes NoData in the mask, everything else saturates', () => {
    const mask = new Uint8Array([1, 1, 1, 1, 0]);
    const out = castPlane(new Float64Array([-3.5, 12.5, Number.NaN, 1e9, 7]), 'F64', 'S8', mask);
    expect(out).toBeInstanceOf(Int8Array);
    expect([...out.slice(0, 2)]).toEqual([-4, 13]);
    expect(out[3]).toBe(127);
    expect([...mask]).toEqual([1, 1, 0, 1, 0]);
  });

  it('casts real planes to complex (imaginary 0) and complex to real (real part)', () => {
    const mask = new Uint8Array([1, 1]);
    const c = castPlane(new Float32Array([1.5, -2]), 'F32', 'C64', mask);
    expect([...c]).toEqual([1.5, 0, -2, 0]);
    const r = castPlane(new Float64Array([3, 4, -1, 9]), 'C128', 'S16', mask);
    expect([...r]).toEqual([3, -1]);
  });
});

/**
 * The 13 pixel types of the spec (plus `UNKNOWN` on a rule: "keep what the function produces"),
 * their value ranges, the typed arrays that hold them, and GDAL-like casting: round half away from
 * zero, saturate at the type's range, NaN becomes NoData (mask 0).
 *
 * U1/U2/U4 are unpacked, one byte per pixel, in memory; they are packed only when encoded.
 * C64/C128 planes hold interleaved (re, im) pairs, so their arrays are twice the pixel count.
 */

export const PIXEL_TYPES = ['U1', 'U2', 'U4', 'U8', 'S8', 'U16', 'S16', 'U32', 'S32', 'F32', 'F64', 'C64', 'C128'] as const;
export type PixelType = (typeof PIXEL_TYPES)[number];
/** What a rule's `outputPixelType` may say. */
export type OutputPixelType = PixelType | 'UNKNOWN';

export type Plane = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array;

interface TypeInfo {
  readonly min: number;
  readonly max: number;
  readonly integer: boolean;
  readonly complex: boolean;
  readonly bits: number;
  readonly array: new (length: number) => Plane;
}

const F32_MAX = 3.4028234663852886e38;

export const PIXEL_TYPE_INFO: Readonly<Record<PixelType, TypeInfo>> = {
  U1: { min: 0, max: 1, integer: true, complex: false, bits: 1, array: Uint8Array },
  U2: { min: 0, max: 3, integer: true, complex: false, bits: 2, array: Uint8Array },
  U4: { min: 0, max: 15, integer: true, complex: false, bits: 4, array: Uint8Array },
  U8: { min: 0, max: 255, integer: true, complex: false, bits: 8, array: Uint8Array },
  S8: { min: -128, max: 127, integer: true, complex: false, bits: 8, array: Int8Array },
  U16: { min: 0, max: 65535, integer: true, complex: false, bits: 16, array: Uint16Array },
  S16: { min: -32768, max: 32767, integer: true, complex: false, bits: 16, array: Int16Array },
  U32: { min: 0, max: 4294967295, integer: true, complex: false, bits: 32, array: Uint32Array },
  S32: { min: -2147483648, max: 2147483647, integer: true, complex: false, bits: 32, array: Int32Array },
  F32: { min: -F32_MAX, max: F32_MAX, integer: false, complex: false, bits: 32, array: Float32Array },
  F64: { min: -Number.MAX_VALUE, max: Number.MAX_VALUE, integer: false, complex: false, bits: 64, array: Float64Array },
  C64: { min: -F32_MAX, max: F32_MAX, integer: false, complex: true, bits: 64, array: Float32Array },
  C128: { min: -Number.MAX_VALUE, max: Number.MAX_VALUE, integer: false, complex: true, bits: 128, array: Float64Array },
};

export const isPixelType = (s: string): s is PixelType => (PIXEL_TYPES as readonly string[]).includes(s);

/** Parse a rule's outputPixelType in any case (`u8` = `U8`); undefined when it is not one. */
export function parsePixelType(s: string): OutputPixelType | undefined {
  const up = s.trim().toUpperCase();
  if (up === 'UNKNOWN') return 'UNKNOWN';
  return isPixelType(up) ? up : undefined;
}

export const isInteger = (t: PixelType): boolean => PIXEL_TYPE_INFO[t].integer;
export const isComplex = (t: PixelType): boolean => PIXEL_TYPE_INFO[t].complex;

/** A zeroed plane for `pixels` pixels of type `t` (twice as long for complex types). */
export function allocatePlane(t: PixelType, pixels: number): Plane {
  const info = PIXEL_TYPE_INFO[t];
  return new info.array(info.complex ? 2 * pixels : pixels);
}

/** Whether `v` is exactly representable in `t` (used to keep an input NoData value on output). */
export function representable(v: number, t: PixelType): boolean {
  const info = PIXEL_TYPE_INFO[t];
  if (Number.isNaN(v)) return !info.integer;
  if (v < info.min || v > info.max) return false;
  if (info.integer) return Number.isInteger(v);
  return t === 'F32' || t === 'C64' ? Math.fround(v) === v : true;
}

/** Round half away from zero (GDAL's rounding for float -> integer). */
export function roundHalfAway(v: number): number {
  const r = v < 0 ? -Math.floor(0.5 - v) : Math.floor(v + 0.5);
  return r === 0 ? 0 : r; // no -0
}

/** Cast one value like GDAL: round half away from zero, saturate. NaN stays NaN (the caller masks it). */
export function castValue(v: number, t: PixelType): number {
  const info = PIXEL_TYPE_INFO[t];
  if (Number.isNaN(v)) return v;
  if (!info.integer) return t === 'F32' || t === 'C64' ? Math.fround(v) : v;
  const r = roundHalfAway(v);
  return r < info.min ? info.min : r > info.max ? info.max : r;
}

/** Smallest type that holds every value of all of `types` (for CompositeBand and friends). */
export function promote(types: readonly PixelType[]): PixelType {
  if (types.length === 0) return 'F32';
  if (types.some((t) => t === 'C128')) return 'C128';
  if (types.some((t) => t === 'C64')) return types.some((t) => t === 'F64' || t === 'S32' || t === 'U32') ? 'C128' : 'C64';
  if (types.some((t) => t === 'F64')) return 'F64';
  let lo = 0;
  let hi = 0;
  let float = false;
  for (const t of types) {
    const info = PIXEL_TYPE_INFO[t];
    if (!info.integer) float = true;
    lo = Math.min(lo, info.min);
    hi = Math.max(hi, info.max);
  }
  if (float) {
    // F32 holds every 16-bit integer exactly; 32-bit integers need F64.
    return types.some((t) => t === 'U32' || t === 'S32') ? 'F64' : 'F32';
  }
  const candidates: PixelType[] = ['U1', 'U2', 'U4', 'U8', 'S8', 'U16', 'S16', 'U32', 'S32'];
  for (const c of candidates) {
    const info = PIXEL_TYPE_INFO[c];
    if (info.min <= lo && info.max >= hi) return c;
  }
  return 'F64'; // mixes of U32 and signed types
}

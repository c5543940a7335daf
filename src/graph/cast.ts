/**
 * The engine's cast (GDAL-like: round half away from zero, saturate, NaN -> NoData), added after a
 * function whose plan leaves a rule's `outputPixelType` to it because converting its natural
 * values gives the same pixels as computing into the type (see RasterFunction.plan). Internal:
 * not in the registry.
 */
import { allocatePlane, PIXEL_TYPE_INFO, PIXEL_TYPES, promote, representable, type PixelType, type Plane } from '../core/pixel-type.js';
import { castViaWasm } from '../wasm/local.js';
import { defineFunction } from './types.js';

export const castFunction = defineFunction({
  name: 'Cast',
  summary: "Convert to the rule's outputPixelType (round half away from zero, saturate, NaN -> NoData).",
  family: 'internal',
  verification: 'hand: casting tables in src/core/pixel-type.test.ts and src/graph/cast.test.ts',
  args: {
    to: { kind: 'string', values: PIXEL_TYPES, doc: 'Target pixel type.' },
    Raster: { kind: 'raster', doc: 'Input.' },
  },
  plan(a, inputs) {
    const input = inputs[a.Raster]!;
    const to = a.to as PixelType;
    // Keep the input's NoData when the new type can hold it; float types fall back to NaN.
    const noData =
      input.noData !== undefined && representable(input.noData, to)
        ? input.noData
        : to.startsWith('F') || to.startsWith('C')
          ? Number.NaN
          : undefined;
    // A narrowing cast alters values, so the input no longer holds the source's values (RasterInfo.radiometry).
    const { radiometry, ...rest } = input;
    const keep = radiometry !== undefined && promote([input.pixelType, to]) === to;
    return { info: { ...rest, pixelType: to, noData, ...(keep ? { radiometry } : {}) }, halo: 0, params: { from: input.pixelType, to } };
  },
  kernel(p, [input], out) {
    out.mask.set(input!.mask);
    for (let b = 0; b < out.bands.length; b++) out.bands[b] = castPlane(input!.bands[b]!, p.from, p.to, out.mask);
  },
});

/**
 * Cast a plane of real values into a new plane of type `t`. Pixels whose value is NaN (or that are
 * already masked) get mask 0; everything else is rounded half away from zero and saturated.
 * `src` real and `t` complex: the values become the real parts. Complex to real: the real part
 * (GDAL's behaviour for `-ot` from complex to real).
 */
export function castPlane(src: Plane, srcType: PixelType, t: PixelType, mask: Uint8Array): Plane {
  const n = mask.length;
  const dst = allocatePlane(t, n);
  const info = PIXEL_TYPE_INFO[t];
  const srcStride = PIXEL_TYPE_INFO[srcType].complex ? 2 : 1;
  if (info.complex) {
    for (let i = 0; i < n; i++) {
      const re = src[i * srcStride]!;
      const im = srcStride === 2 ? src[2 * i + 1]! : 0;
      if (Number.isNaN(re) || Number.isNaN(im)) mask[i] = 0;
      dst[2 * i] = re;
      dst[2 * i + 1] = im;
    }
    return dst;
  }
  // Real to real: the wasm kernel (src/wasm/local.ts) computes the same values when it takes the case.
  if (srcStride === 1 && castViaWasm(src, dst, mask, info.min, info.max)) return dst;
  if (!info.integer) {
    // Float targets: the typed array's own conversion (IEEE round to nearest) is exact enough.
    for (let i = 0; i < n; i++) {
      const v = src[i * srcStride]!;
      if (Number.isNaN(v)) mask[i] = 0;
      dst[i] = v;
    }
    return dst;
  }
  const lo = info.min;
  const hi = info.max;
  for (let i = 0; i < n; i++) {
    const v = src[i * srcStride]!;
    if (v !== v) {
      mask[i] = 0;
      continue;
    }
    const r = v < 0 ? -Math.floor(0.5 - v) : Math.floor(v + 0.5);
    dst[i] = r < lo ? lo : r > hi ? hi : r;
  }
  return dst;
}

/**
 * Complex — the magnitude of complex pixels: `sqrt(re² + im²)` per band.
 *
 * Spec: raster-functions.md §2 "Complex" (variableName `Raster`; the spec table: "floating-point
 * magnitude of a complex pixel type"). One output band per input band.
 * Output: F32 for C64 input, F64 for C128 input [spec type choice], NoData NaN; grid, spatial
 * reference and band names of the input; statistics and histograms dropped (they described the
 * complex values, if anything).
 * Math: in float64, `re*re + im*im` then `Math.sqrt`; when the sum of squares overflows or
 * underflows float64 (C128 parts above ~1e154 or below ~1e-150) `Math.hypot` gives the magnitude.
 * This is what GDAL's `mod` VRT pixel function and NumPy's `abs` of complex128 compute.
 * Edges and NoData: the input mask passes through; a pixel whose magnitude is not a finite number
 * of the output type (a NaN part, or a C64 magnitude above the F32 range, up to sqrt(2)·3.4e38)
 * becomes NoData in all bands (§1.2 rule 3, as Arithmetic does).
 * Errors: a non-complex input is UNSUPPORTED_INPUT at `Raster` (the function has nothing to do
 * on real pixels; use Identity, or cast to C64 first with outputPixelType).
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Complex input raster (C64 or C128); defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

interface ComplexParams {
  /** Index of the `Raster` input. */
  readonly input: number;
}

const at = argPaths(args);

export const complex = defineFunction<typeof args, ComplexParams>({
  name: 'Complex',
  summary: 'Magnitude sqrt(re² + im²) of complex pixels, per band (F32 for C64, F64 for C128).',
  variableName: 'Raster',
  family: 'local',
  verification: 'reference: NumPy abs() golden on a CFloat32 raster built with GDAL; hand: overflow, NaN, masks',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (!isComplex(src.pixelType)) {
      throw unsupportedInput(
        at('Raster'),
        `Complex needs a complex raster (C64 or C128); this one is ${src.pixelType}. Use outputPixelType C64 on the input rule to make one`,
      );
    }
    const f64 = src.pixelType === 'C128';
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: src.bandCount,
      pixelType: floatOutputType(to, f64 ? 'F64' : 'F32'),
      noData: Number.NaN,
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      ...(src.bandNames ? { bandNames: src.bandNames } : {}),
    };
    return { info, halo: 0, params: { input: a.Raster } };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const mask = out.mask;
    mask.set(src.mask);
    const n = mask.length;
    for (let b = 0; b < out.bands.length; b++) {
      const z = src.bands[b]!;
      const dst = out.bands[b]!;
      for (let i = 0; i < n; i++) {
        const re = z[2 * i]!;
        const im = z[2 * i + 1]!;
        const s = re * re + im * im;
        // s is NaN for a NaN part; it overflows or underflows float64 only for C128 parts beyond
        // ~1e154 or below ~1e-150, where hypot scales first.
        const m = s >= 1e-300 && s < Number.POSITIVE_INFINITY ? Math.sqrt(s) : s === s ? Math.hypot(re, im) : s;
        dst[i] = m;
        const v = dst[i]!; // as stored: a C64 magnitude past the F32 range is Infinity
        if (v - v !== 0) mask[i] = 0; // NaN or infinite
      }
    }
  },
});

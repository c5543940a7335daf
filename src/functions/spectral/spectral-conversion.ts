/**
 * SpectralConversion — a linear band transform: out_k = Σ_j M[k][j] · in_j.
 *
 * Spec: raster-functions.md §2 "SpectralConversion"; spec section 8 (`ConversionMatrix`, written
 * `conversionMatrix` in an example). The matrix is N×N numbers, row-major, N = the band count:
 * row k holds the weights of all input bands for output band k. No offset, no normalisation.
 * Math in float64. Output: N bands, F32 (natural type [ours]), NoData NaN; NoData where the input
 * is NoData or a result is not a finite F32 number (the shared mask then covers every band).
 * Band names, statistics and the source-values marker are dropped (the bands are new quantities).
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
  ConversionMatrix: {
    kind: 'numbers',
    doc: 'N x N numbers, row-major (N = band count): row k holds the weights of the input bands for output band k.',
  },
} as const satisfies ArgSchema;

interface SpectralConversionParams {
  readonly input: number;
  readonly n: number;
  readonly matrix: readonly number[];
}

const at = argPaths(args);

/** out_k = Σ_j M[k*nIn + j] · in_j over the selected input bands (F32 output, non-finite -> NoData). */
export function linearBands(
  src: PixelBlock,
  bands: readonly number[],
  matrix: readonly number[],
  offsets: readonly number[] | undefined,
  out: PixelBlock,
): void {
  const m = out.mask;
  const npx = m.length;
  const nIn = bands.length;
  const nOut = out.bands.length;
  m.set(src.mask);
  const acc = new Float64Array(npx);
  for (let k = 0; k < nOut; k++) {
    acc.fill(offsets?.[k] ?? 0);
    for (let j = 0; j < nIn; j++) {
      const w = matrix[k * nIn + j]!;
      if (w === 0) continue;
      const v = src.bands[bands[j]!]!;
      for (let i = 0; i < npx; i++) acc[i]! += w * v[i]!;
    }
    const dst = out.bands[k]!;
    for (let i = 0; i < npx; i++) {
      const s = Math.fround(acc[i]!);
      if (s - s !== 0) m[i] = 0;
      dst[i] = s;
    }
  }
  for (let k = 0; k < nOut; k++) {
    const dst = out.bands[k]!;
    for (let i = 0; i < npx; i++) if (m[i] === 0) dst[i] = Number.NaN;
  }
}

export const spectralConversion = defineFunction<typeof args, SpectralConversionParams>({
  name: 'SpectralConversion',
  summary: 'Linear transform of the bands by an N x N conversion matrix (F32).',
  variableName: 'Raster',
  family: 'spectral',
  verification: 'reference: NumPy (matrix product) golden on the Landsat image; hand: small matrices',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType))
      throw unsupportedInput(at('Raster'), `SpectralConversion does not take complex (${src.pixelType}) rasters`);
    const n = src.bandCount;
    const matrix = a.ConversionMatrix;
    if (matrix === undefined || matrix.length === 0) throw invalidArgument(at('ConversionMatrix'), 'ConversionMatrix is required');
    if (matrix.length !== n * n) {
      throw invalidArgument(
        at('ConversionMatrix'),
        `ConversionMatrix must hold N x N = ${n * n} numbers for the raster's ${n} band(s), got ${matrix.length}`,
      );
    }
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: n,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    };
    return { info, halo: 0, params: { input: a.Raster, n, matrix } };
  },

  kernel(p, inputs, out) {
    linearBands(
      inputs[p.input]!,
      Array.from({ length: p.n }, (_, j) => j),
      p.matrix,
      undefined,
      out,
    );
  },
});

/**
 * Classify — maximum-likelihood classification from a ClassifierDefinition object.
 *
 * Spec: raster-functions.md §2 "Classify"; spec 000 section 8 (arguments and the ClassifierDefinition
 * shape, parsed and checked in `definition.ts` with JSON paths into the definition).
 * Math per pixel x (all bands of `Raster`, float64): g_k(x) = -0.5 ln|S_k| - 0.5 (x-m_k)' S_k^-1 (x-m_k)
 * (equal priors: the definition carries none), class = argmax_k, ties to the lowest class index in
 * definition order [ours]. Covariances are Cholesky-factored once in `plan`; a singular or
 * non-symmetric covariance is refused naming the class. Only `Classifier: "MaximumLikelihood"` is
 * supported (SVM, RandomTrees, ISO: UNSUPPORTED_INPUT at `...Definitions[0].Classifier`).
 *
 * Segmented input (`Raster2` given): all pixels of one segment get one class, computed from the
 * segment's mean vector over `Raster` [spec, ours unsure]. A segment is an 8-connected region of
 * pixels with identical values in every band of Raster2 (this covers both a single-band segment-id
 * raster and the mean-colour RGB output of SegmentMeanShift). ASSUMPTION: two separate regions that
 * happen to share an id are two segments (segments are connected objects), and two touching segments
 * with identical colours are one. The mean is taken over the segment's pixels valid in Raster, summed
 * in row-major order. `RasterIsSegmented: true` without Raster2 means Raster itself is the segmented
 * (mean-colour) image: every pixel of a segment already holds the segment's value, so the per-pixel
 * result equals the per-segment one and no extra pass is made.
 * Context for segments (whole-image objects): `inputRect` reads the WHOLE Raster and Raster2 for
 * every tile and the per-segment classes are computed once per plan (see `whole-image.ts`: kept
 * in the plan's params, checked by an input fingerprint, 4096 x 4096 limit -> LIMIT_EXCEEDED), so
 * tiled output equals whole output for any tile size.
 *
 * Output: one band of class values (ClassValue), natural type U8 (U16 when a value exceeds 255, S32
 * when negative or above 65535) [ours]; NoData value 0 when no class uses 0. A colormap from each
 * class's Red/Green/Blue when every class has them; statistics min/max of the class values. The
 * attribute table (ClassValue, ClassName, Count) has no place in RasterInfo yet and is not published.
 * NoData: output NoData where Raster is NoData (any band: the mask is shared) or, with Raster2, where
 * Raster2 is NoData or the pixel's segment has no valid Raster pixel.
 * Grids: the output is on Raster's grid; a Raster2 on another grid is resampled onto it by the
 * engine (`Plan.align`, nearest: segment values are not interpolated), NoData outside its extent.
 * A Raster2 that does not overlap Raster is INVALID_ARGUMENT at Raster2 (local/grid.ts).
 * `MatchVariable` / `UnionDimension` (multidimensional inputs) are accepted and have no effect.
 * outputPixelType: class values through the engine's cast to any real type that holds the
 * advertised class range (values unchanged); complex types, and types that would merge classes, are
 * refused when the rule is built.
 */
import { unsupportedInput } from '../../core/errors.js';
import type { Colormap, PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { CellsizeType, ExtentType, outputGrid } from '../local/grid.js';
import { buildModel, classPixelType, classifyPixels, mlArgmax, parseDefinition, type DefinedClass, type MLModel } from './definition.js';
import {
  cachedWhole,
  checkWholeImageLimit,
  denseLabels,
  UnionFind,
  wholeImageMemo,
  wholeRect,
  type WholeImageMemo,
} from './whole-image.js';

const args = {
  ClassifierDefinition: {
    kind: 'json',
    doc:
      'ClassifierDefinition object (or a JSON string of it): Definitions[0] with Classifier "MaximumLikelihood", ' +
      'NumberBands, and Classes, each with ClassValue, ClassName, Red/Green/Blue, Count, Means (one per band) and ' +
      'Covariances (bands x bands).',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Raster to classify (as many bands as the definition); defaults to $$.' },
  Raster2: {
    kind: 'raster',
    optional: true,
    doc: 'Optional segmented raster on the same grid: every 8-connected region of equal values is one segment, classified by its mean over Raster.',
  },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name (no effect here).' },
  UnionDimension: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: union of dimensions (no effect here).' },
} as const satisfies ArgSchema;

export interface ClassifyParams {
  readonly raster: number;
  /** Index of the segmented raster input, or -1. */
  readonly segments: number;
  readonly model: MLModel;
  /** Raster size (whole-image mode). */
  readonly width: number;
  readonly height: number;
  /** The per-segment classes, computed by the first tile (whole-image.ts). */
  readonly segmentClasses: WholeImageMemo<SegmentClasses>;
}

const at = argPaths(args);

/** Output info shared by Classify and MLClassify. */
export function classOutputInfo(src: RasterInfo, classes: readonly Pick<DefinedClass, 'value' | 'rgb'>[], path: string): RasterInfo {
  const values = classes.map((c) => c.value);
  const pixelType = classPixelType(values, path);
  let colormap: Colormap | undefined;
  if (classes.every((c) => c.rgb !== undefined)) {
    const sorted = [...classes].sort((a, b) => a.value - b.value);
    const rgb = new Uint8Array(3 * sorted.length);
    sorted.forEach((c, i) => rgb.set(c.rgb!, 3 * i));
    colormap = { values: Float64Array.from(sorted.map((c) => c.value)), rgb };
  }
  return {
    width: src.width,
    height: src.height,
    bandCount: 1,
    pixelType,
    ...(values.includes(0) ? {} : { noData: 0 }),
    extent: src.extent,
    cellSize: src.cellSize,
    ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    bandNames: ['Class'],
    statistics: [{ min: Math.min(...values), max: Math.max(...values) }],
    ...(colormap ? { colormap } : {}),
  };
}

export const classify = defineFunction<typeof args, ClassifyParams>({
  name: 'Classify',
  summary: 'Maximum-likelihood classification from a ClassifierDefinition, per pixel or per segment of Raster2.',
  variableName: 'Raster',
  family: 'classify',
  codes: 'class values',
  verification: 'reference: NumPy Gaussian maximum-likelihood on L7 training statistics (golden); hand: 1-D/2-D discriminants, segments',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `Classify needs a real-valued raster, got ${src.pixelType}`);
    const defPath = at('ClassifierDefinition');
    const def = parseDefinition(a.ClassifierDefinition, defPath, {
      covariances: true,
      rasterBands: src.bandCount,
      rasterPath: at('Raster'),
      what: 'ClassifierDefinition',
    });
    const model = buildModel(
      def.classes.map((c) => ({
        value: c.value,
        name: c.name,
        means: c.means,
        covariance: c.covariance!,
        covariancePath: `${c.path}.Covariances`,
      })),
      def.bands,
    );
    const info = classOutputInfo(src, def.classes, `${defPath}.Definitions[0].Classes`);
    const warnings = [...def.warnings];
    if (!def.classes.every((c) => c.rgb !== undefined)) warnings.push('not every class has Red/Green/Blue: no colormap is attached');
    const segmented = a.Raster2 !== undefined;
    if (segmented) {
      const seg = inputs[a.Raster2]!;
      outputGrid([src, seg], ExtentType.FirstOf, CellsizeType.FirstOf, { paths: [at('Raster'), at('Raster2')] });
      if (isComplex(seg.pixelType)) throw unsupportedInput(at('Raster2'), `the segmented raster must be real-valued, got ${seg.pixelType}`);
      checkWholeImageLimit('Classify with a segmented Raster2', src.width, src.height, at('Raster2'));
    }
    const params: ClassifyParams = {
      raster: a.Raster,
      segments: segmented ? a.Raster2 : -1,
      model,
      width: src.width,
      height: src.height,
      segmentClasses: wholeImageMemo(),
    };
    return {
      info,
      halo: 0,
      ...(segmented ? { inputRect: () => wholeRect(src.width, src.height) } : {}),
      ...(segmented ? { align: inputs.map((_, k) => (k === a.Raster2 ? ({ method: 'nearest' } as const) : undefined)) } : {}),
      params,
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    if (p.segments >= 0) {
      segmentKernel(p, inputs[p.raster]!, inputs[p.segments]!, out);
      return;
    }
    classifyPixels(p.model, inputs[p.raster]!, out);
  },
});

interface SegmentClasses {
  /** Segment of each pixel (-1: NoData in Raster2). */
  readonly labels: Int32Array;
  /** Class index of each segment (-1: no valid Raster pixel in it). */
  readonly classOf: Int32Array;
}

/** 8-connected regions of equal values (all bands) among the valid pixels of `seg`. */
function equalValueSegments(seg: PixelBlock, width: number, height: number): { labels: Int32Array; count: number } {
  const uf = new UnionFind(width * height);
  const bands = seg.bands;
  const nb = bands.length;
  const mask = seg.mask;
  const same = (i: number, j: number): boolean => {
    for (let b = 0; b < nb; b++) if (bands[b]![i] !== bands[b]![j]) return false;
    return true;
  };
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (mask[i] === 0) continue;
      // Already-visited neighbours: W, NW, N, NE.
      if (x > 0 && mask[i - 1] !== 0 && same(i, i - 1)) uf.union(i, i - 1);
      if (y > 0) {
        const up = i - width;
        if (x > 0 && mask[up - 1] !== 0 && same(i, up - 1)) uf.union(i, up - 1);
        if (mask[up] !== 0 && same(i, up)) uf.union(i, up);
        if (x < width - 1 && mask[up + 1] !== 0 && same(i, up + 1)) uf.union(i, up + 1);
      }
    }
  }
  return denseLabels(uf, mask);
}

function computeSegmentClasses(p: ClassifyParams, src: PixelBlock, seg: PixelBlock): SegmentClasses {
  const { width, height, model } = p;
  const n = model.bands;
  const { labels, count } = equalValueSegments(seg, width, height);
  const sums = new Float64Array(count * n);
  const counts = new Float64Array(count);
  const mask = src.mask;
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i]!;
    if (l < 0 || mask[i] === 0) continue;
    counts[l]!++;
    for (let b = 0; b < n; b++) sums[l * n + b]! += src.bands[b]![i]!;
  }
  const classOf = new Int32Array(count).fill(-1);
  const x = new Float64Array(n);
  const d = new Float64Array(n);
  for (let l = 0; l < count; l++) {
    const c = counts[l]!;
    if (c === 0) continue;
    for (let b = 0; b < n; b++) x[b] = sums[l * n + b]! / c;
    classOf[l] = mlArgmax(model, x, d);
  }
  return { labels, classOf };
}

function segmentKernel(p: ClassifyParams, src: PixelBlock, seg: PixelBlock, out: PixelBlock): void {
  const { labels, classOf } = cachedWhole(p.segmentClasses, [src, seg], () => computeSegmentClasses(p, src, seg));
  const { width: W, height: H } = p;
  const { x: ox, y: oy, width: ow, height: oh } = out.rect;
  const dst = out.bands[0]!;
  const om = out.mask;
  const values = p.model.values;
  const sm = src.mask;
  for (let y = 0; y < oh; y++) {
    const gy = oy + y;
    for (let x = 0; x < ow; x++) {
      const o = y * ow + x;
      const gx = ox + x;
      if (gx < 0 || gy < 0 || gx >= W || gy >= H) {
        om[o] = 0;
        continue;
      }
      const i = gy * W + gx;
      const l = labels[i]!;
      const k = l < 0 ? -1 : classOf[l]!;
      if (k < 0 || sm[i] === 0) {
        om[o] = 0;
        continue;
      }
      dst[o] = values[k]!;
    }
  }
}

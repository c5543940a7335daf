/**
 * Resample — change a raster's cell size, interpolating or aggregating values.
 *
 * Spec: raster-functions.md §2 "Resample" (ResamplingType table), spec section 8 (ResamplingType,
 * InputCellsize); `OutputCellsize` from the vendor's Python API / ArcObjects
 * (IResampleFunctionArguments.OutputCellsize).
 * Output grid [ours]: the input's top-left corner, cell size `OutputCellsize` (default: the input
 * cell size), width = round(input width x input cell / output cell) (at least 1), same for height;
 * so the extent is the input's, rounded to whole output cells. `InputCellsize`, when given, is the
 * cell size the input is taken to have ("the nominal input resolution to assume"): the input grid
 * is re-labelled with it, top-left corner kept. The function changes the grid itself through
 * `Plan.inputRect`; all coordinate math uses absolute pixel positions, so tiles are independent.
 * Output pixel type (natural; the rule's outputPixelType replaces it and values are computed into
 * it), NoData value and band count are the input's; integer outputs are rounded half
 * away from zero and saturated. Statistics are kept except for Cubic (overshoot) and VectorAverage;
 * histograms are dropped.
 *
 * Methods (source position of target pixel (c, r): ((c + 0.5) * kx, (r + 0.5) * ky) in input
 * pixels, kx = output cell / input cell; kernels and edge rules in src/core/resample.ts, which
 * follow gdalwarp 3.6):
 *  0 NearestNeighbor: the input pixel containing the target centre.
 *  1 Bilinear: 4 nearest centres; if one of them is NoData or outside the raster, the nearest value
 *    (the vendor client's rule, spec).
 *  2 Cubic: Keys a = -0.5 over 4 x 4; any of the 16 missing: renormalised bilinear (gdalwarp).
 *  3 Majority: the most frequent valid value among the input pixels the target pixel's footprint
 *    touches (gdalwarp -r mode: ties go to the value that reached the top count first, scanning
 *    rows then columns). ASSUMPTION (spec: the vendor client's 4 x 4 mode filter then nearest):
 *    rasterflow follows gdalwarp, which defines a majority for every scale, up and down.
 *  4 BilinearInterpolationPlus: bilinear over the valid neighbours only, weights renormalised
 *    (gdalwarp's bilinear) [ours, spec unsure].
 *  5 BilinearGaussBlur / 6 BilinearGaussBlurPlus [ours, spec unsure]: when downsampling (k > 1 on
 *    an axis), the input is first low-passed with a Gaussian of sigma = sqrt(k^2 - 1) / 2 input
 *    pixels on that axis (radius ceil(3 sigma); normalised over valid pixels, so NoData does not
 *    spread, and NoData pixels stay NoData), then 5 samples like 1 and 6 like 4.
 *  7 Average, 8 Minimum, 9 Maximum: over the valid input pixels of the footprint
 *    [c kx, (c+1) kx) x [r ky, (r+1) ky): gdalwarp's selection (pixels the footprint touches by
 *    more than 1e-10); Average weighs each by its area inside the footprint (gdalwarp -r average;
 *    for whole-number factors this is the plain mean of the pixels whose centres fall inside, the
 *    spec's wording); where a footprint runs past the raster's edge, the edge pixel also stands
 *    for the part outside (gdalwarp's weights). No valid pixel: NoData.
 * 10 VectorAverage: two bands (`InputDataType` Vector-MagDir: magnitude and direction in degrees,
 *    default; Vector-UV: u and v). Vectors are averaged as u, v (area weights as Average) and
 *    converted back to the input form (direction atan2(u, v) in [0, 360)); a target pixel is valid
 *    only if at least 50 % of its footprint's area inside the raster is valid (VJS
 *    sampleVectorField's rule).
 * NoData: pixels outside the input are NoData; interpolation never reads NoData (see above).
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type PixelType, type Plane } from '../../core/pixel-type.js';
import type { Rect } from '../../core/rect.js';
import {
  footprintRange,
  interpolate,
  METHOD_MARGIN,
  sourceWindow,
  storeValue,
  type InterpolationMethod,
  type SourceWindow,
} from '../../core/resample.js';
import { boundingSourceRect } from '../../graph/align.js';
import { argPaths } from '../../graph/args.js';
import { realTypeOf, retypedInfo } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

export const ResamplingType = {
  NearestNeighbor: 0,
  Bilinear: 1,
  Cubic: 2,
  Majority: 3,
  BilinearInterpolationPlus: 4,
  BilinearGaussBlur: 5,
  BilinearGaussBlurPlus: 6,
  Average: 7,
  Minimum: 8,
  Maximum: 9,
  VectorAverage: 10,
} as const;

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
  ResamplingType: {
    kind: 'enum',
    values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    names: { ...ResamplingType, Nearest: 0, Mode: 3, Mean: 7, Min: 8, Max: 9 },
    default: ResamplingType.NearestNeighbor,
    doc:
      '0 NearestNeighbor, 1 Bilinear, 2 Cubic, 3 Majority, 4 BilinearInterpolationPlus, 5 BilinearGaussBlur, ' +
      '6 BilinearGaussBlurPlus, 7 Average, 8 Minimum, 9 Maximum, 10 VectorAverage (two bands).',
  },
  InputCellsize: {
    kind: 'json',
    optional: true,
    aliases: ['InputCellSize'],
    doc: 'Cell size the input is taken to have: a number or a point {x, y} in the input spatial reference (default: its own).',
  },
  OutputCellsize: {
    kind: 'json',
    optional: true,
    aliases: ['OutputCellSize', 'CellSize', 'Cellsize'],
    doc: 'Output cell size: a number or a point {x, y} in the input spatial reference (default: the input cell size).',
  },
  InputDataType: {
    kind: 'string',
    values: ['Vector-MagDir', 'Vector-UV'],
    names: { UV: 'Vector-UV', MagDir: 'Vector-MagDir', MagnitudeDirection: 'Vector-MagDir' },
    default: 'Vector-MagDir',
    doc: 'VectorAverage only [ours]: the two bands are magnitude and direction (degrees), or u and v.',
  },
} as const satisfies ArgSchema;

type Kind = 'interpolate' | 'majority' | 'average' | 'minimum' | 'maximum' | 'vector';

interface ResampleParams {
  readonly kind: Kind;
  readonly method: InterpolationMethod;
  /** Output cell / input cell per axis. */
  readonly kx: number;
  readonly ky: number;
  readonly srcWidth: number;
  readonly srcHeight: number;
  readonly pixelType: PixelType;
  /** Gaussian prefilter weights (index 0 = centre) per axis; empty = none. */
  readonly blurX: readonly number[];
  readonly blurY: readonly number[];
  readonly magDir: boolean;
}

const at = argPaths(args);

/** A cell size argument: a number, a numeric string, {x, y} or [x, y]; positive and finite. */
function cellSizeArg(v: unknown, name: 'InputCellsize' | 'OutputCellsize'): { x: number; y: number } | undefined {
  if (v === undefined || v === null) return undefined;
  let x: unknown;
  let y: unknown;
  if (typeof v === 'number' || typeof v === 'string') x = y = v;
  else if (Array.isArray(v) && v.length === 2) [x, y] = v as unknown[];
  else if (typeof v === 'object') ({ x, y } = v as { x?: unknown; y?: unknown });
  const nx = typeof x === 'string' && x.trim() !== '' ? Number(x) : x;
  const ny = typeof y === 'string' && y.trim() !== '' ? Number(y) : y;
  if (typeof nx !== 'number' || typeof ny !== 'number' || !(nx > 0 && ny > 0 && Number.isFinite(nx) && Number.isFinite(ny))) {
    throw invalidArgument(at(name), `${name} must be a positive number or a point {x, y} of positive numbers`);
  }
  return { x: nx, y: ny };
}

/** Normalised-later Gaussian weights w[0..r] for a downsampling factor k (none when k <= 1). */
function gaussian(k: number): number[] {
  if (!(k > 1)) return [];
  const sigma = Math.sqrt(k * k - 1) / 2;
  const r = Math.ceil(3 * sigma);
  return Array.from({ length: r + 1 }, (_, i) => Math.exp(-(i * i) / (2 * sigma * sigma)));
}

export const resample = defineFunction<typeof args, ResampleParams>({
  name: 'Resample',
  summary: 'Change the cell size: nearest, bilinear, cubic, majority, average, minimum, maximum or vector average.',
  variableName: 'Raster',
  family: 'geometry',
  verification:
    'reference: gdalwarp -r near/bilinear/cubic/average/min/max/mode goldens on the DEMs, NumPy for VectorAverage; hand: edge and NoData rules',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (src.constant !== undefined) throw invalidArgument(at('Raster'), 'Resample needs a raster, not a constant');
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `Resample does not take complex (${src.pixelType}) rasters`);
    const type = a.ResamplingType;
    if (type === ResamplingType.VectorAverage && src.bandCount !== 2) {
      throw invalidArgument(
        at('ResamplingType'),
        `VectorAverage needs a two-band raster (u/v or magnitude/direction); this one has ${src.bandCount}`,
      );
    }
    const inCell = cellSizeArg(a.InputCellsize, 'InputCellsize') ?? src.cellSize;
    const outCell = cellSizeArg(a.OutputCellsize, 'OutputCellsize') ?? inCell;
    const kx = outCell.x / inCell.x;
    const ky = outCell.y / inCell.y;
    const width = Math.max(1, Math.round(src.width / kx));
    const height = Math.max(1, Math.round(src.height / ky));
    if (!Number.isSafeInteger(width * height) || width * height > 2 ** 40) {
      throw invalidArgument(at('OutputCellsize'), `OutputCellsize gives an output of ${width} x ${height} pixels, too large`);
    }
    const { xmin, ymax } = src.extent;
    const kind: Kind =
      type === 3
        ? 'majority'
        : type === 7
          ? 'average'
          : type === 8
            ? 'minimum'
            : type === 9
              ? 'maximum'
              : type === 10
                ? 'vector'
                : 'interpolate';
    const method: InterpolationMethod =
      type === 2 ? 'cubic' : type === 4 || type === 6 ? 'bilinear' : type === 0 ? 'nearest' : 'bilinearFallback';
    const blur = type === 5 || type === 6;
    const blurX = blur ? gaussian(kx) : [];
    const blurY = blur ? gaussian(ky) : [];
    const keepStats = type !== 2 && type !== 10;
    const { histograms: _h, statistics, ...rest } = src;
    // outputPixelType: interpolated values are stored once into it (a bilinear U8 asked for F32
    // keeps its fractions); a complex type interpolates into its real component type, then the
    // engine's cast.
    const info: RasterInfo = retypedInfo(
      {
        ...rest,
        width,
        height,
        extent: { xmin, ymax, xmax: xmin + width * outCell.x, ymin: ymax - height * outCell.y },
        cellSize: outCell,
        ...(keepStats && statistics ? { statistics } : {}),
      },
      to === undefined ? undefined : realTypeOf(to),
    );
    const { width: srcWidth, height: srcHeight } = src;
    const inputRect = (out: Rect): Rect => {
      if (kind === 'interpolate') {
        const m = METHOD_MARGIN[method];
        const xy = Float64Array.of(kx * (out.x + 0.5), ky * (out.y + 0.5), kx * (out.x + out.width - 0.5), ky * (out.y + out.height - 0.5));
        const r = boundingSourceRect(xy, m, srcWidth, srcHeight);
        const gx = Math.max(0, blurX.length - 1);
        const gy = Math.max(0, blurY.length - 1);
        return { x: r.x - gx, y: r.y - gy, width: r.width + 2 * gx, height: r.height + 2 * gy };
      }
      const [x0] = footprintRange(kx * out.x, kx * (out.x + 1), srcWidth);
      const [, x1] = footprintRange(kx * (out.x + out.width - 1), kx * (out.x + out.width), srcWidth);
      const [y0] = footprintRange(ky * out.y, ky * (out.y + 1), srcHeight);
      const [, y1] = footprintRange(ky * (out.y + out.height - 1), ky * (out.y + out.height), srcHeight);
      return x1 > x0 && y1 > y0 ? { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } : { x: -1, y: -1, width: 1, height: 1 };
    };
    const warnings: string[] = [];
    if (a.InputDataType !== 'Vector-MagDir' && type !== 10) warnings.push('InputDataType only applies to VectorAverage and is ignored');
    return {
      info,
      halo: 0,
      inputRect: (out) => inputRect(out),
      params: {
        kind,
        method,
        kx,
        ky,
        srcWidth,
        srcHeight,
        pixelType: info.pixelType,
        blurX,
        blurY,
        magDir: a.InputDataType === 'Vector-MagDir',
      },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    let s = sourceWindow(inputs[0]!, p.srcWidth, p.srcHeight);
    if (p.kind === 'interpolate') {
      if (p.blurX.length > 1 || p.blurY.length > 1) s = blurred(s, p.blurX, p.blurY);
      interpolateAll(p, s, out.rect, out.bands, out.mask);
    } else {
      aggregateAll(p, s, out.rect, out.bands, out.mask);
    }
  },
});

function interpolateAll(p: ResampleParams, s: SourceWindow, r: Rect, bands: Plane[], mask: Uint8Array): void {
  const nb = bands.length;
  const v = new Float64Array(nb);
  const wx = new Float64Array(4);
  const wy = new Float64Array(4);
  for (let j = 0; j < r.height; j++) {
    const sy = p.ky * (r.y + j + 0.5);
    for (let i = 0; i < r.width; i++) {
      const o = j * r.width + i;
      if (!interpolate(s, p.method, p.kx * (r.x + i + 0.5), sy, v, wx, wy)) {
        mask[o] = 0;
        continue;
      }
      for (let b = 0; b < nb; b++) storeValue(bands[b]!, o, v[b]!, p.pixelType);
    }
  }
}

function aggregateAll(p: ResampleParams, s: SourceWindow, r: Rect, bands: Plane[], mask: Uint8Array): void {
  const nb = bands.length;
  const acc = new Float64Array(Math.max(nb, 2));
  const counts = new Map<number, number>();
  for (let j = 0; j < r.height; j++) {
    const fy0 = p.ky * (r.y + j);
    const fy1 = p.ky * (r.y + j + 1);
    const [y0, y1] = footprintRange(fy0, fy1, p.srcHeight);
    for (let i = 0; i < r.width; i++) {
      const o = j * r.width + i;
      const fx0 = p.kx * (r.x + i);
      const fx1 = p.kx * (r.x + i + 1);
      const [x0, x1] = footprintRange(fx0, fx1, p.srcWidth);
      let ok = false;
      switch (p.kind) {
        case 'average': {
          let wsum = 0;
          acc.fill(0);
          for (let y = y0; y < y1; y++) {
            const wyy = edgeWeight(y, y0, y1, fy0, fy1);
            for (let x = x0; x < x1; x++) {
              const k = validAt(s, x, y);
              if (k < 0) continue;
              const w = wyy * edgeWeight(x, x0, x1, fx0, fx1);
              wsum += w;
              for (let b = 0; b < nb; b++) acc[b]! += w * s.bands[b]![k]!;
            }
          }
          if (wsum > 0) {
            ok = true;
            for (let b = 0; b < nb; b++) storeValue(bands[b]!, o, acc[b]! / wsum, p.pixelType);
          }
          break;
        }
        case 'minimum':
        case 'maximum': {
          const max = p.kind === 'maximum';
          for (let b = 0; b < nb; b++) {
            const src = s.bands[b]!;
            let best = max ? -Infinity : Infinity;
            let any = false;
            for (let y = y0; y < y1; y++) {
              for (let x = x0; x < x1; x++) {
                const k = validAt(s, x, y);
                if (k < 0) continue;
                const v = src[k]!;
                any = true;
                if (max ? v > best : v < best) best = v;
              }
            }
            if (any) {
              ok = true;
              storeValue(bands[b]!, o, best, p.pixelType);
            }
          }
          break;
        }
        case 'majority': {
          for (let b = 0; b < nb; b++) {
            const src = s.bands[b]!;
            counts.clear();
            let best = 0;
            let bestCount = 0;
            for (let y = y0; y < y1; y++) {
              for (let x = x0; x < x1; x++) {
                const k = validAt(s, x, y);
                if (k < 0) continue;
                const v = src[k]!;
                const c = (counts.get(v) ?? 0) + 1;
                counts.set(v, c);
                if (c > bestCount) {
                  bestCount = c;
                  best = v;
                }
              }
            }
            if (bestCount > 0) {
              ok = true;
              storeValue(bands[b]!, o, best, p.pixelType);
            }
          }
          break;
        }
        case 'vector': {
          let wsum = 0;
          let wall = 0;
          let su = 0;
          let sv = 0;
          const b0 = s.bands[0]!;
          const b1 = s.bands[1]!;
          for (let y = y0; y < y1; y++) {
            const wyy = edgeWeight(y, y0, y1, fy0, fy1);
            for (let x = x0; x < x1; x++) {
              const w = wyy * edgeWeight(x, x0, x1, fx0, fx1);
              wall += w;
              const k = validAt(s, x, y);
              if (k < 0) continue;
              wsum += w;
              if (p.magDir) {
                const d = (b1[k]! * Math.PI) / 180;
                su += w * b0[k]! * Math.sin(d);
                sv += w * b0[k]! * Math.cos(d);
              } else {
                su += w * b0[k]!;
                sv += w * b1[k]!;
              }
            }
          }
          if (wsum > 0 && wsum >= 0.5 * wall) {
            ok = true;
            const u = su / wsum;
            const v = sv / wsum;
            if (p.magDir) {
              let d = (Math.atan2(u, v) * 180) / Math.PI;
              if (d < 0) d += 360;
              storeValue(bands[0]!, o, Math.hypot(u, v), p.pixelType);
              storeValue(bands[1]!, o, d, p.pixelType);
            } else {
              storeValue(bands[0]!, o, u, p.pixelType);
              storeValue(bands[1]!, o, v, p.pixelType);
            }
          }
          break;
        }
      }
      if (!ok) mask[o] = 0;
    }
  }
}

/**
 * Area weight of source column (or row) `i` of the range [lo, hi) for the footprint [a0, a1):
 * the part of [i, i+1) inside it, except that the first and last pixels of the range take the
 * footprint up to its ends. Inside the raster that is the same thing; where the footprint runs
 * past the raster's edge, the edge pixel stands for the part outside (gdalwarp -r average's
 * weights, checked against GDAL 3.6).
 */
function edgeWeight(i: number, lo: number, hi: number, a0: number, a1: number): number {
  const l = i === lo ? a0 : i > a0 ? i : a0;
  const h = i === hi - 1 ? a1 : i + 1 < a1 ? i + 1 : a1;
  return h > l ? h - l : 0;
}

/** Block index of valid source pixel (x, y) already known to be inside the raster, else -1. */
function validAt(s: SourceWindow, x: number, y: number): number {
  const bx = x - s.x0;
  const by = y - s.y0;
  if (bx < 0 || by < 0 || bx >= s.w || by >= s.h) return -1;
  const k = by * s.w + bx;
  return s.mask[k] === 0 ? -1 : k;
}

/**
 * The window low-passed by a separable Gaussian, normalised over valid pixels inside the raster
 * (numerator and denominator filtered separately, so the result equals the 2-D normalised
 * convolution); NoData pixels stay NoData. Values in float64.
 */
function blurred(s: SourceWindow, gx: readonly number[], gy: readonly number[]): SourceWindow {
  const { w, h } = s;
  const n = w * h;
  const rx = Math.max(0, gx.length - 1);
  const ry = Math.max(0, gy.length - 1);
  // Full kernels, index t + r for offset t.
  const kxw = Float64Array.from({ length: 2 * rx + 1 }, (_, t) => (gx.length === 0 ? 1 : gx[Math.abs(t - rx)]!));
  const kyw = Float64Array.from({ length: 2 * ry + 1 }, (_, t) => (gy.length === 0 ? 1 : gy[Math.abs(t - ry)]!));
  // Validity of each block pixel (inside the raster and unmasked).
  const ok = new Uint8Array(n);
  for (let y = 0; y < h; y++) {
    const ay = s.y0 + y;
    for (let x = 0; x < w; x++) {
      const ax = s.x0 + x;
      ok[y * w + x] = ax >= 0 && ay >= 0 && ax < s.width && ay < s.height && s.mask[y * w + x] !== 0 ? 1 : 0;
    }
  }
  const dh = new Float64Array(n);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let d = 0;
      for (let t = -rx; t <= rx; t++) {
        const xx = x + t;
        if (xx >= 0 && xx < w && ok[y * w + xx]) d += kxw[t + rx]!;
      }
      dh[y * w + x] = d;
    }
  }
  const den = new Float64Array(n);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let d = 0;
      for (let t = -ry; t <= ry; t++) {
        const yy = y + t;
        if (yy >= 0 && yy < h) d += kyw[t + ry]! * dh[yy * w + x]!;
      }
      den[y * w + x] = d;
    }
  }
  const bands: Float64Array[] = [];
  const nh = new Float64Array(n);
  for (const src of s.bands) {
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        let acc = 0;
        for (let t = -rx; t <= rx; t++) {
          const xx = x + t;
          if (xx >= 0 && xx < w && ok[y * w + xx]) acc += kxw[t + rx]! * src[y * w + xx]!;
        }
        nh[y * w + x] = acc;
      }
    }
    const outb = new Float64Array(n);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const i = y * w + x;
        if (!ok[i]) continue;
        let acc = 0;
        for (let t = -ry; t <= ry; t++) {
          const yy = y + t;
          if (yy >= 0 && yy < h) acc += kyw[t + ry]! * nh[yy * w + x]!;
        }
        outb[i] = acc / den[i]!;
      }
    }
    bands.push(outb);
  }
  return { ...s, bands, mask: ok };
}

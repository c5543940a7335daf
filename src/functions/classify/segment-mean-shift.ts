/**
 * SegmentMeanShift — mean-shift segmentation of a 3-band 8-bit image; every pixel takes the mean
 * colour of its segment.
 *
 * Spec: raster-functions.md §2 "SegmentMeanShift"; spec 000 section 8 (arguments, 0..21 ranges,
 * "3-band 8-bit input, a Stretch may precede it"). The vendor documents only the parameter
 * semantics, so results are not bit-identical to the vendor's.
 *
 * Parameters. Per dimension, the radius is taken from the Radius argument when given, else from the
 * Detail argument by `radius = 21 - detail` [spec; the spec's "SpatialRadius = 21 - SpectralRadius"
 * is a copy error, ours], else from the vendor-tool defaults SpectralDetail 15.5, SpatialDetail 15
 * (radii 5.5 and 6) [spec, VPY example]. When both are given and disagree, the Radius wins (warning).
 * Spatial radius hs = SpatialRadius pixels; range radius hr = SpectralRadius colour units (8-bit DN).
 * ASSUMPTION (the vendor does not document the mapping; the spec's suggestion SpectralRadius x 255/21
 * is "ours, unsure"): with that scaling the defaults give hr = 66.8, and linking by chains of close
 * modes then collapses the 349 x 352 Landsat test scene (bands 4-3-2) into 3 segments; in raw colour
 * units the defaults give about 1500 segments of the expected size, so the radius is taken as-is.
 *
 * Algorithm [LIT Comaniciu & Meer 2002; details ours]:
 * 1. Filtering: each valid pixel starts at (x, y, r, g, b) and moves to the mean of the valid input
 *    pixels q with |pos_q - pos|^2 <= hs^2 (Euclidean disk around the current, real position) and
 *    |rgb_q - rgb|^2 <= hr^2 (flat kernels), until the joint shift (pixels and colour units) is
 *    below 0.1 or after 10 iterations [spec]. The converged colour is the pixel's mode.
 * 2. Linking: 8-connected valid neighbours whose modes differ by less than hr (or are equal) join
 *    one segment (union-find).
 * 3. Small segments: while any segment has fewer than MinNumPixelsPerSegment pixels and a
 *    neighbour, it merges into the 8-adjacent segment whose mean colour (of the original pixels)
 *    is closest (ties: the segment met first in row-major order); all small segments of a pass
 *    merge at once using the pass's means, passes repeat until none is left. A segment with no
 *    neighbour (an island in NoData, or the whole image) may stay smaller.
 * 4. MaxNumPixelsPerSegment > 0: a segment larger than it is cut by a grid of s x s cells,
 *    s = floor(sqrt(Max)), anchored at the raster origin [spec "grid split", ours]; the pieces
 *    (each <= Max pixels) may be smaller than the minimum. Must exceed MinNumPixelsPerSegment.
 * 5. Colour: every pixel of a segment gets the mean of the segment's original colours, rounded half
 *    away from zero. BoundariesOnly: pixels with a valid 4-neighbour in another segment are drawn
 *    black (0, 0, 0) over the coloured segments [spec "draw black segment outlines"].
 * Everything is sequential in row-major order, so the result is deterministic.
 *
 * Whole image: segments span the raster, so `inputRect` reads the WHOLE input for every tile and the
 * segmentation runs once per plan (cached, see `whole-image.ts`); tiles copy their window, so the
 * output is identical for any tile size. Limit 4096 x 4096 pixels (LIMIT_EXCEEDED at
 * `rasterFunctionArguments.Raster`). Cost: up to 10 x (2 hs + 1)^2 pixel visits per pixel for the
 * filter, then a few linear passes; memory about 30 bytes per pixel once per plan.
 *
 * Input: exactly 3 bands of U8 (UNSUPPORTED_INPUT otherwise: precede with ExtractBand and a Stretch
 * to U8). Output: 3 bands U8, the input's grid; NoData where the input is NoData (NoData pixels are
 * excluded from every kernel, segment and mean).
 * outputPixelType: the segment colours 0..255 through the engine's cast to any real type that holds
 * them (values unchanged); complex, S8 and sub-byte types are refused when the rule is built.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { roundHalfAway } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import {
  cachedWhole,
  checkWholeImageLimit,
  denseLabels,
  UnionFind,
  wholeImageMemo,
  wholeRect,
  type WholeImageMemo,
} from './whole-image.js';

/** Vendor-tool defaults (spec: the Python example's values). */
const DEFAULT_SPECTRAL_DETAIL = 15.5;
const DEFAULT_SPATIAL_DETAIL = 15;
/** Filter stops after this many iterations or when the shift is below `SHIFT_EPSILON`. */
const MAX_ITERATIONS = 10;
const SHIFT_EPSILON = 0.1;

const args = {
  SpectralDetail: {
    kind: 'number',
    min: 0,
    max: 21,
    doc: 'Spectral detail 0..21 (higher: finer colour distinctions, more segments); SpectralRadius = 21 - SpectralDetail. Default 15.5.',
  },
  SpatialDetail: {
    kind: 'int',
    min: 0,
    max: 21,
    doc: 'Spatial detail 0..21 (higher: smaller neighbourhoods, more segments); SpatialRadius = 21 - SpatialDetail. Default 15.',
  },
  SpectralRadius: {
    kind: 'number',
    min: 0,
    doc: 'Range radius in colour units (8-bit DN); overrides SpectralDetail. Larger: fewer segments.',
  },
  SpatialRadius: { kind: 'int', min: 0, doc: 'Spatial radius in pixels; overrides SpatialDetail. Larger: fewer segments.' },
  MinNumPixelsPerSegment: {
    kind: 'int',
    min: 1,
    default: 20,
    doc: 'Segments smaller than this merge into the adjacent segment with the closest mean colour.',
  },
  MaxNumPixelsPerSegment: {
    kind: 'int',
    default: -1,
    doc: 'Split segments larger than this by a square grid (-1 or 0: no limit); must exceed MinNumPixelsPerSegment.',
  },
  BoundariesOnly: { kind: 'boolean', default: false, doc: 'Draw segment outlines in black over the segment colours.' },
  Raster: { kind: 'raster', default: '$$', doc: 'Three-band 8-bit raster (precede with Stretch/ExtractBand if needed); defaults to $$.' },
} as const satisfies ArgSchema;

export interface MeanShiftOptions {
  /** Spatial radius, pixels. */
  readonly hs: number;
  /** Range radius, colour units (8-bit DN). */
  readonly hr: number;
  readonly minSize: number;
  /** <= 0: no limit. */
  readonly maxSize: number;
  readonly boundaries: boolean;
}

export interface SegmentMeanShiftParams extends MeanShiftOptions {
  readonly raster: number;
  readonly width: number;
  readonly height: number;
  /** The segmentation of the whole raster, computed by the first tile (whole-image.ts). */
  readonly segments: WholeImageMemo<{ readonly rgb: Uint8Array; readonly mask: Uint8Array }>;
}

const at = argPaths(args);

export const segmentMeanShift = defineFunction<typeof args, SegmentMeanShiftParams>({
  name: 'SegmentMeanShift',
  summary: 'Mean-shift segmentation of a 3-band 8-bit image; segments coloured by their mean.',
  variableName: 'Raster',
  family: 'classify',
  codes: 'colour channels',
  verification: 'hand: small images and invariants (segment sizes, means, radius monotonicity); no exact independent tool',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    if (src.bandCount !== 3 || src.pixelType !== 'U8') {
      throw unsupportedInput(
        at('Raster'),
        `SegmentMeanShift needs a three-band 8-bit (U8) raster, got ${src.bandCount} band(s) of ${src.pixelType}; ` +
          'precede it with ExtractBand (3 bands) and a Stretch with outputPixelType U8',
      );
    }
    const warnings: string[] = [];
    const radius = (r: number | undefined, detail: number | undefined, fallback: number, rName: string, dName: string): number => {
      if (r !== undefined) {
        if (detail !== undefined && Math.abs(21 - detail - r) > 1e-9) {
          warnings.push(`${rName} ${r} and ${dName} ${detail} disagree (${rName} = 21 - ${dName}); ${rName} is used`);
        }
        return r;
      }
      return 21 - (detail ?? fallback);
    };
    const spectral = radius(a.SpectralRadius, a.SpectralDetail, DEFAULT_SPECTRAL_DETAIL, 'SpectralRadius', 'SpectralDetail');
    const spatial = radius(a.SpatialRadius, a.SpatialDetail, DEFAULT_SPATIAL_DETAIL, 'SpatialRadius', 'SpatialDetail');
    const maxSize = a.MaxNumPixelsPerSegment;
    if (maxSize > 0 && maxSize <= a.MinNumPixelsPerSegment) {
      throw invalidArgument(
        at('MaxNumPixelsPerSegment'),
        `MaxNumPixelsPerSegment (${maxSize}) must exceed MinNumPixelsPerSegment (${a.MinNumPixelsPerSegment}); use -1 for no limit`,
      );
    }
    if (maxSize < -1) throw invalidArgument(at('MaxNumPixelsPerSegment'), `must be -1 (no limit) or positive, got ${maxSize}`);
    checkWholeImageLimit('SegmentMeanShift', src.width, src.height, at('Raster'));
    const { statistics: _s, histograms: _h, colormap: _c, constant: _k, bandNames: _b, ...rest } = src;
    const info: RasterInfo = { ...rest, bandCount: 3, pixelType: 'U8' };
    const params: SegmentMeanShiftParams = {
      raster: a.Raster,
      width: src.width,
      height: src.height,
      hs: spatial,
      hr: spectral,
      minSize: a.MinNumPixelsPerSegment,
      maxSize,
      boundaries: a.BoundariesOnly,
      segments: wholeImageMemo(),
    };
    return {
      info,
      halo: 0,
      inputRect: () => wholeRect(src.width, src.height),
      params,
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const blk = inputs[p.raster]!;
    const seg = cachedWhole(p.segments, [blk], () => {
      const s = meanShiftSegments(blk.bands as Uint8Array[], blk.mask, p.width, p.height, p);
      return { rgb: s.rgb, mask: blk.mask.slice() };
    });
    const { width: W, height: H } = p;
    const { x: ox, y: oy, width: ow, height: oh } = out.rect;
    const [r, g, b] = out.bands as [Uint8Array, Uint8Array, Uint8Array];
    const om = out.mask;
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
        if (seg.mask[i] === 0) {
          om[o] = 0;
          continue;
        }
        r[o] = seg.rgb[3 * i]!;
        g[o] = seg.rgb[3 * i + 1]!;
        b[o] = seg.rgb[3 * i + 2]!;
      }
    }
  },
});

export interface Segmentation {
  /** Segment of each pixel (-1: NoData), numbered in row-major order of first pixels. */
  readonly labels: Int32Array;
  readonly count: number;
  /** Output colour of each pixel (r, g, b interleaved); boundaries black when asked. */
  readonly rgb: Uint8Array;
  /** Mean colour of each segment (r, g, b interleaved, unrounded). */
  readonly means: Float64Array;
  readonly sizes: Int32Array;
}

/** Mean-shift filter: the converged colour (mode) of every valid pixel, r, g, b interleaved. */
function meanShiftModes(bands: readonly Uint8Array[], mask: Uint8Array, W: number, H: number, hs: number, hr: number): Float32Array {
  const [R, G, B] = bands as [Uint8Array, Uint8Array, Uint8Array];
  const modes = new Float32Array(3 * W * H);
  const hs2 = hs * hs;
  const hr2 = hr * hr;
  const eps2 = SHIFT_EPSILON * SHIFT_EPSILON;
  for (let y0 = 0; y0 < H; y0++) {
    for (let x0 = 0; x0 < W; x0++) {
      const i0 = y0 * W + x0;
      if (mask[i0] === 0) continue;
      let px = x0;
      let py = y0;
      let cr = R[i0]!;
      let cg = G[i0]!;
      let cb = B[i0]!;
      for (let it = 0; it < MAX_ITERATIONS; it++) {
        const xa = Math.max(0, Math.ceil(px - hs));
        const xb = Math.min(W - 1, Math.floor(px + hs));
        const ya = Math.max(0, Math.ceil(py - hs));
        const yb = Math.min(H - 1, Math.floor(py + hs));
        let n = 0;
        let sx = 0;
        let sy = 0;
        let sr = 0;
        let sg = 0;
        let sb = 0;
        for (let y = ya; y <= yb; y++) {
          const dy = y - py;
          const dy2 = dy * dy;
          const row = y * W;
          for (let x = xa; x <= xb; x++) {
            const dx = x - px;
            if (dx * dx + dy2 > hs2) continue;
            const q = row + x;
            if (mask[q] === 0) continue;
            const dr = R[q]! - cr;
            const dg = G[q]! - cg;
            const db = B[q]! - cb;
            if (dr * dr + dg * dg + db * db > hr2) continue;
            n++;
            sx += x;
            sy += y;
            sr += R[q]!;
            sg += G[q]!;
            sb += B[q]!;
          }
        }
        if (n === 0) break;
        const nx = sx / n;
        const ny = sy / n;
        const nr = sr / n;
        const ng = sg / n;
        const nb = sb / n;
        const shift2 = (nx - px) ** 2 + (ny - py) ** 2 + (nr - cr) ** 2 + (ng - cg) ** 2 + (nb - cb) ** 2;
        px = nx;
        py = ny;
        cr = nr;
        cg = ng;
        cb = nb;
        if (shift2 < eps2) break;
      }
      modes[3 * i0] = cr;
      modes[3 * i0 + 1] = cg;
      modes[3 * i0 + 2] = cb;
    }
  }
  return modes;
}

/** The whole segmentation (steps 1-5 of the header). */
export function meanShiftSegments(bands: readonly Uint8Array[], mask: Uint8Array, W: number, H: number, o: MeanShiftOptions): Segmentation {
  const [R, G, B] = bands as [Uint8Array, Uint8Array, Uint8Array];
  const N = W * H;
  const modes = meanShiftModes(bands, mask, W, H, o.hs, o.hr);

  // 2. Link 8-connected neighbours with close modes.
  const uf = new UnionFind(N);
  const hr2 = o.hr * o.hr;
  const close = (i: number, j: number): boolean => {
    const dr = modes[3 * i]! - modes[3 * j]!;
    const dg = modes[3 * i + 1]! - modes[3 * j + 1]!;
    const db = modes[3 * i + 2]! - modes[3 * j + 2]!;
    const d2 = dr * dr + dg * dg + db * db;
    return d2 < hr2 || d2 === 0;
  };
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const i = y * W + x;
      if (mask[i] === 0) continue;
      if (x > 0 && mask[i - 1] !== 0 && close(i, i - 1)) uf.union(i, i - 1);
      if (y > 0) {
        const up = i - W;
        if (x > 0 && mask[up - 1] !== 0 && close(i, up - 1)) uf.union(i, up - 1);
        if (mask[up] !== 0 && close(i, up)) uf.union(i, up);
        if (x < W - 1 && mask[up + 1] !== 0 && close(i, up + 1)) uf.union(i, up + 1);
      }
    }
  }

  // 3. Merge small segments into their closest-coloured neighbour, pass by pass.
  let { labels, count } = denseLabels(uf, mask);
  let stats = segmentStats(labels, count, R, G, B);
  for (;;) {
    const { sizes, means, first } = stats;
    let small = 0;
    for (let l = 0; l < count; l++) if (sizes[l]! < o.minSize) small++;
    if (small === 0) break;
    const best = new Int32Array(count).fill(-1);
    const bestD = new Float64Array(count).fill(Infinity);
    const consider = (a: number, b: number): void => {
      // a is small; b a neighbour: keep the closest mean, ties to the lower label.
      const dr = means[3 * a]! - means[3 * b]!;
      const dg = means[3 * a + 1]! - means[3 * b + 1]!;
      const db = means[3 * a + 2]! - means[3 * b + 2]!;
      const d = dr * dr + dg * dg + db * db;
      if (d < bestD[a]! || (d === bestD[a]! && b < best[a]!)) {
        bestD[a] = d;
        best[a] = b;
      }
    };
    const pair = (i: number, j: number): void => {
      const a = labels[i]!;
      const b = labels[j]!;
      if (b < 0 || a === b) return;
      if (sizes[a]! < o.minSize) consider(a, b);
      if (sizes[b]! < o.minSize) consider(b, a);
    };
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const i = y * W + x;
        if (labels[i]! < 0) continue;
        if (x < W - 1) pair(i, i + 1);
        if (y < H - 1) {
          const dn = i + W;
          pair(i, dn);
          if (x < W - 1) pair(i, dn + 1);
          if (x > 0) pair(i, dn - 1);
        }
      }
    }
    let merged = 0;
    for (let l = 0; l < count; l++) {
      if (best[l]! >= 0) {
        uf.union(first[l]!, first[best[l]!]!);
        merged++;
      }
    }
    if (merged === 0) break;
    ({ labels, count } = denseLabels(uf, mask));
    stats = segmentStats(labels, count, R, G, B);
  }

  // 4. Grid split of oversized segments.
  if (o.maxSize > 0 && stats.sizes.some((s) => s > o.maxSize)) {
    const s = Math.max(1, Math.floor(Math.sqrt(o.maxSize)));
    const cellsX = Math.ceil(W / s);
    const cellsY = Math.ceil(H / s);
    const piece = new Map<number, number>();
    const next = new Int32Array(N).fill(-1);
    let n = 0;
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const i = y * W + x;
        const l = labels[i]!;
        if (l < 0) continue;
        const key = stats.sizes[l]! > o.maxSize ? count + l * cellsX * cellsY + Math.floor(y / s) * cellsX + Math.floor(x / s) : l;
        let id = piece.get(key);
        if (id === undefined) {
          id = n++;
          piece.set(key, id);
        }
        next[i] = id;
      }
    }
    labels = next;
    count = n;
    stats = segmentStats(labels, count, R, G, B);
  }

  // 5. Colours (and outlines).
  const { means, sizes } = stats;
  const rgb = new Uint8Array(3 * N);
  const colour = new Uint8Array(3 * count);
  for (let l = 0; l < 3 * count; l++) colour[l] = roundHalfAway(means[l]!);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const i = y * W + x;
      const l = labels[i]!;
      if (l < 0) continue;
      if (o.boundaries) {
        const edge =
          (x > 0 && labels[i - 1]! >= 0 && labels[i - 1] !== l) ||
          (x < W - 1 && labels[i + 1]! >= 0 && labels[i + 1] !== l) ||
          (y > 0 && labels[i - W]! >= 0 && labels[i - W] !== l) ||
          (y < H - 1 && labels[i + W]! >= 0 && labels[i + W] !== l);
        if (edge) continue; // black
      }
      rgb[3 * i] = colour[3 * l]!;
      rgb[3 * i + 1] = colour[3 * l + 1]!;
      rgb[3 * i + 2] = colour[3 * l + 2]!;
    }
  }
  return { labels, count, rgb, means, sizes };
}

function segmentStats(
  labels: Int32Array,
  count: number,
  R: Uint8Array,
  G: Uint8Array,
  B: Uint8Array,
): { sizes: Int32Array; means: Float64Array; first: Int32Array } {
  const sizes = new Int32Array(count);
  const means = new Float64Array(3 * count);
  const first = new Int32Array(count).fill(-1);
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i]!;
    if (l < 0) continue;
    if (first[l]! < 0) first[l] = i;
    sizes[l]!++;
    means[3 * l]! += R[i]!;
    means[3 * l + 1]! += G[i]!;
    means[3 * l + 2]! += B[i]!;
  }
  for (let l = 0; l < count; l++) {
    const s = sizes[l]!;
    means[3 * l]! /= s;
    means[3 * l + 1]! /= s;
    means[3 * l + 2]! /= s;
  }
  return { sizes, means, first };
}

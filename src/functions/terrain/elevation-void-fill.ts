/**
 * ElevationVoidFill: fills NoData voids of an elevation raster by interpolation from the void's rim
 * [spec raster-functions.md "ElevationVoidFill"; spec 000 section 8 table].
 *
 * ## Voids and which are filled
 *
 * A void is an 8-connected region of NoData pixels [spec, ours]. It is filled when
 * - it does not touch the raster edge (ASSUMPTION, spec silent: a NoData region that reaches the
 *   edge is open, like the collar around a rotated scene, and has no rim on that side; filling
 *   "all" voids would otherwise extrapolate over whole collars), and
 * - MaxVoidWidth > 0: its bounding box is at most MaxVoidWidth wide AND high (spatial-reference
 *   units: width in cells x cell size); MaxVoidWidth 0 (default): any size; MaxVoidWidth < 0 (the
 *   spec's -1): nothing is filled (the input passes through).
 * Voids that are not filled stay NoData.
 *
 * ## Interpolation (spec step 3 with its recommended thresholds [ours])
 *
 * The rim is the valid pixels 8-adjacent to the void.
 * - A one-pixel void takes the mean of its 8 neighbours (the spec's "basic method"; ASSUMPTION:
 *   "small void" = one pixel; the spec's iteration is moot because distinct voids never share rim
 *   pixels that are NoData).
 * - Otherwise a plane z = a + b x + c y is fitted to the rim by least squares; when its RMS residual
 *   is at most `PLANE_TOLERANCE` (1 %) of the rim's elevation range the void takes the plane,
 *   otherwise inverse-distance weighting with power 2 over all rim pixels, distances
 *   between pixel centres in ground units (cellX, cellY).
 * Filled values are cast to the input type (integers: rounded half away from zero, saturated), or
 * to the rule's outputPixelType, which replaces it (kept values are cast to it too).
 * The spec's server-side `ShortRangeIDWRadius` and `AddedFrameWidth` are not part of the rendering
 * rule table and are not implemented (unknown arguments are reported as warnings).
 *
 * ## Context, tiles and memory (declared honestly)
 *
 * A void is known only as a whole, so `inputRect` reads, for output rectangle R:
 * - MaxVoidWidth > 0: R grown by Kx = floor(MaxVoidWidth / cellX) columns and Ky rows (clipped to
 *   the raster). A fillable void with a pixel in R lies, with its rim, inside that rectangle; a void
 *   that reaches its border is wider or higher than K cells (or touches the raster edge), so it is
 *   not filled. The decision is therefore the same from every tile, and sums run over the rim in
 *   raster row-major order with coordinates relative to the void's bounding box: tiled equals whole
 *   bit for bit. Memory per tile in flight: (tw + 2Kx) x (th + 2Ky) input pixels plus 8 bytes each
 *   (labels and the flood-fill queue).
 * - MaxVoidWidth 0: the WHOLE raster for every output tile (a void may be as large as the raster):
 *   memory W x H input pixels + 8 bytes each per tile in flight, and every tile reads and scans the
 *   whole input, so the work grows with (number of tiles) x W x H. Rasters (or K windows) above
 *   `MAX_CONTEXT_PIXELS` are refused with LIMIT_EXCEEDED; render whole-raster void fills in large
 *   tiles, or give MaxVoidWidth.
 * IDW costs (void pixels in R) x (rim pixels) per void.
 */
import { EngineError, invalidArgument } from '../../core/errors.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { castValue, isComplex, type PixelType } from '../../core/pixel-type.js';
import type { Rect } from '../../core/rect.js';
import { argPaths } from '../../graph/args.js';
import { realTypeOf, retypedInfo } from '../../graph/output-type.js';
import { defineFunction } from '../../graph/types.js';

/** A void takes the rim's plane when its RMS residual is at most this share of the rim's range. */
const PLANE_TOLERANCE = 0.01;
/** Largest input context (pixels) one output tile may need. */
export const MAX_CONTEXT_PIXELS = 1 << 26;

const args = {
  MaxVoidWidth: {
    kind: 'number',
    default: 0,
    min: -1,
    doc:
      'Largest void to fill (bounding-box width and height, spatial-reference units); 0 fills every void that does not ' +
      'touch the raster edge (reads the whole raster per tile); -1 fills nothing.',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Elevation raster (one band); defaults to the service raster ($$).' },
} as const;

export interface VoidFillParams {
  readonly raster: number;
  readonly fill: boolean;
  /** Largest void in cells (x, y); 0: unlimited. */
  readonly kx: number;
  readonly ky: number;
  readonly cellX: number;
  readonly cellY: number;
  readonly pixelType: PixelType;
  /** The output type differs from the input's: kept values are cast too. */
  readonly convert: boolean;
}

const at = argPaths(args);

export const elevationVoidFill = defineFunction<typeof args, VoidFillParams>({
  name: 'ElevationVoidFill',
  summary: 'Fill NoData voids up to a width from their rim: a plane when it fits, else inverse-distance weighting.',
  variableName: 'Raster',
  family: 'terrain',
  verification: 'reference: NumPy/SciPy implementation of the documented method (golden); hand-derived voids',
  args,

  plan(a, inputs, to) {
    const dem = inputs[a.Raster];
    if (dem === undefined) throw invalidArgument(at('Raster'), 'ElevationVoidFill needs an elevation raster');
    if (dem.bandCount !== 1)
      throw invalidArgument(at('Raster'), `ElevationVoidFill needs a single-band raster, got ${dem.bandCount} bands`);
    if (isComplex(dem.pixelType)) throw invalidArgument(at('Raster'), `ElevationVoidFill needs a real-valued raster, got ${dem.pixelType}`);
    const W = dem.width;
    const H = dem.height;
    const v = a.MaxVoidWidth;
    const kx = v > 0 ? Math.floor(v / dem.cellSize.x + 1e-9) : 0;
    const ky = v > 0 ? Math.floor(v / dem.cellSize.y + 1e-9) : 0;
    // Nothing fills when asked not to, or when the width is under one cell.
    const fill = v === 0 || (v > 0 && kx >= 1 && ky >= 1);
    const warnings = v > 0 && !fill ? [`MaxVoidWidth ${v} is less than one cell: nothing is filled`] : undefined;
    const context = v === 0 ? W * H : Math.min(W, 2 * kx + 1) * Math.min(H, 2 * ky + 1);
    if (fill && context > MAX_CONTEXT_PIXELS) {
      throw new EngineError(
        'LIMIT_EXCEEDED',
        `ElevationVoidFill would need ${context} pixels of context per tile (limit ${MAX_CONTEXT_PIXELS}); give a smaller MaxVoidWidth`,
        { path: at('MaxVoidWidth') },
      );
    }
    const { statistics: _s, histograms: _h, ...rest } = dem;
    // outputPixelType: kept and filled elevations are stored once into it (fills of an S16 DEM
    // asked for F32 keep their fractions); complex: its real component type, then the engine's cast.
    const info: RasterInfo = retypedInfo(rest, to === undefined ? undefined : realTypeOf(to));
    const inputRect = (out: Rect): Rect => {
      if (!fill) return out;
      if (v === 0) return { x: 0, y: 0, width: W, height: H };
      const x0 = Math.max(0, out.x - kx);
      const y0 = Math.max(0, out.y - ky);
      const x1 = Math.min(W, out.x + out.width + kx);
      const y1 = Math.min(H, out.y + out.height + ky);
      return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
    };
    return {
      info,
      halo: Math.max(kx, ky),
      inputRect,
      ...(warnings ? { warnings } : {}),
      params: {
        raster: a.Raster,
        fill,
        kx,
        ky,
        cellX: dem.cellSize.x,
        cellY: dem.cellSize.y,
        pixelType: info.pixelType,
        convert: info.pixelType !== dem.pixelType,
      },
    };
  },

  kernel(p, inputs, out) {
    const blk = inputs[p.raster]!;
    const src = blk.bands[0]!;
    const mask = blk.mask;
    const { x: ix, y: iy, width: iw } = blk.rect;
    const dst = out.bands[0]!;
    const om = out.mask;
    const { x: ox, y: oy, width: ow, height: oh } = out.rect;
    let holes = false;
    const convert = p.convert;
    const t = p.pixelType;
    for (let y = 0; y < oh; y++) {
      const row = (oy + y - iy) * iw + (ox - ix);
      for (let x = 0; x < ow; x++) {
        const i = row + x;
        const o = y * ow + x;
        if (mask[i] !== 0) {
          const v = src[i]!;
          dst[o] = convert ? castValue(v, t) : v;
          om[o] = convert && v !== v ? 0 : 1; // NaN has no integer value
        } else {
          om[o] = 0;
          holes = true;
        }
      }
    }
    if (p.fill && holes) new VoidFiller(p, blk).fill(out);
  },
});

/** Flood fill, rim collection and interpolation over one input block (allocated once per tile). */
class VoidFiller {
  private readonly labels: Int32Array;
  private readonly queue: Int32Array;
  private rimX: Float64Array = new Float64Array(64);
  private rimY: Float64Array = new Float64Array(64);
  private rimZ: Float64Array = new Float64Array(64);
  private rimN = 0;

  constructor(
    private readonly p: VoidFillParams,
    private readonly blk: PixelBlock,
  ) {
    const n = blk.rect.width * blk.rect.height;
    this.labels = new Int32Array(n);
    this.queue = new Int32Array(n);
  }

  fill(out: PixelBlock): void {
    const { x: ix, y: iy, width: iw } = this.blk.rect;
    const mask = this.blk.mask;
    const { x: ox, y: oy, width: ow, height: oh } = out.rect;
    let id = 0;
    for (let y = 0; y < oh; y++) {
      for (let x = 0; x < ow; x++) {
        const i = (oy + y - iy) * iw + (ox + x - ix);
        if (mask[i] !== 0 || this.labels[i] !== 0) continue;
        this.void(i, ++id, out);
      }
    }
  }

  /** Label the void containing block index `start`, and fill its pixels that lie in `out` if it qualifies. */
  private void(start: number, id: number, out: PixelBlock): void {
    const { width: iw, height: ih } = this.blk.rect;
    const mask = this.blk.mask;
    const labels = this.labels;
    const queue = this.queue;
    let head = 0;
    let tail = 0;
    labels[start] = id;
    queue[tail++] = start;
    let minX = iw;
    let maxX = -1;
    let minY = ih;
    let maxY = -1;
    let touches = false;
    while (head < tail) {
      const q = queue[head++]!;
      const qx = q % iw;
      const qy = (q - qx) / iw;
      if (qx < minX) minX = qx;
      if (qx > maxX) maxX = qx;
      if (qy < minY) minY = qy;
      if (qy > maxY) maxY = qy;
      const edge = qx === 0 || qy === 0 || qx === iw - 1 || qy === ih - 1;
      // The block's border: the raster edge, or a void too large for the context. Either way the
      // void is not filled, but it is still labelled completely (within the block) so that no part
      // of it is taken for a void of its own.
      if (edge) touches = true;
      for (let dy = -1; dy <= 1; dy++) {
        if (edge && (qy + dy < 0 || qy + dy >= ih)) continue;
        for (let dx = -1; dx <= 1; dx++) {
          if (edge && (qx + dx < 0 || qx + dx >= iw)) continue;
          const n = q + dy * iw + dx;
          if (mask[n] === 0 && labels[n] === 0) {
            labels[n] = id;
            queue[tail++] = n;
          }
        }
      }
    }
    if (touches) return; // ASSUMPTION: voids touching the raster edge are open regions and stay NoData
    const p = this.p;
    if (p.kx > 0 && (maxX - minX + 1 > p.kx || maxY - minY + 1 > p.ky)) return;

    // The rim, in raster row-major order, coordinates relative to the bounding box's corner.
    const src = this.blk.bands[0]!;
    this.rimN = 0;
    for (let y = minY - 1; y <= maxY + 1; y++) {
      for (let x = minX - 1; x <= maxX + 1; x++) {
        const i = y * iw + x;
        if (mask[i] === 0) continue;
        let adjacent = false;
        for (let dy = -1; dy <= 1 && !adjacent; dy++) {
          if (y + dy < minY || y + dy > maxY) continue;
          for (let dx = -1; dx <= 1; dx++) {
            if (labels[i + dy * iw + dx] === id) {
              adjacent = true;
              break;
            }
          }
        }
        if (adjacent) this.pushRim(x - minX, y - minY, src[i]!);
      }
    }
    const n = this.rimN;
    const rx = this.rimX;
    const ry = this.rimY;
    const rz = this.rimZ;
    if (n === 0) return;

    // Method: one pixel -> mean of the 8 neighbours; else the plane if it fits, else IDW.
    let mode = 0; // 0 mean, 1 plane, 2 IDW
    let a = 0;
    let b = 0;
    let c = 0;
    if (tail === 1) {
      // ASSUMPTION: the spec's "small voids" filled with the mean of the 8 neighbours are one-pixel voids.
      let s = 0;
      for (let k = 0; k < n; k++) s += rz[k]!;
      a = s / n;
    } else {
      let sx = 0,
        sy = 0,
        sxx = 0,
        sxy = 0,
        syy = 0,
        sz = 0,
        sxz = 0,
        syz = 0;
      let zmin = Infinity;
      let zmax = -Infinity;
      for (let k = 0; k < n; k++) {
        const x = rx[k]!;
        const y = ry[k]!;
        const z = rz[k]!;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
        sz += z;
        sxz += x * z;
        syz += y * z;
        if (z < zmin) zmin = z;
        if (z > zmax) zmax = z;
      }
      // Normal equations [n sx sy; sx sxx sxy; sy sxy syy] (a b c) = (sz sxz syz), by Cramer's rule.
      const det = n * (sxx * syy - sxy * sxy) - sx * (sx * syy - sxy * sy) + sy * (sx * sxy - sxx * sy);
      mode = 2;
      if (det !== 0 && Number.isFinite(det)) {
        a = (sz * (sxx * syy - sxy * sxy) - sx * (sxz * syy - sxy * syz) + sy * (sxz * sxy - sxx * syz)) / det;
        b = (n * (sxz * syy - sxy * syz) - sz * (sx * syy - sxy * sy) + sy * (sx * syz - sxz * sy)) / det;
        c = (n * (sxx * syz - sxz * sxy) - sx * (sx * syz - sxz * sy) + sz * (sx * sxy - sxx * sy)) / det;
        let ss = 0;
        for (let k = 0; k < n; k++) {
          const e = rz[k]! - (a + b * rx[k]! + c * ry[k]!);
          ss += e * e;
        }
        // ASSUMPTION (spec: thresholds undocumented; its recommendation): plane when RMS <= 1 % of the rim range.
        if (Math.sqrt(ss / n) <= PLANE_TOLERANCE * (zmax - zmin)) mode = 1;
      }
    }

    // Write the void's pixels that lie in the output rectangle.
    const { x: ix, y: iy } = this.blk.rect;
    const { x: ox, y: oy, width: ow, height: oh } = out.rect;
    const dst = out.bands[0]!;
    const om = out.mask;
    const cx2 = p.cellX * p.cellX;
    const cy2 = p.cellY * p.cellY;
    for (let k = 0; k < tail; k++) {
      const q = queue[k]!;
      const qx = q % iw;
      const qy = (q - qx) / iw;
      const X = qx + ix - ox;
      const Y = qy + iy - oy;
      if (X < 0 || Y < 0 || X >= ow || Y >= oh) continue;
      const x = qx - minX;
      const y = qy - minY;
      let v: number;
      if (mode === 0) v = a;
      else if (mode === 1) v = a + b * x + c * y;
      else {
        let sw = 0;
        let swz = 0;
        for (let r = 0; r < n; r++) {
          const ddx = x - rx[r]!;
          const ddy = y - ry[r]!;
          const w = 1 / (ddx * ddx * cx2 + ddy * ddy * cy2); // power 2: 1 / d^2
          sw += w;
          swz += w * rz[r]!;
        }
        v = swz / sw;
      }
      if (v !== v) continue;
      const o = Y * ow + X;
      dst[o] = castValue(v, p.pixelType);
      om[o] = 1;
    }
  }

  private pushRim(x: number, y: number, z: number): void {
    if (this.rimN === this.rimX.length) {
      const grow = (a: Float64Array): Float64Array => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.rimX = grow(this.rimX);
      this.rimY = grow(this.rimY);
      this.rimZ = grow(this.rimZ);
    }
    this.rimX[this.rimN] = x;
    this.rimY[this.rimN] = y;
    this.rimZ[this.rimN] = z;
    this.rimN++;
  }
}

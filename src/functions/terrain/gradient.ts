/**
 * The terrain family's one 3x3 window reader and Horn (1981) gradient. Slope, Hillshade (and
 * Aspect, ShadedRelief, Curvature when they come) read their gradients only through `HornRows`, so
 * they cannot disagree about a window, an edge or a NoData neighbour.
 *
 * Window naming (row 0 is north), spec §1.6:
 *
 *     a b c      w0 w1 w2
 *     d e f  ==  w3 w4 w5        e = w4 is the centre cell
 *     g h i      w6 w7 w8
 *
 *     gx = dz/dx = ((c + 2f + i) - (a + 2d + g)) * kx     east minus west,   kx = zx / (8 * cellX)
 *     gy = dz/dy = ((g - a) + 2(h - b) + (i - c)) * ky    SOUTH minus NORTH, ky = zy / (8 * cellY)
 *
 * (gy is summed as three column differences so the interior loop can slide along a row; every path
 * below evaluates exactly these two expressions, so a cell gets the same bits whichever path, tile
 * size or tile position computes it.)
 *
 * ## Edge and NoData policy (one policy, identical whole or tiled)
 *
 * The output at raster cell (X, Y) depends only on the input pixels within 2 cells of it and on
 * the full raster size (`GradientParams.width/height`, fixed in `plan`), never on where a tile
 * starts: the kernel's input block is its output rect grown by the halo, and pixels outside the
 * raster or NoData have mask 0. A NoData centre cell is always NoData.
 *
 * `vendor` mode (default, `RemoveEdgeEffect: false`): the vendor client rule [spec §1.6, VJS
 * surfaceUtils]:
 *   1. a valid centre whose 8 neighbours are valid is computed normally;
 *   2. with exactly 7 valid neighbours the missing one takes the centre's value;
 *   3. with fewer than 7 valid neighbours the cell is NoData;
 *   4. the outermost rows and columns of the raster (no full window) take the gradient of the
 *      nearest cell one step inside: cell (X, Y) uses the window centred on
 *      (clamp(X, 1, W-2), clamp(Y, 1, H-2)) with rules 1-3 applied there, and is valid only when
 *      its own input pixel is valid too (a NoData input stays NoData). Corners copy the diagonal
 *      inner cell. The vendor copies whole result rows/columns, which is the same thing because
 *      every output here is a function of (gx, gy) alone. This needs a halo of 2.
 *      Rasters narrower or shorter than 3 cells have no inner cell: all NoData.
 *
 * `extrapolate` mode (`RemoveEdgeEffect: true`): GDAL `gdaldem -compute_edges`, reproduced exactly
 * (GDAL 3.6 `GDALGeneric3x3Processing` and `ComputeVal`) so gdaldem can verify it (golden cases):
 *   - every valid cell is computed from its own window, the outer ring included;
 *   - a window row outside the raster (top/bottom raster row) is extrapolated linearly,
 *     `2 * edge - inner`, per column; in those two rows a window column outside the raster repeats
 *     the centre column (GDAL's `jmin = j`);
 *   - in the other rows a window column outside the raster is extrapolated, `2 * edge - inner`;
 *   - an extrapolated value is NoData when either pixel it comes from is NoData;
 *   - every NoData neighbour (any number of them) takes the centre's value.
 *   Rasters with fewer than 2 columns or rows: all NoData. Needs a halo of 1.
 *
 * `RemoveEdgeEffect` in the vendor docs is about resampling next to edges (spec §1.6); rasterflow
 * evaluates on the request grid, so it reuses the flag for the question the issue asks about: how
 * to treat cells whose window is incomplete. true = GDAL's compute-edges rule above. [ours]
 *
 * ## Speed
 *
 * `HornRows.compute(y)` fills one output row of gradients: a sliding interior loop (3 loads per
 * cell, no mask test) when the three window rows are all valid over the tile's span (one check per
 * block row, done once per tile), a per-cell 9-mask test when they are not, and a generic
 * per-cell reader only for cells at the raster edge or next to NoData. Functions then turn
 * (gx, gy) into their output in their own tight loop. Nothing allocates per pixel.
 */
import { unsupportedInput } from '../../core/errors.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type Plane } from '../../core/pixel-type.js';
import type { Rect } from '../../core/rect.js';

/** Metres per degree in the vendor client's geographic rule (spec §1.6; GDAL suggests 111120). */
export const METERS_PER_DEGREE = 111000;

export const EdgeMode = { Vendor: 0, Extrapolate: 1 } as const;
export type EdgeMode = (typeof EdgeMode)[keyof typeof EdgeMode];

/** Plain, structured-cloneable parameters of the window reader (computed in `plan`). */
export interface GradientParams {
  /** Full raster size, so the kernel can tell the raster edge from a tile edge. */
  readonly width: number;
  readonly height: number;
  /** zx / (8 * cellX) and zy / (8 * cellY), in ground units. */
  readonly kx: number;
  readonly ky: number;
  readonly edges: EdgeMode;
}

/** Halo the window reader needs for a mode. */
export const gradientHalo = (edges: EdgeMode): number => (edges === EdgeMode.Vendor ? 2 : 1);

export function gradientParams(
  dem: RasterInfo,
  z: { readonly x: number; readonly y: number },
  cell: { readonly x: number; readonly y: number },
  removeEdgeEffect: boolean,
): GradientParams {
  return {
    width: dem.width,
    height: dem.height,
    kx: z.x / (8 * cell.x),
    ky: z.y / (8 * cell.y),
    edges: removeEdgeEffect ? EdgeMode.Extrapolate : EdgeMode.Vendor,
  };
}

/**
 * The DEM input of a terrain function, checked at plan time. Complex DEMs are rejected; of a
 * multi-band DEM the first band is used (GDAL's `-b 1` default) with a warning.
 * ASSUMPTION (spec silent): first band of a multi-band DEM.
 */
export function demInfo(
  inputs: readonly RasterInfo[],
  index: number,
  fnName: string,
): { readonly dem: RasterInfo; readonly warnings: readonly string[] } {
  const dem = inputs[index];
  if (dem === undefined) throw unsupportedInput('rasterFunctionArguments.DEM', `${fnName} needs a DEM raster`);
  if (isComplex(dem.pixelType)) {
    throw unsupportedInput('rasterFunctionArguments.DEM', `${fnName} needs a real-valued DEM, got ${dem.pixelType}`);
  }
  const warnings = dem.bandCount > 1 ? [`${fnName}: the DEM has ${dem.bandCount} bands; band 1 is used`] : [];
  return { dem, warnings };
}

/**
 * The vendor's pixel-size-adjusted z-factor for SlopeType 3 (SCALED) [spec: Slope, Hillshade]:
 * z + cell^PSPower * PSZFactor, per axis, with the cell size in metres.
 */
export const scaledZ = (z: number, cell: number, psPower: number, psZFactor: number): number =>
  z + cell ** psPower * psZFactor;

// Scratch for the generic reader (synchronous use only; never escapes a call).
const WIN = new Float64Array(9);
const OK = new Uint8Array(9);

/**
 * Gradients of one output row at a time. Create one per kernel call (per tile), then call
 * `compute(y)` for each output row y and read `gx[x]`, `gy[x]`, `ok[x]` (ok 0 = NoData).
 */
export class HornRows {
  readonly gx: Float64Array;
  readonly gy: Float64Array;
  readonly ok: Uint8Array;
  private readonly p: GradientParams;
  private readonly src: Plane;
  private readonly mask: Uint8Array;
  private readonly out: Rect;
  /** Block column/row of raster (0, 0): block index of (X, Y) is (Y - by) * bw + (X - bx). */
  private readonly bx: number;
  private readonly by: number;
  private readonly bw: number;
  private readonly bh: number;
  /** Output columns whose window lies inside the raster: [xa, xb). */
  private readonly xa: number;
  private readonly xb: number;
  /** Per block row: 1 when the mask is all valid over columns [xa - 1, xb]. */
  private readonly rowValid: Uint8Array;

  constructor(p: GradientParams, dem: PixelBlock, out: Rect) {
    this.p = p;
    this.src = dem.bands[0]!;
    this.mask = dem.mask;
    this.out = out;
    this.bx = dem.rect.x;
    this.by = dem.rect.y;
    this.bw = dem.rect.width;
    this.bh = dem.rect.height;
    this.gx = new Float64Array(out.width);
    this.gy = new Float64Array(out.width);
    this.ok = new Uint8Array(out.width);
    this.xa = Math.max(out.x, 1);
    this.xb = Math.min(out.x + out.width, p.width - 1);
    this.rowValid = new Uint8Array(this.bh);
    if (this.xa < this.xb) {
      const c0 = this.xa - 1 - this.bx;
      const c1 = this.xb - this.bx; // inclusive
      const m = this.mask;
      for (let r = 0; r < this.bh; r++) {
        const row = r * this.bw;
        let all = 1;
        for (let c = row + c0; c <= row + c1; c++) {
          if (m[c] === 0) {
            all = 0;
            break;
          }
        }
        this.rowValid[r] = all;
      }
    }
  }

  /** Fill gx, gy, ok for output row `y` (0-based within the output rect). */
  compute(y: number): void {
    const p = this.p;
    const W = p.width;
    const H = p.height;
    const ok = this.ok;
    const Y = this.out.y + y;
    const vendor = p.edges === EdgeMode.Vendor;
    if (vendor ? W < 3 || H < 3 : W < 2 || H < 2) {
      ok.fill(0);
      return;
    }
    // Row of the window centre: the vendor rule copies the outer rows from the inner neighbour.
    const sy = vendor ? (Y < 1 ? 1 : Y > H - 2 ? H - 2 : Y) : Y;
    const x0 = this.out.x;
    const x1 = x0 + this.out.width;
    if (sy < 1 || sy > H - 2) {
      // Extrapolate mode, top or bottom raster row: every cell takes the generic path.
      for (let X = x0; X < x1; X++) this.generic(X, Y, X, sy, X - x0);
      return;
    }
    const xa = this.xa;
    const xb = this.xb;
    for (let X = x0; X < Math.min(xa, x1); X++) this.generic(X, Y, vendor ? 1 : X, sy, X - x0);
    for (let X = Math.max(xb, x0); X < x1; X++) this.generic(X, Y, vendor ? W - 2 : X, sy, X - x0);
    if (xa >= xb) return;

    const bw = this.bw;
    const by = this.by;
    const bx = this.bx;
    const rv = this.rowValid;
    const r1 = (sy - by) * bw - bx; // block index of (0, sy)
    const r0 = r1 - bw;
    const r2 = r1 + bw;
    const rc = (Y - by) * bw - bx; // block index of (0, Y): the output cell's own pixel
    const src = this.src;
    const gx = this.gx;
    const gy = this.gy;
    const kx = p.kx;
    const ky = p.ky;
    const o = x0; // gx[X - o]

    if (rv[sy - 1 - by] === 1 && rv[sy - by] === 1 && rv[sy + 1 - by] === 1 && rv[Y - by] === 1) {
      // Fast interior path: all window pixels valid. Slide along the row, carrying the column sums
      // (top + 2 mid + bottom) and differences (bottom - top) of the previous two columns.
      let X = xa;
      let sL = src[r0 + X - 1]! + 2 * src[r1 + X - 1]! + src[r2 + X - 1]!;
      let dL = src[r2 + X - 1]! - src[r0 + X - 1]!;
      let sM = src[r0 + X]! + 2 * src[r1 + X]! + src[r2 + X]!;
      let dM = src[r2 + X]! - src[r0 + X]!;
      for (; X < xb; X++) {
        const t = src[r0 + X + 1]!;
        const m = src[r1 + X + 1]!;
        const b = src[r2 + X + 1]!;
        const sR = t + 2 * m + b;
        const dR = b - t;
        const i = X - o;
        gx[i] = (sR - sL) * kx;
        gy[i] = (dL + 2 * dM + dR) * ky;
        ok[i] = 1;
        sL = sM;
        sM = sR;
        dL = dM;
        dM = dR;
      }
      return;
    }

    // Some pixel near this row is NoData: test the 9 masks of each cell, generic path if any is 0.
    const mk = this.mask;
    for (let X = xa; X < xb; X++) {
      const i = X - o;
      const a = r0 + X;
      const e = r1 + X;
      const g = r2 + X;
      if (
        (mk[a - 1]! & mk[a]! & mk[a + 1]! & mk[e - 1]! & mk[e]! & mk[e + 1]! & mk[g - 1]! & mk[g]! & mk[g + 1]! & mk[rc + X]!) ===
        1
      ) {
        const sL = src[a - 1]! + 2 * src[e - 1]! + src[g - 1]!;
        const sR = src[a + 1]! + 2 * src[e + 1]! + src[g + 1]!;
        gx[i] = (sR - sL) * kx;
        gy[i] = (src[g - 1]! - src[a - 1]! + 2 * (src[g]! - src[a]!) + (src[g + 1]! - src[a + 1]!)) * ky;
        ok[i] = 1;
      } else {
        this.generic(X, Y, X, sy, i);
      }
    }
  }

  /**
   * One cell the slow way: output (X, Y) from the window centred on (sx, sy), with the mode's
   * substitution rules. Writes gx/gy/ok at index i.
   */
  private generic(X: number, Y: number, sx: number, sy: number, i: number): void {
    const p = this.p;
    const W = p.width;
    const H = p.height;
    if (X < 0 || X >= W || Y < 0 || Y >= H || this.maskAt(X, Y) === 0 || this.maskAt(sx, sy) === 0) {
      this.ok[i] = 0;
      return;
    }
    const win = WIN;
    const okw = OK;
    if (p.edges === EdgeMode.Vendor) {
      // (sx, sy) is an inner cell: the whole window lies inside the raster.
      let missing = 0;
      for (let dy = -1, k = 0; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++, k++) {
          const v = this.maskAt(sx + dx, sy + dy);
          okw[k] = v;
          win[k] = this.valueAt(sx + dx, sy + dy);
          if (v === 0) missing++;
        }
      }
      if (missing > 1) {
        this.ok[i] = 0;
        return;
      }
    } else {
      const edgeRow = sy === 0 || sy === H - 1;
      for (let dy = -1, k = 0; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++, k++) {
          let cx = sx + dx;
          const cy = sy + dy;
          if (cx < 0 || cx >= W) {
            if (edgeRow) {
              cx = sx; // GDAL: jmin = j / jmax = j in the first and last rows
            } else {
              // 2 * edge - inner, along the row
              this.extrapolate(sx, cy, sx - dx, cy, k);
              continue;
            }
          }
          if (cy < 0 || cy >= H) {
            this.extrapolate(cx, sy, cx, sy - dy, k); // 2 * edge - inner, along the column
            continue;
          }
          okw[k] = this.maskAt(cx, cy);
          win[k] = this.valueAt(cx, cy);
        }
      }
    }
    const e = win[4]!;
    for (let k = 0; k < 9; k++) if (okw[k] === 0) win[k] = e;
    // Exactly the interior expressions (same operand order), so every path gives the same bits.
    const sL = win[0]! + 2 * win[3]! + win[6]!;
    const sR = win[2]! + 2 * win[5]! + win[8]!;
    this.gx[i] = (sR - sL) * p.kx;
    this.gy[i] = (win[6]! - win[0]! + 2 * (win[7]! - win[1]!) + (win[8]! - win[2]!)) * p.ky;
    this.ok[i] = 1;
  }

  /** WIN[k] = 2 * (ex, ey) - (ix, iy); valid when both are (GDAL INTERPOL). */
  private extrapolate(ex: number, ey: number, ix: number, iy: number, k: number): void {
    const ok = this.maskAt(ex, ey) & this.maskAt(ix, iy);
    OK[k] = ok;
    WIN[k] = ok === 1 ? 2 * this.valueAt(ex, ey) - this.valueAt(ix, iy) : 0;
  }

  private maskAt(X: number, Y: number): number {
    if (X < 0 || Y < 0 || X >= this.p.width || Y >= this.p.height) return 0;
    const c = X - this.bx;
    const r = Y - this.by;
    if (c < 0 || r < 0 || c >= this.bw || r >= this.bh) return 0; // outside the block: a caller bug
    return this.mask[r * this.bw + c]!;
  }

  private valueAt(X: number, Y: number): number {
    const c = X - this.bx;
    const r = Y - this.by;
    if (c < 0 || r < 0 || c >= this.bw || r >= this.bh) return 0;
    return this.src[r * this.bw + c]!;
  }
}

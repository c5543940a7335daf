/**
 * The terrain family's one 3x3 window reader, its cell geometry (metres per row for geographic
 * DEMs) and the Horn (1981) gradient. Slope, Hillshade, Aspect and Curvature read their windows
 * only through `WindowRows` (Curvature directly, the others through `HornRows`), so they cannot
 * disagree about a window, an edge, a NoData neighbour or the size of a cell.
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
 * (gy is summed as three column differences so the interior loop can slide along a row. Every path
 * evaluates these expressions through hornSum/hornGx/hornGy in the same order, so a cell gets the
 * same bits whichever path, tile size or tile position computes it.)
 *
 * ## Edge and NoData policy (one policy, identical whole or tiled)
 *
 * The output at raster cell (X, Y) depends only on the input pixels within 2 cells of it and on
 * the full raster size (`WindowParams.width/height`, fixed in `plan`), never on where a tile
 * starts: the kernel's input block is its output rect grown by the halo, and pixels outside the
 * raster or NoData have mask 0. A NoData centre cell is always NoData.
 *
 * `vendor` mode (default, `RemoveEdgeEffect: false`): the vendor client rule [spec §1.6, VJS
 * surfaceUtils]:
 *   1. a valid centre whose 8 neighbours are valid is computed normally;
 *   2. with exactly 7 valid neighbours the missing one takes the centre's value;
 *   3. with fewer than 7 valid neighbours the cell is NoData;
 *   4. the outermost rows and columns of the raster (no full window) take the result of the
 *      nearest cell one step inside: cell (X, Y) uses the window centred on
 *      (clamp(X, 1, W-2), clamp(Y, 1, H-2)) with rules 1-3 applied there (and that row's cell
 *      size), and is valid only when its own input pixel is valid too (a NoData input stays
 *      NoData). Corners copy the diagonal inner cell. The vendor copies whole result rows/columns,
 *      which is the same thing because the outputs are functions of the window alone. This needs
 *      a halo of 2. Rasters narrower or shorter than 3 cells have no inner cell: all NoData.
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
 * ## Cell sizes: any CRS
 *
 * Projected DEMs: the cell size in CRS units (the z-factor converts z to those units, as in GDAL
 * and the vendor). Geographic DEMs (degrees), `GeographicCellSize` (a rasterflow extension):
 *   - `Geodesic` (default): metres PER ROW on the raster's ellipsoid (WGS 84 unless its spatial
 *     reference names another), from the latitude of the row's centre: x = N(phi) cos(phi) dlon
 *     (the length of the cell's stretch of parallel, N the prime-vertical radius), y = M(phi) dlat
 *     (the meridian arc, M the meridional radius), angles in radians; the engine's one geodesy,
 *     core/geodesy.ts, which SurfaceParamFunction uses too. A flat factor makes east-west
 *     gradients wrong by 1/cos(latitude) (35 % at 50 degrees). The factors depend only on the
 *     absolute raster row, so tiles agree with the whole.
 *   - `Vendor111000`: the vendor client's flat 111000 m per degree on both axes, under each
 *     function's own z-factor condition (spec §1.6), reproducing the vendor exactly.
 * SCALED (SlopeType 3) adjusts the z-factor with the cell size in metres (`metersPerUnit` of a
 * projected CRS; geographic cells are always converted for it).
 *
 * ## Speed
 *
 * `WindowRows.compute(y)` prepares one output row. Cells whose window is complete and valid over
 * the whole row span (checked once per block row, 4 mask bytes at a time) form the row's fast
 * span: the calling function computes them in a sliding loop (3 loads per cell, no mask test)
 * fused with its own output formula, which is what makes it as fast as a hand-written loop. For
 * every other cell the reader writes the 9 window values, edge and NoData rules applied, into
 * `win` (rows that touch NoData test the 9 masks per cell and copy; only cells at the raster edge
 * or next to NoData go through the generic reader). Nothing allocates per pixel. The wasm path
 * (src/wasm/terrain.ts) does less per row: it scans the mask's rows all at once in wasm
 * (`presetRows`) and asks `plain(y)` first, which for a row whose fast span is the whole row (no
 * raster edge column, no NoData near it) sets the span without `compute`'s per-cell work. (A two-pass design
 * that stored gx/gy rows and converted them afterwards measured 1.5-2x slower than the plain loop
 * on Node 20.)
 */
import { invalidArgument } from '../../core/errors.js';
import { type GeodesicRows, geodesicRows, rowCellSize, VENDOR_METERS_PER_DEGREE } from '../../core/geodesy.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex, type Plane } from '../../core/pixel-type.js';
import type { Rect } from '../../core/rect.js';

/** SlopeType codes shared by Slope, Hillshade (and ShadedRelief). */
export const SlopeType = { Degree: 1, PercentRise: 2, Scaled: 3 } as const;

/** How a geographic DEM's cell size becomes metres (`GeographicCellSize`, a rasterflow extension). */
export const GeographicCellSize = { Geodesic: 'Geodesic', Vendor111000: 'Vendor111000' } as const;
export type GeographicCellSize = (typeof GeographicCellSize)[keyof typeof GeographicCellSize];

/** The edge-policy argument every 3x3 terrain function takes. */
export const removeEdgeEffectArg = {
  kind: 'boolean',
  default: false,
  doc:
    'false: edge rows/columns copy the inner neighbour and a cell with 2+ NoData neighbours is NoData (vendor rule); ' +
    'true: compute every valid cell, extrapolating past the raster edge and filling NoData neighbours with the centre (gdaldem -compute_edges).',
} as const;

/** The geographic cell-size argument every 3x3 terrain function takes (rasterflow extension). */
export const geographicCellSizeArg = {
  kind: 'string',
  values: [GeographicCellSize.Geodesic, GeographicCellSize.Vendor111000],
  default: GeographicCellSize.Geodesic,
  doc:
    "rasterflow extension, geographic (degree) DEMs only. Geodesic (default): metres per row at the row's latitude on the " +
    "raster's ellipsoid (WGS 84 unless its spatial reference names another) " +
    "(N cos(lat) dlon across, M dlat along the meridian); Vendor111000: the vendor client's flat 111000 m per degree under its z-factor conditions.",
} as const;

/** The arguments every Horn-gradient function takes, declared once (wire names, docs, defaults). */
export const surfaceArgs = {
  ZFactor: { kind: 'number', default: 1, doc: 'Multiplier that converts z units to ground (x, y) units.' },
  SlopeType: {
    kind: 'enum',
    values: [1, 2, 3],
    // ADJUSTED: the JS client's name for SCALED (its hillshade scalingType "adjusted" writes 3).
    names: { DEGREE: 1, PERCENTRISE: 2, SCALED: 3, ADJUSTED: 3 },
    default: SlopeType.Degree,
    doc: '1 DEGREE, 2 PERCENTRISE, 3 SCALED (z-factor adjusted for pixel size with PSPower and PSZFactor).',
  },
  PSPower: { kind: 'number', default: 0.664, doc: 'Pixel-size power of the SCALED z-factor adjustment.' },
  PSZFactor: { kind: 'number', default: 0.024, doc: 'Pixel-size factor of the SCALED z-factor adjustment.' },
  RemoveEdgeEffect: removeEdgeEffectArg,
  GeographicCellSize: geographicCellSizeArg,
  DEM: { kind: 'raster', default: '$$', aliases: ['Raster'], doc: 'Elevation raster; defaults to the service raster ($$).' },
} as const;

export const EdgeMode = { Vendor: 0, Extrapolate: 1 } as const;
export type EdgeMode = (typeof EdgeMode)[keyof typeof EdgeMode];

/**
 * The ground size of the cells: constant (`x`, `y`), or per row for a geographic DEM in Geodesic
 * mode (`geodesic` set; `x`, `y` then hold the middle row's size, for information only).
 */
export interface CellGeometry {
  readonly x: number;
  readonly y: number;
  readonly geodesic?: GeodesicRows;
}

/** Plain, structured-cloneable parameters of the window reader (computed in `plan`). */
export interface WindowParams {
  /** Full raster size, so the kernel can tell the raster edge from a tile edge. */
  readonly width: number;
  readonly height: number;
  readonly edges: EdgeMode;
  readonly cell: CellGeometry;
}

/** The SCALED z-factor adjustment (SlopeType 3): z + (cell * metersPerUnit)^power * factor. */
export interface ScaledZ {
  readonly power: number;
  readonly factor: number;
  readonly metersPerUnit: number;
}

/** Window parameters plus what turns a window into a Horn gradient. */
export interface GradientParams extends WindowParams {
  /** The z-factor (already doubled by multidirectional Hillshade). */
  readonly z: number;
  readonly scaled?: ScaledZ;
  /** zx / (8 * cellX) and zy / (8 * cellY) for constant cells (per row in Geodesic mode). */
  readonly kx: number;
  readonly ky: number;
}

/** Halo the window reader needs for a mode. */
export const gradientHalo = (edges: EdgeMode): number => (edges === EdgeMode.Vendor ? 2 : 1);

/**
 * The cell geometry of a DEM. `convert`: whether a geographic DEM's degrees become metres (each
 * function's z-factor rule decides; see slope.ts, hillshade.ts). Projected DEMs keep CRS units.
 */
export function cellGeometry(dem: RasterInfo, mode: string, convert: boolean): CellGeometry {
  const cs = dem.cellSize;
  if (dem.spatialReference?.geographic !== true || !convert) return { x: cs.x, y: cs.y };
  if (mode === GeographicCellSize.Vendor111000) return { x: cs.x * VENDOR_METERS_PER_DEGREE, y: cs.y * VENDOR_METERS_PER_DEGREE };
  const geodesic = geodesicRows(dem)!;
  const mid = { x: 0, y: 0 };
  rowCellSize(geodesic, (dem.height - 1) / 2, mid);
  return { x: mid.x, y: mid.y, geodesic };
}

/**
 * Geodesic mode's z-factor rule [ours]: degrees become metres unless |ZFactor| < 0.001, which is
 * taken as a degrees-to-metres factor the client applied itself (the vendor's desktop docs tell
 * users to pick 0.00000898 .. 0.00005156 by latitude; a z-unit conversion such as feet 0.3048 or
 * millimetres 0.001 is larger).
 */
export const geodesicConverts = (zFactor: number): boolean => Math.abs(zFactor) >= 0.001;

/**
 * Metres per ground unit for the SCALED adjustment: a projected CRS's linear unit (1 when
 * unknown); 1 for geographic DEMs, whose cells SCALED always converts to metres.
 */
export const metersPerUnit = (dem: RasterInfo): number =>
  dem.spatialReference?.geographic === true ? 1 : (dem.spatialReference?.metersPerUnit ?? 1);

export function windowParams(dem: RasterInfo, cell: CellGeometry, removeEdgeEffect: boolean): WindowParams {
  return {
    width: dem.width,
    height: dem.height,
    edges: removeEdgeEffect ? EdgeMode.Extrapolate : EdgeMode.Vendor,
    cell,
  };
}

/** Horn factors for cell sizes (cx, cy) in ground units, written to out.kx / out.ky. */
function hornFactors(z: number, scaled: ScaledZ | undefined, cx: number, cy: number, out: { kx: number; ky: number }): void {
  const zx = scaled ? scaledZ(z, cx * scaled.metersPerUnit, scaled.power, scaled.factor) : z;
  const zy = scaled ? scaledZ(z, cy * scaled.metersPerUnit, scaled.power, scaled.factor) : z;
  out.kx = zx / (8 * cx);
  out.ky = zy / (8 * cy);
}

export function gradientParams(
  dem: RasterInfo,
  z: number,
  cell: CellGeometry,
  removeEdgeEffect: boolean,
  scaled?: ScaledZ,
): GradientParams {
  const k = { kx: 0, ky: 0 };
  hornFactors(z, scaled, cell.x, cell.y, k);
  return { ...windowParams(dem, cell, removeEdgeEffect), z, ...(scaled ? { scaled } : {}), kx: k.kx, ky: k.ky };
}

/**
 * The DEM input of a terrain function, checked at plan time: one real-valued band (as STYLE's
 * Slope example; GDAL would take band 1, the vendor's client reads pixels[0] of what it is given).
 * `path` is the error path of the DEM argument (`argPaths(args)('DEM')`).
 */
export function demInfo(inputs: readonly RasterInfo[], index: number, fnName: string, path: string): RasterInfo {
  const dem = inputs[index];
  if (dem === undefined) throw invalidArgument(path, `${fnName} needs a DEM raster`);
  if (dem.bandCount !== 1) {
    throw invalidArgument(path, `${fnName} needs a single-band DEM, got ${dem.bandCount} bands`);
  }
  if (isComplex(dem.pixelType)) {
    throw invalidArgument(path, `${fnName} needs a real-valued DEM, got ${dem.pixelType}`);
  }
  return dem;
}

/**
 * The vendor's pixel-size-adjusted z-factor for SlopeType 3 (SCALED) [spec: Slope, Hillshade]:
 * z + cell^PSPower * PSZFactor, per axis, with the cell size in metres.
 */
export const scaledZ = (z: number, cell: number, psPower: number, psZFactor: number): number => z + cell ** psPower * psZFactor;

/**
 * The Horn arithmetic, written once. Every path (the callers' sliding interior loops and
 * `HornRows` over the reader's windows) evaluates exactly these expressions in this order, so a
 * cell gets the same bits whichever path, tile size or tile position computes it.
 *
 *   hornSum(t, m, b)   weighted column sum top + 2 mid + bottom (a + 2d + g, c + 2f + i)
 *   hornGx(sW, sE, kx) (east sum - west sum) * kx
 *   hornGy(dW, dM, dE, ky) ((g - a) + 2 (h - b) + (i - c)) * ky, d = bottom - top per column
 */
export const hornSum = (t: number, m: number, b: number): number => t + 2 * m + b;
export const hornGx = (sumW: number, sumE: number, kx: number): number => (sumE - sumW) * kx;
export const hornGy = (dW: number, dM: number, dE: number, ky: number): number => (dW + 2 * dM + dE) * ky;

/*
 * atan(r) in degrees for r >= 0, without Math.atan (V8's fdlibm port costs about as much as the
 * rest of a slope cell). On [0, 1] an odd polynomial u * P(u^2) whose coefficients were fitted for
 * the smallest maximum error (Lawson-weighted least squares, NumPy); above 1, 90 - atan(1 / r).
 * Maximum error 5.2e-8 degrees over [0, inf), checked in gradient.test.ts: far inside the 1e-3
 * degree agreement with gdaldem, and it is the only arctangent in the family, so every path agrees.
 */
const A0 = 57.29577839927536;
const A1 = -19.098505533568567;
const A2 = 11.457114347385406;
const A3 = -8.163057288859694;
const A4 = 6.232640545666483;
const A5 = -4.706138647073333;
const A6 = 3.152877661086918;
const A7 = -1.6324009175759946;
const A8 = 0.5481680432046695;
const A9 = -0.08647666075964544;

/**
 * atan(u) in degrees for u in [-1, 1] (the polynomial is odd): u * P(u^2) by Estrin's scheme
 * (pairs, then powers u^4 and u^8), a dependency chain of 5 multiply-adds instead of Horner's 10.
 */
export const atanUnitDegrees = (u: number): number => {
  const x = u * u;
  const x2 = x * x;
  const x4 = x2 * x2;
  const p03 = A0 + A1 * x + (A2 + A3 * x) * x2;
  const p47 = A4 + A5 * x + (A6 + A7 * x) * x2;
  return u * (p03 + p47 * x4 + (A8 + A9 * x) * (x4 * x4));
};

export function atanDegrees(r: number): number {
  const inv = r > 1;
  const p = atanUnitDegrees(inv ? 1 / r : r);
  return inv ? 90 - p : p;
}

// Scratch validity flags of one window (synchronous use only; never escapes a call).
const OK = new Uint8Array(9);

/**
 * The window reader, one output row at a time. Create one per kernel call (per tile); for each
 * output row y call `compute(y)`, then:
 *  - cells x in [fastFrom, fastTo) are the caller's to compute with a sliding loop over the
 *    block: their whole window is valid and inside the raster, and the window's rows start at
 *    block indices `top + x - 1`, `mid + x - 1`, `bot + x - 1` (three columns each). The loop
 *    must use the same arithmetic as the caller's per-window formula (see slope.ts, curvature.ts);
 *    it is the only place that needs speed, so it is fused with each function's output formula;
 *  - every other cell has its 9 window values (a..i, edge and NoData rules applied) in
 *    win[9x .. 9x + 8] with ok[x] = 1, or ok[x] = 0 (NoData).
 * When there is no fast span, fastFrom = fastTo = the output width. `sy` is the raster row whose
 * cell size the row uses (the window centre's row: the inner neighbour on the vendor ring).
 */
export class WindowRows {
  /** The DEM band (block planes are row-major over `dem.rect`). */
  readonly src: Plane;
  fastFrom = 0;
  fastTo = 0;
  top = 0;
  mid = 0;
  bot = 0;
  /** Raster row of the window centres of the current output row; -1 when the row is all NoData. */
  sy = -1;
  private readonly p: WindowParams;
  private readonly mask: Uint8Array;
  private readonly out: Rect;
  /** Block column/row of raster (0, 0): block index of (X, Y) is (Y - by) * bw + (X - bx). */
  private readonly bx: number;
  private readonly by: number;
  private readonly bw: number;
  private readonly bh: number;
  /** Raster columns whose window lies inside the raster, within the output: [xa, xb). */
  private readonly xa: number;
  private readonly xb: number;
  /** Per block row: 1 when the mask is all valid over columns [xa - 1, xb], 0 when not, -1 not known yet. */
  private readonly rowValid: Int8Array;
  /** The mask's buffer seen as 32-bit words, for the row scan. */
  private readonly words: Uint32Array | undefined;
  /** Whether `plain` rows may exist: some interior column, and no raster edge column or the vendor rule's. */
  private readonly plainColumns: boolean;
  /**
   * Vendor rule, plain rows: the output's first (last) cell is the raster's first (last) column,
   * whose result is its inner neighbour's (the fast span's first (last) cell): the caller copies it.
   */
  readonly copyFirst: boolean;
  readonly copyLast: boolean;

  constructor(p: WindowParams, dem: PixelBlock, out: Rect) {
    this.p = p;
    this.src = dem.bands[0]!;
    this.mask = dem.mask;
    this.out = out;
    // `| 0`: integer fields stay small integers (a float64 here makes every index of the hot
    // loops a float64 that is converted and checked at each access: about 2x slower).
    this.bx = dem.rect.x | 0;
    this.by = dem.rect.y | 0;
    this.bw = dem.rect.width | 0;
    this.bh = dem.rect.height | 0;
    this.xa = Math.max(out.x, 1) | 0;
    this.xb = Math.min(out.x + out.width, p.width - 1) | 0;
    this.rowValid = new Int8Array(this.bh).fill(-1);
    const edges = this.xa !== out.x || this.xb !== out.x + out.width;
    // An output reaching past the raster's sides has cells no plain row covers (only the raster's
    // own edge columns are copied).
    const inside = out.x >= 0 && out.x + out.width <= p.width;
    this.plainColumns = this.xa < this.xb && inside && (!edges || p.edges === EdgeMode.Vendor);
    this.copyFirst = this.plainColumns && this.xa !== out.x;
    this.copyLast = this.plainColumns && this.xb !== out.x + out.width;
    const buf = this.mask.buffer;
    this.words = buf.byteLength >= 4 ? new Uint32Array(buf, 0, buf.byteLength >> 2) : undefined;
  }

  private winArray: Float64Array | undefined;
  private okArray: Uint8Array | undefined;

  /**
   * The 3 x 3 windows of the row `compute` prepared, nine values per output cell. Made on first
   * use: a tile whose rows are all plain (most of a render's, with the wasm kernels) needs none.
   */
  get win(): Float64Array {
    return (this.winArray ??= new Float64Array(9 * this.out.width));
  }

  /** Per output cell of the row `compute` prepared: 1 when its window is valid. Made on first use, as `win`. */
  get ok(): Uint8Array {
    return (this.okArray ??= new Uint8Array(this.out.width));
  }

  /**
   * The block columns the row scan reads (`rowOk`): [from, from + n) of each block row; undefined
   * when the output has no interior column (no row is ever scanned).
   */
  scanColumns(): { readonly from: number; readonly n: number } | undefined {
    return this.xa < this.xb ? { from: this.xa - 1 - this.bx, n: this.xb - this.xa + 2 } : undefined;
  }

  /**
   * Set the validity of every block row over `scanColumns()` at once (flags[r] 1 valid, 0 not, r
   * in [0, block height)), found by the caller (the wasm scan of a mask in wasm memory) instead of
   * the TypeScript scan, row by row, that `rowOk` does otherwise.
   */
  presetRows(flags: ArrayLike<number>): void {
    const rv = this.rowValid;
    for (let r = 0; r < rv.length; r++) rv[r] = flags[r] === 1 ? 1 : 0;
  }

  /**
   * Whether output row `y` is a plain row: the windows are centred on the row itself (not the
   * raster's first or last row), the three block rows the windows read are valid over the row
   * (the raster's edge columns included), and the output touches neither the raster's first nor
   * its last column, or does under the vendor rule. Then it sets what `compute(y)` would (the fast
   * span, `top`, `mid`, `bot`, `sy`) without touching `win` or `ok`: the row's only other cells
   * are the raster's edge columns under the vendor rule, which the caller copies from the fast
   * span's first and last cells (`copyFirst`, `copyLast`: the rule's result, bit for bit, since
   * both come from the same window). Otherwise it changes nothing and the caller runs `compute(y)`.
   */
  plain(y: number): boolean {
    if (!this.plainColumns) return false;
    const Y = (this.out.y + y) | 0;
    if (Y < 1 || Y > this.p.height - 2) return false;
    const r = (Y - this.by) | 0;
    if (!(this.rowOk(r - 1) && this.rowOk(r) && this.rowOk(r + 1))) return false;
    const r1 = r * this.bw - this.bx + this.out.x;
    this.fastFrom = (this.xa - this.out.x) | 0;
    this.fastTo = (this.xb - this.out.x) | 0;
    this.top = (r1 - this.bw) | 0;
    this.mid = r1 | 0;
    this.bot = (r1 + this.bw) | 0;
    this.sy = Y;
    return true;
  }

  /**
   * How many consecutive plain rows start at output row `y`, at most `max`: 0 when `y` is not plain
   * (nothing changed), else the count, with row `y`'s state set as `plain(y)` sets it (each next
   * row's windows start one block row, `bw` samples, further down).
   */
  plainRun(y: number, max: number): number {
    if (!this.plain(y)) return 0;
    const r = (this.out.y + y - this.by) | 0;
    const last = Math.min(max, this.p.height - 1 - this.out.y - y, this.bh - 1 - r) | 0;
    // The rows' flags as `presetRows` left them (1 valid, 0 not), scanned only where not known (-1).
    const rv = this.rowValid;
    let k = 1;
    for (; k < last; k++) {
      const v = rv[r + k + 1];
      if (v !== 1 && (v !== -1 || !this.rowOk(r + k + 1))) break;
    }
    return k;
  }

  /** Whether block row r is valid over the columns the interior loop reads (scanned once, 4 bytes at a time). */
  private rowOk(r: number): boolean {
    const known = this.rowValid[r]!;
    if (known !== -1) return known === 1;
    const m = this.mask;
    let c = r * this.bw + this.xa - 1 - this.bx;
    const end = r * this.bw + this.xb - this.bx + 1; // exclusive
    let all = 1;
    const words = this.words;
    if (words !== undefined) {
      const base = m.byteOffset;
      while (c < end && ((base + c) & 3) !== 0) all &= m[c++] === 0 ? 0 : 1;
      const wEnd = (base + end) >> 2;
      for (let k = (base + c) >> 2; k < wEnd && all === 1; k++, c += 4) {
        if (words[k] !== 0x01010101) all = m[c] !== 0 && m[c + 1] !== 0 && m[c + 2] !== 0 && m[c + 3] !== 0 ? 1 : 0;
      }
    }
    for (; c < end && all === 1; c++) if (m[c] === 0) all = 0;
    this.rowValid[r] = all;
    return all === 1;
  }

  /**
   * Prepare output row `y` (0-based within the output rect): set the fast span and fill win, ok
   * for the other cells. @returns true when every cell of the row is valid.
   */
  compute(y: number): boolean {
    const p = this.p;
    const W = p.width;
    const H = p.height;
    const ok = this.ok;
    const w = this.out.width;
    const Y = this.out.y + y;
    const vendor = p.edges === EdgeMode.Vendor;
    this.fastFrom = w | 0;
    this.fastTo = w | 0;
    if (vendor ? W < 3 || H < 3 : W < 2 || H < 2) {
      ok.fill(0);
      this.sy = -1;
      return false;
    }
    // Row of the window centre: the vendor rule copies the outer rows from the inner neighbour.
    const sy = vendor ? (Y < 1 ? 1 : Y > H - 2 ? H - 2 : Y) : Y;
    this.sy = sy | 0;
    const x0 = this.out.x;
    const x1 = x0 + w;
    if (sy < 1 || sy > H - 2) {
      // Extrapolate mode, top or bottom raster row: every cell takes the generic path.
      let all = 1;
      for (let X = x0; X < x1; X++) all &= this.generic(X, Y, X, sy, X - x0);
      return all === 1;
    }
    const xa = this.xa;
    const xb = this.xb;
    let all = 1;
    for (let X = x0; X < Math.min(xa, x1); X++) all &= this.generic(X, Y, vendor ? 1 : X, sy, X - x0);
    for (let X = Math.max(xb, x0); X < x1; X++) all &= this.generic(X, Y, vendor ? W - 2 : X, sy, X - x0);
    if (xa >= xb) return all === 1;

    const bw = this.bw;
    const by = this.by;
    const r1 = (sy - by) * bw - this.bx; // block index of raster (0, sy)
    const r0 = r1 - bw;
    const r2 = r1 + bw;

    if (this.rowOk(sy - 1 - by) && this.rowOk(sy - by) && this.rowOk(sy + 1 - by) && this.rowOk(Y - by)) {
      // Every window of [xa, xb) is valid: the caller's sliding loop computes them.
      this.fastFrom = (xa - x0) | 0;
      this.fastTo = (xb - x0) | 0;
      this.top = (r0 + x0) | 0;
      this.mid = (r1 + x0) | 0;
      this.bot = (r2 + x0) | 0;
      return all === 1;
    }

    // Some pixel near this row is NoData: test the 9 masks of each cell, generic path if any is 0.
    const rc = (Y - by) * bw - this.bx; // block index of raster (0, Y): the output cell's own pixel
    const src = this.src;
    const mk = this.mask;
    const win = this.win;
    for (let X = xa; X < xb; X++) {
      const i = X - x0;
      const a = r0 + X;
      const e = r1 + X;
      const g = r2 + X;
      if ((mk[a - 1]! & mk[a]! & mk[a + 1]! & mk[e - 1]! & mk[e]! & mk[e + 1]! & mk[g - 1]! & mk[g]! & mk[g + 1]! & mk[rc + X]!) === 1) {
        const k = 9 * i;
        win[k] = src[a - 1]!;
        win[k + 1] = src[a]!;
        win[k + 2] = src[a + 1]!;
        win[k + 3] = src[e - 1]!;
        win[k + 4] = src[e]!;
        win[k + 5] = src[e + 1]!;
        win[k + 6] = src[g - 1]!;
        win[k + 7] = src[g]!;
        win[k + 8] = src[g + 1]!;
        ok[i] = 1;
      } else {
        all &= this.generic(X, Y, X, sy, i);
      }
    }
    return all === 1;
  }

  /**
   * One cell the slow way: output (X, Y) from the window centred on (sx, sy), with the mode's
   * substitution rules. Writes win[9i ..] and ok[i], and returns ok.
   */
  private generic(X: number, Y: number, sx: number, sy: number, i: number): number {
    const p = this.p;
    const W = p.width;
    const H = p.height;
    if (X < 0 || X >= W || Y < 0 || Y >= H || this.maskAt(X, Y) === 0 || this.maskAt(sx, sy) === 0) {
      this.ok[i] = 0;
      return 0;
    }
    const win = this.win;
    const o = 9 * i;
    const okw = OK;
    if (p.edges === EdgeMode.Vendor) {
      // (sx, sy) is an inner cell: the whole window lies inside the raster.
      let missing = 0;
      const c = sx - this.bx;
      const r = sy - this.by;
      if (c >= 1 && r >= 1 && c < this.bw - 1 && r < this.bh - 1) {
        // Inside the block (always, with the halo of 2): direct indices (one of these per edge cell and row).
        const bw = this.bw;
        const mk = this.mask;
        const src = this.src;
        for (let dy = -1, k = 0; dy <= 1; dy++) {
          const j = (r + dy) * bw + c;
          for (let dx = -1; dx <= 1; dx++, k++) {
            const v = mk[j + dx]!;
            okw[k] = v;
            win[o + k] = src[j + dx]!;
            if (v === 0) missing++;
          }
        }
      } else {
        for (let dy = -1, k = 0; dy <= 1; dy++) {
          for (let dx = -1; dx <= 1; dx++, k++) {
            const v = this.maskAt(sx + dx, sy + dy);
            okw[k] = v;
            win[o + k] = this.valueAt(sx + dx, sy + dy);
            if (v === 0) missing++;
          }
        }
      }
      if (missing > 1) {
        this.ok[i] = 0;
        return 0;
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
              this.extrapolate(sx, cy, sx - dx, cy, o, k);
              continue;
            }
          }
          if (cy < 0 || cy >= H) {
            this.extrapolate(cx, sy, cx, sy - dy, o, k); // 2 * edge - inner, along the column
            continue;
          }
          okw[k] = this.maskAt(cx, cy);
          win[o + k] = this.valueAt(cx, cy);
        }
      }
    }
    const e = win[o + 4]!;
    for (let k = 0; k < 9; k++) if (okw[k] === 0) win[o + k] = e;
    this.ok[i] = 1;
    return 1;
  }

  /** win[o + k] = 2 * (ex, ey) - (ix, iy); valid when both are (GDAL INTERPOL). */
  private extrapolate(ex: number, ey: number, ix: number, iy: number, o: number, k: number): void {
    const ok = this.maskAt(ex, ey) & this.maskAt(ix, iy);
    OK[k] = ok;
    this.win[o + k] = ok === 1 ? 2 * this.valueAt(ex, ey) - this.valueAt(ix, iy) : 0;
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

/**
 * Horn gradients over `WindowRows`, one output row at a time (Slope, Hillshade, Aspect). After
 * `compute(y)`:
 *  - cells in [fastFrom, fastTo) are the caller's sliding loop (see WindowRows; slope.ts shows the
 *    loop), with this row's factors `kx`, `ky`;
 *  - every other cell has its gradient in gx[x], gy[x] with ok[x] = 1, or ok[x] = 0 (NoData).
 *
 * ## One sliding loop per function
 *
 * Slope, Aspect and Hillshade (traditional, multidirectional) each write the sliding loop out with
 * their formula fused into it, rather than calling one driver with the formula passed in as
 * gdaldem's GDALGeneric3x3Processing does. Measured (issue 16; Node 20.20, 4096^2 synthetic DEM,
 * old and new kernels alternated in one process, median of 7-11 paired CPU-time runs, every
 * formula run through the driver first as a server would; speed of the driver relative to these
 * loops, projected / geographic grid):
 *   - driver method taking the formula:                  Hillshade 0.34 / 0.35, Slope 0.59 / 0.60,
 *                                                        Aspect 1.01 / 1.04;
 *   - the formula written as a literal at each call:     Hillshade 0.70 / 0.70, Slope 0.61 / 0.63,
 *                                                        Aspect 1.00 / 1.05;
 *   - the driver reduced to the sliding loop:            Hillshade 0.34 / 0.33, Slope 0.57 / 0.66,
 *                                                        Aspect 1.04 / 1.05;
 *   - the driver serving Aspect and multidirectional only: Aspect 1.02 / 1.03, multidirectional 0.74;
 *   - a factory returning one row writer per formula:    Hillshade 0.34 / 0.33, Slope 0.64 / 0.63,
 *                                                        Aspect 1.01 / 1.02, multidirectional 0.74
 *     (closures made by one factory share one feedback vector and one optimised code in V8).
 * Why (--trace-turbo-inlining): V8 keeps call-target feedback monomorphic or megamorphic, so with
 * more than one formula the call in the driver's loop is megamorphic and not inlined; and the
 * driver is too large to be inlined into each kernel, where the formula would be a constant. A
 * cheap formula (Slope, Hillshade) pays for the call; Aspect's arctangent hides it. Results were
 * bit-identical in every variant. Each copy says so where it stands.
 */
export class HornRows {
  readonly src: Plane;
  fastFrom = 0;
  fastTo = 0;
  top = 0;
  mid = 0;
  bot = 0;
  /** This row's Horn factors zx / (8 cellX), zy / (8 cellY). */
  kx: number;
  ky: number;
  private readonly rows: WindowRows;
  private readonly p: GradientParams;
  private readonly width: number;
  /** Raster row whose factors kx/ky hold (Geodesic mode), -1 none yet. */
  private factorRow = -1;
  private readonly cell = { x: 0, y: 0 };

  constructor(p: GradientParams, dem: PixelBlock, out: Rect) {
    this.p = p;
    this.rows = new WindowRows(p, dem, out);
    this.width = out.width | 0;
    this.src = this.rows.src;
    this.kx = p.kx;
    this.ky = p.ky;
  }

  private gxArray: Float64Array | undefined;
  private gyArray: Float64Array | undefined;

  /** The row's x gradients per output cell, as `compute` leaves them. Made on first use, as `WindowRows.win`. */
  get gx(): Float64Array {
    return (this.gxArray ??= new Float64Array(this.width));
  }

  /** The row's y gradients, as `gx`. */
  get gy(): Float64Array {
    return (this.gyArray ??= new Float64Array(this.width));
  }

  /** `WindowRows.ok`. */
  get ok(): Uint8Array {
    return this.rows.ok;
  }

  /** Prepare output row `y`. @returns true when every cell of the row is valid. */
  compute(y: number): boolean {
    const all = this.rows.compute(y);
    this.adopt();
    this.gradients(0, this.fastFrom);
    this.gradients(this.fastTo, this.width);
    return all;
  }

  /**
   * `WindowRows.plain`: when output row `y` is a plain row (its fast span is the whole row, no
   * other cell), set the span and the row's factors and return true; else change nothing.
   */
  plain(y: number): boolean {
    if (!this.rows.plain(y)) return false;
    this.adopt();
    return true;
  }

  /**
   * `WindowRows.plainRun` for rows with the same factors: the plain rows from `y` (at most `max`),
   * state set for row `y`; at most one in Geodesic mode, where each row has factors of its own.
   */
  plainRun(y: number, max: number): number {
    if (this.p.cell.geodesic !== undefined) return this.plain(y) ? 1 : 0;
    const k = this.rows.plainRun(y, max);
    if (k > 0) this.adopt();
    return k;
  }

  /** The window reader's row as it set it: the fast span, the windows' rows and the row's factors. */
  private adopt(): void {
    const r = this.rows;
    this.fastFrom = r.fastFrom;
    this.fastTo = r.fastTo;
    this.top = r.top;
    this.mid = r.mid;
    this.bot = r.bot;
    this.factors(r.sy);
  }

  /** `WindowRows.copyFirst` / `copyLast`: after a plain row, the edge cells the caller copies. */
  get copyFirst(): boolean {
    return this.rows.copyFirst;
  }

  get copyLast(): boolean {
    return this.rows.copyLast;
  }

  /** `WindowRows.scanColumns`. */
  scanColumns(): { readonly from: number; readonly n: number } | undefined {
    return this.rows.scanColumns();
  }

  /** `WindowRows.presetRows`. */
  presetRows(flags: ArrayLike<number>): void {
    this.rows.presetRows(flags);
  }

  /** The Horn factors of raster row `sy` (Geodesic mode; constant cells keep the plan's). */
  private factors(sy: number): void {
    const g = this.p.cell.geodesic;
    if (g !== undefined && sy >= 0 && sy !== this.factorRow) {
      rowCellSize(g, sy, this.cell);
      hornFactors(this.p.z, this.p.scaled, this.cell.x, this.cell.y, this);
      this.factorRow = sy;
    }
  }

  /**
   * Write the row's cells outside the fast span (raster edges and NoData neighbours: never the hot
   * path, so a callback is fine here): `cell(gx, gy)` where valid, else `noData` with mask 0.
   * The fast span is the caller's fused sliding loop.
   */
  writeOtherCells(dst: Plane, mask: Uint8Array, o: number, noData: number, cell: (gx: number, gy: number) => number): void {
    const { gx, gy, ok, fastFrom: f0, fastTo: f1, width: w } = this;
    for (let x = 0; x < w; x++) {
      if (x === f0) x = f1;
      if (x >= w) break;
      if (ok[x] === 1) dst[o + x] = cell(gx[x]!, gy[x]!);
      else {
        dst[o + x] = noData;
        mask[o + x] = 0;
      }
    }
  }

  /** Gradients of the reader's windows over [from, to). */
  private gradients(from: number, to: number): void {
    const { win, ok } = this.rows;
    const gx = this.gx;
    const gy = this.gy;
    const kx = this.kx;
    const ky = this.ky;
    for (let x = from; x < to; x++) {
      if (ok[x] !== 1) continue;
      const k = 9 * x;
      gx[x] = hornGx(hornSum(win[k]!, win[k + 3]!, win[k + 6]!), hornSum(win[k + 2]!, win[k + 5]!, win[k + 8]!), kx);
      gy[x] = hornGy(win[k + 6]! - win[k]!, win[k + 7]! - win[k + 1]!, win[k + 8]! - win[k + 2]!, ky);
    }
  }
}

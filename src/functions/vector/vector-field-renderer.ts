/**
 * VectorFieldRenderer — draws a vector raster (magnitude/direction or U/V bands) as symbols into
 * an RGBA image: one symbol per square cell of `SymbolTileSize` pixels, at the cell's centre.
 *
 * Spec: raster-functions.md "VectorField (10.6) and VectorFieldRenderer (10.6)" (VJS
 * vectorFieldUtils, VectorFieldRenderer).
 *
 * Per cell (cells aligned to the raster's pixel (0, 0), so every request cuts the same cells):
 *  - the cell's vector by `CalculationMethod`: `Vector Average` (mean U and V of the valid pixels,
 *    drawn only when at least half the cell's pixels inside the raster are valid), `Nearest
 *    neighbor` (the pixel under the cell centre), `Bilinear` / `Cubic` (U and V interpolated at the
 *    centre, Keys a = -0.5, weights renormalised over valid neighbours; nothing when the centre
 *    pixel is NoData), `Minimum` / `Maximum` (the valid pixel of smallest / largest magnitude).
 *    Magnitude-direction pixels are turned into U/V first, so averages are vector averages.
 *  - directions: `ReferenceSystem` 2 (angular, default) clockwise from north, 1 arithmetic
 *    counter-clockwise from east; U/V point where the flow goes. `MassFlowAngleRepresentation`
 *    0 "from" rotates symbols by 180 degrees (default "from", except the ocean-current styles whose
 *    default is "to"), as the vendor client does.
 *  - size: linear from `MinimumSymbolSize` at `MinimumMagnitude` to `MaximumSymbolSize` at
 *    `MaximumMagnitude`, clamped (defaults 0.2 and 0.8 x SymbolTileSize). Magnitude bounds not given
 *    come from the source's statistics of the magnitude band, else from the request's statistics
 *    (a pre-pass over the whole request, so tiles agree): magnitude band min/max, or for U/V
 *    0 .. hypot(max |U|, max |V|).
 *  - symbols (lengths in pixels, L = symbol size):
 *    `Single Arrow`: shaft and filled head (head 0.35 L long, 0.36 L wide), centred on the cell;
 *    `Simple Scalar`: a line with an open chevron head;
 *    `Wind Barb`: staff of length L from the cell centre toward where the wind comes from, speed
 *    (magnitude, in knots) rounded down to 5 kn and capped at 145 kn, pennant 50 kn, barb 10 kn,
 *    half barb 5 kn, barbs on the staff's clockwise side; below 5 kn a calm circle;
 *    `Beaufort Wind (Knots | MetersPerSecond)`, `Ocean Current (Knots | MetersPerSecond)`:
 *    classified arrows; class by the spec's break tables (class 0 when v <= b[1], i when
 *    b[i] < v <= b[i+1], the last class above), m/s converted to knots (x 3600/1852) for the
 *    Beaufort table. [ours] The vendor draws its own glyph per class, which is not documented: we
 *    draw arrows sized linearly by class (MinimumSymbolSize .. MaximumSymbolSize) and coloured by
 *    class along the `Cold to Hot Diverging` ramp.
 *  - drawing: anti-aliased coverage from the distance of each pixel centre to the shape (segments
 *    with round caps, filled triangles, rings), one symbol's shapes merged by maximum, symbols
 *    composited "over" in row-major cell order. Unclassified symbols are black.
 *
 * Tiles: a tile reads the cells whose symbols can reach it (cells within the largest symbol's
 * reach of the tile, `Plan.inputRect`) and draws only its own pixels, so symbols straddling tile
 * edges are drawn identically on both sides. `SymbolTileSizeUnits` `Pixels` (default) or a map
 * unit (`Meters`, `Feet`, ... converted with the cell's width in metres: a projected raster's cell
 * times its linear unit, a geographic raster's cell on its ellipsoid at the latitude of its middle
 * row; `DecimalDegrees` is the map unit of a geographic raster and the WGS 84 equatorial degree on
 * a projected one; core/geodesy.ts). Output: 4 bands U8 (R, G, B, alpha),
 * alpha 0 where no symbol is drawn; every pixel is valid.
 * outputPixelType: the RGBA colours 0..255 through the engine's cast to any real type that holds
 * them (values unchanged); complex, S8 and sub-byte types are refused when the rule is built.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import { groundCellSize, METERS_PER_EQUATORIAL_DEGREE } from '../../core/geodesy.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { intersect, rect, type Rect } from '../../core/rect.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { predefinedRamp, rampColors } from '../color/ramps.js';
import { VECTOR_BAND_NAMES } from './vector-field.js';

const SYMBOLOGIES = [
  'Simple Scalar',
  'Single Arrow',
  'Wind Barb',
  'Beaufort Wind (Knots)',
  'Beaufort Wind (MetersPerSecond)',
  'Ocean Current (Knots)',
  'Ocean Current (MetersPerSecond)',
] as const;

const CALCULATION_METHODS = ['Vector Average', 'Nearest neighbor', 'Bilinear', 'Cubic', 'Minimum', 'Maximum'] as const;

const SIZE_UNITS = ['Pixels', 'Meters', 'Kilometers', 'Feet', 'Miles', 'NauticalMiles', 'DecimalDegrees', 'MapUnits'] as const;

/** Metres per unit, for SymbolTileSizeUnits other than Pixels and MapUnits (DecimalDegrees on a projected raster: the equatorial degree, as UnitConversion). */
const METERS: Readonly<Record<string, number>> = {
  Meters: 1,
  Kilometers: 1000,
  Feet: 0.3048,
  Miles: 1609.344,
  NauticalMiles: 1852,
  DecimalDegrees: METERS_PER_EQUATORIAL_DEGREE,
};

const KNOTS_PER_MPS = 3600 / 1852;

/** Class breaks of the classified styles [spec], in the units named by the style. */
const BREAKS: Readonly<Record<string, readonly number[]>> = {
  'Beaufort Wind (Knots)': [0, 1, 3, 6, 10, 16, 21, 27, 33, 40, 47, 55, 63],
  'Beaufort Wind (MetersPerSecond)': [0, 1, 3, 6, 10, 16, 21, 27, 33, 40, 47, 55, 63],
  'Ocean Current (Knots)': [0, 0.25, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4],
  'Ocean Current (MetersPerSecond)': [0, 0.5, 1, 1.5, 2],
};

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Vector raster: magnitude and direction bands, or U and V bands.' },
  MagnitudeBandID: { kind: 'int', default: 0, min: 0, doc: 'Band of the magnitude (or U), 0-based.' },
  DirectionBandID: { kind: 'int', default: 1, min: 0, doc: 'Band of the direction (or V), 0-based.' },
  IsUVComponents: {
    kind: 'boolean',
    doc: 'Whether the bands are U and V; absent: true when the input bands are named U, V (VectorField output).',
  },
  ReferenceSystem: {
    kind: 'enum',
    values: [1, 2],
    names: { Arithmetic: 1, Angular: 2, Geographic: 2 },
    default: 2,
    doc: 'Directions: 1 arithmetic (counter-clockwise from east), 2 angular (clockwise from north).',
  },
  MassFlowAngleRepresentation: {
    kind: 'enum',
    values: [0, 1],
    names: { From: 0, To: 1 },
    doc: '0 flow from, 1 flow to; default from, except the ocean-current styles (to).',
  },
  SymbolTileSize: { kind: 'number', default: 50, min: 0, doc: 'Cell size of the symbol grid (one symbol per cell).' },
  SymbolTileSizeUnits: {
    kind: 'string',
    values: SIZE_UNITS,
    // [VJS] the JS client writes 100 for pixels; the others are the vendor's unit codes (as UnitConversion's).
    codes: { 100: 'Pixels', 3: 'Feet', 5: 'Miles', 6: 'NauticalMiles', 9: 'Meters', 10: 'Kilometers', 11: 'DecimalDegrees' },
    default: 'Pixels',
    doc: 'Units of SymbolTileSize; also as codes: 100 Pixels (what the JS client sends), 3 Feet, 5 Miles, 6 NauticalMiles, 9 Meters, 10 Kilometers, 11 DecimalDegrees.',
  },
  CalculationMethod: {
    kind: 'string',
    values: CALCULATION_METHODS,
    // [ours] codes as Resample's ResamplingType for the same methods.
    codes: { 10: 'Vector Average', 0: 'Nearest neighbor', 1: 'Bilinear', 2: 'Cubic', 8: 'Minimum', 9: 'Maximum' },
    names: { Nearest: 'Nearest neighbor', Average: 'Vector Average', Min: 'Minimum', Max: 'Maximum' },
    default: 'Vector Average',
    doc: 'How a cell gets its vector; also as Resample codes: 10 Vector Average, 0 Nearest neighbor, 1 Bilinear, 2 Cubic, 8 Minimum, 9 Maximum.',
  },
  SymbologyName: {
    kind: 'string',
    values: SYMBOLOGIES,
    // [VJS] the JS renderer's style keys, as its client maps them onto these names.
    names: {
      simple_scalar: 'Simple Scalar',
      single_arrow: 'Single Arrow',
      wind_barb: 'Wind Barb',
      wind_speed: 'Wind Barb',
      beaufort_kn: 'Beaufort Wind (Knots)',
      beaufort_m: 'Beaufort Wind (MetersPerSecond)',
      ocean_current_kn: 'Ocean Current (Knots)',
      ocean_current_m: 'Ocean Current (MetersPerSecond)',
    },
    default: 'Single Arrow',
    doc: "Symbol style; the JS client's style keys (single-arrow, wind-barb, beaufort-kn, ocean-current-m, ...) are accepted.",
  },
  MinimumMagnitude: { kind: 'number', doc: 'Magnitude drawn at MinimumSymbolSize (default: data minimum).' },
  MaximumMagnitude: { kind: 'number', doc: 'Magnitude drawn at MaximumSymbolSize (default: data maximum).' },
  MinimumSymbolSize: { kind: 'number', min: 0, doc: 'Smallest symbol, pixels (default 0.2 x SymbolTileSize).' },
  MaximumSymbolSize: { kind: 'number', min: 0, doc: 'Largest symbol, pixels (default 0.8 x SymbolTileSize).' },
} as const satisfies ArgSchema;

const enum Style {
  SimpleScalar = 0,
  SingleArrow = 1,
  WindBarb = 2,
  Classified = 3,
}

interface RendererParams {
  readonly input: number;
  readonly magBand: number;
  readonly dirBand: number;
  readonly uv: boolean;
  readonly geographic: boolean;
  readonly rotate: boolean;
  /** Symbol cell edge, pixels (integer >= 1). */
  readonly cell: number;
  readonly method: number;
  readonly style: Style;
  readonly minMag: number;
  readonly maxMag: number;
  readonly minSize: number;
  readonly maxSize: number;
  /** Magnitude -> units of the break table (knots or m/s). */
  readonly unitFactor: number;
  readonly breaks: readonly number[];
  /** r, g, b per class (classified styles), else one black. */
  readonly colors: readonly number[];
  readonly width: number;
  readonly height: number;
  /** How far (pixels) a symbol may reach from its cell centre. */
  readonly reach: number;
  /** Whether the magnitude bounds still come from the request's statistics. */
  readonly needsRange: boolean;
}

const at = argPaths(args);

/** Cells (column or row indexes) whose symbols can touch [start, start + length). */
function cellRange(start: number, length: number, p: RendererParams, count: number): [number, number] {
  const first = Math.max(0, Math.floor((start - p.reach) / p.cell));
  const last = Math.min(Math.ceil(count / p.cell) - 1, Math.floor((start + length - 1 + p.reach) / p.cell));
  return [first, last];
}

/** The input pixels the cells touching `out` need (their whole cells, plus 2 px for cubic). */
function inputRectFor(out: Rect, p: RendererParams): Rect {
  const [cx0, cx1] = cellRange(out.x, out.width, p, p.width);
  const [cy0, cy1] = cellRange(out.y, out.height, p, p.height);
  if (cx1 < cx0 || cy1 < cy0) return rect(out.x, out.y, 1, 1);
  const x0 = cx0 * p.cell - 2;
  const y0 = cy0 * p.cell - 2;
  return rect(x0, y0, (cx1 + 1) * p.cell + 2 - x0, (cy1 + 1) * p.cell + 2 - y0);
}

export const vectorFieldRenderer = defineFunction<typeof args, RendererParams>({
  name: 'VectorFieldRenderer',
  summary: 'Draw a magnitude/direction or U/V raster as arrows, wind barbs or classified symbols into an RGBA image.',
  family: 'vector',
  codes: 'colour channels',
  verification: 'snapshot golden (labelled) plus hand-checked symbol geometry and a tile-seam test',
  args,

  plan(a, inputs) {
    const info = inputs[a.Raster]!;
    if (info.constant !== undefined) throw invalidArgument(at('Raster'), 'VectorFieldRenderer needs a raster, not a constant');
    if (isComplex(info.pixelType)) throw unsupportedInput(at('Raster'), `complex input (${info.pixelType}) is not a vector raster`);
    for (const [name, band] of [
      ['MagnitudeBandID', a.MagnitudeBandID],
      ['DirectionBandID', a.DirectionBandID],
    ] as const) {
      if (band >= info.bandCount) {
        throw invalidArgument(at(name), `band ${band} does not exist: the input has ${info.bandCount} band(s) (band ids are 0-based)`);
      }
    }
    if (a.MagnitudeBandID === a.DirectionBandID)
      throw invalidArgument(at('DirectionBandID'), 'DirectionBandID must differ from MagnitudeBandID');
    const uvNames = VECTOR_BAND_NAMES['Vector-UV'];
    const uv =
      a.IsUVComponents ?? (info.bandNames?.[a.MagnitudeBandID] === uvNames[0] && info.bandNames?.[a.DirectionBandID] === uvNames[1]);

    let cell = a.SymbolTileSize;
    const units = a.SymbolTileSizeUnits;
    if (units === 'MapUnits' || (units === 'DecimalDegrees' && info.spatialReference?.geographic === true)) cell /= info.cellSize.x;
    else if (units !== 'Pixels') cell = (cell * METERS[units]!) / groundCellSize(info).x;
    cell = Math.round(cell);
    if (!(cell >= 1 && cell <= 4096)) {
      throw invalidArgument(
        at('SymbolTileSize'),
        `the symbol cell must be 1..4096 pixels, got ${a.SymbolTileSize} ${a.SymbolTileSizeUnits} = ${cell} px`,
      );
    }
    const minSize = a.MinimumSymbolSize ?? 0.2 * cell;
    const maxSize = a.MaximumSymbolSize ?? 0.8 * cell;
    if (maxSize < minSize)
      throw invalidArgument(at('MaximumSymbolSize'), `MaximumSymbolSize ${maxSize} is below MinimumSymbolSize ${minSize}`);
    if (maxSize > 8 * cell || maxSize > 2048) {
      throw invalidArgument(at('MaximumSymbolSize'), `a symbol may span at most 8 cells and 2048 pixels, got ${maxSize}`);
    }
    if (a.MinimumMagnitude !== undefined && a.MaximumMagnitude !== undefined && a.MaximumMagnitude < a.MinimumMagnitude) {
      throw invalidArgument(
        at('MaximumMagnitude'),
        `MaximumMagnitude ${a.MaximumMagnitude} is below MinimumMagnitude ${a.MinimumMagnitude}`,
      );
    }

    const name = a.SymbologyName;
    const style =
      name === 'Simple Scalar'
        ? Style.SimpleScalar
        : name === 'Single Arrow'
          ? Style.SingleArrow
          : name === 'Wind Barb'
            ? Style.WindBarb
            : Style.Classified;
    const breaks = BREAKS[name] ?? [];
    const classes = Math.max(1, breaks.length - 1);
    let colors: number[] = [0, 0, 0];
    if (style === Style.Classified) {
      const table = rampColors(predefinedRamp('Cold to Hot Diverging')!, classes);
      colors = Array.from(table.rgb.subarray(0, 3 * classes));
    }
    const oceanCurrent = name.startsWith('Ocean Current');
    const rotate = (a.MassFlowAngleRepresentation ?? (oceanCurrent ? 1 : 0)) === 0;

    // Magnitude bounds: arguments, else the source's statistics, else the request's (bindStatistics).
    const stats = uv ? undefined : info.statistics?.[a.MagnitudeBandID];
    const minMag = a.MinimumMagnitude ?? stats?.min;
    const maxMag = a.MaximumMagnitude ?? stats?.max;
    const needsRange = style !== Style.WindBarb && style !== Style.Classified && (minMag === undefined || maxMag === undefined);

    const params: RendererParams = {
      input: a.Raster,
      magBand: a.MagnitudeBandID,
      dirBand: a.DirectionBandID,
      uv,
      geographic: a.ReferenceSystem === 2,
      rotate,
      cell,
      method: CALCULATION_METHODS.indexOf(a.CalculationMethod as (typeof CALCULATION_METHODS)[number]),
      style,
      minMag: minMag ?? Number.NaN,
      maxMag: maxMag ?? Number.NaN,
      minSize,
      maxSize,
      unitFactor: name === 'Beaufort Wind (MetersPerSecond)' ? KNOTS_PER_MPS : 1,
      breaks,
      colors,
      width: info.width,
      height: info.height,
      reach: Math.ceil(1.2 * maxSize + 2),
      needsRange,
    };
    const out: RasterInfo = {
      ...info,
      bandCount: 4,
      pixelType: 'U8',
      noData: undefined,
      bandNames: ['Red', 'Green', 'Blue', 'Alpha'],
      statistics: undefined,
      histograms: undefined,
      colormap: undefined,
      constant: undefined,
    };
    return {
      info: out,
      halo: 0,
      params,
      inputRect: (r) => inputRectFor(r, params),
      ...(needsRange ? { requestStatistics: { inputs: [a.Raster] } } : {}),
    };
  },

  bindStatistics(p, [bands]) {
    let lo = 0;
    let hi = 0;
    if (p.uv) {
      const u = bands?.[p.magBand]?.statistics;
      const v = bands?.[p.dirBand]?.statistics;
      if (u !== undefined && v !== undefined)
        hi = Math.hypot(Math.max(Math.abs(u.min), Math.abs(u.max)), Math.max(Math.abs(v.min), Math.abs(v.max)));
    } else {
      const m = bands?.[p.magBand]?.statistics;
      if (m !== undefined) [lo, hi] = [m.min, m.max];
    }
    return { ...p, minMag: Number.isNaN(p.minMag) ? lo : p.minMag, maxMag: Number.isNaN(p.maxMag) ? hi : p.maxMag, needsRange: false };
  },

  kernel(p, inputs, out) {
    drawSymbols(p, inputs[p.input]!, out);
  },
});

// ---- Per-cell vector.

const vec = new Float64Array(2);

/** U/V of input pixel i (magnitude/direction converted); false when NoData. */
function pixelUV(p: RendererParams, block: PixelBlock, i: number): boolean {
  if (block.mask[i] === 0) return false;
  const s = block.bands[p.magBand]![i]!;
  const t = block.bands[p.dirBand]![i]!;
  if (s !== s || t !== t) return false;
  if (p.uv) {
    vec[0] = s;
    vec[1] = t;
  } else {
    const theta = ((p.geographic ? 90 - t : t) * Math.PI) / 180;
    vec[0] = s * Math.cos(theta);
    vec[1] = s * Math.sin(theta);
  }
  return true;
}

const keys = (t: number): number => {
  const a = Math.abs(t);
  if (a <= 1) return (1.5 * a - 2.5) * a * a + 1;
  if (a < 2) return ((-0.5 * a + 2.5) * a - 4) * a + 2;
  return 0;
};

/** The vector of cell (cx, cy) into `vec` (arithmetic U/V); false when the cell gets no symbol. */
function cellVector(p: RendererParams, block: PixelBlock, cx: number, cy: number): boolean {
  const { x: bx, y: by, width: bw } = block.rect;
  const x0 = cx * p.cell;
  const y0 = cy * p.cell;
  const x1 = Math.min(x0 + p.cell, p.width);
  const y1 = Math.min(y0 + p.cell, p.height);
  const method = p.method;
  if (method === 0 || method === 4 || method === 5) {
    let su = 0;
    let sv = 0;
    let n = 0;
    let best = method === 4 ? Infinity : -Infinity;
    let bu = 0;
    let bv = 0;
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        if (!pixelUV(p, block, (y - by) * bw + (x - bx))) continue;
        n++;
        if (method === 0) {
          su += vec[0]!;
          sv += vec[1]!;
        } else {
          const m = vec[0]! * vec[0]! + vec[1]! * vec[1]!;
          if (method === 4 ? m < best : m > best) {
            best = m;
            bu = vec[0]!;
            bv = vec[1]!;
          }
        }
      }
    }
    if (method === 0) {
      if (n === 0 || 2 * n < (x1 - x0) * (y1 - y0)) return false;
      vec[0] = su / n;
      vec[1] = sv / n;
      return true;
    }
    if (n === 0) return false;
    vec[0] = bu;
    vec[1] = bv;
    return true;
  }
  // Point samples at the cell centre (pixel centres at k + 0.5).
  const px = (x0 + x1) / 2;
  const py = (y0 + y1) / 2;
  const ix = Math.min(Math.floor(px), p.width - 1);
  const iy = Math.min(Math.floor(py), p.height - 1);
  if (!pixelUV(p, block, (iy - by) * bw + (ix - bx))) return false;
  if (method === 1) return true;
  const fx = px - 0.5;
  const fy = py - 0.5;
  const gx = Math.floor(fx);
  const gy = Math.floor(fy);
  const r = method === 2 ? 1 : 2;
  let su = 0;
  let sv = 0;
  let sw = 0;
  for (let y = gy - r + 1; y <= gy + r; y++) {
    if (y < 0 || y >= p.height) continue;
    const wy = method === 2 ? 1 - Math.abs(fy - y) : keys(fy - y);
    for (let x = gx - r + 1; x <= gx + r; x++) {
      if (x < 0 || x >= p.width) continue;
      const w = wy * (method === 2 ? 1 - Math.abs(fx - x) : keys(fx - x));
      if (w === 0 || !pixelUV(p, block, (y - by) * bw + (x - bx))) continue;
      su += w * vec[0]!;
      sv += w * vec[1]!;
      sw += w;
    }
  }
  if (sw === 0) return false;
  vec[0] = su / sw;
  vec[1] = sv / sw;
  return true;
}

// ---- Shapes: segments (round caps), filled triangles, rings; coverage by distance.

/** Shape list of one symbol: kind (0 segment, 1 triangle, 2 ring) followed by its numbers. */
class Shapes {
  readonly data: number[] = [];
  x0 = Infinity;
  y0 = Infinity;
  x1 = -Infinity;
  y1 = -Infinity;

  reset(): void {
    this.data.length = 0;
    this.x0 = this.y0 = Infinity;
    this.x1 = this.y1 = -Infinity;
  }

  private grow(x: number, y: number, r: number): void {
    this.x0 = Math.min(this.x0, x - r);
    this.x1 = Math.max(this.x1, x + r);
    this.y0 = Math.min(this.y0, y - r);
    this.y1 = Math.max(this.y1, y + r);
  }

  segment(ax: number, ay: number, bx: number, by: number, half: number): void {
    this.data.push(0, ax, ay, bx, by, half);
    this.grow(ax, ay, half + 1);
    this.grow(bx, by, half + 1);
  }

  triangle(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): void {
    this.data.push(1, ax, ay, bx, by, cx, cy);
    this.grow(ax, ay, 1);
    this.grow(bx, by, 1);
    this.grow(cx, cy, 1);
  }

  ring(cx: number, cy: number, radius: number, half: number): void {
    this.data.push(2, cx, cy, radius, half);
    this.grow(cx, cy, radius + half + 1);
  }

  /** Coverage (0..1) of the point (x, y): the maximum over the shapes. */
  coverage(x: number, y: number): number {
    const d = this.data;
    let best = 0;
    for (let k = 0; k < d.length;) {
      let c: number;
      if (d[k] === 0) {
        c = d[k + 5]! + 0.5 - segmentDistance(x, y, d[k + 1]!, d[k + 2]!, d[k + 3]!, d[k + 4]!);
        k += 6;
      } else if (d[k] === 1) {
        c = triangleCoverage(x, y, d[k + 1]!, d[k + 2]!, d[k + 3]!, d[k + 4]!, d[k + 5]!, d[k + 6]!);
        k += 7;
      } else {
        c = d[k + 4]! + 0.5 - Math.abs(Math.hypot(x - d[k + 1]!, y - d[k + 2]!) - d[k + 3]!);
        k += 5;
      }
      if (c > best) best = c >= 1 ? 1 : c;
    }
    return best;
  }
}

function segmentDistance(x: number, y: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax;
  const dy = by - ay;
  const len2 = dx * dx + dy * dy;
  let t = len2 > 0 ? ((x - ax) * dx + (y - ay) * dy) / len2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  return Math.hypot(x - ax - t * dx, y - ay - t * dy);
}

function triangleCoverage(x: number, y: number, ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  const s = Math.sign(area) || 1;
  const e1 = s * ((bx - ax) * (y - ay) - (by - ay) * (x - ax));
  const e2 = s * ((cx - bx) * (y - by) - (cy - by) * (x - bx));
  const e3 = s * ((ax - cx) * (y - cy) - (ay - cy) * (x - cx));
  if (e1 >= 0 && e2 >= 0 && e3 >= 0) return 1;
  const d = Math.min(segmentDistance(x, y, ax, ay, bx, by), segmentDistance(x, y, bx, by, cx, cy), segmentDistance(x, y, cx, cy, ax, ay));
  return 0.5 - d;
}

// ---- Symbols.

/** Arrow of length L centred on (cx, cy) pointing along (dx, dy) (pixel space, y down). */
function arrow(s: Shapes, cx: number, cy: number, dx: number, dy: number, L: number, open: boolean): void {
  const half = Math.max(0.5, 0.04 * L);
  const tx = cx - (dx * L) / 2;
  const ty = cy - (dy * L) / 2;
  const hx = cx + (dx * L) / 2;
  const hy = cy + (dy * L) / 2;
  const nx = -dy;
  const ny = dx;
  if (open) {
    s.segment(tx, ty, hx, hy, half);
    const back = 0.25 * L;
    for (const side of [1, -1]) {
      // Chevron arms at +-30 degrees from the shaft.
      s.segment(hx, hy, hx - back * (0.866 * dx - side * 0.5 * nx), hy - back * (0.866 * dy - side * 0.5 * ny), half);
    }
    return;
  }
  const headLength = 0.35 * L;
  const headHalf = 0.18 * L;
  const bx = hx - dx * headLength;
  const by = hy - dy * headLength;
  s.segment(tx, ty, bx + dx * 0.5, by + dy * 0.5, half);
  s.triangle(hx, hy, bx + nx * headHalf, by + ny * headHalf, bx - nx * headHalf, by - ny * headHalf);
}

/** Wind barb for `knots`, staff from (cx, cy) along (sx, sy) (toward where the wind comes from). */
function windBarb(s: Shapes, cx: number, cy: number, sx: number, sy: number, L: number, knots: number): void {
  const half = Math.max(0.5, 0.035 * L);
  const speed = Math.min(145, Math.floor(knots / 5) * 5);
  if (!(speed >= 5)) {
    s.ring(cx, cy, 0.15 * L, half);
    return;
  }
  s.segment(cx, cy, cx + sx * L, cy + sy * L, half);
  // Barbs on the clockwise side of the staff, tilted toward its outer end.
  const nx = -sy;
  const ny = sx;
  const bl = 0.4 * L;
  const bxDir = 0.866 * nx + 0.5 * sx;
  const byDir = 0.866 * ny + 0.5 * sy;
  const step = 0.13 * L;
  let pos = L;
  let rest = speed;
  while (rest >= 50) {
    const px = cx + sx * pos;
    const py = cy + sy * pos;
    const qx = cx + sx * (pos - step);
    const qy = cy + sy * (pos - step);
    s.triangle(px, py, qx, qy, px + nx * bl, py + ny * bl);
    pos -= step * 1.3;
    rest -= 50;
  }
  if (speed < 10) pos -= step; // a lone half barb sits one step in from the end
  while (rest >= 10) {
    const px = cx + sx * pos;
    const py = cy + sy * pos;
    s.segment(px, py, px + bxDir * bl, py + byDir * bl, half);
    pos -= step;
    rest -= 10;
  }
  if (rest >= 5) {
    const px = cx + sx * pos;
    const py = cy + sy * pos;
    s.segment(px, py, px + (bxDir * bl) / 2, py + (byDir * bl) / 2, half);
  }
}

function classOf(v: number, breaks: readonly number[]): number {
  const last = breaks.length - 2;
  for (let i = 0; i < last; i++) if (v <= breaks[i + 1]!) return i;
  return last;
}

function drawSymbols(p: RendererParams, block: PixelBlock, out: PixelBlock): void {
  const { x: ox, y: oy, width: ow, height: oh } = out.rect;
  const n = ow * oh;
  // Premultiplied colour and alpha, composited "over" in cell order.
  const acc = new Float32Array(4 * n);
  const shapes = new Shapes();
  const [cx0, cx1] = cellRange(ox, ow, p, p.width);
  const [cy0, cy1] = cellRange(oy, oh, p, p.height);
  const classes = Math.max(1, p.breaks.length - 1);
  for (let cy = cy0; cy <= cy1; cy++) {
    for (let cx = cx0; cx <= cx1; cx++) {
      if (!cellVector(p, block, cx, cy)) continue;
      const u = vec[0]!;
      const v = vec[1]!;
      const mag = Math.hypot(u, v);
      // Arithmetic angle -> pixel-space direction (y down); "from" symbols turn around.
      let dx = mag > 0 ? u / mag : 1;
      let dy = mag > 0 ? -v / mag : 0;
      if (p.rotate) {
        dx = -dx;
        dy = -dy;
      }
      const centreX = (cx * p.cell + Math.min(cx * p.cell + p.cell, p.width)) / 2;
      const centreY = (cy * p.cell + Math.min(cy * p.cell + p.cell, p.height)) / 2;
      shapes.reset();
      let color = 0;
      if (p.style === Style.WindBarb) {
        // The staff points where the wind comes from: opposite the flow-to direction.
        windBarb(shapes, centreX, centreY, -dx, -dy, p.maxSize, mag);
      } else if (p.style === Style.Classified) {
        const k = classOf(mag * p.unitFactor, p.breaks);
        const size = classes > 1 ? p.minSize + ((p.maxSize - p.minSize) * k) / (classes - 1) : p.maxSize;
        arrow(shapes, centreX, centreY, dx, dy, size, false);
        color = 3 * k;
      } else {
        const span = p.maxMag - p.minMag;
        const t = span > 0 ? Math.min(1, Math.max(0, (mag - p.minMag) / span)) : 1;
        arrow(shapes, centreX, centreY, dx, dy, p.minSize + t * (p.maxSize - p.minSize), p.style === Style.SimpleScalar);
      }
      const r = p.colors[color]!;
      const g = p.colors[color + 1]!;
      const b = p.colors[color + 2]!;
      const area = intersect(
        rect(ox, oy, ow, oh),
        rect(
          Math.floor(shapes.x0),
          Math.floor(shapes.y0),
          Math.ceil(shapes.x1) - Math.floor(shapes.x0) + 1,
          Math.ceil(shapes.y1) - Math.floor(shapes.y0) + 1,
        ),
      );
      if (area === undefined) continue;
      for (let y = area.y; y < area.y + area.height; y++) {
        for (let x = area.x; x < area.x + area.width; x++) {
          const c = shapes.coverage(x + 0.5, y + 0.5);
          if (c <= 0) continue;
          const i = 4 * ((y - oy) * ow + (x - ox));
          const keep = 1 - c;
          acc[i] = c * r + keep * acc[i]!;
          acc[i + 1] = c * g + keep * acc[i + 1]!;
          acc[i + 2] = c * b + keep * acc[i + 2]!;
          acc[i + 3] = c + keep * acc[i + 3]!;
        }
      }
    }
  }
  const [R, G, B, A] = out.bands as [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  for (let i = 0; i < n; i++) {
    const a = acc[4 * i + 3]!;
    out.mask[i] = 1;
    if (a <= 0) continue;
    R[i] = Math.round(acc[4 * i]! / a);
    G[i] = Math.round(acc[4 * i + 1]! / a);
    B[i] = Math.round(acc[4 * i + 2]! / a);
    A[i] = Math.round(255 * a);
  }
}

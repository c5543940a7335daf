/**
 * Grids for functions with several inputs (Arithmetic, Local, RasterCalculator, WeightedSum,
 * CompositeBand, ...).
 *
 * `outputGrid(inputs, extentType, cellsizeType)` chooses the output grid per spec §1.5: ExtentType
 * 0 FirstOf, 1 IntersectionOf, 2 UnionOf, 3 LastOf; CellsizeType 0 FirstOf, 1 MinOf, 2 MaxOf,
 * 3 MeanOf, 4 LastOf (each axis on its own). Constant (scalar) inputs are ignored. The grid is in
 * the first raster's spatial reference; other rasters' extents are transformed into it (21 points
 * per edge, bounding box) and their cell sizes taken as transformed extent / pixel count. The grid
 * is snapped to the chosen cell size with the first raster's top-left corner as origin, so with
 * FirstOf/FirstOf it IS the first raster's grid (which then needs no resampling):
 *   FirstOf / LastOf extent: edges rounded to the nearest grid line;
 *   UnionOf: edges moved outwards to grid lines (nothing of any input is lost);
 *   IntersectionOf: edges moved inwards (every pixel lies inside every input); an intersection
 *   thinner than one cell keeps one cell.
 * Inputs that do not overlap are refused when the rule is built (INVALID_ARGUMENT at the input's
 * path, naming the extents), wherever the output would be entirely NoData or an input would
 * contribute nothing: no intersection at all; inputs without a common area when every output pixel
 * needs all of them (NoData propagates: Arithmetic, most Local ops, CompositeBand's mask AND),
 * whatever the ExtentType; an input outside the FirstOf/LastOf extent. A partial overlap is
 * legitimate (NoData where an input is missing), and so is UnionOf over disjoint inputs for
 * functions that leave NoData inputs out (the IgnoreNoData statistics).
 * (Snapping tolerance: 1e-6 of a cell, so extents that are whole cells never gain a pixel.)
 * Functions then ask the engine to resample their inputs onto it with `Plan.align`
 * (`alignMethod`: nearest for thematic inputs, bilinear otherwise).
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { Extent, RasterInfo } from '../../core/pixel-block.js';
import { isInteger } from '../../core/pixel-type.js';
import { reprojection, sameSpatialReference, transformExtent } from '../../graph/align.js';
import { ARGUMENTS } from '../../graph/args.js';
import type { AlignSpec, ArgSpec } from '../../graph/types.js';

export const ExtentType = { FirstOf: 0, IntersectionOf: 1, UnionOf: 2, LastOf: 3 } as const;
export const CellsizeType = { FirstOf: 0, MinOf: 1, MaxOf: 2, MeanOf: 3, LastOf: 4 } as const;

/** Argument specs to reuse in schemas. */
export const extentTypeArg = {
  kind: 'enum',
  values: [0, 1, 2, 3],
  names: ExtentType,
  default: 0,
  doc: 'Output extent when inputs differ: 0 FirstOf, 1 IntersectionOf, 2 UnionOf, 3 LastOf.',
} as const satisfies ArgSpec;

export const cellsizeTypeArg = {
  kind: 'enum',
  values: [0, 1, 2, 3, 4],
  names: CellsizeType,
  default: 0,
  doc: 'Output cell size when inputs differ: 0 FirstOf, 1 MinOf, 2 MaxOf, 3 MeanOf, 4 LastOf.',
} as const satisfies ArgSpec;

/** The grid part of a RasterInfo. */
export type Grid = Pick<RasterInfo, 'width' | 'height' | 'extent' | 'cellSize' | 'spatialReference'>;

const EPS = 1e-6;

/** What `outputGrid` checks besides the grid itself. */
export interface GridChecks {
  /**
   * Paths of `inputs` relative to the function (e.g. `rasterFunctionArguments.Raster2`), for the
   * errors; default `rasterFunctionArguments` for every input.
   */
  readonly paths?: readonly (string | undefined)[];
  /**
   * Whether an output pixel needs every raster input to be valid (NoData propagates, as in
   * Arithmetic): then inputs without a common area would give an output that is entirely NoData
   * under any ExtentType. Default true; false for functions that leave NoData inputs out (the
   * IgnoreNoData statistics), where only an input that does not reach the output extent at all is
   * refused.
   */
  readonly needsAll?: boolean;
}

const EXTENT_NAMES = ['FirstOf', 'IntersectionOf', 'UnionOf', 'LastOf'];

/**
 * The output grid of a function over `inputs` (constants ignored); undefined when every input is a
 * constant. Errors, INVALID_ARGUMENT at the path of the input concerned, naming the extents: inputs
 * that do not overlap where the output would be entirely NoData because of it (an empty
 * intersection; inputs without a common area when every pixel needs them all; an input outside
 * the FirstOf/LastOf extent). UNSUPPORTED_INPUT when a spatial reference cannot be transformed.
 */
export function outputGrid(
  inputs: readonly RasterInfo[],
  extentType: number,
  cellsizeType: number,
  checks: GridChecks = {},
): Grid | undefined {
  const indexes = inputs.map((_, k) => k).filter((k) => inputs[k]!.constant === undefined);
  const rasters = indexes.map((k) => inputs[k]!);
  const first = rasters[0];
  if (first === undefined) return undefined;
  const sr = first.spatialReference;
  // Extents and cell sizes in the first raster's spatial reference.
  const boxes = rasters.map((r, k) => {
    if (k === 0 || sameSpatialReference(r.spatialReference, sr)) return { extent: r.extent, cell: r.cellSize };
    const [from, to] = reprojection(r.spatialReference, sr, ARGUMENTS);
    const e = transformExtent(r.extent, from, to);
    if (e === undefined) {
      throw unsupportedInput(ARGUMENTS, 'an input extent cannot be transformed into the first input’s spatial reference');
    }
    return { extent: e, cell: { x: (e.xmax - e.xmin) / r.width, y: (e.ymax - e.ymin) / r.height } };
  });
  const last = boxes[boxes.length - 1]!;
  const cx = pick(
    boxes.map((b) => b.cell.x),
    cellsizeType,
  );
  const cy = pick(
    boxes.map((b) => b.cell.y),
    cellsizeType,
  );
  checkOverlap(
    rasters,
    boxes.map((b) => b.extent),
    indexes.map((k) => checks.paths?.[k]),
    extentType,
    checks.needsAll ?? true,
  );

  let e: Extent;
  let mode: 'round' | 'out' | 'in' = 'round';
  switch (extentType) {
    case ExtentType.IntersectionOf:
      e = boxes.reduce<Extent>((a, b) => intersection(a, b.extent), boxes[0]!.extent);
      mode = 'in';
      break;
    case ExtentType.UnionOf:
      e = boxes.reduce<Extent>(
        (a, b) => ({
          xmin: Math.min(a.xmin, b.extent.xmin),
          ymin: Math.min(a.ymin, b.extent.ymin),
          xmax: Math.max(a.xmax, b.extent.xmax),
          ymax: Math.max(a.ymax, b.extent.ymax),
        }),
        boxes[0]!.extent,
      );
      mode = 'out';
      break;
    case ExtentType.LastOf:
      e = last.extent;
      break;
    default:
      e = first.extent;
  }
  const x0 = first.extent.xmin;
  const y0 = first.extent.ymax;
  const [c0, c1] = snap((e.xmin - x0) / cx, (e.xmax - x0) / cx, mode);
  const [r0, r1] = snap((y0 - e.ymax) / cy, (y0 - e.ymin) / cy, mode);
  const xmin = x0 + c0 * cx;
  const ymax = y0 - r0 * cy;
  return {
    width: c1 - c0,
    height: r1 - r0,
    extent: { xmin, ymax, xmax: xmin + (c1 - c0) * cx, ymin: ymax - (r1 - r0) * cy },
    cellSize: { x: cx, y: cy },
    ...(sr ? { spatialReference: sr } : {}),
  };
}

const intersection = (a: Extent, b: Extent): Extent => ({
  xmin: Math.max(a.xmin, b.xmin),
  ymin: Math.max(a.ymin, b.ymin),
  xmax: Math.min(a.xmax, b.xmax),
  ymax: Math.min(a.ymax, b.ymax),
});

const isEmpty = (e: Extent): boolean => !(e.xmax > e.xmin && e.ymax > e.ymin);

const num = (v: number): string => String(Number(v.toPrecision(10)));
const box = (e: Extent): string => `[${num(e.xmin)}, ${num(e.ymin)}, ${num(e.xmax)}, ${num(e.ymax)}]`;

function srName(sr: RasterInfo['spatialReference']): string {
  if (!sr) return 'no spatial reference';
  if (sr.wkid !== undefined) return `EPSG:${sr.wkid}`;
  const name = /^\s*(?:PROJCS|GEOGCS|PROJCRS|GEOGCRS|GEODCRS)\["([^"]+)"/i.exec(sr.wkt ?? '')?.[1];
  return name ?? sr.proj4 ?? 'a custom spatial reference';
}

/**
 * Inputs that would leave the output entirely NoData, or contribute nothing to it, are refused
 * when the rule is built (a Landsat scene and a DEM half a world apart). `extents` are in the first
 * raster's spatial reference.
 */
function checkOverlap(
  rasters: readonly RasterInfo[],
  extents: readonly Extent[],
  paths: readonly (string | undefined)[],
  extentType: number,
  needsAll: boolean,
): void {
  const name = (k: number): string => {
    const p = paths[k];
    return p === undefined ? `input ${k + 1}` : p.slice(p.lastIndexOf('.') + 1);
  };
  const describe = (k: number): string => {
    const own = `${name(k)} covers ${box(rasters[k]!.extent)} in ${srName(rasters[k]!.spatialReference)}`;
    return k === 0 || sameSpatialReference(rasters[k]!.spatialReference, rasters[0]!.spatialReference)
      ? own
      : `${own}, that is ${box(extents[k]!)} in ${srName(rasters[0]!.spatialReference)}`;
  };
  const fail = (k: number, why: string): never => {
    throw invalidArgument(
      paths[k] ?? ARGUMENTS,
      `${why}. Check that the inputs show the same place and that their spatial references are right.`,
    );
  };
  const mode = EXTENT_NAMES[extentType] ?? 'FirstOf';
  if (extentType === ExtentType.IntersectionOf || needsAll) {
    let common = extents[0]!;
    for (let k = 1; k < extents.length; k++) {
      const next = intersection(common, extents[k]!);
      if (isEmpty(next)) {
        const before =
          k === 1
            ? describe(0)
            : `the common area of ${rasters
                .slice(0, k)
                .map((_, j) => name(j))
                .join(', ')} is ${box(common)} in ${srName(rasters[0]!.spatialReference)}`;
        fail(
          k,
          `the input rasters do not overlap: ${describe(k)}; ${before}. ` +
            (extentType === ExtentType.IntersectionOf
              ? 'With ExtentType IntersectionOf the output would be empty'
              : `Every output pixel needs all of them, so the output would be entirely NoData (ExtentType ${mode})`),
        );
      }
      common = next;
    }
    return;
  }
  // Functions that leave NoData inputs out: an input outside the output extent contributes nothing.
  if (extentType === ExtentType.UnionOf) return;
  const ref = extentType === ExtentType.LastOf ? extents.length - 1 : 0;
  for (let k = 0; k < extents.length; k++) {
    if (k !== ref && isEmpty(intersection(extents[k]!, extents[ref]!))) {
      fail(
        k,
        `${describe(k)}, which does not overlap the output extent: ${describe(ref)} (ExtentType ${mode}). ${name(k)} would contribute nothing`,
      );
    }
  }
}

function pick(values: readonly number[], cellsizeType: number): number {
  switch (cellsizeType) {
    case CellsizeType.MinOf:
      return Math.min(...values);
    case CellsizeType.MaxOf:
      return Math.max(...values);
    case CellsizeType.MeanOf:
      return values.reduce((a, b) => a + b, 0) / values.length;
    case CellsizeType.LastOf:
      return values[values.length - 1]!;
    default:
      return values[0]!;
  }
}

/** Grid-line indexes [lo, hi) for an edge interval [a, b] in cells from the origin; at least one cell. */
function snap(a: number, b: number, mode: 'round' | 'out' | 'in'): [number, number] {
  let lo: number;
  let hi: number;
  if (mode === 'in') {
    lo = Math.ceil(a - EPS);
    hi = Math.floor(b + EPS);
    if (hi <= lo) {
      lo = Math.floor(a + EPS);
      hi = Math.ceil(b - EPS);
    }
  } else if (mode === 'out') {
    lo = Math.floor(a + EPS);
    hi = Math.ceil(b - EPS);
  } else {
    lo = Math.round(a);
    hi = Math.round(b);
  }
  if (hi <= lo) hi = lo + 1;
  return [lo, hi];
}

/**
 * How an input is resampled onto the output grid. ASSUMPTION (spec §1.5: bilinear for continuous,
 * nearest for thematic; [ours] on what is thematic): integer pixel types and rasters with a
 * colormap are thematic (class codes, counts, bit flags, palettes) and get nearest neighbour;
 * floating-point rasters are continuous and get bilinear.
 */
export function alignMethod(info: RasterInfo): AlignSpec {
  return { method: isInteger(info.pixelType) || info.colormap !== undefined ? 'nearest' : 'bilinear' };
}

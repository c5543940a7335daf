/**
 * What a raster is (`RasterInfo`: size, bands, type, grid, spatial reference, NoData) and what a
 * piece of it holds (`PixelBlock`: planar bands over a rectangle plus one validity mask shared by all
 * bands, 1 valid, 0 NoData or outside the raster).
 */
import { allocatePlane, type PixelType, type Plane } from './pixel-type.js';
import type { Rect } from './rect.js';
import type { Multidimensional } from './multidim.js';

/** Map extent in the spatial reference's units; the grid's pixel (0, 0) has its top-left at (xmin, ymax). */
export interface Extent {
  readonly xmin: number;
  readonly ymin: number;
  readonly xmax: number;
  readonly ymax: number;
}

export interface SpatialReference {
  /** EPSG (or vendor) well-known id, when known. */
  readonly wkid?: number;
  readonly wkt?: string;
  /** proj4 definition, when known. */
  readonly proj4?: string;
  /** Angular units (degrees): terrain functions convert cell sizes to metres. */
  readonly geographic?: boolean;
  /** Linear unit of a projected system, metres per unit (1 for metres, 0.3048 for feet). */
  readonly metersPerUnit?: number;
}

export interface BandStatistics {
  readonly min: number;
  readonly max: number;
  readonly mean?: number;
  readonly stdDev?: number;
  readonly count?: number;
  readonly median?: number;
  readonly mode?: number;
}

export interface Histogram {
  readonly size: number;
  readonly min: number;
  readonly max: number;
  readonly counts: readonly number[];
}

/**
 * A colormap (palette) attached to a single-band raster: entries sorted by value (unique), colours
 * in the same order. Set by sources with a palette and by the Colormap function; turned into RGB
 * by ColormapToRGB and by the PNG/JPEG encoders.
 */
export interface Colormap {
  /** Ascending, unique. */
  readonly values: Float64Array;
  /** r, g, b per entry. */
  readonly rgb: Uint8Array;
  /** Present when any entry has an alpha column; 255 for entries without one. */
  readonly alpha?: Uint8Array;
}

export interface RasterInfo {
  readonly width: number;
  readonly height: number;
  readonly bandCount: number;
  readonly pixelType: PixelType;
  /** The value masked pixels take when written to a format without masks; undefined: none declared. */
  readonly noData?: number;
  readonly extent: Extent;
  /** Positive ground units per pixel. */
  readonly cellSize: { readonly x: number; readonly y: number };
  readonly spatialReference?: SpatialReference;
  readonly bandNames?: readonly string[];
  readonly statistics?: readonly BandStatistics[];
  readonly histograms?: readonly Histogram[];
  /** Palette of a single-band raster (see `Colormap`). */
  readonly colormap?: Colormap;
  /** A constant operand (a scalar in Arithmetic/Local): one value per band, any grid. */
  readonly constant?: readonly number[];
  /** The sensor that acquired the pixels (GDAL metadata SENSOR_NAME / SensorName), e.g. `Landsat 7 ETM+`. */
  readonly sensorName?: string;
  /**
   * What the pixel values are, for functions that need unaltered sensor values (TasseledCap):
   * `'source'` = exactly as the source stores them. Sources set it; functions that copy values
   * unchanged (ExtractBand, CompositeBand, Identity, Clip, Mask: they spread their input's info)
   * keep it; a function that computes new values builds a fresh RasterInfo and so drops it
   * (undefined = altered or unknown). `'apparentReflectance'`: after an apparent-reflectance step.
   */
  readonly radiometry?: 'source' | 'apparentReflectance';
  /**
   * Variables and dimensions of a multidimensional raster (see core/multidim.ts): which bands
   * hold which slice. Functions that keep the band layout (spread the input's info) keep it; read
   * it through `multidimOf(info)`, which ignores it when it no longer fits `bandCount`.
   */
  readonly multidimensional?: Multidimensional;
}

export interface PixelBlock {
  /** Raster-space rectangle; may extend past the raster's edge (mask 0 there). */
  readonly rect: Rect;
  readonly pixelType: PixelType;
  /** One row-major typed array per band (complex types: interleaved re, im). */
  readonly bands: Plane[];
  /** 1 valid, 0 NoData or outside; shared by all bands. */
  readonly mask: Uint8Array;
}

/** A block of `bandCount` zeroed bands; the mask starts all valid (kernels clear what is not). */
export function allocateBlock(rect: Rect, pixelType: PixelType, bandCount: number): PixelBlock {
  const n = rect.width * rect.height;
  const bands: Plane[] = [];
  for (let b = 0; b < bandCount; b++) bands.push(allocatePlane(pixelType, n));
  return { rect, pixelType, bands, mask: new Uint8Array(n).fill(1) };
}

/**
 * Whether mask[start, start + len) is all 1 (every pixel valid), read four bytes at a time where
 * aligned: lets kernels skip per-pixel mask tests.
 */
export function maskAllValid(mask: Uint8Array, start = 0, len = mask.length - start): boolean {
  const end = start + len;
  let i = start;
  while (i < end && ((mask.byteOffset + i) & 3) !== 0) if (mask[i++] !== 1) return false;
  const words = (end - i) >> 2;
  if (words > 0) {
    const w = new Uint32Array(mask.buffer, mask.byteOffset + i, words);
    for (let k = 0; k < words; k++) if (w[k] !== 0x01010101) return false;
    i += words << 2;
  }
  for (; i < end; i++) if (mask[i] !== 1) return false;
  return true;
}

/** Grid helpers: the info's extent and cell size describe an affine, north-up grid. */
export function pixelToMap(info: Pick<RasterInfo, 'extent' | 'cellSize'>, px: number, py: number): [number, number] {
  return [info.extent.xmin + px * info.cellSize.x, info.extent.ymax - py * info.cellSize.y];
}

export function mapToPixel(info: Pick<RasterInfo, 'extent' | 'cellSize'>, x: number, y: number): [number, number] {
  return [(x - info.extent.xmin) / info.cellSize.x, (info.extent.ymax - y) / info.cellSize.y];
}

/** The info of the window `w` of a raster's grid (same cell size, shifted extent). */
export function windowInfo(info: RasterInfo, w: Rect): RasterInfo {
  const [xmin, ymax] = pixelToMap(info, w.x, w.y);
  const extent = { xmin, ymax, xmax: xmin + w.width * info.cellSize.x, ymin: ymax - w.height * info.cellSize.y };
  return { ...info, width: w.width, height: w.height, extent };
}

/** Whether two rasters sit on the same grid (size, extent and cell size within 1e-9 of a cell). */
export function sameGrid(a: RasterInfo, b: RasterInfo): boolean {
  const tol = 1e-9 * Math.max(a.cellSize.x, a.cellSize.y);
  return (
    a.width === b.width &&
    a.height === b.height &&
    Math.abs(a.extent.xmin - b.extent.xmin) <= tol &&
    Math.abs(a.extent.ymax - b.extent.ymax) <= tol &&
    Math.abs(a.cellSize.x - b.cellSize.x) <= tol &&
    Math.abs(a.cellSize.y - b.cellSize.y) <= tol
  );
}

/** Copy `src` into `dst` where their rectangles overlap (same pixel type and band count). */
export function copyInto(src: PixelBlock, dst: PixelBlock): void {
  const x0 = Math.max(src.rect.x, dst.rect.x);
  const y0 = Math.max(src.rect.y, dst.rect.y);
  const x1 = Math.min(src.rect.x + src.rect.width, dst.rect.x + dst.rect.width);
  const y1 = Math.min(src.rect.y + src.rect.height, dst.rect.y + dst.rect.height);
  if (x1 <= x0 || y1 <= y0) return;
  const w = x1 - x0;
  const k = src.bands[0] !== undefined && src.bands[0].length === 2 * src.mask.length ? 2 : 1;
  for (let y = y0; y < y1; y++) {
    const so = (y - src.rect.y) * src.rect.width + (x0 - src.rect.x);
    const d = (y - dst.rect.y) * dst.rect.width + (x0 - dst.rect.x);
    dst.mask.set(src.mask.subarray(so, so + w), d);
    for (let b = 0; b < dst.bands.length; b++) {
      const s = src.bands[b]!;
      (dst.bands[b] as Plane).set(s.subarray(k * so, k * (so + w)), k * d);
    }
  }
}

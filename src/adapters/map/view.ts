/**
 * The geometry of a drawn map, protocol-neutral: the extent drawn, its scale at a DPI, and the
 * screen <-> map transform. The SOAP map service reads MapDescriptions into a `DrawnMap`
 * (soap/display.ts); drawing, tiles and screen-point operations use it.
 */
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import { sameSpatialReference } from '../../graph/align.js';
import { transformExtent } from '../../graph/warp.js';

/** Metres per inch: the scale of a drawing is ground metres per pixel x DPI / this. */
export const METERS_PER_INCH = 0.0254;
/**
 * Metres per degree for scales of geographic maps. Decision: one degree of the WGS 84 equator
 * (6378137 x pi / 180), the figure the vendor's clients use for geographic tiling schemes.
 */
export const METERS_PER_DEGREE = (6378137 * Math.PI) / 180;

export interface DrawnMap {
  /** The extent drawn, in `spatialReference`: the request's, grown about its centre to the image's aspect. */
  readonly extent: Extent;
  readonly spatialReference: SpatialReference;
  readonly width: number;
  readonly height: number;
  readonly dpi: number;
  /** Map scale 1:`scale` at `dpi`. */
  readonly scale: number;
  /** Map units per pixel (square pixels). */
  readonly resolution: number;
}

/** Metres per map unit of `sr` (geographic: METERS_PER_DEGREE). */
export function metersPerUnit(sr: SpatialReference): number {
  return sr.geographic ? METERS_PER_DEGREE : (sr.metersPerUnit ?? 1);
}

/** The scale of `resolution` map units per pixel at `dpi`. */
export function scaleOf(resolution: number, dpi: number, sr: SpatialReference): number {
  return (resolution * metersPerUnit(sr) * dpi) / METERS_PER_INCH;
}

/** Map units per pixel of `scale` at `dpi`. */
export function resolutionOf(scale: number, dpi: number, sr: SpatialReference): number {
  return (scale * METERS_PER_INCH) / (dpi * metersPerUnit(sr));
}

/** An extent in `from` expressed in `to` (same extent when the SRs are the same). */
export function extentIn(extent: Extent, from: SpatialReference, to: SpatialReference): Extent {
  if (sameSpatialReference(from, to)) return extent;
  return transformExtent(extent, from, to);
}

/** Screen pixel (column, row from the top-left, pixel centres at +0.5) -> map point. */
export function toMap(m: DrawnMap, x: number, y: number): { x: number; y: number } {
  return { x: m.extent.xmin + (x + 0.5) * m.resolution, y: m.extent.ymax - (y + 0.5) * m.resolution };
}

/** Map point -> screen pixel (the pixel containing it; may lie outside the image). */
export function toScreen(m: DrawnMap, x: number, y: number): { x: number; y: number } {
  return { x: Math.floor((x - m.extent.xmin) / m.resolution), y: Math.floor((m.extent.ymax - y) / m.resolution) };
}

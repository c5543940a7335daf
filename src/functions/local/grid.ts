/**
 * Grid checks for functions with several inputs (Arithmetic, CompositeBand, ...), until the builder
 * inserts resampling nodes that put every input on the output grid (ARCHITECTURE "Functions"; the
 * band-math issue). Until then inputs must already share one grid, and saying so is a clear
 * UNSUPPORTED_INPUT rather than silently misaligned pixels.
 */
import { unsupportedInput } from '../../core/errors.js';
import { sameGrid, type RasterInfo } from '../../core/pixel-block.js';

/** Throw UNSUPPORTED_INPUT at `path` unless `other` lies on `first`'s grid and spatial reference. */
export function requireSameGrid(fn: string, first: RasterInfo, other: RasterInfo, path: string): void {
  const a = first.spatialReference?.wkid;
  const b = other.spatialReference?.wkid;
  if (a !== undefined && b !== undefined && a !== b) {
    throw unsupportedInput(
      path,
      `${fn}: inputs in different spatial references (wkid ${a} and ${b}) are not supported yet; ` +
        'reprojection of inputs comes with the band-math issue',
    );
  }
  if (!sameGrid(first, other)) {
    throw unsupportedInput(
      path,
      `${fn}: inputs on different grids (${first.width}x${first.height} vs ${other.width}x${other.height}, ` +
        'or different extent/cell size) are not supported yet; alignment of different grids comes with the band-math issue',
    );
  }
}

/**
 * DEFLATE compression of TIFF blocks (zlib streams): libdeflate (npm `libdeflate`, libdeflate's
 * compressor built to WebAssembly), the compressor GDAL itself links. At ZLEVEL 1 it is about 1.3x
 * node:zlib's speed on predictor-2 hillshade tiles and makes 5% smaller blocks; at level 6 about
 * 2x. Its streams are standard zlib streams that any inflater reads; for a given level the bytes
 * are deterministic, whatever thread makes them (the codec threads use the same module).
 * Levels 1-12, as GDAL's ZLEVEL with libdeflate (10-12: slowest, smallest).
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { zlib as libdeflateZlib } from 'libdeflate';

export const MIN_ZLEVEL = 1;
export const MAX_ZLEVEL = 12;

/** The package's entry as a file URL, for the codec threads to import. */
export const LIBDEFLATE_URL = pathToFileURL(createRequire(import.meta.url).resolve('libdeflate')).href;

/** A zlib stream of `data` at `level` (MIN_ZLEVEL..MAX_ZLEVEL). */
export function deflateZlib(data: Uint8Array, level: number): Uint8Array {
  return libdeflateZlib(data, level);
}

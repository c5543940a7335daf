/**
 * `openRaster(location)`: the one entry point the CLI and the rule builder use to turn a location
 * (a local path, a `file:` URL or an http(s) URL) into a `SourceNode`. Only GeoTIFF/COG is
 * readable today; other formats get a clear IO_ERROR so a new reader can slot in here later.
 */
import { extname } from 'node:path';
import { EngineError } from '../core/errors.js';
import type { SourceNode } from '../graph/types.js';
import { openGeoTiff, outsizeSource, type GeoTiffSource, type OpenOptions } from './geotiff-source.js';
import { isZarrStore, openMultidimManifest, openZarr, withBandDimensions } from './multidim-source.js';

export type { OpenOptions } from './geotiff-source.js';

/** A source that holds a file handle or connection until closed. */
export type RasterSource = GeoTiffSource;

/** Raster formats people may point at that have no reader yet. */
const NOT_YET = new Set(['.png', '.jpg', '.jpeg', '.mrf', '.img', '.nc', '.hdf', '.h5', '.jp2', '.vrt', '.crf', '.asc', '.dem']);

export async function openRaster(location: string, options: OpenOptions = {}): Promise<RasterSource> {
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(location) && !/^(https?|file):/i.test(location)) {
    throw new EngineError('IO_ERROR', `${location}: unsupported URL scheme (use a local path or an http(s) URL)`, { path: 'input' });
  }
  const path = /^https?:/i.test(location) ? new URL(location).pathname : location;
  const ext = extname(path).toLowerCase();
  if (NOT_YET.has(ext)) {
    throw new EngineError('IO_ERROR', `${location}: ${ext} inputs are not readable yet; only GeoTIFF/COG inputs are`, {
      path: 'input',
    });
  }
  // Multidimensional sources (io/multidim-source.ts): a JSON manifest of slices, a Zarr store
  // (a local directory), a GeoTIFF whose band metadata names dimension values.
  if (ext === '.json') return openMultidimManifest(location, options);
  if (await isZarrStore(location)) return openZarr(location, options);
  // ASSUMPTION (spec silent): anything else, including extensionless URLs (signed COG URLs), is
  // tried as a GeoTIFF; openGeoTiff says so clearly when it is not one.
  const source = await openGeoTiff(location, options);
  try {
    return await withBandDimensions(source, location);
  } catch (e) {
    // Malformed dimension metadata must not leave the file handle to the garbage collector.
    await source.close().catch(() => undefined);
    throw e;
  }
}

/** An `openRaster` that remembers what it opened, and `closeAll()` to close it (`openerScope`). */
export interface OpenerScope {
  readonly open: (location: string, options?: OpenOptions) => Promise<RasterSource>;
  /** Close every raster opened so far (errors ignored); later opens are remembered again. */
  closeAll(): Promise<void>;
}

/**
 * One scope of opened rasters: a render, an export, a worker's cached graph, a test. Whoever
 * opens rasters through `open` (e.g. `bindSources(..., scope.open)`) calls `closeAll()` when done,
 * on success and on error, so no file handle is left to the garbage collector.
 */
export function openerScope(): OpenerScope {
  const opened: RasterSource[] = [];
  return {
    open: async (location, options) => {
      const src = await openRaster(location, options);
      opened.push(src);
      return src;
    },
    closeAll: async () => {
      await Promise.all(opened.splice(0).map((src) => src.close().catch(() => undefined)));
    },
  };
}

/**
 * A downsampled (or upsampled) request, GDAL's `-outsize`: the first input becomes `width` x
 * `height`; every input is scaled by the same factors, width / baseWidth and height / baseHeight
 * (baseWidth x baseHeight: the first input's size), rounded, at least 1 pixel.
 */
export interface Outsize {
  readonly width: number;
  readonly height: number;
  readonly baseWidth: number;
  readonly baseHeight: number;
}

/**
 * `open`, with each raster read at its `outsize` size through `outsizeSource` (from the overview
 * GDAL would choose). Closing stays with `open`'s owner.
 */
export function outsizeOpener(
  open: (location: string, options?: OpenOptions) => Promise<RasterSource>,
  outsize: Outsize,
): (location: string, options?: OpenOptions) => Promise<SourceNode> {
  return async (location, options) => {
    const source = await open(location, options);
    const w = Math.max(1, Math.round((source.info.width * outsize.width) / outsize.baseWidth));
    const h = Math.max(1, Math.round((source.info.height * outsize.height) / outsize.baseHeight));
    return w === source.info.width && h === source.info.height ? source : outsizeSource(source, w, h);
  };
}

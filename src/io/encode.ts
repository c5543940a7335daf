/**
 * Choose an encoder by the output file's extension: .tif/.tiff -> GeoTIFF, .png -> PNG,
 * .jpg/.jpeg -> JPEG. An unknown extension is INVALID_ARGUMENT at `output`.
 */
import { EngineError } from '../core/errors.js';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { encodeJpeg, type JpegOptions } from './encode-jpeg.js';
import { encodePng, type PngOptions } from './encode-png.js';
import { encodeGeoTiff, type GeoTiffOptions } from './encode-tiff.js';

export type OutputFormat = 'tiff' | 'png' | 'jpeg';

export type EncodeOptions = GeoTiffOptions & PngOptions & JpegOptions;

const BY_EXTENSION: Readonly<Record<string, OutputFormat>> = { tif: 'tiff', tiff: 'tiff', png: 'png', jpg: 'jpeg', jpeg: 'jpeg' };

/** The output format a path's extension names (case-insensitive). */
export function formatOfPath(path: string): OutputFormat {
  const m = /\.([A-Za-z0-9]+)$/.exec(path);
  const format = m ? BY_EXTENSION[m[1]!.toLowerCase()] : undefined;
  if (!format) {
    throw new EngineError('INVALID_ARGUMENT', `cannot tell the output format of ${path}: use .tif, .tiff, .png, .jpg or .jpeg`, {
      path: 'output',
    });
  }
  return format;
}

export function encodeAs(format: OutputFormat, block: PixelBlock, info: RasterInfo, options: EncodeOptions = {}): Uint8Array {
  switch (format) {
    case 'tiff':
      return encodeGeoTiff(block, info, options);
    case 'png':
      return encodePng(block, info, options);
    case 'jpeg':
      return encodeJpeg(block, info, options);
  }
}

export function encodeByExtension(path: string, block: PixelBlock, info: RasterInfo, options: EncodeOptions = {}): Uint8Array {
  return encodeAs(formatOfPath(path), block, info, options);
}

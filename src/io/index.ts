/**
 * The engine's edges: raster sources and encoders.
 * - Sources: GeoTIFF/COG read by our own code (tiff-reader.ts parses the IFDs of classic TIFF
 *   and BigTIFF; decoders.ts decodes raw, DEFLATE, LZW, PackBits, predictors and NBITS blocks).
 *   geotiff.js is loaded only for the block decoders of JPEG, LERC, ZSTD and WebP, and only when
 *   a file uses one of them. Multidimensional sources (multidim-source.ts) beside them.
 * - Encoders: GeoTIFF (encodeGeoTiff in memory, TiffStreamWriter to a file, one TIFF core:
 *   tiff-ifd.ts, tiff-predictors.ts, tiff-options.ts), PNG, JPEG; `encodeAs` picks one by format.
 */
export { openGeoTiff, outsizeSource, rasterInfoOf, type GeoTiffSource, type OpenOptions } from './geotiff-source.js';
export { openerScope, openRaster, outsizeOpener, type OpenerScope, type Outsize, type RasterSource } from './source.js';
export { encodeGeoTiff, type GeoTiffOptions } from './encode-tiff.js';
export { outputNoData } from './tiff-options.js';
export { encodePng, type PngOptions } from './encode-png.js';
export { encodeJpeg, type JpegOptions } from './encode-jpeg.js';
export { encodeAs, encodeByExtension, formatOfPath, type EncodeOptions, type OutputFormat } from './encode.js';
export { describeRaster, computeSourceStatistics, type DescribeOptions, type RasterSummary } from './info.js';
export { proj4ForEpsg } from './srs.js';
export { pamAuxXml, worldFilePath, worldFileText, writeGeoreferenceSidecars } from './georeference-sidecars.js';

/**
 * The engine's edges: raster sources (GeoTIFF/COG through geotiff.js) and encoders (GeoTIFF,
 * PNG, JPEG). Each sits behind a small function so a faster reader or a streaming tiled writer can
 * replace it without touching the engine.
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

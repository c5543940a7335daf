/**
 * Georeferencing beside a PNG or JPEG render, as GDAL writes it with `-co WORLDFILE=YES` plus its
 * PAM side-car, so `gdalinfo out.png` (and QGIS, ArcGIS) place the image exactly where the GeoTIFF
 * render of the same request lies:
 *
 * - A world file, `<name>.pgw` for `.png`, `<name>.jgw` for `.jpg`/`.jpeg` (first and last letter
 *   of the extension plus `w`, the name GDAL looks for first): six lines A, D, B, E, C, F, i.e.
 *   pixel width, 0, 0, minus the pixel height, and the map coordinates of the CENTRE of the
 *   top-left pixel (GDAL's world-file convention; the GeoTIFF's origin is the pixel's corner).
 * - `<file>.aux.xml`, GDAL's PAM format: `<PAMDataset><SRS>...</SRS></PAMDataset>`. The SRS is the
 *   raster's WKT when it has one, else `EPSG:<code>` for an EPSG wkid (Esri's Web Mercator ids as
 *   EPSG:3857), else its proj4 definition: the forms GDAL's PAM reader accepts
 *   (OSRSetFromUserInput). Without any spatial reference no `.aux.xml` is written.
 *
 * Written next to the image; a failure is IO_ERROR naming the file, at `output`.
 */
import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { EngineError } from '../core/errors.js';
import type { RasterInfo, SpatialReference } from '../core/pixel-block.js';

/** Esri ids that are EPSG codes under another name. */
const WKID_ALIASES: Readonly<Record<number, number>> = { 102100: 3857, 102113: 3857, 900913: 3857 };

/** The world-file path GDAL reads first for an image: `.png` -> `.pgw`, `.jpg` -> `.jgw`. */
export function worldFilePath(imagePath: string): string {
  const ext = extname(imagePath);
  if (ext.length < 3)
    throw new EngineError('INVALID_ARGUMENT', `cannot name a world file for ${imagePath}: it has no extension`, { path: 'output' });
  return imagePath.slice(0, -ext.length) + `.${ext[1]}${ext[ext.length - 1]}w`.toLowerCase();
}

const num = (v: number): string => v.toFixed(10);

/** The six lines of a world file (pixel-centre convention), as GDAL writes them (%.10f). */
export function worldFileText(info: RasterInfo): string {
  const { x: sx, y: sy } = info.cellSize;
  const lines = [sx, 0, 0, -sy, info.extent.xmin + sx / 2, info.extent.ymax - sy / 2];
  return `${lines.map(num).join('\n')}\n`;
}

/** The SRS as GDAL's PAM reader takes it; undefined when there is none to say. */
function pamSrs(sr: SpatialReference | undefined): string | undefined {
  if (sr === undefined) return undefined;
  if (sr.wkt !== undefined && sr.wkt.trim() !== '') return sr.wkt.trim();
  if (sr.wkid !== undefined) {
    const code = WKID_ALIASES[sr.wkid] ?? sr.wkid;
    if (code > 0 && code < 100000) return `EPSG:${code}`;
  }
  if (sr.proj4 !== undefined && sr.proj4.trim() !== '') return sr.proj4.trim();
  return undefined;
}

const escapeXml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The `.aux.xml` text (GDAL PAM) carrying the raster's SRS; undefined without a spatial reference. */
export function pamAuxXml(info: RasterInfo): string | undefined {
  const srs = pamSrs(info.spatialReference);
  if (srs === undefined) return undefined;
  // No dataAxisToSRSAxisMapping: GDAL then takes the traditional GIS order (x = easting or longitude).
  return `<PAMDataset>\n  <SRS>${escapeXml(srs)}</SRS>\n</PAMDataset>\n`;
}

/**
 * Write the world file and the `.aux.xml` beside `imagePath` (a PNG or JPEG already written for
 * the grid `info`). Returns the paths written.
 */
export async function writeGeoreferenceSidecars(imagePath: string, info: RasterInfo): Promise<string[]> {
  const out: [string, string][] = [[worldFilePath(imagePath), worldFileText(info)]];
  const aux = pamAuxXml(info);
  if (aux !== undefined) out.push([`${imagePath}.aux.xml`, aux]);
  for (const [path, text] of out) {
    try {
      await writeFile(path, text);
    } catch (e) {
      throw new EngineError('IO_ERROR', `cannot write ${path}: ${(e as Error).message}`, { path: 'output', cause: e });
    }
  }
  return out.map(([p]) => p);
}

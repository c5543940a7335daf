/**
 * Tile schemes of the image service's `tile/{level}/{row}/{col}` endpoint: the vendor's standard
 * Web Mercator scheme (wkid 102100 / latestWkid 3857, 256 px tiles at 96 dpi, origin at the
 * top-left corner of the square world) and a "native" scheme on the raster's own grid.
 *
 * Decision: the native scheme's level 0 is the coarsest power-of-two reduction of the raster's
 * pixel size at which the whole raster fits one 256 px tile; level n halves the resolution n times,
 * and the last level is the raster's own resolution. Its origin is the raster's top-left corner, so
 * native tiles at the last level are aligned with the raster's pixels (no resampling).
 */
import type { Extent, RasterInfo, SpatialReference } from '../../core/pixel-block.js';

export const TILE_SIZE = 256;
export const TILE_DPI = 96;

/** One level of detail. */
export interface Lod {
  readonly level: number;
  readonly resolution: number;
  readonly scale: number;
}

export interface TileScheme {
  readonly kind: 'webmercator' | 'native';
  readonly origin: { readonly x: number; readonly y: number };
  readonly spatialReference: SpatialReference & { readonly latestWkid?: number };
  readonly lods: readonly Lod[];
  readonly rows: number;
  readonly cols: number;
}

/** Half the side of the Web Mercator square world, metres. */
export const WEB_MERCATOR_HALF = 20037508.342787;

/**
 * The vendor's standard Web Mercator levels (ArcGIS Online / Bing / Google scheme), as the vendor
 * lists them in a tiled service's tileInfo: resolution halves at each level, scale at 96 dpi.
 */
export const WEB_MERCATOR_LODS: readonly Lod[] = [
  [156543.03392800014, 5.91657527591555e8],
  [78271.51696399994, 2.95828763795777e8],
  [39135.75848200009, 1.47914381897889e8],
  [19567.87924099992, 7.3957190948944e7],
  [9783.93962049996, 3.6978595474472e7],
  [4891.96981024998, 1.8489297737236e7],
  [2445.98490512499, 9244648.868618],
  [1222.992452562495, 4622324.434309],
  [611.4962262813797, 2311162.217155],
  [305.74811314055756, 1155581.108577],
  [152.87405657041106, 577790.554289],
  [76.43702828507324, 288895.277144],
  [38.21851414253662, 144447.638572],
  [19.10925707126831, 72223.819286],
  [9.554628535634155, 36111.909643],
  [4.77731426794937, 18055.954822],
  [2.388657133974685, 9027.977411],
  [1.1943285668550503, 4513.988705],
  [0.5971642835598172, 2256.994353],
  [0.29858214164761665, 1128.497176],
  [0.14929107082380833, 564.248588],
  [0.07464553541190416, 282.124294],
  [0.03732276770595208, 141.062147],
  [0.01866138385297604, 70.5310735],
].map(([resolution, scale], level) => ({ level, resolution: resolution!, scale: scale! }));

export const WEB_MERCATOR_SCHEME: TileScheme = {
  kind: 'webmercator',
  origin: { x: -WEB_MERCATOR_HALF, y: WEB_MERCATOR_HALF },
  spatialReference: { wkid: 102100, latestWkid: 3857 },
  lods: WEB_MERCATOR_LODS,
  rows: TILE_SIZE,
  cols: TILE_SIZE,
};

/** The vendor's inches per metre: scale = resolution * metres-per-unit * dpi * 39.37. */
const INCHES_PER_METRE = 39.37;

/** The native scheme of a raster (see the Decision at the top of this file). */
export function nativeScheme(info: RasterInfo): TileScheme {
  const base = Math.max(info.cellSize.x, info.cellSize.y);
  let levels = 0;
  while (Math.max(info.width, info.height) / 2 ** levels > TILE_SIZE && levels < 30) levels++;
  const metersPerUnit = info.spatialReference?.geographic ? (Math.PI * 6378137) / 180 : (info.spatialReference?.metersPerUnit ?? 1);
  const lods: Lod[] = [];
  for (let level = 0; level <= levels; level++) {
    const resolution = base * 2 ** (levels - level);
    lods.push({ level, resolution, scale: resolution * metersPerUnit * TILE_DPI * INCHES_PER_METRE });
  }
  const sr = info.spatialReference;
  return {
    kind: 'native',
    origin: { x: info.extent.xmin, y: info.extent.ymax },
    spatialReference: sr?.wkid !== undefined ? { wkid: sr.wkid, latestWkid: sr.wkid } : sr?.wkt !== undefined ? { wkt: sr.wkt } : {},
    lods,
    rows: TILE_SIZE,
    cols: TILE_SIZE,
  };
}

/** The map extent of tile (level, row, col); undefined when the level does not exist. */
export function tileExtent(scheme: TileScheme, level: number, row: number, col: number): Extent | undefined {
  const lod = scheme.lods[level];
  if (lod === undefined || !Number.isInteger(row) || !Number.isInteger(col) || row < 0 || col < 0) return undefined;
  const w = lod.resolution * scheme.cols;
  const h = lod.resolution * scheme.rows;
  const xmin = scheme.origin.x + col * w;
  const ymax = scheme.origin.y - row * h;
  return { xmin, ymin: ymax - h, xmax: xmin + w, ymax };
}

/** The range of rows and columns of `level` that touch `extent` (in the scheme's SR); undefined when none. */
export function tileRange(
  scheme: TileScheme,
  level: number,
  extent: Extent,
): { readonly minRow: number; readonly maxRow: number; readonly minCol: number; readonly maxCol: number } | undefined {
  const lod = scheme.lods[level];
  if (lod === undefined) return undefined;
  const w = lod.resolution * scheme.cols;
  const h = lod.resolution * scheme.rows;
  const eps = 1e-9 * w;
  const minCol = Math.max(0, Math.floor((extent.xmin - scheme.origin.x) / w + 1e-9));
  const maxCol = Math.floor((extent.xmax - scheme.origin.x - eps) / w);
  const minRow = Math.max(0, Math.floor((scheme.origin.y - extent.ymax) / h + 1e-9));
  const maxRow = Math.floor((scheme.origin.y - extent.ymin - eps) / h);
  if (maxCol < minCol || maxRow < minRow) return undefined;
  return { minRow, maxRow, minCol, maxCol };
}

/** Whether two extents overlap with a positive area. */
export function overlaps(a: Extent, b: Extent): boolean {
  return a.xmin < b.xmax && b.xmin < a.xmax && a.ymin < b.ymax && b.ymin < a.ymax;
}

/** The `tileInfo` object of the service's JSON for `scheme`, `format` being the tile image format. */
export function tileInfoJson(scheme: TileScheme, format: string): Record<string, unknown> {
  return {
    rows: scheme.rows,
    cols: scheme.cols,
    dpi: TILE_DPI,
    format: format.toUpperCase() === 'JPGPNG' ? 'MIXED' : format.toUpperCase(),
    compressionQuality: 75,
    origin: { x: scheme.origin.x, y: scheme.origin.y },
    spatialReference: scheme.spatialReference,
    lods: scheme.lods.map((l) => ({ level: l.level, resolution: l.resolution, scale: l.scale })),
  };
}

/**
 * The image service resource (`GET .../ImageServer?f=json|pjson|html`): the fields of the vendor's
 * ImageServer resource that clients read (OpenLayers' ImageArcGISRest/TileArcGISRest, the vendor's
 * JS API): extents and spatial reference, pixel size, bands, pixel type, NoData, real statistics,
 * the raster functions (the registry plus the service's published templates), capabilities and
 * the size limits. Sibling operations add their fields (tiles: `singleFusedMapCache`, `tileInfo`)
 * through `InfoExtension`s.
 */
import type { RasterInfo } from '../../core/pixel-block.js';
import { escapeHtml } from '../rest.js';
import { spatialReferenceJson } from './render-request.js';
import { registryFunctionInfos, type OpenedImageService } from './service.js';

/** The REST API version the services directory reports (the vendor's 11.1 layout). */
export const CURRENT_VERSION = 11.1;

/** Operations implemented by this module family; `capabilities` lists what clients may call. */
export const CAPABILITIES = 'Image,Metadata';

/** Fields a sibling module adds to the service resource (tiles, histograms...). */
export type InfoExtension = (service: OpenedImageService, context: { readonly serviceUrl: string }) => Record<string, unknown>;

/** A number JSON can hold, else its text ('NaN', 'Infinity'). */
const num = (v: number): number | string => (Number.isFinite(v) ? v : String(v));

function extentJson(info: RasterInfo): Record<string, unknown> {
  const sr = spatialReferenceJson(info.spatialReference);
  return { ...info.extent, ...(sr ? { spatialReference: sr } : {}) };
}

/** The vendor's `serviceDataType`: elevation-like single floats, RGB(A) 8-bit, else generic. */
function serviceDataType(info: RasterInfo): string {
  if (info.bandCount === 1 && (info.pixelType === 'F32' || info.pixelType === 'F64')) return 'esriImageServiceDataTypeElevation';
  if ((info.bandCount === 3 || info.bandCount === 4) && info.pixelType === 'U8') return 'esriImageServiceDataTypeRGB';
  return 'esriImageServiceDataTypeGeneric';
}

/** The service resource as JSON. */
export function serviceInfo(
  service: OpenedImageService,
  serviceUrl: string,
  extensions: readonly InfoExtension[] = [],
): Record<string, unknown> {
  const info = service.info;
  const s = service.settings;
  const stats = service.statistics;
  const per = (pick: (i: number) => number | undefined): (number | string | null)[] =>
    Array.from({ length: info.bandCount }, (_, i) => {
      const v = pick(i);
      return v === undefined ? null : num(v);
    });
  const extent = extentJson(info);
  const noData = info.noData;
  const templates = s.templates.map((t) => ({ name: t.name, description: t.description, help: t.help }));
  const base: Record<string, unknown> = {
    currentVersion: CURRENT_VERSION,
    serviceDescription: s.serviceDescription,
    name: service.name,
    description: s.serviceDescription,
    extent,
    initialExtent: extent,
    fullExtent: extent,
    ...(spatialReferenceJson(info.spatialReference) ? { spatialReference: spatialReferenceJson(info.spatialReference) } : {}),
    pixelSizeX: info.cellSize.x,
    pixelSizeY: info.cellSize.y,
    bandCount: info.bandCount,
    bandNames: info.bandNames ?? Array.from({ length: info.bandCount }, (_, i) => `Band_${i + 1}`),
    pixelType: info.pixelType,
    // Decision: one raster, no mosaic of resolutions: 0 means "no limit" (the vendor's value then).
    minPixelSize: 0,
    maxPixelSize: 0,
    copyrightText: s.copyrightText,
    serviceDataType: serviceDataType(info),
    minValues: per((i) => stats[i]?.min),
    maxValues: per((i) => stats[i]?.max),
    meanValues: per((i) => stats[i]?.mean),
    stdvValues: per((i) => stats[i]?.stdDev),
    noDataValue: noData === undefined ? null : num(noData),
    noDataValues: noData === undefined ? [] : Array.from({ length: info.bandCount }, () => num(noData)),
    objectIdField: '',
    fields: [],
    capabilities: CAPABILITIES,
    defaultMosaicMethod: 'Center',
    allowedMosaicMethods: 'Center,None',
    sortField: '',
    sortValue: null,
    mosaicOperator: 'First',
    defaultCompressionQuality: 75,
    defaultResamplingMethod: 'Nearest',
    maxImageHeight: s.maxImageHeight,
    maxImageWidth: s.maxImageWidth,
    maxRecordCount: s.maxRecordCount,
    maxDownloadImageCount: 0,
    maxDownloadSizeLimit: 0,
    maxMosaicImageCount: 1,
    allowRasterFunction: true,
    rasterFunctionInfos: [
      { name: 'None', description: 'The raster as stored, without a rendering rule.', help: '' },
      ...templates,
      ...registryFunctionInfos(),
    ],
    rasterTypeInfos: [],
    mensurationCapabilities: 'None',
    hasHistograms: false,
    hasColormap: info.colormap !== undefined,
    hasRasterAttributeTable: false,
    supportsStatistics: true,
    supportsAdvancedQueries: false,
    exportTilesAllowed: false,
    singleFusedMapCache: false,
    minScale: 0,
    maxScale: 0,
    datasetFormat: 'TIFF',
    statisticsSource: service.statisticsSource,
    ...(s.renderingRule !== undefined ? { defaultRenderingRule: s.renderingRule } : {}),
  };
  for (const ext of extensions) Object.assign(base, ext(service, { serviceUrl }));
  return base;
}

/**
 * The minimal HTML page of the service (the viewer replaces it): what the service is, its extent
 * and functions, and a preview drawn by exportImage of the full extent.
 */
export function serviceHtml(service: OpenedImageService, json: Record<string, unknown>, servicePath: string, query: string): string {
  const name = escapeHtml(service.name);
  const e = service.info.extent;
  const aspect = (e.ymax - e.ymin) / (e.xmax - e.xmin);
  const w = 400;
  const h = Math.max(1, Math.min(1600, Math.round(w * aspect)));
  const preview = `${servicePath}/exportImage?f=image&format=png&size=${w},${h}&bbox=${[e.xmin, e.ymin, e.xmax, e.ymax].join(',')}${query}`;
  const rows = [
    'pixelType',
    'bandCount',
    'pixelSizeX',
    'pixelSizeY',
    'minValues',
    'maxValues',
    'noDataValue',
    'maxImageWidth',
    'maxImageHeight',
  ]
    .map((k) => `<tr><th>${k}</th><td>${escapeHtml(JSON.stringify(json[k]))}</td></tr>`)
    .join('\n');
  return (
    `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${name} (ImageServer)</title></head>\n<body>\n` +
    `<h1>${name} (ImageServer)</h1>\n<p>${escapeHtml(service.settings.serviceDescription)}</p>\n` +
    `<p><img alt="${name}" width="${w}" height="${h}" src="${escapeHtml(preview)}"></p>\n` +
    `<table>\n${rows}\n</table>\n<h2>Operations</h2>\n<ul><li><a href="${escapeHtml(`${servicePath}/exportImage`)}">exportImage</a></li></ul>\n` +
    `<h2>JSON</h2>\n<pre>${escapeHtml(JSON.stringify(json, null, 2))}</pre>\n</body>\n</html>\n`
  );
}

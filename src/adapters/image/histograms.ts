/**
 * Statistics and histograms of an image service over a geometry (computeHistograms,
 * computeStatisticsHistograms): the pixels whose centres fall inside the polygon (or envelope),
 * rasterized with the chipper's scanline rule (the same as Clip and `gdal_rasterize` without
 * ALL_TOUCHED), valid pixels only. Statistics and histograms follow the engine's request-statistics
 * conventions (graph/request-statistics.ts): 8-bit data one bin per value over -0.5..255.5, other
 * types 256 bins over [min, max]; population standard deviation.
 */
import { rasterize, type MultiPolygon } from '../../chipper/geometry.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { rect } from '../../core/rect.js';
import { memorySource } from '../../graph/memory-source.js';
import { computeStatistics } from '../../graph/request-statistics.js';
import type { RequestBandStatistics } from '../../graph/types.js';
import { EngineError } from '../../core/errors.js';
import { readParams, respond, withRestErrors, type Params } from '../rest.js';
import { openRequestedService, type ImageDeps } from './access.js';
import { checkMosaicRule, parsePixelSize } from './identify.js';
import { boundsOf, geometrySr, parseGeometry, parseGeometryType, ringsInRasterSr, toPixelPolygon, transformer } from './query-geometry.js';
import { planServiceRule, renderOnGrid, resolveServiceRule } from './render-request.js';
import { imageServicesOf, type ImageServices, type OpenedImageService } from './service.js';
import { requestSignal } from '../limits.js';

/** The mask of `block` restricted to pixels whose centres fall inside `polygon` (pixel coordinates of the block). */
export function polygonMask(block: PixelBlock, polygon: MultiPolygon): Uint8Array {
  const { width, height } = block.rect;
  const inside = new Uint8Array(width * height);
  rasterize(polygon, width, height, (i) => {
    inside[i] = block.mask[i] ?? 0;
  });
  return inside;
}

/** Per band statistics and histogram of `block`'s pixels where `mask` is 1. */
export async function maskedStatistics(
  block: PixelBlock,
  info: RasterInfo,
  mask: Uint8Array,
): Promise<(RequestBandStatistics | undefined)[]> {
  const { width, height } = block.rect;
  const { statistics: _s, histograms: _h, noData: _n, colormap: _c, ...rest } = info;
  const node = memorySource(
    'histograms',
    { ...rest, width, height, bandCount: block.bands.length, pixelType: block.pixelType },
    block.bands,
    mask,
  );
  return computeStatistics(node, rect(0, 0, width, height), { bins: 256 });
}

/** The vendor's `histograms` entries. Bands without a valid pixel get an empty histogram. */
export function histogramsJson(stats: readonly (RequestBandStatistics | undefined)[]): Record<string, unknown>[] {
  return stats.map((s) =>
    s === undefined
      ? { size: 0, min: 0, max: 0, counts: [] }
      : { size: s.histogram.size, min: s.histogram.min, max: s.histogram.max, counts: [...s.histogram.counts] },
  );
}

/** The vendor's `statistics` entries (`skipX`/`skipY` 1: every pixel is read). */
export function statisticsJson(stats: readonly (RequestBandStatistics | undefined)[]): Record<string, unknown>[] {
  return stats.map((s) =>
    s === undefined
      ? { min: 0, max: 0, mean: 0, standardDeviation: 0, median: 0, mode: 0, skipX: 1, skipY: 1, count: 0 }
      : {
          min: s.statistics.min,
          max: s.statistics.max,
          mean: s.statistics.mean ?? 0,
          standardDeviation: s.statistics.stdDev ?? 0,
          median: s.statistics.median ?? 0,
          mode: s.statistics.mode ?? 0,
          skipX: 1,
          skipY: 1,
          count: s.statistics.count ?? 0,
        },
  );
}

// ---------------------------------------------------------------------------------------------
// The operations

const bad = (param: string, detail: string): EngineError => new EngineError('INVALID_ARGUMENT', detail, { path: param, details: [detail] });

/**
 * Statistics of `service` after `rule` over a geometry given in the request's parameters
 * (`geometry`, `geometryType`, the geometry's or `sr`'s spatial reference, `pixelSize`).
 *
 * The grid: the raster's own pixels (or, with `pixelSize` in the service's SR units, cells of that
 * size anchored at the raster's top-left corner) covering the geometry's bounding box in the
 * raster's SR, clipped to the raster. Decision: a geometry that does not touch the raster gives
 * statistics with count 0 and empty histograms (not an error), as an empty area has no pixels.
 */
export async function geometryStatistics(
  services: ImageServices,
  service: OpenedImageService,
  params: Params,
  signal?: AbortSignal,
  client?: string,
): Promise<(RequestBandStatistics | undefined)[]> {
  const kind = parseGeometryType(params.get('geometryType'), ['envelope', 'polygon']);
  const g = parseGeometry(params.get('geometry'), kind);
  if (g.kind === 'point') throw bad('geometry', `'geometry' must be an envelope or a polygon.`);
  checkMosaicRule(params.get('mosaicRule'));
  const rule = resolveServiceRule(service, params.get('renderingRule'));
  const pixelSize = parsePixelSize(params.get('pixelSize'));
  const info = service.info;
  const rasterSr = info.spatialReference;
  const sr = geometrySr(g, params.get('sr') ?? params.get('inSR'), params.has('sr') ? 'sr' : 'inSR', rasterSr);
  const rings = ringsInRasterSr(g, transformer(sr, rasterSr));
  const b = boundsOf(rings);
  const e = info.extent;
  const cx = pixelSize?.x ?? info.cellSize.x;
  const cy = pixelSize?.y ?? info.cellSize.y;
  const c0 = Math.max(0, Math.floor((Math.max(b.xmin, e.xmin) - e.xmin) / cx));
  const c1 = Math.ceil((Math.min(b.xmax, e.xmax) - e.xmin) / cx);
  const r0 = Math.max(0, Math.floor((e.ymax - Math.min(b.ymax, e.ymax)) / cy));
  const r1 = Math.ceil((e.ymax - Math.max(b.ymin, e.ymin)) / cy);
  const width = c1 - c0;
  const height = r1 - r0;
  if (!(width > 0 && height > 0)) {
    const bands = (await planServiceRule(service, rule, 0, 'renderingRule', services.limits)).root.info.bandCount;
    return new Array<undefined>(bands).fill(undefined);
  }
  const s = service.settings;
  if (width > s.maxImageWidth || height > s.maxImageHeight) {
    const detail = `The geometry covers ${width}x${height} pixels, more than the maximum of ${s.maxImageWidth}x${s.maxImageHeight} (maxImageWidth x maxImageHeight); use a larger pixelSize.`;
    throw new EngineError('LIMIT_EXCEEDED', detail, { path: 'geometry', details: [detail] });
  }
  const x0 = e.xmin + c0 * cx;
  const y0 = e.ymax - r0 * cy;
  const image = await renderOnGrid(services, service, {
    rule,
    grid: {
      spatialReference: rasterSr ?? {},
      extent: { xmin: x0, xmax: x0 + width * cx, ymax: y0, ymin: y0 - height * cy },
      width,
      height,
    },
    method: 'nearest',
    ...(signal ? { signal } : {}),
    ...(client === undefined ? {} : { client }),
  });
  const mask = polygonMask(image.block, toPixelPolygon(rings, x0, y0, cx, cy));
  return maskedStatistics(image.block, image.info, mask);
}

/** `computeHistograms` and `computeStatisticsHistograms`. */
export function histogramsHandler(deps: ImageDeps, withStatistics: boolean, services: ImageServices = imageServicesOf(deps)) {
  return withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    const { service, caller } = await openRequestedService(deps, services, req, params);
    const budget = requestSignal(req, services.limits);
    let stats: (RequestBandStatistics | undefined)[];
    try {
      stats = await geometryStatistics(services, service, params, budget.signal, services.clientOf(req, caller));
    } finally {
      budget.dispose();
    }
    const histograms = histogramsJson(stats);
    return respond(params.get('f'), withStatistics ? { statistics: statisticsJson(stats), histograms } : { histograms });
  });
}

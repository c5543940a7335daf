/**
 * `.../ImageServer/identify`: the pixel values of the service at a point, after an optional
 * `renderingRule`, in the vendor's shape:
 *
 * ```json
 * {"objectId": 0, "name": "Pixel", "value": "12.5 13 14", "location": {"x", "y", "spatialReference"},
 *  "properties": {"Values": ["12.5 13 14"]}, "catalogItems": {...one feature...}, "catalogItemVisibilities": [1]}
 * ```
 *
 * - `geometry`: Esri JSON point (`{"x","y","spatialReference"}`) or `x,y`; `geometryType`
 *   `esriGeometryPoint` (also the `geoGeometryPoint` spelling; default point).
 * - Spatial reference: the geometry's own, else `sr`, else the service's; any SR proj4 knows.
 * - `pixelSize` (`{"x","y"}` or `x,y`, in the service's SR units): identify at that resolution
 *   (the raster read at the matching overview, pixels snapped to a grid of that size anchored at
 *   the raster's corner); default the raster's own pixel, whose value is then exact.
 * - `value`: the bands space-joined (float32 values in their shortest form), `NoData` where the
 *   pixel is masked or the point is outside the raster.
 * - A one-raster service is its own catalog: `returnCatalogItems` (default true) gives one item
 *   with the vendor's catalog fields (OBJECTID, Name, Category 1 = primary, LowPS/HighPS: the
 *   raster's pixel size and that of its coarsest overview, MinPS 0, MaxPS: the pixel size at which the
 *   whole raster is one pixel; Shape_Length, Shape_Area of the footprint), `properties.Values` its
 *   value, `catalogItemVisibilities` [1]; false gives `catalogItems: null`, `properties: null`,
 *   `catalogItemVisibilities: []`. `returnGeometry` (default true) puts the footprint in the item.
 * - `mosaicRule` is accepted (checked as JSON) and has no effect on a one-raster service.
 */
import { EngineError } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { readParams, respond, withRestErrors } from '../rest.js';
import { openRequestedService, type ImageDeps } from './access.js';
import { geometrySr, parseGeometry, parseGeometryType, transformer } from './query-geometry.js';
import { renderOnGrid, resolveServiceRule, spatialReferenceJson } from './render-request.js';
import { imageServicesOf, type ImageServices, type OpenedImageService } from './service.js';
import { requestSignal } from '../limits.js';

const bad = (param: string, detail: string): EngineError => new EngineError('INVALID_ARGUMENT', detail, { path: param, details: [detail] });

/** `pixelSize`: `{"x": .., "y": ..}` or `x,y` (positive); undefined when absent. */
export function parsePixelSize(value: string | undefined): { x: number; y: number } | undefined {
  const t = value?.trim() ?? '';
  if (t === '') return undefined;
  let x: unknown;
  let y: unknown;
  if (t.startsWith('{')) {
    try {
      const o = JSON.parse(t) as Record<string, unknown>;
      x = o['x'];
      y = o['y'];
    } catch {
      throw bad('pixelSize', `'pixelSize' is not valid JSON.`);
    }
  } else {
    [x, y] = t.split(',').map((s) => Number(s.trim()));
  }
  if (typeof x !== 'number' || typeof y !== 'number' || !(x > 0) || !(y > 0) || !Number.isFinite(x) || !Number.isFinite(y)) {
    throw bad('pixelSize', `'pixelSize' must be {"x": <size>, "y": <size>} or x,y with positive sizes.`);
  }
  return { x, y };
}

/** `mosaicRule`: accepted when it is a JSON object (a one-raster service has nothing to mosaic). */
export function checkMosaicRule(value: string | undefined): void {
  const t = value?.trim() ?? '';
  if (t === '') return;
  let o: unknown;
  try {
    o = JSON.parse(t);
  } catch {
    throw bad('mosaicRule', `'mosaicRule' is not valid JSON.`);
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw bad('mosaicRule', `'mosaicRule' must be a JSON object.`);
}

/** One value as the vendor prints it: integers bare; float32 data in its shortest round-tripping form. */
export function formatValue(v: number, float32: boolean): string {
  if (Number.isNaN(v)) return 'NaN';
  if (Number.isInteger(v) || !float32) return String(v);
  for (let p = 1; p <= 9; p++) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) return String(Number(s));
  }
  return String(v);
}

/** The catalog item of a one-raster service. */
export function catalogItem(service: OpenedImageService, withGeometry: boolean): Record<string, unknown> {
  const info: RasterInfo = service.info;
  const e = info.extent;
  const low = Math.max(info.cellSize.x, info.cellSize.y);
  const overviews = service.source.overviews?.length ?? 0;
  const high = low * 2 ** overviews;
  const w = e.xmax - e.xmin;
  const h = e.ymax - e.ymin;
  const sr = spatialReferenceJson(info.spatialReference);
  return {
    attributes: {
      OBJECTID: 1,
      Name: service.record.serviceName,
      MinPS: 0,
      MaxPS: low * Math.max(info.width, info.height),
      LowPS: low,
      HighPS: high,
      Category: 1,
      Tag: 'Dataset',
      GroupName: null,
      ProductName: null,
      CenterX: (e.xmin + e.xmax) / 2,
      CenterY: (e.ymin + e.ymax) / 2,
      ZOrder: null,
      Shape_Length: 2 * (w + h),
      Shape_Area: w * h,
    },
    ...(withGeometry
      ? {
          geometry: {
            rings: [
              [
                [e.xmin, e.ymax],
                [e.xmax, e.ymax],
                [e.xmax, e.ymin],
                [e.xmin, e.ymin],
                [e.xmin, e.ymax],
              ],
            ],
            ...(sr ? { spatialReference: sr } : {}),
          },
        }
      : {}),
  };
}

/** The catalog's field list for the one-raster catalog (the vendor's mosaic dataset fields). */
const CATALOG_FIELDS = [
  ['OBJECTID', 'esriFieldTypeOID'],
  ['Name', 'esriFieldTypeString'],
  ['MinPS', 'esriFieldTypeDouble'],
  ['MaxPS', 'esriFieldTypeDouble'],
  ['LowPS', 'esriFieldTypeDouble'],
  ['HighPS', 'esriFieldTypeDouble'],
  ['Category', 'esriFieldTypeInteger'],
  ['Tag', 'esriFieldTypeString'],
  ['GroupName', 'esriFieldTypeString'],
  ['ProductName', 'esriFieldTypeString'],
  ['CenterX', 'esriFieldTypeDouble'],
  ['CenterY', 'esriFieldTypeDouble'],
  ['ZOrder', 'esriFieldTypeInteger'],
  ['Shape_Length', 'esriFieldTypeDouble'],
  ['Shape_Area', 'esriFieldTypeDouble'],
].map(([name, type]) => ({ name, alias: name, type }));

/** The identified value of `service` at `(x, y)` of its own SR, after `rule`. */
export async function pixelValue(
  services: ImageServices,
  service: OpenedImageService,
  rule: unknown,
  x: number,
  y: number,
  pixelSize: { x: number; y: number } | undefined,
  signal?: AbortSignal,
  client?: string,
): Promise<string> {
  const info = service.info;
  const e = info.extent;
  if (!(x >= e.xmin && x < e.xmax && y > e.ymin && y <= e.ymax)) return 'NoData';
  const cx = pixelSize?.x ?? info.cellSize.x;
  const cy = pixelSize?.y ?? info.cellSize.y;
  const col = Math.floor((x - e.xmin) / cx);
  const row = Math.floor((e.ymax - y) / cy);
  const extent = { xmin: e.xmin + col * cx, xmax: e.xmin + (col + 1) * cx, ymax: e.ymax - row * cy, ymin: e.ymax - (row + 1) * cy };
  const image = await renderOnGrid(services, service, {
    rule,
    grid: { spatialReference: info.spatialReference ?? {}, extent, width: 1, height: 1 },
    method: 'nearest',
    ...(signal ? { signal } : {}),
    ...(client === undefined ? {} : { client }),
  });
  if (image.block.mask[0] !== 1) return 'NoData';
  const float32 = image.block.pixelType === 'F32' || image.block.pixelType === 'C64';
  const k = image.block.pixelType === 'C64' || image.block.pixelType === 'C128' ? 2 : 1;
  return image.block.bands.map((b) => formatValue(b[0 * k]!, float32)).join(' ');
}

/** The identify handler. */
export function identifyHandler(deps: ImageDeps, services: ImageServices = imageServicesOf(deps)) {
  return withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    const { service, caller } = await openRequestedService(deps, services, req, params);
    const kind = parseGeometryType(params.get('geometryType'), ['point'], 'point');
    const g = parseGeometry(params.get('geometry'), kind);
    const rasterSr = service.info.spatialReference;
    const sr = geometrySr(g, params.get('sr') ?? params.get('inSR'), params.has('sr') ? 'sr' : 'inSR', rasterSr);
    const rule = resolveServiceRule(service, params.get('renderingRule'));
    const pixelSize = parsePixelSize(params.get('pixelSize'));
    checkMosaicRule(params.get('mosaicRule'));
    const returnGeometry = params.bool('returnGeometry') ?? true;
    const returnCatalogItems = params.bool('returnCatalogItems') ?? true;
    const [px, py] = g.point!;
    const [x, y] = transformer(sr, rasterSr)(px, py);
    let value = 'NoData';
    if (Number.isFinite(x) && Number.isFinite(y)) {
      const budget = requestSignal(req, services.limits);
      try {
        value = await pixelValue(services, service, rule, x, y, pixelSize, budget.signal, services.clientOf(req, caller));
      } finally {
        budget.dispose();
      }
    }
    const srJson = spatialReferenceJson(sr);
    const rasterSrJson = spatialReferenceJson(rasterSr);
    const body = {
      objectId: 0,
      name: 'Pixel',
      value,
      location: { x: px, y: py, ...(srJson ? { spatialReference: srJson } : {}) },
      properties: returnCatalogItems ? { Values: [value] } : null,
      catalogItems: returnCatalogItems
        ? {
            objectIdFieldName: 'OBJECTID',
            geometryType: 'esriGeometryPolygon',
            ...(rasterSrJson ? { spatialReference: rasterSrJson } : {}),
            fields: CATALOG_FIELDS,
            features: value === 'NoData' && !insideExtent(service, x, y) ? [] : [catalogItem(service, returnGeometry)],
          }
        : null,
      catalogItemVisibilities: returnCatalogItems && insideExtent(service, x, y) ? [1] : [],
    };
    return respond(params.get('f'), body);
  });
}

function insideExtent(service: OpenedImageService, x: number, y: number): boolean {
  const e = service.info.extent;
  return x >= e.xmin && x < e.xmax && y > e.ymin && y <= e.ymax;
}

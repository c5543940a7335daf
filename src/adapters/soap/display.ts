/**
 * What a MapDescription and an ImageDisplay mean on the ground (protocols.md §5.5): the extent
 * actually drawn, its scale, and the screen <-> map transform shared by ExportMapImage,
 * ComputeScale, ToMapPoints, FromMapPoints, Identify and the legends.
 */
import { EngineError, invalidArgument } from '../../core/errors.js';
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import type { MapService } from '../map/model.js';
import { extentIn, resolutionOf, scaleOf, type DrawnMap } from '../map/view.js';
import type { SoapObject, SoapValue } from './operation.js';
import { optionalSpatialReference } from './spatial-reference.js';

export const isObject = (v: SoapValue): v is SoapObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date) && !('$xs' in v);

const num = (o: SoapObject, k: string): number | undefined => (typeof o[k] === 'number' ? (o[k] as number) : undefined);

/** An EnvelopeN as an Extent (checked: finite, min <= max). */
export function extentOfEnvelope(env: SoapValue, path: string): Extent {
  if (!isObject(env)) throw invalidArgument(path, `${path} is required`);
  const xmin = num(env, 'XMin');
  const ymin = num(env, 'YMin');
  const xmax = num(env, 'XMax');
  const ymax = num(env, 'YMax');
  if (![xmin, ymin, xmax, ymax].every((v) => v !== undefined && Number.isFinite(v))) {
    throw invalidArgument(path, `${path}: XMin, YMin, XMax and YMax must be finite numbers`);
  }
  if (xmin! > xmax! || ymin! > ymax!) throw invalidArgument(path, `${path}: XMin must not exceed XMax nor YMin exceed YMax`);
  return { xmin: xmin!, ymin: ymin!, xmax: xmax!, ymax: ymax! };
}

/** The image size and DPI of an ImageDisplay, checked against the service's limits. */
export function imageDisplayOf(
  display: SoapValue,
  service: Pick<MapService, 'maxImageWidth' | 'maxImageHeight'>,
  path: string,
): { width: number; height: number; dpi: number } {
  if (!isObject(display)) throw invalidArgument(path, `${path} is required`);
  const width = num(display, 'ImageWidth') ?? 0;
  const height = num(display, 'ImageHeight') ?? 0;
  const dpi = num(display, 'ImageDPI') || 96;
  if (!Number.isInteger(width) || width < 1)
    throw invalidArgument(`${path}/ImageWidth`, `${path}/ImageWidth must be a positive whole number`);
  if (!Number.isInteger(height) || height < 1)
    throw invalidArgument(`${path}/ImageHeight`, `${path}/ImageHeight must be a positive whole number`);
  if (!(dpi > 0 && dpi <= 2400)) throw invalidArgument(`${path}/ImageDPI`, `${path}/ImageDPI must be in (0, 2400]`);
  if (width > service.maxImageWidth || height > service.maxImageHeight) {
    throw new EngineError(
      'LIMIT_EXCEEDED',
      `${path}: ${width} x ${height} exceeds this service's largest image (${service.maxImageWidth} x ${service.maxImageHeight})`,
      { path },
    );
  }
  return { width, height, dpi };
}

/** The centre of a MapArea's `Center` point. */
function centerOf(area: SoapObject, path: string): { x: number; y: number } {
  const c = area['Center'];
  if (!isObject(c) || num(c, 'X') === undefined || num(c, 'Y') === undefined)
    throw invalidArgument(`${path}/Center`, `${path}/Center is required`);
  return { x: num(c, 'X')!, y: num(c, 'Y')! };
}

/**
 * The extent a MapArea asks for, with its SR (before aspect growth). An Extent or Center without a
 * SpatialReference of its own is in `viewSr`: the MapDescription's SpatialReference when it has one
 * (the vendor's reading), else the map's. Bookmarks and FeatureExtent areas are in the map's SR.
 * `featureExtent` resolves FeatureExtent areas (the extent of the listed features of a layer).
 */
export async function requestedExtent(
  service: MapService,
  area: SoapValue,
  display: { width: number; height: number; dpi: number },
  path: string,
  featureExtent?: (layerId: number, ids: readonly number[] | undefined, path: string) => Promise<Extent | undefined>,
  viewSr: SpatialReference = service.spatialReference,
): Promise<{ extent: Extent; spatialReference: SpatialReference }> {
  const mapSr = service.spatialReference;
  const sr = viewSr;
  if (area === undefined || area === null) return { extent: service.initialExtent, spatialReference: mapSr };
  if (!isObject(area)) throw invalidArgument(path, `${path} must be a MapArea`);
  const areaSr = (v: SoapValue): SpatialReference =>
    (isObject(v) ? optionalSpatialReference(v['SpatialReference'], `${path}/Extent/SpatialReference`) : undefined) ?? sr;
  switch (area.$type) {
    case 'MapExtent':
    case undefined: {
      const env = area['Extent'];
      const extent = extentOfEnvelope(env, `${path}/Extent`);
      return { extent, spatialReference: areaSr(env) };
    }
    case 'CenterAndScale': {
      const scale = num(area, 'Scale') ?? 0;
      if (!(scale > 0)) throw invalidArgument(`${path}/Scale`, `${path}/Scale must be positive`);
      const c = centerOf(area, path);
      const r = resolutionOf(scale, num(area, 'DPI') || display.dpi, sr);
      const hw = (display.width * r) / 2;
      const hh = (display.height * r) / 2;
      return { extent: { xmin: c.x - hw, ymin: c.y - hh, xmax: c.x + hw, ymax: c.y + hh }, spatialReference: sr };
    }
    case 'CenterAndSize': {
      const w = num(area, 'Width') ?? 0;
      const h = num(area, 'Height') ?? 0;
      if (!(w > 0) || !(h > 0)) throw invalidArgument(path, `${path}: Width and Height must be positive`);
      const c = centerOf(area, path);
      return { extent: { xmin: c.x - w / 2, ymin: c.y - h / 2, xmax: c.x + w / 2, ymax: c.y + h / 2 }, spatialReference: sr };
    }
    case 'MapServerBookmark': {
      const name = typeof area['Name'] === 'string' ? area['Name'] : '';
      const b = service.bookmarks.find((m) => m.name === name);
      if (!b)
        throw new EngineError('NOT_FOUND', `Bookmark '${name}' does not exist in map '${service.mapName}'.`, { path: `${path}/Name` });
      return { extent: b.extent, spatialReference: sr };
    }
    case 'FeatureExtent': {
      const layerId = num(area, 'LayerID') ?? 0;
      const ids = Array.isArray(area['FeatureIDs']) ? (area['FeatureIDs'] as number[]) : undefined;
      const e = featureExtent ? await featureExtent(layerId, ids, `${path}/FeatureIDs`) : undefined;
      const ratio = num(area, 'ExpandRatio') || 1;
      if (!e) return { extent: service.initialExtent, spatialReference: mapSr };
      let { xmin, ymin, xmax, ymax } = e;
      if (xmax - xmin === 0 && ymax - ymin === 0) {
        // Decision: a single point is shown at DefaultScale (the vendor's meaning of the field).
        const scale = num(area, 'DefaultScale') || 1000;
        const r = resolutionOf(scale, display.dpi, mapSr);
        return {
          extent: {
            xmin: xmin - (display.width * r) / 2,
            ymin: ymin - (display.height * r) / 2,
            xmax: xmin + (display.width * r) / 2,
            ymax: ymin + (display.height * r) / 2,
          },
          spatialReference: mapSr,
        };
      }
      const cx = (xmin + xmax) / 2;
      const cy = (ymin + ymax) / 2;
      const hw = ((xmax - xmin) * ratio) / 2;
      const hh = ((ymax - ymin) * ratio) / 2;
      [xmin, xmax, ymin, ymax] = [cx - hw, cx + hw, cy - hh, cy + hh];
      return { extent: { xmin, ymin, xmax, ymax }, spatialReference: mapSr };
    }
    default:
      throw invalidArgument(path, `${path}: unknown MapArea type '${area.$type}'`);
  }
}

/**
 * The drawn map for a MapDescription and an ImageDisplay: the requested extent in the output SR
 * (MapDescription/SpatialReference, else the map's), grown about its centre to the image's aspect.
 */
export async function drawnMap(
  service: MapService,
  mapDescription: SoapValue,
  imageDisplay: SoapValue,
  paths: { mapDescription: string; imageDisplay: string },
  featureExtent?: (layerId: number, ids: readonly number[] | undefined, path: string) => Promise<Extent | undefined>,
): Promise<DrawnMap> {
  if (!isObject(mapDescription)) throw invalidArgument(paths.mapDescription, `${paths.mapDescription} is required`);
  const display = imageDisplayOf(imageDisplay, service, paths.imageDisplay);
  const outSr =
    optionalSpatialReference(mapDescription['SpatialReference'], `${paths.mapDescription}/SpatialReference`) ?? service.spatialReference;
  const asked = await requestedExtent(service, mapDescription['MapArea'], display, `${paths.mapDescription}/MapArea`, featureExtent, outSr);
  const e = extentIn(asked.extent, asked.spatialReference, outSr);
  let w = e.xmax - e.xmin;
  let h = e.ymax - e.ymin;
  if (!(w > 0) && !(h > 0))
    throw invalidArgument(`${paths.mapDescription}/MapArea`, `${paths.mapDescription}/MapArea: the extent is empty`);
  const aspect = display.width / display.height;
  if (!(w > 0)) w = h * aspect;
  if (!(h > 0)) h = w / aspect;
  if (w / h < aspect) w = h * aspect;
  else h = w / aspect;
  const cx = (e.xmin + e.xmax) / 2;
  const cy = (e.ymin + e.ymax) / 2;
  const extent = { xmin: cx - w / 2, ymin: cy - h / 2, xmax: cx + w / 2, ymax: cy + h / 2 };
  const resolution = w / display.width;
  return { extent, spatialReference: outSr, ...display, resolution, scale: scaleOf(resolution, display.dpi, outSr) };
}

export {
  extentIn,
  metersPerUnit,
  METERS_PER_DEGREE,
  METERS_PER_INCH,
  resolutionOf,
  scaleOf,
  toMap,
  toScreen,
  type DrawnMap,
} from '../map/view.js';

/**
 * The map service's information operations (seed §7; types protocols.md §5.6): GetDocumentInfo,
 * GetMapCount, GetMapName, GetDefaultMapName, GetServiceConfigurationInfo, GetServerInfo,
 * ComputeScale, ComputeDistance, ToMapPoints, FromMapPoints, GetSQLSyntaxInfo,
 * GetSupportedImageReturnTypes, GetDefaultLayerDrawingDescriptions, GetMapTableSubtypeInfos (both)
 * and QueryRasterValue (both).
 */
import { EngineError, invalidArgument } from '../../../core/errors.js';
import type { SpatialReference } from '../../../core/pixel-block.js';
import { spatialReferenceOfWkid } from '../../../core/spatial-reference.js';
import { encodeExport, type ExportFormat } from '../../image/export-image.js';
import { transformer } from '../../image/query-geometry.js';
import { planServiceRule, renderOnGrid } from '../../image/render-request.js';
import { imageServicesOf } from '../../image/service.js';
import { rasterLayerRule } from '../../map/draw.js';
import { mapOutputsOf, outputUrl } from '../../map/outputs.js';
import { SQL_CLAUSES, SQL_FUNCTIONS, SQL_KEYWORDS, SQL_PREDICATES, SQL_SYNTAX } from '../../map/where.js';
import type {
  AttributeValue,
  Domain,
  FeatureTable,
  FieldInfo,
  FieldType,
  MapLayer,
  MapService,
  RasterLayer,
  StandaloneTable,
  Subtypes,
} from '../../map/model.js';
import { drawnMap, isObject, metersPerUnit, toMap, toScreen, METERS_PER_DEGREE } from '../display.js';
import { soapEnvelope } from '../geometry.js';
import { allFieldsOf } from '../query-filter.js';
import { soapDomainOf, soapFieldsOf, soapValueOf } from '../record-set.js';
import {
  result,
  type SoapArgs,
  type SoapContext,
  type SoapHandler,
  type SoapObject,
  type SoapResult,
  type SoapValue,
} from '../operation.js';
import { optionalSpatialReference, soapSpatialReference } from '../spatial-reference.js';
import { soapRendererOf } from './classes.js';
import { checkMapName as checkDrawnMapName, featureExtentResolver, layerOf } from './draw.js';

// ---------------------------------------------------------------------------------------------
// Shared readers (also used by identify.ts and classes.ts)

/** A handler computing its answer at once: a throw becomes the rejected promise the dispatcher expects. */
export const syncHandler =
  (f: (ctx: SoapContext, args: SoapArgs) => SoapResult): SoapHandler =>
  (ctx, args) => {
    try {
      return Promise.resolve(f(ctx, args));
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  };

const str = (v: SoapValue): string => (typeof v === 'string' ? v : '');

/**
 * The map a request names must be this service's map (§5.5: unknown MapName is a Client fault); the
 * same reading as the drawing operations ('' = the default map, names compared case-insensitively).
 */
export function checkMapName(service: MapService, value: SoapValue, path = 'MapName'): void {
  checkDrawnMapName(service, value, path);
}

/** The map a MapDescription names (its Name must be the service's map). */
export function checkMapDescription(service: MapService, md: SoapValue, path = 'MapDescription'): SoapObject {
  if (!isObject(md)) throw invalidArgument(path, `${path} is required`);
  checkMapName(service, md['Name'], `${path}/Name`);
  return md;
}

/** A layer or standalone table by id, or a NOT_FOUND fault naming `path`. */
export function mapTableOf(service: MapService, id: number, path: string): MapLayer | StandaloneTable {
  const t = Number.isInteger(id) ? service.byId(id) : undefined;
  if (!t) throw new EngineError('NOT_FOUND', `Layer ${id} does not exist in map '${service.mapName}'.`, { path });
  return t;
}

export { layerOf };

/** The ids of a LayerIDs array (checked to be layers of the map); undefined or empty = none given. */
export function layerIdsOf(service: MapService, value: SoapValue, path = 'LayerIDs'): number[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidArgument(path, `${path} must be an array of layer ids`);
  return (value as SoapValue[]).map((v, i) => {
    const id = typeof v === 'number' ? v : Number.NaN;
    return layerOf(service, id, `${path}[${i}]`).id;
  });
}

/** The layer or table a MapTableDescription addresses (LayerDescription/LayerID or StandaloneTableDescription/ID). */
export function mapTableOfDescription(service: MapService, desc: SoapValue, path = 'MapTableDescription'): MapLayer | StandaloneTable {
  if (!isObject(desc)) throw invalidArgument(path, `${path} is required`);
  if (desc.$type === 'StandaloneTableDescription') {
    const id = typeof desc['ID'] === 'number' ? desc['ID'] : Number.NaN;
    return mapTableOf(service, id, `${path}/ID`);
  }
  const id = typeof desc['LayerID'] === 'number' ? desc['LayerID'] : Number.NaN;
  return mapTableOf(service, id, `${path}/LayerID`);
}

/** A PropertySet of key/value pairs (values as anyType). */
export function propertySet(entries: readonly (readonly [string, SoapValue])[]): SoapObject {
  return {
    $type: 'PropertySet',
    PropertyArray: entries.map(([Key, Value]) => ({ $type: 'PropertySetProperty', Key, Value: Value ?? null })),
  };
}

const INTEGER_TYPES: ReadonlySet<FieldType> = new Set(['geoFieldTypeOID', 'geoFieldTypeInteger', 'geoFieldTypeSmallInteger']);
const NUMERIC_TYPES: ReadonlySet<FieldType> = new Set([...INTEGER_TYPES, 'geoFieldTypeDouble', 'geoFieldTypeSingle']);

export const isNumericField = (f: Pick<FieldInfo, 'type'>): boolean => NUMERIC_TYPES.has(f.type);

/** An attribute value for an anyType slot, typed by its field (as QueryFeatureData's records type it). */
export const anyValueOf = (v: AttributeValue | undefined, type: FieldType): SoapValue => soapValueOf(v, type);

/** A SOAP Domain (CodedValueDomain / RangeDomain) of a field of type `type` (as the query answers write it). */
export const soapDomain = (d: Domain, type: FieldType): SoapObject => soapDomainOf(d, type);

/** The fields of a table as the map shows them: stored fields, plus the geometry field of a layer when the store keeps it apart. */
export const tableFields = (table: FeatureTable): FieldInfo[] => allFieldsOf(table);

/** The Fields of a table, each Field as the query answers write it (GetServerInfo and QueryFeatureData agree). */
export function soapFields(table: FeatureTable, sr: SpatialReference): SoapObject {
  return soapFieldsOf({ fields: allFieldsOf(table), geometryType: table.geometryType, spatialReference: sr });
}

/** RGBA -> RgbColor. */
export function rgbColor(c: readonly number[]): SoapObject {
  return {
    $type: 'RgbColor',
    ...(c[3] !== undefined && c[3] !== 255 ? { AlphaValue: c[3] } : {}),
    Red: c[0] ?? 0,
    Green: c[1] ?? 0,
    Blue: c[2] ?? 0,
  };
}

// ---------------------------------------------------------------------------------------------
// Document, maps, configuration

const getDocumentInfo: SoapHandler = syncHandler((ctx) => {
  const s = ctx.service;
  // Decision: the document properties a map document carries, from the service definition: Title the
  // service's name, Subject and Comments its map description, Credits its copyright text, Keywords the
  // layer and table names; Author and Category are not part of a service definition and are empty (the
  // vendor also answers empty strings for unset document properties).
  return result(
    propertySet([
      ['Title', s.serviceName],
      ['Subject', s.description],
      ['Author', ''],
      ['Category', ''],
      ['Keywords', [...s.layers, ...s.tables].map((l) => l.name).join(', ')],
      ['Comments', s.description],
      ['Credits', s.copyrightText],
    ]),
  );
});

const getMapCount: SoapHandler = syncHandler(() => result(1));

const getMapName: SoapHandler = syncHandler((ctx, args) => {
  const i = args['Index'];
  if (i !== 0) {
    throw new EngineError(
      'NOT_FOUND',
      `Map index ${typeof i === 'number' ? i : '?'} is out of range: this service has one map (index 0).`,
      { path: 'Index' },
    );
  }
  return result(ctx.service.mapName);
});

const getDefaultMapName: SoapHandler = syncHandler((ctx) => result(ctx.service.mapName));

/** The image formats ExportMapImage writes (protocols.md §5.5 names them). */
export const SUPPORTED_IMAGE_FORMATS = 'PNG32,PNG24,PNG,JPG';

const getServiceConfigurationInfo: SoapHandler = syncHandler((ctx) => {
  const s = ctx.service;
  // The vendor's four restrictions plus its SupportedImageFormatTypes. Decision: MaximumBufferCount is
  // the record limit (selection buffers are drawn for at most that many features).
  return result(
    propertySet([
      ['MaximumRecordCount', s.maxRecordCount],
      ['MaximumBufferCount', s.maxRecordCount],
      ['MaximumImageWidth', s.maxImageWidth],
      ['MaximumImageHeight', s.maxImageHeight],
      ['SupportedImageFormatTypes', SUPPORTED_IMAGE_FORMATS],
    ]),
  );
});

// ---------------------------------------------------------------------------------------------
// GetServerInfo

function relateInfos(service: MapService, id: number): SoapObject[] {
  const out: SoapObject[] = [];
  for (const r of service.relationships) {
    if (r.origin !== id && r.destination !== id) continue;
    const origin = r.origin === id;
    out.push({
      $type: 'RelateInfo',
      Name: r.name,
      RelationshipID: r.id,
      RelatedTableID: origin ? r.destination : r.origin,
      Role: origin ? 'geoRelRoleOrigin' : 'geoRelRoleDestination',
      Cardinality: r.cardinality === 'oneToOne' ? 'geoRelCardinalityOneToOne' : 'geoRelCardinalityOneToMany',
      KeyField: origin ? r.originKey : r.destinationKey,
      IsComposite: false,
    });
  }
  return out;
}

const popupType = (t: { popupTemplate?: string }): string =>
  t.popupTemplate ? 'geoServerHTMLPopupTypeAsHTMLText' : 'geoServerHTMLPopupTypeNone';

/** The MapLayerInfo of a layer (protocols.md §5.6, every element in schema order). */
export function mapLayerInfo(service: MapService, layer: MapLayer): SoapObject {
  const sr = service.spatialReference;
  const feature = layer.kind === 'feature';
  const fields = feature ? tableFields(layer.table) : [];
  return {
    $type: 'MapLayerInfo',
    LayerID: layer.id,
    Name: layer.name,
    Description: layer.description,
    LayerType: feature ? 'Feature Layer' : 'Raster Layer',
    // Decision: the kind of data behind the layer, as the vendor's source descriptions name it.
    SourceDescription: feature ? 'Feature Class' : 'Raster Dataset',
    HasLabels: false,
    CanSelect: feature,
    CanScaleSymbols: feature,
    MinScale: layer.minScale,
    MaxScale: layer.maxScale,
    Extent: soapEnvelope(layer.extent, sr),
    HasHyperlinks: feature && layer.hyperlinkField !== undefined,
    HasAttributes: feature,
    CanIdentify: true,
    CanFind: feature,
    IsFeatureLayer: feature,
    ...(feature ? { Fields: soapFields(layer.table, sr) } : {}),
    DisplayField: feature ? layer.displayField : '',
    IDField: feature ? layer.table.objectIdField : '',
    IsComposite: false,
    ParentLayerID: -1,
    ...(feature ? { FieldAliases: fields.map((f) => f.alias || f.name) } : {}),
    CopyrightText: layer.copyrightText,
    RelateInfos: relateInfos(service, layer.id),
    SupportsTime: false,
    HasAttachments: feature && layer.hasAttachments,
    HTMLPopupType: feature ? popupType(layer) : 'geoServerHTMLPopupTypeNone',
    HasLayerDrawingDescription: true,
    HasSubtype: feature && layer.subtypes !== undefined,
    CanModifyDrawingDescription: false,
    SupportsStatistics: feature,
    SupportsAdvancedQueries: feature,
    HasLiveData: false,
  };
}

export function standaloneTableInfo(service: MapService, t: StandaloneTable): SoapObject {
  return {
    $type: 'StandaloneTableInfo',
    ID: t.id,
    Name: t.name,
    Fields: soapFields(t.table, service.spatialReference),
    RelateInfos: relateInfos(service, t.id),
    SupportsTime: false,
    HasAttachments: t.hasAttachments,
    DisplayField: t.displayField,
    Description: t.description,
    IDField: t.table.objectIdField,
    HasSubtype: t.subtypes !== undefined,
    SupportsStatistics: true,
    SupportsAdvancedQueries: true,
  };
}

/** A LayerDescription of a layer as the map draws it by default. */
export function defaultLayerDescription(layer: MapLayer): SoapObject {
  return {
    $type: 'LayerDescription',
    LayerID: layer.id,
    Visible: layer.defaultVisibility,
    ShowLabels: false,
    ScaleSymbols: false,
    SelectionColor: rgbColor([0, 255, 255]),
    SetSelectionSymbol: false,
    SelectionBufferDistance: 0,
    ShowSelectionBuffer: false,
    DefinitionExpression: '',
    SourceID: '',
    LayerResultOptions: {
      $type: 'LayerResultOptions',
      IncludeGeometry: true,
      ReturnFieldNamesInResults: false,
      FormatValuesInResults: false,
    },
  };
}

/** The map's default MapDescription: a client can send it back to ExportMapImage as it is. */
export function defaultMapDescription(service: MapService): SoapObject {
  const sr = service.spatialReference;
  return {
    $type: 'MapDescription',
    Name: service.mapName,
    MapArea: { $type: 'MapExtent', Extent: soapEnvelope(service.initialExtent, sr) },
    LayerDescriptions: service.layers.map(defaultLayerDescription),
    Rotation: 0,
    SpatialReference: soapSpatialReference(sr),
    SelectionColor: rgbColor([0, 255, 255]),
  };
}

/** The map's scale range: the widest of its layers' (0 = no limit, the vendor's convention). */
function mapScaleRange(service: MapService): { min: number; max: number } {
  if (service.layers.length === 0) return { min: 0, max: 0 };
  const mins = service.layers.map((l) => l.minScale);
  const maxs = service.layers.map((l) => l.maxScale);
  return { min: mins.includes(0) ? 0 : Math.max(...mins), max: maxs.includes(0) ? 0 : Math.min(...maxs) };
}

export function mapServerInfo(service: MapService): SoapObject {
  const sr = service.spatialReference;
  const range = mapScaleRange(service);
  return {
    $type: 'MapServerInfo',
    Name: service.mapName,
    Description: service.description,
    FullExtent: soapEnvelope(service.fullExtent, sr),
    Extent: soapEnvelope(service.initialExtent, sr),
    SpatialReference: soapSpatialReference(sr),
    MapLayerInfos: service.layers.map((l) => mapLayerInfo(service, l)),
    BackgroundColor: rgbColor(service.backgroundColor),
    Bookmarks: service.bookmarks.map((b) => ({ $type: 'MapServerBookmark', Extent: soapEnvelope(b.extent, sr), Name: b.name })),
    DefaultMapDescription: defaultMapDescription(service),
    Units: service.units,
    SupportedImageReturnTypes: 'geoImageReturnMimeData',
    CopyrightText: service.copyrightText,
    StandaloneTableInfos: service.tables.map((t) => standaloneTableInfo(service, t)),
    StandaloneTableDescriptions: service.tables.map((t) => ({ $type: 'StandaloneTableDescription', ID: t.id, DefinitionExpression: '' })),
    SupportsDynamicLayers: false,
    HasLiveData: false,
    MinScale: range.min,
    MaxScale: range.max,
  };
}

const getServerInfo: SoapHandler = syncHandler((ctx, args) => {
  checkMapName(ctx.service, args['MapName']);
  return result(mapServerInfo(ctx.service));
});

// ---------------------------------------------------------------------------------------------
// Scale, distance, screen points

const displayPaths = { mapDescription: 'MapDescription', imageDisplay: 'MapImageDisplay' };

const computeScale: SoapHandler = async (ctx, args) => {
  const md = checkMapDescription(ctx.service, args['MapDescription']);
  const m = await drawnMap(ctx.service, md, args['MapImageDisplay'], displayPaths, featureExtentResolver(ctx.service));
  return result(m.scale);
};

/** Metres per unit of a SOAP `Units` value (undefined for geoUnknownUnits and geoDecimalDegrees). */
export const METERS_PER: Readonly<Record<string, number>> = {
  geoInches: 0.0254,
  geoPoints: 0.0254 / 72,
  geoFeet: 0.3048,
  geoYards: 0.9144,
  geoMiles: 1609.344,
  geoNauticalMiles: 1852,
  geoMillimeters: 0.001,
  geoCentimeters: 0.01,
  geoMeters: 1,
  geoKilometers: 1000,
  geoDecimeters: 0.1,
};

const WGS84_A = 6378137;
const WGS84_F = 1 / 298.257223563;

/**
 * The geodesic distance in metres between two lon/lat points on the WGS 84 ellipsoid (Vincenty's
 * inverse formula, converged to 1e-12 rad). Decision: for nearly antipodal points, where Vincenty's
 * iteration does not converge, the distance is taken on the sphere of the ellipsoid's mean radius
 * (an error below 0.5%, only there).
 */
export function geodesicDistance(lon1: number, lat1: number, lon2: number, lat2: number): number {
  const a = WGS84_A;
  const f = WGS84_F;
  const b = a * (1 - f);
  const rad = Math.PI / 180;
  const L = (lon2 - lon1) * rad;
  const U1 = Math.atan((1 - f) * Math.tan(lat1 * rad));
  const U2 = Math.atan((1 - f) * Math.tan(lat2 * rad));
  const sinU1 = Math.sin(U1);
  const cosU1 = Math.cos(U1);
  const sinU2 = Math.sin(U2);
  const cosU2 = Math.cos(U2);
  let lambda = L;
  for (let iter = 0; iter < 200; iter++) {
    const sinL = Math.sin(lambda);
    const cosL = Math.cos(lambda);
    const sinSigma = Math.sqrt((cosU2 * sinL) ** 2 + (cosU1 * sinU2 - sinU1 * cosU2 * cosL) ** 2);
    if (sinSigma === 0) return 0;
    const cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosL;
    const sigma = Math.atan2(sinSigma, cosSigma);
    const sinAlpha = (cosU1 * cosU2 * sinL) / sinSigma;
    const cos2Alpha = 1 - sinAlpha * sinAlpha;
    const cos2SigmaM = cos2Alpha !== 0 ? cosSigma - (2 * sinU1 * sinU2) / cos2Alpha : 0;
    const C = (f / 16) * cos2Alpha * (4 + f * (4 - 3 * cos2Alpha));
    const prev = lambda;
    lambda = L + (1 - C) * f * sinAlpha * (sigma + C * sinSigma * (cos2SigmaM + C * cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)));
    if (Math.abs(lambda - prev) < 1e-12) {
      const u2 = (cos2Alpha * (a * a - b * b)) / (b * b);
      const A = 1 + (u2 / 16384) * (4096 + u2 * (-768 + u2 * (320 - 175 * u2)));
      const B = (u2 / 1024) * (256 + u2 * (-128 + u2 * (74 - 47 * u2)));
      const dSigma =
        B *
        sinSigma *
        (cos2SigmaM +
          (B / 4) *
            (cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM) -
              (B / 6) * cos2SigmaM * (-3 + 4 * sinSigma * sinSigma) * (-3 + 4 * cos2SigmaM * cos2SigmaM)));
      return b * A * (sigma - dSigma);
    }
  }
  const R = (2 * a + b) / 3;
  const p1 = lat1 * rad;
  const p2 = lat2 * rad;
  const h = Math.sin((p2 - p1) / 2) ** 2 + Math.cos(p1) * Math.cos(p2) * Math.sin(L / 2) ** 2;
  return 2 * R * Math.asin(Math.min(1, Math.sqrt(h)));
}

const WGS84 = spatialReferenceOfWkid(4326)!;

/** Can points of `sr` be transformed to lon/lat? */
const transformable = (sr: SpatialReference): boolean => sr.wkid !== undefined || sr.wkt !== undefined || sr.proj4 !== undefined;

function pointArg(v: SoapValue, path: string, fallback: SpatialReference): { x: number; y: number; sr: SpatialReference } {
  if (!isObject(v) || typeof v['X'] !== 'number' || typeof v['Y'] !== 'number' || !Number.isFinite(v['X']) || !Number.isFinite(v['Y'])) {
    throw invalidArgument(path, `${path} must be a point with finite X and Y`);
  }
  const sr = optionalSpatialReference(v['SpatialReference'], `${path}/SpatialReference`) ?? fallback;
  return { x: v['X'], y: v['Y'], sr };
}

/**
 * The distance between two points in `units`. Decision: points in a known spatial reference (the
 * map's unless they carry their own) are transformed to WGS 84 lon/lat and measured along the
 * geodesic on the ellipsoid — the true ground distance, for geographic and projected maps alike. A map
 * whose spatial reference is unknown is measured on the plane, in its map units (the service's
 * `units` converted). `geoDecimalDegrees` answers metres ÷ METERS_PER_DEGREE (the figure the scales
 * use); `geoUnknownUnits` answers the map's own units.
 */
export function computeDistanceOf(
  service: MapService,
  from: { x: number; y: number; sr: SpatialReference },
  to: { x: number; y: number; sr: SpatialReference },
  units: string,
): number {
  const mapSr = service.spatialReference;
  let meters: number;
  if (transformable(from.sr) && transformable(to.sr)) {
    const [lon1, lat1] = transformer(from.sr, WGS84)(from.x, from.y);
    const [lon2, lat2] = transformer(to.sr, WGS84)(to.x, to.y);
    if (![lon1, lat1, lon2, lat2].every(Number.isFinite)) {
      throw invalidArgument('FromPoint', 'The points could not be placed on the earth: they lie outside their spatial reference.');
    }
    meters = geodesicDistance(lon1, lat1, lon2, lat2);
  } else {
    const planar = Math.hypot(to.x - from.x, to.y - from.y);
    meters = planar * (METERS_PER[service.units] ?? (service.units === 'geoDecimalDegrees' ? METERS_PER_DEGREE : 1));
  }
  if (units === 'geoDecimalDegrees') return meters / METERS_PER_DEGREE;
  if (units === 'geoUnknownUnits' || units === '') {
    if (!transformable(mapSr)) return meters / (METERS_PER[service.units] ?? 1);
    return meters / metersPerUnit(mapSr);
  }
  const per = METERS_PER[units];
  if (per === undefined) throw invalidArgument('Units', `Units '${units}' is not a unit of length.`);
  return meters / per;
}

const computeDistance: SoapHandler = syncHandler((ctx, args) => {
  const s = ctx.service;
  checkMapName(s, args['MapName']);
  const from = pointArg(args['FromPoint'], 'FromPoint', s.spatialReference);
  const to = pointArg(args['ToPoint'], 'ToPoint', s.spatialReference);
  return result(computeDistanceOf(s, from, to, str(args['Units'])));
});

function intArray(v: SoapValue, path: string): number[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidArgument(path, `${path} must be an array of integers`);
  return (v as SoapValue[]).map((x, i) => {
    if (typeof x !== 'number' || !Number.isInteger(x)) throw invalidArgument(`${path}[${i}]`, `${path}[${i}] must be an integer`);
    return x;
  });
}

const toMapPoints: SoapHandler = async (ctx, args) => {
  const md = checkMapDescription(ctx.service, args['MapDescription']);
  const m = await drawnMap(ctx.service, md, args['MapImageDisplay'], displayPaths, featureExtentResolver(ctx.service));
  const xs = intArray(args['ScreenXValues'], 'ScreenXValues');
  const ys = intArray(args['ScreenYValues'], 'ScreenYValues');
  if (xs.length !== ys.length) {
    throw invalidArgument('ScreenYValues', `ScreenXValues and ScreenYValues must hold as many values (${xs.length} and ${ys.length})`);
  }
  const points = xs.map((x, i) => {
    const p = toMap(m, x, ys[i]!);
    return { $type: 'PointN', X: p.x, Y: p.y };
  });
  return result({
    $type: 'MultipointN',
    HasID: false,
    HasZ: false,
    HasM: false,
    ...(points.length > 0
      ? {
          Extent: soapEnvelope({
            xmin: Math.min(...points.map((p) => p.X)),
            ymin: Math.min(...points.map((p) => p.Y)),
            xmax: Math.max(...points.map((p) => p.X)),
            ymax: Math.max(...points.map((p) => p.Y)),
          }),
        }
      : {}),
    PointArray: points,
    SpatialReference: soapSpatialReference(m.spatialReference),
  });
};

const fromMapPoints: SoapHandler = async (ctx, args) => {
  const md = checkMapDescription(ctx.service, args['MapDescription']);
  const m = await drawnMap(ctx.service, md, args['MapImageDisplay'], displayPaths, featureExtentResolver(ctx.service));
  const mp = args['MapPoints'];
  if (!isObject(mp)) throw invalidArgument('MapPoints', 'MapPoints is required');
  if (mp.$type !== undefined && mp.$type !== 'MultipointN') {
    throw invalidArgument('MapPoints', `MapPoints: send a MultipointN (got ${mp.$type})`);
  }
  // Points in their own spatial reference are placed on the drawn map's.
  const sr = optionalSpatialReference(mp['SpatialReference'], 'MapPoints/SpatialReference') ?? m.spatialReference;
  const t = transformer(sr, m.spatialReference);
  const arr = Array.isArray(mp['PointArray']) ? (mp['PointArray'] as SoapValue[]) : [];
  const xs: number[] = [];
  const ys: number[] = [];
  arr.forEach((p, i) => {
    const at = pointArg(p, `MapPoints/PointArray[${i}]`, sr);
    const [x, y] = at.sr === sr ? t(at.x, at.y) : transformer(at.sr, m.spatialReference)(at.x, at.y);
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      throw invalidArgument(`MapPoints/PointArray[${i}]`, `MapPoints/PointArray[${i}] cannot be placed on the map's spatial reference`);
    }
    const s = toScreen(m, x, y);
    xs.push(s.x);
    ys.push(s.y);
  });
  return { ScreenXValues: xs, ScreenYValues: ys };
};

// ---------------------------------------------------------------------------------------------
// Image return types, drawing descriptions, subtypes

const getSupportedImageReturnTypes: SoapHandler = syncHandler(() => result('geoImageReturnMimeData'));

async function rasterDrawingDescription(layer: RasterLayer): Promise<SoapObject> {
  const planned = await planServiceRule(layer.image, rasterLayerRule(layer), 0, 'renderingRule');
  const bands = planned.root.info.bandCount;
  const renderer: SoapObject =
    bands >= 3
      ? {
          $type: 'RasterRGBRenderer',
          Indexed: false,
          LayerIndex1: 0,
          LayerIndex2: 1,
          LayerIndex3: 2,
          UseRGBBand: 7,
          StretchType: 'geoRasterStretch_MinimumMaximum',
        }
      : planned.root.info.colormap
        ? // Decision: a colormapped single band is described as a unique-value raster renderer (its colours are its own).
          { $type: 'RasterUniqueValueRenderer', Indexed: true }
        : { $type: 'RasterStretchRenderer', Indexed: false, LayerIndex1: 0, StretchType: 'geoRasterStretch_MinimumMaximum' };
  return { $type: 'RasterLayerDrawingDescription', RasterRenderer: renderer, Transparency: 0, Brightness: 0, Contrast: 0 };
}

const getDefaultLayerDrawingDescriptions: SoapHandler = async (ctx, args) => {
  const s = ctx.service;
  checkMapName(s, args['MapName']);
  const ids = layerIdsOf(s, args['LayerIDs']);
  // Decision: no LayerIDs = every layer (as the legend operations do).
  const layers = ids.length > 0 ? ids.map((id) => s.byId(id) as MapLayer) : s.layers;
  const out: SoapObject[] = [];
  for (const l of layers) {
    if (l.kind === 'feature') {
      out.push({
        $type: 'FeatureLayerDrawingDescription',
        FeatureRenderer: soapRendererOf(l.renderer, `layers[${l.id}].renderer`),
        ScaleSymbols: false,
        Transparency: 0,
        Brightness: 0,
        Contrast: 0,
        SourceLayerID: l.id,
      });
    } else {
      out.push(await rasterDrawingDescription(l));
    }
  }
  return result(out);
};

/** The MapTableSubtypeInfo of a layer or table with subtypes. */
export function subtypeInfo(t: { id: number; table: FeatureTable; subtypes: Subtypes }): SoapObject {
  const fields = t.table.fields;
  return {
    $type: 'MapTableSubtypeInfo',
    TableID: t.id,
    SubtypeFieldName: t.subtypes.field,
    SubtypeInfos: t.subtypes.subtypes.map((st) => ({
      $type: 'SubtypeInfo',
      SubtypeCode: st.code,
      SubtypeName: st.name,
      // Each field with a domain in this subtype: the subtype's own (IsInherited false), else the field's.
      FieldDomainInfos: fields.flatMap((f) => {
        const own = Object.entries(st.domains).find(([k]) => k.toLowerCase() === f.name.toLowerCase())?.[1];
        const d = own ?? f.domain;
        if (!d) return [];
        return [{ $type: 'FieldDomainInfo', FieldName: f.name, Domain: soapDomain(d, f.type), IsInherited: own === undefined }];
      }),
    })),
  };
}

function subtypeInfosOf(service: MapService, ids: { id: number; path: string }[] | undefined): SoapObject[] {
  const all = [...service.layers, ...service.tables];
  const chosen = ids ? ids.map(({ id, path }) => mapTableOf(service, id, path)) : all;
  const out: SoapObject[] = [];
  for (const t of chosen) {
    if (t.kind === 'raster' || !t.subtypes) continue;
    out.push(subtypeInfo({ id: t.id, table: t.table, subtypes: t.subtypes }));
  }
  return out;
}

const getMapTableSubtypeInfos: SoapHandler = syncHandler((ctx, args) => {
  checkMapName(ctx.service, args['MapName']);
  const v = args['TableIDs'];
  // Decision: absent or empty TableIDs = every layer and table (those without subtypes answer nothing).
  const ids = Array.isArray(v) && v.length > 0 ? intArray(v, 'TableIDs').map((id, i) => ({ id, path: `TableIDs[${i}]` })) : undefined;
  return result(subtypeInfosOf(ctx.service, ids));
});

const getMapTableSubtypeInfos2: SoapHandler = syncHandler((ctx, args) => {
  checkMapName(ctx.service, args['MapName']);
  const v = args['LayerDescriptions'];
  let ids: { id: number; path: string }[] | undefined;
  if (Array.isArray(v) && v.length > 0) {
    ids = (v as SoapValue[]).map((d, i) => {
      const path = `LayerDescriptions[${i}]/LayerID`;
      if (!isObject(d) || typeof d['LayerID'] !== 'number') throw invalidArgument(path, `${path} is required`);
      return { id: d['LayerID'], path };
    });
  }
  return result(subtypeInfosOf(ctx.service, ids));
});

// ---------------------------------------------------------------------------------------------
// QueryRasterValue

/** The field holding a raster layer's raster (QueryRasterValue's FieldName). */
export const RASTER_FIELD = 'Raster';

const IMAGE_FORMATS: Readonly<Record<string, ExportFormat>> = {
  geoImagePNG: 'png',
  geoImagePNG24: 'png24',
  geoImagePNG32: 'png32',
  geoImageJPG: 'jpg',
  geoImageJPGPNG: 'jpgpng',
};

/** The raster of a raster layer as an image of at most the service's largest size. */
export async function rasterImage(ctx: SoapContext, layer: RasterLayer, imageType: SoapValue, path: string): Promise<SoapObject> {
  const s = ctx.service;
  let format: ExportFormat = 'png';
  let asUrl = false;
  if (isObject(imageType)) {
    const f = str(imageType['ImageFormat']) || 'geoImagePNG';
    const known = IMAGE_FORMATS[f];
    if (!known)
      throw invalidArgument(
        `${path}/ImageFormat`,
        `Image format ${f} is not supported for raster values: use PNG, PNG24, PNG32, JPG or JPGPNG.`,
      );
    format = known;
    asUrl = imageType['ImageReturnType'] === 'geoImageReturnURL';
  }
  const info = layer.image.info;
  // Decision: the whole raster, at its own resolution when that fits the service's largest image, else
  // reduced (aspect kept) to fit it.
  const k = Math.min(1, s.maxImageWidth / info.width, s.maxImageHeight / info.height);
  const width = Math.max(1, Math.round(info.width * k));
  const height = Math.max(1, Math.round(info.height * k));
  const services = imageServicesOf(ctx.deps);
  const rule = rasterLayerRule(layer);
  const image = await renderOnGrid(services, layer.image, {
    rule,
    grid: { spatialReference: info.spatialReference ?? {}, extent: info.extent, width, height },
    method: 'nearest',
    signal: ctx.signal,
  });
  const encoded = encodeExport(image, layer.image, rule, undefined, { format, quality: 75, compression: 'none' }, 'any');
  const base = { ImageHeight: height, ImageWidth: width, ImageDPI: 96, ImageType: encoded.contentType };
  if (asUrl) {
    // The drawing operations' output folder: an unguessable name, served for a while, with the caller's token.
    const rec = await mapOutputsOf(ctx.deps).put(encoded.bytes, encoded.ext === 'jpg' ? 'jpg' : 'png', {
      service: `${s.name}.MapServer`,
      secured: ctx.token !== undefined,
    });
    return { $type: 'ImageResult', ImageURL: outputUrl(ctx.origin, rec.name, ctx.token), ...base };
  }
  return { $type: 'ImageResult', ImageData: encoded.bytes, ImageURL: '', ...base };
}

async function queryRasterValueOf(ctx: SoapContext, t: MapLayer | StandaloneTable, args: SoapArgs): Promise<SoapObject[]> {
  const field = str(args['FieldName']).trim();
  if (t.kind !== 'raster') {
    // Feature layers and tables have no raster field.
    const what = t.kind === 'table' ? 'Table' : 'Layer';
    throw invalidArgument(
      'FieldName',
      `${what} ${t.id} ('${t.name}') has no raster field${field ? ` named '${field}'` : ''}: raster values come from raster layers.`,
    );
  }
  if (field !== '' && field.toLowerCase() !== RASTER_FIELD.toLowerCase()) {
    throw invalidArgument(
      'FieldName',
      `Layer ${t.id} ('${t.name}') has no raster field named '${field}' (its raster field is '${RASTER_FIELD}').`,
    );
  }
  const rows = intArray(args['RowIDs'], 'RowIDs');
  // Decision: a raster layer is a table of one row (id 1) whose raster is the layer's raster, drawn with its rule.
  rows.forEach((r, i) => {
    if (r !== 1)
      throw new EngineError('NOT_FOUND', `Row ${r} does not exist in layer ${t.id} ('${t.name}'): its only row is 1.`, {
        path: `RowIDs[${i}]`,
      });
  });
  const out: SoapObject[] = [];
  for (let i = 0; i < rows.length; i++) out.push(await rasterImage(ctx, t, args['ImageType'], 'ImageType'));
  return out;
}

const queryRasterValue: SoapHandler = async (ctx, args) => {
  checkMapName(ctx.service, args['MapName']);
  const id = typeof args['SourceTableID'] === 'number' ? args['SourceTableID'] : Number.NaN;
  const t = mapTableOf(ctx.service, id, 'SourceTableID');
  return result(await queryRasterValueOf(ctx, t, args));
};

const queryRasterValue2: SoapHandler = async (ctx, args) => {
  checkMapName(ctx.service, args['MapName']);
  const t = mapTableOfDescription(ctx.service, args['MapTableDescription']);
  return result(await queryRasterValueOf(ctx, t, args));
};

// ---------------------------------------------------------------------------------------------
// GetSQLSyntaxInfo

/**
 * The where-clause dialect of a layer or table: the store's allowlist (map/where.ts), so what this
 * answers is exactly what QueryFilter/WhereClause accepts. FunctionNames: each function's name and
 * its syntax; SpecialCharacters: the wildcard, quote, delimiter and escape characters.
 */
export function sqlSyntaxInfo(): SoapObject {
  return {
    $type: 'SQLSyntaxInfo',
    FunctionNames: propertySet(SQL_FUNCTIONS.map((f) => [f.name, f.syntax] as const)),
    SpecialCharacters: propertySet(Object.entries(SQL_SYNTAX.specialCharacters)),
    SupportedPredicates: [...SQL_PREDICATES],
    SupportedClauses: [...SQL_CLAUSES],
    IdentifierCase: SQL_SYNTAX.identifierCase,
    DelimitedIdentifierCase: SQL_SYNTAX.delimitedIdentifierCase,
    StringComparisonCase: SQL_SYNTAX.stringComparisonCase,
    Keywords: [...SQL_KEYWORDS],
    InvalidCharacters: SQL_SYNTAX.invalidCharacters,
    InvalidStartingCharacters: SQL_SYNTAX.invalidStartingCharacters,
  };
}

const getSQLSyntaxInfo: SoapHandler = syncHandler((ctx, args) => {
  checkMapName(ctx.service, args['MapName']);
  const id = typeof args['LayerID'] === 'number' ? args['LayerID'] : Number.NaN;
  const t = mapTableOf(ctx.service, id, 'LayerID');
  if (t.kind === 'raster') {
    // Decision: raster layers have no attribute table to query, so no where-clause dialect.
    throw invalidArgument('LayerID', `Layer ${t.id} ('${t.name}') is a raster layer: it has no attributes to query.`);
  }
  return result(sqlSyntaxInfo());
});

export const infoHandlers: Record<string, SoapHandler> = {
  GetSQLSyntaxInfo: getSQLSyntaxInfo,
  GetDocumentInfo: getDocumentInfo,
  GetMapCount: getMapCount,
  GetMapName: getMapName,
  GetDefaultMapName: getDefaultMapName,
  GetServiceConfigurationInfo: getServiceConfigurationInfo,
  GetServerInfo: getServerInfo,
  ComputeScale: computeScale,
  ComputeDistance: computeDistance,
  ToMapPoints: toMapPoints,
  FromMapPoints: fromMapPoints,
  GetSupportedImageReturnTypes: getSupportedImageReturnTypes,
  GetDefaultLayerDrawingDescriptions: getDefaultLayerDrawingDescriptions,
  GetMapTableSubtypeInfos: getMapTableSubtypeInfos,
  GetMapTableSubtypeInfos2: getMapTableSubtypeInfos2,
  QueryRasterValue: queryRasterValue,
  QueryRasterValue2: queryRasterValue2,
};

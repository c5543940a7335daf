/**
 * The map service model: an ordered set of layers (raster and feature) and standalone tables of a
 * MapServer service, opened from its service record. Protocol-neutral: the SOAP map service reads
 * it; a REST MapServer could read the same model.
 *
 * Conventions every implementation and caller follows:
 * - Layers and standalone tables share one id space: layers are 0..n-1 in configuration order
 *   (layer 0 is drawn on top, as the vendor's maps do), tables follow (n, n+1, ...).
 * - Geometries are GeoJSON geometry objects with coordinates in the service's spatial reference.
 * - Attribute values are `string | number | boolean | Date | null` (dates as Date, UTC).
 * - Errors are EngineErrors: bad client input INVALID_ARGUMENT with `path` naming the SOAP field
 *   (e.g. `QueryFilter/WhereClause`), unknown ids NOT_FOUND, storage failures IO_ERROR.
 */
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import type { OpenedImageService } from '../image/service.js';

export type Geometry =
  | { readonly type: 'Point'; readonly coordinates: readonly number[] }
  | { readonly type: 'MultiPoint'; readonly coordinates: readonly (readonly number[])[] }
  | { readonly type: 'LineString'; readonly coordinates: readonly (readonly number[])[] }
  | { readonly type: 'MultiLineString'; readonly coordinates: readonly (readonly (readonly number[])[])[] }
  | { readonly type: 'Polygon'; readonly coordinates: readonly (readonly (readonly number[])[])[] }
  | { readonly type: 'MultiPolygon'; readonly coordinates: readonly (readonly (readonly (readonly number[])[])[])[] };

export type AttributeValue = string | number | boolean | Date | null;

/** Field types, as the SOAP `FieldType` enumeration names them. */
export type FieldType =
  | 'geoFieldTypeOID'
  | 'geoFieldTypeInteger'
  | 'geoFieldTypeSmallInteger'
  | 'geoFieldTypeDouble'
  | 'geoFieldTypeSingle'
  | 'geoFieldTypeString'
  | 'geoFieldTypeDate'
  | 'geoFieldTypeGeometry'
  | 'geoFieldTypeGlobalID'
  | 'geoFieldTypeGUID';

export type Domain =
  | {
      readonly type: 'codedValue';
      readonly name: string;
      readonly codedValues: readonly { readonly name: string; readonly code: string | number }[];
    }
  | { readonly type: 'range'; readonly name: string; readonly range: readonly [number, number] };

export interface FieldInfo {
  readonly name: string;
  readonly type: FieldType;
  readonly alias: string;
  /** Strings: the longest value imported (at least 1), or the configured length. Others: 0 unless configured. */
  readonly length: number;
  readonly nullable: boolean;
  readonly editable: boolean;
  readonly domain?: Domain;
}

export type SpatialRelation =
  'intersects' | 'envelopeIntersects' | 'indexIntersects' | 'touches' | 'overlaps' | 'crosses' | 'within' | 'contains' | 'relation';

export interface FeatureQuery {
  /** The client's where clause, compiled by the store into a safe SQL subset with bound parameters. */
  readonly where?: string;
  /** Only these object ids (a FIDSet). */
  readonly objectIds?: readonly number[];
  /** Only rows whose `field` holds one of `values` (relationship keys: bound values, never parsed as SQL). */
  readonly fieldIn?: { readonly field: string; readonly values: readonly AttributeValue[] };
  /**
   * A spatial filter: `geometry` in the service SR and a relation read as the vendor documents
   * esriSpatialRelEnum, "query geometry REL target": `within` = the filter is within the feature,
   * `contains` = the filter contains the feature, `relation` = relate(filter, feature) matches
   * `relationMask` (spatial.ts). A SOAP SpatialRel maps one to one.
   */
  readonly spatial?: { readonly geometry: Geometry; readonly relation: SpatialRelation; readonly relationMask?: string };
  /** Fields returned (names as stored, case-insensitive on input); undefined or ['*'] = all. */
  readonly outFields?: readonly string[];
  readonly returnGeometry?: boolean;
  /** `ORDER BY` fields: `[{field, descending}]` (already parsed by the caller from a postfix clause). */
  readonly orderBy?: readonly { readonly field: string; readonly descending: boolean }[];
  /** Most rows returned (the service's maxRecordCount applies when undefined; Infinity = every row). */
  readonly limit?: number;
  /** Error paths for the where clause etc. start with this (default `QueryFilter`). */
  readonly path?: string;
  /** Error path of the where clause itself when it is not `<path>/WhereClause` (e.g. `LayerDescriptions[2]/DefinitionExpression`). */
  readonly wherePath?: string;
}

export interface FeatureRow {
  readonly id: number;
  /** Requested fields by stored name, in field order. */
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly geometry?: Geometry | null;
}

export type StatisticType = 'count' | 'sum' | 'min' | 'max' | 'avg' | 'stddev' | 'var';

export interface StatisticRequest {
  readonly field: string;
  readonly type: StatisticType;
  /** Output column name (default `<TYPE>_<field>`). */
  readonly outName?: string;
}

export interface AttachmentInfo {
  readonly id: number;
  readonly parentId: number;
  readonly name: string;
  readonly contentType: string;
  readonly size: number;
}

/** A table of rows (a feature layer's or a standalone table's), stored in the site's feature store. */
export interface FeatureTable {
  readonly fields: readonly FieldInfo[];
  readonly objectIdField: string;
  /** null for a standalone table. */
  readonly geometryType: 'point' | 'multipoint' | 'polyline' | 'polygon' | null;
  /** Extent of the stored geometries (undefined for a table or an empty layer). */
  readonly extent?: Extent;
  query(q: FeatureQuery): Promise<FeatureRow[]>;
  count(q: FeatureQuery): Promise<number>;
  ids(q: FeatureQuery): Promise<number[]>;
  statistics(
    q: FeatureQuery,
    stats: readonly StatisticRequest[],
    groupBy?: readonly string[],
    orderBy?: readonly { readonly field: string; readonly descending: boolean }[],
  ): Promise<Record<string, AttributeValue>[]>;
  /** Distinct values of a field with their counts (legend and unique-value classification). */
  distinct(field: string, q?: FeatureQuery): Promise<{ readonly value: AttributeValue; readonly count: number }[]>;
  /** Attachments of these rows (empty when the table has none). */
  attachmentInfos(rowIds: readonly number[]): Promise<AttachmentInfo[]>;
  attachmentData(attachmentIds: readonly number[]): Promise<{ readonly info: AttachmentInfo; readonly data: Uint8Array }[]>;
}

/** Esri JSON renderer (`simple`, `classBreaks`, `uniqueValue`) with esriSMS/esriSLS/esriSFS symbols, as configured. */
export type RendererJson = Readonly<Record<string, unknown>>;

interface LayerBase {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly copyrightText: string;
  /** 0 = no limit (vendor convention). */
  readonly minScale: number;
  readonly maxScale: number;
  readonly defaultVisibility: boolean;
  readonly extent: Extent;
}

export interface RasterLayer extends LayerBase {
  readonly kind: 'raster';
  readonly path: string;
  /** The rendering rule as configured (resolved against the engine when drawn), or undefined. */
  readonly renderingRule?: unknown;
  /** The raster opened as the image service opens its rasters (shared source, statistics, templates). */
  readonly image: OpenedImageService;
}

export interface FeatureLayer extends LayerBase {
  readonly kind: 'feature';
  readonly table: FeatureTable;
  readonly renderer: RendererJson;
  readonly displayField: string;
  /** Field holding a URL per feature (QueryHyperlinks), when configured. */
  readonly hyperlinkField?: string;
  /** HTML popup template with `{FIELD}` placeholders, when configured. */
  readonly popupTemplate?: string;
  readonly subtypes?: Subtypes;
  readonly hasAttachments: boolean;
}

export interface StandaloneTable {
  readonly kind: 'table';
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly table: FeatureTable;
  readonly displayField: string;
  readonly popupTemplate?: string;
  readonly subtypes?: Subtypes;
  readonly hasAttachments: boolean;
}

export interface Subtypes {
  readonly field: string;
  readonly subtypes: readonly { readonly code: number; readonly name: string; readonly domains: Readonly<Record<string, Domain>> }[];
}

export type MapLayer = RasterLayer | FeatureLayer;

export interface MapRelationship {
  readonly id: number;
  readonly name: string;
  /** Origin and destination layer/table ids. */
  readonly origin: number;
  readonly destination: number;
  readonly originKey: string;
  readonly destinationKey: string;
  readonly cardinality: 'oneToOne' | 'oneToMany';
}

export interface LevelOfDetail {
  readonly level: number;
  readonly scale: number;
  readonly resolution: number;
}

export interface TileScheme {
  readonly origin: { readonly x: number; readonly y: number };
  readonly rows: number;
  readonly cols: number;
  readonly dpi: number;
  readonly lods: readonly LevelOfDetail[];
  readonly format: 'PNG' | 'JPEG' | 'MIXED';
  /** JPEG quality 1..100. */
  readonly quality: number;
  readonly clientCachingAllowed: boolean;
  /** Folder of this service version's tiles (under the site's data folder). */
  readonly cacheDir: string;
}

export interface MapBookmark {
  readonly name: string;
  readonly extent: Extent;
}

/** An opened MapServer service. One map per service (its name is `mapName`). */
export interface MapService {
  /** `folder/name` or `name`. */
  readonly name: string;
  readonly serviceName: string;
  readonly folder: string;
  /** Changes whenever the service record does (caches put it in their keys). */
  readonly version: string;
  /** The map (data frame) name: the configured `mapName`, default `Layers` (the vendor's default). */
  readonly mapName: string;
  readonly description: string;
  readonly copyrightText: string;
  readonly spatialReference: SpatialReference;
  /** SOAP `Units` value of the map units (`geoMeters`, `geoDecimalDegrees`, `geoFeet`, ...). */
  readonly units: string;
  readonly fullExtent: Extent;
  readonly initialExtent: Extent;
  readonly layers: readonly MapLayer[];
  readonly tables: readonly StandaloneTable[];
  readonly relationships: readonly MapRelationship[];
  readonly bookmarks: readonly MapBookmark[];
  /** RGBA 0..255 background of drawn maps. */
  readonly backgroundColor: readonly [number, number, number, number];
  readonly maxRecordCount: number;
  readonly maxImageWidth: number;
  readonly maxImageHeight: number;
  readonly tiling: TileScheme;
  /** A layer or table by id; undefined when there is none. */
  byId(id: number): MapLayer | StandaloneTable | undefined;
}

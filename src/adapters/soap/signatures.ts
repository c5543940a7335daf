/**
 * The request and response elements of the 55 map service operations, in the order of seed §7's
 * table, with exactly its element names, types and optionality ("(opt)" = minOccurs 0). Types are
 * `xs:` built-ins or names of the type table (schema.ts). The WSDL, the decoder and the encoder read
 * these; the handlers are joined to them by name.
 */
import type { ElementDecl, OperationSignature } from './operation.js';

const req = (name: string, type: string): ElementDecl => ({ name, type });
const opt = (name: string, type: string): ElementDecl => ({ name, type, optional: true });
const sig = <N extends string>(
  name: N,
  request: readonly ElementDecl[],
  resultType: string,
): OperationSignature & { readonly name: N } => ({
  name,
  request,
  response: [req('Result', resultType)],
});

// Request elements shared by many operations.
const MapName = req('MapName', 'xs:string');
const MapDescription = req('MapDescription', 'MapDescription');
const MapImageDisplay = req('MapImageDisplay', 'ImageDisplay');
const LayerID = req('LayerID', 'xs:int');
const LayerIDs = req('LayerIDs', 'ArrayOfInt');
const QueryFilter = req('QueryFilter', 'QueryFilter');
const LayerDescription = req('LayerDescription', 'LayerDescription');
const MapTableDescription = req('MapTableDescription', 'MapTableDescription');
const QueryResultOptions = req('QueryResultOptions', 'QueryResultOptions');
const RowIDs = req('RowIDs', 'ArrayOfInt');
const TableID = req('TableID', 'xs:int');
const Level = req('Level', 'xs:int');
const Row = req('Row', 'xs:int');
const Column = req('Column', 'xs:int');

export const OPERATION_SIGNATURES = [
  sig('GetDocumentInfo', [], 'PropertySet'),
  sig('GetMapCount', [], 'xs:int'),
  sig('GetMapName', [req('Index', 'xs:int')], 'xs:string'),
  sig('GetDefaultMapName', [], 'xs:string'),
  sig('GetServerInfo', [MapName], 'MapServerInfo'),
  sig('ExportMapImage', [MapDescription, req('ImageDescription', 'ImageDescription')], 'MapImage'),
  sig(
    'ExportScaleBar',
    [
      opt('ScaleBar', 'ScaleBar'),
      MapDescription,
      req('MapDisplay', 'ImageDisplay'),
      opt('BackGroundColor', 'Color'),
      req('ImageDescription', 'ImageDescription'),
    ],
    'ImageResult',
  ),
  sig(
    'Find',
    [
      MapDescription,
      MapImageDisplay,
      req('SearchString', 'xs:string'),
      req('Contains', 'xs:boolean'),
      req('SearchFields', 'xs:string'),
      req('FindOption', 'FindOption'),
      LayerIDs,
    ],
    'ArrayOfMapServerFindResult',
  ),
  sig(
    'Identify',
    [
      MapDescription,
      MapImageDisplay,
      req('SearchShape', 'Geometry'),
      req('Tolerance', 'xs:int'),
      req('IdentifyOption', 'IdentifyOption'),
      LayerIDs,
    ],
    'ArrayOfMapServerIdentifyResult',
  ),
  sig('QueryFeatureCount', [MapName, LayerID, QueryFilter], 'xs:int'),
  sig('QueryFeatureIDs', [MapName, LayerID, QueryFilter], 'FIDSet'),
  sig('QueryFeatureData', [MapName, LayerID, QueryFilter], 'RecordSet'),
  sig('QueryFeatureCount2', [MapName, LayerDescription, QueryFilter], 'xs:int'),
  sig('QueryFeatureIDs2', [MapName, LayerDescription, QueryFilter], 'FIDSet'),
  sig('QueryFeatureData2', [MapName, LayerDescription, QueryFilter, QueryResultOptions], 'QueryResult'),
  sig('QueryHyperlinks', [MapDescription, MapImageDisplay, LayerIDs], 'ArrayOfMapServerHyperlink'),
  sig('ComputeScale', [MapDescription, MapImageDisplay], 'xs:double'),
  sig('ComputeDistance', [MapName, req('FromPoint', 'Point'), req('ToPoint', 'Point'), req('Units', 'Units')], 'xs:double'),
  sig(
    'ToMapPoints',
    [MapDescription, MapImageDisplay, req('ScreenXValues', 'ArrayOfInt'), req('ScreenYValues', 'ArrayOfInt')],
    'Multipoint',
  ),
  {
    name: 'FromMapPoints',
    request: [MapDescription, MapImageDisplay, req('MapPoints', 'Multipoint')],
    response: [req('ScreenXValues', 'ArrayOfInt'), req('ScreenYValues', 'ArrayOfInt')],
  } as OperationSignature & { readonly name: 'FromMapPoints' },
  sig(
    'GetLegendInfo',
    [MapName, LayerIDs, req('LegendPatch', 'MapServerLegendPatch'), req('ImageType', 'ImageType')],
    'ArrayOfMapServerLegendInfo',
  ),
  sig(
    'GetLegendInfo2',
    [MapDescription, MapImageDisplay, LayerIDs, req('LegendPatch', 'MapServerLegendPatch'), req('ImageType', 'ImageType')],
    'ArrayOfMapServerLegendInfo',
  ),
  sig('GetSQLSyntaxInfo', [MapName, LayerID], 'SQLSyntaxInfo'),
  sig('GetSupportedImageReturnTypes', [], 'ImageReturnType'),
  sig('IsFixedScaleMap', [MapName], 'xs:boolean'),
  sig('HasSingleFusedMapCache', [MapName], 'xs:boolean'),
  sig('GetTileCacheInfo', [MapName], 'TileCacheInfo'),
  sig('GetMapTile', [MapName, Level, Row, Column, opt('Format', 'xs:string')], 'xs:base64Binary'),
  sig('HasLayerCache', [MapName, LayerID], 'xs:boolean'),
  sig('GetLayerTile', [MapName, LayerID, Level, Row, Column, opt('Format', 'xs:string')], 'xs:base64Binary'),
  sig('GetVirtualCacheDirectory', [MapName, LayerID], 'xs:string'),
  sig('GetCacheName', [MapName, LayerID], 'xs:string'),
  sig('GetTileImageInfo', [MapName], 'TileImageInfo'),
  sig('GetCacheControlInfo', [MapName], 'CacheControlInfo'),
  sig('GetServiceConfigurationInfo', [], 'PropertySet'),
  sig('GetCacheDescriptionInfo', [MapName], 'CacheDescriptionInfo'),
  sig('QueryRowCount', [MapName, MapTableDescription, QueryFilter], 'xs:int'),
  sig('QueryRowIDs', [MapName, MapTableDescription, QueryFilter], 'ArrayOfInt'),
  sig('QueryData', [MapName, MapTableDescription, QueryFilter, QueryResultOptions], 'QueryResult'),
  sig(
    'QueryRelatedRecords',
    [MapName, req('SourceTableID', 'xs:int'), req('SourceFIDSet', 'FIDSet'), req('RelateDescription', 'RelateDescription')],
    'QueryResult',
  ),
  sig(
    'QueryRelatedRecords2',
    [MapName, MapTableDescription, req('SourceFIDSet', 'FIDSet'), req('RelateDescription', 'RelateDescription')],
    'QueryResult',
  ),
  sig('QueryDataStatistics', [MapName, MapTableDescription, req('StatisticsRequest', 'StatisticsRequest'), QueryFilter], 'RecordSet'),
  sig('GetCacheStorageInfo', [MapName], 'CacheStorageInfo'),
  sig(
    'QueryRasterValue',
    [MapName, req('SourceTableID', 'xs:int'), RowIDs, opt('FieldName', 'xs:string'), opt('ImageType', 'ImageType')],
    'ArrayOfImageResult',
  ),
  sig(
    'QueryRasterValue2',
    [MapName, MapTableDescription, RowIDs, opt('FieldName', 'xs:string'), opt('ImageType', 'ImageType')],
    'ArrayOfImageResult',
  ),
  sig('QueryAttachmentInfos', [MapName, TableID, RowIDs], 'ArrayOfAttachmentInfo'),
  sig('QueryAttachmentInfos2', [MapName, MapTableDescription, RowIDs], 'ArrayOfAttachmentInfo'),
  sig(
    'QueryAttachmentData',
    [MapName, TableID, req('AttachmentIDs', 'ArrayOfInt'), req('TransportType', 'TransportType')],
    'ArrayOfAttachmentData',
  ),
  sig(
    'QueryAttachmentData2',
    [MapName, MapTableDescription, req('AttachmentIDs', 'ArrayOfInt'), req('TransportType', 'TransportType')],
    'ArrayOfAttachmentData',
  ),
  sig('QueryHTMLPopups', [MapName, TableID, RowIDs], 'ArrayOfString'),
  sig('QueryHTMLPopups2', [MapName, MapTableDescription, RowIDs], 'ArrayOfString'),
  sig(
    'GetDefaultLayerDrawingDescriptions',
    [MapName, LayerIDs, req('SymbolOutputOptions', 'ServerSymbolOutputOptions')],
    'ArrayOfLayerDrawingDescription',
  ),
  sig('GetMapTableSubtypeInfos', [MapName, opt('TableIDs', 'ArrayOfInt')], 'ArrayOfMapTableSubtypeInfo'),
  sig('GetMapTableSubtypeInfos2', [MapName, opt('LayerDescriptions', 'ArrayOfLayerDescription')], 'ArrayOfMapTableSubtypeInfo'),
  sig('GenerateDataClasses', [MapName, MapTableDescription, req('DataClassificationDef', 'DataClassificationDef')], 'FeatureRenderer'),
] as const;

/** The names of the 55 operations. */
export type OperationName = (typeof OPERATION_SIGNATURES)[number]['name'];

const BY_NAME: ReadonlyMap<string, OperationSignature> = new Map(OPERATION_SIGNATURES.map((s) => [s.name, s]));

/** The signature of an operation by its (case-sensitive) name. */
export const operationSignature = (name: string): OperationSignature | undefined => BY_NAME.get(name);

import { describe, expect, it } from 'vitest';
import {
  allFields,
  arrayItem,
  COMPLEX_TYPES,
  complexType,
  derivedTypes,
  derivesFrom,
  ENUMERATIONS,
  enumeration,
  isPolymorphic,
  isXsType,
  tableProblems,
} from './schema.js';
import { OPERATION_SIGNATURES, operationSignature, type OperationName } from './signatures.js';

const fieldList = (type: string): string =>
  allFields(type)
    .map((f) => `${f.name}:${f.type.replace(/^xs:/, '')}${f.maxOccurs === 'unbounded' ? '*' : f.minOccurs === 0 ? '?' : ''}`)
    .join(' ');

describe('the type table', () => {
  it('is closed: every referenced type and base exists, no cycles, no duplicates', () => {
    expect(tableProblems()).toEqual([]);
  });

  it('holds every type reachable from the 55 operations, request and response side', () => {
    const seen = new Set<string>();
    const stack = OPERATION_SIGNATURES.flatMap((s) => [...s.request, ...s.response].map((d) => d.type));
    // QueryResult/Object is anyType: a RecordSet or a RelatedRecordSet (§5.6).
    stack.push('RecordSet', 'RelatedRecordSet');
    while (stack.length > 0) {
      const t = stack.pop()!;
      if (seen.has(t) || isXsType(t)) continue;
      seen.add(t);
      const c = complexType(t);
      if (c === undefined) {
        expect(enumeration(t), `type ${t}`).toBeDefined();
        continue;
      }
      if (c.base) stack.push(c.base);
      stack.push(...c.fields.map((f) => f.type), ...derivedTypes(t));
    }
    expect(seen.size).toBe(COMPLEX_TYPES.length + ENUMERATIONS.length);
  });

  it('follows protocols.md §5.6 where it speaks', () => {
    expect(fieldList('MapImage')).toBe(
      'ImageData:base64Binary? ImageURL:string Extent:Envelope? VisibleLayerIDs:ArrayOfInt? MapScale:double ImageHeight:int ImageWidth:int ImageDPI:double ImageType:string?',
    );
    expect(fieldList('MapDescription')).toBe(
      'Name:string MapArea:MapArea? LayerDescriptions:ArrayOfLayerDescription? Rotation:double SpatialReference:SpatialReference? TransparentColor:Color? SelectionColor:Color? BackgroundSymbol:FillSymbol? CustomGraphics:ArrayOfGraphicElement? GeoTransformation:GeoTransformation? TimeReference:TimeReference? TimeValue:TimeValue? HonorLayerReordering:boolean? TimeRelation:TimeRelation?',
    );
    expect(fieldList('FeatureExtent')).toBe(
      'Extent:Envelope? DefaultScale:double ExpandRatio:double FeatureIDs:ArrayOfInt? LayerID:int MapName:string',
    );
    expect(allFields('FeatureExtent').find((f) => f.name === 'ExpandRatio')?.default).toBe('1.0');
    expect(fieldList('TimeQueryFilter').startsWith('SubFields:string? WhereClause:string')).toBe(true);
    expect(
      fieldList('ImageQueryFilter').endsWith(
        'TimeValue:TimeValue OutputTimeReference:TimeReference TimeRelation:TimeRelation PixelSize:Point',
      ),
    ).toBe(true);
    expect(fieldList('MapServerLegendPatch')).toBe('Width:double Height:double ImageDPI:double LinePatch:LinePatch? AreaPatch:AreaPatch?');
    expect(fieldList('TileCacheInfo')).toBe(
      'SpatialReference:SpatialReference? TileOrigin:Point? TileCols:int TileRows:int DPI:int LODInfos:ArrayOfLODInfo? PreciseDPI:double?',
    );
    expect(fieldList('RgbColor')).toBe(
      'UseWindowsDithering:boolean? AlphaValue:unsignedByte? Red:unsignedByte Green:unsignedByte Blue:unsignedByte',
    );
    const info = allFields('MapServerInfo').map((f) => f.name);
    expect(info.slice(0, 3)).toEqual(['Name', 'Description', 'FullExtent']);
    expect(info.at(-1)).toBe('MaxScale');
    expect(allFields('MapLayerInfo')).toHaveLength(42);
    expect(complexType('MapTableInfo')?.abstract).toBe(true);
    expect(complexType('Geometry')?.abstract).toBe(false);
    expect(isPolymorphic('Geometry')).toBe(true);
    expect(isPolymorphic('ImageDisplay')).toBe(false);
    for (const a of ['MapArea', 'Point', 'Envelope', 'Multipoint', 'SpatialReference', 'Color', 'Symbol', 'FeatureRenderer', 'Domain'])
      expect(complexType(a)?.abstract, a).toBe(true);
    expect(derivesFrom('PolygonN', 'Geometry')).toBe(true);
    expect(derivesFrom('PolygonN', 'Polyline')).toBe(false);
    expect(derivesFrom('Ring', 'Path')).toBe(true);
    const pv = allFields('PropertySetProperty').find((f) => f.name === 'Value');
    expect(pv).toMatchObject({ type: 'xs:anyType', minOccurs: 0, nillable: true });
    expect(arrayItem('ArrayOfValue')).toMatchObject({ name: 'Value', type: 'xs:anyType', nillable: true, maxOccurs: 'unbounded' });
  });

  it('declares ArrayOfLayerCacheInfo with 0..n items (§5.4 rule 8) and names array items after their type', () => {
    expect(arrayItem('ArrayOfLayerCacheInfo')).toMatchObject({ name: 'LayerCacheInfo', minOccurs: 0, maxOccurs: 'unbounded' });
    expect(arrayItem('ArrayOfInt')?.name).toBe('Int');
    expect(arrayItem('ArrayOfString')?.name).toBe('String');
    expect(arrayItem('ArrayOfDouble')?.name).toBe('Double');
    expect(arrayItem('ArrayOfLODInfo')?.name).toBe('LODInfo');
    expect(arrayItem('ArrayOfPropertySetProperty')?.name).toBe('PropertySetProperty');
    expect(arrayItem('MapImage')).toBeUndefined();
    for (const c of COMPLEX_TYPES) if (c.name.startsWith('ArrayOf')) expect(arrayItem(c.name), c.name).toBeDefined();
  });

  it('has the enumerations with geo-prefixed values in schema order', () => {
    expect(enumeration('ImageFormat')?.values).toEqual([
      'geoImageNone',
      'geoImageBMP',
      'geoImageJPG',
      'geoImageDIB',
      'geoImageTIFF',
      'geoImagePNG',
      'geoImagePNG24',
      'geoImageEMF',
      'geoImagePS',
      'geoImagePDF',
      'geoImageAI',
      'geoImageGIF',
      'geoImageSVG',
      'geoImagePNG32',
      'geoImageJPGPNG',
    ]);
    expect(enumeration('IdentifyOption')?.values).toEqual([
      'geoIdentifyTopmost',
      'geoIdentifyAllLayers',
      'geoIdentifyVisibleLayers',
      'geoIdentifyTopOneWithHTMLPopup',
      'geoIdentifyVisibleWithHTMLPopup',
    ]);
    expect(enumeration('ServerHTMLPopupType')?.values).toEqual([
      'geoServerHTMLPopupTypeNone',
      'geoServerHTMLPopupTypeAsURL',
      'geoServerHTMLPopupTypeAsHTMLText',
    ]);
    expect(enumeration('JoinType')?.values).toEqual(['geoLeftOuterJoin', 'geoLeftInnerJoin']);
    expect(enumeration('FindOption')?.values).toEqual(['geoFindVisibleLayers', 'geoFindAllLayers']);
    expect(enumeration('MapCacheStorageFormat')).toEqual({
      name: 'MapCacheStorageFormat',
      values: ['geoMapCacheStorageModeCompact', 'geoMapCacheStorageModeExploded'],
      inputAliases: { geoMapCacheStorageModeCompactV2: 'geoMapCacheStorageModeCompact' },
    });
    expect(enumeration('Units')?.values[0]).toBe('geoUnknownUnits');
    expect(enumeration('Units')?.values.at(-1)).toBe('geoDecimeters');
    expect(enumeration('TransportType')?.values).toEqual(['geoTransportTypeEmbedded', 'geoTransportTypeUrl']);
    expect(enumeration('FontStyle')?.values).toEqual(['normal', 'italic', 'oblique']);
    for (const e of ENUMERATIONS) for (const v of e.values) expect(v.startsWith('esri'), `${e.name} ${v}`).toBe(false);
    for (const c of COMPLEX_TYPES) expect(c.name.startsWith('esri'), c.name).toBe(false);
  });
});

describe('the operation signatures', () => {
  it('are the 55 operations of seed §7 in order, every type in the table', () => {
    expect(OPERATION_SIGNATURES).toHaveLength(55);
    expect(new Set(OPERATION_SIGNATURES.map((s) => s.name)).size).toBe(55);
    expect(OPERATION_SIGNATURES[0]?.name).toBe('GetDocumentInfo');
    expect(OPERATION_SIGNATURES.at(-1)?.name).toBe('GenerateDataClasses');
    for (const s of OPERATION_SIGNATURES) {
      for (const d of [...s.request, ...s.response]) {
        const known = isXsType(d.type) || complexType(d.type) !== undefined || enumeration(d.type) !== undefined;
        expect(known, `${s.name}/${d.name}: ${d.type}`).toBe(true);
      }
      if (s.name !== 'FromMapPoints') expect(s.response.map((d) => d.name)).toEqual(['Result']);
    }
  });

  it('have the seed table’s elements, types and optionality', () => {
    const show = (name: OperationName): string =>
      operationSignature(name)!
        .request.map((d) => `${d.name}:${d.type}${d.optional ? '?' : ''}`)
        .join(' ');
    expect(show('ExportScaleBar')).toBe(
      'ScaleBar:ScaleBar? MapDescription:MapDescription MapDisplay:ImageDisplay BackGroundColor:Color? ImageDescription:ImageDescription',
    );
    expect(show('Identify')).toBe(
      'MapDescription:MapDescription MapImageDisplay:ImageDisplay SearchShape:Geometry Tolerance:xs:int IdentifyOption:IdentifyOption LayerIDs:ArrayOfInt',
    );
    expect(show('GetLegendInfo')).toBe('MapName:xs:string LayerIDs:ArrayOfInt LegendPatch:MapServerLegendPatch ImageType:ImageType');
    expect(show('GetLayerTile')).toBe('MapName:xs:string LayerID:xs:int Level:xs:int Row:xs:int Column:xs:int Format:xs:string?');
    expect(show('QueryRasterValue2')).toBe(
      'MapName:xs:string MapTableDescription:MapTableDescription RowIDs:ArrayOfInt FieldName:xs:string? ImageType:ImageType?',
    );
    expect(show('GetMapTableSubtypeInfos2')).toBe('MapName:xs:string LayerDescriptions:ArrayOfLayerDescription?');
    expect(show('GetDocumentInfo')).toBe('');
    expect(operationSignature('FromMapPoints')?.response).toEqual([
      { name: 'ScreenXValues', type: 'ArrayOfInt' },
      { name: 'ScreenYValues', type: 'ArrayOfInt' },
    ]);
    expect(operationSignature('GetMapTile')?.response).toEqual([{ name: 'Result', type: 'xs:base64Binary' }]);
    expect(operationSignature('GenerateDataClasses')?.response).toEqual([{ name: 'Result', type: 'FeatureRenderer' }]);
    expect(operationSignature('getMapCount')).toBeUndefined();
  });
});

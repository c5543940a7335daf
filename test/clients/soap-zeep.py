"""
zeep 4.2.1 (Debian python3-zeep) against the SOAP map service of `rasterflow serve`.

Run by test/soap-clients.test.ts with the system python. Loads the WSDL from the running server,
calls every operation of the map service through zeep's generated proxy, and prints one JSON object:
scenario -> {"ok": true, "value": ...} or {"ok": false, "error": {...}}. Independent expectations
(OGR queries on the same GeoJSON, GDAL pixel reads of the same DEM) are computed here too, so the
Node test compares the service's answers with GDAL's, not with rasterflow's own.

Environment: RF_WSDL (the ?wsdl URL), RF_CA (PEM the server's certificate chains to), RF_FIXTURES
(test/fixtures/map), RF_DEM (the DEM of the raster layer).
"""
import base64
import json
import os
import sys
import traceback

import requests
from urllib3.util.retry import Retry
from zeep import Client, Settings
from zeep.exceptions import Fault
from zeep.helpers import serialize_object
from zeep.transports import Transport

NS = '{http://www.geo.example/schemas/Geo/3.5.0}'
session = requests.Session()
session.verify = os.environ['RF_CA']
# One retry when a pooled keep-alive connection turns out closed (as browsers do). Seen once or twice
# on a loaded CI machine; the server keeps idle connections 65 s, so this is the rare race left.
session.mount('https://', requests.adapters.HTTPAdapter(max_retries=Retry(total=1, connect=1, read=1, status=0, other=0, allowed_methods=None)))
client = Client(os.environ['RF_WSDL'], transport=Transport(session=session, timeout=60), settings=Settings(strict=True))
svc = client.service
T = lambda name: client.get_type(NS + name)  # noqa: E731
FIX = os.environ['RF_FIXTURES']
results = {}


def plain(v):
    """zeep objects -> JSON (bytes as base64, datetimes ISO)."""
    v = serialize_object(v)
    if isinstance(v, (bytes, bytearray)):
        return {'base64': base64.b64encode(v).decode('ascii')}
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items() if not k.startswith('_')}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, 'isoformat'):
        return v.isoformat()
    if hasattr(v, '__values__'):
        return plain(dict(v.__values__))
    return v


def scenario(name):
    def wrap(fn):
        try:
            results[name] = {'ok': True, 'value': plain(fn())}
        except Fault as f:
            results[name] = {'ok': False, 'error': {'kind': 'Fault', 'message': f.message, 'code': f.code,
                                                    'detail': None if f.detail is None else __import__('lxml.etree').etree.tostring(f.detail).decode()}}
        except Exception as e:  # noqa: BLE001
            results[name] = {'ok': False, 'error': {'kind': type(e).__name__, 'message': str(e)[:2000], 'trace': traceback.format_exc()[-2000:]}}
        return fn
    return wrap


# ------------------------------------------------------------------------------------------------
# Independent expectations (GDAL/OGR)
from osgeo import gdal, ogr  # noqa: E402

gdal.UseExceptions()
ogr.UseExceptions()


def ogr_ids(path, where=None, rect=None):
    ds = ogr.Open(path)
    lyr = ds.GetLayer(0)
    if where:
        lyr.SetAttributeFilter(where)
    if rect:
        lyr.SetSpatialFilterRect(*rect)
    return sorted(f.GetFID() + 1 for f in lyr)


CLASSES = os.path.join(FIX, 'elevation-classes.geojson')
SPOTS = os.path.join(FIX, 'spot-heights.geojson')
RECT = (292000.0, 9114000.0, 296000.0, 9118000.0)
expected = {
    'classesWhere': ogr_ids(CLASSES, 'CLASS >= 3'),
    'classesWhereRect': ogr_ids(CLASSES, 'CLASS >= 3', RECT),
    'classesNot5': ogr_ids(CLASSES, 'CLASS <> 5'),
}
inspections = json.load(open(os.path.join(FIX, 'inspections.json')))
expected['inspectionsOver50'] = sum(1 for r in inspections if r['SCORE'] is not None and r['SCORE'] > 50)
expected['relatedTo'] = {str(p): sorted(i + 1 for i, r in enumerate(inspections) if r['PARCEL_ID'] == p) for p in (1, 8, 15)}
area = {}
classes_ds = ogr.Open(CLASSES)  # keep the data source alive while its layer is read (GDAL's Python rule)
lyr = classes_ds.GetLayer(0)
for f in lyr:
    c = f.GetField('CLASS')
    area[c] = area.get(c, 0.0) + (f.GetField('AREA') or 0.0)
expected['areaByClass'] = {str(k): v for k, v in area.items()}
spots_ds = ogr.Open(SPOTS)
spot = spots_ds.GetLayer(0).GetNextFeature()
sx, sy = spot.GetGeometryRef().GetX(), spot.GetGeometryRef().GetY()
expected['spot1'] = {'x': sx, 'y': sy, 'name': spot.GetField('NAME'), 'elev': spot.GetField('ELEV')}
dem = gdal.Open(os.environ['RF_DEM'])
gt = dem.GetGeoTransform()
col, row = int((sx - gt[0]) / gt[1]), int((sy - gt[3]) / gt[5])
expected['demAtSpot1'] = float(dem.GetRasterBand(1).ReadAsArray(col, row, 1, 1)[0][0])
col, row = int((294000 - gt[0]) / gt[1]), int((9116000 - gt[3]) / gt[5])
expected['demAt294000'] = float(dem.GetRasterBand(1).ReadAsArray(col, row, 1, 1)[0][0])
expected['spots'] = [(f.GetGeometryRef().GetX(), f.GetGeometryRef().GetY()) for f in spots_ds.GetLayer(0)]
expected['attachment1'] = base64.b64encode(open(os.path.join(FIX, 'attachments', 'survey-notes.txt'), 'rb').read()).decode('ascii')
results['expected'] = {'ok': True, 'value': expected}

# ------------------------------------------------------------------------------------------------
# Types
EnvelopeN, PointN, MultipointN = T('EnvelopeN'), T('PointN'), T('MultipointN')
MapExtent, ImageDescription, ImageType, ImageDisplay = T('MapExtent'), T('ImageDescription'), T('ImageType'), T('ImageDisplay')
QueryFilter, SpatialFilter, FIDSet = T('QueryFilter'), T('SpatialFilter'), T('FIDSet')
LayerDescription, StandaloneTableDescription = T('LayerDescription'), T('StandaloneTableDescription')
ArrayOfInt, ArrayOfPoint = T('ArrayOfInt'), T('ArrayOfPoint')
RgbColor = T('RgbColor')

info = svc.GetServerInfo(MapName='Layers')
md = info.DefaultMapDescription
# zeep reads an empty required string (<DefinitionExpression></DefinitionExpression>) as None and then
# refuses to send None back in strict mode; a zeep user sets '' before sending the description back.
for ld in md.LayerDescriptions.LayerDescription:
    if ld.DefinitionExpression is None:
        ld.DefinitionExpression = ''


def ints(v):
    """zeep unwraps a type whose only element is an array (FIDSet -> ArrayOfInt -> list)."""
    for attr in ('FIDArray', 'Int'):
        if hasattr(v, attr):
            v = getattr(v, attr)
    return list(v or [])

display = ImageDisplay(ImageHeight=300, ImageWidth=400, ImageDPI=96)
png_mime = ImageType(ImageFormat='geoImagePNG', ImageReturnType='geoImageReturnMimeData')
png_url = ImageType(ImageFormat='geoImagePNG', ImageReturnType='geoImageReturnURL')
layer_desc = lambda lid, expr='': LayerDescription(  # noqa: E731
    LayerID=lid, Visible=True, ShowLabels=False, ScaleSymbols=False, SetSelectionSymbol=False,
    SelectionBufferDistance=0, ShowSelectionBuffer=False, DefinitionExpression=expr)
table_desc = StandaloneTableDescription(ID=4)
extent_md = client.get_type(NS + 'MapDescription')(
    Name='Layers', MapArea=MapExtent(Extent=EnvelopeN(XMin=RECT[0], YMin=RECT[1], XMax=RECT[2], YMax=RECT[3])),
    LayerDescriptions={'LayerDescription': [layer_desc(i) for i in range(4)]}, Rotation=0)


@scenario('document')
def _():
    return {'info': svc.GetDocumentInfo(), 'count': svc.GetMapCount(), 'name0': svc.GetMapName(Index=0),
            'default': svc.GetDefaultMapName(), 'config': svc.GetServiceConfigurationInfo()}


@scenario('mapNameOutOfRange')
def _():
    return svc.GetMapName(Index=7)


@scenario('serverInfo')
def _():
    return {'Name': info.Name, 'FullExtent': info.FullExtent, 'SpatialReference': info.SpatialReference,
            'Units': info.Units, 'layers': [(l.LayerID, l.Name, l.LayerType, l.IsFeatureLayer) for l in info.MapLayerInfos.MapLayerInfo],
            'tables': [t.Name for t in (info.StandaloneTableInfos.StandaloneTableInfo if info.StandaloneTableInfos else [])]}


@scenario('exportMime')
def _():
    r = svc.ExportMapImage(MapDescription=extent_md, ImageDescription=ImageDescription(ImageType=png_mime, ImageDisplay=display))
    return {'ImageData': r.ImageData, 'ImageURL': r.ImageURL, 'Extent': r.Extent, 'MapScale': r.MapScale,
            'VisibleLayerIDs': r.VisibleLayerIDs, 'ImageType': r.ImageType, 'ImageWidth': r.ImageWidth, 'ImageHeight': r.ImageHeight}


@scenario('exportUrl')
def _():
    r = svc.ExportMapImage(MapDescription=md, ImageDescription=ImageDescription(ImageType=png_url, ImageDisplay=display))
    got = session.get(r.ImageURL, timeout=30)
    return {'ImageURL': r.ImageURL, 'status': got.status_code, 'contentType': got.headers.get('content-type'), 'bytes': got.content[:8]}


@scenario('scaleBar')
def _():
    bar = T('AlternatingScaleBar')(Units='geoKilometers', BarHeight=6)
    r = svc.ExportScaleBar(ScaleBar=bar, MapDescription=extent_md, MapDisplay=display, BackGroundColor=RgbColor(Red=255, Green=255, Blue=255),
                           ImageDescription=ImageDescription(ImageType=png_mime, ImageDisplay=ImageDisplay(ImageHeight=40, ImageWidth=300, ImageDPI=96)))
    return {'ImageData': r.ImageData, 'ImageWidth': r.ImageWidth, 'ImageHeight': r.ImageHeight, 'ImageType': r.ImageType}


@scenario('find')
def _():
    return svc.Find(MapDescription=md, MapImageDisplay=display, SearchString=expected['spot1']['name'], Contains=False,
                    SearchFields='NAME', FindOption='geoFindAllLayers', LayerIDs=ArrayOfInt(Int=[0]))


@scenario('identify')
def _():
    pt = PointN(X=expected['spot1']['x'], Y=expected['spot1']['y'])
    return svc.Identify(MapDescription=extent_md, MapImageDisplay=display, SearchShape=pt, Tolerance=3,
                        IdentifyOption='geoIdentifyAllLayers', LayerIDs=ArrayOfInt(Int=[0, 3]))


@scenario('queryFeatures')
def _():
    where = QueryFilter(WhereClause='CLASS >= 3', Resolution=0)
    spatial = SpatialFilter(WhereClause='CLASS >= 3', Resolution=0, SearchOrder='geoSearchOrderSpatial', SpatialRel='geoSpatialRelIntersects',
                            FilterGeometry=EnvelopeN(XMin=RECT[0], YMin=RECT[1], XMax=RECT[2], YMax=RECT[3]),
                            GeometryFieldName='Shape', FilterOwnsGeometry=False, SpatialRelDescription='')
    data = svc.QueryFeatureData(MapName='Layers', LayerID=2, QueryFilter=spatial)
    oid = [f.Name for f in data.Fields.FieldArray.Field].index('OBJECTID')
    return {'count': svc.QueryFeatureCount(MapName='Layers', LayerID=2, QueryFilter=where),
            'ids': ints(svc.QueryFeatureIDs(MapName='Layers', LayerID=2, QueryFilter=where)),
            'spatialIds': sorted(r.Values.Value[oid] for r in data.Records.Record),
            'fields': [(f.Name, f.Type) for f in data.Fields.FieldArray.Field]}


@scenario('queryFeatures2')
def _():
    where = QueryFilter(WhereClause='', Resolution=0)
    opts = T('QueryResultOptions')(Format='geoQueryResultJsonAsMime')
    r = svc.QueryFeatureData2(MapName='Layers', LayerDescription=layer_desc(2, 'CLASS <> 5'), QueryFilter=where, QueryResultOptions=opts)
    return {'count': svc.QueryFeatureCount2(MapName='Layers', LayerDescription=layer_desc(2, 'CLASS <> 5'), QueryFilter=where),
            'ids': ints(svc.QueryFeatureIDs2(MapName='Layers', LayerDescription=layer_desc(2, 'CLASS <> 5'), QueryFilter=where)),
            'json': json.loads(r.MimeData.decode('utf-8'))}


@scenario('injection')
def _():
    return svc.QueryFeatureCount(MapName='Layers', LayerID=2, QueryFilter=QueryFilter(WhereClause='1=1; DROP TABLE features', Resolution=0))


@scenario('unknownLayer')
def _():
    return svc.QueryFeatureCount(MapName='Layers', LayerID=99, QueryFilter=QueryFilter(WhereClause='', Resolution=0))


@scenario('rows')
def _():
    f = QueryFilter(WhereClause='SCORE > 50', Resolution=0)
    opts = T('QueryResultOptions')(Format='geoQueryResultRecordSetAsObject')
    return {'count': svc.QueryRowCount(MapName='Layers', MapTableDescription=table_desc, QueryFilter=f),
            'ids': svc.QueryRowIDs(MapName='Layers', MapTableDescription=table_desc, QueryFilter=f),
            'data': svc.QueryData(MapName='Layers', MapTableDescription=table_desc, QueryFilter=f, QueryResultOptions=opts)}


@scenario('related')
def _():
    rel = T('RelateDescription')(RelationshipID=0, ResultFormat='geoRelateResultRelatedRecordSetAsObject', RelatedTableFields='*')
    a = svc.QueryRelatedRecords(MapName='Layers', SourceTableID=2, SourceFIDSet=FIDSet(FIDArray=ArrayOfInt(Int=[1, 8, 15])), RelateDescription=rel)
    b = svc.QueryRelatedRecords2(MapName='Layers', MapTableDescription=layer_desc(2), SourceFIDSet=FIDSet(FIDArray=ArrayOfInt(Int=[1, 8, 15])), RelateDescription=rel)
    return {'one': a, 'two': b}


@scenario('statistics')
def _():
    d = T('StatisticDescription')(StatisticFieldName='AREA', StatisticType='geoDataStatTypeSum', ResultFieldName='TOTAL')
    req = T('StatisticsRequest')(StatisticDescriptions={'StatisticDescription': [d]}, GroupByFields='CLASS')
    return svc.QueryDataStatistics(MapName='Layers', MapTableDescription=layer_desc(2), StatisticsRequest=req, QueryFilter=QueryFilter(WhereClause='', Resolution=0))


@scenario('hyperlinks')
def _():
    return svc.QueryHyperlinks(MapDescription=md, MapImageDisplay=display, LayerIDs=ArrayOfInt(Int=[0]))


@scenario('screen')
def _():
    pts = svc.ToMapPoints(MapDescription=extent_md, MapImageDisplay=display, ScreenXValues=ArrayOfInt(Int=[0, 200, 399]), ScreenYValues=ArrayOfInt(Int=[0, 150, 299]))
    back = svc.FromMapPoints(MapDescription=extent_md, MapImageDisplay=display, MapPoints=pts)
    return {'scale': svc.ComputeScale(MapDescription=extent_md, MapImageDisplay=display),
            'points': [(p.X, p.Y) for p in pts.PointArray.Point], 'x': back.ScreenXValues, 'y': back.ScreenYValues,
            'distance': svc.ComputeDistance(MapName='Layers', FromPoint=PointN(X=RECT[0], Y=RECT[1]), ToPoint=PointN(X=RECT[2], Y=RECT[1]), Units='geoKilometers')}


@scenario('legend')
def _():
    patch = T('MapServerLegendPatch')(Width=20, Height=14, ImageDPI=96)
    a = svc.GetLegendInfo(MapName='Layers', LayerIDs=ArrayOfInt(Int=[]), LegendPatch=patch, ImageType=png_mime)
    b = svc.GetLegendInfo2(MapDescription=extent_md, MapImageDisplay=display, LayerIDs=ArrayOfInt(Int=[2]), LegendPatch=patch, ImageType=png_mime)
    return {'one': a, 'two': b}


@scenario('sqlAndTypes')
def _():
    return {'sql': svc.GetSQLSyntaxInfo(MapName='Layers', LayerID=2), 'returnTypes': svc.GetSupportedImageReturnTypes()}


@scenario('cache')
def _():
    tci = svc.GetTileCacheInfo(MapName='Layers')
    tile = svc.GetMapTile(MapName='Layers', Level=0, Row=0, Column=0)
    vdir = svc.GetVirtualCacheDirectory(MapName='Layers', LayerID=-1)
    fetched = session.get(vdir.rstrip('/') + '/L00/R00000000/C00000000.png', timeout=30)
    return {'fixed': svc.IsFixedScaleMap(MapName='Layers'), 'fused': svc.HasSingleFusedMapCache(MapName='Layers'),
            'tileCacheInfo': tci, 'tile': tile, 'layerCache': svc.HasLayerCache(MapName='Layers', LayerID=3),
            'layerTile': svc.GetLayerTile(MapName='Layers', LayerID=3, Level=0, Row=0, Column=0),
            'virtualDir': vdir, 'virtualTileStatus': fetched.status_code, 'virtualTile': fetched.content,
            'cacheName': svc.GetCacheName(MapName='Layers', LayerID=-1), 'imageInfo': svc.GetTileImageInfo(MapName='Layers'),
            'control': svc.GetCacheControlInfo(MapName='Layers'), 'description': svc.GetCacheDescriptionInfo(MapName='Layers'),
            'storage': svc.GetCacheStorageInfo(MapName='Layers')}


@scenario('tileNotFound')
def _():
    return svc.GetMapTile(MapName='Layers', Level=0, Row=99, Column=99)


@scenario('rasterValue')
def _():
    return {'one': svc.QueryRasterValue(MapName='Layers', SourceTableID=3, RowIDs=ArrayOfInt(Int=[1]), ImageType=png_mime),
            'two': svc.QueryRasterValue2(MapName='Layers', MapTableDescription=layer_desc(3), RowIDs=ArrayOfInt(Int=[1]), ImageType=png_mime)}


@scenario('attachments')
def _():
    infos = svc.QueryAttachmentInfos(MapName='Layers', TableID=2, RowIDs=ArrayOfInt(Int=[1, 3]))
    ids = [a.AttachmentID for a in (infos.AttachmentInfo if hasattr(infos, 'AttachmentInfo') else infos)]
    return {'infos': infos, 'infos2': svc.QueryAttachmentInfos2(MapName='Layers', MapTableDescription=layer_desc(2), RowIDs=ArrayOfInt(Int=[1])),
            'data': svc.QueryAttachmentData(MapName='Layers', TableID=2, AttachmentIDs=ArrayOfInt(Int=ids), TransportType='geoTransportTypeEmbedded'),
            'data2': svc.QueryAttachmentData2(MapName='Layers', MapTableDescription=layer_desc(2), AttachmentIDs=ArrayOfInt(Int=ids[:1]), TransportType='geoTransportTypeUrl')}


@scenario('popups')
def _():
    return {'one': svc.QueryHTMLPopups(MapName='Layers', TableID=2, RowIDs=ArrayOfInt(Int=[1, 2])),
            'two': svc.QueryHTMLPopups2(MapName='Layers', MapTableDescription=table_desc, RowIDs=ArrayOfInt(Int=[1]))}


@scenario('drawing')
def _():
    opts = T('ServerSymbolOutputOptions')(PictureOutputType='geoServerPictureOutputAsPNG', ConvertLabelExpressions=True)
    return {'drawing': svc.GetDefaultLayerDrawingDescriptions(MapName='Layers', LayerIDs=ArrayOfInt(Int=[0, 1, 2, 3]), SymbolOutputOptions=opts),
            'subtypes': svc.GetMapTableSubtypeInfos(MapName='Layers', TableIDs=ArrayOfInt(Int=[2])),
            'subtypes2': svc.GetMapTableSubtypeInfos2(MapName='Layers', LayerDescriptions={'LayerDescription': [layer_desc(2)]})}


@scenario('classes')
def _():
    d = T('ClassBreaksDef')(ClassificationField='AREA', ClassificationMethod='geoClassifyNaturalBreaks', BreakCount=4)
    u = T('UniqueValuesDef')(Fields={'String': ['CLASS']})
    return {'breaks': svc.GenerateDataClasses(MapName='Layers', MapTableDescription=layer_desc(2), DataClassificationDef=d),
            'unique': svc.GenerateDataClasses(MapName='Layers', MapTableDescription=layer_desc(2), DataClassificationDef=u)}


json.dump(results, sys.stdout, default=str)

/**
 * Real SOAP clients against the generated WSDL and the codec, both directions: zeep (system
 * python, strict mode) and node-soap call operations on a loopback server that decodes their
 * requests with `decodeRequest` and answers with `encodeResponseEnvelope`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleValue } from '../../../test/soap-samples.js';
import { decodeRequest, encodeResponse, encodeResponseEnvelope } from './codec.js';
import { GEO_SOAP_NS, parseEnvelope, SOAP_CONTENT_TYPE } from './envelope.js';
import { soapFault } from './faults.js';
import type { SoapArgs, SoapResult } from './operation.js';
import { allFields, COMPLEX_TYPES, complexType } from './schema.js';
import { OPERATION_SIGNATURES, operationSignature } from './signatures.js';
import { wsdlDocument } from './wsdl.js';

const PYTHON = '/usr/bin/python3';
const zeepAvailable = ((): boolean => {
  try {
    execFileSync(PYTHON, ['-c', 'import zeep'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!zeepAvailable) console.warn(`SKIPPED: zeep tests — '${PYTHON} -c "import zeep"' failed (install python3-zeep).`);

const SR_3857 = { $type: 'ProjectedCoordinateSystem', WKID: 3857, LatestWKID: 3857 };
const EXTENT = { $type: 'EnvelopeN', XMin: -8240000, YMin: 4960000, XMax: -8225000, YMax: 4970000, SpatialReference: SR_3857 };
const PNG = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 0, 255]);

/** The canned answers of the loopback server, by operation. */
const RESULTS: Readonly<Record<string, SoapResult>> = {
  GetMapCount: { Result: 1 },
  GetDefaultMapName: { Result: 'Layers & more' },
  ComputeScale: { Result: 94488.18897637795 },
  GetMapTile: { Result: PNG },
  IsFixedScaleMap: { Result: true },
  GetSupportedImageReturnTypes: { Result: 'geoImageReturnMimeData' },
  GetDocumentInfo: {
    Result: {
      PropertyArray: [
        { Key: 'Title', Value: 'Olinda' },
        { Key: 'Count', Value: 7 },
        { Key: 'Ratio', Value: 0.25 },
        { Key: 'Flag', Value: false },
        { Key: 'Empty', Value: null },
        { Key: 'When', Value: new Date(Date.UTC(2024, 4, 1, 12, 30)) },
      ],
    },
  },
  GetServerInfo: {
    Result: {
      Name: 'Layers',
      Description: 'Olinda relief and land cover',
      FullExtent: EXTENT,
      Extent: EXTENT,
      SpatialReference: SR_3857,
      MapLayerInfos: [
        {
          $type: 'MapLayerInfo',
          LayerID: 0,
          Name: 'Relief',
          Description: '',
          LayerType: 'Raster Layer',
          SourceDescription: '',
          HasLabels: false,
          CanSelect: false,
          CanScaleSymbols: false,
          MinScale: 0,
          MaxScale: 0,
          Extent: EXTENT,
          HasHyperlinks: false,
          HasAttributes: false,
          CanIdentify: true,
          CanFind: false,
          IsFeatureLayer: false,
          DisplayField: '',
          IDField: '',
          IsComposite: false,
          ParentLayerID: -1,
          CopyrightText: '',
          Fields: {
            FieldArray: [
              { Name: 'Pixel Value', Type: 'geoFieldTypeDouble', IsNullable: true, Length: 8, Precision: 0, Scale: 0, DefaultValue: 0.5 },
            ],
          },
        },
      ],
      BackgroundColor: { $type: 'RgbColor', Red: 255, Green: 255, Blue: 254, AlphaValue: 255 },
      Units: 'geoMeters',
      SupportedImageReturnTypes: 'geoImageReturnMimeData',
      CopyrightText: '',
      SupportsDynamicLayers: false,
    },
  },
  ToMapPoints: {
    Result: {
      $type: 'MultipointN',
      HasID: false,
      HasZ: false,
      HasM: false,
      PointArray: [
        { $type: 'PointN', X: 1.5, Y: -2 },
        { $type: 'PointN', X: 3, Y: 4 },
      ],
    },
  },
  FromMapPoints: { ScreenXValues: [10, 20], ScreenYValues: [30, -40] },
  Identify: {
    Result: [
      {
        LayerID: 1,
        Name: 'Landcover',
        Properties: {
          PropertyArray: [
            { Key: 'OBJECTID', Value: 12 },
            { Key: 'class', Value: 'forest' },
          ],
        },
        Shape: {
          $type: 'PolygonN',
          HasID: false,
          HasZ: false,
          HasM: false,
          RingArray: [
            {
              $type: 'Ring',
              PointArray: [
                { $type: 'PointN', X: 0, Y: 0 },
                { $type: 'PointN', X: 10, Y: 0 },
                { $type: 'PointN', X: 0, Y: 10 },
                { $type: 'PointN', X: 0, Y: 0 },
              ],
            },
          ],
          SpatialReference: SR_3857,
        },
        FeatureID: 12,
      },
    ],
  },
  QueryFeatureData: {
    Result: {
      Fields: {
        FieldArray: [
          { Name: 'OBJECTID', Type: 'geoFieldTypeOID', IsNullable: false, Length: 4, Precision: 0, Scale: 0 },
          { Name: 'name', Type: 'geoFieldTypeString', IsNullable: true, Length: 50, Precision: 0, Scale: 0 },
          { Name: 'area', Type: 'geoFieldTypeDouble', IsNullable: true, Length: 8, Precision: 0, Scale: 0 },
          { Name: 'when', Type: 'geoFieldTypeDate', IsNullable: true, Length: 8, Precision: 0, Scale: 0 },
          { Name: 'Shape', Type: 'geoFieldTypeGeometry', IsNullable: true, Length: 0, Precision: 0, Scale: 0 },
        ],
      },
      Records: [
        { Values: [1, 'Olinda', 12.5, new Date(Date.UTC(2020, 0, 2)), { $type: 'PointN', X: 5, Y: 6 }] },
        { Values: [2, null, { $xs: 'double', value: 3 }, null, null] },
      ],
    },
  },
  GetCacheDescriptionInfo: {
    Result: {
      TileCacheInfo: {
        SpatialReference: SR_3857,
        TileOrigin: { $type: 'PointN', X: -20037508.342787, Y: 20037508.342787 },
        TileCols: 256,
        TileRows: 256,
        DPI: 96,
        LODInfos: [
          { LevelID: 0, Scale: 591657527.591555, Resolution: 156543.033928 },
          { LevelID: 1, Scale: 295828763.7957775, Resolution: 78271.516964 },
        ],
      },
      TileImageInfo: { CacheTileFormat: 'PNG', CompressionQuality: 0, Antialiasing: 'NONE' },
      LayerCacheInfos: [
        { LayerID: 0, HasCache: true },
        { LayerID: 1, HasCache: false },
      ],
      CacheControlInfo: { ClientCachingAllowed: true },
      ServiceType: 'geoSingleFusedMapCache',
    },
  },
  GenerateDataClasses: {
    Result: {
      $type: 'ClassBreaksRenderer',
      Field: 'area',
      MinimumValue: 0,
      ClassBreakInfos: [
        {
          ClassMaximumValue: 10,
          Label: '0 - 10',
          Symbol: {
            $type: 'SimpleFillSymbol',
            Color: { $type: 'RgbColor', Red: 10, Green: 20, Blue: 30 },
            Outline: {
              $type: 'SimpleLineSymbol',
              Color: { $type: 'RgbColor', Red: 0, Green: 0, Blue: 0 },
              Width: 0.4,
              Style: 'geoSLSSolid',
            },
            Style: 'geoSFSSolid',
          },
          ClassMinimumValue: 0,
        },
      ],
    },
  },
  ExportMapImage: {
    Result: {
      ImageData: PNG,
      ImageURL: '',
      Extent: EXTENT,
      VisibleLayerIDs: [0, 1],
      MapScale: 94488.19,
      ImageHeight: 400,
      ImageWidth: 600,
      ImageDPI: 96,
      ImageType: 'image/png',
    },
  },
  QueryFeatureCount: { Result: 42 },
  QueryFeatureData2: { Result: { URL: '', MimeData: new TextEncoder().encode('{"features":[]}') } },
};

let server: Server;
let endpoint = '';
let dir = '';
let wsdlPath = '';
/** Decoded requests the server received, in order. */
const received: { op: string; args: SoapArgs }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const parsed = parseEnvelope(new Uint8Array(Buffer.concat(chunks)), req.headers['content-type'] ?? null);
        const signature = operationSignature(parsed.operation);
        if (signature === undefined) throw new Error(`unknown operation ${parsed.operation}`);
        const args = decodeRequest(signature, parsed.request);
        received.push({ op: parsed.operation, args });
        const result = RESULTS[parsed.operation];
        if (result === undefined) throw new Error(`no canned result for ${parsed.operation}`);
        res.writeHead(200, { 'content-type': SOAP_CONTENT_TYPE });
        res.end(encodeResponseEnvelope(signature, result));
      } catch (e) {
        const fault = soapFault(e);
        res.writeHead(fault.status, { 'content-type': SOAP_CONTENT_TYPE });
        res.end(fault.body);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/server/services/olinda/MapServer`;
  dir = mkdtempSync(join(tmpdir(), 'soap-clients-'));
  wsdlPath = join(dir, 'MapServer.wsdl');
  // The WSDL names an unreachable address: the clients are pointed at the loopback server explicitly.
  writeFileSync(
    wsdlPath,
    wsdlDocument({ serviceName: 'olinda', endpoint: 'http://192.0.2.1/unreachable', operations: OPERATION_SIGNATURES }),
  );
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The zeep side: builds requests, calls the operations and prints what it parsed as JSON. */
const ZEEP_SCRIPT = String.raw`
import sys, json, base64, datetime, decimal
import zeep
from zeep import Settings
from zeep.xsd.valueobjects import CompoundValue
from zeep.xsd import AnyObject
from lxml import etree

wsdl, address = sys.argv[1], sys.argv[2]
client = zeep.Client(wsdl, settings=Settings(strict=True))
service = client.create_service('{http://www.geo.example/schemas/Geo/3.5.0}MapServerBinding', address)
T = lambda n: client.get_type('ns0:' + n)
XS = lambda n: client.get_type('{http://www.w3.org/2001/XMLSchema}' + n)

def ser(v):
    if isinstance(v, CompoundValue):
        d = {'$type': v._xsd_type.name}
        for k in v:
            if v[k] is not None:
                d[k] = ser(v[k])
        return d
    if isinstance(v, AnyObject):
        return {'$any': v.xsd_type.name, 'value': ser(v.value)}
    if isinstance(v, (list, tuple)):
        return [ser(x) for x in v]
    if isinstance(v, bytes):
        return {'$bytes': base64.b64encode(v).decode()}
    if isinstance(v, datetime.datetime):
        return {'$dateTime': v.isoformat()}
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, float) and (v != v or v in (float('inf'), float('-inf'))):
        return {'$double': repr(v)}
    return v

out = {}
def call(label, op, **kw):
    out[label] = ser(getattr(service, op)(**kw))

env = T('EnvelopeN')(XMin=-8240000, YMin=4960000, XMax=-8225000, YMax=4970000, SpatialReference=T('ProjectedCoordinateSystem')(WKID=3857))
ld = T('LayerDescription')(LayerID=0, Visible=True, ShowLabels=False, ScaleSymbols=False, SetSelectionSymbol=False,
    SelectionBufferDistance=0, ShowSelectionBuffer=False, DefinitionExpression='POP > 5 & x < 3', SelectionFeatures={'Int': [4, 5]})
md = T('MapDescription')(Name='Layers', MapArea=T('MapExtent')(Extent=env), LayerDescriptions={'LayerDescription': [ld]}, Rotation=12.5,
    TransparentColor=T('RgbColor')(Red=1, Green=2, Blue=3, AlphaValue=0),
    TimeValue=T('TimeExtent')(StartTime=datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc), EndTime=datetime.datetime(2024, 5, 2, 0, 0, tzinfo=datetime.timezone.utc)))
display = T('ImageDisplay')(ImageHeight=400, ImageWidth=600, ImageDPI=96)
idesc = T('ImageDescription')(ImageType=T('ImageType')(ImageFormat='geoImagePNG32', ImageReturnType='geoImageReturnMimeData'), ImageDisplay=display)
ring = T('Ring')(PointArray={'Point': [T('PointN')(X=0, Y=0), T('PointN')(X=10, Y=0), T('PointN')(X=0, Y=10), T('PointN')(X=0, Y=0)]})
polygon = T('PolygonN')(HasID=False, HasZ=False, HasM=False, RingArray={'Ring': [ring]})

# Requests built without sending them (create_message), for the decoder.
out['message:ExportMapImage'] = etree.tostring(client.create_message(service, 'ExportMapImage', MapDescription=md, ImageDescription=idesc)).decode()

call('GetMapCount', 'GetMapCount')
call('GetDefaultMapName', 'GetDefaultMapName')
call('ComputeScale', 'ComputeScale', MapDescription=md, MapImageDisplay=display)
call('GetMapTile', 'GetMapTile', MapName='Layers', Level=3, Row=2, Column=1)
call('IsFixedScaleMap', 'IsFixedScaleMap', MapName='Layers')
call('GetSupportedImageReturnTypes', 'GetSupportedImageReturnTypes')
call('GetDocumentInfo', 'GetDocumentInfo')
call('GetServerInfo', 'GetServerInfo', MapName='Layers')
call('ToMapPoints', 'ToMapPoints', MapDescription=md, MapImageDisplay=display, ScreenXValues={'Int': [1, 2]}, ScreenYValues={'Int': [3, 4]})
mp = T('MultipointN')(HasID=False, HasZ=False, HasM=False, PointArray={'Point': [T('PointN')(X=-8230000.5, Y=4965000)]})
fm = service.FromMapPoints(MapDescription=md, MapImageDisplay=display, MapPoints=mp)
out['FromMapPoints'] = {'ScreenXValues': ser(fm.ScreenXValues), 'ScreenYValues': ser(fm.ScreenYValues)}
call('Identify', 'Identify', MapDescription=md, MapImageDisplay=display, SearchShape=polygon, Tolerance=3,
    IdentifyOption='geoIdentifyAllLayers', LayerIDs={'Int': [0, 1]})
spatial = T('SpatialFilter')(WhereClause="name LIKE 'O%'", Resolution=0, SearchOrder='geoSearchOrderSpatial', SpatialRel='geoSpatialRelIntersects',
    SpatialRelDescription='', FilterGeometry=env, GeometryFieldName='Shape', FilterOwnsGeometry=False, SubFields='OBJECTID,name')
call('QueryFeatureData', 'QueryFeatureData', MapName='Layers', LayerID=1, QueryFilter=spatial)
out['message:Identify'] = etree.tostring(client.create_message(service, 'Identify', MapDescription=md, MapImageDisplay=display, SearchShape=polygon,
    Tolerance=0, IdentifyOption='geoIdentifyVisibleLayers', LayerIDs={'Int': []})).decode()
out['message:QueryFeatureData'] = etree.tostring(client.create_message(service, 'QueryFeatureData', MapName='Layers', LayerID=7, QueryFilter=spatial)).decode()
call('GetCacheDescriptionInfo', 'GetCacheDescriptionInfo', MapName='Layers')
table = T('StandaloneTableDescription')(ID=2, DefinitionExpression='')
cbdef = T('ClassBreaksDef')(ClassificationField='area', ClassificationMethod='geoClassifyNaturalBreaks', BreakCount=5)
call('GenerateDataClasses', 'GenerateDataClasses', MapName='Layers', MapTableDescription=table, DataClassificationDef=cbdef)
props = T('PropertySet')(PropertyArray={'PropertySetProperty': [
    T('PropertySetProperty')(Key='n', Value=AnyObject(XS('int'), 5)),
    T('PropertySetProperty')(Key='s', Value=AnyObject(XS('string'), 'five')),
    T('PropertySetProperty')(Key='b', Value=AnyObject(XS('boolean'), True))]})
call('QueryFeatureData2', 'QueryFeatureData2', MapName='Layers', LayerDescription=ld, QueryFilter=T('QueryFilter')(WhereClause='1=1', Resolution=0),
    QueryResultOptions=T('QueryResultOptions')(Format='geoQueryResultJsonAsMime', FormatProperties=props))
call('ExportMapImage', 'ExportMapImage', MapDescription=md, ImageDescription=idesc)
print(json.dumps(out))
`;

type Json = Record<string, unknown>;
const b64 = (bytes: Uint8Array): Json => ({ $bytes: Buffer.from(bytes).toString('base64') });

/** The decoded request `op` received (the last one). */
const argsOf = (op: string): SoapArgs => {
  const r = received.filter((x) => x.op === op).at(-1);
  if (r === undefined) throw new Error(`${op} was not received`);
  return r.args;
};

const EXPECTED_MAP_DESCRIPTION = {
  $type: 'MapDescription',
  Name: 'Layers',
  MapArea: {
    $type: 'MapExtent',
    Extent: {
      $type: 'EnvelopeN',
      XMin: -8240000,
      YMin: 4960000,
      XMax: -8225000,
      YMax: 4970000,
      SpatialReference: { $type: 'ProjectedCoordinateSystem', WKID: 3857 },
    },
  },
  LayerDescriptions: [
    {
      $type: 'LayerDescription',
      LayerID: 0,
      Visible: true,
      ShowLabels: false,
      ScaleSymbols: false,
      SelectionFeatures: [4, 5],
      SetSelectionSymbol: false,
      SelectionBufferDistance: 0,
      ShowSelectionBuffer: false,
      DefinitionExpression: 'POP > 5 & x < 3',
    },
  ],
  Rotation: 12.5,
  TransparentColor: { $type: 'RgbColor', AlphaValue: 0, Red: 1, Green: 2, Blue: 3 },
  TimeValue: { $type: 'TimeExtent', StartTime: new Date(Date.UTC(2024, 4, 1, 12)), EndTime: new Date(Date.UTC(2024, 4, 2)) },
};

describe.skipIf(!zeepAvailable)('zeep 4.2.1 (strict) against the generated WSDL', () => {
  let out: Json = {};
  beforeAll(async () => {
    const script = join(dir, 'zeep_client.py');
    writeFileSync(script, ZEEP_SCRIPT);
    const { stdout } = await promisify(execFile)(PYTHON, [script, wsdlPath, endpoint], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
    out = JSON.parse(stdout) as Json;
  }, 90_000);

  it('builds requests the decoder reads into the expected values', () => {
    const message = out['message:ExportMapImage'] as string;
    const parsed = parseEnvelope(message, null);
    expect(parsed.operation).toBe('ExportMapImage');
    const args = decodeRequest(operationSignature('ExportMapImage')!, parsed.request);
    expect(args['MapDescription']).toEqual(EXPECTED_MAP_DESCRIPTION);
    expect(args['ImageDescription']).toEqual({
      $type: 'ImageDescription',
      ImageType: { $type: 'ImageType', ImageFormat: 'geoImagePNG32', ImageReturnType: 'geoImageReturnMimeData' },
      ImageDisplay: { $type: 'ImageDisplay', ImageHeight: 400, ImageWidth: 600, ImageDPI: 96 },
    });
  });

  it('builds Identify and QueryFeatureData requests the decoder reads', () => {
    const identify = parseEnvelope(out['message:Identify'] as string, null);
    const args = decodeRequest(operationSignature(identify.operation)!, identify.request);
    expect(args['MapDescription']).toEqual(EXPECTED_MAP_DESCRIPTION);
    expect(args['MapImageDisplay']).toEqual({ $type: 'ImageDisplay', ImageHeight: 400, ImageWidth: 600, ImageDPI: 96 });
    expect(args).toMatchObject({ Tolerance: 0, IdentifyOption: 'geoIdentifyVisibleLayers', LayerIDs: [] });
    expect((args['SearchShape'] as Json)['$type']).toBe('PolygonN');
    const query = parseEnvelope(out['message:QueryFeatureData'] as string, null);
    const qargs = decodeRequest(operationSignature(query.operation)!, query.request);
    expect(qargs).toMatchObject({
      MapName: 'Layers',
      LayerID: 7,
      QueryFilter: { $type: 'SpatialFilter', SpatialRel: 'geoSpatialRelIntersects' },
    });
    expect((qargs['QueryFilter'] as Json)['FilterGeometry']).toEqual(EXPECTED_MAP_DESCRIPTION.MapArea.Extent);
  });

  it('sends requests the server decodes: polymorphic geometry, derived filters, enums, arrays, anyType', () => {
    expect(argsOf('ExportMapImage')['MapDescription']).toEqual(EXPECTED_MAP_DESCRIPTION);
    expect(argsOf('GetMapTile')).toEqual({ MapName: 'Layers', Level: 3, Row: 2, Column: 1 });
    expect(argsOf('ToMapPoints')).toMatchObject({ ScreenXValues: [1, 2], ScreenYValues: [3, 4] });
    expect(argsOf('FromMapPoints')['MapPoints']).toEqual({
      $type: 'MultipointN',
      HasID: false,
      HasZ: false,
      HasM: false,
      PointArray: [{ $type: 'PointN', X: -8230000.5, Y: 4965000 }],
    });
    const identify = argsOf('Identify');
    expect(identify['SearchShape']).toMatchObject({
      $type: 'PolygonN',
      RingArray: [{ $type: 'Ring', PointArray: [{ $type: 'PointN', X: 0, Y: 0 }, {}, {}, {}] }],
    });
    expect(identify).toMatchObject({ Tolerance: 3, IdentifyOption: 'geoIdentifyAllLayers', LayerIDs: [0, 1] });
    expect(argsOf('QueryFeatureData')['QueryFilter']).toEqual({
      $type: 'SpatialFilter',
      SubFields: 'OBJECTID,name',
      WhereClause: "name LIKE 'O%'",
      Resolution: 0,
      SearchOrder: 'geoSearchOrderSpatial',
      SpatialRel: 'geoSpatialRelIntersects',
      SpatialRelDescription: '',
      FilterGeometry: EXPECTED_MAP_DESCRIPTION.MapArea.Extent,
      GeometryFieldName: 'Shape',
      FilterOwnsGeometry: false,
    });
    expect(argsOf('GenerateDataClasses')).toEqual({
      MapName: 'Layers',
      MapTableDescription: { $type: 'StandaloneTableDescription', ID: 2, DefinitionExpression: '' },
      DataClassificationDef: {
        $type: 'ClassBreaksDef',
        ClassificationField: 'area',
        ClassificationMethod: 'geoClassifyNaturalBreaks',
        BreakCount: 5,
      },
    });
    expect((argsOf('QueryFeatureData2')['QueryResultOptions'] as Json)['FormatProperties']).toEqual({
      $type: 'PropertySet',
      PropertyArray: [
        { $type: 'PropertySetProperty', Key: 'n', Value: 5 },
        { $type: 'PropertySetProperty', Key: 's', Value: 'five' },
        { $type: 'PropertySetProperty', Key: 'b', Value: true },
      ],
    });
  });

  it('parses scalar answers: int, string, double, boolean, enumeration, base64', () => {
    expect(out['GetMapCount']).toBe(1);
    expect(out['GetDefaultMapName']).toBe('Layers & more');
    expect(out['ComputeScale']).toBe(94488.18897637795);
    expect(out['GetMapTile']).toEqual(b64(PNG));
    expect(out['IsFixedScaleMap']).toBe(true);
    expect(out['GetSupportedImageReturnTypes']).toBe('geoImageReturnMimeData');
  });

  it('parses nested MapServerInfo-like answers with polymorphic members', () => {
    const info = out['GetServerInfo'] as Json;
    expect(info['$type']).toBe('MapServerInfo');
    expect(info['Name']).toBe('Layers');
    expect(info['FullExtent']).toEqual({
      $type: 'EnvelopeN',
      XMin: -8240000,
      YMin: 4960000,
      XMax: -8225000,
      YMax: 4970000,
      SpatialReference: { $type: 'ProjectedCoordinateSystem', WKID: 3857, LatestWKID: 3857 },
    });
    expect(info['BackgroundColor']).toEqual({ $type: 'RgbColor', AlphaValue: 255, Red: 255, Green: 255, Blue: 254 });
    expect(info['Units']).toBe('geoMeters');
    expect(info['SupportsDynamicLayers']).toBe(false);
    const layers = (info['MapLayerInfos'] as Json)['MapLayerInfo'] as Json[];
    expect(layers).toHaveLength(1);
    expect(layers[0]).toMatchObject({ $type: 'MapLayerInfo', LayerID: 0, Name: 'Relief', CanIdentify: true, ParentLayerID: -1 });
    const field = (((layers[0]!['Fields'] as Json)['FieldArray'] as Json)['Field'] as Json[])[0];
    expect(field).toMatchObject({ Name: 'Pixel Value', Type: 'geoFieldTypeDouble', DefaultValue: 0.5 });
    const cache = out['GetCacheDescriptionInfo'] as Json;
    expect(((cache['LayerCacheInfos'] as Json)['LayerCacheInfo'] as Json[]).map((l) => l['HasCache'])).toEqual([true, false]);
    expect((cache['TileCacheInfo'] as Json)['TileOrigin']).toEqual({ $type: 'PointN', X: -20037508.342787, Y: 20037508.342787 });
    expect(((cache['TileCacheInfo'] as Json)['LODInfos'] as Json)['LODInfo']).toHaveLength(2);
    expect(out['GenerateDataClasses']).toMatchObject({
      $type: 'ClassBreaksRenderer',
      Field: 'area',
      ClassBreakInfos: {
        ClassBreakInfo: [
          {
            ClassMaximumValue: 10,
            Symbol: {
              $type: 'SimpleFillSymbol',
              Color: { $type: 'RgbColor', Red: 10 },
              Outline: { $type: 'SimpleLineSymbol', Width: 0.4, Style: 'geoSLSSolid' },
              Style: 'geoSFSSolid',
            },
          },
        ],
      },
    });
  });

  it('parses arrays, polymorphic geometry and FromMapPoints', () => {
    expect(out['ToMapPoints']).toEqual({
      $type: 'MultipointN',
      HasID: false,
      HasZ: false,
      HasM: false,
      PointArray: {
        $type: 'ArrayOfPoint',
        Point: [
          { $type: 'PointN', X: 1.5, Y: -2 },
          { $type: 'PointN', X: 3, Y: 4 },
        ],
      },
    });
    expect(out['FromMapPoints']).toEqual({
      ScreenXValues: { $type: 'ArrayOfInt', Int: [10, 20] },
      ScreenYValues: { $type: 'ArrayOfInt', Int: [30, -40] },
    });
    const identify = (out['Identify'] as Json[])[0] as Json;
    expect(identify).toMatchObject({ LayerID: 1, Name: 'Landcover', FeatureID: 12 });
    const shape = identify['Shape'] as Json;
    expect(shape['$type']).toBe('PolygonN');
    const ring = ((shape['RingArray'] as Json)['Ring'] as Json[])[0] as Json;
    expect(ring['$type']).toBe('Ring');
    expect(((ring['PointArray'] as Json)['Point'] as Json[]).map((p) => [p['X'], p['Y']])).toEqual([
      [0, 0],
      [10, 0],
      [0, 10],
      [0, 0],
    ]);
  });

  it('parses anyType values with their types, nil as None', () => {
    // zeep flattens a type whose only element is an array: PropertySet reads as its ArrayOfPropertySetProperty.
    expect((out['GetDocumentInfo'] as Json)['$type']).toBe('ArrayOfPropertySetProperty');
    const props = (out['GetDocumentInfo'] as Json)['PropertySetProperty'] as Json[];
    expect(props.map((p) => [p['Key'], p['Value']])).toEqual([
      ['Title', 'Olinda'],
      ['Count', 7],
      ['Ratio', 0.25],
      ['Flag', false],
      ['Empty', undefined],
      ['When', { $dateTime: '2024-05-01T12:30:00+00:00' }],
    ]);
    const records = ((out['QueryFeatureData'] as Json)['Records'] as Json)['Record'] as Json[];
    expect(((records[0]!['Values'] as Json)['Value'] as unknown[]).slice(0, 4)).toEqual([
      1,
      'Olinda',
      12.5,
      { $dateTime: '2020-01-02T00:00:00+00:00' },
    ]);
    expect(((records[0]!['Values'] as Json)['Value'] as unknown[])[4]).toEqual({ $type: 'PointN', X: 5, Y: 6 });
    expect((records[1]!['Values'] as Json)['Value']).toEqual([2, null, 3, null, null]);
    // The empty required URL and Object of a MIME answer read as None (left out here).
    expect(out['QueryFeatureData2']).toEqual({ $type: 'QueryResult', MimeData: b64(new TextEncoder().encode('{"features":[]}')) });
    expect(out['ExportMapImage']).toMatchObject({ $type: 'MapImage', ImageData: b64(PNG), MapScale: 94488.19, ImageType: 'image/png' });
  });
});

/** zeep parses one element per complex type, written by the encoder, against its most general declared type. */
const ZEEP_PARSE_SCRIPT = String.raw`
import sys, json
import zeep
from zeep import Settings, xsd
from lxml import etree
client = zeep.Client(sys.argv[1], settings=Settings(strict=True))
cases = json.load(open(sys.argv[2]))
parsed, errors = {}, {}
for c in cases:
    try:
        v = xsd.Element('V', client.get_type('ns0:' + c['declared'])).parse(etree.fromstring(c['xml']), client.wsdl.types)
        parsed[c['type']] = v._xsd_type.name if hasattr(v, '_xsd_type') else type(v).__name__
    except Exception as e:
        errors[c['type']] = '%s: %s' % (type(e).__name__, e)
print(json.dumps({'parsed': parsed, 'errors': errors}))
`;

describe.skipIf(!zeepAvailable)('zeep (strict) parses every complex type the encoder writes', () => {
  it('reads each type in schema order with its xsi:type, declared as its most general base', async () => {
    const root = (t: string): string => {
      let r = t;
      for (let b = complexType(r)?.base; b !== undefined; b = complexType(b)?.base) r = b;
      return r;
    };
    const ns = `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:tns="${GEO_SOAP_NS}"`;
    const cases = COMPLEX_TYPES.filter((c) => !c.abstract && !c.name.startsWith('ArrayOf')).map((c) => {
      const declared = root(c.name);
      const signature = { name: 'Probe', request: [], response: [{ name: 'V', type: declared }] };
      const xml = encodeResponse(signature, { V: sampleValue(c.name) }).xml.replace(/^<V /, `<V ${ns} `);
      return { type: c.name, declared, xml };
    });
    const casesPath = join(dir, 'cases.json');
    const script = join(dir, 'zeep_parse.py');
    writeFileSync(casesPath, JSON.stringify(cases));
    writeFileSync(script, ZEEP_PARSE_SCRIPT);
    const { stdout } = await promisify(execFile)(PYTHON, [script, wsdlPath, casesPath], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
    const { parsed, errors } = JSON.parse(stdout) as { parsed: Record<string, string>; errors: Record<string, string> };
    expect(errors).toEqual({});
    expect(Object.keys(parsed)).toHaveLength(cases.length);
    // A type without elements (Geometry itself) has no content: zeep reads it as None.
    for (const c of cases) expect(parsed[c.type], c.type).toBe(allFields(c.type).length === 0 ? 'NoneType' : c.type);
  }, 90_000);
});

describe('node-soap 1.13 against the generated WSDL', () => {
  // node-soap is CommonJS; its client methods are added at runtime from the WSDL.
  type Call = (args: Json) => Promise<[Json, string]>;
  let client: Record<string, Call> = {};
  beforeAll(async () => {
    const soap = await import('soap');
    client = (await soap.createClientAsync(wsdlPath, { endpoint })) as unknown as Record<string, Call>;
  });

  it('reads int, string and base64 answers and sends simple requests', async () => {
    const [count] = await client['GetMapCountAsync']!({});
    expect(count['Result']).toBe(1);
    const [name] = await client['GetDefaultMapNameAsync']!({});
    expect(name['Result']).toBe('Layers & more');
    const [tile] = await client['GetMapTileAsync']!({ MapName: 'Layers', Level: 0, Row: 5, Column: 6, Format: 'png' });
    expect(Buffer.from(tile['Result'] as string, 'base64')).toEqual(Buffer.from(PNG));
    expect(argsOf('GetMapTile')).toEqual({ MapName: 'Layers', Level: 0, Row: 5, Column: 6, Format: 'png' });
  });

  it('reads nested answers with typed numbers and booleans', async () => {
    const [info] = await client['GetServerInfoAsync']!({ MapName: 'Layers' });
    const result = info['Result'] as Json;
    expect(result['Name']).toBe('Layers');
    expect((result['FullExtent'] as Json)['XMin']).toBe(-8240000);
    const layer = (result['MapLayerInfos'] as Json)['MapLayerInfo'] as Json[] | Json as Json[] | Json;
    const first = (Array.isArray(layer) ? layer[0] : layer) as Json;
    expect(first['LayerID']).toBe(0);
    expect(first['CanIdentify']).toBe(true);
    const [fm] = await client['FromMapPointsAsync']!({
      MapDescription: { Name: 'Layers', Rotation: 0 },
      MapImageDisplay: { ImageHeight: 10, ImageWidth: 20, ImageDPI: 96 },
      MapPoints: {
        attributes: { 'xsi:type': 'tns:MultipointN' },
        HasID: false,
        HasZ: false,
        HasM: false,
        PointArray: { Point: [{ attributes: { 'xsi:type': 'tns:PointN' }, X: 1, Y: 2 }] },
      },
    });
    expect((fm['ScreenXValues'] as Json)['Int']).toEqual([10, 20]);
    expect((fm['ScreenYValues'] as Json)['Int']).toEqual([30, -40]);
    // node-soap writes xsi:type with an undeclared `tns` prefix (§5.3 rule 3) and qualified children (rule 2).
    expect(argsOf('FromMapPoints')['MapPoints']).toEqual({
      $type: 'MultipointN',
      HasID: false,
      HasZ: false,
      HasM: false,
      PointArray: [{ $type: 'PointN', X: 1, Y: 2 }],
    });
    expect(argsOf('FromMapPoints')['MapDescription']).toEqual({ $type: 'MapDescription', Name: 'Layers', Rotation: 0 });
  });

  it('sends a QueryFilter the server reads with schema defaults and reads the count', async () => {
    const [count] = await client['QueryFeatureCountAsync']!({
      MapName: 'Layers',
      LayerID: 1,
      QueryFilter: { WhereClause: "class = 'forest'" },
    });
    expect(count['Result']).toBe(42);
    expect(argsOf('QueryFeatureCount')).toEqual({
      MapName: 'Layers',
      LayerID: 1,
      QueryFilter: { $type: 'QueryFilter', WhereClause: "class = 'forest'", Resolution: 0 },
    });
  });

  it('receives faults for requests the decoder refuses', async () => {
    await expect(client['GetMapTileAsync']!({ MapName: 'Layers', Level: 'x', Row: 0, Column: 0 })).rejects.toThrow(
      /soap:Client: Level must be a whole number/,
    );
  });
});

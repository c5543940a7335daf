import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import type { FieldInfo } from '../map/model.js';
import type { SoapObject } from './operation.js';
import { amf3, featureSetJson, kmlOf, queryResultOf, recordSetOf, type FeatureSetData } from './record-set.js';

const field = (name: string, type: FieldInfo['type'], extra: Partial<FieldInfo> = {}): FieldInfo => ({
  name,
  type,
  alias: name,
  length: 0,
  nullable: type !== 'geoFieldTypeOID',
  editable: true,
  ...extra,
});

const DATA: FeatureSetData = {
  name: 'Parcels & plots',
  displayField: 'NAME',
  objectIdField: 'OBJECTID',
  geometryType: 'polygon',
  spatialReference: { wkid: 32725 },
  fields: [
    field('OBJECTID', 'geoFieldTypeOID'),
    field('Shape', 'geoFieldTypeGeometry'),
    field('NAME', 'geoFieldTypeString', {
      length: 30,
      alias: 'Name',
      domain: { type: 'codedValue', name: 'Names', codedValues: [{ name: 'A', code: 'a' }] },
    }),
    field('CLASS', 'geoFieldTypeSmallInteger'),
    field('AREA', 'geoFieldTypeDouble', { domain: { type: 'range', name: 'Area', range: [0, 100] } }),
    field('SURVEYED', 'geoFieldTypeDate'),
  ],
  rows: [
    {
      id: 7,
      attributes: { OBJECTID: 7, NAME: 'a <b>', CLASS: 2, AREA: 12.5, SURVEYED: new Date(Date.UTC(2024, 0, 2)) },
      // RFC 7946 winding (outer counter-clockwise).
      geometry: {
        type: 'Polygon',
        coordinates: [
          [
            [295000, 9115000],
            [296000, 9115000],
            [296000, 9116000],
            [295000, 9116000],
            [295000, 9115000],
          ],
        ],
      },
    },
    { id: 9, attributes: { NAME: null, CLASS: 3, AREA: 4, SURVEYED: null }, geometry: null },
  ],
};

describe('RecordSet', () => {
  it('describes fields (GeometryDef on the shape field, domains, lengths) and types values per field', () => {
    const rs = recordSetOf(DATA);
    const fields = (rs['Fields'] as SoapObject)['FieldArray'] as SoapObject[];
    expect(fields.map((f) => [f['Name'], f['Type'], f['Length']])).toEqual([
      ['OBJECTID', 'geoFieldTypeOID', 4],
      ['Shape', 'geoFieldTypeGeometry', 0],
      ['NAME', 'geoFieldTypeString', 30],
      ['CLASS', 'geoFieldTypeSmallInteger', 2],
      ['AREA', 'geoFieldTypeDouble', 8],
      ['SURVEYED', 'geoFieldTypeDate', 8],
    ]);
    expect(fields[0]).toMatchObject({ $type: 'Field', IsNullable: false, Editable: false, Required: true, AliasName: 'OBJECTID' });
    expect(fields[1]!['GeometryDef']).toEqual({
      $type: 'GeometryDef',
      AvgNumPoints: 0,
      GeometryType: 'geoGeometryPolygon',
      HasM: false,
      HasZ: false,
      SpatialReference: { $type: 'ProjectedCoordinateSystem', WKID: 32725, LatestWKID: 32725 },
    });
    expect(fields[2]!['Domain']).toEqual({
      $type: 'CodedValueDomain',
      DomainName: 'Names',
      FieldType: 'geoFieldTypeString',
      MergePolicy: 'geoMPTDefaultValue',
      SplitPolicy: 'geoSPTDefaultValue',
      CodedValues: [{ $type: 'CodedValue', Name: 'A', Code: { $xs: 'string', value: 'a' } }],
    });
    expect(fields[4]!['Domain']).toMatchObject({
      $type: 'RangeDomain',
      MinValue: { $xs: 'double', value: 0 },
      MaxValue: { $xs: 'double', value: 100 },
    });
    const records = rs['Records'] as SoapObject[];
    const [v0, v1] = records.map((r) => r['Values'] as unknown[]);
    expect(v0![0]).toEqual({ $xs: 'int', value: 7 });
    expect((v0![1] as SoapObject).$type).toBe('PolygonN');
    expect(v0!.slice(2)).toEqual([
      { $xs: 'string', value: 'a <b>' },
      { $xs: 'short', value: 2 },
      { $xs: 'double', value: 12.5 },
      new Date(Date.UTC(2024, 0, 2)),
    ]);
    // The OID comes from the row id when the attributes leave it out; nulls stay null (xsi:nil).
    expect(v1).toEqual([{ $xs: 'int', value: 9 }, null, null, { $xs: 'short', value: 3 }, { $xs: 'double', value: 4 }, null]);
  });
});

describe('Esri JSON, KML and AMF3', () => {
  it('writes the REST feature set: esri type names, epoch-millisecond dates, clockwise outer rings', () => {
    const j = featureSetJson({ ...DATA, exceededTransferLimit: true }) as Record<string, unknown>;
    expect(j['geometryType']).toBe('esriGeometryPolygon');
    expect(j['spatialReference']).toEqual({ wkid: 32725, latestWkid: 32725 });
    expect(j['exceededTransferLimit']).toBe(true);
    expect(j['objectIdFieldName']).toBe('OBJECTID');
    expect((j['fields'] as { name: string; type: string }[]).map((f) => `${f.name}:${f.type}`)).toEqual([
      'OBJECTID:esriFieldTypeOID',
      'NAME:esriFieldTypeString',
      'CLASS:esriFieldTypeSmallInteger',
      'AREA:esriFieldTypeDouble',
      'SURVEYED:esriFieldTypeDate',
    ]);
    const features = j['features'] as { attributes: Record<string, unknown>; geometry?: { rings: number[][][] } }[];
    expect(features[0]!.attributes).toEqual({ OBJECTID: 7, NAME: 'a <b>', CLASS: 2, AREA: 12.5, SURVEYED: Date.UTC(2024, 0, 2) });
    expect(features[0]!.geometry!.rings[0]).toEqual([
      [295000, 9115000],
      [295000, 9116000],
      [296000, 9116000],
      [296000, 9115000],
      [295000, 9115000],
    ]);
    expect(features[1]).toEqual({ attributes: { OBJECTID: 9, NAME: null, CLASS: 3, AREA: 4, SURVEYED: null } });
  });

  it('writes KML 2.2 placemarks in WGS 84 with escaped names and values', () => {
    const kml = kmlOf(DATA);
    const doc = new XMLParser({ ignoreAttributes: false }).parse(kml) as {
      kml: {
        '@_xmlns': string;
        Document: { name: string; Placemark: { name: string; Polygon?: { outerBoundaryIs: { LinearRing: { coordinates: string } } } }[] };
      };
    };
    expect(doc.kml['@_xmlns']).toBe('http://www.opengis.net/kml/2.2');
    expect(doc.kml.Document.name).toBe('Parcels & plots');
    const [p0, p1] = doc.kml.Document.Placemark;
    expect(p0!.name).toBe('a <b>');
    expect(p1!.Polygon).toBeUndefined();
    const first = p0!.Polygon!.outerBoundaryIs.LinearRing.coordinates.split(' ')[0]!.split(',').map(Number);
    // 295000 E 9115000 N in UTM 25 S (GDAL: -34.85996, -8.00216).
    expect(first[0]).toBeCloseTo(-34.85996, 4);
    expect(first[1]).toBeCloseTo(-8.00216, 4);
    expect(kml).toContain('a &lt;b&gt;');
  });

  it('encodes AMF3 as the format defines it (hand-derived bytes)', () => {
    // {a: 1, b: 'x', c: [true, null], d: 'a'}: object 0A, traits 0B (inline, dynamic, 0 sealed), class '' 01;
    // key 'a' 03 61, int 04 01; key 'b' 03 62, string 06 03 78; key 'c' 03 63, array 09 05 (2 dense) 01 03 01;
    // key 'd' 03 64, string 'a' by reference to string #0: 06 00; end of dynamic members 01.
    expect([...amf3({ a: 1, b: 'x', c: [true, null], d: 'a' })]).toEqual([
      0x0a, 0x0b, 0x01, 0x03, 0x61, 0x04, 0x01, 0x03, 0x62, 0x06, 0x03, 0x78, 0x03, 0x63, 0x09, 0x05, 0x01, 0x03, 0x01, 0x03, 0x64, 0x06,
      0x00, 0x01,
    ]);
    // U29: 300 = 0b10_0101100 -> 82 2C; -1 -> 29-bit two's complement 1FFFFFFF -> FF FF FF FF; 2^28 and 1.5 are doubles.
    expect([...amf3(300)]).toEqual([0x04, 0x82, 0x2c]);
    expect([...amf3(-1)]).toEqual([0x04, 0xff, 0xff, 0xff, 0xff]);
    expect([...amf3(0x4000)]).toEqual([0x04, 0x81, 0x80, 0x00]);
    expect([...amf3(2 ** 28)]).toEqual([0x05, 0x41, 0xb0, 0, 0, 0, 0, 0, 0]);
    expect([...amf3(1.5)]).toEqual([0x05, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]);
    expect([...amf3('é')]).toEqual([0x06, 0x05, 0xc3, 0xa9]);
    expect([...amf3(['', ''])]).toEqual([0x09, 0x05, 0x01, 0x06, 0x01, 0x06, 0x01]);
    expect([...amf3(new Date(0))]).toEqual([0x08, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('answers a QueryResult in every format', async () => {
    const published: string[] = [];
    const publish = (bytes: Uint8Array, ext: string, type: string): Promise<string> => {
      published.push(`${ext} ${type} ${bytes.length}`);
      return Promise.resolve(`https://host/out/x.${ext}`);
    };
    const answers = { object: () => recordSetOf(DATA), json: () => featureSetJson(DATA), kml: () => kmlOf(DATA) };
    const obj = await queryResultOf('geoQueryResultRecordSetAsObject', 'F', answers, publish);
    expect(obj).toMatchObject({ $type: 'QueryResult', URL: '', Object: { $type: 'RecordSet' } });
    const mime = await queryResultOf('geoQueryResultJsonAsMime', 'F', answers, publish);
    expect(JSON.parse(new TextDecoder().decode(mime['MimeData'] as Uint8Array))).toEqual(featureSetJson(DATA));
    expect(mime['Object']).toBeNull();
    const amf = await queryResultOf('geoQueryResultAmfAsMime', 'F', answers, publish);
    expect(amf['MimeData']).toEqual(amf3(featureSetJson(DATA)));
    expect(await queryResultOf('geoQueryResultKMLAsURL', 'F', answers, publish)).toEqual({
      $type: 'QueryResult',
      URL: 'https://host/out/x.kml',
      Object: null,
    });
    expect(published).toEqual([`kml application/vnd.google-earth.kml+xml ${new TextEncoder().encode(kmlOf(DATA)).length}`]);
    await expect(queryResultOf('geoQueryResultCSV', 'QueryResultOptions/Format', answers, publish)).rejects.toThrow(
      /QueryResultOptions\/Format/,
    );
    await expect(queryResultOf('geoRelateResultKMLAsURL', 'F', { ...answers, kml: undefined }, publish)).rejects.toThrow(
      /not a result format/,
    );
  });
});

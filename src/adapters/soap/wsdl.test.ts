import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { GEO_SOAP_NS } from './envelope.js';
import { COMPLEX_TYPES, ENUMERATIONS } from './schema.js';
import { OPERATION_SIGNATURES } from './signatures.js';
import { wsdlDocument } from './wsdl.js';

const ENDPOINT = 'https://gis.example/server/services/Folder/olinda/MapServer';
const doc = wsdlDocument({ serviceName: 'olinda', endpoint: ENDPOINT, operations: OPERATION_SIGNATURES });

type Node = Record<string, unknown>;
const ARRAYS = new Set(['message', 'operation', 'xs:element', 'xs:complexType', 'xs:simpleType', 'xs:enumeration']);
const parsed = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  isArray: (name) => ARRAYS.has(name),
}).parse(doc) as Node;
const definitions = parsed['definitions'] as Node;
const schema = (definitions['types'] as Node)['xs:schema'] as Node;
const list = (n: Node, k: string): Node[] => (n[k] as Node[] | undefined) ?? [];

describe('wsdlDocument (§5.1)', () => {
  it('is well-formed with the vendor prefixes and namespaces', () => {
    expect(XMLValidator.validate(doc)).toBe(true);
    expect(doc.startsWith('<?xml version="1.0" encoding="utf-8"?>\n<definitions ')).toBe(true);
    expect(definitions['@targetNamespace']).toBe(GEO_SOAP_NS);
    expect(definitions['@xmlns:e']).toBe(GEO_SOAP_NS);
    expect(definitions['@xmlns:xs']).toBe('http://www.w3.org/2001/XMLSchema');
    expect(definitions['@xmlns:soap']).toBe('http://schemas.xmlsoap.org/wsdl/soap/');
    expect(definitions['@xmlns']).toBe('http://schemas.xmlsoap.org/wsdl/');
  });

  it('has one xs:schema without elementFormDefault, wrapper elements for every operation, every type of the table', () => {
    expect(Array.isArray(schema)).toBe(false);
    expect(schema['@targetNamespace']).toBe(GEO_SOAP_NS);
    expect(schema['@elementFormDefault']).toBeUndefined();
    const elements = list(schema, 'xs:element');
    expect(elements.map((e) => e['@name'])).toEqual(OPERATION_SIGNATURES.flatMap((s) => [s.name, `${s.name}Response`]));
    const exportMap = elements.find((e) => e['@name'] === 'ExportMapImage')!;
    const seq = ((exportMap['xs:complexType'] as Node[])[0]!['xs:sequence'] as Node)['xs:element'] as Node[];
    expect(seq.map((e) => [e['@name'], e['@type'], e['@minOccurs']])).toEqual([
      ['MapDescription', 'e:MapDescription', undefined],
      ['ImageDescription', 'e:ImageDescription', undefined],
    ]);
    const tile = elements.find((e) => e['@name'] === 'GetMapTile')!;
    const tileSeq = ((tile['xs:complexType'] as Node[])[0]!['xs:sequence'] as Node)['xs:element'] as Node[];
    expect(tileSeq.at(-1)).toEqual({ '@minOccurs': '0', '@name': 'Format', '@type': 'xs:string' });
    const noArgs = elements.find((e) => e['@name'] === 'GetMapCount')!;
    expect((noArgs['xs:complexType'] as Node[])[0]).toBe('');
    const fromMap = elements.find((e) => e['@name'] === 'FromMapPointsResponse')!;
    const fromSeq = ((fromMap['xs:complexType'] as Node[])[0]!['xs:sequence'] as Node)['xs:element'] as Node[];
    expect(fromSeq.map((e) => e['@name'])).toEqual(['ScreenXValues', 'ScreenYValues']);
    expect(list(schema, 'xs:complexType')).toHaveLength(COMPLEX_TYPES.length);
    expect(list(schema, 'xs:simpleType')).toHaveLength(ENUMERATIONS.length);
  });

  it('writes derivation, abstractness, occurrences, nillable, defaults and enumerations from the table', () => {
    const types = new Map(list(schema, 'xs:complexType').map((t) => [t['@name'] as string, t]));
    const pointN = types.get('PointN')!;
    const ext = (pointN['xs:complexContent'] as Node)['xs:extension'] as Node;
    expect(ext['@base']).toBe('e:Point');
    expect(((ext['xs:sequence'] as Node)['xs:element'] as Node[]).map((e) => e['@name'])).toEqual([
      'X',
      'Y',
      'M',
      'Z',
      'ID',
      'SpatialReference',
    ]);
    expect(types.get('Point')!['@abstract']).toBe('true');
    expect(types.get('Geometry')!['@abstract']).toBeUndefined();
    const arrayOfValue = ((types.get('ArrayOfValue')!['xs:sequence'] as Node)['xs:element'] as Node[])[0];
    expect(arrayOfValue).toEqual({
      '@minOccurs': '0',
      '@maxOccurs': 'unbounded',
      '@name': 'Value',
      '@nillable': 'true',
      '@type': 'xs:anyType',
    });
    const layerCache = ((types.get('ArrayOfLayerCacheInfo')!['xs:sequence'] as Node)['xs:element'] as Node[])[0];
    expect(layerCache).toMatchObject({ '@maxOccurs': 'unbounded', '@type': 'e:LayerCacheInfo' });
    const feature = (types.get('FeatureExtent')!['xs:complexContent'] as Node)['xs:extension'] as Node;
    expect(((feature['xs:sequence'] as Node)['xs:element'] as Node[])[1]).toEqual({
      '@default': '1.0',
      '@name': 'ExpandRatio',
      '@type': 'xs:double',
    });
    expect(types.get('MapExtent')!['xs:complexContent']).toEqual({ 'xs:extension': { '@base': 'e:MapArea' } });
    const format = list(schema, 'xs:simpleType').find((t) => t['@name'] === 'ImageFormat')!;
    const restriction = format['xs:restriction'] as Node;
    expect(restriction['@base']).toBe('xs:string');
    expect((restriction['xs:enumeration'] as Node[]).map((e) => e['@value'])).toContain('geoImagePNG32');
  });

  it('declares document/literal wrapped messages, the MapServerPort, the MapServerBinding and the service', () => {
    const messages = list(definitions, 'message');
    expect(messages).toHaveLength(110);
    expect(messages[0]).toEqual({ '@name': 'GetDocumentInfoIn', part: { '@name': 'parameters', '@element': 'e:GetDocumentInfo' } });
    expect(messages[1]).toEqual({
      '@name': 'GetDocumentInfoOut',
      part: { '@name': 'parameters', '@element': 'e:GetDocumentInfoResponse' },
    });
    const portType = definitions['portType'] as Node;
    expect(portType['@name']).toBe('MapServerPort');
    expect(list(portType, 'operation')).toHaveLength(55);
    expect(list(portType, 'operation')[5]).toEqual({
      '@name': 'ExportMapImage',
      input: { '@message': 'e:ExportMapImageIn' },
      output: { '@message': 'e:ExportMapImageOut' },
    });
    expect(list(portType, 'operation').some((o) => 'fault' in o)).toBe(false);
    expect(doc).not.toMatch(/<fault[ >]/);
    const binding = definitions['binding'] as Node;
    expect(binding['@name']).toBe('MapServerBinding');
    expect(binding['@type']).toBe('e:MapServerPort');
    expect(binding['soap:binding']).toEqual({ '@transport': 'http://schemas.xmlsoap.org/soap/http' });
    for (const op of list(binding, 'operation')) {
      expect(op['soap:operation']).toEqual({ '@soapAction': '', '@style': 'document' });
      expect(op['input']).toEqual({ 'soap:body': { '@use': 'literal' } });
      expect(op['output']).toEqual({ 'soap:body': { '@use': 'literal' } });
    }
    expect(list(binding, 'operation')).toHaveLength(55);
    expect(definitions['service']).toEqual({
      '@name': 'olinda_MapServer',
      port: { '@name': 'MapServerPort', '@binding': 'e:MapServerBinding', 'soap:address': { '@location': ENDPOINT } },
    });
  });

  it('escapes the endpoint and follows the operation list it is given', () => {
    const small = wsdlDocument({
      serviceName: 'a&b',
      endpoint: 'https://h.example/s?x=1&token=a"b',
      operations: OPERATION_SIGNATURES.slice(0, 2),
    });
    expect(XMLValidator.validate(small)).toBe(true);
    expect(small).toContain('location="https://h.example/s?x=1&amp;token=a&quot;b"');
    expect(small).toContain('<service name="a&amp;b_MapServer">');
    expect(small.match(/<message /g)).toHaveLength(4);
  });
});

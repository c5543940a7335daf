import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { sampleValue } from '../../../test/soap-samples.js';
import { EngineError } from '../../core/errors.js';
import { decodeRequest, encodeResponse, encodeResponseEnvelope } from './codec.js';
import { GEO_SOAP_NS, parseEnvelope, SOAP11_ENV_NS, XS_NS, XSI_NS } from './envelope.js';
import type { OperationSignature, SoapArgs, SoapResult, SoapValue } from './operation.js';
import { COMPLEX_TYPES, ENUMERATIONS } from './schema.js';
import { operationSignature, type OperationName } from './signatures.js';

const sig = (name: OperationName): OperationSignature => operationSignature(name)!;

/** Decode `<g:Op>inner</g:Op>` of operation `op` (prefix `g` bound to the service namespace, `xsi` declared). */
function decode(op: OperationName, inner: string, extraNs = ''): SoapArgs {
  const xml = `<s:Envelope xmlns:s="${SOAP11_ENV_NS}" xmlns:g="${GEO_SOAP_NS}" xmlns:xsi="${XSI_NS}"${extraNs}><s:Body><g:${op}>${inner}</g:${op}></s:Body></s:Envelope>`;
  return decodeRequest(sig(op), parseEnvelope(xml, 'text/xml; charset=utf-8').request);
}

/** The error `f` throws. */
function errorOf(f: () => unknown): EngineError {
  try {
    f();
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  throw new Error('expected an error');
}

const encode = (op: OperationName, result: SoapResult): string => encodeResponse(sig(op), result).xml;

/** Decode one element `xml` declared as `name: type` (a one-element request), extra namespaces on the envelope. */
function one(name: string, type: string, xml: string, extraNs = ''): SoapValue {
  const signature: OperationSignature = { name: 'Probe', request: [{ name, type }], response: [] };
  const env = `<s:Envelope xmlns:s="${SOAP11_ENV_NS}" xmlns:g="${GEO_SOAP_NS}" xmlns:xsi="${XSI_NS}" xmlns:xs="${XS_NS}"${extraNs}><s:Body><g:Probe>${xml}</g:Probe></s:Body></s:Envelope>`;
  return decodeRequest(signature, parseEnvelope(env, null).request)[name];
}

const MAP_DESCRIPTION = `<MapDescription><Name>Layers</Name>
  <MapArea xsi:type="g:MapExtent"><Extent xsi:type="g:EnvelopeN"><XMin>-8240000</XMin><YMin>4960000</YMin><XMax>-8225000</XMax><YMax>4970000</YMax></Extent></MapArea>
  <LayerDescriptions><LayerDescription><LayerID>0</LayerID><Visible>true</Visible><ShowLabels>false</ShowLabels>
    <ScaleSymbols>false</ScaleSymbols><SetSelectionSymbol>false</SetSelectionSymbol>
    <SelectionBufferDistance>0</SelectionBufferDistance><ShowSelectionBuffer>false</ShowSelectionBuffer>
    <DefinitionExpression></DefinitionExpression></LayerDescription></LayerDescriptions>
  <Rotation>0</Rotation></MapDescription>`;

const IMAGE_DESCRIPTION = `<ImageDescription><ImageType><ImageFormat>geoImagePNG</ImageFormat><ImageReturnType>geoImageReturnURL</ImageReturnType></ImageType>
  <ImageDisplay><ImageHeight>400</ImageHeight><ImageWidth>600</ImageWidth><ImageDPI>96</ImageDPI></ImageDisplay></ImageDescription>`;

describe('decodeRequest (§5.3)', () => {
  it('decodes the sample ExportMapImage request into operation.ts values', () => {
    const args = decode('ExportMapImage', MAP_DESCRIPTION + IMAGE_DESCRIPTION);
    expect(args).toEqual({
      MapDescription: {
        $type: 'MapDescription',
        Name: 'Layers',
        MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: -8240000, YMin: 4960000, XMax: -8225000, YMax: 4970000 } },
        LayerDescriptions: [
          {
            $type: 'LayerDescription',
            LayerID: 0,
            Visible: true,
            ShowLabels: false,
            ScaleSymbols: false,
            SetSelectionSymbol: false,
            SelectionBufferDistance: 0,
            ShowSelectionBuffer: false,
            DefinitionExpression: '',
          },
        ],
        Rotation: 0,
      },
      ImageDescription: {
        $type: 'ImageDescription',
        ImageType: { $type: 'ImageType', ImageFormat: 'geoImagePNG', ImageReturnType: 'geoImageReturnURL' },
        ImageDisplay: { $type: 'ImageDisplay', ImageHeight: 400, ImageWidth: 600, ImageDPI: 96 },
      },
    });
  });

  it('rule 1-2: matches children by local name whatever their namespace', () => {
    const args = decode('GetMapName', '<g:Index>4</g:Index>');
    expect(args).toEqual({ Index: 4 });
    const env = one('FromPoint', 'Point', '<x:FromPoint xmlns:x="urn:other"><x:X>1</x:X><x:Y>2</x:Y></x:FromPoint>');
    expect(env).toEqual({ $type: 'PointN', X: 1, Y: 2 });
  });

  it('rule 3: resolves xsi:type through in-scope prefixes, falls back to the local name for an unbound prefix', () => {
    const bound = one(
      'SearchShape',
      'Geometry',
      `<SearchShape xmlns:q="${GEO_SOAP_NS}" xsi:type="q:PointN"><X>5</X><Y>6</Y></SearchShape>`,
    );
    expect(bound).toEqual({ $type: 'PointN', X: 5, Y: 6 });
    const unbound = decode(
      'ExportMapImage',
      `<MapDescription><Name>m</Name><MapArea xsi:type="tns:MapExtent"><Extent xsi:type="tns:EnvelopeN"><XMin>0</XMin><YMin>0</YMin><XMax>1</XMax><YMax>1</YMax></Extent></MapArea></MapDescription>${IMAGE_DESCRIPTION}`,
    );
    expect((unbound['MapDescription'] as { MapArea: unknown }).MapArea).toEqual({
      $type: 'MapExtent',
      Extent: { $type: 'EnvelopeN', XMin: 0, YMin: 0, XMax: 1, YMax: 1 },
    });
  });

  it('rule 3: an unknown, foreign or non-derived xsi:type is an INVALID_ARGUMENT naming the element', () => {
    const unknown = errorOf(() =>
      decode('ExportMapImage', `<MapDescription><Name>m</Name><MapArea xsi:type="g:Nowhere"/></MapDescription>`),
    );
    expect(unknown.code).toBe('INVALID_ARGUMENT');
    expect(unknown.path).toBe('MapDescription/MapArea');
    expect(unknown.message).toContain('Nowhere');
    const foreign = errorOf(() =>
      decode('ExportMapImage', `<MapDescription><Name>m</Name><MapArea xmlns:o="urn:other" xsi:type="o:MapExtent"/></MapDescription>`),
    );
    expect(foreign.path).toBe('MapDescription/MapArea');
    const notDerived = errorOf(() =>
      decode('ExportMapImage', `<MapDescription><Name>m</Name><MapArea xsi:type="g:EnvelopeN"/></MapDescription>${IMAGE_DESCRIPTION}`),
    );
    expect(notDerived.code).toBe('INVALID_ARGUMENT');
    expect(notDerived.path).toBe('MapDescription/MapArea');
    expect(notDerived.message).toContain('not a MapArea');
    const abstract = errorOf(() => one('SearchShape', 'Geometry', `<SearchShape xsi:type="g:Polyline"/>`));
    expect(abstract.message).toContain('abstract');
  });

  it('rule 4: infers concrete types for abstract elements without xsi:type', () => {
    const args = decode(
      'ExportMapImage',
      `<MapDescription><Name>m</Name><MapArea><Extent><XMin>0</XMin><YMin>1</YMin><XMax>2</XMax><YMax>3</YMax>
        <SpatialReference><WKID>4326</WKID></SpatialReference></Extent></MapArea>
        <SpatialReference><WKID>3857</WKID></SpatialReference>
        <TransparentColor><Red>1</Red><Green>2</Green><Blue>3</Blue></TransparentColor>
        <SelectionColor><WKT>nonsense</WKT></SelectionColor></MapDescription>${IMAGE_DESCRIPTION}`,
    );
    const md = args['MapDescription'] as Record<string, unknown>;
    expect(md['MapArea']).toEqual({
      $type: 'MapExtent',
      Extent: {
        $type: 'EnvelopeN',
        XMin: 0,
        YMin: 1,
        XMax: 2,
        YMax: 3,
        SpatialReference: { $type: 'GeographicCoordinateSystem', WKID: 4326 },
      },
    });
    expect(md['SpatialReference']).toEqual({ $type: 'ProjectedCoordinateSystem', WKID: 3857 });
    expect(md['TransparentColor']).toEqual({ $type: 'RgbColor', Red: 1, Green: 2, Blue: 3 });
    // An element unknown to every Color is ignored: the default RgbColor with its schema defaults.
    expect(md['SelectionColor']).toEqual({ $type: 'RgbColor', Red: 0, Green: 0, Blue: 0 });
    const unknownSr = one(
      'FromPoint',
      'Point',
      `<FromPoint><X>1</X><Y>2</Y><SpatialReference><WKID>999999</WKID></SpatialReference></FromPoint>`,
    );
    expect((unknownSr as Record<string, unknown>)['SpatialReference']).toEqual({
      $type: 'UnknownCoordinateSystem',
      WKID: 999999,
    });
    // A Geometry (concrete but polymorphic) is read by its children.
    expect(
      one('SearchShape', 'Geometry', '<SearchShape><XMin>0</XMin><YMin>0</YMin><XMax>1</XMax><YMax>1</YMax></SearchShape>'),
    ).toMatchObject({
      $type: 'EnvelopeN',
    });
    expect(one('SearchShape', 'Geometry', '<SearchShape><RingArray/></SearchShape>')).toEqual({
      $type: 'PolygonN',
      HasID: false,
      HasZ: false,
      HasM: false,
      RingArray: [],
    });
    // A MapTableDescription is a LayerDescription or a StandaloneTableDescription by its elements.
    expect(one('MapTableDescription', 'MapTableDescription', '<MapTableDescription><ID>3</ID></MapTableDescription>')).toEqual({
      $type: 'StandaloneTableDescription',
      ID: 3,
    });
    // A QueryFilter with spatial elements is the least derived filter that has them.
    const qf = decode(
      'QueryFeatureCount',
      '<QueryFilter><WhereClause>1=1</WhereClause><SpatialRel>geoSpatialRelIntersects</SpatialRel><FilterGeometry><X>1</X><Y>1</Y></FilterGeometry></QueryFilter>',
    )['QueryFilter'];
    expect(qf).toMatchObject({
      $type: 'SpatialFilter',
      SpatialRel: 'geoSpatialRelIntersects',
      FilterGeometry: { $type: 'PointN', X: 1, Y: 1 },
    });
    // Ambiguous: several symbol types share these elements.
    const ambiguous = errorOf(() => one('Symbol', 'Symbol', '<Symbol><Color><Red>1</Red></Color></Symbol>'));
    expect(ambiguous.path).toBe('Symbol');
    expect(ambiguous.message).toContain('needs an xsi:type attribute naming its type (one of SimpleFillSymbol, SimpleLineSymbol');
    const symbol = errorOf(() =>
      one(
        'MapDescription',
        'MapDescription',
        `<MapDescription><Name>m</Name><LayerDescriptions><LayerDescription><SelectionSymbol><Style>geoSFSSolid</Style></SelectionSymbol></LayerDescription></LayerDescriptions></MapDescription>`,
      ),
    );
    expect(symbol.path).toBe('MapDescription/LayerDescriptions[0]/SelectionSymbol');
    expect(symbol.message).toContain('xsi:type');
    // The same elements under a FillSymbol fit one type only.
    const fill = one(
      'MapDescription',
      'MapDescription',
      `<MapDescription><Name>m</Name><BackgroundSymbol><Style>geoSFSSolid</Style></BackgroundSymbol></MapDescription>`,
    );
    expect((fill as { BackgroundSymbol: unknown }).BackgroundSymbol).toEqual({ $type: 'SimpleFillSymbol', Style: 'geoSFSSolid' });
  });

  it('rule 5: accepts any order; the last of a repeated single-valued element wins', () => {
    const args = decode(
      'GetMapTile',
      '<Column>3</Column><Row>2</Row><Level>1</Level><MapName>first</MapName><MapName>second</MapName><Format>png</Format>',
    );
    expect(args).toEqual({ MapName: 'second', Level: 1, Row: 2, Column: 3, Format: 'png' });
  });

  it('rule 6: missing required value types read as schema defaults; missing required structures are refused', () => {
    const args = decode(
      'ExportMapImage',
      `<MapDescription><Name>m</Name><MapArea xsi:type="g:FeatureExtent"><LayerID>1</LayerID></MapArea></MapDescription><ImageDescription/>`,
    );
    expect(args['MapDescription']).toEqual({
      $type: 'MapDescription',
      Name: 'm',
      MapArea: { $type: 'FeatureExtent', DefaultScale: 0, ExpandRatio: 1, LayerID: 1, MapName: '' },
      Rotation: 0,
    });
    expect(args['ImageDescription']).toEqual({ $type: 'ImageDescription' });
    expect(decode('GetMapName', '')).toEqual({ Index: 0 });
    expect(decode('Find', `${MAP_DESCRIPTION}<MapImageDisplay/>`)).toMatchObject({
      SearchString: '',
      Contains: false,
      FindOption: 'geoFindVisibleLayers',
      LayerIDs: [],
    });
    const missing = errorOf(() => decode('ExportMapImage', IMAGE_DESCRIPTION));
    expect(missing.code).toBe('INVALID_ARGUMENT');
    expect(missing.path).toBe('MapDescription');
    expect(missing.message).toBe('MapDescription is required.');
    const nested = errorOf(() => decode('Identify', `${MAP_DESCRIPTION}<MapImageDisplay/><SearchShape xsi:type="g:MarkerElement"/>`));
    expect(nested.path).toBe('SearchShape');
    const innerMissing = errorOf(() =>
      one('QueryFilter', 'QueryFilter', '<QueryFilter xsi:type="g:SpatialFilter"><WhereClause/></QueryFilter>'),
    );
    expect(innerMissing.path).toBe('QueryFilter/FilterGeometry');
    expect(decode('GetMapTile', '<MapName>m</MapName>')).toEqual({ MapName: 'm', Level: 0, Row: 0, Column: 0 });
  });

  it('rule 7: ignores unknown elements; xsi:nil is absent (null in anyType slots)', () => {
    const args = decode(
      'GetMapTile',
      '<MapName>m</MapName><Surprise><Deep>1</Deep></Surprise><Level xsi:nil="true"/><Row>4</Row><Column>5</Column><Format xsi:nil="true"/>',
    );
    expect(args).toEqual({ MapName: 'm', Level: 0, Row: 4, Column: 5 });
    const values = one(
      'QueryResultOptions',
      'QueryResultOptions',
      `<QueryResultOptions><Format>geoQueryResultJsonAsMime</Format><FormatProperties><PropertyArray>
        <PropertySetProperty><Key>a</Key><Value xsi:type="xs:int" xmlns:xs="http://www.w3.org/2001/XMLSchema">3</Value></PropertySetProperty>
        <PropertySetProperty><Key>b</Key><Value xsi:nil="true"/></PropertySetProperty>
        <PropertySetProperty><Key>c</Key><Value>text</Value></PropertySetProperty>
        <PropertySetProperty><Key>d</Key></PropertySetProperty>
      </PropertyArray></FormatProperties></QueryResultOptions>`,
    );
    expect((values as { FormatProperties: unknown }).FormatProperties).toEqual({
      $type: 'PropertySet',
      PropertyArray: [
        { $type: 'PropertySetProperty', Key: 'a', Value: 3 },
        { $type: 'PropertySetProperty', Key: 'b', Value: null },
        { $type: 'PropertySetProperty', Key: 'c', Value: 'text' },
        { $type: 'PropertySetProperty', Key: 'd' },
      ],
    });
  });

  it('validates lexical forms, naming the element and what it must be', () => {
    const cases: [string, string, string, string, string][] = [
      ['Index', 'xs:int', '<Index>2147483648</Index>', 'Index', 'whole number from -2147483648 to 2147483647'],
      ['Index', 'xs:int', '<Index>1.5</Index>', 'Index', 'whole number'],
      ['Level', 'xs:int', '<Level>x</Level>', 'Level', 'not "x"'],
      ['Contains', 'xs:boolean', '<Contains>yes</Contains>', 'Contains', 'true or false'],
      ['FromPoint', 'Point', '<FromPoint><X>1,5</X><Y>0</Y></FromPoint>', 'FromPoint/X', 'a number'],
      [
        'MapDescription',
        'MapDescription',
        `<MapDescription><Name>m</Name><TransparentColor><Red>256</Red></TransparentColor></MapDescription>`,
        'MapDescription/TransparentColor/Red',
        'from 0 to 255',
      ],
      ['LayerIDs', 'ArrayOfInt', `<LayerIDs><Int>1</Int><Int>2</Int><Int>x</Int></LayerIDs>`, 'LayerIDs[2]', 'whole number'],
      [
        'ScaleBar',
        'ScaleBar',
        `<ScaleBar xsi:type="g:AlternatingScaleBar"><Divisions>40000</Divisions></ScaleBar>`,
        'ScaleBar/Divisions',
        'from -32768 to 32767',
      ],
      [
        'RelateDescription',
        'RelateDescription',
        '<RelateDescription><IncludeGeometry>maybe</IncludeGeometry></RelateDescription>',
        'RelateDescription/IncludeGeometry',
        'true or false',
      ],
      [
        'MapDescription',
        'MapDescription',
        `<MapDescription><Name>m</Name><TimeValue xsi:type="g:TimeInstant"><Time>2024-02-30T00:00:00Z</Time></TimeValue></MapDescription>`,
        'MapDescription/TimeValue/Time',
        'date and time',
      ],
      [
        'DataClassificationDef',
        'DataClassificationDef',
        `<DataClassificationDef xsi:type="g:ClassBreaksDef"><BreakCount>99999999999999999999</BreakCount></DataClassificationDef>`,
        'DataClassificationDef/BreakCount',
        'whole number',
      ],
      ['TimeValue', 'TimeValue', `<TimeValue xsi:type="g:TimeInstant"/>`, 'TimeValue/Time', 'is required'],
    ];
    for (const [name, type, inner, path, text] of cases) {
      const e = errorOf(() => one(name, type, inner));
      expect(e.code, inner).toBe('INVALID_ARGUMENT');
      expect(e.path, inner).toBe(path);
      expect(e.message, inner).toContain(text);
      expect(e.message.startsWith(path), inner).toBe(true);
    }
  });

  it('reads every scalar type family: double specials, booleans 1/0, base64, dateTime, long', () => {
    const p = one('FromPoint', 'Point', '<FromPoint><X>INF</X><Y>-INF</Y><M>NaN</M><Z> 1e3 </Z><ID>-7</ID></FromPoint>') as Record<
      string,
      number
    >;
    expect(p['X']).toBe(Infinity);
    expect(p['Y']).toBe(-Infinity);
    expect(p['M']).toBeNaN();
    expect(p['Z']).toBe(1000);
    expect(p['ID']).toBe(-7);
    expect(one('Contains', 'xs:boolean', '<Contains>1</Contains>')).toBe(true);
    expect(one('Contains', 'xs:boolean', '<Contains> 0 </Contains>')).toBe(false);
    const picture = one(
      'MapDescription',
      'MapDescription',
      `<MapDescription><Name>m</Name><BackgroundSymbol xsi:type="g:PictureFillSymbol"><Picture>AAEC
      /w==</Picture></BackgroundSymbol></MapDescription>`,
    );
    expect((picture as { BackgroundSymbol: { Picture: Uint8Array } }).BackgroundSymbol.Picture).toEqual(new Uint8Array([0, 1, 2, 255]));
    const badBase64 = errorOf(() =>
      one(
        'MapDescription',
        'MapDescription',
        `<MapDescription><Name>m</Name><BackgroundSymbol xsi:type="g:PictureFillSymbol"><Picture>AAE</Picture></BackgroundSymbol></MapDescription>`,
      ),
    );
    expect(badBase64.path).toBe('MapDescription/BackgroundSymbol/Picture');
    const time = one(
      'MapDescription',
      'MapDescription',
      `<MapDescription><Name>m</Name><TimeValue xsi:type="g:TimeExtent"><StartTime>2024-05-01T12:00:00</StartTime><EndTime>2024-05-01T14:30:00.250+02:00</EndTime></TimeValue></MapDescription>`,
    );
    const tv = (time as { TimeValue: { StartTime: Date; EndTime: Date } }).TimeValue;
    expect(tv.StartTime.toISOString()).toBe('2024-05-01T12:00:00.000Z');
    expect(tv.EndTime.toISOString()).toBe('2024-05-01T12:30:00.250Z');
    const cb = one(
      'DataClassificationDef',
      'DataClassificationDef',
      `<DataClassificationDef xsi:type="g:ClassBreaksDef"><BreakCount>9007199254740991</BreakCount></DataClassificationDef>`,
    );
    expect((cb as Record<string, unknown>)['BreakCount']).toBe(9007199254740991);
    // Strings are kept verbatim, whitespace included.
    expect(decode('GetServerInfo', '<MapName>  Layers </MapName>')['MapName']).toBe('  Layers ');
    // A client's own XML Schema types in anyType slots.
    const any = one(
      'P',
      'ArrayOfPropertySetProperty',
      `<P><PropertySetProperty><Key>d</Key><Value xsi:type="xs:decimal">-1.50</Value></PropertySetProperty>
        <PropertySetProperty><Key>i</Key><Value xsi:type="xs:integer">12</Value></PropertySetProperty>
        <PropertySetProperty><Key>f</Key><Value xsi:type="xs:float">INF</Value></PropertySetProperty>
        <PropertySetProperty><Key>t</Key><Value xsi:type="xs:dateTime">2024-05-01T00:00:00Z</Value></PropertySetProperty>
        <PropertySetProperty><Key>e</Key><Value xsi:type="g:Units">geoFeet</Value></PropertySetProperty></P>`,
    ) as { Value: unknown }[];
    expect(any.map((p) => p.Value)).toEqual([-1.5, 12, Infinity, new Date(Date.UTC(2024, 4, 1)), 'geoFeet']);
    const badAny = errorOf(() => one('P', 'PropertySetProperty', '<P><Key>k</Key><Value xsi:type="xs:decimal">1e3</Value></P>'));
    expect(badAny.path).toBe('P/Value');
    const unknownXs = errorOf(() => one('P', 'PropertySetProperty', '<P><Key>k</Key><Value xsi:type="xs:gYear">2020</Value></P>'));
    expect(unknownXs.path).toBe('P/Value');
    const nested = errorOf(() => one('P', 'PropertySetProperty', '<P><Key>k</Key><Value><X>1</X></Value></P>'));
    expect(nested.message).toBe('P/Value needs an xsi:type attribute naming its type.');
    // An empty numeric element counts as absent.
    expect(decode('GetMapName', '<Index></Index>')['Index']).toBe(0);
  });

  it('checks enumerations, listing the allowed values; CompactV2 is read as Compact', () => {
    const e = errorOf(() =>
      decode(
        'ExportMapImage',
        `${MAP_DESCRIPTION}<ImageDescription><ImageType><ImageFormat>PNG</ImageFormat></ImageType></ImageDescription>`,
      ),
    );
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.path).toBe('ImageDescription/ImageType/ImageFormat');
    expect(e.message).toContain('geoImageNone, geoImageBMP');
    expect(e.message).toContain('not "PNG"');
    expect(one('IdentifyOption', 'IdentifyOption', '<IdentifyOption> geoIdentifyAllLayers </IdentifyOption>')).toBe('geoIdentifyAllLayers');
    const storage = one(
      'Storage',
      'CacheStorageInfo',
      '<Storage><StorageFormat>geoMapCacheStorageModeCompactV2</StorageFormat><PacketSize>128</PacketSize></Storage>',
    );
    expect(storage).toEqual({ $type: 'CacheStorageInfo', StorageFormat: 'geoMapCacheStorageModeCompact', PacketSize: 128 });
    const bad = errorOf(() =>
      one('Storage', 'CacheStorageInfo', '<Storage><StorageFormat>geoMapCacheStorageModeCompactV3</StorageFormat></Storage>'),
    );
    expect(bad.message).toBe(
      'Storage/StorageFormat must be one of geoMapCacheStorageModeCompact, geoMapCacheStorageModeExploded, not "geoMapCacheStorageModeCompactV3".',
    );
  });

  it('reads polymorphic geometry: polygons with rings, multipoints, nested arrays', () => {
    const shape = one(
      'SearchShape',
      'Geometry',
      `<SearchShape xsi:type="g:PolygonN"><HasID>false</HasID><HasZ>false</HasZ><HasM>false</HasM>
        <RingArray xsi:type="g:ArrayOfRing"><Ring xsi:type="g:Ring"><PointArray xsi:type="g:ArrayOfPoint">
          <Point xsi:type="g:PointN"><X>0</X><Y>0</Y></Point><Point><X>1</X><Y>0</Y></Point><Point><X>0</X><Y>1</Y></Point>
        </PointArray></Ring></RingArray></SearchShape>`,
    );
    expect(shape).toEqual({
      $type: 'PolygonN',
      HasID: false,
      HasZ: false,
      HasM: false,
      RingArray: [
        {
          $type: 'Ring',
          PointArray: [
            { $type: 'PointN', X: 0, Y: 0 },
            { $type: 'PointN', X: 1, Y: 0 },
            { $type: 'PointN', X: 0, Y: 1 },
          ],
        },
      ],
    });
    const mp = one('MapPoints', 'Multipoint', '<MapPoints><PointArray><Point><X>3</X><Y>4</Y></Point></PointArray></MapPoints>');
    expect(mp).toEqual({
      $type: 'MultipointN',
      HasID: false,
      HasZ: false,
      HasM: false,
      PointArray: [{ $type: 'PointN', X: 3, Y: 4 }],
    });
  });
});

/** Parse encoded response content (wrapped for namespaces) keeping attributes. */
function parsed(xml: string): unknown {
  return new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', parseTagValue: false }).parse(
    `<w xmlns:xsi="${XSI_NS}" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:tns="${GEO_SOAP_NS}">${xml}</w>`,
  );
}

describe('encodeResponse (§5.4)', () => {
  it('writes the §5.4 sample MapImage: schema order, xsi:type on complex elements and arrays, absent optionals omitted', () => {
    const xml = encode('ExportMapImage', {
      Result: {
        $type: 'MapImage',
        // Keys in any order: the table decides the order on the wire.
        ImageType: 'image/png',
        ImageDPI: 96,
        ImageWidth: 600,
        ImageHeight: 400,
        MapScale: 94488.19,
        VisibleLayerIDs: [0],
        Extent: {
          $type: 'EnvelopeN',
          SpatialReference: { $type: 'ProjectedCoordinateSystem', WKID: 3857, LatestWKID: 3857 },
          YMax: 4970000,
          XMax: -8225000,
          YMin: 4960000,
          XMin: -8240000,
        },
        ImageURL: 'https://gis.example/geo/output/map_8c1f0e.png',
      },
    });
    expect(xml).toBe(
      '<Result xsi:type="tns:MapImage"><ImageURL>https://gis.example/geo/output/map_8c1f0e.png</ImageURL>' +
        '<Extent xsi:type="tns:EnvelopeN"><XMin>-8240000</XMin><YMin>4960000</YMin><XMax>-8225000</XMax><YMax>4970000</YMax>' +
        '<SpatialReference xsi:type="tns:ProjectedCoordinateSystem"><WKID>3857</WKID><LatestWKID>3857</LatestWKID></SpatialReference></Extent>' +
        '<VisibleLayerIDs xsi:type="tns:ArrayOfInt"><Int>0</Int></VisibleLayerIDs><MapScale>94488.19</MapScale>' +
        '<ImageHeight>400</ImageHeight><ImageWidth>600</ImageWidth><ImageDPI>96</ImageDPI><ImageType>image/png</ImageType></Result>',
    );
  });

  it('writes base elements before derived ones and the declared type when $type is absent', () => {
    const xml = encode('GetServerInfo', {
      Result: {
        Name: 'Layers',
        Description: '',
        CopyrightText: 'c',
        Units: 'geoMeters',
        SupportedImageReturnTypes: 'geoImageReturnMimeData',
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
          },
        ],
        FullExtent: { $type: 'EnvelopeN', XMin: 0, YMin: 0, XMax: 1, YMax: 1 },
      },
    });
    expect(
      xml.startsWith(
        '<Result xsi:type="tns:MapServerInfo"><Name>Layers</Name><Description></Description><FullExtent xsi:type="tns:EnvelopeN">',
      ),
    ).toBe(true);
    expect(xml).toContain(
      '<MapLayerInfos xsi:type="tns:ArrayOfMapLayerInfo"><MapLayerInfo xsi:type="tns:MapLayerInfo"><LayerID>0</LayerID>',
    );
    expect(xml).toContain(
      '<Units>geoMeters</Units><SupportedImageReturnTypes>geoImageReturnMimeData</SupportedImageReturnTypes><CopyrightText>c</CopyrightText></Result>',
    );
    const poly = encode('Identify', {
      Result: [
        {
          LayerID: 1,
          Name: 'L',
          Shape: {
            $type: 'PolygonN',
            HasID: false,
            HasZ: false,
            HasM: false,
            RingArray: [{ $type: 'Ring', PointArray: [{ $type: 'PointN', X: 0, Y: 0 }] }],
          },
        },
      ],
    });
    expect(poly).toBe(
      '<Result xsi:type="tns:ArrayOfMapServerIdentifyResult"><MapServerIdentifyResult xsi:type="tns:MapServerIdentifyResult"><LayerID>1</LayerID><Name>L</Name>' +
        '<Shape xsi:type="tns:PolygonN"><HasID>false</HasID><HasZ>false</HasZ><HasM>false</HasM><RingArray xsi:type="tns:ArrayOfRing">' +
        '<Ring xsi:type="tns:Ring"><PointArray xsi:type="tns:ArrayOfPoint"><Point xsi:type="tns:PointN"><X>0</X><Y>0</Y></Point></PointArray></Ring></RingArray></Shape>' +
        '</MapServerIdentifyResult></Result>',
    );
  });

  it('rule 5: omits absent optionals, writes required strings empty, refuses other missing required values', () => {
    expect(encode('GetMapName', { Result: undefined })).toBe('<Result></Result>');
    expect(encode('GetTileImageInfo', { Result: { CacheTileFormat: 'PNG', CompressionQuality: 0, Antialiasing: 'NONE' } })).toBe(
      '<Result xsi:type="tns:TileImageInfo"><CacheTileFormat>PNG</CacheTileFormat><CompressionQuality>0</CompressionQuality><Antialiasing>NONE</Antialiasing></Result>',
    );
    const e = errorOf(() => encode('GetTileImageInfo', { Result: { CacheTileFormat: 'PNG', Antialiasing: 'NONE' } }));
    expect(e.code).toBe('INTERNAL');
    expect(e.message).toContain('Result/CompressionQuality');
    expect(errorOf(() => encode('GetMapCount', {})).message).toContain('Result');
    // A required base64Binary without a value is written empty (AttachmentData/Data of a URL answer).
    expect(
      encode('QueryAttachmentData', {
        Result: [
          {
            AttachmentInfo: { AttachmentID: 1, ParentID: 2, Name: 'a.txt', ContentType: 'text/plain', Size: 3 },
            URL: 'https://h.example/a',
            TransportType: 'geoTransportTypeUrl',
          },
        ],
      }),
    ).toContain('<AttachmentData xsi:type="tns:AttachmentData"><Data></Data><AttachmentInfo xsi:type="tns:AttachmentInfo">');
    expect(encode('QueryFeatureData2', { Result: { URL: 'u', MimeData: new Uint8Array([1]) } })).toBe(
      '<Result xsi:type="tns:QueryResult"><MimeData>AQ==</MimeData><URL>u</URL><Object></Object></Result>',
    );
  });

  it('rule 6: anyType slots carry xsi:type, nulls are xsi:nil', () => {
    const xml = encode('QueryFeatureData', {
      Result: {
        Fields: { FieldArray: [{ Name: 'OBJECTID', Type: 'geoFieldTypeOID', IsNullable: false, Length: 4, Precision: 0, Scale: 0 }] },
        Records: [
          {
            Values: [
              1,
              2.5,
              'a<b',
              true,
              null,
              new Date(Date.UTC(2024, 0, 2, 3, 4, 5)),
              new Uint8Array([255]),
              { $xs: 'double', value: 2 },
              { $type: 'PointN', X: 1, Y: 2 },
              3000000000,
            ],
          },
        ],
      },
    });
    expect(xml).toContain(
      '<Values xsi:type="tns:ArrayOfValue"><Value xsi:type="xs:int">1</Value><Value xsi:type="xs:double">2.5</Value><Value xsi:type="xs:string">a&lt;b</Value>' +
        '<Value xsi:type="xs:boolean">true</Value><Value xsi:nil="true"></Value><Value xsi:type="xs:dateTime">2024-01-02T03:04:05.000Z</Value>' +
        '<Value xsi:type="xs:base64Binary">/w==</Value><Value xsi:type="xs:double">2</Value><Value xsi:type="tns:PointN"><X>1</X><Y>2</Y></Value>' +
        '<Value xsi:type="xs:double">3000000000</Value></Values>',
    );
    expect(xml).toContain('<Field xsi:type="tns:Field"><Name>OBJECTID</Name><Type>geoFieldTypeOID</Type>');
    expect(encode('GetDocumentInfo', { Result: { PropertyArray: [{ Key: 'k', Value: null }, { Key: 'j' }] } })).toBe(
      '<Result xsi:type="tns:PropertySet"><PropertyArray xsi:type="tns:ArrayOfPropertySetProperty">' +
        '<PropertySetProperty xsi:type="tns:PropertySetProperty"><Key>k</Key><Value xsi:nil="true"></Value></PropertySetProperty>' +
        '<PropertySetProperty xsi:type="tns:PropertySetProperty"><Key>j</Key></PropertySetProperty></PropertyArray></Result>',
    );
    expect(errorOf(() => encode('GetDocumentInfo', { Result: { PropertyArray: [{ Key: 'k', Value: { X: 1 } }] } })).message).toContain(
      '$type',
    );
  });

  it('rule 7: lexical forms for doubles, booleans, dates and base64', () => {
    const xml = encode('ComputeScale', { Result: 0.1 + 0.2 });
    expect(xml).toBe('<Result>0.30000000000000004</Result>');
    expect(encode('ComputeScale', { Result: Infinity })).toBe('<Result>INF</Result>');
    expect(encode('ComputeScale', { Result: -Infinity })).toBe('<Result>-INF</Result>');
    expect(encode('ComputeScale', { Result: NaN })).toBe('<Result>NaN</Result>');
    expect(encode('ComputeScale', { Result: 1e21 })).toBe('<Result>1e+21</Result>');
    expect(encode('IsFixedScaleMap', { Result: false })).toBe('<Result>false</Result>');
    expect(encode('GetMapTile', { Result: new Uint8Array(60).fill(7) })).not.toMatch(/\n/);
    expect(encode('GetMapTile', { Result: new Uint8Array([1, 2, 3]) })).toBe('<Result>AQID</Result>');
    expect(encode('GetMapName', { Result: 'a & b <c>' })).toBe('<Result>a &amp; b &lt;c&gt;</Result>');
  });

  it('rule 8 and FromMapPoints: arrays hold items named after their type; two response elements', () => {
    expect(encode('FromMapPoints', { ScreenXValues: [1, 2], ScreenYValues: [] })).toBe(
      '<ScreenXValues xsi:type="tns:ArrayOfInt"><Int>1</Int><Int>2</Int></ScreenXValues><ScreenYValues xsi:type="tns:ArrayOfInt"></ScreenYValues>',
    );
    expect(encode('QueryHTMLPopups', { Result: ['<b>x</b>'] })).toBe(
      '<Result xsi:type="tns:ArrayOfString"><String>&lt;b&gt;x&lt;/b&gt;</String></Result>',
    );
    const cache = encode('GetCacheDescriptionInfo', {
      Result: {
        TileCacheInfo: {
          TileOrigin: { $type: 'PointN', X: -20037508.342787, Y: 20037508.342787 },
          TileCols: 256,
          TileRows: 256,
          DPI: 96,
          LODInfos: [{ LevelID: 0, Scale: 591657527.591555, Resolution: 156543.033928 }],
        },
        TileImageInfo: { CacheTileFormat: 'PNG', CompressionQuality: 75, Antialiasing: 'NONE' },
        LayerCacheInfos: [
          { LayerID: 0, HasCache: true },
          { LayerID: 1, HasCache: false },
        ],
        CacheControlInfo: { ClientCachingAllowed: true },
        ServiceType: 'geoSingleFusedMapCache',
      },
    });
    expect(cache).toContain(
      '<TileOrigin xsi:type="tns:PointN"><X>-20037508.342787</X><Y>20037508.342787</Y></TileOrigin><TileCols>256</TileCols><TileRows>256</TileRows><DPI>96</DPI>' +
        '<LODInfos xsi:type="tns:ArrayOfLODInfo"><LODInfo xsi:type="tns:LODInfo"><LevelID>0</LevelID><Scale>591657527.591555</Scale><Resolution>156543.033928</Resolution></LODInfo></LODInfos>',
    );
    expect(cache).toContain(
      '<LayerCacheInfos xsi:type="tns:ArrayOfLayerCacheInfo"><LayerCacheInfo xsi:type="tns:LayerCacheInfo"><LayerID>0</LayerID><HasCache>true</HasCache></LayerCacheInfo>' +
        '<LayerCacheInfo xsi:type="tns:LayerCacheInfo"><LayerID>1</LayerID><HasCache>false</HasCache></LayerCacheInfo></LayerCacheInfos>',
    );
  });

  it('refuses values that do not fit the table with a precise INTERNAL error', () => {
    const cases: [OperationName, SoapResult, string][] = [
      ['GetMapCount', { Result: 1.5 }, 'Result: expected a whole number'],
      ['GetMapCount', { Result: '3' }, 'got the string "3"'],
      ['GetMapCount', { Result: 2 ** 31 }, 'xs:int'],
      ['IsFixedScaleMap', { Result: 1 }, 'expected true or false'],
      ['GetSupportedImageReturnTypes', { Result: 'geoImageReturnBoth' }, 'expected a ImageReturnType value'],
      ['GetServerInfo', { Result: { $type: 'MapImage' } }, 'not derived from the declared type MapServerInfo'],
      ['GetServerInfo', { Result: { $type: 'Nope' } }, '$type Nope is not in the type table'],
      ['ToMapPoints', { Result: { X: 1 } }, 'type Multipoint is abstract'],
      ['ToMapPoints', { Result: [] }, 'expected an object of type Multipoint'],
      ['GetTileCacheInfo', { Result: { TileCols: 1, TileRows: 1, DPI: 96, Tilecols: 2 } }, 'TileCacheInfo has no element Tilecols'],
      ['QueryRowIDs', { Result: [1, null] }, 'Result[1]'],
      ['QueryRowIDs', { Result: 'x' }, 'expected an array'],
      ['GetMapTile', { Result: 'AQID' }, 'base64'],
      ['GetMapCount', { Result: 1, Extra: 2 }, 'no element Extra'],
      ['GetDocumentInfo', { Result: { PropertyArray: [{ Key: 'a', Value: [1] }] } }, 'Result/PropertyArray[0]/Value'],
    ];
    for (const [op, result, text] of cases) {
      const e = errorOf(() => encode(op, result));
      expect(e.code, text).toBe('INTERNAL');
      expect(e.message, text).toContain(text);
    }
  });

  it('hooks into the response envelope', () => {
    const doc = encodeResponseEnvelope(sig('GetMapCount'), { Result: 3 });
    expect(doc).toContain('<soap:Body><tns:GetMapCountResponse><Result>3</Result></tns:GetMapCountResponse></soap:Body>');
    expect(parsed(doc.replace(/^<\?xml[^>]*>\n/, ''))).toBeTruthy();
  });

  it('round-trips representative values through encode and decode', () => {
    const value = {
      $type: 'MapDescription',
      Name: 'm',
      MapArea: { $type: 'CenterAndScale', Center: { $type: 'PointN', X: 1, Y: 2 }, Scale: 5000, DPI: 96 },
      Rotation: 12.5,
      TransparentColor: { $type: 'HsvColor', AlphaValue: 128, Hue: 300, Saturation: 10, Value: 20 },
      TimeValue: { $type: 'TimeInstant', Time: new Date(Date.UTC(2020, 5, 1)) },
      CustomGraphics: [
        {
          $type: 'MarkerElement',
          Point: { $type: 'PointN', X: 3, Y: 4 },
          Symbol: {
            $type: 'SimpleMarkerSymbol',
            Angle: 0,
            Size: 8,
            XOffset: 0,
            YOffset: 0,
            Outline: true,
            OutlineSize: 1,
            OutlineColor: { $type: 'RgbColor', Red: 1, Green: 2, Blue: 3 },
            Style: 'geoSMSCircle',
          },
        },
      ],
    };
    // MapServerInfo/DefaultMapDescription carries a MapDescription on the response side.
    const xml = encode('GetServerInfo', {
      Result: {
        Name: 'm',
        Description: '',
        Units: 'geoMeters',
        SupportedImageReturnTypes: 'geoImageReturnURL',
        CopyrightText: '',
        DefaultMapDescription: value,
      },
    });
    const inner = /<DefaultMapDescription[^>]*>.*<\/DefaultMapDescription>/
      .exec(xml)![0]
      .replace(/DefaultMapDescription/g, 'MapDescription');
    const back = one('MapDescription', 'MapDescription', inner, ` xmlns:tns="${GEO_SOAP_NS}"`);
    expect(back).toEqual(value);
  });
});

describe('every type of the table through the codec', () => {
  it('encodes and decodes a full value of every complex type back to itself', () => {
    let checked = 0;
    for (const c of COMPLEX_TYPES) {
      if (c.abstract) continue;
      const value = sampleValue(c.name);
      const signature: OperationSignature = {
        name: 'Probe',
        request: [{ name: 'V', type: c.name }],
        response: [{ name: 'V', type: c.name }],
      };
      const xml = encodeResponse(signature, { V: value }).xml;
      const env = `<s:Envelope xmlns:s="${SOAP11_ENV_NS}" xmlns:xsi="${XSI_NS}" xmlns:xs="${XS_NS}" xmlns:tns="${GEO_SOAP_NS}"><s:Body><tns:Probe>${xml}</tns:Probe></s:Body></s:Envelope>`;
      expect(decodeRequest(signature, parseEnvelope(env, null).request)['V'], c.name).toEqual(value);
      checked++;
    }
    expect(checked).toBeGreaterThan(180);
  });

  it('reads every enumeration value and refuses others', () => {
    for (const e of ENUMERATIONS) {
      for (const v of e.values) expect(one('E', e.name, `<E>${v}</E>`)).toBe(v);
      expect(errorOf(() => one('E', e.name, '<E>geoNoSuchValue</E>')).path).toBe('E');
    }
  });
});

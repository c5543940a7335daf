/**
 * node-soap 1.13.0 against the SOAP map service of `rasterflow serve` (run in a child process by
 * test/soap-clients.test.ts with NODE_EXTRA_CA_CERTS trusting the server's certificate). Prints one
 * JSON object: scenario -> { ok, value } | { ok: false, error }.
 */
import { createClientAsync, type Client } from 'soap';

const NS = 'http://www.geo.example/schemas/Geo/3.5.0';
const wsdl = process.env['RF_WSDL']!;
/** node-soap's way to write `xsi:type` on an element of a derived type. */
const typed = (type: string, value: Record<string, unknown>): Record<string, unknown> => ({
  attributes: { xsi_type: { type, xmlns: NS } },
  ...value,
});
const RECT = { XMin: 292000, YMin: 9114000, XMax: 296000, YMax: 9118000 };
const display = { ImageHeight: 300, ImageWidth: 400, ImageDPI: 96 };
const layerDesc = (id: number, expr = '') => ({
  LayerID: id,
  Visible: true,
  ShowLabels: false,
  ScaleSymbols: false,
  SetSelectionSymbol: false,
  SelectionBufferDistance: 0,
  ShowSelectionBuffer: false,
  DefinitionExpression: expr,
});
const mapDescription = {
  Name: 'Layers',
  MapArea: typed('MapExtent', { Extent: typed('EnvelopeN', RECT) }),
  LayerDescriptions: { LayerDescription: [0, 1, 2, 3].map((i) => layerDesc(i)) },
  Rotation: 0,
};

type Outcome = { ok: true; value: unknown } | { ok: false; error: { message: string; fault?: unknown } };
const results: Record<string, Outcome> = {};

async function call(client: Client, op: string, args: Record<string, unknown>): Promise<unknown> {
  const fn = (client as unknown as Record<string, (a: unknown) => Promise<[unknown]>>)[`${op}Async`]!;
  const [res] = await fn.call(client, args);
  return res;
}

async function scenario(name: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    results[name] = { ok: true, value: await fn() };
  } catch (e) {
    const err = e as { message?: string; root?: { Envelope?: { Body?: { Fault?: unknown } } } };
    results[name] = { ok: false, error: { message: String(err.message ?? e), fault: err.root?.Envelope?.Body?.Fault } };
  }
}

const client = await createClientAsync(wsdl);
await scenario('describe', async () =>
  Object.keys(
    (client.describe() as Record<string, Record<string, Record<string, unknown>>>)[Object.keys(client.describe())[0]!]!['MapServerPort']!,
  ),
);
await scenario('mapCount', () => call(client, 'GetMapCount', {}));
await scenario('serverInfo', () => call(client, 'GetServerInfo', { MapName: 'Layers' }));
await scenario('exportMime', () =>
  call(client, 'ExportMapImage', {
    MapDescription: mapDescription,
    ImageDescription: { ImageType: { ImageFormat: 'geoImagePNG', ImageReturnType: 'geoImageReturnMimeData' }, ImageDisplay: display },
  }),
);
await scenario('queryCount', () =>
  call(client, 'QueryFeatureCount', { MapName: 'Layers', LayerID: 2, QueryFilter: { WhereClause: 'CLASS >= 3', Resolution: 0 } }),
);
await scenario('querySpatial', () =>
  call(client, 'QueryFeatureIDs', {
    MapName: 'Layers',
    LayerID: 2,
    QueryFilter: typed('SpatialFilter', {
      WhereClause: 'CLASS >= 3',
      Resolution: 0,
      SearchOrder: 'geoSearchOrderSpatial',
      SpatialRel: 'geoSpatialRelIntersects',
      FilterGeometry: typed('EnvelopeN', RECT),
      GeometryFieldName: 'Shape',
      FilterOwnsGeometry: false,
    }),
  }),
);
await scenario('identify', () =>
  call(client, 'Identify', {
    MapDescription: mapDescription,
    MapImageDisplay: display,
    SearchShape: typed('PointN', { X: 294000, Y: 9116000 }),
    Tolerance: 2,
    IdentifyOption: 'geoIdentifyAllLayers',
    LayerIDs: { Int: [3] },
  }),
);
await scenario('mapTile', () => call(client, 'GetMapTile', { MapName: 'Layers', Level: 0, Row: 0, Column: 0 }));
await scenario('legend', () =>
  call(client, 'GetLegendInfo', {
    MapName: 'Layers',
    LayerIDs: { Int: [2] },
    LegendPatch: { Width: 20, Height: 14, ImageDPI: 96 },
    ImageType: { ImageFormat: 'geoImagePNG', ImageReturnType: 'geoImageReturnMimeData' },
  }),
);
await scenario('classes', () =>
  call(client, 'GenerateDataClasses', {
    MapName: 'Layers',
    MapTableDescription: typed('LayerDescription', layerDesc(2)),
    DataClassificationDef: typed('ClassBreaksDef', {
      ClassificationField: 'AREA',
      ClassificationMethod: 'geoClassifyQuantile',
      BreakCount: 3,
    }),
  }),
);
await scenario('fromMapPoints', () =>
  call(client, 'FromMapPoints', {
    MapDescription: mapDescription,
    MapImageDisplay: display,
    MapPoints: typed('MultipointN', {
      HasID: false,
      HasZ: false,
      HasM: false,
      PointArray: { Point: [typed('PointN', { X: 294000, Y: 9116000 })] },
    }),
  }),
);
await scenario('fault', () => call(client, 'GetMapName', { Index: 9 }));
process.stdout.write(JSON.stringify(results));

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeRenderer, fakeService, lods } from '../../../../test/map-tiles.js';
import { putOlindaMap } from '../../../../test/map-fixture.js';
import { siteRequest, testSite, type TestSite } from '../../../../test/site.js';
import { mapCacheRoutes } from '../../map/cache-routes.js';
import { mapServicesOf } from '../../map/service.js';
import { setPeerAddress } from '../../site.js';
import type { MapService } from '../../map/model.js';
import { createMapTileCache, type MapTileCache } from '../../map/tile-cache.js';
import { METERS_PER_INCH } from '../display.js';
import type { SoapArgs, SoapContext, SoapHandler, SoapObject, SoapValue } from '../operation.js';
import { encodeResponse } from '../codec.js';
import { soapRoutes } from '../endpoint.js';
import { GEO_SOAP_NS, SOAP11_ENV_NS } from '../envelope.js';
import { operationSignature } from '../signatures.js';
import { cacheHandlersWith } from './cache.js';

let site: TestSite;
let tiles: MapTileCache;
let calls: ReturnType<typeof fakeRenderer>['calls'];
let handlers: Record<string, SoapHandler>;
let service: MapService;

beforeAll(async () => {
  site = await testSite();
  const r = fakeRenderer();
  calls = r.calls;
  tiles = createMapTileCache({ render: r.render });
  handlers = cacheHandlersWith(() => tiles);
  service = fakeService(mkdtempSync(join(tmpdir(), 'rf-cache-ops-')), { folder: 'Maps', serviceName: 'olinda', name: 'Maps/olinda' });
});

const ctxOf = (s: MapService): SoapContext => ({
  deps: site,
  service: s,
  request: new Request('https://gis.example/server/services/Maps/olinda/MapServer', { method: 'POST' }),
  signal: new AbortController().signal,
  endpoint: 'https://gis.example/server/services/Maps/olinda/MapServer',
  origin: 'https://gis.example',
});

async function call(op: string, args: SoapArgs, s: MapService = service): Promise<SoapValue> {
  const h = handlers[op];
  if (!h) throw new Error(`no handler ${op}`);
  return (await h(ctxOf(s), args))['Result'];
}

const failure = (op: string, args: SoapArgs, s?: MapService): Promise<unknown> =>
  call(op, args, s).then(
    () => undefined,
    (e: unknown) => e,
  );

describe('cache operations', () => {
  it('implements the twelve cache operations', () => {
    expect(Object.keys(handlers).sort()).toEqual(
      [
        'GetCacheControlInfo',
        'GetCacheDescriptionInfo',
        'GetCacheName',
        'GetCacheStorageInfo',
        'GetLayerTile',
        'GetMapTile',
        'GetTileCacheInfo',
        'GetTileImageInfo',
        'GetVirtualCacheDirectory',
        'HasLayerCache',
        'HasSingleFusedMapCache',
        'IsFixedScaleMap',
      ].sort(),
    );
  });

  it('a map with a tiling scheme is fixed-scale with a single fused cache and a cache per layer', async () => {
    expect(await call('IsFixedScaleMap', { MapName: 'Layers' })).toBe(true);
    expect(await call('HasSingleFusedMapCache', { MapName: 'Layers' })).toBe(true);
    expect(await call('HasLayerCache', { MapName: 'Layers', LayerID: 0 })).toBe(true);
    expect(await call('HasLayerCache', { MapName: 'Layers', LayerID: 2 })).toBe(false); // a standalone table
    expect(await failure('HasLayerCache', { MapName: 'Layers', LayerID: 5 })).toMatchObject({ code: 'NOT_FOUND', path: 'LayerID' });
    const dynamic = fakeService(mkdtempSync(join(tmpdir(), 'rf-cache-ops-')), { scheme: { lods: [] } });
    expect(await call('IsFixedScaleMap', { MapName: 'Layers' }, dynamic)).toBe(false);
    expect(await call('HasLayerCache', { MapName: 'Layers', LayerID: 0 }, dynamic)).toBe(false);
    expect(await failure('GetTileCacheInfo', { MapName: 'Layers' }, dynamic)).toMatchObject({
      code: 'NOT_FOUND',
      message: "Map 'Layers' has no tile cache.",
    });
  });

  it('unknown map names are NOT_FOUND naming MapName', async () => {
    for (const op of Object.keys(handlers)) {
      expect(await failure(op, { MapName: 'Nope', LayerID: 0, Level: 0, Row: 0, Column: 0 }), op).toMatchObject({
        code: 'NOT_FOUND',
        path: 'MapName',
      });
    }
  });

  it('GetTileCacheInfo: SR, origin, tile size, DPI and LODs of the scheme (PreciseDPI only when fractional)', async () => {
    const info = (await call('GetTileCacheInfo', { MapName: 'Layers' })) as SoapObject;
    expect(info).toMatchObject({
      $type: 'TileCacheInfo',
      SpatialReference: { $type: 'ProjectedCoordinateSystem', WKID: 32725 },
      TileOrigin: { $type: 'PointN', X: 1000, Y: 9000 },
      TileCols: 16,
      TileRows: 16,
      DPI: 96,
    });
    expect(info['PreciseDPI']).toBeUndefined();
    const l = info['LODInfos'] as SoapObject[];
    expect(l.map((x) => x['LevelID'])).toEqual([0, 1, 2, 3]);
    for (const x of l) {
      expect(x['$type']).toBe('LODInfo');
      expect(x['Scale'] as number).toBeCloseTo(((x['Resolution'] as number) * 1 * 96) / METERS_PER_INCH, 6);
    }
    const precise = fakeService(mkdtempSync(join(tmpdir(), 'rf-cache-ops-')), { scheme: { dpi: 90.7, lods: lods(2) } });
    expect(await call('GetTileCacheInfo', { MapName: 'Layers' }, precise)).toMatchObject({ DPI: 91, PreciseDPI: 90.7 });
  });

  it('GetMapTile returns the tile bytes (drawn once, then from the cache) and honours Format', async () => {
    const png = (await call('GetMapTile', { MapName: 'Layers', Level: 2, Row: 1, Column: 3 })) as Uint8Array;
    expect(png).toBeInstanceOf(Uint8Array);
    const decoded = PNG.sync.read(Buffer.from(png));
    expect([decoded.width, decoded.height]).toEqual([16, 16]);
    expect([...decoded.data.subarray(0, 4)]).toEqual([2 * 40 + 7, 10, 30, 255]);
    const again = (await call('GetMapTile', { MapName: 'Layers', Level: 2, Row: 1, Column: 3 })) as Uint8Array;
    expect(again).toEqual(png);
    expect(calls.filter((c) => c.level === 2 && c.row === 1 && c.col === 3)).toHaveLength(1);
    const jpeg = (await call('GetMapTile', { MapName: 'Layers', Level: 2, Row: 1, Column: 3, Format: 'jpg' })) as Uint8Array;
    expect([jpeg[0], jpeg[1]]).toEqual([0xff, 0xd8]);
    const png8 = (await call('GetMapTile', { MapName: 'Layers', Level: 2, Row: 1, Column: 3, Format: 'PNG8' })) as Uint8Array;
    expect(png8[25]).toBe(3);
    expect(await failure('GetMapTile', { MapName: 'Layers', Level: 2, Row: 1, Column: 3, Format: 'gif' })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'Format',
    });
  });

  it('tiles outside the scheme fault "Tile not found."', async () => {
    for (const [Level, Row, Column] of [
      [4, 0, 0],
      [0, 5, 0],
      [0, 0, -1],
      [-1, 0, 0],
    ]) {
      expect(await failure('GetMapTile', { MapName: 'Layers', Level, Row, Column })).toMatchObject({
        code: 'NOT_FOUND',
        message: 'Tile not found.',
      });
      expect(await failure('GetLayerTile', { MapName: 'Layers', LayerID: 0, Level, Row, Column })).toMatchObject({
        code: 'NOT_FOUND',
        message: 'Tile not found.',
      });
    }
  });

  it('GetLayerTile draws one layer; unknown layers and tables fault', async () => {
    const bytes = (await call('GetLayerTile', { MapName: 'Layers', LayerID: 1, Level: 0, Row: 0, Column: 0 })) as Uint8Array;
    expect([...PNG.sync.read(Buffer.from(bytes)).data.subarray(0, 1)]).toEqual([1]);
    expect(calls.at(-1)).toMatchObject({ layerId: 1, level: 0 });
    expect(await failure('GetLayerTile', { MapName: 'Layers', LayerID: 9, Level: 0, Row: 0, Column: 0 })).toMatchObject({
      code: 'NOT_FOUND',
      message: "Layer 9 does not exist in map 'Layers'.",
    });
    expect(await failure('GetLayerTile', { MapName: 'Layers', LayerID: 2, Level: 0, Row: 0, Column: 0 })).toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('cache names and virtual directories: _alllayers for -1, the layer id for a layer', async () => {
    expect(await call('GetCacheName', { MapName: 'Layers', LayerID: -1 })).toBe('_alllayers');
    expect(await call('GetCacheName', { MapName: 'Layers', LayerID: 1 })).toBe('1');
    expect(await call('GetVirtualCacheDirectory', { MapName: 'Layers', LayerID: -1 })).toBe(
      'https://gis.example/server/rest/directories/cache/Maps_olinda/Layers/_alllayers',
    );
    expect(await call('GetVirtualCacheDirectory', { MapName: 'Layers', LayerID: 0 })).toBe(
      'https://gis.example/server/rest/directories/cache/Maps_olinda/Layers/0',
    );
    expect(await failure('GetVirtualCacheDirectory', { MapName: 'Layers', LayerID: 7 })).toMatchObject({
      code: 'NOT_FOUND',
      path: 'LayerID',
    });
  });

  it('image, control, description and storage infos', async () => {
    expect(await call('GetTileImageInfo', { MapName: 'Layers' })).toEqual({
      $type: 'TileImageInfo',
      CacheTileFormat: 'PNG',
      CompressionQuality: 75,
      Antialiasing: 'true',
      BandCount: 4,
    });
    expect(await call('GetCacheControlInfo', { MapName: 'Layers' })).toEqual({ $type: 'CacheControlInfo', ClientCachingAllowed: true });
    const d = (await call('GetCacheDescriptionInfo', { MapName: 'Layers' })) as SoapObject;
    expect(d).toMatchObject({
      $type: 'CacheDescriptionInfo',
      TileCacheInfo: { $type: 'TileCacheInfo', TileCols: 16 },
      TileImageInfo: { CacheTileFormat: 'PNG' },
      LayerCacheInfos: [
        { $type: 'LayerCacheInfo', LayerID: 0, HasCache: true },
        { $type: 'LayerCacheInfo', LayerID: 1, HasCache: true },
      ],
      CacheControlInfo: { ClientCachingAllowed: true },
      ServiceType: 'geoSingleFusedMapCache',
    });
    expect(await call('GetCacheStorageInfo', { MapName: 'Layers' })).toEqual({
      $type: 'CacheStorageInfo',
      StorageFormat: 'geoMapCacheStorageModeExploded',
      PacketSize: 0,
    });
    const jpeg = fakeService(mkdtempSync(join(tmpdir(), 'rf-cache-ops-')), {
      scheme: { format: 'JPEG', quality: 60, clientCachingAllowed: false },
    });
    expect(await call('GetTileImageInfo', { MapName: 'Layers' }, jpeg)).toMatchObject({
      CacheTileFormat: 'JPEG',
      CompressionQuality: 60,
      BandCount: 3,
    });
    expect(await call('GetCacheControlInfo', { MapName: 'Layers' }, jpeg)).toMatchObject({ ClientCachingAllowed: false });
  });

  it('every answer fits the schema (the response encoder takes it) and reads as the §5.5 example', async () => {
    const args: SoapArgs = { MapName: 'Layers', LayerID: 0, Level: 0, Row: 0, Column: 0 };
    for (const op of Object.keys(handlers)) {
      const sig = operationSignature(op);
      expect(sig, op).toBeDefined();
      const res = await handlers[op]!(ctxOf(service), args);
      expect(() => encodeResponse(sig!, res), op).not.toThrow();
    }
    const xml = encodeResponse(operationSignature('GetTileCacheInfo')!, await handlers['GetTileCacheInfo']!(ctxOf(service), args)).xml;
    expect(xml).toMatch(
      /^<Result xsi:type="tns:TileCacheInfo"><SpatialReference xsi:type="tns:ProjectedCoordinateSystem">.*<\/SpatialReference><TileOrigin xsi:type="tns:PointN"><X>1000<\/X><Y>9000<\/Y><\/TileOrigin><TileCols>16<\/TileCols><TileRows>16<\/TileRows><DPI>96<\/DPI><LODInfos xsi:type="tns:ArrayOfLODInfo"><LODInfo xsi:type="tns:LODInfo"><LevelID>0<\/LevelID><Scale>[\d.]+<\/Scale><Resolution>32<\/Resolution><\/LODInfo>/,
    );
    const tile = encodeResponse(operationSignature('GetMapTile')!, await handlers['GetMapTile']!(ctxOf(service), args)).xml;
    const b64 = /^<Result>([A-Za-z0-9+/=]+)<\/Result>$/.exec(tile)?.[1];
    expect(b64).toBeDefined();
    expect(PNG.sync.read(Buffer.from(b64!, 'base64')).width).toBe(16);
  });
});

describe('cache operations through the SOAP endpoint on the fixture map', () => {
  const envelope = (op: string, inner: string): string =>
    `<?xml version="1.0" encoding="utf-8"?><soapenv:Envelope xmlns:soapenv="${SOAP11_ENV_NS}" xmlns:g="${GEO_SOAP_NS}"><soapenv:Body><g:${op}>${inner}</g:${op}></soapenv:Body></soapenv:Envelope>`;

  it('GetMapTile answers the tile the virtual cache directory serves; a tile outside the cache is a Client fault', async () => {
    const s = await testSite();
    await putOlindaMap(s);
    const soap = soapRoutes(s)[0]!.handler;
    const post = (body: string): Promise<Response> =>
      soap(
        setPeerAddress(
          new Request('https://localhost/server/services/olinda/MapServer', {
            method: 'POST',
            headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""', referer: 'http://test' },
            body,
          }),
          '127.0.0.1',
        ),
      );
    const res = await post(envelope('GetMapTile', '<MapName>Layers</MapName><Level>0</Level><Row>0</Row><Column>0</Column>'));
    const body = await res.text();
    expect(res.status, body).toBe(200);
    const b64 = /<Result>([A-Za-z0-9+/=]+)<\/Result>/.exec(body)?.[1];
    expect(b64).toBeDefined();
    const tile = new Uint8Array(Buffer.from(b64!, 'base64'));
    expect(PNG.sync.read(Buffer.from(tile)).width).toBe(256);
    const route = mapCacheRoutes(s)[0]!.handler;
    const served = await route(siteRequest('/server/rest/directories/cache/olinda/Layers/_alllayers/L00/R00000000/C00000000.png'));
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(tile);

    const fault = await post(envelope('GetMapTile', '<MapName>Layers</MapName><Level>0</Level><Row>0</Row><Column>5</Column>'));
    expect(fault.status).toBe(500);
    const text = await fault.text();
    expect(text).toContain('<faultcode>soap:Client</faultcode>');
    expect(text).toContain('<faultstring>Tile not found.</faultstring>');
    expect(text).toContain('<Details>Level=0 Row=0 Column=5</Details>');

    const info = await (await post(envelope('GetTileCacheInfo', '<MapName>Layers</MapName>'))).text();
    expect(info, info).toMatch(
      /<Result xsi:type="tns:TileCacheInfo"><SpatialReference xsi:type="tns:ProjectedCoordinateSystem"><WKID>\d+<\/WKID>.*<LODInfo xsi:type="tns:LODInfo"><LevelID>0<\/LevelID>/,
    );
    await mapServicesOf(s).close();
  }, 60_000);
});

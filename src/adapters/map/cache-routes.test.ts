import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putOlindaMap } from '../../../test/map-fixture.js';
import { fakeRenderer, fakeService } from '../../../test/map-tiles.js';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { imageServicesOf } from '../image/service.js';
import { etagOf } from '../image/tile-cache.js';
import type { Route } from '../rest.js';
import { METERS_PER_INCH } from './view.js';
import { cacheHandlers } from '../soap/ops/cache.js';
import { CACHE_DIRECTORY_ROOT, mapCacheRoutes } from './cache-routes.js';
import { drawMap } from './draw.js';
import type { MapService } from './model.js';
import { mapServicesOf } from './service.js';
import {
  cacheTileRange,
  columnFile,
  createMapTileCache,
  encodeTileImage,
  levelFolder,
  rowFolder,
  tileExtent,
  type MapTileCache,
} from './tile-cache.js';

let site: TestSite;
let token: string;
let route: Route;
let tiles: MapTileCache;
let calls: ReturnType<typeof fakeRenderer>['calls'];
const services = new Map<string, MapService>();

beforeAll(async () => {
  site = await testSite();
  await site.addUser('u');
  token = await site.token('u');
  const root = mkdtempSync(join(tmpdir(), 'rf-cache-routes-'));
  const put = async (
    folder: string,
    serviceName: string,
    anonymous: boolean,
    over: Parameters<typeof fakeService>[1] = {},
  ): Promise<void> => {
    await site.store.putService({ folder, serviceName, type: 'MapServer', properties: { anonymous }, created: 0 });
    const name = folder ? `${folder}/${serviceName}` : serviceName;
    services.set(name, fakeService(join(root, name), { folder, serviceName, name, ...over }));
  };
  await put('Maps', 'olinda', false);
  await put('', 'pub', true);
  await put('', 'nocache', true, { scheme: { clientCachingAllowed: false, format: 'JPEG' } });
  const r = fakeRenderer();
  calls = r.calls;
  tiles = createMapTileCache({ render: r.render });
  const routes = mapCacheRoutes(site, {
    maps: { open: (folder, name) => Promise.resolve(services.get(folder ? `${folder}/${name}` : name)) },
    tiles,
  });
  expect(routes.map((x) => [x.method, x.path])).toEqual([['GET', `${CACHE_DIRECTORY_ROOT}/*`]]);
  route = routes[0]!;
});

afterAll(async () => {
  await site.store.close();
});

const get = (path: string, headers: Record<string, string> = {}): Promise<Response> =>
  route.handler(siteRequest(`${CACHE_DIRECTORY_ROOT}/${path}`, { headers }));

describe('virtual cache directory tiles', () => {
  it('serves a tile of an anonymous service, drawn on demand, with ETag and public caching; 304 on a match', async () => {
    const res = await get('pub/Layers/_alllayers/L01/R00000000/C00000001.png');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('cache-control')).toBe('public, max-age=3600');
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const same = await tiles.tile(services.get('pub')!, { level: 1, row: 0, col: 1 });
    expect(bytes).toEqual(same.bytes);
    expect(same.hit).toBe(true);
    const again = await get('pub/Layers/_alllayers/L01/R00000000/C00000001.png', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(calls.filter((c) => c.level === 1 && c.row === 0 && c.col === 1 && c.layerId === undefined)).toHaveLength(1);
  });

  it('ten parallel requests for a missing tile draw it once and get the same bytes', async () => {
    const path = 'pub/Layers/_alllayers/L03/R00000004/C00000002.png';
    const answers = await Promise.all(Array.from({ length: 10 }, () => get(path)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(new Set(answers.map((a) => a.headers.get('etag'))).size).toBe(1);
    expect(calls.filter((c) => c.level === 3 && c.row === 4 && c.col === 2)).toHaveLength(1);
  });

  it('serves layer caches under the layer id', async () => {
    const res = await get('pub/Layers/1/L00/R00000000/C00000000.png');
    expect(res.status).toBe(200);
    expect(calls.some((c) => c.layerId === 1)).toBe(true);
    expect((await get('pub/Layers/2/L00/R00000000/C00000000.png')).status).toBe(404); // a table
    expect((await get('pub/Layers/7/L00/R00000000/C00000000.png')).status).toBe(404);
    expect((await get('pub/Layers/01/L00/R00000000/C00000000.png')).status).toBe(404);
  });

  it('answers 404 for tiles outside the scheme and for names that are not tiles', async () => {
    for (const path of [
      'pub/Layers/_alllayers/L09/R00000000/C00000000.png', // no such level
      'pub/Layers/_alllayers/L00/R00000002/C00000000.png', // below the full extent
      'pub/Layers/_alllayers/L00/R00000000/C00000000.jpg', // not the cache format
      'pub/Layers/_alllayers/L00/R0/C00000000.png',
      'pub/Other/_alllayers/L00/R00000000/C00000000.png', // another map name
      'pub/Layers/_alllayers/L00/R00000000',
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
    }
    expect((await get('nocache/Layers/_alllayers/L00/R00000000/C00000000.png')).status).toBe(404); // a JPEG cache's tiles are .jpg
  });

  it('follows the cache control of the scheme: no-cache when client caching is not allowed', async () => {
    const res = await get('nocache/Layers/_alllayers/L00/R00000000/C00000000.jpg');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    expect(res.headers.get('cache-control')).toBe('no-cache');
  });

  it("needs a token for a secured service's tiles (and checks it before saying a service does not exist)", async () => {
    const path = 'Maps_olinda/Layers/_alllayers/L00/R00000000/C00000000.png';
    const without = await get(`${path}?f=json`);
    expect(await jsonOf(without)).toMatchObject({ error: { code: 499 } });
    const bad = await get(`${path}?token=nonsense&f=json`);
    expect(await jsonOf(bad)).toMatchObject({ error: { code: 498 } });
    const ok = await get(`${path}?token=${token}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('private, max-age=3600');
    const header = await get(path, { 'x-esri-authorization': `Bearer ${token}` });
    expect(header.status).toBe(200);
    // An unknown cache folder without a token: the same 499 as a secured one.
    expect(await jsonOf(await get('Nope_none/Layers/_alllayers/L00/R00000000/C00000000.png?f=json'))).toMatchObject({
      error: { code: 499 },
    });
    expect((await get(`Nope_none/Layers/_alllayers/L00/R00000000/C00000000.png?token=${token}`)).status).toBe(404);
  });
});

describe('the fixture map, end to end (service registry, drawMap, SOAP operations and the route)', () => {
  it('serves tiles equal to drawMap; a service change gives new tiles and sweeps the old version', async () => {
    const s = await testSite();
    await putOlindaMap(s, { folder: 'Maps' });
    const routes = mapCacheRoutes(s);
    const fetchTile = (path: string): Promise<Response> =>
      routes[0]!.handler(siteRequest(`${CACHE_DIRECTORY_ROOT}/Maps_olinda/Layers/${path}`));
    const v1 = (await mapServicesOf(s).open('Maps', 'olinda'))!;
    const scheme = v1.tiling;
    expect(scheme.cacheDir.startsWith(s.config.dataDir)).toBe(true);
    for (const l of scheme.lods) expect(l.scale).toBeCloseTo((l.resolution * 1 * scheme.dpi) / METERS_PER_INCH, 5);

    // GetVirtualCacheDirectory's URL + the tile path is this route.
    const dir = (
      await cacheHandlers['GetVirtualCacheDirectory']!(
        {
          deps: s,
          service: v1,
          request: siteRequest('/server/services/Maps/olinda/MapServer'),
          signal: new AbortController().signal,
          endpoint: 'https://localhost/server/services/Maps/olinda/MapServer',
          origin: 'https://localhost',
        },
        { MapName: 'Layers', LayerID: -1 },
      )
    )['Result'] as string;
    expect(dir).toBe(`https://localhost${CACHE_DIRECTORY_ROOT}/Maps_olinda/Layers/_alllayers`);

    const level = Math.min(2, scheme.lods.length - 1);
    const range = cacheTileRange(v1, level)!;
    const [row, col] = [range.minRow, range.minCol];
    const name = `${levelFolder(level)}/${rowFolder(row)}/${columnFile(col, 'png')}`;
    const res = await fetchTile(`_alllayers/${name}`);
    expect(res.status).toBe(200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const lod = scheme.lods[level]!;
    const drawn = await drawMap(imageServicesOf(s), v1, {
      extent: tileExtent(scheme, level, row, col)!,
      spatialReference: v1.spatialReference,
      width: scheme.cols,
      height: scheme.rows,
      dpi: scheme.dpi,
      scale: lod.scale,
      resolution: lod.resolution,
    });
    expect(new Uint8Array(PNG.sync.read(Buffer.from(bytes)).data)).toEqual(new Uint8Array(drawn.rgba));
    const file = join(scheme.cacheDir, '_alllayers', ...name.split('/'));
    expect(existsSync(file)).toBe(true);

    // A cache hit is the file on disk: mark it, and the route serves the mark.
    const mark = encodeTileImage(new Uint8Array(scheme.cols * scheme.rows * 4).fill(7), scheme.cols, scheme.rows, 'png', 75, [0, 0, 0]);
    writeFileSync(file, mark.bytes);
    expect(new Uint8Array(await (await fetchTile(`_alllayers/${name}`)).arrayBuffer())).toEqual(mark.bytes);
    // Edit the service: a new version whose tiles are drawn anew (never the old file), the old folder gone.
    await putOlindaMap(s, { folder: 'Maps', properties: { backgroundColor: [10, 20, 30, 255] } });
    const after = await fetchTile(`_alllayers/${name}`);
    expect(after.status).toBe(200);
    const redrawn = new Uint8Array(await after.arrayBuffer());
    expect(redrawn).not.toEqual(mark.bytes);
    expect(after.headers.get('etag')).not.toBe(etagOf(mark.bytes));
    const v2 = (await mapServicesOf(s).open('Maps', 'olinda'))!;
    expect(v2.version).not.toBe(v1.version);
    expect(existsSync(v1.tiling.cacheDir)).toBe(false);
    expect(existsSync(join(v2.tiling.cacheDir, '_alllayers', ...name.split('/')))).toBe(true);
  });
});

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { PNG as PngClass } from 'pngjs';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { proj4Lib, proj4ForEpsg } from '../../core/crs.js';
import { rect } from '../../core/rect.js';
import { bindRequestStatistics } from '../../graph/request-statistics.js';
import { render } from '../../graph/render.js';
import { warpNode } from '../../graph/warp.js';
import { openGeoTiff } from '../../io/geotiff-source.js';
import { createApp } from '../../server/app.js';
import { parseConfig } from '../../server/config.js';
import { siteRoutes } from '../../server/routes.js';
import { planServiceRule } from './render-request.js';
import { imageServicesOf, openImageService } from './service.js';
import { renderSeamless, tileExtent, WEB_MERCATOR_SCHEME } from './tiles.js';

const { PNG } = createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass };

const DEM = `${import.meta.dirname}/../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const L7 = `${import.meta.dirname}/../../../golden/data/L7_ETMs.tif`;
const X0 = 732000;
const Y1 = 4068150;
type Json = Record<string, unknown>;

const TIMES2 = { rasterFunction: 'Arithmetic', rasterFunctionArguments: { Raster: '$$', Raster2: 2, Operation: 3 } };
const HILLSHADE = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } };
const DRA = { rasterFunction: 'Stretch', rasterFunctionArguments: { StretchType: 5, DRA: true, Min: 0, Max: 255 }, outputPixelType: 'U8' };
const CLASSES = {
  rasterFunction: 'Colormap',
  rasterFunctionArguments: {
    Colormap: [
      [1, 255, 0, 0],
      [2, 0, 0, 255],
    ],
    Raster: {
      rasterFunction: 'Remap',
      rasterFunctionArguments: { InputRanges: [0, 600, 600, 2000], OutputValues: [1, 2] },
      outputPixelType: 'U8',
    },
  },
};

let site: TestSite;
let app: ReturnType<typeof createApp>;
let token: string;
let demPixels: Float32Array;

async function addService(name: string, properties: Json, folder = ''): Promise<void> {
  await site.store.putService({ folder, serviceName: name, type: 'ImageServer', properties, created: site.clock.now() });
}

beforeAll(async () => {
  const src = await openGeoTiff(DEM);
  const block = await src.read(rect(0, 0, 383, 407));
  demPixels = block.bands[0] as Float32Array;
  await src.close();
});

beforeEach(async () => {
  site = await testSite();
  await site.addUser('u');
  token = await site.token('u');
  await addService('dem', {
    path: DEM,
    rasterFunctionTemplates: [
      { name: 'Shaded', rule: HILLSHADE },
      { name: 'DRA', rule: DRA },
    ],
    cors: { origins: ['https://a.example'] },
  });
  await addService('public', { path: DEM, anonymous: true, renderingRule: DRA });
  await addService('landsat', { path: L7 }, 'Imagery');
  app = createApp(site, siteRoutes(site));
});

// The site's image services hold their rasters' files open until closed (the server closes them as it stops).
afterEach(() => imageServicesOf(site).close());

function call(
  path: string,
  params: Record<string, string> = {},
  options: { token?: string | null; post?: boolean; headers?: Record<string, string>; method?: string } = {},
) {
  const t = options.token === undefined ? token : options.token;
  const all = { ...params, ...(t ? { token: t } : {}) };
  const qs = new URLSearchParams(all).toString();
  const req = options.post
    ? siteRequest(path, { form: all, ...(options.headers ? { headers: options.headers } : {}) })
    : siteRequest(`${path}${qs ? `?${qs}` : ''}`, {
        ...(options.headers ? { headers: options.headers } : {}),
        ...(options.method ? { method: options.method } : {}),
      });
  return app.fetch(req) as Promise<Response>;
}
const S = '/server/rest/services';
const jcall = async (path: string, params: Record<string, string> = {}, options: Parameters<typeof call>[2] = {}) =>
  jsonOf<Json>(await call(path, { f: 'json', ...params }, options));
const demAt = (col: number, row: number): number => demPixels[row * 383 + col]!;
const fmt = (v: number): string => {
  for (let p = 1; p <= 9; p++) if (Math.fround(Number(v.toPrecision(p))) === v) return String(Number(v.toPrecision(p)));
  return String(v);
};
const fromUtm = (x: number, y: number, epsg: number): [number, number] =>
  proj4Lib()(proj4ForEpsg(32616)!, proj4ForEpsg(epsg)!).forward([x, y]) as [number, number];

// ---------------------------------------------------------------------------------------------

describe('identify', () => {
  const url = `${S}/dem/ImageServer/identify`;

  it('answers the pixel value at an x,y point of the service SR, with the vendor fields and the catalog item', async () => {
    const [col, row] = [100, 200];
    const x = X0 + col * 75 + 10;
    const y = Y1 - row * 75 - 10;
    const j = await jcall(url, { geometry: `${x},${y}`, geometryType: 'esriGeometryPoint' });
    expect(j).toMatchObject({
      objectId: 0,
      name: 'Pixel',
      value: fmt(demAt(col, row)),
      location: { x, y, spatialReference: { wkid: 32616 } },
    });
    expect(j['properties']).toEqual({ Values: [fmt(demAt(col, row))] });
    expect(j['catalogItemVisibilities']).toEqual([1]);
    const items = j['catalogItems'] as Json;
    expect(items).toMatchObject({ objectIdFieldName: 'OBJECTID', geometryType: 'esriGeometryPolygon', spatialReference: { wkid: 32616 } });
    const f = (items['features'] as Json[])[0]!;
    expect(f['attributes']).toMatchObject({ OBJECTID: 1, Name: 'dem', Category: 1, LowPS: 75, MinPS: 0, Shape_Area: 28725 * 30525 });
    expect((f['geometry'] as Json)['rings']).toEqual([
      [
        [732000, 4068150],
        [760725, 4068150],
        [760725, 4037625],
        [732000, 4037625],
        [732000, 4068150],
      ],
    ]);
  });

  it('takes an Esri JSON point in another SR (its own spatialReference, or sr), and the geo spelling of the type', async () => {
    const [col, row] = [250, 60];
    const [lon, lat] = fromUtm(X0 + col * 75 + 37.5, Y1 - row * 75 - 37.5, 4326);
    const j = await jcall(url, {
      geometry: JSON.stringify({ x: lon, y: lat, spatialReference: { wkid: 4326 } }),
      geometryType: 'geoGeometryPoint',
    });
    expect(j['value']).toBe(fmt(demAt(col, row)));
    expect(j['location']).toEqual({ x: lon, y: lat, spatialReference: { wkid: 4326, latestWkid: 4326 } });
    const [mx, my] = fromUtm(X0 + col * 75 + 37.5, Y1 - row * 75 - 37.5, 3857);
    const k = await jcall(url, { geometry: JSON.stringify({ x: mx, y: my }), sr: '102100' });
    expect(k['value']).toBe(fmt(demAt(col, row)));
    expect((k['location'] as Json)['spatialReference']).toEqual({ wkid: 102100, latestWkid: 3857 });
  });

  it('answers values after the renderingRule', async () => {
    const j = await jcall(url, { geometry: `${X0 + 5 * 75 + 1},${Y1 - 7 * 75 - 1}`, renderingRule: JSON.stringify(TIMES2) });
    expect(j['value']).toBe(fmt(Math.fround(2 * demAt(5, 7))));
    const h = await jcall(url, { geometry: `${X0 + 50 * 75 + 1},${Y1 - 70 * 75 - 1}`, renderingRule: 'Shaded' });
    expect(Number(h['value'])).toBeGreaterThanOrEqual(0);
    expect(Number(h['value'])).toBeLessThanOrEqual(255);
    expect(Number.isInteger(Number(h['value']))).toBe(true);
  });

  it('outside the extent: NoData, no catalog item', async () => {
    const j = await jcall(url, { geometry: `${X0 - 100},${Y1}` });
    expect(j['value']).toBe('NoData');
    expect((j['catalogItems'] as Json)['features']).toEqual([]);
    expect(j['catalogItemVisibilities']).toEqual([]);
  });

  it('returnCatalogItems=false and returnGeometry=false', async () => {
    const g = `${X0 + 1000},${Y1 - 1000}`;
    const j = await jcall(url, { geometry: g, returnCatalogItems: 'false' });
    expect(j['catalogItems']).toBeNull();
    expect(j['properties']).toBeNull();
    expect(j['catalogItemVisibilities']).toEqual([]);
    const k = await jcall(url, { geometry: g, returnGeometry: 'false' });
    expect(((k['catalogItems'] as Json)['features'] as Json[])[0]!['geometry']).toBeUndefined();
  });

  it('pixelSize: the native size gives the pixel itself; a coarser one reads a coarser grid; bad ones are refused', async () => {
    const g = `${X0 + 200 * 75 + 30},${Y1 - 300 * 75 - 30}`;
    const a = await jcall(url, { geometry: g, pixelSize: '{"x":75,"y":75}' });
    expect(a['value']).toBe(fmt(demAt(200, 300)));
    const coarse = await jcall(url, { geometry: g, pixelSize: '600,600' });
    expect(Number(coarse['value'])).toBeGreaterThan(200);
    // 8x coarser cells: the value is one of the raster's pixels inside that 8x8 block
    const block: string[] = [];
    for (let r = 296; r < 304; r++) for (let c = 200; c < 208; c++) block.push(fmt(demAt(c, r)));
    expect(block).toContain(coarse['value']);
    const bad = await jcall(url, { geometry: g, pixelSize: '0,1' });
    expect((bad['error'] as Json)['code']).toBe(400);
  });

  it('refuses bad geometries, types and mosaic rules; POST works; tokens are required', async () => {
    expect(((await jcall(url, { geometry: 'a,b' }))['error'] as Json)['code']).toBe(400);
    expect(((await jcall(url, {}))['error'] as Json)['code']).toBe(400);
    expect(((await jcall(url, { geometry: '1,2', geometryType: 'esriGeometryPolygon' }))['error'] as Json)['code']).toBe(400);
    expect(((await jcall(url, { geometry: '1,2', mosaicRule: '{bad' }))['error'] as Json)['code']).toBe(400);
    expect((await jcall(url, { geometry: `${X0 + 1},${Y1 - 1}`, mosaicRule: '{"mosaicMethod":"esriMosaicNone"}' }))['value']).toBe(
      fmt(demAt(0, 0)),
    );
    const post = await jsonOf<Json>(await call(url, { f: 'json', geometry: `${X0 + 1},${Y1 - 1}` }, { post: true }));
    expect(post['value']).toBe(fmt(demAt(0, 0)));
    expect(((await jcall(url, { geometry: '1,2' }, { token: null }))['error'] as Json)['code']).toBe(499);
    expect(
      (await jcall(`${S}/public/ImageServer/identify`, { geometry: `${X0 + 1},${Y1 - 1}`, renderingRule: 'None' }, { token: null }))[
        'value'
      ],
    ).toBe(fmt(demAt(0, 0)));
  });
});

// ---------------------------------------------------------------------------------------------

describe('computeHistograms / computeStatisticsHistograms', () => {
  const golden = JSON.parse(readFileSync(new URL('../../../golden/image-service/histograms.json', import.meta.url), 'utf8')) as Record<
    string,
    Json
  >;
  type G = { count: number; min: number; max: number; mean: number; standardDeviation: number; histogram: { counts: number[] } };
  const check = (j: Json, g: G) => {
    const s = (j['statistics'] as Json[])[0]!;
    expect(s['count']).toBe(g.count);
    expect(s['min']).toBe(g.min);
    expect(s['max']).toBe(g.max);
    expect(Math.abs((s['mean'] as number) - g.mean)).toBeLessThan(1e-9 * g.mean);
    expect(Math.abs((s['standardDeviation'] as number) - g.standardDeviation)).toBeLessThan(1e-7 * g.standardDeviation);
    const h = (j['histograms'] as Json[])[0]!;
    expect(h).toMatchObject({ size: 256, min: g.min, max: g.max });
    const counts = h['counts'] as number[];
    // bin edges in float64 on both sides: at most a value or two may sit on the other side of an edge
    const off = counts.reduce((a, c, i) => a + Math.abs(c - g.histogram.counts[i]!), 0);
    expect(off).toBeLessThanOrEqual(4);
    expect(counts.reduce((a, c) => a + c, 0)).toBe(g.count);
  };

  it('an envelope in EPSG:4326 equals GDAL rasterize + numpy', async () => {
    const g = golden['envelope4326'] as Json;
    const geometry = { ...(g['geometry'] as Json), spatialReference: { wkid: 4326 } };
    const j = await jcall(`${S}/dem/ImageServer/computeStatisticsHistograms`, {
      geometry: JSON.stringify(geometry),
      geometryType: 'esriGeometryEnvelope',
    });
    check(j, g as unknown as G);
  });

  it('a polygon with a hole in the raster SR equals GDAL rasterize + numpy; computeHistograms has only histograms', async () => {
    const g = golden['polygonUtm'] as Json;
    const j = await jcall(`${S}/dem/ImageServer/computeStatisticsHistograms`, {
      geometry: JSON.stringify(g['geometry']),
      geometryType: 'esriGeometryPolygon',
    });
    check(j, g as unknown as G);
    const h = await jcall(`${S}/dem/ImageServer/computeHistograms`, {
      geometry: JSON.stringify(g['geometry']),
      geometryType: 'esriGeometryPolygon',
    });
    expect(Object.keys(h)).toEqual(['histograms']);
    expect(h['histograms']).toEqual(j['histograms']);
  });

  it('geometry SR from sr when the geometry has none; pixelSize reads a coarser grid', async () => {
    const [x0, y0] = fromUtm(740000, 4045000, 3857);
    const [x1, y1] = fromUtm(750000, 4060000, 3857);
    const env = { xmin: Math.min(x0, x1), ymin: Math.min(y0, y1), xmax: Math.max(x0, x1), ymax: Math.max(y0, y1) };
    const a = await jcall(`${S}/dem/ImageServer/computeStatisticsHistograms`, { geometry: JSON.stringify(env), sr: '3857' });
    const n = ((a['statistics'] as Json[])[0]!['count'] as number) / 1;
    expect(n).toBeGreaterThan(20000);
    const b = await jcall(`${S}/dem/ImageServer/computeStatisticsHistograms`, {
      geometry: JSON.stringify(env),
      sr: '3857',
      pixelSize: '{"x":150,"y":150}',
    });
    const m = (b['statistics'] as Json[])[0]!['count'] as number;
    expect(Math.abs(m * 4 - n) / n).toBeLessThan(0.03);
  });

  it('renderingRule applies before the statistics; outside the raster gives count 0', async () => {
    const g = golden['polygonUtm'] as Json;
    const j = await jcall(`${S}/dem/ImageServer/computeStatisticsHistograms`, {
      geometry: JSON.stringify(g['geometry']),
      renderingRule: JSON.stringify(TIMES2),
    });
    const s = (j['statistics'] as Json[])[0]!;
    expect(s['min']).toBe(2 * (g['min'] as number));
    expect(s['max']).toBe(2 * (g['max'] as number));
    const out = await jcall(`${S}/dem/ImageServer/computeHistograms`, { geometry: '0,0,10,10', geometryType: 'esriGeometryEnvelope' });
    expect(out['histograms']).toEqual([{ size: 0, min: 0, max: 0, counts: [] }]);
  });

  it('POST, a valid mosaicRule, and the geometry type inferred from the geometry', async () => {
    const g = golden['polygonUtm'] as Json;
    const res = await call(
      `${S}/dem/ImageServer/computeStatisticsHistograms`,
      { f: 'json', geometry: JSON.stringify(g['geometry']), mosaicRule: '{"mosaicMethod":"esriMosaicNone"}' },
      { post: true },
    );
    const j = await jsonOf<Json>(res);
    expect((j['statistics'] as Json[])[0]!['count']).toBe(g['count']);
  });

  it('refuses points, missing geometries, bad mosaic rules, too large areas', async () => {
    const u = `${S}/dem/ImageServer/computeHistograms`;
    expect(((await jcall(u, { geometry: '1,2', geometryType: 'esriGeometryPoint' }))['error'] as Json)['code']).toBe(400);
    expect(((await jcall(u, {}))['error'] as Json)['code']).toBe(400);
    expect(((await jcall(u, { geometry: '732000,4037625,760725,4068150', mosaicRule: '[1]' }))['error'] as Json)['code']).toBe(400);
    await addService('small', { path: DEM, maxImageWidth: 100, maxImageHeight: 100 });
    const big = await jcall(`${S}/small/ImageServer/computeHistograms`, { geometry: '732000,4037625,760725,4068150' });
    expect(((big['error'] as Json)['details'] as string[])[0]).toMatch(/maximum of 100x100/);
  });
});

// ---------------------------------------------------------------------------------------------

describe('legend', () => {
  const png = (b64: string) => PNG.sync.read(Buffer.from(b64, 'base64'));

  it('a stretched ramp from the service statistics when no colormap applies', async () => {
    const j = await jcall(`${S}/dem/ImageServer/legend`);
    const layer = (j['layers'] as Json[])[0]!;
    expect(layer).toMatchObject({ layerId: 0, layerName: 'dem', legendType: 'Stretched' });
    const entries = layer['legend'] as Json[];
    expect(entries.map((e) => e['label'])).toEqual([expect.stringMatching(/^High : 1074\.3/), expect.stringMatching(/^Low : 236\.4/)]);
    expect(entries[0]).toMatchObject({ contentType: 'image/png', width: 20, height: 20 });
    expect(png(entries[0]!['imageData'] as string).width).toBe(20);
  });

  it('one swatch per class of a rule ending in a Colormap', async () => {
    const j = await jcall(`${S}/dem/ImageServer/legend`, { renderingRule: JSON.stringify(CLASSES) });
    const layer = (j['layers'] as Json[])[0]!;
    expect(layer['legendType']).toBe('Unique Values');
    const entries = layer['legend'] as Json[];
    expect(entries.map((e) => [e['label'], e['values']])).toEqual([
      ['1', [1]],
      ['2', [2]],
    ]);
    expect([...png(entries[1]!['imageData'] as string).data.subarray(0, 4)]).toEqual([0, 0, 255, 255]);
  });

  it('RGB composite entries follow bandIds; bad bandIds are refused', async () => {
    const j = await jcall(`${S}/Imagery/landsat/ImageServer/legend`, { bandIds: '3,2,1' });
    const entries = (j['layers'] as Json[])[0]!['legend'] as Json[];
    expect(entries.map((e) => (e['label'] as string).split(':')[0])).toEqual(['Red', 'Green', 'Blue']);
    expect(entries[0]!['label']).toMatch(/^Red: .*4/);
    const one = await jcall(`${S}/Imagery/landsat/ImageServer/legend`, { bandIds: '[4]' });
    expect(((one['layers'] as Json[])[0]!['legend'] as Json[]).map((e) => (e['label'] as string).split(' ')[0])).toEqual(['High', 'Low']);
    expect(((await jcall(`${S}/Imagery/landsat/ImageServer/legend`, { bandIds: '9' }))['error'] as Json)['code']).toBe(400);
  });
});

// ---------------------------------------------------------------------------------------------

/** The Web Mercator tiles of `level` covering the DEM. */
function demTiles(level: number) {
  const [x0, y0] = fromUtm(X0, Y1 - 30525, 3857);
  const [x1, y1] = fromUtm(X0 + 28725, Y1, 3857);
  const lod = WEB_MERCATOR_SCHEME.lods[level]!;
  const w = lod.resolution * 256;
  const o = WEB_MERCATOR_SCHEME.origin;
  return {
    minCol: Math.floor((Math.min(x0, x1) - o.x) / w),
    maxCol: Math.floor((Math.max(x0, x1) - o.x) / w),
    minRow: Math.floor((o.y - Math.max(y0, y1)) / w),
    maxRow: Math.floor((o.y - Math.min(y0, y1)) / w),
  };
}

describe('tiles', () => {
  it('the service resource advertises a fused Web Mercator cache', async () => {
    const j = await jcall(`${S}/dem/ImageServer`);
    expect(j['singleFusedMapCache']).toBe(true);
    const ti = j['tileInfo'] as Json;
    expect(ti).toMatchObject({ rows: 256, cols: 256, dpi: 96, format: 'PNG', spatialReference: { wkid: 102100, latestWkid: 3857 } });
    expect((ti['lods'] as Json[])[12]).toEqual({ level: 12, resolution: 38.21851414253662, scale: 144447.638572 });
  });

  it('renders, caches on disk, validates with ETag and answers 304', async () => {
    const t = demTiles(12);
    const path = `${S}/dem/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`;
    const a = await call(path);
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('image/png');
    expect(a.headers.get('cache-control')).toBe('private, max-age=3600');
    const etag = a.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const img = PNG.sync.read(Buffer.from(await a.arrayBuffer()));
    expect([img.width, img.height]).toEqual([256, 256]);
    let opaque = 0;
    const greys = new Set<number>();
    for (let i = 0; i < img.data.length; i += 4)
      if (img.data[i + 3] === 255) {
        opaque++;
        greys.add(img.data[i]!);
      }
    expect(opaque).toBeGreaterThan(256 * 200);
    expect(greys.size).toBeGreaterThan(30);
    const root = join(site.config.dataDir, 'tile-cache', 'dem.ImageServer');
    const gens = readdirSync(root);
    expect(gens).toHaveLength(1);
    expect(existsSync(join(root, gens[0]!, '12', String(t.minRow + 1), `${t.minCol + 1}.png`))).toBe(true);
    const b = await call(path);
    expect(b.headers.get('etag')).toBe(etag);
    const c = await call(path, {}, { headers: { 'if-none-match': etag } });
    expect(c.status).toBe(304);
    expect(await c.text()).toBe('');
    const d = await call(path, {}, { headers: { 'if-none-match': '"other"' } });
    expect(d.status).toBe(200);
  });

  it('an edit of the service changes the tiles and ETags and deletes the stale cache; deletion drops it', async () => {
    const t = demTiles(11);
    const path = `${S}/dem/ImageServer/tile/11/${t.minRow}/${t.minCol}`;
    const before = await call(path);
    const etag = before.headers.get('etag');
    const bytes = new Uint8Array(await before.arrayBuffer());
    const rec = (await site.store.getService('dem.ImageServer'))!;
    await site.store.putService({ ...rec, properties: { ...rec.properties, renderingRule: HILLSHADE } });
    const after = await call(path);
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(etag);
    expect(Buffer.from(await after.arrayBuffer()).equals(Buffer.from(bytes))).toBe(false);
    const root = join(site.config.dataDir, 'tile-cache', 'dem.ImageServer');
    expect(readdirSync(root)).toHaveLength(1);
    expect((await call(path, {}, { headers: { 'if-none-match': etag! } })).status).toBe(200);
    await site.store.deleteService('dem.ImageServer');
    await call(path);
    expect(existsSync(root)).toBe(false);
  });

  it('tileFormat jpgpng: JPEG where every pixel is drawn, PNG at the raster edge; tileMaxAge sets Cache-Control; bad settings refused', async () => {
    await addService('jp', { path: DEM, tileFormat: 'jpgpng', tileMaxAge: 60, renderingRule: DRA });
    const j = await jcall(`${S}/jp/ImageServer`);
    expect((j['tileInfo'] as Json)['format']).toBe('MIXED');
    const t = demTiles(12);
    const inner = await call(`${S}/jp/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`);
    expect(inner.headers.get('content-type')).toBe('image/jpeg');
    expect(inner.headers.get('cache-control')).toBe('private, max-age=60');
    const bytes = new Uint8Array(await inner.arrayBuffer());
    expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8]);
    const edge = await call(`${S}/jp/ImageServer/tile/12/${t.minRow}/${t.minCol}`);
    expect(edge.headers.get('content-type')).toBe('image/png');
    const again = await call(
      `${S}/jp/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`,
      {},
      { headers: { 'if-none-match': inner.headers.get('etag')! } },
    );
    expect(again.status).toBe(304);
    await addService('badfmt', { path: DEM, tileFormat: 'gif' });
    const bad = await jsonOf<Json>(await call(`${S}/badfmt/ImageServer/tile/12/${t.minRow}/${t.minCol}`, { f: 'json' }));
    expect((bad['error'] as Json)['code']).toBe(400);
  });

  it('clients asking for the same missing tile at once share one render', async () => {
    const t = demTiles(12);
    const path = `${S}/dem/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`;
    const all = await Promise.all(Array.from({ length: 8 }, () => call(path, { renderingRule: 'Shaded' })));
    expect(new Set(all.map((r) => r.headers.get('etag'))).size).toBe(1);
    expect(imageServicesOf(site).renderStats().peak).toBe(1);
  });

  it('outside the raster: a transparent tile; outside the scheme: 404', async () => {
    const out = await call(`${S}/dem/ImageServer/tile/5/0/0`);
    expect(out.status).toBe(200);
    const img = PNG.sync.read(Buffer.from(await out.arrayBuffer()));
    expect(img.data.every((v, i) => i % 4 !== 3 || v === 0)).toBe(true);
    expect((await call(`${S}/dem/ImageServer/tile/30/0/0`)).status).toBe(404);
    expect((await call(`${S}/dem/ImageServer/tile/2/4/0`)).status).toBe(404);
    expect((await call(`${S}/dem/ImageServer/tile/2/x/0`)).status).toBe(404);
  });

  it('renderingRule names a published template (JSON rules refused); anonymous services are public', async () => {
    const t = demTiles(12);
    const path = `${S}/dem/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`;
    const plain = await call(path);
    const shaded = await call(path, { renderingRule: 'Shaded' });
    expect(shaded.status).toBe(200);
    expect(shaded.headers.get('etag')).not.toBe(plain.headers.get('etag'));
    const same = await call(path, { renderingRule: '{"rasterFunction":"Shaded"}' });
    expect(same.headers.get('etag')).toBe(shaded.headers.get('etag'));
    const refused = await jsonOf<Json>(await call(path, { f: 'json', renderingRule: JSON.stringify(HILLSHADE) }));
    expect((refused['error'] as Json)['code']).toBe(400);
    const pub = await call(`${S}/public/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`, {}, { token: null });
    expect(pub.status).toBe(200);
    expect(pub.headers.get('cache-control')).toBe('public, max-age=3600');
    const noToken = await call(path, { f: 'json' }, { token: null });
    expect(noToken.headers.get('content-type')).toContain('application/json');
    expect(((await jsonOf<Json>(noToken))['error'] as Json)['code']).toBe(499);
  });

  it('native scheme on request or by property: tiles aligned with the raster pixels', async () => {
    const a = await call(`${S}/dem/ImageServer/tile/1/0/0`, { tileScheme: 'native', renderingRule: 'DRA' });
    expect(a.status).toBe(200);
    const img = PNG.sync.read(Buffer.from(await a.arrayBuffer()));
    // the raster's first 256 columns are drawn, beyond the raster is transparent
    expect(img.data[3]).toBe(255);
    expect(img.data[(255 * 256 + 255) * 4 + 3]).toBe(255);
    await addService('nat', { path: DEM, tileScheme: 'native' });
    const j = await jcall(`${S}/nat/ImageServer`);
    expect((j['tileInfo'] as Json)['spatialReference']).toEqual({ wkid: 32616, latestWkid: 32616 });
    expect((j['tileInfo'] as Json)['origin']).toEqual({ x: X0, y: Y1 });
    const b = await call(`${S}/nat/ImageServer/tile/1/1/1`);
    const img2 = PNG.sync.read(Buffer.from(await b.arrayBuffer()));
    expect(img2.data[3]).toBe(255); // pixel (256, 256) of the raster
    expect(img2.data[(200 * 256 + 200) * 4 + 3]).toBe(0); // past column 383
    expect(
      ((await jsonOf<Json>(await call(`${S}/dem/ImageServer/tile/1/0/0`, { f: 'json', tileScheme: 'mercator' })))['error'] as Json)['code'],
    ).toBe(400);
  });

  it('no seams: neighbouring DRA tiles equal the same window of one render with the service statistics, unlike per-tile statistics', async () => {
    const services = imageServicesOf(site);
    const service = (await services.open('', 'dem'))!;
    // Native scheme, full resolution: tiles (1,0,0) and (1,0,1) against one 512 x 256 render.
    const whole = await renderSeamless(services, service, DRA, {
      spatialReference: { wkid: 32616 },
      extent: { xmin: X0, xmax: X0 + 512 * 75, ymax: Y1, ymin: Y1 - 256 * 75 },
      width: 512,
      height: 256,
    });
    let compared = 0;
    const bad: string[] = [];
    for (const k of [0, 1]) {
      const res = await call(`${S}/dem/ImageServer/tile/1/0/${k}`, { tileScheme: 'native', renderingRule: 'DRA' });
      const img = PNG.sync.read(Buffer.from(await res.arrayBuffer()));
      for (let y = 0; y < 256; y++)
        for (let x = 0; x < 256; x++) {
          const w = y * 512 + k * 256 + x;
          expect(img.data[(y * 256 + x) * 4 + 3]).toBe(whole.block.mask[w] === 1 ? 255 : 0);
          if (whole.block.mask[w] !== 1) continue;
          if (img.data[(y * 256 + x) * 4] !== whole.block.bands[0]![w]) bad.push(`${k}:${x}:${y}`);
          compared++;
        }
    }
    expect(bad).toEqual([]);
    expect(compared).toBe(383 * 256);
    // the stretch spans the service's whole range: both ends of 0..255 are reached over the raster,
    // while a tile's own statistics would stretch each tile to its own range (visible seams)
    const own = async (k: number) => {
      const { root } = await planServiceRule(service, DRA, 0);
      const grid = {
        spatialReference: { wkid: 32616 },
        extent: { xmin: X0 + k * 256 * 75, xmax: X0 + (k + 1) * 256 * 75, ymax: Y1, ymin: Y1 - 256 * 75 },
        width: 256,
        height: 256,
      };
      const bound = await bindRequestStatistics(warpNode(root, grid, 'nearest'), rect(0, 0, 256, 256));
      return render(bound.root, { rect: rect(0, 0, 256, 256) });
    };
    for (const k of [0, 1]) {
      const tile = await own(k);
      let differ = 0;
      for (let i = 0; i < 256 * 256; i++) {
        const w = Math.floor(i / 256) * 512 + k * 256 + (i % 256);
        if (tile.mask[i] === 1 && whole.block.mask[w] === 1 && tile.bands[0]![i] !== whole.block.bands[0]![w]) differ++;
      }
      expect(differ).toBeGreaterThan(10000);
    }
  });

  it('Web Mercator tiles use the same service-wide stretch', async () => {
    const services = imageServicesOf(site);
    const service = (await services.open('', 'dem'))!;
    const t = demTiles(12);
    const e1 = tileExtent(WEB_MERCATOR_SCHEME, 12, t.minRow + 1, t.minCol + 1)!;
    const seamless = await renderSeamless(services, service, DRA, {
      spatialReference: { wkid: 3857 },
      extent: e1,
      width: 256,
      height: 256,
    });
    const res = await call(`${S}/dem/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`, { renderingRule: 'DRA' });
    const img = PNG.sync.read(Buffer.from(await res.arrayBuffer()));
    for (let i = 0; i < 256 * 256; i += 97) if (seamless.block.mask[i] === 1) expect(img.data[i * 4]).toBe(seamless.block.bands[0]![i]);
    const { root } = await planServiceRule(service, DRA, 0);
    const perTile = await bindRequestStatistics(
      warpNode(root, { spatialReference: { wkid: 3857 }, extent: e1, width: 256, height: 256 }, 'nearest'),
      rect(0, 0, 256, 256),
    );
    const own = await render(perTile.root, { rect: rect(0, 0, 256, 256) });
    let differ = 0;
    for (let i = 0; i < 256 * 256; i++) if (own.mask[i] === 1 && own.bands[0]![i] !== seamless.block.bands[0]![i]) differ++;
    expect(differ).toBeGreaterThan(1000);
  });
});

// ---------------------------------------------------------------------------------------------

describe('CORS', () => {
  it('preflight of an allowed origin on any image route, refused for others and for services without cors', async () => {
    const pre = (path: string, origin: string) =>
      call(
        path,
        {},
        {
          token: null,
          method: 'OPTIONS',
          headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-esri-authorization' },
        },
      );
    for (const p of ['exportImage', 'identify', 'tile/1/0/0', 'legend', '']) {
      const res = await pre(`${S}/dem/ImageServer${p ? `/${p}` : ''}`, 'https://a.example');
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://a.example');
      expect(res.headers.get('access-control-allow-headers')).toContain('X-Esri-Authorization');
    }
    expect((await pre(`${S}/dem/ImageServer/exportImage`, 'https://b.example')).headers.has('access-control-allow-origin')).toBe(false);
    expect((await pre(`${S}/public/ImageServer/exportImage`, 'https://a.example')).headers.has('access-control-allow-origin')).toBe(false);
  });

  it('answers carry the echoed origin and Vary: Origin; errors too', async () => {
    const ok = await call(
      `${S}/dem/ImageServer/identify`,
      { f: 'json', geometry: `${X0 + 1},${Y1 - 1}` },
      { headers: { origin: 'https://a.example' } },
    );
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://a.example');
    expect(ok.headers.get('vary')).toContain('Origin');
    expect((await jsonOf<Json>(ok))['value']).toBe(fmt(demAt(0, 0)));
    const denied = await call(
      `${S}/dem/ImageServer/identify`,
      { f: 'json', geometry: '1,2' },
      { headers: { origin: 'https://b.example' } },
    );
    expect(denied.headers.has('access-control-allow-origin')).toBe(false);
    const err = await call(`${S}/dem/ImageServer/identify`, { f: 'json' }, { token: null, headers: { origin: 'https://a.example' } });
    expect(err.headers.get('access-control-allow-origin')).toBe('https://a.example');
    expect(((await jsonOf<Json>(err))['error'] as Json)['code']).toBe(499);
    expect((await call(`${S}/dem/ImageServer/tile/1/0/0`, {}, { method: 'DELETE' })).status).toBe(405);
  });
});

// ---------------------------------------------------------------------------------------------

describe('viewer', () => {
  it('f=html of the service is the OpenLayers viewer against this service', async () => {
    for (const f of ['html', '']) {
      const res = await call(`${S}/dem/ImageServer`, f ? { f } : {});
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await res.text();
      expect(html).toContain('<script src="/server/rest/static/ol/ol.js"></script>');
      expect(html).toContain('<script src="/server/rest/static/image-viewer.js"></script>');
      expect(html).not.toMatch(/cdn|unpkg|jsdelivr/i);
      const settings = JSON.parse(/<script type="application\/json" id="viewer-settings">(.*?)<\/script>/s.exec(html)![1]!) as Json;
      expect(settings['url']).toBe('/server/rest/services/dem/ImageServer');
      const e = settings['extent3857'] as Record<string, number>;
      expect(e['xmin']).toBeCloseTo(-9395000, -4);
      expect(html).toContain('<option value="Shaded">Shaded</option>');
    }
    const pub = await (await call(`${S}/public/ImageServer`, { f: 'html' }, { token: null })).text();
    expect(pub).toContain('&#34;Stretch&#34;'); // the default rule in the textarea
  });

  it('serves OpenLayers and the viewer script from the server', async () => {
    const js = await call('/server/rest/static/ol/ol.js', {}, { token: null });
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const pkg = createRequire(import.meta.url).resolve('ol/package.json');
    expect((await js.text()).length).toBe(readFileSync(join(pkg, '..', 'dist', 'ol.js'), 'utf8').length);
    expect((await call('/server/rest/static/ol/ol.css', {}, { token: null })).headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await call('/server/rest/static/image-viewer.js', {}, { token: null })).status).toBe(200);
  });
});

describe('site settings', () => {
  it('corsOrigins and tileMaxAge of the site apply to services that set none (and come from the config file)', async () => {
    const other = await testSite({ corsOrigins: ['https://site.example'], tileMaxAge: 120 });
    await other.store.putService({
      folder: '',
      serviceName: 'p',
      type: 'ImageServer',
      properties: { path: DEM, anonymous: true },
      created: other.clock.now(),
    });
    await other.store.putService({
      folder: '',
      serviceName: 'own',
      type: 'ImageServer',
      properties: { path: DEM, anonymous: true, cors: { origins: ['https://a.example'] }, tileMaxAge: 5 },
      created: other.clock.now(),
    });
    const otherApp = createApp(other, siteRoutes(other));
    const get = (path: string, origin: string) => otherApp.fetch(siteRequest(path, { headers: { origin } })) as Promise<Response>;
    const t = demTiles(12);
    const res = await get(`${S}/p/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`, 'https://site.example');
    expect(res.headers.get('access-control-allow-origin')).toBe('https://site.example');
    expect(res.headers.get('cache-control')).toBe('public, max-age=120');
    const own = await get(`${S}/own/ImageServer/tile/12/${t.minRow + 1}/${t.minCol + 1}`, 'https://site.example');
    expect(own.headers.has('access-control-allow-origin')).toBe(false);
    expect(own.headers.get('cache-control')).toBe('public, max-age=5');
    const parsed = parseConfig({ settings: { corsOrigins: ['https://site.example'], tileMaxAge: 120 } }, 'test');
    expect(parsed.settings).toMatchObject({ corsOrigins: ['https://site.example'], tileMaxAge: 120 });
    expect(() => parseConfig({ settings: { tileMaxAge: -1 } }, 'test')).toThrow();
  });
});

describe('planned graphs', () => {
  it('a service reopened with the same record plans over its new source: a closed opening is never read', async () => {
    const record = { folder: '', serviceName: 'again', type: 'ImageServer' as const, properties: { path: DEM }, created: 1 };
    const first = await openImageService(record);
    const a = await planServiceRule(first, HILLSHADE, 0);
    await first.source.close();
    const second = await openImageService(record);
    expect(second.version).toBe(first.version);
    try {
      const b = await planServiceRule(second, HILLSHADE, 0);
      expect(b.source).toBe(second.source);
      expect(b.root).not.toBe(a.root);
      const block = await render(b.root, { rect: rect(0, 0, 64, 64) });
      expect(block.mask.some((m) => m === 1)).toBe(true);
    } finally {
      await second.source.close();
    }
  });
});

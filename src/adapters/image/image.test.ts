import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { unzipSync, strFromU8 } from 'fflate';
import type { PNG as PngClass } from 'pngjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { run } from '../../cli/commands.js';
import { openGeoTiff } from '../../io/geotiff-source.js';
import { createApp } from '../../server/app.js';
import { siteRoutes } from '../../server/routes.js';
import type { Route } from '../rest.js';
import { createImageServices, imageServicesOf } from './service.js';

const { PNG } = createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass };

const DEM = `${import.meta.dirname}/../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const L7 = `${import.meta.dirname}/../../../golden/data/L7_ETMs.tif`;
// DEM grid: 383 x 407, 75 m, xmin 732000, ymax 4068150 (EPSG:32616).
const X0 = 732000;
const Y1 = 4068150;

type Json = Record<string, unknown>;

const HILLSHADE = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } };

let site: TestSite;
let app: ReturnType<typeof createApp>;
let token: string;
let gpHits = 0;

async function addService(name: string, properties: Json, folder = ''): Promise<void> {
  await site.store.putService({ folder, serviceName: name, type: 'ImageServer', properties, created: site.clock.now() });
}

beforeEach(async () => {
  site = await testSite();
  await site.addUser('u');
  token = await site.token('u');
  // One user sends the 50 concurrent requests below: the per-client limit (limits.test.ts) is not what they test.
  imageServicesOf(site, { maxConcurrentRenders: 2, maxRendersPerClient: 100 });
  await addService('dem', {
    path: DEM,
    rasterFunctionTemplates: [{ name: 'Shaded', description: 'Hillshade of the DEM', rule: HILLSHADE }],
  });
  await addService('public', { path: DEM, anonymous: true });
  await addService('landsat', { path: L7 }, 'Imagery');
  gpHits = 0;
  const gp: Route = {
    method: 'ALL',
    path: '/server/rest/services/System/RasterAnalysisTools/GPServer',
    handler: () => {
      gpHits++;
      return Promise.resolve(new Response('{"gp":true}', { headers: { 'content-type': 'application/json' } }));
    },
  };
  app = createApp(site, siteRoutes(site, [gp]));
});

// The site's image services hold their rasters' files open until closed (the server closes them as it stops).
afterEach(() => imageServicesOf(site).close());

function call(
  path: string,
  params: Record<string, string> = {},
  options: { token?: string | null; post?: boolean; signal?: AbortSignal } = {},
): Promise<Response> {
  const t = options.token === undefined ? token : options.token;
  const all = { ...params, ...(t ? { token: t } : {}) };
  const qs = new URLSearchParams(all).toString();
  const req = options.post ? siteRequest(path, { form: all }) : siteRequest(`${path}${qs ? `?${qs}` : ''}`);
  const r = options.signal ? new Request(req, { signal: options.signal }) : req;
  return app.fetch(r) as Promise<Response>;
}

const bytesOf = async (res: Response): Promise<Uint8Array> => new Uint8Array(await res.arrayBuffer());
const isPng = (b: Uint8Array): boolean => b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47;
const isJpeg = (b: Uint8Array): boolean => b[0] === 0xff && b[1] === 0xd8;
const isTiff = (b: Uint8Array): boolean => b[0] === 0x49 && b[1] === 0x49;
const decodePng = (b: Uint8Array) => PNG.sync.read(Buffer.from(b));

/** Bbox of the DEM window (x, y, w, h) in pixels. */
const windowBbox = (x: number, y: number, w: number, h: number): string =>
  [X0 + x * 75, Y1 - (y + h) * 75, X0 + (x + w) * 75, Y1 - y * 75].join(',');

async function readTiff(bytes: Uint8Array) {
  const dir = mkdtempSync(join(tmpdir(), 'rf-img-'));
  const file = join(dir, 'x.tif');
  writeFileSync(file, bytes);
  const src = await openGeoTiff(file);
  const block = await src.read({ x: 0, y: 0, width: src.info.width, height: src.info.height });
  await src.close();
  return { info: src.info, block };
}

async function exportImage(params: Record<string, string>, service = 'dem', options: { token?: string | null } = {}): Promise<Response> {
  return call(`/server/rest/services/${service}/ImageServer/exportImage`, params, options);
}

describe('service info', () => {
  it('answers the vendor fields with real statistics, the functions and the templates', async () => {
    const j = await jsonOf<Json>(await call('/server/rest/services/dem/ImageServer', { f: 'json' }));
    expect(j).toMatchObject({
      name: 'dem',
      bandCount: 1,
      pixelType: 'F32',
      pixelSizeX: 75,
      pixelSizeY: 75,
      extent: { xmin: 732000, ymin: 4037625, xmax: 760725, ymax: 4068150, spatialReference: { wkid: 32616, latestWkid: 32616 } },
      maxImageWidth: 4100,
      maxImageHeight: 15000,
      allowRasterFunction: true,
      capabilities: 'Image,Metadata',
      noDataValue: null,
      hasColormap: false,
      statisticsSource: 'exact',
    });
    expect(j['fullExtent']).toEqual(j['extent']);
    expect((j['minValues'] as number[])[0]).toBeCloseTo(236.4524, 3);
    expect((j['maxValues'] as number[])[0]).toBeCloseTo(1074.354, 2);
    expect((j['meanValues'] as number[])[0]).toBeCloseTo(535.3446, 3);
    expect((j['stdvValues'] as number[])[0]).toBeCloseTo(163.876, 2);
    const fns = j['rasterFunctionInfos'] as { name: string; description: string; help: string }[];
    expect(fns.find((f) => f.name === 'Shaded')).toEqual({
      name: 'Shaded',
      description: 'Hillshade of the DEM',
      help: 'Hillshade of the DEM',
    });
    expect(fns.find((f) => f.name === 'Hillshade')?.description).toBeTruthy();
    expect(fns.length).toBeGreaterThan(20);
  });

  it('pjson is indented, html is a page with a preview, a folder service works', async () => {
    const p = await call('/server/rest/services/dem/ImageServer', { f: 'pjson' });
    expect(await p.text()).toContain('\n  "currentVersion"');
    const h = await call('/server/rest/services/dem/ImageServer', {});
    expect(h.headers.get('content-type')).toContain('text/html');
    const page = await h.text();
    expect(page).toContain('<img');
    expect(page).toContain('/server/rest/services/dem/ImageServer/exportImage?f=image');
    expect(page).not.toContain(token);
    const l = await jsonOf<Json>(await call('/server/rest/services/Imagery/landsat/ImageServer', { f: 'json' }));
    expect(l).toMatchObject({ name: 'Imagery/landsat', bandCount: 6, pixelType: 'U8', serviceDataType: 'esriImageServiceDataTypeGeneric' });
  });

  it('statistics come from the file when it has them, else approximately from its overviews', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rf-stats-'));
    const render = (out: string, ...co: string[]) =>
      run(new Command(), { out: () => undefined, err: () => undefined, isTTY: false }).parseAsync(
        ['render', '--rule', '{"rasterFunction":"Identity"}', '--input', DEM, '--output', out, ...co.flatMap((c) => ['--co', c])],
        { from: 'user' },
      );
    await render(join(dir, 'stats.tif'), 'STATISTICS=YES');
    await render(join(dir, 'cog.tif'), 'COG=YES', 'STATISTICS=NO', 'BLOCKXSIZE=64');
    await addService('withstats', { path: join(dir, 'stats.tif') });
    await addService('cog', { path: join(dir, 'cog.tif') });
    const a = await jsonOf<Json>(await call('/server/rest/services/withstats/ImageServer', { f: 'json' }));
    expect(a['statisticsSource']).toBe('file');
    expect((a['minValues'] as number[])[0]).toBeCloseTo(236.4524, 3);
    const b = await jsonOf<Json>(await call('/server/rest/services/cog/ImageServer', { f: 'json' }));
    expect(b['statisticsSource']).toBe('approximate');
    // From the 96 x 102 overview: close to, not equal to, the exact values.
    expect((b['meanValues'] as number[])[0]).toBeCloseTo(535.34, -1);
    expect((b['minValues'] as number[])[0]).toBeGreaterThanOrEqual(236.45);
    expect((b['maxValues'] as number[])[0]).toBeLessThanOrEqual(1074.36);
  });

  it('is reopened when the service record changes', async () => {
    expect(await jsonOf<Json>(await call('/server/rest/services/dem/ImageServer', { f: 'json' }))).toMatchObject({ bandCount: 1 });
    await addService('dem', { path: L7 });
    expect(await jsonOf<Json>(await call('/server/rest/services/dem/ImageServer', { f: 'json' }))).toMatchObject({ bandCount: 6 });
    await site.store.deleteService('dem.ImageServer');
    expect(await jsonOf<Json>(await call('/server/rest/services/dem/ImageServer', { f: 'json' }))).toMatchObject({ error: { code: 404 } });
  });
});

describe('access', () => {
  it('a secured service wants a token (499), an anonymous one does not, a bad token is 498 anywhere', async () => {
    expect(await jsonOf(await call('/server/rest/services/dem/ImageServer', { f: 'json' }, { token: null }))).toEqual({
      error: { code: 499, message: 'Token Required', details: ['Token Required'] },
    });
    expect(await jsonOf(await exportImage({ f: 'json' }, 'dem', { token: null }))).toMatchObject({ error: { code: 499 } });
    expect(await jsonOf(await call('/server/rest/services/public/ImageServer', { f: 'json' }, { token: null }))).toMatchObject({
      name: 'public',
    });
    const img = await exportImage({ f: 'image', format: 'png', size: '20,20' }, 'public', { token: null });
    expect(isPng(await bytesOf(img))).toBe(true);
    expect(await jsonOf(await call('/server/rest/services/public/ImageServer', { f: 'json' }, { token: 'garbage' }))).toMatchObject({
      error: { code: 498 },
    });
  });

  it('an unknown service is 499 without a token (no existence leak) and 404 with one', async () => {
    expect(await jsonOf(await call('/server/rest/services/nope/ImageServer', { f: 'json' }, { token: null }))).toMatchObject({
      error: { code: 499 },
    });
    expect(await jsonOf(await call('/server/rest/services/nope/ImageServer', { f: 'json' }))).toMatchObject({ error: { code: 404 } });
  });

  it('requires HTTPS when allSSL is on', async () => {
    site = await testSite({ allSSL: true });
    await addService('public', { path: DEM, anonymous: true });
    app = createApp(site, siteRoutes(site));
    const res = await app.fetch(siteRequest('/server/rest/services/public/ImageServer?f=json', { scheme: 'http' }));
    expect(await jsonOf(res)).toMatchObject({ error: { code: 403, message: 'SSL Required' } });
  });
});

describe('the services catalogue and the shared root', () => {
  it('lists folders and services; anonymous callers see the anonymous ones; the GP task still routes', async () => {
    await site.store.putService({ folder: 'System', serviceName: 'RasterAnalysisTools', type: 'GPServer', properties: {}, created: 0 });
    const root = await jsonOf<Json>(await call('/server/rest/services', { f: 'json' }));
    expect(root).toEqual({
      currentVersion: 11.1,
      folders: ['Imagery', 'System'],
      services: [
        { name: 'dem', type: 'ImageServer' },
        { name: 'public', type: 'ImageServer' },
      ],
    });
    expect(await jsonOf<Json>(await call('/server/rest/services', { f: 'json' }, { token: null }))).toMatchObject({
      services: [{ name: 'public', type: 'ImageServer' }],
    });
    expect(await jsonOf<Json>(await call('/server/rest/services/Imagery', { f: 'json' }))).toEqual({
      currentVersion: 11.1,
      folders: [],
      services: [{ name: 'Imagery/landsat', type: 'ImageServer' }],
    });
    expect(await jsonOf<Json>(await call('/server/rest/services/Nope', { f: 'json' }))).toMatchObject({ error: { code: 404 } });
    expect(await jsonOf<Json>(await call('/server/rest/services/System/RasterAnalysisTools/GPServer', { f: 'json' }))).toEqual({
      gp: true,
    });
    expect(gpHits).toBe(1);
  });
});

describe('exportImage', () => {
  it('PNG at native resolution equals rasterflow render of the same rule and window', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rf-cli-'));
    const out = join(dir, 'hs.png');
    const lines: string[] = [];
    await run(new Command(), { out: (s) => lines.push(s), err: (s) => lines.push(s), isTTY: false }).parseAsync(
      ['render', '--rule', JSON.stringify(HILLSHADE), '--input', DEM, '--window', '40,50,120,90', '--output', out],
      { from: 'user' },
    );
    const expected = decodePng(readFileSync(out));
    const res = await exportImage({
      f: 'image',
      format: 'png',
      bbox: windowBbox(40, 50, 120, 90),
      size: '120,90',
      renderingRule: JSON.stringify(HILLSHADE),
    });
    expect(res.headers.get('content-type')).toBe('image/png');
    const got = decodePng(await bytesOf(res));
    expect([got.width, got.height]).toEqual([120, 90]);
    expect(Buffer.compare(got.data, expected.data)).toBe(0);
    // The published template by name, and in JSON naming the template, give the same image.
    const byName = decodePng(
      await bytesOf(
        await exportImage({ f: 'image', format: 'png', bbox: windowBbox(40, 50, 120, 90), size: '120,90', renderingRule: 'Shaded' }),
      ),
    );
    expect(Buffer.compare(byName.data, expected.data)).toBe(0);
    const byJson = decodePng(
      await bytesOf(
        await exportImage({
          f: 'image',
          format: 'png',
          bbox: windowBbox(40, 50, 120, 90),
          size: '120,90',
          renderingRule: '{"rasterFunction":"Shaded"}',
        }),
      ),
    );
    expect(Buffer.compare(byJson.data, expected.data)).toBe(0);
  });

  it('a registry function name renders with its defaults; bad rules are 400 naming renderingRule; rules see only the service raster', async () => {
    const ok = await exportImage({ f: 'image', format: 'png', size: '30,30', renderingRule: 'Hillshade' });
    expect(isPng(await bytesOf(ok))).toBe(true);
    const unknown = await jsonOf<Json>(await exportImage({ f: 'json', renderingRule: 'NoSuchThing' }));
    expect(unknown).toMatchObject({ error: { code: 400 } });
    expect(JSON.stringify(unknown)).toContain('renderingRule');
    expect(await jsonOf(await exportImage({ f: 'json', renderingRule: '{"rasterFunction":' }))).toMatchObject({ error: { code: 400 } });
    const sneaky = await jsonOf<Json>(
      await exportImage({
        f: 'json',
        renderingRule: JSON.stringify({ rasterFunction: 'Slope', rasterFunctionArguments: { DEM: '/etc/passwd' } }),
      }),
    );
    expect(sneaky).toMatchObject({ error: { code: 400 } });
    expect(JSON.stringify(sneaky)).toContain("only use the service's raster");
  });

  it('the service default rule applies when none is asked; None gives the raster as stored', async () => {
    await addService('shaded', { path: DEM, renderingRule: HILLSHADE });
    const bbox = windowBbox(40, 50, 120, 90);
    const viaDefault = decodePng(await bytesOf(await exportImage({ f: 'image', format: 'png', bbox, size: '120,90' }, 'shaded')));
    const viaParam = decodePng(
      await bytesOf(await exportImage({ f: 'image', format: 'png', bbox, size: '120,90', renderingRule: JSON.stringify(HILLSHADE) })),
    );
    expect(Buffer.compare(viaDefault.data, viaParam.data)).toBe(0);
    const info = await jsonOf<Json>(await call('/server/rest/services/shaded/ImageServer', { f: 'json' }));
    expect(info['defaultRenderingRule']).toEqual(HILLSHADE);
    const raw = await readTiff(
      await bytesOf(
        await exportImage({ f: 'image', format: 'tiff', bbox, size: '120,90', renderingRule: '{"rasterFunction":"None"}' }, 'shaded'),
      ),
    );
    expect(raw.info.pixelType).toBe('F32');
    const plain = await readTiff(await bytesOf(await exportImage({ f: 'image', format: 'tiff', bbox, size: '120,90' })));
    expect(Array.from(raw.block.bands[0]!)).toEqual(Array.from(plain.block.bands[0]!));
    // A broken default rule is refused when the service is used, naming the property.
    await addService('broken', { path: DEM, renderingRule: { rasterFunction: 42 } });
    expect(await jsonOf(await call('/server/rest/services/broken/ImageServer', { f: 'json' }))).toMatchObject({ error: { code: 400 } });
  });

  it('f=json holds the image for download at href; the download equals f=image', async () => {
    const params = { format: 'png', bbox: windowBbox(0, 0, 100, 100), size: '100,100', renderingRule: 'Shaded' };
    const j = await jsonOf<Json>(await exportImage({ ...params, f: 'json' }));
    expect(j).toMatchObject({
      width: 100,
      height: 100,
      extent: { xmin: 732000, ymax: 4068150, xmax: 739500, ymin: 4060650, spatialReference: { wkid: 32616 } },
    });
    expect(j['scale']).toBeCloseTo((75 * 96) / 0.0254, 3);
    const href = new URL(j['href'] as string);
    expect(href.pathname).toMatch(/^\/server\/rest\/services\/dem\/ImageServer\/output\/[0-9a-f]{32}\.png$/);
    const download = await app.fetch(siteRequest(href.pathname));
    expect(download.headers.get('content-type')).toBe('image/png');
    const direct = await bytesOf(await exportImage({ ...params, f: 'image' }));
    expect(Buffer.compare(Buffer.from(await bytesOf(download)), Buffer.from(direct))).toBe(0);
    expect(await jsonOf(await app.fetch(siteRequest(`${href.pathname.replace(/[0-9a-f]{32}/, '0'.repeat(32))}?f=json`)))).toMatchObject({
      error: { code: 404 },
    });
    // Not under another service.
    expect(await jsonOf(await app.fetch(siteRequest(`${href.pathname.replace('/dem/', '/public/')}?f=json`)))).toMatchObject({
      error: { code: 404 },
    });
    // POST works as GET; f=html shows the image.
    const posted = await jsonOf<Json>(
      await call('/server/rest/services/dem/ImageServer/exportImage', { ...params, f: 'json' }, { post: true }),
    );
    expect(posted).toMatchObject({ width: 100, height: 100 });
    const html = await (await exportImage({ ...params, f: 'html' })).text();
    expect(html).toContain('<img');
  });

  it('size defaults to 400,400; over maxImageWidth/Height is the vendor-style 400 naming the size', async () => {
    expect(await jsonOf(await exportImage({ f: 'json', format: 'png' }))).toMatchObject({ width: 400, height: 400 });
    const big = await jsonOf<Json>(await exportImage({ f: 'json', size: '4101,10' }));
    expect(big).toEqual({
      error: {
        code: 400,
        message: 'The request exceeds a size limit.',
        details: [
          'The requested image size 4101x10 exceeds the maximum allowed image size of 4100x15000 (maxImageWidth x maxImageHeight).',
        ],
      },
    });
    await addService('small', { path: DEM, maxImageWidth: 50, maxImageHeight: 40 });
    expect(await jsonOf(await exportImage({ f: 'json', size: '50,41' }, 'small'))).toMatchObject({ error: { code: 400 } });
    expect(await jsonOf(await exportImage({ f: 'json', size: '50,40' }, 'small'))).toMatchObject({ width: 50, height: 40 });
    expect(await jsonOf(await exportImage({ f: 'json', size: '0,10' }))).toMatchObject({ error: { code: 400 } });
    expect(await jsonOf(await exportImage({ f: 'json', size: 'abc' }))).toMatchObject({ error: { code: 400 } });
  });

  it('bbox as an envelope JSON, in another SR (bboxSR), reprojected (imageSR)', async () => {
    const env = JSON.stringify({ xmin: X0, ymin: Y1 - 7500, xmax: X0 + 7500, ymax: Y1, spatialReference: { wkid: 32616 } });
    const a = decodePng(
      await bytesOf(await exportImage({ f: 'image', format: 'png', bbox: env, size: '100,100', renderingRule: 'Shaded' })),
    );
    const b = decodePng(
      await bytesOf(
        await exportImage({ f: 'image', format: 'png', bbox: windowBbox(0, 0, 100, 100), size: '100,100', renderingRule: 'Shaded' }),
      ),
    );
    expect(Buffer.compare(a.data, b.data)).toBe(0);
    // Geographic bbox inside the DEM: the image is in 4326 (imageSR defaults to bboxSR).
    const geo = { f: 'json', bbox: '-84.30,36.58,-84.20,36.66', bboxSR: '4326', size: '120,96', format: 'png' };
    const j = await jsonOf<Json>(await exportImage(geo));
    expect(j).toMatchObject({
      width: 120,
      height: 96,
      extent: { xmin: -84.3, ymin: 36.58, xmax: -84.2, ymax: 36.66, spatialReference: { wkid: 4326 } },
    });
    const img = decodePng(await bytesOf(await exportImage({ ...geo, f: 'image' })));
    // Relief inside: not constant.
    const grey = new Set<number>();
    for (let i = 0; i < img.data.length; i += 4) grey.add(img.data[i]!);
    expect(grey.size).toBeGreaterThan(50);
    // Web Mercator output of a UTM bbox: the extent is the bbox transformed.
    const wm = await jsonOf<Json>(
      await exportImage({ f: 'json', bbox: windowBbox(50, 50, 200, 200), imageSR: '102100', size: '200,200', format: 'png' }),
    );
    const ext = wm['extent'] as Json;
    expect(ext['spatialReference']).toEqual({ wkid: 102100, latestWkid: 3857 });
    expect(ext['xmin'] as number).toBeGreaterThan(-9_400_000);
    expect(ext['xmin'] as number).toBeLessThan(-9_300_000);
    expect(await jsonOf(await exportImage({ f: 'json', bboxSR: '999999' }))).toMatchObject({ error: { code: 400 } });
    expect(await jsonOf(await exportImage({ f: 'json', bbox: '1,2,3' }))).toMatchObject({ error: { code: 400 } });
    expect(await jsonOf(await exportImage({ f: 'json', bbox: '5,5,1,1' }))).toMatchObject({ error: { code: 400 } });
  });

  it('EPSG:3857 output equals gdalwarp -t_srs EPSG:3857 -te -ts (nearest exact, bilinear and cubic within 1 DN)', async () => {
    const golden = async (id: string) => {
      const src = await openGeoTiff(`golden/warp/${id}.tif`);
      const block = await src.read({ x: 0, y: 0, width: src.info.width, height: src.info.height });
      await src.close();
      return block;
    };
    for (const [r, interpolation, tolerance] of [
      ['near', 'RSP_NearestNeighbor', 0],
      ['bilinear', 'RSP_BilinearInterpolation', 1],
      ['cubic', 'RSP_CubicConvolution', 1],
    ] as const) {
      const res = await exportImage({
        f: 'image',
        format: 'tiff',
        bbox: '-9390000,4378000,-9363000,4400000',
        bboxSR: '3857',
        imageSR: '3857',
        size: '290,236',
        interpolation,
      });
      const got = await readTiff(await bytesOf(res));
      const want = await golden(`dem-3857-${r}`);
      const alpha = want.bands[1]!;
      let compared = 0;
      let maskDiffers = 0;
      let worst = 0;
      for (let i = 0; i < 290 * 236; i++) {
        const valid = alpha[i]! > 0;
        if ((got.block.mask[i] === 1) !== valid) maskDiffers++;
        if (!valid) continue;
        worst = Math.max(worst, Math.abs(got.block.bands[0]![i]! - want.bands[0]![i]!));
        compared++;
      }
      expect({ r, maskDiffers }).toEqual({ r, maskDiffers: 0 });
      expect(worst).toBeLessThanOrEqual(tolerance);
      expect(compared).toBeGreaterThan(30_000);
    }
  });

  it('interpolation: nearest, bilinear and cubic differ when resampling; majority and unknown names are refused', async () => {
    const base = { f: 'image', format: 'tiff', bbox: windowBbox(10.3, 10.3, 50, 50), size: '73,73' };
    const n = await readTiff(await bytesOf(await exportImage({ ...base, interpolation: 'RSP_NearestNeighbor' })));
    const b = await readTiff(await bytesOf(await exportImage({ ...base, interpolation: 'RSP_BilinearInterpolation' })));
    const c = await readTiff(await bytesOf(await exportImage({ ...base, interpolation: 'RSP_CubicConvolution' })));
    expect(n.info.pixelType).toBe('F32');
    expect(Array.from(n.block.bands[0]!)).not.toEqual(Array.from(b.block.bands[0]!));
    expect(Array.from(b.block.bands[0]!)).not.toEqual(Array.from(c.block.bands[0]!));
    expect(JSON.stringify(await jsonOf(await exportImage({ ...base, f: 'json', interpolation: 'RSP_Majority' })))).toContain(
      'RSP_Majority is not supported',
    );
    expect(await jsonOf(await exportImage({ ...base, f: 'json', interpolation: 'spline' }))).toMatchObject({ error: { code: 400 } });
  });

  it('format: jpgpng is JPEG when every pixel is valid and PNG with NoData; png24/png32/jpg/tiff; lerc refused', async () => {
    const inside = windowBbox(10, 10, 50, 50);
    expect(isJpeg(await bytesOf(await exportImage({ f: 'image', bbox: inside, size: '50,50' })))).toBe(true);
    // Half outside the raster: NoData present, so PNG with transparency.
    const outside = [X0 - 25 * 75, Y1 - 50 * 75, X0 + 25 * 75, Y1].join(',');
    const p = await bytesOf(await exportImage({ f: 'image', bbox: outside, size: '50,50', format: 'jpgpng' }));
    expect(isPng(p)).toBe(true);
    const img = decodePng(p);
    expect(img.data[3]).toBe(0); // top-left is outside: transparent
    expect(img.data[4 * 49 + 3]).toBe(255);
    const p24 = decodePng(await bytesOf(await exportImage({ f: 'image', bbox: outside, size: '50,50', format: 'png24' })));
    expect(p24.data[3]).toBe(255); // no alpha channel: opaque
    const p32 = await bytesOf(await exportImage({ f: 'image', bbox: inside, size: '50,50', format: 'png32' }));
    expect(p32[25]).toBe(6); // colour type RGBA
    expect(isJpeg(await bytesOf(await exportImage({ f: 'image', bbox: outside, size: '50,50', format: 'jpg' })))).toBe(true);
    expect(isTiff(await bytesOf(await exportImage({ f: 'image', bbox: inside, size: '50,50', format: 'tiff' })))).toBe(true);
    expect(JSON.stringify(await jsonOf(await exportImage({ f: 'json', format: 'lerc' })))).toContain('lerc is not supported');
    expect(await jsonOf(await exportImage({ f: 'json', format: 'bmp' }))).toMatchObject({ error: { code: 400 } });
  });

  it('PNG of F32 data is the service min-max stretch; pixelType U8 clamps instead', async () => {
    const bbox = windowBbox(0, 0, 383, 407);
    const png = decodePng(await bytesOf(await exportImage({ f: 'image', format: 'png', bbox, size: '383,407' })));
    const tif = await readTiff(await bytesOf(await exportImage({ f: 'image', format: 'tiff', bbox, size: '383,407' })));
    const src = tif.block.bands[0]!;
    const min = 236.45242309570312;
    const max = 1074.35400390625;
    for (const i of [0, 1000, 50_000, 155_880]) {
      expect(png.data[4 * i]).toBe(Math.min(255, Math.max(0, Math.round(((src[i]! - min) / (max - min)) * 255))));
    }
    const clamped = decodePng(await bytesOf(await exportImage({ f: 'image', format: 'png', bbox, size: '383,407', pixelType: 'U8' })));
    expect(clamped.data[0]).toBe(255); // elevations above 255 saturate
  });

  it('pixelType converts TIFF output; bad values are refused', async () => {
    const bbox = windowBbox(0, 0, 20, 20);
    const s16 = await readTiff(await bytesOf(await exportImage({ f: 'image', format: 'tiff', bbox, size: '20,20', pixelType: 'S16' })));
    const f32 = await readTiff(await bytesOf(await exportImage({ f: 'image', format: 'tiff', bbox, size: '20,20', pixelType: 'UNKNOWN' })));
    expect(s16.info.pixelType).toBe('S16');
    expect(f32.info.pixelType).toBe('F32');
    expect(s16.block.bands[0]![7]).toBe(Math.round(f32.block.bands[0]![7]!));
    expect(await jsonOf(await exportImage({ f: 'json', pixelType: 'F16' }))).toMatchObject({ error: { code: 400 } });
    expect(await jsonOf(await exportImage({ f: 'json', format: 'jpg', pixelType: 'F32' }))).toMatchObject({ error: { code: 400 } });
  });

  it('bandIds picks and orders bands of a multiband service', async () => {
    const l7 = '/server/rest/services/Imagery/landsat/ImageServer/exportImage';
    const all = await readTiff(await bytesOf(await call(l7, { f: 'image', format: 'tiff', size: '349,352' })));
    const rgb = decodePng(await bytesOf(await call(l7, { f: 'image', format: 'png', size: '349,352', bandIds: '3,2,1' })));
    for (const i of [0, 777, 50_000, 122_847]) {
      expect([rgb.data[4 * i], rgb.data[4 * i + 1], rgb.data[4 * i + 2]]).toEqual([
        all.block.bands[3]![i],
        all.block.bands[2]![i],
        all.block.bands[1]![i],
      ]);
    }
    const one = await readTiff(await bytesOf(await call(l7, { f: 'image', format: 'tiff', size: '349,352', bandIds: '[5]' })));
    expect(one.info.bandCount).toBe(1);
    expect(Array.from(one.block.bands[0]!.slice(0, 50))).toEqual(Array.from(all.block.bands[5]!.slice(0, 50)));
    expect(JSON.stringify(await jsonOf(await call(l7, { f: 'json', bandIds: '6' })))).toContain('band 6 does not exist');
    expect(await jsonOf(await call(l7, { f: 'json', bandIds: 'x' }))).toMatchObject({ error: { code: 400 } });
  });

  it('noData makes matching pixels NoData (any/all); the TIFF declares it; jpgpng turns to PNG', async () => {
    const l7 = '/server/rest/services/Imagery/landsat/ImageServer/exportImage';
    const all = await readTiff(await bytesOf(await call(l7, { f: 'image', format: 'tiff', size: '349,352', bandIds: '0,1' })));
    const v0 = all.block.bands[0]![0]!;
    const anyPng = decodePng(
      await bytesOf(await call(l7, { f: 'image', format: 'jpgpng', size: '349,352', bandIds: '0,1,2', noData: String(v0) })),
    );
    let masked = 0;
    let expectedAny = 0;
    for (let i = 0; i < 349 * 352; i++) {
      if (anyPng.data[4 * i + 3] === 0) masked++;
      if (all.block.bands[0]![i] === v0 || all.block.bands[1]![i] === v0) expectedAny++;
    }
    // bandIds 0,1,2: a third band can also match; at least the pixels of bands 0/1 are masked.
    expect(masked).toBeGreaterThanOrEqual(expectedAny);
    expect(anyPng.data[3]).toBe(0);
    const v1 = all.block.bands[1]![0]!;
    const allPng = decodePng(
      await bytesOf(
        await call(l7, {
          f: 'image',
          format: 'png32',
          size: '349,352',
          bandIds: '0,1',
          noData: `${v0},${v1}`,
          noDataInterpretation: 'esriNoDataMatchAll',
        }),
      ),
    );
    let both = 0;
    let maskedAll = 0;
    for (let i = 0; i < 349 * 352; i++) {
      if (all.block.bands[0]![i] === v0 && all.block.bands[1]![i] === v1) both++;
      if (allPng.data[4 * i + 3] === 0) maskedAll++;
    }
    expect(both).toBeGreaterThan(0);
    expect(maskedAll).toBe(both);
    const tif = await readTiff(await bytesOf(await call(l7, { f: 'image', format: 'tiff', size: '20,20', noData: String(v0) })));
    expect(tif.info.noData).toBe(v0);
    const geoSpelling = await call(l7, {
      f: 'image',
      format: 'tiff',
      size: '10,10',
      noData: '0',
      noDataInterpretation: 'geoNoDataMatchAny',
    });
    expect(isTiff(await bytesOf(geoSpelling))).toBe(true);
    expect(await jsonOf(await call(l7, { f: 'json', noDataInterpretation: 'some' }))).toMatchObject({ error: { code: 400 } });
    expect(await jsonOf(await call(l7, { f: 'json', noData: 'abc' }))).toMatchObject({ error: { code: 400 } });
  });

  it('compression and compressionQuality', async () => {
    const bbox = windowBbox(0, 0, 200, 200);
    const none = await bytesOf(await exportImage({ f: 'image', format: 'tiff', bbox, size: '200,200', compression: 'None' }));
    const deflate = await bytesOf(await exportImage({ f: 'image', format: 'tiff', bbox, size: '200,200', compression: 'Deflate' }));
    expect(none.length).toBeGreaterThan(200 * 200 * 4);
    expect(deflate.length).toBeLessThan(none.length);
    expect(Array.from((await readTiff(none)).block.bands[0]!)).toEqual(Array.from((await readTiff(deflate)).block.bands[0]!));
    expect(JSON.stringify(await jsonOf(await exportImage({ f: 'json', format: 'tiff', compression: 'LZW' })))).toContain('LZW');
    const q10 = await bytesOf(
      await exportImage({ f: 'image', format: 'jpg', bbox, size: '200,200', renderingRule: 'Shaded', compressionQuality: '10' }),
    );
    const q95 = await bytesOf(
      await exportImage({ f: 'image', format: 'jpg', bbox, size: '200,200', renderingRule: 'Shaded', compressionQuality: '95' }),
    );
    expect(q10.length).toBeLessThan(q95.length);
    expect(await jsonOf(await exportImage({ f: 'json', compressionQuality: '0' }))).toMatchObject({ error: { code: 400 } });
  });

  it('mosaicRule is validated; a rule excluding raster 1 gives an image of NoData', async () => {
    const bbox = windowBbox(0, 0, 20, 20);
    const ok = decodePng(
      await bytesOf(
        await exportImage({ f: 'image', format: 'png', bbox, size: '20,20', mosaicRule: '{"mosaicMethod":"esriMosaicCenter"}' }),
      ),
    );
    expect(ok.data[3]).toBe(255);
    const none = decodePng(
      await bytesOf(
        await exportImage({
          f: 'image',
          format: 'png',
          bbox,
          size: '20,20',
          mosaicRule: '{"mosaicMethod":"esriMosaicLockRaster","lockRasterIds":[7]}',
        }),
      ),
    );
    expect(none.data[3]).toBe(0);
    expect(await jsonOf(await exportImage({ f: 'json', mosaicRule: '{bad' }))).toMatchObject({ error: { code: 400 } });
    expect(await jsonOf(await exportImage({ f: 'json', mosaicRule: '{"mosaicMethod":"esriMosaicFoo"}' }))).toMatchObject({
      error: { code: 400 },
    });
  });

  it('f=kmz is a KMZ with a GroundOverlay in EPSG:4326 only; an unknown f is refused', async () => {
    const res = await exportImage({ f: 'kmz', bbox: '-84.30,36.58,-84.20,36.66', bboxSR: '4326', size: '60,48', format: 'png' });
    expect(res.headers.get('content-type')).toBe('application/vnd.google-earth.kmz');
    const files = unzipSync(await bytesOf(res));
    const kml = strFromU8(files['doc.kml']!);
    expect(kml).toContain('<GroundOverlay>');
    expect(kml).toContain('<north>36.66</north>');
    expect(isPng(files['image.png']!)).toBe(true);
    expect(JSON.stringify(await jsonOf(await exportImage({ f: 'kmz' })))).toContain('imageSR=4326');
    expect(await jsonOf(await exportImage({ f: 'xml' }))).toMatchObject({ error: { code: 400 } });
  });
});

/** Polls `test` every 2 ms for up to 10 s. */
async function until(test: () => boolean): Promise<void> {
  const t0 = Date.now();
  while (!test() && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 2));
}

describe('bounded rendering', () => {
  it('50 concurrent requests never run more than the limit of renders at once', async () => {
    const services = imageServicesOf(site);
    expect(services.renderStats().limit).toBe(2);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        exportImage({ f: 'image', format: 'png', bbox: windowBbox(i % 7, i % 5, 60, 60), size: '90,90', renderingRule: 'Shaded' }),
      ),
    );
    for (const r of results) expect(isPng(await bytesOf(r))).toBe(true);
    const stats = services.renderStats();
    expect(stats.peak).toBeLessThanOrEqual(2);
    expect(stats.peak).toBe(2);
    expect(stats.running).toBe(0);
    expect(stats.queued).toBe(0);
  });

  it('beyond the queue bound requests are refused with SERVER_BUSY at once', async () => {
    const services = createImageServices(site, { maxConcurrentRenders: 1, maxQueuedRenders: 1 });
    const held = await services.renderSlot();
    const waiting = services.renderSlot();
    await expect(services.renderSlot()).rejects.toMatchObject({ code: 'SERVER_BUSY', path: 'maxQueuedRenders' });
    held.release();
    (await waiting).release();
    expect(services.renderStats()).toMatchObject({ running: 0, queued: 0, peak: 1 });
  });

  it('a client that disconnects stops its render (also while it waits for a slot)', async () => {
    const services = imageServicesOf(site);
    const a = await services.renderSlot();
    const b = await services.renderSlot();
    const controller = new AbortController();
    const res = call('/server/rest/services/dem/ImageServer/exportImage', { f: 'json', size: '100,100' }, { signal: controller.signal });
    await until(() => services.renderStats().queued === 1);
    expect(services.renderStats().queued).toBe(1);
    controller.abort();
    const body = await jsonOf<Json>(await res);
    expect(body).toMatchObject({ error: { code: 499, message: 'The request was cancelled.' } });
    expect(services.renderStats().queued).toBe(0);
    a.release();
    b.release();
    // A render in progress stops too: abort right after it starts.
    const c2 = new AbortController();
    const running = call(
      '/server/rest/services/dem/ImageServer/exportImage',
      { f: 'json', size: '4000,4000', renderingRule: 'Shaded' },
      { signal: c2.signal },
    );
    await until(() => services.renderStats().running === 1);
    c2.abort();
    expect(await jsonOf<Json>(await running)).toMatchObject({ error: { code: 499 } });
    // An export worker gives the slot back once it has stopped the job at its next tile.
    await until(() => services.renderStats().running === 0);
    expect(services.renderStats().running).toBe(0);
  });
});

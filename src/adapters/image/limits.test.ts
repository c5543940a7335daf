/**
 * The site's limits on the image service (issue 20 item 2): renders per server and per client
 * (SERVER_BUSY, HTTP 200 with a 503 body naming the setting, Retry-After), the time budget
 * (requestTimeoutMs: TIMEOUT, the render stopped and its slot freed, in the export workers and on
 * this thread), the rule caps (maxRuleDepth, maxRuleNodes) and the body size (maxBodyBytes).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { httpCall } from '../../../test/serve-helpers.js';
import { createApp } from '../../server/app.js';
import { siteRoutes } from '../../server/routes.js';
import { startServer, type RunningServer } from '../../server/serve.js';
import type { SiteConfig } from '../site.js';
import { imageServicesOf } from './service.js';

const DEM = `${import.meta.dirname}/../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
// DEM: 383 x 407 cells of 75 m from (732000, 4068150), EPSG:32616.
const EXTENT = { xmin: 732000, ymin: 4068150 - 407 * 75, xmax: 732000 + 383 * 75, ymax: 4068150 };
const BBOX = `${EXTENT.xmin},${EXTENT.ymin},${EXTENT.xmax},${EXTENT.ymax}`;
/** A slow rule: a 41 x 41 median (sorting 1681 values per pixel). */
const SLOW = JSON.stringify({ rasterFunction: 'Statistics', rasterFunctionArguments: { Type: 5, Columns: 41, Rows: 41 } });

type Json = Record<string, unknown>;
type ErrorBody = { error: { code: number; message: string; details: string[] } };

interface Harness {
  site: TestSite;
  token: string;
  call(op: string, params: Record<string, string>, options?: { token?: string | null; peer?: string; form?: boolean }): Promise<Response>;
}

const sites: TestSite[] = [];
afterEach(async () => {
  for (const s of sites.splice(0)) await imageServicesOf(s).close();
});

async function harness(config: Partial<Omit<SiteConfig, 'dataDir'>>): Promise<Harness> {
  const site = await testSite(config);
  sites.push(site);
  await site.addUser('u');
  const token = await site.token('u');
  await site.store.putService({ folder: '', serviceName: 'dem', type: 'ImageServer', properties: { path: DEM }, created: 0 });
  await site.store.putService({
    folder: '',
    serviceName: 'public',
    type: 'ImageServer',
    properties: { path: DEM, anonymous: true },
    created: 0,
  });
  const app = createApp(site, siteRoutes(site, []));
  return {
    site,
    token,
    call(op, params, options = {}) {
      const t = options.token === undefined ? token : options.token;
      const all = { ...params, ...(t ? { token: t } : {}) };
      const peer = options.peer ? { peer: options.peer } : {};
      const req = options.form
        ? siteRequest(`/server/rest/services/${op}`, { form: all, ...peer })
        : siteRequest(`/server/rest/services/${op}?${new URLSearchParams(all).toString()}`, peer);
      return app.fetch(req) as Promise<Response>;
    },
  };
}

const isPng = (b: Uint8Array): boolean => b[0] === 0x89 && b[1] === 0x50;

describe('renders per server and per client', () => {
  it('a client past maxRendersPerClient gets SERVER_BUSY at once (HTTP 200, code 503, Retry-After); others still render', async () => {
    const h = await harness({ maxRenders: 1, maxRendersPerClient: 1, maxQueuedRenders: 10 });
    const services = imageServicesOf(h.site);
    expect(services.limits).toMatchObject({ maxRenders: 1, maxRendersPerClient: 1, maxQueuedRenders: 10 });
    // user u holds its one render.
    const held = await services.renderSlot(undefined, 'user:u');
    const res = await h.call('dem/ImageServer/exportImage', { f: 'image', format: 'png', bbox: BBOX, size: '64,64' });
    expect(res.status).toBe(200);
    expect(res.headers.get('retry-after')).toBe('1');
    const body = await jsonOf<ErrorBody>(res);
    expect(body.error.code).toBe(503);
    expect(body.error.message).toBe('The server is busy. Try again later.');
    expect(body.error.details.join(' ')).toMatch(/The server is busy: .*\(maxRendersPerClient\)\. Try again shortly\./);
    // An anonymous client (another address) waits its turn and renders.
    const other = h.call(
      'public/ImageServer/exportImage',
      { f: 'image', format: 'png', bbox: BBOX, size: '64,64' },
      { token: null, peer: '10.1.1.1' },
    );
    while (services.renderStats().queued === 0) await new Promise((r) => setTimeout(r, 2));
    held.release();
    const done = await other;
    expect(done.headers.get('content-type')).toBe('image/png');
    expect(isPng(new Uint8Array(await done.arrayBuffer()))).toBe(true);
    expect(services.renderStats()).toMatchObject({ running: 0, queued: 0, clients: 0 });
  });

  it('past maxQueuedRenders every client gets SERVER_BUSY naming it; identify, histograms and tiles too', async () => {
    const h = await harness({ maxRenders: 1, maxQueuedRenders: 0 });
    const services = imageServicesOf(h.site);
    const held = await services.renderSlot(undefined, 'someone');
    for (const [op, params] of [
      ['dem/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '64,64' }],
      ['dem/ImageServer/identify', { f: 'json', geometry: '{"x":740000,"y":4050000}', geometryType: 'esriGeometryPoint' }],
      ['dem/ImageServer/computeHistograms', { f: 'json', geometry: JSON.stringify(EXTENT), geometryType: 'esriGeometryEnvelope' }],
      ['dem/ImageServer/tile/0/0/0', { f: 'json' }],
    ] as const) {
      const body = await jsonOf<ErrorBody>(await h.call(op, params));
      expect(body.error.code, op).toBe(503);
      expect(body.error.details.join(' '), op).toContain('(maxQueuedRenders)');
    }
    held.release();
    const ok = await jsonOf<Json>(await h.call('dem/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '64,64' }));
    expect(ok).toHaveProperty('href');
  });

  it('the signed-in user is the client, whatever address it comes from; anonymous callers count by address', async () => {
    const h = await harness({ maxRenders: 1, maxRendersPerClient: 1 });
    const services = imageServicesOf(h.site);
    const held = await services.renderSlot(undefined, 'ip:10.9.9.9');
    // The same address, signed in: another client, so it waits instead of being refused.
    const signedIn = h.call('dem/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '32,32' }, { peer: '10.9.9.9' });
    // The same address anonymously: the same client, refused.
    const anon = await jsonOf<ErrorBody>(
      await h.call('public/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '32,32' }, { token: null, peer: '10.9.9.9' }),
    );
    expect(anon.error.code).toBe(503);
    held.release();
    expect(await jsonOf<Json>(await signedIn)).toHaveProperty('href');
  });
});

describe('fairness', () => {
  it('a client with 20 requests waiting does not hold back one with 1: slots go round-robin', { timeout: 60_000 }, async () => {
    const h = await harness({ maxRenders: 1, maxRendersPerClient: 100 });
    const services = imageServicesOf(h.site);
    const held = await services.renderSlot(undefined, 'someone');
    const order: string[] = [];
    const params = { f: 'json', bbox: BBOX, size: '32,32' };
    const greedy = Array.from({ length: 20 }, () =>
      h.call('dem/ImageServer/exportImage', params).then(async (r) => {
        expect(await jsonOf<Json>(r)).toHaveProperty('href');
        order.push('greedy');
      }),
    );
    while (services.renderStats().queued < 20) await new Promise((r) => setTimeout(r, 2));
    const modest = h.call('public/ImageServer/exportImage', params, { token: null, peer: '10.2.2.2' }).then(async (r) => {
      expect(await jsonOf<Json>(r)).toHaveProperty('href');
      order.push('modest');
    });
    while (services.renderStats().queued < 21) await new Promise((r) => setTimeout(r, 2));
    held.release();
    await Promise.all([...greedy, modest]);
    // One of the greedy client's renders may go first; the modest one is next.
    expect(order.indexOf('modest')).toBeLessThanOrEqual(1);
    expect(services.renderStats()).toMatchObject({ running: 0, queued: 0, peak: 1 });
  });

  it('renders that name no client are not limited per client (each is its own), only per server', async () => {
    const h = await harness({ maxRenders: 2, maxRendersPerClient: 1 });
    const services = imageServicesOf(h.site);
    const a = await services.renderSlot();
    const b = await services.renderSlot();
    const c = services.renderSlot();
    expect(services.renderStats()).toMatchObject({ running: 2, queued: 1 });
    a.release();
    (await c).release();
    b.release();
  });
});

describe('the time budget (requestTimeoutMs)', () => {
  it(
    'a slow render answers TIMEOUT well before it would finish, and frees its render slot (export workers and this thread)',
    { timeout: 120_000 },
    async () => {
      // How long one output tile of the slow rule takes (no budget): the full request below has 12 x 12 of them.
      const free = await harness({ requestTimeoutMs: 0 });
      const tileBbox = `${EXTENT.xmin},${EXTENT.ymax - (EXTENT.ymax - EXTENT.ymin) / 12},${EXTENT.xmin + (EXTENT.xmax - EXTENT.xmin) / 12},${EXTENT.ymax}`;
      const t0 = performance.now();
      const one = await free.call('dem/ImageServer/exportImage', {
        f: 'image',
        format: 'png',
        bbox: tileBbox,
        size: '256,256',
        renderingRule: SLOW,
      });
      expect(one.headers.get('content-type')).toBe('image/png');
      const oneTileMs = performance.now() - t0;
      const wouldTake = 144 * oneTileMs;
      console.log(
        `one output tile of the slow rule: ${Math.round(oneTileMs)} ms; the full request would take ~${Math.round(wouldTake)} ms`,
      );

      const h = await harness({ requestTimeoutMs: 200 });
      const services = imageServicesOf(h.site);
      const started = performance.now();
      const res = await h.call('dem/ImageServer/exportImage', {
        f: 'image',
        format: 'png',
        bbox: BBOX,
        size: '3072,3072',
        renderingRule: SLOW,
      });
      const tookMs = performance.now() - started;
      console.log(`exportImage answered TIMEOUT after ${Math.round(tookMs)} ms (requestTimeoutMs 200)`);
      expect(res.status).toBe(200);
      const body = await jsonOf<ErrorBody>(res);
      expect(body.error.code).toBe(504);
      expect(body.error.message).toBe('The request took longer than the server allows.');
      expect(body.error.details.join(' ')).toContain('200 ms');
      expect(body.error.details.join(' ')).toContain('(requestTimeoutMs)');
      expect(tookMs).toBeLessThan(3000);
      expect(tookMs).toBeLessThan(wouldTake / 4);
      // The export worker stops the job at its next tile, then gives the slot back.
      const cut = performance.now();
      while (services.renderStats().running > 0 && performance.now() - cut < 3000) await new Promise((r) => setTimeout(r, 5));
      expect(services.renderStats().running).toBe(0);

      // computeHistograms renders on this thread: the same budget applies between tiles.
      const s2 = performance.now();
      const hist = await jsonOf<ErrorBody>(
        await h.call('dem/ImageServer/computeHistograms', {
          f: 'json',
          geometry: JSON.stringify(EXTENT),
          geometryType: 'esriGeometryEnvelope',
          pixelSize: '{"x":10,"y":10}',
          renderingRule: SLOW,
        }),
      );
      expect(hist.error.code).toBe(504);
      expect(performance.now() - s2).toBeLessThan(Math.min(5000, wouldTake / 4));
      expect(services.renderStats().running).toBe(0);

      // The slot is free: a quick request renders at once.
      const quick = await h.call('dem/ImageServer/exportImage', { f: 'image', format: 'png', bbox: BBOX, size: '64,64' });
      expect(quick.headers.get('content-type')).toBe('image/png');
    },
  );
});

describe('rule caps', () => {
  const nested = (levels: number): unknown => {
    let rule: unknown = '$$';
    for (let i = 0; i < levels; i++) rule = { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: rule } };
    return rule;
  };

  it('maxRuleDepth: a rule nested deeper is refused, naming the setting; the default still takes 64 levels', async () => {
    const h = await harness({ maxRuleDepth: 4 });
    const deep = await jsonOf<ErrorBody>(
      await h.call('dem/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '16,16', renderingRule: JSON.stringify(nested(6)) }),
    );
    expect(deep.error.code).toBe(400);
    expect(deep.error.details.join(' ')).toMatch(/more than 4 levels deep.*\(maxRuleDepth\)/);
    const ok = await jsonOf<Json>(
      await h.call('dem/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '16,16', renderingRule: JSON.stringify(nested(4)) }),
    );
    expect(ok).toHaveProperty('href');
    const d = await harness({});
    const sixty = await jsonOf<Json>(
      await d.call('dem/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '16,16', renderingRule: JSON.stringify(nested(60)) }),
    );
    expect(sixty).toHaveProperty('href');
  });

  it('maxRuleNodes: a rule expanding to more raster functions is refused, naming the setting', async () => {
    const h = await harness({ maxRuleNodes: 3 });
    const body = await jsonOf<ErrorBody>(
      await h.call('dem/ImageServer/exportImage', { f: 'json', bbox: BBOX, size: '16,16', renderingRule: JSON.stringify(nested(5)) }),
    );
    expect(body.error.code).toBe(400);
    expect(body.error.details.join(' ')).toMatch(/more than 3 raster functions.*\(maxRuleNodes\)/);
    // The legend plans the rule too.
    const legend = await jsonOf<ErrorBody>(await h.call('dem/ImageServer/legend', { f: 'json', renderingRule: JSON.stringify(nested(5)) }));
    expect(legend.error.details.join(' ')).toContain('(maxRuleNodes)');
  });
});

describe('maxBodyBytes under rasterflow serve', () => {
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it(
    'a body past the site maxBodyBytes is refused with 413 naming the setting, on image and admin routes',
    { timeout: 60_000 },
    async () => {
      server = await startServer({
        dataDir: mkdtempSync(join(tmpdir(), 'rf-limits-')),
        port: 0,
        httpPort: 0,
        env: { RASTERFLOW_ADMIN_PASSWORD: 'admin-password-1' },
        print: () => undefined,
        config: {
          settings: { maxBodyBytes: 2048 },
          services: [{ serviceName: 'dem', type: 'ImageServer', properties: { path: DEM, anonymous: true } }],
        },
      });
      const base = server.httpUrl!;
      const big = `f=json&bbox=${BBOX}&size=16,16&pad=${'x'.repeat(4000)}`;
      const small = `f=json&bbox=${BBOX}&size=16,16`;
      const post = (path: string, body: string) =>
        httpCall(`${base}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      const refused = await post('/server/rest/services/dem/ImageServer/exportImage', big);
      expect(refused.status).toBe(413);
      expect(refused.body).toContain('2048 bytes (maxBodyBytes)');
      const ok = await post('/server/rest/services/dem/ImageServer/exportImage', small);
      expect(JSON.parse(ok.body)).toHaveProperty('href');
      const admin = await post('/server/admin/generateToken?f=json', `username=admin&password=x&pad=${'x'.repeat(4000)}`);
      expect(admin.status).toBe(413);
      expect(admin.body).toContain('(maxBodyBytes)');
    },
  );
});

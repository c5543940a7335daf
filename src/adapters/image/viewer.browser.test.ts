/**
 * The viewer page in a real browser (Debian's chromium through playwright-core): the service's
 * f=html page, with a token in its URL, draws the image through OpenLayers' ImageArcGISRest,
 * Apply re-renders with the edited rule, invalid JSON is reported. Skips (visibly) without Chromium.
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { createAdaptorServer } from '@hono/node-server';
import type { PNG as PngClass } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testSite, type TestSite } from '../../../test/site.js';
import { createApp } from '../../server/app.js';
import { siteRoutes } from '../../server/routes.js';
import { PORTAL_AUDIENCE } from '../auth.js';
import { issueToken } from '../tokens.js';

const { PNG } = createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass };
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const DEM = `${import.meta.dirname}/../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const HILLSHADE = { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } };

let site: TestSite;
let server: ReturnType<typeof createAdaptorServer> | undefined;
let base = '';
let token = '';

if (!CHROMIUM) console.warn('viewer browser test skipped: no chromium at /usr/bin/chromium');

describe.skipIf(!CHROMIUM)('viewer in headless Chromium', () => {
  beforeAll(async () => {
    site = await testSite();
    await site.addUser('u');
    await site.store.putService({
      folder: '',
      serviceName: 'dem',
      type: 'ImageServer',
      properties: { path: DEM, renderingRule: HILLSHADE },
      created: site.clock.now(),
    });
    // The browser runs in real time: a token on the wall clock, bound to nothing.
    token = await issueToken(site.keys, {
      subject: 'u',
      audience: PORTAL_AUDIENCE,
      binding: { kind: 'none', value: '' },
      expiresAt: Date.now() + 3600_000,
    });
    site.clock.set(Date.now());
    const app = createApp(site, siteRoutes(site));
    server = createAdaptorServer({ fetch: app.fetch, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('draws the service with the token from the page URL, re-renders on Apply, reports bad JSON', { timeout: 60_000 }, async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
      const exports: string[] = [];
      const failures: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/exportImage')) exports.push(r.url());
        if (!r.url().startsWith(base)) failures.push(`outside request ${r.url()}`);
      });
      page.on('pageerror', (e) => failures.push(e.message));
      const loaded = page.waitForResponse((r) => r.url().includes('/exportImage') && r.status() === 200, { timeout: 30_000 });
      await page.goto(`${base}/server/rest/services/dem/ImageServer?f=html&token=${encodeURIComponent(token)}`);
      const first = await loaded;
      expect(first.headers()['content-type']).toBe('image/png');
      expect(exports[0]).toContain(`token=${encodeURIComponent(token)}`);
      expect(decodeURIComponent(exports[0]!)).toContain('"Hillshade"');
      await page.waitForTimeout(500);
      const shot = await page.locator('#map').screenshot();
      // relief is drawn: many grey levels in the map's pixels (not blank, not an error tile)
      const img = PNG.sync.read(shot);
      const greys = new Set<number>();
      for (let i = 0; i < img.data.length; i += 4)
        if (img.data[i] === img.data[i + 1] && img.data[i] === img.data[i + 2]) greys.add(img.data[i]!);
      expect(greys.size).toBeGreaterThan(100);

      await page.fill('#rule', '{not json');
      await page.click('#apply');
      await expect.poll(() => page.textContent('#message')).toMatch(/not valid JSON/);

      const n = exports.length;
      const again = page.waitForResponse((r) => r.url().includes('/exportImage') && r.url().includes('Slope'), { timeout: 30_000 });
      await page.fill('#rule', JSON.stringify({ rasterFunction: 'Slope' }));
      await page.click('#apply');
      expect((await again).status()).toBe(200);
      expect(exports.length).toBeGreaterThan(n);
      expect(failures).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

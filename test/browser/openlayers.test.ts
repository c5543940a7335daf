/**
 * A real web map in a real browser: Debian's Chromium (headless, driven by playwright-core with
 * `executablePath`; no browser download) opens a page served on loopback that loads OpenLayers from
 * the npm package and shows the Jacksboro DEM through `rasterflow serve`'s image service with a
 * Hillshade rendering rule, once with `ImageArcGISRest` and once with `TileArcGISRest`.
 *
 * From the screenshot's pixels: relief is drawn (grey, many levels, a real spread, nothing blank)
 * and it is the hillshade (correlation with the same rule's exportImage fetched directly for the
 * view's extent); panning (a mouse drag on one map, `view.setCenter` on the others) makes the page
 * ask for new images with new bboxes. A third map, TileArcGISRest in Web Mercator (ol's default
 * view), has the service warp the UTM raster on the fly. Every request the browser makes goes to
 * 127.0.0.1.
 *
 * Skips, saying so, only where /usr/bin/chromium does not exist.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../src/server/serve.js';
import { MAP_SIZE, pageHtml, startPageServer } from './page.js';
import { correlation, greyOf, spreadOf, type Grey } from './pixels.js';

const CHROMIUM = '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const DEM = `${import.meta.dirname}/../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const HAVE_DEM = existsSync(DEM);
// The DEM: 383 × 407 pixels of 75 m, EPSG:32616.
const EXTENT = [732000, 4037625, 760725, 4068150] as const;
const WKID = 32616;
const CENTER: [number, number] = [(EXTENT[0] + EXTENT[2]) / 2, (EXTENT[1] + EXTENT[3]) / 2];
// 30 m per CSS pixel: the view (11.5 km) sits inside the DEM, and the tile map draws level 2 of the
// tile grid (29.8 m), whose tiles (7.6 km) are smaller than a pan of 4 km plus the view.
const RESOLUTION = 30;
// The Web Mercator map: the DEM's centre (gdaltransform of the UTM centre, rounded) at zoom level 12
// (38.2 m per pixel, about 30 m on the ground at 36.4° N): the 14.7 km view and a pan of 5 km stay
// inside the DEM's footprint (-9395000..-9361000, 4364000..4400000 is inside it).
const MERC_CENTER: [number, number] = [-9378000, 4382000];
const MERC_RESOLUTION = 156543.03392804097 / 2 ** 12;
type MapName = 'image' | 'tile' | 'merc';
const MAPS: readonly MapName[] = ['image', 'tile', 'merc'];
const SR_OF: Record<MapName, number> = { image: WKID, tile: WKID, merc: 3857 };
const HILLSHADE = JSON.stringify({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } });

const SKIP_REASON = !HAVE_CHROMIUM
  ? `skipped: ${CHROMIUM} is not installed (apt-get install chromium)`
  : !HAVE_DEM
    ? `skipped: the DEM ${DEM} is not here`
    : '';
if (SKIP_REASON) console.log(`browser test ${SKIP_REASON}`);
/** When set, the screenshots are written there (looking at a failure). */
const SHOTS = process.env['RASTERFLOW_BROWSER_SHOTS'];

/** A map's screenshot, kept in SHOTS when asked. */
async function shoot(tab: { locator(s: string): { screenshot(): Promise<Buffer> } }, map: string, name: string): Promise<Grey> {
  const png = await tab.locator(`#${map}`).screenshot();
  if (SHOTS) {
    mkdirSync(SHOTS, { recursive: true });
    writeFileSync(join(SHOTS, `${name}.png`), png);
  }
  return greyOf(png);
}

/** GET over HTTPS trusting the server's certificate; the body as bytes. */
function getBytes(url: string, ca: string): Promise<{ status: number; type: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** What the page keeps in `window.rf` (see page.ts); functions run in the page reach it through globalThis. */
interface OlView {
  getCenter(): number[];
  setCenter(c: number[]): void;
  calculateExtent(size: number[]): number[];
}
type PerMap = Record<MapName, number>;
interface PageWindow {
  rf?: { done: PerMap; loaded: PerMap; errors: PerMap; maps: Record<MapName, { getView(): OlView; getSize(): number[] }> };
}

interface Seen {
  readonly url: string;
  readonly map: MapName;
  readonly bbox: string;
}

describe.skipIf(SKIP_REASON !== '')(`OpenLayers in headless Chromium against rasterflow serve ${SKIP_REASON}`, () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof startServer>>;
  let page: Awaited<ReturnType<typeof startPageServer>>;
  let serviceUrl: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'rf-browser-'));
    server = await startServer({
      dataDir,
      port: 0,
      host: '127.0.0.1',
      config: { services: [{ serviceName: 'dem', type: 'ImageServer', properties: { path: DEM, anonymous: true } }] },
      env: { RASTERFLOW_ADMIN_USERNAME: 'siteadmin', RASTERFLOW_ADMIN_PASSWORD: `browser-${process.pid}-${Date.now()}` },
      print: () => undefined,
    });
    serviceUrl = `${server.httpsUrl}/server/rest/services/dem/ImageServer`;
    page = await startPageServer(
      pageHtml({
        serviceUrl,
        extent: EXTENT,
        wkid: WKID,
        center: CENTER,
        resolution: RESOLUTION,
        mercCenter: MERC_CENTER,
        mercResolution: MERC_RESOLUTION,
        renderingRule: HILLSHADE,
      }),
    );
  }, 30_000);

  afterAll(async () => {
    await page?.close();
    await server?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** The hillshade of `extent` (in the SR `wkid`) as exportImage draws it, MAP_SIZE², fetched directly. */
  const reference = async (extent: readonly number[], wkid: number, name: string): Promise<Grey> => {
    const url =
      `${serviceUrl}/exportImage?f=image&format=png32&bbox=${extent.join(',')}&bboxSR=${wkid}&imageSR=${wkid}` +
      `&size=${MAP_SIZE},${MAP_SIZE}&renderingRule=${encodeURIComponent(HILLSHADE)}`;
    const res = await getBytes(url, server.tls.cert);
    expect(res.status, res.body.subarray(0, 300).toString()).toBe(200);
    expect(res.type).toMatch(/^image\/png/);
    if (SHOTS) writeFileSync(join(SHOTS, `${name}-exportImage.png`), res.body);
    return greyOf(res.body);
  };

  it('draws the hillshade with ImageArcGISRest and TileArcGISRest (UTM and Web Mercator), and panning asks for new images', async () => {
    const started = Date.now();
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions'],
    });
    try {
      const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 3 * MAP_SIZE + 96, height: MAP_SIZE + 64 } });
      // Anything not on loopback is refused and counted (the page must need no network).
      const offLoopback: string[] = [];
      await context.route('**/*', (route) => {
        const u = new URL(route.request().url());
        if (u.hostname === '127.0.0.1' || u.protocol === 'data:' || u.protocol === 'blob:') return route.continue();
        offLoopback.push(u.href);
        return route.abort();
      });
      const tab = await context.newPage();
      const consoleErrors: string[] = [];
      tab.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
      });
      tab.on('pageerror', (e) => consoleErrors.push(e.message));
      const seen: Seen[] = [];
      const measures: string[] = [];
      const all: string[] = [];
      tab.on('request', (r) => {
        all.push(r.url());
        const u = new URL(r.url());
        if (!u.pathname.endsWith('/ImageServer/exportImage')) return;
        const size = u.searchParams.get('size') ?? '';
        // ImageArcGISRest asks for the map's size; TileArcGISRest for 256² tiles, in the map's SR.
        const map = size !== '256,256' ? 'image' : u.searchParams.get('bboxSR') === '3857' ? 'merc' : 'tile';
        seen.push({ url: r.url(), map, bbox: u.searchParams.get('bbox') ?? '' });
      });

      await tab.goto(`${page.origin}/`);
      /** Waits until every map has rendered more than `done` times and loaded more than `loaded` images. */
      const rendered = (done: PerMap, loaded: PerMap): Promise<unknown> =>
        tab.waitForFunction(
          ([d, l]) => {
            const rf = (globalThis as PageWindow).rf;
            const names = ['image', 'tile', 'merc'] as const;
            return rf !== undefined && names.every((k) => rf.done[k] > d[k] && rf.loaded[k] > l[k]);
          },
          [done, loaded] as const,
          { timeout: 30_000 },
        );
      await rendered({ image: 0, tile: 0, merc: 0 }, { image: 0, tile: 0, merc: 0 });
      const state = (): Promise<{ done: PerMap; loaded: PerMap; errors: PerMap; extents: Record<MapName, number[]> }> =>
        tab.evaluate(() => {
          const rf = (globalThis as PageWindow).rf!;
          const extentOf = (k: MapName): number[] => rf.maps[k].getView().calculateExtent(rf.maps[k].getSize());
          const extents = { image: extentOf('image'), tile: extentOf('tile'), merc: extentOf('merc') };
          return { done: { ...rf.done }, loaded: { ...rf.loaded }, errors: { ...rf.errors }, extents };
        });
      const before = await state();
      expect(before.errors).toEqual({ image: 0, tile: 0, merc: 0 });
      expect(before.loaded.tile).toBeGreaterThanOrEqual(2);
      expect(before.loaded.merc).toBeGreaterThanOrEqual(2);

      // Relief, from the screenshot's pixels of each map.
      for (const map of MAPS) {
        const shot = await shoot(tab, map, `${map}-before`);
        expect([shot.width, shot.height]).toEqual([MAP_SIZE, MAP_SIZE]);
        const s = spreadOf(shot);
        expect(shot.colouredShare, `${map}: a hillshade is grey`).toBeLessThan(0.01);
        expect(s.blankShare, `${map}: nothing blank inside the DEM`).toBeLessThan(0.01);
        expect(s.levels, `${map}: grey levels`).toBeGreaterThan(60);
        expect(s.stdDev, `${map}: spread of the grey levels`).toBeGreaterThan(12);
        const ref = await reference(before.extents[map], SR_OF[map], `${map}-before`);
        const r = correlation(shot, ref);
        measures.push(`${map}: ${s.levels} levels, std ${s.stdDev.toFixed(1)}, r ${r.toFixed(3)}`);
        expect(r, `${map}: correlation with exportImage's own hillshade of the view`).toBeGreaterThan(0.9);
      }

      // Panning: a mouse drag on the ImageArcGISRest map, setCenter on the TileArcGISRest maps.
      const first = new Set(seen.map((s) => `${s.map} ${s.bbox}`));
      const box = await tab.locator('#image').boundingBox();
      if (!box) throw new Error('no #image box');
      const cx = box.x + box.width / 2;
      const cy = box.y + box.height / 2;
      await tab.mouse.move(cx, cy);
      await tab.mouse.down();
      for (let i = 1; i <= 10; i++) await tab.mouse.move(cx - 12 * i, cy + 8 * i);
      await tab.mouse.up();
      await tab.evaluate(() => {
        const rf = (globalThis as PageWindow).rf!;
        for (const [k, d] of [
          ['tile', 4000],
          ['merc', 5000],
        ] as const) {
          const view = rf.maps[k].getView();
          const c = view.getCenter();
          view.setCenter([c[0]! + d, c[1]! - d]);
        }
      });
      await rendered(before.done, before.loaded);
      const after = await state();
      expect(after.errors).toEqual({ image: 0, tile: 0, merc: 0 });
      // Dragging the map left and down moved the view east and north, at least by the 120 × 80 CSS
      // pixels dragged (ol's kinetic panning may carry it further).
      expect(after.extents.image[0]! - before.extents.image[0]!).toBeGreaterThan(0.9 * 120 * RESOLUTION);
      expect(after.extents.image[1]! - before.extents.image[1]!).toBeGreaterThan(0.9 * 80 * RESOLUTION);
      const fresh = (map: MapName): number => seen.filter((s) => s.map === map && !first.has(`${map} ${s.bbox}`)).length;
      expect(fresh('image'), 'the drag asked for a new image with a new bbox').toBeGreaterThanOrEqual(1);
      expect(fresh('tile'), 'setCenter asked for new UTM tiles with new bboxes').toBeGreaterThanOrEqual(1);
      expect(fresh('merc'), 'setCenter asked for new Web Mercator tiles with new bboxes').toBeGreaterThanOrEqual(1);
      for (const s of seen) {
        const u = new URL(s.url);
        expect(u.searchParams.get('renderingRule')).toBe(HILLSHADE);
        expect(u.searchParams.get('bboxSR')).toBe(String(SR_OF[s.map]));
        expect(u.searchParams.get('imageSR')).toBe(String(SR_OF[s.map]));
      }
      // The panned maps still show the relief of the new view.
      for (const map of MAPS) {
        const shot = await shoot(tab, map, `${map}-after-pan`);
        expect(spreadOf(shot).stdDev, `${map} after the pan`).toBeGreaterThan(12);
        expect(
          correlation(shot, await reference(after.extents[map], SR_OF[map], `${map}-after-pan`)),
          `${map} after the pan`,
        ).toBeGreaterThan(0.9);
      }

      expect(offLoopback).toEqual([]);
      expect(all.every((u) => new URL(u).hostname === '127.0.0.1')).toBe(true);
      expect(consoleErrors).toEqual([]);
      console.log(
        `browser test: ${seen.length} exportImage requests (${seen.filter((s) => s.map === 'image').length} ImageArcGISRest, ` +
          `${seen.filter((s) => s.map === 'tile').length} TileArcGISRest UTM, ${seen.filter((s) => s.map === 'merc').length} TileArcGISRest 3857) ` +
          `in ${Date.now() - started} ms; ${measures.join('; ')}`,
      );
    } finally {
      await browser.close();
    }
  }, 60_000);
});

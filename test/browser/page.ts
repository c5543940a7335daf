/**
 * The browser test's page and the tiny loopback static server that serves it with OpenLayers from
 * the npm package (`ol/dist/ol.js`, global `ol`; no CDN, no network).
 *
 * The page shows two maps side by side, each SIZE × SIZE CSS pixels, over one image service:
 * `#image` with `ol.source.ImageArcGISRest` (one exportImage per view) and `#tile` with
 * `ol.source.TileArcGISRest` (exportImage per 256² tile), both with the same renderingRule.
 *
 * Decision: the view is in the raster's own SR (UTM 16N, EPSG:32616), declared as a plain
 * `ol.proj.Projection` in metres with the raster's extent. ol's dist build carries no proj4, and
 * without transforms a projection only needs its code and units: ol then asks for
 * bboxSR=imageSR=32616, so the pixels the browser draws are the service's own render, not a warp,
 * and the comparison with a direct exportImage of the same extent is exact up to ol's resampling.
 * (Web Mercator views are exercised by the warp's own tests against gdalwarp.)
 *
 * Page state for the test (`window.rf`): `done.image`/`done.tile` count `rendercomplete` events after
 * at least one image loaded; `loaded`/`errors` count image (tile) load events per map; `maps` holds
 * both ol.Map objects.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const MAP_SIZE = 384;

export interface PageOptions {
  /** `https://127.0.0.1:<port>/server/rest/services/<name>/ImageServer` */
  readonly serviceUrl: string;
  /** The raster's extent in its SR: [xmin, ymin, xmax, ymax]. */
  readonly extent: readonly [number, number, number, number];
  /** EPSG code of the raster's SR. */
  readonly wkid: number;
  /** The view's first centre and resolution (metres per CSS pixel). */
  readonly center: readonly [number, number];
  readonly resolution: number;
  /** The renderingRule parameter, as sent (a JSON string). */
  readonly renderingRule: string;
}

export function pageHtml(o: PageOptions): string {
  const config = JSON.stringify(o).replace(/</g, '\\u003c');
  return `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>rasterflow image service in OpenLayers</title>
<link rel="stylesheet" href="/ol.css">
<style>
  html, body { margin: 0; padding: 0; background: #ffffff; }
  .map { width: ${MAP_SIZE}px; height: ${MAP_SIZE}px; float: left; margin: 8px; background: #ffffff; }
  .ol-control, .ol-attribution, .ol-zoom, .ol-rotate { display: none !important; }
</style>
</head>
<body>
<div id="image" class="map"></div>
<div id="tile" class="map"></div>
<script src="/ol.js"></script>
<script>
  const cfg = ${config};
  const projection = new ol.proj.Projection({ code: 'EPSG:' + cfg.wkid, units: 'm', extent: cfg.extent });
  const params = { renderingRule: cfg.renderingRule };
  const rf = (window.rf = { done: { image: 0, tile: 0 }, loaded: { image: 0, tile: 0 }, errors: { image: 0, tile: 0 }, maps: {} });
  function makeMap(target, layer) {
    const map = new ol.Map({
      target,
      layers: [layer],
      controls: [],
      view: new ol.View({ projection, center: cfg.center.slice(), resolution: cfg.resolution }),
    });
    map.on('rendercomplete', () => {
      if (rf.loaded[target] > 0) rf.done[target]++;
    });
    rf.maps[target] = map;
    return map;
  }
  const imageSource = new ol.source.ImageArcGISRest({ url: cfg.serviceUrl, params, ratio: 1, hidpi: false });
  imageSource.on('imageloadend', () => rf.loaded.image++);
  imageSource.on('imageloaderror', () => rf.errors.image++);
  makeMap('image', new ol.layer.Image({ source: imageSource }));
  const tileSource = new ol.source.TileArcGISRest({ url: cfg.serviceUrl, params, hidpi: false });
  tileSource.on('tileloadend', () => rf.loaded.tile++);
  tileSource.on('tileloaderror', () => rf.errors.tile++);
  makeMap('tile', new ol.layer.Tile({ source: tileSource }));
</script>
</body>
</html>
`;
}

/** Serves `/` (the page), `/ol.js` and `/ol.css` from node_modules on 127.0.0.1 (a free port). Everything else is 404. */
export async function startPageServer(html: string): Promise<{ origin: string; server: Server; close(): Promise<void> }> {
  const olJs = readFileSync(new URL('../../node_modules/ol/dist/ol.js', import.meta.url));
  const olCss = readFileSync(new URL('../../node_modules/ol/ol.css', import.meta.url));
  const files: Record<string, { type: string; body: Buffer | string }> = {
    '/': { type: 'text/html; charset=utf-8', body: html },
    '/ol.js': { type: 'text/javascript; charset=utf-8', body: olJs },
    '/ol.css': { type: 'text/css; charset=utf-8', body: olCss },
  };
  const server = createServer((req, res) => {
    const file = files[new URL(req.url ?? '/', 'http://127.0.0.1').pathname];
    if (!file) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

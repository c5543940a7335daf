/**
 * The browser test's page and the tiny loopback static server that serves it with OpenLayers from
 * the npm package (`ol/dist/ol.js`, global `ol`; no CDN, no network).
 *
 * The page shows three maps side by side, each MAP_SIZE × MAP_SIZE CSS pixels, over one image
 * service, all with the same renderingRule: `#image` with `ol.source.ImageArcGISRest` (one
 * exportImage per view) and `#tile` with `ol.source.TileArcGISRest` (exportImage per 256² tile), both
 * in the raster's SR, and `#merc` with `ol.source.TileArcGISRest` in Web Mercator, as web maps run.
 *
 * Decision: the first two views are in the raster's own SR (UTM 16N, EPSG:32616), declared as a
 * plain `ol.proj.Projection` in metres with the raster's extent. ol's dist build carries no proj4,
 * and without transforms a projection only needs its code and units: ol then asks for
 * bboxSR=imageSR=32616, so what the browser draws is the service's render without a warp. The third
 * view is ol's built-in EPSG:3857: ol asks for bboxSR=imageSR=3857 and the service warps (the
 * warp's pixels are checked against gdalwarp by its own tests; here, that a web map draws them).
 *
 * Page state for the test (`window.rf`): `done.<map>` counts `rendercomplete` events after
 * at least one image loaded; `loaded`/`errors` count image (tile) load events per map; `maps` holds
 * the ol.Map objects.
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
  /** The Web Mercator map's first centre and resolution. */
  readonly mercCenter: readonly [number, number];
  readonly mercResolution: number;
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
<div id="merc" class="map"></div>
<script src="/ol.js"></script>
<script>
  const cfg = ${config};
  const projection = new ol.proj.Projection({ code: 'EPSG:' + cfg.wkid, units: 'm', extent: cfg.extent });
  const params = { renderingRule: cfg.renderingRule };
  const zero = () => ({ image: 0, tile: 0, merc: 0 });
  const rf = (window.rf = { done: zero(), loaded: zero(), errors: zero(), maps: {} });
  function makeMap(target, layer, view) {
    const map = new ol.Map({ target, layers: [layer], controls: [], view });
    map.on('rendercomplete', () => {
      if (rf.loaded[target] > 0) rf.done[target]++;
    });
    rf.maps[target] = map;
    return map;
  }
  const imageSource = new ol.source.ImageArcGISRest({ url: cfg.serviceUrl, params, ratio: 1, hidpi: false });
  imageSource.on('imageloadend', () => rf.loaded.image++);
  imageSource.on('imageloaderror', () => rf.errors.image++);
  const utmView = () => new ol.View({ projection, center: cfg.center.slice(), resolution: cfg.resolution });
  makeMap('image', new ol.layer.Image({ source: imageSource }), utmView());
  const tileSource = new ol.source.TileArcGISRest({ url: cfg.serviceUrl, params, hidpi: false });
  tileSource.on('tileloadend', () => rf.loaded.tile++);
  tileSource.on('tileloaderror', () => rf.errors.tile++);
  makeMap('tile', new ol.layer.Tile({ source: tileSource }), utmView());
  const mercSource = new ol.source.TileArcGISRest({ url: cfg.serviceUrl, params, hidpi: false });
  mercSource.on('tileloadend', () => rf.loaded.merc++);
  mercSource.on('tileloaderror', () => rf.errors.merc++);
  makeMap('merc', new ol.layer.Tile({ source: mercSource }), new ol.View({ center: cfg.mercCenter.slice(), resolution: cfg.mercResolution }));
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

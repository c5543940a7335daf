/**
 * The image service's viewer (`f=html` on the service root): the service on an OpenLayers map
 * (an `ImageArcGISRest` source against this service's exportImage, view in Web Mercator, the
 * server reprojecting), with the rendering rule editable in a textarea (Apply re-renders; invalid
 * JSON and the server's error messages are shown under it), and a list of the published templates.
 *
 * OpenLayers is served by this server from the `ol` npm package (no CDN):
 * `/server/rest/static/ol/ol.js`, `/server/rest/static/ol/ol.css`; the page's own script is a
 * file too (`/server/rest/static/image-viewer.js`), and its settings travel in a
 * `<script type="application/json">` block, so the page works under a strict CSP (`script-src 'self'`).
 * A `token` in the page's URL is passed on to every exportImage request.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Extent } from '../../core/pixel-block.js';
import { escapeHtml, type Route } from '../rest.js';

export const STATIC_PREFIX = '/server/rest/static';

let olDir: string | undefined;
/** Folder of the installed `ol` package. */
export function olPackageDir(): string {
  return (olDir ??= dirname(createRequire(import.meta.url).resolve('ol/package.json')));
}

const cached = new Map<string, Uint8Array>();
function staticFile(path: string): Uint8Array {
  let b = cached.get(path);
  if (b === undefined) {
    b = new Uint8Array(readFileSync(path));
    cached.set(path, b);
  }
  return b;
}

/** The viewer's script (served as a file; reads its settings from the JSON block). */
export const VIEWER_SCRIPT = `'use strict';
(function () {
  var settings = JSON.parse(document.getElementById('viewer-settings').textContent);
  var pageParams = new URLSearchParams(window.location.search);
  var token = pageParams.get('token');
  var ruleBox = document.getElementById('rule');
  var message = document.getElementById('message');
  var templates = document.getElementById('templates');
  function show(text, isError) {
    message.textContent = text || '';
    message.className = isError ? 'error' : '';
  }
  function baseParams() {
    var p = { format: 'png32', f: 'image' };
    if (token) p.token = token;
    return p;
  }
  var params = baseParams();
  if (settings.rule) params.renderingRule = settings.rule;
  var source = new ol.source.ImageArcGISRest({ url: settings.url, params: params, ratio: 1, crossOrigin: null });
  var layer = new ol.layer.Image({ source: source });
  var map = new ol.Map({ target: 'map', layers: [layer], view: new ol.View({ projection: 'EPSG:3857' }) });
  var e = settings.extent3857;
  if (e) map.getView().fit([e.xmin, e.ymin, e.xmax, e.ymax], { size: map.getSize() });
  else map.getView().setCenter([0, 0]), map.getView().setZoom(2);
  source.on('imageloaderror', function () {
    // Ask the service why (the same request as JSON) and show its message.
    var q = new URLSearchParams();
    var p = source.getParams();
    Object.keys(p).forEach(function (k) { if (k !== 'f') q.set(k, p[k]); });
    var ext = map.getView().calculateExtent(map.getSize());
    var size = map.getSize();
    q.set('bbox', ext.join(',')); q.set('bboxSR', '3857'); q.set('imageSR', '3857');
    q.set('size', Math.round(size[0]) + ',' + Math.round(size[1])); q.set('f', 'json');
    fetch(settings.url + '/exportImage?' + q.toString()).then(function (r) { return r.json(); }).then(function (j) {
      if (j && j.error) show(j.error.message + (j.error.details && j.error.details.length ? ': ' + j.error.details.join(' ') : ''), true);
      else show('The image could not be loaded.', true);
    }, function () { show('The image could not be loaded.', true); });
  });
  source.on('imageloadend', function () { if (message.className === 'error') return; show(''); });
  document.getElementById('apply').addEventListener('click', function () {
    var text = ruleBox.value.trim();
    var p = baseParams();
    if (text !== '') {
      try { JSON.parse(text); } catch (err) { show('The rule is not valid JSON: ' + err.message, true); return; }
      p.renderingRule = text;
    }
    show('');
    var old = source.getParams();
    Object.keys(old).forEach(function (k) { if (!(k in p)) p[k] = undefined; });
    source.updateParams(p);
  });
  if (templates) templates.addEventListener('change', function () {
    var name = templates.value;
    if (name === '') return;
    ruleBox.value = JSON.stringify({ rasterFunction: name }, null, 2);
  });
  window.rasterflowViewer = { map: map, source: source };
})();
`;

export interface ViewerSettings {
  readonly title: string;
  /** The service URL (…/ImageServer), absolute or root-relative. */
  readonly url: string;
  /** The service's extent in Web Mercator, when it can be mapped there. */
  readonly extent3857?: Extent;
  /** The rule the textarea starts with (the service's default, as JSON text), or ''. */
  readonly rule: string;
  readonly templates: readonly string[];
  readonly description?: string;
  /** A still preview (exportImage of the full extent) shown when scripts are off. */
  readonly preview?: { readonly src: string; readonly width: number; readonly height: number };
}

/** The viewer page. */
export function viewerHtml(s: ViewerSettings): string {
  // Inside <script type="application/json">, only "</" could end the block: escape "<".
  const json = JSON.stringify({ url: s.url, extent3857: s.extent3857 ?? null, rule: s.rule }).replace(/</g, '\\u003c');
  const options = s.templates.map((t) => `<option value="${escapeHtml(t)}">${escapeHtml(t)}</option>`).join('');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(s.title)} (ImageServer)</title>
<link rel="stylesheet" href="${STATIC_PREFIX}/ol/ol.css">
<link rel="stylesheet" href="${STATIC_PREFIX}/image-viewer.css">
</head>
<body>
<header><h1>${escapeHtml(s.title)} <small>(ImageServer)</small></h1>${s.description ? `<p>${escapeHtml(s.description)}</p>` : ''}
<p><a href="?f=json">JSON</a> · <a href="?f=pjson">pretty JSON</a></p></header>
<main>
<div id="map" class="map">${s.preview ? `<noscript><img alt="${escapeHtml(s.title)}" width="${s.preview.width}" height="${s.preview.height}" src="${escapeHtml(s.preview.src)}"></noscript>` : ''}</div>
<aside>
<label for="rule">Rendering rule (JSON; empty for the service's default)</label>
<textarea id="rule" spellcheck="false" rows="16">${escapeHtml(s.rule)}</textarea>
${s.templates.length > 0 ? `<label for="templates">Published templates</label><select id="templates"><option value="">—</option>${options}</select>` : ''}
<button id="apply" type="button">Apply</button>
<p id="message" role="status"></p>
</aside>
</main>
<script type="application/json" id="viewer-settings">${json}</script>
<script src="${STATIC_PREFIX}/ol/ol.js"></script>
<script src="${STATIC_PREFIX}/image-viewer.js"></script>
</body>
</html>
`;
}

export const VIEWER_CSS = `body{font-family:system-ui,sans-serif;margin:0;color:#222}
header{padding:.5rem 1rem;border-bottom:1px solid #ddd}h1{font-size:1.2rem;margin:.2rem 0}
main{display:flex;height:calc(100vh - 6rem)}.map{flex:1;min-height:400px}
aside{width:26rem;padding:.5rem 1rem;display:flex;flex-direction:column;gap:.4rem}
textarea{font-family:ui-monospace,monospace;font-size:12px;flex:1}
#message.error{color:#b00020;white-space:pre-wrap}
`;

const immutable = (type: string, body: Uint8Array | string): Response =>
  new Response(typeof body === 'string' ? body : Buffer.from(body), {
    headers: { 'content-type': type, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
  });

/** The static files of the viewer (OpenLayers from the installed package, the viewer's script and style). */
export function viewerStaticRoutes(): Route[] {
  const get = (path: string, answer: () => Response): Route => ({
    method: 'GET',
    path: `${STATIC_PREFIX}${path}`,
    handler: () => Promise.resolve(answer()),
  });
  return [
    get('/ol/ol.js', () => immutable('text/javascript; charset=utf-8', staticFile(join(olPackageDir(), 'dist', 'ol.js')))),
    get('/ol/ol.css', () => immutable('text/css; charset=utf-8', staticFile(join(olPackageDir(), 'ol.css')))),
    get('/image-viewer.js', () => immutable('text/javascript; charset=utf-8', VIEWER_SCRIPT)),
    get('/image-viewer.css', () => immutable('text/css; charset=utf-8', VIEWER_CSS)),
  ];
}

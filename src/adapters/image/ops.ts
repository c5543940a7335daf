/**
 * The whole image service family as the host mounts it: the core routes (service resource,
 * exportImage, held outputs, catalogue; `imageRoutes` in index.ts) plus the operations of this
 * slice — identify, computeHistograms, computeStatisticsHistograms, legend, tiles (with the
 * service resource's tileInfo), the viewer as the service's `f=html` page and its static files —
 * every service route wrapped in the per-service CORS policy (cors.ts).
 */
import { join } from 'node:path';
import { transformExtent } from '../../graph/warp.js';
import type { Handler, Route } from '../rest.js';
import { serviceKey } from '../site.js';
import { SERVICES_ROOT, servicePathOf, type ImageDeps } from './access.js';
import { corsPolicyOf, withCors, type CorsPolicy } from './cors.js';
import { histogramsHandler } from './histograms.js';
import { identifyHandler } from './identify.js';
import { imageRoutes } from './index.js';
import { legendHandler } from './legend.js';
import { imageServicesOf, type ImageServices, type OpenedImageService } from './service.js';
import { TileCache } from './tile-cache.js';
import { tileHandler, tileInfoExtension } from './tiles.js';
import { viewerHtml, viewerStaticRoutes } from './viewer.js';

export interface ImageServiceOptions {
  /** CORS for services whose properties set no `cors` (default: none, same-origin only). */
  readonly corsDefault?: CorsPolicy;
  /** Tile `Cache-Control` max-age when a service sets no `tileMaxAge` (seconds, default 3600). */
  readonly tileMaxAge?: number;
  readonly services?: ImageServices;
}

/** The viewer page of a service (the resource's `f=html`). */
export function viewerPage(service: OpenedImageService, _json: Record<string, unknown>, servicePath: string): string {
  const info = service.info;
  let extent3857;
  try {
    extent3857 = info.spatialReference ? transformExtent(info.extent, info.spatialReference, { wkid: 3857 }) : undefined;
  } catch {
    extent3857 = undefined;
  }
  const rule = service.settings.renderingRule;
  const e = info.extent;
  const width = 400;
  const height = Math.max(1, Math.min(1600, Math.round((width * (e.ymax - e.ymin)) / (e.xmax - e.xmin))));
  const preview = {
    src: `${servicePath}/exportImage?f=image&format=png&size=${width},${height}&bbox=${[e.xmin, e.ymin, e.xmax, e.ymax].join(',')}`,
    width,
    height,
  };
  return viewerHtml({
    title: service.name,
    url: servicePath,
    ...(extent3857 ? { extent3857 } : {}),
    rule: rule === undefined ? '' : JSON.stringify(typeof rule === 'string' ? (JSON.parse(rule) as unknown) : rule, null, 2),
    templates: service.settings.templates.map((t) => t.name),
    description: service.settings.serviceDescription,
    preview,
  });
}

/** A GET route answering OPTIONS preflights too (CORS); other methods 405. */
function getAndOptions(handler: Handler): Handler {
  return (req) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return handler(req);
    const body = JSON.stringify({
      error: { code: 405, message: 'Method not allowed.', details: [`${req.method} is not allowed here; use GET.`] },
    });
    return Promise.resolve(
      new Response(body, { status: 405, headers: { allow: 'GET, OPTIONS', 'content-type': 'application/json; charset=utf-8' } }),
    );
  };
}

/** Every image service route (mounted by `server/routes.ts`). */
export function imageServiceRoutes(deps: ImageDeps, options: ImageServiceOptions = {}): Route[] {
  const services = options.services ?? imageServicesOf(deps);
  // Site defaults: the options (embedders, tests), else the site's settings (`corsOrigins`, `tileMaxAge`).
  const corsDefault = options.corsDefault ?? (deps.config.corsOrigins?.length ? { origins: deps.config.corsOrigins } : undefined);
  const tileMaxAge = options.tileMaxAge ?? deps.config.tileMaxAge;
  const cache = new TileCache(join(deps.config.dataDir, 'tile-cache'));
  const identify = identifyHandler(deps, services);
  const histograms = histogramsHandler(deps, false, services);
  const statsHistograms = histogramsHandler(deps, true, services);
  const legend = legendHandler(deps, services);
  const tile = tileHandler(deps, services, { cache, ...(tileMaxAge !== undefined ? { maxAge: tileMaxAge } : {}) });
  const ops: Route[] = [];
  for (const base of [`${SERVICES_ROOT}/:name/ImageServer`, `${SERVICES_ROOT}/:folder/:name/ImageServer`]) {
    ops.push(
      { method: 'ALL', path: `${base}/identify`, handler: identify },
      { method: 'ALL', path: `${base}/computeHistograms`, handler: histograms },
      { method: 'ALL', path: `${base}/computeStatisticsHistograms`, handler: statsHistograms },
      { method: 'ALL', path: `${base}/legend`, handler: legend },
      { method: 'GET', path: `${base}/tile/:level/:row/:col`, handler: tile },
    );
  }
  const core = imageRoutes(deps, { services, infoExtensions: [tileInfoExtension], htmlPage: viewerPage });
  const policyFor = async (req: Request): Promise<CorsPolicy | undefined> => {
    const path = servicePathOf(req);
    if (!path) return corsDefault;
    const record = await deps.store.getService(serviceKey({ folder: path.folder, serviceName: path.name, type: 'ImageServer' }));
    return corsPolicyOf(record?.properties, corsDefault);
  };
  const wrapped = [...ops, ...core].map((r): Route => ({
    method: 'ALL',
    path: r.path,
    handler: withCors(policyFor, r.method === 'GET' ? getAndOptions(r.handler) : r.handler),
  }));
  return [...viewerStaticRoutes(), ...wrapped];
}

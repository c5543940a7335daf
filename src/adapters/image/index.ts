/**
 * The image service family (issue 18): `{services_url}/[<folder>/]<name>/ImageServer` for every
 * ImageServer service of the store: the service resource, exportImage and its held results, plus
 * the services catalogue (`{services_url}[/<folder>]`). `imageRoutes(deps)` is mounted by the host.
 * The services root is shared with the GP task (`System/RasterAnalysisTools/GPServer`): these
 * routes only match paths ending in `/ImageServer[/...]` or the catalogue's one or two segments.
 */
import { EngineError } from '../../core/errors.js';
import { readParams, requireHttps, respond, withRestErrors, type Route } from '../rest.js';
import { fromTrustedProxy, originOf, serviceKey, type ServiceRecord } from '../site.js';
import { openRequestedService, optionalCaller, SERVICES_ROOT, servicePathOf, type ImageDeps } from './access.js';
import { createHeldImages, exportImage, heldImageResponse, type HeldImages } from './export-image.js';
import { CURRENT_VERSION, serviceHtml, serviceInfo, type InfoExtension } from './info.js';
import { exportPoolOf } from './export-pool.js';
import { imageServicesOf, type ImageServices } from './service.js';

export { imageServicesOf, type ImageServices, type OpenedImageService } from './service.js';
export { renderOnGrid, resolveServiceRule, planServiceRule, type RenderGrid, type RenderedImage } from './render-request.js';
export { openRequestedService } from './access.js';

export interface ImageRouteOptions {
  /** Fields sibling modules add to the service resource (tiles: singleFusedMapCache, tileInfo). */
  readonly infoExtensions?: readonly InfoExtension[];
  /** Replaces the service's f=html page (the viewer). */
  readonly htmlPage?: (service: import('./service.js').OpenedImageService, json: Record<string, unknown>, servicePath: string) => string;
  /** Shared registry (default: the site's, imageServicesOf). */
  readonly services?: ImageServices;
}

const held = new WeakMap<object, HeldImages>();
const heldOf = (deps: ImageDeps): HeldImages => {
  let h = held.get(deps.store);
  if (!h) {
    h = createHeldImages();
    held.set(deps.store, h);
  }
  return h;
};

/** The absolute URL path of a service: `/server/rest/services/[folder/]name/ImageServer`. */
const servicePathname = (folder: string, name: string): string =>
  `${SERVICES_ROOT}/${folder ? `${encodeURIComponent(folder)}/` : ''}${encodeURIComponent(name)}/ImageServer`;

/** `ImageServer` resource handler. */
export function imageInfoHandler(deps: ImageDeps, options: ImageRouteOptions = {}) {
  const services = options.services ?? imageServicesOf(deps);
  return withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    const { service, path } = await openRequestedService(deps, services, req, params);
    if (path.rest !== '')
      throw new EngineError('NOT_FOUND', `no resource ${path.rest}`, {
        details: [`'${path.rest}' is not a resource of an image service.`],
      });
    const pathname = servicePathname(path.folder, path.name);
    const json = serviceInfo(service, `${originOf(req, deps.config)}${pathname}`, options.infoExtensions ?? []);
    const f = (params.get('f') ?? '').trim().toLowerCase();
    if (f === '' || f === 'html') {
      const page = options.htmlPage ? options.htmlPage(service, json, pathname) : serviceHtml(service, json, pathname, '');
      return new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } });
    }
    return respond(params.get('f'), json);
  });
}

/** `exportImage` handler (GET and POST). */
export function exportImageHandler(deps: ImageDeps, options: ImageRouteOptions = {}) {
  const services = options.services ?? imageServicesOf(deps);
  return withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    const { service, path, caller } = await openRequestedService(deps, services, req, params);
    const url = `${originOf(req, deps.config)}${servicePathname(path.folder, path.name)}`;
    const pool = exportPoolOf();
    return exportImage(
      { services, held: heldOf(deps), now: () => Date.now(), ...(pool ? { pool } : {}) },
      req,
      params,
      service,
      url,
      caller,
    );
  });
}

/** `.../ImageServer/output/<id>`: an image exportImage f=json holds (no token: the id is the capability). */
export function heldImageHandler(deps: ImageDeps) {
  return withRestErrors('sharing', async (req) => {
    requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
    const path = servicePathOf(req);
    const m = path ? /^output\/([0-9a-f]{32}\.(?:png|jpg|tif))$/.exec(path.rest) : null;
    if (!path || !m)
      throw new EngineError('NOT_FOUND', 'no such exported image', { details: ['The exported image does not exist or has expired.'] });
    const key = serviceKey({ folder: path.folder, serviceName: path.name, type: 'ImageServer' });
    return heldImageResponse(heldOf(deps), key, m[1]!, Date.now());
  });
}

// ---------------------------------------------------------------------------------------------
// The services catalogue

/**
 * `GET /server/rest/services[/<folder>]?f=json`: `{currentVersion, folders, services:[{name, type}]}`.
 * Decision: a caller without a token sees the anonymous services only; a signed-in caller sees every
 * service (the site has no per-service sharing yet). An unknown folder is 404.
 */
export function catalogueHandler(deps: ImageDeps) {
  return withRestErrors('sharing', async (req) => {
    requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
    const params = await readParams(req);
    const caller = await optionalCaller(deps, req, params);
    const path = new URL(req.url).pathname.replace(/\/+$/, '');
    const folder = path.length > SERVICES_ROOT.length ? decodeURIComponent(path.slice(SERVICES_ROOT.length + 1)) : '';
    const all = await deps.store.listServices();
    const visible = (s: ServiceRecord): boolean => caller !== undefined || s.properties['anonymous'] === true;
    const folders = [...new Set(all.filter((s) => s.folder !== '').map((s) => s.folder))].sort();
    if (folder !== '' && !folders.includes(folder)) {
      throw new EngineError('NOT_FOUND', `no folder ${folder}`, { details: [`Folder '${folder}' not found.`] });
    }
    const services = all
      .filter((s) => s.folder === folder && visible(s))
      .map((s) => ({ name: `${s.folder ? `${s.folder}/` : ''}${s.serviceName}`, type: s.type }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.type.localeCompare(b.type));
    const body =
      folder === '' ? { currentVersion: CURRENT_VERSION, folders, services } : { currentVersion: CURRENT_VERSION, folders: [], services };
    return respond(params.get('f'), body, { title: folder === '' ? 'Services Directory' : `Folder: ${folder}` });
  });
}

/** Every route of the family, with and without a folder. */
export function imageRoutes(deps: ImageDeps, options: ImageRouteOptions = {}): Route[] {
  const info = imageInfoHandler(deps, options);
  const exportH = exportImageHandler(deps, options);
  const heldH = heldImageHandler(deps);
  const catalogue = catalogueHandler(deps);
  const routes: Route[] = [];
  for (const base of [`${SERVICES_ROOT}/:name/ImageServer`, `${SERVICES_ROOT}/:folder/:name/ImageServer`]) {
    routes.push(
      { method: 'ALL', path: `${base}/exportImage`, handler: exportH },
      { method: 'GET', path: `${base}/output/:id`, handler: heldH },
      { method: 'ALL', path: base, handler: info },
    );
  }
  routes.push(
    { method: 'GET', path: SERVICES_ROOT, handler: catalogue },
    { method: 'GET', path: `${SERVICES_ROOT}/:folder`, handler: catalogue },
  );
  return routes;
}

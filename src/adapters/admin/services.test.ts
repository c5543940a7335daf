import { beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_AUDIENCE, jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import type { Route } from '../rest.js';
import { SITE_BACKUP_LOCK } from '../site.js';
import { parseServicesPath, serviceRoutes } from './services.js';

type Json = Record<string, unknown>;

function dispatch(routes: readonly Route[], req: Request): Promise<Response> {
  const path = new URL(req.url).pathname;
  const route = routes.find((r) => (r.path.endsWith('/*') ? path.startsWith(r.path.slice(0, -1)) : path === r.path));
  if (!route) throw new Error(`no route for ${path}`);
  return route.handler(req);
}

const adminError = (code: number, ...messages: string[]): Json => ({ status: 'error', messages, code });
const FORBIDDEN = adminError(403, 'You do not have permissions to access this resource or perform this operation.');

let site: TestSite;
let routes: Route[];
let admin: string;

beforeEach(async () => {
  site = await testSite();
  await site.addUser('admin', 'administrator');
  await site.addUser('pub', 'publisher', ['featureLayer', 'geoprocessing', 'publishServerLayers']);
  routes = serviceRoutes(site);
  admin = await site.token('admin', { audience: ADMIN_AUDIENCE });
});

async function get(path: string, token: string | null = admin): Promise<Json> {
  const sep = path.includes('?') ? '&' : '?';
  return jsonOf(await dispatch(routes, siteRequest(`/server/admin/services${path}${sep}f=json${token ? `&token=${token}` : ''}`)));
}

async function post(path: string, form: Record<string, string> = {}, token: string | null = admin): Promise<Json> {
  return jsonOf(
    await dispatch(routes, siteRequest(`/server/admin/services${path}`, { form: { f: 'json', ...form, ...(token ? { token } : {}) } })),
  );
}

const def = (o: Json): string => JSON.stringify(o);

describe('parseServicesPath', () => {
  it('parses folders, createService and [folder/]name.type/...', () => {
    expect(parseServicesPath('/server/admin/services')).toEqual({ kind: 'folder', folder: '' });
    expect(parseServicesPath('/server/admin/services/')).toEqual({ kind: 'folder', folder: '' });
    expect(parseServicesPath('/server/admin/services/Hydro')).toEqual({ kind: 'folder', folder: 'Hydro' });
    expect(parseServicesPath('/server/admin/services/createService')).toEqual({ kind: 'create', folder: '' });
    expect(parseServicesPath('/server/admin/services/Hydro/createService')).toEqual({ kind: 'create', folder: 'Hydro' });
    expect(parseServicesPath('/server/admin/services/Hydro/Rivers.FeatureServer/webhooks/abc/delete')).toEqual({
      kind: 'service',
      ref: { folder: 'Hydro', serviceName: 'Rivers', typeToken: 'FeatureServer' },
      rest: ['webhooks', 'abc', 'delete'],
    });
    expect(parseServicesPath('/server/admin/services/Parcels.MapServer')).toMatchObject({ kind: 'service', rest: [] });
    expect(parseServicesPath('/server/admin/services/a/b/c')).toMatchObject({ kind: 'unknown' });
    expect(parseServicesPath('/server/admin/services/a/b/C.MapServer')).toMatchObject({ kind: 'unknown' });
    expect(parseServicesPath('/server/admin/services/%E0%A4%A')).toMatchObject({ kind: 'unknown' });
  });
});

describe('createService and the catalogue', () => {
  it('creates services at the root and in folders and lists them', async () => {
    expect(
      await post('/createService', {
        service: def({ serviceName: 'Parcels', type: 'FeatureServer', description: 'Lots', properties: { a: 1 } }),
      }),
    ).toEqual({
      status: 'success',
    });
    expect(await post('/Hydro/createService', { service: def({ serviceName: 'Rivers', type: 'GPServer' }) })).toEqual({
      status: 'success',
    });
    // An image service's properties are checked when it is created, naming the property.
    expect(await post('/createService', { service: def({ serviceName: 'Lakes', type: 'ImageServer', folderName: 'Hydro' }) })).toEqual({
      status: 'error',
      messages: [`An image service needs 'properties.path': the GeoTIFF/COG path or URL of its raster.`],
      code: 400,
    });
    expect(
      await post('/createService', {
        service: def({ serviceName: 'Lakes', type: 'ImageServer', folderName: 'Hydro', properties: { path: '/data/lakes.tif' } }),
      }),
    ).toEqual({
      status: 'success',
    });
    expect(await get('')).toEqual({
      folderName: '/',
      folders: ['Hydro'],
      services: [{ folderName: '/', serviceName: 'Parcels', type: 'FeatureServer', description: 'Lots' }],
    });
    expect(await get('/Hydro')).toEqual({
      folderName: 'Hydro',
      folders: [],
      services: [
        { folderName: 'Hydro', serviceName: 'Lakes', type: 'ImageServer', description: '' },
        { folderName: 'Hydro', serviceName: 'Rivers', type: 'GPServer', description: '' },
      ],
    });
    expect(await get('/Parcels.FeatureServer')).toEqual({
      serviceName: 'Parcels',
      type: 'FeatureServer',
      folderName: '/',
      description: 'Lots',
      properties: { a: 1 },
      created: site.clock.now(),
    });
    expect(await get('/Hydro/Rivers.GPServer')).toMatchObject({ serviceName: 'Rivers', folderName: 'Hydro' });
  });

  it('refuses duplicates, reserved folders, bad JSON, bad definitions and folder mismatches', async () => {
    await post('/createService', { service: def({ serviceName: 'Parcels', type: 'FeatureServer' }) });
    expect(await post('/createService', { service: def({ serviceName: 'Parcels', type: 'FeatureServer' }) })).toEqual(
      adminError(409, "Service 'Parcels.FeatureServer' already exists."),
    );
    // A map service's properties are checked when it is created, naming the property.
    expect(await post('/createService', { service: def({ serviceName: 'Parcels', type: 'MapServer' }) })).toEqual(
      adminError(400, "A map service needs 'properties.layers': an array of raster and feature layers (the first is drawn on top)."),
    );
    const layers = [{ name: 'Lots', type: 'feature', path: '/data/lots.geojson' }];
    expect(
      await post('/createService', {
        service: def({
          serviceName: 'Parcels',
          type: 'MapServer',
          properties: { layers: [...layers, { name: 'Relief', type: 'raster' }] },
        }),
      }),
    ).toEqual(adminError(400, "'path' is required: the GeoTIFF/COG path or URL of the raster."));
    expect(await post('/createService', { service: def({ serviceName: 'Parcels', type: 'MapServer', properties: { layers } }) })).toEqual({
      status: 'success',
    });
    expect(await post('/system/createService', { service: def({ serviceName: 'X', type: 'GPServer' }) })).toEqual(
      adminError(400, "The folder 'System' is reserved; services cannot be created in it."),
    );
    expect(await post('/createService', { service: def({ serviceName: 'X', type: 'GPServer', folderName: 'Utilities' }) })).toEqual(
      adminError(400, "The folder 'Utilities' is reserved; services cannot be created in it."),
    );
    expect(await post('/bad%20folder/createService', { service: def({ serviceName: 'X', type: 'GPServer' }) })).toEqual(
      adminError(400, "'folderName' must be letters, digits, '_' or '-'."),
    );
    expect(await post('/createService', { service: '{nope' })).toEqual(adminError(400, "'service' is not valid JSON."));
    expect(await post('/createService', {})).toEqual(adminError(400, "'service' must be specified."));
    expect(await post('/createService', { service: def({ serviceName: 'bad name', type: 'Tile' }) })).toMatchObject({ code: 400 });
    expect(await post('/A/createService', { service: def({ serviceName: 'X', type: 'GPServer', folderName: 'B' }) })).toEqual(
      adminError(400, "The service's folderName 'B' does not match the folder 'A' of the request."),
    );
  });

  it('unknown services, folders and type spellings are 404', async () => {
    expect(await get('/Parcels.FeatureServer')).toEqual(adminError(404, "Service 'Parcels.FeatureServer' does not exist."));
    await post('/createService', { service: def({ serviceName: 'Parcels', type: 'FeatureServer' }) });
    expect(await get('/Parcels.featureserver')).toEqual(adminError(404, "Service 'Parcels.featureserver' does not exist."));
    expect(await get('/Nope')).toEqual(adminError(404, "Folder 'Nope' does not exist."));
    expect(await get('/a/b/c')).toEqual(adminError(404, "'a/b/c' is not a resource of the services administration."));
    expect(await get('/Parcels.FeatureServer/frobnicate')).toEqual(
      adminError(404, "'frobnicate' is not an operation of service 'Parcels.FeatureServer'."),
    );
  });

  it('edits description and properties, never the identity', async () => {
    await post('/H/createService', { service: def({ serviceName: 'P', type: 'FeatureServer', properties: { a: 1 } }) });
    const created = site.clock.now();
    site.clock.advance(1000);
    expect(await post('/H/P.FeatureServer/edit', { service: def({ description: 'new', properties: { b: 2 } }) })).toEqual({
      status: 'success',
    });
    expect(await get('/H/P.FeatureServer')).toMatchObject({ description: 'new', properties: { b: 2 }, created });
    expect(await post('/H/P.FeatureServer/edit', { service: def({ serviceName: 'Q' }) })).toEqual(
      adminError(400, 'A service cannot be renamed, retyped or moved by edit; delete it and create it again.'),
    );
    expect(await post('/H/P.FeatureServer/edit', { service: '[]' })).toMatchObject({ code: 400 });
    expect(await post('/H/Q.FeatureServer/edit', { service: '{}' })).toEqual(
      adminError(404, "Service 'H/Q.FeatureServer' does not exist."),
    );
  });

  it('deletes a service with its webhooks', async () => {
    await post('/createService', { service: def({ serviceName: 'P', type: 'FeatureServer' }) });
    await site.store.putWebhook({
      id: 'h1',
      service: 'P.FeatureServer',
      name: 'n',
      changeTypes: ['*'],
      hookUrl: 'http://x',
      signatureKey: '',
      active: true,
      created: 0,
    });
    expect(await post('/P.FeatureServer/delete')).toEqual({ status: 'success' });
    expect(await site.store.getService('P.FeatureServer')).toBeUndefined();
    expect(await site.store.listWebhooks('P.FeatureServer')).toEqual([]);
    expect(await post('/P.FeatureServer/delete')).toEqual(adminError(404, "Service 'P.FeatureServer' does not exist."));
  });

  it('writes are POST-only, administrator-only, wait for a backup; reads are administrator-only', async () => {
    await post('/createService', { service: def({ serviceName: 'P', type: 'FeatureServer' }) });
    expect(await get('/createService')).toEqual(adminError(405, 'Method not supported.'));
    expect(await get('/P.FeatureServer/delete')).toEqual(adminError(405, 'Method not supported.'));
    expect(await get('/P.FeatureServer/edit')).toEqual(adminError(405, 'Method not supported.'));
    const pub = await site.token('pub', { audience: ADMIN_AUDIENCE });
    expect(await get('', pub)).toEqual(FORBIDDEN);
    expect(await get('/P.FeatureServer', pub)).toEqual(FORBIDDEN);
    expect(await post('/P.FeatureServer/delete', {}, pub)).toEqual(FORBIDDEN);
    expect(await post('/createService', { service: def({ serviceName: 'Q', type: 'GPServer' }) }, pub)).toEqual(FORBIDDEN);
    expect(await get('', null)).toMatchObject({ code: 499 });
    await site.store.acquireLock(SITE_BACKUP_LOCK, 'x', 60_000);
    expect(await post('/P.FeatureServer/delete')).toEqual(
      adminError(409, 'A site backup is in progress. Configuration changes are not allowed until it completes.'),
    );
    expect(await get('/P.FeatureServer')).toMatchObject({ serviceName: 'P' });
  });

  it('answers the admin HTML page by default', async () => {
    const res = await dispatch(
      routes,
      siteRequest(`/server/admin/services/createService`, { form: { token: admin, service: def({ serviceName: 'P', type: 'GPServer' }) } }),
    );
    const html = await res.text();
    expect(html).toContain('<h1>Create Service</h1>');
    expect(html).toContain('action="/server/admin/services/createService"');
    expect(html).toContain('name="service" value="{&#34;serviceName&#34;:&#34;P&#34;');
    expect(html).toContain('&#34;status&#34;: &#34;success&#34;');
  });
});

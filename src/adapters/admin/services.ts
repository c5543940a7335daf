/**
 * `{admin_url}/services`: the service catalogue (folders, createService, a service's JSON, delete,
 * edit) and, below each service, its webhooks (webhooks.ts). One dispatcher parses
 * `[<folder>/]<name>.<type>/…`; `<type>` is the exact token (`GPServer`, `FeatureServer`,
 * `ImageServer`, `MapServer`): any other spelling names a service that does not exist (§2.1 rule 5).
 * Reads and writes of the catalogue are for the default administrator; webhooks follow §2.1 rule 6.
 */
import { EngineError } from '../../core/errors.js';
import { requireAdministrator } from '../auth.js';
import type { Params, Route } from '../rest.js';
import { imageServiceSettings } from '../image/service.js';
import { parseMapServiceProperties } from '../map/config.js';
import { assertNoSiteBackup, parseServiceDefinition, serviceKey, type ServiceRecord } from '../site.js';
import {
  adminAnswer,
  adminRequest,
  withAdminErrors,
  type Operation,
  badRequest,
  conflict,
  notFound,
  required,
  SUCCESS,
  type AdminDeps,
} from './html.js';
import { isWebhookWrite, refKey, serviceMissing, webhookOperation, type ServiceRef } from './webhooks.js';

const BASE = '/server/admin/services';

/** Decision: folders the product keeps for its own services (the raster analysis tools live in `System`). */
export const RESERVED_FOLDERS = ['System', 'Utilities'] as const;

/** What a path below `{admin_url}/services` addresses. */
export type Target =
  | { readonly kind: 'folder'; readonly folder: string }
  | { readonly kind: 'create'; readonly folder: string }
  | { readonly kind: 'service'; readonly ref: ServiceRef; readonly rest: readonly string[] }
  | { readonly kind: 'unknown'; readonly path: string };

/** Parses the path of a request below `{admin_url}/services`. */
export function parseServicesPath(pathname: string): Target {
  const tail = pathname.slice(BASE.length);
  let segs: string[];
  try {
    segs = tail
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
  } catch {
    return { kind: 'unknown', path: tail };
  }
  const at = segs.findIndex((s) => s.includes('.'));
  if (at < 0) {
    if (segs.length === 0) return { kind: 'folder', folder: '' };
    if (segs.length === 1) return segs[0] === 'createService' ? { kind: 'create', folder: '' } : { kind: 'folder', folder: segs[0]! };
    if (segs.length === 2 && segs[1] === 'createService') return { kind: 'create', folder: segs[0]! };
    return { kind: 'unknown', path: segs.join('/') };
  }
  if (at > 1) return { kind: 'unknown', path: segs.join('/') };
  const seg = segs[at]!;
  const dot = seg.lastIndexOf('.');
  return {
    kind: 'service',
    ref: { folder: at === 1 ? segs[0]! : '', serviceName: seg.slice(0, dot), typeToken: seg.slice(dot + 1) },
    rest: segs.slice(at + 1),
  };
}

/** Whether a request for `target` changes configuration (POST only, 405 otherwise). */
function isWrite(target: Target): boolean {
  if (target.kind === 'create') return true;
  if (target.kind !== 'service') return false;
  const [first, ...more] = target.rest;
  if (first === 'webhooks') return isWebhookWrite(more);
  return target.rest.length === 1 && (first === 'delete' || first === 'edit');
}

/** The service JSON the admin API shows. */
export const serviceView = (s: ServiceRecord): Record<string, unknown> => ({
  serviceName: s.serviceName,
  type: s.type,
  folderName: s.folder === '' ? '/' : s.folder,
  description: s.description ?? '',
  properties: s.properties,
  created: s.created,
});

function serviceJson(params: Params): unknown {
  const text = required(params, 'service');
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest(`'service' is not valid JSON.`, 'service');
  }
}

async function listFolder(deps: AdminDeps, folder: string): Promise<Record<string, unknown>> {
  const all = await deps.store.listServices();
  const inFolder = all.filter((s) => s.folder === folder);
  if (folder !== '' && inFolder.length === 0) throw notFound(`Folder '${folder}' does not exist.`);
  const folders = folder === '' ? [...new Set(all.map((s) => s.folder).filter((f) => f !== ''))].sort() : [];
  return {
    folderName: folder === '' ? '/' : folder,
    folders,
    services: inFolder.map((s) => ({
      folderName: folder === '' ? '/' : folder,
      serviceName: s.serviceName,
      type: s.type,
      description: s.description ?? '',
    })),
  };
}

async function createService(deps: AdminDeps, pathFolder: string, params: Params): Promise<unknown> {
  const json = serviceJson(params);
  const o = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
  const given = o?.['folderName'] ?? o?.['folder'];
  if (pathFolder !== '' && given !== undefined && given !== '' && given !== pathFolder) {
    throw badRequest(
      `The service's folderName '${JSON.stringify(given).replace(/^"|"$/g, '')}' does not match the folder '${pathFolder}' of the request.`,
      'service.folderName',
    );
  }
  // The folder of the URL is checked like one given in the definition.
  const service: ServiceRecord = parseServiceDefinition(o && pathFolder !== '' ? { ...o, folderName: pathFolder } : json, deps.clock.now());
  const reserved = RESERVED_FOLDERS.find((r) => r.toLowerCase() === service.folder.toLowerCase());
  if (reserved) throw badRequest(`The folder '${reserved}' is reserved; services cannot be created in it.`, 'service.folderName');
  checkProperties(service);
  const key = serviceKey(service);
  if (await deps.store.getService(key)) throw conflict(`Service '${key}' already exists.`);
  await deps.store.putService(service);
  return SUCCESS;
}

/** Type-specific properties are checked when the service is written, not first when it is used. */
function checkProperties(service: ServiceRecord): void {
  if (service.type === 'ImageServer') imageServiceSettings(service);
  if (service.type === 'MapServer') parseMapServiceProperties(service);
}

async function editService(deps: AdminDeps, current: ServiceRecord, params: Params): Promise<unknown> {
  const json = serviceJson(params);
  // Decision: edit replaces description and properties; the name, type and folder stay (missing ones are taken from the service).
  const o = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
  const filled = o ? { serviceName: current.serviceName, type: current.type, folderName: current.folder, ...o } : json;
  const def = parseServiceDefinition(filled, current.created);
  if (def.serviceName !== current.serviceName || def.type !== current.type || def.folder !== current.folder) {
    throw badRequest(`A service cannot be renamed, retyped or moved by edit; delete it and create it again.`, 'service');
  }
  checkProperties(def);
  await deps.store.putService(def);
  return SUCCESS;
}

/** The page of a request below `{admin_url}/services` (its last path segment), for error pages. */
function operationOf(req: Request): Operation {
  const segs = new URL(req.url).pathname.split('/').filter((x) => x !== '');
  const last = segs.length > 3 ? segs[segs.length - 1]! : 'services';
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    name = last;
  }
  const hookFields = ['name', 'changeTypes', 'hookUrl', 'signatureKey', 'active'];
  const inWebhooks = segs.includes('webhooks');
  let fields: string[] = [];
  if (last === 'createService' || (last === 'edit' && !inWebhooks)) fields = ['service'];
  else if (last === 'createWebhook' || (last === 'edit' && inWebhooks)) fields = hookFields;
  return { name, fields };
}

/** `{admin_url}/services` and everything below it. */
export function serviceRoutes(deps: AdminDeps): Route[] {
  const handler = withAdminErrors(operationOf, async (req) => {
    const target = parseServicesPath(new URL(req.url).pathname);
    if (target.kind === 'service' && target.rest[0] === 'webhooks') return webhookOperation(deps, req, target.ref, target.rest.slice(1));
    const { params, caller } = await adminRequest(deps, req, { write: isWrite(target) });
    requireAdministrator(caller);
    if (isWrite(target)) await assertNoSiteBackup(deps);
    switch (target.kind) {
      case 'unknown':
        throw notFound(`'${target.path}' is not a resource of the services administration.`);
      case 'folder':
        return adminAnswer(
          req,
          params,
          { name: target.folder === '' ? 'Services' : `Folder ${target.folder}`, fields: [] },
          await listFolder(deps, target.folder),
        );
      case 'create':
        return adminAnswer(req, params, { name: 'Create Service', fields: ['service'] }, await createService(deps, target.folder, params));
      case 'service':
        return serviceOperation(deps, req, params, target.ref, target.rest);
    }
  });
  return [
    { method: 'ALL', path: BASE, handler },
    { method: 'ALL', path: `${BASE}/*`, handler },
  ];
}

async function serviceOperation(
  deps: AdminDeps,
  req: Request,
  params: Params,
  ref: ServiceRef,
  rest: readonly string[],
): Promise<Response> {
  const service = await deps.store.getService(refKey(ref));
  if (!service) throw serviceMissing(ref);
  const key = serviceKey(service);
  if (rest.length === 0) return adminAnswer(req, params, { name: key, fields: [] }, serviceView(service));
  if (rest.length === 1 && rest[0] === 'delete') {
    await deps.store.deleteService(key);
    return adminAnswer(req, params, { name: `Delete ${key}`, fields: [] }, SUCCESS);
  }
  if (rest.length === 1 && rest[0] === 'edit') {
    return adminAnswer(req, params, { name: `Edit ${key}`, fields: ['service'] }, await editService(deps, service, params));
  }
  throw new EngineError('NOT_FOUND', `no operation ${rest.join('/')}`, {
    details: [`'${rest.join('/')}' is not an operation of service '${key}'.`],
  });
}

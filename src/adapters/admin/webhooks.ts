/**
 * Service webhooks (protocols.md §2, seed §2, §3 and Events):
 * `{admin_url}/services[/<folder>]/<name>.<type>/webhooks[/createWebhook|/deactivateAll|/activateAll|/<id>[/delete|/edit]]`.
 *
 * Order of checks (decides which error wins): `f`, HTTPS, method (405 for writes), token (499/498),
 * service type (400, §2.1 rule 4, from the URL alone), capability (403, rule 6), the service's
 * existence (404, rule 5; after the capability so that a caller without it cannot probe for
 * services), the backup lock for writes (409), then the parameters.
 */
import { randomBytes } from 'node:crypto';
import { EngineError } from '../../core/errors.js';
import { forbidden, isAdministrator, type Caller } from '../auth.js';
import type { Params } from '../rest.js';
import { assertNoSiteBackup, SERVICE_TYPES, type ServiceRecord, type ServiceType, type WebhookRecord } from '../site.js';
import { adminAnswer, adminRequest, badRequest, conflict, notFound, required, SUCCESS, type AdminDeps } from './html.js';

/** Service types that have webhooks (seed §2). */
export const WEBHOOK_SERVICE_TYPES: readonly ServiceType[] = ['GPServer', 'FeatureServer'];

/** Decision: at most this many webhooks per service (every event fans out to each of them). */
export const MAX_WEBHOOKS_PER_SERVICE = 50;

/** A service addressed by the URL: folder ('' for the root), name and the type token as written. */
export interface ServiceRef {
  readonly folder: string;
  readonly serviceName: string;
  readonly typeToken: string;
}

/** `folder/name.Type` as written in the URL (the service key when the type token is valid). */
export const refKey = (ref: ServiceRef): string => `${ref.folder ? `${ref.folder}/` : ''}${ref.serviceName}.${ref.typeToken}`;

export const serviceMissing = (ref: ServiceRef): EngineError => notFound(`Service '${refKey(ref)}' does not exist.`);

/** The operations below `…/webhooks` that change configuration (POST only). */
export function isWebhookWrite(rest: readonly string[]): boolean {
  if (rest.length === 1) return rest[0] === 'createWebhook' || rest[0] === 'deactivateAll' || rest[0] === 'activateAll';
  return rest.length === 2 && (rest[1] === 'delete' || rest[1] === 'edit');
}

/**
 * §2.1 rule 6: the default administrator; for a FeatureServer the feature layer privilege; for a
 * GPServer the geoprocessing privilege **and** the publish-server-based-layers privilege held by one
 * custom role (two roles each holding one of them are not enough).
 */
export async function mayManageWebhooks(deps: Pick<AdminDeps, 'store'>, caller: Caller, type: ServiceType): Promise<boolean> {
  if (isAdministrator(caller)) return true;
  if (type === 'FeatureServer') return caller.privileges.has('featureLayer');
  if (type !== 'GPServer') return false;
  for (const name of caller.user.roles) {
    const role = await deps.store.getRole(name);
    if (role && role.privileges.includes('geoprocessing') && role.privileges.includes('publishServerLayers')) return true;
  }
  return false;
}

/** What the admin API shows of a webhook: never the signature key, only whether there is one. */
export function webhookView(h: WebhookRecord): Record<string, unknown> {
  return {
    id: h.id,
    name: h.name,
    changeTypes: [...h.changeTypes],
    hookUrl: h.hookUrl,
    active: h.active,
    hasSignatureKey: h.signatureKey !== '',
    created: h.created,
  };
}

// ---------------------------------------------------------------------------------------------
// Parameters

const HOOK_NAME = /^[^\p{Cc}]+$/u;
/** Decision: change types are identifiers raised by the services (e.g. `jobSucceeded`), or `*` for all. */
const CHANGE_TYPE = /^(?:\*|[A-Za-z][A-Za-z0-9_]{0,63})$/;
const MAX_URL = 2048;
const MAX_KEY = 1024;

function hookName(v: string): string {
  const name = v.trim();
  if (!HOOK_NAME.test(name) || [...name].length > 128)
    throw badRequest(`'name' must be 1 to 128 characters without control characters.`, 'name');
  return name;
}

function changeTypes(params: Params): string[] | undefined {
  const list = params.list('changeTypes');
  if (list === undefined) return undefined;
  if (list.length === 0) throw badRequest(`'changeTypes' must name at least one change type, or '*'.`, 'changeTypes');
  const bad = list.filter((t) => !CHANGE_TYPE.test(t));
  if (bad.length > 0) {
    throw badRequest(
      `Invalid change type ${bad.map((b) => `'${b}'`).join(', ')}: use names such as 'jobSucceeded', or '*' for every change.`,
      'changeTypes',
    );
  }
  return [...new Set(list)];
}

/**
 * An absolute http(s) URL. Decision: no user name or password in it (the receiver authenticates the
 * payload with the signature key instead), at most 2048 characters. Redirects are never followed.
 */
export function hookUrl(v: string): string {
  const url = v.trim();
  let u: URL | undefined;
  if (url.length <= MAX_URL && URL.canParse(url)) u = new URL(url);
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:'))
    throw badRequest(`'hookUrl' must be an absolute http or https URL.`, 'hookUrl');
  if (u.username !== '' || u.password !== '') throw badRequest(`'hookUrl' must not contain a user name or password.`, 'hookUrl');
  return url;
}

function signatureKey(params: Params): string | undefined {
  const k = params.get('signatureKey');
  if (k !== undefined && k.length > MAX_KEY) throw badRequest(`'signatureKey' must be at most ${MAX_KEY} characters.`, 'signatureKey');
  return k;
}

// ---------------------------------------------------------------------------------------------
// The operations

const PAGE = {
  list: { name: 'Webhooks', fields: [] },
  create: { name: 'Create Webhook', fields: ['name', 'changeTypes', 'hookUrl', 'signatureKey', 'active'] },
  deactivateAll: { name: 'Deactivate All Webhooks', fields: [] },
  activateAll: { name: 'Activate All Webhooks', fields: [] },
  get: { name: 'Webhook', fields: [] },
  delete: { name: 'Delete Webhook', fields: [] },
  edit: { name: 'Edit Webhook', fields: ['name', 'changeTypes', 'hookUrl', 'signatureKey', 'active'] },
} as const;

/**
 * Answers a request below `…/<name>.<type>/webhooks`; `rest` is what follows `webhooks`. A type token
 * that is not exactly a service type names a service that does not exist (404).
 */
export async function webhookOperation(deps: AdminDeps, req: Request, ref: ServiceRef, rest: readonly string[]): Promise<Response> {
  const write = isWebhookWrite(rest);
  const { params, caller } = await adminRequest(deps, req, { write });
  const type = (SERVICE_TYPES as readonly string[]).includes(ref.typeToken) ? (ref.typeToken as ServiceType) : undefined;
  if (type === undefined) throw serviceMissing(ref);
  if (!WEBHOOK_SERVICE_TYPES.includes(type)) {
    const msg = `Webhooks are not supported for service type '${type}'.`;
    throw badRequest(msg);
  }
  if (!(await mayManageWebhooks(deps, caller, type))) throw forbidden(`${caller.username} may not manage webhooks of ${type} services`);
  const key = refKey(ref);
  const service = await deps.store.getService(key);
  if (!service) throw serviceMissing(ref);
  if (write) await assertNoSiteBackup(deps);
  const answer = (page: (typeof PAGE)[keyof typeof PAGE], value: unknown): Response => adminAnswer(req, params, page, value);
  const { store } = deps;

  if (rest.length === 0) return answer(PAGE.list, { webhooks: (await store.listWebhooks(key)).map(webhookView) });
  const [first, second] = rest as [string, string | undefined];
  if (rest.length === 1 && (first === 'deactivateAll' || first === 'activateAll')) {
    // §2.1 rule 1: idempotent; rule 2: nothing raised in between is kept for later (see webhook-delivery.ts).
    await store.setWebhooksActive(key, first === 'activateAll');
    return answer(PAGE[first], SUCCESS);
  }
  if (rest.length === 1 && first === 'createWebhook') return answer(PAGE.create, await createWebhook(deps, service, params));

  const hook = (await store.listWebhooks(key)).find((h) => h.id === first);
  if (rest.length > 2 || (second !== undefined && second !== 'delete' && second !== 'edit'))
    throw notFound(`'${rest.join('/')}' is not a webhook operation.`);
  if (!hook) throw notFound(`Webhook '${first}' does not exist on service '${key}'.`);
  if (second === undefined) return answer(PAGE.get, webhookView(hook));
  if (second === 'delete') {
    await store.deleteWebhook(hook.id);
    return answer(PAGE.delete, SUCCESS);
  }
  return answer(PAGE.edit, await editWebhook(deps, hook, params));
}

async function createWebhook(deps: AdminDeps, service: ServiceRecord, params: Params): Promise<Record<string, unknown>> {
  const key = `${service.folder ? `${service.folder}/` : ''}${service.serviceName}.${service.type}`;
  const name = hookName(required(params, 'name'));
  const types = changeTypes(params);
  if (types === undefined) throw badRequest(`'changeTypes' must be specified.`, 'changeTypes');
  const url = hookUrl(required(params, 'hookUrl'));
  const key2 = signatureKey(params) ?? '';
  const active = params.bool('active') ?? true;
  const existing = await deps.store.listWebhooks(key);
  if (existing.some((h) => h.name === name)) throw conflict(`A webhook named '${name}' already exists on service '${key}'.`);
  if (existing.length >= MAX_WEBHOOKS_PER_SERVICE) {
    throw badRequest(`Service '${key}' already has ${MAX_WEBHOOKS_PER_SERVICE} webhooks, the most a service may have.`);
  }
  const hook: WebhookRecord = {
    id: randomBytes(8).toString('hex'),
    service: key,
    name,
    changeTypes: types,
    hookUrl: url,
    signatureKey: key2,
    active,
    created: deps.clock.now(),
  };
  await deps.store.putWebhook(hook);
  return { ...SUCCESS, ...webhookView(hook) };
}

async function editWebhook(deps: AdminDeps, hook: WebhookRecord, params: Params): Promise<Record<string, unknown>> {
  const nameParam = params.get('name');
  const name = nameParam === undefined ? hook.name : hookName(nameParam);
  const types = changeTypes(params) ?? hook.changeTypes;
  const urlParam = params.get('hookUrl');
  const url = urlParam === undefined ? hook.hookUrl : hookUrl(urlParam);
  const key = signatureKey(params) ?? hook.signatureKey;
  const active = params.bool('active') ?? hook.active;
  if (name !== hook.name && (await deps.store.listWebhooks(hook.service)).some((h) => h.name === name)) {
    throw conflict(`A webhook named '${name}' already exists on service '${hook.service}'.`);
  }
  const next: WebhookRecord = { ...hook, name, changeTypes: types, hookUrl: url, signatureKey: key, active };
  await deps.store.putWebhook(next);
  return { ...SUCCESS, ...webhookView(next) };
}

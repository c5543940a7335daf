/**
 * Who may use an image service, and which service a request names. Every image operation starts
 * with `openRequestedService`: the HTTPS rule, the service looked up from the URL, and the site's
 * token rules (audiences of a services endpoint). Anonymous access is a per-service setting
 * (`properties.anonymous: true`); otherwise a request without a token gets 499 Token Required.
 *
 * Decision: the token is checked before a missing service is reported, so that an anonymous caller
 * cannot tell a secured service from one that does not exist (both answer 499). A token sent to an
 * anonymous service is still verified (a bad one is 498), as the vendor does.
 */
import { EngineError } from '../../core/errors.js';
import { ADMIN_AUDIENCE, authenticate, PORTAL_AUDIENCE, serverAudience, type Caller } from '../auth.js';
import { requireHttps, type Params } from '../rest.js';
import { fromTrustedProxy, originOf, type SiteDeps } from '../site.js';
import { tokenFromRequest } from '../tokens.js';
import type { ImageServices, OpenedImageService } from './service.js';

/** The services root every image route lives under. */
export const SERVICES_ROOT = '/server/rest/services';

/** `folder` ('' for the root), `name`, and what follows `/ImageServer` (no leading slash), from a request path. */
export interface ServicePath {
  readonly folder: string;
  readonly name: string;
  readonly rest: string;
}

/** Parses `/server/rest/services/[folder/]name/ImageServer[/rest]`; undefined when the path is not one. */
export function servicePathOf(req: Request): ServicePath | undefined {
  const path = new URL(req.url).pathname.replace(/\/+$/, '');
  const prefix = `${SERVICES_ROOT}/`;
  if (!path.startsWith(prefix)) return undefined;
  const parts = path.slice(prefix.length).split('/').map(decodeURIComponent);
  const at = parts.findIndex((p) => p === 'ImageServer');
  if (at < 1 || at > 2) return undefined;
  const folder = at === 2 ? parts[0]! : '';
  const name = parts[at - 1]!;
  return { folder, name, rest: parts.slice(at + 1).join('/') };
}

export type ImageDeps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'log'>;

/** The audiences a services endpoint accepts: the server's own tokens, portal tokens and admin tokens. */
export const servicesAudiences = (req: Request, deps: Pick<SiteDeps, 'config'>): string[] => [
  serverAudience(`${originOf(req, deps.config)}/server`),
  PORTAL_AUDIENCE,
  ADMIN_AUDIENCE,
];

/** The caller when the request carries a token (verified), else undefined. Throws 498 for a bad token. */
export async function optionalCaller(deps: ImageDeps, req: Request, params: Params): Promise<Caller | undefined> {
  let present: string | undefined;
  try {
    present = tokenFromRequest(req, { headerAlias: deps.config.headerAlias, params });
  } catch {
    present = 'malformed';
  }
  if (present === undefined) return undefined;
  return authenticate(deps, req, { audiences: servicesAudiences(req, deps), shape: 'sharing', params });
}

/**
 * The service the request names, after the HTTPS and token rules. Throws TOKEN_REQUIRED (499) for
 * a secured or unknown service without a token, NOT_FOUND (404) for an unknown one otherwise.
 */
export async function openRequestedService(
  deps: ImageDeps,
  services: ImageServices,
  req: Request,
  params: Params,
): Promise<{ service: OpenedImageService; caller: Caller | undefined; path: ServicePath }> {
  requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
  const path = servicePathOf(req);
  const record = path ? await deps.store.getService(`${path.folder ? `${path.folder}/` : ''}${path.name}.ImageServer`) : undefined;
  const anonymous = record?.properties['anonymous'] === true;
  const caller = anonymous
    ? await optionalCaller(deps, req, params)
    : await authenticate(deps, req, { audiences: servicesAudiences(req, deps), shape: 'sharing', params });
  const service = path ? await services.open(path.folder, path.name) : undefined;
  if (!path || !service) {
    const what = path ? `${path.folder ? `${path.folder}/` : ''}${path.name}` : 'the requested service';
    throw new EngineError('NOT_FOUND', `no image service ${what}`, { details: [`Service ${what}/ImageServer not found.`] });
  }
  return { service, caller, path };
}

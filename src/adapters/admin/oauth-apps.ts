/**
 * OAuth 2.0 app registration through the admin API (admin error shape, default administrators only):
 * `registerApp` answers the client secret once and keeps only its scrypt hash; `apps` lists apps
 * without secrets; `apps/<client_id>/unregister` removes one (its codes and refresh tokens stop
 * working because the token endpoint no longer knows the client).
 */
import { randomBytes } from 'node:crypto';
import { EngineError } from '../../core/errors.js';
import { ADMIN_AUDIENCE, authenticate, hashPassword, PORTAL_AUDIENCE, requireAdministrator } from '../auth.js';
import { readParams, requireHttps, requirePost, respond, withRestErrors, type Params, type Route } from '../rest.js';
import { assertNoSiteBackup, fromTrustedProxy, type OAuthAppRecord, type SiteDeps } from '../site.js';

type Deps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'clock'>;

const BASE = '/server/admin/security/oauth';

const invalid = (details: string[]): EngineError => new EngineError('INVALID_ARGUMENT', details.join(' '), { details });

async function administrator(deps: Deps, req: Request, params: Params): Promise<string> {
  requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
  const caller = await authenticate(deps, req, { audiences: [ADMIN_AUDIENCE, PORTAL_AUDIENCE], shape: 'admin', params });
  requireAdministrator(caller);
  return caller.username;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A redirect URI an app may use: absolute https, or http only on the loopback host (native and
 * development apps); no fragment (RFC 6749 §3.1.2). Decision: no wildcards; matched exactly later.
 */
export function redirectUriProblem(uri: string): string | undefined {
  if (!URL.canParse(uri)) return `'${uri}' is not an absolute URL.`;
  const u = new URL(uri);
  if (u.hash !== '' || uri.includes('#')) return `'${uri}' must not contain a fragment.`;
  if (u.protocol === 'https:') return undefined;
  if (u.protocol === 'http:' && LOOPBACK.has(u.hostname)) return undefined;
  return `'${uri}' must use https (http is allowed only for localhost and 127.0.0.1).`;
}

const appJson = (a: OAuthAppRecord) => ({
  client_id: a.clientId,
  name: a.name,
  redirect_uris: [...a.redirectUris],
  owner: a.owner,
  created: a.created,
});

/** `POST /server/admin/security/oauth/registerApp`: name, redirect_uris (JSON array or comma list). */
export const registerApp = (deps: Deps) =>
  withRestErrors('admin', async (req) => {
    requirePost(req);
    const params = await readParams(req);
    const owner = await administrator(deps, req, params);
    const problems: string[] = [];
    const name = params.get('name')?.trim() ?? '';
    if (name === '') problems.push(`'name' must be specified.`);
    else if (name.length > 256) problems.push(`'name' must be at most 256 characters.`);
    const uris = params.list('redirect_uris') ?? [];
    if (uris.length === 0) problems.push(`'redirect_uris' must list at least one URI.`);
    for (const u of uris) {
      const p = redirectUriProblem(u);
      if (p) problems.push(p);
    }
    if (problems.length > 0) throw invalid(problems);
    await assertNoSiteBackup(deps);
    const clientId = randomBytes(12).toString('base64url');
    const secret = randomBytes(24).toString('base64url');
    const redirectUris = [...new Set(uris)];
    await deps.store.putOAuthApp({
      clientId,
      secretHash: await hashPassword(secret),
      name,
      redirectUris,
      owner,
      created: deps.clock.now(),
    });
    return respond(params.get('f'), { client_id: clientId, client_secret: secret, name, redirect_uris: redirectUris }, { noStore: true });
  });

/** `GET|POST /server/admin/security/oauth/apps` (no secrets). */
export const listApps = (deps: Deps) =>
  withRestErrors('admin', async (req) => {
    const params = await readParams(req);
    await administrator(deps, req, params);
    const apps = (await deps.store.listOAuthApps()).sort((a, b) => a.name.localeCompare(b.name) || a.clientId.localeCompare(b.clientId));
    return respond(params.get('f'), { apps: apps.map(appJson) });
  });

/** `POST /server/admin/security/oauth/apps/<client_id>/unregister`. */
export const unregisterApp = (deps: Deps) =>
  withRestErrors('admin', async (req) => {
    requirePost(req);
    const params = await readParams(req);
    await administrator(deps, req, params);
    const id = decodeURIComponent(/\/apps\/([^/]+)\/unregister\/?$/.exec(new URL(req.url).pathname)?.[1] ?? '');
    await assertNoSiteBackup(deps);
    if (!(await deps.store.deleteOAuthApp(id))) {
      throw new EngineError('NOT_FOUND', `no app ${id}`, { details: [`OAuth app '${id}' does not exist.`] });
    }
    return respond(params.get('f'), { status: 'success' });
  });

export function oauthAppRoutes(deps: Deps): Route[] {
  return [
    { method: 'ALL', path: `${BASE}/registerApp`, handler: registerApp(deps) },
    { method: 'ALL', path: `${BASE}/apps`, handler: listApps(deps) },
    { method: 'ALL', path: `${BASE}/apps/:clientId/unregister`, handler: unregisterApp(deps) },
  ];
}

/**
 * The discovery endpoints clients read before and after sign-in (protocols.md §1.5, §6):
 * `GET /server/rest/info` and `GET /portal/sharing/rest/info` (where to get tokens, who owns the
 * server), `portals/self` and `community/self` (arcgis-rest-js `getPortal()` / `getUser()`), and the
 * list of servers federated with the portal, with their registration by an administrator.
 */
import { randomBytes } from 'node:crypto';
import { EngineError } from '../../core/errors.js';
import { authenticate, PORTAL_AUDIENCE, requireAdministrator, type Caller } from '../auth.js';
import { readParams, requireHttps, requirePost, respond, withRestErrors, type Params, type Route } from '../rest.js';
import { assertNoSiteBackup, fromTrustedProxy, normaliseServerUrl, originOf, type FederatedServerRecord, type SiteDeps } from '../site.js';
import { tokenFromRequest } from '../tokens.js';

type Deps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'clock'>;

export const CURRENT_VERSION = 11.5;
export const FULL_VERSION = '11.5.0';

const https = (deps: Deps, req: Request): void =>
  requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });

function authInfo(deps: Deps, origin: string) {
  return {
    isTokenBasedSecurity: true,
    tokenServicesUrl: `${origin}/portal/sharing/rest/generateToken`,
    shortLivedTokenValidity: deps.config.defaultTokenMinutes,
  };
}

/** `GET /server/rest/info`: the server is federated with this site's portal (owningSystemUrl). */
export const serverInfo = (deps: Deps) =>
  withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    https(deps, req);
    const origin = originOf(req, deps.config);
    return respond(params.get('f'), {
      currentVersion: CURRENT_VERSION,
      fullVersion: FULL_VERSION,
      soapUrl: `${origin}/server/services`,
      secureSoapUrl: `${origin}/server/services`,
      owningSystemUrl: `${origin}/portal`,
      authInfo: authInfo(deps, origin),
    });
  });

/** `GET /portal/sharing/rest/info`: where the portal issues tokens (read by arcgis-rest-js on the owningSystemUrl). */
export const portalInfo = (deps: Deps) =>
  withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    https(deps, req);
    const origin = originOf(req, deps.config);
    return respond(params.get('f'), {
      owningSystemUrl: `${origin}/portal`,
      authInfo: authInfo(deps, origin),
      currentVersion: CURRENT_VERSION,
      fullVersion: FULL_VERSION,
    });
  });

const ROLE_NAMES = { administrator: 'org_admin', publisher: 'org_publisher', user: 'org_user' } as const;

// Decision: privileges in the vendor's `portal:<level>:<name>` vocabulary; administrators hold all of them.
const USER_PRIVILEGES = ['portal:user:viewOrgUsers', 'portal:user:createItem', 'portal:user:joinGroup'];
const PUBLISHER_PRIVILEGES = ['portal:publisher:publishFeatures', 'portal:publisher:publishServerServices', 'premium:user:geoanalysis'];
const ADMIN_PRIVILEGES = [
  'portal:admin:viewUsers',
  'portal:admin:updateUsers',
  'portal:admin:manageSecurity',
  'portal:admin:manageServers',
];
const CUSTOM_PRIVILEGES = {
  featureLayer: 'portal:publisher:publishFeatures',
  geoprocessing: 'premium:user:geoanalysis',
  publishServerLayers: 'portal:publisher:publishServerServices',
} as const;

/** The `community/self` object of a caller. */
export function userInfo(deps: Deps, caller: Caller) {
  const privileges = new Set(USER_PRIVILEGES);
  if (caller.role !== 'user') for (const p of PUBLISHER_PRIVILEGES) privileges.add(p);
  if (caller.role === 'administrator') for (const p of ADMIN_PRIVILEGES) privileges.add(p);
  for (const p of caller.privileges) privileges.add(CUSTOM_PRIVILEGES[p]);
  return {
    username: caller.username,
    fullName: caller.user.fullName ?? caller.username,
    email: caller.user.email ?? '',
    role: ROLE_NAMES[caller.role],
    privileges: [...privileges].sort(),
    orgId: deps.config.portalId,
    disabled: caller.user.disabled === true,
    created: caller.user.created,
  };
}

/** `GET /portal/sharing/rest/portals/self`: anonymous; with a token (any carrier) the caller as `user`. */
export const portalSelf = (deps: Deps) =>
  withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    https(deps, req);
    let caller: Caller | undefined;
    if (tokenFromRequest(req, { params, headerAlias: deps.config.headerAlias }) !== undefined) {
      caller = await authenticate(deps, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params });
    }
    const url = new URL(originOf(req, deps.config));
    return respond(
      params.get('f'),
      {
        id: deps.config.portalId,
        name: deps.config.orgName,
        allSSL: deps.config.allSSL,
        isPortal: true,
        // Decision: as the vendor gives it behind a web adaptor, `<host[:port]>/<web adaptor>`.
        portalHostname: `${url.host}/portal`,
        portalName: deps.config.orgName,
        currentVersion: String(CURRENT_VERSION),
        supportsOAuth: true,
        authorizedCrossOriginDomains: [],
        ...(caller ? { user: userInfo(deps, caller) } : {}),
      },
      { noStore: caller !== undefined },
    );
  });

/** `GET /portal/sharing/rest/community/self`: the signed-in user (499 without a token). */
export const communitySelf = (deps: Deps) =>
  withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    https(deps, req);
    const caller = await authenticate(deps, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params });
    return respond(params.get('f'), userInfo(deps, caller), { noStore: true });
  });

// ---------------------------------------------------------------------------------------------
// Federated servers

/** Decision: the site's own server always appears first, with this id; it cannot be unregistered. */
export const OWN_SERVER_ID = 'local';

const serverJson = (s: FederatedServerRecord) => ({
  id: s.id,
  name: s.name ?? s.url,
  url: s.url,
  adminUrl: s.adminUrl ?? `${s.url}/admin`,
  isHosted: false,
  serverRole: 'FEDERATED_SERVER',
  serverType: 'ArcGIS',
});

/** `GET /portal/sharing/rest/portals/self/servers` (any signed-in user). */
export const listServers = (deps: Deps) =>
  withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    https(deps, req);
    await authenticate(deps, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params });
    const own = `${originOf(req, deps.config)}/server`;
    const servers = [
      serverJson({ id: OWN_SERVER_ID, url: own, adminUrl: `${own}/admin`, name: deps.config.orgName }),
      ...(await deps.store.listFederatedServers()).sort((a, b) => a.url.localeCompare(b.url)).map(serverJson),
    ];
    return respond(params.get('f'), { servers }, { noStore: true });
  });

const invalid = (detail: string): EngineError => new EngineError('INVALID_ARGUMENT', detail, { details: [detail] });

function urlParam(params: Params, name: string, required: boolean): string | undefined {
  const raw = params.get(name)?.trim();
  if (raw === undefined || raw === '') {
    if (required) throw invalid(`'${name}' must be specified.`);
    return undefined;
  }
  const n = normaliseServerUrl(raw);
  if (n === undefined) throw invalid(`'${name}' must be an absolute http or https URL.`);
  return n;
}

/** `POST .../portals/self/servers/register` (administrators): url, adminUrl, name. */
export const registerServer = (deps: Deps) =>
  withRestErrors('sharing', async (req) => {
    requirePost(req);
    const params = await readParams(req);
    https(deps, req);
    requireAdministrator(await authenticate(deps, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params }));
    const url = urlParam(params, 'url', true)!;
    const rawAdmin = params.get('adminUrl')?.trim();
    if (rawAdmin !== undefined && rawAdmin !== '' && normaliseServerUrl(rawAdmin) === undefined) {
      throw invalid(`'adminUrl' must be an absolute http or https URL.`);
    }
    const name = params.get('name')?.trim();
    await assertNoSiteBackup(deps);
    const own = `${originOf(req, deps.config)}/server`;
    const taken = [own, ...(await deps.store.listFederatedServers()).map((s) => s.url)];
    if (taken.some((u) => u.toLowerCase() === url.toLowerCase())) {
      const msg = `A server with the URL '${url}' is already federated with this portal.`;
      throw new EngineError('CONFLICT', msg, { details: [msg] });
    }
    const id = randomBytes(12).toString('hex');
    await deps.store.putFederatedServer({
      id,
      url,
      ...(rawAdmin ? { adminUrl: rawAdmin.replace(/\/+$/, '') } : {}),
      ...(name ? { name } : {}),
    });
    return respond(params.get('f'), { success: true, id });
  });

/** `POST .../portals/self/servers/<id>/unregister` (administrators). */
export const unregisterServer = (deps: Deps) =>
  withRestErrors('sharing', async (req) => {
    requirePost(req);
    const params = await readParams(req);
    https(deps, req);
    requireAdministrator(await authenticate(deps, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params }));
    const id = decodeURIComponent(/\/servers\/([^/]+)\/unregister\/?$/.exec(new URL(req.url).pathname)?.[1] ?? '');
    if (id === OWN_SERVER_ID) {
      throw new EngineError('FORBIDDEN', 'the hosting server cannot be unregistered', {
        details: ['The hosting server of this site cannot be unregistered.'],
      });
    }
    await assertNoSiteBackup(deps);
    if (!(await deps.store.deleteFederatedServer(id))) {
      throw new EngineError('NOT_FOUND', `no server ${id}`, { details: [`Server '${id}' is not federated with this portal.`] });
    }
    return respond(params.get('f'), { success: true });
  });

/** Read-only endpoints take GET and POST: arcgis-rest-js `request()` POSTs by default (it does so for `rest/info`). */
export function infoRoutes(deps: Deps): Route[] {
  return [
    { method: 'ALL', path: '/server/rest/info', handler: serverInfo(deps) },
    { method: 'ALL', path: '/portal/sharing/rest/info', handler: portalInfo(deps) },
    { method: 'ALL', path: '/portal/sharing/rest/portals/self', handler: portalSelf(deps) },
    { method: 'ALL', path: '/portal/sharing/rest/community/self', handler: communitySelf(deps) },
    { method: 'ALL', path: '/portal/sharing/rest/portals/self/servers', handler: listServers(deps) },
    { method: 'ALL', path: '/portal/sharing/rest/portals/self/servers/register', handler: registerServer(deps) },
    { method: 'ALL', path: '/portal/sharing/rest/portals/self/servers/:id/unregister', handler: unregisterServer(deps) },
  ];
}

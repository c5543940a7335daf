/**
 * Every route the site serves: one line per adapter family. A family exports
 * `xxxRoutes(deps): Route[]`; adding it here is all the host needs.
 */
import { exportSiteRoutes } from '../adapters/admin/export-site.js';
import { adminRootRoutes } from '../adapters/admin/html.js';
import { importSiteRoutes } from '../adapters/admin/import-site.js';
import { oauthAppRoutes } from '../adapters/admin/oauth-apps.js';
import { securityRoutes } from '../adapters/admin/security.js';
import { serviceRoutes } from '../adapters/admin/services.js';
import { imageServiceRoutes } from '../adapters/image/ops.js';
import { mapCacheRoutes } from '../adapters/map/cache-routes.js';
import { mapOutputRoutes } from '../adapters/map/outputs.js';
import { mapServicesOf } from '../adapters/map/service.js';
import type { Route } from '../adapters/rest.js';
import { federationRoutes } from '../adapters/sharing/federation.js';
import { sharingRoutes } from '../adapters/sharing/generate-token.js';
import { infoRoutes } from '../adapters/sharing/info.js';
import { oauthRoutes } from '../adapters/sharing/oauth2.js';
import { soapRoutes } from '../adapters/soap/endpoint.js';
import type { Site } from './site.js';

/** A family of routes built from the site. */
export type RouteFamily = (site: Site) => readonly Route[];

/**
 * The families mounted by `rasterflow serve`, in order (the first route that matches a request
 * answers it, so more specific families go first).
 */
export const ROUTE_FAMILIES: readonly RouteFamily[] = [
  // Families join here as they land, one line each (sharing, gp, image, soap, ...).
  (site) => sharingRoutes(site),
  (site) => infoRoutes(site),
  (site) => oauthRoutes(site),
  (site) => federationRoutes(site),
  (site) => oauthAppRoutes(site),
  (site) => securityRoutes(site),
  (site) => serviceRoutes(site),
  (site) => exportSiteRoutes(site),
  (site) => importSiteRoutes(site),
  (site) => adminRootRoutes(site),
  (site) => imageServiceRoutes(site),
  (site) => soapRoutes(site),
  (site) => mapOutputRoutes(site),
  (site) => mapCacheRoutes(site, { maps: mapServicesOf(site) }),
];

/** The routes of every family plus `extras` (mounted last). */
export function siteRoutes(site: Site, extras: readonly Route[] = [], families: readonly RouteFamily[] = ROUTE_FAMILIES): Route[] {
  return [...families.flatMap((family) => family(site)), ...extras];
}

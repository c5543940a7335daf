/**
 * The protocol adapters, `import { ... } from 'rasterflow/adapters'`: host-agnostic handlers
 * `(deps) => (req: Request) => Promise<Response>` for the site server's REST protocols, the shared
 * REST layer, tokens and authentication, and the store interface they need. Mount them in any host
 * that speaks web-standard Request/Response; `rasterflow/server` is the one rasterflow ships.
 */
export * from './rest.js';
export * from './tokens.js';
export * from './auth.js';
export * from './site.js';
export { sharingRoutes, federatedRoot, checkCredentials } from './sharing/generate-token.js';
export { infoRoutes } from './sharing/info.js';
export { oauthRoutes } from './sharing/oauth2.js';
export { federationRoutes } from './sharing/federation.js';
export { adminRootRoutes } from './admin/html.js';
export { securityRoutes } from './admin/security.js';
export { serviceRoutes } from './admin/services.js';
export { oauthAppRoutes } from './admin/oauth-apps.js';
export { exportSiteRoutes } from './admin/export-site.js';
export { importSiteRoutes } from './admin/import-site.js';
export { startWebhookDelivery } from './admin/webhook-delivery.js';
export { createGpService, recoverJobs, type GpService } from './gp/training-data-task.js';
export { imageServiceRoutes } from './image/ops.js';
export { soapRoutes, soapHandler, SOAP_ROOT } from './soap/endpoint.js';
export { SOAP_OPERATIONS } from './soap/operations.js';
export { wsdlDocument } from './soap/wsdl.js';
export { GEO_SOAP_NS } from './soap/envelope.js';
export { mapServicesOf } from './map/service.js';
export { mapOutputRoutes } from './map/outputs.js';
export { mapCacheRoutes } from './map/cache-routes.js';
export type * from './map/model.js';

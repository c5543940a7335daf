/**
 * The host, `import { ... } from 'rasterflow/server'`: `startServer` (what `rasterflow serve` runs),
 * the Hono app over a route list, the embedded SQLite site store, the PostgreSQL one several servers
 * share, and site assembly.
 */
export { startServer, type ServeOptions, type RunningServer } from './serve.js';
export { createApp } from './app.js';
export { siteRoutes, ROUTE_FAMILIES, type RouteFamily } from './routes.js';
export { openSqliteStore } from './sqlite-store.js';
export { openPgStore, type PgSiteStore, type PgStoreOptions } from './pg-store.js';
export { openSite, ensurePrimaryAdministrator, type Site, type OpenSiteOptions } from './site.js';
export { loadConfig, parseConfig } from './config.js';

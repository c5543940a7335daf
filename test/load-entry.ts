/**
 * Test-only entry of `rasterflow serve` for test/load.test.ts: the real CLI (src/cli/main.ts) with
 * one extra route, `GET /test/renderStats`, answering the site's image render slots
 * (`imageServicesOf(site).renderStats()`: running, queued, the peak that ever ran at once, and the
 * limit) so that the load test can check the bound from outside the server's process.
 */
import { imageServicesOf } from '../src/adapters/image/service.js';
import { ROUTE_FAMILIES, type RouteFamily } from '../src/server/routes.js';

const statsFamily: RouteFamily = (site) => [
  { method: 'GET', path: '/test/renderStats', handler: async () => Response.json(imageServicesOf(site).renderStats()) },
];

(ROUTE_FAMILIES as RouteFamily[]).push(statsFamily);
await import('../src/cli/main.js');

/**
 * Test-only entry of `rasterflow`: the real CLI (src/cli/main.ts, signals and all) with two extra
 * routes mounted by `serve`, used by the child-process tests:
 * - `GET /test/slow?ms=N`: answers `slow done` after N ms (a request in flight during shutdown);
 * - `POST /test/users/add` (username, password, token): what the admin users/add does to the store,
 *   behind an administrator's token, answering `{"status":"success"}` once the user is stored. The
 *   kill -9 test streams these until the real admin endpoint is mounted.
 */
import { ADMIN_AUDIENCE, authenticate, hashPassword, PORTAL_AUDIENCE, requireAdministrator } from '../src/adapters/auth.js';
import { readParams, requirePost, withRestErrors, type Route } from '../src/adapters/rest.js';
import { ROUTE_FAMILIES, type RouteFamily } from '../src/server/routes.js';

const testFamily: RouteFamily = (site) => [
  {
    method: 'GET',
    path: '/test/slow',
    handler: async (req) => {
      const ms = Number(new URL(req.url).searchParams.get('ms') ?? '1000');
      await new Promise((r) => setTimeout(r, ms));
      return new Response('slow done');
    },
  },
  {
    method: 'ALL',
    path: '/test/users/add',
    handler: withRestErrors('admin', async (req) => {
      requirePost(req);
      const params = await readParams(req);
      const caller = await authenticate(site, req, { audiences: [ADMIN_AUDIENCE, PORTAL_AUDIENCE], shape: 'admin', params });
      requireAdministrator(caller);
      const username = params.get('username') ?? '';
      await site.store.putUser({
        username,
        passwordHash: await hashPassword(params.get('password') ?? ''),
        role: 'user',
        roles: [],
        created: site.clock.now(),
      });
      return Response.json({ status: 'success' });
    }),
  } satisfies Route,
];

(ROUTE_FAMILIES as RouteFamily[]).push(testFamily);
await import('../src/cli/main.js');

/**
 * Test-only entry of `rasterflow`: the real CLI (src/cli/main.ts, signals and all) with two extra
 * routes mounted by `serve`, used by the child-process tests:
 * - `GET /test/slow?ms=N`: answers `slow done` after N ms (a request in flight during shutdown);
 * - `POST /test/users/add` (username, password, token): what the admin users/add does to the store,
 *   behind an administrator's token, answering `{"status":"success"}` once the user is stored. The
 *   kill -9 test streams these until the real admin endpoint is mounted.
 * - with `RASTERFLOW_TEST_EXPORT_PAUSE=write|rename`, the real `POST /server/admin/exportSite` (mounted
 *   first, so it answers instead of the site's) prints `test: site export paused at <where>` and waits
 *   forever before writing the archive, or with the archive written under its temporary name (the
 *   crash tests kill the server there).
 */
import { ADMIN_AUDIENCE, authenticate, hashPassword, PORTAL_AUDIENCE, requireAdministrator } from '../src/adapters/auth.js';
import { EXPORT_SITE_PATH, exportSiteHandler } from '../src/adapters/admin/export-site.js';
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

const pauseAt = process.env['RASTERFLOW_TEST_EXPORT_PAUSE'];
if (pauseAt === 'write' || pauseAt === 'rename') {
  const pause = async (): Promise<void> => {
    process.stderr.write(`test: site export paused at ${pauseAt}\n`);
    await new Promise((r) => setTimeout(r, 3_600_000));
  };
  (ROUTE_FAMILIES as RouteFamily[]).unshift((site) => [
    {
      method: 'ALL',
      path: EXPORT_SITE_PATH,
      handler: exportSiteHandler({ ...site, options: pauseAt === 'write' ? { beforeWrite: pause } : { beforeRename: pause } }),
    },
  ]);
}
await import('../src/cli/main.js');

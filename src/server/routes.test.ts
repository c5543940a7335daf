import { describe, expect, it } from 'vitest';
import type { Route } from '../adapters/rest.js';
import { testSite } from '../../test/site.js';
import { siteRoutes, type RouteFamily } from './routes.js';

const route = (path: string): Route => ({ method: 'GET', path, handler: () => Promise.resolve(new Response(path)) });

describe('siteRoutes', () => {
  it('concatenates every family in order, built from the site, then the extras', async () => {
    const site = await testSite();
    const seen: unknown[] = [];
    const families: RouteFamily[] = [
      (s) => {
        seen.push(s);
        return [route('/a'), route('/b')];
      },
      () => [route('/c')],
    ];
    expect(siteRoutes(site, [route('/extra')], families).map((r) => r.path)).toEqual(['/a', '/b', '/c', '/extra']);
    expect(seen).toEqual([site]);
    expect(siteRoutes(site, [], []).map((r) => r.path)).toEqual([]);
    await site.store.close();
  });
});

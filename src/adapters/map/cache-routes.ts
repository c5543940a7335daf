/**
 * The virtual cache directories of map services (GetVirtualCacheDirectory's URLs):
 *
 *     GET /server/rest/directories/cache/<cache folder>/<map name>/<cache name>/Lxx/Rxxxxxxxx/Cxxxxxxxx.<png|jpg>
 *
 * `<cache folder>` is `<folder>_<service>` (`<service>` at the root, as the vendor names its cache
 * folders), `<cache name>` `_alllayers` (the fused cache) or a layer id (that layer's cache). Tiles
 * missing on disk are drawn on demand, as GetMapTile draws them (one shared tile cache per site).
 *
 * - The service's token rules apply (the image service's, access.ts): a service is anonymous when
 *   its properties say `anonymous: true`, else a token is required (`?token=` or the headers), and
 *   the token is checked before a missing service is reported, so an anonymous caller cannot tell a
 *   secured service from none.
 * - A tile outside the cache (level, row or column outside the scheme or the map's full extent), an
 *   unknown map, cache or file name: HTTP 404. The extension must be the cache format's (`png` for
 *   PNG, `jpg` for JPEG; MIXED caches answer either name with the tile as stored, with its type).
 * - `ETag` (the bytes' hash) with `If-None-Match` -> 304. `Cache-Control`: when the cache allows
 *   client caching, `public, max-age=<n>` for an anonymous service and `private, max-age=<n>` for a
 *   secured one (shared caches never hand a secured tile to a caller without a token); when it
 *   does not, Decision: `no-cache` (clients store the tile but revalidate it with the ETag each
 *   time), `private, no-cache` for a secured service. `<n>` is the site's tileMaxAge (default 3600 s).
 * - A missing tile is waited for under the request's time budget (`requestTimeoutMs`, or until the
 *   client hangs up) and counted against the client's address; a full tile queue is the vendor's
 *   "server busy" error (a JSON error with code 503, HTTP 200), as a timeout is (code 504).
 */
import { EngineError } from '../../core/errors.js';
import { authenticate } from '../auth.js';
import { clientKey, requestSignal } from '../limits.js';
import { matchesIfNoneMatch } from '../image/tile-cache.js';
import { optionalCaller, servicesAudiences } from '../image/access.js';
import { DEFAULT_TILE_MAX_AGE } from '../image/tiles.js';
import { readParams, requireHttps, TransportError, withRestErrors, type Route } from '../rest.js';
import { fromTrustedProxy, limitsOf, type ServiceRecord, type SiteDeps } from '../site.js';
import type { MapService } from './model.js';
import { mapServicesOf } from './service.js';
import { cacheEncoding, cacheFolderName, FUSED_CACHE_NAME, mapTileCachesOf, parseTilePath, type MapTileCache } from './tile-cache.js';

/** The root of the virtual cache directories (GetVirtualCacheDirectory's URLs start here). */
export const CACHE_DIRECTORY_ROOT = '/server/rest/directories/cache';

export type MapCacheDeps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'log'>;

/** Opens MapServer services by folder and name (the site's map service registry). */
export interface MapServiceOpener {
  open(folder: string, name: string): Promise<MapService | undefined>;
}

export interface MapCacheRouteOptions {
  /** Default: the site's map service registry (`mapServicesOf(deps)`). */
  readonly maps?: MapServiceOpener;
  /** Default: the site's shared tile cache (`mapTileCachesOf(deps)`). */
  readonly tiles?: MapTileCache;
}

const notFound = (): TransportError => new TransportError(404, 'NOT_FOUND', 'Tile not found.', { details: ['Tile not found.'] });

/** The MapServer record whose cache folder is `name` (see cacheFolderName). */
async function recordOfCacheFolder(deps: MapCacheDeps, name: string): Promise<ServiceRecord | undefined> {
  const all = await deps.store.listServices();
  return all.find((r) => r.type === 'MapServer' && cacheFolderName({ folder: r.folder, serviceName: r.serviceName }) === name);
}

export function mapCacheRoutes(deps: MapCacheDeps, options: MapCacheRouteOptions = {}): Route[] {
  const maps = options.maps ?? mapServicesOf(deps);
  const handler = withRestErrors('sharing', async (req) => {
    requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
    const params = await readParams(req);
    const path = new URL(req.url).pathname;
    let parts: string[] = [];
    if (path.startsWith(`${CACHE_DIRECTORY_ROOT}/`)) {
      try {
        parts = path
          .slice(CACHE_DIRECTORY_ROOT.length + 1)
          .split('/')
          .map(decodeURIComponent);
      } catch {
        parts = [];
      }
    }
    const record = parts.length > 0 && parts[0] !== '' ? await recordOfCacheFolder(deps, parts[0]!) : undefined;
    if (record?.properties['anonymous'] === true) await optionalCaller(deps, req, params);
    else await authenticate(deps, req, { audiences: servicesAudiences(req, deps), shape: 'sharing', params });
    if (!record || parts.length !== 6) throw notFound();
    const [, mapName, cacheName, l, r, c] = parts as [string, string, string, string, string, string];
    const service = await maps.open(record.folder, record.serviceName);
    if (!service || service.mapName !== mapName || service.tiling.lods.length === 0) throw notFound();
    let layerId: number | undefined;
    if (cacheName !== FUSED_CACHE_NAME) {
      if (!/^(0|[1-9]\d{0,8})$/.test(cacheName)) throw notFound();
      layerId = Number(cacheName);
      if (service.byId(layerId)?.kind === 'table' || service.byId(layerId) === undefined) throw notFound();
    }
    const address = parseTilePath(l, r, c);
    if (!address) throw notFound();
    const encoding = cacheEncoding(service.tiling);
    if ((encoding === 'png' && address.ext !== 'png') || (encoding === 'jpeg' && address.ext !== 'jpg')) throw notFound();
    const tiles = options.tiles ?? mapTileCachesOf(deps);
    let tile;
    const budget = requestSignal(req, limitsOf(deps.config));
    try {
      tile = await tiles.tile(
        service,
        {
          level: address.level,
          row: address.row,
          col: address.col,
          ...(layerId !== undefined ? { layerId } : {}),
          client: clientKey(req, deps),
        },
        budget.signal,
      );
    } catch (e) {
      if (e instanceof EngineError && e.code === 'NOT_FOUND') throw notFound();
      throw e;
    } finally {
      budget.dispose();
    }
    const anonymous = record.properties['anonymous'] === true;
    const maxAge = deps.config.tileMaxAge ?? DEFAULT_TILE_MAX_AGE;
    const scope = anonymous ? 'public' : 'private';
    const headers = new Headers({
      etag: tile.etag,
      'cache-control': service.tiling.clientCachingAllowed ? `${scope}, max-age=${maxAge}` : anonymous ? 'no-cache' : 'private, no-cache',
      'content-type': tile.contentType,
    });
    if (matchesIfNoneMatch(req.headers.get('if-none-match'), tile.etag)) return new Response(null, { status: 304, headers });
    headers.set('content-length', String(tile.bytes.byteLength));
    return new Response(Buffer.from(tile.bytes), { status: 200, headers });
  });
  return [{ method: 'GET', path: `${CACHE_DIRECTORY_ROOT}/*`, handler }];
}

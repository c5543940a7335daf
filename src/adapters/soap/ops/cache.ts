/**
 * The fixed-scale map and tile cache operations (seed §7; types protocols.md §5.5, §5.6):
 * IsFixedScaleMap, HasSingleFusedMapCache, GetTileCacheInfo, GetMapTile, HasLayerCache,
 * GetLayerTile, GetVirtualCacheDirectory, GetCacheName, GetTileImageInfo, GetCacheControlInfo,
 * GetCacheDescriptionInfo and GetCacheStorageInfo, over the map's tile cache (map/tile-cache.ts).
 *
 * Decision: a map is fixed-scale (cached) when its service has a tiling scheme with at least one
 * level — the service definition's `tiling`, defaulted by the service's configuration — and then it
 * has a single fused map cache and a cache per layer (every layer: see tile-cache.ts). The cache
 * operations of a map without one answer NOT_FOUND "Map '<name>' has no tile cache.".
 *
 * GetMapTile and GetLayerTile wait for a missing tile under the request's time budget (`ctx.signal`)
 * and are answered SERVER_BUSY when the site's tile queue is full (see map/tile-cache.ts).
 */
import { EngineError, invalidArgument } from '../../../core/errors.js';
import { clientKey } from '../../limits.js';
import { CACHE_DIRECTORY_ROOT } from '../../map/cache-routes.js';
import { cacheFolderName, cacheNameOf, cachedLayer, mapTileCachesOf, type MapTileCache } from '../../map/tile-cache.js';
import type { MapService } from '../../map/model.js';
import { result, type SoapArgs, type SoapContext, type SoapHandler, type SoapObject } from '../operation.js';
import { soapSpatialReference } from '../spatial-reference.js';

/** Checks that `MapName` names the service's map (NOT_FOUND otherwise). */
export function checkMapName(service: MapService, args: SoapArgs): void {
  const name = args['MapName'];
  if (name !== service.mapName) {
    throw new EngineError('NOT_FOUND', `Map '${typeof name === 'string' ? name : ''}' does not exist in this service.`, {
      path: 'MapName',
    });
  }
}

/** Whether the map has a tile cache (Decision at the top of this file). */
export const isFixedScale = (service: MapService): boolean => service.tiling.lods.length > 0;

function requireCache(service: MapService): void {
  if (!isFixedScale(service)) throw new EngineError('NOT_FOUND', `Map '${service.mapName}' has no tile cache.`, { path: 'MapName' });
}

const intArg = (args: SoapArgs, name: string): number => {
  const v = args[name];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalidArgument(name, `${name} must be a whole number`);
  return v;
};

const formatArg = (args: SoapArgs): string | undefined => {
  const f = args['Format'];
  return typeof f === 'string' ? f : undefined;
};

/** The LayerID of a cache operation: -1 = the fused cache, else a layer of the map. */
function layerArg(service: MapService, args: SoapArgs): number {
  const id = intArg(args, 'LayerID');
  return id === -1 ? -1 : cachedLayer(service, id);
}

/** TileCacheInfo (§5.5 example): SR, origin, tile size, DPI (PreciseDPI when fractional), LODs. */
export function tileCacheInfo(service: MapService): SoapObject {
  const s = service.tiling;
  return {
    $type: 'TileCacheInfo',
    SpatialReference: soapSpatialReference(service.spatialReference),
    TileOrigin: { $type: 'PointN', X: s.origin.x, Y: s.origin.y },
    TileCols: s.cols,
    TileRows: s.rows,
    DPI: Math.round(s.dpi),
    LODInfos: s.lods.map((l) => ({ $type: 'LODInfo', LevelID: l.level, Scale: l.scale, Resolution: l.resolution })),
    ...(Number.isInteger(s.dpi) ? {} : { PreciseDPI: s.dpi }),
  };
}

/**
 * TileImageInfo. Decisions: `Antialiasing` is `true` (feature layers are drawn antialiased, the
 * vendor's string form of its boolean); `BandCount` is the bands of the cache's tiles: 3 for JPEG,
 * 4 (RGBA) for PNG and MIXED (whose edge tiles are PNG).
 */
export function tileImageInfo(service: MapService): SoapObject {
  const s = service.tiling;
  return {
    $type: 'TileImageInfo',
    CacheTileFormat: s.format,
    CompressionQuality: s.quality,
    Antialiasing: 'true',
    BandCount: s.format === 'JPEG' ? 3 : 4,
  };
}

export const cacheControlInfo = (service: MapService): SoapObject => ({
  $type: 'CacheControlInfo',
  ClientCachingAllowed: service.tiling.clientCachingAllowed,
});

/** The virtual cache directory of the fused cache (-1) or a layer's cache: its tiles are `<dir>/Lxx/Rxxxxxxxx/Cxxxxxxxx.<ext>`. */
export function virtualCacheDirectory(origin: string, service: MapService, layerId: number): string {
  return `${origin}${CACHE_DIRECTORY_ROOT}/${encodeURIComponent(cacheFolderName(service))}/${encodeURIComponent(service.mapName)}/${cacheNameOf(layerId)}`;
}

/** The operations, each over the tile cache `tiles(ctx)` gives. */
export function cacheHandlersWith(tiles: (ctx: SoapContext) => MapTileCache): Record<string, SoapHandler> {
  const tileOf = async (ctx: SoapContext, args: SoapArgs, layerId: number | undefined): Promise<Uint8Array> => {
    const t = await tiles(ctx).tile(
      ctx.service,
      {
        level: intArg(args, 'Level'),
        row: intArg(args, 'Row'),
        col: intArg(args, 'Column'),
        ...(layerId !== undefined ? { layerId } : {}),
        ...(formatArg(args) !== undefined ? { format: formatArg(args)! } : {}),
        // Decision: a tile drawing counts against the client's address (as the token binding sees it).
        client: clientKey(ctx.request, ctx.deps),
      },
      ctx.signal,
    );
    return t.bytes;
  };

  return {
    IsFixedScaleMap: (ctx, args) => {
      checkMapName(ctx.service, args);
      return Promise.resolve(result(isFixedScale(ctx.service)));
    },

    HasSingleFusedMapCache: (ctx, args) => {
      checkMapName(ctx.service, args);
      return Promise.resolve(result(isFixedScale(ctx.service)));
    },

    GetTileCacheInfo: (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return Promise.resolve(result(tileCacheInfo(ctx.service)));
    },

    GetMapTile: async (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return result(await tileOf(ctx, args, undefined));
    },

    // Decision: a standalone table is no layer and has no layer cache (false, not a fault).
    HasLayerCache: (ctx, args) => {
      checkMapName(ctx.service, args);
      const id = intArg(args, 'LayerID');
      const l = ctx.service.byId(id);
      if (l === undefined) {
        throw new EngineError('NOT_FOUND', `Layer ${id} does not exist in map '${ctx.service.mapName}'.`, { path: 'LayerID' });
      }
      return Promise.resolve(result(isFixedScale(ctx.service) && l.kind !== 'table'));
    },

    GetLayerTile: async (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return result(await tileOf(ctx, args, layerArg(ctx.service, args)));
    },

    // Decision: for a secured service the URL carries no token (clients append the tile path to
    // it); its tiles answer with the same token rules as the service (`?token=` or the headers).
    GetVirtualCacheDirectory: (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return Promise.resolve(result(virtualCacheDirectory(ctx.origin, ctx.service, layerArg(ctx.service, args))));
    },

    GetCacheName: (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return Promise.resolve(result(cacheNameOf(layerArg(ctx.service, args))));
    },

    GetTileImageInfo: (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return Promise.resolve(result(tileImageInfo(ctx.service)));
    },

    GetCacheControlInfo: (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return Promise.resolve(result(cacheControlInfo(ctx.service)));
    },

    GetCacheDescriptionInfo: (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      const s = ctx.service;
      return Promise.resolve(
        result({
          $type: 'CacheDescriptionInfo',
          TileCacheInfo: tileCacheInfo(s),
          TileImageInfo: tileImageInfo(s),
          LayerCacheInfos: s.layers.map((l) => ({ $type: 'LayerCacheInfo', LayerID: l.id, HasCache: true })),
          CacheControlInfo: cacheControlInfo(s),
          // Decision: the fused cache is the service's cache; the layer caches come with it.
          ServiceType: 'geoSingleFusedMapCache',
        }),
      );
    },

    // Decision: the exploded layout (one file per tile), whose packet size is 0 (packets are the
    // compact layout's bundles).
    GetCacheStorageInfo: (ctx, args) => {
      checkMapName(ctx.service, args);
      requireCache(ctx.service);
      return Promise.resolve(result({ $type: 'CacheStorageInfo', StorageFormat: 'geoMapCacheStorageModeExploded', PacketSize: 0 }));
    },
  };
}

/** The cache operations over the site's shared tile cache. */
export const cacheHandlers: Record<string, SoapHandler> = cacheHandlersWith((ctx) => mapTileCachesOf(ctx.deps));

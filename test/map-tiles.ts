/** Test helpers for the map tile cache: a small fake MapService with a tiling scheme, and a fake tile renderer. */
import { join } from 'node:path';
import type { Extent } from '../src/core/pixel-block.js';
import type { LevelOfDetail, MapLayer, MapService, TileScheme } from '../src/adapters/map/model.js';
import type { RenderTile, TileDrawRequest } from '../src/adapters/map/tile-cache.js';
import { METERS_PER_INCH } from '../src/adapters/soap/display.js';

export const ORIGIN = { x: 1000, y: 9000 };
/** Metre levels whose scale follows scale = resolution x 1 x dpi / 0.0254. */
export const lods = (n: number, top = 32): LevelOfDetail[] =>
  Array.from({ length: n }, (_, level) => {
    const resolution = top / 2 ** level;
    return { level, resolution, scale: (resolution * 96) / METERS_PER_INCH };
  });

export function fakeService(root: string, over: Partial<MapService> & { scheme?: Partial<TileScheme> } = {}): MapService {
  const version = over.version ?? 'v1';
  const tiling: TileScheme = {
    origin: ORIGIN,
    rows: 16,
    cols: 16,
    dpi: 96,
    lods: lods(4),
    format: 'PNG',
    quality: 75,
    clientCachingAllowed: true,
    cacheDir: join(root, 'map', 'svc', version, 'tiles'),
    ...over.scheme,
  };
  const layers = [
    { id: 0, kind: 'raster', name: 'A' } as unknown as MapLayer,
    { id: 1, kind: 'feature', name: 'B' } as unknown as MapLayer,
  ];
  const tables = [{ kind: 'table', id: 2, name: 'T' }] as unknown as MapService['tables'];
  const fullExtent: Extent = { xmin: 1000, ymin: 9000 - 1000, xmax: 1000 + 700, ymax: 9000 };
  return {
    name: 'svc',
    serviceName: 'svc',
    folder: '',
    version,
    mapName: 'Layers',
    description: '',
    copyrightText: '',
    spatialReference: { wkid: 32725, metersPerUnit: 1 },
    units: 'geoMeters',
    fullExtent,
    initialExtent: fullExtent,
    layers,
    tables,
    relationships: [],
    bookmarks: [],
    backgroundColor: [255, 255, 255, 0],
    maxRecordCount: 1000,
    maxImageWidth: 4096,
    maxImageHeight: 4096,
    byId: (id: number) => [...layers, ...tables].find((l) => l.id === id),
    ...over,
    tiling,
  } as MapService;
}

/** A renderer painting each tile with a colour made of its address (opaque unless `alphaAt` says), counting draws. */
export function fakeRenderer(delayMs = 0, alpha = 255): { render: RenderTile; calls: TileDrawRequest[] } {
  const calls: TileDrawRequest[] = [];
  const render: RenderTile = async (_service, t) => {
    calls.push(t);
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    const out = new Uint8Array(t.width * t.height * 4);
    for (let i = 0; i < t.width * t.height; i++) {
      out[i * 4] = (t.level * 40 + (t.layerId ?? 7)) & 255;
      out[i * 4 + 1] = t.row * 10;
      out[i * 4 + 2] = t.col * 10;
      out[i * 4 + 3] = i === 0 ? alpha : 255;
    }
    return out;
  };
  return { render, calls };
}

/**
 * Test helpers for the map drawing tests: a small in-memory FeatureTable (envelope filter, object
 * ids, `FIELD = value` where clauses) and a MapService built around given layers. Not the site's
 * feature store: a stand-in with the same contract, so drawing can be tested on its own.
 */
import type { Extent, SpatialReference } from '../src/core/pixel-block.js';
import { EngineError } from '../src/core/errors.js';
import { openImageService } from '../src/adapters/image/service.js';
import type {
  AttributeValue,
  FeatureLayer,
  FeatureQuery,
  FeatureRow,
  FeatureTable,
  FieldInfo,
  Geometry,
  MapLayer,
  MapService,
  RasterLayer,
  RendererJson,
} from '../src/adapters/map/model.js';

export interface MemoryFeature {
  readonly id: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly geometry: Geometry;
}

function coordsOf(g: Geometry): number[][] {
  const out: number[][] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v) && typeof v[0] === 'number') out.push(v as number[]);
    else if (Array.isArray(v)) v.forEach(walk);
  };
  walk(g.coordinates);
  return out;
}

export function boundsOfGeometry(g: Geometry): Extent {
  const c = coordsOf(g);
  return {
    xmin: Math.min(...c.map((p) => p[0]!)),
    ymin: Math.min(...c.map((p) => p[1]!)),
    xmax: Math.max(...c.map((p) => p[0]!)),
    ymax: Math.max(...c.map((p) => p[1]!)),
  };
}

const meets = (a: Extent, b: Extent): boolean => a.xmin <= b.xmax && b.xmin <= a.xmax && a.ymin <= b.ymax && b.ymin <= a.ymax;

/** `FIELD = 'text'` or `FIELD = number` (the only where clauses this stand-in understands); '' = all. */
function whereFilter(where: string | undefined, path: string): (f: MemoryFeature) => boolean {
  const t = where?.trim() ?? '';
  if (t === '' || t === '1=1') return () => true;
  const m = /^(\w+)\s*=\s*(?:'([^']*)'|(-?[\d.]+))$/.exec(t);
  if (!m) throw new EngineError('INVALID_ARGUMENT', `Invalid where clause '${t}'.`, { path: `${path}/WhereClause` });
  const value: AttributeValue = m[2] !== undefined ? m[2] : Number(m[3]);
  return (f) => f.attributes[m[1]!] === value;
}

export function memoryTable(
  features: readonly MemoryFeature[],
  geometryType: FeatureTable['geometryType'],
  fields: readonly FieldInfo[] = [],
): FeatureTable & { readonly queries: FeatureQuery[] } {
  const queries: FeatureQuery[] = [];
  const select = (q: FeatureQuery): MemoryFeature[] => {
    queries.push(q);
    const where = whereFilter(q.where, q.path ?? 'QueryFilter');
    return features.filter((f) => {
      if (q.objectIds && !q.objectIds.includes(f.id)) return false;
      if (q.spatial && !meets(boundsOfGeometry(f.geometry), boundsOfGeometry(q.spatial.geometry))) return false;
      return where(f);
    });
  };
  const row = (f: MemoryFeature, q: FeatureQuery): FeatureRow => ({
    id: f.id,
    attributes: { OBJECTID: f.id, ...f.attributes },
    ...(q.returnGeometry ? { geometry: f.geometry } : {}),
  });
  const all = features.map((f) => boundsOfGeometry(f.geometry));
  return {
    queries,
    fields: [{ name: 'OBJECTID', type: 'geoFieldTypeOID', alias: 'OBJECTID', length: 4, nullable: false, editable: false }, ...fields],
    objectIdField: 'OBJECTID',
    geometryType,
    ...(all.length > 0
      ? {
          extent: {
            xmin: Math.min(...all.map((e) => e.xmin)),
            ymin: Math.min(...all.map((e) => e.ymin)),
            xmax: Math.max(...all.map((e) => e.xmax)),
            ymax: Math.max(...all.map((e) => e.ymax)),
          },
        }
      : {}),
    query: (q) => Promise.resolve(select(q).map((f) => row(f, q))),
    count: (q) => Promise.resolve(select(q).length),
    ids: (q) => Promise.resolve(select(q).map((f) => f.id)),
    statistics: () => Promise.reject(new Error('not used by the drawing tests')),
    distinct: () => Promise.reject(new Error('not used by the drawing tests')),
    attachmentInfos: () => Promise.resolve([]),
    attachmentData: () => Promise.resolve([]),
  };
}

export function featureLayer(
  id: number,
  name: string,
  table: FeatureTable,
  renderer: RendererJson,
  extra: Partial<Omit<FeatureLayer, 'kind' | 'id' | 'name' | 'table' | 'renderer'>> = {},
): FeatureLayer {
  return {
    kind: 'feature',
    id,
    name,
    description: '',
    copyrightText: '',
    minScale: 0,
    maxScale: 0,
    defaultVisibility: true,
    extent: table.extent ?? { xmin: 0, ymin: 0, xmax: 1, ymax: 1 },
    table,
    renderer,
    displayField: 'OBJECTID',
    hasAttachments: false,
    ...extra,
  };
}

export async function rasterLayer(
  id: number,
  name: string,
  path: string,
  renderingRule?: unknown,
  extra: Partial<Omit<RasterLayer, 'kind' | 'id' | 'name' | 'image' | 'path'>> = {},
): Promise<RasterLayer> {
  const image = await openImageService({
    folder: '',
    serviceName: `layer${id}-${name}`,
    type: 'ImageServer',
    properties: { path, ...(renderingRule !== undefined ? { renderingRule } : {}) },
    created: 0,
  });
  return {
    kind: 'raster',
    id,
    name,
    description: '',
    copyrightText: '',
    minScale: 0,
    maxScale: 0,
    defaultVisibility: true,
    extent: image.info.extent,
    path,
    ...(renderingRule !== undefined ? { renderingRule } : {}),
    image,
    ...extra,
  };
}

export function memoryMap(
  layers: readonly MapLayer[],
  spatialReference: SpatialReference,
  fullExtent: Extent,
  extra: Partial<MapService> = {},
): MapService {
  const service: MapService = {
    name: 'olinda',
    serviceName: 'olinda',
    folder: '',
    version: 'v1',
    mapName: 'Layers',
    description: '',
    copyrightText: '',
    spatialReference,
    units: spatialReference.geographic ? 'geoDecimalDegrees' : 'geoMeters',
    fullExtent,
    initialExtent: fullExtent,
    layers,
    tables: [],
    relationships: [],
    bookmarks: [],
    backgroundColor: [255, 255, 255, 255],
    maxRecordCount: 1000,
    maxImageWidth: 4096,
    maxImageHeight: 4096,
    tiling: {
      origin: { x: fullExtent.xmin, y: fullExtent.ymax },
      rows: 256,
      cols: 256,
      dpi: 96,
      lods: [],
      format: 'PNG',
      quality: 75,
      clientCachingAllowed: true,
      cacheDir: '/nonexistent',
    },
    byId: (id) => service.layers.find((l) => l.id === id),
    ...extra,
  };
  return service;
}

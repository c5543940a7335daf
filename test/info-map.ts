/**
 * Test helpers for the information operations (Find, Identify, hyperlinks, data classes): a
 * FeatureTable over an in-memory SQLite table (where clauses evaluated by SQLite itself, spatial
 * filters by jsts), a MapService built around given layers, and a SoapContext for a test site.
 * A stand-in with the feature store's contract, so the operations can be tested on their own.
 */
import Database from 'better-sqlite3';
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import GeoJSONReader from 'jsts/org/locationtech/jts/io/GeoJSONReader.js';
import RelateOp from 'jsts/org/locationtech/jts/operation/relate/RelateOp.js';
import type JstsGeometry from 'jsts/org/locationtech/jts/geom/Geometry.js';
import { featureLayer as memoryFeatureLayer, memoryMap } from './memory-map.js';
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
  RendererJson,
  StandaloneTable,
} from '../src/adapters/map/model.js';
import type { SoapContext } from '../src/adapters/soap/operation.js';
import type { Extent, SpatialReference } from '../src/core/pixel-block.js';
import type { SiteDeps } from '../src/adapters/site.js';

export interface TestFeature {
  readonly id: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly geometry?: Geometry | null;
}

const reader = new GeoJSONReader(new GeometryFactory());

function bounds(g: Geometry): Extent {
  const xs: number[] = [];
  const ys: number[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v) && typeof v[0] === 'number') {
      xs.push(v[0]);
      ys.push(v[1] as number);
    } else if (Array.isArray(v)) v.forEach(walk);
  };
  walk(g.coordinates);
  return { xmin: Math.min(...xs), ymin: Math.min(...ys), xmax: Math.max(...xs), ymax: Math.max(...ys) };
}

export const field = (name: string, type: FieldInfo['type'], extra: Partial<FieldInfo> = {}): FieldInfo => ({
  name,
  type,
  alias: name,
  length: type === 'geoFieldTypeString' ? 64 : 0,
  nullable: true,
  editable: true,
  ...extra,
});

/** A FeatureTable whose where clauses SQLite evaluates (the table `t` holds the attributes) and whose spatial filter jsts decides. */
export function sqliteTable(
  features: readonly TestFeature[],
  geometryType: FeatureTable['geometryType'],
  fields: readonly FieldInfo[],
): FeatureTable & { readonly queries: FeatureQuery[] } {
  const all: FieldInfo[] = [field('OBJECTID', 'geoFieldTypeOID', { nullable: false, editable: false }), ...fields];
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE t (${all.map((f) => `"${f.name}"`).join(', ')})`);
  const insert = db.prepare(`INSERT INTO t VALUES (${all.map(() => '?').join(', ')})`);
  for (const f of features) {
    insert.run(
      all.map((x) => {
        const v = x.name === 'OBJECTID' ? f.id : f.attributes[x.name];
        return v instanceof Date ? v.getTime() : typeof v === 'boolean' ? Number(v) : (v ?? null);
      }),
    );
  }
  const queries: FeatureQuery[] = [];
  const byId = new Map(features.map((f) => [f.id, f]));
  const select = (q: FeatureQuery): TestFeature[] => {
    queries.push(q);
    const where = q.where?.trim() ? q.where : '1=1';
    const ids = (db.prepare(`SELECT OBJECTID FROM t WHERE ${where} ORDER BY OBJECTID`).all() as { OBJECTID: number }[]).map(
      (r) => r.OBJECTID,
    );
    let out = ids.map((id) => byId.get(id)!);
    if (q.objectIds) out = out.filter((f) => q.objectIds!.includes(f.id));
    if (q.spatial) {
      const s = reader.read(q.spatial.geometry) as JstsGeometry;
      out = out.filter((f) => f.geometry && RelateOp.relate(reader.read(f.geometry) as JstsGeometry, s).isIntersects());
    }
    return out;
  };
  const rowOf = (f: TestFeature, q: FeatureQuery): FeatureRow => {
    const names = q.outFields && !q.outFields.includes('*') ? q.outFields.map((n) => n.toLowerCase()) : undefined;
    const attributes: Record<string, AttributeValue> = {};
    for (const x of all) {
      if (names && !names.includes(x.name.toLowerCase()) && x.name !== 'OBJECTID') continue;
      attributes[x.name] = x.name === 'OBJECTID' ? f.id : (f.attributes[x.name] ?? null);
    }
    return { id: f.id, attributes, ...(q.returnGeometry ? { geometry: f.geometry ?? null } : {}) };
  };
  const withGeometry = features.filter((f) => f.geometry).map((f) => bounds(f.geometry!));
  return {
    queries,
    fields: all,
    objectIdField: 'OBJECTID',
    geometryType,
    ...(withGeometry.length > 0
      ? {
          extent: {
            xmin: Math.min(...withGeometry.map((e) => e.xmin)),
            ymin: Math.min(...withGeometry.map((e) => e.ymin)),
            xmax: Math.max(...withGeometry.map((e) => e.xmax)),
            ymax: Math.max(...withGeometry.map((e) => e.ymax)),
          },
        }
      : {}),
    query: (q) =>
      Promise.resolve(
        select(q)
          .slice(0, q.limit ?? 1000)
          .map((f) => rowOf(f, q)),
      ),
    count: (q) => Promise.resolve(select(q).length),
    ids: (q) => Promise.resolve(select(q).map((f) => f.id)),
    statistics: () => Promise.reject(new Error('not used')),
    distinct: (name, q) => {
      const rows = select(q ?? {});
      const counts = new Map<AttributeValue, number>();
      for (const r of rows) {
        const v = r.attributes[name] ?? null;
        counts.set(v, (counts.get(v) ?? 0) + 1);
      }
      return Promise.resolve([...counts].map(([value, count]) => ({ value, count })));
    },
    attachmentInfos: () => Promise.resolve([]),
    attachmentData: () => Promise.resolve([]),
  };
}

/** A feature layer as memory-map.ts makes it, described as `<name> layer`. */
export function featureLayer(
  id: number,
  name: string,
  table: FeatureTable,
  renderer: RendererJson,
  extra: Partial<Omit<FeatureLayer, 'kind' | 'id' | 'name' | 'table' | 'renderer'>> = {},
): FeatureLayer {
  return memoryFeatureLayer(id, name, table, renderer, { description: `${name} layer`, ...extra });
}

export function standaloneTable(id: number, name: string, table: FeatureTable, extra: Partial<StandaloneTable> = {}): StandaloneTable {
  return { kind: 'table', id, name, description: '', table, displayField: 'OBJECTID', hasAttachments: false, ...extra };
}

export { rasterLayer } from './memory-map.js';

/** memory-map.ts's map with a description, a copyright, 2048-pixel images and its tables reachable by id. */
export function testMap(
  layers: readonly MapLayer[],
  spatialReference: SpatialReference,
  fullExtent: Extent,
  extra: Partial<MapService> = {},
): MapService {
  const service: MapService = memoryMap(layers, spatialReference, fullExtent, {
    description: 'Test map',
    copyrightText: 'Test data',
    maxImageWidth: 2048,
    maxImageHeight: 2048,
    byId: (id) => service.layers.find((l) => l.id === id) ?? service.tables.find((t) => t.id === id),
    ...extra,
  });
  return service;
}

export function testContext(deps: SiteDeps, service: MapService): SoapContext {
  return {
    deps,
    service,
    request: new Request('http://test/server/services/olinda/MapServer', { method: 'POST' }),
    signal: new AbortController().signal,
    endpoint: 'http://test/server/services/olinda/MapServer',
    origin: 'http://test',
  };
}

/**
 * Map services: a MapServer record of the site store opened as the map model (model.ts).
 * `mapServicesOf(deps)` is the one registry per site (like `imageServicesOf`): it opens each
 * service once — raster layers through `openImageService` (the image service's source, statistics
 * and rendering path), feature layers and tables through the feature store — and keeps it until
 * the record changes (compared as JSON on every lookup) or the service is deleted.
 *
 * Files: `<dataDir>/map/[<folder>/]<name>.MapServer/` holds `<version>.sqlite` (the feature
 * store), `attachments/<version>/` and `tiles/<version>/` (the tile cache's folder). `.MapServer`
 * cannot occur in a folder or service name, so no two services share a folder.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { EngineError } from '../../core/errors.js';
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import { sameSpatialReference } from '../../graph/align.js';
import { transformExtent } from '../../graph/warp.js';
import { openImageService, type OpenedImageService } from '../image/service.js';
import { serviceKey, type ServiceRecord, type SiteDeps } from '../site.js';
import {
  checkRenderer,
  defaultRenderer,
  invalidConfig,
  parseMapServiceProperties,
  symbolFamilyOf,
  tileSchemeOf,
  type FeatureLayerSettings,
  type MapServiceSettings,
  type TableSettings,
} from './config.js';
import { openFeatureStore, type FeatureStore, type SqliteFeatureTable, type TableSource } from './feature-store.js';
import type {
  FeatureLayer,
  FieldInfo,
  MapLayer,
  MapRelationship,
  MapService,
  RasterLayer,
  RendererJson,
  StandaloneTable,
} from './model.js';

/** A map service as opened, with what the registry needs to close it. */
export interface OpenedMapService extends MapService {
  readonly record: ServiceRecord;
  /** serviceKey: `folder/name.MapServer`. */
  readonly key: string;
  readonly settings: MapServiceSettings;
  /** Requests without a token are served (`properties.anonymous`, default false). */
  readonly anonymous: boolean;
  /** The feature store (undefined when the map has only raster layers). */
  readonly store?: FeatureStore;
  /** The service's folder under the data folder. */
  readonly serviceDir: string;
  /** Close the store and the rasters (the registry does it when the service changes). */
  close(): Promise<void>;
}

/** `<dataDir>/map/[<folder>/]<name>.MapServer`. */
export function mapServiceDir(dataDir: string, folder: string, name: string): string {
  return join(dataDir, 'map', ...(folder ? [folder] : []), `${name}.MapServer`);
}

/** SOAP `Units` of a spatial reference's map units. */
export function unitsOf(sr: SpatialReference | undefined): string {
  if (!sr) return 'geoUnknownUnits';
  if (sr.geographic) return 'geoDecimalDegrees';
  const m = sr.metersPerUnit ?? (sr.proj4 && /\+units=m\b/.test(sr.proj4) ? 1 : sr.wkid !== undefined ? 1 : undefined);
  if (m === undefined) return 'geoUnknownUnits';
  const near = (a: number, b: number): boolean => Math.abs(a - b) < 1e-9 * b;
  if (near(m, 1)) return 'geoMeters';
  if (near(m, 0.3048) || near(m, 1200 / 3937)) return 'geoFeet';
  if (near(m, 0.9144) || near(m, 3600 / 3937)) return 'geoYards';
  if (near(m, 1000)) return 'geoKilometers';
  if (near(m, 1609.344)) return 'geoMiles';
  if (near(m, 1852)) return 'geoNauticalMiles';
  if (near(m, 0.1)) return 'geoDecimeters';
  if (near(m, 0.01)) return 'geoCentimeters';
  if (near(m, 0.001)) return 'geoMillimeters';
  if (near(m, 0.0254)) return 'geoInches';
  return 'geoUnknownUnits';
}

const union = (a: Extent | undefined, b: Extent): Extent =>
  a
    ? { xmin: Math.min(a.xmin, b.xmin), ymin: Math.min(a.ymin, b.ymin), xmax: Math.max(a.xmax, b.xmax), ymax: Math.max(a.ymax, b.ymax) }
    : b;

const PLACEHOLDER = /\{([^{}]+)\}/g;

/** Field names a popup template's `{FIELD}` placeholders use that the table does not have. */
function unknownPlaceholders(template: string, fields: readonly FieldInfo[]): string[] {
  const out: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER)) {
    const name = m[1]!.trim();
    if (!fields.some((f) => f.name.toUpperCase() === name.toUpperCase())) out.push(name);
  }
  return out;
}

function fieldOf(table: SqliteFeatureTable, name: string, at: string, what: string): FieldInfo {
  const f = table.fields.find((x) => x.name.toUpperCase() === name.toUpperCase());
  if (!f || f.type === 'geoFieldTypeGeometry') {
    throw invalidConfig(
      at,
      `${what} '${name}' is not a field of '${table.name}' (fields: ${table.fields
        .filter((x) => x.type !== 'geoFieldTypeGeometry')
        .map((x) => x.name)
        .join(', ')}).`,
    );
  }
  return f;
}

const NUMERIC = new Set(['geoFieldTypeOID', 'geoFieldTypeInteger', 'geoFieldTypeSmallInteger', 'geoFieldTypeDouble', 'geoFieldTypeSingle']);

/** Checks a layer's renderer against its table: symbol family, fields. */
function checkLayerRenderer(renderer: RendererJson, table: SqliteFeatureTable, at: string): void {
  const families = checkRenderer(renderer, at);
  const want = symbolFamilyOf(table.geometryType ?? 'point');
  for (const f of families) {
    if (f !== want)
      throw invalidConfig(
        at,
        `Layer '${table.name}' holds ${table.geometryType} features, drawn with ${want} symbols; the renderer uses ${f}.`,
      );
  }
  if (renderer['type'] === 'classBreaks') {
    const f = fieldOf(table, renderer['field'] as string, `${at}.field`, 'The renderer field');
    if (!NUMERIC.has(f.type)) throw invalidConfig(`${at}.field`, `A classBreaks renderer needs a numeric field; '${f.name}' is not one.`);
  }
  if (renderer['type'] === 'uniqueValue') {
    for (const k of ['field1', 'field2', 'field3']) {
      if (typeof renderer[k] === 'string' && renderer[k] !== '') fieldOf(table, renderer[k], `${at}.${k}`, 'The renderer field');
    }
  }
}

function displayFieldOf(table: SqliteFeatureTable, settings: FeatureLayerSettings | TableSettings): string {
  if (settings.displayField !== undefined)
    return fieldOf(table, settings.displayField, `${settings.at}.displayField`, 'The display field').name;
  // Decision: the vendor's default display field is the first string field, else the object id.
  return table.fields.find((f) => f.type === 'geoFieldTypeString')?.name ?? table.objectIdField;
}

function popupOf(table: SqliteFeatureTable, settings: FeatureLayerSettings | TableSettings): string | undefined {
  if (settings.popup === undefined) return undefined;
  const unknown = unknownPlaceholders(settings.popup, table.fields);
  if (unknown.length > 0)
    throw invalidConfig(`${settings.at}.popup`, `The popup uses {${unknown[0]}}, which is not a field of '${table.name}'.`);
  return settings.popup;
}

function subtypesOf(table: SqliteFeatureTable, settings: FeatureLayerSettings | TableSettings): FeatureLayer['subtypes'] {
  if (!settings.subtypes) return undefined;
  const field = fieldOf(table, settings.subtypes.field, `${settings.at}.subtypes.field`, 'The subtype field').name;
  const subtypes = settings.subtypes.subtypes.map((s) => {
    const domains: Record<string, (typeof s.domains)[string]> = {};
    for (const [name, d] of Object.entries(s.domains))
      domains[fieldOf(table, name, `${settings.at}.subtypes`, 'A subtype domain field').name] = d;
    return { code: s.code, name: s.name, domains };
  });
  return { field, subtypes };
}

/** The feature layers and standalone tables of a map as feature-store sources, with the ids the service gives them. */
export function tableSourcesOf(settings: MapServiceSettings): TableSource[] {
  const sources: TableSource[] = [];
  settings.layers.forEach((l, id) => {
    if (l.type !== 'feature') return;
    sources.push({
      id,
      name: l.name,
      kind: 'feature',
      path: l.path,
      fields: l.fields,
      objectIdField: l.objectIdField,
      attachments: l.attachments,
      at: l.at,
      ...(l.subtypes ? { subtypes: l.subtypes } : {}),
    });
  });
  settings.tables.forEach((t, i) => {
    sources.push({
      id: settings.layers.length + i,
      name: t.name,
      kind: 'table',
      path: t.path,
      fields: t.fields,
      objectIdField: t.objectIdField,
      attachments: t.attachments,
      at: t.at,
      ...(t.subtypes ? { subtypes: t.subtypes } : {}),
    });
  });
  return sources;
}

/**
 * Opens a MapServer record as a map. `json` is the record's JSON (its hash is the version).
 * Configuration problems found only now (a field a renderer names, a GeoJSON that is not one)
 * are INVALID_ARGUMENT naming the `service.properties...` path; unreadable files are IO_ERROR.
 */
export async function openMapService(
  record: ServiceRecord,
  deps: { readonly dataDir: string },
  json: string = JSON.stringify(record),
): Promise<OpenedMapService> {
  const settings = parseMapServiceProperties(record);
  const version = createHash('sha256').update(json).digest('base64url').slice(0, 16);
  const serviceDir = mapServiceDir(deps.dataDir, record.folder, record.serviceName);
  const rasters: OpenedImageService[] = [];
  let store: FeatureStore | undefined;
  const closeAll = async (): Promise<void> => {
    store?.close();
    await Promise.all(rasters.map((r) => r.source.close().catch(() => undefined)));
  };
  try {
    // Raster layers, opened as the image service opens its rasters.
    const rasterOf = new Map<number, OpenedImageService>();
    for (const [i, l] of settings.layers.entries()) {
      if (l.type !== 'raster') continue;
      const image: ServiceRecord = {
        folder: record.folder,
        serviceName: `${record.serviceName}.MapServer.${i}`,
        type: 'ImageServer',
        description: l.description,
        properties: { path: l.path, ...(l.renderingRule === undefined ? {} : { renderingRule: l.renderingRule }) },
        created: record.created,
      };
      try {
        const opened = await openImageService(image, `${json}#${i}`);
        rasters.push(opened);
        rasterOf.set(i, opened);
      } catch (e) {
        if (e instanceof EngineError && e.code === 'INVALID_ARGUMENT') {
          // The image service's checks name `service.properties.<key>`: put them under this layer.
          const path = e.path?.startsWith('service.properties') ? `${l.at}${e.path.slice('service.properties'.length)}` : `${l.at}.path`;
          throw new EngineError('INVALID_ARGUMENT', e.message, { path, details: e.details.length > 0 ? e.details : [e.message] });
        }
        const msg = `The raster of layer '${l.name}' cannot be opened: ${e instanceof Error ? e.message : String(e)}`;
        throw new EngineError('IO_ERROR', msg, { path: `${l.at}.path`, details: [msg] });
      }
    }
    const firstRaster = [...rasterOf.values()][0];
    // Feature layers and tables.
    const sources = tableSourcesOf(settings);
    if (sources.length > 0) {
      store = await openFeatureStore({
        file: join(serviceDir, `${version}.sqlite`),
        attachmentsDir: join(serviceDir, 'attachments', version),
        sources,
        ...(firstRaster?.info.spatialReference ? { spatialReference: firstRaster.info.spatialReference } : {}),
        maxRecordCount: settings.maxRecordCount,
      });
    }
    // Decision: the map's spatial reference is the first raster layer's, else the features' (EPSG:4326 without a crs).
    const sr: SpatialReference = firstRaster?.info.spatialReference ?? store?.spatialReference ?? { wkid: 4326, geographic: true };

    // Extents first: an empty feature layer takes the map's full extent.
    let full: Extent | undefined;
    let finestCell: number | undefined;
    const extents = settings.layers.map((l, id): Extent | undefined => {
      if (l.type === 'feature') {
        const e = store!.tables.get(id)!.extent;
        if (e) full = union(full, e);
        return e;
      }
      const image = rasterOf.get(id)!;
      const rsr = image.info.spatialReference;
      const same = !rsr || sameSpatialReference(rsr, sr);
      if (same) {
        const cell = Math.min(image.info.cellSize.x, image.info.cellSize.y);
        finestCell = finestCell === undefined ? cell : Math.min(finestCell, cell);
      }
      const e = same ? image.info.extent : transformExtent(image.info.extent, rsr, sr);
      full = union(full, e);
      return e;
    });
    const fullExtent = full ?? { xmin: 0, ymin: 0, xmax: 0, ymax: 0 };
    const layers: MapLayer[] = settings.layers.map((l, id): MapLayer => {
      const base = {
        id,
        name: l.name,
        description: l.description,
        copyrightText: l.copyrightText,
        minScale: l.minScale,
        maxScale: l.maxScale,
        defaultVisibility: l.visible,
        // Decision: an empty layer's extent is the map's full extent (clients zoom to something sensible).
        extent: extents[id] ?? fullExtent,
      };
      if (l.type === 'raster') {
        const layer: RasterLayer = {
          kind: 'raster',
          ...base,
          path: l.path,
          ...(l.renderingRule === undefined ? {} : { renderingRule: l.renderingRule }),
          image: rasterOf.get(id)!,
        };
        return layer;
      }
      // Renderer, display field, popups, subtypes: checked against the imported fields.
      const table = store!.tables.get(id)!;
      const renderer = l.renderer ?? defaultRenderer(table.geometryType ?? 'point');
      if (l.renderer) checkLayerRenderer(renderer, table, `${l.at}.renderer`);
      let hyperlinkField: string | undefined;
      if (l.hyperlinkField !== undefined) {
        const f = fieldOf(table, l.hyperlinkField, `${l.at}.hyperlinkField`, 'The hyperlink field');
        if (f.type !== 'geoFieldTypeString')
          throw invalidConfig(`${l.at}.hyperlinkField`, `The hyperlink field '${f.name}' must be a string field holding URLs.`);
        hyperlinkField = f.name;
      }
      const popupTemplate = popupOf(table, l);
      const subtypes = subtypesOf(table, l);
      const layer: FeatureLayer = {
        kind: 'feature',
        ...base,
        table,
        renderer,
        displayField: displayFieldOf(table, l),
        ...(hyperlinkField === undefined ? {} : { hyperlinkField }),
        ...(popupTemplate === undefined ? {} : { popupTemplate }),
        ...(subtypes === undefined ? {} : { subtypes }),
        hasAttachments: l.attachments.length > 0,
      };
      return layer;
    });
    const tables: StandaloneTable[] = settings.tables.map((t, i) => {
      const id = settings.layers.length + i;
      const table = store!.tables.get(id)!;
      const popupTemplate = popupOf(table, t);
      const subtypes = subtypesOf(table, t);
      return {
        kind: 'table',
        id,
        name: t.name,
        description: t.description,
        table,
        displayField: displayFieldOf(table, t),
        ...(popupTemplate === undefined ? {} : { popupTemplate }),
        ...(subtypes === undefined ? {} : { subtypes }),
        hasAttachments: t.attachments.length > 0,
      };
    });
    const relationships: MapRelationship[] = settings.relationships.map((r, id) => {
      const end = (which: 'origin' | 'destination', key: 'originKey' | 'destinationKey'): string => {
        const tid = r[which];
        const table = store?.tables.get(tid);
        if (!table) {
          throw invalidConfig(
            `${r.at}.${which}`,
            `A relationship joins feature layers and tables; '${settings.layers[tid]?.name ?? tid}' is a raster layer.`,
          );
        }
        return fieldOf(table, r[key], `${r.at}.${key}`, `The ${which} key`).name;
      };
      return {
        id,
        name: r.name,
        origin: r.origin,
        destination: r.destination,
        originKey: end('origin', 'originKey'),
        destinationKey: end('destination', 'destinationKey'),
        cardinality: r.cardinality,
      };
    });
    const hasFeatureLayers = settings.layers.some((l) => l.type === 'feature');
    const tiling = tileSchemeOf(settings.tiling, sr, fullExtent, finestCell, join(serviceDir, 'tiles', version), hasFeatureLayers);
    const byId = new Map<number, MapLayer | StandaloneTable>([
      ...layers.map((l) => [l.id, l] as const),
      ...tables.map((t) => [t.id, t] as const),
    ]);
    const opened: OpenedMapService = {
      name: `${record.folder ? `${record.folder}/` : ''}${record.serviceName}`,
      serviceName: record.serviceName,
      folder: record.folder,
      version,
      mapName: settings.mapName,
      description: settings.description,
      copyrightText: settings.copyrightText,
      spatialReference: sr,
      units: unitsOf(sr),
      fullExtent,
      // Decision: the initial extent is the full extent (the vendor's default when publishing).
      initialExtent: fullExtent,
      layers,
      tables,
      relationships,
      bookmarks: settings.bookmarks,
      backgroundColor: settings.backgroundColor,
      maxRecordCount: settings.maxRecordCount,
      maxImageWidth: settings.maxImageWidth,
      maxImageHeight: settings.maxImageHeight,
      tiling,
      byId: (id) => byId.get(id),
      record,
      key: serviceKey(record),
      settings,
      anonymous: settings.anonymous,
      ...(store ? { store } : {}),
      serviceDir,
      close: closeAll,
    };
    return opened;
  } catch (e) {
    await closeAll();
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------
// The per-site registry

export interface MapServices {
  /**
   * The MapServer service `folder/name` opened, or undefined when the store has none. Reopened when
   * its record changed since it was opened. A broken service is an error (retried next call).
   */
  open(folder: string, name: string): Promise<OpenedMapService | undefined>;
  /** Close every opened service (server shutdown). */
  close(): Promise<void>;
}

interface Entry {
  readonly json: string;
  readonly opened: Promise<OpenedMapService>;
}

/** A registry over `deps.store`. Most callers want `mapServicesOf(deps)`, the shared one. */
export function createMapServices(deps: Pick<SiteDeps, 'store' | 'log' | 'config'>): MapServices {
  const cache = new Map<string, Entry>();
  const retire = (entry: Entry): void => {
    // Requests still using the old version hold it; close it a little later so they can finish.
    void entry.opened.then((s) => setTimeout(() => void s.close(), 60_000).unref()).catch(() => undefined);
  };
  return {
    async open(folder, name) {
      const key = serviceKey({ folder, serviceName: name, type: 'MapServer' });
      const record = await deps.store.getService(key);
      const cached = cache.get(key);
      if (!record || record.type !== 'MapServer') {
        if (cached) {
          cache.delete(key);
          retire(cached);
        }
        return undefined;
      }
      const json = JSON.stringify(record);
      if (cached && cached.json === json) return cached.opened;
      if (cached) retire(cached);
      const opened = openMapService(record, { dataDir: deps.config.dataDir }, json);
      const entry: Entry = { json, opened };
      cache.set(key, entry);
      opened.catch((e: unknown) => {
        if (cache.get(key) === entry) cache.delete(key);
        deps.log.warn('map service failed to open', { service: key, error: e instanceof Error ? e.message : String(e) });
      });
      return opened;
    },
    async close() {
      const entries = [...cache.values()];
      cache.clear();
      await Promise.all(entries.map((e) => e.opened.then((s) => s.close()).catch(() => undefined)));
    },
  };
}

const shared = new WeakMap<object, MapServices>();

/** The registry every map operation of a site shares, keyed by the site's store. */
export function mapServicesOf(deps: Pick<SiteDeps, 'store' | 'log' | 'config'>): MapServices {
  let s = shared.get(deps.store);
  if (!s) {
    s = createMapServices(deps);
    shared.set(deps.store, s);
  }
  return s;
}

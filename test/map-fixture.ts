/**
 * The map service test fixture (test/fixtures/map, made by make-fixtures.py): `olinda-map.json`,
 * a MapServer definition whose paths are relative to its folder. Tests store it with the paths made
 * absolute (`olindaMapDefinition()`), so the service opens whatever the working folder.
 *
 * Layers (ids): 0 Spot heights (points), 1 Contours (lines), 2 Elevation classes (polygons with
 * subtypes, domains, attachments and popups), 3 Relief (the Olinda DEM with a Hillshade rule);
 * table 4 Inspections; relationship 0 Elevation classes OBJECTID -> Inspections PARCEL_ID.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withResolvedMapPaths } from '../src/adapters/map/config.js';
import type { ServiceRecord, SiteDeps } from '../src/adapters/site.js';

export const MAP_FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), 'fixtures/map');
export const OLINDA_MAP_JSON = join(MAP_FIXTURES, 'olinda-map.json');

export interface MapDefinition {
  readonly serviceName: string;
  readonly type: 'MapServer';
  readonly description?: string;
  readonly properties: Record<string, unknown>;
}

/** olinda-map.json with absolute paths; `properties` overrides are shallow-merged. */
export function olindaMapDefinition(properties: Record<string, unknown> = {}): MapDefinition {
  const def = JSON.parse(readFileSync(OLINDA_MAP_JSON, 'utf8')) as MapDefinition;
  const resolved = withResolvedMapPaths(def, MAP_FIXTURES);
  return { ...resolved, properties: { ...resolved.properties, ...properties } };
}

/** Stores the fixture map as `[folder/]name` (default `olinda` at the root) and answers its record. */
export async function putOlindaMap(
  site: Pick<SiteDeps, 'store' | 'clock'>,
  options: { folder?: string; serviceName?: string; properties?: Record<string, unknown> } = {},
): Promise<ServiceRecord> {
  const def = olindaMapDefinition(options.properties);
  const record: ServiceRecord = {
    folder: options.folder ?? '',
    serviceName: options.serviceName ?? def.serviceName,
    type: 'MapServer',
    ...(def.description === undefined ? {} : { description: def.description }),
    properties: def.properties,
    created: site.clock.now(),
  };
  await site.store.putService(record);
  return record;
}

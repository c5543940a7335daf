/**
 * Spatial references as clients send them (the image service's `bboxSR` / `imageSR`, the CLI's
 * `--t_srs`): a well-known id as a number or a numeric string, `EPSG:n`, Esri JSON
 * `{wkid, latestWkid}` or `{wkt}` (also as a JSON string), turned into the engine's
 * `SpatialReference` with its proj4 definition, so the warp can transform with proj4.
 */
import { invalidArgument } from './errors.js';
import type { SpatialReference } from './pixel-block.js';
import { parseProj4, proj4ForEpsg, proj4Lib } from './crs.js';

/** Web Mercator's vendor ids (102100 is the one the vendor's clients send, 102113 and 900913 older ones). */
const WEB_MERCATOR_ALIASES = new Set([102100, 102113, 900913, 3857]);

/** The proj4 definition of a well-known id, when known (Web Mercator's aliases included). */
export function proj4ForWkid(wkid: number): string | undefined {
  return proj4ForEpsg(WEB_MERCATOR_ALIASES.has(wkid) ? 3857 : wkid);
}

/** Metres per unit of a proj4 definition (`+units`, `+to_meter`); undefined for angular systems. */
function metersPerUnitOf(def: string): number | undefined {
  const p = parseProj4(def);
  if (p.get('proj') === 'longlat' || p.get('proj') === 'latlong') return undefined;
  const toMeter = Number(p.get('to_meter'));
  if (Number.isFinite(toMeter) && toMeter > 0) return toMeter;
  const units = p.get('units');
  if (units === 'us-ft') return 1200 / 3937;
  if (units === 'ft') return 0.3048;
  return 1;
}

/** The engine's SpatialReference for a wkid with a known proj4 definition, else undefined. */
export function spatialReferenceOfWkid(wkid: number): SpatialReference | undefined {
  const def = proj4ForWkid(wkid);
  if (def === undefined) return undefined;
  const geographic = parseProj4(def).get('proj') === 'longlat';
  const metersPerUnit = metersPerUnitOf(def);
  return { wkid, proj4: def, ...(geographic ? { geographic: true } : {}), ...(metersPerUnit !== undefined ? { metersPerUnit } : {}) };
}

function fromWkt(wkt: string, param: string): SpatialReference {
  let units: unknown;
  let projName: unknown;
  try {
    const p = proj4Lib().Proj(wkt) as unknown as { units?: unknown; projName?: unknown };
    units = p.units;
    projName = p.projName;
  } catch {
    throw invalidArgument(param, `${param}: the WKT could not be read as a spatial reference`);
  }
  const geographic = projName === 'longlat' || units === 'degree' || units === 'degrees';
  return { wkt, ...(geographic ? { geographic: true } : { metersPerUnit: 1 }) };
}

function fromWkid(n: number, param: string): SpatialReference {
  if (!Number.isInteger(n) || n <= 0) throw invalidArgument(param, `${param}: ${n} is not a well-known id (a positive whole number)`);
  const sr = spatialReferenceOfWkid(n);
  if (sr === undefined) throw invalidArgument(param, `${param}: spatial reference ${n} is not supported (no known definition)`);
  return sr;
}

/**
 * An SR from what clients send: an EPSG/wkid number or numeric string, `EPSG:n`, Esri JSON
 * `{wkid | latestWkid | wkt}` (object or JSON text). Errors are INVALID_ARGUMENT at `param`.
 * Decision: of `wkid` and `latestWkid`, the first with a known definition is used and kept as
 * the SR's wkid (so 102100 stays 102100 in answers, as the vendor echoes it).
 */
export function parseSpatialReference(value: unknown, param: string): SpatialReference {
  if (typeof value === 'number') return fromWkid(value, param);
  if (typeof value === 'string') {
    const s = value.trim();
    if (/^\d+$/.test(s)) return fromWkid(Number(s), param);
    const epsg = /^(?:EPSG|ESRI):(\d+)$/i.exec(s);
    if (epsg) return fromWkid(Number(epsg[1]), param);
    if (s.startsWith('{')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(s);
      } catch {
        throw invalidArgument(param, `${param}: not valid JSON`);
      }
      return parseSpatialReference(parsed, param);
    }
    if (/^(PROJCS|GEOGCS|PROJCRS|GEOGCRS|GEODCRS)\[/i.test(s)) return fromWkt(s, param);
    throw invalidArgument(param, `${param}: expected a well-known id, EPSG:n or a spatial reference object, got ${JSON.stringify(value)}`);
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const ids = [o.wkid, o.latestWkid].filter((v) => v !== undefined && v !== null);
    for (const id of ids) {
      const n = typeof id === 'string' && /^\d+$/.test(id.trim()) ? Number(id) : id;
      if (typeof n === 'number' && Number.isInteger(n) && n > 0 && spatialReferenceOfWkid(n) !== undefined) return fromWkid(n, param);
    }
    if (typeof o.wkt === 'string' && o.wkt.trim() !== '') return fromWkt(o.wkt.trim(), param);
    if (ids.length > 0) {
      throw invalidArgument(
        param,
        `${param}: spatial reference ${ids.map((v) => JSON.stringify(v)).join(' / ')} is not supported (no known definition)`,
      );
    }
    throw invalidArgument(param, `${param}: a spatial reference object needs wkid, latestWkid or wkt`);
  }
  throw invalidArgument(param, `${param}: expected a well-known id, EPSG:n or a spatial reference object`);
}

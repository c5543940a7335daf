/**
 * SOAP SpatialReference values <-> the engine's SpatialReference. A SOAP SR names a WKID (or
 * LatestWKID) or carries WKT; answers say ProjectedCoordinateSystem, GeographicCoordinateSystem or
 * UnknownCoordinateSystem (protocols.md §5.6).
 */
import { invalidArgument } from '../../core/errors.js';
import type { SpatialReference } from '../../core/pixel-block.js';
import { epsgOfProj4 } from '../../core/crs.js';
import { parseSpatialReference } from '../../core/spatial-reference.js';
import type { SoapObject, SoapValue } from './operation.js';

const isObj = (v: SoapValue): v is SoapObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date);

/** The engine SR of a SOAP SpatialReference (WKID, else LatestWKID, else WKT). Errors name `path`. */
export function spatialReferenceOfSoap(value: SoapValue, path: string): SpatialReference {
  if (!isObj(value)) throw invalidArgument(path, `${path} must be a SpatialReference`);
  const wkid = typeof value['WKID'] === 'number' && value['WKID'] > 0 ? value['WKID'] : undefined;
  const latest = typeof value['LatestWKID'] === 'number' && value['LatestWKID'] > 0 ? value['LatestWKID'] : undefined;
  const wkt = typeof value['WKT'] === 'string' && value['WKT'].trim() !== '' ? value['WKT'].trim() : undefined;
  if (wkid === undefined && latest === undefined && wkt === undefined) {
    throw invalidArgument(path, `${path}: a spatial reference needs WKID, LatestWKID or WKT`);
  }
  return parseSpatialReference(
    {
      ...(wkid !== undefined ? { wkid } : {}),
      ...(latest !== undefined ? { latestWkid: latest } : {}),
      ...(wkt !== undefined ? { wkt } : {}),
    },
    path,
  );
}

/**
 * A SOAP SpatialReference that names a system, or undefined when the element is absent or names
 * none (an UnknownCoordinateSystem without WKID, LatestWKID or WKT: what a client echoes back from an
 * answer about an unknown system). Decision: such an element means "the map's own".
 */
export function optionalSpatialReference(value: SoapValue, path: string): SpatialReference | undefined {
  if (!isObj(value)) return undefined;
  const names =
    ['WKID', 'LatestWKID'].some((k) => typeof value[k] === 'number' && (value[k] as number) > 0) ||
    (typeof value['WKT'] === 'string' && value['WKT'].trim() !== '');
  return names ? spatialReferenceOfSoap(value, path) : undefined;
}

/** Web Mercator's vendor ids answer LatestWKID 3857. */
const LATEST: Readonly<Record<number, number>> = { 102100: 3857, 102113: 3857, 900913: 3857 };

/** The SOAP SpatialReference of an engine SR, with its concrete `$type`. */
export function soapSpatialReference(given: SpatialReference): SoapObject {
  // A system read from a file as a proj4 definition only is named by the EPSG code it equals, when one does.
  const code = given.wkid === undefined && given.wkt === undefined && given.proj4 !== undefined ? epsgOfProj4(given.proj4) : undefined;
  const sr = code === undefined ? given : { ...given, wkid: code };
  const $type = sr.geographic
    ? 'GeographicCoordinateSystem'
    : sr.wkid !== undefined || sr.wkt !== undefined || sr.proj4 !== undefined
      ? 'ProjectedCoordinateSystem'
      : 'UnknownCoordinateSystem';
  return {
    $type,
    ...(sr.wkt !== undefined && sr.wkid === undefined ? { WKT: sr.wkt } : {}),
    ...(sr.wkid !== undefined ? { WKID: sr.wkid, LatestWKID: LATEST[sr.wkid] ?? sr.wkid } : {}),
  };
}

/**
 * GeoTIFF GeoKeys <-> `SpatialReference`, both directions, plus proj4 strings for the EPSG codes
 * the engine meets most (WGS 84 / NAD83 / ETRS89 / SIRGAS 2000 UTM zones, 4326, 4269, 3857).
 *
 * Reading: `wkid` from ProjectedCSTypeGeoKey / GeographicTypeGeoKey (32767 = user-defined, no
 * wkid), `geographic` for GTModelType 2, `metersPerUnit` from ProjLinearUnitsGeoKey, and a proj4
 * string from the EPSG table or, for user-defined systems, from the keys (UTM via ProjectionGeoKey,
 * Transverse Mercator via ProjCoordTransGeoKey; ellipsoid, datum and TOWGS84 from the Geog* keys).
 * Writing: the same keys back, from `wkid` or, failing that, from a UTM / longlat proj4 string, so
 * a user-defined UTM system (olinda_dem_utm25s.tif) survives a round trip. GeoTIFF 1.1 key ids
 * (OGC 19-008r4, section 7). Strings match what GDAL 3.6 `OSRExportToProj4` prints.
 */
import type { SpatialReference } from '../core/pixel-block.js';
import { DATUM_BY_GCS, parseProj4, proj4ForEpsg } from '../core/crs.js';

export { parseProj4, proj4ForEpsg };

/** GeoKey values as geotiff.js parses them: numbers, number arrays or strings, keyed by name. */
export type GeoKeyValues = Readonly<Record<string, unknown>>;

/** One key to write: SHORT values go inline, DOUBLE and ASCII values into their params tags. */
export type GeoKeyEntry =
  | { readonly id: number; readonly kind: 'short'; readonly value: number }
  | { readonly id: number; readonly kind: 'double'; readonly value: readonly number[] }
  | { readonly id: number; readonly kind: 'ascii'; readonly value: string };

export const GEOKEY = {
  GTModelType: 1024,
  GTRasterType: 1025,
  GTCitation: 1026,
  GeographicType: 2048,
  GeogGeodeticDatum: 2050,
  GeogAngularUnits: 2054,
  GeogEllipsoid: 2056,
  GeogSemiMajorAxis: 2057,
  GeogInvFlattening: 2059,
  GeogTOWGS84: 2062,
  ProjectedCSType: 3072,
  Projection: 3074,
  ProjLinearUnits: 3076,
  ProjLinearUnitSize: 3077,
} as const;

const USER_DEFINED = 32767;
const US_FOOT = 1200 / 3937;
const WGS84_AXES = { a: 6378137, rf: 298.257223563 };
const GRS80_AXES = { a: 6378137, rf: 298.257222101 };

/** EPSG linear unit codes (ProjLinearUnitsGeoKey) to metres per unit. */
const LINEAR_UNITS: Readonly<Record<number, number>> = { 9001: 1, 9002: 0.3048, 9003: US_FOOT, 9036: 1000 };

/** Ellipsoid codes (GeogEllipsoidGeoKey) and their proj4 names. */
const ELLIPSOIDS: Readonly<Record<number, string>> = { 7030: 'WGS84', 7019: 'GRS80', 7008: 'clrk66', 7004: 'bessel', 7022: 'intl' };

const DATUM_BY_DATUM: Readonly<Record<number, string>> = { 6326: '+datum=WGS84', 6269: '+datum=NAD83' };

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const nums = (v: unknown): number[] | undefined =>
  typeof v === 'number' ? [v] : ArrayBuffer.isView(v) || Array.isArray(v) ? Array.from(v as ArrayLike<number>) : undefined;
const knownCode = (c: number | undefined): c is number => c !== undefined && c > 0 && c < USER_DEFINED;

// ---- Reading

/** Spatial reference from parsed GeoKeys; undefined when the keys describe none (or geocentric). */
export function spatialReferenceFromGeoKeys(k: GeoKeyValues | null | undefined): SpatialReference | undefined {
  if (!k) return undefined;
  const model = num(k['GTModelTypeGeoKey']);
  const pcs = num(k['ProjectedCSTypeGeoKey']);
  const gcs = num(k['GeographicTypeGeoKey']);
  if (model === 2 || (model === undefined && pcs === undefined && gcs !== undefined)) {
    const datum = datumPart(k);
    return {
      ...(knownCode(gcs) ? { wkid: gcs } : {}),
      ...(datum ? { proj4: `+proj=longlat ${datum} +no_defs` } : {}),
      geographic: true,
    };
  }
  if (model !== 1 && pcs === undefined) return undefined;
  const unitCode = num(k['ProjLinearUnitsGeoKey']);
  // ASSUMPTION (spec silent): a projected system without ProjLinearUnitsGeoKey is in metres,
  // unless its proj4 definition says otherwise.
  let metersPerUnit =
    unitCode === USER_DEFINED ? num(k['ProjLinearUnitSizeGeoKey']) : unitCode !== undefined ? LINEAR_UNITS[unitCode] : undefined;
  const def = knownCode(pcs) ? proj4ForEpsg(pcs) : userProjectedProj4(k, metersPerUnit ?? 1);
  metersPerUnit ??= (def === undefined ? undefined : unitsOfProj4(def)) ?? 1;
  return { ...(knownCode(pcs) ? { wkid: pcs } : {}), ...(def ? { proj4: def } : {}), metersPerUnit };
}

/** `+datum=…` or `+ellps=…/+a= +rf=` plus `+towgs84=…` from the Geog* keys. */
function datumPart(k: GeoKeyValues): string | undefined {
  const gcs = num(k['GeographicTypeGeoKey']);
  if (knownCode(gcs)) return DATUM_BY_GCS[gcs];
  const datumCode = num(k['GeogGeodeticDatumGeoKey']);
  if (knownCode(datumCode) && DATUM_BY_DATUM[datumCode]) return DATUM_BY_DATUM[datumCode];
  let ellps: string | undefined;
  const ellCode = num(k['GeogEllipsoidGeoKey']);
  if (knownCode(ellCode)) {
    const name = ELLIPSOIDS[ellCode];
    if (name) ellps = `+ellps=${name}`;
  } else {
    const a = num(k['GeogSemiMajorAxisGeoKey']);
    const rf = num(k['GeogInvFlatteningGeoKey']);
    const b = num(k['GeogSemiMinorAxisGeoKey']);
    if (a !== undefined && rf !== undefined) {
      ellps =
        a === WGS84_AXES.a && rf === WGS84_AXES.rf
          ? '+ellps=WGS84'
          : a === GRS80_AXES.a && rf === GRS80_AXES.rf
            ? '+ellps=GRS80'
            : `+a=${a} +rf=${rf}`;
    } else if (a !== undefined && b !== undefined) {
      ellps = `+a=${a} +b=${b}`;
    }
  }
  if (!ellps) return undefined;
  const towgs = nums(k['GeogTOWGS84GeoKey']);
  if (towgs && (towgs.length === 3 || towgs.length === 7)) {
    const seven = towgs.length === 3 ? [...towgs, 0, 0, 0, 0] : towgs;
    return `${ellps} +towgs84=${seven.join(',')}`;
  }
  return ellps;
}

/** proj4 for a user-defined projected system: UTM (ProjectionGeoKey) or Transverse Mercator. */
function userProjectedProj4(k: GeoKeyValues, metersPerUnit: number): string | undefined {
  const datum = datumPart(k);
  if (!datum) return undefined;
  const units = unitsToken(metersPerUnit);
  const projection = num(k['ProjectionGeoKey']);
  if (projection !== undefined && projection >= 16001 && projection <= 16060) {
    return `+proj=utm +zone=${projection - 16000} ${datum} ${units} +no_defs`;
  }
  if (projection !== undefined && projection >= 16101 && projection <= 16160) {
    return `+proj=utm +zone=${projection - 16100} +south ${datum} ${units} +no_defs`;
  }
  if (num(k['ProjCoordTransGeoKey']) === 1) {
    // Transverse Mercator; angles in degrees (GeogAngularUnits 9102 assumed), false origin in
    // the linear unit, which proj4 wants in metres.
    const lat0 = num(k['ProjNatOriginLatGeoKey']) ?? 0;
    const lon0 = num(k['ProjNatOriginLongGeoKey']) ?? 0;
    const scale = num(k['ProjScaleAtNatOriginGeoKey']) ?? 1;
    const x0 = (num(k['ProjFalseEastingGeoKey']) ?? 0) * metersPerUnit;
    const y0 = (num(k['ProjFalseNorthingGeoKey']) ?? 0) * metersPerUnit;
    return `+proj=tmerc +lat_0=${lat0} +lon_0=${lon0} +k=${scale} +x_0=${x0} +y_0=${y0} ${datum} ${units} +no_defs`;
  }
  return undefined;
}

function unitsToken(metersPerUnit: number): string {
  if (metersPerUnit === 1) return '+units=m';
  if (metersPerUnit === 0.3048) return '+units=ft';
  if (metersPerUnit === US_FOOT) return '+units=us-ft';
  return `+to_meter=${metersPerUnit}`;
}

/** Metres per unit of a proj4 definition (`+units=` / `+to_meter=`), if it says. */
export function unitsOfProj4(def: string): number | undefined {
  const p = parseProj4(def);
  const toMeter = Number(p.get('to_meter'));
  if (Number.isFinite(toMeter) && toMeter > 0) return toMeter;
  const u = p.get('units');
  return u === 'm' ? 1 : u === 'ft' ? 0.3048 : u === 'us-ft' ? US_FOOT : u === 'km' ? 1000 : undefined;
}

// ---- Writing

/** Vendor ids that are EPSG codes under another name (Esri Web Mercator). */
const WKID_ALIASES: Readonly<Record<number, number>> = { 102100: 3857, 102113: 3857, 900913: 3857 };

/**
 * GeoKeys describing `sr` (GTRasterType is always PixelIsArea). Known wkids are written as EPSG
 * codes; otherwise a UTM or longlat proj4 string becomes user-defined keys the way GDAL writes
 * them. Anything else gets no CRS keys (GDAL then reports no coordinate system).
 */
export function geoKeysFromSpatialReference(sr: SpatialReference | undefined): GeoKeyEntry[] {
  const keys: GeoKeyEntry[] = [{ id: GEOKEY.GTRasterType, kind: 'short', value: 1 }];
  const wkid = sr?.wkid === undefined ? undefined : (WKID_ALIASES[sr.wkid] ?? sr.wkid);
  if (sr && knownCode(wkid)) {
    // ASSUMPTION (spec silent): without `geographic`, EPSG codes 4000-4999 are geographic systems.
    const geographic = sr.geographic ?? (wkid >= 4000 && wkid < 5000);
    if (geographic) {
      keys.push(
        { id: GEOKEY.GTModelType, kind: 'short', value: 2 },
        { id: GEOKEY.GeographicType, kind: 'short', value: wkid },
        { id: GEOKEY.GeogAngularUnits, kind: 'short', value: 9102 },
      );
    } else {
      keys.push({ id: GEOKEY.GTModelType, kind: 'short', value: 1 }, { id: GEOKEY.ProjectedCSType, kind: 'short', value: wkid });
      if (sr.metersPerUnit !== undefined) keys.push(...linearUnitKeys(sr.metersPerUnit));
    }
    return sort(keys);
  }
  if (sr?.proj4) keys.push(...keysFromProj4(sr.proj4, sr.metersPerUnit));
  return sort(keys);
}

const sort = (keys: GeoKeyEntry[]): GeoKeyEntry[] => keys.sort((a, b) => a.id - b.id);

function linearUnitKeys(metersPerUnit: number): GeoKeyEntry[] {
  const code = Object.entries(LINEAR_UNITS).find(([, m]) => m === metersPerUnit)?.[0];
  if (code !== undefined) return [{ id: GEOKEY.ProjLinearUnits, kind: 'short', value: Number(code) }];
  return [
    { id: GEOKEY.ProjLinearUnits, kind: 'short', value: USER_DEFINED },
    { id: GEOKEY.ProjLinearUnitSize, kind: 'double', value: [metersPerUnit] },
  ];
}

function keysFromProj4(def: string, metersPerUnit: number | undefined): GeoKeyEntry[] {
  const p = parseProj4(def);
  const proj = p.get('proj');
  const geog = geographicKeysFromProj4(p);
  if (!geog) return [];
  if (proj === 'longlat' || proj === 'latlong') {
    return [{ id: GEOKEY.GTModelType, kind: 'short', value: 2 }, ...geog.keys];
  }
  const zone = Number(p.get('zone'));
  if (proj !== 'utm' || !Number.isInteger(zone) || zone < 1 || zone > 60) return [];
  const south = p.has('south');
  if (geog.gcs === 4326) {
    return [
      { id: GEOKEY.GTModelType, kind: 'short', value: 1 },
      { id: GEOKEY.ProjectedCSType, kind: 'short', value: (south ? 32700 : 32600) + zone },
      { id: GEOKEY.ProjLinearUnits, kind: 'short', value: 9001 },
    ];
  }
  return [
    { id: GEOKEY.GTModelType, kind: 'short', value: 1 },
    ...geog.keys,
    { id: GEOKEY.ProjectedCSType, kind: 'short', value: USER_DEFINED },
    { id: GEOKEY.Projection, kind: 'short', value: (south ? 16100 : 16000) + zone },
    ...linearUnitKeys(metersPerUnit ?? unitsOfProj4(def) ?? 1),
  ];
}

/** Geog* keys from `+datum` / `+ellps` / `+a +rf` / `+towgs84`; `gcs` set when it is an EPSG system. */
function geographicKeysFromProj4(p: Map<string, string>): { keys: GeoKeyEntry[]; gcs?: number } | undefined {
  const datum = p.get('datum');
  const towgs = p.get('towgs84')?.split(',').map(Number);
  const zeroShift = towgs === undefined || towgs.every((v) => v === 0);
  const gcsOf = (code: number) => ({
    gcs: code,
    keys: [
      { id: GEOKEY.GeographicType, kind: 'short', value: code },
      { id: GEOKEY.GeogAngularUnits, kind: 'short', value: 9102 },
    ] as GeoKeyEntry[],
  });
  if (datum === 'WGS84' || (p.get('ellps') === 'WGS84' && zeroShift && !datum)) return gcsOf(4326);
  if (datum === 'NAD83') return gcsOf(4269);
  if (datum !== undefined) return undefined;
  const ellps = p.get('ellps');
  const ellCode = ellps === undefined ? undefined : Number(Object.entries(ELLIPSOIDS).find(([, n]) => n === ellps)?.[0]);
  const keys: GeoKeyEntry[] = [
    { id: GEOKEY.GeographicType, kind: 'short', value: USER_DEFINED },
    { id: GEOKEY.GeogGeodeticDatum, kind: 'short', value: USER_DEFINED },
    { id: GEOKEY.GeogAngularUnits, kind: 'short', value: 9102 },
  ];
  if (ellCode !== undefined && knownCode(ellCode)) {
    keys.push({ id: GEOKEY.GeogEllipsoid, kind: 'short', value: ellCode });
  } else {
    const a = Number(p.get('a'));
    const rf = Number(p.get('rf'));
    if (!Number.isFinite(a) || !Number.isFinite(rf)) return undefined;
    keys.push(
      { id: GEOKEY.GeogEllipsoid, kind: 'short', value: USER_DEFINED },
      { id: GEOKEY.GeogSemiMajorAxis, kind: 'double', value: [a] },
      { id: GEOKEY.GeogInvFlattening, kind: 'double', value: [rf] },
    );
  }
  if (towgs && (towgs.length === 3 || towgs.length === 7) && towgs.every(Number.isFinite)) {
    keys.push({ id: GEOKEY.GeogTOWGS84, kind: 'double', value: towgs });
  }
  return { keys };
}

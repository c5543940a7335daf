/**
 * proj4 definitions for the EPSG codes the engine meets most (WGS 84 / NAD83 / ETRS89 / SIRGAS 2000
 * UTM zones, 4326, 4269, 3857 and whatever an embedder registered with proj4.defs), and proj4
 * string parsing. In core because both the io layer (GeoKeys) and the graph layer (alignment
 * nodes that reproject) need them. Strings match what GDAL 3.6 `OSRExportToProj4` prints.
 */
import { createRequire } from 'node:module';
import type proj4Type from 'proj4';

let proj4Module: typeof proj4Type | undefined;
/**
 * proj4, loaded on first use: most requests never reproject, and loading it costs about a tenth of
 * a second of every CLI start (its CommonJS build, through `require`, so callers stay synchronous).
 */
export function proj4Lib(): typeof proj4Type {
  return (proj4Module ??= createRequire(import.meta.url)('proj4') as typeof proj4Type);
}

export const GRS80_TOWGS84 = '+ellps=GRS80 +towgs84=0,0,0,0,0,0,0';

/** Datum part of proj4 strings, by geographic CRS code or geodetic datum code. */
export const DATUM_BY_GCS: Readonly<Record<number, string>> = {
  4326: '+datum=WGS84',
  4269: '+datum=NAD83',
  4258: GRS80_TOWGS84, // ETRS89
  4283: GRS80_TOWGS84, // GDA94
  4674: GRS80_TOWGS84, // SIRGAS 2000
};

/** The datum part (`+datum=…` or `+ellps=… [+towgs84=…]`) of a proj4 string for an EPSG geographic code. */
function datumOfGcs(gcs: number): string | undefined {
  return DATUM_BY_GCS[gcs];
}

/** proj4 definition for an EPSG code when known: the table here, then whatever proj4 has registered. */
export function proj4ForEpsg(code: number): string | undefined {
  const utm = utmOfEpsg(code);
  if (utm) return `+proj=utm +zone=${utm.zone}${utm.south ? ' +south' : ''} ${utm.datum} +units=m +no_defs`;
  const datum = datumOfGcs(code);
  if (datum) return `+proj=longlat ${datum} +no_defs`;
  if (code === 3857) {
    return '+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs';
  }
  // ASSUMPTION (spec silent): definitions an embedder registered with proj4.defs() count as "known".
  const def = proj4Lib().defs(`EPSG:${code}`) as { projStr?: unknown } | undefined;
  return typeof def?.projStr === 'string' ? def.projStr : undefined;
}

export interface Utm {
  readonly zone: number;
  readonly south: boolean;
  readonly datum: string;
}

/**
 * The EPSG code whose definition (as `proj4ForEpsg` writes it) is `def`, among the codes this table
 * defines (UTM zones, WGS 84, NAD83, Web Mercator), or undefined. Decision: a definition shared by
 * several codes (the GRS80 geographic systems ETRS89, GDA94 and SIRGAS 2000) names none of them.
 */
export function epsgOfProj4(def: string): number | undefined {
  const norm = (d: string): string =>
    [...parseProj4(d).entries()]
      .map(([k, v]) => `${k}=${v}`)
      .sort()
      .join(' ');
  const want = norm(def);
  const p = parseProj4(def);
  const candidates: number[] = [4326, 4269, 4258, 4283, 4674, 3857];
  if (p.get('proj') === 'utm') {
    const zone = Number(p.get('zone'));
    const south = p.has('south');
    for (const base of south ? [32700, 31960] : [32600, 26900, 25800, 31954]) candidates.push(base + zone);
  }
  const hits = candidates.filter((c) => {
    const d = proj4ForEpsg(c);
    return d !== undefined && utmOrSame(c, d) && norm(d) === want;
  });
  return hits.length === 1 ? hits[0] : undefined;
}

/** A candidate's definition is only compared when the code is one the table really defines. */
const utmOrSame = (code: number, def: string): boolean => utmOfEpsg(code) !== undefined || !def.includes('+proj=utm');

/** UTM zone systems on WGS 84, NAD83, ETRS89 and SIRGAS 2000 (EPSG ranges). */
export function utmOfEpsg(c: number): Utm | undefined {
  if (c >= 32601 && c <= 32660) return { zone: c - 32600, south: false, datum: '+datum=WGS84' };
  if (c >= 32701 && c <= 32760) return { zone: c - 32700, south: true, datum: '+datum=WGS84' };
  if (c >= 26901 && c <= 26923) return { zone: c - 26900, south: false, datum: '+datum=NAD83' };
  if (c >= 25828 && c <= 25838) return { zone: c - 25800, south: false, datum: GRS80_TOWGS84 };
  if (c >= 31965 && c <= 31976) return { zone: c - 31954, south: false, datum: GRS80_TOWGS84 };
  if (c >= 31977 && c <= 31985) return { zone: c - 31960, south: true, datum: GRS80_TOWGS84 };
  return undefined;
}

/** `+key=value +flag` tokens of a proj4 string (flags map to ''). */
export function parseProj4(def: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const token of def.trim().split(/\s+/)) {
    if (!token.startsWith('+')) continue;
    const eq = token.indexOf('=');
    if (eq < 0) out.set(token.slice(1), '');
    else out.set(token.slice(1, eq), token.slice(eq + 1));
  }
  return out;
}

/**
 * GDAL's private TIFF tags: GDAL_METADATA (42112, an XML list of `<Item name sample role>` values)
 * and GDAL_NODATA (42113, the NoData value as ASCII). Band statistics travel as the
 * STATISTICS_MINIMUM/MAXIMUM/MEAN/STDDEV items GDAL itself writes, band names as DESCRIPTION
 * items with role="description" (how GDAL stores `SetDescription` in a GeoTIFF).
 */
import type { BandStatistics } from '../core/pixel-block.js';

export interface GdalMetadata {
  /** Dataset-level items (no `sample` attribute). */
  readonly dataset: ReadonlyMap<string, string>;
  /** Items per 0-based sample (band). */
  readonly bands: ReadonlyMap<number, ReadonlyMap<string, string>>;
}

const ITEM = /<Item\b([^>]*)>([\s\S]*?)<\/Item>/g;
const ATTR = /(\w+)\s*=\s*"([^"]*)"/g;

/** Parse a GDAL_METADATA XML string (lenient: unknown markup is ignored). */
export function parseGdalMetadata(xml: string): GdalMetadata {
  const dataset = new Map<string, string>();
  const bands = new Map<number, Map<string, string>>();
  for (const m of xml.matchAll(ITEM)) {
    const attrs = new Map<string, string>();
    for (const a of (m[1] ?? '').matchAll(ATTR)) attrs.set(a[1]!, unescapeXml(a[2]!));
    const name = attrs.get('name');
    if (name === undefined) continue;
    const value = unescapeXml(m[2] ?? '');
    const sample = attrs.get('sample');
    // A role="description" item is the band description whatever its name says.
    const key = attrs.get('role') === 'description' ? 'DESCRIPTION' : name;
    if (sample === undefined) {
      dataset.set(key, value);
    } else {
      const s = Number(sample);
      if (!Number.isInteger(s) || s < 0) continue;
      let band = bands.get(s);
      if (!band) bands.set(s, (band = new Map<string, string>()));
      band.set(key, value);
    }
  }
  return { dataset, bands };
}

/** Per-band statistics when every band has at least a minimum and a maximum. */
export function statisticsOf(md: GdalMetadata, bandCount: number): BandStatistics[] | undefined {
  const out: BandStatistics[] = [];
  for (let b = 0; b < bandCount; b++) {
    const items = md.bands.get(b);
    const min = Number(items?.get('STATISTICS_MINIMUM'));
    const max = Number(items?.get('STATISTICS_MAXIMUM'));
    if (!items?.has('STATISTICS_MINIMUM') || !items.has('STATISTICS_MAXIMUM') || Number.isNaN(min) || Number.isNaN(max)) {
      return undefined;
    }
    const mean = items.has('STATISTICS_MEAN') ? Number(items.get('STATISTICS_MEAN')) : Number.NaN;
    const stdDev = items.has('STATISTICS_STDDEV') ? Number(items.get('STATISTICS_STDDEV')) : Number.NaN;
    out.push({ min, max, ...(Number.isNaN(mean) ? {} : { mean }), ...(Number.isNaN(stdDev) ? {} : { stdDev }) });
  }
  return out;
}

/**
 * Band names from DESCRIPTION items; undefined when no band has one.
 * ASSUMPTION (spec silent): bands without a description are named `Band_<n>` (1-based), like the
 * vendor's default band names.
 */
export function bandNamesOf(md: GdalMetadata, bandCount: number): string[] | undefined {
  let any = false;
  const names: string[] = [];
  for (let b = 0; b < bandCount; b++) {
    const d = md.bands.get(b)?.get('DESCRIPTION');
    if (d !== undefined && d !== '') any = true;
    names.push(d !== undefined && d !== '' ? d : `Band_${b + 1}`);
  }
  return any ? names : undefined;
}

/**
 * GDAL_METADATA XML for band statistics and names; undefined when there is nothing to say. The
 * statistics must be those of the pixels written (pixel-statistics.ts), never advertised ranges;
 * a band without an entry gets no STATISTICS_* items. Items in GDAL's order (alphabetical).
 */
export function gdalMetadataXml(
  statistics: readonly ((BandStatistics & { readonly validPercent?: number }) | undefined)[] | undefined,
  bandNames: readonly string[] | undefined,
  bandCount: number,
): string | undefined {
  const items: string[] = [];
  for (let b = 0; b < bandCount; b++) {
    const s = statistics?.[b];
    if (s) {
      const stat = (name: string, v: number | undefined) => {
        if (v !== undefined && Number.isFinite(v)) items.push(`  <Item name="STATISTICS_${name}" sample="${b}">${v}</Item>`);
      };
      stat('MAXIMUM', s.max);
      stat('MEAN', s.mean);
      stat('MINIMUM', s.min);
      stat('STDDEV', s.stdDev);
      stat('VALID_PERCENT', s.validPercent);
    }
    const name = bandNames?.[b];
    if (name !== undefined && name !== '') {
      items.push(`  <Item name="DESCRIPTION" sample="${b}" role="description">${escapeXml(name)}</Item>`);
    }
  }
  return items.length === 0 ? undefined : `<GDALMetadata>\n${items.join('\n')}\n</GDALMetadata>\n`;
}

/** NoData from the GDAL_NODATA text (`nan`, `inf`, `-inf` or a number); undefined when unreadable. */
export function parseNoData(text: string | undefined | null): number | undefined {
  if (text === undefined || text === null) return undefined;
  const s = text.replace(/\0/g, '').trim().toLowerCase();
  if (s === '') return undefined;
  if (s === 'nan' || s === '-nan') return Number.NaN;
  if (s === 'inf' || s === '+inf' || s === 'infinity') return Number.POSITIVE_INFINITY;
  if (s === '-inf' || s === '-infinity') return Number.NEGATIVE_INFINITY;
  const v = Number(s);
  return Number.isNaN(v) ? undefined : v;
}

/** GDAL_NODATA text for a value (GDAL spells NaN and infinities `nan`, `inf`, `-inf`). */
export function formatNoData(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Number.POSITIVE_INFINITY) return 'inf';
  if (v === Number.NEGATIVE_INFINITY) return '-inf';
  return String(v);
}

const escapeXml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|lt|gt|amp|quot|apos);/gi, (_, e: string) => {
    const l = e.toLowerCase();
    if (l === 'lt') return '<';
    if (l === 'gt') return '>';
    if (l === 'amp') return '&';
    if (l === 'quot') return '"';
    if (l === 'apos') return "'";
    return String.fromCodePoint(l.startsWith('#x') ? parseInt(l.slice(2), 16) : parseInt(l.slice(1), 10));
  });
}

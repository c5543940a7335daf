/**
 * Multidimensional sources: three ways to read a raster with variables and dimensions
 * (core/multidim.ts explains the model: slices are bands, `RasterInfo.multidimensional` says which).
 *
 * (a) A JSON manifest (`*.json`) listing GeoTIFF slices:
 *     { "variables": [ { "name": "ndvi", "description": "...",
 *         "dimensions": ["StdTime"]            // or [{ "name": "StdZ", "unit": "m" }]
 *         "slices": [ { "dimensions": { "StdTime": "2001-01-15" }, "path": "ndvi-2001-01.tif" }, ... ] } ] }
 *     Paths are relative to the manifest; a slice may take some bands of its file (`"bands": [0, 1]`,
 *     0-based), so one multi-band file can hold several slices. Every slice must have the grid of the first
 *     slice's) and, within a variable, the same band count. A dimension is a time dimension when
 *     its name is StdTime/time/date/t or its `unit` is `ISO8601`; time values are ISO 8601 text.
 * (b) A multi-band GeoTIFF whose GDAL band metadata names each band's dimension values, as
 *     `gdal_translate` writes it from a netCDF file: per band `NETCDF_VARNAME` (the variable) and
 *     `NETCDF_DIM_<dim>` (the value), with the dataset items `<dim>#units` (CF units:
 *     `days since 1970-01-01`, `hours since ...`, `seconds since ...` make <dim> a time
 *     dimension) and `NETCDF_DIM_EXTRA` (the dimension order). Also accepted, per band: `StdTime`
 *     (ISO 8601 text) and `VARIABLE` (or `VariableName`). Consecutive bands with the same variable
 *     and dimension values form one slice (a 6-band Landsat date; a netCDF `band` dimension,
 *     which varies fastest, gives such runs). Only local files are checked for
 *     these keys (a URL opens as a plain GeoTIFF).
 * (c) A Zarr store (v2 or v3; a local directory, `*.zarr` or a directory holding `.zgroup`,
 *     `.zattrs` or `zarr.json`), read with zarrita (the maintained Zarr library for JavaScript).
 *     Variables are the arrays of the root group whose last two dimensions are y/x (`y`/`x`,
 *     `lat`/`lon`, `latitude`/`longitude`, `northing`/`easting`), dimension names from
 *     `_ARRAY_DIMENSIONS` (v2, xarray and GDAL write it) or `dimension_names` (v3). Coordinates
 *     come from the 1-D arrays named like the dimensions: x/y give the grid (pixel centres,
 *     regular spacing; y ascending rows are flipped to north-up), a coordinate with CF time
 *     `units` makes its dimension a time dimension. A dimension named `band`/`bands` is the band
 *     axis of a slice. The spatial reference comes from the `_CRS` attribute (GDAL: `wkt` /
 *     `url`), or a grid-mapping variable's `crs_wkt`/`spatial_ref`, or an `EPSG:n` `crs`
 *     attribute; only the EPSG code and geographic/projected kind are taken from a WKT.
 *     NoData: `_FillValue` or the array's `fill_value`.
 *
 * Per-slice NoData (core/multidim.ts): the mask is 1 where any slice is valid; missing slice
 * pixels hold NoData (integer rasters with a common NoData value) or NaN (pixel type promoted to
 * F32, or F64 for 32-bit integers). Errors: IO_ERROR at `input` for unreadable files and
 * malformed manifests (in a Zarr store: any node, coordinate array or grid mapping that is there
 * but cannot be read; only an absent one counts as absent), UNSUPPORTED_INPUT at `input` for what
 * the model cannot hold. A spatial reference declared in a form that cannot be read, or through a
 * grid-mapping variable that is missing, is a warning (`OpenOptions.onWarning`): the raster opens
 * without one.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type * as Zarrita from 'zarrita';
import type FileSystemStore from '@zarrita/storage/fs';
import { EngineError } from '../core/errors.js';
import {
  isTimeDimensionName,
  layoutBandNames,
  parseDimensionValue,
  type MultidimDimension,
  type MultidimSlice,
  type MultidimVariable,
  type Multidimensional,
} from '../core/multidim.js';
import { sameGrid, type PixelBlock, type RasterInfo, type SpatialReference } from '../core/pixel-block.js';
import { allocatePlane, PIXEL_TYPE_INFO, promote, type PixelType, type Plane } from '../core/pixel-type.js';
import { intersect, type Rect } from '../core/rect.js';
import type { GdalMetadata } from './gdal-metadata.js';
import { openGeoTiff, readDownsampledFrom, type GeoTiffSource, type OpenOptions } from './geotiff-source.js';
import type { SourceNode } from '../graph/types.js';
import { proj4ForEpsg, unitsOfProj4 } from './srs.js';

const INPUT = 'input';
const ioError = (message: string, cause?: unknown): EngineError =>
  new EngineError('IO_ERROR', message, { path: INPUT, ...(cause === undefined ? {} : { cause }) });
const unsupported = (location: string, what: string): EngineError =>
  new EngineError('UNSUPPORTED_INPUT', `${location}: ${what}`, { path: INPUT });

/** Whether `location` is a Zarr store (a local directory). */
export async function isZarrStore(location: string): Promise<boolean> {
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(location)) return false;
  try {
    return (await stat(location)).isDirectory();
  } catch {
    return /\.zarr\/?$/i.test(location);
  }
}

// ---- Pixel type and missing values

/** The pixel type and NoData a multidimensional raster made of parts gets (see header). */
function storage(
  types: readonly PixelType[],
  noData: readonly (number | undefined)[],
  needsNoData: boolean,
): { pixelType: PixelType; noData?: number } {
  const t = promote(types);
  if (PIXEL_TYPE_INFO[t].complex)
    throw new EngineError('UNSUPPORTED_INPUT', 'complex multidimensional rasters are not supported', { path: INPUT });
  const nd0 = noData[0];
  const common = nd0 !== undefined && noData.every((v) => v === nd0 || (v !== v && nd0 !== nd0));
  if (!PIXEL_TYPE_INFO[t].integer) return { pixelType: t, noData: common ? nd0 : Number.NaN };
  if (common) return { pixelType: t, noData: nd0 };
  if (!needsNoData) return { pixelType: t };
  return { pixelType: t === 'U32' || t === 'S32' ? 'F64' : 'F32', noData: Number.NaN };
}

/** Write `src` (window `win` of a part, missing where `valid[i]` is 0) into `dst` over rect r. */
function place(
  dst: Plane,
  src: ArrayLike<number>,
  valid: ArrayLike<number> | undefined,
  win: Rect,
  r: Rect,
  fill: number,
  flipRows = false,
): void {
  for (let y = 0; y < win.height; y++) {
    const sy = flipRows ? win.height - 1 - y : y;
    const s = sy * win.width;
    const d = (win.y - r.y + y) * r.width + (win.x - r.x);
    for (let x = 0; x < win.width; x++) dst[d + x] = valid !== undefined && valid[s + x] === 0 ? fill : src[s + x]!;
  }
}

function emptyBlock(r: Rect, pixelType: PixelType, bandCount: number, fill: number): PixelBlock {
  const n = r.width * r.height;
  const bands: Plane[] = [];
  for (let b = 0; b < bandCount; b++) {
    const p = allocatePlane(pixelType, n);
    if (fill !== 0) p.fill(fill);
    bands.push(p);
  }
  return { rect: r, pixelType, bands, mask: new Uint8Array(n) };
}

/** Mask 1 where any band holds a value that is not missing (inside the raster window). */
function anyValid(block: PixelBlock, win: Rect, noData: number | undefined): void {
  const { rect: r, mask } = block;
  for (let y = 0; y < win.height; y++) {
    const row = (win.y - r.y + y) * r.width + (win.x - r.x);
    for (const p of block.bands) {
      for (let i = row; i < row + win.width; i++) {
        const v = p[i]!;
        if (v === v && v !== noData) mask[i] = 1;
      }
    }
  }
}

// ---- (a) JSON manifest

interface ManifestSlice {
  readonly dimensions?: Record<string, unknown>;
  readonly path?: unknown;
  readonly bands?: unknown;
}

export async function openMultidimManifest(location: string, options: OpenOptions = {}): Promise<GeoTiffSource> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(location, 'utf8'));
  } catch (e) {
    throw ioError(`cannot read ${location} as a multidimensional manifest: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  const bad = (msg: string): EngineError => ioError(`${location}: ${msg}`);
  const vars = (doc as { variables?: unknown }).variables;
  if (!Array.isArray(vars) || vars.length === 0) throw bad('a multidimensional manifest needs a non-empty "variables" array');
  const base = dirname(location);
  const parts: GeoTiffSource[] = [];
  const partIndex = new Map<string, number>();
  /** Per slice: its file and bands, in band order. */
  const picks: { part: number; bands: number[] }[] = [];
  const variables: MultidimVariable[] = [];
  let band = 0;
  try {
    for (const [vi, v] of (vars as Record<string, unknown>[]).entries()) {
      const name = v?.name;
      if (typeof name !== 'string' || name === '') throw bad(`variables[${vi}] needs a "name"`);
      const rawDims = Array.isArray(v.dimensions) ? (v.dimensions as unknown[]) : [];
      const dimensions: MultidimDimension[] = rawDims.map((d, di) => {
        const o = typeof d === 'string' ? { name: d } : (d as { name?: unknown; unit?: unknown });
        if (typeof o?.name !== 'string') throw bad(`variables[${vi}].dimensions[${di}] needs a name`);
        const unit = typeof o.unit === 'string' ? o.unit : undefined;
        const time = isTimeDimensionName(o.name) || /^iso ?8601$/i.test(unit ?? '');
        return { name: o.name, time, ...(unit && !time ? { unit } : {}) };
      });
      const slices = v.slices;
      if (!Array.isArray(slices) || slices.length === 0) throw bad(`variables[${vi}] needs a non-empty "slices" array`);
      let bps: number | undefined;
      const out: MultidimSlice[] = [];
      for (const [si, s] of (slices as ManifestSlice[]).entries()) {
        if (typeof s?.path !== 'string') throw bad(`variables[${vi}].slices[${si}] needs a "path"`);
        const values = dimensions.map((d) => {
          const raw = s.dimensions?.[d.name];
          const value = typeof raw === 'string' || typeof raw === 'number' ? parseDimensionValue(raw, d.time) : Number.NaN;
          if (Number.isNaN(value))
            throw bad(`variables[${vi}].slices[${si}].dimensions.${d.name} is missing or not a ${d.time ? 'ISO 8601 date' : 'number'}`);
          return value;
        });
        const path = resolve(isAbsolute(s.path) ? s.path : join(base, s.path));
        let pi = partIndex.get(path);
        if (pi === undefined) {
          const part = await openGeoTiff(path, { ...(options.signal ? { signal: options.signal } : {}) });
          pi = parts.length;
          parts.push(part);
          partIndex.set(path, pi);
          if (!sameGrid(parts[0]!.info, part.info)) throw unsupported(location, `slice ${s.path} is not on the grid of the first slice`);
        }
        const count = parts[pi]!.info.bandCount;
        let bands: number[];
        if (s.bands === undefined) bands = Array.from({ length: count }, (_, j) => j);
        else if (
          Array.isArray(s.bands) &&
          s.bands.length > 0 &&
          s.bands.every((b) => Number.isInteger(b) && (b as number) >= 0 && (b as number) < count)
        )
          bands = s.bands as number[];
        else throw bad(`variables[${vi}].slices[${si}].bands must list 0-based band indexes of ${s.path} (0..${count - 1})`);
        bps ??= bands.length;
        if (bands.length !== bps)
          throw unsupported(location, `slices of variable ${name} have different band counts (${bps} and ${bands.length})`);
        picks.push({ part: pi, bands });
        out.push({ values, band });
        band += bps;
      }
      variables.push({
        name,
        ...(typeof v.description === 'string' ? { description: v.description } : {}),
        dimensions,
        bandsPerSlice: bps!,
        slices: out,
      });
    }
  } catch (e) {
    await Promise.all(parts.map((p) => p.close().catch(() => undefined)));
    throw e;
  }
  const first = parts[0]!.info;
  let pixelType: PixelType;
  let noData: number | undefined;
  try {
    ({ pixelType, noData } = storage(
      parts.map((p) => p.info.pixelType),
      parts.map((p) => p.info.noData),
      parts.length > 1,
    ));
  } catch (e) {
    // An unsupported pixel type (complex) must not leave the slices' file handles open either.
    await Promise.all(parts.map((p) => p.close().catch(() => undefined)));
    throw e;
  }
  const multidimensional: Multidimensional = { variables };
  const info: RasterInfo = {
    width: first.width,
    height: first.height,
    bandCount: band,
    pixelType,
    ...(noData === undefined ? {} : { noData }),
    extent: first.extent,
    cellSize: first.cellSize,
    ...(first.spatialReference ? { spatialReference: first.spatialReference } : {}),
    bandNames: layoutBandNames(multidimensional, band),
    ...(first.sensorName ? { sensorName: first.sensorName } : {}),
    radiometry: 'source',
    multidimensional,
  };
  const fill = noData ?? 0;
  return {
    kind: 'source',
    id: options.id ?? location,
    info,
    location,
    async close() {
      await Promise.all(parts.map((p) => p.close()));
    },
    async read(r: Rect, signal?: AbortSignal): Promise<PixelBlock> {
      const out = emptyBlock(r, pixelType, band, fill);
      const win = intersect(r, { x: 0, y: 0, width: info.width, height: info.height });
      if (!win) return out;
      const blocks = await Promise.all(parts.map((p) => p.read(r, signal)));
      let b = 0;
      for (const pick of picks) {
        const blk = blocks[pick.part]!;
        const pinfo = parts[pick.part]!.info;
        // A file's mask hides a pixel in all its bands when one band is NoData; with a NoData value
        // (or float pixels) each band's own values say which slices are missing.
        const perBand = pinfo.noData !== undefined || !PIXEL_TYPE_INFO[pinfo.pixelType].integer;
        const nd = pinfo.noData !== undefined && pinfo.pixelType === 'F32' ? Math.fround(pinfo.noData) : pinfo.noData;
        for (const j of pick.bands) {
          const plane = blk.bands[j]!;
          const dst = out.bands[b++]!;
          for (let y = win.y; y < win.y + win.height; y++) {
            const row = (y - r.y) * r.width + (win.x - r.x);
            for (let i = row; i < row + win.width; i++) {
              const v = plane[i]!;
              if (perBand ? v === v && v !== nd : blk.mask[i] === 1) {
                dst[i] = v;
                out.mask[i] = 1;
              }
            }
          }
        }
      }
      return out;
    },
  };
}

// ---- (b) GeoTIFF with dimension band metadata

/** CF time units (`days since 1970-01-01 00:00:00`) as [ms per unit, epoch ms of the origin], or undefined. */
export function cfTimeUnits(units: string | undefined): [number, number] | undefined {
  const m = /^\s*(\w+)\s+since\s+(.+?)\s*$/i.exec(units ?? '');
  if (!m) return undefined;
  const scale = (
    {
      day: 86400000,
      days: 86400000,
      d: 86400000,
      hour: 3600000,
      hours: 3600000,
      h: 3600000,
      hr: 3600000,
      minute: 60000,
      minutes: 60000,
      min: 60000,
      second: 1000,
      seconds: 1000,
      s: 1000,
      sec: 1000,
      milliseconds: 1,
      millisecond: 1,
      ms: 1,
    } as Record<string, number>
  )[m[1]!.toLowerCase()];
  const origin = parseDimensionValue(m[2]!.replace(/ (\d)/, 'T$1').replace(/\s*UTC$/i, ''), true);
  return scale === undefined || Number.isNaN(origin) ? undefined : [scale, origin];
}

/**
 * The layout a GeoTIFF's band metadata describes (see header (b)), or undefined when its bands
 * carry no dimension keys.
 */
export function layoutFromBandMetadata(md: GdalMetadata, bandCount: number, location: string): Multidimensional | undefined {
  const rows: { variable: string; dims: Map<string, string> }[] = [];
  let any = false;
  for (let b = 0; b < bandCount; b++) {
    const items = md.bands.get(b) ?? new Map<string, string>();
    const dims = new Map<string, string>();
    for (const [k, v] of items) {
      // A `band` dimension is the band axis of a slice (consecutive bands of one date), not a dimension.
      if (/^NETCDF_DIM_/i.test(k) && !BAND_NAMES.test(k.slice('NETCDF_DIM_'.length))) dims.set(k.slice('NETCDF_DIM_'.length), v);
      else if (/^stdtime$/i.test(k)) dims.set('StdTime', v);
    }
    if (dims.size > 0) any = true;
    const variable =
      items.get('NETCDF_VARNAME') ?? items.get('VARIABLE') ?? items.get('VariableName') ?? md.dataset.get('NETCDF_VARNAME') ?? 'Variable';
    rows.push({ variable, dims });
  }
  if (!any) return undefined;
  const extra = /^\{(.*)\}$/
    .exec(md.dataset.get('NETCDF_DIM_EXTRA') ?? '')?.[1]
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const variables: MultidimVariable[] = [];
  let b = 0;
  while (b < bandCount) {
    const { variable } = rows[b]!;
    const names = [...rows[b]!.dims.keys()];
    if (names.length === 0) throw unsupported(location, `band ${b + 1} has no dimension metadata while other bands do`);
    const order = extra ? [...names].sort((p, q) => extra.indexOf(p) - extra.indexOf(q)) : names;
    const dimensions: MultidimDimension[] = order.map((name) => {
      const units = md.dataset.get(`${name}#units`);
      const cf = cfTimeUnits(units);
      const time = cf !== undefined || /^stdtime$/i.test(name);
      return { name: /^stdtime$/i.test(name) ? 'StdTime' : name, time, ...(!time && units ? { unit: units } : {}) };
    });
    const valueOf = (row: (typeof rows)[number], d: MultidimDimension, name: string): number => {
      const raw = row.dims.get(name);
      if (raw === undefined) return Number.NaN;
      const cf = cfTimeUnits(md.dataset.get(`${name}#units`));
      if (cf) return Number(raw) * cf[0] + cf[1];
      return parseDimensionValue(raw, d.time);
    };
    const slices: MultidimSlice[] = [];
    let bps: number | undefined;
    while (b < bandCount && rows[b]!.variable === variable) {
      const start = b;
      const values = dimensions.map((d, i) => valueOf(rows[b]!, d, order[i]!));
      if (values.some((v) => Number.isNaN(v))) throw unsupported(location, `band ${b + 1}: unreadable dimension values`);
      const same = (k: number): boolean =>
        rows[k]!.variable === variable && dimensions.every((d, i) => valueOf(rows[k]!, d, order[i]!) === values[i]);
      while (b < bandCount && same(b)) b++;
      const n = b - start;
      bps ??= n;
      if (n !== bps) throw unsupported(location, `slices of variable ${variable} have different band counts (${bps} and ${n})`);
      slices.push({ values, band: start });
    }
    variables.push({ name: variable, dimensions, bandsPerSlice: bps!, slices });
  }
  return { variables };
}

/**
 * A GeoTIFF source with its band-metadata layout when it has one (header (b)); a plain GeoTIFF is
 * returned as it is. The mask becomes "any slice valid" (a NoData value in one band no longer
 * hides the other slices) for rasters with a NoData value or float pixels.
 */
export async function withBandDimensions(source: GeoTiffSource, location: string): Promise<GeoTiffSource> {
  const md = source.gdalMetadata;
  const layout = md && layoutFromBandMetadata(md, source.info.bandCount, location);
  if (!layout) return source;
  const base = source.info;
  const info: RasterInfo = { ...base, bandNames: base.bandNames ?? layoutBandNames(layout, base.bandCount), multidimensional: layout };
  const float = !PIXEL_TYPE_INFO[base.pixelType].integer;
  const noData = base.noData;
  const perSlice = noData !== undefined || float;
  /** The block's mask rebuilt in place as "any slice valid" (`width` x `height`: its level's size). */
  const perSliceMask = (blk: PixelBlock, r: Rect, width: number, height: number): PixelBlock => {
    if (!perSlice) return blk;
    blk.mask.fill(0);
    const win = intersect(r, { x: 0, y: 0, width, height });
    if (win) anyValid(blk, win, noData);
    return blk;
  };
  /** A level (the image or an overview) with the layout and the any-slice mask. */
  const wrap = (s: SourceNode): SourceNode => {
    const { width, height } = s.info;
    const { readInto } = s;
    return {
      ...s,
      info: { ...s.info, bandNames: info.bandNames, multidimensional: layout },
      read: async (r, signal) => perSliceMask(await s.read(r, signal), r, width, height),
      ...(readInto
        ? {
            readInto: async (b: PixelBlock, signal?: AbortSignal) => perSliceMask(await readInto.call(s, b, signal), b.rect, width, height),
          }
        : { readInto: undefined }),
    };
  };
  // Every method that reads is wrapped here: spreading `source` would hand out its own.
  const self: GeoTiffSource = { ...source, ...wrap(source) };
  const overviews = (source.overviews ?? []).map((_, i) => wrap(source.overview!(i + 1)));
  return {
    ...self,
    overview(n: number): SourceNode {
      if (n === 0) return self;
      const s = overviews[n - 1];
      if (!Number.isInteger(n) || !s)
        throw new EngineError('INVALID_ARGUMENT', `${location} has ${overviews.length} overview(s); no level ${n}`, { path: 'overview' });
      return s;
    },
    readDownsampled: (r: Rect, width: number, height: number, signal?: AbortSignal) =>
      readDownsampledFrom([self, ...overviews], r, width, height, signal),
  };
}

// ---- (c) Zarr

const X_NAMES = /^(x|lon|long|longitude|easting)$/i;
const Y_NAMES = /^(y|lat|latitude|northing)$/i;
const BAND_NAMES = /^bands?$/i;

const ZARR_TYPES: Record<string, PixelType> = {
  int8: 'S8',
  uint8: 'U8',
  int16: 'S16',
  uint16: 'U16',
  int32: 'S32',
  uint32: 'U32',
  float32: 'F32',
  float64: 'F64',
};

type ZArray = Zarrita.Array<Zarrita.DataType, FileSystemStore>;
/** zarrita, loaded by the first `openZarr` (it weighs on every CLI start otherwise). */
let zarr: typeof Zarrita;

/** Spatial reference from a WKT string: its EPSG code (last ID/AUTHORITY) and kind. */
export function spatialReferenceFromWkt(wkt: string): SpatialReference | undefined {
  const codes = [...wkt.matchAll(/(?:ID|AUTHORITY)\[\s*"EPSG"\s*,\s*"?(\d+)"?\s*\]/gi)];
  const code = codes.length ? Number(codes[codes.length - 1]![1]) : undefined;
  const geographic = /^\s*(GEOGCS|GEOGCRS|GEOGRAPHICCRS)\b/i.test(wkt);
  const def = code === undefined ? undefined : proj4ForEpsg(code);
  if (code === undefined && !wkt.trim()) return undefined;
  return {
    ...(code === undefined ? {} : { wkid: code }),
    wkt,
    ...(def ? { proj4: def } : {}),
    ...(geographic ? { geographic: true } : { metersPerUnit: (def ? unitsOfProj4(def) : undefined) ?? 1 }),
  };
}

/**
 * The spatial reference the attributes declare (see the file header), or undefined when they
 * declare none. A declaration that is there but cannot be read (a `_CRS` with neither WKT nor an
 * EPSG URL, an empty WKT, a `crs` that is not `EPSG:n`) is told to `warn`, not dropped silently.
 */
function crsOf(
  attrs: Record<string, unknown>,
  grid: Record<string, unknown> | undefined,
  warn: (message: string) => void,
): SpatialReference | undefined {
  const fromWkt = (wkt: string, where: string): SpatialReference | undefined => {
    const sr = spatialReferenceFromWkt(wkt);
    if (!sr) warn(`${where} is an empty WKT`);
    return sr;
  };
  const c = attrs._CRS as { wkt?: unknown; url?: unknown } | undefined;
  if (c !== undefined) {
    if (typeof c === 'object' && c !== null && typeof c.wkt === 'string') return fromWkt(c.wkt, '_CRS.wkt');
    const m = typeof c === 'object' && c !== null && typeof c.url === 'string' ? /EPSG\/\d+\/(\d+)/i.exec(c.url) : null;
    if (m) return spatialReferenceFromWkt(`ID["EPSG",${m[1]}]`);
    warn(`_CRS ${JSON.stringify(c)} has neither a wkt nor an EPSG url`);
  }
  for (const k of ['crs_wkt', 'spatial_ref']) {
    const w = grid?.[k] ?? attrs[k];
    if (typeof w === 'string') return fromWkt(w, k);
  }
  if (attrs.crs === undefined) return undefined;
  // String() only feeds the EPSG:n test: an object's "[object Object]" fails it, and the warning prints JSON.
  // eslint-disable-next-line @typescript-eslint/no-base-to-string
  const e = /^EPSG:(\d+)$/i.exec(String(attrs.crs));
  if (e) return spatialReferenceFromWkt(`ID["EPSG",${e[1]}]`);
  warn(`crs ${JSON.stringify(attrs.crs)} is not EPSG:n`);
  return undefined;
}

/** zarrita's "nothing there" (a missing array, group or key): the only Zarr error that means absent. */
const notFound = (e: unknown): boolean => zarr.isZarritaError(e, 'NotFoundError');

/**
 * The 1-D coordinate array `name`, or undefined when the store has none (or it is not 1-D). Any
 * other failure (unreadable metadata or chunks) is an IO_ERROR: it is not the same as no coordinate.
 */
async function readCoordinate(
  root: Zarrita.Location<FileSystemStore>,
  name: string,
  location: string,
): Promise<{ values: number[]; attrs: Record<string, unknown> } | undefined> {
  let arr: ZArray;
  try {
    arr = (await zarr.open(root.resolve(name), { kind: 'array' })) as ZArray;
  } catch (e) {
    if (notFound(e)) return undefined;
    throw ioError(`cannot read the coordinate array ${name} of ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  if (arr.shape.length !== 1) return undefined;
  try {
    const chunk = await zarr.get(arr, null);
    const data = chunk.data as ArrayLike<number | bigint>;
    return { values: Array.from(data, (v) => Number(v)), attrs: arr.attrs };
  } catch (e) {
    throw ioError(`cannot read the coordinate array ${name} of ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
  }
}

interface ZVar {
  readonly arr: ZArray;
  readonly name: string;
  /** Non-spatial, non-band axes in order, and the band axis (or -1). */
  readonly dimAxes: number[];
  readonly bandAxis: number;
  readonly noData?: number;
  readonly flip: boolean;
}

export async function openZarr(location: string, options: OpenOptions = {}): Promise<GeoTiffSource> {
  const dir = resolve(location.replace(/^file:\/\//i, ''));
  let entries: string[];
  try {
    entries = (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch (e) {
    throw ioError(`cannot open Zarr store ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  zarr ??= await import('zarrita');
  const { default: Store } = await import('@zarrita/storage/fs');
  const store = new Store(dir);
  const root = zarr.root(store);
  const arrays: { name: string; arr: ZArray }[] = [];
  for (const name of entries) {
    try {
      const node = await zarr.open(root.resolve(name));
      if (node instanceof zarr.Array) arrays.push({ name, arr: node });
    } catch (e) {
      // A directory that is not a Zarr node is ignored; a node that cannot be read is an error.
      if (!notFound(e))
        throw ioError(`cannot read ${name} of the Zarr store ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
    }
  }
  let groupAttrs: Record<string, unknown> = {};
  try {
    groupAttrs = (await zarr.open(root, { kind: 'group' })).attrs;
  } catch (e) {
    // A store without a root group is fine; one whose root group cannot be read is not.
    if (!notFound(e))
      throw ioError(`cannot read the root group of the Zarr store ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  if (arrays.length === 0) {
    const files = await readdir(dir).catch(() => [] as string[]);
    if (!files.some((f) => ['.zgroup', '.zattrs', '.zmetadata', 'zarr.json'].includes(f))) {
      throw ioError(`${location} is a directory, not a Zarr store (no .zgroup, .zattrs or zarr.json)`);
    }
  }
  const spatial = arrays.filter(({ arr }) => {
    const d = arr.dimensionNames;
    return d !== undefined && d.length >= 2 && Y_NAMES.test(d[d.length - 2]!) && X_NAMES.test(d[d.length - 1]!);
  });
  if (spatial.length === 0)
    throw unsupported(
      location,
      'no array of the Zarr store has y/x (or lat/lon) as its last two dimensions (_ARRAY_DIMENSIONS / dimension_names)',
    );
  const d0 = spatial[0]!.arr.dimensionNames!;
  const [yName, xName] = [d0[d0.length - 2]!, d0[d0.length - 1]!];
  const [height, width] = spatial[0]!.arr.shape.slice(-2) as [number, number];
  const xs = await readCoordinate(root, xName, location);
  const ys = await readCoordinate(root, yName, location);
  if (!xs || !ys || xs.values.length !== width || ys.values.length !== height || width < 2 || height < 2) {
    throw unsupported(location, `the Zarr store needs 1-D coordinate arrays ${xName} and ${yName} of the grid's size (at least 2 x 2)`);
  }
  const dx = (xs.values[width - 1]! - xs.values[0]!) / (width - 1);
  const dyRaw = (ys.values[height - 1]! - ys.values[0]!) / (height - 1);
  const regular = (v: number[], step: number): boolean => v.every((c, i) => Math.abs(c - (v[0]! + i * step)) <= 1e-6 * Math.abs(step));
  if (!(dx > 0) || dyRaw === 0 || !regular(xs.values, dx) || !regular(ys.values, dyRaw)) {
    throw unsupported(location, 'only regular north-up grids are supported (x increasing, y evenly spaced)');
  }
  const flip = dyRaw > 0;
  const dy = Math.abs(dyRaw);
  const xmin = xs.values[0]! - dx / 2;
  const ymax = (flip ? ys.values[height - 1]! : ys.values[0]!) + dy / 2;

  const coords = new Map<string, { values: number[]; attrs: Record<string, unknown> } | undefined>();
  const zvars: ZVar[] = [];
  const variables: MultidimVariable[] = [];
  const types: PixelType[] = [];
  const noDatas: (number | undefined)[] = [];
  let band = 0;
  for (const { name, arr } of spatial) {
    const dims = arr.dimensionNames!;
    if (arr.shape.at(-2) !== height || arr.shape.at(-1) !== width || dims.at(-2) !== yName || dims.at(-1) !== xName) {
      throw unsupported(location, `array ${name} is not on the grid of ${spatial[0]!.name}`);
    }
    const pixelType = ZARR_TYPES[arr.dtype];
    if (!pixelType) throw unsupported(location, `array ${name} has data type ${arr.dtype}, which is not supported`);
    const dimAxes: number[] = [];
    let bandAxis = -1;
    for (let a = 0; a < dims.length - 2; a++) {
      if (BAND_NAMES.test(dims[a]!) && bandAxis < 0) bandAxis = a;
      else dimAxes.push(a);
    }
    const dimensions: MultidimDimension[] = [];
    const values: number[][] = [];
    for (const a of dimAxes) {
      const dn = dims[a]!;
      if (!coords.has(dn)) coords.set(dn, await readCoordinate(root, dn, location));
      const c = coords.get(dn);
      const n = arr.shape[a]!;
      const units = typeof c?.attrs.units === 'string' ? c.attrs.units : undefined;
      const cf = cfTimeUnits(units);
      const time = cf !== undefined || (isTimeDimensionName(dn) && c === undefined);
      const raw = c && c.values.length === n ? c.values : Array.from({ length: n }, (_, i) => i);
      values.push(cf ? raw.map((v) => v * cf[0] + cf[1]) : raw);
      dimensions.push({ name: dn, time, ...(!time && units ? { unit: units } : {}) });
    }
    const bps = bandAxis < 0 ? 1 : arr.shape[bandAxis]!;
    const counts = dimAxes.map((a) => arr.shape[a]!);
    const total = counts.reduce((p, q) => p * q, 1);
    const slices: MultidimSlice[] = [];
    for (let k = 0; k < total; k++) {
      let rest = k;
      const idx = new Array<number>(counts.length);
      for (let i = counts.length - 1; i >= 0; i--) {
        idx[i] = rest % counts[i]!;
        rest = Math.floor(rest / counts[i]!);
      }
      slices.push({ values: idx.map((j, i) => values[i]![j]!), band });
      band += bps;
    }
    const fv = arr.attrs._FillValue ?? arr.fillValue;
    const noData = typeof fv === 'number' ? fv : fv === 'NaN' ? Number.NaN : undefined;
    const description = typeof arr.attrs.long_name === 'string' ? arr.attrs.long_name : undefined;
    variables.push({ name, ...(description ? { description } : {}), dimensions, bandsPerSlice: bps, slices });
    zvars.push({ arr, name, dimAxes, bandAxis, ...(noData === undefined ? {} : { noData }), flip });
    types.push(pixelType);
    noDatas.push(noData);
  }
  const { pixelType, noData } = storage(types, noDatas, true);
  // The spatial reference is optional data: one declared but unreadable is a warning (as GDAL
  // warns), the raster opens without it; a store that cannot be read is an IO_ERROR.
  const warn = (message: string): void => options.onWarning?.(`${location}: ${message}; the raster has no spatial reference from it`);
  const gridMapping = spatial[0]!.arr.attrs.grid_mapping;
  let gridAttrs: Record<string, unknown> | undefined;
  if (typeof gridMapping === 'string' && gridMapping) {
    try {
      gridAttrs = (await zarr.open(root.resolve(gridMapping), { kind: 'array' })).attrs;
    } catch (e) {
      if (!notFound(e))
        throw ioError(`cannot read the grid mapping ${gridMapping} of ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
      warn(`the grid mapping variable ${gridMapping} named by ${spatial[0]!.name} is not in the store`);
    }
  }
  const spatialReference = crsOf(spatial[0]!.arr.attrs, gridAttrs, warn) ?? crsOf(groupAttrs, undefined, warn);
  const multidimensional: Multidimensional = { variables };
  const info: RasterInfo = {
    width,
    height,
    bandCount: band,
    pixelType,
    ...(noData === undefined ? {} : { noData }),
    extent: { xmin, ymax, xmax: xmin + width * dx, ymin: ymax - height * dy },
    cellSize: { x: dx, y: dy },
    ...(spatialReference ? { spatialReference } : {}),
    bandNames: layoutBandNames(multidimensional, band),
    radiometry: 'source',
    multidimensional,
  };
  const fill = noData ?? 0;
  return {
    kind: 'source',
    id: options.id ?? location,
    info,
    location,
    close: () => Promise.resolve(),
    async read(r: Rect, signal?: AbortSignal): Promise<PixelBlock> {
      const out = emptyBlock(r, pixelType, band, fill);
      const win = intersect(r, { x: 0, y: 0, width, height });
      if (!win) return out;
      const ySel = flip ? zarr.slice(height - win.y - win.height, height - win.y) : zarr.slice(win.y, win.y + win.height);
      const xSel = zarr.slice(win.x, win.x + win.width);
      let b = 0;
      try {
        for (let v = 0; v < zvars.length; v++) {
          const zv = zvars[v]!;
          const { arr } = zv;
          const lead = arr.shape.slice(0, -2);
          const sel: (number | Zarrita.Slice | null)[] = [...lead.map(() => null), ySel, xSel];
          if (signal?.aborted) throw new EngineError('ABORTED', 'the request was aborted');
          const chunk = await zarr.get(arr, sel);
          const data = chunk.data as ArrayLike<number>;
          const stride = chunk.stride;
          const plane = win.width * win.height;
          const nSlices = variables[v]!.slices.length;
          const bps = variables[v]!.bandsPerSlice;
          const tmp = new Float64Array(plane);
          const valid = new Uint8Array(plane);
          const dimAxes = zv.dimAxes;
          const counts = dimAxes.map((a) => lead[a]!);
          for (let s = 0; s < nSlices; s++) {
            let rest = s;
            let offset = 0;
            for (let i = counts.length - 1; i >= 0; i--) {
              offset += (rest % counts[i]!) * stride[dimAxes[i]!]!;
              rest = Math.floor(rest / counts[i]!);
            }
            for (let j = 0; j < bps; j++) {
              const o = offset + (zv.bandAxis >= 0 ? j * stride[zv.bandAxis]! : 0);
              const sy = stride[lead.length]!;
              const sx = stride[lead.length + 1]!;
              for (let y = 0; y < win.height; y++) {
                for (let x = 0; x < win.width; x++) {
                  const val = Number(data[o + y * sy + x * sx]!);
                  tmp[y * win.width + x] = val;
                  valid[y * win.width + x] = val !== val || val === zv.noData ? 0 : 1;
                }
              }
              const dst = out.bands[b++]!;
              place(dst, tmp, valid, win, r, fill, zv.flip);
            }
          }
        }
      } catch (e) {
        if (e instanceof EngineError) throw e;
        throw ioError(`cannot read ${location}: ${e instanceof Error ? e.message : String(e)}`, e);
      }
      anyValid(out, win, noData);
      return out;
    },
  };
}

/**
 * What a GeoTIFF is written with: the writer options (`StreamTiffOptions`), GDAL-style creation
 * options (`--co NAME=VALUE`) parsed into them, the default zlib level, and the NoData decision
 * (see encode-tiff.ts for the NoData policy), all made before the first pixel is seen.
 */
import { invalidArgument, type EngineError } from '../core/errors.js';
import { castValue, PIXEL_TYPE_INFO, representable, type PixelType } from '../core/pixel-type.js';
import { MAX_ZLEVEL, MIN_ZLEVEL } from './deflate.js';

/**
 * rasterflow's default DEFLATE level, with the predictor (2 for integers, 3 for floats). GDAL's
 * defaults are ZLEVEL 6 and no predictor. Both deflate with libdeflate (deflate.ts). Measured
 * with node:zlib on a 4096 x 4096 hillshade (U8): level 6 without predictor 7.13 MB in 1.25-1.6 s
 * of CPU; level 1 with predictor 2 6.16 MB in 0.27-0.31 s; GDAL's default output 6.94 MB.
 * libdeflate at level 1 with predictor 2 makes 5.83 MB, 1.3x faster than node:zlib; at level 6
 * without predictor it is still 2-3x slower than that. On a float DEM, level 1 with predictor 3 is
 * 17 % larger than level 6 but four times faster, and 2.3 times smaller than no predictor.
 * ZLEVEL / `level` choose (1-12, as GDAL's with libdeflate).
 */
export const DEFAULT_ZLEVEL = 1;

export interface StreamTiffOptions {
  readonly compress?: 'none' | 'deflate';
  /** 1 none, 2 horizontal (integers), 3 floating point; default: 2 or 3 with DEFLATE, 1 without. */
  readonly predictor?: 1 | 2 | 3;
  /** DEFLATE level 1-12; default DEFAULT_ZLEVEL (1). */
  readonly level?: number;
  /** Default true. */
  readonly tiled?: boolean;
  readonly blockWidth?: number;
  readonly blockHeight?: number;
  readonly bigTiff?: 'YES' | 'NO' | 'IF_NEEDED' | 'IF_SAFER';
  readonly nbits?: number;
  readonly cog?: boolean;
  /** 'AUTO', 'NONE' or a count of levels; default NONE, or AUTO with `cog`. */
  readonly overviews?: 'AUTO' | 'NONE' | number;
  readonly overviewResampling?: 'NEAREST' | 'AVERAGE';
  /**
   * Write the statistics of the written pixels (STATISTICS_*), computed as blocks pass; default
   * true (not for complex types, which GDAL's statistics do not describe).
   */
  readonly statistics?: boolean;
  readonly noData?: number;
  /** Subtracted from block rects: the output's top-left in the coordinates blocks arrive in. */
  readonly offset?: { readonly x: number; readonly y: number };
}

export const co = (name: string, msg: string): EngineError => invalidArgument(`co.${name}`, msg);

/**
 * GDAL-style creation options (`NAME=VALUE`, names case-insensitive) -> writer options. Known:
 * COMPRESS (NONE, DEFLATE), PREDICTOR (1/NONE, 2/STANDARD, 3/FLOATING_POINT), ZLEVEL, TILED,
 * BLOCKXSIZE, BLOCKYSIZE, BLOCKSIZE, BIGTIFF, NBITS, COG / LAYOUT=COG, OVERVIEWS
 * (AUTO, NONE), OVERVIEW_COUNT, OVERVIEW_RESAMPLING / RESAMPLING (NEAREST, AVERAGE), STATISTICS.
 * Defaults differ from GDAL's on purpose (DEFAULT_ZLEVEL above): PREDICTOR 2 for
 * integers and 3 for floats, ZLEVEL 1; `PREDICTOR=1 ZLEVEL=6` give GDAL's settings.
 */
export function parseCreationOptions(list: readonly string[]): StreamTiffOptions {
  const o: { -readonly [K in keyof StreamTiffOptions]: StreamTiffOptions[K] } = {};
  const yes = (name: string, v: string): boolean => {
    const u = v.toUpperCase();
    if (['YES', 'TRUE', 'ON', '1'].includes(u)) return true;
    if (['NO', 'FALSE', 'OFF', '0'].includes(u)) return false;
    throw co(name, `${name} must be YES or NO, got ${v}`);
  };
  const int = (name: string, v: string, min: number, max: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw co(name, `${name} must be an integer from ${min} to ${max}, got ${v}`);
    return n;
  };
  for (const item of list) {
    const m = /^([A-Za-z_]+)=(.*)$/.exec(item.trim());
    if (!m) throw invalidArgument('co', `creation options are NAME=VALUE, got ${item}`);
    const name = m[1]!.toUpperCase();
    const v = m[2]!.trim();
    const u = v.toUpperCase();
    switch (name) {
      case 'COMPRESS':
        if (u !== 'NONE' && u !== 'DEFLATE') throw co(name, `COMPRESS must be NONE or DEFLATE, got ${v}`);
        o.compress = u === 'NONE' ? 'none' : 'deflate';
        break;
      case 'PREDICTOR': {
        const p = ({ '1': 1, NONE: 1, '2': 2, STANDARD: 2, HORIZONTAL: 2, '3': 3, FLOATING_POINT: 3 } as const)[u as '1'];
        if (p === undefined) throw co(name, `PREDICTOR must be 1, 2 or 3, got ${v}`);
        o.predictor = p;
        break;
      }
      case 'ZLEVEL':
        o.level = int(name, v, MIN_ZLEVEL, MAX_ZLEVEL);
        break;
      case 'TILED':
        o.tiled = yes(name, v);
        break;
      case 'BLOCKXSIZE':
        o.blockWidth = int(name, v, 1, 65536);
        break;
      case 'BLOCKYSIZE':
        o.blockHeight = int(name, v, 1, 1 << 30);
        break;
      case 'BLOCKSIZE':
        o.blockWidth = o.blockHeight = int(name, v, 16, 65536);
        break;
      case 'BIGTIFF':
        if (!['YES', 'NO', 'IF_NEEDED', 'IF_SAFER'].includes(u)) throw co(name, `BIGTIFF must be YES, NO, IF_NEEDED or IF_SAFER, got ${v}`);
        o.bigTiff = u as 'YES';
        break;
      case 'NBITS':
        o.nbits = int(name, v, 1, 32);
        break;
      case 'COG':
        o.cog = yes(name, v);
        break;
      case 'LAYOUT':
        if (u !== 'COG' && u !== 'GTIFF' && u !== 'DEFAULT') throw co(name, `LAYOUT must be COG or GTIFF, got ${v}`);
        o.cog = u === 'COG';
        break;
      case 'OVERVIEWS':
        if (u !== 'AUTO' && u !== 'NONE') throw co(name, `OVERVIEWS must be AUTO or NONE, got ${v}`);
        o.overviews = u;
        break;
      case 'OVERVIEW_COUNT':
        o.overviews = int(name, v, 0, 30);
        break;
      case 'OVERVIEW_RESAMPLING':
      case 'RESAMPLING':
        if (u !== 'NEAREST' && u !== 'AVERAGE') throw co(name, `${name} must be NEAREST or AVERAGE, got ${v}`);
        o.overviewResampling = u;
        break;
      case 'STATISTICS':
        o.statistics = yes(name, v);
        break;
      default:
        throw co(
          name,
          `unknown creation option ${name} (known: COMPRESS, PREDICTOR, ZLEVEL, TILED, BLOCKXSIZE, BLOCKYSIZE, BLOCKSIZE, BIGTIFF, NBITS, COG, LAYOUT, OVERVIEWS, OVERVIEW_COUNT, OVERVIEW_RESAMPLING, STATISTICS)`,
        );
    }
  }
  return o;
}

/**
 * The NoData decision for an output of type `t` (see the file header): `fill` goes into masked
 * pixels, `tag` into GDAL_NODATA. `tag` undefined (integer types only) means the mask cannot
 * travel as NoData; encodeGeoTiff then writes it as an internal mask IFD.
 */
export function outputNoData(
  t: PixelType,
  requested: number | undefined,
  declared: number | undefined,
): { fill: number; tag: number | undefined } {
  const info = PIXEL_TYPE_INFO[t];
  if (requested !== undefined) {
    const ok = info.integer ? representable(requested, t) : true;
    if (!ok) throw invalidArgument('noData', `noData ${requested} is not representable in ${t} (${info.min}..${info.max}, integer)`);
    const v = castValue(requested, t);
    return { fill: v, tag: v };
  }
  if (!info.integer) {
    const v = castValue(declared ?? Number.NaN, t);
    return { fill: v, tag: v };
  }
  if (declared !== undefined && representable(declared, t)) return { fill: declared, tag: declared };
  return { fill: 0, tag: undefined };
}

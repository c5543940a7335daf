/**
 * Meta Raster Format (MRF) writer for chips: a `.mrf` XML header, a `.idx` index and a data file
 * holding one DEFLATE (zlib) page with all bands pixel-interleaved, as GDAL's MRF driver writes
 * with `-co COMPRESS=DEFLATE` and a page the size of the raster. Georeferencing in `GeoTags`
 * (bounding box and the spatial reference as WKT, or `EPSG:n` when only the code is known).
 * Little-endian samples (GDAL's default, NetByteOrder off). Masked pixels take the NoData value
 * (recorded in `DataValues`) or 0.
 */
import { deflateSync } from 'node:zlib';
import { EngineError } from '../core/errors.js';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import type { PixelType } from '../core/pixel-type.js';

const MRF_TYPES: Partial<Record<PixelType, { name: string; bytes: number; setter: keyof DataView }>> = {
  U8: { name: 'Byte', bytes: 1, setter: 'setUint8' },
  S8: { name: 'Int8', bytes: 1, setter: 'setInt8' },
  U16: { name: 'UInt16', bytes: 2, setter: 'setUint16' },
  S16: { name: 'Int16', bytes: 2, setter: 'setInt16' },
  U32: { name: 'UInt32', bytes: 4, setter: 'setUint32' },
  S32: { name: 'Int32', bytes: 4, setter: 'setInt32' },
  F32: { name: 'Float32', bytes: 4, setter: 'setFloat32' },
  F64: { name: 'Float64', bytes: 8, setter: 'setFloat64' },
};

export interface MrfFiles {
  /** The header; its DataFile/IndexFile name `<base>.pzp` and `<base>.idx` beside it. */
  readonly header: string;
  readonly index: Uint8Array;
  readonly data: Uint8Array;
}

const attr = (v: number): string => (Number.isInteger(v) ? String(v) : v.toFixed(8));
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Encode `block` (with `info` describing its grid) as MRF files named after `base` (no folder, no extension). */
export function encodeMrf(block: PixelBlock, info: RasterInfo, base: string): MrfFiles {
  const t = MRF_TYPES[block.pixelType];
  if (t === undefined)
    throw new EngineError('UNSUPPORTED_INPUT', `MRF chips cannot hold ${block.pixelType} pixels`, { path: 'chipFormat' });
  const { width, height } = block.rect;
  const c = block.bands.length;
  const n = width * height;
  const raw = new Uint8Array(n * c * t.bytes);
  const view = new DataView(raw.buffer);
  const fill = info.noData !== undefined && Number.isFinite(info.noData) ? info.noData : 0;
  const set = (view[t.setter] as (offset: number, value: number, little?: boolean) => void).bind(view);
  let o = 0;
  for (let i = 0; i < n; i++) {
    const valid = block.mask[i] !== 0;
    for (let b = 0; b < c; b++) {
      set(o, valid ? block.bands[b]![i]! : fill, true);
      o += t.bytes;
    }
  }
  const data = deflateSync(raw);
  const index = new Uint8Array(16);
  const iv = new DataView(index.buffer);
  iv.setBigUint64(0, 0n, false);
  iv.setBigUint64(8, BigInt(data.length), false);
  const sr = info.spatialReference;
  const projection = sr?.wkt ?? (sr?.wkid !== undefined ? `EPSG:${sr.wkid}` : undefined);
  const e = info.extent;
  const lines = [
    '<MRF_META>',
    '  <Raster>',
    `    <Size x="${width}" y="${height}" c="${c}" />`,
    `    <PageSize x="${width}" y="${height}" c="${c}" />`,
    '    <Compression>DEFLATE</Compression>',
    `    <DataType>${t.name}</DataType>`,
    ...(info.noData !== undefined && Number.isFinite(info.noData) ? [`    <DataValues NoData="${info.noData}" />`] : []),
    `    <DataFile>${esc(base)}.pzp</DataFile>`,
    `    <IndexFile>${esc(base)}.idx</IndexFile>`,
    '  </Raster>',
    '  <GeoTags>',
    `    <BoundingBox minx="${attr(e.xmin)}" miny="${attr(e.ymin)}" maxx="${attr(e.xmax)}" maxy="${attr(e.ymax)}" />`,
    ...(projection !== undefined ? [`    <Projection>${esc(projection)}</Projection>`] : []),
    '  </GeoTags>',
    '</MRF_META>',
  ];
  return { header: `${lines.join('\n')}\n`, index, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
}

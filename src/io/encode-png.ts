/**
 * PNG encoder: 1 band -> grey, 2 -> grey + alpha (band 2 is the alpha), 3 -> RGB,
 * 4 -> RGBA (band 4 is the alpha). The validity mask becomes alpha: when any pixel is masked, grey
 * and RGB gain an alpha channel that is 0 there (and masked colour values are written as 0);
 * with no masked pixel the image stays opaque and alpha-free. 8-bit for U8, 16-bit for U16.
 *
 * A single band with a colormap (`info.colormap`: a palette source, or the Colormap function) is
 * expanded to colour, as the vendor does for PNG exports [spec ColormapToRGB: "applied
 * automatically ... when the export format is JPG or PNG"], with the same lookup as ColormapToRGB
 * (`colorize`: floats truncated toward zero, negative values allowed): RGB when every pixel is
 * opaque, else RGBA with alpha 0 for masked pixels and values without an entry and the entry's
 * own alpha (partial alpha kept) for the others. Any real pixel type can carry a colormap.
 *
 * U1/U2/U4 single bands are written as grey PNGs of bit depth 1, 2 or 4 holding the values
 * unscaled (0..1, 0..3, 0..15), by `encodeLowDepthGrey` (pngjs writes only 8 and 16 bits): the
 * PNG chunks are assembled here with node:zlib's deflate and a CRC-32 table.
 * ASSUMPTION (spec silent): PNG has no grey + alpha at those depths, so a U1/U2/U4 band with masked
 * pixels is written as 8-bit grey + alpha holding the same unscaled values; U1/U2/U4 with 2-4
 * bands use 8-bit samples too.
 * Other types are refused with UNSUPPORTED_INPUT: convert first (outputPixelType U8, or a Stretch).
 */
import { createRequire } from 'node:module';
import * as zlib from 'node:zlib';
import { deflate, deflateSync } from 'node:zlib';
import { promisify } from 'node:util';
import type { PNG as PngClass } from 'pngjs';
import { EngineError } from '../core/errors.js';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { colorize, colormapLut } from '../functions/color/colormap-to-rgb.js';

/** pngjs, loaded on first use (a CommonJS package: not parsed at start-up by commands that never write PNG). */
let pngjs: { PNG: typeof PngClass } | undefined;
const loadPngjs = (): { PNG: typeof PngClass } => (pngjs ??= createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass });

export interface PngOptions {
  /** zlib level 0-9; default 6 (pngjs's own default of 9 is slow for little gain). */
  readonly deflateLevel?: number;
  /**
   * Row filter: 'adaptive' (default: pngjs tries the 5 filters on every row and keeps the
   * smallest sum, as libpng's heuristic), or one filter for every row. 'none' and 'up' on 8-bit
   * samples are written here directly (one pass, node:zlib), the fast choice for served images
   * (exportImage: 'up', a smooth raster's best single filter); the others go through pngjs.
   */
  readonly filter?: 'adaptive' | 'none' | 'sub' | 'up' | 'average' | 'paeth';
}

const PNGJS_FILTER = { adaptive: -1, none: 0, sub: 1, up: 2, average: 3, paeth: 4 } as const;

/** PNG colour types: 0 grey, 2 RGB, 4 grey + alpha, 6 RGBA. */
const COLOR_TYPE = { 1: 0, 2: 4, 3: 2, 4: 6 } as const;

const LOW_DEPTH = { U1: 1, U2: 2, U4: 4 } as const;

/** What a block becomes before its PNG is written: finished bytes, or interleaved samples to filter and deflate. */
type Prepared =
  | { readonly bytes: Uint8Array }
  | {
      readonly data: Uint8Array | Uint16Array;
      readonly width: number;
      readonly height: number;
      readonly colorType: 0 | 2 | 4 | 6;
      readonly depth: 8 | 16;
    };

function prepare(block: PixelBlock, info: RasterInfo, options: PngOptions): Prepared {
  const level = options.deflateLevel ?? 6;
  if (block.bands.length === 1 && info.colormap !== undefined) return { bytes: encodeColormapped(block, info, level, options.filter) };
  const t = block.pixelType;
  const nb = block.bands.length;
  const anyMasked = block.mask.indexOf(0) >= 0;
  if (nb === 1 && !anyMasked && (t === 'U1' || t === 'U2' || t === 'U4')) {
    return { bytes: encodeLowDepthGrey(block.bands[0] as Uint8Array, block.rect.width, block.rect.height, LOW_DEPTH[t], level) };
  }
  const depth = t === 'U16' ? 16 : t === 'U8' || t === 'U1' || t === 'U2' || t === 'U4' ? 8 : undefined;
  if (depth === undefined) {
    throw new EngineError(
      'UNSUPPORTED_INPUT',
      `PNG holds 8- or 16-bit unsigned pixels, not ${t}: set outputPixelType to U8 (or U16), or apply a Stretch first`,
      {
        path: 'outputPixelType',
      },
    );
  }
  if (nb < 1 || nb > 4) {
    throw new EngineError('UNSUPPORTED_INPUT', `PNG holds 1 to 4 bands, not ${nb}: select bands with ExtractBand first`, {
      path: 'output',
    });
  }
  const { width, height } = block.rect;
  const n = width * height;
  const mask = block.mask;
  const colour = nb >= 3 ? 3 : 1; // colour channels
  const alphaBand = nb === 2 || nb === 4; // the last band is the alpha
  const channels = colour + (alphaBand || anyMasked ? 1 : 0);
  const colorType = COLOR_TYPE[channels as 1 | 2 | 3 | 4];
  const opaque = depth === 16 ? 65535 : 255;
  const out = depth === 16 ? new Uint16Array(n * channels) : new Uint8Array(n * channels);
  for (let c = 0; c < colour; c++) {
    const band = block.bands[c]!;
    for (let i = 0, o = c; i < n; i++, o += channels) out[o] = mask[i] === 0 ? 0 : band[i]!;
  }
  if (channels > colour) {
    const alpha = alphaBand ? block.bands[nb - 1]! : undefined;
    for (let i = 0, o = colour; i < n; i++, o += channels) out[o] = mask[i] === 0 ? 0 : alpha ? alpha[i]! : opaque;
  }
  return { data: out, width, height, colorType, depth };
}

export function encodePng(block: PixelBlock, info: RasterInfo, options: PngOptions = {}): Uint8Array {
  const p = prepare(block, info, options);
  if ('bytes' in p) return p.bytes;
  return writeWithPngjs(p.data, p.width, p.height, p.colorType, p.depth, options.deflateLevel ?? 6, options.filter);
}

/**
 * `encodePng` with the deflate on the thread pool where the PNG is written here (8-bit samples,
 * filter 'none' or 'up'): the same bytes, without holding the event loop for the compression.
 */
export async function encodePngAsync(block: PixelBlock, info: RasterInfo, options: PngOptions = {}): Promise<Uint8Array> {
  const p = prepare(block, info, options);
  if ('bytes' in p) return p.bytes;
  const level = options.deflateLevel ?? 6;
  const filter = options.filter;
  if (p.depth !== 8 || (filter !== 'none' && filter !== 'up'))
    return writeWithPngjs(p.data, p.width, p.height, p.colorType, p.depth, level, filter);
  const raw = filteredScanlines(p.data as Uint8Array, p.width, p.height, CHANNELS[p.colorType], filter);
  return pngOfDeflated(p.width, p.height, 8, p.colorType, await deflateAsync(raw, { level }));
}

function writeWithPngjs(
  data: Uint8Array | Uint16Array,
  width: number,
  height: number,
  colorType: 0 | 2 | 4 | 6,
  depth: 8 | 16,
  level: number,
  filter: PngOptions['filter'] = 'adaptive',
): Uint8Array {
  if (depth === 8 && (filter === 'none' || filter === 'up')) {
    return writeFiltered(data as Uint8Array, width, height, CHANNELS[colorType], colorType, level, filter);
  }
  const { PNG } = loadPngjs();
  const png = new PNG();
  png.width = width;
  png.height = height;
  // pngjs reads 16-bit input through `new Uint16Array(data.buffer)`: hand it the whole buffer.
  png.data = Buffer.from(data.buffer, 0, data.byteLength);
  return PNG.sync.write(png, {
    colorType,
    inputColorType: colorType,
    inputHasAlpha: colorType === 4 || colorType === 6,
    bitDepth: depth,
    deflateLevel: level,
    filterType: PNGJS_FILTER[filter],
  });
}

const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 } as const;
const deflateAsync = promisify(deflate);

/** An 8-bit PNG of interleaved samples `data`, every row filtered with `filter` (none or up). */
function writeFiltered(
  data: Uint8Array,
  width: number,
  height: number,
  channels: number,
  colorType: 0 | 2 | 4 | 6,
  level: number,
  filter: 'none' | 'up',
): Uint8Array {
  return pngOf(width, height, 8, colorType, filteredScanlines(data, width, height, channels, filter), level);
}

/** The scanlines of 8-bit interleaved samples, each behind its filter byte (none or up). */
function filteredScanlines(data: Uint8Array, width: number, height: number, channels: number, filter: 'none' | 'up'): Uint8Array {
  const rowBytes = width * channels;
  const raw = new Uint8Array(height * (rowBytes + 1));
  const code = filter === 'up' ? 2 : 0;
  for (let y = 0; y < height; y++) {
    const o = y * (rowBytes + 1);
    const r = y * rowBytes;
    raw[o] = code;
    if (code === 0 || y === 0) raw.set(data.subarray(r, r + rowBytes), o + 1);
    else for (let x = 0; x < rowBytes; x++) raw[o + 1 + x] = data[r + x]! - data[r - rowBytes + x]!;
  }
  return raw;
}

/** A PNG of filtered scanlines `raw`: signature, IHDR (no interlace), one IDAT deflated at `level`, IEND. */
function pngOf(width: number, height: number, depth: number, colorType: number, raw: Uint8Array, level: number): Uint8Array {
  return pngOfDeflated(width, height, depth, colorType, deflateSync(raw, { level }));
}

/**
 * A PNG whose filtered scanlines are already deflated (`idat`, a zlib stream): signature, IHDR (no
 * interlace), one IDAT, IEND. For callers that deflate elsewhere (on the thread pool).
 */
function pngOfDeflated(width: number, height: number, depth: number, colorType: number, idat: Uint8Array): Uint8Array {
  const ihdr = new Uint8Array(13);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  ihdr[8] = depth;
  ihdr[9] = colorType; // compression 0, filter 0, interlace 0 follow (zeros)
  return assemble([SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', new Uint8Array(0))]);
}

function assemble(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A single band with a colormap, expanded to 8-bit RGB (opaque) or RGBA. */
function encodeColormapped(block: PixelBlock, info: RasterInfo, level: number, filter: PngOptions['filter']): Uint8Array {
  const { width, height } = block.rect;
  const n = width * height;
  const r = new Uint8Array(n);
  const g = new Uint8Array(n);
  const b = new Uint8Array(n);
  const a = new Uint8Array(n);
  colorize(block.bands[0]!, block.mask, n, colormapLut(info.colormap!), r, g, b, a, false);
  let opaque = true;
  for (let i = 0; i < n && opaque; i++) if (a[i] !== 255) opaque = false;
  const channels = opaque ? 3 : 4;
  const out = new Uint8Array(n * channels);
  for (let i = 0, o = 0; i < n; i++, o += channels) {
    out[o] = r[i]!;
    out[o + 1] = g[i]!;
    out[o + 2] = b[i]!;
    if (!opaque) out[o + 3] = a[i]!;
  }
  return writeWithPngjs(out, width, height, opaque ? 2 : 6, 8, level, filter);
}

// ---- Grey PNGs of bit depth 1, 2 and 4 (PNG specification: chunks, CRC-32, zlib IDAT)

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** node:zlib's native CRC-32 (Node 20.15+, 22.2+), the same function as the table below. */
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/** CRC-32 (ISO 3309, as PNG uses) of `bytes`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  if (nativeCrc32) return nativeCrc32(bytes, crc) >>> 0;
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

const SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

/**
 * A grey PNG (colour type 0) of bit depth 1, 2 or 4 from one value per pixel (already within
 * 0..2^depth - 1): rows packed most significant bits first, each row with filter type 0 (none).
 */
function encodeLowDepthGrey(values: Uint8Array, width: number, height: number, depth: 1 | 2 | 4, level = 6): Uint8Array {
  const rowBytes = Math.ceil((width * depth) / 8);
  const perByte = 8 / depth;
  const raw = new Uint8Array(height * (rowBytes + 1)); // zeroed: filter byte 0 and padding bits
  const maxValue = (1 << depth) - 1;
  for (let y = 0; y < height; y++) {
    const row = y * (rowBytes + 1) + 1;
    for (let x = 0; x < width; x++) {
      const shift = 8 - depth * ((x % perByte) + 1);
      raw[row + Math.floor(x / perByte)]! |= (values[y * width + x]! & maxValue) << shift;
    }
  }
  return pngOf(width, height, depth, 0, raw, level);
}

/**
 * PNG8: an indexed PNG (PLTE + tRNS). Exact when the tile has at most 256 colours (RGBA); else
 * Decision: colours are reduced to a 6x7x6 RGB cube (252 entries) plus a transparent entry, alpha
 * below 128 becoming transparent and the rest opaque — PNG8's price, as in the vendor's PNG8 tiles. The map
 * service's PNG8 tiles and images use it.
 */
export function encodeIndexedPng(rgba: Uint8Array, width: number, height: number): Uint8Array {
  const n = width * height;
  const index = new Uint8Array(n);
  const palette = new Map<number, number>();
  let exact = true;
  for (let i = 0, o = 0; i < n; i++, o += 4) {
    const key = (rgba[o]! << 24) | (rgba[o + 1]! << 16) | (rgba[o + 2]! << 8) | rgba[o + 3]!;
    let k = palette.get(key);
    if (k === undefined) {
      if (palette.size === 256) {
        exact = false;
        break;
      }
      k = palette.size;
      palette.set(key, k);
    }
    index[i] = k;
  }
  let entries: number[];
  if (exact) entries = [...palette.keys()];
  else {
    entries = [0]; // entry 0: transparent
    for (let r = 0; r < 6; r++)
      for (let g = 0; g < 7; g++)
        for (let b = 0; b < 6; b++) entries.push(((r * 51) << 24) | (Math.round(g * 42.5) << 16) | ((b * 51) << 8) | 255);
    for (let i = 0, o = 0; i < n; i++, o += 4) {
      if (rgba[o + 3]! < 128) index[i] = 0;
      else index[i] = 1 + Math.round(rgba[o]! / 51) * 42 + Math.round(rgba[o + 1]! / 42.5) * 6 + Math.round(rgba[o + 2]! / 51);
    }
  }
  const plte = new Uint8Array(entries.length * 3);
  const trns = new Uint8Array(entries.length);
  let lastTranslucent = -1;
  entries.forEach((c, i) => {
    plte[i * 3] = (c >>> 24) & 255;
    plte[i * 3 + 1] = (c >>> 16) & 255;
    plte[i * 3 + 2] = (c >>> 8) & 255;
    trns[i] = c & 255;
    if (trns[i] !== 255) lastTranslucent = i;
  });
  const raw = new Uint8Array(height * (width + 1));
  for (let y = 0; y < height; y++) raw.set(index.subarray(y * width, (y + 1) * width), y * (width + 1) + 1);
  const ihdr = new Uint8Array(13);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  ihdr[8] = 8;
  ihdr[9] = 3;
  return assemble([
    SIGNATURE,
    chunk('IHDR', ihdr),
    chunk('PLTE', plte),
    ...(lastTranslucent >= 0 ? [chunk('tRNS', trns.subarray(0, lastTranslucent + 1))] : []),
    chunk('IDAT', deflateSync(raw, { level: 6 })),
    chunk('IEND', new Uint8Array(0)),
  ]);
}

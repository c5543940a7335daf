/**
 * JPEG encoder, baseline: 1 band of U8 as a greyscale JPEG (one component, jpeg-grey.ts; GDAL reads
 * one band) or 3 bands of U8 as RGB (jpeg-js, YCbCr). JPEG has no transparency: masked pixels are
 * written as 0 (black). Anything else is UNSUPPORTED_INPUT.
 *
 * A single band with a colormap (`info.colormap`) is expanded to RGB first, as the vendor does for
 * JPG exports [spec ColormapToRGB: "applied automatically ... when the export format is JPG or
 * PNG"], with ColormapToRGB's lookup (`colorize`; any real pixel type): values without an entry,
 * entries with alpha 0 and masked pixels are black; partial alpha is ignored.
 */
import { createRequire } from 'node:module';
import type jpegJs from 'jpeg-js';
import { EngineError } from '../core/errors.js';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { colorize, colormapLut } from '../functions/color/colormap-to-rgb.js';
import { encodeGreyJpeg } from './jpeg-grey.js';

/** jpeg-js, loaded on first use (a CommonJS package: not parsed at start-up by commands that never write JPEG). */
let jpegjs: typeof jpegJs | undefined;
const loadJpeg = (): typeof jpegJs => (jpegjs ??= createRequire(import.meta.url)('jpeg-js') as typeof jpegJs);

export interface JpegOptions {
  /** 1-100, default 75 (the vendor's default compressionQuality). */
  readonly quality?: number;
}

export function encodeJpeg(block: PixelBlock, info: RasterInfo, options: JpegOptions = {}): Uint8Array {
  if (block.bands.length === 1 && info.colormap !== undefined) block = expandColormap(block, info);
  if (block.pixelType !== 'U8') {
    throw new EngineError(
      'UNSUPPORTED_INPUT',
      `JPEG holds 8-bit unsigned pixels, not ${block.pixelType}: set outputPixelType to U8, or apply a Stretch first`,
      {
        path: 'outputPixelType',
      },
    );
  }
  const nb = block.bands.length;
  if (nb !== 1 && nb !== 3) {
    throw new EngineError('UNSUPPORTED_INPUT', `JPEG holds 1 or 3 bands, not ${nb}: select bands with ExtractBand first`, {
      path: 'output',
    });
  }
  const quality = options.quality ?? 75;
  if (!(quality >= 1 && quality <= 100)) {
    throw new EngineError('INVALID_ARGUMENT', `quality must be between 1 and 100, got ${quality}`, { path: 'quality' });
  }
  const { width, height } = block.rect;
  const n = width * height;
  const mask = block.mask;
  if (nb === 1) {
    const grey = new Uint8Array(n);
    const band = block.bands[0]!;
    for (let i = 0; i < n; i++) grey[i] = mask[i] === 0 ? 0 : band[i]!;
    return encodeGreyJpeg(grey, width, height, quality);
  }
  const r = block.bands[0]!;
  const g = block.bands[nb === 3 ? 1 : 0]!;
  const b = block.bands[nb === 3 ? 2 : 0]!;
  const rgba = Buffer.alloc(4 * n); // jpeg-js reads RGBA and ignores the alpha
  for (let i = 0, o = 0; i < n; i++, o += 4) {
    if (mask[i] === 0) continue; // stays 0
    rgba[o] = r[i]!;
    rgba[o + 1] = g[i]!;
    rgba[o + 2] = b[i]!;
  }
  return loadJpeg().encode({ data: rgba, width, height }, quality).data;
}

/** A single band with a colormap as a 3-band U8 block; unmapped and alpha-0 pixels masked. */
function expandColormap(block: PixelBlock, info: RasterInfo): PixelBlock {
  const n = block.mask.length;
  const bands = [new Uint8Array(n), new Uint8Array(n), new Uint8Array(n)] as const;
  const alpha = new Uint8Array(n);
  colorize(block.bands[0]!, block.mask, n, colormapLut(info.colormap!), bands[0], bands[1], bands[2], alpha, false);
  const mask = new Uint8Array(n);
  for (let i = 0; i < n; i++) mask[i] = alpha[i] === 0 ? 0 : 1;
  return { rect: block.rect, pixelType: 'U8', bands: [...bands], mask };
}

/**
 * PNG encoder (pngjs): 1 band -> grey, 2 -> grey + alpha (band 2 is the alpha), 3 -> RGB,
 * 4 -> RGBA (band 4 is the alpha). The validity mask becomes alpha: when any pixel is masked, grey
 * and RGB gain an alpha channel that is 0 there (and masked colour values are written as 0);
 * with no masked pixel the image stays opaque and alpha-free. 8-bit for U8, 16-bit for U16.
 * ASSUMPTION (spec silent): U1/U2/U4 are written as 8-bit samples holding their values unscaled
 * (0..1, 0..3, 0..15); pngjs writes only 8- and 16-bit samples. Other types are refused with
 * UNSUPPORTED_INPUT: convert first (outputPixelType U8, or a Stretch).
 */
import { PNG } from 'pngjs';
import { EngineError } from '../core/errors.js';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';

export interface PngOptions {
  /** zlib level 0-9; default 6 (pngjs's own default of 9 is slow for little gain). */
  readonly deflateLevel?: number;
}

/** PNG colour types: 0 grey, 2 RGB, 4 grey + alpha, 6 RGBA. */
const COLOR_TYPE = { 1: 0, 2: 4, 3: 2, 4: 6 } as const;

export function encodePng(block: PixelBlock, _info: RasterInfo, options: PngOptions = {}): Uint8Array {
  const t = block.pixelType;
  const depth = t === 'U16' ? 16 : t === 'U8' || t === 'U1' || t === 'U2' || t === 'U4' ? 8 : undefined;
  if (depth === undefined) {
    throw new EngineError('UNSUPPORTED_INPUT', `PNG holds 8- or 16-bit unsigned pixels, not ${t}: set outputPixelType to U8 (or U16), or apply a Stretch first`, {
      path: 'outputPixelType',
    });
  }
  const nb = block.bands.length;
  if (nb < 1 || nb > 4) {
    throw new EngineError('UNSUPPORTED_INPUT', `PNG holds 1 to 4 bands, not ${nb}: select bands with ExtractBand first`, { path: 'output' });
  }
  const { width, height } = block.rect;
  const n = width * height;
  const mask = block.mask;
  const anyMasked = mask.indexOf(0) >= 0;
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
  const png = new PNG();
  png.width = width;
  png.height = height;
  // pngjs reads 16-bit input through `new Uint16Array(data.buffer)`: hand it the whole buffer.
  png.data = Buffer.from(out.buffer, 0, out.byteLength);
  return PNG.sync.write(png, {
    colorType,
    inputColorType: colorType,
    inputHasAlpha: channels === 2 || channels === 4,
    bitDepth: depth,
    deflateLevel: options.deflateLevel ?? 6,
  });
}

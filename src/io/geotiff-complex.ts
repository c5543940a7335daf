/**
 * Window reads of complex GeoTIFFs (SampleFormat 5 complex integer, 6 complex float), which
 * geotiff.js's `readRasters` rejects. Fetches and decodes the tiles or strips that cross the window
 * with geotiff.js's own source and decoders, then copies (re, im) pairs into interleaved planes:
 * CInt16 and CFloat32 into Float32Array (C64), CInt32 and CFloat64 into Float64Array (C128).
 */
import { getDecoder, type GeoTIFFImage } from 'geotiff';
import type { Plane } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';

export interface ComplexLayout {
  /** 5 complex integer, 6 complex float. */
  readonly sampleFormat: 5 | 6;
  /** Bits of one sample (both parts): 32 / 64 (CInt16 / CInt32), 64 / 128 (CFloat32 / CFloat64). */
  readonly bitsPerSample: number;
  readonly samplesPerPixel: number;
  readonly planar: 1 | 2;
}

type Reader = (view: DataView, offset: number, littleEndian: boolean) => number;

function readerOf(format: 5 | 6, partBytes: number): Reader {
  if (format === 5 && partBytes === 2) return (v, o, le) => v.getInt16(o, le);
  if (format === 5 && partBytes === 4) return (v, o, le) => v.getInt32(o, le);
  if (format === 6 && partBytes === 4) return (v, o, le) => v.getFloat32(o, le);
  if (format === 6 && partBytes === 8) return (v, o, le) => v.getFloat64(o, le);
  throw new Error(`complex SampleFormat ${format} with ${8 * partBytes}-bit parts is not supported`);
}

/** Read `win` (inside the image) of every band of a complex image as interleaved (re, im) planes. */
export async function readComplexWindow(image: GeoTIFFImage, layout: ComplexLayout, win: Rect, signal?: AbortSignal): Promise<Plane[]> {
  const fd = image.getFileDirectory();
  const { samplesPerPixel: spp, planar } = layout;
  const sampleBytes = layout.bitsPerSample / 8;
  const partBytes = sampleBytes / 2;
  const read = readerOf(layout.sampleFormat, partBytes);
  const wide = partBytes === 8 || (layout.sampleFormat === 5 && partBytes === 4);
  const planes: Plane[] = [];
  for (let s = 0; s < spp; s++) planes.push(wide ? new Float64Array(2 * win.width * win.height) : new Float32Array(2 * win.width * win.height));

  const tileW = image.getTileWidth();
  const tileH = image.getTileHeight();
  const across = Math.ceil(image.getWidth() / tileW);
  const down = Math.ceil(image.getHeight() / tileH);
  const compression = Number(fd.getValue('Compression') ?? 1);
  const predictor = Number((await fd.loadValue('Predictor')) ?? 1);
  const bitsPerSample = Array.from((fd.getValue('BitsPerSample') ?? []) as ArrayLike<number>);
  const decoder = await getDecoder(compression, { tileWidth: tileW, tileHeight: tileH, planarConfiguration: planar, bitsPerSample, predictor });
  const offsetsTag = image.isTiled ? 'TileOffsets' : 'StripOffsets';
  const countsTag = image.isTiled ? 'TileByteCounts' : 'StripByteCounts';
  const pixelBytes = planar === 1 ? spp * sampleBytes : sampleBytes;
  const le = image.littleEndian;

  const jobs: Promise<void>[] = [];
  for (let ty = Math.floor(win.y / tileH); ty < Math.min(down, Math.ceil((win.y + win.height) / tileH)); ty++) {
    for (let tx = Math.floor(win.x / tileW); tx < Math.min(across, Math.ceil((win.x + win.width) / tileW)); tx++) {
      for (let chunk = 0; chunk < (planar === 2 ? spp : 1); chunk++) {
        const index = chunk * across * down + ty * across + tx;
        jobs.push(
          (async () => {
            const offset = Number(await fd.loadValueIndexed(offsetsTag, index));
            const count = Number(await fd.loadValueIndexed(countsTag, index));
            if (count === 0) return; // sparse block: zeros
            const [raw] = await image.source.fetch([{ offset, length: count }], signal);
            const data = new DataView(await decoder.decode(raw!));
            const x0 = Math.max(win.x, tx * tileW);
            const x1 = Math.min(win.x + win.width, (tx + 1) * tileW);
            const y0 = Math.max(win.y, ty * tileH);
            const y1 = Math.min(win.y + win.height, (ty + 1) * tileH, image.getHeight());
            const bands = planar === 2 ? [chunk] : Array.from({ length: spp }, (_, i) => i);
            for (const b of bands) {
              const plane = planes[b]!;
              const sampleOffset = planar === 1 ? b * sampleBytes : 0;
              for (let y = y0; y < y1; y++) {
                let src = ((y - ty * tileH) * tileW + (x0 - tx * tileW)) * pixelBytes + sampleOffset;
                let dst = 2 * ((y - win.y) * win.width + (x0 - win.x));
                for (let x = x0; x < x1; x++, src += pixelBytes, dst += 2) {
                  plane[dst] = read(data, src, le);
                  plane[dst + 1] = read(data, src + partBytes, le);
                }
              }
            }
          })(),
        );
      }
    }
  }
  await Promise.all(jobs);
  return planes;
}

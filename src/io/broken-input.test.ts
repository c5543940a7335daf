/**
 * Broken TIFFs are refused, as GDAL refuses them ("TIFFReadEncodedStrip() failed", "Read error
 * at scanline ..."): a file cut short, a block offset past the end, a byte count of 0 beside an
 * offset, a block whose compressed bytes do not decode. Each is an IO_ERROR at `input` whose
 * message names the file and the block; none reads as zeros. Fixtures are broken copies of the
 * bundled rasters made in a temporary folder.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { allocateBlock } from '../core/pixel-block.js';
import { EngineError } from '../core/errors.js';
import { brokenCopies, DEM, getTag, LANDSAT, packCodes, setTag, TAGS } from '../../test/broken-tiff.js';
import { CorruptBlockError, lzwDecode, packBitsDecode } from './decoders.js';
import { openGeoTiff } from './geotiff-source.js';
import { describeRaster } from './info.js';

const files = brokenCopies();
afterAll(files.done);

const WHOLE_DEM = { x: 0, y: 0, width: 383, height: 407 };

/** The error `f` rejects with (it must reject). */
async function failure(f: () => Promise<unknown>): Promise<EngineError> {
  try {
    await f();
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    return e as EngineError;
  }
  throw new Error('expected a rejection, got a result');
}

async function readFailure(path: string, r = WHOLE_DEM, overview = 0): Promise<EngineError> {
  const s = await openGeoTiff(path);
  try {
    return await failure(() => (overview ? s.overview!(overview).read(r) : s.read(r)));
  } finally {
    await s.close();
  }
}

describe('broken TIFFs: IO_ERROR naming the file and the block', () => {
  it('a file cut short: the strip that crosses the end, with read and readInto (GDAL: Read error at scanline)', async () => {
    const cut = files.cut(DEM, 'cut.tif', 300_000);
    const e = await readFailure(cut);
    expect(e).toMatchObject({ code: 'IO_ERROR', path: 'input' });
    expect(e.message).toContain(cut);
    // Strip 39 holds rows 195-199 at 299850..307510: 150 of its 7660 bytes are in the file.
    expect(e.message).toMatch(/strip 39 \(rows 195-199\) of band 1 is cut short: 7660 bytes at offset 299850, only 150/);
    const s = await openGeoTiff(cut);
    try {
      const into = await failure(() => s.readInto!(allocateBlock(WHOLE_DEM, 'F32', 1)));
      expect(into.code).toBe('IO_ERROR');
      expect(into.message).toContain('strip 39');
      // Rows before the cut still read, as GDAL reads them.
      const top = await s.read({ x: 0, y: 0, width: 383, height: 195 });
      expect(top.bands[0]![0]).toBeGreaterThan(200);
    } finally {
      await s.close();
    }
  });

  it('a block offset past the end of the file', async () => {
    const bad = files.copy(DEM, 'offset.tif', (b) => setTag(b, TAGS.StripOffsets, 10, 10_000_000));
    const e = await readFailure(bad);
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toContain(bad);
    expect(e.message).toMatch(/strip 10 \(rows 50-54\) of band 1 starts at offset 10000000, past the end of the file \(624634 bytes\)/);
  });

  it('a byte count of 0 beside an offset, and a byte count too small for the strip', async () => {
    const zero = files.copy(DEM, 'zero.tif', (b) => setTag(b, TAGS.StripByteCounts, 5, 0));
    expect((await readFailure(zero)).message).toMatch(/strip 5 \(rows 25-29\) of band 1 has no data: its byte count is 0/);
    const small = files.copy(DEM, 'small.tif', (b) => setTag(b, TAGS.StripByteCounts, 7, 100));
    const e = await readFailure(small);
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toMatch(/strip 7 \(rows 35-39\) of band 1 does not decode: it holds 100 bytes where its pixels need 7660/);
  });

  it('a sparse block (offset and byte count 0, as GDAL SPARSE_OK writes) still reads as 0', async () => {
    const sparse = files.copy(DEM, 'sparse.tif', (b) => {
      setTag(b, TAGS.StripOffsets, 3, 0);
      setTag(b, TAGS.StripByteCounts, 3, 0);
    });
    const s = await openGeoTiff(sparse);
    try {
      const block = await s.read({ x: 0, y: 15, width: 383, height: 5 });
      expect(block.bands[0]!.every((v) => v === 0)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('garbled DEFLATE bytes and a DEFLATE stream cut short name the strip of the bands', async () => {
    const garbled = files.copy(LANDSAT, 'garbled.tif', (b) => {
      const at = getTag(b, TAGS.StripOffsets, 10);
      for (let i = at; i < at + 64; i++) b[i] = b[i]! ^ 0x5a;
    });
    const e = await readFailure(garbled, { x: 0, y: 0, width: 349, height: 352 });
    expect(e).toMatchObject({ code: 'IO_ERROR', path: 'input' });
    expect(e.message).toContain(garbled);
    expect(e.message).toMatch(/strip 10 \(rows 30-32\) of bands 1-6 does not decode: /);
    const short = files.copy(LANDSAT, 'short.tif', (b) => setTag(b, TAGS.StripByteCounts, 20, 1000));
    expect((await readFailure(short, { x: 0, y: 60, width: 349, height: 3 })).message).toMatch(
      /strip 20 \(rows 60-62\) of bands 1-6 does not decode/,
    );
  });

  it('a broken overview tile is named with its overview', async () => {
    const bad = files.copy(LANDSAT, 'overview.tif', (b) => setTag(b, TAGS.TileOffsets, 1, 5_000_000, 1));
    const e = await readFailure(bad, { x: 0, y: 0, width: 175, height: 176 }, 1);
    expect(e.message).toMatch(/tile 1 \(columns 128-174, rows 0-127\) of bands 1-6 of overview 1 starts at offset 5000000, past the end/);
  });

  it('LZW and PackBits blocks that are corrupt or end early (libtiff: Corrupted LZW table, Not enough data)', async () => {
    // The DEM's first strip replaced by a hand-made stream, its Compression set to match.
    const withStrip = (name: string, compression: number, data: Uint8Array): string =>
      files.copy(DEM, name, (b) => {
        setTag(b, TAGS.Compression, 0, compression);
        b.set(data, getTag(b, TAGS.StripOffsets, 0));
        setTag(b, TAGS.StripByteCounts, 0, data.length);
      });
    const first = { x: 0, y: 0, width: 383, height: 5 };
    const early = await readFailure(withStrip('lzw-short.tif', 5, packCodes([256, 65, 66, 257])), first);
    expect(early.message).toMatch(/strip 0 \(rows 0-4\) of band 1 does not decode: LZW data ends after 2 bytes where the pixels need 7660/);
    const corrupt = await readFailure(withStrip('lzw-bad.tif', 5, packCodes([256, 65, 400, 257])), first);
    expect(corrupt.message).toMatch(/strip 0 \(rows 0-4\) of band 1 does not decode: LZW data is corrupt: code 400/);
    const packbits = await readFailure(withStrip('packbits.tif', 32773, Uint8Array.from([0xfe, 0xaa])), first);
    expect(packbits.message).toMatch(/strip 0 .* PackBits data ends after 3 bytes where the pixels need 7660/);
  });

  it('the decoders throw a CorruptBlockError rather than padding with zeros', () => {
    expect(() => lzwDecode(packCodes([256, 300]), 4)).toThrow(CorruptBlockError);
    expect(() => lzwDecode(packCodes([256, 65, 257]), 4)).toThrow(CorruptBlockError);
    expect(Array.from(lzwDecode(packCodes([256, 65, 257]), 4, 1))).toEqual([65, 0, 0, 0]);
    expect(() => packBitsDecode(Uint8Array.from([0x01, 7]), 2)).toThrow(CorruptBlockError);
  });

  it('a file cut inside its image directories fails when opened, naming the file', async () => {
    // L7's IFDs of the overviews start at 598196.
    const cut = files.cut(LANDSAT, 'cut-ifd.tif', 400_000);
    const e = await failure(() => openGeoTiff(cut));
    expect(e).toMatchObject({ code: 'IO_ERROR', path: 'input' });
    expect(e.message).toContain(cut);
    expect(e.message).toMatch(
      /cut short or corrupt: image directory \(IFD\) 2 needs 2 bytes at offset 598196, 0 are there \(the file has 400000 bytes\)/,
    );
  });

  it('an image directory that contradicts itself is IO_ERROR, not UNSUPPORTED_INPUT', async () => {
    const bad = files.copy(DEM, 'no-width.tif', (b) => setTag(b, 256, 0, 0));
    const e = await failure(() => openGeoTiff(bad));
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toMatch(/the image is corrupt: the image has no width or height/);
  });

  it('describeRaster (rasterflow info) fails where it reads pixels: statistics of a cut file', async () => {
    const cut = files.cut(DEM, 'cut-info.tif', 300_000);
    const e = await failure(() => describeRaster(cut));
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toContain('strip 39');
    // From the header alone (as gdalinfo without -stats) the summary is given, with a warning.
    const warnings: string[] = [];
    const header = await describeRaster(cut, { computeStatistics: false, onWarning: (m) => warnings.push(m) });
    expect(header).toMatchObject({ width: 383, height: 407, statisticsSource: 'none' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/strip 39 .* is cut short.*; reading its pixels will fail$/);
  });
});

/**
 * GDAL-style internal masks (GDAL_TIFF_INTERNAL_MASK=YES): the IFD chain of writeClassicTiff;
 * encodeGeoTiff writing a 1-bit mask IFD for integer rasters without NoData (and only for them);
 * openGeoTiff reading such masks, ours and GDAL's, without mistaking overviews, overview masks or
 * other pages for the mask. The GDAL parts (gdalinfo -json, osgeo through /usr/bin/python3) are
 * skipped, with a warning, when GDAL or its Python bindings are not installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, PIXEL_TYPE_INFO, PIXEL_TYPES, type PixelType, type Plane } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { encodeGeoTiff, type GeoTiffOptions } from './encode-tiff.js';
import { openGeoTiff } from './geotiff-source.js';
import { firstDifference, utmInfoFor, type GdalInfo } from '../../test/helpers.js';
import { writeClassicTiff, type TagValue, type TiffImage } from './tiff-ifd.js';

const DATA = join(dirname(fileURLToPath(import.meta.url)), '../../golden/data');
const PYTHON = '/usr/bin/python3';

const hasGdal = spawnSync('gdalinfo', ['--version']).status === 0;
const hasOsgeo = spawnSync(PYTHON, ['-c', 'from osgeo import gdal']).status === 0;
if (!hasGdal) console.warn('[internal-mask.test] gdalinfo not found: the GDAL cross-checks are SKIPPED (install gdal-bin to run them)');
else if (!hasOsgeo)
  console.warn(`[internal-mask.test] ${PYTHON} has no osgeo: the GDAL mask-array checks are SKIPPED (install python3-gdal to run them)`);

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rasterflow-mask-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// ---- Synthetic rasters

function hash(...v: number[]): number {
  let h = 0x811c9dc5;
  for (const x of v) {
    h = Math.imul(h ^ x, 0x01000193);
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  }
  return (h ^ (h >>> 13)) >>> 0;
}

/** Masked: a diagonal pattern, a solid rectangle, and the first pixel of every row (bit 7 of a byte). */
const maskOf = (x: number, y: number): number => ((3 * x + 5 * y) % 11 === 0 || (x >= 4 && x < 13 && y >= 2 && y < 7) || x === 0 ? 0 : 1);

/** Integer pixels over the whole type range (0 too, so 0 is not a hidden NoData). */
function intBlock(t: PixelType, rect: Rect, bands: number, masked = true): PixelBlock {
  const ti = PIXEL_TYPE_INFO[t];
  const n = rect.width * rect.height;
  const mask = new Uint8Array(n);
  const planes: Plane[] = [];
  for (let b = 0; b < bands; b++) planes.push(allocatePlane(t, n));
  for (let y = 0; y < rect.height; y++) {
    for (let x = 0; x < rect.width; x++) {
      const i = y * rect.width + x;
      mask[i] = masked ? maskOf(x, y) : 1;
      for (let b = 0; b < bands; b++)
        planes[b]![i] = ti.integer ? ti.min + (hash(x, y, b) % (ti.max - ti.min + 1)) : hash(x, y, b) / 7 - 1e8;
    }
  }
  return { rect, pixelType: t, bands: planes, mask };
}

async function readAll(path: string, rect?: Rect): Promise<{ info: RasterInfo; block: PixelBlock }> {
  const source = await openGeoTiff(path);
  try {
    return { info: source.info, block: await source.read(rect ?? { x: 0, y: 0, width: source.info.width, height: source.info.height }) };
  } finally {
    await source.close();
  }
}

function write(name: string, block: PixelBlock, info: RasterInfo, options: GeoTiffOptions = {}): string {
  const path = join(dir, name);
  writeFileSync(path, encodeGeoTiff(block, info, options));
  return path;
}

// ---- A raw IFD walker, independent of geotiff.js

interface RawIfd {
  readonly at: number;
  /** End of the IFD itself. */
  readonly end: number;
  readonly tags: Map<number, number[]>;
  /** [start, end) of every out-of-line tag value. */
  readonly values: [number, number][];
}

function ifdChain(bytes: Uint8Array): RawIfd[] {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  expect(v.getUint16(0, true)).toBe(0x4949);
  expect(v.getUint16(2, true)).toBe(42);
  const out: RawIfd[] = [];
  const size: Record<number, number> = { 2: 1, 3: 2, 4: 4, 12: 8 };
  for (let at = v.getUint32(4, true); at !== 0 && out.length < 50;) {
    const n = v.getUint16(at, true);
    const tags = new Map<number, number[]>();
    const values: [number, number][] = [];
    for (let i = 0; i < n; i++) {
      const p = at + 2 + 12 * i;
      const [tag, type, count] = [v.getUint16(p, true), v.getUint16(p + 2, true), v.getUint32(p + 4, true)];
      const bytesLen = size[type]! * count;
      const start = bytesLen <= 4 ? p + 8 : v.getUint32(p + 8, true);
      if (bytesLen > 4) values.push([start, start + bytesLen]);
      const list: number[] = [];
      if (type === 3) for (let k = 0; k < count; k++) list.push(v.getUint16(start + 2 * k, true));
      if (type === 4) for (let k = 0; k < count; k++) list.push(v.getUint32(start + 4 * k, true));
      tags.set(tag, list);
    }
    const end = at + 2 + 12 * n + 4;
    out.push({ at, end, tags, values });
    at = v.getUint32(end - 4, true);
  }
  return out;
}

const ifdsOf = (path: string): RawIfd[] => ifdChain(new Uint8Array(readFileSync(path)));

// ---- Hand-made TIFFs (strips, uncompressed) for the reader

const short = (...values: number[]): TagValue => ({ type: 'SHORT', values });
const long = (...values: number[]): TagValue => ({ type: 'LONG', values });

/** One-strip U8 grey image. */
function greyImage(w: number, h: number, pixels: Uint8Array, extra: [number, TagValue][] = []): TiffImage {
  const tags = new Map<number, TagValue>([
    [256, long(w)],
    [257, long(h)],
    [258, short(8)],
    [259, short(1)],
    [262, short(1)],
    [277, short(1)],
    [278, long(h)],
    [284, short(1)],
    [339, short(1)],
    ...extra,
  ]);
  return { tags, blocks: [pixels], tiled: false };
}

/** One-strip mask image: 1 bit (MSB-first, rows on whole bytes) or 8 bits (0 / 255). */
function maskStrip(
  w: number,
  h: number,
  valid: (x: number, y: number) => number,
  bits: 1 | 8,
  subfile = 4,
  extra: [number, TagValue][] = [],
): TiffImage {
  const rowBytes = bits === 1 ? Math.ceil(w / 8) : w;
  const data = new Uint8Array(rowBytes * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (!valid(x, y)) continue;
      if (bits === 8) data[y * rowBytes + x] = 255;
      else data[y * rowBytes + (x >> 3)]! |= 0x80 >> (x & 7);
    }
  }
  const tags = new Map<number, TagValue>([
    [254, long(subfile)],
    [256, long(w)],
    [257, long(h)],
    [258, short(bits)],
    [259, short(1)],
    [262, short(4)],
    [277, short(1)],
    [278, long(h)],
    [284, short(1)],
    [339, short(1)],
    ...extra,
  ]);
  return { tags, blocks: [data], tiled: false };
}

const ramp = (w: number, h: number): Uint8Array => new Uint8Array(w * h).map((_, i) => (i * 7) % 256);

// ---- Tests

describe('writeClassicTiff: an IFD chain', () => {
  const a = greyImage(5, 3, ramp(5, 3), [[305, { type: 'ASCII', value: 'a software name longer than four bytes' }]]);
  const b = maskStrip(5, 3, (x) => x % 2, 1);

  it('one image, or a list of one, give the same file: one IFD at byte 8, next-IFD 0', () => {
    const one = writeClassicTiff(a);
    expect(writeClassicTiff([a])).toEqual(one);
    const chain = ifdChain(one);
    expect(chain).toHaveLength(1);
    expect(chain[0]!.at).toBe(8);
  });

  it('two images: chained in order, every IFD and tag value before the first block', () => {
    const bytes = writeClassicTiff([a, b]);
    const chain = ifdChain(bytes);
    expect(chain.map((d) => d.tags.get(254)?.[0])).toEqual([undefined, 4]);
    expect(chain[0]!.at).toBe(8);
    expect(chain[1]!.at).toBeGreaterThan(chain[0]!.end);
    const firstBlock = Math.min(...chain.flatMap((d) => d.tags.get(273)!));
    const headerEnd = Math.max(...chain.flatMap((d) => [d.end, ...d.values.map(([, e]) => e)]));
    expect(headerEnd).toBeLessThanOrEqual(firstBlock);
    // Blocks are where the offsets say, image 0's first.
    const [s0, s1] = [chain[0]!.tags.get(273)![0]!, chain[1]!.tags.get(273)![0]!];
    expect(s0).toBeLessThan(s1);
    expect(bytes.subarray(s0, s0 + 15)).toEqual(a.blocks[0]);
    expect(bytes.subarray(s1, s1 + 3)).toEqual(b.blocks[0]);
    expect(chain[1]!.tags.get(279)).toEqual([3]);
  });

  it('no image is an internal error', () => {
    expect(() => writeClassicTiff([])).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
  });
});

describe('encodeGeoTiff: internal mask for integer rasters without NoData', () => {
  const rect = { x: 0, y: 0, width: 37, height: 23 };
  const integers = PIXEL_TYPES.filter((t) => PIXEL_TYPE_INFO[t].integer);
  for (const t of integers) {
    for (const compress of ['deflate', 'none'] as const) {
      it(`${t}, 2 bands, ${compress}: a 1-bit mask IFD after the main one; the mask round-trips`, async () => {
        const block = intBlock(t, rect, 2);
        const path = write(`${t}-${compress}.tif`, block, utmInfoFor(block), { compress, tileSize: 16 });
        const [main, mask, ...rest] = ifdsOf(path);
        expect(rest).toHaveLength(0);
        expect(main!.tags.has(42113)).toBe(false); // no GDAL_NODATA
        expect(mask!.tags.get(254)).toEqual([4]);
        expect(mask!.tags.get(262)).toEqual([4]);
        expect(mask!.tags.get(258)).toEqual([1]);
        expect(mask!.tags.get(277)).toEqual([1]);
        expect(mask!.tags.get(259)).toEqual([compress === 'deflate' ? 8 : 1]);
        expect(mask!.tags.has(317)).toBe(false); // no predictor
        for (const tag of [256, 257, 322, 323]) expect(mask!.tags.get(tag), `tag ${tag}`).toEqual(main!.tags.get(tag));
        expect(mask!.tags.get(324)).toHaveLength(main!.tags.get(324)!.length / 2); // one plane vs two
        if (compress === 'none') expect(mask!.tags.get(325)).toEqual(new Array(6).fill(32)); // 16 rows of 2 bytes
        const back = await readAll(path);
        expect(back.info.noData).toBeUndefined();
        expect(firstDifference(block, back.block)).toBeUndefined();
      });
    }
  }

  it('three bands of U16 share the one mask; default 256 tiles; partial and outside windows', async () => {
    const block = intBlock('U16', { x: 0, y: 0, width: 300, height: 270 }, 3);
    const path = write('u16-3.tif', block, utmInfoFor(block));
    expect(ifdsOf(path).map((d) => d.tags.get(254)?.[0])).toEqual([undefined, 4]);
    expect(firstDifference(block, (await readAll(path)).block)).toBeUndefined();
    const win = { x: 250, y: -5, width: 60, height: 40 };
    const part = (await readAll(path, win)).block;
    for (let y = 0; y < win.height; y++) {
      for (let x = 0; x < win.width; x++) {
        const [gx, gy] = [win.x + x, win.y + y];
        const inside = gx < 300 && gy >= 0;
        expect(part.mask[y * win.width + x], `(${gx}, ${gy})`).toBe(inside ? maskOf(gx, gy) : 0);
      }
    }
  });

  it('no mask IFD: floats, complex, integers with a NoData, blocks without masked pixels', async () => {
    const cases: [string, PixelBlock, Partial<RasterInfo>, GeoTiffOptions][] = [
      ['F32 without NoData (NaN)', intBlock('F32', { x: 0, y: 0, width: 20, height: 10 }, 1), {}, {}],
      ['F64 with NoData', intBlock('F64', { x: 0, y: 0, width: 20, height: 10 }, 1), { noData: -9999 }, {}],
      ['S16 with info.noData', intBlock('S16', { x: 0, y: 0, width: 20, height: 10 }, 1), { noData: -32768 }, {}],
      ['U8 with options.noData', intBlock('U8', { x: 0, y: 0, width: 20, height: 10 }, 1), {}, { noData: 255 }],
      ['U8 without masked pixels', intBlock('U8', { x: 0, y: 0, width: 20, height: 10 }, 1, false), {}, {}],
      ['U1 without masked pixels', intBlock('U1', { x: 0, y: 0, width: 20, height: 10 }, 1, false), {}, {}],
    ];
    for (const [name, block, extra, options] of cases) {
      const path = write(`none-${name.replace(/\W+/g, '_')}.tif`, block, utmInfoFor(block, extra), options);
      expect(ifdsOf(path), name).toHaveLength(1);
    }
    const c64: PixelBlock = {
      rect: { x: 0, y: 0, width: 2, height: 1 },
      pixelType: 'C64',
      bands: [Float32Array.of(1, 2, 3, 4)],
      mask: Uint8Array.of(0, 1),
    };
    expect(ifdsOf(write('none-c64.tif', c64, utmInfoFor(c64)))).toHaveLength(1);
  });
});

describe('openGeoTiff: which IFD is the mask', () => {
  const [w, h] = [13, 4];
  const pixels = ramp(w, h);
  const valid = (x: number, y: number): number => (x + 2 * y) % 3;
  const expected = Array.from({ length: w * h }, (_, i) => (valid(i % w, Math.floor(i / w)) ? 1 : 0));
  const file = (name: string, images: TiffImage[]): string => {
    const path = join(dir, `${name}.tif`);
    writeFileSync(path, writeClassicTiff(images));
    return path;
  };
  const overview = greyImage(7, 2, ramp(7, 2), [[254, long(1)]]);

  it('a 1-bit mask after image 0', async () => {
    const back = await readAll(file('bit', [greyImage(w, h, pixels), maskStrip(w, h, valid, 1)]));
    expect(Array.from(back.block.mask)).toEqual(expected);
    expect(Array.from(back.block.bands[0]!)).toEqual(Array.from(pixels));
  });

  it('an 8-bit mask (0 / 255)', async () => {
    const back = await readAll(file('byte', [greyImage(w, h, pixels), maskStrip(w, h, valid, 8)]));
    expect(Array.from(back.block.mask)).toEqual(expected);
  });

  it('a mask after the overviews and their masks; image 0 stays the main image', async () => {
    const back = await readAll(
      file('late', [greyImage(w, h, pixels), overview, maskStrip(7, 2, () => 0, 1, 5), maskStrip(w, h, valid, 1)]),
    );
    expect(back.info).toMatchObject({ width: w, height: h });
    expect(Array.from(back.block.mask)).toEqual(expected);
  });

  it('overviews, overview masks (NewSubfileType 5), masks of another size or without photometric 4 are not masks', async () => {
    const notMasks: [string, TiffImage][] = [
      ['overview', overview],
      ['overview mask', maskStrip(7, 2, () => 0, 1, 5)],
      ['full-size mask of subfile 5', maskStrip(w, h, () => 0, 1, 5)],
      ['mask of another size', maskStrip(w - 1, h, () => 0, 1)],
      ['subfile 4 but MinIsBlack', maskStrip(w, h, () => 0, 1, 4, [[262, short(1)]])],
      ['a second page (subfile 2)', maskStrip(w, h, () => 0, 1, 2)],
    ];
    for (const [name, image] of notMasks) {
      const back = await readAll(file(`not-${name.replace(/\W+/g, '_')}`, [greyImage(w, h, pixels), image]));
      expect(
        back.block.mask.every((m) => m === 1),
        name,
      ).toBe(true);
      expect(back.info.width, name).toBe(w);
    }
  });

  it('a mask geotiff.js would misread (FillOrder 2) is UNSUPPORTED_INPUT, not dropped', async () => {
    const path = file('fill2', [greyImage(w, h, pixels), maskStrip(w, h, valid, 1, 4, [[266, short(2)]])]);
    await expect(openGeoTiff(path)).rejects.toMatchObject({ code: 'UNSUPPORTED_INPUT', path: 'input' });
  });

  it('L7_ETMs.tif (internal overviews, no mask): every pixel valid', async () => {
    const back = await readAll(join(DATA, 'L7_ETMs.tif'));
    expect(back.info).toMatchObject({ width: 349, height: 352, bandCount: 6 });
    expect(back.block.mask.every((m) => m === 1)).toBe(true);
  });
});

// ---- GDAL cross-check

function run(tool: string, args: string[]): string {
  const r = spawnSync(tool, args, { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } });
  if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

function gdalinfo(path: string): GdalInfo {
  return JSON.parse(run('gdalinfo', ['-json', path]).replace(/:\s*(-?)(NaN|Infinity)\b/g, ': "$1$2"')) as GdalInfo;
}

const DUMP_MASK = `
import sys
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])
for i in range(ds.RasterCount):
    b = ds.GetRasterBand(i + 1)
    print(b.GetMaskFlags())
    if i == 0:
        open(sys.argv[2], 'wb').write(b.GetMaskBand().ReadRaster())
`;

/** GDAL's mask flags per band and band 1's mask as 0/1 (GDAL reads 0 / 255). */
function gdalMask(path: string): { flags: number[]; mask: number[] } {
  const out = join(dir, `${Math.random().toString(36).slice(2)}.mask`);
  const flags = run(PYTHON, ['-c', DUMP_MASK, path, out]).trim().split('\n').map(Number);
  return { flags, mask: Array.from(readFileSync(out), (v) => (v === 0 ? 0 : 1)) };
}

/** GDAL writes UInt16 bands and a per-dataset internal mask, in one of several layouts. */
const MAKE = `
import sys
from osgeo import gdal
gdal.UseExceptions()
path, w, h, bands, layout, data, mask = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7]
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'YES')
opts = {
    'tiled': ['TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16', 'COMPRESS=DEFLATE', 'INTERLEAVE=BAND'],
    'strips': ['COMPRESS=LZW', 'BLOCKYSIZE=5', 'INTERLEAVE=PIXEL'],
    'overviews-first': ['TILED=YES', 'BLOCKXSIZE=32', 'BLOCKYSIZE=32'],
}[layout]
ds = gdal.GetDriverByName('GTiff').Create(path, w, h, bands, gdal.GDT_UInt16, opts)
raw = open(data, 'rb').read()
n = w * h * 2
for b in range(bands):
    ds.GetRasterBand(b + 1).WriteRaster(0, 0, w, h, raw[b * n:(b + 1) * n])
if layout == 'overviews-first':
    ds.BuildOverviews('NEAREST', [2, 4])
ds.CreateMaskBand(gdal.GMF_PER_DATASET)
ds.GetRasterBand(1).GetMaskBand().WriteRaster(0, 0, w, h, open(mask, 'rb').read())
if layout == 'tiled':
    ds.BuildOverviews('NEAREST', [2, 4])
ds = None
`;

describe('GDAL reads our internal mask', () => {
  for (const [t, bands, compress] of [
    ['U8', 1, 'deflate'],
    ['U8', 1, 'none'],
    ['U16', 3, 'deflate'],
    ['S32', 2, 'deflate'],
    ['U1', 1, 'deflate'],
  ] as const) {
    it.skipIf(!hasGdal)(
      `${t}, ${bands} band(s), ${compress}: gdalinfo says PER_DATASET${hasOsgeo ? "; GDAL's mask equals ours" : ''}`,
      async () => {
        const block = intBlock(t, { x: 0, y: 0, width: 37, height: 23 }, bands);
        const path = write(`gdal-${t}-${bands}-${compress}.tif`, block, utmInfoFor(block), { compress, tileSize: 16 });
        const j = gdalinfo(path);
        expect(j.bands).toHaveLength(bands);
        for (const b of j.bands) {
          expect(b.mask?.flags).toEqual(['PER_DATASET']);
          expect(b.noDataValue).toBeUndefined();
        }
        if (!hasOsgeo) return;
        const g = gdalMask(path);
        expect(g.flags).toEqual(new Array(bands).fill(2)); // GMF_PER_DATASET
        expect(g.mask).toEqual(Array.from(block.mask));
        expect(Array.from((await readAll(path)).block.mask)).toEqual(g.mask);
      },
    );
  }

  it.skipIf(!hasGdal)('without a mask IFD GDAL sees NoData or all-valid, as before', () => {
    const masked = intBlock('S16', { x: 0, y: 0, width: 20, height: 10 }, 1);
    const float = intBlock('F32', { x: 0, y: 0, width: 20, height: 10 }, 1);
    const full = intBlock('U8', { x: 0, y: 0, width: 20, height: 10 }, 1, false);
    const cases: [string, number][] = [
      [write('gdal-nd.tif', masked, utmInfoFor(masked, { noData: -32768 })), 8], // GMF_NODATA
      [write('gdal-f32.tif', float, utmInfoFor(float)), 8],
      [write('gdal-full.tif', full, utmInfoFor(full)), 1], // GMF_ALL_VALID
    ];
    for (const [path, flags] of cases) {
      expect(gdalinfo(path).bands[0].mask, path).toBeUndefined(); // gdalinfo lists only real mask bands
      if (hasOsgeo) expect(gdalMask(path).flags, path).toEqual([flags]);
    }
  });
});

describe('we read the internal masks GDAL writes', () => {
  const [w, h, bands] = [45, 38, 2];
  const block = intBlock('U16', { x: 0, y: 0, width: w, height: h }, bands);

  for (const layout of ['tiled', 'strips', 'overviews-first'] as const) {
    it.skipIf(!hasGdal || !hasOsgeo)(`osgeo CreateMaskBand(GMF_PER_DATASET), ${layout}`, async () => {
      const data = join(dir, `make-${layout}.raw`);
      const mask = join(dir, `make-${layout}.mask`);
      const raw = new Uint16Array(bands * w * h);
      block.bands.forEach((p, b) => raw.set(p, b * w * h));
      writeFileSync(data, new Uint8Array(raw.buffer));
      writeFileSync(
        mask,
        block.mask.map((m) => (m ? 255 : 0)),
      );
      const path = join(dir, `from-gdal-${layout}.tif`);
      run(PYTHON, ['-c', MAKE, path, String(w), String(h), String(bands), layout, data, mask]);
      expect(gdalinfo(path).bands[0].mask?.flags).toEqual(['PER_DATASET']);
      const chain = ifdsOf(path);
      const at = chain.findIndex((d) => d.tags.get(254)?.[0] === 4);
      expect(at).toBeGreaterThan(0);
      // With overviews made first, GDAL appends the mask after them: the reader must look past them.
      if (layout === 'overviews-first') expect(at).toBeGreaterThan(1);
      if (layout !== 'strips') expect(chain.some((d) => d.tags.get(254)?.[0] === 1)).toBe(true);
      const back = await readAll(path);
      expect(back.info).toMatchObject({ width: w, height: h, bandCount: bands, pixelType: 'U16' });
      expect(back.info.noData).toBeUndefined();
      expect(firstDifference(block, back.block)).toBeUndefined();
      expect(Array.from(back.block.mask)).toEqual(gdalMask(path).mask);
      const win = { x: 30, y: 20, width: 20, height: 25 };
      const part = (await readAll(path, win)).block;
      for (let y = 0; y < win.height; y++) {
        for (let x = 0; x < win.width; x++) {
          const [gx, gy] = [win.x + x, win.y + y];
          expect(part.mask[y * win.width + x], `(${gx}, ${gy})`).toBe(gx < w && gy < h ? block.mask[gy * w + gx] : 0);
        }
      }
    });
  }

  for (const [name, args] of [
    ['gdal_translate to LZW strips', ['-co', 'COMPRESS=LZW', '--config', 'GDAL_TIFF_INTERNAL_MASK', 'YES']],
    ['gdal_translate -of COG', ['-of', 'COG', '-co', 'BLOCKSIZE=16']],
  ] as const) {
    it.skipIf(!hasGdal)(`${name}: our file copied by GDAL keeps its mask`, async () => {
      const ours = write(`copy-src-${name.replace(/\W+/g, '_')}.tif`, block, utmInfoFor(block), { tileSize: 16 });
      const path = join(dir, `copy-${name.replace(/\W+/g, '_')}.tif`);
      run('gdal_translate', ['-q', ...args, ours, path]);
      expect(gdalinfo(path).bands[0].mask?.flags).toEqual(['PER_DATASET']);
      const back = await readAll(path);
      expect(firstDifference(block, back.block)).toBeUndefined();
    });
  }
});

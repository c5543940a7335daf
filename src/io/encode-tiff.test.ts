/**
 * GeoTIFF encoder: every pixel type through encodeGeoTiff and back through openGeoTiff (pixels,
 * mask, NoData, grid, EPSG); the NoData policy; and a cross-check against GDAL, which must
 * report what we wrote (gdalinfo -json) and read the same pixels (gdal_translate -of ENVI dumps
 * the raw values). GDAL is also used to make TIFFs in layouts our encoder does not write (strips,
 * pixel-interleaved, LZW, complex integers, NBITS) for the reader. The GDAL parts are skipped,
 * with a warning, when `gdalinfo` is not installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromFile } from 'geotiff';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, PIXEL_TYPE_INFO, PIXEL_TYPES, type PixelType, type Plane } from '../core/pixel-type.js';
import type { Rect } from '../core/rect.js';
import { encodeGeoTiff, type GeoTiffOptions } from './encode-tiff.js';
import { outputNoData } from './tiff-options.js';
import { openGeoTiff } from './geotiff-source.js';
import { firstDifference, utmInfoFor, type GdalInfo } from '../../test/helpers.js';

const DATA = join(dirname(fileURLToPath(import.meta.url)), '../../golden/data');
const GOLDEN = ['jacksboro_fault_dem_utm16n_75m.tif', 'jacksboro_fault_dem_3arcsec.tif', 'olinda_dem_utm25s.tif', 'L7_ETMs.tif'];

const hasGdal = spawnSync('gdalinfo', ['--version']).status === 0;
if (!hasGdal) console.warn('[encode-tiff.test] gdalinfo not found: the GDAL cross-checks are SKIPPED (install gdal-bin to run them)');

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rasterflow-tiff-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// ---- Synthetic rasters

/** A well-mixed 32-bit hash of small integers. */
function hash(...v: number[]): number {
  let h = 0x811c9dc5;
  for (const x of v) {
    h = Math.imul(h ^ x, 0x01000193);
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  }
  return (h ^ (h >>> 13)) >>> 0;
}

/** Pixel values spanning the type, with its extremes at (0, 0) and (1, 0) and a subnormal at (2, 0). */
function valueOf(t: PixelType, x: number, y: number, b: number, part: number): number {
  const ti = PIXEL_TYPE_INFO[t];
  if (y === 0 && x === 0) return ti.min;
  if (y === 0 && x === 1) return ti.max;
  if (ti.integer) return ti.min + (hash(x, y, b, part) % (ti.max - ti.min + 1));
  const f32 = t === 'F32' || t === 'C64';
  if (y === 0 && x === 2) return f32 ? Math.fround(1e-40) : 5e-324;
  const v = (hash(x, y, b, part) / 2 ** 32 - 0.5) * 2e6 + 1 / 3;
  return f32 ? Math.fround(v) : v;
}

const maskOf = (x: number, y: number): number => ((3 * x + 5 * y) % 11 === 0 ? 0 : 1);

/** A block of `bands` bands with values from `valueOf` (avoiding `avoid` in valid pixels). */
function syntheticBlock(t: PixelType, rect: Rect, bands: number, masked: boolean, avoid?: number): PixelBlock {
  const k = PIXEL_TYPE_INFO[t].complex ? 2 : 1;
  const n = rect.width * rect.height;
  const mask = new Uint8Array(n);
  const planes: Plane[] = [];
  for (let b = 0; b < bands; b++) planes.push(allocatePlane(t, n));
  for (let y = 0; y < rect.height; y++) {
    for (let x = 0; x < rect.width; x++) {
      const i = y * rect.width + x;
      mask[i] = masked ? maskOf(x, y) : 1;
      for (let b = 0; b < bands; b++) {
        for (let p = 0; p < k; p++) {
          let v = valueOf(t, x, y, b, p);
          if (p === 0 && v === avoid) v = v === PIXEL_TYPE_INFO[t].max ? v - 1 : v + 1;
          planes[b]![k * i + p] = v;
        }
      }
    }
  }
  return { rect, pixelType: t, bands: planes, mask };
}

async function roundTrip(block: PixelBlock, info: RasterInfo, options: GeoTiffOptions = {}, name = 'rt.tif') {
  const path = join(dir, name);
  writeFileSync(path, encodeGeoTiff(block, info, options));
  const source = await openGeoTiff(path);
  try {
    const back = await source.read({ x: 0, y: 0, width: block.rect.width, height: block.rect.height });
    return { info: source.info, block: back, path };
  } finally {
    await source.close();
  }
}

/** NoData used for the round trips: representable, and avoided by valid pixels. */
const ndFor = (t: PixelType): number => (PIXEL_TYPE_INFO[t].integer ? PIXEL_TYPE_INFO[t].max : -9999);

// ---- Round trips through our own reader

describe('encodeGeoTiff -> openGeoTiff round trip, every pixel type', () => {
  const rect = { x: 0, y: 0, width: 37, height: 23 };
  for (const t of PIXEL_TYPES) {
    for (const compress of ['deflate', 'none'] as const) {
      it(`${t}, 2 bands, masked pixels, NoData, 16x16 tiles, ${compress}`, async () => {
        const nd = ndFor(t);
        const block = syntheticBlock(t, rect, 2, true, nd);
        const info = utmInfoFor(block, { noData: nd });
        const back = await roundTrip(block, info, { compress, tileSize: 16 }, `${t}-${compress}.tif`);
        expect(back.info).toMatchObject({
          width: 37,
          height: 23,
          bandCount: 2,
          pixelType: t,
          noData: nd,
          extent: info.extent,
          cellSize: info.cellSize,
        });
        expect(back.info.spatialReference).toMatchObject({ wkid: 32616, metersPerUnit: 1 });
        expect(firstDifference(block, back.block, { zeroSign: false })).toBeUndefined();
        expect(back.block.mask.filter((m) => m === 0).length).toBeGreaterThan(0);
      });
    }
  }

  it('one band, one tile of the default size (smaller than 256 for a small image)', async () => {
    const block = syntheticBlock('F32', { x: 0, y: 0, width: 5, height: 3 }, 1, false);
    const back = await roundTrip(block, utmInfoFor(block));
    expect(firstDifference(block, back.block, { zeroSign: false })).toBeUndefined();
  });

  it('many tiles of 256 with ragged edges', async () => {
    const block = syntheticBlock('U16', { x: 0, y: 0, width: 600, height: 300 }, 3, true, 0);
    const back = await roundTrip(block, utmInfoFor(block, { noData: 0 }), {}, 'big.tif');
    expect(firstDifference(block, back.block, { zeroSign: false })).toBeUndefined();
  });
});

describe('NoData policy', () => {
  it('outputNoData: options win, floats default to NaN, integers keep a representable info.noData or get none', () => {
    expect(outputNoData('U8', 7, 3)).toEqual({ fill: 7, tag: 7 });
    expect(outputNoData('F32', undefined, undefined)).toEqual({ fill: Number.NaN, tag: Number.NaN });
    expect(outputNoData('F32', undefined, 0.1)).toEqual({ fill: Math.fround(0.1), tag: Math.fround(0.1) });
    expect(outputNoData('F64', undefined, -9999)).toEqual({ fill: -9999, tag: -9999 });
    expect(outputNoData('S16', undefined, -32768)).toEqual({ fill: -32768, tag: -32768 });
    expect(outputNoData('U8', undefined, -9999)).toEqual({ fill: 0, tag: undefined });
    expect(outputNoData('U8', undefined, Number.NaN)).toEqual({ fill: 0, tag: undefined });
    expect(outputNoData('U16', undefined, undefined)).toEqual({ fill: 0, tag: undefined });
    expect(() => outputNoData('U8', 300, undefined)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'noData' }));
    expect(() => outputNoData('S16', 1.5, undefined)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'noData' }));
  });

  it('an integer raster without NoData writes masked pixels as 0, no NoData tag, and keeps its mask (internal mask)', async () => {
    const block = syntheticBlock('U8', { x: 0, y: 0, width: 20, height: 10 }, 1, true);
    const back = await roundTrip(block, utmInfoFor(block));
    expect(back.info.noData).toBeUndefined();
    expect(firstDifference(block, back.block, { zeroSign: false })).toBeUndefined();
    expect(back.block.mask.some((m) => m === 0)).toBe(true);
    // The pixels under the mask are 0 in the file (internal-mask.test.ts checks the mask IFD).
    const tiff = await fromFile(back.path);
    const values = ((await (await tiff.getImage(0)).readRasters({ interleave: false })) as unknown as Uint8Array[])[0]!;
    await tiff.close();
    for (let i = 0; i < block.mask.length; i++) expect(values[i]).toBe(block.mask[i] ? block.bands[0]![i] : 0);
  });

  it('a float raster without NoData gets NaN, so masked pixels survive', async () => {
    const block = syntheticBlock('F32', { x: 0, y: 0, width: 20, height: 10 }, 1, true);
    const back = await roundTrip(block, utmInfoFor(block));
    expect(back.info.noData).toBeNaN();
    expect(firstDifference(block, back.block, { zeroSign: false })).toBeUndefined();
  });

  it('options.noData replaces info.noData', async () => {
    const block = syntheticBlock('S16', { x: 0, y: 0, width: 20, height: 10 }, 1, true, -1);
    const back = await roundTrip(block, utmInfoFor(block, { noData: 5 }), { noData: -1 });
    expect(back.info.noData).toBe(-1);
    expect(firstDifference(block, back.block, { zeroSign: false })).toBeUndefined();
  });

  it('unmasked NaN float pixels read back as masked (NaN is NoData)', async () => {
    const block = syntheticBlock('F64', { x: 0, y: 0, width: 4, height: 1 }, 1, false);
    block.bands[0]![2] = Number.NaN;
    const back = await roundTrip(block, utmInfoFor(block, { noData: -1 }));
    expect(Array.from(back.block.mask)).toEqual([1, 1, 0, 1]);
  });
});

describe('grid, spatial reference and metadata', () => {
  it('a block whose rect indexes a larger grid is placed at its offset', async () => {
    const block = syntheticBlock('U8', { x: 10, y: 4, width: 6, height: 5 }, 1, false);
    const parent: RasterInfo = {
      ...utmInfoFor(block),
      width: 100,
      height: 100,
      extent: { xmin: 1000, ymin: 1000 - 100 * 2, xmax: 1000 + 100 * 2, ymax: 1000 },
      cellSize: { x: 2, y: 2 },
    };
    const back = await roundTrip(block, parent);
    expect(back.info.extent).toEqual({ xmin: 1020, ymax: 992, xmax: 1032, ymin: 982 });
    expect(back.info).toMatchObject({ width: 6, height: 5, cellSize: { x: 2, y: 2 } });
  });

  it('an info of the block size (windowInfo) is the block grid itself', async () => {
    const block = syntheticBlock('U8', { x: 10, y: 4, width: 6, height: 5 }, 1, false);
    const own: RasterInfo = { ...utmInfoFor(block), extent: { xmin: 1020, ymin: 982, xmax: 1032, ymax: 992 }, cellSize: { x: 2, y: 2 } };
    const back = await roundTrip(block, own);
    expect(back.info.extent).toEqual(own.extent);
  });

  it('geographic EPSG:4326, and Web Mercator given as Esri 102100', async () => {
    const block = syntheticBlock('S16', { x: 0, y: 0, width: 8, height: 8 }, 1, false);
    const geo = await roundTrip(block, utmInfoFor(block, { spatialReference: { wkid: 4326, geographic: true } }));
    expect(geo.info.spatialReference).toEqual({ wkid: 4326, geographic: true, proj4: '+proj=longlat +datum=WGS84 +no_defs' });
    const merc = await roundTrip(block, utmInfoFor(block, { spatialReference: { wkid: 102100, metersPerUnit: 1 } }));
    expect(merc.info.spatialReference?.wkid).toBe(3857);
  });

  it('a UTM proj4 string without wkid: WGS 84 becomes its EPSG code, other datums user-defined keys', async () => {
    const block = syntheticBlock('U8', { x: 0, y: 0, width: 8, height: 8 }, 1, false);
    const wgs = await roundTrip(
      block,
      utmInfoFor(block, { spatialReference: { proj4: '+proj=utm +zone=33 +south +datum=WGS84 +units=m +no_defs' } }),
    );
    expect(wgs.info.spatialReference?.wkid).toBe(32733);
    const olinda = '+proj=utm +zone=25 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs';
    const user = await roundTrip(block, utmInfoFor(block, { spatialReference: { proj4: olinda, metersPerUnit: 1 } }));
    expect(user.info.spatialReference).toEqual({ proj4: olinda, metersPerUnit: 1 });
  });

  it('US survey feet survive as metersPerUnit', async () => {
    const block = syntheticBlock('U8', { x: 0, y: 0, width: 8, height: 8 }, 1, false);
    const back = await roundTrip(block, utmInfoFor(block, { spatialReference: { wkid: 2263, metersPerUnit: 1200 / 3937 } }));
    expect(back.info.spatialReference).toMatchObject({ wkid: 2263, metersPerUnit: 1200 / 3937 });
  });

  it('no spatial reference: the grid survives, no SR comes back', async () => {
    const block = syntheticBlock('U8', { x: 0, y: 0, width: 8, height: 8 }, 1, false);
    const { spatialReference: _, ...bare } = utmInfoFor(block);
    const back = await roundTrip(block, bare);
    expect(back.info.spatialReference).toBeUndefined();
    expect(back.info.extent).toEqual(bare.extent);
  });

  it("the statistics written are the pixels' own, never the advertised ones; band names round-trip; no statistics for a window", async () => {
    const block = syntheticBlock('F32', { x: 0, y: 0, width: 8, height: 8 }, 2, true);
    block.bands.forEach((p, b) => p.forEach((_, i) => (p[i] = Math.fround(((i * 37 + b * 11) % 64) * 1.5 - 20))));
    const statistics = [
      { min: 1, max: 2.5, mean: 1.75, stdDev: 0.125 },
      { min: -3, max: 1e-7 },
    ];
    const bandNames = ['red & <near> "infrared"', 'Band_2'];
    const back = await roundTrip(block, utmInfoFor(block, { statistics, bandNames }));
    block.bands.forEach((p, b) => {
      const values = Array.from(p).filter((_, i) => block.mask[i] !== 0);
      const mean = values.reduce((a, v) => a + v, 0) / values.length;
      const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
      const s = back.info.statistics![b]!;
      expect(s).toMatchObject({ min: Math.min(...values), max: Math.max(...values) });
      expect(s.mean).toBeCloseTo(mean, 9);
      expect(s.stdDev).toBeCloseTo(std, 9);
    });
    expect(back.info.bandNames).toEqual(bandNames);
    const window = { ...block, rect: { ...block.rect, x: 1 } };
    const parent = { ...utmInfoFor(block, { statistics, bandNames }), width: 20 };
    const w = await roundTrip(window, parent, {}, 'window.tif');
    expect(w.info.statistics).toBeUndefined();
    expect(w.info.bandNames).toEqual(bandNames);
  });

  it('bad options are INVALID_ARGUMENT', () => {
    const block = syntheticBlock('U8', { x: 0, y: 0, width: 8, height: 8 }, 1, false);
    expect(() => encodeGeoTiff(block, utmInfoFor(block), { tileSize: 20 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'tileSize' }),
    );
    for (const level of [0, 13, 1.5])
      expect(() => encodeGeoTiff(block, utmInfoFor(block), { level })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'level' }),
      );
    expect(() => encodeGeoTiff(block, { ...utmInfoFor(block), cellSize: { x: 0, y: 1 } })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'output' }),
    );
  });

  for (const name of GOLDEN) {
    it(`golden ${name}: read, encode, read back gives the same raster`, async () => {
      const src = await openGeoTiff(join(DATA, name));
      const whole = await src.read({ x: 0, y: 0, width: src.info.width, height: src.info.height });
      await src.close();
      const back = await roundTrip(whole, src.info, {}, `golden-${name}`);
      expect(firstDifference(whole, back.block, { zeroSign: false })).toBeUndefined();
      // The copy carries the statistics of its pixels (the originals carry none).
      const { noData: _a, statistics: _c, ...want } = src.info;
      const { noData: _b, statistics, ...got } = back.info;
      expect(got).toEqual(want);
      expect(statistics).toHaveLength(src.info.bandCount);
    });
  }
});

// ---- GDAL cross-check

/** Run a GDAL tool without side-car files; throws with its stderr on failure. */
function gdal(tool: string, args: string[]): string {
  const r = spawnSync(tool, args, { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } });
  if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** gdalinfo -json, with GDAL's bare NaN / Infinity turned into strings so JSON.parse accepts it. */
function gdalinfo(path: string): GdalInfo {
  return JSON.parse(gdal('gdalinfo', ['-json', path]).replace(/:\s*(-?)(NaN|Infinity)\b/g, ': "$1$2"')) as GdalInfo;
}

/** The pixels GDAL reads, band-sequential, dumped raw by gdal_translate -of ENVI. */
function gdalPixels(path: string, t: PixelType, bands: number, n: number): Plane[] {
  const out = join(dir, `${Math.random().toString(36).slice(2)}.img`);
  // Complex integers (CInt16/CInt32) are read into C64/C128: ask GDAL for complex floats.
  const ot = t === 'C64' ? ['-ot', 'CFloat32'] : t === 'C128' ? ['-ot', 'CFloat64'] : [];
  gdal('gdal_translate', ['-q', '-of', 'ENVI', '-co', 'INTERLEAVE=BSQ', ...ot, path, out]);
  const raw = readFileSync(out);
  const k = PIXEL_TYPE_INFO[t].complex ? 2 : 1;
  const Ctor = allocatePlane(t, 0).constructor as new (b: ArrayBuffer, o: number, l: number) => Plane;
  const all = new Ctor(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength), 0, bands * k * n);
  return Array.from({ length: bands }, (_, b) => all.subarray(b * k * n, (b + 1) * k * n));
}

/** Undefined when equal, else the first differing index and values (fast on big planes). */
function planeDiff(a: ArrayLike<number>, b: ArrayLike<number>): string | undefined {
  if (a.length !== b.length) return `length ${a.length} vs ${b.length}`;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i]) && !(a[i] === 0 && b[i] === 0)) return `index ${i}: ${a[i]} vs ${b[i]}`;
  return undefined;
}

/** What we expect GDAL to read: valid pixels as they were, masked pixels as the fill value. */
function expectedWritten(block: PixelBlock, fill: number): Plane[] {
  const k = PIXEL_TYPE_INFO[block.pixelType].complex ? 2 : 1;
  return block.bands.map((p) => {
    const q = p.slice() as Plane;
    block.mask.forEach((m, i) => {
      if (m === 0) {
        q[k * i] = fill;
        if (k === 2) q[k * i + 1] = 0;
      }
    });
    return q;
  });
}

const GDAL_TYPE: Readonly<Record<PixelType, readonly string[]>> = {
  U1: ['Byte'],
  U2: ['Byte'],
  U4: ['Byte'],
  U8: ['Byte'],
  S8: ['Byte', 'Int8'],
  U16: ['UInt16'],
  S16: ['Int16'],
  U32: ['UInt32'],
  S32: ['Int32'],
  F32: ['Float32'],
  F64: ['Float64'],
  C64: ['CFloat32'],
  C128: ['CFloat64'],
};

describe('GDAL reads what we write', () => {
  const rect = { x: 0, y: 0, width: 37, height: 23 };
  for (const t of PIXEL_TYPES) {
    it.skipIf(!hasGdal)(`${t}: gdalinfo reports size, type, EPSG, grid, NoData; pixels equal`, () => {
      const nd = ndFor(t);
      const block = syntheticBlock(t, rect, 2, true, nd);
      const info = utmInfoFor(block, { noData: nd });
      const path = join(dir, `gdal-${t}.tif`);
      writeFileSync(path, encodeGeoTiff(block, info, { tileSize: 16 }));
      const j = gdalinfo(path);
      expect(j.size).toEqual([37, 23]);
      expect(j.bands).toHaveLength(2);
      for (const b of j.bands) {
        expect(GDAL_TYPE[t]).toContain(b.type);
        expect(b.noDataValue).toBe(nd);
        expect(b.block).toEqual([16, 16]);
      }
      if (PIXEL_TYPE_INFO[t].bits < 8) expect(j.bands[0].metadata.IMAGE_STRUCTURE?.NBITS).toBe(String(PIXEL_TYPE_INFO[t].bits));
      expect(j.stac['proj:epsg']).toBe(32616);
      expect(j.geoTransform).toEqual([500000, 30, 0, 4100000, 0, -30]);
      expect(j.metadata['']?.AREA_OR_POINT).toBe('Area');
      const got = gdalPixels(path, t, 2, rect.width * rect.height);
      const want = expectedWritten(block, nd);
      for (let b = 0; b < 2; b++) expect(planeDiff(got[b]!, want[b]!), `band ${b + 1}`).toBeUndefined();
    });
  }

  it.skipIf(!hasGdal)('3 bands of U8 are RGB for GDAL; 4 bands are grey plus extra samples', () => {
    const rgb = syntheticBlock('U8', { x: 0, y: 0, width: 9, height: 7 }, 3, false);
    const path = join(dir, 'gdal-rgb.tif');
    writeFileSync(path, encodeGeoTiff(rgb, utmInfoFor(rgb)));
    expect(gdalinfo(path).bands.map((b: { colorInterpretation: string }) => b.colorInterpretation)).toEqual(['Red', 'Green', 'Blue']);
    const got = gdalPixels(path, 'U8', 3, 63);
    for (let b = 0; b < 3; b++) expect(planeDiff(got[b]!, rgb.bands[b]!)).toBeUndefined();
    const four = syntheticBlock('U8', { x: 0, y: 0, width: 9, height: 7 }, 4, false);
    writeFileSync(path, encodeGeoTiff(four, utmInfoFor(four)));
    expect(gdalinfo(path).bands.map((b: { colorInterpretation: string }) => b.colorInterpretation)).toEqual([
      'Gray',
      'Undefined',
      'Undefined',
      'Undefined',
    ]);
  });

  it.skipIf(!hasGdal)('NaN NoData, statistics and band descriptions as GDAL sees them', () => {
    const block = syntheticBlock('F32', { x: 0, y: 0, width: 20, height: 10 }, 1, true);
    const path = join(dir, 'gdal-stats.tif');
    writeFileSync(
      path,
      encodeGeoTiff(block, utmInfoFor(block, { statistics: [{ min: -5, max: 7.25, mean: 1, stdDev: 2 }], bandNames: ['elevation (m)'] })),
    );
    const b = gdalinfo(path).bands[0];
    expect(b.noDataValue).toBe('NaN');
    expect(b.description).toBe('elevation (m)');
    // The pixels' statistics, not the advertised ones.
    const values = Array.from(block.bands[0]!).filter((_, i) => block.mask[i] !== 0);
    expect(Number(b.metadata['']?.STATISTICS_MINIMUM)).toBe(Math.min(...values));
    expect(Number(b.metadata['']?.STATISTICS_MAXIMUM)).toBe(Math.max(...values));
    expect(Number(b.metadata['']?.STATISTICS_VALID_PERCENT)).toBeCloseTo((100 * values.length) / 200, 1);
    const got = gdalPixels(path, 'F32', 1, 200)[0]!;
    block.mask.forEach((m, i) => (m ? expect(got[i]).toBe(block.bands[0]![i]) : expect(got[i]).toBeNaN()));
  });

  for (const name of GOLDEN) {
    it.skipIf(!hasGdal)(`golden ${name}: GDAL reads our copy exactly as the original, same CRS`, async () => {
      const src = await openGeoTiff(join(DATA, name));
      const whole = await src.read({ x: 0, y: 0, width: src.info.width, height: src.info.height });
      await src.close();
      const path = join(dir, `gdal-golden-${name}`);
      writeFileSync(path, encodeGeoTiff(whole, src.info));
      const n = src.info.width * src.info.height;
      const ours = gdalPixels(path, src.info.pixelType, src.info.bandCount, n);
      const theirs = gdalPixels(join(DATA, name), src.info.pixelType, src.info.bandCount, n);
      for (let b = 0; b < ours.length; b++) expect(planeDiff(ours[b]!, theirs[b]!), `band ${b + 1}`).toBeUndefined();
      const a = gdalinfo(path);
      const o = gdalinfo(join(DATA, name));
      expect(a.geoTransform).toEqual(o.geoTransform);
      expect(a.stac['proj:epsg']).toEqual(o.stac['proj:epsg']);
      expect(gdal('gdalsrsinfo', ['-o', 'proj4', path]).trim()).toBe(gdal('gdalsrsinfo', ['-o', 'proj4', join(DATA, name)]).trim());
    });
  }
});

describe('we read what GDAL writes', () => {
  const L7 = join(DATA, 'L7_ETMs.tif');
  const DEM = join(DATA, 'olinda_dem_utm25s.tif');
  const cases: { name: string; from: string; args: string[]; type: PixelType; bands: number }[] = [
    {
      name: 'tiled LZW, predictor 2, band-interleaved',
      from: L7,
      args: [
        '-co',
        'TILED=YES',
        '-co',
        'BLOCKXSIZE=64',
        '-co',
        'BLOCKYSIZE=32',
        '-co',
        'COMPRESS=LZW',
        '-co',
        'PREDICTOR=2',
        '-co',
        'INTERLEAVE=BAND',
      ],
      type: 'U8',
      bands: 6,
    },
    {
      name: 'strips, DEFLATE, pixel-interleaved UInt16',
      from: L7,
      args: ['-ot', 'UInt16', '-scale', '0', '255', '0', '65535', '-co', 'COMPRESS=DEFLATE', '-co', 'INTERLEAVE=PIXEL'],
      type: 'U16',
      bands: 6,
    },
    { name: 'PACKBITS Int32', from: DEM, args: ['-ot', 'Int32', '-co', 'COMPRESS=PACKBITS'], type: 'S32', bands: 1 },
    {
      name: 'Float64 with predictor 3',
      from: DEM,
      args: ['-ot', 'Float64', '-co', 'COMPRESS=DEFLATE', '-co', 'PREDICTOR=3', '-co', 'TILED=YES'],
      type: 'F64',
      bands: 1,
    },
    {
      name: 'NBITS=4 band',
      from: L7,
      args: ['-b', '4', '-scale', '0', '255', '0', '15', '-ot', 'Byte', '-co', 'NBITS=4'],
      type: 'U4',
      bands: 1,
    },
    {
      name: 'NBITS=1 tiled',
      from: L7,
      args: ['-b', '4', '-scale', '0', '255', '0', '1.99', '-ot', 'Byte', '-co', 'NBITS=1', '-co', 'TILED=YES'],
      type: 'U1',
      bands: 1,
    },
    {
      name: 'NBITS=12 UInt16, LZW',
      from: L7,
      args: ['-b', '3', '-ot', 'UInt16', '-scale', '0', '255', '0', '4095', '-co', 'NBITS=12', '-co', 'COMPRESS=LZW'],
      type: 'U16',
      bands: 1,
    },
    { name: 'CInt16 (complex integer)', from: DEM, args: ['-ot', 'CInt16'], type: 'C64', bands: 1 },
    {
      name: 'CInt32 tiled deflate',
      from: DEM,
      args: ['-ot', 'CInt32', '-co', 'TILED=YES', '-co', 'BLOCKXSIZE=32', '-co', 'BLOCKYSIZE=32', '-co', 'COMPRESS=DEFLATE'],
      type: 'C128',
      bands: 1,
    },
    { name: 'CFloat32 strips', from: DEM, args: ['-ot', 'CFloat32'], type: 'C64', bands: 1 },
    {
      name: 'CFloat64 two bands, pixel-interleaved',
      from: L7,
      args: ['-b', '1', '-b', '2', '-ot', 'CFloat64', '-co', 'INTERLEAVE=PIXEL'],
      type: 'C128',
      bands: 2,
    },
  ];
  for (const c of cases) {
    it.skipIf(!hasGdal)(`${c.name}: pixels equal GDAL's, partial windows masked`, async () => {
      const path = join(dir, `from-gdal-${c.name.replace(/\W+/g, '_')}.tif`);
      gdal('gdal_translate', ['-q', ...c.args, c.from, path]);
      const src = await openGeoTiff(path);
      try {
        expect(src.info.pixelType).toBe(c.type);
        expect(src.info.bandCount).toBe(c.bands);
        const { width, height } = src.info;
        const theirs = gdalPixels(path, c.type, c.bands, width * height);
        const whole = await src.read({ x: 0, y: 0, width, height });
        for (let b = 0; b < c.bands; b++) expect(planeDiff(whole.bands[b]!, theirs[b]!), `band ${b + 1}`).toBeUndefined();
        const k = PIXEL_TYPE_INFO[c.type].complex ? 2 : 1;
        const part = await src.read({ x: width - 40, y: -7, width: 50, height: 20 });
        const wantMask = new Uint8Array(1000);
        const want = Array.from({ length: c.bands }, () => new Float64Array(k * 1000));
        for (let y = -7; y < 13; y++) {
          for (let x = width - 40; x < width + 10; x++) {
            const i = (y + 7) * 50 + (x - width + 40);
            if (x >= width || y < 0) continue;
            wantMask[i] = 1;
            for (let b = 0; b < c.bands; b++) for (let p = 0; p < k; p++) want[b]![k * i + p] = theirs[b]![k * (y * width + x) + p]!;
          }
        }
        expect(planeDiff(part.mask, wantMask)).toBeUndefined();
        for (let b = 0; b < c.bands; b++) expect(planeDiff(part.bands[b]!, want[b]!), `window band ${b + 1}`).toBeUndefined();
      } finally {
        await src.close();
      }
    });
  }

  it.skipIf(!hasGdal)('a Float32 NoData written with more digits than float32 holds still masks', async () => {
    const path = join(dir, 'from-gdal-nodata-f32.tif');
    gdal('gdal_translate', ['-q', '-a_nodata', '-3.4e38', '-scale', '0', '88', '-3.4e38', '88', '-ot', 'Float32', DEM, path]);
    const src = await openGeoTiff(path);
    const b = await src.read({ x: 0, y: 0, width: 111, height: 111 });
    await src.close();
    const theirs = gdalPixels(path, 'F32', 1, 111 * 111)[0]!;
    let masked = 0;
    for (const v of theirs) if (v === Math.fround(-3.4e38)) masked++;
    expect(masked).toBeGreaterThan(0);
    expect(b.mask.reduce((a, m) => a + (m === 0 ? 1 : 0), 0)).toBe(masked);
  });

  it.skipIf(!hasGdal)('a GDAL NoData value masks those pixels', async () => {
    const path = join(dir, 'from-gdal-nodata.tif');
    gdal('gdal_translate', ['-q', '-a_nodata', '52', DEM, path]);
    const src = await openGeoTiff(path);
    const b = await src.read({ x: 50, y: 55, width: 10, height: 1 }); // 34 40 52 52 52 33 27 22 20 15
    await src.close();
    expect(src.info.noData).toBe(52);
    expect(Array.from(b.mask)).toEqual([1, 1, 0, 0, 0, 1, 1, 1, 1, 1]);
  });
});

/**
 * GeoTIFF source against the golden rasters. Every expected value here was looked up once with
 * GDAL 3.6.2 on this machine and hard-coded, so these tests need no GDAL:
 * - info: `gdalinfo -json golden/data/<file>` (size, bands[].type, bands[].noDataValue,
 *   geoTransform, cornerCoordinates, stac["proj:epsg"]);
 * - pixels: `/usr/bin/python3` with osgeo.gdal, `ds.GetRasterBand(b).ReadAsArray()[y, x]`, and
 *   `float(a.astype(np.float64).sum())` for whole-band sums.
 * Live comparisons against GDAL are in encode-tiff.test.ts (skipped when GDAL is absent).
 */
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocateBlock, type PixelBlock, type RasterInfo } from '../core/pixel-block.js';
import type { Plane } from '../core/pixel-type.js';
import { wasmKernels } from '../wasm/module.js';
import { tileBlocks } from '../wasm/planes.js';
import { readerWasmCalls } from '../wasm/reader.js';
import { encodeGeoTiff, type GeoTiffOptions } from './encode-tiff.js';
import { openGeoTiff, outsizeSource, pixelTypeOf, rasterInfoOf, type GeoTiffSource } from './geotiff-source.js';
import { openRaster } from './source.js';

const DATA = join(dirname(fileURLToPath(import.meta.url)), '../../golden/data');
const UTM = join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif');
const GEO = join(DATA, 'jacksboro_fault_dem_3arcsec.tif');
const OLINDA = join(DATA, 'olinda_dem_utm25s.tif');
const L7 = join(DATA, 'L7_ETMs.tif');

const at = (b: PixelBlock, band: number, x: number, y: number): number => b.bands[band]![(y - b.rect.y) * b.rect.width + (x - b.rect.x)]!;
const maskAt = (b: PixelBlock, x: number, y: number): number => b.mask[(y - b.rect.y) * b.rect.width + (x - b.rect.x)]!;

async function withSource<T>(path: string, f: (s: GeoTiffSource) => Promise<T>): Promise<T> {
  const s = await openGeoTiff(path);
  try {
    return await f(s);
  } finally {
    await s.close();
  }
}

/** A width x height F32 GeoTIFF (pixel grid) of value(i), encoded with `options`, and its plane. */
function f32Tiff(
  width: number,
  height: number,
  value: (i: number) => number,
  options: GeoTiffOptions,
): { bytes: Uint8Array; plane: Plane } {
  const src = allocateBlock({ x: 0, y: 0, width, height }, 'F32', 1);
  const plane = src.bands[0]!;
  for (let i = 0; i < plane.length; i++) plane[i] = value(i);
  const info: RasterInfo = {
    width,
    height,
    bandCount: 1,
    pixelType: 'F32',
    extent: { xmin: 0, ymin: -height, xmax: width, ymax: 0 },
    cellSize: { x: 1, y: 1 },
  };
  return { bytes: encodeGeoTiff(src, info, options), plane };
}

/** `f` over a source opened on `bytes` in a temporary file (removed after). */
async function withTiffBytes<T>(bytes: Uint8Array, f: (s: GeoTiffSource) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'rasterflow-tiff-'));
  try {
    writeFileSync(join(dir, 'in.tif'), bytes);
    return await withSource(join(dir, 'in.tif'), f);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function sum(b: PixelBlock, band: number): number {
  let s = 0;
  for (const v of b.bands[band]!) s += v;
  return s;
}

describe('openGeoTiff: info of the golden rasters (gdalinfo -json)', () => {
  it('jacksboro_fault_dem_utm16n_75m.tif: 383x407 Float32, EPSG:32616, 75 m', async () => {
    const info = await rasterInfoOf(UTM);
    expect(info).toMatchObject({ width: 383, height: 407, bandCount: 1, pixelType: 'F32', cellSize: { x: 75, y: 75 } });
    expect(info.noData).toBeUndefined();
    // geoTransform [732000.0, 75.0, 0.0, 4068150.0, 0.0, -75.0]; lowerRight [760725.0, 4037625.0]
    expect(info.extent).toEqual({ xmin: 732000, ymin: 4037625, xmax: 760725, ymax: 4068150 });
    expect(info.spatialReference).toEqual({ wkid: 32616, proj4: '+proj=utm +zone=16 +datum=WGS84 +units=m +no_defs', metersPerUnit: 1 });
    expect(info.bandNames).toEqual(['elevation (m)']); // bands[0].description
  });

  it('jacksboro_fault_dem_3arcsec.tif: 403x344 Int16, EPSG:4326, geographic', async () => {
    const info = await rasterInfoOf(GEO);
    expect(info).toMatchObject({ width: 403, height: 344, bandCount: 1, pixelType: 'S16' });
    expect(info.noData).toBeUndefined();
    // geoTransform [-84.41375, 0.0008333333333333, 0.0, 36.73291666666667, 0.0, -0.0008333333333333]
    expect(info.extent.xmin).toBe(-84.41375);
    expect(info.extent.ymax).toBe(36.73291666666667);
    expect(info.cellSize.x).toBeCloseTo(0.0008333333333333, 15);
    expect(info.cellSize.y).toBeCloseTo(0.0008333333333333, 15);
    expect(info.extent.xmax).toBeCloseTo(-84.0779167, 7); // cornerCoordinates.lowerRight
    expect(info.extent.ymin).toBeCloseTo(36.44625, 7);
    expect(info.spatialReference).toEqual({ wkid: 4326, proj4: '+proj=longlat +datum=WGS84 +no_defs', geographic: true });
  });

  it('olinda_dem_utm25s.tif: user-defined UTM 25S keeps its grid and a proj4 string, no wkid', async () => {
    const info = await rasterInfoOf(OLINDA);
    expect(info).toMatchObject({ width: 111, height: 111, bandCount: 1, pixelType: 'F32' });
    // geoTransform [288776.25000080315, 89.99406734945116, 0.0, 9120760.750028737, 0.0, -89.99406734945116]
    expect(info.extent.xmin).toBe(288776.25000080315);
    expect(info.extent.ymax).toBe(9120760.750028737);
    expect(info.cellSize).toEqual({ x: 89.99406734945116, y: 89.99406734945116 });
    expect(info.extent.xmax).toBeCloseTo(298765.591, 3);
    expect(info.extent.ymin).toBeCloseTo(9110771.409, 3);
    expect(info.spatialReference?.wkid).toBeUndefined(); // stac proj:epsg is null
    // `gdalsrsinfo -o proj4 golden/data/olinda_dem_utm25s.tif`
    expect(info.spatialReference?.proj4).toBe('+proj=utm +zone=25 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs');
    expect(info.spatialReference?.metersPerUnit).toBe(1);
  });

  it('L7_ETMs.tif: 349x352, 6 x Byte, EPSG:31985, 28.5 m (deflate, pixel-interleaved, with overviews)', async () => {
    const info = await rasterInfoOf(L7);
    expect(info).toMatchObject({ width: 349, height: 352, bandCount: 6, pixelType: 'U8' });
    expect(info.cellSize.x).toBe(28.49999999927454);
    expect(info.extent.xmin).toBe(288776.25000080315);
    expect(info.extent.ymax).toBe(9120760.750028737);
    expect(info.extent.xmax).toBeCloseTo(298722.75, 3);
    expect(info.extent.ymin).toBeCloseTo(9110728.75, 3);
    expect(info.spatialReference).toMatchObject({ wkid: 31985, metersPerUnit: 1 });
    // osr ImportFromEPSG(31985).ExportToProj4()
    expect(info.spatialReference?.proj4).toBe('+proj=utm +zone=25 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs');
    expect(info.bandNames).toBeUndefined();
    expect(info.statistics).toBeUndefined();
  });
});

describe('openGeoTiff: pixels equal GDAL', () => {
  it('reads sample pixels of every file', async () => {
    const samples: [string, number, [number, number, number][]][] = [
      [
        UTM,
        0,
        [
          [0, 0, 396.7926940917969],
          [1, 0, 395.41064453125],
          [382, 0, 452.5518493652344],
          [0, 406, 885.3450927734375],
          [382, 406, 274.45928955078125],
          [191, 203, 562.4725952148438],
          [123, 45, 512.69482421875],
          [200, 300, 780.3209228515625],
        ],
      ],
      [
        GEO,
        0,
        [
          [0, 0, 483],
          [1, 0, 487],
          [402, 0, 444],
          [0, 343, 545],
          [402, 343, 272],
          [201, 172, 583],
          [123, 45, 515],
          [200, 300, 703],
        ],
      ],
      [
        OLINDA,
        0,
        [
          [0, 0, 38],
          [1, 0, 49],
          [110, 0, 5],
          [0, 110, 12],
          [110, 110, 0],
          [55, 55, 33],
        ],
      ],
      [
        L7,
        3,
        [
          [0, 0, 79],
          [1, 0, 75],
          [348, 0, 81],
          [0, 351, 42],
          [348, 351, 13],
          [174, 176, 72],
          [123, 45, 115],
          [200, 300, 58],
        ],
      ],
      [
        L7,
        5,
        [
          [0, 0, 46],
          [1, 0, 49],
          [348, 0, 135],
          [0, 351, 50],
          [348, 351, 12],
          [174, 176, 60],
          [123, 45, 45],
          [200, 300, 68],
        ],
      ],
    ];
    for (const [path, band, points] of samples) {
      await withSource(path, async (s) => {
        for (const [x, y, v] of points) {
          const b = await s.read({ x, y, width: 1, height: 1 });
          expect(b.bands[band]![0], `${path} band ${band + 1} (${x}, ${y})`).toBe(v);
          expect(b.mask[0]).toBe(1);
        }
      });
    }
  });

  it('whole-band sums match GDAL (Float32, Int16, 6 x Byte)', async () => {
    await withSource(UTM, async (s) => {
      const b = await s.read({ x: 0, y: 0, width: 383, height: 407 });
      expect(b.bands[0]).toBeInstanceOf(Float32Array);
      expect(sum(b, 0) / 83450053.00587463).toBeCloseTo(1, 12);
    });
    await withSource(GEO, async (s) => {
      const b = await s.read({ x: 0, y: 0, width: 403, height: 344 });
      expect(b.bands[0]).toBeInstanceOf(Int16Array);
      expect(sum(b, 0)).toBe(73617913);
    });
    await withSource(L7, async (s) => {
      const b = await s.read({ x: 0, y: 0, width: 349, height: 352 });
      expect(b.bands.map((p) => p.constructor)).toEqual(new Array(6).fill(Uint8Array));
      expect(b.bands.map((_, i) => sum(b, i))).toEqual([9723139, 8301410, 7906357, 7276952, 10218824, 7367834]);
      expect(b.mask.every((m) => m === 1)).toBe(true);
    });
  });

  it('a window past the bottom-right corner: mask 0 and value 0 outside, GDAL values inside', async () => {
    await withSource(UTM, async (s) => {
      const b = await s.read({ x: 380, y: 404, width: 5, height: 5 });
      // a[404:407, 380:383] from GDAL
      const inside = [
        274.24072265625, 276.6144714355469, 277.5286865234375, 273.4276123046875, 274.6768798828125, 274.815185546875, 273.6101379394531,
        275.1456604003906, 274.45928955078125,
      ];
      for (let y = 404; y < 409; y++) {
        for (let x = 380; x < 385; x++) {
          const inRaster = x < 383 && y < 407;
          expect(maskAt(b, x, y), `(${x}, ${y})`).toBe(inRaster ? 1 : 0);
          expect(at(b, 0, x, y)).toBe(inRaster ? inside[(y - 404) * 3 + (x - 380)] : 0);
        }
      }
    });
  });

  it('a window past the top-left corner of a multiband raster (L7, bands 1..6)', async () => {
    await withSource(L7, async (s) => {
      const b = await s.read({ x: -3, y: 349, width: 5, height: 6 });
      // a[b, 350:352, 0:2] from GDAL
      const inside = [
        [67, 68, 65, 74],
        [51, 53, 46, 58],
        [48, 44, 40, 55],
        [60, 75, 42, 66],
        [88, 78, 68, 79],
        [65, 48, 50, 54],
      ];
      for (let y = 349; y < 355; y++) {
        for (let x = -3; x < 2; x++) {
          const inRaster = x >= 0 && y < 352;
          expect(maskAt(b, x, y)).toBe(inRaster ? 1 : 0);
          for (let band = 0; band < 6; band++) {
            const want = inRaster && y >= 350 ? inside[band]![(y - 350) * 2 + x]! : inRaster ? at(b, band, x, y) : 0;
            expect(at(b, band, x, y)).toBe(want);
          }
        }
      }
    });
    await withSource(GEO, async (s) => {
      const b = await s.read({ x: 400, y: -1, width: 4, height: 3 });
      expect(Array.from(b.mask)).toEqual([0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0]);
      expect(Array.from(b.bands[0]!)).toEqual([0, 0, 0, 0, 446, 431, 444, 0, 432, 440, 457, 0]); // a[0:2, 400:403]
    });
  });

  it('a window entirely outside the raster is all mask 0, zeros, of the pixel type', async () => {
    await withSource(OLINDA, async (s) => {
      const b = await s.read({ x: 200, y: -50, width: 3, height: 2 });
      expect(b.pixelType).toBe('F32');
      expect(b.bands[0]).toBeInstanceOf(Float32Array);
      expect(Array.from(b.mask)).toEqual([0, 0, 0, 0, 0, 0]);
      expect(Array.from(b.bands[0]!)).toEqual([0, 0, 0, 0, 0, 0]);
    });
  });

  it('olinda row 55, columns 50..59', async () => {
    await withSource(OLINDA, async (s) => {
      const b = await s.read({ x: 50, y: 55, width: 10, height: 1 });
      expect(Array.from(b.bands[0]!)).toEqual([34, 40, 52, 52, 52, 33, 27, 22, 20, 15]);
    });
  });
});

describe("readInto: into the caller's block, overwritten whole", () => {
  /** A block of `rect` for `s` holding garbage (values 7, mask 1), as a reused block would. */
  const dirty = (s: GeoTiffSource, rect: PixelBlock['rect']): PixelBlock => {
    const b = allocateBlock(rect, s.info.pixelType, s.info.bandCount);
    for (const p of b.bands) p.fill(7);
    return b;
  };
  const windows = [
    { x: 0, y: 0, width: 64, height: 48 }, // inside
    { x: 100, y: 90, width: 300, height: 300 }, // past the bottom-right corner
    { x: -3, y: -5, width: 20, height: 9 }, // past the top-left corner
    { x: -2, y: 7, width: 9, height: 5 }, // past the left edge only
    { x: -2, y: 3, width: 2000, height: 4 }, // past the left and right edges
    { x: 5, y: -4, width: 6, height: 2000 }, // past the top and bottom edges
    { x: 1000, y: 1000, width: 4, height: 4 }, // outside
  ];

  it('equals read() on every golden file (Float32, Int16 with NoData, 6 x Byte), inside and past the edges', async () => {
    for (const path of [UTM, GEO, OLINDA, L7]) {
      await withSource(path, async (s) => {
        for (const w of windows) {
          const want = await s.read(w);
          const into = dirty(s, w);
          const got = await s.readInto!(into);
          expect(got, `${path} ${JSON.stringify(w)}`).toBe(into);
          expect(got).toEqual(want);
        }
      });
    }
  });

  it('equals read() on an uncompressed tiled file (blocks read straight into scratch buffers), reused block after block', async () => {
    const { bytes, plane } = f32Tiff(80, 70, (i) => (i % 13 === 0 ? Number.NaN : Math.sin(i) * 100), { compress: 'none', tileSize: 16 });
    await withTiffBytes(bytes, async (s) => {
      const block = dirty(s, { x: 0, y: 0, width: 32, height: 32 });
      for (const [x, y] of [
        [0, 0],
        [16, 32],
        [5, 3],
        [64, 48],
      ] as const) {
        const w = { x, y, width: 32, height: 32 };
        const got = await s.readInto!({ ...block, rect: w });
        expect(got).toEqual(await s.read(w));
      }
      const rect = { x: 0, y: 0, width: 80, height: 70 };
      const whole = await s.readInto!(dirty(s, rect));
      expect(Array.from(whole.mask).filter((m) => m === 0).length).toBe(Array.from(plane).filter((v) => Number.isNaN(v)).length);
      expect(whole).toEqual(await s.read(rect));
    });
  });

  it.skipIf(wasmKernels() === undefined)(
    'equals read() into blocks in wasm memory (a render tile), F32 and F64 with NaN and NoData: the mask computed in wasm',
    async () => {
      for (const pixelType of ['F32', 'F64'] as const) {
        const width = 90;
        const height = 70;
        const src = allocateBlock({ x: 0, y: 0, width, height }, pixelType, 1);
        const plane = src.bands[0]!;
        for (let i = 0; i < plane.length; i++) plane[i] = i % 13 === 0 ? Number.NaN : i % 17 === 0 ? -9999.5 : Math.sin(i) * 100;
        const info: RasterInfo = {
          width,
          height,
          bandCount: 1,
          pixelType,
          noData: -9999.5,
          extent: { xmin: 0, ymin: -height, xmax: width, ymax: 0 },
          cellSize: { x: 1, y: 1 },
        };
        for (const compress of ['deflate', 'none'] as const) {
          await withTiffBytes(encodeGeoTiff(src, info, { compress, tileSize: 16 }), async (s) => {
            for (const w of [{ x: 0, y: 0, width: 90, height: 70 }, { x: 7, y: 5, width: 33, height: 21 }, ...windows]) {
              const blocks = tileBlocks()!;
              try {
                const into = blocks.allocate(w, pixelType, 1);
                into.bands[0]!.fill(7);
                const before = readerWasmCalls();
                const got = await s.readInto!(into);
                const inside = w.x < width && w.y < height;
                expect(readerWasmCalls(), `${pixelType} ${compress} ${JSON.stringify(w)}: the wasm mask`).toBe(before + (inside ? 1 : 0));
                const want = await s.read(w);
                expect(Array.from(got.mask)).toEqual(Array.from(want.mask));
                expect(Array.from(got.bands[0]!)).toEqual(Array.from(want.bands[0]!));
                if (inside && w.width > 20) expect(got.mask.includes(0)).toBe(true);
              } finally {
                blocks.release();
              }
            }
          });
        }
      }
    },
  );

  it('a read that fails (a corrupt DEFLATE tile) rejects only when nothing writes into the block any more', async () => {
    // 16 tiles of 256 x 256: the first one fails at once while the others still inflate.
    const { bytes } = f32Tiff(1024, 1024, (i) => Math.sin(i / 7) * 1000 + (i % 97), { compress: 'deflate', tileSize: 256 });
    // Garble the start of the first tile's zlib stream (right after the header block).
    const first = bytes.length - Math.floor((bytes.length * 15.5) / 16);
    for (let i = first; i < first + 64; i++) bytes[i] = bytes[i]! ^ 0x5a;
    await withTiffBytes(bytes, async (s) => {
      const block = allocateBlock({ x: 0, y: 0, width: 1024, height: 1024 }, 'F32', 1);
      await expect(s.readInto!(block)).rejects.toMatchObject({ code: 'IO_ERROR' });
      const after = block.bands[0]!.slice();
      await new Promise((r) => setTimeout(r, 100));
      const now = block.bands[0] as Float32Array;
      let changed = 0;
      for (let i = 0; i < now.length; i++) if (!Object.is(now[i], after[i])) changed++;
      expect(changed, 'pixels written after the read rejected').toBe(0);
    });
  });

  it('refuses a block that does not fit, naming the field', async () => {
    await withSource(L7, async (s) => {
      const r = { x: 0, y: 0, width: 4, height: 3 };
      const good = allocateBlock(r, 'U8', 6);
      const cases: [PixelBlock, string][] = [
        [{ ...good, pixelType: 'U16' }, 'block.pixelType'],
        [{ ...good, bands: good.bands.slice(1) }, 'block.bands'],
        [{ ...good, bands: [...good.bands.slice(0, 5), new Uint8Array(11)] }, 'block.bands[5]'],
        [{ ...good, bands: [new Uint16Array(12), ...good.bands.slice(1)] }, 'block.bands[0]'],
        [{ ...good, mask: new Uint8Array(13) }, 'block.mask'],
        [{ ...good, rect: { x: 0.5, y: 0, width: 4, height: 3 } }, 'block.rect'],
        [{ ...good, rect: { x: 0, y: 0, width: 0, height: 3 } }, 'block.rect'],
      ];
      for (const [block, path] of cases) await expect(s.readInto!(block)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path });
    });
    const s = await openGeoTiff(OLINDA);
    await s.close();
    await expect(s.readInto!(allocateBlock({ x: 0, y: 0, width: 1, height: 1 }, 'F32', 1))).rejects.toMatchObject({ code: 'IO_ERROR' });
  });
});

describe('outsizeSource: the whole raster at another size, from the overview GDAL would choose', () => {
  it('tiles agree with the whole; a 4x reduction reads the 4x overview; the grid follows the extent', async () => {
    await withSource(L7, async (s) => {
      expect(s.overviews).toEqual([
        { width: 175, height: 176 },
        { width: 88, height: 88 },
        { width: 44, height: 44 },
        { width: 22, height: 22 },
      ]);
      const small = outsizeSource(s, 88, 88);
      expect(small.info).toMatchObject({ width: 88, height: 88, bandCount: 6, extent: s.info.extent });
      expect(small.info.cellSize.x).toBeCloseTo((s.info.extent.xmax - s.info.extent.xmin) / 88, 9);
      const whole = await small.read({ x: 0, y: 0, width: 88, height: 88 });
      expect(whole).toEqual(await s.overview!(2).read({ x: 0, y: 0, width: 88, height: 88 }));
      // 100 x 37: a 3.49 x 9.5 reduction; the smaller one decides, with GDAL's 1.2 leeway the 4x
      // overview (349 / 88 = 3.97 <= 3.49 x 1.2; gdal_translate picks it too: test/cli.test.ts).
      const odd = outsizeSource(s, 100, 37);
      const all = await odd.read({ x: -2, y: -3, width: 104, height: 42 });
      for (const [x, y, w, h] of [
        [0, 0, 7, 5],
        [93, 30, 9, 9],
        [-2, -3, 4, 4],
        [50, 10, 1, 1],
      ] as const) {
        const t = await odd.read({ x, y, width: w, height: h });
        for (let j = 0; j < h; j++) {
          for (let i = 0; i < w; i++) {
            const a = (j + y + 3) * 104 + (i + x + 2);
            expect(t.mask[j * w + i]).toBe(all.mask[a]);
            for (let b = 0; b < 6; b++) expect(t.bands[b]![j * w + i]).toBe(all.bands[b]![a]);
          }
        }
      }
      const ov2 = await s.overview!(2).read({ x: 0, y: 0, width: 88, height: 88 });
      // Output (10, 20) takes level column floor(10.5 * 88 / 100) = 9, row floor(20.5 * 88 / 37) = 48.
      for (let b = 0; b < 6; b++) expect(all.bands[b]![(20 + 3) * 104 + (10 + 2)]).toBe(ov2.bands[b]![48 * 88 + 9]);
      expect(all.mask[0]).toBe(0); // outside
      expect(() => outsizeSource(s, 0, 5)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'outsize' }));
    });
  });
});

describe('pixelTypeOf (SampleFormat, BitsPerSample)', () => {
  it('maps the TIFF sample formats to pixel types', () => {
    const cases: [number, number, string | undefined][] = [
      [1, 1, 'U1'],
      [1, 2, 'U2'],
      [1, 4, 'U4'],
      [1, 8, 'U8'],
      [1, 16, 'U16'],
      [1, 32, 'U32'],
      [1, 12, 'U16'],
      [1, 3, 'U8'],
      [1, 64, undefined],
      [2, 8, 'S8'],
      [2, 16, 'S16'],
      [2, 32, 'S32'],
      [2, 64, undefined],
      [3, 16, 'F32'],
      [3, 32, 'F32'],
      [3, 64, 'F64'],
      [3, 24, undefined],
      [5, 32, 'C64'],
      [5, 64, 'C128'],
      [6, 64, 'C64'],
      [6, 128, 'C128'],
      [6, 32, undefined],
      [4, 8, undefined],
    ];
    for (const [format, bits, want] of cases) expect(pixelTypeOf(format, bits), `${format}/${bits}`).toBe(want);
  });
});

describe('openGeoTiff / openRaster: errors', () => {
  it('a missing file is IO_ERROR at input, naming the file', async () => {
    const missing = join(DATA, 'no-such-file.tif');
    await expect(openGeoTiff(missing)).rejects.toMatchObject({
      code: 'IO_ERROR',
      path: 'input',
      message: expect.stringContaining('no-such-file.tif'),
    });
  });

  it('a file that is not a TIFF is IO_ERROR naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rasterflow-io-'));
    const notTiff = join(dir, 'notes.tif');
    writeFileSync(notTiff, 'just some text, not an image');
    try {
      await expect(openGeoTiff(notTiff)).rejects.toMatchObject({
        code: 'IO_ERROR',
        path: 'input',
        message: expect.stringMatching(/notes\.tif.*not a TIFF/),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a directory is IO_ERROR', async () => {
    await expect(openGeoTiff(DATA)).rejects.toMatchObject({ code: 'IO_ERROR', path: 'input' });
  });

  it('an ArcGIS ImageServer URL fails at open time without a request', async () => {
    const url = 'https://example.com/arcgis/rest/services/Elevation/ImageServer';
    await expect(openRaster(url)).rejects.toMatchObject({
      code: 'IO_ERROR',
      path: 'input',
      message: expect.stringContaining('only COG/GeoTIFF URLs are readable'),
    });
  });

  it('openRaster refuses other schemes and formats that have no reader', async () => {
    await expect(openRaster('s3://bucket/dem.tif')).rejects.toMatchObject({ code: 'IO_ERROR', path: 'input' });
    await expect(openRaster(join(DATA, 'picture.png'))).rejects.toMatchObject({
      code: 'IO_ERROR',
      message: expect.stringContaining('GeoTIFF'),
    });
  });

  it('an aborted signal is ABORTED, at open and at read', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(openGeoTiff(UTM, { signal: ac.signal })).rejects.toMatchObject({ code: 'ABORTED' });
    await withSource(UTM, async (s) => {
      await expect(s.read({ x: 0, y: 0, width: 10, height: 10 }, ac.signal)).rejects.toMatchObject({ code: 'ABORTED' });
    });
  });

  it('reads after close fail with IO_ERROR', async () => {
    const s = await openGeoTiff(OLINDA);
    await s.close();
    await expect(s.read({ x: 0, y: 0, width: 1, height: 1 })).rejects.toMatchObject({ code: 'IO_ERROR' });
  });

  it('the node id defaults to the location and can be set', async () => {
    await withSource(OLINDA, async (s) => expect(s.id).toBe(OLINDA));
    const s = await openGeoTiff(OLINDA, { id: 'dem' });
    try {
      expect(s.id).toBe('dem');
      expect(s.kind).toBe('source');
    } finally {
      await s.close();
    }
  });
});

describe('openGeoTiff over HTTP (range requests)', () => {
  let server: Server;
  let base = '';
  const served: { path: string; bytes: number }[] = [];
  const files: Record<string, Buffer> = {
    '/dem.tif': readFileSync(UTM),
    '/l7.tif': readFileSync(L7),
    '/page.html': Buffer.from('<html>hello</html>'),
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const body = files[path];
      if (!body) {
        res.writeHead(404).end();
        return;
      }
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
      if (!m) {
        served.push({ path, bytes: body.length });
        res.writeHead(200, { 'content-length': body.length }).end(body);
        return;
      }
      const start = Number(m[1]);
      const end = Math.min(m[2] ? Number(m[2]) : body.length - 1, body.length - 1);
      const part = body.subarray(start, end + 1);
      served.push({ path, bytes: part.length });
      res
        .writeHead(206, {
          'content-range': `bytes ${start}-${end}/${body.length}`,
          'content-length': part.length,
          'accept-ranges': 'bytes',
        })
        .end(part);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('reads a window of a remote GeoTIFF with ranges, not the whole file', async () => {
    served.length = 0;
    const s = await openRaster(`${base}/dem.tif`);
    expect(s.info).toMatchObject({ width: 383, height: 407, pixelType: 'F32', spatialReference: { wkid: 32616 } });
    const b = await s.read({ x: 123, y: 45, width: 1, height: 1 });
    expect(b.bands[0]![0]).toBe(512.69482421875);
    const total = served.filter((r) => r.path === '/dem.tif').reduce((a, r) => a + r.bytes, 0);
    expect(total).toBeLessThan(files['/dem.tif']!.length / 2);
    await s.close();
  });

  it('reads a compressed multiband remote file', async () => {
    const s = await openRaster(`${base}/l7.tif`);
    const b = await s.read({ x: 200, y: 300, width: 1, height: 1 });
    expect(b.bands.map((p) => p[0])).toEqual([96, 82, 85, 58, 89, 68]);
    await s.close();
  });

  it('a URL that is not a TIFF, or is missing, is IO_ERROR saying only COG/GeoTIFF URLs are readable', async () => {
    await expect(openRaster(`${base}/page.html`)).rejects.toMatchObject({
      code: 'IO_ERROR',
      path: 'input',
      message: expect.stringContaining('only COG/GeoTIFF URLs are readable'),
    });
    await expect(openRaster(`${base}/missing.tif`)).rejects.toMatchObject({ code: 'IO_ERROR', path: 'input' });
  });
});

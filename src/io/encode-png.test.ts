/**
 * PNG encoder: decoded back with pngjs (values, bit depth, colour type, alpha from the mask and the
 * colormap), and read back by GDAL (skipped with a warning when GDAL is absent).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Colormap, PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, PIXEL_TYPE_INFO, type PixelType } from '../core/pixel-type.js';
import { crc32, encodePng } from './encode-png.js';

const hasGdal =
  spawnSync('gdalinfo', ['--version']).status === 0 && spawnSync('/usr/bin/python3', ['-c', 'from osgeo import gdal']).status === 0;
if (!hasGdal)
  console.warn(
    '[encode-png.test] gdalinfo or python3-gdal not found: the GDAL read-back checks are SKIPPED (install gdal-bin and python3-gdal to run them)',
  );

const PIXEL_MAX = { U1: PIXEL_TYPE_INFO.U1.max, U2: PIXEL_TYPE_INFO.U2.max, U4: PIXEL_TYPE_INFO.U4.max } as const;

function blockOf(t: PixelType, width: number, height: number, bands: number[][], mask?: number[]): PixelBlock {
  return {
    rect: { x: 0, y: 0, width, height },
    pixelType: t,
    bands: bands.map((values) => {
      const p = allocatePlane(t, width * height);
      values.forEach((v, i) => (p[i] = v));
      return p;
    }),
    mask: Uint8Array.from(mask ?? new Array<number>(width * height).fill(1)),
  };
}

const infoOf = (b: PixelBlock): RasterInfo => ({
  width: b.rect.width,
  height: b.rect.height,
  bandCount: b.bands.length,
  pixelType: b.pixelType,
  extent: { xmin: 0, ymin: 0, xmax: b.rect.width, ymax: b.rect.height },
  cellSize: { x: 1, y: 1 },
});

/** Decode with pngjs (which expands to RGBA, 8 or 16 bits) and report the header fields too. */
function decode(bytes: Uint8Array, keep16 = false) {
  const png = PNG.sync.read(Buffer.from(bytes), { skipRescale: keep16 });
  return { width: png.width, height: png.height, colorType: png.colorType, depth: png.depth, alpha: png.alpha, data: png.data };
}

const rgba = (d: { data: Buffer }, i: number): number[] => Array.from(d.data.subarray(4 * i, 4 * i + 4));

describe('encodePng', () => {
  it('1 band U8 without masked pixels: opaque grey', () => {
    const b = blockOf('U8', 3, 2, [[0, 10, 20, 200, 254, 255]]);
    const d = decode(encodePng(b, infoOf(b)));
    expect(d).toMatchObject({ width: 3, height: 2, colorType: 0, depth: 8, alpha: false });
    expect([0, 1, 2, 3, 4, 5].map((i) => rgba(d, i))).toEqual([0, 10, 20, 200, 254, 255].map((v) => [v, v, v, 255]));
  });

  it('1 band U8 with masked pixels: grey + alpha, alpha 0 where masked', () => {
    const b = blockOf('U8', 2, 2, [[5, 6, 7, 8]], [1, 0, 1, 0]);
    const d = decode(encodePng(b, infoOf(b)));
    expect(d).toMatchObject({ colorType: 4, alpha: true });
    expect([0, 1, 2, 3].map((i) => rgba(d, i))).toEqual([
      [5, 5, 5, 255],
      [0, 0, 0, 0],
      [7, 7, 7, 255],
      [0, 0, 0, 0],
    ]);
  });

  it('3 bands U8: RGB, becoming RGBA when a pixel is masked', () => {
    const b = blockOf('U8', 2, 1, [
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    const opaque = decode(encodePng(b, infoOf(b)));
    expect(opaque).toMatchObject({ colorType: 2, alpha: false });
    expect([rgba(opaque, 0), rgba(opaque, 1)]).toEqual([
      [1, 3, 5, 255],
      [2, 4, 6, 255],
    ]);
    const m = blockOf(
      'U8',
      2,
      1,
      [
        [1, 2],
        [3, 4],
        [5, 6],
      ],
      [0, 1],
    );
    const t = decode(encodePng(m, infoOf(m)));
    expect(t).toMatchObject({ colorType: 6, alpha: true });
    expect([rgba(t, 0), rgba(t, 1)]).toEqual([
      [0, 0, 0, 0],
      [2, 4, 6, 255],
    ]);
  });

  it('2 and 4 bands: the last band is the alpha, and the mask still clears it', () => {
    const ga = blockOf(
      'U8',
      3,
      1,
      [
        [9, 8, 7],
        [255, 128, 255],
      ],
      [1, 1, 0],
    );
    const d2 = decode(encodePng(ga, infoOf(ga)));
    expect(d2.colorType).toBe(4);
    expect([0, 1, 2].map((i) => rgba(d2, i))).toEqual([
      [9, 9, 9, 255],
      [8, 8, 8, 128],
      [0, 0, 0, 0],
    ]);
    const c = blockOf('U8', 1, 1, [[10], [20], [30], [40]]);
    const d4 = decode(encodePng(c, infoOf(c)));
    expect(d4.colorType).toBe(6);
    expect(rgba(d4, 0)).toEqual([10, 20, 30, 40]);
  });

  it('U16 is written with 16-bit samples', () => {
    const b = blockOf('U16', 4, 1, [[0, 1, 4660, 65535]], [1, 1, 1, 0]);
    const d = decode(encodePng(b, infoOf(b)), true);
    expect(d).toMatchObject({ depth: 16, colorType: 4 });
    // pngjs keeps 16-bit samples in a Uint16Array-like RGBA array when skipRescale is set
    const values = Array.from(d.data as unknown as ArrayLike<number>);
    expect(values.slice(0, 16)).toEqual([0, 0, 0, 65535, 1, 1, 1, 65535, 4660, 4660, 4660, 65535, 0, 0, 0, 0]);
  });

  it('U1/U2/U4 single bands are grey PNGs of bit depth 1/2/4 holding the values unscaled', () => {
    for (const [t, depth, values] of [
      ['U1', 1, [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0]],
      ['U2', 2, [0, 3, 2, 1, 3, 3, 0, 2, 1, 0, 1]],
      ['U4', 4, [0, 15, 7, 8, 1, 14, 2, 13, 3, 12, 4]],
    ] as const) {
      // 11 x 2: rows end inside a byte, so the padding bits are exercised.
      const all = [...values, ...values.map((v) => PIXEL_MAX[t] - v)];
      const b = blockOf(t, 11, 2, [all]);
      const bytes = encodePng(b, infoOf(b));
      const d = decode(bytes, true);
      expect(d, t).toMatchObject({ width: 11, height: 2, colorType: 0, depth, alpha: false });
      expect(
        Array.from({ length: 22 }, (_, i) => rgba(d, i)[0]),
        t,
      ).toEqual(all);
      // pngjs rescales low depths to 8 bits by default: v * 255 / (2^depth - 1)
      const scaled = decode(bytes);
      expect(rgba(scaled, 1)[0], t).toBe(255);
    }
  });

  it('U1/U2/U4 with masked pixels fall back to 8-bit grey + alpha, values unscaled', () => {
    const b = blockOf('U4', 3, 1, [[0, 7, 15]], [1, 0, 1]);
    const d = decode(encodePng(b, infoOf(b)));
    expect(d).toMatchObject({ depth: 8, colorType: 4 });
    expect([0, 1, 2].map((i) => rgba(d, i))).toEqual([
      [0, 0, 0, 255],
      [0, 0, 0, 0],
      [15, 15, 15, 255],
    ]);
  });

  it('crc32 matches the PNG specification check value', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new TextEncoder().encode('IEND'))).toBe(0xae426082);
  });

  describe('a single band with a colormap is expanded to colour', () => {
    const cm = (entries: number[][]): Colormap => {
      const alpha = entries.some((e) => e.length > 4);
      return {
        values: Float64Array.from(entries, (e) => e[0]!),
        rgb: Uint8Array.from(entries.flatMap((e) => e.slice(1, 4))),
        ...(alpha ? { alpha: Uint8Array.from(entries, (e) => e[4] ?? 255) } : {}),
      };
    };

    it('opaque: RGB, looked up by value (floats truncated toward zero, negative values)', () => {
      const b = blockOf('F32', 4, 1, [[-1.9, 0.5, 2.99, 2]]);
      const d = decode(
        encodePng(b, {
          ...infoOf(b),
          colormap: cm([
            [-1, 10, 20, 30],
            [0, 40, 50, 60],
            [2, 70, 80, 90],
          ]),
        }),
      );
      expect(d).toMatchObject({ colorType: 2, alpha: false, depth: 8 });
      expect([0, 1, 2, 3].map((i) => rgba(d, i))).toEqual([
        [10, 20, 30, 255],
        [40, 50, 60, 255],
        [70, 80, 90, 255],
        [70, 80, 90, 255],
      ]);
    });

    it('RGBA: alpha 0 for masked pixels and values without an entry, the entry alpha otherwise', () => {
      const b = blockOf('U8', 5, 1, [[0, 1, 2, 3, 0]], [1, 1, 1, 1, 0]);
      const d = decode(
        encodePng(b, {
          ...infoOf(b),
          colormap: cm([
            [0, 1, 2, 3],
            [1, 4, 5, 6, 128],
            [2, 7, 8, 9, 0],
          ]),
        }),
      );
      expect(d).toMatchObject({ colorType: 6, alpha: true });
      expect([0, 1, 2, 3, 4].map((i) => rgba(d, i))).toEqual([
        [1, 2, 3, 255],
        [4, 5, 6, 128],
        [7, 8, 9, 0],
        [0, 0, 0, 0],
        [0, 0, 0, 0],
      ]);
    });

    it('several bands ignore the colormap', () => {
      const b = blockOf('U8', 1, 1, [[1], [2], [3]]);
      const d = decode(encodePng(b, { ...infoOf(b), colormap: cm([[1, 9, 9, 9]]) }));
      expect(rgba(d, 0)).toEqual([1, 2, 3, 255]);
    });
  });

  // GDAL reads our PNGs back (gdalinfo for the header, osgeo for the pixels).
  describe('GDAL reads them back', () => {
    let dir = '';
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'rasterflow-png-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** Pixels of every band as GDAL's Python bindings read them (band-major). */
    function gdalRead(path: string): { bands: number[][]; nbits: (string | null)[]; types: string[] } {
      const py = `
import json, sys
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])
bands = [ds.GetRasterBand(i + 1) for i in range(ds.RasterCount)]
print(json.dumps({
  "bands": [b.ReadAsArray().ravel().tolist() for b in bands],
  "nbits": [b.GetMetadataItem("NBITS", "IMAGE_STRUCTURE") for b in bands],
  "types": [gdal.GetDataTypeName(b.DataType) for b in bands],
}))`;
      const r = spawnSync('/usr/bin/python3', ['-c', py, path], { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } });
      if (r.status !== 0) throw new Error(`osgeo read failed: ${r.stderr}`);
      return JSON.parse(r.stdout);
    }

    it.skipIf(!hasGdal)('U1/U2/U4: gdalinfo reports Byte with NBITS 1/2/4, pixels equal', () => {
      for (const [t, bits] of [
        ['U1', 1],
        ['U2', 2],
        ['U4', 4],
      ] as const) {
        const values = Array.from({ length: 13 * 3 }, (_, i) => (i * 7 + (i >> 2)) % (PIXEL_MAX[t] + 1));
        const b = blockOf(t, 13, 3, [values]);
        const path = join(dir, `${t}.png`);
        writeFileSync(path, encodePng(b, infoOf(b)));
        const info = spawnSync('gdalinfo', [path], { encoding: 'utf8' }).stdout;
        expect(info, t).toMatch(/Size is 13, 3/);
        expect(info, t).toMatch(/Type=Byte/);
        const got = gdalRead(path);
        expect(got.nbits, t).toEqual([String(bits)]);
        expect(got.bands, t).toEqual([values]);
      }
    });

    it.skipIf(!hasGdal)('a colormapped band: RGBA with the colormap colours and alpha', () => {
      const b = blockOf('S16', 4, 2, [[-5, 0, 7, 7, 100, -5, 0, 3]], [1, 1, 1, 0, 1, 1, 1, 1]);
      const colormap = { values: Float64Array.of(-5, 0, 7), rgb: Uint8Array.of(200, 100, 50, 1, 2, 3, 9, 8, 7) };
      const path = join(dir, 'colormap.png');
      writeFileSync(path, encodePng(b, { ...infoOf(b), colormap }));
      const got = gdalRead(path);
      expect(got.types).toEqual(['Byte', 'Byte', 'Byte', 'Byte']);
      expect(got.bands).toEqual([
        [200, 1, 9, 0, 0, 200, 1, 0],
        [100, 2, 8, 0, 0, 100, 2, 0],
        [50, 3, 7, 0, 0, 50, 3, 0],
        [255, 255, 255, 0, 0, 255, 255, 0],
      ]);
    });
  });

  it('other pixel types and band counts are UNSUPPORTED_INPUT', () => {
    for (const t of ['S8', 'S16', 'U32', 'F32', 'F64', 'C64'] as const) {
      const b = blockOf(t, 1, 1, [[1]]);
      expect(() => encodePng(b, infoOf(b)), t).toThrow(
        expect.objectContaining({ code: 'UNSUPPORTED_INPUT', path: 'outputPixelType', message: expect.stringMatching(/U8.*Stretch/) }),
      );
    }
    const five = blockOf('U8', 1, 1, [[1], [2], [3], [4], [5]]);
    expect(() => encodePng(five, infoOf(five))).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_INPUT' }));
  });
});

/**
 * The streaming GeoTIFF/COG writer against GDAL: files written from blocks of odd sizes (so rows of
 * TIFF blocks are assembled from several pieces) are read by GDAL 3.6 (test/gdal-tiffs.py dump:
 * ReadAsArray, NoData, geotransform, EPSG, mask flags, overviews, metadata, the COG validator)
 * and by our reader; every pixel must be what we wrote (masked pixels as the NoData value).
 * Every pixel type, tiled and stripped, DEFLATE and none, NBITS, BigTIFF, COG with overviews,
 * statistics, palettes, internal masks. GDAL parts are skipped, with a message, without GDAL.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, castValue, PIXEL_TYPE_INFO, PIXEL_TYPES, type PixelType, type Plane } from '../core/pixel-type.js';
import { openGeoTiff } from './geotiff-source.js';
import { parseCreationOptions, type StreamTiffOptions } from './tiff-options.js';
import { downsample, TiffStreamWriter, writeTiffStream } from './tiff-stream-writer.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = resolve(import.meta.dirname, '../../test/gdal-tiffs.py');
const haveGdal = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'from osgeo import gdal; import numpy'], { encoding: 'utf8' }).status === 0;
if (!haveGdal) console.warn('tiff-stream-writer.test.ts: GDAL python bindings not found; the GDAL checks are SKIPPED');

const dir = mkdtempSync(join(tmpdir(), 'rasterflow-stream-writer-'));
const W = 70;
const H = 45;

function infoOf(t: PixelType, bands: number, extra: Partial<RasterInfo> = {}): RasterInfo {
  return {
    width: W,
    height: H,
    bandCount: bands,
    pixelType: t,
    extent: { xmin: 500000, ymin: 4100000 - 30 * H, xmax: 500000 + 30 * W, ymax: 4100000 },
    cellSize: { x: 30, y: 30 },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
    ...extra,
  };
}

/** A deterministic raster: values spanning the type, some pixels masked when `masked`. */
function raster(t: PixelType, bands: number, masked: boolean): { planes: Plane[]; mask: Uint8Array } {
  const ti = PIXEL_TYPE_INFO[t];
  const k = ti.complex ? 2 : 1;
  const planes: Plane[] = [];
  for (let b = 0; b < bands; b++) {
    const p = allocatePlane(t, W * H);
    for (let i = 0; i < W * H; i++) {
      const x = i % W;
      const y = Math.floor(i / W);
      if (ti.integer) {
        const span = Math.min(ti.max - ti.min + 1, 2 ** 20);
        p[i] = ti.min + ((x * 7919 + y * 104729 + b * 31) % span);
      } else {
        p[k * i] = castValue(Math.sin(x / 5 + b) * 1000 + y * 0.37, t);
        if (k === 2) p[2 * i + 1] = castValue(y - x * 0.5, t);
      }
    }
    planes.push(p);
  }
  const mask = new Uint8Array(W * H).fill(1);
  if (masked) for (let y = 10; y < 20; y++) for (let x = 30; x < 47; x++) mask[y * W + x] = 0;
  return { planes, mask };
}

/** The raster cut into `tw` x `th` blocks, row-major, as renderTiles yields them. */
async function* pieces(t: PixelType, r: { planes: Plane[]; mask: Uint8Array }, tw: number, th: number): AsyncGenerator<PixelBlock> {
  const k = PIXEL_TYPE_INFO[t].complex ? 2 : 1;
  for (let y0 = 0; y0 < H; y0 += th) {
    for (let x0 = 0; x0 < W; x0 += tw) {
      const w = Math.min(tw, W - x0);
      const h = Math.min(th, H - y0);
      const bands = r.planes.map((p) => {
        const o = allocatePlane(t, w * h);
        for (let y = 0; y < h; y++)
          (o as Float64Array).set((p as Float64Array).subarray(k * ((y0 + y) * W + x0), k * ((y0 + y) * W + x0 + w)), k * y * w);
        return o;
      });
      const mask = new Uint8Array(w * h);
      for (let y = 0; y < h; y++) mask.set(r.mask.subarray((y0 + y) * W + x0, (y0 + y) * W + x0 + w), y * w);
      yield { rect: { x: x0, y: y0, width: w, height: h }, pixelType: t, bands, mask };
    }
  }
}

interface Dump {
  width: number;
  height: number;
  bands: number;
  type: string;
  geotransform: number[];
  epsg: string | null;
  nodata: number | null;
  dtype: string;
  block: [number, number];
  compression: string | null;
  nbits: string | null;
  overviews: [number, number][];
  maskFlags: number;
  metadata: Record<string, string>;
  description: string[];
  colorTable: number[][] | null;
  cogErrors: string[] | null;
}

const ARRAYS: Record<string, (b: ArrayBuffer) => ArrayLike<number>> = {
  uint8: (b) => new Uint8Array(b),
  int8: (b) => new Int8Array(b),
  uint16: (b) => new Uint16Array(b),
  int16: (b) => new Int16Array(b),
  uint32: (b) => new Uint32Array(b),
  int32: (b) => new Int32Array(b),
  float32: (b) => new Float32Array(b),
  float64: (b) => new Float64Array(b),
  complex64: (b) => new Float32Array(b),
  complex128: (b) => new Float64Array(b),
};
const rawOf = (file: string, dtype: string): ArrayLike<number> => {
  const buf = readFileSync(file);
  return ARRAYS[dtype]!(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
};

function dumpAll(files: readonly string[]): Dump[] {
  const args = files.flatMap((f) => [f, f.replace(/\.tif$/, '')]);
  const r = spawnSync(PYTHON, [SCRIPT, 'dump', ...args], {
    encoding: 'utf8',
    env: { ...process.env, GDAL_PAM_ENABLED: 'NO' },
    maxBuffer: 1 << 26,
  });
  if (r.status !== 0) throw new Error(r.stderr);
  // Python's json writes NaN / Infinity bare; make them strings JSON can hold.
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l.replace(/\b(-?Infinity|NaN)\b/g, '"$1"')) as Dump);
}

interface Case {
  name: string;
  t: PixelType;
  bands: number;
  masked: boolean;
  options: StreamTiffOptions;
  info?: Partial<RasterInfo>;
  /** Block size the raster arrives in; default 23 x 17 (rows of TIFF blocks gathered from pieces). */
  piece?: [number, number];
}

const CASES: Case[] = [];
for (const t of PIXEL_TYPES) {
  for (const tiled of [true, false]) {
    for (const compress of ['deflate', 'none'] as const) {
      CASES.push({
        name: `${t}-${tiled ? 'tiled' : 'strips'}-${compress}`,
        t,
        bands: 2,
        masked: true,
        options: { tiled, compress, ...(tiled ? { blockWidth: 32, blockHeight: 16 } : { blockHeight: 7 }) },
      });
    }
  }
}
CASES.push(
  { name: 'U16-nbits12', t: 'U16', bands: 1, masked: false, options: { nbits: 12 } },
  { name: 'U8-nbits3-strips', t: 'U8', bands: 2, masked: false, options: { nbits: 3, tiled: false } },
  { name: 'U32-nbits24', t: 'U32', bands: 1, masked: false, options: { nbits: 24, compress: 'none' } },
  { name: 'F32-bigtiff', t: 'F32', bands: 1, masked: true, options: { bigTiff: 'YES', blockWidth: 16 } },
  { name: 'S16-bigtiff-strips', t: 'S16', bands: 2, masked: false, options: { bigTiff: 'YES', tiled: false }, info: { noData: -32768 } },
  { name: 'F32-cog', t: 'F32', bands: 1, masked: true, options: { cog: true, blockWidth: 16, overviewResampling: 'AVERAGE' } },
  { name: 'U16-cog-mask', t: 'U16', bands: 2, masked: true, options: { cog: true, blockWidth: 16 } },
  { name: 'F64-overviews', t: 'F64', bands: 1, masked: false, options: { overviews: 2, blockWidth: 16 } },
  { name: 'F32-stats', t: 'F32', bands: 2, masked: true, options: { statistics: true }, info: { bandNames: ['a', 'b'] } },
  {
    name: 'U8-palette',
    t: 'U8',
    bands: 1,
    masked: false,
    options: {},
    info: { colormap: { values: Float64Array.from([0, 1, 2]), rgb: Uint8Array.from([255, 0, 0, 0, 255, 0, 0, 0, 255]) } },
  },
  { name: 'U8-nomask-needed', t: 'U8', bands: 1, masked: false, options: {} },
  // Pieces the size of the TIFF blocks: full blocks are encoded straight from the piece, the
  // right and bottom edge pieces through gathered rows (both paths in one file).
  { name: 'F32-direct-pred3', t: 'F32', bands: 2, masked: true, options: { blockWidth: 16 }, piece: [16, 16] },
  { name: 'U16-direct-mask', t: 'U16', bands: 2, masked: true, options: { blockWidth: 16, predictor: 2 }, piece: [16, 16] },
  {
    name: 'S16-direct-nodata-none',
    t: 'S16',
    bands: 1,
    masked: true,
    options: { blockWidth: 16, compress: 'none' },
    info: { noData: -32768 },
    piece: [16, 16],
  },
  { name: 'C64-direct', t: 'C64', bands: 1, masked: true, options: { blockWidth: 32, blockHeight: 16 }, piece: [32, 16] },
);

describe('TiffStreamWriter', () => {
  const written = new Map<string, { c: Case; planes: Plane[]; mask: Uint8Array; fill: number }>();
  beforeAll(async () => {
    for (const c of CASES) {
      const r = raster(c.t, c.bands, c.masked);
      if (c.options.nbits) for (const p of r.planes) for (let i = 0; i < p.length; i++) p[i] = p[i]! % 2 ** c.options.nbits;
      const path = join(dir, `${c.name}.tif`);
      await writeTiffStream(path, infoOf(c.t, c.bands, c.info), pieces(c.t, r, ...(c.piece ?? [23, 17])), c.options);
      const ti = PIXEL_TYPE_INFO[c.t];
      const fill = ti.integer ? (c.info?.noData ?? 0) : Number.NaN;
      written.set(c.name, { c, ...r, fill });
    }
  }, 120_000);

  it('our reader reads back every pixel and the mask of every case', async () => {
    for (const [name, w] of written) {
      const s = await openGeoTiff(join(dir, `${name}.tif`));
      const b = await s.read({ x: 0, y: 0, width: W, height: H });
      const k = PIXEL_TYPE_INFO[w.c.t].complex ? 2 : 1;
      expect(s.info.pixelType, name).toBe(w.c.t);
      for (let i = 0; i < W * H; i++) {
        // Integer rasters without a NoData carry the mask in an internal mask image.
        // (and pixels equal to a declared NoData read back masked).
        const nd = w.c.info?.noData;
        const want = w.mask[i] === 1 && !w.planes.some((p) => p[k * i] === nd) ? 1 : 0;
        if (b.mask[i] !== want) throw new Error(`${name}: mask at ${i}`);
        if (w.mask[i] === 0) continue;
        for (let band = 0; band < w.c.bands; band++) {
          for (let part = 0; part < k; part++) {
            if (b.bands[band]![k * i + part] !== w.planes[band]![k * i + part]) throw new Error(`${name}: band ${band} pixel ${i}`);
          }
        }
      }
      await s.close();
    }
  });

  it.skipIf(!haveGdal)(
    'GDAL reads every case: pixels, NoData, grid, EPSG, masks, overviews, COG layout, statistics, palette',
    () => {
      const names = [...written.keys()];
      const dumps = dumpAll(names.map((n) => join(dir, `${n}.tif`)));
      const failures: string[] = [];
      dumps.forEach((d, j) => {
        const name = names[j]!;
        const w = written.get(name)!;
        const { c } = w;
        const ti = PIXEL_TYPE_INFO[c.t];
        const k = ti.complex ? 2 : 1;
        if (d.width !== W || d.height !== H || d.bands !== c.bands) failures.push(`${name}: size`);
        if (JSON.stringify(d.geotransform) !== JSON.stringify([500000, 30, 0, 4100000, 0, -30]))
          failures.push(`${name}: geotransform ${String(d.geotransform)}`);
        if (d.epsg !== '32616') failures.push(`${name}: EPSG ${d.epsg}`);
        const integerMask = ti.integer && c.info?.noData === undefined;
        if (!ti.integer && !(d.nodata !== null && Number.isNaN(Number(d.nodata)))) failures.push(`${name}: NoData ${d.nodata}`);
        if (integerMask && d.maskFlags !== (c.masked ? 2 : 1)) failures.push(`${name}: mask flags ${d.maskFlags}`);
        for (let b = 0; b < c.bands; b++) {
          const a = rawOf(join(dir, `${name}.b${b}.raw`), d.dtype);
          for (let i = 0; i < W * H; i++) {
            for (let part = 0; part < k; part++) {
              const want = w.mask[i] === 0 ? (part === 1 ? 0 : w.fill) : w.planes[b]![k * i + part]!;
              const got = a[k * i + part]!;
              if (!(got === want || (Number.isNaN(got) && Number.isNaN(want)))) {
                failures.push(`${name} band ${b + 1} pixel ${i}: GDAL ${got}, wrote ${want}`);
                i = W * H;
                break;
              }
            }
          }
        }
        if (integerMask && c.masked) {
          const m = rawOf(join(dir, `${name}.mask.raw`), 'uint8');
          for (let i = 0; i < W * H; i++)
            if ((m[i] === 0 ? 0 : 1) !== w.mask[i]) {
              failures.push(`${name}: GDAL mask at ${i}`);
              break;
            }
        }
        if (c.options.nbits && d.nbits !== String(c.options.nbits)) failures.push(`${name}: NBITS ${d.nbits}`);
        if (c.options.cog) {
          if (d.cogErrors === null || d.cogErrors.length > 0) failures.push(`${name}: COG validator ${JSON.stringify(d.cogErrors)}`);
          // AUTO: halve until the largest side fits one 16-pixel block.
          if (
            JSON.stringify(d.overviews) !==
            JSON.stringify([
              [35, 23],
              [18, 12],
              [9, 6],
            ])
          )
            failures.push(`${name}: overviews ${JSON.stringify(d.overviews)}`);
        }
        if (
          c.options.overviews === 2 &&
          JSON.stringify(d.overviews) !==
            JSON.stringify([
              [35, 23],
              [18, 12],
            ])
        )
          failures.push(`${name}: overviews ${JSON.stringify(d.overviews)}`);
        if (c.options.overviews === 2 || name === 'F32-cog') {
          // Level 1 is the 2 x 2 average of the valid pixels (computed here independently).
          const ov = rawOf(join(dir, `${name}.ov0.b0.raw`), d.dtype);
          const p = w.planes[0]!;
          for (let y = 0; y < 23; y++) {
            for (let x = 0; x < 35; x++) {
              let s = 0;
              let n = 0;
              for (const [yy, xx] of [
                [2 * y, 2 * x],
                [2 * y, 2 * x + 1],
                [2 * y + 1, 2 * x],
                [2 * y + 1, 2 * x + 1],
              ] as const) {
                if (yy >= H || xx >= W || w.mask[yy * W + xx] === 0) continue;
                s += p[yy * W + xx]!;
                n++;
              }
              const want = n === 0 ? Number.NaN : Math.fround(s / n);
              const got = ov[y * 35 + x]!;
              if (!(Math.abs(got - want) <= 1e-6 * Math.abs(want) || (Number.isNaN(got) && Number.isNaN(want)))) {
                failures.push(`${name}: overview (${x}, ${y}) ${got} != ${want}`);
                y = 23;
                break;
              }
            }
          }
        }
        if (c.options.statistics) {
          const p = w.planes[0]!;
          let min = Infinity;
          let max = -Infinity;
          let s = 0;
          let n = 0;
          for (let i = 0; i < W * H; i++) {
            if (w.mask[i] === 0) continue;
            min = Math.min(min, p[i]!);
            max = Math.max(max, p[i]!);
            s += p[i]!;
            n++;
          }
          const md = d.metadata;
          if (
            Number(md.STATISTICS_MINIMUM) !== min ||
            Number(md.STATISTICS_MAXIMUM) !== max ||
            Math.abs(Number(md.STATISTICS_MEAN) - s / n) > 1e-9
          ) {
            failures.push(`${name}: statistics ${JSON.stringify(md)}`);
          }
          if (JSON.stringify(d.description) !== JSON.stringify(['a', 'b'])) failures.push(`${name}: band names ${String(d.description)}`);
        }
        if (
          c.info?.colormap &&
          JSON.stringify(d.colorTable?.slice(0, 4)) !==
            JSON.stringify([
              [255, 0, 0],
              [0, 255, 0],
              [0, 0, 255],
              [0, 0, 0],
            ])
        ) {
          failures.push(`${name}: colour table ${JSON.stringify(d.colorTable)}`);
        }
        if (c.options.tiled === false && d.block[0] !== W) failures.push(`${name}: strips ${String(d.block)}`);
      });
      expect(failures).toEqual([]);
    },
    120_000,
  );

  it('leaves no temporary or partial files behind', () => {
    expect(readdirSync(dir).filter((f) => /partial|tmp-/.test(f))).toEqual([]);
  });

  it('an unfinished raster fails at close and removes its partial output', async () => {
    const path = join(dir, 'unfinished.tif');
    const w = await TiffStreamWriter.create(path, infoOf('U8', 1));
    const r = raster('U8', 1, false);
    const first = (await pieces('U8', r, 23, 17).next()).value as PixelBlock;
    await w.write(first);
    await expect(w.close()).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('unfinished'))).toEqual([]);
  });

  it('parses GDAL creation options and names bad ones', () => {
    expect(
      parseCreationOptions(['compress=deflate', 'TILED=YES', 'BLOCKXSIZE=512', 'BLOCKYSIZE=128', 'ZLEVEL=1', 'BIGTIFF=IF_SAFER']),
    ).toEqual({
      compress: 'deflate',
      tiled: true,
      blockWidth: 512,
      blockHeight: 128,
      level: 1,
      bigTiff: 'IF_SAFER',
    });
    expect(parseCreationOptions(['PREDICTOR=FLOATING_POINT', 'COG=YES', 'OVERVIEW_COUNT=3', 'STATISTICS=YES', 'NBITS=12'])).toMatchObject({
      predictor: 3,
      cog: true,
      overviews: 3,
      statistics: true,
      nbits: 12,
    });
    expect(() => parseCreationOptions(['COMPRESS=WEBP'])).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'co.COMPRESS' }),
    );
    expect(() => parseCreationOptions(['FOO=1'])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'co.FOO' }));
    expect(() => parseCreationOptions(['TILED'])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'co' }));
  });

  it('rejects options that do not fit the raster, naming them', async () => {
    const bad: [StreamTiffOptions, PixelType, string][] = [
      [{ nbits: 12 }, 'U8', 'co.NBITS'],
      [{ predictor: 3 }, 'S16', 'co.PREDICTOR'],
      [{ predictor: 2, compress: 'none' }, 'U8', 'co.PREDICTOR'],
      [{ blockWidth: 100 }, 'U8', 'co.BLOCKXSIZE'],
      [{ cog: true, tiled: false }, 'U8', 'co.TILED'],
    ];
    for (const [o, t, path] of bad) {
      await expect(TiffStreamWriter.create(join(dir, 'bad.tif'), infoOf(t, 1), o)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        path,
      });
    }
  });

  it('downsample: 2 x 2 average of valid pixels, integer rounding half away from zero, nearest = top-left', () => {
    const p = Int16Array.from([1, 2, 3, 4, 5, 6, -1, -2, 9]);
    const mask = Uint8Array.from([1, 1, 1, 1, 1, 1, 1, 0, 1]);
    const avg = downsample([p], mask, 3, 3, 'S16', true);
    // (1+2+4+5)/4 = 3; (3+6)/2 = 4.5 -> 5; (-1)/1 = -1 (the -2 is masked); 9.
    expect(Array.from(avg.planes[0]!)).toEqual([3, 5, -1, 9]);
    expect(Array.from(avg.mask)).toEqual([1, 1, 1, 1]);
    const near = downsample([p], mask, 3, 3, 'S16', false);
    expect(Array.from(near.planes[0]!)).toEqual([1, 3, -1, 9]);
  });
});

// The three multidimensional source kinds. Golden inputs come from golden/change/make-goldens.py
// (GDAL's netCDF -> GTiff and Zarr drivers); other stores are written here with zarrita.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import FileSystemStore from '@zarrita/storage/fs';
import * as zarr from 'zarrita';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { multidimOf } from '../core/multidim.js';
import { allocateBlock, type PixelBlock } from '../core/pixel-block.js';
import { parseGdalMetadata } from './gdal-metadata.js';
import { cfTimeUnits, layoutFromBandMetadata, spatialReferenceFromWkt } from './multidim-source.js';
import { openRaster } from './source.js';

const GOLDEN = resolve(import.meta.dirname, '../../golden/change');
const DATES = Array.from({ length: 60 }, (_, k) => Date.UTC(2000, 0, 5) + k * 36 * 86400000);

async function readAll(location: string) {
  const s = await openRaster(location);
  try {
    const { width, height } = s.info;
    return { info: s.info, block: await s.read({ x: -1, y: 0, width: width + 1, height }) };
  } finally {
    await s.close();
  }
}

describe('multidimensional GeoTIFF: readInto keeps the any-slice mask', () => {
  it('equals read() (the wrapper reads through readInto too, not around it)', async () => {
    const s = await openRaster(join(GOLDEN, 'l7-series.tif'));
    try {
      const r = { x: -1, y: 2, width: 9, height: 7 };
      const want = await s.read(r);
      expect(want.mask.some((m) => m === 1)).toBe(true);
      const b = allocateBlock(r, s.info.pixelType, s.info.bandCount);
      b.mask.fill(1);
      expect(await s.readInto!(b)).toEqual(want);
    } finally {
      await s.close();
    }
  });
});

const hasGdaladdo = spawnSync('gdaladdo', ['--version'], { encoding: 'utf8' }).status === 0;
if (!hasGdaladdo)
  console.warn(
    '[multidim-source.test] gdaladdo not found: the overview test of a band-metadata GeoTIFF is SKIPPED (install gdal-bin to run it)',
  );

describe.skipIf(!hasGdaladdo)(
  'multidimensional GeoTIFF with overviews (gdaladdo): the overviews keep the layout and the any-slice mask',
  () => {
    it('overview(n) and readDownsampled read through the wrapper', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'rasterflow-mdov-'));
      try {
        const path = join(dir, 'series.tif');
        await writeFile(path, await readFile(join(GOLDEN, 'l7-series.tif')));
        const r = spawnSync('gdaladdo', ['-q', '-r', 'nearest', path, '2'], {
          encoding: 'utf8',
          env: { ...process.env, GDAL_PAM_ENABLED: 'NO' },
        });
        expect(r.status, r.stderr).toBe(0);
        const s = await openRaster(path);
        try {
          expect(s.overviews).toEqual([{ width: 10, height: 8 }]);
          const ov = s.overview!(1);
          expect(ov.info.multidimensional).toEqual(s.info.multidimensional);
          const anySlice = (b: PixelBlock): number[] => Array.from(b.mask, (_, i) => (b.bands.some((p) => p[i] !== -9999) ? 1 : 0));
          const o = await ov.read({ x: 0, y: 0, width: 10, height: 8 });
          // Some pixel has NoData in one slice and data in another: all-bands masking would hide it.
          expect(Array.from(o.mask).filter((m, i) => m === 1 && o.bands.some((p) => p[i] === -9999)).length).toBeGreaterThan(0);
          expect(Array.from(o.mask)).toEqual(anySlice(o));
          const d = await s.readDownsampled!({ x: 0, y: 0, width: 20, height: 16 }, 10, 8);
          expect(d.bands).toEqual(o.bands);
          expect(Array.from(d.mask)).toEqual(anySlice(d));
          expect(s.overview!(0)).toBeDefined();
          expect(() => s.overview!(2)).toThrow(/1 overview/);
        } finally {
          await s.close();
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  },
);

describe('multidimensional sources over the same series', () => {
  it('GeoTIFF band metadata (NETCDF_DIM_time), Zarr and a manifest give the same slices', async () => {
    const tif = await readAll(join(GOLDEN, 'l7-series.tif'));
    const man = await readAll(join(GOLDEN, 'l7-series-manifest.json'));
    const zr = await readAll(join(GOLDEN, 'l7-series.zarr'));
    for (const r of [tif, man, zr]) {
      expect([r.info.width, r.info.height, r.info.bandCount, r.info.pixelType, r.info.noData]).toEqual([20, 16, 360, 'S16', -9999]);
      expect(r.info.spatialReference?.wkid).toBe(31985);
      expect(r.info.extent.xmin).toBeCloseTo(tif.info.extent.xmin, 6);
      expect(r.info.extent.ymax).toBeCloseTo(tif.info.extent.ymax, 6);
      expect(multidimOf(r.info)).toBeDefined();
    }
    const v = tif.info.multidimensional!.variables;
    expect(v.map((x) => [x.name, x.bandsPerSlice, x.slices.length, x.dimensions[0]!.name, x.dimensions[0]!.time])).toEqual([
      ['L7', 6, 60, 'time', true],
    ]);
    expect(v[0]!.slices.map((s) => s.values[0])).toEqual(DATES);
    expect(man.info.multidimensional!.variables[0]!.slices.map((s) => s.values[0])).toEqual(DATES);
    // Zarr: one variable per band, in name order.
    const zv = zr.info.multidimensional!.variables;
    expect(zv.map((x) => x.name)).toEqual(['blue', 'green', 'nir', 'red', 'swir1', 'swir2']);
    expect(zv[0]!.slices.map((s) => s.values[0])).toEqual(DATES);
    // Same pixels: band j of date k in the GeoTIFF is slice k of the j-th Zarr array.
    const order = [0, 1, 3, 2, 4, 5]; // tif band -> zarr variable
    const n = tif.block.mask.length;
    for (let i = 0; i < n; i++) {
      expect(man.block.mask[i]).toBe(tif.block.mask[i]);
      expect(zr.block.mask[i]).toBe(tif.block.mask[i]);
    }
    const inside = (p: ArrayLike<number>) => Array.from(p).filter((_, i) => i % 21 !== 0); // drop column -1
    for (const k of [0, 27, 59]) {
      for (let j = 0; j < 6; j++) {
        const a = inside(tif.block.bands[6 * k + j]!);
        expect(inside(man.block.bands[6 * k + j]!)).toEqual(a);
        const zb = zv[order[j]!]!.slices[k]!.band;
        expect(inside(zr.block.bands[zb]!)).toEqual(a);
      }
    }
    // Column -1 is outside: masked. A date missing at one pixel does not hide the others.
    expect(tif.block.mask[0]).toBe(0);
    let missingButValid = 0;
    for (let i = 0; i < n; i++) if (tif.block.mask[i] === 1 && tif.block.bands.some((b) => b[i] === -9999)) missingButValid++;
    expect(missingButValid).toBeGreaterThan(0);
  });

  it('a manifest of single-band F32 slices (NaN NoData) keeps per-slice gaps', async () => {
    const r = await readAll(join(GOLDEN, 'ndvi-manifest.json'));
    expect([r.info.bandCount, r.info.pixelType]).toEqual([9, 'F32']);
    expect(r.info.bandNames![0]).toBe('NDVI_StdTime=2001-03-02T00:00:00');
    // Pixel (0, 0) has no valid slice (make-goldens.py): NoData; (1, 0) keeps its two valid slices.
    expect(r.block.mask[1]).toBe(0);
    expect(r.block.mask[2]).toBe(1);
    expect(r.block.bands.filter((b) => !Number.isNaN(b[2]!)).length).toBe(2);
  });
});

describe('band metadata layouts', () => {
  it('StdTime and VARIABLE keys; consecutive bands of one date form a slice', () => {
    const xml =
      '<GDALMetadata>' +
      [0, 1, 2, 3]
        .map(
          (b) =>
            `<Item name="StdTime" sample="${b}">${b < 2 ? '2001-01-01' : '2002-06-30T12:00:00'}</Item><Item name="VARIABLE" sample="${b}">ndvi</Item>`,
        )
        .join('') +
      '</GDALMetadata>';
    const md = layoutFromBandMetadata(parseGdalMetadata(xml), 4, 'x.tif')!;
    expect(md.variables.map((v) => [v.name, v.bandsPerSlice, v.slices.map((s) => [s.band, s.values[0]])])).toEqual([
      [
        'ndvi',
        2,
        [
          [0, Date.UTC(2001, 0, 1)],
          [2, Date.UTC(2002, 5, 30, 12)],
        ],
      ],
    ]);
    expect(layoutFromBandMetadata(parseGdalMetadata('<GDALMetadata></GDALMetadata>'), 4, 'x.tif')).toBeUndefined();
  });

  it('CF time units and WKT spatial references', () => {
    expect(cfTimeUnits('days since 1970-01-01')).toEqual([86400000, 0]);
    expect(cfTimeUnits('hours since 2000-01-01 00:00:00')).toEqual([3600000, Date.UTC(2000, 0, 1)]);
    expect(cfTimeUnits('metres')).toBeUndefined();
    expect(spatialReferenceFromWkt('GEOGCS["WGS 84",AUTHORITY["EPSG","4326"]]')).toMatchObject({ wkid: 4326, geographic: true });
  });
});

describe('Zarr stores written with zarrita (v3, y ascending)', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rf-zarr-'));
    const root = zarr.root(new FileSystemStore(dir));
    await zarr.create(root, { attributes: { crs: 'EPSG:32616' } });
    const coord = async (name: string, values: number[], attributes: Record<string, unknown> = {}) => {
      const a = await zarr.create(root.resolve(name), {
        shape: [values.length],
        chunkShape: [values.length],
        dtype: 'float64',
        dimensionNames: [name],
        attributes,
      });
      await zarr.set(a, null, { data: Float64Array.from(values), shape: [values.length], stride: [1] });
    };
    await coord('x', [15, 45, 75]);
    await coord('y', [115, 145]); // ascending: row 0 of the array is the SOUTH row
    await coord('time', [0, 24], { units: 'hours since 2001-01-01' });
    const t = await zarr.create(root.resolve('temp'), {
      shape: [2, 2, 3],
      chunkShape: [1, 2, 3],
      dtype: 'float32',
      fillValue: -1,
      dimensionNames: ['time', 'y', 'x'],
    });
    await zarr.set(t, null, { data: Float32Array.from([1, 2, 3, 4, 5, -1, 10, 20, 30, 40, 50, 60]), shape: [2, 2, 3], stride: [6, 3, 1] });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('flips rows to north-up, decodes CF time, masks the fill value per slice', async () => {
    const r = await readAll(dir);
    expect(r.info.extent).toEqual({ xmin: 0, ymax: 160, xmax: 90, ymin: 100 });
    expect(r.info.spatialReference?.wkid).toBe(32616);
    const v = r.info.multidimensional!.variables[0]!;
    expect(v.slices.map((s) => s.values[0])).toEqual([Date.UTC(2001, 0, 1), Date.UTC(2001, 0, 2)]);
    // Block starts at x = -1: index 1 is pixel (0, 0). North row = array row 1.
    const row = (b: number, y: number) => Array.from(r.block.bands[b]!.slice(y * 4 + 1, y * 4 + 4));
    expect(r.info.noData).toBe(-1); // the fill value: missing slice pixels hold it
    expect(row(0, 0)).toEqual([4, 5, -1]);
    expect(row(0, 1)).toEqual([1, 2, 3]);
    expect(row(1, 0)).toEqual([40, 50, 60]);
    expect(Array.from(r.block.mask)).toEqual([0, 1, 1, 1, 0, 1, 1, 1]);
  });
});

/** A 3 x 2 Zarr v3 store (coordinates x, y; one variable `v`) written with zarrita in a fresh directory. */
async function smallStore(groupAttributes: Record<string, unknown>, varAttributes: Record<string, unknown> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'rf-zarr-err-'));
  const root = zarr.root(new FileSystemStore(dir));
  await zarr.create(root, { attributes: groupAttributes });
  for (const [name, values] of [
    ['x', [15, 45, 75]],
    ['y', [145, 115]],
  ] as const) {
    const a = await zarr.create(root.resolve(name), {
      shape: [values.length],
      chunkShape: [values.length],
      dtype: 'float64',
      dimensionNames: [name],
    });
    await zarr.set(a, null, { data: Float64Array.from(values), shape: [values.length], stride: [1] });
  }
  const v = await zarr.create(root.resolve('v'), {
    shape: [2, 3],
    chunkShape: [2, 3],
    dtype: 'float32',
    dimensionNames: ['y', 'x'],
    attributes: varAttributes,
  });
  await zarr.set(v, null, { data: Float32Array.from([1, 2, 3, 4, 5, 6]), shape: [2, 3], stride: [3, 1] });
  return dir;
}

describe('errors', () => {
  it('a malformed manifest is an IO_ERROR at input', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rf-man-'));
    try {
      await writeFile(join(dir, 'm.json'), '{"variables": [{"slices": []}]}');
      const e = await openRaster(join(dir, 'm.json')).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(EngineError);
      expect((e as EngineError).code).toBe('IO_ERROR');
      expect((e as EngineError).path).toBe('input');
      await writeFile(
        join(dir, 'n.json'),
        JSON.stringify({
          variables: [{ name: 'a', dimensions: ['StdTime'], slices: [{ dimensions: { StdTime: 'soon' }, path: 'x.tif' }] }],
        }),
      );
      expect(((await openRaster(join(dir, 'n.json')).catch((x: unknown) => x)) as EngineError).message).toMatch(/ISO 8601/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a plain directory is IO_ERROR; a Zarr store without y/x arrays is UNSUPPORTED_INPUT', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rf-empty-'));
    try {
      const e = (await openRaster(dir).catch((x: unknown) => x)) as EngineError;
      expect([e.code, e.path]).toEqual(['IO_ERROR', 'input']);
      await zarr.create(zarr.root(new FileSystemStore(dir)));
      const f = (await openRaster(dir).catch((x: unknown) => x)) as EngineError;
      expect([f.code, f.path]).toEqual(['UNSUPPORTED_INPUT', 'input']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a Zarr coordinate array that is there but cannot be read is IO_ERROR at input, not "no coordinate"', async () => {
    const dir = await smallStore({ crs: 'EPSG:32616' });
    try {
      expect((await readAll(dir)).info.spatialReference?.wkid).toBe(32616);
      // An I/O error reading the chunk (EISDIR: the chunk key is a directory).
      await rm(join(dir, 'x', 'c', '0'));
      await mkdir(join(dir, 'x', 'c', '0'));
      const e = (await openRaster(dir).catch((x: unknown) => x)) as EngineError;
      expect(e).toBeInstanceOf(EngineError);
      expect([e.code, e.path]).toEqual(['IO_ERROR', 'input']);
      expect(e.message).toMatch(/coordinate array x/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a Zarr spatial reference that cannot be read is a warning, not dropped silently', async () => {
    const missing = await smallStore({}, { grid_mapping: 'spatial_ref' });
    const odd = await smallStore({ crs: 'WGS 84' });
    try {
      for (const [dir, expected] of [
        [missing, /grid mapping variable spatial_ref .* is not in the store/],
        [odd, /crs "WGS 84" is not EPSG:n/],
      ] as const) {
        const warnings: string[] = [];
        const s = await openRaster(dir, { onWarning: (m) => warnings.push(m) });
        await s.close();
        expect(s.info.spatialReference).toBeUndefined();
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(expected);
        expect(warnings[0]).toMatch(/no spatial reference/);
      }
    } finally {
      await rm(missing, { recursive: true, force: true });
      await rm(odd, { recursive: true, force: true });
    }
  });
});

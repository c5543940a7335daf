// The reprojection warp against gdalwarp 3.6 (golden/warp, made by golden/warp/make-goldens.py):
// nearest exact, bilinear/cubic within a stated tolerance, U8 rounding; tiled == whole; the
// approximate transformer's positions within 0.125 px of exact ones; suggestedGrid against
// gdalwarp's default grid; transformExtent; parseSpatialReference.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import type { RasterInfo } from '../core/pixel-block.js';
import { closingOpener, gridInfo, rasterOf, tiledVersusWhole } from '../../test/helpers.js';
import { render } from './render.js';
import {
  parseSpatialReference,
  suggestedGrid,
  transformExtent,
  warpMapping,
  warpNode,
  warpPositions,
  type WarpGrid,
  type WarpMethod,
} from './warp.js';

const ROOT = resolve(import.meta.dirname, '../..');
const files = closingOpener();
afterEach(files.closeAll);

interface GoldenCase {
  readonly id: string;
  readonly source: string;
  readonly band: number;
  readonly t_srs: string;
  readonly te: [number, number, number, number];
  readonly ts: [number, number];
  readonly r: 'near' | 'bilinear' | 'cubic';
  /** gdalwarp's default grid (no -te/-ts): the whole raster with empty corners. */
  readonly default: boolean;
  readonly expected: string;
}
interface DefaultGrid {
  readonly source: string;
  readonly t_srs: string;
  readonly geotransform: number[];
  readonly width: number;
  readonly height: number;
}
const golden = JSON.parse(readFileSync(join(ROOT, 'golden/warp/cases.json'), 'utf8')) as {
  cases: GoldenCase[];
  defaultGrids: DefaultGrid[];
};

const METHOD: Record<GoldenCase['r'], WarpMethod> = { near: 'nearest', bilinear: 'bilinear', cubic: 'cubic' };

/**
 * Tolerances. nearest: exact (the same source pixel, so the same Float32/Byte value), masks equal
 * everywhere (edges included). Float32 DEM, bilinear/cubic: 1e-3 m. Both tools interpolate at
 * the same positions (gdalwarp's approximate transformer is reproduced: positions agree to
 * ~1e-9 px) with the same weights in double precision, then store Float32; what is left is
 * proj4js-versus-PROJ rounding of the position (times slopes of at most ~50 m per pixel here:
 * < 1e-6 m) and the order of the sums, then one Float32 rounding (an ulp of ~500 m values is
 * 3e-5 m). Measured: max |difference| 3.05e-5 m (one Float32 ulp) on 2 of the 8 float cases,
 * 0 elsewhere. 1e-3 m is far below the DEM's resolution (whole metres) and far above those
 * effects. U8 (Landsat band 1): within 1 DN (a double value within rounding of a .5 boundary
 * may round apart); measured 0.
 */
function toleranceOf(c: GoldenCase, float: boolean): { abs: number; maxBadFraction: number } {
  if (c.r === 'near') return { abs: 0, maxBadFraction: 0 };
  return float ? { abs: 1e-3, maxBadFraction: 0 } : { abs: 1, maxBadFraction: 0 };
}

export async function compareWithGolden(c: GoldenCase, actual: { bands: ArrayLike<number>[]; mask: Uint8Array }, float: boolean) {
  const expectedSource = await files.open(join(ROOT, c.expected));
  const { width, height } = expectedSource.info;
  const e = await expectedSource.read({ x: 0, y: 0, width, height });
  // -dstalpha: band 2 is the alpha band (or the source's mask when it reads alpha as a mask).
  const alpha = e.bands.length > 1 ? e.bands[1]! : undefined;
  let checked = 0;
  let maxDiff = 0;
  let bad = 0;
  let first: string | undefined;
  const tol = toleranceOf(c, float);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const eValid = alpha ? alpha[i]! > 0 : e.mask[i] === 1;
      const aValid = actual.mask[i] === 1;
      if (eValid !== aValid) {
        bad++;
        first ??= `mask at (${x}, ${y}): expected ${eValid}, got ${aValid}`;
        continue;
      }
      if (!eValid) continue;
      checked++;
      const d = Math.abs(actual.bands[0]![i]! - e.bands[0]![i]!);
      maxDiff = Math.max(maxDiff, d);
      if (d > tol.abs) {
        bad++;
        first ??= `(${x}, ${y}): expected ${e.bands[0]![i]}, got ${actual.bands[0]![i]}`;
      }
    }
  }
  return { width, height, checked, maxDiff, bad, first, allowed: Math.floor(tol.maxBadFraction * checked) };
}

export function gridOf(c: GoldenCase): WarpGrid {
  const [xmin, ymin, xmax, ymax] = c.te;
  return { spatialReference: parseSpatialReference(c.t_srs, 't_srs'), extent: { xmin, ymin, xmax, ymax }, width: c.ts[0], height: c.ts[1] };
}

describe('warp against gdalwarp 3.6', () => {
  for (const c of golden.cases) {
    it(`${c.id}: ${c.r === 'near' ? 'exact' : 'within tolerance'}, masks equal, tiled (odd tiles) == whole`, async () => {
      const src = await files.open(join(ROOT, c.source), { id: c.source });
      const node = warpNode(src, gridOf(c), METHOD[c.r]);
      const actual = await render(node, { tileSize: [53, 41] });
      const float = src.info.pixelType === 'F32';
      const r = await compareWithGolden(c, actual, float);
      expect([node.info.width, node.info.height]).toEqual([r.width, r.height]);
      expect(r.checked).toBeGreaterThan((c.default ? 0.7 : 0.99) * r.width * r.height);
      expect(r.bad, r.first).toBeLessThanOrEqual(r.allowed);
      if (c.r === 'near') expect(r.maxDiff).toBe(0);
      if (process.env.WARP_REPORT) console.log(c.id, { maxDiff: r.maxDiff, checked: r.checked });
      const whole = await render(node, { tileSize: Math.max(r.width, r.height) });
      expect(Buffer.from(whole.bands[0]!.buffer).equals(Buffer.from(actual.bands[0]!.buffer))).toBe(true);
      expect(Buffer.from(whole.mask).equals(Buffer.from(actual.mask))).toBe(true);
    });
  }
});

describe('approximate transformer', () => {
  it('positions within 0.125 px of exact per-pixel transforms, and the same in any tiling', async () => {
    const src = await files.open(join(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif'));
    const grid: WarpGrid = {
      spatialReference: parseSpatialReference(4326, 'imageSR'),
      extent: { xmin: -84.45, ymin: 36.4, xmax: -84.0, ymax: 36.8 },
      width: 700,
      height: 600,
    };
    const m = warpMapping(src.info, grid);
    const all = { x: 0, y: 0, width: 700, height: 600 };
    const approx = new Float64Array(2 * 700 * 600);
    warpPositions(m, all, approx);
    const exact = new Float64Array(approx.length);
    warpPositions({ ...m, maxError: 0 }, all, exact);
    let worst = 0;
    let differing = 0;
    for (let i = 0; i < approx.length; i += 2) {
      const e = Math.abs(approx[i]! - exact[i]!) + Math.abs(approx[i + 1]! - exact[i + 1]!);
      worst = Math.max(worst, e);
      if (e > 0) differing++;
    }
    expect(worst).toBeLessThanOrEqual(0.125 * 1.5); // the error is tested at the middle point of each run
    expect(differing).toBeGreaterThan(1000); // it did approximate
    const tile = new Float64Array(2 * 37 * 23);
    warpPositions(m, { x: 401, y: 77, width: 37, height: 23 }, tile);
    for (let j = 0; j < 23; j++) {
      for (let i = 0; i < 37; i++) {
        const a = 2 * (j * 37 + i);
        const b = 2 * ((77 + j) * 700 + 401 + i);
        expect([tile[a], tile[a + 1]]).toEqual([approx[b], approx[b + 1]]);
      }
    }
  });

  it('same SR: affine, output pixel centres (i + 0.5) mapped through both geotransforms', () => {
    const info = gridInfo({ width: 9, height: 9 });
    const grid: WarpGrid = {
      spatialReference: info.spatialReference!,
      extent: { xmin: info.extent.xmin + 1, ymin: info.extent.ymax - 4, xmax: info.extent.xmin + 5, ymax: info.extent.ymax },
      width: 2,
      height: 2,
    };
    const xy = new Float64Array(8);
    warpPositions(warpMapping(info, grid), { x: 0, y: 0, width: 2, height: 2 }, xy);
    const cs = info.cellSize.x;
    expect([...xy].map((v) => Math.round(v * 1e9) / 1e9)).toEqual([2, 1, 4, 1, 2, 3, 4, 3].map((v) => (v - 1) / cs + 1 / cs - 1 + 1));
  });
});

describe('warp node', () => {
  const utm = { width: 61, height: 47, cellSize: 30, origin: { x: 500000, y: 4000000 } };
  const mask = new Uint8Array(61 * 47).fill(1);
  for (let i = 0; i < mask.length; i += 7) mask[i] = 0;
  const src = rasterOf({ ...utm, noData: -1 }, (x, y) => x * 3 + y * y, mask);
  const grid: WarpGrid = {
    spatialReference: parseSpatialReference('EPSG:4326', 't_srs'),
    extent: transformExtent(src.info.extent, src.info.spatialReference!, { wkid: 4326 }),
    width: 50,
    height: 40,
  };
  for (const method of ['nearest', 'bilinear', 'cubic'] as const) {
    it(`${method}: tiled == whole bit for bit with odd tiles; NoData stays NoData; outside is masked`, async () => {
      const node = warpNode(src, grid, method);
      expect(await tiledVersusWhole(node, [7, 5])).toBeUndefined();
      expect(await tiledVersusWhole(node, [13, 17])).toBeUndefined();
      const out = await render(node);
      // The transformed extent's bounding box holds corners outside the rotated UTM footprint.
      expect(out.mask[0]).toBe(0);
      expect(out.mask.filter((v) => v === 1).length).toBeGreaterThan(1000);
      expect(node.info.spatialReference?.wkid).toBe(4326);
      expect(node.info.noData).toBe(-1);
    });
  }

  it('checks its grid and method', () => {
    const err = (f: () => unknown): EngineError => {
      try {
        f();
      } catch (e) {
        return e as EngineError;
      }
      throw new Error('no error');
    };
    expect(err(() => warpNode(src, { ...grid, width: 0 }, 'nearest')).path).toBe('size');
    expect(err(() => warpNode(src, { ...grid, extent: { ...grid.extent, xmax: grid.extent.xmin } }, 'nearest')).path).toBe('extent');
    expect(err(() => warpNode(src, grid, 'lanczos' as WarpMethod)).path).toBe('method');
    expect(warpNode(src, grid, 'nearest').id).not.toBe(warpNode(src, grid, 'bilinear').id);
  });
});

describe('suggestedGrid (gdalwarp -t_srs without -te/-tr/-ts)', () => {
  for (const g of golden.defaultGrids) {
    it(`${g.source} to ${g.t_srs}`, async () => {
      const src = await files.open(join(ROOT, g.source));
      const s = suggestedGrid(src.info, parseSpatialReference(g.t_srs, 't_srs'));
      const res = (s.extent.xmax - s.extent.xmin) / s.width;
      expect([s.width, s.height]).toEqual([g.width, g.height]);
      const gt = g.geotransform;
      expect(Math.abs(res - gt[1]!) / gt[1]!).toBeLessThan(1e-8);
      expect(Math.abs(s.extent.xmin - gt[0]!) / gt[1]!).toBeLessThan(1e-6);
      expect(Math.abs(s.extent.ymax - gt[3]!) / gt[1]!).toBeLessThan(1e-6);
    });
  }
});

describe('transformExtent', () => {
  it('densifies the edges (21 points each): the UTM DEM in 4326 and back', async () => {
    const src = await files.open(join(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif'));
    const info: RasterInfo = src.info;
    const geo = transformExtent(info.extent, info.spatialReference!, { wkid: 4326 });
    // gdalinfo's corners: 84d24'40.15"W .. 84d4'50.26"W, 36d26'54.45"N .. 36d43'50.66"N
    expect(geo.xmin).toBeCloseTo(-(84 + 24 / 60 + 40.15 / 3600), 4);
    expect(geo.xmax).toBeCloseTo(-(84 + 4 / 60 + 50.26 / 3600), 4);
    expect(geo.ymin).toBeCloseTo(36 + 26 / 60 + 54.45 / 3600, 4);
    // The top edge bulges north of its corners in geographic coordinates: densified, ymax is above both.
    expect(geo.ymax).toBeGreaterThan(36 + 43 / 60 + 50.66 / 3600 - 1e-6);
    const same = transformExtent(info.extent, info.spatialReference!, { wkid: 32616 });
    expect(same).toEqual({ ...info.extent });
    expect(() => transformExtent({ xmin: 0, ymin: 91, xmax: 1, ymax: 95 }, { wkid: 4326 }, { wkid: 3857 })).toThrow(EngineError);
  });
});

describe('parseSpatialReference', () => {
  it('wkid numbers and strings, EPSG:n, Esri JSON (object or text), WKT', () => {
    expect(parseSpatialReference(3857, 'imageSR')).toMatchObject({ wkid: 3857, metersPerUnit: 1 });
    expect(parseSpatialReference('4326', 'bboxSR')).toMatchObject({ wkid: 4326, geographic: true });
    expect(parseSpatialReference('EPSG:32616', 't_srs').proj4).toContain('+zone=16');
    expect(parseSpatialReference('epsg:26916', 't_srs').proj4).toContain('+datum=NAD83');
    expect(parseSpatialReference({ wkid: 102100, latestWkid: 3857 }, 'imageSR')).toMatchObject({ wkid: 102100 });
    expect(parseSpatialReference({ wkid: 999999, latestWkid: 3857 }, 'imageSR')).toMatchObject({ wkid: 3857 });
    expect(parseSpatialReference('{"wkid": 4326}', 'bboxSR').wkid).toBe(4326);
    const wkt =
      'GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]';
    expect(parseSpatialReference({ wkt }, 'imageSR')).toMatchObject({ wkt, geographic: true });
  });

  it('errors are INVALID_ARGUMENT naming the parameter', () => {
    for (const bad of [999999, '0', 'EPSG:abc', '{"wkid":', { wkid: 12 }, {}, [], null, 'PROJCS[nonsense', true]) {
      let e: unknown;
      try {
        parseSpatialReference(bad, 'imageSR');
      } catch (x) {
        e = x;
      }
      expect(e, JSON.stringify(bad)).toBeInstanceOf(EngineError);
      expect((e as EngineError).code).toBe('INVALID_ARGUMENT');
      expect((e as EngineError).path).toBe('imageSR');
      expect((e as EngineError).message).toContain('imageSR');
    }
  });
});

import { encodeIndexedPng } from '../../io/encode-png.js';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import { fileURLToPath } from 'node:url';
import { fakeRenderer, fakeService } from '../../../test/map-tiles.js';
import { featureLayer, memoryMap, memoryTable, rasterLayer } from '../../../test/memory-map.js';
import { testSite, type TestSite } from '../../../test/site.js';
import { imageServicesOf } from '../image/service.js';
import { METERS_PER_INCH } from './view.js';
import { tileSchemeOf } from './config.js';
import { drawMap } from './draw.js';
import type { Geometry, MapService } from './model.js';
import {
  CACHE_MARKER,
  cacheTileExtent,
  cacheTileRange,
  columnFile,
  createMapTileCache,
  drawTileRenderer,
  encodeTileImage,
  encodeTileImageAsync,
  levelFolder,
  mapTileCachesOf,
  parseTilePath,
  rowFolder,
  tileEncodingOf,
  tileExtent,
  type RenderTile,
} from './tile-cache.js';

const rgbaOf = (bytes: Uint8Array): Uint8Array => new Uint8Array(PNG.sync.read(Buffer.from(bytes)).data);
const temp = (): string => mkdtempSync(join(tmpdir(), 'rf-tiles-'));

describe('tile scheme geometry', () => {
  it('tile 0/0/0 starts at the origin; extents step by cols x resolution and rows x resolution', () => {
    const s = fakeService(temp());
    expect(tileExtent(s.tiling, 0, 0, 0)).toEqual({ xmin: 1000, ymin: 9000 - 16 * 32, xmax: 1000 + 16 * 32, ymax: 9000 });
    expect(tileExtent(s.tiling, 2, 3, 5)).toEqual({
      xmin: 1000 + 5 * 16 * 8,
      ymin: 9000 - 4 * 16 * 8,
      xmax: 1000 + 6 * 16 * 8,
      ymax: 9000 - 3 * 16 * 8,
    });
    expect(tileExtent(s.tiling, 9, 0, 0)).toBeUndefined();
  });

  it('the cache holds the tiles that meet the full extent, nothing else', () => {
    const s = fakeService(temp());
    // Level 0: 512 m tiles; the 700 x 1000 extent spans cols 0-1, rows 0-1.
    expect(cacheTileRange(s, 0)).toEqual({ minRow: 0, maxRow: 1, minCol: 0, maxCol: 1 });
    expect(cacheTileExtent(s, 0, 1, 1)).toBeDefined();
    expect(cacheTileExtent(s, 0, 2, 0)).toBeUndefined();
    expect(cacheTileExtent(s, 0, 0, 2)).toBeUndefined();
    expect(cacheTileExtent(s, 0, -1, 0)).toBeUndefined();
    expect(cacheTileExtent(s, 0, 0.5, 0)).toBeUndefined();
    expect(cacheTileExtent(s, 4, 0, 0)).toBeUndefined();
    // Level 3: 64 m tiles: 700/64 -> cols 0..10, 1000/64 -> rows 0..15.
    expect(cacheTileRange(s, 3)).toEqual({ minRow: 0, maxRow: 15, minCol: 0, maxCol: 10 });
    const r = cacheTileRange(s, 3)!;
    for (const [row, col] of [
      [r.maxRow, r.maxCol],
      [r.maxRow + 1, r.maxCol],
      [r.maxRow, r.maxCol + 1],
    ] as const) {
      expect(cacheTileExtent(s, 3, row, col) !== undefined).toBe(row <= r.maxRow && col <= r.maxCol);
    }
  });

  it('a full extent ending on a tile boundary (up to rounding) gains no slivers', () => {
    // Level 0 spans the extent's larger side in one tile; its resolution lost a little to rounding.
    const span = 0.3 * (1 - 1e-12);
    const e = { xmin: 0.7, ymin: -0.3, xmax: 0.7 + 0.3, ymax: 0 };
    const base = fakeService(temp(), { scheme: { origin: { x: 0.7, y: 0 }, lods: [{ level: 0, resolution: span / 16, scale: 1 }] } });
    const s = { ...base, fullExtent: e };
    expect(cacheTileRange(s, 0)).toEqual({ minRow: 0, maxRow: 0, minCol: 0, maxCol: 0 });
    expect(cacheTileExtent(s, 0, 0, 0)).toBeDefined();
    expect(cacheTileExtent(s, 0, 0, 1)).toBeUndefined();
    expect(cacheTileExtent(s, 0, 1, 0)).toBeUndefined();
    // A point extent is in the one tile holding it.
    const point = { ...s, fullExtent: { xmin: 0.75, ymin: -0.1, xmax: 0.75, ymax: -0.1 } };
    expect(cacheTileRange(point, 0)).toEqual({ minRow: 0, maxRow: 0, minCol: 0, maxCol: 0 });
    expect(cacheTileExtent(point, 0, 0, 0)).toBeDefined();
  });

  it("names folders and files the vendor's exploded way and parses them back", () => {
    expect([levelFolder(5), rowFolder(26), columnFile(255, 'png')]).toEqual(['L05', 'R0000001a', 'C000000ff.png']);
    expect(levelFolder(12)).toBe('L12');
    expect(parseTilePath('L05', 'R0000001a', 'C000000ff.jpg')).toEqual({ level: 5, row: 26, col: 255, ext: 'jpg' });
    expect(parseTilePath('L5', 'R0000001a', 'C000000ff.png')).toBeUndefined();
    expect(parseTilePath('L05', 'R1a', 'C000000ff.png')).toBeUndefined();
    expect(parseTilePath('L05', 'R0000001a', 'C000000ff.gif')).toBeUndefined();
  });
});

describe('tile encodings', () => {
  const px = (n: number, f: (i: number) => [number, number, number, number]): Uint8Array => {
    const out = new Uint8Array(n * 4);
    for (let i = 0; i < n; i++) out.set(f(i), i * 4);
    return out;
  };

  it('formats by name, any case; unknown ones are refused naming Format', () => {
    const scheme = { format: 'MIXED' } as const;
    expect(tileEncodingOf(undefined, scheme)).toBe('mixed');
    expect(tileEncodingOf('', { format: 'JPEG' })).toBe('jpeg');
    expect(['png', 'PNG8', 'png24', 'PNG32', 'jpg', 'JPEG', 'Mixed'].map((f) => tileEncodingOf(f, scheme))).toEqual([
      'png',
      'png8',
      'png24',
      'png32',
      'jpeg',
      'jpeg',
      'mixed',
    ]);
    expect(() => tileEncodingOf('gif', scheme)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', path: 'Format' }) as Error);
  });

  it('PNG keeps the pixels (RGB when opaque, RGBA otherwise); PNG32 always has alpha; PNG24 composites over the matte', () => {
    const opaque = px(16, (i) => [i * 10, 255 - i, 3, 255]);
    const translucent = px(16, (i) => [i * 10, 255 - i, 3, i === 0 ? 0 : i === 1 ? 128 : 255]);
    const png = encodeTileImage(opaque, 4, 4, 'png', 75, [0, 0, 0]);
    expect(png.ext).toBe('png');
    expect(png.bytes[25]).toBe(2); // IHDR colour type RGB
    expect(rgbaOf(png.bytes)).toEqual(opaque);
    const png32 = encodeTileImage(opaque, 4, 4, 'png32', 75, [0, 0, 0]);
    expect(png32.bytes[25]).toBe(6);
    expect(rgbaOf(encodeTileImage(translucent, 4, 4, 'png', 75, [0, 0, 0]).bytes)).toEqual(translucent);
    const png24 = rgbaOf(encodeTileImage(translucent, 4, 4, 'png24', 75, [200, 100, 50]).bytes);
    expect([...png24.subarray(0, 4)]).toEqual([200, 100, 50, 255]); // alpha 0: the matte
    expect([...png24.subarray(4, 8)]).toEqual([
      Math.round((10 * 128 + 200 * 127) / 255),
      Math.round((254 * 128 + 100 * 127) / 255),
      Math.round((3 * 128 + 50 * 127) / 255),
      255,
    ]);
  });

  it('PNG8 is an indexed PNG, exact up to 256 colours and reduced beyond', () => {
    const few = px(64, (i) => [(i % 5) * 50, 20, 30, i % 7 === 0 ? 0 : 255]);
    const bytes = encodeIndexedPng(few, 8, 8);
    expect(bytes[25]).toBe(3); // colour type: palette
    const back = rgbaOf(bytes);
    for (let i = 0; i < 64; i++) {
      if (few[i * 4 + 3] === 0) expect(back[i * 4 + 3]).toBe(0);
      else expect([...back.subarray(i * 4, i * 4 + 4)]).toEqual([...few.subarray(i * 4, i * 4 + 4)]);
    }
    const many = px(1024, (i) => [i & 255, (i >> 2) & 255, (i * 7) & 255, 255]);
    const reduced = rgbaOf(encodeIndexedPng(many, 32, 32));
    for (let i = 0; i < 1024; i++) {
      for (let c = 0; c < 3; c++) expect(Math.abs(reduced[i * 4 + c]! - many[i * 4 + c]!)).toBeLessThanOrEqual(26);
    }
  });

  it('JPEG and MIXED: JPEG when opaque, PNG when any pixel is not', () => {
    const opaque = px(64, () => [10, 200, 30, 255]);
    const edge = px(64, (i) => [10, 200, 30, i < 8 ? 0 : 255]);
    expect(encodeTileImage(opaque, 8, 8, 'jpeg', 90, [255, 255, 255]).ext).toBe('jpg');
    expect(encodeTileImage(edge, 8, 8, 'jpeg', 90, [255, 255, 255]).contentType).toBe('image/jpeg');
    expect(encodeTileImage(opaque, 8, 8, 'mixed', 90, [255, 255, 255]).ext).toBe('jpg');
    expect(encodeTileImage(edge, 8, 8, 'mixed', 90, [255, 255, 255]).ext).toBe('png');
    expect(() => encodeTileImage(opaque, 9, 8, 'png', 75, [0, 0, 0])).toThrow(/not 9 x 8 x 4/);
  });
});

describe('the tile cache', () => {
  it('draws a tile once for ten parallel requests, stores it in the exploded layout, then serves the file', async () => {
    const root = temp();
    const service = fakeService(root);
    const { render, calls } = fakeRenderer(30);
    const cache = createMapTileCache({ render });
    const tiles = await Promise.all(Array.from({ length: 10 }, () => cache.tile(service, { level: 2, row: 3, col: 1 })));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      level: 2,
      row: 3,
      col: 1,
      width: 16,
      height: 16,
      dpi: 96,
      resolution: 8,
      extent: tileExtent(service.tiling, 2, 3, 1),
    });
    expect(new Set(tiles.map((t) => t.etag)).size).toBe(1);
    const file = join(service.tiling.cacheDir, '_alllayers', 'L02', 'R00000003', 'C00000001.png');
    expect(new Uint8Array(readFileSync(file))).toEqual(tiles[0]!.bytes);
    expect([...rgbaOf(tiles[0]!.bytes).subarray(0, 4)]).toEqual([2 * 40 + 7, 30, 10, 255]);
    // A hit is the file: change it on disk and the cache serves what is there, without drawing.
    const edited = encodeTileImage(new Uint8Array(16 * 16 * 4).fill(255), 16, 16, 'png', 75, [0, 0, 0]).bytes;
    writeFileSync(file, edited);
    const again = await cache.tile(service, { level: 2, row: 3, col: 1 });
    expect(again.hit).toBe(true);
    expect(again.bytes).toEqual(edited);
    expect(calls).toHaveLength(1);
    expect(cache.stats()).toMatchObject({ draws: 1, hits: 1 });
    expect(JSON.parse(readFileSync(join(service.tiling.cacheDir, CACHE_MARKER), 'utf8'))).toEqual({ service: 'svc', version: 'v1' });
  });

  it('draws at most `concurrency` tiles at once', async () => {
    const service = fakeService(temp());
    const { render, calls } = fakeRenderer(20);
    const cache = createMapTileCache({ render, concurrency: 2 });
    await Promise.all(Array.from({ length: 8 }, (_, i) => cache.tile(service, { level: 3, row: i, col: 2 })));
    expect(calls).toHaveLength(8);
    expect(cache.stats().peak).toBe(2);
  });

  it('layer caches draw one layer, under the layer id; unknown layers and tables are NOT_FOUND', async () => {
    const service = fakeService(temp());
    const { render, calls } = fakeRenderer();
    const cache = createMapTileCache({ render });
    await cache.tile(service, { level: 1, row: 0, col: 1, layerId: 1 });
    expect(calls[0]!.layerId).toBe(1);
    expect(existsSync(join(service.tiling.cacheDir, '1', 'L01', 'R00000000', 'C00000001.png'))).toBe(true);
    await cache.tile(service, { level: 1, row: 0, col: 1, layerId: -1 });
    expect(calls[1]!.layerId).toBeUndefined();
    await expect(cache.tile(service, { level: 1, row: 0, col: 1, layerId: 9 })).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: "Layer 9 does not exist in map 'Layers'.",
    });
    await expect(cache.tile(service, { level: 1, row: 0, col: 1, layerId: 2 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('tiles outside the cache are "Tile not found." and never drawn', async () => {
    const service = fakeService(temp());
    const { render, calls } = fakeRenderer();
    const cache = createMapTileCache({ render });
    for (const [level, row, col] of [
      [7, 0, 0],
      [0, 2, 0],
      [0, 0, 2],
      [0, -1, 0],
      [3, 16, 0],
    ] as const) {
      const e = await cache.tile(service, { level, row, col }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(EngineError);
      expect(e).toMatchObject({ code: 'NOT_FOUND', message: 'Tile not found.', details: [`Level=${level} Row=${row} Column=${col}`] });
    }
    expect(calls).toHaveLength(0);
  });

  it('a new service version never serves the old tiles, and the old version folder is swept', async () => {
    const root = temp();
    const v1 = fakeService(root, { version: 'v1' });
    const { render, calls } = fakeRenderer();
    const cache = createMapTileCache({ render });
    const a = await cache.tile(v1, { level: 0, row: 0, col: 0 });
    // Another folder that is not a cache of this service survives the sweep.
    const other = join(root, 'map', 'svc', 'data');
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, 'keep.txt'), 'x');
    const v2 = fakeService(root, { version: 'v2', backgroundColor: [0, 0, 0, 255] });
    const render2: RenderTile = async (s, t) => {
      const out = await render(s, t);
      out[4] = 99; // the new version draws differently
      return out;
    };
    const cache2 = createMapTileCache({ render: render2 });
    const b = await cache2.tile(v2, { level: 0, row: 0, col: 0 });
    expect(calls).toHaveLength(2);
    expect(b.etag).not.toBe(a.etag);
    expect(existsSync(v1.tiling.cacheDir)).toBe(false);
    expect(existsSync(join(other, 'keep.txt'))).toBe(true);
    // A cache folder left with another version's marker (same path reused) is emptied first.
    const reused = fakeService(root, { version: 'v3', scheme: { cacheDir: v2.tiling.cacheDir } });
    await cache2.tile(reused, { level: 0, row: 0, col: 0 });
    expect(calls).toHaveLength(3);
  });

  it('other formats than the cache format are kept apart; MIXED caches hold .jpg inside and .png at the edges', async () => {
    const service = fakeService(temp(), { scheme: { format: 'MIXED' } });
    const { render } = fakeRenderer(0, 0);
    const cache = createMapTileCache({ render });
    const edge = await cache.tile(service, { level: 0, row: 0, col: 0 });
    expect(edge.ext).toBe('png');
    const jpeg = await cache.tile(service, { level: 0, row: 0, col: 0, format: 'JPEG' });
    expect(jpeg.contentType).toBe('image/jpeg');
    expect(existsSync(join(service.tiling.cacheDir, '_formats', 'jpeg', '_alllayers', 'L00', 'R00000000', 'C00000000.jpg'))).toBe(true);
    const hit = await cache.tile(service, { level: 0, row: 0, col: 0 });
    expect(hit).toMatchObject({ hit: true, ext: 'png' });
    const opaque = createMapTileCache({ render: fakeRenderer().render });
    const inside = await opaque.tile(fakeService(temp(), { scheme: { format: 'MIXED' } }), { level: 0, row: 0, col: 0 });
    expect(inside.ext).toBe('jpg');
  });
});

describe('tiles drawn by the map drawing', () => {
  const DEM = fileURLToPath(new URL('../../../golden/data/olinda_dem_utm25s.tif', import.meta.url));
  const SPOTS = fileURLToPath(new URL('../../../test/fixtures/map/spot-heights.geojson', import.meta.url));

  async function olinda(): Promise<{ service: MapService; site: TestSite }> {
    const site = await testSite();
    const relief = await rasterLayer(1, 'Relief', DEM, {
      rasterFunction: 'Hillshade',
      rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 },
    });
    const json = JSON.parse(readFileSync(SPOTS, 'utf8')) as {
      features: { properties: Record<string, string | number>; geometry: Geometry }[];
    };
    const table = memoryTable(
      json.features.map((f, i) => ({ id: i + 1, attributes: f.properties, geometry: f.geometry })),
      'point',
    );
    const spots = featureLayer(0, 'Spot heights', table, {
      type: 'simple',
      symbol: { type: 'esriSMS', style: 'esriSMSCircle', color: [200, 0, 0, 255], size: 10 },
    });
    const sr = relief.image.info.spatialReference!;
    const full = relief.extent;
    const tiling = tileSchemeOf(
      { dpi: 96, tileSize: 256, format: 'PNG', quality: 75, clientCachingAllowed: true, levels: 4 },
      sr,
      full,
      // 111 x 111 cells of 90 m: zoom in to 1/16 cell so that there are four levels.
      relief.image.info.cellSize.x / 16,
      join(temp(), 'olinda', 'v1', 'tiles'),
    );
    return { service: memoryMap([spots, relief], sr, full, { tiling }), site };
  }

  it('a tile is the map drawMap draws for its extent; tile 0/0/0 starts at the origin; the LODs follow the scheme', async () => {
    const { service, site } = await olinda();
    const s = service.tiling;
    expect(s.lods.length).toBeGreaterThanOrEqual(3);
    for (const l of s.lods) expect(l.scale).toBeCloseTo((l.resolution * 1 * s.dpi) / METERS_PER_INCH, 6);
    const zero = tileExtent(s, 0, 0, 0)!;
    expect([zero.xmin, zero.ymax]).toEqual([s.origin.x, s.origin.y]);
    expect([s.origin.x, s.origin.y]).toEqual([service.fullExtent.xmin, service.fullExtent.ymax]);
    const cache = createMapTileCache({ render: drawTileRenderer(site) });
    // A level-2 tile holding a spot height: hillshade below, the red marker on top.
    const spot = [289451.21, 9119815.81] as const;
    const lod = s.lods[2]!;
    const col = Math.floor((spot[0] - s.origin.x) / (lod.resolution * s.cols));
    const row = Math.floor((s.origin.y - spot[1]) / (lod.resolution * s.rows));
    const tile = await cache.tile(service, { level: 2, row, col });
    const drawn = await drawMap(imageServicesOf(site), service, {
      extent: tileExtent(s, 2, row, col)!,
      spatialReference: service.spatialReference,
      width: 256,
      height: 256,
      dpi: 96,
      scale: lod.scale,
      resolution: lod.resolution,
    });
    const pixels = rgbaOf(tile.bytes);
    expect(pixels).toEqual(new Uint8Array(drawn.rgba));
    // Not a blank tile: greys of the hillshade, and the marker's red at the spot.
    const grey = new Set<number>();
    for (let i = 0; i < 256 * 256; i++) if (pixels[i * 4] === pixels[i * 4 + 1]) grey.add(pixels[i * 4]!);
    expect(grey.size).toBeGreaterThan(20);
    const px = Math.floor((spot[0] - tileExtent(s, 2, row, col)!.xmin) / lod.resolution);
    const py = Math.floor((tileExtent(s, 2, row, col)!.ymax - spot[1]) / lod.resolution);
    expect([...pixels.subarray((py * 256 + px) * 4, (py * 256 + px) * 4 + 4)]).toEqual([200, 0, 0, 255]);
  });

  it('a layer tile draws that layer alone over a transparent background', async () => {
    const { service, site } = await olinda();
    const cache = createMapTileCache({ render: drawTileRenderer(site) });
    const s = service.tiling;
    const lod = s.lods[0]!;
    const spots = rgbaOf((await cache.tile(service, { level: 0, row: 0, col: 0, layerId: 0 })).bytes);
    const alone = await drawMap(
      imageServicesOf(site),
      service,
      {
        extent: tileExtent(s, 0, 0, 0)!,
        spatialReference: service.spatialReference,
        width: 256,
        height: 256,
        dpi: 96,
        scale: lod.scale,
        resolution: lod.resolution,
      },
      {
        layers: new Map([
          [0, { visible: true }],
          [1, { visible: false }],
        ]),
        backgroundColor: [0, 0, 0, 0],
      },
    );
    expect(spots).toEqual(new Uint8Array(alone.rgba));
    let transparent = 0;
    let red = 0;
    for (let i = 0; i < 256 * 256; i++) {
      if (spots[i * 4 + 3] === 0) transparent++;
      if (spots[i * 4] === 200 && spots[i * 4 + 1] === 0 && spots[i * 4 + 3] === 255) red++;
    }
    expect(transparent).toBeGreaterThan(256 * 256 * 0.9);
    expect(red).toBeGreaterThan(0);
    // The relief layer's tile is opaque hillshade where the DEM has data, with no red marker.
    const relief = rgbaOf((await cache.tile(service, { level: 0, row: 0, col: 0, layerId: 1 })).bytes);
    for (let i = 0; i < 256 * 256; i++) expect(relief[i * 4] === 200 && relief[i * 4 + 1] === 0 && relief[i * 4 + 3] === 255).toBe(false);
  });
});

describe('asynchronous tile encoding', () => {
  const px = (n: number, f: (i: number) => [number, number, number, number]): Uint8Array => {
    const out = new Uint8Array(n * 4);
    for (let i = 0; i < n; i++) out.set(f(i), i * 4);
    return out;
  };
  it('writes the bytes encodeTileImage writes, for every encoding, opaque or not, any size', async () => {
    let seed = 7;
    const rnd = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 255;
    for (const [w, h] of [
      [1, 1],
      [5, 3],
      [16, 16],
      [33, 7],
    ] as const) {
      const opaque = px(w * h, () => [rnd(), rnd(), rnd(), 255]);
      const translucent = px(w * h, (i) => [rnd(), rnd(), rnd(), i % 3 === 0 ? rnd() : 255]);
      for (const rgba of [opaque, translucent]) {
        for (const e of ['png', 'png24', 'png32', 'png8', 'jpeg', 'mixed'] as const) {
          const sync = encodeTileImage(rgba, w, h, e, 80, [200, 100, 50]);
          const async = await encodeTileImageAsync(rgba, w, h, e, 80, [200, 100, 50]);
          expect(async, `${e} ${w}x${h}`).toEqual(sync);
        }
      }
    }
    await expect(encodeTileImageAsync(new Uint8Array(12), 2, 2, 'png', 75, [0, 0, 0])).rejects.toThrow(/not 2 x 2 x 4/);
  });
});

/** A renderer whose drawings end when the test says so (one `release()` each, kept when none waits); it records the signal each drawing got. */
function gatedRenderer(): {
  render: RenderTile;
  calls: { t: { row: number; col: number }; signal: AbortSignal | undefined }[];
  release: () => void;
} {
  const calls: { t: { row: number; col: number }; signal: AbortSignal | undefined }[] = [];
  const waiting: (() => void)[] = [];
  let permits = 0;
  const render: RenderTile = async (_service, t, signal) => {
    calls.push({ t, signal });
    if (permits > 0) permits--;
    else await new Promise<void>((r) => waiting.push(r));
    signal?.throwIfAborted();
    return new Uint8Array(t.width * t.height * 4).fill(255);
  };
  return {
    render,
    calls,
    release: () => {
      const w = waiting.shift();
      if (w) w();
      else permits++;
    },
  };
}

/** Waits until `cond` holds (10 s at most). */
async function until(cond: () => boolean, what: string): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > 10_000) throw new Error(`waited 10 s for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('the tile queue', () => {
  it('answers SERVER_BUSY beyond maxQueued waiting drawings; joining a drawing and cached tiles never wait for a place', async () => {
    const service = fakeService(temp());
    const g = gatedRenderer();
    const cache = createMapTileCache({ render: g.render, concurrency: 1, maxQueued: 2 });
    // A cached tile, drawn before the queue fills.
    g.release();
    await cache.tile(service, { level: 3, row: 9, col: 0 });
    const a = cache.tile(service, { level: 3, row: 0, col: 0 }); // drawing
    await until(() => g.calls.length === 2, 'the first drawing');
    const b = cache.tile(service, { level: 3, row: 1, col: 0 }); // waits
    await until(() => cache.stats().queued === 1, 'one waiting');
    const c = cache.tile(service, { level: 3, row: 2, col: 0 }); // waits after it
    await until(() => cache.stats().queued === 2, 'two waiting');
    expect(cache.stats()).toMatchObject({ running: 1, queued: 2 });
    const busy = await cache.tile(service, { level: 3, row: 3, col: 0 }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(EngineError);
    expect(busy).toMatchObject({ code: 'SERVER_BUSY', path: 'maxQueuedRenders' });
    expect((busy as EngineError).message).toMatch(/^The server is busy: 2 map tiles are already waiting .*\(maxQueuedRenders\)/);
    expect((busy as EngineError).details).toEqual([(busy as EngineError).message]);
    // Joining a queued drawing takes no place; a cached tile is served at once.
    const b2 = cache.tile(service, { level: 3, row: 1, col: 0 });
    const hit = await cache.tile(service, { level: 3, row: 9, col: 0 });
    expect(hit.hit).toBe(true);
    for (let i = 0; i < 3; i++) g.release();
    const [ta, tb, tc, tb2] = await Promise.all([a, b, c, b2]);
    expect([ta.hit, tb.hit, tc.hit]).toEqual([false, false, false]);
    expect(tb2.etag).toBe(tb.etag);
    expect(g.calls.map((x) => x.t.row)).toEqual([9, 0, 1, 2]);
    expect(cache.stats()).toMatchObject({ draws: 4, busy: 1, peak: 1, queued: 0, running: 0 });
    // The queue has room again.
    g.release();
    expect((await cache.tile(service, { level: 3, row: 3, col: 0 })).hit).toBe(false);
  });

  it('one client may have maxPerClient drawings running or waiting; others still get theirs', async () => {
    const service = fakeService(temp());
    const g = gatedRenderer();
    const cache = createMapTileCache({ render: g.render, concurrency: 1, maxQueued: 100, maxPerClient: 2 });
    const mine = [0, 1].map((row) => cache.tile(service, { level: 3, row, col: 0, client: 'ip:10.0.0.1' }));
    await until(() => cache.stats().running === 1 && cache.stats().queued === 1, 'one drawing and one waiting');
    await expect(cache.tile(service, { level: 3, row: 2, col: 0, client: 'ip:10.0.0.1' })).rejects.toMatchObject({
      code: 'SERVER_BUSY',
      path: 'maxRendersPerClient',
    });
    // Another client is queued; and the first client may still join a drawing it (or anyone) started.
    const other = cache.tile(service, { level: 3, row: 3, col: 0, client: 'ip:10.0.0.2' });
    const joined = cache.tile(service, { level: 3, row: 1, col: 0, client: 'ip:10.0.0.1' });
    for (let i = 0; i < 3; i++) g.release();
    await Promise.all([...mine, other, joined]);
    expect(g.calls.map((c) => c.t.row).sort()).toEqual([0, 1, 3]);
  });

  it('maxQueued 0: a drawing starts only when a slot is free', async () => {
    const service = fakeService(temp());
    const g = gatedRenderer();
    const cache = createMapTileCache({ render: g.render, concurrency: 1, maxQueued: 0 });
    const a = cache.tile(service, { level: 3, row: 0, col: 0 });
    await until(() => cache.stats().running === 1, 'a drawing');
    await expect(cache.tile(service, { level: 3, row: 1, col: 0 })).rejects.toMatchObject({ code: 'SERVER_BUSY' });
    g.release();
    await a;
    g.release();
    expect((await cache.tile(service, { level: 3, row: 1, col: 0 })).hit).toBe(false);
  });

  it("a request stops waiting when its signal aborts, with the signal's reason; a drawing nobody waits for is dropped or aborted", async () => {
    const service = fakeService(temp());
    const g = gatedRenderer();
    const cache = createMapTileCache({ render: g.render, concurrency: 1, maxQueued: 10 });
    const a = cache.tile(service, { level: 3, row: 0, col: 0 }); // drawing, no signal
    await until(() => cache.stats().running === 1, 'a drawing');
    // A queued drawing whose only request times out: TIMEOUT to it, and never drawn.
    const timeout = new AbortController();
    const b = cache.tile(service, { level: 3, row: 1, col: 0 }, timeout.signal);
    await until(() => cache.stats().queued === 1, 'one waiting');
    timeout.abort(new EngineError('TIMEOUT', 'The request took longer than the server allows.'));
    await expect(b).rejects.toMatchObject({ code: 'TIMEOUT' });
    expect(cache.stats()).toMatchObject({ queued: 0, abandoned: 1 });
    // Two requests wait for one queued drawing: one hangs up (ABORTED), the other still gets the tile.
    const gone = new AbortController();
    const c1 = cache.tile(service, { level: 3, row: 2, col: 0 }, gone.signal);
    const c2 = cache.tile(service, { level: 3, row: 2, col: 0 });
    await until(() => cache.stats().queued === 1, 'one waiting');
    gone.abort();
    await expect(c1).rejects.toMatchObject({ code: 'ABORTED' });
    g.release();
    await a;
    g.release();
    expect((await c2).hit).toBe(false);
    expect(g.calls.map((x) => x.t.row)).toEqual([0, 2]);
    // A running drawing whose only request hangs up is aborted (its signal), and frees its slot.
    const hang = new AbortController();
    const d = cache.tile(service, { level: 3, row: 3, col: 0 }, hang.signal);
    await until(() => g.calls.length === 3, 'the drawing of row 3');
    const drawing = g.calls[2]!;
    expect(drawing.t.row).toBe(3);
    expect(drawing.signal?.aborted).toBe(false);
    hang.abort();
    await expect(d).rejects.toMatchObject({ code: 'ABORTED' });
    expect(drawing.signal?.aborted).toBe(true);
    g.release();
    await until(() => cache.stats().running === 0, 'the slot freed');
    expect(existsSync(join(service.tiling.cacheDir, '_alllayers', 'L03', 'R00000003', 'C00000000.png'))).toBe(false);
    // An already aborted signal: nothing is drawn.
    await expect(cache.tile(service, { level: 3, row: 4, col: 0 }, AbortSignal.abort())).rejects.toMatchObject({ code: 'ABORTED' });
    expect(g.calls.length).toBe(3);
  });

  it("the site's shared cache takes its queue bound from the site's maxQueuedRenders", async () => {
    const service = fakeService(temp());
    const g = gatedRenderer();
    const store = {} as Parameters<typeof mapTileCachesOf>[0]['store'];
    const cache = mapTileCachesOf(
      { store, log: console as never, config: { maxQueuedRenders: 1 } as never },
      { render: g.render, concurrency: 1 },
    );
    const a = cache.tile(service, { level: 3, row: 0, col: 0 });
    const b = cache.tile(service, { level: 3, row: 1, col: 0 });
    await until(() => cache.stats().queued === 1, 'one waiting');
    await expect(cache.tile(service, { level: 3, row: 2, col: 0 })).rejects.toMatchObject({
      code: 'SERVER_BUSY',
      path: 'maxQueuedRenders',
    });
    g.release();
    g.release();
    await Promise.all([a, b]);
  });
});

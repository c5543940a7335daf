/**
 * Issue 15, item 4 "Metadata is true": a written GeoTIFF carries STATISTICS_* only as the real
 * statistics of its pixels, never the nominal ranges functions advertise (Hillshade 0..255, NDVI
 * -1..1, Slope 0..90). Each file is checked against GDAL's own ComputeStatistics(False) (what
 * `gdalinfo -stats` runs) on a copy, within float tolerance. Without GDAL's python bindings the
 * GDAL comparisons are skipped with a message; the no-nominal-range checks run anyway.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, type PixelType } from '../core/pixel-type.js';
import { registry } from '../functions/index.js';
import { renderTiles, render } from '../graph/render.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { encodeGeoTiff } from './encode-tiff.js';
import { openGeoTiff } from './geotiff-source.js';
import { openerScope } from './source.js';
import { type StreamTiffOptions } from './tiff-options.js';
import { writeTiffStream } from './tiff-stream-writer.js';

const PYTHON = '/usr/bin/python3';
const haveGdal = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'from osgeo import gdal; import numpy'], { encoding: 'utf8' }).status === 0;
if (!haveGdal)
  console.warn('output-statistics.test.ts: GDAL python bindings not found; the comparisons with GDAL ComputeStatistics are SKIPPED');

const DEM = resolve(import.meta.dirname, '../../golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const dir = mkdtempSync(join(tmpdir(), 'rasterflow-output-stats-'));

/** Per file and band: the STATISTICS_* the file carries, and GDAL's ComputeStatistics(False) on a copy. */
function gdalStats(
  paths: readonly string[],
): Record<string, { stored: Record<string, string>; computed: number[] | null; validPercent: string | null }[]> {
  const py = `
import sys, json, shutil, os
from osgeo import gdal
gdal.UseExceptions()
gdal.SetConfigOption('GDAL_PAM_ENABLED', 'NO')
out = {}
for i, p in enumerate(sys.argv[1:]):
    ds = gdal.Open(p)
    stored = [{k: v for k, v in (ds.GetRasterBand(b + 1).GetMetadata() or {}).items() if k.startswith('STATISTICS_')} for b in range(ds.RasterCount)]
    ds = None
    copy = p + '.copy.tif'
    shutil.copy(p, copy)
    ds = gdal.Open(copy)
    bands = []
    for b in range(ds.RasterCount):
        band = ds.GetRasterBand(b + 1)
        try:
            computed = list(band.ComputeStatistics(False))
        except RuntimeError:
            computed = None
        bands.append({'stored': stored[b], 'computed': computed, 'validPercent': band.GetMetadataItem('STATISTICS_VALID_PERCENT')})
    ds = None
    os.remove(copy)
    out[p] = bands
print(json.dumps(out))
`;
  const r = spawnSync(PYTHON, ['-c', py, ...paths], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as ReturnType<typeof gdalStats>;
}

/** The STATISTICS_* items of a file as our reader sees them (band 0). */
async function ownStats(path: string): Promise<RasterInfo['statistics']> {
  const src = await openGeoTiff(path);
  try {
    return src.info.statistics;
  } finally {
    await src.close();
  }
}

function expectSameAsGdal(path: string, g: ReturnType<typeof gdalStats>[string]): void {
  for (const [b, band] of g.entries()) {
    const where = `${path} band ${b + 1}`;
    expect(band.computed, where).not.toBeNull();
    const [min, max, mean, std] = band.computed!;
    const s = band.stored;
    expect(Object.keys(s).sort(), where).toEqual([
      'STATISTICS_MAXIMUM',
      'STATISTICS_MEAN',
      'STATISTICS_MINIMUM',
      'STATISTICS_STDDEV',
      'STATISTICS_VALID_PERCENT',
    ]);
    const tol = (v: number) => 1e-9 * Math.max(1, Math.abs(v));
    expect(Math.abs(Number(s.STATISTICS_MINIMUM) - min!), `${where} min`).toBeLessThanOrEqual(tol(min!));
    expect(Math.abs(Number(s.STATISTICS_MAXIMUM) - max!), `${where} max`).toBeLessThanOrEqual(tol(max!));
    expect(Math.abs(Number(s.STATISTICS_MEAN) - mean!), `${where} mean`).toBeLessThanOrEqual(1e-7 * Math.max(1, Math.abs(mean!)));
    expect(Math.abs(Number(s.STATISTICS_STDDEV) - std!), `${where} stddev`).toBeLessThanOrEqual(1e-6 * Math.max(1, std!));
    expect(Math.abs(Number(s.STATISTICS_VALID_PERCENT) - Number(band.validPercent)), `${where} valid percent`).toBeLessThanOrEqual(1e-3);
  }
}

const W = 75;
const H = 53;

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

/** A deterministic block: values from `f(i, b)`, masked where `masked(i)`. */
function blockOf(
  t: PixelType,
  bands: number,
  f: (i: number, b: number) => number,
  masked: (i: number) => boolean = () => false,
): PixelBlock {
  const n = W * H;
  const planes = Array.from({ length: bands }, (_, b) => {
    const p = allocatePlane(t, n);
    for (let i = 0; i < n; i++) p[i] = f(i, b);
    return p;
  });
  const mask = new Uint8Array(n);
  for (let i = 0; i < n; i++) mask[i] = masked(i) ? 0 : 1;
  return { rect: { x: 0, y: 0, width: W, height: H }, pixelType: t, bands: planes, mask };
}

/** The block cut into odd pieces, as a renderer yields tiles. */
async function* piecesOf(block: PixelBlock, tw: number, th: number): AsyncGenerator<PixelBlock> {
  for (let y = 0; y < H; y += th) {
    for (let x = 0; x < W; x += tw) {
      const w = Math.min(tw, W - x);
      const h = Math.min(th, H - y);
      const bands = block.bands.map((p) => {
        const q = allocatePlane(block.pixelType, w * h);
        for (let r = 0; r < h; r++) q.set(p.subarray((y + r) * W + x, (y + r) * W + x + w), r * w);
        return q;
      });
      const mask = new Uint8Array(w * h);
      for (let r = 0; r < h; r++) mask.set(block.mask.subarray((y + r) * W + x, (y + r) * W + x + w), r * w);
      yield { rect: { x, y, width: w, height: h }, pixelType: block.pixelType, bands, mask };
    }
  }
}

interface Case {
  readonly name: string;
  readonly t: PixelType;
  readonly bands: number;
  readonly f: (i: number, b: number) => number;
  readonly masked?: (i: number) => boolean;
  readonly info?: Partial<RasterInfo>;
  readonly options?: StreamTiffOptions;
}

const CASES: readonly Case[] = [
  // A hillshade-like U8 that advertises 0..255 but holds 40..200.
  { name: 'u8-hillshade-nominal', t: 'U8', bands: 1, f: (i) => 40 + ((i * 7) % 161), info: { statistics: [{ min: 0, max: 255 }] } },
  // NDVI-like F32 advertising -1..1 (with a mean and std), NaN NoData, masked pixels and a NaN value.
  {
    name: 'f32-ndvi-nominal',
    t: 'F32',
    bands: 1,
    f: (i) => (i === 5 ? Number.NaN : Math.sin(i / 37) * 0.4 + 0.2),
    masked: (i) => i % 11 === 0,
    info: { statistics: [{ min: -1, max: 1, mean: 0, stdDev: 0.1 }] },
  },
  // Slope-like F32 (0..90 advertised) with a numeric NoData that some valid pixels equal (GDAL skips them).
  {
    name: 'f32-slope-nodata',
    t: 'F32',
    bands: 1,
    f: (i) => (i % 13 === 0 ? -9999 : 0.5 + (i % 890) / 10),
    masked: (i) => i % 17 === 0,
    info: { noData: -9999, statistics: [{ min: 0, max: 90 }] },
  },
  // Two S16 bands with NoData, large values.
  {
    name: 's16-two-bands',
    t: 'S16',
    bands: 2,
    f: (i, b) => (b === 0 ? 30000 - (i % 501) : -20000 + ((i * 3) % 1000)),
    masked: (i) => i % 5 === 0,
    info: { noData: -32768 },
  },
  // F64 values far from zero with a small spread (the variance must not cancel away).
  { name: 'f64-offset', t: 'F64', bands: 1, f: (i) => 1e9 + (i % 97) * 0.001, info: { statistics: [{ min: 0, max: 1 }] } },
  // NBITS=4: values above 15 are stored as 15; the statistics describe what is stored.
  { name: 'u8-nbits4', t: 'U8', bands: 1, f: (i) => i % 40, options: { nbits: 4 } },
  // Overviews and COG layout: statistics are those of the full-resolution image.
  {
    name: 'u16-cog',
    t: 'U16',
    bands: 1,
    f: (i) => (i * 13) % 4001,
    masked: (i) => i % 19 === 0,
    info: { noData: 65535 },
    options: { cog: true, blockWidth: 16 },
  },
];

describe('output statistics are the statistics of the written pixels', () => {
  it('the streaming writer writes the real statistics, never the advertised ones; GDAL computes the same', async () => {
    const paths: string[] = [];
    for (const c of CASES) {
      const block = blockOf(c.t, c.bands, c.f, c.masked);
      const path = join(dir, `${c.name}.tif`);
      await writeTiffStream(path, infoOf(c.t, c.bands, c.info), piecesOf(block, 23, 17), c.options);
      paths.push(path);
      const stats = await ownStats(path);
      expect(stats, c.name).toBeDefined();
      const advertised = c.info?.statistics?.[0];
      if (advertised) {
        expect(stats![0]!.min, c.name).not.toBe(advertised.min);
        expect(stats![0]!.max, c.name).not.toBe(advertised.max);
      }
    }
    if (!haveGdal) return;
    const g = gdalStats(paths);
    for (const p of paths) expectSameAsGdal(p, g[p]!);
  });

  it('STATISTICS=NO writes none, and never the advertised range either', async () => {
    const block = blockOf('U8', 1, (i) => 40 + (i % 100));
    const path = join(dir, 'no-stats.tif');
    await writeTiffStream(path, infoOf('U8', 1, { statistics: [{ min: 0, max: 255 }] }), piecesOf(block, 30, 30), { statistics: false });
    expect(await ownStats(path)).toBeUndefined();
  });

  it('encodeGeoTiff (demo, chips, image services) writes the real statistics of a whole block, none for a window', async () => {
    const paths: string[] = [];
    for (const c of CASES.filter((c) => c.options === undefined)) {
      const block = blockOf(c.t, c.bands, c.f, c.masked);
      const path = join(dir, `encoded-${c.name}.tif`);
      writeFileSync(path, encodeGeoTiff(block, infoOf(c.t, c.bands, c.info)));
      paths.push(path);
      const advertised = c.info?.statistics?.[0];
      if (advertised) expect((await ownStats(path))![0]!.max, c.name).not.toBe(advertised.max);
    }
    // A window of a larger grid: no statistics (they would not describe the raster).
    const block = blockOf('U8', 1, (i) => i % 200);
    const window = join(dir, 'encoded-window.tif');
    writeFileSync(window, encodeGeoTiff({ ...block, rect: { ...block.rect, x: 5 } }, { ...infoOf('U8', 1), width: W + 10 }));
    expect(await ownStats(window)).toBeUndefined();
    if (!haveGdal) return;
    const g = gdalStats(paths);
    for (const p of paths) expectSameAsGdal(p, g[p]!);
  });

  it('a Hillshade render of the bundled DEM carries its own statistics, not 0..255; streamed and encoded agree', async () => {
    const files = openerScope();
    try {
      const { root } = await buildGraph({ rasterFunction: 'Hillshade' }, { registry, resolveSource: bindSources({ $$: DEM }, files.open) });
      expect(root.info.statistics?.[0]).toMatchObject({ min: 0, max: 255 }); // what Hillshade advertises
      const streamed = join(dir, 'hillshade-streamed.tif');
      await writeTiffStream(streamed, root.info, renderTiles(root, { tileSize: 256 }));
      const encoded = join(dir, 'hillshade-encoded.tif');
      writeFileSync(encoded, encodeGeoTiff(await render(root, { tileSize: 256 }), root.info));
      const a = (await ownStats(streamed))![0]!;
      const b = (await ownStats(encoded))![0]!;
      expect(a).toEqual(b);
      expect(a.max - a.min).toBeLessThan(255);
      if (!haveGdal) return;
      const g = gdalStats([streamed, encoded]);
      expectSameAsGdal(streamed, g[streamed]!);
      expectSameAsGdal(encoded, g[encoded]!);
    } finally {
      await files.closeAll();
    }
  });
});

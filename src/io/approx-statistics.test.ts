/**
 * Issue 15, item 4: statistics a rule needs but its source lacks are computed from the source,
 * approximately as `gdalinfo -approx_stats` does (GDAL's ComputeStatistics(bApproxOK): the sample
 * overview, else a sample of blocks). Compared with GDAL 3.6 on the bundled DEM (strips, no
 * overview) and on a tiled copy with overviews; then the rules that need them: ShadedRelief's ramp
 * spans the DEM's range (it used 13 % of the ramp with the 0..8000 fallback), a Stretch without
 * DRA plans with them. GDAL comparisons are skipped with a message without GDAL's python bindings.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BandStatistics } from '../core/pixel-block.js';
import { registry } from '../functions/index.js';
import type { ShadedReliefParams } from '../functions/terrain/shaded-relief.js';
import type { StretchParams } from '../functions/radiometric/stretch.js';
import type { FunctionNode } from '../graph/types.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { sampleLevel } from './approx-statistics.js';
import { openGeoTiff } from './geotiff-source.js';
import { openerScope } from './source.js';

const PYTHON = '/usr/bin/python3';
const haveGdal = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'from osgeo import gdal'], { encoding: 'utf8' }).status === 0;
if (!haveGdal) console.warn('approx-statistics.test.ts: GDAL python bindings not found; the comparisons with GDAL are SKIPPED');

const DEM = resolve(import.meta.dirname, '../../golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const dir = mkdtempSync(join(tmpdir(), 'rasterflow-approx-stats-'));

/** GDAL's ComputeStatistics(approx) of band 1, on a copy (no stored statistics, no side-car). */
function gdalStatistics(path: string, approx: boolean): number[] {
  const py = `
import sys, shutil, os
from osgeo import gdal
gdal.UseExceptions()
copy = sys.argv[1] + '.copy.tif'
shutil.copy(sys.argv[1], copy)
ds = gdal.Open(copy)
stats = ds.GetRasterBand(1).ComputeStatistics(sys.argv[2] == '1')
ds = None
os.remove(copy)
print(' '.join(repr(v) for v in stats))
`;
  const r = spawnSync(PYTHON, ['-c', py, path, approx ? '1' : '0'], { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim().split(' ').map(Number);
}

function expectClose(s: BandStatistics, [min, max, mean, std]: number[]): void {
  expect(s.min).toBeCloseTo(min!, 4);
  expect(s.max).toBeCloseTo(max!, 4);
  expect(s.mean!).toBeCloseTo(mean!, 6);
  expect(s.stdDev!).toBeCloseTo(std!, 6);
}

async function approxOf(path: string): Promise<BandStatistics> {
  const src = await openGeoTiff(path);
  try {
    return (await src.approximateStatistics!())[0]!;
  } finally {
    await src.close();
  }
}

describe('approximate statistics of a source, as gdalinfo -approx_stats', () => {
  it('GetRasterSampleOverview: the smallest level with more than 2500 pixels, else the image itself', () => {
    const levels = [
      { width: 1000, height: 1000 },
      { width: 500, height: 500 },
      { width: 250, height: 250 },
      { width: 125, height: 125 },
      { width: 40, height: 40 },
    ];
    expect(sampleLevel(levels)).toBe(3);
    expect(
      sampleLevel([
        { width: 60, height: 40 },
        { width: 30, height: 20 },
      ]),
    ).toBe(0);
  });

  it('the bundled DEM (strips of 5 rows, no overview): every 9th block, GDAL approx 249.156..1049.883', async () => {
    const s = await approxOf(DEM);
    expectClose(s, haveGdal ? gdalStatistics(DEM, true) : [249.15628051758, 1049.8825683594, 530.72831296902, 159.55405351263]);
  });

  it.skipIf(!haveGdal)('a tiled copy with overviews: the statistics of the overview GDAL samples', async () => {
    const path = join(dir, 'dem-overviews.tif');
    const py = `
import sys
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Translate(sys.argv[2], sys.argv[1], width=1532, height=1628, resampleAlg='bilinear', creationOptions=['TILED=YES', 'COMPRESS=DEFLATE'])
ds.BuildOverviews('AVERAGE', [2, 4, 8, 16])
ds = None
`;
    const r = spawnSync(PYTHON, ['-c', py, DEM, path], { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } });
    expect(r.status, r.stderr).toBe(0);
    const s = await approxOf(path);
    expectClose(s, gdalStatistics(path, true));
    // From the 96 x 102 overview (the smallest with more than 2500 pixels), not the full image.
    expect(s.count).toBe(96 * 102);
  });
});

describe('rules that need statistics the source lacks', () => {
  it('ShadedRelief of the bundled DEM (as in the demo) spans nearly the whole colour ramp', async () => {
    const files = openerScope();
    try {
      const rule = { rasterFunction: 'ShadedRelief', rasterFunctionArguments: { HillshadeType: 1, Colorramp: 'Elevation #1' } };
      const { root } = await buildGraph(rule, { registry, resolveSource: bindSources({ $$: DEM }, files.open) });
      const p = (root as FunctionNode).plan.params as ShadedReliefParams;
      const approx = haveGdal ? gdalStatistics(DEM, true) : [249.15628051758, 1049.8825683594];
      expect(p.zmin).toBeCloseTo(approx[0]!, 4);
      expect(p.scale).toBeCloseTo(255.00001 / (approx[1]! - approx[0]!), 9);
      // The ramp indexes the DEM's pixels reach.
      const dem = await files.open(DEM);
      const z = (await dem.read({ x: 0, y: 0, width: dem.info.width, height: dem.info.height })).bands[0]!;
      let lo = 255;
      let hi = 0;
      for (const v of z) {
        const k = Math.min(255, Math.max(0, Math.floor((v - p.zmin) * p.scale)));
        lo = Math.min(lo, k);
        hi = Math.max(hi, k);
      }
      expect((hi - lo + 1) / 256).toBeGreaterThan(0.95);
    } finally {
      await files.closeAll();
    }
  });

  it('Stretch MinMax without DRA on a source without statistics plans with its approximate statistics', async () => {
    const files = openerScope();
    try {
      const rule = { rasterFunction: 'Stretch', rasterFunctionArguments: { StretchType: 5 } };
      const { root } = await buildGraph(rule, { registry, resolveSource: bindSources({ $$: DEM }, files.open) });
      const t = ((root as FunctionNode).plan.params as StretchParams).transfers![0]!;
      expect(t.minCut).toBeCloseTo(249.15628051758, 4);
      expect(t.maxCut).toBeCloseTo(1049.8825683594, 4);
    } finally {
      await files.closeAll();
    }
  });

  it("Stretch StandardDeviation over Slope (which advertises 0..90 without a mean) plans with the slope's exact statistics", async () => {
    const files = openerScope();
    try {
      const slope = { rasterFunction: 'Slope' };
      const { root: s } = await buildGraph(slope, { registry, resolveSource: bindSources({ $$: DEM }, files.open) });
      const { computeStatistics } = await import('../graph/request-statistics.js');
      const exact = (await computeStatistics(s, { x: 0, y: 0, width: s.info.width, height: s.info.height }))[0]!.statistics;
      const rule = { rasterFunction: 'Stretch', rasterFunctionArguments: { StretchType: 3, NumberOfStandardDeviations: 1, Raster: slope } };
      const { root } = await buildGraph(rule, { registry, resolveSource: bindSources({ $$: DEM }, files.open) });
      const t = ((root as FunctionNode).plan.params as StretchParams).transfers![0]!;
      expect(t.minCut).toBeCloseTo(Math.max(exact.min, exact.mean! - exact.stdDev!), 9);
      expect(t.maxCut).toBeCloseTo(Math.min(exact.max, exact.mean! + exact.stdDev!), 9);
    } finally {
      await files.closeAll();
    }
  });
});

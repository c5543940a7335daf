/**
 * Slope (Horn 3x3) and SurfaceParamFunction's slope (3x3 quadratic least squares, the default) on
 * the same geographic DEM: since both take their per-row metre cell sizes from the one geodesy
 * (core/geodesy.ts), they may differ only by what their two methods do differently.
 *
 * What the methods allow, derived by hand. Window rows top (a b c), middle (d e f), bottom
 * (g h i); Lx, Ly the cell sizes of the centre row (both functions use the centre row's). Row
 * differences Dt = c - a, Dm = f - d, Db = i - g; column differences Ca = g - a, Cb = h - b,
 * Cc = i - c. Horn: gx = (Dt + 2 Dm + Db) / (8 Lx), gy = (Ca + 2 Cb + Cc) / (8 Ly). Quadratic
 * (Evans): p = (Dt + Dm + Db) / (6 Lx), |q| = |Ca + Cb + Cc| / (6 Ly). So the two gradients differ
 * by exactly
 *
 *     ex = (2 Dm - Dt - Db) / (24 Lx),   ey = (2 Cb - Ca - Cc) / (24 Ly)
 *
 * (a third difference: zero on every quadratic surface, where both methods are exact), and since
 * |atan r1 - atan r2| <= |r1 - r2| <= |g1 - g2|, the slopes in degrees differ by at most
 * (180 / pi) hypot(ex, ey). Each pixel is held to that bound plus 2e-5 degrees (both outputs are
 * F32, 4e-6 degrees at 40 degrees, and Slope's arctangent is within 5.2e-8 degrees).
 *
 * On the golden DEM the two methods differ by 0.22 degrees at the median (bound 0.40) and 2.3 at
 * most (bound 2.7): real terrain is not quadratic at 90 m. With the old models (Slope on the
 * ellipsoid, SurfaceParamFunction on 111320 cos(lat) x 110574 m per degree, 0.35 % short
 * north-south at 36.6 N) 7619 of its 137142 interior pixels broke the bound, by up to 0.08
 * degrees, and the quadratic surface below, where the methods coincide, failed in every row.
 */
import { resolve } from 'node:path';
import { fromFile } from 'geotiff';
import { describe, expect, it } from 'vitest';
import { metersPerDegreeLatitude, metersPerDegreeLongitude } from '../../core/geodesy.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { memorySource } from '../../graph/memory-source.js';
import { rasterOf, runFunction } from '../../../test/helpers.js';
import { slope } from './slope.js';
import { surfaceParam } from './surface-param.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const DEG = 180 / Math.PI;
/** Rounding allowance in degrees: two F32 outputs and the fitted arctangent. */
const ROUNDING = 2e-5;

interface Grid {
  readonly info: RasterInfo;
  readonly z: Float64Array;
}

/** The golden geographic DEM (EPSG:4326, Int16, 3 arc-seconds, 403 x 344 near 36.6 N; no NoData). */
async function jacksboroGeographic(): Promise<Grid> {
  const image = await (await fromFile(resolve(ROOT, 'golden/data/jacksboro_fault_dem_3arcsec.tif'))).getImage();
  const width = image.getWidth();
  const height = image.getHeight();
  const [band] = (await image.readRasters()) as unknown as Int16Array[];
  const [xmin, ymin, xmax, ymax] = image.getBoundingBox() as [number, number, number, number];
  const info: RasterInfo = {
    width,
    height,
    bandCount: 1,
    pixelType: 'S16',
    extent: { xmin, ymin, xmax, ymax },
    cellSize: { x: (xmax - xmin) / width, y: (ymax - ymin) / height },
    spatialReference: { wkid: 4326, geographic: true, proj4: '+proj=longlat +datum=WGS84 +no_defs' },
  };
  return { info, z: Float64Array.from(band!) };
}

/** Each interior pixel's |Horn - quadratic| slope difference and its bound (degrees). */
async function compare(g: Grid): Promise<{ diff: number[]; bound: number[] }> {
  const { info, z } = g;
  const node = () => memorySource('dem', info, [info.pixelType === 'S16' ? Int16Array.from(z) : Float32Array.from(z)]);
  const horn = await runFunction(slope, {}, [node()]);
  const quad = await runFunction(surfaceParam, {}, [node()]);
  const W = info.width;
  const diff: number[] = [];
  const bound: number[] = [];
  for (let Y = 1; Y < info.height - 1; Y++) {
    const lat = info.extent.ymax - (Y + 0.5) * info.cellSize.y;
    const lx = metersPerDegreeLongitude(lat) * info.cellSize.x;
    const ly = metersPerDegreeLatitude(lat) * info.cellSize.y;
    for (let X = 1; X < W - 1; X++) {
      const at = (dx: number, dy: number) => z[(Y + dy) * W + X + dx]!;
      const [a, b, c, d, f, gg, h, i] = [at(-1, -1), at(0, -1), at(1, -1), at(-1, 0), at(1, 0), at(-1, 1), at(0, 1), at(1, 1)];
      const ex = (2 * (f - d) - (c - a) - (i - gg)) / (24 * lx);
      const ey = (2 * (h - b) - (gg - a) - (i - c)) / (24 * ly);
      diff.push(Math.abs(horn.value(X, Y) - quad.value(X, Y)));
      bound.push(DEG * Math.hypot(ex, ey));
    }
  }
  return { diff, bound };
}

describe('Slope and SurfaceParamFunction agree on a geographic DEM (one geodesy)', () => {
  it('the golden 3 arc-second DEM: every pixel within the Horn-versus-quadratic bound', async () => {
    const { diff, bound } = await compare(await jacksboroGeographic());
    let worst = -Infinity;
    let where = -1;
    for (let k = 0; k < diff.length; k++) {
      const excess = diff[k]! - bound[k]!;
      if (excess > worst) {
        worst = excess;
        where = k;
      }
    }
    expect(worst, `pixel ${where}: |diff| ${diff[where]} vs bound ${bound[where]}`).toBeLessThanOrEqual(ROUNDING);
  });

  it('a quadratic surface over 2 degrees of latitude: the same slope to rounding in every row', async () => {
    const cell = 1 / 1200;
    const o = { width: 9, height: 2401, cellSize: cell, geographic: true, origin: { x: 10, y: 61 }, pixelType: 'F64' } as const;
    const src = rasterOf(o, (X, Y) => 0.02 * X * X - 0.015 * Y * Y + 0.01 * X * Y + 30 * X - 12 * Y);
    const horn = await runFunction(slope, {}, [src]);
    const quad = await runFunction(surfaceParam, {}, [src]);
    for (const Y of [1, 600, 1200, 1800, 2399]) {
      for (const X of [1, 4, 7]) expect(Math.abs(horn.value(X, Y) - quad.value(X, Y)), `(${X}, ${Y})`).toBeLessThan(ROUNDING);
    }
  });
});

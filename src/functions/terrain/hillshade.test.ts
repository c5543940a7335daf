import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../graph/args.js';
import { applyFunction, catchError, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { hillshade, HillshadeType, MULTIDIRECTIONAL_SOURCES } from './hillshade.js';

const RAD = Math.PI / 180;
const windowRaster = (w: readonly number[], cellSize: number) => rasterOf({ width: 3, height: 3, cellSize }, (x, y) => w[y * 3 + x]!);

/** The documented traditional formula (cos/sin of slope and aspect form), unclamped, unscaled. */
function shade(dzdx: number, dzdy: number, azimuth: number, altitude: number): number {
  const zenith = (90 - altitude) * RAD;
  const az = (360 - azimuth + 90) * RAD;
  const slope = Math.atan(Math.hypot(dzdx, dzdy));
  const aspect = Math.atan2(dzdy, -dzdx);
  return Math.cos(zenith) * Math.cos(slope) + Math.sin(zenith) * Math.sin(slope) * Math.cos(az - aspect);
}

describe('Hillshade: hand-checked values', () => {
  const vector = [2450, 2461, 2483, 2452, 2461, 2483, 2447, 2455, 2477]; // spec Appendix C, cell 5

  it('Appendix C traditional: 154.029 -> 154', async () => {
    const r = await runFunction(hillshade, {}, [windowRaster(vector, 5)]);
    expect(r.value(1, 1)).toBe(154);
    // dz/dx 3.125, dz/dy -0.525 (south minus north): the documented form gives the same value.
    expect(255 * shade(3.125, -0.525, 315, 45)).toBeCloseTo(154.029, 3);
  });

  it('Appendix C multidirectional: 98.22 -> 98', async () => {
    const r = await runFunction(hillshade, { HillshadeType: HillshadeType.Multidirectional }, [windowRaster(vector, 5)]);
    expect(r.value(1, 1)).toBe(98);
    // Six sources at doubled z (gradients 6.25, -1.05), each clamped at 0.
    const v = MULTIDIRECTIONAL_SOURCES.reduce((s, [az, alt, w]) => s + w * Math.max(0, 255 * shade(6.25, -1.05, az, alt)), 0);
    expect(v).toBeCloseTo(98.22, 2);
  });

  it('a flat area is 255 sin(altitude), truncated (not rounded)', async () => {
    const flat = rasterOf({ width: 4, height: 4, cellSize: 10 }, () => 100);
    expect((await runFunction(hillshade, {}, [flat])).value(2, 2)).toBe(180); // 180.31
    expect((await runFunction(hillshade, { Altitude: 60 }, [flat])).value(2, 2)).toBe(220); // 220.84
    expect((await runFunction(hillshade, { Altitude: 90 }, [flat])).value(2, 2)).toBe(255);
    // Multidirectional flat: 255 (14/18 sin 60 + 4/18) = 228.43.
    expect((await runFunction(hillshade, { HillshadeType: 1 }, [flat])).value(2, 2)).toBe(228);
  });

  it('a 45 degree plane facing the light and facing away', async () => {
    // z = -10x with 10 m cells: rises to the west, faces east (aspect 90).
    const east = rasterOf({ width: 5, height: 5, cellSize: 10 }, (x) => -10 * x);
    const lit = await runFunction(hillshade, { Azimuth: 90, Altitude: 45 }, [east]);
    // Light along the normal: cos 0 = 1, computed as 254.99999999999997 and truncated like the vendor.
    expect(lit.value(2, 2)).toBeGreaterThanOrEqual(254);
    const away = await runFunction(hillshade, { Azimuth: 270, Altitude: 45 }, [east]);
    expect(away.value(2, 2)).toBe(0); // fully shaded ...
    expect(away.valid(2, 2)).toBe(true); // ... and still valid: 0 is not NoData
    const side = await runFunction(hillshade, { Azimuth: 0, Altitude: 30 }, [east]);
    expect(side.value(2, 2)).toBe(Math.trunc(255 * shade(-1, 0, 0, 30)));
  });

  it('multidirectional ignores Azimuth and Altitude and doubles the z-factor', async () => {
    const dem = windowRaster([2450, 2461, 2483, 2452, 2461, 2483, 2447, 2455, 2477], 5);
    const a = await runFunction(hillshade, { HillshadeType: 1 }, [dem]);
    const b = await runFunction(hillshade, { HillshadeType: 1, Azimuth: 10, Altitude: 80 }, [dem]);
    expect(b.value(1, 1)).toBe(a.value(1, 1));
    const z2 = await runFunction(hillshade, { HillshadeType: 1, ZFactor: 2 }, [dem]);
    const v = MULTIDIRECTIONAL_SOURCES.reduce((s, [az, alt, w]) => s + w * Math.max(0, 255 * shade(12.5, -2.1, az, alt)), 0);
    expect(z2.value(1, 1)).toBe(Math.trunc(v));
  });

  it('SCALED adjusts the z-factor with PSPower and PSZFactor; DEGREE and PERCENTRISE shade alike', async () => {
    const plane = rasterOf({ width: 5, height: 5, cellSize: 30 }, (x) => 6 * x); // dz/dx 0.2
    const zAdj = (p: number, f: number) => 1 + 30 ** p * f;
    const scaled = await runFunction(hillshade, { SlopeType: 3 }, [plane]);
    expect(scaled.value(2, 2)).toBe(Math.trunc(255 * shade(0.2 * zAdj(0.664, 0.024), 0, 315, 45)));
    const custom = await runFunction(hillshade, { SlopeType: 3, PSPower: 1, PSZFactor: 0.1 }, [plane]);
    expect(custom.value(2, 2)).toBe(Math.trunc(255 * shade(0.2 * zAdj(1, 0.1), 0, 315, 45)));
    const deg = await runFunction(hillshade, { SlopeType: 1 }, [plane]);
    const pct = await runFunction(hillshade, { SlopeType: 2, PSPower: 1, PSZFactor: 0.1 }, [plane]);
    expect(pct.value(2, 2)).toBe(deg.value(2, 2));
    expect(deg.value(2, 2)).toBe(Math.trunc(255 * shade(0.2, 0, 315, 45)));
  });
});

describe('Hillshade: geographic DEMs, GeographicCellSize Vendor111000 (vendor 111000 m/degree rule)', () => {
  const cell = 1 / 1200; // 92.5 m
  const geo = rasterOf({ width: 5, height: 5, cellSize: cell, geographic: true }, (x) => -18.5 * x); // dz/dx -0.2 in metres
  const vendor = { GeographicCellSize: 'Vendor111000' };

  it('converts degrees to metres whenever ZFactor > 0.001', async () => {
    const r = await runFunction(hillshade, { ...vendor, ZFactor: 2 }, [geo]);
    expect(r.value(2, 2)).toBe(Math.trunc(255 * shade(-0.4, 0, 315, 45)));
  });

  it('does not convert a tiny ZFactor (already a degrees-to-metres factor)', async () => {
    const zf = 1 / 111000;
    const r = await runFunction(hillshade, { ...vendor, ZFactor: zf }, [geo]);
    expect(r.value(2, 2)).toBe(Math.trunc(255 * shade((-18.5 / cell) * zf, 0, 315, 45)));
  });
});

describe('Hillshade: geographic DEMs, GeographicCellSize Geodesic (default)', () => {
  const cell = 1 / 1200;
  // Row 2 centred on 50 N, where a degree of longitude is 71696 m (vendor: 111000).
  const geo = rasterOf({ width: 5, height: 5, cellSize: cell, geographic: true, origin: { x: 8, y: 50 + 2.5 * cell } }, (x) => -6 * x);
  const lx =
    (((6378137 * Math.cos((50 * Math.PI) / 180)) / Math.sqrt(1 - 0.00669437999014 * Math.sin((50 * Math.PI) / 180) ** 2)) * Math.PI) / 180;

  it("shades with the row's east-west metres", async () => {
    const r = await runFunction(hillshade, { Azimuth: 90, Altitude: 30 }, [geo]);
    expect(r.value(2, 2)).toBe(Math.trunc(255 * shade(-6 / (lx * cell), 0, 90, 30)));
    const v = await runFunction(hillshade, { Azimuth: 90, Altitude: 30, GeographicCellSize: 'Vendor111000' }, [geo]);
    expect(v.value(2, 2)).toBe(Math.trunc(255 * shade(-6 / (111000 * cell), 0, 90, 30)));
    expect(r.value(2, 2)).toBeGreaterThan(v.value(2, 2)); // steeper: lit more from the east
  });

  it("keeps a tiny ZFactor as the client's own degrees-to-metres factor", async () => {
    const zf = 1 / 111000;
    const r = await runFunction(hillshade, { ZFactor: zf }, [geo]);
    expect(r.value(2, 2)).toBe(Math.trunc(255 * shade((-6 / cell) * zf, 0, 315, 45)));
  });
});

describe('Hillshade: NoData', () => {
  it('declares no sentinel: NoData is the mask, masked pixels hold 0', async () => {
    const mask = new Uint8Array(25).fill(1);
    mask[12] = 0;
    mask[6] = 0;
    const r = await runFunction(hillshade, {}, [rasterOf({ width: 5, height: 5, cellSize: 10 }, () => 5, mask)]);
    expect(r.info.noData).toBeUndefined();
    expect(r.valid(2, 2)).toBe(false); // NoData centre
    expect(r.value(2, 2)).toBe(0);
    expect(r.valid(1, 2)).toBe(false); // two NoData neighbours
    expect(r.valid(3, 2)).toBe(true); // one: substituted
    expect(r.value(3, 2)).toBe(180);
  });
});

describe('Hillshade: plan', () => {
  const dem = rasterOf({ width: 4, height: 4 }, (x) => x);

  it('outputs U8 with advertised statistics 0..255', () => {
    expect(applyFunction(hillshade, {}, [dem]).info).toMatchObject({ pixelType: 'U8', bandCount: 1, statistics: [{ min: 0, max: 255 }] });
  });

  it('accepts the DEM as Raster too', () => {
    const parsed = parseArgs(hillshade.args, { raster: '$$' }, 'rasterFunctionArguments');
    expect(parsed.warnings).toEqual([]);
    expect(parsed.rasters.map((r) => r.name)).toEqual(['DEM']);
    expect(hillshade.variableName).toBe('DEM');
  });

  it('rejects bad arguments with INVALID_ARGUMENT and the argument path', () => {
    for (const [args, path] of [
      [{ HillshadeType: 2 }, 'rasterFunctionArguments.HillshadeType'],
      [{ Altitude: 95 }, 'rasterFunctionArguments.Altitude'],
      [{ Altitude: -1 }, 'rasterFunctionArguments.Altitude'],
      [{ Azimuth: 'north' }, 'rasterFunctionArguments.Azimuth'],
      [{ SlopeType: 0 }, 'rasterFunctionArguments.SlopeType'],
      [{ ZFactor: null, PSZFactor: {} }, 'rasterFunctionArguments.PSZFactor'],
    ] as const) {
      expect(
        catchError(() => applyFunction(hillshade, args, [dem])),
        JSON.stringify(args),
      ).toMatchObject({ code: 'INVALID_ARGUMENT', path });
    }
  });

  it('rejects a multi-band DEM at plan time', () => {
    const rgb = rasterOf({ width: 4, height: 4, bandCount: 3, pixelType: 'U8' }, (x) => x);
    expect(catchError(() => applyFunction(hillshade, {}, [rgb]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.DEM',
    });
  });

  it('takes numeric strings and enum names', async () => {
    const dem5 = windowRaster([2450, 2461, 2483, 2452, 2461, 2483, 2447, 2455, 2477], 5);
    const r = await runFunction(hillshade, { Azimuth: '315', Altitude: '45', HillshadeType: 'TRADITIONAL' }, [dem5]);
    expect(r.value(1, 1)).toBe(154);
  });
});

describe('Hillshade: tiled equals whole', () => {
  const W = 43;
  const H = 37;
  const mask = new Uint8Array(W * H).fill(1);
  for (const i of [0, 7, 200, 201, 244, 600, 1000, W * H - 1, W * H - W + 3]) mask[i] = 0;
  const z = (x: number, y: number) => 500 + 60 * Math.sin(x / 5) * Math.cos(y / 4) + ((x * 13 + y * 29) % 5);
  const dem = rasterOf({ width: W, height: H, cellSize: 20 }, z, mask);
  const geo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true }, z, mask);
  const geoNorth = rasterOf(
    { width: W, height: H, cellSize: { x: 1 / 600, y: 1 / 1200 }, geographic: true, origin: { x: -150, y: 65 } },
    z,
    mask,
  );
  const cases: [string, Record<string, unknown>, typeof dem][] = [
    ['traditional', {}, dem],
    ['multidirectional', { HillshadeType: 1 }, dem],
    ['scaled, low sun', { SlopeType: 3, Azimuth: 100, Altitude: 20, ZFactor: 2 }, dem],
    ['zenith light', { Altitude: 90 }, dem],
    ['RemoveEdgeEffect', { RemoveEdgeEffect: true }, dem],
    ['RemoveEdgeEffect multidirectional', { RemoveEdgeEffect: true, HillshadeType: 1 }, dem],
    ['geographic', {}, geo],
    ['geographic multidirectional, RemoveEdgeEffect', { HillshadeType: 1, RemoveEdgeEffect: true }, geoNorth],
    ['geographic scaled', { SlopeType: 3 }, geoNorth],
    ['geographic, vendor', { GeographicCellSize: 'Vendor111000' }, geo],
  ];
  for (const [label, args, input] of cases) {
    it(label, async () => {
      const node = applyFunction(hillshade, args, [input]);
      for (const t of [
        [37, 53],
        [7, 5],
        [1, 3],
        [1, 1],
        [2, 3],
        [11, 4],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, t), `tiles ${t.join('x')}`).toBeUndefined();
      }
    });
  }
});

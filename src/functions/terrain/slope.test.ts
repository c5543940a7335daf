import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../graph/args.js';
import { memorySource } from '../../graph/memory-source.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { slope, SlopeType } from './slope.js';

const DEG = 180 / Math.PI;
/** A 3x3 raster holding one window (row-major a..i); the ring copies the centre, so every cell is the centre's value. */
const windowRaster = (w: readonly number[], cellSize: number) => rasterOf({ width: 3, height: 3, cellSize }, (x, y) => w[y * 3 + x]!);

describe('Slope: hand-checked values', () => {
  const vector = [50, 45, 50, 30, 30, 30, 8, 10, 10]; // spec Appendix C, cell 5

  it('Appendix C: 75.2577 degrees', async () => {
    const r = await runFunction(slope, { ZFactor: 1 }, [windowRaster(vector, 5)]);
    expect(r.value(1, 1)).toBeCloseTo(75.2577, 4);
    expect(r.value(0, 0)).toBe(r.value(1, 1)); // ring copied from the inner cell
  });

  it('Appendix C: 380.03 percent rise', async () => {
    const r = await runFunction(slope, { SlopeType: SlopeType.PercentRise }, [windowRaster(vector, 5)]);
    expect(r.value(1, 1)).toBeCloseTo(380.03, 2);
  });

  it('a plane rising one cell size per cell is 45 degrees (100 %) everywhere, edges included', async () => {
    const dem = rasterOf({ width: 7, height: 6, cellSize: 10 }, (x) => 10 * x);
    const deg = await runFunction(slope, {}, [dem]);
    const pct = await runFunction(slope, { SlopeType: 'PERCENTRISE' }, [dem]);
    for (let y = 0; y < 6; y++) {
      for (let x = 0; x < 7; x++) {
        expect(deg.value(x, y)).toBeCloseTo(45, 5);
        expect(pct.value(x, y)).toBeCloseTo(100, 4);
      }
    }
  });

  it('a diagonal plane uses both axes and the z-factor', async () => {
    // z = 3x + 4y with 1 m cells: rise 5, doubled by ZFactor 2 -> 10.
    const r = await runFunction(slope, { ZFactor: 2 }, [rasterOf({ width: 5, height: 5 }, (x, y) => 3 * x + 4 * y)]);
    expect(r.value(2, 2)).toBeCloseTo(Math.atan(10) * DEG, 5);
  });

  it('a flat area is 0', async () => {
    const r = await runFunction(slope, {}, [rasterOf({ width: 4, height: 4, cellSize: 30 }, () => 123)]);
    expect(Array.from(r.block.bands[0]!)).toEqual(new Array(16).fill(0));
  });

  it('non-square cells divide each axis by its own cell size', async () => {
    const dem = rasterOf({ width: 5, height: 5, cellSize: { x: 10, y: 20 } }, (x, y) => 10 * x + 20 * y);
    const r = await runFunction(slope, { SlopeType: 2 }, [dem]);
    expect(r.value(2, 2)).toBeCloseTo(100 * Math.SQRT2, 4);
  });
});

describe('Slope: SCALED', () => {
  const plane = rasterOf({ width: 5, height: 5, cellSize: 30 }, (x) => 3 * x); // rise 0.1
  const expected = (power: number, factor: number, cell = 30) => Math.atan(0.1 * (1 + cell ** power * factor)) * DEG;

  it('uses the default PSPower 0.664 and PSZFactor 0.024', async () => {
    const r = await runFunction(slope, { SlopeType: SlopeType.Scaled }, [plane]);
    expect(r.value(2, 2)).toBeCloseTo(expected(0.664, 0.024), 4);
  });

  it('uses the given PSPower and PSZFactor, and only with SCALED', async () => {
    const r = await runFunction(slope, { SlopeType: 3, PSPower: 0.5, PSZFactor: 0.1 }, [plane]);
    expect(r.value(2, 2)).toBeCloseTo(expected(0.5, 0.1), 4);
    const d = await runFunction(slope, { SlopeType: 1, PSPower: 0.5, PSZFactor: 0.1 }, [plane]);
    expect(d.value(2, 2)).toBeCloseTo(Math.atan(0.1) * DEG, 4);
  });

  it('Vendor111000: multiplies geographic cell sizes by 111000 first', async () => {
    const cell = 1 / 1200; // 92.5 m
    const geo = rasterOf({ width: 5, height: 5, cellSize: cell, geographic: true }, (x) => 9.25 * x); // rise 0.1
    const r = await runFunction(slope, { SlopeType: 3, GeographicCellSize: 'Vendor111000' }, [geo]);
    expect(r.value(2, 2)).toBeCloseTo(expected(0.664, 0.024, cell * 111000), 4);
  });

  it("Geodesic (default): uses the row's metres, on the equator 111319.49 m per degree east-west", async () => {
    const cell = 1 / 1200;
    const geo = rasterOf({ width: 5, height: 5, cellSize: cell, geographic: true, origin: { x: 0, y: 2.5 * cell } }, (x) => 9.25 * x);
    const r = await runFunction(slope, { SlopeType: 3 }, [geo]);
    const lx = 111319.49 * cell;
    expect(r.value(2, 2)).toBeCloseTo(Math.atan((9.25 / lx) * (1 + lx ** 0.664 * 0.024)) * DEG, 4);
  });

  it('takes the cell size in metres for a projected CRS in feet', async () => {
    const info = { ...gridInfo({ width: 5, height: 5, cellSize: 100 }), spatialReference: { metersPerUnit: 0.3048 } };
    const plane = new Float32Array(25).map((_, i) => 10 * (i % 5)); // rise 0.1 (feet per foot)
    const r = await runFunction(slope, { SlopeType: 3 }, [memorySource('feet', info, [plane])]);
    expect(r.value(2, 2)).toBeCloseTo(Math.atan(0.1 * (1 + 30.48 ** 0.664 * 0.024)) * DEG, 4);
  });
});

describe('Slope: geographic DEMs, GeographicCellSize Vendor111000 (the vendor 111000 m/degree rule)', () => {
  const cell = 1 / 1200; // 92.5 m at 111000 m/degree
  const geo = rasterOf({ width: 5, height: 5, cellSize: cell, geographic: true }, (x) => 92.5 * x);
  const vendor = { GeographicCellSize: 'Vendor111000' };

  it('converts degrees to metres when ZFactor is 1', async () => {
    const r = await runFunction(slope, vendor, [geo]);
    expect(r.value(2, 2)).toBeCloseTo(45, 4);
  });

  it('takes any other ZFactor as the unit conversion', async () => {
    const r = await runFunction(slope, { ...vendor, ZFactor: 1 / 111000, SlopeType: 2 }, [geo]);
    expect(r.value(2, 2)).toBeCloseTo(100, 3);
    // Even a z-unit conversion such as feet: the vendor's quirk (Geodesic mode converts it).
    const feet = await runFunction(slope, { ...vendor, ZFactor: 0.3048, SlopeType: 2 }, [geo]);
    expect(feet.value(2, 2)).toBeCloseTo((100 * 92.5 * 0.3048) / cell, 0);
  });
});

describe('Slope: geographic DEMs, GeographicCellSize Geodesic (default)', () => {
  // Rows centred on 0 and 60 N: the vendor's flat 111000 m is wrong by 1/cos(latitude) east-west.
  const cell = 1 / 1200;
  const at = (lat: number) =>
    rasterOf({ width: 5, height: 5, cellSize: cell, geographic: true, origin: { x: 0, y: lat + 2.5 * cell } }, (x, y) => 10 * x + 5 * y);

  it("computes each row's cell size on WGS 84", async () => {
    for (const [lat, perDegX, perDegY] of [
      [0, 111319.49, 110574.27],
      [60, 55799.98, 111412.24],
    ] as const) {
      const r = await runFunction(slope, { SlopeType: 2 }, [at(lat)]);
      const expected = 100 * Math.hypot(10 / (perDegX * cell), 5 / (perDegY * cell));
      expect(r.value(2, 2) / expected, `latitude ${lat}`).toBeCloseTo(1, 6);
    }
  });

  it('accepts the mode in any case and rejects unknown modes at plan time', () => {
    expect(applyFunction(slope, { GeographicCellSize: 'geodesic' }, [at(0)]).plan.params).toMatchObject({
      gradient: { cell: { geodesic: {} } },
    });
    expect(catchError(() => applyFunction(slope, { GeographicCellSize: 'Mean' }, [at(0)]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.GeographicCellSize',
    });
  });

  it('leaves projected DEMs alone (the argument only concerns degrees)', async () => {
    const dem = rasterOf({ width: 5, height: 5, cellSize: 10 }, (x) => 10 * x);
    const a = await runFunction(slope, {}, [dem]);
    const b = await runFunction(slope, { GeographicCellSize: 'Vendor111000' }, [dem]);
    expect(a.value(2, 2)).toBeCloseTo(45, 5);
    expect(b.value(2, 2)).toBe(a.value(2, 2));
  });
});

describe('Slope: plan', () => {
  const dem = rasterOf({ width: 4, height: 4 }, (x) => x);

  it('outputs F32 with NaN NoData and advertises 0..90 for degree types only', () => {
    const deg = applyFunction(slope, {}, [dem]).info;
    expect(deg).toMatchObject({ pixelType: 'F32', bandCount: 1, statistics: [{ min: 0, max: 90 }] });
    expect(Number.isNaN(deg.noData)).toBe(true);
    expect(applyFunction(slope, { SlopeType: 3 }, [dem]).info.statistics).toEqual([{ min: 0, max: 90 }]);
    expect(applyFunction(slope, { SlopeType: 2 }, [dem]).info.statistics).toBeUndefined();
  });

  it('needs a halo of 2 for the vendor ring copy and 1 for RemoveEdgeEffect', () => {
    expect(applyFunction(slope, {}, [dem]).plan.halo).toBe(2);
    expect(applyFunction(slope, { RemoveEdgeEffect: true }, [dem]).plan.halo).toBe(1);
  });

  it('accepts the DEM as Raster too', () => {
    const parsed = parseArgs(slope.args, { Raster: '$1' }, 'rasterFunctionArguments');
    expect(parsed.warnings).toEqual([]);
    expect(parsed.rasters.map((r) => r.name)).toEqual(['DEM']);
    expect(slope.variableName).toBe('DEM');
  });

  it('rejects bad arguments with INVALID_ARGUMENT and the argument path', () => {
    for (const [args, path] of [
      [{ SlopeType: 4 }, 'rasterFunctionArguments.SlopeType'],
      [{ SlopeType: 'STEEP' }, 'rasterFunctionArguments.SlopeType'],
      [{ ZFactor: 'x' }, 'rasterFunctionArguments.ZFactor'],
      [{ PSPower: [1] }, 'rasterFunctionArguments.PSPower'],
      [{ RemoveEdgeEffect: 'maybe' }, 'rasterFunctionArguments.RemoveEdgeEffect'],
    ] as const) {
      expect(
        catchError(() => applyFunction(slope, args, [dem])),
        JSON.stringify(args),
      ).toMatchObject({ code: 'INVALID_ARGUMENT', path });
    }
  });

  it('rejects a multi-band or complex DEM at plan time', () => {
    const multi = rasterOf({ width: 5, height: 5, bandCount: 2 }, (x) => x);
    expect(catchError(() => applyFunction(slope, {}, [multi]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.DEM',
    });
    const c = memorySource('complex', gridInfo({ width: 3, height: 3, pixelType: 'C64' }), [new Float32Array(18)]);
    expect(catchError(() => applyFunction(slope, {}, [c]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.DEM',
    });
  });
});

describe('Slope: tiled equals whole', () => {
  const W = 47;
  const H = 31;
  const mask = new Uint8Array(W * H).fill(1);
  for (const i of [0, 5, 100, 101, 102, 400, 800, W * H - 1, W * H - W]) mask[i] = 0;
  const z = (x: number, y: number) => 200 + 40 * Math.sin(x / 4) * Math.cos(y / 3) + ((x * 31 + y * 17) % 7);
  const dem = rasterOf({ width: W, height: H, cellSize: 25 }, z, mask);
  const s16 = rasterOf({ width: W, height: H, cellSize: 25, pixelType: 'S16' }, (x, y) => Math.round(z(x, y)), mask);
  const geo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true }, z, mask);
  const geoNorth = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true, origin: { x: 30, y: 78 } }, z, mask);
  const cases: [string, Record<string, unknown>, typeof dem][] = [
    ['degrees', {}, dem],
    ['percent', { SlopeType: 2 }, dem],
    ['scaled', { SlopeType: 3, PSPower: 0.7, PSZFactor: 0.03 }, dem],
    ['RemoveEdgeEffect', { RemoveEdgeEffect: true }, dem],
    ['RemoveEdgeEffect percent', { RemoveEdgeEffect: true, SlopeType: 2 }, dem],
    ['S16 DEM', {}, s16],
    ['geographic', {}, geo],
    ['geographic scaled', { SlopeType: 3 }, geo],
    ['geographic, far north, RemoveEdgeEffect', { RemoveEdgeEffect: true }, geoNorth],
    ['geographic, vendor', { GeographicCellSize: 'Vendor111000' }, geo],
    ['geographic, vendor scaled', { GeographicCellSize: 'Vendor111000', SlopeType: 3 }, geo],
  ];
  for (const [label, args, input] of cases) {
    it(label, async () => {
      const node = applyFunction(slope, args, [input]);
      for (const t of [
        [37, 53],
        [7, 5],
        [1, 3],
        [1, 1],
        [2, 3],
        [16, 9],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, t), `tiles ${t.join('x')}`).toBeUndefined();
      }
    });
  }
});

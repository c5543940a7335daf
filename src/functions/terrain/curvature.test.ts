import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../graph/args.js';
import { applyFunction, catchError, prng, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { curvature, CurvatureType } from './curvature.js';

const windowRaster = (w: readonly number[], cellSize: number) => rasterOf({ width: 3, height: 3, cellSize }, (x, y) => w[y * 3 + x]!);

/** The spec's formulas, written out (window a..i row-major, cell sizes lx, ly, z-factor zf). */
function zt(w: readonly number[], lx: number, ly: number, zf = 1): [number, number, number] {
  const [a, b, c, d, e, f, g, h, i] = w.map((v) => v * zf) as [number, number, number, number, number, number, number, number, number];
  const D = ((d + f) / 2 - e) / lx ** 2;
  const E = ((b + h) / 2 - e) / ly ** 2;
  const F = (-a + c + g - i) / (4 * lx * ly);
  const G = (-d + f) / (2 * lx);
  const H = (b - h) / (2 * ly);
  const s = G * G + H * H;
  return [
    -2 * (D + E) * 100,
    s === 0 ? 0 : ((-2 * (D * G * G + E * H * H + F * G * H)) / s) * 100,
    s === 0 ? 0 : ((2 * (D * H * H + E * G * G - F * G * H)) / s) * 100,
  ];
}

describe('Curvature: Appendix C vectors', () => {
  const vector = [2450, 2461, 2483, 2452, 2461, 2483, 2447, 2455, 2477]; // cell 5, z 1

  it('standard -28.0, profile -50.375, planform -22.375', async () => {
    const values = [];
    for (const Type of [0, 1, 2]) {
      const r = await runFunction(curvature, { Type }, [windowRaster(vector, 5)]);
      values.push(r.value(1, 1));
      expect(r.value(0, 2)).toBe(r.value(1, 1)); // ring copied from the inner cell
    }
    expect(values[0]).toBe(-28);
    // The spec rounds to 3 decimals: exactly -2 * 2.5112 / 9.97 * 100 and 2 * -1.1154 / 9.97 * 100.
    expect(values[1]).toBeCloseTo(-50.375, 3);
    expect(values[2]).toBeCloseTo(-22.375, 3);
    expect(values[1]).toBe(Math.fround((-2 * 2.5112 * 100) / 9.97));
    expect(values[2]).toBe(Math.fround((2 * -1.1154 * 100) / 9.97));
  });

  it('dome: standard +400 (convex), profile 0, planform 0 (no gradient)', async () => {
    const dome = windowRaster([9, 10, 9, 10, 11, 10, 9, 10, 9], 1);
    expect((await runFunction(curvature, {}, [dome])).value(1, 1)).toBe(400);
    expect((await runFunction(curvature, { Type: 1 }, [dome])).value(1, 1)).toBe(0);
    expect((await runFunction(curvature, { Type: 2 }, [dome])).value(1, 1)).toBe(0);
  });

  it('a plane and a flat area are 0 for every type', async () => {
    for (const z of [(x: number, y: number) => 3 * x - 2 * y + 100, () => 42]) {
      for (const Type of [0, 1, 2]) {
        const r = await runFunction(curvature, { Type }, [rasterOf({ width: 5, height: 4, cellSize: 10 }, z)]);
        for (const v of r.block.bands[0]!) expect(v).toBe(0);
      }
    }
  });
});

describe('Curvature: the formulas on random windows, z-factor and cell sizes', () => {
  it('matches the written-out formulas for each type, ZFactor and non-square cells', async () => {
    const rnd = prng(17);
    const W = 12;
    const H = 9;
    const zs = Array.from({ length: W * H }, () => 100 + Math.round(rnd() * 400) / 8);
    const z = (x: number, y: number) => zs[y * W + x]!;
    for (const [cell, zf] of [
      [{ x: 5, y: 5 }, 1],
      [{ x: 10, y: 25 }, 2.5],
      [{ x: 30, y: 20 }, 0.3048],
    ] as const) {
      const dem = rasterOf({ width: W, height: H, cellSize: cell, pixelType: 'F64' }, z);
      for (const Type of [0, 1, 2] as const) {
        const r = await runFunction(curvature, { Type, ZFactor: zf }, [dem]);
        for (let y = 1; y < H - 1; y++) {
          for (let x = 1; x < W - 1; x++) {
            const w = [-1, 0, 1].flatMap((dy) => [-1, 0, 1].map((dx) => z(x + dx, y + dy)));
            const e = zt(w, cell.x, cell.y, zf)[Type];
            expect(r.value(x, y), `type ${Type} (${x}, ${y})`).toBeCloseTo(e, Math.abs(e) > 100 ? 2 : 4);
          }
        }
      }
    }
  });

  it('honours ZFactor linearly', async () => {
    const dem = rasterOf({ width: 6, height: 6, cellSize: 10 }, (x, y) => 0.5 * x * x - 0.25 * y * y + x * y + 3 * x);
    for (const Type of [0, 1, 2]) {
      const one = await runFunction(curvature, { Type }, [dem]);
      const three = await runFunction(curvature, { Type, ZFactor: 3 }, [dem]);
      expect(three.value(2, 3)).toBeCloseTo(3 * one.value(2, 3), 4);
    }
  });
});

describe('Curvature: signs (what the spec formulas give)', () => {
  const run = async (Type: number, z: (x: number, y: number) => number) =>
    (await runFunction(curvature, { Type }, [rasterOf({ width: 7, height: 7, cellSize: 1, pixelType: 'F64' }, z)])).value(3, 3);

  it('standard: dome > 0, bowl < 0', async () => {
    expect(await run(0, (x, y) => -((x - 3) ** 2) - (y - 3) ** 2)).toBe(400);
    expect(await run(0, (x, y) => (x - 3) ** 2 + (y - 3) ** 2)).toBe(-400);
  });

  it('profile: < 0 where the slope flattens downhill (flow decelerates), > 0 where it steepens', async () => {
    // Rises to the east, steeper uphill: going down (west) it flattens.
    expect(await run(1, (x) => (x + 2) ** 2)).toBeCloseTo(-200, 6);
    // Rises to the east, flatter uphill: going down it steepens.
    expect(await run(1, (x) => -((x - 12) ** 2))).toBeCloseTo(200, 6);
  });

  it('planform: < 0 across a ridge (divergent), > 0 across a hollow (convergent), as the formula gives', async () => {
    // Falls to the east; a ridge along y = 3 (the spec's sign sentence says the opposite, see curvature.ts).
    expect(await run(2, (x, y) => -5 * x - (y - 3) ** 2)).toBeCloseTo(-200, 6);
    expect(await run(2, (x, y) => -5 * x + (y - 3) ** 2)).toBeCloseTo(200, 6);
  });
});

describe('Curvature: NoData and edges (shared reader, gradient.ts)', () => {
  const z = (x: number, y: number) => x * x + 3 * y + 0.5 * x * y;

  it('substitutes one missing neighbour with the centre, drops cells with two', async () => {
    const mask = new Uint8Array(25).fill(1);
    mask[6] = 0; // (1, 1)
    const r = await runFunction(curvature, { Type: 'Profile' }, [rasterOf({ width: 5, height: 5, pixelType: 'F64' }, z, mask)]);
    const w = [-1, 0, 1].flatMap((dy) => [-1, 0, 1].map((dx) => z(2 + dx, 2 + dy)));
    w[0] = z(2, 2);
    expect(r.value(2, 2)).toBeCloseTo(zt(w, 1, 1)[1], 4);
    expect(r.valid(1, 1)).toBe(false);
    mask[18] = 0;
    const two = await runFunction(curvature, {}, [rasterOf({ width: 5, height: 5, pixelType: 'F64' }, z, mask)]);
    expect(two.valid(2, 2)).toBe(false);
    expect(Number.isNaN(two.value(2, 2))).toBe(true);
  });

  it('RemoveEdgeEffect extrapolates past the edge like gdaldem -compute_edges', async () => {
    const r = await runFunction(curvature, { Type: 0, RemoveEdgeEffect: true }, [rasterOf({ width: 5, height: 5, pixelType: 'F64' }, z)]);
    // (0, 2): column -1 = 2 z(0, y) - z(1, y).
    const w = [1, 2, 3].flatMap((y) => [2 * z(0, y) - z(1, y), z(0, y), z(1, y)]);
    expect(r.value(0, 2)).toBeCloseTo(zt(w, 1, 1)[0], 6);
    const v = await runFunction(curvature, { Type: 0 }, [rasterOf({ width: 5, height: 5, pixelType: 'F64' }, z)]);
    expect(v.value(0, 2)).toBe(v.value(1, 2));
  });
});

describe('Curvature: geographic DEMs', () => {
  // A bowl z = (x - 3)^2 + (y - 3)^2 (metres) on 3" cells at 45 N: the x cells are shorter.
  const bowl = rasterOf(
    { width: 7, height: 7, cellSize: 1 / 1200, geographic: true, origin: { x: 0, y: 45 } },
    (x, y) => (x - 3) ** 2 + (y - 3) ** 2,
  );
  const rad = Math.PI / 180 / 1200;

  it("Geodesic (default): the row's N cos(phi) dlon and M dlat, in metres", async () => {
    const a = 6378137;
    const f = 1 / 298.257223563;
    const e2 = f * (2 - f);
    const phi = ((45 - 3.5 / 1200) * Math.PI) / 180;
    const w = 1 - e2 * Math.sin(phi) ** 2;
    const lx = (a / Math.sqrt(w)) * Math.cos(phi) * rad;
    const ly = ((a * (1 - e2)) / w ** 1.5) * rad;
    const r = await runFunction(curvature, {}, [bowl]);
    expect(r.value(3, 3)).toBeCloseTo(-200 * (1 / lx ** 2 + 1 / ly ** 2), 7);
  });

  it('Vendor111000: 111000 m per degree on both axes when ZFactor > 0.001; cells stay degrees otherwise', async () => {
    const L = 111000 / 1200;
    const r = await runFunction(curvature, { GeographicCellSize: 'Vendor111000' }, [bowl]);
    expect(r.value(3, 3)).toBeCloseTo(-400 / L ** 2, 7);
    const d = await runFunction(curvature, { GeographicCellSize: 'Vendor111000', ZFactor: 0.0001 }, [bowl]);
    expect(d.value(3, 3) / (-400 * 0.0001 * 1200 ** 2)).toBeCloseTo(1, 5);
  });
});

describe('Curvature: plan', () => {
  const dem = rasterOf({ width: 4, height: 4 }, (x) => x);

  it('takes the vendor enumeration codes and names, Platform as Planform', () => {
    const type = (Type: unknown) => (applyFunction(curvature, { Type }, [dem]).plan.params as { type: number }).type;
    expect(type(undefined)).toBe(CurvatureType.Standard);
    expect([type(0), type(1), type(2)]).toEqual([0, 1, 2]);
    expect([type('standard'), type('PROFILE'), type('Planform'), type('platform'), type('2')]).toEqual([0, 1, 2, 2, 2]);
  });

  it('outputs F32 with NaN NoData, binds to Raster (DEM accepted); halo 2, or 1 with RemoveEdgeEffect', () => {
    const node = applyFunction(curvature, {}, [dem]);
    expect(node.info).toMatchObject({ pixelType: 'F32', bandCount: 1 });
    expect(Number.isNaN(node.info.noData)).toBe(true);
    expect(node.plan.halo).toBe(2);
    expect(applyFunction(curvature, { RemoveEdgeEffect: true }, [dem]).plan.halo).toBe(1);
    expect(curvature.variableName).toBe('Raster');
    const parsed = parseArgs(curvature.args, { dem: '$1', type: 1, zfactor: '2' }, 'rasterFunctionArguments');
    expect(parsed.warnings).toEqual([]);
    expect(parsed.rasters.map((r) => r.name)).toEqual(['Raster']);
    expect(parsed.values).toMatchObject({ Type: 1, ZFactor: 2 });
  });

  it('rejects bad arguments with INVALID_ARGUMENT and the argument path', () => {
    for (const [args, path] of [
      [{ Type: 3 }, 'rasterFunctionArguments.Type'],
      [{ Type: -1 }, 'rasterFunctionArguments.Type'],
      [{ Type: 'Tangential' }, 'rasterFunctionArguments.Type'],
      [{ ZFactor: 'steep' }, 'rasterFunctionArguments.ZFactor'],
      [{ RemoveEdgeEffect: 2 }, 'rasterFunctionArguments.RemoveEdgeEffect'],
      [{ GeographicCellSize: 'Haversine' }, 'rasterFunctionArguments.GeographicCellSize'],
    ] as const) {
      expect(
        catchError(() => applyFunction(curvature, args, [dem])),
        JSON.stringify(args),
      ).toMatchObject({ code: 'INVALID_ARGUMENT', path });
    }
  });

  it('rejects a multi-band DEM at plan time, naming Raster', () => {
    const rgb = rasterOf({ width: 4, height: 4, bandCount: 2 }, (x) => x);
    expect(catchError(() => applyFunction(curvature, {}, [rgb]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Raster',
    });
  });
});

describe('Curvature: tiled equals whole', () => {
  const W = 43;
  const H = 35;
  const mask = new Uint8Array(W * H).fill(1);
  for (const i of [0, 3, 130, 131, 173, 600, 1001, W * H - 1, W * H - W + 5]) mask[i] = 0;
  const z = (x: number, y: number) => 500 + 60 * Math.sin(x / 5) * Math.cos(y / 4) + ((x * 13 + y * 29) % 5);
  const dem = rasterOf({ width: W, height: H, cellSize: 20 }, z, mask);
  const geo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true, origin: { x: -84.4, y: 36.7 } }, z, mask);
  const cases: [string, Record<string, unknown>, typeof dem][] = [];
  for (const Type of [0, 1, 2]) {
    cases.push([`type ${Type}`, { Type }, dem], [`type ${Type} RemoveEdgeEffect`, { Type, RemoveEdgeEffect: true }, dem]);
  }
  cases.push(
    ['ZFactor 2', { Type: 1, ZFactor: 2 }, dem],
    ['geographic, geodesic', { Type: 2 }, geo],
    ['geographic, geodesic, RemoveEdgeEffect', { Type: 0, RemoveEdgeEffect: true }, geo],
    ['geographic, vendor', { Type: 1, GeographicCellSize: 'Vendor111000' }, geo],
  );
  for (const [label, args, input] of cases) {
    it(label, async () => {
      const node = applyFunction(curvature, args, [input]);
      for (const t of [
        [37, 53],
        [7, 5],
        [1, 3],
        [3, 1],
        [16, 9],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, t), `tiles ${t.join('x')}`).toBeUndefined();
      }
    });
  }
});

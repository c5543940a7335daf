import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../graph/args.js';
import { applyFunction, catchError, prng, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { aspect, aspectOf, FLAT_ASPECT } from './aspect.js';

const DEG = 180 / Math.PI;
const windowRaster = (w: readonly number[], cellSize: number) => rasterOf({ width: 3, height: 3, cellSize }, (x, y) => w[y * 3 + x]!);
/** The spec's formula with Math.atan2, for gradients gx (east - west) and gy (south - north). */
const expected = (gx: number, gy: number): number => {
  if (gx === 0 && gy === 0) return -1;
  const a = 90 - Math.atan2(gy, -gx) * DEG;
  return a < 0 ? a + 360 : a;
};

describe('Aspect: hand-checked values', () => {
  it('Appendix C: 92.6425 degrees', async () => {
    const r = await runFunction(aspect, {}, [windowRaster([101, 92, 85, 101, 92, 85, 101, 91, 84], 1)]);
    expect(r.value(1, 1)).toBeCloseTo(92.6425, 4);
    expect(r.value(0, 0)).toBe(r.value(1, 1)); // ring copied from the inner cell
  });

  it('Appendix C: a flat window is -1, edges included', async () => {
    const r = await runFunction(aspect, {}, [rasterOf({ width: 5, height: 4, cellSize: 30 }, () => 250)]);
    expect(Array.from(r.block.bands[0]!)).toEqual(new Array(20).fill(FLAT_ASPECT));
    expect(Array.from(r.block.mask)).toEqual(new Array(20).fill(1)); // -1 is a value, not NoData
  });

  it('faces the downslope direction, clockwise from north', async () => {
    const cases: [(x: number, y: number) => number, number][] = [
      [(_, y) => y, 0], // rises to the south: faces north
      [(x) => -x, 90], // falls to the east
      [(_, y) => -y, 180],
      [(x) => x, 270],
      [(x, y) => -x + y, 45], // falls to the east and the north
      [(x, y) => x - y, 225],
    ];
    for (const [z, a] of cases) {
      const r = await runFunction(aspect, {}, [rasterOf({ width: 5, height: 5, cellSize: 10 }, z)]);
      expect(r.value(2, 2), String(a)).toBeCloseTo(a, 5);
    }
  });

  it('divides each gradient by its own cell size (non-square cells)', async () => {
    // Rises 1 m per cell east (10 m cells) and 1 m per cell south (20 m cells): gx 0.1, gy 0.05.
    const r = await runFunction(aspect, {}, [rasterOf({ width: 5, height: 5, cellSize: { x: 10, y: 20 } }, (x, y) => x + y)]);
    expect(r.value(2, 2)).toBeCloseTo(expected(0.1, 0.05), 4); // 296.565 (F32)
  });

  it('matches the formula with Math.atan2 on random windows (fitted arctangent)', async () => {
    const rnd = prng(3);
    const W = 40;
    const H = 30;
    const zs = Array.from({ length: W * H }, () => Math.round(rnd() * 20) / 4);
    const r = await runFunction(aspect, {}, [rasterOf({ width: W, height: H, cellSize: 1, pixelType: 'F64' }, (x, y) => zs[y * W + x]!)]);
    const z = (x: number, y: number) => zs[y * W + x]!;
    let worst = 0;
    for (let y = 1; y < H - 1; y++) {
      for (let x = 1; x < W - 1; x++) {
        const gx = (z(x + 1, y - 1) + 2 * z(x + 1, y) + z(x + 1, y + 1) - (z(x - 1, y - 1) + 2 * z(x - 1, y) + z(x - 1, y + 1))) / 8;
        const gy = (z(x - 1, y + 1) + 2 * z(x, y + 1) + z(x + 1, y + 1) - (z(x - 1, y - 1) + 2 * z(x, y - 1) + z(x + 1, y - 1))) / 8;
        const e = expected(gx, gy);
        const a = r.value(x, y);
        const d = Math.min(Math.abs(a - e), 360 - Math.abs(a - e));
        worst = Math.max(worst, e === -1 ? Math.abs(a + 1) : d);
      }
    }
    expect(worst).toBeLessThan(5e-5); // F32 output resolution near 360 is 3e-5
  });

  it('stays below 360: an angle that would round to 360 in F32 is stored as 0 (north)', async () => {
    // gx 1e-9, gy 1: aspect 359.99999994, which Float32 would round to 360.
    const r = await runFunction(aspect, {}, [rasterOf({ width: 5, height: 5, pixelType: 'F64' }, (x, y) => 1e-9 * x + y)]);
    expect(r.value(2, 2)).toBe(0);
    const s = await runFunction(aspect, {}, [rasterOf({ width: 5, height: 5, pixelType: 'F64' }, (x, y) => 1e-3 * x + y)]);
    expect(s.value(2, 2)).toBeCloseTo(expected(1e-3, 1), 4);
    expect(s.value(2, 2)).toBeLessThan(360);
  });
});

describe('Aspect: the arctangent (half-angle identity over the fitted polynomial)', () => {
  it('is within 1.2e-7 degrees of 90 - atan2(v, -u) over 8 decades, always in [0, 360)', () => {
    let worst = 0;
    const rnd = prng(9);
    for (let k = 0; k < 200000; k++) {
      const u = (rnd() - 0.5) * 10 ** (rnd() * 8 - 4);
      const v = (rnd() - 0.5) * 10 ** (rnd() * 8 - 4);
      let want = 90 - (Math.atan2(v, -u) * 180) / Math.PI;
      if (want < 0) want += 360;
      const got = aspectOf(u, v);
      expect(got >= 0 && Math.fround(got) < 360).toBe(true);
      // Within 1e-6 of the F32 north boundary (359.99998474...; above it F32 would store 360, so
      // the kernel stores 0) the 1e-7 error may move a value across: the next test covers it.
      if (want > 359.9999837) continue;
      worst = Math.max(worst, Math.abs(got - want));
    }
    expect(worst).toBeLessThan(1.2e-7);
  });
  it('is exact on the axes, -1 when flat, and 0 where F32 would round to 360', () => {
    // (u, v) = (east minus west, south minus north): downslope faces north when v > 0.
    expect([aspectOf(0, 1), aspectOf(-1, 0), aspectOf(0, -1), aspectOf(1, 0), aspectOf(0, 0)]).toEqual([0, 90, 180, 270, FLAT_ASPECT]);
    expect([aspectOf(0, 1e-30), aspectOf(-0, 5), aspectOf(0, -1e30)]).toEqual([0, 0, 180]);
    expect(aspectOf(1e-9, 1)).toBe(0); // 359.99999994...: 360 in F32
    expect(aspectOf(-1, -1)).toBeCloseTo(135, 6);
    expect(aspectOf(1, 1)).toBeCloseTo(315, 6);
  });
});

describe('Aspect: ZFactor is accepted and has no effect', () => {
  const dem = rasterOf({ width: 6, height: 5, cellSize: 30 }, (x, y) => 3 * x * x - 2 * y + x * y);

  it('parses without error or warning (rules-sample 041 sends ZFactor)', () => {
    const parsed = parseArgs(aspect.args, { Raster: '$$', ZFactor: 1 }, 'rasterFunctionArguments');
    expect(parsed.issues).toEqual([]);
    expect(parsed.warnings).toEqual([]);
  });

  it('gives the same bits for any ZFactor', async () => {
    const base = await runFunction(aspect, {}, [dem]);
    for (const ZFactor of [1, 7, 0.3048, -2, '2.5']) {
      const r = await runFunction(aspect, { ZFactor }, [dem]);
      expect(Array.from(r.block.bands[0]!), String(ZFactor)).toEqual(Array.from(base.block.bands[0]!));
    }
  });
});

describe('Aspect: NoData and edges (shared reader, gradient.ts)', () => {
  const z = (x: number, y: number) => x * x + 3 * y;

  it('substitutes one missing neighbour, drops cells with two, keeps a NoData centre NoData', async () => {
    const mask = new Uint8Array(25).fill(1);
    mask[6] = 0; // (1, 1)
    const r = await runFunction(aspect, {}, [rasterOf({ width: 5, height: 5 }, z, mask)]);
    expect(r.valid(1, 1)).toBe(false);
    expect(Number.isNaN(r.value(1, 1))).toBe(true);
    // (2, 2): a = z(1, 1) replaced by e = z(2, 2) = 10: 10 7 12 / 7 10 15 / 10 13 18.
    expect(r.value(2, 2)).toBeCloseTo(expected((12 + 30 + 18 - (10 + 14 + 10)) / 8, (10 + 26 + 18 - (10 + 14 + 12)) / 8), 4);
    mask[18] = 0; // (3, 3): (2, 2) now misses two neighbours
    const two = await runFunction(aspect, {}, [rasterOf({ width: 5, height: 5 }, z, mask)]);
    expect(two.valid(2, 2)).toBe(false);
  });

  it('copies the ring from the inner neighbour (vendor), or extrapolates (RemoveEdgeEffect)', async () => {
    const dem = rasterOf({ width: 5, height: 5 }, z);
    const v = await runFunction(aspect, {}, [dem]);
    expect(v.value(0, 2)).toBe(v.value(1, 2));
    expect(v.value(4, 4)).toBe(v.value(3, 3));
    const e = await runFunction(aspect, { RemoveEdgeEffect: true }, [dem]);
    // (0, 2): column -1 extrapolated: window 2 3 4 / 5 6 7 / 8 9 10: gx 1, gy 3 (see gradient.test.ts).
    expect(e.value(0, 2)).toBeCloseTo(expected(1, 3), 4);
  });
});

describe('Aspect: geographic DEMs', () => {
  // z rises 1 per column and 1 per row (to the south) on square 3" cells at 60 N.
  const geo = rasterOf({ width: 7, height: 7, cellSize: 1 / 1200, geographic: true, origin: { x: 10, y: 60 } }, (x, y) => x + y);

  it('Vendor111000 scales both axes alike: the degree cells stay square', async () => {
    const r = await runFunction(aspect, { GeographicCellSize: 'vendor111000' }, [geo]);
    expect(r.value(3, 3)).toBeCloseTo(315, 4);
  });

  it("Geodesic (default) uses each row's metres: east-west cells are half as long at 60 N", async () => {
    const r = await runFunction(aspect, {}, [geo]);
    // Independent geodesy: N(phi) cos(phi) dlon across, M(phi) dlat along the meridian.
    const a = 6378137;
    const f = 1 / 298.257223563;
    const e2 = f * (2 - f);
    const phi = (60 - 3.5 / 1200) / DEG;
    const w = 1 - e2 * Math.sin(phi) ** 2;
    const lx = (a / Math.sqrt(w)) * Math.cos(phi);
    const ly = (a * (1 - e2)) / w ** 1.5;
    expect(r.value(3, 3)).toBeCloseTo(expected(1 / lx, 1 / ly), 4);
    expect(r.value(3, 3)).toBeLessThan(300); // about 296.6, not 315
  });
});

describe('Aspect: plan', () => {
  const dem = rasterOf({ width: 4, height: 4 }, (x) => x);

  it('outputs F32, NaN NoData, advertised statistics 0..360; halo 2, or 1 with RemoveEdgeEffect', () => {
    const node = applyFunction(aspect, {}, [dem]);
    expect(node.info).toMatchObject({ pixelType: 'F32', bandCount: 1, statistics: [{ min: 0, max: 360 }] });
    expect(Number.isNaN(node.info.noData)).toBe(true);
    expect(node.plan.halo).toBe(2);
    expect(applyFunction(aspect, { RemoveEdgeEffect: true }, [dem]).plan.halo).toBe(1);
  });

  it('binds to Raster and accepts DEM as an alias', () => {
    expect(aspect.variableName).toBe('Raster');
    const parsed = parseArgs(aspect.args, { DEM: '$1' }, 'rasterFunctionArguments');
    expect(parsed.warnings).toEqual([]);
    expect(parsed.rasters.map((r) => r.name)).toEqual(['Raster']);
  });

  it('rejects bad arguments with INVALID_ARGUMENT and the argument path', () => {
    for (const [args, path] of [
      [{ ZFactor: 'x' }, 'rasterFunctionArguments.ZFactor'],
      [{ RemoveEdgeEffect: 'maybe' }, 'rasterFunctionArguments.RemoveEdgeEffect'],
      [{ GeographicCellSize: 'Flat' }, 'rasterFunctionArguments.GeographicCellSize'],
      [{ geographiccellsize: 3 }, 'rasterFunctionArguments.geographiccellsize'],
    ] as const) {
      expect(
        catchError(() => applyFunction(aspect, args, [dem])),
        JSON.stringify(args),
      ).toMatchObject({ code: 'INVALID_ARGUMENT', path });
    }
  });

  it('rejects a multi-band DEM at plan time, naming Raster', () => {
    const rgb = rasterOf({ width: 4, height: 4, bandCount: 3, pixelType: 'U8' }, (x) => x);
    expect(catchError(() => applyFunction(aspect, {}, [rgb]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Raster',
    });
  });
});

describe('Aspect: tiled equals whole', () => {
  const W = 45;
  const H = 33;
  const mask = new Uint8Array(W * H).fill(1);
  for (const i of [0, 9, 150, 151, 152, 500, 901, W * H - 1, W * H - W + 2]) mask[i] = 0;
  const z = (x: number, y: number) => 300 + 50 * Math.sin(x / 6) * Math.cos(y / 4) + ((x * 17 + y * 23) % 5);
  const dem = rasterOf({ width: W, height: H, cellSize: 25 }, z, mask);
  const s16 = rasterOf({ width: W, height: H, cellSize: 25, pixelType: 'S16' }, (x, y) => Math.round(z(x, y) / 4), mask);
  const geo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true, origin: { x: 7, y: 61 } }, z, mask);
  const cases: [string, Record<string, unknown>, typeof dem][] = [
    ['vendor edges', {}, dem],
    ['RemoveEdgeEffect', { RemoveEdgeEffect: true }, dem],
    ['S16 DEM with flats', {}, s16],
    ['geographic, geodesic', {}, geo],
    ['geographic, geodesic, RemoveEdgeEffect', { RemoveEdgeEffect: true }, geo],
    ['geographic, vendor', { GeographicCellSize: 'Vendor111000' }, geo],
  ];
  for (const [label, args, input] of cases) {
    it(label, async () => {
      const node = applyFunction(aspect, args, [input]);
      for (const t of [
        [37, 53],
        [7, 5],
        [1, 3],
        [2, 2],
        [16, 9],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, t), `tiles ${t.join('x')}`).toBeUndefined();
      }
    });
  }
});

/**
 * The shared window reader's edge/NoData policy (gradient.ts), seen through Slope in percent rise
 * (100 * |gradient|, the plainest function of the gradient) and through Curvature (which reads all
 * nine window values), checked against a naive re-implementation of the documented rules, plus
 * hand-computed cells; and the per-row geodesic cell sizes of geographic DEMs.
 */
import { describe, expect, it } from 'vitest';
import { applyFunction, gridInfo, prng, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { aspect } from './aspect.js';
import { curvature } from './curvature.js';
import { windowParams, WindowRows } from './gradient.js';
import { hillshade } from './hillshade.js';
import { slope } from './slope.js';

type Z = (x: number, y: number) => number;

/** Mask with the listed (x, y) cells NoData. */
function holes(width: number, height: number, cells: readonly (readonly [number, number])[]): Uint8Array {
  const m = new Uint8Array(width * height).fill(1);
  for (const [x, y] of cells) m[y * width + x] = 0;
  return m;
}

/** Percent slope of a window (unit cells). */
const horn = (w: readonly number[]): number => {
  const gx = (w[2]! + 2 * w[5]! + w[8]! - (w[0]! + 2 * w[3]! + w[6]!)) / 8;
  const gy = (w[6]! + 2 * w[7]! + w[8]! - (w[0]! + 2 * w[1]! + w[2]!)) / 8;
  return 100 * Math.hypot(gx, gy);
};

/** Zevenbergen-Thorne profile curvature of a window (unit cells): uses all nine values. */
const profile = (w: readonly number[]): number => {
  const [a, b, c, d, e, f, g, h, i] = w as [number, number, number, number, number, number, number, number, number];
  const D = (d + f) / 2 - e;
  const E = (b + h) / 2 - e;
  const F = (-a + c + g - i) / 4;
  const G = (f - d) / 2;
  const H = (b - h) / 2;
  const s = G * G + H * H;
  return s === 0 ? 0 : (-200 * (D * G * G + E * H * H + F * G * H)) / s;
};

/**
 * Naive reference of the documented policy: the window used at (x, y) (edge and NoData rules
 * applied), or undefined for NoData. Written from the rules in gradient.ts, not from its code.
 */
function windowReference(z: Z, valid: (x: number, y: number) => boolean, W: number, H: number, extrapolate: boolean) {
  const inside = (x: number, y: number) => x >= 0 && y >= 0 && x < W && y < H;
  const ok = (x: number, y: number) => inside(x, y) && valid(x, y);
  // Vendor rule: inner cells with >= 7 valid neighbours; the ring copies the inner neighbour.
  const inner = (x: number, y: number): number[] | undefined => {
    if (!ok(x, y)) return undefined;
    const w: number[] = [];
    let missing = 0;
    for (let dy = -1; dy <= 1; dy++) {
      for (let dx = -1; dx <= 1; dx++) {
        if (ok(x + dx, y + dy)) w.push(z(x + dx, y + dy));
        else {
          missing++;
          w.push(z(x, y));
        }
      }
    }
    return missing > 1 ? undefined : w;
  };
  // GDAL -compute_edges.
  const gdal = (x: number, y: number): number[] | undefined => {
    if (!ok(x, y)) return undefined;
    const w: number[] = [];
    const edgeRow = y === 0 || y === H - 1;
    for (let dy = -1; dy <= 1; dy++) {
      for (let dx = -1; dx <= 1; dx++) {
        let cx = x + dx;
        const cy = y + dy;
        let v: number | undefined;
        if (cx < 0 || cx >= W) {
          if (edgeRow) cx = x;
          else {
            v = ok(x, cy) && ok(x - dx, cy) ? 2 * z(x, cy) - z(x - dx, cy) : undefined;
            w.push(v ?? z(x, y));
            continue;
          }
        }
        if (cy < 0 || cy >= H) v = ok(cx, y) && ok(cx, y - dy) ? 2 * z(cx, y) - z(cx, y - dy) : undefined;
        else v = ok(cx, cy) ? z(cx, cy) : undefined;
        w.push(v ?? z(x, y));
      }
    }
    return w;
  };
  return (x: number, y: number): number[] | undefined => {
    if (extrapolate) return W < 2 || H < 2 ? undefined : gdal(x, y);
    if (W < 3 || H < 3 || !ok(x, y)) return undefined;
    return inner(Math.min(Math.max(x, 1), W - 2), Math.min(Math.max(y, 1), H - 2));
  };
}

/** Naive reference of the policy through Horn: percent slope at (x, y), or undefined for NoData. */
function reference(z: Z, valid: (x: number, y: number) => boolean, W: number, H: number, extrapolate: boolean) {
  const win = windowReference(z, valid, W, H, extrapolate);
  return (x: number, y: number): number | undefined => {
    const w = win(x, y);
    return w === undefined ? undefined : horn(w);
  };
}

describe('edge and NoData policy (vendor rule, RemoveEdgeEffect false)', () => {
  const z: Z = (x, y) => x * x + 3 * y;

  it('computes a valid cell with 8 valid neighbours normally', async () => {
    const r = await runFunction(slope, { SlopeType: 2 }, [rasterOf({ width: 5, height: 5 }, z)]);
    // (2, 2), unit cells: Horn is exact for x^2 and y here: gx = 2x = 4, gy = 3.
    expect(r.value(2, 2)).toBeCloseTo(100 * Math.hypot(4, 3), 4);
  });

  it('gives the one missing neighbour the centre value (exactly 7 valid)', async () => {
    const mask = holes(5, 5, [[1, 1]]);
    const r = await runFunction(slope, { SlopeType: 2 }, [rasterOf({ width: 5, height: 5 }, z, mask)]);
    // Window of (2, 2) with a = z(1, 1) replaced by e = z(2, 2) = 10:
    //   10 7 12 / 7 10 15 / 10 13 18  (z(x, y) = x^2 + 3y; a was 4)
    const [a, b, c, d, f, g, h, i] = [10, 7, 12, 7, 15, 10, 13, 18];
    const gx = (c + 2 * f + i - (a + 2 * d + g)) / 8;
    const gy = (g + 2 * h + i - (a + 2 * b + c)) / 8;
    expect(r.valid(2, 2)).toBe(true);
    expect(r.value(2, 2)).toBeCloseTo(100 * Math.hypot(gx, gy), 4);
    expect(r.valid(1, 1)).toBe(false); // the NoData centre itself
  });

  it('makes a cell with fewer than 7 valid neighbours NoData', async () => {
    const mask = holes(5, 5, [
      [1, 1],
      [3, 3],
    ]);
    const r = await runFunction(slope, { SlopeType: 2 }, [rasterOf({ width: 5, height: 5 }, z, mask)]);
    expect(r.valid(2, 2)).toBe(false);
    expect(Number.isNaN(r.value(2, 2))).toBe(true);
    expect(r.valid(2, 1)).toBe(true); // only (1, 1) missing around (2, 1)
  });

  it('copies the outer ring from the adjacent inner row/column, corners from the diagonal', async () => {
    const W = 6;
    const H = 5;
    const r = await runFunction(slope, {}, [rasterOf({ width: W, height: H, cellSize: 2 }, (x, y) => x * x + y * y * y)]);
    for (let y = 0; y < H; y++) {
      expect(r.value(0, y)).toBe(r.value(1, Math.min(Math.max(y, 1), H - 2)));
      expect(r.value(W - 1, y)).toBe(r.value(W - 2, Math.min(Math.max(y, 1), H - 2)));
    }
    for (let x = 0; x < W; x++) {
      expect(r.value(x, 0)).toBe(r.value(Math.min(Math.max(x, 1), W - 2), 1));
      expect(r.value(x, H - 1)).toBe(r.value(Math.min(Math.max(x, 1), W - 2), H - 2));
    }
    expect(r.value(0, 0)).toBe(r.value(1, 1));
    expect(r.value(W - 1, H - 1)).toBe(r.value(W - 2, H - 2));
  });

  it('keeps a NoData input on the ring NoData, and copies NoData from an invalid inner cell', async () => {
    const mask = holes(5, 5, [
      [0, 2],
      [3, 1],
      [3, 2],
    ]);
    const r = await runFunction(slope, {}, [rasterOf({ width: 5, height: 5 }, z, mask)]);
    expect(r.valid(0, 2)).toBe(false); // own input NoData although (1, 2) is computed
    expect(r.valid(1, 2)).toBe(true); // one missing neighbour, (0, 2)
    expect(r.valid(3, 0)).toBe(false); // copies (3, 1), which is NoData
    expect(r.valid(4, 1)).toBe(false); // copies (3, 1)
    expect(r.valid(4, 3)).toBe(true); // copies (3, 3): one missing neighbour, (3, 2)
  });

  it('has no inner cell below 3x3: all NoData', async () => {
    for (const [w, h] of [
      [1, 1],
      [2, 2],
      [2, 5],
      [5, 2],
    ] as const) {
      const r = await runFunction(slope, {}, [rasterOf({ width: w, height: h }, z)]);
      expect(Array.from(r.block.mask)).toEqual(new Array(w * h).fill(0));
    }
  });
});

describe('edge and NoData policy (RemoveEdgeEffect true = gdaldem -compute_edges)', () => {
  const z: Z = (x, y) => x * x + 3 * y;

  it('extrapolates the missing column 2*edge - inner in inner rows', async () => {
    const r = await runFunction(slope, { SlopeType: 2, RemoveEdgeEffect: true }, [rasterOf({ width: 5, height: 5 }, z)]);
    // (0, 2): column -1 = 2 z(0, y) - z(1, y) = 3y - 1; window 2 3 4 / 5 6 7 / 8 9 10: gx 1, gy 3.
    expect(r.value(0, 2)).toBeCloseTo(100 * Math.hypot(1, 3), 4);
    // The vendor rule copies (1, 2) instead: gx 2, gy 3.
    const v = await runFunction(slope, { SlopeType: 2 }, [rasterOf({ width: 5, height: 5 }, z)]);
    expect(v.value(0, 2)).toBeCloseTo(100 * Math.hypot(2, 3), 4);
  });

  it('extrapolates the missing row and repeats the centre column at corners (GDAL jmin = j)', async () => {
    const r = await runFunction(slope, { SlopeType: 2, RemoveEdgeEffect: true }, [rasterOf({ width: 5, height: 5 }, z)]);
    // (0, 0): window -3 -3 -2 / 0 0 1 / 3 3 4: gx 0.5, gy 3.
    expect(r.value(0, 0)).toBeCloseTo(100 * Math.hypot(0.5, 3), 4);
  });

  it('fills any number of NoData neighbours with the centre value', async () => {
    const mask = holes(5, 5, [
      [1, 1],
      [3, 3],
      [2, 1],
    ]);
    const r = await runFunction(slope, { SlopeType: 2, RemoveEdgeEffect: true }, [rasterOf({ width: 5, height: 5 }, z, mask)]);
    expect(r.valid(2, 2)).toBe(true);
    expect(r.valid(1, 1)).toBe(false);
    const ref = reference(z, (x, y) => mask[y * 5 + x] === 1, 5, 5, true);
    expect(r.value(2, 2)).toBeCloseTo(ref(2, 2)!, 4);
  });
});

describe('the reader against a naive reference', () => {
  const sizes = [
    [1, 1],
    [2, 2],
    [3, 3],
    [2, 6],
    [6, 2],
    [4, 3],
    [9, 7],
    [23, 17],
  ] as const;
  for (const extrapolate of [false, true]) {
    for (const [W, H] of sizes) {
      it(`${extrapolate ? 'extrapolate' : 'vendor'} ${W}x${H} with random holes`, async () => {
        const rnd = prng(W * 31 + H + (extrapolate ? 7 : 0));
        const zs = Array.from({ length: W * H }, () => Math.round(rnd() * 50));
        const mask = Uint8Array.from({ length: W * H }, () => (rnd() < 0.12 ? 0 : 1));
        const zf: Z = (x, y) => zs[y * W + x]!;
        const ref = reference(zf, (x, y) => mask[y * W + x] === 1, W, H, extrapolate);
        const r = await runFunction(slope, { SlopeType: 2, RemoveEdgeEffect: extrapolate }, [rasterOf({ width: W, height: H }, zf, mask)]);
        for (let y = 0; y < H; y++) {
          for (let x = 0; x < W; x++) {
            const e = ref(x, y);
            expect(r.valid(x, y), `valid (${x}, ${y})`).toBe(e !== undefined);
            if (e !== undefined) expect(r.value(x, y), `(${x}, ${y})`).toBeCloseTo(e, 3);
          }
        }
      });

      it(`${extrapolate ? 'extrapolate' : 'vendor'} ${W}x${H} with random holes, all nine values (Curvature)`, async () => {
        const rnd = prng(W * 37 + H + (extrapolate ? 5 : 0));
        const zs = Array.from({ length: W * H }, () => Math.round(rnd() * 50));
        const mask = Uint8Array.from({ length: W * H }, () => (rnd() < 0.12 ? 0 : 1));
        const zf: Z = (x, y) => zs[y * W + x]!;
        const ref = windowReference(zf, (x, y) => mask[y * W + x] === 1, W, H, extrapolate);
        const r = await runFunction(curvature, { Type: 1, RemoveEdgeEffect: extrapolate }, [rasterOf({ width: W, height: H }, zf, mask)]);
        for (let y = 0; y < H; y++) {
          for (let x = 0; x < W; x++) {
            const w = ref(x, y);
            expect(r.valid(x, y), `valid (${x}, ${y})`).toBe(w !== undefined);
            if (w !== undefined) expect(r.value(x, y), `(${x}, ${y})`).toBeCloseTo(profile(w), 2);
          }
        }
      });
    }
  }
});

describe('tiled equals whole, bit for bit', () => {
  const W = 41;
  const H = 29;
  const rnd = prng(5);
  const zs = Array.from({ length: W * H }, (_, i) => 300 + 80 * Math.sin(i / 9) + 20 * rnd());
  const mask = Uint8Array.from({ length: W * H }, () => (rnd() < 0.06 ? 0 : 1));
  mask[0] = 0; // a NoData corner
  mask[W * H - 2] = 0; // and one on the bottom row
  const dem = rasterOf({ width: W, height: H, cellSize: 30 }, (x, y) => zs[y * W + x]!, mask);
  const full = rasterOf({ width: W, height: H, cellSize: 30 }, (x, y) => zs[y * W + x]!);
  const tileSizes: [number, number][] = [
    [37, 53],
    [1, 1],
    [2, 3],
    [3, 2],
    [5, 7],
    [4, 4],
    [13, 1],
    [1, 11],
  ];
  for (const RemoveEdgeEffect of [false, true]) {
    for (const [label, input] of [
      ['holes', dem],
      ['no holes', full],
    ] as const) {
      for (const fn of [slope, hillshade, aspect, curvature]) {
        it(`${fn.name} RemoveEdgeEffect ${RemoveEdgeEffect}, ${label}`, async () => {
          const node = applyFunction(fn, { RemoveEdgeEffect }, [input]);
          for (const t of tileSizes) expect(await tiledVersusWhole(node, t), `tiles ${t.join('x')}`).toBeUndefined();
        });
      }
    }
  }
});

describe('atanDegrees', () => {
  it('is within 6e-8 degrees of Math.atan everywhere (fitted polynomial, see gradient.ts)', async () => {
    const { atanDegrees } = await import('./gradient.js');
    let worst = 0;
    for (let i = 0; i <= 200000; i++) {
      const r = i < 100000 ? i / 100000 : 100000 / (200001 - i); // [0, 1] densely, then up to 1e5
      worst = Math.max(worst, Math.abs(atanDegrees(r) - (Math.atan(r) * 180) / Math.PI));
    }
    expect(worst).toBeLessThan(6e-8);
    expect(atanDegrees(0)).toBe(0);
    expect(atanDegrees(1)).toBeCloseTo(45, 6);
    expect(atanDegrees(Number.POSITIVE_INFINITY)).toBe(90);
  });
});

describe('geographic DEMs: per-row geodesic cell sizes (GeographicCellSize Geodesic, the default)', () => {
  // The lengths of a degree themselves are checked against pyproj in src/core/geodesy.test.ts.

  // z rises 10 m per column: the east-west slope depends on each row's latitude.
  const cell = 1 / 1200;
  const north = 61;
  const dem = rasterOf({ width: 6, height: 40, cellSize: cell, geographic: true, origin: { x: 5, y: north } }, (x) => 10 * x);
  /** Independent geodesy: metres of one cell of longitude at a latitude (degrees). */
  const cellX = (lat: number) => {
    const a = 6378137;
    const f = 1 / 298.257223563;
    const e2 = f * (2 - f);
    const phi = (lat * Math.PI) / 180;
    return ((a * Math.cos(phi)) / Math.sqrt(1 - e2 * Math.sin(phi) ** 2)) * ((cell * Math.PI) / 180);
  };
  const latOf = (y: number) => north - (y + 0.5) * cell;

  it("Slope uses each row's own cell size; the vendor ring rows use their inner neighbour's", async () => {
    const r = await runFunction(slope, { SlopeType: 2 }, [dem]);
    for (const y of [1, 2, 20, 38]) expect(r.value(3, y), `row ${y}`).toBeCloseTo((100 * 10) / cellX(latOf(y)), 3);
    expect(r.value(3, 0)).toBe(r.value(3, 1));
    expect(r.value(3, 39)).toBe(r.value(3, 38));
    expect(r.value(3, 1)).not.toBe(r.value(3, 2)); // per row, not one mean factor
    const e = await runFunction(slope, { SlopeType: 2, RemoveEdgeEffect: true }, [dem]);
    expect(e.value(3, 0)).toBeCloseTo((100 * 10) / cellX(latOf(0)), 3);
  });

  it('converts unless |ZFactor| < 0.001 (a degrees-to-metres factor given by the client)', async () => {
    const feet = await runFunction(slope, { SlopeType: 2, ZFactor: 0.3048 }, [dem]);
    expect(feet.value(3, 20)).toBeCloseTo((100 * 3.048) / cellX(latOf(20)), 3);
    const tiny = await runFunction(slope, { SlopeType: 2, ZFactor: 1 / 111000 }, [dem]);
    expect(tiny.value(3, 20)).toBeCloseTo((100 * 10) / 111000 / cell, 3);
  });

  it('Vendor111000 is the flat vendor rule, one factor for every row', async () => {
    const r = await runFunction(slope, { SlopeType: 2, GeographicCellSize: 'VENDOR111000' }, [dem]);
    expect(r.value(3, 2)).toBe(r.value(3, 30));
    expect(r.value(3, 2)).toBeCloseTo((100 * 10) / (111000 * cell), 3);
  });

  it("Hillshade and SCALED use the row's metres too", async () => {
    const y = 17;
    const gx = 10 / cellX(latOf(y));
    const zAdj = 1 + cellX(latOf(y)) ** 0.664 * 0.024;
    const s = await runFunction(slope, { SlopeType: 3 }, [dem]);
    expect(s.value(3, y)).toBeCloseTo((Math.atan(gx * zAdj) * 180) / Math.PI, 4);
    const h = await runFunction(hillshade, { Azimuth: 270, Altitude: 30 }, [dem]);
    // Light from the west on a surface rising east: 255 (cos Z + sin Z gx) / sqrt(1 + gx^2).
    const zen = (60 * Math.PI) / 180;
    expect(h.value(3, y)).toBe(Math.trunc((255 * (Math.cos(zen) + Math.sin(zen) * gx)) / Math.sqrt(1 + gx * gx)));
  });

  it('tiles equal the whole, bit for bit (factors from the absolute row only)', async () => {
    const W = 29;
    const H = 41;
    const rnd = prng(23);
    const zs = Array.from({ length: W * H }, (_, i) => 800 + 90 * Math.sin(i / 7) + 30 * rnd());
    const mask = Uint8Array.from({ length: W * H }, () => (rnd() < 0.05 ? 0 : 1));
    const geo = rasterOf(
      { width: W, height: H, cellSize: { x: 1 / 800, y: 1 / 1200 }, geographic: true, origin: { x: 20, y: 70 } },
      (x, y) => zs[y * W + x]!,
      mask,
    );
    for (const [fn, args] of [
      [slope, {}],
      [slope, { SlopeType: 3, RemoveEdgeEffect: true }],
      [hillshade, { HillshadeType: 1 }],
      [aspect, {}],
      [curvature, { Type: 2 }],
      [curvature, { Type: 0, RemoveEdgeEffect: true, ZFactor: 0.3048 }],
    ] as const) {
      const node = applyFunction(fn, args, [geo]);
      for (const t of [
        [37, 53],
        [7, 5],
        [1, 3],
        [4, 1],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, t), `${fn.name} ${JSON.stringify(args)} tiles ${t.join('x')}`).toBeUndefined();
      }
    }
  });
});

describe('the window reader: plain rows and preset row flags', () => {
  /** A reader's state after a row, for comparison. */
  const state = (r: WindowRows) => ({ fastFrom: r.fastFrom, fastTo: r.fastTo, top: r.top, mid: r.mid, bot: r.bot, sy: r.sy });

  it('plain(y) is true only where compute(y) makes the whole row one fast span, and then sets what it sets', () => {
    const rnd = prng(2301);
    let plainRows = 0;
    let otherRows = 0;
    for (let trial = 0; trial < 200; trial++) {
      const W = 1 + Math.floor(rnd() * 40);
      const H = 1 + Math.floor(rnd() * 40);
      const extrapolate = rnd() < 0.5;
      const halo = extrapolate ? 1 : 2;
      const ox = Math.floor(rnd() * W);
      const oy = Math.floor(rnd() * H);
      const out = { x: ox, y: oy, width: 1 + Math.floor(rnd() * (W - ox)), height: 1 + Math.floor(rnd() * (H - oy)) };
      const rect = { x: out.x - halo, y: out.y - halo, width: out.width + 2 * halo, height: out.height + 2 * halo };
      const n = rect.width * rect.height;
      const mask = new Uint8Array(n);
      const z = new Float32Array(n);
      const holes = rnd() < 0.5 ? 0 : 1 + Math.floor(rnd() * 3);
      for (let i = 0; i < n; i++) {
        const X = rect.x + (i % rect.width);
        const Y = rect.y + Math.floor(i / rect.width);
        mask[i] = X >= 0 && Y >= 0 && X < W && Y < H ? 1 : 0;
        z[i] = rnd() * 100;
      }
      for (let k = 0; k < holes; k++) mask[Math.floor(rnd() * n)] = 0;
      const p = windowParams(gridInfo({ width: W, height: H }), { x: 1, y: 1 }, extrapolate);
      const block = { rect, pixelType: 'F32' as const, bands: [z], mask };
      // The same flags the row scan finds, set at once (as the wasm scan does).
      const scanned = new WindowRows(p, block, out);
      const cols = scanned.scanColumns();
      const flags = new Uint8Array(rect.height);
      if (cols) {
        for (let r = 0; r < rect.height; r++) {
          let ok = 1;
          for (let c = cols.from; c < cols.from + cols.n; c++) if (mask[r * rect.width + c] === 0) ok = 0;
          flags[r] = ok;
        }
      }
      for (let y = 0; y < out.height; y++) {
        const a = new WindowRows(p, block, out);
        const b = new WindowRows(p, block, out);
        if (cols) b.presetRows(flags);
        const all = a.compute(y);
        const isPlain = b.plain(y);
        expect(new WindowRows(p, block, out).plain(y), 'plain without preset flags').toBe(isPlain);
        if (isPlain) {
          plainRows++;
          expect(all).toBe(true);
          expect(state(b)).toEqual(state(a));
          // The only other cells: the raster's edge columns (vendor rule), whose window is the inner neighbour's.
          const others = [...Array(out.width).keys()].filter((x) => x < a.fastFrom || x >= a.fastTo);
          const copied = [...(b.copyFirst ? [a.fastFrom - 1] : []), ...(b.copyLast ? [a.fastTo] : [])];
          expect(others).toEqual(copied);
          if (copied.length > 0) expect(extrapolate).toBe(false);
          for (const x of copied) {
            const inner = x < a.fastFrom ? x + 1 : x - 1;
            const window = [a.top, a.mid, a.bot].flatMap((row) => [z[row + inner - 1]!, z[row + inner]!, z[row + inner + 1]!]);
            expect(a.ok[x]).toBe(1);
            expect(Array.from(a.win.subarray(9 * x, 9 * x + 9))).toEqual(window);
          }
        } else {
          otherRows++;
          // A row that is not plain: compute after a preset gives the same as after the scan.
          b.compute(y);
          expect(state(b)).toEqual(state(a));
          expect(Array.from(b.ok)).toEqual(Array.from(a.ok));
        }
      }
    }
    expect(plainRows).toBeGreaterThan(200);
    expect(otherRows).toBeGreaterThan(200);
  });
});

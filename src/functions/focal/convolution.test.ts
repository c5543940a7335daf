/**
 * Convolution unit tests. Hand-derived values from the spec's formula (raster-functions.md
 * "Convolution": correlation, normalisation by the kernel sum, mirrored edge band, NoData
 * neighbours = centre value) on small arrays, and a brute-force reference (plain loops over every
 * window, written from the same formula) against every code path: 3x3 unrolled, direct taps,
 * separable, NoData recomputation and mirrored edges.
 */
import { describe, expect, it } from 'vitest';
import { catchError, prng, rasterOf, runFunction, tiledVersusWhole, applyFunction } from '../../../test/helpers.js';
import { convolution } from './convolution.js';
import { normalise, parseKernel, PREDEFINED_KERNELS, separate } from './convolution-kernels.js';

// ---- Brute-force reference (independent of the kernel's fast paths).

interface Grid {
  readonly w: number;
  readonly h: number;
  readonly v: ArrayLike<number>;
  /** 1 valid, 0 NoData. */
  readonly m: ArrayLike<number>;
}

/** Correlation with NoData/outside neighbours taking the centre value (no mirroring). */
function correlateAt(g: Grid, x: number, y: number, weights: readonly number[], cols: number, rows: number): number {
  const left = cols >> 1;
  const top = rows >> 1;
  const centre = g.v[y * g.w + x]!;
  let acc = 0;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const yy = y - top + r;
      const xx = x - left + c;
      const inside = yy >= 0 && xx >= 0 && yy < g.h && xx < g.w && g.m[yy * g.w + xx];
      acc += weights[r * cols + c]! * (inside ? g.v[yy * g.w + xx]! : centre);
    }
  }
  return acc;
}

/** The spec's Convolution over the whole grid: interior correlation, mirrored edge band; NaN = NoData. */
function convolveReference(g: Grid, weights: readonly number[], cols: number, rows: number): Float64Array {
  let sum = 0;
  for (const w of weights) sum += w;
  const k = Math.abs(sum) > 1e-9 && Math.abs(sum - 1) > 1e-9 ? weights.map((w) => w / sum) : [...weights];
  const left = cols >> 1;
  const top = rows >> 1;
  const right = cols - 1 - left;
  const bottom = rows - 1 - top;
  const mir = (r: number, n: number, a: number, b: number) => (r < a ? 2 * a - r : r > n - 1 - b ? 2 * (n - 1 - b) - r : r);
  const out = new Float64Array(g.w * g.h).fill(Number.NaN);
  for (let y = 0; y < g.h; y++) {
    for (let x = 0; x < g.w; x++) {
      if (!g.m[y * g.w + x]) continue;
      const ym = mir(y, g.h, top, bottom);
      const xm = mir(x, g.w, left, right);
      const ok = ym >= top && ym <= g.h - 1 - bottom && xm >= left && xm <= g.w - 1 - right && g.m[ym * g.w + xm];
      out[y * g.w + x] = ok ? correlateAt(g, xm, ym, k, cols, rows) : correlateAt(g, x, y, k, cols, rows);
    }
  }
  return out;
}

const W = 23;
const H = 19;
const rnd = prng(7);
const values = Array.from({ length: W * H }, () => Math.round(rnd() * 1000) / 8 - 40);
const holes = Uint8Array.from({ length: W * H }, (_, i) => (i % 37 === 5 || (i > 200 && i < 204) ? 0 : 1));
const f32 = (mask?: Uint8Array) => rasterOf({ width: W, height: H }, (x, y) => values[y * W + x]!, mask);

async function expectMatches(
  args: Record<string, unknown>,
  weights: readonly number[],
  cols: number,
  rows: number,
  mask?: Uint8Array,
): Promise<void> {
  const r = await runFunction(convolution, args, [f32(mask)]);
  const ref = convolveReference(
    { w: W, h: H, v: Float32Array.from(values), m: mask ?? new Uint8Array(W * H).fill(1) },
    weights,
    cols,
    rows,
  );
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const e = ref[y * W + x]!;
      if (Number.isNaN(e)) {
        expect(r.valid(x, y), `(${x}, ${y}) NoData`).toBe(false);
        continue;
      }
      expect(r.valid(x, y), `(${x}, ${y}) valid`).toBe(true);
      expect(Math.abs(r.value(x, y) - Math.fround(e)), `(${x}, ${y}): ${r.value(x, y)} vs ${e}`).toBeLessThanOrEqual(
        2e-5 * Math.max(1, Math.abs(e)),
      );
    }
  }
}

describe('Convolution: hand-derived values', () => {
  // 5x5 raster z = 10x + y: GradientEast (1 0 -1 / 2 0 -2 / 1 0 -1) = west minus east = 4 * (-20) = -80.
  const ramp = rasterOf({ width: 5, height: 5 }, (x, y) => 10 * x + y);

  it('GradientEast on a ramp: (1+2+1) * (z[x-1] - z[x+1]) = -80 everywhere (edges mirrored)', async () => {
    const r = await runFunction(convolution, { Type: 6 }, [ramp]);
    for (let y = 0; y < 5; y++) for (let x = 0; x < 5; x++) expect(r.value(x, y)).toBe(-80);
  });

  it('GradientNorth on the same ramp: south minus north rows = 4 * 2 = 8; GradientSouth -8', async () => {
    expect((await runFunction(convolution, { Type: 'GradientNorth' }, [ramp])).value(2, 2)).toBe(8);
    expect((await runFunction(convolution, { Type: 7 }, [ramp])).value(2, 2)).toBe(-8);
  });

  it('is a correlation: a single 1 reproduces each predefined kernel rotated by 180 degrees, normalised', async () => {
    const delta = rasterOf({ width: 9, height: 9 }, (x, y) => (x === 4 && y === 4 ? 1 : 0));
    for (const [type, k] of PREDEFINED_KERNELS.entries()) {
      const r = await runFunction(convolution, { Type: type }, [delta]);
      const w = normalise(k.weights);
      const t = k.rows >> 1;
      const l = k.cols >> 1;
      for (let i = 0; i < k.rows; i++) {
        for (let j = 0; j < k.cols; j++) {
          // out(4 + dy, 4 + dx) = w[t - dy][l - dx]
          expect(r.value(4 + j - l, 4 + i - t), `${k.name} [${i}][${j}]`).toBeCloseTo(w[(k.rows - 1 - i) * k.cols + (k.cols - 1 - j)]!, 6);
        }
      }
    }
  });

  it('normalises kernels whose sum is neither 0 nor 1: Smoothing5x5 (sum 60) and PointSpread (sum 1.823) keep a constant', async () => {
    const flat = rasterOf({ width: 7, height: 7 }, () => 42);
    for (const Type of [10, 11, 12, 14, 16, 19, 20, 21]) {
      const r = await runFunction(convolution, { Type }, [flat]);
      expect(r.value(3, 3), `Type ${Type}`).toBeCloseTo(42, 4);
    }
    const w = normalise(PREDEFINED_KERNELS[21]!.weights);
    expect(w[4]).toBeCloseTo(2.923 / 1.823, 12); // the table's weights sum to 1.823 (the spec's prose says about 1.003)
    expect(normalise(PREDEFINED_KERNELS[12]!.weights)[12]).toBeCloseTo(12 / 60, 15);
    expect(normalise(PREDEFINED_KERNELS[0]!.weights)[3]).toBe(2); // zero-sum kernels as is
  });

  it('Laplacian3x3 of z = x^2: -(z[x-1] - 2 z[x] + z[x+1]) = -2', async () => {
    const r = await runFunction(convolution, { Type: 15 }, [rasterOf({ width: 6, height: 5 }, (x) => x * x)]);
    expect(r.value(2, 2)).toBe(-2);
  });

  it('mirrors the edge band: row 0 := row 2, last row := third from last (and columns likewise)', async () => {
    const z = rasterOf({ width: 6, height: 6 }, (x, y) => x * x * 3 + y * y * y + x * y);
    const r = await runFunction(convolution, { Type: 13 }, [z]);
    for (let x = 1; x < 5; x++) {
      expect(r.value(x, 0)).toBe(r.value(x, 2));
      expect(r.value(x, 5)).toBe(r.value(x, 3));
    }
    for (let y = 1; y < 5; y++) {
      expect(r.value(0, y)).toBe(r.value(2, y));
      expect(r.value(5, y)).toBe(r.value(3, y));
    }
    expect(r.value(0, 0)).toBe(r.value(2, 2));
    expect(r.value(5, 5)).toBe(r.value(3, 3));
  });

  it('5x5 kernels mirror two rows: row 0 := row 4, row 1 := row 3', async () => {
    const z = rasterOf({ width: 9, height: 9 }, (x, y) => x * x + 2 * y * y * y);
    const r = await runFunction(convolution, { Type: 16 }, [z]);
    expect(r.value(4, 0)).toBe(r.value(4, 4));
    expect(r.value(4, 1)).toBe(r.value(4, 3));
    expect(r.value(4, 8)).toBe(r.value(4, 4));
  });

  it('NoData: the centre stays NoData; a NoData neighbour takes the centre value', async () => {
    // 5x5 of 1..25; (1, 1) is NoData. SmoothArithmeticMean at (2, 2): the 9 values 7,8,9,12,13,14,17,18,19 with 7 -> 13.
    const mask = new Uint8Array(25).fill(1);
    mask[6] = 0;
    const z = rasterOf({ width: 5, height: 5 }, (x, y) => 5 * y + x + 1, mask);
    const r = await runFunction(convolution, { Type: -1, Columns: 3, Rows: 3, Kernel: [1, 1, 1, 1, 1, 1, 1, 1, 1] }, [z]);
    expect(r.valid(1, 1)).toBe(false);
    expect(r.value(2, 2)).toBeCloseTo((8 + 9 + 12 + 13 + 14 + 17 + 18 + 19 + 13) / 9, 5);
    // (0, 0) mirrors (2, 2).
    expect(r.value(0, 0)).toBe(r.value(2, 2));
  });

  it('an edge pixel whose mirror is NoData uses its own window, missing neighbours = its value', async () => {
    const mask = new Uint8Array(25).fill(1);
    mask[2 * 5 + 2] = 0; // (2, 2): the mirror of (0, 0)
    const z = rasterOf({ width: 5, height: 5 }, (x, y) => 5 * y + x + 1, mask);
    const r = await runFunction(convolution, { Kernel: [1, 1, 1, 1, 1, 1, 1, 1, 1] }, [z]);
    // (0, 0) = 1: window inside the raster is 1, 2, 6, 7 and 5 outside pixels of value 1 -> (1+2+6+7+5)/9.
    expect(r.value(0, 0)).toBeCloseTo(21 / 9, 5);
  });

  it('integer types round half away from zero and clamp (U8: 300 -> 255, negative -> 0)', async () => {
    const u8 = rasterOf({ width: 5, height: 5, pixelType: 'U8' }, (x, y) => (x === 2 && y === 2 ? 200 : 10));
    const sharp = await runFunction(convolution, { Type: 13 }, [u8]);
    expect(sharp.info.pixelType).toBe('U8');
    expect(sharp.value(2, 2)).toBe(255); // 9 * 200 - 80 = 1720
    expect(sharp.value(1, 1)).toBe(0); // 90 - 70 - 200 < 0
    const s16 = rasterOf({ width: 5, height: 5, pixelType: 'S16' }, (x, y) => (x === 2 && y === 2 ? 1 : 0));
    // Smoothing3x3 centre weight 0.25 of 1 -> 0.25 -> 0; a 2x2 kernel of 0.5s at (3, 3): 0.5 * -1 -> -0.5 -> -1.
    expect((await runFunction(convolution, { Type: 11 }, [s16])).value(2, 2)).toBe(0);
    const neg = rasterOf({ width: 5, height: 5, pixelType: 'S16' }, (x, y) => (x === 2 && y === 2 ? -1 : 0));
    expect((await runFunction(convolution, { Kernel: [0.5, 0, 0, 0.5], Columns: 2, Rows: 2 }, [neg])).value(3, 3)).toBe(-1); // -0.5
  });
});

describe('Convolution: user-defined kernels', () => {
  it('reads a flat array, a string, an array of rows and the "cols rows" header layout alike', () => {
    const a = parseKernel([1, 2, 3, 4, 5, 6], 3, 2);
    expect(a).toEqual({ cols: 3, rows: 2, weights: [1, 2, 3, 4, 5, 6] });
    expect(parseKernel('1 2 3\n4 5 6', 3, 2)).toEqual(a);
    expect(parseKernel('1,2,3;4,5,6', 3, undefined)).toEqual(a);
    expect(
      parseKernel(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        undefined,
        undefined,
      ),
    ).toEqual(a);
    expect(parseKernel('3 2\n1 2 3\n4 5 6', undefined, undefined)).toEqual(a);
    expect(parseKernel([1, 2, 3, 4, 5, 6, 7, 8, 9], undefined, undefined)).toMatchObject({ cols: 3, rows: 3 });
    expect(parseKernel([1, 2, 3], 2, 2)).toHaveProperty('error');
    expect(parseKernel([1, 2, 3], undefined, undefined)).toHaveProperty('error');
    expect(parseKernel([[1, 2], [3]], undefined, undefined)).toHaveProperty('error');
    expect(parseKernel(['a'], 1, 1)).toHaveProperty('error');
  });

  it('finds rank-one kernels and rejects others', () => {
    const g = [1, 2, 1, 2, 4, 2, 1, 2, 1];
    const s = separate(Float64Array.from(g), 3, 3)!;
    expect(Array.from(s.col)).toEqual([2, 4, 2]);
    expect(Array.from(s.row)).toEqual([0.5, 1, 0.5]); // pivot = the largest weight, 4
    expect(separate(Float64Array.from([1, 0, 0, 1]), 2, 2)).toBeUndefined();
  });

  it('an even 2x2 kernel puts the extra row/column above/left: [[1, 0], [0, 0]] shifts from the north-west', async () => {
    const z = rasterOf({ width: 5, height: 5 }, (x, y) => 10 * y + x);
    const r = await runFunction(convolution, { Columns: 2, Rows: 2, Kernel: [1, 0, 0, 0] }, [z]);
    expect(r.value(2, 2)).toBe(11); // pixel (1, 1)
    expect(r.value(4, 4)).toBe(33);
  });
});

describe('Convolution: every code path against the brute-force reference', () => {
  const paths: [string, Record<string, unknown>, number[], number, number][] = [
    ['3x3 unrolled (Sharpening3x3)', { Type: 13 }, PREDEFINED_KERNELS[13]!.weights as number[], 3, 3],
    ['3x3 PointSpread (normalised)', { Type: 21 }, PREDEFINED_KERNELS[21]!.weights as number[], 3, 3],
    ['5x5 direct taps (Sharpening5x5)', { Type: 14 }, PREDEFINED_KERNELS[14]!.weights as number[], 5, 5],
    [
      '7x5 separable (outer product)',
      { Columns: 7, Rows: 5, Kernel: outer([1, 4, 6, 4, 1], [1, 2, 3, 4, 3, 2, 1]) },
      outer([1, 4, 6, 4, 1], [1, 2, 3, 4, 3, 2, 1]),
      7,
      5,
    ],
    [
      '4x3 even direct',
      { Columns: 4, Rows: 3, Kernel: [1, -2, 3, 0.5, 2, 0, -1, 4, 0, 1, 1, -3] },
      [1, -2, 3, 0.5, 2, 0, -1, 4, 0, 1, 1, -3],
      4,
      3,
    ],
    ['1x5 column', { Columns: 1, Rows: 5, Kernel: [1, 2, -3, 2, 1] }, [1, 2, -3, 2, 1], 1, 5],
  ];
  for (const [name, args, weights, cols, rows] of paths) {
    it(`${name}, no NoData`, async () => expectMatches(args, weights, cols, rows));
    it(`${name}, with NoData holes`, async () => expectMatches(args, weights, cols, rows, holes));
  }

  it('3x3 without NoData (stored straight into the band) equals the NoData-aware path bit for bit away from a hole', async () => {
    const oneHole = Uint8Array.from({ length: W * H }, (_, i) => (i === 0 ? 0 : 1));
    // F64 values with full mantissas, so a different order of the nine products would show.
    const r7 = prng(3);
    const fine = Array.from({ length: W * H }, () => r7() * 1000 - 300);
    const grid = (mask?: Uint8Array) => rasterOf({ width: W, height: H, pixelType: 'F64' }, (x, y) => fine[y * W + x]!, mask);
    for (const Type of [11, 13, 21]) {
      const full = await runFunction(convolution, { Type }, [grid()]);
      const holed = await runFunction(convolution, { Type }, [grid(oneHole)]);
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          if (x > 2 || y > 2) expect(Object.is(full.value(x, y), holed.value(x, y)), `Type ${Type} (${x}, ${y})`).toBe(true);
        }
      }
    }
  });

  it('tiles equal the whole render on every path', async () => {
    for (const [, args] of paths) {
      expect(await tiledVersusWhole(applyFunction(convolution, args, [f32(holes)]), [5, 4])).toBeUndefined();
    }
  });
});

describe('Convolution: bad arguments', () => {
  const z = rasterOf({ width: 5, height: 5 }, () => 1);
  const fail = (args: Record<string, unknown>) => catchError(() => applyFunction(convolution, args, [z]));

  it('names the offending field', () => {
    expect(fail({})).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Type' });
    expect(fail({ Type: 22 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Type' });
    expect(fail({ Type: -1 })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.Kernel' });
    expect(fail({ Type: -1, Columns: 3, Rows: 3, Kernel: [1, 2] })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Kernel',
    });
    expect(fail({ Type: -1, Columns: 0, Kernel: [1] })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Columns',
    });
    expect(fail({ ConvolutionType: 'Nope' })).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.ConvolutionType' });
  });

  it('rejects complex input', () => {
    const c = rasterOf({ width: 2, height: 2, pixelType: 'F32' }, () => 0);
    const info = { ...c.info, pixelType: 'C64' as const };
    expect(catchError(() => convolution.plan({ Type: 0, Raster: 0 } as never, [info]))).toMatchObject({
      code: 'UNSUPPORTED_INPUT',
      path: 'rasterFunctionArguments.Raster',
    });
  });

  it('warns that Kernel is ignored with a predefined Type', () => {
    expect(applyFunction(convolution, { Type: 3, Kernel: [1] }, [z]).plan.warnings?.[0]).toMatchObject({
      arg: 'Kernel',
      message: expect.stringMatching(/Kernel is ignored/),
    });
  });
});

function outer(col: number[], row: number[]): number[] {
  return col.flatMap((c) => row.map((r) => c * r));
}

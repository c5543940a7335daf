/**
 * The wasm per-pixel kernels (wasm/local.ts) against their TypeScript kernels, the reference: the
 * same values bit for bit (Object.is: -0 and 0 differ; a NaN is compared as NaN, payloads aside)
 * at every pixel, valid or not, and the same masks. Over the spectral, local and radiometric
 * goldens' rules and inputs, and seeded random blocks of every real pixel type with NaN,
 * infinities, zero denominators, NoData masks, odd widths (a last pixel alone in its vector) and
 * several tile sizes. Each comparison checks that the wasm path ran (it falls back silently).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, PIXEL_TYPE_INFO, type PixelType, type Plane } from '../core/pixel-type.js';
import { castPlane } from '../graph/cast.js';
import { registry } from '../functions/index.js';
import { arithmetic } from '../functions/local/arithmetic.js';
import { rasterCalculator } from '../functions/local/raster-calculator.js';
import { stretch } from '../functions/radiometric/stretch.js';
import { bandArithmetic } from '../functions/spectral/band-arithmetic.js';
import { ndvi } from '../functions/spectral/ndvi.js';
import { memorySource } from '../graph/memory-source.js';
import { render } from '../graph/render.js';
import type { RasterFunction, RasterNode } from '../graph/types.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { applyFunction, closingOpener, constant, gridInfo, prng } from '../../test/helpers.js';
import { localFusedNdCount, localWasmCallCount } from './local.js';
import { setWasmEnabled, wasmStatus } from './module.js';

const ROOT = resolve(import.meta.dirname, '../..');
const files = closingOpener();
afterEach(async () => {
  setWasmEnabled(true);
  await files.closeAll();
});

/** The first difference between two rendered blocks (every pixel, masks and values), or undefined. */
function difference(ts: PixelBlock, wa: PixelBlock): string | undefined {
  if (ts.bands.length !== wa.bands.length) return `band counts ${ts.bands.length} vs ${wa.bands.length}`;
  if (ts.pixelType !== wa.pixelType) return `pixel types ${ts.pixelType} vs ${wa.pixelType}`;
  for (let i = 0; i < ts.mask.length; i++) if (ts.mask[i] !== wa.mask[i]) return `mask at ${i}: TS ${ts.mask[i]}, wasm ${wa.mask[i]}`;
  for (let b = 0; b < ts.bands.length; b++) {
    const x = ts.bands[b]!;
    const y = wa.bands[b]!;
    if (x.constructor !== y.constructor) return `band ${b}: ${x.constructor.name} vs ${y.constructor.name}`;
    for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return `band ${b} at ${i}: TS ${x[i]}, wasm ${y[i]}`;
  }
  return undefined;
}

async function renderWith(node: RasterNode, tileSize: number, wasm: boolean): Promise<PixelBlock> {
  setWasmEnabled(wasm);
  try {
    return await render(node, { tileSize });
  } finally {
    setWasmEnabled(true);
  }
}

/** Render both ways; the first difference, or undefined. `ran`: whether the wasm path must run. */
async function compare(node: RasterNode, tileSize: number, ran = true): Promise<string | undefined> {
  const ts = await renderWith(node, tileSize, false);
  const before = localWasmCallCount();
  const wa = await renderWith(node, tileSize, true);
  if (ran) expect(localWasmCallCount(), 'the wasm path ran').toBeGreaterThan(before);
  else expect(localWasmCallCount(), 'the TypeScript path ran').toBe(before);
  return difference(ts, wa);
}

const REAL: readonly PixelType[] = ['U8', 'S8', 'U16', 'S16', 'U32', 'S32', 'F32', 'F64'];

/** Seeded values for a plane of type t: the type's extremes, zeros, and for floats NaN, infinities, subnormals, huge values. */
function valuesOf(t: PixelType, n: number, rnd: () => number): Plane {
  const info = PIXEL_TYPE_INFO[t];
  const p = allocatePlane(t, n);
  for (let i = 0; i < n; i++) {
    const u = rnd();
    let v: number;
    if (u < 0.05) v = 0;
    else if (u < 0.08) v = info.min;
    else if (u < 0.11) v = info.max;
    else if (info.integer) v = Math.floor(info.min + rnd() * (info.max - info.min + 1));
    else if (u < 0.14) v = [Number.NaN, Infinity, -Infinity, 1e-40, -3e-310, 1e38, -2e308 / 2][Math.floor(rnd() * 7)]!;
    else if (u < 0.3)
      v = Math.round((rnd() - 0.5) * 20) / 4; // halves and quarters: rounding ties
    else v = (rnd() - 0.3) * Math.pow(10, Math.floor(rnd() * 12) - 4);
    p[i] = v;
  }
  return p;
}

function maskOf(n: number, rnd: () => number, holes: number): Uint8Array | undefined {
  if (holes === 0) return undefined;
  const m = new Uint8Array(n).fill(1);
  for (let k = 0; k < holes; k++) m[Math.floor(rnd() * n)] = 0;
  return m;
}

function source(name: string, t: PixelType, width: number, height: number, bands: Plane[], mask?: Uint8Array): RasterNode {
  const info: RasterInfo = { ...gridInfo({ width, height, bandCount: bands.length, cellSize: 30 }), pixelType: t };
  return memorySource(name, info, bands, mask);
}

describe('wasm per-pixel kernels', () => {
  it('are loaded (the test script builds them)', () => {
    expect(wasmStatus()).toMatchObject({ enabled: true });
  });

  describe('equal the TypeScript kernels on the goldens (spectral, local, radiometric rules and inputs)', () => {
    interface Case {
      readonly id: string;
      readonly rule: { readonly rasterFunction?: string };
      readonly inputs: readonly string[];
    }
    // The goldens' rules of the functions with a wasm path (and the cast, through outputPixelType).
    const WASM = new Set(['ndvi', 'bandarithmetic', 'rastercalculator', 'local', 'stretch', 'arithmetic']);
    const cases: Case[] = ['spectral', 'spectral-b', 'local', 'radiometric', 'output-type']
      .map((d) => join(ROOT, 'golden', d, 'cases.json'))
      .filter((f) => existsSync(f))
      .flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as Case[])
      .filter((c) => WASM.has((c.rule.rasterFunction ?? '').toLowerCase()) || JSON.stringify(c.rule).includes('outputPixelType'));
    it('has cases', () => expect(cases.length).toBeGreaterThan(10));
    for (const c of cases) {
      it(c.id, async () => {
        const inputs: Record<string, string> = {};
        c.inputs.forEach((p, i) => {
          if (i === 0) inputs.$$ = join(ROOT, p);
          inputs[`$${i + 1}`] = join(ROOT, p);
        });
        const { root } = await buildGraph(c.rule, { registry, resolveSource: bindSources(inputs, files.open) });
        for (const tile of [128, 61]) {
          const ts = await renderWith(root, tile, false);
          const wa = await renderWith(root, tile, true);
          expect(difference(ts, wa)).toBeUndefined();
        }
      });
    }
  });

  it('NDVI: every real input type, every output form, NaN, zero sums, NoData, odd widths', async () => {
    const rnd = prng(2201);
    let compared = 0;
    for (let trial = 0; trial < 48; trial++) {
      const t = REAL[trial % REAL.length]!;
      const width = 1 + Math.floor(rnd() * 67);
      const height = 1 + Math.floor(rnd() * 9);
      const n = width * height;
      const vis = valuesOf(t, n, rnd);
      const ir = valuesOf(t, n, rnd);
      for (let k = 0; k < n; k += 7) ir[k] = -vis[k]!; // zero sums (and -0 sums)
      const src = source('ndvi', t, width, height, [vis, ir], maskOf(n, rnd, trial % 3));
      const tile = [16, 23, 64][trial % 3]!;
      for (const [args, to] of [
        [{ ScientificOutput: true }, undefined],
        [{}, undefined],
        [{}, 'F32'],
        [{}, 'F64'],
      ] as const) {
        expect(await compare(applyFunction(ndvi, args, [src], to), tile)).toBeUndefined();
        compared++;
      }
    }
    expect(compared).toBe(192);
  });

  it('Arithmetic: plus, minus, multiply, divide; rasters and constants; F32 and F64; several bands; overflow', async () => {
    const rnd = prng(2202);
    let compared = 0;
    for (let trial = 0; trial < 40; trial++) {
      const t = REAL[trial % REAL.length]!;
      const width = 1 + Math.floor(rnd() * 61);
      const height = 1 + Math.floor(rnd() * 7);
      const n = width * height;
      const bands = 1 + (trial % 3 === 2 ? 2 : 0);
      const a = source(
        'a',
        t,
        width,
        height,
        Array.from({ length: bands }, () => valuesOf(t, n, rnd)),
        maskOf(n, rnd, trial % 4),
      );
      const b = source(
        'b',
        t,
        width,
        height,
        Array.from({ length: bands }, () => valuesOf(t, n, rnd)),
        maskOf(n, rnd, trial % 2),
      );
      const c = constant([[2.5, 0, -3, 1e-30, 3e38, 0.1][trial % 6]!]);
      const tile = [16, 31, 64][trial % 3]!;
      for (let op = 1; op <= 4; op++) {
        for (const inputs of [
          [a, b],
          [a, c],
          [c, b],
        ]) {
          for (const to of [undefined, 'F64'] as const) {
            expect(await compare(applyFunction(arithmetic, { Operation: op }, inputs, to), tile)).toBeUndefined();
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(960);
  });

  it('Arithmetic in f32x4 lanes: F32 operands of every exponent (random bit patterns: subnormals, overflow, NaN)', async () => {
    const rnd = prng(2208);
    const n = 4099;
    const bits = (): Float32Array => new Float32Array(Uint32Array.from({ length: n }, () => Math.floor(rnd() * 2 ** 32)).buffer);
    const near = (): Float32Array => Float32Array.from({ length: n }, () => (rnd() - 0.5) * 2 ** Math.floor(rnd() * 280 - 150));
    for (const make of [bits, near]) {
      const a = source('a', 'F32', n, 1, [make()]);
      const b = source('b', 'F32', n, 1, [make()]);
      for (let op = 1; op <= 4; op++) {
        expect(await compare(applyFunction(arithmetic, { Operation: op }, [a, b]), 4096)).toBeUndefined();
        expect(await compare(applyFunction(arithmetic, { Operation: op }, [a, constant([1.5])]), 4096)).toBeUndefined();
      }
    }
  });

  it('Arithmetic: Power and Mode, rasters of two types and a NaN constant keep the TypeScript path (or the same values)', async () => {
    const rnd = prng(2203);
    const a = source('a', 'F32', 9, 3, [valuesOf('F32', 27, rnd)]);
    const b = source('b', 'U8', 9, 3, [valuesOf('U8', 27, rnd)]);
    for (const op of [5, 6]) expect(await compare(applyFunction(arithmetic, { Operation: op }, [a, a]), 16, false)).toBeUndefined();
    expect(await compare(applyFunction(arithmetic, { Operation: 1 }, [a, b]), 16, false)).toBeUndefined();
    expect(await compare(applyFunction(arithmetic, { Operation: 3 }, [a, constant([Number.NaN])]), 16)).toBeUndefined();
  });

  it('expression programs: every op the interpreter runs, fused normalised differences, constants, strict masks', async () => {
    const rnd = prng(2204);
    const exprs = [
      '(b - a) / (b + a)',
      '(a - b) / (a + b) * c + 1',
      'Con(a > b, a, -c)',
      'Con(a >= 0.5, b)',
      'SetNull(a < 0, b)',
      'Abs(a) + Sqrt(Abs(b)) - Square(c)',
      'Int(a) + RoundDown(b) * RoundUp(c) - Float(a) + Negate(c)',
      'FloorDivide(a, b) + (a == b) + (a != c) + (a <= b) + (a < c)',
      '(a & b) + (a | c) + (a ^ b) + ~(a > 0)',
      'IsNull(a) + 3 / a - 2 / (b - b)',
      '-a * 0.1 + 1e300 * b',
    ];
    let compared = 0;
    for (let trial = 0; trial < 24; trial++) {
      const t = REAL[trial % REAL.length]!;
      const width = 1 + Math.floor(rnd() * 45);
      const height = 1 + Math.floor(rnd() * 40); // up to 1,800 pixels: more than one 1,024-pixel chunk
      const n = width * height;
      const planes = [0, 1, 2].map(() => valuesOf(t, n, rnd));
      const srcs = ['a', 'b', 'c'].map((name, k) => source(name, t, width, height, [planes[k]!], maskOf(n, rnd, trial % 3)));
      for (const e of exprs) {
        for (const to of [undefined, 'F64'] as const) {
          const node = applyFunction(rasterCalculator, { InputNames: ['a', 'b', 'c'], Expression: e }, srcs, to);
          expect(await compare(node, [2048, 37][trial % 2]!), e).toBeUndefined();
          compared++;
        }
      }
      // BandArithmetic: strict masks and division by zero giving 0.
      const stack = source('stack', t, width, height, planes, maskOf(n, rnd, 2));
      expect(await compare(applyFunction(bandArithmetic, { Method: 1, BandIndexes: '2 1' }, [stack]), 64)).toBeUndefined();
      expect(
        await compare(applyFunction(bandArithmetic, { Method: 0, BandIndexes: '(B2 - B1) / (B2 + B1) * B3' }, [stack]), 64),
      ).toBeUndefined();
      compared += 2;
    }
    expect(compared).toBe(24 * 24);
  });

  it('NDVI scientific of 8- and 16-bit bands (f32x4 lanes): extremes, zero sums, NoData, every width past the 8-pixel step', async () => {
    const rnd = prng(2209);
    let compared = 0;
    for (const t of ['U8', 'S8', 'U16', 'S16'] as const) {
      const info = PIXEL_TYPE_INFO[t];
      for (let width = 1; width <= 19; width++) {
        const n = width * 3;
        const vis = valuesOf(t, n, rnd);
        const ir = valuesOf(t, n, rnd);
        ir[0] = info.max;
        vis[0] = info.max; // the largest sum
        ir[n - 1] = info.min;
        vis[n - 1] = info.min; // the most negative sum (S8, S16), 0 + 0 (U8, U16)
        if (n > 2) ir[1] = -vis[1]! + (t.startsWith('U') ? vis[1]! : 0); // a zero sum where the type allows it
        const mask = width % 3 === 0 ? undefined : Uint8Array.from({ length: n }, (_, i) => (i % (width + 2) === 1 ? 0 : 1));
        const src = source('ndvi8', t, width, 3, [vis, ir], mask);
        expect(
          await compare(applyFunction(ndvi, { ScientificOutput: true }, [src]), [16, 5][width % 2]!),
          `${t} width ${width}`,
        ).toBeUndefined();
        compared++;
      }
    }
    expect(compared).toBe(4 * 19);
  });

  it('NDVI of U8 bands, every pair of values (the scaled form in f32x4 lanes with its float64 fallback at ties), every form', async () => {
    // 256 x 256 pixels: vis = the column, ir = the row; ties such as ir 201, vis 199 (t = 101 exactly) included.
    const vis = Uint8Array.from({ length: 65536 }, (_, i) => i & 255);
    const ir = Uint8Array.from({ length: 65536 }, (_, i) => i >> 8);
    const mask = Uint8Array.from({ length: 65536 }, (_, i) => (i % 97 === 3 ? 0 : 1));
    for (const m of [undefined, mask]) {
      const src = source('u8pairs', 'U8', 256, 256, [vis, ir], m);
      for (const [args, to] of [
        [{}, undefined],
        [{ ScientificOutput: true }, undefined],
        [{}, 'F32'],
      ] as const) {
        expect(await compare(applyFunction(ndvi, args, [src], to), 256)).toBeUndefined();
        expect(await compare(applyFunction(ndvi, args, [src], to), 61)).toBeUndefined();
      }
    }
  });

  it('NDVI scaled U8 of U16 bands (f32x4 lanes): seeded values, ties (r - v)/(r + v) = (2k - 1)/200, pairs binary32 truncates wrongly, NoData, odd widths', async () => {
    const rnd = prng(2213);
    for (const width of [1, 7, 8, 9, 31, 200]) {
      const height = 5;
      const n = width * height;
      const vis = new Uint16Array(n);
      const ir = new Uint16Array(n);
      for (let i = 0; i < n; i++) {
        if (i % 3 === 0) {
          // A tie: s = 200 j with j even, d = (2k - 1) j, both within U16.
          const j = 2 * (1 + Math.floor(rnd() * 150));
          const d = (2 * Math.floor(rnd() * 100) - 99) * j;
          const s2 = 200 * j;
          ir[i] = (s2 + d) / 2;
          vis[i] = (s2 - d) / 2;
        } else {
          ir[i] = Math.floor(rnd() * 65536);
          vis[i] = i % 5 === 0 ? 0 : Math.floor(rnd() * 65536);
        }
      }
      // Pairs whose binary32 t truncates differently from the float64 one (t within 1e-5 of an integer).
      const close = [
        [45125, 22478],
        [58556, 31185],
        [53671, 7146],
        [1296, 5104],
        [64616, 32187],
      ] as const;
      for (let i = 1; i < n; i += 4) [ir[i], vis[i]] = close[(i >> 2) % close.length]!;
      const src = source('u16', 'U16', width, height, [vis, ir], maskOf(n, rnd, width % 3));
      expect(await compare(applyFunction(ndvi, {}, [src]), [16, 64][width % 2]!), `width ${width}`).toBeUndefined();
    }
  });

  it('Arithmetic: the operands masks ANDed in the same pass (one or two masked operands, one raster twice, a broadcast band, every width)', async () => {
    const rnd = prng(2210);
    let compared = 0;
    for (const t of ['U8', 'S16', 'U32', 'F32', 'F64'] as const) {
      for (let width = 1; width <= 18; width++) {
        const n = width * 2;
        const holes = (k: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => ((i * 7 + k) % 5 === 0 ? 0 : 1));
        const a = source('a', t, width, 2, [valuesOf(t, n, rnd), valuesOf(t, n, rnd)], holes(1));
        const b = source('b', t, width, 2, [valuesOf(t, n, rnd)], width % 2 === 0 ? holes(3) : undefined);
        for (const op of [1, 3, 4]) {
          for (const inputs of [
            [a, b],
            [b, a],
            [a, a],
            [b, constant([0.5])],
          ]) {
            expect(
              await compare(applyFunction(arithmetic, { Operation: op }, inputs), [16, 7][width % 2]!),
              `${t} ${op} w${width}`,
            ).toBeUndefined();
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(5 * 18 * 3 * 4);
  });

  it('the fused normalised difference (LOAD, LOAD, ND in one pass): every type, both zero policies, strict and not, x/y orders, F32 and F64', async () => {
    const rnd = prng(2211);
    let compared = 0;
    for (const t of REAL) {
      for (const width of [1, 3, 8, 13, 37]) {
        const height = 1 + (width % 4);
        const n = width * height;
        const pa = valuesOf(t, n, rnd);
        const pb = valuesOf(t, n, rnd);
        for (let k = 0; k < n; k += 5) pb[k] = t.startsWith('U') ? pa[k]! * 0 : -pa[k]!; // zero sums
        const ma = maskOf(n, rnd, 1 + (width % 3));
        const a = source('a', t, width, height, [pa], ma);
        const b = source('b', t, width, height, [pb], maskOf(n, rnd, width % 2));
        const stack = source('stack', t, width, height, [pa, pb], ma);
        const nodes: [string, RasterNode][] = [];
        for (const to of [undefined, 'F64'] as const) {
          for (const e of ['(b - a) / (b + a)', '(a - b) / (a + b)', '(a - a) / (a + a)']) {
            nodes.push([`${e} ${to}`, applyFunction(rasterCalculator, { InputNames: ['a', 'b'], Expression: e }, [a, b], to)]);
          }
          nodes.push([`B ${to}`, applyFunction(bandArithmetic, { Method: 0, BandIndexes: '(B2 - B1) / (B2 + B1)' }, [stack], to)]);
          nodes.push([`B1 ${to}`, applyFunction(bandArithmetic, { Method: 0, BandIndexes: '(B1 - B2) / (B1 + B2)' }, [stack], to)]);
        }
        for (const [what, node] of nodes) {
          const before = localFusedNdCount();
          expect(await compare(node, [16, 64][width % 2]!), `${t} w${width} ${what}`).toBeUndefined();
          expect(localFusedNdCount(), `${what}: the fused kernel ran`).toBeGreaterThan(before);
          compared++;
        }
      }
    }
    expect(compared).toBe(8 * 5 * 10);
  });

  it('a normalised difference of bands of two types, or inside a longer program, runs the interpreter (same values)', async () => {
    const rnd = prng(2212);
    const a = source('a', 'U8', 21, 2, [valuesOf('U8', 42, rnd)]);
    const b = source('b', 'F32', 21, 2, [valuesOf('F32', 42, rnd)], maskOf(42, rnd, 3));
    for (const e of ['(b - a) / (b + a)', '(b - a) / (b + a) + 0', '(a - b) / (a + b) * 2']) {
      const before = localFusedNdCount();
      expect(await compare(applyFunction(rasterCalculator, { InputNames: ['a', 'b'], Expression: e }, [a, b]), 16), e).toBeUndefined();
      expect(localFusedNdCount(), e).toBe(before);
    }
  });

  it('expression programs with an op the interpreter does not run (Ln, Max) keep the TypeScript path', async () => {
    const rnd = prng(2205);
    const srcs = ['a', 'b'].map((name) => source(name, 'F32', 13, 5, [valuesOf('F32', 65, rnd)]));
    for (const e of ['Ln(a) + b', 'Max(a, b)', 'a ** b']) {
      const node = applyFunction(rasterCalculator, { InputNames: ['a', 'b'], Expression: e }, srcs);
      expect(await compare(node, 64, false), e).toBeUndefined();
    }
  });

  it('Stretch (linear): float and 32-bit integer inputs into every output type, NaN, cut-offs, inverted ranges', async () => {
    const rnd = prng(2206);
    let compared = 0;
    for (let trial = 0; trial < 24; trial++) {
      const t = (['F32', 'F64', 'U32', 'S32'] as const)[trial % 4]!;
      const width = 1 + Math.floor(rnd() * 50);
      const height = 1 + Math.floor(rnd() * 6);
      const n = width * height;
      const v = valuesOf(t, n, rnd);
      const src = source('s', t, width, height, [v], maskOf(n, rnd, trial % 2));
      const lo = [-2, 0, 1e5, -1e9][trial % 4]!;
      const stats = [[lo, lo + [4, 1e4, 3e9, 0.5][trial % 4]!, 0, 1]];
      for (const [range, to] of [
        [[0, 255], undefined],
        [[255, 0], undefined],
        [[0, 1000], 'U8'],
        [[-500, 40000], 'S16'],
        [[0, 1], undefined],
        [[-3, 3], 'F64'],
        [[0, 70000], undefined],
        [[0, 9], 'U4'],
      ] as const) {
        const args = { StretchType: 5, Statistics: stats, Min: range[0], Max: range[1] };
        expect(await compare(applyFunction(stretch, args, [src], to as PixelType | undefined), [16, 64][trial % 2]!)).toBeUndefined();
        compared++;
      }
    }
    expect(compared).toBe(192);
  });

  it("the engine's cast (castPlane): every real type to every real type, ties, saturation, NaN", () => {
    const rnd = prng(2207);
    const targets: PixelType[] = ['U1', 'U2', 'U4', ...REAL];
    let compared = 0;
    for (const from of REAL) {
      for (const to of targets) {
        for (const n of [1, 2, 3, 17, 1000]) {
          const src = valuesOf(from, n, rnd);
          const m0 = new Uint8Array(n).fill(1);
          for (let k = 0; k < n; k += 11) m0[k] = 0;
          setWasmEnabled(false);
          const mt = m0.slice();
          const ts = castPlane(src, from, to, mt);
          setWasmEnabled(true);
          const before = localWasmCallCount();
          const mw = m0.slice();
          const wa = castPlane(src, from, to, mw);
          expect(localWasmCallCount()).toBeGreaterThan(before);
          expect(Array.from(mw)).toEqual(Array.from(mt));
          for (let i = 0; i < n; i++)
            if (!Object.is(ts[i], wa[i])) expect(`${from}->${to} at ${i}: ${src[i]} gives ${wa[i]}`).toBe(`${ts[i]}`);
          compared++;
        }
      }
    }
    expect(compared).toBe(8 * 11 * 5);
  });

  it('are switched off by RASTERFLOW_SIMD=0 (the TypeScript path runs)', async () => {
    vi.stubEnv('RASTERFLOW_SIMD', '0');
    vi.resetModules();
    try {
      const l = await import('./local.js');
      const f = await import('../functions/spectral/ndvi.js');
      const r = await import('../graph/render.js');
      const ms = await import('../graph/memory-source.js');
      const info: RasterInfo = { ...gridInfo({ width: 9, height: 4, bandCount: 2, cellSize: 30 }), pixelType: 'U8' };
      const src = ms.memorySource('off', info, [
        Uint8Array.from({ length: 36 }, (_, i) => i),
        Uint8Array.from({ length: 36 }, (_, i) => 2 * i),
      ]);
      const out = await r.render(applyFunction(f.ndvi as RasterFunction, {}, [src]), { tileSize: 64 });
      expect(l.localWasmCallCount()).toBe(0);
      expect(out.bands[0]![5]).toBe(133);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

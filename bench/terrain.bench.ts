/**
 * Terrain kernels (Hillshade, Slope, Aspect, Curvature) on one full block, beside a plain typed-array loop doing the
 * same math in the same run (the reference: what a hand-written loop gets on this machine now).
 *
 * Inputs: (a) a seeded synthetic 4096 x 4096 F32 DEM (Gaussian bumps plus seeded noise, as
 * xarray-spatial's benchmarks), (b) the jacksboro UTM DEM from golden/data (383 x 407), (c) the
 * synthetic DEM again on a geographic grid (3 arc-second cells from 37 N), where the kernels take
 * per-row metre cell sizes (Slope, Hillshade, Aspect and SurfaceParamFunction's 3x3 slope).
 * Level 1 of STYLE §2.9: the kernel alone, no evaluator, no tiling. The block is built as the
 * evaluator would (output rect grown by the plan's halo, mask 0 outside the raster).
 *
 * Hillshade (traditional, multidirectional), Slope, Aspect and Curvature also run with their
 * WebAssembly SIMD128 path (src/wasm), rows "<function> kernel wasm, <dem>", beside the TypeScript
 * kernel's row (the "kernel" rows run the TypeScript path only); the wasm rows include copying the
 * DEM into wasm memory and the result out. No wasm rows when RASTERFLOW_SIMD=0 or the kernels are
 * not built. (d) The synthetic DEM rounded to S16 (the common integer DEM type): kernel and wasm
 * rows, no plain loop.
 */
import { resolve } from 'node:path';
import { fromFile } from 'geotiff';
import { Bench } from 'tinybench';
import { allocateBlock, type PixelBlock, type RasterInfo } from '../src/core/pixel-block.js';
import { grow, rect } from '../src/core/rect.js';
import { aspect } from '../src/functions/terrain/aspect.js';
import { curvature } from '../src/functions/terrain/curvature.js';
import { hillshade } from '../src/functions/terrain/hillshade.js';
import { slope } from '../src/functions/terrain/slope.js';
import { surfaceParam } from '../src/functions/terrain/surface-param.js';
import { memorySource } from '../src/graph/memory-source.js';
import type { RasterFunction } from '../src/graph/types.js';
import { setWasmEnabled, wasmStatus } from '../src/wasm/module.js';
import { applyFunction, prng } from '../test/helpers.js';
import { type BenchRow, rowsOf } from './rows.js';

const ROOT = resolve(import.meta.dirname, '..');

/** A seeded synthetic DEM: 40 Gaussian bumps (hills and pits) on a tilted plane, plus noise. */
export function syntheticDem(size: number, seed = 42): Float32Array {
  const rnd = prng(seed);
  const z = new Float32Array(size * size);
  const bumps = Array.from({ length: 40 }, () => ({
    x: rnd() * size,
    y: rnd() * size,
    s: (0.02 + 0.1 * rnd()) * size,
    h: (rnd() - 0.3) * 800,
  }));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) z[y * size + x] = 200 + 0.01 * x + 0.02 * y + 2 * (rnd() - 0.5);
  }
  for (const b of bumps) {
    const r = Math.ceil(4 * b.s);
    const k = -1 / (2 * b.s * b.s);
    for (let y = Math.max(0, Math.floor(b.y - r)); y < Math.min(size, b.y + r); y++) {
      for (let x = Math.max(0, Math.floor(b.x - r)); x < Math.min(size, b.x + r); x++) {
        const dx = x - b.x;
        const dy = y - b.y;
        z[y * size + x]! += b.h * Math.exp((dx * dx + dy * dy) * k);
      }
    }
  }
  return z;
}

export interface Dem {
  readonly name: string;
  readonly info: RasterInfo;
  readonly z: Float32Array | Int16Array;
}

export function demOf(name: string, z: Float32Array | Int16Array, width: number, height: number, cell: number): Dem {
  const info: RasterInfo = {
    width,
    height,
    bandCount: 1,
    pixelType: z instanceof Int16Array ? 'S16' : 'F32',
    extent: { xmin: 0, ymin: 0, xmax: width * cell, ymax: height * cell },
    cellSize: { x: cell, y: cell },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
  };
  return { name, info, z };
}

/** The same elevations on a WGS 84 geographic grid: 3 arc-second cells, north edge at 37 N. */
function geographicDemOf(name: string, z: Float32Array, width: number, height: number): Dem {
  const cell = 1 / 1200;
  const info: RasterInfo = {
    width,
    height,
    bandCount: 1,
    pixelType: 'F32',
    extent: { xmin: -84, ymin: 37 - height * cell, xmax: -84 + width * cell, ymax: 37 },
    cellSize: { x: cell, y: cell },
    spatialReference: { wkid: 4326, geographic: true, proj4: '+proj=longlat +datum=WGS84 +no_defs' },
  };
  return { name, info, z };
}

async function jacksboro(): Promise<Dem> {
  const tiff = await fromFile(resolve(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif'));
  const image = await tiff.getImage();
  const [band] = (await image.readRasters()) as unknown as Float32Array[];
  return demOf('jacksboro 383x407', Float32Array.from(band!), image.getWidth(), image.getHeight(), 75);
}

/**
 * The kernel's input block (output rect grown by the halo) and output block, built once. `wasm`:
 * whether the kernel may take its WebAssembly path (false: the TypeScript kernel, the reference).
 */
export async function kernelTask(fn: RasterFunction, args: Record<string, unknown>, dem: Dem, wasm = false): Promise<() => void> {
  const source = memorySource(`bench:${dem.name}`, dem.info, [dem.z]);
  const node = applyFunction(fn, args, [source]);
  const out = allocateBlock(rect(0, 0, dem.info.width, dem.info.height), node.info.pixelType, 1);
  const block: PixelBlock = await source.read(grow(out.rect, node.plan.halo));
  const params = node.plan.params;
  return () => {
    setWasmEnabled(wasm);
    try {
      fn.kernel(params, [block], out);
    } finally {
      setWasmEnabled(true);
    }
  };
}

// ---- Plain typed-array loops: the same math, interior cells only, no masks, no edges.

const DEG = 180 / Math.PI;

function plainSlope(z: Float32Array, out: Float32Array, w: number, h: number, cell: number): void {
  const kx = 1 / (8 * cell);
  const ky = 1 / (8 * cell);
  for (let y = 1; y < h - 1; y++) {
    const r0 = (y - 1) * w;
    const r1 = y * w;
    const r2 = r1 + w;
    for (let x = 1; x < w - 1; x++) {
      const a = z[r0 + x - 1]!,
        b = z[r0 + x]!,
        c = z[r0 + x + 1]!;
      const d = z[r1 + x - 1]!,
        f = z[r1 + x + 1]!;
      const g = z[r2 + x - 1]!,
        hh = z[r2 + x]!,
        i = z[r2 + x + 1]!;
      const dx = (c + 2 * f + i - (a + 2 * d + g)) * kx;
      const dy = (g + 2 * hh + i - (a + 2 * b + c)) * ky;
      out[r1 + x] = Math.atan(Math.sqrt(dx * dx + dy * dy)) * DEG;
    }
  }
}

export function plainHillshade(z: Float32Array, out: Uint8Array, w: number, h: number, cell: number): void {
  const zenith = (90 - 45) * (Math.PI / 180);
  const azMath = (360 - 315 + 90) * (Math.PI / 180);
  const k0 = 255 * Math.cos(zenith);
  const kdx = -255 * Math.sin(zenith) * Math.cos(azMath);
  const kdy = 255 * Math.sin(zenith) * Math.sin(azMath);
  const kx = 1 / (8 * cell);
  const ky = 1 / (8 * cell);
  for (let y = 1; y < h - 1; y++) {
    const r0 = (y - 1) * w;
    const r1 = y * w;
    const r2 = r1 + w;
    for (let x = 1; x < w - 1; x++) {
      const a = z[r0 + x - 1]!,
        b = z[r0 + x]!,
        c = z[r0 + x + 1]!;
      const d = z[r1 + x - 1]!,
        f = z[r1 + x + 1]!;
      const g = z[r2 + x - 1]!,
        hh = z[r2 + x]!,
        i = z[r2 + x + 1]!;
      const dx = (c + 2 * f + i - (a + 2 * d + g)) * kx;
      const dy = (g + 2 * hh + i - (a + 2 * b + c)) * ky;
      const n = k0 + kdx * dx + kdy * dy;
      out[r1 + x] = (n > 0 ? n : 0) / Math.sqrt(1 + dx * dx + dy * dy);
    }
  }
}

/** Aspect with Math.atan2 (the kernel uses the family's fitted arctangent). */
export function plainAspect(z: Float32Array, out: Float32Array, w: number, h: number, cell: number): void {
  const kx = 1 / (8 * cell);
  const ky = 1 / (8 * cell);
  for (let y = 1; y < h - 1; y++) {
    const r0 = (y - 1) * w;
    const r1 = y * w;
    const r2 = r1 + w;
    for (let x = 1; x < w - 1; x++) {
      const a = z[r0 + x - 1]!,
        b = z[r0 + x]!,
        c = z[r0 + x + 1]!;
      const d = z[r1 + x - 1]!,
        f = z[r1 + x + 1]!;
      const g = z[r2 + x - 1]!,
        hh = z[r2 + x]!,
        i = z[r2 + x + 1]!;
      const dx = (c + 2 * f + i - (a + 2 * d + g)) * kx;
      const dy = (g + 2 * hh + i - (a + 2 * b + c)) * ky;
      if (dx === 0 && dy === 0) {
        out[r1 + x] = -1;
        continue;
      }
      const t = 90 - Math.atan2(dy, -dx) * DEG;
      out[r1 + x] = t < 0 ? t + 360 : t;
    }
  }
}

/** Slope of the 3x3 quadratic least-squares surface (SurfaceParamFunction's default), constant cells. */
export function plainQuadraticSlope(z: Float32Array, out: Float32Array, w: number, h: number, cell: number): void {
  const k = 1 / (6 * cell);
  for (let y = 1; y < h - 1; y++) {
    const r0 = (y - 1) * w;
    const r1 = y * w;
    const r2 = r1 + w;
    for (let x = 1; x < w - 1; x++) {
      const a = z[r0 + x - 1]!,
        b = z[r0 + x]!,
        c = z[r0 + x + 1]!;
      const d = z[r1 + x - 1]!,
        f = z[r1 + x + 1]!;
      const g = z[r2 + x - 1]!,
        hh = z[r2 + x]!,
        i = z[r2 + x + 1]!;
      const p = (c + f + i - a - d - g) * k;
      const q = (a + b + c - g - hh - i) * k;
      out[r1 + x] = Math.atan(Math.sqrt(p * p + q * q)) * DEG;
    }
  }
}

/** Zevenbergen-Thorne curvature: standard (type 0) or profile (type 1). */
export function plainCurvature(z: Float32Array, out: Float32Array, w: number, h: number, cell: number, type: 0 | 1): void {
  const l2 = 1 / (cell * cell);
  for (let y = 1; y < h - 1; y++) {
    const r0 = (y - 1) * w;
    const r1 = y * w;
    const r2 = r1 + w;
    for (let x = 1; x < w - 1; x++) {
      const a = z[r0 + x - 1]!,
        b = z[r0 + x]!,
        c = z[r0 + x + 1]!;
      const d = z[r1 + x - 1]!,
        e = z[r1 + x]!,
        f = z[r1 + x + 1]!;
      const g = z[r2 + x - 1]!,
        hh = z[r2 + x]!,
        i = z[r2 + x + 1]!;
      const D = ((d + f) / 2 - e) * l2;
      const E = ((b + hh) / 2 - e) * l2;
      if (type === 0) {
        out[r1 + x] = -200 * (D + E);
        continue;
      }
      const F = (-a + c + g - i) * 0.25 * l2;
      const G = (f - d) / (2 * cell);
      const H = (b - hh) / (2 * cell);
      const s = G * G + H * H;
      out[r1 + x] = s === 0 ? 0 : (-200 * (D * G * G + E * H * H + F * G * H)) / s;
    }
  }
}

export interface TerrainBenchOptions {
  /** Milliseconds per task (tinybench `time`); default 500. */
  readonly time?: number;
  /** Minimum iterations per task; default 8 (a 4096^2 slope pass takes a few hundred ms). */
  readonly iterations?: number;
  /** Edge of the synthetic DEM; default 4096. */
  readonly size?: number;
}

export async function terrainBench(opts: TerrainBenchOptions = {}): Promise<BenchRow[]> {
  const size = opts.size ?? 4096;
  const synthetic = syntheticDem(size);
  const dems = [
    demOf(`synthetic ${size}x${size}`, synthetic, size, size, 10),
    await jacksboro(),
    geographicDemOf(`geographic ${size}x${size}`, synthetic, size, size),
    demOf(
      `synthetic S16 ${size}x${size}`,
      Int16Array.from(synthetic, (v) => Math.round(v)),
      size,
      size,
      10,
    ),
  ];
  const bench = new Bench({ name: 'terrain', time: opts.time ?? 500, iterations: opts.iterations ?? 8 });
  const pairs: { ours: string; reference?: string; pixels: number }[] = [];
  // The WebAssembly SIMD128 kernels (src/wasm) beside the TypeScript ones: "... kernel wasm, <dem>".
  const wasm = wasmStatus();
  if (!wasm.enabled) console.log(`terrain bench: no wasm rows (${wasm.detail})`);
  for (const dem of dems) {
    const { width: w, height: h } = dem.info;
    const geographic = dem.info.spatialReference?.geographic === true;
    // Plain loops take one constant cell (metres); a geographic grid's is about 75 m x 92 m here.
    const cell = geographic ? 85 : dem.info.cellSize.x;
    const u8 = new Uint8Array(w * h);
    const f32 = new Float32Array(w * h);
    type Case = { fn: RasterFunction; label?: string; args?: Record<string, unknown>; plain?: () => void; wasm?: boolean };
    const z = dem.z;
    const cases: Case[] =
      z instanceof Float32Array
        ? [
            { fn: hillshade, plain: () => plainHillshade(z, u8, w, h, cell), wasm: true },
            { fn: hillshade, label: 'Hillshade multidirectional', args: { HillshadeType: 1 }, wasm: true },
            { fn: slope, plain: () => plainSlope(z, f32, w, h, cell), wasm: true },
            { fn: aspect, plain: () => plainAspect(z, f32, w, h, cell), wasm: true },
            ...(geographic
              ? [{ fn: surfaceParam, label: 'SurfaceParam slope 3x3', plain: () => plainQuadraticSlope(z, f32, w, h, cell) }]
              : [
                  {
                    fn: curvature,
                    label: 'Curvature standard',
                    args: { Type: 0 },
                    plain: () => plainCurvature(z, f32, w, h, cell, 0),
                    wasm: true,
                  },
                  {
                    fn: curvature,
                    label: 'Curvature profile',
                    args: { Type: 1 },
                    plain: () => plainCurvature(z, f32, w, h, cell, 1),
                    wasm: true,
                  },
                ]),
          ]
        : [
            { fn: hillshade, wasm: true },
            { fn: slope, wasm: true },
            { fn: aspect, wasm: true },
            { fn: curvature, label: 'Curvature standard', args: { Type: 0 }, wasm: true },
          ];
    for (const { fn, label, args, plain, wasm: hasWasm } of cases) {
      const ours = `${label ?? fn.name} kernel, ${dem.name}`;
      // Multidirectional Hillshade and the S16 DEM have no plain loop (their rows have no reference column).
      const reference = plain === undefined ? undefined : `${label ?? fn.name} plain loop, ${dem.name}`;
      bench.add(ours, await kernelTask(fn, args ?? {}, dem));
      if (reference !== undefined) bench.add(reference, plain!);
      pairs.push({ ours, ...(reference === undefined ? {} : { reference }), pixels: w * h });
      if (hasWasm === true && wasm.enabled) {
        const inWasm = `${label ?? fn.name} kernel wasm, ${dem.name}`;
        bench.add(inWasm, await kernelTask(fn, args ?? {}, dem, true));
        pairs.push({ ours: inWasm, ...(reference === undefined ? {} : { reference }), pixels: w * h });
      }
    }
  }
  await bench.run();
  return rowsOf(bench.tasks, pairs);
}

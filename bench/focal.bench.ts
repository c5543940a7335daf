/**
 * Focal kernels (Convolution, Statistics, Speckle) on one 4096 x 4096 F32 block, one thread, beside
 * a reference measured in the same run: SciPy 1.10 (`/usr/bin/python3` subprocess, the same
 * operation on the same data size: ndimage.correlate, uniform_filter, sqrt(E[x^2] - E[x]^2) from
 * uniform_filter, minimum_filter) when it is available, else a plain typed-array loop doing the
 * same math. Level 1 of STYLE §2.9: the kernel alone, no evaluator, no tiling; the input block is
 * built as the evaluator would (output rect grown by the plan's halo or `inputRect`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Bench, type Task } from 'tinybench';
import { allocateBlock, type PixelBlock, type RasterInfo } from '../src/core/pixel-block.js';
import type { Plane } from '../src/core/pixel-type.js';
import { grow, rect } from '../src/core/rect.js';
import { convolution } from '../src/functions/focal/convolution.js';
import { speckle } from '../src/functions/focal/speckle.js';
import { statistics } from '../src/functions/focal/statistics.js';
import { memorySource } from '../src/graph/memory-source.js';
import type { RasterFunction } from '../src/graph/types.js';
import { setWasmEnabled, wasmKernels, wasmStatus } from '../src/wasm/module.js';
import { applyFunction } from '../test/helpers.js';
import { type BenchRow, rowsOf } from './rows.js';
import { syntheticDem } from './terrain.bench.js';

export interface FocalBenchOptions {
  /** Milliseconds per task (tinybench `time`); default 500. */
  readonly time?: number;
  /** Minimum iterations per task; default 5. */
  readonly iterations?: number;
  /** Edge of the synthetic raster; default 4096. */
  readonly size?: number;
  /** Use the plain-loop reference even when SciPy is there. */
  readonly noScipy?: boolean;
}

type ScipyOp = 'correlate3' | 'mean3' | 'std3' | 'min3' | 'correlate5';

interface FocalCase {
  readonly label: string;
  readonly fn: RasterFunction;
  readonly args: Record<string, unknown>;
  readonly scipy?: ScipyOp;
  readonly plain?: (z: Float32Array, out: Float32Array, w: number, h: number) => void;
  /** Has a WebAssembly path. */
  readonly wasm?: boolean;
}

const SMOOTH = [0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625];

// ---- Plain typed-array loops (interior only, no masks, no edges): the fallback reference.

function plainConv3(z: Float32Array, out: Float32Array, w: number, h: number): void {
  const k = SMOOTH;
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      let acc = 0;
      for (let r = -1; r <= 1; r++) for (let c = -1; c <= 1; c++) acc += k[(r + 1) * 3 + c + 1]! * z[(y + r) * w + x + c]!;
      out[y * w + x] = acc;
    }
  }
}

function plainMoments3(z: Float32Array, out: Float32Array, w: number, h: number, std: boolean): void {
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      let s = 0;
      let q = 0;
      for (let r = -1; r <= 1; r++) {
        for (let c = -1; c <= 1; c++) {
          const v = z[(y + r) * w + x + c]!;
          s += v;
          q += v * v;
        }
      }
      const m = s / 9;
      out[y * w + x] = std ? Math.sqrt(Math.max(0, q / 9 - m * m)) : m;
    }
  }
}

function plainMin3(z: Float32Array, out: Float32Array, w: number, h: number): void {
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      let m = Infinity;
      for (let r = -1; r <= 1; r++) for (let c = -1; c <= 1; c++) m = Math.min(m, z[(y + r) * w + x + c]!);
      out[y * w + x] = m;
    }
  }
}

const CASES: readonly FocalCase[] = [
  { wasm: true, label: 'Convolution 3x3 Smoothing3x3', fn: convolution, args: { Type: 11 }, scipy: 'correlate3', plain: plainConv3 },
  { wasm: true, label: 'Convolution 3x3 Sharpening3x3', fn: convolution, args: { Type: 13 } },
  { wasm: true, label: 'Convolution 5x5 Smoothing5x5', fn: convolution, args: { Type: 12 }, scipy: 'correlate5' },
  { wasm: true, label: 'Convolution 9x9 separable', fn: convolution, args: { Columns: 9, Rows: 9, Kernel: Array(81).fill(1) } },
  {
    wasm: true,
    label: 'Statistics Mean 3x3',
    fn: statistics,
    args: { Type: 3 },
    scipy: 'mean3',
    plain: (z, o, w, h) => plainMoments3(z, o, w, h, false),
  },
  {
    wasm: true,
    label: 'Statistics StdDev 3x3',
    fn: statistics,
    args: { Type: 4 },
    scipy: 'std3',
    plain: (z, o, w, h) => plainMoments3(z, o, w, h, true),
  },
  { wasm: true, label: 'Statistics Min 3x3', fn: statistics, args: { Type: 1 }, scipy: 'min3', plain: plainMin3 },
  { label: 'Statistics Mean 15x15', fn: statistics, args: { Type: 3, Columns: 15, Rows: 15 } },
  { label: 'Speckle Lee 3x3', fn: speckle, args: {} },
  { label: 'Speckle Frost 5x5', fn: speckle, args: { FilterType: 2, FilterSize: 1 } },
];

const SCIPY_SCRIPT = `
import json, sys, time
import numpy as np
from scipy import ndimage
n = int(sys.argv[1]); reps = int(sys.argv[2])
rng = np.random.default_rng(42)
z = (200 + 800 * rng.random((n, n))).astype(np.float32)
k3 = np.array(${JSON.stringify(SMOOTH)}, dtype=np.float32).reshape(3, 3)
k5 = np.array([1,1,1,1,1,1,4,4,4,1,1,4,12,4,1,1,4,4,4,1,1,1,1,1,1], dtype=np.float32).reshape(5, 5) / 60
def std3(a):
    m = ndimage.uniform_filter(a, 3)
    return np.sqrt(np.maximum(ndimage.uniform_filter(a * a, 3) - m * m, 0))
ops = {
  'correlate3': lambda: ndimage.correlate(z, k3),
  'correlate5': lambda: ndimage.correlate(z, k5),
  'mean3': lambda: ndimage.uniform_filter(z, 3),
  'std3': lambda: std3(z),
  'min3': lambda: ndimage.minimum_filter(z, 3),
}
out = {}
for name, op in ops.items():
    op()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter(); op(); t.append(time.perf_counter() - t0)
    out[name] = float(np.median(t))
print(json.dumps(out))
`;

/** Median seconds per SciPy operation on an n x n float32 array, or undefined without SciPy. */
function scipyTimings(n: number): Partial<Record<ScipyOp, number>> | undefined {
  const py = '/usr/bin/python3';
  if (!existsSync(py)) return undefined;
  try {
    const out = execFileSync(py, ['-c', SCIPY_SCRIPT, String(n), '5'], {
      encoding: 'utf8',
      timeout: 600_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return JSON.parse(out) as Partial<Record<ScipyOp, number>>;
  } catch {
    return undefined;
  }
}

/** How a kernel task runs: the TypeScript path, the wasm path, or the wasm path with planes in wasm memory. */
export type FocalPath = 'ts' | 'wasm' | 'resident';

/** A kernel call on the whole raster and what gives its wasm memory back. */
export interface FocalTask {
  readonly run: () => void;
  readonly dispose: () => void;
}

/**
 * A planes-in-wasm-memory copy of `block` and an output block there, for the 'resident' path.
 * Blocks of the sizes a call takes (constants, scratch, and the copies the 'wasm' path makes when
 * it alternates with this one) are taken and given back first, so calls find them on the arena's
 * free lists and the memory does not grow (which would detach these views).
 */
function residentBlocks(block: PixelBlock, out: PixelBlock): { block: PixelBlock; out: PixelBlock; dispose: () => void } | undefined {
  const k = wasmKernels();
  if (k === undefined) return undefined;
  const plane = block.bands[0]!;
  const dst = out.bands[0]!;
  type View = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => Plane;
  const a = k.arena.alloc(plane.byteLength);
  const d = k.arena.alloc(dst.byteLength);
  const sizes = [plane.byteLength, dst.byteLength, 4096, 4096, 8 * (out.rect.width + 64), 4 * (out.rect.width + 64)];
  for (const w of sizes.map((b) => k.arena.alloc(b))) if (w !== undefined) k.arena.release(w);
  if (a === undefined || d === undefined) return undefined;
  const inPlane = new (plane.constructor as View)(k.arena.buffer, a, plane.length);
  inPlane.set(plane as never);
  return {
    block: { ...block, bands: [inPlane] },
    out: { ...out, bands: [new (dst.constructor as View)(k.arena.buffer, d, dst.length)] },
    dispose: () => {
      k.arena.release(a);
      k.arena.release(d);
    },
  };
}

/** A kernel call on the whole raster (one block), on the given path; undefined when that path is not available. */
export async function focalKernelTask(
  fn: RasterFunction,
  args: Record<string, unknown>,
  info: RasterInfo,
  z: Float32Array | Int16Array,
  path: FocalPath = 'ts',
): Promise<FocalTask | undefined> {
  const source = memorySource('bench:focal', info, [z]);
  const node = applyFunction(fn, args, [source]);
  let out = allocateBlock(rect(0, 0, info.width, info.height), node.info.pixelType, 1);
  const plan = node.plan;
  let block: PixelBlock = await source.read(plan.inputRect ? plan.inputRect(out.rect, 0) : grow(out.rect, plan.halo));
  let dispose = (): void => {};
  if (path === 'resident') {
    const r = residentBlocks(block, out);
    if (r === undefined) return undefined;
    ({ block, out, dispose } = r);
  }
  const wasm = path !== 'ts';
  return {
    run: () => {
      const was = setWasmEnabled(wasm);
      try {
        if (out.bands[0]!.length === 0) throw new Error('the wasm memory grew: resident planes detached');
        fn.kernel(plan.params, [block], out);
      } finally {
        setWasmEnabled(was);
      }
    },
    dispose,
  };
}

export async function focalBench(opts: FocalBenchOptions = {}): Promise<BenchRow[]> {
  const size = opts.size ?? 4096;
  const z = syntheticDem(size);
  const info: RasterInfo = {
    width: size,
    height: size,
    bandCount: 1,
    pixelType: 'F32',
    extent: { xmin: 0, ymin: 0, xmax: size * 10, ymax: size * 10 },
    cellSize: { x: 10, y: 10 },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
  };
  const scipy = opts.noScipy ? undefined : scipyTimings(size);
  const pairs: { ours: string; reference?: string; pixels: number }[] = [];
  const scratch = new Float32Array(size * size);
  const suffix = `${size}x${size}`;
  const wasm = wasmStatus().enabled;
  const wasmPairs: { ours: string; reference: string; pixels: number }[] = [];
  const tasks: Task[] = [];
  // One tinybench run per case: a case's resident planes are given back before the next case's.
  for (const c of CASES) {
    const bench = new Bench({ name: 'focal', time: opts.time ?? 500, iterations: opts.iterations ?? 5 });
    const disposers: (() => void)[] = [];
    const ours = `${c.label} kernel, ${suffix}`;
    bench.add(ours, (await focalKernelTask(c.fn, c.args, info, z, 'ts'))!.run);
    if (wasm && c.wasm) {
      for (const path of ['wasm', 'resident'] as const) {
        const task = await focalKernelTask(c.fn, c.args, info, z, path);
        if (task === undefined) continue;
        disposers.push(task.dispose);
        const name = `${c.label} kernel ${path === 'wasm' ? 'wasm' : 'wasm resident'}, ${suffix}`;
        bench.add(name, task.run);
        wasmPairs.push({ ours: name, reference: ours, pixels: size * size });
      }
    }
    let reference: string | undefined;
    if (!scipy && c.plain) {
      reference = `${c.label} plain loop, ${suffix}`;
      const plain = c.plain;
      bench.add(reference, () => plain(z, scratch, size, size));
    }
    pairs.push({ ours, ...(reference ? { reference } : {}), pixels: size * size });
    try {
      await bench.run();
    } finally {
      for (const d of disposers) d();
    }
    tasks.push(...bench.tasks);
  }
  const rows = rowsOf(tasks, pairs);
  // wasm rows, each after its TypeScript row, which is their reference (ratio = wasm / TS).
  const wasmRows = rowsOf(tasks, wasmPairs);
  const beside = (r: BenchRow, name: string): BenchRow[] => [r, ...wasmRows.filter((_, j) => wasmPairs[j]!.reference === name)];
  // SciPy reference: same operation and size, timed in the subprocess.
  return rows.flatMap((r, i) => {
    const op = CASES[i]!.scipy;
    const seconds = op && scipy ? scipy[op] : undefined;
    if (seconds === undefined) return beside(r, r.name);
    const reference = (size * size) / 1e6 / seconds;
    return beside({ ...r, name: `${r.name} (reference: SciPy ${op})`, reference, ratio: r.mpxPerSec / reference }, r.name);
  });
}

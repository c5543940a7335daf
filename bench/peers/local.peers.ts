/**
 * Per-pixel band math: rasterflow's TypeScript kernel, its WebAssembly SIMD128 path (src/wasm/local.ts)
 * with the planes copied into wasm memory and the results out (`wasm`), the same path on planes that
 * already live in wasm memory (`wasm resident`: what a chain kept in wasm memory gets), and through
 * local_peers.py NumPy (and numexpr, one thread, for the expression), on the same seeded F32 bands.
 * The wasm paths and the peers take turns, round by round (`alternating`); the TypeScript kernel
 * is timed on its own after them.
 *
 * Decision: NumPy's figure is kept as its users get it (whole arrays, a new result per call) and
 * two clearly labelled columns are added rather than changing any: `wasm tiled`, the same image
 * done as a render does it, tile by tile (256 x 256, the render's default
 * tile; 256 tiles at 4096^2), each tile's input and output planes in recycled blocks of wasm memory;
 * each tile's input windows are copied into its blocks before the timing (a render's source read
 * puts them there: that is the reader's time, not the kernel's) and the output mask set valid (as a
 * fresh tile block's); the figure is the sum of the 256 kernel calls' times. Its peer `NumPy tiled`
 * runs NumPy's expression on the same tiles (contiguous copies made before its timing), so the
 * ratio `wasm tiled/NumPy tiled` compares like with like; `wasm tiled/NumPy` is the render's
 * kernel time against NumPy on the whole arrays (a new 64 MiB result per call, page faults
 * included, as a NumPy user's script gets).
 *
 * Ops: NDVI scientific `(nir - red) / (nir + red)`, Arithmetic plus, multiply and divide, the engine's
 * cast of F32 to U8 (castPlane) against NumPy's clip and astype, Stretch MinMax to U8 (the linear
 * closed form) and the expression engine's NDVI (BandArithmetic UserDefined `(B2 - B1) / (B2 + B1)`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { allocateBlock, type PixelBlock, type RasterInfo } from '../../src/core/pixel-block.js';
import type { Plane } from '../../src/core/pixel-type.js';
import { castPlane } from '../../src/graph/cast.js';
import { rect } from '../../src/core/rect.js';
import { arithmetic } from '../../src/functions/local/arithmetic.js';
import { stretch } from '../../src/functions/radiometric/stretch.js';
import { bandArithmetic } from '../../src/functions/spectral/band-arithmetic.js';
import { ndvi } from '../../src/functions/spectral/ndvi.js';
import { memorySource } from '../../src/graph/memory-source.js';
import type { FunctionNode, RasterFunction, RasterNode } from '../../src/graph/types.js';
import { type Kernels, setWasmEnabled, wasmKernels } from '../../src/wasm/module.js';
import { applyFunction, prng } from '../../test/helpers.js';
import { alternating, type PeerFamily, type PeerRow, PeerServer, type PlacedTimer, rates, type Timer, wallMs } from './common.js';

/** Stretch cut-offs and range used by both sides. */
const LO = 200;
const HI = 3800;

function info(size: number, bandCount: number): RasterInfo {
  return {
    width: size,
    height: size,
    bandCount,
    pixelType: 'F32',
    extent: { xmin: 0, ymin: 0, xmax: size * 30, ymax: size * 30 },
    cellSize: { x: 30, y: 30 },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
  };
}

/** Seeded reflectance-like F32 bands: red 200..2200, nir 400..4400 (never a zero sum). */
function bands(size: number): { red: Float32Array; nir: Float32Array } {
  const rnd = prng(22);
  const n = size * size;
  const red = new Float32Array(n);
  const nir = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    red[i] = 200 + rnd() * 2000;
    nir[i] = 400 + rnd() * 4000;
  }
  return { red, nir };
}

interface Call {
  readonly node: FunctionNode;
  readonly inputs: readonly PixelBlock[];
  readonly out: PixelBlock;
}

async function callOf(fn: RasterFunction, args: Record<string, unknown>, sources: readonly RasterNode[], size: number): Promise<Call> {
  const node = applyFunction(fn, args, sources);
  const area = rect(0, 0, size, size);
  const inputs: PixelBlock[] = [];
  for (const s of node.inputs) inputs.push(await (s as Extract<RasterNode, { kind: 'source' }>).read(area));
  return { node, inputs, out: allocateBlock(area, node.info.pixelType, node.info.bandCount) };
}

/** The call's kernel on the TypeScript or the wasm path (planes copied in and out), timed. */
function callTimer(call: Call, wasm: boolean): Timer {
  const { node, inputs, out } = call;
  return wallMs(() => {
    setWasmEnabled(wasm);
    try {
      node.fn.kernel(node.plan.params, inputs, out);
    } finally {
      setWasmEnabled(true);
    }
  });
}

type Ctor = { new (buffer: ArrayBuffer, byteOffset: number, length: number): Plane; readonly BYTES_PER_ELEMENT: number };

const releaser = (k: Kernels, ptrs: readonly (number | undefined)[]) => (): void => {
  for (const p of ptrs) if (p !== undefined) k.arena.release(p);
};

/**
 * The call's blocks copied into wasm memory (planes and masks), the kernel timed there. (The
 * memory is one fixed reservation, shared: it never grows, so views on it stay valid; these
 * blocks and the copies the `wasm` path takes when it alternates with this one fit in it at 4096^2.)
 */
function residentTimer(k: Kernels, call: Call): PlacedTimer {
  const arrays: (Plane | Uint8Array)[] = [];
  for (const b of [...call.inputs, call.out]) arrays.push(...b.bands, b.mask);
  const ptrs = arrays.map((a) => k.arena.alloc(a.byteLength));
  if (ptrs.some((p) => p === undefined)) {
    releaser(k, ptrs)();
    throw new Error('wasm memory is out');
  }
  const views = arrays.map((a, i) => {
    const v = new (a.constructor as Ctor)(k.arena.buffer, ptrs[i]!, a.length);
    v.set(a as never);
    return v;
  });
  let j = 0;
  const move = (b: PixelBlock): PixelBlock => ({ ...b, bands: b.bands.map(() => views[j++]!), mask: views[j++] as Uint8Array });
  const inputs = call.inputs.map(move);
  const out = move(call.out);
  return { run: callTimer({ node: call.node, inputs, out }, true), dispose: releaser(k, ptrs) };
}

/** Pixels per side of the tiles of the `wasm tiled` figure (the render's default tile size). */
const TILE = 256;

/**
 * The call done tile by tile with every tile's planes in wasm memory (blocks allocated once and
 * reused for every tile, as the arena recycles a render's tile blocks): a run is the sum over the
 * tiles of the kernel's time. The copies of each tile's input windows (and the output mask's reset
 * to valid) are outside the timing.
 */
function tiledTimer(k: Kernels, call: Call, size: number): PlacedTimer {
  const t = Math.min(TILE, size);
  const ptrs: number[] = [];
  const place = <P extends Plane | Uint8Array>(like: P): P => {
    const ptr = k.arena.alloc(t * t * like.BYTES_PER_ELEMENT);
    if (ptr === undefined) throw new Error('wasm memory is out');
    ptrs.push(ptr);
    return new (like.constructor as Ctor)(k.arena.buffer, ptr, t * t) as P;
  };
  const tileOf = (b: PixelBlock): PixelBlock => ({ ...b, rect: rect(0, 0, t, t), bands: b.bands.map(place), mask: place(b.mask) });
  const inputs = call.inputs.map(tileOf);
  const out = tileOf(call.out);
  const copyWindow = <P extends Plane | Uint8Array>(from: P, to: P, x0: number, y0: number, w: number, h: number): void => {
    for (let y = 0; y < h; y++)
      (to as Float32Array).set((from as Float32Array).subarray((y0 + y) * size + x0, (y0 + y) * size + x0 + w), y * w);
  };
  const run = (): number => {
    setWasmEnabled(true);
    let total = 0;
    for (let y0 = 0; y0 < size; y0 += t) {
      for (let x0 = 0; x0 < size; x0 += t) {
        const w = Math.min(t, size - x0);
        const h = Math.min(t, size - y0);
        const sized = (b: PixelBlock): PixelBlock =>
          w === t && h === t
            ? b
            : { ...b, rect: rect(0, 0, w, h), bands: b.bands.map((p) => p.subarray(0, w * h)), mask: b.mask.subarray(0, w * h) };
        call.inputs.forEach((src, i) => {
          const dst = inputs[i]!;
          src.bands.forEach((p, j) => copyWindow(p, dst.bands[j]!, x0, y0, w, h));
          copyWindow(src.mask, dst.mask, x0, y0, w, h);
        });
        out.mask.fill(1);
        const ins = inputs.map(sized);
        const o = sized(out);
        const start = performance.now();
        call.node.fn.kernel(call.node.plan.params, ins, o);
        total += performance.now() - start;
      }
    }
    return total;
  };
  return { run, dispose: releaser(k, ptrs) };
}

export const family: PeerFamily = {
  name: 'local',
  async run(size, repeats, say) {
    const { red, nir } = bands(size);
    const px = (size * size) / 1e6;
    const k = wasmKernels();
    const stack = memorySource('bench:stack', info(size, 2), [red, nir]);
    const redSrc = memorySource('bench:red', info(size, 1), [red]);
    const nirSrc = memorySource('bench:nir', info(size, 1), [nir]);
    const ops: { op: string; call: Call }[] = [
      { op: 'NDVI f32', call: await callOf(ndvi, { VisibleBandID: 0, InfraredBandID: 1, ScientificOutput: true }, [stack], size) },
      { op: 'a+b f32', call: await callOf(arithmetic, { Operation: 1 }, [nirSrc, redSrc], size) },
      { op: 'a*b f32', call: await callOf(arithmetic, { Operation: 3 }, [nirSrc, redSrc], size) },
      { op: 'a/b f32', call: await callOf(arithmetic, { Operation: 4 }, [nirSrc, redSrc], size) },
      { op: 'stretch f32->u8', call: await callOf(stretch, { StretchType: 5, Statistics: [[LO, HI, 2000, 900]] }, [nirSrc], size) },
      { op: 'expression NDVI f32', call: await callOf(bandArithmetic, { Method: 0, BandIndexes: '(B2 - B1) / (B2 + B1)' }, [stack], size) },
    ];
    const rows: PeerRow[] = [];
    const ratios: PeerRow['ratios'] = [
      ['TS', 'NumPy'],
      ['wasm', 'NumPy'],
      ['wasm resident', 'NumPy'],
      ['wasm tiled', 'NumPy'],
      ['wasm tiled', 'NumPy tiled'],
    ];
    const dir = mkdtempSync(join(tmpdir(), 'rasterflow-peers-'));
    let peers: PeerServer | undefined;
    try {
      const r = join(dir, 'red.f32');
      const n = join(dir, 'nir.f32');
      writeFileSync(r, new Uint8Array(red.buffer));
      writeFileSync(n, new Uint8Array(nir.buffer));
      peers = await PeerServer.start(resolve(import.meta.dirname, 'local_peers.py'), [r, n, String(size), String(LO), String(HI)]);
      for (const { op, call } of ops) {
        const expr = op.startsWith('expression');
        const resident = k ? residentTimer(k, call) : undefined;
        const tiled = k ? tiledTimer(k, call, size) : undefined;
        let ms;
        try {
          const timers: Record<string, Timer | undefined> = {
            wasm: k ? callTimer(call, true) : undefined,
            'wasm resident': resident?.run,
            'wasm tiled': tiled?.run,
            NumPy: peers.timer('numpy', op),
            'NumPy tiled': peers.timer('numpy tiled', op),
          };
          if (expr) timers.numexpr = peers.timer('numexpr', op);
          const alt = await alternating(timers, repeats);
          ms = { ...(await alternating({ TS: callTimer(call, false) }, repeats)), ...alt };
        } finally {
          tiled?.dispose();
          resident?.dispose();
        }
        rows.push({ op, measures: rates(px, ms), ratios: expr ? [...ratios, ['wasm', 'numexpr'], ['wasm resident', 'numexpr']] : ratios });
      }
      // castPlane allocates its output plane: no resident figure.
      const mask = new Uint8Array(size * size);
      const cast =
        (wasm: boolean): Timer =>
        () => {
          setWasmEnabled(wasm);
          try {
            mask.fill(1);
            const t = performance.now();
            castPlane(nir, 'F32', 'U8', mask);
            return performance.now() - t;
          } finally {
            setWasmEnabled(true);
          }
        };
      const castAlt = await alternating({ wasm: k ? cast(true) : undefined, NumPy: peers.timer('numpy', 'cast f32->u8') }, repeats);
      const castMs = { ...(await alternating({ TS: cast(false) }, repeats)), ...castAlt };
      rows.push({
        op: 'cast f32->u8',
        measures: rates(px, castMs),
        ratios: [
          ['TS', 'NumPy'],
          ['wasm', 'NumPy'],
        ],
      });
      peers.saySkipped(say);
    } finally {
      peers?.close();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};

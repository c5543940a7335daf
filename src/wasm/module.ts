/**
 * The WebAssembly SIMD128 kernels (wasm/*.ts, AssemblyScript): loaded once per thread (each worker
 * imports this module and gets its own instance and memory), synchronously at first use.
 *
 * The module is used when all of these hold, else every kernel runs its TypeScript path (the
 * reference; the results are the same, only slower):
 *   - `RASTERFLOW_SIMD` is not `0` (read at first use; `0` switches wasm off, to compare the paths
 *     or to run where SIMD128 is missing);
 *   - the runtime validates a SIMD128 module (`WebAssembly.validate` of a tiny one);
 *   - the compiled kernels are found: `dist/wasm/kernels.wasm` beside the built loader (or beside
 *     the bundled CLI, `dist/cli/../wasm/`), else `wasm/build/kernels.wasm` of the checkout
 *     (`npm run build:wasm`; `npm ci`, `npm test` and `npm run build` make it).
 * `wasmStatus()` says which and why.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WasmArena, type WasmMemory } from './arena.js';

/** What this module uses of the WebAssembly global (the project's lib settings carry no WebAssembly types). */
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object, imports: object) => { readonly exports: object };
  readonly Memory: new (descriptor: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
}
const WA = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

/**
 * What every family's glue reads of the module: its memory. Each family declares its own kernels'
 * exports beside its glue (src/wasm/<family>.ts) and reads them from `exports`.
 */
export interface KernelExports {
  readonly memory: WasmMemory;
}

export interface Kernels {
  readonly exports: KernelExports;
  readonly arena: WasmArena;
}

export interface WasmStatus {
  /** Whether kernels run in wasm now. */
  readonly enabled: boolean;
  /** Why not, when they do not; the module's file when they do. */
  readonly detail: string;
}

/**
 * i32.const 0; i8x16.splat; i8x16.popcnt: valid only where SIMD128 is (wasm-feature-detect's probe).
 */
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

/** Where the compiled module may be, relative to this file (src/wasm, dist/wasm or the bundled dist/cli). */
const CANDIDATES = ['./kernels.wasm', '../wasm/kernels.wasm', '../../wasm/build/kernels.wasm'];

let loaded: Kernels | undefined;
let status: WasmStatus | undefined;
/** Test and bench override (`setWasmEnabled`); the environment switch still wins. */
let override = true;

function load(): void {
  if (process.env.RASTERFLOW_SIMD === '0') {
    status = { enabled: false, detail: 'switched off (RASTERFLOW_SIMD=0)' };
    return;
  }
  if (WA === undefined || !WA.validate(SIMD_PROBE)) {
    status = { enabled: false, detail: 'this runtime has no WebAssembly SIMD128' };
    return;
  }
  for (const c of CANDIDATES) {
    const url = new URL(c, import.meta.url);
    let bytes: Buffer;
    try {
      bytes = readFileSync(fileURLToPath(url));
    } catch {
      continue;
    }
    try {
      const own = importedMemoryPages(bytes) * PAGE; // the module's own data, below the arena
      const memory = reserve(own);
      const instance = new WA.Instance(new WA.Module(bytes), {
        env: {
          memory,
          abort: () => {
            throw new Error('wasm kernel abort');
          },
        },
      });
      const exports = instance.exports as unknown as KernelExports;
      loaded = { exports, arena: new WasmArena(memory, memory.buffer.byteLength, { grow: false, base: Math.max(PAGE, own) }) };
      status = { enabled: true, detail: fileURLToPath(url) };
    } catch (e) {
      status = { enabled: false, detail: `the wasm kernels did not load: ${(e as Error).message}` };
    }
    return;
  }
  status = { enabled: false, detail: 'the wasm kernels are not built (npm run build:wasm)' };
}

/**
 * Decision: the module's memory is a shared memory (model (b) of the choices), made here at its
 * full size and never grown. Planes live in wasm memory through a chain (planes.ts `TileBlocks`),
 * and growing a memory would leave every view on it short (a non-shared memory's would detach).
 * Shared, so that the codec threads inflate decoded GeoTIFF blocks straight into blocks of it
 * (codec-pool.ts `InflateTarget`): a render's windows are then copied from them in wasm, with no
 * buffer sent back and forth and no copy of a block's rows in TypeScript; and a shared memory of
 * this size costs no collection when made, where growing a non-shared one to it forced a full one
 * (V8 counts it as external memory). Its planes' buffer is a SharedArrayBuffer: never transferred
 * or cloned to another thread (it would share, not copy: a worker reply takes
 * `ownMemory(block)`). Pages reserved but never touched cost address space, not RSS (the engine
 * maps them on first write), so the reservation is large: RESERVE_BYTES, or the largest of its
 * halves the runtime grants (a host with strict overcommit), down to MIN_RESERVE_BYTES. What is
 * resident is what the arena touched: its blocks in use plus one free block per size class
 * (arena.ts), itself bounded for the evaluator's planes and the decoded blocks by planes.ts
 * `RESIDENT_BUDGET`. A request the reservation cannot hold falls back: to an ordinary JS plane
 * (the evaluator), to a block of the reader's own (the decoder), to the TypeScript kernel (a kernel
 * call).
 */
const RESERVE_BYTES = 1024 * 2 ** 20;
const MIN_RESERVE_BYTES = 64 * 2 ** 20;
const PAGE = 65536;

/** A shared memory of `own` bytes plus the largest reservation the runtime grants. */
function reserve(own: number): WasmMemory {
  for (let bytes = RESERVE_BYTES; ; bytes /= 2) {
    const pages = Math.ceil((own + bytes) / PAGE);
    try {
      return new WA!.Memory({ initial: pages, maximum: pages, shared: true });
    } catch (e) {
      if (bytes / 2 < MIN_RESERVE_BYTES) throw e;
    }
  }
}

/**
 * The initial pages the module declares for the memory it imports (its static data lies below
 * them): the import section's memory limits' minimum. 0 when it declares none.
 */
function importedMemoryPages(bytes: Uint8Array): number {
  let p = 8;
  const leb = (): number => {
    let r = 0;
    let shift = 0;
    let b: number;
    do {
      b = bytes[p++]!;
      r += (b & 127) * 2 ** shift;
      shift += 7;
    } while (b & 128);
    return r;
  };
  const skipName = (): void => {
    const n = leb();
    p += n;
  };
  while (p < bytes.length) {
    const id = bytes[p++]!;
    const size = leb();
    const end = p + size;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        skipName();
        skipName();
        const kind = bytes[p++]!;
        if (kind === 0) leb();
        else if (kind === 1) {
          p++; // the table's element type, then its limits: flags, minimum, maximum when flagged
          if (leb() & 1) {
            leb();
            leb();
          } else leb();
        } else if (kind === 2) {
          leb(); // the memory's limits: flags, then the minimum
          return leb();
        } else p += 2;
      }
    }
    p = end;
  }
  return 0;
}

/** The kernels, or undefined when wasm is off, unsupported or not built (the TypeScript paths run). */
export function wasmKernels(): Kernels | undefined {
  if (status === undefined) load();
  return override ? loaded : undefined;
}

/**
 * The loaded module's memory buffer, whether or not `setWasmEnabled` switched the kernels off
 * (planes allocated while they were on still live there); undefined when no module is loaded.
 */
export function wasmMemoryBuffer(): ArrayBuffer | undefined {
  if (status === undefined) load();
  return loaded?.arena.buffer;
}

export function wasmStatus(): WasmStatus {
  if (status === undefined) load();
  return override || !status!.enabled ? status! : { enabled: false, detail: 'switched off by setWasmEnabled(false)' };
}

/**
 * Switch the wasm kernels off (false) or back on (true) in this thread, for tests and benchmarks
 * that compare the two paths in one process. It cannot turn on what RASTERFLOW_SIMD=0, the runtime
 * or a missing build turned off. @returns the previous setting.
 */
export function setWasmEnabled(enabled: boolean): boolean {
  const was = override;
  override = enabled;
  return was;
}

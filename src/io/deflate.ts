/**
 * DEFLATE compression of TIFF blocks (zlib streams): libdeflate, the compressor GDAL itself links,
 * built to WebAssembly (vendor/libdeflate: its module, build, licence and provenance). On the 64 KiB
 * predictor-2 blocks of a 4096^2 hillshade, at ZLEVEL 1 it is about 1.65x node:zlib's speed and
 * makes 5% smaller blocks; at level 6 about 2.6x. Its streams are standard zlib streams that any inflater reads; for a given
 * level the bytes are deterministic, whatever thread makes them (the codec threads run the same
 * module through the same glue, ZLIB_COMPRESSOR_SOURCE). Levels 1-12, as GDAL's ZLEVEL with libdeflate
 * (10-12: slowest, smallest).
 *
 * The module is compiled once per process, on first use, from `libdeflate.wasm`: `dist/wasm/`
 * beside the built code (`npm run build` copies it there), else `vendor/libdeflate/` of the
 * checkout. A missing or unreadable module is an error, not a silent switch to another compressor
 * (the bytes would then depend on the install).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const MIN_ZLEVEL = 1;
export const MAX_ZLEVEL = 12;

/** What this module uses of the WebAssembly global (the project's lib settings carry no WebAssembly types). */
interface WasmCompile {
  readonly Module: new (bytes: Uint8Array) => object;
}

/** Where the module may be, relative to this file (src/io, dist/io or the bundled dist/cli). */
const CANDIDATES = ['../wasm/libdeflate.wasm', '../../vendor/libdeflate/libdeflate.wasm'];

let compiled: object | undefined;

/** libdeflate's compiled WebAssembly.Module (compiled on first call), which threads may be given. */
export function libdeflateModule(): object {
  if (compiled) return compiled;
  const WA = (globalThis as { WebAssembly?: WasmCompile }).WebAssembly;
  if (WA === undefined) throw new Error('DEFLATE compression needs WebAssembly, which this runtime lacks');
  const tried: string[] = [];
  for (const c of CANDIDATES) {
    const path = fileURLToPath(new URL(c, import.meta.url));
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch {
      tried.push(path);
      continue;
    }
    compiled = new WA.Module(bytes);
    return compiled;
  }
  throw new Error(`libdeflate's module (libdeflate.wasm) is missing: looked for ${tried.join(', ')}; reinstall rasterflow`);
}

/**
 * libdeflate's zlib compressor on an instance of a module (libdeflateModule's), as JavaScript
 * source: `(module) => (data, level) => Uint8Array`, a zlib stream that owns its buffer (it may be
 * transferred). Source text, not a function, because the codec threads (codec-pool.ts) evaluate the
 * same text, so both make the same bytes from the same module (a function's own text is what the
 * build made of it, with helpers it may not carry along).
 *
 * One compressor per level is kept for the instance's life (libdeflate's compressors are reusable
 * and hold no state between calls). The module (vendor/libdeflate/build.sh) imports nothing and
 * exports its memory, `_initialize` (wasi-libc's constructors, called once), malloc, free and
 * libdeflate's own functions by their names; its malloc grows the memory, so views are taken after
 * each call into it.
 */
export const ZLIB_COMPRESSOR_SOURCE = `(module) => {
  const e = new WebAssembly.Instance(module, {}).exports;
  e._initialize();
  const heap = () => new Uint8Array(e.memory.buffer);
  const compressors = [];
  return (data, level) => {
    if (!Number.isInteger(level) || level < 1 || level > 12) {
      throw new RangeError('the DEFLATE level must be an integer from 1 to 12, not ' + level);
    }
    const compressor = compressors[level] || (compressors[level] = e.libdeflate_alloc_compressor(level));
    if (compressor === 0) throw new Error('libdeflate could not allocate its compressor');
    const n = data.byteLength;
    const room = e.libdeflate_zlib_compress_bound(compressor, n);
    const input = e.malloc(Math.max(1, n));
    const output = input === 0 ? 0 : e.malloc(room);
    try {
      if (output === 0) throw new Error('libdeflate ran out of memory');
      heap().set(data, input);
      const written = e.libdeflate_zlib_compress(compressor, input, n, output, room);
      if (written === 0) throw new Error('libdeflate zlib compression failed');
      return heap().slice(output, output + written);
    } finally {
      if (output !== 0) e.free(output);
      if (input !== 0) e.free(input);
    }
  };
}`;

type Compress = (data: Uint8Array, level: number) => Uint8Array;

/** The compressor of ZLIB_COMPRESSOR_SOURCE on a new instance of `module`. */
export function zlibCompressor(module: object): Compress {
  // Our own constant source (the same text the codec threads evaluate), never input.
  // eslint-disable-next-line @typescript-eslint/no-implied-eval, @typescript-eslint/no-unsafe-call
  return (new Function(`return ${ZLIB_COMPRESSOR_SOURCE}`)() as (m: object) => Compress)(module);
}

let compress: Compress | undefined;

/** A zlib stream of `data` at `level` (MIN_ZLEVEL..MAX_ZLEVEL), owning its buffer. */
export function deflateZlib(data: Uint8Array, level: number): Uint8Array {
  compress ??= zlibCompressor(libdeflateModule());
  return compress(data, level);
}

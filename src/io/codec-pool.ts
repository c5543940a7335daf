/**
 * DEFLATE off the main thread: a few worker threads that run node:zlib's synchronous inflate and
 * libdeflate's deflate (deflate.ts) on blocks handed to them (the input transferred, not copied,
 * when the caller gives it up), so the main thread keeps computing kernels while blocks are decoded and encoded.
 *
 * Why not node:zlib's asynchronous API (libuv's thread pool)? Each asynchronous call builds a
 * zlib stream object and its buffers on the main thread: measured here, about 0.3 ms of main
 * thread per 256 x 256 block, as much as the work saved on large rasters. A posted message
 * costs about a tenth of that.
 *
 * Threads: RASTERFLOW_CODEC_THREADS (0: everything inline), default one less than the available
 * parallelism, at least 1, at most 4; started on first use (or `warmCodecThreads`), fed two jobs
 * at a time from one queue, and unreferenced while idle so they never keep a process alive. The
 * main thread takes queued jobs itself when it would otherwise wait (`help`). Only the main thread of a process
 * uses them: render workers and the codec threads themselves work inline. Blocks under 32 KiB
 * (output for inflate, input for deflate) are done inline too: a message would cost more.
 * Results do not depend on where a block was coded (both are deterministic for given options).
 *
 * With the wasm kernels on, a file block is inflated straight into a block of their shared memory
 * the reader hands over (`InflateTarget`): the thread writes there and answers with the length only.
 * Otherwise inflated blocks come back in recycled buffers where the reader gives them back
 * (`recycleInflated`, once the tile cache has dropped a block and nobody copies from it): a file
 * block's job takes a spare buffer along and zlib inflates into it. Fresh memory costs a page fault
 * per 4 KiB when first written, which on the machines measured here cost more than the copy a
 * block's bytes then get: a 4096 x 4096 F32 render faulted in 64 MiB of new inflate output.
 */
import { readSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isMainThread, Worker } from 'node:worker_threads';
import * as zlib from 'node:zlib';
import { deflateZlib, libdeflateModule, ZLIB_COMPRESSOR_SOURCE } from './deflate.js';

/**
 * zlib's inflate of a whole stream into `out` when given (an ArrayBuffer of at least `size` bytes, which the
 * result then views), else into a new buffer: `(zlib) => (input, size, out) => Buffer`, output capped at
 * `size` bytes (ERR_BUFFER_TOO_LARGE past it), errors as zlib.inflateSync's. Source text, evaluated
 * here and by the codec threads alike. It gives zlib's synchronous path (`_processChunk`, which
 * `inflateSync` itself runs) the output buffer to start in; a Node whose zlib lacks that path
 * inflates into a new buffer, the same bytes.
 */
const INFLATE_INTO_SOURCE = `(zlib) => (input, size, out, at = 0, room = size) => {
  const options = { chunkSize: size, maxOutputLength: size };
  if (out === undefined || out.byteLength - at < room) return zlib.inflateSync(input, options);
  // Made with zlib's smallest chunk, then given the target and its size: the stream's own output
  // buffer (a chunk, 256 KiB for a block) would be allocated only to be dropped.
  const z = new zlib.Inflate({ chunkSize: 64, maxOutputLength: size });
  if (typeof z._processChunk !== 'function' || !('_outBuffer' in z) || z._chunkSize !== 64) return zlib.inflateSync(input, options);
  z._outBuffer = Buffer.from(out, at, room);
  z._chunkSize = room;
  return z._processChunk(input, z._finishFlushFlag);
}`;

/**
 * The worker: plain CommonJS on node:zlib, so it starts in milliseconds and needs no build, plus
 * libdeflate's compressor made from the main thread's compiled module (workerData.module) by the
 * same glue as inline (deflate.ts ZLIB_COMPRESSOR_SOURCE): the same bytes.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const zlib = require('node:zlib');
const fs = require('node:fs');
let scratch = Buffer.alloc(0);
let compress;
// The caller's shared memory (sent with the first job into it).
let shared;
const inflateInto = (${INFLATE_INTO_SOURCE})(zlib);
let missing = workerData.missing;
try {
  if (workerData.module) compress = (${ZLIB_COMPRESSOR_SOURCE})(workerData.module);
} catch (e) {
  missing = 'libdeflate did not start: ' + (e && e.message);
}
if (!compress) compress = () => { throw new Error(missing); };
parentPort.on('message', (m) => {
  try {
    let input;
    if (m.op === 3) {
      // The compressed block read here, into this thread's scratch buffer (reused).
      // Kept only up to 8 MiB: a larger block (a hostile byte count) gets a buffer of its own.
      let buf = scratch;
      if (buf.length < m.length) buf = Buffer.allocUnsafe(m.length);
      if (m.length <= 8388608 && buf !== scratch) scratch = buf;
      let got = 0;
      try {
        while (got < m.length) {
          const n = fs.readSync(m.fd, buf, got, m.length - got, m.at + got);
          if (n === 0) break;
          got += n;
        }
      } catch (e) {
        parentPort.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e), code: e && e.code, read: got });
        return;
      }
      if (got < m.length) {
        parentPort.postMessage({ id: m.id, error: 'the file ends', read: got, ended: true });
        return;
      }
      input = buf.subarray(0, m.length);
    } else input = new Uint8Array(m.buffer, m.offset, m.length);
    // libdeflate's output owns its buffer, as does the spare buffer inflated into (m.out). Small
    // Buffers (zlib's) may sit in Node's shared 8 KiB slab, which must not be transferred: copy them.
    if (m.shared !== undefined) shared = m.shared;
    if (m.into !== undefined) {
      // Into the caller's shared memory at m.into (a block of wasm memory): nothing to send back but the length.
      const out = inflateInto(input, m.size, shared, m.into, m.room);
      const kept = Math.min(out.length, m.room);
      if (out.buffer !== shared || out.byteOffset !== m.into) new Uint8Array(shared, m.into, kept).set(out.subarray(0, kept));
      parentPort.postMessage({ id: m.id, length: kept });
      return;
    }
    const out = m.op !== 2 ? inflateInto(input, m.size, m.out) : compress(input, m.size);
    const own = m.op === 2 || out.buffer === m.out || out.length >= 65536 ? out : new Uint8Array(out);
    parentPort.postMessage({ id: m.id, buffer: own.buffer, offset: own.byteOffset, length: own.length }, [own.buffer]);
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e), code: e && e.code });
  }
});`;

const INFLATE = 1;
const DEFLATE = 2;
/** Read a block of a file, then inflate it (`inflateFileBlock`). */
const INFLATE_FILE = 3;
const MIN_OFFLOAD = 32 * 1024;

interface Job {
  readonly op: number;
  readonly data: Uint8Array;
  readonly arg: number;
  /** INFLATE_FILE: the open file and the block's place in it (`data` is empty). */
  readonly file?: { readonly fd: number; readonly at: number; readonly length: number };
  /** INFLATE_FILE: inflate into this shared memory from byte `at` (`InflateTarget`), not into a buffer of the job's own. */
  readonly into?: InflateTarget;
  readonly resolve: (b: Uint8Array) => void;
  readonly reject: (e: unknown) => void;
}

/**
 * `inflateFileBlock` could not read the block: the file `ended` after `bytesRead` of its bytes, or
 * the read failed (`code`: the system's).
 */
export class BlockReadError extends Error {
  constructor(
    message: string,
    readonly bytesRead: number,
    readonly ended: boolean,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'BlockReadError';
  }
}

interface Thread {
  readonly worker: Worker;
  readonly jobs: Map<number, Job>;
  /** The shared memory this thread was last sent (it keeps it: later jobs into it send only addresses). */
  shared?: SharedArrayBuffer;
}

function configuredSize(): number {
  if (!isMainThread) return 0;
  const env = process.env.RASTERFLOW_CODEC_THREADS;
  if (env !== undefined && env !== '') {
    const n = Number(env);
    return Number.isInteger(n) && n >= 0 ? Math.min(n, 16) : 0;
  }
  return Math.min(4, Math.max(1, availableParallelism() - 1));
}

/** Jobs posted to one thread at once: one running, one waiting in its port (no gap between). */
const PER_THREAD = 2;

let size: number | undefined;
const threads: Thread[] = [];
/** Jobs not yet posted, oldest (most urgent: tiles are consumed in order) first. */
const queue: Job[] = [];
let nextId = 1;
let helpScheduled = false;

/** Buffers given back by readers (`recycleInflated`) for the next file blocks to inflate into. */
const spares: ArrayBuffer[] = [];
let spareBytes = 0;
/** At most this many bytes of spare buffers are kept (a render's blocks in flight, with room). */
const SPARES_KEPT = 16 * 1024 * 1024;

/**
 * Give back the buffer of a block inflated by `inflateFileBlock` that nothing reads any more: a
 * later block is inflated into it. The caller must hold no view of it that it still reads (the
 * buffer moves to a codec thread, which detaches such views).
 */
export function recycleInflated(buffer: ArrayBufferLike): void {
  if (!(buffer instanceof ArrayBuffer) || buffer.byteLength === 0 || spareBytes + buffer.byteLength > SPARES_KEPT) return;
  if (spares.includes(buffer)) return;
  spares.push(buffer);
  spareBytes += buffer.byteLength;
}

/** A spare buffer for `size` bytes of output: at least that, at most twice (readers copy out of larger ones). */
function takeSpare(size: number): ArrayBuffer | undefined {
  for (let i = spares.length - 1; i >= 0; i--) {
    const b = spares[i]!;
    if (b.byteLength < size || b.byteLength > 2 * size) continue;
    spares.splice(i, 1);
    spareBytes -= b.byteLength;
    return b;
  }
  return undefined;
}

let inflateIntoHere: ((input: Uint8Array, size: number, out?: ArrayBufferLike, at?: number, room?: number) => Buffer) | undefined;
/** INFLATE_INTO_SOURCE on this thread (compiled once). */
function inflateInto(input: Uint8Array, size: number, out?: ArrayBufferLike, at?: number, room?: number): Buffer {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval, @typescript-eslint/no-unsafe-call -- the codec threads' own text (INFLATE_INTO_SOURCE)
  inflateIntoHere ??= (new Function(`return ${INFLATE_INTO_SOURCE}`)() as (z: typeof zlib) => typeof inflateIntoHere)(zlib);
  return inflateIntoHere!(input, size, out, at, room);
}

function spawn(): Thread | undefined {
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: libdeflateData() });
  } catch {
    size = threads.length; // cannot start threads here: work inline from now on
    return undefined;
  }
  const t: Thread = { worker, jobs: new Map() };
  worker.on(
    'message',
    (m: {
      id: number;
      buffer?: ArrayBuffer;
      offset: number;
      length: number;
      error?: string;
      code?: string;
      read?: number;
      ended?: boolean;
    }) => {
      const job = t.jobs.get(m.id);
      if (!job) return;
      t.jobs.delete(m.id);
      dispatch();
      if (t.jobs.size === 0) worker.unref();
      if (m.read !== undefined) job.reject(new BlockReadError(m.error ?? 'the read failed', m.read, m.ended === true, m.code));
      else if (m.error !== undefined) job.reject(Object.assign(new Error(m.error), m.code ? { code: m.code } : {}));
      else if (job.into) job.resolve(new Uint8Array(job.into.memory, job.into.at, m.length));
      else job.resolve(new Uint8Array(m.buffer!, m.offset, m.length));
    },
  );
  const fail = (e: unknown): void => {
    const i = threads.indexOf(t);
    if (i >= 0) threads.splice(i, 1);
    for (const job of t.jobs.values()) job.reject(e instanceof Error ? e : new Error(`codec thread stopped: ${String(e)}`));
    t.jobs.clear();
    dispatch();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`codec thread exited with code ${code}`)));
  // Unreferenced only now: adding a 'message' listener to a Worker references its port again, so
  // an earlier unref() left an idle thread holding the process open (a CLI run that never exited).
  worker.unref();
  threads.push(t);
  return t;
}

/**
 * What a codec thread needs to deflate: the compiled module, or why there is none (a thread that only inflates still starts: reading needs no libdeflate).
 */
function libdeflateData(): { module?: object; missing?: string } {
  try {
    return { module: libdeflateModule() };
  } catch (e) {
    return { missing: (e as Error).message };
  }
}

const bytesOf = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** What zlib threw: its Errors (with their `code`) as they are; anything else wrapped, as the cause. */
const zlibError = (e: unknown): Error => (e instanceof Error ? e : new Error('zlib failed', { cause: e }));

let inlineScratch = new Uint8Array(0);
/** The largest read buffer a thread keeps for the next file block (the codec threads' too). */
const SCRATCH_KEPT = 8 * 1024 * 1024;

function runInline(job: Job): void {
  try {
    let input = job.data;
    if (job.file) {
      const { fd, at, length } = job.file;
      // This thread's scratch buffer (reused: zlib has consumed it when runInline returns), kept
      // only up to SCRATCH_KEPT bytes.
      if (inlineScratch.length < length) {
        const buf = new Uint8Array(length);
        if (length <= SCRATCH_KEPT) inlineScratch = buf;
        input = buf.subarray(0, length);
      } else input = inlineScratch.subarray(0, length);
      let got = 0;
      try {
        while (got < length) {
          const n = readSync(fd, input, got, length - got, at + got);
          if (n === 0) break;
          got += n;
        }
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        job.reject(new BlockReadError(err.message, got, false, err.code));
        return;
      }
      if (got < length) {
        job.reject(new BlockReadError('the file ends', got, true));
        return;
      }
    }
    if (job.into) {
      const { memory, at, room } = job.into;
      const out = inflateInto(input, job.arg, memory, at, room);
      const kept = Math.min(out.length, room);
      if (out.buffer !== memory || out.byteOffset !== at) new Uint8Array(memory, at, kept).set(out.subarray(0, kept));
      job.resolve(new Uint8Array(memory, at, kept));
      return;
    }
    job.resolve(
      job.op === DEFLATE
        ? deflateZlib(input, job.arg)
        : bytesOf(inflateInto(input, job.arg, job.op === INFLATE_FILE ? takeSpare(job.arg) : undefined)),
    );
  } catch (e) {
    job.reject(e);
  }
}

/** Post queued jobs to threads with room; when jobs still wait, let this thread help once idle. */
function dispatch(): void {
  for (const t of threads) {
    while (t.jobs.size < PER_THREAD && queue.length > 0) {
      const job = queue.shift()!;
      const id = nextId++;
      t.jobs.set(id, job);
      if (t.jobs.size === 1) t.worker.ref();
      const d = job.data;
      if (job.file && job.into) {
        const m = { id, op: job.op, fd: job.file.fd, at: job.file.at, length: job.file.length, size: job.arg };
        // The memory goes once (its clone costs a message more than the addresses).
        const first = t.shared !== job.into.memory;
        t.shared = job.into.memory;
        t.worker.postMessage({ ...m, ...(first ? { shared: job.into.memory } : {}), into: job.into.at, room: job.into.room });
      } else if (job.file) {
        const out = takeSpare(job.arg);
        const m = { id, op: job.op, fd: job.file.fd, at: job.file.at, length: job.file.length, size: job.arg, out };
        t.worker.postMessage(m, out ? [out] : []);
      } else
        t.worker.postMessage({ id, op: job.op, buffer: d.buffer, offset: d.byteOffset, length: d.byteLength, size: job.arg }, [
          d.buffer as ArrayBuffer,
        ]);
    }
  }
  if (queue.length > 0 && !helpScheduled) {
    helpScheduled = true;
    setImmediate(help);
  }
}

/**
 * This thread takes the most urgent waiting job itself, one per turn of the event loop: a
 * setImmediate callback runs only after the work already ready here (kernels of decoded tiles),
 * so the main thread inflates only what it would otherwise sit waiting for. With a busy or slow
 * second core the work shifts here by itself; results are the same either way.
 */
function help(): void {
  helpScheduled = false;
  const job = queue.shift();
  if (job) runInline(job);
  dispatch();
}

function submit(op: number, data: Uint8Array, arg: number, transfer: boolean): Promise<Uint8Array> {
  size ??= configuredSize();
  while (threads.length < size) if (!spawn()) break;
  // Transfer the caller's buffer when it gives it up and the view covers it; otherwise a copy.
  // (A copy by `new Uint8Array`: a Buffer's `slice` is a view, whose transfer would detach the caller's bytes.)
  const own = transfer && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength ? data : new Uint8Array(data);
  return new Promise((resolve, reject) => {
    const job: Job = { op, data: own, arg, resolve, reject };
    if (threads.length === 0) runInline(job);
    else {
      queue.push(job);
      dispatch();
    }
  });
}

/**
 * Inflate a zlib stream expected to give `expected` bytes. With `transfer`, `data` may be
 * detached (the caller no longer uses it).
 */
export function inflateBlock(data: Uint8Array, expected: number, transfer = false): Promise<Uint8Array> {
  // The output is capped near `expected` (one chunk): a stream that inflates further (a
  // decompression bomb, a few KB giving gigabytes) fails with zlib's ERR_BUFFER_TOO_LARGE as
  // soon as it passes the cap, instead of growing a buffer to its full size.
  // Decision: more output than the block holds is an error (libtiff ignores the surplus), since
  // no writer produces it; the slack (64 bytes, at least 64 KiB in all) tolerates padding.
  const chunkSize = Math.max(65536, expected + 64);
  if (expected >= MIN_OFFLOAD) return submit(INFLATE, data, chunkSize, transfer);
  try {
    return Promise.resolve(bytesOf(zlib.inflateSync(data, { chunkSize, maxOutputLength: chunkSize })));
  } catch (e) {
    return Promise.reject(zlibError(e));
  }
}

const NO_BYTES = new Uint8Array(0);

/**
 * Where `inflateFileBlock` may inflate a block instead of into a buffer of its own: `room` bytes
 * (at least the block's expected bytes) of a SharedArrayBuffer from byte `at` (a block of the wasm
 * kernels' memory, which the codec threads then write into directly), which nothing else uses until
 * the promise settles. The block's bytes past `room` (up to the output cap, padding) are dropped:
 * the promise gives a view of the target's first bytes.
 */
export interface InflateTarget {
  readonly memory: SharedArrayBuffer;
  readonly at: number;
  readonly room: number;
}

/**
 * Read `length` bytes at `at` of the open file `fd` and inflate them (a zlib stream expected to give
 * `expected` bytes, capped as `inflateBlock`'s): both on a codec thread, which reads into a buffer
 * of its own, so this thread neither reads nor holds the compressed bytes; inline (a synchronous
 * read) when no thread runs, or when this thread helps (`help`). The caller keeps `fd` open until
 * the promise settles. A failed or short read rejects with a BlockReadError; zlib's failures as
 * `inflateBlock`'s. With `into`, the block is inflated there (the promise gives a view of it),
 * by the thread or here; a target with less room than `expected` rejects with a RangeError.
 */
export function inflateFileBlock(fd: number, at: number, length: number, expected: number, into?: InflateTarget): Promise<Uint8Array> {
  size ??= configuredSize();
  while (threads.length < size) if (!spawn()) break;
  const chunkSize = Math.max(65536, expected + 64);
  if (into !== undefined && (into.room < expected || into.memory.byteLength - into.at < into.room))
    return Promise.reject(new RangeError('the inflate target is smaller than the block'));
  return new Promise((resolve, reject) => {
    const job: Job = {
      op: INFLATE_FILE,
      data: NO_BYTES,
      arg: chunkSize,
      file: { fd, at, length },
      ...(into ? { into } : {}),
      resolve,
      reject,
    };
    if (threads.length === 0) runInline(job);
    else {
      queue.push(job);
      dispatch();
    }
  });
}

/** Deflate (zlib stream, libdeflate: deflate.ts) at `level`. With `transfer`, `data` may be detached. */
export function deflateBlock(data: Uint8Array, level: number, transfer = false): Promise<Uint8Array> {
  if (data.byteLength >= MIN_OFFLOAD) return submit(DEFLATE, data, level, transfer);
  try {
    return Promise.resolve(deflateZlib(data, level));
  } catch (e) {
    return Promise.reject(zlibError(e));
  }
}

/**
 * Start the codec threads now (no-op when they run, or when work is inline): called when a
 * DEFLATE file is opened or created, so a thread's start-up overlaps planning, not the first tiles.
 */
export function warmCodecThreads(): void {
  size ??= configuredSize();
  while (threads.length < size) if (!spawn()) return;
}

/** Threads running now (for tests). */
export const codecThreadCount = (): number => threads.length;

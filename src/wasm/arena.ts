/**
 * Blocks of wasm linear memory for the kernels' planes. The kernels never allocate; the TypeScript
 * side takes blocks here: planes that live in wasm memory through a chain (planes.ts
 * `TileBlocks`: the evaluator's source reads and function outputs), and the blocks a kernel call
 * copies planes into when they live elsewhere (`WasmCall`).
 *
 * Growth: views on a wasm memory detach when it grows, and planes living there are views held by
 * the evaluator, the kernels and the writers. An arena made with `grow: false` (the module's,
 * module.ts: its memory is reserved once at load) never grows the memory: a request past the
 * memory's size gets undefined and the caller falls back (to an ordinary JS plane, or to the
 * kernel's TypeScript path). With `grow: true` (tests) it grows as needed.
 *
 * Blocks come in power-of-two size classes (at least 4 KiB, so every block is 16-byte aligned for
 * v128 loads) and go back to a free list of their class. A request the free list cannot serve is
 * carved from the top of the used memory (growing the memory when allowed). When no block is in
 * use and a request finds no free block of its class (the tile size changed), the arena starts
 * over from its base: memory cannot shrink, but it is then reused rather than extended. One block
 * held at a time spans less than twice the largest block (arena.test.ts checks it). With several
 * held at once (a tile's planes, tiles in flight), the span is bounded by the most bytes held at
 * once, per size class: the pages the arena touched, so its share of RSS (a 256-px Hillshade
 * render with 16 tiles in flight: 12.6 MiB). A request past `limit` bytes, past `maxLive`, or one
 * the memory cannot hold, gets undefined and the caller falls back.
 */

/** The part of WasmMemory the arena uses (the project's lib settings carry no WebAssembly types). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

const MIN_CLASS = 4096;
const PAGE = 65536;

/** Memory the arena may use: wasm32 addresses 4 GiB; keep clear of the top. */
const DEFAULT_LIMIT = 3 * 1024 ** 3;

export class WasmArena {
  private readonly memory: WasmMemory;
  private readonly base: number;
  private readonly limit: number;
  private top: number;
  private readonly free = new Map<number, number[]>();
  /** Live blocks: address -> size class. */
  private readonly live = new Map<number, number>();
  private liveBytes = 0;
  private readonly grows: boolean;

  /**
   * `options.base`: the first address the arena may use (default: the memory's current size, above
   * whatever the module itself holds), page aligned, never 0. `options.grow` (default true): whether
   * the arena may grow the memory.
   */
  constructor(memory: WasmMemory, limit = DEFAULT_LIMIT, options: { readonly grow?: boolean; readonly base?: number } = {}) {
    this.memory = memory;
    this.base = Math.max(PAGE, Math.ceil((options.base ?? memory.buffer.byteLength) / PAGE) * PAGE);
    this.top = this.base;
    this.limit = limit;
    this.grows = options.grow ?? true;
  }

  /**
   * A block of at least `bytes` bytes, 16-byte aligned; undefined when memory cannot hold it, or
   * when the blocks in use would pass `maxLive` bytes (the evaluator's budget for resident planes).
   */
  alloc(bytes: number, maxLive = Infinity): number | undefined {
    const cls = sizeClass(bytes);
    if (this.liveBytes + cls > maxLive) return undefined;
    const list = this.free.get(cls);
    let ptr = list?.pop();
    if (ptr === undefined) {
      if (this.live.size === 0 && this.top > this.base) {
        this.free.clear();
        this.top = this.base;
      }
      const end = this.top + cls;
      if (end > this.limit) return undefined;
      if (end > this.memory.buffer.byteLength) {
        if (!this.grows) return undefined;
        try {
          this.memory.grow(Math.ceil((end - this.memory.buffer.byteLength) / PAGE));
        } catch {
          return undefined;
        }
      }
      ptr = this.top;
      this.top = end;
    }
    this.live.set(ptr, cls);
    this.liveBytes += cls;
    return ptr;
  }

  /** Give a block back (to its class's free list). */
  release(ptr: number): void {
    const cls = this.live.get(ptr);
    if (cls === undefined) throw new Error(`wasm arena: block ${ptr} is not allocated`);
    this.live.delete(ptr);
    this.liveBytes -= cls;
    let list = this.free.get(cls);
    if (list === undefined) this.free.set(cls, (list = []));
    list.push(ptr);
  }

  /** The memory's current buffer (views on it detach when the memory grows: take them after alloc). */
  get buffer(): ArrayBuffer {
    return this.memory.buffer;
  }

  /** Whether `ptr` is the address of a block in use. */
  isLive(ptr: number): boolean {
    return this.live.has(ptr);
  }

  /**
   * Bytes of memory the arena spans now (base to top: the pages it has touched, at most), blocks
   * in use and their bytes (by size class), for tests and diagnostics.
   */
  stats(): { readonly spanBytes: number; readonly liveBlocks: number; readonly liveBytes: number; readonly memoryBytes: number } {
    return {
      spanBytes: this.top - this.base,
      liveBlocks: this.live.size,
      liveBytes: this.liveBytes,
      memoryBytes: this.memory.buffer.byteLength,
    };
  }
}

/** The size class (bytes actually held) of a request of `bytes`. */
export function sizeClass(bytes: number): number {
  let c = MIN_CLASS;
  while (c < bytes) c *= 2;
  return c;
}

/**
 * Blocks of wasm linear memory for the kernels' planes. The kernels never allocate; the TypeScript
 * side takes blocks here, copies its planes in, calls the kernels and gives the blocks back.
 *
 * Blocks come in power-of-two size classes (at least 4 KiB, so every block is 16-byte aligned for
 * v128 loads) and go back to a free list of their class. A request the free list cannot serve is
 * carved from the top of the used memory, growing the memory when needed. When no block is in use
 * and a request finds no free block of its class (the tile size changed), the arena starts over
 * from its base: memory cannot shrink, but it is then reused rather than extended. The terrain
 * path holds one block per kernel call (its planes), so the memory the arena spans is the largest
 * such block's class: less than twice the largest tile's planes, whatever the sequence of tile
 * sizes (arena.test.ts checks it). With several blocks held at once (chains, a later step), the
 * span is bounded by the blocks held at once plus one free block per size class. A request past
 * `limit` bytes, or one the engine cannot grow the memory for, gets undefined and the caller runs
 * its TypeScript path.
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

  constructor(memory: WasmMemory, limit = DEFAULT_LIMIT) {
    this.memory = memory;
    // Above whatever the module itself holds (its data, if any), page aligned; never address 0.
    this.base = Math.max(PAGE, Math.ceil(memory.buffer.byteLength / PAGE) * PAGE);
    this.top = this.base;
    this.limit = limit;
  }

  /** A block of at least `bytes` bytes, 16-byte aligned; undefined when memory cannot hold it. */
  alloc(bytes: number): number | undefined {
    const cls = sizeClass(bytes);
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
    return ptr;
  }

  /** Give a block back (to its class's free list). */
  release(ptr: number): void {
    const cls = this.live.get(ptr);
    if (cls === undefined) throw new Error(`wasm arena: block ${ptr} is not allocated`);
    this.live.delete(ptr);
    let list = this.free.get(cls);
    if (list === undefined) this.free.set(cls, (list = []));
    list.push(ptr);
  }

  /** The memory's current buffer (views on it detach when the memory grows: take them after alloc). */
  get buffer(): ArrayBuffer {
    return this.memory.buffer;
  }

  /** Bytes of memory the arena spans now (base to top) and blocks in use, for tests and diagnostics. */
  stats(): { readonly spanBytes: number; readonly liveBlocks: number; readonly memoryBytes: number } {
    return { spanBytes: this.top - this.base, liveBlocks: this.live.size, memoryBytes: this.memory.buffer.byteLength };
  }
}

function sizeClass(bytes: number): number {
  let c = MIN_CLASS;
  while (c < bytes) c *= 2;
  return c;
}

/**
 * A small LRU of decoded TIFF blocks shared by every source of one process (one per worker
 * thread), keyed by file identity (path, size, mtime; or URL), image and block index. Entries are
 * promises, so concurrent requests for one block (neighbouring output tiles, halos) decode it
 * once. Bounded by bytes: RASTERFLOW_TILE_CACHE_MB (default 64; 0 disables it).
 *
 * Readers use a block through `use`, which keeps it while their callback runs: a block dropped
 * from the cache (evicted, or never kept) is `recycle`d once no callback holds it, so its buffer
 * can take a later block (codec-pool.ts `recycleInflated`).
 */
import type { SampleArray } from './decoders.js';

/** A decoded block as the cache holds it. */
export interface DecodedBlock {
  readonly data: SampleArray;
  readonly byteLength: number;
  /**
   * Whether the block may hold NaN or NoData samples (padding included), found by the first
   * reader that needs to know (geotiff-source.ts); undefined until then. A block without any
   * needs no per-pixel mask scan.
   */
  invalid?: boolean;
  /**
   * The block's buffer is a scratch buffer, read into again and again (geotiff-source.ts
   * `readScratch`): views of its rows are worth keeping for the next block read into it. A cached
   * block's rows are copied whole once (by the tile it belongs to), so views kept for them would
   * only be more for the collector to trace.
   */
  readonly reused?: boolean;
  /** Give the block's buffer back for reuse: called once nothing reads the block any more. */
  readonly recycle?: () => void;
}

interface Entry<T> {
  readonly value: Promise<T>;
  bytes: number;
  /** The value once resolved. */
  resolved?: T;
  /** Callbacks of `use` waiting for or running on the value. */
  pins: number;
  /** Out of the cache: recycled when the last pin goes. */
  dropped: boolean;
}

type Cached = { readonly byteLength: number; readonly recycle?: () => void };

export class TileCache<T extends Cached = DecodedBlock> {
  private readonly entries = new Map<string, Entry<T>>();
  private used = 0;

  constructor(public maxBytes: number) {}

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.used;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /**
   * `fn` on the cached block, or on `load()`'s (remembered once it resolves; failures are not
   * kept). The block is not recycled while `fn` runs: `fn` must not keep it (nor views of its
   * buffer) for later.
   */
  use<R>(key: string, load: () => Promise<T>, fn: (value: T) => R): Promise<R> {
    let entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    } else {
      entry = { value: load(), bytes: 0, pins: 0, dropped: this.maxBytes <= 0 };
      const e = entry;
      if (!e.dropped) this.entries.set(key, e);
      e.value.then(
        (a) => {
          e.resolved = a;
          if (this.entries.get(key) !== e) return;
          e.bytes = a.byteLength;
          this.used += a.byteLength;
          this.evict();
        },
        () => {
          if (this.entries.get(key) === e) this.entries.delete(key);
        },
      );
    }
    const e = entry;
    e.pins++;
    return e.value.then(
      (v) => {
        try {
          return fn(v);
        } finally {
          this.unpin(e);
        }
      },
      (err: unknown) => {
        this.unpin(e);
        throw err;
      },
    );
  }

  private unpin(e: Entry<T>): void {
    e.pins--;
    if (e.dropped && e.pins === 0) e.resolved?.recycle?.();
  }

  /** Out of the cache: recycled now when no `use` holds it (else when the last one ends). */
  private drop(key: string, e: Entry<T>): void {
    this.used -= e.bytes;
    this.entries.delete(key);
    e.dropped = true;
    if (e.pins === 0) e.resolved?.recycle?.();
  }

  /** Drop every entry whose key starts with `prefix` (a closed or rewritten file). */
  dropPrefix(prefix: string): void {
    for (const [k, e] of this.entries) if (k.startsWith(prefix)) this.drop(k, e);
  }

  clear(): void {
    for (const [k, e] of this.entries) this.drop(k, e);
    this.used = 0;
  }

  private evict(): void {
    for (const [k, e] of this.entries) {
      if (this.used <= this.maxBytes) break;
      if (e.bytes === 0) continue; // still loading
      this.drop(k, e);
    }
  }
}

const MIB = 1024 * 1024;
const envMb = process.env.RASTERFLOW_TILE_CACHE_MB;
const configuredMb = envMb === undefined || envMb === '' ? undefined : Number(envMb);
const configured = (configuredMb !== undefined && Number.isFinite(configuredMb) && configuredMb >= 0 ? configuredMb : 64) * MIB;
/** The process-wide cache of decoded blocks. */
export const tileCache = new TileCache<DecodedBlock>(configured);

/** Bytes of one row of blocks (full width, every plane) of each image open now. */
const blockRows = new Set<{ readonly bytes: number }>();

/**
 * Say how many bytes one row of blocks of an open image holds, decoded (fitTileCacheToPass sizes
 * the cache from them); the function returned forgets it (the image is closed).
 */
export function noteBlockRow(bytes: number): () => void {
  const entry = { bytes };
  blockRows.add(entry);
  return () => void blockRows.delete(entry);
}

/**
 * Size the cache for one pass over the images open now, in order of rows (a whole-raster
 * render: tiles row after row, each with a halo reaching into the rows of blocks above and below,
 * several tiles in flight): three rows of blocks of every image, at least 8 MiB, at most 64 MiB;
 * unchanged where RASTERFLOW_TILE_CACHE_MB sets the size. The blocks a pass has done with then
 * leave the cache early and their buffers take the next blocks (`recycle`), where a cache larger
 * than the pass needs fills fresh memory first (a page fault per 4 KiB). Three rows decode each
 * block once in a render of 256-px tiles, 16 in flight (a tile reads its window, halo rows
 * included, when it starts); two decode some twice.
 */
export function fitTileCacheToPass(): void {
  if (configuredMb !== undefined) return;
  let rows = 0;
  for (const b of blockRows) rows += b.bytes;
  tileCache.maxBytes = Math.min(configured, Math.max(8 * MIB, 3 * rows));
}

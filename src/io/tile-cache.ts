/**
 * A small LRU of decoded TIFF blocks shared by every source of one process (one per worker
 * thread), keyed by file identity (path, size, mtime; or URL), image and block index. Entries are
 * promises, so concurrent requests for one block (neighbouring output tiles, halos) decode it
 * once. Bounded by bytes: RASTERFLOW_TILE_CACHE_MB (default 64; 0 disables it).
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
}

interface Entry<T> {
  readonly value: Promise<T>;
  bytes: number;
}

export class TileCache<T extends { readonly byteLength: number } = DecodedBlock> {
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

  /** The cached block, or `load()`'s, remembered once it resolves (failures are not kept). */
  get(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const value = load();
    if (this.maxBytes <= 0) return value;
    const entry: Entry<T> = { value, bytes: 0 };
    this.entries.set(key, entry);
    value.then(
      (a) => {
        if (this.entries.get(key) !== entry) return;
        entry.bytes = a.byteLength;
        this.used += a.byteLength;
        this.evict();
      },
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return value;
  }

  /** Drop every entry whose key starts with `prefix` (a closed or rewritten file). */
  dropPrefix(prefix: string): void {
    for (const [k, e] of this.entries) {
      if (!k.startsWith(prefix)) continue;
      this.used -= e.bytes;
      this.entries.delete(k);
    }
  }

  clear(): void {
    this.entries.clear();
    this.used = 0;
  }

  private evict(): void {
    for (const [k, e] of this.entries) {
      if (this.used <= this.maxBytes) break;
      if (e.bytes === 0) continue; // still loading
      this.used -= e.bytes;
      this.entries.delete(k);
    }
  }
}

const envMb = Number(process.env.RASTERFLOW_TILE_CACHE_MB);
/** The process-wide cache of decoded blocks. */
export const tileCache = new TileCache<DecodedBlock>((Number.isFinite(envMb) && envMb >= 0 ? envMb : 64) * 1024 * 1024);

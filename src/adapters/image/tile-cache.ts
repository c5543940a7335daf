/**
 * The image service's disk tile cache: `<dataDir>/tile-cache/<service key>/<generation>/<level>/<row>/<col>.<ext>`.
 *
 * - `<service key>` is the service's key (`folder/name.ImageServer`) with every character outside
 *   `[A-Za-z0-9._-]` escaped, so a key is one or two safe path segments.
 * - `<generation>` is `<service hash>.<rule hash>`: the service hash is a SHA-256 of the service
 *   record's JSON (any edit of the record — properties, rule, path — gives a new hash), the rule
 *   hash one of the tile rule, scheme and format. A tile is never served from another generation.
 * - Invalidation: the first lookup under a new service hash deletes the folders of every other
 *   service hash of that service (stale generations), and `dropService` deletes the whole service
 *   folder (deletion of the service). Deletion is best-effort and never fails a request.
 * - ETag: a strong validator, the first 32 hex digits of the tile bytes' SHA-256, quoted. Files
 *   are written to a temporary name and renamed, so a reader never sees half a tile.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const sha256Hex = (text: string | Uint8Array): string => createHash('sha256').update(text).digest('hex');

/** A stable JSON text: object keys sorted, so equal values hash equal. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(
        Object.keys(o)
          .sort()
          .map((k) => [k, o[k]]),
      );
    }
    return v;
  });
}

/** Quoted strong ETag of tile bytes. */
export const etagOf = (bytes: Uint8Array): string => `"${sha256Hex(bytes).slice(0, 32)}"`;

/** Whether an `If-None-Match` header matches `etag` (a list, `*`, or weak forms compared weakly). */
export function matchesIfNoneMatch(header: string | null, etag: string): boolean {
  if (header === null) return false;
  const t = header.trim();
  if (t === '*') return true;
  return t
    .split(',')
    .map((s) => s.trim().replace(/^W\//, ''))
    .includes(etag);
}

/** A service key as path segments that cannot escape the cache folder. */
export function safeServiceKey(key: string): string {
  return key
    .split('/')
    .map((part) =>
      part
        .replace(/[^A-Za-z0-9._-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
        .replace(/^\.+/, (d) => '%2e'.repeat(d.length)),
    )
    .join('/');
}

export interface CachedTile {
  readonly bytes: Uint8Array;
  readonly etag: string;
}

export interface TileAddress {
  readonly serviceKey: string;
  /** Hash of the service record (see `serviceHash`). */
  readonly serviceHash: string;
  /** Hash of the rule, scheme and format (see `ruleHash`). */
  readonly ruleHash: string;
  readonly level: number;
  readonly row: number;
  readonly col: number;
  readonly ext: string;
}

/** Hash of a service record's JSON (keys sorted), 16 hex digits. */
export const serviceHash = (record: unknown): string => sha256Hex(stableJson(record)).slice(0, 16);

/** Hash of what else decides a tile's bytes, 16 hex digits. */
export const ruleHash = (parts: unknown): string => sha256Hex(stableJson(parts)).slice(0, 16);

export class TileCache {
  /** Service key -> the service hash whose stale siblings were already swept. */
  private readonly swept = new Map<string, string>();

  constructor(readonly root: string) {}

  private serviceDir(key: string): string {
    return join(this.root, safeServiceKey(key));
  }

  private path(a: TileAddress): string {
    return join(this.serviceDir(a.serviceKey), `${a.serviceHash}.${a.ruleHash}`, String(a.level), String(a.row), `${a.col}.${a.ext}`);
  }

  /** The cached tile, or undefined. Sweeps stale generations of the service on first use of a new hash. */
  async get(a: TileAddress): Promise<CachedTile | undefined> {
    await this.sweep(a.serviceKey, a.serviceHash);
    try {
      const bytes = new Uint8Array(await readFile(this.path(a)));
      return { bytes, etag: etagOf(bytes) };
    } catch {
      return undefined;
    }
  }

  async put(a: TileAddress, bytes: Uint8Array): Promise<CachedTile> {
    const path = this.path(a);
    const dir = join(path, '..');
    await mkdir(dir, { recursive: true });
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, bytes);
    await rename(tmp, path);
    return { bytes, etag: etagOf(bytes) };
  }

  /** Delete every generation of `key` whose service hash is not `current`. */
  async sweep(key: string, current: string): Promise<void> {
    if (this.swept.get(key) === current) return;
    this.swept.set(key, current);
    const dir = this.serviceDir(key);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    await Promise.all(
      names
        .filter((n) => !n.startsWith(`${current}.`))
        .map((n) => rm(join(dir, n), { recursive: true, force: true }).catch(() => undefined)),
    );
  }

  /** Delete everything cached for `key` (the service was deleted). */
  async dropService(key: string): Promise<void> {
    this.swept.delete(key);
    await rm(this.serviceDir(key), { recursive: true, force: true }).catch(() => undefined);
  }
}

import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  etagOf,
  matchesIfNoneMatch,
  ruleHash,
  safeServiceKey,
  serviceHash,
  stableJson,
  TileCache,
  type TileAddress,
} from './tile-cache.js';

const at = (over: Partial<TileAddress> = {}): TileAddress => ({
  serviceKey: 'f/dem.ImageServer',
  serviceHash: 'aaaa',
  ruleHash: 'rrrr',
  level: 3,
  row: 4,
  col: 5,
  ext: 'png',
  ...over,
});

describe('tile cache', () => {
  it('misses, stores under <service key>/<generation>/<level>/<row>/<col>, hits with the content ETag', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rf-tc-'));
    const cache = new TileCache(root);
    expect(await cache.get(at())).toBeUndefined();
    const bytes = new Uint8Array([1, 2, 3]);
    const put = await cache.put(at(), bytes);
    expect(put.etag).toBe(etagOf(bytes));
    expect(readdirSync(join(root, 'f', 'dem.ImageServer', 'aaaa.rrrr', '3', '4'))).toEqual(['5.png']);
    const hit = await cache.get(at());
    expect(hit?.etag).toBe(put.etag);
    expect([...hit!.bytes]).toEqual([1, 2, 3]);
    expect(await cache.get(at({ ruleHash: 'other' }))).toBeUndefined();
  });

  it('a new service hash sweeps the old generations; dropService removes the service', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rf-tc-'));
    const cache = new TileCache(root);
    await cache.put(at(), new Uint8Array([1]));
    await cache.put(at({ ruleHash: 'r2' }), new Uint8Array([2]));
    expect(await cache.get(at({ serviceHash: 'bbbb' }))).toBeUndefined();
    expect(readdirSync(join(root, 'f', 'dem.ImageServer'))).toEqual([]);
    await cache.put(at({ serviceHash: 'bbbb' }), new Uint8Array([3]));
    await cache.dropService('f/dem.ImageServer');
    expect(readdirSync(join(root, 'f'))).toEqual([]);
  });

  it('keeps service keys inside the cache folder', () => {
    expect(safeServiceKey('../x/..ImageServer')).not.toContain('..');
    expect(safeServiceKey('a b/c.ImageServer')).toBe('a%20b/c.ImageServer');
  });

  it('hashes records independently of key order', () => {
    expect(stableJson({ b: 1, a: { d: 2, c: 3 } })).toBe('{"a":{"c":3,"d":2},"b":1}');
    expect(serviceHash({ a: 1, b: 2 })).toBe(serviceHash({ b: 2, a: 1 }));
    expect(ruleHash({ a: 1 })).not.toBe(ruleHash({ a: 2 }));
  });

  it('matches If-None-Match lists, weak forms and *', () => {
    expect(matchesIfNoneMatch('"x"', '"x"')).toBe(true);
    expect(matchesIfNoneMatch('"y", W/"x"', '"x"')).toBe(true);
    expect(matchesIfNoneMatch('*', '"x"')).toBe(true);
    expect(matchesIfNoneMatch('"y"', '"x"')).toBe(false);
    expect(matchesIfNoneMatch(null, '"x"')).toBe(false);
  });
});

/**
 * The lean GeoTIFF reader (tiff-reader.ts, decoders.ts, tile-cache.ts through openGeoTiff) against
 * GDAL on real files: test/gdal-tiffs.py makes a matrix of GeoTIFFs with GDAL 3.6 (every pixel
 * type, tiled and stripped, little and big endian, none / DEFLATE / LZW / PackBits / ZSTD / LERC /
 * JPEG, predictors 2 and 3, NBITS 1-24 and half floats, pixel and band interleaving, BigTIFF,
 * sparse blocks, overviews, an internal mask, a COG) and dumps GDAL's ReadAsArray of each; every
 * pixel we read must equal GDAL's (JPEG within 2 DN: two decoders of one lossy stream). Skipped,
 * with a message, when GDAL's python bindings are missing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lzwDecode, packBitsDecode } from './decoders.js';
import { openGeoTiff } from './geotiff-source.js';
import { fitTileCacheToPass, noteBlockRow, TileCache, tileCache } from './tile-cache.js';
import { GEO_KEY_NAMES } from './tiff-reader.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = resolve(import.meta.dirname, '../../test/gdal-tiffs.py');
const haveGdal = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'from osgeo import gdal; import numpy'], { encoding: 'utf8' }).status === 0;
if (!haveGdal)
  console.warn(
    'tiff-reader.test.ts: GDAL python bindings (/usr/bin/python3 -c "from osgeo import gdal") not found; the GDAL comparisons are SKIPPED',
  );

interface Case {
  name: string;
  path: string;
  pixelType: string;
  width: number;
  height: number;
  bands: number;
  type: string;
  signedByte: boolean;
  geotransform: number[];
  epsg: string | null;
  nodata: number | null;
  nbits: string | null;
  dtype: string;
  overviews: [number, number][];
  maskFlags: number;
}

const ARRAYS: Record<string, (b: ArrayBuffer) => ArrayLike<number>> = {
  uint8: (b) => new Uint8Array(b),
  int8: (b) => new Int8Array(b),
  uint16: (b) => new Uint16Array(b),
  int16: (b) => new Int16Array(b),
  uint32: (b) => new Uint32Array(b),
  int32: (b) => new Int32Array(b),
  float32: (b) => new Float32Array(b),
  float64: (b) => new Float64Array(b),
  complex64: (b) => new Float32Array(b),
  complex128: (b) => new Float64Array(b),
};

function raw(file: string, dtype: string): ArrayLike<number> {
  const buf = readFileSync(file);
  return ARRAYS[dtype]!(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

function expectedType(c: Case): string {
  const nb = c.nbits === null ? undefined : Number(c.nbits);
  if (c.type === 'Byte') return c.signedByte ? 'S8' : nb === 1 ? 'U1' : nb === 2 ? 'U2' : nb === 4 ? 'U4' : 'U8';
  return (
    {
      UInt16: 'U16',
      Int16: 'S16',
      UInt32: 'U32',
      Int32: 'S32',
      Float32: 'F32',
      Float64: 'F64',
      CInt16: 'C64',
      CInt32: 'C128',
      CFloat32: 'C64',
      CFloat64: 'C128',
    } as Record<string, string>
  )[c.type]!;
}

function firstMismatch(a: ArrayLike<number>, e: ArrayLike<number>, tol: number): string | undefined {
  if (a.length !== e.length) return `length ${a.length} != ${e.length}`;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = e[i]!;
    if (Number.isNaN(x) && Number.isNaN(y)) continue;
    if (!(Math.abs(x - y) <= tol)) return `at ${i}: ${x} != ${y}`;
  }
  return undefined;
}

describe.skipIf(!haveGdal)('openGeoTiff reads what GDAL reads (files made by test/gdal-tiffs.py)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rasterflow-gdal-tiffs-'));
  let cases: Case[] = [];
  beforeAll(() => {
    const r = spawnSync(PYTHON, [SCRIPT, 'make', dir], { encoding: 'utf8', env: { ...process.env, GDAL_PAM_ENABLED: 'NO' } });
    if (r.status !== 0) throw new Error(r.stderr);
    cases = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Case[];
  }, 120_000);

  it('every file: info and every pixel of every band equal GDAL, masks and overviews too', async () => {
    expect(cases.length).toBeGreaterThan(150);
    const failures: string[] = [];
    for (const c of cases) {
      const s = await openGeoTiff(c.path);
      try {
        const { info } = s;
        const [x0, sx, , y0, , sy] = c.geotransform as [number, number, number, number, number, number];
        const want = { width: c.width, height: c.height, bandCount: c.bands, pixelType: expectedType(c) };
        const got = { width: info.width, height: info.height, bandCount: info.bandCount, pixelType: info.pixelType };
        if (JSON.stringify(got) !== JSON.stringify(want))
          failures.push(`${c.name}: info ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
        if (info.extent.xmin !== x0 || info.extent.ymax !== y0 || info.cellSize.x !== sx || info.cellSize.y !== -sy)
          failures.push(`${c.name}: grid`);
        if (c.epsg && String(info.spatialReference?.wkid) !== c.epsg)
          failures.push(`${c.name}: EPSG ${info.spatialReference?.wkid} != ${c.epsg}`);
        if ((c.nodata ?? undefined) !== info.noData) failures.push(`${c.name}: NoData ${info.noData} != ${c.nodata}`);
        const whole = await s.read({ x: 0, y: 0, width: c.width, height: c.height });
        const tol = c.name.includes('jpeg') ? 2 : 0;
        for (let b = 0; b < c.bands; b++) {
          const bad = firstMismatch(whole.bands[b]!, raw(join(dir, `${c.name}.b${b}.raw`), c.dtype), tol);
          if (bad) failures.push(`${c.name} band ${b + 1}: ${bad}`);
        }
        // A window across block edges and past the raster's bottom-right corner.
        const win = { x: 13, y: 5, width: c.width, height: c.height };
        const part = await s.read(win);
        for (let b = 0; b < c.bands; b++) {
          const k = info.pixelType.startsWith('C') ? 2 : 1;
          const plane = whole.bands[b]!;
          for (let y = 0; y < win.height; y++) {
            for (let x = 0; x < win.width; x++) {
              const i = y * win.width + x;
              const inside = x + win.x < c.width && y + win.y < c.height;
              const v = part.bands[b]![k * i]!;
              const e = inside ? plane[k * ((y + win.y) * c.width + x + win.x)]! : 0;
              if (!(v === e || (Number.isNaN(v) && Number.isNaN(e))) || (!inside && part.mask[i] !== 0)) {
                failures.push(`${c.name}: window pixel (${x}, ${y}) band ${b + 1}: ${v} != ${e}`);
                y = win.height;
                break;
              }
            }
          }
        }
        if (c.maskFlags === 2) {
          const m = raw(join(dir, `${c.name}.mask.raw`), 'uint8');
          const bad = firstMismatch(
            Array.from(whole.mask),
            Array.from(m, (v) => (v === 0 ? 0 : 1)),
            0,
          );
          if (bad) failures.push(`${c.name} mask: ${bad}`);
        }
        expect(
          s.overviews?.map((o) => [o.width, o.height]),
          c.name,
        ).toEqual(c.overviews);
        if (c.overviews.length > 0) {
          const [ow, oh] = c.overviews[0]!;
          const ov = await s.overview!(1).read({ x: 0, y: 0, width: ow, height: oh });
          for (let b = 0; b < c.bands; b++) {
            const bad = firstMismatch(ov.bands[b]!, raw(join(dir, `${c.name}.ov0.b${b}.raw`), c.dtype), 0);
            if (bad) failures.push(`${c.name} overview band ${b + 1}: ${bad}`);
          }
        }
      } catch (e) {
        failures.push(`${c.name}: ${(e as Error).message}`);
      } finally {
        await s.close();
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('readDownsampled picks the overview GDAL would and samples it by nearest neighbour', async () => {
    const s = await openGeoTiff(join(dir, 'F32-cog.tif'));
    expect(s.overviews).toEqual([
      { width: 150, height: 100 },
      { width: 75, height: 50 },
    ]);
    const ov2 = await s.overview!(2).read({ x: 0, y: 0, width: 75, height: 50 });
    // A 4x reduction reads the 75 x 50 overview exactly.
    const d = await s.readDownsampled!({ x: 0, y: 0, width: 300, height: 200 }, 75, 50);
    expect(Array.from(d.bands[0]!)).toEqual(Array.from(ov2.bands[0]!));
    // A 3x reduction uses the 150 x 100 overview (the 2x one), not the 4x one.
    const ov1 = await s.overview!(1).read({ x: 0, y: 0, width: 150, height: 100 });
    const d3 = await s.readDownsampled!({ x: 0, y: 0, width: 300, height: 200 }, 100, 67);
    const col = Math.floor(((10 + 0.5) * 300) / 100 / 2);
    const row = Math.floor(((20 + 0.5) * 200) / 67 / 2);
    expect(d3.bands[0]![20 * 100 + 10]).toBe(ov1.bands[0]![row * 150 + col]);
    expect(s.overview!(1).info.cellSize).toEqual({ x: 60, y: 60 });
    expect(() => s.overview!(3)).toThrow(/2 overview/);
    await s.close();
  });

  describe('a COG over HTTP', () => {
    let server: Server;
    let base = '';
    beforeAll(async () => {
      const body = readFileSync(join(dir, 'F32-cog.tif'));
      server = createServer((req, res) => {
        const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
        if (!m) return void res.writeHead(200, { 'content-length': body.length }).end(body);
        const start = Number(m[1]);
        const end = Math.min(m[2] ? Number(m[2]) : body.length - 1, body.length - 1);
        res
          .writeHead(206, { 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': end - start + 1 })
          .end(body.subarray(start, end + 1));
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it('reads the smallest overview with range requests only for its tiles', async () => {
      const s = await openGeoTiff(`${base}/cog.tif`);
      const local = await openGeoTiff(join(dir, 'F32-cog.tif'));
      const a = await s.overview!(2).read({ x: 0, y: 0, width: 75, height: 50 });
      const e = await local.overview!(2).read({ x: 0, y: 0, width: 75, height: 50 });
      expect(Array.from(a.bands[0]!)).toEqual(Array.from(e.bands[0]!));
      const full = await s.read({ x: 0, y: 0, width: 300, height: 200 });
      const fe = await local.read({ x: 0, y: 0, width: 300, height: 200 });
      expect(Array.from(full.bands[0]!)).toEqual(Array.from(fe.bands[0]!));
      await s.close();
      await local.close();
    });
  });
});

describe('decoders and the tile cache', () => {
  it("the GeoKey name table equals geotiff.js's (it is kept here so opening a file does not load geotiff.js)", async () => {
    const { globals } = await import('geotiff');
    expect(GEO_KEY_NAMES).toEqual(globals.geoKeyNames);
  });

  it('LZW: a hand-made stream (clear, literals, a KwKwK code, end)', () => {
    // Codes (9 bits, MSB first): 256 clear, 65 'A', 258 ('AA', not yet defined: KwKwK), 257 end.
    const codes = [256, 65, 258, 257];
    const bits = codes
      .map((c) => c.toString(2).padStart(9, '0'))
      .join('')
      .padEnd(40, '0');
    const bytes = Uint8Array.from({ length: 5 }, (_, i) => parseInt(bits.slice(8 * i, 8 * i + 8), 2));
    expect(Array.from(lzwDecode(bytes, 3))).toEqual([65, 65, 65]);
  });

  it('PackBits: literal and repeat runs (the TIFF 6.0 example)', () => {
    const packed = Uint8Array.from([0xfe, 0xaa, 0x02, 0x80, 0x00, 0x2a, 0xfd, 0xaa, 0x03, 0x80, 0x00, 0x2a, 0x22, 0xf7, 0xaa]);
    const expected = [
      0xaa, 0xaa, 0xaa, 0x80, 0x00, 0x2a, 0xaa, 0xaa, 0xaa, 0xaa, 0x80, 0x00, 0x2a, 0x22, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
      0xaa, 0xaa,
    ];
    expect(Array.from(packBitsDecode(packed, expected.length))).toEqual(expected);
  });

  it('the LRU shares one load among concurrent readers and evicts by bytes', async () => {
    const cache = new TileCache<Uint8Array>(10);
    let loads = 0;
    const load = async () => {
      loads++;
      return new Uint8Array(4);
    };
    const [a, b] = await Promise.all([cache.use('x', load, (v) => v), cache.use('x', load, (v) => v)]);
    expect(a).toBe(b);
    expect(loads).toBe(1);
    await cache.use('y', load, () => 0);
    await cache.use('z', load, () => 0); // 12 bytes > 10: the least recently used ('x') goes
    await Promise.resolve();
    expect(cache.has('x')).toBe(false);
    expect(cache.has('z')).toBe(true);
    expect(cache.bytes).toBeLessThanOrEqual(10);
  });

  it('sizes the cache for a pass: three rows of blocks of the images open, 8 to 64 MiB', () => {
    const MiB = 1024 * 1024;
    const kept = tileCache.maxBytes;
    const forget = [noteBlockRow(3 * MiB), noteBlockRow(1 * MiB)];
    try {
      fitTileCacheToPass();
      // RASTERFLOW_TILE_CACHE_MB set in the environment: the size is the user's, untouched.
      if (process.env.RASTERFLOW_TILE_CACHE_MB) return expect(tileCache.maxBytes).toBe(kept);
      expect(tileCache.maxBytes).toBe(12 * MiB);
      forget.pop()!();
      fitTileCacheToPass();
      expect(tileCache.maxBytes).toBe(9 * MiB);
      forget.push(noteBlockRow(40 * MiB));
      fitTileCacheToPass();
      expect(tileCache.maxBytes).toBe(64 * MiB);
      for (const f of forget.splice(0)) f();
      fitTileCacheToPass();
      expect(tileCache.maxBytes).toBe(8 * MiB);
    } finally {
      for (const f of forget) f();
      tileCache.maxBytes = kept;
    }
  });

  it('recycles a dropped block only once no use of it runs, and a block of a disabled cache after its use', async () => {
    type Block = { byteLength: number; recycle: () => void; recycled: number };
    const block = (): Block => {
      const b: Block = { byteLength: 4, recycled: 0, recycle: () => void b.recycled++ };
      return b;
    };
    const cache = new TileCache<Block>(4);
    const x = block();
    let during = -1;
    // 'x' loads last: it is dropped as it arrives (the cache holds one block), while its use still waits to run.
    let arrive!: (b: Block) => void;
    const using = cache.use(
      'x',
      () => new Promise<Block>((r) => (arrive = r)),
      (v) => (during = v.recycled),
    );
    const y = block();
    await cache.use(
      'y',
      () => Promise.resolve(y),
      () => 0,
    );
    arrive(x);
    await using;
    expect(during).toBe(0);
    expect(cache.has('x')).toBe(false);
    expect(x.recycled).toBe(1);
    expect(cache.has('y')).toBe(true);
    // Evicted with nothing using it: at once, and once.
    await cache.use(
      'z',
      () => Promise.resolve(block()),
      () => 0,
    );
    expect(y.recycled).toBe(1);
    cache.clear();
    expect(y.recycled).toBe(1);
    // A failed load is never recycled nor kept; a disabled cache recycles after each use.
    await expect(
      cache.use(
        'f',
        () => Promise.reject(new Error('bad')),
        () => 0,
      ),
    ).rejects.toThrow('bad');
    expect(cache.has('f')).toBe(false);
    const off = new TileCache<Block>(0);
    const w = block();
    expect(
      await off.use(
        'w',
        () => Promise.resolve(w),
        (v) => v.recycled,
      ),
    ).toBe(0);
    expect(w.recycled).toBe(1);
  });
});

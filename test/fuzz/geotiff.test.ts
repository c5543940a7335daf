/**
 * Fuzzing the GeoTIFF reader (issue 20, item 1): mutated copies of small real TIFFs (the ten
 * made by make-tiffs.py and a bundled DEM: truncations, bit flips, rewritten IFD fields) and
 * hand-made hostile headers (2^31-pixel dimensions, offsets past the end, IFD loops, tile counts
 * that disagree with the size, 4 GB byte counts, decompression bombs).
 *
 * The property: opening a file and reading windows of it and of each overview either gives
 * blocks of the right size (bands, pixels, mask) or fails with an EngineError whose code is
 * IO_ERROR (a broken or hostile file) or UNSUPPORTED_INPUT (a well-formed layout the engine
 * cannot represent, as openGeoTiff documents), within a time budget per case and with bounded
 * peak memory. The hostile headers must all end in IO_ERROR.
 *
 * RASTERFLOW_FUZZ_LOG=<file> appends each mutant case (JSON) before it runs: a case that kills
 * the process (out of memory, a native abort) leaves no counterexample otherwise.
 */
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import { PIXEL_TYPE_INFO } from '../../src/core/pixel-type.js';
import type { SourceNode } from '../../src/graph/types.js';
import { inflateBlock } from '../../src/io/codec-pool.js';
import { jpegFrameHeaders, lzwDecode, packBitsDecode, zstdUpperBound } from '../../src/io/decoders.js';
import { openGeoTiff, type GeoTiffSource } from '../../src/io/geotiff-source.js';
import { openRaster } from '../../src/io/source.js';
import { openFileSource } from '../../src/io/tiff-reader.js';
import { runCli } from '../helpers.js';
import { fuzzBudget, fuzzParameters, fuzzTimeout } from './runs.js';
import {
  DATA,
  deflateBomb,
  type FieldMutation,
  hostileTiff,
  type HostileTag,
  imageTags,
  INTERESTING_TAGS,
  interestingNumbers,
  jpegStream,
  lercBlob,
  lzwBomb,
  mutateField,
  seedTiffs,
  zstdBomb,
} from './tiff-builders.js';

const dir = mkdtempSync(join(tmpdir(), 'rasterflow-fuzz-tiff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEEDS = seedTiffs().map((path) => ({ path, bytes: new Uint8Array(readFileSync(path)) }));
/** Codes a broken file may fail with: IO_ERROR, or UNSUPPORTED_INPUT for a layout the engine does not represent. */
const ALLOWED = new Set(['IO_ERROR', 'UNSUPPORTED_INPUT']);
/** Wall-clock budget of one case (open + every read), generous for 2 shared cores. */
const CASE_BUDGET_MS = fuzzBudget(2_000);
/** Peak RSS growth allowed over a whole property (a 4 GB allocation would show). */
const RSS_BUDGET_BYTES = 512 * 1024 * 1024;

let serial = 0;
/** A fresh file per case: the tile cache keys blocks by path, size, mtime and inode. */
function writeCase(bytes: Uint8Array): string {
  const path = join(dir, `case-${process.pid}-${serial++}.tif`);
  writeFileSync(path, bytes);
  return path;
}

function expectRefusal(e: unknown, codes: ReadonlySet<string> = ALLOWED): string {
  if (!(e instanceof EngineError)) throw new Error(`not an EngineError: ${e instanceof Error ? e.stack : String(e)}`);
  if (!codes.has(e.code)) throw new Error(`EngineError ${e.code} (${e.message}), expected ${[...codes].join(' or ')}`);
  return e.code;
}

/** Windows of a width x height image: the whole (when small), corners, the middle, a block-crossing strip. */
function windows(width: number, height: number, bands: number): { x: number; y: number; width: number; height: number }[] {
  // At most 2^16 samples a window corner: a mutant with 65535 bands reads 1 x 1 windows.
  const side = Math.max(1, Math.min(64, Math.floor(Math.sqrt(65536 / bands))));
  const w = Math.min(width, side);
  const h = Math.min(height, side);
  const out = [
    { x: 0, y: 0, width: w, height: h },
    { x: width - w, y: height - h, width: w, height: h },
    { x: Math.floor(width / 2), y: Math.floor(height / 2), width: Math.min(3, width), height: Math.min(3, height) },
    { x: 0, y: Math.floor(height / 3), width: w, height: Math.min(17, height) },
  ];
  if (width * height * bands <= 1 << 20) out.unshift({ x: 0, y: 0, width, height });
  return out;
}

/** How a case ended: every read succeeded, or the open / some read was refused (with which code). */
type Outcome = { opened: boolean; reads: number; refused: string[] };

async function readAll(node: SourceNode, outcome: Outcome): Promise<void> {
  const { width, height, bandCount, pixelType } = node.info;
  const parts = PIXEL_TYPE_INFO[pixelType].complex ? 2 : 1;
  for (const r of windows(width, height, bandCount)) {
    try {
      const block = await node.read(r);
      expect(block.rect).toEqual(r);
      expect(block.bands.length).toBe(bandCount);
      for (const band of block.bands) expect(band.length).toBe(r.width * r.height * parts);
      expect(block.mask.length).toBe(r.width * r.height);
      outcome.reads++;
    } catch (e) {
      outcome.refused.push(expectRefusal(e));
    }
  }
}

/** Open `path` and read windows of it and of every overview, within the time budget. */
async function exercise(path: string, open: (p: string) => Promise<GeoTiffSource> = openGeoTiff): Promise<Outcome> {
  const outcome: Outcome = { opened: false, reads: 0, refused: [] };
  const t0 = performance.now();
  const run = async (): Promise<void> => {
    let s;
    try {
      s = await open(path);
    } catch (e) {
      outcome.refused.push(expectRefusal(e));
      return;
    }
    outcome.opened = true;
    try {
      await readAll(s, outcome);
      const levels = s.overviews?.length ?? 0;
      for (let i = 1; i <= levels && s.overview; i++) await readAll(s.overview(i), outcome);
    } finally {
      await s.close();
    }
  };
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    run(),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${path}: no answer within ${5 * CASE_BUDGET_MS} ms (a hang)`)), 5 * CASE_BUDGET_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  const ms = performance.now() - t0;
  if (ms > CASE_BUDGET_MS) throw new Error(`${path}: took ${ms.toFixed(0)} ms, over the ${CASE_BUDGET_MS} ms budget per case`);
  return outcome;
}

/** Peak resident memory so far, bytes. */
const peakRss = (): number => process.resourceUsage().maxRSS * 1024;

// ---- Mutations of real TIFFs

type Mutation =
  { kind: 'cut'; at: number } | { kind: 'flip'; bits: readonly (readonly [number, number])[] } | { kind: 'field'; m: FieldMutation };

const valueArb = (size: number): fc.Arbitrary<number> =>
  fc.oneof(fc.constantFrom(...interestingNumbers(size)), fc.nat({ max: 2 ** 32 - 1 }), fc.nat({ max: 300 }));

const mutationArb = (size: number): fc.Arbitrary<Mutation> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('cut' as const), at: fc.nat({ max: size - 1 }) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('flip' as const),
        bits: fc.array(fc.tuple(fc.nat({ max: size - 1 }), fc.nat({ max: 7 })), { minLength: 1, maxLength: 8 }),
      }),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('field' as const),
        m: fc.record(
          {
            entry: fc.nat({ max: 400 }),
            field: fc.constantFrom('count', 'type', 'offset', 'value', 'value', 'value', 'ifdCount', 'next'),
            index: fc.nat({ max: 100_000 }),
            value: valueArb(size),
            tag: fc.constantFrom(...INTERESTING_TAGS),
          },
          { requiredKeys: ['entry', 'field', 'index', 'value'] },
        ),
      }),
    },
  );

function applyMutation(b: Uint8Array, m: Mutation): Uint8Array {
  if (m.kind === 'cut') return b.subarray(0, m.at);
  if (m.kind === 'flip') {
    for (const [p, bit] of m.bits) if (p < b.length) b[p] = b[p]! ^ (1 << bit);
    return b;
  }
  mutateField(b, m.m);
  return b;
}

const caseArb = fc
  .nat({ max: SEEDS.length - 1 })
  .chain((seed) =>
    fc.record({ seed: fc.constant(seed), mutations: fc.array(mutationArb(SEEDS[seed]!.bytes.length), { minLength: 1, maxLength: 3 }) }),
  );

function mutated(c: { seed: number; mutations: readonly Mutation[] }): Uint8Array {
  let b: Uint8Array = SEEDS[c.seed]!.bytes.slice();
  for (const m of c.mutations) b = applyMutation(b, m);
  return b;
}

const RUNS = 300;

const seedIndex = (name: string): number => SEEDS.findIndex((s) => s.path.endsWith(`/${name}.tif`));
/**
 * Counterexamples the property found, replayed first on every run (each fixed in src/io/):
 * SamplesPerPixel's type rewritten to LONG8 (read out of line: 2^40 bands, the heap exhausted
 * allocating per-band arrays); SamplesPerPixel 32946 on a DEFLATE DEM (a 300 MB zlib output
 * chunk for a strip of 2 KB, found by a 20,000-case run).
 */
const FOUND: [{ seed: number; mutations: Mutation[] }][] = [
  [
    {
      seed: seedIndex('f32-deflate-pred3-tiled'),
      mutations: [{ kind: 'field', m: { entry: 354, field: 'type', index: 79862, value: 16, tag: 277 } }],
    },
  ],
  [
    {
      seed: seedIndex('olinda_dem_utm25s'),
      mutations: [
        { kind: 'field', m: { entry: 206, field: 'value', index: 16280, value: 32946, tag: 277 } },
        { kind: 'cut', at: 11616 },
      ],
    },
  ],
];

describe('GeoTIFF reader fuzz: mutated real TIFFs', () => {
  it('the seed TIFFs themselves read whole, every overview too', async () => {
    for (const { path } of SEEDS) {
      const o = await exercise(path);
      expect(o.refused, path).toEqual([]);
      expect(o.opened).toBe(true);
    }
  });

  it(
    'truncations, bit flips and IFD field mutations: right-sized blocks or IO_ERROR / UNSUPPORTED_INPUT, in time, bounded memory',
    async () => {
      const rss0 = peakRss();
      const tally = { opened: 0, refusedOpen: 0, reads: 0, refusedReads: 0 };
      let cases = 0;
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const path = writeCase(mutated(c));
          const log = process.env['RASTERFLOW_FUZZ_LOG'];
          if (log) appendFileSync(log, JSON.stringify(c) + '\n');
          const before = peakRss();
          try {
            const o = await exercise(path);
            if (o.opened) tally.opened++;
            else tally.refusedOpen++;
            tally.reads += o.reads;
            tally.refusedReads += o.opened ? o.refused.length : 0;
          } finally {
            rmSync(path, { force: true });
            // A case that raised the peak by more than 32 MB is named in the log (the bound is checked once, at the end).
            const jump = peakRss() - before;
            if (log && jump > 32 * 2 ** 20) appendFileSync(log, `peak RSS +${(jump / 2 ** 20).toFixed(0)} MB: ${JSON.stringify(c)}\n`);
            // Every 1,000 cases, where the memory is (MB): the JS heap, buffers, all.
            if (log && ++cases % 1000 === 0) {
              const m = process.memoryUsage();
              const mb = (x: number): number => Math.round(x / 2 ** 20);
              appendFileSync(
                log,
                `memory after ${cases} cases: ${JSON.stringify({ rss: mb(m.rss), peak: mb(peakRss()), heapUsed: mb(m.heapUsed), heapTotal: mb(m.heapTotal), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers) })}\n`,
              );
            }
          }
        }),
        fuzzParameters(RUNS, { examples: FOUND }),
      );
      const growth = peakRss() - rss0;
      const log = process.env['RASTERFLOW_FUZZ_LOG'];
      if (log)
        appendFileSync(
          log,
          `summary: ${JSON.stringify({ ...tally, peakRssGrowthMB: Math.round(growth / 2 ** 20), peakRssMB: Math.round(peakRss() / 2 ** 20) })}\n`,
        );
      expect(growth).toBeLessThan(RSS_BUDGET_BYTES);
      // The mix exercises both sides: some mutants still open and read, some are refused.
      expect(tally.opened).toBeGreaterThan(0);
      expect(tally.refusedOpen + tally.refusedReads).toBeGreaterThan(0);
    },
    fuzzTimeout(RUNS, 60),
  );

  it(
    'the same mutants through openRaster (the CLI, rules and the image service open rasters with it)',
    async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const path = writeCase(mutated(c));
          try {
            await exercise(path, openRaster);
          } finally {
            rmSync(path, { force: true });
          }
        }),
        fuzzParameters(Math.ceil(RUNS / 5)),
      );
    },
    fuzzTimeout(Math.ceil(RUNS / 5), 60),
  );
});

// ---- Hand-made hostile headers

/** Open and read: the case must end in IO_ERROR (at the open or at a read), quickly, with bounded memory. */
async function expectIoError(bytes: Uint8Array): Promise<string> {
  const rss0 = peakRss();
  const path = writeCase(bytes);
  let message = '';
  const o = await exercise(path, async (p) => {
    try {
      return await openGeoTiff(p);
    } catch (e) {
      message = e instanceof Error ? e.message : String(e);
      throw e;
    }
  });
  expect(peakRss() - rss0).toBeLessThan(RSS_BUDGET_BYTES);
  expect(o.refused.length, 'some read or the open is refused').toBeGreaterThan(0);
  expect(o.refused.every((c) => c === 'IO_ERROR')).toBe(true);
  if (o.opened) {
    // Opened: the refused read names the reason.
    const s = await openGeoTiff(path);
    try {
      await s.read({ x: 0, y: 0, width: Math.min(16, s.info.width), height: Math.min(16, s.info.height) });
    } catch (e) {
      message = (e as Error).message;
    } finally {
      await s.close();
    }
  }
  return message;
}

const PIXELS = new Uint8Array(256).fill(7);

describe('GeoTIFF reader: hostile headers end in IO_ERROR', () => {
  it('a well-formed hand-made TIFF reads (the builder is right)', async () => {
    const ok = hostileTiff([imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, offsets: [DATA], counts: [256] })], PIXELS);
    const s = await openGeoTiff(writeCase(ok));
    try {
      const b = await s.read({ x: 0, y: 0, width: 16, height: 16 });
      expect([...b.bands[0]!].every((v) => v === 7)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('2^31-pixel dimensions with too few blocks', async () => {
    const m = await expectIoError(
      hostileTiff([imageTags({ width: 2 ** 31, height: 2 ** 31, bw: 256, bh: 256, tiled: true, offsets: [DATA], counts: [256] })], PIXELS),
    );
    expect(m).toMatch(/block offsets for \d+ tiles/);
    await expectIoError(
      hostileTiff(
        [imageTags({ width: 2 ** 31 - 1, height: 16, bw: 2 ** 31 - 1, bh: 1, tiled: false, offsets: [DATA], counts: [256] })],
        PIXELS,
      ),
    );
  });

  it('one 2^31 x 2^31 tile (or strip) and a sparse one: no allocation of its size', async () => {
    await expectIoError(
      hostileTiff(
        [imageTags({ width: 2 ** 31, height: 2 ** 31, bw: 2 ** 31, bh: 2 ** 31, tiled: true, offsets: [DATA], counts: [256] })],
        PIXELS,
      ),
    );
    await expectIoError(
      hostileTiff(
        [imageTags({ width: 2 ** 31, height: 2 ** 31, bw: 2 ** 31, bh: 2 ** 31, tiled: true, offsets: [0], counts: [0] })],
        PIXELS,
      ),
    );
    await expectIoError(
      hostileTiff(
        [imageTags({ width: 65536, height: 65536, bw: 65536, bh: 65536, tiled: false, compression: 8, offsets: [DATA], counts: [256] })],
        PIXELS,
      ),
    );
  });

  it('offsets past the end: a block, a tag value, the first IFD, the next IFD', async () => {
    expect(
      await expectIoError(
        hostileTiff([imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, offsets: [1_000_000], counts: [256] })], PIXELS),
      ),
    ).toMatch(/past the end of the file/);
    // A tag whose values (2^28 LONGs = 1 GiB) lie past the end: refused before any buffer of that size.
    const big = hostileTiff([
      [...imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, offsets: [DATA], counts: [256] }), [33550, 4, [0, 0]]],
    ]);
    const v = new DataView(big.buffer);
    // Rewrite ModelPixelScale's count to 2^28 (its entry is the last of the sorted IFD).
    const n = v.getUint16(8, true);
    const e = 8 + 2 + (n - 1) * 12;
    expect(v.getUint16(e, true)).toBe(33550);
    v.setUint32(e + 4, 2 ** 28, true);
    expect(await expectIoError(big)).toMatch(/more than 16777216 tag values/);
    const header = new Uint8Array([0x49, 0x49, 42, 0, 0xff, 0xff, 0xff, 0x7f]);
    await expectIoError(header);
    // A next-IFD pointer past the end after a good first image: the whole file is refused
    // (the chain is corrupt; the reader scans every IFD for masks and overviews).
    expect(
      await expectIoError(
        hostileTiff([imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, offsets: [DATA], counts: [256] })], PIXELS, {
          next: [{ raw: 2 ** 32 - 2 }],
        }),
      ),
    ).toMatch(/image directory \(IFD\) 2 needs/);
  });

  it('a tag of 2^30 LONGs (4 GiB) past the end: refused by the tag budget; a file read never asks for more than the file', async () => {
    const bytes = hostileTiff([
      [...imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, offsets: [DATA], counts: [256] }), [33550, 4, [0, 0]]],
    ]);
    const v = new DataView(bytes.buffer);
    const e = 8 + 2 + (v.getUint16(8, true) - 1) * 12;
    v.setUint32(e + 4, 2 ** 30, true);
    expect(await expectIoError(bytes)).toMatch(/more than 16777216 tag values \(at tag 33550/);
    // Under the budget, the length reached fh.read, which aborts the process above 2^31 - 1.
    const src = await openFileSource(writeCase(bytes));
    try {
      expect((await src.read(0, 2 ** 32)).length).toBe(bytes.length);
      expect((await src.read(bytes.length + 10, 2 ** 31)).length).toBe(0);
    } finally {
      await src.close();
    }
  });

  it('SamplesPerPixel read as a LONG8 out of line (2^40 bands): IO_ERROR, not an exhausted heap', async () => {
    const b = SEEDS[seedIndex('f32-deflate-pred3-tiled')]!.bytes.slice();
    mutateField(b, { entry: 0, field: 'type', index: 0, value: 16, tag: 277 });
    expect(await expectIoError(b)).toMatch(/bad SamplesPerPixel/);
  });

  it('4,000 tags each 250,000 SHORTs at one offset (1.3 MB giving 8 GB of decoded values): IO_ERROR within the tag budget', async () => {
    const base = imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, offsets: [DATA], counts: [256] });
    const extra = Array.from({ length: 4000 }, (_, i): HostileTag => [40000 + i, 3, [0, 0, 0]]);
    const bytes = hostileTiff([[...base, ...extra]], new Uint8Array(600_000));
    const v = new DataView(bytes.buffer);
    for (let i = 0; i < v.getUint16(8, true); i++) {
      const e = 10 + i * 12;
      if (v.getUint16(e, true) < 40000) continue;
      v.setUint32(e + 4, 250_000, true);
      v.setUint32(e + 8, 8, true);
    }
    expect(await expectIoError(bytes)).toMatch(/more than 16777216 tag values/);
  });

  it('IFD loops: next-IFD pointing back to itself or to the first', async () => {
    const tags = imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, offsets: [DATA], counts: [256] });
    const ov = [...imageTags({ width: 8, height: 8, bw: 16, bh: 16, tiled: true, offsets: [DATA], counts: [256] }), [254, 4, [1]] as const];
    for (const next of [[0], [1, 0], [1, 1]] as const) {
      const bytes = hostileTiff(next.length === 1 ? [tags] : [tags, ov], PIXELS, { next });
      const t0 = performance.now();
      const s = await openGeoTiff(writeCase(bytes));
      try {
        expect((await s.read({ x: 0, y: 0, width: 16, height: 16 })).bands[0]![0]).toBe(7);
        expect(s.overviews?.length ?? 0).toBeLessThanOrEqual(1);
      } finally {
        await s.close();
      }
      expect(performance.now() - t0).toBeLessThan(CASE_BUDGET_MS);
    }
  });

  it('a tile count that disagrees with the size', async () => {
    expect(
      await expectIoError(
        hostileTiff([imageTags({ width: 64, height: 64, bw: 16, bh: 16, tiled: true, offsets: [DATA, DATA], counts: [256, 256] })], PIXELS),
      ),
    ).toMatch(/2 block offsets for 16 tiles/);
    expect(
      await expectIoError(
        hostileTiff(
          [imageTags({ width: 64, height: 64, bw: 16, bh: 16, tiled: true, offsets: new Array(16).fill(DATA), counts: [256] })],
          PIXELS,
        ),
      ),
    ).toMatch(/1 block byte counts for 16 tiles/);
  });

  it('strip byte counts of 4 GB', async () => {
    expect(
      await expectIoError(
        hostileTiff([imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: false, offsets: [DATA], counts: [2 ** 32 - 1] })], PIXELS),
      ),
    ).toMatch(/cut short/);
    expect(
      await expectIoError(
        hostileTiff(
          [imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: false, offsets: [DATA], counts: [2 ** 32 - 1], type: 16 })],
          PIXELS,
          {
            big: true,
          },
        ),
      ),
    ).toMatch(/cut short/);
  });

  it('DEFLATE bombs: a 16 x 16 tile whose stream inflates to 1 GiB, and a strip claiming 4 GiB', async () => {
    const bomb = deflateBomb(2 ** 30);
    expect(bomb.length).toBeLessThan(2 ** 21);
    const m = await expectIoError(
      hostileTiff(
        [imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, compression: 8, offsets: [DATA], counts: [bomb.length] })],
        bomb,
      ),
    );
    expect(m).toMatch(/tile 0 .* does not decode/);
    await expectIoError(
      hostileTiff(
        [
          imageTags({
            width: 65536,
            height: 65536,
            bw: 65536,
            bh: 65536,
            tiled: false,
            compression: 8,
            offsets: [DATA],
            counts: [bomb.length],
          }),
        ],
        bomb,
      ),
    );
  });

  it('an LZW bomb: a 16 x 16 tile whose codes would give 100 MB', async () => {
    const bomb = lzwBomb(100_000_000);
    const t0 = performance.now();
    // The decoder stops at the tile's bytes: the rest of the stream is never expanded.
    expect(lzwDecode(bomb, 256).length).toBe(256);
    expect(performance.now() - t0).toBeLessThan(fuzzBudget(100));
    const s = await openGeoTiff(
      writeCase(
        hostileTiff(
          [imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, compression: 5, offsets: [DATA], counts: [bomb.length] })],
          bomb,
        ),
      ),
    );
    try {
      expect((await s.read({ x: 0, y: 0, width: 16, height: 16 })).bands[0]!.every((v) => v === 0)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('ZSTD bombs: a 16 x 16 tile of RLE blocks giving 1 GiB, its size declared or streamed', async () => {
    for (const declare of [true, false]) {
      const bomb = zstdBomb(2 ** 30, declare);
      expect(bomb.length).toBeLessThan(40_000);
      expect(zstdUpperBound(bomb)).toEqual({ bound: 2 ** 30, undeclared: !declare });
      const m = await expectIoError(
        hostileTiff(
          [imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, compression: 50000, offsets: [DATA], counts: [bomb.length] })],
          bomb,
        ),
      );
      expect(m).toMatch(/tile 0 .* does not decode: ZSTD data may decompress to 1073741824 bytes/);
    }
    // A small honest frame of the same kind reads.
    const ok = zstdBomb(256);
    const s = await openGeoTiff(
      writeCase(
        hostileTiff(
          [imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, compression: 50000, offsets: [DATA], counts: [ok.length] })],
          ok,
        ),
      ),
    );
    try {
      expect((await s.read({ x: 0, y: 0, width: 16, height: 16 })).bands[0]!.every((v) => v === 0)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it("LZW and PackBits: a 16 MiB tile of a few bytes fails on its data, within its bytes' worth of output", async () => {
    const t0 = performance.now();
    // 9 bytes of codes, a block claiming 2^28 bytes: the data ends first.
    expect(() => lzwDecode(lzwBomb(1000).subarray(0, 9), 2 ** 28)).toThrow(/LZW data ends after \d+ bytes where the pixels need 268435456/);
    expect(() => packBitsDecode(Uint8Array.from([0x81, 7, 0x81, 7]), 2 ** 28)).toThrow(/PackBits data ends after 256 bytes/);
    expect(performance.now() - t0).toBeLessThan(fuzzBudget(100));
    for (const [compression, data] of [
      [5, lzwBomb(1000).subarray(0, 40)],
      [32773, Uint8Array.from([0x81, 7, 0x81, 7])],
    ] as const) {
      const m = await expectIoError(
        hostileTiff(
          [imageTags({ width: 4096, height: 4096, bw: 4096, bh: 4096, tiled: true, compression, offsets: [DATA], counts: [data.length] })],
          data,
        ),
      );
      expect(m).toMatch(/tile 0 .* does not decode: (LZW|PackBits) data ends after \d+ bytes where the pixels need 16777216/);
    }
  });

  /** A one-band 8-bit image of one `w` x `h` tile (or strip) holding `data`, with extra tags. */
  const oneBlock = (o: {
    w: number;
    h: number;
    compression: number;
    data: Uint8Array;
    tags?: HostileTag[];
    bits?: number;
    tiled?: boolean;
  }) =>
    hostileTiff(
      [
        [
          ...imageTags({
            width: o.w,
            height: o.h,
            bw: o.w,
            bh: o.h,
            tiled: o.tiled ?? true,
            compression: o.compression,
            offsets: [DATA],
            counts: [o.data.length],
            ...(o.bits ? { bits: o.bits } : {}),
          }),
          ...(o.tags ?? []),
        ],
      ],
      o.data,
    );

  it('JPEG: a hand-made 16 x 16 tile reads; frame headers that disagree with the tile are refused before geotiff.js allocates', async () => {
    const s = await openGeoTiff(writeCase(oneBlock({ w: 16, h: 16, compression: 7, data: jpegStream() })));
    try {
      expect((await s.read({ x: 0, y: 0, width: 16, height: 16 })).bands[0]!.every((v) => v === 128)).toBe(true);
    } finally {
      await s.close();
    }
    const refused = async (data: Uint8Array, why: RegExp, w = 16, h = 16): Promise<void> => {
      const t0 = performance.now();
      expect(await expectIoError(oneBlock({ w, h, compression: 7, data }))).toMatch(why);
      expect(performance.now() - t0).toBeLessThan(CASE_BUDGET_MS);
    };
    // 65535 x 65535 declared by a 16 x 16 tile: geotiff.js made 67 million 8 x 8 blocks.
    await refused(
      jpegStream({ width: 65535, height: 65535, blocks: 4 }),
      /tile 0 .* its frame is 65535 x 65535 pixels where the TIFF block is 16 pixels wide/,
    );
    // A sampling factor of 0 (T.81: 1 to 4): geotiff.js divides by it and decodes nothing.
    await refused(jpegStream({ components: [[0, 1]], blocks: 4 }), /component 1 has sampling factors 0 x 1/);
    await refused(jpegStream({ extraSof: true }), /2 frame headers/);
    await refused(jpegStream({ precision: 12 }), /12-bit/);
    await refused(
      jpegStream({
        components: [
          [1, 1],
          [1, 1],
          [1, 1],
        ],
      }),
      /3 components where the TIFF block has 1/,
    );
    // A 4096 x 4096 tile of 20 bytes (geotiff.js reads zeros past the end and decodes all 262,144 blocks).
    await refused(jpegStream({ width: 4096, height: 4096, blocks: 4 }), /\d+ bytes cannot hold the 262144 blocks/, 4096, 4096);
    await refused(jpegStream().subarray(0, 40), /JPEG data is corrupt/);
  });

  it('JPEG: JPEGTables holding a 65535 x 65535 frame (geotiff.js parsed it when the decoder was made) fail every tile with IO_ERROR', async () => {
    const tables = jpegStream({ tablesOnly: true, extraSof: true, width: 65535, height: 65535 });
    const m = await expectIoError(oneBlock({ w: 16, h: 16, compression: 7, data: jpegStream(), tags: [[347, 7, [...tables]]] }));
    expect(m).toMatch(/tile 0 .* does not decode: the JPEGTables tag does not decode: .*an image where tables only belong/);
    // Honest tables (quantization and Huffman only) read.
    const ok = jpegStream({ tablesOnly: true });
    const s = await openGeoTiff(writeCase(oneBlock({ w: 16, h: 16, compression: 7, data: jpegStream(), tags: [[347, 7, [...ok]]] })));
    try {
      expect((await s.read({ x: 0, y: 0, width: 16, height: 16 })).bands[0]![255]).toBe(128);
    } finally {
      await s.close();
    }
  });

  it('LERC: a constant 16 x 16 blob reads; a blob size of 0 (the lerc decoder looped on it), a 65535 x 65535 blob, another type, a DEFLATE bomb: IO_ERROR', async () => {
    const s = await openGeoTiff(
      writeCase(oneBlock({ w: 16, h: 16, compression: 34887, data: lercBlob({ width: 16, height: 16, dataType: 1, value: 5 }) })),
    );
    try {
      expect((await s.read({ x: 0, y: 0, width: 16, height: 16 })).bands[0]!.every((v) => v === 5)).toBe(true);
    } finally {
      await s.close();
    }
    const refused = async (data: Uint8Array, why: RegExp, tags: HostileTag[] = []): Promise<void> => {
      const t0 = performance.now();
      expect(await expectIoError(oneBlock({ w: 16, h: 16, compression: 34887, data, tags }))).toMatch(why);
      expect(performance.now() - t0).toBeLessThan(CASE_BUDGET_MS);
    };
    await refused(
      lercBlob({ width: 16, height: 16, dataType: 1, value: 5, blobSize: 0 }),
      /tile 0 .* LERC data is corrupt: a blob at byte 0 declares 0 bytes/,
    );
    await refused(
      lercBlob({ width: 65535, height: 65535, dataType: 1, value: 5 }),
      /its blob is 65535 x 65535 pixels where the TIFF block is 16/,
    );
    await refused(lercBlob({ width: 16, height: 16, dataType: 7, value: 5 }), /Float64 values where the TIFF's samples are UInt8/);
    const two = lercBlob({ width: 16, height: 16, dataType: 1, value: 5 });
    await refused(Uint8Array.from([...two, ...two]), /2 blobs/);
    // LercParameters [4, 1]: the blob DEFLATE-compressed; a 1 GiB bomb stops at the blob's cap.
    await refused(deflateBomb(2 ** 30), /LERC's DEFLATE data inflates to more than/, [[50674, 4, [4, 1]]]);
  });

  it('ZSTD: a corrupt frame without a content size (geotiff.js looped forever streaming it) is IO_ERROR in time; an honest one reads', async () => {
    // Magic, no content size, a 128 KiB window, one last Compressed block of 100 garbage bytes.
    const frame = new Uint8Array(6 + 3 + 100).fill(0xa5);
    new DataView(frame.buffer).setUint32(0, 0xfd2fb528, true);
    frame[4] = 0x00;
    frame[5] = 0x38;
    const h = 1 | (2 << 1) | (100 << 3);
    frame.set([h & 255, (h >>> 8) & 255, (h >>> 16) & 255], 6);
    const t0 = performance.now();
    const m = await expectIoError(oneBlock({ w: 16, h: 16, compression: 50000, data: frame }));
    expect(m).toMatch(/tile 0 .* does not decode: ZSTD data does not decompress into the \d+ bytes the block may hold/);
    expect(performance.now() - t0).toBeLessThan(CASE_BUDGET_MS);
    const ok = zstdBomb(256, false);
    const s = await openGeoTiff(writeCase(oneBlock({ w: 16, h: 16, compression: 50000, data: ok })));
    try {
      expect((await s.read({ x: 0, y: 0, width: 16, height: 16 })).bands[0]!.every((v) => v === 0)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('a 64 MB DEFLATE strip of 100 bytes (more than 1032:1): refused before zlib allocates its output', async () => {
    const junk = deflateBomb(1).subarray(0, 100);
    const m = await expectIoError(
      hostileTiff(
        [imageTags({ width: 8000, height: 8000, bw: 8000, bh: 8000, tiled: false, compression: 8, offsets: [DATA], counts: [100] })],
        junk,
      ),
    );
    expect(m).toMatch(/strip 0 .* does not decode: 100 compressed bytes cannot give the 64000000 bytes its pixels need/);
  });

  it('inflateBlock caps the inflated size at the block size (main thread and codec threads)', async () => {
    const bomb = deflateBomb(64 << 20);
    await expect(inflateBlock(bomb, 256)).rejects.toThrow();
    await expect(inflateBlock(bomb, 1 << 20)).rejects.toThrow(); // large enough to go to a codec thread
  });
});

// ---- The JPEG marker walk against geotiff.js's own parser

interface GeotiffJpegReader {
  parse(data: Uint8Array): void;
  resetFrames(): void;
  frames: { scanLines: number; samplesPerLine: number; precision: number; componentsOrder: number[] }[];
}

/** Bases for the JPEG mutants: a grey 16 x 16, a 4:2:0 32 x 16 with APP0, COM and restart segments. */
const JPEG_BASES = [
  jpegStream(),
  jpegStream({
    width: 32,
    height: 16,
    components: [
      [2, 2],
      [1, 1],
      [1, 1],
    ],
  }),
  (() => {
    const j = jpegStream({ width: 24, height: 8 });
    const app0 = [0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0];
    const com = [0xff, 0xfe, 0, 6, 0xff, 0xc0, 0xff, 0xda];
    const dri = [0xff, 0xdd, 0, 4, 0, 1];
    return Uint8Array.from([0xff, 0xd8, ...app0, ...com, ...dri, ...j.subarray(2)]);
  })(),
];

const jpegMutationArb = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.nat({ max: 7 }) }),
  fc.record({
    kind: fc.constant('set' as const),
    at: fc.nat(),
    value: fc.oneof(fc.constantFrom(0, 0xff, 0xc0, 0xc2, 0xc4, 0xda, 0xd9, 0xd0, 0xdb), fc.nat({ max: 255 })),
  }),
  fc.record({
    kind: fc.constant('marker' as const),
    at: fc.nat(),
    value: fc.constantFrom(0x00, 0xc0, 0xc1, 0xc2, 0xda, 0xd9, 0xff, 0xe0, 0xd3),
  }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
);

describe('the JPEG marker walk sees every frame header geotiff.js acts on', () => {
  it(
    'mutated JPEG streams: when the walk passes, geotiff.js finds the same frames (or fails)',
    async () => {
      const { getDecoder } = await import('geotiff');
      const decoder = await getDecoder(7, { tileWidth: 16, tileHeight: 16, planarConfiguration: 1, bitsPerSample: [8], predictor: 1 });
      const reader = (decoder as unknown as { reader: GeotiffJpegReader }).reader;
      let compared = 0;
      fc.assert(
        fc.property(fc.nat({ max: JPEG_BASES.length - 1 }), fc.array(jpegMutationArb, { minLength: 1, maxLength: 4 }), (base, muts) => {
          let b = Array.from(JPEG_BASES[base]!);
          for (const m of muts) {
            const at = m.at % Math.max(1, b.length);
            if (m.kind === 'flip') b[at] = b[at]! ^ (1 << m.bit);
            else if (m.kind === 'set') b[at] = m.value;
            else if (m.kind === 'marker') b.splice(at, 0, 0xff, m.value);
            else b = b.slice(0, at);
          }
          const data = Uint8Array.from(b);
          let mine;
          try {
            mine = jpegFrameHeaders(data).frames;
          } catch {
            return; // refused before geotiff.js runs
          }
          // Only frames small enough to let geotiff.js allocate them here (a larger one is refused by checkJpegFrame anyway).
          if (mine.some((f) => f.width * f.height > 1 << 16 || f.components.some((c) => c.h * c.v > 16))) return;
          reader.resetFrames();
          try {
            reader.parse(data);
          } catch {
            // geotiff.js failed: its frames so far must still be among the walk's.
          }
          compared++;
          const theirs = reader.frames.map((f) => [f.samplesPerLine, f.scanLines, f.precision, f.componentsOrder.length]);
          const ours = mine.slice(0, theirs.length).map((f) => [f.width, f.height, f.precision, f.components.length]);
          expect(theirs).toEqual(ours);
        }),
        fuzzParameters(2000),
      );
      expect(compared).toBeGreaterThan(0);
      if (process.env['RASTERFLOW_FUZZ_LOG'])
        appendFileSync(process.env['RASTERFLOW_FUZZ_LOG'], `jpeg walk: ${compared} mutants compared with geotiff.js\n`);
    },
    fuzzTimeout(2000, 5),
  );
});

describe('hostile TIFFs through rasterflow (the CLI)', () => {
  it('render and info of a DEFLATE bomb: exit 1, IO_ERROR naming the tile, no output, in seconds', () => {
    const bomb = deflateBomb(2 ** 30);
    const path = writeCase(
      hostileTiff(
        [imageTags({ width: 16, height: 16, bw: 16, bh: 16, tiled: true, compression: 8, offsets: [DATA], counts: [bomb.length] })],
        bomb,
      ),
    );
    const out = join(dir, 'bomb-out.png');
    const r = runCli(['render', '--rule', '{"rasterFunction":"Hillshade"}', '--input', path, '--output', out], { timeoutMs: 30_000 });
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error IO_ERROR at input: .*tile 0 \(columns 0-15, rows 0-15\) of band 1 does not decode: DEFLATE data inflates to more than/,
    );
    expect(existsSync(out)).toBe(false);
    // info reads no pixels of a file without statistics: it opens, and a hostile header refuses there.
    const amp = writeCase(
      hostileTiff([imageTags({ width: 2 ** 31, height: 2 ** 31, bw: 2 ** 31, bh: 2 ** 31, tiled: true, offsets: [0], counts: [0] })]),
    );
    const info = runCli(['info', amp], { timeoutMs: 30_000 });
    expect(info.code).toBe(1);
    expect(info.stderr).toMatch(/^error IO_ERROR at input: .*larger than the 256 MiB the reader decodes per block/);
  }, 60_000);
});

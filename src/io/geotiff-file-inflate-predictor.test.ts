/**
 * DEFLATE blocks with the horizontal predictor (2) read and inflated on a codec thread
 * (geotiff-source.ts `inflateFromFile`, the predictor undone there as decoders.ts does): the
 * samples written, for byte, 16- and 32-bit words, separate planes (ours) and pixel-interleaved
 * bands (GDAL's INTERLEAVE=PIXEL), in blocks large enough for a thread (256 x 256) and in small
 * ones decoders.ts decodes from bytes read on this thread (32 x 32).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, type PixelType } from '../core/pixel-type.js';
import { openGeoTiff } from './geotiff-source.js';
import { describeTiffImage, openFileSource, readTiffStructure } from './tiff-reader.js';
import { writeTiffStream } from './tiff-stream-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'rasterflow-file-inflate-predictor-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const W = 600;
const H = 300;

/** Seeded values with local correlation (what the predictor is for) and noise, in the type's range. */
function planeOf(t: PixelType, band: number): ReturnType<typeof allocatePlane> {
  const p = allocatePlane(t, W * H);
  let s = 11 + band;
  const span = t === 'U8' ? 256 : t === 'U16' ? 65536 : 2 ** 31;
  for (let i = 0; i < p.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    const x = i % W;
    const y = Math.floor(i / W);
    const v = (x * 7 + y * 3 + band * 50 + (s % 17)) % span;
    p[i] = t === 'S32' ? v - 2 ** 30 : v;
  }
  return p;
}

/** The first index where two sample arrays differ (-1: none; a length mismatch at the shorter length). */
function firstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

async function layoutOf(path: string) {
  const src = await openFileSource(path);
  try {
    const s = await readTiffStructure(src, await src.read(0, 16384));
    return describeTiffImage(s.ifds[0]!, s.littleEndian);
  } finally {
    await src.close();
  }
}

async function readBack(path: string): Promise<PixelBlock> {
  const src = await openGeoTiff(path);
  try {
    return await src.read({ x: 0, y: 0, width: W, height: H });
  } finally {
    await src.close();
  }
}

describe('DEFLATE blocks with predictor 2 read and inflated on a codec thread', () => {
  for (const [t, bands] of [
    ['U8', 3],
    ['U16', 2],
    ['S32', 1],
  ] as const) {
    it(`${t}, ${bands} band(s) in separate planes: the samples written, in big and small blocks`, async () => {
      const planes = Array.from({ length: bands }, (_, b) => planeOf(t, b));
      const info: RasterInfo = {
        width: W,
        height: H,
        bandCount: bands,
        pixelType: t,
        extent: { xmin: 0, ymin: 0, xmax: W, ymax: H },
        cellSize: { x: 1, y: 1 },
      };
      for (const tile of [256, 32]) {
        const path = join(dir, `${t}-${tile}.tif`);
        async function* blocks(): AsyncGenerator<PixelBlock> {
          yield {
            rect: { x: 0, y: 0, width: W, height: H },
            pixelType: t,
            bands: planes.map((p) => p.slice()),
            mask: new Uint8Array(W * H).fill(1),
          };
        }
        await writeTiffStream(path, info, blocks(), {
          compress: 'deflate',
          predictor: 2,
          blockWidth: tile,
          blockHeight: tile,
          statistics: false,
        });
        const l = await layoutOf(path);
        expect([l.predictor, l.compression, l.planar]).toEqual([2, 8, bands === 1 ? 1 : 2]);
        const back = await readBack(path);
        for (let b = 0; b < bands; b++) expect(firstDifference(back.bands[b]!, planes[b]!), `${t} ${tile} band ${b + 1}`).toBe(-1);
        expect(back.mask.every((m) => m === 1)).toBe(true);
      }
    });
  }

  it("GDAL's pixel-interleaved bands (INTERLEAVE=PIXEL, PREDICTOR=2): the samples GDAL reads", async () => {
    const script = `
import sys, numpy as np
from osgeo import gdal
out, dtype, tile = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = {'U8': (gdal.GDT_Byte, np.uint8), 'U16': (gdal.GDT_UInt16, np.uint16)}[dtype]
y, x = np.mgrid[0:${H}, 0:${W}]
d = gdal.GetDriverByName('GTiff').Create(out, ${W}, ${H}, 3, t[0], ['TILED=YES', 'BLOCKXSIZE=%d' % tile, 'BLOCKYSIZE=%d' % tile, 'COMPRESS=DEFLATE', 'PREDICTOR=2', 'INTERLEAVE=PIXEL'])
for b in range(3):
    d.GetRasterBand(b + 1).WriteArray(((x * (b + 2) + y * 5 + (x * y) % 13) % (256 if dtype == 'U8' else 65536)).astype(t[1]))
d = None
d = gdal.Open(out)
sys.stdout.write(','.join(str(int(d.GetRasterBand(b + 1).Checksum())) for b in range(3)))
`;
    for (const t of ['U8', 'U16'] as const) {
      for (const tile of [256, 32]) {
        const path = join(dir, `gdal-${t}-${tile}.tif`);
        const r = spawnSync('/usr/bin/python3', ['-c', script, path, t, String(tile)], { encoding: 'utf8' });
        expect(r.status, r.stderr).toBe(0);
        expect((await layoutOf(path)).planar).toBe(1);
        const back = await readBack(path);
        for (let b = 0; b < 3; b++) {
          const p = back.bands[b]!;
          let same = true;
          for (let y = 0; y < H && same; y++)
            for (let x = 0; x < W; x++)
              if (p[y * W + x] !== (x * (b + 2) + y * 5 + ((x * y) % 13)) % (t === 'U8' ? 256 : 65536)) {
                same = false;
                break;
              }
          expect(same, `${t} ${tile} band ${b + 1}`).toBe(true);
        }
      }
    }
  });
});

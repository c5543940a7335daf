/**
 * Chipper throughput: chips per minute for 256 x 256 PASCAL_VOC_rectangles and Classified_Tiles
 * exports of the Landsat sample upscaled to 8192 x 8192 (nearest neighbour, same extent, so the
 * committed WGS 84 labels golden/chipper/l7-labels.geojson still fall on the same ground), with
 * the hand-drawn labels. The upscaled raster is made once into the system temp folder by our own
 * GeoTIFF writer (tiled, DEFLATE). Each export covers the whole raster (32 x 32 = 1024 candidate
 * chips, labelled ones written) into a fresh folder; the row reports chips written per minute
 * (`Mpx/s` = chip pixels written per second).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { exportTrainingData } from '../src/chipper/export.js';
import { allocateBlock } from '../src/core/pixel-block.js';
import { rect } from '../src/core/rect.js';
import { render } from '../src/graph/render.js';
import { encodeGeoTiff } from '../src/io/encode-tiff.js';
import { openRaster } from '../src/io/source.js';
import type { BenchRow } from './rows.js';

const ROOT = resolve(import.meta.dirname, '..');
const SIZE = 8192;

/** The 8192 x 8192 Landsat bench raster (made once into the system temp folder); its path. */
export async function upscaled(): Promise<string> {
  const dir = join(tmpdir(), 'rasterflow-bench');
  const path = join(dir, `l7-upscaled-${SIZE}.tif`);
  if (existsSync(path)) return path;
  mkdirSync(dir, { recursive: true });
  const src = await openRaster(join(ROOT, 'golden/data/L7_ETMs.tif'));
  const { width: w, height: h } = src.info;
  const small = await render(src, { rect: rect(0, 0, w, h), tileSize: 512 }).finally(() => src.close());
  const big = allocateBlock(rect(0, 0, SIZE, SIZE), 'U8', 3);
  const colOf = new Int32Array(SIZE).map((_, x) => Math.min(w - 1, Math.floor(((x + 0.5) * w) / SIZE)));
  for (let b = 0; b < 3; b++) {
    const s = small.bands[b]!;
    const d = big.bands[b]!;
    for (let y = 0; y < SIZE; y++) {
      const row = Math.min(h - 1, Math.floor(((y + 0.5) * h) / SIZE)) * w;
      const o = y * SIZE;
      for (let x = 0; x < SIZE; x++) d[o + x] = s[row + colOf[x]!]!;
    }
  }
  const info = {
    ...src.info,
    width: SIZE,
    height: SIZE,
    bandCount: 3,
    bandNames: undefined,
    cellSize: { x: (src.info.cellSize.x * w) / SIZE, y: (src.info.cellSize.y * h) / SIZE },
  };
  writeFileSync(path, encodeGeoTiff(big, info, { tileSize: 512 }));
  return path;
}

export async function chipperBench(): Promise<BenchRow[]> {
  const raster = await upscaled();
  const rows: BenchRow[] = [];
  // Every run writes into a folder of its own, all removed at the end: removing a run's files just
  // before the next run makes each file it creates slower on ext4 without a journal (see
  // peers/chipper.peers.ts), a cost of the bench, not of the export.
  const outs = mkdtempSync(join(tmpdir(), 'rasterflow-chipper-bench-'));
  try {
    for (const metadataFormat of ['PASCAL_VOC_rectangles', 'Classified_Tiles']) {
      const times: number[] = [];
      let chips = 0;
      for (let run = 0; run < 3; run++) {
        const out = join(outs, `chips-${metadataFormat}-${run}`);
        const t = performance.now();
        const s = await exportTrainingData({
          inputRaster: raster,
          inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
          outputLocation: out,
          metadataFormat,
          tileSize: { x: 256, y: 256 },
        });
        times.push(performance.now() - t);
        chips = s.chips;
      }
      times.sort((a, b) => a - b);
      const median = times[1]!;
      const perMinute = (chips / median) * 60000;
      console.log(
        `chipper ${metadataFormat}: ${chips} chips of 256x256 in ${(median / 1000).toFixed(2)} s median = ${perMinute.toFixed(0)} chips/min`,
      );
      rows.push({
        name: `Chipper ${metadataFormat} 256px (${chips} chips, ${perMinute.toFixed(0)} chips/min)`,
        medianMs: median,
        mpxPerSec: (chips * 256 * 256) / (median * 1000),
        meanMs: times.reduce((a, b) => a + b, 0) / times.length,
        p99Ms: times[2]!,
        samples: times.length,
      });
    }
  } finally {
    rmSync(outs, { recursive: true, force: true });
  }
  return rows;
}

/**
 * The chipper beside the loop a GDAL user writes (chipper_peers.py): the 8192 x 8192 Landsat bench
 * raster (bench/chipper.bench.ts makes it), every 256 x 256 chip (1,024). rasterflow:
 * `exportTrainingData` (what `rasterflow chip` runs) with PASCAL_VOC_rectangles, the hand-drawn
 * labels and `exportAllTiles`, so every chip is written with its labels, world file, `.aux.xml`
 * and statistics. The loop: ReadAsArray of each window, a GTiff DEFLATE chip with its
 * georeference and a small XML. Both in process (no start-up), no render workers (rasterflow's
 * chips still deflate on its codec threads and its files are written on its file writer thread,
 * beside the main thread), alternating run by run after one untimed run each; chips per minute,
 * medians.
 *
 * Every run writes into a folder of its own, all removed when the process exits, not between runs
 * (nor between the sets of runs of `--runs N`). On
 * ext4 without a journal (this bench machine's disk), creating a file scans past every inode of its
 * block group deleted in the last minute or more (the kernel's `recently_deleted`): removing the
 * 3-4 thousand files of the run before made each file created in the next one cost 0.3-0.8 ms
 * instead of 0.02, a cost of the bench's cleaning that weighs on whichever side writes more files.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { exportTrainingData } from '../../src/chipper/export.js';
import { upscaled } from '../chipper.bench.js';
import { type PeerFamily, type PeerLine, runPython, saySkipped } from './common.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TILE = 256;

/** One export into a fresh folder (left for the caller to remove); its time (ms) and chip count. */
async function rasterflowRun(raster: string, out: string): Promise<{ ms: number; chips: number }> {
  const t = performance.now();
  const s = await exportTrainingData({
    inputRaster: raster,
    inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
    outputLocation: out,
    metadataFormat: 'PASCAL_VOC_rectangles',
    tileSize: { x: TILE, y: TILE },
    context: { exportAllTiles: true },
  });
  const ms = performance.now() - t;
  return { ms, chips: s.chips };
}

/** The bench's output folders, removed at exit (see above). */
const folders: string[] = [];
process.once('exit', () => {
  for (const d of folders) rmSync(d, { recursive: true, force: true });
});

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

export const family: PeerFamily = {
  name: 'chipper',
  async run(_size, repeats, say) {
    const raster = await upscaled();
    const dir = mkdtempSync(join(tmpdir(), 'rasterflow-chipper-peers-'));
    folders.push(dir);
    const script = resolve(import.meta.dirname, 'chipper_peers.py');
    let n = 0;
    const loop = (): PeerLine[] => runPython(script, [raster, join(dir, `loop-${n++}`), String(TILE), '1', 'keep']);
    await rasterflowRun(raster, join(dir, `rf-${n++}`));
    saySkipped(loop(), say);
    const ours: number[] = [];
    const theirs: number[] = [];
    let chips = 0;
    let loopChips = 0;
    for (let i = 0; i < repeats; i++) {
      const r = await rasterflowRun(raster, join(dir, `rf-${n++}`));
      ours.push(r.ms);
      chips = r.chips;
      const l = loop().find((x) => x.op === 'chipper') as (PeerLine & { chips?: number; medianMs?: number }) | undefined;
      if (l?.medianMs !== undefined) {
        theirs.push(l.medianMs);
        loopChips = l.chips ?? 0;
      }
    }
    if (theirs.length > 0 && loopChips !== chips) say(`chipper: the loop wrote ${loopChips} chips, rasterflow ${chips}`);
    say(
      `chipper: rasterflow ${chips} chips in ${median(ours).toFixed(0)} ms` +
        (theirs.length > 0 ? `, the GDAL loop ${loopChips} in ${median(theirs).toFixed(0)} ms` : ''),
    );
    return [
      {
        op: `chip PASCAL_VOC_rectangles 8192² -> ${chips} chips of ${TILE}²`,
        unit: 'chips/min',
        measures: {
          rasterflow: chips / (median(ours) / 60000),
          'GDAL loop': theirs.length > 0 ? loopChips / (median(theirs) / 60000) : undefined,
        },
        ratios: [['rasterflow', 'GDAL loop']],
      },
    ];
  },
};

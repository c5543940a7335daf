/** Shared by the queue tests: the export they run and a file-by-file comparison of two folders. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Queue } from 'bullmq';
import { parseQueueUrl, RANGES_QUEUE } from '../src/queue/connection.js';
import { spawnChild, type Child } from './serve-helpers.js';

const ROOT = resolve(import.meta.dirname, '..');
export const RASTER = join(ROOT, 'golden/data/L7_ETMs.tif');
export const LABELS = join(ROOT, 'golden/chipper/l7-labels.geojson');

/**
 * Classified tiles over the Landsat sample with its labels: 441 candidates of 32 px, some over
 * the edge (dropped for NoData), every tile exported but empty chips capped by the empty-chip ratio, COCO and YOLO label
 * sets and a validation split: every per-chip decision of the export is exercised.
 */
export const classifiedParams = (outputLocation: string): Record<string, unknown> => ({
  inputRaster: RASTER,
  inputClassData: LABELS,
  outputLocation,
  metadataFormat: 'Classified_Tiles',
  tileSize: { x: 32, y: 32 },
  strideSize: { x: 16, y: 16 },
  maxNoDataFraction: 0.1,
  maxEmptyChipRatio: 0.25,
  context: { exportAllTiles: true },
  labelSets: ['COCO', 'YOLO'],
  validationFraction: 0.3,
  splitBlockSize: 2,
});

/** PASCAL VOC rotated PNG chips from a rule (three bands), as the pinned export of the chipper's tests. */
export const vocParams = (outputLocation: string): Record<string, unknown> => ({
  inputRaster: { url: RASTER, renderingRule: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2, 1, 0] } } },
  inputClassData: LABELS,
  outputLocation,
  metadataFormat: 'PASCAL_VOC_rectangles',
  chipFormat: 'PNG',
  tileSize: { x: 48, y: 48 },
  strideSize: { x: 24, y: 24 },
  rotationAngle: 90,
  vocExtras: true,
});

function list(root: string): string[] {
  const paths: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else paths.push(relative(root, p));
    }
  };
  walk(root);
  return paths.sort();
}

/** The differences between two folders, file by file and byte for byte (empty when identical). */
export function folderDifferences(expected: string, actual: string): string[] {
  const a = list(expected);
  const b = list(actual);
  const diffs: string[] = [];
  const inB = new Set(b);
  const inA = new Set(a);
  for (const f of a) if (!inB.has(f)) diffs.push(`missing ${f}`);
  for (const f of b) if (!inA.has(f)) diffs.push(`extra ${f}`);
  for (const f of a) {
    if (!inB.has(f)) continue;
    if (!readFileSync(join(expected, f)).equals(readFileSync(join(actual, f)))) diffs.push(`differs ${f}`);
  }
  return diffs;
}

/** How many files a folder holds. */
export const fileCount = (root: string): number => list(root).length;

/**
 * The child processes of a queue test: `rasterflow` commands (`cli`), `rasterflow worker`s
 * (`startWorkers`, resolved once each listens) and any other child (`track`); `killAll()` (in
 * afterEach) kills what still runs and waits for it.
 */
export function queueChildren(env: NodeJS.ProcessEnv) {
  const children: Child[] = [];
  const track = (c: Child): Child => {
    children.push(c);
    return c;
  };
  const cli = (args: readonly string[], o: { limitMs?: number; env?: NodeJS.ProcessEnv } = {}): Child =>
    track(spawnChild('src/cli/main.ts', args, { ...env, ...o.env }, o.limitMs ?? 120_000));
  return {
    cli,
    track,
    async startWorkers(url: string, n: number, o: { env?: NodeJS.ProcessEnv } = {}): Promise<Child[]> {
      const ws = Array.from({ length: n }, () => cli(['worker', '--queue', url, '--concurrency', '1'], o));
      await Promise.all(ws.map((w) => w.waitFor(/worker on rediss?:/, 60_000)));
      return ws;
    },
    async killAll(): Promise<void> {
      for (const c of children.splice(0)) {
        if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
        await c.exited;
      }
    },
  };
}

/** Jobs of a site's work queue (chip ranges, render bands) not finished: waiting, delayed, active. */
export async function pendingWork(redisUrl: string): Promise<number> {
  const q = new Queue(RANGES_QUEUE, { connection: { ...parseQueueUrl(redisUrl).redis }, prefix: 'rasterflow' });
  try {
    const counts = await q.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  } finally {
    await q.close();
  }
}

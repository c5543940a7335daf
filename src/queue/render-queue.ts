/**
 * Batch renders on the job queue: a render's output cut into bands of whole tile rows, each band a
 * `band` job that a `rasterflow worker` renders (the DAG rebuilt from the recipe, with the request
 * statistics the submitter bound over the whole output) and leaves in a staging folder; the
 * submitting process reads the bands back in order and hands their tiles, in the order a
 * one-process render yields them, to its consumer (the streaming GeoTIFF writer). Tiles never
 * depend on the process that computed them, so the output is the one-process render's, bit for bit;
 * compression, overviews and statistics stay with the one writer.
 *
 * A worker killed mid-band loses nothing: the band is written under a temporary name and renamed
 * whole, and BullMQ gives the band to another worker once the lock of the dead one expires. A band
 * that fails (a raster that cannot be read) fails the render with its error; the render's
 * remaining bands are taken off the queue and the workers told to stop the ones they hold.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open as openFile, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { EngineError, writeCause } from '../core/errors.js';
import type { PixelBlock } from '../core/pixel-block.js';
import { PIXEL_TYPE_INFO } from '../core/pixel-type.js';
import { rect, tiles, type Rect } from '../core/rect.js';
import { bindRequest, planTiles, renderTiles, type Recipe } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import { useRecipeGraph } from '../workers/recipe-graph.js';
import { inFlightWindow, type QueueSettings } from './connection.js';
import { failure, finished } from './export-queue.js';
import { stagedTile, stagedTiles, stagingRoot } from './staging.js';

/** The name of a band job on the ranges queue. */
export const BAND_JOB = 'band';

/** The data of a `band` job. */
export interface BandJobData {
  readonly renderId: string;
  /** The render's recipe, its request statistics bound. */
  readonly recipe: Recipe;
  /** The band: whole tile rows of the output, `[x, y, width, height]`. */
  readonly band: readonly [number, number, number, number];
  readonly tile: readonly [number, number];
  /** The render's staging folder (every worker sees it). */
  readonly staging: string;
  /** The band's number, its file's name. */
  readonly index: number;
}

/** About this many bytes of pixels (and mask) per band: small enough to spread a render over workers. */
const BAND_BYTES = 4 * 1024 * 1024;
/** Bands on the queue ahead of the one being read, at least (connection.ts inFlightWindow): the staging folder holds about this many. */
const DEFAULT_AHEAD = 16;
/** Tiles rendered between two checks that the render still goes on. */
const STOP_EVERY = 16;
const DAY = 86400;

const stopKey = (s: QueueSettings, renderId: string): string => `${s.prefix}:rasterflow:render-stop:${renderId}`;
const bandId = (renderId: string, k: number): string => `${renderId}-b${k}`;
const bandFile = (dir: string, k: number): string => join(dir, `${k}.band`);

// ---- The worker's side.

/** Render one band into its staging file (the processor of `band` jobs). */
export async function renderBandJob(redis: Redis, s: QueueSettings, job: Job<BandJobData>): Promise<{ tiles: number }> {
  const d = job.data;
  const stopped = async (): Promise<void> => {
    if ((await redis.exists(stopKey(s, d.renderId))) === 1) throw new EngineError('ABORTED', 'the render was stopped');
  };
  const graph = useRecipeGraph(d.recipe);
  try {
    await stopped();
    // Bound nodes ask for no statistics: renderTiles makes no pre-pass over the band.
    const root = await graph.root;
    const [x, y, width, height] = d.band;
    const parts: Buffer[] = [];
    let n = 0;
    for await (const t of renderTiles(root, {
      rect: rect(x, y, width, height),
      tileSize: d.tile,
      transient: true,
      concurrency: 16,
    })) {
      parts.push(...stagedTile(t));
      if (++n % STOP_EVERY === 0) await stopped();
    }
    const file = bandFile(d.staging, d.index);
    // Whole or absent; the suffix keeps a retried band's writer apart from a stalled one's.
    const tmp = `${file}.part-${process.pid}-${randomUUID().slice(0, 8)}`;
    try {
      const fh = await openFile(tmp, 'w');
      try {
        await fh.writev(parts);
      } finally {
        await fh.close();
      }
      await rename(tmp, file);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw new EngineError('IO_ERROR', `cannot write the staged band ${file}: ${writeCause(e)}`, { path: 'output', cause: e });
    }
    return { tiles: n };
  } catch (e) {
    throw failure(e);
  } finally {
    graph.release();
  }
}

// ---- The submitter's side.

export interface QueuedRenderOptions {
  /** Output rectangle; default the whole raster. */
  readonly rect?: Rect;
  /** Tile edge (default 256) or `[width, height]`: the tiles yielded, as renderTiles yields them. */
  readonly tileSize?: number | readonly [number, number];
  /** How workers rebuild the graph (required: workers run in other processes). */
  readonly recipe: Recipe;
  /** A folder every worker sees (bands are staged below it, then removed). */
  readonly staging: string;
  /** Rows per band, a multiple of the tile height (default: about 4 MiB of pixels per band). */
  readonly bandRows?: number;
  /** Bands on the queue ahead of the one being read (default: twice the live workers' slots, at least 16). */
  readonly ahead?: number;
  readonly signal?: AbortSignal;
  /** Told the render's id once its first bands are on the queue. */
  readonly onSubmitted?: (renderId: string, bands: number) => void;
}

/** The bands of a render: whole tile rows of `area`, about BAND_BYTES each unless `rows` is given. */
export function planBands(area: Rect, tileHeight: number, bytesPerPixel: number, rows?: number): Rect[] {
  const per = rows !== undefined ? rows : tileHeight * Math.max(1, Math.floor(BAND_BYTES / (area.width * bytesPerPixel * tileHeight)));
  if (!Number.isInteger(per) || per < tileHeight || per % tileHeight !== 0) {
    throw new EngineError('INVALID_ARGUMENT', `rows per band must be a whole multiple of the tile height ${tileHeight}, got ${rows}`, {
      path: 'band-rows',
    });
  }
  return tiles(area, area.width, per);
}

/**
 * The tiles of a render computed by queue workers, in row-major order, as `renderTiles` yields
 * them (each valid until the next is asked for). The graph is the submitter's: it binds the
 * request statistics and checks the tiles that come back.
 */
export async function* queuedTiles(
  ranges: Queue,
  redis: Redis,
  s: QueueSettings,
  graph: RasterNode,
  o: QueuedRenderOptions,
): AsyncGenerator<PixelBlock> {
  const { area, tileRects } = planTiles(graph, o);
  const size = o.tileSize ?? 256;
  const [tw, th] = typeof size === 'number' ? [size, size] : size;
  const { root, recipe } = await bindRequest(graph, area, { recipe: o.recipe, signal: o.signal });
  const info = root.info;
  const bands = planBands(area, th, Math.ceil(PIXEL_TYPE_INFO[info.pixelType].bits / 8) * info.bandCount + 1, o.bandRows);
  const renderId = randomUUID();
  const dir = join(stagingRoot(o.staging), `render-${renderId}`);
  const window = o.ahead !== undefined ? () => Promise.resolve(Math.max(1, o.ahead!)) : inFlightWindow(ranges, DEFAULT_AHEAD);
  try {
    await mkdir(dir, { recursive: true });
  } catch (e) {
    throw new EngineError('IO_ERROR', `cannot make the staging folder ${dir}: ${writeCause(e)}`, { path: 'output', cause: e });
  }
  let added = 0;
  let k = 0;
  const add = async (): Promise<void> => {
    const ahead = await window();
    for (; added < bands.length && added <= k + ahead; added++) {
      const b = bands[added]!;
      const data: BandJobData = {
        renderId,
        recipe: recipe!,
        band: [b.x, b.y, b.width, b.height],
        tile: [tw, th],
        staging: dir,
        index: added,
      };
      await ranges.add(BAND_JOB, data, {
        jobId: bandId(renderId, added),
        attempts: 3,
        removeOnComplete: { age: DAY },
        removeOnFail: { age: DAY },
      });
    }
  };
  let next = 0;
  try {
    await add();
    o.onSubmitted?.(renderId, bands.length);
    for (; k < bands.length; k++) {
      const b = bands[k]!;
      const what = `band ${k + 1} of ${bands.length} (rows ${b.y}..${b.y + b.height - 1})`;
      await finished(ranges, bandId(renderId, k), what, o.signal, 'the render was cancelled');
      const file = bandFile(dir, k);
      let buf: Buffer;
      try {
        buf = await readFile(file);
      } catch (e) {
        throw new EngineError(
          'IO_ERROR',
          `${what} was rendered, but its staged file ${file} cannot be read (${writeCause(e)}): the workers must see the output's folder`,
          { path: 'output', cause: e },
        );
      }
      for (const t of stagedTiles(buf, file)) {
        const want = tileRects[next++];
        if (
          want === undefined ||
          want.x !== t.rect.x ||
          want.y !== t.rect.y ||
          want.width !== t.rect.width ||
          want.height !== t.rect.height
        ) {
          throw new EngineError(
            'INTERNAL',
            `${what} came back with a tile at ${JSON.stringify(t.rect)} where ${JSON.stringify(want)} was due`,
          );
        }
        yield t;
      }
      await rm(file, { force: true });
      await (await Job.fromId(ranges, bandId(renderId, k)))?.remove().catch(() => undefined);
      await add();
    }
    if (next !== tileRects.length) throw new EngineError('INTERNAL', `the bands came back with ${next} tiles of ${tileRects.length}`);
  } finally {
    // Done, failed or stopped: the workers stop what they hold of it, its waiting bands go.
    if (k < bands.length) {
      await redis.set(stopKey(s, renderId), '1', 'EX', DAY).catch(() => undefined);
      for (let j = k; j < added; j++) {
        const job = await Job.fromId(ranges, bandId(renderId, j)).catch(() => undefined);
        if (job && ['waiting', 'delayed', 'prioritized'].includes(await job.getState())) await job.remove().catch(() => undefined);
      }
    }
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

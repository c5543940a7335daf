/**
 * The files of an export. Every file is written under a temporary name and renamed into place,
 * so a file holds all its bytes or is absent. A chip's files are small and written synchronously,
 * one after the other (writeAtomicSync); the export's closing metadata asynchronously (writeAtomic).
 * Image and label rasters go through the encoders, georeferenced by a world file and a PAM `.aux.xml`.
 */
import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { access, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import { EngineError, writeCause } from '../core/errors.js';
import { windowInfo, type PixelBlock, type RasterInfo } from '../core/pixel-block.js';
import { GeoTiffSeries } from '../io/encode-tiff.js';
import { encodeJpeg } from '../io/encode-jpeg.js';
import { encodeMrf } from '../io/encode-mrf.js';
import { encodePng } from '../io/encode-png.js';
import type { ByteHistograms } from '../io/pixel-statistics.js';
import { geoTransform, type Candidate } from './grid.js';

const WORLD_EXT: Readonly<Record<string, string>> = { tif: 'tfw', png: 'pgw', jpg: 'jgw', mrf: 'mfw' };

/** Whether `path` exists. */
export const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** A temporary file of writeAtomic: the final name, `.part-`, the writing process's id. */
const TEMPORARY = /\.part-\d+$/;

/**
 * A failed write of the output in words an operator acts on: IO_ERROR naming the file, the cause and
 * its errno code (`path` outputLocation, the parameter that chose the folder). EngineErrors pass.
 */
export function writeError(file: string, e: unknown): EngineError {
  if (e instanceof EngineError) return e;
  return new EngineError('IO_ERROR', `cannot write ${file}: ${writeCause(e)}`, {
    path: 'outputLocation',
    cause: e,
  });
}

/**
 * Write `data` to `path` through a temporary name; returns the bytes written. A failure (a full
 * disk) removes the temporary file and throws writeError: the final name is never half written.
 */
export async function writeAtomic(
  path: string,
  data: string | Uint8Array,
  makeDir: (dir: string) => Promise<unknown> = (dir) => mkdir(dir, { recursive: true }),
): Promise<number> {
  try {
    await makeDir(dirname(path));
  } catch (e) {
    throw writeError(dirname(path), e);
  }
  const tmp = `${path}.part-${process.pid}`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw writeError(path, e);
  }
  return typeof data === 'string' ? Buffer.byteLength(data) : data.length;
}

/**
 * writeAtomic, synchronously: `data` to `path` through a temporary name (one open, one write as a
 * rule, one close, one rename); returns the bytes written. The folder must exist (`makeDir`).
 * A failure removes the temporary file and throws writeError.
 *
 * Decision: a chip's files (a few tens of KB each) are written with synchronous calls. On a local
 * disk that takes well under a millisecond per file, where the promise API's round trips through
 * the thread pool took two to three times as long and made file creation most of an export's
 * time. The export loop yields to the event loop between chips (setImmediate in export.ts, the
 * queue's Redis calls in src/queue), so a server running an export still answers between chips.
 */
export function writeAtomicSync(path: string, data: string | Uint8Array, makeDir: (dir: string) => void = mkdirAll): number {
  try {
    makeDir(dirname(path));
  } catch (e) {
    throw writeError(dirname(path), e);
  }
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const tmp = `${path}.part-${process.pid}`;
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'w');
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at);
    const open = fd;
    fd = undefined;
    closeSync(open);
    renameSync(tmp, path);
  } catch (e) {
    if (fd !== undefined) closeQuietly(fd);
    rmSync(tmp, { force: true });
    throw writeError(path, e);
  }
  return bytes.length;
}

const mkdirAll = (dir: string): void => void mkdirSync(dir, { recursive: true });

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // the write's own error is the one reported
  }
}

/**
 * Remove the temporary files below `root` that a killed export left (it died between writing a
 * file and renaming it into place); returns how many.
 */
export async function removeTemporaries(root: string): Promise<number> {
  const stale = (await readdir(root, { recursive: true })).filter((f) => TEMPORARY.test(f));
  await all(stale.map((f) => rm(join(root, f), { force: true })));
  return stale.length;
}

/** Await every promise, then throw the first rejection: no write is left running behind an error. */
export async function all(promises: readonly (Promise<unknown> | undefined)[]): Promise<void> {
  for (const r of await Promise.allSettled(promises.map((p) => p ?? Promise.resolve()))) if (r.status === 'rejected') throw r.reason;
}

/** The output folder of one export: atomic writes below it, each folder made once. */
export class ExportFolder {
  private readonly dirs = new Map<string, Promise<unknown>>();
  private readonly makeDir = (dir: string): Promise<unknown> => {
    let made = this.dirs.get(dir);
    if (made === undefined) this.dirs.set(dir, (made = mkdir(dir, { recursive: true })));
    return made;
  };
  private readonly dirsMade = new Set<string>();
  private readonly makeDirSync = (dir: string): void => {
    if (this.dirsMade.has(dir)) return;
    mkdirSync(dir, { recursive: true });
    this.dirsMade.add(dir);
  };

  /** The GeoTIFF chips' encoder: their tags built once per layout. */
  readonly tiffs = new GeoTiffSeries();

  constructor(readonly root: string) {}

  /** Write `data` to `rel` below the folder; returns the bytes written. */
  write(rel: string, data: string | Uint8Array): Promise<number> {
    return writeAtomic(join(this.root, rel), data, this.makeDir);
  }

  /** `write`, synchronously (a chip's files: writeAtomicSync). */
  writeSync(rel: string, data: string | Uint8Array): number {
    return writeAtomicSync(join(this.root, rel), data, this.makeDirSync);
  }

  /** The files of chip `c` of a raster described by `info`. */
  chip(c: Candidate, info: RasterInfo): ChipFiles {
    return new ChipFiles(this, c, info, this.tiffs);
  }
}

/** The files of one chip, counting the bytes written. */
export class ChipFiles {
  bytes = 0;

  constructor(
    private readonly folder: ExportFolder,
    private readonly c: Candidate,
    private readonly info: RasterInfo,
    private readonly tiffs = new GeoTiffSeries(),
  ) {}

  /**
   * A text (or binary) file at `rel` below the export folder, written before this returns
   * (writeAtomicSync); a failed write is the promise's rejection.
   */
  file(rel: string, data: string | Uint8Array): Promise<void> {
    try {
      this.bytes += this.folder.writeSync(rel, data);
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  /**
   * A raster chip at `rel` in the format its extension names (tif, png, jpg, mrf), on the grid of
   * `rasterInfo` (default the export's raster); `sidecars` adds its world file and `.aux.xml`.
   * `known`: what the caller already knows of the block: its byte bands' histograms (a GeoTIFF's
   * statistics take them) and whether its mask is all valid (maskAllValid).
   */
  async raster(
    rel: string,
    block: PixelBlock,
    sidecars: boolean,
    rasterInfo = this.info,
    known: { readonly byteHistograms?: ByteHistograms; readonly allValid?: boolean } = {},
  ): Promise<void> {
    const info: RasterInfo = { ...windowInfo(rasterInfo, this.c.window), bandCount: block.bands.length, pixelType: block.pixelType };
    const ext = extname(rel).slice(1);
    const writes: Promise<void>[] = [];
    // A GeoTIFF's blocks deflate on the codec threads; the file is written once they are done (the
    // block is read before GeoTiffSeries.encode returns: its planes are free at once).
    if (ext === 'tif')
      writes.push(
        this.tiffs
          .encode(block, info, known.byteHistograms ? { byteHistograms: known.byteHistograms } : {}, known.allValid)
          .then((bytes) => this.file(rel, bytes)),
      );
    else if (ext === 'png') writes.push(this.file(rel, encodePng(block, info)));
    else if (ext === 'jpg') writes.push(this.file(rel, encodeJpeg(block, info, { quality: 90 })));
    else {
      const base = rel.slice(rel.lastIndexOf('/') + 1, -4);
      const m = encodeMrf(block, info, base);
      writes.push(this.file(`${rel.slice(0, -4)}.idx`, m.index), this.file(`${rel.slice(0, -4)}.pzp`, m.data), this.file(rel, m.header));
    }
    if (sidecars) writes.push(this.sidecars(rel, rasterInfo));
    await all(writes);
  }

  /** World file (six lines: A D B E C F with C, F at the centre of the first pixel) and PAM `.aux.xml`. */
  private async sidecars(rel: string, rasterInfo: RasterInfo): Promise<void> {
    const gt = geoTransform(this.c, rasterInfo);
    const [a, b, cc, d, e, f] = [gt[1]!, gt[2]!, gt[0]!, gt[4]!, gt[5]!, gt[3]!];
    const world = [a, d, b, e, cc + a / 2 + b / 2, f + d / 2 + e / 2].map((v) => v.toFixed(10)).join('\n');
    const ext = extname(rel).slice(1);
    const worldFile = this.file(`${rel.slice(0, -ext.length)}${WORLD_EXT[ext] ?? 'wld'}`, `${world}\n`);
    const sr = rasterInfo.spatialReference;
    const srs = sr?.wkt ?? (sr?.wkid !== undefined ? `EPSG:${sr.wkid}` : undefined);
    const aux = [
      '<PAMDataset>',
      ...(srs ? [`  <SRS>${srs.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</SRS>`] : []),
      `  <GeoTransform>${gt.map((v) => v.toPrecision(17)).join(', ')}</GeoTransform>`,
      '</PAMDataset>',
      '',
    ];
    await all([worldFile, this.file(`${rel}.aux.xml`, aux.join('\n'))]);
  }
}

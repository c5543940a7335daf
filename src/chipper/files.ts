/**
 * The files of an export. Every file is written under a temporary name and renamed into place,
 * so a file holds all its bytes or is absent. A chip's files are small and written with synchronous
 * calls, one after the other, on a thread of their own (writeAtomicOffThread: writeAtomicSync's
 * steps); the export's closing metadata asynchronously (writeAtomic).
 * Image and label rasters go through the encoders, georeferenced by a world file and a PAM `.aux.xml`.
 */
import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { access, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
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
 * The one-process export runs these calls on the file writer thread (writeAtomicOffThread).
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

/**
 * The file writer thread: writeAtomicSync's steps (a temporary name in the same folder, one open,
 * the writes, one close, one rename; the temporary file removed after a failure), run for the
 * main thread. Its folder must exist.
 */
const WRITER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
parentPort.on('message', (m) => {
  const tmp = m.path + '.part-' + m.pid;
  let fd;
  try {
    const bytes = typeof m.data === 'string' ? Buffer.from(m.data) : m.data;
    fd = fs.openSync(tmp, 'w');
    for (let at = 0; at < bytes.length;) at += fs.writeSync(fd, bytes, at, bytes.length - at);
    const open = fd;
    fd = undefined;
    fs.closeSync(open);
    fs.renameSync(tmp, m.path);
    parentPort.postMessage({ id: m.id, bytes: bytes.length });
  } catch (e) {
    if (fd !== undefined) try { fs.closeSync(fd); } catch {}
    try { fs.rmSync(tmp, { force: true }); } catch {}
    parentPort.postMessage({ id: m.id, error: String(e && e.message), code: e && e.code });
  }
});
`;

interface WriteJob {
  readonly path: string;
  readonly resolve: (bytes: number) => void;
  readonly reject: (e: Error) => void;
}

interface WriterThread {
  readonly worker: Worker;
  readonly jobs: Map<number, WriteJob>;
}

let writerThread: WriterThread | undefined;
let writerRefused = false;
let nextWrite = 0;

/** The file writer thread, started on first use (undefined where threads cannot start: writes stay here). */
function fileWriter(): WriterThread | undefined {
  if (writerThread !== undefined || writerRefused) return writerThread;
  let worker: Worker;
  try {
    worker = new Worker(WRITER_SOURCE, { eval: true, execArgv: [] });
  } catch {
    writerRefused = true;
    return undefined;
  }
  const t: WriterThread = { worker, jobs: new Map() };
  worker.on('message', (m: { id: number; bytes?: number; error?: string; code?: string }) => {
    const job = t.jobs.get(m.id);
    if (job === undefined) return;
    t.jobs.delete(m.id);
    if (t.jobs.size === 0) worker.unref();
    if (m.error !== undefined) job.reject(writeError(job.path, Object.assign(new Error(m.error), m.code ? { code: m.code } : {})));
    else job.resolve(m.bytes!);
  });
  const fail = (e: unknown): void => {
    if (writerThread === t) writerThread = undefined;
    for (const job of t.jobs.values()) job.reject(writeError(job.path, e));
    t.jobs.clear();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the file writer thread stopped (exit code ${code})`)));
  // Unreferenced while idle (referenced again while a write is pending): it never holds the process open.
  worker.unref();
  writerThread = t;
  return t;
}

/**
 * writeAtomicSync of `data` to `path` (its folder made), on the file writer thread: the bytes
 * written once the file is in place, or writeError. Where no thread can start, written here.
 *
 * Decision: a chip's files are written on a thread of their own. Creating a file costs the thread
 * that creates it 0.1-0.8 ms in the kernel (more while the file system recycles recently deleted
 * inodes), four files a chip: on the main thread that was a third to half of an export's time, now
 * it runs beside the rendering and encoding of the next chips. The bytes and the crash contract are
 * writeAtomicSync's: a file is complete under its name or absent, and a chip is recorded in the
 * journal only once every file of it is in place.
 */
export function writeAtomicOffThread(path: string, data: string | Uint8Array): Promise<number> {
  const t = fileWriter();
  if (t === undefined) {
    try {
      return Promise.resolve(writeAtomicSync(path, data, () => undefined));
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }
  const id = nextWrite++;
  return new Promise((resolve, reject) => {
    t.jobs.set(id, { path, resolve, reject });
    if (t.jobs.size === 1) t.worker.ref();
    // Copied, not transferred: the caller keeps its bytes.
    t.worker.postMessage({ id, path, pid: process.pid, data });
  });
}

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

  /** `write`, synchronously (writeAtomicSync). */
  writeSync(rel: string, data: string | Uint8Array): number {
    return writeAtomicSync(join(this.root, rel), data, this.makeDirSync);
  }

  /** `write` on the file writer thread (a chip's files: writeAtomicOffThread), its folder made here. */
  writeOffThread(rel: string, data: string | Uint8Array): Promise<number> {
    const path = join(this.root, rel);
    try {
      this.makeDirSync(dirname(path));
    } catch (e) {
      return Promise.reject(writeError(dirname(path), e));
    }
    return writeAtomicOffThread(path, data);
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
   * A text (or binary) file at `rel` below the export folder, on the file writer thread (`data` is
   * copied before this returns); the promise settles once the file is in place, or with the failure.
   */
  file(rel: string, data: string | Uint8Array): Promise<void> {
    return this.folder.writeOffThread(rel, data).then((bytes) => {
      this.bytes += bytes;
    });
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

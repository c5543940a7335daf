/**
 * The output folder's state. The resume journal (`.rasterflow-journal.ndjson`): a head line with a
 * hash of the parameters, then one JSON line per finished chip, appended after all of that chip's
 * files are in place, so a killed export is continued after its last recorded chip (a line cut by
 * the kill or by a full disk is a chip not finished: the journal is cut back to its complete lines;
 * the temporary files the kill left are removed). An earlier finished export in the folder (its EAS
 * present) is appended to with `context.startIndex`, merging its statistics and classes.
 */
import { createHash } from 'node:crypto';
import { writeSync } from 'node:fs';
import { open, readFile, rm, stat, truncate, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError } from '../core/errors.js';
import type { RasterInfo } from '../core/pixel-block.js';
import { exists, removeTemporaries, writeError } from './files.js';
import { classesOf } from './inputs.js';
import type { cocoAnnotations } from './labels.js';
import { statsFromEas, type ChipRecordStats, type ClassInfo } from './metadata.js';
import type { ChipParams } from './params.js';

const JOURNAL = '.rasterflow-journal.ndjson';

/** What the journal keeps per written chip (plain JSON). */
export interface ChipEntry {
  readonly candidate: number;
  readonly index: number;
  readonly item: number;
  readonly window: readonly number[];
  readonly angle: number;
  readonly split: 'train' | 'valid';
  readonly mapLine: string;
  readonly empty: boolean;
  readonly stats: ChipRecordStats;
  readonly labels: number;
  readonly bytes: number;
  readonly coco?: ReturnType<typeof cocoAnnotations>;
  readonly image: string;
}

/** A finished export already in the folder, appended to. */
export interface EarlierExport {
  readonly stats: ReturnType<typeof statsFromEas>;
  readonly mapTxt: string;
}

export interface FolderState {
  /** Chips recorded by an unfinished export's journal (resume), in order. */
  readonly done: ChipEntry[];
  readonly earlier?: EarlierExport;
  /** The classes, with an earlier export's colours (and its classes when this export has none). */
  readonly classes: ClassInfo[];
}

/**
 * What the folder `p.outputLocation` holds: a journal (continued with `resume`, refused without),
 * an earlier export (appended to with `context.startIndex`, refused without), or nothing.
 */
export async function folderState(p: ChipParams, info: RasterInfo, classes: ClassInfo[]): Promise<FolderState> {
  const out = p.outputLocation;
  const journalPath = join(out, JOURNAL);
  const done: ChipEntry[] = [];
  const journal = await exists(journalPath);
  if (journal) {
    if (!p.resume)
      throw new EngineError(
        'INVALID_ARGUMENT',
        `${out} holds an unfinished export; pass "resume": true to continue it, or choose another folder`,
        { path: 'outputLocation' },
      );
    const text = await readFile(journalPath, 'utf8');
    const lines = text.split('\n');
    // Decision: a head line that never got its newline (the disk filled at the first write) is a
    // journal of no chip: the export stopped before its first one, so it starts over.
    if (lines.length > 1) {
      const head = safeJson(lines[0]) as { paramsHash?: string } | undefined;
      if (head?.paramsHash !== paramsHash(p))
        throw new EngineError(
          'INVALID_ARGUMENT',
          `the unfinished export in ${out} was started with other parameters; it cannot be resumed with these`,
          { path: 'resume' },
        );
    }
    // Only the complete lines before the first broken one are trusted (a line cut by a kill or by a
    // full disk, with nothing or a later chip appended to it). The journal is cut back to them, so
    // that the chips written again are appended on a line of their own and none is ever skipped.
    let trusted = 0;
    if (lines.length > 1) {
      trusted = Buffer.byteLength(lines[0]!) + 1;
      for (const line of lines.slice(1, -1)) {
        const e = safeJson(line) as ChipEntry | undefined;
        if (e === undefined || typeof e.index !== 'number') break;
        done.push(e);
        trusted += Buffer.byteLength(line) + 1;
      }
    }
    if (trusted < Buffer.byteLength(text)) await truncate(journalPath, trusted);
    // A kill between a file's write and its rename left its temporary: the chip is written again.
    await removeTemporaries(out);
  }
  const easPath = join(out, 'geo_accumulated_stats.json');
  if (journal || !(await exists(easPath))) return { done, classes };
  if (p.context.startIndex === 0)
    throw new EngineError(
      'INVALID_ARGUMENT',
      `${out} already holds an export; set context.startIndex to append to it, or choose another folder`,
      { path: 'outputLocation' },
    );
  const eas = JSON.parse(await readFile(easPath, 'utf8')) as Record<string, unknown>;
  const mismatch =
    eas.MetaDataMode !== p.metadataFormat
      ? `MetaDataMode ${String(eas.MetaDataMode)}`
      : eas.NumBands !== info.bandCount
        ? `NumBands ${String(eas.NumBands)}`
        : eas.TileSizeX !== p.tileSize.x || eas.TileSizeY !== p.tileSize.y
          ? 'tile size'
          : undefined;
  const oldClasses = (Array.isArray(eas.Classes) ? eas.Classes : []) as { ClassValue: number; ClassName: string }[];
  if (mismatch)
    throw new EngineError('INVALID_ARGUMENT', `cannot append to ${out}: its ${mismatch} differs from this export`, {
      path: 'context.startIndex',
    });
  const union = classesOf([
    ...oldClasses.map((c) => [c.ClassValue, c.ClassName] as [number, string]),
    ...classes.map((c) => [c.value, c.name] as [number, string]),
  ]);
  if (union.length !== oldClasses.length || oldClasses.some((c, i) => union[i]?.value !== c.ClassValue)) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `cannot append to ${out}: its classes (${oldClasses.map((c) => c.ClassValue).join(', ')}) differ from this export's (${classes.map((c) => c.value).join(', ')})`,
      { path: 'inputClassData' },
    );
  }
  const oldColors = new Map(
    (Array.isArray(eas.Classes) ? (eas.Classes as { ClassValue: number; Color: [number, number, number] }[]) : []).map((c) => [
      c.ClassValue,
      c.Color,
    ]),
  );
  const merged: ClassInfo[] =
    classes.length === 0
      ? oldClasses.map((c) => ({ value: c.ClassValue, name: c.ClassName, color: oldColors.get(c.ClassValue) ?? [0, 0, 0] }))
      : classes.map((c) => ({ ...c, color: oldColors.get(c.value) ?? c.color }));
  const mapPath = join(out, 'map.txt');
  const earlier = { stats: statsFromEas(eas, merged), mapTxt: (await exists(mapPath)) ? await readFile(mapPath, 'utf8') : '' };
  if (p.context.startIndex < earlier.stats.nextIndex) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `context.startIndex ${p.context.startIndex} would overwrite chips of the existing export (its next free index is ${earlier.stats.nextIndex})`,
      { path: 'context.startIndex' },
    );
  }
  return { done, earlier, classes: merged };
}

/** The journal being written: opened (its head written when new) before the first chip, removed after the metadata. */
export class Journal {
  private closed = false;

  private constructor(
    private readonly path: string,
    private readonly handle: FileHandle,
  ) {}

  /** Open the journal of `p.outputLocation` for appending; a new journal starts with its head line. */
  static async open(p: ChipParams, firstCandidate: number): Promise<Journal> {
    const path = join(p.outputLocation, JOURNAL);
    const fresh = ((await stat(path).catch(() => undefined))?.size ?? 0) === 0;
    let handle: FileHandle;
    try {
      handle = await open(path, 'a');
    } catch (e) {
      throw writeError(path, e);
    }
    const journal = new Journal(path, handle);
    if (fresh) await journal.line({ paramsHash: paramsHash(p), started: firstCandidate });
    return journal;
  }

  /**
   * Record a finished chip (all its files in place): its line is written before this returns (one
   * synchronous write, as the chip's files: files.ts writeAtomicSync); a failed write is the
   * promise's rejection.
   */
  append(entry: ChipEntry): Promise<void> {
    try {
      this.lineSync(entry);
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  private async line(value: unknown): Promise<void> {
    try {
      await this.handle.appendFile(`${JSON.stringify(value)}\n`);
    } catch (e) {
      throw writeError(this.path, e);
    }
  }

  /** `line`, synchronously: every byte of the line appended, or writeError (a cut line is a chip not finished). */
  private lineSync(value: unknown): void {
    const bytes = Buffer.from(`${JSON.stringify(value)}\n`);
    try {
      for (let at = 0; at < bytes.length;) at += writeSync(this.handle.fd, bytes, at, bytes.length - at);
    } catch (e) {
      throw writeError(this.path, e);
    }
  }

  /** Close the file (idempotent); the journal stays for a resume. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close();
  }

  /** The export is finished: its metadata is written. */
  async remove(): Promise<void> {
    await this.close();
    await rm(this.path, { force: true });
  }
}

const paramsHash = (p: ChipParams): string =>
  createHash('sha256')
    .update(JSON.stringify({ ...p, resume: undefined }))
    .digest('hex')
    .slice(0, 16);

function safeJson(line: string | undefined): unknown {
  if (line === undefined || line.trim() === '') return undefined;
  try {
    return JSON.parse(line);
  } catch {
    return undefined; // a line cut by a kill: that chip was not finished
  }
}

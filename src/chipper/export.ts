/**
 * `exportTrainingData(params, { signal, onProgress, pool, dryRun })`: the training-data export of
 * seed section 6, writing the folder described in `../shared/spec/training-data-export.md`.
 *
 * Order of work: parse and check every parameter; open the rasters (a rendering rule is rendered
 * through the engine) and the labels; plan the candidate chips in a fixed row-major order (grid
 * formats) or one per feature (Labeled_Tiles, Imagenet); compute each candidate's labels from the
 * geometry alone; render the kept candidates (any pool: tiles never depend on each other) and
 * consume the results strictly in candidate order, so indexes, files and statistics are identical
 * for any worker count. Each finished chip is written file by file through a temporary name and
 * then recorded in the journal (`.rasterflow-journal.ndjson`); `map.txt`, the EMD, the EAS,
 * `stats.txt` and `manifest.json` are written last, atomically, from the journal, and the
 * journal is removed. A killed export leaves the journal: `resume: true` continues after the last
 * recorded chip and ends with the same bytes as an uninterrupted run. Without `resume`, a folder
 * holding a journal or a finished export (with startIndex 0) is refused.
 *
 * Decisions (contract §13 gaps): dense numbering of emitted chips in candidate order; `edgeMode`
 * pad (default, NoData past the edge), shift or skip; rotated chips take the next indices right
 * after their chip, sampled bilinearly (labels: nearest) from a window large enough to have no
 * blank corners, with labels recomputed from the rotated geometry, and georeferenced by a rotated
 * geotransform in the `.aux.xml` and world file (GDAL reads PAM first); exportAllTiles defaults to
 * false; class value 0 is refused; raster labels are always lossless (PNG when chips are JPEG or
 * PNG, else TIFF); images with more than 3 bands or not 8-bit cannot be PNG/JPEG chips (an error
 * naming chipFormat). Label rasters use the class raster's values; box formats over a class raster
 * take 4-connected components of each class as objects.
 *
 * This module runs the export; its parts live beside it: inputs.ts (opening and checking inputs),
 * grid.ts (candidates and their labels from the geometry), pixels.ts (rendering a chip),
 * files.ts (atomic asynchronous writes), journal.ts (resume and append), label-writers.ts (one
 * label writer per metadataFormat, and the COCO/YOLO label sets).
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { combinedError, EngineError } from '../core/errors.js';
import { maskAllValid, type PixelBlock } from '../core/pixel-block.js';
import type { HeldBlock } from '../graph/evaluate.js';
import type { TilePool } from '../graph/render.js';
import { openerScope } from '../io/source.js';
import { all, exists, ExportFolder, writeAtomic } from './files.js';
import { boxInside, boxOf } from './geometry.js';
import { chipGrid, componentObjects, countOutside, splitOf, vectorObjects, type Candidate } from './grid.js';
import {
  inputRefusals,
  openInputs,
  openRefusal,
  type ExportInputs,
  type InputPolicy,
  type OpenedRaster,
  type RasterOpener,
} from './inputs.js';
import { folderState, Journal, type ChipEntry, type EarlierExport } from './journal.js';
import {
  LABEL_SETS,
  LABEL_WRITERS,
  type ChipLabels,
  type LabelChip,
  type LabelContext,
  type LabelSet,
  type LabelWriter,
} from './label-writers.js';
import { classRaster, type ChipObject } from './labels.js';
import {
  accumulatedStats,
  addChip,
  chipMoments,
  emptyStats,
  mergeStats,
  modelDefinition,
  momentsOfBands,
  statsText,
  vendorJson,
  type ChipRecordStats,
  type ClassInfo,
  type MetadataContext,
} from './metadata.js';
import { parseChipParams, type ChipParams, type RasterInput } from './params.js';
import { renderChip, renderChipHeld } from './pixels.js';

export interface ExportProgress {
  readonly done: number;
  readonly total: number;
  readonly chips: number;
  readonly message: string;
}

export interface ExportOptions {
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: ExportProgress) => void;
  /** Where chips are rendered (default inline); the output does not depend on it. */
  readonly pool?: TilePool;
  /** Plan only: count chips and labels and estimate the size, write nothing. */
  readonly dryRun?: boolean;
  /**
   * Where inputs may be read from (a server's policy): every location the parameters name,
   * including the rasters inside rendering rules, is checked before anything is opened, and each
   * raster again as it is opened. Without it, any readable path or URL is read (the CLI).
   */
  readonly inputPolicy?: InputPolicy;
  /**
   * The most bytes the export may write for its chips (a disk quota), or a function answering it
   * from the bytes this export has written so far (a quota shared with other exports). Checked
   * before each chip against a bound of the chip's size: an export that would pass it stops with
   * LIMIT_EXCEEDED at `maxBytesName`, its journal holding every chip written before (a resume
   * continues after them). The closing metadata is not counted.
   */
  readonly maxBytes?: number | ((written: number) => number);
  /** The setting a maxBytes stop names (default `maxBytes`). */
  readonly maxBytesName?: string;
}

export interface ExportSummary {
  readonly outputLocation: string;
  readonly dryRun: boolean;
  /** Candidate chip positions considered (including rotations). */
  readonly candidates: number;
  /** Chips written (or, in a dry run, that would be written before pixel-based filters). */
  readonly chips: number;
  /** Label objects written (boxes, masks, tiles). */
  readonly labels: number;
  readonly firstIndex: number;
  readonly nextIndex: number;
  readonly skipped: { readonly noLabels: number; readonly outsideMask: number; readonly noData: number; readonly emptyRatio: number };
  /**
   * Label features (inputClassData and inputInstanceData) that lie entirely outside the raster
   * (every raster item): they label no chip. Counted, never dropped in silence.
   */
  readonly labelsOutsideRaster: number;
  /** Bytes written (dry run: an estimate of the uncompressed size). */
  readonly bytes: number;
  readonly classes: readonly ClassInfo[];
  readonly resumedFrom?: number;
}

const IMAGE_EXT = { TIFF: 'tif', PNG: 'png', JPEG: 'jpg', MRF: 'mrf' } as const;

/** Bytes per pixel of each pixel type (the maxBytes bound of a chip). */
const PIXEL_BYTES: Readonly<Record<string, number>> = { U1: 1, U2: 1, U4: 1, U8: 1, S8: 1, U16: 2, S16: 2, U32: 4, S32: 4, F32: 4, F64: 8 };
/** Room for a chip's side files (world file, `.aux.xml`, label file, encoder headers) in the maxBytes bound. */
const CHIP_SIDE_BYTES = 16 * 1024;
/** Chips whose files may still be being written (their GeoTIFF deflating) when the next is started. */
const WRITE_AHEAD = 3;

export async function exportTrainingData(rawParams: unknown, options: ExportOptions = {}): Promise<ExportSummary> {
  // Every raster this export opens is closed when it ends, on success and on every error path
  // (their file handles were left to the garbage collector before).
  const files = openerScope();
  // A broken input file (cut short, a block past its end) is refused before any chip is written.
  const policy = options.inputPolicy;
  const open: RasterOpener = async (location, o) => {
    const refused = policy ? await openRefusal(policy, location, 'input') : undefined;
    if (refused) throw new EngineError('INVALID_ARGUMENT', refused.message, { path: refused.path });
    const source = await files.open(location, o);
    source.verifyBlocks?.();
    return source;
  };
  // A fresh output folder that an unreadable block stops half-way is removed: nothing is left
  // from a broken file. (An append or a resume keeps its folder and journal; so does a failed write
  // of the output, a full disk: the chips written are kept for a resume once there is room.)
  let fresh: string | undefined;
  try {
    return await exportWith(rawParams, options, open, async (out) => {
      if (!(await exists(out))) fresh = out;
    });
  } catch (e) {
    if (fresh !== undefined && e instanceof EngineError && e.code === 'IO_ERROR' && e.path !== 'outputLocation')
      await rm(fresh, { recursive: true, force: true });
    throw e;
  } finally {
    await files.closeAll();
  }
}

/** A candidate kept for rendering, with its labels from the geometry. */
export interface Planned {
  readonly c: Candidate;
  readonly objects: ChipObject[];
  readonly instanceObjects: ChipObject[];
  /**
   * The chip's pixels once started, until consumed; `release` gives back the planes the renderer
   * lent (renderChipHeld): called once the chip's files have read them.
   */
  pixels?: Promise<{ image: PixelBlock; image2?: PixelBlock; classes?: PixelBlock; release: () => void }>;
}

/** What is fixed for every chip of one export. */
export interface ChipRun {
  readonly p: ChipParams;
  readonly inputs: ExportInputs;
  readonly writer: LabelWriter;
  readonly labels: LabelContext;
  readonly folder: ExportFolder;
  readonly emd: MetadataContext;
}

/**
 * One export planned: parameters checked, inputs opened, candidates and their geometry labels in
 * candidate order, and the output folder's state (a journal continued, an earlier export appended
 * to). The one-process export below and the queued export (src/queue: chip ranges on workers,
 * one finalizer) both start from it, so both number and label the same chips.
 */
export interface ExportPlan {
  readonly p: ChipParams;
  readonly inputs: ExportInputs;
  readonly writer: LabelWriter;
  readonly names: Map<number, string>;
  readonly classValues: number[];
  readonly classes: ClassInfo[];
  readonly emd: MetadataContext;
  readonly labelsOutsideRaster: number;
  readonly candidates: Candidate[];
  /** The candidates left to render (after a resume's journal), those outside the mask dropped. */
  readonly planned: Planned[];
  /** Chips a journal recorded (resume), and an earlier export appended to. */
  readonly done: ChipEntry[];
  readonly earlier: EarlierExport | undefined;
  /** Counts carried from the journal: the next index, chips kept and empty chips kept. */
  readonly nextIndex: number;
  readonly kept: number;
  readonly emptyKept: number;
  readonly skipped: { noLabels: number; outsideMask: number; noData: number; emptyRatio: number };
  readonly firstCandidate: number;
  /** Whether a planned candidate is rendered (it has labels, or every tile is exported). */
  readonly labelled: (pl: Planned) => boolean;
}

/** Plan an export (see ExportPlan); `dryRun` skips reading the output folder. CycleGAN is not planned here. */
export async function planExport(
  p: ChipParams,
  options: Pick<ExportOptions, 'signal' | 'dryRun'>,
  open: RasterOpener,
): Promise<ExportPlan> {
  const { signal } = options;
  const format = p.metadataFormat;
  const writer = LABEL_WRITERS[format];

  const inputs = await openInputs(p, writer, open, signal);
  const { items, info, extra, features, instances, mask, classRasterSource } = inputs;
  // Class names and values as the inputs give them (an append below may add an earlier export's).
  const names = new Map(inputs.classes.map((c) => [c.value, c.name] as const));
  const classValues = inputs.classes.map((c) => c.value);
  const boxes = features.map((f) => boxOf(f.geometry));
  const instanceBoxes = instances.map((f) => boxOf(f.geometry));

  // Candidates.
  const labelsOutsideRaster = countOutside([...features, ...instances], items, info, p.referenceSystem === 'PIXEL_SPACE');
  const candidates = chipGrid(p, items, features, writer.chipPerFeature === true && classRasterSource === undefined);

  // Existing folder: journal (resume), or an earlier export (append with startIndex).
  const { done, earlier, classes } = options.dryRun
    ? { done: [], earlier: undefined, classes: inputs.classes }
    : await folderState(p, info, inputs.classes);

  const emd: MetadataContext = {
    format,
    tileSize: p.tileSize,
    classes,
    ...(inputs.instanceClasses ? { instanceClasses: inputs.instanceClasses } : {}),
    info,
    ...(extra ? { info2: extra.info } : {}),
    rasterCount: items.length,
    blackenAroundFeature: p.blackenAroundFeature,
    fixChipSize: p.fixChipSize,
    imageSpace: p.referenceSystem,
    vectorLabels: p.inputClassData === undefined ? undefined : classRasterSource === undefined,
  };
  const last = done[done.length - 1];
  const skipped = { noLabels: 0, outsideMask: 0, noData: 0, emptyRatio: 0 };
  const firstCandidate = last ? last.candidate + 1 : 0;

  // Labels of each remaining candidate, from the geometry alone.
  const planned: Planned[] = [];
  for (const c of candidates.slice(firstCandidate)) {
    const objects = classRasterSource ? [] : vectorObjects(c, features, boxes, p.minPolygonOverlapRatio);
    const instanceObjects = writer.instances === true ? vectorObjects(c, instances, instanceBoxes, p.minPolygonOverlapRatio) : [];
    if (
      mask !== undefined &&
      !boxInside(mask, { xmin: c.window.x, ymin: c.window.y, xmax: c.window.x + c.window.width, ymax: c.window.y + c.window.height })
    ) {
      skipped.outsideMask++;
      continue;
    }
    planned.push({ c, objects, instanceObjects });
  }
  const labelled = (pl: Planned): boolean =>
    pl.objects.length > 0 || pl.instanceObjects.length > 0 || classRasterSource !== undefined || p.inputClassData === undefined;
  return {
    p,
    inputs,
    writer,
    names,
    classValues,
    classes,
    emd,
    labelsOutsideRaster,
    candidates,
    planned,
    done,
    earlier,
    nextIndex: last ? last.index + 1 : p.context.startIndex,
    kept: done.length,
    emptyKept: done.filter((e) => e.empty).length,
    skipped,
    firstCandidate,
    labelled,
  };
}

/** What is fixed for every chip of a planned export (the output folder is made by the caller). */
export function chipRun(plan: ExportPlan): ChipRun {
  const { p, inputs, writer, emd, classes, names } = plan;
  const imageExt = IMAGE_EXT[p.chipFormat];
  return {
    p,
    inputs,
    writer,
    folder: new ExportFolder(p.outputLocation),
    emd,
    labels: {
      format: p.metadataFormat,
      info: inputs.info,
      classes,
      names,
      maxClass: classes.reduce((m, x) => Math.max(m, x.value), 0),
      labelExt: imageExt === 'tif' || imageExt === 'mrf' ? 'tif' : 'png',
      vocExtras: p.vocExtras,
    },
  };
}

async function exportWith(
  rawParams: unknown,
  options: ExportOptions,
  open: RasterOpener,
  creating: (out: string) => Promise<void>,
): Promise<ExportSummary> {
  const p = parseChipParams(rawParams);
  if (options.inputPolicy) {
    const refused = await inputRefusals(p, options.inputPolicy);
    if (refused.length > 0) throw combinedError(refused);
  }
  const { signal } = options;
  const out = p.outputLocation;

  if (p.metadataFormat === 'CycleGAN') return exportCycleGan(p, options);

  const plan = await planExport(p, options, open);
  const { inputs, writer, classValues, classes, done, earlier, labelsOutsideRaster, candidates, planned, skipped, labelled } = plan;
  const { items, info, extra, classRasterSource } = inputs;
  const names = plan.names;
  let { nextIndex, kept, emptyKept } = plan;

  const total = candidates.length;
  if (options.dryRun) {
    let chips = 0;
    let labels = 0;
    for (const pl of planned) {
      if (!labelled(pl) && !p.context.exportAllTiles) {
        skipped.noLabels++;
        continue;
      }
      chips++;
      labels += pl.objects.length + pl.instanceObjects.length;
    }
    const pixelBytes = { U8: 1, S8: 1, U16: 2, S16: 2, U32: 4, S32: 4, F32: 4, F64: 8 }[info.pixelType as 'U8'] ?? 1;
    const bytes =
      chips *
      p.tileSize.x *
      p.tileSize.y *
      (info.bandCount * pixelBytes + (extra ? extra.info.bandCount : 0) + (writer.rasterLabels === true ? 1 : 0));
    return {
      outputLocation: out,
      dryRun: true,
      candidates: total,
      chips,
      labels,
      firstIndex: p.context.startIndex,
      nextIndex: p.context.startIndex + chips,
      skipped,
      labelsOutsideRaster,
      bytes,
      classes,
    };
  }

  await creating(out);
  await mkdir(out, { recursive: true });
  const run = chipRun(plan);
  const journal = await Journal.open(p, plan.firstCandidate);
  try {
    // Render ahead (any pool), consume strictly in candidate order.
    const inFlight = Math.max(1, 2 * Math.max(1, options.pool?.size ?? 1));
    const start = (k: number): void => {
      const pl = planned[k];
      if (pl === undefined || pl.pixels !== undefined) return;
      if (!labelled(pl) && !p.context.exportAllTiles) return;
      const it = items[pl.c.item]!;
      pl.pixels = (async () => {
        const held: HeldBlock[] = [];
        const release = (): void => {
          for (const h of held.splice(0)) h.release();
        };
        const hold = async (r: OpenedRaster): Promise<PixelBlock> => {
          const h = await renderChipHeld(r, pl.c, options.pool, signal);
          held.push(h);
          return h.block;
        };
        try {
          return {
            image: await hold(it),
            ...(extra ? { image2: await hold(extra) } : {}),
            ...(classRasterSource ? { classes: await renderChip(classRasterSource, pl.c, undefined, signal, true) } : {}),
            release,
          };
        } catch (e) {
          release();
          throw e;
        }
      })();
      pl.pixels.catch(() => undefined);
    };
    for (let k = 0; k < Math.min(inFlight, planned.length); k++) start(k);

    const written: ChipEntry[] = [...done];
    // The byte budget (options.maxBytes): a chip is bounded by its raw pixels plus its side files,
    // or by the largest chip so far if that is larger.
    const budget = options.maxBytes;
    let bytesSoFar = 0;
    let largest = 0;
    const pixelBytes = PIXEL_BYTES[info.pixelType] ?? 8;
    const rawChip =
      p.tileSize.x *
        p.tileSize.y *
        (info.bandCount * pixelBytes + (extra ? extra.info.bandCount * (PIXEL_BYTES[extra.info.pixelType] ?? 8) : 0) + 2) +
      CHIP_SIDE_BYTES;
    const overBudget = (next: number): void => {
      if (budget === undefined) return;
      const limit = typeof budget === 'number' ? budget : budget(bytesSoFar);
      if (bytesSoFar + next <= limit) return;
      const name = options.maxBytesName ?? 'maxBytes';
      throw new EngineError(
        'LIMIT_EXCEEDED',
        `the export stopped before passing the disk quota (${name}): it wrote ${written.length - done.length} chip(s), ${bytesSoFar} bytes, and the next would pass the ${Math.max(0, limit)} bytes left; free space (delete old outputs) or raise ${name}, then submit again with "resume": true`,
        { path: name },
      );
    };
    // Decision: chips are written in a pipeline. A chip's GeoTIFF deflates on the codec threads
    // while the next chips are rendered and their other files written; chips are recorded in the
    // journal strictly in order, each once every file of it is in place, so the folder and the
    // journal are the same for any thread count. A byte budget needs each chip's size before the
    // next is started: with one, chips are written one at a time.
    const depth = budget === undefined ? WRITE_AHEAD : 0;
    const writing: Promise<ChipEntry>[] = [];
    const recordOldest = async (): Promise<void> => {
      const entry = await writing[0]!;
      void writing.shift();
      // A chip that passed the budget after all is not recorded: a resume writes it again.
      overBudget(entry.bytes);
      bytesSoFar += entry.bytes;
      largest = Math.max(largest, entry.bytes);
      await journal.append(entry);
      written.push(entry);
    };
    try {
      for (let k = 0; k < planned.length; k++) {
        // Decision: one turn of the event loop per candidate. A chip's files and its journal line are
        // written synchronously (files.ts writeAtomicSync), and its pixels are often rendered by the
        // time it is consumed, so without this turn a server running the export would answer no
        // request, nor a cancel, until the export ended.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (signal?.aborted) throw new EngineError('ABORTED', 'the export was cancelled', { cause: signal.reason });
        start(k + inFlight);
        const pl = planned[k]!;
        const c = pl.c;
        // Chips recorded and chips being written (a stop finishes and records those: see below).
        options.onProgress?.({ done: c.id + 1, total, chips: written.length + writing.length, message: `chip ${c.id + 1} of ${total}` });
        if (pl.pixels === undefined) {
          skipped.noLabels++;
          continue;
        }
        const px = await pl.pixels;
        pl.pixels = undefined; // consumed: released below, not kept for the rest of the export
        const { image, image2, classes: classChip } = px;
        // Decision: a chip's planes stay in the memory the renderer lent until its files have read
        // them (writeChip reads the pixels before its first await), then are given back: every path
        // out of this iteration (a skip, an error) releases them too.
        try {
          const { width: w, height: h } = c.window;
          let invalid = 0;
          const allValid = maskAllValid(image.mask, 0, w * h);
          if (!allValid) for (let i = 0; i < w * h; i++) if (image.mask[i] === 0) invalid++;
          if (invalid / (w * h) > p.maxNoDataFraction) {
            skipped.noData++;
            continue;
          }
          let objects = pl.objects;
          let classValuesChip: Uint8Array | Uint16Array | undefined;
          if (classChip !== undefined) {
            classValuesChip = run.labels.maxClass > 255 ? new Uint16Array(w * h) : new Uint8Array(w * h);
            for (let i = 0; i < w * h; i++) classValuesChip[i] = classChip.mask[i] ? classChip.bands[0]![i]! : 0;
            objects = componentObjects(classValuesChip, w, h, names);
          }
          const empty = objects.length === 0 && pl.instanceObjects.length === 0;
          if (empty && p.inputClassData !== undefined && emptyKept + 1 > p.maxEmptyChipRatio * (kept + 1)) {
            skipped.emptyRatio++;
            continue;
          }
          overBudget(Math.max(largest, rawChip));
          const index = nextIndex++;
          const chip = labelChip(run, pl, index, image, objects, classValuesChip);
          const entry = writeChip(run, c, index, chip, empty, image, image2, image.mask.length === w * h ? allValid : undefined);
          entry.catch(() => undefined);
          writing.push(entry);
          kept++;
          if (empty) emptyKept++;
        } finally {
          px.release();
        }
        while (writing.length > depth) await recordOldest();
      }
      while (writing.length > 0) await recordOldest();
    } catch (e) {
      // The chips already being written are finished and recorded, in order, up to the first that
      // fails: an export stopped (cancelled, killed by an error) keeps every chip before the one it
      // stopped at, as without the pipeline. No write is left running behind the error.
      try {
        while (writing.length > 0) await recordOldest();
      } catch {
        await Promise.allSettled(writing);
      }
      throw e;
    } finally {
      // Chips rendered ahead and never consumed (a stop): their planes given back once rendered.
      for (const pl of planned)
        pl.pixels?.then(
          (px) => px.release(),
          () => undefined,
        );
    }

    const summary = await writeMetadata(run, written, earlier, classValues);
    await journal.remove();
    options.onProgress?.({ done: total, total, chips: written.length, message: 'done' });
    return {
      outputLocation: out,
      dryRun: false,
      candidates: total,
      chips: written.length,
      labels: summary.labels,
      firstIndex: written[0]?.index ?? p.context.startIndex,
      nextIndex: summary.nextIndex,
      skipped,
      labelsOutsideRaster,
      bytes: summary.bytes,
      classes,
      ...(done.length > 0 ? { resumedFrom: done.length } : {}),
    };
  } finally {
    await journal.close();
  }
}

/** The label sets the export writes, in the order of LABEL_SETS. */
const labelSetsOf = (p: ChipParams): LabelSet[] => (Object.keys(LABEL_SETS) as LabelSet[]).filter((s) => p.labelSets.includes(s));

/**
 * A kept chip from its pixels on, as the one-process loop and a queued range (src/queue) both do it:
 * the pixels outside the feature's objects blackened when asked, and the chip's label record.
 */
export function labelChip(
  run: ChipRun,
  pl: Planned,
  index: number,
  image: PixelBlock,
  objects: ChipObject[],
  classValues: Uint8Array | Uint16Array | undefined,
): LabelChip {
  const { p, writer } = run;
  const c = pl.c;
  const { width: w, height: h } = c.window;
  if (p.blackenAroundFeature && writer.blackensAroundFeature === true && c.feature !== undefined) {
    const inside = new Uint8Array(w * h);
    for (const o of objects) classRaster([o], w, h, inside);
    for (let i = 0; i < w * h; i++) if (inside[i] === 0) for (const band of image.bands) band[i] = 0;
  }
  const stem = String(index).padStart(p.indexDigits, '0');
  return {
    stem,
    imageName: `${stem}.${IMAGE_EXT[p.chipFormat]}`,
    width: w,
    height: h,
    ...(c.feature ? { feature: c.feature } : {}),
    objects,
    instanceObjects: pl.instanceObjects,
    ...(classValues ? { classValues } : {}),
  };
}

/**
 * Write one chip: its image(s), its labels and label sets, each file through a temporary name,
 * all at once. Returns the journal entry, to be recorded once every file is in place.
 * The pixels of `image` and `image2` are read before this returns (before its first await): the
 * caller may give their planes back at once. `imageAllValid`: maskAllValid(image.mask), when known.
 */
export async function writeChip(
  run: ChipRun,
  c: Candidate,
  index: number,
  chip: LabelChip,
  empty: boolean,
  image: PixelBlock,
  image2: PixelBlock | undefined,
  imageAllValid?: boolean,
): Promise<ChipEntry> {
  const { p, writer, inputs } = run;
  const files = run.folder.chip(c, inputs.info);
  const imagePath = `${writer.imageFolder?.(chip, run.labels) ?? 'images'}/${chip.imageName}`;
  const extra = image2 !== undefined ? inputs.extra : undefined;
  const tokens = extra ? [imagePath, `images2/${chip.imageName}`] : [imagePath];
  let labels: ChipLabels = { tokens: [], count: 0 };
  const sets: Pick<ChipEntry, 'coco'> = {};
  // The byte bands are counted once, for the chip's statistics and its GeoTIFF's (the encoder reads
  // the block, histograms included, before files.raster's first await).
  const allValid = imageAllValid ?? maskAllValid(image.mask);
  const { moments, histograms } = chipMoments(image.bands, image.mask, allValid);
  const moments2 = image2 ? momentsOfBands(image2.bands, image2.mask) : undefined;
  await all([
    files.raster(imagePath, image, true, undefined, { byteHistograms: { planes: image.bands, mask: image.mask, histograms }, allValid }),
    extra ? files.raster(tokens[1]!, image2!, true, extra.info) : undefined,
    (async () => {
      labels = await writer.write(chip, run.labels, files);
      for (const set of labelSetsOf(p))
        Object.assign(sets, await LABEL_SETS[set].chip(labels.objects ?? chip.objects, chip, run.labels, files));
    })(),
  ]);
  const objects = labels.objects ?? chip.objects;

  const sep = p.mapTxtStyle === 'vendor';
  const wsl = (s: string): string => s.replace(/\//g, '\\');
  let mapLine = '';
  if (!(writer.mapLineNeedsLabels === true && labels.tokens.length === 0)) {
    if (labels.tokens.length === 0) mapLine = `${wsl(tokens.join(' '))}${sep ? ' ' : ''}`;
    else
      mapLine = sep
        ? `${tokens.map(wsl).join(' ')}  ${labels.tokens.map(wsl).join(' ')} `
        : `${[...tokens, ...labels.tokens].map(wsl).join(' ')}`;
  }
  const vectorLabels = run.emd.vectorLabels;
  const stats: ChipRecordStats = {
    bands: moments,
    ...(moments2 ? { bands2: moments2 } : {}),
    features: vectorLabels === true ? objects.map((o) => ({ classValue: o.classValue, area: o.area })) : [],
    ...(labels.classPixels !== undefined && vectorLabels === false ? { classPixels: labels.classPixels } : {}),
  };
  return {
    candidate: c.id,
    index,
    item: c.item,
    window: [c.window.x, c.window.y, c.window.width, c.window.height],
    angle: c.angle,
    split: splitOf(c, p),
    mapLine,
    empty,
    stats,
    labels: labels.count,
    bytes: files.bytes,
    ...(sets.coco ? { coco: sets.coco } : {}),
    image: imagePath,
  };
}

/**
 * The metadata, from the journal entries, written last and atomically: map.txt, the EMD,
 * stats.txt, manifest.json, the split lists, the label sets' files, and the EAS last (its presence
 * marks a finished export).
 */
export async function writeMetadata(
  run: ChipRun,
  written: readonly ChipEntry[],
  earlier: EarlierExport | undefined,
  classValues: readonly number[],
): Promise<{ bytes: number; labels: number; nextIndex: number }> {
  const { p, emd, folder } = run;
  const stats = emptyStats(run.inputs.info.bandCount, run.inputs.extra?.info.bandCount);
  if (earlier) mergeStats(stats, earlier.stats);
  let bytes = 0;
  let labels = 0;
  for (const e of written) {
    addChip(stats, e.stats, classValues, e.index);
    bytes += e.bytes;
    labels += e.labels;
  }
  if (stats.nextIndex < p.context.startIndex) stats.nextIndex = p.context.startIndex;
  const mapLines = written.map((e) => e.mapLine).filter((l) => l !== '');
  bytes += await folder.write('map.txt', (earlier?.mapTxt ?? '') + mapLines.map((l) => `${l}\n`).join(''));
  bytes += await folder.write('geo_model_definition.emd', vendorJson(modelDefinition(emd, stats)));
  bytes += await folder.write('stats.txt', statsText(emd, stats));
  const manifest = {
    generator: 'rasterflow',
    metadataFormat: p.metadataFormat,
    chipFormat: p.chipFormat,
    tileSize: p.tileSize,
    strideSize: p.strideSize,
    validationFraction: p.validationFraction,
    splitBlockSize: p.splitBlockSize,
    chips: written.map((e) => ({
      index: e.index,
      image: e.image,
      item: e.item,
      window: e.window,
      angle: e.angle,
      split: e.split,
      labels: e.labels,
    })),
  };
  bytes += await folder.write('manifest.json', `${JSON.stringify(manifest, null, 1)}\n`);
  if (p.validationFraction > 0) {
    bytes += await folder.write(
      'train.txt',
      written
        .filter((e) => e.split === 'train')
        .map((e) => `${e.image}\n`)
        .join(''),
    );
    bytes += await folder.write(
      'valid.txt',
      written
        .filter((e) => e.split === 'valid')
        .map((e) => `${e.image}\n`)
        .join(''),
    );
  }
  for (const set of labelSetsOf(p)) bytes += await LABEL_SETS[set].finish(written, run.labels, folder);
  // The EAS last: its presence marks a finished export.
  bytes += await folder.write('geo_accumulated_stats.json', vendorJson(accumulatedStats(emd, stats)));
  return { bytes, labels, nextIndex: stats.nextIndex };
}

/** CycleGAN: two complete sub-exports, `A/` (inputRaster) and `B/` (additionalInputRaster), each on its own grid. */
async function exportCycleGan(p: ChipParams, options: ExportOptions): Promise<ExportSummary> {
  const base = { ...(paramsEcho(p) as Record<string, unknown>), metadataFormat: 'Export_Tiles', additionalInputRaster: undefined };
  const a = await exportTrainingData({ ...base, outputLocation: join(p.outputLocation, 'A') }, options);
  const max = options.maxBytes;
  const b = await exportTrainingData(
    { ...base, inputRaster: rasterEcho(p.additionalInputRaster!), outputLocation: join(p.outputLocation, 'B') },
    // B's budget is what A left.
    max === undefined ? options : { ...options, maxBytes: typeof max === 'number' ? max - a.bytes : (w) => max(a.bytes + w) - a.bytes },
  );
  for (const side of ['A', 'B']) {
    for (const f of ['geo_model_definition.emd', 'geo_accumulated_stats.json']) {
      const path = join(p.outputLocation, side, f);
      await writeAtomic(path, (await readFile(path, 'utf8')).replace(/"MetaDataMode" : "Export_Tiles"/g, '"MetaDataMode" : "CycleGAN"'));
    }
  }
  return {
    ...a,
    outputLocation: p.outputLocation,
    candidates: a.candidates + b.candidates,
    chips: a.chips + b.chips,
    bytes: a.bytes + b.bytes,
    nextIndex: Math.max(a.nextIndex, b.nextIndex),
    labelsOutsideRaster: a.labelsOutsideRaster + b.labelsOutsideRaster,
  };
}

const rasterEcho = (r: RasterInput): unknown =>
  r.kind === 'rule' ? r.rule : r.rule !== undefined ? { url: r.location, renderingRule: r.rule } : r.location;

/** Parameters back in wire form (for the CycleGAN sub-exports). */
function paramsEcho(p: ChipParams): unknown {
  return {
    inputRaster: p.inputRasters.length === 1 ? rasterEcho(p.inputRasters[0]!) : p.inputRasters.map(rasterEcho),
    chipFormat: p.chipFormat,
    tileSize: p.tileSize,
    strideSize: p.strideSize,
    rotationAngle: p.rotationAngle,
    referenceSystem: p.referenceSystem,
    processAllRasterItems: p.processAllRasterItems,
    context: { ...p.context, exportAllTiles: true },
    indexDigits: p.indexDigits,
    edgeMode: p.edgeMode,
    mapTxtStyle: p.mapTxtStyle,
    maxNoDataFraction: p.maxNoDataFraction,
    validationFraction: p.validationFraction,
    splitBlockSize: p.splitBlockSize,
    rotationMode: p.rotationMode,
    resume: p.resume,
  };
}

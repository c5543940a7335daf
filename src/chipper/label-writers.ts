/**
 * One label writer per metadata format (contract §6), in one table: a new format is one entry in
 * `LABEL_WRITERS` (the `Record` makes a format without a writer fail to compile). A writer gets one
 * chip's label objects in chip pixels and writes that chip's label files; its flags tell the
 * export what else the format changes (chips per feature, instance labels, image folders). The
 * label sets beside the format's own labels (`labelSets`: COCO, YOLO) are the second table here.
 * The file contents themselves are made in labels.ts.
 */
import type { PixelBlock, RasterInfo } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import type { LabelFeature } from './features.js';
import type { ChipFiles, ExportFolder } from './files.js';
import type { Box } from './geometry.js';
import type { ChipEntry } from './journal.js';
import { classRaster, cocoAnnotations, instanceMasks, kittiText, vocXml, yoloText, type ChipObject } from './labels.js';
import type { ClassInfo } from './metadata.js';
import type { ChipParams, MetadataFormat } from './params.js';

/** One chip as a label writer sees it. */
export interface LabelChip {
  /** The chip's file stem: its zero-padded index. */
  readonly stem: string;
  /** The chip image's file name (the VOC `filename`). */
  readonly imageName: string;
  readonly width: number;
  readonly height: number;
  /** A chip made for one feature (chipPerFeature formats): that feature. */
  readonly feature?: LabelFeature;
  /** The labels in chip pixels: vector features clipped to the chip, or a class chip's components. */
  readonly objects: readonly ChipObject[];
  /** Instance labels in chip pixels (formats with `instances`). */
  readonly instanceObjects: readonly ChipObject[];
  /** The class raster over the chip, when the labels are a class raster (0 = no class). */
  readonly classValues?: Uint8Array | Uint16Array;
}

/** What a writer needs of the whole export. */
export interface LabelContext {
  readonly format: MetadataFormat;
  /** The input raster (its band count is the VOC depth). */
  readonly info: RasterInfo;
  readonly classes: readonly ClassInfo[];
  /** Class value -> class name. */
  readonly names: ReadonlyMap<number, string>;
  /** The largest class value: class rasters are U16 above 255, else U8. */
  readonly maxClass: number;
  /** Label rasters are lossless: `tif` beside TIFF and MRF chips, `png` beside PNG and JPEG chips. */
  readonly labelExt: 'tif' | 'png';
  readonly vocExtras: boolean;
}

/** What a writer wrote for one chip. */
export interface ChipLabels {
  /** The label files named on the chip's map.txt line, relative to the export folder. */
  readonly tokens: readonly string[];
  /** Labels written (objects, classes present, instances). */
  readonly count: number;
  /** The objects the chip is labelled with, when fewer than it was given (a chip made for one feature). */
  readonly objects?: readonly ChipObject[];
  /** Class raster formats: pixels per class value present, for the statistics. */
  readonly classPixels?: Record<string, number>;
}

export interface LabelWriter {
  /** Write the label files of one chip. */
  write(chip: LabelChip, ctx: LabelContext, files: ChipFiles): Promise<ChipLabels>;
  /** One chip per feature instead of a grid (when the labels are features, not a class raster); the chip may exceed the raster. */
  readonly chipPerFeature?: boolean;
  /** The format labels instances too (inputInstanceData, required). */
  readonly instances?: boolean;
  /** Labels are rasters (a dry run's size estimate counts a label byte per pixel). */
  readonly rasterLabels?: boolean;
  /** `blackenAroundFeature` applies: pixels outside the chip's feature are set to 0. */
  readonly blackensAroundFeature?: boolean;
  /** A chip without label files has no map.txt line. */
  readonly mapLineNeedsLabels?: boolean;
  /** The folder of the chip's image (default `images`). */
  imageFolder?(chip: LabelChip, ctx: LabelContext): string;
}

const wholeChip = (chip: LabelChip): Box => ({ xmin: 0, ymin: 0, xmax: chip.width, ymax: chip.height });

/** Folder names from class names: no path separators or characters Windows refuses. */
// eslint-disable-next-line no-control-regex -- control characters are what this strips from folder names
const safeName = (s: string): string => s.replace(/[\\/:*?"<>|\u0000-\u001f]/g, '_').trim() || '_';

const kitti: LabelWriter = {
  async write(chip, _ctx, files) {
    const lp = `labels/${chip.stem}.txt`;
    await files.file(lp, kittiText(chip.objects));
    return { tokens: [lp], count: chip.objects.length };
  },
};

const pascalVoc: LabelWriter = {
  async write(chip, ctx, files) {
    const lp = `labels/${chip.stem}.xml`;
    const objects = chip.objects.map((o) => ({ name: String(o.classValue), box: o.box, truncated: o.truncated }));
    await files.file(lp, vocXml(chip.imageName, chip.width, chip.height, ctx.info.bandCount, objects, ctx.vocExtras));
    return { tokens: [lp], count: chip.objects.length };
  },
};

/** Labeled_Tiles and Imagenet: one class per chip (its feature's, or the class raster's majority), as a VOC file. */
const tileClass: LabelWriter = {
  chipPerFeature: true,
  async write(chip, ctx, files) {
    const lp = `labels/${chip.stem}.xml`;
    const cls = chip.feature ? chip.feature.classValue : majority(chip.classValues);
    const box = chip.feature ? (chip.objects[0]?.box ?? wholeChip(chip)) : wholeChip(chip);
    await files.file(lp, vocXml(chip.imageName, chip.width, chip.height, ctx.info.bandCount, [{ name: String(cls), box }], ctx.vocExtras));
    return { tokens: [lp], count: 1, ...(chip.feature ? { objects: chip.objects.slice(0, 1) } : {}) };
  },
};

const multiLabeledTiles: LabelWriter = {
  async write(chip, ctx, files) {
    const lp = `labels/${chip.stem}.xml`;
    const present = ctx.classes.filter((cl) => chip.objects.some((o) => o.classValue === cl.value)).map((cl) => cl.name);
    await files.file(
      lp,
      vocXml(
        chip.imageName,
        chip.width,
        chip.height,
        ctx.info.bandCount,
        [{ name: present.join(','), box: wholeChip(chip) }],
        ctx.vocExtras,
      ),
    );
    return { tokens: [lp], count: present.length };
  },
};

/** Classified_Tiles (and the class raster of Panoptic_Segmentation): a class raster per chip, georeferenced like the chip. */
async function classifiedTile(
  chip: LabelChip,
  ctx: LabelContext,
  files: ChipFiles,
): Promise<ChipLabels & { classPixels: Record<string, number> }> {
  const { width: w, height: h } = chip;
  const big = ctx.maxClass > 255;
  const values = chip.classValues ?? (big ? new Uint16Array(w * h) : new Uint8Array(w * h));
  if (chip.classValues === undefined) classRaster([...chip.objects, ...chip.instanceObjects], w, h, values);
  const classPixels: Record<string, number> = {};
  for (let i = 0; i < w * h; i++) if (values[i] !== 0) classPixels[String(values[i])] = (classPixels[String(values[i])] ?? 0) + 1;
  const lp = `labels/${chip.stem}.${ctx.labelExt}`;
  await files.raster(lp, labelBlock([values], w, h, big ? 'U16' : 'U8'), true);
  return { tokens: [lp], count: Object.keys(classPixels).length, classPixels };
}

const classifiedTiles: LabelWriter = { rasterLabels: true, write: classifiedTile };

/** Panoptic_Segmentation: the class raster, and per instance class a stack of instance-id masks under `labels2/<class>/`. */
const panoptic: LabelWriter = {
  rasterLabels: true,
  instances: true,
  async write(chip, ctx, files) {
    const labels = await classifiedTile(chip, ctx, files);
    let count = labels.count;
    for (const [value, bands] of instanceMasks(chip.instanceObjects, chip.width, chip.height)) {
      const lp = `labels2/${safeName(ctx.names.get(value) ?? String(value))}/${chip.stem}.${ctx.labelExt}`;
      await files.raster(lp, labelBlock(bands, chip.width, chip.height, 'U16'), false);
      count += bands.length;
    }
    return { ...labels, count };
  },
};

/** RCNN_Masks: per class present, a stack of instance-id masks under `labels/<class>/`; a chip without one has no map.txt line. */
const rcnnMasks: LabelWriter = {
  rasterLabels: true,
  mapLineNeedsLabels: true,
  async write(chip, ctx, files) {
    const { width: w, height: h } = chip;
    const masks = chip.classValues !== undefined ? masksFromClassChip(chip.classValues, w, h) : instanceMasks(chip.objects, w, h);
    const tokens: string[] = [];
    let count = 0;
    for (const [value, bands] of [...masks.entries()].sort((a, b) => a[0] - b[0])) {
      const lp = `labels/${safeName(ctx.names.get(value) ?? String(value))}/${chip.stem}.${ctx.labelExt}`;
      const maxId = bands.reduce((m, b) => Math.max(m, ...b), 0);
      const small = maxId <= 255;
      await files.raster(lp, labelBlock(small ? bands.map((b) => Uint8Array.from(b)) : bands, w, h, small ? 'U8' : 'U16'), false);
      tokens.push(lp);
      count += maxId;
    }
    return { tokens, count };
  },
};

/** Images only. */
const noLabels: LabelWriter = {
  write: () => Promise.resolve({ tokens: [], count: 0 }),
};

export const LABEL_WRITERS: Readonly<Record<MetadataFormat, LabelWriter>> = {
  KITTI_rectangles: kitti,
  PASCAL_VOC_rectangles: pascalVoc,
  Classified_Tiles: classifiedTiles,
  RCNN_Masks: rcnnMasks,
  Labeled_Tiles: { ...tileClass, blackensAroundFeature: true },
  MultiLabeled_Tiles: multiLabeledTiles,
  Export_Tiles: noLabels,
  // CycleGAN runs as two Export_Tiles sub-exports, A/ and B/ (export.ts).
  CycleGAN: noLabels,
  // Images in one folder per class: the chip's feature's, or the class raster's majority.
  Imagenet: {
    ...tileClass,
    imageFolder: (chip, ctx) =>
      `images/${safeName(chip.feature ? chip.feature.className : (ctx.names.get(majority(chip.classValues)) ?? 'background'))}`,
  },
  Panoptic_Segmentation: panoptic,
};

// ---- Label sets.

export type LabelSet = ChipParams['labelSets'][number];

interface LabelSetWriter {
  /** Per chip: write its files, or return what the journal keeps for the set's file. */
  chip(objects: readonly ChipObject[], chip: LabelChip, ctx: LabelContext, files: ChipFiles): Promise<Pick<ChipEntry, 'coco'>>;
  /** After the last chip: the set's files from the journal entries; returns the bytes written. */
  finish(entries: readonly ChipEntry[], ctx: LabelContext, folder: ExportFolder): Promise<number>;
}

/** COCO and YOLO (ours, beyond the vendor). */
export const LABEL_SETS: Readonly<Record<LabelSet, LabelSetWriter>> = {
  YOLO: {
    async chip(objects, chip, ctx, files) {
      const classIndex = new Map(ctx.classes.map((cl, i) => [cl.value, i] as const));
      await files.file(`yolo/labels/${chip.stem}.txt`, yoloText(objects, classIndex, chip.width, chip.height));
      return {};
    },
    finish: (_entries, ctx, folder) => folder.write('yolo/classes.txt', ctx.classes.map((c) => `${c.name}\n`).join('')),
  },
  COCO: {
    chip: (objects) => Promise.resolve({ coco: cocoAnnotations(objects) }),
    finish: (entries, ctx, folder) => folder.write('coco/annotations.json', cocoJson(entries, ctx)),
  },
};

function cocoJson(entries: readonly ChipEntry[], ctx: LabelContext): string {
  let annId = 1;
  const images = entries.map((e) => ({
    id: e.index,
    file_name: e.image.replace(/^images\//, ''),
    width: e.window[2],
    height: e.window[3],
  }));
  const annotations = entries.flatMap((e) =>
    (e.coco ?? []).map((a) => ({
      id: annId++,
      image_id: e.index,
      category_id: a.classValue,
      bbox: a.bbox,
      segmentation: a.segmentation,
      area: a.area,
      iscrowd: 0,
    })),
  );
  const categories = ctx.classes.map((c) => ({ id: c.value, name: c.name, supercategory: 'none' }));
  return `${JSON.stringify({ info: { description: `rasterflow ${ctx.format} export`, version: '1.0' }, images, annotations, categories })}\n`;
}

// ---- Helpers.

function labelBlock(bands: (Uint8Array | Uint16Array)[], w: number, h: number, pixelType: 'U8' | 'U16'): PixelBlock {
  return { rect: rect(0, 0, w, h), pixelType, bands, mask: new Uint8Array(w * h).fill(1) };
}

/** The most frequent non-zero value (the smallest on a tie), 0 when none. */
function majority(values: ArrayLike<number> | undefined): number {
  if (values === undefined) return 0;
  const counts = new Map<number, number>();
  for (let i = 0; i < values.length; i++) if (values[i] !== 0) counts.set(values[i]!, (counts.get(values[i]!) ?? 0) + 1);
  let best = 0;
  let n = 0;
  for (const [v, k] of [...counts.entries()].sort((a, b) => a[0] - b[0])) if (k > n) [best, n] = [v, k];
  return best;
}

/** Instance masks from a class chip: 4-connected components of each class, ids 1..N. */
function masksFromClassChip(values: ArrayLike<number>, w: number, h: number): Map<number, Uint16Array[]> {
  const out = new Map<number, Uint16Array[]>();
  const ids = new Map<number, number>();
  const seen = new Uint8Array(w * h);
  const stack: number[] = [];
  for (let s = 0; s < w * h; s++) {
    const v = values[s]!;
    if (v === 0 || seen[s]) continue;
    const id = (ids.get(v) ?? 0) + 1;
    ids.set(v, id);
    let band = out.get(v)?.[0];
    if (band === undefined) out.set(v, [(band = new Uint16Array(w * h))]);
    stack.push(s);
    seen[s] = 1;
    while (stack.length > 0) {
      const i = stack.pop()!;
      band[i] = id;
      const x = i % w;
      for (const j of [x > 0 ? i - 1 : -1, x < w - 1 ? i + 1 : -1, i - w, i + w]) {
        if (j >= 0 && j < w * h && values[j] === v && !seen[j]) {
          seen[j] = 1;
          stack.push(j);
        }
      }
    }
  }
  return out;
}

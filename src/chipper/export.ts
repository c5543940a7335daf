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
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, extname, join } from 'node:path';
import { EngineError } from '../core/errors.js';
import { allocateBlock, windowInfo, type PixelBlock, type RasterInfo } from '../core/pixel-block.js';
import { rect, type Rect } from '../core/rect.js';
import { registry } from '../functions/index.js';
import { render, type Recipe, type TilePool } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import { encodeGeoTiff } from '../io/encode-tiff.js';
import { encodeJpeg } from '../io/encode-jpeg.js';
import { encodeMrf } from '../io/encode-mrf.js';
import { encodePng } from '../io/encode-png.js';
import { openerScope, type OpenerScope } from '../io/source.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { boxInside, boxIsEmpty, boxOf, clipToBox, area as polygonArea, mapPoints, type Box, type MultiPolygon } from './geometry.js';
import { readFeatures, type LabelFeature } from './features.js';
import { classRaster, cocoAnnotations, instanceMasks, kittiText, vocXml, yoloText, type ChipObject } from './labels.js';
import {
  accumulatedStats,
  addChip,
  emptyStats,
  mergeStats,
  modelDefinition,
  momentsOf,
  statsFromEas,
  statsText,
  vendorJson,
  type ChipRecordStats,
  type ClassInfo,
  type MetadataContext,
} from './metadata.js';
import { parseChipParams, type ChipParams, type LabelInput, type RasterInput } from './params.js';

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

const JOURNAL = '.rasterflow-journal.ndjson';
const IMAGE_EXT = { TIFF: 'tif', PNG: 'png', JPEG: 'jpg', MRF: 'mrf' } as const;
const WORLD_EXT: Readonly<Record<string, string>> = { tif: 'tfw', png: 'pgw', jpg: 'jgw', mrf: 'mfw' };

interface OpenedRaster {
  readonly root: RasterNode;
  readonly info: RasterInfo;
  readonly recipe: Recipe;
  readonly name: string;
}

/** One candidate chip: a window of the raster grid, maybe rotated about its centre. */
interface Candidate {
  readonly id: number;
  readonly item: number;
  readonly window: Rect;
  readonly angle: number;
  /** Labeled_Tiles/Imagenet: the feature the chip is made for. */
  readonly feature?: LabelFeature;
}

/** What the journal keeps per written chip (plain JSON). */
interface ChipEntry {
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

// ---- Opening inputs.

/** Opens a raster for one export; the export closes every raster it opened when it ends. */
type RasterOpener = OpenerScope['open'];

async function openInput(open: RasterOpener, input: RasterInput, name: string, cellSize?: { readonly x: number; readonly y: number }, nearest = false): Promise<OpenedRaster> {
  let opened: OpenedRaster;
  if (input.kind === 'location' && input.rule === undefined) {
    const src = await open(input.location).catch((e: unknown) => {
      throw e instanceof EngineError ? new EngineError(e.code, e.message, { path: name, cause: e }) : e;
    });
    opened = { root: src, info: src.info, recipe: { rule: { rasterFunction: 'Identity' }, sources: { $$: input.location } }, name };
  } else opened = await openRule(open, input.rule, input.kind === 'location' ? { $$: input.location } : {}, name);
  // context.cellSize: resample through the engine's Resample (bilinear for imagery, nearest for class rasters).
  if (cellSize === undefined) return opened;
  const cs = opened.info.cellSize;
  if (Math.abs(cs.x - cellSize.x) <= 1e-9 * cellSize.x && Math.abs(cs.y - cellSize.y) <= 1e-9 * cellSize.y) return opened;
  const inner = input.kind === 'location' && input.rule === undefined ? '$$' : input.rule;
  const rule = { rasterFunction: 'Resample', rasterFunctionArguments: { Raster: inner, ResamplingType: nearest ? 0 : 1, OutputCellsize: { x: cellSize.x, y: cellSize.y } } };
  return openRule(open, rule, input.kind === 'location' ? { $$: input.location } : {}, name);
}

/**
 * A rule given as a raster input. It names its rasters by `{ "url": ... }` or as plain paths
 * (`"Raster": "scene.tif"`): the export binds no variables, so a bare name is a path, recorded in
 * the recipe's sources for the workers. `$$` is the raster of `{ "url", "renderingRule" }`.
 */
async function openRule(open: RasterOpener, rule: unknown, bound: Record<string, string>, name: string): Promise<OpenedRaster> {
  const sources = { ...bound };
  const unbound = (ref: string): string | undefined => (ref.startsWith('$') ? undefined : (sources[ref] = ref));
  const hint = (): string =>
    `a rule given as ${name} names its rasters as plain paths or {"url": PATH} (e.g. "Raster": "scene.tif"), or applies to one raster as {"url": PATH, "renderingRule": RULE}`;
  const prefix = (path: string | undefined): string => `${name}${path ? `.${path}` : ''}`;
  const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(sources, open, { unbound, hint }) }).catch((e: unknown) => {
    if (e instanceof EngineError) {
      throw new EngineError(e.code, e.message, { path: prefix(e.path), issues: e.issues.map((i) => ({ ...i, path: prefix(i.path) })), cause: e });
    }
    throw e;
  });
  return { root, info: root.info, recipe: { rule, sources }, name };
}

function readJsonLocation(input: LabelInput, path: string): unknown {
  if (input.kind === 'inline') return input.json;
  const file = input.location.replace(/^file:\/\//, '');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new EngineError('IO_ERROR', `cannot read ${input.location}: ${(e as Error).message}`, { path });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new EngineError('INVALID_ARGUMENT', `${input.location} is not GeoJSON or Esri JSON: ${(e as Error).message}`, { path });
  }
}

const isRasterLocation = (input: LabelInput | undefined): boolean =>
  input?.kind === 'location' && ['.tif', '.tiff', '.mrf', '.img'].includes(extname(input.location.replace(/[?#].*$/, '')).toLowerCase());

/** Features into the raster's pixel space (x = column, y = row, continuous). */
function toPixelSpace(features: LabelFeature[], info: RasterInfo, pixelSpace: boolean): LabelFeature[] {
  if (pixelSpace) return features;
  const { extent, cellSize } = info;
  return features.map((f) => ({ ...f, geometry: mapPoints(f.geometry, (x, y) => [(x - extent.xmin) / cellSize.x, (extent.ymax - y) / cellSize.y]) }));
}

/** A deterministic, well-spread colour per class (golden-angle hues). */
function classColor(i: number): [number, number, number] {
  const h = (i * 137.508) % 360;
  const f = (n: number): number => {
    const k = (n + h / 60) % 6;
    return Math.round(255 * (0.85 - 0.6 * Math.max(0, Math.min(k, 4 - k, 1))));
  };
  return [f(5), f(3), f(1)];
}

function classesOf(values: Iterable<[number, string]>): ClassInfo[] {
  const byValue = new Map<number, string>();
  for (const [v, n] of values) if (!byValue.has(v)) byValue.set(v, n);
  return [...byValue.entries()].sort((a, b) => a[0] - b[0]).map(([value, name], i) => ({ value, name, color: classColor(i) }));
}

// ---- Chip geometry.

/** Visual counter-clockwise rotation by `deg` in pixel space (y down). */
function rotation(deg: number): { cos: number; sin: number } {
  const r = (deg * Math.PI) / 180;
  return { cos: Math.cos(r), sin: Math.sin(r) };
}

/**
 * How many features (in `info`'s pixel space, or each item's own in PIXEL_SPACE) have no area
 * inside any raster item: labels a user gave that can label no chip.
 */
function countOutside(features: readonly LabelFeature[], items: readonly OpenedRaster[], info: RasterInfo, pixelSpace: boolean): number {
  const regions: Box[] = items.map((it) =>
    pixelSpace
      ? { xmin: 0, ymin: 0, xmax: it.info.width, ymax: it.info.height }
      : {
          xmin: (it.info.extent.xmin - info.extent.xmin) / info.cellSize.x,
          xmax: (it.info.extent.xmax - info.extent.xmin) / info.cellSize.x,
          ymin: (info.extent.ymax - it.info.extent.ymax) / info.cellSize.y,
          ymax: (info.extent.ymax - it.info.extent.ymin) / info.cellSize.y,
        },
  );
  let n = 0;
  for (const f of features) {
    const b = boxOf(f.geometry);
    if (regions.every((r) => b.xmax <= r.xmin || b.xmin >= r.xmax || b.ymax <= r.ymin || b.ymin >= r.ymax)) n++;
  }
  return n;
}

/** Raster pixel coordinates -> chip coordinates of candidate `c`. */
function chipTransform(c: Candidate): (x: number, y: number) => readonly [number, number] {
  const { x, y, width: w, height: h } = c.window;
  if (c.angle === 0) return (px, py) => [px - x, py - y];
  const { cos, sin } = rotation(c.angle);
  const cx = x + w / 2;
  const cy = y + h / 2;
  return (px, py) => {
    const dx = px - cx;
    const dy = py - cy;
    return [dx * cos + dy * sin + w / 2, -dx * sin + dy * cos + h / 2];
  };
}

/** Chip coordinates -> raster pixel coordinates (the inverse of chipTransform). */
function chipToRaster(c: Candidate): (u: number, v: number) => readonly [number, number] {
  const { x, y, width: w, height: h } = c.window;
  if (c.angle === 0) return (u, v) => [u + x, v + y];
  const { cos, sin } = rotation(c.angle);
  return (u, v) => {
    const dx = u - w / 2;
    const dy = v - h / 2;
    return [x + w / 2 + dx * cos - dy * sin, y + h / 2 + dx * sin + dy * cos];
  };
}

/** Labels of a chip from vector features: clipped, overlap-filtered, in chip coordinates. */
function vectorObjects(c: Candidate, features: readonly LabelFeature[], boxes: readonly Box[], minOverlap: number): ChipObject[] {
  const { width: w, height: h } = c.window;
  const reach = c.angle === 0 ? 0 : Math.hypot(w, h) / 2;
  const cxmin = c.window.x - reach;
  const cymin = c.window.y - reach;
  const cxmax = c.window.x + w + reach;
  const cymax = c.window.y + h + reach;
  const t = chipTransform(c);
  const chipBox: Box = { xmin: 0, ymin: 0, xmax: w, ymax: h };
  const out: ChipObject[] = [];
  const list = c.feature !== undefined ? [c.feature] : features;
  list.forEach((f, k) => {
    const b = c.feature !== undefined ? boxOf(f.geometry) : boxes[k]!;
    if (b.xmax < cxmin || b.xmin > cxmax || b.ymax < cymin || b.ymin > cymax) return;
    const g = mapPoints(f.geometry, t);
    const whole = polygonArea(g);
    const inside = clipToBox(g, chipBox);
    if (inside.length === 0) {
      // A point without buffer: a zero-area box where it falls inside the chip.
      const pb = boxOf(g);
      if (whole === 0 && pb.xmin >= 0 && pb.xmin <= w && pb.ymin >= 0 && pb.ymin <= h) {
        out.push({ classValue: f.classValue, className: f.className, geometry: [], box: { xmin: pb.xmin, ymin: pb.ymin, xmax: pb.xmin, ymax: pb.ymin }, truncated: false, area: f.area });
      }
      return;
    }
    const part = polygonArea(inside);
    if (minOverlap > 0 && whole > 0 && part / whole < minOverlap) return;
    const b0 = boxOf(inside);
    const box = { xmin: Math.max(0, b0.xmin), ymin: Math.max(0, b0.ymin), xmax: Math.min(w, b0.xmax), ymax: Math.min(h, b0.ymax) };
    out.push({ classValue: f.classValue, className: f.className, geometry: inside, box, truncated: part < whole * (1 - 1e-9), area: f.area });
  });
  return out;
}

/** 4-connected components of each non-zero class of a class chip, as box objects. */
function componentObjects(labels: ArrayLike<number>, w: number, h: number, names: ReadonlyMap<number, string>): ChipObject[] {
  const seen = new Uint8Array(w * h);
  const stack: number[] = [];
  const out: ChipObject[] = [];
  for (let start = 0; start < w * h; start++) {
    const v = labels[start]!;
    if (v === 0 || seen[start]) continue;
    let xmin = w;
    let ymin = h;
    let xmax = 0;
    let ymax = 0;
    stack.push(start);
    seen[start] = 1;
    const ring: number[] = [];
    while (stack.length > 0) {
      const i = stack.pop()!;
      const x = i % w;
      const y = (i - x) / w;
      if (x < xmin) xmin = x;
      if (y < ymin) ymin = y;
      if (x + 1 > xmax) xmax = x + 1;
      if (y + 1 > ymax) ymax = y + 1;
      ring.push(i);
      const push = (j: number): void => {
        if (labels[j] === v && !seen[j]) {
          seen[j] = 1;
          stack.push(j);
        }
      };
      if (x > 0) push(i - 1);
      if (x < w - 1) push(i + 1);
      if (y > 0) push(i - w);
      if (y < h - 1) push(i + w);
    }
    // Geometry: the component's pixels as unit squares would be exact but large; its box serves the
    // box formats, and masks are rasterized from the class chip directly.
    out.push({ classValue: v, className: names.get(v) ?? String(v), geometry: [[[xmin, ymin, xmax, ymin, xmax, ymax, xmin, ymax]]], box: { xmin, ymin, xmax, ymax }, truncated: false, area: ring.length });
  }
  return out;
}

// ---- Pixels.

/** Bilinear (or nearest) sample of `src` (raster-space block) at raster pixel coordinates. */
function resampleRotated(src: PixelBlock, c: Candidate, nearest: boolean): PixelBlock {
  const { width: w, height: h } = c.window;
  const out = allocateBlock(rect(0, 0, w, h), src.pixelType, src.bands.length);
  const toRaster = chipToRaster(c);
  const sw = src.rect.width;
  const sh = src.rect.height;
  const integer = !src.pixelType.startsWith('F');
  const nb = src.bands.length;
  const acc = new Float64Array(nb);
  for (let v = 0; v < h; v++) {
    for (let u = 0; u < w; u++) {
      const o = v * w + u;
      const [px, py] = toRaster(u + 0.5, v + 0.5);
      const fx = px - 0.5 - src.rect.x;
      const fy = py - 0.5 - src.rect.y;
      if (nearest) {
        const ix = Math.floor(fx + 0.5);
        const iy = Math.floor(fy + 0.5);
        if (ix < 0 || iy < 0 || ix >= sw || iy >= sh || src.mask[iy * sw + ix] === 0) {
          out.mask[o] = 0;
          continue;
        }
        for (let b = 0; b < src.bands.length; b++) out.bands[b]![o] = src.bands[b]![iy * sw + ix]!;
        continue;
      }
      const x0 = Math.floor(fx);
      const y0 = Math.floor(fy);
      const ax = fx - x0;
      const ay = fy - y0;
      let wsum = 0;
      acc.fill(0);
      for (let k = 0; k < 4; k++) {
        const x = x0 + (k & 1);
        const y = y0 + (k >> 1);
        const wk = (k & 1 ? ax : 1 - ax) * (k >> 1 ? ay : 1 - ay);
        if (wk === 0 || x < 0 || y < 0 || x >= sw || y >= sh || src.mask[y * sw + x] === 0) continue;
        wsum += wk;
        for (let b = 0; b < nb; b++) acc[b]! += wk * src.bands[b]![y * sw + x]!;
      }
      // Renormalised over valid neighbours; NoData when less than half the weight is valid.
      if (wsum < 0.5) {
        out.mask[o] = 0;
        continue;
      }
      for (let b = 0; b < nb; b++) {
        const val = acc[b]! / wsum;
        out.bands[b]![o] = integer ? Math.round(val) : val;
      }
    }
  }
  return out;
}

/** Render candidate `c` of raster `r` as a chip-sized block (origin 0, 0). */
async function renderChip(r: OpenedRaster, c: Candidate, pool: TilePool | undefined, signal: AbortSignal | undefined, nearest = false): Promise<PixelBlock> {
  const { x, y, width: w, height: h } = c.window;
  const tileSize = Math.max(w, h, 16);
  if (c.angle === 0) {
    const b = await render(r.root, { rect: rect(x, y, w, h), tileSize, pool, recipe: r.recipe, signal });
    return { ...b, rect: rect(0, 0, w, h) };
  }
  const reach = Math.ceil(Math.hypot(w, h) / 2) + 2;
  const cx = Math.floor(x + w / 2);
  const cy = Math.floor(y + h / 2);
  const src = await render(r.root, { rect: rect(cx - reach, cy - reach, 2 * reach, 2 * reach), tileSize: 2 * reach, pool, recipe: r.recipe, signal });
  return resampleRotated(src, c, nearest);
}

// ---- Files.

function writeAtomic(path: string, data: string | Uint8Array): number {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.part-${process.pid}`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
  return typeof data === 'string' ? Buffer.byteLength(data) : data.length;
}

/** GDAL geotransform of chip `c` (rotated chips: a rotated transform). */
function geoTransform(c: Candidate, info: RasterInfo): number[] {
  const toRaster = chipToRaster(c);
  const map = (u: number, v: number): [number, number] => {
    const [px, py] = toRaster(u, v);
    return [info.extent.xmin + px * info.cellSize.x, info.extent.ymax - py * info.cellSize.y];
  };
  const [x0, y0] = map(0, 0);
  const [x1, y1] = map(1, 0);
  const [x2, y2] = map(0, 1);
  return [x0, x1 - x0, x2 - x0, y0, y1 - y0, y2 - y0];
}

/** World file (six lines: A D B E C F with C, F at the centre of the first pixel) and PAM `.aux.xml`. */
function sidecars(file: string, c: Candidate, info: RasterInfo): number {
  const gt = geoTransform(c, info);
  const [a, b, cc, d, e, f] = [gt[1]!, gt[2]!, gt[0]!, gt[4]!, gt[5]!, gt[3]!];
  const world = [a, d, b, e, cc + a / 2 + b / 2, f + d / 2 + e / 2].map((v) => v.toFixed(10)).join('\n');
  const ext = extname(file).slice(1);
  let bytes = writeAtomic(`${file.slice(0, -ext.length)}${WORLD_EXT[ext] ?? 'wld'}`, `${world}\n`);
  const sr = info.spatialReference;
  const srs = sr?.wkt ?? (sr?.wkid !== undefined ? `EPSG:${sr.wkid}` : undefined);
  const aux = ['<PAMDataset>', ...(srs ? [`  <SRS>${srs.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</SRS>`] : []), `  <GeoTransform>${gt.map((v) => v.toPrecision(17)).join(', ')}</GeoTransform>`, '</PAMDataset>', ''];
  bytes += writeAtomic(`${file}.aux.xml`, aux.join('\n'));
  return bytes;
}

/** Write one image/label raster chip in the chosen format; returns bytes written. */
function writeRasterChip(file: string, block: PixelBlock, c: Candidate, rasterInfo: RasterInfo, withSidecars: boolean): number {
  const info: RasterInfo = { ...windowInfo(rasterInfo, c.window), bandCount: block.bands.length, pixelType: block.pixelType };
  const ext = extname(file).slice(1);
  let bytes: number;
  if (ext === 'tif') bytes = writeAtomic(file, encodeGeoTiff(block, info));
  else if (ext === 'png') bytes = writeAtomic(file, encodePng(block, info));
  else if (ext === 'jpg') bytes = writeAtomic(file, encodeJpeg(block, info, { quality: 90 }));
  else {
    const base = file.slice(file.lastIndexOf('/') + 1, -4);
    const m = encodeMrf(block, info, base);
    bytes = writeAtomic(`${file.slice(0, -4)}.idx`, m.index) + writeAtomic(`${file.slice(0, -4)}.pzp`, m.data) + writeAtomic(file, m.header);
  }
  if (withSidecars) bytes += sidecars(file, c, rasterInfo);
  return bytes;
}

function labelBlock(values: Uint8Array | Uint16Array, w: number, h: number, pixelType: 'U8' | 'U16'): PixelBlock {
  return { rect: rect(0, 0, w, h), pixelType, bands: [values], mask: new Uint8Array(w * h).fill(1) };
}

// ---- The export.

export async function exportTrainingData(rawParams: unknown, options: ExportOptions = {}): Promise<ExportSummary> {
  // Every raster this export opens is closed when it ends, on success and on every error path
  // (their file handles were left to the garbage collector before).
  const files = openerScope();
  // A broken input file (cut short, a block past its end) is refused before any chip is written.
  const open: RasterOpener = async (location, o) => {
    const source = await files.open(location, o);
    source.verifyBlocks?.();
    return source;
  };
  // A fresh output folder that an unreadable block stops half-way is removed: nothing is left
  // from a broken file. (An append or a resume keeps its folder and journal.)
  let fresh: string | undefined;
  try {
    return await exportWith(rawParams, options, open, (out) => {
      if (!existsSync(out)) fresh = out;
    });
  } catch (e) {
    if (fresh !== undefined && e instanceof EngineError && e.code === 'IO_ERROR') rmSync(fresh, { recursive: true, force: true });
    throw e;
  } finally {
    await files.closeAll();
  }
}

async function exportWith(rawParams: unknown, options: ExportOptions, open: RasterOpener, creating: (out: string) => void): Promise<ExportSummary> {
  const p = parseChipParams(rawParams);
  const { signal } = options;
  const out = p.outputLocation;
  const format = p.metadataFormat;

  if (format === 'CycleGAN') return exportCycleGan(p, options);

  // Rasters.
  const items: OpenedRaster[] = [];
  for (const [i, input] of p.inputRasters.entries()) items.push(await openInput(open, input, p.inputRasters.length > 1 ? `inputRaster[${i}]` : 'inputRaster', p.context.cellSize));
  if (items.length > 1 && !p.processAllRasterItems) {
    throw new EngineError('INVALID_ARGUMENT', 'several input rasters need processAllRasterItems: true (mosaicking rasters is not supported)', { path: 'processAllRasterItems' });
  }
  const info = items[0]!.info;
  for (const [i, it] of items.entries()) {
    if (it.info.bandCount !== info.bandCount || it.info.pixelType !== info.pixelType) {
      throw new EngineError('INVALID_ARGUMENT', `every raster item must have ${info.bandCount} ${info.pixelType} band(s); item ${i} has ${it.info.bandCount} ${it.info.pixelType}`, { path: `inputRaster[${i}]` });
    }
    if (p.tileSize.x > it.info.width && p.tileSize.y > it.info.height && !['Labeled_Tiles', 'Imagenet'].includes(format)) {
      throw new EngineError('INVALID_ARGUMENT', `the chip (${p.tileSize.x} x ${p.tileSize.y}) is larger than the raster (${it.info.width} x ${it.info.height})`, { path: 'tileSize' });
    }
  }
  const imageExt = IMAGE_EXT[p.chipFormat];
  if ((p.chipFormat === 'PNG' || p.chipFormat === 'JPEG') && (info.bandCount > 3 || info.pixelType !== 'U8')) {
    throw new EngineError('INVALID_ARGUMENT', `${p.chipFormat} chips hold at most 3 bands of 8-bit data; the input has ${info.bandCount} ${info.pixelType} band(s): use TIFF or MRF, or a rule (ExtractBand, Stretch) making 3 x U8`, { path: 'chipFormat' });
  }
  const extra = p.additionalInputRaster ? await openInput(open, p.additionalInputRaster, 'additionalInputRaster', p.context.cellSize) : undefined;
  if (extra !== undefined && (extra.info.width !== info.width || extra.info.height !== info.height || Math.abs(extra.info.extent.xmin - info.extent.xmin) > 1e-6 * info.cellSize.x || Math.abs(extra.info.extent.ymax - info.extent.ymax) > 1e-6 * info.cellSize.y)) {
    throw new EngineError('UNSUPPORTED_INPUT', 'additionalInputRaster must lie on the input raster\'s grid (same extent and cell size); align it first (Resample/Clip rule)', { path: 'additionalInputRaster' });
  }

  // Labels.
  const pixelSpace = p.referenceSystem === 'PIXEL_SPACE';
  let features: LabelFeature[] = [];
  let classRasterSource: OpenedRaster | undefined;
  if (p.inputClassData !== undefined) {
    if (isRasterLocation(p.inputClassData)) {
      classRasterSource = await openInput(open, { kind: 'location', location: (p.inputClassData as { location: string }).location }, 'inputClassData', p.context.cellSize, true);
      const ci = classRasterSource.info;
      if (ci.bandCount !== 1 || ci.pixelType.startsWith('F') || ci.pixelType.startsWith('C')) {
        throw new EngineError('INVALID_ARGUMENT', `a class raster must have one integer band; it has ${ci.bandCount} ${ci.pixelType}`, { path: 'inputClassData' });
      }
      if (ci.width !== info.width || ci.height !== info.height || Math.abs(ci.extent.xmin - info.extent.xmin) > 1e-6 * info.cellSize.x || Math.abs(ci.extent.ymax - info.extent.ymax) > 1e-6 * info.cellSize.y) {
        throw new EngineError('UNSUPPORTED_INPUT', "the class raster must lie on the input raster's grid (same extent and cell size)", { path: 'inputClassData' });
      }
    } else {
      const json = readJsonLocation(p.inputClassData, 'inputClassData');
      features = toPixelSpace(readFeatures(json, { classValueField: p.classValueField, bufferRadius: p.bufferRadius, target: pixelSpace ? undefined : info.spatialReference, path: 'inputClassData' }), info, pixelSpace);
    }
  }
  let instances: LabelFeature[] = [];
  if (p.inputInstanceData !== undefined) {
    const json = readJsonLocation(p.inputInstanceData, 'inputInstanceData');
    instances = toPixelSpace(readFeatures(json, { classValueField: p.instanceClassValueField ?? p.classValueField, bufferRadius: p.bufferRadius, target: pixelSpace ? undefined : info.spatialReference, path: 'inputInstanceData' }), info, pixelSpace);
  }
  let mask: MultiPolygon | undefined;
  if (p.inputMaskPolygons !== undefined) {
    const json = readJsonLocation(p.inputMaskPolygons, 'inputMaskPolygons');
    mask = toPixelSpace(readFeatures(json, { target: pixelSpace ? undefined : info.spatialReference, path: 'inputMaskPolygons' }), info, pixelSpace).flatMap((f) => f.geometry);
  }

  // Classes.
  let classes: ClassInfo[];
  if (classRasterSource !== undefined) {
    const values = await classValuesOf(classRasterSource, signal);
    const cm = classRasterSource.info.colormap;
    classes = values.map((v, i) => {
      const k = cm ? indexIn(cm.values, v) : -1;
      return { value: v, name: String(v), color: k >= 0 && cm ? [cm.rgb[3 * k]!, cm.rgb[3 * k + 1]!, cm.rgb[3 * k + 2]!] : classColor(i) };
    });
  } else {
    classes = classesOf([...features, ...instances].map((f) => [f.classValue, f.className] as [number, string]));
  }
  const instanceClasses = format === 'Panoptic_Segmentation' ? classesOf(instances.map((f) => [f.classValue, f.className] as [number, string])) : undefined;
  if (format === 'Panoptic_Segmentation' && instances.length === 0) {
    throw new EngineError('INVALID_ARGUMENT', 'Panoptic_Segmentation needs inputInstanceData with at least one feature', { path: 'inputInstanceData' });
  }
  const names = new Map(classes.map((c) => [c.value, c.name] as const));
  const classValues = classes.map((c) => c.value);
  const boxes = features.map((f) => boxOf(f.geometry));
  const instanceBoxes = instances.map((f) => boxOf(f.geometry));

  // Candidates.
  const labelsOutsideRaster = countOutside([...features, ...instances], items, info, pixelSpace);

  const perFeature = (format === 'Labeled_Tiles' || format === 'Imagenet') && classRasterSource === undefined;
  const candidates: Candidate[] = [];
  const angles = p.rotationAngle === 0 ? [] : p.rotationMode === 'single' ? [p.rotationAngle] : multiples(p.rotationAngle);
  const push = (item: number, window: Rect, feature?: LabelFeature): void => {
    candidates.push({ id: candidates.length, item, window, angle: 0, ...(feature ? { feature } : {}) });
    for (const angle of angles) candidates.push({ id: candidates.length, item, window, angle, ...(feature ? { feature } : {}) });
  };
  for (const [k, it] of items.entries()) {
    const area = processingWindow(p, it.info);
    if (perFeature) {
      for (const f of features) {
        const b = boxOf(f.geometry);
        if (b.xmax < area.x || b.xmin > area.x + area.width || b.ymax < area.y || b.ymin > area.y + area.height) continue;
        if (p.fixChipSize) {
          const x = Math.round((b.xmin + b.xmax) / 2 - p.tileSize.x / 2);
          const y = Math.round((b.ymin + b.ymax) / 2 - p.tileSize.y / 2);
          push(k, rect(x, y, p.tileSize.x, p.tileSize.y), f);
        } else {
          const x = Math.floor(b.xmin);
          const y = Math.floor(b.ymin);
          push(k, rect(x, y, Math.max(1, Math.ceil(b.xmax) - x), Math.max(1, Math.ceil(b.ymax) - y)), f);
        }
      }
    } else {
      for (const y of starts(area.y, area.height, p.tileSize.y, p.strideSize.y, p.edgeMode)) {
        for (const x of starts(area.x, area.width, p.tileSize.x, p.strideSize.x, p.edgeMode)) push(k, rect(x, y, p.tileSize.x, p.tileSize.y));
      }
    }
  }

  // Existing folder: journal (resume), or an earlier export (append with startIndex).
  const journalPath = join(out, JOURNAL);
  const paramsHash = createHash('sha256').update(JSON.stringify({ ...p, resume: undefined })).digest('hex').slice(0, 16);
  let done: ChipEntry[] = [];
  let earlier: { stats: ReturnType<typeof statsFromEas>; mapTxt: string } | undefined;
  if (!options.dryRun) {
    if (existsSync(journalPath)) {
      if (!p.resume) throw new EngineError('INVALID_ARGUMENT', `${out} holds an unfinished export; pass "resume": true to continue it, or choose another folder`, { path: 'outputLocation' });
      const lines = readFileSync(journalPath, 'utf8').split('\n');
      const head = safeJson(lines[0]) as { paramsHash?: string } | undefined;
      if (head?.paramsHash !== paramsHash) throw new EngineError('INVALID_ARGUMENT', `the unfinished export in ${out} was started with other parameters; it cannot be resumed with these`, { path: 'resume' });
      done = lines.slice(1).map(safeJson).filter((e): e is ChipEntry => e !== undefined && typeof (e as ChipEntry).index === 'number');
    }
    const easPath = join(out, 'geo_accumulated_stats.json');
    if (existsSync(easPath) && done.length === 0 && !existsSync(journalPath)) {
      if (p.context.startIndex === 0) throw new EngineError('INVALID_ARGUMENT', `${out} already holds an export; set context.startIndex to append to it, or choose another folder`, { path: 'outputLocation' });
      const eas = JSON.parse(readFileSync(easPath, 'utf8')) as Record<string, unknown>;
      const mismatch =
        eas.MetaDataMode !== format ? `MetaDataMode ${String(eas.MetaDataMode)}` : eas.NumBands !== info.bandCount ? `NumBands ${String(eas.NumBands)}` : eas.TileSizeX !== p.tileSize.x || eas.TileSizeY !== p.tileSize.y ? 'tile size' : undefined;
      const oldClasses = (Array.isArray(eas.Classes) ? eas.Classes : []) as { ClassValue: number; ClassName: string }[];
      if (mismatch) throw new EngineError('INVALID_ARGUMENT', `cannot append to ${out}: its ${mismatch} differs from this export`, { path: 'context.startIndex' });
      const union = classesOf([...oldClasses.map((c) => [c.ClassValue, c.ClassName] as [number, string]), ...classes.map((c) => [c.value, c.name] as [number, string])]);
      if (union.length !== oldClasses.length || oldClasses.some((c, i) => union[i]?.value !== c.ClassValue)) {
        throw new EngineError('INVALID_ARGUMENT', `cannot append to ${out}: its classes (${oldClasses.map((c) => c.ClassValue).join(', ')}) differ from this export's (${classes.map((c) => c.value).join(', ')})`, { path: 'inputClassData' });
      }
      const oldColors = new Map((Array.isArray(eas.Classes) ? (eas.Classes as { ClassValue: number; Color: [number, number, number] }[]) : []).map((c) => [c.ClassValue, c.Color]));
      classes = classes.length === 0 ? oldClasses.map((c) => ({ value: c.ClassValue, name: c.ClassName, color: oldColors.get(c.ClassValue) ?? [0, 0, 0] })) : classes.map((c) => ({ ...c, color: oldColors.get(c.value) ?? c.color }));
      earlier = { stats: statsFromEas(eas, classes), mapTxt: existsSync(join(out, 'map.txt')) ? readFileSync(join(out, 'map.txt'), 'utf8') : '' };
      if (p.context.startIndex < earlier.stats.nextIndex) {
        throw new EngineError('INVALID_ARGUMENT', `context.startIndex ${p.context.startIndex} would overwrite chips of the existing export (its next free index is ${earlier.stats.nextIndex})`, { path: 'context.startIndex' });
      }
    }
  }

  // Process candidates in order; render ahead, consume in order.
  const digits = (i: number): string => String(i).padStart(p.indexDigits, '0');
  const rasterLabels = format === 'Classified_Tiles' || format === 'RCNN_Masks' || format === 'Panoptic_Segmentation';
  const labelExt = imageExt === 'tif' || imageExt === 'mrf' ? 'tif' : 'png';
  const emd: MetadataContext = {
    format,
    tileSize: p.tileSize,
    classes,
    ...(instanceClasses ? { instanceClasses } : {}),
    info,
    ...(extra ? { info2: extra.info } : {}),
    rasterCount: items.length,
    blackenAroundFeature: p.blackenAroundFeature,
    fixChipSize: p.fixChipSize,
    imageSpace: p.referenceSystem,
    vectorLabels: p.inputClassData === undefined ? undefined : classRasterSource === undefined,
  };
  const last = done[done.length - 1];
  let nextIndex = last ? last.index + 1 : p.context.startIndex;
  let kept = done.length;
  let emptyKept = done.filter((e) => e.empty).length;
  const skipped = { noLabels: 0, outsideMask: 0, noData: 0, emptyRatio: 0 };
  const firstCandidate = last ? last.candidate + 1 : 0;
  const splitSeed = 0x9e3779b9;

  interface Planned {
    readonly c: Candidate;
    readonly objects: ChipObject[];
    readonly instanceObjects: ChipObject[];
    readonly pixels?: Promise<{ image: PixelBlock; image2?: PixelBlock; classes?: PixelBlock }>;
  }
  const planned: Planned[] = [];
  for (const c of candidates.slice(firstCandidate)) {
    const objects = classRasterSource ? [] : vectorObjects(c, features, boxes, p.minPolygonOverlapRatio);
    const instanceObjects = format === 'Panoptic_Segmentation' ? vectorObjects(c, instances, instanceBoxes, p.minPolygonOverlapRatio) : [];
    if (mask !== undefined && !boxInside(mask, { xmin: c.window.x, ymin: c.window.y, xmax: c.window.x + c.window.width, ymax: c.window.y + c.window.height })) {
      skipped.outsideMask++;
      continue;
    }
    planned.push({ c, objects, instanceObjects });
  }

  let bytes = 0;
  let labelsWritten = 0;
  const written: ChipEntry[] = [...done];
  const total = candidates.length;
  if (options.dryRun) {
    let chips = 0;
    for (const pl of planned) {
      const has = pl.objects.length > 0 || pl.instanceObjects.length > 0 || classRasterSource !== undefined || p.inputClassData === undefined;
      if (!has && !p.context.exportAllTiles) {
        skipped.noLabels++;
        continue;
      }
      chips++;
      labelsWritten += pl.objects.length + pl.instanceObjects.length;
    }
    const pixelBytes = { U8: 1, S8: 1, U16: 2, S16: 2, U32: 4, S32: 4, F32: 4, F64: 8 }[info.pixelType as 'U8'] ?? 1;
    bytes = chips * p.tileSize.x * p.tileSize.y * (info.bandCount * pixelBytes + (extra ? extra.info.bandCount : 0) + (rasterLabels ? 1 : 0));
    return { outputLocation: out, dryRun: true, candidates: total, chips, labels: labelsWritten, firstIndex: p.context.startIndex, nextIndex: p.context.startIndex + chips, skipped, labelsOutsideRaster, bytes, classes };
  }

  creating(out);
  mkdirSync(out, { recursive: true });
  if (!existsSync(journalPath)) writeFileSync(journalPath, `${JSON.stringify({ paramsHash, started: firstCandidate })}\n`);
  const inFlight = Math.max(1, 2 * Math.max(1, options.pool?.size ?? 1));
  const start = (k: number): void => {
    const pl = planned[k];
    if (pl === undefined || pl.pixels !== undefined) return;
    const has = pl.objects.length > 0 || pl.instanceObjects.length > 0 || classRasterSource !== undefined || p.inputClassData === undefined;
    if (!has && !p.context.exportAllTiles) return;
    const it = items[pl.c.item]!;
    const pixels = (async () => ({
      image: await renderChip(it, pl.c, options.pool, signal),
      ...(extra ? { image2: await renderChip(extra, pl.c, options.pool, signal) } : {}),
      ...(classRasterSource ? { classes: await renderChip(classRasterSource, pl.c, undefined, signal, true) } : {}),
    }))();
    pixels.catch(() => undefined);
    (planned as { pixels?: unknown }[])[k] = { ...pl, pixels };
  };
  for (let k = 0; k < Math.min(inFlight, planned.length); k++) start(k);

  for (let k = 0; k < planned.length; k++) {
    if (signal?.aborted) throw new EngineError('ABORTED', 'the export was cancelled', { cause: signal.reason });
    start(k + inFlight);
    const pl = planned[k]!;
    const c = pl.c;
    options.onProgress?.({ done: c.id + 1, total, chips: written.length, message: `chip ${c.id + 1} of ${total}` });
    if (pl.pixels === undefined) {
      skipped.noLabels++;
      continue;
    }
    const { image, image2, classes: classChip } = await pl.pixels;
    const { width: w, height: h } = c.window;
    let invalid = 0;
    for (let i = 0; i < w * h; i++) if (image.mask[i] === 0) invalid++;
    if (invalid / (w * h) > p.maxNoDataFraction) {
      skipped.noData++;
      continue;
    }
    let objects = pl.objects;
    let classValuesChip: Uint8Array | Uint16Array | undefined;
    const maxClass = classes.reduce((m, x) => Math.max(m, x.value), 0);
    if (classChip !== undefined) {
      classValuesChip = maxClass > 255 ? new Uint16Array(w * h) : new Uint8Array(w * h);
      for (let i = 0; i < w * h; i++) classValuesChip[i] = classChip.mask[i] ? classChip.bands[0]![i]! : 0;
      objects = componentObjects(classValuesChip, w, h, names);
    }
    const empty = objects.length === 0 && pl.instanceObjects.length === 0;
    if (empty && p.inputClassData !== undefined && emptyKept + 1 > p.maxEmptyChipRatio * (kept + 1)) {
      skipped.emptyRatio++;
      continue;
    }
    // Labeled_Tiles: blacken around the feature.
    if (p.blackenAroundFeature && format === 'Labeled_Tiles' && c.feature !== undefined) {
      const inside = new Uint8Array(w * h);
      for (const o of objects) classRaster([o], w, h, inside);
      for (let i = 0; i < w * h; i++) if (inside[i] === 0) for (const band of image.bands) band[i] = 0;
    }

    const index = nextIndex++;
    const stem = digits(index);
    const bx = Math.floor(c.window.x / (p.tileSize.x * p.splitBlockSize));
    const by = Math.floor(c.window.y / (p.tileSize.y * p.splitBlockSize));
    const split: 'train' | 'valid' = p.validationFraction > 0 && hash3(bx, by, c.item, splitSeed) < p.validationFraction ? 'valid' : 'train';
    let chipBytes = 0;
    let classPixels: Record<string, number> | undefined;
    const tokens: string[] = [];
    // Image(s).
    let imagePath: string;
    if (format === 'Imagenet') {
      const cls = c.feature ? c.feature.className : names.get(majority(classValuesChip)) ?? 'background';
      imagePath = `images/${safeName(cls)}/${stem}.${imageExt}`;
    } else imagePath = `images/${stem}.${imageExt}`;
    chipBytes += writeRasterChip(join(out, imagePath), image, c, info, true);
    tokens.push(imagePath);
    if (image2 !== undefined && extra !== undefined) {
      const p2 = `images2/${stem}.${imageExt}`;
      chipBytes += writeRasterChip(join(out, p2), image2, c, extra.info, true);
      tokens.push(p2);
    }
    // Labels.
    let labelCount = 0;
    const labelTokens: string[] = [];
    const vocName = (o: ChipObject): string => String(o.classValue);
    switch (format) {
      case 'PASCAL_VOC_rectangles': {
        const lp = `labels/${stem}.xml`;
        chipBytes += writeAtomic(join(out, lp), vocXml(`${stem}.${imageExt}`, w, h, info.bandCount, objects.map((o) => ({ name: vocName(o), box: o.box, truncated: o.truncated })), p.vocExtras));
        labelTokens.push(lp);
        labelCount = objects.length;
        break;
      }
      case 'KITTI_rectangles': {
        const lp = `labels/${stem}.txt`;
        chipBytes += writeAtomic(join(out, lp), kittiText(objects));
        labelTokens.push(lp);
        labelCount = objects.length;
        break;
      }
      case 'Labeled_Tiles':
      case 'Imagenet': {
        const lp = `labels/${stem}.xml`;
        const cls = c.feature ? c.feature.classValue : majority(classValuesChip);
        const box = c.feature ? (objects[0]?.box ?? { xmin: 0, ymin: 0, xmax: w, ymax: h }) : { xmin: 0, ymin: 0, xmax: w, ymax: h };
        chipBytes += writeAtomic(join(out, lp), vocXml(`${stem}.${imageExt}`, w, h, info.bandCount, [{ name: String(cls), box }], p.vocExtras));
        labelTokens.push(lp);
        labelCount = 1;
        if (c.feature) objects = objects.slice(0, 1);
        break;
      }
      case 'MultiLabeled_Tiles': {
        const lp = `labels/${stem}.xml`;
        const present = classes.filter((cl) => objects.some((o) => o.classValue === cl.value)).map((cl) => cl.name);
        chipBytes += writeAtomic(join(out, lp), vocXml(`${stem}.${imageExt}`, w, h, info.bandCount, [{ name: present.join(','), box: { xmin: 0, ymin: 0, xmax: w, ymax: h } }], p.vocExtras));
        labelTokens.push(lp);
        labelCount = present.length;
        break;
      }
      case 'Classified_Tiles':
      case 'Panoptic_Segmentation': {
        const big = maxClass > 255;
        const values = classValuesChip ?? (big ? new Uint16Array(w * h) : new Uint8Array(w * h));
        if (classValuesChip === undefined) classRaster([...objects, ...pl.instanceObjects], w, h, values);
        classPixels = {};
        for (let i = 0; i < w * h; i++) if (values[i] !== 0) classPixels[String(values[i])] = (classPixels[String(values[i])] ?? 0) + 1;
        const lp = `labels/${stem}.${labelExt}`;
        chipBytes += writeRasterChip(join(out, lp), labelBlock(values, w, h, big ? 'U16' : 'U8'), c, info, true);
        labelTokens.push(lp);
        labelCount = Object.keys(classPixels).length;
        if (format === 'Panoptic_Segmentation') {
          for (const [value, bands] of instanceMasks(pl.instanceObjects, w, h)) {
            const lp2 = `labels2/${safeName(names.get(value) ?? String(value))}/${stem}.${labelExt}`;
            chipBytes += writeRasterChip(join(out, lp2), { rect: rect(0, 0, w, h), pixelType: 'U16', bands, mask: new Uint8Array(w * h).fill(1) }, c, info, false);
            labelCount += bands.length;
          }
        }
        break;
      }
      case 'RCNN_Masks': {
        const masks = classValuesChip !== undefined ? masksFromClassChip(classValuesChip, w, h) : instanceMasks(objects, w, h);
        for (const [value, bands] of [...masks.entries()].sort((a, b) => a[0] - b[0])) {
          const lp = `labels/${safeName(names.get(value) ?? String(value))}/${stem}.${labelExt}`;
          const maxId = bands.reduce((m, b) => Math.max(m, ...b), 0);
          const typed = maxId <= 255 ? bands.map((b) => Uint8Array.from(b)) : bands;
          chipBytes += writeRasterChip(join(out, lp), { rect: rect(0, 0, w, h), pixelType: maxId <= 255 ? 'U8' : 'U16', bands: typed, mask: new Uint8Array(w * h).fill(1) }, c, info, false);
          labelTokens.push(lp);
          labelCount += maxId;
        }
        break;
      }
      case 'Export_Tiles':
        break;
    }
    // Extra label sets.
    if (p.labelSets.includes('YOLO')) {
      const classIndex = new Map(classes.map((cl, i) => [cl.value, i] as const));
      chipBytes += writeAtomic(join(out, 'yolo', 'labels', `${stem}.txt`), yoloText(objects, classIndex, w, h));
    }
    const coco = p.labelSets.includes('COCO') ? cocoAnnotations(objects) : undefined;

    const sep = p.mapTxtStyle === 'vendor';
    const wsl = (s: string): string => s.replace(/\//g, '\\');
    let mapLine = '';
    if (!(format === 'RCNN_Masks' && labelTokens.length === 0)) {
      if (labelTokens.length === 0) mapLine = `${wsl(tokens.join(' '))}${sep ? ' ' : ''}`;
      else mapLine = sep ? `${tokens.map(wsl).join(' ')}  ${labelTokens.map(wsl).join(' ')} ` : `${[...tokens, ...labelTokens].map(wsl).join(' ')}`;
    }
    const stats: ChipRecordStats = {
      bands: image.bands.map((b) => momentsOf(b, image.mask)),
      ...(image2 ? { bands2: image2.bands.map((b) => momentsOf(b, image2.mask)) } : {}),
      features: emd.vectorLabels === true ? objects.map((o) => ({ classValue: o.classValue, area: o.area })) : [],
      ...(classPixels !== undefined && emd.vectorLabels === false ? { classPixels } : {}),
    };
    const entry: ChipEntry = {
      candidate: c.id,
      index,
      item: c.item,
      window: [c.window.x, c.window.y, c.window.width, c.window.height],
      angle: c.angle,
      split,
      mapLine,
      empty,
      stats,
      labels: labelCount,
      bytes: chipBytes,
      ...(coco ? { coco } : {}),
      image: imagePath,
    };
    appendFileSync(journalPath, `${JSON.stringify(entry)}\n`);
    written.push(entry);
    kept++;
    if (empty) emptyKept++;
  }

  // Metadata, from the journal entries, written last and atomically.
  const stats = emptyStats(info.bandCount, extra?.info.bandCount);
  if (earlier) mergeStats(stats, earlier.stats);
  for (const e of written) {
    addChip(stats, e.stats, classValues, e.index);
    bytes += e.bytes;
    labelsWritten += e.labels;
  }
  if (stats.nextIndex < p.context.startIndex) stats.nextIndex = p.context.startIndex;
  const mapLines = written.map((e) => e.mapLine).filter((l) => l !== '');
  bytes += writeAtomic(join(out, 'map.txt'), (earlier?.mapTxt ?? '') + mapLines.map((l) => `${l}\n`).join(''));
  bytes += writeAtomic(join(out, 'geo_model_definition.emd'), vendorJson(modelDefinition(emd, stats)));
  bytes += writeAtomic(join(out, 'stats.txt'), statsText(emd, stats));
  const manifest = {
    generator: 'rasterflow',
    metadataFormat: format,
    chipFormat: p.chipFormat,
    tileSize: p.tileSize,
    strideSize: p.strideSize,
    validationFraction: p.validationFraction,
    splitBlockSize: p.splitBlockSize,
    chips: written.map((e) => ({ index: e.index, image: e.image, item: e.item, window: e.window, angle: e.angle, split: e.split, labels: e.labels })),
  };
  bytes += writeAtomic(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 1)}\n`);
  if (p.validationFraction > 0) {
    bytes += writeAtomic(join(out, 'train.txt'), written.filter((e) => e.split === 'train').map((e) => `${e.image}\n`).join(''));
    bytes += writeAtomic(join(out, 'valid.txt'), written.filter((e) => e.split === 'valid').map((e) => `${e.image}\n`).join(''));
  }
  if (p.labelSets.includes('COCO')) bytes += writeAtomic(join(out, 'coco', 'annotations.json'), cocoJson(written, classes, p));
  if (p.labelSets.includes('YOLO')) bytes += writeAtomic(join(out, 'yolo', 'classes.txt'), classes.map((c) => `${c.name}\n`).join(''));
  // The EAS last: its presence marks a finished export.
  bytes += writeAtomic(join(out, 'geo_accumulated_stats.json'), vendorJson(accumulatedStats(emd, stats)));
  rmSync(journalPath, { force: true });
  options.onProgress?.({ done: total, total, chips: written.length, message: 'done' });
  return {
    outputLocation: out,
    dryRun: false,
    candidates: total,
    chips: written.length,
    labels: labelsWritten,
    firstIndex: written[0]?.index ?? p.context.startIndex,
    nextIndex: stats.nextIndex,
    skipped,
    labelsOutsideRaster,
    bytes,
    classes,
    ...(done.length > 0 ? { resumedFrom: done.length } : {}),
  };
}

/** CycleGAN: two complete sub-exports, `A/` (inputRaster) and `B/` (additionalInputRaster), each on its own grid. */
async function exportCycleGan(p: ChipParams, options: ExportOptions): Promise<ExportSummary> {
  const base = { ...(paramsEcho(p) as Record<string, unknown>), metadataFormat: 'Export_Tiles', additionalInputRaster: undefined };
  const a = await exportTrainingData({ ...base, outputLocation: join(p.outputLocation, 'A') }, options);
  const b = await exportTrainingData({ ...base, inputRaster: rasterEcho(p.additionalInputRaster!), outputLocation: join(p.outputLocation, 'B') }, options);
  for (const side of ['A', 'B']) {
    for (const f of ['geo_model_definition.emd', 'geo_accumulated_stats.json']) {
      const path = join(p.outputLocation, side, f);
      writeAtomic(path, readFileSync(path, 'utf8').replace(/"MetaDataMode" : "Export_Tiles"/g, '"MetaDataMode" : "CycleGAN"'));
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

const rasterEcho = (r: RasterInput): unknown => (r.kind === 'rule' ? r.rule : r.rule !== undefined ? { url: r.location, renderingRule: r.rule } : r.location);

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

// ---- Helpers.

function processingWindow(p: ChipParams, info: RasterInfo): Rect {
  const e = p.context.extent;
  if (e === undefined) return rect(0, 0, info.width, info.height);
  const x0 = Math.max(0, Math.floor((e.xmin - info.extent.xmin) / info.cellSize.x + 1e-9));
  const x1 = Math.min(info.width, Math.ceil((e.xmax - info.extent.xmin) / info.cellSize.x - 1e-9));
  const y0 = Math.max(0, Math.floor((info.extent.ymax - e.ymax) / info.cellSize.y + 1e-9));
  const y1 = Math.min(info.height, Math.ceil((info.extent.ymax - e.ymin) / info.cellSize.y - 1e-9));
  if (x1 <= x0 || y1 <= y0) throw new EngineError('INVALID_ARGUMENT', 'context.extent does not overlap the raster', { path: 'context.extent' });
  return rect(x0, y0, x1 - x0, y1 - y0);
}

/** Chip starts along one axis: pad (chips starting inside), skip (whole chips only), shift (last chip moved inside). */
function starts(origin: number, length: number, tile: number, stride: number, mode: 'pad' | 'shift' | 'skip'): number[] {
  const out: number[] = [];
  const end = origin + length;
  for (let s = origin; s < end; s += stride) {
    if (s + tile <= end || mode === 'pad') out.push(s);
    else {
      if (mode === 'shift') {
        const last = Math.max(origin, end - tile);
        if (out[out.length - 1] !== last) out.push(last);
      }
      break;
    }
    if (s + tile >= end && mode !== 'pad') break;
  }
  return out;
}

function multiples(angle: number): number[] {
  const out: number[] = [];
  const step = Math.abs(angle);
  if (step < 1e-9) return out;
  for (let a = step; a < 360 - 1e-9; a += step) out.push(Math.sign(angle) * a);
  return out;
}

function hash3(a: number, b: number, c: number, seed: number): number {
  let h = seed ^ Math.imul(a, 0x85ebca6b) ^ Math.imul(b, 0xc2b2ae35) ^ Math.imul(c, 0x27d4eb2f);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

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

async function classValuesOf(r: OpenedRaster, signal: AbortSignal | undefined): Promise<number[]> {
  const seen = new Set<number>();
  const rows = Math.max(1, Math.floor(1 << 20 / Math.max(1, r.info.width)));
  for (let y = 0; y < r.info.height; y += rows) {
    const b = await render(r.root, { rect: rect(0, y, r.info.width, Math.min(rows, r.info.height - y)), tileSize: Math.max(r.info.width, rows), signal });
    const band = b.bands[0]!;
    for (let i = 0; i < band.length; i++) if (b.mask[i] && band[i] !== 0) seen.add(band[i]!);
  }
  return [...seen].sort((a, b) => a - b);
}

function indexIn(values: Float64Array, v: number): number {
  for (let i = 0; i < values.length; i++) if (values[i] === v) return i;
  return -1;
}

const safeName = (s: string): string => s.replace(/[\\/:*?"<>|\u0000-\u001f]/g, '_').trim() || '_';

function safeJson(line: string | undefined): unknown {
  if (line === undefined || line.trim() === '') return undefined;
  try {
    return JSON.parse(line);
  } catch {
    return undefined; // a line cut by a kill: that chip was not finished
  }
}

function cocoJson(entries: readonly ChipEntry[], classes: readonly ClassInfo[], p: ChipParams): string {
  let annId = 1;
  const images = entries.map((e) => ({ id: e.index, file_name: e.image.replace(/^images\//, ''), width: e.window[2], height: e.window[3] }));
  const annotations = entries.flatMap((e) =>
    (e.coco ?? []).map((a) => ({ id: annId++, image_id: e.index, category_id: a.classValue, bbox: a.bbox, segmentation: a.segmentation, area: a.area, iscrowd: 0 })),
  );
  const categories = classes.map((c) => ({ id: c.value, name: c.name, supercategory: 'none' }));
  return `${JSON.stringify({ info: { description: `rasterflow ${p.metadataFormat} export`, version: '1.0' }, images, annotations, categories })}\n`;
}

/**
 * The chip grid: candidate chips in a fixed order (row-major grid starts per raster item, or one
 * chip per feature), each maybe rotated about its centre; the maps between raster pixels and chip
 * pixels; the spatial train/validation split; and the labels of a candidate computed from the
 * geometry alone (vector features clipped to the chip, or the components of a class chip).
 */
import { EngineError } from '../core/errors.js';
import type { RasterInfo } from '../core/pixel-block.js';
import { rect, type Rect } from '../core/rect.js';
import { boxOf, clipToBox, area as polygonArea, mapPoints, type Box } from './geometry.js';
import type { LabelFeature } from './features.js';
import type { OpenedRaster } from './inputs.js';
import type { ChipObject } from './labels.js';
import type { ChipParams } from './params.js';

/** One candidate chip: a window of the raster grid, maybe rotated about its centre. */
export interface Candidate {
  readonly id: number;
  readonly item: number;
  readonly window: Rect;
  readonly angle: number;
  /** Labeled_Tiles/Imagenet: the feature the chip is made for. */
  readonly feature?: LabelFeature;
}

/**
 * Every candidate of the export, numbered in order: per raster item, the grid starts row by row
 * (or, `perFeature`, one chip per feature touching the processing window), each followed by its
 * rotations.
 */
export function chipGrid(
  p: ChipParams,
  items: readonly OpenedRaster[],
  features: readonly LabelFeature[],
  perFeature: boolean,
): Candidate[] {
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
        for (const x of starts(area.x, area.width, p.tileSize.x, p.strideSize.x, p.edgeMode))
          push(k, rect(x, y, p.tileSize.x, p.tileSize.y));
      }
    }
  }
  return candidates;
}

function processingWindow(p: ChipParams, info: RasterInfo): Rect {
  const e = p.context.extent;
  if (e === undefined) return rect(0, 0, info.width, info.height);
  const x0 = Math.max(0, Math.floor((e.xmin - info.extent.xmin) / info.cellSize.x + 1e-9));
  const x1 = Math.min(info.width, Math.ceil((e.xmax - info.extent.xmin) / info.cellSize.x - 1e-9));
  const y0 = Math.max(0, Math.floor((info.extent.ymax - e.ymax) / info.cellSize.y + 1e-9));
  const y1 = Math.min(info.height, Math.ceil((info.extent.ymax - e.ymin) / info.cellSize.y - 1e-9));
  if (x1 <= x0 || y1 <= y0)
    throw new EngineError('INVALID_ARGUMENT', 'context.extent does not overlap the raster', { path: 'context.extent' });
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

/**
 * How many features (in `info`'s pixel space, or each item's own in PIXEL_SPACE) have no area
 * inside any raster item: labels a user gave that can label no chip.
 */
export function countOutside(
  features: readonly LabelFeature[],
  items: readonly OpenedRaster[],
  info: RasterInfo,
  pixelSpace: boolean,
): number {
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

/** The split of a chip: blocks of `splitBlockSize` chips go to validation by a seeded hash, so neighbours share a split. */
export function splitOf(c: Candidate, p: ChipParams): 'train' | 'valid' {
  const bx = Math.floor(c.window.x / (p.tileSize.x * p.splitBlockSize));
  const by = Math.floor(c.window.y / (p.tileSize.y * p.splitBlockSize));
  return p.validationFraction > 0 && hash3(bx, by, c.item, 0x9e3779b9) < p.validationFraction ? 'valid' : 'train';
}

function hash3(a: number, b: number, c: number, seed: number): number {
  let h = seed ^ Math.imul(a, 0x85ebca6b) ^ Math.imul(b, 0xc2b2ae35) ^ Math.imul(c, 0x27d4eb2f);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

// ---- Raster pixels <-> chip pixels.

/** Visual counter-clockwise rotation by `deg` in pixel space (y down). */
function rotation(deg: number): { cos: number; sin: number } {
  const r = (deg * Math.PI) / 180;
  return { cos: Math.cos(r), sin: Math.sin(r) };
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
export function chipToRaster(c: Candidate): (u: number, v: number) => readonly [number, number] {
  const { x, y, width: w, height: h } = c.window;
  if (c.angle === 0) return (u, v) => [u + x, v + y];
  const { cos, sin } = rotation(c.angle);
  return (u, v) => {
    const dx = u - w / 2;
    const dy = v - h / 2;
    return [x + w / 2 + dx * cos - dy * sin, y + h / 2 + dx * sin + dy * cos];
  };
}

/** GDAL geotransform of chip `c` (rotated chips: a rotated transform). */
export function geoTransform(c: Candidate, info: RasterInfo): number[] {
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

// ---- The labels of a candidate.

/** Labels of a chip from vector features: clipped, overlap-filtered, in chip coordinates. */
export function vectorObjects(c: Candidate, features: readonly LabelFeature[], boxes: readonly Box[], minOverlap: number): ChipObject[] {
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
        out.push({
          classValue: f.classValue,
          className: f.className,
          geometry: [],
          box: { xmin: pb.xmin, ymin: pb.ymin, xmax: pb.xmin, ymax: pb.ymin },
          truncated: false,
          area: f.area,
        });
      }
      return;
    }
    const part = polygonArea(inside);
    if (minOverlap > 0 && whole > 0 && part / whole < minOverlap) return;
    const b0 = boxOf(inside);
    const box = { xmin: Math.max(0, b0.xmin), ymin: Math.max(0, b0.ymin), xmax: Math.min(w, b0.xmax), ymax: Math.min(h, b0.ymax) };
    out.push({
      classValue: f.classValue,
      className: f.className,
      geometry: inside,
      box,
      truncated: part < whole * (1 - 1e-9),
      area: f.area,
    });
  });
  return out;
}

/** 4-connected components of each non-zero class of a class chip, as box objects. */
export function componentObjects(labels: ArrayLike<number>, w: number, h: number, names: ReadonlyMap<number, string>): ChipObject[] {
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
    out.push({
      classValue: v,
      className: names.get(v) ?? String(v),
      geometry: [[[xmin, ymin, xmax, ymin, xmax, ymax, xmin, ymax]]],
      box: { xmin, ymin, xmax, ymax },
      truncated: false,
      area: ring.length,
    });
  }
  return out;
}

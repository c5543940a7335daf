/**
 * Label file contents per metadata format (contract §6), from the objects of one chip in chip
 * pixel space (origin top-left, x right, y down, continuous: a box touching the right edge of a
 * 256-px chip has xmax 256.00).
 */
import { boxIsEmpty, rasterize, type Box, type MultiPolygon } from './geometry.js';

export interface ChipObject {
  readonly classValue: number;
  readonly className: string;
  /** The part inside the chip, chip pixel coordinates. */
  readonly geometry: MultiPolygon;
  /** Bounding box of `geometry` (clipped to the chip). */
  readonly box: Box;
  /** Whether clipping cut the feature. */
  readonly truncated: boolean;
  /** Area of the whole feature, map units squared (statistics). */
  readonly area: number;
}

/** Two decimals, never `-0.00` (the consumer's KITTI reader breaks on a minus sign). */
const f2 = (v: number): string => (v < 0.005 && v > -0.005 ? 0 : v).toFixed(2);

const escapeXml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

export interface VocObject {
  readonly name: string;
  readonly box: Box;
  readonly truncated?: boolean;
}

/**
 * PASCAL VOC annotation as the vendor writes it (§6.1): filename, source/annotation, size, one
 * object per box with a numeric class `name`. `extras` adds truncated/difficult for generic tools.
 */
export function vocXml(
  filename: string,
  width: number,
  height: number,
  depth: number,
  objects: readonly VocObject[],
  extras = false,
): string {
  const lines = ['<?xml version="1.0"?>', '<annotation>', `    <filename>${escapeXml(filename)}</filename>`];
  lines.push('    <source>', '        <annotation>rasterflow</annotation>', '    </source>');
  lines.push(
    '    <size>',
    `        <width>${width}</width>`,
    `        <height>${height}</height>`,
    `        <depth>${depth}</depth>`,
    '    </size>',
  );
  for (const o of objects) {
    lines.push('    <object>', `        <name>${escapeXml(o.name)}</name>`);
    if (extras) lines.push(`        <truncated>${o.truncated ? 1 : 0}</truncated>`, '        <difficult>0</difficult>');
    lines.push(
      '        <bndbox>',
      `            <xmin>${f2(o.box.xmin)}</xmin>`,
      `            <ymin>${f2(o.box.ymin)}</ymin>`,
      `            <xmax>${f2(o.box.xmax)}</xmax>`,
      `            <ymax>${f2(o.box.ymax)}</ymax>`,
      '        </bndbox>',
      '    </object>',
    );
  }
  lines.push('</annotation>');
  return `${lines.join('\n')}\n`;
}

/** KITTI rows (§6.2): class value, unused columns as zeros, left top right bottom with 2 decimals. */
export function kittiText(objects: readonly ChipObject[]): string {
  return objects
    .map(
      (o) =>
        `${o.classValue} 0.00 0 0.00 ${f2(o.box.xmin)} ${f2(o.box.ymin)} ${f2(o.box.xmax)} ${f2(o.box.ymax)} 0.00 0.00 0.00 0.00 0.00 0.00 0.00\n`,
    )
    .join('');
}

/** YOLO rows (ours, beyond the vendor): class index, centre x, centre y, width, height, normalised to 0..1. */
export function yoloText(objects: readonly ChipObject[], classIndex: ReadonlyMap<number, number>, width: number, height: number): string {
  const f6 = (v: number): string => v.toFixed(6);
  return objects
    .filter((o) => !boxIsEmpty(o.box))
    .map((o) => {
      const b = o.box;
      return `${classIndex.get(o.classValue)} ${f6((b.xmin + b.xmax) / 2 / width)} ${f6((b.ymin + b.ymax) / 2 / height)} ${f6((b.xmax - b.xmin) / width)} ${f6((b.ymax - b.ymin) / height)}\n`;
    })
    .join('');
}

/**
 * A class raster (§6.3): each pixel whose centre lies inside an object gets its class value, 0
 * elsewhere. Later objects win where objects overlap [ours: input order, as drawing in order].
 */
export function classRaster(objects: readonly ChipObject[], width: number, height: number, out: Uint8Array | Uint16Array): void {
  out.fill(0);
  for (const o of objects) rasterize(o.geometry, width, height, (i) => (out[i] = o.classValue));
}

/**
 * Instance masks (§6.4, §6.8): one mask stack per class present, ids 1..N in object order; an
 * instance overlapping an earlier one goes to the next band where its pixels are free.
 */
export function instanceMasks(objects: readonly ChipObject[], width: number, height: number): Map<number, Uint16Array[]> {
  const byClass = new Map<number, Uint16Array[]>();
  const ids = new Map<number, number>();
  const scratch: number[] = [];
  for (const o of objects) {
    scratch.length = 0;
    rasterize(o.geometry, width, height, (i) => scratch.push(i));
    if (scratch.length === 0) continue;
    const id = (ids.get(o.classValue) ?? 0) + 1;
    ids.set(o.classValue, id);
    let bands = byClass.get(o.classValue);
    if (bands === undefined) byClass.set(o.classValue, (bands = []));
    let target = bands.find((band) => scratch.every((i) => band[i] === 0));
    if (target === undefined) bands.push((target = new Uint16Array(width * height)));
    for (const i of scratch) target[i] = id;
  }
  return byClass;
}

/** COCO pieces for one chip (ours, beyond the vendor): polygons and boxes in chip pixels. */
export function cocoAnnotations(
  objects: readonly ChipObject[],
): { bbox: number[]; segmentation: number[][]; area: number; classValue: number }[] {
  return objects
    .filter((o) => !boxIsEmpty(o.box))
    .map((o) => {
      const segmentation = o.geometry.flatMap((poly) => poly.slice(0, 1).map((ring) => ring.map((v) => Math.round(v * 100) / 100)));
      let a = 0;
      for (const poly of o.geometry) {
        poly.forEach((ring, k) => {
          let s = 0;
          for (let i = 0; i < ring.length; i += 2) {
            const j = (i + 2) % ring.length;
            s += ring[i]! * ring[j + 1]! - ring[j]! * ring[i + 1]!;
          }
          a += (k === 0 ? 1 : -1) * Math.abs(s / 2);
        });
      }
      const b = o.box;
      return {
        bbox: [b.xmin, b.ymin, b.xmax - b.xmin, b.ymax - b.ymin].map((v) => Math.round(v * 100) / 100),
        segmentation,
        area: Math.round(a * 100) / 100,
        classValue: o.classValue,
      };
    });
}

/**
 * Integer pixel rectangles in raster space (x to the east, y to the south).
 *
 * The functions here store their fields as `| 0` (int32): V8 gives all objects of this shape one
 * layout, and a single float64 stored in a field (Math.min and friends return float64s from
 * optimised code) turns that field into a boxed double for every rectangle, and every row offset
 * the kernels derive from it into float64 arithmetic with a conversion check per pixel access
 * (measured: about 1.4x slower terrain kernels). Kernels also coerce what they read with `| 0`.
 */
export interface Rect {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export const rect = (x: number, y: number, width: number, height: number): Rect => ({
  x: x | 0,
  y: y | 0,
  width: width | 0,
  height: height | 0,
});

export const grow = (r: Rect, by: number): Rect =>
  by === 0 ? r : { x: (r.x - by) | 0, y: (r.y - by) | 0, width: (r.width + 2 * by) | 0, height: (r.height + 2 * by) | 0 };

export function intersect(a: Rect, b: Rect): Rect | undefined {
  const x0 = Math.max(a.x, b.x);
  const y0 = Math.max(a.y, b.y);
  const x1 = Math.min(a.x + a.width, b.x + b.width);
  const y1 = Math.min(a.y + a.height, b.y + b.height);
  return x1 > x0 && y1 > y0 ? { x: x0 | 0, y: y0 | 0, width: (x1 - x0) | 0, height: (y1 - y0) | 0 } : undefined;
}

export const rectEquals = (a: Rect, b: Rect): boolean => a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;

export const rectKey = (r: Rect): string => `${r.x},${r.y},${r.width}x${r.height}`;

/** Cut `area` into tiles of at most `tileWidth` x `tileHeight`, row by row. */
export function tiles(area: Rect, tileWidth: number, tileHeight = tileWidth): Rect[] {
  const out: Rect[] = [];
  for (let y = area.y; y < area.y + area.height; y += tileHeight) {
    for (let x = area.x; x < area.x + area.width; x += tileWidth) {
      out.push({
        x: x | 0,
        y: y | 0,
        width: Math.min(tileWidth, area.x + area.width - x) | 0,
        height: Math.min(tileHeight, area.y + area.height - y) | 0,
      });
    }
  }
  return out;
}

/** Pixel measures of the browser test's screenshots (PNG, RGBA): grey levels, spread, correlation. */
import { PNG } from 'pngjs';

export interface Grey {
  readonly width: number;
  readonly height: number;
  /** Luma 0..255 per pixel, composited over white. */
  readonly values: Float64Array;
  /** Share of pixels whose channels differ by more than 8 (a hillshade is grey: R = G = B). */
  readonly colouredShare: number;
}

/** Decodes a PNG and composites it over white (what a page with a white background shows). */
export function greyOf(png: Buffer): Grey {
  const img = PNG.sync.read(png);
  const n = img.width * img.height;
  const values = new Float64Array(n);
  let coloured = 0;
  for (let i = 0; i < n; i++) {
    const a = img.data[4 * i + 3]! / 255;
    const r = img.data[4 * i]! * a + 255 * (1 - a);
    const g = img.data[4 * i + 1]! * a + 255 * (1 - a);
    const b = img.data[4 * i + 2]! * a + 255 * (1 - a);
    if (Math.max(r, g, b) - Math.min(r, g, b) > 8) coloured++;
    values[i] = 0.299 * r + 0.587 * g + 0.114 * b;
  }
  return { width: img.width, height: img.height, values, colouredShare: coloured / n };
}

export interface Spread {
  /** Distinct rounded grey levels. */
  readonly levels: number;
  readonly mean: number;
  readonly stdDev: number;
  /** Share of (near-)white pixels: nothing drawn there. */
  readonly blankShare: number;
}

export function spreadOf(g: Grey): Spread {
  const seen = new Set<number>();
  let sum = 0;
  let sum2 = 0;
  let blank = 0;
  for (const v of g.values) {
    seen.add(Math.round(v));
    sum += v;
    sum2 += v * v;
    if (v >= 254) blank++;
  }
  const n = g.values.length;
  const mean = sum / n;
  return { levels: seen.size, mean, stdDev: Math.sqrt(Math.max(0, sum2 / n - mean * mean)), blankShare: blank / n };
}

/** Pearson correlation of two images of the same size. */
export function correlation(a: Grey, b: Grey): number {
  if (a.width !== b.width || a.height !== b.height) throw new Error(`sizes differ: ${a.width}x${a.height} and ${b.width}x${b.height}`);
  const n = a.values.length;
  let ma = 0;
  let mb = 0;
  for (let i = 0; i < n; i++) {
    ma += a.values[i]!;
    mb += b.values[i]!;
  }
  ma /= n;
  mb /= n;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    const da = a.values[i]! - ma;
    const db = b.values[i]! - mb;
    sab += da * db;
    saa += da * da;
    sbb += db * db;
  }
  return saa === 0 || sbb === 0 ? 0 : sab / Math.sqrt(saa * sbb);
}

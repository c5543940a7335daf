/** Brute-force focal references for the focal tests: plain loops over every window, from the spec's formulas. */

export interface Grid {
  readonly w: number;
  readonly h: number;
  readonly v: ArrayLike<number>;
  /** 1 valid, 0 NoData. */
  readonly m: ArrayLike<number>;
}

/** Valid values of the window around (x, y), clipped to the raster, and their offsets. */
export function windowOf(g: Grid, x: number, y: number, cols: number, rows: number): { v: number[]; dx: number[]; dy: number[] } {
  const left = cols >> 1;
  const top = rows >> 1;
  const v: number[] = [];
  const dx: number[] = [];
  const dy: number[] = [];
  for (let r = y - top; r < y - top + rows; r++) {
    for (let c = x - left; c < x - left + cols; c++) {
      if (r < 0 || c < 0 || r >= g.h || c >= g.w || !g.m[r * g.w + c]) continue;
      v.push(g.v[r * g.w + c]!);
      dx.push(c - x);
      dy.push(r - y);
    }
  }
  return { v, dx, dy };
}

export function mean(v: readonly number[]): number {
  return v.reduce((a, b) => a + b, 0) / v.length;
}

export function variance(v: readonly number[]): number {
  const m = mean(v);
  return v.reduce((a, b) => a + (b - m) * (b - m), 0) / v.length;
}

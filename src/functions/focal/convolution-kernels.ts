/**
 * Convolution kernels: the 22 predefined kernels of the spec (raster-functions.md "Convolution",
 * VJS `convolutionUtils.js`; rows top to bottom, applied as a correlation), the normalisation rule
 * (a kernel whose sum is neither 0 nor 1 is divided by its sum) and user-defined kernels parsed
 * from the `Kernel` argument (a flat row-major array, a string of numbers, or an array of rows).
 */

export interface KernelDef {
  readonly name: string;
  readonly cols: number;
  readonly rows: number;
  /** Row-major, `rows * cols` weights, as written in the spec (before normalisation). */
  readonly weights: readonly number[];
}

const k3 = (name: string, weights: readonly number[]): KernelDef => ({ name, cols: 3, rows: 3, weights });
const k5 = (name: string, weights: readonly number[]): KernelDef => ({ name, cols: 5, rows: 5, weights });
const T = 0.111111111111;

/** Predefined kernels by Type code 0..21. */
export const PREDEFINED_KERNELS: readonly KernelDef[] = [
  k3('LineDetectionHorizontal', [-1, -1, -1, 2, 2, 2, -1, -1, -1]),
  k3('LineDetectionVertical', [-1, 2, -1, -1, 2, -1, -1, 2, -1]),
  k3('LineDetectionLeftDiagonal', [2, -1, -1, -1, 2, -1, -1, -1, 2]),
  k3('LineDetectionRightDiagonal', [-1, -1, 2, -1, 2, -1, 2, -1, -1]),
  k3('GradientNorth', [-1, -2, -1, 0, 0, 0, 1, 2, 1]),
  k3('GradientWest', [-1, 0, 1, -2, 0, 2, -1, 0, 1]),
  k3('GradientEast', [1, 0, -1, 2, 0, -2, 1, 0, -1]),
  k3('GradientSouth', [1, 2, 1, 0, 0, 0, -1, -2, -1]),
  k3('GradientNorthEast', [0, -1, -2, 1, 0, -1, 2, 1, 0]),
  k3('GradientNorthWest', [-2, -1, 0, -1, 0, 1, 0, 1, 2]),
  k3('SmoothArithmeticMean', [T, T, T, T, T, T, T, T, T]),
  k3('Smoothing3x3', [0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625]),
  k5('Smoothing5x5', [1, 1, 1, 1, 1, 1, 4, 4, 4, 1, 1, 4, 12, 4, 1, 1, 4, 4, 4, 1, 1, 1, 1, 1, 1]),
  k3('Sharpening3x3', [-1, -1, -1, -1, 9, -1, -1, -1, -1]),
  k5('Sharpening5x5', [-1, -3, -4, -3, -1, -3, 0, 6, 0, -3, -4, 6, 21, 6, -4, -3, 0, 6, 0, -3, -1, -3, -4, -3, -1]),
  k3('Laplacian3x3', [0, -1, 0, -1, 4, -1, 0, -1, 0]),
  k5('Laplacian5x5', [0, 0, -1, 0, 0, 0, -1, -2, -1, 0, -1, -2, 17, -2, -1, 0, -1, -2, -1, 0, 0, 0, -1, 0, 0]),
  k3('SobelHorizontal', [-1, -2, -1, 0, 0, 0, 1, 2, 1]),
  k3('SobelVertical', [-1, 0, 1, -2, 0, 2, -1, 0, 1]),
  k3('Sharpen', [0, -0.25, 0, -0.25, 2, -0.25, 0, -0.25, 0]),
  k3('Sharpen2', [-0.25, -0.25, -0.25, -0.25, 3, -0.25, -0.25, -0.25, -0.25]),
  k3('PointSpread', [-0.627, 0.352, -0.627, 0.352, 2.923, 0.352, -0.627, 0.352, -0.627]),
];

export const USER_DEFINED = -1;

/** Type names accepted instead of codes (case-insensitive). */
export const KERNEL_TYPE_NAMES: Readonly<Record<string, number>> = Object.fromEntries([
  ['UserDefined', USER_DEFINED],
  ...PREDEFINED_KERNELS.map((k, i) => [k.name, i] as const),
]);

/**
 * The spec's normalisation: weights divided by their sum when the sum is neither 0 nor 1. Sums
 * within 1e-9 of 0 or 1 count as 0 or 1 (SmoothArithmeticMean's 9 x 0.111111111111 is used as is).
 */
export function normalise(weights: readonly number[]): Float64Array {
  let sum = 0;
  for (const w of weights) sum += w;
  const out = Float64Array.from(weights);
  if (Math.abs(sum) > 1e-9 && Math.abs(sum - 1) > 1e-9) for (let i = 0; i < out.length; i++) out[i] = out[i]! / sum;
  return out;
}

/**
 * A rank-one factorisation `w[r][c] = col[r] * row[c]` when the kernel has one (within 1e-12 of
 * its largest weight), else undefined. Separable kernels can run as two 1-D passes.
 */
export function separate(w: Float64Array, cols: number, rows: number): { col: Float64Array; row: Float64Array } | undefined {
  let p = 0;
  for (let i = 1; i < w.length; i++) if (Math.abs(w[i]!) > Math.abs(w[p]!)) p = i;
  const pivot = w[p]!;
  if (pivot === 0) return undefined;
  const pr = Math.floor(p / cols);
  const pc = p % cols;
  const col = new Float64Array(rows);
  const row = new Float64Array(cols);
  for (let r = 0; r < rows; r++) col[r] = w[r * cols + pc]!;
  for (let c = 0; c < cols; c++) row[c] = w[pr * cols + c]! / pivot;
  const tol = 1e-12 * Math.abs(pivot);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) if (Math.abs(col[r]! * row[c]! - w[r * cols + c]!) > tol) return undefined;
  }
  return { col, row };
}

/** Result of reading a user-defined kernel: the kernel, or a message naming what is wrong. */
export type ParsedKernel = { readonly cols: number; readonly rows: number; readonly weights: number[] } | { readonly error: string };

const toNumber = (v: unknown): number | undefined => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v.trim()) : Number.NaN;
  return Number.isFinite(n) ? n : undefined;
};

/**
 * The user kernel from `Kernel` with optional `Columns`/`Rows`:
 *  - a flat array (or a string of numbers separated by blanks, commas, semicolons or new lines) of
 *    `Rows x Columns` numbers, row-major;
 *  - an array of rows (`[[...], [...]]`), whose shape gives Rows and Columns;
 *  - a string whose first two numbers are `Columns Rows` followed by exactly that many weights
 *    (the vendor's kernel-file layout), when the count says so.
 * Without Columns/Rows a flat list must be square (n x n).
 */
export function parseKernel(value: unknown, cols: number | undefined, rows: number | undefined): ParsedKernel {
  if (value === undefined || value === null) return { error: 'Kernel is required for Type -1 (UserDefined)' };
  let flat: number[];
  if (Array.isArray(value) && value.length > 0 && value.every((r) => Array.isArray(r))) {
    const grid = value as unknown[][];
    const c = grid[0]!.length;
    if (c === 0 || grid.some((r) => r.length !== c)) return { error: 'every row of Kernel must have the same, non-zero length' };
    flat = [];
    for (const [ri, r] of grid.entries()) {
      for (const [ci, v] of r.entries()) {
        const n = toNumber(v);
        if (n === undefined) return { error: `Kernel[${ri}][${ci}] is not a number: ${JSON.stringify(v)}` };
        flat.push(n);
      }
    }
    if ((cols !== undefined && cols !== c) || (rows !== undefined && rows !== grid.length)) {
      return { error: `Kernel has ${grid.length} rows of ${c} but Columns x Rows is ${cols ?? c} x ${rows ?? grid.length}` };
    }
    return { cols: c, rows: grid.length, weights: flat };
  }
  const list = typeof value === 'string' ? value.split(/[\s,;]+/).filter((t) => t !== '') : Array.isArray(value) ? value : [value];
  flat = [];
  for (const [i, v] of list.entries()) {
    const n = toNumber(v);
    if (n === undefined) return { error: `Kernel element ${i} is not a number: ${JSON.stringify(v)}` };
    flat.push(n);
  }
  if (flat.length === 0) return { error: 'Kernel is empty' };
  // The vendor's kernel-file layout: "cols rows" then the weights.
  if (typeof value === 'string' && flat.length > 2) {
    const [hc, hr] = flat as [number, number];
    const headerFits = Number.isInteger(hc) && Number.isInteger(hr) && hc > 0 && hr > 0 && hc * hr === flat.length - 2;
    const matches = (cols === undefined || cols === hc) && (rows === undefined || rows === hr);
    const plainFits = cols !== undefined && rows !== undefined && cols * rows === flat.length;
    if (headerFits && matches && !plainFits) return { cols: hc, rows: hr, weights: flat.slice(2) };
  }
  let c = cols;
  let r = rows;
  if (c === undefined && r === undefined) {
    const s = Math.round(Math.sqrt(flat.length));
    if (s * s !== flat.length) return { error: `Kernel has ${flat.length} numbers: give Columns and Rows, or a square kernel` };
    c = s;
    r = s;
  } else if (c === undefined) {
    c = flat.length / r!;
  } else if (r === undefined) {
    r = flat.length / c;
  }
  if (!Number.isInteger(c) || !Number.isInteger(r) || c * r! !== flat.length) {
    return { error: `Kernel has ${flat.length} numbers but Columns x Rows is ${cols ?? '?'} x ${rows ?? '?'} (the counts must match)` };
  }
  return { cols: c, rows: r!, weights: flat };
}

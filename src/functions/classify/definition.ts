/**
 * The ClassifierDefinition object (spec 000 section 8, last paragraphs) and the maximum-likelihood
 * model built from it, shared by Classify, MLClassify and SpectralUnmixing.
 *
 * Shape (as sent on the wire; a JSON string holding the object is accepted too):
 * ```
 * { "geoClassifierDefinitionFile": 0,          // vendor-prefixed marker, any prefix accepted, ignored
 *   "FileVersion": 1, "NumberDefinitions": 1,
 *   "Definitions": [ { "Classifier": "MaximumLikelihood", "NumberClasses": 2,
 *       "RasterIsSegmented": false, "NumberBands": 3,
 *       "Classes": [ { "ClassValue": 1, "ClassName": "Vegetation", "Red": 230, "Green": 0,
 *           "Blue": 0, "Count": 546, "Means": [...one per band...],
 *           "Covariances": [[...bands x bands...]] }, ... ] } ] }
 * ```
 * Member names are matched case-insensitively (spec 1.4). `Covariances` may also be a flat array
 * of bands x bands numbers (row-major). Only the first definition is used (a warning names the
 * others). Every problem is an INVALID_ARGUMENT whose path points into the definition, e.g.
 * `rasterFunctionArguments.ClassifierDefinition.Definitions[0].Classes[1].Covariances[2][0]`.
 *
 * The maximum-likelihood model [spec "Classify", standard Gaussian discriminant]:
 * `g_k(x) = ln P_k - 0.5 ln|S_k| - 0.5 (x - m_k)' S_k^-1 (x - m_k)`, class = argmax_k g_k, ties to
 * the lowest class index (definition order). Priors are equal (the definition carries none), so
 * ln P_k is a common constant and is left out. Each covariance is factored once at plan time by
 * Cholesky, S = L L'; the model keeps M = L^-1 (lower triangular) so the quadratic form is
 * |M (x - m)|^2, and the constant -0.5 ln|S| = -sum ln L_ii is hoisted. A covariance that is not
 * symmetric, or not positive definite (singular: a constant band in a class's training pixels,
 * duplicated bands), is refused naming the class. ASSUMPTION (spec suggests ridge regularisation
 * [ours]; the task asks for a clear error): no silent regularisation, so results never depend on an
 * invented ridge; users fix the signature (more training pixels, drop the constant band).
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { PixelBlock } from '../../core/pixel-block.js';

export interface DefinedClass {
  readonly value: number;
  readonly name: string;
  /** r, g, b when all three are given. */
  readonly rgb?: readonly [number, number, number];
  readonly count?: number;
  readonly means: readonly number[];
  /** bands x bands, row-major; undefined when not required and absent. */
  readonly covariance?: Float64Array;
  /** JSON path of this class (for messages about it). */
  readonly path: string;
}

export interface Definition {
  readonly classifier: string;
  readonly rasterIsSegmented: boolean;
  readonly bands: number;
  readonly classes: readonly DefinedClass[];
  readonly warnings: readonly string[];
}

type Obj = Record<string, unknown>;

/** Member `name` of `o`, matched case-insensitively. */
function member(o: Obj, name: string): unknown {
  if (name in o) return o[name];
  const k = Object.keys(o).find((key) => key.toLowerCase() === name.toLowerCase());
  return k === undefined ? undefined : o[k];
}

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A user value as text, as String() gives it (arrays included), except that an object prints as
 * its JSON rather than as "[object Object]".
 */
function text(v: unknown): string {
  if (Array.isArray(v)) return String(v);
  if (typeof v === 'object' && v !== null) return JSON.stringify(v);
  return String(v as string | number | boolean | bigint | symbol | null | undefined);
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v.trim());
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

/** Parse a JSON string argument, or pass an object through. */
export function jsonObject(raw: unknown, path: string, what: string): Obj {
  let v = raw;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v) as unknown;
    } catch (e) {
      throw invalidArgument(path, `${what} is a string but not valid JSON: ${(e as Error).message}`);
    }
  }
  if (!isObj(v)) throw invalidArgument(path, `${what} must be a JSON object`);
  return v;
}

export interface ParseOptions {
  /** Covariances required for every class (maximum likelihood). */
  readonly covariances: boolean;
  /** Band count of the raster the definition is applied to. */
  readonly rasterBands: number;
  /** Path of the raster argument, for band-count mismatches. */
  readonly rasterPath: string;
  /** Argument name used in messages ("ClassifierDefinition"). */
  readonly what: string;
}

/** Parse and check a ClassifierDefinition object at `path`. */
export function parseDefinition(raw: unknown, path: string, o: ParseOptions): Definition {
  const root = jsonObject(raw, path, o.what);
  const warnings: string[] = [];
  const defs = member(root, 'Definitions');
  if (!Array.isArray(defs) || defs.length === 0) {
    throw invalidArgument(`${path}.Definitions`, `${o.what} needs a non-empty Definitions array`);
  }
  const nDefs = num(member(root, 'NumberDefinitions'));
  if (nDefs !== undefined && nDefs !== defs.length) {
    throw invalidArgument(`${path}.NumberDefinitions`, `NumberDefinitions is ${nDefs} but Definitions holds ${defs.length}`);
  }
  if (defs.length > 1) warnings.push(`${o.what}: only the first of ${defs.length} definitions is used`);
  const dp = `${path}.Definitions[0]`;
  const def: unknown = defs[0];
  if (!isObj(def)) throw invalidArgument(dp, 'a definition must be an object');

  const classifierRaw = member(def, 'Classifier');
  const classifier = classifierRaw === undefined ? 'MaximumLikelihood' : text(classifierRaw);
  const segRaw = member(def, 'RasterIsSegmented');
  if (segRaw !== undefined && typeof segRaw !== 'boolean' && segRaw !== 0 && segRaw !== 1 && !/^(true|false)$/i.test(text(segRaw))) {
    throw invalidArgument(`${dp}.RasterIsSegmented`, `expected true or false, got ${JSON.stringify(segRaw)}`);
  }
  const rasterIsSegmented = segRaw === true || segRaw === 1 || text(segRaw).toLowerCase() === 'true';

  const classes = member(def, 'Classes');
  if (!Array.isArray(classes) || classes.length === 0) throw invalidArgument(`${dp}.Classes`, 'needs a non-empty Classes array');
  const nClasses = num(member(def, 'NumberClasses'));
  if (nClasses !== undefined && nClasses !== classes.length) {
    throw invalidArgument(`${dp}.NumberClasses`, `NumberClasses is ${nClasses} but Classes holds ${classes.length}`);
  }
  const nBandsRaw = member(def, 'NumberBands');
  const nBands = nBandsRaw === undefined ? undefined : num(nBandsRaw);
  if (nBandsRaw !== undefined && (nBands === undefined || !Number.isInteger(nBands) || nBands < 1)) {
    throw invalidArgument(`${dp}.NumberBands`, `NumberBands must be a positive integer, got ${JSON.stringify(nBandsRaw)}`);
  }
  const bands = nBands ?? o.rasterBands;
  if (bands !== o.rasterBands) {
    throw invalidArgument(
      nBands !== undefined ? `${dp}.NumberBands` : o.rasterPath,
      `the definition is for ${bands} band(s) but the raster has ${o.rasterBands}`,
    );
  }

  const seen = new Map<number, number>();
  const out: DefinedClass[] = classes.map((c, k) => {
    const cp = `${dp}.Classes[${k}]`;
    if (!isObj(c)) throw invalidArgument(cp, 'a class must be an object');
    const valueRaw = member(c, 'ClassValue');
    const value = num(valueRaw);
    if (value === undefined || !Number.isInteger(value)) {
      throw invalidArgument(`${cp}.ClassValue`, `ClassValue must be an integer, got ${JSON.stringify(valueRaw)}`);
    }
    const prev = seen.get(value);
    if (prev !== undefined) throw invalidArgument(`${cp}.ClassValue`, `ClassValue ${value} is also used by Classes[${prev}]`);
    seen.set(value, k);
    const nameRaw = member(c, 'ClassName');
    const name = nameRaw === undefined ? `Class ${value}` : text(nameRaw);
    const label = `class ${value} ("${name}")`;

    const rgbRaw = ['Red', 'Green', 'Blue'].map((ch) => member(c, ch));
    let rgb: [number, number, number] | undefined;
    if (rgbRaw.every((v) => v !== undefined)) {
      rgb = rgbRaw.map((v, i) => {
        const n = num(v);
        if (n === undefined || !Number.isInteger(n) || n < 0 || n > 255) {
          throw invalidArgument(
            `${cp}.${['Red', 'Green', 'Blue'][i]}`,
            `${label}: colour components are integers 0..255, got ${JSON.stringify(v)}`,
          );
        }
        return n;
      }) as [number, number, number];
    }
    const countRaw = member(c, 'Count');
    const count = countRaw === undefined ? undefined : num(countRaw);

    const meansRaw = member(c, 'Means');
    if (!Array.isArray(meansRaw)) throw invalidArgument(`${cp}.Means`, `${label}: Means must be an array of ${bands} numbers`);
    if (meansRaw.length !== bands) {
      throw invalidArgument(`${cp}.Means`, `${label}: Means has ${meansRaw.length} value(s), expected ${bands} (one per band)`);
    }
    const means = meansRaw.map((v, i) => {
      const n = num(v);
      if (n === undefined) throw invalidArgument(`${cp}.Means[${i}]`, `${label}: not a finite number: ${JSON.stringify(v)}`);
      return n;
    });

    const covRaw = member(c, 'Covariances');
    let covariance: Float64Array | undefined;
    if (covRaw !== undefined && covRaw !== null) {
      covariance = parseCovariance(covRaw, bands, `${cp}.Covariances`, label);
    } else if (o.covariances) {
      throw invalidArgument(`${cp}.Covariances`, `${label}: Covariances (a ${bands} x ${bands} matrix) is required`);
    }
    return {
      value,
      name,
      ...(rgb ? { rgb } : {}),
      ...(count !== undefined ? { count } : {}),
      means,
      ...(covariance ? { covariance } : {}),
      path: cp,
    };
  });

  if (!/^maximum\s*likelihood$/i.test(classifier.trim()) && o.covariances) {
    throw unsupportedInput(`${dp}.Classifier`, `classifier "${classifier}" is not supported; only MaximumLikelihood is`);
  }
  return { classifier, rasterIsSegmented, bands, classes: out, warnings };
}

function parseCovariance(raw: unknown, n: number, path: string, label: string): Float64Array {
  const m = new Float64Array(n * n);
  if (!Array.isArray(raw)) throw invalidArgument(path, `${label}: Covariances must be a ${n} x ${n} matrix`);
  if (raw.length === n * n && raw.every((v) => !Array.isArray(v))) {
    // Flat row-major form.
    raw.forEach((v, i) => {
      const x = num(v);
      if (x === undefined) throw invalidArgument(`${path}[${i}]`, `${label}: not a finite number: ${JSON.stringify(v)}`);
      m[i] = x;
    });
  } else {
    if (raw.length !== n) throw invalidArgument(path, `${label}: Covariances has ${raw.length} row(s), expected ${n}`);
    raw.forEach((row, i) => {
      if (!Array.isArray(row) || row.length !== n) {
        throw invalidArgument(`${path}[${i}]`, `${label}: covariance row ${i} must hold ${n} numbers`);
      }
      row.forEach((v, j) => {
        const x = num(v);
        if (x === undefined) throw invalidArgument(`${path}[${i}][${j}]`, `${label}: not a finite number: ${JSON.stringify(v)}`);
        m[i * n + j] = x;
      });
    });
  }
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < i; j++) {
      const a = m[i * n + j]!;
      const b = m[j * n + i]!;
      if (Math.abs(a - b) > 1e-6 * Math.max(1, Math.abs(a), Math.abs(b))) {
        throw invalidArgument(`${path}[${i}][${j}]`, `${label}: the covariance matrix is not symmetric (${a} vs ${b} at [${j}][${i}])`);
      }
    }
  }
  return m;
}

/**
 * Cholesky factor of the symmetric n x n matrix `a` (row-major): lower-triangular L with
 * a = L L', or the index of the first non-positive pivot. Pivots at or below `1e-12 x` the largest
 * diagonal entry count as zero (singular to working precision).
 */
export function cholesky(a: Float64Array, n: number): Float64Array | number {
  const l = new Float64Array(n * n);
  let maxDiag = 0;
  for (let i = 0; i < n; i++) maxDiag = Math.max(maxDiag, Math.abs(a[i * n + i]!));
  const tiny = 1e-12 * maxDiag;
  for (let j = 0; j < n; j++) {
    let d = a[j * n + j]!;
    for (let k = 0; k < j; k++) d -= l[j * n + k]! * l[j * n + k]!;
    if (!(d > tiny)) return j;
    const ljj = Math.sqrt(d);
    l[j * n + j] = ljj;
    for (let i = j + 1; i < n; i++) {
      let s = a[i * n + j]!;
      for (let k = 0; k < j; k++) s -= l[i * n + k]! * l[j * n + k]!;
      l[i * n + j] = s / ljj;
    }
  }
  return l;
}

/** Inverse of a lower-triangular n x n matrix (row-major), itself lower triangular. */
export function invertLower(l: Float64Array, n: number): Float64Array {
  const m = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    m[j * n + j] = 1 / l[j * n + j]!;
    for (let i = j + 1; i < n; i++) {
      let s = 0;
      for (let k = j; k < i; k++) s += l[i * n + k]! * m[k * n + j]!;
      m[i * n + j] = -s / l[i * n + i]!;
    }
  }
  return m;
}

/** Plain-data maximum-likelihood model (structured-cloneable). */
export interface MLModel {
  /** Bands (n) and classes (c). */
  readonly bands: number;
  readonly classes: number;
  /** Class values in definition order. */
  readonly values: Float64Array;
  /** c x n means. */
  readonly means: Float64Array;
  /** c blocks of n x n: M = L^-1 (lower triangular) of each covariance. */
  readonly whiten: Float64Array;
  /** c constants -0.5 ln|S_k| (equal priors drop out). */
  readonly constants: Float64Array;
}

export interface MLClassInput {
  readonly value: number;
  readonly name: string;
  readonly means: readonly number[];
  readonly covariance: Float64Array;
  /** JSON path of the class's covariance, for the singular-matrix error. */
  readonly covariancePath: string;
}

/** Factor every covariance once; refuse singular / indefinite ones naming the class. */
export function buildModel(classes: readonly MLClassInput[], bands: number): MLModel {
  const n = bands;
  const c = classes.length;
  const values = new Float64Array(c);
  const means = new Float64Array(c * n);
  const whiten = new Float64Array(c * n * n);
  const constants = new Float64Array(c);
  classes.forEach((k, ci) => {
    values[ci] = k.value;
    means.set(k.means, ci * n);
    const l = cholesky(k.covariance, n);
    if (typeof l === 'number') {
      throw invalidArgument(
        k.covariancePath,
        `class ${k.value} ("${k.name}"): the covariance matrix is singular or not positive definite ` +
          `(Cholesky pivot ${l} is not positive); the class's training pixels do not vary in every band independently`,
      );
    }
    let logDet = 0;
    for (let i = 0; i < n; i++) logDet += 2 * Math.log(l[i * n + i]!);
    constants[ci] = -0.5 * logDet;
    whiten.set(invertLower(l, n), ci * n * n);
  });
  return { bands: n, classes: c, values, means, whiten, constants };
}

/**
 * Index of the winning class for pixel vector `x` (length n); `d` is a caller-owned scratch
 * buffer of length n. Ties go to the lowest index (strict comparison).
 */
export function mlArgmax(m: MLModel, x: Float64Array, d: Float64Array): number {
  const n = m.bands;
  const nn = n * n;
  const { means, whiten, constants } = m;
  let best = 0;
  let bestG = -Infinity;
  for (let k = 0; k < m.classes; k++) {
    const mo = k * n;
    for (let i = 0; i < n; i++) d[i] = x[i]! - means[mo + i]!;
    const wo = k * nn;
    let q = 0;
    for (let i = 0; i < n; i++) {
      const row = wo + i * n;
      let y = 0;
      for (let j = 0; j <= i; j++) y += whiten[row + j]! * d[j]!;
      q += y * y;
    }
    const g = constants[k]! - 0.5 * q;
    if (g > bestG) {
      bestG = g;
      best = k;
    }
  }
  return best;
}

/** Natural output type for class values: U8, U16 or S32. */
export function classPixelType(values: readonly number[], path: string): 'U8' | 'U16' | 'S32' {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (lo >= 0 && hi <= 255) return 'U8';
  if (lo >= 0 && hi <= 65535) return 'U16';
  if (lo >= -2147483648 && hi <= 2147483647) return 'S32';
  throw invalidArgument(path, `class values ${lo}..${hi} do not fit a 32-bit integer raster`);
}

/** Maximum-likelihood class of every valid pixel of `src` into band 0 of `out` (NoData stays NoData). */
export function classifyPixels(model: MLModel, src: PixelBlock, out: PixelBlock): void {
  const n = model.bands;
  const x = new Float64Array(n);
  const d = new Float64Array(n);
  const bands = src.bands;
  const mask = src.mask;
  const dst = out.bands[0]!;
  const om = out.mask;
  const values = model.values;
  for (let i = 0; i < om.length; i++) {
    if (mask[i] === 0) {
      om[i] = 0;
      continue;
    }
    for (let b = 0; b < n; b++) x[b] = bands[b]![i]!;
    dst[i] = values[mlArgmax(model, x, d)]!;
  }
}

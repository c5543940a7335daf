/**
 * SpectralUnmixing — linear spectral unmixing: per pixel, the end-member fractions f (m) that best
 * explain the pixel's spectrum x (n bands) as E f, E = n x m end-member spectra.
 *
 * Spec: raster-functions.md §2 "SpectralUnmixing"; spec 000 section 8 (arguments). End members come
 * from `SpectralProfileDefinition`, "same structure as ClassifierDefinition": each class's `Means`
 * is one end-member spectrum (`definition.ts` parses it, paths into the object; Covariances are
 * ignored). Also accepted [ours]: the plain `{ "name": [spectrum], ... }` object of the vendor's
 * reference Python raster function (Esri/raster-functions LinearSpectralUnmixing.py). Either may
 * arrive as a JSON string. `SpectralProfileFile` / `TrainingFeature` are server paths this engine
 * cannot read: given without a definition they are UNSUPPORTED_INPUT naming the argument.
 *
 * Math (float64), minimising |A f - t|^2:
 * - plain: A = E, t = x: ordinary least squares f = (E'E)^-1 E' x, with the pseudo-inverse
 *   computed once in `plan` (Cholesky of E'E), so a pixel costs one m x n matrix-vector product.
 * - SumToOne: the standard augmented-row method [spec]: A = [E; d 1'], t = [x; d], with weight
 *   d = 1000 x max|E_ij| (ASSUMPTION: the spec's "weight 1e3" made relative to the data's scale so
 *   the constraint binds equally for DN and reflectance data; the fractions then sum to 1 within
 *   about 1e-6 relative). Still a fixed linear map per pixel when NonNegative is false.
 * - NonNegative: non-negative least squares by Lawson-Hanson's active-set algorithm (on the normal
 *   equations: G = A'A precomputed, b = A't per pixel; passive-set subproblems solved by Cholesky
 *   of G_PP), every buffer preallocated per tile (no per-pixel allocation). Both flags: NNLS on
 *   the augmented system (fully constrained least squares).
 * End-member spectra that are linearly dependent (including more end members than bands, or than
 * bands + 1 with SumToOne) make E'E singular and are refused at plan time.
 * Output: m bands F32, one fraction per end member in definition order, band names = class names
 * [V "one band per class"]; no residual band [spec, ours]. NoData where the input is NoData (any
 * band); a non-finite result (none expected) would be NoData too. No advertised statistics.
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { cholesky, jsonObject, parseDefinition } from './definition.js';

const args = {
  SpectralProfileType: {
    kind: 'enum',
    values: [0, 1],
    names: { ProfileFile: 0, SpectralProfileFile: 0, TrainingFeature: 1 },
    default: 0,
    doc: '0 spectral profile file / definition, 1 training feature (server paths are not readable here; give SpectralProfileDefinition).',
  },
  SpectralProfileFile: { kind: 'string', doc: 'Path of a definition file on the server (not readable by this engine).' },
  TrainingFeature: { kind: 'string', doc: 'Path of training features on the server (not readable by this engine).' },
  SpectralProfileDefinition: {
    kind: 'json',
    doc: 'End members: a ClassifierDefinition-shaped object whose classes\' Means are the spectra, or { "name": [spectrum], ... }.',
  },
  NonNegative: { kind: 'boolean', default: false, doc: 'Constrain fractions to be >= 0 (non-negative least squares).' },
  SumToOne: { kind: 'boolean', default: false, doc: 'Constrain fractions to sum to 1 (augmented row of weight 1000 x max|E|).' },
  Raster: { kind: 'raster', default: '$$', doc: 'Multiband raster, one band per end-member spectrum value; defaults to $$.' },
} as const satisfies ArgSchema;

export interface UnmixParams {
  readonly raster: number;
  readonly bands: number;
  readonly members: number;
  readonly nonNegative: boolean;
  /** Augmented-row weight d (0 without SumToOne). */
  readonly weight: number;
  /** n x m end-member matrix, row-major. */
  readonly e: Float64Array;
  /** m x m Gram matrix A'A (augmented when SumToOne). */
  readonly gram: Float64Array;
  /** m x n: f = pinv x + offset (plain and SumToOne-only). */
  readonly pinv: Float64Array;
  readonly offset: Float64Array;
}

const at = argPaths(args);

/** Relative weight of the sum-to-one row: d = SUM_TO_ONE_WEIGHT x max|E_ij|. */
const SUM_TO_ONE_WEIGHT = 1000;

interface Member {
  readonly name: string;
  readonly spectrum: readonly number[];
}

function members(raw: unknown, bands: number): { list: Member[]; warnings: readonly string[] } {
  const path = at('SpectralProfileDefinition');
  const obj = jsonObject(raw, path, 'SpectralProfileDefinition');
  if (Object.keys(obj).some((k) => k.toLowerCase() === 'definitions')) {
    const def = parseDefinition(obj, path, {
      covariances: false,
      rasterBands: bands,
      rasterPath: at('Raster'),
      what: 'SpectralProfileDefinition',
    });
    return { list: def.classes.map((c) => ({ name: c.name, spectrum: c.means })), warnings: def.warnings };
  }
  const entries = Object.entries(obj);
  if (entries.length === 0) throw invalidArgument(path, 'SpectralProfileDefinition has no end members');
  const list = entries.map(([name, v]) => {
    if (!Array.isArray(v)) {
      throw invalidArgument(
        `${path}.${name}`,
        'expected a ClassifierDefinition (with Definitions) or { "name": [spectrum], ... }; this member is not an array',
      );
    }
    if (v.length !== bands)
      throw invalidArgument(`${path}.${name}`, `end member "${name}" has ${v.length} value(s); the raster has ${bands} band(s)`);
    const spectrum = v.map((x, i) => {
      const n = typeof x === 'number' ? x : typeof x === 'string' && x.trim() !== '' ? Number(x) : NaN;
      if (!Number.isFinite(n)) throw invalidArgument(`${path}.${name}[${i}]`, `not a finite number: ${JSON.stringify(x)}`);
      return n;
    });
    return { name, spectrum };
  });
  return { list, warnings: [] };
}

export const spectralUnmixing = defineFunction<typeof args, UnmixParams>({
  name: 'SpectralUnmixing',
  aliases: ['LinearSpectralUnmixing'],
  summary: 'Linear spectral unmixing: end-member fractions by least squares, optionally non-negative and/or summing to one.',
  variableName: 'Raster',
  family: 'classify',
  verification: 'reference: numpy.linalg.lstsq and scipy.optimize.nnls on L7 (golden); hand: 2-band mixtures',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `SpectralUnmixing needs a real-valued raster, got ${src.pixelType}`);
    const warnings: string[] = [];
    if (a.SpectralProfileDefinition === undefined) {
      if (a.SpectralProfileFile !== undefined) {
        throw unsupportedInput(
          at('SpectralProfileFile'),
          'server-side profile files cannot be read by this engine; give the end members in SpectralProfileDefinition',
        );
      }
      if (a.TrainingFeature !== undefined) {
        throw unsupportedInput(
          at('TrainingFeature'),
          'training features cannot be read by this engine; give the end members in SpectralProfileDefinition',
        );
      }
      throw invalidArgument(at('SpectralProfileDefinition'), 'SpectralUnmixing needs SpectralProfileDefinition (the end-member spectra)');
    }
    if (a.SpectralProfileFile !== undefined || a.TrainingFeature !== undefined) {
      warnings.push('SpectralProfileDefinition given: SpectralProfileFile and TrainingFeature are ignored');
    }
    const { list, warnings: w } = members(a.SpectralProfileDefinition, src.bandCount);
    warnings.push(...w);
    const n = src.bandCount;
    const m = list.length;
    const e = new Float64Array(n * m);
    let emax = 0;
    list.forEach((mem, j) =>
      mem.spectrum.forEach((v, i) => {
        e[i * m + j] = v;
        emax = Math.max(emax, Math.abs(v));
      }),
    );
    const weight = a.SumToOne ? SUM_TO_ONE_WEIGHT * emax : 0;
    // Gram matrix of the (augmented) system.
    const gram = new Float64Array(m * m);
    for (let p = 0; p < m; p++) {
      for (let q = 0; q < m; q++) {
        let s = weight * weight;
        for (let i = 0; i < n; i++) s += e[i * m + p]! * e[i * m + q]!;
        gram[p * m + q] = s;
      }
    }
    const l = cholesky(gram, m);
    if (typeof l === 'number') {
      const rows = a.SumToOne ? n + 1 : n;
      throw invalidArgument(
        at('SpectralProfileDefinition'),
        m > rows
          ? `${m} end members cannot be unmixed from ${n} band(s)${a.SumToOne ? ' plus the sum-to-one row' : ''}: at most ${rows}`
          : `the end-member spectra are linearly dependent (end member ${l + 1}, "${list[l]!.name}", is a combination of the others)`,
      );
    }
    // pinv = G^-1 A' restricted to the band rows; offset = G^-1 (d 1) d.
    const pinv = new Float64Array(m * n);
    const offset = new Float64Array(m);
    const col = new Float64Array(m);
    for (let i = 0; i <= n; i++) {
      if (i === n && !a.SumToOne) break;
      for (let p = 0; p < m; p++) col[p] = i < n ? e[i * m + p]! : weight * weight;
      choleskySolve(l, m, col);
      for (let p = 0; p < m; p++) {
        if (i < n) pinv[p * n + i] = col[p]!;
        else offset[p] = col[p]!;
      }
    }
    const { statistics: _s, histograms: _h, colormap: _c, constant: _k, noData: _nd, ...rest } = src;
    return {
      info: { ...rest, bandCount: m, pixelType: floatOutputType(to, 'F32'), noData: Number.NaN, bandNames: list.map((x) => x.name) },
      halo: 0,
      params: { raster: a.Raster, bands: n, members: m, nonNegative: a.NonNegative, weight, e, gram, pinv, offset },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.raster]!;
    const { bands: n, members: m } = p;
    const mask = src.mask;
    const om = out.mask;
    const x = new Float64Array(n);
    const f = new Float64Array(m);
    const ws = p.nonNegative ? nnlsWorkspace(m) : undefined;
    for (let i = 0; i < om.length; i++) {
      if (mask[i] === 0) {
        om[i] = 0;
        continue;
      }
      for (let b = 0; b < n; b++) x[b] = src.bands[b]![i]!;
      if (ws === undefined) {
        for (let q = 0; q < m; q++) {
          let s = p.offset[q]!;
          const row = q * n;
          for (let b = 0; b < n; b++) s += p.pinv[row + b]! * x[b]!;
          f[q] = s;
        }
      } else {
        // b = A't = E'x (+ d^2 per member with SumToOne).
        const rhs = ws.b;
        const d2 = p.weight * p.weight;
        for (let q = 0; q < m; q++) {
          let s = d2;
          for (let b = 0; b < n; b++) s += p.e[b * m + q]! * x[b]!;
          rhs[q] = s;
        }
        nnls(p.gram, m, ws, f);
      }
      let ok = true;
      for (let q = 0; q < m; q++) {
        const v = f[q]!;
        if (!Number.isFinite(v)) ok = false;
        out.bands[q]![i] = v;
      }
      if (!ok) om[i] = 0;
    }
  },
});

/** Solve L L' z = v in place (L lower triangular, row-major m x m). */
function choleskySolve(l: Float64Array, m: number, v: Float64Array): void {
  for (let i = 0; i < m; i++) {
    let s = v[i]!;
    for (let k = 0; k < i; k++) s -= l[i * m + k]! * v[k]!;
    v[i] = s / l[i * m + i]!;
  }
  for (let i = m - 1; i >= 0; i--) {
    let s = v[i]!;
    for (let k = i + 1; k < m; k++) s -= l[k * m + i]! * v[k]!;
    v[i] = s / l[i * m + i]!;
  }
}

/** Preallocated buffers for `nnls` (one per tile). */
export interface NnlsWorkspace {
  /** Right-hand side A't (filled by the caller). */
  readonly b: Float64Array;
  readonly w: Float64Array;
  readonly z: Float64Array;
  readonly passive: Uint8Array;
  readonly idx: Int32Array;
  /** |P| x |P| submatrix and its Cholesky factor. */
  readonly sub: Float64Array;
  readonly fac: Float64Array;
  readonly rhs: Float64Array;
}

export function nnlsWorkspace(m: number): NnlsWorkspace {
  return {
    b: new Float64Array(m),
    w: new Float64Array(m),
    z: new Float64Array(m),
    passive: new Uint8Array(m),
    idx: new Int32Array(m),
    sub: new Float64Array(m * m),
    fac: new Float64Array(m * m),
    rhs: new Float64Array(m),
  };
}

const EPS = 2.220446049250313e-16;

/**
 * Lawson-Hanson NNLS on the normal equations: minimise |A f - t|^2 subject to f >= 0, given
 * G = A'A (m x m, positive definite) and ws.b = A't. Writes f. No allocation.
 */
export function nnls(g: Float64Array, m: number, ws: NnlsWorkspace, f: Float64Array): void {
  const { b, w, z, passive } = ws;
  let gmax = 0;
  for (let i = 0; i < m * m; i++) gmax = Math.max(gmax, Math.abs(g[i]!));
  let bmax = 0;
  for (let j = 0; j < m; j++) bmax = Math.max(bmax, Math.abs(b[j]!));
  f.fill(0);
  passive.fill(0);
  let nPassive = 0;
  const maxOuter = 3 * m + 10;
  for (let outer = 0; outer < maxOuter; outer++) {
    // Dual w = b - G f and the tolerance on it (rounding level of A'(t - A f)).
    let fmax = 0;
    for (let j = 0; j < m; j++) fmax = Math.max(fmax, f[j]!);
    const tol = 1e3 * EPS * (bmax + gmax * fmax) * m;
    let jmax = -1;
    let wmax = tol;
    for (let j = 0; j < m; j++) {
      let s = b[j]!;
      for (let k = 0; k < m; k++) s -= g[j * m + k]! * f[k]!;
      w[j] = s;
      if (passive[j] === 0 && s > wmax) {
        wmax = s;
        jmax = j;
      }
    }
    if (jmax < 0 || nPassive === m) return;
    passive[jmax] = 1;
    nPassive++;
    // Inner loop: solve on the passive set; step back while a passive variable would go <= 0.
    for (let inner = 0; inner <= m; inner++) {
      solvePassive(g, m, ws);
      let feasible = true;
      for (let j = 0; j < m; j++) if (passive[j] === 1 && z[j]! <= 0) feasible = false;
      if (feasible) {
        for (let j = 0; j < m; j++) f[j] = passive[j] === 1 ? z[j]! : 0;
        break;
      }
      let alpha = Infinity;
      let jblock = -1;
      for (let j = 0; j < m; j++) {
        if (passive[j] === 1 && z[j]! <= 0) {
          const a = f[j]! / (f[j]! - z[j]!);
          if (a < alpha) {
            alpha = a;
            jblock = j;
          }
        }
      }
      for (let j = 0; j < m; j++) f[j] = passive[j] === 1 ? f[j]! + alpha * (z[j]! - f[j]!) : 0;
      f[jblock] = 0;
      for (let j = 0; j < m; j++) {
        if (passive[j] === 1 && f[j]! <= 0) {
          passive[j] = 0;
          f[j] = 0;
          nPassive--;
        }
      }
      if (nPassive === 0) break;
    }
  }
}

/** z_P = G_PP^-1 b_P (Cholesky), z = 0 off P. */
function solvePassive(g: Float64Array, m: number, ws: NnlsWorkspace): void {
  const { b, z, passive, idx, sub, fac, rhs } = ws;
  let k = 0;
  for (let j = 0; j < m; j++) if (passive[j] === 1) idx[k++] = j;
  for (let r = 0; r < k; r++) {
    rhs[r] = b[idx[r]!]!;
    for (let c = 0; c < k; c++) sub[r * k + c] = g[idx[r]! * m + idx[c]!]!;
  }
  // In-place Cholesky of sub (k x k) into fac; principal submatrices of a PD matrix are PD.
  for (let j = 0; j < k; j++) {
    let d = sub[j * k + j]!;
    for (let t = 0; t < j; t++) d -= fac[j * k + t]! * fac[j * k + t]!;
    const ljj = Math.sqrt(d > 0 ? d : EPS * sub[j * k + j]!);
    fac[j * k + j] = ljj;
    for (let i = j + 1; i < k; i++) {
      let s = sub[i * k + j]!;
      for (let t = 0; t < j; t++) s -= fac[i * k + t]! * fac[j * k + t]!;
      fac[i * k + j] = s / ljj;
    }
  }
  for (let i = 0; i < k; i++) {
    let s = rhs[i]!;
    for (let t = 0; t < i; t++) s -= fac[i * k + t]! * rhs[t]!;
    rhs[i] = s / fac[i * k + i]!;
  }
  for (let i = k - 1; i >= 0; i--) {
    let s = rhs[i]!;
    for (let t = i + 1; t < k; t++) s -= fac[t * k + i]! * rhs[t]!;
    rhs[i] = s / fac[i * k + i]!;
  }
  z.fill(0);
  for (let r = 0; r < k; r++) z[idx[r]!] = rhs[r]!;
}

/**
 * Per-pixel least squares for the change/trend family (TrendAnalysis, CCDC): design matrices of
 * the linear, harmonic and polynomial models, a precomputed solver for the common case where
 * every observation is valid (the design matrix is the same for every pixel, so
 * `(XᵀX)⁻¹Xᵀ` is factored once per plan), and a Cholesky solve of the normal equations in
 * preallocated buffers for pixels with missing observations.
 *
 * Conditioning: the linear and polynomial terms use u = (t − tc) / ts (tc the mean of the
 * observation times, ts half their range) instead of t, which can be ~1e4 days; coefficients are
 * turned back into powers of t by `toRawCoefficients`. Harmonic terms use t itself.
 */

export const Regression = { Linear: 0, Harmonic: 1, Polynomial: 2 } as const;
export type RegressionKind = 0 | 1 | 2;

export interface ModelSpec {
  readonly kind: RegressionKind;
  /** Harmonic: number of harmonics. */
  readonly frequency: number;
  /** Polynomial: order. */
  readonly order: number;
  /** Harmonic period in units of t. */
  readonly cycle: number;
}

/** Number of coefficients of a model. */
export const coefficientCount = (m: ModelSpec): number => (m.kind === 0 ? 2 : m.kind === 1 ? 2 + 2 * m.frequency : m.order + 1);

export interface Design {
  /** Row-major N x p design matrix in the scaled basis: [1, u, u², ...] or [1, u, cos, sin, ...]. */
  readonly x: Float64Array;
  readonly n: number;
  readonly p: number;
  readonly tc: number;
  readonly ts: number;
}

/** The centre and half range used to scale t. */
export function scaling(t: ArrayLike<number>): { tc: number; ts: number } {
  let lo = Infinity;
  let hi = -Infinity;
  let sum = 0;
  for (let i = 0; i < t.length; i++) {
    const v = t[i]!;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    sum += v;
  }
  const tc = t.length ? sum / t.length : 0;
  const ts = hi > lo ? (hi - lo) / 2 : 1;
  return { tc, ts };
}

/** Fill row `i` of a design for time t (scaled u = (t - tc) / ts). */
function designRow(m: ModelSpec, t: number, tc: number, ts: number, out: Float64Array, offset: number): void {
  const u = (t - tc) / ts;
  out[offset] = 1;
  if (m.kind === 2) {
    let v = 1;
    for (let k = 1; k <= m.order; k++) out[offset + k] = v *= u;
    return;
  }
  out[offset + 1] = u;
  if (m.kind === 1) {
    const w = (2 * Math.PI * t) / m.cycle;
    for (let i = 1; i <= m.frequency; i++) {
      out[offset + 2 * i] = Math.cos(i * w);
      out[offset + 2 * i + 1] = Math.sin(i * w);
    }
  }
}

export function design(m: ModelSpec, t: ArrayLike<number>, scale = scaling(t)): Design {
  const p = coefficientCount(m);
  const n = t.length;
  const x = new Float64Array(n * p);
  for (let i = 0; i < n; i++) designRow(m, t[i]!, scale.tc, scale.ts, x, i * p);
  return { x, n, p, tc: scale.tc, ts: scale.ts };
}

/** Cholesky factor of the p x p SPD matrix `a` in place (lower triangle); false when singular. */
export function cholesky(a: Float64Array, p: number): boolean {
  let scale = 0;
  for (let i = 0; i < p; i++) scale = Math.max(scale, Math.abs(a[i * p + i]!));
  const eps = 1e-12 * (scale || 1);
  for (let j = 0; j < p; j++) {
    let d = a[j * p + j]!;
    for (let k = 0; k < j; k++) d -= a[j * p + k]! * a[j * p + k]!;
    if (!(d > eps)) return false;
    const l = Math.sqrt(d);
    a[j * p + j] = l;
    for (let i = j + 1; i < p; i++) {
      let s = a[i * p + j]!;
      for (let k = 0; k < j; k++) s -= a[i * p + k]! * a[j * p + k]!;
      a[i * p + j] = s / l;
    }
  }
  return true;
}

/** Solve L Lᵀ z = b in place (b becomes z). */
export function choleskySolve(l: Float64Array, p: number, b: Float64Array): void {
  for (let i = 0; i < p; i++) {
    let s = b[i]!;
    for (let k = 0; k < i; k++) s -= l[i * p + k]! * b[k]!;
    b[i] = s / l[i * p + i]!;
  }
  for (let i = p - 1; i >= 0; i--) {
    let s = b[i]!;
    for (let k = i + 1; k < p; k++) s -= l[k * p + i]! * b[k]!;
    b[i] = s / l[i * p + i]!;
  }
}

/** (XᵀX)⁻¹Xᵀ as a row-major p x n matrix, or undefined when XᵀX is singular. */
export function pseudoInverse(d: Design): Float64Array | undefined {
  const { x, n, p } = d;
  const g = new Float64Array(p * p);
  for (let i = 0; i < n; i++) {
    for (let a = 0; a < p; a++) {
      const xa = x[i * p + a]!;
      for (let b = 0; b <= a; b++) g[a * p + b]! += xa * x[i * p + b]!;
    }
  }
  if (!cholesky(g, p)) return undefined;
  const out = new Float64Array(p * n);
  const col = new Float64Array(p);
  for (let i = 0; i < n; i++) {
    for (let a = 0; a < p; a++) col[a] = x[i * p + a]!;
    choleskySolve(g, p, col);
    for (let a = 0; a < p; a++) out[a * n + i] = col[a]!;
  }
  return out;
}

/** Preallocated buffers for `solveSubset`. */
export class Workspace {
  readonly g: Float64Array;
  readonly r: Float64Array;
  readonly e: Float64Array;
  constructor(readonly p: number) {
    this.g = new Float64Array(p * p);
    this.r = new Float64Array(p);
    this.e = new Float64Array(p);
  }
}

/**
 * Least squares on the rows `i` of a design (using its first `p` columns) where `use[i]` is 1,
 * observations `y[i]`; coefficients into `coef` (scaled basis). Returns the number of rows used,
 * or -1 when the system is singular (too few or degenerate rows). `w.g` keeps the Cholesky factor.
 */
export function solveSubset(
  d: Design,
  p: number,
  y: ArrayLike<number>,
  use: ArrayLike<number>,
  from: number,
  to: number,
  w: Workspace,
  coef: Float64Array,
): number {
  const { x } = d;
  const P = d.p;
  const g = w.g;
  g.fill(0, 0, p * p);
  coef.fill(0, 0, p);
  let m = 0;
  for (let i = from; i < to; i++) {
    if (use[i] === 0) continue;
    m++;
    const yi = y[i]!;
    const row = i * P;
    for (let a = 0; a < p; a++) {
      const xa = x[row + a]!;
      coef[a]! += xa * yi;
      for (let b = 0; b <= a; b++) g[a * p + b]! += xa * x[row + b]!;
    }
  }
  if (m < p || !cholesky(g, p)) return -1;
  choleskySolve(g, p, coef);
  return m;
}

/** (XᵀX)⁻¹ diagonal element `k` from the Cholesky factor left in `w.g` by `solveSubset`. */
export function inverseDiagonal(w: Workspace, p: number, k: number): number {
  const e = w.e;
  e.fill(0, 0, p);
  e[k] = 1;
  choleskySolve(w.g, p, e);
  return e[k];
}

/** Model value at row i of the design for scaled coefficients. */
export function predictRow(d: Design, p: number, i: number, coef: ArrayLike<number>): number {
  let s = 0;
  const row = i * d.p;
  for (let a = 0; a < p; a++) s += d.x[row + a]! * coef[a]!;
  return s;
}

const binomial = (n: number, k: number): number => {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
};

/**
 * Scaled-basis coefficients to coefficients of t: linear/harmonic -> [a0, a1, harmonics...] with
 * y = a0 + a1·t + ...; polynomial -> [a0, a1, ..., ak] (ascending powers of t).
 */
export function toRawCoefficients(m: ModelSpec, c: ArrayLike<number>, tc: number, ts: number, out: Float64Array): void {
  const p = coefficientCount(m);
  if (m.kind !== 2) {
    out[0] = c[0]! - (c[1]! * tc) / ts;
    out[1] = c[1]! / ts;
    for (let k = 2; k < p; k++) out[k] = c[k]!;
    return;
  }
  for (let j = 0; j < p; j++) {
    let s = 0;
    for (let k = j; k < p; k++) s += (c[k]! * binomial(k, j) * Math.pow(-tc, k - j)) / Math.pow(ts, k);
    out[j] = s;
  }
}

// ---- Student t distribution (slope p-values)

function logGamma(x: number): number {
  const g = [76.18009172947146, -86.50532032941677, 24.01409824083091, -1.231739572450155, 0.1208650973866179e-2, -0.5395239384953e-5];
  let y = x;
  const tmp = x + 5.5 - (x + 0.5) * Math.log(x + 5.5);
  let ser = 1.000000000190015;
  for (const c of g) ser += c / ++y;
  return -tmp + Math.log((2.5066282746310005 * ser) / x);
}

function betaContinuedFraction(a: number, b: number, x: number): number {
  const FPMIN = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < FPMIN) d = FPMIN;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = 1 + aa / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = 1 + aa / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-15) break;
  }
  return h;
}

/** Regularised incomplete beta I_x(a, b). */
function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const bt = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (bt * betaContinuedFraction(a, b, x)) / a : 1 - (bt * betaContinuedFraction(b, a, 1 - x)) / b;
}

/** Two-sided p-value of a t statistic with `df` degrees of freedom. */
export const twoSidedP = (t: number, df: number): number => incompleteBeta(df / (df + t * t), df / 2, 0.5);

/** Lower regularised incomplete gamma P(a, x). */
function gammaP(a: number, x: number): number {
  if (x <= 0) return 0;
  const gln = logGamma(a);
  if (x < a + 1) {
    let ap = a;
    let sum = 1 / a;
    let del = sum;
    for (let n = 0; n < 500; n++) {
      del *= x / ++ap;
      sum += del;
      if (Math.abs(del) < Math.abs(sum) * 1e-16) break;
    }
    return sum * Math.exp(-x + a * Math.log(x) - gln);
  }
  return 1 - Math.exp(-x + a * Math.log(x) - gln) * gammaContinuedFraction(a, x);
}

/**
 * The continued fraction of the upper regularised incomplete gamma function, modified Lentz:
 * Q(a, x) = e^{-x} x^a / Γ(a) · 1 / (x + 1 - a - 1·(1 - a) / (x + 3 - a - ...)); returns the
 * fraction (without the e^{-x} x^a / Γ(a) factor). For x >= a + 1, where it converges fast.
 */
export function gammaContinuedFraction(a: number, x: number): number {
  const FPMIN = 1e-300;
  let b = x + 1 - a;
  let c = 1 / FPMIN;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i <= 500; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = b + an / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-16) break;
  }
  return h;
}

/** The chi-square quantile: x with P(χ²_df ≤ x) = prob (bisection on the CDF). */
export function chiSquareQuantile(prob: number, df: number): number {
  let lo = 0;
  let hi = Math.max(1, df);
  while (gammaP(df / 2, hi / 2) < prob) hi *= 2;
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (gammaP(df / 2, mid / 2) < prob) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

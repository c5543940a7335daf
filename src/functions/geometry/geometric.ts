/**
 * Geometric — georeference (or re-georeference) a raster with polynomial geodata transforms.
 *
 * Spec: raster-functions.md §2 "Geometric"; spec section 8 (GeodataTransforms,
 * AppendGeodataXform, ZFactor, ZOffset, ConstantZ, CorrectGeoid, Raster, MatchVariable,
 * UnionDimension; later Tolerance and DEM).
 * Transforms: `GeodataTransforms` is an array of (or one) `{geodataTransform: "Polynomial",
 * geodataTransformArguments: {sourcePoints: [{x, y}], targetPoints: [{x, y}], polynomialOrder,
 * spatialReference: {wkid}}}`; several are chained in order. Each is fitted by least squares, as
 * GDAL's GCP polynomial transformer does: x' = sum a_ij x^i y^j, y' = sum b_ij x^i y^j over
 * i + j <= order (order 1, 2, 3: 3, 6, 10 terms per axis, needing at least as many points), once
 * forwards (source -> target, for the output extent) and once backwards (target -> source, for
 * sampling), with coordinates centred and scaled before fitting (normal equations solved with
 * partial pivoting; collinear or too few points are an INVALID_ARGUMENT error).
 * Source coordinates [ours, vendor unsure]: with `AppendGeodataXform` false (default) the first
 * transform REPLACES the raster's georeferencing and its sourcePoints are pixel coordinates of the
 * input (x = column, y = row, (0, 0) = the top-left corner of the top-left pixel: GDAL's GCP
 * pixel/line convention); with true it is applied after the raster's georeferencing and its
 * sourcePoints are map coordinates in the raster's spatial reference.
 * Output: spatial reference = the last transform's `spatialReference` (else the input's); extent =
 * bounding box of the input's outline (21 points per edge) mapped forwards; square cells whose size
 * is the mapped distance between the input's top-left and bottom-right corners over the input's
 * diagonal in pixels (GDAL's suggested-output rule); size rounded to whole cells from the top-left.
 * Input bands, pixel type and NoData; statistics kept (not for cubic), histograms dropped. The
 * rule's outputPixelType replaces the type: values are resampled into it (see retypedInfo).
 * Sampling: each output pixel centre goes backwards through the chain to a source position
 * (exactly, per pixel: polynomials are cheap, so no approximation and `Tolerance` is always met),
 * then `ResamplingType` [ours: the spec's "bilinear by default, or the service's resampling"]:
 * 0 nearest, 1 bilinear (default), 2 cubic, with gdalwarp's conventions (src/core/resample.ts);
 * outside the input or on input NoData: NoData.
 * Z arguments: ZFactor, ZOffset, ConstantZ, CorrectGeoid and DEM only feed the height term of
 * sensor models (RPC, frame cameras); a polynomial transform of a 2-D raster has none, so they are
 * accepted and ignored with a warning when set (spec: "accept and ignore"). MatchVariable /
 * UnionDimension: multidimensional only; accepted, no effect. Other transform types (RPC,
 * Projective, ...) are UNSUPPORTED_INPUT.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo, SpatialReference } from '../../core/pixel-block.js';
import { isComplex, type PixelType } from '../../core/pixel-type.js';
import type { Rect } from '../../core/rect.js';
import { interpolate, METHOD_MARGIN, sourceWindow, storeValue, type InterpolationMethod } from '../../core/resample.js';
import { boundingSourceRect } from '../../graph/align.js';
import { argPaths } from '../../graph/args.js';
import { realTypeOf, retypedInfo } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
  GeodataTransforms: {
    kind: 'json',
    aliases: ['GeodataTransform'],
    doc: 'Array of (or one) {geodataTransform: "Polynomial", geodataTransformArguments: {sourcePoints, targetPoints, polynomialOrder, spatialReference}}.',
  },
  AppendGeodataXform: {
    kind: 'boolean',
    default: false,
    doc: 'true: apply after the raster’s georeferencing (sourcePoints in map units); false: replace it (sourcePoints in pixels).',
  },
  ZFactor: { kind: 'number', doc: 'Sensor models only (height scale); ignored for polynomial transforms.' },
  ZOffset: { kind: 'number', doc: 'Sensor models only (height offset); ignored for polynomial transforms.' },
  ConstantZ: { kind: 'number', doc: 'Sensor models only (constant height); ignored for polynomial transforms.' },
  CorrectGeoid: { kind: 'boolean', doc: 'Sensor models only (EGM96 geoid correction of the heights); ignored for polynomial transforms.' },
  Tolerance: { kind: 'number', min: 0, doc: 'Maximum transform error in pixels; always met (transforms are exact per pixel).' },
  DEM: { kind: 'raster', optional: true, doc: 'Sensor models only (terrain heights); ignored for polynomial transforms.' },
  ResamplingType: {
    kind: 'enum',
    values: [0, 1, 2],
    names: { NearestNeighbor: 0, Nearest: 0, Bilinear: 1, Cubic: 2 },
    default: 1,
    doc: '[ours] 0 NearestNeighbor, 1 Bilinear (default), 2 Cubic.',
  },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name (no effect here).' },
  UnionDimension: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: union of dimension values (no effect here).' },
} as const satisfies ArgSchema;

/** A fitted polynomial: normalise (x - mx) / s, y likewise, then sum c_k * term_k, per axis. */
export interface Polynomial {
  readonly order: number;
  readonly mx: number;
  readonly my: number;
  readonly s: number;
  readonly cx: readonly number[];
  readonly cy: readonly number[];
}

interface Step {
  readonly forward: Polynomial;
  readonly inverse: Polynomial;
}

interface GeometricParams {
  /** Index of the Raster input (a DEM may be another input). */
  readonly input: number;
  readonly steps: readonly Step[];
  /** Append mode: source map coordinates -> pixels via this grid; otherwise the chain ends in pixels. */
  readonly sourceGrid?: { readonly xmin: number; readonly ymax: number; readonly cx: number; readonly cy: number };
  /** Output grid. */
  readonly xmin: number;
  readonly ymax: number;
  readonly cell: number;
  readonly method: InterpolationMethod;
  readonly srcWidth: number;
  readonly srcHeight: number;
  readonly pixelType: PixelType;
}

const at = argPaths(args);
const TERMS = [0, 3, 6, 10];

/** Evaluate a polynomial at (x, y) into out[at], out[at + 1]. */
export function evalPolynomial(p: Polynomial, x: number, y: number, out: Float64Array, at: number): void {
  const u = (x - p.mx) / p.s;
  const v = (y - p.my) / p.s;
  const { cx, cy } = p;
  let rx = cx[0]! + cx[1]! * u + cx[2]! * v;
  let ry = cy[0]! + cy[1]! * u + cy[2]! * v;
  if (p.order >= 2) {
    const uu = u * u;
    const uv = u * v;
    const vv = v * v;
    rx += cx[3]! * uu + cx[4]! * uv + cx[5]! * vv;
    ry += cy[3]! * uu + cy[4]! * uv + cy[5]! * vv;
    if (p.order >= 3) {
      rx += cx[6]! * uu * u + cx[7]! * uu * v + cx[8]! * u * vv + cx[9]! * vv * v;
      ry += cy[6]! * uu * u + cy[7]! * uu * v + cy[8]! * u * vv + cy[9]! * vv * v;
    }
  }
  out[at] = rx;
  out[at + 1] = ry;
}

/** Terms 1, u, v, u², uv, v², u³, u²v, uv², v³ (the first `n`). */
function terms(u: number, v: number, n: number): number[] {
  return [1, u, v, u * u, u * v, v * v, u * u * u, u * u * v, u * v * v, v * v * v].slice(0, n);
}

/** Least-squares polynomial of `order` from (xs, ys) to (xt, yt); undefined when singular. */
export function fitPolynomial(
  src: readonly (readonly [number, number])[],
  dst: readonly (readonly [number, number])[],
  order: number,
): Polynomial | undefined {
  const n = TERMS[order]!;
  const mx = src.reduce((a, p) => a + p[0], 0) / src.length;
  const my = src.reduce((a, p) => a + p[1], 0) / src.length;
  const s = Math.max(...src.map((p) => Math.max(Math.abs(p[0] - mx), Math.abs(p[1] - my)))) || 1;
  // Normal equations A^T A c = A^T b for both axes.
  const ata = Array.from({ length: n }, () => new Float64Array(n));
  const atx = new Float64Array(n);
  const aty = new Float64Array(n);
  src.forEach((p, k) => {
    const t = terms((p[0] - mx) / s, (p[1] - my) / s, n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) ata[i]![j]! += t[i]! * t[j]!;
      atx[i]! += t[i]! * dst[k]![0];
      aty[i]! += t[i]! * dst[k]![1];
    }
  });
  const cx = solve(
    ata.map((r) => Float64Array.from(r)),
    Float64Array.from(atx),
  );
  const cy = solve(
    ata.map((r) => Float64Array.from(r)),
    Float64Array.from(aty),
  );
  if (!cx || !cy) return undefined;
  return { order, mx, my, s, cx: [...cx], cy: [...cy] };
}

/** Gaussian elimination with partial pivoting; undefined for a (numerically) singular matrix. */
function solve(a: Float64Array[], b: Float64Array): Float64Array | undefined {
  const n = b.length;
  const scale = Math.max(...a.map((r) => Math.max(...r.map(Math.abs)))) || 1;
  for (let c = 0; c < n; c++) {
    let piv = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[piv]![c]!)) piv = r;
    if (Math.abs(a[piv]![c]!) <= 1e-12 * scale) return undefined;
    [a[c], a[piv]] = [a[piv]!, a[c]!];
    [b[c], b[piv]] = [b[piv]!, b[c]!];
    for (let r = c + 1; r < n; r++) {
      const f = a[r]![c]! / a[c]![c]!;
      for (let k = c; k < n; k++) a[r]![k]! -= f * a[c]![k]!;
      b[r]! -= f * b[c]!;
    }
  }
  const x = new Float64Array(n);
  for (let r = n - 1; r >= 0; r--) {
    let acc = b[r]!;
    for (let k = r + 1; k < n; k++) acc -= a[r]![k]! * x[k]!;
    x[r] = acc / a[r]![r]!;
  }
  return x;
}

/** A point list: [{x, y}] or [[x, y]]; finite numbers. */
function points(v: unknown, path: string): [number, number][] {
  if (!Array.isArray(v)) throw invalidArgument(path, 'expected an array of points {x, y}');
  return v.map((p, i) => {
    const [x, y] = Array.isArray(p)
      ? (p as unknown[])
      : p !== null && typeof p === 'object'
        ? [(p as { x?: unknown }).x, (p as { y?: unknown }).y]
        : [];
    const nx = typeof x === 'string' ? Number(x) : x;
    const ny = typeof y === 'string' ? Number(y) : y;
    if (typeof nx !== 'number' || typeof ny !== 'number' || !Number.isFinite(nx) || !Number.isFinite(ny)) {
      throw invalidArgument(`${path}[${i}]`, 'a point needs finite numbers x and y');
    }
    return [nx, ny];
  });
}

/** Case-insensitive property of an object. */
function prop(o: Record<string, unknown>, name: string): unknown {
  const k = Object.keys(o).find((key) => key.toLowerCase() === name.toLowerCase());
  return k === undefined ? undefined : o[k];
}

function parseTransforms(raw: unknown): { steps: Step[]; sr?: SpatialReference } {
  const base = at('GeodataTransforms');
  const list = Array.isArray(raw) ? raw : raw !== null && typeof raw === 'object' ? [raw] : undefined;
  if (list === undefined || list.length === 0) throw invalidArgument(base, 'GeodataTransforms needs at least one transform object');
  let sr: SpatialReference | undefined;
  const steps = list.map((t, i) => {
    const path = Array.isArray(raw) ? `${base}[${i}]` : base;
    if (t === null || typeof t !== 'object' || Array.isArray(t)) throw invalidArgument(path, 'a transform must be an object');
    const o = t as Record<string, unknown>;
    const kind = prop(o, 'geodataTransform');
    if (typeof kind !== 'string')
      throw invalidArgument(`${path}.geodataTransform`, 'geodataTransform (for example "Polynomial") is required');
    if (kind.toLowerCase() !== 'polynomial') {
      throw unsupportedInput(`${path}.geodataTransform`, `geodata transform "${kind}" is not supported; only Polynomial is`);
    }
    const a = prop(o, 'geodataTransformArguments');
    if (a === null || typeof a !== 'object' || Array.isArray(a)) {
      throw invalidArgument(`${path}.geodataTransformArguments`, 'geodataTransformArguments must be an object');
    }
    const ta = a as Record<string, unknown>;
    const apath = `${path}.geodataTransformArguments`;
    const rawOrder = prop(ta, 'polynomialOrder') ?? 1;
    const order = typeof rawOrder === 'string' ? Number(rawOrder) : rawOrder;
    if (order !== 1 && order !== 2 && order !== 3) throw invalidArgument(`${apath}.polynomialOrder`, 'polynomialOrder must be 1, 2 or 3');
    const src = points(prop(ta, 'sourcePoints'), `${apath}.sourcePoints`);
    const dst = points(prop(ta, 'targetPoints'), `${apath}.targetPoints`);
    if (src.length !== dst.length) {
      throw invalidArgument(
        `${apath}.targetPoints`,
        `sourcePoints has ${src.length} points and targetPoints ${dst.length}; they must pair up`,
      );
    }
    if (src.length < TERMS[order]!) {
      throw invalidArgument(
        `${apath}.sourcePoints`,
        `a polynomial of order ${order} needs at least ${TERMS[order]} points, got ${src.length}`,
      );
    }
    const forward = fitPolynomial(src, dst, order);
    const inverse = fitPolynomial(dst, src, order);
    if (!forward || !inverse) {
      throw invalidArgument(
        `${apath}.sourcePoints`,
        `the points do not determine an order-${order} polynomial (collinear or repeated points)`,
      );
    }
    const s = prop(ta, 'spatialReference');
    if (s !== undefined && s !== null) {
      if (typeof s !== 'object')
        throw invalidArgument(`${apath}.spatialReference`, 'spatialReference must be an object such as {wkid: 4326}');
      const so = s as Record<string, unknown>;
      const wkid = prop(so, 'latestWkid') ?? prop(so, 'wkid');
      const wkt = prop(so, 'wkt');
      if (typeof wkid === 'number') sr = { wkid, ...(wkid >= 4000 && wkid < 5000 ? { geographic: true } : {}) };
      else if (typeof wkt === 'string') sr = { wkt };
      else throw invalidArgument(`${apath}.spatialReference`, 'spatialReference needs a wkid or wkt');
    }
    return { forward, inverse };
  });
  return { steps, ...(sr ? { sr } : {}) };
}

export const geometric = defineFunction<typeof args, GeometricParams>({
  name: 'Geometric',
  summary: 'Georeference a raster with polynomial transforms fitted from control points.',
  variableName: 'Raster',
  family: 'geometry',
  verification: 'reference: gdal_translate -gcp + gdalwarp -order 1/2/3 goldens; hand: fits and argument errors',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (src.constant !== undefined) throw invalidArgument(at('Raster'), 'Geometric needs a raster, not a constant');
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `Geometric does not take complex (${src.pixelType}) rasters`);
    const { steps, sr } = parseTransforms(a.GeodataTransforms);
    const append = a.AppendGeodataXform;
    const W = src.width;
    const H = src.height;
    // The input's outline, in the first transform's source coordinates.
    const corner = (px: number, py: number): [number, number] =>
      append ? [src.extent.xmin + px * src.cellSize.x, src.extent.ymax - py * src.cellSize.y] : [px, py];
    const tmp = new Float64Array(2);
    const forward = (p: [number, number]): [number, number] => {
      let [x, y] = p;
      for (const s of steps) {
        evalPolynomial(s.forward, x, y, tmp, 0);
        x = tmp[0]!;
        y = tmp[1]!;
      }
      return [x, y];
    };
    let xmin = Infinity;
    let ymin = Infinity;
    let xmax = -Infinity;
    let ymax = -Infinity;
    for (let i = 0; i <= 20; i++) {
      const t = i / 20;
      for (const q of [corner(t * W, 0), corner(t * W, H), corner(0, t * H), corner(W, t * H)]) {
        const [x, y] = forward(q);
        xmin = Math.min(xmin, x);
        xmax = Math.max(xmax, x);
        ymin = Math.min(ymin, y);
        ymax = Math.max(ymax, y);
      }
    }
    const [ax, ay] = forward(corner(0, 0));
    const [bx, by] = forward(corner(W, H));
    const cell = Math.hypot(bx - ax, by - ay) / Math.hypot(W, H);
    if (!(cell > 0 && Number.isFinite(cell) && xmax > xmin && ymax > ymin)) {
      throw invalidArgument(at('GeodataTransforms'), 'the transform maps the raster onto a degenerate (zero or infinite) area');
    }
    const width = Math.max(1, Math.round((xmax - xmin) / cell));
    const height = Math.max(1, Math.round((ymax - ymin) / cell));
    if (width * height > 2 ** 40)
      throw invalidArgument(at('GeodataTransforms'), `the transform gives a ${width} x ${height} output, too large`);
    const method: InterpolationMethod = a.ResamplingType === 0 ? 'nearest' : a.ResamplingType === 2 ? 'cubic' : 'bilinear';
    const spatialReference = sr ?? src.spatialReference;
    const { histograms: _h, statistics, spatialReference: _s, ...rest } = src;
    // outputPixelType: resampled values are stored once into it (bilinear U8 asked for F32 keeps
    // its fractions); complex: its real component type, then the engine's cast.
    const info: RasterInfo = retypedInfo(
      {
        ...rest,
        width,
        height,
        extent: { xmin, ymax, xmax: xmin + width * cell, ymin: ymax - height * cell },
        cellSize: { x: cell, y: cell },
        ...(spatialReference ? { spatialReference } : {}),
        ...(statistics && method !== 'cubic' ? { statistics } : {}),
      },
      to === undefined ? undefined : realTypeOf(to),
    );
    const params: GeometricParams = {
      input: a.Raster,
      steps,
      ...(append ? { sourceGrid: { xmin: src.extent.xmin, ymax: src.extent.ymax, cx: src.cellSize.x, cy: src.cellSize.y } } : {}),
      xmin,
      ymax,
      cell,
      method,
      srcWidth: W,
      srcHeight: H,
      pixelType: info.pixelType,
    };
    const warnings: string[] = [];
    for (const k of ['ZFactor', 'ZOffset', 'ConstantZ', 'CorrectGeoid'] as const) {
      if (a[k] !== undefined) warnings.push(`${k} only applies to sensor models; polynomial transforms ignore it`);
    }
    if (a.DEM !== undefined) warnings.push('DEM only applies to sensor models; polynomial transforms ignore it');
    const margin = METHOD_MARGIN[method];
    return {
      info,
      halo: 0,
      params,
      inputRect: (out: Rect, input: number): Rect => {
        if (input !== a.Raster) return { x: 0, y: 0, width: 1, height: 1 };
        const xy = new Float64Array(2 * out.width * out.height);
        sourcePositions(params, out, xy);
        return boundingSourceRect(xy, margin, W, H);
      },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const n = out.rect.width * out.rect.height;
    const xy = new Float64Array(2 * n);
    sourcePositions(p, out.rect, xy);
    const s = sourceWindow(inputs[p.input]!, p.srcWidth, p.srcHeight);
    const nb = out.bands.length;
    const v = new Float64Array(nb);
    const wx = new Float64Array(4);
    const wy = new Float64Array(4);
    for (let i = 0; i < n; i++) {
      if (!interpolate(s, p.method, xy[2 * i]!, xy[2 * i + 1]!, v, wx, wy)) {
        out.mask[i] = 0;
        continue;
      }
      for (let b = 0; b < nb; b++) storeValue(out.bands[b]!, i, v[b]!, p.pixelType);
    }
  },
});

/** Source pixel positions of the output pixel centres of `r` (x, y interleaved), exact per pixel. */
function sourcePositions(p: GeometricParams, r: Rect, out: Float64Array): void {
  const steps = p.steps;
  const last = steps.length - 1;
  const g = p.sourceGrid;
  for (let j = 0; j < r.height; j++) {
    const Y = p.ymax - (r.y + j + 0.5) * p.cell;
    for (let i = 0; i < r.width; i++) {
      const o = 2 * (j * r.width + i);
      out[o] = p.xmin + (r.x + i + 0.5) * p.cell;
      out[o + 1] = Y;
      for (let k = last; k >= 0; k--) evalPolynomial(steps[k]!.inverse, out[o], out[o + 1]!, out, o);
      if (g !== undefined) {
        out[o] = (out[o] - g.xmin) / g.cx;
        out[o + 1] = (g.ymax - out[o + 1]!) / g.cy;
      }
    }
  }
}

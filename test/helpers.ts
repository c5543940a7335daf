/** Test helpers: run one function over in-memory rasters, whole and tiled, without a rule. */
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { EngineError } from '../src/core/errors.js';
import type { PixelBlock, RasterInfo } from '../src/core/pixel-block.js';
import { openerScope } from '../src/io/index.js';
import { PIXEL_TYPE_INFO, type PixelType, type Plane } from '../src/core/pixel-type.js';
import { parseArgs } from '../src/graph/args.js';
import { constantSource, memorySource } from '../src/graph/memory-source.js';
import { createFunctionNode } from '../src/graph/node.js';
import { render } from '../src/graph/render.js';
import type { FunctionNode, PlanWarning, RasterFunction, RasterNode } from '../src/graph/types.js';

export interface GridOptions {
  readonly width: number;
  readonly height: number;
  readonly bandCount?: number;
  readonly pixelType?: PixelType;
  readonly cellSize?: number | { x: number; y: number };
  readonly noData?: number;
  readonly geographic?: boolean;
  readonly origin?: { x: number; y: number };
  /** Further RasterInfo fields (sensorName, radiometry, bandNames, ...). */
  readonly extra?: Partial<RasterInfo>;
}

export function gridInfo(o: GridOptions): RasterInfo {
  const cs = typeof o.cellSize === 'object' ? o.cellSize : { x: o.cellSize ?? 1, y: o.cellSize ?? 1 };
  const ox = o.origin?.x ?? 0;
  const oy = o.origin?.y ?? 0;
  return {
    width: o.width,
    height: o.height,
    bandCount: o.bandCount ?? 1,
    pixelType: o.pixelType ?? 'F32',
    noData: o.noData,
    extent: { xmin: ox, ymin: oy - o.height * cs.y, xmax: ox + o.width * cs.x, ymax: oy },
    cellSize: cs,
    spatialReference: o.geographic ? { wkid: 4326, geographic: true } : { wkid: 32616, metersPerUnit: 1 },
    ...o.extra,
  };
}

/** mulberry32: a small seeded PRNG (the same numbers on every machine), for tests and benches. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let seq = 0;

/** A source whose band b pixel (x, y) is `f(x, y, b)`. */
export function rasterOf(o: GridOptions, f: (x: number, y: number, b: number) => number, mask?: Uint8Array): RasterNode {
  const info = gridInfo(o);
  const bands: Plane[] = [];
  for (let b = 0; b < info.bandCount; b++) {
    const plane = new (typeArray(info.pixelType))(info.width * info.height);
    for (let y = 0; y < info.height; y++) for (let x = 0; x < info.width; x++) plane[y * info.width + x] = f(x, y, b);
    bands.push(plane);
  }
  return memorySource(`mem${++seq}`, info, bands, mask);
}

/** A complex source (pixelType C64, or C128 when asked) whose band b pixel (x, y) is `f(x, y, b)` = [re, im]. */
export function complexOf(
  o: GridOptions,
  f: (x: number, y: number, b: number) => readonly [number, number],
  mask?: Uint8Array,
): RasterNode {
  const info = gridInfo({ ...o, pixelType: o.pixelType === 'C128' ? 'C128' : 'C64' });
  const bands: Plane[] = [];
  for (let b = 0; b < info.bandCount; b++) {
    const plane =
      info.pixelType === 'C128' ? new Float64Array(2 * info.width * info.height) : new Float32Array(2 * info.width * info.height);
    for (let y = 0; y < info.height; y++) {
      for (let x = 0; x < info.width; x++) {
        const [re, im] = f(x, y, b);
        plane[2 * (y * info.width + x)] = re;
        plane[2 * (y * info.width + x) + 1] = im;
      }
    }
    bands.push(plane);
  }
  return memorySource(`mem${++seq}`, info, bands, mask);
}

function typeArray(t: PixelType): new (n: number) => Plane {
  switch (t) {
    case 'S8':
      return Int8Array;
    case 'U16':
      return Uint16Array;
    case 'S16':
      return Int16Array;
    case 'U32':
      return Uint32Array;
    case 'S32':
      return Int32Array;
    case 'F32':
      return Float32Array;
    case 'F64':
      return Float64Array;
    default:
      return Uint8Array;
  }
}

export const constant = (values: readonly number[]): RasterNode => constantSource(values);

/**
 * Plan `fn` with raw (wire) arguments over `inputs`: raster arguments take the inputs in schema
 * order (`rasters` arguments take all remaining inputs). Throws the first argument problem.
 * `to`: the rule's outputPixelType (the function's own output type).
 */
export function applyFunction(
  fn: RasterFunction,
  rawArgs: Record<string, unknown>,
  inputs: readonly RasterNode[],
  to?: PixelType,
): FunctionNode {
  // Raster arguments take the inputs in schema order; stand-ins tell parseArgs which are present.
  const withRasters: Record<string, unknown> = { ...rawArgs };
  const slots: Record<string, number | number[]> = {};
  let next = 0;
  for (const [name, spec] of Object.entries(fn.args)) {
    if (spec.kind === 'raster' && next < inputs.length) {
      slots[name] = next++;
      withRasters[name] = '$input';
    } else if (spec.kind === 'rasters' && next < inputs.length) {
      const idx: number[] = [];
      while (next < inputs.length) idx.push(next++);
      slots[name] = idx;
      withRasters[name] = idx.map(() => '$input');
    }
  }
  const parsed = parseArgs(fn.args, withRasters, 'rasterFunctionArguments');
  const first = parsed.issues[0];
  if (first) throw new EngineError(first.code, first.message, { path: first.path });
  const values: Record<string, unknown> = { ...parsed.values, ...slots };
  return createFunctionNode(fn, values, inputs, '', to);
}

export interface Result {
  readonly node: FunctionNode;
  readonly block: PixelBlock;
  readonly info: RasterInfo;
  value(x: number, y: number, band?: number): number;
  valid(x: number, y: number): boolean;
}

/** Render `fn` over `inputs` whole (one tile) and return the output. */
export async function runFunction(
  fn: RasterFunction,
  rawArgs: Record<string, unknown>,
  inputs: readonly RasterNode[],
  tileSize?: number,
  to?: PixelType,
): Promise<Result> {
  const node = applyFunction(fn, rawArgs, inputs, to);
  const info = node.info;
  const block = await render(node, { tileSize: tileSize ?? Math.max(info.width, info.height) });
  return {
    node,
    block,
    info,
    value: (x, y, b = 0) => block.bands[b]![y * info.width + x]!,
    valid: (x, y) => block.mask[y * info.width + x] === 1,
  };
}

/**
 * First difference between two blocks: masks exactly, values of valid pixels bit for bit (NaN =
 * NaN; complex planes compared re and im). With `zeroSign: false`, 0 and -0 count as equal (file
 * round trips). Returns a description with the count of differences, or undefined.
 */
export function firstDifference(a: PixelBlock, b: PixelBlock, options: { zeroSign?: boolean } = {}): string | undefined {
  if (a.bands.length !== b.bands.length) return `band count ${a.bands.length} != ${b.bands.length}`;
  const k = PIXEL_TYPE_INFO[a.pixelType].complex ? 2 : 1;
  const strictZero = options.zeroSign ?? true;
  const w = a.rect.width;
  let bad = 0;
  let first: string | undefined;
  for (let i = 0; i < a.mask.length; i++) {
    const where = `(${i % w}, ${Math.floor(i / w)})`;
    if (a.mask[i] !== b.mask[i]) {
      bad++;
      first ??= `mask at ${where}: ${a.mask[i]} vs ${b.mask[i]}`;
      continue;
    }
    if (a.mask[i] === 0) continue;
    for (let band = 0; band < a.bands.length; band++) {
      for (let p = 0; p < k; p++) {
        const va = a.bands[band]![k * i + p]!;
        const vb = b.bands[band]![k * i + p]!;
        if (!Object.is(va, vb) && (strictZero || !(va === 0 && vb === 0))) {
          bad++;
          first ??= `band ${band + 1} at ${where}${k === 2 ? (p ? ' im' : ' re') : ''}: ${va} vs ${vb}`;
        }
      }
    }
  }
  return first && `${first} (${bad} differences)`;
}

/** A RasterInfo for a block on a 30 m UTM 16N grid (io round-trip tests). */
export function utmInfoFor(block: PixelBlock, extra: Partial<RasterInfo> = {}): RasterInfo {
  const { width, height } = block.rect;
  return {
    width,
    height,
    bandCount: block.bands.length,
    pixelType: block.pixelType,
    extent: { xmin: 500000, ymin: 4100000 - height * 30, xmax: 500000 + width * 30, ymax: 4100000 },
    cellSize: { x: 30, y: 30 },
    spatialReference: { wkid: 32616, metersPerUnit: 1 },
    ...extra,
  };
}

/** Render whole and in `tile`-sized tiles; return the first difference (expect undefined). */
export async function tiledVersusWhole(node: RasterNode, tile: [number, number] = [37, 53]): Promise<string | undefined> {
  const whole = await render(node, { tileSize: Math.max(node.info.width, node.info.height) });
  const tiled = await render(node, { tileSize: tile });
  return firstDifference(whole, tiled);
}

/** The fields of `gdalinfo -json` the tests read (metadata: domain -> key -> value). */
export interface GdalInfo {
  readonly size: [number, number];
  readonly geoTransform: number[];
  readonly stac: Readonly<Record<string, unknown>>;
  readonly metadata: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** One entry per band (never empty for a raster). */
  readonly bands: [GdalBand, ...GdalBand[]];
}

export interface GdalBand {
  readonly type: string;
  readonly block: [number, number];
  readonly colorInterpretation: string;
  readonly description?: string;
  /** A number, or 'NaN' / 'Infinity' (turned into strings before JSON.parse). */
  readonly noDataValue?: number | string;
  readonly mask?: { readonly flags: string[] };
  readonly metadata: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly colorTable?: { readonly count: number; readonly entries: number[][] };
}

/** The texts of a plan's warnings (each a string or a `{ message, arg }`); none gives []. */
export const warningMessages = (warnings: readonly (string | PlanWarning)[] | undefined): string[] =>
  (warnings ?? []).map((w) => (typeof w === 'string' ? w : w.message));

export function catchError(f: () => unknown): EngineError | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  return undefined;
}

/** The EngineError a promise rejects with (any other outcome fails the test). */
export async function errorOf(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  throw new Error('expected an EngineError');
}

/** One variable of `mdRasterOf`: slices along one dimension (StdTime: the values are years, 1 January UTC). */
export interface MdVariable {
  readonly name: string;
  readonly values: readonly number[];
  readonly bandsPerSlice?: number;
  /** Dimension name (default StdTime; any other name is a non-time dimension). */
  readonly dimension?: string;
}

/**
 * A multidimensional raster (core/multidim.ts layout): the variables' slices stacked in order,
 * `bandsPerSlice` bands each; band b pixel (x, y) is `f(x, y, b)`. As the multidimensional sources,
 * the mask is 1 where any slice is valid (not NaN, not `noData`; and `mask` where given), and a
 * missing slice keeps its NaN or NoData value.
 */
export function mdRasterOf(
  o: GridOptions,
  variables: readonly MdVariable[],
  f: (x: number, y: number, b: number) => number,
  mask?: Uint8Array,
): RasterNode {
  let band = 0;
  const md = {
    variables: variables.map((v) => {
      const bps = v.bandsPerSlice ?? 1;
      const name = v.dimension ?? 'StdTime';
      const time = name === 'StdTime';
      const slices = v.values.map((y) => {
        const s = { values: [time ? Date.UTC(y, 0, 1) : y], band };
        band += bps;
        return s;
      });
      return { name: v.name, dimensions: [{ name, time }], bandsPerSlice: bps, slices };
    }),
  };
  const any = new Uint8Array(o.width * o.height);
  for (let y = 0; y < o.height; y++) {
    for (let x = 0; x < o.width; x++) {
      for (let b = 0; b < band && any[y * o.width + x] === 0; b++) {
        const v = f(x, y, b);
        if (v === v && v !== o.noData) any[y * o.width + x] = 1;
      }
    }
  }
  if (mask) for (let i = 0; i < any.length; i++) if (!mask[i]) any[i] = 0;
  // memorySource masks every pixel equal to noData in any band: give it none, then put it back.
  const node = rasterOf({ ...o, noData: undefined, bandCount: band, extra: { ...o.extra, multidimensional: md } }, f, any);
  return { ...node, info: { ...node.info, noData: o.noData } };
}

/**
 * The library's `openerScope` (src/io/source.ts) under the tests' name: tests call
 * `afterEach(files.closeAll)` so no file handle is left to the garbage collector.
 */
export const closingOpener = openerScope;

/**
 * Runs the `rasterflow` command from the sources (`node --import tsx src/cli/main.ts`), or the
 * built bundle with `bin`, as a real process. A process that has not exited after `timeoutMs`
 * is killed and reported (code null, `timedOut`): a hang fails its test instead of blocking the
 * whole run (spawnSync blocks the event loop, so vitest's own timeout could not fire).
 */
export function runCli(
  args: readonly string[],
  options: { readonly bin?: string; readonly env?: NodeJS.ProcessEnv; readonly timeoutMs?: number } = {},
): { code: number | null; stdout: string; stderr: string; timedOut: boolean } {
  const root = new URL('..', import.meta.url).pathname;
  const entry = options.bin === undefined ? ['--import', 'tsx', `${root}src/cli/main.ts`] : [options.bin];
  const r = spawnSync(process.execPath, [...entry, ...args], {
    encoding: 'utf8',
    cwd: root,
    env: options.env ?? process.env,
    timeout: options.timeoutMs ?? 60_000,
    killSignal: 'SIGKILL',
    maxBuffer: 1 << 26,
  });
  const timedOut = r.error !== undefined && (r.error as NodeJS.ErrnoException).code === 'ETIMEDOUT';
  const stderr = timedOut
    ? `${r.stderr}\n[runCli] killed: still running after ${options.timeoutMs ?? 60_000} ms (rasterflow ${args.join(' ')})`
    : r.stderr;
  return { code: r.status, stdout: r.stdout, stderr, timedOut };
}

/** A free TCP port on loopback (for a server a test starts: PostgreSQL, Redis). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

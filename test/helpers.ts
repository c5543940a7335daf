/** Test helpers: run one function over in-memory rasters, whole and tiled, without a rule. */
import { EngineError } from '../src/core/errors.js';
import type { PixelBlock, RasterInfo } from '../src/core/pixel-block.js';
import type { PixelType, Plane } from '../src/core/pixel-type.js';
import { parseArgs } from '../src/graph/args.js';
import { constantSource, memorySource } from '../src/graph/memory-source.js';
import { createFunctionNode } from '../src/graph/node.js';
import { render } from '../src/graph/render.js';
import type { FunctionNode, RasterFunction, RasterNode } from '../src/graph/types.js';

export interface GridOptions {
  readonly width: number;
  readonly height: number;
  readonly bandCount?: number;
  readonly pixelType?: PixelType;
  readonly cellSize?: number | { x: number; y: number };
  readonly noData?: number;
  readonly geographic?: boolean;
  readonly origin?: { x: number; y: number };
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

function typeArray(t: PixelType): new (n: number) => Plane {
  switch (t) {
    case 'S8': return Int8Array;
    case 'U16': return Uint16Array;
    case 'S16': return Int16Array;
    case 'U32': return Uint32Array;
    case 'S32': return Int32Array;
    case 'F32': return Float32Array;
    case 'F64': return Float64Array;
    default: return Uint8Array;
  }
}

export const constant = (values: readonly number[]): RasterNode => constantSource(values);

/**
 * Plan `fn` with raw (wire) arguments over `inputs`: raster arguments take the inputs in schema
 * order (`rasters` arguments take all remaining inputs). Throws the first argument problem.
 */
export function applyFunction(fn: RasterFunction, rawArgs: Record<string, unknown>, inputs: readonly RasterNode[]): FunctionNode {
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
  return createFunctionNode(fn, values, inputs, '');
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
): Promise<Result> {
  const node = applyFunction(fn, rawArgs, inputs);
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

/** First difference between two blocks (bands bit for bit, NaN = NaN, masks exactly), or undefined. */
export function firstDifference(a: PixelBlock, b: PixelBlock): string | undefined {
  if (a.bands.length !== b.bands.length) return `band count ${a.bands.length} != ${b.bands.length}`;
  const w = a.rect.width;
  for (let i = 0; i < a.mask.length; i++) {
    if (a.mask[i] !== b.mask[i]) return `mask differs at (${i % w}, ${Math.floor(i / w)}): ${a.mask[i]} vs ${b.mask[i]}`;
  }
  for (let band = 0; band < a.bands.length; band++) {
    const p = a.bands[band]!;
    const q = b.bands[band]!;
    for (let i = 0; i < p.length; i++) {
      if (a.mask[i % a.mask.length] === 0) continue;
      if (!Object.is(p[i], q[i]) && !(Number.isNaN(p[i]) && Number.isNaN(q[i]))) {
        return `band ${band} differs at (${i % w}, ${Math.floor(i / w)}): ${p[i]} vs ${q[i]}`;
      }
    }
  }
  return undefined;
}

/** Render whole and in `tile`-sized tiles; return the first difference (expect undefined). */
export async function tiledVersusWhole(node: RasterNode, tile: [number, number] = [37, 53]): Promise<string | undefined> {
  const whole = await render(node, { tileSize: Math.max(node.info.width, node.info.height) });
  const tiled = await render(node, { tileSize: tile });
  return firstDifference(whole, tiled);
}

export function catchError(f: () => unknown): EngineError | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  return undefined;
}

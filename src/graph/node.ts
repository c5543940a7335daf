/**
 * Turning a function, its parsed argument values and its input nodes into a planned graph node.
 * The node id is the canonical JSON of (name, arguments with defaults, input ids) plus the
 * requested outputPixelType, so equal sub-rules collapse into one node and share work through the
 * per-tile memo. The function is planned for the rule's outputPixelType; the engine's cast follows
 * only when the plan leaves its natural type (see RasterFunction.plan and RasterFunction.codes).
 */
import { EngineError, toEngineError } from '../core/errors.js';
import type { RasterInfo } from '../core/pixel-block.js';
import { PIXEL_TYPE_INFO, type PixelType } from '../core/pixel-type.js';
import { checkHolds } from './output-type.js';
import { castFunction } from './cast.js';
import { alignNode } from './align.js';
import type { FunctionNode, Plan, RasterFunction, RasterNode } from './types.js';

export function createFunctionNode(
  fn: RasterFunction,
  values: Readonly<Record<string, unknown>>,
  inputs: readonly RasterNode[],
  path: string,
  /** The rule's outputPixelType (undefined: the natural type); the function's plan receives it. */
  to?: PixelType,
): FunctionNode {
  const plan = planned(fn, path, () =>
    fn.plan(
      values as never,
      inputs.map((i) => i.info),
      to,
    ),
  );
  const node = nodeFor(fn, values, inputs, path, plan, to);
  // A function that leaves the type to the engine's cast (see RasterFunction.plan) gets it here.
  if (to === undefined || plan.info.pixelType === to) return node;
  if (fn.codes !== undefined) planned(fn, path, () => checkHolds(fn.name, to, ...rangeOf(plan.info), fn.codes!));
  const cast = { to, Raster: 0 };
  return nodeFor(
    castFunction,
    cast,
    [node],
    path,
    planned(castFunction, path, () => castFunction.plan(cast, [node.info])),
    undefined,
  );
}

function nodeFor(
  fn: RasterFunction,
  values: Readonly<Record<string, unknown>>,
  inputs: readonly RasterNode[],
  path: string,
  plan: Plan<unknown>,
  to: PixelType | undefined,
): FunctionNode {
  // Plan.align: inputs listed there are resampled onto the output grid by internal Align nodes
  // (src/graph/align.ts), so the kernel sees aligned blocks; inputs already on it stay as they are.
  const align = plan.align;
  const nodeInputs =
    align === undefined
      ? inputs
      : inputs.map((input, i) => {
          const spec = align[i];
          if (spec === undefined) return input;
          try {
            return alignNode(input, plan.info, spec.method, path);
          } catch (e) {
            const err = toEngineError(e);
            throw new EngineError(err.code, `${fn.name}: ${err.message}`, { path: err.path ?? path, cause: e });
          }
        });
  const id = `${fn.name}(${canonicalJson(values)};${nodeInputs.map((i) => i.id).join(',')})${to !== undefined ? `:as:${to}` : ''}`;
  return { kind: 'function', id, fn, args: values, inputs: nodeInputs, plan, info: plan.info };
}

/** The advertised range of an output (every band's statistics), else its type's range. */
function rangeOf(info: RasterInfo): [number, number] {
  const s = info.statistics;
  if (s !== undefined && s.length === info.bandCount && s.every((b) => Number.isFinite(b.min) && Number.isFinite(b.max))) {
    return [Math.min(...s.map((b) => b.min)), Math.max(...s.map((b) => b.max))];
  }
  return [PIXEL_TYPE_INFO[info.pixelType].min, PIXEL_TYPE_INFO[info.pixelType].max];
}

/** Run a planning step; EngineErrors get their relative path anchored at `path`. */
function planned<T>(fn: RasterFunction, path: string, step: () => T): T {
  try {
    return step();
  } catch (e) {
    const err = toEngineError(e);
    if (err.code === 'INTERNAL') throw new EngineError('INTERNAL', `${fn.name}: planning failed: ${err.message}`, { path, cause: e });
    // Plans name paths relative to the function ("rasterFunctionArguments.ZFactor"); anchor them here.
    const rel = err.path ?? '';
    const full = path ? (rel ? `${path}.${rel}` : path) : rel;
    throw new EngineError(err.code, err.message, { path: full, cause: e });
  }
}

/** JSON with sorted object keys, for identities. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

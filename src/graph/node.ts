/**
 * Turning a function, its parsed argument values and its input nodes into a planned graph node.
 * The node id is the canonical JSON of (name, arguments with defaults, input ids), so equal
 * sub-rules collapse into one node and share work through the per-tile memo.
 */
import { EngineError, toEngineError } from '../core/errors.js';
import type { FunctionNode, RasterFunction, RasterNode } from './types.js';

export function createFunctionNode(
  fn: RasterFunction,
  values: Readonly<Record<string, unknown>>,
  inputs: readonly RasterNode[],
  path: string,
): FunctionNode {
  let plan;
  try {
    plan = fn.plan(values as never, inputs.map((i) => i.info));
  } catch (e) {
    const err = toEngineError(e);
    if (err.code === 'INTERNAL') throw new EngineError('INTERNAL', `${fn.name}: planning failed: ${err.message}`, { path, cause: e });
    // Plans name paths relative to the function ("rasterFunctionArguments.ZFactor"); anchor them here.
    const rel = err.path ?? '';
    const full = path ? (rel ? `${path}.${rel}` : path) : rel;
    throw new EngineError(err.code, err.message, { path: full, cause: e });
  }
  const id = `${fn.name}(${canonicalJson(values)};${inputs.map((i) => i.id).join(',')})`;
  return { kind: 'function', id, fn, args: values, inputs, plan, info: plan.info };
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

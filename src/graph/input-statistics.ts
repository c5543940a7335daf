/**
 * Statistics a rule needs but its input lacks (RasterFunction.needsStatistics): ShadedRelief's
 * ramp over the DEM's range, a Stretch without DRA that needs min/max or mean/stdDev. Planning is
 * synchronous and must not depend on a request, so the builder computes them once, before the
 * plan, and hands the plan an input whose info carries them:
 *
 * - a source that offers `approximateStatistics` (GeoTIFF): as `gdalinfo -approx_stats`, from the
 *   smallest overview with more than 2500 pixels, else from a sample of its blocks;
 * - any other input (a function node, a source in memory): exactly, over its whole grid, through
 *   the request-statistics pass (its own request statistics bound first).
 *
 * The input node keeps its id (its pixels do not change). When a band has no valid pixel the input
 * is left as it was (the function's own fallback applies). Deterministic, so a worker that rebuilds
 * the graph from the rule gets the same plan.
 */
import type { BandStatistics, RasterInfo } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { bindRequestStatistics, computeStatistics } from './request-statistics.js';
import type { RasterFunction, RasterNode } from './types.js';

/** `inputs`, with statistics added to the ones `fn` needs them for and that have none. */
export async function withNeededStatistics(
  fn: RasterFunction,
  values: Readonly<Record<string, unknown>>,
  inputs: readonly RasterNode[],
  signal?: AbortSignal,
): Promise<RasterNode[]> {
  const need =
    fn.needsStatistics?.(
      values,
      inputs.map((i) => i.info),
    ) ?? [];
  const out = [...inputs];
  for (const i of new Set(need)) {
    const input = inputs[i];
    if (input === undefined) continue;
    const stats = await statisticsOf(input, signal);
    if (stats.length !== input.info.bandCount || stats.some((s) => s === undefined)) continue;
    out[i] = withStatistics(input, stats as BandStatistics[]);
  }
  return out;
}

/** Approximate statistics of a source that offers them, else exact ones over the node's grid. */
export async function statisticsOf(node: RasterNode, signal?: AbortSignal): Promise<(BandStatistics | undefined)[]> {
  if (node.kind === 'source' && node.approximateStatistics) return node.approximateStatistics(signal);
  const area = rect(0, 0, node.info.width, node.info.height);
  const bound = await bindRequestStatistics(node, area, signal);
  const stats = await computeStatistics(bound.root, area, { signal });
  return stats.map((s) => s?.statistics);
}

/** The same node (same id, same pixels) with `statistics` in its info. */
function withStatistics(node: RasterNode, statistics: readonly BandStatistics[]): RasterNode {
  const info: RasterInfo = { ...node.info, statistics };
  if (node.kind === 'function') return { ...node, info, plan: { ...node.plan, info } };
  const src = node;
  return {
    kind: 'source',
    id: src.id,
    info,
    read: (r, s) => src.read(r, s),
    ...(src.readInto ? { readInto: (b, s) => src.readInto!(b, s) } : {}),
    ...(src.approximateStatistics ? { approximateStatistics: (s) => src.approximateStatistics!(s) } : {}),
  };
}

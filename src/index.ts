/**
 * rasterflow's engine API: parse a rendering rule, build the planned DAG over sources, render
 * tiles or a window, encode the result. `import { ... } from 'rasterflow'`. The training-data
 * exporter is its own entry, `rasterflow/chipper`, so an embedder that renders tiles loads neither it
 * nor its label formats.
 */
export * from './core/index.js';
export type {
  ArgSchema,
  ArgSpec,
  ArgValues,
  FunctionNode,
  Plan,
  RasterFunction,
  RasterNode,
  Registry,
  RequestBandStatistics,
  RequestStatistics,
  SourceNode,
} from './graph/types.js';
export { createRegistry, defineFunction } from './graph/types.js';
export { parseArgs, describe as describeArgs } from './graph/args.js';
export { evaluate, evaluateTile } from './graph/evaluate.js';
export { render, renderTiles, inlinePool, type Recipe, type RenderOptions, type TilePool } from './graph/render.js';
export {
  applyBoundParams,
  bindRequestStatistics,
  computeStatistics,
  needsRequestStatistics,
  type BoundGraph,
} from './graph/request-statistics.js';
export { memorySource, constantSource } from './graph/memory-source.js';
export {
  warpNode,
  targetGrid,
  suggestedGrid,
  transformExtent,
  parseSpatialReference,
  WARP_METHODS,
  type WarpGrid,
  type WarpGridOptions,
  type WarpMethod,
} from './graph/warp.js';
export { builtinFunctions, registry } from './functions/index.js';
export { parseRule, type RuleNode } from './rule/parse.js';
export {
  buildGraph,
  describeResolution,
  planRule,
  resolveRule,
  type BuiltGraph,
  type SourceRef,
  type SourceResolver,
} from './rule/build.js';
export { createTemplates, type Template, type TemplateStore } from './rule/templates.js';
export { bindSources } from './rule/sources.js';
export * from './io/index.js';

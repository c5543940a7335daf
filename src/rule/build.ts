/**
 * Rule tree -> planned DAG.
 *
 * Stage 1 (`resolveRule`, no pixels, no files): look up every function or template, parse its
 * arguments against the schema, resolve raster arguments (`$$`, `$n`, `$<id>`, named variables,
 * nested rules, arrays of rasters, `{ url }` objects, scalars where the function allows them) and
 * give each node a canonical id so equal sub-rules collapse into one node. Stage 2 (`planRule`):
 * open the sources, plan every node once (output info, halo, kernel parameters) and add the final
 * cast for `outputPixelType`. Both stages collect every problem with its JSON path before throwing
 * one `EngineError` that lists them all.
 */
import { combinedError, toEngineError, type Issue } from '../core/errors.js';
import type { OutputPixelType } from '../core/pixel-type.js';
import { nearest, parseArgs } from '../graph/args.js';
import { castFunction } from '../graph/cast.js';
import { constantSource } from '../graph/memory-source.js';
import { canonicalJson, createFunctionNode } from '../graph/node.js';
import type { RasterFunction, RasterNode, Registry, SourceNode } from '../graph/types.js';
import { INVALID, parseRule, type RuleNode } from './parse.js';
import { instantiate, type TemplateStore } from './templates.js';
import { WELL_KNOWN_FUNCTIONS } from './well-known.js';

/** Where a source comes from: a reference (`$$`, `$1`, `$2101234`, a variable name) or a URL. */
export type SourceRef = { readonly kind: 'ref'; readonly name: string } | { readonly kind: 'url'; readonly url: string };

export type ResolvedNode =
  | {
      readonly kind: 'function';
      readonly id: string;
      readonly fn: RasterFunction;
      /** Scalar values by canonical name, plus each raster argument's input index (or indexes). */
      readonly values: Readonly<Record<string, unknown>>;
      readonly inputs: readonly ResolvedNode[];
      readonly outputPixelType?: OutputPixelType;
      readonly path: string;
    }
  | { readonly kind: 'source'; readonly id: string; readonly ref: SourceRef; readonly path: string }
  | { readonly kind: 'constant'; readonly id: string; readonly values: readonly number[]; readonly path: string };

export interface ResolveOptions {
  readonly registry: Registry;
  readonly templates?: TemplateStore;
}

export interface Resolution {
  readonly root: ResolvedNode | undefined;
  readonly issues: Issue[];
  readonly warnings: Issue[];
}

interface Scope {
  /** Template variables bound by the caller (lower-case names), resolved in `outer`. */
  readonly bindings?: Map<string, unknown>;
  /** What `$$` means here: inside a template, the raster the template is applied to. */
  readonly self?: unknown;
  readonly outer?: Scope;
  readonly templateDepth: number;
}

const TOP: Scope = { templateDepth: 0 };

/** Stage 1: parse (if needed) and resolve a rule. Never throws; problems come back in `issues`. */
export function resolveRule(rule: unknown, options: ResolveOptions): Resolution {
  const parsed = parseRule(rule);
  const issues = [...parsed.issues];
  const warnings = [...parsed.warnings];
  const nodes = new Map<string, ResolvedNode>();
  const intern = (n: ResolvedNode): ResolvedNode => {
    const seen = nodes.get(n.id);
    if (seen) return seen;
    nodes.set(n.id, n);
    return n;
  };

  function resolveNode(r: RuleNode, scope: Scope): ResolvedNode | undefined {
    const fn = options.registry.get(r.name);
    if (fn === undefined) {
      const template = options.templates?.get(r.name);
      if (template !== undefined) {
        if (scope.templateDepth >= 16) {
          issues.push({ code: 'LIMIT_EXCEEDED', path: r.path, message: `template ${r.name} nests templates more than 16 deep` });
          return undefined;
        }
        const { root, bindings } = instantiate(template, r);
        if (root === undefined) return undefined;
        const self = bindings.get(template.variableName.toLowerCase());
        return resolveNode(root, { bindings, self, outer: scope, templateDepth: scope.templateDepth + 1 });
      }
      issues.push({ code: 'UNKNOWN_FUNCTION', path: r.path ? `${r.path}.rasterFunction` : 'rasterFunction', message: unknownName(r.name, options) });
      // Still walk nested rules so that every problem is reported at once.
      for (const v of Object.values(r.args)) visitNested(v, scope);
      return undefined;
    }

    const parsedArgs = parseArgs(fn.args, r.args, r.argsPath);
    issues.push(...parsedArgs.issues);
    warnings.push(...parsedArgs.warnings);
    const values: Record<string, unknown> = { ...parsedArgs.values };
    const inputs: ResolvedNode[] = [];
    let ok = parsedArgs.issues.length === 0;
    for (const raster of parsedArgs.rasters) {
      const spec = fn.args[raster.name]!;
      const scalar = 'scalar' in spec && spec.scalar === true;
      if (raster.elements !== undefined) {
        const idx: number[] = [];
        for (const el of raster.elements) {
          const n = resolveRaster(el.value, el.path, scalar, scope);
          if (n === undefined) ok = false;
          else idx.push(inputs.push(n) - 1);
        }
        values[raster.name] = idx;
      } else {
        const n = resolveRaster(raster.value, raster.path, scalar, scope);
        if (n === undefined) ok = false;
        else values[raster.name] = inputs.push(n) - 1;
      }
    }
    if (!ok) return undefined;
    const id = `${fn.name}(${canonicalJson(values)};${inputs.map((i) => i.id).join(',')})${
      r.outputPixelType && r.outputPixelType !== 'UNKNOWN' ? `:${r.outputPixelType}` : ''
    }`;
    return intern({ kind: 'function', id, fn, values, inputs, outputPixelType: r.outputPixelType, path: r.path });
  }

  function resolveRaster(v: unknown, path: string, scalar: boolean, scope: Scope): ResolvedNode | undefined {
    if (v === INVALID) return undefined;
    if (isRuleNode(v)) return resolveNode(v, scope);
    if (typeof v === 'string') {
      const s = v.trim();
      if (s === '$$' && scope.self !== undefined && scope.outer !== undefined) {
        return resolveRaster(scope.self, path, scalar, scope.outer);
      }
      if (s.startsWith('$')) {
        if (!/^\$(\$|\w+)$/.test(s)) {
          issues.push({ code: 'INVALID_ARGUMENT', path, message: `bad raster reference ${JSON.stringify(v)}: expected "$$", "$<n>" or "$<id>"` });
          return undefined;
        }
        return intern({ kind: 'source', id: `src:${s}`, ref: { kind: 'ref', name: s }, path });
      }
      if (scalar && s !== '' && s.split(/[\s,]+/).every((t) => Number.isFinite(Number(t)))) {
        return constant(s.split(/[\s,]+/).map(Number), path);
      }
      const bound = lookup(scope, s);
      if (bound !== undefined) return resolveRaster(bound.value, path, scalar, bound.scope);
      if (s === '') {
        issues.push({ code: 'INVALID_ARGUMENT', path, message: 'empty raster reference' });
        return undefined;
      }
      // A named variable, bound by the caller (CLI `--input NAME=path`, a server's catalogue).
      return intern({ kind: 'source', id: `src:${s}`, ref: { kind: 'ref', name: s }, path });
    }
    if (typeof v === 'number') {
      if (scalar && Number.isFinite(v)) return constant([v], path);
      issues.push({ code: 'INVALID_ARGUMENT', path, message: `expected a raster ("$$", "$n", a nested rule or { "url": ... }), got the number ${v}` });
      return undefined;
    }
    if (Array.isArray(v)) {
      if (scalar && v.length > 0 && v.every((e) => Number.isFinite(Number(e)) && e !== '' && e !== null)) return constant(v.map(Number), path);
      issues.push({ code: 'INVALID_ARGUMENT', path, message: scalar ? 'expected a raster or an array of numbers' : 'expected one raster, got an array' });
      return undefined;
    }
    if (typeof v === 'object' && v !== null) {
      const url = Object.entries(v).find(([k]) => k.toLowerCase() === 'url')?.[1];
      if (typeof url === 'string' && url !== '') return intern({ kind: 'source', id: `url:${url}`, ref: { kind: 'url', url }, path });
    }
    issues.push({
      code: 'INVALID_ARGUMENT',
      path,
      message: `expected a raster ("$$", "$n", "$<id>", a variable name, a nested rule or { "url": ... })${scalar ? ' or numbers' : ''}, got ${JSON.stringify(v)?.slice(0, 60)}`,
    });
    return undefined;
  }

  function constant(values: number[], path: string): ResolvedNode {
    return intern({ kind: 'constant', id: `const:${JSON.stringify(values)}`, values, path });
  }

  function visitNested(v: unknown, scope: Scope): void {
    if (isRuleNode(v)) resolveNode(v, scope);
    else if (Array.isArray(v)) for (const e of v) visitNested(e, scope);
  }

  const root = parsed.root === undefined ? undefined : resolveNode(parsed.root, TOP);
  return { root: issues.length === 0 ? root : undefined, issues, warnings };
}

function lookup(scope: Scope, name: string): { value: unknown; scope: Scope } | undefined {
  for (let s: Scope | undefined = scope; s !== undefined; s = s.outer) {
    const v = s.bindings?.get(name.toLowerCase());
    if (v !== undefined) return { value: v, scope: s.outer ?? TOP };
  }
  return undefined;
}

const isRuleNode = (v: unknown): v is RuleNode =>
  typeof v === 'object' && v !== null && 'argsPath' in v && 'name' in v && 'args' in v;

function unknownName(name: string, options: ResolveOptions): string {
  const wellKnown = WELL_KNOWN_FUNCTIONS.find((w) => w.toLowerCase() === name.toLowerCase());
  if (wellKnown !== undefined) {
    return `${wellKnown} is a well-known raster function of the spec that this version of rasterflow does not provide yet`;
  }
  const names = [
    ...options.registry.list().flatMap((f) => [f.name, ...(f.aliases ?? [])]),
    ...(options.templates?.list().map((t) => t.name) ?? []),
  ];
  const near = nearest(name, names);
  return `${JSON.stringify(name)} is neither a well-known raster function nor a registered template${near ? ` (did you mean ${near}?)` : ''}`;
}

/** Opens a source for a reference; throws EngineError (IO_ERROR, INVALID_ARGUMENT) when it cannot. */
export type SourceResolver = (ref: SourceRef, path: string) => Promise<SourceNode>;

export interface BuiltGraph {
  readonly root: RasterNode;
  readonly warnings: readonly Issue[];
}

/** Stage 2: open sources and plan every node. Throws one EngineError listing every problem. */
export async function planRule(resolution: Resolution, resolveSource: SourceResolver): Promise<BuiltGraph> {
  if (resolution.root === undefined || resolution.issues.length > 0) {
    throw combinedError(resolution.issues.length > 0 ? resolution.issues : [{ code: 'INVALID_RULE', path: '', message: 'empty rule' }]);
  }
  const issues: Issue[] = [];
  const done = new Map<string, Promise<RasterNode | undefined>>();

  const plan = (n: ResolvedNode): Promise<RasterNode | undefined> => {
    let p = done.get(n.id);
    if (p === undefined) {
      p = planOne(n);
      done.set(n.id, p);
    }
    return p;
  };

  async function planOne(n: ResolvedNode): Promise<RasterNode | undefined> {
    try {
      if (n.kind === 'source') return await resolveSource(n.ref, n.path);
      if (n.kind === 'constant') return constantSource(n.values);
      const inputs = await Promise.all(n.inputs.map(plan));
      if (inputs.some((i) => i === undefined)) return undefined; // already reported below
      const node = createFunctionNode(n.fn, n.values, inputs as RasterNode[], n.path);
      if (n.outputPixelType === undefined || n.outputPixelType === 'UNKNOWN') return node;
      return createFunctionNode(castFunction, { to: n.outputPixelType, Raster: 0 }, [node], n.path);
    } catch (e) {
      const err = toEngineError(e);
      issues.push(...err.issues.map((i) => ({ ...i, path: i.path || n.path })));
      return undefined;
    }
  }

  const root = await plan(resolution.root);
  if (root === undefined || issues.length > 0) throw combinedError(issues);
  return { root, warnings: resolution.warnings };
}

/** Both stages: rule JSON -> planned DAG. */
export async function buildGraph(rule: unknown, options: ResolveOptions & { resolveSource: SourceResolver }): Promise<BuiltGraph> {
  return planRule(resolveRule(rule, options), options.resolveSource);
}

/** The canonical DAG as plain JSON (what `rasterflow validate` prints): nodes in dependency order. */
export function describeResolution(root: ResolvedNode): { root: string; nodes: Record<string, unknown>[] } {
  const order: ResolvedNode[] = [];
  const seen = new Set<string>();
  const visit = (n: ResolvedNode): void => {
    if (seen.has(n.id)) return;
    seen.add(n.id);
    if (n.kind === 'function') n.inputs.forEach(visit);
    order.push(n);
  };
  visit(root);
  const ids = new Map(order.map((n, i) => [n.id, `n${i}`]));
  const nodes = order.map((n) => {
    if (n.kind === 'source') return { id: ids.get(n.id), source: n.ref.kind === 'url' ? { url: n.ref.url } : n.ref.name };
    if (n.kind === 'constant') return { id: ids.get(n.id), constant: n.values };
    const args: Record<string, unknown> = {};
    for (const [name, spec] of Object.entries(n.fn.args)) {
      const v = n.values[name];
      if (v === undefined) continue;
      if (spec.kind === 'raster') args[name] = ids.get(n.inputs[v as number]!.id);
      else if (spec.kind === 'rasters') args[name] = (v as number[]).map((i) => ids.get(n.inputs[i]!.id));
      else args[name] = v;
    }
    return {
      id: ids.get(n.id),
      rasterFunction: n.fn.name,
      rasterFunctionArguments: args,
      ...(n.outputPixelType && n.outputPixelType !== 'UNKNOWN' ? { outputPixelType: n.outputPixelType } : {}),
    };
  });
  return { root: ids.get(root.id)!, nodes };
}

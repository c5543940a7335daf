/**
 * Rule tree -> planned DAG.
 *
 * Stage 1 (`resolveRule`, no pixels, no files): look up every function or template, parse its
 * arguments against the schema, resolve raster arguments (`$$`, `$n`, `$<id>`, named variables,
 * nested rules, arrays of rasters, `{ url }` objects, scalars where the function allows them) and
 * give each node a canonical id so equal sub-rules collapse into one node. Stage 2 (`planRule`):
 * open the sources, plan every node once (output info, halo, kernel parameters), each for its
 * rule's `outputPixelType` (the function's own output type; see RasterFunction.plan). Both
 * stages collect every problem with its JSON path before throwing one `EngineError` that lists
 * them all.
 */
import { combinedError, toEngineError, type Issue } from '../core/errors.js';
import type { OutputPixelType } from '../core/pixel-type.js';
import { closestSpelling, parseArgs } from '../graph/args.js';
import { constantSource } from '../graph/memory-source.js';
import { canonicalJson, createFunctionNode } from '../graph/node.js';
import { withNeededStatistics } from '../graph/input-statistics.js';
import { lookupKey, type FunctionNode, type RasterFunction, type RasterNode, type Registry, type SourceNode } from '../graph/types.js';
import { extractBand } from '../functions/bands/extract-band.js';
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
      /** `Rasters` arguments given as one raster whose bands are the inputs (see RawRaster.bandsOf). */
      readonly bandsOf?: readonly string[];
      /** JSON path of the arguments, for the plan's warnings. */
      readonly argsPath?: string;
    }
  | { readonly kind: 'source'; readonly id: string; readonly ref: SourceRef; readonly path: string }
  | { readonly kind: 'constant'; readonly id: string; readonly values: readonly number[]; readonly path: string };

export interface ResolveOptions {
  readonly registry: Registry;
  readonly templates?: TemplateStore;
  /** Deepest nesting of rule objects (default DEFAULT_MAX_RULE_DEPTH, 64; the server's maxRuleDepth). */
  readonly maxDepth?: number;
  /** Most raster functions the rule may expand to (default MAX_RULE_NODES; the server's maxRuleNodes). */
  readonly maxNodes?: number;
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
  /** The template this scope instantiates (its lookup name), to refuse a template that uses itself. */
  readonly template?: string;
}

/**
 * Function and template nodes one rule may resolve to, counted before equal nodes are shared.
 * Decision: 10,000, far above any real rule (the largest sample has 12) yet reached in
 * milliseconds by templates whose instances multiply (T0 using T1 four times, ..., 4^16 nodes),
 * which would otherwise run for hours (found by test/fuzz/rules.test.ts).
 */
export const MAX_RULE_NODES = 10_000;

const TOP: Scope = { templateDepth: 0 };

/** One override of a Recast: a name/value pair applied down the chain under it (functions/local/recast.ts). */
interface Override {
  /** As written. */
  readonly name: string;
  readonly value: unknown;
  readonly path: string;
  /** Where the Recast sits: override values are resolved there, as if written on the Recast. */
  readonly scope: Scope;
  readonly outer: Overrides | undefined;
  used: boolean;
}

/** The overrides in force while resolving a chain under one or more Recasts. */
interface Overrides {
  /** Lower-case name -> override; an enclosing Recast's entry replaces a nested one's. */
  readonly entries: ReadonlyMap<string, Override>;
  /** Argument and variable names met under each Recast in force (for did-you-mean warnings). */
  readonly seen: readonly Set<string>[];
}

/** Stage 1: parse (if needed) and resolve a rule. Never throws; problems come back in `issues`. */
export function resolveRule(rule: unknown, options: ResolveOptions): Resolution {
  const parsed = parseRule(rule, '', options.maxDepth === undefined ? {} : { maxDepth: options.maxDepth });
  const maxNodes = options.maxNodes ?? MAX_RULE_NODES;
  const issues = [...parsed.issues];
  const warnings = [...parsed.warnings];
  const nodes = new Map<string, ResolvedNode>();
  const intern = (n: ResolvedNode): ResolvedNode => {
    const seen = nodes.get(n.id);
    if (seen) return seen;
    nodes.set(n.id, n);
    return n;
  };

  let resolved = 0;
  function resolveNode(r: RuleNode, scope: Scope, ov: Overrides | undefined): ResolvedNode | undefined {
    const fnPath = r.path ? `${r.path}.rasterFunction` : 'rasterFunction';
    if (++resolved > maxNodes) {
      if (resolved === maxNodes + 1) {
        issues.push({
          code: 'LIMIT_EXCEEDED',
          path: fnPath,
          message: `the rule expands to more than ${maxNodes} raster functions (counting each use of a template), the most the server accepts (maxRuleNodes)`,
        });
      }
      return undefined;
    }
    const fn = options.registry.get(r.name);
    if (fn === undefined) {
      const template = options.templates?.get(r.name);
      if (template !== undefined) {
        const key = lookupKey(template.name);
        if (scope.templateDepth >= 16) {
          // A template met again on the way here is a cycle: name it (an override may nest a template
          // in itself legitimately, so only the depth limit decides).
          const chain: string[] = [];
          for (let s: Scope | undefined = scope; s !== undefined; s = s.outer) if (s.template !== undefined) chain.unshift(s.template);
          const from = chain.lastIndexOf(key);
          const names = from < 0 ? [] : [...chain.slice(from), key].map((k) => options.templates?.get(k)?.name ?? k);
          issues.push({
            code: 'LIMIT_EXCEEDED',
            path: fnPath,
            message: `template ${r.name} nests templates more than 16 deep${names.length > 0 ? `: it uses itself (${names.join(' -> ')})` : ''}`,
          });
          return undefined;
        }
        const { root, bindings } = instantiate(template, r);
        if (root === undefined) return undefined;
        const self = bindings.get(template.variableName.toLowerCase());
        return resolveNode(root, { bindings, self, outer: scope, templateDepth: scope.templateDepth + 1, template: key }, ov);
      }
      issues.push({
        code: 'UNKNOWN_FUNCTION',
        path: fnPath,
        message: unknownName(r.name, options),
      });
      // Still walk nested rules so that every problem is reported at once.
      for (const v of Object.values(r.args)) visitNested(v, scope, ov);
      return undefined;
    }

    // Recast: arguments outside its schema are overrides for the chain under its rasters.
    const own = fn.nestedOverrides ? splitOverrides(fn, r, scope, ov) : undefined;
    // Overrides in force here replace arguments of this function (see applyOverrides).
    const applied = ov && !own ? applyOverrides(fn, r, ov) : undefined;
    const parsedArgs = parseArgs(fn.args, own?.args ?? applied?.args ?? r.args, r.argsPath);
    const moved = (i: Issue): Issue => {
      const o = applied?.byPath.get(i.path);
      return o ? { ...i, path: o.path, message: `${i.message} (Recast override ${o.name}, applied at ${i.path})` } : i;
    };
    issues.push(...parsedArgs.issues.map(moved));
    warnings.push(...parsedArgs.warnings.map(moved));
    const inner = own?.overrides ?? ov;
    const values: Record<string, unknown> = { ...parsedArgs.values };
    const inputs: ResolvedNode[] = [];
    const bandsOf = parsedArgs.rasters.filter((x) => x.bandsOf === true).map((x) => x.name);
    let ok = parsedArgs.issues.length === 0;
    for (const raster of parsedArgs.rasters) {
      const spec = fn.args[raster.name]!;
      const scalar = 'scalar' in spec && spec.scalar === true;
      if (raster.elements !== undefined) {
        const idx: number[] = [];
        const o = applied?.byName.get(raster.name);
        for (const el of raster.elements) {
          const n = o
            ? resolveRaster(el.value, `${o.path}${el.path.slice(raster.path.length)}`, scalar, o.scope, o.outer)
            : resolveRaster(el.value, el.path, scalar, scope, inner);
          if (n === undefined) ok = false;
          else idx.push(inputs.push(n) - 1);
        }
        values[raster.name] = idx;
      } else {
        const o = applied?.byName.get(raster.name);
        const n = o
          ? resolveRaster(raster.value, o.path, scalar, o.scope, o.outer)
          : resolveRaster(raster.value, raster.path, scalar, scope, inner);
        if (n === undefined) ok = false;
        else values[raster.name] = inputs.push(n) - 1;
      }
    }
    if (own) warnUnused(own.mine, own.overrides);
    if (!ok) return undefined;
    const id = `${fn.name}(${canonicalJson(values)};${inputs.map((i) => i.id).join(',')})${
      r.outputPixelType && r.outputPixelType !== 'UNKNOWN' ? `:${r.outputPixelType}` : ''
    }${bandsOf.length > 0 ? `:bandsOf(${bandsOf.join(',')})` : ''}`;
    return intern({
      kind: 'function',
      id,
      fn,
      values,
      inputs,
      outputPixelType: r.outputPixelType,
      path: r.path,
      argsPath: r.argsPath,
      ...(bandsOf.length > 0 ? { bandsOf } : {}),
    });
  }

  function resolveRaster(v: unknown, path: string, scalar: boolean, scope: Scope, ov: Overrides | undefined): ResolvedNode | undefined {
    if (v === INVALID) return undefined;
    if (isRuleNode(v)) return resolveNode(v, scope, ov);
    if (typeof v === 'string') {
      const s = v.trim();
      if (s === '$$' && scope.self !== undefined && scope.outer !== undefined) {
        return resolveRaster(scope.self, path, scalar, scope.outer, ov);
      }
      if (s.startsWith('$')) {
        if (!/^\$(\$|\w+)$/.test(s)) {
          issues.push({
            code: 'INVALID_ARGUMENT',
            path,
            message: `bad raster reference ${JSON.stringify(v)}: expected "$$", "$<n>" or "$<id>"`,
          });
          return undefined;
        }
        return intern({ kind: 'source', id: `src:${s}`, ref: { kind: 'ref', name: s }, path });
      }
      if (scalar && s !== '' && s.split(/[\s,]+/).every((t) => Number.isFinite(Number(t)))) {
        return constant(s.split(/[\s,]+/).map(Number), path);
      }
      const bound = lookup(scope, s);
      if (bound !== undefined) return resolveRaster(bound.value, path, scalar, bound.scope, ov);
      if (s === '') {
        issues.push({ code: 'INVALID_ARGUMENT', path, message: 'empty raster reference' });
        return undefined;
      }
      // A named variable, bound by the caller (CLI `--input NAME=path`, a server's catalogue).
      return intern({ kind: 'source', id: `src:${s}`, ref: { kind: 'ref', name: s }, path });
    }
    if (typeof v === 'number') {
      if (scalar && Number.isFinite(v)) return constant([v], path);
      issues.push({
        code: 'INVALID_ARGUMENT',
        path,
        message: `expected a raster ("$$", "$n", a nested rule or { "url": ... }), got the number ${v}`,
      });
      return undefined;
    }
    if (Array.isArray(v)) {
      if (scalar && v.length > 0 && v.every((e) => Number.isFinite(Number(e)) && e !== '' && e !== null))
        return constant(v.map(Number), path);
      issues.push({
        code: 'INVALID_ARGUMENT',
        path,
        message: scalar ? 'expected a raster or an array of numbers' : 'expected one raster, got an array',
      });
      return undefined;
    }
    if (typeof v === 'object' && v !== null) {
      const url: unknown = Object.entries(v).find(([k]) => k.toLowerCase() === 'url')?.[1];
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

  function visitNested(v: unknown, scope: Scope, ov: Overrides | undefined): void {
    if (isRuleNode(v)) resolveNode(v, scope, ov);
    else if (Array.isArray(v)) for (const e of v) visitNested(e, scope, ov);
  }

  /** A Recast's overrides at this point, merged under the enclosing ones (which win), and its own schema arguments. */
  function splitOverrides(
    fn: RasterFunction,
    r: RuleNode,
    scope: Scope,
    outer: Overrides | undefined,
  ): { args: Record<string, unknown>; mine: Override[]; overrides: Overrides } {
    const known = new Set(Object.entries(fn.args).flatMap(([n, s]) => [n, ...(s.aliases ?? [])].map((k) => k.toLowerCase())));
    const args: Record<string, unknown> = {};
    const mine = new Map<string, Override>();
    const add = (name: string, value: unknown, path: string): void => {
      const key = name.toLowerCase();
      const prev = mine.get(key);
      if (prev)
        warnings.push({
          code: 'INVALID_ARGUMENT',
          path,
          message: `Recast override ${name} given twice (also at ${prev.path}); this one is used`,
        });
      mine.set(key, { name, value, path, scope, outer, used: false });
    };
    for (const [k, v] of Object.entries(r.args)) {
      const path = `${r.argsPath}.${k}`;
      if (known.has(k.toLowerCase())) args[k] = v;
      else if (RECAST_TABLES.includes(k.toLowerCase()) && isPlainObject(v)) {
        for (const [name, value] of Object.entries(v)) add(name, value, `${path}.${name}`);
      } else add(k, v, path);
    }
    const entries = new Map(mine);
    for (const [key, o] of outer?.entries ?? []) {
      const shadowed = entries.get(key);
      if (shadowed) shadowed.used = true; // replaced by the enclosing Recast: not unknown
      entries.set(key, o);
    }
    return { args, mine: [...mine.values()], overrides: { entries, seen: [...(outer?.seen ?? []), new Set()] } };
  }

  /** Warn about this Recast's overrides that matched nothing in its chain. */
  function warnUnused(mine: readonly Override[], overrides: Overrides): void {
    const seen = [...overrides.seen.at(-1)!];
    for (const o of mine) {
      if (o.used) continue;
      const near = closestSpelling(o.name, seen);
      warnings.push({
        code: 'INVALID_ARGUMENT',
        path: o.path,
        message: `Recast override ignored: no argument or variable named ${o.name} in the nested chain${near ? ` (did you mean ${near}?)` : ''}`,
      });
    }
  }

  const root = parsed.root === undefined ? undefined : resolveNode(parsed.root, TOP, undefined);
  return { root: issues.length === 0 ? root : undefined, issues, warnings };
}

/** Recast arguments that hold a table of overrides rather than being one (the vendor's `Arguments`). */
const RECAST_TABLES = ['arguments', 'overrides'];

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !isRuleNode(v) && !Object.keys(v).some((k) => k.toLowerCase() === 'url');

/**
 * The arguments of `fn` at `r` with the overrides in force applied: an argument written under a
 * name, alias or (long form) variable name that an override names takes the override's value; an
 * argument of the schema not written takes it too. Marks the overrides used and records the names
 * met for did-you-mean. `byPath`: argument path -> override (to point errors at the override);
 * `byName`: canonical raster argument name -> override (resolved where the Recast is).
 */
function applyOverrides(
  fn: RasterFunction,
  r: RuleNode,
  ov: Overrides,
): { args: Record<string, unknown>; byPath: Map<string, Override>; byName: Map<string, Override> } {
  const canonical = new Map<string, string>();
  for (const [name, spec] of Object.entries(fn.args)) {
    for (const k of [name, ...(spec.aliases ?? [])]) canonical.set(k.toLowerCase(), name);
  }
  for (const seen of ov.seen) {
    for (const [name, spec] of Object.entries(fn.args)) for (const k of [name, ...(spec.aliases ?? [])]) seen.add(k);
    for (const v of Object.values(r.variables ?? {})) seen.add(v);
  }
  const args: Record<string, unknown> = { ...r.args };
  const byPath = new Map<string, Override>();
  const byName = new Map<string, Override>();
  const hit = (key: string, o: Override): void => {
    o.used = true;
    args[key] = o.value;
    byPath.set(r.argsPath ? `${r.argsPath}.${key}` : key, o);
    const name = canonical.get(key.toLowerCase());
    if (name !== undefined) byName.set(name, o);
  };
  // Overrides by the canonical argument they name (through an alias too); the exact name first.
  const byCanonical = new Map<string, Override>();
  for (const [key, o] of ov.entries) {
    const name = canonical.get(key);
    if (name !== undefined && (!byCanonical.has(name) || key === name.toLowerCase())) byCanonical.set(name, o);
  }
  const written = new Set<string>();
  for (const key of Object.keys(r.args)) {
    const name = canonical.get(key.toLowerCase());
    if (name !== undefined) written.add(name);
    const variable = r.variables?.[key]?.toLowerCase();
    const o =
      ov.entries.get(key.toLowerCase()) ??
      (variable === undefined ? undefined : ov.entries.get(variable)) ??
      (name === undefined ? undefined : byCanonical.get(name));
    if (o !== undefined) hit(key, o);
  }
  for (const [name, o] of byCanonical) {
    if (!written.has(name)) hit(name, o);
  }
  return { args, byPath, byName };
}

function lookup(scope: Scope, name: string): { value: unknown; scope: Scope } | undefined {
  for (let s: Scope | undefined = scope; s !== undefined; s = s.outer) {
    const v = s.bindings?.get(name.toLowerCase());
    if (v !== undefined) return { value: v, scope: s.outer ?? TOP };
  }
  return undefined;
}

const isRuleNode = (v: unknown): v is RuleNode => typeof v === 'object' && v !== null && 'argsPath' in v && 'name' in v && 'args' in v;

function unknownName(name: string, options: ResolveOptions): string {
  const wellKnown = WELL_KNOWN_FUNCTIONS.find((w) => w.toLowerCase() === name.toLowerCase());
  if (wellKnown !== undefined) {
    return `${wellKnown} is a well-known raster function of the spec that this version of rasterflow does not provide yet`;
  }
  const names = [
    ...options.registry.list().flatMap((f) => [f.name, ...(f.aliases ?? [])]),
    ...(options.templates?.list().map((t) => t.name) ?? []),
  ];
  const near = closestSpelling(name, names);
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
    throw combinedError(
      resolution.issues.length > 0 ? resolution.issues : [{ code: 'INVALID_RULE', path: 'rasterFunction', message: 'empty rule' }],
    );
  }
  const issues: Issue[] = [];
  const warnings: Issue[] = [...resolution.warnings];
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
      const [values, ins] = n.bandsOf ? splitBands(n, inputs as RasterNode[]) : [n.values, inputs as RasterNode[]];
      // Statistics the plan needs that its inputs lack are computed first (graph/input-statistics.ts).
      const withStats = await withNeededStatistics(n.fn, values, ins);
      // outputPixelType is the function's own output type: its plan receives it (RasterFunction.plan).
      const to = n.outputPixelType === undefined || n.outputPixelType === 'UNKNOWN' ? undefined : n.outputPixelType;
      const node = createFunctionNode(n.fn, values, withStats, n.path, to);
      // The function's own node (createFunctionNode wraps it in a cast where its plan leaves the type to the engine).
      const own = node.fn === n.fn ? node : (node.inputs[0] as FunctionNode);
      warnings.push(...planWarnings(own, n.argsPath ?? n.path));
      return node;
    } catch (e) {
      const err = toEngineError(e);
      issues.push(...err.issues.map((i) => ({ ...i, path: i.path || n.path })));
      return undefined;
    }
  }

  const root = await plan(resolution.root);
  if (root === undefined || issues.length > 0) throw combinedError(issues);
  return { root, warnings };
}

/** A plan's warnings as builder warnings, at the argument they name or else at the node's arguments. */
function planWarnings(node: FunctionNode, argsPath: string): Issue[] {
  return (node.plan.warnings ?? []).map((w) => {
    const { message, arg } = typeof w === 'string' ? { message: w, arg: undefined } : w;
    return {
      code: 'INVALID_ARGUMENT' as const,
      path: arg === undefined ? argsPath : argsPath ? `${argsPath}.${arg}` : arg,
      message: `${node.fn.name}: ${message}`,
    };
  });
}

/**
 * The values and inputs of a node whose `Rasters` came as one raster (`bandsOf`): that input is
 * replaced by one ExtractBand node per band, in band order, so the function sees the bands as
 * its list of rasters, exactly as if they had been written out.
 */
function splitBands(n: ResolvedNode & { kind: 'function' }, inputs: readonly RasterNode[]): [Record<string, unknown>, RasterNode[]] {
  const values: Record<string, unknown> = { ...n.values };
  const out: RasterNode[] = [];
  for (const [name, spec] of Object.entries(n.fn.args)) {
    const v = n.values[name];
    if (v === undefined) continue;
    if (spec.kind === 'raster') values[name] = out.push(inputs[v as number]!) - 1;
    else if (spec.kind === 'rasters') {
      const idx: number[] = [];
      for (const i of v as number[]) {
        const input = inputs[i]!;
        if (!n.bandsOf!.includes(name) || input.info.bandCount === 1) {
          idx.push(out.push(input) - 1);
          continue;
        }
        for (let b = 0; b < input.info.bandCount; b++) {
          const band = createFunctionNode(
            extractBand,
            { ...parseArgs(extractBand.args, { BandIDs: [b] }, '').values, Raster: 0 },
            [input],
            n.path,
          );
          idx.push(out.push(band) - 1);
        }
      }
      values[name] = idx;
    }
  }
  return [values, out];
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

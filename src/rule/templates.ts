/**
 * Raster function templates (spec 8, rules 1-4): a named rule with defaults. A rule naming a
 * template may omit its arguments (the template's apply) or override them: an override replaces the
 * root function's argument of that name and binds the template variable of that name wherever the
 * template refers to it (a bare string raster reference, or a long-form RasterFunctionVariable).
 * The template's `variableName` (default `Raster`) is the raster it is applied to: `$$` unless the
 * caller binds it.
 */
import { combinedError } from '../core/errors.js';
import { lookupKey } from '../graph/types.js';
import { parseRule, type RuleNode } from './parse.js';

export interface Template {
  readonly name: string;
  /** The rule (short or long form) as JSON. */
  readonly rule: unknown;
  readonly variableName: string;
  readonly description?: string;
}

export interface TemplateStore {
  register(name: string, rule: unknown, options?: { variableName?: string; description?: string }): Template;
  get(name: string): Template | undefined;
  list(): readonly Template[];
}

export function createTemplates(): TemplateStore {
  const byName = new Map<string, Template>();
  return {
    register(name, rule, options = {}) {
      const parsed = parseRule(rule);
      if (parsed.issues.length > 0) throw combinedError(parsed.issues);
      const t: Template = { name, rule, variableName: options.variableName ?? 'Raster', description: options.description };
      byName.set(lookupKey(name), t);
      return t;
    },
    get: (name) => byName.get(lookupKey(name)),
    list: () => [...byName.values()],
  };
}

/** The template's rule re-rooted at `at` (so paths point into the caller's rule), with overrides merged. */
export function instantiate(t: Template, at: RuleNode): { root: RuleNode | undefined; bindings: Map<string, unknown> } {
  const parsed = parseRule(t.rule, at.path);
  const bindings = new Map<string, unknown>();
  bindings.set(t.variableName.toLowerCase(), '$$');
  for (const [k, v] of Object.entries(at.args)) bindings.set(k.toLowerCase(), v);
  const root = parsed.root;
  if (root === undefined) return { root, bindings };
  const args: Record<string, unknown> = { ...root.args };
  for (const [k, v] of Object.entries(at.args)) {
    // The raster the template is applied to is a binding, not an argument of the root function.
    if (k.toLowerCase() === t.variableName.toLowerCase()) continue;
    const same = Object.keys(args).find((a) => a.toLowerCase() === k.toLowerCase());
    if (same !== undefined) delete args[same];
    args[k] = v;
  }
  return {
    root: { ...root, args, outputPixelType: at.outputPixelType ?? root.outputPixelType, argsPath: at.argsPath },
    bindings,
  };
}

/**
 * Rendering-rule JSON -> rule tree (spec section 8 and the Resources table).
 *
 * Accepted shapes: the short form `{ rasterFunction, rasterFunctionArguments, outputPixelType,
 * variableName }` with keys in any order and any case; the long "raster function template" form
 * (`{ function: { type: "HillshadeFunction", pixelType }, arguments: { Name: { type:
 * "RasterFunctionVariable", name, value } } }`), converted to the short form the way the vendor
 * client does (spec file 1.4); nested rules wherever an argument value is a rule object, also inside
 * arrays. This stage knows nothing of the registry: it checks the rule's own structure and leaves
 * argument values to the builder. Every problem is collected, none stops the walk.
 */
import type { Issue } from '../core/errors.js';
import { parsePixelType, type OutputPixelType } from '../core/pixel-type.js';
import { closestSpelling } from '../graph/args.js';

export interface RuleNode {
  /** `rasterFunction` as written (the builder matches it case-insensitively). */
  readonly name: string;
  /** Argument values as written, except that nested rules are replaced by RuleNodes. */
  readonly args: Readonly<Record<string, unknown>>;
  readonly outputPixelType?: OutputPixelType;
  readonly variableName?: string;
  /** JSON path of this rule object ('' for the root). */
  readonly path: string;
  /** JSON path of `rasterFunctionArguments` (prefix of argument paths). */
  readonly argsPath: string;
  /** Long form: argument name -> the name of the RasterFunctionVariable it holds (what Recast overrides name). */
  readonly variables?: Readonly<Record<string, string>>;
}

export interface ParsedRule {
  readonly root: RuleNode | undefined;
  readonly issues: Issue[];
  readonly warnings: Issue[];
}

/**
 * Rule nesting (a rule object inside another's arguments) deeper than this is refused by default:
 * a guard against hostile input, not a real limit. The server's `maxRuleDepth` setting replaces it.
 */
export const DEFAULT_MAX_RULE_DEPTH = 64;

export interface ParseRuleOptions {
  /** Deepest nesting of rule objects accepted (default DEFAULT_MAX_RULE_DEPTH; the server's maxRuleDepth). */
  readonly maxDepth?: number;
}

const RULE_KEYS = ['rasterfunction', 'rasterfunctionarguments', 'outputpixeltype', 'variablename'];
/** The rule fields as written in messages. */
const RULE_FIELDS = ['rasterFunction', 'rasterFunctionArguments', 'outputPixelType', 'variableName'];
// Keys clients send next to the rule fields that carry no meaning for rendering.
const IGNORED_KEYS = ['name', 'description', 'help', 'type'];
// The JS client's RasterFunction object spells the two main fields functionName and functionArguments.
const JS_KEYS: Readonly<Record<string, string>> = { functionname: 'rasterfunction', functionarguments: 'rasterfunctionarguments' };

const isRuleObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.keys(v).some((k) => {
    const l = k.toLowerCase();
    return l === 'rasterfunction' || l === 'function' || l === 'functionname';
  });

const join = (base: string, key: string): string => (base ? `${base}.${key}` : key);

/**
 * The path of a problem with the rule as a whole (not JSON, not an object).
 * Decision: it is `rasterFunction`, the field every rule must have (the path `{}` gets too), so that
 * every rule error names a field a user can fix (found by test/fuzz/rules.test.ts).
 */
const wholeRule = (basePath: string): string => join(basePath, 'rasterFunction');

/** Argument values (arrays and objects that are not rules) nested deeper than this are refused. */
const MAX_VALUE_DEPTH = 64;

/** Whether `v` nests arrays or objects more than MAX_VALUE_DEPTH deep (iterative: the value may be 100,000 deep). */
function tooDeep(v: unknown): boolean {
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (typeof x !== 'object' || x === null) continue;
    if (d >= MAX_VALUE_DEPTH) return true;
    for (const k of Object.keys(x)) stack.push([(x as Record<string, unknown>)[k], d + 1]);
  }
  return false;
}

/** Parse a rule given as JSON text or as a value already parsed; paths start at `basePath`. */
export function parseRule(input: unknown, basePath = '', options: ParseRuleOptions = {}): ParsedRule {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_RULE_DEPTH;
  const issues: Issue[] = [];
  const warnings: Issue[] = [];
  let value = input;
  // Real clients double-encode (a JSON string holding the rule's JSON text): undo up to twice.
  for (let i = 0; i < 3 && typeof value === 'string'; i++) {
    try {
      value = JSON.parse(value);
    } catch (e) {
      issues.push({ code: 'INVALID_RULE', path: wholeRule(basePath), message: `the rule is not valid JSON: ${(e as Error).message}` });
      return { root: undefined, issues, warnings };
    }
  }
  // `{ "renderingRule": { ... } }`: the request parameter's name around the rule.
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0]!.toLowerCase() === 'renderingrule') {
      warnings.push({
        code: 'INVALID_RULE',
        path: join(basePath, keys[0]!),
        message: 'the rule was wrapped in renderingRule; the inner rule is used',
      });
      const inner = parseRule((value as Record<string, unknown>)[keys[0]!], join(basePath, keys[0]!), options);
      return { ...inner, warnings: [...warnings, ...inner.warnings] };
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    issues.push({ code: 'INVALID_RULE', path: wholeRule(basePath), message: 'a rendering rule must be a JSON object with rasterFunction' });
    return { root: undefined, issues, warnings };
  }
  const root = parseNode(value as Record<string, unknown>, basePath, 0, maxDepth, issues, warnings);
  return { root, issues, warnings };
}

function parseNode(
  obj: Record<string, unknown>,
  path: string,
  depth: number,
  maxDepth: number,
  issues: Issue[],
  warnings: Issue[],
): RuleNode | undefined {
  if (depth > maxDepth) {
    issues.push({
      code: 'LIMIT_EXCEEDED',
      path,
      message: `the rule nests raster functions more than ${maxDepth} levels deep, the most the server accepts (maxRuleDepth)`,
    });
    return undefined;
  }
  const lower = new Map<string, string>();
  for (const k of Object.keys(obj)) lower.set(k.toLowerCase(), k);
  if (!lower.has('rasterfunction') && lower.has('function')) return parseLongForm(obj, lower, path, depth, maxDepth, issues, warnings);
  // functionName / functionArguments (the JS client's object spelling) stand for the rule fields
  // they name when those are absent; beside them they are reported like any unknown field.
  const jsSpelled = new Set<string>();
  for (const [js, field] of Object.entries(JS_KEYS)) {
    const k = lower.get(js);
    if (k !== undefined && !lower.has(field)) {
      lower.set(field, k);
      jsSpelled.add(js);
    }
  }

  const fnKey = lower.get('rasterfunction');
  const name = fnKey === undefined ? undefined : obj[fnKey];
  if (typeof name !== 'string' || name.trim() === '') {
    issues.push({
      code: 'INVALID_RULE',
      path: join(path, fnKey ?? 'rasterFunction'),
      message: fnKey === undefined ? 'rasterFunction is required' : 'rasterFunction must be a non-empty string',
    });
  }
  for (const [l, k] of lower) {
    if (!RULE_KEYS.includes(l) && !IGNORED_KEYS.includes(l) && !jsSpelled.has(l)) {
      warnings.push({ code: 'INVALID_RULE', path: join(path, k), message: unknownField(k) });
    }
  }

  let outputPixelType: OutputPixelType | undefined;
  const optKey = lower.get('outputpixeltype');
  if (optKey !== undefined && obj[optKey] !== null && obj[optKey] !== undefined) {
    const raw = obj[optKey];
    outputPixelType = typeof raw === 'string' ? parsePixelType(raw) : undefined;
    if (outputPixelType === undefined) {
      issues.push({
        code: 'INVALID_RULE',
        path: join(path, optKey),
        message: `outputPixelType must be one of C128, C64, F32, F64, S16, S32, S8, U1, U16, U2, U32, U4, U8, UNKNOWN (any case), got ${JSON.stringify(raw)}`,
      });
    }
  }

  let variableName: string | undefined;
  const vnKey = lower.get('variablename');
  if (vnKey !== undefined && obj[vnKey] !== null && obj[vnKey] !== undefined) {
    if (typeof obj[vnKey] === 'string') variableName = obj[vnKey];
    else issues.push({ code: 'INVALID_RULE', path: join(path, vnKey), message: 'variableName must be a string' });
  }

  const argsKey = lower.get('rasterfunctionarguments') ?? 'rasterFunctionArguments';
  const argsPath = join(path, argsKey);
  let rawArgs = obj[argsKey];
  if (typeof rawArgs === 'string' && rawArgs.trim().startsWith('{')) {
    // Double-encoded arguments (seen from clients that stringify each field).
    try {
      rawArgs = JSON.parse(rawArgs);
      warnings.push({ code: 'INVALID_RULE', path: argsPath, message: 'rasterFunctionArguments was a JSON string; it was decoded' });
    } catch {
      // reported below as not an object
    }
  }
  const args: Record<string, unknown> = {};
  if (rawArgs !== undefined && rawArgs !== null) {
    if (typeof rawArgs !== 'object' || Array.isArray(rawArgs)) {
      issues.push({ code: 'INVALID_RULE', path: argsPath, message: 'rasterFunctionArguments must be an object' });
    } else {
      for (const [k, v] of Object.entries(rawArgs as Record<string, unknown>)) {
        args[k] = nestRules(v, join(argsPath, k), depth, maxDepth, issues, warnings);
      }
    }
  }
  if (typeof name !== 'string' || name.trim() === '') return undefined;
  return { name: name.trim(), args, outputPixelType, variableName, path, argsPath };
}

/** The warning for a field of a rule object that is not a rule field: it is ignored, and where it belongs. */
function unknownField(key: string): string {
  const field = JS_KEYS[key.toLowerCase()];
  if (field !== undefined) {
    const canonical = RULE_FIELDS[RULE_KEYS.indexOf(field)]!;
    return `${key} ignored: ${canonical} is given too, and ${canonical} is used`;
  }
  const near = closestSpelling(key, [...RULE_FIELDS, 'functionName', 'functionArguments']);
  const hint = near !== undefined ? ` (did you mean ${near}?)` : '; function arguments belong inside rasterFunctionArguments';
  return `unknown rule field ${JSON.stringify(key)} ignored${hint}`;
}

/** Replace rule objects (also inside arrays) by parsed RuleNodes; leave every other value alone. */
function nestRules(v: unknown, path: string, depth: number, maxDepth: number, issues: Issue[], warnings: Issue[]): unknown {
  if (!isRuleObject(v) && !(Array.isArray(v) && v.some(isRuleObject)) && tooDeep(v)) {
    // Every later stage (argument coercion, messages, canonical ids) may walk the value recursively.
    issues.push({ code: 'LIMIT_EXCEEDED', path, message: `argument values nested deeper than ${MAX_VALUE_DEPTH} levels are refused` });
    return INVALID;
  }
  if (isRuleObject(v)) return parseNode(v, path, depth + 1, maxDepth, issues, warnings) ?? INVALID;
  if (Array.isArray(v) && v.some(isRuleObject)) return v.map((e, i) => nestRules(e, `${path}[${i}]`, depth, maxDepth, issues, warnings));
  return v;
}

/** Marks a nested rule that failed to parse (its problems are already reported). */
export const INVALID = Symbol('invalid nested rule');

/**
 * The long template form: `function.type` without its `Function` suffix is the name,
 * `function.pixelType` the output type, and each argument's `RasterFunctionVariable` gives its
 * `value` (a variable without a value is a reference to that named variable; a dataset variable
 * without a value is the service raster).
 */
function parseLongForm(
  obj: Record<string, unknown>,
  lower: Map<string, string>,
  path: string,
  depth: number,
  maxDepth: number,
  issues: Issue[],
  warnings: Issue[],
): RuleNode | undefined {
  const fnPath = join(path, lower.get('function')!);
  const fn = obj[lower.get('function')!];
  const type = typeof fn === 'object' && fn !== null ? (fn as Record<string, unknown>).type : undefined;
  if (typeof type !== 'string' || type === '') {
    issues.push({
      code: 'INVALID_RULE',
      path: join(fnPath, 'type'),
      message: 'a template function needs a type such as "HillshadeFunction"',
    });
    return undefined;
  }
  const name = type.replace(/Function$/, '');
  const pixelType = (fn as Record<string, unknown>).pixelType;
  const outputPixelType = typeof pixelType === 'string' ? parsePixelType(pixelType) : undefined;
  const argsKey = lower.get('arguments') ?? 'arguments';
  const argsPath = join(path, argsKey);
  const raw = obj[argsKey];
  const args: Record<string, unknown> = {};
  const variables: Record<string, string> = {};
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
      if (k.toLowerCase() === 'type') continue;
      let value: unknown;
      try {
        value = variableValue(v, 0);
      } catch (e) {
        if (!(e instanceof TooDeep)) throw e;
        issues.push({
          code: 'LIMIT_EXCEEDED',
          path: join(argsPath, k),
          message: `RasterFunctionVariable values nested deeper than ${MAX_VALUE_DEPTH} levels are refused`,
        });
        continue;
      }
      args[k] = nestRules(value, join(argsPath, k), depth, maxDepth, issues, warnings);
      const variable = typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
      if (variable?.type === 'RasterFunctionVariable' && typeof variable.name === 'string' && variable.name !== '')
        variables[k] = variable.name;
    }
  }
  const vn = obj[lower.get('variablename') ?? 'variableName'];
  return {
    name,
    args,
    outputPixelType,
    variableName: typeof vn === 'string' ? vn : undefined,
    path,
    argsPath,
    ...(Object.keys(variables).length > 0 ? { variables } : {}),
  };
}

/** Thrown by variableValue for values nested deeper than MAX_VALUE_DEPTH (found by test/fuzz/rules.test.ts: a stack overflow). */
class TooDeep extends Error {}

/** A `RasterFunctionVariable`'s value: its `value`, or a reference to the variable by name. */
function variableValue(v: unknown, depth: number): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  if (depth > MAX_VALUE_DEPTH) throw new TooDeep();
  const o = v as Record<string, unknown>;
  if (o.type !== 'RasterFunctionVariable') {
    if (Array.isArray(o.elements) && o.type === 'ArgumentArray') return o.elements.map((e) => variableValue(e, depth + 1));
    return v;
  }
  if (o.value !== undefined && o.value !== null) return variableValue(o.value, depth + 1);
  // A dataset variable with no value is the raster the template is applied to: the service raster.
  if (o.isDataset === true) return '$$';
  return undefined;
}

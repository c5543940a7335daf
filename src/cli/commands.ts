/** The `rasterflow` commands, wired onto a commander program; `io` is injected so tests can run them. */
import { createReadStream, readFileSync, writeFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { EngineError, ERROR_TABLE, toEngineError, withPath, type ErrorCode, type Issue } from '../core/errors.js';
import { allocateBlock, copyInto, windowInfo, type PixelBlock } from '../core/pixel-block.js';
import { rect, type Rect } from '../core/rect.js';
import { closestSpelling, describe as describeArgs } from '../graph/args.js';
import { renderTiles, type Recipe } from '../graph/render.js';
import type { RasterNode, Registry } from '../graph/types.js';
import { parseSpatialReference, resampledOpener, targetGrid, warpNode, type WarpGridOptions, type WarpMethod } from '../graph/warp.js';
import { loadRegistry, registryFor } from '../functions/catalog.js';
import { describeResolution, planRule, resolveRule } from '../rule/build.js';
import {
  describeRaster,
  encodeAs,
  formatOfPath,
  openerScope,
  outsizeOpener,
  writeGeoreferenceSidecars,
  type OutputFormat,
  type Outsize,
} from '../io/index.js';
import { parseCreationOptions } from '../io/tiff-options.js';
import { fitTileCacheToPass } from '../io/tile-cache.js';
import { writeTiffStream } from '../io/tiff-stream-writer.js';
import { bindSources } from '../rule/sources.js';
import { createPool } from '../workers/pool.js';
import type { ExportSummary } from '../chipper/export.js';
import type { QueueClient } from '../queue/worker.js';

export interface CliIo {
  /** Data: JSON listings, `info`, `validate`'s DAG. One line per call. */
  readonly out: (s: string) => void;
  /** Everything else: summaries, warnings, errors. One line per call. */
  readonly err: (s: string) => void;
  /** Whether stderr is a terminal (progress bars are drawn only then). */
  readonly isTTY: boolean;
  /** Raw stderr writes for the progress bar (no newline added); default process.stderr. */
  readonly progress?: (s: string) => void;
  /** How long a command runs before its progress bar appears (default 1000 ms). */
  readonly progressAfterMs?: number;
  /** Where `--output -` writes the image (default process.stdout). */
  readonly stdout?: NodeJS.WritableStream & { readonly isTTY?: boolean };
  /** Aborted on SIGINT / SIGTERM: the running render or export stops and removes its partial output. */
  readonly signal?: AbortSignal;
  /**
   * Called by a command that stops cleanly on its own when `signal` aborts (`serve` drains its
   * requests): the first signal then only aborts `signal`, the command's normal end exits 0, and a
   * second signal exits at once.
   */
  readonly stopsGracefully?: () => void;
}

/**
 * A command-line usage error (bad option value and the like): printed as every error,
 * `error INVALID_ARGUMENT at OPTION: message`, but exit status 2.
 */
class UsageError extends EngineError {
  constructor(path: string, message: string, code: ErrorCode = 'INVALID_ARGUMENT') {
    super(code, message, { path });
  }
}

/** Re-throw an option parser's EngineError as a usage error (exit 2). */
function asUsage<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof EngineError && !(e instanceof UsageError)) throw new UsageError(e.path ?? '', e.message);
    throw e;
  }
}

const issueLine = (i: Issue): string => `error ${i.code}${i.path ? ` at ${i.path}` : ''}: ${i.message}`;

/** A commander parse error in the `error CODE at PATH: message` form. */
function commanderLines(e: CommanderError): string[] {
  if (e.exitCode === 0) return [];
  const text = e.message.replace(/^error:\s*/, '');
  const quoted = /'([^']+)'/.exec(text)?.[1] ?? '';
  const suggestion = /\(Did you mean (.+?)\?\)/.exec(text)?.[1];
  const dym = suggestion ? `; did you mean ${suggestion}?` : '';
  const optionPath = (flags: string): string => /--([\w-]+)/.exec(flags)?.[1] ?? flags.replace(/^-+/, '');
  switch (e.code) {
    case 'commander.unknownOption':
      return [
        issueLine({
          code: 'INVALID_ARGUMENT',
          path: optionPath(quoted),
          message: `unknown option ${quoted}${dym}${dym ? '' : ' (--help lists the options)'}`,
        }),
      ];
    case 'commander.unknownCommand':
      return [
        issueLine({
          code: 'INVALID_ARGUMENT',
          path: 'command',
          message: `unknown command ${quoted}${dym}${dym ? '' : ' (rasterflow --help lists the commands)'}`,
        }),
      ];
    case 'commander.optionMissingArgument':
      return [issueLine({ code: 'INVALID_ARGUMENT', path: optionPath(quoted), message: `option ${quoted} needs a value` })];
    case 'commander.missingMandatoryOptionValue':
      return [issueLine({ code: 'INVALID_ARGUMENT', path: optionPath(quoted), message: `required option ${quoted} is missing` })];
    case 'commander.missingArgument':
      return [issueLine({ code: 'INVALID_ARGUMENT', path: quoted, message: `missing argument <${quoted}>` })];
    case 'commander.excessArguments':
      return [issueLine({ code: 'INVALID_ARGUMENT', path: 'arguments', message: text.replace(/\.$/, '') })];
    case 'commander.help':
      return [issueLine({ code: 'INVALID_ARGUMENT', path: 'command', message: 'a command is required (the list is above)' })];
    default:
      return [issueLine({ code: 'INVALID_ARGUMENT', path: '', message: text.split('\n').join('; ') })];
  }
}

/** The lines printed for anything a command throws: one per problem, never a stack trace unless RASTERFLOW_DEBUG. */
export function formatError(e: unknown): string[] {
  if (e instanceof CommanderError) return commanderLines(e);
  const engineError = toEngineError(e);
  const lines = engineError.issues.map(issueLine);
  if (process.env.RASTERFLOW_DEBUG && e instanceof Error) lines.push(e.stack ?? '');
  else if (engineError.code === 'INTERNAL' && !(e instanceof EngineError)) lines.push('(set RASTERFLOW_DEBUG=1 for the stack trace)');
  return lines;
}

/** Exit status: 0 for help and version, 2 for usage errors, 1 for every other error. */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
  return e instanceof UsageError ? 2 : ERROR_TABLE[toEngineError(e).code].exitStatus;
}

/** `--rule` takes a file path or inline JSON. */
function readRule(value: string): string {
  const t = value.trim();
  if (t.startsWith('{') || t.startsWith('[') || t.startsWith('"')) return t;
  try {
    return readFileSync(value, 'utf8');
  } catch (e) {
    throw new EngineError('IO_ERROR', `cannot read the rule file ${value}: ${(e as Error).message}`, { path: 'rule' });
  }
}

/** `chip <params>` takes a file path or inline JSON. */
function readChipParams(value: string): string {
  const t = value.trim();
  if (t.startsWith('{')) return t;
  try {
    return readFileSync(value, 'utf8');
  } catch (e) {
    throw new EngineError('IO_ERROR', `cannot read the parameters file ${value}: ${(e as Error).message}`, { path: 'params' });
  }
}

/** `--input path` binds `$$`/`$1`, then `$2`, ...; `--input NAME=path` binds a named variable. */
function parseInputs(values: readonly string[]): Map<string, string> {
  const bound = new Map<string, string>();
  let n = 0;
  for (const v of values) {
    const named = /^([A-Za-z_$][\w$]*)=(.+)$/.exec(v);
    if (named && !/^[A-Za-z]:[\\/]/.test(v)) {
      bound.set(named[1]!, named[2]!);
    } else {
      n++;
      if (n === 1) bound.set('$$', v);
      bound.set(`$${n}`, v);
    }
  }
  return bound;
}

/**
 * `--outsize W,H` as GDAL's `-outsize`: each a pixel count or a percentage of the first input's
 * size (`50%`); 0 for one of them keeps the aspect ratio.
 */
function parseOutsize(s: string, base: { width: number; height: number }): { width: number; height: number } {
  const bad = (): EngineError =>
    new UsageError('outsize', `--outsize must be width,height in pixels or percentages (e.g. 1024,0 or 25%,25%), got ${s}`);
  const parts = s.split(',').map((p) => p.trim());
  if (parts.length !== 2) throw bad();
  const [w, h] = parts.map((p, i) => {
    const full = i === 0 ? base.width : base.height;
    const m = /^(\d+(?:\.\d+)?)%$/.exec(p);
    if (m) return Math.max(1, Math.round((Number(m[1]) / 100) * full));
    if (!/^\d+$/.test(p)) throw bad();
    return Number(p);
  }) as [number, number];
  if (w === 0 && h === 0) throw bad();
  if (w === 0) return { width: Math.max(1, Math.round((h * base.width) / base.height)), height: h };
  if (h === 0) return { width: w, height: Math.max(1, Math.round((w * base.height) / base.width)) };
  return { width: w, height: h };
}

function parseWindow(s: string): Rect {
  const parts = s.split(',').map((p) => Number(p.trim()));
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p)) || parts[2]! <= 0 || parts[3]! <= 0) {
    throw new UsageError('window', `--window must be x,y,width,height in whole pixels, got ${s}`);
  }
  return rect(parts[0]!, parts[1]!, parts[2]!, parts[3]!);
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/** gdalwarp's `-te xmin ymin xmax ymax`, `-tr xres yres`, `-ts w h`: `count` numbers, as separate words or one comma list. */
function parseNumbers(values: readonly string[], count: number, name: string, shape: string): number[] {
  const parts = (values.length === 1 ? values[0]!.split(',') : values).map((v) => v.trim());
  const nums = parts.map(Number);
  if (parts.length !== count || parts.some((p) => p === '') || nums.some((n) => !Number.isFinite(n))) {
    throw new UsageError(name, `--${name} takes ${shape}, got ${values.join(' ')}`);
  }
  return nums;
}

const RESAMPLING: Readonly<Record<string, WarpMethod>> = { near: 'nearest', nearest: 'nearest', bilinear: 'bilinear', cubic: 'cubic' };

function parseResampling(v: string): WarpMethod {
  const m = RESAMPLING[v.trim().toLowerCase()];
  if (m) return m;
  throw new UsageError('r', `-r must be near, bilinear or cubic, got ${v}`);
}

/** A usage error at `option` for what an engine check refused (its message kept). */
function asOption<T>(option: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    const err = toEngineError(e);
    if (err.code !== 'INVALID_ARGUMENT') throw e;
    throw new UsageError(option, err.message.startsWith(`${option}: `) ? err.message.slice(option.length + 2) : err.message);
  }
}

interface WarpOptions {
  readonly t_srs?: string;
  readonly te?: string[];
  readonly te_srs?: string;
  readonly tr?: string[];
  readonly ts?: string[];
}

/** The CLI's gdalwarp options, checked before anything is read; undefined when none is given. */
function parseWarpOptions(o: WarpOptions): { to?: ReturnType<typeof parseSpatialReference>; grid: WarpGridOptions } | undefined {
  if (o.t_srs === undefined && o.te === undefined && o.te_srs === undefined && o.tr === undefined && o.ts === undefined) return undefined;
  const to = o.t_srs === undefined ? undefined : asOption('t_srs', () => parseSpatialReference(o.t_srs, 't_srs'));
  const teSrs = o.te_srs === undefined ? undefined : asOption('te_srs', () => parseSpatialReference(o.te_srs, 'te_srs'));
  if (teSrs !== undefined && o.te === undefined) throw new UsageError('te_srs', '--te_srs needs --te');
  if (o.tr !== undefined && o.ts !== undefined) throw new UsageError('ts', '--tr and --ts cannot be used together');
  const te = o.te === undefined ? undefined : parseNumbers(o.te, 4, 'te', 'xmin ymin xmax ymax');
  if (te !== undefined && !(te[2]! > te[0]! && te[3]! > te[1]!)) {
    throw new UsageError('te', `--te takes xmin ymin xmax ymax with xmin < xmax and ymin < ymax, got ${o.te!.join(' ')}`);
  }
  const tr = o.tr === undefined ? undefined : parseNumbers(o.tr, 2, 'tr', 'xres yres (positive numbers)');
  if (tr !== undefined && !(tr[0]! > 0 && tr[1]! > 0))
    throw new UsageError('tr', `--tr takes two positive numbers, got ${o.tr!.join(' ')}`);
  const ts = o.ts === undefined ? undefined : parseNumbers(o.ts, 2, 'ts', 'width height in pixels (0 for one keeps the aspect ratio)');
  if (ts !== undefined && !(ts.every((v) => Number.isInteger(v) && v >= 0) && ts[0]! + ts[1]! > 0)) {
    throw new UsageError(
      'ts',
      `--ts takes width height in whole pixels (0 for one of them keeps the aspect ratio), got ${o.ts!.join(' ')}`,
    );
  }
  const grid: WarpGridOptions = {
    ...(te ? { te: { xmin: te[0]!, ymin: te[1]!, xmax: te[2]!, ymax: te[3]! } } : {}),
    ...(teSrs ? { teSrs } : {}),
    ...(tr ? { tr: [tr[0]!, tr[1]!] as const } : {}),
    ...(ts ? { ts: [ts[0]!, ts[1]!] as const } : {}),
  };
  return { ...(to ? { to } : {}), grid };
}

/**
 * A progress bar on stderr for renders that take more than a second, on a terminal only:
 * `[#####....]  42% 1234/2916 tiles`, redrawn when the percentage changes.
 */
function progressBar(
  io: CliIo,
  total: number,
  started: number,
): { tick(): void; show(done: number, of: number, label: string): void; done(): void } {
  let count = 0;
  let drawn = -1;
  const write = io.progress ?? ((s: string) => void process.stderr.write(s));
  const show = (done: number, of: number, label: string): void => {
    if (!io.isTTY || Date.now() - started < (io.progressAfterMs ?? 1000)) return;
    const percent = Math.floor((100 * done) / Math.max(1, of));
    if (percent === drawn) return;
    drawn = percent;
    const bar = '#'.repeat(Math.round(percent / 4)).padEnd(25, '.');
    // Straight to the terminal: io.err ends every message with a newline.
    write(`\r[${bar}] ${String(percent).padStart(3)}% ${label}`);
  };
  return {
    tick() {
      count++;
      show(count, total, `${count}/${total} tiles`);
    },
    show,
    done() {
      if (drawn >= 0) write('\n');
      drawn = -1;
    },
  };
}

/**
 * Default `--max-pixels` for GeoTIFF outputs, counted as output width x height: 2^31, the pixel
 * count of a 46341 x 46341 image (a whole Landsat path/row at 30 m is 7800 x 7600, a Sentinel-2
 * tile at 10 m 10980 x 10980). A streamed GeoTIFF holds only the tiles in flight, so memory does not
 * call for less; the limit is there to stop a slip (`--outsize 1000000,1000000`, 10^12 pixels)
 * before hours of work and terabytes of output. Tile servers use far lower limits (an image
 * service's maxImageWidth x maxImageHeight is 4100 x 15000) because they answer interactive
 * requests; a CLI also runs batch jobs.
 */
const DEFAULT_MAX_PIXELS = 2 ** 31;
/**
 * Default for PNG and JPEG outputs, which are encoded from the whole image in memory: 2^28
 * (16384 x 16384), about 1 GiB for four U8 bands before the encoder's own buffers.
 */
const DEFAULT_MAX_PIXELS_IN_MEMORY = 2 ** 28;

function parseMaxPixels(v: string): number {
  const n = Number(v.replace(/_/g, ''));
  if (!Number.isSafeInteger(n) || n < 0)
    throw new UsageError('max-pixels', `--max-pixels must be a whole number of pixels (0: no limit), got ${v}`);
  return n;
}

/** LIMIT_EXCEEDED before any pixel work when the output has more pixels than allowed. */
export function checkOutputSize(width: number, height: number, limit: number, path: string): void {
  const pixels = width * height;
  if (limit > 0 && pixels > limit) {
    throw new EngineError(
      'LIMIT_EXCEEDED',
      `the output would be ${width}x${height} = ${pixels.toLocaleString('en-US')} pixels, over the limit of ${limit.toLocaleString('en-US')} (raise it with --max-pixels N; 0 turns the check off)`,
      { path },
    );
  }
}

/** GDAL driver names for `--format` (`-of`), case-insensitive, with the extensions as aliases. */
const FORMATS: Readonly<Record<string, OutputFormat>> = { gtiff: 'tiff', tif: 'tiff', tiff: 'tiff', png: 'png', jpeg: 'jpeg', jpg: 'jpeg' };
const FORMAT_NAMES: Readonly<Record<OutputFormat, string>> = { tiff: 'GTiff', png: 'PNG', jpeg: 'JPEG' };

function parseFormat(v: string): OutputFormat {
  const f = FORMATS[v.trim().toLowerCase()];
  if (f) return f;
  const guess = closestSpelling(v, ['GTiff', 'PNG', 'JPEG']);
  throw new UsageError('format', `--format must be GTiff, PNG or JPEG, got ${v}${guess ? `; did you mean ${guess}?` : ''}`);
}

function parseCount(v: string, name: string, min: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(name, `--${name} must be a whole number from ${min}, got ${v}`);
  return n;
}

function parsePort(v: string, name: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(name, `--${name} must be a port number from 0 to 65535, got ${v}`);
  return n;
}

/**
 * Options that must be given, checked after commander has looked for unknown options, so that a
 * mistyped `--ouput x.tif` is reported as the unknown option it is, not as a missing `--output`.
 */
function requireOptions(cmd: Command, ...names: string[]): Command {
  return cmd.hook('preAction', (_parent, action) => {
    for (const name of names) {
      const option = action.options.find((o) => o.long === `--${name}`)!;
      if (action.getOptionValue(option.attributeName()) === undefined) {
        throw new UsageError(name, `${action.name()} needs ${option.flags} (rasterflow ${action.name()} --help lists the options)`);
      }
    }
  });
}

/**
 * Resolve a rule (JSON text) loading only the functions it names (catalog.ts `registryFor`): a
 * render compiles about half the engine's code. A rule that does not resolve so (a template or an
 * unknown name, a syntax error) is resolved again with every function, so its errors are the same.
 */
async function resolveCompiling(rule: string): Promise<ReturnType<typeof resolveRule>> {
  const first = resolveRule(rule, { registry: await registryFor(rule) });
  return first.root !== undefined && first.issues.length === 0 ? first : resolveRule(rule, { registry: await loadRegistry() });
}

/** Resolve a function name as `rasterflow functions NAME` takes it: any case, aliases, `...Function`. */
function findFunction(registry: Registry, name: string) {
  const fn = registry.get(name) ?? registry.get(name.replace(/function$/i, ''));
  if (fn) return fn;
  const names = registry.list().flatMap((f) => [f.name, ...(f.aliases ?? [])]);
  const guess = closestSpelling(name, names) ?? closestSpelling(name.replace(/function$/i, ''), names);
  throw new UsageError(
    'name',
    `no raster function is named ${JSON.stringify(name)}${guess ? `; did you mean ${guess}?` : ''} (rasterflow functions lists them)`,
    'UNKNOWN_FUNCTION',
  );
}

/** One argument's type in words: `number 0..90`, `enum`, `raster (required)`. */
function describeKind(a: Record<string, unknown>): string {
  const kind = String(a.kind);
  // min, max and minLength are numbers (ArgSpec); anything else prints as absent.
  const num = (v: unknown): string => (typeof v === 'number' ? String(v) : '');
  const range = a.min !== undefined || a.max !== undefined ? ` ${num(a.min)}..${num(a.max)}` : '';
  switch (kind) {
    case 'raster':
      return a.default === '$$'
        ? 'raster (default: the input raster $$)'
        : a.optional
          ? 'raster (optional)'
          : `raster (required)${a.scalar ? ' or number' : ''}`;
    case 'rasters':
      return `list of rasters${a.minLength ? ` (at least ${num(a.minLength)})` : ''}${a.default === '$$' ? ' (default: [$$])' : ''}`;
    case 'numbers':
      return `list of ${a.integer ? 'integers' : 'numbers'}${a.minLength ? ` (at least ${num(a.minLength)})` : ''}`;
    case 'strings':
      return 'list of strings';
    case 'int':
      return `integer${range}`;
    case 'json':
      return `JSON${a.optional ? ' (optional)' : ''}`;
    default:
      return `${kind}${range}`;
  }
}

/** The full help of one function, as `rasterflow functions NAME` prints it. */
function functionHelp(registry: Registry, name: string): { lines: string[]; json: Record<string, unknown> } {
  const f = findFunction(registry, name);
  const args = describeArgs(f.args);
  const json = {
    name: f.name,
    aliases: f.aliases ?? [],
    family: f.family,
    summary: f.summary,
    variableName: f.variableName ?? 'Raster',
    verification: f.verification,
    arguments: args,
  };
  const lines = [`${f.name}${f.aliases?.length ? ` (also ${f.aliases.join(', ')})` : ''} [${f.family}]: ${f.summary}`];
  lines.push(
    `  variableName: ${json.variableName}`,
    `  verification: ${String(f.verification)}`,
    '',
    'Arguments (names match in any case):',
  );
  for (const a of args) {
    const also = Array.isArray(a.aliases) && a.aliases.length ? ` (also ${(a.aliases as string[]).join(', ')})` : '';
    const dflt = a.default !== undefined && a.kind !== 'raster' && a.kind !== 'rasters' ? `, default ${JSON.stringify(a.default)}` : '';
    lines.push(`  ${String(a.name)}${also}: ${describeKind(a)}${dflt}`);
    if (a.kind === 'enum') {
      const names = (a.names ?? {}) as Record<string, number>;
      const values = (a.values as number[]).map((v) => {
        const spelled = Object.entries(names)
          .filter(([, c]) => c === v)
          .map(([n]) => n);
        return `${v}${spelled.length ? ` ${spelled.join('|')}` : ''}`;
      });
      lines.push(`      values: ${values.join(', ')}`);
    } else if (a.kind === 'string' && Array.isArray(a.values)) {
      lines.push(`      values: ${(a.values as string[]).join(', ')}`);
    }
    lines.push(`      ${String(a.doc)}`);
  }
  return { lines, json };
}

/** After SIGINT / SIGTERM: the ABORTED error a command ends with, saying what became of its output. */
function interrupted(io: CliIo, e: unknown, outcome: string): unknown {
  if (!io.signal?.aborted) return e;
  const reason = io.signal.reason instanceof Error ? io.signal.reason.message : 'interrupted';
  return new EngineError('ABORTED', `${reason}; ${outcome}`, { cause: e });
}

/** Write bytes to a stream (stdout for `--output -`) and wait until they are handed over. */
function writeTo(stream: NodeJS.WritableStream, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(bytes, (e) => (e ? reject(e) : resolve()));
  });
}

/** The closing line of `chip`, the same for a local and a queued export. */
function chipSummary(summary: ExportSummary, ms: number): string {
  const s = summary.skipped;
  return (
    `${summary.dryRun ? 'would write' : 'wrote'} ${summary.chips} chips (indexes ${summary.firstIndex}..${summary.nextIndex - 1}) with ${summary.labels} labels ` +
    `from ${summary.candidates} candidates to ${summary.outputLocation}; skipped: ${s.noLabels} without labels, ${s.outsideMask} outside the mask, ` +
    `${s.noData} with too much NoData, ${s.emptyRatio} over the empty-chip ratio; ${summary.labelsOutsideRaster} label(s) entirely outside the raster; ` +
    `${(summary.bytes / 1048576).toFixed(1)} MiB` +
    `${summary.dryRun ? ' (uncompressed estimate)' : ''} in ${ms} ms`
  );
}

export function run(program: Command, io: CliIo): Command {
  // Set before the commands are added: subcommands inherit them. Commander's own messages are
  // replaced by the `error CODE at PATH: message` lines of formatError (main.ts).
  program.exitOverride();
  program.configureOutput({
    writeOut: (s) => io.out(s.trimEnd()),
    writeErr: (s) => io.err(s.trimEnd()),
    outputError: () => undefined,
  });
  program.name('rasterflow').description('Raster functions from rendering-rule JSON, evaluated tile by tile.').version('0.1.0');

  const renderCommand = program
    .command('render')
    .description('render a rule over GeoTIFF inputs to a GeoTIFF, PNG or JPEG (a file, or stdout with --output -)')
    .option('--rule <file|json>', 'rendering rule: a JSON file or inline JSON (required)')
    .option('--input <[NAME=]path>', 'input raster; first is $$ and $1, next $2, ...; NAME=path binds a variable', collect, [])
    .option(
      '--output <path>',
      'output file; the extension picks the format (.tif, .png, .jpg); - writes to stdout (with --format) (required)',
    )
    .option('--format <name>', 'output format, GDAL driver names: GTiff, PNG or JPEG (alias -of); default from the --output extension')
    .option('--window <x,y,w,h>', 'output window in pixels of the output grid')
    .option('--t_srs <srs>', "warp the rule's output to this spatial reference, as gdalwarp -t_srs: EPSG:n, a wkid or Esri JSON")
    .option('--te <xmin ymin xmax ymax...>', 'warp: output extent, as gdalwarp -te (in the --t_srs, or in --te_srs)')
    .option('--te_srs <srs>', 'warp: the spatial reference --te is given in (default the target one)')
    .option('--tr <xres yres...>', 'warp: output resolution, as gdalwarp -tr (not with --ts)')
    .option('--ts <width height...>', 'warp: output size in pixels, as gdalwarp -ts; 0 for one keeps the aspect ratio')
    .option(
      '-r, --resampling <method>',
      'resampling of the warp (--t_srs/--te/--tr/--ts) and of --outsize: near, bilinear or cubic (default near: --outsize then reads from overviews as gdal_translate does)',
    )
    .option(
      '--outsize <w,h>',
      'output size, as gdal_translate -outsize: pixels or percentages (0 keeps the aspect ratio); inputs are read from their overviews',
    )
    .option(
      '--max-pixels <n>',
      `refuse outputs of more pixels (width x height) than this before any work; default ${DEFAULT_MAX_PIXELS} (2^31) for GeoTIFF, ${DEFAULT_MAX_PIXELS_IN_MEMORY} (2^28) for PNG and JPEG, which are encoded in memory; 0: no limit`,
    )
    .addOption(
      new Option(
        '--tile <n>',
        "tile size in pixels (default: the GeoTIFF output's block size when its blocks are square, else 256)",
      ).argParser((v) => v),
    )
    .option('--quality <q>', 'JPEG quality 1-100', '90')
    .option('--workers <n>', 'worker threads for tiles (0: inline)', '0')
    .option(
      '--queue <url>',
      "render on the job queue (redis://host:port): rasterflow worker processes render bands of rows, this process writes them; the output is the same (workers must see the inputs and the output's folder)",
    )
    .option('--band-rows <n>', 'with --queue: rows per band a worker takes, a multiple of the tile size (default about 4 MiB of pixels)')
    .option(
      '--co <NAME=VALUE>',
      'GeoTIFF creation option, GDAL names (repeatable): COMPRESS=DEFLATE|NONE, PREDICTOR=1|2|3 (default 2 integers, 3 floats), ZLEVEL 1-12 (default 1), TILED, BLOCKXSIZE, BLOCKYSIZE, ' +
        "BIGTIFF=YES|NO|IF_NEEDED|IF_SAFER, NBITS, COG=YES, OVERVIEWS=AUTO|NONE, OVERVIEW_COUNT, OVERVIEW_RESAMPLING=AVERAGE|NEAREST, STATISTICS=YES|NO (default YES: the written pixels' statistics)",
      collect,
      [],
    );
  requireOptions(renderCommand, 'rule', 'output').action(
    async (o: {
      rule: string;
      input: string[];
      output: string;
      format?: string;
      window?: string;
      outsize?: string;
      t_srs?: string;
      te?: string[];
      te_srs?: string;
      tr?: string[];
      ts?: string[];
      resampling?: string;
      maxPixels?: string;
      tile?: string;
      quality: string;
      workers: string;
      queue?: string;
      bandRows?: string;
      co: string[];
    }) => {
      // Every option value is checked before anything is read.
      const toStdout = o.output === '-';
      if (toStdout && o.format === undefined)
        throw new UsageError('format', '--output - writes the image to stdout: name its format with --format GTiff, PNG or JPEG');
      const format = o.format !== undefined ? parseFormat(o.format) : asUsage(() => formatOfPath(o.output));
      // As gzip -c does: image bytes are not written to a terminal.
      if (toStdout && (io.stdout ?? process.stdout).isTTY === true) {
        throw new UsageError(
          'output',
          `--output - would write ${FORMAT_NAMES[format]} bytes to the terminal: redirect stdout (> out.${format === 'tiff' ? 'tif' : format === 'png' ? 'png' : 'jpg'}) or pipe it`,
        );
      }
      if (o.co.length > 0 && format !== 'tiff') throw new UsageError('co', '--co creation options apply to GeoTIFF outputs only');
      const creation = asUsage(() => parseCreationOptions(o.co));
      const quality = parseCount(o.quality, 'quality', 1);
      if (quality > 100) throw new UsageError('quality', `--quality must be a whole number from 1 to 100, got ${o.quality}`);
      const workers = parseCount(o.workers, 'workers', 0);
      if (o.queue !== undefined && workers > 0)
        throw new UsageError('workers', '--workers and --queue exclude each other: queue workers render the tiles');
      if (o.bandRows !== undefined && o.queue === undefined) throw new UsageError('band-rows', '--band-rows applies to --queue');
      const bandRows = o.bandRows === undefined ? undefined : parseCount(o.bandRows, 'band-rows', 1);
      const queueUrl = o.queue;
      const queue =
        queueUrl === undefined ? undefined : await import('../queue/connection.js').then((m) => asUsage(() => m.parseQueueUrl(queueUrl)));
      const maxPixels =
        o.maxPixels === undefined ? (format === 'tiff' ? DEFAULT_MAX_PIXELS : DEFAULT_MAX_PIXELS_IN_MEMORY) : parseMaxPixels(o.maxPixels);
      const window = o.window === undefined ? undefined : parseWindow(o.window);
      const warp = parseWarpOptions(o);
      const method = o.resampling === undefined ? undefined : parseResampling(o.resampling);
      if (warp !== undefined && o.outsize !== undefined) {
        throw new UsageError('outsize', '--outsize resizes the inputs; with --t_srs/--te/--tr/--ts give the output size with --ts');
      }
      if (method !== undefined && warp === undefined && o.outsize === undefined) {
        throw new UsageError('r', '-r applies to a warp (--t_srs, --te, --tr or --ts) or to --outsize');
      }
      // Render tiles the size of the output's TIFF blocks: each tile is then encoded as it comes
      // (tiff-stream-writer.ts), without gathering rows of blocks. The output does not depend on it.
      const blockW = creation.blockWidth ?? 256;
      const blockH = creation.blockHeight ?? blockW;
      const tile =
        o.tile === undefined
          ? format === 'tiff' && creation.tiled !== false && blockW === blockH
            ? blockW
            : 256
          : parseCount(o.tile, 'tile', 1);
      if (bandRows !== undefined && bandRows % tile !== 0) {
        throw new UsageError('band-rows', `rows per band must be a whole multiple of the tile height ${tile}, got ${bandRows}`);
      }
      const rule = readRule(o.rule);
      const resolution = await resolveCompiling(rule);
      for (const w of resolution.warnings) io.err(`warning: ${withPath(w)}`);
      const inputs = parseInputs(o.input);
      const signal = io.signal;
      // The rasters this command opens are closed when it ends (it also runs in-process).
      const files = openerScope();
      let scratch: string | undefined;
      let client: QueueClient | undefined;
      try {
        // --outsize: every input read downsampled, the first one (`$$`) at the given size.
        let outsize: Outsize | undefined;
        if (o.outsize !== undefined) {
          const first = inputs.get('$$') ?? [...inputs.values()][0];
          if (first === undefined) throw new UsageError('outsize', '--outsize needs an --input');
          const { width: baseWidth, height: baseHeight } = (await files.open(first, { id: first })).info;
          outsize = { ...parseOutsize(o.outsize, { width: baseWidth, height: baseHeight }), baseWidth, baseHeight };
          checkOutputSize(outsize.width, outsize.height, maxPixels, 'outsize');
        }
        // -r bilinear|cubic: --outsize resamples through the warp kernels (gdalwarp -ts); near
        // (the default) keeps GDAL's RasterIO nearest from the overviews.
        const outsizeMethod = outsize && method !== undefined && method !== 'nearest' ? method : undefined;
        const open = outsize
          ? outsizeMethod
            ? resampledOpener(files.open, outsize, outsizeMethod)
            : outsizeOpener(files.open, outsize)
          : files.open;
        const hint = (name: string): string => `bind it with --input ${name.startsWith('$') ? 'PATH' : `${name}=PATH`}`;
        const built = await planRule(resolution, bindSources(inputs, open, { hint }));
        let root: RasterNode = built.root;
        // --t_srs/--te/--tr/--ts: the rule's output warped onto gdalwarp's grid for those options.
        let warpRecipe: Recipe['warp'];
        if (warp !== undefined) {
          const to = warp.to ?? root.info.spatialReference;
          if (to === undefined) throw new UsageError('t_srs', "the rule's output has no spatial reference: name the target with --t_srs");
          let grid;
          try {
            grid = targetGrid(root.info, to, warp.grid);
          } catch (e) {
            const err = toEngineError(e);
            if (err.code !== 'INVALID_ARGUMENT') throw e;
            // targetGrid names gdalwarp's options (te, te_srs, tr, ts); the raster's own failures are the target's.
            throw new UsageError(err.path === undefined || err.path === 'spatialReference' ? 't_srs' : err.path, err.message);
          }
          checkOutputSize(grid.width, grid.height, maxPixels, warp.grid.ts ? 'ts' : warp.grid.tr ? 'tr' : 'te');
          warpRecipe = { grid, method: method ?? 'nearest' };
          root = warpNode(root, grid, warpRecipe.method);
        }
        // Warnings found while planning (values that cannot take effect), after the rule's own.
        for (const w of built.warnings.slice(resolution.warnings.length)) io.err(`warning: ${withPath(w)}`);
        const info = window === undefined ? root.info : windowInfo(root.info, window);
        // Before any pixel work (request statistics, tiles): the size of what would be written.
        checkOutputSize(info.width, info.height, maxPixels, window ? 'window' : outsize ? 'outsize' : 'output');
        const started = Date.now();
        const pool = createPool({ size: workers });
        const recipe = {
          rule: typeof rule === 'string' ? (JSON.parse(rule) as unknown) : rule,
          sources: Object.fromEntries(inputs),
          ...(outsize ? { outsize } : {}),
          ...(outsizeMethod ? { outsizeMethod } : {}),
          ...(warpRecipe ? { warp: warpRecipe } : {}),
        };
        // Inline, tiles in flight let block reads and inflates (codec threads) run ahead of the
        // kernels: 16 (about a row of 256-px tiles of a 4096-px raster) measured best here.
        // Transient tiles: the writer encodes each tile (and copyInto copies it) before asking for
        // the next, so tiles stay in wasm memory where the kernels computed them (no copy out).
        const renderOptions = {
          rect: window,
          tileSize: tile,
          pool,
          recipe,
          signal,
          transient: true,
          ...(pool.size === 0 ? { concurrency: 16 } : {}),
        };
        // --queue: the same tiles, rendered by queue workers in bands (the recipe's paths made absolute for them).
        const tilesOf = async (): Promise<AsyncIterable<PixelBlock>> => {
          if (queue === undefined) {
            // One pass over the inputs in rows: the decoded-block cache sized for it (a resized
            // or warped read may wander over the source: the cache keeps its size then).
            if (outsize === undefined && warpRecipe === undefined) fitTileCacheToPass();
            return renderTiles(root, renderOptions);
          }
          const { openQueueClient, queuedTiles, absoluteLocation } = await import('../queue/index.js');
          client = await openQueueClient(queue);
          const sources = Object.fromEntries(Object.entries(recipe.sources).map(([k, v]) => [k, absoluteLocation(v)]));
          return queuedTiles(client.ranges, client.redis, queue, root, {
            rect: window,
            tileSize: tile,
            recipe: { ...recipe, sources },
            staging: toStdout ? process.cwd() : dirname(resolve(o.output)),
            ...(bandRows !== undefined ? { bandRows } : {}),
            signal,
            onSubmitted: (id, n) => io.err(`submitted render ${id} to the job queue in ${n} band(s); waiting for workers`),
          });
        };
        const total = Math.ceil(info.width / tile) * Math.ceil(info.height / tile);
        const progress = progressBar(io, total, started);
        const stdout = io.stdout ?? process.stdout;
        if (!toStdout) mkdirSync(dirname(o.output), { recursive: true });
        if (format === 'tiff') {
          // Streamed: tiles are encoded and written as they are rendered (bounded memory); on an
          // error or a signal the writer removes its partial file. Stdout gets the finished file.
          if (toStdout) scratch = mkdtempSync(join(tmpdir(), 'rasterflow-'));
          const file = scratch ? join(scratch, 'out.tif') : o.output;
          const whole =
            window === undefined ||
            (window.x === 0 && window.y === 0 && window.width === root.info.width && window.height === root.info.height);
          const { statistics: _dropped, ...windowed } = info;
          await writeTiffStream(
            file,
            whole ? info : windowed,
            await tilesOf(),
            { ...creation, ...(window ? { offset: window } : {}) },
            () => progress.tick(),
          ).finally(() => {
            progress.done();
            return pool.destroy();
          });
          if (scratch) {
            for await (const chunk of createReadStream(file)) await writeTo(stdout, chunk as Buffer);
          }
        } else {
          const block = allocateBlock(window ?? rect(0, 0, root.info.width, root.info.height), root.info.pixelType, root.info.bandCount);
          try {
            for await (const t of await tilesOf()) {
              copyInto(t, block);
              progress.tick();
            }
          } finally {
            progress.done();
            await pool.destroy();
          }
          const bytes = encodeAs(format, block, info, { quality });
          if (toStdout) await writeTo(stdout, bytes);
          else {
            writeFileSync(o.output, bytes);
            // A world file and an .aux.xml with the SRS beside it, as GDAL's WORLDFILE=YES.
            await writeGeoreferenceSidecars(o.output, info);
          }
        }
        const where = toStdout ? `${FORMAT_NAMES[format]} to stdout` : o.output;
        io.err(`wrote ${where} (${info.width}x${info.height}, ${info.bandCount} band(s) ${info.pixelType}) in ${Date.now() - started} ms`);
      } catch (e) {
        throw interrupted(io, e, toStdout ? 'nothing was written' : 'the partial output was removed');
      } finally {
        if (scratch) rmSync(scratch, { recursive: true, force: true });
        await files.closeAll();
        await client?.close();
      }
    },
  );

  requireOptions(
    program
      .command('validate')
      .description('parse and check a rule without pixels; prints the canonical DAG as JSON')
      .option('--rule <file|json>', 'rendering rule: a JSON file or inline JSON (required)'),
    'rule',
  ).action(async (o: { rule: string }) => {
    const resolution = await resolveCompiling(readRule(o.rule));
    for (const w of resolution.warnings) io.err(`warning: ${withPath(w)}`);
    if (resolution.root === undefined || resolution.issues.length > 0) {
      for (const i of resolution.issues) io.err(issueLine(i));
      process.exitCode = 1;
      return;
    }
    io.out(JSON.stringify(describeResolution(resolution.root), null, 2));
  });

  program
    .command('functions')
    .description('list the raster functions with their arguments, defaults and docs; with NAME, that function in full')
    .argument('[name]', 'a function name (any case): its arguments, types, defaults, allowed values and docs')
    .option('--json', 'machine-readable output')
    .action(async (name: string | undefined, o: { json?: boolean }) => {
      const registry = await loadRegistry();
      if (name !== undefined) {
        const help = functionHelp(registry, name);
        io.out(o.json ? JSON.stringify(help.json, null, 2) : help.lines.join('\n'));
        return;
      }
      const list = registry.list().map((f) => ({
        name: f.name,
        aliases: f.aliases ?? [],
        family: f.family,
        summary: f.summary,
        variableName: f.variableName ?? 'Raster',
        verification: f.verification,
        arguments: describeArgs(f.args),
      }));
      if (o.json) {
        io.out(JSON.stringify(list, null, 2));
        return;
      }
      for (const f of list) {
        io.out(`${f.name}${f.aliases.length ? ` (${f.aliases.join(', ')})` : ''} [${f.family}]: ${f.summary}`);
        for (const a of f.arguments) {
          const d = 'default' in a && a.default !== undefined ? ` = ${JSON.stringify(a.default)}` : '';
          io.out(`    ${String(a.name)} (${String(a.kind)})${d}: ${String(a.doc)}`);
        }
      }
    });

  program
    .command('info')
    .description('size, bands, pixel type, grid, spatial reference, NoData and statistics of a raster')
    .argument('<path>', 'GeoTIFF path or COG URL')
    .action(async (path: string) => {
      io.out(JSON.stringify(await describeRaster(path, { onWarning: (m) => io.err(`warning: ${m}`) }), null, 2));
    });

  program
    .command('chip')
    .description('export training data for deep learning: image chips, labels and metadata')
    .argument('<params>', "parameters: a JSON file or inline JSON with the task's parameter names")
    .option('--workers <n>', 'worker threads rendering chips (0: inline); the output does not depend on it', '0')
    .option('--dry-run', 'plan only: count chips and labels and estimate the size; write nothing')
    .option(
      '--queue <url>',
      'submit the export to the job queue (redis://host:port) and follow it to its end; rasterflow worker processes run it, the output is the same',
    )
    .option('--range-size <n>', 'with --queue: candidate chips per range a worker takes (default 64)')
    .action(async (params: string, o: { workers: string; dryRun?: boolean; queue?: string; rangeSize?: string }) => {
      const workers = parseCount(o.workers, 'workers', 0);
      const rangeSize = o.rangeSize === undefined ? undefined : parseCount(o.rangeSize, 'range-size', 1);
      if (rangeSize !== undefined && o.queue === undefined) throw new UsageError('range-size', '--range-size applies to --queue');
      const raw = readChipParams(params);
      // Decision: a dry run plans here (it reads no pixels); --queue applies to real exports.
      if (o.queue !== undefined && o.dryRun !== true) {
        const { parseQueueUrl } = await import('../queue/connection.js');
        const settings = asUsage(() => parseQueueUrl(o.queue!));
        const { runQueuedChip } = await import('../queue/cli.js');
        const started = Date.now();
        const progress = progressBar(io, 0, started);
        const summary = await runQueuedChip(settings, raw, {
          ...(io.signal ? { signal: io.signal } : {}),
          ...(rangeSize !== undefined ? { rangeSize } : {}),
          onSubmitted: (id) => io.err(`submitted export ${id} to the job queue; waiting for workers`),
          onProgress: (p) => progress.show(p.done, p.total, `${p.chips} chips`),
        })
          .catch((e: unknown) => {
            throw interrupted(
              io,
              e,
              'the export was cancelled; the chips written so far are kept: run it again with "resume": true to continue',
            );
          })
          .finally(() => progress.done());
        io.err(chipSummary(summary, Date.now() - started));
        return;
      }
      const pool = createPool({ size: workers });
      const started = Date.now();
      const progress = progressBar(io, 0, started);
      // Loaded on use: the chipper and the demo stay off the start-up path of the other commands.
      const { exportTrainingData } = await import('../chipper/export.js');
      const summary = await exportTrainingData(raw, {
        pool,
        dryRun: o.dryRun === true,
        ...(io.signal ? { signal: io.signal } : {}),
        onProgress: (p) => progress.show(p.done, p.total, `${p.chips} chips`),
      })
        .catch((e: unknown) => {
          throw interrupted(io, e, 'the chips written so far are kept: run it again with "resume": true to continue');
        })
        .finally(() => {
          progress.done();
          return pool.destroy();
        });
      io.err(chipSummary(summary, Date.now() - started));
    });

  program
    .command('worker')
    .description(
      'take jobs from the job queue: training-data exports submitted with --queue, in chip ranges (SIGINT/SIGTERM stop it after its current ranges)',
    )
    .option('--queue <url>', 'the Redis server of the job queue: redis://host:port (required)')
    .option('--concurrency <n>', 'chip ranges worked at once', '1')
    .hook('preAction', (_parent, action) => {
      if (action.getOptionValue('queue') === undefined)
        throw new UsageError('queue', 'worker needs --queue <url> (rasterflow worker --help lists the options)');
    })
    .action(async (o: { queue: string; concurrency: string }) => {
      const { parseQueueUrl, displayUrl } = await import('../queue/connection.js');
      const settings = asUsage(() => parseQueueUrl(o.queue));
      const concurrency = parseCount(o.concurrency, 'concurrency', 1);
      io.stopsGracefully?.();
      const { startQueueWorker } = await import('../queue/worker.js');
      const worker = await startQueueWorker(settings, { concurrency, log: process.env.RASTERFLOW_DEBUG ? io.err : undefined });
      io.err(`worker on ${displayUrl(settings.url)} (${concurrency} range(s) at once); SIGINT or SIGTERM stops after the current ranges`);
      await new Promise<void>((stop) => {
        if (io.signal?.aborted) stop();
        io.signal?.addEventListener('abort', () => stop(), { once: true });
      });
      io.err('stopping: finishing the ranges in hand');
      await worker.close();
      io.err('stopped');
    });

  program
    .command('serve')
    .description('serve the site over HTTPS: the portal sharing, server admin and services REST APIs (SIGINT/SIGTERM stop it)')
    .option('--port <n>', 'HTTPS port (0: a free port)', '6443')
    .option('--http-port <n>', 'also serve plain HTTP on this port (off unless given)')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--data <dir>', 'data folder: the site database and the TLS certificate (created when missing)', './rasterflow-site')
    .option('--config <file>', 'config file (JSON): settings, tls {cert, key}, services, federatedServers, store')
    .option(
      '--store <url>',
      'site store shared by several servers: postgres://user@host:5432/database (default: SQLite in the data folder)',
    )
    .option(
      '--queue <url>',
      'run training-data jobs on the job queue (redis://host:port) with rasterflow worker processes, not in this one',
    )
    .addHelpText(
      'after',
      [
        '',
        'The first start creates the primary site administrator: RASTERFLOW_ADMIN_USERNAME (default admin) with',
        'RASTERFLOW_ADMIN_PASSWORD, or a generated password printed once. Without tls in the config a',
        'self-signed certificate for localhost is made in <data>/tls/ and kept.',
        '',
        'Several servers behind a load balancer share one site with --store postgres://...: users, tokens and',
        'signing keys, services, webhooks and jobs. Give the password in PGPASSWORD rather than in the URL',
        '(a command line is visible to other users of the machine).',
      ].join('\n'),
    )
    .action(async (o: { port: string; httpPort?: string; host: string; data: string; config?: string; store?: string; queue?: string }) => {
      const port = asUsage(() => parsePort(o.port, 'port'));
      if (o.queue !== undefined) {
        const { parseQueueUrl } = await import('../queue/connection.js');
        asUsage(() => parseQueueUrl(o.queue!));
      }
      const httpPort = o.httpPort === undefined ? undefined : asUsage(() => parsePort(o.httpPort!, 'http-port'));
      io.stopsGracefully?.();
      // Loaded on use: the server (HTTP, TLS, SQLite) stays off the start-up path of the other commands.
      const { startServer, lineLogger } = await import('../server/serve.js');
      const server = await startServer({
        dataDir: o.data,
        port,
        ...(httpPort === undefined ? {} : { httpPort }),
        host: o.host,
        ...(o.config === undefined ? {} : { configFile: o.config }),
        ...(o.store === undefined ? {} : { store: o.store }),
        ...(o.queue === undefined ? {} : { queue: o.queue }),
        print: io.err,
        log: lineLogger(io.err),
      });
      io.err(`serving ${server.dataDir}; SIGINT or SIGTERM stops`);
      await new Promise<void>((stop) => {
        if (io.signal?.aborted) stop();
        io.signal?.addEventListener('abort', () => stop(), { once: true });
      });
      const n = server.inFlight();
      io.err(n > 0 ? `stopping: waiting for ${n} request(s) in flight` : 'stopping');
      await server.close();
      io.err('stopped');
    });

  program
    .command('demo')
    .description('render a small gallery over the bundled sample data into out/')
    .option('--out <dir>', 'output folder', 'out')
    .action(async (o: { out: string }) => {
      const { runDemo } = await import('./demo.js');
      await runDemo(o.out, io.err);
    });

  return program;
}

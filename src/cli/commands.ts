/** The `rasterflow` commands, wired onto a commander program; `io` is injected so tests can run them. */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Command, Option } from 'commander';
import { EngineError, withPath } from '../core/errors.js';
import { windowInfo } from '../core/pixel-block.js';
import { rect, type Rect } from '../core/rect.js';
import { describe as describeArgs } from '../graph/args.js';
import { render, renderTiles } from '../graph/render.js';
import { registry } from '../functions/index.js';
import { describeResolution, planRule, resolveRule } from '../rule/build.js';
import { describeRaster, encodeByExtension, formatOfPath, openerScope, outsizeOpener, type Outsize } from '../io/index.js';
import { parseCreationOptions, writeTiffStream } from '../io/tiff-stream-writer.js';
import { bindSources } from '../rule/sources.js';
import { createPool } from '../workers/pool.js';

export interface CliIo {
  out(s: string): void;
  err(s: string): void;
  readonly isTTY: boolean;
}

/** `--rule` takes a file path or inline JSON. */
export function readRule(value: string): unknown {
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
export function parseInputs(values: readonly string[]): Map<string, string> {
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
export function parseOutsize(s: string, base: { width: number; height: number }): { width: number; height: number } {
  const bad = (): EngineError =>
    new EngineError('INVALID_ARGUMENT', `--outsize must be width,height in pixels or percentages (e.g. 1024,0 or 25%,25%), got ${s}`, { path: 'outsize' });
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

export function parseWindow(s: string): Rect {
  const parts = s.split(',').map((p) => Number(p.trim()));
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p)) || parts[2]! <= 0 || parts[3]! <= 0) {
    throw new EngineError('INVALID_ARGUMENT', `--window must be x,y,width,height in whole pixels, got ${s}`, { path: 'window' });
  }
  return rect(parts[0]!, parts[1]!, parts[2]!, parts[3]!);
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/**
 * A progress bar on stderr for renders that take more than a second, on a terminal only:
 * `[#####....]  42% 1234/2916 tiles`, redrawn when the percentage changes.
 */
function progressBar(io: CliIo, total: number, started: number): { tick(): void; show(done: number, of: number, label: string): void; done(): void } {
  let count = 0;
  let drawn = -1;
  const show = (done: number, of: number, label: string): void => {
    if (!io.isTTY || Date.now() - started < 1000) return;
    const percent = Math.floor((100 * done) / Math.max(1, of));
    if (percent === drawn) return;
    drawn = percent;
    const bar = '#'.repeat(Math.round(percent / 4)).padEnd(25, '.');
    // Straight to the terminal: io.err ends every message with a newline.
    process.stderr.write(`\r[${bar}] ${String(percent).padStart(3)}% ${label}`);
  };
  return {
    tick() {
      count++;
      show(count, total, `${count}/${total} tiles`);
    },
    show,
    done() {
      if (drawn >= 0) process.stderr.write('\n');
      drawn = -1;
    },
  };
}

export function run(program: Command, io: CliIo): Command {
  program
    .name('rasterflow')
    .description('Raster functions from rendering-rule JSON, evaluated tile by tile.')
    .version('0.1.0');

  program
    .command('render')
    .description('render a rule over GeoTIFF inputs to a GeoTIFF, PNG or JPEG')
    .requiredOption('--rule <file|json>', 'rendering rule: a JSON file or inline JSON')
    .option('--input <[NAME=]path>', 'input raster; first is $$ and $1, next $2, ...; NAME=path binds a variable', collect, [])
    .requiredOption('--output <path>', 'output file; the extension picks the format (.tif, .png, .jpg)')
    .option('--window <x,y,w,h>', 'output window in pixels of the output grid')
    .option('--outsize <w,h>', "output size, as gdal_translate -outsize: pixels or percentages (0 keeps the aspect ratio); inputs are read from their overviews")
    .addOption(new Option('--tile <n>', "tile size in pixels (default: the GeoTIFF output's block size when its blocks are square, else 256)").argParser((v) => v))
    .option('--quality <q>', 'JPEG quality 1-100', '90')
    .option('--workers <n>', 'worker threads for tiles (0: inline)', '0')
    .option(
      '--co <NAME=VALUE>',
      'GeoTIFF creation option, GDAL names (repeatable): COMPRESS=DEFLATE|NONE, PREDICTOR=1|2|3 (default 2 integers, 3 floats), ZLEVEL (default 1), TILED, BLOCKXSIZE, BLOCKYSIZE, ' +
        'BIGTIFF=YES|NO|IF_NEEDED|IF_SAFER, NBITS, COG=YES, OVERVIEWS=AUTO|NONE, OVERVIEW_COUNT, OVERVIEW_RESAMPLING=AVERAGE|NEAREST, STATISTICS=YES',
      collect,
      [],
    )
    .action(
      async (o: { rule: string; input: string[]; output: string; window?: string; outsize?: string; tile?: string; quality: string; workers: string; co: string[] }) => {
        const format = formatOfPath(o.output);
        if (o.co.length > 0 && format !== 'tiff') throw new EngineError('INVALID_ARGUMENT', '--co creation options apply to GeoTIFF outputs only', { path: 'co' });
        const creation = parseCreationOptions(o.co);
        // Render tiles the size of the output's TIFF blocks: each tile is then encoded as it comes
        // (tiff-stream-writer.ts), without gathering rows of blocks. The output does not depend on it.
        const blockW = creation.blockWidth ?? 256;
        const blockH = creation.blockHeight ?? blockW;
        const tile = o.tile === undefined ? (format === 'tiff' && creation.tiled !== false && blockW === blockH ? blockW : 256) : Number(o.tile);
        if (!Number.isInteger(tile) || tile < 1) throw new EngineError('INVALID_ARGUMENT', `--tile must be a positive integer, got ${o.tile}`, { path: 'tile' });
        const rule = readRule(o.rule);
        const resolution = resolveRule(rule, { registry });
        for (const w of resolution.warnings) io.err(`warning: ${withPath(w)}`);
        const inputs = parseInputs(o.input);
        // The rasters this command opens are closed when it ends (it also runs in-process).
        const files = openerScope();
        try {
          // --outsize: every input read downsampled, the first one (`$$`) at the given size.
          let outsize: Outsize | undefined;
          if (o.outsize !== undefined) {
            const first = inputs.get('$$') ?? [...inputs.values()][0];
            if (first === undefined) throw new EngineError('INVALID_ARGUMENT', '--outsize needs an --input', { path: 'outsize' });
            const { width: baseWidth, height: baseHeight } = (await files.open(first, { id: first })).info;
            outsize = { ...parseOutsize(o.outsize, { width: baseWidth, height: baseHeight }), baseWidth, baseHeight };
          }
          const open = outsize ? outsizeOpener(files.open, outsize) : files.open;
          const { root } = await planRule(resolution, bindSources(inputs, open));
          const window = o.window === undefined ? undefined : parseWindow(o.window);
          const started = Date.now();
          const pool = createPool({ size: Number(o.workers) });
          const recipe = { rule: typeof rule === 'string' ? JSON.parse(rule) : rule, sources: Object.fromEntries(inputs), ...(outsize ? { outsize } : {}) };
          const info = window === undefined ? root.info : windowInfo(root.info, window);
          // Inline, tiles in flight let block reads and inflates (codec threads) run ahead of the
          // kernels: 16 (about a row of 256-px tiles of a 4096-px raster) measured best here.
          const renderOptions = { rect: window, tileSize: tile, pool, recipe, ...(pool.size === 0 ? { concurrency: 16 } : {}) };
          mkdirSync(dirname(o.output), { recursive: true });
          if (format === 'tiff') {
            // Streamed: tiles are encoded and written as they are rendered (bounded memory).
            const whole = window === undefined || (window.x === 0 && window.y === 0 && window.width === root.info.width && window.height === root.info.height);
            const { statistics: _dropped, ...windowed } = info;
            const total = Math.ceil(info.width / tile) * Math.ceil(info.height / tile);
            const progress = progressBar(io, total, started);
            await writeTiffStream(o.output, whole ? info : windowed, renderTiles(root, renderOptions), { ...creation, ...(window ? { offset: window } : {}) }, () =>
              progress.tick(),
            ).finally(() => {
              progress.done();
              return pool.destroy();
            });
          } else {
            const block = await render(root, renderOptions).finally(() => pool.destroy());
            const bytes = encodeByExtension(o.output, block, info, { quality: Number(o.quality) });
            writeFileSync(o.output, bytes);
          }
          io.err(`wrote ${o.output} (${info.width}x${info.height}, ${info.bandCount} band(s) ${info.pixelType}) in ${Date.now() - started} ms`);
        } finally {
          await files.closeAll();
        }
      },
    );

  program
    .command('validate')
    .description('parse and check a rule without pixels; prints the canonical DAG as JSON')
    .requiredOption('--rule <file|json>', 'rendering rule: a JSON file or inline JSON')
    .action((o: { rule: string }) => {
      const resolution = resolveRule(readRule(o.rule), { registry });
      for (const w of resolution.warnings) io.err(`warning: ${withPath(w)}`);
      if (resolution.root === undefined || resolution.issues.length > 0) {
        for (const i of resolution.issues) io.err(`error ${i.code}${i.path ? ` at ${i.path}` : ''}: ${i.message}`);
        process.exitCode = 1;
        return;
      }
      io.out(JSON.stringify(describeResolution(resolution.root), null, 2));
    });

  program
    .command('functions')
    .description('list the raster functions with their arguments, defaults and docs')
    .option('--json', 'machine-readable output')
    .action((o: { json?: boolean }) => {
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
    .description('export training data for deep learning: image chips, labels and metadata (seed section 6)')
    .argument('<params>', 'parameters: a JSON file or inline JSON with the task\'s parameter names')
    .option('--workers <n>', 'worker threads rendering chips (0: inline); the output does not depend on it', '0')
    .option('--dry-run', 'plan only: count chips and labels and estimate the size; write nothing')
    .action(async (params: string, o: { workers: string; dryRun?: boolean }) => {
      const raw = readChipParams(params);
      const pool = createPool({ size: Number(o.workers) });
      const started = Date.now();
      const progress = progressBar(io, 0, started);
      // Loaded on use: the chipper and the demo stay off the start-up path of the other commands.
      const { exportTrainingData } = await import('../chipper/export.js');
      const summary = await exportTrainingData(raw, {
        pool,
        dryRun: o.dryRun === true,
        onProgress: (p) => progress.show(p.done, p.total, `${p.chips} chips`),
      }).finally(() => pool.destroy());
      progress.done();
      const s = summary.skipped;
      io.out(
        `${summary.dryRun ? 'would write' : 'wrote'} ${summary.chips} chips (indexes ${summary.firstIndex}..${summary.nextIndex - 1}) with ${summary.labels} labels ` +
          `from ${summary.candidates} candidates to ${summary.outputLocation}; skipped: ${s.noLabels} without labels, ${s.outsideMask} outside the mask, ` +
          `${s.noData} with too much NoData, ${s.emptyRatio} over the empty-chip ratio; ${summary.labelsOutsideRaster} label(s) entirely outside the raster; ` +
          `${(summary.bytes / 1048576).toFixed(1)} MiB` +
          `${summary.dryRun ? ' (uncompressed estimate)' : ''} in ${Date.now() - started} ms`,
      );
    });

  program
    .command('demo')
    .description('render a small gallery over the bundled sample data into out/')
    .option('--out <dir>', 'output folder', 'out')
    .action(async (o: { out: string }) => {
      const { runDemo } = await import('./demo.js');
      await runDemo(o.out, io.out);
    });

  return program;
}


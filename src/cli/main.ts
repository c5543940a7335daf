#!/usr/bin/env node
/**
 * `rasterflow`: render, validate, functions, info, chip, demo, serve. Errors go to stderr as
 * `error CODE at PATH: message`, one line per problem, with exit code 1 (2 for usage errors);
 * never a stack trace unless RASTERFLOW_DEBUG is set. Data (JSON, `--output -` images) goes to
 * stdout, everything else (summaries, warnings, progress) to stderr. A closed stdout (`| head`)
 * ends the command quietly with exit 0; SIGINT / SIGTERM abort the running command, which removes
 * its partial output, and exit 130 / 143. `serve` instead stops cleanly on the first signal (it
 * finishes the requests in flight) and exits 0; a second signal exits at once.
 */
import { warmCodecThreads } from '../io/codec-pool.js';
import { wasmKernels } from '../wasm/module.js';
import type { CliIo } from './commands.js';

// Commands that compute pixels: the wasm kernels and the codec threads are made ready before the
// commands' modules load. Loading the kernels reserves the module's memory, which the engine
// counts as external memory and answers with a full garbage collection: on the small heap of a
// starting process it costs about 2 ms, after the modules have loaded about 20 ms. A codec
// thread starts on the other core meanwhile (about 30 ms of its own), ready for the first blocks.
if (['render', 'chip', 'demo'].includes(process.argv[2] ?? '')) {
  warmCodecThreads();
  wasmKernels();
}
const [{ Command }, { EngineError }, { run, exitCodeOf, formatError }] = await Promise.all([
  import('commander'),
  import('../core/errors.js'),
  import('./commands.js'),
]);

const SIGNALS = { SIGINT: 2, SIGTERM: 15 } as const;
const controller = new AbortController();
let signalled: number | undefined;
/** Set by a command that stops cleanly on a signal (`serve`): no 3 s limit, exit 0 when it ends. */
let graceful = false;

for (const [name, number] of Object.entries(SIGNALS)) {
  process.on(name, () => {
    // A second signal, or a command that does not stop within 3 s: leave at once.
    if (signalled !== undefined) process.exit(128 + signalled);
    signalled = number;
    controller.abort(new Error(`interrupted by ${name}`));
    if (!graceful) setTimeout(() => process.exit(128 + number), 3000).unref();
  });
}

// A reader that went away (`rasterflow functions | head -1`) is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    process.exit(e.code === 'EPIPE' ? (signalled === undefined ? Number(process.exitCode) || 0 : 128 + signalled) : 1);
  });
}

const io: CliIo = {
  out: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  err: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
  isTTY: process.stderr.isTTY === true,
  progress: (s) => process.stderr.write(s),
  stdout: process.stdout,
  signal: controller.signal,
  stopsGracefully: () => void (graceful = true),
};

const program = run(new Command(), io);

// gdal_translate's `-of FORMAT` (commander's short options are one letter).
const argv = process.argv.map((a, i) => (i >= 2 && a === '-of' ? '--format' : a));

try {
  await program.parseAsync(argv);
} catch (e) {
  if (signalled !== undefined && !graceful) {
    // The command says what became of its output (render: the partial file removed).
    const said = e instanceof EngineError && e.code === 'ABORTED' && e.message.startsWith('interrupted');
    for (const line of said ? formatError(e) : [`error ABORTED: interrupted by ${signalled === 2 ? 'SIGINT' : 'SIGTERM'}`]) io.err(line);
    process.exitCode = 128 + signalled;
  } else {
    for (const line of formatError(e)) io.err(line);
    process.exitCode = exitCodeOf(e);
  }
}
if (signalled !== undefined && !graceful) process.exitCode = 128 + signalled;
// A command that stopped cleanly on a signal has closed what it opened; leave now with its status.
if (graceful && signalled !== undefined) process.exit(Number(process.exitCode ?? 0));

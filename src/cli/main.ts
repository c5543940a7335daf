#!/usr/bin/env node
/**
 * `rasterflow`: render, validate, functions, info, demo. Errors go to stderr as
 * `error CODE at PATH: message`, one line per problem, with exit code 1 (2 for usage errors);
 * never a stack trace unless RASTERFLOW_DEBUG is set.
 */
import { Command, CommanderError } from 'commander';
import { EngineError, ERROR_TABLE, toEngineError, type Issue } from '../core/errors.js';
import { run, type CliIo } from './commands.js';

const io: CliIo = {
  out: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  err: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
  isTTY: process.stderr.isTTY === true,
};

function printError(e: unknown, err: (s: string) => void): void {
  const engineError = toEngineError(e);
  const issues: readonly Issue[] = engineError.issues;
  for (const i of issues) err(`error ${i.code}${i.path ? ` at ${i.path}` : ''}: ${i.message}`);
  if (process.env.RASTERFLOW_DEBUG && e instanceof Error) err(e.stack ?? '');
  else if (engineError.code === 'INTERNAL' && !(e instanceof EngineError)) err('(set RASTERFLOW_DEBUG=1 for the stack trace)');
}

const program: Command = run(new Command(), io);
program.exitOverride();
program.configureOutput({ writeErr: (s) => io.err(s.trimEnd()), writeOut: (s) => io.out(s.trimEnd()) });

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) {
    process.exitCode = e.exitCode === 0 ? 0 : 2;
  } else {
    printError(e, io.err);
    process.exitCode = ERROR_TABLE[toEngineError(e).code].exitStatus;
  }
}

/**
 * The product speaks for itself: what a user reads (the README, CLI help, every function's summary,
 * argument docs and verification line) never points at the internal specification ("seed",
 * "spec section N", "spec §") or at files outside the repository. Code comments may; CONTRIBUTING.md
 * explains them.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { run } from '../src/cli/commands.js';
import { builtinFunctions } from '../src/functions/index.js';

const JARGON = /\bseed\b|\bspec(?:ification)? (?:section|§)|spec §|§\s*\d|\.\.\/shared\b/i;

const offending = (texts: readonly (readonly [string, string])[]): string[] =>
  texts.filter(([, t]) => JARGON.test(t)).map(([where, t]) => `${where}: ${t.match(JARGON)![0]}`);

describe('user-facing text', () => {
  it('the README and CONTRIBUTING.md name nothing outside the repository and no spec sections', () => {
    const root = resolve(import.meta.dirname, '..');
    const lines = ['README.md', 'CONTRIBUTING.md'].flatMap((f) =>
      readFileSync(resolve(root, f), 'utf8')
        .split('\n')
        .map((l, i) => [`${f}:${i + 1}`, l] as const),
    );
    // CONTRIBUTING.md explains what "seed section N" in old code comments means: that paragraph quotes them.
    expect(offending(lines.filter(([w, l]) => !(w.startsWith('CONTRIBUTING') && /comments|"seed section N"|"spec §N"/.test(l))))).toEqual(
      [],
    );
  });

  it('function summaries, argument docs and verification lines say it in their own words', () => {
    const texts = builtinFunctions.flatMap((f) => [
      [`${f.name} summary`, f.summary] as const,
      [`${f.name} verification`, f.verification] as const,
      ...Object.entries(f.args).map(([n, s]) => [`${f.name}.${n} doc`, String((s as { doc?: string }).doc ?? '')] as const),
    ]);
    expect(offending(texts)).toEqual([]);
  });

  it('the help of every CLI command does too', () => {
    const program = run(new Command(), { out: () => {}, err: () => {}, isTTY: false });
    const helps = [program, ...program.commands].map((c) => [c.name(), c.helpInformation()] as const);
    expect(helps.length).toBeGreaterThan(4);
    expect(offending(helps)).toEqual([]);
  });
});

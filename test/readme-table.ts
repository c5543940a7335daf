/**
 * The README function table (between `<!-- functions:start -->` and `<!-- functions:end -->`),
 * generated from the registry. `npx tsx test/readme-table.ts` rewrites it in README.md;
 * test/registry.test.ts fails when the README's table differs from `functionTable()` in any cell.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtinFunctions } from '../src/functions/index.js';

export const README = resolve(import.meta.dirname, '../README.md');
export const START = '<!-- functions:start -->';
export const END = '<!-- functions:end -->';

/** The table as README.md should hold it, from START up to (not including) END. */
export function functionTable(): string {
  const rows = [...builtinFunctions]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((f) => {
      const args = Object.entries(f.args)
        .map(([n, s]) => `${n}${'default' in s && s.default !== undefined ? `=${JSON.stringify(s.default)}` : ''}`)
        .join(', ');
      const also = f.aliases?.length ? ` (also ${f.aliases.join(', ')})` : '';
      return `| \`${f.name}\` | ${f.family}${also} | ${args} | ${f.verification.replace(/\|/g, '\\|')} |`;
    });
  return [START, '| function | family | arguments (defaults) | verification |', '|---|---|---|---|', ...rows, ''].join('\n');
}

/** The table README.md holds now. */
export function readmeTable(readme = readFileSync(README, 'utf8')): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error('README.md has no functions table markers');
  return readme.slice(start, end);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const readme = readFileSync(README, 'utf8');
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error('README.md has no functions table markers');
  writeFileSync(README, readme.slice(0, start) + functionTable() + readme.slice(end));
  console.log(`README function table: ${builtinFunctions.length} functions`);
}

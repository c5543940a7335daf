/**
 * Regenerates the README function table (between `<!-- functions:start -->` and
 * `<!-- functions:end -->`) from the registry: `npx tsx test/readme-table.ts`. test/registry.test.ts
 * fails when the table and the registry disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { builtinFunctions } from '../src/functions/index.js';

const rows = [...builtinFunctions]
  .sort((a, b) => a.name.localeCompare(b.name))
  .map((f) => {
    const args = Object.entries(f.args)
      .map(([n, s]) => `${n}${'default' in s && s.default !== undefined ? `=${JSON.stringify(s.default)}` : ''}`)
      .join(', ');
    const also = f.aliases?.length ? ` (also ${f.aliases.join(', ')})` : '';
    return `| \`${f.name}\` | ${f.family}${also} | ${args} | ${f.verification.replace(/\|/g, '\\|')} |`;
  });
const file = resolve(import.meta.dirname, '../README.md');
const readme = readFileSync(file, 'utf8');
const start = readme.indexOf('<!-- functions:start -->');
const end = readme.indexOf('<!-- functions:end -->');
if (start < 0 || end < start) throw new Error('README.md has no functions table markers');
const table = ['<!-- functions:start -->', '| function | family | arguments (defaults) | verification |', '|---|---|---|---|', ...rows, ''].join('\n');
writeFileSync(file, readme.slice(0, start) + table + readme.slice(end));
console.log(`README function table: ${rows.length} functions`);

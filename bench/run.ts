/**
 * Runs every benchmark suite, prints one table and writes bench-results.json (git-ignored) for CI
 * to compare with the previous build. Usage: `npx tsx bench/run.ts [filter]` (`npm run bench`);
 * a filter naming a suite (`chipper`, `focal`, ...) runs that suite only; any other filter keeps the
 * rows whose name contains it (case-insensitive).
 *
 * Adding a suite: write `bench/<family>.bench.ts` exporting an async function that returns
 * `BenchRow[]` (see rows.ts), and add it to SUITES below.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { BenchRow } from './rows.js';
import { renderBench } from './render.bench.js';
import { terrainBench } from './terrain.bench.js';

const SUITES: Readonly<Record<string, () => Promise<BenchRow[]>>> = {
  terrain: () => terrainBench(),
  focal: async () => (await import('./focal.bench.js')).focalBench(),
  spectral: async () => (await import('./spectral.bench.js')).spectralBench(),
  render: () => renderBench(),
  radiometric: async () => (await import('./radiometric.bench.js')).radiometricBench(),
  chipper: async () => (await import('./chipper.bench.js')).chipperBench(),
  chain: async () => (await import('./chain.bench.js')).chainBench(),
  io: async () => (await import('./io.bench.js')).ioBench(),
  stats: async () => (await import('./stats.bench.js')).statsBench(),
};

const fmt = (v: number | undefined, digits: number): string => (v === undefined ? '' : v.toFixed(digits));

async function main(): Promise<void> {
  const filter = process.argv[2]?.toLowerCase();
  const results: (BenchRow & { suite: string })[] = [];
  // A filter naming a suite runs only that suite; otherwise every suite runs and rows are filtered.
  const suites = Object.entries(SUITES).filter(([suite]) => !filter || !(filter in SUITES) || suite === filter);
  for (const [suite, run] of suites) {
    const rows = await run();
    for (const r of rows) if (!filter || filter in SUITES || r.name.toLowerCase().includes(filter)) results.push({ suite, ...r });
  }
  console.table(
    results.map((r) => ({
      name: r.name,
      'Mpx/s': fmt(r.mpxPerSec, 1),
      'plain loop Mpx/s': fmt(r.reference, 1),
      ratio: fmt(r.ratio, 2),
      'median ms': fmt(r.medianMs, 2),
      'mean ms': fmt(r.meanMs, 2),
      'p99 ms': fmt(r.p99Ms, 2),
      samples: r.samples,
    })),
  );
  const file = resolve(import.meta.dirname, '..', 'bench-results.json');
  const out = {
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
    results: results.map((r) => ({
      suite: r.suite,
      name: r.name,
      mpxPerSec: r.mpxPerSec,
      medianMs: r.medianMs,
      meanMs: r.meanMs,
      p99Ms: r.p99Ms,
      samples: r.samples,
      referenceMpxPerSec: r.reference,
      ratio: r.ratio,
    })),
  };
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${file}`);
}

await main();

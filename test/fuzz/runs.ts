/**
 * How many cases each fuzz property runs. The test suite runs a bounded count (CI stays fast);
 * `npm run fuzz` sets RASTERFLOW_FUZZ_RUNS=100000. RASTERFLOW_FUZZ_REPLAY replays a run.
 */
import fc from 'fast-check';

export const FUZZ_RUNS = Number(process.env['RASTERFLOW_FUZZ_RUNS'] ?? '') || 0;

/** fast-check parameters: `defaultRuns` in the suite, RASTERFLOW_FUZZ_RUNS under `npm run fuzz`, a seed when given. */
export function fuzzParameters<T>(defaultRuns: number, extra: fc.Parameters<T> = {}): fc.Parameters<T> {
  const seed = Number(process.env['RASTERFLOW_FUZZ_REPLAY'] ?? '');
  return {
    numRuns: FUZZ_RUNS || defaultRuns,
    ...(Number.isInteger(seed) && process.env['RASTERFLOW_FUZZ_REPLAY'] ? { seed } : {}),
    ...extra,
  };
}

/** A per-test timeout that grows with the run count (vitest's, in ms). */
export const fuzzTimeout = (defaultRuns: number, msPerCase: number): number => Math.max(30_000, (FUZZ_RUNS || defaultRuns) * msPerCase);

/**
 * A time budget for one case, as a hang detector: `ms` (what the case takes on a quiet machine,
 * with room) times RASTERFLOW_FUZZ_BUDGET_FACTOR (default 5), so that two shared cores running the
 * whole suite never turn a slow case into a failure, while a hang or a blow-up still fails.
 */
export const fuzzBudget = (ms: number): number => ms * (Number(process.env['RASTERFLOW_FUZZ_BUDGET_FACTOR'] ?? '') || 5);

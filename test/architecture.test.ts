/** Layers, ground first; a file imports only its own layer or those before it (ARCHITECTURE.md). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');
const RANK: Record<string, number> = {
  core: 0,
  graph: 1,
  functions: 2,
  rule: 3,
  io: 4,
  workers: 4,
  chipper: 5,
  adapters: 6,
  queue: 7,
  server: 8,
  cli: 8,
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
  });
}

const layerOf = (file: string): string => relative(SRC, file).split(/[\\/]/)[0]!;

describe('architecture', () => {
  it('imports run only from higher layers to lower ones', () => {
    const bad: string[] = [];
    for (const file of files(SRC)) {
      const from = layerOf(file);
      if (!(from in RANK)) continue; // src/index.ts: the public surface may import any layer
      for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)[^'"]*from\s+'(\.[^']+)'/gm)) {
        const target = resolve(dirname(file), m[1]!);
        const to = layerOf(target);
        if (to in RANK && RANK[to]! > RANK[from]!) bad.push(`${relative(SRC, file)} -> ${m[1]}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('kernels stay free of io, workers and node built-ins', () => {
    const bad = files(join(SRC, 'functions')).filter((f) =>
      /from '(node:|\.\.\/\.\.\/io|\.\.\/\.\.\/workers)/.test(readFileSync(f, 'utf8')),
    );
    expect(bad.map((f) => relative(SRC, f))).toEqual([]);
  });

  it("the engine entry loads none of the chipper (it is the 'rasterflow/chipper' entry)", () => {
    const seen = new Set<string>();
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)[^'"]*from\s+'(\.[^']+)'/gm)) {
        walk(resolve(dirname(file), m[1]!).replace(/\.js$/, '.ts'));
      }
    };
    walk(join(SRC, 'index.ts'));
    expect(seen.size).toBeGreaterThan(20);
    expect([...seen].filter((f) => layerOf(f) === 'chipper').map((f) => relative(SRC, f))).toEqual([]);
    const pkg = JSON.parse(readFileSync(resolve(SRC, '../package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(Object.keys(pkg.exports)).toEqual(['.', './chipper', './adapters', './server', './queue']);
  });
});

describe('package entries', () => {
  const walk = (entry: string): Set<string> => {
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)[^'"]*from\s+'(\.[^']+)'/gm)) {
        visit(resolve(dirname(file), m[1]!).replace(/\.js$/, '.ts'));
      }
    };
    visit(join(SRC, entry));
    return seen;
  };
  const packagesOf = (files: Set<string>): Set<string> => {
    const out = new Set<string>();
    for (const f of files) for (const m of readFileSync(f, 'utf8').matchAll(/^\s*import[^'"]*from\s+'([^.][^']*)'/gm)) out.add(m[1]!);
    return out;
  };

  it("the engine and chipper entries load no HTTP, database or XML code ('rasterflow/adapters' and 'rasterflow/server' do)", () => {
    for (const entry of ['index.ts', 'chipper/index.ts']) {
      const pkgs = [...packagesOf(walk(entry))];
      expect(pkgs.filter((p) => /^(hono|@hono\/|better-sqlite3|fast-xml-parser|selfsigned|fflate|jose)/.test(p))).toEqual([]);
      expect([...walk(entry)].filter((f) => ['adapters', 'server'].includes(layerOf(f)))).toEqual([]);
    }
    expect([...walk('adapters/index.ts')].filter((f) => layerOf(f) === 'server')).toEqual([]);
    expect(packagesOf(walk('server/index.ts'))).toContain('better-sqlite3');
  });

  it("BullMQ and Redis load only through 'rasterflow/queue' (and the server and CLI, on demand)", () => {
    for (const entry of ['index.ts', 'chipper/index.ts', 'adapters/index.ts']) {
      expect([...packagesOf(walk(entry))].filter((p) => /^(bullmq|ioredis)$/.test(p))).toEqual([]);
    }
    expect(packagesOf(walk('queue/index.ts'))).toContain('bullmq');
  });
});

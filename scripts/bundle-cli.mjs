/**
 * The CLI bundle (`npm run bundle`, part of `npm run build`): src/cli/main.ts and what it loads, as
 * ES module chunks in dist/cli (rasterflow.js, the `bin`, and rasterflow-<hash>.js; stale chunks of
 * an earlier build removed first). Every dependency stays a package of node_modules (native
 * addons, large libraries loaded only by some commands), except commander: every command parses
 * its arguments with it, and bundled it is one more chunk instead of nine CommonJS files resolved,
 * read and wrapped at every start (about 9 ms of `rasterflow --version` on the machine measured).
 * Its `require`s of Node's own modules get a real `require` through the banner.
 */
import { readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { build } from 'esbuild';

const BUNDLED = new Set(['commander']);
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const external = Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies }).filter(
  (name) => !BUNDLED.has(name),
);

const out = new URL('../dist/cli/', import.meta.url);
if (existsSync(out)) for (const f of readdirSync(out)) if (/^rasterflow-\w+\.js$/.test(f)) rmSync(new URL(f, out));

/**
 * commander requires node:child_process when it loads, for subcommands that are executables of
 * their own (rasterflow has none). Loading it loads net, dgram and their kin: about 5 ms of every
 * start. Bundled, commander gets a stand-in that loads the real module on its first use instead.
 */
const lazyChildProcess = {
  name: 'lazy-child-process',
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      /[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: 'lazy-child-process', namespace: 'rasterflow' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'rasterflow' }, () => ({
      contents: "let real; module.exports = new Proxy({}, { get: (_, key) => (real ??= require('node:child_process'))[key] });",
      loader: 'js',
    }));
  },
};

await build({
  plugins: [lazyChildProcess],
  entryPoints: [new URL('../src/cli/main.ts', import.meta.url).pathname],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external,
  splitting: true,
  outdir: out.pathname,
  entryNames: 'rasterflow',
  chunkNames: 'rasterflow-[hash]',
  banner: {
    js: "import { createRequire as __rasterflowRequire } from 'node:module';\nconst require = __rasterflowRequire(import.meta.url);",
  },
  logLevel: 'warning',
});

// Builds the WebAssembly kernels: AssemblyScript sources in wasm/*.ts -> wasm/build/kernels.wasm
// (git-ignored), found by src/wasm/module.ts from src/ (tests, tsx) and from a checkout's dist/.
//   node wasm/build.mjs          build when the output is missing or older than a source
//   node wasm/build.mjs --force  always build
//   node wasm/build.mjs --dist   also copy the output, and the vendored libdeflate.wasm (vendor/libdeflate), to
//                                dist/wasm/ (npm run build: the package ships dist/ only)
// Flags: SIMD128 on, -O3, the stub runtime (no garbage collector: the module never allocates; the
// TypeScript side manages its memory, src/wasm/arena.ts), and an imported shared memory, which the
// loader (src/wasm/module.ts) makes and the codec threads inflate blocks into.
import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const out = join(here, 'build', 'kernels.wasm');
const entry = join(here, 'index.ts');
const args = new Set(process.argv.slice(2));

const mtime = (p) => {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return -1;
  }
};
const sources = readdirSync(here).filter((f) => f.endsWith('.ts') || f.endsWith('.json') || f === 'build.mjs');
const newest = Math.max(...sources.map((f) => mtime(join(here, f))));

if (args.has('--force') || mtime(out) < newest) {
  const asc = (await import('assemblyscript/asc')).default;
  mkdirSync(dirname(out), { recursive: true });
  const { error, stderr } = await asc.main(
    [
      entry,
      '--enable',
      'simd,threads',
      '-O3',
      '--runtime',
      'stub',
      '--noAssert',
      '--importMemory',
      '--sharedMemory',
      '--maximumMemory',
      '65536',
      '--outFile',
      out,
      '--baseDir',
      root,
    ],
    {},
  );
  if (error) {
    console.error(stderr.toString());
    console.error(`wasm build failed: ${error.message}`);
    process.exit(1);
  }
  console.log(`built ${out.slice(root.length + 1)}`);
}
if (args.has('--dist')) {
  const to = join(root, 'dist', 'wasm');
  mkdirSync(to, { recursive: true });
  copyFileSync(out, join(to, 'kernels.wasm'));
  copyFileSync(join(root, 'vendor', 'libdeflate', 'libdeflate.wasm'), join(to, 'libdeflate.wasm'));
}

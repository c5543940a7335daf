// Takes libdeflate.wasm out of the npm package libdeflate@0.1.0 (dist/libdeflate.wasm.mjs, where
// emscripten embedded it as base64) and checks it is the vendored module, byte for byte.
//   node vendor/libdeflate/extract.mjs <path to libdeflate.wasm.mjs> [output, default beside this script]
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SHA256 = 'f75470cc665db1d83e231ec57bf38696852cba5c2594813d47fc43117816affe';
const [from, to = fileURLToPath(new URL('./libdeflate.wasm', import.meta.url))] = process.argv.slice(2);
if (!from) {
  console.error('usage: node vendor/libdeflate/extract.mjs <path to libdeflate.wasm.mjs> [output]');
  process.exit(2);
}
const found = /data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)/.exec(readFileSync(from, 'utf8'));
if (!found) {
  console.error(`${from}: no embedded WebAssembly module`);
  process.exit(1);
}
const bytes = Buffer.from(found[1], 'base64');
const sum = createHash('sha256').update(bytes).digest('hex');
if (sum !== SHA256) {
  console.error(`${from}: the module's SHA-256 is ${sum}, not the vendored ${SHA256}`);
  process.exit(1);
}
writeFileSync(to, bytes);
console.log(`wrote ${to} (${bytes.length} bytes, SHA-256 ${sum})`);

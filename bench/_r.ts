import { wasmKernels } from '../src/wasm/module.js';
import type { FocalExports } from '../src/wasm/focal.js';
const k = wasmKernels()!;
const fx = k.exports as unknown as FocalExports;
const W = 4098, H = 4098, n = 4096;
const a = k.arena.alloc(W * H * 4)!;
const d = k.arena.alloc(n * n * 4)!;
const c = k.arena.alloc(4096 * 8)!;
const z = new Float32Array(k.arena.buffer, a, W * H);
for (let i = 0; i < z.length; i++) z[i] = 200 + (i % 977) * 0.37;
new Float64Array(k.arena.buffer, c, 9).set([0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625]);
const cols = new Float64Array(k.arena.buffer, c + 128, 4096).fill(3);
const ops: Record<string, () => void> = {
  conv3: () => { for (let y = 0; y < n; y++) fx.focalConv3F32(a + y * W * 4, d + y * n * 4, n, W * 4, c); },
  mean3: () => { for (let y = 0; y < n; y++) fx.focalMean3F32(a + y * W * 4, d + y * n * 4, n, W * 4, 3, c + 128); },
  std3: () => { for (let y = 0; y < n; y++) fx.focalStd3F32(a + y * W * 4, d + y * n * 4, n, W * 4, 3, c + 128, 0, 1e-9); },
  min3: () => { for (let y = 0; y < n; y++) fx.focalMin3F32(a + y * W * 4, d + y * n * 4, n, W * 4); },
  copyIn: () => { new Float32Array(k.arena.buffer, d, n * n).set(new Float32Array(k.arena.buffer, a, n * n)); },
};
for (const [name, f] of Object.entries(ops)) {
  f();
  const t: number[] = [];
  for (let i = 0; i < 7; i++) { const t0 = performance.now(); f(); t.push(performance.now() - t0); }
  t.sort((x, y) => x - y);
  console.log(name, (n * n / 1e3 / t[3]!).toFixed(0), 'Mpx/s', t[3]!.toFixed(1), 'ms');
}
